// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Provider data-path tests (unit-datapath.c, datapath.h): queue sizing,
 * what create_*() refuses before any kernel command, and the kernel's
 * create responses against the provider's own geometry.
 */

#include <config.h>

#include "datapath.h"

/* ------------------------------------------------------------------------
 * Queue sizing
 */
void test_sizing(void)
{
	static const struct {
		uint32_t sge, inl, log, act_sge, act_inl;
	} sq[] = {
		{ 0, 0, 6, 0, 0 },		/* 64 */
		{ 1, 0, 7, 4, 64 },		/* 80 -> 128 */
		{ 4, 0, 7, 4, 64 },		/* 128 */
		{ 5, 0, 8, 12, 192 },		/* 144 -> 256 */
		{ 0, 64, 7, 4, 64 },		/* 128 */
		{ 0, 65, 8, 12, 192 },		/* 129 -> 256 */
		{ 2, 100, 8, 12, 192 },		/* 164 -> 256 */
		{ 12, 0, 8, 12, 192 },		/* 256 */
		{ 16, 0, 9, 16, 448 },		/* 320 -> 512 */
		{ 0, 448, 9, 16, 448 },		/* 512 */
		{ 0, 512, 10, 16, 512 },	/* 576 -> 1024 */
		{ 16, 512, 10, 16, 512 },
	};
	static const struct {
		uint32_t sge, log, act_sge;
	} rq[] = {
		{ 0, 5, 1 },		/* 16 -> 32 */
		{ 1, 5, 1 },		/* 32 */
		{ 2, 6, 3 },		/* 48 -> 64 */
		{ 3, 6, 3 },		/* 64 */
		{ 4, 7, 7 },		/* 80 -> 128 */
		{ 8, 8, 15 },		/* 144 -> 256 */
		{ 16, 9, 16 },		/* 272 -> 512 */
	};
	static const struct {
		uint32_t wr, depth;
	} dq[] = {
		{ 0, 8 }, { 1, 8 }, { 8, 8 }, { 9, 16 }, { 100, 128 },
		{ 1024, 1024 }, { 1025, 2048 }, { 32768, 32768 },
	};
	struct qhca_wq_geom sqs, sqs2;
	struct qhca_wq_geom rqs, rqs2;
	uint32_t sge, inl, depth;
	bool good;
	size_t i;

	good = true;
	for (i = 0; i < ARRAY_SIZE(sq); i++) {
		if (qhca_sq_size(1, sq[i].sge, sq[i].inl, &sqs) ||
		    sqs.log_stride != sq[i].log ||
		    sqs.max_sge != sq[i].act_sge ||
		    sqs.max_inline != sq[i].act_inl) {
			diag("sq sge %u inline %u: log %u sge %u inline %u",
			     sq[i].sge, sq[i].inl, sqs.log_stride, sqs.max_sge,
			     sqs.max_inline);
			good = false;
		}
	}
	ok(good, "send stride: pow2(64 + max(16*sge, inline)) >= 64, caps from the stride");

	good = true;
	for (i = 0; i < ARRAY_SIZE(rq); i++) {
		if (qhca_rq_size(1, rq[i].sge, &rqs) ||
		    rqs.log_stride != rq[i].log ||
		    rqs.max_sge != rq[i].act_sge) {
			diag("rq sge %u: log %u sge %u", rq[i].sge,
			     rqs.log_stride, rqs.max_sge);
			good = false;
		}
	}
	ok(good, "recv stride: pow2(16 + 16*sge) >= 32, max_sge from the stride");

	good = true;
	for (i = 0; i < ARRAY_SIZE(dq); i++) {
		if (qhca_wq_depth(dq[i].wr, &depth) || depth != dq[i].depth ||
		    qhca_sq_size(dq[i].wr, 1, 0, &sqs) ||
		    sqs.depth != dq[i].depth ||
		    qhca_rq_size(dq[i].wr, 1, &rqs) ||
		    rqs.depth != dq[i].depth) {
			diag("depth for %u wr: %u", dq[i].wr, depth);
			good = false;
		}
	}
	ok(good, "queue depth: next power of two, at least 8");

	ok(qhca_sq_size(1, QHCA_MAX_SGE + 1, 0, &sqs) == EINVAL &&
	   qhca_sq_size(1, 0, QHCA_MAX_INLINE + 1, &sqs) == EINVAL &&
	   qhca_rq_size(1, QHCA_MAX_SGE + 1, &rqs) == EINVAL &&
	   qhca_sq_size(32769, 1, 0, &sqs) == EINVAL &&
	   qhca_rq_size(32769, 1, &rqs) == EINVAL &&
	   qhca_wq_depth(UINT32_MAX, &depth) == EINVAL,
	   "sizes above QHCA_MAX_SGE/QHCA_MAX_INLINE/32768 are EINVAL");

	ok(qhca_cq_depth(0, &depth) == EINVAL &&
	   qhca_cq_depth(-1, &depth) == EINVAL &&
	   qhca_cq_depth(32769, &depth) == EINVAL &&
	   !qhca_cq_depth(1, &depth) && depth == 8 &&
	   !qhca_cq_depth(100, &depth) && depth == 128 &&
	   !qhca_cq_depth(32768, &depth) && depth == 32768,
	   "CQ depth: next power of two of cqe, at least 8, at most 32768");

	/*
	 * The provider sends the actual caps to the kernel, which recomputes
	 * the strides from them: that must give the same strides, and the
	 * actual caps must cover what was asked.
	 */
	good = true;
	for (sge = 0; sge <= QHCA_MAX_SGE; sge++) {
		for (inl = 0; inl <= QHCA_MAX_INLINE; inl++) {
			if (qhca_sq_size(1, sge, inl, &sqs) ||
			    qhca_sq_size(sqs.depth, sqs.max_sge,
					 sqs.max_inline, &sqs2) ||
			    sqs2.log_stride != sqs.log_stride ||
			    sqs2.max_sge != sqs.max_sge ||
			    sqs2.max_inline != sqs.max_inline ||
			    sqs.max_sge < sge || sqs.max_inline < inl ||
			    W_HDR + W_SGE * sqs.max_sge >
				    (1u << sqs.log_stride) ||
			    W_HDR + sqs.max_inline > (1u << sqs.log_stride))
				good = false;
		}
		if (qhca_rq_size(1, sge, &rqs) ||
		    qhca_rq_size(rqs.depth, rqs.max_sge, &rqs2) ||
		    rqs2.log_stride != rqs.log_stride ||
		    rqs.max_sge < sge ||
		    R_HDR + W_SGE * rqs.max_sge > (1u << rqs.log_stride))
			good = false;
	}
	ok(good, "sizing is idempotent on the actual caps (driver recomputes the same strides)");
}

