/*
 * QTest for the qhca RDMA HCA: the transport between two devices on a wire
 * the test controls (qhca-wire.h), and between QPs of one device
 * (loopback): SEND/RECV, SRQ, RDMA WRITE and READ, atomics, UD, the errors
 * a peer reports, loss, duplication and reordering on the wire.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "libqtest.h"
#include "hw/pci/pci_regs.h"
#include "qemu/bswap.h"
#include "qhca-wire.h"

#define M(x) QHCA_QP_ATTR_##x

static void test_wire_send_recv(void)
{
    Pair p;
    End a, b;
    Mr ma, mb;
    struct qhca_sge s[2], r[2];
    struct qhca_send_wqe w;
    struct qhca_cqe c;
    uint8_t out[3000], in[5000], inl[100];

    pair_start(&p, WIRE_PASS);
    rc_pair(&p, &a, &b, NULL, false);
    ma = mr_reg(&p.a, a.pdn, 8192, QHCA_ACCESS_LOCAL_WRITE, 0x10000100);
    mb = mr_reg(&p.b, b.pdn, 8192, QHCA_ACCESS_LOCAL_WRITE, 0x7f0000000000);

    /* 3000 bytes from two SGEs into two SGEs: 3 packets at MTU 1024 */
    fill(out, sizeof(out), 1);
    mr_io(&p.a, &ma, 0, out, sizeof(out), true);
    s[0] = sge(&ma, 0, 1000);
    s[1] = sge(&ma, 1000, 2000);
    r[0] = sge(&mb, 0, 1500);
    r[1] = sge(&mb, 4000, 4000);
    post_recv(&b, 0xb1, r, 2);
    w = wqe(QHCA_WQE_SEND_WITH_IMM, 0xa1);
    memcpy(w.imm_data, "\x12\x34\x56\x78", 4);
    post_send(&a, &w, s, 2, NULL, 0);

    c = poll_cq(&b);
    g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 0xb1);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
    g_assert_cmpuint(c.opcode, ==, QHCA_CQE_OP_RECV);
    g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, 3000);
    g_assert_cmpuint(le32_to_cpu(c.qpn), ==, b.qpn);
    g_assert_cmphex(c.flags & QHCA_CQE_WITH_IMM, ==, QHCA_CQE_WITH_IMM);
    g_assert_cmpmem(c.imm_data, 4, "\x12\x34\x56\x78", 4);
    expect_cqe(&a, 0xa1, QHCA_CQE_SUCCESS, QHCA_CQE_OP_SEND);
    mr_io(&p.b, &mb, 0, in, 1500, false);
    mr_io(&p.b, &mb, 4000, in + 1500, 1500, false);
    g_assert_cmpmem(in, 3000, out, 3000);

    /* Inline data, no immediate; an unsignaled send makes no CQE */
    fill(inl, sizeof(inl), 9);
    r[0] = sge(&mb, 0, 5000);
    post_recv(&b, 0xb2, r, 1);
    post_recv(&b, 0xb3, r, 1);
    w = wqe(QHCA_WQE_SEND, 0xa2);
    w.flags = 0;
    post_send(&a, &w, NULL, 0, inl, sizeof(inl));
    w = wqe(QHCA_WQE_SEND, 0xa3);
    post_send(&a, &w, s, 1, NULL, 0);
    c = poll_cq(&b);
    g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 0xb2);
    g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, sizeof(inl));
    g_assert_cmphex(c.flags & QHCA_CQE_WITH_IMM, ==, 0);
    expect_cqe(&b, 0xb3, QHCA_CQE_SUCCESS, QHCA_CQE_OP_RECV);
    expect_cqe(&a, 0xa3, QHCA_CQE_SUCCESS, QHCA_CQE_OP_SEND);
    g_assert_true(cq_idle(&a, 20));
    pair_stop(&p);
}

static void test_wire_srq(void)
{
    Pair p;
    End a, b;
    Mr ma, mb;
    struct qhca_sge s, r;
    struct qhca_send_wqe w;
    struct qhca_cmd_modify_srq ms = { 0 };
    struct qhca_eqe eqe;
    uint32_t i, v;

    pair_start(&p, WIRE_PASS);
    rc_pair(&p, &a, &b, NULL, true);
    ma = mr_reg(&p.a, a.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    mb = mr_reg(&p.b, b.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x2000);
    for (i = 0; i < 3; i++) {
        r = sge(&mb, i * 64, 64);
        post_recv(&b, 0x100 + i, &r, 1);
    }
    /* Limit event once fewer than 2 receive WQEs remain */
    ms.srqn = cpu_to_le32(b.srqn);
    ms.limit = cpu_to_le32(2);
    qhca_cmd_ok(&p.b, QHCA_CMD_MODIFY_SRQ, &ms, sizeof(ms));
    qhca_db(&p.b, 0, QHCA_DB_AEQ, QHCA_DB_AEQ_ARM);
    for (i = 0; i < 3; i++) {
        v = cpu_to_le32(0xabc0 + i);
        mr_io(&p.a, &ma, i * 4, &v, 4, true);
        s = sge(&ma, i * 4, 4);
        /* the last one with an immediate */
        w = wqe(i == 2 ? QHCA_WQE_SEND_WITH_IMM : QHCA_WQE_SEND, i);
        memcpy(w.imm_data, "\x00\x00\x00\x2a", 4);
        post_send(&a, &w, &s, 1, NULL, 0);
    }
    for (i = 0; i < 3; i++) {
        struct qhca_cqe c = poll_cq(&b);

        g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 0x100 + i);
        g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
        g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, 4);
        g_assert_cmphex(c.flags & QHCA_CQE_WITH_IMM, ==,
                        i == 2 ? QHCA_CQE_WITH_IMM : 0);
        if (i == 2) {
            g_assert_cmpmem(c.imm_data, 4, "\x00\x00\x00\x2a", 4);
        }
        mr_io(&p.b, &mb, i * 64, &v, 4, false);
        g_assert_cmphex(le32_to_cpu(v), ==, 0xabc0 + i);
    }
    g_assert_true(qhca_wait_entry(&p.b, p.b.qd.aeq, QHCA_QOS_AEQ_LOG, 16,
                                  offsetof(struct qhca_eqe, owner), 0));
    qtest_memread(p.b.qts, p.b.qd.aeq, &eqe, sizeof(eqe));
    g_assert_cmpuint(eqe.type, ==, QHCA_EQE_SRQ_LIMIT);
    g_assert_cmpuint(le32_to_cpu(eqe.obj), ==, b.srqn);
    pair_stop(&p);
}

static void test_wire_write_read_1m(void)
{
    Pair p;
    End a, b;
    Mr src, dst, back, mb;
    struct qhca_sge s;
    struct qhca_send_wqe w;
    struct qhca_cqe c;
    const uint32_t len = 1 << 20;
    g_autofree uint8_t *out = g_malloc(len);
    g_autofree uint8_t *in = g_malloc(len);

    pair_start(&p, WIRE_PASS);
    rc_pair(&p, &a, &b, NULL, false);
    src = mr_reg(&p.a, a.pdn, len, QHCA_ACCESS_LOCAL_WRITE, 0x40000000);
    back = mr_reg(&p.a, a.pdn, len, QHCA_ACCESS_LOCAL_WRITE, 0x50000123);
    dst = mr_reg(&p.b, b.pdn, len + 64, QHCA_ACCESS_LOCAL_WRITE |
                 QHCA_ACCESS_REMOTE_WRITE | QHCA_ACCESS_REMOTE_READ,
                 0x7f1234560000);
    fill(out, len, 3);
    mr_io(&p.a, &src, 0, out, len, true);

    w = wqe(QHCA_WQE_RDMA_WRITE, 0x11);
    w.rdma.remote_addr = cpu_to_le64(dst.iova + 32);
    w.rdma.rkey = cpu_to_le32(dst.key);
    s = sge(&src, 0, len);
    post_send(&a, &w, &s, 1, NULL, 0);
    c = poll_cq(&a);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
    g_assert_cmpuint(c.opcode, ==, QHCA_CQE_OP_RDMA_WRITE);
    mr_io(&p.b, &dst, 32, in, len, false);
    g_assert_true(memcmp(in, out, len) == 0);

    w = wqe(QHCA_WQE_RDMA_READ, 0x12);
    w.rdma.remote_addr = cpu_to_le64(dst.iova + 32);
    w.rdma.rkey = cpu_to_le32(dst.key);
    s = sge(&back, 0, len);
    post_send(&a, &w, &s, 1, NULL, 0);
    c = poll_cq(&a);
    g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 0x12);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
    g_assert_cmpuint(c.opcode, ==, QHCA_CQE_OP_RDMA_READ);
    g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, len);
    memset(in, 0, len);
    mr_io(&p.a, &back, 0, in, len, false);
    g_assert_true(memcmp(in, out, len) == 0);

    /* WRITE with immediate: the responder consumes a receive WQE */
    mb = mr_reg(&p.b, b.pdn, 64, QHCA_ACCESS_LOCAL_WRITE, 0x9000);
    s = sge(&mb, 0, 64);
    post_recv(&b, 0x21, &s, 1);
    w = wqe(QHCA_WQE_RDMA_WRITE_WITH_IMM, 0x13);
    w.rdma.remote_addr = cpu_to_le64(dst.iova);
    w.rdma.rkey = cpu_to_le32(dst.key);
    memcpy(w.imm_data, "\xca\xfe\xf0\x0d", 4);
    s = sge(&src, 0, 2500);
    post_send(&a, &w, &s, 1, NULL, 0);
    c = poll_cq(&b);
    g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 0x21);
    g_assert_cmpuint(c.opcode, ==, QHCA_CQE_OP_RECV_RDMA_WITH_IMM);
    g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, 2500);
    g_assert_cmpmem(c.imm_data, 4, "\xca\xfe\xf0\x0d", 4);
    expect_cqe(&a, 0x13, QHCA_CQE_SUCCESS, QHCA_CQE_OP_RDMA_WRITE);
    pair_stop(&p);
}

static void test_wire_atomics(void)
{
    Pair p;
    End a, b;
    Mr ma, mb;
    struct qhca_sge s;
    struct qhca_send_wqe w;
    uint64_t v;

    pair_start(&p, WIRE_PASS);
    rc_pair(&p, &a, &b, NULL, false);
    ma = mr_reg(&p.a, a.pdn, 64, QHCA_ACCESS_LOCAL_WRITE, 0x3000);
    mb = mr_reg(&p.b, b.pdn, 64, QHCA_ACCESS_REMOTE_ATOMIC, 0x8000);
    v = cpu_to_le64(100);
    mr_io(&p.b, &mb, 8, &v, 8, true);

    w = wqe(QHCA_WQE_ATOMIC_FETCH_AND_ADD, 1);
    w.rdma.remote_addr = cpu_to_le64(mb.iova + 8);
    w.rdma.rkey = cpu_to_le32(mb.key);
    w.rdma.compare_add = cpu_to_le64(5);
    s = sge(&ma, 0, 8);
    post_send(&a, &w, &s, 1, NULL, 0);
    expect_cqe(&a, 1, QHCA_CQE_SUCCESS, QHCA_CQE_OP_FETCH_ADD);
    mr_io(&p.a, &ma, 0, &v, 8, false);
    g_assert_cmpuint(le64_to_cpu(v), ==, 100);
    mr_io(&p.b, &mb, 8, &v, 8, false);
    g_assert_cmpuint(le64_to_cpu(v), ==, 105);

    w = wqe(QHCA_WQE_ATOMIC_CMP_AND_SWP, 2);
    w.rdma.remote_addr = cpu_to_le64(mb.iova + 8);
    w.rdma.rkey = cpu_to_le32(mb.key);
    w.rdma.compare_add = cpu_to_le64(105);
    w.rdma.swap = cpu_to_le64(7);
    s = sge(&ma, 8, 8);
    post_send(&a, &w, &s, 1, NULL, 0);
    /* A compare that fails leaves memory alone */
    w = wqe(QHCA_WQE_ATOMIC_CMP_AND_SWP, 3);
    w.rdma.remote_addr = cpu_to_le64(mb.iova + 8);
    w.rdma.rkey = cpu_to_le32(mb.key);
    w.rdma.compare_add = cpu_to_le64(1);
    w.rdma.swap = cpu_to_le64(99);
    s = sge(&ma, 16, 8);
    post_send(&a, &w, &s, 1, NULL, 0);
    expect_cqe(&a, 2, QHCA_CQE_SUCCESS, QHCA_CQE_OP_COMP_SWAP);
    expect_cqe(&a, 3, QHCA_CQE_SUCCESS, QHCA_CQE_OP_COMP_SWAP);
    mr_io(&p.a, &ma, 8, &v, 8, false);
    g_assert_cmpuint(le64_to_cpu(v), ==, 105);
    mr_io(&p.a, &ma, 16, &v, 8, false);
    g_assert_cmpuint(le64_to_cpu(v), ==, 7);
    mr_io(&p.b, &mb, 8, &v, 8, false);
    g_assert_cmpuint(le64_to_cpu(v), ==, 7);

    /* Misaligned atomics are invalid requests */
    w = wqe(QHCA_WQE_ATOMIC_FETCH_AND_ADD, 4);
    w.rdma.remote_addr = cpu_to_le64(mb.iova + 4);
    w.rdma.rkey = cpu_to_le32(mb.key);
    s = sge(&ma, 0, 8);
    post_send(&a, &w, &s, 1, NULL, 0);
    expect_cqe(&a, 4, QHCA_CQE_REM_INV_REQ_ERR, 0);
    pair_stop(&p);
}

