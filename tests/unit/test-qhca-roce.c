/*
 * Unit tests of the RoCEv2 wire library (hw/qhca-roce.c) on the host.
 *
 * A GLib test program (g_test: run it with --tap for TAP, -p PATH for one
 * case, -l to list them; meson test runs it from tests/unit/meson.build).
 * A case goes on after a failed check and fails at its end.  Build with
 * -fsanitize=address,undefined: every frame handed to the parser lies in a
 * heap block of exactly its length, so an out-of-bounds read is caught.
 *
 *   test-qhca-roce [--pcap GOOD.pcap BAD.pcap] [GTEST-OPTIONS]
 *
 * With --pcap it also writes the frames it built (and the reference frames)
 * to GOOD.pcap, and the same frames with one ICRC bit flipped to BAD.pcap,
 * for the independent checker tests/unit/icrc-check.py.
 *
 * QHCA_TEST_SEED=N in the environment changes the fuzzing seed.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <glib.h>
#include "qhca-roce.h"

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))

static bool case_failed;
static int case_checks_failed;

#define CHECK(cond) \
    check((cond), #cond, __FILE__, __LINE__)

static void check(bool ok, const char *what, const char *file, int line)
{
    if (ok) {
        return;
    }
    case_failed = true;
    /* Say what failed, but do not flood the log from a fuzz loop */
    if (case_checks_failed++ < 10) {
        printf("# %s:%d: check failed: %s\n", file, line, what);
    }
}

