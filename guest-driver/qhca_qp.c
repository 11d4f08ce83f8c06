// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * qhca: queue pairs (RC, UD and the GSI QP1) and shared receive queues.
 *
 * Queue geometry (depths, strides, the caps a stride holds) follows the
 * rules of qhca_hw.h ("Queue geometry"), which the rdma-core provider
 * applies too: it allocates user rings before the create and sends the
 * depths, the kernel checks them against its own result and returns that
 * result in the create response, and the provider refuses a create whose
 * response differs from what it computed (docs/abi.md).
 *
 * Kernel queues are posted to here; their entries are reused once a CQE
 * (polled in qhca_cq.c) says the device is done with them.  SQ and RQ
 * entries complete in order; SRQ entries in any order, so an SRQ keeps a
 * bitmap of completed entries.
 */

#include <linux/bitmap.h>
#include <linux/log2.h>
#include <linux/slab.h>
#include <rdma/ib_cache.h>
#include <rdma/uverbs_ioctl.h>

#include "qhca.h"
#include "qhca-abi.h"

static int qhca_sq_geom(struct qhca_dev *dev, const struct ib_qp_cap *cap,
			struct qhca_wq_geom *g)
{
	if (cap->max_inline_data > le32_to_cpu(dev->attr.max_inline))
		return -EINVAL;
	if (qhca_geom_sq(cap->max_send_wr, cap->max_send_sge,
			 cap->max_inline_data, dev->max_qp_wr, g))
		return -EINVAL;
	return 0;
}

static int qhca_rq_geom(u32 max_wr, u32 max_sge, u32 max_depth,
			struct qhca_wq_geom *g)
{
	return qhca_geom_rq(max_wr, max_sge, max_depth, g) ? -EINVAL : 0;
}

static void qhca_wq_init(struct qhca_wq *wq, const struct qhca_wq_geom *g)
{
	spin_lock_init(&wq->lock);
	wq->pi = 0;
	wq->ci = 0;
	wq->max_sge = g->max_sge;
	wq->max_inline = g->max_inline;
}

/* Memory of a work queue: the provider's (pinned) or the kernel's */
static int qhca_wq_ring(struct qhca_dev *dev, struct qhca_wq *wq,
			const struct qhca_wq_geom *g, bool user, u64 va)
{
	if (user)
		return qhca_ring_pin(dev, &wq->ring, va, g->depth,
				     g->log_stride);
	return qhca_ring_alloc(dev, &wq->ring, g->depth, g->log_stride);
}

/* ---- lookups for event dispatch ---- */

struct qhca_qp *qhca_qp_get(struct qhca_dev *dev, u32 qpn)
{
	struct qhca_qp *qp;
	unsigned long flags;

	xa_lock_irqsave(&dev->qp_xa, flags);
	qp = xa_load(&dev->qp_xa, qpn);
	if (qp && !refcount_inc_not_zero(&qp->refcount))
		qp = NULL;
	xa_unlock_irqrestore(&dev->qp_xa, flags);
	return qp;
}

void qhca_qp_put(struct qhca_qp *qp)
{
	if (refcount_dec_and_test(&qp->refcount))
		complete(&qp->free);
}

struct qhca_srq *qhca_srq_get(struct qhca_dev *dev, u32 srqn)
{
	struct qhca_srq *srq;
	unsigned long flags;

	xa_lock_irqsave(&dev->srq_xa, flags);
	srq = xa_load(&dev->srq_xa, srqn);
	if (srq && !refcount_inc_not_zero(&srq->refcount))
		srq = NULL;
	xa_unlock_irqrestore(&dev->srq_xa, flags);
	return srq;
}

void qhca_srq_put(struct qhca_srq *srq)
{
	if (refcount_dec_and_test(&srq->refcount))
		complete(&srq->free);
}

/* ---- queue pairs ---- */

static int qhca_qp_check_attr(struct qhca_dev *dev,
			      const struct ib_qp_init_attr *attr,
			      struct ib_udata *udata, u8 *hw_type)
{
	if (attr->create_flags || attr->rwq_ind_tbl || attr->xrcd)
		return -EOPNOTSUPP;
	switch (attr->qp_type) {
	case IB_QPT_RC:
		if (!(dev->caps & QHCA_CAP_RC))
			return -EOPNOTSUPP;
		*hw_type = QHCA_QPT_RC;
		break;
	case IB_QPT_UC:
		if (!(dev->caps & QHCA_CAP_UC))
			return -EOPNOTSUPP;
		*hw_type = QHCA_QPT_UC;
		break;
	case IB_QPT_UD:
		if (!(dev->caps & QHCA_CAP_UD))
			return -EOPNOTSUPP;
		*hw_type = QHCA_QPT_UD;
		break;
	case IB_QPT_GSI:
		if (udata || attr->srq)
			return -EINVAL;
		*hw_type = QHCA_QPT_GSI;
		break;
	default:
		return -EOPNOTSUPP;
	}
	if (!attr->send_cq || !attr->recv_cq)
		return -EINVAL;
	if (attr->srq && !(dev->caps & QHCA_CAP_SRQ))
		return -EOPNOTSUPP;
	return 0;
}

static void qhca_qp_rings_free(struct qhca_dev *dev, struct qhca_qp *qp)
{
	qhca_ring_free(dev, &qp->sq.ring);
	qhca_ring_free(dev, &qp->rq.ring);
}

static int qhca_qp_create_cmd(struct qhca_dev *dev, struct qhca_qp *qp,
			      struct ib_qp_init_attr *attr,
			      struct ib_udata *udata)
{
	struct qhca_cmd_create_qp cmd = {};
	struct qhca_pbl sq_pbl, rq_pbl = {};
	int ret;

	ret = qhca_ring_pbl(dev, &qp->sq.ring, &sq_pbl, &cmd.sq);
	if (ret)
		return ret;
	if (!qp->srq) {
		ret = qhca_ring_pbl(dev, &qp->rq.ring, &rq_pbl, &cmd.rq);
		if (ret)
			goto out;
		cmd.rq_log_depth = ilog2(qp->rq.ring.depth);
		cmd.rq_log_stride = qp->rq.ring.log_stride;
	}
	cmd.type = qp->hw_type;
	cmd.sq_log_depth = ilog2(qp->sq.ring.depth);
	cmd.sq_log_stride = qp->sq.ring.log_stride;
	cmd.sq_sig_all = qp->sig_all;
	cmd.pdn = cpu_to_le32(to_qhca_pd(qp->ibqp.pd)->pdn);
	cmd.send_cqn = cpu_to_le32(to_qhca_cq(attr->send_cq)->cqn);
	cmd.recv_cqn = cpu_to_le32(to_qhca_cq(attr->recv_cq)->cqn);
	cmd.srqn = cpu_to_le32(qp->srq ? qp->srq->srqn : QHCA_NO_SRQ);
	cmd.db_page = cpu_to_le32(qhca_ucontext_db_page(udata));
	cmd.max_inline = cpu_to_le32(qp->sq.max_inline);
	ret = qhca_cmd(dev, QHCA_CMD_CREATE_QP, &cmd, sizeof(cmd), &qp->qpn);
out:
	qhca_pbl_free(dev, &rq_pbl);
	qhca_pbl_free(dev, &sq_pbl);
	return ret;
}

