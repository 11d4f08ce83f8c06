/*
 * wirelimit: how fast can two processes on this host move datagrams the way
 * QEMU's -netdev dgram does?  The upper bound any device behind that netdev
 * can reach between two QEMUs, measured by scripts/bench.
 *
 *   wirelimit [-t udp|unix] [-s BYTES] [-d SECONDS] [-b N] [-r BYTES]
 *
 * A sender process and a receiver process (fork), each with its own
 * datagram socket, as QEMU's net/dgram.c sets them up:
 *   udp   AF_INET SOCK_DGRAM bound to 127.0.0.1 (what scripts/launch wires
 *         between two guests), default buffer sizes;
 *   unix  AF_UNIX SOCK_DGRAM bound to a path (local.type=unix).
 * Both sockets non-blocking and unconnected; the sender calls sendto() per
 * frame and, on EAGAIN, waits for POLLOUT and tries again (QEMU's
 * net_dgram_receive returns 0 and resumes when the socket is writable);
 * the receiver polls and calls recv() per frame into a 4096+65536-byte
 * buffer (NET_BUFSIZE), as net_dgram_send does from the main loop.
 *
 * -b N (batched mode, as the dgram netdev with rx-batch=N,tx-batch=N of
 * scripts/qemu/0005-net-dgram-batch.patch): the sender sends N frames per
 * sendmmsg() and the receiver reads up to N per recvmmsg() each time the
 * socket is readable. -r BYTES: SO_RCVBUF of the receiver and SO_SNDBUF of
 * the sender (rcvbuf=, sndbuf=).
 *
 * The sender sends for SECONDS; frames carry a sequence number. Output, one
 * line:
 *   wirelimit type=udp size=4200 seconds=2.000 sent=N received=N lost=N
 *     lost_pct=P sent_MBps=X MBps=Y eagain=N batch=N bufsize=N
 * MBps is megabytes (10^6) of datagram payload received per second.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#define NET_BUFSIZE (4096 + 65536)
#define BATCH_MAX 64

struct result {
	uint64_t count;
	uint64_t bytes;
	uint64_t eagain;
	double seconds;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		die("fcntl");
}

union addr {
	struct sockaddr sa;
	struct sockaddr_in in;
	struct sockaddr_un un;
};

/* a bound, non-blocking datagram socket; *a gets its address */
static int make_socket(int unix_type, const char *path, union addr *a,
		       socklen_t *len)
{
	int fd;

	memset(a, 0, sizeof(*a));
	if (unix_type) {
		fd = socket(AF_UNIX, SOCK_DGRAM, 0);
		if (fd < 0)
			die("socket");
		a->un.sun_family = AF_UNIX;
		snprintf(a->un.sun_path, sizeof(a->un.sun_path), "%s", path);
		unlink(path);
		*len = sizeof(a->un);
	} else {
		int one = 1;

		fd = socket(AF_INET, SOCK_DGRAM, 0);
		if (fd < 0)
			die("socket");
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		a->in.sin_family = AF_INET;
		a->in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		a->in.sin_port = 0;
		*len = sizeof(a->in);
	}
	if (bind(fd, &a->sa, *len) < 0)
		die("bind");
	if (getsockname(fd, &a->sa, len) < 0)
		die("getsockname");
	nonblock(fd);
	return fd;
}

/* A send failed: EINTR or a full socket (then wait for room) are counted
 * and tried again; anything else ends the run */
static void send_failed(const char *what, struct result *s, struct pollfd *p)
{
	if (errno == EINTR)
		return;
	if (errno == EAGAIN || errno == ENOBUFS) {
		s->eagain++;
		poll(p, 1, 100);
		return;
	}
	die(what);
}

/* -r: both buffers of a socket */
static void set_bufs(int fd, int bytes)
{
	if (bytes > 0 &&
	    (setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes)) < 0 ||
	     setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes)) < 0))
		die("setsockopt");
}

/* -b: up to @batch datagrams with one recvmmsg(); how many */
static int recv_batch(int fd, char *bufs, unsigned int batch,
		      struct mmsghdr *msgs, struct iovec *iov)
{
	unsigned int i;

