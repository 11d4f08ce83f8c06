/*
 * QTest for the qhca RDMA HCA: the /qhca/wire/ cases of objects changed
 * under traffic between two devices (qhca-wire.h): REREG_MR, RESIZE_CQ and
 * RESIZE_SRQ
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "libqtest.h"
#include "qemu/bswap.h"
#include "qhca-wire.h"
/* REREG_MR: rights, translation and PD change; the key stays */
static int rereg(QQhca *d, uint32_t key, uint32_t what, uint32_t pdn,
                 uint32_t access, const Mr *trans)
{
    struct qhca_cmd_rereg_mr r = { 0 };

    r.key = cpu_to_le32(key);
    r.what = cpu_to_le32(what);
    r.pdn = cpu_to_le32(pdn);
    r.access = cpu_to_le32(access);
    if (trans) {
        uint64_t pbl = qhca_alloc(d, 4096);

        g_assert_cmpuint(trans->npages, ==, 1);
        qtest_writeq(d->qts, pbl, trans->mem);
        r.iova = cpu_to_le64(trans->iova);
        r.length = cpu_to_le64(trans->len);
        r.mem.pbl_addr = cpu_to_le64(pbl);
        r.mem.num_pages = cpu_to_le32(1);
        r.mem.levels = 1;
        r.mem.page_shift = 12;
    }
    return qhca_cmd_post(d, QHCA_CMD_REREG_MR, &r, sizeof(r), NULL);
}

static void write_to(End *a, const Mr *ma, const Mr *mb, uint64_t wr_id,
                     uint32_t len)
{
    struct qhca_send_wqe w = wqe(QHCA_WQE_RDMA_WRITE, wr_id);
    struct qhca_sge s = sge(ma, 0, len);

    w.rdma.remote_addr = cpu_to_le64(mb->iova);
    w.rdma.rkey = cpu_to_le32(mb->key);
    post_send(a, &w, &s, 1, NULL, 0);
}

