// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Provider data-path tests (unit-datapath.c, datapath.h): posting through
 * ibv_post_send(), ibv_post_recv() and ibv_post_srq_recv() (doorbells, full
 * queues, the slots completions free) and an SRQ resized.
 */

#include <config.h>

#include "datapath.h"

/* ------------------------------------------------------------------------
 * Posting
 */
void test_post_send(void)
{
	struct qhca_context *ctx = new_ctx();
	struct qhca_cq *scq = new_cq(ctx, 16, 1);
	struct qhca_cq *rcq = new_cq(ctx, 16, 2);
	struct qp_spec s = {
		.type = IBV_QPT_RC, .scq = scq, .rcq = rcq, .qpn = 0x1f2,
		.cap = { .max_send_wr = 5, .max_send_sge = 2,
			 .max_recv_wr = 3, .max_recv_sge = 1 },
	};
	struct qhca_qp *qp = new_qp(ctx, &s);
	struct ibv_qp *ibqp = &qp->vqp.qp;
	struct ibv_send_wr wr[10], *bad;
	struct ibv_recv_wr rwr[10], *rbad;
	struct ibv_wc wc[16];
	struct qhca_send_wqe *w;
	int i, ret;
	bool good;

	ok(qp->sq.depth == 8 && qp->sq.log_stride == 7 &&
	   qp->sq.max_sge == 4 && qp->sq.max_inline == 64 &&
	   qp->rq.depth == 8 && qp->rq.log_stride == 5 &&
	   qp->rq.max_sge == 1 &&
	   ((uintptr_t)qp->sq.buf & 4095) == 0 &&
	   ((uintptr_t)qp->rq.buf & 4095) == 0,
	   "RC QP: SQ 8 x 128 B, RQ 8 x 32 B, page aligned");

	memset(wr, 0, sizeof(wr));
	for (i = 0; i < 10; i++) {
		wr[i].wr_id = 100 + i;
		wr[i].opcode = IBV_WR_SEND;
		wr[i].sg_list = test_sges;
		wr[i].num_sge = 1;
		wr[i].next = i < 9 ? &wr[i + 1] : NULL;
	}

	ibqp->state = IBV_QPS_RTR;
	bad = NULL;
	ok(qhca_post_send(ibqp, &wr[0], &bad) == EINVAL && bad == &wr[0] &&
	   db_val(ctx, QHCA_DB_SQ) == 0,
	   "post_send before RTS: EINVAL, bad_wr = first, no doorbell");
	ibqp->state = IBV_QPS_RTS;

	wr[2].next = NULL;
	ok(qhca_post_send(ibqp, &wr[0], &bad) == 0 &&
	   db_val(ctx, QHCA_DB_SQ) == (0x1f2 | 3 << 16),
	   "post_send of 3: one SQ doorbell qpn | 3 << 16");
	w = qhca_wq_entry(&qp->sq, 1);
	ok(w->opcode == OP_SEND && le64toh(w->wr_id) == 101 &&
	   w->num_sge == 1 && (uint8_t *)w - (uint8_t *)qp->sq.buf == 128,
	   "the second WQE is at index 1 (offset 128)");

	/* an invalid WR in a chain: the ones before it are posted */
	wr[2].next = &wr[3];
	wr[4].num_sge = 5;
	bad = NULL;
	ret = qhca_post_send(ibqp, &wr[3], &bad);
	ok(ret == EINVAL && bad == &wr[4] &&
	   db_val(ctx, QHCA_DB_SQ) == (0x1f2 | 4 << 16),
	   "invalid WR mid-chain: EINVAL, bad_wr = it, the earlier one posted");
	wr[4].num_sge = 1;

	/* fill the SQ: 4 more fit (depth 8), the 5th is ENOMEM */
	bad = NULL;
	ret = qhca_post_send(ibqp, &wr[4], &bad);
	ok(ret == ENOMEM && bad == &wr[8] &&
	   db_val(ctx, QHCA_DB_SQ) == (0x1f2 | 8 << 16),
	   "SQ full: ENOMEM, bad_wr = first WR that did not fit, doorbell for the rest");
	wr[9].next = NULL;
	bad = NULL;
	ok(qhca_post_send(ibqp, &wr[9], &bad) == ENOMEM && bad == &wr[9],
	   "SQ still full without completions");

	/* signaled completion of index 4 frees 0..4 */
	dev_complete(scq, 0, 0x1f2, CO_SEND, 4, 104);
	good = qhca_poll_cq(&scq->vcq.cq, 16, wc) == 1 && wc[0].wr_id == 104 &&
	       qp->sq.ci == 5;
	wr[4].next = &wr[5];
	wr[9].next = NULL;
	bad = NULL;
	ret = qhca_post_send(ibqp, &wr[4], &bad);
	ok(good && ret == ENOMEM && bad == &wr[9] &&
	   db_val(ctx, QHCA_DB_SQ) == (0x1f2 | 13 << 16),
	   "a CQE for WQE 4 frees WQEs 0..4 (unsignaled ones too): 5 more fit");

	/* the free-running wqe_index of a later pass is taken modulo depth */
	dev_complete(scq, 1, 0x1f2, CO_SEND, 12, 112);
	qhca_poll_cq(&scq->vcq.cq, 16, wc);
	ok(qp->sq.ci == 13, "wqe_index 12 (ring slot 4) retires up to 13");

	/* a CQE for an index that is not outstanding changes nothing */
	wr[0].next = &wr[1];
	wr[1].next = NULL;
	qhca_post_send(ibqp, &wr[0], &bad);
	dev_complete(scq, 2, 0x1f2, CO_SEND, 3, 0);
	qhca_poll_cq(&scq->vcq.cq, 16, wc);
	ok(qp->sq.ci == 13 && qp->sq.pi == 15,
	   "a CQE naming a WQE that is not outstanding (slot 3; 13, 14 are) is ignored");

	/* receive queue */
	memset(rwr, 0, sizeof(rwr));
	for (i = 0; i < 10; i++) {
		rwr[i].wr_id = 200 + i;
		rwr[i].sg_list = test_sges;
		rwr[i].num_sge = 1;
		rwr[i].next = i < 9 ? &rwr[i + 1] : NULL;
	}
	rbad = NULL;
	ret = qhca_post_recv(ibqp, &rwr[0], &rbad);
	ok(ret == ENOMEM && rbad == &rwr[8] &&
	   db_val(ctx, QHCA_DB_RQ) == (0x1f2 | 8 << 16),
	   "RQ: 8 posted, ENOMEM at the 9th, RQ doorbell qpn | 8 << 16");
	dev_complete(rcq, 0, 0x1f2, CO_RECV, 0, 200);
	dev_complete(rcq, 1, 0x1f2, CO_RECV, 1, 201);
	good = qhca_poll_cq(&rcq->vcq.cq, 16, wc) == 2 &&
	       wc[1].opcode == IBV_WC_RECV && qp->rq.ci == 2;
	rbad = NULL;
	ret = qhca_post_recv(ibqp, &rwr[8], &rbad);
	ok(good && ret == 0 && db_val(ctx, QHCA_DB_RQ) == (0x1f2 | 10 << 16),
	   "receive CQEs free RQ entries in order");
	rwr[0].next = NULL;
	ibqp->state = IBV_QPS_RESET;
	ok(qhca_post_recv(ibqp, &rwr[0], &rbad) == EINVAL,
	   "post_recv in RESET is EINVAL");
	ibqp->state = IBV_QPS_RTS;

	/* an error CQE (flush) of a receive still frees its entry */
	dev_write_cqe(rcq, 2, &(struct test_cqe){ .wr_id = 202, .status = 5,
						  .opcode = CO_RECV,
						  .qpn = 0x1f2,
						  .wqe_index = 2 });
	qhca_poll_cq(&rcq->vcq.cq, 16, wc);
	ok(wc[0].status == IBV_WC_WR_FLUSH_ERR && qp->rq.ci == 3,
	   "flush error CQEs free their WQEs too");

	rwr[0].num_sge = 2;
	rbad = NULL;
	ok(qhca_post_recv(ibqp, &rwr[0], &rbad) == EINVAL && rbad == &rwr[0] &&
	   qp->rq.pi == 10,
	   "post_recv: num_sge above max_recv_sge is EINVAL");

	qhca_qp_reset_indices(qp);
	ok(qp->sq.pi == 0 && qp->sq.ci == 0 && qp->rq.pi == 0 &&
	   qp->rq.ci == 0, "reset to RESET starts the rings over at 0");

	free_qp(ctx, qp);
	free_cq(scq);
	free_cq(rcq);
	free_ctx(ctx);
}

