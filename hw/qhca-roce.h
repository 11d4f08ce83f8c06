/*
 * qhca: RoCEv2 wire format (Ethernet II / IPv4 or IPv6 / UDP 4791 / BTH /
 * ICRC).
 *
 * Plain C with no QEMU dependency beyond "qemu/osdep.h" (standard headers),
 * so that it can be unit-tested on the host (tests/unit/).
 *
 * All multi-byte fields in QhcaRoceHdr are host-order numbers; on the wire
 * they are big-endian, except the ICRC, which is stored little-endian (as
 * Linux's Soft-RoCE and ConnectX NICs put it on the wire).
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_QHCA_ROCE_H
#define HW_QHCA_ROCE_H

/* Header lengths in bytes */
#define QHCA_ROCE_ETH_HLEN              14
#define QHCA_ROCE_IPV4_HLEN             20
#define QHCA_ROCE_IPV6_HLEN             40
#define QHCA_ROCE_UDP_HLEN              8
#define QHCA_ROCE_BTH_LEN               12
#define QHCA_ROCE_RETH_LEN              16
#define QHCA_ROCE_AETH_LEN              4
#define QHCA_ROCE_ATOMIC_ETH_LEN        28
#define QHCA_ROCE_ATOMIC_ACK_ETH_LEN    8
#define QHCA_ROCE_IMMDT_LEN             4
#define QHCA_ROCE_IETH_LEN              4
#define QHCA_ROCE_DETH_LEN              8
#define QHCA_ROCE_FETH_LEN              4
#define QHCA_ROCE_ICRC_LEN              4

/* Fixed offsets of the headers in a frame (no VLAN, no IPv4 options) */
#define QHCA_ROCE_IP_OFFSET     QHCA_ROCE_ETH_HLEN
#define QHCA_ROCE_UDP_OFFSET    (QHCA_ROCE_IP_OFFSET + QHCA_ROCE_IPV4_HLEN)
#define QHCA_ROCE_BTH_OFFSET    (QHCA_ROCE_UDP_OFFSET + QHCA_ROCE_UDP_HLEN)
/* The same over IPv6 (no extension headers) */
#define QHCA_ROCE_IP6_UDP_OFFSET (QHCA_ROCE_IP_OFFSET + QHCA_ROCE_IPV6_HLEN)
#define QHCA_ROCE_IP6_BTH_OFFSET (QHCA_ROCE_IP6_UDP_OFFSET + \
                                  QHCA_ROCE_UDP_HLEN)

/* Longest run of extension headers of any opcode (AtomicETH) */
#define QHCA_ROCE_EXT_MAX_LEN   28
/* Longest header part of a frame (IPv6): Ethernet..BTH, extension headers */
#define QHCA_ROCE_HDR_MAX_LEN   (QHCA_ROCE_IP6_BTH_OFFSET + \
                                 QHCA_ROCE_BTH_LEN + QHCA_ROCE_EXT_MAX_LEN)
/* Smallest well-formed frame (IPv4): Ethernet..BTH, ICRC */
#define QHCA_ROCE_MIN_FRAME_LEN (QHCA_ROCE_BTH_OFFSET + QHCA_ROCE_BTH_LEN + \
                                 QHCA_ROCE_ICRC_LEN)
/* Smallest well-formed frame over IPv6 */
#define QHCA_ROCE_IP6_MIN_FRAME_LEN (QHCA_ROCE_IP6_BTH_OFFSET + \
                                     QHCA_ROCE_BTH_LEN + QHCA_ROCE_ICRC_LEN)
/*
 * Largest IPv4 total length, hence largest frame; an IPv6 frame is held to
 * the same length (its payload length at most 65535 - 40)
 */
#define QHCA_ROCE_IP_MAX_LEN    65535
#define QHCA_ROCE_MAX_FRAME_LEN (QHCA_ROCE_ETH_HLEN + QHCA_ROCE_IP_MAX_LEN)

