/*
 * Unit tests of the RoCEv2 wire library (hw/qhca-roce.c), part of
 * test-qhca-roce (its main() and shared helpers: test-qhca-roce.c,
 * roce-test.h).
 *
 * The parser fed random and mutated frames (QHCA_TEST_SEED changes the
 * seed).
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <glib.h>
#include "qhca-roce.h"
#include "roce-test.h"

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
    uint8_t *copy = malloc(len ? len : 1);

    /* the shared port's steering reads no byte past the frame (ASan) */
    memcpy(copy, buf, len);
    qhca_roce_steer(copy, len, buf);
    free(copy);
    CHECK(err >= QHCA_ROCE_OK && err <= QHCA_ROCE_ERR_ICRC);
    if (err == QHCA_ROCE_OK) {
        check_pkt_sane(&pkt, len);
        (*n_ok)++;
    }
}

/* Random bytes, and random headers with valid checksums */
void test_fuzz_random(void)
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
void test_fuzz_mutate(void)
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
