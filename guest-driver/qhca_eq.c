// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * qhca: event queues.
 *
 * Vector 0 signals command completions and the async event queue (AEQ,
 * set up through registers); each further vector has a completion event
 * queue (CREATE_EQ) that names CQs with new completions.  An EQ raises its
 * interrupt once per arming: the handler consumes the entries, then writes
 * the consumer index with the arm bit (the device interrupts again at once
 * if more entries arrived meanwhile).
 *
 * Events name objects by number.  The lookups take a reference under the
 * table's (interrupt-safe) lock; destroy removes the object from its table
 * and waits for the references to go.
 */

#include <linux/slab.h>

#include "qhca.h"

/* Completion EQ entries consumed between consumer index updates */
#define QHCA_EQ_CI_BATCH	128

static void qhca_qp_event(struct qhca_dev *dev, u32 qpn,
			  enum ib_event_type type)
{
	struct qhca_qp *qp = qhca_qp_get(dev, qpn);
	struct ib_event ev = {};

	if (!qp) {
		ibdev_dbg(&dev->ibdev, "event %d for unknown QP %u\n", type,
			  qpn);
		return;
	}
	if (type == IB_EVENT_QP_FATAL || type == IB_EVENT_QP_REQ_ERR ||
	    type == IB_EVENT_QP_ACCESS_ERR)
		WRITE_ONCE(qp->state, IB_QPS_ERR);
	if (qp->ibqp.event_handler) {
		ev.device = &dev->ibdev;
		ev.element.qp = &qp->ibqp;
		ev.event = type;
		qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
	}
	qhca_qp_put(qp);
}

static void qhca_cq_event(struct qhca_dev *dev, u32 cqn)
{
	struct qhca_cq *cq = qhca_cq_get(dev, cqn);
	struct ib_event ev = {};

	if (!cq)
		return;
	ibdev_err_ratelimited(&dev->ibdev, "CQ %u error (overflow?)\n", cqn);
	if (cq->ibcq.event_handler) {
		ev.device = &dev->ibdev;
		ev.element.cq = &cq->ibcq;
		ev.event = IB_EVENT_CQ_ERR;
		cq->ibcq.event_handler(&ev, cq->ibcq.cq_context);
	}
	qhca_cq_put(cq);
}

static void qhca_srq_event(struct qhca_dev *dev, u32 srqn)
{
	struct qhca_srq *srq = qhca_srq_get(dev, srqn);
	struct ib_event ev = {};

	if (!srq)
		return;
	if (srq->ibsrq.event_handler) {
		ev.device = &dev->ibdev;
		ev.element.srq = &srq->ibsrq;
		ev.event = IB_EVENT_SRQ_LIMIT_REACHED;
		srq->ibsrq.event_handler(&ev, srq->ibsrq.srq_context);
	}
	qhca_srq_put(srq);
}

static void qhca_aeqe(struct qhca_dev *dev, u8 type, u32 obj)
{
	switch (type) {
	case QHCA_EQE_CQ_ERROR:
		qhca_cq_event(dev, obj);
		break;
	case QHCA_EQE_QP_FATAL:
		qhca_qp_event(dev, obj, IB_EVENT_QP_FATAL);
		break;
	case QHCA_EQE_QP_REQ_ERR:
		qhca_qp_event(dev, obj, IB_EVENT_QP_REQ_ERR);
		break;
	case QHCA_EQE_QP_ACCESS_ERR:
		qhca_qp_event(dev, obj, IB_EVENT_QP_ACCESS_ERR);
		break;
	case QHCA_EQE_COMM_EST:
		qhca_qp_event(dev, obj, IB_EVENT_COMM_EST);
		break;
	case QHCA_EQE_SQ_DRAINED:
		qhca_qp_event(dev, obj, IB_EVENT_SQ_DRAINED);
		break;
	case QHCA_EQE_LAST_WQE_REACHED:
		qhca_qp_event(dev, obj, IB_EVENT_QP_LAST_WQE_REACHED);
		break;
	case QHCA_EQE_SRQ_LIMIT:
		qhca_srq_event(dev, obj);
		break;
	case QHCA_EQE_PORT_ACTIVE:
	case QHCA_EQE_PORT_ERR:
		/* Combined with the netdev's state under the RTNL */
		WRITE_ONCE(dev->hw_link_up, type == QHCA_EQE_PORT_ACTIVE);
		schedule_work(&dev->port_work);
		break;
	case QHCA_EQE_DEVICE_FATAL:
		qhca_dev_set_dead(dev, "fatal error event");
		break;
	default:
		ibdev_warn_ratelimited(&dev->ibdev,
				       "unknown async event %u (%u)\n", type,
				       obj);
		break;
	}
}

static void qhca_aeq_poll(struct qhca_dev *dev)
{
	const u32 depth = 1u << QHCA_AEQ_LOG_DEPTH;

	for (;;) {
		struct qhca_eqe *eqe = dev->aeq.buf +
			(dev->aeq_ci & (depth - 1)) * QHCA_EQE_SIZE;

		if (!qhca_owner_ok(READ_ONCE(eqe->owner), dev->aeq_ci, depth))
			break;
		dma_rmb();
		qhca_aeqe(dev, eqe->type, le32_to_cpu(eqe->obj));
		dev->aeq_ci++;
	}
	qhca_kdb(dev, QHCA_DB_AEQ, dev->aeq_ci | QHCA_DB_AEQ_ARM);
}

