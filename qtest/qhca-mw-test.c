/*
 * QTest for the qhca RDMA HCA: the /qhca/mw/ cases, memory windows of type 1
 * and 2B between two devices (qhca-wire.h)
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
 * Memory windows: type 1 and type 2B, bound by BIND_MW
 * WQEs at B, used by A through their keys
 */

static uint32_t mw_alloc(QQhca *d, uint32_t pdn, uint8_t type)
{
    struct qhca_cmd_alloc_mw c = { .pdn = cpu_to_le32(pdn), .type = type };

    return qhca_cmd_ok(d, QHCA_CMD_ALLOC_MW, &c, sizeof(c));
}

/* The key after @key: same index, next variant */
static uint32_t next_key(uint32_t key)
{
    return (key & ~QHCA_KEY_VARIANT_MASK) |
           ((key + 1) & QHCA_KEY_VARIANT_MASK);
}

/* @e binds window @mw_key as @new_key to [off, off + len) of @m */
static void mw_bind(End *e, uint64_t wr_id, uint32_t mw_key, uint32_t new_key,
                    const Mr *m, uint64_t off, uint64_t len, uint32_t access)
{
    struct qhca_send_wqe w = wqe(QHCA_WQE_BIND_MW, wr_id);

    w.bind.addr = cpu_to_le64(m->iova + off);
    w.bind.length = cpu_to_le64(len);
    w.bind.mr_lkey = cpu_to_le32(m->key);
    w.bind.mw_key = cpu_to_le32(mw_key);
    w.bind.new_key = cpu_to_le32(new_key);
    w.bind.access = cpu_to_le32(access);
    post_send(e, &w, NULL, 0, NULL, 0);
}

/* @a WRITEs (or READs) @len bytes at @va through @rkey; its status */
static uint8_t rdma_via(End *a, const Mr *ma, uint64_t wr_id, bool write,
                        uint64_t va, uint32_t rkey, uint32_t len)
{
    struct qhca_send_wqe w = wqe(write ? QHCA_WQE_RDMA_WRITE :
                                 QHCA_WQE_RDMA_READ, wr_id);
    struct qhca_sge s = sge(ma, 0, len);
    struct qhca_cqe c;

    w.rdma.remote_addr = cpu_to_le64(va);
    w.rdma.rkey = cpu_to_le32(rkey);
    post_send(a, &w, &s, 1, NULL, 0);
    g_assert_true(wait_cqe(a));
    c = poll_cq(a);
    g_assert_cmphex(le64_to_cpu(c.wr_id), ==, wr_id);
    return c.status;
}

#define MW_RW   (QHCA_ACCESS_REMOTE_WRITE | QHCA_ACCESS_REMOTE_READ)

/*
 * A window of @type in @e's PD (its allocated key in *@mw) bound by WQE 1
 * as the next variant of that key to [off, off + len) of @m with MW_RW,
 * the bind completed: the key it answers to now
 */
static uint32_t mw_alloc_bound(End *e, uint8_t type, const Mr *m,
                               uint64_t off, uint64_t len, uint32_t *mw)
{
    uint32_t key;

    *mw = mw_alloc(e->d, e->pdn, type);
    key = next_key(*mw);
    mw_bind(e, 1, *mw, key, m, off, len, MW_RW);
    expect_cqe(e, 1, QHCA_CQE_SUCCESS, QHCA_CQE_OP_BIND_MW);
    return key;
}

