/*
 * QTest for the qhca RDMA HCA: live migration in the middle of RDMA
 * traffic.  Device A and device B are in two QEMUs joined by a wire the
 * test relays (qhca-mig.h); one of them is migrated to a new QEMU while an
 * RC transfer between them is under way, and the transfer completes: every
 * byte compared, every CQE taken once with its status, opcode and length,
 * nothing more on either CQ, both QPs still RTS, no async event.  The peer
 * is only ever posted to and polled: it needs nothing done to it.
 *
 * While the source runs, the wire carries a few frames more to and from
 * it (the "budget") and then cuts its link until the destination runs,
 * so that the switch-over comes before the transfer ends and frames are
 * lost around it, as frames to and from a host that stops are in a real
 * migration: each case checks that some were, and the RC transport makes
 * up for them (the devices' go-back and timeout counters are printed).
 * Each migration prints its downtime as QEMU measured it.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "libqtest.h"
#include "qemu/bswap.h"
#include "qemu/cutils.h"
#include "qhca-mig.h"

enum { NODE_A, NODE_B };

typedef struct Fx {
    MigPair p;
    End a, b;
} Fx;

/*
 * A and B in their QEMUs with an RC QP each, connected to each other; B's
 * receives from an SRQ if @b_srq
 */
static void fx_start_ex(Fx *f, const ConnOpts *o, bool b_srq)
{
    mig_pair_start(&f->p);
    end_create(&f->a, &f->p.n[NODE_A].d, QHCA_QPT_RC, IP_A, mac_a, false);
    end_create(&f->b, &f->p.n[NODE_B].d, QHCA_QPT_RC, IP_B, mac_b, b_srq);
    rc_connect_one(&f->a, &f->b, o ? o : &rc_default_opts);
    rc_connect_one(&f->b, &f->a, o ? o : &rc_default_opts);
}

static void fx_start(Fx *f, const ConnOpts *o)
{
    fx_start_ex(f, o, false);
}

/*
 * The end of every case: no CQE more on either side, both QPs RTS, no
 * async event (no QP or CQ error, no port event) on either device
 */
static void fx_finish(Fx *f)
{
    uint64_t va[QHCA_STAT_NUM], vb[QHCA_STAT_NUM];

    g_assert_true(mig_quiet(&f->p, &f->a, &f->b, 300));
    /* how the transport made up for what the migration lost (no check) */
    query_stats(f->a.d, 0, va);
    query_stats(f->b.d, 0, vb);
    g_test_message("A: %" PRIu64 " go-backs, %" PRIu64 " timeouts; B: %"
                   PRIu64 " go-backs, %" PRIu64 " timeouts, %" PRIu64
                   " packets ahead of its ePSN, %" PRIu64 " behind",
                   va[QHCA_STAT_RETRANSMITS], va[QHCA_STAT_TIMEOUTS],
                   vb[QHCA_STAT_RETRANSMITS], vb[QHCA_STAT_TIMEOUTS],
                   vb[QHCA_STAT_SEQ_ERRORS], vb[QHCA_STAT_DUP_REQUESTS]);
    g_assert_cmpuint(qp_state(&f->a), ==, QHCA_QPS_RTS);
    g_assert_cmpuint(qp_state(&f->b), ==, QHCA_QPS_RTS);
    g_assert_cmpuint(mig_async_events(&f->p, NODE_A), ==, 0);
    g_assert_cmpuint(mig_async_events(&f->p, NODE_B), ==, 0);
    mig_pair_stop(&f->p);
}

/* The next CQE of @e: a success of @opcode for @wr_id, @len bytes */
static struct qhca_cqe expect_ok(End *e, uint64_t wr_id, uint8_t opcode,
                                 uint32_t len)
{
    struct qhca_cqe c = poll_cq(e);

    g_assert_cmphex(le64_to_cpu(c.wr_id), ==, wr_id);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
    g_assert_cmpuint(c.opcode, ==, opcode);
    g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, len);
    g_assert_cmpuint(le32_to_cpu(c.qpn), ==, e->qpn);
    return c;
}

