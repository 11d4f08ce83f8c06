// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * qhca rdma-core provider: queue pairs and shared receive queues, and
 * posting work to them (ibv_post_send/recv, ibv_post_srq_recv and the
 * ibv_wr_*() API).
 *
 * SQ, RQ and SRQ rings live in this process's memory; the kernel pins them
 * for the device.  Posting writes WQEs into the ring, then one
 * udma_to_device_barrier() and one doorbell write with the new producer
 * index: no system call.  Entries are reused once a CQE shows the device
 * is done with them (qhca_cq.c).
 */

#include <config.h>

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "qhca.h"

static inline struct qhca_context *qhca_qp_ctx(struct qhca_qp *qp)
{
	return to_qhca_ctx(qp->vqp.qp.context);
}

static int qhca_wq_alloc(struct qhca_wq *wq, uint32_t depth,
			 uint32_t log_stride)
{
	wq->buf = qhca_alloc_ring((size_t)depth << log_stride, &wq->buf_size);
	if (!wq->buf)
		return ENOMEM;
	wq->depth = depth;
	wq->log_stride = log_stride;
	atomic_init(&wq->pi, 0);
	atomic_init(&wq->ci, 0);
	pthread_spin_init(&wq->lock, PTHREAD_PROCESS_PRIVATE);
	return 0;
}

static void qhca_wq_free(struct qhca_wq *wq)
{
	if (!wq->buf)
		return;
	pthread_spin_destroy(&wq->lock);
	qhca_free_ring(wq->buf, wq->buf_size);
	wq->buf = NULL;
}

/*
 * Size and allocate the rings for attr->cap and attr->srq.  attr is not
 * changed; the actual caps are in qp->sq / qp->rq.
 */
int qhca_qp_setup(struct qhca_qp *qp, struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_qp_cap *cap = &attr->cap;
	struct qhca_wq_geom sqs;
	struct qhca_wq_geom rqs = {};
	int ret;

	ret = qhca_sq_size(cap->max_send_wr, cap->max_send_sge,
			   cap->max_inline_data, &sqs);
	if (ret)
		return ret;
	if (!attr->srq) {
		ret = qhca_rq_size(cap->max_recv_wr, cap->max_recv_sge, &rqs);
		if (ret)
			return ret;
	}

	if ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	    (attr->send_ops_flags & IBV_QP_EX_WITH_BIND_MW)) {
		qp->sq_mw = calloc(sqs.depth, sizeof(*qp->sq_mw));
		if (!qp->sq_mw)
			return ENOMEM;
	}

	ret = qhca_wq_alloc(&qp->sq, sqs.depth, sqs.log_stride);
	if (ret)
		goto err_mw;
	qp->sq.max_sge = sqs.max_sge;
	qp->sq.max_inline = sqs.max_inline;

	if (!attr->srq) {
		ret = qhca_wq_alloc(&qp->rq, rqs.depth, rqs.log_stride);
		if (ret) {
			qhca_wq_free(&qp->sq);
			goto err_mw;
		}
		qp->rq.max_sge = rqs.max_sge;
	}

	qp->sqp.qp_type = attr->qp_type;
	qp->sqp.max_sge = sqs.max_sge;
	qp->sqp.max_inline = sqs.max_inline;
	qp->sqp.sig_all = attr->sq_sig_all;
	return 0;

err_mw:
	free(qp->sq_mw);
	qp->sq_mw = NULL;
	return ret;
}

void qhca_qp_teardown(struct qhca_qp *qp)
{
	qhca_wq_free(&qp->sq);
	qhca_wq_free(&qp->rq);
	free(qp->sq_mw);
	qp->sq_mw = NULL;
}

static void qhca_qp_get_cap(struct qhca_qp *qp, struct ibv_qp_cap *cap)
{
	cap->max_send_wr = qp->sq.depth;
	cap->max_send_sge = qp->sq.max_sge;
	cap->max_inline_data = qp->sq.max_inline;
	cap->max_recv_wr = qp->rq.depth;
	cap->max_recv_sge = qp->rq.max_sge;
}

/* A QP in RESET starts over at index 0 (as the device does) */
void qhca_qp_reset_indices(struct qhca_qp *qp)
{
	pthread_spin_lock(&qp->sq.lock);
	atomic_store(&qp->sq.pi, 0);
	atomic_store(&qp->sq.ci, 0);
	pthread_spin_unlock(&qp->sq.lock);
	if (qp->rq.buf) {
		pthread_spin_lock(&qp->rq.lock);
		atomic_store(&qp->rq.pi, 0);
		atomic_store(&qp->rq.ci, 0);
		pthread_spin_unlock(&qp->rq.lock);
	}
}

/* Lock a QP's send and receive CQs (once if they are the same), in order */
static void qhca_lock_cqs(struct ibv_qp *ibqp)
{
	struct qhca_cq *scq = to_qhca_cq(ibqp->send_cq);
	struct qhca_cq *rcq = to_qhca_cq(ibqp->recv_cq);

	if (scq == rcq) {
		pthread_spin_lock(&scq->lock);
	} else if (scq->cqn < rcq->cqn) {
		pthread_spin_lock(&scq->lock);
		pthread_spin_lock(&rcq->lock);
	} else {
		pthread_spin_lock(&rcq->lock);
		pthread_spin_lock(&scq->lock);
	}
}

static void qhca_unlock_cqs(struct ibv_qp *ibqp)
{
	struct qhca_cq *scq = to_qhca_cq(ibqp->send_cq);
	struct qhca_cq *rcq = to_qhca_cq(ibqp->recv_cq);

	if (scq != rcq)
		pthread_spin_unlock(&rcq->lock);
	pthread_spin_unlock(&scq->lock);
}

