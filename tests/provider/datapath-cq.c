// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Provider data-path tests (unit-datapath.c, datapath.h): CQE decoding,
 * polling across ring wraps (owner bits, the CQ_CI and arm doorbells), the
 * extended CQ, and a QP's CQEs cleaned out of a CQ.
 */

#include <config.h>

#include "datapath.h"

/* ------------------------------------------------------------------------
 * CQE decoding
 */
static void decode(const struct test_cqe *c, struct ibv_wc *wc)
{
	uint8_t raw[C_SIZE];

	memset(raw, 0, sizeof(raw));
	put64(raw, C_WR_ID, c->wr_id);
	raw[C_STATUS] = c->status;
	raw[C_OPCODE] = c->opcode;
	raw[C_FLAGS] = c->flags;
	raw[C_OWNER] = 1;
	put32(raw, C_BYTE_LEN, c->byte_len);
	put32(raw, C_QPN, c->qpn);
	put32(raw, C_SRC_QP, c->src_qp);
	memcpy(raw + C_IMM, c->imm, 4);
	raw[C_NHT] = 2;
	raw[C_VENDOR_ERR] = c->vendor_err;
	put16(raw, C_WQE_INDEX, c->wqe_index);
	memset(wc, 0x5a, sizeof(*wc));
	qhca_cqe_to_wc((const struct qhca_cqe *)raw, wc);
}

