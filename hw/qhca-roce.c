/*
 * qhca: RoCEv2 wire format (Ethernet II / IPv4 / UDP 4791 / BTH / ICRC).
 *
 * Frame layout (IBA 1.4 Annex A17 "RoCEv2"; no VLAN, no IPv4 options):
 *
 *   Ethernet II (14) | IPv4 (20) | UDP (8) | BTH (12) | extension headers |
 *   payload | pad (0..3, zero) | ICRC (4)
 *
 * The ICRC is a CRC-32 (as Ethernet's FCS) over: 8 bytes of 0xFF standing
 * for the LRH that RoCEv2 lacks; the IPv4 header with TOS, TTL and header
 * checksum set to all ones; the UDP header with its checksum set to all
 * ones; the BTH with its FECN/BECN/reserved byte (before the dest QP) set
 * to all ones; then the extension headers, payload and pad.  Linux's
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
    [QHCA_ROCE_OP_UD_SEND_ONLY] =
        OP1("UD_SEND_ONLY",
            REQ | PAY | OPF(SEND) | OPF(FIRST) | OPF(LAST) | OPF(UD), DETH),
    [QHCA_ROCE_OP_UD_SEND_ONLY_IMM] =
        OP2("UD_SEND_ONLY_WITH_IMMEDIATE",
            REQ | PAY | OPF(SEND) | OPF(FIRST) | OPF(LAST) | OPF(UD) |
            OPF(IMM), DETH, IMMDT),
};

#undef OP0
#undef OP1
#undef OP2
#undef PAY
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
    [QHCA_ROCE_ERR_NOT_IPV4] = "not IPv4",
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

/* CRC-32 table for the reflected polynomial 0xEDB88320 */
static const uint32_t qhca_roce_crc32_table[256] = {
    0x00000000, 0x77073096, 0xee0e612c, 0x990951ba,
    0x076dc419, 0x706af48f, 0xe963a535, 0x9e6495a3,
    0x0edb8832, 0x79dcb8a4, 0xe0d5e91e, 0x97d2d988,
    0x09b64c2b, 0x7eb17cbd, 0xe7b82d07, 0x90bf1d91,
    0x1db71064, 0x6ab020f2, 0xf3b97148, 0x84be41de,
    0x1adad47d, 0x6ddde4eb, 0xf4d4b551, 0x83d385c7,
    0x136c9856, 0x646ba8c0, 0xfd62f97a, 0x8a65c9ec,
    0x14015c4f, 0x63066cd9, 0xfa0f3d63, 0x8d080df5,
    0x3b6e20c8, 0x4c69105e, 0xd56041e4, 0xa2677172,
    0x3c03e4d1, 0x4b04d447, 0xd20d85fd, 0xa50ab56b,
    0x35b5a8fa, 0x42b2986c, 0xdbbbc9d6, 0xacbcf940,
    0x32d86ce3, 0x45df5c75, 0xdcd60dcf, 0xabd13d59,
    0x26d930ac, 0x51de003a, 0xc8d75180, 0xbfd06116,
    0x21b4f4b5, 0x56b3c423, 0xcfba9599, 0xb8bda50f,
    0x2802b89e, 0x5f058808, 0xc60cd9b2, 0xb10be924,
    0x2f6f7c87, 0x58684c11, 0xc1611dab, 0xb6662d3d,
    0x76dc4190, 0x01db7106, 0x98d220bc, 0xefd5102a,
    0x71b18589, 0x06b6b51f, 0x9fbfe4a5, 0xe8b8d433,
    0x7807c9a2, 0x0f00f934, 0x9609a88e, 0xe10e9818,
    0x7f6a0dbb, 0x086d3d2d, 0x91646c97, 0xe6635c01,
    0x6b6b51f4, 0x1c6c6162, 0x856530d8, 0xf262004e,
    0x6c0695ed, 0x1b01a57b, 0x8208f4c1, 0xf50fc457,
    0x65b0d9c6, 0x12b7e950, 0x8bbeb8ea, 0xfcb9887c,
    0x62dd1ddf, 0x15da2d49, 0x8cd37cf3, 0xfbd44c65,
    0x4db26158, 0x3ab551ce, 0xa3bc0074, 0xd4bb30e2,
    0x4adfa541, 0x3dd895d7, 0xa4d1c46d, 0xd3d6f4fb,
    0x4369e96a, 0x346ed9fc, 0xad678846, 0xda60b8d0,
    0x44042d73, 0x33031de5, 0xaa0a4c5f, 0xdd0d7cc9,
    0x5005713c, 0x270241aa, 0xbe0b1010, 0xc90c2086,
    0x5768b525, 0x206f85b3, 0xb966d409, 0xce61e49f,
    0x5edef90e, 0x29d9c998, 0xb0d09822, 0xc7d7a8b4,
    0x59b33d17, 0x2eb40d81, 0xb7bd5c3b, 0xc0ba6cad,
    0xedb88320, 0x9abfb3b6, 0x03b6e20c, 0x74b1d29a,
    0xead54739, 0x9dd277af, 0x04db2615, 0x73dc1683,
    0xe3630b12, 0x94643b84, 0x0d6d6a3e, 0x7a6a5aa8,
    0xe40ecf0b, 0x9309ff9d, 0x0a00ae27, 0x7d079eb1,
    0xf00f9344, 0x8708a3d2, 0x1e01f268, 0x6906c2fe,
    0xf762575d, 0x806567cb, 0x196c3671, 0x6e6b06e7,
    0xfed41b76, 0x89d32be0, 0x10da7a5a, 0x67dd4acc,
    0xf9b9df6f, 0x8ebeeff9, 0x17b7be43, 0x60b08ed5,
    0xd6d6a3e8, 0xa1d1937e, 0x38d8c2c4, 0x4fdff252,
    0xd1bb67f1, 0xa6bc5767, 0x3fb506dd, 0x48b2364b,
    0xd80d2bda, 0xaf0a1b4c, 0x36034af6, 0x41047a60,
    0xdf60efc3, 0xa867df55, 0x316e8eef, 0x4669be79,
    0xcb61b38c, 0xbc66831a, 0x256fd2a0, 0x5268e236,
    0xcc0c7795, 0xbb0b4703, 0x220216b9, 0x5505262f,
    0xc5ba3bbe, 0xb2bd0b28, 0x2bb45a92, 0x5cb36a04,
    0xc2d7ffa7, 0xb5d0cf31, 0x2cd99e8b, 0x5bdeae1d,
    0x9b64c2b0, 0xec63f226, 0x756aa39c, 0x026d930a,
    0x9c0906a9, 0xeb0e363f, 0x72076785, 0x05005713,
    0x95bf4a82, 0xe2b87a14, 0x7bb12bae, 0x0cb61b38,
    0x92d28e9b, 0xe5d5be0d, 0x7cdcefb7, 0x0bdbdf21,
    0x86d3d2d4, 0xf1d4e242, 0x68ddb3f8, 0x1fda836e,
    0x81be16cd, 0xf6b9265b, 0x6fb077e1, 0x18b74777,
    0x88085ae6, 0xff0f6a70, 0x66063bca, 0x11010b5c,
    0x8f659eff, 0xf862ae69, 0x616bffd3, 0x166ccf45,
    0xa00ae278, 0xd70dd2ee, 0x4e048354, 0x3903b3c2,
    0xa7672661, 0xd06016f7, 0x4969474d, 0x3e6e77db,
    0xaed16a4a, 0xd9d65adc, 0x40df0b66, 0x37d83bf0,
    0xa9bcae53, 0xdebb9ec5, 0x47b2cf7f, 0x30b5ffe9,
    0xbdbdf21c, 0xcabac28a, 0x53b39330, 0x24b4a3a6,
    0xbad03605, 0xcdd70693, 0x54de5729, 0x23d967bf,
    0xb3667a2e, 0xc4614ab8, 0x5d681b02, 0x2a6f2b94,
    0xb40bbe37, 0xc30c8ea1, 0x5a05df1b, 0x2d02ef8d,
};

