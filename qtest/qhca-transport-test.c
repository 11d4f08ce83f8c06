/*
 * QTest for the qhca RDMA HCA: the /qhca/transport/ cases, the transport of
 * the device as a whole (qhca-wire.h): its window of data in flight over all
 * its QPs, and its counters and live QP/CQ state after a lossy run
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
 * Data in flight is limited for the whole device, not only per QP, and a
 * requester that hears nothing sends one packet early, not a window.
 *
 * Four QPs each post a 64 KiB RDMA WRITE (16 packets at MTU 4096) towards
 * a peer that answers nothing.  The device's window (64 KiB) lets only 16
 * packets go, all of one QP; before, every QP sent its own window (64
 * packets), which on a UDP wire overflows the receiving socket and makes
 * go-back-N lose the same bursts again.  After the RTO (10 ms with no
 * round trip measured, less than the QP's 16.8 ms timeout) the QP with data
 * in flight sends its first unacknowledged packet once, asking for an ACK;
 * before, nothing was sent until the timeout, and then the whole window.
 * The timeouts still count against retry_cnt: with retry_cnt 1 the QP
 * fails after its second timeout, and only then do the other QPs get the
 * window, without having timed out while they waited with nothing in
 * flight.
 */
static void test_transport_device_window(void)
{
    enum { NQP = 4, LEN = 64 * 1024 };
    Pair p;
    End a[NQP], b[NQP];
    Mr m[NQP];
    struct qhca_sge s;
    struct qhca_send_wqe w;
    ConnOpts o = rc_default_opts;
    unsigned i, before;

    pair_start(&p, WIRE_BLACKHOLE);
    o.mtu = 5;                          /* 4096 */
    o.timeout = 12;                     /* 4.096 us << 12: 16.8 ms */
    o.retry_cnt = 1;
    for (i = 0; i < NQP; i++) {
        rc_pair(&p, &a[i], &b[i], &o, false);
        m[i] = mr_reg(&p.a, a[i].pdn, LEN, QHCA_ACCESS_LOCAL_WRITE,
                      0x1000000 + i * 0x100000);
    }
    for (i = 0; i < NQP; i++) {
        w = wqe(QHCA_WQE_RDMA_WRITE, 0x100 + i);
        w.rdma.remote_addr = cpu_to_le64(0x40000000);
        w.rdma.rkey = cpu_to_le32(0x1234);
        s = sge(&m[i], 0, LEN);
        post_send(&a[i], &w, &s, 1, NULL, 0);
    }
    settle(&p, 100);                    /* no time passes: no timer */
    g_assert_cmpuint(p.w.frames, ==, 16);

    /* 10.5 ms: one early retransmission of one packet */
    for (i = 0; i < 1050; i++) {
        wire_pump();
        qtest_clock_step(p.a.qts, 10000);
    }
    g_assert_cmpuint(p.w.frames, ==, 17);
    /* the first packet of the WRITE (RC RDMA WRITE First), AckReq set */
    g_assert_cmphex(p.w.last[0]->data[14 + 20 + 8], ==, 0x06);
    g_assert_true(p.w.last[0]->data[14 + 20 + 8 + 8] & 0x80);
    for (i = 0; i < NQP; i++) {
        g_assert_true(cq_idle(&a[i], 1));
    }

    /* the second timeout ends it; then the next QP gets the window */
    expect_cqe(&a[0], 0x100, QHCA_CQE_RETRY_EXC_ERR, 0);
    before = p.w.frames;
    settle(&p, 100);
    g_assert_cmpuint(p.w.frames, ==, before + 16);
    for (i = 1; i < NQP; i++) {
        g_assert_true(cq_idle(&a[i], 1));
    }
    pair_stop(&p);
}

