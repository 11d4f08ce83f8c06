/*
 * QTest for the qhca RDMA HCA: the /qhca/loopback/ cases, RC and UD between
 * QPs of one device (qhca-wire.h: the other device sees the frames on the
 * wire)
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
 * Loopback: QPs of one device connected to each other through its own GID
 * and MAC.  Device A's frames to itself are received by A (through its
 * receive path) and also go on the wire, which the test relays to device
 * B: B drops every one of them (not its MAC) and nothing of B changes.
 */

static void loop_rc_ends(Pair *p, End *a1, End *a2, const ConnOpts *o1,
                         const ConnOpts *o2)
{
    end_create(a1, &p->a, QHCA_QPT_RC, IP_A, mac_a, false);
    end_create(a2, &p->a, QHCA_QPT_RC, IP_A, mac_a, false);
    rc_connect_one(a1, a2, o1 ? o1 : &rc_default_opts);
    rc_connect_one(a2, a1, o2 ? o2 : &rc_default_opts);
}

/*
 * Wait until the wire has carried every frame A sent, and B has taken
 * them; then every frame A sent went to A itself (@all_looped), was on
 * the wire (what a capture of A's port shows) and B dropped all of it.
 */
static void loop_check_wire(Pair *p, bool all_looped)
{
    uint32_t tx = 0;
    int i;

    for (i = 0; i < 2000; i++) {
        settle(p, 1);
        tx = qhca_rd(&p->a, QHCA_REG_STAT_TX_FRAMES);
        if (p->w.frames >= tx &&
            qhca_rd(&p->b, QHCA_REG_STAT_RX_FRAMES) >= tx) {
            break;
        }
        g_usleep(1000);
    }
    g_assert_cmpuint(tx, >, 0);
    g_assert_cmpuint(p->w.frames, ==, tx);
    if (all_looped) {
        g_assert_cmpuint(qhca_rd(&p->a, QHCA_REG_STAT_LOOPBACK), ==, tx);
    }
    g_assert_cmpuint(qhca_rd(&p->a, QHCA_REG_STAT_LOOP_DROPPED), ==, 0);
    g_assert_cmpuint(qhca_rd(&p->b, QHCA_REG_STAT_RX_FRAMES), ==, tx);
    g_assert_cmpuint(qhca_rd(&p->b, QHCA_REG_STAT_RX_DROPPED), ==, tx);
    g_assert_cmpuint(qhca_rd(&p->b, QHCA_REG_STAT_TX_FRAMES), ==, 0);
}

