/*
 * qhca: RoCEv2 wire format (Ethernet II / IPv4 or IPv6 / UDP 4791 / BTH /
 * ICRC).
 *
 * Frame layout (IBA 1.4 Annex A17 "RoCEv2"; no VLAN, no IPv4 options, no
 * IPv6 extension headers):
 *
 *   Ethernet II (14) | IPv4 (20) or IPv6 (40) | UDP (8) | BTH (12) |
 *   extension headers | payload | pad (0..3, zero) | ICRC (4)
 *
 * The ICRC is a CRC-32 (as Ethernet's FCS) over: 8 bytes of 0xFF standing
 * for the LRH that RoCEv2 lacks; the IPv4 header with TOS, TTL and header
 * checksum set to all ones, or the IPv6 header with traffic class, flow
 * label and hop limit set to all ones (A17.8); the UDP header with its
 * checksum set to all ones; the BTH with its FECN/BECN/reserved byte
 * (before the dest QP) set to all ones; then the extension headers,
 * payload and pad.  Linux's
 * Soft-RoCE (rxe_icrc.c) stores the inverted CRC state as a CPU-order u32,
 * which on the little-endian hosts it runs on (and on ConnectX NICs) puts
 * the usual CRC-32 value on the wire least significant byte first.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qhca-roce.h"

/* Big-endian wire accessors; p may be unaligned */
static inline uint16_t roce_get16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t roce_get24(const uint8_t *p)
{
    return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static inline uint32_t roce_get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
           (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t roce_get64(const uint8_t *p)
{
    return (uint64_t)roce_get32(p) << 32 | roce_get32(p + 4);
}

static inline uint32_t roce_get32_le(const uint8_t *p)
{
    return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 |
           (uint32_t)p[1] << 8 | p[0];
}

static inline void roce_put16(uint8_t *p, uint16_t v)
{
    p[0] = v >> 8;
    p[1] = v;
}

static inline void roce_put24(uint8_t *p, uint32_t v)
{
    p[0] = v >> 16;
    p[1] = v >> 8;
    p[2] = v;
}

static inline void roce_put32(uint8_t *p, uint32_t v)
{
    p[0] = v >> 24;
    p[1] = v >> 16;
    p[2] = v >> 8;
    p[3] = v;
}

static inline void roce_put64(uint8_t *p, uint64_t v)
{
    roce_put32(p, v >> 32);
    roce_put32(p + 4, v);
}

static inline void roce_put32_le(uint8_t *p, uint32_t v)
{
    p[0] = v;
    p[1] = v >> 8;
    p[2] = v >> 16;
    p[3] = v >> 24;
}

/* Offsets of the IPv4, UDP and BTH fields we use */
#define ROCE_IP_VER_IHL       0
#define ROCE_IP_TOS           1
#define ROCE_IP_TOT_LEN       2
#define ROCE_IP_ID            4
#define ROCE_IP_FRAG          6
#define ROCE_IP_TTL           8
#define ROCE_IP_PROTO         9
#define ROCE_IP_CSUM          10
#define ROCE_IP_SRC           12
#define ROCE_IP_DST           16
#define ROCE_IP_FLAG_DF       0x4000
#define ROCE_IP_FLAG_MF       0x2000
#define ROCE_IP_FRAG_OFF      0x1fff

/* IPv6: version 4 bits, traffic class 8, flow label 20 in the first word */
#define ROCE_IP6_VER_TC_FLOW  0
#define ROCE_IP6_PLEN         4
#define ROCE_IP6_NEXT         6
#define ROCE_IP6_HOP_LIMIT    7
#define ROCE_IP6_SRC          8
#define ROCE_IP6_DST          24

#define ROCE_UDP_SPORT        0
#define ROCE_UDP_DPORT        2
#define ROCE_UDP_LEN          4
#define ROCE_UDP_CSUM         6

#define ROCE_BTH_OPCODE       0
#define ROCE_BTH_FLAGS        1       /* SE, M, PadCnt, TVer */
#define ROCE_BTH_PKEY         2
#define ROCE_BTH_RESV8A       4       /* FECN, BECN, reserved */
#define ROCE_BTH_DQPN         5
#define ROCE_BTH_ACKREQ       8       /* AckReq, reserved */
#define ROCE_BTH_PSN          9
#define ROCE_BTH_SE           0x80
#define ROCE_BTH_MIG          0x40
#define ROCE_BTH_PAD_SHIFT    4
#define ROCE_BTH_PAD_MASK     0x3
#define ROCE_BTH_TVER_MASK    0xf
#define ROCE_BTH_FECN         0x80
#define ROCE_BTH_BECN         0x40
#define ROCE_BTH_ACK_REQ      0x80

static const uint8_t qhca_roce_ext_len[QHCA_ROCE_EXT_COUNT] = {
    [QHCA_ROCE_EXT_DETH] = QHCA_ROCE_DETH_LEN,
    [QHCA_ROCE_EXT_FETH] = QHCA_ROCE_FETH_LEN,
    [QHCA_ROCE_EXT_RETH] = QHCA_ROCE_RETH_LEN,
    [QHCA_ROCE_EXT_ATOMIC_ETH] = QHCA_ROCE_ATOMIC_ETH_LEN,
    [QHCA_ROCE_EXT_AETH] = QHCA_ROCE_AETH_LEN,
    [QHCA_ROCE_EXT_ATOMIC_ACK_ETH] = QHCA_ROCE_ATOMIC_ACK_ETH_LEN,
    [QHCA_ROCE_EXT_IMMDT] = QHCA_ROCE_IMMDT_LEN,
    [QHCA_ROCE_EXT_IETH] = QHCA_ROCE_IETH_LEN,
};

#define OPF(x)      QHCA_ROCE_OPF_##x
#define REQ         (OPF(REQUEST))
#define RSP         (OPF(RESPONSE))
#define PAY         (OPF(PAYLOAD))
#define UCREQ       (OPF(REQUEST) | OPF(UC))

#define OP0(nm, fl) \
    { .name = nm, .flags = (fl), .ext_len = 0, .n_ext = 0 }
#define OP1(nm, fl, e1) \
    { .name = nm, .flags = (fl), \
      .ext_len = QHCA_ROCE_##e1##_LEN, \
      .n_ext = 1, .ext = { QHCA_ROCE_EXT_##e1 } }
#define OP2(nm, fl, e1, e2) \
    { .name = nm, .flags = (fl), \
      .ext_len = QHCA_ROCE_##e1##_LEN + QHCA_ROCE_##e2##_LEN, \
      .n_ext = 2, .ext = { QHCA_ROCE_EXT_##e1, QHCA_ROCE_EXT_##e2 } }

/* Indexed by BTH opcode; entries without a name are unsupported */
static const QhcaRoceOpInfo qhca_roce_ops[256] = {
    [QHCA_ROCE_OP_RC_SEND_FIRST] =
        OP0("RC_SEND_FIRST", REQ | PAY | OPF(SEND) | OPF(FIRST)),
    [QHCA_ROCE_OP_RC_SEND_MIDDLE] =
        OP0("RC_SEND_MIDDLE", REQ | PAY | OPF(SEND)),
    [QHCA_ROCE_OP_RC_SEND_LAST] =
        OP0("RC_SEND_LAST", REQ | PAY | OPF(SEND) | OPF(LAST)),
    [QHCA_ROCE_OP_RC_SEND_LAST_IMM] =
        OP1("RC_SEND_LAST_WITH_IMMEDIATE",
            REQ | PAY | OPF(SEND) | OPF(LAST) | OPF(IMM), IMMDT),
    [QHCA_ROCE_OP_RC_SEND_ONLY] =
        OP0("RC_SEND_ONLY", REQ | PAY | OPF(SEND) | OPF(FIRST) | OPF(LAST)),
    [QHCA_ROCE_OP_RC_SEND_ONLY_IMM] =
        OP1("RC_SEND_ONLY_WITH_IMMEDIATE",
            REQ | PAY | OPF(SEND) | OPF(FIRST) | OPF(LAST) | OPF(IMM),
            IMMDT),
    [QHCA_ROCE_OP_RC_RDMA_WRITE_FIRST] =
        OP1("RC_RDMA_WRITE_FIRST", REQ | PAY | OPF(WRITE) | OPF(FIRST),
            RETH),
    [QHCA_ROCE_OP_RC_RDMA_WRITE_MIDDLE] =
        OP0("RC_RDMA_WRITE_MIDDLE", REQ | PAY | OPF(WRITE)),
    [QHCA_ROCE_OP_RC_RDMA_WRITE_LAST] =
        OP0("RC_RDMA_WRITE_LAST", REQ | PAY | OPF(WRITE) | OPF(LAST)),
    [QHCA_ROCE_OP_RC_RDMA_WRITE_LAST_IMM] =
        OP1("RC_RDMA_WRITE_LAST_WITH_IMMEDIATE",
            REQ | PAY | OPF(WRITE) | OPF(LAST) | OPF(IMM), IMMDT),
    [QHCA_ROCE_OP_RC_RDMA_WRITE_ONLY] =
        OP1("RC_RDMA_WRITE_ONLY",
            REQ | PAY | OPF(WRITE) | OPF(FIRST) | OPF(LAST), RETH),
    [QHCA_ROCE_OP_RC_RDMA_WRITE_ONLY_IMM] =
        OP2("RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE",
            REQ | PAY | OPF(WRITE) | OPF(FIRST) | OPF(LAST) | OPF(IMM),
            RETH, IMMDT),
    [QHCA_ROCE_OP_RC_RDMA_READ_REQUEST] =
        OP1("RC_RDMA_READ_REQUEST",
            REQ | OPF(READ) | OPF(FIRST) | OPF(LAST), RETH),
    [QHCA_ROCE_OP_RC_RDMA_READ_RESPONSE_FIRST] =
        OP1("RC_RDMA_READ_RESPONSE_FIRST",
            RSP | PAY | OPF(READ) | OPF(ACK) | OPF(FIRST), AETH),
    [QHCA_ROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE] =
        OP0("RC_RDMA_READ_RESPONSE_MIDDLE", RSP | PAY | OPF(READ)),
    [QHCA_ROCE_OP_RC_RDMA_READ_RESPONSE_LAST] =
        OP1("RC_RDMA_READ_RESPONSE_LAST",
            RSP | PAY | OPF(READ) | OPF(ACK) | OPF(LAST), AETH),
    [QHCA_ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY] =
        OP1("RC_RDMA_READ_RESPONSE_ONLY",
            RSP | PAY | OPF(READ) | OPF(ACK) | OPF(FIRST) | OPF(LAST),
            AETH),
    [QHCA_ROCE_OP_RC_ACKNOWLEDGE] =
        OP1("RC_ACKNOWLEDGE", RSP | OPF(ACK), AETH),
    [QHCA_ROCE_OP_RC_ATOMIC_ACKNOWLEDGE] =
        OP2("RC_ATOMIC_ACKNOWLEDGE", RSP | OPF(ACK) | OPF(ATOMIC),
            AETH, ATOMIC_ACK_ETH),
    [QHCA_ROCE_OP_RC_COMPARE_SWAP] =
        OP1("RC_COMPARE_SWAP",
            REQ | OPF(ATOMIC) | OPF(FIRST) | OPF(LAST), ATOMIC_ETH),
    [QHCA_ROCE_OP_RC_FETCH_ADD] =
        OP1("RC_FETCH_ADD",
            REQ | OPF(ATOMIC) | OPF(FIRST) | OPF(LAST), ATOMIC_ETH),
    [QHCA_ROCE_OP_RC_SEND_LAST_INV] =
        OP1("RC_SEND_LAST_WITH_INVALIDATE",
            REQ | PAY | OPF(SEND) | OPF(LAST) | OPF(INV), IETH),
    [QHCA_ROCE_OP_RC_SEND_ONLY_INV] =
        OP1("RC_SEND_ONLY_WITH_INVALIDATE",
            REQ | PAY | OPF(SEND) | OPF(FIRST) | OPF(LAST) | OPF(INV),
            IETH),
    [QHCA_ROCE_OP_RC_FLUSH] =
        OP2("RC_FLUSH", REQ | OPF(FLUSH) | OPF(FIRST) | OPF(LAST),
            FETH, RETH),
    [QHCA_ROCE_OP_RC_ATOMIC_WRITE] =
        OP1("RC_ATOMIC_WRITE",
            REQ | PAY | OPF(ATOMIC_WRITE) | OPF(FIRST) | OPF(LAST), RETH),
    /* UC: SEND and RDMA WRITE as in RC, never acknowledged */
    [QHCA_ROCE_OP_UC_SEND_FIRST] =
        OP0("UC_SEND_FIRST", UCREQ | PAY | OPF(SEND) | OPF(FIRST)),
    [QHCA_ROCE_OP_UC_SEND_MIDDLE] =
        OP0("UC_SEND_MIDDLE", UCREQ | PAY | OPF(SEND)),
    [QHCA_ROCE_OP_UC_SEND_LAST] =
        OP0("UC_SEND_LAST", UCREQ | PAY | OPF(SEND) | OPF(LAST)),
    [QHCA_ROCE_OP_UC_SEND_LAST_IMM] =
        OP1("UC_SEND_LAST_WITH_IMMEDIATE",
            UCREQ | PAY | OPF(SEND) | OPF(LAST) | OPF(IMM), IMMDT),
    [QHCA_ROCE_OP_UC_SEND_ONLY] =
        OP0("UC_SEND_ONLY", UCREQ | PAY | OPF(SEND) | OPF(FIRST) | OPF(LAST)),
    [QHCA_ROCE_OP_UC_SEND_ONLY_IMM] =
        OP1("UC_SEND_ONLY_WITH_IMMEDIATE",
            UCREQ | PAY | OPF(SEND) | OPF(FIRST) | OPF(LAST) | OPF(IMM),
            IMMDT),
    [QHCA_ROCE_OP_UC_RDMA_WRITE_FIRST] =
        OP1("UC_RDMA_WRITE_FIRST", UCREQ | PAY | OPF(WRITE) | OPF(FIRST),
            RETH),
    [QHCA_ROCE_OP_UC_RDMA_WRITE_MIDDLE] =
        OP0("UC_RDMA_WRITE_MIDDLE", UCREQ | PAY | OPF(WRITE)),
    [QHCA_ROCE_OP_UC_RDMA_WRITE_LAST] =
        OP0("UC_RDMA_WRITE_LAST", UCREQ | PAY | OPF(WRITE) | OPF(LAST)),
    [QHCA_ROCE_OP_UC_RDMA_WRITE_LAST_IMM] =
        OP1("UC_RDMA_WRITE_LAST_WITH_IMMEDIATE",
            UCREQ | PAY | OPF(WRITE) | OPF(LAST) | OPF(IMM), IMMDT),
    [QHCA_ROCE_OP_UC_RDMA_WRITE_ONLY] =
        OP1("UC_RDMA_WRITE_ONLY",
            UCREQ | PAY | OPF(WRITE) | OPF(FIRST) | OPF(LAST), RETH),
    [QHCA_ROCE_OP_UC_RDMA_WRITE_ONLY_IMM] =
        OP2("UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE",
            UCREQ | PAY | OPF(WRITE) | OPF(FIRST) | OPF(LAST) | OPF(IMM),
            RETH, IMMDT),
    [QHCA_ROCE_OP_UD_SEND_ONLY] =
        OP1("UD_SEND_ONLY",
            REQ | PAY | OPF(SEND) | OPF(FIRST) | OPF(LAST) | OPF(UD), DETH),
    [QHCA_ROCE_OP_UD_SEND_ONLY_IMM] =
        OP2("UD_SEND_ONLY_WITH_IMMEDIATE",
            REQ | PAY | OPF(SEND) | OPF(FIRST) | OPF(LAST) | OPF(UD) |
            OPF(IMM), DETH, IMMDT),
    /* to an RC or UC QP; the 16 reserved bytes are its payload */
    [QHCA_ROCE_OP_CNP] = OP0("CNP", OPF(CNP) | PAY),
};

#undef OP0
#undef OP1
#undef OP2
#undef PAY
#undef UCREQ
#undef RSP
#undef REQ
#undef OPF

const QhcaRoceOpInfo *qhca_roce_op_info(uint8_t opcode)
{
    const QhcaRoceOpInfo *op = &qhca_roce_ops[opcode];

    return op->name ? op : NULL;
}

static const char *const qhca_roce_errors[QHCA_ROCE_ERR_COUNT] = {
    [QHCA_ROCE_OK] = "ok",
    [QHCA_ROCE_ERR_TOO_SHORT] = "frame too short",
    [QHCA_ROCE_ERR_NOT_IPV4] = "neither IPv4 nor IPv6",
    [QHCA_ROCE_ERR_IP_VERSION] = "bad IP version",
    [QHCA_ROCE_ERR_IP_HDR_LEN] = "bad IP header length",
    [QHCA_ROCE_ERR_IP_TOTAL_LEN] = "bad IP total length",
    [QHCA_ROCE_ERR_IP_FRAGMENT] = "IP fragment",
    [QHCA_ROCE_ERR_IP_CSUM] = "bad IP header checksum",
    [QHCA_ROCE_ERR_NOT_UDP] = "not UDP",
    [QHCA_ROCE_ERR_NOT_ROCE_PORT] = "not UDP port 4791",
    [QHCA_ROCE_ERR_UDP_LEN] = "bad UDP length",
    [QHCA_ROCE_ERR_UDP_CSUM] = "bad UDP checksum",
    [QHCA_ROCE_ERR_SHORT_TRANSPORT] = "transport headers truncated",
    [QHCA_ROCE_ERR_BAD_OPCODE] = "unsupported BTH opcode",
    [QHCA_ROCE_ERR_TVER] = "bad BTH TVer",
    [QHCA_ROCE_ERR_PKEY] = "P_Key mismatch",
    [QHCA_ROCE_ERR_PAD] = "bad pad count",
    [QHCA_ROCE_ERR_PAYLOAD] = "payload not allowed",
    [QHCA_ROCE_ERR_IP_ADDR] = "IPv6 address not unicast",
    [QHCA_ROCE_ERR_ICRC] = "bad ICRC",
    [QHCA_ROCE_ERR_FIELD_RANGE] = "field out of range",
    [QHCA_ROCE_ERR_TOO_LONG] = "frame too long",
    [QHCA_ROCE_ERR_BUF_TOO_SMALL] = "buffer too small",
};

const char *qhca_roce_strerror(QhcaRoceErr err)
{
    if ((unsigned)err >= QHCA_ROCE_ERR_COUNT) {
        return "unknown error";
    }
    return qhca_roce_errors[err];
}

uint16_t qhca_roce_udp_sport(uint32_t flow_hash)
{
    return QHCA_ROCE_UDP_SPORT_BASE | (flow_hash & QHCA_ROCE_UDP_SPORT_MASK);
}

uint32_t qhca_roce_qpn_hash(uint32_t qpn)
{
    /* Multiplicative hash with the 32-bit golden ratio, top 14 bits */
    return (uint32_t)(qpn * 0x61c88647u) >> (32 - 14);
}

/*
 * CRC-32 on the reflected polynomial 0xEDB88320 (the ICRC's), eight bytes
 * at a time ("slicing by 8"): table[0] is the classic byte table,
 * table[k][b] the CRC of byte b followed by k zero bytes.  About 2 GB/s
 * here, against 0.3 GB/s a byte at a time.  The tables are made on first
 * use (8 KiB).
 */
static uint32_t qhca_roce_crc32_table[8][256];

static void roce_crc32_init(void)
{
    uint32_t i, k, c;

    for (i = 0; i < 256; i++) {
        c = i;
        for (k = 0; k < 8; k++) {
            c = (c & 1) ? (c >> 1) ^ 0xedb88320u : c >> 1;
        }
        qhca_roce_crc32_table[0][i] = c;
    }
    for (i = 0; i < 256; i++) {
        c = qhca_roce_crc32_table[0][i];
        for (k = 1; k < 8; k++) {
            c = qhca_roce_crc32_table[0][c & 0xff] ^ (c >> 8);
            qhca_roce_crc32_table[k][i] = c;
        }
    }
}

/* Slicing by 8, as above; any length */
uint32_t qhca_roce_crc32_update_table(uint32_t crc, const void *buf, size_t len)
{
    const uint32_t (*t)[256] = qhca_roce_crc32_table;
    const uint8_t *p = buf;

    if (!t[0][1]) {
        roce_crc32_init();
    }
    while (len >= 8) {
        /* the eight bytes as a little-endian number, the CRC in its low 4 */
        uint32_t lo = (p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24) ^
                      crc;
        uint32_t hi = p[4] | p[5] << 8 | p[6] << 16 | (uint32_t)p[7] << 24;

        crc = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^
              t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^
              t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^
              t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
        p += 8;
        len -= 8;
    }
    while (len--) {
        crc = t[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    }
    return crc;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

/*
 * The same CRC by carry-less multiplication, folding: a 128-bit remainder
 * r followed, n bits later, by more data d is congruent to
 * r.lo * (x^(n+32) mod P) ^ r.hi * (x^(n-32) mod P) ^ d, the constants
 * bit-reflected and shifted left by one as the CRC is (CRC_K below gives
 * them for the distances used: 128 bits for one lane after another, 512
 * for four lanes, and so on).  The data is folded in several lanes at a
 * time, the lanes folded into one, then 128 bits reduced to 64 and to 32,
 * and the last 32 by Barrett reduction (P' = the polynomial, u' = x^64 / P).
 * This is the scheme of Intel's "Fast CRC Computation for Generic
 * Polynomials Using PCLMULQDQ" for the reflected CRC-32.
 *
 * Three widths: 16-byte lanes (PCLMULQDQ, SSE), four to a register
 * (VPCLMULQDQ with AVX-512) and two to a register (VPCLMULQDQ with AVX2).
 * Each is checked against the table code on first use and left out if it
 * disagrees; the unit tests compare each against the table code on random
 * buffers.  Here, 4 KiB: about 15 GB/s with 16-byte lanes, 30 with AVX2,
 * 55 with AVX-512 (table code: 2).
 */
#define CLMUL_TARGET __attribute__((target("pclmul,sse2")))
#define CLMUL_Y_TARGET __attribute__((target("pclmul,avx2,vpclmulqdq")))
#define CLMUL_Z_TARGET \
    __attribute__((target("pclmul,avx2,avx512f,avx512vl,vpclmulqdq")))

/*
 * x^(n+32) mod P (_LO) and x^(n-32) mod P (_HI) as above, for n bits:
 * the remainder of x^e by P = x^32 + 0x04C11DB7, bit by bit, then its 32
 * bits reversed and shifted left by one
 */
#define CRC_K128_LO 0x1751997d0ULL
#define CRC_K128_HI 0x0ccaa009eULL
#define CRC_K256_LO 0x0f1da05aaULL
#define CRC_K256_HI 0x15a546366ULL
#define CRC_K384_LO 0x03db1ecdcULL
#define CRC_K384_HI 0x174359406ULL
#define CRC_K512_LO 0x154442bd4ULL
#define CRC_K512_HI 0x1c6e41596ULL
#define CRC_K1024_LO 0x1e88ef372ULL
#define CRC_K1024_HI 0x14a7fe880ULL
#define CRC_K2048_LO 0x11542778aULL
#define CRC_K2048_HI 0x1322d1430ULL
/* the pair in one 16-byte lane, and four times over in 64 bytes */
#define CRC_KX(n) _mm_set_epi64x(CRC_K##n##_HI, CRC_K##n##_LO)
#define CRC_KZ(n) _mm512_set_epi64(CRC_K##n##_HI, CRC_K##n##_LO, \
                                   CRC_K##n##_HI, CRC_K##n##_LO, \
                                   CRC_K##n##_HI, CRC_K##n##_LO, \
                                   CRC_K##n##_HI, CRC_K##n##_LO)

static inline __attribute__((always_inline)) CLMUL_TARGET
__m128i clmul_fold(__m128i x, __m128i k)
{
    return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00),
                         _mm_clmulepi64_si128(x, k, 0x11));
}

/*
 * The rest of the data, 16 bytes at a time, into one lane x0 (remainder of
 * all before @p), then the reduction to 32 bits; @len a multiple of 16.
 * Inlined into each width's function, so it is encoded as that one is.
 */
static inline __attribute__((always_inline)) CLMUL_TARGET
uint32_t clmul_finish(__m128i x0, const uint8_t *p, size_t len)
{
    const __m128i k128 = CRC_KX(128);
    const __m128i k5 = _mm_set_epi64x(0, 0x163cd6124ULL);
    const __m128i poly = _mm_set_epi64x(0x1f7011641ULL, 0x1db710641ULL);
    const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);
    __m128i x1;

    while (len >= 16) {
        x0 = _mm_xor_si128(clmul_fold(x0, k128),
                           _mm_loadu_si128((const __m128i *)p));
        p += 16;
        len -= 16;
    }
    /* 128 bits to 64 */
    x1 = _mm_xor_si128(_mm_clmulepi64_si128(x0, k128, 0x10),
                       _mm_srli_si128(x0, 8));
    /* 64 bits to 32 (and 32 of zeroes) */
    x0 = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(x1, mask32), k5,
                                            0x00),
                       _mm_srli_si128(x1, 4));
    /* Barrett reduction to the 32-bit remainder */
    x1 = _mm_clmulepi64_si128(_mm_and_si128(x0, mask32), poly, 0x10);
    x1 = _mm_clmulepi64_si128(_mm_and_si128(x1, mask32), poly, 0x00);
    x0 = _mm_xor_si128(x0, x1);
    return (uint32_t)_mm_cvtsi128_si32(_mm_srli_si128(x0, 4));
}

/*
 * Four 16-byte lanes, or one below 64 bytes (the headers of a frame: the
 * table code's 8 KiB of tables are mostly out of the cache by then, after
 * the copies of a packet's payload); @len at least 16 and a multiple of 16
 */
static CLMUL_TARGET uint32_t roce_crc32_clmul(uint32_t crc, const uint8_t *p,
                                              size_t len)
{
    const __m128i k512 = CRC_KX(512);
    const __m128i k128 = CRC_KX(128);
    __m128i x0, x1, x2, x3;

    x0 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)p),
                       _mm_cvtsi32_si128(crc));
    if (len < 64) {
        return clmul_finish(x0, p + 16, len - 16);
    }
    x1 = _mm_loadu_si128((const __m128i *)(p + 16));
    x2 = _mm_loadu_si128((const __m128i *)(p + 32));
    x3 = _mm_loadu_si128((const __m128i *)(p + 48));
    p += 64;
    len -= 64;
    while (len >= 64) {
        x0 = _mm_xor_si128(clmul_fold(x0, k512),
                           _mm_loadu_si128((const __m128i *)p));
        x1 = _mm_xor_si128(clmul_fold(x1, k512),
                           _mm_loadu_si128((const __m128i *)(p + 16)));
        x2 = _mm_xor_si128(clmul_fold(x2, k512),
                           _mm_loadu_si128((const __m128i *)(p + 32)));
        x3 = _mm_xor_si128(clmul_fold(x3, k512),
                           _mm_loadu_si128((const __m128i *)(p + 48)));
        p += 64;
        len -= 64;
    }
    /* four lanes into one */
    x1 = _mm_xor_si128(x1, clmul_fold(x0, k128));
    x2 = _mm_xor_si128(x2, clmul_fold(x1, k128));
    x0 = _mm_xor_si128(x3, clmul_fold(x2, k128));
    return clmul_finish(x0, p, len);
}

