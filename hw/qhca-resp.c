/*
 * qhca QP engine: the responder.  Each request packet goes through named
 * checks (QP state, PSN, opcode sequence, rkey and bounds, resources) and
 * then one executor (SEND, RDMA WRITE, RDMA READ, atomic); duplicates are
 * answered again; UD and GSI receives land here too.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qhca-qp-int.h"
#include "trace.h"

/* Responder: ACK or NAK with @syndrome for @psn */
static void send_ack(QhcaCore *c, QhcaQp *qp, uint32_t psn, uint8_t syndrome)
{
    QhcaRoceHdr h = { 0 };

    if (!qhca_rc_addr(c, qp, &h)) {
        return;
    }
    h.opcode = QHCA_ROCE_OP_RC_ACKNOWLEDGE;
    h.psn = psn;
    h.aeth.syndrome = syndrome;
    h.aeth.msn = qp->eng->msn & QHCA_ROCE_MSN_MASK;
    trace_qhca_ack_tx(qp->qpn, psn, syndrome);
    switch (syndrome & QHCA_ROCE_AETH_TYPE_MASK) {
    case QHCA_ROCE_AETH_NAK:
        c->stat_naks_sent++;
        break;
    case QHCA_ROCE_AETH_RNR_NAK:
        c->stat_rnr_naks_sent++;
        break;
    }
    qhca_send_simple(c, &h, NULL, 0);
}

/*
 * Responder
 */

/* Take the next receive WQE (RQ or SRQ); false if there is none */
static bool take_recv(QhcaCore *c, QhcaQp *qp)
{
    QhcaQpEngine *e = qp->eng;
    QhcaSrq *srq = NULL;
    QhcaRing *r = &qp->rq;
    uint16_t pi = e->rq_pi;
    struct qhca_recv_wqe w;
    uint64_t addr;
    unsigned max;

    if (qp->srqn != QHCA_NO_SRQ) {
        srq = qhca_core_srq(c, qp->srqn);
        r = &srq->ring;
        pi = r->pi;
    }
    if (r->ci == pi) {
        return false;
    }
    e->have_recv = true;
    e->recv_error = false;
    e->recv_idx = r->ci;
    e->recv_off = 0;
    e->recv_wr_id = 0;
    e->recv_nsge = 0;
    max = MIN(QHCA_MAX_SGE, ((1u << r->log_stride) - QHCA_RECV_WQE_HDR_SIZE) /
                            sizeof(struct qhca_sge));
    if (!qhca_ring_entry_addr(r, r->ci, &addr) ||
        !qhca_op_dma_read(c, addr, &w, sizeof(w))) {
        QHCA_GUEST_ERROR(c, receive_wqe_cannot_read, qp->qpn, qp->srqn, r->ci);
        e->recv_error = true;
    } else if (w.num_sge > max ||
               !qhca_op_dma_read(c, addr + QHCA_RECV_WQE_HDR_SIZE,
                                 e->recv_sge,
                                 w.num_sge * sizeof(struct qhca_sge))) {
        /* its error completion still names it */
        QHCA_GUEST_ERROR(c, receive_wqe_bad_num_sge, qp->qpn, qp->srqn, r->ci,
                         w.num_sge, max);
        e->recv_wr_id = le64_to_cpu(w.wr_id);
        e->recv_error = true;
    } else {
        e->recv_wr_id = le64_to_cpu(w.wr_id);
        e->recv_nsge = w.num_sge;
    }
    r->ci++;
    if (srq) {
        qhca_srq_check_limit(c, qp->srqn, srq);
    }
    return true;
}

void qhca_recv_complete(QhcaCore *c, QhcaQp *qp, uint8_t status,
                        uint8_t opcode, uint32_t byte_len, unsigned flags,
                        uint32_t imm, uint32_t src_qp)
{
    QhcaQpEngine *e = qp->eng;
    struct qhca_cqe cqe = { 0 };

    cqe.wr_id = cpu_to_le64(e->recv_wr_id);
    cqe.status = status;
    cqe.opcode = opcode;
    cqe.flags = flags & 0xff;
    cqe.byte_len = cpu_to_le32(byte_len);
    cqe.qpn = cpu_to_le32(qp->qpn);
    cqe.src_qp = cpu_to_le32(src_qp);
    cqe.wqe_index = cpu_to_le16(e->recv_idx);
    if (flags & QHCA_CQE_WITH_IMM) {
        stl_be_p(cqe.imm_data, imm);
    } else if (flags & QHCA_CQE_WITH_INV) {
        cqe.invalidated_rkey = cpu_to_le32(imm);
    }
    if (flags & QHCA_CQE_GRH) {
        cqe.network_hdr_type = (flags & QHCA_RECV_IPV6) ?
                               QHCA_NET_ROCE_V2_IPV6 : QHCA_NET_ROCE_V2_IPV4;
    }
    e->have_recv = false;
    if (!qhca_post_cqe(c, qp->recv_cqn, &cqe) ||
        (status != QHCA_CQE_SUCCESS && qp_is_conn(qp))) {
        qhca_qp_to_err(c, qp);
    }
}

/*
 * UC: the message in progress is dropped, and what follows of it; a
 * receive WQE it had taken stays for the next message (nothing of the
 * dropped one completes)
 */
static void uc_drop_msg(QhcaQp *qp, uint32_t psn, QhcaRxDrop why)
{
    QhcaQpEngine *e = qp->eng;

    trace_qhca_uc_drop(qp->qpn, psn, qhca_rx_drop_name(why), why);
    e->uc_drop = true;
    e->resp = RESP_IDLE;
    e->recv_off = 0;
}