#define CHECK_EQ(a, b) \
    check_eq((uint64_t)(a), (uint64_t)(b), #a " == " #b, __FILE__, __LINE__)

static void check_eq(uint64_t a, uint64_t b, const char *what,
                     const char *file, int line)
{
    if (a != b && case_checks_failed < 10) {
        printf("# %s:%d: 0x%" PRIx64 " != 0x%" PRIx64 "\n", file, line, a, b);
    }
    check(a == b, what, file, line);
}

typedef struct RoceCase {
    const char *path;
    void (*fn)(void);
} RoceCase;

/* One g_test case: its checks all run, a failed one fails the case */
static void run_case(gconstpointer data)
{
    const RoceCase *c = data;

    case_failed = false;
    case_checks_failed = 0;
    c->fn();
    if (case_failed) {
        g_test_fail();
    }
}

/* xorshift64*: deterministic, seedable */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd64(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

static uint32_t rnd(uint32_t n)
{
    return n ? (uint32_t)(rnd64() >> 32) % n : 0;
}

static uint32_t get_be16(const uint8_t *p)
{
    return p[0] << 8 | p[1];
}

static uint32_t get_le32(const uint8_t *p)
{
    return (uint32_t)p[3] << 24 | p[2] << 16 | p[1] << 8 | p[0];
}

static void put_be16(uint8_t *p, uint32_t v)
{
    p[0] = v >> 8;
    p[1] = v;
}

static void put_le32(uint8_t *p, uint32_t v)
{
    p[0] = v;
    p[1] = v >> 8;
    p[2] = v >> 16;
    p[3] = v >> 24;
}

/* Parse a copy of buf in a heap block of exactly len bytes */
static QhcaRoceErr parse_exact(const uint8_t *buf, size_t len,
                               QhcaRocePkt *pkt)
{
    uint8_t *copy = malloc(len ? len : 1);
    QhcaRoceErr err;

    assert(copy);
    if (len) {
        memcpy(copy, buf, len);
    }
    err = qhca_roce_parse(copy, len, pkt);
    free(copy);
    return err;
}

/* ---- pcap output for the Python cross-check ---- */

static FILE *pcap_good, *pcap_bad;

static FILE *pcap_open(const char *path)
{
    static const uint8_t hdr[24] = {
        0xd4, 0xc3, 0xb2, 0xa1,     /* magic, little-endian, microseconds */
        2, 0, 4, 0,                 /* version 2.4 */
        0, 0, 0, 0, 0, 0, 0, 0,     /* thiszone, sigfigs */
        0, 0, 1, 0,                 /* snaplen 65536 */
        1, 0, 0, 0,                 /* LINKTYPE_ETHERNET */
    };
    FILE *f = fopen(path, "wb");

    if (!f || fwrite(hdr, sizeof(hdr), 1, f) != 1) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(2);
    }
    return f;
}

static void pcap_put(FILE *f, const uint8_t *frame, size_t len)
{
    uint8_t rec[16] = { 0 };

    put_le32(rec + 8, len);
    put_le32(rec + 12, len);
    if (fwrite(rec, sizeof(rec), 1, f) != 1 ||
        fwrite(frame, len, 1, f) != 1) {
        fprintf(stderr, "pcap write failed\n");
        exit(2);
    }
}

/* Record a frame with a valid ICRC ending at icrc_end */
static void pcap_record(const uint8_t *frame, size_t len, size_t icrc_end)
{
    uint8_t *bad;

    if (!pcap_good) {
        return;
    }
    pcap_put(pcap_good, frame, len);
    bad = malloc(len);
    assert(bad);
    memcpy(bad, frame, len);
    bad[icrc_end - 1 - rnd(4)] ^= 1 << rnd(8);
    pcap_put(pcap_bad, bad, len);
    free(bad);
}

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
static const uint8_t scapy_uc_frame[] = {
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
#define SCAPY_UC_LEN    (14 + 64)   /* without the Ethernet padding */

/* ---- Helpers to build and mutate frames ---- */

/* random_hdr() makes IPv6 headers while this is set */
static bool use_ip6;

/* A random IPv6 unicast address: link-local (as the kernel's GIDs) or not */
static void random_ip6(uint8_t *a)
{
    int i;

    for (i = 0; i < 16; i++) {
        a[i] = rnd(256);
    }
    if (rnd(2)) {
        a[0] = 0xfe;
        a[1] = 0x80;
        memset(a + 2, 0, 6);
    } else {
        a[0] = 0x20 | rnd(16);      /* 2000::/3, global unicast */
    }
}

static void random_hdr(QhcaRoceHdr *h, uint8_t opcode)
{
    int i;

    memset(h, 0, sizeof(*h));
    for (i = 0; i < 6; i++) {
        h->dst_mac[i] = rnd(256);
        h->src_mac[i] = rnd(256);
    }
    if (use_ip6) {
        h->ipv6 = true;
        random_ip6(h->src_ip6);
        random_ip6(h->dst_ip6);
        h->flow_label = rnd(1 << 20);
    } else {
        h->src_ip = rnd64();
        h->dst_ip = rnd64();
        h->ip_id = rnd(65536);
    }
    h->tos = rnd(256);
    h->ttl = rnd(256);
    h->src_port = qhca_roce_udp_sport(rnd64());
    h->opcode = opcode;
    h->se = rnd(2);
    h->mig = rnd(2);
    h->pkey = rnd(2) ? 0xffff : 0x7fff;
    h->fecn = rnd(2);
    h->becn = rnd(2);
    h->dest_qp = rnd(1 << 24);
    h->ack_req = rnd(2);
    h->psn = rnd(1 << 24);
    h->reth.va = rnd64();
    h->reth.rkey = rnd64();
    h->reth.dma_len = rnd64();
    h->aeth.syndrome = rnd(256);
    h->aeth.msn = rnd(1 << 24);
    h->atomic.va = rnd64();
    h->atomic.rkey = rnd64();
    h->atomic.swap_add = rnd64();
    h->atomic.compare = rnd64();
    h->atomic_ack_orig = rnd64();
    h->feth = rnd64();
    h->imm = rnd64();
    h->ieth_rkey = rnd64();
    h->deth.qkey = rnd64();
    h->deth.src_qp = rnd(1 << 24);
}

static bool op_has(const QhcaRoceOpInfo *op, QhcaRoceExt ext)
{
    int i;

    for (i = 0; i < op->n_ext; i++) {
        if (op->ext[i] == ext) {
            return true;
        }
    }
    return false;
}

/* Build a frame into a fresh heap block of exactly its length */
static uint8_t *build_frame(const QhcaRoceHdr *h, const uint8_t *payload,
                            size_t payload_len, size_t *len)
{
    size_t flen = qhca_roce_frame_len_hdr(h, payload_len);
    uint8_t *buf;
    int r;

    assert(flen);
    buf = malloc(flen);
    assert(buf);
    r = qhca_roce_build(buf, flen, h, payload, payload_len);
    assert(r == (int)flen);
    *len = flen;
    return buf;
}

/* A valid RC_SEND_ONLY frame with 5 payload bytes, in a static buffer */
static uint8_t base[256];
static size_t base_len;

static void make_base(uint8_t opcode, size_t payload_len)
{
    static const uint8_t payload[64] = "qhca unit test payload";
    QhcaRoceHdr h;
    int r;

    random_hdr(&h, opcode);
    h.pkey = 0xffff;
    memset(base, 0xee, sizeof(base));
    r = qhca_roce_build(base, sizeof(base), &h, payload, payload_len);
    assert(r > 0);
    base_len = r;
}

static bool is_ip6(const uint8_t *f)
{
    return get_be16(f + 12) == 0x86dd;
}

/* The IPv4 header checksum (IPv6 has none) */
static void fix_ip_csum(uint8_t *f)
{
    if (is_ip6(f)) {
        return;
    }
    put_be16(f + 14 + 10, 0);
    put_be16(f + 14 + 10, qhca_roce_inet_csum(f + 14, 20));
}

/* Where the IP datagram of a frame says it ends */
static size_t ip_end(const uint8_t *f)
{
    return is_ip6(f) ? 14 + 40 + get_be16(f + 18) : 14 + get_be16(f + 16);
}

/* The IPv6 UDP checksum of a frame ending at frame_len (0 stays 0) */
static void fix_udp6_csum(uint8_t *f, size_t frame_len)
{
    uint8_t *ph = malloc(40 + frame_len);
    size_t ulen = frame_len - 54;
    uint16_t csum;

    assert(ph);
    if (!get_be16(f + 54 + 6)) {
        free(ph);
        return;
    }
    memcpy(ph, f + 22, 32);
    memset(ph + 32, 0, 8);
    put_be16(ph + 34, ulen);
    ph[39] = 17;
    memcpy(ph + 40, f + 54, ulen);
    put_be16(ph + 40 + 6, 0);
    csum = qhca_roce_inet_csum(ph, 40 + ulen);
    put_be16(f + 54 + 6, csum ? csum : 0xffff);
    free(ph);
}

/* The ICRC, and over IPv6 the UDP checksum that covers it */
static void fix_icrc(uint8_t *f, size_t frame_len)
{
    put_le32(f + frame_len - 4, qhca_roce_icrc(f, frame_len));
    if (is_ip6(f)) {
        fix_udp6_csum(f, frame_len);
    }
}

/* Change the IP total and UDP lengths so the frame ends at frame_len */
static void reframe(uint8_t *f, size_t frame_len)
{
    if (is_ip6(f)) {
        put_be16(f + 14 + 4, frame_len - 54);
        put_be16(f + 54 + 4, frame_len - 54);
        if (frame_len >= QHCA_ROCE_IP6_MIN_FRAME_LEN) {
            fix_icrc(f, frame_len);
        } else if (frame_len >= 54 + 8) {
            fix_udp6_csum(f, frame_len);
        }
        return;
    }
    put_be16(f + 14 + 2, frame_len - 14);
    put_be16(f + 34 + 4, frame_len - 34);
    fix_ip_csum(f);
    if (frame_len >= QHCA_ROCE_MIN_FRAME_LEN) {
        fix_icrc(f, frame_len);
    }
}

static QhcaRoceErr parse_base(size_t len)
{
    QhcaRocePkt pkt;

    return parse_exact(base, len, &pkt);
}

/* ---- Cases ---- */

static void test_crc32(void)
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
 * The carry-less-multiply CRC (hw/qhca-roce.c, x86 PCLMULQDQ) against the
 * table one, on random data at every alignment and length around its
 * 64-byte and 16-byte steps; on a host that has PCLMULQDQ it must be the
 * one in use (it turns itself off if its own start-up check fails)
 */
static void test_crc32_fast(void)
{
    static uint8_t b[9000];
    unsigned i;

#if defined(__x86_64__)
    if (__builtin_cpu_supports("pclmul")) {
        CHECK(qhca_roce_crc32_fast());
    }
#endif
    for (i = 0; i < sizeof(b); i++) {
        b[i] = rnd(256);
    }
    for (i = 0; i < 3000; i++) {
        uint32_t off = rnd(64);
        uint32_t len = i < 300 ? i : rnd(sizeof(b) - 64);
        uint32_t seed = (uint32_t)rnd64();

        CHECK_EQ(qhca_roce_crc32_update(seed, b + off, len),
                 qhca_roce_crc32_update_table(seed, b + off, len));
    }
    /* a whole frame's worth, and the check value through the fast path */
    memset(b, '7', 4096);
    CHECK_EQ(~qhca_roce_crc32_update(~0u, b, 4096),
             ~qhca_roce_crc32_update_table(~0u, b, 4096));
}

static void test_inet_csum(void)
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

static void test_icrc_connectx4_cnp(void)
{
    size_t len = sizeof(cx4_cnp_frame);
    QhcaRocePkt pkt;

    CHECK_EQ(len, 74);
    CHECK_EQ(qhca_roce_icrc(cx4_cnp_frame, len), 0x2a00fd82);
    CHECK_EQ(qhca_roce_icrc(cx4_cnp_frame, len),
             get_le32(cx4_cnp_frame + len - 4));
    /* Valid up to the BTH; CNP is an opcode we do not support */
    CHECK_EQ(parse_exact(cx4_cnp_frame, len, &pkt),
             QHCA_ROCE_ERR_BAD_OPCODE);
    pcap_record(cx4_cnp_frame, len, len);
}

static void test_icrc_scapy_uc(void)
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

static void test_icrc_masked_fields(void)
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

/* What IBA 1.4 (chapter 9, table 38 and 9.2/9.3) says each opcode carries */
static const struct {
    uint8_t opcode;
    bool payload;
    int n_ext;
    QhcaRoceExt ext[2];
    int ext_len;
} expected_ops[] = {
    { 0x00, true, 0, { 0 }, 0 },
    { 0x01, true, 0, { 0 }, 0 },
    { 0x02, true, 0, { 0 }, 0 },
    { 0x03, true, 1, { QHCA_ROCE_EXT_IMMDT }, 4 },
    { 0x04, true, 0, { 0 }, 0 },
    { 0x05, true, 1, { QHCA_ROCE_EXT_IMMDT }, 4 },
    { 0x06, true, 1, { QHCA_ROCE_EXT_RETH }, 16 },
    { 0x07, true, 0, { 0 }, 0 },
    { 0x08, true, 0, { 0 }, 0 },
    { 0x09, true, 1, { QHCA_ROCE_EXT_IMMDT }, 4 },
    { 0x0a, true, 1, { QHCA_ROCE_EXT_RETH }, 16 },
    { 0x0b, true, 2, { QHCA_ROCE_EXT_RETH, QHCA_ROCE_EXT_IMMDT }, 20 },
    { 0x0c, false, 1, { QHCA_ROCE_EXT_RETH }, 16 },
    { 0x0d, true, 1, { QHCA_ROCE_EXT_AETH }, 4 },
    { 0x0e, true, 0, { 0 }, 0 },
    { 0x0f, true, 1, { QHCA_ROCE_EXT_AETH }, 4 },
    { 0x10, true, 1, { QHCA_ROCE_EXT_AETH }, 4 },
    { 0x11, false, 1, { QHCA_ROCE_EXT_AETH }, 4 },
    { 0x12, false, 2, { QHCA_ROCE_EXT_AETH, QHCA_ROCE_EXT_ATOMIC_ACK_ETH },
      12 },
    { 0x13, false, 1, { QHCA_ROCE_EXT_ATOMIC_ETH }, 28 },
    { 0x14, false, 1, { QHCA_ROCE_EXT_ATOMIC_ETH }, 28 },
    { 0x16, true, 1, { QHCA_ROCE_EXT_IETH }, 4 },
    { 0x17, true, 1, { QHCA_ROCE_EXT_IETH }, 4 },
    /* IBA 1.5: FLUSH (FETH then RETH, no payload), ATOMIC WRITE */
    { 0x1c, false, 2, { QHCA_ROCE_EXT_FETH, QHCA_ROCE_EXT_RETH }, 20 },
    { 0x1d, true, 1, { QHCA_ROCE_EXT_RETH }, 16 },
    /* UC (IBA table 38): SEND and RDMA WRITE only */
    { 0x20, true, 0, { 0 }, 0 },
    { 0x21, true, 0, { 0 }, 0 },
    { 0x22, true, 0, { 0 }, 0 },
    { 0x23, true, 1, { QHCA_ROCE_EXT_IMMDT }, 4 },
    { 0x24, true, 0, { 0 }, 0 },
    { 0x25, true, 1, { QHCA_ROCE_EXT_IMMDT }, 4 },
    { 0x26, true, 1, { QHCA_ROCE_EXT_RETH }, 16 },
    { 0x27, true, 0, { 0 }, 0 },
    { 0x28, true, 0, { 0 }, 0 },
    { 0x29, true, 1, { QHCA_ROCE_EXT_IMMDT }, 4 },
    { 0x2a, true, 1, { QHCA_ROCE_EXT_RETH }, 16 },
    { 0x2b, true, 2, { QHCA_ROCE_EXT_RETH, QHCA_ROCE_EXT_IMMDT }, 20 },
    { 0x64, true, 1, { QHCA_ROCE_EXT_DETH }, 8 },
    { 0x65, true, 2, { QHCA_ROCE_EXT_DETH, QHCA_ROCE_EXT_IMMDT }, 12 },
};

static void test_opcode_table(void)
{
    int opcode, i, j, found;

    for (opcode = 0; opcode < 256; opcode++) {
        const QhcaRoceOpInfo *op = qhca_roce_op_info(opcode);

        found = -1;
        for (i = 0; i < (int)N_ELEMS(expected_ops); i++) {
            if (expected_ops[i].opcode == opcode) {
                found = i;
            }
        }
        if (found < 0) {
            CHECK(op == NULL);
            continue;
        }
        CHECK(op != NULL);
        if (!op) {
            continue;
        }
        i = found;
        CHECK(op->name && op->name[0]);
        CHECK_EQ(!!(op->flags & QHCA_ROCE_OPF_PAYLOAD),
                 expected_ops[i].payload);
        CHECK_EQ(op->n_ext, expected_ops[i].n_ext);
        CHECK_EQ(op->ext_len, expected_ops[i].ext_len);
        for (j = 0; j < expected_ops[i].n_ext && j < op->n_ext; j++) {
            CHECK_EQ(op->ext[j], expected_ops[i].ext[j]);
        }
        /* Flags agree with the headers */
        CHECK_EQ(!!(op->flags & QHCA_ROCE_OPF_IMM),
                 op_has(op, QHCA_ROCE_EXT_IMMDT));
        CHECK_EQ(!!(op->flags & QHCA_ROCE_OPF_INV),
                 op_has(op, QHCA_ROCE_EXT_IETH));
        CHECK_EQ(!!(op->flags & QHCA_ROCE_OPF_UD),
                 op_has(op, QHCA_ROCE_EXT_DETH));
        CHECK_EQ(!!(op->flags & QHCA_ROCE_OPF_ACK),
                 op_has(op, QHCA_ROCE_EXT_AETH));
        CHECK_EQ(!!(op->flags & QHCA_ROCE_OPF_REQUEST) +
                 !!(op->flags & QHCA_ROCE_OPF_RESPONSE), 1);
    }
    CHECK(qhca_roce_op_info(0x15) == NULL);     /* reserved */
    CHECK(qhca_roce_op_info(0x2c) == NULL);     /* UC: no READ */
    CHECK(qhca_roce_op_info(0x24) != NULL);     /* UC SEND_ONLY */
    for (i = QHCA_ROCE_OP_UC_SEND_FIRST;
         i <= QHCA_ROCE_OP_UC_RDMA_WRITE_ONLY_IMM; i++) {
        const QhcaRoceOpInfo *uc = qhca_roce_op_info(i);
        const QhcaRoceOpInfo *rc = qhca_roce_op_info(i - QHCA_ROCE_OP_UC_BASE);

        /* a UC opcode is its RC twin's packet, UC, never acknowledged */
        CHECK(uc && rc);
        CHECK_EQ(uc->flags, rc->flags | QHCA_ROCE_OPF_UC);
        CHECK_EQ(uc->ext_len, rc->ext_len);
    }
    CHECK(qhca_roce_op_info(0x81) == NULL);     /* CNP */
}

static void test_udp_sport(void)
{
    uint32_t i;

    CHECK_EQ(qhca_roce_udp_sport(0), 0xc000);
    CHECK_EQ(qhca_roce_udp_sport(0xffffffff), 0xffff);
    CHECK_EQ(qhca_roce_udp_sport(0x12345), 0xc000 | 0x2345);
    for (i = 0; i < 1000; i++) {
        uint16_t p = qhca_roce_udp_sport(rnd64());

        CHECK(p >= 0xc000);
    }
    /* Soft-RoCE: src_port = 0xc000 + hash_32(qpn, 14) */
    CHECK_EQ(qhca_roce_qpn_hash(1), 0x1872);
    CHECK_EQ(qhca_roce_qpn_hash(17), 0x1f94);
    CHECK_EQ(qhca_roce_qpn_hash(18), 0x3806);
    CHECK_EQ(qhca_roce_qpn_hash(0x123456), 0x168);
    CHECK_EQ(qhca_roce_udp_sport(qhca_roce_qpn_hash(0xffffff)), 0xf94d);
}

/* Extension header lengths from IBA 1.4 section 9.3 */
static uint32_t ext_len_of(QhcaRoceExt ext)
{
    switch (ext) {
    case QHCA_ROCE_EXT_DETH:
        return 8;
    case QHCA_ROCE_EXT_RETH:
        return 16;
    case QHCA_ROCE_EXT_ATOMIC_ETH:
        return 28;
    case QHCA_ROCE_EXT_ATOMIC_ACK_ETH:
        return 8;
    case QHCA_ROCE_EXT_AETH:
    case QHCA_ROCE_EXT_IMMDT:
    case QHCA_ROCE_EXT_IETH:
    case QHCA_ROCE_EXT_FETH:
        return 4;
    default:
        return 0;
    }
}

static const size_t payload_lens[] = {
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 255, 256, 1023, 1024, 4095, 4096,
};

static void check_roundtrip(uint8_t opcode, size_t plen)
{
    const QhcaRoceOpInfo *op = qhca_roce_op_info(opcode);
    uint8_t *payload = malloc(plen + 1);
    uint8_t *f;
    QhcaRoceHdr h;
    QhcaRocePkt pkt;
    QhcaRoceHdr *g = &pkt.hdr;
    size_t len, i, exp_pad = (4 - plen % 4) % 4;
    /* IPv6 puts the UDP header and all after it 20 bytes further on */
    size_t u = use_ip6 ? 54 : 34, b = u + 8;
    uint32_t off;

    assert(payload);
    for (i = 0; i < plen; i++) {
        payload[i] = rnd(256);
    }
    random_hdr(&h, opcode);
    f = build_frame(&h, payload, plen, &len);
    CHECK_EQ(len, u + 8 + 12 + op->ext_len + plen + exp_pad + 4);
    pcap_record(f, len, len);

    /* Fixed fields as the builder must write them */
    if (use_ip6) {
        CHECK_EQ(get_be16(f + 12), 0x86dd);
        CHECK_EQ(f[14] >> 4, 6);
        CHECK_EQ((get_be16(f + 14) >> 4) & 0xff, h.tos);
        CHECK_EQ((f[15] & 0xf) << 16 | get_be16(f + 16), h.flow_label);
        CHECK_EQ(get_be16(f + 14 + 4), len - 54);
        CHECK_EQ(f[14 + 6], 17);
        CHECK_EQ(f[14 + 7], h.ttl);
        CHECK(memcmp(f + 22, h.src_ip6, 16) == 0);
        CHECK(memcmp(f + 38, h.dst_ip6, 16) == 0);
        /* UDP checksum present and right over the pseudo-header */
        CHECK(get_be16(f + u + 6) != 0);
        {
            uint8_t *ph = malloc(40 + len - u);

            assert(ph);
            memcpy(ph, f + 22, 32);
            memset(ph + 32, 0, 8);
            put_be16(ph + 34, len - u);
            ph[39] = 17;
            memcpy(ph + 40, f + u, len - u);
            CHECK_EQ(qhca_roce_inet_csum(ph, 40 + len - u), 0);
            free(ph);
        }
    } else {
        CHECK_EQ(get_be16(f + 12), 0x0800);
        CHECK_EQ(f[14], 0x45);
        CHECK_EQ(get_be16(f + 14 + 2), len - 14);
        CHECK_EQ(get_be16(f + 14 + 6), 0x4000);     /* DF, offset 0 */
        CHECK_EQ(f[14 + 9], 17);
        CHECK_EQ(qhca_roce_inet_csum(f + 14, 20), 0);
        CHECK_EQ(get_be16(f + u + 6), 0);
    }
    CHECK_EQ(get_be16(f + u + 2), 4791);
    CHECK_EQ(get_be16(f + u + 4), len - u);
    CHECK_EQ((f[b + 1] >> 4) & 3, exp_pad);
    CHECK_EQ(f[b + 1] & 0xf, 0);
    CHECK_EQ(f[b + 8] & 0x7f, 0);
    for (i = 0; i < exp_pad; i++) {
        CHECK_EQ(f[len - 4 - exp_pad + i], 0);
    }

    CHECK_EQ(parse_exact(f, len, &pkt), QHCA_ROCE_OK);
    CHECK(pkt.op == op);
    CHECK_EQ(pkt.frame_len, len);
    CHECK_EQ(pkt.ip_off, 14);
    CHECK_EQ(pkt.ip_len, len - 14);
    CHECK_EQ(pkt.udp_off, u);
    CHECK_EQ(pkt.udp_len, len - u);
    CHECK_EQ(pkt.udp_csum, get_be16(f + u + 6));
    CHECK_EQ(pkt.bth_off, b);
    off = b + 12;
    for (i = 0; i < QHCA_ROCE_EXT_COUNT; i++) {
        if (!op_has(op, i)) {
            CHECK_EQ(pkt.ext_off[i], 0);
        }
    }
    for (i = 0; i < op->n_ext; i++) {
        CHECK_EQ(pkt.ext_off[op->ext[i]], off);
        off += ext_len_of(op->ext[i]);
    }
    CHECK_EQ(pkt.payload_off, b + 12 + op->ext_len);
    CHECK_EQ(off, pkt.payload_off);
    CHECK_EQ(pkt.payload_len, plen);
    CHECK_EQ(pkt.pad, exp_pad);
    CHECK_EQ(pkt.icrc_off, len - 4);
    CHECK_EQ(pkt.icrc, get_le32(f + len - 4));
    CHECK(plen == 0 || memcmp(f + pkt.payload_off, payload, plen) == 0);

    CHECK(memcmp(g->dst_mac, h.dst_mac, 6) == 0);
    CHECK(memcmp(g->src_mac, h.src_mac, 6) == 0);
    CHECK_EQ(g->ipv6, h.ipv6);
    CHECK_EQ(g->src_ip, h.src_ip);
    CHECK_EQ(g->dst_ip, h.dst_ip);
    CHECK(memcmp(g->src_ip6, h.src_ip6, 16) == 0);
    CHECK(memcmp(g->dst_ip6, h.dst_ip6, 16) == 0);
    CHECK_EQ(g->flow_label, h.flow_label);
    CHECK_EQ(g->tos, h.tos);
    CHECK_EQ(g->ttl, h.ttl);
    CHECK_EQ(g->ip_id, h.ip_id);
    CHECK_EQ(g->src_port, h.src_port);
    CHECK_EQ(g->opcode, opcode);
    CHECK_EQ(g->se, h.se);
    CHECK_EQ(g->mig, h.mig);
    CHECK_EQ(g->pad, exp_pad);
    CHECK_EQ(g->tver, 0);
    CHECK_EQ(g->pkey, h.pkey);
    CHECK_EQ(g->fecn, h.fecn);
    CHECK_EQ(g->becn, h.becn);
    CHECK_EQ(g->dest_qp, h.dest_qp);
    CHECK_EQ(g->ack_req, h.ack_req);
    CHECK_EQ(g->psn, h.psn);
    if (op_has(op, QHCA_ROCE_EXT_RETH)) {
        CHECK_EQ(g->reth.va, h.reth.va);
        CHECK_EQ(g->reth.rkey, h.reth.rkey);
        CHECK_EQ(g->reth.dma_len, h.reth.dma_len);
    } else {
        CHECK_EQ(g->reth.va | g->reth.rkey | g->reth.dma_len, 0);
    }
    if (op_has(op, QHCA_ROCE_EXT_AETH)) {
        CHECK_EQ(g->aeth.syndrome, h.aeth.syndrome);
        CHECK_EQ(g->aeth.msn, h.aeth.msn);
    } else {
        CHECK_EQ(g->aeth.syndrome | g->aeth.msn, 0);
    }
    if (op_has(op, QHCA_ROCE_EXT_ATOMIC_ETH)) {
        CHECK_EQ(g->atomic.va, h.atomic.va);
        CHECK_EQ(g->atomic.rkey, h.atomic.rkey);
        CHECK_EQ(g->atomic.swap_add, h.atomic.swap_add);
        CHECK_EQ(g->atomic.compare, h.atomic.compare);
    }
    if (op_has(op, QHCA_ROCE_EXT_ATOMIC_ACK_ETH)) {
        CHECK_EQ(g->atomic_ack_orig, h.atomic_ack_orig);
    }
    CHECK_EQ(g->imm, op_has(op, QHCA_ROCE_EXT_IMMDT) ? h.imm : 0);
    CHECK_EQ(g->ieth_rkey, op_has(op, QHCA_ROCE_EXT_IETH) ? h.ieth_rkey : 0);
    CHECK_EQ(g->feth, op_has(op, QHCA_ROCE_EXT_FETH) ? h.feth : 0);
    if (op_has(op, QHCA_ROCE_EXT_DETH)) {
        CHECK_EQ(g->deth.qkey, h.deth.qkey);
        CHECK_EQ(g->deth.src_qp, h.deth.src_qp);
    }

    /* Building the headers and payload separately gives the same frame */
    {
        uint8_t *f2 = malloc(len);
        int off2;

        assert(f2);
        memset(f2, 0xa5, len);
        off2 = qhca_roce_build_headers(f2, len, &h, plen);
        CHECK_EQ(off2, pkt.payload_off);
        if (off2 > 0) {
            memcpy(f2 + off2, payload, plen);
            qhca_roce_finish(f2, len);
            CHECK(memcmp(f, f2, len) == 0);
        }
        free(f2);
    }
    free(f);
    free(payload);
}

static void test_roundtrip(void)
{
    size_t i, j;

    for (i = 0; i < N_ELEMS(expected_ops); i++) {
        const QhcaRoceOpInfo *op = qhca_roce_op_info(expected_ops[i].opcode);

        for (j = 0; j < N_ELEMS(payload_lens); j++) {
            if (payload_lens[j] && !(op->flags & QHCA_ROCE_OPF_PAYLOAD)) {
                continue;
            }
            check_roundtrip(expected_ops[i].opcode, payload_lens[j]);
        }
    }
}

/* A known frame, byte for byte, so that field placement is checked too */
static void test_build_known_frame(void)
{
    static const uint8_t expect_hdr[] = {
        /* Ethernet */
        0x52, 0x54, 0x00, 0x00, 0x00, 0x02, 0x52, 0x54, 0x00, 0x00, 0x00,
        0x01, 0x08, 0x00,
        /* IPv4: tos 0x02, len 68, id 0x1234, DF, ttl 64, UDP, csum */
        0x45, 0x02, 0x00, 0x44, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0x00,
        0x00, 0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x02,
        /* UDP: 0xc123 -> 4791, len 48, no checksum */
        0xc1, 0x23, 0x12, 0xb7, 0x00, 0x30, 0x00, 0x00,
        /* BTH: WRITE_ONLY_IMM, SE, pad 1, pkey, QP 0x000102, A, PSN */
        0x0b, 0x90, 0xff, 0xff, 0x00, 0x00, 0x01, 0x02, 0x80, 0xab, 0xcd,
        0xef,
        /* RETH: va, rkey, len */
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0xde, 0xad, 0xbe,
        0xef, 0x00, 0x00, 0x00, 0x03,
        /* ImmDt */
        0x11, 0x22, 0x33, 0x44,
        /* payload "abc", pad */
        'a', 'b', 'c', 0x00,
    };
    QhcaRoceHdr h = {
        .dst_mac = { 0x52, 0x54, 0x00, 0x00, 0x00, 0x02 },
        .src_mac = { 0x52, 0x54, 0x00, 0x00, 0x00, 0x01 },
        .src_ip = 0x0a000001, .dst_ip = 0x0a000002,
        .tos = 2, .ttl = 64, .ip_id = 0x1234, .src_port = 0xc123,
        .opcode = QHCA_ROCE_OP_RC_RDMA_WRITE_ONLY_IMM, .se = true,
        .pkey = 0xffff, .dest_qp = 0x102, .ack_req = true, .psn = 0xabcdef,
        .reth = { .va = 0x0102030405060708ull, .rkey = 0xdeadbeef,
                  .dma_len = 3 },
        .imm = 0x11223344,
        .pad = 3, .tver = 5,        /* ignored by the builder */
    };
    uint8_t expect[sizeof(expect_hdr) + 4];
    uint8_t f[sizeof(expect)];
    int r;

    memcpy(expect, expect_hdr, sizeof(expect_hdr));
    put_be16(expect + 24, qhca_roce_inet_csum(expect + 14, 20));
    r = qhca_roce_build(f, sizeof(f), &h, "abc", 3);
    CHECK_EQ(r, sizeof(f));
    CHECK_EQ(get_be16(expect + 24), 0x1471);
    for (r = 0; r < (int)sizeof(expect_hdr); r++) {
        if (f[r] != expect[r]) {
            printf("# byte %d: 0x%02x, expected 0x%02x\n", r, f[r], expect[r]);
            case_failed = true;
        }
    }
    CHECK_EQ(get_le32(f + sizeof(expect_hdr)),
             qhca_roce_icrc(f, sizeof(f)));
    pcap_record(f, sizeof(f), sizeof(f));
}

static void test_build_errors(void)
{
    uint8_t *buf = malloc(QHCA_ROCE_MAX_FRAME_LEN);
    QhcaRoceHdr h;
    size_t max_payload, len;
    int r;

    assert(buf);
    random_hdr(&h, QHCA_ROCE_OP_RC_SEND_ONLY);

    h.opcode = 0x15;
    CHECK_EQ(qhca_roce_build(buf, 256, &h, NULL, 0),
             -QHCA_ROCE_ERR_BAD_OPCODE);
    CHECK_EQ(qhca_roce_frame_len(0x15, 0), 0);
    h.opcode = 0x2c;                        /* UC has no READ */
    CHECK_EQ(qhca_roce_build(buf, 256, &h, NULL, 0),
             -QHCA_ROCE_ERR_BAD_OPCODE);

    h.opcode = QHCA_ROCE_OP_RC_ACKNOWLEDGE;
    CHECK_EQ(qhca_roce_build(buf, 256, &h, "x", 1), -QHCA_ROCE_ERR_PAYLOAD);
    CHECK_EQ(qhca_roce_frame_len(QHCA_ROCE_OP_RC_ACKNOWLEDGE, 1), 0);
    CHECK_EQ(qhca_roce_frame_len(QHCA_ROCE_OP_RC_ACKNOWLEDGE, 0), 62);
    h.aeth.msn = 0x1000000;
    CHECK_EQ(qhca_roce_build(buf, 256, &h, NULL, 0),
             -QHCA_ROCE_ERR_FIELD_RANGE);
    /* A field of a header the opcode does not carry does not matter */
    h.opcode = QHCA_ROCE_OP_RC_SEND_ONLY;
    CHECK(qhca_roce_build(buf, 256, &h, NULL, 0) > 0);
    h.dest_qp = 0x1000000;
    CHECK_EQ(qhca_roce_build(buf, 256, &h, NULL, 0),
             -QHCA_ROCE_ERR_FIELD_RANGE);
    h.dest_qp = 5;
    h.psn = 0x1000000;
    CHECK_EQ(qhca_roce_build(buf, 256, &h, NULL, 0),
             -QHCA_ROCE_ERR_FIELD_RANGE);
    h.psn = 0;
    h.opcode = QHCA_ROCE_OP_UD_SEND_ONLY;
    h.deth.src_qp = 0x1000000;
    CHECK_EQ(qhca_roce_build(buf, 256, &h, NULL, 0),
             -QHCA_ROCE_ERR_FIELD_RANGE);
    h.deth.src_qp = 1;

    /* The buffer must hold the whole frame; nothing is written past it */
    len = qhca_roce_frame_len(QHCA_ROCE_OP_UD_SEND_ONLY, 10);
    CHECK_EQ(len, 14 + 20 + 8 + 12 + 8 + 12 + 4);
    {
        uint8_t *small = malloc(len - 1);

        assert(small);
        CHECK_EQ(qhca_roce_build(small, len - 1, &h, "0123456789", 10),
                 -QHCA_ROCE_ERR_BUF_TOO_SMALL);
        CHECK_EQ(qhca_roce_build_headers(small, len - 1, &h, 10),
                 -QHCA_ROCE_ERR_BUF_TOO_SMALL);
        free(small);
    }

    /* The largest frame IPv4 allows, and one byte more */
    h.opcode = QHCA_ROCE_OP_RC_SEND_ONLY;
    max_payload = 65535 - 20 - 8 - 12 - 4 - 3;     /* padded to 4 */
    CHECK_EQ(max_payload % 4, 0);
    CHECK_EQ(qhca_roce_frame_len(h.opcode, max_payload), 14 + 65532);
    CHECK_EQ(qhca_roce_frame_len(h.opcode, max_payload + 1), 0);
    CHECK_EQ(qhca_roce_build(buf, QHCA_ROCE_MAX_FRAME_LEN, &h, NULL,
                             max_payload + 1), -QHCA_ROCE_ERR_TOO_LONG);
    CHECK_EQ(qhca_roce_frame_len(h.opcode, (size_t)-1), 0);
    CHECK_EQ(qhca_roce_frame_len(h.opcode, 0x100000000ull), 0);
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
        }
        free(payload);
    }
    free(buf);

    CHECK(strcmp(qhca_roce_strerror(QHCA_ROCE_ERR_ICRC), "bad ICRC") == 0);
    CHECK(strcmp(qhca_roce_strerror(QHCA_ROCE_ERR_COUNT),
                 "unknown error") == 0);
    for (r = 0; r < QHCA_ROCE_ERR_COUNT; r++) {
        CHECK(qhca_roce_strerror(r) != NULL);
    }
}