int qhca_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *attr,
		   struct ib_udata *udata)
{
	struct qhca_dev *dev = to_qhca_dev(ibqp->device);
	struct qhca_qp *qp = to_qhca_qp(ibqp);
	struct qhca_create_qp_cmd ucmd = {};
	struct qhca_wq_geom sqg, rqg = {};
	int ret;

	ret = qhca_qp_check_attr(dev, attr, udata, &qp->hw_type);
	if (ret)
		return ret;
	qp->srq = attr->srq ? to_qhca_srq(attr->srq) : NULL;
	qp->user = !!udata;
	qp->sig_all = attr->sq_sig_type == IB_SIGNAL_ALL_WR;
	qp->state = IB_QPS_RESET;
	mutex_init(&qp->state_lock);
	refcount_set(&qp->refcount, 1);
	init_completion(&qp->free);

	ret = qhca_sq_geom(dev, &attr->cap, &sqg);
	if (!ret && !qp->srq)
		ret = qhca_rq_geom(attr->cap.max_recv_wr, attr->cap.max_recv_sge,
				   dev->max_qp_wr, &rqg);
	if (ret) {
		ibdev_dbg(&dev->ibdev, "QP caps out of range\n");
		goto err_mutex;
	}

	if (udata) {
		ret = qhca_udata_in(udata, &ucmd, sizeof(ucmd));
		if (ret)
			goto err_mutex;
		if (ucmd.sq_depth != sqg.depth ||
		    (qp->srq && (ucmd.rq_va || ucmd.rq_depth)) ||
		    (!qp->srq && ucmd.rq_depth != rqg.depth)) {
			ibdev_dbg(&dev->ibdev,
				  "QP depths %u/%u, caps give %u/%u\n",
				  ucmd.sq_depth, ucmd.rq_depth, sqg.depth,
				  rqg.depth);
			ret = -EINVAL;
			goto err_mutex;
		}
	}

	qhca_wq_init(&qp->sq, &sqg);
	qhca_wq_init(&qp->rq, &rqg);
	ret = qhca_wq_ring(dev, &qp->sq, &sqg, qp->user, ucmd.sq_va);
	if (!ret && !qp->srq)
		ret = qhca_wq_ring(dev, &qp->rq, &rqg, qp->user, ucmd.rq_va);
	if (ret)
		goto err_rings;

	ret = qhca_qp_create_cmd(dev, qp, attr, udata);
	if (ret)
		goto err_rings;
	ibqp->qp_num = qp->qpn;

	ret = xa_insert_irq(&dev->qp_xa, qp->qpn, qp, GFP_KERNEL);
	if (ret)
		goto err_destroy;

	attr->cap.max_send_wr = sqg.depth;
	attr->cap.max_send_sge = sqg.max_sge;
	attr->cap.max_inline_data = sqg.max_inline;
	attr->cap.max_recv_wr = rqg.depth;
	attr->cap.max_recv_sge = rqg.max_sge;

	if (udata) {
		struct qhca_create_qp_resp resp = {
			.qpn = qp->qpn,
			.sq_depth = sqg.depth,
			.rq_depth = rqg.depth,
			.comp_mask = QHCA_CREATE_RESP_GEOMETRY,
			.sq_log_stride = sqg.log_stride,
			.rq_log_stride = rqg.log_stride,
			.max_send_sge = sqg.max_sge,
			.max_recv_sge = rqg.max_sge,
			.max_inline = sqg.max_inline,
		};

		ret = qhca_udata_out(udata, &resp, sizeof(resp));
		if (ret)
			goto err_xa;
	}

	atomic_inc(&dev->num_objects);
	return 0;

err_xa:
	xa_erase_irq(&dev->qp_xa, qp->qpn);
	qhca_qp_put(qp);
	wait_for_completion(&qp->free);
err_destroy:
	qhca_cmd_destroy(dev, QHCA_CMD_DESTROY_QP, qp->qpn, 0);
err_rings:
	qhca_qp_rings_free(dev, qp);
err_mutex:
	mutex_destroy(&qp->state_lock);
	return ret;
}

int qhca_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct qhca_dev *dev = to_qhca_dev(ibqp->device);
	struct qhca_qp *qp = to_qhca_qp(ibqp);

	/*
	 * Out of the table before the device forgets the number (which it
	 * may hand out again at once); then no event handler runs and no
	 * poller uses it.
	 */
	xa_erase_irq(&dev->qp_xa, qp->qpn);
	qhca_qp_put(qp);
	wait_for_completion(&qp->free);

	qhca_cmd_destroy(dev, QHCA_CMD_DESTROY_QP, qp->qpn, 0);
	qhca_qp_rings_free(dev, qp);
	mutex_destroy(&qp->state_lock);
	atomic_dec(&dev->num_objects);
	return 0;
}

/* The attributes that carry a value for the device */
#define QHCA_QP_HW_MASK	(IB_QP_STATE | IB_QP_CUR_STATE |		\
			 IB_QP_EN_SQD_ASYNC_NOTIFY | IB_QP_ACCESS_FLAGS |	\
			 IB_QP_QKEY | IB_QP_AV | IB_QP_PATH_MTU |		\
			 IB_QP_TIMEOUT | IB_QP_RETRY_CNT | IB_QP_RNR_RETRY |	\
			 IB_QP_RQ_PSN | IB_QP_MAX_QP_RD_ATOMIC |		\
			 IB_QP_MIN_RNR_TIMER | IB_QP_SQ_PSN |			\
			 IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_DEST_QPN)

