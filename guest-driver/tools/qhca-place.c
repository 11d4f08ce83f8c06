// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * qhca-place: RDMA ATOMIC WRITE and RDMA FLUSH (IBA 1.5 memory placement)
 * between two RoCE devices of any make, so that qhca and Soft-RoCE can be
 * tried against each other both ways.
 *
 *   server: qhca-place -d DEV -g GIDX -p PORT
 *   client: qhca-place -d DEV -g GIDX -p PORT [-F] SERVER_IP
 *
 * The server registers 4 KiB with remote write and global-flush rights and
 * sends its QP, GID, rkey and address over TCP.  The client, through the
 * ibv_wr_*() API, writes 64 bytes, ATOMIC WRITEs 8 bytes, FLUSHes a range
 * and the whole region, and checks each completion's status and opcode;
 * then a misaligned ATOMIC WRITE must fail with a remote invalid request.
 * The server then checks its memory: the write and the 8 bytes landed, the
 * misaligned one did not, nothing else changed.  Each side prints
 * "ok - NAME" or "not ok - NAME" lines and "place: all ok" if all passed.
 *
 * -M (both sides): memory windows instead of the misaligned ATOMIC WRITE:
 * the server binds a type 2 window (IBV_WR_BIND_MW) over 512 bytes of its
 * region, remote write only, and sends its key; the client writes through
 * it, then past its end, which must fail with a remote access error and
 * leave memory alone.  With -B as well (both sides) the write past the end
 * is not tried: Soft-RoCE (Linux 6.12) does not keep a window's writes
 * within the window, only within its MR (docs/verbs.md).
 *
 * -L (both sides, with -M): the window is a type 1 window bound by
 * ibv_bind_mw() with the flags programs register their MRs with and often
 * pass to the bind as they are: LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ |
 * MW_BIND (the server's MR gets them all).  The local rights mean nothing
 * to a window and are ignored, as Soft-RoCE and mlx5 ignore them; the
 * client READs back through the window what it wrote there.
 *
 * -F (client): no FLUSH.  Soft-RoCE (Linux 6.12) computes the ICRC of its
 * RC_FLUSH packets over the headers twice (its opcode table gives FLUSH no
 * payload offset, so it takes the packet from the BTH on as payload), and
 * drops the FLUSH packets of a device that follows the spec for the same
 * reason: FLUSH does not interoperate with it (docs/verbs.md).
 *
 * Copyright (c) 2026 The qhca authors
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>	/* device_cap_flags_ex bits */

#define REGION		4096
#define AW_OFF		8
#define AW_BAD_OFF	36
#define WR_OFF		64
#define WR_LEN		64
#define MW_OFF		2048
#define MW_LEN		512

static int failed;

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
	if (!ok)
		failed = 1;
}

static void die(const char *what)
{
	printf("not ok - %s (%s)\n", what, strerror(errno));
	exit(1);
}

struct peer {
	uint32_t qpn, psn, rkey;
	uint64_t addr;
	union ibv_gid gid;
};

static int tcp_connect(const char *host, const char *port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res;
	int fd, i;

	if (getaddrinfo(host, port, &hints, &res))
		return -1;
	for (i = 0; i < 300; i++) {	/* the server may not listen yet */
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
	fd = accept(s, NULL, NULL);
	close(s);
	return fd;
}

static int send_all(int fd, const void *buf, size_t len)
{
	return write(fd, buf, len) == (ssize_t)len ? 0 : -1;
}

static int recv_all(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, (char *)buf + got, len - got);

		if (n <= 0)
			return -1;
		got += n;
	}
	return 0;
}

static int to_rts(struct ibv_qp *qp, const struct peer *me,
		  const struct peer *them, int gidx, int access)
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
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = them->qpn;
	a.rq_psn = them->psn;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = them->gid;
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
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
			  IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC))
		return errno;
	return 0;
}