static void test_parse_errors(void)
{
    size_t len;

    make_base(QHCA_ROCE_OP_RC_SEND_ONLY, 5);
    len = base_len;
    CHECK_EQ(parse_base(len), QHCA_ROCE_OK);

    CHECK_EQ(parse_base(0), QHCA_ROCE_ERR_TOO_SHORT);
    CHECK_EQ(parse_base(41), QHCA_ROCE_ERR_TOO_SHORT);

    put_be16(base + 12, 0x86dd);    /* an IPv4 header: version 4, not 6 */
    CHECK_EQ(parse_base(len), QHCA_ROCE_ERR_IP_VERSION);
    put_be16(base + 12, 0x8100);
    CHECK_EQ(parse_base(len), QHCA_ROCE_ERR_NOT_IPV4);

    make_base(QHCA_ROCE_OP_RC_SEND_ONLY, 5);
    base[14] = 0x65;
    fix_ip_csum(base);
    CHECK_EQ(parse_base(len), QHCA_ROCE_ERR_IP_VERSION);
    base[14] = 0x46;
    fix_ip_csum(base);
    CHECK_EQ(parse_base(len), QHCA_ROCE_ERR_IP_HDR_LEN);
    base[14] = 0x44;
    fix_ip_csum(base);
    CHECK_EQ(parse_base(len), QHCA_ROCE_ERR_IP_HDR_LEN);

    make_base(QHCA_ROCE_OP_RC_SEND_ONLY, 5);
    put_be16(base + 16, len - 14 + 1);
    fix_ip_csum(base);
    CHECK_EQ(parse_base(len), QHCA_ROCE_ERR_IP_TOTAL_LEN);
    put_be16(base + 16, 27);
    fix_ip_csum(base);
    CHECK_EQ(parse_base(len), QHCA_ROCE_ERR_IP_TOTAL_LEN);
    put_be16(base + 16, 0xffff);
    fix_ip_csum(base);
    CHECK_EQ(parse_base(len), QHCA_ROCE_ERR_IP_TOTAL_LEN);

    make_base(QHCA_ROCE_OP_RC_SEND_ONLY, 5);
    put_be16(base + 20, 0x6000);    /* DF | MF */
    fix_ip_csum(base);
    CHECK_EQ(parse_base(len), QHCA_ROCE_ERR_IP_FRAGMENT);
    put_be16(base + 20, 0x0001);    /* offset 8 */
    fix_ip_csum(base);
    CHECK_EQ(parse_base(len), QHCA_ROCE_ERR_IP_FRAGMENT);
    put_be16(base + 20, 0x0000);    /* no DF: fine (flags are in ICRC) */
    fix_ip_csum(base);
    CHECK_EQ(parse_base(len), QHCA_ROCE_ERR_ICRC);
    fix_icrc(base, len);
    CHECK_EQ(parse_base(len), QHCA_ROCE_OK);

    make_base(QHCA_ROCE_OP_RC_SEND_ONLY, 5);
    base[24] ^= 1;
    CHECK_EQ(parse_base(len), QHCA_ROCE_ERR_IP_CSUM);
    base[24] ^= 1;
    base[22] ^= 1;                  /* TTL: not in the ICRC, but in csum */
    CHECK_EQ(parse_base(len), QHCA_ROCE_ERR_IP_CSUM);
    fix_ip_csum(base);
    CHECK_EQ(parse_base(len), QHCA_ROCE_OK);

    make_base(QHCA_ROCE_OP_RC_SEND_ONLY, 5);
    base[23] = 6;
    fix_ip_csum(base);
    CHECK_EQ(parse_base(len), QHCA_ROCE_ERR_NOT_UDP);

    make_base(QHCA_ROCE_OP_RC_SEND_ONLY, 5);
    put_be16(base + 36, 4790);
    CHECK_EQ(parse_base(len), QHCA_ROCE_ERR_NOT_ROCE_PORT);

    make_base(QHCA_ROCE_OP_RC_SEND_ONLY, 5);
    put_be16(base + 38, len - 34 - 1);
    CHECK_EQ(parse_base(len), QHCA_ROCE_ERR_UDP_LEN);
    put_be16(base + 38, len - 34 + 1);
    CHECK_EQ(parse_base(len), QHCA_ROCE_ERR_UDP_LEN);

    /* UDP checksum: 0 means none; a right one passes; a wrong one fails */
    make_base(QHCA_ROCE_OP_RC_SEND_ONLY, 5);
    {
        uint8_t ph[12 + 256];
        uint16_t ulen = len - 34;

        memcpy(ph, base + 26, 8);
        ph[8] = 0;
        ph[9] = 17;
        put_be16(ph + 10, ulen);
        memcpy(ph + 12, base + 34, ulen);
        put_be16(base + 40, qhca_roce_inet_csum(ph, 12 + ulen));
        CHECK(get_be16(base + 40) != 0);
        CHECK_EQ(parse_base(len), QHCA_ROCE_OK);
        base[40] ^= 0x80;
        CHECK_EQ(parse_base(len), QHCA_ROCE_ERR_UDP_CSUM);
    }

    /* UDP payload too short for BTH + ICRC, or for the RETH */
    make_base(QHCA_ROCE_OP_RC_SEND_ONLY, 0);
    reframe(base, 14 + 20 + 8 + 12);
    CHECK_EQ(parse_base(14 + 20 + 8 + 12), QHCA_ROCE_ERR_SHORT_TRANSPORT);
    reframe(base, 14 + 20 + 8 + 4);
    CHECK_EQ(parse_base(14 + 20 + 8 + 4), QHCA_ROCE_ERR_SHORT_TRANSPORT);
    reframe(base, 14 + 20 + 8);
    CHECK_EQ(parse_base(14 + 20 + 8), QHCA_ROCE_ERR_SHORT_TRANSPORT);
    make_base(QHCA_ROCE_OP_RC_RDMA_WRITE_ONLY, 0);
    CHECK_EQ(parse_base(base_len), QHCA_ROCE_OK);
    reframe(base, base_len - 4);
    CHECK_EQ(parse_base(base_len - 4), QHCA_ROCE_ERR_SHORT_TRANSPORT);
    make_base(QHCA_ROCE_OP_RC_COMPARE_SWAP, 0);
    reframe(base, base_len - 8);
    CHECK_EQ(parse_base(base_len - 8), QHCA_ROCE_ERR_SHORT_TRANSPORT);

    /* Opcodes we do not take, even with a right ICRC */
    make_base(QHCA_ROCE_OP_RC_SEND_ONLY, 5);
    {
        static const uint8_t bad_ops[] = { 0x15, 0x18, 0x1f, 0x2c, 0x2f,
                                           0x40, 0x60, 0x63, 0x66, 0x81,
                                           0xff };
        size_t i;

        for (i = 0; i < N_ELEMS(bad_ops); i++) {
            base[42] = bad_ops[i];
            fix_icrc(base, len);
            CHECK_EQ(parse_base(len), QHCA_ROCE_ERR_BAD_OPCODE);
        }
    }

    make_base(QHCA_ROCE_OP_RC_SEND_ONLY, 5);
    base[43] |= 1;
    fix_icrc(base, len);
    CHECK_EQ(parse_base(len), QHCA_ROCE_ERR_TVER);

    make_base(QHCA_ROCE_OP_RC_SEND_ONLY, 5);
    put_be16(base + 44, 0x7fff);    /* limited member: accepted */
    fix_icrc(base, len);
    CHECK_EQ(parse_base(len), QHCA_ROCE_OK);
    put_be16(base + 44, 0x8001);
    fix_icrc(base, len);
    CHECK_EQ(parse_base(len), QHCA_ROCE_ERR_PKEY);
    put_be16(base + 44, 0x0000);
    fix_icrc(base, len);
    CHECK_EQ(parse_base(len), QHCA_ROCE_ERR_PKEY);

    /* Pad count larger than what is there, or a misaligned payload */
    make_base(QHCA_ROCE_OP_RC_SEND_ONLY, 0);
    base[43] |= 3 << 4;
    fix_icrc(base, base_len);
    CHECK_EQ(parse_base(base_len), QHCA_ROCE_ERR_PAD);
    make_base(QHCA_ROCE_OP_RC_SEND_ONLY, 8);
    reframe(base, base_len - 1);
    CHECK_EQ(parse_base(base_len - 1), QHCA_ROCE_ERR_PAD);
    make_base(QHCA_ROCE_OP_RC_SEND_ONLY, 8);
    base[43] |= 3 << 4;             /* 8 bytes, pad 3: 5-byte payload */
    fix_icrc(base, base_len);
    {
        QhcaRocePkt pkt;

        CHECK_EQ(parse_exact(base, base_len, &pkt), QHCA_ROCE_OK);
        CHECK_EQ(pkt.payload_len, 5);
        CHECK_EQ(pkt.pad, 3);
    }
    make_base(QHCA_ROCE_OP_RC_ACKNOWLEDGE, 0);
    base[43] |= 1 << 4;
    fix_icrc(base, base_len);
    CHECK_EQ(parse_base(base_len), QHCA_ROCE_ERR_PAD);

    /* A payload after an ACK or a read request */
    make_base(QHCA_ROCE_OP_RC_ACKNOWLEDGE, 0);
    reframe(base, base_len + 4);
    CHECK_EQ(parse_base(base_len + 4), QHCA_ROCE_ERR_PAYLOAD);
    make_base(QHCA_ROCE_OP_RC_RDMA_READ_REQUEST, 0);
    reframe(base, base_len + 8);
    CHECK_EQ(parse_base(base_len + 8), QHCA_ROCE_ERR_PAYLOAD);

    /* ICRC: payload, pad or ICRC changed */
    make_base(QHCA_ROCE_OP_RC_SEND_ONLY, 5);
    base[54] ^= 0x01;
    CHECK_EQ(parse_base(len), QHCA_ROCE_ERR_ICRC);
    make_base(QHCA_ROCE_OP_RC_SEND_ONLY, 5);
    base[len - 5] ^= 0x01;          /* a pad byte */
    CHECK_EQ(parse_base(len), QHCA_ROCE_ERR_ICRC);
    make_base(QHCA_ROCE_OP_RC_SEND_ONLY, 5);
    base[len - 1] ^= 0x80;
    CHECK_EQ(parse_base(len), QHCA_ROCE_ERR_ICRC);
    /* The ICRC is little-endian: the byte-swapped value is wrong */
    make_base(QHCA_ROCE_OP_RC_SEND_ONLY, 5);
    {
        uint32_t v = get_le32(base + len - 4);

        base[len - 4] = v >> 24;
        base[len - 3] = v >> 16;
        base[len - 2] = v >> 8;
        base[len - 1] = v;
        CHECK_EQ(parse_base(len), QHCA_ROCE_ERR_ICRC);
    }
    /* FECN/BECN/reserved are outside the ICRC: changing them is fine */
    make_base(QHCA_ROCE_OP_RC_SEND_ONLY, 5);
    base[46] ^= 0xff;
    CHECK_EQ(parse_base(len), QHCA_ROCE_OK);
}