/* The device numbers the attributes as Linux does */
static_assert(QHCA_QP_ATTR_STATE == IB_QP_STATE);
static_assert(QHCA_QP_ATTR_CUR_STATE == IB_QP_CUR_STATE);
static_assert(QHCA_QP_ATTR_EN_SQD_ASYNC == IB_QP_EN_SQD_ASYNC_NOTIFY);
static_assert(QHCA_QP_ATTR_ACCESS_FLAGS == IB_QP_ACCESS_FLAGS);
static_assert(QHCA_QP_ATTR_PKEY_INDEX == IB_QP_PKEY_INDEX);
static_assert(QHCA_QP_ATTR_PORT == IB_QP_PORT);
static_assert(QHCA_QP_ATTR_QKEY == IB_QP_QKEY);
static_assert(QHCA_QP_ATTR_AV == IB_QP_AV);
static_assert(QHCA_QP_ATTR_PATH_MTU == IB_QP_PATH_MTU);
static_assert(QHCA_QP_ATTR_TIMEOUT == IB_QP_TIMEOUT);
static_assert(QHCA_QP_ATTR_RETRY_CNT == IB_QP_RETRY_CNT);
static_assert(QHCA_QP_ATTR_RNR_RETRY == IB_QP_RNR_RETRY);
static_assert(QHCA_QP_ATTR_RQ_PSN == IB_QP_RQ_PSN);
static_assert(QHCA_QP_ATTR_MAX_QP_RD_ATOMIC == IB_QP_MAX_QP_RD_ATOMIC);
static_assert(QHCA_QP_ATTR_MIN_RNR_TIMER == IB_QP_MIN_RNR_TIMER);
static_assert(QHCA_QP_ATTR_SQ_PSN == IB_QP_SQ_PSN);
static_assert(QHCA_QP_ATTR_MAX_DEST_RD_ATOMIC == IB_QP_MAX_DEST_RD_ATOMIC);
static_assert(QHCA_QP_ATTR_DEST_QPN == IB_QP_DEST_QPN);

static int qhca_qp_av(struct qhca_dev *dev, const struct rdma_ah_attr *ah,
		      struct qhca_qp_attr *a)
{
	const struct ib_global_route *grh;

	if (ah->type != RDMA_AH_ATTR_TYPE_ROCE ||
	    !(rdma_ah_get_ah_flags(ah) & IB_AH_GRH))
		return -EINVAL;
	grh = rdma_ah_read_grh(ah);
	if (!grh->sgid_attr || grh->sgid_attr->index >= QHCA_GID_TABLE_LEN ||
	    grh->sgid_attr->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP)
		return -EINVAL;

	a->sgid_index = grh->sgid_attr->index;
	a->hop_limit = grh->hop_limit;
	a->traffic_class = grh->traffic_class;
	a->flow_label = cpu_to_le32(grh->flow_label & 0xfffff);
	memcpy(a->dgid, grh->dgid.raw, sizeof(a->dgid));
	memcpy(a->dmac, ah->roce.dmac, ETH_ALEN);
	return 0;
}

/* Translate the consumer's attributes; returns the device's mask */
static int qhca_qp_attr_to_hw(struct qhca_dev *dev, struct qhca_qp *qp,
			      const struct ib_qp_attr *attr, int mask,
			      enum ib_qp_state cur, enum ib_qp_state next,
			      struct qhca_qp_attr *a, u32 *hw_mask)
{
	int ret;

	if ((mask & IB_QP_PORT) && attr->port_num != QHCA_PORT)
		return -EINVAL;
	if ((mask & IB_QP_PKEY_INDEX) &&
	    attr->pkey_index >= QHCA_PKEY_TABLE_LEN)
		return -EINVAL;
	if ((mask & IB_QP_MAX_QP_RD_ATOMIC) &&
	    attr->max_rd_atomic > dev->max_rd_atom)
		return -EINVAL;
	if ((mask & IB_QP_MAX_DEST_RD_ATOMIC) &&
	    attr->max_dest_rd_atomic > dev->max_rd_atom)
		return -EINVAL;
	if ((mask & IB_QP_PATH_MTU) &&
	    (attr->path_mtu < IB_MTU_256 || attr->path_mtu > IB_MTU_4096))
		return -EINVAL;

	/*
	 * The port and the P_Key index carry no value for the device (one
	 * port, one P_Key); it wants them only where they are required.
	 * Without alternate paths the migration state is always "migrated".
	 */
	*hw_mask = mask & QHCA_QP_HW_MASK;
	if (cur == IB_QPS_RESET && next == IB_QPS_INIT) {
		*hw_mask |= QHCA_QP_ATTR_PKEY_INDEX;
		if (qp->hw_type != QHCA_QPT_GSI)
			*hw_mask |= QHCA_QP_ATTR_PORT;
	}

	a->qp_state = next;
	a->cur_qp_state = attr->cur_qp_state;
	a->en_sqd_async_notify = attr->en_sqd_async_notify;
	/*
	 * IB_ACCESS_FLUSH_PERSISTENT is not kept: the kernel's CM asks for it
	 * on every passive QP of a device that offers any FLUSH, and no MR can
	 * have it (IB_DEVICE_FLUSH_PERSISTENT is not offered), so a FLUSH to
	 * persistence is refused at the MR whatever the QP says
	 */
	a->access_flags = cpu_to_le32(qhca_access(attr->qp_access_flags));
	a->qkey = cpu_to_le32(attr->qkey);
	if (mask & IB_QP_AV) {
		ret = qhca_qp_av(dev, &attr->ah_attr, a);
		if (ret)
			return ret;
	}
	a->path_mtu = attr->path_mtu;
	a->timeout = attr->timeout;
	a->retry_cnt = attr->retry_cnt;
	a->rnr_retry = attr->rnr_retry;
	a->min_rnr_timer = attr->min_rnr_timer;
	a->max_rd_atomic = attr->max_rd_atomic;
	a->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	a->rq_psn = cpu_to_le32(attr->rq_psn & 0xffffff);
	a->sq_psn = cpu_to_le32(attr->sq_psn & 0xffffff);
	a->dest_qpn = cpu_to_le32(attr->dest_qp_num & 0xffffff);
	return 0;
}

/*
 * A dead device completes nothing: flush a kernel queue's outstanding work
 * requests into its CQ, as the device does on the way to ERR, so that a
 * consumer draining the QP (ib_drain_qp) is not left waiting.  wq->lock
 * held; true if a CQE was written.
 */