#define QHCA_ROCE_ETHERTYPE_IPV4    0x0800
#define QHCA_ROCE_ETHERTYPE_IPV6    0x86dd
#define QHCA_ROCE_FLOW_LABEL_MASK   0xfffff
#define QHCA_ROCE_IPPROTO_UDP       17
#define QHCA_ROCE_UDP_DPORT         4791
/* UDP source ports are 0xC000 | 14 bits of a flow hash (as Soft-RoCE) */
#define QHCA_ROCE_UDP_SPORT_BASE    0xc000
#define QHCA_ROCE_UDP_SPORT_MASK    0x3fff

#define QHCA_ROCE_DEFAULT_PKEY      0xffff
#define QHCA_ROCE_TVER              0
#define QHCA_ROCE_QPN_MASK          0xffffff
#define QHCA_ROCE_PSN_MASK          0xffffff
#define QHCA_ROCE_MSN_MASK          0xffffff
#define QHCA_ROCE_QP1               1           /* GSI QP (CM MADs) */
#define QHCA_ROCE_QP1_QKEY          0x80010000  /* Q_Key of QP1 */

/* AETH syndrome: bits 6..5 are the type, bits 4..0 its value */
#define QHCA_ROCE_AETH_TYPE_MASK    0xe0
#define QHCA_ROCE_AETH_VALUE_MASK   0x1f
#define QHCA_ROCE_AETH_ACK          0x00    /* value: credit count */
#define QHCA_ROCE_AETH_RNR_NAK      0x20    /* value: RNR timer */
#define QHCA_ROCE_AETH_NAK          0x60    /* value: a NAK code below */
#define QHCA_ROCE_AETH_CREDIT_INVALID   0x1f
#define QHCA_ROCE_NAK_PSN_SEQ_ERR       0x00
#define QHCA_ROCE_NAK_INVALID_REQ       0x01
#define QHCA_ROCE_NAK_REMOTE_ACCESS     0x02
#define QHCA_ROCE_NAK_REMOTE_OP         0x03
#define QHCA_ROCE_NAK_INVALID_RD_REQ    0x04

/* BTH opcodes this device sends and accepts (IBA 1.4 table 38) */
typedef enum QhcaRoceOpcode {
    QHCA_ROCE_OP_RC_SEND_FIRST                = 0x00,
    QHCA_ROCE_OP_RC_SEND_MIDDLE               = 0x01,
    QHCA_ROCE_OP_RC_SEND_LAST                 = 0x02,
    QHCA_ROCE_OP_RC_SEND_LAST_IMM             = 0x03,
    QHCA_ROCE_OP_RC_SEND_ONLY                 = 0x04,
    QHCA_ROCE_OP_RC_SEND_ONLY_IMM             = 0x05,
    QHCA_ROCE_OP_RC_RDMA_WRITE_FIRST          = 0x06,
    QHCA_ROCE_OP_RC_RDMA_WRITE_MIDDLE         = 0x07,
    QHCA_ROCE_OP_RC_RDMA_WRITE_LAST           = 0x08,
    QHCA_ROCE_OP_RC_RDMA_WRITE_LAST_IMM       = 0x09,
    QHCA_ROCE_OP_RC_RDMA_WRITE_ONLY           = 0x0a,
    QHCA_ROCE_OP_RC_RDMA_WRITE_ONLY_IMM       = 0x0b,
    QHCA_ROCE_OP_RC_RDMA_READ_REQUEST         = 0x0c,
    QHCA_ROCE_OP_RC_RDMA_READ_RESPONSE_FIRST  = 0x0d,
    QHCA_ROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE = 0x0e,
    QHCA_ROCE_OP_RC_RDMA_READ_RESPONSE_LAST   = 0x0f,
    QHCA_ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY   = 0x10,
    QHCA_ROCE_OP_RC_ACKNOWLEDGE               = 0x11,
    QHCA_ROCE_OP_RC_ATOMIC_ACKNOWLEDGE        = 0x12,
    QHCA_ROCE_OP_RC_COMPARE_SWAP              = 0x13,
    QHCA_ROCE_OP_RC_FETCH_ADD                 = 0x14,
    QHCA_ROCE_OP_RC_SEND_LAST_INV             = 0x16,
    QHCA_ROCE_OP_RC_SEND_ONLY_INV             = 0x17,
    /* IBA 1.5 (the memory placement extensions) */
    QHCA_ROCE_OP_RC_FLUSH                     = 0x1c,
    QHCA_ROCE_OP_RC_ATOMIC_WRITE              = 0x1d,
    QHCA_ROCE_OP_UC_SEND_FIRST                = 0x20,
    QHCA_ROCE_OP_UC_SEND_MIDDLE               = 0x21,
    QHCA_ROCE_OP_UC_SEND_LAST                 = 0x22,
    QHCA_ROCE_OP_UC_SEND_LAST_IMM             = 0x23,
    QHCA_ROCE_OP_UC_SEND_ONLY                 = 0x24,
    QHCA_ROCE_OP_UC_SEND_ONLY_IMM             = 0x25,
    QHCA_ROCE_OP_UC_RDMA_WRITE_FIRST          = 0x26,
    QHCA_ROCE_OP_UC_RDMA_WRITE_MIDDLE         = 0x27,
    QHCA_ROCE_OP_UC_RDMA_WRITE_LAST           = 0x28,
    QHCA_ROCE_OP_UC_RDMA_WRITE_LAST_IMM       = 0x29,
    QHCA_ROCE_OP_UC_RDMA_WRITE_ONLY           = 0x2a,
    QHCA_ROCE_OP_UC_RDMA_WRITE_ONLY_IMM       = 0x2b,
    QHCA_ROCE_OP_UD_SEND_ONLY                 = 0x64,
    QHCA_ROCE_OP_UD_SEND_ONLY_IMM             = 0x65,
    /* RoCEv2 (IBA annex A17): congestion notification, 16 reserved bytes */
    QHCA_ROCE_OP_CNP                          = 0x81,
} QhcaRoceOpcode;