static void test_wire_ud(void)
{
    Pair p;
    End a, b;
    Mr ma, mb;
    struct qhca_sge s;
    struct qhca_send_wqe w;
    struct qhca_cmd_create_ah ah = { 0 };
    struct qhca_qp_attr at = { 0 };
    struct qhca_cqe c;
    uint8_t out[100], in[140];
    uint32_t ahn;
    End *e[2] = { &a, &b };
    int i;

    pair_start(&p, WIRE_PASS);
    end_create(&a, &p.a, QHCA_QPT_UD, IP_A, mac_a, false);
    end_create(&b, &p.b, QHCA_QPT_UD, IP_B, mac_b, false);
    for (i = 0; i < 2; i++) {
        at.qp_state = QHCA_QPS_INIT;
        at.qkey = cpu_to_le32(0x1234);
        g_assert_cmpint(qhca_modify_qp(e[i]->d, e[i]->qpn, M(STATE) |
                                       M(PKEY_INDEX) | M(PORT) | M(QKEY), &at),
                        ==, QHCA_CMD_OK);
        at.qp_state = QHCA_QPS_RTR;
        g_assert_cmpint(qhca_modify_qp(e[i]->d, e[i]->qpn, M(STATE), &at), ==,
                        QHCA_CMD_OK);
        at.qp_state = QHCA_QPS_RTS;
        g_assert_cmpint(qhca_modify_qp(e[i]->d, e[i]->qpn, M(STATE) | M(SQ_PSN),
                                       &at), ==, QHCA_CMD_OK);
    }
    ah.pdn = cpu_to_le32(a.pdn);
    ah.hop_limit = 64;
    ah.dgid[10] = ah.dgid[11] = 0xff;
    stl_be_p(&ah.dgid[12], IP_B);
    memcpy(ah.dmac, mac_b, 6);
    ahn = qhca_cmd_ok(&p.a, QHCA_CMD_CREATE_AH, &ah, sizeof(ah));

    ma = mr_reg(&p.a, a.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    mb = mr_reg(&p.b, b.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    fill(out, sizeof(out), 5);
    mr_io(&p.a, &ma, 0, out, sizeof(out), true);
    s = sge(&mb, 0, 40 + sizeof(out));
    post_recv(&b, 0x77, &s, 1);

    /* A wrong Q_Key is dropped without a completion */
    w = wqe(QHCA_WQE_SEND, 0x60);
    w.ud.ahn = cpu_to_le32(ahn);
    w.ud.remote_qpn = cpu_to_le32(b.qpn);
    w.ud.remote_qkey = cpu_to_le32(0x4321);
    s = sge(&ma, 0, sizeof(out));
    post_send(&a, &w, &s, 1, NULL, 0);
    expect_cqe(&a, 0x60, QHCA_CQE_SUCCESS, QHCA_CQE_OP_SEND);
    g_assert_true(cq_idle(&b, 50));

    w = wqe(QHCA_WQE_SEND_WITH_IMM, 0x61);
    w.ud.ahn = cpu_to_le32(ahn);
    w.ud.remote_qpn = cpu_to_le32(b.qpn);
    w.ud.remote_qkey = cpu_to_le32(0x1234);
    memcpy(w.imm_data, "\x01\x02\x03\x04", 4);
    post_send(&a, &w, &s, 1, NULL, 0);
    expect_cqe(&a, 0x61, QHCA_CQE_SUCCESS, QHCA_CQE_OP_SEND);
    c = poll_cq(&b);
    g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 0x77);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
    g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, 40 + sizeof(out));
    g_assert_cmpuint(le32_to_cpu(c.src_qp), ==, a.qpn);
    g_assert_cmphex(c.flags & (QHCA_CQE_GRH | QHCA_CQE_WITH_IMM), ==,
                    QHCA_CQE_GRH | QHCA_CQE_WITH_IMM);
    g_assert_cmpuint(c.network_hdr_type, ==, 2);
    mr_io(&p.b, &mb, 0, in, sizeof(in), false);
    /* The IPv4 header fills the last 20 bytes of the 40-byte GRH */
    g_assert_cmphex(in[20], ==, 0x45);
    g_assert_cmphex((uint32_t)ldl_be_p(in + 20 + 12), ==, IP_A);
    g_assert_cmphex((uint32_t)ldl_be_p(in + 20 + 16), ==, IP_B);
    g_assert_cmpmem(in + 40, sizeof(out), out, sizeof(out));
    pair_stop(&p);
}