static void test_wire_rereg_mr(void)
{
    Pair p;
    End a, b;
    Mr ma, mb, fresh, fr;
    uint8_t out[4096], in[4096], zero[4096] = { 0 };
    uint32_t pd2;

    pair_start(&p, WIRE_PASS);
    rc_pair(&p, &a, &b, NULL, false);
    ma = mr_reg(&p.a, a.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x10000);
    /* B's MR starts without remote rights */
    mb = mr_reg(&p.b, b.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x40000);
    fill(out, sizeof(out), 31);
    mr_io(&p.a, &ma, 0, out, sizeof(out), true);

    /* what a consumer can get wrong: nothing changes */
    g_assert_cmpint(rereg(&p.b, mb.key ^ 1, QHCA_REREG_ACCESS, 0,
                          ALL_ACCESS, NULL), ==, QHCA_CMD_ERR_HANDLE);
    g_assert_cmpint(rereg(&p.b, mb.key, 0, 0, ALL_ACCESS, NULL), ==,
                    QHCA_CMD_ERR_PARAM);
    g_assert_cmpint(rereg(&p.b, mb.key, 8, 0, ALL_ACCESS, NULL), ==,
                    QHCA_CMD_ERR_PARAM);
    g_assert_cmpint(rereg(&p.b, mb.key, QHCA_REREG_ACCESS, 0, 0x100, NULL),
                    ==, QHCA_CMD_ERR_PARAM);
    g_assert_cmpint(rereg(&p.b, mb.key, QHCA_REREG_PD | QHCA_REREG_ACCESS,
                          999, ALL_ACCESS, NULL), ==, QHCA_CMD_ERR_HANDLE);
    fr = (Mr){ .iova = 0x40000, .len = 0, .npages = 1,
               .mem = qhca_alloc(&p.b, 4096) };
    g_assert_cmpint(rereg(&p.b, mb.key, QHCA_REREG_TRANS | QHCA_REREG_ACCESS,
                          0, ALL_ACCESS, &fr), ==, QHCA_CMD_ERR_PARAM);
    fr.len = 8192;                      /* more than its one page */
    g_assert_cmpint(rereg(&p.b, mb.key, QHCA_REREG_TRANS | QHCA_REREG_ACCESS,
                          0, ALL_ACCESS, &fr), ==, QHCA_CMD_ERR_PARAM);

    /* new rights: the WRITE B refused before the call now lands */
    g_assert_cmpint(rereg(&p.b, mb.key, QHCA_REREG_ACCESS, 0,
                          QHCA_ACCESS_LOCAL_WRITE | QHCA_ACCESS_REMOTE_WRITE,
                          NULL), ==, QHCA_CMD_OK);
    write_to(&a, &ma, &mb, 0xa1, 4096);
    expect_cqe(&a, 0xa1, QHCA_CQE_SUCCESS, QHCA_CQE_OP_RDMA_WRITE);
    mr_io(&p.b, &mb, 0, in, sizeof(in), false);
    g_assert_cmpmem(in, sizeof(in), out, sizeof(out));

    /* a new translation: same iova and key, other memory */
    fresh = (Mr){ .iova = 0x40000, .len = 4096, .npages = 1,
                  .mem = qhca_alloc(&p.b, 4096) };
    mr_io(&p.b, &fresh, 0, zero, sizeof(zero), true);
    mr_io(&p.b, &mb, 0, zero, sizeof(zero), true);
    g_assert_cmpint(rereg(&p.b, mb.key, QHCA_REREG_TRANS, 0, 0, &fresh), ==,
                    QHCA_CMD_OK);
    write_to(&a, &ma, &mb, 0xa2, 4096);
    expect_cqe(&a, 0xa2, QHCA_CQE_SUCCESS, QHCA_CQE_OP_RDMA_WRITE);
    mr_io(&p.b, &fresh, 0, in, sizeof(in), false);
    g_assert_cmpmem(in, sizeof(in), out, sizeof(out));
    mr_io(&p.b, &mb, 0, in, sizeof(in), false);
    g_assert_cmpmem(in, sizeof(in), zero, sizeof(zero));

    /* another PD: B's QP no longer reaches it, the PD is held by the MR */
    pd2 = qhca_mk_pd(&p.b);
    g_assert_cmpint(rereg(&p.b, mb.key, QHCA_REREG_PD, pd2, 0, NULL), ==,
                    QHCA_CMD_OK);
    g_assert_cmpint(qhca_cmd_obj(&p.b, QHCA_CMD_DEALLOC_PD, pd2), ==,
                    QHCA_CMD_ERR_BUSY);
    write_to(&a, &ma, &mb, 0xa3, 4096);
    expect_cqe(&a, 0xa3, QHCA_CQE_REM_ACCESS_ERR, 0);
    mr_io(&p.b, &fresh, 0, in, sizeof(in), false);
    g_assert_cmpmem(in, sizeof(in), out, sizeof(out));
    g_assert_cmpint(qhca_cmd_obj(&p.b, QHCA_CMD_DEREG_MR, mb.key), ==,
                    QHCA_CMD_OK);
    g_assert_cmpint(qhca_cmd_obj(&p.b, QHCA_CMD_DEALLOC_PD, pd2), ==,
                    QHCA_CMD_OK);
    pair_stop(&p);
}

/* RESIZE_CQ: CQEs not yet consumed move to the new ring */
static int resize_cq(End *e, uint32_t log, Ring *nr, uint32_t *carried)
{
    struct qhca_cmd_resize_cq r = { 0 };

    r.cqn = cpu_to_le32(e->cqn);
    r.log_depth = log;
    r.mem = ring_alloc(e->d, nr, log ? log : 1, 5);
    return qhca_cmd_post(e->d, QHCA_CMD_RESIZE_CQ, &r, sizeof(r), carried);
}

