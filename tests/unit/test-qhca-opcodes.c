// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Host tests of the send opcode table in include/qhca_hw.h
 * (qhca_wqe_op_info(), qhca_wqe_op_allowed(), qhca_wqe_op_has()), which
 * the device, the kernel driver and the rdma-core provider all take their
 * opcode rules from.  The table is checked against a reference written
 * here from docs/hardware.md (section 8 and its opcode table, the numbers
 * as literals), against the rules that hold between its columns whatever
 * opcodes it has, and at the lookups' bounds.
 *
 * A GLib test program (g_test, run with --tap by meson test): one case per
 * group below, each check in it named (tests/unit/unit-check.h).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "qhca_hw.h"
#include "unit-check.h"

#define ok(cond, ...) unit_check(cond, __VA_ARGS__)
#define N(a) (sizeof(a) / sizeof((a)[0]))

/* ---- the reference: docs/hardware.md, section 8 ---- */

/* QP types as hardware.md numbers them (enum qhca_qp_type) */
#define GSI 1u
#define RC 2u
#define UC 3u
#define UD 4u

#define T(t) (1u << (t))
#define CONN (T(RC) | T(UC))
#define ANY (T(GSI) | T(RC) | T(UC) | T(UD))

enum {
	REMOTE = 1 << 0, IMM = 1 << 1, ATOMIC = 1 << 2, INLINE = 1 << 3,
	INV = 1 << 4, LOCAL = 1 << 5, RD_ATOMIC = 1 << 6, NO_SGE = 1 << 7,
};

static const struct ref_op {
	const char *name;
	uint32_t op;		/* WQE opcode: Linux's enum ib_wr_opcode */
	uint32_t qp_types;
	uint32_t fields;
	uint32_t cqe;		/* CQE opcode: Linux's enum ib_wc_opcode */
} ref[] = {
	{ "RDMA_WRITE", 0x00, CONN, REMOTE | INLINE, 1 },
	{ "RDMA_WRITE_WITH_IMM", 0x01, CONN, REMOTE | IMM | INLINE, 1 },
	{ "SEND", 0x02, ANY, INLINE, 0 },
	{ "SEND_WITH_IMM", 0x03, ANY, IMM | INLINE, 0 },
	{ "RDMA_READ", 0x04, T(RC), REMOTE | RD_ATOMIC, 2 },
	{ "ATOMIC_CMP_AND_SWP", 0x05, T(RC), REMOTE | ATOMIC | RD_ATOMIC, 3 },
	{ "ATOMIC_FETCH_AND_ADD", 0x06, T(RC), REMOTE | ATOMIC | RD_ATOMIC, 4 },
	{ "LOCAL_INV", 0x07, ANY, INV | LOCAL, 6 },
	{ "BIND_MW", 0x08, CONN, LOCAL | NO_SGE, 5 },
	{ "SEND_WITH_INV", 0x09, T(RC), INV | INLINE, 0 },
	{ "FLUSH", 0x0e, T(RC), REMOTE | RD_ATOMIC | NO_SGE, 8 },
	{ "ATOMIC_WRITE", 0x0f, T(RC), REMOTE | RD_ATOMIC | NO_SGE, 9 },
	{ "REG_MR", 0x20, ANY, LOCAL, 10 },
};

/* The reference's field bits as the header's QHCA_WQE_OPF_* */
static uint32_t ref_flags(uint32_t fields)
{
	static const struct {
		uint32_t ref, hw;
	} map[] = {
		{ REMOTE, QHCA_WQE_OPF_REMOTE }, { IMM, QHCA_WQE_OPF_IMM },
		{ ATOMIC, QHCA_WQE_OPF_ATOMIC }, { INLINE, QHCA_WQE_OPF_INLINE },
		{ INV, QHCA_WQE_OPF_INV }, { LOCAL, QHCA_WQE_OPF_LOCAL },
		{ RD_ATOMIC, QHCA_WQE_OPF_RD_ATOMIC },
		{ NO_SGE, QHCA_WQE_OPF_NO_SGE },
	};
	uint32_t f = 0;
	size_t i;

	for (i = 0; i < N(map); i++)
		if (fields & map[i].ref)
			f |= map[i].hw;
	return f;
}

