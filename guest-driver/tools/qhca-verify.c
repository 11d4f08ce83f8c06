// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * qhca-verify: a verifying RDMA workload between two RoCE devices of any
 * make (qhca, Soft-RoCE, ...).  Every byte that travels is compared with
 * what it must be, and so is every completion.
 *
 *   server: qhca-verify -d DEV -g GIDX -p PORT
 *   client: qhca-verify -d DEV -g GIDX -p PORT [OPTIONS] SERVER_IP
 *
 * The client chooses the workload and tells the server over TCP:
 *   -q QPS      RC QPs (default 8, at most 1024)
 *   -D DEPTH    work requests outstanding per QP (default 16)
 *   -S SIZES    message sizes, comma separated, cycled through: N, Nk, Nm,
 *               or rN for a random size in 1..N drawn from the seed
 *               (default 1,8,1000,4096,65536,1m,r70000)
 *   -o OPS      write,read,send,sendimm,writeimm,atomic (default all)
 *   -n ITERS    operations per QP (default 100 when no -t is given)
 *   -t SECONDS  stop after this long (checkpoints not counted); -t 0: run
 *               until SIGINT or SIGTERM
 *   -s SEED     seed of the patterns, random sizes and operands (default 1)
 *   -c SECONDS  a checkpoint this often: the server checks every byte of
 *               its memory (default 5; 0: at the end only)
 *   -m MIB      memory each side may use (default 256): -D, then the
 *               server's receive and write slots, are lowered to fit
 *   -T SECONDS  a QP with work outstanding and no completion for this long
 *               fails the run (default 60)
 *   -A TIMEOUT  the client's QPs' local ACK timeout, the IBA exponent:
 *               4.096 us << TIMEOUT (default 14: 67 ms; 0..31)
 *   -R RETRY    the client's QPs' retry count (default 7; 0..7): with -A
 *               they say how long a path may be down before the QP fails
 * SIGINT or SIGTERM to the client ends the run cleanly: no new work,
 * everything outstanding completed and checked, the final checkpoint,
 * the report.
 *
 * The schedule: operation number SEQ of QP Q is a pure function of (seed,
 * the options, Q, SEQ): the selected operations in turn (atomics
 * alternate FETCH_ADD and CMP_SWP, most of the compares hitting), the
 * sizes in turn, offsets, immediates and operands from a hash.  The bytes
 * of message SEQ of QP Q at offset X are a hash of (seed, Q, SEQ, X); the
 * server's READ source, its write areas and its atomic words start from
 * patterns of their own.  So both sides know what every byte must be.
 *
 * What each operation does and who checks it:
 *   write      RDMA WRITE of the message into one of the server's write
 *              slots, then an RDMA READ of it back into another local
 *              buffer: the client compares every byte read back; at every
 *              checkpoint the server compares each write slot in full
 *              with the last writes into it (bytes beyond them: older
 *              writes, then the slot's own pattern), so nothing else
 *              changed either
 *   read       RDMA READ of a random range of the server's READ source,
 *              compared in full by the client; the server checks at each
 *              checkpoint that its READ source is unchanged
 *   send, sendimm  SEND (with immediate): the server compares every byte
 *              of the receive buffer, byte_len, IBV_WC_WITH_IMM and the
 *              immediate, the opcode (IBV_WC_RECV), the QP number
 *   writeimm   RDMA WRITE with immediate into a slot of its own: the
 *              server compares every byte when its receive completes
 *              (IBV_WC_RECV_RDMA_WITH_IMM, byte_len, the immediate)
 *   atomic     FETCH_ADD or CMP_SWP on the QP's own 8-byte word: the
 *              client checks the original value returned against its
 *              model of the word; the server checks the word against its
 *              own replay of the schedule at every checkpoint
 * Every buffer that receives data (READ targets, receive buffers, the
 * write-with-immediate slots) is filled with the complement of what must
 * arrive, 64 guard bytes past its end too, before it is handed to the
 * device; the guard must be intact afterwards.
 *
 * Completions: every work request is signaled, its wr_id is (QP, number
 * of the request on that QP); each must complete once, in order per QP
 * (a duplicate, a missing or an unknown one fails), with IBV_WC_SUCCESS,
 * the opcode of the request, byte_len = its length (8 for atomics) and
 * the QP's number.  After the last completion both sides poll once more:
 * nothing else may come.
 *
 * Flow control: receive buffers and write-with-immediate slots are reused
 * only after the server has checked them.  The server says over TCP how
 * many receives it has posted on each QP (credits); the client posts a
 * SEND or WRITE with immediate only within them, so no RNR ever happens
 * and a slot is never overwritten before it was checked.  A write slot is
 * reused after its read-back completed.  At a checkpoint the client lets
 * every QP drain, sends each QP's count of operations and of messages,
 * and the server, once all those receives completed, checks its memory
 * and answers.
 *
 * Report: per operation counts and bytes; throughput (MB/s, 10^6 bytes
 * per second of running time, checkpoints excluded); the application's
 * gap: the longest time a QP with work outstanding waited for its next
 * completion (max_gap_ms), and the same for the whole CQ (cq_gap_ms);
 * the first difference (QP, request number, operation, offset, expected
 * and found byte).  Each side prints "ok - NAME"/"not ok - NAME" lines
 * and last "verify: all ok ops=N bytes=N MB/s=N max_gap_ms=N ..." or
 * "verify: FAILED errors=N ..."; it exits 0 only if everything matched.
 * The server prints the same line with role=server (ops: its receives).
 *
 * The TCP messages are host structs: both ends must be of one byte order
 * and word size (the guests are x86_64).  Atomic words are in the
 * responder's byte order, as rdma-core's providers and Soft-RoCE keep
 * them.
 *
 * Copyright (c) 2026 The qhca authors
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#define MAGIC		0x71766572u	/* "qver" */
#define VERSION		1
#define MAX_QP		1024
#define MAX_SIZES	16
#define MAX_DEPTH	1024
#define MAX_LEN		(16u << 20)
#define RANDOM_SIZE	0x80000000u
#define GUARD		64
#define ALIGN		64
#define S_EXTRA		4096	/* the READ source is this much longer */
#define ATOM_AREA	64
#define WRID(qp, n)	(((uint64_t)(qp) << 48) | ((n) & 0xffffffffffffull))
#define BATCH		32
#define TEXT		256

/* what -o selects */
enum { U_WRITE, U_READ, U_SEND, U_SENDIMM, U_WRITEIMM, U_ATOMIC, N_UOPS };
static const char *const uop_names[N_UOPS] = {
	"write", "read", "send", "sendimm", "writeimm", "atomic",
};

/* the work requests */
enum {
	OP_WRITE, OP_READBACK, OP_READ, OP_SEND, OP_SENDIMM, OP_WRITEIMM,
	OP_FADD, OP_CSWAP, N_OPS
};
static const char *const op_names[N_OPS] = {
	"RDMA WRITE", "RDMA READ (read-back)", "RDMA READ", "SEND",
	"SEND with immediate", "RDMA WRITE with immediate", "FETCH_ADD",
	"CMP_SWP",
};

/* the hash streams */
enum {
	K_MSG = 1, K_SIZE, K_OFF, K_IMM, K_ADD, K_CMP, K_SWAP, K_STATIC,
	K_WINIT, K_AINIT,
};

/* the workload, client to server */
struct cfg {
	uint32_t magic, version;
	uint32_t nqp, depth, nrecv, nwslot;
	uint32_t ops;		/* 1 << U_* */
	uint32_t nsizes;
	uint32_t sizes[MAX_SIZES];
	uint32_t maxlen;
	uint32_t timeout_s;
	uint64_t seed;
};

/* each side's device and QPs */
struct hello {
	union ibv_gid gid;
	uint32_t mtu;		/* enum ibv_mtu, the port's active MTU */
	uint32_t rd_atom;	/* max_qp_rd_atom and max_qp_init_rd_atom */
	uint64_t base;		/* the server's region */
	uint32_t rkey, pad;
};

struct qpinfo {
	uint32_t qpn, psn;
};

/* TCP messages after the start */
enum { M_CREDIT = 1, M_ABORT, M_CHECK, M_END, M_REPORT };
struct msg {
	uint32_t type, qp;
	uint64_t val;
};
struct qpcount {
	uint64_t seq;		/* operations scheduled and posted */
	uint64_t msgs;		/* of them, messages that take a receive */
	uint64_t failed;	/* the QP failed on the client: not waited for */
};

struct step {
	uint64_t seq;
	int op;
	uint32_t len, roff, imm;
};

/* where things are in the server's region (both sides compute it) */
struct layout {
	size_t slot;		/* a buffer: the longest message + guard */
	size_t s_len;		/* the READ source */
	size_t off_w, off_wi, off_atom, qp_stride;
	size_t recv_off;	/* the receive buffers, after every QP's part */
	size_t server_total, client_total;
};

static struct cfg C;
static struct layout L;
/* the requester's QP attributes (the client's; the server keeps these) */
static unsigned int ack_timeout = 14, retry_cnt = 7;
static int sel[N_UOPS], nsel;
static volatile sig_atomic_t stop_signal;
static int errors, server_abort;
static char first_error[TEXT];
/* by kind: [0] completions and the protocol, [1] data */
static int errs[2];
static char first_of[2][TEXT];
static uint8_t *scratch;

/* --- output ------------------------------------------------------------------------ */

static void result(int ok, const char *name, const char *fmt, ...)
{
	va_list ap;

	printf("%s - %s", ok ? "ok" : "not ok", name);
	if (!ok && fmt) {
		printf(" (");
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
		printf(")");
	}
	printf("\n");
	fflush(stdout);
}

/* an error of KIND: counted; the first is kept for the report, ten are shown */
static void vfail(int kind, const char *fmt, va_list ap)
{
	char text[TEXT];

	vsnprintf(text, sizeof(text), fmt, ap);
	if (!errs[kind]++)
		snprintf(first_of[kind], TEXT, "%s", text);
	if (!errors)
		snprintf(first_error, sizeof(first_error), "%s", text);
	if (errors < 10)
		printf("# error: %s\n", text);
	else if (errors == 10)
		printf("# error: (more errors not shown)\n");
	fflush(stdout);
	errors++;
}

/* a completion, the order of things, the protocol */
static void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail(0, fmt, ap);
	va_end(ap);
}

