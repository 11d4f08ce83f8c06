/*
 * Unit tests of the RoCEv2 wire library (hw/qhca-roce.c), part of
 * test-qhca-roce (its main() and shared helpers: test-qhca-roce.c,
 * roce-test.h).
 *
 * RoCEv2 over IPv6: a known frame, the ICRC's masked fields, round trips,
 * build and parse errors, truncations, bit flips, and GIDs.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <glib.h>
#include "qhca-roce.h"
#include "roce-test.h"

/* ---- RoCEv2 over IPv6 ---- */

/*
 * A UD SEND_ONLY over IPv6 between two link-local addresses, byte for byte:
 * traffic class 0x12, flow label 0xabcde, hop limit 64.  The ICRC
 * (0x41c96638) and the UDP checksum (0x3172) were computed by a Python
 * model of Annex A17 and RFC 8200 (zlib.crc32 over the masked
 * pseudo-packet, as tests/unit/icrc-check.py does), not by this library.
 */
static const uint8_t ip6_ud_frame[] = {
    /* Ethernet */
    0x52, 0x54, 0x00, 0x00, 0x00, 0x02, 0x52, 0x54, 0x00, 0x00, 0x00, 0x01,
    0x86, 0xdd,
    /* IPv6: 6, tclass 0x12, flow 0xabcde, plen 36, UDP, hop limit 64 */
    0x61, 0x2a, 0xbc, 0xde, 0x00, 0x24, 0x11, 0x40,
    0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x50, 0x54, 0x00, 0xff, 0xfe, 0x00, 0x00, 0x01,
    0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x50, 0x54, 0x00, 0xff, 0xfe, 0x00, 0x00, 0x02,
    /* UDP: 0xc123 -> 4791, len 36, checksum */
    0xc1, 0x23, 0x12, 0xb7, 0x00, 0x24, 0x31, 0x72,
    /* BTH: UD_SEND_ONLY, pkey, QP 0x000102, PSN 5 */
    0x64, 0x00, 0xff, 0xff, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x05,
    /* DETH: Q_Key 0x11112222, source QP 3 */
    0x11, 0x11, 0x22, 0x22, 0x00, 0x00, 0x00, 0x03,
    'a', 'b', 'c', 'd',
    /* ICRC, little-endian */
    0x38, 0x66, 0xc9, 0x41,
};

static void ip6_ud_hdr(QhcaRoceHdr *h)
{
    static const uint8_t src[16] = { 0xfe, 0x80, 0, 0, 0, 0, 0, 0,
                                     0x50, 0x54, 0x00, 0xff, 0xfe, 0, 0, 1 };
    static const uint8_t dst[16] = { 0xfe, 0x80, 0, 0, 0, 0, 0, 0,
                                     0x50, 0x54, 0x00, 0xff, 0xfe, 0, 0, 2 };

    memset(h, 0, sizeof(*h));
    memcpy(h->dst_mac, ip6_ud_frame, 6);
    memcpy(h->src_mac, ip6_ud_frame + 6, 6);
    h->ipv6 = true;
    memcpy(h->src_ip6, src, 16);
    memcpy(h->dst_ip6, dst, 16);
    h->tos = 0x12;
    h->flow_label = 0xabcde;
    h->ttl = 64;
    h->ip_id = 0x5555;              /* not used over IPv6 */
    h->src_port = 0xc123;
    h->opcode = QHCA_ROCE_OP_UD_SEND_ONLY;
    h->pkey = 0xffff;
    h->dest_qp = 0x102;
    h->psn = 5;
    h->deth.qkey = 0x11112222;
    h->deth.src_qp = 3;
}