static bool qhca_wq_soft_flush(struct qhca_qp *qp, struct qhca_wq *wq,
			       bool send)
{
	struct qhca_cq *cq = to_qhca_cq(send ? qp->ibqp.send_cq :
					       qp->ibqp.recv_cq);
	u16 start;
	__le64 *wr_id;

	lockdep_assert_held(&wq->lock);
	if (!wq->soft_flush) {
		wq->soft_flush = true;
		wq->flushed = READ_ONCE(wq->ci);
	}
	start = wq->flushed;

	spin_lock(&cq->lock);
	for (; wq->flushed != wq->pi; wq->flushed++) {
		wr_id = qhca_ring_entry(&wq->ring, wq->flushed) +
			(send ? offsetof(struct qhca_send_wqe, wr_id) :
				offsetof(struct qhca_recv_wqe, wr_id));
		if (!qhca_cq_soft_flush_cqe(cq, qp->qpn, *wr_id, send,
					    wq->flushed))
			break;
	}
	spin_unlock(&cq->lock);
	ibdev_dbg(qp->ibqp.device, "QP %u: %s WQEs %u..%u flushed (ci %u)\n",
		  qp->qpn, send ? "send" : "receive", start, wq->flushed,
		  READ_ONCE(wq->ci));
	return wq->flushed != start;
}

static void qhca_cq_notify(struct ib_cq *ibcq)
{
	if (ibcq->comp_handler)
		ibcq->comp_handler(ibcq, ibcq->cq_context);
}

/* The device died: flush both queues of a kernel QP (any context) */
static void qhca_qp_soft_flush(struct qhca_qp *qp)
{
	unsigned long flags;
	bool sq, rq = false;

	spin_lock_irqsave(&qp->sq.lock, flags);
	sq = qhca_wq_soft_flush(qp, &qp->sq, true);
	spin_unlock_irqrestore(&qp->sq.lock, flags);
	if (!qp->srq) {
		spin_lock_irqsave(&qp->rq.lock, flags);
		rq = qhca_wq_soft_flush(qp, &qp->rq, false);
		spin_unlock_irqrestore(&qp->rq.lock, flags);
	}
	if (sq)
		qhca_cq_notify(qp->ibqp.send_cq);
	if (rq && (!sq || qp->ibqp.recv_cq != qp->ibqp.send_cq))
		qhca_cq_notify(qp->ibqp.recv_cq);
}

/* A kernel QP back in RESET starts over at index 0, as the device does */
static void qhca_qp_reset_indices(struct qhca_qp *qp)
{
	unsigned long flags;

	spin_lock_irqsave(&qp->sq.lock, flags);
	qp->sq.pi = 0;
	WRITE_ONCE(qp->sq.ci, 0);
	qp->sq.soft_flush = false;
	spin_unlock_irqrestore(&qp->sq.lock, flags);
	spin_lock_irqsave(&qp->rq.lock, flags);
	qp->rq.pi = 0;
	WRITE_ONCE(qp->rq.ci, 0);
	qp->rq.soft_flush = false;
	spin_unlock_irqrestore(&qp->rq.lock, flags);
}

int qhca_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		   int attr_mask, struct ib_udata *udata)
{
	struct qhca_dev *dev = to_qhca_dev(ibqp->device);
	struct qhca_qp *qp = to_qhca_qp(ibqp);
	struct qhca_cmd_modify_qp cmd = {};
	enum ib_qp_state cur, next;
	u32 hw_mask;
	int ret;

	if (attr_mask & ~IB_QP_ATTR_STANDARD_BITS)
		return -EOPNOTSUPP;
	/* No alternate path, no resizing */
	if (attr_mask & (IB_QP_ALT_PATH | IB_QP_CAP))
		return -EOPNOTSUPP;
	ret = qhca_udata_no_in(udata);
	if (ret)
		return ret;

	mutex_lock(&qp->state_lock);
	cur = (attr_mask & IB_QP_CUR_STATE) ? attr->cur_qp_state : qp->state;
	next = (attr_mask & IB_QP_STATE) ? attr->qp_state : cur;
	if (!ib_modify_qp_is_ok(cur, next, ibqp->qp_type, attr_mask)) {
		ibdev_dbg(&dev->ibdev,
			  "QP %u: %d -> %d with mask %#x is not allowed\n",
			  qp->qpn, cur, next, attr_mask);
		ret = -EINVAL;
		goto out;
	}

	ret = qhca_qp_attr_to_hw(dev, qp, attr, attr_mask, cur, next,
				 &cmd.attr, &hw_mask);
	if (ret)
		goto out;
	cmd.qpn = cpu_to_le32(qp->qpn);
	cmd.attr_mask = cpu_to_le32(hw_mask);
	ret = qhca_cmd(dev, QHCA_CMD_MODIFY_QP, &cmd, sizeof(cmd), NULL);
	if (ret) {
		/* Moving to RESET or ERR needs no device on its way out */
		if (qhca_dead(dev) && (next == IB_QPS_RESET ||
				       next == IB_QPS_ERR))
			ret = 0;
		else
			goto out;
	}

	WRITE_ONCE(qp->state, next);
	if (next == IB_QPS_RESET && !qp->user)
		qhca_qp_reset_indices(qp);
	else if (next == IB_QPS_ERR && !qp->user && qhca_dead(dev))
		qhca_qp_soft_flush(qp);
out:
	mutex_unlock(&qp->state_lock);
	return ret;
}

