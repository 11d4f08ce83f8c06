// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Host unit tests of the qhca provider's data path, without a device.
 *
 * The provider's internal API (qhca.h) builds CQs, QPs and SRQs in memory
 * exactly as create_*() does before its kernel command; a plain page stands
 * in for the doorbell page, and the tests play the device by writing CQEs
 * into the CQ ring.  Expected WQE and CQE images are written byte by byte
 * at the offsets and with the values of docs/hardware.md (not through the
 * structs of qhca_hw.h), so a layout change there shows up here.
 *
 * A GLib test program (g_test, run with --tap by meson test): one case per
 * test_*() below, each check in it named (tests/unit/unit-check.h).
 */

#include <config.h>

#include <endian.h>
#include <errno.h>
#include <linux/seccomp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ccan/array_size.h>

#include "qhca.h"
#include "unit-check.h"

static void __attribute__((format(printf, 1, 2))) diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

#define ok(...) unit_check(__VA_ARGS__)

/* ------------------------------------------------------------------------
 * Byte images
 */
static void put16(uint8_t *b, size_t off, uint16_t v)
{
	v = htole16(v);
	memcpy(b + off, &v, sizeof(v));
}

static void put32(uint8_t *b, size_t off, uint32_t v)
{
	v = htole32(v);
	memcpy(b + off, &v, sizeof(v));
}

static void put64(uint8_t *b, size_t off, uint64_t v)
{
	v = htole64(v);
	memcpy(b + off, &v, sizeof(v));
}

static uint32_t get32(const void *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

static bool same_bytes(const uint8_t *got, const uint8_t *want, size_t len,
		       const char *what)
{
	size_t i;

	for (i = 0; i < len; i++) {
		if (got[i] != want[i]) {
			diag("%s: byte %zu is %#04x, expected %#04x", what, i,
			     got[i], want[i]);
			return false;
		}
	}
	return true;
}

static bool all_bytes(const uint8_t *p, size_t len, uint8_t v)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != v)
			return false;
	return true;
}

/* Send WQE header per docs/hardware.md section 8 */
enum {
	W_OPCODE = 0, W_FLAGS = 1, W_NUM_SGE = 2, W_RSVD0 = 3,
	W_INLINE_LEN = 4, W_WR_ID = 8, W_IMM = 16, W_INV_RKEY = 20,
	W_RADDR = 24, W_RKEY = 32, W_CMP_ADD = 40, W_SWAP = 48,
	W_AHN = 24, W_RQPN = 28, W_QKEY = 32,
	W_BADDR = 24, W_BLEN = 32, W_BMR = 40, W_BMW = 44, W_BNEW = 48,
	W_BACCESS = 52,
	W_HDR = 64, W_SGE = 16,
	R_WR_ID = 0, R_NUM_SGE = 8, R_HDR = 16,
};

/* Linux's ib_wr_opcode values and the WQE flag bits, as literals */
enum {
	OP_RDMA_WRITE = 0x00, OP_RDMA_WRITE_IMM = 0x01, OP_SEND = 0x02,
	OP_SEND_IMM = 0x03, OP_RDMA_READ = 0x04, OP_CMP_SWP = 0x05,
	OP_FETCH_ADD = 0x06, OP_LOCAL_INV = 0x07, OP_BIND_MW = 0x08,
	OP_SEND_INV = 0x09,
	F_SIGNALED = 1, F_SOLICITED = 2, F_INLINE = 4, F_FENCE = 8,
};

/* The device's access bits (docs/hardware.md), as literals */
enum {
	A_LOCAL_WRITE = 1, A_REMOTE_WRITE = 2, A_REMOTE_READ = 4,
	A_REMOTE_ATOMIC = 8,
};

static void exp_hdr(uint8_t *e, uint8_t op, uint8_t flags, uint8_t num_sge,
		    uint32_t inline_len, uint64_t wr_id)
{
	memset(e, 0, W_HDR);
	e[W_OPCODE] = op;
	e[W_FLAGS] = flags;
	e[W_NUM_SGE] = num_sge;
	put32(e, W_INLINE_LEN, inline_len);
	put64(e, W_WR_ID, wr_id);
}

static void exp_sge(uint8_t *e, const struct ibv_sge *sge)
{
	memset(e, 0, W_SGE);
	put64(e, 0, sge->addr);
	put32(e, 8, sge->length);
	put32(e, 12, sge->lkey);
}

/* CQE per docs/hardware.md section 9 */
enum {
	C_WR_ID = 0, C_STATUS = 8, C_OPCODE = 9, C_FLAGS = 10, C_OWNER = 11,
	C_BYTE_LEN = 12, C_QPN = 16, C_SRC_QP = 20, C_IMM = 24, C_NHT = 28,
	C_VENDOR_ERR = 29, C_WQE_INDEX = 30, C_SIZE = 32,
};

