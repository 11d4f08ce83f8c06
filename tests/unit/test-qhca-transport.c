/*
 * Host tests of the device's RC/UD transport on two devices of the host
 * harness (tests/harness/harness.h): two QhcaCore instances, each with its
 * own flat guest RAM, on an in-process wire the test can make lossy,
 * duplicating or reordering, and a virtual clock, so retransmission and RNR
 * timers run in milliseconds of real time.  Every DMA is checked against
 * what the guest granted (a finding aborts the program).
 *
 * A GLib test program (g_test: --tap, -p PATH, -l); each case sets up a new
 * pair: both devices up, their RC QPs connected (MTU 1024, timeout 8 =
 * about 1 ms, retry 7, RNR retry 7 = forever), UD QPs in RTS, UC QPs
 * connected (MTU 1024).
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "hx-test.h"
#include "qhca-roce.h"

static void assert_ok(HxDev *d, HxQp *qp, uint64_t wr_id)
{
    struct qhca_cqe c = cqe_of(d, qp, wr_id);

    g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
}

/* Reconnect both RC QPs (no SRQ) with other options */
static void reconnect(Fx *f, const HxConnOpts *o)
{
    g_assert_true(hx_connect_rc(f->a, rc(f->a), f->b, rc(f->b), o));
}

/* ---- data moved right ---- */

static void test_send_recv(Fx *f, gconstpointer data)
{
    struct qhca_send_wqe w;
    struct qhca_cqe c;
    static const uint8_t imm[4] = { 0xde, 0xad, 0xbe, 0xef };

    /* 3000 bytes: three packets (first, middle, last) at MTU 1024 */
    fill(f->a, 0, 3000, 1);
    post_recv(f->b, rc(f->b), 0xb1, 0x10000, 4096);
    w = hx_wqe(QHCA_WQE_SEND, 0xa1);
    post(f->a, rc(f->a), &w, 0, 3000);
    c = cqe_of(f->b, rc(f->b), 0xb1);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
    g_assert_cmpuint(c.opcode, ==, QHCA_CQE_OP_RECV);
    g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, 3000);
    assert_ok(f->a, rc(f->a), 0xa1);
    g_assert_true(same(f->a, 0, f->b, 0x10000, 3000));

    /* one packet with immediate data */
    post_recv(f->b, rc(f->b), 0xb2, 0x20000, 4096);
    w = hx_wqe(QHCA_WQE_SEND_WITH_IMM, 0xa2);
    memcpy(w.imm_data, imm, 4);
    post(f->a, rc(f->a), &w, 0x100, 100);
    c = cqe_of(f->b, rc(f->b), 0xb2);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
    g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, 100);
    g_assert_cmpuint(c.flags & QHCA_CQE_WITH_IMM, !=, 0);
    g_assert_cmpmem(c.imm_data, 4, imm, 4);
    assert_ok(f->a, rc(f->a), 0xa2);
    g_assert_true(same(f->a, 0x100, f->b, 0x20000, 100));
}

static void test_write(Fx *f, gconstpointer data)
{
    const uint32_t len = 256 * 1024;     /* four windows */
    struct qhca_send_wqe w;

    fill(f->a, 0, len, 2);
    memset(mr_mem(f->b, 0x100000 - 16), 0x5a, len + 32);
    w = rdma_wqe(QHCA_WQE_RDMA_WRITE, 0xa1, f->b, 0x100000);
    post(f->a, rc(f->a), &w, 0, len);
    assert_ok(f->a, rc(f->a), 0xa1);
    g_assert_true(same(f->a, 0, f->b, 0x100000, len));
    /* and nothing around it */
    g_assert_cmpuint(mr_mem(f->b, 0x100000 - 1)[0], ==, 0x5a);
    g_assert_cmpuint(mr_mem(f->b, 0x100000 + len)[0], ==, 0x5a);
}

static void test_read(Fx *f, gconstpointer data)
{
    const uint32_t len = 256 * 1024;
    struct qhca_send_wqe w;

    fill(f->b, 0x80000, len, 3);
    memset(mr_mem(f->a, 0x200000), 0, len + 16);
    w = rdma_wqe(QHCA_WQE_RDMA_READ, 0xa1, f->b, 0x80000);
    post(f->a, rc(f->a), &w, 0x200000, len);
    assert_ok(f->a, rc(f->a), 0xa1);
    g_assert_true(same(f->a, 0x200000, f->b, 0x80000, len));
    g_assert_cmpuint(mr_mem(f->a, 0x200000 + len)[0], ==, 0);
}

static void test_atomics(Fx *f, gconstpointer data)
{
    struct qhca_send_wqe w;

    stq_le_p(mr_mem(f->b, 0x100), 100);
    /* compare and swap that matches: swapped, the old value returned */
    w = rdma_wqe(QHCA_WQE_ATOMIC_CMP_AND_SWP, 0xa1, f->b, 0x100);
    w.rdma.compare_add = cpu_to_le64(100);
    w.rdma.swap = cpu_to_le64(0x1122334455667788ULL);
    post(f->a, rc(f->a), &w, 0x200, 8);
    assert_ok(f->a, rc(f->a), 0xa1);
    g_assert_cmphex(ldq_le_p(mr_mem(f->b, 0x100)), ==, 0x1122334455667788ULL);
    g_assert_cmpuint(ldq_le_p(mr_mem(f->a, 0x200)), ==, 100);

    /* that does not match: memory unchanged, its value returned */
    w = rdma_wqe(QHCA_WQE_ATOMIC_CMP_AND_SWP, 0xa2, f->b, 0x100);
    w.rdma.compare_add = cpu_to_le64(100);
    w.rdma.swap = cpu_to_le64(7);
    post(f->a, rc(f->a), &w, 0x208, 8);
    assert_ok(f->a, rc(f->a), 0xa2);
    g_assert_cmphex(ldq_le_p(mr_mem(f->b, 0x100)), ==, 0x1122334455667788ULL);
    g_assert_cmphex(ldq_le_p(mr_mem(f->a, 0x208)), ==, 0x1122334455667788ULL);

    /* fetch and add, wrapping around 2^64 */
    stq_le_p(mr_mem(f->b, 0x108), UINT64_MAX - 1);
    w = rdma_wqe(QHCA_WQE_ATOMIC_FETCH_AND_ADD, 0xa3, f->b, 0x108);
    w.rdma.compare_add = cpu_to_le64(5);
    post(f->a, rc(f->a), &w, 0x210, 8);
    assert_ok(f->a, rc(f->a), 0xa3);
    g_assert_cmpuint(ldq_le_p(mr_mem(f->b, 0x108)), ==, 3);
    g_assert_cmpuint(ldq_le_p(mr_mem(f->a, 0x210)), ==, UINT64_MAX - 1);
}

static void test_ud(Fx *f, gconstpointer data)
{
    HxQp *qa = &f->a->drv.qp[HX_QP_UD], *qb = &f->b->drv.qp[HX_QP_UD];
    struct qhca_send_wqe w;
    struct qhca_cqe c;

    fill(f->a, 0, 1000, 4);
    post_recv(f->b, qb, 0xb1, 0x80000, QHCA_GRH_SIZE + 1024);
    w = hx_wqe(QHCA_WQE_SEND, 0xa1);
    w.ud.ahn = cpu_to_le32(f->a->drv.ahn);
    w.ud.remote_qpn = cpu_to_le32(qb->qpn);
    w.ud.remote_qkey = cpu_to_le32(HX_QKEY);
    post(f->a, qa, &w, 0, 1000);
    assert_ok(f->a, qa, 0xa1);
    c = cqe_of(f->b, qb, 0xb1);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
    g_assert_cmpuint(le32_to_cpu(c.src_qp), ==, qa->qpn);
    g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, QHCA_GRH_SIZE + 1000);
    g_assert_true(same(f->a, 0, f->b, 0x80000 + QHCA_GRH_SIZE, 1000));

    /* a wrong Q_Key: dropped, no CQE on B, A completes (UD is unacked) */
    post_recv(f->b, qb, 0xb2, 0x90000, QHCA_GRH_SIZE + 1024);
    w = hx_wqe(QHCA_WQE_SEND, 0xa2);
    w.ud.ahn = cpu_to_le32(f->a->drv.ahn);
    w.ud.remote_qpn = cpu_to_le32(qb->qpn);
    w.ud.remote_qkey = cpu_to_le32(HX_QKEY + 1);
    post(f->a, qa, &w, 0, 1000);
    assert_ok(f->a, qa, 0xa2);
    g_assert_false(hx_wait_cqe(f->b, qb->qpn, 0xb2, &c, 10 * 1000 * 1000));
}

/* ---- lossy wires ---- */

static void test_drop(Fx *f, gconstpointer data)
{
    const uint32_t len = 256 * 1024;
    uint64_t retrans = f->a->core.stat_retransmits;
    struct qhca_send_wqe w;

    /*
     * Every 5th frame from A (requests), every 7th from B (ACKs, READ
     * responses), counted over both.  (With every 3rd from B the first
     * response of each READ retry is the one lost, every time: a READ
     * retry resends the 28 responses still missing, so the count comes
     * round to the same place, and the READ ends in RETRY_EXC_ERR.)
     */
    hx_wire_set_mode(f->p, 0, HX_WIRE_DROP_EVERY, 5);
    hx_wire_set_mode(f->p, 1, HX_WIRE_DROP_EVERY, 7);
    fill(f->a, 0, len, 5);
    w = rdma_wqe(QHCA_WQE_RDMA_WRITE, 0xa1, f->b, 0x100000);
    post(f->a, rc(f->a), &w, 0, len);
    fill(f->b, 0x200000, 64 * 1024, 6);
    w = rdma_wqe(QHCA_WQE_RDMA_READ, 0xa2, f->b, 0x200000);
    post(f->a, rc(f->a), &w, 0x200000, 64 * 1024);
    assert_ok(f->a, rc(f->a), 0xa1);
    assert_ok(f->a, rc(f->a), 0xa2);
    g_assert_true(same(f->a, 0, f->b, 0x100000, len));
    g_assert_true(same(f->a, 0x200000, f->b, 0x200000, 64 * 1024));
    g_assert_cmpuint(f->p->wire_lost, >, 0);
    g_assert_cmpuint(f->a->core.stat_retransmits, >, retrans);
}