int qhca_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		  int attr_mask, struct ib_qp_init_attr *init_attr)
{
	struct qhca_dev *dev = to_qhca_dev(ibqp->device);
	struct qhca_qp *qp = to_qhca_qp(ibqp);
	struct qhca_cmd_obj cmd = { .handle = cpu_to_le32(qp->qpn) };
	struct qhca_qp_attr a;
	union ib_gid dgid;
	int ret;

	mutex_lock(&qp->state_lock);
	ret = qhca_cmd_exec(dev, QHCA_CMD_QUERY_QP, &cmd, sizeof(cmd), &a,
			    sizeof(a), NULL, 0);
	if (!ret && a.qp_state <= IB_QPS_ERR)
		WRITE_ONCE(qp->state, a.qp_state);
	mutex_unlock(&qp->state_lock);
	if (ret)
		return ret;

	memset(attr, 0, sizeof(*attr));
	memset(init_attr, 0, sizeof(*init_attr));
	attr->qp_state = a.qp_state;
	attr->cur_qp_state = a.qp_state;
	attr->path_mtu = a.path_mtu;
	attr->path_mig_state = IB_MIG_MIGRATED;
	attr->qkey = le32_to_cpu(a.qkey);
	attr->rq_psn = le32_to_cpu(a.rq_psn);
	attr->sq_psn = le32_to_cpu(a.sq_psn);
	attr->dest_qp_num = le32_to_cpu(a.dest_qpn);
	attr->qp_access_flags = qhca_ib_access(le32_to_cpu(a.access_flags));
	attr->cap.max_send_wr = qp->sq.ring.depth;
	attr->cap.max_send_sge = qp->sq.max_sge;
	attr->cap.max_inline_data = qp->sq.max_inline;
	attr->cap.max_recv_wr = qp->srq ? 0 : qp->rq.ring.depth;
	attr->cap.max_recv_sge = qp->srq ? 0 : qp->rq.max_sge;
	if (qp->hw_type == QHCA_QPT_RC || qp->hw_type == QHCA_QPT_UC) {
		memcpy(dgid.raw, a.dgid, sizeof(dgid.raw));
		attr->ah_attr.type = RDMA_AH_ATTR_TYPE_ROCE;
		rdma_ah_set_port_num(&attr->ah_attr, QHCA_PORT);
		rdma_ah_set_grh(&attr->ah_attr, &dgid,
				le32_to_cpu(a.flow_label), a.sgid_index,
				a.hop_limit, a.traffic_class);
		memcpy(attr->ah_attr.roce.dmac, a.dmac, ETH_ALEN);
	}
	attr->pkey_index = 0;
	attr->port_num = QHCA_PORT;
	attr->en_sqd_async_notify = a.en_sqd_async_notify;
	attr->sq_draining = a.sq_draining;
	attr->max_rd_atomic = a.max_rd_atomic;
	attr->max_dest_rd_atomic = a.max_dest_rd_atomic;
	attr->min_rnr_timer = a.min_rnr_timer;
	attr->timeout = a.timeout;
	attr->retry_cnt = a.retry_cnt;
	attr->rnr_retry = a.rnr_retry;

	init_attr->qp_type = ibqp->qp_type;
	init_attr->send_cq = ibqp->send_cq;
	init_attr->recv_cq = ibqp->recv_cq;
	init_attr->srq = ibqp->srq;
	init_attr->cap = attr->cap;
	init_attr->sq_sig_type = qp->sig_all ? IB_SIGNAL_ALL_WR :
					       IB_SIGNAL_REQ_WR;
	init_attr->port_num = QHCA_PORT;
	return 0;
}

/* ---- posting to kernel queues ---- */

/*
 * A CQE (polled with the QP's table entry locked) says the device is done
 * with the WQE at @wqe_index and, in an SQ or RQ, with every older one.
 * An index that is not outstanding (a CQE from before a reset) is ignored.
 */
void qhca_wq_completed(struct qhca_qp *qp, bool send, u16 wqe_index)
{
	struct qhca_srq *srq = qp->srq;
	struct qhca_wq *wq;
	u16 ci, pi, n;

	if (qp->user)
		return;
	if (!send && srq) {
		u32 mask = srq->wq.ring.depth - 1;

		spin_lock(&srq->wq.lock);
		ci = srq->wq.ci;
		n = wqe_index - ci;
		if (n < (u16)(srq->wq.pi - ci)) {
			set_bit((ci + n) & mask, srq->done);
			while (ci != srq->wq.pi && test_bit(ci & mask, srq->done)) {
				clear_bit(ci & mask, srq->done);
				ci++;
			}
			WRITE_ONCE(srq->wq.ci, ci);
		}
		spin_unlock(&srq->wq.lock);
		return;
	}

	wq = send ? &qp->sq : &qp->rq;
	ci = READ_ONCE(wq->ci);
	pi = READ_ONCE(wq->pi);
	n = wqe_index - ci;
	if (n < (u16)(pi - ci))
		WRITE_ONCE(wq->ci, wqe_index + 1);
}

static bool qhca_wq_full(struct qhca_wq *wq)
{
	return (u16)(wq->pi - READ_ONCE(wq->ci)) >= wq->ring.depth;
}

static int qhca_wqe_data(struct qhca_qp *qp, const struct ib_send_wr *wr,
			 struct qhca_send_wqe *wqe)
{
	struct qhca_sge *sge = (void *)wqe + QHCA_SEND_WQE_HDR_SIZE;
	u32 len = 0;
	int i;