/* Linux's ib_wc_opcode values used by the contract, and the CQE flags */
enum {
	CO_SEND = 0, CO_RDMA_WRITE = 1, CO_RDMA_READ = 2, CO_COMP_SWAP = 3,
	CO_FETCH_ADD = 4, CO_BIND_MW = 5, CO_LOCAL_INV = 6, CO_FLUSH = 8,
	CO_ATOMIC_WRITE = 9,
	CO_REG_MR = 10, CO_RECV = 128,
	CO_RECV_RDMA_IMM = 129,
	CF_WITH_IMM = 1, CF_WITH_INV = 2, CF_GRH = 4, CF_SOLICITED = 8,
};

/* ------------------------------------------------------------------------
 * A context without a device: a memory page for doorbells
 */
static struct verbs_device test_vdev;

struct test_cqe {
	uint64_t wr_id;
	uint8_t status;
	uint8_t opcode;
	uint8_t flags;
	uint32_t byte_len;
	uint32_t qpn;
	uint32_t src_qp;
	uint8_t imm[4];
	uint8_t vendor_err;
	uint16_t wqe_index;
};

static struct qhca_context *new_ctx(void)
{
	struct qhca_context *ctx = calloc(1, sizeof(*ctx));

	if (!ctx)
		abort();
	strcpy(test_vdev.device.name, "qhca-test");
	ctx->ibv_ctx.context.device = &test_vdev.device;
	ctx->db = aligned_alloc(QHCA_PAGE_SIZE, QHCA_PAGE_SIZE);
	if (!ctx->db)
		abort();
	memset(ctx->db, 0, QHCA_PAGE_SIZE);
	qhca_ctx_init_qp_table(ctx);
	return ctx;
}

static void free_ctx(struct qhca_context *ctx)
{
	qhca_ctx_free_qp_table(ctx);
	free(ctx->db);
	free(ctx);
}

static uint32_t db_val(struct qhca_context *ctx, uint32_t off)
{
	return get32((uint8_t *)ctx->db + off);
}

static struct qhca_cq *new_cq(struct qhca_context *ctx, int cqe, uint32_t cqn)
{
	struct qhca_cq *cq = calloc(1, sizeof(*cq));
	uint32_t depth;

	if (!cq || qhca_cq_depth(cqe, &depth) || qhca_cq_setup(cq, depth))
		abort();
	cq->cqn = cqn;
	cq->vcq.cq.context = &ctx->ibv_ctx.context;
	cq->vcq.cq.cqe = depth;
	return cq;
}

static void free_cq(struct qhca_cq *cq)
{
	qhca_cq_teardown(cq);
	free(cq);
}

static struct qhca_srq *new_srq(struct qhca_context *ctx, uint32_t max_wr,
				uint32_t max_sge, uint32_t srqn)
{
	struct ibv_srq_attr attr = { .max_wr = max_wr, .max_sge = max_sge };
	struct qhca_srq *srq = calloc(1, sizeof(*srq));

	if (!srq || qhca_srq_setup(srq, &attr))
		abort();
	srq->ibv_srq.context = &ctx->ibv_ctx.context;
	srq->srqn = srqn;
	return srq;
}

static void free_srq(struct qhca_srq *srq)
{
	qhca_srq_teardown(srq);
	free(srq);
}

struct qp_spec {
	enum ibv_qp_type type;
	struct ibv_qp_cap cap;
	struct qhca_cq *scq;
	struct qhca_cq *rcq;
	struct qhca_srq *srq;
	uint32_t qpn;
	int sig_all;
	uint64_t send_ops;
};

static struct qhca_qp *new_qp(struct qhca_context *ctx,
			      const struct qp_spec *s)
{
	struct ibv_qp_init_attr_ex attr = {
		.qp_type = s->type,
		.cap = s->cap,
		.send_cq = &s->scq->vcq.cq,
		.recv_cq = &s->rcq->vcq.cq,
		.srq = s->srq ? &s->srq->ibv_srq : NULL,
		.sq_sig_all = s->sig_all,
		.comp_mask = s->send_ops ? IBV_QP_INIT_ATTR_SEND_OPS_FLAGS : 0,
		.send_ops_flags = s->send_ops,
	};
	struct qhca_qp *qp = calloc(1, sizeof(*qp));
	struct ibv_qp *ibqp;

	if (!qp || qhca_qp_setup(qp, &attr))
		abort();
	ibqp = &qp->vqp.qp;
	ibqp->context = &ctx->ibv_ctx.context;
	ibqp->qp_type = s->type;
	ibqp->send_cq = attr.send_cq;
	ibqp->recv_cq = attr.recv_cq;
	ibqp->srq = attr.srq;
	ibqp->state = IBV_QPS_RTS;
	ibqp->qp_num = s->qpn;
	qp->qpn = s->qpn;
	if (qhca_qp_table_insert(ctx, qp))
		abort();
	if (s->send_ops) {
		qhca_qp_fill_wr_ops(qp, s->send_ops);
		qp->vqp.comp_mask |= VERBS_QP_EX;
	}
	return qp;
}