void test_srq(void)
{
	struct qhca_context *ctx = new_ctx();
	struct qhca_cq *cq = new_cq(ctx, 32, 4);
	struct qhca_srq *srq = new_srq(ctx, 5, 2, 0x33);
	struct qp_spec s = {
		.type = IBV_QPT_UD, .scq = cq, .rcq = cq, .srq = srq,
		.qpn = 0x44, .cap = { .max_send_wr = 1, .max_send_sge = 1,
				      .max_recv_wr = 0, .max_recv_sge = 0 },
	};
	struct qhca_qp *qp = new_qp(ctx, &s);
	struct ibv_recv_wr rwr[10], *bad;
	struct ibv_wc wc[16];
	int i, ret;

	ok(srq->wq.depth == 8 && srq->wq.log_stride == 6 &&
	   srq->wq.max_sge == 3 && qp->rq.depth == 0 && !qp->rq.buf,
	   "SRQ: 8 x 64 B; a QP on an SRQ has no RQ");

	memset(rwr, 0, sizeof(rwr));
	for (i = 0; i < 10; i++) {
		rwr[i].wr_id = 300 + i;
		rwr[i].sg_list = test_sges;
		rwr[i].num_sge = 2;
		rwr[i].next = i < 9 ? &rwr[i + 1] : NULL;
	}
	bad = NULL;
	ret = qhca_post_srq_recv(&srq->ibv_srq, &rwr[0], &bad);
	ok(ret == ENOMEM && bad == &rwr[8] &&
	   db_val(ctx, QHCA_DB_SRQ) == (0x33 | 8 << 16),
	   "SRQ: 8 posted, ENOMEM at the 9th, SRQ doorbell srqn | 8 << 16");

	ok(qhca_post_recv(&qp->vqp.qp, &rwr[0], (struct ibv_recv_wr **)&bad) ==
	   EINVAL, "post_recv on a QP with an SRQ is EINVAL");

	/* entry 1 completes before entry 0 */
	dev_complete(cq, 0, 0x44, CO_RECV, 1, 301);
	qhca_poll_cq(&cq->vcq.cq, 16, wc);
	rwr[8].next = NULL;
	bad = NULL;
	ok(srq->wq.ci == 0 &&
	   qhca_post_srq_recv(&srq->ibv_srq, &rwr[8], &bad) == ENOMEM,
	   "SRQ: an entry completing out of order frees nothing yet");
	dev_complete(cq, 1, 0x44, CO_RECV, 0, 300);
	qhca_poll_cq(&cq->vcq.cq, 16, wc);
	rwr[8].next = &rwr[9];
	bad = NULL;
	ok(srq->wq.ci == 2 &&
	   qhca_post_srq_recv(&srq->ibv_srq, &rwr[8], &bad) == 0 &&
	   db_val(ctx, QHCA_DB_SRQ) == (0x33 | 10 << 16),
	   "SRQ: then the older one frees both");

	/* clean (destroy/reset): the QP's receive CQEs give entries back */
	dev_complete(cq, 2, 0x44, CO_RECV, 2, 302);
	dev_complete(cq, 3, 0x45, CO_SEND, 0, 999);
	dev_complete(cq, 4, 0x44, CO_RECV, 3, 303);
	pthread_spin_lock(&cq->lock);
	qhca_cq_clean(cq, qp);
	pthread_spin_unlock(&cq->lock);
	ok(srq->wq.ci == 4 && cq->ci == 4 &&
	   db_val(ctx, QHCA_DB_CQ_CI) == (4 | 4 << 16) &&
	   qhca_poll_cq(&cq->vcq.cq, 16, wc) == 1 && wc[0].wr_id == 999 &&
	   wc[0].qp_num == 0x45,
	   "CQ clean: drops the QP's CQEs, keeps the others in order, frees SRQ entries");

	free_qp(ctx, qp);
	free_srq(srq);
	free_cq(cq);
	free_ctx(ctx);
}