void test_cqe_decode(void)
{
	static const struct {
		uint8_t hw;
		enum ibv_wc_status ibv;
	} st[] = {
		{ 0, IBV_WC_SUCCESS }, { 1, IBV_WC_LOC_LEN_ERR },
		{ 2, IBV_WC_LOC_QP_OP_ERR }, { 4, IBV_WC_LOC_PROT_ERR },
		{ 5, IBV_WC_WR_FLUSH_ERR }, { 6, IBV_WC_MW_BIND_ERR },
		{ 7, IBV_WC_BAD_RESP_ERR }, { 8, IBV_WC_LOC_ACCESS_ERR },
		{ 9, IBV_WC_REM_INV_REQ_ERR }, { 10, IBV_WC_REM_ACCESS_ERR },
		{ 11, IBV_WC_REM_OP_ERR }, { 12, IBV_WC_RETRY_EXC_ERR },
		{ 13, IBV_WC_RNR_RETRY_EXC_ERR }, { 16, IBV_WC_REM_ABORT_ERR },
		{ 21, IBV_WC_GENERAL_ERR },
		/* not in the contract: general error */
		{ 3, IBV_WC_GENERAL_ERR }, { 14, IBV_WC_GENERAL_ERR },
		{ 22, IBV_WC_GENERAL_ERR }, { 255, IBV_WC_GENERAL_ERR },
	};
	static const struct {
		uint8_t hw;
		enum ibv_wc_opcode ibv;
	} op[] = {
		{ CO_SEND, IBV_WC_SEND }, { CO_RDMA_WRITE, IBV_WC_RDMA_WRITE },
		{ CO_RDMA_READ, IBV_WC_RDMA_READ },
		{ CO_COMP_SWAP, IBV_WC_COMP_SWAP },
		{ CO_FETCH_ADD, IBV_WC_FETCH_ADD },
		{ CO_BIND_MW, IBV_WC_BIND_MW },
		{ CO_LOCAL_INV, IBV_WC_LOCAL_INV }, { CO_RECV, IBV_WC_RECV },
		{ CO_RECV_RDMA_IMM, IBV_WC_RECV_RDMA_WITH_IMM },
		{ CO_ATOMIC_WRITE, IBV_WC_ATOMIC_WRITE },
#ifdef QHCA_HAVE_IBV_FLUSH
		{ CO_FLUSH, IBV_WC_FLUSH },
#endif
	};
	struct test_cqe c;
	struct ibv_wc wc;
	bool good;
	size_t i;

	memset(&c, 0, sizeof(c));
	c.wr_id = 0x8877665544332211ull;
	c.byte_len = 0x12345;
	c.qpn = 0x1abc;
	c.src_qp = 0x00fedc;
	c.vendor_err = 0x42;
	c.opcode = CO_RECV;
	decode(&c, &wc);
	ok(wc.wr_id == c.wr_id && wc.status == IBV_WC_SUCCESS &&
	   wc.opcode == IBV_WC_RECV && wc.byte_len == 0x12345 &&
	   wc.qp_num == 0x1abc && wc.src_qp == 0xfedc &&
	   wc.vendor_err == 0x42 && wc.wc_flags == 0 && wc.imm_data == 0 &&
	   wc.pkey_index == 0 && wc.slid == 0 && wc.sl == 0 &&
	   wc.dlid_path_bits == 0,
	   "CQE: wr_id, byte_len, qpn, src_qp, vendor_err decoded; LID fields 0");

	good = true;
	for (i = 0; i < ARRAY_SIZE(st); i++) {
		c.status = st[i].hw;
		decode(&c, &wc);
		if (wc.status != st[i].ibv || wc.wr_id != c.wr_id ||
		    wc.qp_num != c.qpn) {
			diag("status %u -> %d", st[i].hw, wc.status);
			good = false;
		}
	}
	ok(good, "CQE: every ib_wc_status value maps to its ibv_wc_status; unknown ones to GENERAL_ERR");

	good = true;
	c.status = 0;
	for (i = 0; i < ARRAY_SIZE(op); i++) {
		c.opcode = op[i].hw;
		decode(&c, &wc);
		if (wc.opcode != op[i].ibv || wc.status != IBV_WC_SUCCESS) {
			diag("opcode %u -> %d", op[i].hw, wc.opcode);
			good = false;
		}
	}
	ok(good, "CQE: every ib_wc_opcode of the contract maps to its ibv_wc_opcode");

	c.opcode = CO_REG_MR;
	decode(&c, &wc);
	good = wc.status == IBV_WC_GENERAL_ERR;
	c.opcode = 77;
	decode(&c, &wc);
	good = good && wc.status == IBV_WC_GENERAL_ERR;
	c.opcode = CO_RDMA_READ;
	c.status = 5;
	decode(&c, &wc);
	good = good && wc.status == IBV_WC_WR_FLUSH_ERR &&
	       wc.opcode == IBV_WC_RDMA_READ;
	ok(good, "CQE: REG_MR and unknown opcodes complete as GENERAL_ERR");

	memset(&c, 0, sizeof(c));
	c.opcode = CO_RECV;
	c.flags = CF_WITH_IMM | CF_SOLICITED;
	c.imm[0] = 0xde;
	c.imm[1] = 0xad;
	c.imm[2] = 0xbe;
	c.imm[3] = 0xef;
	decode(&c, &wc);
	ok(wc.wc_flags == IBV_WC_WITH_IMM &&
	   wc.imm_data == htobe32(0xdeadbeef),
	   "CQE: WITH_IMM -> IBV_WC_WITH_IMM, imm_data copied in network order; SOLICITED has no flag");

	c.opcode = CO_RECV_RDMA_IMM;
	decode(&c, &wc);
	ok(wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
	   wc.wc_flags == IBV_WC_WITH_IMM && wc.imm_data == htobe32(0xdeadbeef),
	   "CQE: RECV_RDMA_WITH_IMM with its immediate");

	c.opcode = CO_RECV;
	c.flags = CF_WITH_INV;
	put32(c.imm, 0, 0x00abcdef);
	decode(&c, &wc);
	ok(wc.wc_flags == IBV_WC_WITH_INV &&
	   wc.invalidated_rkey == 0x00abcdef,
	   "CQE: WITH_INV -> IBV_WC_WITH_INV, invalidated_rkey little-endian");

	c.flags = CF_GRH;
	decode(&c, &wc);
	ok(wc.wc_flags == IBV_WC_GRH, "CQE: GRH -> IBV_WC_GRH");

	c.flags = CF_GRH | CF_WITH_IMM;
	c.status = 10;
	decode(&c, &wc);
	ok(wc.status == IBV_WC_REM_ACCESS_ERR && wc.wc_flags == 0,
	   "CQE: error completions carry no wc_flags");
}

/* ------------------------------------------------------------------------
 * Polling: owner bits, ring wraps, doorbells, QP bookkeeping
 */
