/*
 * Unit tests of the RoCEv2 wire library (hw/qhca-roce.c), part of
 * test-qhca-roce (its main() and shared helpers: test-qhca-roce.c,
 * roce-test.h).
 *
 * Every refusal of the parser, trailers, truncations, and every bit of
 * valid frames flipped.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <glib.h>
#include "qhca-roce.h"
#include "roce-test.h"

void test_parse_errors(void)
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
                                           0x40, 0x60, 0x63, 0x66, 0x80,
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

void test_parse_trailer(void)
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
void test_parse_truncated(void)
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
void test_parse_bit_flips(void)
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