/* RC between two QPs of device A: SEND, RDMA WRITE and READ, data checked */
static void test_loopback_rc(void)
{
    Pair p;
    End a1, a2, b;
    Mr src, back, dst, rbuf;
    struct qhca_sge s[2];
    struct qhca_send_wqe w;
    struct qhca_cqe c;
    const uint32_t len = 256 << 10;
    g_autofree uint8_t *out = g_malloc(len);
    g_autofree uint8_t *in = g_malloc(len);
    uint64_t v;

    pair_start(&p, WIRE_PASS);
    loop_rc_ends(&p, &a1, &a2, NULL, NULL);
    /* B has a QP with a2's number, on B's own path: it must not notice */
    end_create(&b, &p.b, QHCA_QPT_RC, IP_B, mac_b, false);
    g_assert_cmpuint(b.qpn, ==, a1.qpn);
    src = mr_reg(&p.a, a1.pdn, len, QHCA_ACCESS_LOCAL_WRITE, 0x40000000);
    back = mr_reg(&p.a, a1.pdn, len, QHCA_ACCESS_LOCAL_WRITE, 0x50000123);
    dst = mr_reg(&p.a, a2.pdn, len + 64, QHCA_ACCESS_LOCAL_WRITE |
                 QHCA_ACCESS_REMOTE_WRITE | QHCA_ACCESS_REMOTE_READ |
                 QHCA_ACCESS_REMOTE_ATOMIC, 0x7f1234560000);
    rbuf = mr_reg(&p.a, a2.pdn, 8192, QHCA_ACCESS_LOCAL_WRITE, 0x9000);
    fill(out, len, 11);
    mr_io(&p.a, &src, 0, out, len, true);

    /* SEND of two SGEs into one receive buffer of the other QP */
    s[0] = sge(&rbuf, 0, 8192);
    post_recv(&a2, 0x21, s, 1);
    w = wqe(QHCA_WQE_SEND_WITH_IMM, 0x11);
    memcpy(w.imm_data, "\x10\x0b\xac\x4b", 4);
    s[0] = sge(&src, 0, 1000);
    s[1] = sge(&src, 5000, 2000);
    post_send(&a1, &w, s, 2, NULL, 0);
    c = poll_cq(&a2);
    g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 0x21);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
    g_assert_cmpuint(c.opcode, ==, QHCA_CQE_OP_RECV);
    g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, 3000);
    g_assert_cmpuint(le32_to_cpu(c.qpn), ==, a2.qpn);
    g_assert_cmpmem(c.imm_data, 4, "\x10\x0b\xac\x4b", 4);
    expect_cqe(&a1, 0x11, QHCA_CQE_SUCCESS, QHCA_CQE_OP_SEND);
    mr_io(&p.a, &rbuf, 0, in, 3000, false);
    g_assert_cmpmem(in, 1000, out, 1000);
    g_assert_cmpmem(in + 1000, 2000, out + 5000, 2000);

    /* RDMA WRITE of 256 KiB, then READ it back */
    w = wqe(QHCA_WQE_RDMA_WRITE, 0x12);
    w.rdma.remote_addr = cpu_to_le64(dst.iova + 32);
    w.rdma.rkey = cpu_to_le32(dst.key);
    s[0] = sge(&src, 0, len);
    post_send(&a1, &w, s, 1, NULL, 0);
    expect_cqe(&a1, 0x12, QHCA_CQE_SUCCESS, QHCA_CQE_OP_RDMA_WRITE);
    mr_io(&p.a, &dst, 32, in, len, false);
    g_assert_true(memcmp(in, out, len) == 0);

    w = wqe(QHCA_WQE_RDMA_READ, 0x13);
    w.rdma.remote_addr = cpu_to_le64(dst.iova + 32);
    w.rdma.rkey = cpu_to_le32(dst.key);
    s[0] = sge(&back, 0, len);
    post_send(&a1, &w, s, 1, NULL, 0);
    c = poll_cq(&a1);
    g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 0x13);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
    g_assert_cmpuint(c.opcode, ==, QHCA_CQE_OP_RDMA_READ);
    g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, len);
    memset(in, 0, len);
    mr_io(&p.a, &back, 0, in, len, false);
    g_assert_true(memcmp(in, out, len) == 0);

    /* and an atomic on a2's memory */
    v = cpu_to_le64(40);
    mr_io(&p.a, &dst, 8, &v, 8, true);
    w = wqe(QHCA_WQE_ATOMIC_FETCH_AND_ADD, 0x14);
    w.rdma.remote_addr = cpu_to_le64(dst.iova + 8);
    w.rdma.rkey = cpu_to_le32(dst.key);
    w.rdma.compare_add = cpu_to_le64(2);
    s[0] = sge(&back, 0, 8);
    post_send(&a1, &w, s, 1, NULL, 0);
    expect_cqe(&a1, 0x14, QHCA_CQE_SUCCESS, QHCA_CQE_OP_FETCH_ADD);
    mr_io(&p.a, &back, 0, &v, 8, false);
    g_assert_cmpuint(le64_to_cpu(v), ==, 40);
    mr_io(&p.a, &dst, 8, &v, 8, false);
    g_assert_cmpuint(le64_to_cpu(v), ==, 42);

    g_assert_true(cq_idle(&a1, 20));
    g_assert_true(cq_idle(&a2, 20));
    g_assert_cmpuint(qp_state(&a1), ==, QHCA_QPS_RTS);
    g_assert_cmpuint(qp_state(&a2), ==, QHCA_QPS_RTS);
    /* nothing was lost or retransmitted on the way round */
    g_assert_cmpuint(qhca_rd(&p.a, QHCA_REG_STAT_RETRANSMITS), ==, 0);
    g_assert_cmpuint(qhca_rd(&p.a, QHCA_REG_STAT_RX_DROPPED), ==, 0);
    g_assert_cmpuint(qhca_rd(&p.a, QHCA_REG_STAT_RX_FRAMES), ==,
                     qhca_rd(&p.a, QHCA_REG_STAT_TX_FRAMES));
    loop_check_wire(&p, true);
    g_assert_true(cq_idle(&b, 20));
    g_assert_cmpuint(qp_state(&b), ==, QHCA_QPS_RESET);
    pair_stop(&p);
}