/* SENDs arrive once each, in order, with the right data */
static void sends_in_order(Fx *f, unsigned n, uint32_t len)
{
    struct qhca_send_wqe w;
    struct qhca_cqe c;
    unsigned i;

    for (i = 0; i < n; i++) {
        fill(f->a, i * 0x1000, len, 10 + i);
        post_recv(f->b, rc(f->b), 0xb000 + i, 0x100000 + i * 0x1000, 4096);
    }
    for (i = 0; i < n; i++) {
        w = hx_wqe(QHCA_WQE_SEND, 0xa000 + i);
        post(f->a, rc(f->a), &w, i * 0x1000, len);
    }
    for (i = 0; i < n; i++) {
        assert_ok(f->a, rc(f->a), 0xa000 + i);
    }
    hx_settle(f->p, 100 * 1000 * 1000, 100000);
    /* the receive CQEs in posting order, each once, and no other */
    for (i = 0; i < n; i++) {
        if (!hx_poll_cq(f->b, &c)) {
            g_test_message("receive %u: no CQE", i);
            g_test_fail();
            return;
        }
        g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 0xb000 + i);
        g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
        g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, len);
        g_assert_true(same(f->a, i * 0x1000, f->b, 0x100000 + i * 0x1000,
                           len));
    }
    g_assert_false(hx_poll_cq(f->b, &c));
}

static void test_duplicates(Fx *f, gconstpointer data)
{
    uint64_t dups = f->b->core.stat_dup_requests;

    hx_wire_set_mode(f->p, 0, HX_WIRE_DUP_EVERY, 2);
    hx_wire_set_mode(f->p, 1, HX_WIRE_DUP_EVERY, 3);
    sends_in_order(f, 32, 1500);
    g_assert_cmpuint(f->b->core.stat_dup_requests, >, dups);
}

static void test_reorder(Fx *f, gconstpointer data)
{
    uint64_t seq = f->b->core.stat_seq_errors;

    hx_wire_set_mode(f->p, 0, HX_WIRE_REORDER, 0);
    sends_in_order(f, 32, 2500);
    g_assert_cmpuint(f->b->core.stat_seq_errors, >, seq);
}

static void test_drop_random(Fx *f, gconstpointer data)
{
    hx_wire_set_mode(f->p, 0, HX_WIRE_DROP_RANDOM, 7);
    hx_wire_set_mode(f->p, 1, HX_WIRE_DROP_RANDOM, 7);
    sends_in_order(f, 48, 3000);
    g_assert_cmpuint(f->p->wire_lost, >, 0);
}

/*
 * A mix of WRITEs, READs, SENDs and atomics of 1 B to 64 KiB on four QPs
 * at once over a wire that loses 1 in @every frames each way at random:
 * everything completes, the bytes and the atomics' results right.  Found
 * by the guests' fabric (5% loss): a READ whose responses were lost, asked
 * again and lost again was taken as acknowledged by an ACK of the SENDs
 * after it; with nothing left in flight no timer ran, and the QP stopped
 * with no completion and no error (here: seed 23, no CQE for QP 3's
 * READ).
 */
static void lossy_mix(Fx *f, HxQp **qa, HxQp **qb, unsigned every,
                      uint32_t seed)
{
    static const uint32_t sizes[] = { 1, 1000, 4096, 65536 };
    const unsigned nq = 4, nops = 12;
    const uint64_t slot = 64 * 1024;
    struct qhca_send_wqe w;
    unsigned q, j;

    f->p->rng = seed;
    hx_wire_set_mode(f->p, 0, HX_WIRE_DROP_RANDOM, every);
    hx_wire_set_mode(f->p, 1, HX_WIRE_DROP_RANDOM, every);
    for (q = 0; q < nq; q++) {
        for (j = 0; j < nops; j++) {
            uint64_t off = (q * nops + j) * slot;
            uint32_t len = sizes[(j / 4) % 4];

            fill(f->a, off, len, q * 64 + j + 1);
            fill(f->b, off, len, q * 64 + j + 129);
            switch (j % 4) {
            case 0:
                w = rdma_wqe(QHCA_WQE_RDMA_WRITE, q << 8 | j, f->b, off);
                break;
            case 1:
                w = rdma_wqe(QHCA_WQE_RDMA_READ, q << 8 | j, f->b, off);
                break;
            case 2:
                post_recv(f->b, qb[q], q << 8 | j, off, slot);
                w = hx_wqe(QHCA_WQE_SEND, q << 8 | j);
                break;
            default:
                stq_le_p(mr_mem(f->b, off), 1000 + j);
                w = rdma_wqe(QHCA_WQE_ATOMIC_FETCH_AND_ADD, q << 8 | j, f->b,
                             off);
                w.rdma.compare_add = cpu_to_le64(5);
                len = 8;
                break;
            }
            post(f->a, qa[q], &w, off, len);
        }
    }
    for (q = 0; q < nq; q++) {
        for (j = 0; j < nops; j++) {
            uint64_t off = (q * nops + j) * slot;
            uint32_t len = sizes[(j / 4) % 4];
            struct qhca_cqe c = cqe_of(f->a, qa[q], q << 8 | j);

            if (c.status != QHCA_CQE_SUCCESS) {
                g_test_message("seed %u, QP %u op %u: status %u", seed, q,
                               j, c.status);
            }
            g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
            if (j % 4 == 3) {
                g_assert_cmpuint(ldq_le_p(mr_mem(f->a, off)), ==, 1000 + j);
                g_assert_cmpuint(ldq_le_p(mr_mem(f->b, off)), ==, 1005 + j);
            } else {
                g_assert_true(same(f->a, off, f->b, off, len));
            }
        }
    }
    /* B's receives: one success for each SEND, none else (and its CQ free) */
    for (q = 0; q < nq; q++) {
        for (j = 2; j < nops; j += 4) {
            struct qhca_cqe c = cqe_of(f->b, qb[q], q << 8 | j);

            g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
            g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, sizes[(j / 4) % 4]);
        }
    }
    hx_wire_set_mode(f->p, 0, HX_WIRE_PASS, 0);
    hx_wire_set_mode(f->p, 1, HX_WIRE_PASS, 0);
}

static void test_lossy_mix(Fx *f, gconstpointer data)
{
    HxQp *qa[4], *qb[4];
    uint32_t seed;
    unsigned q, i;

    qa[0] = rc(f->a);
    qb[0] = rc(f->b);
    for (q = 1, i = HX_QP_SETUP; q < 4; i++, q++) {
        qa[q] = hx_drv_make_rc_pair(f->p, i);
        g_assert_nonnull(qa[q]);
        qb[q] = &f->b->drv.qp[i];
    }
    /* 5% lost each way (the guests' fabric phase), then 20% */
    for (seed = 1; seed <= 40; seed++) {
        lossy_mix(f, qa, qb, 20, seed);
    }
    for (seed = 41; seed <= 50; seed++) {
        lossy_mix(f, qa, qb, 5, seed);
    }
    g_assert_cmpuint(f->p->wire_lost, >, 0);
}

/* ---- RNR, retries, errors ---- */

static void test_rnr_retry(Fx *f, gconstpointer data)
{
    uint64_t naks = f->b->core.stat_rnr_naks_sent;
    struct qhca_send_wqe w;
    struct qhca_cqe c;

    /* no receive posted: B answers RNR NAKs, A retries (rnr_retry 7) */
    fill(f->a, 0, 2000, 7);
    w = hx_wqe(QHCA_WQE_SEND, 0xa1);
    post(f->a, rc(f->a), &w, 0, 2000);
    g_assert_false(hx_wait_cqe(f->a, rc(f->a)->qpn, 0xa1, &c,
                               20 * 1000 * 1000));
    g_assert_cmpuint(f->b->core.stat_rnr_naks_sent, >, naks + 1);
    /* a receive posted 20 ms later takes it */
    post_recv(f->b, rc(f->b), 0xb1, 0x10000, 4096);
    assert_ok(f->b, rc(f->b), 0xb1);
    assert_ok(f->a, rc(f->a), 0xa1);
    g_assert_true(same(f->a, 0, f->b, 0x10000, 2000));
}

static void test_rnr_exhausted(Fx *f, gconstpointer data)
{
    HxConnOpts o = hx_default_conn;
    uint64_t exc = f->a->core.stat_rnr_retry_exceeded;
    struct qhca_send_wqe w;
    struct qhca_cqe c;

    o.rnr_retry = 2;
    reconnect(f, &o);
    w = hx_wqe(QHCA_WQE_SEND, 0xa1);
    post(f->a, rc(f->a), &w, 0, 100);
    c = cqe_of(f->a, rc(f->a), 0xa1);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_RNR_RETRY_EXC_ERR);
    g_assert_cmpuint(f->a->core.stat_rnr_retry_exceeded, ==, exc + 1);
    /* three RNR NAKs: the first try and two retries */
    g_assert_cmpuint(f->b->core.stat_rnr_naks_sent, ==, 3);
}

static void test_retry_exhausted(Fx *f, gconstpointer data)
{
    HxConnOpts o = hx_default_conn;
    uint64_t exc = f->a->core.stat_retry_exceeded;
    int64_t t0;
    struct qhca_send_wqe w;
    struct qhca_cqe c;

    o.retry_cnt = 2;
    reconnect(f, &o);
    hx_wire_set_mode(f->p, 0, HX_WIRE_BLACKHOLE, 0);
    t0 = f->p->now;
    w = hx_wqe(QHCA_WQE_SEND, 0xa1);
    post(f->a, rc(f->a), &w, 0, 100);
    w = hx_wqe(QHCA_WQE_SEND, 0xa2);
    post(f->a, rc(f->a), &w, 0, 100);
    c = cqe_of(f->a, rc(f->a), 0xa1);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_RETRY_EXC_ERR);
    g_assert_cmpuint(f->a->core.stat_retry_exceeded, ==, exc + 1);
    /* three timeouts of 4.096 us << 8 first */
    g_assert_cmpint(f->p->now - t0, >=, 3 * (4096LL << 8));
    /* the QP is in error: what is behind is flushed */
    c = cqe_of(f->a, rc(f->a), 0xa2);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_WR_FLUSH_ERR);
}

/*
 * A link down for 5 s (issue 25): with a QP timeout and retry count that
 * cover it (timeout 18 = 1.07 s, 7 retries: 8.6 s) the WRITE goes on when
 * the link is back and completes; with timeout 14 (67 ms) and 7 retries
 * the QP fails with retry exceeded after the IBA's (7 + 1) timeouts.
 * Early retransmissions (probes) do not count against the retries.
 */