void test_poll_wrap(void)
{
	struct qhca_context *ctx = new_ctx();
	struct qhca_cq *cq = new_cq(ctx, 8, 0x25);
	struct ibv_wc wc[16];
	uint32_t dev_pi = 0, expect = 0, n, i;
	bool good = true;
	int got;

	ok(cq->depth == 8 && cq->ring && ((uintptr_t)cq->ring & 4095) == 0 &&
	   all_bytes((uint8_t *)cq->ring, cq->buf_size, 0),
	   "CQ ring: page aligned and zeroed");
	ok(qhca_poll_cq(&cq->vcq.cq, 16, wc) == 0,
	   "poll on a zeroed ring finds nothing (owner 1 expected first)");

	/* 5, 5 (wrapping), 6, 8 (a full ring), 1 ... */
	for (n = 5; n <= 8; n++) {
		for (i = 0; i < n; i++) {
			dev_complete(cq, dev_pi, 3, CO_SEND, 0, 1000 + dev_pi);
			dev_pi++;
		}
		got = qhca_poll_cq(&cq->vcq.cq, 16, wc);
		if (got != (int)n)
			good = false;
		for (i = 0; i < (uint32_t)got; i++)
			if (wc[i].wr_id != 1000 + expect++)
				good = false;
		if (db_val(ctx, QHCA_DB_CQ_CI) != (0x25 | (dev_pi << 16)))
			good = false;
		if (qhca_poll_cq(&cq->vcq.cq, 16, wc) != 0)
			good = false;
	}
	ok(good, "owner parity across ring wraps: 26 CQEs over 4 passes, in order, CQ_CI = cqn | ci << 16");

	/*
	 * Stale entries: slot 2 still holds an entry of the previous pass with
	 * that pass's owner value; it must not be taken for a new one.
	 */
	ok(cq->ci == 26 && qhca_poll_cq(&cq->vcq.cq, 1, wc) == 0,
	   "entries of the previous pass are not consumed");

	/* a poll that asks for fewer than are there */
	for (i = 0; i < 3; i++, dev_pi++)
		dev_complete(cq, dev_pi, 3, CO_SEND, 0, 1000 + dev_pi);
	got = qhca_poll_cq(&cq->vcq.cq, 2, wc);
	ok(got == 2 && wc[1].wr_id == 1000 + dev_pi - 2 &&
	   db_val(ctx, QHCA_DB_CQ_CI) == (0x25 | ((dev_pi - 1) << 16)) &&
	   qhca_poll_cq(&cq->vcq.cq, 2, wc) == 1 &&
	   wc[0].wr_id == 1000 + dev_pi - 1,
	   "poll of fewer entries than written leaves the rest, CQ_CI says how far");

	/* the 16-bit consumer index in doorbells wraps with the counter */
	good = true;
	while (dev_pi < 65536 + 20) {
		for (i = 0; i < 7; i++, dev_pi++)
			dev_complete(cq, dev_pi, 3, CO_SEND, 0, dev_pi);
		if (qhca_poll_cq(&cq->vcq.cq, 16, wc) != 7 ||
		    wc[6].wr_id != dev_pi - 1)
			good = false;
	}
	ok(good && db_val(ctx, QHCA_DB_CQ_CI) ==
			   (0x25 | ((dev_pi & 0xffff) << 16)),
	   "65556 CQEs: owner parity and CQ_CI stay right past 16-bit wrap");

	qhca_req_notify_cq(&cq->vcq.cq, 0);
	good = db_val(ctx, QHCA_DB_CQ_ARM) ==
	       (0x25 | ((dev_pi & 0xffff) << 16));
	qhca_req_notify_cq(&cq->vcq.cq, 1);
	ok(good && db_val(ctx, QHCA_DB_CQ_ARM_SOLICITED) ==
			   (0x25 | ((dev_pi & 0xffff) << 16)),
	   "req_notify_cq writes CQ_ARM / CQ_ARM_SOLICITED with cqn | ci << 16");

	free_cq(cq);
	free_ctx(ctx);
}