/* UD to the device's own GID: to another QP and to the sender itself */
static void test_loopback_ud(void)
{
    Pair p;
    End u1, u2, b1, b2;
    Mr m1, m2, mb;
    struct qhca_sge s;
    struct qhca_send_wqe w;
    struct qhca_cqe c;
    uint8_t out[1000], in[1040];
    uint32_t ahn;

    pair_start(&p, WIRE_PASS);
    end_create(&u1, &p.a, QHCA_QPT_UD, IP_A, mac_a, false);
    end_create(&u2, &p.a, QHCA_QPT_UD, IP_A, mac_a, false);
    end_create(&b1, &p.b, QHCA_QPT_UD, IP_B, mac_b, false);
    end_create(&b2, &p.b, QHCA_QPT_UD, IP_B, mac_b, false);
    g_assert_cmpuint(b2.qpn, ==, u2.qpn);
    ud_up(&u1, 0x1234, true);
    ud_up(&u2, 0x1234, true);
    ud_up(&b1, 0x1234, true);
    ud_up(&b2, 0x1234, true);
    ahn = ud_ah(&u1, IP_A, mac_a);
    m1 = mr_reg(&p.a, u1.pdn, 8192, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    m2 = mr_reg(&p.a, u2.pdn, 8192, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    mb = mr_reg(&p.b, b2.pdn, 8192, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    fill(out, sizeof(out), 9);
    mr_io(&p.a, &m1, 0, out, sizeof(out), true);
    s = sge(&m2, 0, sizeof(in));
    post_recv(&u2, 0x77, &s, 1);
    /* B's QP of the same number, with a buffer: must get nothing */
    s = sge(&mb, 0, sizeof(in));
    post_recv(&b2, 0x88, &s, 1);

    w = ud_wqe(QHCA_WQE_SEND_WITH_IMM, 0x61, ahn, u2.qpn, 0x1234);
    memcpy(w.imm_data, "\x01\x02\x03\x04", 4);
    s = sge(&m1, 0, sizeof(out));
    post_send(&u1, &w, &s, 1, NULL, 0);
    expect_cqe(&u1, 0x61, QHCA_CQE_SUCCESS, QHCA_CQE_OP_SEND);
    c = poll_cq(&u2);
    g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 0x77);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
    g_assert_cmpuint(c.opcode, ==, QHCA_CQE_OP_RECV);
    g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, 40 + sizeof(out));
    g_assert_cmpuint(le32_to_cpu(c.qpn), ==, u2.qpn);
    g_assert_cmpuint(le32_to_cpu(c.src_qp), ==, u1.qpn);
    g_assert_cmphex(c.flags & (QHCA_CQE_GRH | QHCA_CQE_WITH_IMM), ==,
                    QHCA_CQE_GRH | QHCA_CQE_WITH_IMM);
    g_assert_cmpmem(c.imm_data, 4, "\x01\x02\x03\x04", 4);
    mr_io(&p.a, &m2, 0, in, sizeof(in), false);
    g_assert_cmphex(in[20], ==, 0x45);
    g_assert_cmphex((uint32_t)ldl_be_p(in + 20 + 12), ==, IP_A);
    g_assert_cmphex((uint32_t)ldl_be_p(in + 20 + 16), ==, IP_A);
    g_assert_cmpmem(in + 40, sizeof(out), out, sizeof(out));

    /* A QP sending to itself: its send and its receive completion */
    s = sge(&m1, 2048, sizeof(in));
    post_recv(&u1, 0x78, &s, 1);
    w = ud_wqe(QHCA_WQE_SEND, 0x62, ahn, u1.qpn, 0x1234);
    s = sge(&m1, 0, 300);
    post_send(&u1, &w, &s, 1, NULL, 0);
    c = poll_cq(&u1);
    if (le64_to_cpu(c.wr_id) == 0x62) {
        g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
        c = poll_cq(&u1);
    } else {
        expect_cqe(&u1, 0x62, QHCA_CQE_SUCCESS, QHCA_CQE_OP_SEND);
    }
    g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 0x78);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
    g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, 40 + 300);
    g_assert_cmpuint(le32_to_cpu(c.src_qp), ==, u1.qpn);
    mr_io(&p.a, &m1, 2048 + 40, in, 300, false);
    g_assert_cmpmem(in, 300, out, 300);

    g_assert_true(cq_idle(&u2, 20));
    loop_check_wire(&p, true);
    g_assert_true(cq_idle(&b2, 20));
    pair_stop(&p);
}