	if (wr->send_flags & IB_SEND_INLINE) {
		u8 *dst = (u8 *)sge;

		/* Inline data: the SGEs hold kernel virtual addresses */
		for (i = 0; i < wr->num_sge; i++) {
			if (wr->sg_list[i].length > qp->sq.max_inline - len)
				return -EINVAL;
			memcpy(dst + len,
			       (void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			len += wr->sg_list[i].length;
		}
		wqe->flags |= QHCA_WQE_INLINE;
		wqe->inline_len = cpu_to_le32(len);
		return 0;
	}

	if (wr->num_sge > qp->sq.max_sge)
		return -EINVAL;
	for (i = 0; i < wr->num_sge; i++) {
		sge[i].addr = cpu_to_le64(wr->sg_list[i].addr);
		sge[i].length = cpu_to_le32(wr->sg_list[i].length);
		sge[i].lkey = cpu_to_le32(wr->sg_list[i].lkey);
	}
	wqe->num_sge = wr->num_sge;
	return 0;
}

static int qhca_wqe_reg_mr(const struct ib_reg_wr *reg,
			   struct qhca_send_wqe *wqe)
{
	struct qhca_mr *mr = to_qhca_mr(reg->mr);

	if (!mr->pages || !mr->npages)
		return -EINVAL;
	wqe->reg.iova = cpu_to_le64(mr->ibmr.iova);
	wqe->reg.length = cpu_to_le64(mr->ibmr.length);
	wqe->reg.pbl_addr = cpu_to_le64(mr->pages_dma);
	wqe->reg.key = cpu_to_le32(reg->key);
	wqe->reg.access = cpu_to_le32(qhca_access(reg->access));
	wqe->reg.num_pages = cpu_to_le32(mr->npages);
	wqe->reg.page_shift = ilog2(mr->ibmr.page_size);
	return 0;
}

#define QHCA_SEND_FLAGS	(IB_SEND_FENCE | IB_SEND_SIGNALED | \
			 IB_SEND_SOLICITED | IB_SEND_INLINE)

/*
 * A kernel work request's opcode is the device's under the same number
 * (qhca_hw.h numbers its opcodes as enum ib_wr_opcode); which QP types may
 * post it and what it carries is the device's opcode table.
 */
static_assert((int)IB_WR_RDMA_WRITE == QHCA_WQE_RDMA_WRITE);
static_assert((int)IB_WR_RDMA_WRITE_WITH_IMM == QHCA_WQE_RDMA_WRITE_WITH_IMM);
static_assert((int)IB_WR_SEND == QHCA_WQE_SEND);
static_assert((int)IB_WR_SEND_WITH_IMM == QHCA_WQE_SEND_WITH_IMM);
static_assert((int)IB_WR_RDMA_READ == QHCA_WQE_RDMA_READ);
static_assert((int)IB_WR_ATOMIC_CMP_AND_SWP == QHCA_WQE_ATOMIC_CMP_AND_SWP);
static_assert((int)IB_WR_ATOMIC_FETCH_AND_ADD ==
	      QHCA_WQE_ATOMIC_FETCH_AND_ADD);
static_assert((int)IB_WR_LOCAL_INV == QHCA_WQE_LOCAL_INV);
static_assert((int)IB_WR_BIND_MW == QHCA_WQE_BIND_MW);
static_assert((int)IB_WR_SEND_WITH_INV == QHCA_WQE_SEND_WITH_INV);
#ifdef QHCA_HAVE_FLUSH
static_assert((int)IB_WR_FLUSH == QHCA_WQE_FLUSH);
static_assert((int)IB_WR_ATOMIC_WRITE == QHCA_WQE_ATOMIC_WRITE);
#endif
static_assert((int)IB_WR_REG_MR == QHCA_WQE_REG_MR);

/*
 * The device's table, less what the kernel does not post (BIND_MW: no
 * kernel verb binds windows; FLUSH and ATOMIC WRITE: no kernel user asks)
 * and what the device's caps leave out.  0 or -errno.
 */
static int qhca_kernel_op(struct qhca_dev *dev, struct qhca_qp *qp,
			  u32 opcode, const struct qhca_wqe_op_info **op)
{
	if (opcode == QHCA_WQE_FLUSH || opcode == QHCA_WQE_ATOMIC_WRITE)
#ifdef QHCA_HAVE_FLUSH
		return -EOPNOTSUPP;
#else
		return -EINVAL;	/* kernels before 6.2 do not name them */
#endif
	if (opcode == QHCA_WQE_BIND_MW ||
	    !qhca_wqe_op_allowed(opcode, qp->hw_type))
		return -EINVAL;
	*op = qhca_wqe_op_info(opcode);
	if (((*op)->flags & QHCA_WQE_OPF_ATOMIC) &&
	    !(dev->caps & QHCA_CAP_ATOMIC))
		return -EINVAL;
	if (opcode == QHCA_WQE_REG_MR && !(dev->caps & QHCA_CAP_FRMR))
		return -EINVAL;
	return 0;
}

static int qhca_build_send_wqe(struct qhca_dev *dev, struct qhca_qp *qp,
			       const struct ib_send_wr *wr,
			       struct qhca_send_wqe *wqe)
{
	const struct qhca_wqe_op_info *op;
	u32 opcode = wr->opcode;
	int ret;

	if (wr->send_flags & ~QHCA_SEND_FLAGS)
		return -EINVAL;
	ret = qhca_kernel_op(dev, qp, opcode, &op);
	if (ret)
		return ret;

	memset(wqe, 0, sizeof(*wqe));
	wqe->opcode = opcode;
	wqe->wr_id = cpu_to_le64(wr->wr_id);
	if (wr->send_flags & IB_SEND_SIGNALED)
		wqe->flags |= QHCA_WQE_SIGNALED;
	if (wr->send_flags & IB_SEND_SOLICITED)
		wqe->flags |= QHCA_WQE_SOLICITED;
	if (wr->send_flags & IB_SEND_FENCE)
		wqe->flags |= QHCA_WQE_FENCE;

	/* the fields the table names for the opcode */
	if (op->flags & QHCA_WQE_OPF_IMM)
		memcpy(wqe->imm_data, &wr->ex.imm_data, sizeof(wqe->imm_data));
	if (op->flags & QHCA_WQE_OPF_INV)
		wqe->invalidate_rkey = cpu_to_le32(wr->ex.invalidate_rkey);
	if (op->flags & QHCA_WQE_OPF_ATOMIC) {
		wqe->rdma.remote_addr = cpu_to_le64(atomic_wr(wr)->remote_addr);
		wqe->rdma.rkey = cpu_to_le32(atomic_wr(wr)->rkey);
		wqe->rdma.compare_add = cpu_to_le64(atomic_wr(wr)->compare_add);
		wqe->rdma.swap = cpu_to_le64(atomic_wr(wr)->swap);
	} else if (op->flags & QHCA_WQE_OPF_REMOTE) {
		wqe->rdma.remote_addr = cpu_to_le64(rdma_wr(wr)->remote_addr);
		wqe->rdma.rkey = cpu_to_le32(rdma_wr(wr)->rkey);
	}
	if (opcode == QHCA_WQE_REG_MR && qhca_wqe_reg_mr(reg_wr(wr), wqe))
		return -EINVAL;

	/* Inline data only for what carries data to the peer */
	if ((wr->send_flags & IB_SEND_INLINE) &&
	    !(op->flags & QHCA_WQE_OPF_INLINE))
		return -EINVAL;
	if (op->flags & QHCA_WQE_OPF_LOCAL)
		return 0;

	/*
	 * Datagram sends (UD and GSI) name their destination; a connected
	 * QP's (RC and UC) is the QP's own, and its rdma fields are the
	 * table's above
	 */
	if (qp->hw_type == QHCA_QPT_UD || qp->hw_type == QHCA_QPT_GSI) {
		const struct ib_ud_wr *ud = ud_wr(wr);

		if (!ud->ah)
			return -EINVAL;
		wqe->ud.ahn = cpu_to_le32(to_qhca_ah(ud->ah)->ahn);
		wqe->ud.remote_qpn = cpu_to_le32(ud->remote_qpn);
		wqe->ud.remote_qkey = cpu_to_le32(ud->remote_qkey);
	}
	return qhca_wqe_data(qp, wr, wqe);
}

/* A QP in RESET takes no work requests */
static bool qhca_qp_can_post(struct qhca_qp *qp)
{
	return !qp->user && READ_ONCE(qp->state) != IB_QPS_RESET;
}

int qhca_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		   const struct ib_send_wr **bad_wr)
{
	struct qhca_dev *dev = to_qhca_dev(ibqp->device);
	struct qhca_qp *qp = to_qhca_qp(ibqp);
	struct qhca_wq *sq = &qp->sq;
	bool flushed = false;
	unsigned long flags;
	u16 start;
	int ret = 0;

	if (!qhca_qp_can_post(qp)) {
		*bad_wr = wr;
		return -EINVAL;
	}

	spin_lock_irqsave(&sq->lock, flags);
	start = sq->pi;
	for (; wr; wr = wr->next) {
		if (qhca_wq_full(sq)) {
			ret = -ENOMEM;
			break;
		}
		ret = qhca_build_send_wqe(dev, qp, wr,
					  qhca_ring_entry(&sq->ring, sq->pi));
		if (ret)
			break;
		sq->pi++;
	}
	if (qhca_dead(dev))
		flushed = qhca_wq_soft_flush(qp, sq, true);
	else if (sq->pi != start)
		qhca_kdb(dev, QHCA_DB_SQ,
			 qp->qpn | (u32)sq->pi << QHCA_DB_IDX_SHIFT);
	spin_unlock_irqrestore(&sq->lock, flags);

	if (flushed)
		qhca_cq_notify(ibqp->send_cq);
	if (ret)
		*bad_wr = wr;
	return ret;
}