void test_ip6_known_frame(void)
{
    size_t len = sizeof(ip6_ud_frame);
    uint8_t f[sizeof(ip6_ud_frame)];
    QhcaRoceHdr h;
    QhcaRocePkt pkt;
    int r;

    ip6_ud_hdr(&h);
    CHECK_EQ(qhca_roce_frame_len_hdr(&h, 4), len);
    CHECK_EQ(qhca_roce_frame_len_hdr(&h, 4), qhca_roce_frame_len(h.opcode, 4) +
             20);
    r = qhca_roce_build(f, sizeof(f), &h, "abcd", 4);
    CHECK_EQ(r, len);
    for (r = 0; r < (int)len; r++) {
        if (f[r] != ip6_ud_frame[r]) {
            printf("# byte %d: 0x%02x, expected 0x%02x\n", r, f[r],
                   ip6_ud_frame[r]);
            case_failed = true;
        }
    }
    CHECK_EQ(qhca_roce_icrc(ip6_ud_frame, len), 0x41c96638);
    CHECK_EQ(parse_exact(ip6_ud_frame, len, &pkt), QHCA_ROCE_OK);
    CHECK(pkt.hdr.ipv6);
    CHECK(memcmp(pkt.hdr.src_ip6, h.src_ip6, 16) == 0);
    CHECK(memcmp(pkt.hdr.dst_ip6, h.dst_ip6, 16) == 0);
    CHECK_EQ(pkt.hdr.tos, 0x12);
    CHECK_EQ(pkt.hdr.flow_label, 0xabcde);
    CHECK_EQ(pkt.hdr.ttl, 64);
    CHECK_EQ(pkt.hdr.src_ip | pkt.hdr.dst_ip | pkt.hdr.ip_id, 0);
    CHECK_EQ(pkt.ip_len, 76);
    CHECK_EQ(pkt.udp_off, 54);
    CHECK_EQ(pkt.udp_csum, 0x3172);
    CHECK_EQ(pkt.bth_off, 62);
    CHECK_EQ(pkt.ext_off[QHCA_ROCE_EXT_DETH], 74);
    CHECK_EQ(pkt.payload_off, 82);
    CHECK_EQ(pkt.payload_len, 4);
    CHECK_EQ(pkt.hdr.deth.qkey, 0x11112222);
    CHECK_EQ(pkt.hdr.deth.src_qp, 3);
    pcap_record(ip6_ud_frame, len, len);
}

/*
 * Over IPv6 the ICRC leaves out the traffic class, flow label and hop
 * limit (A17.8: set to all ones) and the UDP checksum; the version, the
 * payload length, the next header and the addresses are in it
 */
void test_ip6_icrc_masked_fields(void)
{
    size_t len = sizeof(ip6_ud_frame);
    uint32_t icrc = qhca_roce_icrc(ip6_ud_frame, len);
    uint8_t f[sizeof(ip6_ud_frame)];
    size_t i;
    int bit;

    for (i = 0; i < len - 4; i++) {
        for (bit = 0; bit < 8; bit++) {
            bool is_masked = i < 14 ||                  /* Ethernet */
                             (i == 14 && bit < 4) ||    /* tclass high */
                             (i >= 15 && i <= 17) ||    /* tclass, flow */
                             i == 21 ||                 /* hop limit */
                             i == 60 || i == 61 ||      /* UDP checksum */
                             i == 66;                   /* BTH resv8a */

            memcpy(f, ip6_ud_frame, len);
            f[i] ^= 1 << bit;
            if (i == 12 || i == 13) {
                continue;           /* the Ethertype picks the layout */
            }
            if (is_masked) {
                CHECK_EQ(qhca_roce_icrc(f, len), icrc);
            } else {
                CHECK(qhca_roce_icrc(f, len) != icrc);
            }
        }
    }
    /* An IPv4 frame's masks do not apply at IPv6 offsets, and back */
    memcpy(f, ip6_ud_frame, len);
    f[14 + 1 + 8] ^= 0xff;          /* IPv4's TTL offset: a source byte */
    CHECK(qhca_roce_icrc(f, len) != icrc);
}

/* Make base an IPv6 frame (ICRC and UDP checksum right) */
static void make_base6(uint8_t opcode, size_t payload_len)
{
    use_ip6 = true;
    make_base(opcode, payload_len);
    use_ip6 = false;
}

