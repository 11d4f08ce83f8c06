/*
 * Unit tests of the RoCEv2 wire library (hw/qhca-roce.c), part of
 * test-qhca-roce (its main() and shared helpers: test-qhca-roce.c,
 * roce-test.h).
 *
 * The CRC-32 (by table and by carry-less multiply), the Internet checksum
 * and the ICRC, against reference frames of other implementations.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <glib.h>
#include "qhca-roce.h"
#include "roce-test.h"

/* ---- Reference frames from implementations other than ours ---- */

/*
 * A RoCEv2 CNP (opcode 0x81) sent by a Mellanox ConnectX-4 Lx NIC, with its
 * ICRC (82 fd 00 2a): the hex dump in Scapy's test suite,
 * https://github.com/secdev/scapy test/contrib/roce.uts,
 * "RoCE CNP captured on ConnectX-4 Lx".  UDP checksum 0, UDP source port 0.
 */
static const uint8_t cx4_cnp_frame[] = {
    0xe4, 0x1d, 0x2d, 0xab, 0x2b, 0xc2, 0x7c, 0xfe,
    0x90, 0x64, 0x3b, 0x32, 0x08, 0x00, 0x45, 0xc2,
    0x00, 0x3c, 0x71, 0x8c, 0x40, 0x00, 0x40, 0x11,
    0x91, 0x61, 0x0a, 0x00, 0x11, 0x01, 0x0a, 0x00,
    0x12, 0x01, 0x00, 0x00, 0x12, 0xb7, 0x00, 0x28,
    0x00, 0x00, 0x81, 0x00, 0xff, 0xff, 0x40, 0x00,
    0x01, 0x18, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x82, 0xfd,
    0x00, 0x2a,
};

/*
 * A UC SEND_ONLY (opcode 0x24; MigReq, pad count 2, dest QP 211, PSN
 * 13571856, 18 payload bytes + 2 pad) built by Scapy's RoCE layer (Python,
 * zlib) in its test suite, https://github.com/secdev/scapy
 * test/contrib/roce.uts, "RoCE layer": the test asserts IP checksum 0xb4d5,
 * UDP checksum 0xaca2 (non-zero, covering the ICRC) and ICRC 0x78f353f3
 * (bytes 78 f3 53 f3).  The 4 trailing zero bytes are Ethernet padding
 * that the test appends.
 */
const uint8_t scapy_uc_frame[] = {
    0x24, 0x8a, 0x07, 0xa8, 0xfa, 0x22, 0x24, 0x8a,
    0x07, 0xa8, 0xfa, 0x22, 0x08, 0x00, 0x45, 0x01,
    0x00, 0x40, 0x04, 0x78, 0x40, 0x00, 0x40, 0x11,
    0xb4, 0xd5, 0xc0, 0xa8, 0x00, 0x07, 0xc0, 0xa8,
    0x00, 0x07, 0xc0, 0x00, 0x12, 0xb7, 0x00, 0x2c,
    0xac, 0xa2, 0x24, 0x60, 0xff, 0xff, 0x00, 0x00,
    0x00, 0xd3, 0x00, 0xcf, 0x17, 0x10, 0x46, 0x30,
    0x81, 0x8b, 0xe2, 0x89, 0x35, 0xd9, 0x0e, 0x9a,
    0x95, 0x50, 0x54, 0x01, 0xbe, 0x88, 0x5e, 0x50,
    0x00, 0x00, 0x78, 0xf3, 0x53, 0xf3, 0x00, 0x00,
    0x00, 0x00,
};


/* ---- Cases ---- */

void test_crc32(void)
{
    static const uint8_t ff8[8] = {
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    };
    const char *s = "123456789";

    /* The CRC-32 check value */
    CHECK_EQ(~qhca_roce_crc32_update(~0u, s, 9), 0xcbf43926);
    CHECK_EQ(~qhca_roce_crc32_update(~0u, s, 0), 0);
    /* Incremental use */
    CHECK_EQ(~qhca_roce_crc32_update(qhca_roce_crc32_update(~0u, s, 4),
                                     s + 4, 5), 0xcbf43926);
    /* rxe_icrc.c seeds its CRC with this: the state after the masked LRH */
    CHECK_EQ(qhca_roce_crc32_update(~0u, ff8, 8), 0xdebb20e3);
}