/*
 * A class C/D responder error: NAK, report, QP to ERR.  UC answers
 * nothing: an error of the request drops its message, an error of the
 * responder itself (NAK_REMOTE_OP: its receive WQE or memory failed) ends
 * the QP as in RC.
 */
static void resp_error(QhcaCore *c, QhcaQp *qp, uint32_t psn, uint8_t nak,
                       uint8_t event)
{
    if (!qp_is_rc(qp) && nak != QHCA_ROCE_NAK_REMOTE_OP) {
        uc_drop_msg(qp, psn, nak == QHCA_ROCE_NAK_REMOTE_ACCESS ?
                    QHCA_RX_DROP_UC_REMOTE_ACCESS :
                    QHCA_RX_DROP_UC_INVALID_REQ);
        return;
    }
    if (qp_is_rc(qp)) {
        send_ack(c, qp, psn, QHCA_ROCE_AETH_NAK | nak);
    }
    qhca_post_async(c, event, qp->qpn);
    trace_qhca_resp_error(qp->qpn, psn, nak);
    qhca_qp_to_err(c, qp);
}

static void send_atomic_ack(QhcaCore *c, QhcaQp *qp, uint32_t psn,
                            uint64_t orig)
{
    QhcaRoceHdr h = { 0 };

    if (!qhca_rc_addr(c, qp, &h)) {
        return;
    }
    h.opcode = QHCA_ROCE_OP_RC_ATOMIC_ACKNOWLEDGE;
    h.psn = psn;
    h.aeth.syndrome = QHCA_ROCE_AETH_ACK | QHCA_ROCE_AETH_CREDIT_INVALID;
    h.aeth.msn = qp->eng->msn & QHCA_ROCE_MSN_MASK;
    h.atomic_ack_orig = orig;
    qhca_send_simple(c, &h, NULL, 0);
}

/*
 * The response queue (see QhcaRespQEntry)
 */

static QhcaRespQEntry *respq_at(QhcaQpEngine *e, unsigned i)
{
    return &e->respq[(e->respq_head + i) % QHCA_RESPQ_LEN];
}

static void respq_push(QhcaCore *c, QhcaQp *qp, QhcaRespQEntry ent)
{
    QhcaQpEngine *e = qp->eng;
    QhcaRespQEntry *tail = e->respq_count ?
                           respq_at(e, e->respq_count - 1) : NULL;

    /* a later ACK or NAK says all an earlier one said */
    if (ent.kind == RESPQ_ACK && tail && tail->kind == RESPQ_ACK) {
        *tail = ent;
        return;
    }
    if (e->respq_count == QHCA_RESPQ_LEN) {
        /* cannot happen within the resource rules; never overrun */
        QHCA_GUEST_ERROR(c, responder_response_queue_full, qp->qpn,
                         QHCA_RESPQ_LEN);
        return;
    }
    *respq_at(e, e->respq_count++) = ent;
    qp_schedule(c, qp);
}

/*
 * ACK or NAK @psn: now if nothing is waiting, else behind what waits.  UC
 * is never answered: an RNR drops its message.
 */
static void resp_queue_ack(QhcaCore *c, QhcaQp *qp, uint32_t psn,
                           uint8_t syndrome)
{
    if (!qp_is_rc(qp)) {
        if ((syndrome & QHCA_ROCE_AETH_TYPE_MASK) == QHCA_ROCE_AETH_RNR_NAK) {
            uc_drop_msg(qp, psn, QHCA_RX_DROP_UC_NO_RECV_WQE);
        }
        return;
    }
    if (!qp->eng->respq_count) {
        send_ack(c, qp, psn, syndrome);
        return;
    }
    respq_push(c, qp, (QhcaRespQEntry) {
        .kind = RESPQ_ACK, .psn = psn, .syndrome = syndrome,
    });
}

/* The answer to the atomic of resource @r, in order */
static void resp_queue_atomic(QhcaCore *c, QhcaQp *qp, QhcaRdRes *r)
{
    QhcaQpEngine *e = qp->eng;

    if (!e->respq_count) {
        send_atomic_ack(c, qp, r->psn, r->orig);
        return;
    }
    if (!r->queued) {
        r->queued = true;
        respq_push(c, qp, (QhcaRespQEntry) {
            .kind = RESPQ_ATOMIC, .res = r - e->res,
        });
    }
}

/* The responses of READ resource @r from packet @from on, in order */
static void resp_queue_read(QhcaCore *c, QhcaQp *qp, QhcaRdRes *r,
                            uint32_t from)
{
    QhcaQpEngine *e = qp->eng;

    r->next = from;
    if (!r->queued) {
        r->queued = true;
        respq_push(c, qp, (QhcaRespQEntry) {
            .kind = RESPQ_READ, .res = r - e->res,
        });
    }
    qp_schedule(c, qp);
}

/* The QP went to ERR: nothing more is sent */
void qhca_resp_stop(QhcaQp *qp)
{
    QhcaQpEngine *e = qp->eng;
    unsigned i;

    for (i = 0; i < ARRAY_SIZE(e->res); i++) {
        e->res[i].queued = false;
    }
    e->respq_head = 0;
    e->respq_count = 0;
}

/*
 * Send up to *budget response packets of READ resource @r; the memory is
 * checked again for each packet (the MR may have gone meanwhile).  Returns
 * true when the READ is answered completely or failed.
 */