/* With the CQ locks held: drop the QP's CQEs from both CQs */
static void qhca_clean_cqs(struct qhca_qp *qp)
{
	struct ibv_qp *ibqp = &qp->vqp.qp;

	qhca_cq_clean(to_qhca_cq(ibqp->send_cq), qp);
	if (ibqp->recv_cq != ibqp->send_cq)
		qhca_cq_clean(to_qhca_cq(ibqp->recv_cq), qp);
}

#define QHCA_QP_SUPPORTED_COMP_MASK \
	(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS | \
	 IBV_QP_INIT_ATTR_CREATE_FLAGS)

int qhca_check_qp_attr(struct qhca_context *ctx,
		       struct ibv_qp_init_attr_ex *attr)
{
	if (!check_comp_mask(attr->comp_mask, QHCA_QP_SUPPORTED_COMP_MASK)) {
		verbs_err(&ctx->ibv_ctx, "qhca: unsupported comp_mask %#x\n",
			  attr->comp_mask);
		return EOPNOTSUPP;
	}
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd)
		return EINVAL;
	if (attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UC &&
	    attr->qp_type != IBV_QPT_UD) {
		verbs_err(&ctx->ibv_ctx, "qhca: unsupported QP type %d\n",
			  attr->qp_type);
		return EOPNOTSUPP;
	}
	if (!attr->send_cq || !attr->recv_cq)
		return EINVAL;
	/* the comp_mask bit alone asks for nothing; no create flag is done */
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	    attr->create_flags) {
		verbs_err(&ctx->ibv_ctx, "qhca: unsupported create_flags %#x\n",
			  attr->create_flags);
		return EOPNOTSUPP;
	}
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	    !check_comp_mask(attr->send_ops_flags,
			     qhca_supported_send_ops(attr->qp_type))) {
		verbs_err(&ctx->ibv_ctx,
			  "qhca: unsupported send_ops_flags %#llx\n",
			  (unsigned long long)attr->send_ops_flags);
		return EOPNOTSUPP;
	}
	return 0;
}

static struct ibv_qp *qhca_create_qp_common(struct ibv_context *ibctx,
					    struct ibv_qp_init_attr_ex *attr)
{
	struct qhca_context *ctx = to_qhca_ctx(ibctx);
	struct qhca_uv_create_qp_resp resp = {};
	struct qhca_uv_create_qp cmd = {};
	struct ibv_qp_cap req_cap = attr->cap;
	uint32_t comp_mask = attr->comp_mask;
	struct qhca_qp *qp;
	int ret;

	ret = qhca_check_qp_attr(ctx, attr);
	if (ret) {
		errno = ret;
		return NULL;
	}

	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}

	ret = qhca_qp_setup(qp, attr);
	if (ret)
		goto err_free;

	/*
	 * The kernel sizes its view of the rings from the caps: send the
	 * actual ones, from which it derives the same strides (README.md).
	 */
	qhca_qp_get_cap(qp, &attr->cap);
	cmd.sq_va = (uintptr_t)qp->sq.buf;
	cmd.sq_depth = qp->sq.depth;
	cmd.rq_va = (uintptr_t)qp->rq.buf;
	cmd.rq_depth = qp->rq.depth;

	/*
	 * create_flags were checked to be 0: the command (whose comp_mask
	 * check refuses the bit) need not hear of them
	 */
	attr->comp_mask &= ~IBV_QP_INIT_ATTR_CREATE_FLAGS;
	ret = ibv_cmd_create_qp_ex(ibctx, &qp->vqp, attr, &cmd.ibv_cmd,
				   sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	attr->comp_mask = comp_mask;
	if (ret)
		goto err_teardown;

	qp->qpn = qp->vqp.qp.qp_num;
	if (qp->qpn > QHCA_DB_NUM_MASK) {
		verbs_err(&ctx->ibv_ctx, "qhca: kernel QPN %u above %u\n",
			  qp->qpn, QHCA_DB_NUM_MASK);
		ret = EINVAL;
		goto err_destroy;
	}
	if (qhca_check_qp_resp(&resp.drv_payload, &qp->sq, &qp->rq)) {
		verbs_err(&ctx->ibv_ctx,
			  "qhca: QP %u geometry differs between kernel and provider (depth/log stride/SGEs: SQ %u/%u/%u vs %u/%u/%u, RQ %u/%u/%u vs %u/%u/%u; inline %u vs %u; comp_mask %#x): kernel module and libqhca do not match\n",
			  qp->qpn, resp.sq_depth, resp.sq_log_stride,
			  resp.max_send_sge, qp->sq.depth, qp->sq.log_stride,
			  qp->sq.max_sge, resp.rq_depth, resp.rq_log_stride,
			  resp.max_recv_sge, qp->rq.depth, qp->rq.log_stride,
			  qp->rq.max_sge, resp.max_inline, qp->sq.max_inline,
			  resp.comp_mask);
		ret = EINVAL;
		goto err_destroy;
	}

	qhca_lock_cqs(&qp->vqp.qp);
	ret = qhca_qp_table_insert(ctx, qp);
	qhca_unlock_cqs(&qp->vqp.qp);
	if (ret)
		goto err_destroy;

	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		qhca_qp_fill_wr_ops(qp, attr->send_ops_flags);
		qp->vqp.comp_mask |= VERBS_QP_EX;
	}

	/* What the rings hold, whatever the kernel echoed back */
	qhca_qp_get_cap(qp, &attr->cap);
	return &qp->vqp.qp;

err_destroy:
	ibv_cmd_destroy_qp(&qp->vqp.qp);