/*
 * The carry-less-multiply CRCs (hw/qhca-roce.c, x86 PCLMULQDQ and
 * VPCLMULQDQ) against the table one, each width the host has in turn, on
 * random data at every alignment and length around their 16-, 64-, 128-
 * and 256-byte steps; the widest the host has must be the one in use (a
 * width turns itself off if its own start-up check fails)
 */
void test_crc32_fast(void)
{
    static uint8_t b[9000];
    int best = qhca_roce_crc32_level();
    int level, want = QHCA_ROCE_CRC32_TABLE;
    unsigned i;

#if defined(__x86_64__)
    if (__builtin_cpu_supports("pclmul")) {
        CHECK(qhca_roce_crc32_fast());
        want = QHCA_ROCE_CRC32_CLMUL;
        if (__builtin_cpu_supports("avx2") &&
            __builtin_cpu_supports("vpclmulqdq")) {
            want = QHCA_ROCE_CRC32_CLMUL_AVX2;
        }
        if (__builtin_cpu_supports("avx512f") &&
            __builtin_cpu_supports("avx512vl") &&
            __builtin_cpu_supports("vpclmulqdq")) {
            want = QHCA_ROCE_CRC32_CLMUL_AVX512;
        }
    }
#endif
    CHECK_EQ(best, want);
    for (i = 0; i < sizeof(b); i++) {
        b[i] = rnd(256);
    }
    for (level = best; level >= QHCA_ROCE_CRC32_CLMUL; level--) {
        CHECK_EQ(qhca_roce_crc32_set_level(level), level);
        for (i = 0; i < 3000; i++) {
            uint32_t off = rnd(64);
            uint32_t len = i < 600 ? i : rnd(sizeof(b) - 64);
            uint32_t seed = (uint32_t)rnd64();

            CHECK_EQ(qhca_roce_crc32_update(seed, b + off, len),
                     qhca_roce_crc32_update_table(seed, b + off, len));
        }
        /* a whole frame's worth, and the check value through the fast path */
        memset(b, '7', 4096);
        CHECK_EQ(~qhca_roce_crc32_update(~0u, b, 4096),
                 ~qhca_roce_crc32_update_table(~0u, b, 4096));
        memcpy(b, "123456789", 9);
        CHECK_EQ(~qhca_roce_crc32_update(~0u, b, 9), 0xcbf43926);
        for (i = 0; i < sizeof(b); i++) {
            b[i] = rnd(256);
        }
    }
    /* never wider than the host has */
    CHECK_EQ(qhca_roce_crc32_set_level(QHCA_ROCE_CRC32_LEVELS), best);
}

