/*
 * QTest for the qhca RDMA HCA: the /qhca/place/ cases, IBA 1.5 memory
 * placement (RDMA ATOMIC WRITE and RDMA FLUSH) between two devices
 * (qhca-wire.h)
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "libqtest.h"
#include "qemu/bswap.h"
#include "qhca-wire.h"
/*
 * IBA 1.5 memory placement operations: RDMA ATOMIC WRITE
 * and RDMA FLUSH, answered by an empty READ RESPONSE ONLY
 */

#define PLACE_ACCESS (ALL_ACCESS | QHCA_ACCESS_FLUSH_GLOBAL)

static struct qhca_send_wqe flush_wqe(uint64_t wr_id, const Mr *m,
                                      uint64_t off, uint64_t len,
                                      uint32_t type, uint32_t level)
{
    struct qhca_send_wqe w = wqe(QHCA_WQE_FLUSH, wr_id);

    w.rdma.remote_addr = cpu_to_le64(m->iova + off);
    w.rdma.rkey = cpu_to_le32(m->key);
    w.rdma.feth = cpu_to_le32(type | level << QHCA_FLUSH_LEVEL_SHIFT);
    w.rdma.compare_add = cpu_to_le64(len);
    return w;
}

static struct qhca_send_wqe atomic_write_wqe(uint64_t wr_id, const Mr *m,
                                             uint64_t off, const char *val)
{
    struct qhca_send_wqe w = wqe(QHCA_WQE_ATOMIC_WRITE, wr_id);

    w.rdma.remote_addr = cpu_to_le64(m->iova + off);
    w.rdma.rkey = cpu_to_le32(m->key);
    memcpy(&w.rdma.compare_add, val, 8);
    return w;
}

static void place_pair(Pair *p, End *a, End *b, uint32_t qp_access)
{
    ConnOpts o = rc_default_opts;

    o.access = qp_access;
    pair_start(p, WIRE_PASS);
    rc_pair(p, a, b, &o, false);
}

