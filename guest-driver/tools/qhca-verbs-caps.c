// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * qhca-verbs-caps: are the capabilities a device reports true, and does
 * every verb it does not support fail with EOPNOTSUPP at once?
 *
 *   qhca-verbs-caps [-d DEVICE] [-g GID_INDEX]
 *
 * Reported limits are tried at the limit (must work) and one past it (must
 * fail); capability flags and the features the device lacks (ODP,
 * completion timestamps, ...) are checked against what the device does,
 * and newer verbs (rereg, resize, memory windows) are tried; unsupported
 * verbs must return EOPNOTSUPP. One line per check, "ok - caps: ..." or
 * "not ok - caps: ...", as the guest tests print them. Exit status 1 if
 * any check failed.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>	/* device_cap_flags_ex bits */

static int failed;

static void result(int ok, const char *name, const char *fmt, ...)
{
	va_list ap;

	printf("%s - caps: %s", ok ? "ok" : "not ok", name);
	if (!ok && fmt) {
		printf(" (");
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
		printf(")");
	}
	printf("\n");
	if (!ok)
		failed = 1;
}

/* The errno of a call that returned a pointer: 0 if it succeeded */
#define PTR_ERR(p) ((p) ? 0 : (errno ? errno : -1))

static void expect_eopnotsupp(const char *name, int err)
{
	result(err == EOPNOTSUPP, name, "returned %d (%s), not EOPNOTSUPP",
	       err, err > 0 ? strerror(err) : "success");
}

static struct ibv_qp *rc_qp(struct ibv_pd *pd, struct ibv_cq *cq,
			    uint32_t wr, uint32_t sge)
{
	struct ibv_qp_init_attr a = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = wr, .max_recv_wr = 1,
			 .max_send_sge = sge, .max_recv_sge = 1 },
	};

	errno = 0;
	return ibv_create_qp(pd, &a);
}

/*
 * Bring @qp to RTS connected to QP @dest of this device, with @rd
 * READ/atomic credits; remote READ and WRITE allowed
 */
static int qp_connect(struct ibv_qp *qp, uint32_t dest, int gidx,
		      union ibv_gid *gid, uint8_t rd)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_WRITE,
	};
	int ret;

	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (ret)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *gid;
	a.ah_attr.grh.sgid_index = gidx;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (ret)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = rd;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* Bring @qp to RTS connected to itself, with @rd READ/atomic credits */
static int qp_to_rts(struct ibv_qp *qp, int gidx, union ibv_gid *gid,
		     uint8_t rd)
{
	return qp_connect(qp, qp->qp_num, gidx, gid, rd);
}

static void check_limits(struct ibv_context *ctx, struct ibv_pd *pd,
			 const struct ibv_device_attr *d, int gidx,
			 union ibv_gid *gid)
{
	struct ibv_cq *cq, *big;
	struct ibv_qp *qp;
	struct ibv_srq *srq;
	struct ibv_srq_init_attr sa = {};
	int err;

	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!cq) {
		result(0, "a CQ for the limit checks", "errno %d", errno);
		return;
	}

	errno = 0;
	big = ibv_create_cq(ctx, d->max_cqe, NULL, NULL, 0);
	result(big != NULL, "a CQ of max_cqe entries", "max_cqe %d: errno %d",
	       d->max_cqe, errno);
	if (big)
		ibv_destroy_cq(big);
	errno = 0;
	big = ibv_create_cq(ctx, d->max_cqe + 1, NULL, NULL, 0);
	result(!big, "a CQ of max_cqe + 1 entries is refused", "max_cqe %d",
	       d->max_cqe);
	if (big)
		ibv_destroy_cq(big);

	qp = rc_qp(pd, cq, d->max_qp_wr, 1);
	result(qp != NULL, "an RC QP of max_qp_wr send WRs",
	       "max_qp_wr %d: errno %d", d->max_qp_wr, errno);
	if (qp)
		ibv_destroy_qp(qp);
	qp = rc_qp(pd, cq, d->max_qp_wr + 1, 1);
	result(!qp, "an RC QP of max_qp_wr + 1 send WRs is refused",
	       "max_qp_wr %d", d->max_qp_wr);
	if (qp)
		ibv_destroy_qp(qp);

	qp = rc_qp(pd, cq, 4, d->max_sge);
	result(qp != NULL, "an RC QP with max_sge SGEs", "max_sge %d: errno %d",
	       d->max_sge, errno);
	if (qp)
		ibv_destroy_qp(qp);
	qp = rc_qp(pd, cq, 4, d->max_sge + 1);
	result(!qp, "an RC QP with max_sge + 1 SGEs is refused", "max_sge %d",
	       d->max_sge);
	if (qp)
		ibv_destroy_qp(qp);

	sa.attr.max_wr = d->max_srq_wr;
	sa.attr.max_sge = d->max_srq_sge;
	errno = 0;
	srq = ibv_create_srq(pd, &sa);
	result(srq != NULL, "an SRQ of max_srq_wr WRs and max_srq_sge SGEs",
	       "%d/%d: errno %d", d->max_srq_wr, d->max_srq_sge, errno);
	if (srq) {
		struct ibv_srq_attr ra = { .max_wr = d->max_srq_wr + 1 };

		err = ibv_modify_srq(srq, &ra, IBV_SRQ_MAX_WR);
		result(err == EINVAL,
		       "ibv_modify_srq to max_srq_wr + 1 WRs is refused",
		       "returned %d, not EINVAL", err);
		ibv_destroy_srq(srq);
	}
	sa.attr.max_wr = d->max_srq_wr + 1;
	srq = ibv_create_srq(pd, &sa);
	result(!srq, "an SRQ of max_srq_wr + 1 WRs is refused",
	       "max_srq_wr %d", d->max_srq_wr);
	if (srq)
		ibv_destroy_srq(srq);

	/* READ/atomic credits as requester: max_qp_init_rd_atom and one more */
	qp = rc_qp(pd, cq, 4, 1);
	if (qp) {
		err = qp_to_rts(qp, gidx, gid, d->max_qp_init_rd_atom);
		result(!err, "an RC QP to RTS with max_qp_init_rd_atom credits",
		       "%d: %s", d->max_qp_init_rd_atom, strerror(err));
		ibv_destroy_qp(qp);
	}
	qp = rc_qp(pd, cq, 4, 1);
	if (qp) {
		err = qp_to_rts(qp, gidx, gid, d->max_qp_init_rd_atom + 1);
		result(err != 0,
		       "an RC QP to RTS with max_qp_init_rd_atom + 1 credits is refused",
		       "%d", d->max_qp_init_rd_atom);
		ibv_destroy_qp(qp);
	}
	ibv_destroy_cq(cq);
}

/*
 * Post a signaled RDMA WRITE or READ (@op) of @len bytes between the start
 * of @lmr and @raddr of @rkey
 */
