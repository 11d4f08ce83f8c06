/*
 * QTest for the qhca RDMA HCA: the /qhca/uc/ cases, UC between two devices
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
 * UC: SEND and RDMA WRITE with and without immediate, nothing
 * acknowledged, a lost packet drops its message.
 */

#define M(x) QHCA_QP_ATTR_##x

/* Connect UC QP @e to @peer: UC's attributes only (no timeout, retries) */
static void uc_connect_one(End *e, const End *peer)
{
    struct qhca_qp_attr a = { 0 };

    a.qp_state = QHCA_QPS_INIT;
    a.access_flags = cpu_to_le32(QHCA_ACCESS_REMOTE_WRITE);
    g_assert_cmpint(qhca_modify_qp(e->d, e->qpn, M(STATE) | M(PKEY_INDEX) |
                                   M(PORT) | M(ACCESS_FLAGS), &a), ==,
                    QHCA_CMD_OK);
    a.qp_state = QHCA_QPS_RTR;
    a.path_mtu = 3;                                     /* 1024 */
    a.dest_qpn = cpu_to_le32(peer->qpn);
    a.rq_psn = cpu_to_le32(FIRST_PSN + (e->ip & 1));    /* PSNs wrap */
    a.hop_limit = 64;
    a.dgid[10] = a.dgid[11] = 0xff;
    stl_be_p(&a.dgid[12], peer->ip);
    memcpy(a.dmac, peer->mac, 6);
    /* RC's responder attributes are not UC's */
    g_assert_cmpint(qhca_modify_qp(e->d, e->qpn, M(STATE) | M(AV) |
                                   M(PATH_MTU) | M(DEST_QPN) | M(RQ_PSN) |
                                   M(MIN_RNR_TIMER), &a), ==,
                    QHCA_CMD_ERR_STATE);
    g_assert_cmpint(qhca_modify_qp(e->d, e->qpn, M(STATE) | M(AV) |
                                   M(PATH_MTU) | M(DEST_QPN) | M(RQ_PSN),
                                   &a), ==, QHCA_CMD_OK);
    a.qp_state = QHCA_QPS_RTS;
    a.sq_psn = cpu_to_le32(FIRST_PSN + (peer->ip & 1));
    a.retry_cnt = 7;
    g_assert_cmpint(qhca_modify_qp(e->d, e->qpn, M(STATE) | M(SQ_PSN) |
                                   M(RETRY_CNT), &a), ==, QHCA_CMD_ERR_STATE);
    g_assert_cmpint(qhca_modify_qp(e->d, e->qpn, M(STATE) | M(SQ_PSN), &a),
                    ==, QHCA_CMD_OK);
}

#undef M

static void uc_pair(Pair *p, End *a, End *b)
{
    end_create(a, &p->a, QHCA_QPT_UC, IP_A, mac_a, false);
    end_create(b, &p->b, QHCA_QPT_UC, IP_B, mac_b, false);
    uc_connect_one(a, b);
    uc_connect_one(b, a);
}

/* The BTH opcode of the last frame device @dev (0: A, 1: B) sent */
static uint8_t last_opcode(Pair *p, int dev)
{
    g_assert_cmpuint(p->w.last[dev]->len, >, QHCA_ROCE_BTH_OFFSET);
    return p->w.last[dev]->data[QHCA_ROCE_BTH_OFFSET];
}