static int64_t write_through_outage(Fx *f, uint8_t timeout, int64_t down_ns,
                                    uint8_t *status)
{
    const uint32_t len = 1024 * 1024;
    HxConnOpts o = hx_default_conn;
    struct qhca_send_wqe w;
    struct qhca_cqe c;
    int64_t t0;

    o.timeout = timeout;
    reconnect(f, &o);
    fill(f->a, 0, len, 11);
    memset(mr_mem(f->b, 0), 0, len);
    hx_wire_set_mode(f->p, 0, HX_WIRE_BLACKHOLE, 0);
    hx_wire_set_mode(f->p, 1, HX_WIRE_BLACKHOLE, 0);
    t0 = f->p->now;
    w = rdma_wqe(QHCA_WQE_RDMA_WRITE, 0xd1, f->b, 0);
    post(f->a, rc(f->a), &w, 0, len);
    while (f->p->now - t0 < down_ns && !hx_poll_cq(f->a, &c)) {
        hx_settle(f->p, down_ns - (f->p->now - t0), 1000);
        if (hx_poll_cq(f->a, &c)) {
            *status = c.status;
            return f->p->now - t0;
        }
        if (!hx_step(f->p)) {
            break;
        }
    }
    hx_wire_set_mode(f->p, 0, HX_WIRE_PASS, 0);
    hx_wire_set_mode(f->p, 1, HX_WIRE_PASS, 0);
    c = cqe_of(f->a, rc(f->a), 0xd1);
    *status = c.status;
    if (c.status == QHCA_CQE_SUCCESS) {
        g_assert_true(same(f->a, 0, f->b, 0, len));
    }
    return f->p->now - t0;
}

static void test_link_down_covered(Fx *f, gconstpointer data)
{
    uint64_t exc = f->a->core.stat_retry_exceeded;
    uint64_t tmo = f->a->core.stat_timeouts;
    uint8_t status;
    int64_t t = write_through_outage(f, 18, 5000000000LL, &status);

    g_test_message("timeout 18, link down 5 s: status %u after %.2f s, "
                   "%" PRIu64 " timeouts", status, t / 1e9,
                   f->a->core.stat_timeouts - tmo);
    g_assert_cmpuint(status, ==, QHCA_CQE_SUCCESS);
    g_assert_cmpint(t, >=, 5000000000LL);
    g_assert_cmpuint(f->a->core.stat_retry_exceeded, ==, exc);
    g_assert_cmpuint(f->a->core.stat_timeouts, >, tmo);
}

static void test_link_down_default(Fx *f, gconstpointer data)
{
    const int64_t period = 4096LL << 14;        /* 67.1 ms */
    uint8_t status;
    int64_t t = write_through_outage(f, 14, 5000000000LL, &status);

    g_test_message("timeout 14, link down 5 s: status %u after %.3f s "
                   "(IBA: 8 x %.1f ms = %.3f s)", status, t / 1e9,
                   period / 1e6, 8 * period / 1e9);
    g_assert_cmpuint(status, ==, QHCA_CQE_RETRY_EXC_ERR);
    g_assert_cmpint(t, >=, 8 * period);
    g_assert_cmpint(t, <, 9 * period);
}

/* A remote access error leaves the responder's memory as it was */
static void remote_access_error(Fx *f, struct qhca_send_wqe *w)
{
    const uint32_t mr_len = f->b->drv.mr.len;
    uint8_t *before = g_malloc(mr_len);
    uint64_t naks = f->a->core.stat_naks_rcvd;
    struct qhca_cqe c;

    fill(f->a, 0, 8192, 8);
    fill(f->b, 0, mr_len, 9);
    memcpy(before, mr_mem(f->b, 0), mr_len);
    post(f->a, rc(f->a), w, 0,
         w->opcode >= QHCA_WQE_ATOMIC_CMP_AND_SWP ? 8 : 8192);
    c = cqe_of(f->a, rc(f->a), le64_to_cpu(w->wr_id));
    g_assert_cmpuint(c.status, ==, QHCA_CQE_REM_ACCESS_ERR);
    g_assert_cmpuint(f->a->core.stat_naks_rcvd, >, naks);
    g_assert_true(!memcmp(before, mr_mem(f->b, 0), mr_len));
    g_free(before);
}

static void test_bad_rkey_write(Fx *f, gconstpointer data)
{
    struct qhca_send_wqe w = rdma_wqe(QHCA_WQE_RDMA_WRITE, 0xa1, f->b, 0);

    w.rdma.rkey = cpu_to_le32(f->b->drv.mr.key + 1);
    remote_access_error(f, &w);
}

static void test_bad_rkey_atomic(Fx *f, gconstpointer data)
{
    struct qhca_send_wqe w = rdma_wqe(QHCA_WQE_ATOMIC_FETCH_AND_ADD, 0xa1,
                                      f->b, 0x100);

    w.rdma.rkey = cpu_to_le32(f->b->drv.mr.key ^ 0x100);
    w.rdma.compare_add = cpu_to_le64(1);
    remote_access_error(f, &w);
}

static void test_write_out_of_bounds(Fx *f, gconstpointer data)
{
    /* 8 KiB, the last 4 KiB past the end of B's MR */
    struct qhca_send_wqe w = rdma_wqe(QHCA_WQE_RDMA_WRITE, 0xa1, f->b,
                                      f->b->drv.mr.len - 4096);

    remote_access_error(f, &w);
}

static void test_read_bad_rkey(Fx *f, gconstpointer data)
{
    struct qhca_send_wqe w = rdma_wqe(QHCA_WQE_RDMA_READ, 0xa1, f->b, 0);
    struct qhca_cqe c;

    memset(mr_mem(f->a, 0x300000), 0x77, 8192);
    w.rdma.rkey = cpu_to_le32(f->b->drv.mr.key + 1);
    post(f->a, rc(f->a), &w, 0x300000, 8192);
    c = cqe_of(f->a, rc(f->a), 0xa1);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_REM_ACCESS_ERR);
    /* nothing was written into the READ's buffer */
    g_assert_cmpuint(mr_mem(f->a, 0x300000)[0], ==, 0x77);
    g_assert_cmpuint(mr_mem(f->a, 0x300000)[8191], ==, 0x77);
}

/*
 * A stale copy of a READ request (a retransmission or probe that crossed
 * the answer) reaches the responder after the READ completed and the
 * responder's consumer closed the memory to remote reads: the responder
 * drops it, and its QP goes on (it once answered with a remote access NAK
 * and moved the QP to ERR; seen with NVMe over RDMA across a migration)
 */
static void test_read_stale_duplicate(Fx *f, gconstpointer data)
{
    struct qhca_send_wqe w = rdma_wqe(QHCA_WQE_RDMA_READ, 0xa1, f->b,
                                      0x80000);
    struct qhca_cmd_rereg_mr rr = {
        .key = cpu_to_le32(f->b->drv.mr.key),
        .what = cpu_to_le32(QHCA_REREG_ACCESS),
        .access = cpu_to_le32(QHCA_ACCESS_LOCAL_WRITE |
                              QHCA_ACCESS_REMOTE_WRITE),
    };
    uint32_t bqpn = rc(f->b)->qpn;
    uint32_t psn;
    uint64_t naks = f->b->core.stat_naks_sent;
    uint8_t frame[256];
    QhcaRoceHdr h = { 0 };
    int n;

    fill(f->b, 0x80000, 4096, 5);
    post(f->a, rc(f->a), &w, 0x200000, 4096);
    assert_ok(f->a, rc(f->a), 0xa1);
    g_assert_true(same(f->a, 0x200000, f->b, 0x80000, 4096));
    psn = f->p->last_psn[0][bqpn & 1023];
    g_assert_cmpint(hx_cmd(f->b, QHCA_CMD_REREG_MR, &rr, sizeof(rr), NULL),
                    ==, QHCA_CMD_OK);

    memcpy(h.dst_mac, f->b->mac, 6);
    memcpy(h.src_mac, f->a->mac, 6);
    h.src_ip = f->a->ip;
    h.dst_ip = f->b->ip;
    h.ttl = 64;
    h.src_port = 0xc123;
    h.pkey = QHCA_ROCE_DEFAULT_PKEY;
    h.opcode = QHCA_ROCE_OP_RC_RDMA_READ_REQUEST;
    h.dest_qp = bqpn;
    h.psn = psn;
    h.reth.va = f->b->drv.mr.iova + 0x80000;
    h.reth.rkey = f->b->drv.mr.key;
    h.reth.dma_len = 4096;
    n = qhca_roce_build(frame, sizeof(frame), &h, NULL, 0);
    g_assert_cmpint(n, >, 0);
    hx_wire_inject(f->p, 1, frame, n);
    hx_settle(f->p, 10 * 1000 * 1000, 10000);

    g_assert_cmpuint(f->b->core.qp[bqpn]->attr.qp_state, ==, QHCA_QPS_RTS);
    g_assert_cmpuint(f->b->core.stat_naks_sent, ==, naks);
    /* and the QP still carries a SEND */
    fill(f->a, 0x300000, 1000, 6);
    post_recv(f->b, rc(f->b), 0xb1, 0x300000, 4096);
    w = hx_wqe(QHCA_WQE_SEND, 0xa2);
    post(f->a, rc(f->a), &w, 0x300000, 1000);
    assert_ok(f->a, rc(f->a), 0xa2);
    assert_ok(f->b, rc(f->b), 0xb1);
    g_assert_true(same(f->a, 0x300000, f->b, 0x300000, 1000));
}

/* ---- windows ---- */

/*
 * Frames A sends on a wire that loses all of them, before any timer: what
 * the window lets out.  Then the wire works again and all completes.
 */
static unsigned sent_into_blackhole(Fx *f, unsigned nqps)
{
    const uint32_t len = 1024 * 1024;
    struct qhca_send_wqe w;
    unsigned sent, i;

    hx_wire_set_mode(f->p, 0, HX_WIRE_BLACKHOLE, 0);
    for (i = 0; i < nqps; i++) {
        w = rdma_wqe(QHCA_WQE_RDMA_WRITE, 0xa0 + i, f->b, i * len);
        post(f->a, &f->a->drv.qp[i], &w, i * len, len);
    }
    sent = f->p->sent[0];
    hx_pump(f->p, 100000);
    sent = f->p->sent[0] - sent;
    hx_wire_set_mode(f->p, 0, HX_WIRE_PASS, 0);
    for (i = 0; i < nqps; i++) {
        assert_ok(f->a, &f->a->drv.qp[i], 0xa0 + i);
        g_assert_true(same(f->a, i * len, f->b, i * len, len));
    }
    return sent;
}

static void test_window_qp(Fx *f, gconstpointer data)
{
    unsigned sent = sent_into_blackhole(f, 1);

    g_test_message("one QP: %u frames before the first timeout", sent);
    g_assert_cmpuint(sent, >=, QHCA_WINDOW_DEFAULT / MTU / 2);
    g_assert_cmpuint(sent, <=, QHCA_WINDOW_DEFAULT / MTU);
}