/* a byte or a value that is not what it must be */
static void fail_data(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail(1, fmt, ap);
	va_end(ap);
}

static void die(const char *what)
{
	printf("not ok - %s (%s)\n", what, strerror(errno));
	printf("verify: FAILED errors=1 first: %s\n", what);
	exit(1);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* --- patterns ------------------------------------------------------------------------- */

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

static uint64_t hash(unsigned int qp, uint64_t seq, unsigned int kind)
{
	return mix64(mix64(mix64(C.seed + kind) + qp) + seq);
}

#define GOLDEN	0x9e3779b97f4a7c15ull

static uint8_t pat_byte(uint64_t key, uint64_t pos)
{
	return mix64(key + (pos >> 3) * GOLDEN) >> (8 * (pos & 7));
}

/*
 * The bytes [off, off + len) of the pattern KEY into DST; their
 * complements with INVERT (what a buffer holds before the data comes).
 */
static void gen(uint8_t *dst, uint64_t key, uint64_t off, size_t len, int invert)
{
	uint8_t inv = invert ? 0xff : 0;
	size_t i = 0;
	int b;

	for (; i < len && ((off + i) & 7); i++)
		dst[i] = pat_byte(key, off + i) ^ inv;
	for (; i + 8 <= len; i += 8) {
		uint64_t w = mix64(key + ((off + i) >> 3) * GOLDEN);

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		/* byte b of the word is w >> 8b, as pat_byte() has it */
		w ^= invert ? ~0ull : 0;
		memcpy(dst + i, &w, 8);
		(void)b;
#else
		for (b = 0; b < 8; b++)
			dst[i + b] = (uint8_t)(w >> (8 * b)) ^ inv;
#endif
	}
	for (; i < len; i++)
		dst[i] = pat_byte(key, off + i) ^ inv;
}

static uint64_t msg_key(unsigned int qp, uint64_t seq)
{
	return hash(qp, seq, K_MSG);
}

/*
 * Compare BUF with [off, off + len) of KEY (complemented with INVERT).
 * On a difference: an error naming WHAT, the first differing offset
 * (counted from BASE), the bytes expected and found, how many differ.
 */
static int check_bytes(const uint8_t *buf, uint64_t key, uint64_t off,
		       size_t len, int invert, uint64_t base, const char *what)
{
	size_t done = 0, i, first = 0, bad = 0;
	uint8_t want = 0, got = 0;

	while (done < len) {
		size_t n = len - done;

		if (n > L.slot)
			n = L.slot;
		gen(scratch, key, off + done, n, invert);
		if (memcmp(buf + done, scratch, n)) {
			for (i = 0; i < n; i++) {
				if (buf[done + i] == scratch[i])
					continue;
				if (!bad++) {
					first = done + i;
					want = scratch[i];
					got = buf[done + i];
				}
			}
		}
		done += n;
	}
	if (!bad)
		return 0;
	fail_data("%s: offset %zu: expected 0x%02x, got 0x%02x (%zu of %zu bytes differ)",
	     what, (size_t)(base + first), want, got, bad, len);
	return -1;
}

/* --- the schedule ------------------------------------------------------------------------- */

static int is_msg(int op)
{
	return op == OP_SEND || op == OP_SENDIMM || op == OP_WRITEIMM;
}

static void schedule(unsigned int qp, uint64_t seq, struct step *st)
{
	uint64_t round = seq / nsel;
	uint32_t sz = C.sizes[(round + qp) % C.nsizes];

	memset(st, 0, sizeof(*st));
	st->seq = seq;
	st->len = (sz & RANDOM_SIZE) ?
		  1 + hash(qp, seq, K_SIZE) % (sz & ~RANDOM_SIZE) : sz;
	st->imm = (uint32_t)hash(qp, seq, K_IMM);
	switch (sel[seq % nsel]) {
	case U_WRITE:
		st->op = OP_WRITE;
		break;
	case U_READ:
		st->op = OP_READ;
		st->roff = hash(qp, seq, K_OFF) % (L.s_len - st->len + 1);
		break;
	case U_SEND:
		st->op = OP_SEND;
		break;
	case U_SENDIMM:
		st->op = OP_SENDIMM;
		break;
	case U_WRITEIMM:
		st->op = OP_WRITEIMM;
		break;
	default:
		st->op = (round & 1) ? OP_CSWAP : OP_FADD;
		st->len = 8;
		break;
	}
}

/*
 * One atomic step on the model of a QP's word: the operands in *ADD_CMP
 * and *SWAP, the original value returned, *MODEL updated.
 */
static uint64_t atomic_step(uint64_t *model, unsigned int qp,
			    const struct step *st, uint64_t *add_cmp,
			    uint64_t *swap)
{
	uint64_t orig = *model, h;

	if (st->op == OP_FADD) {
		*add_cmp = hash(qp, st->seq, K_ADD);
		*swap = 0;
		*model = orig + *add_cmp;
		return orig;
	}
	h = hash(qp, st->seq, K_CMP);
	/* three in four hit; a miss compares with a value it cannot be */
	*add_cmp = (h & 3) ? orig : orig + 1 + (h >> 2) % 1000;
	*swap = hash(qp, st->seq, K_SWAP);
	if (*add_cmp == orig)
		*model = *swap;
	return orig;
}

static size_t round_up(size_t x, size_t a)
{
	return (x + a - 1) / a * a;
}

static void make_layout(void)
{
	L.slot = round_up(C.maxlen + GUARD, ALIGN);
	L.s_len = C.maxlen + S_EXTRA;
	L.off_w = round_up(L.s_len, ALIGN);
	L.off_wi = L.off_w + (size_t)C.nwslot * L.slot;
	L.off_atom = L.off_wi + (size_t)C.nrecv * L.slot;
	L.qp_stride = L.off_atom + ATOM_AREA;
	L.recv_off = round_up((size_t)C.nqp * L.qp_stride, 4096);
	L.server_total = round_up(L.recv_off + (size_t)C.nqp * C.nrecv * L.slot, 4096);
	L.client_total = round_up((size_t)C.nqp * C.depth * L.slot, 4096);
}

static int has_msgs(void)
{
	return !!(C.ops & ((1 << U_SEND) | (1 << U_SENDIMM) | (1 << U_WRITEIMM)));
}

/* --- TCP ---------------------------------------------------------------------------------- */

static int tcp_connect(const char *host, const char *port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res;
	int fd = -1, i;

	if (getaddrinfo(host, port, &hints, &res))
		return -1;
	for (i = 0; i < 300 && !stop_signal; i++) {	/* it may not listen yet */
		fd = socket(res->ai_family, SOCK_STREAM, 0);
		if (fd >= 0 && !connect(fd, res->ai_addr, res->ai_addrlen))
			break;
		if (fd >= 0)
			close(fd);
		fd = -1;
		usleep(100000);
	}
	freeaddrinfo(res);
	return fd;
}

static int tcp_accept(const char *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int one = 1, s, fd;

	sa.sin_port = htons(atoi(port));
	s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0 || setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(s, (struct sockaddr *)&sa, sizeof(sa)) || listen(s, 1))
		return -1;
	do {
		fd = accept(s, NULL, NULL);
	} while (fd < 0 && errno == EINTR && !stop_signal);
	close(s);
	return fd;
}

