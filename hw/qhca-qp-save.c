/*
 * qhca QP engine: its state in the device's saved state (qhca-save.c,
 * docs/hardware.md "Saved state").  What a QP's transport holds is saved;
 * what can be recomputed is not: the frames in flight (sent again from the
 * WQEs in guest memory, as after a loss), the list of live QPs, the memory
 * charged, the READ/atomic count and which responder resources are queued.
 *
 * Loading treats the stream as hostile: every index, count, length and PSN
 * is checked against what the engine itself could have made, so that no
 * loaded value takes the engine outside the bounds it keeps for guest
 * input.  The transport may still find the state odd (a PSN the peer does
 * not expect): that is a protocol matter, handled as on the wire.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qhca-qp-int.h"

#define PSN_OK(v)       ((v) <= QHCA_ROCE_PSN_MASK)
/* The most response packets of one READ: the longest message at 256 B */
#define MAX_READ_NPKT   (QHCA_MAX_MSG_BYTES / 256)
/*
 * The congestion window, in packets, is below the QP's window: at most
 * QHCA_WINDOW_LIMIT bytes at the smallest MTU, 256 bytes
 */
#define MAX_CWND        (QHCA_WINDOW_LIMIT / 256)
/* Round trips beyond a minute are not measured ones */
#define MAX_RTT_NS      (60 * 1000000000LL)
/*
 * Times taken from the virtual clock (a timeout period's start, a round
 * trip's): from 0, and far from overflowing when a timeout or the clock
 * is added or subtracted (2^62 ns are 146 years)
 */
#define CLOCK_OK(t)     ((t) >= 0 && (t) < (1LL << 62))

static void save_sge(QhcaStreamW *w, const struct qhca_sge *s)
{
    qhca_w_u64(w, le64_to_cpu(s->addr));
    qhca_w_u32(w, le32_to_cpu(s->length));
    qhca_w_u32(w, le32_to_cpu(s->lkey));
}

static void save_wqe(QhcaStreamW *w, const QhcaWqeState *st)
{
    qhca_w_u8(w, st->state);
    qhca_w_u8(w, st->status);
    qhca_w_u8(w, st->opcode);
    qhca_w_u8(w, st->signaled | st->sent_once << 1 | st->rd_counted << 2 |
                 st->resp_done << 3 | st->reread << 4);
    qhca_w_u32(w, st->first_psn);
    qhca_w_u32(w, st->last_psn);
    qhca_w_u32(w, st->next_resp_psn);
    qhca_w_u32(w, st->byte_len);
    qhca_w_u32(w, st->pieces_sent);
    qhca_w_u64(w, st->fingerprint);
}

static void save_res(QhcaStreamW *w, const QhcaRdRes *r)
{
    qhca_w_u8(w, r->valid | r->atomic << 1 | r->replay << 2);
    qhca_w_u32(w, r->psn);
    qhca_w_u64(w, r->orig);
    qhca_w_u32(w, r->rkey);
    qhca_w_u64(w, r->va);
    qhca_w_u32(w, r->len);
    qhca_w_u32(w, r->next);
    qhca_w_u32(w, r->npkt);
}

