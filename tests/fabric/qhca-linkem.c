// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * qhca-linkem: a userspace link emulator with netem-like impairments, for
 * the simulated fabric (the host kernel has no sch_netem).
 *
 * Copyright (c) 2026 The qhca authors
 *
 *   qhca-linkem [--seed N] [--ctl PATH] [--set 'NAME DIR KEY=VALUE...']...
 *               LINK [LINK...]                      LINK = NAME:IFA:IFB
 *
 * Run in a network namespace of its own (ip netns exec NS qhca-linkem ...),
 * it sends every Ethernet frame that arrives on IFA out of IFB (direction
 * "up" of link NAME) and IFB's out of IFA ("down"), each direction with its
 * own impairments (all off at first), in this order:
 *
 *   down=1          the link is down: every frame dropped (downdrop)
 *   loss=P          each frame lost with probability P percent (lost)
 *   loss-burst=P,R  instead: a two-state Gilbert model; per frame the state
 *                   goes good->bad with probability P%, bad->good with R%;
 *                   frames in the bad state are lost, in the good one none
 *   corrupt=P       with probability P%, one random bit flipped at offset
 *                   >= 14 (after the Ethernet header) (corrupted)
 *   duplicate=P     with probability P%, the frame is sent twice, the copy
 *                   through the queue and the delay on its own (duplicated)
 *   rate=BITS       a bottleneck serialising frames at BITS per second
 *                   (suffix k, m, g: 10^3, 10^6, 10^9), FIFO, drop-tail at
 *                   limit=BYTES queued (default 262144) (qdrop, qmax)
 *   ecn=BYTES       a frame queued behind more than BYTES is marked CE when
 *                   it is IPv4/IPv6 (behind at most one VLAN tag) with
 *                   ECT(0) or ECT(1) (marked); others just queue
 *   delay=US        microseconds added as the frame leaves the bottleneck
 *   jitter=US       plus uniform [-US, +US], the sum clamped at 0: frames
 *                   may then reorder, as in netem
 *   reorder=P       with probability P% a frame skips the delay, as netem's
 *                   reorder (so it needs delay or jitter) (reordered)
 *
 * Frames of equal release time keep their order.  Waiting frames are held
 * in a min-heap, 32 MiB at most (beyond: memdrop), and released by a
 * CLOCK_MONOTONIC timerfd, so microsecond delays work.  A send that fails
 * (EAGAIN, ENOBUFS, too big for the other side...) counts as a txdrop and is
 * not retried, as does a frame read truncated (over 64 KiB: keep gso_max_size
 * at its default).
 *
 * AF_PACKET sockets with PACKET_VNET_HDR: GSO super-frames and frames with a
 * partial checksum keep their struct virtio_net_hdr, and the kernel segments
 * them on the way out.  Such a frame is one frame to every impairment (as in
 * netem); the rate counts its bytes without the vnet header.  Corruption
 * completes a partial checksum first so that the receiver sees the damage;
 * a GSO frame cannot be damaged visibly (the segments' checksums would cover
 * the flipped bit, or nobody checks them on veths), so one picked for
 * corruption is dropped, counted as corrupted.  VLAN tags the kernel took out
 * of a frame (PACKET_AUXDATA) are put back first.
 *
 * The random numbers: xorshift64*, seeded (splitmix64) by --seed (default:
 * the clock, printed on stderr); a run repeats given its seed and the order
 * frames arrive in.
 *
 * --ctl PATH: an AF_UNIX SOCK_SEQPACKET socket, one request per message and
 * one reply per request (no newline):
 *   ping                                -> ok
 *   set NAME up|down|both KEY=VALUE...  -> ok | error: ...  (an error
 *   clear NAME up|down|both             -> ok | error: ...   changes nothing)
 *   stats NAME -> ok up rx=N tx=N lost=N corrupted=N duplicated=N qdrop=N
 *      marked=N downdrop=N txdrop=N memdrop=N qmax=BYTES reordered=N | down ...
 * Value 0 turns a key off (limit=0: the default).  Counters count from the
 * start (qmax: the largest backlog seen); clear resets the impairments only.
 * --set takes the words of a set request.  Prints "qhca-linkem: ready" once
 * every socket is open; SIGTERM, SIGINT: exit 0.  Exit 2: bad command line.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/virtio_net.h>

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif
#ifndef TP_STATUS_VLAN_TPID_VALID
#define TP_STATUS_VLAN_TPID_VALID (1 << 6)
#endif