static int send_all(int fd, const void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = write(fd, (const char *)buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		done += n;
	}
	return 0;
}

static int recv_all(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, (char *)buf + got, len - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		got += n;
	}
	return 0;
}

/* the messages that came in, parsed as they complete */
static uint8_t rx_buf[1 << 16];
static size_t rx_len;
static int rx_eof;

/* read what is there (or, with WAIT_MS, wait that long for something) */
static void rx_pump(int fd, int wait_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;

	if (rx_eof || rx_len == sizeof(rx_buf))
		return;
	if (wait_ms && poll(&p, 1, wait_ms) <= 0)
		return;
	n = recv(fd, rx_buf + rx_len, sizeof(rx_buf) - rx_len, MSG_DONTWAIT);
	if (n == 0)
		rx_eof = 1;
	else if (n > 0)
		rx_len += n;
}

static size_t msg_size(const struct msg *m)
{
	switch (m->type) {
	case M_CHECK:
	case M_END:
		return sizeof(*m) + (size_t)C.nqp * sizeof(struct qpcount);
	case M_REPORT:
		return sizeof(*m) + TEXT;
	default:
		return sizeof(*m);
	}
}

/* the next whole message into OUT (at most OUT_LEN bytes); 0 if none */
static size_t rx_take(void *out, size_t out_len)
{
	struct msg m;
	size_t n;

	if (rx_len < sizeof(m))
		return 0;
	memcpy(&m, rx_buf, sizeof(m));
	n = msg_size(&m);
	if (n > out_len) {
		fail("TCP: a message of type %u and %zu bytes", m.type, n);
		rx_eof = 1;
		return 0;
	}
	if (rx_len < n)
		return 0;
	memcpy(out, rx_buf, n);
	memmove(rx_buf, rx_buf + n, rx_len - n);
	rx_len -= n;
	return n;
}

/* --- verbs ------------------------------------------------------------------------------------ */

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_mr *mr;
static struct ibv_qp **qps;
static uint8_t *mem;
static int gidx, max_cqe;

static int to_rts(struct ibv_qp *qp, const struct qpinfo *me,
		  const struct qpinfo *them, const struct hello *peer,
		  enum ibv_mtu mtu, int rd_atom, int access)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = access,
	};

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return errno;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = them->qpn;
	a.rq_psn = them->psn;
	a.max_dest_rd_atomic = rd_atom;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = peer->gid;
	a.ah_attr.grh.sgid_index = gidx;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return errno;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = me->psn;
	a.timeout = ack_timeout;
	a.retry_cnt = retry_cnt;
	a.rnr_retry = 7;
	a.max_rd_atomic = rd_atom;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
			  IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC))
		return errno;
	return 0;
}

static void open_device(const char *devname, struct hello *me)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	int i;

	for (i = 0; list && list[i] && !ctx; i++)
		if (!devname || !strcmp(ibv_get_device_name(list[i]), devname))
			ctx = ibv_open_device(list[i]);
	if (!ctx)
		die("open the device");
	ibv_free_device_list(list);
	if (ibv_query_device(ctx, &da) || ibv_query_port(ctx, 1, &pa))
		die("ibv_query_device, ibv_query_port");
	if (ibv_query_gid(ctx, 1, gidx, &me->gid))
		die("ibv_query_gid");
	me->mtu = pa.active_mtu;
	max_cqe = da.max_cqe;
	me->rd_atom = da.max_qp_rd_atom < da.max_qp_init_rd_atom ?
		      da.max_qp_rd_atom : da.max_qp_init_rd_atom;
	if (me->rd_atom > 16)
		me->rd_atom = 16;
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		die("ibv_alloc_pd");
}

static void make_qps(int cqe, uint32_t send_wr, uint32_t recv_wr,
		     struct qpinfo *info)
{
	unsigned int q;

	if (cqe > max_cqe) {
		fprintf(stderr, "%d CQEs wanted, the device's max_cqe is %d: fewer QPs or a lower depth\n",
			cqe, max_cqe);
		errno = EINVAL;
		die("the CQ's size");
	}
	cq = ibv_create_cq(ctx, cqe, NULL, NULL, 0);
	if (!cq)
		die("ibv_create_cq");
	qps = calloc(C.nqp, sizeof(*qps));
	if (!qps)
		die("calloc");
	for (q = 0; q < C.nqp; q++) {
		struct ibv_qp_init_attr a = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = send_wr, .max_recv_wr = recv_wr,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};

		qps[q] = ibv_create_qp(pd, &a);
		if (!qps[q]) {
			fprintf(stderr, "QP %u of %u\n", q, C.nqp);
			die("ibv_create_qp");
		}
		info[q].qpn = qps[q]->qp_num;
		info[q].psn = (mix64(getpid() * 4099ull + q) & 0xffffff);
	}
}

static void connect_qps(const struct qpinfo *mine, const struct qpinfo *theirs,
			const struct hello *me, const struct hello *peer,
			int access)
{
	enum ibv_mtu mtu = me->mtu < peer->mtu ? me->mtu : peer->mtu;
	int rd = me->rd_atom < peer->rd_atom ? me->rd_atom : peer->rd_atom;
	unsigned int q;
	int err;

	if (rd < 1)
		rd = 1;
	for (q = 0; q < C.nqp; q++) {
		err = to_rts(qps[q], &mine[q], &theirs[q], peer, mtu, rd, access);
		if (err) {
			errno = err;
			die("QP to RTS");
		}
	}
	printf("# verify: %u RC QPs connected, path MTU %d, %d READs/atomics outstanding\n",
	       C.nqp, 128 << mtu, rd);
}

static const char *wc_op_name(int op)
{
	switch (op) {
	case IBV_WC_SEND: return "IBV_WC_SEND";
	case IBV_WC_RDMA_WRITE: return "IBV_WC_RDMA_WRITE";
	case IBV_WC_RDMA_READ: return "IBV_WC_RDMA_READ";
	case IBV_WC_COMP_SWAP: return "IBV_WC_COMP_SWAP";
	case IBV_WC_FETCH_ADD: return "IBV_WC_FETCH_ADD";
	case IBV_WC_RECV: return "IBV_WC_RECV";
	case IBV_WC_RECV_RDMA_WITH_IMM: return "IBV_WC_RECV_RDMA_WITH_IMM";
	default: return "another opcode";
	}
}

static int wc_opcode_of(int op)
{
	switch (op) {
	case OP_WRITE:
	case OP_WRITEIMM:
		return IBV_WC_RDMA_WRITE;
	case OP_READ:
	case OP_READBACK:
		return IBV_WC_RDMA_READ;
	case OP_SEND:
	case OP_SENDIMM:
		return IBV_WC_SEND;
	case OP_FADD:
		return IBV_WC_FETCH_ADD;
	default:
		return IBV_WC_COMP_SWAP;
	}
}

/* --- the client ------------------------------------------------------------------------------ */

struct pend {
	uint64_t seq;
	uint64_t expect;	/* atomics: the original value */
	uint32_t len, roff;
	uint32_t wslot;
	int op;
};

struct cqp {
	uint64_t seq;		/* the next operation */
	uint64_t posted, done;	/* work requests */
	uint64_t msgs, credit;	/* messages posted, receives the server posted */
	uint64_t wseq;		/* plain writes */
	uint64_t model;		/* the remote atomic word */
	struct pend *fifo;	/* DEPTH entries, request N at N % DEPTH */
	uint8_t *wbusy;		/* write slots waiting for their read-back */
	double t_last;
	double max_gap;
	int have_step, failed;
	struct step st;
};

static struct cqp *cl;
static struct hello srv;
static uint64_t op_count[N_OPS], op_bytes[N_OPS];
static uint64_t wrs_done, bytes_done, reads_checked, atomics_checked;
static double cq_last, cq_max_gap;
static uint64_t outstanding;

static uint8_t *local_buf(unsigned int q, uint64_t n)
{
	return mem + ((size_t)q * C.depth + n % C.depth) * L.slot;
}

static uint64_t remote_qp(unsigned int q)
{
	return srv.base + (size_t)q * L.qp_stride;
}

/*
 * Post the QP's next operation if it can go now: room in the send queue,
 * a credit for a message, a free write slot. 1 if posted.
 */
