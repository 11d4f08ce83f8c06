// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Provider data-path tests (unit-datapath.c, datapath.h): memory windows
 * bound by ibv_bind_mw(), IBV_WR_BIND_MW and ibv_wr_bind_mw(), and the local
 * rights a bind accepts and leaves out of the WQE.
 */

#include <config.h>

#include "datapath.h"

/*
 * Memory windows: ibv_bind_mw() of a type 1 window and IBV_WR_BIND_MW of a
 * type 2 one through ibv_post_send() post a BIND_MW WQE with the window's
 * key now and its next one, which is the window's rkey once posted (and
 * not if the post fails)
 */
void test_bind_mw(void)
{
	struct qhca_context *ctx = new_ctx();
	struct qhca_cq *cq = new_cq(ctx, 16, 1);
	struct qp_spec s = {
		.type = IBV_QPT_RC, .scq = cq, .rcq = cq, .qpn = 0x72,
		.cap = { .max_send_wr = 8, .max_send_sge = 1,
			 .max_recv_wr = 1, .max_recv_sge = 1 },
	};
	struct qhca_qp *qp = new_qp(ctx, &s);
	struct ibv_qp *ibqp = &qp->vqp.qp;
	struct ibv_mr mr = { .lkey = 0x1201 };
	struct ibv_mw mw1 = { .rkey = 0x3400 | 0xff, .type = IBV_MW_TYPE_1 };
	struct ibv_mw mw2 = { .rkey = 0x5610, .type = IBV_MW_TYPE_2 };
	struct ibv_mw_bind mb = {
		.wr_id = 40, .send_flags = IBV_SEND_SIGNALED,
		.bind_info = { .mr = &mr, .addr = 0x7000, .length = 0x800,
			       .mw_access_flags = IBV_ACCESS_REMOTE_READ |
						  IBV_ACCESS_REMOTE_WRITE },
	};
	struct ibv_send_wr wr[2], *bad;
	struct ibv_wc wc;
	uint8_t e[W_HDR];
	uint32_t i;
	bool good;

	ok(qhca_bind_mw(ibqp, &mw1, &mb) == 0 && mw1.rkey == 0x3400 &&
	   db_val(ctx, QHCA_DB_SQ) == (0x72 | 1 << 16),
	   "ibv_bind_mw (type 1): posted with one doorbell; the rkey's low byte wraps 0xff -> 0x00 (ibv_inc_rkey)");
	exp_hdr(e, OP_BIND_MW, F_SIGNALED, 0, 0, 40);
	put64(e, W_BADDR, 0x7000);
	put64(e, W_BLEN, 0x800);
	put32(e, W_BMR, 0x1201);
	put32(e, W_BMW, 0x34ff);
	put32(e, W_BNEW, 0x3400);
	put32(e, W_BACCESS, A_REMOTE_READ | A_REMOTE_WRITE);
	ok(same_bytes(qhca_wq_entry(&qp->sq, 0), e, W_HDR, "bind type 1"),
	   "ibv_bind_mw (type 1): BIND_MW WQE with the old key, the new key, the MR's lkey, range and rights");

	/* unbind: no MR, length 0 */
	memset(&mb.bind_info, 0, sizeof(mb.bind_info));
	mb.wr_id = 41;
	mb.send_flags = 0;
	ok(qhca_bind_mw(ibqp, &mw1, &mb) == 0 && mw1.rkey == 0x3401,
	   "ibv_bind_mw (type 1) unbind: posted, the key moves on again");
	exp_hdr(e, OP_BIND_MW, 0, 0, 0, 41);
	put32(e, W_BMW, 0x3400);
	put32(e, W_BNEW, 0x3401);
	ok(same_bytes(qhca_wq_entry(&qp->sq, 1), e, W_HDR, "unbind type 1"),
	   "ibv_bind_mw (type 1) unbind: length 0, MR lkey 0, no rights");

	mb.bind_info.mw_access_flags = IBV_ACCESS_ZERO_BASED;
	good = qhca_bind_mw(ibqp, &mw1, &mb) == EINVAL;
	mb.bind_info.mw_access_flags = 0;
	good = good && qhca_bind_mw(ibqp, &mw2, &mb) == EINVAL;
	mb.send_flags = IBV_SEND_IP_CSUM;
	good = good && qhca_bind_mw(ibqp, &mw1, &mb) == EINVAL;
	mb.send_flags = 0;
	ibqp->state = IBV_QPS_RTR;
	good = good && qhca_bind_mw(ibqp, &mw1, &mb) == EINVAL;
	ibqp->state = IBV_QPS_RTS;
	ok(good && mw1.rkey == 0x3401 && mw2.rkey == 0x5610 &&
	   qp->sq.pi == 2 && db_val(ctx, QHCA_DB_SQ) == (0x72 | 2 << 16),
	   "ibv_bind_mw: zero-based rights, a type 2 window, a bad send flag, a QP before RTS are EINVAL; nothing posted, the keys stay");

	/* type 2 through ibv_post_send: the second WR of a chain is bad */
	memset(wr, 0, sizeof(wr));
	wr[0].wr_id = 42;
	wr[0].opcode = IBV_WR_BIND_MW;
	wr[0].bind_mw.mw = &mw2;
	wr[0].bind_mw.rkey = ibv_inc_rkey(mw2.rkey);
	wr[0].bind_mw.bind_info.mr = &mr;
	wr[0].bind_mw.bind_info.addr = 0x7100;
	wr[0].bind_mw.bind_info.length = 0x100;
	wr[0].bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
	wr[0].next = &wr[1];
	wr[1] = wr[0];
	wr[1].next = NULL;
	wr[1].bind_mw.bind_info.length = 0;
	ok(qhca_post_send(ibqp, &wr[0], &bad) == EINVAL && bad == &wr[1] &&
	   mw2.rkey == 0x5611 && qp->sq.pi == 3,
	   "ibv_post_send IBV_WR_BIND_MW (type 2): the window's rkey is the new key once posted; the bad WR after it changes nothing");
	exp_hdr(e, OP_BIND_MW, 0, 0, 0, 42);
	put64(e, W_BADDR, 0x7100);
	put64(e, W_BLEN, 0x100);
	put32(e, W_BMR, 0x1201);
	put32(e, W_BMW, 0x5610);
	put32(e, W_BNEW, 0x5611);
	put32(e, W_BACCESS, A_REMOTE_WRITE);
	ok(same_bytes(qhca_wq_entry(&qp->sq, 2), e, W_HDR, "bind type 2"),
	   "ibv_post_send IBV_WR_BIND_MW: the WQE has the old key and the new");

	/* fill the SQ (8): the bind that does not fit keeps its key */
	for (i = 3; i < 8; i++)
		if (qhca_bind_mw(ibqp, &mw1, &mb))
			break;
	ok(i == 8 && mw1.rkey == 0x3406 && qhca_bind_mw(ibqp, &mw1, &mb) ==
	   ENOMEM && mw1.rkey == 0x3406,
	   "ibv_bind_mw on a full SQ is ENOMEM, the key stays");

	/* the device completes the first bind: IBV_WC_BIND_MW */
	dev_complete(cq, 0, 0x72, CO_BIND_MW, 0, 40);
	ok(qhca_poll_cq(&cq->vcq.cq, 1, &wc) == 1 && wc.wr_id == 40 &&
	   wc.opcode == IBV_WC_BIND_MW && wc.status == IBV_WC_SUCCESS &&
	   qp->sq.ci == 1,
	   "a BIND_MW completion polls as IBV_WC_BIND_MW and frees its SQ entry");

	free_qp(ctx, qp);
	free_cq(cq);
	free_ctx(ctx);
}