static const struct ref_op *ref_find(uint32_t op)
{
	size_t i;

	for (i = 0; i < N(ref); i++)
		if (ref[i].op == op)
			return &ref[i];
	return NULL;
}

#define ALL_OPF (QHCA_WQE_OPF_REMOTE | QHCA_WQE_OPF_IMM | \
		 QHCA_WQE_OPF_ATOMIC | QHCA_WQE_OPF_INLINE | \
		 QHCA_WQE_OPF_INV | QHCA_WQE_OPF_LOCAL | \
		 QHCA_WQE_OPF_RD_ATOMIC | QHCA_WQE_OPF_NO_SGE)

static const uint32_t qp_types[] = { QHCA_QPT_GSI, QHCA_QPT_RC, QHCA_QPT_UC,
				     QHCA_QPT_UD };

/* ---- cases ---- */

/* The header's constants are the numbers hardware.md gives */
static void test_numbers(void)
{
	static const struct {
		const char *name;
		uint32_t hw, want;
	} wqe[] = {
		{ "RDMA_WRITE", QHCA_WQE_RDMA_WRITE, 0x00 },
		{ "RDMA_WRITE_WITH_IMM", QHCA_WQE_RDMA_WRITE_WITH_IMM, 0x01 },
		{ "SEND", QHCA_WQE_SEND, 0x02 },
		{ "SEND_WITH_IMM", QHCA_WQE_SEND_WITH_IMM, 0x03 },
		{ "RDMA_READ", QHCA_WQE_RDMA_READ, 0x04 },
		{ "ATOMIC_CMP_AND_SWP", QHCA_WQE_ATOMIC_CMP_AND_SWP, 0x05 },
		{ "ATOMIC_FETCH_AND_ADD", QHCA_WQE_ATOMIC_FETCH_AND_ADD, 0x06 },
		{ "LOCAL_INV", QHCA_WQE_LOCAL_INV, 0x07 },
		{ "BIND_MW", QHCA_WQE_BIND_MW, 0x08 },
		{ "SEND_WITH_INV", QHCA_WQE_SEND_WITH_INV, 0x09 },
		{ "FLUSH", QHCA_WQE_FLUSH, 0x0e },
		{ "ATOMIC_WRITE", QHCA_WQE_ATOMIC_WRITE, 0x0f },
		{ "REG_MR", QHCA_WQE_REG_MR, 0x20 },
	}, cqe[] = {
		{ "SEND", QHCA_CQE_OP_SEND, 0 },
		{ "RDMA_WRITE", QHCA_CQE_OP_RDMA_WRITE, 1 },
		{ "RDMA_READ", QHCA_CQE_OP_RDMA_READ, 2 },
		{ "COMP_SWAP", QHCA_CQE_OP_COMP_SWAP, 3 },
		{ "FETCH_ADD", QHCA_CQE_OP_FETCH_ADD, 4 },
		{ "BIND_MW", QHCA_CQE_OP_BIND_MW, 5 },
		{ "LOCAL_INV", QHCA_CQE_OP_LOCAL_INV, 6 },
		{ "FLUSH", QHCA_CQE_OP_FLUSH, 8 },
		{ "ATOMIC_WRITE", QHCA_CQE_OP_ATOMIC_WRITE, 9 },
		{ "REG_MR", QHCA_CQE_OP_REG_MR, 10 },
	};
	bool good = true;
	size_t i;

	for (i = 0; i < N(wqe); i++)
		if (wqe[i].hw != wqe[i].want) {
			printf("# QHCA_WQE_%s is %#x, hardware.md %#x\n",
			       wqe[i].name, wqe[i].hw, wqe[i].want);
			good = false;
		}
	ok(good && N(wqe) == N(ref),
	   "numbers: the 13 WQE opcodes are hardware.md's (Linux's enum ib_wr_opcode)");
	good = true;
	for (i = 0; i < N(cqe); i++)
		if (cqe[i].hw != cqe[i].want) {
			printf("# QHCA_CQE_OP_%s is %u, hardware.md %u\n",
			       cqe[i].name, cqe[i].hw, cqe[i].want);
			good = false;
		}
	ok(good, "numbers: the 10 send CQE opcodes are hardware.md's (Linux's enum ib_wc_opcode)");
	ok(QHCA_QPT_GSI == GSI && QHCA_QPT_RC == RC && QHCA_QPT_UC == UC &&
	   QHCA_QPT_UD == UD && QHCA_QPT_BIT(QHCA_QPT_RC) == T(RC) &&
	   QHCA_QPT_BITS_CONN == CONN && QHCA_QPT_BITS_ANY == ANY,
	   "numbers: QP types GSI 1, RC 2, UC 3, UD 4; the masks are their bits");
	ok(QHCA_WQE_OP_COUNT == 0x21 &&
	   QHCA_WQE_OP_COUNT == QHCA_WQE_REG_MR + 1,
	   "numbers: the table has room for opcodes 0..0x20 (REG_MR, the largest)");
}