err_teardown:
	qhca_qp_teardown(qp);
err_free:
	free(qp);
	attr->cap = req_cap;
	errno = ret;
	return NULL;
}

struct ibv_qp *qhca_create_qp(struct ibv_pd *pd,
			      struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex attr_ex = {};
	struct ibv_qp *qp;

	memcpy(&attr_ex, attr, sizeof(*attr));
	attr_ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	attr_ex.pd = pd;

	qp = qhca_create_qp_common(pd->context, &attr_ex);
	if (qp)
		attr->cap = attr_ex.cap;
	return qp;
}

struct ibv_qp *qhca_create_qp_ex(struct ibv_context *ibctx,
				 struct ibv_qp_init_attr_ex *attr)
{
	return qhca_create_qp_common(ibctx, attr);
}

int qhca_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		   int attr_mask)
{
	struct qhca_qp *qp = to_qhca_qp(ibqp);
	struct ibv_modify_qp cmd = {};
	int ret;

	ret = ibv_cmd_modify_qp(ibqp, attr, attr_mask, &cmd, sizeof(cmd));
	if (ret)
		return ret;

	if ((attr_mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RESET) {
		qhca_lock_cqs(ibqp);
		qhca_clean_cqs(qp);
		qhca_qp_reset_indices(qp);
		qhca_unlock_cqs(ibqp);
	}
	return 0;
}

int qhca_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		  int attr_mask, struct ibv_qp_init_attr *init_attr)
{
	struct qhca_qp *qp = to_qhca_qp(ibqp);
	struct ibv_query_qp cmd = {};
	int ret;

	ret = ibv_cmd_query_qp(ibqp, attr, attr_mask, init_attr, &cmd,
			       sizeof(cmd));
	if (ret)
		return ret;

	qhca_qp_get_cap(qp, &attr->cap);
	init_attr->cap = attr->cap;
	return 0;
}

int qhca_destroy_qp(struct ibv_qp *ibqp)
{
	struct qhca_qp *qp = to_qhca_qp(ibqp);
	int ret;

	ret = ibv_cmd_destroy_qp(ibqp);
	if (ret)
		return ret;

	/* The device writes no more CQEs for it: drop those not yet polled */
	qhca_lock_cqs(ibqp);
	qhca_clean_cqs(qp);
	qhca_qp_table_remove(qhca_qp_ctx(qp), qp->qpn);
	qhca_unlock_cqs(ibqp);

	qhca_qp_teardown(qp);
	free(qp);
	return 0;
}

/* IBA 10.8.2: no sends before RTS, no receives in RESET */
static inline bool qhca_qp_can_send(struct qhca_qp *qp)
{
	enum ibv_qp_state s = qp->vqp.qp.state;

	return s != IBV_QPS_RESET && s != IBV_QPS_INIT && s != IBV_QPS_RTR;
}

static inline void qhca_sq_doorbell(struct qhca_qp *qp)
{
	udma_to_device_barrier();
	qhca_ring_db(qhca_qp_ctx(qp), QHCA_DB_SQ, qp->qpn,
		     atomic_load_explicit(&qp->sq.pi, memory_order_relaxed));
}

int qhca_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad_wr)
{
	struct qhca_qp *qp = to_qhca_qp(ibqp);
	struct qhca_wq *sq = &qp->sq;
	uint32_t start, pi;
	int ret = 0;

	pthread_spin_lock(&sq->lock);

	if (!qhca_qp_can_send(qp)) {
		*bad_wr = wr;
		ret = EINVAL;
		goto out;
	}

	start = atomic_load_explicit(&sq->pi, memory_order_relaxed);
	pi = start;
	for (; wr; wr = wr->next) {
		if (qhca_wq_full(sq)) {
			ret = ENOMEM;
			*bad_wr = wr;
			break;
		}
		ret = qhca_build_send_wqe(qhca_wq_entry(sq, pi), &qp->sqp, wr);
		if (ret) {
			*bad_wr = wr;
			break;
		}
		/* a type 2 window's key is the new one from here on */
		if (wr->opcode == IBV_WR_BIND_MW)
			wr->bind_mw.mw->rkey = wr->bind_mw.rkey;
		pi++;
		atomic_store_explicit(&sq->pi, pi, memory_order_relaxed);
	}

	if (pi != start)
		qhca_sq_doorbell(qp);
out:
	pthread_spin_unlock(&sq->lock);
	return ret;
}

/*
 * ibv_bind_mw() (type 1 windows; libibverbs has checked the type, and the
 * MR's PD against the window's): a BIND_MW work request on @ibqp's SQ
 * giving the window its next key, which is mw->rkey once the request is
 * posted.  Binding and unbinding (no MR, length 0) both change the key.
 * The device's answer is the completion: a bind it refuses
 * (IBV_WC_MW_BIND_ERR) leaves the window as it was, under its old key,
 * while mw->rkey has the new one.
 */
int qhca_bind_mw(struct ibv_qp *ibqp, struct ibv_mw *mw,
		 struct ibv_mw_bind *mw_bind)
{
	struct qhca_qp *qp = to_qhca_qp(ibqp);
	struct qhca_wq *sq = &qp->sq;
	uint32_t new_key, pi;
	int ret;

	if (mw->type != IBV_MW_TYPE_1)
		return EINVAL;
	new_key = ibv_inc_rkey(mw->rkey);