static void free_qp(struct qhca_context *ctx, struct qhca_qp *qp)
{
	qhca_qp_table_remove(ctx, qp->qpn);
	qhca_qp_teardown(qp);
	free(qp);
}

/* Play the device: write a CQE at its producer index, owner byte last */
static void dev_write_cqe(struct qhca_cq *cq, uint32_t dev_pi,
			  const struct test_cqe *c)
{
	uint8_t *e = (uint8_t *)&cq->ring[dev_pi & (cq->depth - 1)];
	uint8_t owner = ((dev_pi / cq->depth) & 1) ? 0 : 1;

	memset(e, 0, C_OWNER);
	memset(e + C_OWNER + 1, 0, C_SIZE - C_OWNER - 1);
	put64(e, C_WR_ID, c->wr_id);
	e[C_STATUS] = c->status;
	e[C_OPCODE] = c->opcode;
	e[C_FLAGS] = c->flags;
	put32(e, C_BYTE_LEN, c->byte_len);
	put32(e, C_QPN, c->qpn);
	put32(e, C_SRC_QP, c->src_qp);
	memcpy(e + C_IMM, c->imm, 4);
	e[C_VENDOR_ERR] = c->vendor_err;
	put16(e, C_WQE_INDEX, c->wqe_index);
	asm volatile("" ::: "memory");
	*(volatile uint8_t *)(e + C_OWNER) = owner;
}

static void dev_complete(struct qhca_cq *cq, uint32_t dev_pi, uint32_t qpn,
			 uint8_t opcode, uint16_t wqe_index, uint64_t wr_id)
{
	struct test_cqe c = {
		.wr_id = wr_id, .opcode = opcode, .qpn = qpn,
		.wqe_index = wqe_index,
	};

	dev_write_cqe(cq, dev_pi, &c);
}

/* ------------------------------------------------------------------------
 * Queue sizing
 */
static void test_sizing(void)
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

/* ------------------------------------------------------------------------
 * Send and receive WQE encoding
 */
#define WQE_BUF 2048
#define FILL 0xa5

static const struct qhca_sq_params rc_params = {
	.qp_type = IBV_QPT_RC, .max_sge = 12, .max_inline = 192,
};

static const struct qhca_sq_params ud_params = {
	.qp_type = IBV_QPT_UD, .max_sge = 12, .max_inline = 192,
};

static const struct qhca_sq_params uc_params = {
	.qp_type = IBV_QPT_UC, .max_sge = 12, .max_inline = 192,
};

static struct ibv_sge test_sges[3] = {
	{ .addr = 0x1122334455667788ull, .length = 0x1000, .lkey = 0xabc01 },
	{ .addr = 0x00007fff00001000ull, .length = 0x20, .lkey = 0xabc02 },
	{ .addr = 0x8000000000000008ull, .length = 8, .lkey = 0x300 },
};

/* Build wr with p and compare the header and SGEs with the expected image */
static bool check_send_wqe(const char *name, const struct qhca_sq_params *p,
			   const struct ibv_send_wr *wr, const uint8_t *ehdr)
{
	uint8_t buf[WQE_BUF], esge[W_SGE];
	size_t end;
	int ret, i;
	bool good;

	memset(buf, FILL, sizeof(buf));
	ret = qhca_build_send_wqe(buf, p, wr);
	if (ret) {
		diag("%s: build returned %d", name, ret);
		return false;
	}
	good = same_bytes(buf, ehdr, W_HDR, name);
	for (i = 0; good && i < ehdr[W_NUM_SGE]; i++) {
		exp_sge(esge, &wr->sg_list[i]);
		good = same_bytes(buf + W_HDR + W_SGE * i, esge, W_SGE, name);
	}
	end = W_HDR + W_SGE * ehdr[W_NUM_SGE];
	if (ehdr[W_FLAGS] & F_INLINE)
		end = W_HDR + get32(ehdr + W_INLINE_LEN);
	if (good && !all_bytes(buf + end, sizeof(buf) - end, FILL)) {
		diag("%s: wrote past its last SGE/inline byte", name);
		good = false;
	}
	return good;
}