#define MAX_LINKS	64
#define VNET_LEN	sizeof(struct virtio_net_hdr)
#define FRAME_MAX	(65536 + 256)	/* a frame as read, GSO ones too */
#define BATCH		64		/* frames read per event per socket */
#define FLUSH_MAX	4096		/* frames released per pass */
#define PENDING_MAX	(32u << 20)	/* bytes waiting, in all */
#define DEFAULT_LIMIT	262144		/* bottleneck queue, bytes */
#define SOCKBUF		(4 << 20)
#define CTL_MAX		4096
#define NSEC		1000000000ull
#define WS		" \t\r\n"

enum { SRC_PKT = 1, SRC_TIMER, SRC_SIG, SRC_LISTEN, SRC_CLIENT };

struct params {
	bool down, burst;	/* burst: the Gilbert model instead of loss */
	double loss, burst_p, burst_r, corrupt, duplicate, reorder; /* % */
	uint64_t rate;		/* bits per second; 0: no bottleneck */
	uint64_t limit, ecn;	/* bytes; limit 0: DEFAULT_LIMIT; ecn 0: off */
	uint64_t delay, jitter;	/* ns */
};

#define STAT_FIELDS(X) X(rx) X(tx) X(lost) X(corrupted) X(duplicated) \
	X(qdrop) X(marked) X(downdrop) X(txdrop) X(memdrop) X(qmax) X(reordered)

struct dir {
	struct params p;
	struct {
#define X(f) uint64_t f;
		STAT_FIELDS(X)
#undef X
	} s;
	bool bad;		/* Gilbert state */
	uint64_t free_at;	/* when the bottleneck will have sent all */
	int out;		/* the socket this direction sends on */
};

struct link {
	char name[32], ifname[2][IFNAMSIZ];
	int fd[2];
	struct dir dir[2];	/* up: fd[0] -> fd[1]; down: fd[1] -> fd[0] */
};

struct frame {			/* one waiting in the heap */
	struct dir *d;
	size_t len;		/* of data: vnet header and frame */
	unsigned char data[];
};

struct pend {
	uint64_t t, seq;	/* release time (ns), then arrival order */
	struct frame *f;
};

static struct link links[MAX_LINKS];
static int nlinks;
static uint64_t rng;
static bool ignore_outgoing = true;
/* a frame read (room for a VLAN tag put back), and a duplicate of it */
static unsigned char rxbuf[VNET_LEN + FRAME_MAX + 4], dupbuf[sizeof(rxbuf)];
static struct pend *heap;
static size_t heap_n, heap_cap;
static uint64_t pend_bytes, pend_seq;
static int tfd;
static uint64_t armed;		/* the timerfd's expiry, 0: disarmed */

/* exit 2 (a bad command line) or 1 */
static void __attribute__((noreturn, format(printf, 2, 3)))
die(int code, const char *fmt, ...)
{
	va_list ap;

	fputs("qhca-linkem: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(code == 2 ? "\n(qhca-linkem --help for the usage)\n" : "\n",
	      stderr);
	exit(code);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC + (uint64_t)ts.tv_nsec;
}

static uint64_t rnd64(void)	/* xorshift64* */
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545F4914F6CDD1Dull;
}

/* true with probability pct percent (no draw when pct is 0) */
static bool chance(double pct)
{
	return pct > 0 &&
	       (double)(rnd64() >> 11) * (100.0 / 9007199254740992.0) < pct;
}