static int post_rdma(struct ibv_qp *qp, enum ibv_wr_opcode op,
		     struct ibv_mr *lmr, uint64_t raddr, uint32_t rkey,
		     uint32_t len, uint64_t wr_id)
{
	struct ibv_sge s = {
		.addr = (uintptr_t)lmr->addr, .length = len, .lkey = lmr->lkey,
	};
	struct ibv_send_wr w = {
		.wr_id = wr_id, .sg_list = &s, .num_sge = 1,
		.opcode = op, .send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = raddr, .rkey = rkey },
	}, *bad;

	return ibv_post_send(qp, &w, &bad);
}

/* Post a signaled WRITE of @len bytes of @src to @addr in @dst */
static int post_write(struct ibv_qp *qp, struct ibv_mr *src,
		      struct ibv_mr *dst, void *addr, uint32_t len,
		      uint64_t wr_id)
{
	return post_rdma(qp, IBV_WR_RDMA_WRITE, src, (uintptr_t)addr,
			 dst->rkey, len, wr_id);
}

/* Write @len bytes of @src to @dst's rkey through @qp; the completion status */
static int loop_write(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_mr *src,
		      struct ibv_mr *dst, void *dst_addr, uint32_t len)
{
	struct ibv_wc wc;
	int i, n = 0;

	if (post_write(qp, src, dst, dst_addr, len, 7))
		return -1;
	for (i = 0; i < 5000000 && n == 0; i++)
		n = ibv_poll_cq(cq, 1, &wc);
	return n == 1 ? (int)wc.status : -1;
}

/*
 * ibv_rereg_mr: new rights, a new translation and a new
 * PD of an MR that an RC QP connected to itself writes to; the keys stay
 */
static void check_rereg(struct ibv_context *ctx, struct ibv_pd *pd, int gidx,
			union ibv_gid *gid)
{
	static char src[4096], a1[4096], a2[4096];
	struct ibv_mr *ms, *md;
	struct ibv_pd *pd2;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	uint32_t rkey;
	int st, ret;

	memset(src, 0x5a, sizeof(src));
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	qp = cq ? rc_qp(pd, cq, 4, 1) : NULL;
	ms = ibv_reg_mr(pd, src, sizeof(src), 0);
	md = ibv_reg_mr(pd, a1, sizeof(a1), IBV_ACCESS_LOCAL_WRITE);
	pd2 = ibv_alloc_pd(ctx);
	if (!qp || !ms || !md || !pd2 || qp_to_rts(qp, gidx, gid, 1)) {
		result(0, "a QP connected to itself and MRs for ibv_rereg_mr",
		       "errno %d", errno);
		return;
	}
	rkey = md->rkey;