	pthread_spin_lock(&sq->lock);
	if (!qhca_qp_can_send(qp)) {
		ret = EINVAL;
		goto out;
	}
	if (qhca_wq_full(sq)) {
		ret = ENOMEM;
		goto out;
	}
	pi = atomic_load_explicit(&sq->pi, memory_order_relaxed);
	ret = qhca_build_bind_wqe(qhca_wq_entry(sq, pi), &qp->sqp,
				  mw_bind->wr_id, mw_bind->send_flags, mw,
				  new_key, &mw_bind->bind_info);
	if (ret)
		goto out;
	atomic_store_explicit(&sq->pi, pi + 1, memory_order_relaxed);
	qhca_sq_doorbell(qp);
	mw->rkey = new_key;
out:
	pthread_spin_unlock(&sq->lock);
	return ret;
}

int qhca_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		   struct ibv_recv_wr **bad_wr)
{
	struct qhca_qp *qp = to_qhca_qp(ibqp);
	struct qhca_wq *rq = &qp->rq;
	uint32_t start, pi;
	int ret = 0;

	if (ibqp->srq || ibqp->state == IBV_QPS_RESET) {
		*bad_wr = wr;
		return EINVAL;
	}

	pthread_spin_lock(&rq->lock);
	start = atomic_load_explicit(&rq->pi, memory_order_relaxed);
	pi = start;
	for (; wr; wr = wr->next) {
		if (qhca_wq_full(rq)) {
			ret = ENOMEM;
			*bad_wr = wr;
			break;
		}
		ret = qhca_build_recv_wqe(qhca_wq_entry(rq, pi), rq->max_sge,
					  wr);
		if (ret) {
			*bad_wr = wr;
			break;
		}
		pi++;
		atomic_store_explicit(&rq->pi, pi, memory_order_relaxed);
	}

	if (pi != start) {
		udma_to_device_barrier();
		qhca_ring_db(qhca_qp_ctx(qp), QHCA_DB_RQ, qp->qpn, pi);
	}
	pthread_spin_unlock(&rq->lock);
	return ret;
}

/*
 * ibv_wr_*() API.  wr_start() takes the SQ lock; each ibv_wr_<op>() starts
 * a WQE at the producer index and the wr_set_*() calls complete it;
 * wr_complete() rings the doorbell once for all of them.  The first error
 * is kept and returned by wr_complete(), which then posts nothing.
 */
static void qhca_wr_start(struct ibv_qp_ex *ibqpx)
{
	struct qhca_qp *qp = to_qhca_qp_ex(ibqpx);

	pthread_spin_lock(&qp->sq.lock);
	qp->wr_start_pi = atomic_load_explicit(&qp->sq.pi,
					       memory_order_relaxed);
	qp->wr_cur = NULL;
	qp->wr_nbind = 0;
	qp->wr_err = qhca_qp_can_send(qp) ? 0 : EINVAL;
}

/* Posted: the windows the session bound have their new keys */
static void qhca_wr_bound(struct qhca_qp *qp, uint32_t pi)
{
	struct qhca_send_wqe *wqe;
	uint32_t i;

	for (i = qp->wr_start_pi; qp->wr_nbind && i != pi; i++) {
		wqe = qhca_wq_entry(&qp->sq, i);
		if (wqe->opcode != QHCA_WQE_BIND_MW)
			continue;
		qp->sq_mw[i & (qp->sq.depth - 1)]->rkey =
			le32toh(wqe->bind.new_key);
		qp->wr_nbind--;
	}
}

static int qhca_wr_complete(struct ibv_qp_ex *ibqpx)
{
	struct qhca_qp *qp = to_qhca_qp_ex(ibqpx);
	uint32_t pi = atomic_load_explicit(&qp->sq.pi, memory_order_relaxed);
	int ret = qp->wr_err;

	if (ret) {
		atomic_store_explicit(&qp->sq.pi, qp->wr_start_pi,
				      memory_order_relaxed);
	} else if (pi != qp->wr_start_pi) {
		qhca_sq_doorbell(qp);
		qhca_wr_bound(qp, pi);
	}
	qp->wr_cur = NULL;
	pthread_spin_unlock(&qp->sq.lock);
	return ret;
}

static void qhca_wr_abort(struct ibv_qp_ex *ibqpx)
{
	struct qhca_qp *qp = to_qhca_qp_ex(ibqpx);

	atomic_store_explicit(&qp->sq.pi, qp->wr_start_pi,
			      memory_order_relaxed);
	qp->wr_cur = NULL;
	pthread_spin_unlock(&qp->sq.lock);
}

static struct qhca_send_wqe *qhca_wr_begin(struct ibv_qp_ex *ibqpx,
					   uint8_t hw_op)
{
	struct qhca_qp *qp = to_qhca_qp_ex(ibqpx);
	struct qhca_send_wqe *wqe;
	uint32_t pi;

	qp->wr_cur = NULL;
	if (qp->wr_err)
		return NULL;
	if (ibqpx->wr_flags & ~(IBV_SEND_FENCE | IBV_SEND_SIGNALED |
				IBV_SEND_SOLICITED | IBV_SEND_INLINE)) {
		qp->wr_err = EINVAL;
		return NULL;
	}
	if (qhca_wq_full(&qp->sq)) {
		qp->wr_err = ENOMEM;
		return NULL;
	}

	pi = atomic_load_explicit(&qp->sq.pi, memory_order_relaxed);
	wqe = qhca_wq_entry(&qp->sq, pi);
	qhca_wqe_init(wqe, hw_op,
		      qhca_wqe_flags(ibqpx->wr_flags, qp->sqp.sig_all),
		      ibqpx->wr_id);
	atomic_store_explicit(&qp->sq.pi, pi + 1, memory_order_relaxed);
	qp->wr_cur = wqe;
	return wqe;
}