/* the Internet checksum of n bytes */
static uint16_t inet_csum(const unsigned char *p, size_t n)
{
	uint64_t sum = 0;

	for (size_t i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	if (n & 1)
		sum += (uint32_t)p[n - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/*
 * Flip one random bit at offset >= 14 of a frame longer than 14 bytes.  A
 * partial checksum is completed first, as netem does (skb_checksum_help:
 * the field holds the pseudo-header sum; sum from csum_start to the end).
 */
static void corrupt(unsigned char *buf, size_t len)
{
	struct virtio_net_hdr vh;
	unsigned char *f = buf + VNET_LEN;
	size_t flen = len - VNET_LEN, off;

	memcpy(&vh, buf, VNET_LEN);
	if (vh.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) {
		size_t start = vh.csum_start, at = start + vh.csum_offset;
		uint16_t c;

		if (start < flen && at + 2 <= flen) {
			c = inet_csum(f + start, flen - start);
			c = c ? c : 0xffff;
			f[at] = c >> 8;
			f[at + 1] = c & 0xff;
		}
		vh.flags &= ~VIRTIO_NET_HDR_F_NEEDS_CSUM;
	}
	vh.flags &= ~VIRTIO_NET_HDR_F_DATA_VALID;
	memcpy(buf, &vh, VNET_LEN);
	off = ETH_HLEN + rnd64() % (flen - ETH_HLEN);
	f[off] ^= (unsigned char)(1u << (rnd64() % 8));
}

/*
 * Is the frame IPv4 or IPv6 (behind at most one VLAN tag) with ECT(0) or
 * ECT(1)?  With mark, set its ECN field to CE (and recompute the IPv4
 * header checksum).  Every offset is checked against flen.
 */
static bool ecn_ect(unsigned char *f, size_t flen, bool mark)
{
	size_t l3 = ETH_HLEN, ihl;
	unsigned type, ecn;
	uint16_t c;

	if (flen < ETH_HLEN)
		return false;
	type = (unsigned)f[12] << 8 | f[13];
	if (type == ETH_P_8021Q || type == ETH_P_8021AD) {
		if (flen < ETH_HLEN + 4)
			return false;
		type = (unsigned)f[16] << 8 | f[17];
		l3 += 4;
	}
	if (type == ETH_P_IP) {
		if (flen < l3 + 20 || (f[l3] >> 4) != 4)
			return false;
		ihl = (size_t)(f[l3] & 0x0f) * 4;
		ecn = f[l3 + 1] & 3;
		if (ihl < 20 || flen < l3 + ihl || (ecn != 1 && ecn != 2))
			return false;
		if (mark) {
			f[l3 + 1] |= 3;
			f[l3 + 10] = f[l3 + 11] = 0;
			c = inet_csum(f + l3, ihl);
			f[l3 + 10] = c >> 8;
			f[l3 + 11] = c & 0xff;
		}
		return true;
	}
	if (type == ETH_P_IPV6) {
		/* traffic class: low nibble of byte 0, high nibble of byte 1 */
		if (flen < l3 + 40 || (f[l3] >> 4) != 6)
			return false;
		ecn = (f[l3 + 1] >> 4) & 3;
		if (ecn != 1 && ecn != 2)
			return false;
		if (mark)
			f[l3 + 1] |= 0x30;
		return true;
	}
	return false;
}

/* the heap of waiting frames, earliest release (then arrival) on top */
static bool pend_before(size_t a, size_t b)
{
	return heap[a].t < heap[b].t ||
	       (heap[a].t == heap[b].t && heap[a].seq < heap[b].seq);
}

static void pend_swap(size_t a, size_t b)
{
	struct pend tmp = heap[a];

	heap[a] = heap[b];
	heap[b] = tmp;
}

static bool heap_push(uint64_t t, struct frame *f)
{
	size_t i = heap_n;

	if (heap_n == heap_cap) {
		size_t cap = heap_cap ? heap_cap * 2 : 1024;
		struct pend *h = realloc(heap, cap * sizeof(*h));

		if (!h)
			return false;
		heap = h;
		heap_cap = cap;
	}
	heap[heap_n++] = (struct pend){ t, pend_seq++, f };
	for (; i && pend_before(i, (i - 1) / 2); i = (i - 1) / 2)
		pend_swap(i, (i - 1) / 2);
	return true;
}

static struct frame *heap_pop(void)
{
	struct frame *f = heap[0].f;
	size_t i = 0, m;

	heap[0] = heap[--heap_n];
	for (;; i = m) {
		m = i;
		if (2 * i + 1 < heap_n && pend_before(2 * i + 1, m))
			m = 2 * i + 1;
		if (2 * i + 2 < heap_n && pend_before(2 * i + 2, m))
			m = 2 * i + 2;
		if (m == i)
			return f;
		pend_swap(i, m);
	}
}

static size_t frame_cost(size_t len)
{
	return sizeof(struct frame) + len + sizeof(struct pend);
}

static void xmit(struct dir *d, const unsigned char *buf, size_t len)
{
	if (send(d->out, buf, len, MSG_DONTWAIT) == (ssize_t)len)
		d->s.tx++;
	else
		d->s.txdrop++;
}

/* the bottleneck and the delay, for one copy of a frame */
static void enqueue(struct dir *d, unsigned char *buf, size_t len)
{
	const struct params *p = &d->p;
	unsigned char *f = buf + VNET_LEN;
	size_t flen = len - VNET_LEN;
	uint64_t now = now_ns(), t = now, free_at = d->free_at, backlog = 0;
	bool mark = false, skip = false, direct;
	struct frame *fr;
	int64_t dl;

	if (p->rate) {
		/* what the bottleneck still has to serialise, in bytes */
		if (free_at > now)
			backlog = (uint64_t)((double)(free_at - now) *
					     (double)p->rate / (8.0 * NSEC));
		if (backlog + flen > (p->limit ? p->limit : DEFAULT_LIMIT)) {
			d->s.qdrop++;
			return;
		}
		mark = p->ecn && backlog > p->ecn && ecn_ect(f, flen, false);
		free_at = (free_at > now ? free_at : now) +
			  flen * 8 * NSEC / p->rate;
		t = free_at;
	}
	if ((p->delay || p->jitter) && !(skip = chance(p->reorder))) {
		dl = (int64_t)p->delay;
		if (p->jitter)
			dl += (int64_t)(rnd64() % (2 * p->jitter + 1)) -
			      (int64_t)p->jitter;
		t += dl > 0 ? (uint64_t)dl : 0;
	}
	/* due now, nothing due before it: straight from the buffer */
	direct = t <= now && (!heap_n || heap[0].t > now);
	if (!direct && pend_bytes + frame_cost(len) > PENDING_MAX) {
		d->s.memdrop++;
		return;
	}
	d->free_at = free_at;
	if (mark) {
		ecn_ect(f, flen, true);
		d->s.marked++;
	}
	if (p->rate && backlog + flen > d->s.qmax)
		d->s.qmax = backlog + flen;
	d->s.reordered += skip;
	if (direct) {
		xmit(d, buf, len);
		return;
	}
	fr = malloc(sizeof(*fr) + len);
	if (!fr || !heap_push(t, fr)) {
		free(fr);
		d->s.memdrop++;
		return;
	}
	fr->d = d;
	fr->len = len;
	memcpy(fr->data, buf, len);
	pend_bytes += frame_cost(len);
}

/* one frame read in direction d: vnet header and frame in buf */
static void impair(struct dir *d, unsigned char *buf, size_t len)
{
	const struct params *p = &d->p;
	struct virtio_net_hdr vh;

	if (p->down) {
		d->s.downdrop++;
		return;
	}
	if (p->burst) {
		if (chance(d->bad ? p->burst_r : p->burst_p))
			d->bad = !d->bad;
		if (d->bad) {
			d->s.lost++;
			return;
		}
	} else if (chance(p->loss)) {
		d->s.lost++;
		return;
	}
	if (len > VNET_LEN + ETH_HLEN && chance(p->corrupt)) {
		d->s.corrupted++;
		memcpy(&vh, buf, VNET_LEN);
		if (vh.gso_type != VIRTIO_NET_HDR_GSO_NONE)
			return;		/* see the top of the file */
		corrupt(buf, len);
	}
	if (chance(p->duplicate)) {
		d->s.duplicated++;
		memcpy(dupbuf, buf, len);	/* each copy its own ECN mark */
		enqueue(d, buf, len);
		enqueue(d, dupbuf, len);
	} else {
		enqueue(d, buf, len);
	}
}

/* put back the VLAN tag of aux into the frame in rxbuf; its new length */
static size_t vlan_restore(size_t len, const struct tpacket_auxdata *aux)
{
	unsigned char *f = rxbuf + VNET_LEN;
	unsigned tpid = aux->tp_status & TP_STATUS_VLAN_TPID_VALID ?
			aux->tp_vlan_tpid : ETH_P_8021Q;
	struct virtio_net_hdr vh;

	memmove(f + 16, f + 12, len - VNET_LEN - 12);
	f[12] = tpid >> 8;
	f[13] = tpid & 0xff;
	f[14] = aux->tp_vlan_tci >> 8;
	f[15] = aux->tp_vlan_tci & 0xff;
	memcpy(&vh, rxbuf, VNET_LEN);	/* its offsets move by 4 */
	if (vh.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM)
		vh.csum_start += 4;
	if (vh.gso_type != VIRTIO_NET_HDR_GSO_NONE && vh.hdr_len)
		vh.hdr_len += 4;
	memcpy(rxbuf, &vh, VNET_LEN);
	return len + 4;
}

static void rx_ready(struct link *l, int side)
{
	for (int i = 0; i < BATCH; i++) {
		union {
			struct cmsghdr h;
			char b[CMSG_SPACE(sizeof(struct tpacket_auxdata))];
		} cm;
		struct sockaddr_ll sll;
		struct iovec iov = { rxbuf, VNET_LEN + FRAME_MAX };
		struct msghdr m = {
			.msg_name = &sll, .msg_namelen = sizeof(sll),
			.msg_iov = &iov, .msg_iovlen = 1,
			.msg_control = &cm, .msg_controllen = sizeof(cm),
		};
		struct tpacket_auxdata aux;
		struct dir *d = &l->dir[side];
		ssize_t n = recvmsg(l->fd[side], &m, MSG_TRUNC);
		size_t len = (size_t)n;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return;	/* EAGAIN, or an error (link down) told once */
		if (!ignore_outgoing && sll.sll_pkttype == PACKET_OUTGOING)
			continue;
		d->s.rx++;
		if ((m.msg_flags & MSG_TRUNC) || len > iov.iov_len ||
		    len < VNET_LEN + ETH_HLEN) {
			d->s.txdrop++;
			continue;
		}
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c;
		     c = CMSG_NXTHDR(&m, c)) {
			if (c->cmsg_level != SOL_PACKET ||
			    c->cmsg_type != PACKET_AUXDATA ||
			    c->cmsg_len < CMSG_LEN(sizeof(aux)))
				continue;
			memcpy(&aux, CMSG_DATA(c), sizeof(aux));
			if (aux.tp_status & TP_STATUS_VLAN_VALID)
				len = vlan_restore(len, &aux);
			break;	/* one tag at most: rxbuf has room for one */
		}
		impair(d, rxbuf, len);
	}
}

/* send what is due, in release order; set the timer for the rest */
static void release_due(void)
{
	uint64_t now = now_ns(), want;
	struct itimerspec its = { { 0, 0 }, { 0, 0 } };

	for (int i = 0; i < FLUSH_MAX && heap_n && heap[0].t <= now; i++) {
		struct frame *f = heap_pop();

		xmit(f->d, f->data, f->len);
		pend_bytes -= frame_cost(f->len);
		free(f);
	}
	want = heap_n ? heap[0].t : 0;
	if (want == armed)
		return;
	its.it_value.tv_sec = (time_t)(want / NSEC);
	its.it_value.tv_nsec = (long)(want % NSEC);
	if (timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
		die(1, "timerfd_settime: %s", strerror(errno));
	armed = want;
}

static bool parse_pct(const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);

	if (!*s || *end || !(v >= 0 && v <= 100))
		return false;
	*out = v;
	return true;
}

/* a decimal integer up to max; with si, a suffix k, m or g */
static bool parse_u64(const char *s, uint64_t max, bool si, uint64_t *out)
{
	unsigned long long v;
	uint64_t mul = 1;
	char *end;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (si && *end && strchr("kKmMgG", *end)) {
		mul = strchr("kK", *end) ? 1000 : strchr("mM", *end) ? 1000000 :
		      1000000000;
		end++;
	}
	if (errno || *end || v > max / mul)
		return false;
	*out = v * mul;
	return true;
}

/* KEY=VALUE into p: NULL, or what is wrong */
static const char *set_key(struct params *p, const char *key, const char *val)
{
	static const struct { const char *key; size_t off; } pct[] = {
		{ "corrupt", offsetof(struct params, corrupt) },
		{ "duplicate", offsetof(struct params, duplicate) },
		{ "reorder", offsetof(struct params, reorder) },
	};
	char tmp[64], *comma;
	uint64_t v;

	for (size_t i = 0; i < sizeof(pct) / sizeof(pct[0]); i++)
		if (!strcmp(key, pct[i].key))
			return parse_pct(val, (double *)((char *)p +
							 pct[i].off)) ?
			       NULL : "bad percentage";
	if (!strcmp(key, "loss")) {
		p->burst = false;
		return parse_pct(val, &p->loss) ? NULL : "bad percentage";
	}
	if (!strcmp(key, "loss-burst")) {
		snprintf(tmp, sizeof(tmp), "%s", val);
		comma = strchr(tmp, ',');
		if (!comma || strlen(val) >= sizeof(tmp))
			return "loss-burst wants P,R";
		*comma = 0;
		if (!parse_pct(tmp, &p->burst_p) ||
		    !parse_pct(comma + 1, &p->burst_r))
			return "bad percentage";
		p->burst = p->burst_p > 0;
		p->loss = 0;
		return NULL;
	}
	if (!strcmp(key, "rate"))
		return parse_u64(val, 1000000000000ull, true, &p->rate) ? NULL :
		       "bad rate (bits/s, suffix k m g, at most 1000g)";
	if (!strcmp(key, "limit") || !strcmp(key, "ecn")) {
		if (!parse_u64(val, 1u << 30, false, &v))
			return "bad byte count (at most 2^30)";
		*(key[0] == 'l' ? &p->limit : &p->ecn) = v;
		return NULL;
	}
	if (!strcmp(key, "delay") || !strcmp(key, "jitter")) {
		if (!parse_u64(val, 60000000, false, &v))
			return "bad microseconds (at most 60000000)";
		*(key[0] == 'd' ? &p->delay : &p->jitter) = v * 1000;
		return NULL;
	}
	if (!strcmp(key, "down")) {
		if (strcmp(val, "0") && strcmp(val, "1"))
			return "down wants 0 or 1";
		p->down = val[0] == '1';
		return NULL;
	}
	return "unknown key";
}

static struct link *find_link(const char *name)
{
	for (int i = 0; i < nlinks; i++)
		if (!strcmp(links[i].name, name))
			return &links[i];
	return NULL;
}

static void __attribute__((format(printf, 4, 5)))
put(char *o, size_t n, size_t *k, const char *fmt, ...)
{
	va_list ap;
	int r;

	if (*k >= n)
		return;
	va_start(ap, fmt);
	r = vsnprintf(o + *k, n - *k, fmt, ap);
	va_end(ap);
	*k = r < 0 ? n : *k + (size_t)r;
}

/* run one request line (changed in place): NULL and the reply in o (when
 * not just "ok"), or what is wrong */
static const char *request(char *line, char *o, size_t on)
{
	static char why[CTL_MAX];
	char *w[64], *save = NULL, *s;
	struct params np[2];
	struct link *l;
	const char *err;
	int n = 0, mask = 0;
	size_t k = 0;

	for (s = strtok_r(line, WS, &save); s; s = strtok_r(NULL, WS, &save)) {
		if (n == 64)
			return "too many words";
		w[n++] = s;
	}
	if (n == 1 && !strcmp(w[0], "ping"))
		return NULL;
	if (!n || (strcmp(w[0], "set") && strcmp(w[0], "clear") &&
		   strcmp(w[0], "stats")))
		return "unknown request";
	if (n < 2 || !(l = find_link(w[1]))) {
		snprintf(why, sizeof(why), "unknown link %s",
			 n < 2 ? "" : w[1]);
		return why;
	}
	if (!strcmp(w[0], "stats")) {
		if (n != 2)
			return "usage: stats NAME";
		put(o, on, &k, "ok");
		for (int i = 0; i < 2; i++) {
			put(o, on, &k, "%s", i ? " | down" : " up");
#define X(f) put(o, on, &k, " %s=%" PRIu64, #f, l->dir[i].s.f);
			STAT_FIELDS(X)
#undef X
		}
		return NULL;
	}
	if (n >= 3)
		mask = !strcmp(w[2], "up") ? 1 : !strcmp(w[2], "down") ? 2 :
		       !strcmp(w[2], "both") ? 3 : 0;
	if (!mask)
		return "direction must be up, down or both";
	if (!strcmp(w[0], "clear")) {
		if (n != 3)
			return "usage: clear NAME DIR";
		memset(np, 0, sizeof(np));
	} else {
		if (n < 4)
			return "usage: set NAME DIR KEY=VALUE...";
		np[0] = l->dir[0].p;
		np[1] = l->dir[1].p;
		/* every word on copies: nothing changes unless all are right */
		for (int i = 3; i < n; i++) {
			char *eq = strchr(w[i], '=');

			err = eq ? NULL : "want KEY=VALUE";
			if (eq)
				*eq = 0;
			for (int j = 0; j < 2 && !err; j++)
				if (mask & (1 << j))
					err = set_key(&np[j], w[i], eq + 1);
			if (err) {
				snprintf(why, sizeof(why), "%s: %s", w[i], err);
				return why;
			}
		}
	}
	for (int j = 0; j < 2; j++) {
		if (mask & (1 << j)) {
			l->dir[j].p = np[j];
			l->dir[j].bad = l->dir[j].bad && np[j].burst;
		}
	}
	return NULL;
}

/* a request's reply: "ok", the stats, or "error: ..." */
static void reply_to(char *line, char *o, size_t on)
{
	const char *err;

	o[0] = 0;
	err = request(line, o, on);
	if (err)
		snprintf(o, on, "error: %s", err);
	else if (!o[0])
		snprintf(o, on, "ok");
}

static void client_ready(int fd, uint32_t events)
{
	char req[CTL_MAX + 1], reply[CTL_MAX];
	ssize_t n = 0;

	if (events & EPOLLIN) {
		n = recv(fd, req, CTL_MAX, MSG_DONTWAIT | MSG_TRUNC);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n > 0) {
			req[n > CTL_MAX ? CTL_MAX : n] = 0;
			if (n > CTL_MAX)
				strcpy(reply, "error: request too long");
			else
				reply_to(req, reply, sizeof(reply));
			send(fd, reply, strlen(reply),
			     MSG_DONTWAIT | MSG_NOSIGNAL);
			return;
		}
	} else if (!(events & (EPOLLHUP | EPOLLERR))) {
		return;
	}
	close(fd);	/* end of file, error or hang-up */
}

static int open_if(const char *name)
{
	unsigned idx = if_nametoindex(name);
	int one = 1, size = SOCKBUF, fd;
	struct sockaddr_ll sll = { .sll_family = AF_PACKET,
				   .sll_protocol = htons(ETH_P_ALL),
				   .sll_ifindex = (int)idx };
	struct packet_mreq mr = { .mr_ifindex = (int)idx,
				  .mr_type = PACKET_MR_PROMISC };

	if (!idx)
		die(1, "no interface %s: %s", name, strerror(errno));
	/* protocol 0: nothing is queued before the options and the bind */
	fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die(1, "AF_PACKET socket: %s", strerror(errno));
	if (setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)) ||
	    setsockopt(fd, SOL_PACKET, PACKET_AUXDATA, &one, sizeof(one)))
		die(1, "%s: PACKET_VNET_HDR, PACKET_AUXDATA: %s", name,
		    strerror(errno));
	/* without it (before Linux 4.20), rx_ready skips PACKET_OUTGOING */
	if (setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one,
		       sizeof(one)))
		ignore_outgoing = false;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)))
		die(1, "bind %s: %s", name, strerror(errno));
	if (setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof(mr)))
		die(1, "%s: promiscuous: %s", name, strerror(errno));
	return fd;
}