/*
 * Server, -M: a type 2 window over [MW_OFF, MW_OFF + MW_LEN) of the
 * region, remote write only, bound on @qp; its key and address in *win.
 * With @mr_flags (-L) a type 1 window over the same range, bound by
 * ibv_bind_mw() with MR_FLAGS, an MR's flags, as its rights.
 */
static struct ibv_mw *bind_window(struct ibv_pd *pd, struct ibv_qp *qp,
				  struct ibv_cq *cq, struct ibv_mr *mr,
				  int mr_flags, struct peer *win);

/* Poll one completion (at most 20 s) */
static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	int i, n;

	for (i = 0; i < 200000; i++) {
		n = ibv_poll_cq(cq, 1, wc);
		if (n)
			return n;
		usleep(100);
	}
	return 0;
}

static void expect_wc(struct ibv_cq *cq, uint64_t wr_id,
		      enum ibv_wc_status status, int opcode, const char *name)
{
	struct ibv_wc wc;

	if (!poll_one(cq, &wc)) {
		result(0, name, "no completion");
		return;
	}
	result(wc.wr_id == wr_id && wc.status == status &&
	       (opcode < 0 || wc.opcode == (enum ibv_wc_opcode)opcode), name,
	       "wr_id %llu status %d (%s) opcode %d",
	       (unsigned long long)wc.wr_id, wc.status,
	       ibv_wc_status_str(wc.status), wc.opcode);
}

/* -L: the rights of the MR the window is bound to, as programs pass them */
#define MR_FLAGS	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND)

static struct ibv_mw *bind_window_1(struct ibv_pd *pd, struct ibv_qp *qp,
				    struct ibv_cq *cq, struct ibv_mr *mr,
				    struct peer *win)
{
	struct ibv_mw_bind mb = { 0 };
	struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	int err;

	result(mw != NULL, "server: ibv_alloc_mw(IBV_MW_TYPE_1)", "errno %d",
	       errno);
	if (!mw)
		return NULL;
	mb.wr_id = 8;
	mb.send_flags = IBV_SEND_SIGNALED;
	mb.bind_info.mr = mr;
	mb.bind_info.addr = (uintptr_t)mr->addr + MW_OFF;
	mb.bind_info.length = MW_LEN;
	mb.bind_info.mw_access_flags = MR_FLAGS;
	err = ibv_bind_mw(qp, mw, &mb);
	result(!err, "server: ibv_bind_mw with the MR's flags (LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ | MW_BIND) posted",
	       "%s", strerror(err));
	if (!err)
		expect_wc(cq, 8, IBV_WC_SUCCESS, IBV_WC_BIND_MW,
			  "server: the type 1 window is bound (IBV_WC_BIND_MW)");
	/* the client tries its key all the same: its WRITE must fail then */
	win->rkey = mw->rkey;
	win->addr = mb.bind_info.addr;
	return mw;
}

static struct ibv_mw *bind_window(struct ibv_pd *pd, struct ibv_qp *qp,
				  struct ibv_cq *cq, struct ibv_mr *mr,
				  int mr_flags, struct peer *win)
{
	struct ibv_send_wr wr = { 0 }, *bad;
	struct ibv_mw *mw;

	if (mr_flags)
		return bind_window_1(pd, qp, cq, mr, win);
	mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	result(mw != NULL, "server: ibv_alloc_mw(IBV_MW_TYPE_2)", "errno %d",
	       errno);
	if (!mw)
		return NULL;
	wr.wr_id = 9;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info.mr = mr;
	wr.bind_mw.bind_info.addr = (uintptr_t)mr->addr + MW_OFF;
	wr.bind_mw.bind_info.length = MW_LEN;
	wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
	result(!ibv_post_send(qp, &wr, &bad),
	       "server: IBV_WR_BIND_MW posted", "%s", strerror(errno));
	expect_wc(cq, 9, IBV_WC_SUCCESS, IBV_WC_BIND_MW,
		  "server: the type 2 window is bound (IBV_WC_BIND_MW)");
	win->rkey = wr.bind_mw.rkey;
	win->addr = wr.bind_mw.bind_info.addr;
	return mw;
}