	for (i = 0; i < batch; i++) {
		iov[i].iov_base = bufs + (size_t)i * NET_BUFSIZE;
		iov[i].iov_len = NET_BUFSIZE;
		memset(&msgs[i].msg_hdr, 0, sizeof(msgs[i].msg_hdr));
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	return recvmmsg(fd, msgs, batch, MSG_DONTWAIT, NULL);
}

/* receiver: count frames until the sender's end marker (or 1 s of
 * silence); writes a struct result to the pipe */
static void receiver(int fd, int out, double seconds, unsigned int batch)
{
	static char buf[NET_BUFSIZE];
	static char bufs[BATCH_MAX * NET_BUFSIZE];
	static struct mmsghdr msgs[BATCH_MAX];
	static struct iovec iov[BATCH_MAX];
	struct result r = { 0 };
	struct pollfd p = { .fd = fd, .events = POLLIN };
	double t0 = 0, tlast = 0, deadline = now() + seconds + 30;

	for (;;) {
		int n = poll(&p, 1, 200);

		if (n < 0 && errno != EINTR)
			die("poll");
		if (now() > deadline)
			break;
		/* the end marker may be lost too (UDP): 1 s of silence ends it */
		if (r.count && now() - tlast > 1.0)
			break;
		if (n <= 0)
			continue;
		if (batch > 1) {
			int got = recv_batch(fd, bufs, batch, msgs, iov);

			if (got < 0 && errno != EAGAIN && errno != EINTR)
				die("recvmmsg");
			for (int i = 0; i < got; i++) {
				if (msgs[i].msg_len == 8 &&
				    !memcmp(iov[i].iov_base, "THE-END!", 8))
					goto done;
				if (!r.count)
					t0 = now();
				tlast = now();
				r.count++;
				r.bytes += msgs[i].msg_len;
			}
			continue;
		}
		for (;;) {
			ssize_t got = recv(fd, buf, sizeof(buf), 0);

			if (got < 0) {
				if (errno == EINTR)
					continue;
				if (errno != EAGAIN)
					die("recv");
				break;
			}
			if (got == 8 && memcmp(buf, "THE-END!", 8) == 0)
				goto done;
			if (!r.count)
				t0 = now();
			tlast = now();
			r.count++;
			r.bytes += got;
			/* QEMU goes back to its main loop after each frame */
			break;
		}
	}
done:
	r.seconds = tlast - t0;
	if (write(out, &r, sizeof(r)) != sizeof(r))
		die("write");
	exit(0);
}

int main(int argc, char **argv)
{
	const char *type = "udp";
	size_t size = 4200;
	double seconds = 2;
	int opt, unix_type, bufsize = 0;
	unsigned int batch = 1;
	static struct mmsghdr smsgs[BATCH_MAX];
	static struct iovec siov[BATCH_MAX];
	char *frames;
	char dir[] = "/tmp/wirelimit-XXXXXX", rpath[128], spath[128];
	union addr ra, sa;
	socklen_t rlen, slen;
	int rfd, sfd, pfd[2];
	pid_t pid;
	char *frame;
	struct result s = { 0 }, r;
	struct pollfd p;
	double t0, t1;
	int st;

	while ((opt = getopt(argc, argv, "t:s:d:b:r:h")) != -1) {
		switch (opt) {
		case 't': type = optarg; break;
		case 's': size = strtoul(optarg, NULL, 0); break;
		case 'd': seconds = strtod(optarg, NULL); break;
		case 'b': batch = strtoul(optarg, NULL, 0); break;
		case 'r': bufsize = strtol(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: wirelimit [-t udp|unix] [-s BYTES] [-d SECONDS] [-b N] [-r BYTES]\n");
			return 2;
		}
	}
	if (optind < argc || batch < 1 || batch > BATCH_MAX || bufsize < 0) {
		fprintf(stderr, "wirelimit: -b 1..%d, -r >= 0, no other arguments\n",
			BATCH_MAX);
		return 2;
	}
	if (strcmp(type, "udp") && strcmp(type, "unix")) {
		fprintf(stderr, "wirelimit: -t udp or -t unix\n");
		return 2;
	}
	if (size < 16 || size > NET_BUFSIZE || seconds <= 0) {
		fprintf(stderr, "wirelimit: -s 16..%d, -d > 0\n", NET_BUFSIZE);
		return 2;
	}
	unix_type = !strcmp(type, "unix");
	if (unix_type) {
		if (!mkdtemp(dir))
			die("mkdtemp");
		snprintf(rpath, sizeof(rpath), "%s/r", dir);
		snprintf(spath, sizeof(spath), "%s/s", dir);
	}
	rfd = make_socket(unix_type, rpath, &ra, &rlen);
	sfd = make_socket(unix_type, spath, &sa, &slen);
	set_bufs(rfd, bufsize);
	set_bufs(sfd, bufsize);
	if (pipe(pfd) < 0)
		die("pipe");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		close(sfd);
		close(pfd[0]);
		receiver(rfd, pfd[1], seconds, batch);
	}
	close(rfd);
	close(pfd[1]);
	frame = calloc(1, size);
	frames = calloc(batch, size);
	if (!frame || !frames)
		die("calloc");
	for (unsigned int i = 0; i < batch; i++) {
		siov[i].iov_base = frames + (size_t)i * size;
		siov[i].iov_len = size;
		smsgs[i].msg_hdr.msg_iov = &siov[i];
		smsgs[i].msg_hdr.msg_iovlen = 1;
		smsgs[i].msg_hdr.msg_name = &ra.sa;
		smsgs[i].msg_hdr.msg_namelen = rlen;
	}
	usleep(100000);
	p.fd = sfd;
	p.events = POLLOUT;
	t0 = now();
	t1 = t0 + seconds;
	while (1) {
		ssize_t n;

		if (batch > 1) {
			int sent;

			if (now() >= t1)
				break;
			/* as the netdev: each frame copied into its slot */
			for (unsigned int i = 0; i < batch; i++) {
				uint64_t seq = s.count + i;

				memcpy(frame, &seq, sizeof(seq));
				memcpy(siov[i].iov_base, frame, size);
			}
			sent = sendmmsg(sfd, smsgs, batch, 0);
			if (sent < 0) {
				send_failed("sendmmsg", &s, &p);
				continue;
			}
			s.count += sent;
			s.bytes += (uint64_t)sent * size;
			continue;
		}
		if ((s.count & 63) == 0 && now() >= t1)
			break;
		memcpy(frame, &s.count, sizeof(s.count));
		n = sendto(sfd, frame, size, 0, &ra.sa, rlen);
		if (n < 0) {
			send_failed("sendto", &s, &p);
			continue;
		}
		s.count++;
		s.bytes += n;
	}
	s.seconds = now() - t0;
	/* the end marker, a few times: UDP may drop it */
	for (int i = 0; i < 20; i++) {
		sendto(sfd, "THE-END!", 8, 0, &ra.sa, rlen);
		usleep(20000);
	}
	if (read(pfd[0], &r, sizeof(r)) != sizeof(r)) {
		fprintf(stderr, "wirelimit: no result from the receiver\n");
		return 1;
	}
	waitpid(pid, &st, 0);
	if (unix_type) {
		unlink(rpath);
		unlink(spath);
		rmdir(dir);
	}
	printf("wirelimit type=%s size=%zu seconds=%.3f sent=%llu received=%llu "
	       "lost=%llu lost_pct=%.2f sent_MBps=%.1f MBps=%.1f eagain=%llu "
	       "batch=%u bufsize=%d\n",
	       type, size, s.seconds, (unsigned long long)s.count,
	       (unsigned long long)r.count,
	       (unsigned long long)(s.count - r.count),
	       s.count ? 100.0 * (s.count - r.count) / s.count : 0.0,
	       s.bytes / s.seconds / 1e6,
	       r.seconds > 0 ? r.bytes / r.seconds / 1e6 : 0.0,
	       (unsigned long long)s.eagain, batch, bufsize);
	return 0;
}