/* Each opcode's entry is the reference's, and there are no others */
static void test_reference(void)
{
	const struct qhca_wqe_op_info *info;
	const struct ref_op *r;
	bool types = true, flags = true, cqe = true, extra = true;
	uint32_t op;
	size_t i;

	for (i = 0; i < N(ref); i++) {
		r = &ref[i];
		info = qhca_wqe_op_info(r->op);
		if (!info) {
			ok(false, "reference: %s (%#x) is in the table",
			   r->name, r->op);
			types = flags = cqe = false;
			continue;
		}
		if (info->qp_types != r->qp_types) {
			printf("# %s: QP types %#x, want %#x\n", r->name,
			       info->qp_types, r->qp_types);
			types = false;
		}
		if (info->flags != ref_flags(r->fields)) {
			printf("# %s: flags %#x, want %#x\n", r->name,
			       info->flags, ref_flags(r->fields));
			flags = false;
		}
		if (info->cqe_opcode != r->cqe) {
			printf("# %s: CQE opcode %u, want %u\n", r->name,
			       info->cqe_opcode, r->cqe);
			cqe = false;
		}
	}
	for (op = 0; op < QHCA_WQE_OP_COUNT; op++)
		if (!ref_find(op) && qhca_wqe_op_info(op)) {
			printf("# %#x: in the table, not in hardware.md\n", op);
			extra = false;
		}
	ok(types, "reference: each opcode's QP types are hardware.md's (RC only: READ, atomics, SEND_WITH_INV, FLUSH, ATOMIC_WRITE; RC and UC: WRITE*, BIND_MW; any: SEND*, LOCAL_INV, REG_MR)");
	ok(flags, "reference: each opcode's fields and execution (remote address, immediate, atomic operands, inline, invalidate, local, read/atomic, no SGEs) are hardware.md's");
	ok(cqe, "reference: each opcode's send CQE opcode is hardware.md's");
	ok(extra, "reference: no opcode in the table that hardware.md does not have");
}

