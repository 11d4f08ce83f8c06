/*
 * Unit tests of the RoCEv2 wire library (hw/qhca-roce.c), part of
 * test-qhca-roce (its main() and shared helpers: test-qhca-roce.c,
 * roce-test.h).
 *
 * The opcode table, the UDP source port, build and parse round trips of
 * every opcode, a known frame byte for byte, and the requests the builder
 * refuses.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <glib.h>
#include "qhca-roce.h"
#include "roce-test.h"

void test_opcode_table(void)
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
        /* a request, a response or a CNP (neither) */
        CHECK_EQ(!!(op->flags & QHCA_ROCE_OPF_REQUEST) +
                 !!(op->flags & QHCA_ROCE_OPF_RESPONSE) +
                 !!(op->flags & QHCA_ROCE_OPF_CNP), 1);
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
    CHECK(qhca_roce_op_info(0x81) &&            /* CNP */
          (qhca_roce_op_info(0x81)->flags & QHCA_ROCE_OPF_CNP));
    CHECK(qhca_roce_op_info(0x80) == NULL);     /* the rest of its range */
    CHECK(qhca_roce_op_info(0x82) == NULL);
}

void test_udp_sport(void)
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

void test_roundtrip(void)
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
void test_build_known_frame(void)
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

void test_build_errors(void)
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