#define QHCA_ROCE_CNP_LEN       16

/* The ECN field: the low two bits of the IPv4 TOS or IPv6 traffic class */
#define QHCA_ROCE_ECN_MASK      0x03
#define QHCA_ROCE_ECN_ECT0      0x02
#define QHCA_ROCE_ECN_CE        0x03

/* Extension headers; this is also their order after the BTH */
typedef enum QhcaRoceExt {
    QHCA_ROCE_EXT_DETH,
    QHCA_ROCE_EXT_FETH,
    QHCA_ROCE_EXT_RETH,
    QHCA_ROCE_EXT_ATOMIC_ETH,
    QHCA_ROCE_EXT_AETH,
    QHCA_ROCE_EXT_ATOMIC_ACK_ETH,
    QHCA_ROCE_EXT_IMMDT,
    QHCA_ROCE_EXT_IETH,
    QHCA_ROCE_EXT_COUNT
} QhcaRoceExt;

/* The most extension headers one opcode carries */
#define QHCA_ROCE_EXT_PER_OP_MAX    2

/* QhcaRoceOpInfo.flags */
#define QHCA_ROCE_OPF_PAYLOAD   (1u << 0)   /* may carry a payload */
#define QHCA_ROCE_OPF_REQUEST   (1u << 1)   /* requester -> responder */
#define QHCA_ROCE_OPF_RESPONSE  (1u << 2)   /* responder -> requester */
#define QHCA_ROCE_OPF_FIRST     (1u << 3)   /* first (or only) of a message */
#define QHCA_ROCE_OPF_LAST      (1u << 4)   /* last (or only) of a message */
#define QHCA_ROCE_OPF_SEND      (1u << 5)
#define QHCA_ROCE_OPF_WRITE     (1u << 6)
#define QHCA_ROCE_OPF_READ      (1u << 7)
#define QHCA_ROCE_OPF_ATOMIC    (1u << 8)
#define QHCA_ROCE_OPF_ACK       (1u << 9)   /* carries an AETH */
#define QHCA_ROCE_OPF_IMM       (1u << 10)  /* carries ImmDt */
#define QHCA_ROCE_OPF_INV       (1u << 11)  /* carries IETH */
#define QHCA_ROCE_OPF_UD        (1u << 12)  /* UD transport (DETH) */
#define QHCA_ROCE_OPF_UC        (1u << 13)  /* UC transport */
#define QHCA_ROCE_OPF_FLUSH     (1u << 14)  /* RDMA FLUSH (FETH + RETH) */
#define QHCA_ROCE_OPF_ATOMIC_WRITE (1u << 15) /* RDMA ATOMIC WRITE */
#define QHCA_ROCE_OPF_CNP       (1u << 16)  /* congestion notification */
/*
 * Requests answered by a READ response: READ itself, and FLUSH and ATOMIC
 * WRITE by one RDMA READ RESPONSE ONLY without payload (as Soft-RoCE
 * answers them); each takes a responder resource
 */