static void test_window_device(Fx *f, gconstpointer data)
{
    unsigned sent = sent_into_blackhole(f, 2);

    /* two QPs together stay within one window of the device */
    g_test_message("two QPs: %u frames before the first timeout", sent);
    g_assert_cmpuint(sent, >=, QHCA_WINDOW_DEFAULT / MTU / 2);
    g_assert_cmpuint(sent, <=, QHCA_WINDOW_DEFAULT / MTU + 1);
}

/*
 * QP 0 fills the device's window on a wire that loses everything; QP 1's
 * WRITE waits for room in it.  QP 0 is destroyed before any timer: its
 * part of the window is free, and QP 1 must go on with no other event (it
 * has nothing in flight, so no timer of its own would wake it).
 */
static void test_window_device_destroy(Fx *f, gconstpointer data)
{
    const uint32_t len = 1024 * 1024;
    struct qhca_cmd_obj o = { 0 };
    struct qhca_send_wqe w;
    unsigned sent;

    hx_wire_set_mode(f->p, 0, HX_WIRE_BLACKHOLE, 0);
    w = rdma_wqe(QHCA_WQE_RDMA_WRITE, 0xa0, f->b, 0);
    post(f->a, &f->a->drv.qp[0], &w, 0, len);
    hx_pump(f->p, 100000);
    sent = f->p->sent[0];
    w = rdma_wqe(QHCA_WQE_RDMA_WRITE, 0xa1, f->b, len);
    post(f->a, &f->a->drv.qp[1], &w, len, len);
    hx_pump(f->p, 100000);
    /* the window was full: QP 1 sent nothing */
    g_assert_cmpuint(f->p->sent[0], ==, sent);
    hx_wire_set_mode(f->p, 0, HX_WIRE_PASS, 0);
    o.handle = cpu_to_le32(f->a->drv.qp[0].qpn);
    g_assert_cmpint(hx_cmd(f->a, QHCA_CMD_DESTROY_QP, &o, sizeof(o), NULL),
                    ==, QHCA_CMD_OK);
    hx_pump(f->p, 100000);
    g_test_message("QP 1 sent %u frames once QP 0 was destroyed",
                   f->p->sent[0] - sent);
    g_assert_cmpuint(f->p->sent[0] - sent, >=, len / MTU);
    assert_ok(f->a, &f->a->drv.qp[1], 0xa1);
    g_assert_true(same(f->a, len, f->b, len, len));
}

/*
 * A QP that waits for room in the device's window is visited again only
 * when the room it waits for is free, and a READ that waits is not read
 * again to find that out.  Eight RC QPs each post four READs of 64 KiB
 * (two pieces of half a window each) through one device window, and the
 * answers come a frame per run of the requester, as a netdev's wake-ups
 * deliver them: most QPs wait, and each answer frees a packet's worth of
 * the window.  Before, each packet's worth of room visited every waiting
 * QP and each visit read its WQE again (25,024 DMA reads by the requester
 * for 2,048 answers; over sockets with 1,000 QPs the requester spent
 * 195 us per answer and 64 KiB READs moved 3% of what one QP moves); now
 * 4,316: the WQE read for each answer's placement, and little else.
 */
static void test_window_device_read_waiters(Fx *f, gconstpointer data)
{
    const uint32_t len = 64 * 1024;
    HxQp *qps[HX_MAX_QPS];
    struct qhca_send_wqe w;
    unsigned n = 0, i, answers;
    uint64_t reads;

    unsigned k, depth = 4;

    qps[n++] = rc(f->a);
    for (i = HX_QP_SETUP; i < HX_MAX_QPS && n < 8; i++) {
        qps[n] = hx_drv_make_rc_pair(f->p, i);
        g_assert_nonnull(qps[n]);
        n++;
    }
    for (i = 0; i < n * depth; i++) {
        fill(f->b, i * len, len, i + 1);
        memset(mr_mem(f->a, 0x200000 + i * len), 0, len);
    }
    /* a frame, then a run of the receiver: as a netdev's wake-ups go */
    f->p->deliver_max = 1;
    reads = f->a->dma_reads;
    answers = f->p->sent[1];
    for (k = 0; k < depth; k++) {
        for (i = 0; i < n; i++) {
            unsigned j = k * n + i;

            w = rdma_wqe(QHCA_WQE_RDMA_READ, 0xc00 + j, f->b, j * len);
            post(f->a, qps[i], &w, 0x200000 + j * len, len);
        }
    }
    for (k = 0; k < depth; k++) {
        for (i = 0; i < n; i++) {
            unsigned j = k * n + i;

            assert_ok(f->a, qps[i], 0xc00 + j);
            g_assert_true(same(f->a, 0x200000 + j * len, f->b, j * len,
                               len));
        }
    }
    answers = f->p->sent[1] - answers;
    reads = f->a->dma_reads - reads;
    g_test_message("%u QPs: %u answer frames, %" PRIu64 " DMA reads by the "
                   "requester", n, answers, reads);
    g_assert_cmpuint(answers, >=, n * depth * len / MTU);
    g_assert_cmpuint(reads, <=, 3 * answers);
}

/* What the device says of @qp's window now (QUERY_QP_STATE) */
static uint32_t qp_window_now(HxDev *d, HxQp *qp)
{
    struct qhca_cmd_obj o = { 0 };
    struct qhca_qp_state_info s;

    o.handle = cpu_to_le32(qp->qpn);
    g_assert_cmpint(hx_cmd(d, QHCA_CMD_QUERY_QP_STATE, &o, sizeof(o), NULL),
                    ==, QHCA_CMD_OK);
    hx_mem_read(d, HX_RESP_ADDR, &s, sizeof(s));
    return le32_to_cpu(s.window_bytes);
}

/*
 * The window follows the path (issue 25): over a 20 ms round trip and a
 * 100 Mbit/s line a window of 64 KiB moves 3.3 MB/s, a quarter of the
 * line; the window grows to the bandwidth-delay product and the WRITE
 * fills the line.  On a line with no delay the window stays what the
 * device was given, so a small bottleneck queue does not overflow.
 * Virtual time: the harness's wire delays each frame and serialises it.
 */
static double write_over_path(Fx *f, int64_t delay_ns, uint64_t limit,
                              uint32_t len)
{
    struct qhca_send_wqe w;
    int64_t t0;
    double mbs;

    f->p->wire_delay_ns = delay_ns;
    f->p->wire_rate_bps = 100 * 1000 * 1000;
    f->p->wire_limit = limit;
    fill(f->a, 0, len, 9);
    memset(mr_mem(f->b, 0), 0, len);
    t0 = f->p->now;
    w = rdma_wqe(QHCA_WQE_RDMA_WRITE, 0xa9, f->b, 0);
    post(f->a, rc(f->a), &w, 0, len);
    assert_ok(f->a, rc(f->a), 0xa9);
    g_assert_true(same(f->a, 0, f->b, 0, len));
    mbs = len / ((f->p->now - t0) / 1e9) / 1e6;
    g_test_message("%u bytes over %" PRId64 " ms one way at 100 Mbit/s: "
                   "%.2f MB/s, window now %u bytes, %" PRIu64 " frames lost",
                   len, delay_ns / 1000000, mbs,
                   qp_window_now(f->a, rc(f->a)),
                   f->p->wire_lost);
    return mbs;
}

/* RC QPs with timeout 16 (268 ms: well above the round trips here) */
static void reconnect_slow(Fx *f)
{
    HxConnOpts o = hx_default_conn;

    o.timeout = 16;
    reconnect(f, &o);
}

static void test_window_follows_path(Fx *f, gconstpointer data)
{
    /*
     * 100 Mbit/s is 12.5 MB/s of frames, about 11.7 of payload at 1 KiB.
     * The first WRITE's window grows (and its first round trip is
     * measured); the second one's has grown
     */
    double first, mbs;

    reconnect_slow(f);
    first = write_over_path(f, 10 * 1000 * 1000, 1 << 20, 4 << 20);
    mbs = write_over_path(f, 10 * 1000 * 1000, 1 << 20, 4 << 20);

    g_assert_cmpfloat(first, >=, 0.6 * 11.7);
    g_assert_cmpfloat(mbs, >=, 0.85 * 11.7);
    g_assert_cmpuint(f->p->wire_lost, ==, 0);
    /* about 1.5 x 250 KB, and back to the device's after a reset */
    g_assert_cmpuint(qp_window_now(f->a, rc(f->a)), >, 256 * 1024);
    g_assert_cmpuint(qp_window_now(f->a, rc(f->a)), <, 1024 * 1024);
    reconnect(f, &hx_default_conn);
    g_assert_cmpuint(qp_window_now(f->a, rc(f->a)), ==, QHCA_WINDOW_DEFAULT);
}

static void test_window_short_path(Fx *f, gconstpointer data)
{
    /* a 96 KiB queue: a window grown past 64 KiB would overflow it */
    double mbs;

    reconnect_slow(f);
    mbs = write_over_path(f, 0, 96 * 1024, 2 << 20);

    g_assert_cmpfloat(mbs, >=, 0.8 * 11.7);
    g_assert_cmpuint(f->p->wire_lost, ==, 0);
    g_assert_cmpuint(qp_window_now(f->a, rc(f->a)), ==, QHCA_WINDOW_DEFAULT);
}

/* ---- congestion control: ECN marks, CNPs (issue 25) ---- */

static struct qhca_qp_state_info qp_state_now(HxDev *d, HxQp *qp)
{
    struct qhca_cmd_obj o = { 0 };
    struct qhca_qp_state_info s;

    o.handle = cpu_to_le32(qp->qpn);
    g_assert_cmpint(hx_cmd(d, QHCA_CMD_QUERY_QP_STATE, &o, sizeof(o), NULL),
                    ==, QHCA_CMD_OK);
    hx_mem_read(d, HX_RESP_ADDR, &s, sizeof(s));
    return s;
}

typedef struct EcnRun {
    double mbs;                 /* both WRITEs' payload over the whole run */
    double jain;                /* of the two QPs' rates while both sent */
    uint64_t lost, marked, cnp_sent, cnp_handled, cnp_ignored;
    uint64_t queue_max;
    uint32_t cc_window_min;     /* the least limit seen (0: none seen) */
} EcnRun;

/*
 * Two RC QPs of A write 2 MiB each to B through one 100 Mbit/s line with
 * a 96 KiB queue that marks ECN-capable frames CE above 20 KiB: one alone
 * first (its 64 KiB window fits the queue), the second 30 ms later (two
 * windows do not).  Every byte compared.  With @read they READ 2 MiB
 * each from B instead: the answers are what is marked, on the line to A.
 */