static void test_place_ops(void)
{
    Pair p;
    End a, b;
    Mr ma, mb;
    struct qhca_sge s;
    struct qhca_send_wqe w;
    struct qhca_cqe c;
    uint8_t buf[64], want[64];
    uint64_t st[QHCA_STAT_NUM], dups;

    place_pair(&p, &a, &b, PLACE_ACCESS);
    g_assert_true(qhca_rd(&p.b, QHCA_REG_CAPS) & QHCA_CAP_ATOMIC_WRITE);
    g_assert_true(qhca_rd(&p.b, QHCA_REG_CAPS) & QHCA_CAP_FLUSH_GLOBAL);
    ma = mr_reg(&p.a, a.pdn, 64, QHCA_ACCESS_LOCAL_WRITE, 0x3000);
    mb = mr_reg(&p.b, b.pdn, 64, QHCA_ACCESS_LOCAL_WRITE |
                QHCA_ACCESS_REMOTE_WRITE | QHCA_ACCESS_FLUSH_GLOBAL, 0x8000);
    memset(want, 0xee, sizeof(want));
    mr_io(&p.b, &mb, 0, want, sizeof(want), true);

    /* a WRITE, then an ATOMIC WRITE of 8 bytes as they are, then FLUSHes */
    fill(buf, 16, 7);
    mr_io(&p.a, &ma, 0, buf, 16, true);
    memcpy(want + 32, buf, 16);
    w = wqe(QHCA_WQE_RDMA_WRITE, 1);
    w.rdma.remote_addr = cpu_to_le64(mb.iova + 32);
    w.rdma.rkey = cpu_to_le32(mb.key);
    s = sge(&ma, 0, 16);
    post_send(&a, &w, &s, 1, NULL, 0);
    w = atomic_write_wqe(2, &mb, 8, "ABCDEFGH");
    post_send(&a, &w, NULL, 0, NULL, 0);
    memcpy(want + 8, "ABCDEFGH", 8);
    w = flush_wqe(3, &mb, 0, 64, QHCA_FLUSH_GLOBAL, QHCA_FLUSH_RANGE);
    post_send(&a, &w, NULL, 0, NULL, 0);
    /* the whole region: the RETH address and length say nothing */
    w = flush_wqe(4, &mb, 0, 0, QHCA_FLUSH_GLOBAL, QHCA_FLUSH_MR);
    w.rdma.remote_addr = cpu_to_le64(0x123);
    post_send(&a, &w, NULL, 0, NULL, 0);
    expect_cqe(&a, 1, QHCA_CQE_SUCCESS, QHCA_CQE_OP_RDMA_WRITE);
    g_assert_true(wait_cqe(&a));
    c = poll_cq(&a);
    g_assert_cmpuint(le64_to_cpu(c.wr_id), ==, 2);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
    g_assert_cmpuint(c.opcode, ==, QHCA_CQE_OP_ATOMIC_WRITE);
    g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, 8);
    expect_cqe(&a, 3, QHCA_CQE_SUCCESS, QHCA_CQE_OP_FLUSH);
    expect_cqe(&a, 4, QHCA_CQE_SUCCESS, QHCA_CQE_OP_FLUSH);
    mr_io(&p.b, &mb, 0, buf, sizeof(buf), false);
    g_assert_cmpmem(buf, sizeof(buf), want, sizeof(want));
    /* they were answered by READ responses without payload */
    g_assert_cmpuint(p.w.last[1]->data[42], ==,
                     QHCA_ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY);
    g_assert_cmpuint(p.w.last[1]->len, ==, 42 + 12 + 4 + 4);

    /*
     * A duplicate ATOMIC WRITE is answered again, not executed again: the
     * request A sent for WR 2 comes again with other bytes at the same PSN
     */
    query_stats(&p.b, 0, st);
    dups = stat_of(st, QHCA_STAT_DUP_REQUESTS);
    {
        QhcaRoceHdr h = hdr_from(&a, &b, QHCA_ROCE_OP_RC_ATOMIC_WRITE,
                                 FIRST_PSN + 1);

        h.ack_req = true;
        h.reth.va = mb.iova + 8;
        h.reth.rkey = mb.key;
        h.reth.dma_len = 8;
        inject(&p, 1, &h, "XXXXXXXX", 8);
        h = hdr_from(&a, &b, QHCA_ROCE_OP_RC_FLUSH, FIRST_PSN + 2);
        h.reth.va = mb.iova;
        h.reth.rkey = mb.key;
        h.reth.dma_len = 64;
        h.feth = QHCA_FLUSH_GLOBAL;
        inject(&p, 1, &h, NULL, 0);
    }
    settle(&p, 50);
    query_stats(&p.b, 0, st);
    g_assert_cmpuint(stat_of(st, QHCA_STAT_DUP_REQUESTS), ==, dups + 2);
    mr_io(&p.b, &mb, 8, buf, 8, false);
    g_assert_cmpmem(buf, 8, "ABCDEFGH", 8);
    g_assert_cmpuint(qp_state(&b), ==, QHCA_QPS_RTS);
    g_assert_true(cq_idle(&a, 20));
    pair_stop(&p);
}

/* Each refused FLUSH or ATOMIC WRITE, on a pair of its own */
typedef struct PlaceCase {
    const char *name;
    uint32_t qp_access;
    uint32_t mr_access;
    uint8_t op;                 /* QHCA_WQE_FLUSH or _ATOMIC_WRITE */
    uint64_t off;
    uint64_t len;               /* FLUSH */
    uint32_t feth;              /* FLUSH */
    unsigned nsge;
    uint8_t status;             /* expected at A */
} PlaceCase;

#define MR_RW_FLUSH (QHCA_ACCESS_LOCAL_WRITE | QHCA_ACCESS_REMOTE_WRITE | \
                     QHCA_ACCESS_FLUSH_GLOBAL)