/* Rules between the columns, which any correct table keeps */
static void test_rules(void)
{
	bool known = true, cqe = true, types = true, conn = true;
	bool atomic = true, inl = true, local = true, imm = true, ud = true;
	const struct qhca_wqe_op_info *info;
	uint32_t op, f, t;

	for (op = 0; op < QHCA_WQE_OP_COUNT; op++) {
		info = qhca_wqe_op_info(op);
		if (!info)
			continue;
		f = info->flags;
		t = info->qp_types;
		/* some QP type, and only QP types the device has */
		if (!t || (t & ~(uint32_t)QHCA_QPT_BITS_ANY) || (f & ~ALL_OPF)) {
			printf("# %#x: QP types %#x, flags %#x\n", op, t, f);
			known = false;
		}
		/* a send CQE opcode the device has, not a receive one */
		switch (info->cqe_opcode) {
		case QHCA_CQE_OP_SEND: case QHCA_CQE_OP_RDMA_WRITE:
		case QHCA_CQE_OP_RDMA_READ: case QHCA_CQE_OP_COMP_SWAP:
		case QHCA_CQE_OP_FETCH_ADD: case QHCA_CQE_OP_BIND_MW:
		case QHCA_CQE_OP_LOCAL_INV: case QHCA_CQE_OP_FLUSH:
		case QHCA_CQE_OP_ATOMIC_WRITE: case QHCA_CQE_OP_REG_MR:
			break;
		default:
			printf("# %#x: CQE opcode %u\n", op, info->cqe_opcode);
			cqe = false;
		}
		/* RC takes every opcode; UC's are RC's; GSI's are UD's */
		if (!(t & QHCA_QPT_BIT(QHCA_QPT_RC)) ||
		    !(t & QHCA_QPT_BIT(QHCA_QPT_UD)) !=
			    !(t & QHCA_QPT_BIT(QHCA_QPT_GSI))) {
			printf("# %#x: QP types %#x\n", op, t);
			types = false;
		}
		/* remote memory needs a connection; a response needs RC */
		if (((f & QHCA_WQE_OPF_REMOTE) && (t & ~QHCA_QPT_BITS_CONN)) ||
		    ((f & QHCA_WQE_OPF_RD_ATOMIC) &&
		     t != QHCA_QPT_BIT(QHCA_QPT_RC))) {
			printf("# %#x: QP types %#x for flags %#x\n", op, t, f);
			conn = false;
		}
		if ((f & QHCA_WQE_OPF_ATOMIC) &&
		    (f & (QHCA_WQE_OPF_REMOTE | QHCA_WQE_OPF_RD_ATOMIC)) !=
			    (QHCA_WQE_OPF_REMOTE | QHCA_WQE_OPF_RD_ATOMIC))
			atomic = false;
		/* inline data is data going out: not answered, not local */
		if ((f & QHCA_WQE_OPF_INLINE) &&
		    (f & (QHCA_WQE_OPF_RD_ATOMIC | QHCA_WQE_OPF_LOCAL |
			  QHCA_WQE_OPF_NO_SGE | QHCA_WQE_OPF_ATOMIC)))
			inl = false;
		/* a local operation sends nothing and names no remote memory */
		if ((f & QHCA_WQE_OPF_LOCAL) &&
		    (f & (QHCA_WQE_OPF_REMOTE | QHCA_WQE_OPF_IMM |
			  QHCA_WQE_OPF_RD_ATOMIC | QHCA_WQE_OPF_INLINE)))
			local = false;
		/* immediate data goes with a message that carries data */
		if ((f & QHCA_WQE_OPF_IMM) &&
		    (!(f & QHCA_WQE_OPF_INLINE) ||
		     (f & QHCA_WQE_OPF_INV) ||
		     (info->cqe_opcode != QHCA_CQE_OP_SEND &&
		      info->cqe_opcode != QHCA_CQE_OP_RDMA_WRITE)))
			imm = false;
		/* a datagram QP sends and does local operations, nothing else */
		if ((t & QHCA_QPT_BIT(QHCA_QPT_UD)) &&
		    !(f & QHCA_WQE_OPF_LOCAL) &&
		    info->cqe_opcode != QHCA_CQE_OP_SEND)
			ud = false;
	}
	ok(known, "rules: every opcode in the table is posted by some QP type, only known types and flags");
	ok(cqe, "rules: every opcode has a send CQE opcode of the contract (none with the RECV bit)");
	ok(types, "rules: RC may post every opcode; UD and GSI post the same ones");
	ok(conn, "rules: remote memory only on connected QPs, READ/atomic responses only on RC");
	ok(atomic, "rules: atomics name remote memory and are answered with data");
	ok(inl, "rules: inline data only for opcodes that send data out (not READ, atomics, FLUSH, ATOMIC_WRITE, local operations)");
	ok(local, "rules: local operations have no remote address, immediate, inline data or response");
	ok(imm, "rules: immediate data only with SEND and RDMA WRITE, which may be inline");
	ok(ud, "rules: UD and GSI post sends and local operations only");

	/* what RC-only means, spelled out */
	ok(!qhca_wqe_op_allowed(QHCA_WQE_RDMA_READ, QHCA_QPT_UD) &&
	   !qhca_wqe_op_allowed(QHCA_WQE_RDMA_WRITE, QHCA_QPT_UD) &&
	   !qhca_wqe_op_allowed(QHCA_WQE_ATOMIC_CMP_AND_SWP, QHCA_QPT_UD) &&
	   !qhca_wqe_op_allowed(QHCA_WQE_SEND_WITH_INV, QHCA_QPT_UD) &&
	   !qhca_wqe_op_allowed(QHCA_WQE_BIND_MW, QHCA_QPT_GSI) &&
	   !qhca_wqe_op_allowed(QHCA_WQE_FLUSH, QHCA_QPT_UC) &&
	   !qhca_wqe_op_allowed(QHCA_WQE_RDMA_READ, QHCA_QPT_UC) &&
	   qhca_wqe_op_allowed(QHCA_WQE_RDMA_WRITE_WITH_IMM, QHCA_QPT_UC) &&
	   qhca_wqe_op_allowed(QHCA_WQE_SEND_WITH_IMM, QHCA_QPT_UD) &&
	   qhca_wqe_op_allowed(QHCA_WQE_REG_MR, QHCA_QPT_GSI),
	   "rules: RDMA, atomics, SEND_WITH_INV and BIND_MW refused on UD and GSI, READ and FLUSH on UC; UC writes, UD sends");
}