static void test_uc_send_write(void)
{
    Pair p;
    End a, b;
    Mr ma, mb;
    struct qhca_sge s, r;
    struct qhca_send_wqe w;
    struct qhca_cqe c;
    uint8_t out[5000], in[5000];

    pair_start(&p, WIRE_PASS);
    uc_pair(&p, &a, &b);
    ma = mr_reg(&p.a, a.pdn, 8192, QHCA_ACCESS_LOCAL_WRITE, 0x10000);
    mb = mr_reg(&p.b, b.pdn, 16384, QHCA_ACCESS_LOCAL_WRITE |
                QHCA_ACCESS_REMOTE_WRITE, 0x7f0000000000);
    fill(out, sizeof(out), 21);
    mr_io(&p.a, &ma, 0, out, sizeof(out), true);

    /* SEND with immediate: 3 packets at MTU 1024 */
    r = sge(&mb, 0, 4096);
    post_recv(&b, 0xb1, &r, 1);
    post_recv(&b, 0xb2, &r, 1);
    s = sge(&ma, 0, 3000);
    w = wqe(QHCA_WQE_SEND_WITH_IMM, 0xa1);
    memcpy(w.imm_data, "\xca\xfe\x00\x01", 4);
    post_send(&a, &w, &s, 1, NULL, 0);
    c = poll_cq(&b);
    g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 0xb1);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
    g_assert_cmpuint(c.opcode, ==, QHCA_CQE_OP_RECV);
    g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, 3000);
    g_assert_cmphex(c.flags & QHCA_CQE_WITH_IMM, ==, QHCA_CQE_WITH_IMM);
    g_assert_cmpmem(c.imm_data, 4, "\xca\xfe\x00\x01", 4);
    expect_cqe(&a, 0xa1, QHCA_CQE_SUCCESS, QHCA_CQE_OP_SEND);
    mr_io(&p.b, &mb, 0, in, 3000, false);
    g_assert_cmpmem(in, 3000, out, 3000);
    g_assert_cmphex(last_opcode(&p, 0), ==, QHCA_ROCE_OP_UC_SEND_LAST_IMM);

    /* RDMA WRITE of 5000 bytes (5 packets), then WRITE with immediate */
    w = wqe(QHCA_WQE_RDMA_WRITE, 0xa2);
    w.rdma.remote_addr = cpu_to_le64(mb.iova + 8192);
    w.rdma.rkey = cpu_to_le32(mb.key);
    s = sge(&ma, 0, 5000);
    post_send(&a, &w, &s, 1, NULL, 0);
    expect_cqe(&a, 0xa2, QHCA_CQE_SUCCESS, QHCA_CQE_OP_RDMA_WRITE);
    settle(&p, 20);             /* A completes before the wire carries it */
    g_assert_cmphex(last_opcode(&p, 0), ==, QHCA_ROCE_OP_UC_RDMA_WRITE_LAST);
    w = wqe(QHCA_WQE_RDMA_WRITE_WITH_IMM, 0xa3);
    w.rdma.remote_addr = cpu_to_le64(mb.iova + 4096);
    w.rdma.rkey = cpu_to_le32(mb.key);
    memcpy(w.imm_data, "\x00\x00\x00\x07", 4);
    s = sge(&ma, 0, 100);
    post_send(&a, &w, &s, 1, NULL, 0);
    c = poll_cq(&b);
    g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 0xb2);
    g_assert_cmpuint(c.opcode, ==, QHCA_CQE_OP_RECV_RDMA_WITH_IMM);
    g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, 100);
    g_assert_cmpmem(c.imm_data, 4, "\x00\x00\x00\x07", 4);
    expect_cqe(&a, 0xa3, QHCA_CQE_SUCCESS, QHCA_CQE_OP_RDMA_WRITE);
    g_assert_cmphex(last_opcode(&p, 0), ==,
                    QHCA_ROCE_OP_UC_RDMA_WRITE_ONLY_IMM);
    mr_io(&p.b, &mb, 8192, in, 5000, false);
    g_assert_cmpmem(in, 5000, out, 5000);
    mr_io(&p.b, &mb, 4096, in, 100, false);
    g_assert_cmpmem(in, 100, out, 100);

    /* 3 + 5 + 1 frames, all from A: B acknowledged nothing */
    settle(&p, 20);
    g_assert_cmpuint(p.w.frames, ==, 9);
    g_assert_cmpuint(p.w.last[1]->len, ==, 0);

    /* READ and atomics are not UC operations: A's SQ errs, B sees nothing */
    w = wqe(QHCA_WQE_RDMA_READ, 0xa4);
    w.rdma.remote_addr = cpu_to_le64(mb.iova);
    w.rdma.rkey = cpu_to_le32(mb.key);
    post_send(&a, &w, &s, 1, NULL, 0);
    expect_cqe(&a, 0xa4, QHCA_CQE_LOC_QP_OP_ERR, 0);
    g_assert_cmpuint(qp_state(&a), ==, QHCA_QPS_SQE);
    g_assert_cmpuint(p.w.frames, ==, 9);
    pair_stop(&p);
}