void test_ip6_parse_errors(void)
{
    static const uint8_t bad_addrs[][16] = {
        { 0 },                                          /* :: */
        { [15] = 1 },                                   /* ::1 */
        { 0xff, 0x02, [15] = 1 },                       /* ff02::1 */
        { 0xff, 0x0e, [15] = 0x42 },                    /* ff0e::42 */
        { [10] = 0xff, 0xff, 10, 0, 0, 1 },             /* ::ffff:10.0.0.1 */
    };
    size_t len, i;
    QhcaRocePkt pkt;

    make_base6(QHCA_ROCE_OP_RC_SEND_ONLY, 5);
    len = base_len;
    CHECK_EQ(len, 14 + 40 + 8 + 12 + 8 + 4);
    CHECK_EQ(parse_base(len), QHCA_ROCE_OK);
    CHECK_EQ(parse_base(61), QHCA_ROCE_ERR_TOO_SHORT);
    CHECK_EQ(parse_base(62), QHCA_ROCE_ERR_IP_TOTAL_LEN);

    /* The version must match the Ethertype */
    base[14] = 0x40 | (base[14] & 0xf);
    CHECK_EQ(parse_base(len), QHCA_ROCE_ERR_IP_VERSION);
    make_base6(QHCA_ROCE_OP_RC_SEND_ONLY, 5);
    put_be16(base + 12, 0x0800);
    CHECK_EQ(parse_base(len), QHCA_ROCE_ERR_IP_VERSION);

    /* Payload length: shorter than UDP, past the frame, a jumbogram's 0 */
    make_base6(QHCA_ROCE_OP_RC_SEND_ONLY, 5);
    put_be16(base + 18, 7);
    CHECK_EQ(parse_base(len), QHCA_ROCE_ERR_IP_TOTAL_LEN);
    put_be16(base + 18, 0);
    CHECK_EQ(parse_base(len), QHCA_ROCE_ERR_IP_TOTAL_LEN);
    put_be16(base + 18, len - 54 + 1);
    CHECK_EQ(parse_base(len), QHCA_ROCE_ERR_IP_TOTAL_LEN);
    put_be16(base + 18, 0xffff);
    CHECK_EQ(parse_base(len), QHCA_ROCE_ERR_IP_TOTAL_LEN);

    /* Extension headers (hop-by-hop, routing, fragment) or not UDP */
    {
        static const uint8_t next[] = { 0, 43, 44, 6, 58, 59, 60 };

        for (i = 0; i < N_ELEMS(next); i++) {
            make_base6(QHCA_ROCE_OP_RC_SEND_ONLY, 5);
            base[20] = next[i];
            CHECK_EQ(parse_base(len), QHCA_ROCE_ERR_NOT_UDP);
        }
    }

    /* Source and destination must be unicast, right checksums or not */
    for (i = 0; i < N_ELEMS(bad_addrs); i++) {
        make_base6(QHCA_ROCE_OP_RC_SEND_ONLY, 5);
        memcpy(base + 22, bad_addrs[i], 16);
        fix_icrc(base, len);
        CHECK_EQ(parse_base(len), QHCA_ROCE_ERR_IP_ADDR);
        make_base6(QHCA_ROCE_OP_RC_SEND_ONLY, 5);
        memcpy(base + 38, bad_addrs[i], 16);
        fix_icrc(base, len);
        CHECK_EQ(parse_base(len), QHCA_ROCE_ERR_IP_ADDR);
    }

    /* UDP length must be the payload length */
    make_base6(QHCA_ROCE_OP_RC_SEND_ONLY, 5);
    put_be16(base + 58, len - 54 - 1);
    CHECK_EQ(parse_base(len), QHCA_ROCE_ERR_UDP_LEN);
    put_be16(base + 58, len - 54 + 4);
    CHECK_EQ(parse_base(len), QHCA_ROCE_ERR_UDP_LEN);

    /* UDP checksum: a wrong one fails; 0 (none, as Soft-RoCE) passes */
    make_base6(QHCA_ROCE_OP_RC_SEND_ONLY, 5);
    CHECK(get_be16(base + 60) != 0);
    base[61] ^= 0x01;
    CHECK_EQ(parse_base(len), QHCA_ROCE_ERR_UDP_CSUM);
    put_be16(base + 60, 0);
    CHECK_EQ(parse_exact(base, len, &pkt), QHCA_ROCE_OK);
    CHECK_EQ(pkt.udp_csum, 0);
    /* The UDP checksum covers the addresses (the pseudo-header) */
    make_base6(QHCA_ROCE_OP_RC_SEND_ONLY, 5);
    base[22 + 15] ^= 0x04;
    CHECK_EQ(parse_base(len), QHCA_ROCE_ERR_UDP_CSUM);

    /* A payload change with a right UDP checksum: the ICRC catches it */
    make_base6(QHCA_ROCE_OP_RC_SEND_ONLY, 5);
    base[74] ^= 0x20;
    fix_udp6_csum(base, len);
    CHECK_EQ(parse_base(len), QHCA_ROCE_ERR_ICRC);

    /* Transport headers cut short */
    make_base6(QHCA_ROCE_OP_RC_SEND_ONLY, 0);
    reframe(base, 14 + 40 + 8 + 12);
    CHECK_EQ(parse_base(14 + 40 + 8 + 12), QHCA_ROCE_ERR_SHORT_TRANSPORT);
    make_base6(QHCA_ROCE_OP_UD_SEND_ONLY, 0);
    reframe(base, base_len - 4);
    CHECK_EQ(parse_base(base_len - 4), QHCA_ROCE_ERR_SHORT_TRANSPORT);

    /*
     * Traffic class, flow label and hop limit are covered by nothing:
     * any value is taken and reported
     */
    make_base6(QHCA_ROCE_OP_RC_SEND_ONLY, 5);
    base[14] = 0x6f;
    base[15] = base[16] = base[17] = 0xff;
    base[21] = 0;
    CHECK_EQ(parse_exact(base, len, &pkt), QHCA_ROCE_OK);
    CHECK_EQ(pkt.hdr.tos, 0xff);
    CHECK_EQ(pkt.hdr.flow_label, 0xfffff);
    CHECK_EQ(pkt.hdr.ttl, 0);

    /* Ethernet padding after the datagram is ignored */
    make_base6(QHCA_ROCE_OP_RC_ACKNOWLEDGE, 0);
    CHECK_EQ(base_len, 82);
    CHECK_EQ(parse_exact(base, base_len + 20, &pkt), QHCA_ROCE_OK);
    CHECK_EQ(pkt.frame_len, 82);
}