static bool read_respond(QhcaCore *c, QhcaQp *qp, QhcaRdRes *r,
                         unsigned *budget)
{
    uint32_t mtu = qp_mtu(qp);

    while (r->next < r->npkt && *budget) {
        QhcaRoceHdr h = { 0 };
        uint32_t i = r->next;
        uint64_t done = (uint64_t)i * mtu;
        uint32_t n = r->len > done ? MIN(mtu, r->len - done) : 0;
        uint64_t va = r->va + done;
        const QhcaMr *mr = NULL;
        int off;

        if (n) {
            mr = qhca_rkey_check(c, r->rkey, qp->pdn, qp->qpn,
                                 QHCA_ACCESS_REMOTE_READ, va, n, false);
        }
        if (n && !mr && r->replay) {
            /*
             * A duplicate READ whose memory is gone or closed to remote
             * reads since it was answered: a stale copy (a go-back-N
             * retransmission or a probe that crossed the answer), since
             * the consumer that owns the memory let it go only after the
             * READ had completed.  It is dropped, as a duplicate no
             * resource tracks is: an error here would kill a healthy QP
             * (seen after a live migration, whose lost frames make the
             * peer resend).  A requester still waiting for the data
             * times out as it would on a lossy wire.
             */
            trace_qhca_resp_replay_dropped(qp->qpn, psn_add(r->psn, i),
                                           r->rkey);
            r->next = r->npkt;
            return true;
        }
        if ((n && !mr) || !qhca_rc_addr(c, qp, &h)) {
            resp_error(c, qp, psn_add(r->psn, i), QHCA_ROCE_NAK_REMOTE_ACCESS,
                       QHCA_EQE_QP_ACCESS_ERR);
            return true;
        }
        qhca_cc_data_addr(c, &h);
        h.opcode = r->npkt == 1 ? QHCA_ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY :
                   i == 0 ? QHCA_ROCE_OP_RC_RDMA_READ_RESPONSE_FIRST :
                   i == r->npkt - 1 ? QHCA_ROCE_OP_RC_RDMA_READ_RESPONSE_LAST :
                                      QHCA_ROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE;
        h.psn = psn_add(r->psn, i);
        h.aeth.syndrome = QHCA_ROCE_AETH_ACK | QHCA_ROCE_AETH_CREDIT_INVALID;
        h.aeth.msn = qp->eng->msn & QHCA_ROCE_MSN_MASK;
        off = qhca_frame_start(c, &h, n);
        if (off < 0 || (n && !qhca_mr_rw(c, mr, va, c->txbuf + off, n,
                                         false))) {
            resp_error(c, qp, h.psn, QHCA_ROCE_NAK_REMOTE_OP,
                       QHCA_EQE_QP_FATAL);
            return true;
        }
        qhca_frame_send(c, &h, n);
        r->next++;
        (*budget)--;
    }
    return r->next >= r->npkt;
}

/*
 * From the run loop: send what waits in the response queue, in order, up
 * to *budget packets.  True if some is left for the next run.
 */
bool qhca_resp_drain(QhcaCore *c, QhcaQp *qp, unsigned *budget)
{
    QhcaQpEngine *e = qp->eng;

    while (e->respq_count && *budget &&
           qp->attr.qp_state != QHCA_QPS_ERR) {
        QhcaRespQEntry *ent = respq_at(e, 0);
        QhcaRdRes *r = &e->res[ent->res % QHCA_MAX_RD_ATOMIC];

        switch (ent->kind) {
        case RESPQ_READ:
            if (!read_respond(c, qp, r, budget)) {
                return true;
            }
            break;
        case RESPQ_ATOMIC:
            send_atomic_ack(c, qp, r->psn, r->orig);
            (*budget)--;
            break;
        default:
            send_ack(c, qp, ent->psn, ent->syndrome);
            (*budget)--;
            break;
        }
        if (qp->attr.qp_state == QHCA_QPS_ERR) {
            break;              /* resp_error() emptied the queue */
        }
        if (ent->kind != RESPQ_ACK) {
            r->queued = false;
        }
        e->respq_head = (e->respq_head + 1) % QHCA_RESPQ_LEN;
        e->respq_count--;
    }
    return e->respq_count && qp->attr.qp_state != QHCA_QPS_ERR;
}

/* Check an RETH/AtomicETH target; NULL (after the NAK) if not allowed */
static const QhcaMr *resp_target(QhcaCore *c, QhcaQp *qp, uint32_t psn,
                                 uint32_t rkey, uint64_t va, uint64_t len,
                                 uint32_t access)
{
    const QhcaMr *mr = NULL;

    if (le32_to_cpu(qp->attr.access_flags) & access) {
        mr = qhca_rkey_check(c, rkey, qp->pdn, qp->qpn, access, va, len,
                             false);
    } else {
        trace_qhca_err_key(rkey, va, len, "QP does not allow the access");
    }
    if (!mr) {
        resp_error(c, qp, psn, QHCA_ROCE_NAK_REMOTE_ACCESS,
                   QHCA_EQE_QP_ACCESS_ERR);
    }
    return mr;
}

/* Response packets of a READ of @len bytes (64-bit: len may be hostile) */
static uint32_t read_npkt(const QhcaQp *qp, uint64_t len)
{
    return MAX(1, DIV_ROUND_UP(len, qp_mtu(qp)));
}

/*
 * A request already executed came again.  A duplicate READ or atomic is
 * answered only from the responder resource that tracked it (IBA
 * 9.7.5.1.x): a PSN no resource holds is dropped, and a replay never
 * reaches beyond what was asked for the first time.
 */