uint32_t qhca_roce_crc32_update(uint32_t crc, const void *buf, size_t len)
{
    const uint8_t *p = buf;

    while (len--) {
        crc = qhca_roce_crc32_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    }
    return crc;
}

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

/* Whether a UDP datagram's non-zero checksum is right */
static bool roce_udp_csum_ok(const uint8_t *ip, const uint8_t *udp,
                             uint32_t udp_len)
{
    uint32_t sum;

    sum = roce_csum_add(0, ip + ROCE_IP_SRC, 8);
    sum += QHCA_ROCE_IPPROTO_UDP;
    sum += udp_len;
    /* udp_len < 64 KiB: the sum cannot overflow 32 bits */
    sum = roce_csum_add(sum, udp, udp_len);
    return roce_csum_fold(sum) == 0;
}

uint32_t qhca_roce_icrc(const uint8_t *frame, size_t frame_len)
{
    static const uint8_t lrh_mask[8] = {
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    };
    uint8_t hdr[QHCA_ROCE_IPV4_HLEN + QHCA_ROCE_UDP_HLEN + QHCA_ROCE_BTH_LEN];
    uint8_t *ip = hdr;
    uint8_t *udp = hdr + QHCA_ROCE_IPV4_HLEN;
    uint8_t *bth = udp + QHCA_ROCE_UDP_HLEN;
    const size_t tail = QHCA_ROCE_BTH_OFFSET + QHCA_ROCE_BTH_LEN;
    uint32_t crc;

    assert(frame_len >= QHCA_ROCE_MIN_FRAME_LEN);

    memcpy(hdr, frame + QHCA_ROCE_IP_OFFSET, sizeof(hdr));
    ip[ROCE_IP_TOS] = 0xff;
    ip[ROCE_IP_TTL] = 0xff;
    ip[ROCE_IP_CSUM] = 0xff;
    ip[ROCE_IP_CSUM + 1] = 0xff;
    udp[ROCE_UDP_CSUM] = 0xff;
    udp[ROCE_UDP_CSUM + 1] = 0xff;
    bth[ROCE_BTH_RESV8A] = 0xff;

    crc = qhca_roce_crc32_update(0xffffffff, lrh_mask, sizeof(lrh_mask));
    crc = qhca_roce_crc32_update(crc, hdr, sizeof(hdr));
    crc = qhca_roce_crc32_update(crc, frame + tail,
                                 frame_len - QHCA_ROCE_ICRC_LEN - tail);
    return ~crc;
}