static inline __attribute__((always_inline)) CLMUL_Y_TARGET
__m256i clmul_fold_y(__m256i x, __m256i k)
{
    return _mm256_xor_si256(_mm256_clmulepi64_epi128(x, k, 0x00),
                            _mm256_clmulepi64_epi128(x, k, 0x11));
}

/* Four registers of two lanes (AVX2); @len at least 128, a multiple of 16 */
static CLMUL_Y_TARGET uint32_t roce_crc32_clmul_y(uint32_t crc,
                                                  const uint8_t *p, size_t len)
{
    const __m256i k1024 = _mm256_broadcastsi128_si256(CRC_KX(1024));
    const __m256i k256 = _mm256_broadcastsi128_si256(CRC_KX(256));
    const __m128i k128 = CRC_KX(128);
    __m256i y0, y1, y2, y3;
    __m128i x0;

    y0 = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)p),
                          _mm256_zextsi128_si256(_mm_cvtsi32_si128(crc)));
    y1 = _mm256_loadu_si256((const __m256i *)(p + 32));
    y2 = _mm256_loadu_si256((const __m256i *)(p + 64));
    y3 = _mm256_loadu_si256((const __m256i *)(p + 96));
    p += 128;
    len -= 128;
    while (len >= 128) {
        y0 = _mm256_xor_si256(clmul_fold_y(y0, k1024),
                              _mm256_loadu_si256((const __m256i *)p));
        y1 = _mm256_xor_si256(clmul_fold_y(y1, k1024),
                              _mm256_loadu_si256((const __m256i *)(p + 32)));
        y2 = _mm256_xor_si256(clmul_fold_y(y2, k1024),
                              _mm256_loadu_si256((const __m256i *)(p + 64)));
        y3 = _mm256_xor_si256(clmul_fold_y(y3, k1024),
                              _mm256_loadu_si256((const __m256i *)(p + 96)));
        p += 128;
        len -= 128;
    }
    /* four registers into one, its two lanes into one */
    y1 = _mm256_xor_si256(y1, clmul_fold_y(y0, k256));
    y2 = _mm256_xor_si256(y2, clmul_fold_y(y1, k256));
    y0 = _mm256_xor_si256(y3, clmul_fold_y(y2, k256));
    x0 = _mm_xor_si128(_mm256_extracti128_si256(y0, 1),
                       clmul_fold(_mm256_castsi256_si128(y0), k128));
    return clmul_finish(x0, p, len);
}