static int post_next(unsigned int q, double *t)
{
	struct cqp *c = &cl[q];
	struct step *st = &c->st;
	struct ibv_send_wr wr[2], *bad;
	struct ibv_sge sge[2];
	struct pend *p;
	uint32_t need = 1, ws = 0;
	uint64_t add_cmp = 0, swap = 0, orig = 0;
	uint8_t *buf;
	int i, err;

	if (!c->have_step) {
		schedule(q, c->seq, st);
		c->have_step = 1;
	}
	if (st->op == OP_WRITE) {
		need = 2;
		ws = c->wseq % C.nwslot;
		if (c->wbusy[ws])
			return 0;
	}
	if (c->posted - c->done + need > C.depth)
		return 0;
	if (is_msg(st->op) && c->msgs >= c->credit)
		return 0;
	memset(wr, 0, sizeof(wr));
	for (i = 0; i < (int)need; i++) {
		p = &c->fifo[(c->posted + i) % C.depth];
		memset(p, 0, sizeof(*p));
		p->seq = st->seq;
		p->len = st->len;
		p->op = st->op;
		buf = local_buf(q, c->posted + i);
		sge[i].addr = (uintptr_t)buf;
		sge[i].length = st->len;
		sge[i].lkey = mr->lkey;
		wr[i].wr_id = WRID(q, c->posted + i);
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		if (i)
			wr[i - 1].next = &wr[i];
	}
	p = &c->fifo[c->posted % C.depth];
	buf = local_buf(q, c->posted);
	switch (st->op) {
	case OP_WRITE:
		gen(buf, msg_key(q, st->seq), 0, st->len, 0);
		wr[0].opcode = IBV_WR_RDMA_WRITE;
		wr[0].wr.rdma.remote_addr = remote_qp(q) + L.off_w + (size_t)ws * L.slot;
		wr[0].wr.rdma.rkey = srv.rkey;
		p->wslot = ws;
		/* and read it back into the next buffer */
		p = &c->fifo[(c->posted + 1) % C.depth];
		p->op = OP_READBACK;
		p->wslot = ws;
		gen(local_buf(q, c->posted + 1), msg_key(q, st->seq), 0,
		    st->len + GUARD, 1);
		wr[1].opcode = IBV_WR_RDMA_READ;
		wr[1].wr.rdma.remote_addr = wr[0].wr.rdma.remote_addr;
		wr[1].wr.rdma.rkey = srv.rkey;
		break;
	case OP_READ:
		p->roff = st->roff;
		gen(buf, hash(q, 0, K_STATIC), st->roff, st->len + GUARD, 1);
		wr[0].opcode = IBV_WR_RDMA_READ;
		wr[0].wr.rdma.remote_addr = remote_qp(q) + st->roff;
		wr[0].wr.rdma.rkey = srv.rkey;
		break;
	case OP_SEND:
	case OP_SENDIMM:
		gen(buf, msg_key(q, st->seq), 0, st->len, 0);
		wr[0].opcode = st->op == OP_SEND ? IBV_WR_SEND : IBV_WR_SEND_WITH_IMM;
		wr[0].imm_data = htonl(st->imm);
		break;
	case OP_WRITEIMM:
		gen(buf, msg_key(q, st->seq), 0, st->len, 0);
		wr[0].opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		wr[0].imm_data = htonl(st->imm);
		wr[0].wr.rdma.remote_addr = remote_qp(q) + L.off_wi +
					    (size_t)(c->msgs % C.nrecv) * L.slot;
		wr[0].wr.rdma.rkey = srv.rkey;
		break;
	default:
		orig = atomic_step(&c->model, q, st, &add_cmp, &swap);
		p->expect = orig;
		gen(buf, msg_key(q, st->seq), 0, 8 + GUARD, 1);
		memcpy(buf, &orig, 8);
		for (i = 0; i < 8; i++)
			buf[i] ^= 0xff;
		wr[0].opcode = st->op == OP_FADD ? IBV_WR_ATOMIC_FETCH_AND_ADD :
			       IBV_WR_ATOMIC_CMP_AND_SWP;
		wr[0].wr.atomic.remote_addr = remote_qp(q) + L.off_atom;
		wr[0].wr.atomic.rkey = srv.rkey;
		wr[0].wr.atomic.compare_add = add_cmp;
		wr[0].wr.atomic.swap = swap;
		break;
	}
	err = ibv_post_send(qps[q], wr, &bad);
	if (err) {
		fail("QP %u request %" PRIu64 " (%s, %u bytes): ibv_post_send: %s",
		     q, st->seq, op_names[st->op], st->len, strerror(err));
		c->failed = 1;
		return 0;
	}
	if (c->posted == c->done) {
		if (!*t)
			*t = now_s();
		c->t_last = *t;
	}
	if (!outstanding) {
		if (!*t)
			*t = now_s();
		cq_last = *t;
	}
	if (st->op == OP_WRITE) {
		c->wbusy[ws] = 1;
		c->wseq++;
	}
	if (is_msg(st->op))
		c->msgs++;
	c->posted += need;
	outstanding += need;
	c->seq++;
	c->have_step = 0;
	return 1;
}

/* check one completion of the client's CQ */
static void client_wc(const struct ibv_wc *wc, double t)
{
	unsigned int q = wc->wr_id >> 48;
	uint64_t n = wc->wr_id & 0xffffffffffffull;
	struct cqp *c;
	struct pend *p;
	uint8_t *buf;
	char what[160];
	double gap;

	if (q >= C.nqp || wc->qp_num != qps[q]->qp_num) {
		fail("a completion of no request posted: wr_id %#" PRIx64 ", QP number %u, status %s",
		     (uint64_t)wc->wr_id, wc->qp_num, ibv_wc_status_str(wc->status));
		return;
	}
	c = &cl[q];
	if (c->posted == c->done || n != c->done) {
		fail("QP %u: completion of request %" PRIu64 " (status %s) while request %" PRIu64 " is the oldest outstanding (%" PRIu64 " outstanding): out of order, duplicated or unknown",
		     q, n, ibv_wc_status_str(wc->status), c->done, c->posted - c->done);
		c->failed = 1;
		return;
	}
	p = &c->fifo[n % C.depth];
	c->done++;
	outstanding--;
	gap = t - c->t_last;
	if (gap > c->max_gap)
		c->max_gap = gap;
	c->t_last = t;
	if (t - cq_last > cq_max_gap)
		cq_max_gap = t - cq_last;
	cq_last = t;
	if (p->op == OP_READBACK)
		c->wbusy[p->wslot] = 0;
	snprintf(what, sizeof(what), "QP %u operation %" PRIu64 " (%s, %u bytes)",
		 q, p->seq, op_names[p->op], p->len);
	if (wc->status != IBV_WC_SUCCESS) {
		/*
		 * the rest of the QP is flushed: one error for all of it; how
		 * long after the QP's last good completion (for a peer that
		 * is gone: the IBA's (retry_cnt + 1) x 4.096 us x 2^timeout)
		 */
		if (!c->failed)
			fail("%s: status %s (%d), vendor error %#x, %.3f s after the QP's last completion",
			     what, ibv_wc_status_str(wc->status), wc->status,
			     wc->vendor_err, gap);
		c->failed = 1;
		return;
	}
	if ((int)wc->opcode != wc_opcode_of(p->op)) {
		fail("%s: opcode %s (%d), expected %s", what,
		     wc_op_name(wc->opcode), wc->opcode,
		     wc_op_name(wc_opcode_of(p->op)));
		c->failed = 1;
	}
	if (wc->byte_len != p->len) {
		fail("%s: byte_len %u, expected %u", what, wc->byte_len, p->len);
		c->failed = 1;
	}
	wrs_done++;
	bytes_done += p->len;
	op_count[p->op]++;
	op_bytes[p->op] += p->len;
	buf = local_buf(q, n);
	switch (p->op) {
	case OP_READBACK:
		if (check_bytes(buf, msg_key(q, p->seq), 0, p->len, 0, 0, what) ||
		    check_bytes(buf + p->len, msg_key(q, p->seq), p->len, GUARD,
				1, p->len, "read-back guard"))
			c->failed = 1;
		reads_checked += p->len;
		break;
	case OP_READ:
		snprintf(what + strlen(what), sizeof(what) - strlen(what),
			 " from offset %u", p->roff);
		if (check_bytes(buf, hash(q, 0, K_STATIC), p->roff, p->len, 0, 0, what) ||
		    check_bytes(buf + p->len, hash(q, 0, K_STATIC), p->roff + p->len,
				GUARD, 1, p->len, "READ guard"))
			c->failed = 1;
		reads_checked += p->len;
		break;
	case OP_FADD:
	case OP_CSWAP: {
		uint64_t got;

		memcpy(&got, buf, 8);
		if (got != p->expect) {
			fail_data("%s: returned %#" PRIx64 ", the word was %#" PRIx64,
			     what, got, p->expect);
			c->failed = 1;
		} else if (check_bytes(buf + 8, msg_key(q, p->seq), 8, GUARD, 1,
				       8, "atomic result guard")) {
			c->failed = 1;
		}
		atomics_checked++;
		break;
	}
	default:
		break;
	}
}

