/*
 * qhca QP engine: the completer.  Handles ACKs, NAKs, READ responses and
 * atomic ACKs, stores returned data, writes send CQEs in order (only the
 * WQE at the head of the SQ completes), and decides on retransmission
 * after a timeout, a sequence NAK or an RNR NAK.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qhca-qp-int.h"
#include "trace.h"

/* Finish WQE @idx with @status; it completes when it reaches the head */
void qhca_wqe_done(QhcaQp *qp, uint16_t idx, uint8_t status)
{
    QhcaWqeState *st = &qp->eng->wqe[idx & sq_mask(qp)];

    st->state = WQE_DONE;
    st->status = status;
}

/* Consume the head WQE: its CQE if it needs one, then free the slot */
static bool sq_consume(QhcaCore *c, QhcaQp *qp)
{
    QhcaQpEngine *e = qp->eng;
    QhcaWqeState *st = &e->wqe[qp->sq.ci & sq_mask(qp)];
    uint8_t status = st->status;

    if (st->signaled || qp->sq_sig_all || status != QHCA_CQE_SUCCESS) {
        struct qhca_cqe cqe = { 0 };
        uint64_t addr, wr_id = 0;

        if (qhca_ring_entry_addr(&qp->sq, qp->sq.ci, &addr)) {
            qhca_op_dma_read(c, addr + offsetof(struct qhca_send_wqe, wr_id),
                             &wr_id, sizeof(wr_id));
        }
        cqe.wr_id = wr_id;
        cqe.status = status;
        cqe.opcode = qhca_cqe_opcode(st->opcode);
        cqe.byte_len = cpu_to_le32(st->byte_len);
        cqe.qpn = cpu_to_le32(qp->qpn);
        cqe.wqe_index = cpu_to_le16(qp->sq.ci);
        if (!qhca_post_cqe(c, qp->send_cqn, &cqe)) {
            qhca_qp_to_err(c, qp);
            return false;
        }
    }
    if (st->rd_counted) {
        e->rd_outstanding--;
    }
    memset(st, 0, sizeof(*st));
    if (qp->sq.ci == e->req_idx) {
        /* it was being sent (again): go on with the next one */
        e->req_idx++;
        e->req_off = 0;
    }
    qp->sq.ci++;
    if (status != QHCA_CQE_SUCCESS) {
        if (qp_is_rc(qp)) {
            qhca_qp_to_err(c, qp);
        } else if (qp->attr.qp_state != QHCA_QPS_ERR) {
            qp->attr.qp_state = QHCA_QPS_SQE;
            qp_schedule(c, qp);
        }
        return false;
    }
    return true;
}

/*
 * The completer: consume finished WQEs at the head of the SQ, in order.
 * An RC SEND or WRITE is finished once all its packets were sent and
 * acknowledged; a READ or atomic once its whole answer is in.
 */
void qhca_sq_complete(QhcaCore *c, QhcaQp *qp)
{
    QhcaQpEngine *e = qp->eng;

    while (qp->sq.ci != e->sq_pi) {
        QhcaWqeState *st = &e->wqe[qp->sq.ci & sq_mask(qp)];

        if (st->state == WQE_STARTED && qp_is_rc(qp)) {
            if (is_rd_atomic(st->opcode)) {
                if (!st->resp_done) {
                    /* acknowledged past what came back: the rest is lost */
                    if (psn_diff(e->acked, st->next_resp_psn) >= 0 &&
                        !st->reread) {
                        st->reread = true;
                        qhca_req_rewind(c, qp, st->next_resp_psn);
                    }
                    return;
                }
            } else if (!st->sent_once ||
                       psn_diff(e->acked, st->last_psn) < 0) {
                return;
            }
            st->state = WQE_DONE;
            st->status = QHCA_CQE_SUCCESS;
        }
        if (st->state != WQE_DONE || !sq_consume(c, qp)) {
            return;
        }
    }
}

