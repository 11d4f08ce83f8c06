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
 * test_*() of datapath-*.c, a file per subject, each check in it named
 * (tests/unit/unit-check.h).  This file has what they share (datapath.h)
 * and main(), which adds the cases.
 */

#include <config.h>

#include <stdarg.h>
#include <stdio.h>

#include "datapath.h"

void diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

/* ------------------------------------------------------------------------
 * Byte images
 */
void put16(uint8_t *b, size_t off, uint16_t v)
{
	v = htole16(v);
	memcpy(b + off, &v, sizeof(v));
}

void put32(uint8_t *b, size_t off, uint32_t v)
{
	v = htole32(v);
	memcpy(b + off, &v, sizeof(v));
}

void put64(uint8_t *b, size_t off, uint64_t v)
{
	v = htole64(v);
	memcpy(b + off, &v, sizeof(v));
}

uint32_t get32(const void *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

bool same_bytes(const uint8_t *got, const uint8_t *want, size_t len,
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

bool all_bytes(const uint8_t *p, size_t len, uint8_t v)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != v)
			return false;
	return true;
}

/* The expected send WQE header and SGE (offsets of datapath.h) */
void exp_hdr(uint8_t *e, uint8_t op, uint8_t flags, uint8_t num_sge,
	     uint32_t inline_len, uint64_t wr_id)
{
	memset(e, 0, W_HDR);
	e[W_OPCODE] = op;
	e[W_FLAGS] = flags;
	e[W_NUM_SGE] = num_sge;
	put32(e, W_INLINE_LEN, inline_len);
	put64(e, W_WR_ID, wr_id);
}

void exp_sge(uint8_t *e, const struct ibv_sge *sge)
{
	memset(e, 0, W_SGE);
	put64(e, 0, sge->addr);
	put32(e, 8, sge->length);
	put32(e, 12, sge->lkey);
}

struct ibv_sge test_sges[3] = {
	{ .addr = 0x1122334455667788ull, .length = 0x1000, .lkey = 0xabc01 },
	{ .addr = 0x00007fff00001000ull, .length = 0x20, .lkey = 0xabc02 },
	{ .addr = 0x8000000000000008ull, .length = 8, .lkey = 0x300 },
};

/* ------------------------------------------------------------------------
 * A context without a device: a memory page for doorbells
 */
static struct verbs_device test_vdev;

struct qhca_context *new_ctx(void)
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

void free_ctx(struct qhca_context *ctx)
{
	qhca_ctx_free_qp_table(ctx);
	free(ctx->db);
	free(ctx);
}

uint32_t db_val(struct qhca_context *ctx, uint32_t off)
{
	return get32((uint8_t *)ctx->db + off);
}

struct qhca_cq *new_cq(struct qhca_context *ctx, int cqe, uint32_t cqn)
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

void free_cq(struct qhca_cq *cq)
{
	qhca_cq_teardown(cq);
	free(cq);
}

struct qhca_srq *new_srq(struct qhca_context *ctx, uint32_t max_wr,
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

void free_srq(struct qhca_srq *srq)
{
	qhca_srq_teardown(srq);
	free(srq);
}

struct qhca_qp *new_qp(struct qhca_context *ctx, const struct qp_spec *s)
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

void free_qp(struct qhca_context *ctx, struct qhca_qp *qp)
{
	qhca_qp_table_remove(ctx, qp->qpn);
	qhca_qp_teardown(qp);
	free(qp);
}

/* Play the device: write a CQE at its producer index, owner byte last */
void dev_write_cqe(struct qhca_cq *cq, uint32_t dev_pi,
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

void dev_complete(struct qhca_cq *cq, uint32_t dev_pi, uint32_t qpn,
		  uint8_t opcode, uint16_t wqe_index, uint64_t wr_id)
{
	struct test_cqe c = {
		.wr_id = wr_id, .opcode = opcode, .qpn = qpn,
		.wqe_index = wqe_index,
	};

	dev_write_cqe(cq, dev_pi, &c);
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
