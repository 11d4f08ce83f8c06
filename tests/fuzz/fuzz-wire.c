/*
 * Operations of the qhca fuzz target (the input format: qhca-fuzz.c) on
 * the wire: raw frames, well-formed RoCEv2 frames over IPv4 and IPv6 and
 * to multicast groups, and frames in flight changed: FRAME_RAW, FRAME,
 * FRAME6, WIRE_MUTATE, WIRE_MODE and MFRAME.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "harness.h"
#include "qhca-roce.h"
#include "qhca-fuzz.h"

void op_frame_raw(Fz *f)
{
    FzFrameRaw a;
    uint8_t buf[12288];
    const uint8_t *bytes;
    size_t len;
    HxDev *to;

    if (!take(f, &a, sizeof(a))) {
        return;
    }
    len = MIN(le16_to_cpu(a.len), sizeof(buf));
    bytes = take_var(f, &len);
    memcpy(buf, bytes, len);
    to = dev_sel(a.to);
    if ((a.to & 2) && len >= 12) {
        memcpy(buf, to->mac, 6);
        memcpy(buf + 6, peer_of(to)->mac, 6);
    }
    hx_wire_inject(&pair, to->idx, buf, len);
}

static uint8_t frame_payload[8192];
static uint8_t frame_buf[QHCA_ROCE_HDR_MAX_LEN + sizeof(frame_payload) + 8];

/*
 * The headers of FRAME's frame to device to & 1 from its peer, and its
 * payload in frame_payload: the payload's length
 */
static uint32_t frame_hdr(const FzFrame *fa, QhcaRoceHdr *hp)
{
    FzFrame a = *fa;
    QhcaRoceHdr h = { 0 };
    uint8_t *payload = frame_payload;
    HxDev *to, *from;
    HxQp *qp;
    uint32_t plen, i, key;
    uint64_t va;

    to = dev_sel(a.to);
    from = peer_of(to);
    qp = a.qp < HX_MAX_QPS ? hx_drv_qp(to, a.qp) : NULL;
    memcpy(h.dst_mac, to->mac, 6);
    memcpy(h.src_mac, from->mac, 6);
    h.src_ip = (a.flags & 4) ? 0x06060606 : from->ip;
    h.dst_ip = to->ip;
    h.ttl = 64;
    h.src_port = 0xc000 | (a.psn & 0x3fff);
    h.opcode = a.opcode;
    h.se = a.flags & 1;
    h.ack_req = a.flags & 2;
    h.pkey = (a.flags & 32) ? 0x1234 : QHCA_ROCE_DEFAULT_PKEY;
    h.tos = (a.flags & 64) ? QHCA_ROCE_ECN_CE : 0;
    h.dest_qp = qpn_sel(to, a.qp) & QHCA_ROCE_QPN_MASK;
    switch (a.psn_mode % 3) {
    case 0:
        h.psn = le32_to_cpu(a.psn);
        break;
    case 1:
        h.psn = pair.last_psn[from->idx][h.dest_qp & 1023] + 1 +
                le32_to_cpu(a.psn);
        break;
    default:
        h.psn = pair.last_psn[to->idx][(qp ? qp->peer_qpn : 0) & 1023] +
                le32_to_cpu(a.psn);
        break;
    }
    h.psn &= QHCA_ROCE_PSN_MASK;
    key = (a.rkey & 3) == 3 ? (uint32_t)a.rkey << QHCA_KEY_INDEX_SHIFT :
          key_sel(to, a.rkey);
    va = le64_to_cpu(a.va);
    if (!(a.flags & 16)) {
        va += key_iova(to, a.rkey);
    }
    h.reth.va = va;
    h.reth.rkey = key;
    h.reth.dma_len = le32_to_cpu(a.dma_len);
    h.aeth.syndrome = a.syndrome;
    h.aeth.msn = le32_to_cpu(a.msn) & QHCA_ROCE_MSN_MASK;
    h.atomic.va = va;
    h.atomic.rkey = key;
    h.atomic.swap_add = le64_to_cpu(a.swap_add);
    h.atomic.compare = le64_to_cpu(a.compare);
    h.atomic_ack_orig = le64_to_cpu(a.swap_add);
    h.imm = le32_to_cpu(a.imm);
    h.ieth_rkey = key;
    h.feth = le64_to_cpu(a.compare);    /* FLUSH */
    h.deth.qkey = a.qkey ? le32_to_cpu(a.qkey) : HX_QKEY;
    h.deth.src_qp = (a.src_qp ? le32_to_cpu(a.src_qp) :
                     from->drv.qp[HX_QP_UD].qpn) & QHCA_ROCE_QPN_MASK;
    plen = MIN(le16_to_cpu(a.plen), sizeof(frame_payload));
    for (i = 0; i < plen; i++) {
        payload[i] = a.pattern + i;
    }
    *hp = h;
    return plen;
}