/* poll the CQ once; the number of completions */
static int client_poll(void)
{
	struct ibv_wc wc[BATCH];
	int n = ibv_poll_cq(cq, BATCH, wc), i;
	double t;

	if (n < 0) {
		fail("ibv_poll_cq: %d", n);
		return 0;
	}
	if (!n)
		return 0;
	t = now_s();
	for (i = 0; i < n; i++)
		client_wc(&wc[i], t);
	return n;
}

/* take the server's messages: credits, an abort, a report */
static int client_messages(int fd, int wait_ms, struct msg *report, char *text)
{
	uint8_t m[sizeof(struct msg) + TEXT];
	struct msg h;
	int got_report = 0;

	rx_pump(fd, wait_ms);
	while (rx_take(m, sizeof(m))) {
		memcpy(&h, m, sizeof(h));
		if (h.type == M_CREDIT && h.qp < C.nqp) {
			if (h.val > cl[h.qp].credit)
				cl[h.qp].credit = h.val;
		} else if (h.type == M_ABORT) {
			if (!server_abort)
				printf("# verify: the server found an error and asks to stop\n");
			server_abort = 1;
		} else if (h.type == M_REPORT && report) {
			*report = h;
			memcpy(text, m + sizeof(h), TEXT);
			text[TEXT - 1] = 0;
			got_report = 1;
			break;
		} else {
			fail("TCP: an unexpected message of type %u", h.type);
		}
	}
	return got_report;
}

/*
 * Checkpoint or end (TYPE): every QP is drained; say what was posted and
 * wait for the server's report. 0 if it found nothing wrong.
 */
static int client_check(int fd, int type, int *server_errors, char *server_text)
{
	size_t len = sizeof(struct msg) + (size_t)C.nqp * sizeof(struct qpcount);
	uint8_t *m = malloc(len);
	struct msg h = { .type = type, .qp = C.nqp };
	struct qpcount *qc = (struct qpcount *)(m + sizeof(h));
	struct msg rep;
	double t0 = now_s();
	unsigned int q;

	if (!m)
		die("malloc");
	h.val = errors;
	memcpy(m, &h, sizeof(h));
	for (q = 0; q < C.nqp; q++) {
		qc[q].seq = cl[q].seq;
		qc[q].msgs = cl[q].msgs;
		qc[q].failed = cl[q].failed;
	}
	if (send_all(fd, m, len)) {
		free(m);
		fail("TCP: sending the %s", type == M_END ? "end" : "checkpoint");
		return -1;
	}
	free(m);
	while (!client_messages(fd, 100, &rep, server_text)) {
		if (rx_eof || now_s() - t0 > C.timeout_s + 30.0) {
			fail("the server did not report (%s)",
			     rx_eof ? "it closed the connection" : "timed out");
			return -1;
		}
	}
	*server_errors = rep.val;
	return rep.val ? -1 : 0;
}

static void client(int fd, uint64_t iters, double duration, double ck_every)
{
	double t0, t_end, t_ck, t_check_total = 0, last_progress;
	int server_errors = 0, draining = 0, checks = 0, stopping = 0;
	char server_text[TEXT] = "";
	uint64_t loops = 0, posted;
	unsigned int q;
	int idle = 0, i;

	cl = calloc(C.nqp, sizeof(*cl));
	if (!cl)
		die("calloc");
	for (q = 0; q < C.nqp; q++) {
		cl[q].fifo = calloc(C.depth, sizeof(struct pend));
		cl[q].wbusy = calloc(C.nwslot, 1);
		if (!cl[q].fifo || !cl[q].wbusy)
			die("calloc");
		cl[q].model = hash(q, 0, K_AINIT);
		cl[q].credit = has_msgs() ? C.nrecv : 0;
	}
	t0 = t_ck = last_progress = now_s();
	for (;;) {
		double t = 0;
		int n;

		posted = 0;
		if (!stopping && !draining) {
			for (q = 0; q < C.nqp; q++) {
				if (cl[q].failed || (iters && cl[q].seq >= iters))
					continue;
				for (i = 0; i < 4 && (!iters || cl[q].seq < iters) &&
				     post_next(q, &t); i++)
					posted++;
			}
		}
		n = client_poll();
		loops++;
		/* the server's credits: often when a QP waits for them */
		if ((loops & 63) == 0 || (!n && !posted))
			client_messages(fd, 0, NULL, NULL);
		if (n || posted) {
			idle = 0;
			last_progress = t ? t : now_s();
		} else if (++idle > 256) {
			double tn = now_s();

			idle = 0;
			if (outstanding && tn - last_progress > C.timeout_s) {
				for (q = 0; q < C.nqp; q++)
					if (cl[q].posted != cl[q].done)
						break;
				fail("QP %u: no completion for request %" PRIu64 " for %u s (%" PRIu64 " outstanding in all)",
				     q, cl[q].done, C.timeout_s, outstanding);
				break;
			}
			if (!outstanding && !stopping &&
			    tn - last_progress > C.timeout_s) {
				fail("no credit from the server for %u s: no receive posted again",
				     C.timeout_s);
				break;
			}
			sched_yield();
		}
		if (!stopping) {
			int all_done = 1;

			for (q = 0; q < C.nqp && all_done; q++)
				if (!cl[q].failed && (!iters || cl[q].seq < iters))
					all_done = 0;
			if (all_done || stop_signal || errors || rx_eof || server_abort ||
			    (duration > 0 && (loops & 255) == 0 &&
			     now_s() - t0 - t_check_total > duration))
				stopping = 1;
		}
		if (stopping && !outstanding)
			break;
		if (!draining && !stopping && ck_every > 0 && (loops & 255) == 0 &&
		    now_s() - t_ck > ck_every)
			draining = 1;
		if (draining && !outstanding) {
			double tc = now_s();

			checks++;
			if (client_check(fd, M_CHECK, &server_errors, server_text))
				stopping = 1;
			draining = 0;
			t_ck = now_s();
			t_check_total += t_ck - tc;
			last_progress = t_ck;
		}
	}
	t_end = now_s();
	/* nothing more may come */
	usleep(200000);
	client_poll();
	checks++;
	if (!rx_eof) {
		int e = 0;

		client_check(fd, M_END, &e, server_text);
		if (e)
			server_errors = e;
	}
	{
		double secs = t_end - t0 - t_check_total;
		double mbs = secs > 0 ? bytes_done / secs / 1e6 : 0;
		double max_gap = 0;
		uint64_t wrs_posted = 0;

		for (q = 0; q < C.nqp; q++) {
			if (cl[q].max_gap > max_gap)
				max_gap = cl[q].max_gap;
			wrs_posted += cl[q].posted;
		}
		for (i = 0; i < N_OPS; i++)
			if (op_count[i])
				printf("# verify: %-26s %10" PRIu64 " completed, %14" PRIu64 " bytes\n",
				       op_names[i], op_count[i], op_bytes[i]);
		printf("# verify: %.1f s running, %.1f MB/s; %d checks of the server's memory (the last at the end), %.1f s in checkpoints; longest wait for a completion: %.1f ms on one QP, %.1f ms on the CQ%s\n",
		       secs, mbs, checks, t_check_total, max_gap * 1e3,
		       cq_max_gap * 1e3, stop_signal ? "; stopped by a signal" : "");
		result(!errs[0] && wrs_done == wrs_posted,
		       "client: every work request completed once, in order, with IBV_WC_SUCCESS, its opcode and byte_len",
		       "%" PRIu64 " of %" PRIu64 " completed right; %s", wrs_done,
		       wrs_posted, first_of[0]);
		result(!errs[1],
		       "client: every byte READ and read back is as expected, every atomic returned the modelled value",
		       "%d errors; %s", errs[1], first_of[1]);
		result(!server_errors && !rx_eof,
		       "client: the server's checks passed",
		       "%d errors; %s", server_errors, server_text);
		if (errors || server_errors || rx_eof || wrs_done != wrs_posted)
			printf("verify: FAILED errors=%d server_errors=%d ops=%" PRIu64 " first: %s\n",
			       errors, server_errors, wrs_done,
			       errors ? first_error : server_text);
		else
			printf("verify: all ok ops=%" PRIu64 " bytes=%" PRIu64 " MB/s=%.1f max_gap_ms=%.1f cq_gap_ms=%.1f seconds=%.1f qps=%u checkpoints=%d\n",
			       wrs_done, bytes_done, mbs, max_gap * 1e3,
			       cq_max_gap * 1e3, secs, C.nqp, checks);
		if (server_errors && !errors)
			errors = server_errors;
		if (rx_eof && !errors)
			errors = 1;
		if (wrs_done != wrs_posted && !errors)
			errors = 1;
	}
}