static void test_wire_resize_cq(void)
{
    Pair p;
    End a, b;
    Mr ma, mb;
    struct qhca_sge s, r;
    struct qhca_send_wqe w;
    struct qhca_cqe c;
    Ring nr, small;
    uint32_t n, i;

    pair_start(&p, WIRE_PASS);
    rc_pair(&p, &a, &b, NULL, false);
    ma = mr_reg(&p.a, a.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x10000);
    mb = mr_reg(&p.b, b.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x20000);
    s = sge(&ma, 0, 64);
    r = sge(&mb, 0, 4096);
    for (i = 0; i < 5; i++) {
        post_recv(&b, 0xb0 + i, &r, 1);
        w = wqe(QHCA_WQE_SEND, 0xa0 + i);
        post_send(&a, &w, &s, 1, NULL, 0);
        expect_cqe(&a, 0xa0 + i, QHCA_CQE_SUCCESS, QHCA_CQE_OP_SEND);
    }
    /* B has 5 CQEs and consumes 2 of them */
    settle(&p, 20);
    expect_cqe(&b, 0xb0, QHCA_CQE_SUCCESS, QHCA_CQE_OP_RECV);
    expect_cqe(&b, 0xb1, QHCA_CQE_SUCCESS, QHCA_CQE_OP_RECV);

    /* refused: no such CQ, no room for the 3 held, a bad depth */
    {
        End other = b;

        other.cqn = 999;
        g_assert_cmpint(resize_cq(&other, 3, &small, &n), ==,
                        QHCA_CMD_ERR_HANDLE);
    }
    g_assert_cmpint(resize_cq(&b, 1, &small, &n), ==, QHCA_CMD_ERR_PARAM);
    g_assert_cmpint(resize_cq(&b, 0, &small, &n), ==, QHCA_CMD_ERR_PARAM);
    /* the old ring is still the CQ's: the next CQE is where it was */
    g_assert_true(cqe_ready(&b, b.cq_ci));

    /* to 8 entries: the 3 held are its first three */
    g_assert_cmpint(resize_cq(&b, 3, &nr, &n), ==, QHCA_CMD_OK);
    g_assert_cmpuint(n, ==, 3);
    b.cq = nr;
    b.cq_ci = 0;
    for (i = 2; i < 5; i++) {
        c = poll_cq(&b);
        g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 0xb0 + i);
        g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
        g_assert_cmpuint(le32_to_cpu(c.qpn), ==, b.qpn);
    }
    g_assert_true(cq_idle(&b, 10));

    /* and on: 12 more completions wrap the new ring */
    for (i = 0; i < 12; i++) {
        post_recv(&b, 0xc0 + i, &r, 1);
        w = wqe(QHCA_WQE_SEND, 0xd0 + i);
        post_send(&a, &w, &s, 1, NULL, 0);
        expect_cqe(&a, 0xd0 + i, QHCA_CQE_SUCCESS, QHCA_CQE_OP_SEND);
        expect_cqe(&b, 0xc0 + i, QHCA_CQE_SUCCESS, QHCA_CQE_OP_RECV);
    }
    g_assert_true(cq_idle(&b, 10));
    g_assert_cmphex(qhca_rd(&p.b, QHCA_REG_STATUS), ==, QHCA_STATUS_READY);
    pair_stop(&p);
}

/*
 * RESIZE_SRQ: the SRQ moves to a new ring, the WQEs
 * posted and not yet taken with it at their indices
 */
static int resize_srq(End *e, uint32_t srqn, uint32_t log, Ring *nr,
                      uint32_t *carried)
{
    struct qhca_cmd_resize_srq r = { 0 };

    r.srqn = cpu_to_le32(srqn);
    r.log_depth = log;
    r.mem = ring_alloc(e->d, nr, MIN(MAX(log, 1), 9), e->srq.stride_log);
    return qhca_cmd_post(e->d, QHCA_CMD_RESIZE_SRQ, &r, sizeof(r), carried);
}