static int qhca_write_recv_wqe(struct qhca_wq *wq, const struct ib_recv_wr *wr)
{
	struct qhca_recv_wqe *wqe = qhca_ring_entry(&wq->ring, wq->pi);
	struct qhca_sge *sge = (void *)wqe + QHCA_RECV_WQE_HDR_SIZE;
	int i;

	if (wr->num_sge > wq->max_sge)
		return -EINVAL;
	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = cpu_to_le64(wr->wr_id);
	wqe->num_sge = wr->num_sge;
	for (i = 0; i < wr->num_sge; i++) {
		sge[i].addr = cpu_to_le64(wr->sg_list[i].addr);
		sge[i].length = cpu_to_le32(wr->sg_list[i].length);
		sge[i].lkey = cpu_to_le32(wr->sg_list[i].lkey);
	}
	return 0;
}

int qhca_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		   const struct ib_recv_wr **bad_wr)
{
	struct qhca_dev *dev = to_qhca_dev(ibqp->device);
	struct qhca_qp *qp = to_qhca_qp(ibqp);
	struct qhca_wq *rq = &qp->rq;
	bool flushed = false;
	unsigned long flags;
	u16 start;
	int ret = 0;

	if (!qhca_qp_can_post(qp) || qp->srq) {
		*bad_wr = wr;
		return -EINVAL;
	}

	spin_lock_irqsave(&rq->lock, flags);
	start = rq->pi;
	for (; wr; wr = wr->next) {
		if (qhca_wq_full(rq)) {
			ret = -ENOMEM;
			break;
		}
		ret = qhca_write_recv_wqe(rq, wr);
		if (ret)
			break;
		rq->pi++;
	}
	if (qhca_dead(dev))
		flushed = qhca_wq_soft_flush(qp, rq, false);
	else if (rq->pi != start)
		qhca_kdb(dev, QHCA_DB_RQ,
			 qp->qpn | (u32)rq->pi << QHCA_DB_IDX_SHIFT);
	spin_unlock_irqrestore(&rq->lock, flags);

	if (flushed)
		qhca_cq_notify(ibqp->recv_cq);
	if (ret)
		*bad_wr = wr;
	return ret;
}

/* ---- shared receive queues ---- */

int qhca_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		    struct ib_udata *udata)
{
	struct qhca_dev *dev = to_qhca_dev(ibsrq->device);
	struct qhca_srq *srq = to_qhca_srq(ibsrq);
	struct ib_srq_attr *attr = &init->attr;
	struct qhca_create_srq_cmd ucmd = {};
	struct qhca_cmd_create_srq cmd = {};
	struct qhca_wq_geom g;
	struct qhca_pbl pbl;
	int ret;

	if (init->srq_type != IB_SRQT_BASIC || !(dev->caps & QHCA_CAP_SRQ))
		return -EOPNOTSUPP;
	ret = qhca_rq_geom(attr->max_wr, attr->max_sge, dev->max_srq_wr, &g);
	if (ret || attr->srq_limit >= g.depth)
		return -EINVAL;

	srq->user = !!udata;
	refcount_set(&srq->refcount, 1);
	init_completion(&srq->free);
	mutex_init(&srq->modify_lock);
	qhca_wq_init(&srq->wq, &g);
	if (udata) {
		ret = qhca_udata_in(udata, &ucmd, sizeof(ucmd));
		if (ret)
			return ret;
		if (ucmd.reserved || ucmd.depth != g.depth) {
			ibdev_dbg(&dev->ibdev, "SRQ depth %u, caps give %u\n",
				  ucmd.depth, g.depth);
			return -EINVAL;
		}
	} else {
		srq->done = bitmap_zalloc(g.depth, GFP_KERNEL);
		if (!srq->done)
			return -ENOMEM;
	}
	ret = qhca_wq_ring(dev, &srq->wq, &g, srq->user, ucmd.buf_va);
	if (ret)
		goto err_ring;

	ret = qhca_ring_pbl(dev, &srq->wq.ring, &pbl, &cmd.mem);
	if (ret)
		goto err_ring;
	cmd.pdn = cpu_to_le32(to_qhca_pd(ibsrq->pd)->pdn);
	cmd.db_page = cpu_to_le32(qhca_ucontext_db_page(udata));
	cmd.log_depth = ilog2(g.depth);
	cmd.log_stride = g.log_stride;
	cmd.limit = cpu_to_le32(attr->srq_limit);
	ret = qhca_cmd(dev, QHCA_CMD_CREATE_SRQ, &cmd, sizeof(cmd),
		       &srq->srqn);
	qhca_pbl_free(dev, &pbl);
	if (ret)
		goto err_ring;

	ret = xa_insert_irq(&dev->srq_xa, srq->srqn, srq, GFP_KERNEL);
	if (ret)
		goto err_destroy;

	attr->max_wr = g.depth;
	attr->max_sge = g.max_sge;
	if (udata) {
		struct qhca_create_srq_resp resp = {
			.srqn = srq->srqn,
			.depth = g.depth,
			.comp_mask = QHCA_CREATE_RESP_GEOMETRY,
			.log_stride = g.log_stride,
			.max_sge = g.max_sge,
		};

		ret = qhca_udata_out(udata, &resp, sizeof(resp));
		if (ret)
			goto err_xa;
	}

	atomic_inc(&dev->num_objects);
	return 0;

err_xa:
	xa_erase_irq(&dev->srq_xa, srq->srqn);
	qhca_srq_put(srq);
	wait_for_completion(&srq->free);
err_destroy:
	qhca_cmd_destroy(dev, QHCA_CMD_DESTROY_SRQ, srq->srqn, 0);
err_ring:
	qhca_ring_free(dev, &srq->wq.ring);
	bitmap_free(srq->done);
	srq->done = NULL;
	mutex_destroy(&srq->modify_lock);
	return ret;
}