static void qhca_wr_send(struct ibv_qp_ex *ibqpx)
{
	qhca_wr_begin(ibqpx, QHCA_WQE_SEND);
}

static void qhca_wr_send_imm(struct ibv_qp_ex *ibqpx, __be32 imm_data)
{
	struct qhca_send_wqe *wqe = qhca_wr_begin(ibqpx,
						  QHCA_WQE_SEND_WITH_IMM);

	if (wqe)
		memcpy(wqe->imm_data, &imm_data, sizeof(wqe->imm_data));
}

static void qhca_wr_send_inv(struct ibv_qp_ex *ibqpx,
			     uint32_t invalidate_rkey)
{
	struct qhca_send_wqe *wqe = qhca_wr_begin(ibqpx,
						  QHCA_WQE_SEND_WITH_INV);

	if (wqe)
		wqe->invalidate_rkey = htole32(invalidate_rkey);
}

static void qhca_wr_rdma_write(struct ibv_qp_ex *ibqpx, uint32_t rkey,
			       uint64_t remote_addr)
{
	struct qhca_send_wqe *wqe = qhca_wr_begin(ibqpx, QHCA_WQE_RDMA_WRITE);

	if (wqe)
		qhca_wqe_set_rdma(wqe, remote_addr, rkey);
}

static void qhca_wr_rdma_write_imm(struct ibv_qp_ex *ibqpx, uint32_t rkey,
				   uint64_t remote_addr, __be32 imm_data)
{
	struct qhca_send_wqe *wqe =
		qhca_wr_begin(ibqpx, QHCA_WQE_RDMA_WRITE_WITH_IMM);

	if (!wqe)
		return;
	qhca_wqe_set_rdma(wqe, remote_addr, rkey);
	memcpy(wqe->imm_data, &imm_data, sizeof(wqe->imm_data));
}

static void qhca_wr_rdma_read(struct ibv_qp_ex *ibqpx, uint32_t rkey,
			      uint64_t remote_addr)
{
	struct qhca_send_wqe *wqe = qhca_wr_begin(ibqpx, QHCA_WQE_RDMA_READ);

	if (wqe)
		qhca_wqe_set_rdma(wqe, remote_addr, rkey);
}

static void qhca_wr_atomic_cmp_swp(struct ibv_qp_ex *ibqpx, uint32_t rkey,
				   uint64_t remote_addr, uint64_t compare,
				   uint64_t swap)
{
	struct qhca_send_wqe *wqe =
		qhca_wr_begin(ibqpx, QHCA_WQE_ATOMIC_CMP_AND_SWP);

	if (wqe)
		qhca_wqe_set_atomic(wqe, remote_addr, rkey, compare, swap);
}

static void qhca_wr_atomic_fetch_add(struct ibv_qp_ex *ibqpx, uint32_t rkey,
				     uint64_t remote_addr, uint64_t add)
{
	struct qhca_send_wqe *wqe =
		qhca_wr_begin(ibqpx, QHCA_WQE_ATOMIC_FETCH_AND_ADD);

	if (wqe)
		qhca_wqe_set_atomic(wqe, remote_addr, rkey, add, 0);
}

/*
 * IBA 1.5 placement operations (RC).  The WQE carries all: FLUSH its range,
 * placement type and selectivity level (the FETH), ATOMIC WRITE its 8
 * bytes as they are to land in remote memory.
 */
#ifdef QHCA_HAVE_IBV_FLUSH
static void qhca_wr_flush(struct ibv_qp_ex *ibqpx, uint32_t rkey,
			  uint64_t remote_addr, size_t len, uint8_t type,
			  uint8_t level)
{
	struct qhca_qp *qp = to_qhca_qp_ex(ibqpx);
	struct qhca_send_wqe *wqe = qhca_wr_begin(ibqpx, QHCA_WQE_FLUSH);

	if (!wqe)
		return;
	if (!type || type & ~(IBV_FLUSH_GLOBAL | IBV_FLUSH_PERSISTENT) ||
	    level > IBV_FLUSH_MR || len > QHCA_MAX_MSG_SIZE) {
		qp->wr_err = EINVAL;
		return;
	}
	qhca_wqe_set_rdma(wqe, remote_addr, rkey);
	wqe->rdma.feth = htole32((type & QHCA_FLUSH_TYPE_MASK) |
				 (uint32_t)level << QHCA_FLUSH_LEVEL_SHIFT);
	wqe->rdma.compare_add = htole64(len);
}
#endif

static void qhca_wr_atomic_write(struct ibv_qp_ex *ibqpx, uint32_t rkey,
				 uint64_t remote_addr, const void *atomic_wr)
{
	struct qhca_send_wqe *wqe =
		qhca_wr_begin(ibqpx, QHCA_WQE_ATOMIC_WRITE);

	if (!wqe)
		return;
	qhca_wqe_set_rdma(wqe, remote_addr, rkey);
	memcpy(&wqe->rdma.compare_add, atomic_wr, sizeof(wqe->rdma.compare_add));
}

static void qhca_wr_local_inv(struct ibv_qp_ex *ibqpx,
			      uint32_t invalidate_rkey)
{
	struct qhca_send_wqe *wqe = qhca_wr_begin(ibqpx, QHCA_WQE_LOCAL_INV);

	if (wqe)
		wqe->invalidate_rkey = htole32(invalidate_rkey);
}

/*
 * A type 2 window (type 1 ones are bound by ibv_bind_mw() only) gets
 * @rkey and part of an MR: mw->rkey is @rkey once wr_complete() posts it
 */