static void test_send_wqe(void)
{
	uint8_t e[W_HDR], buf[WQE_BUF], data[200];
	struct qhca_ah ah = { .ahn = 0x4321 };
	struct ibv_sge isge[2];
	struct ibv_send_wr wr;
	__be32 imm = htobe32(0xdeadbeef);
	size_t i;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0x0102030405060708ull;
	wr.opcode = IBV_WR_SEND;
	wr.sg_list = test_sges;
	wr.num_sge = 2;
	exp_hdr(e, OP_SEND, 0, 2, 0, wr.wr_id);
	ok(check_send_wqe("SEND", &rc_params, &wr, e),
	   "WQE: SEND opcode 0x02, wr_id, 2 SGEs at 64/80");

	wr.opcode = IBV_WR_SEND_WITH_IMM;
	wr.imm_data = imm;
	wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;
	exp_hdr(e, OP_SEND_IMM, F_SIGNALED | F_SOLICITED, 2, 0, wr.wr_id);
	memcpy(e + W_IMM, &imm, 4);
	ok(check_send_wqe("SEND_WITH_IMM", &rc_params, &wr, e) &&
	   e[W_IMM] == 0xde && e[W_IMM + 3] == 0xef,
	   "WQE: SEND_WITH_IMM 0x03, imm_data bytes in network order, SIGNALED|SOLICITED");

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 7;
	wr.opcode = IBV_WR_SEND_WITH_INV;
	wr.invalidate_rkey = 0x00c0ffee;
	wr.sg_list = test_sges;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_FENCE;
	exp_hdr(e, OP_SEND_INV, F_FENCE, 1, 0, 7);
	put32(e, W_INV_RKEY, 0x00c0ffee);
	ok(check_send_wqe("SEND_WITH_INV", &rc_params, &wr, e),
	   "WQE: SEND_WITH_INV 0x09, invalidate_rkey at 20, FENCE");

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 8;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = 0xfedcba9876543210ull;
	wr.wr.rdma.rkey = 0x12345678;
	wr.sg_list = test_sges;
	wr.num_sge = 3;
	exp_hdr(e, OP_RDMA_WRITE, 0, 3, 0, 8);
	put64(e, W_RADDR, 0xfedcba9876543210ull);
	put32(e, W_RKEY, 0x12345678);
	ok(check_send_wqe("RDMA_WRITE", &rc_params, &wr, e),
	   "WQE: RDMA_WRITE 0x00, remote_addr at 24, rkey at 32, 3 SGEs");

	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.imm_data = imm;
	exp_hdr(e, OP_RDMA_WRITE_IMM, 0, 3, 0, 8);
	put64(e, W_RADDR, 0xfedcba9876543210ull);
	put32(e, W_RKEY, 0x12345678);
	memcpy(e + W_IMM, &imm, 4);
	ok(check_send_wqe("RDMA_WRITE_WITH_IMM", &rc_params, &wr, e),
	   "WQE: RDMA_WRITE_WITH_IMM 0x01, remote address and imm_data");

	wr.opcode = IBV_WR_RDMA_READ;
	wr.num_sge = 1;
	exp_hdr(e, OP_RDMA_READ, 0, 1, 0, 8);
	put64(e, W_RADDR, 0xfedcba9876543210ull);
	put32(e, W_RKEY, 0x12345678);
	ok(check_send_wqe("RDMA_READ", &rc_params, &wr, e),
	   "WQE: RDMA_READ 0x04, remote address, 1 SGE");

	wr.send_flags = IBV_SEND_INLINE;
	ok(check_send_wqe("RDMA_READ inline", &rc_params, &wr, e),
	   "WQE: IBV_SEND_INLINE is ignored for RDMA_READ (SGEs, no INLINE flag)");

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 9;
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.remote_addr = 0x1000;
	wr.wr.atomic.rkey = 0x777;
	wr.wr.atomic.compare_add = 0x1111111122222222ull;
	wr.wr.atomic.swap = 0x3333333344444444ull;
	wr.sg_list = &test_sges[2];
	wr.num_sge = 1;
	exp_hdr(e, OP_CMP_SWP, 0, 1, 0, 9);
	put64(e, W_RADDR, 0x1000);
	put32(e, W_RKEY, 0x777);
	put64(e, W_CMP_ADD, 0x1111111122222222ull);
	put64(e, W_SWAP, 0x3333333344444444ull);
	ok(check_send_wqe("ATOMIC_CMP_AND_SWP", &rc_params, &wr, e),
	   "WQE: ATOMIC_CMP_AND_SWP 0x05, remote_addr/rkey/compare_add at 40/swap at 48");

	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	exp_hdr(e, OP_FETCH_ADD, 0, 1, 0, 9);
	put64(e, W_RADDR, 0x1000);
	put32(e, W_RKEY, 0x777);
	put64(e, W_CMP_ADD, 0x1111111122222222ull);
	ok(check_send_wqe("ATOMIC_FETCH_AND_ADD", &rc_params, &wr, e),
	   "WQE: ATOMIC_FETCH_AND_ADD 0x06, add in compare_add, swap 0");

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 10;
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.invalidate_rkey = 0x4242;
	wr.send_flags = IBV_SEND_SIGNALED;
	exp_hdr(e, OP_LOCAL_INV, F_SIGNALED, 0, 0, 10);
	put32(e, W_INV_RKEY, 0x4242);
	ok(check_send_wqe("LOCAL_INV", &rc_params, &wr, e),
	   "WQE: LOCAL_INV 0x07, invalidate_rkey, no SGEs");

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 11;
	wr.opcode = IBV_WR_SEND_WITH_IMM;
	wr.imm_data = imm;
	wr.wr.ud.ah = &ah.ibv_ah;
	wr.wr.ud.remote_qpn = 0x1234;
	wr.wr.ud.remote_qkey = 0x80010000;
	wr.sg_list = test_sges;
	wr.num_sge = 1;
	exp_hdr(e, OP_SEND_IMM, 0, 1, 0, 11);
	memcpy(e + W_IMM, &imm, 4);
	put32(e, W_AHN, 0x4321);
	put32(e, W_RQPN, 0x1234);
	put32(e, W_QKEY, 0x80010000);
	ok(check_send_wqe("UD SEND_WITH_IMM", &ud_params, &wr, e),
	   "WQE: UD send: ahn at 24, remote_qpn at 28, remote_qkey at 32");

	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + 1);
	isge[0].addr = (uintptr_t)data;
	isge[0].length = 150;
	isge[1].addr = (uintptr_t)(data + 150);
	isge[1].length = 42;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 12;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_INLINE;
	wr.sg_list = isge;
	wr.num_sge = 2;
	exp_hdr(e, OP_SEND, F_INLINE, 0, 192, 12);
	memset(buf, FILL, sizeof(buf));
	ok(check_send_wqe("SEND inline", &rc_params, &wr, e) &&
	   !qhca_build_send_wqe(buf, &rc_params, &wr) &&
	   !memcmp(buf + W_HDR, data, 192),
	   "WQE: inline SEND: INLINE flag, num_sge 0, inline_len, data at 64");

	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = 0x5000;
	wr.wr.rdma.rkey = 0x99;
	exp_hdr(e, OP_RDMA_WRITE, F_INLINE, 0, 192, 12);
	put64(e, W_RADDR, 0x5000);
	put32(e, W_RKEY, 0x99);
	ok(check_send_wqe("RDMA_WRITE inline", &rc_params, &wr, e),
	   "WQE: inline RDMA_WRITE");

	{
		struct ibv_mr mr = { .lkey = 0x5501 };
		struct ibv_mw mw = { .rkey = 0x7702, .type = IBV_MW_TYPE_2 };

		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 14;
		wr.opcode = IBV_WR_BIND_MW;
		wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
		/* SGEs mean nothing to a bind: none are written */
		wr.sg_list = test_sges;
		wr.num_sge = 2;
		wr.bind_mw.mw = &mw;
		wr.bind_mw.rkey = 0x7703;
		wr.bind_mw.bind_info.mr = &mr;
		wr.bind_mw.bind_info.addr = 0x0000123456789000ull;
		wr.bind_mw.bind_info.length = 0x1234500000ull;
		wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE |
						       IBV_ACCESS_REMOTE_ATOMIC;
		exp_hdr(e, OP_BIND_MW, F_SIGNALED, 0, 0, 14);
		put64(e, W_BADDR, 0x0000123456789000ull);
		put64(e, W_BLEN, 0x1234500000ull);
		put32(e, W_BMR, 0x5501);
		put32(e, W_BMW, 0x7702);
		put32(e, W_BNEW, 0x7703);
		put32(e, W_BACCESS, A_REMOTE_WRITE | A_REMOTE_ATOMIC);
		ok(check_send_wqe("BIND_MW", &rc_params, &wr, e) &&
		   mw.rkey == 0x7702,
		   "WQE: BIND_MW 0x08 (type 2): addr at 24, length at 32, MR lkey at 40, window key at 44, new key at 48, rights at 52; no SGEs or INLINE");

		wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_READ;
		put32(e, W_BACCESS, A_REMOTE_READ);
		ok(check_send_wqe("BIND_MW UC", &uc_params, &wr, e),
		   "WQE: BIND_MW on a UC QP, remote read right 0x4");
	}

	{
		struct qhca_sq_params sig = rc_params;

		sig.sig_all = true;
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 13;
		wr.opcode = IBV_WR_SEND;
		exp_hdr(e, OP_SEND, F_SIGNALED, 0, 0, 13);
		ok(check_send_wqe("sq_sig_all", &sig, &wr, e),
		   "WQE: sq_sig_all sets SIGNALED without IBV_SEND_SIGNALED");
	}
}