static void resp_duplicate(QhcaCore *c, QhcaQp *qp, const QhcaRocePkt *pkt)
{
    QhcaQpEngine *e = qp->eng;
    const QhcaRoceHdr *h = &pkt->hdr;
    unsigned i, n = ARRAY_SIZE(e->res);
    bool found = false;

    if (pkt->op->flags & QHCA_ROCE_OPF_READ_ANSWERED) {
        /*
         * PSNs of the request, up to the last one executed; a FLUSH or
         * ATOMIC WRITE has one, answered again without being executed
         */
        uint32_t span = !(pkt->op->flags & QHCA_ROCE_OPF_READ) ? 0 :
                        read_npkt(qp, MIN(h->reth.dma_len,
                                          QHCA_MAX_MSG_BYTES)) - 1;
        uint32_t last = psn_diff(psn_add(h->psn, span), e->epsn) < 0 ?
                        psn_add(h->psn, span) : psn_add(e->epsn, -1);

        /* oldest first: in PSN order */
        for (i = 0; i < n; i++) {
            QhcaRdRes *r = &e->res[(e->res_next + i) % n];
            uint32_t r_last = psn_add(r->psn, r->npkt - 1);

            if (!r->valid || r->atomic ||
                psn_diff(h->psn, r_last) > 0 || psn_diff(last, r->psn) < 0) {
                continue;
            }
            found = true;
            r->replay = true;
            resp_queue_read(c, qp, r, psn_diff(h->psn, r->psn) > 0 ?
                            psn_diff(h->psn, r->psn) : 0);
        }
        if (!found) {
            QHCA_TRACE_RX_DROP_PKT(pkt, qp->qpn,
                                   QHCA_RX_DROP_DUP_READ_UNTRACKED);
        }
        return;
    }
    if (pkt->op->flags & QHCA_ROCE_OPF_ATOMIC) {
        for (i = 0; i < n; i++) {
            if (e->res[i].valid && e->res[i].atomic &&
                e->res[i].psn == h->psn) {
                resp_queue_atomic(c, qp, &e->res[i]);
                return;
            }
        }
        QHCA_TRACE_RX_DROP_PKT(pkt, qp->qpn, QHCA_RX_DROP_DUP_ATOMIC_UNTRACKED);
        return;
    }
    /* SEND or WRITE seen before: acknowledge everything we have */
    resp_queue_ack(c, qp, psn_add(e->epsn, -1),
                   QHCA_ROCE_AETH_ACK | QHCA_ROCE_AETH_CREDIT_INVALID);
}

/*
 * The next responder resource for a READ or atomic at @psn, or NULL (after
 * the NAK) if the oldest is still being answered: the requester has more
 * READs and atomics outstanding than max_dest_rd_atomic allows.
 */
static QhcaRdRes *res_alloc(QhcaCore *c, QhcaQp *qp, uint32_t psn,
                            bool atomic)
{
    QhcaQpEngine *e = qp->eng;
    unsigned n = MIN(MAX(1, qp->attr.max_dest_rd_atomic), QHCA_MAX_RD_ATOMIC);
    QhcaRdRes *r = &e->res[e->res_next % n];

    if (r->queued) {
        QHCA_GUEST_ERROR(c, responder_more_reads_atomics_max_dest_rd, qp->qpn,
                         psn, n);
        resp_error(c, qp, psn, QHCA_ROCE_NAK_INVALID_REQ,
                   QHCA_EQE_QP_REQ_ERR);
        return NULL;
    }
    e->res_next = (e->res_next + 1) % n;
    memset(r, 0, sizeof(*r));
    r->valid = true;
    r->atomic = atomic;
    r->psn = psn;
    return r;
}

/*
 * The responder's checks, in the order of the IBA's responder rules
 * (section 9.7.5.1): each returns false when the packet goes no further,
 * after the NAK, the event or the trace that says why.
 */

/*
 * The QP may receive requests; the first one in RTR establishes it.  SQE
 * (UC only) stops the send queue, not the receive queue.
 */
static bool resp_check_state(QhcaCore *c, QhcaQp *qp, const QhcaRocePkt *pkt)
{
    QhcaQpEngine *e = qp->eng;

    if (qp->attr.qp_state != QHCA_QPS_RTR &&
        qp->attr.qp_state != QHCA_QPS_RTS &&
        qp->attr.qp_state != QHCA_QPS_SQD &&
        qp->attr.qp_state != QHCA_QPS_SQE) {
        QHCA_TRACE_RX_DROP_PKT(pkt, qp->qpn, QHCA_RX_DROP_QP_STATE);
        return false;
    }
    if (qp->attr.qp_state == QHCA_QPS_RTR && !e->comm_est) {
        e->comm_est = true;
        qhca_post_async(c, QHCA_EQE_COMM_EST, qp->qpn);
    }
    return true;
}

/*
 * The PSN: the expected one goes on; one ahead is a sequence error (one NAK
 * until the expected PSN arrives); one behind is a duplicate, answered here
 */
static bool resp_check_psn(QhcaCore *c, QhcaQp *qp, const QhcaRocePkt *pkt)
{
    QhcaQpEngine *e = qp->eng;
    const QhcaRoceHdr *h = &pkt->hdr;
    int32_t d = psn_diff(h->psn, e->epsn);

    if (!qp_is_rc(qp)) {
        /*
         * UC has no duplicates and no NAKs: a packet other than the
         * expected one means packets were lost, and the message they
         * belonged to is dropped; a first packet starts the next message
         * at its own PSN
         */
        if (d != 0 && !e->uc_drop) {
            c->stat_seq_errors++;
            uc_drop_msg(qp, h->psn, QHCA_RX_DROP_UC_PSN);
        }
        if (e->uc_drop) {
            if (!(pkt->op->flags & QHCA_ROCE_OPF_FIRST)) {
                QHCA_TRACE_RX_DROP_PKT(pkt, qp->qpn, QHCA_RX_DROP_UC_REST);
                return false;
            }
            e->uc_drop = false;
            e->epsn = h->psn;
        }
        return true;
    }
    if (d > 0) {
        c->stat_seq_errors++;
        if (!e->nak_sent) {
            e->nak_sent = true;
            resp_queue_ack(c, qp, e->epsn,
                           QHCA_ROCE_AETH_NAK | QHCA_ROCE_NAK_PSN_SEQ_ERR);
        }
        QHCA_TRACE_RX_DROP_PKT(pkt, qp->qpn, QHCA_RX_DROP_PSN_AHEAD);
        return false;
    }
    if (d < 0) {
        c->stat_dup_requests++;
        trace_qhca_rx_dup(qp->qpn, h->psn, e->epsn);
        resp_duplicate(c, qp, pkt);
        return false;
    }
    e->nak_sent = false;
    return true;
}