static EcnRun ecn_two_flows(Fx *f, bool ecn, bool read)
{
    const uint32_t len = 2 << 20, mtu = 1024;
    HxConnOpts o = hx_default_conn;
    struct qhca_send_wqe w;
    HxQp *qa[2], *qb[2];
    uint32_t psn0[2] = { 0 }, got[2] = { 0 }, at_b[2] = { 0 };
    EcnRun r = { 0 };
    int64_t t0, t1 = 0, tb = 0;
    unsigned q, slices = 0;

    f->a->core.ecn = f->b->core.ecn = ecn;
    o.timeout = 16;
    qa[0] = rc(f->a);
    qb[0] = rc(f->b);
    qa[1] = hx_drv_make_rc_pair(f->p, HX_QP_SETUP);
    g_assert_nonnull(qa[1]);
    qb[1] = &f->b->drv.qp[HX_QP_SETUP];
    for (q = 0; q < 2; q++) {
        g_assert_true(hx_connect_rc(f->a, qa[q], f->b, qb[q], &o));
    }
    f->p->wire_delay_ns = 100 * 1000;
    f->p->wire_rate_bps = 100 * 1000 * 1000;
    f->p->wire_limit = 96 * 1024;
    f->p->wire_ecn = 20 * 1024;
    for (q = 0; q < 2; q++) {
        fill(read ? f->b : f->a, q * len, len, 11 + q);
        memset(mr_mem(read ? f->a : f->b, q * len), 0, len);
    }
    t0 = f->p->now;
    for (q = 0; q < 2; q++) {
        psn0[q] = le32_to_cpu(qp_state_now(f->a, qa[q]).acked_psn);
        w = rdma_wqe(read ? QHCA_WQE_RDMA_READ : QHCA_WQE_RDMA_WRITE,
                     0xe0 + q, f->b, q * len);
        post(f->a, qa[q], &w, q * len, len);
        if (q == 0) {
            hx_settle(f->p, 30 * 1000 * 1000, 10000000);
        }
    }
    /* both send: 2 ms slices until one has all its data acknowledged */
    tb = f->p->now;
    for (q = 0; q < 2; q++) {
        at_b[q] = (le32_to_cpu(qp_state_now(f->a, qa[q]).acked_psn) -
                   psn0[q]) & 0xffffff;
    }
    while (slices++ < 2000) {
        bool done = false;

        hx_settle(f->p, 2 * 1000 * 1000, 10000000);
        for (q = 0; q < 2; q++) {
            struct qhca_qp_state_info s = qp_state_now(f->a, qa[q]);
            uint32_t ccw = le32_to_cpu(s.cc_window_bytes);

            got[q] = (le32_to_cpu(s.acked_psn) - psn0[q]) & 0xffffff;
            done |= got[q] >= len / mtu;
            if (ccw && (!r.cc_window_min || ccw < r.cc_window_min)) {
                r.cc_window_min = ccw;
            }
        }
        if (done) {
            t1 = f->p->now;
            break;
        }
    }
    g_assert_cmpint(t1, >, tb);
    {
        /* Jain's index of what each moved while both sent */
        double x0 = got[0] - at_b[0], x1 = got[1] - at_b[1];

        r.jain = (x0 + x1) * (x0 + x1) / (2 * (x0 * x0 + x1 * x1));
    }
    for (q = 0; q < 2; q++) {
        assert_ok(f->a, qa[q], 0xe0 + q);
        g_assert_true(same(f->a, q * len, f->b, q * len, len));
    }
    r.mbs = 2.0 * len / ((f->p->now - t0) / 1e9) / 1e6;
    r.lost = f->p->wire_lost;
    r.marked = f->p->wire_marked;
    r.queue_max = f->p->wire_queue_max;
    r.cnp_sent = f->b->core.stat_cnp_sent + f->a->core.stat_cnp_sent;
    r.cnp_handled = f->a->core.stat_cnp_handled;
    r.cnp_ignored = f->a->core.stat_cnp_ignored;
    return r;
}

/*
 * One run of ecn_two_flows(), reported, with what every run of its kind
 * must show: with ECN the marks came back, a limit was set, nothing was
 * lost, the line was full and shared; with ecn=off no frame was
 * ECN-capable (so none marked) and the queue overflowed
 */
static EcnRun ecn_case(Fx *f, bool ecn, bool read)
{
    EcnRun r = ecn_two_flows(f, ecn, read);

    g_test_message("%s%s: %.2f MB/s, Jain %.3f while both sent, %" PRIu64
                   " frames lost, %" PRIu64 " marked CE, %" PRIu64
                   " CNPs sent, %" PRIu64 " taken, %" PRIu64 " ignored, "
                   "queue at most %" PRIu64 " bytes, limit down to %u "
                   "bytes", ecn ? "ecn" : "ecn=off", read ? ", READ" : "",
                   r.mbs, r.jain, r.lost, r.marked, r.cnp_sent,
                   r.cnp_handled, r.cnp_ignored, r.queue_max,
                   r.cc_window_min);
    if (ecn) {
        g_assert_cmpuint(r.marked, >, 0);
        g_assert_cmpuint(r.cc_window_min, >, 0);
        g_assert_cmpuint(r.lost, ==, 0);
        g_assert_cmpfloat(r.mbs, >=, 0.8 * 11.7);
        g_assert_cmpfloat(r.jain, >=, 0.9);
    } else {
        g_assert_cmpuint(r.marked, ==, 0);
        g_assert_cmpuint(r.lost, >, 0);
    }
    return r;
}

/*
 * Without ECN the two windows overflow the queue (frames lost, go-back-N);
 * with it the marks come back as CNPs, the requester cuts its window
 * before the queue overflows, nothing is lost and the line is shared
 */
static void test_ecn_bottleneck(Fx *f, gconstpointer data)
{
    EcnRun r = ecn_case(f, true, false);

    g_assert_cmpuint(r.cnp_sent, >, 0);
    g_assert_cmpuint(r.cnp_handled, >, 0);
    g_assert_cmpuint(r.cnp_handled, <=, r.cnp_sent);
    g_assert_cmpuint(r.cnp_ignored, ==, 0);
}

/*
 * READs through the marked line: the answers come back CE and the
 * requester cuts its own window (no CNP is sent for an answer)
 */
static void test_ecn_read(Fx *f, gconstpointer data)
{
    EcnRun r = ecn_case(f, true, true);

    g_assert_cmpuint(r.cnp_sent, ==, 0);
}

/* the same runs with ecn=off: no CE (no ECT), losses */
static void test_ecn_off(Fx *f, gconstpointer data)
{
    EcnRun r = ecn_case(f, false, false);

    g_assert_cmpuint(r.cnp_sent, ==, 0);
}

static void test_ecn_off_read(Fx *f, gconstpointer data)
{
    EcnRun r = ecn_case(f, false, true);

    g_assert_cmpuint(r.cc_window_min, ==, 0);
}

/* @n CNPs to A's QP @dest_qp from @src_ip, @rsvd reserved bytes each */
static void cnps_to_a(Fx *f, uint32_t dest_qp, uint32_t src_ip, size_t rsvd,
                      unsigned n)
{
    static const uint8_t zero[QHCA_ROCE_CNP_LEN];
    uint8_t frame[256];
    QhcaRoceHdr h = { 0 };
    int len;

    memcpy(h.dst_mac, f->a->mac, 6);
    memcpy(h.src_mac, f->b->mac, 6);
    h.src_ip = src_ip;
    h.dst_ip = f->a->ip;
    h.ttl = 64;
    h.src_port = 0xc123;
    h.pkey = QHCA_ROCE_DEFAULT_PKEY;
    h.opcode = QHCA_ROCE_OP_CNP;
    h.dest_qp = dest_qp;
    h.becn = true;
    len = qhca_roce_build(frame, sizeof(frame), &h, zero, rsvd);
    g_assert_cmpint(len, >, 0);
    while (n--) {
        hx_wire_inject(f->p, 0, frame, len);
    }
    hx_settle(f->p, 10 * 1000 * 1000, 100000);
}

/*
 * CNPs are wire input (docs/security.md, "Congestion control"): a burst
 * of 1000 is counted and cuts once (half the window: alpha starts at 1);
 * one without reserved bytes is taken; one from a source that is not the
 * QP's path is dropped before the QP; one to a UC QP is ignored; and the
 * QP still moves data, every byte compared
 */
static void test_ecn_hostile_cnps(Fx *f, gconstpointer data)
{
    HxQp *q = rc(f->a), *u = &f->a->drv.qp[HX_QP_UC];
    QhcaCore *c = &f->a->core;
    uint64_t handled = c->stat_cnp_handled, ignored = c->stat_cnp_ignored;
    uint64_t dropped = c->stat_rx_dropped;
    uint32_t w = qp_window_now(f->a, q);
    struct qhca_send_wqe wqe;

    g_assert_cmpuint(le32_to_cpu(qp_state_now(f->a, q).cc_window_bytes), ==,
                     0);
    cnps_to_a(f, q->qpn, f->b->ip, QHCA_ROCE_CNP_LEN, 1000);
    g_assert_cmpuint(c->stat_cnp_handled, ==, handled + 1000);
    g_assert_cmpuint(le32_to_cpu(qp_state_now(f->a, q).cc_window_bytes), ==,
                     w / 2);
    cnps_to_a(f, q->qpn, f->b->ip, 0, 1);
    g_assert_cmpuint(c->stat_cnp_handled, ==, handled + 1001);
    cnps_to_a(f, q->qpn, 0x06060606, QHCA_ROCE_CNP_LEN, 1);
    g_assert_cmpuint(c->stat_cnp_handled, ==, handled + 1001);
    g_assert_cmpuint(c->stat_rx_dropped, ==, dropped + 1);
    cnps_to_a(f, u->qpn, f->b->ip, QHCA_ROCE_CNP_LEN, 1);
    g_assert_cmpuint(c->stat_cnp_ignored, ==, ignored + 1);
    g_assert_cmpuint(c->stat_cnp_handled, ==, handled + 1001);
    g_assert_cmpuint(f->b->core.stat_cnp_sent, ==, 0);

    fill(f->a, 0, 256 * 1024, 21);
    memset(mr_mem(f->b, 0x100000), 0, 256 * 1024);
    wqe = rdma_wqe(QHCA_WQE_RDMA_WRITE, 0xc1, f->b, 0x100000);
    post(f->a, q, &wqe, 0, 256 * 1024);
    assert_ok(f->a, q, 0xc1);
    g_assert_true(same(f->a, 0, f->b, 0x100000, 256 * 1024));
}

/* ---- UC (docs/hardware.md 10.2) ---- */

static HxQp *uc(HxDev *d)
{
    return &d->drv.qp[HX_QP_UC];
}