static void qhca_wr_bind_mw(struct ibv_qp_ex *ibqpx, struct ibv_mw *mw,
			    uint32_t rkey,
			    const struct ibv_mw_bind_info *bind_info)
{
	struct qhca_qp *qp = to_qhca_qp_ex(ibqpx);
	struct qhca_send_wqe *wqe = qhca_wr_begin(ibqpx, QHCA_WQE_BIND_MW);
	uint32_t pi;

	if (!wqe)
		return;
	if (!mw || mw->type != IBV_MW_TYPE_2 || !bind_info->mr ||
	    !bind_info->length ||
	    qhca_wqe_set_bind(wqe, mw->rkey, rkey, bind_info)) {
		qp->wr_err = EINVAL;
		return;
	}
	pi = atomic_load_explicit(&qp->sq.pi, memory_order_relaxed) - 1;
	qp->sq_mw[pi & (qp->sq.depth - 1)] = mw;
	qp->wr_nbind++;
}

static void qhca_wr_set_ud_addr(struct ibv_qp_ex *ibqpx, struct ibv_ah *ah,
				uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct qhca_qp *qp = to_qhca_qp_ex(ibqpx);

	if (!qp->wr_cur)
		return;
	if (!ah) {
		qp->wr_err = EINVAL;
		return;
	}
	qhca_wqe_set_ud(qp->wr_cur, to_qhca_ah(ah)->ahn, remote_qpn,
			remote_qkey);
}

static void qhca_wr_set_sge_list(struct ibv_qp_ex *ibqpx, size_t num_sge,
				 const struct ibv_sge *sg_list)
{
	struct qhca_qp *qp = to_qhca_qp_ex(ibqpx);

	if (!qp->wr_cur)
		return;
	/* a local operation (LOCAL_INV, BIND_MW) has no SGEs */
	if (num_sge > qp->sqp.max_sge ||
	    qhca_wqe_op_has(qp->wr_cur->opcode, QHCA_WQE_OPF_LOCAL)) {
		qp->wr_err = EINVAL;
		return;
	}
	qhca_wqe_set_sgl(qp->wr_cur, sg_list, num_sge);
}

static void qhca_wr_set_sge(struct ibv_qp_ex *ibqpx, uint32_t lkey,
			    uint64_t addr, uint32_t length)
{
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	qhca_wr_set_sge_list(ibqpx, 1, &sge);
}

static void qhca_wr_set_inline_data_list(struct ibv_qp_ex *ibqpx,
					 size_t num_buf,
					 const struct ibv_data_buf *buf_list)
{
	struct qhca_qp *qp = to_qhca_qp_ex(ibqpx);

	if (!qp->wr_cur)
		return;
	if (!qhca_wqe_op_has(qp->wr_cur->opcode, QHCA_WQE_OPF_INLINE) ||
	    qhca_wqe_set_inline_list(qp->wr_cur, buf_list, num_buf,
				     qp->sqp.max_inline))
		qp->wr_err = EINVAL;
}

static void qhca_wr_set_inline_data(struct ibv_qp_ex *ibqpx, void *addr,
				    size_t length)
{
	struct ibv_data_buf buf = { .addr = addr, .length = length };

	qhca_wr_set_inline_data_list(ibqpx, 1, &buf);
}