void test_cq_ex(void)
{
	struct qhca_context *ctx = new_ctx();
	struct qhca_cq *cq = new_cq(ctx, 8, 9);
	struct ibv_cq_ex *cqx = &cq->vcq.cq_ex;
	struct ibv_poll_cq_attr attr = {};
	struct test_cqe c;
	uint32_t i;
	bool good;
	int ret;

	ret = ibv_start_poll(cqx, &attr);
	if (!ret)
		ibv_end_poll(cqx);
	ok(ret == ENOENT && db_val(ctx, QHCA_DB_CQ_CI) == 0,
	   "cq_ex: start_poll on an empty CQ is ENOENT");

	for (i = 0; i < 10; i++) {
		memset(&c, 0, sizeof(c));
		c.wr_id = 500 + i;
		c.opcode = CO_RECV;
		c.flags = CF_WITH_IMM | CF_GRH;
		c.byte_len = 40 + i;
		c.qpn = 77;
		c.src_qp = 99;
		c.vendor_err = (uint8_t)i;
		put32(c.imm, 0, i);
		c.status = i == 3 ? 12 : 0;
		dev_write_cqe(cq, i, &c);
		if (i == 5) {
			/* consume the first 6 so the rest fits */
			int more = 0;

			good = ibv_start_poll(cqx, &attr) == 0;
			while (good && more < 16 && ibv_next_poll(cqx) == 0)
				more++;
			ibv_end_poll(cqx);
		}
	}
	good = ibv_start_poll(cqx, &attr) == 0 && cqx->wr_id == 506 &&
	       cqx->status == IBV_WC_SUCCESS &&
	       ibv_wc_read_opcode(cqx) == IBV_WC_RECV &&
	       ibv_wc_read_byte_len(cqx) == 46 &&
	       ibv_wc_read_qp_num(cqx) == 77 &&
	       ibv_wc_read_src_qp(cqx) == 99 &&
	       ibv_wc_read_wc_flags(cqx) == (IBV_WC_WITH_IMM | IBV_WC_GRH) &&
	       ibv_wc_read_imm_data(cqx) == htole32(6) &&
	       ibv_wc_read_vendor_err(cqx) == 6 &&
	       ibv_wc_read_slid(cqx) == 0 && ibv_wc_read_sl(cqx) == 0 &&
	       ibv_wc_read_dlid_path_bits(cqx) == 0;
	good = good && ibv_next_poll(cqx) == 0 && cqx->wr_id == 507 &&
	       ibv_next_poll(cqx) == 0 && cqx->wr_id == 508 &&
	       ibv_next_poll(cqx) == 0 && cqx->wr_id == 509 &&
	       ibv_next_poll(cqx) == ENOENT;
	ibv_end_poll(cqx);
	ok(good && cq->ci == 10 && db_val(ctx, QHCA_DB_CQ_CI) == (9 | 10 << 16),
	   "cq_ex: start/next/end_poll and read_* over a ring wrap; CQ_CI at end_poll");

	/* an error entry in the middle: status, no flags */
	free_cq(cq);
	cq = new_cq(ctx, 8, 9);
	cqx = &cq->vcq.cq_ex;
	memset(&c, 0, sizeof(c));
	c.wr_id = 1;
	c.status = 12;
	c.opcode = CO_RDMA_WRITE;
	c.flags = CF_WITH_IMM;
	dev_write_cqe(cq, 0, &c);
	ok(ibv_start_poll(cqx, &attr) == 0 &&
	   cqx->status == IBV_WC_RETRY_EXC_ERR &&
	   ibv_wc_read_wc_flags(cqx) == 0 && ibv_next_poll(cqx) == ENOENT,
	   "cq_ex: error status through cq_ex->status");
	ibv_end_poll(cqx);

	free_cq(cq);
	free_ctx(ctx);
}

void test_cq_clean_wrap(void)
{
	struct qhca_context *ctx = new_ctx();
	struct qhca_cq *cq = new_cq(ctx, 8, 6);
	struct qhca_qp dead = { .qpn = 10 };
	struct ibv_wc wc[16];
	uint32_t i, pi = 0;
	bool good = true;

	/* start at ci 6 so the kept entries move across the wrap */
	for (; pi < 6; pi++)
		dev_complete(cq, pi, 11, CO_SEND, 0, pi);
	qhca_poll_cq(&cq->vcq.cq, 16, wc);
	for (i = 0; i < 6; i++, pi++)
		dev_complete(cq, pi, (i & 1) ? 10 : 11, CO_SEND, 0, 100 + i);
	pthread_spin_lock(&cq->lock);
	qhca_cq_clean(cq, &dead);
	pthread_spin_unlock(&cq->lock);
	if (qhca_poll_cq(&cq->vcq.cq, 16, wc) != 3 || wc[0].wr_id != 100 ||
	    wc[1].wr_id != 102 || wc[2].wr_id != 104)
		good = false;
	/* the device carries on where it was */
	dev_complete(cq, pi, 11, CO_SEND, 0, 200);
	ok(good && qhca_poll_cq(&cq->vcq.cq, 16, wc) == 1 &&
	   wc[0].wr_id == 200,
	   "CQ clean across a ring wrap keeps owner bits right");

	free_cq(cq);
	free_ctx(ctx);
}
