// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Provider data-path tests (unit-datapath.c, datapath.h): the ibv_wr_*()
 * API on RC and UD QPs, and ATOMIC WRITE and FLUSH through it.
 */

#include <config.h>

#include "datapath.h"

/* ------------------------------------------------------------------------
 * ibv_wr_*() API
 */
void test_wr_api(void)
{
	struct qhca_context *ctx = new_ctx();
	struct qhca_cq *cq = new_cq(ctx, 16, 1);
	struct qp_spec s = {
		.type = IBV_QPT_RC, .scq = cq, .rcq = cq, .qpn = 0x70,
		.cap = { .max_send_wr = 8, .max_send_sge = 3,
			 .max_inline_data = 100, .max_recv_wr = 1,
			 .max_recv_sge = 1 },
		.send_ops = qhca_supported_send_ops(IBV_QPT_RC),
	};
	struct qhca_qp *qp = new_qp(ctx, &s);
	struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(&qp->vqp.qp);
	struct ibv_sge many_sges[13] = {};
	struct ibv_data_buf bufs[2];
	struct qhca_send_wqe *w;
	uint8_t data[300];
	uint8_t e[W_HDR];
	__be32 imm = htobe32(0x01020304);
	bool good;
	int i;

	for (i = 0; i < (int)sizeof(data); i++)
		data[i] = (uint8_t)i;

	ok(qpx && qpx->wr_send && qpx->wr_rdma_read && qpx->wr_local_inv &&
	   qpx->wr_atomic_cmp_swp && !qpx->wr_set_ud_addr && qpx->wr_bind_mw,
	   "wr API: RC QP gets the requested ops (bind_mw too), no UD address");

	ibv_wr_start(qpx);
	qpx->wr_id = 1;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(qpx, 0x55, 0x9000);
	ibv_wr_set_sge_list(qpx, 3, test_sges);
	qpx->wr_id = 2;
	qpx->wr_flags = 0;
	ibv_wr_send_imm(qpx, imm);
	ibv_wr_set_inline_data(qpx, data, 100);
	qpx->wr_id = 3;
	qpx->wr_flags = IBV_SEND_FENCE;
	ibv_wr_atomic_fetch_add(qpx, 0x66, 0xa000, 5);
	ibv_wr_set_sge(qpx, 0x300, 0x8000, 8);
	qpx->wr_id = 4;
	qpx->wr_flags = 0;
	bufs[0].addr = data;
	bufs[0].length = 60;
	bufs[1].addr = data + 60;
	bufs[1].length = 40;
	ibv_wr_send_inv(qpx, 0x1234);
	ibv_wr_set_inline_data_list(qpx, 2, bufs);
	qpx->wr_id = 5;
	ibv_wr_local_inv(qpx, 0x4321);
	ok(ibv_wr_complete(qpx) == 0 &&
	   db_val(ctx, QHCA_DB_SQ) == (0x70 | 5 << 16),
	   "wr API: 5 WRs, one doorbell qpn | 5 << 16");

	w = qhca_wq_entry(&qp->sq, 0);
	exp_hdr(e, OP_RDMA_WRITE, F_SIGNALED, 3, 0, 1);
	put64(e, W_RADDR, 0x9000);
	put32(e, W_RKEY, 0x55);
	good = same_bytes((uint8_t *)w, e, W_HDR, "wr rdma_write");
	w = qhca_wq_entry(&qp->sq, 1);
	exp_hdr(e, OP_SEND_IMM, F_INLINE, 0, 100, 2);
	memcpy(e + W_IMM, &imm, 4);
	good = good && same_bytes((uint8_t *)w, e, W_HDR, "wr send_imm") &&
	       !memcmp(w + 1, data, 100);
	w = qhca_wq_entry(&qp->sq, 2);
	exp_hdr(e, OP_FETCH_ADD, F_FENCE, 1, 0, 3);
	put64(e, W_RADDR, 0xa000);
	put32(e, W_RKEY, 0x66);
	put64(e, W_CMP_ADD, 5);
	good = good && same_bytes((uint8_t *)w, e, W_HDR, "wr fetch_add");
	w = qhca_wq_entry(&qp->sq, 3);
	exp_hdr(e, OP_SEND_INV, F_INLINE, 0, 100, 4);
	put32(e, W_INV_RKEY, 0x1234);
	good = good && same_bytes((uint8_t *)w, e, W_HDR, "wr send_inv") &&
	       !memcmp(w + 1, data, 100);
	w = qhca_wq_entry(&qp->sq, 4);
	exp_hdr(e, OP_LOCAL_INV, 0, 0, 0, 5);
	put32(e, W_INV_RKEY, 0x4321);
	good = good && same_bytes((uint8_t *)w, e, W_HDR, "wr local_inv");
	ok(good, "wr API: the five WQEs are encoded as with ibv_post_send");

	ibv_wr_start(qpx);
	qpx->wr_id = 6;
	qpx->wr_flags = 0;
	ibv_wr_send(qpx);
	ibv_wr_set_inline_data(qpx, data, 200);
	ok(ibv_wr_complete(qpx) == EINVAL && qp->sq.pi == 5 &&
	   db_val(ctx, QHCA_DB_SQ) == (0x70 | 5 << 16),
	   "wr API: inline above max_inline fails the batch, nothing posted");

	ibv_wr_start(qpx);
	ibv_wr_rdma_read(qpx, 1, 2);
	ibv_wr_set_inline_data(qpx, data, 8);
	ok(ibv_wr_complete(qpx) == EINVAL && qp->sq.pi == 5,
	   "wr API: inline data on RDMA_READ is EINVAL");

	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	ibv_wr_set_sge_list(qpx, 13, many_sges);
	ok(qp->sq.max_sge == 12 && ibv_wr_complete(qpx) == EINVAL &&
	   qp->sq.pi == 5, "wr API: too many SGEs is EINVAL");

	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	ibv_wr_abort(qpx);
	ok(qp->sq.pi == 5 && db_val(ctx, QHCA_DB_SQ) == (0x70 | 5 << 16),
	   "wr API: wr_abort posts nothing");

	ibv_wr_start(qpx);
	for (i = 0; i < 4; i++)
		ibv_wr_send(qpx);
	ok(ibv_wr_complete(qpx) == ENOMEM && qp->sq.pi == 5,
	   "wr API: more WRs than free SQ entries is ENOMEM, nothing posted");

	qp->vqp.qp.state = IBV_QPS_INIT;
	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	ok(ibv_wr_complete(qpx) == EINVAL && qp->sq.pi == 5,
	   "wr API: before RTS is EINVAL");

	free_qp(ctx, qp);
	free_cq(cq);
	free_ctx(ctx);
}

