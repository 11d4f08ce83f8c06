/*
 * QTest for the qhca RDMA HCA: the /qhca/ipv6/ cases, RoCEv2 over IPv6
 * between two devices and in loopback (qhca-wire.h)
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
 * RoCEv2 over IPv6.  Each device gets the link-local
 * GID the kernel derives from its MAC (fe80::5054:ff:fe00:n for
 * 52:54:00:00:00:n) at GID6_INDEX, beside the IPv4 GID end_create() puts
 * at index 0; QPs and AHs pick one or the other.
 */

#define M(x) QHCA_QP_ATTR_##x

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

/*
 * The IPv6 header at @ip is from @from to @to with @g's fields, the
 * traffic class's ECN field ECT(0) if @ect (an RC data frame of a device
 * with ecn=on, docs/hardware.md "Congestion control")
 */
static void check_ip6_hdr(const uint8_t *ip, const End *from, const End *to,
                          const Grh6 *g, bool ect)
{
    uint8_t sgid[16], dgid[16];
    uint32_t word = ldl_be_p(ip);

    gid6_of(sgid, from->mac);
    gid6_of(dgid, to->mac);
    g_assert_cmphex(word >> 28, ==, 6);
    g_assert_cmphex((word >> 20) & 0xff, ==,
                    g->tclass | (ect ? QHCA_ROCE_ECN_ECT0 : 0));
    g_assert_cmphex(word & 0xfffff, ==, g->flow_label);
    g_assert_cmpuint(ip[6], ==, 17);
    g_assert_cmpuint(ip[7], ==, g->hop_limit);
    g_assert_cmpmem(ip + 8, 16, sgid, 16);
    g_assert_cmpmem(ip + 24, 16, dgid, 16);
}

/* The devices have ecn=on (the default) */
static bool ecn_on = true;

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
    /* RC requests and READ answers are ECN-capable; ACKs, UC, UD not */
    check_ip6_hdr(f->data + 14, from, to, g, ecn_on &&
                  !(pkt.op->flags & (QHCA_ROCE_OPF_UD | QHCA_ROCE_OPF_UC)) &&
                  ((pkt.op->flags & QHCA_ROCE_OPF_REQUEST) ||
                   ((pkt.op->flags & QHCA_ROCE_OPF_RESPONSE) &&
                    (pkt.op->flags & QHCA_ROCE_OPF_READ))));
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
/* The same with ecn=off: every frame with the QP's traffic class as is */
static void test_ipv6_rc_ecn_off(void)
{
    ecn_on = false;
    pair_dev_props = ",ecn=off";
    test_ipv6_rc();
    pair_dev_props = "";
    ecn_on = true;
}

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
    check_ip6_hdr(in, &a, &b, &g, false);
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

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    qtest_add_func("/qhca/ipv6/rc", test_ipv6_rc);
    qtest_add_func("/qhca/ipv6/rc-ecn-off", test_ipv6_rc_ecn_off);
    qtest_add_func("/qhca/ipv6/ud", test_ipv6_ud);
    qtest_add_func("/qhca/ipv6/loopback", test_ipv6_loopback);
    qtest_add_func("/qhca/ipv6/hostile-frames", test_ipv6_hostile_frames);
    qtest_add_func("/qhca/ipv6/ud-hostile", test_ipv6_ud_hostile);
    qtest_add_func("/qhca/ipv6/bad-gids", test_ipv6_bad_gids);

    return g_test_run();
}
