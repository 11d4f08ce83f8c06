/*
 * The steering of a port shared with the NIC (qhca_roce_steer()): which
 * frames of a shared backend are the device's.  Every built RoCEv2 frame,
 * IPv4 and IPv6, to the device's MAC or a multicast MAC is; other MACs,
 * ports, Ethertypes, IP versions, protocols, fragments and IPv6 extension
 * headers are not; IPv4 options move the UDP header; no length makes it
 * read past the frame (the copies are exact heap blocks).
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qhca-roce.h"
#include "roce-test.h"

static const uint8_t our_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };

/* A SEND_ONLY frame of 16 bytes to @dst, IPv6 if @v6 */
static size_t steer_frame(uint8_t *f, size_t size, const uint8_t *dst,
                          bool v6)
{
    QhcaRoceHdr h;
    int n;

    random_hdr(&h, 0x04);
    memcpy(h.dst_mac, dst, 6);
    h.ipv6 = v6;
    if (v6) {
        random_ip6(h.src_ip6);
        random_ip6(h.dst_ip6);
    }
    n = qhca_roce_build(f, size, &h, "0123456789abcdef", 16);
    CHECK(n > 0);
    return n > 0 ? n : 0;
}

/* steer() on an exact heap copy of the first len bytes of f */
static bool steer(const uint8_t *f, size_t len)
{
    uint8_t *copy = malloc(len ? len : 1);
    bool r;

    memcpy(copy, f, len);
    r = qhca_roce_steer(copy, len, our_mac);
    free(copy);
    return r;
}

void test_steer(void)
{
    static const uint8_t other[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x57 };
    static const uint8_t mcast4[6] = { 0x01, 0x00, 0x5e, 0x00, 0x01, 0x01 };
    static const uint8_t mcast6[6] = { 0x33, 0x33, 0x00, 0x00, 0x00, 0x01 };
    static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
    uint8_t f[512], g[512];
    size_t n, i, udp;
    int v6;

    for (v6 = 0; v6 < 2; v6++) {
        udp = v6 ? QHCA_ROCE_IP6_UDP_OFFSET : QHCA_ROCE_UDP_OFFSET;
        n = steer_frame(f, sizeof(f), our_mac, v6);
        CHECK(steer(f, n));
        /* the check needs the headers up to the UDP port only */
        CHECK(steer(f, udp + 4));
        for (i = 0; i < udp + 4; i++) {
            CHECK(!steer(f, i));
        }
        n = steer_frame(f, sizeof(f), other, v6);
        CHECK(!steer(f, n));
        n = steer_frame(f, sizeof(f), v6 ? mcast6 : mcast4, v6);
        CHECK(steer(f, n));
        n = steer_frame(f, sizeof(f), bcast, v6);
        CHECK(steer(f, n));

        /* another UDP port, either byte */
        n = steer_frame(f, sizeof(f), our_mac, v6);
        memcpy(g, f, n);
        put_be16(g + udp + 2, 4792);
        CHECK(!steer(g, n));
        memcpy(g, f, n);
        put_be16(g + udp + 2, 0x12b7 + 0x100);
        CHECK(!steer(g, n));
        /* the source port is not the destination port */
        memcpy(g, f, n);
        put_be16(g + udp, QHCA_ROCE_UDP_DPORT);
        put_be16(g + udp + 2, 4000);
        CHECK(!steer(g, n));
        /* a VLAN tag, ARP, the other IP version behind the Ethertype */
        memcpy(g, f, n);
        put_be16(g + 12, 0x8100);
        CHECK(!steer(g, n));
        put_be16(g + 12, 0x0806);
        CHECK(!steer(g, n));
        memcpy(g, f, n);
        put_be16(g + 12, v6 ? QHCA_ROCE_ETHERTYPE_IPV4 :
                 QHCA_ROCE_ETHERTYPE_IPV6);
        CHECK(!steer(g, n));
        /* TCP, not UDP */
        memcpy(g, f, n);
        g[14 + (v6 ? 6 : 9)] = 6;
        CHECK(!steer(g, n));
    }

    /* IPv6: an extension header before UDP (hop-by-hop) is the NIC's */
    n = steer_frame(f, sizeof(f), our_mac, true);
    f[14 + 6] = 0;
    CHECK(!steer(f, n));

    /* IPv4 fragments are the NIC's: MF set, or an offset */
    n = steer_frame(f, sizeof(f), our_mac, false);
    memcpy(g, f, n);
    g[14 + 6] |= 0x20;
    CHECK(!steer(g, n));
    memcpy(g, f, n);
    g[14 + 7] = 1;
    CHECK(!steer(g, n));
    /* DF alone is not a fragment */
    memcpy(g, f, n);
    g[14 + 6] |= 0x40;
    CHECK(steer(g, n));
    /* an IHL below 5 is not IPv4 */
    memcpy(g, f, n);
    g[14] = 0x44;
    CHECK(!steer(g, n));

    /* IPv4 options (IHL 6..15): the UDP header moves with them */
    for (i = 6; i <= 15; i++) {
        size_t opt = (i - 5) * 4;

        memcpy(g, f, 34);
        memset(g + 34, 1, opt);                 /* NOP options */
        memcpy(g + 34 + opt, f + 34, n - 34);
        g[14] = 0x40 | i;
        CHECK(steer(g, n + opt));
        CHECK(!steer(g, 34 + opt + 3));
        CHECK(steer(g, 34 + opt + 4));
        /* the port where an option-less header has it is not looked at */
        put_be16(g + 34 + 2, 4791);
        put_be16(g + 34 + opt + 2, 4792);
        CHECK(!steer(g, n + opt));
    }
}

/*
 * qhca_roce_finish_csum(): a checksum left to the NIC, finished over
 * frames of every length: after it the region's sum with the stored value
 * folds to the partial sum that was there (the pseudo-header's); a field
 * not wholly inside the frame is refused and nothing is written.
 */
void test_finish_csum(void)
{
    uint8_t f[300], g[300];
    size_t len, start, off;

    for (len = 0; len <= 80; len++) {
        for (start = 0; start <= len + 2; start++) {
            for (off = 0; off <= 10; off++) {
                /* a checksum field is 16-bit aligned to its start */
                bool even = !(off & 1);

                bool inside = start < len && off <= len - start &&
                              len - start - off >= 2;
                uint16_t partial = 1 + rnd(0xfffe);
                uint32_t i;

                for (i = 0; i < sizeof(f); i++) {
                    f[i] = rnd(256);
                }
                if (inside) {
                    put_be16(f + start + off, partial);
                }
                memcpy(g, f, sizeof(f));
                CHECK(qhca_roce_finish_csum(g, len, start, off) == inside);
                if (!inside) {
                    CHECK(!memcmp(f, g, sizeof(f)));
                    continue;
                }
                CHECK(!memcmp(f, g, start + off));
                CHECK(!memcmp(f + start + off + 2, g + start + off + 2,
                              sizeof(f) - start - off - 2));
                CHECK(get_be16(g + start + off) != 0);
                i = qhca_roce_inet_csum(g + start, len - start);
                CHECK(!even || i == partial || (i == 0 && partial == 0xffff));
            }
        }
    }
}