void qhca_qp_engine_save(const QhcaQp *qp, QhcaStreamW *w)
{
    const QhcaQpEngine *e = qp->eng;
    uint16_t i;
    unsigned k;

    /* requester and completer */
    qhca_w_u16(w, e->sq_pi);
    qhca_w_u16(w, e->req_idx);
    qhca_w_u64(w, e->req_off);
    qhca_w_u32(w, e->next_psn);
    qhca_w_u32(w, e->acked);
    qhca_w_u32(w, e->tx_end);
    qhca_w_u32(w, e->pkts_since_ackreq);
    qhca_w_u64(w, e->deadline);
    qhca_w_u64(w, e->period_ns);
    qhca_w_u8(w, e->probe_shift);
    qhca_w_u8(w, e->rnr_wait | e->drained_notified << 1 |
                 e->nak_rewound << 2 | e->probing << 3);
    qhca_w_u8(w, e->retry_left);
    qhca_w_u8(w, e->rnr_left);
    qhca_w_u32(w, e->nak_psn);
    qhca_w_u32(w, e->window_bytes);
    /* the WQEs started and not yet consumed, from sq.ci to sq_pi */
    for (i = qp->sq.ci; i != e->sq_pi; i++) {
        save_wqe(w, &e->wqe[i & sq_mask(qp)]);
    }

    /* responder */
    qhca_w_u16(w, e->rq_pi);
    qhca_w_u32(w, e->epsn);
    qhca_w_u32(w, e->msn);
    qhca_w_u8(w, e->resp);
    qhca_w_u8(w, e->nak_sent | e->uc_drop << 1 | e->comm_est << 2 |
                 e->have_recv << 3 | e->recv_error << 4);
    qhca_w_u64(w, e->recv_wr_id);
    qhca_w_u16(w, e->recv_idx);
    qhca_w_u8(w, e->recv_nsge);
    for (k = 0; k < e->recv_nsge; k++) {
        save_sge(w, &e->recv_sge[k]);
    }
    qhca_w_u64(w, e->recv_off);
    qhca_w_u64(w, e->wr_va);
    qhca_w_u32(w, e->wr_rkey);
    qhca_w_u64(w, e->wr_left);
    qhca_w_u32(w, e->wr_len);
    for (k = 0; k < QHCA_MAX_RD_ATOMIC; k++) {
        save_res(w, &e->res[k]);
    }
    qhca_w_u8(w, e->res_next);
    /* the response queue from its head */
    qhca_w_u8(w, e->respq_count);
    for (k = 0; k < e->respq_count; k++) {
        const QhcaRespQEntry *q = &e->respq[(e->respq_head + k) %
                                            QHCA_RESPQ_LEN];

        qhca_w_u8(w, q->kind);
        qhca_w_u8(w, q->syndrome);
        qhca_w_u8(w, q->res);
        qhca_w_u32(w, q->psn);
    }
}

/*
 * The congestion state: an optional record (a stream without it gives the
 * state of a QP that has measured nothing and lost nothing)
 */
void qhca_qp_engine_save_cc(const QhcaQp *qp, QhcaStreamW *w)
{
    const QhcaQpEngine *e = qp->eng;

    qhca_w_u32(w, e->cwnd);
    qhca_w_u8(w, e->rtt_pending);
    qhca_w_u32(w, e->rtt_psn);
    qhca_w_u64(w, e->rtt_t0);
    qhca_w_u64(w, e->srtt_ns);
    qhca_w_u64(w, e->rttvar_ns);
}

static uint16_t ring_depth(const QhcaRing *r)
{
    return 1u << r->log_depth;
}

static bool load_wqe(QhcaStreamR *r, QhcaWqeState *st)
{
    uint8_t f;

    st->state = qhca_r_u8(r);
    st->status = qhca_r_u8(r);
    st->opcode = qhca_r_u8(r);
    f = qhca_r_u8(r);
    st->signaled = f & 1;
    st->sent_once = f & 2;
    st->rd_counted = f & 4;
    st->resp_done = f & 8;
    st->reread = f & 16;
    st->first_psn = qhca_r_u32(r);
    st->last_psn = qhca_r_u32(r);
    st->next_resp_psn = qhca_r_u32(r);
    st->byte_len = qhca_r_u32(r);
    st->pieces_sent = qhca_r_u32(r);
    st->fingerprint = qhca_r_u64(r);
    if (!qhca_r_ok(r)) {
        return false;
    }
    if (st->state > WQE_DONE || (f & ~0x1f) ||
        !PSN_OK(st->first_psn) || !PSN_OK(st->last_psn) ||
        !PSN_OK(st->next_resp_psn) || st->byte_len > QHCA_MAX_MSG_BYTES ||
        st->pieces_sent > MAX_READ_NPKT) {
        return qhca_r_fail(r, "bad WQE state (state %u, flags 0x%x, "
                           "length %u)", st->state, f, st->byte_len);
    }
    return true;
}

static bool load_res(QhcaStreamR *r, QhcaRdRes *res)
{
    uint8_t f = qhca_r_u8(r);

    res->valid = f & 1;
    res->atomic = f & 2;
    res->replay = f & 4;
    res->psn = qhca_r_u32(r);
    res->orig = qhca_r_u64(r);
    res->rkey = qhca_r_u32(r);
    res->va = qhca_r_u64(r);
    res->len = qhca_r_u32(r);
    res->next = qhca_r_u32(r);
    res->npkt = qhca_r_u32(r);
    if (!qhca_r_ok(r)) {
        return false;
    }
    if ((f & ~7) || !PSN_OK(res->psn) || res->len > QHCA_MAX_MSG_BYTES ||
        res->npkt > MAX_READ_NPKT || res->next > res->npkt) {
        return qhca_r_fail(r, "bad responder resource (flags 0x%x, length "
                           "%u, packet %u of %u)", f, res->len, res->next,
                           res->npkt);
    }
    return true;
}