static uint8_t qp_state(HxDev *d, HxQp *qp)
{
    struct qhca_qp_attr a;

    g_assert_cmpint(hx_query_qp(d, qp->qpn, &a), ==, QHCA_CMD_OK);
    return a.qp_state;
}

/* The next CQE of @d's CQ, after the pair has settled; status 0xff if none */
static struct qhca_cqe next_cqe(Fx *f, HxDev *d)
{
    struct qhca_cqe c;

    hx_settle(f->p, 10 * 1000 * 1000, 100000);
    if (!hx_poll_cq(d, &c)) {
        memset(&c, 0, sizeof(c));
        c.status = 0xff;
    }
    return c;
}

static void assert_no_cqe(Fx *f, HxDev *d)
{
    struct qhca_cqe c = next_cqe(f, d);

    if (c.status != 0xff) {
        g_test_message("unexpected CQE on %c: QP %u wr_id 0x%" PRIx64
                       " status %u", d->name, le32_to_cpu(c.qpn),
                       le64_to_cpu(c.wr_id), c.status);
    }
    g_assert_cmpuint(c.status, ==, 0xff);
}

/*
 * A SEND (with immediate if @imm) of @len bytes at @off in @from's MR over
 * the UC QPs into a receive WQE at @dst in @to's: both complete, the
 * receive with the bytes, its length and the immediate
 */
static void uc_send_recv(HxDev *from, HxDev *to, uint64_t off, uint64_t dst,
                         uint32_t len, const uint8_t *imm)
{
    struct qhca_send_wqe w;
    struct qhca_cqe c;

    fill(from, off, len, len + dst);
    post_recv(to, uc(to), 0xb000 + len, dst, 4096);
    w = hx_wqe(imm ? QHCA_WQE_SEND_WITH_IMM : QHCA_WQE_SEND, 0xa000 + len);
    if (imm) {
        memcpy(w.imm_data, imm, 4);
    }
    post(from, uc(from), &w, off, len);
    assert_ok(from, uc(from), 0xa000 + len);
    c = cqe_of(to, uc(to), 0xb000 + len);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
    g_assert_cmpuint(c.opcode, ==, QHCA_CQE_OP_RECV);
    g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, len);
    g_assert_cmpuint(c.flags & QHCA_CQE_WITH_IMM, ==,
                     imm ? QHCA_CQE_WITH_IMM : 0);
    if (imm) {
        g_assert_cmpmem(c.imm_data, 4, imm, 4);
    }
    g_assert_true(same(from, off, to, dst, len));
}

static void test_uc_send(Fx *f, gconstpointer data)
{
    unsigned b_sent = f->p->sent[1];
    static const uint8_t imm[4] = { 0x12, 0x34, 0x56, 0x78 };

    /* 3000 bytes: first, middle and last packet */
    uc_send_recv(f->a, f->b, 0, 0x10000, 3000, NULL);
    /* with immediate, two packets */
    uc_send_recv(f->a, f->b, 0x4000, 0x20000, 1500, imm);
    /* the responder sent nothing back: no ACK of any kind */
    hx_settle(f->p, 10 * 1000 * 1000, 100000);
    g_assert_cmpuint(f->p->sent[1], ==, b_sent);
    g_assert_cmpuint(qp_state(f->a, uc(f->a)), ==, QHCA_QPS_RTS);
    g_assert_cmpuint(qp_state(f->b, uc(f->b)), ==, QHCA_QPS_RTS);
}

static void test_uc_write(Fx *f, gconstpointer data)
{
    unsigned b_sent = f->p->sent[1];
    static const uint8_t imm[4] = { 0xca, 0xfe, 0xf0, 0x0d };
    struct qhca_send_wqe w;
    struct qhca_cqe c;

    /* 5000 bytes, five packets, into B's MR, nothing around it touched */
    fill(f->a, 0, 5000, 32);
    memset(mr_mem(f->b, 0x100000 - 16), 0x5a, 5000 + 32);
    w = rdma_wqe(QHCA_WQE_RDMA_WRITE, 0xa1, f->b, 0x100000);
    post(f->a, uc(f->a), &w, 0, 5000);
    assert_ok(f->a, uc(f->a), 0xa1);
    hx_settle(f->p, 10 * 1000 * 1000, 100000);
    g_assert_true(same(f->a, 0, f->b, 0x100000, 5000));
    g_assert_cmpuint(mr_mem(f->b, 0x100000 - 1)[0], ==, 0x5a);
    g_assert_cmpuint(mr_mem(f->b, 0x100000 + 5000)[0], ==, 0x5a);
    /* a WRITE without immediate completes nothing at B */
    assert_no_cqe(f, f->b);

    /* with immediate: the data, and a receive WQE with the immediate */
    fill(f->a, 0x8000, 2500, 33);
    memset(mr_mem(f->b, 0x30000), 0x77, 64);
    post_recv(f->b, uc(f->b), 0xb1, 0x30000, 64);
    w = rdma_wqe(QHCA_WQE_RDMA_WRITE_WITH_IMM, 0xa2, f->b, 0x200000);
    memcpy(w.imm_data, imm, 4);
    post(f->a, uc(f->a), &w, 0x8000, 2500);
    assert_ok(f->a, uc(f->a), 0xa2);
    c = cqe_of(f->b, uc(f->b), 0xb1);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
    g_assert_cmpuint(c.opcode, ==, QHCA_CQE_OP_RECV_RDMA_WITH_IMM);
    g_assert_cmpuint(c.flags & QHCA_CQE_WITH_IMM, !=, 0);
    g_assert_cmpmem(c.imm_data, 4, imm, 4);
    g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, 2500);
    g_assert_true(same(f->a, 0x8000, f->b, 0x200000, 2500));
    /* the receive buffer is not written by a WRITE */
    g_assert_cmpuint(mr_mem(f->b, 0x30000)[0], ==, 0x77);

    hx_settle(f->p, 10 * 1000 * 1000, 100000);
    g_assert_cmpuint(f->p->sent[1], ==, b_sent);
}

/*
 * A lost packet drops its message and nothing else: the receive WQE the
 * dropped message had begun to fill takes the next message
 */
static void uc_lost_packet(Fx *f, HxQp *qa, HxQp *qb)
{
    uint64_t seq = f->b->core.stat_seq_errors;
    unsigned b_sent = f->p->sent[1];
    static const uint8_t imm[4] = { 1, 2, 3, 4 };
    struct qhca_send_wqe w;
    struct qhca_cqe c;
    HxFrame *lost;

    post_recv(f->b, qb, 0xb1, 0x10000, 8192);
    post_recv(f->b, qb, 0xb2, 0x20000, 8192);
    post_recv(f->b, qb, 0xb3, 0x30000, 8192);
    fill(f->a, 0, 3000, 40);
    fill(f->a, 0x1000, 100, 41);
    fill(f->a, 0x2000, 200, 42);
    /* the doorbell puts the three packets on the wire; the middle is lost */
    w = hx_wqe(QHCA_WQE_SEND, 0xa1);
    post(f->a, qa, &w, 0, 3000);
    g_assert_cmpuint(g_queue_get_length(&f->p->wire), ==, 3);
    lost = g_queue_pop_nth(&f->p->wire, 1);
    g_free(lost);
    w = hx_wqe(QHCA_WQE_SEND_WITH_IMM, 0xa2);
    memcpy(w.imm_data, imm, 4);
    post(f->a, qa, &w, 0x1000, 100);
    w = hx_wqe(QHCA_WQE_SEND, 0xa3);
    post(f->a, qa, &w, 0x2000, 200);
    /* the requester cannot know: all three complete */
    assert_ok(f->a, qa, 0xa1);
    assert_ok(f->a, qa, 0xa2);
    assert_ok(f->a, qa, 0xa3);

    /* the second message in the first receive WQE, the third in the next */
    c = next_cqe(f, f->b);
    g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 0xb1);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
    g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, 100);
    g_assert_cmpuint(c.flags & QHCA_CQE_WITH_IMM, !=, 0);
    g_assert_cmpmem(c.imm_data, 4, imm, 4);
    g_assert_true(same(f->a, 0x1000, f->b, 0x10000, 100));
    c = next_cqe(f, f->b);
    g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 0xb2);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
    g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, 200);
    g_assert_true(same(f->a, 0x2000, f->b, 0x20000, 200));
    assert_no_cqe(f, f->b);
    g_assert_cmpuint(f->b->core.stat_seq_errors, ==, seq + 1);
    g_assert_cmpuint(f->p->sent[1], ==, b_sent);
    g_assert_cmpuint(qp_state(f->b, qb), ==, QHCA_QPS_RTS);
}

static void test_uc_lost_packet(Fx *f, gconstpointer data)
{
    uc_lost_packet(f, uc(f->a), uc(f->b));
}

static void test_uc_lost_packet_srq(Fx *f, gconstpointer data)
{
    uc_lost_packet(f, &f->a->drv.qp[HX_QP_UC_SRQ],
                   &f->b->drv.qp[HX_QP_UC_SRQ]);
}

/*
 * What RC answers with an RNR NAK or a remote access error, UC drops
 * silently: no answer, no completion, the QP stays in RTS and takes the
 * next message
 */