static int open_ctl(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC,
			0);

	if (fd < 0)
		die(1, "AF_UNIX socket: %s", strerror(errno));
	memcpy(sa.sun_path, path, strlen(path) + 1);	/* length checked */
	if (!lstat(path, &st) && S_ISSOCK(st.st_mode))
		unlink(path);	/* left by an earlier run */
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 16))
		die(1, "control socket %s: %s", path, strerror(errno));
	return fd;
}

/* NAME:IFA:IFB */
static void parse_link(char *arg)
{
	struct link *l = &links[nlinks];
	char *a = strchr(arg, ':'), *b = a ? strchr(a + 1, ':') : NULL;

	if (nlinks == MAX_LINKS)
		die(2, "at most %d links", MAX_LINKS);
	if (!b || strchr(b + 1, ':') || a == arg || b == a + 1 || !b[1])
		die(2, "bad link %s (NAME:IFA:IFB)", arg);
	*a++ = *b++ = 0;
	if (strlen(arg) >= sizeof(l->name) ||
	    strspn(arg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		   "0123456789_.-") != strlen(arg))
		die(2, "bad link name %s (letters, digits, _ . -)", arg);
	if (strlen(a) >= IFNAMSIZ || strlen(b) >= IFNAMSIZ || !strcmp(a, b))
		die(2, "bad interfaces %s, %s in link %s", a, b, arg);
	if (find_link(arg))
		die(2, "link %s given twice", arg);
	for (int i = 0; i < nlinks; i++)
		for (int j = 0; j < 2; j++)
			if (!strcmp(links[i].ifname[j], a) ||
			    !strcmp(links[i].ifname[j], b))
				die(2, "%s in two links", links[i].ifname[j]);
	strcpy(l->name, arg);
	strcpy(l->ifname[0], a);
	strcpy(l->ifname[1], b);
	nlinks++;
}