/*
 * ibv_wr_bind_mw() (type 2): the WQE as through ibv_post_send(); the
 * window's rkey changes when wr_complete() posts it, not before, and not
 * after wr_abort() or a failed batch
 */
void test_wr_bind_mw(void)
{
	struct qhca_context *ctx = new_ctx();
	struct qhca_cq *cq = new_cq(ctx, 16, 1);
	struct qp_spec s = {
		.type = IBV_QPT_RC, .scq = cq, .rcq = cq, .qpn = 0x73,
		.cap = { .max_send_wr = 8, .max_send_sge = 1,
			 .max_recv_wr = 1, .max_recv_sge = 1 },
		.send_ops = IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_SEND,
	};
	struct qhca_qp *qp = new_qp(ctx, &s);
	struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(&qp->vqp.qp);
	struct ibv_mr mr = { .lkey = 0x1301 };
	struct ibv_mw mwa = { .rkey = 0x8820, .type = IBV_MW_TYPE_2 };
	struct ibv_mw mwb = { .rkey = 0x9930, .type = IBV_MW_TYPE_2 };
	struct ibv_mw mw1 = { .rkey = 0xaa40, .type = IBV_MW_TYPE_1 };
	struct ibv_mw_bind_info bi = {
		.mr = &mr, .addr = 0x4000, .length = 0x2000,
		.mw_access_flags = IBV_ACCESS_REMOTE_READ,
	};
	uint8_t e[W_HDR];
	bool good;

	ok(qpx->wr_bind_mw != NULL && qp->sq_mw != NULL,
	   "wr API: IBV_QP_EX_WITH_BIND_MW gives wr_bind_mw");

	ibv_wr_start(qpx);
	qpx->wr_id = 50;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_bind_mw(qpx, &mwa, 0x8821, &bi);
	good = mwa.rkey == 0x8820;
	qpx->wr_id = 51;
	qpx->wr_flags = 0;
	ibv_wr_send(qpx);
	qpx->wr_id = 52;
	ibv_wr_bind_mw(qpx, &mwb, 0x9955, &bi);
	ok(good && ibv_wr_complete(qpx) == 0 && mwa.rkey == 0x8821 &&
	   mwb.rkey == 0x9955 && db_val(ctx, QHCA_DB_SQ) == (0x73 | 3 << 16),
	   "wr API: two binds and a send in one batch; each window has its new rkey after wr_complete, not before");
	exp_hdr(e, OP_BIND_MW, F_SIGNALED, 0, 0, 50);
	put64(e, W_BADDR, 0x4000);
	put64(e, W_BLEN, 0x2000);
	put32(e, W_BMR, 0x1301);
	put32(e, W_BMW, 0x8820);
	put32(e, W_BNEW, 0x8821);
	put32(e, W_BACCESS, A_REMOTE_READ);
	good = same_bytes(qhca_wq_entry(&qp->sq, 0), e, W_HDR, "wr bind a");
	exp_hdr(e, OP_BIND_MW, 0, 0, 0, 52);
	put64(e, W_BADDR, 0x4000);
	put64(e, W_BLEN, 0x2000);
	put32(e, W_BMR, 0x1301);
	put32(e, W_BMW, 0x9930);
	put32(e, W_BNEW, 0x9955);
	put32(e, W_BACCESS, A_REMOTE_READ);
	good = good && same_bytes(qhca_wq_entry(&qp->sq, 2), e, W_HDR,
				  "wr bind b");
	ok(good, "wr API: BIND_MW WQEs as with ibv_post_send");

	ibv_wr_start(qpx);
	ibv_wr_bind_mw(qpx, &mwa, 0x8822, &bi);
	ibv_wr_abort(qpx);
	ok(mwa.rkey == 0x8821 && qp->sq.pi == 3,
	   "wr API: wr_abort of a bind leaves the window's rkey");

	ibv_wr_start(qpx);
	ibv_wr_bind_mw(qpx, &mwa, 0x8822, &bi);
	ibv_wr_bind_mw(qpx, &mw1, 0xaa41, &bi);
	ok(ibv_wr_complete(qpx) == EINVAL && mwa.rkey == 0x8821 &&
	   mw1.rkey == 0xaa40 && qp->sq.pi == 3,
	   "wr API: a type 1 window is EINVAL (ibv_bind_mw() only); the batch fails, no rkey changes");

	ibv_wr_start(qpx);
	ibv_wr_bind_mw(qpx, &mwa, 0x8822, &bi);
	ibv_wr_set_sge(qpx, 0x1301, 0x4000, 8);
	good = ibv_wr_complete(qpx) == EINVAL;
	bi.length = 0;
	ibv_wr_start(qpx);
	ibv_wr_bind_mw(qpx, &mwa, 0x8822, &bi);
	good = good && ibv_wr_complete(qpx) == EINVAL;
	bi.length = 8;
	bi.mw_access_flags = IBV_ACCESS_ZERO_BASED | IBV_ACCESS_REMOTE_READ;
	ibv_wr_start(qpx);
	ibv_wr_bind_mw(qpx, &mwa, 0x8822, &bi);
	good = good && ibv_wr_complete(qpx) == EINVAL;
	ok(good && mwa.rkey == 0x8821 && qp->sq.pi == 3,
	   "wr API: a bind with an SGE, of length 0, of a zero-based window is EINVAL");

	free_qp(ctx, qp);
	free_cq(cq);
	free_ctx(ctx);
}

