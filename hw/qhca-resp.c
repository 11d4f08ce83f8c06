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
        !c->ops->dma_read(c->opaque, addr, &w, sizeof(w)) ||
        w.num_sge > max ||
        !c->ops->dma_read(c->opaque, addr + QHCA_RECV_WQE_HDR_SIZE,
                          e->recv_sge, w.num_sge * sizeof(struct qhca_sge))) {
        qhca_guest_error(c, "receive WQE: bad num_sge", r->ci);
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
                        uint8_t opcode, uint32_t byte_len, uint8_t flags,
                        uint32_t imm, uint32_t src_qp)
{
    QhcaQpEngine *e = qp->eng;
    struct qhca_cqe cqe = { 0 };

    cqe.wr_id = cpu_to_le64(e->recv_wr_id);
    cqe.status = status;
    cqe.opcode = opcode;
    cqe.flags = flags;
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
        cqe.network_hdr_type = 2;       /* RoCEv2 over IPv4 */
    }
    e->have_recv = false;
    if (!qhca_post_cqe(c, qp->recv_cqn, &cqe) ||
        (status != QHCA_CQE_SUCCESS && qp_is_rc(qp))) {
        qhca_qp_to_err(c, qp);
    }
}

/* A class C/D responder error: NAK, report, QP to ERR */
static void resp_error(QhcaCore *c, QhcaQp *qp, uint32_t psn, uint8_t nak,
                       uint8_t event)
{
    send_ack(c, qp, psn, QHCA_ROCE_AETH_NAK | nak);
    qhca_post_async(c, event, qp->qpn);
    trace_qhca_resp_error(qp->qpn, psn, nak);
    qhca_qp_to_err(c, qp);
}

/*
 * Send up to @budget response packets of READ resource @r; the memory is
 * checked again for each packet (the MR may have gone meanwhile).  Returns
 * true when the READ is answered completely.
 */
static bool read_respond(QhcaCore *c, QhcaQp *qp, QhcaRdRes *r,
                         unsigned budget)
{
    uint32_t mtu = qp_mtu(qp);

    while (r->sending && budget--) {
        QhcaRoceHdr h = { 0 };
        uint32_t i = r->next;
        uint32_t n = r->len ? MIN(mtu, r->len - i * mtu) : 0;
        uint64_t va = r->va + (uint64_t)i * mtu;
        const QhcaMr *mr = NULL;
        int off;

        if (n) {
            mr = qhca_mr_check(c, r->rkey, qp->pdn, QHCA_ACCESS_REMOTE_READ,
                               va, n);
        }
        if ((n && !mr) || !qhca_rc_addr(c, qp, &h)) {
            r->sending = false;
            resp_error(c, qp, psn_add(r->psn, i), QHCA_ROCE_NAK_REMOTE_ACCESS,
                       QHCA_EQE_QP_ACCESS_ERR);
            return true;
        }
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
            r->sending = false;
            resp_error(c, qp, h.psn, QHCA_ROCE_NAK_REMOTE_OP,
                       QHCA_EQE_QP_FATAL);
            return true;
        }
        qhca_frame_send(c, &h, n);
        if (++r->next == r->npkt) {
            r->sending = false;
        }
    }
    return !r->sending;
}

static void read_start(QhcaQp *qp, QhcaRdRes *r, const QhcaRoceHdr *h)
{
    r->valid = true;
    r->atomic = false;
    r->psn = h->psn;
    r->rkey = h->reth.rkey;
    r->va = h->reth.va;
    r->len = h->reth.dma_len;
    r->next = 0;
    r->npkt = MAX(1, DIV_ROUND_UP(h->reth.dma_len, qp_mtu(qp)));
    r->sending = true;
}

/*
 * Responses go out in PSN order: before the responder answers anything
 * newer, the READ responses still pending are sent in full.
 */
static void read_flush(QhcaCore *c, QhcaQp *qp)
{
    QhcaQpEngine *e = qp->eng;
    unsigned i, n = ARRAY_SIZE(e->res);

    /* the oldest first: resources are used round-robin from res_next */
    for (i = 0; i < n; i++) {
        QhcaRdRes *r = &e->res[(e->res_next + i) % n];

        if (r->sending) {
            read_respond(c, qp, r, UINT_MAX);
        }
    }
    if (e->replay.sending) {
        read_respond(c, qp, &e->replay, UINT_MAX);
    }
}