static void test_send_wqe_errors(void)
{
	uint8_t buf[WQE_BUF], data[256] = { 0 };
	struct ibv_sge big = { .addr = (uintptr_t)data, .length = 193 };
	struct qhca_ah ah = { .ahn = 1 };
	struct ibv_send_wr wr;
	static const enum ibv_wr_opcode rc_only[] = {
		IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM,
		IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP,
		IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_LOCAL_INV,
		IBV_WR_SEND_WITH_INV,
	};
	static const enum ibv_wr_opcode never[] = {
		/* 14: IBV_WR_FLUSH, named only from rdma-core 45 on (the
		 * provider is also built against rdma-core 44's headers)
		 */
		IBV_WR_TSO, IBV_WR_DRIVER1,
		(enum ibv_wr_opcode)14, IBV_WR_ATOMIC_WRITE,
		(enum ibv_wr_opcode)99,
	};
	bool good;
	size_t i;

	memset(&wr, 0, sizeof(wr));
	wr.wr.ud.ah = &ah.ibv_ah;
	good = true;
	for (i = 0; i < ARRAY_SIZE(rc_only); i++) {
		wr.opcode = rc_only[i];
		if (qhca_build_send_wqe(buf, &ud_params, &wr) != EINVAL)
			good = false;
		if (qhca_build_send_wqe(buf, &rc_params, &wr) != 0)
			good = false;
	}
	ok(good, "UD QPs take only SEND/SEND_WITH_IMM; RC takes all nine opcodes");

	good = true;
	for (i = 0; i < ARRAY_SIZE(never); i++) {
		wr.opcode = never[i];
		if (qhca_build_send_wqe(buf, &rc_params, &wr) != EINVAL)
			good = false;
	}
	ok(good, "TSO, FLUSH, ATOMIC_WRITE and unknown opcodes are EINVAL");

	{
		struct ibv_mr mr = { .lkey = 0x5501 };
		struct ibv_mw mw = { .rkey = 0x7702, .type = IBV_MW_TYPE_2 };
		static const unsigned int bad_rights[] = {
			IBV_ACCESS_ZERO_BASED,
			IBV_ACCESS_ZERO_BASED | IBV_ACCESS_REMOTE_WRITE,
#ifdef QHCA_HAVE_IBV_FLUSH
			IBV_ACCESS_FLUSH_GLOBAL,
#endif
			1u << 12,
		};

		memset(&wr, 0, sizeof(wr));
		wr.opcode = IBV_WR_BIND_MW;
		wr.bind_mw.mw = &mw;
		wr.bind_mw.rkey = 0x7703;
		wr.bind_mw.bind_info.mr = &mr;
		wr.bind_mw.bind_info.length = 4096;
		wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
		good = qhca_build_send_wqe(buf, &rc_params, &wr) == 0 &&
		       qhca_build_send_wqe(buf, &ud_params, &wr) == EINVAL;
		for (i = 0; i < ARRAY_SIZE(bad_rights); i++) {
			wr.bind_mw.bind_info.mw_access_flags = bad_rights[i];
			if (qhca_build_send_wqe(buf, &rc_params, &wr) != EINVAL)
				good = false;
		}
		ok(good, "BIND_MW: UD QPs refuse it; zero-based windows, FLUSH rights (rdma-core 45+) and an unnamed bit are EINVAL");

		wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
		wr.bind_mw.bind_info.length = 0;
		good = qhca_build_send_wqe(buf, &rc_params, &wr) == EINVAL;
		wr.bind_mw.bind_info.length = 4096;
		wr.bind_mw.bind_info.mr = NULL;
		good = good &&
		       qhca_build_send_wqe(buf, &rc_params, &wr) == EINVAL;
		wr.bind_mw.bind_info.mr = &mr;
		mw.type = IBV_MW_TYPE_1;
		good = good &&
		       qhca_build_send_wqe(buf, &rc_params, &wr) == EINVAL;
		wr.bind_mw.mw = NULL;
		good = good &&
		       qhca_build_send_wqe(buf, &rc_params, &wr) == EINVAL;
		ok(good && mw.rkey == 0x7702,
		   "IBV_WR_BIND_MW: a type 2 unbind (length 0), no MR, a type 1 window (ibv_bind_mw() only), no window are EINVAL");
	}

	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_SEND;
	wr.sg_list = test_sges;
	wr.num_sge = 13;
	ok(qhca_build_send_wqe(buf, &rc_params, &wr) == EINVAL,
	   "num_sge above the QP's max_send_sge is EINVAL");

	wr.num_sge = 1;
	wr.sg_list = &big;
	wr.send_flags = IBV_SEND_INLINE;
	ok(qhca_build_send_wqe(buf, &rc_params, &wr) == EINVAL,
	   "inline data above the QP's max_inline_data is EINVAL");

	wr.send_flags = IBV_SEND_IP_CSUM;
	ok(qhca_build_send_wqe(buf, &rc_params, &wr) == EINVAL,
	   "IBV_SEND_IP_CSUM is EINVAL");

	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_SEND;
	ok(qhca_build_send_wqe(buf, &ud_params, &wr) == EINVAL,
	   "UD send without an AH is EINVAL");
}