	ret = ibv_rereg_mr(md, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	st = ret ? -2 : loop_write(qp, cq, ms, md, a1, sizeof(src));
	result(!ret && st == IBV_WC_SUCCESS && md->rkey == rkey &&
	       !memcmp(a1, src, sizeof(src)),
	       "ibv_rereg_mr: new rights (remote write), the rkey stays",
	       "ret %d, write status %d, rkey %#x -> %#x", ret, st, rkey,
	       md->rkey);

	memset(a1, 0, sizeof(a1));
	memset(src, 0xa5, sizeof(src));
	ret = ibv_rereg_mr(md, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, a2,
			   sizeof(a2), 0);
	st = ret ? -2 : loop_write(qp, cq, ms, md, a2, sizeof(src));
	result(!ret && st == IBV_WC_SUCCESS && md->addr == a2 &&
	       !memcmp(a2, src, sizeof(src)) && a1[0] == 0 && a1[4095] == 0,
	       "ibv_rereg_mr: new memory, the write lands there",
	       "ret %d, write status %d", ret, st);

	ret = ibv_rereg_mr(md, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0);
	memset(a2, 0, sizeof(a2));
	st = ret ? -2 : loop_write(qp, cq, ms, md, a2, sizeof(src));
	/*
	 * The QP's own responder refuses the write and moves the QP to the
	 * error state, which flushes the request before its NAK is read
	 */
	result(!ret && (st == IBV_WC_REM_ACCESS_ERR ||
			st == IBV_WC_WR_FLUSH_ERR) && md->pd == pd2 &&
	       a2[0] == 0,
	       "ibv_rereg_mr: another PD, the QP's writes are refused",
	       "ret %d, write status %d", ret, st);
	result(ibv_dealloc_pd(pd2) == EBUSY,
	       "ibv_rereg_mr: the MR holds its new PD", NULL);

	ibv_destroy_qp(qp);
	ibv_dereg_mr(md);
	ibv_dereg_mr(ms);
	ibv_dealloc_pd(pd2);
	ibv_destroy_cq(cq);
}

/* Post @n signaled 64-byte WRITEs, wr_id @first on; 0 if all were posted */
static int post_writes(struct ibv_qp *qp, struct ibv_mr *src,
		       struct ibv_mr *dst, uint64_t first, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (post_write(qp, src, dst, dst->addr, 64, first + i))
			return -1;
	return 0;
}

/* Poll @n completions; 0 if they came in order, wr_id @first on, all good */
static int poll_in_order(struct ibv_cq *cq, uint64_t first, int n)
{
	struct ibv_wc wc;
	long spins = 0;
	int got = 0, r;

	while (got < n && spins++ < 50000000) {
		r = ibv_poll_cq(cq, 1, &wc);
		if (r < 0)
			return -1;
		if (r == 0)
			continue;
		if (wc.status != IBV_WC_SUCCESS || wc.wr_id != first + got)
			return -1;
		got++;
	}
	return got == n ? 0 : -1;
}

/*
 * ibv_resize_cq with completions in flight: the ones not
 * yet polled come out of the resized CQ in order, and it goes on past its
 * old size; a size below what it holds is refused
 */
static void check_resize_cq(struct ibv_context *ctx, struct ibv_pd *pd,
			    int gidx, union ibv_gid *gid)
{
	static char src[64], dst[64];
	struct ibv_mr *ms, *md;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	int ret, cqe0;

	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	qp = cq ? rc_qp(pd, cq, 32, 1) : NULL;
	ms = ibv_reg_mr(pd, src, sizeof(src), 0);
	md = ibv_reg_mr(pd, dst, sizeof(dst), IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE);
	if (!qp || !ms || !md || qp_to_rts(qp, gidx, gid, 1)) {
		result(0, "a QP connected to itself for ibv_resize_cq",
		       "errno %d", errno);
		return;
	}
	cqe0 = cq->cqe;
	/* 12 completions, 1 polled: 11 held (the smallest CQ has 8) */
	ret = post_writes(qp, ms, md, 100, 12);
	ret = ret ? ret : poll_in_order(cq, 100, 1);
	result(!ret, "12 completions on a 16-entry CQ", NULL);
	/*
	 * Let all 12 arrive before resizing (a loopback WRITE takes well under
	 * a millisecond; the refusal below needs more than 8 held)
	 */
	usleep(1000000);
	ret = ibv_resize_cq(cq, 2);
	result(ret != 0 && cq->cqe == cqe0,
	       "ibv_resize_cq below the 11 CQEs held is refused, the CQ unchanged",
	       "ret %d, cqe %d", ret, cq->cqe);
	ret = ibv_resize_cq(cq, 64);
	result(!ret && cq->cqe >= 64, "ibv_resize_cq to 64 with 11 CQEs held",
	       "ret %d, cqe %d", ret, cq->cqe);
	result(!poll_in_order(cq, 101, 11),
	       "ibv_resize_cq: the 11 held come out in order", NULL);
	ret = post_writes(qp, ms, md, 200, 30);
	result(!ret && !poll_in_order(cq, 200, 30),
	       "ibv_resize_cq: 30 more completions, past the old size", NULL);
	ibv_destroy_qp(qp);
	ibv_dereg_mr(md);
	ibv_dereg_mr(ms);
	ibv_destroy_cq(cq);
}

/* Post a receive of 64 bytes at @buf + 64 * @slot to @srq, wr_id 1000 + slot */
static int post_srq_slot(struct ibv_srq *srq, struct ibv_mr *mr, char *buf,
			 int slot)
{
	struct ibv_sge s = {
		.addr = (uintptr_t)(buf + 64 * slot), .length = 64,
		.lkey = mr->lkey,
	};
	struct ibv_recv_wr w = {
		.wr_id = 1000 + slot, .sg_list = &s, .num_sge = 1,
	}, *bad;

	return ibv_post_srq_recv(srq, &w, &bad);
}

/*
 * SENDs of 8 bytes ("srq" and the slot) for slots @first..@first + @n - 1
 * through @qp connected to itself; 0 if every receive completed in order,
 * with its bytes in its slot of @rbuf, and every send too
 */
static int srq_sends(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_mr *smr,
		     char *sbuf, char *rbuf, int first, int n)
{
	int i, sent = 0, recvd = 0;
	long spins = 0;
	struct ibv_wc wc;

	for (i = first; i < first + n; i++) {
		struct ibv_sge s = {
			.addr = (uintptr_t)(sbuf + 8 * i), .length = 8,
			.lkey = smr->lkey,
		};
		struct ibv_send_wr w = {
			.wr_id = i, .sg_list = &s, .num_sge = 1,
			.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
		}, *bad;

		snprintf(sbuf + 8 * i, 8, "srq%04d", i);
		if (ibv_post_send(qp, &w, &bad))
			return -1;
	}
	while ((sent < n || recvd < n) && spins++ < 50000000) {
		int r = ibv_poll_cq(cq, 1, &wc);

		if (r < 0)
			return -1;
		if (r == 0)
			continue;
		if (wc.status != IBV_WC_SUCCESS)
			return -1;
		if (wc.opcode != IBV_WC_RECV) {
			sent++;
			continue;
		}
		i = first + recvd;
		if (wc.wr_id != (uint64_t)(1000 + i) || wc.byte_len != 8 ||
		    memcmp(rbuf + 64 * i, sbuf + 8 * i, 8))
			return -1;
		recvd++;
	}
	return sent == n && recvd == n ? 0 : -1;
}

/*
 * ibv_modify_srq(IBV_SRQ_MAX_WR) with receives
 * outstanding: a shrink below them is refused and changes nothing, a grow
 * keeps them, and SENDs through a QP connected to itself take the old and
 * the new receives in order
 */
static void check_resize_srq(struct ibv_context *ctx, struct ibv_pd *pd,
			     int gidx, union ibv_gid *gid)
{
	static char sbuf[8 * 64], rbuf[64 * 64];
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 1 } };
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 64, .max_send_sge = 1 },
	};
	struct ibv_srq_attr ra = {};
	struct ibv_mr *smr, *rmr;
	struct ibv_srq *srq;
	struct ibv_cq *cq;
	struct ibv_qp *qp = NULL;
	int i, ret;

	cq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	srq = ibv_create_srq(pd, &sa);
	if (cq && srq) {
		qa.send_cq = cq;
		qa.recv_cq = cq;
		qa.srq = srq;
		qp = ibv_create_qp(pd, &qa);
	}
	smr = ibv_reg_mr(pd, sbuf, sizeof(sbuf), 0);
	rmr = ibv_reg_mr(pd, rbuf, sizeof(rbuf), IBV_ACCESS_LOCAL_WRITE);
	if (!qp || !smr || !rmr || qp_to_rts(qp, gidx, gid, 1) ||
	    ibv_query_srq(srq, &ra) || ra.max_wr != 16) {
		result(0, "an SRQ and a QP connected to itself for SRQ resize",
		       "errno %d, max_wr %u", errno, ra.max_wr);
		return;
	}
	/* 12 receives, 2 taken: 10 outstanding */
	for (i = 0, ret = 0; i < 12 && !ret; i++)
		ret = post_srq_slot(srq, rmr, rbuf, i);
	ret = ret ? ret : srq_sends(qp, cq, smr, sbuf, rbuf, 0, 2);
	result(!ret, "SRQ resize: 12 receives on an SRQ of 16, 2 taken", NULL);

	ra.max_wr = 8;
	ret = ibv_modify_srq(srq, &ra, IBV_SRQ_MAX_WR);
	memset(&ra, 0, sizeof(ra));
	result(ret == EINVAL && !ibv_query_srq(srq, &ra) && ra.max_wr == 16,
	       "ibv_modify_srq(IBV_SRQ_MAX_WR) to 8 below the 10 outstanding is refused, the SRQ unchanged",
	       "returned %d, max_wr %u", ret, ra.max_wr);

	ra.max_wr = 40;
	ret = ibv_modify_srq(srq, &ra, IBV_SRQ_MAX_WR);
	memset(&ra, 0, sizeof(ra));
	result(!ret && !ibv_query_srq(srq, &ra) && ra.max_wr == 64,
	       "ibv_modify_srq(IBV_SRQ_MAX_WR) to 40 with 10 receives outstanding: 64 entries",
	       "returned %d, max_wr %u", ret, ra.max_wr);
	/* 40 more: 50 outstanding, more than the old 16 held */
	for (i = 12, ret = 0; i < 52 && !ret; i++)
		ret = post_srq_slot(srq, rmr, rbuf, i);
	result(!ret, "SRQ resize: 40 more receives posted (50 outstanding)",
	       "returned %d at %d", ret, i - 1);
	result(!ret && !srq_sends(qp, cq, smr, sbuf, rbuf, 2, 50),
	       "SRQ resize: 50 SENDs to itself take the old and the new receives in order, data right",
	       NULL);

	ibv_destroy_qp(qp);
	ibv_destroy_srq(srq);
	ibv_dereg_mr(rmr);
	ibv_dereg_mr(smr);
	ibv_destroy_cq(cq);
}