/* The lookups agree with the table and refuse what is not in it */
static void test_bounds(void)
{
	static const uint32_t far[] = {
		QHCA_WQE_OP_COUNT, 0x21, 0x7f, 0x80, 0xff, 0x100,
		0x100 + QHCA_WQE_SEND, 0x100 + QHCA_WQE_REG_MR, 0x10000,
		0x80000000u + QHCA_WQE_SEND, 0xffffffffu,
	};
	static const uint32_t bad_types[] = { 0, 5, 6, 7, 8, 31, 32, 33,
					      0x100 + QHCA_QPT_RC,
					      0xffffffffu };
	const struct qhca_wqe_op_info *info;
	bool holes = true, beyond = true, allowed = true, has = true;
	bool types = true;
	uint32_t op, bit;
	size_t i;

	for (op = 0; op < QHCA_WQE_OP_COUNT; op++)
		if (!ref_find(op) && qhca_wqe_op_info(op)) {
			printf("# %#x found\n", op);
			holes = false;
		}
	ok(holes, "bounds: the numbers between opcodes (0x0a-0x0d, 0x10-0x1f) are not found");
	for (i = 0; i < N(far); i++)
		if (qhca_wqe_op_info(far[i]) ||
		    qhca_wqe_op_allowed(far[i], QHCA_QPT_RC) ||
		    qhca_wqe_op_has(far[i], 0)) {
			printf("# %#x found\n", far[i]);
			beyond = false;
		}
	ok(beyond, "bounds: nothing from 0x21 up (not the table's size, not an opcode plus 0x100 or 2^31, not 0xffffffff)");
	ok(qhca_wqe_op_info(QHCA_WQE_OP_COUNT - 1) &&
	   qhca_wqe_op_info(QHCA_WQE_OP_COUNT - 1) ==
		   qhca_wqe_op_info(QHCA_WQE_REG_MR) &&
	   qhca_wqe_op_info(0) &&
	   qhca_wqe_op_info(0)->cqe_opcode == QHCA_CQE_OP_RDMA_WRITE,
	   "bounds: the first (0, RDMA_WRITE) and the last entry (0x20, REG_MR) are found");

	for (op = 0; op < QHCA_WQE_OP_COUNT; op++) {
		info = qhca_wqe_op_info(op);
		for (i = 0; i < N(qp_types); i++)
			if (!qhca_wqe_op_allowed(op, qp_types[i]) !=
			    !(info &&
			      (info->qp_types & QHCA_QPT_BIT(qp_types[i]))))
				allowed = false;
		for (bit = 0; bit < 32; bit++)
			if (!qhca_wqe_op_has(op, 1u << bit) !=
			    !(info && (info->flags & (1u << bit))))
				has = false;
		if (info && (!qhca_wqe_op_has(op, 0) ||
			     !qhca_wqe_op_has(op, info->flags) ||
			     qhca_wqe_op_has(op, info->flags | ~ALL_OPF)))
			has = false;
		for (i = 0; i < N(bad_types); i++)
			if (qhca_wqe_op_allowed(op, bad_types[i]))
				types = false;
	}
	ok(allowed, "bounds: qhca_wqe_op_allowed() is the entry's QP types, for every opcode and type");
	ok(has, "bounds: qhca_wqe_op_has() is true when the entry has every flag asked for");
	ok(types, "bounds: no opcode is allowed on a QP type the device does not have (0, 5..8, 31..33, 0x102, 0xffffffff)");
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/opcodes/numbers", test_numbers);
	g_test_add_func("/opcodes/reference", test_reference);
	g_test_add_func("/opcodes/rules", test_rules);
	g_test_add_func("/opcodes/bounds", test_bounds);
	return g_test_run();
}