static void test_recv_wqe(void)
{
	struct ibv_recv_wr wr = {
		.wr_id = 0xa1a2a3a4a5a6a7a8ull,
		.sg_list = test_sges,
		.num_sge = 3,
	};
	uint8_t buf[WQE_BUF], e[R_HDR], esge[W_SGE];
	bool good;
	int i;

	memset(buf, FILL, sizeof(buf));
	memset(e, 0, sizeof(e));
	put64(e, R_WR_ID, wr.wr_id);
	e[R_NUM_SGE] = 3;
	good = !qhca_build_recv_wqe(buf, 3, &wr) &&
	       same_bytes(buf, e, R_HDR, "recv WQE");
	for (i = 0; good && i < 3; i++) {
		exp_sge(esge, &test_sges[i]);
		good = same_bytes(buf + R_HDR + W_SGE * i, esge, W_SGE,
				  "recv SGE");
	}
	good = good && all_bytes(buf + R_HDR + 3 * W_SGE,
				 sizeof(buf) - R_HDR - 3 * W_SGE, FILL);
	ok(good, "recv WQE: wr_id at 0, num_sge at 8, reserved 0, SGEs at 16");
	ok(qhca_build_recv_wqe(buf, 2, &wr) == EINVAL,
	   "recv WQE: num_sge above max_recv_sge is EINVAL");
}

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