static inline __attribute__((always_inline)) CLMUL_Z_TARGET
__m512i clmul_fold_z(__m512i x, __m512i k)
{
    return _mm512_xor_si512(_mm512_clmulepi64_epi128(x, k, 0x00),
                            _mm512_clmulepi64_epi128(x, k, 0x11));
}

/* Four registers of four lanes (AVX-512); @len >= 256, a multiple of 16 */
static CLMUL_Z_TARGET uint32_t roce_crc32_clmul_z(uint32_t crc,
                                                  const uint8_t *p, size_t len)
{
    /*
     * no _mm512_broadcast_i32x4() or _mm512_extracti32x4_epi32(): GCC 12's
     * use an undefined value that -Werror=uninitialized stops on
     */
    const __m512i k2048 = CRC_KZ(2048);
    const __m512i k512 = CRC_KZ(512);
    __m128i lane[4];
    __m512i z0, z1, z2, z3;
    __m128i x0;

    z0 = _mm512_xor_si512(_mm512_loadu_si512(p),
                          _mm512_zextsi128_si512(_mm_cvtsi32_si128(crc)));
    z1 = _mm512_loadu_si512(p + 64);
    z2 = _mm512_loadu_si512(p + 128);
    z3 = _mm512_loadu_si512(p + 192);
    p += 256;
    len -= 256;
    while (len >= 256) {
        z0 = _mm512_xor_si512(clmul_fold_z(z0, k2048),
                              _mm512_loadu_si512(p));
        z1 = _mm512_xor_si512(clmul_fold_z(z1, k2048),
                              _mm512_loadu_si512(p + 64));
        z2 = _mm512_xor_si512(clmul_fold_z(z2, k2048),
                              _mm512_loadu_si512(p + 128));
        z3 = _mm512_xor_si512(clmul_fold_z(z3, k2048),
                              _mm512_loadu_si512(p + 192));
        p += 256;
        len -= 256;
    }
    /* four registers into one, its four lanes into one */
    z1 = _mm512_xor_si512(z1, clmul_fold_z(z0, k512));
    z2 = _mm512_xor_si512(z2, clmul_fold_z(z1, k512));
    z0 = _mm512_xor_si512(z3, clmul_fold_z(z2, k512));
    _mm512_storeu_si512(lane, z0);
    x0 = _mm_xor_si128(_mm_xor_si128(clmul_fold(lane[0], CRC_KX(384)),
                                     clmul_fold(lane[1], CRC_KX(256))),
                       _mm_xor_si128(clmul_fold(lane[2], CRC_KX(128)),
                                     lane[3]));
    return clmul_finish(x0, p, len);
}