static void test_uc_errors_dropped(Fx *f, gconstpointer data)
{
    const uint32_t mr_len = f->b->drv.mr.len;
    uint8_t *before = g_malloc(mr_len);
    unsigned b_sent = f->p->sent[1];
    uint64_t naks = f->b->core.stat_naks_sent;
    uint64_t rnr = f->b->core.stat_rnr_naks_sent;
    struct qhca_send_wqe w;
    struct qhca_cqe c;

    fill(f->a, 0, 8192, 50);
    fill(f->b, 0, mr_len, 51);
    /* no receive WQE */
    w = hx_wqe(QHCA_WQE_SEND, 0xa1);
    post(f->a, uc(f->a), &w, 0, 100);
    assert_ok(f->a, uc(f->a), 0xa1);
    assert_no_cqe(f, f->b);
    /* a receive WQE for what follows: WRITEs that fail take none */
    memcpy(before, mr_mem(f->b, 0), mr_len);
    post_recv(f->b, uc(f->b), 0xb1, 0x3f0000, 4096);
    w = rdma_wqe(QHCA_WQE_RDMA_WRITE, 0xa2, f->b, 0);
    w.rdma.rkey = cpu_to_le32(f->b->drv.mr.key + 1);
    post(f->a, uc(f->a), &w, 0, 64);
    w = rdma_wqe(QHCA_WQE_RDMA_WRITE, 0xa3, f->b, mr_len - 4096);
    post(f->a, uc(f->a), &w, 0, 8192);
    w = rdma_wqe(QHCA_WQE_RDMA_WRITE_WITH_IMM, 0xa4, f->b, mr_len - 100);
    post(f->a, uc(f->a), &w, 0, 200);
    w = rdma_wqe(QHCA_WQE_RDMA_WRITE_WITH_IMM, 0xa5, f->b, 0);
    w.rdma.rkey = cpu_to_le32(f->b->drv.mr.key ^ 0x100);
    post(f->a, uc(f->a), &w, 0, 64);
    assert_ok(f->a, uc(f->a), 0xa2);
    assert_ok(f->a, uc(f->a), 0xa3);
    assert_ok(f->a, uc(f->a), 0xa4);
    assert_ok(f->a, uc(f->a), 0xa5);
    assert_no_cqe(f, f->b);
    g_assert_true(!memcmp(before, mr_mem(f->b, 0), mr_len));
    g_assert_cmpuint(qp_state(f->b, uc(f->b)), ==, QHCA_QPS_RTS);

    /* the QP goes on: the next SEND lands in the receive WQE */
    fill(f->a, 0x5000, 300, 52);
    w = hx_wqe(QHCA_WQE_SEND, 0xa6);
    post(f->a, uc(f->a), &w, 0x5000, 300);
    assert_ok(f->a, uc(f->a), 0xa6);
    c = next_cqe(f, f->b);
    g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 0xb1);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
    g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, 300);
    g_assert_true(same(f->a, 0x5000, f->b, 0x3f0000, 300));
    g_assert_cmpuint(qp_state(f->b, uc(f->b)), ==, QHCA_QPS_RTS);
    g_assert_cmpuint(qp_state(f->a, uc(f->a)), ==, QHCA_QPS_RTS);
    g_assert_cmpuint(f->p->sent[1], ==, b_sent);
    g_assert_cmpuint(f->b->core.stat_naks_sent, ==, naks);
    g_assert_cmpuint(f->b->core.stat_rnr_naks_sent, ==, rnr);
    g_free(before);
}

/* READ and atomics are not UC operations: a local error, the QP to SQE */
static void uc_bad_op(Fx *f, HxQp *qp, uint8_t opcode)
{
    unsigned a_sent = f->p->sent[0];
    struct qhca_send_wqe w = rdma_wqe(opcode, 0xa1, f->b, 0x100);
    struct qhca_cqe c;

    w.rdma.compare_add = cpu_to_le64(1);
    post(f->a, qp, &w, 0x200, 8);
    w = hx_wqe(QHCA_WQE_SEND, 0xa2);
    post(f->a, qp, &w, 0, 8);
    c = cqe_of(f->a, qp, 0xa1);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_LOC_QP_OP_ERR);
    /* what was posted behind it is flushed */
    c = cqe_of(f->a, qp, 0xa2);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_WR_FLUSH_ERR);
    g_assert_cmpuint(qp_state(f->a, qp), ==, QHCA_QPS_SQE);
    hx_settle(f->p, 10 * 1000 * 1000, 100000);
    g_assert_cmpuint(f->p->sent[0], ==, a_sent);
}

static void test_uc_read_atomic(Fx *f, gconstpointer data)
{
    struct qhca_qp_attr at = { 0 };

    uc_bad_op(f, uc(f->a), QHCA_WQE_RDMA_READ);
    uc_bad_op(f, &f->a->drv.qp[HX_QP_UC_SRQ], QHCA_WQE_ATOMIC_FETCH_AND_ADD);
    /* SQE -> RTS, and the QP sends again */
    at.qp_state = QHCA_QPS_RTS;
    g_assert_cmpint(hx_modify_qp(f->a, uc(f->a)->qpn, QHCA_QP_ATTR_STATE,
                                 &at), ==, QHCA_CMD_OK);
    uc_send_recv(f->a, f->b, 0, 0x10000, 100, NULL);
}

/*
 * A UC QP in SQE still receives: SQE stops the send queue only (IBA
 * 10.3.1, as for UD, whose QP in SQE the device lets receive)
 */
static void test_uc_sqe_receives(Fx *f, gconstpointer data)
{
    struct qhca_send_wqe w;

    uc_bad_op(f, uc(f->a), QHCA_WQE_RDMA_READ);
    uc_send_recv(f->b, f->a, 0, 0x10000, 2500, NULL);
    /* and RDMA WRITEs into it land */
    fill(f->b, 0x4000, 1000, 62);
    w = rdma_wqe(QHCA_WQE_RDMA_WRITE, 0xb2, f->a, 0x20000);
    post(f->b, uc(f->b), &w, 0x4000, 1000);
    assert_ok(f->b, uc(f->b), 0xb2);
    hx_settle(f->p, 10 * 1000 * 1000, 100000);
    g_assert_true(same(f->b, 0x4000, f->a, 0x20000, 1000));
    g_assert_cmpuint(qp_state(f->a, uc(f->a)), ==, QHCA_QPS_SQE);
}

static void test_uc_atomic_cmp_swap(Fx *f, gconstpointer data)
{
    stq_le_p(mr_mem(f->b, 0x100), 5);
    uc_bad_op(f, uc(f->a), QHCA_WQE_ATOMIC_CMP_AND_SWP);
    g_assert_cmpuint(ldq_le_p(mr_mem(f->b, 0x100)), ==, 5);
}

/* ---- counters and live state ---- */

/* The core's counters in the order of enum qhca_stat (docs/hardware.md) */
static uint64_t *stat_field(QhcaCore *c, unsigned i)
{
    uint64_t *const f[QHCA_STAT_NUM] = {
        &c->stat_tx_frames, &c->stat_rx_frames, &c->stat_rx_dropped,
        &c->stat_rx_bad_icrc, &c->stat_retransmits, &c->stat_guest_errors,
        &c->stat_loopback, &c->stat_loop_dropped, &c->stat_tx_bytes,
        &c->stat_rx_bytes, &c->stat_naks_sent, &c->stat_naks_rcvd,
        &c->stat_rnr_naks_sent, &c->stat_rnr_naks_rcvd,
        &c->stat_seq_errors, &c->stat_dup_requests, &c->stat_timeouts,
        &c->stat_retry_exceeded, &c->stat_rnr_retry_exceeded,
        &c->stat_ecn_marked, &c->stat_cnp_sent, &c->stat_cnp_handled,
        &c->stat_cnp_ignored,
    };

    return f[i];
}

/*
 * QUERY_STATS from @first with a response buffer of @len bytes in the
 * driver's response page (filled with 0xee first); the command's status
 */
static int query_stats(HxDev *d, uint32_t first, uint32_t len,
                       uint32_t *result)
{
    struct qhca_cmd_query_stats q = { .first = cpu_to_le32(first) };

    hx_mem_fill(d, HX_RESP_ADDR, 0xee, QHCA_PAGE_SIZE);
    d->drv.hdr_override = true;
    d->drv.hdr_flags = 0;
    d->drv.hdr_resp_addr = HX_RESP_ADDR;
    d->drv.hdr_resp_len = len;
    return hx_cmd(d, QHCA_CMD_QUERY_STATS, &q, sizeof(q), result);
}

static uint64_t resp_u64(HxDev *d, unsigned i)
{
    return ldq_le_p(d->ram + HX_RESP_ADDR + 8 * i);
}

static void test_stats_64bit(Fx *f, gconstpointer data)
{
    HxDev *a = f->a;
    uint32_t result = 0;
    unsigned i;

    /* every counter past 2^32, each a different value */
    for (i = 0; i < QHCA_STAT_NUM; i++) {
        *stat_field(&a->core, i) = (uint64_t)(0x10 + i) << 32 |
                                   (0xffff0000u + i);
    }
    g_assert_cmpint(query_stats(a, 0, QHCA_PAGE_SIZE, &result), ==,
                    QHCA_CMD_OK);
    g_assert_cmpuint(result, ==, QHCA_STAT_NUM);
    for (i = 0; i < QHCA_STAT_NUM; i++) {
        g_assert_cmphex(resp_u64(a, i), ==, *stat_field(&a->core, i));
    }
    /* nothing written after the last one */
    g_assert_cmphex(resp_u64(a, QHCA_STAT_NUM), ==, 0xeeeeeeeeeeeeeeeeULL);
    /* the registers show the low 32 bits of the first eight */
    for (i = 0; i < 8; i++) {
        g_assert_cmphex(hx_mmio_read(a, QHCA_REG_STAT_TX_FRAMES + 4 * i), ==,
                        (uint32_t)*stat_field(&a->core, i));
    }

    /* from first = 9, as many as 20 bytes hold: two whole counters */
    g_assert_cmpint(query_stats(a, 9, 20, &result), ==, QHCA_CMD_OK);
    g_assert_cmphex(resp_u64(a, 0), ==, *stat_field(&a->core, 9));
    g_assert_cmphex(resp_u64(a, 1), ==, *stat_field(&a->core, 10));
    g_assert_cmphex((uint32_t)ldl_le_p(a->ram + HX_RESP_ADDR + 16), ==,
                    (uint32_t)*stat_field(&a->core, 11));
    g_assert_cmphex((uint32_t)ldl_le_p(a->ram + HX_RESP_ADDR + 20), ==,
                    0xeeeeeeee);
    /* first = QHCA_STAT_NUM: nothing; beyond it: ERR_PARAM */
    g_assert_cmpint(query_stats(a, QHCA_STAT_NUM, 256, &result), ==,
                    QHCA_CMD_OK);
    g_assert_cmphex(resp_u64(a, 0), ==, 0xeeeeeeeeeeeeeeeeULL);
    g_assert_cmpint(query_stats(a, QHCA_STAT_NUM + 1, 256, &result), ==,
                    QHCA_CMD_ERR_PARAM);
    g_assert_cmpint(query_stats(a, 0xffffffff, 256, &result), ==,
                    QHCA_CMD_ERR_PARAM);
    g_assert_cmphex(resp_u64(a, 0), ==, 0xeeeeeeeeeeeeeeeeULL);
}