/*
 * The transfer was under way at the switch-over: the wire had handed its
 * receiver fewer frames from node @sender (acknowledgements counted too)
 * than the @data packets the transfer needs
 */
static void assert_mid_transfer(Fx *f, int sender, unsigned data)
{
    g_assert_cmpuint(f->p.to[!sender], >, 0);
    g_assert_cmpuint(f->p.to[!sender], <, data);
}

/*
 * Migrate node @mig, the wire carrying @budget frames meanwhile: frames
 * to or from it were lost (the transport has something to make up for),
 * and its QP is RTS on the new QEMU
 */
static void migrate_lossy(Fx *f, int mig, int budget)
{
    unsigned lost = f->p.lost;

    mig_migrate(&f->p, mig, budget);
    g_assert_cmpuint(f->p.lost, >, lost);
    g_assert_cmpuint(qp_state(mig == NODE_A ? &f->a : &f->b), ==,
                     QHCA_QPS_RTS);
}

static const uint32_t access_rw = QHCA_ACCESS_LOCAL_WRITE |
                                  QHCA_ACCESS_REMOTE_WRITE |
                                  QHCA_ACCESS_REMOTE_READ;

/*
 * A 512 KiB RDMA WRITE from A to B (512 packets at MTU 1024), node @mig
 * migrated after A's first 100 packets: A as the requester (the WQE half
 * sent, its PSNs and retry state saved) or B as the responder (its
 * expected PSN and the WRITE's progress through the MR saved)
 */
static void write_migrated(int mig)
{
    const uint32_t len = 512 << 10;
    g_autofree uint8_t *out = g_malloc(len);
    g_autofree uint8_t *in = g_malloc(len);
    struct qhca_send_wqe w;
    struct qhca_sge s;
    Mr src, dst;
    Fx f;

    fx_start(&f, NULL);
    src = mr_reg(f.a.d, f.a.pdn, len, QHCA_ACCESS_LOCAL_WRITE, 0x40000000);
    dst = mr_reg(f.b.d, f.b.pdn, len, access_rw, 0x7f1234560000);
    fill(out, len, 0x31);
    mr_io(f.a.d, &src, 0, out, len, true);

    w = wqe(QHCA_WQE_RDMA_WRITE, 0x1001);
    w.rdma.remote_addr = cpu_to_le64(dst.iova);
    w.rdma.rkey = cpu_to_le32(dst.key);
    s = sge(&src, 0, len);
    post_send(&f.a, &w, &s, 1, NULL, 0);
    g_assert_true(mig_run_until_from(&f.p, NODE_A, 100));

    g_assert_false(cqe_ready(&f.a, f.a.cq_ci));
    migrate_lossy(&f, mig, 10);
    assert_mid_transfer(&f, NODE_A, len / 1024);

    expect_ok(&f.a, 0x1001, QHCA_CQE_OP_RDMA_WRITE, len);
    mr_io(f.b.d, &dst, 0, in, len, false);
    g_assert_true(memcmp(in, out, len) == 0);
    /* the new QEMU carried it on: data from A', acknowledgements from B' */
    g_assert_cmpuint(f.p.n[mig].from_gen, >, 0);
    fx_finish(&f);
}

static void test_write_requester(void)
{
    write_migrated(NODE_A);
}

static void test_write_responder(void)
{
    write_migrated(NODE_B);
}

/*
 * A 384 KiB RDMA READ of A's from B's memory (384 response packets), node
 * @mig migrated after B's first 100 responses: A as the requester (half
 * the responses placed, the rest re-requested from where they stopped) or
 * B as the responder (its READ resource, how far it has answered, saved)
 */