/* send_ops_flags has been checked against qhca_supported_send_ops() */
void qhca_qp_fill_wr_ops(struct qhca_qp *qp, uint64_t send_ops_flags)
{
	struct ibv_qp_ex *qpx = &qp->vqp.qp_ex;

	qpx->wr_start = qhca_wr_start;
	qpx->wr_complete = qhca_wr_complete;
	qpx->wr_abort = qhca_wr_abort;

	if (send_ops_flags & IBV_QP_EX_WITH_SEND)
		qpx->wr_send = qhca_wr_send;
	if (send_ops_flags & IBV_QP_EX_WITH_SEND_WITH_IMM)
		qpx->wr_send_imm = qhca_wr_send_imm;
	if (send_ops_flags & IBV_QP_EX_WITH_SEND_WITH_INV)
		qpx->wr_send_inv = qhca_wr_send_inv;
	if (send_ops_flags & IBV_QP_EX_WITH_RDMA_WRITE)
		qpx->wr_rdma_write = qhca_wr_rdma_write;
	if (send_ops_flags & IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)
		qpx->wr_rdma_write_imm = qhca_wr_rdma_write_imm;
	if (send_ops_flags & IBV_QP_EX_WITH_RDMA_READ)
		qpx->wr_rdma_read = qhca_wr_rdma_read;
	if (send_ops_flags & IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP)
		qpx->wr_atomic_cmp_swp = qhca_wr_atomic_cmp_swp;
	if (send_ops_flags & IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
		qpx->wr_atomic_fetch_add = qhca_wr_atomic_fetch_add;
	if (send_ops_flags & IBV_QP_EX_WITH_LOCAL_INV)
		qpx->wr_local_inv = qhca_wr_local_inv;
	/* sq_mw is there if the create asked for BIND_MW */
	if ((send_ops_flags & IBV_QP_EX_WITH_BIND_MW) && qp->sq_mw)
		qpx->wr_bind_mw = qhca_wr_bind_mw;
#ifdef QHCA_HAVE_IBV_FLUSH
	if (send_ops_flags & IBV_QP_EX_WITH_FLUSH)
		qpx->wr_flush = qhca_wr_flush;
#endif
	if (send_ops_flags & IBV_QP_EX_WITH_ATOMIC_WRITE)
		qpx->wr_atomic_write = qhca_wr_atomic_write;

	qpx->wr_set_sge = qhca_wr_set_sge;
	qpx->wr_set_sge_list = qhca_wr_set_sge_list;
	qpx->wr_set_inline_data = qhca_wr_set_inline_data;
	qpx->wr_set_inline_data_list = qhca_wr_set_inline_data_list;
	if (qp->sqp.qp_type == IBV_QPT_UD)
		qpx->wr_set_ud_addr = qhca_wr_set_ud_addr;
}

/*
 * Shared receive queues.  The device takes SRQ entries in ring order, but
 * they complete in any order (on any QP and CQ): an entry is free once its
 * CQE has been polled and every older entry's too.
 */
int qhca_srq_setup(struct qhca_srq *srq, struct ibv_srq_attr *attr)
{
	struct qhca_wq_geom rqs;
	int ret;

	ret = qhca_rq_size(attr->max_wr, attr->max_sge, &rqs);
	if (ret)
		return ret;
	if (attr->srq_limit >= rqs.depth)
		return EINVAL;

	srq->done = calloc(rqs.depth, sizeof(*srq->done));
	if (!srq->done)
		return ENOMEM;

	ret = qhca_wq_alloc(&srq->wq, rqs.depth, rqs.log_stride);
	if (ret) {
		free(srq->done);
		srq->done = NULL;
		return ret;
	}
	srq->wq.max_sge = rqs.max_sge;
	return 0;
}

void qhca_srq_teardown(struct qhca_srq *srq)
{
	qhca_wq_free(&srq->wq);
	free(srq->done);
	srq->done = NULL;
}

void qhca_srq_complete(struct qhca_srq *srq, uint16_t wqe_index)
{
	struct qhca_wq *wq = &srq->wq;
	uint32_t mask = wq->depth - 1;
	uint32_t ci, pi, n;

	pthread_spin_lock(&wq->lock);
	ci = atomic_load_explicit(&wq->ci, memory_order_relaxed);
	pi = atomic_load_explicit(&wq->pi, memory_order_relaxed);
	n = ((uint32_t)wqe_index - ci) & mask;
	if (n < pi - ci) {
		srq->done[(ci + n) & mask] = 1;
		while (ci != pi && srq->done[ci & mask]) {
			srq->done[ci & mask] = 0;
			ci++;
		}
		atomic_store_explicit(&wq->ci, ci, memory_order_release);
	}
	pthread_spin_unlock(&wq->lock);
}

struct ibv_srq *qhca_create_srq(struct ibv_pd *pd,
				struct ibv_srq_init_attr *attr)
{
	struct qhca_uv_create_srq_resp resp = {};
	struct qhca_uv_create_srq cmd = {};
	struct ibv_srq_attr req_attr = attr->attr;
	struct qhca_srq *srq;
	int ret;

	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		errno = ENOMEM;
		return NULL;
	}

	ret = qhca_srq_setup(srq, &attr->attr);
	if (ret)
		goto err_free;

	/* As for QPs, the kernel gets the actual sizes */
	attr->attr.max_wr = srq->wq.depth;
	attr->attr.max_sge = srq->wq.max_sge;
	cmd.buf_va = (uintptr_t)srq->wq.buf;
	cmd.depth = srq->wq.depth;

	ret = ibv_cmd_create_srq(pd, &srq->ibv_srq, attr, &cmd.ibv_cmd,
				 sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err_teardown;

	srq->srqn = resp.srqn;
	if (srq->srqn > QHCA_DB_NUM_MASK ||
	    qhca_check_srq_resp(&resp.drv_payload, &srq->wq)) {
		verbs_err(verbs_get_ctx(pd->context),
			  "qhca: SRQ %u geometry differs between kernel and provider (depth/log stride/SGEs %u/%u/%u vs %u/%u/%u; comp_mask %#x): kernel module and libqhca do not match\n",
			  resp.srqn, resp.depth, resp.log_stride, resp.max_sge,
			  srq->wq.depth, srq->wq.log_stride, srq->wq.max_sge,
			  resp.comp_mask);
		ibv_cmd_destroy_srq(&srq->ibv_srq);
		ret = EINVAL;
		goto err_teardown;
	}

	attr->attr.max_wr = srq->wq.depth;
	attr->attr.max_sge = srq->wq.max_sge;
	return &srq->ibv_srq;

err_teardown:
	qhca_srq_teardown(srq);
err_free:
	free(srq);
	attr->attr = req_attr;
	errno = ret;
	return NULL;
}

/*
 * Resizing (ibv_modify_srq with IBV_SRQ_MAX_WR): a new ring of the same
 * stride, for max_wr entries as create sizes it, and its done[]
 */
int qhca_srq_ring_alloc(struct qhca_srq *srq, uint32_t max_wr,
			struct qhca_srq_ring *nr)
{
	struct qhca_wq_geom rqs;
	int ret;

	memset(nr, 0, sizeof(*nr));
	ret = qhca_rq_size(max_wr, srq->wq.max_sge, &rqs);
	if (ret)
		return ret;
	/* the caps the SRQ has give its stride again */
	if (rqs.log_stride != srq->wq.log_stride)
		return EINVAL;
	nr->done = calloc(rqs.depth, sizeof(*nr->done));
	if (!nr->done)
		return ENOMEM;
	nr->buf = qhca_alloc_ring((size_t)rqs.depth << rqs.log_stride,
				  &nr->buf_size);
	if (!nr->buf) {
		free(nr->done);
		nr->done = NULL;
		return ENOMEM;
	}
	nr->depth = rqs.depth;
	return 0;
}

/*
 * Under srq->wq.lock: does the new ring hold every entry not yet free
 * (posted and not completed, or completed behind an older one)?
 */
bool qhca_srq_ring_fits(struct qhca_srq *srq, const struct qhca_srq_ring *nr)
{
	uint32_t pi = atomic_load_explicit(&srq->wq.pi, memory_order_relaxed);
	uint32_t ci = atomic_load_explicit(&srq->wq.ci, memory_order_relaxed);

	return pi - ci <= nr->depth;
}

/*
 * Under srq->wq.lock, once the device has moved to the new ring: entries
 * keep their free-running indices (the device's WQE i moved from slot
 * i % old depth to slot i % new depth), so the done[] marks of the entries
 * not yet free move the same way, and posting goes on at pi in the new
 * ring.  @nr gets the old ring, for qhca_srq_ring_free().
 */
void qhca_srq_ring_switch(struct qhca_srq *srq, struct qhca_srq_ring *nr)
{
	struct qhca_wq *wq = &srq->wq;
	uint32_t pi = atomic_load_explicit(&wq->pi, memory_order_relaxed);
	uint32_t ci = atomic_load_explicit(&wq->ci, memory_order_relaxed);
	uint32_t omask = wq->depth - 1, nmask = nr->depth - 1, i;
	struct qhca_srq_ring old = {
		.buf = wq->buf, .buf_size = wq->buf_size, .depth = wq->depth,
		.done = srq->done,
	};

	for (i = ci; i != pi; i++)
		nr->done[i & nmask] = srq->done[i & omask];
	wq->buf = nr->buf;
	wq->buf_size = nr->buf_size;
	wq->depth = nr->depth;
	srq->done = nr->done;
	*nr = old;
}

void qhca_srq_ring_free(struct qhca_srq_ring *nr)
{
	if (nr->buf)
		qhca_free_ring(nr->buf, nr->buf_size);
	free(nr->done);
	memset(nr, 0, sizeof(*nr));
}

/*
 * The device moves the WQEs it has not taken to the new ring (RESIZE_SRQ);
 * the lock keeps posting and SRQ completions out until the switch.  A ring
 * too small for the entries not yet free is EINVAL; an error leaves the
 * SRQ as it was.
 */
static int qhca_resize_srq(struct qhca_srq *srq, struct ibv_srq_attr *attr,
			   int attr_mask)
{
	struct qhca_uv_modify_srq cmd = {};
	struct ibv_srq_attr a = *attr;
	struct qhca_srq_ring nr;
	int ret;

	ret = qhca_srq_ring_alloc(srq, attr->max_wr, &nr);
	if (ret)
		return ret;
	if ((attr_mask & IBV_SRQ_LIMIT) && attr->srq_limit >= nr.depth) {
		ret = EINVAL;
		goto out;
	}
	a.max_wr = nr.depth;
	cmd.buf_va = (uintptr_t)nr.buf;
	cmd.depth = nr.depth;

	pthread_spin_lock(&srq->wq.lock);
	if (!qhca_srq_ring_fits(srq, &nr)) {
		ret = EINVAL;
	} else {
		ret = ibv_cmd_modify_srq(&srq->ibv_srq, &a, attr_mask,
					 &cmd.ibv_cmd, sizeof(cmd));
		if (!ret)
			qhca_srq_ring_switch(srq, &nr);
	}
	pthread_spin_unlock(&srq->wq.lock);
out:
	qhca_srq_ring_free(&nr);
	return ret;
}

int qhca_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
		    int attr_mask)
{
	struct qhca_srq *srq = to_qhca_srq(ibsrq);
	struct ibv_modify_srq cmd = {};
	uint32_t depth;

	if (attr_mask & ~(IBV_SRQ_LIMIT | IBV_SRQ_MAX_WR))
		return EOPNOTSUPP;
	if (attr_mask & IBV_SRQ_MAX_WR)
		return qhca_resize_srq(srq, attr, attr_mask);

	pthread_spin_lock(&srq->wq.lock);
	depth = srq->wq.depth;
	pthread_spin_unlock(&srq->wq.lock);
	if ((attr_mask & IBV_SRQ_LIMIT) && attr->srq_limit >= depth)
		return EINVAL;

	return ibv_cmd_modify_srq(ibsrq, attr, attr_mask, &cmd, sizeof(cmd));
}