static uint32_t srq_depth(End *e)
{
    struct qhca_srq_attr sa;

    g_assert_cmpint(qhca_cmd_obj(e->d, QHCA_CMD_QUERY_SRQ, e->srqn), ==,
                    QHCA_CMD_OK);
    qtest_memread(e->d->qts, e->d->qd.resp, &sa, sizeof(sa));
    return le32_to_cpu(sa.depth);
}

/* Overwrite a ring that is no longer the device's with 0xff */
static void ring_poison(End *e, const Ring *r)
{
    uint8_t junk[4096];
    uint32_t i, n = DIV_ROUND_UP(1u << (r->log + r->stride_log), 4096);

    memset(junk, 0xff, sizeof(junk));
    for (i = 0; i < n; i++) {
        qtest_memwrite(e->d->qts, r->page[i], junk, sizeof(junk));
    }
}

/* A SEND of the 4-byte value @v from A, taken by B's next SRQ WQE */
static void send_value(End *a, Mr *ma, uint32_t i, uint32_t v)
{
    struct qhca_send_wqe w = wqe(QHCA_WQE_SEND, 0xa000 + i);
    struct qhca_sge s = sge(ma, (i % 1024) * 4, 4);

    v = cpu_to_le32(v);
    mr_io(a->d, ma, (i % 1024) * 4, &v, 4, true);
    post_send(a, &w, &s, 1, NULL, 0);
    expect_cqe(a, 0xa000 + i, QHCA_CQE_SUCCESS, QHCA_CQE_OP_SEND);
}

/* B's next CQE: the receive of SRQ WQE @i (wr_id 0x100 + i) */
static void expect_srq_recv(End *b, Mr *mb, uint32_t i, uint32_t v)
{
    struct qhca_cqe c = poll_cq(b);
    uint32_t got;

    g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 0x100 + i);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
    g_assert_cmpuint(le16_to_cpu(c.wqe_index), ==, i & 0xffff);
    g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, 4);
    mr_io(b->d, mb, i * 64, &got, 4, false);
    g_assert_cmphex(le32_to_cpu(got), ==, v);
}