static void read_migrated(int mig)
{
    const uint32_t len = 384 << 10;
    g_autofree uint8_t *out = g_malloc(len);
    g_autofree uint8_t *in = g_malloc(len);
    struct qhca_send_wqe w;
    struct qhca_sge s;
    Mr src, dst;
    Fx f;

    fx_start(&f, NULL);
    dst = mr_reg(f.a.d, f.a.pdn, len, QHCA_ACCESS_LOCAL_WRITE, 0x50000123);
    src = mr_reg(f.b.d, f.b.pdn, len, access_rw, 0x7f0000010000);
    fill(out, len, 0x52);
    mr_io(f.b.d, &src, 0, out, len, true);

    w = wqe(QHCA_WQE_RDMA_READ, 0x1002);
    w.rdma.remote_addr = cpu_to_le64(src.iova);
    w.rdma.rkey = cpu_to_le32(src.key);
    s = sge(&dst, 0, len);
    post_send(&f.a, &w, &s, 1, NULL, 0);
    g_assert_true(mig_run_until_from(&f.p, NODE_B, 100));

    g_assert_false(cqe_ready(&f.a, f.a.cq_ci));
    migrate_lossy(&f, mig, 10);
    assert_mid_transfer(&f, NODE_B, len / 1024);

    expect_ok(&f.a, 0x1002, QHCA_CQE_OP_RDMA_READ, len);
    mr_io(f.a.d, &dst, 0, in, len, false);
    g_assert_true(memcmp(in, out, len) == 0);
    g_assert_cmpuint(f.p.n[mig].from_gen, >, 0);
    fx_finish(&f);
}

static void test_read_requester(void)
{
    read_migrated(NODE_A);
}

static void test_read_responder(void)
{
    read_migrated(NODE_B);
}

#define NREAD       8
#define READ_LEN    (64 << 10)

/*
 * Eight 64 KiB READs of A's from B, four outstanding (the responder's
 * four READ resources in use, each part answered), B migrated after its
 * 60th response and A after its 200th: every READ completes in order
 * with its bytes
 */
static void test_reads_in_flight(void)
{
    const uint32_t len = NREAD * READ_LEN;
    g_autofree uint8_t *out = g_malloc(len);
    g_autofree uint8_t *in = g_malloc(len);
    struct qhca_send_wqe w;
    struct qhca_sge s;
    Mr src, dst;
    Fx f;
    int k;

    fx_start(&f, NULL);
    dst = mr_reg(f.a.d, f.a.pdn, len, QHCA_ACCESS_LOCAL_WRITE, 0x68000000);
    src = mr_reg(f.b.d, f.b.pdn, len, access_rw, 0x69000000);
    fill(out, len, 0x6d);
    mr_io(f.b.d, &src, 0, out, len, true);
    for (k = 0; k < NREAD; k++) {
        w = wqe(QHCA_WQE_RDMA_READ, 0x1100 + k);
        w.rdma.remote_addr = cpu_to_le64(src.iova + k * READ_LEN);
        w.rdma.rkey = cpu_to_le32(src.key);
        s = sge(&dst, k * READ_LEN, READ_LEN);
        post_send(&f.a, &w, &s, 1, NULL, 0);
    }
    g_assert_true(mig_run_until_from(&f.p, NODE_B, 60));
    migrate_lossy(&f, NODE_B, 10);
    g_assert_true(mig_run_until_from(&f.p, NODE_B, 200));
    migrate_lossy(&f, NODE_A, 10);
    /* B had handed A fewer responses than the READs' 512 */
    assert_mid_transfer(&f, NODE_B, len / 1024);

    for (k = 0; k < NREAD; k++) {
        expect_ok(&f.a, 0x1100 + k, QHCA_CQE_OP_RDMA_READ, READ_LEN);
    }
    mr_io(f.a.d, &dst, 0, in, len, false);
    g_assert_true(memcmp(in, out, len) == 0);
    fx_finish(&f);
}

#define NMSG        16
#define MSG_SLOT    (24 << 10)

static uint32_t msg_len(int k)
{
    return 20000 + 250 * k;         /* 20 to 24 packets, the last short */
}