/* From the run loop: a burst of each pending READ; true if more remain */
bool qhca_read_run(QhcaCore *c, QhcaQp *qp)
{
    QhcaQpEngine *e = qp->eng;
    unsigned i, n = ARRAY_SIZE(e->res);
    bool done = true;

    for (i = 0; i < n; i++) {
        QhcaRdRes *r = &e->res[(e->res_next + i) % n];

        if (r->sending) {
            done = read_respond(c, qp, r, QHCA_READ_BURST);
            break;
        }
    }
    if (done && e->replay.sending) {
        done = read_respond(c, qp, &e->replay, QHCA_READ_BURST);
    }
    for (i = 0; i < n; i++) {
        done &= !e->res[i].sending;
    }
    return !done || e->replay.sending;
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

/* Check an RETH/AtomicETH target; NULL (after the NAK) if not allowed */
static const QhcaMr *resp_target(QhcaCore *c, QhcaQp *qp, uint32_t psn,
                                 uint32_t rkey, uint64_t va, uint64_t len,
                                 uint32_t access)
{
    const QhcaMr *mr = NULL;

    if (le32_to_cpu(qp->attr.access_flags) & access) {
        mr = qhca_mr_check(c, rkey, qp->pdn, access, va, len);
    } else {
        trace_qhca_err_key(rkey, va, len, "QP does not allow the access");
    }
    if (!mr) {
        resp_error(c, qp, psn, QHCA_ROCE_NAK_REMOTE_ACCESS,
                   QHCA_EQE_QP_ACCESS_ERR);
    }
    return mr;
}

static void resp_duplicate(QhcaCore *c, QhcaQp *qp, const QhcaRocePkt *pkt)
{
    QhcaQpEngine *e = qp->eng;
    const QhcaRoceHdr *h = &pkt->hdr;
    unsigned i;

    if (pkt->op->flags & QHCA_ROCE_OPF_READ) {
        /*
         * Replay: read the memory again, at the PSNs of this request (the
         * requester may ask again from the middle of a READ), but only as
         * far as was asked for before: PSNs from epsn on are new requests
         */
        QhcaRoceHdr rh = pkt->hdr;
        uint64_t room = (uint64_t)psn_diff(e->epsn, rh.psn) * qp_mtu(qp);

        rh.reth.dma_len = MIN(rh.reth.dma_len, room);
        if (!(le32_to_cpu(qp->attr.access_flags) & QHCA_ACCESS_REMOTE_READ) ||
            (rh.reth.dma_len &&
             !qhca_mr_check(c, rh.reth.rkey, qp->pdn, QHCA_ACCESS_REMOTE_READ,
                            rh.reth.va, rh.reth.dma_len))) {
            return;
        }
        for (i = 0; i < ARRAY_SIZE(e->res); i++) {
            QhcaRdRes *r = &e->res[i];

            /* asked again while still answering: start that one over */
            if (r->sending && !r->atomic &&
                psn_diff(rh.psn, r->psn) >= 0 &&
                psn_diff(rh.psn, psn_add(r->psn, r->npkt - 1)) <= 0) {
                read_start(qp, r, &rh);
                qp_schedule(c);
                return;
            }
        }
        read_flush(c, qp);
        read_start(qp, &e->replay, &rh);
        qp_schedule(c);
        return;
    }
    read_flush(c, qp);
    if (pkt->op->flags & QHCA_ROCE_OPF_ATOMIC) {
        for (i = 0; i < ARRAY_SIZE(e->res); i++) {
            if (e->res[i].valid && e->res[i].atomic &&
                e->res[i].psn == h->psn) {
                send_atomic_ack(c, qp, h->psn, e->res[i].orig);
            }
        }
        return;
    }
    /* SEND or WRITE seen before: acknowledge everything we have */
    send_ack(c, qp, psn_add(e->epsn, -1),
             QHCA_ROCE_AETH_ACK | QHCA_ROCE_AETH_CREDIT_INVALID);
}

static QhcaRdRes *res_alloc(QhcaQp *qp, uint32_t psn, bool atomic)
{
    QhcaQpEngine *e = qp->eng;
    unsigned n = MAX(1, qp->attr.max_dest_rd_atomic);
    QhcaRdRes *r = &e->res[e->res_next % n];

    /* responses are sent in order: the oldest is finished by now */
    assert(!r->sending);
    e->res_next = (e->res_next + 1) % n;
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

/* The QP may receive requests; the first one in RTR establishes it */
static bool resp_check_state(QhcaCore *c, QhcaQp *qp, const QhcaRocePkt *pkt)
{
    QhcaQpEngine *e = qp->eng;

    if (qp->attr.qp_state != QHCA_QPS_RTR &&
        qp->attr.qp_state != QHCA_QPS_RTS &&
        qp->attr.qp_state != QHCA_QPS_SQD) {
        trace_qhca_rx_drop(pkt->frame_len, "QP cannot receive");
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

    if (d > 0) {
        read_flush(c, qp);
        if (!e->nak_sent) {
            e->nak_sent = true;
            send_ack(c, qp, e->epsn,
                     QHCA_ROCE_AETH_NAK | QHCA_ROCE_NAK_PSN_SEQ_ERR);
        }
        trace_qhca_rx_drop(pkt->frame_len, "PSN ahead: sequence NAK");
        return false;
    }
    if (d < 0) {
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

/* A receive WQE for a SEND or WRITE with immediate; RNR NAK if none */
static bool resp_need_recv(QhcaCore *c, QhcaQp *qp, uint32_t psn)
{
    if (qp->eng->have_recv || take_recv(c, qp)) {
        return true;
    }
    send_ack(c, qp, psn, QHCA_ROCE_AETH_RNR_NAK |
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

    if ((f & QHCA_ROCE_OPF_FIRST) && !take_recv(c, qp)) {
        send_ack(c, qp, h->psn, QHCA_ROCE_AETH_RNR_NAK |
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
        if (qhca_mr_invalidate(c, qp->pdn, h->ieth_rkey)) {
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
    if ((f & QHCA_ROCE_OPF_IMM) && !resp_need_recv(c, qp, h->psn)) {
        return false;
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

    if (h->reth.dma_len &&
        !resp_target(c, qp, h->psn, h->reth.rkey, h->reth.va,
                     h->reth.dma_len, QHCA_ACCESS_REMOTE_READ)) {
        return;
    }
    read_start(qp, res_alloc(qp, h->psn, false), h);
    e->msn++;
    e->epsn = psn_add(e->epsn, MAX(1, DIV_ROUND_UP(h->reth.dma_len,
                                                   qp_mtu(qp))));
    qp_schedule(c);
}

static void resp_exec_atomic(QhcaCore *c, QhcaQp *qp, const QhcaRocePkt *pkt)
{
    QhcaQpEngine *e = qp->eng;
    const QhcaRoceHdr *h = &pkt->hdr;
    const QhcaMr *mr;
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
    res_alloc(qp, h->psn, true)->orig = orig;
    trace_qhca_atomic_exec(qp->qpn, h->psn, h->atomic.va, orig);
    e->msn++;
    e->epsn = psn_add(e->epsn, 1);
    send_atomic_ack(c, qp, h->psn, orig);
}

/* A SEND or WRITE packet was executed: the next PSN, and an ACK if asked */
static void resp_ack(QhcaCore *c, QhcaQp *qp, const QhcaRoceHdr *h)
{
    qp->eng->epsn = psn_add(qp->eng->epsn, 1);
    if (h->ack_req) {
        send_ack(c, qp, h->psn,
                 QHCA_ROCE_AETH_ACK | QHCA_ROCE_AETH_CREDIT_INVALID);
    }
}

/* An RC request packet for @qp */
void qhca_resp_recv(QhcaCore *c, QhcaQp *qp, const QhcaRocePkt *pkt,
                    const uint8_t *frame)
{
    uint32_t f = pkt->op->flags;

    if (!resp_check_state(c, qp, pkt) || !resp_check_psn(c, qp, pkt)) {
        return;
    }
    /* responses go out in PSN order: the pending READ answers first */
    read_flush(c, qp);
    if (!resp_check_opseq(c, qp, pkt)) {
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
    } else {
        resp_ack(c, qp, &pkt->hdr);
    }
}

/* UD and GSI receive: the GRH area, then the payload */
void qhca_ud_recv(QhcaCore *c, QhcaQp *qp, const QhcaRocePkt *pkt,
                  const uint8_t *frame)
{
    const QhcaRoceHdr *h = &pkt->hdr;
    uint8_t grh[QHCA_GRH_SIZE] = { 0 };
    uint32_t qkey = qp->type == QHCA_QPT_GSI ? QHCA_GSI_QKEY :
                    le32_to_cpu(qp->attr.qkey);
    QhcaQpEngine *e = qp->eng;
    uint8_t flags = QHCA_CQE_GRH;
    int r;

    if (qp->attr.qp_state != QHCA_QPS_RTR &&
        qp->attr.qp_state != QHCA_QPS_RTS &&
        qp->attr.qp_state != QHCA_QPS_SQD &&
        qp->attr.qp_state != QHCA_QPS_SQE) {
        trace_qhca_rx_drop(pkt->frame_len, "QP cannot receive");
        return;
    }
    if (h->deth.qkey != qkey) {
        trace_qhca_rx_drop(pkt->frame_len, "Q_Key mismatch");
        return;
    }
    if (!take_recv(c, qp)) {
        trace_qhca_rx_drop(pkt->frame_len, "no receive WQE (UD)");
        return;
    }
    if (e->recv_error) {
        qhca_recv_complete(c, qp, QHCA_CQE_LOC_QP_OP_ERR, QHCA_CQE_OP_RECV,
                           0, 0, 0, 0);
        return;
    }
    memcpy(grh + 20, frame + pkt->ip_off, QHCA_ROCE_IPV4_HLEN);
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