static void test_mw_type1(void)
{
    Pair p;
    End a, b;
    Mr ma, mb;
    uint8_t out[16], in[16];
    uint32_t mw, k1, k2, k3;

    pair_start(&p, WIRE_PASS);
    rc_pair(&p, &a, &b, NULL, false);
    g_assert_true(qhca_rd(&p.b, QHCA_REG_CAPS) & QHCA_CAP_MW);
    ma = mr_reg(&p.a, a.pdn, 256, QHCA_ACCESS_LOCAL_WRITE, 0x3000);
    /* no remote rights of its own: only the windows give them */
    mb = mr_reg(&p.b, b.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE |
                QHCA_ACCESS_MW_BIND, 0x8000);
    k1 = mw_alloc_bound(&b, QHCA_MW_TYPE_1, &mb, 256, 512, &mw);

    fill(out, sizeof(out), 11);
    mr_io(&p.a, &ma, 0, out, sizeof(out), true);
    g_assert_cmpuint(rdma_via(&a, &ma, 2, true, mb.iova + 256, k1, 16), ==,
                     QHCA_CQE_SUCCESS);
    mr_io(&p.b, &mb, 256, in, sizeof(in), false);
    g_assert_cmpmem(in, sizeof(in), out, sizeof(out));
    /* the last bytes of the window, read back */
    mr_io(&p.b, &mb, 256 + 512 - 16, out, sizeof(out), true);
    g_assert_cmpuint(rdma_via(&a, &ma, 3, false, mb.iova + 256 + 512 - 16,
                              k1, 16), ==, QHCA_CQE_SUCCESS);
    mr_io(&p.a, &ma, 0, in, sizeof(in), false);
    g_assert_cmpmem(in, sizeof(in), out, sizeof(out));

    /* the MR cannot go while a window is bound to it */
    g_assert_cmpint(qhca_cmd_obj(&p.b, QHCA_CMD_DEREG_MR, mb.key), ==,
                    QHCA_CMD_ERR_BUSY);
    g_assert_cmpint(qhca_cmd_obj(&p.b, QHCA_CMD_DEREG_MR, k1), ==,
                    QHCA_CMD_ERR_HANDLE);
    g_assert_cmpint(qhca_cmd_obj(&p.b, QHCA_CMD_DEALLOC_MW, mb.key), ==,
                    QHCA_CMD_ERR_HANDLE);

    /* type 1 binds again while bound, elsewhere, read-only */
    k2 = next_key(k1);
    mw_bind(&b, 4, k1, k2, &mb, 1024, 64, QHCA_ACCESS_REMOTE_READ);
    expect_cqe(&b, 4, QHCA_CQE_SUCCESS, QHCA_CQE_OP_BIND_MW);
    g_assert_cmpuint(rdma_via(&a, &ma, 5, false, mb.iova + 1024, k2, 64), ==,
                     QHCA_CQE_SUCCESS);
    /* unbound (length 0), then bound once more and deallocated bound */
    k3 = next_key(k2);
    mw_bind(&b, 6, k2, k3, &mb, 0, 0, 0);
    expect_cqe(&b, 6, QHCA_CQE_SUCCESS, QHCA_CQE_OP_BIND_MW);
    mw_bind(&b, 7, k3, next_key(k3), &mb, 0, 8, QHCA_ACCESS_REMOTE_READ);
    expect_cqe(&b, 7, QHCA_CQE_SUCCESS, QHCA_CQE_OP_BIND_MW);
    g_assert_cmpint(qhca_cmd_obj(&p.b, QHCA_CMD_DEALLOC_MW, mw), ==,
                    QHCA_CMD_OK);
    g_assert_cmpint(qhca_cmd_obj(&p.b, QHCA_CMD_DEREG_MR, mb.key), ==,
                    QHCA_CMD_OK);
    g_assert_cmpuint(qp_state(&a), ==, QHCA_QPS_RTS);
    g_assert_cmpuint(qp_state(&b), ==, QHCA_QPS_RTS);
    pair_stop(&p);
}