/* A remote access that the rkey does not allow: NAK, nothing touched */
static void check_bad_remote(uint32_t rkey_xor, uint64_t off, uint32_t len,
                             uint8_t op, uint32_t mb_access)
{
    Pair p;
    End a, b;
    Mr ma, mb;
    struct qhca_sge s;
    struct qhca_send_wqe w;
    uint8_t before[8192], after[8192];

    pair_start(&p, WIRE_PASS);
    rc_pair(&p, &a, &b, NULL, false);
    ma = mr_reg(&p.a, a.pdn, 8192, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    mb = mr_reg(&p.b, b.pdn, 4096, mb_access, 0x20000);
    fill(before, sizeof(before), 77);
    mr_io(&p.a, &ma, 0, before, sizeof(before), true);
    fill(before, 4096, 33);
    mr_io(&p.b, &mb, 0, before, 4096, true);

    w = wqe(op, 0xe1);
    w.rdma.remote_addr = cpu_to_le64(mb.iova + off);
    w.rdma.rkey = cpu_to_le32(mb.key ^ rkey_xor);
    s = sge(&ma, 0, len);
    post_send(&a, &w, &s, 1, NULL, 0);
    w = wqe(QHCA_WQE_SEND, 0xe2);
    post_send(&a, &w, &s, 1, NULL, 0);
    expect_cqe(&a, 0xe1, QHCA_CQE_REM_ACCESS_ERR, 0);
    expect_cqe(&a, 0xe2, QHCA_CQE_WR_FLUSH_ERR, 0);
    g_assert_cmpuint(qp_state(&a), ==, QHCA_QPS_ERR);
    g_assert_cmpuint(qp_state(&b), ==, QHCA_QPS_ERR);
    mr_io(&p.b, &mb, 0, after, 4096, false);
    g_assert_cmpmem(after, 4096, before, 4096);
    if (op == QHCA_WQE_RDMA_READ) {
        fill(before, sizeof(before), 77);
        mr_io(&p.a, &ma, 0, after, len, false);
        g_assert_cmpmem(after, len, before, len);
    }
    pair_stop(&p);
}

static void test_wire_bad_rkey(void)
{
    check_bad_remote(0x100, 0, 64, QHCA_WQE_RDMA_WRITE,
                     QHCA_ACCESS_REMOTE_WRITE);
}

static void test_wire_out_of_bounds(void)
{
    /* One byte past the end, spread over several packets */
    check_bad_remote(0, 1, 4096, QHCA_WQE_RDMA_WRITE,
                     QHCA_ACCESS_REMOTE_WRITE);
    check_bad_remote(0, 4000, 200, QHCA_WQE_RDMA_READ,
                     QHCA_ACCESS_REMOTE_READ);
}

static void test_wire_access_flags(void)
{
    /* A read-only MR cannot be written, a write-only one not read */
    check_bad_remote(0, 0, 64, QHCA_WQE_RDMA_WRITE, QHCA_ACCESS_REMOTE_READ);
    check_bad_remote(0, 0, 64, QHCA_WQE_RDMA_READ, QHCA_ACCESS_REMOTE_WRITE);
}

static void test_wire_bad_wqe(void)
{
    Pair p;
    End a, b;
    Mr ma;
    struct qhca_sge s;
    struct qhca_send_wqe w;
    uint32_t errors = 0;

    pair_start(&p, WIRE_PASS);
    rc_pair(&p, &a, &b, NULL, false);
    ma = mr_reg(&p.a, a.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    s = sge(&ma, 0, 16);
    errors = qhca_rd(&p.a, QHCA_REG_STAT_GUEST_ERRORS);
    w = wqe(0x55, 0xd1);                /* no such opcode */
    post_send(&a, &w, &s, 1, NULL, 0);
    w = wqe(QHCA_WQE_SEND, 0xd2);
    post_send(&a, &w, &s, 1, NULL, 0);
    w = wqe(QHCA_WQE_SEND, 0xd3);
    w.flags = 0;                        /* flushed all the same */
    post_send(&a, &w, &s, 1, NULL, 0);
    expect_cqe(&a, 0xd1, QHCA_CQE_LOC_QP_OP_ERR, 0);
    expect_cqe(&a, 0xd2, QHCA_CQE_WR_FLUSH_ERR, 0);
    expect_cqe(&a, 0xd3, QHCA_CQE_WR_FLUSH_ERR, 0);
    g_assert_cmpuint(qp_state(&a), ==, QHCA_QPS_ERR);
    g_assert_cmpuint(qhca_rd(&p.a, QHCA_REG_STAT_GUEST_ERRORS), >, errors);

    /* Also: more SGEs than the WQE holds, and a bad local key */
    end_create(&a, &p.a, QHCA_QPT_RC, IP_A, mac_a, false);
    end_create(&b, &p.b, QHCA_QPT_RC, IP_B, mac_b, false);
    rc_connect_one(&a, &b, &rc_default_opts);
    rc_connect_one(&b, &a, &rc_default_opts);
    {
        /* 13 SGEs do not fit the 256-byte WQEs of this QP (12 do) */
        struct qhca_sge many[13];

        ma = mr_reg(&p.a, a.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
        for (int i = 0; i < 13; i++) {
            many[i] = sge(&ma, i * 8, 8);
        }
        w = wqe(QHCA_WQE_SEND, 0xd4);
        post_send(&a, &w, many, 13, NULL, 0);
    }
    s = sge(&ma, 0, 8);
    w = wqe(QHCA_WQE_SEND, 0xd5);
    post_send(&a, &w, &s, 1, NULL, 0);
    expect_cqe(&a, 0xd4, QHCA_CQE_LOC_QP_OP_ERR, 0);
    expect_cqe(&a, 0xd5, QHCA_CQE_WR_FLUSH_ERR, 0);
    pair_stop(&p);
}

static void test_wire_local_prot(void)
{
    Pair p;
    End a, b;
    Mr ma;
    struct qhca_sge s;
    struct qhca_send_wqe w;

    pair_start(&p, WIRE_PASS);
    rc_pair(&p, &a, &b, NULL, false);
    ma = mr_reg(&p.a, a.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    s = sge(&ma, 4000, 200);            /* beyond the MR */
    w = wqe(QHCA_WQE_SEND, 0xc1);
    post_send(&a, &w, &s, 1, NULL, 0);
    expect_cqe(&a, 0xc1, QHCA_CQE_LOC_PROT_ERR, 0);
    g_assert_cmpuint(qp_state(&a), ==, QHCA_QPS_ERR);
    pair_stop(&p);
}

static void test_wire_remote_errors(void)
{
    Pair p;
    End a, b;
    Mr ma, mb;
    struct qhca_sge s, r;
    struct qhca_send_wqe w;

    /* Receive buffer too small: invalid request / local length error */
    pair_start(&p, WIRE_PASS);
    rc_pair(&p, &a, &b, NULL, false);
    ma = mr_reg(&p.a, a.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    mb = mr_reg(&p.b, b.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    r = sge(&mb, 0, 100);
    post_recv(&b, 0xf1, &r, 1);
    s = sge(&ma, 0, 200);
    w = wqe(QHCA_WQE_SEND, 0xf2);
    post_send(&a, &w, &s, 1, NULL, 0);
    expect_cqe(&b, 0xf1, QHCA_CQE_LOC_LEN_ERR, 0);
    expect_cqe(&a, 0xf2, QHCA_CQE_REM_INV_REQ_ERR, 0);

    /* Receive WQE with a bad lkey: remote operation error */
    end_create(&a, &p.a, QHCA_QPT_RC, IP_A, mac_a, false);
    end_create(&b, &p.b, QHCA_QPT_RC, IP_B, mac_b, false);
    rc_connect_one(&a, &b, &rc_default_opts);
    rc_connect_one(&b, &a, &rc_default_opts);
    ma = mr_reg(&p.a, a.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    mb = mr_reg(&p.b, b.pdn, 4096, 0, 0x1000);      /* not writable */
    r = sge(&mb, 0, 100);
    post_recv(&b, 0xf3, &r, 1);
    s = sge(&ma, 0, 50);
    w = wqe(QHCA_WQE_SEND, 0xf4);
    post_send(&a, &w, &s, 1, NULL, 0);
    expect_cqe(&b, 0xf3, QHCA_CQE_LOC_PROT_ERR, 0);
    expect_cqe(&a, 0xf4, QHCA_CQE_REM_OP_ERR, 0);
    pair_stop(&p);
}

static void lossy_run(WirePolicy policy, unsigned count)
{
    Pair p;
    End a, b;
    Mr ma, mb;
    struct qhca_sge s;
    struct qhca_send_wqe w;
    unsigned sent = 0, recvd = 0, acked = 0, posted = 0;
    uint32_t v;

    pair_start(&p, policy);
    rc_pair(&p, &a, &b, NULL, false);
    ma = mr_reg(&p.a, a.pdn, 4 * count, QHCA_ACCESS_LOCAL_WRITE, 0x100000);
    mb = mr_reg(&p.b, b.pdn, 4 * count, QHCA_ACCESS_LOCAL_WRITE, 0x200000);
    for (v = 0; v < count; v++) {
        uint32_t le = cpu_to_le32(v + 1);

        mr_io(&p.a, &ma, 4 * v, &le, 4, true);
    }
    while (recvd < count || acked < count) {
        /* keep 64 receives and 32 sends outstanding */
        while (posted < count && posted - recvd < 64) {
            s = sge(&mb, 4 * posted, 4);
            post_recv(&b, posted, &s, 1);
            posted++;
        }
        while (sent < count && sent - acked < 32) {
            s = sge(&ma, 4 * sent, 4);
            w = wqe(QHCA_WQE_SEND, sent);
            post_send(&a, &w, &s, 1, NULL, 0);
            sent++;
        }
        if (recvd < MIN(sent, posted)) {
            struct qhca_cqe c;

            c = poll_cq(&b);

            /* In order, exactly once: receive n holds message n */
            g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
            g_assert_cmpuint(le64_to_cpu(c.wr_id), ==, recvd);
            mr_io(&p.b, &mb, 4 * recvd, &v, 4, false);
            g_assert_cmpuint(le32_to_cpu(v), ==, recvd + 1);
            recvd++;
        }
        while (acked < recvd) {
            struct qhca_cqe c = poll_cq(&a);

            g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
            g_assert_cmpuint(le64_to_cpu(c.wr_id), ==, acked);
            acked++;
        }
    }
    /* Nothing more: no duplicate delivery */
    g_assert_true(cq_idle(&b, 200));
    g_assert_true(cq_idle(&a, 10));
    if (policy == WIRE_DROP_EVERY_5) {
        g_assert_cmpuint(p.w.dropped, >=, count / 5);
        g_assert_cmpuint(qhca_rd(&p.a, QHCA_REG_STAT_RETRANSMITS), >, 0);
    }
    pair_stop(&p);
}

static void test_wire_lossy(void)
{
    lossy_run(WIRE_DROP_EVERY_5, 1000);
}

static void test_wire_dup(void)
{
    lossy_run(WIRE_DUP, 200);
}

static void test_wire_reorder(void)
{
    lossy_run(WIRE_REORDER, 200);
}

static void test_wire_retry_exceeded(void)
{
    Pair p;
    End a, b;
    Mr ma;
    struct qhca_sge s;
    struct qhca_send_wqe w;
    ConnOpts o = rc_default_opts;

    /* The peer is gone: nothing comes back */
    pair_start(&p, WIRE_BLACKHOLE);
    o.retry_cnt = 3;
    rc_pair(&p, &a, &b, &o, false);
    ma = mr_reg(&p.a, a.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    s = sge(&ma, 0, 100);
    w = wqe(QHCA_WQE_SEND, 0x99);
    post_send(&a, &w, &s, 1, NULL, 0);
    expect_cqe(&a, 0x99, QHCA_CQE_RETRY_EXC_ERR, 0);
    g_assert_cmpuint(qp_state(&a), ==, QHCA_QPS_ERR);
    /* the first transmission and three retries */
    g_assert_cmpuint(p.w.dropped, ==, 4);
    pair_stop(&p);
}

static void test_wire_rnr(void)
{
    Pair p;
    End a, b;
    Mr ma, mb;
    struct qhca_sge s;
    struct qhca_send_wqe w;
    ConnOpts o = rc_default_opts;

    /* rnr_retry 2: three RNR NAKs end it */
    pair_start(&p, WIRE_PASS);
    o.rnr_retry = 2;
    rc_pair(&p, &a, &b, &o, false);
    ma = mr_reg(&p.a, a.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    s = sge(&ma, 0, 10);
    w = wqe(QHCA_WQE_SEND, 0x31);
    post_send(&a, &w, &s, 1, NULL, 0);
    expect_cqe(&a, 0x31, QHCA_CQE_RNR_RETRY_EXC_ERR, 0);

    /* rnr_retry 7 retries until a receive is posted */
    o.rnr_retry = 7;
    end_create(&a, &p.a, QHCA_QPT_RC, IP_A, mac_a, false);
    end_create(&b, &p.b, QHCA_QPT_RC, IP_B, mac_b, false);
    rc_connect_one(&a, &b, &o);
    rc_connect_one(&b, &a, &o);
    ma = mr_reg(&p.a, a.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    mb = mr_reg(&p.b, b.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    s = sge(&ma, 0, 10);
    w = wqe(QHCA_WQE_SEND, 0x32);
    post_send(&a, &w, &s, 1, NULL, 0);
    g_assert_true(cq_idle(&a, 300));
    s = sge(&mb, 0, 10);
    post_recv(&b, 0x33, &s, 1);
    expect_cqe(&b, 0x33, QHCA_CQE_SUCCESS, QHCA_CQE_OP_RECV);
    expect_cqe(&a, 0x32, QHCA_CQE_SUCCESS, QHCA_CQE_OP_SEND);
    pair_stop(&p);
}

static void test_wire_fast_reg(void)
{
    Pair p;
    End a, b;
    Mr ma, mb;
    struct qhca_sge s;
    struct qhca_send_wqe w;
    struct qhca_cmd_alloc_mr am = { 0 };
    struct qhca_cqe c;
    uint64_t pbl, mem;
    uint32_t key;
    uint8_t out[256], in[256];
    int i;

    pair_start(&p, WIRE_PASS);
    rc_pair(&p, &a, &b, NULL, false);
    ma = mr_reg(&p.a, a.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    mb = mr_reg(&p.b, b.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    am.pdn = cpu_to_le32(b.pdn);
    am.max_pages = cpu_to_le32(4);
    am.key_variant = cpu_to_le32(1);
    key = qhca_cmd_ok(&p.b, QHCA_CMD_ALLOC_MR, &am, sizeof(am));

    /* Not registered yet: no access */
    fill(out, sizeof(out), 8);
    mr_io(&p.a, &ma, 0, out, sizeof(out), true);

    /* B registers two pages through its send queue, with a new key */
    pbl = qhca_alloc(&p.b, 4096);
    mem = qhca_alloc(&p.b, 2 * 4096);
    for (i = 0; i < 2; i++) {
        qtest_writeq(p.b.qts, pbl + 8 * i, mem + 4096 * (1 - i));
    }
    key = (key & ~0xffu) | 2;
    w = wqe(QHCA_WQE_REG_MR, 0x41);
    w.reg.iova = cpu_to_le64(0xa000);
    w.reg.length = cpu_to_le64(8192);
    w.reg.pbl_addr = cpu_to_le64(pbl);
    w.reg.key = cpu_to_le32(key);
    w.reg.access = cpu_to_le32(QHCA_ACCESS_REMOTE_WRITE |
                               QHCA_ACCESS_LOCAL_WRITE);
    w.reg.num_pages = cpu_to_le32(2);
    w.reg.page_shift = 12;
    post_send(&b, &w, NULL, 0, NULL, 0);
    expect_cqe(&b, 0x41, QHCA_CQE_SUCCESS, QHCA_CQE_OP_REG_MR);

    /* A writes across the page boundary of the new registration */
    w = wqe(QHCA_WQE_RDMA_WRITE, 0x42);
    w.rdma.remote_addr = cpu_to_le64(0xa000 + 4096 - 100);
    w.rdma.rkey = cpu_to_le32(key);
    s = sge(&ma, 0, sizeof(out));
    post_send(&a, &w, &s, 1, NULL, 0);
    expect_cqe(&a, 0x42, QHCA_CQE_SUCCESS, QHCA_CQE_OP_RDMA_WRITE);
    qtest_memread(p.b.qts, mem + 4096 + 4096 - 100, in, 100);
    qtest_memread(p.b.qts, mem, in + 100, sizeof(in) - 100);
    g_assert_cmpmem(in, sizeof(in), out, sizeof(out));

    /* SEND_WITH_INV invalidates it at B */
    s = sge(&mb, 0, 64);
    post_recv(&b, 0x43, &s, 1);
    w = wqe(QHCA_WQE_SEND_WITH_INV, 0x44);
    w.invalidate_rkey = cpu_to_le32(key);
    s = sge(&ma, 0, 8);
    post_send(&a, &w, &s, 1, NULL, 0);
    c = poll_cq(&b);
    g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 0x43);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
    g_assert_cmphex(c.flags & QHCA_CQE_WITH_INV, ==, QHCA_CQE_WITH_INV);
    g_assert_cmphex(le32_to_cpu(c.invalidated_rkey), ==, key);
    expect_cqe(&a, 0x44, QHCA_CQE_SUCCESS, QHCA_CQE_OP_SEND);

    /* ... and the next write through the invalidated key fails */
    w = wqe(QHCA_WQE_RDMA_WRITE, 0x45);
    w.rdma.remote_addr = cpu_to_le64(0xa000);
    w.rdma.rkey = cpu_to_le32(key);
    s = sge(&ma, 0, 16);
    post_send(&a, &w, &s, 1, NULL, 0);
    expect_cqe(&a, 0x45, QHCA_CQE_REM_ACCESS_ERR, 0);

    /* LOCAL_INV of an MR that is not fast-register fails locally */
    end_create(&a, &p.a, QHCA_QPT_RC, IP_A, mac_a, false);
    end_create(&b, &p.b, QHCA_QPT_RC, IP_B, mac_b, false);
    rc_connect_one(&a, &b, &rc_default_opts);
    rc_connect_one(&b, &a, &rc_default_opts);
    mb = mr_reg(&p.b, b.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    w = wqe(QHCA_WQE_LOCAL_INV, 0x46);
    w.invalidate_rkey = cpu_to_le32(mb.key);
    post_send(&b, &w, NULL, 0, NULL, 0);
    expect_cqe(&b, 0x46, QHCA_CQE_LOC_PROT_ERR, 0);
    pair_stop(&p);
}

static void test_wire_solicited(void)
{
    Pair p;
    End a, b;
    Mr ma, mb;
    struct qhca_sge s;
    struct qhca_send_wqe w;
    struct qhca_eqe eqe;
    int i;

    pair_start(&p, WIRE_PASS);
    rc_pair(&p, &a, &b, NULL, false);
    ma = mr_reg(&p.a, a.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    mb = mr_reg(&p.b, b.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    for (i = 0; i < 2; i++) {
        s = sge(&mb, 64 * i, 64);
        post_recv(&b, i, &s, 1);
    }
    qhca_db(&p.b, 0, QHCA_DB_CQ_ARM_SOLICITED, b.cqn);
    s = sge(&ma, 0, 8);
    w = wqe(QHCA_WQE_SEND, 1);
    post_send(&a, &w, &s, 1, NULL, 0);
    expect_cqe(&a, 1, QHCA_CQE_SUCCESS, QHCA_CQE_OP_SEND);
    /* Not solicited: no event */
    g_assert_false(qhca_ring_has_entry(&p.b, b.eq.page[0], 6, 16,
                                       offsetof(struct qhca_eqe, owner), 0));
    w = wqe(QHCA_WQE_SEND, 2);
    w.flags |= QHCA_WQE_SOLICITED;
    post_send(&a, &w, &s, 1, NULL, 0);
    expect_cqe(&a, 2, QHCA_CQE_SUCCESS, QHCA_CQE_OP_SEND);
    g_assert_true(qhca_wait_entry(&p.b, b.eq.page[0], 6, 16,
                                  offsetof(struct qhca_eqe, owner), 0));
    qtest_memread(p.b.qts, b.eq.page[0], &eqe, sizeof(eqe));
    g_assert_cmpuint(eqe.type, ==, QHCA_EQE_COMPLETION);
    g_assert_cmpuint(le32_to_cpu(eqe.obj), ==, b.cqn);
    expect_cqe(&b, 0, QHCA_CQE_SUCCESS, QHCA_CQE_OP_RECV);
    g_assert_cmphex(poll_cq(&b).flags & QHCA_CQE_SOLICITED, ==,
                    QHCA_CQE_SOLICITED);
    pair_stop(&p);
}

/* Frames from the wire are hostile: bad ICRC, truncation, garbage */
static void test_wire_hostile_frames(void)
{
    Pair p;
    End a, b;
    Mr ma, mb;
    struct qhca_sge s;
    struct qhca_send_wqe w;
    g_autoptr(GByteArray) frame = g_byte_array_new();
    uint32_t bad_icrc, dropped;
    uint8_t junk[600];
    unsigned i;

    pair_start(&p, WIRE_PASS);
    rc_pair(&p, &a, &b, NULL, false);
    ma = mr_reg(&p.a, a.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    mb = mr_reg(&p.b, b.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    s = sge(&mb, 0, 64);
    post_recv(&b, 1, &s, 1);
    post_recv(&b, 2, &s, 1);
    s = sge(&ma, 0, 32);
    w = wqe(QHCA_WQE_SEND, 1);
    post_send(&a, &w, &s, 1, NULL, 0);
    expect_cqe(&b, 1, QHCA_CQE_SUCCESS, QHCA_CQE_OP_RECV);
    expect_cqe(&a, 1, QHCA_CQE_SUCCESS, QHCA_CQE_OP_SEND);
    /* The last frame A sent was the SEND: replay it damaged */
    g_byte_array_append(frame, p.w.last[0]->data, p.w.last[0]->len);
    g_assert_cmpuint(frame->len, >, 60);

    bad_icrc = qhca_rd(&p.b, QHCA_REG_STAT_RX_BAD_ICRC);
    dropped = qhca_rd(&p.b, QHCA_REG_STAT_RX_DROPPED);
    frame->data[frame->len - 1] ^= 0x5a;
    wire_write(p.w.fd[1], frame->data, frame->len);
    frame->data[frame->len - 1] ^= 0x5a;
    /* every truncation of it */
    for (i = 1; i < frame->len; i += 3) {
        wire_write(p.w.fd[1], frame->data, i);
    }
    /* random bytes, addressed to B */
    for (i = 0; i < 50; i++) {
        size_t n = g_test_rand_int_range(14, sizeof(junk));
        size_t j;

        for (j = 0; j < n; j++) {
            junk[j] = g_test_rand_int();
        }
        memcpy(junk, mac_b, 6);
        if (i & 1) {
            memcpy(junk + 12, frame->data + 12, MIN(n, 40) - 12);
        }
        wire_write(p.w.fd[1], junk, n);
    }
    /* The replay of a good frame is a duplicate: ACKed, not delivered */
    wire_write(p.w.fd[1], frame->data, frame->len);
    g_assert_true(cq_idle(&b, 100));
    /* (a random frame could pass every other check, 1 in 2^16) */
    g_assert_cmpuint(qhca_rd(&p.b, QHCA_REG_STAT_RX_BAD_ICRC), >=,
                     bad_icrc + 1);
    g_assert_cmpuint(qhca_rd(&p.b, QHCA_REG_STAT_RX_DROPPED), >=, dropped + 50);

    /* B still works */
    w = wqe(QHCA_WQE_SEND, 2);
    post_send(&a, &w, &s, 1, NULL, 0);
    expect_cqe(&b, 2, QHCA_CQE_SUCCESS, QHCA_CQE_OP_RECV);
    expect_cqe(&a, 2, QHCA_CQE_SUCCESS, QHCA_CQE_OP_SEND);
    pair_stop(&p);
}


/*
 * Every kind of RC and UD packet once, for a capture that tshark checks
 * (scripts/test.d/qtest runs this with QHCA_QTEST_PCAP set)
 */
static void test_wire_mix(void)
{
    Pair p;
    End a, b;
    Mr ma, mb;
    struct qhca_sge s, r;
    struct qhca_send_wqe w;
    ConnOpts o = rc_default_opts;
    uint8_t buf[8192], back[1500];

    pair_start(&p, WIRE_PASS);
    o.mtu = 1;                          /* 256 bytes: many packets */
    rc_pair(&p, &a, &b, &o, false);
    ma = mr_reg(&p.a, a.pdn, 8192, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    mb = mr_reg(&p.b, b.pdn, 8192, ALL_ACCESS, 0x1000);
    fill(buf, sizeof(buf), 4);
    mr_io(&p.a, &ma, 0, buf, sizeof(buf), true);

    r = sge(&mb, 0, 8192);
    post_recv(&b, 1, &r, 1);
    post_recv(&b, 2, &r, 1);
    s = sge(&ma, 0, 1000);
    w = wqe(QHCA_WQE_SEND, 1);          /* first, middle, last */
    post_send(&a, &w, &s, 1, NULL, 0);
    w = wqe(QHCA_WQE_SEND_WITH_IMM, 2);
    s = sge(&ma, 0, 100);               /* only, with immediate */
    post_send(&a, &w, &s, 1, NULL, 0);
    w = wqe(QHCA_WQE_RDMA_WRITE, 3);    /* write first, middle, last */
    w.rdma.remote_addr = cpu_to_le64(mb.iova + 1000);
    w.rdma.rkey = cpu_to_le32(mb.key);
    s = sge(&ma, 0, 4000);
    post_send(&a, &w, &s, 1, NULL, 0);
    w = wqe(QHCA_WQE_RDMA_READ, 4);     /* read responses first..last */
    w.rdma.remote_addr = cpu_to_le64(mb.iova + 1000);
    w.rdma.rkey = cpu_to_le32(mb.key);
    s = sge(&ma, 4096, 1500);
    post_send(&a, &w, &s, 1, NULL, 0);
    w = wqe(QHCA_WQE_ATOMIC_FETCH_AND_ADD, 5);
    w.rdma.remote_addr = cpu_to_le64(mb.iova + 8);
    w.rdma.rkey = cpu_to_le32(mb.key);
    w.rdma.compare_add = cpu_to_le64(1);
    s = sge(&ma, 6000, 8);
    post_send(&a, &w, &s, 1, NULL, 0);
    w = wqe(QHCA_WQE_ATOMIC_CMP_AND_SWP, 6);
    w.rdma.remote_addr = cpu_to_le64(mb.iova + 8);
    w.rdma.rkey = cpu_to_le32(mb.key);
    post_send(&a, &w, &s, 1, NULL, 0);
    expect_cqe(&b, 1, QHCA_CQE_SUCCESS, QHCA_CQE_OP_RECV);
    expect_cqe(&b, 2, QHCA_CQE_SUCCESS, QHCA_CQE_OP_RECV);
    for (int i = 1; i <= 6; i++) {
        g_assert_cmpuint(poll_cq(&a).status, ==, QHCA_CQE_SUCCESS);
    }
    /* the READ brought back what the WRITE put there */
    mr_io(&p.a, &ma, 4096, back, sizeof(back), false);
    g_assert_cmpmem(back, sizeof(back), buf, sizeof(back));
    pair_stop(&p);
}

/* READ, WRITE and atomics over a lossy wire: data intact, atomics once */
static void test_wire_lossy_rdma(void)
{
    Pair p;
    End a, b;
    Mr src, back, ma, mb;
    struct qhca_sge s;
    struct qhca_send_wqe w;
    const uint32_t len = 256 * 1024;
    g_autofree uint8_t *out = g_malloc(len);
    g_autofree uint8_t *in = g_malloc(len);
    uint64_t v, seen = 0;
    int i;

    /*
     * Random loss: with every 5th frame dropped, a READ's responses and its
     * retransmissions are both periodic and can stay aligned forever
     */
    pair_start(&p, WIRE_DROP_RANDOM);
    rc_pair(&p, &a, &b, NULL, false);
    src = mr_reg(&p.a, a.pdn, len, QHCA_ACCESS_LOCAL_WRITE, 0x100000);
    back = mr_reg(&p.a, a.pdn, len, QHCA_ACCESS_LOCAL_WRITE, 0x200000);
    ma = mr_reg(&p.a, a.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x300000);
    mb = mr_reg(&p.b, b.pdn, len, ALL_ACCESS, 0x400000);
    fill(out, len, 11);
    mr_io(&p.a, &src, 0, out, len, true);

    w = wqe(QHCA_WQE_RDMA_WRITE, 1);
    w.rdma.remote_addr = cpu_to_le64(mb.iova);
    w.rdma.rkey = cpu_to_le32(mb.key);
    s = sge(&src, 0, len);
    post_send(&a, &w, &s, 1, NULL, 0);
    w = wqe(QHCA_WQE_RDMA_READ, 2);
    w.rdma.remote_addr = cpu_to_le64(mb.iova);
    w.rdma.rkey = cpu_to_le32(mb.key);
    s = sge(&back, 0, len);
    post_send(&a, &w, &s, 1, NULL, 0);
    expect_cqe(&a, 1, QHCA_CQE_SUCCESS, QHCA_CQE_OP_RDMA_WRITE);
    expect_cqe(&a, 2, QHCA_CQE_SUCCESS, QHCA_CQE_OP_RDMA_READ);
    mr_io(&p.a, &back, 0, in, len, false);
    g_assert_true(memcmp(in, out, len) == 0);

    /* 20 fetch-and-adds: each executes once, whatever is retransmitted */
    v = 0;
    mr_io(&p.b, &mb, 0, &v, 8, true);
    for (i = 0; i < 20; i++) {
        w = wqe(QHCA_WQE_ATOMIC_FETCH_AND_ADD, 10 + i);
        w.rdma.remote_addr = cpu_to_le64(mb.iova);
        w.rdma.rkey = cpu_to_le32(mb.key);
        w.rdma.compare_add = cpu_to_le64(1);
        s = sge(&ma, 8 * i, 8);
        post_send(&a, &w, &s, 1, NULL, 0);
    }
    for (i = 0; i < 20; i++) {
        expect_cqe(&a, 10 + i, QHCA_CQE_SUCCESS, QHCA_CQE_OP_FETCH_ADD);
        mr_io(&p.a, &ma, 8 * i, &v, 8, false);
        g_assert_cmpuint(le64_to_cpu(v), <, 20);
        g_assert_false(seen & (1ULL << le64_to_cpu(v)));
        seen |= 1ULL << le64_to_cpu(v);
    }
    mr_io(&p.b, &mb, 0, &v, 8, false);
    g_assert_cmpuint(le64_to_cpu(v), ==, 20);
    g_assert_cmpuint(p.w.dropped, >, 0);
    pair_stop(&p);
}

/*
 * Several large READs in flight at once, as ib_read_bw posts them, over a
 * lossy wire (as a UDP socket netdev is when a burst overflows it)
 */
static void test_wire_reads_in_flight(void)
{
    Pair p;
    End a, b;
    Mr back, mb;
    struct qhca_sge s;
    struct qhca_send_wqe w;
    const uint32_t len = 256 * 1024;
    g_autofree uint8_t *out = g_malloc(len);
    g_autofree uint8_t *in = g_malloc(len);
    int i;

    pair_start(&p, WIRE_DROP_RANDOM);
    rc_pair(&p, &a, &b, NULL, false);
    back = mr_reg(&p.a, a.pdn, 4 * len, QHCA_ACCESS_LOCAL_WRITE, 0x10000000);
    mb = mr_reg(&p.b, b.pdn, len, QHCA_ACCESS_REMOTE_READ, 0x20000000);
    fill(out, len, 21);
    mr_io(&p.b, &mb, 0, out, len, true);
    for (i = 0; i < 8; i++) {
        w = wqe(QHCA_WQE_RDMA_READ, i);
        w.rdma.remote_addr = cpu_to_le64(mb.iova);
        w.rdma.rkey = cpu_to_le32(mb.key);
        s = sge(&back, (uint64_t)(i % 4) * len, len);
        post_send(&a, &w, &s, 1, NULL, 0);
    }
    for (i = 0; i < 8; i++) {
        expect_cqe(&a, i, QHCA_CQE_SUCCESS, QHCA_CQE_OP_RDMA_READ);
    }
    for (i = 0; i < 4; i++) {
        mr_io(&p.a, &back, (uint64_t)i * len, in, len, false);
        g_assert_true(memcmp(in, out, len) == 0);
    }
    pair_stop(&p);
}

/*
 * A 256 KiB READ is asked for in half-window pieces, each a READ request
 * that takes one of the responder's resources.  With one resource
 * (max_rd_atomic = max_dest_rd_atomic = 1) the requester must not ask for
 * a new piece, or start an atomic, before the previous answer is complete;
 * counting the READ WQE once made the responder NAK an invalid request
 * (found by the host fuzzer: tests/fuzz/regressions/read-pieces-rd-atomic).
 * On a clean and on a lossy wire.
 */
static void read_pieces_one_resource(WirePolicy policy)
{
    const uint32_t len = 256 * 1024;
    Pair p;
    End a, b;
    Mr back, mb, mt;
    struct qhca_sge s;
    struct qhca_send_wqe w;
    ConnOpts o = rc_default_opts;
    g_autofree uint8_t *out = g_malloc(len);
    g_autofree uint8_t *in = g_malloc(len);
    uint64_t orig;

    pair_start(&p, policy);
    o.rd_atomic = 1;
    rc_pair(&p, &a, &b, &o, false);
    back = mr_reg(&p.a, a.pdn, len + 8, QHCA_ACCESS_LOCAL_WRITE, 0x10000000);
    mb = mr_reg(&p.b, b.pdn, len, QHCA_ACCESS_REMOTE_READ, 0x20000000);
    mt = mr_reg(&p.b, b.pdn, 8, QHCA_ACCESS_REMOTE_ATOMIC, 0x30000000);
    fill(out, len, 31);
    mr_io(&p.b, &mb, 0, out, len, true);
    w = wqe(QHCA_WQE_RDMA_READ, 0x71);
    w.rdma.remote_addr = cpu_to_le64(mb.iova);
    w.rdma.rkey = cpu_to_le32(mb.key);
    s = sge(&back, 0, len);
    post_send(&a, &w, &s, 1, NULL, 0);
    w = wqe(QHCA_WQE_ATOMIC_FETCH_AND_ADD, 0x72);
    w.rdma.remote_addr = cpu_to_le64(mt.iova);
    w.rdma.rkey = cpu_to_le32(mt.key);
    w.rdma.compare_add = cpu_to_le64(5);
    s = sge(&back, len, 8);
    post_send(&a, &w, &s, 1, NULL, 0);
    expect_cqe(&a, 0x71, QHCA_CQE_SUCCESS, QHCA_CQE_OP_RDMA_READ);
    expect_cqe(&a, 0x72, QHCA_CQE_SUCCESS, QHCA_CQE_OP_FETCH_ADD);
    mr_io(&p.a, &back, 0, in, len, false);
    g_assert_true(memcmp(in, out, len) == 0);
    mr_io(&p.b, &mt, 0, &orig, 8, false);
    g_assert_cmpuint(le64_to_cpu(orig), ==, 5);
    g_assert_cmpuint(qp_state(&b), ==, QHCA_QPS_RTS);
    pair_stop(&p);
}

/*
 * The drop-ppm property: each device drops 10% of the frames it receives
 * on purpose; 200 SENDs still arrive in order, exactly once, and the
 * devices counted what they dropped
 */
static void test_wire_drop_ppm(void)
{
    Pair p;
    End a, b;
    Mr ma, mb;
    struct qhca_sge s;
    struct qhca_send_wqe w;
    struct qhca_cqe c;
    uint32_t drops;
    int i;

    pair_dev_props = ",drop-ppm=100000";
    pair_start(&p, WIRE_PASS);
    pair_dev_props = "";
    rc_pair(&p, &a, &b, NULL, false);
    ma = mr_reg(&p.a, a.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    mb = mr_reg(&p.b, b.pdn, 200 * 16, QHCA_ACCESS_LOCAL_WRITE, 0x10000);
    drops = qhca_rd(&p.a, QHCA_REG_STAT_RX_DROPPED) +
            qhca_rd(&p.b, QHCA_REG_STAT_RX_DROPPED);
    for (i = 0; i < 200; i++) {
        s = sge(&mb, i * 16, 16);
        post_recv(&b, i, &s, 1);
    }
    for (i = 0; i < 200; i++) {
        uint32_t v = cpu_to_le32(i);

        mr_io(&p.a, &ma, 0, &v, 4, true);
        s = sge(&ma, 0, 4);
        w = wqe(QHCA_WQE_SEND, i);
        post_send(&a, &w, &s, 1, NULL, 0);
        expect_cqe(&a, i, QHCA_CQE_SUCCESS, QHCA_CQE_OP_SEND);
    }
    for (i = 0; i < 200; i++) {
        uint32_t v;

        c = poll_cq(&b);
        g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
        g_assert_cmphex(le64_to_cpu(c.wr_id), ==, i);
        mr_io(&p.b, &mb, i * 16, &v, 4, false);
        g_assert_cmpuint(le32_to_cpu(v), ==, i);
    }
    g_assert_true(cq_idle(&b, 50));
    g_assert_cmpuint(qhca_rd(&p.a, QHCA_REG_STAT_RX_DROPPED) +
                     qhca_rd(&p.b, QHCA_REG_STAT_RX_DROPPED), >, drops + 10);
    pair_stop(&p);
}

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

static void test_wire_read_pieces_one_resource(void)
{
    read_pieces_one_resource(WIRE_PASS);
    read_pieces_one_resource(WIRE_DROP_RANDOM);
}

static void qhca_add_wire_tests(void)
{
    qtest_add_func("/qhca/wire/read-pieces-one-resource",
                   test_wire_read_pieces_one_resource);
    qtest_add_func("/qhca/wire/drop-ppm", test_wire_drop_ppm);
    qtest_add_func("/qhca/transport/device-window",
                   test_transport_device_window);
    qtest_add_func("/qhca/wire/send-recv", test_wire_send_recv);
    qtest_add_func("/qhca/wire/mix", test_wire_mix);
    qtest_add_func("/qhca/wire/srq", test_wire_srq);
    qtest_add_func("/qhca/wire/write-read-1m", test_wire_write_read_1m);
    qtest_add_func("/qhca/wire/atomics", test_wire_atomics);
    qtest_add_func("/qhca/wire/reads-in-flight", test_wire_reads_in_flight);
    qtest_add_func("/qhca/wire/ud-grh", test_wire_ud);
    qtest_add_func("/qhca/wire/bad-rkey", test_wire_bad_rkey);
    qtest_add_func("/qhca/wire/out-of-bounds", test_wire_out_of_bounds);
    qtest_add_func("/qhca/wire/access-flags", test_wire_access_flags);
    qtest_add_func("/qhca/wire/bad-wqe", test_wire_bad_wqe);
    qtest_add_func("/qhca/wire/local-prot", test_wire_local_prot);
    qtest_add_func("/qhca/wire/remote-errors", test_wire_remote_errors);
    qtest_add_func("/qhca/wire/fast-reg", test_wire_fast_reg);
    qtest_add_func("/qhca/wire/solicited", test_wire_solicited);
    qtest_add_func("/qhca/wire/hostile-frames", test_wire_hostile_frames);
    qtest_add_func("/qhca/wire/rnr", test_wire_rnr);
    qtest_add_func("/qhca/wire/retry-exceeded", test_wire_retry_exceeded);
    qtest_add_func("/qhca/wire/dup", test_wire_dup);
    qtest_add_func("/qhca/wire/reorder", test_wire_reorder);
    qtest_add_func("/qhca/wire/lossy-1000", test_wire_lossy);
    qtest_add_func("/qhca/wire/lossy-rdma", test_wire_lossy_rdma);
}

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

#define M(x) QHCA_QP_ATTR_##x

#undef M

static struct qhca_send_wqe ud_wqe(uint8_t opcode, uint64_t wr_id,
                                   uint32_t ahn, uint32_t qpn, uint32_t qkey)
{
    struct qhca_send_wqe w = wqe(opcode, wr_id);

    w.ud.ahn = cpu_to_le32(ahn);
    w.ud.remote_qpn = cpu_to_le32(qpn);
    w.ud.remote_qkey = cpu_to_le32(qkey);
    return w;
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

static void qhca_add_loopback_tests(void)
{
    qtest_add_func("/qhca/loopback/rc", test_loopback_rc);
    qtest_add_func("/qhca/loopback/ud", test_loopback_ud);
    qtest_add_func("/qhca/loopback/bad-frames", test_loopback_bad_frames);
}


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

/* QUERY_STATS, QUERY_QP_STATE and QUERY_CQ after traffic with losses */
static uint64_t stat_of(const uint64_t *v, unsigned i)
{
    return v[i];
}

static unsigned query_stats(QQhca *d, uint32_t first, uint64_t *v)
{
    struct qhca_cmd_query_stats q = { .first = cpu_to_le32(first) };
    qhca_le64 raw[QHCA_STAT_NUM];
    uint32_t n;
    unsigned i;

    g_assert_cmpint(qhca_cmd_post(d, QHCA_CMD_QUERY_STATS, &q, sizeof(q), &n),
                    ==, QHCA_CMD_OK);
    qtest_memread(d->qts, d->qd.resp, raw, (QHCA_STAT_NUM - first) * 8);
    for (i = first; i < QHCA_STAT_NUM; i++) {
        v[i] = le64_to_cpu(raw[i - first]);
    }
    return n;
}

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

static void qhca_add_uc_counter_tests(void)
{
    qtest_add_func("/qhca/uc/send-write", test_uc_send_write);
    qtest_add_func("/qhca/uc/lost-packet", test_uc_lost_packet);
    qtest_add_func("/qhca/uc/errors-drop", test_uc_errors_drop);
    qtest_add_func("/qhca/transport/counters", test_transport_counters);
    qtest_add_func("/qhca/wire/rereg-mr", test_wire_rereg_mr);
    qtest_add_func("/qhca/wire/resize-cq", test_wire_resize_cq);
    qtest_add_func("/qhca/wire/resize-srq", test_wire_resize_srq);
    qtest_add_func("/qhca/wire/resize-srq-mid-send",
                   test_wire_resize_srq_mid_send);
}

/*
 * RoCEv2 over IPv6.  Each device gets the link-local
 * GID the kernel derives from its MAC (fe80::5054:ff:fe00:n for
 * 52:54:00:00:00:n) at GID6_INDEX, beside the IPv4 GID end_create() puts
 * at index 0; QPs and AHs pick one or the other.
 */
#define GID6_INDEX  1
#define M(x) QHCA_QP_ATTR_##x

static void gid6_of(uint8_t *g, const uint8_t *mac)
{
    static const uint8_t ll[16] = { 0xfe, 0x80, [8] = 0x50, 0x54, 0x00,
                                    0xff, 0xfe };

    memcpy(g, ll, 16);
    g[13] = mac[3];
    g[14] = mac[4];
    g[15] = mac[5];
}

static int add_gid_raw(QQhca *d, uint32_t index, const uint8_t *gid)
{
    struct qhca_cmd_gid g = { .index = cpu_to_le32(index) };

    memcpy(g.gid, gid, 16);
    return qhca_cmd_post(d, QHCA_CMD_ADD_GID, &g, sizeof(g), NULL);
}

static void add_gid6(End *e)
{
    uint8_t g[16];

    gid6_of(g, e->mac);
    g_assert_cmpint(add_gid_raw(e->d, GID6_INDEX, g), ==, QHCA_CMD_OK);
}

/* What a QP or AH of ours sets in the IPv6 header */
typedef struct Grh6 {
    uint8_t tclass, hop_limit;
    uint32_t flow_label;
} Grh6;

/* The RTR attributes of an IPv6 path from @e to @peer */
static void path6(struct qhca_qp_attr *a, const End *peer, const Grh6 *g)
{
    a->sgid_index = GID6_INDEX;
    a->hop_limit = g->hop_limit;
    a->traffic_class = g->tclass;
    a->flow_label = cpu_to_le32(g->flow_label);
    gid6_of(a->dgid, peer->mac);
    memcpy(a->dmac, peer->mac, 6);
}

/* The attributes INIT -> RTR takes */
#define RTR6_MASK (M(STATE) | M(AV) | M(PATH_MTU) | M(DEST_QPN) | M(RQ_PSN) | \
                   M(MAX_DEST_RD_ATOMIC) | M(MIN_RNR_TIMER))

/* Connect RC QP @e to @peer over IPv6 (rc_default_opts otherwise) */
static void rc_connect6(End *e, const End *peer, const Grh6 *g)
{
    struct qhca_qp_attr av = { 0 };
    ConnOpts o = rc_default_opts;

    o.psn_zero = true;
    path6(&av, peer, g);
    rc_connect_av(e, peer, &o, &av);
}

/* The IPv6 header at @ip is from @from to @to with @g's fields */
static void check_ip6_hdr(const uint8_t *ip, const End *from, const End *to,
                          const Grh6 *g)
{
    uint8_t sgid[16], dgid[16];
    uint32_t word = ldl_be_p(ip);

    gid6_of(sgid, from->mac);
    gid6_of(dgid, to->mac);
    g_assert_cmphex(word >> 28, ==, 6);
    g_assert_cmphex((word >> 20) & 0xff, ==, g->tclass);
    g_assert_cmphex(word & 0xfffff, ==, g->flow_label);
    g_assert_cmpuint(ip[6], ==, 17);
    g_assert_cmpuint(ip[7], ==, g->hop_limit);
    g_assert_cmpmem(ip + 8, 16, sgid, 16);
    g_assert_cmpmem(ip + 24, 16, dgid, 16);
}

/* The last frame device @dev sent is a good RoCEv2/IPv6 frame as above */
static void check_last_frame6(Pair *p, int dev, const End *from,
                              const End *to, const Grh6 *g)
{
    GByteArray *f = p->w.last[dev];
    QhcaRocePkt pkt;

    g_assert_nonnull(f);
    g_assert_cmpint(qhca_roce_parse(f->data, f->len, &pkt), ==,
                    QHCA_ROCE_OK);
    g_assert_true(pkt.hdr.ipv6);
    g_assert_cmphex(lduw_be_p(f->data + 12), ==, 0x86dd);
    /* over IPv6 the UDP checksum is there (and right: parsed above) */
    g_assert_cmphex(pkt.udp_csum, !=, 0);
    check_ip6_hdr(f->data + 14, from, to, g);
}

/*
 * RC between the devices over their IPv6 link-local GIDs: SEND with
 * immediate over several packets, 64 KiB RDMA WRITE and READ, both ways,
 * every frame IPv6 with the QP's traffic class, flow label and hop limit;
 * the IPv4 GIDs beside them stay unused
 */
static void test_ipv6_rc(void)
{
    static const Grh6 ga = { .tclass = 0x28, .hop_limit = 7,
                             .flow_label = 0x12345 };
    static const Grh6 gb = { .tclass = 0x60, .hop_limit = 255,
                             .flow_label = 0xfffff };
    const uint32_t len = 64 << 10;
    g_autofree uint8_t *out = g_malloc(len);
    g_autofree uint8_t *in = g_malloc(len);
    Pair p;
    End a, b;
    Mr ma, mb;
    struct qhca_sge s;
    struct qhca_send_wqe w;
    struct qhca_cqe c;

    pair_start(&p, WIRE_PASS);
    end_create(&a, &p.a, QHCA_QPT_RC, IP_A, mac_a, false);
    end_create(&b, &p.b, QHCA_QPT_RC, IP_B, mac_b, false);
    add_gid6(&a);
    add_gid6(&b);
    rc_connect6(&a, &b, &ga);
    rc_connect6(&b, &a, &gb);
    ma = mr_reg(&p.a, a.pdn, len, ALL_ACCESS, 0x10000);
    mb = mr_reg(&p.b, b.pdn, len, ALL_ACCESS, 0x20000);
    fill(out, len, 61);
    mr_io(&p.a, &ma, 0, out, len, true);

    /* SEND of 3000 bytes (three packets at 1024) with immediate */
    s = sge(&mb, 0, len);
    post_recv(&b, 0x601, &s, 1);
    w = wqe(QHCA_WQE_SEND_WITH_IMM, 0x602);
    memcpy(w.imm_data, "\x06\x06\x06\x06", 4);
    s = sge(&ma, 0, 3000);
    post_send(&a, &w, &s, 1, NULL, 0);
    c = poll_cq(&b);
    g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 0x601);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
    g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, 3000);
    g_assert_cmpmem(c.imm_data, 4, "\x06\x06\x06\x06", 4);
    expect_cqe(&a, 0x602, QHCA_CQE_SUCCESS, QHCA_CQE_OP_SEND);
    mr_io(&p.b, &mb, 0, in, 3000, false);
    g_assert_cmpmem(in, 3000, out, 3000);
    check_last_frame6(&p, 0, &a, &b, &ga);
    check_last_frame6(&p, 1, &b, &a, &gb);      /* B's ACK */

    /* RDMA WRITE 64 KiB into B, READ it back into A's second half */
    w = wqe(QHCA_WQE_RDMA_WRITE, 0x603);
    w.rdma.remote_addr = cpu_to_le64(mb.iova);
    w.rdma.rkey = cpu_to_le32(mb.key);
    s = sge(&ma, 0, len / 2);
    post_send(&a, &w, &s, 1, NULL, 0);
    expect_cqe(&a, 0x603, QHCA_CQE_SUCCESS, QHCA_CQE_OP_RDMA_WRITE);
    w = wqe(QHCA_WQE_RDMA_READ, 0x604);
    w.rdma.remote_addr = cpu_to_le64(mb.iova);
    w.rdma.rkey = cpu_to_le32(mb.key);
    s = sge(&ma, len / 2, len / 2);
    post_send(&a, &w, &s, 1, NULL, 0);
    expect_cqe(&a, 0x604, QHCA_CQE_SUCCESS, QHCA_CQE_OP_RDMA_READ);
    mr_io(&p.a, &ma, len / 2, in, len / 2, false);
    g_assert_cmpmem(in, len / 2, out, len / 2);
    check_last_frame6(&p, 1, &b, &a, &gb);      /* B's READ response */

    /* and B to A */
    s = sge(&ma, 0, 100);
    post_recv(&a, 0x605, &s, 1);
    w = wqe(QHCA_WQE_SEND, 0x606);
    s = sge(&mb, 0, 100);
    post_send(&b, &w, &s, 1, NULL, 0);
    expect_cqe(&a, 0x605, QHCA_CQE_SUCCESS, QHCA_CQE_OP_RECV);
    expect_cqe(&b, 0x606, QHCA_CQE_SUCCESS, QHCA_CQE_OP_SEND);
    check_last_frame6(&p, 1, &b, &a, &gb);

    g_assert_cmpuint(qhca_rd(&p.a, QHCA_REG_STAT_RX_DROPPED), ==, 0);
    g_assert_cmpuint(qhca_rd(&p.b, QHCA_REG_STAT_RX_DROPPED), ==, 0);
    g_assert_cmpuint(qhca_rd(&p.a, QHCA_REG_STAT_RETRANSMITS), ==, 0);
    g_assert_cmpuint(qp_state(&a), ==, QHCA_QPS_RTS);
    g_assert_cmpuint(qp_state(&b), ==, QHCA_QPS_RTS);
    pair_stop(&p);
}

static uint32_t mk_ah6(End *e, const End *to, const Grh6 *g, uint8_t sgid)
{
    struct qhca_cmd_create_ah ah = { 0 };

    ah.pdn = cpu_to_le32(e->pdn);
    ah.sgid_index = sgid;
    ah.hop_limit = g->hop_limit;
    ah.traffic_class = g->tclass;
    ah.flow_label = cpu_to_le32(g->flow_label);
    gid6_of(ah.dgid, to->mac);
    memcpy(ah.dmac, to->mac, 6);
    return qhca_cmd_ok(e->d, QHCA_CMD_CREATE_AH, &ah, sizeof(ah));
}

/*
 * UD over IPv6: the receive buffer's 40-byte GRH area holds the IPv6
 * header as received (the GRH's own layout), the CQE says RoCEv2/IPv6
 * (network_hdr_type 3); an IPv4 AH on the same QPs still gives type 2;
 * an AH whose GIDs are of two IP versions is refused, and a UD WQE whose
 * AH's source GID went away (or turned IPv4) completes in error
 */
static void test_ipv6_ud(void)
{
    static const Grh6 g = { .tclass = 0x44, .hop_limit = 9,
                            .flow_label = 0xfedcb };
    uint8_t out[300], in[40 + 300], gid[16];
    Pair p;
    End a, b;
    Mr ma, mb;
    struct qhca_sge s;
    struct qhca_send_wqe w;
    struct qhca_cqe c;
    struct qhca_cmd_create_ah bad = { 0 };
    uint32_t ahn6, ahn4;

    pair_start(&p, WIRE_PASS);
    end_create(&a, &p.a, QHCA_QPT_UD, IP_A, mac_a, false);
    end_create(&b, &p.b, QHCA_QPT_UD, IP_B, mac_b, false);
    add_gid6(&a);
    add_gid6(&b);
    ud_up(&a, 0x1234, true);
    ud_up(&b, 0x1234, true);
    ahn6 = mk_ah6(&a, &b, &g, GID6_INDEX);
    ahn4 = ud_ah(&a, IP_B, mac_b);
    ma = mr_reg(&p.a, a.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    mb = mr_reg(&p.b, b.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    fill(out, sizeof(out), 66);
    mr_io(&p.a, &ma, 0, out, sizeof(out), true);

    s = sge(&mb, 0, sizeof(in));
    post_recv(&b, 0x661, &s, 1);
    w = ud_wqe(QHCA_WQE_SEND, 0x662, ahn6, b.qpn, 0x1234);
    s = sge(&ma, 0, sizeof(out));
    post_send(&a, &w, &s, 1, NULL, 0);
    expect_cqe(&a, 0x662, QHCA_CQE_SUCCESS, QHCA_CQE_OP_SEND);
    c = poll_cq(&b);
    g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 0x661);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
    g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, 40 + sizeof(out));
    g_assert_cmpuint(le32_to_cpu(c.src_qp), ==, a.qpn);
    g_assert_true(c.flags & QHCA_CQE_GRH);
    g_assert_cmpuint(c.network_hdr_type, ==, QHCA_NET_ROCE_V2_IPV6);
    mr_io(&p.b, &mb, 0, in, sizeof(in), false);
    check_ip6_hdr(in, &a, &b, &g);
    /* payload length: UDP 8 + BTH 12 + DETH 8 + 300 + ICRC 4 */
    g_assert_cmpuint(lduw_be_p(in + 4), ==, 8 + 12 + 8 + 300 + 4);
    g_assert_cmpmem(in + 40, sizeof(out), out, sizeof(out));
    check_last_frame6(&p, 0, &a, &b, &g);

    /* The same QPs over IPv4: type 2, the IPv4 header in bytes 20..39 */
    memset(in, 0xee, sizeof(in));
    mr_io(&p.b, &mb, 0, in, sizeof(in), true);
    s = sge(&mb, 0, sizeof(in));
    post_recv(&b, 0x663, &s, 1);
    w = ud_wqe(QHCA_WQE_SEND, 0x664, ahn4, b.qpn, 0x1234);
    s = sge(&ma, 0, sizeof(out));
    post_send(&a, &w, &s, 1, NULL, 0);
    expect_cqe(&a, 0x664, QHCA_CQE_SUCCESS, QHCA_CQE_OP_SEND);
    c = poll_cq(&b);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
    g_assert_cmpuint(c.network_hdr_type, ==, QHCA_NET_ROCE_V2_IPV4);
    mr_io(&p.b, &mb, 0, in, sizeof(in), false);
    g_assert_cmphex(in[0] | in[19], ==, 0);
    g_assert_cmphex(in[20], ==, 0x45);

    /* An AH from the IPv4 GID to an IPv6 one, or the reverse: refused */
    bad.pdn = cpu_to_le32(a.pdn);
    bad.sgid_index = 0;
    gid6_of(bad.dgid, mac_b);
    g_assert_cmpint(qhca_cmd_post(&p.a, QHCA_CMD_CREATE_AH, &bad,
                                  sizeof(bad), NULL), ==, QHCA_CMD_ERR_PARAM);
    bad.sgid_index = GID6_INDEX;
    memset(bad.dgid, 0, 16);
    bad.dgid[10] = bad.dgid[11] = 0xff;
    stl_be_p(&bad.dgid[12], IP_B);
    g_assert_cmpint(qhca_cmd_post(&p.a, QHCA_CMD_CREATE_AH, &bad,
                                  sizeof(bad), NULL), ==, QHCA_CMD_ERR_PARAM);
    /* ... but to a multicast group, yes: a UD destination (/qhca/mcast/) */
    memset(bad.dgid, 0, 16);
    bad.dgid[0] = 0xff;
    bad.dgid[1] = 0x02;
    bad.dgid[15] = 1;
    g_assert_cmpint(qhca_cmd_obj(&p.a, QHCA_CMD_DESTROY_AH,
                                 qhca_cmd_ok(&p.a, QHCA_CMD_CREATE_AH, &bad,
                                             sizeof(bad))), ==, QHCA_CMD_OK);

    /*
     * A's IPv6 GID becomes an IPv4 one under the AH: the WQE completes
     * with a local QP operation error and nothing goes out
     */
    memset(gid, 0, 16);
    gid[10] = gid[11] = 0xff;
    stl_be_p(&gid[12], IP_A);
    g_assert_cmpint(add_gid_raw(&p.a, GID6_INDEX, gid), ==, QHCA_CMD_OK);
    w = ud_wqe(QHCA_WQE_SEND, 0x665, ahn6, b.qpn, 0x1234);
    post_send(&a, &w, &s, 1, NULL, 0);
    c = poll_cq(&a);
    g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 0x665);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_LOC_QP_OP_ERR);
    g_assert_true(cq_idle(&b, 50));
    pair_stop(&p);
}

/* Two RC QPs of device A connected over A's own IPv6 GID (loopback) */
static void test_ipv6_loopback(void)
{
    static const Grh6 g = { .tclass = 0, .hop_limit = 64 };
    uint8_t out[2000], in[2000];
    Pair p;
    End a1, a2;
    Mr m, m2;
    struct qhca_sge s;
    struct qhca_send_wqe w;
    uint32_t loops;

    pair_start(&p, WIRE_PASS);
    end_create(&a1, &p.a, QHCA_QPT_RC, IP_A, mac_a, false);
    end_create(&a2, &p.a, QHCA_QPT_RC, IP_A, mac_a, false);
    add_gid6(&a1);
    rc_connect6(&a1, &a2, &g);
    rc_connect6(&a2, &a1, &g);
    m = mr_reg(&p.a, a1.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x3000);
    m2 = mr_reg(&p.a, a2.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x3000);
    fill(out, sizeof(out), 67);
    mr_io(&p.a, &m, 0, out, sizeof(out), true);
    loops = qhca_rd(&p.a, QHCA_REG_STAT_LOOPBACK);
    s = sge(&m2, 0, sizeof(in));
    post_recv(&a2, 0x671, &s, 1);
    w = wqe(QHCA_WQE_SEND, 0x672);
    s = sge(&m, 0, sizeof(out));
    post_send(&a1, &w, &s, 1, NULL, 0);
    expect_cqe(&a2, 0x671, QHCA_CQE_SUCCESS, QHCA_CQE_OP_RECV);
    expect_cqe(&a1, 0x672, QHCA_CQE_SUCCESS, QHCA_CQE_OP_SEND);
    mr_io(&p.a, &m2, 0, in, sizeof(in), false);
    g_assert_cmpmem(in, sizeof(in), out, sizeof(out));
    /* two data packets and an ACK went round inside the device */
    g_assert_cmpuint(qhca_rd(&p.a, QHCA_REG_STAT_LOOPBACK) - loops, >=, 3);
    g_assert_cmpuint(qhca_rd(&p.a, QHCA_REG_STAT_RX_DROPPED), ==, 0);
    pair_stop(&p);
}

/*
 * Hostile IPv6 input to an RC QP connected over IPv6: frames from or to
 * the wrong address, of the other IP version, with an IPv4-mapped or a
 * multicast address, an extension header, a wrong UDP checksum or
 * payload length, and every truncation of a good frame are all dropped
 * and counted without a completion; then the real peer gets through
 */
static void test_ipv6_hostile_frames(void)
{
    static const Grh6 g = { .tclass = 0, .hop_limit = 64 };
    static const uint8_t payload[20] = "over IPv6, finally";
    uint8_t frame[256];
    Pair p;
    End a, b;
    Mr mb;
    struct qhca_sge s;
    QhcaRoceHdr h, h6;
    uint32_t dropped;
    int n, i;

    pair_start(&p, WIRE_BLACKHOLE);
    end_create(&a, &p.a, QHCA_QPT_RC, IP_A, mac_a, false);
    end_create(&b, &p.b, QHCA_QPT_RC, IP_B, mac_b, false);
    add_gid6(&a);
    add_gid6(&b);
    rc_connect6(&a, &b, &g);
    rc_connect6(&b, &a, &g);
    mb = mr_reg(&p.b, b.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    s = sge(&mb, 0, 64);
    post_recv(&b, 0x681, &s, 1);
    dropped = qhca_rd(&p.b, QHCA_REG_STAT_RX_DROPPED);

    /* IPv4 between the two devices' IPv4 GIDs: not the QP's path */
    h = hdr_from(&a, &b, QHCA_ROCE_OP_RC_SEND_ONLY, 0);
    inject(&p, 1, &h, payload, sizeof(payload));
    g_assert_true(cq_idle(&b, 100));
    g_assert_cmpuint(qhca_rd(&p.b, QHCA_REG_STAT_RX_DROPPED), ==,
                     dropped + 1);

    h6 = h;
    h6.ipv6 = true;
    h6.ttl = 64;
    gid6_of(h6.src_ip6, mac_a);
    gid6_of(h6.dst_ip6, mac_b);
    /* from another link-local address */
    h = h6;
    h.src_ip6[15] ^= 0x40;
    inject(&p, 1, &h, payload, sizeof(payload));
    /* to an IPv6 address B does not have */
    h = h6;
    h.dst_ip6[8] ^= 0x02;
    inject(&p, 1, &h, payload, sizeof(payload));
    /* to B's IPv4 GID as an IPv4-mapped address in an IPv6 header */
    h = h6;
    memset(h.dst_ip6, 0, 16);
    h.dst_ip6[10] = h.dst_ip6[11] = 0xff;
    stl_be_p(&h.dst_ip6[12], IP_B);
    n = qhca_roce_build(frame, sizeof(frame), &h, payload, sizeof(payload));
    g_assert_cmpint(n, >, 0);
    wire_write(p.w.fd[1], frame, n);
    /* from a multicast address */
    h = h6;
    h.src_ip6[0] = 0xff;
    n = qhca_roce_build(frame, sizeof(frame), &h, payload, sizeof(payload));
    wire_write(p.w.fd[1], frame, n);
    g_assert_true(cq_idle(&b, 100));
    g_assert_cmpuint(qhca_rd(&p.b, QHCA_REG_STAT_RX_DROPPED), ==,
                     dropped + 5);

    /* a good frame, spoiled: UDP checksum, next header, payload length */
    n = qhca_roce_build(frame, sizeof(frame), &h6, payload, sizeof(payload));
    g_assert_cmpint(n, >, 0);
    frame[14 + 40 + 6] ^= 0x01;
    wire_write(p.w.fd[1], frame, n);
    frame[14 + 40 + 6] ^= 0x01;
    frame[14 + 6] = 0;                  /* hop-by-hop options header */
    wire_write(p.w.fd[1], frame, n);
    frame[14 + 6] = 17;
    stw_be_p(frame + 14 + 4, n - 54 + 8);
    wire_write(p.w.fd[1], frame, n);
    stw_be_p(frame + 14 + 4, n - 54);
    /* every truncation of it */
    for (i = 1; i < n; i++) {
        wire_write(p.w.fd[1], frame, i);
    }
    g_assert_true(cq_idle(&b, 100));
    g_assert_cmpuint(qhca_rd(&p.b, QHCA_REG_STAT_RX_DROPPED), ==,
                     dropped + 5 + 3 + (n - 1));
    g_assert_cmpuint(qhca_rd(&p.b, QHCA_REG_STAT_RX_BAD_ICRC), ==, 0);

    /* the unspoiled frame is taken */
    wire_write(p.w.fd[1], frame, n);
    expect_cqe(&b, 0x681, QHCA_CQE_SUCCESS, QHCA_CQE_OP_RECV);
    pair_stop(&p);
}

/*
 * Hostile IPv6 input to a UD QP, which has no path to check: an IPv6
 * header whose destination is the device's IPv4 GID written IPv4-mapped
 * (::ffff:198.18.0.2, byte for byte a GID in B's table), or whose source
 * is multicast or unspecified, is dropped by the parser; a good frame from
 * any unicast address is taken, its header in the GRH area as sent
 */
static void test_ipv6_ud_hostile(void)
{
    static const uint8_t payload[64] = "UD over IPv6";
    uint8_t in[40 + sizeof(payload)];
    Pair p;
    End a, b;
    Mr mb;
    struct qhca_sge s;
    struct qhca_cqe c;
    QhcaRoceHdr h, h6;
    uint32_t dropped;

    pair_start(&p, WIRE_BLACKHOLE);
    end_create(&a, &p.a, QHCA_QPT_UD, IP_A, mac_a, false);
    end_create(&b, &p.b, QHCA_QPT_UD, IP_B, mac_b, false);
    add_gid6(&b);
    ud_up(&b, 0x4444, true);
    mb = mr_reg(&p.b, b.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    s = sge(&mb, 0, sizeof(in));
    post_recv(&b, 0x691, &s, 1);
    dropped = qhca_rd(&p.b, QHCA_REG_STAT_RX_DROPPED);

    h6 = hdr_from(&a, &b, QHCA_ROCE_OP_UD_SEND_ONLY, 0);
    h6.ipv6 = true;
    h6.tos = 0x10;
    h6.flow_label = 0x54321;
    h6.deth.qkey = 0x4444;
    h6.deth.src_qp = a.qpn;
    gid6_of(h6.src_ip6, mac_a);
    gid6_of(h6.dst_ip6, mac_b);

    h = h6;
    memset(h.dst_ip6, 0, 16);
    h.dst_ip6[10] = h.dst_ip6[11] = 0xff;
    stl_be_p(&h.dst_ip6[12], IP_B);
    inject(&p, 1, &h, payload, sizeof(payload));
    h = h6;
    h.src_ip6[0] = 0xff;
    inject(&p, 1, &h, payload, sizeof(payload));
    h = h6;
    memset(h.src_ip6, 0, 16);
    inject(&p, 1, &h, payload, sizeof(payload));
    g_assert_true(cq_idle(&b, 100));
    g_assert_cmpuint(qhca_rd(&p.b, QHCA_REG_STAT_RX_DROPPED), ==,
                     dropped + 3);

    /* a global address no QP of B's knows: UD takes it */
    h = h6;
    h.src_ip6[0] = 0x20;
    h.src_ip6[1] = 0x01;
    inject(&p, 1, &h, payload, sizeof(payload));
    c = poll_cq(&b);
    g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 0x691);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
    g_assert_cmpuint(c.network_hdr_type, ==, QHCA_NET_ROCE_V2_IPV6);
    g_assert_cmpuint(le32_to_cpu(c.src_qp), ==, a.qpn);
    mr_io(&p.b, &mb, 0, in, sizeof(in), false);
    g_assert_cmphex(ldl_be_p(in), ==, 0x6 << 28 | 0x10 << 20 | 0x54321);
    g_assert_cmpmem(in + 8, 16, h.src_ip6, 16);
    g_assert_cmpmem(in + 24, 16, h.dst_ip6, 16);
    g_assert_cmpmem(in + 40, sizeof(payload), payload, sizeof(payload));
    pair_stop(&p);
}

/*
 * Commands: ADD_GID takes IPv4-mapped and IPv6 unicast GIDs only;
 * MODIFY_QP refuses a path whose destination is not of the source GID's
 * IP version or not unicast
 */
static void test_ipv6_bad_gids(void)
{
    static const uint8_t bad[][16] = {
        { 0 },                                  /* :: */
        { [15] = 1 },                           /* ::1 */
        { 0xff, 0x02, [15] = 1 },               /* ff02::1 */
    };
    static const Grh6 g = { .hop_limit = 64 };
    struct qhca_qp_attr a = { 0 };
    Pair p;
    End e, peer;
    unsigned i;
    uint32_t errs;

    pair_start(&p, WIRE_PASS);
    end_create(&e, &p.a, QHCA_QPT_RC, IP_A, mac_a, false);
    end_create(&peer, &p.b, QHCA_QPT_RC, IP_B, mac_b, false);
    errs = qhca_rd(&p.a, QHCA_REG_STAT_GUEST_ERRORS);
    for (i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_assert_cmpint(add_gid_raw(&p.a, 2, bad[i]), ==,
                        QHCA_CMD_ERR_PARAM);
    }
    g_assert_cmpuint(qhca_rd(&p.a, QHCA_REG_STAT_GUEST_ERRORS), ==,
                     errs + G_N_ELEMENTS(bad));
    /* index 2 stayed empty: a path from it is refused */
    a.qp_state = QHCA_QPS_INIT;
    g_assert_cmpint(qhca_modify_qp(e.d, e.qpn, M(STATE) | M(PKEY_INDEX) |
                                   M(PORT) | M(ACCESS_FLAGS), &a), ==,
                    QHCA_CMD_OK);
    a.qp_state = QHCA_QPS_RTR;
    a.path_mtu = 3;
    a.dest_qpn = cpu_to_le32(peer.qpn);
    path6(&a, &peer, &g);
    a.sgid_index = 2;
    g_assert_cmpint(qhca_modify_qp(e.d, e.qpn, RTR6_MASK, &a), ==,
                    QHCA_CMD_ERR_PARAM);
    /* IPv4 source, IPv6 destination */
    a.sgid_index = 0;
    g_assert_cmpint(qhca_modify_qp(e.d, e.qpn, RTR6_MASK, &a), ==,
                    QHCA_CMD_ERR_PARAM);
    /* IPv6 source, IPv4-mapped or multicast destination */
    add_gid6(&e);
    a.sgid_index = GID6_INDEX;
    memset(a.dgid, 0, 16);
    a.dgid[10] = a.dgid[11] = 0xff;
    stl_be_p(&a.dgid[12], IP_B);
    g_assert_cmpint(qhca_modify_qp(e.d, e.qpn, RTR6_MASK, &a), ==,
                    QHCA_CMD_ERR_PARAM);
    memcpy(a.dgid, bad[2], 16);
    g_assert_cmpint(qhca_modify_qp(e.d, e.qpn, RTR6_MASK, &a), ==,
                    QHCA_CMD_ERR_PARAM);
    /* and the right one is taken */
    gid6_of(a.dgid, peer.mac);
    g_assert_cmpint(qhca_modify_qp(e.d, e.qpn, RTR6_MASK, &a), ==,
                    QHCA_CMD_OK);
    pair_stop(&p);
}

#undef RTR6_MASK
#undef M

static void qhca_add_ipv6_tests(void)
{
    qtest_add_func("/qhca/ipv6/rc", test_ipv6_rc);
    qtest_add_func("/qhca/ipv6/ud", test_ipv6_ud);
    qtest_add_func("/qhca/ipv6/loopback", test_ipv6_loopback);
    qtest_add_func("/qhca/ipv6/hostile-frames", test_ipv6_hostile_frames);
    qtest_add_func("/qhca/ipv6/ud-hostile", test_ipv6_ud_hostile);
    qtest_add_func("/qhca/ipv6/bad-gids", test_ipv6_bad_gids);
}

/*
 * UD multicast (docs/hardware.md 10.3)
 */

#define GROUP_A     0xef010203      /* 239.1.2.3 */
#define GROUP_B     0xef818283      /* 239.129.130.131: MAC 01:00:5e:01:82:83 */

static void mgid4(uint8_t *g, uint32_t ip)
{
    memset(g, 0, 16);
    g[10] = g[11] = 0xff;
    stl_be_p(&g[12], ip);
}

static int mcast(End *e, uint16_t op, uint32_t qpn, const uint8_t *gid)
{
    struct qhca_cmd_mcast m = { 0 };

    m.qpn = cpu_to_le32(qpn);
    memcpy(m.gid, gid, 16);
    return qhca_cmd_post(e->d, op, &m, sizeof(m), NULL);
}

static void attach4(End *e, uint32_t group)
{
    uint8_t g[16];

    mgid4(g, group);
    g_assert_cmpint(mcast(e, QHCA_CMD_ATTACH_MCAST, e->qpn, g), ==,
                    QHCA_CMD_OK);
}

/* Expect the receive completion of a multicast SEND from @src_qp */
static void expect_mcast_recv(End *e, const Mr *m, uint64_t wr_id,
                              uint32_t src_qp, const uint8_t *out,
                              size_t len, uint32_t group)
{
    struct qhca_cqe c = poll_cq(e);
    uint8_t in[40 + 1024];

    g_assert_cmphex(le64_to_cpu(c.wr_id), ==, wr_id);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
    g_assert_cmpuint(c.opcode, ==, QHCA_CQE_OP_RECV);
    g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, 40 + len);
    g_assert_cmpuint(le32_to_cpu(c.qpn), ==, e->qpn);
    g_assert_cmpuint(le32_to_cpu(c.src_qp), ==, src_qp);
    mr_io(e->d, m, 0, in, 40 + len, false);
    g_assert_cmphex((uint32_t)ldl_be_p(in + 20 + 12), ==, IP_A);
    g_assert_cmphex((uint32_t)ldl_be_p(in + 20 + 16), ==, group);
    g_assert_cmpmem(in + 40, len, out, len);
}

/*
 * One sender on A, a group on B with two attached QPs and a third whose
 * Q_Key differs, and a QP of A itself attached: a UD SEND to the group
 * (DestQP 0xFFFFFF, the AH's MAC ignored) reaches both QPs of B with the
 * right Q_Key and, looped back, A's own; the frame on the wire has the
 * group's MAC.  After DETACH_MCAST the detached QP gets nothing and the
 * other still does; after the last detach B drops the group's frames.
 */
static void test_mcast_ud(void)
{
    Pair p;
    End u, a2, r1, r2, r3;
    Mr mu, ma2, m1, m2, m3;
    struct qhca_cmd_create_ah ah = { 0 };
    struct qhca_send_wqe w;
    struct qhca_sge s;
    uint8_t out[1024], g[16];
    static const uint8_t gmac[6] = { 0x01, 0x00, 0x5e, 0x01, 0x02, 0x03 };
    const uint8_t *f;
    uint32_t ahn, dropped;

    pair_start(&p, WIRE_PASS);
    end_create(&u, &p.a, QHCA_QPT_UD, IP_A, mac_a, false);
    end_create(&a2, &p.a, QHCA_QPT_UD, IP_A, mac_a, false);
    end_create(&r1, &p.b, QHCA_QPT_UD, IP_B, mac_b, false);
    end_create(&r2, &p.b, QHCA_QPT_UD, IP_B, mac_b, false);
    end_create(&r3, &p.b, QHCA_QPT_UD, IP_B, mac_b, false);
    ud_up(&u, 0x1234, true);
    ud_up(&a2, 0x1234, true);
    ud_up(&r1, 0x1234, true);
    ud_up(&r2, 0x1234, true);
    ud_up(&r3, 0x4321, true);
    attach4(&a2, GROUP_A);
    attach4(&r1, GROUP_A);
    attach4(&r2, GROUP_A);
    attach4(&r3, GROUP_A);
    /* twice is fine */
    attach4(&r2, GROUP_A);

    ah.pdn = cpu_to_le32(u.pdn);
    ah.hop_limit = 64;
    mgid4(ah.dgid, GROUP_A);
    memcpy(ah.dmac, mac_b, 6);      /* wrong: the device uses the group's */
    ahn = qhca_cmd_ok(u.d, QHCA_CMD_CREATE_AH, &ah, sizeof(ah));
    mu = mr_reg(&p.a, u.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    ma2 = mr_reg(&p.a, a2.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    m1 = mr_reg(&p.b, r1.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    m2 = mr_reg(&p.b, r2.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    m3 = mr_reg(&p.b, r3.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    fill(out, sizeof(out), 31);
    mr_io(&p.a, &mu, 0, out, sizeof(out), true);
    s = sge(&ma2, 0, 40 + sizeof(out));
    post_recv(&a2, 0xa2, &s, 1);
    s = sge(&m1, 0, 40 + sizeof(out));
    post_recv(&r1, 0xb1, &s, 1);
    s = sge(&m2, 0, 40 + sizeof(out));
    post_recv(&r2, 0xb2, &s, 1);
    s = sge(&m3, 0, 40 + sizeof(out));
    post_recv(&r3, 0xb3, &s, 1);

    w = ud_wqe(QHCA_WQE_SEND, 0x51, ahn, QHCA_MCAST_QPN, 0x1234);
    s = sge(&mu, 0, sizeof(out));
    post_send(&u, &w, &s, 1, NULL, 0);
    expect_cqe(&u, 0x51, QHCA_CQE_SUCCESS, QHCA_CQE_OP_SEND);
    expect_mcast_recv(&r1, &m1, 0xb1, u.qpn, out, sizeof(out), GROUP_A);
    expect_mcast_recv(&r2, &m2, 0xb2, u.qpn, out, sizeof(out), GROUP_A);
    expect_mcast_recv(&a2, &ma2, 0xa2, u.qpn, out, sizeof(out), GROUP_A);
    g_assert_true(cq_idle(&r3, 50));
    g_assert_cmpuint(qhca_rd(&p.a, QHCA_REG_STAT_LOOPBACK), ==, 1);
    /* on the wire: the group's MAC and IP, DestQP 0xFFFFFF */
    f = p.w.last[0]->data;
    g_assert_cmpmem(f, 6, gmac, 6);
    g_assert_cmphex((uint32_t)ldl_be_p(f + 14 + 16), ==, GROUP_A);
    g_assert_cmphex((uint32_t)ldl_be_p(f + 14 + 20 + 8 + 4) & 0xffffff, ==,
                    QHCA_MCAST_QPN);

    /* r2 leaves: r1 still gets the group's frames, r2 nothing */
    mgid4(g, GROUP_A);
    g_assert_cmpint(mcast(&r2, QHCA_CMD_DETACH_MCAST, r2.qpn, g), ==,
                    QHCA_CMD_OK);
    g_assert_cmpint(mcast(&r2, QHCA_CMD_DETACH_MCAST, r2.qpn, g), ==,
                    QHCA_CMD_ERR_PARAM);
    s = sge(&m1, 0, 40 + sizeof(out));
    post_recv(&r1, 0xc1, &s, 1);
    s = sge(&m2, 0, 40 + sizeof(out));
    post_recv(&r2, 0xc2, &s, 1);
    fill(out, sizeof(out), 32);
    mr_io(&p.a, &mu, 0, out, sizeof(out), true);
    w = ud_wqe(QHCA_WQE_SEND, 0x52, ahn, QHCA_MCAST_QPN, 0x1234);
    s = sge(&mu, 0, sizeof(out));
    post_send(&u, &w, &s, 1, NULL, 0);
    expect_cqe(&u, 0x52, QHCA_CQE_SUCCESS, QHCA_CQE_OP_SEND);
    expect_mcast_recv(&r1, &m1, 0xc1, u.qpn, out, sizeof(out), GROUP_A);
    g_assert_true(cq_idle(&r2, 50));

    /* everybody on B leaves (r3 by its destruction): B drops the frame */
    g_assert_cmpint(mcast(&r1, QHCA_CMD_DETACH_MCAST, r1.qpn, g), ==,
                    QHCA_CMD_OK);
    g_assert_cmpint(qhca_cmd_obj(&p.b, QHCA_CMD_DESTROY_QP, r3.qpn), ==,
                    QHCA_CMD_OK);
    dropped = qhca_rd(&p.b, QHCA_REG_STAT_RX_DROPPED);
    s = sge(&m1, 0, 40 + sizeof(out));
    post_recv(&r1, 0xd1, &s, 1);
    w = ud_wqe(QHCA_WQE_SEND, 0x53, ahn, QHCA_MCAST_QPN, 0x1234);
    s = sge(&mu, 0, 100);
    post_send(&u, &w, &s, 1, NULL, 0);
    expect_cqe(&u, 0x53, QHCA_CQE_SUCCESS, QHCA_CQE_OP_SEND);
    g_assert_true(cq_idle(&r1, 50));
    g_assert_true(cq_idle(&r2, 50));
    g_assert_cmpuint(qhca_rd(&p.b, QHCA_REG_STAT_RX_DROPPED), ==, dropped + 1);
    pair_stop(&p);
}

/* The group's frame from A to B, headers only */
static QhcaRoceHdr mcast_hdr(const End *a, uint32_t group, uint32_t qkey)
{
    QhcaRoceHdr h = { 0 };
    uint8_t g[16];

    mgid4(g, group);
    qhca_roce_mcast_mac(g, h.dst_mac);
    memcpy(h.src_mac, a->mac, 6);
    h.src_ip = a->ip;
    h.dst_ip = group;
    h.ttl = 64;
    h.src_port = 0xc123;
    h.pkey = QHCA_ROCE_DEFAULT_PKEY;
    h.opcode = QHCA_ROCE_OP_UD_SEND_ONLY;
    h.dest_qp = QHCA_MCAST_QPN;
    h.deth.qkey = qkey;
    h.deth.src_qp = a->qpn;
    return h;
}

/*
 * Hostile multicast frames to B, whose UD QP is attached to a group and
 * which has an RC QP too: each is dropped and counted, nothing completes;
 * a good frame after them still arrives.  Not for a group: a DestQP other
 * than 0xFFFFFF, a MAC that is not the group's (B's own or another
 * group's), the group's MAC with a unicast IP, an RC opcode to the group
 * (IPv4: the engine; IPv6: the parser), a multicast source, a group no QP
 * is attached to; and a wrong Q_Key (dropped by the QP).
 */
static void test_mcast_hostile(void)
{
    static const uint8_t payload[64] = "multicast";
    Pair p;
    End a, b, rc;
    Mr mb;
    struct qhca_sge s;
    struct qhca_cqe c;
    QhcaRoceHdr h;
    uint32_t dropped;
    unsigned n = 0;

    pair_start(&p, WIRE_BLACKHOLE);
    end_create(&a, &p.a, QHCA_QPT_UD, IP_A, mac_a, false);
    end_create(&b, &p.b, QHCA_QPT_UD, IP_B, mac_b, false);
    end_create(&rc, &p.b, QHCA_QPT_RC, IP_B, mac_b, false);
    ud_up(&b, 0x4444, true);
    attach4(&b, GROUP_A);
    mb = mr_reg(&p.b, b.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    s = sge(&mb, 0, 40 + sizeof(payload));
    post_recv(&b, 0x71, &s, 1);
    dropped = qhca_rd(&p.b, QHCA_REG_STAT_RX_DROPPED);

    h = mcast_hdr(&a, GROUP_A, 0x4444);
    h.dest_qp = b.qpn;
    inject(&p, 1, &h, payload, sizeof(payload));
    n++;
    h = mcast_hdr(&a, GROUP_A, 0x4444);
    memcpy(h.dst_mac, mac_b, 6);
    inject(&p, 1, &h, payload, sizeof(payload));
    n++;
    h = mcast_hdr(&a, GROUP_A, 0x4444);
    h.dst_mac[5] ^= 1;
    inject(&p, 1, &h, payload, sizeof(payload));
    n++;
    h = mcast_hdr(&a, GROUP_A, 0x4444);
    h.dst_ip = IP_B;
    inject(&p, 1, &h, payload, sizeof(payload));
    n++;
    h = mcast_hdr(&a, GROUP_A, 0x4444);
    h.opcode = QHCA_ROCE_OP_RC_SEND_ONLY;
    inject(&p, 1, &h, payload, sizeof(payload));
    n++;
    h.dest_qp = rc.qpn;
    inject(&p, 1, &h, payload, sizeof(payload));
    n++;
    h = mcast_hdr(&a, GROUP_A, 0x4444);
    h.src_ip = 0xe0000001;
    inject(&p, 1, &h, payload, sizeof(payload));
    n++;
    /* 239.129.2.3 has group A's MAC (23 bits) but no QP attached */
    h = mcast_hdr(&a, 0xef810203, 0x4444);
    inject(&p, 1, &h, payload, sizeof(payload));
    n++;
    h = mcast_hdr(&a, GROUP_B, 0x4444);
    inject(&p, 1, &h, payload, sizeof(payload));
    n++;
    /* IPv6: RC to a multicast group is malformed */
    h = mcast_hdr(&a, GROUP_A, 0x4444);
    h.ipv6 = true;
    h.opcode = QHCA_ROCE_OP_RC_SEND_ONLY;
    h.dest_qp = rc.qpn;
    gid6_of(h.src_ip6, mac_a);
    memset(h.dst_ip6, 0, 16);
    h.dst_ip6[0] = 0xff;
    h.dst_ip6[1] = 0x0e;
    h.dst_ip6[15] = 0x42;
    qhca_roce_mcast_mac(h.dst_ip6, h.dst_mac);
    inject(&p, 1, &h, payload, sizeof(payload));
    n++;
    /* wrong Q_Key: the QP drops it */
    h = mcast_hdr(&a, GROUP_A, 0x4445);
    inject(&p, 1, &h, payload, sizeof(payload));
    g_assert_true(cq_idle(&b, 100));
    g_assert_true(cq_idle(&rc, 20));
    g_assert_cmpuint(qhca_rd(&p.b, QHCA_REG_STAT_RX_DROPPED), ==,
                     dropped + n);
    g_assert_cmpuint(qp_state(&rc), ==, QHCA_QPS_RESET);

    h = mcast_hdr(&a, GROUP_A, 0x4444);
    inject(&p, 1, &h, payload, sizeof(payload));
    c = poll_cq(&b);
    g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 0x71);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
    g_assert_cmpuint(le32_to_cpu(c.src_qp), ==, a.qpn);
    g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, 40 + sizeof(payload));
    pair_stop(&p);
}

/*
 * ATTACH_MCAST and DETACH_MCAST refuse what is not a UD QP and a
 * multicast GID, and hold to the limits: 16 QPs in a group, 64 groups; a
 * destroyed QP leaves its groups.  MODIFY_QP refuses a multicast path for
 * an RC QP, ADD_GID an IPv4 multicast GID; QUERY_DEVICE tells the limits.
 */
static void test_mcast_commands(void)
{
    Pair p;
    End u, rc;
    struct qhca_device_attr da;
    struct qhca_cmd_create_qp cq;
    struct qhca_cmd_mcast m = { 0 };
    struct qhca_qp_attr at = { 0 };
    uint32_t qpn[QHCA_MAX_MCAST_QP_ATTACH];
    uint8_t g[16];
    uint64_t sq, rq;
    unsigned i;

    pair_start(&p, WIRE_BLACKHOLE);
    end_create(&u, &p.a, QHCA_QPT_UD, IP_A, mac_a, false);
    end_create(&rc, &p.a, QHCA_QPT_RC, IP_A, mac_a, false);
    g_assert_cmpint(qhca_cmd_post(&p.a, QHCA_CMD_QUERY_DEVICE, NULL, 0, NULL),
                    ==, QHCA_CMD_OK);
    qtest_memread(p.a.qts, p.a.qd.resp, &da, sizeof(da));
    g_assert_true(le32_to_cpu(da.caps) & QHCA_CAP_MCAST);
    g_assert_cmpuint(le32_to_cpu(da.max_mcast_grp), ==, QHCA_MAX_MCAST_GRP);
    g_assert_cmpuint(le32_to_cpu(da.max_mcast_qp_attach), ==,
                     QHCA_MAX_MCAST_QP_ATTACH);

    mgid4(g, GROUP_A);
    /* not UD, no such QP, not a group, reserved bits */
    g_assert_cmpint(mcast(&rc, QHCA_CMD_ATTACH_MCAST, rc.qpn, g), ==,
                    QHCA_CMD_ERR_PARAM);
    g_assert_cmpint(mcast(&u, QHCA_CMD_ATTACH_MCAST, 1000, g), ==,
                    QHCA_CMD_ERR_HANDLE);
    g_assert_cmpint(mcast(&u, QHCA_CMD_ATTACH_MCAST, 0xffffffff, g), ==,
                    QHCA_CMD_ERR_HANDLE);
    mgid4(g, IP_B);
    g_assert_cmpint(mcast(&u, QHCA_CMD_ATTACH_MCAST, u.qpn, g), ==,
                    QHCA_CMD_ERR_PARAM);
    memset(g, 0, 16);
    g[0] = 0xfe;
    g[1] = 0x80;
    g_assert_cmpint(mcast(&u, QHCA_CMD_ATTACH_MCAST, u.qpn, g), ==,
                    QHCA_CMD_ERR_PARAM);
    m.qpn = cpu_to_le32(u.qpn);
    m.reserved = cpu_to_le32(1);
    mgid4(m.gid, GROUP_A);
    g_assert_cmpint(qhca_cmd_post(&p.a, QHCA_CMD_ATTACH_MCAST, &m, sizeof(m),
                                  NULL), ==, QHCA_CMD_ERR_PARAM);
    /* an IPv6 group is fine too; detach of one never attached is not */
    memset(g, 0, 16);
    g[0] = 0xff;
    g[1] = 0x0e;
    g[15] = 7;
    g_assert_cmpint(mcast(&u, QHCA_CMD_ATTACH_MCAST, u.qpn, g), ==,
                    QHCA_CMD_OK);
    g_assert_cmpint(mcast(&u, QHCA_CMD_DETACH_MCAST, u.qpn, g), ==,
                    QHCA_CMD_OK);
    g_assert_cmpint(mcast(&u, QHCA_CMD_DETACH_MCAST, u.qpn, g), ==,
                    QHCA_CMD_ERR_PARAM);

    /* 16 QPs in one group, the 17th refused; a destroyed one leaves it */
    mgid4(g, GROUP_A);
    for (i = 0; i < QHCA_MAX_MCAST_QP_ATTACH; i++) {
        cq = qhca_qp_desc(&p.a, QHCA_QPT_UD, u.pdn, u.cqn, &sq, &rq);
        qpn[i] = qhca_cmd_ok(&p.a, QHCA_CMD_CREATE_QP, &cq, sizeof(cq));
        g_assert_cmpint(mcast(&u, QHCA_CMD_ATTACH_MCAST, qpn[i], g), ==,
                        QHCA_CMD_OK);
    }
    g_assert_cmpint(mcast(&u, QHCA_CMD_ATTACH_MCAST, u.qpn, g), ==,
                    QHCA_CMD_ERR_NO_RESOURCES);
    g_assert_cmpint(qhca_cmd_obj(&p.a, QHCA_CMD_DESTROY_QP, qpn[3]), ==,
                    QHCA_CMD_OK);
    g_assert_cmpint(mcast(&u, QHCA_CMD_ATTACH_MCAST, u.qpn, g), ==,
                    QHCA_CMD_OK);
    g_assert_cmpint(mcast(&u, QHCA_CMD_ATTACH_MCAST, qpn[4], g), ==,
                    QHCA_CMD_OK);

    /* 64 groups (group A is one), the 65th refused until one is freed */
    for (i = 1; i < QHCA_MAX_MCAST_GRP; i++) {
        mgid4(g, 0xe0000100 + i);
        g_assert_cmpint(mcast(&u, QHCA_CMD_ATTACH_MCAST, u.qpn, g), ==,
                        QHCA_CMD_OK);
    }
    mgid4(g, 0xe0000100 + i);
    g_assert_cmpint(mcast(&u, QHCA_CMD_ATTACH_MCAST, u.qpn, g), ==,
                    QHCA_CMD_ERR_NO_RESOURCES);
    mgid4(g, 0xe0000101);
    g_assert_cmpint(mcast(&u, QHCA_CMD_DETACH_MCAST, u.qpn, g), ==,
                    QHCA_CMD_OK);
    mgid4(g, 0xe0000100 + i);
    g_assert_cmpint(mcast(&u, QHCA_CMD_ATTACH_MCAST, u.qpn, g), ==,
                    QHCA_CMD_OK);
    /* the UD QP's destruction frees the 63 groups it alone was in */
    g_assert_cmpint(qhca_cmd_obj(&p.a, QHCA_CMD_DESTROY_QP, u.qpn), ==,
                    QHCA_CMD_OK);
    for (i = 1; i < QHCA_MAX_MCAST_GRP; i++) {
        mgid4(g, 0xe0000200 + i);
        g_assert_cmpint(mcast(&rc, QHCA_CMD_ATTACH_MCAST, qpn[0], g), ==,
                        QHCA_CMD_OK);
    }

    /* never a connected QP's path, never a GID of the device */
    at.qp_state = QHCA_QPS_INIT;
    g_assert_cmpint(qhca_modify_qp(&p.a, rc.qpn, QHCA_QP_ATTR_STATE |
                                   QHCA_QP_ATTR_PKEY_INDEX |
                                   QHCA_QP_ATTR_PORT |
                                   QHCA_QP_ATTR_ACCESS_FLAGS, &at), ==,
                    QHCA_CMD_OK);
    at.qp_state = QHCA_QPS_RTR;
    at.path_mtu = 3;
    at.dest_qpn = cpu_to_le32(5);
    mgid4(at.dgid, GROUP_A);
    g_assert_cmpint(qhca_modify_qp(&p.a, rc.qpn, QHCA_QP_ATTR_STATE |
                                   QHCA_QP_ATTR_AV | QHCA_QP_ATTR_PATH_MTU |
                                   QHCA_QP_ATTR_DEST_QPN |
                                   QHCA_QP_ATTR_RQ_PSN |
                                   QHCA_QP_ATTR_MAX_DEST_RD_ATOMIC |
                                   QHCA_QP_ATTR_MIN_RNR_TIMER, &at), ==,
                    QHCA_CMD_ERR_PARAM);
    mgid4(g, GROUP_A);
    g_assert_cmpint(add_gid_raw(&p.a, 2, g), ==, QHCA_CMD_ERR_PARAM);
    g_assert_false(qhca_rd(&p.a, QHCA_REG_STATUS) & QHCA_STATUS_FATAL);
    pair_stop(&p);
}

/*
 * An IPv6 group (ff0e::1:42, MAC 33:33:00:01:00:42): a UD SEND from A's
 * IPv6 GID reaches B's attached QP with the IPv6 header in the GRH area;
 * an AH from the IPv4 GID to the IPv6 group is refused (two IP versions)
 */
static void test_mcast_ipv6(void)
{
    static const uint8_t gmac[6] = { 0x33, 0x33, 0x00, 0x01, 0x00, 0x42 };
    Pair p;
    End u, r;
    Mr mu, mr;
    struct qhca_cmd_create_ah ah = { 0 };
    struct qhca_send_wqe w;
    struct qhca_sge s;
    struct qhca_cqe c;
    uint8_t out[512], in[40 + 512], g[16] = { 0xff, 0x0e };
    uint8_t src[16];
    uint32_t ahn;

    g[13] = 0x01;
    g[15] = 0x42;
    pair_start(&p, WIRE_PASS);
    end_create(&u, &p.a, QHCA_QPT_UD, IP_A, mac_a, false);
    end_create(&r, &p.b, QHCA_QPT_UD, IP_B, mac_b, false);
    add_gid6(&u);
    add_gid6(&r);
    ud_up(&u, 0x66, true);
    ud_up(&r, 0x66, true);
    g_assert_cmpint(mcast(&r, QHCA_CMD_ATTACH_MCAST, r.qpn, g), ==,
                    QHCA_CMD_OK);

    ah.pdn = cpu_to_le32(u.pdn);
    ah.hop_limit = 1;
    memcpy(ah.dgid, g, 16);
    g_assert_cmpint(qhca_cmd_post(&p.a, QHCA_CMD_CREATE_AH, &ah, sizeof(ah),
                                  NULL), ==, QHCA_CMD_ERR_PARAM);
    ah.sgid_index = GID6_INDEX;
    ahn = qhca_cmd_ok(&p.a, QHCA_CMD_CREATE_AH, &ah, sizeof(ah));
    mu = mr_reg(&p.a, u.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    mr = mr_reg(&p.b, r.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    fill(out, sizeof(out), 33);
    mr_io(&p.a, &mu, 0, out, sizeof(out), true);
    s = sge(&mr, 0, sizeof(in));
    post_recv(&r, 0x91, &s, 1);
    w = ud_wqe(QHCA_WQE_SEND, 0x92, ahn, QHCA_MCAST_QPN, 0x66);
    s = sge(&mu, 0, sizeof(out));
    post_send(&u, &w, &s, 1, NULL, 0);
    expect_cqe(&u, 0x92, QHCA_CQE_SUCCESS, QHCA_CQE_OP_SEND);
    c = poll_cq(&r);
    g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 0x91);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
    g_assert_cmpuint(c.network_hdr_type, ==, QHCA_NET_ROCE_V2_IPV6);
    g_assert_cmpuint(le32_to_cpu(c.src_qp), ==, u.qpn);
    g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, 40 + sizeof(out));
    mr_io(&p.b, &mr, 0, in, sizeof(in), false);
    gid6_of(src, mac_a);
    g_assert_cmpmem(in + 8, 16, src, 16);
    g_assert_cmpmem(in + 24, 16, g, 16);
    g_assert_cmpuint(in[7], ==, 1);
    g_assert_cmpmem(in + 40, sizeof(out), out, sizeof(out));
    g_assert_cmpmem(p.w.last[0]->data, 6, gmac, 6);
    pair_stop(&p);
}

static void qhca_add_mcast_tests(void)
{
    qtest_add_func("/qhca/mcast/ipv6", test_mcast_ipv6);
    qtest_add_func("/qhca/mcast/ud", test_mcast_ud);
    qtest_add_func("/qhca/mcast/hostile", test_mcast_hostile);
    qtest_add_func("/qhca/mcast/commands", test_mcast_commands);
}

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

static void qhca_add_place_tests(void)
{
    qtest_add_func("/qhca/place/ops", test_place_ops);
    qtest_add_func("/qhca/place/errors", test_place_errors);
    qtest_add_func("/qhca/place/hostile", test_place_hostile);
}

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

static void qhca_add_mw_tests(void)
{
    qtest_add_func("/qhca/mw/type1", test_mw_type1);
    qtest_add_func("/qhca/mw/type2", test_mw_type2);
    qtest_add_func("/qhca/mw/qp-destroyed", test_mw_qp_destroyed);
    qtest_add_func("/qhca/mw/errors", test_mw_errors);
    qtest_add_func("/qhca/mw/commands", test_mw_commands);
    qtest_add_func("/qhca/mw/rereg-type1", test_mw_rereg_type1);
    qtest_add_func("/qhca/mw/rereg-type2", test_mw_rereg_type2);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    qhca_add_wire_tests();
    qhca_add_loopback_tests();
    qhca_add_uc_counter_tests();
    qhca_add_ipv6_tests();
    qhca_add_mcast_tests();
    qhca_add_place_tests();
    qhca_add_mw_tests();

    return g_test_run();
}
