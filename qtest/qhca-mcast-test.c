/*
 * QTest for the qhca RDMA HCA: the /qhca/mcast/ cases, UD multicast between
 * two devices and in loopback (qhca-wire.h)
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

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    qtest_add_func("/qhca/mcast/ipv6", test_mcast_ipv6);
    qtest_add_func("/qhca/mcast/ud", test_mcast_ud);
    qtest_add_func("/qhca/mcast/hostile", test_mcast_hostile);
    qtest_add_func("/qhca/mcast/commands", test_mcast_commands);

    return g_test_run();
}