/* RNR timer values of the IBA (table 45), in microseconds */
static const uint32_t rnr_timer_us[32] = {
    655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960,
    1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960,
    61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

/* Is anything sent and not yet answered? */
static bool req_outstanding(const QhcaQp *qp)
{
    const QhcaQpEngine *e = qp->eng;

    return qp->sq.ci != e->sq_pi &&
           e->wqe[qp->sq.ci & sq_mask(qp)].state == WQE_STARTED &&
           qp_is_rc(qp);
}

/* A loss: send less at once (see qp_send_window()) */
static void cwnd_loss(QhcaQp *qp, unsigned div)
{
    QhcaQpEngine *e = qp->eng;

    e->cwnd = MAX(QHCA_CWND_MIN, (uint32_t)qp_send_window(qp) / div);
}

/*
 * The requester went back (a timeout, a NAK) and the peer now says it has
 * more than that: do not send again what it has.  READs and atomics resume
 * where their answers stopped, as qhca_req_rewind() put them.
 */
static void req_skip_acked(QhcaQp *qp)
{
    QhcaQpEngine *e = qp->eng;
    QhcaWqeState *st = &e->wqe[e->req_idx & sq_mask(qp)];
    uint32_t next = psn_add(e->acked, 1);
    uint32_t at;

    if (e->req_idx == e->sq_pi || st->state != WQE_STARTED ||
        is_rd_atomic(st->opcode)) {
        return;
    }
    at = psn_add(st->first_psn, e->req_off / qp_mtu(qp));
    if (psn_diff(next, at) > 0 && psn_diff(next, st->last_psn) <= 0) {
        e->req_off = (uint64_t)psn_diff(next, st->first_psn) * qp_mtu(qp);
    }
}

/* A round trip measured: smoothed as TCP does (RFC 6298) */
static void rtt_sample(QhcaQp *qp, int64_t rtt)
{
    QhcaQpEngine *e = qp->eng;

    e->rtt_pending = false;
    if (rtt <= 0) {
        return;
    }
    if (!e->min_rtt_ns || rtt < e->min_rtt_ns) {
        e->min_rtt_ns = rtt;
    }
    if (!e->srtt_ns) {
        e->srtt_ns = rtt;
        e->rttvar_ns = rtt / 2;
        return;
    }
    e->rttvar_ns += ((e->srtt_ns > rtt ? e->srtt_ns - rtt : rtt - e->srtt_ns) -
                     e->rttvar_ns) / 4;
    e->srtt_ns += (rtt - e->srtt_ns) / 8;
}

/*
 * The window follows the path's bandwidth-delay product, so that a long
 * path can be filled (a 64 KiB window moves 3 MB/s over a 20 ms round
 * trip) while a short one keeps the window the device was given.  A
 * delivery round runs from sending a PSN to its acknowledgement; the bytes
 * acknowledged in it times the shortest round trip the QP measured, over
 * the round's length (at least that round trip), is what the path held
 * without queueing.  Below the
 * path's bandwidth that is the window itself (the round lasts one base
 * round trip), so a window of QHCA_WINDOW_GAIN times it grows each round;
 * once a bottleneck is full the rounds lengthen with its queue and the
 * product stays the bottleneck's bandwidth times the base round trip, so
 * the window settles at that times the gain (a queue of half of it).  The
 * shortest round trip is kept for the QP's life (its peer's path does not
 * change; a load starts over).  Losses still cut what may be in flight
 * (cwnd) within the window.
 */
static void window_follow(QhcaCore *c, QhcaQp *qp, int64_t now, uint32_t n)
{
    QhcaQpEngine *e = qp->eng;
    uint64_t bdp, target;
    int64_t dt;

    e->bw_bytes = MIN(e->bw_bytes + (uint64_t)n * qp_mtu(qp), 1ull << 36);
    if (e->bw_t0 && psn_diff(e->acked, e->bw_psn) < 0) {
        return;                         /* the round goes on */
    }
    /*
     * A round is at least a base round trip: ACKs that come in a burst
     * (a busy main loop takes a queue of them at once) end a round early
     * and would measure a rate the path does not have
     */
    dt = MAX(now - e->bw_t0, e->min_rtt_ns);
    if (e->bw_t0 && dt >= 1000 && e->min_rtt_ns > 0) {
        /*
         * In microseconds: bw_bytes <= 2^36 times a round trip of at most
         * 2^27 us (134 s; the peer decides when it answers) stays below
         * 2^63
         */
        bdp = e->bw_bytes * (uint64_t)MIN(e->min_rtt_ns / 1000, 1ll << 27) /
              (uint64_t)(dt / 1000);
        e->bdp_max = MAX(bdp, e->bdp_max - e->bdp_max / 8);
        target = e->bdp_max / QHCA_WINDOW_GAIN_DEN * QHCA_WINDOW_GAIN_NUM;
        target = MIN(MAX(target, (uint64_t)c->window_bytes),
                     (uint64_t)QHCA_WINDOW_LIMIT);
        if (target != e->window_bytes) {
            trace_qhca_window_follow(qp->qpn, e->window_bytes,
                                     (uint32_t)target, e->min_rtt_ns, bdp);
            e->window_bytes = target;
        }
    }
    e->bw_t0 = now;
    e->bw_bytes = 0;
    /* the last PSN sent (the one acknowledged when nothing is out) */
    e->bw_psn = psn_diff(e->tx_end, e->acked) > 0 ? psn_add(e->tx_end, -1) :
                e->acked;
}

static QhcaWqeState *req_head_rd(QhcaQp *qp, uint16_t *idx);

/* The peer has everything up to and including @psn */
static void req_advance(QhcaCore *c, QhcaQp *qp, uint32_t psn)
{
    QhcaQpEngine *e = qp->eng;

    /* only PSNs that were assigned, and only forward */
    if (psn_diff(psn, e->acked) > 0 && psn_diff(psn, e->next_psn) < 0) {
        uint32_t newly = psn_diff(psn, e->acked);
        int64_t now = c->ops->now_ns(c->opaque);

        if (e->cwnd) {
            e->cwnd += psn_diff(psn, e->acked);
            if (e->cwnd >= (uint32_t)qp_window(qp)) {
                e->cwnd = 0;
            }
        }
        if (e->rtt_pending && psn_diff(psn, e->rtt_psn) >= 0) {
            rtt_sample(qp, now - e->rtt_t0);
        }
        e->acked = psn;
        window_follow(c, qp, now, newly);
        qhca_cc_acked(c, qp, now);
        e->probing = false;
        req_skip_acked(qp);
        e->nak_rewound = false;
        e->retry_left = qp->attr.retry_cnt;
        e->rnr_left = qp->attr.rnr_retry;
        qhca_qp_arm_timer(c, qp);
    }
}

/*
 * An ACK or NAK acknowledges up to @psn, but not past a READ or atomic
 * whose answer has not all come: an ACK of later requests says the rest
 * of that answer was lost (an implied NAK), and the requester asks again
 * from its first missing response.  Taken as acknowledged, such a READ
 * had nothing in flight after it, so no timer ran for it: when the answer
 * asked for again was lost too the QP stopped, with no completion and no
 * error (seen with 5% loss).  The answers to READs and atomics, whose
 * PSNs are never past that, call req_advance() directly.
 */
static void req_acked(QhcaCore *c, QhcaQp *qp, uint32_t psn)
{
    QhcaQpEngine *e = qp->eng;
    QhcaWqeState *rd = NULL;
    bool implied = false;
    uint16_t idx;

    if (e->rd_outstanding) {
        rd = req_head_rd(qp, &idx);
        if (rd && psn_diff(psn, rd->next_resp_psn) >= 0) {
            psn = psn_add(rd->next_resp_psn, -1);
            implied = !rd->reread && !e->rnr_wait;
        }
    }
    req_advance(c, qp, psn);
    if (implied) {
        trace_qhca_read_implied_nak(qp->qpn, rd->next_resp_psn);
        rd->reread = true;
        c->stat_retransmits++;
        cwnd_loss(qp, 2);
        qhca_req_rewind(c, qp, rd->next_resp_psn);
    }
}

/* The READ or atomic whose answer is due next: the oldest unanswered */
static QhcaWqeState *req_head_rd(QhcaQp *qp, uint16_t *idx)
{
    QhcaQpEngine *e = qp->eng;
    uint16_t i;

    for (i = qp->sq.ci; i != e->sq_pi; i++) {
        QhcaWqeState *st = &e->wqe[i & sq_mask(qp)];

        if (st->state == WQE_FREE) {
            break;
        }
        if (st->state == WQE_STARTED && is_rd_atomic(st->opcode) &&
            !st->resp_done) {
            *idx = i;
            return st;
        }
    }
    return NULL;
}

static uint8_t nak_status(uint8_t code)
{
    switch (code) {
    case QHCA_ROCE_NAK_INVALID_REQ:
        return QHCA_CQE_REM_INV_REQ_ERR;
    case QHCA_ROCE_NAK_REMOTE_ACCESS:
        return QHCA_CQE_REM_ACCESS_ERR;
    case QHCA_ROCE_NAK_REMOTE_OP:
        return QHCA_CQE_REM_OP_ERR;
    default:
        return QHCA_CQE_BAD_RESP_ERR;
    }
}

/* Fail the started WQE that holds @psn; nothing after it may complete */
static void req_fail_at(QhcaQp *qp, uint32_t psn, uint8_t status)
{
    QhcaQpEngine *e = qp->eng;
    uint16_t i;

    for (i = qp->sq.ci; i != e->sq_pi; i++) {
        QhcaWqeState *st = &e->wqe[i & sq_mask(qp)];

        if (st->state == WQE_STARTED && psn_diff(psn, st->last_psn) <= 0) {
            qhca_wqe_done(qp, i, status);
            return;
        }
        if (st->state == WQE_FREE) {
            return;
        }
    }
}

/* Copy a READ response or the atomic result into the WQE's buffers */
static bool req_store(QhcaCore *c, QhcaQp *qp, uint16_t idx, uint64_t off,
                      const void *data, uint32_t n, bool last)
{
    const QhcaWqeState *st = &qp->eng->wqe[idx & sq_mask(qp)];
    struct qhca_send_wqe w;
    struct qhca_sge sge[QHCA_MAX_SGE];
    uint64_t addr, len;

    return !qhca_wqe_reread(c, qp, st, idx, &w, &addr, sge, &len) &&
           off <= len && n <= len - off && (!last || off + n == len) &&
           qhca_sge_copy(c, qp->pdn, sge, w.num_sge, off, (void *)data, n,
                         true) == SGE_OK;
}

/* An ACK, RNR NAK or NAK */
static void comp_ack(QhcaCore *c, QhcaQp *qp, const QhcaRocePkt *pkt)
{
    QhcaQpEngine *e = qp->eng;
    const QhcaRoceHdr *h = &pkt->hdr;
    uint8_t syn = h->aeth.syndrome;

    trace_qhca_ack_rx(qp->qpn, h->psn, syn);
    /* a NAK names a PSN that is outstanding; anything else is stale */
    if ((syn & QHCA_ROCE_AETH_TYPE_MASK) != QHCA_ROCE_AETH_ACK &&
        psn_diff(h->psn, e->acked) <= 0) {
        QHCA_TRACE_RX_DROP_PKT(pkt, qp->qpn, QHCA_RX_DROP_NAK_ACKED);
        return;
    }
    /* whatever the answer, the probe (if any) has had one */
    e->probing = false;
    switch (syn & QHCA_ROCE_AETH_TYPE_MASK) {
    case QHCA_ROCE_AETH_ACK:
        req_acked(c, qp, h->psn);
        break;
    case QHCA_ROCE_AETH_RNR_NAK:
        c->stat_rnr_naks_rcvd++;
        req_acked(c, qp, psn_add(h->psn, -1));
        if (qp->attr.rnr_retry != 7 && e->rnr_left == 0) {
            c->stat_rnr_retry_exceeded++;
            req_fail_at(qp, h->psn, QHCA_CQE_RNR_RETRY_EXC_ERR);
            break;
        }
        if (qp->attr.rnr_retry != 7) {
            e->rnr_left--;
        }
        qhca_req_rewind(c, qp, h->psn);
        e->rnr_wait = true;
        e->deadline = c->ops->now_ns(c->opaque) +
                      rnr_timer_us[syn & QHCA_ROCE_AETH_VALUE_MASK] * 1000LL;
        break;
    case QHCA_ROCE_AETH_NAK:
        c->stat_naks_rcvd++;
        req_acked(c, qp, psn_add(h->psn, -1));
        if ((syn & QHCA_ROCE_AETH_VALUE_MASK) == QHCA_ROCE_NAK_PSN_SEQ_ERR) {
            /*
             * Go back once per NAK PSN, and count it against retry_cnt as
             * a timeout is: repeated (or spoofed) NAKs cannot make the
             * requester send its window again and again
             */
            if (e->nak_rewound && e->nak_psn == h->psn) {
                QHCA_TRACE_RX_DROP_PKT(pkt, qp->qpn,
                                       QHCA_RX_DROP_SEQ_NAK_DONE);
                break;
            }
            if (e->retry_left == 0) {
                c->stat_retry_exceeded++;
                trace_qhca_retry_exceeded(qp->qpn, h->psn);
                req_fail_at(qp, h->psn, QHCA_CQE_RETRY_EXC_ERR);
                break;
            }
            e->retry_left--;
            e->nak_rewound = true;
            e->nak_psn = h->psn;
            c->stat_retransmits++;
            cwnd_loss(qp, 2);
            qhca_req_rewind(c, qp, h->psn);
        } else {
            req_fail_at(qp, h->psn,
                        nak_status(syn & QHCA_ROCE_AETH_VALUE_MASK));
        }
        break;
    default:
        break;
    }
}

/* The answer to the atomic at the head of the outstanding READs/atomics */
static bool comp_atomic_ack(QhcaCore *c, QhcaQp *qp, const QhcaRoceHdr *h)
{
    uint16_t idx;
    QhcaWqeState *st = req_head_rd(qp, &idx);
    uint64_t orig;

    if (!st || (st->opcode != QHCA_WQE_ATOMIC_CMP_AND_SWP &&
                st->opcode != QHCA_WQE_ATOMIC_FETCH_AND_ADD) ||
        h->psn != st->first_psn) {
        return false;
    }
    /* everything before it is acknowledged too */
    req_advance(c, qp, psn_add(h->psn, -1));
    orig = cpu_to_le64(h->atomic_ack_orig);
    if (!req_store(c, qp, idx, 0, &orig, 8, true)) {
        qhca_wqe_done(qp, idx, QHCA_CQE_LOC_PROT_ERR);
        return true;
    }
    trace_qhca_atomic_done(qp->qpn, h->psn, idx, h->atomic_ack_orig);
    st->resp_done = true;
    st->next_resp_psn = psn_add(h->psn, 1);
    req_advance(c, qp, h->psn);
    return true;
}

/*
 * The answer to the FLUSH or ATOMIC WRITE at the head of the outstanding
 * READs/atomics: one READ RESPONSE ONLY at its PSN without payload
 */
static bool comp_empty_read_resp(QhcaCore *c, QhcaQp *qp,
                                 const QhcaRocePkt *pkt, QhcaWqeState *st)
{
    const QhcaRoceHdr *h = &pkt->hdr;

    if (h->opcode != QHCA_ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY ||
        h->psn != st->first_psn || pkt->payload_len) {
        QHCA_TRACE_RX_DROP_PKT(pkt, qp->qpn,
                               QHCA_RX_DROP_NOT_EMPTY_READ_RESP);
        return false;
    }
    req_advance(c, qp, psn_add(h->psn, -1));
    st->resp_done = true;
    st->next_resp_psn = psn_add(h->psn, 1);
    req_advance(c, qp, h->psn);
    return true;
}

/* A READ response packet: stored in order, a gap asks again */
static bool comp_read_resp(QhcaCore *c, QhcaQp *qp, const QhcaRocePkt *pkt,
                           const uint8_t *frame)
{
    QhcaQpEngine *e = qp->eng;
    const QhcaRoceHdr *h = &pkt->hdr;
    uint16_t idx;
    QhcaWqeState *st = req_head_rd(qp, &idx);
    bool end;

    if (st && is_empty_read_answered(st->opcode)) {
        return comp_empty_read_resp(c, qp, pkt, st);
    }
    if (!st || st->opcode != QHCA_WQE_RDMA_READ ||
        psn_diff(h->psn, st->first_psn) < 0 ||
        psn_diff(h->psn, st->last_psn) > 0) {
        return false;
    }
    if (h->psn != st->next_resp_psn) {
        /* a gap: ask again, once, from what we miss */
        if (psn_diff(h->psn, st->next_resp_psn) > 0 && !e->rnr_wait &&
            !st->reread) {
            st->reread = true;
            c->stat_retransmits++;
            cwnd_loss(qp, 2);
            qhca_req_rewind(c, qp, st->next_resp_psn);
        }
        return false;
    }
    req_advance(c, qp, psn_add(st->first_psn, -1));
    /* the WQE may be asked for in pieces: LAST ends a piece */
    end = (pkt->op->flags & QHCA_ROCE_OPF_LAST) && h->psn == st->last_psn;
    if (!req_store(c, qp, idx,
                   (uint64_t)psn_diff(h->psn, st->first_psn) * qp_mtu(qp),
                   frame + pkt->payload_off, pkt->payload_len, end)) {
        qhca_wqe_done(qp, idx, QHCA_CQE_LOC_PROT_ERR);
        return true;
    }
    st->resp_done = end;
    st->reread = false;
    st->next_resp_psn = psn_add(h->psn, 1);
    /* each response acknowledges its PSN */
    req_advance(c, qp, h->psn);
    return true;
}

/* Completer: a response (ACK, NAK, READ response, atomic ACK) arrived */
void qhca_comp_recv(QhcaCore *c, QhcaQp *qp, const QhcaRocePkt *pkt,
                    const uint8_t *frame)
{
    QhcaQpEngine *e = qp->eng;
    const QhcaRoceHdr *h = &pkt->hdr;

    if (qp->attr.qp_state != QHCA_QPS_RTS &&
        qp->attr.qp_state != QHCA_QPS_SQD) {
        return;
    }
    /* Responses for PSNs never sent, or long acknowledged, are stale */
    if (psn_diff(h->psn, e->next_psn) >= 0 ||
        psn_diff(h->psn, e->acked) <=
        -MAX(QHCA_WINDOW_MAX, 2 * qp_window(qp))) {
        QHCA_TRACE_RX_DROP_PKT(pkt, qp->qpn, QHCA_RX_DROP_RESP_PSN_WINDOW);
        return;
    }
    switch (h->opcode) {
    case QHCA_ROCE_OP_RC_ACKNOWLEDGE:
        comp_ack(c, qp, pkt);
        break;
    case QHCA_ROCE_OP_RC_ATOMIC_ACKNOWLEDGE:
        if (!comp_atomic_ack(c, qp, h)) {
            return;
        }
        break;
    default:
        if (!comp_read_resp(c, qp, pkt, frame)) {
            return;
        }
        break;
    }
    qhca_sq_complete(c, qp);
    /*
     * The timer runs while the peer owes an answer: not while the QP
     * waits with nothing in flight (for the device's window, say), or a
     * QP that other QPs keep waiting would time out
     */
    if (!req_outstanding(qp) || !qp_inflight(qp)) {
        e->deadline = e->rnr_wait ? e->deadline : -1;
    }
    qp_schedule(c, qp);
}


/* Send again from the first PSN not acknowledged */
static void req_go_back(QhcaCore *c, QhcaQp *qp)
{
    QhcaQpEngine *e = qp->eng;
    QhcaWqeState *rd;
    uint16_t idx;
    uint32_t from;

    for (uint16_t j = qp->sq.ci; j != e->sq_pi; j++) {
        e->wqe[j & sq_mask(qp)].reread = false;
    }
    rd = req_head_rd(qp, &idx);
    from = psn_add(e->acked, 1);
    /* a READ resumes at its first missing response */
    if (rd && psn_diff(from, rd->first_psn) >= 0) {
        from = rd->next_resp_psn;
    }
    qhca_req_rewind(c, qp, from);
}

/*
 * The retransmission or RNR timer of @qp expired.
 *
 * Within a timeout period (the QP's timeout attribute, from the last
 * progress) the requester first sends again early, after the RTO it
 * measured (qhca_qp_rto_ns()), and again after twice that, and so on: a
 * lost last packet, a lost NAK or a lost retransmission then costs a few
 * round trips instead of the whole timeout (milliseconds instead of the
 * 67 ms of perftest's timeout 14).  An early retransmission is a probe:
 * only the first packet not acknowledged goes out, asking for an ACK, and
 * the answer says where to go on (an ACK of more skips what the peer has,
 * see req_skip_acked(); the packet the peer missed goes on from there), so
 * a probe that was not needed costs one packet, not a window.  Probes do
 * not count against retry_cnt, so a peer that is gone fails the QP after
 * (retry_cnt + 1) timeouts, as before; the responder takes duplicates as
 * the IBA says it must.
 */
void qhca_comp_timer(QhcaCore *c, QhcaQp *qp, int64_t now)
{
    QhcaQpEngine *e = qp->eng;
    uint64_t timeout = qhca_qp_timeout_ns(qp);
    bool early;

    e->deadline = -1;
    if (e->rnr_wait) {
        e->rnr_wait = false;
        qhca_qp_arm_timer(c, qp);
        return;
    }
    if (!req_outstanding(qp) || !qp_inflight(qp)) {
        return;                         /* nothing the peer owes */
    }
    early = !timeout || now - e->period_ns < (int64_t)timeout;
    if (early) {
        int64_t next;

        trace_qhca_retransmit_early(qp->qpn, psn_add(e->acked, 1),
                                    e->probe_shift);
        c->stat_retransmits++;
        /* no loss is known yet: what the QP may send at once stays */
        e->probe_shift = MIN(e->probe_shift + 1, QHCA_RTO_MAX_SHIFT);
        next = now + (qhca_qp_rto_ns(qp) << e->probe_shift);
        if (timeout) {
            next = MIN(next, e->period_ns + (int64_t)timeout);
        }
        req_go_back(c, qp);
        e->probing = true;
        e->deadline = next;
        return;
    }
    e->probing = false;
    c->stat_timeouts++;
    if (e->retry_left == 0) {
        c->stat_retry_exceeded++;
        trace_qhca_retry_exceeded(qp->qpn, psn_add(e->acked, 1));
        req_fail_at(qp, psn_add(e->acked, 1), QHCA_CQE_RETRY_EXC_ERR);
        /* nothing came back: the head itself failed */
        if (e->wqe[qp->sq.ci & sq_mask(qp)].state == WQE_STARTED) {
            qhca_wqe_done(qp, qp->sq.ci, QHCA_CQE_RETRY_EXC_ERR);
        }
        qhca_sq_complete(c, qp);
        return;
    }
    e->retry_left--;
    c->stat_retransmits++;
    cwnd_loss(qp, 4);
    req_go_back(c, qp);
    qhca_qp_arm_timer(c, qp);
}
