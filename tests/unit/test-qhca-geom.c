// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Host tests of the queue geometry in include/qhca_hw.h ("Queue geometry"):
 * the static inlines that the kernel driver and the rdma-core provider both
 * size queues with.  They are checked against a reference written here
 * from the rules as docs/abi.md states them (64-bit arithmetic, doubling
 * loops, no shared code), over every SGE count and inline size the
 * contract allows and more, and for the properties both sides rely on: the
 * caps a stride holds are at least those asked for, they fit in it, and
 * sizing again from them gives the same geometry (the provider sends the
 * actual caps; the kernel recomputes from them).
 *
 * A GLib test program (g_test, run with --tap by meson test): one case per
 * group below, each check in it named (tests/unit/unit-check.h).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "qhca_hw.h"
#include "unit-check.h"

#define ok(cond, name) unit_check(cond, "%s", name)

/* ---- the reference: docs/abi.md, "Sizes both sides compute" ---- */

static uint64_t ref_pow2(uint64_t n)
{
	uint64_t p = 1;

	while (p < n)
		p *= 2;
	return p;
}

/* depth, or 0 when refused */
static uint64_t ref_depth(uint64_t n, uint64_t limit)
{
	uint64_t d = ref_pow2(n < 8 ? 8 : n);

	if (limit > 32768)
		limit = 32768;
	return d > limit ? 0 : d;
}

struct ref_geom {
	bool ok;
	uint64_t depth, stride, max_sge, max_inline;
};

static struct ref_geom ref_sq(uint64_t wr, uint64_t sge, uint64_t inl,
			      uint64_t limit)
{
	struct ref_geom r = { 0 };
	uint64_t room;

	if (sge > 16 || inl > 512)
		return r;
	r.depth = ref_depth(wr, limit);
	r.stride = ref_pow2(64 + (16 * sge > inl ? 16 * sge : inl));
	if (r.stride < 64)
		r.stride = 64;
	if (!r.depth || r.stride > 2048)
		return r;
	room = r.stride - 64;
	r.max_sge = room / 16 > 16 ? 16 : room / 16;
	r.max_inline = room > 512 ? 512 : room;
	r.ok = true;
	return r;
}

static struct ref_geom ref_rq(uint64_t wr, uint64_t sge, uint64_t limit)
{
	struct ref_geom r = { 0 };

	if (sge > 16)
		return r;
	r.depth = ref_depth(wr, limit);
	r.stride = ref_pow2(16 + 16 * sge);
	if (r.stride < 32)
		r.stride = 32;
	if (!r.depth || r.stride > 2048)
		return r;
	r.max_sge = (r.stride - 16) / 16 > 16 ? 16 : (r.stride - 16) / 16;
	r.ok = true;
	return r;
}

static bool same(int ret, const struct qhca_wq_geom *g,
		 const struct ref_geom *r)
{
	if (!r->ok)
		return ret == -1;
	return ret == 0 && g->depth == r->depth &&
	       ((uint64_t)1 << g->log_stride) == r->stride &&
	       g->max_sge == r->max_sge && g->max_inline == r->max_inline;
}

/* ---- cases ---- */

static void test_limits(void)
{
	ok(QHCA_MAX_QUEUE_DEPTH == 32768 &&
	   QHCA_MAX_QUEUE_DEPTH == 1u << QHCA_MAX_QUEUE_LOG &&
	   QHCA_MIN_WQ_DEPTH == 8 && QHCA_MIN_CQ_DEPTH == 8,
	   "limits: depth at most 32768 = 1 << QHCA_MAX_QUEUE_LOG, at least 8");
	/* 16-bit free-running indices tell a full ring from an empty one */
	ok(QHCA_MAX_QUEUE_DEPTH <= (QHCA_DB_NUM_MASK + 1u) / 2,
	   "limits: a full ring of the deepest queue differs from an empty one in 16-bit indices");
}

static void test_depth(void)
{
	static const uint32_t limits[] = { 32768, 65536, 0xffffffffu, 1024,
					   1000, 8, 7, 0 };
	uint64_t want;
	bool good = true, cq = true;
	uint32_t n;
	size_t i;

	for (i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		for (n = 0; n <= 70000; n++) {
			want = ref_depth(n, limits[i]);
			if (qhca_geom_wq_depth(n, limits[i]) != want) {
				printf("# wq depth(%u, limit %u) = %u, want %llu\n",
				       n, limits[i],
				       qhca_geom_wq_depth(n, limits[i]),
				       (unsigned long long)want);
				good = false;
				break;
			}
			if (qhca_geom_cq_depth(n, limits[i]) !=
			    (n ? want : 0)) {
				printf("# cq depth(%u, limit %u) = %u\n",
				       n, limits[i],
				       qhca_geom_cq_depth(n, limits[i]));
				cq = false;
				break;
			}
		}
	}
	ok(good, "depth: next power of two of max(n, 8) for n 0..70000 under 8 limits; 0 above the limit or 32768");
	ok(cq, "CQ depth: as a work queue's, and 0 CQEs refused");
	ok(qhca_geom_wq_depth(0xffffffffu, 0xffffffffu) == 0 &&
	   qhca_geom_wq_depth(0x80000001u, 0xffffffffu) == 0 &&
	   qhca_geom_cq_depth(0xffffffffu, 0xffffffffu) == 0 &&
	   qhca_geom_log2_ceil(0xffffffffu) == 32 &&
	   qhca_geom_log2_ceil(0x80000000u) == 31 &&
	   qhca_geom_log2_ceil(0) == 0 && qhca_geom_log2_ceil(1) == 0 &&
	   qhca_geom_log2_ceil(2) == 1 && qhca_geom_log2_ceil(3) == 2,
	   "depth: 32-bit extremes refused without overflow; log2_ceil at its edges");
}