/*
 * Local rights in a bind: programs pass their MR's own flags
 * (LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ | MW_BIND), as Soft-RoCE and
 * mlx5 take them.  ibv_bind_mw(), IBV_WR_BIND_MW and ibv_wr_bind_mw()
 * accept the flags that mean nothing to a window and leave them out of the
 * WQE, which carries the remote rights alone; a zero-based window, remote
 * rights no window of the device grants and bits rdma-core does not name
 * stay EINVAL, with nothing posted
 */
void test_bind_mw_local_rights(void)
{
	struct qhca_context *ctx = new_ctx();
	struct qhca_cq *cq = new_cq(ctx, 16, 1);
	struct qp_spec s = {
		.type = IBV_QPT_RC, .scq = cq, .rcq = cq, .qpn = 0x74,
		.cap = { .max_send_wr = 8, .max_send_sge = 1,
			 .max_recv_wr = 1, .max_recv_sge = 1 },
		.send_ops = IBV_QP_EX_WITH_BIND_MW,
	};
	struct qhca_qp *qp = new_qp(ctx, &s);
	struct ibv_qp *ibqp = &qp->vqp.qp;
	struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(ibqp);
	const unsigned int mr_flags = IBV_ACCESS_LOCAL_WRITE |
				      IBV_ACCESS_REMOTE_WRITE |
				      IBV_ACCESS_REMOTE_READ |
				      IBV_ACCESS_MW_BIND;
	static const unsigned int ignored[] = {
		IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_MW_BIND,
		IBV_ACCESS_ON_DEMAND, IBV_ACCESS_HUGETLB,
		IBV_ACCESS_RELAXED_ORDERING,
	};
	static const unsigned int refused[] = {
		IBV_ACCESS_ZERO_BASED,
#ifdef QHCA_HAVE_IBV_FLUSH
		IBV_ACCESS_FLUSH_GLOBAL, IBV_ACCESS_FLUSH_PERSISTENT,
#endif
		1u << 10, 1u << 19, 1u << 30, 1u << 31,
	};
	struct ibv_mr mr = { .lkey = 0x1401 };
	struct ibv_mw mw1 = { .rkey = 0x4410, .type = IBV_MW_TYPE_1 };
	struct ibv_mw mw2 = { .rkey = 0x5520, .type = IBV_MW_TYPE_2 };
	struct ibv_mw mw3 = { .rkey = 0x6630, .type = IBV_MW_TYPE_2 };
	struct ibv_mw_bind mb = {
		.wr_id = 60, .send_flags = IBV_SEND_SIGNALED,
		.bind_info = { .mr = &mr, .addr = 0x9000, .length = 0x400,
			       .mw_access_flags = mr_flags },
	};
	struct ibv_send_wr wr, *bad;
	uint8_t e[W_HDR];
	uint32_t access;
	bool good;
	size_t i;

	good = qhca_mw_access(mr_flags, &access) == 0 &&
	       access == (A_REMOTE_WRITE | A_REMOTE_READ);
	for (i = 0; i < ARRAY_SIZE(ignored); i++) {
		access = 0xff;
		if (qhca_mw_access(ignored[i] | IBV_ACCESS_REMOTE_ATOMIC,
				   &access) || access != A_REMOTE_ATOMIC)
			good = false;
	}
	for (i = 0; i < ARRAY_SIZE(refused); i++)
		if (qhca_mw_access(refused[i] | IBV_ACCESS_REMOTE_WRITE,
				   &access) != EINVAL)
			good = false;
	ok(good, "bind rights: local write, MW_BIND, ON_DEMAND, HUGETLB and relaxed ordering are ignored (the remote rights are kept); zero-based, FLUSH (rdma-core 45+) and unnamed bits are EINVAL");

	/* ibv_bind_mw (type 1) */
	ok(qhca_bind_mw(ibqp, &mw1, &mb) == 0 && mw1.rkey == 0x4411 &&
	   qp->sq.pi == 1,
	   "ibv_bind_mw with the MR's flags (LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ | MW_BIND) is posted");
	exp_hdr(e, OP_BIND_MW, F_SIGNALED, 0, 0, 60);
	put64(e, W_BADDR, 0x9000);
	put64(e, W_BLEN, 0x400);
	put32(e, W_BMR, 0x1401);
	put32(e, W_BMW, 0x4410);
	put32(e, W_BNEW, 0x4411);
	put32(e, W_BACCESS, A_REMOTE_WRITE | A_REMOTE_READ);
	ok(same_bytes(qhca_wq_entry(&qp->sq, 0), e, W_HDR, "bind mr flags"),
	   "ibv_bind_mw with the MR's flags: the WQE's rights are remote write and read alone");

	/* IBV_WR_BIND_MW (type 2) through ibv_post_send */
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 61;
	wr.opcode = IBV_WR_BIND_MW;
	wr.bind_mw.mw = &mw2;
	wr.bind_mw.rkey = 0x5521;
	wr.bind_mw.bind_info = mb.bind_info;
	ok(qhca_post_send(ibqp, &wr, &bad) == 0 && mw2.rkey == 0x5521 &&
	   qp->sq.pi == 2,
	   "ibv_post_send IBV_WR_BIND_MW with the MR's flags is posted");
	exp_hdr(e, OP_BIND_MW, 0, 0, 0, 61);
	put64(e, W_BADDR, 0x9000);
	put64(e, W_BLEN, 0x400);
	put32(e, W_BMR, 0x1401);
	put32(e, W_BMW, 0x5520);
	put32(e, W_BNEW, 0x5521);
	put32(e, W_BACCESS, A_REMOTE_WRITE | A_REMOTE_READ);
	ok(same_bytes(qhca_wq_entry(&qp->sq, 1), e, W_HDR, "post mr flags"),
	   "ibv_post_send IBV_WR_BIND_MW with the MR's flags: the WQE's rights are remote write and read alone");

	/* ibv_wr_bind_mw (type 2) */
	ibv_wr_start(qpx);
	qpx->wr_id = 62;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_bind_mw(qpx, &mw3, 0x6631, &mb.bind_info);
	ok(ibv_wr_complete(qpx) == 0 && mw3.rkey == 0x6631 && qp->sq.pi == 3,
	   "ibv_wr_bind_mw with the MR's flags is posted");
	exp_hdr(e, OP_BIND_MW, F_SIGNALED, 0, 0, 62);
	put64(e, W_BADDR, 0x9000);
	put64(e, W_BLEN, 0x400);
	put32(e, W_BMR, 0x1401);
	put32(e, W_BMW, 0x6630);
	put32(e, W_BNEW, 0x6631);
	put32(e, W_BACCESS, A_REMOTE_WRITE | A_REMOTE_READ);
	ok(same_bytes(qhca_wq_entry(&qp->sq, 2), e, W_HDR, "wr mr flags"),
	   "ibv_wr_bind_mw with the MR's flags: the WQE's rights are remote write and read alone");

	/* zero-based: refused by each, nothing posted, no key moves */
	mb.bind_info.mw_access_flags = mr_flags | IBV_ACCESS_ZERO_BASED;
	good = qhca_bind_mw(ibqp, &mw1, &mb) == EINVAL;
	wr.bind_mw.rkey = 0x5522;
	wr.bind_mw.bind_info = mb.bind_info;
	good = good && qhca_post_send(ibqp, &wr, &bad) == EINVAL &&
	       bad == &wr;
	ibv_wr_start(qpx);
	ibv_wr_bind_mw(qpx, &mw3, 0x6632, &mb.bind_info);
	good = good && ibv_wr_complete(qpx) == EINVAL;
	ok(good && mw1.rkey == 0x4411 && mw2.rkey == 0x5521 &&
	   mw3.rkey == 0x6631 && qp->sq.pi == 3 &&
	   db_val(ctx, QHCA_DB_SQ) == (0x74 | 3 << 16),
	   "ibv_bind_mw, IBV_WR_BIND_MW and ibv_wr_bind_mw of a zero-based window (the MR's flags and IBV_ACCESS_ZERO_BASED) are EINVAL; nothing posted, the keys stay");

	free_qp(ctx, qp);
	free_cq(cq);
	free_ctx(ctx);
}