/* Post @e's receives of NMSG messages into @m and its SENDs from @from */
static void post_messages(End *e, const Mr *rx, const Mr *tx, uint32_t seed)
{
    struct qhca_sge s;
    struct qhca_send_wqe w;
    int k;

    for (k = 0; k < NMSG; k++) {
        s = sge(rx, k * MSG_SLOT, MSG_SLOT);
        post_recv(e, 0x3000 + k, &s, 1);
    }
    for (k = 0; k < NMSG; k++) {
        w = wqe(QHCA_WQE_SEND_WITH_IMM, 0x2000 + k);
        stl_be_p(w.imm_data, seed + k);
        s = sge(tx, k * MSG_SLOT, msg_len(k));
        post_send(e, &w, &s, 1, NULL, 0);
    }
}

/*
 * @e's 2 * NMSG CQEs: its SENDs in order and the messages it received in
 * order (the two interleave on its CQ as they happen), each exactly once
 * with its length and the sender's immediate data @seed + k
 */
static void take_messages(End *e, uint32_t seed)
{
    int sent = 0, got = 0;

    while (sent + got < 2 * NMSG) {
        struct qhca_cqe c = poll_cq(e);

        g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
        g_assert_cmpuint(le32_to_cpu(c.qpn), ==, e->qpn);
        if (c.opcode & QHCA_CQE_OP_RECV) {
            g_assert_cmpint(got, <, NMSG);
            g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 0x3000 + got);
            g_assert_cmpuint(c.opcode, ==, QHCA_CQE_OP_RECV);
            g_assert_cmphex(c.flags & QHCA_CQE_WITH_IMM, ==,
                            QHCA_CQE_WITH_IMM);
            g_assert_cmphex((uint32_t)ldl_be_p(c.imm_data), ==, seed + got);
            g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, msg_len(got));
            got++;
        } else {
            g_assert_cmpint(sent, <, NMSG);
            g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 0x2000 + sent);
            g_assert_cmpuint(c.opcode, ==, QHCA_CQE_OP_SEND);
            g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, msg_len(sent));
            sent++;
        }
    }
}

/* Message k of @rx is what the peer sent of @tx, the rest of its slot 0 */
static void check_messages(QQhca *d, const Mr *rx, const uint8_t *tx)
{
    g_autofree uint8_t *in = g_malloc(MSG_SLOT);
    int k;

    for (k = 0; k < NMSG; k++) {
        mr_io(d, rx, k * MSG_SLOT, in, MSG_SLOT, false);
        g_assert_true(memcmp(in, tx + k * MSG_SLOT, msg_len(k)) == 0);
        g_assert_true(buffer_is_zero(in + msg_len(k),
                                     MSG_SLOT - msg_len(k)));
    }
}

/*
 * SEND with immediate both ways, 16 messages of 20 to 24 packets each, A
 * migrated after its first 60 packets: its requester in the middle of a
 * message and its responder in the middle of another (the receive WQE
 * being filled, how far, the MSN)
 */
static void test_send_imm(void)
{
    const uint32_t len = NMSG * MSG_SLOT;
    g_autofree uint8_t *out_a = g_malloc(len);
    g_autofree uint8_t *out_b = g_malloc(len);
    Mr txa, rxa, txb, rxb;
    Fx f;

    fx_start(&f, NULL);
    txa = mr_reg(f.a.d, f.a.pdn, len, QHCA_ACCESS_LOCAL_WRITE, 0x60000000);
    rxa = mr_reg(f.a.d, f.a.pdn, len, QHCA_ACCESS_LOCAL_WRITE, 0x61000000);
    txb = mr_reg(f.b.d, f.b.pdn, len, QHCA_ACCESS_LOCAL_WRITE, 0x62000000);
    rxb = mr_reg(f.b.d, f.b.pdn, len, QHCA_ACCESS_LOCAL_WRITE, 0x63000000);
    fill(out_a, len, 0x0a);
    fill(out_b, len, 0x0b);
    mr_io(f.a.d, &txa, 0, out_a, len, true);
    mr_io(f.b.d, &txb, 0, out_b, len, true);

    post_messages(&f.b, &rxb, &txb, 0xb0000000);
    post_messages(&f.a, &rxa, &txa, 0xa0000000);
    g_assert_true(mig_run_until_from(&f.p, NODE_A, 60));

    migrate_lossy(&f, NODE_A, 10);
    assert_mid_transfer(&f, NODE_A, NMSG * 20);

    take_messages(&f.a, 0xb0000000);
    take_messages(&f.b, 0xa0000000);
    check_messages(f.a.d, &rxa, out_b);
    check_messages(f.b.d, &rxb, out_a);
    g_assert_cmpuint(f.p.n[NODE_A].from_gen, >, 0);
    fx_finish(&f);
}