/* --- the server ---------------------------------------------------------------------------- */

/* a write slot's bytes: the last writes into it, newest (shortest) on top */
struct wimg {
	uint64_t *seq;
	uint32_t *len;
	int n, cap;
};

struct sqp {
	uint64_t cursor;	/* the schedule, replayed up to here */
	uint64_t msgs;		/* messages received (receives completed) */
	uint64_t posted;	/* receives posted */
	uint64_t post_cursor;	/* the schedule, looked ahead for receives */
	uint64_t wseq;
	uint64_t model;
	struct wimg *w;		/* NWSLOT */
	struct step *next;	/* NRECV: the message each receive waits for */
	int credit_dirty, failed;
};

static struct sqp *sv;
static uint64_t recv_bytes, recvs_done, bytes_checked;

static uint8_t *srv_qp(unsigned int q)
{
	return mem + (size_t)q * L.qp_stride;
}

static uint8_t *recv_buf(unsigned int q, uint64_t m)
{
	return mem + L.recv_off + ((size_t)q * C.nrecv + m % C.nrecv) * L.slot;
}

static uint8_t *wi_slot(unsigned int q, uint64_t m)
{
	return srv_qp(q) + L.off_wi + (size_t)(m % C.nrecv) * L.slot;
}

static void wimg_push(struct wimg *w, uint64_t seq, uint32_t len)
{
	while (w->n && w->len[w->n - 1] <= len)
		w->n--;
	if (w->n == w->cap) {
		w->cap = w->cap ? 2 * w->cap : 8;
		w->seq = realloc(w->seq, w->cap * sizeof(*w->seq));
		w->len = realloc(w->len, w->cap * sizeof(*w->len));
		if (!w->seq || !w->len)
			die("realloc");
	}
	w->seq[w->n] = seq;
	w->len[w->n] = len;
	w->n++;
}

/* replay the schedule of QP Q up to (not including) operation UPTO */
static void replay(unsigned int q, uint64_t upto, int stop_at_msg)
{
	struct sqp *s = &sv[q];
	struct step st;
	uint64_t a, b;

	while (s->cursor < upto) {
		schedule(q, s->cursor, &st);
		if (is_msg(st.op) && stop_at_msg)
			return;
		if (st.op == OP_WRITE) {
			wimg_push(&s->w[s->wseq % C.nwslot], st.seq, st.len);
			s->wseq++;
		} else if (st.op == OP_FADD || st.op == OP_CSWAP) {
			atomic_step(&s->model, q, &st, &a, &b);
		}
		s->cursor++;
	}
}

/* the next message of the schedule of QP Q at or after *CUR */
static void next_msg(unsigned int q, uint64_t *cur, struct step *st)
{
	do
		schedule(q, (*cur)++, st);
	while (!is_msg(st->op));
}

/* post receive number M of QP Q, its buffer (or slot) made ready first */
static void post_recv(unsigned int q)
{
	struct sqp *s = &sv[q];
	uint64_t m = s->posted;
	struct step *st = &s->next[m % C.nrecv];
	struct ibv_sge sge = {
		.addr = (uintptr_t)recv_buf(q, m), .length = C.maxlen,
		.lkey = mr->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = WRID(q, m), .sg_list = &sge, .num_sge = 1,
	}, *bad;
	int err;

	next_msg(q, &s->post_cursor, st);
	if (st->op == OP_WRITEIMM)
		gen(wi_slot(q, m), msg_key(q, st->seq), 0, st->len + GUARD, 1);
	else
		gen(recv_buf(q, m), msg_key(q, st->seq), 0, st->len + GUARD, 1);
	err = ibv_post_recv(qps[q], &wr, &bad);
	if (err) {
		fail("QP %u: ibv_post_recv of receive %" PRIu64 ": %s", q, m,
		     strerror(err));
		s->failed = 1;
		return;
	}
	s->posted++;
	s->credit_dirty = 1;
}

static void server_wc(const struct ibv_wc *wc)
{
	unsigned int q = wc->wr_id >> 48;
	uint64_t m = wc->wr_id & 0xffffffffffffull;
	struct sqp *s;
	struct step st;
	char what[160];
	int want_op, ok = 1;
	uint8_t *buf;

	if (q >= C.nqp || wc->qp_num != qps[q]->qp_num) {
		fail("a completion of no receive posted: wr_id %#" PRIx64 ", QP number %u, status %s",
		     (uint64_t)wc->wr_id, wc->qp_num, ibv_wc_status_str(wc->status));
		return;
	}
	s = &sv[q];
	if (m != s->msgs || s->msgs == s->posted) {
		fail("QP %u: completion of receive %" PRIu64 " (status %s) while receive %" PRIu64 " is the oldest posted (%" PRIu64 " posted): out of order, duplicated or unknown",
		     q, m, ibv_wc_status_str(wc->status), s->msgs, s->posted - s->msgs);
		s->failed = 1;
		return;
	}
	st = s->next[m % C.nrecv];
	s->msgs++;
	/* the operations before this message: writes and atomics modelled */
	replay(q, st.seq, 1);
	if (s->cursor != st.seq) {
		fail("QP %u: the schedule replay is at %" PRIu64 ", the message is %" PRIu64,
		     q, s->cursor, st.seq);
		s->failed = 1;
		return;
	}
	s->cursor++;
	snprintf(what, sizeof(what), "QP %u operation %" PRIu64 " (%s, %u bytes, receive %" PRIu64 ")",
		 q, st.seq, op_names[st.op], st.len, m);
	if (wc->status != IBV_WC_SUCCESS) {
		if (!s->failed)
			fail("%s: status %s (%d), vendor error %#x", what,
			     ibv_wc_status_str(wc->status), wc->status, wc->vendor_err);
		s->failed = 1;
		return;
	}
	want_op = st.op == OP_WRITEIMM ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
	if ((int)wc->opcode != want_op) {
		fail("%s: opcode %s (%d), expected %s", what, wc_op_name(wc->opcode),
		     wc->opcode, wc_op_name(want_op));
		ok = 0;
	}
	if (wc->byte_len != st.len) {
		fail("%s: byte_len %u, expected %u", what, wc->byte_len, st.len);
		ok = 0;
	}
	if (st.op == OP_SEND) {
		if (wc->wc_flags & IBV_WC_WITH_IMM) {
			fail("%s: IBV_WC_WITH_IMM set (immediate %#x) on a SEND without one",
			     what, ntohl(wc->imm_data));
			ok = 0;
		}
	} else if (!(wc->wc_flags & IBV_WC_WITH_IMM)) {
		fail("%s: no IBV_WC_WITH_IMM", what);
		ok = 0;
	} else if (ntohl(wc->imm_data) != st.imm) {
		fail("%s: immediate %#x, expected %#x", what, ntohl(wc->imm_data),
		     st.imm);
		ok = 0;
	}
	buf = st.op == OP_WRITEIMM ? wi_slot(q, m) : recv_buf(q, m);
	if (check_bytes(buf, msg_key(q, st.seq), 0, st.len, 0, 0, what) ||
	    check_bytes(buf + st.len, msg_key(q, st.seq), st.len, GUARD, 1,
			st.len, st.op == OP_WRITEIMM ?
			"the guard after a RDMA WRITE with immediate" :
			"the guard after a receive buffer's message"))
		ok = 0;
	recvs_done++;
	recv_bytes += st.len;
	bytes_checked += st.len;
	if (!ok) {
		s->failed = 1;
		return;
	}
	post_recv(q);
}

static int server_poll(void)
{
	struct ibv_wc wc[BATCH];
	int n = ibv_poll_cq(cq, BATCH, wc), i;

	if (n < 0) {
		fail("ibv_poll_cq: %d", n);
		return 0;
	}
	for (i = 0; i < n; i++)
		server_wc(&wc[i]);
	return n;
}

static void send_credits(int fd)
{
	struct msg m[64];
	unsigned int q, k = 0;

	for (q = 0; q < C.nqp; q++) {
		if (!sv[q].credit_dirty)
			continue;
		sv[q].credit_dirty = 0;
		m[k].type = M_CREDIT;
		m[k].qp = q;
		m[k].val = sv[q].posted;
		if (++k == 64) {
			if (send_all(fd, m, sizeof(m)))
				rx_eof = 1;
			k = 0;
		}
	}
	if (k && send_all(fd, m, k * sizeof(m[0])))
		rx_eof = 1;
}