static void test_strides(void)
{
	static const uint32_t wrs[] = { 0, 1, 16, 32768, 32769 };
	struct qhca_wq_geom g;
	struct ref_geom r;
	bool sq = true, rq = true;
	uint32_t sge, inl;
	size_t i;

	for (i = 0; i < sizeof(wrs) / sizeof(wrs[0]); i++) {
		for (sge = 0; sge <= 18; sge++) {
			for (inl = 0; inl <= 600; inl++) {
				r = ref_sq(wrs[i], sge, inl, 32768);
				if (!same(qhca_geom_sq(wrs[i], sge, inl, 32768,
						       &g), &g, &r)) {
					printf("# sq wr %u sge %u inline %u\n",
					       wrs[i], sge, inl);
					sq = false;
				}
			}
			r = ref_rq(wrs[i], sge, 32768);
			if (!same(qhca_geom_rq(wrs[i], sge, 32768, &g), &g,
				  &r)) {
				printf("# rq wr %u sge %u\n", wrs[i], sge);
				rq = false;
			}
		}
	}
	ok(sq, "send geometry equals the reference for 0..18 SGEs x 0..600 inline bytes (above 16 / 512 refused)");
	ok(rq, "receive geometry equals the reference for 0..18 SGEs (above 16 refused)");
}

/* Values a reader can check by hand (docs/abi.md) */
static void test_table(void)
{
	struct qhca_wq_geom g;

	ok(!qhca_geom_sq(16, 1, 0, 32768, &g) && g.depth == 16 &&
	   g.log_stride == 7 && g.max_sge == 4 && g.max_inline == 64 &&
	   !qhca_geom_rq(16, 1, 32768, &g) && g.depth == 16 &&
	   g.log_stride == 5 && g.max_sge == 1 && g.max_inline == 0 &&
	   !qhca_geom_sq(1, 16, 512, 32768, &g) && g.depth == 8 &&
	   g.log_stride == 10 && g.max_sge == 16 && g.max_inline == 512 &&
	   !qhca_geom_rq(100, 16, 32768, &g) && g.depth == 128 &&
	   g.log_stride == 9 && g.max_sge == 16,
	   "by hand: 16x1 SGE -> SQ 128 B (4 SGEs, 64 inline), RQ 32 B; 16 SGEs + 512 inline -> 1 KiB; RQ 16 SGEs -> 512 B");
}

static void test_properties(void)
{
	struct qhca_wq_geom g, g2;
	bool good = true;
	uint32_t sge, inl;

	for (sge = 0; sge <= QHCA_MAX_SGE; sge++) {
		for (inl = 0; inl <= QHCA_MAX_INLINE; inl++) {
			if (qhca_geom_sq(1, sge, inl, 32768, &g) ||
			    qhca_geom_sq(g.depth, g.max_sge, g.max_inline,
					 32768, &g2) ||
			    g2.depth != g.depth ||
			    g2.log_stride != g.log_stride ||
			    g2.max_sge != g.max_sge ||
			    g2.max_inline != g.max_inline ||
			    g.max_sge < sge || g.max_inline < inl ||
			    QHCA_SEND_WQE_HDR_SIZE + 16 * g.max_sge >
				    1u << g.log_stride ||
			    QHCA_SEND_WQE_HDR_SIZE + g.max_inline >
				    1u << g.log_stride)
				good = false;
		}
		if (qhca_geom_rq(1, sge, 32768, &g) ||
		    qhca_geom_rq(g.depth, g.max_sge, 32768, &g2) ||
		    g2.log_stride != g.log_stride || g2.max_sge != g.max_sge ||
		    g.max_sge < sge ||
		    QHCA_RECV_WQE_HDR_SIZE + 16 * g.max_sge > 1u << g.log_stride)
			good = false;
	}
	ok(good, "caps from a stride cover the request, fit in it, and give the same geometry again");
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/geom/limits", test_limits);
	g_test_add_func("/geom/depth", test_depth);
	g_test_add_func("/geom/strides", test_strides);
	g_test_add_func("/geom/table", test_table);
	g_test_add_func("/geom/properties", test_properties);
	return g_test_run();
}