#define NATOMIC     64

/*
 * Atomics both ways while A is migrated: A's 64 FETCH_AND_ADDs (k + 1)
 * on a counter of B's, B's 64 COMPARE_AND_SWAPs on a counter of A's, each
 * expecting the value the one before left (5000 + k, swapping in
 * 5001 + k); at most 4 of either outstanding.  Each is executed exactly
 * once, in order: an atomic that A' sends again because its response was
 * lost is answered by B from its saved result, and one B sends again to A'
 * is answered from the result A saved, never executed a second time (a
 * second FETCH_AND_ADD would show in the total and every value after it,
 * a second COMPARE_AND_SWAP would fail its compare)
 */
static void test_atomic(void)
{
    struct qhca_send_wqe w;
    struct qhca_sge s;
    Mr ctr_a, ctr_b, res_a, res_b;
    uint64_t v, sum = 0;
    Fx f;
    int k;

    fx_start(&f, NULL);
    ctr_a = mr_reg(f.a.d, f.a.pdn, 64, QHCA_ACCESS_REMOTE_ATOMIC, 0x8000);
    ctr_b = mr_reg(f.b.d, f.b.pdn, 64, QHCA_ACCESS_REMOTE_ATOMIC, 0x9000);
    res_a = mr_reg(f.a.d, f.a.pdn, NATOMIC * 8, QHCA_ACCESS_LOCAL_WRITE,
                   0x70000000);
    res_b = mr_reg(f.b.d, f.b.pdn, NATOMIC * 8, QHCA_ACCESS_LOCAL_WRITE,
                   0x71000000);
    v = cpu_to_le64(1000);
    mr_io(f.b.d, &ctr_b, 8, &v, 8, true);
    v = cpu_to_le64(5000);
    mr_io(f.a.d, &ctr_a, 8, &v, 8, true);

    for (k = 0; k < NATOMIC; k++) {
        w = wqe(QHCA_WQE_ATOMIC_FETCH_AND_ADD, 0x4000 + k);
        w.rdma.remote_addr = cpu_to_le64(ctr_b.iova + 8);
        w.rdma.rkey = cpu_to_le32(ctr_b.key);
        w.rdma.compare_add = cpu_to_le64(k + 1);
        s = sge(&res_a, k * 8, 8);
        post_send(&f.a, &w, &s, 1, NULL, 0);

        w = wqe(QHCA_WQE_ATOMIC_CMP_AND_SWP, 0x5000 + k);
        w.rdma.remote_addr = cpu_to_le64(ctr_a.iova + 8);
        w.rdma.rkey = cpu_to_le32(ctr_a.key);
        w.rdma.compare_add = cpu_to_le64(5000 + k);
        w.rdma.swap = cpu_to_le64(5001 + k);
        s = sge(&res_b, k * 8, 8);
        post_send(&f.b, &w, &s, 1, NULL, 0);
    }
    g_assert_true(mig_run_until_from(&f.p, NODE_A, 4));

    migrate_lossy(&f, NODE_A, 4);
    assert_mid_transfer(&f, NODE_A, NATOMIC);

    for (k = 0; k < NATOMIC; k++) {
        expect_ok(&f.a, 0x4000 + k, QHCA_CQE_OP_FETCH_ADD, 8);
        mr_io(f.a.d, &res_a, k * 8, &v, 8, false);
        g_assert_cmpuint(le64_to_cpu(v), ==, 1000 + sum);
        sum += k + 1;
    }
    for (k = 0; k < NATOMIC; k++) {
        expect_ok(&f.b, 0x5000 + k, QHCA_CQE_OP_COMP_SWAP, 8);
        mr_io(f.b.d, &res_b, k * 8, &v, 8, false);
        g_assert_cmpuint(le64_to_cpu(v), ==, 5000 + k);
    }
    mr_io(f.b.d, &ctr_b, 8, &v, 8, false);
    g_assert_cmpuint(le64_to_cpu(v), ==, 1000 + sum);
    mr_io(f.a.d, &ctr_a, 8, &v, 8, false);
    g_assert_cmpuint(le64_to_cpu(v), ==, 5000 + NATOMIC);
    fx_finish(&f);
}