/*
 * Memory windows.  Two RC QPs of one CQ connected to
 * each other: windows are bound on B (a type 2 window works on the QP that
 * bound it alone) and A reads and writes through them.  A refused access
 * moves both QPs to the error state, so each refusal has a pair of its own.
 */
struct mw_pair {
	struct ibv_cq *cq;
	struct ibv_qp *a, *b;
};

static void mw_pair_close(struct mw_pair *p)
{
	if (p->a)
		ibv_destroy_qp(p->a);
	if (p->b)
		ibv_destroy_qp(p->b);
	if (p->cq)
		ibv_destroy_cq(p->cq);
	memset(p, 0, sizeof(*p));
}

static int mw_pair_open(struct ibv_context *ctx, struct ibv_pd *pd, int gidx,
			union ibv_gid *gid, struct mw_pair *p)
{
	struct ibv_qp_init_attr_ex qx = {
		.qp_type = IBV_QPT_RC,
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd,
		.send_ops_flags = IBV_QP_EX_WITH_SEND |
				  IBV_QP_EX_WITH_SEND_WITH_INV |
				  IBV_QP_EX_WITH_RDMA_WRITE |
				  IBV_QP_EX_WITH_RDMA_READ |
				  IBV_QP_EX_WITH_LOCAL_INV |
				  IBV_QP_EX_WITH_BIND_MW,
		.cap = { .max_send_wr = 8, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	memset(p, 0, sizeof(*p));
	p->cq = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	if (!p->cq)
		return -1;
	qx.send_cq = p->cq;
	qx.recv_cq = p->cq;
	p->a = ibv_create_qp_ex(ctx, &qx);
	p->b = ibv_create_qp_ex(ctx, &qx);
	if (!p->a || !p->b || qp_connect(p->a, p->b->qp_num, gidx, gid, 1) ||
	    qp_connect(p->b, p->a->qp_num, gidx, gid, 1)) {
		mw_pair_close(p);
		return -1;
	}
	return 0;
}

/* The status of @wr_id's completion on @cq (others skipped); -1 if none */
static int wait_wc(struct ibv_cq *cq, uint64_t wr_id, struct ibv_wc *wc)
{
	long spins = 0;
	int r;

	while (spins++ < 50000000) {
		r = ibv_poll_cq(cq, 1, wc);
		if (r < 0)
			return -1;
		if (r == 1 && wc->wr_id == wr_id)
			return wc->status;
	}
	return -1;
}

/* A through @rkey: WRITE (@op) or READ of @len bytes at @raddr; the status */
static int mw_access(struct mw_pair *p, enum ibv_wr_opcode op,
		     struct ibv_mr *lmr, uint64_t raddr, uint32_t rkey,
		     uint32_t len)
{
	struct ibv_wc wc;

	if (post_rdma(p->a, op, lmr, raddr, rkey, len, 0xacc))
		return -2;
	return wait_wc(p->cq, 0xacc, &wc);
}

/*
 * Was an access refused?  B's responder NAKs it: A's request completes
 * with IBV_WC_REM_ACCESS_ERR (B's error state flushes nothing of A's, as it
 * would with a QP connected to itself)
 */
static bool refused(int st)
{
	return st == IBV_WC_REM_ACCESS_ERR;
}

/* Completion of a bind: its status, and @opcode IBV_WC_BIND_MW if good */
static int wait_bind(struct mw_pair *p, uint64_t wr_id)
{
	struct ibv_wc wc;
	int st = wait_wc(p->cq, wr_id, &wc);

	return st == IBV_WC_SUCCESS && wc.opcode != IBV_WC_BIND_MW ? -3 : st;
}

/* ibv_bind_mw() of type 1 window @mw on B; 0 or the completion status */
static int bind1(struct mw_pair *p, struct ibv_mw *mw, struct ibv_mr *mr,
		 uint64_t addr, uint64_t len, unsigned int rights)
{
	struct ibv_mw_bind b = {
		.wr_id = 0xb1, .send_flags = IBV_SEND_SIGNALED,
		.bind_info = { .mr = mr, .addr = addr, .length = len,
			       .mw_access_flags = rights },
	};
	uint32_t old = mw->rkey;
	int ret = ibv_bind_mw(p->b, mw, &b);

	if (ret)
		return -2;
	if (mw->rkey != ibv_inc_rkey(old))
		return -4;
	return wait_bind(p, 0xb1);
}

/* IBV_WR_BIND_MW of type 2 window @mw through ibv_post_send() on B */
static int bind2_post(struct mw_pair *p, struct ibv_mw *mw, struct ibv_mr *mr,
		      uint64_t addr, uint64_t len, unsigned int rights)
{
	struct ibv_send_wr w = {
		.wr_id = 0xb2, .opcode = IBV_WR_BIND_MW,
		.send_flags = IBV_SEND_SIGNALED,
		.bind_mw = { .mw = mw, .rkey = ibv_inc_rkey(mw->rkey),
			     .bind_info = { .mr = mr, .addr = addr,
					    .length = len,
					    .mw_access_flags = rights } },
	}, *bad;

	if (ibv_post_send(p->b, &w, &bad))
		return -2;
	if (mw->rkey != w.bind_mw.rkey)
		return -4;
	return wait_bind(p, 0xb2);
}

/* ibv_wr_bind_mw() of type 2 window @mw on B */
static int bind2_wr(struct mw_pair *p, struct ibv_mw *mw, struct ibv_mr *mr,
		    uint64_t addr, uint64_t len, unsigned int rights)
{
	struct ibv_qp_ex *qx = ibv_qp_to_qp_ex(p->b);
	struct ibv_mw_bind_info bi = {
		.mr = mr, .addr = addr, .length = len,
		.mw_access_flags = rights,
	};
	uint32_t key = ibv_inc_rkey(mw->rkey);

	ibv_wr_start(qx);
	qx->wr_id = 0xb3;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_bind_mw(qx, mw, key, &bi);
	if (ibv_wr_complete(qx))
		return -2;
	if (mw->rkey != key)
		return -4;
	return wait_bind(p, 0xb3);
}

/* The caps and the MR right; a bind to an MR without the right fails */
static void check_mw_basics(struct ibv_context *ctx, struct ibv_pd *pd,
			    const struct ibv_device_attr *d, int gidx,
			    union ibv_gid *gid)
{
	static char buf[4096] __attribute__((aligned(4096)));
	struct mw_pair p;
	struct ibv_mr *mr;
	struct ibv_mw *mw;
	int st;