static void test_mw_type2(void)
{
    Pair p;
    End a, b, a2, b2;
    Mr ma, ma2, mb;
    struct qhca_send_wqe w;
    struct qhca_sge s;
    struct qhca_cqe c;
    uint32_t mw, k1, k2, k3;

    pair_start(&p, WIRE_PASS);
    rc_pair(&p, &a, &b, NULL, false);
    /* a second connection whose B end is in the same PD as b */
    end_create(&a2, &p.a, QHCA_QPT_RC, IP_A, mac_a, false);
    end_create_in_pd(&b2, &b, QHCA_QPT_RC);
    rc_connect_one(&a2, &b2, &rc_default_opts);
    rc_connect_one(&b2, &a2, &rc_default_opts);
    ma = mr_reg(&p.a, a.pdn, 256, QHCA_ACCESS_LOCAL_WRITE, 0x3000);
    ma2 = mr_reg(&p.a, a2.pdn, 256, QHCA_ACCESS_LOCAL_WRITE, 0x3000);
    mb = mr_reg(&p.b, b.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE |
                QHCA_ACCESS_MW_BIND, 0x8000);
    k1 = mw_alloc_bound(&b, QHCA_MW_TYPE_2, &mb, 0, 4096, &mw);
    g_assert_cmpuint(rdma_via(&a, &ma, 2, true, mb.iova + 8, k1, 16), ==,
                     QHCA_CQE_SUCCESS);
    /* LOCAL_INV unbinds it, and it binds again */
    w = wqe(QHCA_WQE_LOCAL_INV, 3);
    w.invalidate_rkey = cpu_to_le32(k1);
    post_send(&b, &w, NULL, 0, NULL, 0);
    expect_cqe(&b, 3, QHCA_CQE_SUCCESS, QHCA_CQE_OP_LOCAL_INV);
    k2 = next_key(k1);
    mw_bind(&b, 4, k1, k2, &mb, 0, 4096, MW_RW);
    expect_cqe(&b, 4, QHCA_CQE_SUCCESS, QHCA_CQE_OP_BIND_MW);
    /* a SEND with invalidate from A unbinds it too */
    s = sge(&mb, 0, 64);
    post_recv(&b, 5, &s, 1);
    w = wqe(QHCA_WQE_SEND_WITH_INV, 6);
    w.invalidate_rkey = cpu_to_le32(k2);
    s = sge(&ma, 0, 8);
    post_send(&a, &w, &s, 1, NULL, 0);
    c = poll_cq(&b);
    g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 5);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
    g_assert_cmphex(c.flags & QHCA_CQE_WITH_INV, ==, QHCA_CQE_WITH_INV);
    g_assert_cmphex(le32_to_cpu(c.invalidated_rkey), ==, k2);
    expect_cqe(&a, 6, QHCA_CQE_SUCCESS, QHCA_CQE_OP_SEND);
    k3 = next_key(k2);
    mw_bind(&b, 7, k2, k3, &mb, 0, 4096, MW_RW);
    expect_cqe(&b, 7, QHCA_CQE_SUCCESS, QHCA_CQE_OP_BIND_MW);
    g_assert_cmpuint(rdma_via(&a, &ma, 8, true, mb.iova, k3, 16), ==,
                     QHCA_CQE_SUCCESS);
    /* type 2B: the key works on b's QP alone, not on b2 in the same PD */
    g_assert_cmpuint(rdma_via(&a2, &ma2, 9, true, mb.iova, k3, 16), ==,
                     QHCA_CQE_REM_ACCESS_ERR);
    g_assert_cmpuint(qp_state(&b2), ==, QHCA_QPS_ERR);
    /* a type 2 window bound is not bound again */
    mw_bind(&b, 10, k3, next_key(k3), &mb, 0, 64, MW_RW);
    expect_cqe(&b, 10, QHCA_CQE_MW_BIND_ERR, 0);
    pair_stop(&p);
}

/*
 * A type 2 window ends with its QP: a QP made later with the same number in
 * the same PD does not inherit it
 */
static void test_mw_qp_destroyed(void)
{
    Pair p;
    End a, b, a2, b3;
    Mr ma2, mb;
    uint32_t mw, k1, old_qpn;

    pair_start(&p, WIRE_PASS);
    rc_pair(&p, &a, &b, NULL, false);
    mb = mr_reg(&p.b, b.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE |
                QHCA_ACCESS_MW_BIND, 0x8000);
    k1 = mw_alloc_bound(&b, QHCA_MW_TYPE_2, &mb, 0, 4096, &mw);
    old_qpn = b.qpn;
    g_assert_cmpint(qhca_cmd_obj(&p.b, QHCA_CMD_DESTROY_QP, b.qpn), ==,
                    QHCA_CMD_OK);
    end_create(&a2, &p.a, QHCA_QPT_RC, IP_A, mac_a, false);
    end_create_in_pd(&b3, &b, QHCA_QPT_RC);
    g_assert_cmpuint(b3.qpn, ==, old_qpn);
    rc_connect_one(&a2, &b3, &rc_default_opts);
    rc_connect_one(&b3, &a2, &rc_default_opts);
    ma2 = mr_reg(&p.a, a2.pdn, 256, QHCA_ACCESS_LOCAL_WRITE, 0x3000);
    g_assert_cmpuint(rdma_via(&a2, &ma2, 2, true, mb.iova, k1, 16), ==,
                     QHCA_CQE_REM_ACCESS_ERR);
    /* the window is unbound: its MR can go */
    g_assert_cmpint(qhca_cmd_obj(&p.b, QHCA_CMD_DEREG_MR, mb.key), ==,
                    QHCA_CMD_OK);
    pair_stop(&p);
}