/* The wr_id of the receive WQE in slot @idx % depth of @wq */
static uint64_t recv_wr_id(struct qhca_wq *wq, uint32_t idx)
{
	uint64_t v;

	memcpy(&v, qhca_wq_entry(wq, idx), sizeof(v));
	return le64toh(v);
}

/*
 * ibv_modify_srq(IBV_SRQ_MAX_WR) without the kernel: the new ring, the
 * switch the provider makes once the device has moved, and its slot
 * bookkeeping across it, with indices crossing 65536
 */
void test_srq_resize(void)
{
	struct qhca_context *ctx = new_ctx();
	struct qhca_cq *cq = new_cq(ctx, 64, 4);
	struct qhca_srq *srq = new_srq(ctx, 8, 1, 0x33);
	struct qp_spec s = {
		.type = IBV_QPT_UD, .scq = cq, .rcq = cq, .srq = srq,
		.qpn = 0x44, .cap = { .max_send_wr = 1, .max_send_sge = 1 },
	};
	struct qhca_qp *qp = new_qp(ctx, &s);
	const uint32_t first = 0xfffc;
	struct ibv_recv_wr rwr[33], *bad;
	struct qhca_srq_ring nr;
	struct ibv_wc wc[16];
	uint32_t cpi = 0, i, n;
	int ret;
	bool good;

	memset(rwr, 0, sizeof(rwr));
	for (i = 0; i < 33; i++) {
		rwr[i].wr_id = 500 + i;
		rwr[i].sg_list = test_sges;
		rwr[i].num_sge = 1;
		rwr[i].next = i < 32 ? &rwr[i + 1] : NULL;
	}
	atomic_store(&srq->wq.pi, first);
	atomic_store(&srq->wq.ci, first);
	/* 8 posted (full); entries 1 and 3 complete, nothing is free yet */
	bad = NULL;
	ret = qhca_post_srq_recv(&srq->ibv_srq, &rwr[0], &bad);
	ok(ret == ENOMEM && bad == &rwr[8],
	   "SRQ resize: 8 posted on the 8-entry SRQ");
	dev_complete(cq, cpi++, 0x44, CO_RECV, first + 1, 501);
	dev_complete(cq, cpi++, 0x44, CO_RECV, first + 3, 503);
	n = qhca_poll_cq(&cq->vcq.cq, 16, wc);
	ok(n == 2 && srq->wq.ci == first,
	   "SRQ resize: 2 completed out of order, none free");

	/* to 32 entries: indices and done marks move along */
	ret = qhca_srq_ring_alloc(srq, 20, &nr);
	ok(!ret && nr.depth == 32 && qhca_srq_ring_fits(srq, &nr),
	   "SRQ resize: a ring of 32 for max_wr 20, room for the 8");
	qhca_srq_ring_switch(srq, &nr);
	ok(nr.depth == 8 && srq->wq.depth == 32 && srq->wq.pi == first + 8 &&
	   srq->wq.ci == first && srq->wq.log_stride == 5,
	   "SRQ resize: the switch keeps pi, ci and the stride");
	qhca_srq_ring_free(&nr);

	rwr[31].next = NULL;
	bad = NULL;
	ret = qhca_post_srq_recv(&srq->ibv_srq, &rwr[8], &bad);
	ok(ret == 0 && srq->wq.pi == first + 32 &&
	   db_val(ctx, QHCA_DB_SRQ) == (0x33 | ((first + 32) & 0xffff) << 16) &&
	   recv_wr_id(&srq->wq, first + 8) == 508 &&
	   recv_wr_id(&srq->wq, first + 31) == 531,
	   "SRQ resize: 24 more posted at their indices in the new ring");
	rwr[32].next = NULL;
	ok(qhca_post_srq_recv(&srq->ibv_srq, &rwr[32], &bad) == ENOMEM,
	   "SRQ resize: the new ring is full at 32");

	ret = qhca_srq_ring_alloc(srq, 8, &nr);
	ok(!ret && nr.depth == 8 && !qhca_srq_ring_fits(srq, &nr),
	   "SRQ resize: 8 entries do not hold the 32 not yet free");
	qhca_srq_ring_free(&nr);

	/* the done marks of entries 1 and 3 came along */
	dev_complete(cq, cpi++, 0x44, CO_RECV, first, 500);
	qhca_poll_cq(&cq->vcq.cq, 16, wc);
	good = srq->wq.ci == first + 2;
	dev_complete(cq, cpi++, 0x44, CO_RECV, first + 2, 502);
	qhca_poll_cq(&cq->vcq.cq, 16, wc);
	ok(good && srq->wq.ci == first + 4,
	   "SRQ resize: entries completed before the move are free with their elders");

	/* the other 28 newest first: nothing free until the oldest */
	for (i = 31; i > 4; i--)
		dev_complete(cq, cpi++, 0x44, CO_RECV, (uint16_t)(first + i),
			     500 + i);
	n = qhca_poll_cq(&cq->vcq.cq, 16, wc);
	n += qhca_poll_cq(&cq->vcq.cq, 16, wc);
	good = n == 27 && srq->wq.ci == first + 4;
	dev_complete(cq, cpi++, 0x44, CO_RECV, (uint16_t)(first + 4), 504);
	qhca_poll_cq(&cq->vcq.cq, 16, wc);
	ok(good && srq->wq.ci == first + 32 && wc[0].wr_id == 504,
	   "SRQ resize: across 65536, all free once the oldest completes");

	/* and back to 8 with nothing outstanding */
	ret = qhca_srq_ring_alloc(srq, 1, &nr);
	ok(!ret && qhca_srq_ring_fits(srq, &nr),
	   "SRQ resize: to 8 when nothing is outstanding");
	qhca_srq_ring_switch(srq, &nr);
	qhca_srq_ring_free(&nr);
	rwr[8].next = &rwr[9];
	for (i = 9; i < 16; i++)
		rwr[i].next = &rwr[i + 1];
	rwr[16].next = NULL;
	bad = NULL;
	ret = qhca_post_srq_recv(&srq->ibv_srq, &rwr[8], &bad);
	ok(ret == ENOMEM && bad == &rwr[16] && srq->wq.depth == 8 &&
	   recv_wr_id(&srq->wq, first + 32) == 508,
	   "SRQ resize: 8 entries again");

	free_qp(ctx, qp);
	free_srq(srq);
	free_cq(cq);
	free_ctx(ctx);
}