	result((d->device_cap_flags & IBV_DEVICE_MEM_WINDOW) &&
	       (d->device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B) &&
	       !(d->device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2A) &&
	       d->max_mw > 0,
	       "memory windows: IBV_DEVICE_MEM_WINDOW and MEM_WINDOW_TYPE_2B set, TYPE_2A clear, max_mw > 0",
	       "flags %#x, max_mw %d", d->device_cap_flags, d->max_mw);
	errno = 0;
	mw = ibv_alloc_mw(pd, (enum ibv_mw_type)3);
	result(!mw && errno == EINVAL, "ibv_alloc_mw of type 3 is EINVAL",
	       "errno %d", errno);
	if (mw)
		ibv_dealloc_mw(mw);

	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE);
	mw = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	if (!mr || !mw || mw_pair_open(ctx, pd, gidx, gid, &p)) {
		result(0, "an MR, a type 1 window and two QPs", "errno %d",
		       errno);
		goto out;
	}
	st = bind1(&p, mw, mr, (uintptr_t)buf, 64, IBV_ACCESS_REMOTE_WRITE);
	result(st == IBV_WC_MW_BIND_ERR,
	       "type 1: a bind to an MR without IBV_ACCESS_MW_BIND fails (IBV_WC_MW_BIND_ERR)",
	       "status %d", st);
	mw_pair_close(&p);
out:
	if (mw)
		ibv_dealloc_mw(mw);
	if (mr)
		ibv_dereg_mr(mr);
}

/*
 * Type 1: bound to part of an MR that allows no remote access itself,
 * with ibv_bind_mw() on any QP of the PD; bounds and rights held; unbound;
 * bound again; deallocated while bound
 */
static void check_mw_type1(struct ibv_context *ctx, struct ibv_pd *pd,
			   int gidx, union ibv_gid *gid)
{
	static char t[4096] __attribute__((aligned(4096)));
	static char src[256];
	char *win = t + 1024;
	struct ibv_mr *mr, *ms;
	struct mw_pair p = {};
	struct ibv_mw *mw;
	uint32_t key;
	int st, ret;

	memset(t, 0, sizeof(t));
	memset(src, 0x3c, sizeof(src));
	ms = ibv_reg_mr(pd, src, sizeof(src), IBV_ACCESS_LOCAL_WRITE);
	errno = 0;
	mr = ibv_reg_mr(pd, t, sizeof(t), IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_MW_BIND);
	result(mr != NULL, "ibv_reg_mr with IBV_ACCESS_MW_BIND", "errno %d",
	       errno);
	errno = 0;
	mw = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	result(mw && mw->type == IBV_MW_TYPE_1 && mw->rkey,
	       "ibv_alloc_mw(IBV_MW_TYPE_1)", "errno %d", errno);
	if (!ms || !mr || !mw || mw_pair_open(ctx, pd, gidx, gid, &p)) {
		result(0, "two QPs connected to each other for type 1 windows",
		       "errno %d", errno);
		goto out;
	}

	/* a write-only window on [1024, 2048) of the MR */
	st = bind1(&p, mw, mr, (uintptr_t)win, 1024, IBV_ACCESS_REMOTE_WRITE);
	result(st == IBV_WC_SUCCESS,
	       "type 1: ibv_bind_mw to 1 KiB of an MR: IBV_WC_BIND_MW, the rkey is ibv_inc_rkey of the old",
	       "status %d", st);
	st = mw_access(&p, IBV_WR_RDMA_WRITE, ms, (uintptr_t)win + 512,
		       mw->rkey, 256);
	result(st == IBV_WC_SUCCESS && !memcmp(win + 512, src, 256) &&
	       !win[511] && !win[768],
	       "type 1: an RDMA WRITE through the window's rkey lands (the MR allows no remote access itself)",
	       "status %d", st);
	st = mw_access(&p, IBV_WR_RDMA_WRITE, ms, (uintptr_t)win + 1024 - 64,
		       mw->rkey, 128);
	result(refused(st) && !win[1024],
	       "type 1: a WRITE past the window's end is refused (IBV_WC_REM_ACCESS_ERR)",
	       "status %d", st);
	mw_pair_close(&p);

	if (mw_pair_open(ctx, pd, gidx, gid, &p))
		goto err_pair;
	st = mw_access(&p, IBV_WR_RDMA_READ, ms, (uintptr_t)win, mw->rkey,
		       64);
	result(refused(st),
	       "type 1: a READ through a window with remote write only is refused",
	       "status %d", st);
	mw_pair_close(&p);

	/* unbind: no MR, length 0; the old key and the new fail */
	if (mw_pair_open(ctx, pd, gidx, gid, &p))
		goto err_pair;
	key = mw->rkey;
	st = bind1(&p, mw, NULL, 0, 0, 0);
	result(st == IBV_WC_SUCCESS && mw->rkey != key,
	       "type 1: unbind (ibv_bind_mw of length 0) completes, the key moves on",
	       "status %d", st);
	st = mw_access(&p, IBV_WR_RDMA_WRITE, ms, (uintptr_t)win, key, 64);
	result(refused(st) && !win[0],
	       "type 1: after the unbind, a WRITE through the window fails",
	       "status %d", st);
	mw_pair_close(&p);

	/* bound again, read and write; deallocated while bound */
	if (mw_pair_open(ctx, pd, gidx, gid, &p))
		goto err_pair;
	st = bind1(&p, mw, mr, (uintptr_t)t, sizeof(t),
		   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	memset(src, 0, sizeof(src));
	if (!st)
		st = mw_access(&p, IBV_WR_RDMA_READ, ms, (uintptr_t)win + 512,
			       mw->rkey, 256);
	result(st == IBV_WC_SUCCESS && src[0] == 0x3c && src[255] == 0x3c,
	       "type 1: bound again (read and write), a READ through it returns what the WRITE put there",
	       "status %d", st);
	ret = ibv_dereg_mr(mr);
	result(ret == EBUSY,
	       "type 1: ibv_dereg_mr of an MR with a window bound is EBUSY, the MR stays",
	       "returned %d", ret);
	if (!ret)
		mr = NULL;
	key = mw->rkey;
	ret = ibv_dealloc_mw(mw);
	result(!ret, "type 1: ibv_dealloc_mw of a bound window", "returned %d",
	       ret);
	if (!ret)
		mw = NULL;
	st = mw_access(&p, IBV_WR_RDMA_WRITE, ms, (uintptr_t)win, key, 64);
	result(refused(st),
	       "type 1: after ibv_dealloc_mw, a WRITE through its rkey fails",
	       "status %d", st);
	if (mr) {
		ret = ibv_dereg_mr(mr);
		result(!ret,
		       "type 1: with the window gone its MR can be deregistered",
		       "returned %d", ret);
		if (!ret)
			mr = NULL;
	}
	goto out;
err_pair:
	result(0, "two more QPs for type 1 windows", "errno %d", errno);
out:
	mw_pair_close(&p);
	if (mw)
		ibv_dealloc_mw(mw);
	if (mr)
		ibv_dereg_mr(mr);
	if (ms)
		ibv_dereg_mr(ms);
}

/* A SEND with invalidate of @rkey from A to a receive posted on B */
static int send_inv(struct mw_pair *p, struct ibv_mr *ms, uint32_t rkey,
		    struct ibv_wc *rwc)
{
	struct ibv_sge s = {
		.addr = (uintptr_t)ms->addr, .length = 16, .lkey = ms->lkey,
	};
	struct ibv_recv_wr r = { .wr_id = 0x5ec, .sg_list = &s, .num_sge = 1 },
			   *rbad;
	struct ibv_send_wr w = {
		.wr_id = 0x5e1, .sg_list = &s, .num_sge = 1,
		.opcode = IBV_WR_SEND_WITH_INV,
		.send_flags = IBV_SEND_SIGNALED, .invalidate_rkey = rkey,
	}, *bad;
	struct ibv_wc wc;
	int st;

	if (ibv_post_recv(p->b, &r, &rbad) || ibv_post_send(p->a, &w, &bad))
		return -2;
	st = wait_wc(p->cq, 0x5ec, rwc);
	return st ? st : wait_wc(p->cq, 0x5e1, &wc);
}

/*
 * Type 2 (2B): bound by a work request to the QP that posts it, only when
 * unbound; invalidated locally (LOCAL_INV) or by the peer's SEND with
 * invalidate, and then bound again
 */
static void check_mw_type2(struct ibv_context *ctx, struct ibv_pd *pd,
			   int gidx, union ibv_gid *gid)
{
	static char t[4096] __attribute__((aligned(4096)));
	static char src[256];
	struct ibv_send_wr w = {
		.wr_id = 0x11, .opcode = IBV_WR_LOCAL_INV,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct ibv_mr *mr, *ms;
	struct mw_pair p = {};
	struct ibv_mw *mw;
	struct ibv_wc wc;
	uint32_t key;
	int st, ret;

	memset(t, 0, sizeof(t));
	memset(src, 0x6b, sizeof(src));
	ms = ibv_reg_mr(pd, src, sizeof(src), IBV_ACCESS_LOCAL_WRITE);
	mr = ibv_reg_mr(pd, t, sizeof(t), IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_MW_BIND);
	errno = 0;
	mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	result(mw && mw->type == IBV_MW_TYPE_2 && mw->rkey,
	       "ibv_alloc_mw(IBV_MW_TYPE_2)", "errno %d", errno);
	if (!ms || !mr || !mw || mw_pair_open(ctx, pd, gidx, gid, &p)) {
		result(0, "two QPs connected to each other for type 2 windows",
		       "errno %d", errno);
		goto out;
	}

	st = bind2_post(&p, mw, mr, (uintptr_t)t, 2048,
			IBV_ACCESS_REMOTE_WRITE);
	result(st == IBV_WC_SUCCESS,
	       "type 2: ibv_post_send IBV_WR_BIND_MW: IBV_WC_BIND_MW, the window's rkey is the new key",
	       "status %d", st);
	st = mw_access(&p, IBV_WR_RDMA_WRITE, ms, (uintptr_t)t + 100,
		       mw->rkey, 200);
	result(st == IBV_WC_SUCCESS && !memcmp(t + 100, src, 200),
	       "type 2: an RDMA WRITE through the window lands", "status %d",
	       st);
	st = bind2_wr(&p, mw, mr, (uintptr_t)t, 1024, IBV_ACCESS_REMOTE_WRITE);
	result(st == IBV_WC_MW_BIND_ERR,
	       "type 2: binding it again while bound fails (ibv_wr_bind_mw: IBV_WC_MW_BIND_ERR)",
	       "status %d", st);
	mw_pair_close(&p);
	/* a new window: the first is left bound to a QP that is gone */
	ret = ibv_dealloc_mw(mw);
	mw = ret ? mw : ibv_alloc_mw(pd, IBV_MW_TYPE_2);

	/* ibv_wr_bind_mw, then LOCAL_INV */
	if (!mw || mw_pair_open(ctx, pd, gidx, gid, &p))
		goto err_pair;
	st = bind2_wr(&p, mw, mr, (uintptr_t)t + 2048, 2048,
		      IBV_ACCESS_REMOTE_WRITE);
	if (!st)
		st = mw_access(&p, IBV_WR_RDMA_WRITE, ms,
			       (uintptr_t)t + 4096 - 16, mw->rkey, 16);
	result(st == IBV_WC_SUCCESS && !memcmp(t + 4096 - 16, src, 16),
	       "type 2: ibv_wr_bind_mw binds, a WRITE through it lands",
	       "status %d", st);
	w.invalidate_rkey = mw->rkey;
	st = ibv_post_send(p.b, &w, &bad) ? -2 : wait_wc(p.cq, 0x11, &wc);
	result(st == IBV_WC_SUCCESS && wc.opcode == IBV_WC_LOCAL_INV,
	       "type 2: LOCAL_INV of the window's rkey", "status %d", st);
	st = mw_access(&p, IBV_WR_RDMA_WRITE, ms, (uintptr_t)t + 2048,
		       mw->rkey, 16);
	result(refused(st), "type 2: after LOCAL_INV, a WRITE through it fails",
	       "status %d", st);
	mw_pair_close(&p);

	/* the invalidated window bound again, on new QPs; SEND with invalidate */
	if (mw_pair_open(ctx, pd, gidx, gid, &p))
		goto err_pair;
	st = bind2_post(&p, mw, mr, (uintptr_t)t, 4096,
			IBV_ACCESS_REMOTE_WRITE);
	result(st == IBV_WC_SUCCESS,
	       "type 2: an invalidated window binds again (on another QP)",
	       "status %d", st);
	ret = ibv_dereg_mr(mr);
	result(ret == EBUSY,
	       "type 2: ibv_dereg_mr of an MR with a window bound is EBUSY",
	       "returned %d", ret);
	if (!ret)
		mr = NULL;
	if (mr) {
		errno = 0;
		ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL,
				   0, IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_MW_BIND | IBV_ACCESS_REMOTE_READ);
		result(ret == IBV_REREG_MR_ERR_CMD && errno == EBUSY,
		       "type 2: ibv_rereg_mr of an MR with a window bound fails (EBUSY)",
		       "returned %d, errno %d", ret, errno);
	}
	key = mw->rkey;
	st = send_inv(&p, ms, key, &wc);
	result(st == IBV_WC_SUCCESS && (wc.wc_flags & IBV_WC_WITH_INV) &&
	       wc.invalidated_rkey == key,
	       "type 2: SEND with invalidate of the window's rkey: IBV_WC_WITH_INV and the key at the receiver",
	       "status %d, wc_flags %#x, invalidated %#x (key %#x)", st,
	       wc.wc_flags, wc.invalidated_rkey, key);
	st = mw_access(&p, IBV_WR_RDMA_WRITE, ms, (uintptr_t)t, key, 16);
	result(refused(st),
	       "type 2: after the remote invalidation, a WRITE through it fails",
	       "status %d", st);
	if (mr) {
		ret = ibv_dereg_mr(mr);
		result(!ret,
		       "type 2: with its window invalidated the MR can be deregistered",
		       "returned %d", ret);
		if (!ret)
			mr = NULL;
	}
	goto out;
err_pair:
	result(0, "a type 2 window and two more QPs", "errno %d", errno);
out:
	mw_pair_close(&p);
	if (mw)
		ibv_dealloc_mw(mw);
	if (mr)
		ibv_dereg_mr(mr);
	if (ms)
		ibv_dereg_mr(ms);
}

static void check_unsupported(struct ibv_context *ctx, struct ibv_pd *pd)
{
	static char buf[8192];
	struct ibv_cq_init_attr_ex cqa = {
		.cqe = 16,
		.wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP,
	};
	struct ibv_qp_init_attr qa = { .cap = { 1, 1, 1, 1, 0 } };
	struct ibv_qp_init_attr_ex qx = {};
	struct ibv_values_ex rt = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK };
	struct ibv_alloc_dm_attr dma = { .length = 4096 };
	struct ibv_td_init_attr tda = {};
	struct ibv_xrcd_init_attr xa = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = -1, .oflags = O_CREAT,
	};
	struct ibv_wq_init_attr wa = {
		.wq_type = IBV_WQT_RQ, .max_wr = 1, .max_sge = 1,
	};
	struct ibv_counters_init_attr ca = {};
	union ibv_gid mgid = { .raw = { 0xff, 0x0e } };
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	struct ibv_cq_ex *cqx;

	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!cq) {
		result(0, "a CQ for the unsupported-verb checks", "errno %d",
		       errno);
		return;
	}

	errno = 0;
	cqx = ibv_create_cq_ex(ctx, &cqa);
	expect_eopnotsupp("ibv_create_cq_ex with completion timestamps",
			  PTR_ERR(cqx));
	if (cqx)
		ibv_destroy_cq(ibv_cq_ex_to_cq(cqx));

	qa.send_cq = cq;
	qa.recv_cq = cq;
	qa.qp_type = IBV_QPT_UC;
	errno = 0;
	qp = ibv_create_qp(pd, &qa);
	result(qp != NULL, "ibv_create_qp(IBV_QPT_UC) (UC is supported)",
	       "errno %d", errno);
	if (qp)
		ibv_destroy_qp(qp);
	qa.qp_type = IBV_QPT_RAW_PACKET;
	errno = 0;
	qp = ibv_create_qp(pd, &qa);
	expect_eopnotsupp("ibv_create_qp(IBV_QPT_RAW_PACKET)", PTR_ERR(qp));
	if (qp)
		ibv_destroy_qp(qp);
	qx.qp_type = IBV_QPT_XRC_SEND;
	qx.send_cq = cq;
	qx.recv_cq = cq;
	qx.cap = qa.cap;
	qx.comp_mask = IBV_QP_INIT_ATTR_PD;
	qx.pd = pd;
	errno = 0;
	qp = ibv_create_qp_ex(ctx, &qx);
	expect_eopnotsupp("ibv_create_qp_ex(IBV_QPT_XRC_SEND)", PTR_ERR(qp));
	if (qp)
		ibv_destroy_qp(qp);
	/* windows are bound on connected QPs (RC, UC) only */
	qx.qp_type = IBV_QPT_UD;
	qx.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	qx.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_BIND_MW;
	errno = 0;
	qp = ibv_create_qp_ex(ctx, &qx);
	expect_eopnotsupp("ibv_create_qp_ex(IBV_QPT_UD) with IBV_QP_EX_WITH_BIND_MW",
			  PTR_ERR(qp));
	if (qp)
		ibv_destroy_qp(qp);
	qx.qp_type = IBV_QPT_RC;
	qx.send_ops_flags = IBV_QP_EX_WITH_SEND;
	qx.comp_mask |= IBV_QP_INIT_ATTR_CREATE_FLAGS;
	qx.create_flags = IBV_QP_CREATE_SCATTER_FCS;
	errno = 0;
	qp = ibv_create_qp_ex(ctx, &qx);
	expect_eopnotsupp("ibv_create_qp_ex with IBV_QP_CREATE_SCATTER_FCS",
			  PTR_ERR(qp));
	if (qp)
		ibv_destroy_qp(qp);

	qa.qp_type = IBV_QPT_UD;
	qp = ibv_create_qp(pd, &qa);
	if (qp) {
		union ibv_gid ucast = { .raw = { 0xfe, 0x80, [15] = 1 } };
		int r;

		/* supported: attach, detach, and their errors */
		r = ibv_attach_mcast(qp, &mgid, 0);
		result(r == 0, "ibv_attach_mcast", "returned %d", r);
		r = ibv_attach_mcast(qp, &ucast, 0);
		result(r == EINVAL, "ibv_attach_mcast to a unicast GID",
		       "returned %d, not EINVAL", r);
		r = ibv_detach_mcast(qp, &mgid, 0);
		result(r == 0, "ibv_detach_mcast", "returned %d", r);
		r = ibv_detach_mcast(qp, &mgid, 0);
		result(r == EINVAL, "ibv_detach_mcast when not attached",
		       "returned %d, not EINVAL", r);
		ibv_destroy_qp(qp);
	} else {
		result(0, "a UD QP for ibv_attach_mcast", "errno %d", errno);
	}

	errno = 0;
	mr = ibv_reg_mr(pd, buf, sizeof(buf),
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
	expect_eopnotsupp("ibv_reg_mr(IBV_ACCESS_ON_DEMAND)", PTR_ERR(mr));
	if (mr)
		ibv_dereg_mr(mr);

	errno = 0;
	expect_eopnotsupp("ibv_alloc_dm", PTR_ERR(ibv_alloc_dm(ctx, &dma)));
	errno = 0;
	expect_eopnotsupp("ibv_alloc_td", PTR_ERR(ibv_alloc_td(ctx, &tda)));
	errno = 0;
	expect_eopnotsupp("ibv_open_xrcd", PTR_ERR(ibv_open_xrcd(ctx, &xa)));
	wa.pd = pd;
	wa.cq = cq;
	errno = 0;
	expect_eopnotsupp("ibv_create_wq", PTR_ERR(ibv_create_wq(ctx, &wa)));
	errno = 0;
	expect_eopnotsupp("ibv_create_counters",
			  PTR_ERR(ibv_create_counters(ctx, &ca)));
	expect_eopnotsupp("ibv_query_rt_values_ex (no device clock)",
			  ibv_query_rt_values_ex(ctx, &rt));
	ibv_destroy_cq(cq);
}