static void fill_pattern(uint8_t *b)
{
	int i;

	for (i = 0; i < REGION; i++)
		b[i] = (uint8_t)(i * 7 + 3);
}

/* -L: READ back through the window the 16 bytes the client wrote there */
static void read_back(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_mr *mr,
		      const struct peer *win)
{
	uint8_t *got = (uint8_t *)mr->addr + 256, want[16];
	struct ibv_sge sge = { .addr = (uintptr_t)got, .length = 16,
			       .lkey = mr->lkey };
	struct ibv_send_wr wr = { 0 }, *bad;

	memset(got, 0, 16);
	memset(want, 0x5a, 16);
	wr.wr_id = 10;
	wr.opcode = IBV_WR_RDMA_READ;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = win->addr;
	wr.wr.rdma.rkey = win->rkey;
	result(!ibv_post_send(qp, &wr, &bad),
	       "client: a READ through the window posted", "%s",
	       strerror(errno));
	expect_wc(cq, 10, IBV_WC_SUCCESS, IBV_WC_RDMA_READ,
		  "client: a READ through the window completes (its remote read right kept)");
	result(!memcmp(got, want, 16),
	       "client: the READ through the window returns the bytes written through it",
	       NULL);
}

static void client(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_mr *mr,
		   const struct peer *srv, int no_flush, const struct peer *win,
		   int no_bounds, int mr_flags)
{
	struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(qp);
	uint8_t *buf = mr->addr;

	memset(buf, 0x5a, WR_LEN);

	ibv_wr_start(qpx);
	qpx->wr_id = 1;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(qpx, srv->rkey, srv->addr + WR_OFF);
	ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)buf, WR_LEN);
	qpx->wr_id = 2;
	ibv_wr_atomic_write(qpx, srv->rkey, srv->addr + AW_OFF, "ATOMWRIT");
	if (!no_flush) {
		qpx->wr_id = 3;
		ibv_wr_flush(qpx, srv->rkey, srv->addr, REGION,
			     IBV_FLUSH_GLOBAL, IBV_FLUSH_RANGE);
		qpx->wr_id = 4;
		ibv_wr_flush(qpx, srv->rkey, srv->addr, 0, IBV_FLUSH_GLOBAL,
			     IBV_FLUSH_MR);
	}
	result(!ibv_wr_complete(qpx), no_flush ?
	       "client: WRITE and ATOMIC WRITE posted" :
	       "client: WRITE, ATOMIC WRITE, 2 FLUSHes posted",
	       "%s", strerror(errno));
	expect_wc(cq, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE,
		  "client: RDMA WRITE completes");
	expect_wc(cq, 2, IBV_WC_SUCCESS, IBV_WC_ATOMIC_WRITE,
		  "client: ATOMIC WRITE completes (IBV_WC_ATOMIC_WRITE)");
	if (!no_flush) {
		expect_wc(cq, 3, IBV_WC_SUCCESS, IBV_WC_FLUSH,
			  "client: FLUSH of a range completes (IBV_WC_FLUSH)");
		expect_wc(cq, 4, IBV_WC_SUCCESS, IBV_WC_FLUSH,
			  "client: FLUSH of the whole region completes");
	}

	if (win) {
		/* through the window, then past its end (the last check) */
		ibv_wr_start(qpx);
		qpx->wr_id = 6;
		qpx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_rdma_write(qpx, win->rkey, win->addr);
		ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)buf, 16);
		result(!ibv_wr_complete(qpx), "client: a WRITE through the window posted",
		       "%s", strerror(errno));
		expect_wc(cq, 6, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE,
			  mr_flags ?
			  "client: a WRITE through the server's type 1 window (bound with the MR's flags) completes" :
			  "client: a WRITE through the server's type 2 window completes");
		if (mr_flags)
			read_back(qp, cq, mr, win);
		if (no_bounds)
			return;
		ibv_wr_start(qpx);
		qpx->wr_id = 7;
		ibv_wr_rdma_write(qpx, win->rkey, win->addr + MW_LEN - 8);
		ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)buf, 16);
		result(!ibv_wr_complete(qpx), "client: a WRITE past the window's end posted",
		       "%s", strerror(errno));
		expect_wc(cq, 7, IBV_WC_REM_ACCESS_ERR, -1,
			  "client: a WRITE past the window's end fails: remote access error");
		return;
	}

	/* last: it ends the connection */
	ibv_wr_start(qpx);
	qpx->wr_id = 5;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(qpx, srv->rkey, srv->addr + AW_BAD_OFF, "MISALIGN");
	result(!ibv_wr_complete(qpx), "client: a misaligned ATOMIC WRITE posted",
	       "%s", strerror(errno));
	expect_wc(cq, 5, IBV_WC_REM_INV_REQ_ERR, -1,
		  "client: a misaligned ATOMIC WRITE fails: remote invalid request");
}