/* Each refused bind or access through a window, on a pair of its own */
enum {
    MWE_BEYOND, MWE_READ_ONLY, MWE_OLD_KEY, MWE_UNBOUND, MWE_DEALLOCATED,
    MWE_LOCAL_INV, MWE_MR_KEY, MWE_MR_NO_BIND, MWE_MR_NO_LOCAL_WRITE,
    MWE_MR_RANGE, MWE_OTHER_INDEX, MWE_OTHER_PD, MWE_TYPE2_LEN0,
    MWE_WITH_SGE, MWE_AS_LKEY, MWE_TYPE1_INV, MWE_COUNT
};

static const char *const mwe_name[MWE_COUNT] = {
    "a WRITE past the window's end", "a WRITE through a read-only window",
    "the key before the last bind", "a window unbound (length 0)",
    "a window deallocated while bound", "a type 2 window after LOCAL_INV",
    "the MR's own key (no remote rights)", "bind to an MR without MW_BIND",
    "remote write to an MR without LOCAL_WRITE", "bind past the MR's end",
    "a new key of another index", "a window of another PD",
    "a type 2 bind of length 0", "BIND_MW with an SGE",
    "a window's key as an lkey", "LOCAL_INV of a type 1 window",
};

static void test_mw_errors(void)
{
    unsigned i;

    for (i = 0; i < MWE_COUNT; i++) {
        Pair p;
        End a, b;
        Mr ma, mb;
        struct qhca_send_wqe w;
        struct qhca_sge s;
        uint32_t mw, k, mr_access, type;
        uint8_t before[4096], after[4096];
        uint8_t want_b = QHCA_CQE_SUCCESS, want_a = QHCA_CQE_REM_ACCESS_ERR;
        uint64_t off = 0, len = 4096, va;
        uint32_t access = MW_RW, rkey;
        bool write = true;

        g_test_message("%s", mwe_name[i]);
        pair_start(&p, WIRE_PASS);
        rc_pair(&p, &a, &b, NULL, false);
        ma = mr_reg(&p.a, a.pdn, 256, QHCA_ACCESS_LOCAL_WRITE, 0x3000);
        mr_access = QHCA_ACCESS_LOCAL_WRITE | QHCA_ACCESS_MW_BIND;
        if (i == MWE_MR_NO_BIND) {
            mr_access = QHCA_ACCESS_LOCAL_WRITE;
        } else if (i == MWE_MR_NO_LOCAL_WRITE) {
            mr_access = QHCA_ACCESS_MW_BIND;
        }
        mb = mr_reg(&p.b, b.pdn, 4096, mr_access, 0x8000);
        fill(before, sizeof(before), i);
        mr_io(&p.b, &mb, 0, before, sizeof(before), true);
        type = (i == MWE_LOCAL_INV || i == MWE_TYPE2_LEN0) ? QHCA_MW_TYPE_2 :
               QHCA_MW_TYPE_1;
        mw = mw_alloc(&p.b, i == MWE_OTHER_PD ? qhca_mk_pd(&p.b) : b.pdn,
                      type);
        k = next_key(mw);
        switch (i) {
        case MWE_BEYOND:
            off = 1024;
            len = 512;
            break;
        case MWE_READ_ONLY:
            access = QHCA_ACCESS_REMOTE_READ;
            break;
        case MWE_MR_RANGE:
            off = 8;
            break;
        case MWE_OTHER_INDEX:
            k = mw + (1 << QHCA_KEY_INDEX_SHIFT);
            break;
        case MWE_TYPE2_LEN0:
            len = 0;
            break;
        }
        if (i == MWE_WITH_SGE) {
            w = wqe(QHCA_WQE_BIND_MW, 1);
            w.bind.addr = cpu_to_le64(mb.iova);
            w.bind.length = cpu_to_le64(len);
            w.bind.mr_lkey = cpu_to_le32(mb.key);
            w.bind.mw_key = cpu_to_le32(mw);
            w.bind.new_key = cpu_to_le32(k);
            w.bind.access = cpu_to_le32(access);
            s = sge(&mb, 0, 8);
            post_send(&b, &w, &s, 1, NULL, 0);
            want_b = QHCA_CQE_LOC_QP_OP_ERR;
        } else {
            mw_bind(&b, 1, mw, k, &mb, off, len, access);
            if (i >= MWE_MR_NO_BIND && i <= MWE_TYPE2_LEN0) {
                want_b = QHCA_CQE_MW_BIND_ERR;
            }
        }
        expect_cqe(&b, 1, want_b, want_b ? 0 : QHCA_CQE_OP_BIND_MW);
        rkey = k;
        va = mb.iova;
        switch (i) {
        case MWE_BEYOND:
            va = mb.iova + 1024 + 512 - 8;
            break;
        case MWE_OLD_KEY:
            mw_bind(&b, 2, k, next_key(k), &mb, 0, 4096, MW_RW);
            expect_cqe(&b, 2, QHCA_CQE_SUCCESS, QHCA_CQE_OP_BIND_MW);
            break;
        case MWE_UNBOUND:
            mw_bind(&b, 2, k, next_key(k), &mb, 0, 0, 0);
            expect_cqe(&b, 2, QHCA_CQE_SUCCESS, QHCA_CQE_OP_BIND_MW);
            rkey = next_key(k);
            break;
        case MWE_DEALLOCATED:
            g_assert_cmpint(qhca_cmd_obj(&p.b, QHCA_CMD_DEALLOC_MW, k), ==,
                            QHCA_CMD_OK);
            break;
        case MWE_LOCAL_INV:
        case MWE_TYPE1_INV:
            w = wqe(QHCA_WQE_LOCAL_INV, 2);
            w.invalidate_rkey = cpu_to_le32(k);
            post_send(&b, &w, NULL, 0, NULL, 0);
            expect_cqe(&b, 2, i == MWE_LOCAL_INV ? QHCA_CQE_SUCCESS :
                       QHCA_CQE_LOC_PROT_ERR, QHCA_CQE_OP_LOCAL_INV);
            break;
        case MWE_MR_KEY:
            rkey = mb.key;
            break;
        case MWE_AS_LKEY:
            /* a window's key is no lkey: a SEND from B with it fails */
            w = wqe(QHCA_WQE_SEND, 2);
            s = sge(&mb, 0, 8);
            s.lkey = cpu_to_le32(k);
            post_send(&b, &w, &s, 1, NULL, 0);
            expect_cqe(&b, 2, QHCA_CQE_LOC_PROT_ERR, 0);
            break;
        }
        if (i != MWE_AS_LKEY && i != MWE_TYPE1_INV && i != MWE_WITH_SGE) {
            if (want_b == QHCA_CQE_SUCCESS) {
                /* (a failed bind ended B's QP: nothing more to try) */
                g_assert_cmpuint(rdma_via(&a, &ma, 3, write, va, rkey, 16),
                                 ==, want_a);
            }
        }
        mr_io(&p.b, &mb, 0, after, sizeof(after), false);
        g_assert_cmpmem(after, sizeof(after), before, sizeof(before));
        pair_stop(&p);
    }
}