static void test_cqe_decode(void)
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
static void test_poll_wrap(void)
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

static void test_cq_ex(void)
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

/* ------------------------------------------------------------------------
 * Posting
 */
static void test_post_send(void)
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

static void test_srq(void)
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
static void test_srq_resize(void)
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

static void test_cq_clean_wrap(void)
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

/* ------------------------------------------------------------------------
 * ibv_wr_*() API
 */
static void test_wr_api(void)
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
static void test_wr_placement(void)
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

static void test_wr_api_ud(void)
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

/*
 * Memory windows: ibv_bind_mw() of a type 1 window and IBV_WR_BIND_MW of a
 * type 2 one through ibv_post_send() post a BIND_MW WQE with the window's
 * key now and its next one, which is the window's rkey once posted (and
 * not if the post fails)
 */
static void test_bind_mw(void)
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
static void test_wr_bind_mw(void)
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
static void test_bind_mw_local_rights(void)
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

/*
 * The kernel's create responses against the provider's own geometry:
 * responses as a kernel with QHCA_CREATE_RESP_GEOMETRY writes them (values
 * spelled out here from docs/abi.md, not computed), each field changed in
 * turn, and responses of a kernel module from before the geometry fields.
 */
static void test_create_resp(void)
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
static void test_create_validation(void)
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

/* ------------------------------------------------------------------------
 * No system call on the data path: run it under seccomp strict mode, where
 * any system call but read/write/exit/sigreturn kills the process.
 */
struct hot {
	struct qhca_context *ctx;
	struct qhca_cq *cq;
	struct qhca_srq *srq;
	struct qhca_qp *rc;
	struct qhca_qp *ud;
	uint32_t dev_pi;
};

static int hot_path(struct hot *h)
{
	struct ibv_sge sge = { .addr = 0x1000, .length = 8, .lkey = 1 };
	struct ibv_send_wr swr = {
		.opcode = IBV_WR_SEND, .sg_list = &sge, .num_sge = 1,
		.send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 };
	struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(&h->rc->vqp.qp);
	struct ibv_poll_cq_attr pattr = {};
	struct ibv_send_wr *sbad;
	struct ibv_recv_wr *rbad;
	struct ibv_wc wc[4];
	uint32_t idx;
	int n;

	idx = h->rc->sq.pi;
	if (qhca_post_send(&h->rc->vqp.qp, &swr, &sbad))
		return 1;
	dev_complete(h->cq, h->dev_pi++, h->rc->qpn, CO_SEND, idx, 1);
	if (qhca_poll_cq(&h->cq->vcq.cq, 4, wc) != 1)
		return 2;

	idx = h->rc->rq.pi;
	if (qhca_post_recv(&h->rc->vqp.qp, &rwr, &rbad))
		return 3;
	dev_complete(h->cq, h->dev_pi++, h->rc->qpn, CO_RECV, idx, 2);
	if (qhca_req_notify_cq(&h->cq->vcq.cq, 0))
		return 4;

	idx = h->srq->wq.pi;
	if (qhca_post_srq_recv(&h->srq->ibv_srq, &rwr, &rbad))
		return 5;
	dev_complete(h->cq, h->dev_pi++, h->ud->qpn, CO_RECV, idx, 3);

	idx = h->rc->sq.pi;
	ibv_wr_start(qpx);
	qpx->wr_id = 4;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(qpx, 1, 0x2000);
	ibv_wr_set_sge(qpx, 1, 0x1000, 8);
	if (ibv_wr_complete(qpx))
		return 6;
	dev_complete(h->cq, h->dev_pi++, h->rc->qpn, CO_RDMA_WRITE, idx, 4);

	if (ibv_start_poll(&h->cq->vcq.cq_ex, &pattr))
		return 7;
	n = 1;
	while (n < 16 && ibv_next_poll(&h->cq->vcq.cq_ex) == 0)
		n++;
	ibv_end_poll(&h->cq->vcq.cq_ex);
	return n == 3 ? 0 : 8;
}

