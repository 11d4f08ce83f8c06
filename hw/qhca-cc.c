/*
 * qhca QP engine: congestion control, as RoCEv2 does it (IBA annex A17)
 * with a reaction modelled on DCQCN (docs/hardware.md, "Congestion
 * control").  The device sends its RC data frames (requests and READ
 * answers) ECN-capable (ECT(0), when the QP's traffic class leaves the
 * ECN field 0; UC, which cannot slow down, and UD are not); a switch
 * whose queue grows marks them CE; the responder answers a marked request
 * packet with a CNP to the QP that sent it, at most one per QP every
 * QHCA_CNP_INTERVAL_NS; the requester that takes a CNP cuts what it may
 * have in flight and recovers step by step.  qhca's requester is limited
 * by a window, not paced, so the DCQCN rate is a window here, and its
 * timers are the QP's round trip (DCTCP's choice for a window): a cut at
 * most once a round trip (CNPs keep coming for a round trip after it),
 * recovery halfway to where it was cut, which grows a packet a step
 * (then faster), each step a round trip long.  Marked READ answers are the
 * requester's own data coming back in its own window: it cuts for them
 * itself, with no CNP.  The "ecn" property (default on) turns all of it
 * off: no ECT, CE counted only, CNPs counted and ignored.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qhca-qp-int.h"
#include "trace.h"

/* A data frame the QP sends (request, READ answer): ECN-capable */
void qhca_cc_data_addr(const QhcaCore *c, QhcaRoceHdr *h)
{
    if (c->ecn && !(h->tos & QHCA_ROCE_ECN_MASK)) {
        h->tos |= QHCA_ROCE_ECN_ECT0;
    }
}

/*
 * The period of alpha's decay and of the recovery steps, and the least
 * time between two cuts: a round trip as the QP measures it now, queueing
 * included (marks on frames sent before a cut are not a reason to cut
 * again), at least QHCA_CC_STEP_MIN_NS
 */
static int64_t cc_step_ns(const QhcaQp *qp)
{
    return MAX(qp->eng->srtt_ns, QHCA_CC_STEP_MIN_NS);
}

/*
 * Catch up with the time gone by: for each step alpha decays, and a QP
 * still limited takes one recovery step (at most QHCA_CC_MAX_CATCHUP at
 * once: by then alpha is about 0 and the limit gone)
 */
static void cc_update(QhcaQp *qp, int64_t now)
{
    QhcaQpEngine *e = qp->eng;
    int64_t k, step;
    uint32_t w;

    if (!e->cc_seen) {
        return;                         /* never cut: nothing to catch up */
    }
    step = cc_step_ns(qp);
    k = (now - e->cc_inc_t) / step;
    if (k <= 0) {
        return;
    }
    w = qp_window(qp);
    e->cc_inc_t += k * step;
    k = MIN(k, QHCA_CC_MAX_CATCHUP);
    while (k--) {
        uint32_t from = e->cc_cur;

        e->cc_alpha -= DIV_ROUND_UP(e->cc_alpha * QHCA_CC_G, QHCA_CC_ONE);
        if (!e->cc_cur) {
            continue;
        }
        if (e->cc_stage < UINT8_MAX) {
            e->cc_stage++;
        }
        /*
         * DCQCN's fast recovery (halfway to the target) with the target
         * growing a packet a step from the first: two QPs cut by the same
         * share keep the ratio they had under fast recovery alone
         */
        e->cc_target += e->cc_stage > QHCA_CC_HYPER_STEP ?
                        e->cc_stage - QHCA_CC_HYPER_STEP : 1;
        e->cc_target = MIN(e->cc_target, w);
        e->cc_cur = (e->cc_cur + e->cc_target + 1) / 2;
        if (e->cc_cur >= w) {
            e->cc_cur = 0;              /* recovered: the window again */
        }
        trace_qhca_cc_step(qp->qpn, from, e->cc_cur, e->cc_target,
                           e->cc_stage);
    }
}