static void test_wire_resize_srq(void)
{
    struct qhca_cmd_modify_srq ms = { 0 };
    struct qhca_cmd_resize_srq bad = { 0 };
    Pair p;
    End a, b;
    Mr ma, mb;
    struct qhca_sge r;
    Ring nr, small, old;
    uint32_t n, i;

    pair_start(&p, WIRE_PASS);
    rc_pair(&p, &a, &b, NULL, true);
    ma = mr_reg(&p.a, a.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x10000);
    mb = mr_reg(&p.b, b.pdn, 16384, QHCA_ACCESS_LOCAL_WRITE, 0x20000);
    g_assert_cmpuint(srq_depth(&b), ==, 64);
    /* 40 receive WQEs on the 64-entry SRQ; A's first 4 SENDs take 4 */
    for (i = 0; i < 40; i++) {
        r = sge(&mb, i * 64, 64);
        post_recv(&b, 0x100 + i, &r, 1);
    }
    for (i = 0; i < 4; i++) {
        send_value(&a, &ma, i, 0x5000 + i);
        expect_srq_recv(&b, &mb, i, 0x5000 + i);
    }

    /* refused: no such SRQ, bad depths, reserved bytes, room for 36 */
    g_assert_cmpint(resize_srq(&b, 99, 8, &small, &n), ==,
                    QHCA_CMD_ERR_HANDLE);
    g_assert_cmpint(resize_srq(&b, QHCA_NO_SRQ, 8, &small, &n), ==,
                    QHCA_CMD_ERR_HANDLE);
    g_assert_cmpint(resize_srq(&b, b.srqn, 0, &small, &n), ==,
                    QHCA_CMD_ERR_PARAM);
    g_assert_cmpint(resize_srq(&b, b.srqn, 13, &small, &n), ==,
                    QHCA_CMD_ERR_PARAM);
    g_assert_cmpint(resize_srq(&b, b.srqn, 5, &small, &n), ==,
                    QHCA_CMD_ERR_PARAM);
    bad.srqn = cpu_to_le32(b.srqn);
    bad.log_depth = 8;
    bad.reserved[1] = 1;
    bad.mem = ring_alloc(&p.b, &small, 8, b.srq.stride_log);
    g_assert_cmpint(qhca_cmd_post(&p.b, QHCA_CMD_RESIZE_SRQ, &bad,
                                  sizeof(bad), NULL), ==, QHCA_CMD_ERR_PARAM);
    /* a page list too short for the new ring */
    bad.reserved[1] = 0;
    bad.mem.num_pages = cpu_to_le32(1);
    g_assert_cmpint(qhca_cmd_post(&p.b, QHCA_CMD_RESIZE_SRQ, &bad,
                                  sizeof(bad), NULL), ==, QHCA_CMD_ERR_PARAM);
    /* the old ring is still the SRQ's: the next SEND takes WQE 4 */
    g_assert_cmpuint(srq_depth(&b), ==, 64);
    send_value(&a, &ma, 4, 0x5004);
    expect_srq_recv(&b, &mb, 4, 0x5004);

    /* to 256 entries: the 35 not yet taken are carried at their indices */
    old = b.srq;
    g_assert_cmpint(resize_srq(&b, b.srqn, 8, &nr, &n), ==, QHCA_CMD_OK);
    g_assert_cmpuint(n, ==, 35);
    g_assert_cmpuint(srq_depth(&b), ==, 256);
    b.srq = nr;
    ring_poison(&b, &old);
    /* 100 more: 135 outstanding, more than the old ring held */
    for (i = 40; i < 140; i++) {
        r = sge(&mb, i * 64, 64);
        post_recv(&b, 0x100 + i, &r, 1);
    }
    for (i = 5; i < 140; i++) {
        send_value(&a, &ma, i, 0x5000 + i);
        expect_srq_recv(&b, &mb, i, 0x5000 + i);
    }
    g_assert_true(cq_idle(&b, 10));

    /* with nothing posted: a limit at or above the new depth is refused */
    ms.srqn = cpu_to_le32(b.srqn);
    ms.limit = cpu_to_le32(16);
    qhca_cmd_ok(&p.b, QHCA_CMD_MODIFY_SRQ, &ms, sizeof(ms));
    g_assert_cmpint(resize_srq(&b, b.srqn, 4, &small, &n), ==,
                    QHCA_CMD_ERR_PARAM);
    ms.limit = 0;
    qhca_cmd_ok(&p.b, QHCA_CMD_MODIFY_SRQ, &ms, sizeof(ms));
    /* smaller is fine when what is posted fits: 8 entries, 5 posted */
    for (i = 140; i < 145; i++) {
        r = sge(&mb, (i - 140) * 64, 64);
        post_recv(&b, 0x100 + i, &r, 1);
    }
    old = b.srq;
    g_assert_cmpint(resize_srq(&b, b.srqn, 3, &nr, &n), ==, QHCA_CMD_OK);
    g_assert_cmpuint(n, ==, 5);
    b.srq = nr;
    ring_poison(&b, &old);
    for (i = 145; i < 148; i++) {
        r = sge(&mb, (i - 140) * 64, 64);
        post_recv(&b, 0x100 + i, &r, 1);
    }
    for (i = 140; i < 148; i++) {
        struct qhca_cqe c;
        uint32_t got;

        send_value(&a, &ma, i, 0x6000 + i);
        c = poll_cq(&b);
        g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 0x100 + i);
        g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
        g_assert_cmpuint(le16_to_cpu(c.wqe_index), ==, i);
        mr_io(&p.b, &mb, (i - 140) * 64, &got, 4, false);
        g_assert_cmphex(le32_to_cpu(got), ==, 0x6000 + i);
    }
    g_assert_cmpuint(qp_state(&b), ==, QHCA_QPS_RTS);
    g_assert_cmphex(qhca_rd(&p.b, QHCA_REG_STATUS), ==, QHCA_STATUS_READY);
    pair_stop(&p);
}