typedef uint32_t RoceCrcFn(uint32_t crc, const uint8_t *p, size_t len);

/* The widths, narrowest first; .min: the shortest input each takes */
static const struct {
    RoceCrcFn *fn;
    size_t min;
} roce_crc32_impl[QHCA_ROCE_CRC32_LEVELS] = {
    [QHCA_ROCE_CRC32_CLMUL] = { roce_crc32_clmul, 16 },
    [QHCA_ROCE_CRC32_CLMUL_AVX2] = { roce_crc32_clmul_y, 128 },
    [QHCA_ROCE_CRC32_CLMUL_AVX512] = { roce_crc32_clmul_z, 256 },
};

/* -1: not known yet; then the widest width that is there and agrees */
static int roce_crc32_best = -1;
/* the width in use: roce_crc32_best unless a test asked for a narrower */
static int roce_crc32_level = -1;

static bool roce_crc32_cpu_has(int level)
{
    switch (level) {
    case QHCA_ROCE_CRC32_CLMUL:
        return __builtin_cpu_supports("pclmul");
    case QHCA_ROCE_CRC32_CLMUL_AVX2:
        return __builtin_cpu_supports("pclmul") &&
               __builtin_cpu_supports("avx2") &&
               __builtin_cpu_supports("vpclmulqdq");
    case QHCA_ROCE_CRC32_CLMUL_AVX512:
        return __builtin_cpu_supports("pclmul") &&
               __builtin_cpu_supports("avx512f") &&
               __builtin_cpu_supports("avx512vl") &&
               __builtin_cpu_supports("vpclmulqdq");
    }
    return false;
}

static void roce_crc32_probe(void)
{
    uint8_t b[512];
    unsigned i;
    int l;

    for (i = 0; i < sizeof(b); i++) {
        b[i] = i * 37 + 11;
    }
    roce_crc32_best = QHCA_ROCE_CRC32_TABLE;
    for (l = QHCA_ROCE_CRC32_CLMUL; l < QHCA_ROCE_CRC32_LEVELS; l++) {
        /* each width is only ever tried after the narrower ones agreed */
        if (!roce_crc32_cpu_has(l) ||
            roce_crc32_impl[l].fn(0x12345678, b, sizeof(b)) !=
            qhca_roce_crc32_update_table(0x12345678, b, sizeof(b)) ||
            roce_crc32_impl[l].fn(0x9abcdef0, b + 16, 272) !=
            qhca_roce_crc32_update_table(0x9abcdef0, b + 16, 272)) {
            break;
        }
        roce_crc32_best = l;
    }
    roce_crc32_level = roce_crc32_best;
}

bool qhca_roce_crc32_fast(void)
{
    return qhca_roce_crc32_level() >= QHCA_ROCE_CRC32_CLMUL;
}

int qhca_roce_crc32_level(void)
{
    if (roce_crc32_best < 0) {
        roce_crc32_probe();
    }
    return roce_crc32_level;
}

int qhca_roce_crc32_set_level(int level)
{
    qhca_roce_crc32_level();
    if (level > roce_crc32_best) {
        level = roce_crc32_best;
    }
    roce_crc32_level = level < QHCA_ROCE_CRC32_TABLE ? QHCA_ROCE_CRC32_TABLE
                                                      : level;
    return roce_crc32_level;
}

uint32_t qhca_roce_crc32_update(uint32_t crc, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    int l = roce_crc32_level;

    if (l < 0) {
        l = qhca_roce_crc32_level();
    }
    /* the widest width that the length is long enough for */
    while (l > QHCA_ROCE_CRC32_TABLE && len < roce_crc32_impl[l].min) {
        l--;
    }
    if (l > QHCA_ROCE_CRC32_TABLE) {
        size_t n = len & ~(size_t)15;

        crc = roce_crc32_impl[l].fn(crc, p, n);
        p += n;
        len -= n;
    }
    return qhca_roce_crc32_update_table(crc, p, len);
}
#else
bool qhca_roce_crc32_fast(void)
{
    return false;
}