/* Check the opcode and payload length; compute the frame length */
static QhcaRoceErr roce_layout(uint8_t opcode, size_t payload_len,
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
    ip_len = QHCA_ROCE_IPV4_HLEN + QHCA_ROCE_UDP_HLEN + QHCA_ROCE_BTH_LEN +
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

    if (roce_layout(opcode, payload_len, &len) != QHCA_ROCE_OK) {
        return 0;
    }
    return len;
}

static void roce_put_ext(uint8_t *p, QhcaRoceExt ext, const QhcaRoceHdr *h)
{
    switch (ext) {
    case QHCA_ROCE_EXT_DETH:
        roce_put32(p, h->deth.qkey);
        p[4] = 0;
        roce_put24(p + 5, h->deth.src_qp);
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

    if (h->dest_qp > QHCA_ROCE_QPN_MASK || h->psn > QHCA_ROCE_PSN_MASK) {
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
    uint16_t ip_len;
    uint8_t *ip, *udp, *bth, *p;
    uint8_t pad = -payload_len & 3;
    QhcaRoceErr err;
    int i;

    err = roce_layout(hdr->opcode, payload_len, &frame_len);
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
    ip = buf + QHCA_ROCE_IP_OFFSET;
    udp = buf + QHCA_ROCE_UDP_OFFSET;
    bth = buf + QHCA_ROCE_BTH_OFFSET;

    /* Ethernet II */
    memcpy(buf, hdr->dst_mac, 6);
    memcpy(buf + 6, hdr->src_mac, 6);
    roce_put16(buf + 12, QHCA_ROCE_ETHERTYPE_IPV4);

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

    /* UDP: no checksum (allowed for RoCEv2 over IPv4) */
    roce_put16(udp + ROCE_UDP_SPORT, hdr->src_port);
    roce_put16(udp + ROCE_UDP_DPORT, QHCA_ROCE_UDP_DPORT);
    roce_put16(udp + ROCE_UDP_LEN, ip_len - QHCA_ROCE_IPV4_HLEN);
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
    uint8_t pad;

    assert(frame_len >= QHCA_ROCE_MIN_FRAME_LEN &&
           frame_len <= QHCA_ROCE_MAX_FRAME_LEN);
    pad = frame[QHCA_ROCE_BTH_OFFSET + ROCE_BTH_FLAGS] >> ROCE_BTH_PAD_SHIFT;
    pad &= ROCE_BTH_PAD_MASK;
    memset(frame + frame_len - QHCA_ROCE_ICRC_LEN - pad, 0, pad);
    roce_put32_le(frame + frame_len - QHCA_ROCE_ICRC_LEN,
                  qhca_roce_icrc(frame, frame_len));
}

int qhca_roce_build(uint8_t *buf, size_t size, const QhcaRoceHdr *hdr,
                    const void *payload, size_t payload_len)
{
    int off = qhca_roce_build_headers(buf, size, hdr, payload_len);
    size_t frame_len;

    if (off < 0) {
        return off;
    }
    frame_len = qhca_roce_frame_len(hdr->opcode, payload_len);
    if (payload_len) {
        memcpy(buf + off, payload, payload_len);
    }
    qhca_roce_finish(buf, frame_len);
    return frame_len;
}

QhcaRoceErr qhca_roce_parse(const uint8_t *frame, size_t len,
                            QhcaRocePkt *pkt)
{
    const uint8_t *ip, *udp, *bth, *p;
    const QhcaRoceOpInfo *op;
    QhcaRoceHdr *h = &pkt->hdr;
    uint32_t ip_len, udp_len, avail, pad, icrc_off;
    uint16_t pkey;
    int i;

    memset(pkt, 0, sizeof(*pkt));

    /* Ethernet II */
    if (len < QHCA_ROCE_BTH_OFFSET) {
        return QHCA_ROCE_ERR_TOO_SHORT;
    }
    if (roce_get16(frame + 12) != QHCA_ROCE_ETHERTYPE_IPV4) {
        return QHCA_ROCE_ERR_NOT_IPV4;
    }

    /* IPv4 */
    ip = frame + QHCA_ROCE_IP_OFFSET;
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

    /* UDP */
    udp = frame + QHCA_ROCE_UDP_OFFSET;
    if (roce_get16(udp + ROCE_UDP_DPORT) != QHCA_ROCE_UDP_DPORT) {
        return QHCA_ROCE_ERR_NOT_ROCE_PORT;
    }
    udp_len = roce_get16(udp + ROCE_UDP_LEN);
    if (udp_len != ip_len - QHCA_ROCE_IPV4_HLEN) {
        return QHCA_ROCE_ERR_UDP_LEN;
    }
    pkt->udp_csum = roce_get16(udp + ROCE_UDP_CSUM);
    if (pkt->udp_csum && !roce_udp_csum_ok(ip, udp, udp_len)) {
        return QHCA_ROCE_ERR_UDP_CSUM;
    }
    if (udp_len < QHCA_ROCE_UDP_HLEN + QHCA_ROCE_BTH_LEN +
                  QHCA_ROCE_ICRC_LEN) {
        return QHCA_ROCE_ERR_SHORT_TRANSPORT;
    }

    /* BTH */
    bth = frame + QHCA_ROCE_BTH_OFFSET;
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

    /* Everything lies inside the frame: fill in the result */
    pkt->op = op;
    pkt->frame_len = QHCA_ROCE_ETH_HLEN + ip_len;
    pkt->ip_off = QHCA_ROCE_IP_OFFSET;
    pkt->ip_len = ip_len;
    pkt->udp_off = QHCA_ROCE_UDP_OFFSET;
    pkt->udp_len = udp_len;
    pkt->bth_off = QHCA_ROCE_BTH_OFFSET;

    memcpy(h->dst_mac, frame, 6);
    memcpy(h->src_mac, frame + 6, 6);
    h->src_ip = roce_get32(ip + ROCE_IP_SRC);
    h->dst_ip = roce_get32(ip + ROCE_IP_DST);
    h->tos = ip[ROCE_IP_TOS];
    h->ttl = ip[ROCE_IP_TTL];
    h->ip_id = roce_get16(ip + ROCE_IP_ID);
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