/*
 * A window after its fast-register MR was invalidated and registered again
 * under the same key with other rights (issue 20, item 4): the window
 * reaches memory through the MR as it is at each access, which must allow
 * MW_BIND, and LOCAL_WRITE if the window grants remote write.  Three
 * windows of one type, each bound by a QP of its own connection (a refused
 * access ends that connection) to one page: read-write ones for a WRITE
 * and a READ, a read-only one for a READ.
 */
static const struct {
    const char *name;
    uint32_t access;            /* of the MR registered again */
    bool ok[3];                 /* WRITE (rw window), READ (rw), READ (ro) */
} mw_rereg_cases[] = {
    { "registered again with no rights", 0, { false, false, false } },
    { "registered again with LOCAL_WRITE only", QHCA_ACCESS_LOCAL_WRITE,
      { false, false, false } },
    { "registered again with MW_BIND only", QHCA_ACCESS_MW_BIND,
      { false, false, true } },
    { "registered again with LOCAL_WRITE and MW_BIND",
      QHCA_ACCESS_LOCAL_WRITE | QHCA_ACCESS_MW_BIND, { true, true, true } },
};

/* @e fast-registers @m (one page, its page list at @pbl) with @access */
static void mw_fast_reg(End *e, uint64_t wr_id, const Mr *m, uint64_t pbl,
                        uint32_t access)
{
    struct qhca_send_wqe w = wqe(QHCA_WQE_REG_MR, wr_id);

    w.reg.iova = cpu_to_le64(m->iova);
    w.reg.length = cpu_to_le64(m->len);
    w.reg.pbl_addr = cpu_to_le64(pbl);
    w.reg.key = cpu_to_le32(m->key);
    w.reg.access = cpu_to_le32(access);
    w.reg.num_pages = cpu_to_le32(m->npages);
    w.reg.page_shift = 12;
    post_send(e, &w, NULL, 0, NULL, 0);
    expect_cqe(e, wr_id, QHCA_CQE_SUCCESS, QHCA_CQE_OP_REG_MR);
}