int qhca_roce_crc32_level(void)
{
    return QHCA_ROCE_CRC32_TABLE;
}

int qhca_roce_crc32_set_level(int level)
{
    return QHCA_ROCE_CRC32_TABLE;
}

uint32_t qhca_roce_crc32_update(uint32_t crc, const void *buf, size_t len)
{
    return qhca_roce_crc32_update_table(crc, buf, len);
}
#endif

/* One's complement sum of buf (big-endian 16-bit words), not folded */
static uint32_t roce_csum_add(uint32_t sum, const uint8_t *p, size_t len)
{
    while (len > 1) {
        sum += roce_get16(p);
        p += 2;
        len -= 2;
    }
    if (len) {
        sum += (uint32_t)p[0] << 8;
    }
    return sum;
}

static uint16_t roce_csum_fold(uint32_t sum)
{
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return (uint16_t)~sum;
}

uint16_t qhca_roce_inet_csum(const void *buf, size_t len)
{
    uint32_t sum = 0;
    const uint8_t *p = buf;

    /* Keep the 32-bit accumulator from overflowing on long buffers */
    while (len > 0x10000) {
        sum = roce_csum_add(sum, p, 0x10000);
        sum = (sum & 0xffff) + (sum >> 16);
        p += 0x10000;
        len -= 0x10000;
    }
    return roce_csum_fold(roce_csum_add(sum, p, len));
}

/*
 * The one's complement sum of a UDP datagram and its pseudo-header: the
 * source and destination addresses (@addrs, @addr_len bytes: 8 for IPv4,
 * 32 for IPv6), the protocol and the UDP length
 */
static uint32_t roce_udp_sum(const uint8_t *addrs, size_t addr_len,
                             const uint8_t *udp, uint32_t udp_len)
{
    uint32_t sum;

    sum = roce_csum_add(0, addrs, addr_len);
    sum += QHCA_ROCE_IPPROTO_UDP;
    sum += udp_len;
    /* udp_len < 64 KiB: the sum cannot overflow 32 bits */
    return roce_csum_add(sum, udp, udp_len);
}

/* The Ethertype says IPv6 (the caller checked it is one of the two) */
static bool roce_is_ip6(const uint8_t *frame)
{
    return roce_get16(frame + 12) == QHCA_ROCE_ETHERTYPE_IPV6;
}

static size_t roce_bth_off(const uint8_t *frame)
{
    return roce_is_ip6(frame) ? QHCA_ROCE_IP6_BTH_OFFSET :
                                QHCA_ROCE_BTH_OFFSET;
}

bool qhca_roce_finish_csum(uint8_t *frame, size_t len, size_t start,
                           size_t off)
{
    uint16_t c;

    if (start >= len || off > len - start || len - start - off < 2) {
        return false;
    }
    c = qhca_roce_inet_csum(frame + start, len - start);
    frame[start + off] = (c ? c : 0xffff) >> 8;
    frame[start + off + 1] = c ? c : 0xff;
    return true;
}

uint32_t qhca_roce_icrc(const uint8_t *frame, size_t frame_len)
{
    /*
     * The 8 bytes of ones for the LRH, then the masked headers, in one
     * buffer: one CRC call, 48 bytes with IPv4 (three 16-byte lanes)
     */
    uint8_t buf[8 + QHCA_ROCE_IPV6_HLEN + QHCA_ROCE_UDP_HLEN +
                QHCA_ROCE_BTH_LEN];
    uint8_t *ip = buf + 8;
    bool ip6 = roce_is_ip6(frame);
    size_t ip_hlen = ip6 ? QHCA_ROCE_IPV6_HLEN : QHCA_ROCE_IPV4_HLEN;
    uint8_t *udp = ip + ip_hlen;
    uint8_t *bth = udp + QHCA_ROCE_UDP_HLEN;
    size_t hlen = ip_hlen + QHCA_ROCE_UDP_HLEN + QHCA_ROCE_BTH_LEN;
    const size_t tail = QHCA_ROCE_IP_OFFSET + hlen;
    uint32_t crc;

    assert(frame_len >= tail + QHCA_ROCE_ICRC_LEN);

    memset(buf, 0xff, 8);
    memcpy(ip, frame + QHCA_ROCE_IP_OFFSET, hlen);
    if (ip6) {
        /* traffic class (bits 4..11), flow label (12..31), hop limit */
        ip[ROCE_IP6_VER_TC_FLOW] |= 0x0f;
        memset(ip + ROCE_IP6_VER_TC_FLOW + 1, 0xff, 3);
        ip[ROCE_IP6_HOP_LIMIT] = 0xff;
    } else {
        ip[ROCE_IP_TOS] = 0xff;
        ip[ROCE_IP_TTL] = 0xff;
        ip[ROCE_IP_CSUM] = 0xff;
        ip[ROCE_IP_CSUM + 1] = 0xff;
    }
    udp[ROCE_UDP_CSUM] = 0xff;
    udp[ROCE_UDP_CSUM + 1] = 0xff;
    bth[ROCE_BTH_RESV8A] = 0xff;

    crc = qhca_roce_crc32_update(0xffffffff, buf, 8 + hlen);
    crc = qhca_roce_crc32_update(crc, frame + tail,
                                 frame_len - QHCA_ROCE_ICRC_LEN - tail);
    return ~crc;
}

/* Check the opcode and payload length; compute the frame length */
static QhcaRoceErr roce_layout(uint8_t opcode, bool ip6, size_t payload_len,
                               size_t *frame_len)
{
    const QhcaRoceOpInfo *op = qhca_roce_op_info(opcode);
    size_t ip_len;

    if (!op) {
        return QHCA_ROCE_ERR_BAD_OPCODE;
    }
    if (payload_len && !(op->flags & QHCA_ROCE_OPF_PAYLOAD)) {
        return QHCA_ROCE_ERR_PAYLOAD;
    }
    if (payload_len > QHCA_ROCE_IP_MAX_LEN) {
        return QHCA_ROCE_ERR_TOO_LONG;
    }
    ip_len = (ip6 ? QHCA_ROCE_IPV6_HLEN : QHCA_ROCE_IPV4_HLEN) +
             QHCA_ROCE_UDP_HLEN + QHCA_ROCE_BTH_LEN +
             op->ext_len + payload_len + (-payload_len & 3) +
             QHCA_ROCE_ICRC_LEN;
    if (ip_len > QHCA_ROCE_IP_MAX_LEN) {
        return QHCA_ROCE_ERR_TOO_LONG;
    }
    *frame_len = QHCA_ROCE_ETH_HLEN + ip_len;
    return QHCA_ROCE_OK;
}

size_t qhca_roce_frame_len(uint8_t opcode, size_t payload_len)
{
    size_t len;

    if (roce_layout(opcode, false, payload_len, &len) != QHCA_ROCE_OK) {
        return 0;
    }
    return len;
}

size_t qhca_roce_frame_len_hdr(const QhcaRoceHdr *h, size_t payload_len)
{
    size_t len;

    if (roce_layout(h->opcode, h->ipv6, payload_len, &len) != QHCA_ROCE_OK) {
        return 0;
    }
    return len;
}

static const uint8_t roce_v4mapped[12] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
};

bool qhca_roce_gid_is_ipv4(const uint8_t *gid)
{
    return !memcmp(gid, roce_v4mapped, sizeof(roce_v4mapped));
}

bool qhca_roce_ip6_unicast(const uint8_t *addr)
{
    static const uint8_t zero[15];

    if (addr[0] == 0xff || qhca_roce_gid_is_ipv4(addr)) {
        return false;               /* multicast, IPv4-mapped */
    }
    /* :: and ::1 */
    return memcmp(addr, zero, sizeof(zero)) || addr[15] > 1;
}

bool qhca_roce_gid_is_mcast(const uint8_t *gid)
{
    if (qhca_roce_gid_is_ipv4(gid)) {
        return (gid[12] & 0xf0) == 0xe0;        /* 224.0.0.0/4 */
    }
    return gid[0] == 0xff;                      /* ff00::/8 */
}

bool qhca_roce_gid_is_unicast(const uint8_t *gid)
{
    if (qhca_roce_gid_is_ipv4(gid)) {
        /*
         * Not 0.0.0.0/8 (this host), 127.0.0.0/8 (loopback), 224.0.0.0/4
         * (multicast) or 240.0.0.0/4 (reserved, and the broadcast address)
         */
        return gid[12] != 0 && gid[12] != 127 && gid[12] < 0xe0;
    }
    return qhca_roce_ip6_unicast(gid);
}

void qhca_roce_mcast_mac(const uint8_t *gid, uint8_t *mac)
{
    if (qhca_roce_gid_is_ipv4(gid)) {
        /* RFC 1112: 01:00:5e and the low 23 bits of the group */
        mac[0] = 0x01;
        mac[1] = 0x00;
        mac[2] = 0x5e;
        mac[3] = gid[13] & 0x7f;
        mac[4] = gid[14];
        mac[5] = gid[15];
    } else {
        /* RFC 2464: 33:33 and the low 32 bits of the group */
        mac[0] = 0x33;
        mac[1] = 0x33;
        memcpy(mac + 2, gid + 12, 4);
    }
}