#define NSRQ        4
#define SRQ_MSG     (100 << 10)

/*
 * B, receiving from an SRQ with its CQ armed, migrated in the middle of
 * the first of A's four 100 KiB SENDs: the SRQ's WQEs and the one being
 * filled, and the CQ's arming, saved.  The messages land in order in the
 * SRQ's buffers, and the first completion raises exactly one event on
 * B's EQ, written by B' (the CQ was still armed when B stopped).
 */
static void test_srq_armed(void)
{
    const uint32_t len = NSRQ * SRQ_MSG;
    g_autofree uint8_t *out = g_malloc(len);
    g_autofree uint8_t *in = g_malloc(len);
    struct qhca_send_wqe w;
    struct qhca_sge s;
    struct qhca_eqe eqe;
    Mr tx, rx;
    Fx f;
    int k;

    fx_start_ex(&f, NULL, true);
    tx = mr_reg(f.a.d, f.a.pdn, len, QHCA_ACCESS_LOCAL_WRITE, 0x64000000);
    rx = mr_reg(f.b.d, f.b.pdn, len, QHCA_ACCESS_LOCAL_WRITE, 0x65000000);
    fill(out, len, 0x3c);
    mr_io(f.a.d, &tx, 0, out, len, true);
    for (k = 0; k < NSRQ; k++) {
        s = sge(&rx, k * SRQ_MSG, SRQ_MSG);
        post_recv(&f.b, 0x3100 + k, &s, 1);
    }
    qhca_db(f.b.d, 0, QHCA_DB_CQ_ARM, f.b.cqn | (uint32_t)f.b.cq_ci << 16);
    for (k = 0; k < NSRQ; k++) {
        w = wqe(QHCA_WQE_SEND, 0x2100 + k);
        s = sge(&tx, k * SRQ_MSG, SRQ_MSG);
        post_send(&f.a, &w, &s, 1, NULL, 0);
    }
    g_assert_true(mig_run_until_from(&f.p, NODE_A, 8));

    migrate_lossy(&f, NODE_B, 4);
    /* the first message's 100 packets had not all gone */
    assert_mid_transfer(&f, NODE_A, SRQ_MSG / 1024);

    for (k = 0; k < NSRQ; k++) {
        expect_ok(&f.a, 0x2100 + k, QHCA_CQE_OP_SEND, SRQ_MSG);
    }
    for (k = 0; k < NSRQ; k++) {
        struct qhca_cqe c = expect_ok(&f.b, 0x3100 + k, QHCA_CQE_OP_RECV,
                                      SRQ_MSG);

        g_assert_cmpuint(le16_to_cpu(c.wqe_index), ==, k);
    }
    mr_io(f.b.d, &rx, 0, in, len, false);
    g_assert_true(memcmp(in, out, len) == 0);
    g_assert_true(qhca_ring_has_entry(f.b.d, f.b.eq.page[0], 6,
                                      QHCA_EQE_SIZE,
                                      offsetof(struct qhca_eqe, owner), 0));
    qtest_memread(f.b.d->qts, f.b.eq.page[0], &eqe, sizeof(eqe));
    g_assert_cmpuint(eqe.type, ==, QHCA_EQE_COMPLETION);
    g_assert_cmpuint(le32_to_cpu(eqe.obj), ==, f.b.cqn);
    g_assert_false(qhca_ring_has_entry(f.b.d, f.b.eq.page[0], 6,
                                       QHCA_EQE_SIZE,
                                       offsetof(struct qhca_eqe, owner), 1));
    fx_finish(&f);
}

