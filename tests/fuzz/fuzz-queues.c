/*
 * Operations of the qhca fuzz target (the input format: qhca-fuzz.c) on
 * work queues: send and receive WQEs, WQEs rewritten in flight, the QPs'
 * doorbells, the completions and QP states the seeds expect, and
 * connections: SEND, RECV, WQE_RAW, DB_QP, EXPECT_CQE, EXPECT_QP and
 * CONNECT.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "harness.h"
#include "qhca-fuzz.h"

void op_send(Fz *f)
{
    FzSend a;
    struct qhca_send_wqe w = { 0 };
    struct qhca_sge sges[3];
    uint8_t inl[QHCA_MAX_INLINE + 64];
    HxDev *d, *peer;
    HxQp *qp;
    uint32_t room, il;
    unsigned i;

    if (!take(f, &a, sizeof(a))) {
        return;
    }
    d = dev_sel(a.dev);
    qp = hx_drv_qp(d, a.qp);
    if (!qp || !d->drv.up) {
        return;
    }
    /* the remote memory and QP of a loopback connection are our own */
    peer = qp->loopback ? d : peer_of(d);
    w.opcode = a.opcode;
    w.flags = a.flags;
    w.wr_id = cpu_to_le64(le32_to_cpu(a.imm));
    stl_be_p(w.imm_data, le32_to_cpu(a.imm));
    fill_sges(d, a.sge, sges);
    switch (a.opcode) {
    case QHCA_WQE_REG_MR: {
        uint32_t key = (d->drv.frmr_key & ~QHCA_KEY_VARIANT_MASK) |
                       (le64_to_cpu(a.add) & QHCA_KEY_VARIANT_MASK);

        w.reg.iova = cpu_to_le64(FRMR_IOVA +
                                 ((le64_to_cpu(a.add) >> 32) & 0xffff));
        w.reg.length = cpu_to_le64(le32_to_cpu(a.remote));
        w.reg.pbl_addr = cpu_to_le64(frmr_pbl[d->idx]);
        w.reg.key = cpu_to_le32(key);
        w.reg.access = cpu_to_le32(le32_to_cpu(a.imm) & 0x1f);
        w.reg.num_pages = cpu_to_le32(a.nsge);
        w.reg.page_shift = 12 + (le64_to_cpu(a.swap) & 0x1f);
        d->drv.frmr_key = key;
        break;
    }
    case QHCA_WQE_LOCAL_INV:
        w.invalidate_rkey = cpu_to_le32(key_sel(d, a.rkey));
        break;
    case QHCA_WQE_BIND_MW: {
        /* window mw_key of this device, to its MR at remote, rights swap */
        uint32_t cur = mw_key[d->idx];
        uint32_t next = (cur & ~QHCA_KEY_VARIANT_MASK) |
                        (le32_to_cpu(a.imm) & QHCA_KEY_VARIANT_MASK);

        w.bind.addr = cpu_to_le64(key_iova(d, a.rkey) +
                                  le32_to_cpu(a.remote));
        w.bind.length = a.add;
        w.bind.mr_lkey = cpu_to_le32(key_sel(d, a.rkey));
        w.bind.mw_key = cpu_to_le32(cur);
        w.bind.new_key = cpu_to_le32(next);
        w.bind.access = cpu_to_le32(le64_to_cpu(a.swap) & 0x3f);
        if (cur) {
            mw_key[d->idx] = next;
        }
        break;
    }
    case QHCA_WQE_SEND_WITH_INV:
        w.invalidate_rkey = cpu_to_le32(key_sel(peer, a.rkey));
        break;
    default:
        if (qp->type == QHCA_QPT_RC || qp->type == QHCA_QPT_UC) {
            w.rdma.remote_addr = cpu_to_le64(key_iova(peer, a.rkey) +
                                             le32_to_cpu(a.remote));
            w.rdma.rkey = cpu_to_le32(key_sel(peer, a.rkey));
            w.rdma.compare_add = a.add;
            w.rdma.swap = a.swap;
            /* FLUSH: its FETH (placement type, selectivity level) */
            w.rdma.feth = cpu_to_le32(le64_to_cpu(a.swap) >> 32);
        } else {
            bool group = a.rkey == 3 && mcast_ahn[d->idx];

            w.ud.ahn = cpu_to_le32(a.rkey >= 4 ? a.rkey :
                                   a.rkey == 1 ? d->drv.ahn6 :
                                   a.rkey == 2 && av_ahn[d->idx] ?
                                   av_ahn[d->idx] :
                                   group ? mcast_ahn[d->idx] : d->drv.ahn);
            w.ud.remote_qpn = cpu_to_le32(group ? QHCA_MCAST_QPN :
                                          qp->peer_qpn ? qp->peer_qpn :
                                          peer->drv.qp[HX_QP_UD].qpn);
            w.ud.remote_qkey = a.remote ? a.remote : cpu_to_le32(HX_QKEY);
        }
        break;
    }
    if (a.flags & QHCA_WQE_INLINE) {
        room = (1u << qp->sq.stride_log) - QHCA_SEND_WQE_HDR_SIZE;
        il = le16_to_cpu(a.inline_len);
        for (i = 0; i < MIN(il, sizeof(inl)); i++) {
            inl[i] = i + a.imm;
        }
        hx_post_send(d, qp, &w, NULL, 0, inl, MIN(il, room), !a.nodb);
        if (il != MIN(il, room)) {
            /* a length beyond what the slot holds */
            uint64_t addr = hx_ring_addr(&qp->sq, qp->sq_pi - 1);
            uint32_t le = cpu_to_le32(il);

            hx_mem_write(d, addr + offsetof(struct qhca_send_wqe,
                                            inline_len), &le, 4);
        }
    } else {
        hx_post_send(d, qp, &w, sges, MIN(a.nsge, 3), NULL, 0, !a.nodb);
        if (a.nsge > 3) {
            uint64_t addr = hx_ring_addr(&qp->sq, qp->sq_pi - 1);

            hx_mem_write(d, addr + offsetof(struct qhca_send_wqe, num_sge),
                         &a.nsge, 1);
        }
    }
}