/* QUERY_STATS, QUERY_QP_STATE and QUERY_CQ after traffic with losses */
static void test_transport_counters(void)
{
    Pair p;
    End a, b;
    Mr ma, mb;
    struct qhca_sge s, r;
    struct qhca_send_wqe w;
    struct qhca_cmd_query_stats q;
    struct qhca_qp_state_info qs;
    struct qhca_cq_info ci;
    uint64_t va[QHCA_STAT_NUM], vb[QHCA_STAT_NUM], part[QHCA_STAT_NUM];
    static const uint32_t reg[8] = {
        QHCA_REG_STAT_TX_FRAMES, QHCA_REG_STAT_RX_FRAMES,
        QHCA_REG_STAT_RX_DROPPED, QHCA_REG_STAT_RX_BAD_ICRC,
        QHCA_REG_STAT_RETRANSMITS, QHCA_REG_STAT_GUEST_ERRORS,
        QHCA_REG_STAT_LOOPBACK, QHCA_REG_STAT_LOOP_DROPPED,
    };
    unsigned i;
    uint32_t n;

    pair_start(&p, WIRE_DROP_EVERY_5);
    rc_pair(&p, &a, &b, NULL, false);
    ma = mr_reg(&p.a, a.pdn, 8192, QHCA_ACCESS_LOCAL_WRITE, 0x10000);
    mb = mr_reg(&p.b, b.pdn, 8192, QHCA_ACCESS_LOCAL_WRITE, 0x20000);
    s = sge(&ma, 0, 4096);
    for (i = 0; i < 20; i++) {
        r = sge(&mb, 0, 8192);
        post_recv(&b, 0xb0 + i, &r, 1);
        w = wqe(QHCA_WQE_SEND, 0xa0 + i);
        post_send(&a, &w, &s, 1, NULL, 0);
    }
    for (i = 0; i < 20; i++) {
        expect_cqe(&a, 0xa0 + i, QHCA_CQE_SUCCESS, QHCA_CQE_OP_SEND);
        expect_cqe(&b, 0xb0 + i, QHCA_CQE_SUCCESS, QHCA_CQE_OP_RECV);
    }
    settle(&p, 20);

    g_assert_cmpuint(query_stats(&p.a, 0, va), ==, QHCA_STAT_NUM);
    g_assert_cmpuint(query_stats(&p.b, 0, vb), ==, QHCA_STAT_NUM);
    /* the registers are the low halves of the first eight */
    for (i = 0; i < 8; i++) {
        g_assert_cmphex(qhca_rd(&p.a, reg[i]), ==, (uint32_t)va[i]);
        g_assert_cmphex(qhca_rd(&p.b, reg[i]), ==, (uint32_t)vb[i]);
    }
    /* 20 x 4 data packets at least, each a whole frame of 1024 + headers */
    g_assert_cmpuint(stat_of(va, QHCA_STAT_TX_FRAMES), >=, 80);
    g_assert_cmpuint(stat_of(va, QHCA_STAT_TX_BYTES), >=,
                     80 * (1024 + 58 + 4));
    g_assert_cmpuint(stat_of(vb, QHCA_STAT_RX_BYTES), >=,
                     stat_of(vb, QHCA_STAT_RX_FRAMES) * 58);
    /* what one side sent, less what the wire dropped, the other received */
    g_assert_cmpuint(stat_of(va, QHCA_STAT_TX_FRAMES) +
                     stat_of(vb, QHCA_STAT_TX_FRAMES), ==,
                     stat_of(va, QHCA_STAT_RX_FRAMES) +
                     stat_of(vb, QHCA_STAT_RX_FRAMES) + p.w.dropped);
    /* every 5th frame lost: B saw gaps and said so, A went back */
    g_assert_cmpuint(stat_of(vb, QHCA_STAT_SEQ_ERRORS), >, 0);
    g_assert_cmpuint(stat_of(vb, QHCA_STAT_NAKS_SENT), >, 0);
    g_assert_cmpuint(stat_of(va, QHCA_STAT_NAKS_RCVD), >, 0);
    g_assert_cmpuint(stat_of(va, QHCA_STAT_NAKS_RCVD), <=,
                     stat_of(vb, QHCA_STAT_NAKS_SENT));
    g_assert_cmpuint(stat_of(va, QHCA_STAT_RETRANSMITS), >, 0);
    g_assert_cmpuint(stat_of(vb, QHCA_STAT_DUP_REQUESTS) +
                     stat_of(vb, QHCA_STAT_SEQ_ERRORS), >, 0);
    g_assert_cmpuint(stat_of(va, QHCA_STAT_RETRY_EXCEEDED), ==, 0);
    g_assert_cmpuint(stat_of(va, QHCA_STAT_RNR_NAKS_RCVD), ==, 0);

    /* from a later counter on; at the end nothing; past it an error */
    g_assert_cmpuint(query_stats(&p.a, QHCA_STAT_TX_BYTES, part), ==,
                     QHCA_STAT_NUM);
    g_assert_cmpuint(part[QHCA_STAT_TX_BYTES], ==, va[QHCA_STAT_TX_BYTES]);
    q.first = cpu_to_le32(QHCA_STAT_NUM);
    q.reserved = 0;
    g_assert_cmpint(qhca_cmd_post(&p.a, QHCA_CMD_QUERY_STATS, &q, sizeof(q),
                                  &n), ==, QHCA_CMD_OK);
    q.first = cpu_to_le32(QHCA_STAT_NUM + 1);
    g_assert_cmpint(qhca_cmd_post(&p.a, QHCA_CMD_QUERY_STATS, &q, sizeof(q),
                                  &n), ==, QHCA_CMD_ERR_PARAM);

    /* the engine's view: 80 PSNs sent and acknowledged, 80 expected */
    g_assert_cmpint(qhca_cmd_obj(&p.a, QHCA_CMD_QUERY_QP_STATE, a.qpn), ==,
                    QHCA_CMD_OK);
    qtest_memread(p.a.qts, p.a.qd.resp, &qs, sizeof(qs));
    g_assert_cmpuint(qs.qp_state, ==, QHCA_QPS_RTS);
    g_assert_cmpuint(qs.type, ==, QHCA_QPT_RC);
    g_assert_cmphex(le32_to_cpu(qs.next_psn), ==,
                    (FIRST_PSN + (IP_B & 1) + 80) & 0xffffff);
    g_assert_cmphex(le32_to_cpu(qs.acked_psn), ==,
                    (FIRST_PSN + (IP_B & 1) + 79) & 0xffffff);
    g_assert_cmpuint(le16_to_cpu(qs.sq_pi), ==, 20);
    g_assert_cmpuint(le16_to_cpu(qs.sq_ci), ==, 20);
    g_assert_cmpuint(le32_to_cpu(qs.inflight_bytes), ==, 0);
    g_assert_cmpint(qhca_cmd_obj(&p.b, QHCA_CMD_QUERY_QP_STATE, b.qpn), ==,
                    QHCA_CMD_OK);
    qtest_memread(p.b.qts, p.b.qd.resp, &qs, sizeof(qs));
    g_assert_cmphex(le32_to_cpu(qs.epsn), ==,
                    (FIRST_PSN + (IP_B & 1) + 80) & 0xffffff);
    g_assert_cmpuint(le16_to_cpu(qs.rq_pi), ==, 20);
    g_assert_cmpuint(le16_to_cpu(qs.rq_ci), ==, 20);
    g_assert_cmpint(qhca_cmd_obj(&p.b, QHCA_CMD_QUERY_QP_STATE, 999), ==,
                    QHCA_CMD_ERR_HANDLE);
    /* B's CQ: 20 CQEs written, all consumed (the test rings its CI) */
    g_assert_cmpint(qhca_cmd_obj(&p.b, QHCA_CMD_QUERY_CQ, b.cqn), ==,
                    QHCA_CMD_OK);
    qtest_memread(p.b.qts, p.b.qd.resp, &ci, sizeof(ci));
    g_assert_cmpuint(le32_to_cpu(ci.depth), ==, 2048);
    g_assert_cmpuint(le16_to_cpu(ci.pi), ==, 20);
    g_assert_cmpuint(ci.error, ==, 0);
    g_assert_cmpuint(le32_to_cpu(ci.eqn), ==, b.eqn);
    g_assert_cmpint(qhca_cmd_obj(&p.b, QHCA_CMD_QUERY_CQ, 4000), ==,
                    QHCA_CMD_ERR_HANDLE);
    pair_stop(&p);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    qtest_add_func("/qhca/transport/device-window",
                   test_transport_device_window);
    qtest_add_func("/qhca/transport/counters", test_transport_counters);

    return g_test_run();
}