/*
 * A migrated while it waits out an RNR NAK: B has no receive posted and
 * asks for 10.24 ms (RNR timer 20) before A tries again.  A' must try
 * again from the saved wait (the timer is re-armed from the saved
 * deadline on the clock the migration carried over); once B posts a
 * receive the SEND lands.  The RNR NAK is in both devices' counters.
 */
static void test_rnr_wait(void)
{
    const ConnOpts o = {
        .mtu = 3, .timeout = 8, .retry_cnt = 7, .rnr_retry = 7,
        .min_rnr_timer = 20, .access = ALL_ACCESS & ~QHCA_ACCESS_LOCAL_WRITE,
    };
    uint8_t out[8000], in[8192];
    uint64_t va[QHCA_STAT_NUM], vb[QHCA_STAT_NUM];
    struct qhca_send_wqe w;
    struct qhca_sge s;
    Mr tx, rx;
    Fx f;

    fx_start(&f, &o);
    tx = mr_reg(f.a.d, f.a.pdn, sizeof(out), QHCA_ACCESS_LOCAL_WRITE,
                0x66000000);
    rx = mr_reg(f.b.d, f.b.pdn, sizeof(in), QHCA_ACCESS_LOCAL_WRITE,
                0x67000000);
    fill(out, sizeof(out), 0x4e);
    mr_io(f.a.d, &tx, 0, out, sizeof(out), true);
    w = wqe(QHCA_WQE_SEND, 0x2200);
    s = sge(&tx, 0, sizeof(out));
    post_send(&f.a, &w, &s, 1, NULL, 0);
    /* B's RNR NAK */
    g_assert_true(mig_run_until_from(&f.p, NODE_B, 1));

    mig_migrate(&f.p, NODE_A, 0);
    g_assert_cmpuint(qp_state(&f.a), ==, QHCA_QPS_RTS);
    g_assert_true(mig_quiet(&f.p, &f.a, &f.b, 20));
    s = sge(&rx, 0, sizeof(in));
    post_recv(&f.b, 0x3200, &s, 1);

    expect_ok(&f.a, 0x2200, QHCA_CQE_OP_SEND, sizeof(out));
    expect_ok(&f.b, 0x3200, QHCA_CQE_OP_RECV, sizeof(out));
    mr_io(f.b.d, &rx, 0, in, sizeof(in), false);
    g_assert_cmpmem(in, sizeof(out), out, sizeof(out));
    query_stats(f.a.d, 0, va);
    query_stats(f.b.d, 0, vb);
    g_assert_cmpuint(va[QHCA_STAT_RNR_NAKS_RCVD], >=, 1);
    g_assert_cmpuint(vb[QHCA_STAT_RNR_NAKS_SENT], >=, 1);
    fx_finish(&f);
}

/*
 * One long transfer each way, migrated four times while it runs, A and B
 * in turn (A to A', B to B', A' to A'', B' to B''): A WRITEs 2 MiB to B
 * and B READs 2 MiB from A, at MTU 4096 (512 packets from A each), the
 * migrations after A's 40th, 140th, 240th and 340th packet.  Before each
 * migration both are still under way; afterwards both complete, every
 * byte in place.
 */