/* the server's memory, every byte, against the replayed schedule */
static void server_memory_check(void)
{
	unsigned int q, k;
	int i;

	for (q = 0; q < C.nqp; q++) {
		uint8_t *base = srv_qp(q);
		char what[160];
		uint64_t word;

		snprintf(what, sizeof(what), "QP %u: the READ source (nothing writes it)", q);
		check_bytes(base, hash(q, 0, K_STATIC), 0, L.s_len, 0, 0, what);
		bytes_checked += L.s_len;
		for (k = 0; k < C.nwslot; k++) {
			struct wimg *w = &sv[q].w[k];
			uint8_t *slot = base + L.off_w + (size_t)k * L.slot;
			uint32_t from = 0;

			for (i = w->n - 1; i >= 0; i--) {
				snprintf(what, sizeof(what),
					 "QP %u write slot %u: RDMA WRITE of operation %" PRIu64 " (%u bytes)",
					 q, k, w->seq[i], w->len[i]);
				check_bytes(slot + from, msg_key(q, w->seq[i]), from,
					    w->len[i] - from, 0, from, what);
				from = w->len[i];
			}
			snprintf(what, sizeof(what),
				 "QP %u write slot %u: bytes no write reached", q, k);
			check_bytes(slot + from, hash(q, k, K_WINIT), from,
				    L.slot - from, 0, from, what);
			bytes_checked += L.slot;
		}
		memcpy(&word, base + L.off_atom, 8);
		if (word != sv[q].model)
			fail_data("QP %u: the atomic word is %#" PRIx64 ", the replayed atomics make it %#" PRIx64,
			     q, word, sv[q].model);
		snprintf(what, sizeof(what), "QP %u: the bytes after the atomic word", q);
		check_bytes(base + L.off_atom + 8, hash(q, 0, K_AINIT), 8,
			    ATOM_AREA - 8, 0, 8, what);
	}
}

/* a checkpoint or the end: the receives the client counted, then memory */
static void server_check(int fd, const uint8_t *m)
{
	const struct qpcount *qc = (const struct qpcount *)(m + sizeof(struct msg));
	struct msg rep = { .type = M_REPORT }, h;
	char text[TEXT] = "";
	double t0 = now_s(), limit;
	unsigned int q;
	int waiting;

	/* a client that failed may have messages that never came */
	memcpy(&h, m, sizeof(h));
	limit = h.val ? 5 : C.timeout_s;
	do {
		waiting = 0;
		for (q = 0; q < C.nqp; q++)
			if (!sv[q].failed && !qc[q].failed &&
			    sv[q].msgs < qc[q].msgs)
				waiting = 1;
		if (!waiting)
			break;
		if (!server_poll())
			sched_yield();
		send_credits(fd);
	} while (now_s() - t0 < limit);
	for (q = 0; q < C.nqp; q++) {
		if (qc[q].failed || sv[q].failed)
			continue;
		if (sv[q].msgs != qc[q].msgs) {
			fail("QP %u: %" PRIu64 " receives completed, the client sent %" PRIu64 " messages (%s)",
			     q, sv[q].msgs, qc[q].msgs,
			     waiting ? "timed out waiting" : "too many");
			sv[q].failed = 1;
			continue;
		}
		/* every message before it was received: no message left */
		replay(q, qc[q].seq, 1);
		if (sv[q].cursor != qc[q].seq) {
			fail("QP %u: the schedule replay stopped at %" PRIu64 " of %" PRIu64,
			     q, sv[q].cursor, qc[q].seq);
			sv[q].failed = 1;
		}
	}
	if (!errors && !h.val)
		server_memory_check();
	rep.val = errors;
	if (errors)
		snprintf(text, sizeof(text), "%s", first_error);
	if (send_all(fd, &rep, sizeof(rep)) || send_all(fd, text, TEXT))
		rx_eof = 1;
}

static void server(int fd)
{
	uint8_t m[sizeof(struct msg) + MAX_QP * sizeof(struct qpcount)];
	unsigned int q, k;
	int idle = 0, ended = 0, checks = 0, aborted = 0;
	struct msg h;

	sv = calloc(C.nqp, sizeof(*sv));
	if (!sv)
		die("calloc");
	for (q = 0; q < C.nqp; q++) {
		uint8_t *base = srv_qp(q);
		uint64_t word = hash(q, 0, K_AINIT);

		sv[q].w = calloc(C.nwslot, sizeof(struct wimg));
		sv[q].next = calloc(C.nrecv, sizeof(struct step));
		if (!sv[q].w || !sv[q].next)
			die("calloc");
		sv[q].model = word;
		gen(base, hash(q, 0, K_STATIC), 0, L.s_len, 0);
		for (k = 0; k < C.nwslot; k++)
			gen(base + L.off_w + (size_t)k * L.slot, hash(q, k, K_WINIT),
			    0, L.slot, 0);
		gen(base + L.off_atom, hash(q, 0, K_AINIT), 0, ATOM_AREA, 0);
		memcpy(base + L.off_atom, &word, 8);
		if (has_msgs())
			for (k = 0; k < C.nrecv; k++)
				post_recv(q);
		sv[q].credit_dirty = 0;
	}
	/* both sides ready: the client may start */
	memset(&h, 0, sizeof(h));
	h.type = M_CREDIT;
	if (send_all(fd, &h, sizeof(h)))
		die("start over TCP");
	while (!ended && !rx_eof) {
		int n = server_poll();

		if (n)
			send_credits(fd);
		if (errors && !aborted) {
			h.type = M_ABORT;
			h.qp = 0;
			h.val = errors;
			if (send_all(fd, &h, sizeof(h)))
				rx_eof = 1;
			aborted = 1;
		}
		if (n) {
			idle = 0;
			rx_pump(fd, 0);
		} else if (++idle > 64) {
			/* nothing on the CQ: sleep in poll() on the socket */
			rx_pump(fd, 1);
			idle = 0;
		}
		while (rx_take(m, sizeof(m))) {
			memcpy(&h, m, sizeof(h));
			if (h.type == M_CHECK || h.type == M_END) {
				if (h.qp != C.nqp) {
					fail("TCP: a checkpoint for %u QPs", h.qp);
					rx_eof = 1;
					break;
				}
				checks++;
				server_check(fd, m);
				if (h.type == M_END) {
					ended = 1;
					break;
				}
			} else {
				fail("TCP: an unexpected message of type %u", h.type);
			}
		}
		if (stop_signal && !ended) {
			fail("stopped by a signal before the client ended the run");
			break;
		}
	}
	if (!ended && rx_eof)
		fail("the client closed the connection before the end");
	/* nothing more may come */
	usleep(200000);
	server_poll();
	result(!errs[0],
	       "server: every receive completed once, in order, with IBV_WC_SUCCESS, its opcode, byte_len and immediate",
	       "%d errors; %s", errs[0], first_of[0]);
	result(!errs[1],
	       "server: every byte received, every byte of its memory as the schedule makes it (write slots, READ source, atomic words)",
	       "%d errors; %s", errs[1], first_of[1]);
	printf("# verify: server: %" PRIu64 " receives, %" PRIu64 " bytes received, %" PRIu64 " bytes compared, %d checkpoints\n",
	       recvs_done, recv_bytes, bytes_checked, checks);
	if (errors)
		printf("verify: FAILED errors=%d role=server first: %s\n", errors,
		       first_error);
	else
		printf("verify: all ok ops=%" PRIu64 " bytes=%" PRIu64 " role=server checkpoints=%d\n",
		       recvs_done, recv_bytes, checks);
}

/* --- options --------------------------------------------------------------------------------- */

static int parse_sizes(const char *arg)
{
	char *copy = strdup(arg), *tok, *save = NULL, *end;

	C.nsizes = 0;
	C.maxlen = 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int rnd = 0;
		unsigned long long v;

		if (*tok == 'r') {
			rnd = 1;
			tok++;
		}
		v = strtoull(tok, &end, 0);
		if (*end == 'k' || *end == 'K')
			v <<= 10, end++;
		else if (*end == 'm' || *end == 'M')
			v <<= 20, end++;
		if (*end || !v || v > MAX_LEN || C.nsizes == MAX_SIZES) {
			free(copy);
			return -1;
		}
		C.sizes[C.nsizes++] = v | (rnd ? RANDOM_SIZE : 0);
		if (v > C.maxlen)
			C.maxlen = v;
	}
	free(copy);
	return C.nsizes ? 0 : -1;
}

static int parse_ops(const char *arg)
{
	char *copy = strdup(arg), *tok, *save = NULL;
	int u;

	C.ops = 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (u = 0; u < N_UOPS; u++)
			if (!strcmp(tok, uop_names[u]))
				break;
		if (u == N_UOPS) {
			free(copy);
			return -1;
		}
		C.ops |= 1u << u;
	}
	free(copy);
	return C.ops ? 0 : -1;
}

