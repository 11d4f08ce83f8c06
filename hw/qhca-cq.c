/*
 * qhca device logic: completion queues and event queues.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qhca-cq.h"
#include "trace.h"

/*
 * Events and completions
 */

static void qhca_eq_post(QhcaCore *c, uint32_t eqn, uint8_t type,
                         uint32_t obj)
{
    QhcaEq *eq = eqn < QHCA_MAX_EQS ? c->eq[eqn] : NULL;
    struct qhca_eqe eqe = { .type = type, .obj = cpu_to_le32(obj) };

    if (!eq) {
        return;
    }
    if (qhca_ring_full(&eq->ring)) {
        QHCA_GUEST_ERROR(c, eq_overflow_event_dropped, eqn, type, obj);
        return;
    }
    if (!qhca_ring_produce(c, &eq->ring, &eqe, sizeof(eqe),
                           offsetof(struct qhca_eqe, owner))) {
        QHCA_GUEST_ERROR(c, eq_dma_write_failed, eqn, eq->ring.pi, type, obj);
        return;
    }
    trace_qhca_eqe(eqn, type, obj);
    if (eq->armed) {
        eq->armed = false;
        trace_qhca_irq(eq->vector);
        qhca_op_irq(c, eq->vector);
    }
}

void qhca_post_async(QhcaCore *c, uint8_t type, uint32_t obj)
{
    struct qhca_eqe eqe = { .type = type, .obj = cpu_to_le32(obj) };

    if (!(c->status & QHCA_STATUS_READY)) {
        return;
    }
    if (qhca_hostq_full(&c->aeq)) {
        QHCA_GUEST_ERROR(c, async_eq_overflow_event_dropped, type, obj);
        return;
    }
    if (!qhca_hostq_produce(c, &c->aeq, &eqe, sizeof(eqe),
                            offsetof(struct qhca_eqe, owner),
                            QHCA_EQE_SIZE)) {
        c->status |= QHCA_STATUS_FATAL;
        c->fatal_code = QHCA_FATAL_AEQ_DMA;
        return;
    }
    trace_qhca_eqe(0, type, obj);
    qhca_hostq_notify(c, &c->aeq);
}

void qhca_cq_event(QhcaCore *c, uint32_t cqn, QhcaCq *cq)
{
    cq->arm = QHCA_CQ_DISARMED;
    qhca_eq_post(c, cq->eqn, QHCA_EQE_COMPLETION, cqn);
}

/* Returns false if the CQ is gone, broken or full (the CQE is lost) */
bool qhca_post_cqe(QhcaCore *c, uint32_t cqn, struct qhca_cqe *cqe)
{
    QhcaCq *cq = cqn < QHCA_MAX_CQ ? c->cq[cqn] : NULL;
    bool solicited;

    if (!cq || cq->error) {
        return false;
    }
    if (qhca_ring_full(&cq->ring)) {
        cq->error = true;
        QHCA_GUEST_ERROR(c, cq_overflow, cqn, 1u << cq->ring.log_depth,
                         le32_to_cpu(cqe->qpn), cqe->status, cqe->opcode);
        qhca_post_async(c, QHCA_EQE_CQ_ERROR, cqn);
        return false;
    }
    if (!qhca_ring_produce(c, &cq->ring, cqe, sizeof(*cqe),
                           offsetof(struct qhca_cqe, owner))) {
        cq->error = true;
        QHCA_GUEST_ERROR(c, cq_dma_write_failed, cqn, cq->ring.pi,
                         le32_to_cpu(cqe->qpn), cqe->status, cqe->opcode);
        qhca_post_async(c, QHCA_EQE_CQ_ERROR, cqn);
        return false;
    }
    trace_qhca_cqe(cqn, le32_to_cpu(cqe->qpn), cqe->status, cqe->opcode,
                   le32_to_cpu(cqe->byte_len));
    solicited = (cqe->flags & QHCA_CQE_SOLICITED) ||
                cqe->status != QHCA_CQE_SUCCESS;
    if (cq->arm == QHCA_CQ_ARM_NEXT ||
        (cq->arm == QHCA_CQ_ARM_SOLICITED && solicited)) {
        qhca_cq_event(c, cqn, cq);
    }
    return true;
}