/*
 * IBA 1.5 placement rights: ATOMIC WRITE and global FLUSH
 * offered, flush to persistence not (no persistent memory behind guest
 * RAM), and refused where asked for
 */
static void check_placement(struct ibv_context *ctx, struct ibv_pd *pd,
			    const struct ibv_device_attr_ex *dx)
{
	static char buf[4096] __attribute__((aligned(4096)));
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	int ret;

	result((dx->device_cap_flags_ex & IB_UVERBS_DEVICE_ATOMIC_WRITE) &&
	       (dx->device_cap_flags_ex & IB_UVERBS_DEVICE_FLUSH_GLOBAL) &&
	       !(dx->device_cap_flags_ex & IB_UVERBS_DEVICE_FLUSH_PERSISTENT),
	       "ATOMIC WRITE and global FLUSH offered, FLUSH to persistence not",
	       "device_cap_flags_ex %#llx",
	       (unsigned long long)dx->device_cap_flags_ex);
	errno = 0;
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_FLUSH_PERSISTENT);
	expect_eopnotsupp("ibv_reg_mr with IBV_ACCESS_FLUSH_PERSISTENT",
			  PTR_ERR(mr));
	if (mr)
		ibv_dereg_mr(mr);
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_FLUSH_GLOBAL);
	result(mr != NULL, "ibv_reg_mr with IBV_ACCESS_FLUSH_GLOBAL", "errno %d",
	       errno);
	if (mr)
		ibv_dereg_mr(mr);

	cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	qp = cq ? rc_qp(pd, cq, 4, 1) : NULL;
	if (!qp) {
		result(0, "an RC QP for the placement rights", "errno %d",
		       errno);
		goto out;
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	/*
	 * The kernel's CM gives a passive QP both flush rights whenever the
	 * device offers either: the QP takes the persistent one and does not
	 * keep it (no MR can have it)
	 */
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_FLUSH_GLOBAL |
			    IBV_ACCESS_FLUSH_PERSISTENT;
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	memset(&a, 0, sizeof(a));
	if (!ret)
		ret = ibv_query_qp(qp, &a, IBV_QP_ACCESS_FLAGS, &ia);
	result(!ret && a.qp_access_flags == (IBV_ACCESS_REMOTE_WRITE |
					     IBV_ACCESS_FLUSH_GLOBAL),
	       "a QP given both flush rights (as rdma_cm does) keeps the global one (ibv_query_qp)",
	       "ret %d, access %#x", ret, a.qp_access_flags);
	ibv_destroy_qp(qp);
out:
	if (cq)
		ibv_destroy_cq(cq);
}