/*
 * Looped frames the receiving side must refuse: a UD SEND to the device's
 * own GID with a wrong Q_Key or to a QP that does not exist (dropped, no
 * completion), an RC QP whose path MTU is larger than its loopback peer's
 * (the peer's responder finds the payload over its path MTU: invalid
 * request, both QPs in ERR), and a copy of a looped frame that the wire
 * reflects back into the device (dropped: delivered once, not twice).
 * The device goes on working after all of it.
 */
static void test_loopback_bad_frames(void)
{
    Pair p;
    End u1, u2, a1, a2, a3, a4;
    Mr m1, m2, ma, mr2;
    struct qhca_sge s;
    struct qhca_send_wqe w;
    struct qhca_cqe c;
    ConnOpts big = rc_default_opts, small = rc_default_opts;
    uint8_t out[256], in[296];
    uint32_t ahn, drops;
    g_autoptr(GByteArray) copy = g_byte_array_new();

    pair_start(&p, WIRE_PASS);
    end_create(&u1, &p.a, QHCA_QPT_UD, IP_A, mac_a, false);
    end_create(&u2, &p.a, QHCA_QPT_UD, IP_A, mac_a, false);
    ud_up(&u1, 0x1234, true);
    ud_up(&u2, 0x1234, true);
    ahn = ud_ah(&u1, IP_A, mac_a);
    m1 = mr_reg(&p.a, u1.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    m2 = mr_reg(&p.a, u2.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    fill(out, sizeof(out), 3);
    mr_io(&p.a, &m1, 0, out, sizeof(out), true);
    s = sge(&m2, 0, sizeof(in));
    post_recv(&u2, 0x70, &s, 1);

    /* wrong Q_Key, then no such QP: the sends complete, nothing arrives */
    drops = qhca_rd(&p.a, QHCA_REG_STAT_RX_DROPPED);
    w = ud_wqe(QHCA_WQE_SEND, 0x51, ahn, u2.qpn, 0x4321);
    s = sge(&m1, 0, sizeof(out));
    post_send(&u1, &w, &s, 1, NULL, 0);
    expect_cqe(&u1, 0x51, QHCA_CQE_SUCCESS, QHCA_CQE_OP_SEND);
    w = ud_wqe(QHCA_WQE_SEND, 0x52, ahn, 1000, 0x1234);
    post_send(&u1, &w, &s, 1, NULL, 0);
    expect_cqe(&u1, 0x52, QHCA_CQE_SUCCESS, QHCA_CQE_OP_SEND);
    g_assert_true(cq_idle(&u2, 50));

    /* the right Q_Key: delivered once */
    w = ud_wqe(QHCA_WQE_SEND, 0x53, ahn, u2.qpn, 0x1234);
    post_send(&u1, &w, &s, 1, NULL, 0);
    expect_cqe(&u1, 0x53, QHCA_CQE_SUCCESS, QHCA_CQE_OP_SEND);
    expect_cqe(&u2, 0x70, QHCA_CQE_SUCCESS, QHCA_CQE_OP_RECV);
    mr_io(&p.a, &m2, 0, in, sizeof(in), false);
    g_assert_cmpmem(in + 40, sizeof(out), out, sizeof(out));
    g_assert_cmpuint(qhca_rd(&p.a, QHCA_REG_STAT_LOOPBACK), ==, 3);
    g_assert_cmpuint(qhca_rd(&p.a, QHCA_REG_STAT_RX_FRAMES), ==, 3);
    /* (the Q_Key mismatch is not counted as a drop, "no such QP" is) */
    g_assert_cmpuint(qhca_rd(&p.a, QHCA_REG_STAT_RX_DROPPED), ==, drops + 1);

    /* the wire reflects that frame back into A: dropped, not delivered */
    loop_check_wire(&p, true);
    g_byte_array_append(copy, p.w.last[0]->data, p.w.last[0]->len);
    g_assert_cmphex((uint32_t)ldl_be_p(copy->data + 30), ==, IP_A);
    g_assert_cmpmem(copy->data + 6, 6, mac_a, 6);
    s = sge(&m2, 1024, sizeof(in));
    post_recv(&u2, 0x71, &s, 1);
    drops = qhca_rd(&p.a, QHCA_REG_STAT_RX_DROPPED);
    wire_write(p.w.fd[0], copy->data, copy->len);
    g_assert_true(cq_idle(&u2, 50));
    g_assert_cmpuint(qhca_rd(&p.a, QHCA_REG_STAT_RX_DROPPED), ==, drops + 1);

    /* RC: a1's path MTU is 4096, a2's 256: a2 refuses a1's 4 KiB packet */
    big.mtu = 5;
    small.mtu = 1;
    loop_rc_ends(&p, &a1, &a2, &big, &small);
    ma = mr_reg(&p.a, a1.pdn, 8192, QHCA_ACCESS_LOCAL_WRITE, 0x20000);
    mr2 = mr_reg(&p.a, a2.pdn, 8192, QHCA_ACCESS_LOCAL_WRITE, 0x30000);
    s = sge(&mr2, 0, 8192);
    post_recv(&a2, 0x81, &s, 1);
    w = wqe(QHCA_WQE_SEND, 0x82);
    s = sge(&ma, 0, 4096);
    post_send(&a1, &w, &s, 1, NULL, 0);
    c = poll_cq(&a1);
    g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 0x82);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_REM_INV_REQ_ERR);
    g_assert_cmpuint(qp_state(&a1), ==, QHCA_QPS_ERR);
    g_assert_cmpuint(qp_state(&a2), ==, QHCA_QPS_ERR);
    expect_cqe(&a2, 0x81, QHCA_CQE_WR_FLUSH_ERR, 0);

    /* the device is fine: a new loopback connection works */
    loop_rc_ends(&p, &a3, &a4, NULL, NULL);
    mr2 = mr_reg(&p.a, a4.pdn, 8192, QHCA_ACCESS_LOCAL_WRITE, 0x30000);
    ma = mr_reg(&p.a, a3.pdn, 8192, QHCA_ACCESS_LOCAL_WRITE, 0x20000);
    mr_io(&p.a, &ma, 0, out, sizeof(out), true);
    s = sge(&mr2, 0, 8192);
    post_recv(&a4, 0x91, &s, 1);
    w = wqe(QHCA_WQE_SEND, 0x92);
    s = sge(&ma, 0, sizeof(out));
    post_send(&a3, &w, &s, 1, NULL, 0);
    expect_cqe(&a4, 0x91, QHCA_CQE_SUCCESS, QHCA_CQE_OP_RECV);
    expect_cqe(&a3, 0x92, QHCA_CQE_SUCCESS, QHCA_CQE_OP_SEND);
    mr_io(&p.a, &mr2, 0, in, sizeof(out), false);
    g_assert_cmpmem(in, sizeof(out), out, sizeof(out));
    g_assert_cmphex(qhca_rd(&p.a, QHCA_REG_STATUS), ==, QHCA_STATUS_READY);
    pair_stop(&p);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    qtest_add_func("/qhca/loopback/rc", test_loopback_rc);
    qtest_add_func("/qhca/loopback/ud", test_loopback_ud);
    qtest_add_func("/qhca/loopback/bad-frames", test_loopback_bad_frames);

    return g_test_run();
}