/*
 * The engine of a QP the loader made (qhca_qp_engine_create() gave it its
 * WQE array for the SQ's depth and put it in the list of live QPs)
 */
bool qhca_qp_engine_load(QhcaCore *c, QhcaQp *qp, QhcaStreamR *r)
{
    QhcaQpEngine *e = qp->eng;
    uint16_t i, sq_used, rq_used;
    uint8_t f, resp;
    unsigned k;

    e->sq_pi = qhca_r_u16(r);
    e->req_idx = qhca_r_u16(r);
    e->req_off = qhca_r_u64(r);
    e->next_psn = qhca_r_u32(r);
    e->acked = qhca_r_u32(r);
    e->tx_end = qhca_r_u32(r);
    e->pkts_since_ackreq = qhca_r_u32(r);
    e->deadline = qhca_r_u64(r);
    e->period_ns = qhca_r_u64(r);
    e->probe_shift = qhca_r_u8(r);
    f = qhca_r_u8(r);
    e->rnr_wait = f & 1;
    e->drained_notified = f & 2;
    e->nak_rewound = f & 4;
    e->probing = f & 8;
    e->retry_left = qhca_r_u8(r);
    e->rnr_left = qhca_r_u8(r);
    e->nak_psn = qhca_r_u32(r);
    e->window_bytes = qhca_r_u32(r);
    if (!qhca_r_ok(r)) {
        return false;
    }
    sq_used = e->sq_pi - qp->sq.ci;
    if (sq_used > ring_depth(&qp->sq) ||
        (uint16_t)(e->req_idx - qp->sq.ci) > sq_used) {
        return qhca_r_fail(r, "QP %u: send queue indexes out of order "
                           "(consumer %u, next %u, producer %u, depth %u)",
                           qp->qpn, qp->sq.ci, e->req_idx, e->sq_pi,
                           ring_depth(&qp->sq));
    }
    if (e->req_off > QHCA_MAX_MSG_BYTES || !PSN_OK(e->next_psn) ||
        !PSN_OK(e->acked) || !PSN_OK(e->tx_end) || !PSN_OK(e->nak_psn) ||
        e->pkts_since_ackreq > QHCA_WINDOW_MAX || e->deadline < -1 ||
        !CLOCK_OK(e->period_ns) ||
        e->probe_shift > QHCA_RTO_MAX_SHIFT || (f & ~0xf) ||
        e->retry_left > 7 || e->rnr_left > 7 ||
        e->window_bytes < QHCA_WINDOW_MIN ||
        e->window_bytes > QHCA_WINDOW_LIMIT) {
        return qhca_r_fail(r, "QP %u: bad requester state", qp->qpn);
    }
    e->rd_outstanding = 0;
    for (i = qp->sq.ci; i != e->sq_pi; i++) {
        QhcaWqeState *st = &e->wqe[i & sq_mask(qp)];

        if (!load_wqe(r, st)) {
            return false;
        }
        /*
         * Any state, also beyond the requester's WQE: a WQE done at once
         * (a local operation, or one that failed) lies beyond it after the
         * requester went back to send an earlier one again, and every WQE
         * does after a flush that could not write its CQEs; the requester
         * passes over done WQEs and the completer consumes them in order
         */
        e->rd_outstanding += st->rd_counted;
    }

    e->rq_pi = qhca_r_u16(r);
    e->epsn = qhca_r_u32(r);
    e->msn = qhca_r_u32(r);
    resp = qhca_r_u8(r);
    f = qhca_r_u8(r);
    e->nak_sent = f & 1;
    e->uc_drop = f & 2;
    e->comm_est = f & 4;
    e->have_recv = f & 8;
    e->recv_error = f & 16;
    e->recv_wr_id = qhca_r_u64(r);
    e->recv_idx = qhca_r_u16(r);
    e->recv_nsge = qhca_r_u8(r);
    if (!qhca_r_ok(r)) {
        return false;
    }
    rq_used = e->rq_pi - qp->rq.ci;
    if (resp > RESP_WRITE || (f & ~0x1f) || !PSN_OK(e->epsn) ||
        !PSN_OK(e->msn) || e->recv_nsge > QHCA_MAX_SGE ||
        (qp->srqn == QHCA_NO_SRQ ? rq_used > ring_depth(&qp->rq) :
                                   e->rq_pi != 0)) {
        return qhca_r_fail(r, "QP %u: bad responder state (state %u, "
                           "%u SGEs, receive producer %u)", qp->qpn, resp,
                           e->recv_nsge, e->rq_pi);
    }
    e->resp = resp;
    for (k = 0; k < e->recv_nsge; k++) {
        e->recv_sge[k].addr = cpu_to_le64(qhca_r_u64(r));
        e->recv_sge[k].length = cpu_to_le32(qhca_r_u32(r));
        e->recv_sge[k].lkey = cpu_to_le32(qhca_r_u32(r));
    }
    e->recv_off = qhca_r_u64(r);
    e->wr_va = qhca_r_u64(r);
    e->wr_rkey = qhca_r_u32(r);
    e->wr_left = qhca_r_u64(r);
    e->wr_len = qhca_r_u32(r);
    if (!qhca_r_ok(r)) {
        return false;
    }
    if (e->recv_off > QHCA_MAX_MSG_BYTES || e->wr_left > QHCA_MAX_MSG_BYTES ||
        e->wr_len > QHCA_MAX_MSG_BYTES) {
        return qhca_r_fail(r, "QP %u: bad message progress", qp->qpn);
    }
    for (k = 0; k < QHCA_MAX_RD_ATOMIC; k++) {
        if (!load_res(r, &e->res[k])) {
            return false;
        }
    }
    e->res_next = qhca_r_u8(r);
    e->respq_head = 0;
    e->respq_count = qhca_r_u8(r);
    if (!qhca_r_ok(r)) {
        return false;
    }
    if (e->res_next >= QHCA_MAX_RD_ATOMIC ||
        e->respq_count > QHCA_RESPQ_LEN) {
        return qhca_r_fail(r, "QP %u: bad response queue (%u entries, next "
                           "resource %u)", qp->qpn, e->respq_count,
                           e->res_next);
    }
    for (k = 0; k < e->respq_count; k++) {
        QhcaRespQEntry *q = &e->respq[k];

        q->kind = qhca_r_u8(r);
        q->syndrome = qhca_r_u8(r);
        q->res = qhca_r_u8(r);
        q->psn = qhca_r_u32(r);
        if (!qhca_r_ok(r)) {
            return false;
        }
        if (q->kind > RESPQ_ATOMIC || !PSN_OK(q->psn) ||
            (q->kind != RESPQ_ACK &&
             (q->res >= QHCA_MAX_RD_ATOMIC || !e->res[q->res].valid ||
              e->res[q->res].queued))) {
            return qhca_r_fail(r, "QP %u: bad response queue entry %u",
                               qp->qpn, k);
        }
        if (q->kind != RESPQ_ACK) {
            e->res[q->res].queued = true;
        }
    }
    /* the timers: re-armed from the deadlines by qhca_qp_engine_loaded() */
    return true;
}

bool qhca_qp_engine_load_cc(QhcaCore *c, QhcaQp *qp, QhcaStreamR *r)
{
    QhcaQpEngine *e = qp->eng;

    uint8_t pending;

    e->cwnd = qhca_r_u32(r);
    pending = qhca_r_u8(r);
    e->rtt_pending = pending;
    e->rtt_psn = qhca_r_u32(r);
    e->rtt_t0 = qhca_r_u64(r);
    e->srtt_ns = qhca_r_u64(r);
    e->rttvar_ns = qhca_r_u64(r);
    if (!qhca_r_ok(r)) {
        return false;
    }
    if (e->cwnd > MAX_CWND || pending > 1 ||
        !PSN_OK(e->rtt_psn) || !CLOCK_OK(e->rtt_t0) ||
        e->srtt_ns < 0 || e->srtt_ns > MAX_RTT_NS ||
        e->rttvar_ns < 0 || e->rttvar_ns > MAX_RTT_NS) {
        return qhca_r_fail(r, "QP %u: bad congestion state", qp->qpn);
    }
    return true;
}