/*
 * ibv_wr_atomic_write() and ibv_wr_flush() (IBA 1.5, RC): everything in
 * the WQE, no SGEs
 */
void test_wr_placement(void)
{
	struct qhca_context *ctx = new_ctx();
	struct qhca_cq *cq = new_cq(ctx, 16, 1);
	struct qp_spec s = {
		.type = IBV_QPT_RC, .scq = cq, .rcq = cq, .qpn = 0x71,
		.cap = { .max_send_wr = 8, .max_send_sge = 1,
			 .max_recv_wr = 1, .max_recv_sge = 1 },
		.send_ops = qhca_supported_send_ops(IBV_QPT_RC),
	};
	struct qhca_qp *qp = new_qp(ctx, &s);
	struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(&qp->vqp.qp);
	uint8_t e[W_HDR];
	bool good;

	ok(qpx && qpx->wr_atomic_write &&
	   !(qhca_supported_send_ops(IBV_QPT_UC) &
	     IBV_QP_EX_WITH_ATOMIC_WRITE),
	   "wr API: RC QPs get wr_atomic_write, UC QPs may not ask for it");
	ibv_wr_start(qpx);
	qpx->wr_id = 1;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(qpx, 0x77, 0xb000, "ABCDEFGH");
	ok(ibv_wr_complete(qpx) == 0, "wr API: an ATOMIC WRITE is posted");
	exp_hdr(e, 0x0f, F_SIGNALED, 0, 0, 1);
	put64(e, W_RADDR, 0xb000);
	put32(e, W_RKEY, 0x77);
	memcpy(e + W_CMP_ADD, "ABCDEFGH", 8);
	good = same_bytes(qhca_wq_entry(&qp->sq, 0), e, W_HDR,
			  "wr atomic_write");
	ok(good, "wr API: ATOMIC WRITE: opcode 0x0f, its 8 bytes as they are");
#ifdef QHCA_HAVE_IBV_FLUSH
	ok(qpx->wr_flush != NULL, "wr API: RC QPs get wr_flush");
	ibv_wr_start(qpx);
	qpx->wr_id = 2;
	qpx->wr_flags = 0;
	ibv_wr_flush(qpx, 0x78, 0xc000, 4096, IBV_FLUSH_GLOBAL,
		     IBV_FLUSH_RANGE);
	qpx->wr_id = 3;
	ibv_wr_flush(qpx, 0x79, 0, 0, IBV_FLUSH_GLOBAL, IBV_FLUSH_MR);
	ok(ibv_wr_complete(qpx) == 0 && qp->sq.pi == 3,
	   "wr API: two FLUSHes are posted");
	exp_hdr(e, 0x0e, 0, 0, 0, 2);
	put64(e, W_RADDR, 0xc000);
	put32(e, W_RKEY, 0x78);
	put32(e, W_RKEY + 4, 1);
	put64(e, W_CMP_ADD, 4096);
	good = same_bytes(qhca_wq_entry(&qp->sq, 1), e, W_HDR, "wr flush");
	exp_hdr(e, 0x0e, 0, 0, 0, 3);
	put32(e, W_RKEY, 0x79);
	put32(e, W_RKEY + 4, 1 | 1 << 4);
	good = good && same_bytes(qhca_wq_entry(&qp->sq, 2), e, W_HDR,
				  "wr flush mr");
	ok(good, "wr API: FLUSH: opcode 0x0e, the FETH (type | level << 4) and the length");
	ibv_wr_start(qpx);
	ibv_wr_flush(qpx, 1, 0, 8, 0, IBV_FLUSH_RANGE);
	ok(ibv_wr_complete(qpx) == EINVAL && qp->sq.pi == 3,
	   "wr API: a FLUSH without a placement type is EINVAL, nothing posted");
	ibv_wr_start(qpx);
	ibv_wr_flush(qpx, 1, 0, 8, IBV_FLUSH_GLOBAL, 2);
	ok(ibv_wr_complete(qpx) == EINVAL && qp->sq.pi == 3,
	   "wr API: a FLUSH of selectivity level 2 is EINVAL");
	ibv_wr_start(qpx);
	ibv_wr_flush(qpx, 1, 0, 0x80000001ull, IBV_FLUSH_GLOBAL,
		     IBV_FLUSH_RANGE);
	ok(ibv_wr_complete(qpx) == EINVAL && qp->sq.pi == 3,
	   "wr API: a FLUSH of more than 2 GiB is EINVAL");
#endif
	free_qp(ctx, qp);
	free_cq(cq);
	free_ctx(ctx);
}