static void test_parse_trailer(void)
{
    QhcaRocePkt pkt;
    size_t extra;

    /* Ethernet padding or other bytes after the IP datagram are ignored */
    make_base(QHCA_ROCE_OP_RC_ACKNOWLEDGE, 0);
    CHECK_EQ(base_len, 62);
    for (extra = 0; extra < 40; extra++) {
        base[base_len + extra] = rnd(256);
        CHECK_EQ(parse_exact(base, base_len + extra + 1, &pkt),
                 QHCA_ROCE_OK);
        CHECK_EQ(pkt.frame_len, base_len);
        CHECK_EQ(pkt.icrc_off, base_len - 4);
    }
    /* The reference UC frame ends in 4 bytes of Ethernet padding */
    CHECK_EQ(parse_exact(scapy_uc_frame, sizeof(scapy_uc_frame), &pkt),
             QHCA_ROCE_OK);
    CHECK_EQ(pkt.frame_len, SCAPY_UC_LEN);
}

/* Every frame shorter than its IP datagram is rejected, without overread */
static void test_parse_truncated(void)
{
    size_t i, j, len, l;

    for (i = 0; i < N_ELEMS(expected_ops); i++) {
        const QhcaRoceOpInfo *op = qhca_roce_op_info(expected_ops[i].opcode);

        for (j = 0; j < 6; j++) {
            size_t plen = (op->flags & QHCA_ROCE_OPF_PAYLOAD) ? j * 3 : 0;
            QhcaRoceHdr h;
            QhcaRocePkt pkt;
            uint8_t *f;

            random_hdr(&h, expected_ops[i].opcode);
            f = build_frame(&h, (const uint8_t *)"abcdefghijklmnopq", plen,
                            &len);
            for (l = 0; l < len; l++) {
                QhcaRoceErr err = parse_exact(f, l, &pkt);

                CHECK(err == QHCA_ROCE_ERR_TOO_SHORT ||
                      err == QHCA_ROCE_ERR_IP_TOTAL_LEN);
            }
            CHECK_EQ(parse_exact(f, len, &pkt), QHCA_ROCE_OK);
            free(f);
        }
    }
}