int qhca_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd = {};

	return ibv_cmd_query_srq(ibsrq, attr, &cmd, sizeof(cmd));
}

int qhca_destroy_srq(struct ibv_srq *ibsrq)
{
	struct qhca_srq *srq = to_qhca_srq(ibsrq);
	int ret;

	ret = ibv_cmd_destroy_srq(ibsrq);
	if (ret)
		return ret;

	qhca_srq_teardown(srq);
	free(srq);
	return 0;
}

int qhca_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad_wr)
{
	struct qhca_srq *srq = to_qhca_srq(ibsrq);
	struct qhca_wq *wq = &srq->wq;
	uint32_t start, pi;
	int ret = 0;

	pthread_spin_lock(&wq->lock);
	start = atomic_load_explicit(&wq->pi, memory_order_relaxed);
	pi = start;
	for (; wr; wr = wr->next) {
		if (qhca_wq_full(wq)) {
			ret = ENOMEM;
			*bad_wr = wr;
			break;
		}
		ret = qhca_build_recv_wqe(qhca_wq_entry(wq, pi), wq->max_sge,
					  wr);
		if (ret) {
			*bad_wr = wr;
			break;
		}
		pi++;
		atomic_store_explicit(&wq->pi, pi, memory_order_relaxed);
	}

	if (pi != start) {
		udma_to_device_barrier();
		qhca_ring_db(to_qhca_ctx(ibsrq->context), QHCA_DB_SRQ,
			     srq->srqn, pi);
	}
	pthread_spin_unlock(&wq->lock);
	return ret;
}