void test_wr_api_ud(void)
{
	struct qhca_context *ctx = new_ctx();
	struct qhca_cq *cq = new_cq(ctx, 16, 1);
	struct qp_spec s = {
		.type = IBV_QPT_UD, .scq = cq, .rcq = cq, .qpn = 0x71,
		.cap = { .max_send_wr = 8, .max_send_sge = 1,
			 .max_recv_wr = 8, .max_recv_sge = 1 },
		.send_ops = IBV_QP_EX_WITH_SEND,
	};
	struct qhca_qp *qp = new_qp(ctx, &s);
	struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(&qp->vqp.qp);
	struct qhca_ah ah = { .ahn = 0x2a };
	uint8_t e[W_HDR];

	ok(qpx->wr_send && !qpx->wr_send_imm && qpx->wr_set_ud_addr &&
	   !qpx->wr_rdma_write,
	   "wr API: UD QP with only SEND requested gets wr_send and wr_set_ud_addr");

	ibv_wr_start(qpx);
	qpx->wr_id = 77;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qpx);
	ibv_wr_set_ud_addr(qpx, &ah.ibv_ah, 0x123456, 0x11111111);
	ibv_wr_set_sge(qpx, 0x300, 0x8000, 8);
	exp_hdr(e, OP_SEND, F_SIGNALED, 1, 0, 77);
	put32(e, W_AHN, 0x2a);
	put32(e, W_RQPN, 0x123456);
	put32(e, W_QKEY, 0x11111111);
	ok(ibv_wr_complete(qpx) == 0 &&
	   same_bytes(qhca_wq_entry(&qp->sq, 0), e, W_HDR, "wr ud") &&
	   db_val(ctx, QHCA_DB_SQ) == (0x71 | 1 << 16),
	   "wr API: UD send with ahn/remote_qpn/remote_qkey");

	free_qp(ctx, qp);
	free_cq(cq);
	free_ctx(ctx);
}