/* The opcode sequence: middle and last packets continue a message */
static bool resp_check_opseq(QhcaCore *c, QhcaQp *qp, const QhcaRocePkt *pkt)
{
    QhcaQpEngine *e = qp->eng;
    uint32_t f = pkt->op->flags;
    bool ok;

    if (!(f & QHCA_ROCE_OPF_FIRST)) {
        ok = (f & QHCA_ROCE_OPF_SEND) ? e->resp == RESP_SEND :
                                        e->resp == RESP_WRITE;
    } else {
        ok = e->resp == RESP_IDLE;
    }
    if (!ok) {
        resp_error(c, qp, pkt->hdr.psn, QHCA_ROCE_NAK_INVALID_REQ,
                   QHCA_EQE_QP_REQ_ERR);
    }
    return ok;
}

/*
 * Lengths: no packet carries more than the path MTU, and no RETH asks for
 * more than the largest message (IBA 9.7.5.1.x: an invalid request)
 */
static bool resp_check_length(QhcaCore *c, QhcaQp *qp,
                              const QhcaRocePkt *pkt)
{
    uint32_t f = pkt->op->flags;

    if (pkt->payload_len > qp_mtu(qp) ||
        ((f & QHCA_ROCE_OPF_FIRST) && (f & (QHCA_ROCE_OPF_WRITE |
                                             QHCA_ROCE_OPF_READ |
                                             QHCA_ROCE_OPF_FLUSH)) &&
         pkt->hdr.reth.dma_len > QHCA_MAX_MSG_BYTES) ||
        /* ATOMIC WRITE: 8 bytes, said in the RETH and carried (IBA 1.5) */
        ((f & QHCA_ROCE_OPF_ATOMIC_WRITE) &&
         (pkt->payload_len != 8 || pkt->hdr.reth.dma_len != 8))) {
        trace_qhca_err_rx_length(qp->qpn, pkt->hdr.psn, pkt->payload_len,
                                 pkt->hdr.reth.dma_len);
        resp_error(c, qp, pkt->hdr.psn, QHCA_ROCE_NAK_INVALID_REQ,
                   QHCA_EQE_QP_REQ_ERR);
        return false;
    }
    return true;
}

/* A receive WQE for a SEND or WRITE with immediate; RNR NAK if none */
static bool resp_need_recv(QhcaCore *c, QhcaQp *qp, uint32_t psn)
{
    if (qp->eng->have_recv || take_recv(c, qp)) {
        return true;
    }
    resp_queue_ack(c, qp, psn, QHCA_ROCE_AETH_RNR_NAK |
                   (qp->attr.min_rnr_timer & QHCA_ROCE_AETH_VALUE_MASK));
    trace_qhca_rnr(qp->qpn, psn);
    return false;
}

/*
 * The executors: each returns true when the packet was executed and the
 * PSN is to be acknowledged the common way (resp_ack); false when it has
 * answered already (a NAK, an RNR NAK, or a READ or atomic response).
 */

static bool resp_exec_send(QhcaCore *c, QhcaQp *qp, const QhcaRocePkt *pkt,
                           const uint8_t *frame)
{
    QhcaQpEngine *e = qp->eng;
    const QhcaRoceHdr *h = &pkt->hdr;
    uint32_t f = pkt->op->flags;
    uint8_t flags;
    uint32_t extra = 0;
    int r;

    /* a UC receive WQE kept from a dropped message takes this one */
    if ((f & QHCA_ROCE_OPF_FIRST) && !e->have_recv && !take_recv(c, qp)) {
        resp_queue_ack(c, qp, h->psn, QHCA_ROCE_AETH_RNR_NAK |
                       (qp->attr.min_rnr_timer & QHCA_ROCE_AETH_VALUE_MASK));
        trace_qhca_rnr(qp->qpn, h->psn);
        return false;
    }
    if (e->recv_error) {
        qhca_recv_complete(c, qp, QHCA_CQE_LOC_QP_OP_ERR, QHCA_CQE_OP_RECV,
                           0, 0, 0, 0);
        resp_error(c, qp, h->psn, QHCA_ROCE_NAK_REMOTE_OP,
                   QHCA_EQE_QP_FATAL);
        return false;
    }
    r = qhca_sge_copy(c, qp->pdn, e->recv_sge, e->recv_nsge, e->recv_off,
                      (void *)(frame + pkt->payload_off), pkt->payload_len,
                      true);
    if (r != SGE_OK) {
        qhca_recv_complete(c, qp, r == SGE_LEN ? QHCA_CQE_LOC_LEN_ERR :
                           QHCA_CQE_LOC_PROT_ERR, QHCA_CQE_OP_RECV,
                           0, 0, 0, 0);
        resp_error(c, qp, h->psn, r == SGE_LEN ?
                   QHCA_ROCE_NAK_INVALID_REQ : QHCA_ROCE_NAK_REMOTE_OP,
                   r == SGE_LEN ? QHCA_EQE_QP_REQ_ERR : QHCA_EQE_QP_FATAL);
        return false;
    }
    e->recv_off += pkt->payload_len;
    e->resp = RESP_SEND;
    if (!(f & QHCA_ROCE_OPF_LAST)) {
        return true;
    }
    flags = h->se ? QHCA_CQE_SOLICITED : 0;
    if (f & QHCA_ROCE_OPF_INV) {
        if (qhca_mr_invalidate(c, qp->pdn, qp->qpn, h->ieth_rkey)) {
            qhca_recv_complete(c, qp, QHCA_CQE_REM_INV_REQ_ERR,
                               QHCA_CQE_OP_RECV, 0, 0, 0, 0);
            resp_error(c, qp, h->psn, QHCA_ROCE_NAK_INVALID_REQ,
                       QHCA_EQE_QP_REQ_ERR);
            return false;
        }
        flags |= QHCA_CQE_WITH_INV;
        extra = h->ieth_rkey;
    } else if (f & QHCA_ROCE_OPF_IMM) {
        flags |= QHCA_CQE_WITH_IMM;
        extra = h->imm;
    }
    e->msn++;
    e->resp = RESP_IDLE;
    qhca_recv_complete(c, qp, QHCA_CQE_SUCCESS, QHCA_CQE_OP_RECV,
                       e->recv_off, flags, extra, 0);
    return true;
}