/* Counters carried past 2^32 by traffic: 64 bits in QUERY_STATS */
static void test_stats_carry(Fx *f, gconstpointer data)
{
    struct qhca_send_wqe w;

    f->a->core.stat_tx_frames = 0xfffffffeULL;
    f->b->core.stat_rx_frames = 0xffffffffULL;
    f->b->core.stat_rx_bytes = 0x1fffffff0ULL;
    /* three UC packets one way, nothing back */
    post_recv(f->b, uc(f->b), 0xb1, 0x10000, 4096);
    w = hx_wqe(QHCA_WQE_SEND, 0xa1);
    post(f->a, uc(f->a), &w, 0, 3000);
    assert_ok(f->b, uc(f->b), 0xb1);
    assert_ok(f->a, uc(f->a), 0xa1);
    g_assert_cmpint(query_stats(f->a, QHCA_STAT_TX_FRAMES, 8, NULL), ==,
                    QHCA_CMD_OK);
    g_assert_cmphex(resp_u64(f->a, 0), ==, 0x100000001ULL);
    g_assert_cmphex(hx_mmio_read(f->a, QHCA_REG_STAT_TX_FRAMES), ==, 1);
    g_assert_cmpint(query_stats(f->b, 0, QHCA_STAT_NUM * 8, NULL), ==,
                    QHCA_CMD_OK);
    g_assert_cmphex(resp_u64(f->b, QHCA_STAT_RX_FRAMES), ==, 0x100000002ULL);
    g_assert_cmphex(hx_mmio_read(f->b, QHCA_REG_STAT_RX_FRAMES), ==, 2);
    /* the bytes of three whole frames: 3000 of payload and the headers */
    g_assert_cmpuint(resp_u64(f->b, QHCA_STAT_RX_BYTES), >,
                     0x1fffffff0ULL + 3000);
    g_assert_cmpuint(resp_u64(f->b, QHCA_STAT_RX_BYTES), <,
                     0x1fffffff0ULL + 3000 + 3 * 100);
}

/* QUERY_QP_STATE and QUERY_CQ after UC traffic */
static void test_uc_live_state(Fx *f, gconstpointer data)
{
    const uint32_t psn = hx_default_conn.sq_psn;
    struct qhca_cmd_obj o = { 0 };
    struct qhca_qp_state_info s;
    struct qhca_cq_info q;
    struct qhca_send_wqe w;

    post_recv(f->b, uc(f->b), 0xb1, 0x10000, 4096);
    w = hx_wqe(QHCA_WQE_SEND, 0xa1);
    post(f->a, uc(f->a), &w, 0, 3000);
    assert_ok(f->b, uc(f->b), 0xb1);
    assert_ok(f->a, uc(f->a), 0xa1);

    o.handle = cpu_to_le32(uc(f->a)->qpn);
    g_assert_cmpint(hx_cmd(f->a, QHCA_CMD_QUERY_QP_STATE, &o, sizeof(o),
                           NULL), ==, QHCA_CMD_OK);
    hx_mem_read(f->a, HX_RESP_ADDR, &s, sizeof(s));
    g_assert_cmpuint(s.qp_state, ==, QHCA_QPS_RTS);
    g_assert_cmpuint(s.type, ==, QHCA_QPT_UC);
    g_assert_cmphex(le32_to_cpu(s.next_psn), ==, (psn + 3) & 0xffffff);
    g_assert_cmpuint(le16_to_cpu(s.sq_pi), ==, 1);
    g_assert_cmpuint(le16_to_cpu(s.sq_ci), ==, 1);
    g_assert_cmpuint(le32_to_cpu(s.inflight_bytes), ==, 0);
    g_assert_cmpuint(le32_to_cpu(s.rd_outstanding), ==, 0);

    o.handle = cpu_to_le32(uc(f->b)->qpn);
    g_assert_cmpint(hx_cmd(f->b, QHCA_CMD_QUERY_QP_STATE, &o, sizeof(o),
                           NULL), ==, QHCA_CMD_OK);
    hx_mem_read(f->b, HX_RESP_ADDR, &s, sizeof(s));
    g_assert_cmphex(le32_to_cpu(s.epsn), ==, (psn + 3) & 0xffffff);
    g_assert_cmpuint(le16_to_cpu(s.rq_pi), ==, 1);
    g_assert_cmpuint(le16_to_cpu(s.rq_ci), ==, 1);

    /* B's CQ: one CQE written and consumed */
    o.handle = cpu_to_le32(f->b->drv.cqn);
    g_assert_cmpint(hx_cmd(f->b, QHCA_CMD_QUERY_CQ, &o, sizeof(o), NULL), ==,
                    QHCA_CMD_OK);
    hx_mem_read(f->b, HX_RESP_ADDR, &q, sizeof(q));
    g_assert_cmpuint(le32_to_cpu(q.depth), ==, 256);
    g_assert_cmpuint(le16_to_cpu(q.pi), ==, 1);
    g_assert_cmpuint(le16_to_cpu(q.ci), ==, 1);
    g_assert_cmpuint(le32_to_cpu(q.eqn), ==, f->b->drv.eqn);
    g_assert_cmpuint(q.error, ==, 0);
    /* no such CQ, no such QP */
    o.handle = cpu_to_le32(f->b->drv.cqn + 1);
    g_assert_cmpint(hx_cmd(f->b, QHCA_CMD_QUERY_CQ, &o, sizeof(o), NULL), ==,
                    QHCA_CMD_ERR_HANDLE);
    o.handle = cpu_to_le32(0);
    g_assert_cmpint(hx_cmd(f->b, QHCA_CMD_QUERY_QP_STATE, &o, sizeof(o),
                           NULL), ==, QHCA_CMD_ERR_HANDLE);
}

/* ---- loopback ---- */

static void test_loopback(Fx *f, gconstpointer data)
{
    HxDev *a = f->a;
    HxQp *q1 = &a->drv.qp[HX_QP_RC], *q2 = &a->drv.qp[HX_QP_RC_SRQ];
    uint64_t rx_b = f->b->core.stat_rx_frames;
    struct qhca_send_wqe w;

    g_assert_true(hx_connect_loopback(a, &hx_default_conn));
    /* the other device is not involved: its wire is cut */
    hx_wire_set_mode(f->p, 0, HX_WIRE_BLACKHOLE, 0);
    fill(a, 0, 5000, 11);
    post_recv(a, q2, 0xc1, 0x10000, 8192);
    w = hx_wqe(QHCA_WQE_SEND, 0xc2);
    post(a, q1, &w, 0, 5000);
    assert_ok(a, q2, 0xc1);
    assert_ok(a, q1, 0xc2);
    g_assert_true(same(a, 0, a, 0x10000, 5000));

    fill(a, 0x100000, 128 * 1024, 12);
    w = rdma_wqe(QHCA_WQE_RDMA_WRITE, 0xc3, a, 0x200000);
    post(a, q1, &w, 0x100000, 128 * 1024);
    assert_ok(a, q1, 0xc3);
    /* back the other way (another QP: after the WRITE completed) */
    w = rdma_wqe(QHCA_WQE_RDMA_READ, 0xc4, a, 0x200000);
    post(a, q2, &w, 0x300000, 128 * 1024);
    assert_ok(a, q2, 0xc4);
    g_assert_true(same(a, 0x100000, a, 0x200000, 128 * 1024));
    g_assert_true(same(a, 0x100000, a, 0x300000, 128 * 1024));

    stq_le_p(mr_mem(a, 0x400), 41);
    w = rdma_wqe(QHCA_WQE_ATOMIC_FETCH_AND_ADD, 0xc5, a, 0x400);
    w.rdma.compare_add = cpu_to_le64(1);
    post(a, q2, &w, 0x408, 8);
    assert_ok(a, q2, 0xc5);
    g_assert_cmpuint(ldq_le_p(mr_mem(a, 0x400)), ==, 42);
    g_assert_cmpuint(ldq_le_p(mr_mem(a, 0x408)), ==, 41);
    g_assert_cmpuint(f->b->core.stat_rx_frames, ==, rx_b);
}

typedef struct Case {
    const char *path;
    void (*fn)(Fx *f, gconstpointer data);
} Case;

static const Case cases[] = {
    { "/transport/rc/send-recv", test_send_recv },
    { "/transport/rc/write-256k", test_write },
    { "/transport/rc/read-256k", test_read },
    { "/transport/rc/atomics", test_atomics },
    { "/transport/ud/send-and-qkey", test_ud },
    { "/transport/wire/drop-every-nth", test_drop },
    { "/transport/wire/duplicates", test_duplicates },
    { "/transport/wire/reorder", test_reorder },
    { "/transport/wire/drop-random", test_drop_random },
    { "/transport/rnr/retry-until-posted", test_rnr_retry },
    { "/transport/rnr/retry-exhausted", test_rnr_exhausted },
    { "/transport/timeout/retry-exhausted", test_retry_exhausted },
    { "/transport/access/write-bad-rkey", test_bad_rkey_write },
    { "/transport/access/atomic-bad-rkey", test_bad_rkey_atomic },
    { "/transport/access/write-out-of-bounds", test_write_out_of_bounds },
    { "/transport/access/read-bad-rkey", test_read_bad_rkey },
    { "/transport/access/read-stale-duplicate", test_read_stale_duplicate },
    { "/transport/window/qp", test_window_qp },
    { "/transport/window/device", test_window_device },
    { "/transport/window/device-destroy", test_window_device_destroy },
    { "/transport/window/device-read-waiters",
      test_window_device_read_waiters },
    { "/transport/lossy-mix", test_lossy_mix },
    { "/transport/link-down/covered", test_link_down_covered },
    { "/transport/link-down/default", test_link_down_default },
    { "/transport/window/follows-path", test_window_follows_path },
    { "/transport/window/short-path", test_window_short_path },
    { "/transport/ecn/bottleneck", test_ecn_bottleneck },
    { "/transport/ecn/read", test_ecn_read },
    { "/transport/ecn/off", test_ecn_off },
    { "/transport/ecn/off-read", test_ecn_off_read },
    { "/transport/ecn/hostile-cnps", test_ecn_hostile_cnps },
    { "/transport/loopback/rc", test_loopback },
    { "/transport/uc/send", test_uc_send },
    { "/transport/uc/write", test_uc_write },
    { "/transport/uc/lost-packet", test_uc_lost_packet },
    { "/transport/uc/lost-packet-srq", test_uc_lost_packet_srq },
    { "/transport/uc/errors-dropped", test_uc_errors_dropped },
    { "/transport/uc/read-atomic-sqe", test_uc_read_atomic },
    { "/transport/uc/cmp-swap-sqe", test_uc_atomic_cmp_swap },
    { "/transport/uc/sqe-still-receives", test_uc_sqe_receives },
    { "/transport/uc/live-state", test_uc_live_state },
    { "/transport/stats/64-bit", test_stats_64bit },
    { "/transport/stats/carry-past-2-32", test_stats_carry },
};

int main(int argc, char **argv)
{
    size_t i;

    g_test_init(&argc, &argv, NULL);
    /* a failed assertion fails its case; the other cases still run */
    g_test_set_nonfatal_assertions();
    hx_trace_init();
    for (i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_test_add(cases[i].path, Fx, NULL, fx_setup, cases[i].fn,
                   fx_teardown);
    }
    return g_test_run();
}