void test_inet_csum(void)
{
    /* An IPv4 header with checksum 0xb861 (the usual textbook example) */
    uint8_t ip[20] = {
        0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00,
        0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8, 0x00, 0x01,
        0xc0, 0xa8, 0x00, 0xc7,
    };
    uint8_t odd[3] = { 0x01, 0x02, 0x03 };

    CHECK_EQ(qhca_roce_inet_csum(ip, 20), 0);
    ip[10] = ip[11] = 0;
    CHECK_EQ(qhca_roce_inet_csum(ip, 20), 0xb861);
    /* Odd length: the last byte is padded with a zero */
    CHECK_EQ(qhca_roce_inet_csum(odd, 3), (uint16_t)~(0x0102 + 0x0300));
    /* Long buffers (the sum is folded as it goes) */
    {
        size_t n = 200001, i;
        uint8_t *big = malloc(n);
        uint64_t sum = 0;

        assert(big);
        for (i = 0; i < n; i++) {
            big[i] = 0xff - (i % 7);
        }
        for (i = 0; i + 1 < n; i += 2) {
            sum += big[i] << 8 | big[i + 1];
        }
        sum += big[n - 1] << 8;
        while (sum >> 16) {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        CHECK_EQ(qhca_roce_inet_csum(big, n), (uint16_t)~sum);
        free(big);
    }
    /* The reference frames' IP headers are valid */
    CHECK_EQ(qhca_roce_inet_csum(cx4_cnp_frame + 14, 20), 0);
    CHECK_EQ(qhca_roce_inet_csum(scapy_uc_frame + 14, 20), 0);
}

void test_icrc_connectx4_cnp(void)
{
    size_t len = sizeof(cx4_cnp_frame);
    QhcaRocePkt pkt;

    CHECK_EQ(len, 74);
    CHECK_EQ(qhca_roce_icrc(cx4_cnp_frame, len), 0x2a00fd82);
    CHECK_EQ(qhca_roce_icrc(cx4_cnp_frame, len),
             get_le32(cx4_cnp_frame + len - 4));
    /*
     * A ConnectX-4's CNP, taken (hw/qhca-cc.c): to QP 0x118, BECN set,
     * PSN 0, 16 reserved bytes; its IP header DSCP 48, ECT(0)
     */
    CHECK_EQ(parse_exact(cx4_cnp_frame, len, &pkt), QHCA_ROCE_OK);
    CHECK_EQ(pkt.hdr.opcode, QHCA_ROCE_OP_CNP);
    CHECK(pkt.op->flags & QHCA_ROCE_OPF_CNP);
    CHECK_EQ(pkt.hdr.dest_qp, 0x118);
    CHECK(pkt.hdr.becn);
    CHECK(!pkt.hdr.fecn);
    CHECK_EQ(pkt.hdr.psn, 0);
    CHECK_EQ(pkt.payload_len, QHCA_ROCE_CNP_LEN);
    CHECK_EQ(pkt.hdr.tos, 0xc2);
    /* and built again from what was parsed: the same bytes */
    {
        uint8_t f[sizeof(cx4_cnp_frame)];
        static const uint8_t zero[QHCA_ROCE_CNP_LEN];

        CHECK_EQ(qhca_roce_build(f, sizeof(f), &pkt.hdr, zero, sizeof(zero)),
                 (int)len);
        CHECK(!memcmp(f, cx4_cnp_frame, len));
    }
    pcap_record(cx4_cnp_frame, len, len);
}

void test_icrc_scapy_uc(void)
{
    size_t len = sizeof(scapy_uc_frame);
    uint8_t f[sizeof(scapy_uc_frame)];
    QhcaRocePkt pkt;

    CHECK_EQ(qhca_roce_icrc(scapy_uc_frame, SCAPY_UC_LEN), 0xf353f378);
    CHECK_EQ(qhca_roce_icrc(scapy_uc_frame, SCAPY_UC_LEN),
             get_le32(scapy_uc_frame + SCAPY_UC_LEN - 4));
    /*
     * A frame from another implementation that the device takes: a UC
     * SEND_ONLY to QP 211 at PSN 13571856 with 18 bytes (its pad count 2
     * dropped), its non-zero UDP checksum right; a wrong one is caught.
     */
    CHECK_EQ(parse_exact(scapy_uc_frame, len, &pkt), QHCA_ROCE_OK);
    CHECK_EQ(pkt.hdr.opcode, QHCA_ROCE_OP_UC_SEND_ONLY);
    CHECK(pkt.op->flags & QHCA_ROCE_OPF_UC);
    CHECK_EQ(pkt.hdr.dest_qp, 211);
    CHECK_EQ(pkt.hdr.psn, 13571856);
    CHECK_EQ(pkt.payload_len, 18);
    CHECK_EQ(pkt.frame_len, SCAPY_UC_LEN);
    memcpy(f, scapy_uc_frame, len);
    f[34 + 7] ^= 0x10;
    CHECK_EQ(parse_exact(f, len, &pkt), QHCA_ROCE_ERR_UDP_CSUM);
    pcap_record(scapy_uc_frame, len, SCAPY_UC_LEN);
}

void test_icrc_masked_fields(void)
{
    /* TOS, TTL, IP checksum (2), UDP checksum (2), BTH FECN/BECN/resv */
    static const size_t masked[] = { 15, 22, 24, 25, 40, 41, 46 };
    size_t len = sizeof(cx4_cnp_frame);
    uint32_t icrc = qhca_roce_icrc(cx4_cnp_frame, len);
    uint8_t f[sizeof(cx4_cnp_frame)];
    size_t i, j;

    for (i = 0; i < len - 4; i++) {
        bool is_masked = i < 14;    /* Ethernet is not covered */

        for (j = 0; j < N_ELEMS(masked); j++) {
            is_masked |= i == masked[j];
        }
        memcpy(f, cx4_cnp_frame, len);
        f[i] ^= 0x5a;
        if (is_masked) {
            CHECK_EQ(qhca_roce_icrc(f, len), icrc);
        } else {
            CHECK(qhca_roce_icrc(f, len) != icrc);
        }
    }
    /* The ICRC field itself is not an input */
    memcpy(f, cx4_cnp_frame, len);
    f[len - 1] ^= 0xff;
    CHECK_EQ(qhca_roce_icrc(f, len), icrc);
}