static bool resp_exec_write(QhcaCore *c, QhcaQp *qp, const QhcaRocePkt *pkt,
                            const uint8_t *frame)
{
    QhcaQpEngine *e = qp->eng;
    const QhcaRoceHdr *h = &pkt->hdr;
    uint32_t f = pkt->op->flags;

    if (f & QHCA_ROCE_OPF_FIRST) {
        /* The whole RETH range is checked before any byte is written */
        if (h->reth.dma_len &&
            !resp_target(c, qp, h->psn, h->reth.rkey, h->reth.va,
                         h->reth.dma_len, QHCA_ACCESS_REMOTE_WRITE)) {
            return false;
        }
        e->wr_va = h->reth.va;
        e->wr_rkey = h->reth.rkey;
        e->wr_len = h->reth.dma_len;
        e->wr_left = h->reth.dma_len;
    }
    if (pkt->payload_len > e->wr_left ||
        ((f & QHCA_ROCE_OPF_LAST) && pkt->payload_len != e->wr_left)) {
        resp_error(c, qp, h->psn, QHCA_ROCE_NAK_INVALID_REQ,
                   QHCA_EQE_QP_REQ_ERR);
        return false;
    }
    if (f & QHCA_ROCE_OPF_IMM) {
        if (!resp_need_recv(c, qp, h->psn)) {
            return false;
        }
        if (e->recv_error) {
            /* the receive WQE it consumes is malformed */
            qhca_recv_complete(c, qp, QHCA_CQE_LOC_QP_OP_ERR,
                               QHCA_CQE_OP_RECV_RDMA_WITH_IMM, 0, 0, 0, 0);
            resp_error(c, qp, h->psn, QHCA_ROCE_NAK_REMOTE_OP,
                       QHCA_EQE_QP_FATAL);
            return false;
        }
    }
    if (pkt->payload_len) {
        const QhcaMr *mr = resp_target(c, qp, h->psn, e->wr_rkey,
                                       e->wr_va, pkt->payload_len,
                                       QHCA_ACCESS_REMOTE_WRITE);

        if (!mr) {
            return false;
        }
        if (!qhca_mr_rw(c, mr, e->wr_va, (void *)(frame + pkt->payload_off),
                        pkt->payload_len, true)) {
            resp_error(c, qp, h->psn, QHCA_ROCE_NAK_REMOTE_OP,
                       QHCA_EQE_QP_FATAL);
            return false;
        }
    }
    e->wr_va += pkt->payload_len;
    e->wr_left -= pkt->payload_len;
    e->resp = RESP_WRITE;
    if (f & QHCA_ROCE_OPF_LAST) {
        e->resp = RESP_IDLE;
        e->msn++;
        if (f & QHCA_ROCE_OPF_IMM) {
            qhca_recv_complete(c, qp, QHCA_CQE_SUCCESS,
                               QHCA_CQE_OP_RECV_RDMA_WITH_IMM, e->wr_len,
                               QHCA_CQE_WITH_IMM |
                               (h->se ? QHCA_CQE_SOLICITED : 0), h->imm, 0);
        }
    }
    return true;
}

static void resp_exec_read(QhcaCore *c, QhcaQp *qp, const QhcaRocePkt *pkt)
{
    QhcaQpEngine *e = qp->eng;
    const QhcaRoceHdr *h = &pkt->hdr;
    QhcaRdRes *r;

    if (h->reth.dma_len &&
        !resp_target(c, qp, h->psn, h->reth.rkey, h->reth.va,
                     h->reth.dma_len, QHCA_ACCESS_REMOTE_READ)) {
        return;
    }
    r = res_alloc(c, qp, h->psn, false);
    if (!r) {
        return;
    }
    r->rkey = h->reth.rkey;
    r->va = h->reth.va;
    r->len = h->reth.dma_len;
    r->npkt = read_npkt(qp, h->reth.dma_len);
    e->msn++;
    e->epsn = psn_add(e->epsn, r->npkt);
    resp_queue_read(c, qp, r, 0);
}