#define QHCA_ROCE_OPF_READ_ANSWERED \
    (QHCA_ROCE_OPF_READ | QHCA_ROCE_OPF_FLUSH | QHCA_ROCE_OPF_ATOMIC_WRITE)

/*
 * A UC request opcode is the RC opcode of the same SEND or RDMA WRITE
 * packet plus this (IBA table 38: RC 0x00-0x0b, UC 0x20-0x2b)
 */
#define QHCA_ROCE_OP_UC_BASE    0x20

typedef struct QhcaRoceOpInfo {
    const char *name;           /* e.g. "RC_SEND_FIRST" */
    uint32_t flags;             /* QHCA_ROCE_OPF_* */
    uint8_t ext_len;            /* total length of its extension headers */
    uint8_t n_ext;              /* number of extension headers */
    uint8_t ext[QHCA_ROCE_EXT_PER_OP_MAX]; /* QhcaRoceExt, in wire order */
} QhcaRoceOpInfo;

/*
 * The fields of one frame, host order.  Only the extension headers that
 * the opcode carries are written by the builder or filled by the parser.
 */
typedef struct QhcaRoceHdr {
    /* Ethernet II */
    uint8_t dst_mac[6];
    uint8_t src_mac[6];
    /* IPv4: addresses as numbers (10.0.0.1 is 0x0a000001) */
    uint32_t src_ip;
    uint32_t dst_ip;
    uint8_t tos;                /* from the GRH traffic class */
    uint8_t ttl;                /* from the GRH hop limit */
    uint16_t ip_id;
    /*
     * IPv6 instead (Ethertype 0x86DD): the addresses as 16 bytes, network
     * order; tos and ttl are its traffic class and hop limit, ip_id is not
     * used, src_ip and dst_ip are not read or filled in
     */
    bool ipv6;
    uint8_t src_ip6[16];
    uint8_t dst_ip6[16];
    uint32_t flow_label;        /* IPv6 only, 20 bits */
    /* UDP: the destination port is always QHCA_ROCE_UDP_DPORT */
    uint16_t src_port;
    /* BTH */
    uint8_t opcode;
    bool se;                    /* solicited event */
    bool mig;                   /* MigReq */
    uint8_t pad;                /* parser only: the builder derives it */
    uint8_t tver;               /* parser only: the builder writes 0 */
    uint16_t pkey;
    bool fecn;
    bool becn;
    uint32_t dest_qp;           /* 24 bits */
    bool ack_req;
    uint32_t psn;               /* 24 bits */
    /* Extension headers */
    struct {
        uint64_t va;
        uint32_t rkey;
        uint32_t dma_len;
    } reth;
    struct {
        uint8_t syndrome;
        uint32_t msn;           /* 24 bits */
    } aeth;
    struct {
        uint64_t va;
        uint32_t rkey;
        uint64_t swap_add;      /* swap (CMP_SWAP) or add (FETCH_ADD) data */
        uint64_t compare;
    } atomic;
    uint64_t atomic_ack_orig;   /* AtomicAckETH: original remote data */
    /*
     * ImmDt: the 4 wire bytes b0..b3 as the number b0 << 24 | ... | b3, so
     * a verbs __be32 imm_data corresponds to be32_to_cpu(imm_data).
     */
    uint32_t imm;
    uint32_t ieth_rkey;         /* IETH: R_Key to invalidate */
    /*
     * FETH (RDMA FLUSH): placement type in bits 3:0, selectivity level in
     * bits 5:4, the rest reserved
     */
    uint32_t feth;
    struct {
        uint32_t qkey;
        uint32_t src_qp;        /* 24 bits */
    } deth;
} QhcaRoceHdr;