/*
 * A lost packet drops its message and nothing else: the receive WQE the
 * message had taken receives the next message
 */
static void test_uc_lost_packet(void)
{
    Pair p;
    End a, b;
    Mr ma, mb;
    struct qhca_sge s, r;
    struct qhca_send_wqe w;
    struct qhca_cqe c;
    uint8_t out[8192], in[4096];
    static const struct {
        uint32_t off, len;
    } msg[4] = {
        { 0, 3000 },            /* frames 1-3 */
        { 3000, 2100 },         /* frames 4-6: 5, its middle, is lost */
        { 5100, 500 },          /* frame 7: into msg 2's receive WQE */
        { 5600, 2000 },         /* frames 8-9 */
    };
    unsigned i;

    pair_start(&p, WIRE_DROP_EVERY_5);
    uc_pair(&p, &a, &b);
    ma = mr_reg(&p.a, a.pdn, 8192, QHCA_ACCESS_LOCAL_WRITE, 0x10000);
    mb = mr_reg(&p.b, b.pdn, 3 * 4096, QHCA_ACCESS_LOCAL_WRITE, 0x20000);
    fill(out, sizeof(out), 5);
    mr_io(&p.a, &ma, 0, out, sizeof(out), true);
    for (i = 0; i < 3; i++) {
        r = sge(&mb, i * 4096, 4096);
        post_recv(&b, 0xb0 + i, &r, 1);
    }
    for (i = 0; i < 4; i++) {
        s = sge(&ma, msg[i].off, msg[i].len);
        w = wqe(QHCA_WQE_SEND, 0xa0 + i);
        post_send(&a, &w, &s, 1, NULL, 0);
    }
    for (i = 0; i < 4; i++) {
        expect_cqe(&a, 0xa0 + i, QHCA_CQE_SUCCESS, QHCA_CQE_OP_SEND);
    }
    /* B: messages 1, 3 and 4; message 3 in the second receive WQE */
    for (i = 0; i < 3; i++) {
        unsigned m = i == 0 ? 0 : i + 1;

        c = poll_cq(&b);
        g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 0xb0 + i);
        g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
        g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, msg[m].len);
        mr_io(&p.b, &mb, i * 4096, in, msg[m].len, false);
        g_assert_cmpmem(in, msg[m].len, out + msg[m].off, msg[m].len);
    }
    g_assert_true(cq_idle(&b, 20));
    g_assert_cmpuint(p.w.frames, ==, 9);
    g_assert_cmpuint(p.w.dropped, ==, 1);
    g_assert_cmpuint(p.w.last[1]->len, ==, 0);
    g_assert_cmpuint(qp_state(&b), ==, QHCA_QPS_RTS);
    pair_stop(&p);
}

/*
 * What would be an RNR NAK, a remote access error or a malformed request
 * for RC drops the UC message silently, and the QP goes on; frames of the
 * other transport are refused
 */