static void mw_rereg_run(uint8_t type)
{
    static const bool write[3] = { true, false, false };
    static const uint32_t rights[3] = { MW_RW, MW_RW,
                                        QHCA_ACCESS_REMOTE_READ };
    unsigned i, j;

    for (i = 0; i < ARRAY_SIZE(mw_rereg_cases); i++) {
        Pair p;
        End a[3], b[3];
        Mr ma[3], mb = { .iova = 0xa000, .len = 4096, .npages = 1 };
        struct qhca_cmd_alloc_mr am = { 0 };
        struct qhca_send_wqe w;
        uint8_t want[4096], after[4096], out[64], in[64];
        uint32_t mw, key[3];
        uint64_t pbl, off;

        g_test_message("%s", mw_rereg_cases[i].name);
        pair_start(&p, WIRE_PASS);
        rc_pair(&p, &a[0], &b[0], NULL, false);
        for (j = 1; j < 3; j++) {
            end_create(&a[j], &p.a, QHCA_QPT_RC, IP_A, mac_a, false);
            end_create_in_pd(&b[j], &b[0], QHCA_QPT_RC);
            rc_connect_one(&a[j], &b[j], &rc_default_opts);
            rc_connect_one(&b[j], &a[j], &rc_default_opts);
        }
        for (j = 0; j < 3; j++) {
            ma[j] = mr_reg(&p.a, a[j].pdn, 256, QHCA_ACCESS_LOCAL_WRITE,
                           0x3000);
        }

        /* B's fast-register MR, one page, LOCAL_WRITE and MW_BIND */
        am.pdn = cpu_to_le32(b[0].pdn);
        am.max_pages = cpu_to_le32(1);
        am.key_variant = cpu_to_le32(1);
        mb.key = next_key(qhca_cmd_ok(&p.b, QHCA_CMD_ALLOC_MR, &am,
                                      sizeof(am)));
        mb.mem = qhca_alloc(&p.b, 4096);
        pbl = qhca_alloc(&p.b, 4096);
        qtest_writeq(p.b.qts, pbl, mb.mem);
        mw_fast_reg(&b[0], 1, &mb, pbl, QHCA_ACCESS_LOCAL_WRITE |
                    QHCA_ACCESS_MW_BIND);
        for (j = 0; j < 3; j++) {
            mw = mw_alloc(&p.b, b[0].pdn, type);
            key[j] = next_key(mw);
            mw_bind(&b[j], 2, mw, key[j], &mb, 0, 4096, rights[j]);
            expect_cqe(&b[j], 2, QHCA_CQE_SUCCESS, QHCA_CQE_OP_BIND_MW);
        }

        /* invalidated, registered again: same key, the case's rights */
        w = wqe(QHCA_WQE_LOCAL_INV, 3);
        w.invalidate_rkey = cpu_to_le32(mb.key);
        post_send(&b[0], &w, NULL, 0, NULL, 0);
        expect_cqe(&b[0], 3, QHCA_CQE_SUCCESS, QHCA_CQE_OP_LOCAL_INV);
        mw_fast_reg(&b[0], 4, &mb, pbl, mw_rereg_cases[i].access);

        fill(want, sizeof(want), 40 + i);
        mr_io(&p.b, &mb, 0, want, sizeof(want), true);
        for (j = 0; j < 3; j++) {
            bool ok = mw_rereg_cases[i].ok[j];

            off = 512 + 1024 * j;
            fill(out, sizeof(out), 80 + j);
            mr_io(&p.a, &ma[j], 0, out, sizeof(out), true);
            g_assert_cmpuint(rdma_via(&a[j], &ma[j], 5, write[j],
                                      mb.iova + off, key[j], sizeof(out)),
                             ==, ok ? QHCA_CQE_SUCCESS :
                             QHCA_CQE_REM_ACCESS_ERR);
            g_assert_cmpuint(qp_state(&b[j]), ==,
                             ok ? QHCA_QPS_RTS : QHCA_QPS_ERR);
            mr_io(&p.a, &ma[j], 0, in, sizeof(in), false);
            if (write[j] && ok) {
                memcpy(want + off, out, sizeof(out));
            }
            /* a READ brings B's bytes; a refused one brings nothing */
            g_assert_cmpmem(in, sizeof(in), write[j] || !ok ? out :
                            want + off, sizeof(in));
        }
        /* B's page holds exactly what it held and what WRITEs put there */
        mr_io(&p.b, &mb, 0, after, sizeof(after), false);
        g_assert_cmpmem(after, sizeof(after), want, sizeof(want));
        pair_stop(&p);
    }
}