bool qhca_roce_set_gids_ud(QhcaRoceHdr *h, const uint8_t *sgid,
                           const uint8_t *dgid)
{
    if (!qhca_roce_gid_is_mcast(dgid)) {
        return qhca_roce_set_gids(h, sgid, dgid);
    }
    if (qhca_roce_gid_is_ipv4(sgid) && qhca_roce_gid_is_ipv4(dgid) &&
        !qhca_roce_gid_is_mcast(sgid)) {
        h->ipv6 = false;
        h->src_ip = roce_get32(sgid + 12);
        h->dst_ip = roce_get32(dgid + 12);
        return true;
    }
    if (qhca_roce_ip6_unicast(sgid) && !qhca_roce_gid_is_ipv4(dgid)) {
        h->ipv6 = true;
        memcpy(h->src_ip6, sgid, 16);
        memcpy(h->dst_ip6, dgid, 16);
        return true;
    }
    return false;
}

bool qhca_roce_set_gids(QhcaRoceHdr *h, const uint8_t *sgid,
                        const uint8_t *dgid)
{
    if (qhca_roce_gid_is_ipv4(sgid) && qhca_roce_gid_is_ipv4(dgid)) {
        if (qhca_roce_gid_is_mcast(sgid) || qhca_roce_gid_is_mcast(dgid)) {
            return false;
        }
        h->ipv6 = false;
        h->src_ip = roce_get32(sgid + 12);
        h->dst_ip = roce_get32(dgid + 12);
        return true;
    }
    if (qhca_roce_ip6_unicast(sgid) && qhca_roce_ip6_unicast(dgid)) {
        h->ipv6 = true;
        memcpy(h->src_ip6, sgid, 16);
        memcpy(h->dst_ip6, dgid, 16);
        return true;
    }
    return false;
}

static void roce_gid_of(bool ip6, const uint8_t *ip6_addr, uint32_t ip,
                        uint8_t *gid)
{
    if (ip6) {
        memcpy(gid, ip6_addr, 16);
    } else {
        memcpy(gid, roce_v4mapped, sizeof(roce_v4mapped));
        roce_put32(gid + 12, ip);
    }
}

void qhca_roce_src_gid(const QhcaRoceHdr *h, uint8_t *gid)
{
    roce_gid_of(h->ipv6, h->src_ip6, h->src_ip, gid);
}

void qhca_roce_dst_gid(const QhcaRoceHdr *h, uint8_t *gid)
{
    roce_gid_of(h->ipv6, h->dst_ip6, h->dst_ip, gid);
}

bool qhca_roce_frame_dst_gid(const uint8_t *frame, size_t len, uint8_t *gid)
{
    const uint8_t *ip = frame + QHCA_ROCE_IP_OFFSET;

    if (len < QHCA_ROCE_IP_OFFSET) {
        return false;
    }
    switch (roce_get16(frame + 12)) {
    case QHCA_ROCE_ETHERTYPE_IPV4:
        if (len < QHCA_ROCE_IP_OFFSET + QHCA_ROCE_IPV4_HLEN) {
            return false;
        }
        roce_gid_of(false, NULL, roce_get32(ip + ROCE_IP_DST), gid);
        return true;
    case QHCA_ROCE_ETHERTYPE_IPV6:
        if (len < QHCA_ROCE_IP_OFFSET + QHCA_ROCE_IPV6_HLEN) {
            return false;
        }
        roce_gid_of(true, ip + ROCE_IP6_DST, 0, gid);
        return true;
    default:
        return false;
    }
}

bool qhca_roce_steer(const uint8_t *frame, size_t len, const uint8_t *mac)
{
    const uint8_t *ip = frame + QHCA_ROCE_IP_OFFSET;
    size_t udp;

    if (len < QHCA_ROCE_IP_OFFSET ||
        (!(frame[0] & 1) && memcmp(frame, mac, 6))) {
        return false;           /* neither to us nor multicast */
    }
    switch (roce_get16(frame + 12)) {
    case QHCA_ROCE_ETHERTYPE_IPV4:
        if (len < QHCA_ROCE_IP_OFFSET + QHCA_ROCE_IPV4_HLEN ||
            ip[ROCE_IP_VER_IHL] >> 4 != 4 ||
            (ip[ROCE_IP_VER_IHL] & 0xf) < QHCA_ROCE_IPV4_HLEN / 4 ||
            ip[ROCE_IP_PROTO] != QHCA_ROCE_IPPROTO_UDP ||
            (roce_get16(ip + ROCE_IP_FRAG) &
             (ROCE_IP_FLAG_MF | ROCE_IP_FRAG_OFF))) {
            return false;
        }
        udp = QHCA_ROCE_IP_OFFSET + (ip[ROCE_IP_VER_IHL] & 0xf) * 4;
        break;
    case QHCA_ROCE_ETHERTYPE_IPV6:
        if (len < QHCA_ROCE_IP_OFFSET + QHCA_ROCE_IPV6_HLEN ||
            ip[ROCE_IP6_VER_TC_FLOW] >> 4 != 6 ||
            ip[ROCE_IP6_NEXT] != QHCA_ROCE_IPPROTO_UDP) {
            return false;
        }
        udp = QHCA_ROCE_IP6_UDP_OFFSET;
        break;
    default:
        return false;
    }
    return len >= udp + 4 && roce_get16(frame + udp + 2) == QHCA_ROCE_UDP_DPORT;
}

static void roce_put_ext(uint8_t *p, QhcaRoceExt ext, const QhcaRoceHdr *h)
{
    switch (ext) {
    case QHCA_ROCE_EXT_DETH:
        roce_put32(p, h->deth.qkey);
        p[4] = 0;
        roce_put24(p + 5, h->deth.src_qp);
        break;
    case QHCA_ROCE_EXT_FETH:
        roce_put32(p, h->feth);
        break;
    case QHCA_ROCE_EXT_RETH:
        roce_put64(p, h->reth.va);
        roce_put32(p + 8, h->reth.rkey);
        roce_put32(p + 12, h->reth.dma_len);
        break;
    case QHCA_ROCE_EXT_ATOMIC_ETH:
        roce_put64(p, h->atomic.va);
        roce_put32(p + 8, h->atomic.rkey);
        roce_put64(p + 12, h->atomic.swap_add);
        roce_put64(p + 20, h->atomic.compare);
        break;
    case QHCA_ROCE_EXT_AETH:
        p[0] = h->aeth.syndrome;
        roce_put24(p + 1, h->aeth.msn);
        break;
    case QHCA_ROCE_EXT_ATOMIC_ACK_ETH:
        roce_put64(p, h->atomic_ack_orig);
        break;
    case QHCA_ROCE_EXT_IMMDT:
        roce_put32(p, h->imm);
        break;
    case QHCA_ROCE_EXT_IETH:
        roce_put32(p, h->ieth_rkey);
        break;
    default:
        abort();    /* not an extension header */
    }
}

static void roce_get_ext(const uint8_t *p, QhcaRoceExt ext, QhcaRoceHdr *h)
{
    switch (ext) {
    case QHCA_ROCE_EXT_DETH:
        h->deth.qkey = roce_get32(p);
        h->deth.src_qp = roce_get24(p + 5);
        break;
    case QHCA_ROCE_EXT_FETH:
        h->feth = roce_get32(p);
        break;
    case QHCA_ROCE_EXT_RETH:
        h->reth.va = roce_get64(p);
        h->reth.rkey = roce_get32(p + 8);
        h->reth.dma_len = roce_get32(p + 12);
        break;
    case QHCA_ROCE_EXT_ATOMIC_ETH:
        h->atomic.va = roce_get64(p);
        h->atomic.rkey = roce_get32(p + 8);
        h->atomic.swap_add = roce_get64(p + 12);
        h->atomic.compare = roce_get64(p + 20);
        break;
    case QHCA_ROCE_EXT_AETH:
        h->aeth.syndrome = p[0];
        h->aeth.msn = roce_get24(p + 1);
        break;
    case QHCA_ROCE_EXT_ATOMIC_ACK_ETH:
        h->atomic_ack_orig = roce_get64(p);
        break;
    case QHCA_ROCE_EXT_IMMDT:
        h->imm = roce_get32(p);
        break;
    case QHCA_ROCE_EXT_IETH:
        h->ieth_rkey = roce_get32(p);
        break;
    default:
        abort();    /* not an extension header */
    }
}

/* Whether the opcode's 24-bit fields fit */
static bool roce_fields_fit(const QhcaRoceOpInfo *op, const QhcaRoceHdr *h)
{
    int i;

    if (h->dest_qp > QHCA_ROCE_QPN_MASK || h->psn > QHCA_ROCE_PSN_MASK ||
        (h->ipv6 && h->flow_label > QHCA_ROCE_FLOW_LABEL_MASK)) {
        return false;
    }
    for (i = 0; i < op->n_ext; i++) {
        if (op->ext[i] == QHCA_ROCE_EXT_AETH &&
            h->aeth.msn > QHCA_ROCE_MSN_MASK) {
            return false;
        }
        if (op->ext[i] == QHCA_ROCE_EXT_DETH &&
            h->deth.src_qp > QHCA_ROCE_QPN_MASK) {
            return false;
        }
    }
    return true;
}