static void resp_exec_atomic(QhcaCore *c, QhcaQp *qp, const QhcaRocePkt *pkt)
{
    QhcaQpEngine *e = qp->eng;
    const QhcaRoceHdr *h = &pkt->hdr;
    const QhcaMr *mr;
    QhcaRdRes *r;
    uint64_t orig, val;

    if (h->atomic.va & 7) {
        resp_error(c, qp, h->psn, QHCA_ROCE_NAK_INVALID_REQ,
                   QHCA_EQE_QP_REQ_ERR);
        return;
    }
    mr = resp_target(c, qp, h->psn, h->atomic.rkey, h->atomic.va, 8,
                     QHCA_ACCESS_REMOTE_ATOMIC);
    if (!mr) {
        return;
    }
    /* the resource first: an atomic it cannot track is not executed */
    r = res_alloc(c, qp, h->psn, true);
    if (!r) {
        return;
    }
    if (!qhca_mr_rw(c, mr, h->atomic.va, &orig, 8, false)) {
        resp_error(c, qp, h->psn, QHCA_ROCE_NAK_REMOTE_OP, QHCA_EQE_QP_FATAL);
        return;
    }
    orig = le64_to_cpu(orig);
    if (h->opcode == QHCA_ROCE_OP_RC_COMPARE_SWAP) {
        val = orig == h->atomic.compare ? h->atomic.swap_add : orig;
    } else {
        val = orig + h->atomic.swap_add;
    }
    val = cpu_to_le64(val);
    if (!qhca_mr_rw(c, mr, h->atomic.va, &val, 8, true)) {
        resp_error(c, qp, h->psn, QHCA_ROCE_NAK_REMOTE_OP, QHCA_EQE_QP_FATAL);
        return;
    }
    r->orig = orig;
    trace_qhca_atomic_exec(qp->qpn, h->psn, h->atomic.va, orig);
    e->msn++;
    e->epsn = psn_add(e->epsn, 1);
    resp_queue_atomic(c, qp, r);
}

/*
 * FLUSH and ATOMIC WRITE hold a resource like a READ of nothing: their
 * answer is one READ RESPONSE ONLY without payload, again for a duplicate
 */
static void resp_answer_empty_read(QhcaCore *c, QhcaQp *qp, QhcaRdRes *r)
{
    QhcaQpEngine *e = qp->eng;

    r->npkt = 1;
    e->msn++;
    e->epsn = psn_add(e->epsn, 1);
    resp_queue_read(c, qp, r, 0);
}

/*
 * RDMA FLUSH (IBA 1.5): what this responder executed before it is in guest
 * memory already (every request is executed when it arrives, in PSN
 * order), so global visibility needs only that order; persistence is never
 * granted (no MR gets QHCA_FLUSH_PERSISTENT rights: there is no persistent
 * memory behind guest RAM)
 */
static void resp_exec_flush(QhcaCore *c, QhcaQp *qp, const QhcaRocePkt *pkt)
{
    const QhcaRoceHdr *h = &pkt->hdr;
    uint32_t type = h->feth & QHCA_FLUSH_TYPE_MASK;
    uint32_t level = h->feth >> QHCA_FLUSH_LEVEL_SHIFT;
    const QhcaMr *mr = NULL;
    QhcaRdRes *r;

    if (!type || level > QHCA_FLUSH_MR ||
        (type & ~(QHCA_FLUSH_GLOBAL | QHCA_FLUSH_PERSISTENT))) {
        QHCA_TRACE_RX_DROP_PKT(pkt, qp->qpn, QHCA_RX_DROP_FLUSH_FETH);
        resp_error(c, qp, h->psn, QHCA_ROCE_NAK_INVALID_REQ,
                   QHCA_EQE_QP_REQ_ERR);
        return;
    }
    if (!(type & QHCA_FLUSH_PERSISTENT) &&
        (le32_to_cpu(qp->attr.access_flags) & QHCA_ACCESS_FLUSH_GLOBAL)) {
        mr = qhca_rkey_check(c, h->reth.rkey, qp->pdn, qp->qpn,
                             QHCA_ACCESS_FLUSH_GLOBAL, h->reth.va,
                             h->reth.dma_len, level == QHCA_FLUSH_MR);
    } else {
        trace_qhca_err_key(h->reth.rkey, h->reth.va, h->reth.dma_len,
                           "FLUSH: persistence, or QP without FLUSH rights");
    }
    if (!mr) {
        resp_error(c, qp, h->psn, QHCA_ROCE_NAK_REMOTE_ACCESS,
                   QHCA_EQE_QP_ACCESS_ERR);
        return;
    }
    r = res_alloc(c, qp, h->psn, false);
    if (!r) {
        return;
    }
    /*
     * Nothing to wait for: the writes before it were done when they came
     * (QEMU's DMA into guest RAM), and the answer goes out after them
     */
    trace_qhca_flush_exec(qp->qpn, h->psn, h->feth, h->reth.va,
                          h->reth.dma_len);
    resp_answer_empty_read(c, qp, r);
}

/*
 * RDMA ATOMIC WRITE (IBA 1.5): 8 bytes to an 8-byte aligned address with
 * remote write rights, written by one access after all earlier requests;
 * answered like a FLUSH
 */
static void resp_exec_atomic_write(QhcaCore *c, QhcaQp *qp,
                                   const QhcaRocePkt *pkt,
                                   const uint8_t *frame)
{
    const QhcaRoceHdr *h = &pkt->hdr;
    const QhcaMr *mr;
    QhcaRdRes *r;
    uint64_t val;

    if (h->reth.va & 7) {
        trace_qhca_err_key(h->reth.rkey, h->reth.va, 8,
                           "ATOMIC WRITE: not 8-byte aligned");
        resp_error(c, qp, h->psn, QHCA_ROCE_NAK_INVALID_REQ,
                   QHCA_EQE_QP_REQ_ERR);
        return;
    }
    mr = resp_target(c, qp, h->psn, h->reth.rkey, h->reth.va, 8,
                     QHCA_ACCESS_REMOTE_WRITE);
    if (!mr) {
        return;
    }
    /* the resource first: what it cannot track is not executed */
    r = res_alloc(c, qp, h->psn, false);
    if (!r) {
        return;
    }
    memcpy(&val, frame + pkt->payload_off, 8);
    if (!qhca_mr_rw(c, mr, h->reth.va, &val, 8, true)) {
        resp_error(c, qp, h->psn, QHCA_ROCE_NAK_REMOTE_OP, QHCA_EQE_QP_FATAL);
        return;
    }
    trace_qhca_atomic_write_exec(qp->qpn, h->psn, h->reth.va);
    resp_answer_empty_read(c, qp, r);
}