/*
 * Flip every bit of valid frames: only the MAC addresses and the BTH's
 * FECN/BECN/reserved byte (outside the ICRC by design) may change without
 * the frame being rejected.
 */
static void test_parse_bit_flips(void)
{
    static const uint8_t ops[] = {
        QHCA_ROCE_OP_RC_SEND_ONLY, QHCA_ROCE_OP_RC_RDMA_WRITE_ONLY_IMM,
        QHCA_ROCE_OP_RC_ATOMIC_ACKNOWLEDGE, QHCA_ROCE_OP_UD_SEND_ONLY_IMM,
        QHCA_ROCE_OP_RC_FETCH_ADD,
    };
    size_t i, byte, len;
    int bit;

    for (i = 0; i < N_ELEMS(ops); i++) {
        QhcaRoceHdr h;
        QhcaRocePkt pkt;
        uint8_t *f;

        random_hdr(&h, ops[i]);
        f = build_frame(&h, (const uint8_t *)"0123456789", 7 * (i % 2), &len);
        for (byte = 0; byte < len; byte++) {
            for (bit = 0; bit < 8; bit++) {
                QhcaRoceErr err;
                bool free_bit;

                f[byte] ^= 1 << bit;
                err = parse_exact(f, len, &pkt);
                if (use_ip6) {
                    /*
                     * IPv6 has no header checksum: its traffic class, flow
                     * label and hop limit are in neither the ICRC nor the
                     * UDP checksum; a checksum flipped to 0 means "none".
                     * The UDP checksum does cover FECN/BECN.
                     */
                    free_bit = byte < 12 ||
                               (byte == 14 && bit < 4) ||
                               (byte >= 15 && byte <= 17) || byte == 21 ||
                               ((byte == 60 || byte == 61) &&
                                get_be16(f + 60) == 0);
                } else {
                    free_bit = byte < 12 || byte == 42 + 4;
                }
                if (free_bit) {
                    CHECK_EQ(err, QHCA_ROCE_OK);
                } else {
                    CHECK(err != QHCA_ROCE_OK);
                }
                f[byte] ^= 1 << bit;
            }
        }
        free(f);
    }
}