/*
 * A QP in the middle of a multi-packet SEND when its SRQ moves: it holds
 * the WQE it took (wr_id and SGEs), not the old ring, which the test
 * overwrites; the message ends in that WQE and the next ones follow
 */
static void test_wire_resize_srq_mid_send(void)
{
    Pair p;
    End a, b;
    Mr mb;
    struct qhca_sge r;
    struct qhca_cqe c;
    QhcaRoceHdr h;
    Ring nr, old;
    uint8_t out[1524], in[1524];
    uint32_t n, i;

    pair_start(&p, WIRE_BLACKHOLE);
    rc_pair(&p, &a, &b, NULL, true);
    mb = mr_reg(&p.b, b.pdn, 4 * 4096, QHCA_ACCESS_LOCAL_WRITE, 0x20000);
    fill(out, sizeof(out), 0x33);
    for (i = 0; i < 3; i++) {
        r = sge(&mb, i * 4096, 4096);
        post_recv(&b, 0x200 + i, &r, 1);
    }
    /* the first 1024 bytes (the path MTU) of a SEND: WQE 0 taken */
    h = hdr_from(&a, &b, QHCA_ROCE_OP_RC_SEND_FIRST, FIRST_PSN);
    inject(&p, 1, &h, out, 1024);
    g_assert_true(cq_idle(&b, 20));
    mr_io(&p.b, &mb, 0, in, 1024, false);
    g_assert_cmpmem(in, 1024, out, 1024);

    old = b.srq;
    g_assert_cmpint(resize_srq(&b, b.srqn, 7, &nr, &n), ==, QHCA_CMD_OK);
    g_assert_cmpuint(n, ==, 2);
    b.srq = nr;
    ring_poison(&b, &old);
    r = sge(&mb, 3 * 4096, 4096);
    post_recv(&b, 0x203, &r, 1);

    /* the rest of the message lands in WQE 0's buffer */
    h = hdr_from(&a, &b, QHCA_ROCE_OP_RC_SEND_LAST, FIRST_PSN + 1);
    inject(&p, 1, &h, out + 1024, 500);
    c = poll_cq(&b);
    g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 0x200);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
    g_assert_cmpuint(le16_to_cpu(c.wqe_index), ==, 0);
    g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, sizeof(out));
    mr_io(&p.b, &mb, 0, in, sizeof(in), false);
    g_assert_cmpmem(in, sizeof(in), out, sizeof(out));
    /* the carried WQEs 1 and 2, then 3 posted to the new ring */
    for (i = 1; i < 4; i++) {
        h = hdr_from(&a, &b, QHCA_ROCE_OP_RC_SEND_ONLY, FIRST_PSN + 1 + i);
        inject(&p, 1, &h, out + i, 100);
        c = poll_cq(&b);
        g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 0x200 + i);
        g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
        g_assert_cmpuint(le16_to_cpu(c.wqe_index), ==, i);
        g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, 100);
        mr_io(&p.b, &mb, i * 4096, in, 100, false);
        g_assert_cmpmem(in, 100, out + i, 100);
    }
    g_assert_cmpuint(qp_state(&b), ==, QHCA_QPS_RTS);
    pair_stop(&p);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    qtest_add_func("/qhca/wire/rereg-mr", test_wire_rereg_mr);
    qtest_add_func("/qhca/wire/resize-cq", test_wire_resize_cq);
    qtest_add_func("/qhca/wire/resize-srq", test_wire_resize_srq);
    qtest_add_func("/qhca/wire/resize-srq-mid-send",
                   test_wire_resize_srq_mid_send);

    return g_test_run();
}