/* A SEND or WRITE packet was executed: the next PSN, and an ACK if asked */
static void resp_ack(QhcaCore *c, QhcaQp *qp, const QhcaRoceHdr *h)
{
    qp->eng->epsn = psn_add(qp->eng->epsn, 1);
    if (h->ack_req) {
        resp_queue_ack(c, qp, h->psn,
                       QHCA_ROCE_AETH_ACK | QHCA_ROCE_AETH_CREDIT_INVALID);
    }
}

/* An RC or UC request packet for @qp */
void qhca_resp_recv(QhcaCore *c, QhcaQp *qp, const QhcaRocePkt *pkt,
                    const uint8_t *frame)
{
    uint32_t f = pkt->op->flags;

    if (!resp_check_state(c, qp, pkt) || !resp_check_psn(c, qp, pkt) ||
        !resp_check_opseq(c, qp, pkt) || !resp_check_length(c, qp, pkt)) {
        return;
    }
    if (f & QHCA_ROCE_OPF_SEND) {
        if (resp_exec_send(c, qp, pkt, frame)) {
            resp_ack(c, qp, &pkt->hdr);
        }
    } else if (f & QHCA_ROCE_OPF_WRITE) {
        if (resp_exec_write(c, qp, pkt, frame)) {
            resp_ack(c, qp, &pkt->hdr);
        }
    } else if (f & QHCA_ROCE_OPF_READ) {
        resp_exec_read(c, qp, pkt);
    } else if (f & QHCA_ROCE_OPF_ATOMIC) {
        resp_exec_atomic(c, qp, pkt);
    } else if (f & QHCA_ROCE_OPF_FLUSH) {
        resp_exec_flush(c, qp, pkt);
    } else if (f & QHCA_ROCE_OPF_ATOMIC_WRITE) {
        resp_exec_atomic_write(c, qp, pkt, frame);
    } else {
        resp_ack(c, qp, &pkt->hdr);
    }
}

/*
 * UD and GSI receive: the 40-byte GRH area, then the payload.  Over IPv6
 * the IPv6 header fills the area (it has the GRH's layout); over IPv4 the
 * IPv4 header is in its last 20 bytes and the rest is zero.
 */
void qhca_ud_recv(QhcaCore *c, QhcaQp *qp, const QhcaRocePkt *pkt,
                  const uint8_t *frame)
{
    const QhcaRoceHdr *h = &pkt->hdr;
    uint8_t grh[QHCA_GRH_SIZE] = { 0 };
    uint32_t qkey = qp->type == QHCA_QPT_GSI ? QHCA_GSI_QKEY :
                    le32_to_cpu(qp->attr.qkey);
    QhcaQpEngine *e = qp->eng;
    unsigned flags = QHCA_CQE_GRH;
    int r;

    if (qp->attr.qp_state != QHCA_QPS_RTR &&
        qp->attr.qp_state != QHCA_QPS_RTS &&
        qp->attr.qp_state != QHCA_QPS_SQD &&
        qp->attr.qp_state != QHCA_QPS_SQE) {
        QHCA_TRACE_RX_DROP_PKT(pkt, qp->qpn, QHCA_RX_DROP_QP_STATE);
        return;
    }
    if (h->deth.qkey != qkey) {
        QHCA_TRACE_RX_DROP_PKT(pkt, qp->qpn, QHCA_RX_DROP_QKEY);
        return;
    }
    if (!take_recv(c, qp)) {
        QHCA_TRACE_RX_DROP_PKT(pkt, qp->qpn, QHCA_RX_DROP_UD_NO_RECV_WQE);
        return;
    }
    if (e->recv_error) {
        qhca_recv_complete(c, qp, QHCA_CQE_LOC_QP_OP_ERR, QHCA_CQE_OP_RECV,
                           0, 0, 0, 0);
        return;
    }
    if (h->ipv6) {
        memcpy(grh, frame + pkt->ip_off, QHCA_ROCE_IPV6_HLEN);
        flags |= QHCA_RECV_IPV6;
    } else {
        memcpy(grh + 20, frame + pkt->ip_off, QHCA_ROCE_IPV4_HLEN);
    }
    r = qhca_sge_copy(c, qp->pdn, e->recv_sge, e->recv_nsge, 0, grh,
                      sizeof(grh), true);
    if (r == SGE_OK) {
        r = qhca_sge_copy(c, qp->pdn, e->recv_sge, e->recv_nsge, sizeof(grh),
                          (void *)(frame + pkt->payload_off), pkt->payload_len,
                          true);
    }
    if (r != SGE_OK) {
        qhca_recv_complete(c, qp, r == SGE_LEN ? QHCA_CQE_LOC_LEN_ERR :
                           QHCA_CQE_LOC_PROT_ERR, QHCA_CQE_OP_RECV, 0, 0, 0, 0);
        return;
    }
    if (pkt->op->flags & QHCA_ROCE_OPF_IMM) {
        flags |= QHCA_CQE_WITH_IMM;
    }
    if (h->se) {
        flags |= QHCA_CQE_SOLICITED;
    }
    qhca_recv_complete(c, qp, QHCA_CQE_SUCCESS, QHCA_CQE_OP_RECV,
                       QHCA_GRH_SIZE + pkt->payload_len, flags, h->imm,
                       h->deth.src_qp);
}