void test_ip6_build_errors(void)
{
    uint8_t *buf = malloc(QHCA_ROCE_MAX_FRAME_LEN + 4);
    QhcaRoceHdr h;
    size_t max_payload;
    int r;

    assert(buf);
    ip6_ud_hdr(&h);
    h.flow_label = 0x100000;
    CHECK_EQ(qhca_roce_build(buf, 256, &h, NULL, 0),
             -QHCA_ROCE_ERR_FIELD_RANGE);
    h.flow_label = 0xfffff;
    CHECK(qhca_roce_build(buf, 256, &h, NULL, 0) > 0);
    /* ...but an IPv4 header's flow_label is not looked at */
    h.ipv6 = false;
    h.flow_label = 0xffffffff;
    CHECK(qhca_roce_build(buf, 256, &h, NULL, 0) > 0);

    /* An IPv6 frame is held to QHCA_ROCE_MAX_FRAME_LEN too */
    ip6_ud_hdr(&h);
    h.opcode = QHCA_ROCE_OP_RC_SEND_ONLY;
    max_payload = 65535 - 40 - 8 - 12 - 4 - 3;
    CHECK_EQ(max_payload % 4, 0);
    CHECK_EQ(qhca_roce_frame_len_hdr(&h, max_payload), 14 + 65532);
    CHECK_EQ(qhca_roce_frame_len_hdr(&h, max_payload + 1), 0);
    CHECK_EQ(qhca_roce_build(buf, QHCA_ROCE_MAX_FRAME_LEN, &h, NULL,
                             max_payload + 1), -QHCA_ROCE_ERR_TOO_LONG);
    {
        uint8_t *payload = calloc(1, max_payload);
        QhcaRocePkt pkt;

        assert(payload);
        r = qhca_roce_build(buf, QHCA_ROCE_MAX_FRAME_LEN, &h, payload,
                            max_payload);
        CHECK_EQ(r, 14 + 65532);
        if (r > 0) {
            CHECK_EQ(parse_exact(buf, r, &pkt), QHCA_ROCE_OK);
            CHECK_EQ(pkt.payload_len, max_payload);
            /* a payload length past the IPv4 limit is refused */
            put_be16(buf + 18, get_be16(buf + 18) + 4);
            put_be16(buf + 58, get_be16(buf + 18));
            CHECK_EQ(parse_exact(buf, r + 4, &pkt),
                     QHCA_ROCE_ERR_IP_TOTAL_LEN);
        }
        free(payload);
    }
    free(buf);
    CHECK(strcmp(qhca_roce_strerror(QHCA_ROCE_ERR_IP_ADDR),
                 "IPv6 address not unicast") == 0);
}

