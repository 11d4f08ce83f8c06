/*
 * QTest for the qhca RDMA HCA: the /qhca/wire/ cases, the transport between
 * two devices on a wire the test controls (qhca-wire.h): SEND/RECV, SRQ,
 * RDMA WRITE and READ, atomics, UD, the errors a peer reports, malformed
 * WQEs, hostile frames, RNR and retries, loss, duplication and reordering on
 * the wire
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "libqtest.h"
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

static void test_wire_read_pieces_one_resource(void)
{
    read_pieces_one_resource(WIRE_PASS);
    read_pieces_one_resource(WIRE_DROP_RANDOM);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    qtest_add_func("/qhca/wire/read-pieces-one-resource",
                   test_wire_read_pieces_one_resource);
    qtest_add_func("/qhca/wire/drop-ppm", test_wire_drop_ppm);
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

    return g_test_run();
}