static void server_check(const uint8_t *buf, int windows, int no_bounds)
{
	uint8_t want[REGION];

	fill_pattern(want);
	memcpy(want + AW_OFF, "ATOMWRIT", 8);
	memset(want + WR_OFF, 0x5a, WR_LEN);
	if (windows) {
		memset(want + MW_OFF, 0x5a, 16);
		result(!memcmp(buf + MW_OFF, want + MW_OFF, 16),
		       "server: the WRITE through the window landed", NULL);
		if (!no_bounds)
			result(!memcmp(buf + MW_OFF + MW_LEN - 8,
				       want + MW_OFF + MW_LEN - 8, 16),
			       "server: the WRITE past the window's end left memory alone",
			       NULL);
	}
	result(!memcmp(buf + AW_OFF, "ATOMWRIT", 8),
	       "server: the 8 bytes of the ATOMIC WRITE landed as sent", NULL);
	result(!memcmp(buf + AW_BAD_OFF, want + AW_BAD_OFF, 8),
	       "server: the misaligned ATOMIC WRITE left memory alone", NULL);
	result(!memcmp(buf, want, REGION),
	       "server: the WRITE landed, nothing else changed", NULL);
}

int main(int argc, char **argv)
{
	const char *devname = NULL, *port = "18900", *srv_ip = NULL;
	int gidx = 0, opt, fd, access, err, no_flush = 0, windows = 0;
	int no_bounds = 0, mr_flags = 0;
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_device_attr_ex dattr;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	struct peer me = { 0 }, them, win = { 0 };
	struct ibv_mw *mw = NULL;
	uint8_t *buf;
	char ok = 1;
	int i;

	while ((opt = getopt(argc, argv, "d:g:p:FMBL")) != -1) {
		switch (opt) {
		case 'B':
			no_bounds = 1;
			break;
		case 'L':
			mr_flags = 1;
			break;
		case 'F':
			no_flush = 1;
			break;
		case 'M':
			windows = 1;
			break;
		case 'd':
			devname = optarg;
			break;
		case 'g':
			gidx = atoi(optarg);
			break;
		case 'p':
			port = optarg;
			break;
		default:
			fprintf(stderr, "usage: %s -d DEV -g GIDX -p PORT [-F] [-M [-B] [-L]] [SERVER]\n",
				argv[0]);
			return 2;
		}
	}
	if (optind < argc)
		srv_ip = argv[optind];
	list = ibv_get_device_list(NULL);
	for (i = 0; list && list[i] && !ctx; i++)
		if (!devname || !strcmp(ibv_get_device_name(list[i]), devname))
			ctx = ibv_open_device(list[i]);
	if (!ctx)
		die("open the device");
	memset(&dattr, 0, sizeof(dattr));
	if (ibv_query_device_ex(ctx, NULL, &dattr))
		die("ibv_query_device_ex");
	result((dattr.device_cap_flags_ex & IB_UVERBS_DEVICE_ATOMIC_WRITE) &&
	       (dattr.device_cap_flags_ex & IB_UVERBS_DEVICE_FLUSH_GLOBAL),
	       "the device offers ATOMIC WRITE and global FLUSH",
	       "device_cap_flags_ex %#llx",
	       (unsigned long long)dattr.device_cap_flags_ex);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	buf = aligned_alloc(4096, REGION);
	if (!pd || !cq || !buf)
		die("PD, CQ and buffer");
	fill_pattern(buf);
	access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		 IBV_ACCESS_FLUSH_GLOBAL;
	if (mr_flags)	/* the QPs too: the client READs through the window */
		access |= IBV_ACCESS_REMOTE_READ;
	mr = ibv_reg_mr(pd, buf, REGION, access |
			(windows && !srv_ip ? IBV_ACCESS_MW_BIND : 0) |
			(mr_flags && !srv_ip ? MR_FLAGS : 0));
	if (!mr)
		die("ibv_reg_mr with IBV_ACCESS_FLUSH_GLOBAL");
	{
		struct ibv_qp_init_attr_ex a = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 8, .max_recv_wr = 1,
				 .max_send_sge = 1, .max_recv_sge = 1 },
			.comp_mask = IBV_QP_INIT_ATTR_PD |
				     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			.pd = pd,
			.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE |
					  IBV_QP_EX_WITH_ATOMIC_WRITE |
					  IBV_QP_EX_WITH_FLUSH,
		};

		qp = ibv_create_qp_ex(ctx, &a);
	}
	if (!qp)
		die("ibv_create_qp_ex with WITH_ATOMIC_WRITE | WITH_FLUSH");
	if (ibv_query_gid(ctx, 1, gidx, &me.gid))
		die("ibv_query_gid");
	me.qpn = qp->qp_num;
	me.psn = (getpid() * 4099u) & 0xffffff;
	me.rkey = mr->rkey;
	me.addr = (uintptr_t)buf;

	fd = srv_ip ? tcp_connect(srv_ip, port) : tcp_accept(port);
	if (fd < 0 || send_all(fd, &me, sizeof(me)) ||
	    recv_all(fd, &them, sizeof(them)))
		die("exchange over TCP");
	err = to_rts(qp, &me, &them, gidx, access);
	if (err) {
		errno = err;
		die("QP to RTS");
	}
	/* both are at RTS before the client starts */
	if (send_all(fd, &ok, 1) || recv_all(fd, &ok, 1))
		die("sync over TCP");
	/* -M: the server's window, bound now that its QP is at RTS */
	if (windows && !srv_ip) {
		mw = bind_window(pd, qp, cq, mr, mr_flags, &win);
		if (send_all(fd, &win, sizeof(win)))
			die("window over TCP");
	} else if (windows && recv_all(fd, &win, sizeof(win))) {
		die("window over TCP");
	}
	if (srv_ip) {
		client(qp, cq, mr, &them, no_flush, windows ? &win : NULL,
		       no_bounds, mr_flags);
		ok = !failed;
		if (send_all(fd, &ok, 1))
			die("done over TCP");
	} else {
		if (recv_all(fd, &ok, 1))
			die("waiting for the client");
		result(ok, "server: the client's checks passed", NULL);
		server_check(buf, windows, no_bounds);
	}
	close(fd);
	/*
	 * the window first: it holds its QP (Soft-RoCE then waits long for
	 * the QP's last reference when the QP goes before it)
	 */
	if (mw)
		ibv_dealloc_mw(mw);
	ibv_destroy_qp(qp);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	if (!failed)
		printf("place: all ok\n");
	return failed;
}