/*
 * The kernel's create responses against the provider's own geometry:
 * responses as a kernel with QHCA_CREATE_RESP_GEOMETRY writes them (values
 * spelled out here from docs/abi.md, not computed), each field changed in
 * turn, and responses of a kernel module from before the geometry fields.
 */
void test_create_resp(void)
{
	struct qhca_context *ctx = new_ctx();
	struct qhca_cq *cq = new_cq(ctx, 16, 1);
	struct qhca_srq *srq = new_srq(ctx, 8, 1, 3);
	struct qp_spec spec = {
		.type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.scq = cq, .rcq = cq, .qpn = 2,
	};
	struct qhca_qp *qp = new_qp(ctx, &spec), *sqp;
	/* 16 x 1 SGE: send stride 128 (4 SGEs or 64 bytes inline), recv 32 */
	const struct qhca_create_qp_resp qgood = {
		.qpn = 2, .sq_depth = 16, .rq_depth = 16,
		.comp_mask = QHCA_CREATE_RESP_GEOMETRY,
		.sq_log_stride = 7, .rq_log_stride = 5,
		.max_send_sge = 4, .max_recv_sge = 1, .max_inline = 64,
	};
	const struct qhca_create_srq_resp sgood = {
		.srqn = 3, .depth = 8, .comp_mask = QHCA_CREATE_RESP_GEOMETRY,
		.log_stride = 5, .max_sge = 1,
	};
	const struct qhca_create_cq_resp cgood = {
		.cqn = 1, .depth = 16, .comp_mask = QHCA_CREATE_RESP_GEOMETRY,
		.log_stride = 5,
	};
	/* the fields of the geometry, by offset */
	static const size_t qfields[] = {
		offsetof(struct qhca_create_qp_resp, sq_depth),
		offsetof(struct qhca_create_qp_resp, rq_depth),
		offsetof(struct qhca_create_qp_resp, sq_log_stride),
		offsetof(struct qhca_create_qp_resp, rq_log_stride),
		offsetof(struct qhca_create_qp_resp, max_send_sge),
		offsetof(struct qhca_create_qp_resp, max_recv_sge),
		offsetof(struct qhca_create_qp_resp, max_inline),
	};
	static const size_t sfields[] = {
		offsetof(struct qhca_create_srq_resp, depth),
		offsetof(struct qhca_create_srq_resp, log_stride),
		offsetof(struct qhca_create_srq_resp, max_sge),
	};
	static const size_t cfields[] = {
		offsetof(struct qhca_create_cq_resp, depth),
		offsetof(struct qhca_create_cq_resp, log_stride),
	};
	static const uint32_t deltas[] = { 1, 0xffffffffu, 8, 0x80000000u };
	struct qhca_create_qp_resp qr;
	struct qhca_create_srq_resp sr;
	struct qhca_create_cq_resp cr;
	size_t i, j;
	bool good;

	ok(qhca_check_qp_resp(&qgood, &qp->sq, &qp->rq) == 0 &&
	   qhca_check_srq_resp(&sgood, &srq->wq) == 0 &&
	   qhca_check_cq_resp(&cgood, cq->depth) == 0,
	   "create responses: the kernel's geometry equal to the provider's is accepted (CQ, QP, SRQ)");

	good = true;
	for (i = 0; i < ARRAY_SIZE(qfields); i++) {
		for (j = 0; j < ARRAY_SIZE(deltas); j++) {
			qr = qgood;
			put32((uint8_t *)&qr, qfields[i],
			      get32((uint8_t *)&qr + qfields[i]) + deltas[j]);
			if (qhca_check_qp_resp(&qr, &qp->sq, &qp->rq) != EINVAL) {
				diag("QP response field at %zu + %#x accepted",
				     qfields[i], deltas[j]);
				good = false;
			}
		}
	}
	for (i = 0; i < ARRAY_SIZE(sfields); i++) {
		for (j = 0; j < ARRAY_SIZE(deltas); j++) {
			sr = sgood;
			put32((uint8_t *)&sr, sfields[i],
			      get32((uint8_t *)&sr + sfields[i]) + deltas[j]);
			if (qhca_check_srq_resp(&sr, &srq->wq) != EINVAL) {
				diag("SRQ response field at %zu + %#x accepted",
				     sfields[i], deltas[j]);
				good = false;
			}
		}
	}
	for (i = 0; i < ARRAY_SIZE(cfields); i++) {
		for (j = 0; j < ARRAY_SIZE(deltas); j++) {
			cr = cgood;
			put32((uint8_t *)&cr, cfields[i],
			      get32((uint8_t *)&cr + cfields[i]) + deltas[j]);
			if (qhca_check_cq_resp(&cr, cq->depth) != EINVAL) {
				diag("CQ response field at %zu + %#x accepted",
				     cfields[i], deltas[j]);
				good = false;
			}
		}
	}
	ok(good, "create responses: any geometry field differing from the provider's fails the create (EINVAL)");

	/* A QP on an SRQ has no RQ: the kernel returns zeros for it */
	spec.srq = srq;
	spec.qpn = 4;
	spec.cap.max_recv_wr = 0;
	spec.cap.max_recv_sge = 0;
	sqp = new_qp(ctx, &spec);
	qr = qgood;
	qr.qpn = 4;
	qr.rq_depth = 0;
	qr.rq_log_stride = 0;
	qr.max_recv_sge = 0;
	good = qhca_check_qp_resp(&qr, &sqp->sq, &sqp->rq) == 0;
	qr.max_recv_sge = 1;
	good = good && qhca_check_qp_resp(&qr, &sqp->sq, &sqp->rq) == EINVAL;
	ok(good, "create responses: a QP on an SRQ matches only with an empty RQ geometry");

	/*
	 * A kernel module from before the geometry fields: comp_mask 0 (the
	 * QP's was "reserved"), fields past it not written (0), depths equal.
	 */
	qr = (struct qhca_create_qp_resp){ .qpn = 2, .sq_depth = 16,
					   .rq_depth = 16 };
	sr = (struct qhca_create_srq_resp){ .srqn = 3, .depth = 8 };
	cr = (struct qhca_create_cq_resp){ .cqn = 1, .depth = 16 };
	good = qhca_check_qp_resp(&qr, &qp->sq, &qp->rq) == 0 &&
	       qhca_check_srq_resp(&sr, &srq->wq) == 0 &&
	       qhca_check_cq_resp(&cr, cq->depth) == 0;
	qr.sq_depth = 32;
	sr.depth = 16;
	cr.depth = 32;
	good = good && qhca_check_qp_resp(&qr, &qp->sq, &qp->rq) == EINVAL &&
	       qhca_check_srq_resp(&sr, &srq->wq) == EINVAL &&
	       qhca_check_cq_resp(&cr, cq->depth) == EINVAL;
	qr.sq_depth = 16;
	qr.rq_depth = 8;
	good = good && qhca_check_qp_resp(&qr, &qp->sq, &qp->rq) == EINVAL;
	ok(good, "create responses: an older kernel module (no QHCA_CREATE_RESP_GEOMETRY) is checked on its depths only");

	free_qp(ctx, sqp);
	free_qp(ctx, qp);
	free_srq(srq);
	free_cq(cq);
	free_ctx(ctx);
}