/* What the parser found: the fields, and where every part lies */
typedef struct QhcaRocePkt {
    QhcaRoceHdr hdr;
    const QhcaRoceOpInfo *op;
    /* Bytes of the frame in use: Ethernet header + IP datagram */
    uint32_t frame_len;
    uint32_t ip_off;
    uint32_t ip_len;            /* IPv4 total length; IPv6: 40 + payload */
    uint32_t udp_off;
    uint32_t udp_len;           /* UDP length field */
    uint16_t udp_csum;          /* 0 if the sender sent none */
    uint32_t bth_off;
    /* Offset of each extension header, 0 if the opcode has none */
    uint32_t ext_off[QHCA_ROCE_EXT_COUNT];
    uint32_t payload_off;
    uint32_t payload_len;       /* without the pad bytes */
    uint32_t pad;               /* pad bytes after the payload (0..3) */
    uint32_t icrc_off;
    uint32_t icrc;              /* the ICRC as received (and checked) */
} QhcaRocePkt;

typedef enum QhcaRoceErr {
    QHCA_ROCE_OK = 0,
    /* Parser */
    QHCA_ROCE_ERR_TOO_SHORT,        /* frame shorter than Eth+IP+UDP */
    QHCA_ROCE_ERR_NOT_IPV4,         /* Ethertype is not 0x0800 or 0x86DD */
    QHCA_ROCE_ERR_IP_VERSION,       /* IP version is not the Ethertype's */
    QHCA_ROCE_ERR_IP_HDR_LEN,       /* IHL is not 5 (options unsupported) */
    QHCA_ROCE_ERR_IP_TOTAL_LEN,     /* IP length too small or too big */
    QHCA_ROCE_ERR_IP_FRAGMENT,      /* MF set or fragment offset != 0 */
    QHCA_ROCE_ERR_IP_CSUM,          /* bad IPv4 header checksum */
    QHCA_ROCE_ERR_NOT_UDP,          /* protocol/next header is not UDP */
    QHCA_ROCE_ERR_NOT_ROCE_PORT,    /* UDP destination port is not 4791 */
    QHCA_ROCE_ERR_UDP_LEN,          /* UDP length != IP payload length */
    QHCA_ROCE_ERR_UDP_CSUM,         /* non-zero and wrong UDP checksum */
    QHCA_ROCE_ERR_SHORT_TRANSPORT,  /* UDP payload < BTH + ext + ICRC */
    QHCA_ROCE_ERR_BAD_OPCODE,       /* unknown or unsupported BTH opcode */
    QHCA_ROCE_ERR_TVER,             /* BTH TVer is not 0 */
    QHCA_ROCE_ERR_PKEY,             /* P_Key does not match 0xffff */
    QHCA_ROCE_ERR_PAD,              /* pad count too big, or misaligned */
    QHCA_ROCE_ERR_PAYLOAD,          /* payload on an opcode that has none */
    /*
     * IPv6 source or destination: ::, ::1, multicast (a destination: but
     * for UD) or IPv4-mapped
     */
    QHCA_ROCE_ERR_IP_ADDR,
    QHCA_ROCE_ERR_ICRC,             /* bad ICRC (the parser's last check) */
    /* Builder */
    QHCA_ROCE_ERR_FIELD_RANGE,      /* 24-bit field or flow label range */
    QHCA_ROCE_ERR_TOO_LONG,         /* the frame would exceed 64 KiB IP */
    QHCA_ROCE_ERR_BUF_TOO_SMALL,    /* the caller's buffer is too small */
    QHCA_ROCE_ERR_COUNT
} QhcaRoceErr;

/* The opcode's properties, or NULL if the device does not support it */
const QhcaRoceOpInfo *qhca_roce_op_info(uint8_t opcode);

/* A short name for an error code ("ok", "bad ICRC", ...) */
const char *qhca_roce_strerror(QhcaRoceErr err);