static void test_mw_rereg_type1(void)
{
    mw_rereg_run(QHCA_MW_TYPE_1);
}

static void test_mw_rereg_type2(void)
{
    mw_rereg_run(QHCA_MW_TYPE_2);
}

/* ALLOC_MW and DEALLOC_MW refuse what is not right */
static void test_mw_commands(void)
{
    Pair p;
    End a, b;
    struct qhca_cmd_alloc_mw c = { 0 };
    uint32_t mw;

    pair_start(&p, WIRE_PASS);
    rc_pair(&p, &a, &b, NULL, false);
    c.pdn = cpu_to_le32(b.pdn);
    c.type = 3;
    g_assert_cmpint(qhca_cmd_post(&p.b, QHCA_CMD_ALLOC_MW, &c, sizeof(c),
                                  NULL), ==, QHCA_CMD_ERR_PARAM);
    c.type = QHCA_MW_TYPE_1;
    c.reserved[1] = 1;
    g_assert_cmpint(qhca_cmd_post(&p.b, QHCA_CMD_ALLOC_MW, &c, sizeof(c),
                                  NULL), ==, QHCA_CMD_ERR_PARAM);
    c.reserved[1] = 0;
    c.pdn = cpu_to_le32(0x7777);
    g_assert_cmpint(qhca_cmd_post(&p.b, QHCA_CMD_ALLOC_MW, &c, sizeof(c),
                                  NULL), ==, QHCA_CMD_ERR_HANDLE);
    mw = mw_alloc(&p.b, b.pdn, QHCA_MW_TYPE_2);
    g_assert_cmpuint(mw >> QHCA_KEY_INDEX_SHIFT, !=, 0);
    /* the PD is in use while the window is */
    g_assert_cmpint(qhca_cmd_obj(&p.b, QHCA_CMD_DEALLOC_PD, b.pdn), ==,
                    QHCA_CMD_ERR_BUSY);
    g_assert_cmpint(qhca_cmd_obj(&p.b, QHCA_CMD_DEALLOC_MW, mw), ==,
                    QHCA_CMD_OK);
    g_assert_cmpint(qhca_cmd_obj(&p.b, QHCA_CMD_DEALLOC_MW, mw), ==,
                    QHCA_CMD_ERR_HANDLE);
    pair_stop(&p);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    qtest_add_func("/qhca/mw/type1", test_mw_type1);
    qtest_add_func("/qhca/mw/type2", test_mw_type2);
    qtest_add_func("/qhca/mw/qp-destroyed", test_mw_qp_destroyed);
    qtest_add_func("/qhca/mw/errors", test_mw_errors);
    qtest_add_func("/qhca/mw/commands", test_mw_commands);
    qtest_add_func("/qhca/mw/rereg-type1", test_mw_rereg_type1);
    qtest_add_func("/qhca/mw/rereg-type2", test_mw_rereg_type2);

    return g_test_run();
}