/* Build FRAME's frame @h with @plen bytes of frame_payload and inject it */
static void frame_send(const FzFrame *a, const QhcaRoceHdr *h, uint32_t plen)
{
    int len = qhca_roce_build(frame_buf, sizeof(frame_buf), h, frame_payload,
                              plen);

    if (len <= 0) {
        return;
    }
    if (a->flags & 8) {
        frame_buf[len - 1] ^= 0x5a;          /* a bad ICRC */
    }
    hx_wire_inject(&pair, dev_sel(a->to)->idx, frame_buf, len);
}

void op_frame(Fz *f)
{
    FzFrame a;
    QhcaRoceHdr h;
    uint32_t plen;

    if (!take(f, &a, sizeof(a))) {
        return;
    }
    plen = frame_hdr(&a, &h);
    frame_send(&a, &h, plen);
}

void op_frame6(Fz *f)
{
    FzFrame a;
    FzIp6 b;
    QhcaRoceHdr h;
    uint8_t *ip = frame_buf + QHCA_ROCE_IP_OFFSET;
    HxDev *to;
    uint32_t plen;
    uint16_t val;
    int len;

    if (!take(f, &a, sizeof(a)) || !take(f, &b, sizeof(b))) {
        return;
    }
    to = dev_sel(a.to);
    val = le16_to_cpu(b.val);
    plen = frame_hdr(&a, &h);
    h.ipv6 = true;
    h.tos = b.tclass;
    h.ttl = b.mangle % 8 == 5 ? val : 64;
    h.flow_label = le32_to_cpu(b.flow) & QHCA_ROCE_FLOW_LABEL_MASK;
    memcpy(h.src_ip6, peer_of(to)->ip6, 16);
    memcpy(h.dst_ip6, to->ip6, 16);
    len = qhca_roce_build(frame_buf, sizeof(frame_buf), &h, frame_payload,
                          plen);
    if (len <= 0) {
        return;
    }
    /* the addresses, next header and version, then ICRC and checksum */
    addr6_sel(b.src, peer_of(to), to, val, ip + 8);
    addr6_sel(b.dst, to, peer_of(to), val, ip + 24);
    if (a.flags & 4) {
        ip[8] ^= 0x06;
    }
    switch (b.mangle % 8) {
    case 1:
        ip[6] = val;
        break;
    case 7:
        ip[0] = (ip[0] & 0x0f) | (val & 0xf0);
        break;
    }
    qhca_roce_finish(frame_buf, len);
    switch (b.mangle % 8) {
    case 2:
        stw_be_p(ip + 4, val);
        break;
    case 3:
        stw_be_p(ip + 40 + 6, val);
        break;
    case 4:
        ip[40 + 7] ^= 1;
        break;
    case 6:
        len = MIN(len, val);
        break;
    }
    if ((a.flags & 8) && len > 0) {
        frame_buf[len - 1] ^= 0x5a;
    }
    hx_wire_inject(&pair, to->idx, frame_buf, len);
}

