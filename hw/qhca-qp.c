/*
 * qhca QP engine.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qhca-qp.h"
#include "trace.h"

typedef struct QhcaQpEngine {
    uint16_t sq_pi;             /* from the SQ doorbell */
    uint16_t rq_pi;             /* from the RQ doorbell */
} QhcaQpEngine;

void qhca_qp_engine_create(QhcaCore *c, QhcaQp *qp)
{
    qp->eng = g_new0(QhcaQpEngine, 1);
}

void qhca_qp_engine_destroy(QhcaCore *c, QhcaQp *qp)
{
    g_free(qp->eng);
    qp->eng = NULL;
}

void qhca_qp_engine_modified(QhcaCore *c, QhcaQp *qp, uint8_t from,
                             uint8_t to, uint32_t mask)
{
    if (to == QHCA_QPS_RESET) {
        /* Software starts over at index 0 after a reset */
        qp->sq.pi = qp->sq.ci = 0;
        qp->rq.pi = qp->rq.ci = 0;
        qp->eng->sq_pi = qp->eng->rq_pi = 0;
    }
    if (to == QHCA_QPS_ERR && from != QHCA_QPS_ERR) {
        c->ops->schedule(c->opaque);
    }
}

bool qhca_qp_engine_sq_draining(QhcaCore *c, QhcaQp *qp)
{
    return false;
}

void qhca_qp_engine_doorbell(QhcaCore *c, QhcaQp *qp, bool sq, uint16_t pi)
{
    QhcaRing *r = sq ? &qp->sq : &qp->rq;

    if (!sq && qp->srqn != QHCA_NO_SRQ) {
        qhca_guest_error(c, "RQ doorbell for a QP with an SRQ", qp->qpn);
        return;
    }
    if ((uint16_t)(pi - r->ci) > (1u << r->log_depth)) {
        qhca_guest_error(c, "QP doorbell: more WQEs than entries", pi);
        return;
    }
    if (sq) {
        qp->eng->sq_pi = pi;
    } else {
        qp->eng->rq_pi = pi;
    }
    c->ops->schedule(c->opaque);
}

/* Complete every posted WQE of @r with WR_FLUSH_ERR */
static void qhca_flush_ring(QhcaCore *c, QhcaQp *qp, QhcaRing *r,
                            uint16_t pi, bool sq)
{
    while (r->ci != pi) {
        struct qhca_cqe cqe = { 0 };
        uint64_t addr, wr_id = 0;

        if (qhca_ring_entry_addr(r, r->ci, &addr) &&
            c->ops->dma_read(c->opaque, addr, &wr_id, sizeof(wr_id))) {
            cqe.wr_id = wr_id;      /* already little-endian */
        }
        cqe.status = QHCA_CQE_WR_FLUSH_ERR;
        cqe.opcode = sq ? QHCA_CQE_OP_SEND : QHCA_CQE_OP_RECV;
        cqe.qpn = cpu_to_le32(qp->qpn);
        cqe.wqe_index = cpu_to_le16(r->ci);
        if (!qhca_post_cqe(c, sq ? qp->send_cqn : qp->recv_cqn, &cqe)) {
            return;
        }
        r->ci++;
    }
}

void qhca_qp_engine_run(QhcaCore *c)
{
    uint32_t i;

    for (i = 1; i < QHCA_MAX_QP; i++) {
        QhcaQp *qp = qhca_core_qp(c, i);

        if (!qp || qp->attr.qp_state != QHCA_QPS_ERR) {
            continue;
        }
        qhca_flush_ring(c, qp, &qp->sq, qp->eng->sq_pi, true);
        if (qp->srqn == QHCA_NO_SRQ) {
            qhca_flush_ring(c, qp, &qp->rq, qp->eng->rq_pi, false);
        }
    }
}

void qhca_qp_engine_timer(QhcaCore *c)
{
}

void qhca_qp_engine_receive(QhcaCore *c, const uint8_t *frame, size_t len)
{
    c->stat_rx_dropped++;
    trace_qhca_rx_drop(len, "no transport yet");
}

void qhca_srq_check_limit(QhcaCore *c, uint32_t srqn, QhcaSrq *srq)
{
    uint16_t avail = srq->ring.pi - srq->ring.ci;

    if (srq->limit && avail < srq->limit) {
        srq->limit = 0;
        qhca_post_async(c, QHCA_EQE_SRQ_LIMIT, srqn);
    }
}