/* Vector 0: command completions and async events */
irqreturn_t qhca_async_irq(int irq, void *data)
{
	struct qhca_dev *dev = data;

	atomic64_inc(&dev->async_irqs);
	qhca_cmdq_poll(dev, true);
	qhca_aeq_poll(dev);
	return IRQ_HANDLED;
}

/* The device is enabled: arm the async EQ. */
void qhca_aeq_start(struct qhca_dev *dev)
{
	qhca_kdb(dev, QHCA_DB_AEQ, dev->aeq_ci | QHCA_DB_AEQ_ARM);
}

static void qhca_ceq_arm(struct qhca_eq *eq)
{
	qhca_kdb(eq->dev, QHCA_DB_EQ, eq->eqn | QHCA_DB_EQ_ARM |
		 (u32)eq->ci << QHCA_DB_IDX_SHIFT);
}

/* A completion vector: call the completion handlers of the CQs named */
static irqreturn_t qhca_ceq_irq(int irq, void *data)
{
	struct qhca_eq *eq = data;
	struct qhca_dev *dev = eq->dev;

	for (;;) {
		struct qhca_eqe *eqe = qhca_ring_entry(&eq->ring, eq->ci);
		struct qhca_cq *cq;

		if (!qhca_owner_ok(READ_ONCE(eqe->owner), eq->ci,
				   eq->ring.depth))
			break;
		dma_rmb();
		if (eqe->type == QHCA_EQE_COMPLETION) {
			cq = qhca_cq_get(dev, le32_to_cpu(eqe->obj));
			if (cq) {
				if (cq->ibcq.comp_handler)
					cq->ibcq.comp_handler(&cq->ibcq,
							      cq->ibcq.cq_context);
				qhca_cq_put(cq);
			}
		} else {
			ibdev_warn_ratelimited(&dev->ibdev,
					       "EQ %u: unexpected event %u\n",
					       eq->eqn, eqe->type);
		}
		/* A long run: give the device room before the end */
		if (!(++eq->ci % QHCA_EQ_CI_BATCH))
			qhca_kdb(dev, QHCA_DB_EQ, eq->eqn |
				 (u32)eq->ci << QHCA_DB_IDX_SHIFT);
	}
	qhca_ceq_arm(eq);
	return IRQ_HANDLED;
}

static int qhca_ceq_create(struct qhca_dev *dev, struct qhca_eq *eq,
			   u16 vector)
{
	struct qhca_cmd_create_eq cmd = {};
	struct qhca_pbl pbl;
	u32 eqn;
	int ret;

	eq->dev = dev;
	eq->vector = vector;
	ret = qhca_ring_alloc(dev, &eq->ring, 1u << QHCA_CEQ_LOG_DEPTH,
			      ilog2(QHCA_EQE_SIZE));
	if (ret)
		return ret;

	ret = qhca_ring_pbl(dev, &eq->ring, &pbl, &cmd.mem);
	if (ret)
		return ret;
	cmd.log_depth = QHCA_CEQ_LOG_DEPTH;
	cmd.vector = cpu_to_le32(vector);
	ret = qhca_cmd(dev, QHCA_CMD_CREATE_EQ, &cmd, sizeof(cmd), &eqn);
	qhca_pbl_free(dev, &pbl);
	if (ret)
		return ret;
	eq->eqn = eqn;
	eq->created = true;

	ret = pci_request_irq(dev->pdev, vector, qhca_ceq_irq, NULL, eq,
			      "qhca-comp%u@pci:%s", vector - 1,
			      pci_name(dev->pdev));
	if (ret)
		return ret;
	eq->irq_requested = true;
	qhca_ceq_arm(eq);
	return 0;
}

/* One completion EQ per vector after the async one */
int qhca_ceqs_init(struct qhca_dev *dev)
{
	u32 i;
	int ret;

	dev->num_ceqs = min_t(u32, dev->num_vectors - 1,
			      le32_to_cpu(dev->attr.max_eq));
	if (!dev->num_ceqs) {
		ibdev_err(&dev->ibdev, "no completion vector\n");
		return -ENODEV;
	}
	dev->ceqs = kcalloc(dev->num_ceqs, sizeof(*dev->ceqs), GFP_KERNEL);
	if (!dev->ceqs)
		return -ENOMEM;

	for (i = 0; i < dev->num_ceqs; i++) {
		ret = qhca_ceq_create(dev, &dev->ceqs[i], i + 1);
		if (ret) {
			ibdev_err(&dev->ibdev,
				  "cannot set up completion EQ %u: %d\n", i,
				  ret);
			dev->num_ceqs = i + 1;
			qhca_ceqs_stop(dev);
			qhca_ceqs_free(dev);
			return ret;
		}
	}
	return 0;
}

/* Free the completion interrupts and destroy the EQs in the device */
void qhca_ceqs_stop(struct qhca_dev *dev)
{
	struct qhca_eq *eq;
	u32 i;

	for (i = 0; i < dev->num_ceqs; i++) {
		eq = &dev->ceqs[i];
		if (eq->irq_requested)
			pci_free_irq(dev->pdev, eq->vector, eq);
		eq->irq_requested = false;
		if (eq->created)
			qhca_cmd_destroy(dev, QHCA_CMD_DESTROY_EQ, eq->eqn, 0);
		eq->created = false;
	}
}

/* Free the EQ memory: only once the device cannot write it (reset) */
void qhca_ceqs_free(struct qhca_dev *dev)
{
	u32 i;

	if (!dev->ceqs)
		return;
	for (i = 0; i < dev->num_ceqs; i++)
		qhca_ring_free(dev, &dev->ceqs[i].ring);
	kfree(dev->ceqs);
	dev->ceqs = NULL;
	dev->num_ceqs = 0;
}