void op_wire_mutate(Fz *f)
{
    FzWireMutate a;
    unsigned n = g_queue_get_length(&pair.wire);
    HxFrame *fr, *copy;
    GList *l;
    uint16_t pos;

    if (!take(f, &a, sizeof(a)) || !n) {
        return;
    }
    l = g_queue_peek_nth_link(&pair.wire, a.idx % n);
    fr = l->data;
    pos = le16_to_cpu(a.pos);
    switch (a.action % 6) {
    case 0:
        g_queue_delete_link(&pair.wire, l);
        g_free(fr);
        break;
    case 1:
        copy = g_memdup2(fr, sizeof(*fr) + fr->len);
        g_queue_insert_after(&pair.wire, l, copy);
        break;
    case 2:
        if (fr->len) {
            fr->data[pos % fr->len] ^= a.val | 1;
        }
        break;
    case 3:
        fr->len = MIN(fr->len, pos);
        break;
    case 4:
        g_queue_unlink(&pair.wire, l);
        g_queue_push_tail_link(&pair.wire, l);
        break;
    default:
        while ((fr = g_queue_pop_head(&pair.wire))) {
            g_free(fr);
        }
        break;
    }
}

void op_wire_mode(Fz *f)
{
    FzWireMode a;

    if (take(f, &a, sizeof(a))) {
        hx_wire_set_mode(&pair, a.from & 1, a.mode % HX_WIRE_MODE_COUNT,
                         a.every);
    }
}

/*
 * MFRAME: FRAME's frame (an FzFrame), then an FzMframe: sent to group
 * group_gid(group, val) of the target (over IPv6 unless the group is
 * IPv4-mapped), to the Ethernet address mac % 4: 0 the group's multicast
 * MAC, 1 the target's own MAC, 2 the MAC of group val + 1, 3 broadcast;
 * with BTH DestQP dqp % 4: 0 0xFFFFFF, 1 FRAME's qp, 2 0xFFFFFE, 3
 * 0x7FFFFF; from src % 4: 0 the peer's address, 1 a multicast one
 * (239.1.1.1 or ff02::1), 2 the target's own, 3 the peer's IPv4 address
 * IPv4-mapped in an IPv6 frame (the peer's IPv6 one in an IPv4 frame is
 * not possible: then the peer's); right ICRC unless FRAME's flags & 8
 */
void op_mframe(Fz *f)
{
    FzFrame a;
    FzMframe b;
    QhcaRoceHdr h;
    HxDev *to, *from;
    uint8_t gid[16];
    uint32_t plen, val;

    if (!take(f, &a, sizeof(a)) || !take(f, &b, sizeof(b))) {
        return;
    }
    to = dev_sel(a.to);
    from = peer_of(to);
    val = le32_to_cpu(b.val);
    plen = frame_hdr(&a, &h);
    h.ipv6 = !group_gid(b.group, to, val, gid);
    if (h.ipv6) {
        memcpy(h.dst_ip6, gid, 16);
        memcpy(h.src_ip6, from->ip6, 16);
        switch (b.src % 4) {
        case 1:
            memset(h.src_ip6, 0, 16);
            h.src_ip6[0] = 0xff;
            h.src_ip6[1] = 0x02;
            h.src_ip6[15] = 1;
            break;
        case 2:
            memcpy(h.src_ip6, to->ip6, 16);
            break;
        case 3:
            hx_gid_ipv4(h.src_ip6, from->ip);
            break;
        }
    } else {
        h.dst_ip = ldl_be_p(&gid[12]);
        h.src_ip = b.src % 4 == 1 ? 0xef010101 :
                   b.src % 4 == 2 ? to->ip : h.src_ip;
    }
    switch (b.mac % 4) {
    case 0:
        qhca_roce_mcast_mac(gid, h.dst_mac);
        break;
    case 1:
        memcpy(h.dst_mac, to->mac, 6);
        break;
    case 2:
        group_gid(b.group, to, val + 1, gid);
        qhca_roce_mcast_mac(gid, h.dst_mac);
        break;
    default:
        memset(h.dst_mac, 0xff, 6);
        break;
    }
    switch (b.dqp % 4) {
    case 0:
        h.dest_qp = QHCA_MCAST_QPN;
        break;
    case 2:
        h.dest_qp = QHCA_MCAST_QPN - 1;
        break;
    case 3:
        h.dest_qp = 0x7fffff;
        break;
    }
    frame_send(&a, &h, plen);
}
