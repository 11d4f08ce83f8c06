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
 * about 1 ms, retry 7, RNR retry 7 = forever), UD QPs in RTS.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "harness.h"

/* Virtual time a CQE may take: covers every retry of every timer here */
#define WAIT_NS         (2 * 1000 * 1000 * 1000LL)
#define MTU             1024u

typedef struct Fx {
    HxPair *p;
    HxDev *a, *b;
} Fx;

static void fx_setup(Fx *f, gconstpointer data)
{
    f->p = g_new0(HxPair, 1);
    hx_pair_init(f->p);
    f->a = &f->p->dev[0];
    f->b = &f->p->dev[1];
    g_assert_true(hx_pair_setup(f->p));
}

static void fx_teardown(Fx *f, gconstpointer data)
{
    int i;

    hx_settle(f->p, 100 * 1000 * 1000, 100000);
    for (i = 0; i < HX_FIND_COUNT; i++) {
        g_assert_cmpuint(f->p->findings[i], ==, 0);
    }
    hx_pair_destroy(f->p);
    g_free(f->p);
}

static HxQp *rc(HxDev *d)
{
    return &d->drv.qp[HX_QP_RC];
}

static struct qhca_send_wqe rdma_wqe(uint8_t opcode, uint64_t wr_id,
                                     HxDev *peer, uint64_t off)
{
    struct qhca_send_wqe w = hx_wqe(opcode, wr_id);

    w.rdma.remote_addr = cpu_to_le64(peer->drv.mr.iova + off);
    w.rdma.rkey = cpu_to_le32(peer->drv.mr.key);
    return w;
}

/* A pattern that differs by @seed and every byte's position */
static void fill(HxDev *d, uint64_t off, uint32_t len, uint32_t seed)
{
    uint8_t *m = d->ram + d->drv.mr.mem + off;
    uint32_t i;

    for (i = 0; i < len; i++) {
        m[i] = i * 7 + seed * 13 + (i >> 8) + (i >> 16);
    }
}

static bool same(HxDev *a, uint64_t aoff, HxDev *b, uint64_t boff,
                 uint32_t len)
{
    return !memcmp(a->ram + a->drv.mr.mem + aoff,
                   b->ram + b->drv.mr.mem + boff, len);
}

static uint8_t *mr_mem(HxDev *d, uint64_t off)
{
    return d->ram + d->drv.mr.mem + off;
}

/* The CQE of @wr_id on @qp; status 0xff if none came within WAIT_NS */
static struct qhca_cqe cqe_of(HxDev *d, HxQp *qp, uint64_t wr_id)
{
    struct qhca_cqe c;

    if (!hx_wait_cqe(d, qp->qpn, wr_id, &c, WAIT_NS)) {
        g_test_message("no CQE for wr_id 0x%" PRIx64 " on %c's QP %u",
                       wr_id, d->name, qp->qpn);
        memset(&c, 0, sizeof(c));
        c.status = 0xff;
    }
    return c;
}

static void assert_ok(HxDev *d, HxQp *qp, uint64_t wr_id)
{
    struct qhca_cqe c = cqe_of(d, qp, wr_id);

    g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
}

static void post_recv(HxDev *d, HxQp *qp, uint64_t wr_id, uint64_t off,
                      uint32_t len)
{
    struct qhca_sge s = hx_sge(&d->drv.mr, off, len);

    hx_post_recv(d, qp, wr_id, &s, 1, true);
}

static void post(HxDev *d, HxQp *qp, struct qhca_send_wqe *w, uint64_t off,
                 uint32_t len)
{
    struct qhca_sge s = hx_sge(&d->drv.mr, off, len);

    hx_post_send(d, qp, w, &s, len ? 1 : 0, NULL, 0, true);
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
    { "/transport/window/qp", test_window_qp },
    { "/transport/window/device", test_window_device },
    { "/transport/loopback/rc", test_loopback },
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