/* Invariants of a successful parse of len bytes */
static void check_pkt_sane(const QhcaRocePkt *pkt, size_t len)
{
    size_t i;

    CHECK(pkt->op != NULL);
    CHECK(pkt->frame_len <= len);
    CHECK(pkt->frame_len >= QHCA_ROCE_MIN_FRAME_LEN);
    CHECK_EQ(pkt->ip_len + 14, pkt->frame_len);
    CHECK_EQ(pkt->udp_len + pkt->udp_off, pkt->frame_len);
    CHECK_EQ(pkt->udp_off, pkt->hdr.ipv6 ? 54 : 34);
    CHECK_EQ(pkt->bth_off, pkt->udp_off + 8);
    CHECK(pkt->pad <= 3);
    CHECK_EQ((pkt->payload_len + pkt->pad) % 4, 0);
    CHECK_EQ(pkt->payload_off + pkt->payload_len + pkt->pad + 4,
             pkt->frame_len);
    CHECK_EQ(pkt->icrc_off + 4, pkt->frame_len);
    CHECK(pkt->payload_off >= pkt->bth_off + 12);
    for (i = 0; i < QHCA_ROCE_EXT_COUNT; i++) {
        CHECK(pkt->ext_off[i] == 0 ||
              (pkt->ext_off[i] >= pkt->bth_off + 12 &&
               pkt->ext_off[i] < pkt->payload_off));
    }
    if (pkt->op && !(pkt->op->flags & QHCA_ROCE_OPF_PAYLOAD)) {
        CHECK_EQ(pkt->payload_len, 0);
    }
    if (pkt->hdr.ipv6) {
        CHECK(qhca_roce_ip6_unicast(pkt->hdr.src_ip6));
        CHECK(qhca_roce_ip6_unicast(pkt->hdr.dst_ip6));
        CHECK(pkt->hdr.flow_label <= 0xfffff);
    }
}