/* UDP source port for a flow: 0xC000 | (flow_hash & 0x3FFF) */
uint16_t qhca_roce_udp_sport(uint32_t flow_hash);

/* Soft-RoCE's flow hash of a QP number: hash_32(qpn, 14) */
uint32_t qhca_roce_qpn_hash(uint32_t qpn);

/*
 * CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320) without the
 * initial and final inversion: crc = ~qhca_roce_crc32_update(~0, buf, len)
 * is the usual CRC-32 of buf (zlib's crc32()).
 */
uint32_t qhca_roce_crc32_update(uint32_t crc, const void *buf, size_t len);
/* The same, eight bytes at a time from tables, whatever the host has */
uint32_t qhca_roce_crc32_update_table(uint32_t crc, const void *buf,
                                      size_t len);
/* qhca_roce_crc32_update() uses carry-less multiplication (x86 PCLMULQDQ) */
bool qhca_roce_crc32_fast(void);

/* How qhca_roce_crc32_update() computes, narrowest first */
enum {
    QHCA_ROCE_CRC32_TABLE,          /* the tables */
    QHCA_ROCE_CRC32_CLMUL,          /* PCLMULQDQ, 16-byte lanes */
    QHCA_ROCE_CRC32_CLMUL_AVX2,     /* VPCLMULQDQ, 32-byte registers */
    QHCA_ROCE_CRC32_CLMUL_AVX512,   /* VPCLMULQDQ, 64-byte registers */
    QHCA_ROCE_CRC32_LEVELS
};
/* The widest the host has whose start-up check agreed with the tables */
int qhca_roce_crc32_level(void);
/*
 * For tests and benches: use at most @level (never more than the host
 * has); returns the level now in use.  Not thread-safe: call it before
 * any other thread computes a CRC.
 */
int qhca_roce_crc32_set_level(int level);

/* The RFC 1071 Internet checksum of buf, ready to store big-endian */
uint16_t qhca_roce_inet_csum(const void *buf, size_t len);
/*
 * Finish a checksum a sender left to the NIC (virtio-net NEEDS_CSUM): the
 * ones' complement sum from @start to the end of the len-byte frame, the
 * partial sum already at @start + @off included, stored there (0 sent as
 * 0xffff, as UDP wants).  False, and the frame untouched, when the two
 * bytes at @start + @off are not inside the frame.
 */
bool qhca_roce_finish_csum(uint8_t *frame, size_t len, size_t start,
                           size_t off);

/*
 * The ICRC of a frame whose headers are at the fixed offsets above (no
 * options or extension headers; IPv4 or IPv6 by its Ethertype): frame_len
 * ends after the ICRC; the ICRC field is not read.  The value is stored in
 * the frame little-endian.  Requires frame_len >= QHCA_ROCE_MIN_FRAME_LEN,
 * over IPv6 >= QHCA_ROCE_IP6_MIN_FRAME_LEN.
 */
uint32_t qhca_roce_icrc(const uint8_t *frame, size_t frame_len);

/*
 * Length of the IPv4 frame carrying payload_len bytes with this opcode, or
 * 0 if the opcode is unsupported, carries no payload but payload_len != 0,
 * or the frame would be longer than QHCA_ROCE_MAX_FRAME_LEN.
 */
size_t qhca_roce_frame_len(uint8_t opcode, size_t payload_len);
/* The same for the frame of h (IPv4 or IPv6 as h->ipv6 says) */
size_t qhca_roce_frame_len_hdr(const QhcaRoceHdr *h, size_t payload_len);

/* An IPv4 address as a GID is IPv4-mapped IPv6, ::ffff:a.b.c.d */
bool qhca_roce_gid_is_ipv4(const uint8_t *gid);
/*
 * Whether an IPv6 address may be a RoCEv2 endpoint: not unspecified (::),
 * loopback (::1), multicast (ff00::/8) or IPv4-mapped
 */
bool qhca_roce_ip6_unicast(const uint8_t *addr);
/*
 * Set h's addresses from a source and a destination GID: IPv4 if both are
 * IPv4-mapped (not multicast), IPv6 if both are IPv6 endpoints
 * (qhca_roce_ip6_unicast()); false (h unchanged) if the two differ or one
 * is not an endpoint
 */
