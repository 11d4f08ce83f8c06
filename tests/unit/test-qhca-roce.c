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
 * The cases are in a file per subject (roce-test.h lists them): the
 * CRC-32, checksums and ICRC (roce-crc.c), the opcode table and building
 * frames (roce-build.c), parsing (roce-parse.c), fuzzing the parser
 * (roce-fuzz.c), and RoCEv2 over IPv6 (roce-ipv6.c).  This file has
 * main(), which adds them in the order below, the checks, and the helpers
 * and tables they share.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <glib.h>
#include "qhca-roce.h"
#include "roce-test.h"

bool case_failed;
static int case_checks_failed;

void check(bool ok, const char *what, const char *file, int line)
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

void check_eq(uint64_t a, uint64_t b, const char *what,
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

uint64_t rnd64(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

uint32_t rnd(uint32_t n)
{
    return n ? (uint32_t)(rnd64() >> 32) % n : 0;
}

uint32_t get_be16(const uint8_t *p)
{
    return p[0] << 8 | p[1];
}

uint32_t get_le32(const uint8_t *p)
{
    return (uint32_t)p[3] << 24 | p[2] << 16 | p[1] << 8 | p[0];
}

void put_be16(uint8_t *p, uint32_t v)
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
QhcaRoceErr parse_exact(const uint8_t *buf, size_t len,
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
void pcap_record(const uint8_t *frame, size_t len, size_t icrc_end)
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

/* ---- Helpers to build and mutate frames ---- */

/* random_hdr() makes IPv6 headers while this is set */
bool use_ip6;

/* A random IPv6 unicast address: link-local (as the kernel's GIDs) or not */
void random_ip6(uint8_t *a)
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

void random_hdr(QhcaRoceHdr *h, uint8_t opcode)
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

bool op_has(const QhcaRoceOpInfo *op, QhcaRoceExt ext)
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
uint8_t *build_frame(const QhcaRoceHdr *h, const uint8_t *payload,
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
uint8_t base[256];
size_t base_len;

void make_base(uint8_t opcode, size_t payload_len)
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

bool is_ip6(const uint8_t *f)
{
    return get_be16(f + 12) == 0x86dd;
}

/* The IPv4 header checksum (IPv6 has none) */
void fix_ip_csum(uint8_t *f)
{
    if (is_ip6(f)) {
        return;
    }
    put_be16(f + 14 + 10, 0);
    put_be16(f + 14 + 10, qhca_roce_inet_csum(f + 14, 20));
}

/* Where the IP datagram of a frame says it ends */
size_t ip_end(const uint8_t *f)
{
    return is_ip6(f) ? 14 + 40 + get_be16(f + 18) : 14 + get_be16(f + 16);
}

/* The IPv6 UDP checksum of a frame ending at frame_len (0 stays 0) */
void fix_udp6_csum(uint8_t *f, size_t frame_len)
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
void fix_icrc(uint8_t *f, size_t frame_len)
{
    put_le32(f + frame_len - 4, qhca_roce_icrc(f, frame_len));
    if (is_ip6(f)) {
        fix_udp6_csum(f, frame_len);
    }
}

/* Change the IP total and UDP lengths so the frame ends at frame_len */
void reframe(uint8_t *f, size_t frame_len)
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

QhcaRoceErr parse_base(size_t len)
{
    QhcaRocePkt pkt;

    return parse_exact(base, len, &pkt);
}

/* What IBA 1.4 (chapter 9, table 38 and 9.2/9.3) says each opcode carries */
const ExpectedOp expected_ops[] = {
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
    /* RoCEv2 annex A17: the CNP, its 16 reserved bytes taken as payload */
    { 0x81, true, 0, { 0 }, 0 },
};

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
    { "/roce/steer", test_steer },
    { "/roce/finish-csum", test_finish_csum },
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