/* GIDs and addresses */
void test_ip6_gids(void)
{
    static const uint8_t v4a[16] = { [10] = 0xff, 0xff, 10, 0, 0, 1 };
    static const uint8_t v4b[16] = { [10] = 0xff, 0xff, 10, 0, 0, 2 };
    static const uint8_t ll[16] = { 0xfe, 0x80, [8] = 0x50, 0x54, 0x00,
                                    0xff, 0xfe, 0x12, 0x34, 0x56 };
    static const uint8_t gl[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 7 };
    static const uint8_t mc[16] = { 0xff, 0x02, [15] = 1 };
    static const uint8_t any[16] = { 0 };
    static const uint8_t lo[16] = { [15] = 1 };
    static const uint8_t two[16] = { [15] = 2 };    /* ::2, unicast */
    uint8_t g[16], f[128];
    QhcaRoceHdr h;

    CHECK(qhca_roce_gid_is_ipv4(v4a));
    CHECK(!qhca_roce_gid_is_ipv4(ll));
    CHECK(!qhca_roce_gid_is_ipv4(any));
    CHECK(qhca_roce_ip6_unicast(ll));
    CHECK(qhca_roce_ip6_unicast(gl));
    CHECK(qhca_roce_ip6_unicast(two));
    CHECK(!qhca_roce_ip6_unicast(mc));
    CHECK(!qhca_roce_ip6_unicast(any));
    CHECK(!qhca_roce_ip6_unicast(lo));
    CHECK(!qhca_roce_ip6_unicast(v4a));

    memset(&h, 0, sizeof(h));
    CHECK(qhca_roce_set_gids(&h, v4a, v4b));
    CHECK(!h.ipv6);
    CHECK_EQ(h.src_ip, 0x0a000001);
    CHECK_EQ(h.dst_ip, 0x0a000002);
    qhca_roce_src_gid(&h, g);
    CHECK(memcmp(g, v4a, 16) == 0);
    qhca_roce_dst_gid(&h, g);
    CHECK(memcmp(g, v4b, 16) == 0);

    CHECK(qhca_roce_set_gids(&h, ll, gl));
    CHECK(h.ipv6);
    CHECK(memcmp(h.src_ip6, ll, 16) == 0);
    CHECK(memcmp(h.dst_ip6, gl, 16) == 0);
    qhca_roce_src_gid(&h, g);
    CHECK(memcmp(g, ll, 16) == 0);
    qhca_roce_dst_gid(&h, g);
    CHECK(memcmp(g, gl, 16) == 0);

    /* Mixed families or a non-unicast IPv6 side: refused, h unchanged */
    CHECK(!qhca_roce_set_gids(&h, v4a, ll));
    CHECK(!qhca_roce_set_gids(&h, ll, v4a));
    CHECK(!qhca_roce_set_gids(&h, ll, mc));
    CHECK(!qhca_roce_set_gids(&h, any, ll));
    CHECK(!qhca_roce_set_gids(&h, ll, lo));
    CHECK(h.ipv6);
    CHECK(memcmp(h.dst_ip6, gl, 16) == 0);

    /* The destination of a frame, as the loopback check reads it */
    ip6_ud_hdr(&h);
    CHECK(qhca_roce_build(f, sizeof(f), &h, "abcd", 4) > 0);
    CHECK(qhca_roce_frame_dst_gid(f, 54, g));
    CHECK(memcmp(g, h.dst_ip6, 16) == 0);
    CHECK(!qhca_roce_frame_dst_gid(f, 53, g));
    h.ipv6 = false;
    h.dst_ip = 0x0a000002;
    CHECK(qhca_roce_build(f, sizeof(f), &h, "abcd", 4) > 0);
    CHECK(qhca_roce_frame_dst_gid(f, 34, g));
    CHECK(memcmp(g, v4b, 16) == 0);
    CHECK(!qhca_roce_frame_dst_gid(f, 33, g));
    CHECK(!qhca_roce_frame_dst_gid(f, 10, g));
    put_be16(f + 12, 0x8100);
    CHECK(!qhca_roce_frame_dst_gid(f, 64, g));
}

void test_ip6_roundtrip(void)
{
    use_ip6 = true;
    test_roundtrip();
    use_ip6 = false;
}

void test_ip6_parse_truncated(void)
{
    use_ip6 = true;
    test_parse_truncated();
    use_ip6 = false;
}

void test_ip6_parse_bit_flips(void)
{
    use_ip6 = true;
    test_parse_bit_flips();
    use_ip6 = false;
}