static void check_parse_any(const uint8_t *buf, size_t len, int *n_ok)
{
    QhcaRocePkt pkt;
    QhcaRoceErr err = parse_exact(buf, len, &pkt);

    CHECK(err >= QHCA_ROCE_OK && err <= QHCA_ROCE_ERR_ICRC);
    if (err == QHCA_ROCE_OK) {
        check_pkt_sane(&pkt, len);
        (*n_ok)++;
    }
}

/* Random bytes, and random headers with valid checksums */
static void test_fuzz_random(void)
{
    uint8_t buf[400];
    int i, n_ok = 0;
    size_t j, len;

    for (i = 0; i < 100000; i++) {
        len = rnd(sizeof(buf) + 1);
        for (j = 0; j < len; j++) {
            buf[j] = rnd(256);
        }
        if (len >= 80 && rnd(3) == 0) {
            /* The same over IPv6 */
            size_t plen = rnd(4) ? len - 54 - rnd(8) : rnd(65536);

            put_be16(buf + 12, 0x86dd);
            buf[14] = 0x60 | (buf[14] & 0xf);
            put_be16(buf + 18, plen);
            buf[20] = rnd(8) ? 17 : rnd(256);
            if (rnd(8)) {
                random_ip6(buf + 22);
                random_ip6(buf + 38);
            }
            put_be16(buf + 56, 4791);
            put_be16(buf + 58, rnd(8) ? plen : rnd(65536));
            put_be16(buf + 60, rnd(2) ? 0 : rnd(65536));
            if (rnd(2)) {
                buf[62] = expected_ops[rnd(N_ELEMS(expected_ops))].opcode;
                buf[63] &= 0xf0 | (rnd(8) ? 0 : 0xff);
                put_be16(buf + 64, 0xffff);
            }
            if (rnd(2) && plen + 54 <= len &&
                plen + 54 >= QHCA_ROCE_IP6_MIN_FRAME_LEN) {
                fix_icrc(buf, plen + 54);
            }
        } else if (len >= 60 && rnd(4)) {
            /* Get past the Ethernet/IP/UDP checks most of the time */
            size_t ip_len = rnd(4) ? len - 14 - rnd(8) : rnd(65536);

            put_be16(buf + 12, 0x0800);
            buf[14] = 0x45;
            put_be16(buf + 16, ip_len);
            put_be16(buf + 20, rnd(2) ? 0x4000 : rnd(65536));
            buf[23] = 17;
            fix_ip_csum(buf);
            put_be16(buf + 36, 4791);
            put_be16(buf + 38, rnd(8) ? ip_len - 20 : rnd(65536));
            put_be16(buf + 40, rnd(4) ? 0 : rnd(65536));
            if (rnd(2)) {
                buf[42] = expected_ops[rnd(N_ELEMS(expected_ops))].opcode;
                buf[43] &= 0xf0 | (rnd(8) ? 0 : 0xff);
                put_be16(buf + 44, 0xffff);
            }
            if (rnd(2) && ip_len + 14 <= len &&
                ip_len + 14 >= QHCA_ROCE_MIN_FRAME_LEN) {
                fix_icrc(buf, ip_len + 14);
            }
        }
        check_parse_any(buf, len, &n_ok);
    }
    /* The structured part must reach the end of the parser sometimes */
    printf("# fuzz_random: %d of %d frames parsed\n", n_ok, i);
    CHECK(n_ok > 100);
}