void op_recv(Fz *f)
{
    FzRecv a;
    struct qhca_sge sges[3];
    HxDev *d;
    HxQp *qp;

    if (!take(f, &a, sizeof(a))) {
        return;
    }
    d = dev_sel(a.dev);
    qp = hx_drv_qp(d, a.qp);
    if (!qp || !d->drv.up) {
        return;
    }
    fill_sges(d, a.sge, sges);
    hx_post_recv(d, qp, le32_to_cpu(a.wr_id), sges,
                 MIN(a.nsge, 3), !a.nodb);
}

static HxRing *qp_ring(HxDev *d, HxQp *qp, bool rq, uint16_t **pi)
{
    if (!rq) {
        *pi = &qp->sq_pi;
        return &qp->sq;
    }
    if (qp->srqn != QHCA_NO_SRQ) {
        *pi = &d->drv.srq_pi;
        return &d->drv.srq;
    }
    *pi = &qp->rq_pi;
    return &qp->rq;
}

void op_wqe_raw(Fz *f)
{
    FzWqeRaw a;
    const uint8_t *bytes;
    size_t len;
    HxDev *d;
    HxQp *qp;
    HxRing *r;
    uint16_t *pi;
    uint64_t addr;
    uint32_t stride;

    if (!take(f, &a, sizeof(a))) {
        return;
    }
    len = a.len;
    bytes = take_var(f, &len);
    d = dev_sel(a.dev);
    qp = hx_drv_qp(d, a.qp);
    if (!qp) {
        return;
    }
    r = qp_ring(d, qp, a.which & 1, &pi);
    addr = hx_ring_addr(r, *pi + a.slot);
    stride = 1u << r->stride_log;
    if (!addr || a.off >= stride) {
        return;
    }
    hx_mem_write(d, addr + a.off, bytes, MIN(len, stride - a.off));
}