/* create_* validation happens before any kernel command */
void test_create_validation(void)
{
	struct qhca_context *ctx = new_ctx();
	struct ibv_context *ibctx = &ctx->ibv_ctx.context;
	struct qhca_cq *cq = new_cq(ctx, 8, 1);
	struct ibv_pd pd = { .context = ibctx };
	struct ibv_cq_init_attr_ex cattr = { .cqe = 8 };
	struct ibv_qp_init_attr_ex qattr = {
		.qp_type = IBV_QPT_UD,
		.send_cq = &cq->vcq.cq,
		.recv_cq = &cq->vcq.cq,
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = &pd,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1 },
	};

	qattr.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE;
	errno = 0;
	ok(!qhca_create_qp_ex(ibctx, &qattr) && errno == EOPNOTSUPP,
	   "create_qp_ex: RDMA_WRITE in send_ops_flags of a UD QP is EOPNOTSUPP");

	qattr.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_BIND_MW;
	errno = 0;
	ok(!qhca_create_qp_ex(ibctx, &qattr) && errno == EOPNOTSUPP,
	   "create_qp_ex: BIND_MW in send_ops_flags of a UD QP is EOPNOTSUPP");
	qattr.qp_type = IBV_QPT_RC;
	ok(qhca_check_qp_attr(ctx, &qattr) == 0,
	   "create_qp_ex: BIND_MW in send_ops_flags of an RC QP passes the provider's checks");

	/* IBV_QP_INIT_ATTR_CREATE_FLAGS with no flag is a plain create */
	qattr.send_ops_flags = IBV_QP_EX_WITH_SEND;
	qattr.comp_mask |= IBV_QP_INIT_ATTR_CREATE_FLAGS;
	qattr.create_flags = IBV_QP_CREATE_SCATTER_FCS;
	errno = 0;
	ok(!qhca_create_qp_ex(ibctx, &qattr) && errno == EOPNOTSUPP,
	   "create_qp_ex: a create flag the device cannot honour is EOPNOTSUPP");
	qattr.create_flags = 0;
	ok(qhca_check_qp_attr(ctx, &qattr) == 0,
	   "create_qp_ex: IBV_QP_INIT_ATTR_CREATE_FLAGS with create_flags 0 passes the provider's checks");
	qattr.comp_mask &= ~IBV_QP_INIT_ATTR_CREATE_FLAGS;

	qattr.qp_type = IBV_QPT_UC;
	qattr.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE |
			       IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM;
	ok(qhca_check_qp_attr(ctx, &qattr) == 0,
	   "create_qp_ex: a UC QP with SEND and RDMA WRITE passes the provider's checks");
	qattr.send_ops_flags |= IBV_QP_EX_WITH_RDMA_READ;
	errno = 0;
	ok(!qhca_create_qp_ex(ibctx, &qattr) && errno == EOPNOTSUPP,
	   "create_qp_ex: RDMA_READ in send_ops_flags of a UC QP is EOPNOTSUPP");
	{
		uint8_t hw = 0xff;

		ok(qhca_wr_opcode(IBV_WR_RDMA_WRITE_WITH_IMM, IBV_QPT_UC, &hw) == 0 &&
		   hw == QHCA_WQE_RDMA_WRITE_WITH_IMM &&
		   qhca_wr_opcode(IBV_WR_RDMA_READ, IBV_QPT_UC, &hw) == EINVAL &&
		   qhca_wr_opcode(IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_QPT_UC, &hw) == EINVAL &&
		   qhca_wr_opcode(IBV_WR_SEND_WITH_INV, IBV_QPT_UC, &hw) == EINVAL &&
		   qhca_wr_opcode(IBV_WR_RDMA_WRITE, IBV_QPT_UD, &hw) == EINVAL,
		   "wr opcodes: a UC QP writes, it does not read, do atomics or send with invalidate");
	}
	qattr.send_ops_flags = IBV_QP_EX_WITH_SEND;
	qattr.qp_type = IBV_QPT_XRC_SEND;
	errno = 0;
	ok(!qhca_create_qp_ex(ibctx, &qattr) && errno == EOPNOTSUPP,
	   "create_qp_ex: XRC QPs are EOPNOTSUPP");

	qattr.qp_type = IBV_QPT_RC;
	qattr.cap.max_send_sge = QHCA_MAX_SGE + 1;
	errno = 0;
	ok(!qhca_create_qp_ex(ibctx, &qattr) && errno == EINVAL &&
	   qattr.cap.max_send_sge == QHCA_MAX_SGE + 1,
	   "create_qp_ex: max_send_sge above QHCA_MAX_SGE is EINVAL, caps untouched");
	qattr.cap.max_send_sge = 1;
	qattr.cap.max_inline_data = QHCA_MAX_INLINE + 1;
	errno = 0;
	ok(!qhca_create_qp_ex(ibctx, &qattr) && errno == EINVAL,
	   "create_qp_ex: max_inline_data above QHCA_MAX_INLINE is EINVAL");

	cattr.wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
	errno = 0;
	ok(!qhca_create_cq_ex(ibctx, &cattr) && errno == EOPNOTSUPP,
	   "create_cq_ex: completion timestamps are EOPNOTSUPP");
	cattr.wc_flags = IBV_WC_STANDARD_FLAGS;
	cattr.cqe = 0;
	errno = 0;
	ok(!qhca_create_cq_ex(ibctx, &cattr) && errno == EINVAL,
	   "create_cq_ex: cqe 0 is EINVAL");
	errno = 0;
	ok(!qhca_create_cq(ibctx, 32769, NULL, 0) && errno == EINVAL,
	   "create_cq: cqe above 32768 is EINVAL");

	free_cq(cq);
	free_ctx(ctx);
}