/* Valid frames with random changes, insertions, deletions, truncations */
static void test_fuzz_mutate(void)
{
    int i, k, n_ok = 0;
    size_t j, len;

    for (i = 0; i < 30000; i++) {
        uint8_t buf[600], payload[300];
        uint8_t opcode = expected_ops[rnd(N_ELEMS(expected_ops))].opcode;
        const QhcaRoceOpInfo *op = qhca_roce_op_info(opcode);
        size_t plen = (op->flags & QHCA_ROCE_OPF_PAYLOAD) ? rnd(300) : 0;
        int n_mut = 1 + rnd(4);
        QhcaRoceHdr h;
        int r;

        use_ip6 = rnd(2);
        random_hdr(&h, opcode);
        for (j = 0; j < plen; j++) {
            payload[j] = rnd(256);
        }
        r = qhca_roce_build(buf, sizeof(buf), &h, payload, plen);
        assert(r > 0);
        len = r;
        for (k = 0; k < n_mut && len; k++) {
            size_t pos = rnd(len);

            switch (rnd(6)) {
            case 0:     /* random byte */
                buf[pos] = rnd(256);
                break;
            case 1:     /* one bit */
                buf[pos] ^= 1 << rnd(8);
                break;
            case 2:     /* truncate */
                len = pos;
                break;
            case 3:     /* delete a byte */
                memmove(buf + pos, buf + pos + 1, len - pos - 1);
                len--;
                break;
            case 4:     /* insert a byte */
                if (len < sizeof(buf)) {
                    memmove(buf + pos + 1, buf + pos, len - pos);
                    buf[pos] = rnd(256);
                    len++;
                }
                break;
            default:    /* append garbage */
                for (j = 0; j < 8 && len < sizeof(buf); j++) {
                    buf[len++] = rnd(256);
                }
                break;
            }
        }
        /* Sometimes make the checksums right again to go deeper */
        if (len >= QHCA_ROCE_MIN_FRAME_LEN && rnd(2)) {
            size_t end = ip_end(buf);

            fix_ip_csum(buf);
            if (end <= len && end >= (is_ip6(buf) ?
                                      QHCA_ROCE_IP6_MIN_FRAME_LEN :
                                      QHCA_ROCE_MIN_FRAME_LEN)) {
                fix_icrc(buf, end);
            }
        }
        check_parse_any(buf, len, &n_ok);
    }
    use_ip6 = false;
    printf("# fuzz_mutate: %d of %d frames parsed\n", n_ok, i);
    CHECK(n_ok > 100);
}

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

static void test_ip6_known_frame(void)
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
static void test_ip6_icrc_masked_fields(void)
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

static void test_ip6_parse_errors(void)
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

static void test_ip6_build_errors(void)
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
static void test_ip6_gids(void)
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

static void test_ip6_roundtrip(void)
{
    use_ip6 = true;
    test_roundtrip();
    use_ip6 = false;
}

static void test_ip6_parse_truncated(void)
{
    use_ip6 = true;
    test_parse_truncated();
    use_ip6 = false;
}

static void test_ip6_parse_bit_flips(void)
{
    use_ip6 = true;
    test_parse_bit_flips();
    use_ip6 = false;
}

static const RoceCase roce_cases[] = {
    { "/roce/crc32", test_crc32 },
    { "/roce/crc32-clmul", test_crc32_fast },
    { "/roce/inet-csum", test_inet_csum },
    { "/roce/icrc-connectx4-cnp-vector", test_icrc_connectx4_cnp },
    { "/roce/icrc-scapy-uc-vector", test_icrc_scapy_uc },
    { "/roce/icrc-masked-fields", test_icrc_masked_fields },
    { "/roce/opcode-table", test_opcode_table },
    { "/roce/udp-sport", test_udp_sport },
    { "/roce/build-known-frame", test_build_known_frame },
    { "/roce/build-parse-roundtrip", test_roundtrip },
    { "/roce/build-errors", test_build_errors },
    { "/roce/parse-errors", test_parse_errors },
    { "/roce/parse-trailer", test_parse_trailer },
    { "/roce/parse-truncated", test_parse_truncated },
    { "/roce/parse-bit-flips", test_parse_bit_flips },
    { "/roce/fuzz-random", test_fuzz_random },
    { "/roce/fuzz-mutate", test_fuzz_mutate },
    { "/roce/ipv6/known-frame", test_ip6_known_frame },
    { "/roce/ipv6/icrc-masked-fields", test_ip6_icrc_masked_fields },
    { "/roce/ipv6/build-parse-roundtrip", test_ip6_roundtrip },
    { "/roce/ipv6/build-errors", test_ip6_build_errors },
    { "/roce/ipv6/parse-errors", test_ip6_parse_errors },
    { "/roce/ipv6/parse-truncated", test_ip6_parse_truncated },
    { "/roce/ipv6/parse-bit-flips", test_ip6_parse_bit_flips },
    { "/roce/ipv6/gids", test_ip6_gids },
};

int main(int argc, char **argv)
{
    const char *seed = getenv("QHCA_TEST_SEED");
    size_t i;
    int ret;

    /* --pcap GOOD BAD before GLib's own options */
    if (argc >= 4 && strcmp(argv[1], "--pcap") == 0) {
        pcap_good = pcap_open(argv[2]);
        pcap_bad = pcap_open(argv[3]);
        argv[3] = argv[0];
        argv += 3;
        argc -= 3;
    }
    g_test_init(&argc, &argv, NULL);
    if (argc != 1) {
        fprintf(stderr, "usage: %s [--pcap GOOD.pcap BAD.pcap] "
                "[GTEST-OPTIONS]\n", argv[0]);
        return 2;
    }
    if (seed && *seed) {
        rng_state = g_ascii_strtoull(seed, NULL, 0) | 1;
    }
    printf("# seed 0x%" PRIx64 "\n", rng_state);

    for (i = 0; i < N_ELEMS(roce_cases); i++) {
        g_test_add_data_func(roce_cases[i].path, &roce_cases[i], run_case);
    }
    ret = g_test_run();

    if (pcap_good) {
        if (fclose(pcap_good) || fclose(pcap_bad)) {
            fprintf(stderr, "pcap write failed\n");
            return 2;
        }
    }
    return ret;
}