int qhca_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct qhca_dev *dev = to_qhca_dev(ibsrq->device);
	struct qhca_srq *srq = to_qhca_srq(ibsrq);

	/* As for QPs: out of the table before the number can be reused */
	xa_erase_irq(&dev->srq_xa, srq->srqn);
	qhca_srq_put(srq);
	wait_for_completion(&srq->free);

	qhca_cmd_destroy(dev, QHCA_CMD_DESTROY_SRQ, srq->srqn, 0);
	qhca_ring_free(dev, &srq->wq.ring);
	bitmap_free(srq->done);
	srq->done = NULL;
	mutex_destroy(&srq->modify_lock);
	atomic_dec(&dev->num_objects);
	return 0;
}

/*
 * ibv_modify_srq(IBV_SRQ_MAX_WR): the provider has a new ring for max_wr
 * entries (sized as create's, the same stride); the device moves the WQEs
 * not yet taken to it at their indices, then the old ring is unpinned.
 * Kernel SRQs are not resized: posting to them runs under a spinlock,
 * often in atomic context, and could not wait for the command.
 */
static int qhca_resize_srq(struct qhca_dev *dev, struct qhca_srq *srq,
			   u32 max_wr, struct ib_udata *udata)
{
	struct qhca_cmd_resize_srq cmd = {};
	struct qhca_modify_srq_cmd ucmd;
	struct qhca_ring ring = {};
	struct qhca_wq_geom g;
	struct qhca_pbl pbl;
	u32 carried;
	int ret;

	if (!udata || !srq->user)
		return -EOPNOTSUPP;
	ret = qhca_rq_geom(max_wr, srq->wq.max_sge, dev->max_srq_wr, &g);
	if (ret || g.log_stride != srq->wq.ring.log_stride)
		return -EINVAL;
	ret = qhca_udata_in(udata, &ucmd, sizeof(ucmd));
	if (ret)
		return ret;
	if (ucmd.reserved || ucmd.depth != g.depth) {
		ibdev_dbg(&dev->ibdev, "SRQ resize to %u, max_wr gives %u\n",
			  ucmd.depth, g.depth);
		return -EINVAL;
	}
	ret = qhca_ring_pin(dev, &ring, ucmd.buf_va, g.depth, g.log_stride);
	if (ret)
		return ret;
	ret = qhca_ring_pbl(dev, &ring, &pbl, &cmd.mem);
	if (ret)
		goto err_ring;
	cmd.srqn = cpu_to_le32(srq->srqn);
	cmd.log_depth = ilog2(g.depth);
	ret = qhca_cmd(dev, QHCA_CMD_RESIZE_SRQ, &cmd, sizeof(cmd), &carried);
	qhca_pbl_free(dev, &pbl);
	if (ret)
		goto err_ring;

	/* the device reads the new ring only */
	qhca_ring_free(dev, &srq->wq.ring);
	srq->wq.ring = ring;
	ibdev_dbg(&dev->ibdev, "SRQ %u: %u entries, %u WQEs carried over\n",
		  srq->srqn, g.depth, carried);
	return 0;

err_ring:
	qhca_ring_free(dev, &ring);
	return ret;
}

int qhca_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		    enum ib_srq_attr_mask attr_mask, struct ib_udata *udata)
{
	struct qhca_dev *dev = to_qhca_dev(ibsrq->device);
	struct qhca_srq *srq = to_qhca_srq(ibsrq);
	struct qhca_cmd_modify_srq cmd = {};
	int ret = 0;

	if (attr_mask & ~(IB_SRQ_LIMIT | IB_SRQ_MAX_WR))
		return -EOPNOTSUPP;
	if (!(attr_mask & IB_SRQ_MAX_WR)) {
		ret = qhca_udata_no_in(udata);
		if (ret)
			return ret;
	}

	/* uverbs lets modifies of one SRQ run at once */
	mutex_lock(&srq->modify_lock);
	if (attr_mask & IB_SRQ_MAX_WR) {
		ret = qhca_resize_srq(dev, srq, attr->max_wr, udata);
		if (ret)
			goto out;
	}
	if (!(attr_mask & IB_SRQ_LIMIT))
		goto out;
	if (attr->srq_limit >= srq->wq.ring.depth) {
		ret = -EINVAL;
		goto out;
	}
	cmd.srqn = cpu_to_le32(srq->srqn);
	cmd.limit = cpu_to_le32(attr->srq_limit);
	ret = qhca_cmd(dev, QHCA_CMD_MODIFY_SRQ, &cmd, sizeof(cmd), NULL);
out:
	mutex_unlock(&srq->modify_lock);
	return ret;
}

int qhca_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct qhca_dev *dev = to_qhca_dev(ibsrq->device);
	struct qhca_srq *srq = to_qhca_srq(ibsrq);
	struct qhca_cmd_obj cmd = { .handle = cpu_to_le32(srq->srqn) };
	struct qhca_srq_attr a;
	int ret;

	ret = qhca_cmd_exec(dev, QHCA_CMD_QUERY_SRQ, &cmd, sizeof(cmd), &a,
			    sizeof(a), NULL, 0);
	if (ret)
		return ret;

	attr->max_wr = le32_to_cpu(a.depth);
	attr->max_sge = min_t(u32, le32_to_cpu(a.max_sge), srq->wq.max_sge);
	attr->srq_limit = le32_to_cpu(a.limit);
	return 0;
}

int qhca_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
		       const struct ib_recv_wr **bad_wr)
{
	struct qhca_dev *dev = to_qhca_dev(ibsrq->device);
	struct qhca_srq *srq = to_qhca_srq(ibsrq);
	struct qhca_wq *wq = &srq->wq;
	unsigned long flags;
	u16 start;
	int ret = 0;

	if (srq->user) {
		*bad_wr = wr;
		return -EINVAL;
	}

	spin_lock_irqsave(&wq->lock, flags);
	start = wq->pi;
	for (; wr; wr = wr->next) {
		if ((u16)(wq->pi - wq->ci) >= wq->ring.depth) {
			ret = -ENOMEM;
			break;
		}
		ret = qhca_write_recv_wqe(wq, wr);
		if (ret)
			break;
		wq->pi++;
	}
	if (wq->pi != start)
		qhca_kdb(dev, QHCA_DB_SRQ,
			 srq->srqn | (u32)wq->pi << QHCA_DB_IDX_SHIFT);
	spin_unlock_irqrestore(&wq->lock, flags);

	if (ret)
		*bad_wr = wr;
	return ret;
}