static const PlaceCase place_cases[] = {
    { "atomic write misaligned", PLACE_ACCESS, MR_RW_FLUSH,
      QHCA_WQE_ATOMIC_WRITE, 4, 0, 0, 0, QHCA_CQE_REM_INV_REQ_ERR },
    { "atomic write without remote write (MR)", PLACE_ACCESS,
      QHCA_ACCESS_LOCAL_WRITE | QHCA_ACCESS_FLUSH_GLOBAL,
      QHCA_WQE_ATOMIC_WRITE, 8, 0, 0, 0, QHCA_CQE_REM_ACCESS_ERR },
    { "atomic write past the end", PLACE_ACCESS, MR_RW_FLUSH,
      QHCA_WQE_ATOMIC_WRITE, 64, 0, 0, 0, QHCA_CQE_REM_ACCESS_ERR },
    { "flush without flush rights (MR)", PLACE_ACCESS,
      QHCA_ACCESS_LOCAL_WRITE | QHCA_ACCESS_REMOTE_WRITE,
      QHCA_WQE_FLUSH, 0, 64, QHCA_FLUSH_GLOBAL, 0, QHCA_CQE_REM_ACCESS_ERR },
    { "flush without flush rights (QP)", ALL_ACCESS, MR_RW_FLUSH,
      QHCA_WQE_FLUSH, 0, 64, QHCA_FLUSH_GLOBAL, 0, QHCA_CQE_REM_ACCESS_ERR },
    { "flush for persistence (never granted)", PLACE_ACCESS, MR_RW_FLUSH,
      QHCA_WQE_FLUSH, 0, 64, QHCA_FLUSH_PERSISTENT, 0,
      QHCA_CQE_REM_ACCESS_ERR },
    { "flush of a range past the end", PLACE_ACCESS, MR_RW_FLUSH,
      QHCA_WQE_FLUSH, 32, 64, QHCA_FLUSH_GLOBAL, 0,
      QHCA_CQE_REM_ACCESS_ERR },
    { "flush with SGEs", PLACE_ACCESS, MR_RW_FLUSH,
      QHCA_WQE_FLUSH, 0, 64, QHCA_FLUSH_GLOBAL, 1, QHCA_CQE_LOC_QP_OP_ERR },
    { "flush without a placement type", PLACE_ACCESS, MR_RW_FLUSH,
      QHCA_WQE_FLUSH, 0, 64, 0, 0, QHCA_CQE_LOC_QP_OP_ERR },
    { "flush of selectivity level 2", PLACE_ACCESS, MR_RW_FLUSH,
      QHCA_WQE_FLUSH, 0, 64, QHCA_FLUSH_GLOBAL | 2 << QHCA_FLUSH_LEVEL_SHIFT,
      0, QHCA_CQE_LOC_QP_OP_ERR },
    { "atomic write with SGEs", PLACE_ACCESS, MR_RW_FLUSH,
      QHCA_WQE_ATOMIC_WRITE, 8, 0, 0, 1, QHCA_CQE_LOC_QP_OP_ERR },
};