static void ep_add(int ep, int fd, uint32_t kind, uint32_t idx)
{
	struct epoll_event ev = { .events = EPOLLIN };

	ev.data.u64 = (uint64_t)kind << 32 | idx;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev))
		die(1, "epoll_ctl: %s", strerror(errno));
}

static const char usage[] =
	"usage: qhca-linkem [--seed N] [--ctl PATH] "
	"[--set 'NAME DIR KEY=VALUE...']... LINK...\n"
	"  LINK = NAME:IFA:IFB  frames arriving on IFA leave on IFB (direction "
	"up), IFB's on IFA (down)\n"
	"  DIR = up | down | both\n"
	"  KEY = loss=P loss-burst=P,R corrupt=P duplicate=P reorder=P "
	"(percent)\n"
	"        rate=BITS[k|m|g] limit=BYTES ecn=BYTES delay=US jitter=US "
	"down=0|1\n"
	"  --ctl PATH: AF_UNIX SOCK_SEQPACKET requests: ping, "
	"set NAME DIR KEY=VALUE..., clear NAME DIR, stats NAME\n";

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "ctl", required_argument, NULL, 'c' },
		{ "set", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *sets[256], line[CTL_MAX], reply[CTL_MAX];
	int nsets = 0, c, ep, sfd, lfd = -1;
	const char *ctl = NULL;
	uint64_t seed = 0, z;
	bool seeded = false;
	struct timespec ts;
	sigset_t sigs;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (!parse_u64(optarg, UINT64_MAX, false, &seed))
				die(2, "bad seed %s", optarg);
			seeded = true;
			break;
		case 'c':
			if (!*optarg || strlen(optarg) >=
			    sizeof(((struct sockaddr_un *)0)->sun_path))
				die(2, "bad control socket path %s", optarg);
			ctl = optarg;
			break;
		case 'S':
			if (nsets == 256)
				die(2, "too many --set");
			sets[nsets++] = optarg;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			die(2, "bad option");
		}
	}
	for (int i = optind; i < argc; i++)
		parse_link(argv[i]);
	if (!nlinks)
		die(2, "no link given");
	for (int i = 0; i < nsets; i++) {
		snprintf(line, sizeof(line), "set %s", sets[i]);
		reply_to(line, reply, sizeof(reply));
		if (strcmp(reply, "ok"))
			die(2, "--set '%s': %s", sets[i], reply);
	}
	if (!seeded) {
		clock_gettime(CLOCK_REALTIME, &ts);
		seed = (uint64_t)ts.tv_sec * NSEC + (uint64_t)ts.tv_nsec;
		seed ^= (uint64_t)getpid() << 40;
		fprintf(stderr, "qhca-linkem: seed %" PRIu64 "\n", seed);
	}
	z = seed + 0x9E3779B97F4A7C15ull;	/* splitmix64 */
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	rng = (z ^ (z >> 31)) ? (z ^ (z >> 31)) : 1;

	/* SIGTERM and SIGINT arrive on a signalfd; replies never SIGPIPE */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	sfd = signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC);
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (sfd < 0 || tfd < 0 || ep < 0)
		die(1, "signalfd/timerfd/epoll: %s", strerror(errno));
	ep_add(ep, sfd, SRC_SIG, 0);
	ep_add(ep, tfd, SRC_TIMER, 0);
	for (int i = 0; i < nlinks; i++) {
		struct link *l = &links[i];

		l->fd[0] = open_if(l->ifname[0]);
		l->fd[1] = open_if(l->ifname[1]);
		l->dir[0].out = l->fd[1];
		l->dir[1].out = l->fd[0];
		ep_add(ep, l->fd[0], SRC_PKT, (uint32_t)(2 * i));
		ep_add(ep, l->fd[1], SRC_PKT, (uint32_t)(2 * i + 1));
	}
	if (ctl) {
		lfd = open_ctl(ctl);
		ep_add(ep, lfd, SRC_LISTEN, 0);
	}
	printf("qhca-linkem: ready\n");
	fflush(stdout);

	for (;;) {
		struct epoll_event ev[64];
		int n = epoll_wait(ep, ev, 64, -1);
		uint64_t exp;

		if (n < 0 && errno != EINTR)
			die(1, "epoll_wait: %s", strerror(errno));
		for (int i = 0; i < n; i++) {
			uint32_t kind = (uint32_t)(ev[i].data.u64 >> 32);
			uint32_t idx = (uint32_t)ev[i].data.u64;

			if (kind == SRC_PKT)
				rx_ready(&links[idx / 2], (int)(idx % 2));
			else if (kind == SRC_TIMER &&
				 read(tfd, &exp, sizeof(exp)) == sizeof(exp))
				armed = 0;	/* it expired */
			else if (kind == SRC_SIG)
				goto out;
			else if (kind == SRC_LISTEN &&
				 (c = accept4(lfd, NULL, NULL, SOCK_NONBLOCK |
					      SOCK_CLOEXEC)) >= 0)
				ep_add(ep, c, SRC_CLIENT, (uint32_t)c);
			else if (kind == SRC_CLIENT)
				client_ready((int)idx, ev[i].events);
		}
		release_due();
	}
out:
	if (ctl)
		unlink(ctl);
	return 0;
}