static void test_no_syscalls(void)
{
	int pipefd[2], status = 0;
	char result = 0;
	pid_t pid;

	if (pipe(pipefd)) {
		ok(false, "pipe: %s", strerror(errno));
		return;
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		struct hot h = {};
		struct qp_spec s = {
			.type = IBV_QPT_RC,
			.cap = { .max_send_wr = 16, .max_send_sge = 1,
				 .max_recv_wr = 16, .max_recv_sge = 1 },
			.qpn = 5,
			.send_ops = qhca_supported_send_ops(IBV_QPT_RC),
		};
		int r;

		close(pipefd[0]);
		h.ctx = new_ctx();
		h.cq = new_cq(h.ctx, 64, 2);
		h.srq = new_srq(h.ctx, 16, 1, 3);
		s.scq = h.cq;
		s.rcq = h.cq;
		h.rc = new_qp(h.ctx, &s);
		s.type = IBV_QPT_UD;
		s.srq = h.srq;
		s.qpn = 6;
		s.send_ops = 0;
		h.ud = new_qp(h.ctx, &s);

		/* once outside, for lazy binding and first-touch faults */
		r = hot_path(&h);
		if (r) {
			result = (char)('A' + r);
		} else if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT)) {
			result = 'S';
		} else {
			r = hot_path(&h);
			result = r ? (char)('A' + r) : 'K';
		}
		if (write(pipefd[1], &result, 1) != 1)
			syscall(SYS_exit, 1);
		syscall(SYS_exit, 0);
	}
	close(pipefd[1]);
	if (pid < 0 || read(pipefd[0], &result, 1) != 1)
		result = 0;
	close(pipefd[0]);
	if (pid > 0)
		waitpid(pid, &status, 0);
	if (result == 'S' && WIFEXITED(status) && !WEXITSTATUS(status)) {
		g_test_skip("seccomp strict mode unavailable: no system call on the data path not checked");
		return;
	}
	if (WIFSIGNALED(status))
		diag("child killed by signal %d (a system call?)",
		     WTERMSIG(status));
	else if (result != 'K')
		diag("child result %c", result ? result : '?');
	ok(pid > 0 && WIFEXITED(status) && result == 'K',
	   "post_send, post_recv, post_srq_recv, wr API, poll_cq, cq_ex, req_notify_cq make no system call");
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/provider/datapath/sizing", test_sizing);
	g_test_add_func("/provider/datapath/send-wqe", test_send_wqe);
	g_test_add_func("/provider/datapath/send-wqe-errors",
			test_send_wqe_errors);
	g_test_add_func("/provider/datapath/recv-wqe", test_recv_wqe);
	g_test_add_func("/provider/datapath/cqe-decode", test_cqe_decode);
	g_test_add_func("/provider/datapath/poll-wrap", test_poll_wrap);
	g_test_add_func("/provider/datapath/cq-ex", test_cq_ex);
	g_test_add_func("/provider/datapath/post-send", test_post_send);
	g_test_add_func("/provider/datapath/srq", test_srq);
	g_test_add_func("/provider/datapath/srq-resize", test_srq_resize);
	g_test_add_func("/provider/datapath/cq-clean-wrap",
			test_cq_clean_wrap);
	g_test_add_func("/provider/datapath/wr-api", test_wr_api);
	g_test_add_func("/provider/datapath/wr-api-ud", test_wr_api_ud);
	g_test_add_func("/provider/datapath/wr-placement", test_wr_placement);
	g_test_add_func("/provider/datapath/bind-mw", test_bind_mw);
	g_test_add_func("/provider/datapath/wr-bind-mw", test_wr_bind_mw);
	g_test_add_func("/provider/datapath/bind-mw-local-rights",
			test_bind_mw_local_rights);
	g_test_add_func("/provider/datapath/create-validation",
			test_create_validation);
	g_test_add_func("/provider/datapath/create-resp", test_create_resp);
	g_test_add_func("/provider/datapath/no-syscalls", test_no_syscalls);
	return g_test_run();
}