static void test_uc_errors_drop(void)
{
    Pair p;
    End a, b;
    Mr ma, mb;
    struct qhca_sge s, r;
    struct qhca_send_wqe w;
    struct qhca_cqe c;
    QhcaRoceHdr h;
    uint8_t out[2048], in[2048], zero[2048] = { 0 };

    pair_start(&p, WIRE_PASS);
    uc_pair(&p, &a, &b);
    ma = mr_reg(&p.a, a.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x10000);
    mb = mr_reg(&p.b, b.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE |
                QHCA_ACCESS_REMOTE_WRITE, 0x20000);
    fill(out, sizeof(out), 8);
    mr_io(&p.a, &ma, 0, out, sizeof(out), true);

    /* no receive WQE: the SEND completes at A and is dropped at B */
    s = sge(&ma, 0, 2000);
    w = wqe(QHCA_WQE_SEND, 0xa1);
    post_send(&a, &w, &s, 1, NULL, 0);
    expect_cqe(&a, 0xa1, QHCA_CQE_SUCCESS, QHCA_CQE_OP_SEND);
    g_assert_true(cq_idle(&b, 20));

    /* a wrong rkey and a range past the MR: nothing written */
    w = wqe(QHCA_WQE_RDMA_WRITE, 0xa2);
    w.rdma.remote_addr = cpu_to_le64(mb.iova);
    w.rdma.rkey = cpu_to_le32(mb.key ^ 0x100);
    post_send(&a, &w, &s, 1, NULL, 0);
    expect_cqe(&a, 0xa2, QHCA_CQE_SUCCESS, QHCA_CQE_OP_RDMA_WRITE);
    w = wqe(QHCA_WQE_RDMA_WRITE, 0xa3);
    w.rdma.remote_addr = cpu_to_le64(mb.iova + 3000);
    w.rdma.rkey = cpu_to_le32(mb.key);
    post_send(&a, &w, &s, 1, NULL, 0);
    expect_cqe(&a, 0xa3, QHCA_CQE_SUCCESS, QHCA_CQE_OP_RDMA_WRITE);
    settle(&p, 20);
    mr_io(&p.b, &mb, 0, in, sizeof(in), false);
    g_assert_cmpmem(in, sizeof(in), zero, sizeof(zero));

    /* injected: a middle packet with no message, RC and UD opcodes */
    h = hdr_from(&a, &b, QHCA_ROCE_OP_UC_SEND_MIDDLE, FIRST_PSN + 99);
    inject(&p, 1, &h, out, 1024);
    h = hdr_from(&a, &b, QHCA_ROCE_OP_RC_SEND_ONLY, FIRST_PSN + 100);
    inject(&p, 1, &h, out, 16);
    h = hdr_from(&a, &b, QHCA_ROCE_OP_UD_SEND_ONLY, FIRST_PSN + 101);
    inject(&p, 1, &h, out, 16);
    /* a UC first packet longer than the path MTU */
    h = hdr_from(&a, &b, QHCA_ROCE_OP_UC_SEND_FIRST, FIRST_PSN + 102);
    inject(&p, 1, &h, out, 2048);
    r = sge(&mb, 0, 4096);
    post_recv(&b, 0xb1, &r, 1);
    g_assert_true(cq_idle(&b, 20));
    g_assert_cmpuint(p.w.last[1]->len, ==, 0);

    /* the QP goes on: the next SEND arrives whole */
    w = wqe(QHCA_WQE_SEND, 0xa4);
    post_send(&a, &w, &s, 1, NULL, 0);
    expect_cqe(&a, 0xa4, QHCA_CQE_SUCCESS, QHCA_CQE_OP_SEND);
    c = poll_cq(&b);
    g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 0xb1);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
    g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, 2000);
    mr_io(&p.b, &mb, 0, in, 2000, false);
    g_assert_cmpmem(in, 2000, out, 2000);
    g_assert_cmpuint(qp_state(&b), ==, QHCA_QPS_RTS);

    /* a UC packet for an RC QP is refused too */
    {
        End ra, rb;

        rc_pair(&p, &ra, &rb, NULL, false);
        r = sge(&mb, 0, 4096);
        post_recv(&rb, 0xc1, &r, 1);
        h = hdr_from(&ra, &rb, QHCA_ROCE_OP_UC_SEND_ONLY, FIRST_PSN);
        inject(&p, 1, &h, out, 16);
        g_assert_true(cq_idle(&rb, 20));
    }
    pair_stop(&p);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    qtest_add_func("/qhca/uc/send-write", test_uc_send_write);
    qtest_add_func("/qhca/uc/lost-packet", test_uc_lost_packet);
    qtest_add_func("/qhca/uc/errors-drop", test_uc_errors_drop);

    return g_test_run();
}