static void test_place_errors(void)
{
    unsigned i;

    for (i = 0; i < ARRAY_SIZE(place_cases); i++) {
        const PlaceCase *k = &place_cases[i];
        Pair p;
        End a, b;
        Mr ma, mb;
        struct qhca_sge s;
        struct qhca_send_wqe w;
        uint8_t before[64], after[64];

        g_test_message("%s", k->name);
        place_pair(&p, &a, &b, k->qp_access);
        ma = mr_reg(&p.a, a.pdn, 64, QHCA_ACCESS_LOCAL_WRITE, 0x3000);
        mb = mr_reg(&p.b, b.pdn, 64, k->mr_access, 0x8000);
        fill(before, sizeof(before), i);
        mr_io(&p.b, &mb, 0, before, sizeof(before), true);
        if (k->op == QHCA_WQE_FLUSH) {
            w = flush_wqe(1, &mb, k->off, k->len, k->feth & 0xf,
                          k->feth >> QHCA_FLUSH_LEVEL_SHIFT);
        } else {
            w = atomic_write_wqe(1, &mb, k->off, "12345678");
        }
        s = sge(&ma, 0, 8);
        post_send(&a, &w, &s, k->nsge, NULL, 0);
        expect_cqe(&a, 1, k->status, 0);
        /* nothing landed */
        mr_io(&p.b, &mb, 0, after, sizeof(after), false);
        g_assert_cmpmem(after, sizeof(after), before, sizeof(before));
        if (k->status != QHCA_CQE_LOC_QP_OP_ERR) {
            g_assert_cmpuint(qp_state(&b), ==, QHCA_QPS_ERR);
        } else {
            /* refused before anything went on the wire */
            g_assert_cmpuint(qp_state(&b), ==, QHCA_QPS_RTS);
        }
        pair_stop(&p);
    }
}

/* Malformed requests from the wire: NAKed, the QP to ERR, memory intact */
static void test_place_hostile(void)
{
    static const struct {
        const char *name;
        uint8_t op;
        uint64_t off;
        uint32_t dma_len;
        uint32_t feth;
        uint32_t payload;
    } cases[] = {
        { "atomic write of 4 bytes", QHCA_ROCE_OP_RC_ATOMIC_WRITE, 8, 8, 0,
          4 },
        { "atomic write saying 16 bytes", QHCA_ROCE_OP_RC_ATOMIC_WRITE, 8, 16,
          0, 8 },
        { "atomic write of 12 bytes", QHCA_ROCE_OP_RC_ATOMIC_WRITE, 8, 8, 0,
          12 },
        { "flush with reserved FETH bits", QHCA_ROCE_OP_RC_FLUSH, 0, 64,
          QHCA_FLUSH_GLOBAL | 0x100, 0 },
        { "flush of an unknown placement type", QHCA_ROCE_OP_RC_FLUSH, 0, 64,
          0x4, 0 },
        { "flush of 4 GiB - 1", QHCA_ROCE_OP_RC_FLUSH, 0, 0xffffffff,
          QHCA_FLUSH_GLOBAL, 0 },
    };
    unsigned i;

    for (i = 0; i < ARRAY_SIZE(cases); i++) {
        Pair p;
        End a, b;
        Mr mb;
        QhcaRoceHdr h;
        uint8_t pay[16], before[64], after[64];

        g_test_message("%s", cases[i].name);
        place_pair(&p, &a, &b, PLACE_ACCESS);
        mb = mr_reg(&p.b, b.pdn, 64, MR_RW_FLUSH, 0x8000);
        fill(before, sizeof(before), i);
        mr_io(&p.b, &mb, 0, before, sizeof(before), true);
        fill(pay, sizeof(pay), 99);
        h = hdr_from(&a, &b, cases[i].op, FIRST_PSN);
        h.ack_req = true;
        h.reth.va = mb.iova + cases[i].off;
        h.reth.rkey = mb.key;
        h.reth.dma_len = cases[i].dma_len;
        h.feth = cases[i].feth;
        inject(&p, 1, &h, pay, cases[i].payload);
        settle(&p, 50);
        g_assert_cmpuint(qp_state(&b), ==, QHCA_QPS_ERR);
        mr_io(&p.b, &mb, 0, after, sizeof(after), false);
        g_assert_cmpmem(after, sizeof(after), before, sizeof(before));
        pair_stop(&p);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    qtest_add_func("/qhca/place/ops", test_place_ops);
    qtest_add_func("/qhca/place/errors", test_place_errors);
    qtest_add_func("/qhca/place/hostile", test_place_hostile);

    return g_test_run();
}