void op_db_qp(Fz *f)
{
    FzDbQp a;
    HxDev *d;
    HxQp *qp;
    uint16_t *pi, val;
    bool rq;

    if (!take(f, &a, sizeof(a))) {
        return;
    }
    d = dev_sel(a.dev);
    qp = hx_drv_qp(d, a.qp);
    if (!qp) {
        return;
    }
    rq = a.which & 1;
    qp_ring(d, qp, rq, &pi);
    val = le16_to_cpu(a.val);
    switch (a.mode & 3) {
    case 0:
        val = *pi;
        break;
    case 1:
        val = *pi + (int16_t)val;
        break;
    case 2:
        break;
    default:
        *pi += val % 64;
        val = *pi;
        break;
    }
    if (rq) {
        hx_ring_rq(d, qp, val);
    } else {
        hx_ring_sq(d, qp, val);
    }
}

void op_expect_cqe(Fz *f)
{
    FzExpectCqe a;
    struct qhca_cqe c;
    HxDev *d;
    uint32_t qpn;

    if (!take(f, &a, sizeof(a))) {
        return;
    }
    d = dev_sel(a.dev);
    qpn = qpn_sel(d, a.qp);
    /* when nothing checks, a missing CQE is not worth a long wait */
    if (!hx_wait_cqe(d, qpn, le32_to_cpu(a.wr_id), &c,
                     (int64_t)(strict ? a.ms + 1 : MIN(a.ms + 1, 10)) * MS)) {
        strict_fail("no CQE for qpn %u wr_id 0x%x on device %c", qpn,
                    le32_to_cpu(a.wr_id), d->name);
        return;
    }
    if (a.status != 0xff && c.status != a.status) {
        strict_fail("CQE for qpn %u wr_id 0x%x on device %c: status %u, "
                    "expected %u", qpn, le32_to_cpu(a.wr_id), d->name,
                    c.status, a.status);
    }
}

void op_expect_qp(Fz *f)
{
    FzExpectQp a;
    struct qhca_qp_attr at;
    HxDev *d;
    uint32_t qpn;

    if (!take(f, &a, sizeof(a))) {
        return;
    }
    d = dev_sel(a.dev);
    qpn = qpn_sel(d, a.qp);
    if (hx_query_qp(d, qpn, &at) != QHCA_CMD_OK) {
        strict_fail("QUERY_QP %u on device %c failed", qpn, d->name);
    } else if (at.qp_state != a.state) {
        strict_fail("QP %u on device %c in state %u, expected %u", qpn,
                    d->name, at.qp_state, a.state);
    }
}

void op_connect(Fz *f)
{
    FzConnect a;
    HxConnOpts o = { 0 };
    unsigned q;

    if (!take(f, &a, sizeof(a))) {
        return;
    }
    if (a.qp & 8) {
        q = (a.qp & 1) ? HX_QP_UC_SRQ : HX_QP_UC;
    } else {
        q = (a.qp & 1) ? HX_QP_RC_SRQ : HX_QP_RC;
    }
    o.mtu = a.mtu;
    o.timeout = a.timeout;
    o.retry_cnt = a.retry;
    o.rnr_retry = a.rnr_retry;
    o.min_rnr_timer = a.min_rnr;
    o.max_rd_atomic = a.max_rd;
    o.access = a.access;
    o.sq_psn = le32_to_cpu(a.psn);
    if (a.qp & 16) {
        o.ipv6 = true;
        o.tclass = o.sq_psn >> 24;
        o.flow_label = o.sq_psn * 0x9e3779b1u >> 12;
    }
    if (a.qp & 2) {
        if (a.qp & 8) {
            hx_connect_uc_loopback(dev_sel(a.qp >> 2), &o);
        } else {
            hx_connect_loopback(dev_sel(a.qp >> 2), &o);
        }
        return;
    }
    hx_connect_rc(&pair.dev[0], &pair.dev[0].drv.qp[q], &pair.dev[1],
                  &pair.dev[1].drv.qp[q], &o);
}