int qhca_roce_build_headers(uint8_t *buf, size_t size,
                            const QhcaRoceHdr *hdr, size_t payload_len)
{
    const QhcaRoceOpInfo *op;
    size_t frame_len;
    uint16_t ip_len, ip_hlen;
    uint8_t *ip, *udp, *bth, *p;
    uint8_t pad = -payload_len & 3;
    QhcaRoceErr err;
    int i;

    err = roce_layout(hdr->opcode, hdr->ipv6, payload_len, &frame_len);
    if (err != QHCA_ROCE_OK) {
        return -(int)err;
    }
    op = qhca_roce_op_info(hdr->opcode);
    if (!roce_fields_fit(op, hdr)) {
        return -(int)QHCA_ROCE_ERR_FIELD_RANGE;
    }
    if (size < frame_len) {
        return -(int)QHCA_ROCE_ERR_BUF_TOO_SMALL;
    }
    ip_len = frame_len - QHCA_ROCE_ETH_HLEN;
    ip_hlen = hdr->ipv6 ? QHCA_ROCE_IPV6_HLEN : QHCA_ROCE_IPV4_HLEN;
    ip = buf + QHCA_ROCE_IP_OFFSET;
    udp = ip + ip_hlen;
    bth = udp + QHCA_ROCE_UDP_HLEN;

    /* Ethernet II */
    memcpy(buf, hdr->dst_mac, 6);
    memcpy(buf + 6, hdr->src_mac, 6);
    roce_put16(buf + 12, hdr->ipv6 ? QHCA_ROCE_ETHERTYPE_IPV6 :
                                     QHCA_ROCE_ETHERTYPE_IPV4);

    if (hdr->ipv6) {
        /* IPv6: no extension headers */
        roce_put32(ip + ROCE_IP6_VER_TC_FLOW,
                   6u << 28 | (uint32_t)hdr->tos << 20 | hdr->flow_label);
        roce_put16(ip + ROCE_IP6_PLEN, ip_len - QHCA_ROCE_IPV6_HLEN);
        ip[ROCE_IP6_NEXT] = QHCA_ROCE_IPPROTO_UDP;
        ip[ROCE_IP6_HOP_LIMIT] = hdr->ttl;
        memcpy(ip + ROCE_IP6_SRC, hdr->src_ip6, 16);
        memcpy(ip + ROCE_IP6_DST, hdr->dst_ip6, 16);
    } else {
        /* IPv4: no options, DF, not fragmented */
        ip[ROCE_IP_VER_IHL] = 0x45;
        ip[ROCE_IP_TOS] = hdr->tos;
        roce_put16(ip + ROCE_IP_TOT_LEN, ip_len);
        roce_put16(ip + ROCE_IP_ID, hdr->ip_id);
        roce_put16(ip + ROCE_IP_FRAG, ROCE_IP_FLAG_DF);
        ip[ROCE_IP_TTL] = hdr->ttl;
        ip[ROCE_IP_PROTO] = QHCA_ROCE_IPPROTO_UDP;
        roce_put16(ip + ROCE_IP_CSUM, 0);
        roce_put32(ip + ROCE_IP_SRC, hdr->src_ip);
        roce_put32(ip + ROCE_IP_DST, hdr->dst_ip);
        roce_put16(ip + ROCE_IP_CSUM,
                   qhca_roce_inet_csum(ip, QHCA_ROCE_IPV4_HLEN));
    }

    /*
     * UDP: no checksum over IPv4 (allowed for RoCEv2); over IPv6, where
     * UDP needs one, qhca_roce_finish() puts it in once the ICRC is there
     */
    roce_put16(udp + ROCE_UDP_SPORT, hdr->src_port);
    roce_put16(udp + ROCE_UDP_DPORT, QHCA_ROCE_UDP_DPORT);
    roce_put16(udp + ROCE_UDP_LEN, ip_len - ip_hlen);
    roce_put16(udp + ROCE_UDP_CSUM, 0);

    /* BTH */
    bth[ROCE_BTH_OPCODE] = hdr->opcode;
    bth[ROCE_BTH_FLAGS] = (hdr->se ? ROCE_BTH_SE : 0) |
                          (hdr->mig ? ROCE_BTH_MIG : 0) |
                          pad << ROCE_BTH_PAD_SHIFT | QHCA_ROCE_TVER;
    roce_put16(bth + ROCE_BTH_PKEY, hdr->pkey);
    bth[ROCE_BTH_RESV8A] = (hdr->fecn ? ROCE_BTH_FECN : 0) |
                           (hdr->becn ? ROCE_BTH_BECN : 0);
    roce_put24(bth + ROCE_BTH_DQPN, hdr->dest_qp);
    bth[ROCE_BTH_ACKREQ] = hdr->ack_req ? ROCE_BTH_ACK_REQ : 0;
    roce_put24(bth + ROCE_BTH_PSN, hdr->psn);

    p = bth + QHCA_ROCE_BTH_LEN;
    for (i = 0; i < op->n_ext; i++) {
        roce_put_ext(p, op->ext[i], hdr);
        p += qhca_roce_ext_len[op->ext[i]];
    }
    return p - buf;
}

void qhca_roce_finish(uint8_t *frame, size_t frame_len)
{
    size_t bth_off = roce_bth_off(frame);
    uint8_t *udp;
    uint32_t udp_len;
    uint16_t csum;
    uint8_t pad;

    assert(frame_len >= bth_off + QHCA_ROCE_BTH_LEN + QHCA_ROCE_ICRC_LEN &&
           frame_len <= QHCA_ROCE_MAX_FRAME_LEN);
    pad = frame[bth_off + ROCE_BTH_FLAGS] >> ROCE_BTH_PAD_SHIFT;
    pad &= ROCE_BTH_PAD_MASK;
    memset(frame + frame_len - QHCA_ROCE_ICRC_LEN - pad, 0, pad);
    roce_put32_le(frame + frame_len - QHCA_ROCE_ICRC_LEN,
                  qhca_roce_icrc(frame, frame_len));
    if (!roce_is_ip6(frame)) {
        return;
    }
    /* A computed 0 goes on the wire as 0xFFFF (0 is "no checksum") */
    udp = frame + QHCA_ROCE_IP6_UDP_OFFSET;
    udp_len = frame_len - QHCA_ROCE_IP6_UDP_OFFSET;
    roce_put16(udp + ROCE_UDP_CSUM, 0);
    csum = roce_csum_fold(roce_udp_sum(frame + QHCA_ROCE_IP_OFFSET +
                                       ROCE_IP6_SRC, 32, udp, udp_len));
    roce_put16(udp + ROCE_UDP_CSUM, csum ? csum : 0xffff);
}

int qhca_roce_build(uint8_t *buf, size_t size, const QhcaRoceHdr *hdr,
                    const void *payload, size_t payload_len)
{
    int off = qhca_roce_build_headers(buf, size, hdr, payload_len);
    size_t frame_len;

    if (off < 0) {
        return off;
    }
    frame_len = qhca_roce_frame_len_hdr(hdr, payload_len);
    if (payload_len) {
        memcpy(buf + off, payload, payload_len);
    }
    qhca_roce_finish(buf, frame_len);
    return frame_len;
}

/* The IPv4 header; sets the IP and UDP fields of pkt */
static QhcaRoceErr roce_parse_ipv4(const uint8_t *frame, size_t len,
                                   QhcaRocePkt *pkt)
{
    const uint8_t *ip = frame + QHCA_ROCE_IP_OFFSET;
    QhcaRoceHdr *h = &pkt->hdr;
    uint32_t ip_len;

    if (len < QHCA_ROCE_BTH_OFFSET) {
        return QHCA_ROCE_ERR_TOO_SHORT;
    }
    if (ip[ROCE_IP_VER_IHL] >> 4 != 4) {
        return QHCA_ROCE_ERR_IP_VERSION;
    }
    if ((ip[ROCE_IP_VER_IHL] & 0xf) != QHCA_ROCE_IPV4_HLEN / 4) {
        return QHCA_ROCE_ERR_IP_HDR_LEN;
    }
    ip_len = roce_get16(ip + ROCE_IP_TOT_LEN);
    if (ip_len < QHCA_ROCE_IPV4_HLEN + QHCA_ROCE_UDP_HLEN ||
        ip_len > len - QHCA_ROCE_ETH_HLEN) {
        return QHCA_ROCE_ERR_IP_TOTAL_LEN;
    }
    if (roce_get16(ip + ROCE_IP_FRAG) & (ROCE_IP_FLAG_MF | ROCE_IP_FRAG_OFF)) {
        return QHCA_ROCE_ERR_IP_FRAGMENT;
    }
    if (qhca_roce_inet_csum(ip, QHCA_ROCE_IPV4_HLEN) != 0) {
        return QHCA_ROCE_ERR_IP_CSUM;
    }
    if (ip[ROCE_IP_PROTO] != QHCA_ROCE_IPPROTO_UDP) {
        return QHCA_ROCE_ERR_NOT_UDP;
    }
    pkt->ip_len = ip_len;
    pkt->udp_off = QHCA_ROCE_UDP_OFFSET;
    h->src_ip = roce_get32(ip + ROCE_IP_SRC);
    h->dst_ip = roce_get32(ip + ROCE_IP_DST);
    h->tos = ip[ROCE_IP_TOS];
    h->ttl = ip[ROCE_IP_TTL];
    h->ip_id = roce_get16(ip + ROCE_IP_ID);
    return QHCA_ROCE_OK;
}