static void test_back_and_forth(void)
{
    const uint32_t len = 2 << 20;
    const ConnOpts o = {
        .mtu = 5, .timeout = 8, .retry_cnt = 7, .rnr_retry = 7,
        .min_rnr_timer = 1, .access = ALL_ACCESS & ~QHCA_ACCESS_LOCAL_WRITE,
    };
    g_autofree uint8_t *wa = g_malloc(len);
    g_autofree uint8_t *ra = g_malloc(len);
    g_autofree uint8_t *in = g_malloc(len);
    struct qhca_send_wqe w;
    struct qhca_sge s;
    Mr wsrc, wdst, rsrc, rdst;
    unsigned k, at;
    Fx f;

    fx_start(&f, &o);
    wsrc = mr_reg(f.a.d, f.a.pdn, len, QHCA_ACCESS_LOCAL_WRITE, 0x100000000);
    rsrc = mr_reg(f.a.d, f.a.pdn, len, access_rw, 0x200000000);
    wdst = mr_reg(f.b.d, f.b.pdn, len, access_rw, 0x300000000);
    rdst = mr_reg(f.b.d, f.b.pdn, len, QHCA_ACCESS_LOCAL_WRITE, 0x400000000);
    fill(wa, len, 0x77);
    fill(ra, len, 0x99);
    mr_io(f.a.d, &wsrc, 0, wa, len, true);
    mr_io(f.a.d, &rsrc, 0, ra, len, true);

    w = wqe(QHCA_WQE_RDMA_WRITE, 0x6001);
    w.rdma.remote_addr = cpu_to_le64(wdst.iova);
    w.rdma.rkey = cpu_to_le32(wdst.key);
    s = sge(&wsrc, 0, len);
    post_send(&f.a, &w, &s, 1, NULL, 0);
    w = wqe(QHCA_WQE_RDMA_READ, 0x6002);
    w.rdma.remote_addr = cpu_to_le64(rsrc.iova);
    w.rdma.rkey = cpu_to_le32(rsrc.key);
    s = sge(&rdst, 0, len);
    post_send(&f.b, &w, &s, 1, NULL, 0);

    for (k = 0, at = 40; k < 4; k++, at += 100) {
        g_assert_true(mig_run_until_from(&f.p, NODE_A, at));
        g_assert_false(cqe_ready(&f.a, f.a.cq_ci));
        g_assert_false(cqe_ready(&f.b, f.b.cq_ci));
        migrate_lossy(&f, k % 2 ? NODE_B : NODE_A, 10);
        /* neither the WRITE's 512 packets nor the READ's are all sent */
        assert_mid_transfer(&f, NODE_A, len / 4096);
    }
    g_assert_cmpuint(f.p.n[NODE_A].gen, ==, 2);
    g_assert_cmpuint(f.p.n[NODE_B].gen, ==, 2);

    expect_ok(&f.a, 0x6001, QHCA_CQE_OP_RDMA_WRITE, len);
    expect_ok(&f.b, 0x6002, QHCA_CQE_OP_RDMA_READ, len);
    mr_io(f.b.d, &wdst, 0, in, len, false);
    g_assert_true(memcmp(in, wa, len) == 0);
    mr_io(f.b.d, &rdst, 0, in, len, false);
    g_assert_true(memcmp(in, ra, len) == 0);
    fx_finish(&f);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    qtest_add_func("/qhca/migration/write/requester", test_write_requester);
    qtest_add_func("/qhca/migration/write/responder", test_write_responder);
    qtest_add_func("/qhca/migration/read/requester", test_read_requester);
    qtest_add_func("/qhca/migration/read/responder", test_read_responder);
    qtest_add_func("/qhca/migration/read/in-flight", test_reads_in_flight);
    qtest_add_func("/qhca/migration/send-imm", test_send_imm);
    qtest_add_func("/qhca/migration/atomic", test_atomic);
    qtest_add_func("/qhca/migration/srq-armed", test_srq_armed);
    qtest_add_func("/qhca/migration/rnr-wait", test_rnr_wait);
    qtest_add_func("/qhca/migration/back-and-forth", test_back_and_forth);

    return g_test_run();
}