/* Cut what @qp may have in flight, for a CNP or a marked READ answer */
static void cc_cut(QhcaCore *c, QhcaQp *qp, int64_t now)
{
    QhcaQpEngine *e = qp->eng;
    uint32_t from;

    cc_update(qp, now);
    if (e->cc_cur && now - e->cc_cut_t < cc_step_ns(qp)) {
        return;                         /* cut for this round trip already */
    }
    if (!e->cc_seen) {
        e->cc_seen = true;
        e->cc_alpha = QHCA_CC_ONE;
    }
    from = qp_send_window(qp);
    e->cc_target = from;
    e->cc_cur = MAX(QHCA_CC_MIN,
                    from - from * e->cc_alpha / (2 * QHCA_CC_ONE));
    e->cc_alpha += (QHCA_CC_ONE - e->cc_alpha) * QHCA_CC_G / QHCA_CC_ONE;
    e->cc_stage = 0;
    e->cc_cut_t = e->cc_inc_t = now;
    trace_qhca_cc_cut(qp->qpn, from, e->cc_cur, e->cc_alpha);
}

/* An ACK or answer came: the time to recover may have come */
void qhca_cc_acked(QhcaCore *c, QhcaQp *qp, int64_t now)
{
    cc_update(qp, now);
}

/* The responder tells the requester: send a CNP to @qp's peer */
static void send_cnp(QhcaCore *c, QhcaQp *qp, int64_t now)
{
    static const uint8_t reserved[QHCA_ROCE_CNP_LEN];
    QhcaQpEngine *e = qp->eng;
    QhcaRoceHdr h = { 0 };

    if (e->cnp_t && now - e->cnp_t < QHCA_CNP_INTERVAL_NS) {
        return;
    }
    if (!qhca_rc_addr(c, qp, &h)) {
        return;
    }
    e->cnp_t = now;
    h.opcode = QHCA_ROCE_OP_CNP;
    h.psn = 0;
    h.becn = true;
    /* DSCP 48, as mlx5 sends CNPs by default; not ECN-capable */
    h.tos = QHCA_CNP_DSCP << 2;
    c->stat_cnp_sent++;
    trace_qhca_cnp_tx(qp->qpn, h.dest_qp);
    qhca_send_simple(c, &h, reserved, sizeof(reserved));
}

/*
 * A packet for @qp (RC or UC, from its path) came marked CE: a request
 * gets a CNP to its sender; a READ answer cuts this requester's own window
 */
void qhca_cc_marked(QhcaCore *c, QhcaQp *qp, const QhcaRocePkt *pkt)
{
    int64_t now;

    c->stat_ecn_marked++;
    trace_qhca_ecn_marked(qp->qpn, pkt->hdr.opcode, pkt->hdr.psn);
    if (!c->ecn || !qp->eng ||
        (qp->attr.qp_state != QHCA_QPS_RTR &&
         qp->attr.qp_state != QHCA_QPS_RTS &&
         qp->attr.qp_state != QHCA_QPS_SQD)) {
        return;
    }
    now = c->ops->now_ns(c->opaque);
    if (pkt->op->flags & QHCA_ROCE_OPF_REQUEST) {
        send_cnp(c, qp, now);
    } else if ((pkt->op->flags & QHCA_ROCE_OPF_READ) && qp_is_rc(qp) &&
               qp->attr.qp_state != QHCA_QPS_RTR) {
        cc_cut(c, qp, now);
    }
}

/*
 * A CNP for @qp (from its path): an RC QP that sends slows down; any other
 * (UC sends unpaced, a QP not in RTS or SQD sends nothing) ignores it
 */
void qhca_cc_cnp(QhcaCore *c, QhcaQp *qp, const QhcaRocePkt *pkt)
{
    if (!c->ecn || !qp->eng || !qp_is_rc(qp) ||
        (qp->attr.qp_state != QHCA_QPS_RTS &&
         qp->attr.qp_state != QHCA_QPS_SQD)) {
        c->stat_cnp_ignored++;
        trace_qhca_cnp_ignored(qp->qpn, qp->attr.qp_state);
        return;
    }
    c->stat_cnp_handled++;
    trace_qhca_cnp_rx(qp->qpn);
    cc_cut(c, qp, c->ops->now_ns(c->opaque));
}