/* the selected operations in their order; 0 if the configuration is bad */
static int cfg_ok(void)
{
	unsigned int i;
	int u;

	nsel = 0;
	for (u = 0; u < N_UOPS; u++)
		if (C.ops & (1u << u))
			sel[nsel++] = u;
	if (C.magic != MAGIC || C.version != VERSION || !nsel ||
	    C.ops >> N_UOPS || !C.nqp || C.nqp > MAX_QP || C.depth < 2 ||
	    C.depth > MAX_DEPTH || !C.nrecv || C.nrecv > MAX_DEPTH ||
	    !C.nwslot || C.nwslot > MAX_DEPTH || !C.nsizes ||
	    C.nsizes > MAX_SIZES || C.maxlen < 8 || C.maxlen > MAX_LEN ||
	    !C.timeout_s)
		return 0;
	for (i = 0; i < C.nsizes; i++)
		if (!(C.sizes[i] & ~RANDOM_SIZE) ||
		    (C.sizes[i] & ~RANDOM_SIZE) > C.maxlen)
			return 0;
	return 1;
}

static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s -d DEV -g GIDX -p PORT                     (server)\n"
		"       %s -d DEV -g GIDX -p PORT [-q QPS] [-D DEPTH] [-S SIZES] [-o OPS]\n"
		"          [-n ITERS | -t SECONDS] [-s SEED] [-c SECONDS] [-m MIB] [-T SECONDS]\n"
		"          [-A TIMEOUT] [-R RETRY] SERVER\n"
		"  OPS: write,read,send,sendimm,writeimm,atomic; SIZES: N[k|m] or rN, comma separated\n",
		argv0, argv0);
	exit(2);
}

static void on_signal(int sig)
{
	(void)sig;
	stop_signal = 1;
}

int main(int argc, char **argv)
{
	const char *devname = NULL, *port = "18950", *srv_ip = NULL;
	uint64_t iters = 0;
	double duration = -1, ck_every = 5;
	size_t budget = 256u << 20;
	struct hello me = { 0 }, peer;
	struct qpinfo *mine, *theirs;
	struct sigaction sa = { .sa_handler = on_signal };
	int opt, fd, access;
	char ok = 1;

	C.magic = MAGIC;
	C.version = VERSION;
	C.nqp = 8;
	C.depth = 16;
	C.seed = 1;
	C.timeout_s = 60;
	parse_sizes("1,8,1000,4096,65536,1m,r70000");
	C.ops = (1u << N_UOPS) - 1;
	while ((opt = getopt(argc, argv, "d:g:p:q:D:S:o:n:t:s:c:m:T:A:R:")) != -1) {
		switch (opt) {
		case 'd':
			devname = optarg;
			break;
		case 'g':
			gidx = atoi(optarg);
			break;
		case 'p':
			port = optarg;
			break;
		case 'q':
			C.nqp = strtoul(optarg, NULL, 0);
			break;
		case 'D':
			C.depth = strtoul(optarg, NULL, 0);
			break;
		case 'S':
			if (parse_sizes(optarg))
				usage(argv[0]);
			break;
		case 'o':
			if (parse_ops(optarg))
				usage(argv[0]);
			break;
		case 'n':
			iters = strtoull(optarg, NULL, 0);
			break;
		case 't':
			duration = atof(optarg);
			break;
		case 's':
			C.seed = strtoull(optarg, NULL, 0);
			break;
		case 'c':
			ck_every = atof(optarg);
			break;
		case 'm':
			budget = (size_t)strtoul(optarg, NULL, 0) << 20;
			break;
		case 'T':
			C.timeout_s = strtoul(optarg, NULL, 0);
			break;
		case 'A':
			ack_timeout = strtoul(optarg, NULL, 0);
			if (ack_timeout > 31)
				usage(argv[0]);
			break;
		case 'R':
			retry_cnt = strtoul(optarg, NULL, 0);
			if (retry_cnt > 7)
				usage(argv[0]);
			break;
		default:
			usage(argv[0]);
		}
	}
	if (optind < argc)
		srv_ip = argv[optind];
	if (optind + 1 < argc)
		usage(argv[0]);
	if (!iters && duration < 0)
		iters = 100;
	if (C.maxlen < 8)
		C.maxlen = 8;	/* atomics need 8 bytes of buffer */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);

	if (srv_ip) {
		/* the client decides: as deep as asked, within the budget */
		C.nrecv = C.depth;
		C.nwslot = C.depth < 4 ? C.depth : 4;
		for (;;) {
			make_layout();
			if (L.client_total <= budget && L.server_total <= budget)
				break;
			if (C.depth > 2)
				C.depth--;
			else if (C.nrecv > 1)
				C.nrecv--;
			else if (C.nwslot > 1)
				C.nwslot--;
			else
				break;
			if (C.nrecv > C.depth)
				C.nrecv = C.depth;
		}
		if (!cfg_ok() || L.client_total > budget || L.server_total > budget) {
			fprintf(stderr, "%s: the workload does not fit (QPs %u, longest message %u, budget %zu MiB)\n",
				argv[0], C.nqp, C.maxlen, budget >> 20);
			usage(argv[0]);
		}
	}
	open_device(devname, &me);
	if (srv_ip) {
		fd = tcp_connect(srv_ip, port);
		if (fd < 0 || send_all(fd, &C, sizeof(C)))
			die("connect to the server");
	} else {
		fd = tcp_accept(port);
		if (fd < 0 || recv_all(fd, &C, sizeof(C)))
			die("accept the client");
		if (!cfg_ok()) {
			errno = EINVAL;
			die("the client's workload");
		}
		make_layout();
	}
	{
		int one = 1;

		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	scratch = malloc(L.slot);
	mine = calloc(C.nqp, sizeof(*mine));
	theirs = calloc(C.nqp, sizeof(*theirs));
	if (!scratch || !mine || !theirs)
		die("malloc");
	{
		char ops[64] = "", sizes[200] = "";
		unsigned int i;
		int u;

		for (u = 0; u < N_UOPS; u++)
			if (C.ops & (1u << u))
				snprintf(ops + strlen(ops), sizeof(ops) - strlen(ops),
					 "%s%s", *ops ? "," : "", uop_names[u]);
		for (i = 0; i < C.nsizes; i++)
			snprintf(sizes + strlen(sizes), sizeof(sizes) - strlen(sizes),
				 "%s%s%u", i ? "," : "",
				 (C.sizes[i] & RANDOM_SIZE) ? "r" : "",
				 C.sizes[i] & ~RANDOM_SIZE);
		printf("# verify: %s on %s: %u QPs, depth %u, %u receives and %u write slots per QP, ops %s, sizes %s, seed %" PRIu64 ", %.1f MiB of buffers\n",
		       srv_ip ? "client" : "server", ibv_get_device_name(ctx->device),
		       C.nqp, C.depth, C.nrecv, C.nwslot, ops, sizes, C.seed,
		       (srv_ip ? L.client_total : L.server_total) / 1048576.0);
	}
	if (posix_memalign((void **)&mem, 4096, srv_ip ? L.client_total : L.server_total))
		die("allocate the buffers");
	memset(mem, 0, srv_ip ? L.client_total : L.server_total);
	access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	mr = ibv_reg_mr(pd, mem, srv_ip ? L.client_total : L.server_total,
			srv_ip ? IBV_ACCESS_LOCAL_WRITE : access);
	if (!mr)
		die("ibv_reg_mr");
	if (srv_ip)
		make_qps(C.nqp * C.depth, C.depth, 1, mine);
	else
		make_qps(C.nqp * C.nrecv, 1, C.nrecv, mine);
	me.base = (uintptr_t)mem;
	me.rkey = mr->rkey;
	if (send_all(fd, &me, sizeof(me)) ||
	    send_all(fd, mine, C.nqp * sizeof(*mine)) ||
	    recv_all(fd, &peer, sizeof(peer)) ||
	    recv_all(fd, theirs, C.nqp * sizeof(*theirs)))
		die("exchange over TCP");
	connect_qps(mine, theirs, &me, &peer, srv_ip ? 0 : access);
	/* both are at RTS before anything is posted */
	if (send_all(fd, &ok, 1) || recv_all(fd, &ok, 1))
		die("sync over TCP");
	if (srv_ip) {
		struct msg start;

		srv = peer;
		/* the server has posted its receives */
		if (recv_all(fd, &start, sizeof(start)) || start.type != M_CREDIT)
			die("the server's start");
		client(fd, iters, duration, ck_every);
	} else {
		server(fd);
	}
	close(fd);
	return errors ? 1 : 0;
}