/* The IPv6 header; sets the IP and UDP fields of pkt */
static QhcaRoceErr roce_parse_ipv6(const uint8_t *frame, size_t len,
                                   QhcaRocePkt *pkt)
{
    const uint8_t *ip = frame + QHCA_ROCE_IP_OFFSET;
    QhcaRoceHdr *h = &pkt->hdr;
    uint32_t plen, word;

    if (len < QHCA_ROCE_IP6_BTH_OFFSET) {
        return QHCA_ROCE_ERR_TOO_SHORT;
    }
    word = roce_get32(ip + ROCE_IP6_VER_TC_FLOW);
    if (word >> 28 != 6) {
        return QHCA_ROCE_ERR_IP_VERSION;
    }
    /* No jumbograms; held to the IPv4 frame length (see the header) */
    plen = roce_get16(ip + ROCE_IP6_PLEN);
    if (plen < QHCA_ROCE_UDP_HLEN ||
        plen > len - QHCA_ROCE_IP6_UDP_OFFSET ||
        plen > QHCA_ROCE_IP_MAX_LEN - QHCA_ROCE_IPV6_HLEN) {
        return QHCA_ROCE_ERR_IP_TOTAL_LEN;
    }
    if (ip[ROCE_IP6_NEXT] != QHCA_ROCE_IPPROTO_UDP) {
        return QHCA_ROCE_ERR_NOT_UDP;
    }
    /* a multicast destination: UD only, checked with the opcode */
    if (!qhca_roce_ip6_unicast(ip + ROCE_IP6_SRC) ||
        (!qhca_roce_ip6_unicast(ip + ROCE_IP6_DST) &&
         ip[ROCE_IP6_DST] != 0xff)) {
        return QHCA_ROCE_ERR_IP_ADDR;
    }
    pkt->ip_len = QHCA_ROCE_IPV6_HLEN + plen;
    pkt->udp_off = QHCA_ROCE_IP6_UDP_OFFSET;
    h->ipv6 = true;
    memcpy(h->src_ip6, ip + ROCE_IP6_SRC, 16);
    memcpy(h->dst_ip6, ip + ROCE_IP6_DST, 16);
    h->tos = word >> 20;
    h->flow_label = word & QHCA_ROCE_FLOW_LABEL_MASK;
    h->ttl = ip[ROCE_IP6_HOP_LIMIT];
    return QHCA_ROCE_OK;
}

QhcaRoceErr qhca_roce_parse(const uint8_t *frame, size_t len,
                            QhcaRocePkt *pkt)
{
    const uint8_t *ip, *udp, *bth, *p;
    const QhcaRoceOpInfo *op;
    QhcaRoceHdr *h = &pkt->hdr;
    uint32_t ip_len, ip_hlen, udp_len, avail, pad, icrc_off;
    uint16_t pkey;
    QhcaRoceErr err;
    int i;

    memset(pkt, 0, sizeof(*pkt));

    /* Ethernet II, then IPv4 or IPv6 */
    if (len < QHCA_ROCE_BTH_OFFSET) {
        return QHCA_ROCE_ERR_TOO_SHORT;
    }
    switch (roce_get16(frame + 12)) {
    case QHCA_ROCE_ETHERTYPE_IPV4:
        err = roce_parse_ipv4(frame, len, pkt);
        break;
    case QHCA_ROCE_ETHERTYPE_IPV6:
        err = roce_parse_ipv6(frame, len, pkt);
        break;
    default:
        err = QHCA_ROCE_ERR_NOT_IPV4;
        break;
    }
    if (err != QHCA_ROCE_OK) {
        return err;
    }
    ip = frame + QHCA_ROCE_IP_OFFSET;
    ip_len = pkt->ip_len;
    ip_hlen = pkt->udp_off - QHCA_ROCE_IP_OFFSET;

    /* UDP */
    udp = frame + pkt->udp_off;
    if (roce_get16(udp + ROCE_UDP_DPORT) != QHCA_ROCE_UDP_DPORT) {
        return QHCA_ROCE_ERR_NOT_ROCE_PORT;
    }
    udp_len = roce_get16(udp + ROCE_UDP_LEN);
    if (udp_len != ip_len - ip_hlen) {
        return QHCA_ROCE_ERR_UDP_LEN;
    }
    /* 0: none sent (as Soft-RoCE sends over IPv4 and IPv6) */
    pkt->udp_csum = roce_get16(udp + ROCE_UDP_CSUM);
    if (pkt->udp_csum &&
        roce_csum_fold(h->ipv6 ?
                       roce_udp_sum(ip + ROCE_IP6_SRC, 32, udp, udp_len) :
                       roce_udp_sum(ip + ROCE_IP_SRC, 8, udp, udp_len))) {
        return QHCA_ROCE_ERR_UDP_CSUM;
    }
    if (udp_len < QHCA_ROCE_UDP_HLEN + QHCA_ROCE_BTH_LEN +
                  QHCA_ROCE_ICRC_LEN) {
        return QHCA_ROCE_ERR_SHORT_TRANSPORT;
    }

    /* BTH */
    bth = udp + QHCA_ROCE_UDP_HLEN;
    op = qhca_roce_op_info(bth[ROCE_BTH_OPCODE]);
    if (!op) {
        return QHCA_ROCE_ERR_BAD_OPCODE;
    }
    if ((bth[ROCE_BTH_FLAGS] & ROCE_BTH_TVER_MASK) != QHCA_ROCE_TVER) {
        return QHCA_ROCE_ERR_TVER;
    }
    /* Full or limited member of the default partition, as rxe accepts */
    pkey = roce_get16(bth + ROCE_BTH_PKEY);
    if ((pkey & 0x7fff) != (QHCA_ROCE_DEFAULT_PKEY & 0x7fff)) {
        return QHCA_ROCE_ERR_PKEY;
    }

    /* Bytes after the BTH and before the ICRC */
    avail = udp_len - QHCA_ROCE_UDP_HLEN - QHCA_ROCE_BTH_LEN -
            QHCA_ROCE_ICRC_LEN;
    if (avail < op->ext_len) {
        return QHCA_ROCE_ERR_SHORT_TRANSPORT;
    }
    avail -= op->ext_len;
    pad = (bth[ROCE_BTH_FLAGS] >> ROCE_BTH_PAD_SHIFT) & ROCE_BTH_PAD_MASK;
    if (pad > avail || avail % 4) {
        return QHCA_ROCE_ERR_PAD;
    }
    if (avail && !(op->flags & QHCA_ROCE_OPF_PAYLOAD)) {
        return QHCA_ROCE_ERR_PAYLOAD;
    }
    if (h->ipv6 && h->dst_ip6[0] == 0xff && !(op->flags & QHCA_ROCE_OPF_UD)) {
        return QHCA_ROCE_ERR_IP_ADDR;       /* multicast: UD only */
    }

    /* Everything lies inside the frame: fill in the result */
    pkt->op = op;
    pkt->frame_len = QHCA_ROCE_ETH_HLEN + ip_len;
    pkt->ip_off = QHCA_ROCE_IP_OFFSET;
    pkt->udp_len = udp_len;
    pkt->bth_off = bth - frame;

    memcpy(h->dst_mac, frame, 6);
    memcpy(h->src_mac, frame + 6, 6);
    h->src_port = roce_get16(udp + ROCE_UDP_SPORT);
    h->opcode = bth[ROCE_BTH_OPCODE];
    h->se = bth[ROCE_BTH_FLAGS] & ROCE_BTH_SE;
    h->mig = bth[ROCE_BTH_FLAGS] & ROCE_BTH_MIG;
    h->pad = pad;
    h->tver = bth[ROCE_BTH_FLAGS] & ROCE_BTH_TVER_MASK;
    h->pkey = pkey;
    h->fecn = bth[ROCE_BTH_RESV8A] & ROCE_BTH_FECN;
    h->becn = bth[ROCE_BTH_RESV8A] & ROCE_BTH_BECN;
    h->dest_qp = roce_get24(bth + ROCE_BTH_DQPN);
    h->ack_req = bth[ROCE_BTH_ACKREQ] & ROCE_BTH_ACK_REQ;
    h->psn = roce_get24(bth + ROCE_BTH_PSN);

    p = bth + QHCA_ROCE_BTH_LEN;
    for (i = 0; i < op->n_ext; i++) {
        pkt->ext_off[op->ext[i]] = p - frame;
        roce_get_ext(p, op->ext[i], h);
        p += qhca_roce_ext_len[op->ext[i]];
    }
    pkt->payload_off = p - frame;
    pkt->payload_len = avail - pad;
    pkt->pad = pad;
    icrc_off = pkt->frame_len - QHCA_ROCE_ICRC_LEN;
    pkt->icrc_off = icrc_off;
    pkt->icrc = roce_get32_le(frame + icrc_off);

    if (qhca_roce_icrc(frame, pkt->frame_len) != pkt->icrc) {
        return QHCA_ROCE_ERR_ICRC;
    }
    return QHCA_ROCE_OK;
}