int main(int argc, char **argv)
{
	const char *want = NULL;
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_device_attr_ex dx = {};
	struct ibv_port_attr pa;
	struct ibv_pd *pd;
	union ibv_gid gid;
	int i, n, gidx = 1, opt;

	while ((opt = getopt(argc, argv, "d:g:")) != -1) {
		if (opt == 'd')
			want = optarg;
		else if (opt == 'g')
			gidx = atoi(optarg);
		else
			return 2;
	}
	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++) {
		if (!want || !strcmp(ibv_get_device_name(list[i]), want)) {
			ctx = ibv_open_device(list[i]);
			break;
		}
	}
	if (!ctx) {
		result(0, "open the device", "%s", want ? want : "none found");
		return 1;
	}
	pd = ibv_alloc_pd(ctx);
	if (ibv_query_device_ex(ctx, NULL, &dx) || !pd ||
	    ibv_query_port(ctx, 1, &pa) || ibv_query_gid(ctx, 1, gidx, &gid)) {
		result(0, "query device, port and GID", "errno %d", errno);
		return 1;
	}

	/* what the device does */
	result(dx.orig_attr.atomic_cap == IBV_ATOMIC_HCA,
	       "atomic_cap is IBV_ATOMIC_HCA (atomics executed by the device)",
	       "%d", dx.orig_attr.atomic_cap);
	result(dx.orig_attr.device_cap_flags & IBV_DEVICE_RC_RNR_NAK_GEN,
	       "IBV_DEVICE_RC_RNR_NAK_GEN set", "flags %#x",
	       dx.orig_attr.device_cap_flags);
	result(dx.orig_attr.device_cap_flags & IBV_DEVICE_PORT_ACTIVE_EVENT,
	       "IBV_DEVICE_PORT_ACTIVE_EVENT set (the device reports port events)",
	       "flags %#x", dx.orig_attr.device_cap_flags);
	result(dx.orig_attr.device_cap_flags & IBV_DEVICE_SRQ_RESIZE,
	       "IBV_DEVICE_SRQ_RESIZE set (ibv_modify_srq(IBV_SRQ_MAX_WR))",
	       "flags %#x", dx.orig_attr.device_cap_flags);
	/* what it does not */
	result(!(dx.orig_attr.device_cap_flags & IBV_DEVICE_RESIZE_MAX_WR),
	       "IBV_DEVICE_RESIZE_MAX_WR clear (no QP resize)", "flags %#x",
	       dx.orig_attr.device_cap_flags);
	result(!dx.odp_caps.general_caps && !dx.odp_caps.per_transport_caps.rc_odp_caps &&
	       !dx.odp_caps.per_transport_caps.ud_odp_caps,
	       "no on-demand paging capability", "general %#llx rc %#x",
	       (unsigned long long)dx.odp_caps.general_caps,
	       dx.odp_caps.per_transport_caps.rc_odp_caps);
	result(!dx.completion_timestamp_mask && !dx.hca_core_clock,
	       "no completion timestamps (mask and clock 0)", "%#llx %llu",
	       (unsigned long long)dx.completion_timestamp_mask,
	       (unsigned long long)dx.hca_core_clock);
	result(dx.orig_attr.max_qp > 0 && dx.orig_attr.max_cq > 0 &&
	       dx.orig_attr.max_mr > 0 && dx.orig_attr.max_pd > 0 &&
	       dx.orig_attr.max_ah > 0 && dx.orig_attr.max_srq > 0,
	       "object limits reported", NULL);

	/* the port */
	result(pa.link_layer == IBV_LINK_LAYER_ETHERNET,
	       "port link layer Ethernet", "%d", pa.link_layer);
	result(pa.max_mtu == IBV_MTU_4096, "port max_mtu 4096", "%d",
	       pa.max_mtu);
	result(pa.active_mtu >= IBV_MTU_256 && pa.active_mtu <= pa.max_mtu,
	       "port active_mtu within max_mtu", "%d/%d", pa.active_mtu,
	       pa.max_mtu);
	result(pa.gid_tbl_len == 16, "port gid_tbl_len 16 (the device's table)",
	       "%d", pa.gid_tbl_len);
	result(pa.max_msg_sz == 0x80000000u,
	       "port max_msg_sz 2 GiB (longer RETH lengths are refused)",
	       "%#x", pa.max_msg_sz);

	check_limits(ctx, pd, &dx.orig_attr, gidx, &gid);
	check_rereg(ctx, pd, gidx, &gid);
	check_placement(ctx, pd, &dx);
	check_resize_cq(ctx, pd, gidx, &gid);
	check_resize_srq(ctx, pd, gidx, &gid);
	check_mw_basics(ctx, pd, &dx.orig_attr, gidx, &gid);
	check_mw_type1(ctx, pd, gidx, &gid);
	check_mw_type2(ctx, pd, gidx, &gid);
	check_unsupported(ctx, pd);

	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return failed;
}