bool qhca_roce_set_gids(QhcaRoceHdr *h, const uint8_t *sgid,
                        const uint8_t *dgid);
/*
 * Whether a GID is a multicast group: IPv6 ff00::/8 or IPv4-mapped
 * 224.0.0.0/4
 */
bool qhca_roce_gid_is_mcast(const uint8_t *gid);
/*
 * A GID a frame may come from: a unicast address an interface can have
 * (IPv4-mapped: not 0/8, 127/8, 224/4 or 240/4; IPv6: not ::, ::1, ff00::/8)
 */
bool qhca_roce_gid_is_unicast(const uint8_t *gid);
/* The Ethernet multicast MAC of a multicast GID (RFC 1112, RFC 2464) */
void qhca_roce_mcast_mac(const uint8_t *gid, uint8_t *mac);
/*
 * qhca_roce_set_gids() for a UD destination, which may also be a multicast
 * group of the source GID's IP version
 */
bool qhca_roce_set_gids_ud(QhcaRoceHdr *h, const uint8_t *sgid,
                           const uint8_t *dgid);
/* h's source and destination addresses as GIDs (IPv4-mapped for IPv4) */
void qhca_roce_src_gid(const QhcaRoceHdr *h, uint8_t *gid);
void qhca_roce_dst_gid(const QhcaRoceHdr *h, uint8_t *gid);
/*
 * The destination address of an untrusted frame of len bytes as a GID, if
 * it is IPv4 or IPv6 and long enough to hold it (nothing else checked)
 */
bool qhca_roce_frame_dst_gid(const uint8_t *frame, size_t len,
                             uint8_t *gid);

/*
 * Steering on a port shared with the guest's NIC (-device qhca,nic=ID):
 * is this untrusted frame of len bytes RoCEv2 (UDP destination port 4791
 * directly over IPv4 or IPv6, not an IPv4 fragment) and addressed to mac
 * or to a multicast (or broadcast) MAC?  Reads no more than
 * QHCA_ROCE_STEER_LEN bytes, and never past len.  Frames it refuses (other
 * traffic, IPv4 fragments, IPv6 extension headers, VLAN tags) belong to
 * the NIC.
 */
#define QHCA_ROCE_STEER_LEN     (QHCA_ROCE_ETH_HLEN + 60 + QHCA_ROCE_UDP_HLEN)
bool qhca_roce_steer(const uint8_t *frame, size_t len, const uint8_t *mac);

/*
 * Write the Ethernet, IPv4 (checksummed) or IPv6, UDP (checksum 0 until
 * qhca_roce_finish()), BTH and extension headers of a frame carrying
 * payload_len bytes into buf.
 * Returns the payload offset, or a negative QhcaRoceErr.  buf must hold
 * the whole frame (qhca_roce_frame_len()).  Then put the payload at the
 * returned offset and call qhca_roce_finish().
 */
int qhca_roce_build_headers(uint8_t *buf, size_t size,
                            const QhcaRoceHdr *hdr, size_t payload_len);

/*
 * Zero the pad bytes and store the ICRC of a frame written by
 * qhca_roce_build_headers() whose payload is in place; over IPv6, then
 * the UDP checksum (IPv4 frames go without one).
 */
void qhca_roce_finish(uint8_t *frame, size_t frame_len);

/*
 * Build a whole frame: headers, payload (payload_len bytes, may be NULL if
 * payload_len is 0), pad and ICRC.  Returns the frame length, or a
 * negative QhcaRoceErr.
 */
int qhca_roce_build(uint8_t *buf, size_t size, const QhcaRoceHdr *hdr,
                    const void *payload, size_t payload_len);

/*
 * Parse and check an untrusted frame of len bytes (bytes after the IP
 * datagram, e.g. Ethernet padding, are ignored).  On QHCA_ROCE_OK pkt
 * is filled in; on error pkt's contents are unspecified.
 */
QhcaRoceErr qhca_roce_parse(const uint8_t *frame, size_t len,
                            QhcaRocePkt *pkt);

#endif /* HW_QHCA_ROCE_H */
