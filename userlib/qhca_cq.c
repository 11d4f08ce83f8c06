// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * qhca rdma-core provider: completion queues.
 *
 * The CQ ring lives in this process's memory (the kernel pins it and hands
 * its pages to the device).  The device writes CQEs with an owner bit that
 * flips on every pass over the ring; polling reads the owner byte, then
 * (after udma_from_device_barrier()) the rest, and tells the device how far
 * it got with the CQ_CI doorbell.  Polling never enters the kernel.
 */

#include <config.h>

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "qhca.h"

int qhca_cq_setup(struct qhca_cq *cq, uint32_t depth)
{
	cq->ring = qhca_alloc_ring((size_t)depth * sizeof(struct qhca_cqe),
				   &cq->buf_size);
	if (!cq->ring)
		return ENOMEM;

	cq->depth = depth;
	cq->ci = 0;
	cq->db_ci = 0;
	cq->have_cur = false;
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	qhca_cq_fill_ex_ops(cq);
	return 0;
}

void qhca_cq_teardown(struct qhca_cq *cq)
{
	pthread_spin_destroy(&cq->lock);
	qhca_free_ring(cq->ring, cq->buf_size);
	cq->ring = NULL;
}

static inline struct qhca_context *qhca_cq_ctx(struct qhca_cq *cq)
{
	return to_qhca_ctx(cq->vcq.cq.context);
}

/* Tell the device how many CQEs have been consumed (CQ_CI doorbell) */
static void qhca_cq_update_ci(struct qhca_cq *cq)
{
	/* our reads of consumed entries before the device reuses them */
	udma_to_device_barrier();
	qhca_ring_db(qhca_cq_ctx(cq), QHCA_DB_CQ_CI, cq->cqn, cq->ci);
	cq->db_ci = cq->ci;
}

/* The entry at ci, if the device has written it on this pass */
static inline struct qhca_cqe *qhca_cq_peek(struct qhca_cq *cq)
{
	struct qhca_cqe *cqe = &cq->ring[cq->ci & (cq->depth - 1)];

	if (!qhca_cqe_owned(cqe, cq->ci, cq->depth))
		return NULL;
	/* the rest of the entry is read after its owner byte */
	udma_from_device_barrier();
	return cqe;
}

/*
 * Consume the entry at ci.  The device learns of it at the end of the poll
 * call, or sooner once half the ring has been consumed since the last
 * doorbell, so that a long poll does not hold the device back.
 */
static inline void qhca_cq_consume(struct qhca_cq *cq)
{
	cq->ci++;
	if (cq->ci - cq->db_ci >= cq->depth / 2)
		qhca_cq_update_ci(cq);
}

/*
 * Free the WQE a CQE completes: for an SQ/RQ, this and every older entry;
 * for an SRQ, this entry.  The QP is found by number; a CQE of a QP that
 * is gone (destroyed after the CQE was written) frees nothing.
 */
static void qhca_cq_retire(struct qhca_cq *cq, const struct qhca_cqe *cqe)
{
	struct qhca_qp *qp = qhca_qp_lookup(qhca_cq_ctx(cq),
					    le32toh(cqe->qpn));
	uint16_t idx = le16toh(cqe->wqe_index);

	if (!qp)
		return;

	if (cqe->opcode & QHCA_CQE_OP_RECV) {
		if (qp->vqp.qp.srq)
			qhca_srq_complete(to_qhca_srq(qp->vqp.qp.srq), idx);
		else
			qhca_wq_retire(&qp->rq, idx);
	} else {
		qhca_wq_retire(&qp->sq, idx);
	}
}

int qhca_poll_cq(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc)
{
	struct qhca_cq *cq = to_qhca_cq(ibcq);
	struct qhca_cqe *cqe;
	int n;

	pthread_spin_lock(&cq->lock);
	for (n = 0; n < ne; n++) {
		cqe = qhca_cq_peek(cq);
		if (!cqe)
			break;
		qhca_cq_retire(cq, cqe);
		qhca_cqe_to_wc(cqe, &wc[n]);
		qhca_cq_consume(cq);
	}
	if (cq->ci != cq->db_ci)
		qhca_cq_update_ci(cq);
	pthread_spin_unlock(&cq->lock);

	return n;
}

/*
 * Arm the CQ.  The doorbell carries the current consumer index, so it also
 * tells the device what has been consumed.
 */
int qhca_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct qhca_cq *cq = to_qhca_cq(ibcq);

	pthread_spin_lock(&cq->lock);
	udma_to_device_barrier();
	qhca_ring_db(qhca_cq_ctx(cq),
		     solicited_only ? QHCA_DB_CQ_ARM_SOLICITED : QHCA_DB_CQ_ARM,
		     cq->cqn, cq->ci);
	cq->db_ci = cq->ci;
	pthread_spin_unlock(&cq->lock);

	return 0;
}

/*
 * Remove the CQEs of a QP that is being destroyed or reset, with the CQ
 * lock held: walk back from the newest written entry, sliding the other
 * QPs' entries over the removed ones, then consume as many entries as were
 * removed.  Receive CQEs of an SRQ QP give their SRQ entries back.
 */
void qhca_cq_clean(struct qhca_cq *cq, struct qhca_qp *qp)
{
	struct qhca_srq *srq = qp->vqp.qp.srq ? to_qhca_srq(qp->vqp.qp.srq) :
						NULL;
	uint32_t mask = cq->depth - 1;
	struct qhca_cqe *cqe, *dst;
	uint32_t prod, nfreed = 0;
	uint8_t owner;

	for (prod = cq->ci; prod - cq->ci < cq->depth; prod++)
		if (!qhca_cqe_owned(&cq->ring[prod & mask], prod, cq->depth))
			break;
	udma_from_device_barrier();

	while (prod != cq->ci) {
		prod--;
		cqe = &cq->ring[prod & mask];
		if (le32toh(cqe->qpn) == qp->qpn) {
			if (srq && (cqe->opcode & QHCA_CQE_OP_RECV))
				qhca_srq_complete(srq,
						  le16toh(cqe->wqe_index));
			nfreed++;
		} else if (nfreed) {
			/* dst holds a valid entry: keep its owner bit */
			dst = &cq->ring[(prod + nfreed) & mask];
			owner = dst->owner;
			memcpy(dst, cqe, sizeof(*dst));
			dst->owner = owner;
		}
	}

	if (nfreed) {
		cq->ci += nfreed;
		qhca_cq_update_ci(cq);
	}
}

/*
 * Extended CQ (ibv_start_poll() and friends).  The current entry is
 * decoded once into cur_wc; the read_*() callbacks return its fields.
 */
static void qhca_cq_set_cur(struct qhca_cq *cq, struct qhca_cqe *cqe)
{
	qhca_cq_retire(cq, cqe);
	qhca_cqe_to_wc(cqe, &cq->cur_wc);
	cq->have_cur = true;
	cq->vcq.cq_ex.wr_id = cq->cur_wc.wr_id;
	cq->vcq.cq_ex.status = cq->cur_wc.status;
}

static int qhca_start_poll(struct ibv_cq_ex *ibcqx,
			   struct ibv_poll_cq_attr *attr)
{
	struct qhca_cq *cq = to_qhca_cq_ex(ibcqx);
	struct qhca_cqe *cqe;

	if (attr->comp_mask)
		return EINVAL;

	pthread_spin_lock(&cq->lock);
	cqe = qhca_cq_peek(cq);
	if (!cqe) {
		if (cq->ci != cq->db_ci)
			qhca_cq_update_ci(cq);
		pthread_spin_unlock(&cq->lock);
		return ENOENT;
	}
	qhca_cq_set_cur(cq, cqe);
	return 0;
}

static int qhca_next_poll(struct ibv_cq_ex *ibcqx)
{
	struct qhca_cq *cq = to_qhca_cq_ex(ibcqx);
	struct qhca_cqe *cqe;

	if (cq->have_cur) {
		cq->have_cur = false;
		qhca_cq_consume(cq);
	}
	cqe = qhca_cq_peek(cq);
	if (!cqe)
		return ENOENT;
	qhca_cq_set_cur(cq, cqe);
	return 0;
}

static void qhca_end_poll(struct ibv_cq_ex *ibcqx)
{
	struct qhca_cq *cq = to_qhca_cq_ex(ibcqx);

	if (cq->have_cur) {
		cq->have_cur = false;
		qhca_cq_consume(cq);
	}
	if (cq->ci != cq->db_ci)
		qhca_cq_update_ci(cq);
	pthread_spin_unlock(&cq->lock);
}

static enum ibv_wc_opcode qhca_wc_read_opcode(struct ibv_cq_ex *ibcqx)
{
	return to_qhca_cq_ex(ibcqx)->cur_wc.opcode;
}

static uint32_t qhca_wc_read_vendor_err(struct ibv_cq_ex *ibcqx)
{
	return to_qhca_cq_ex(ibcqx)->cur_wc.vendor_err;
}

static uint32_t qhca_wc_read_byte_len(struct ibv_cq_ex *ibcqx)
{
	return to_qhca_cq_ex(ibcqx)->cur_wc.byte_len;
}

/* imm_data, or with IBV_WC_WITH_INV the invalidated rkey (same storage) */
static __be32 qhca_wc_read_imm_data(struct ibv_cq_ex *ibcqx)
{
	return to_qhca_cq_ex(ibcqx)->cur_wc.imm_data;
}

static uint32_t qhca_wc_read_qp_num(struct ibv_cq_ex *ibcqx)
{
	return to_qhca_cq_ex(ibcqx)->cur_wc.qp_num;
}

static uint32_t qhca_wc_read_src_qp(struct ibv_cq_ex *ibcqx)
{
	return to_qhca_cq_ex(ibcqx)->cur_wc.src_qp;
}

static unsigned int qhca_wc_read_wc_flags(struct ibv_cq_ex *ibcqx)
{
	return to_qhca_cq_ex(ibcqx)->cur_wc.wc_flags;
}

/* RoCE: no LIDs, SLs or path bits */
static uint32_t qhca_wc_read_slid(struct ibv_cq_ex *ibcqx)
{
	return 0;
}

static uint8_t qhca_wc_read_sl(struct ibv_cq_ex *ibcqx)
{
	return 0;
}

static uint8_t qhca_wc_read_dlid_path_bits(struct ibv_cq_ex *ibcqx)
{
	return 0;
}

/* Every CQ gets every callback of IBV_WC_STANDARD_FLAGS */
void qhca_cq_fill_ex_ops(struct qhca_cq *cq)
{
	struct ibv_cq_ex *cqx = &cq->vcq.cq_ex;

	cqx->start_poll = qhca_start_poll;
	cqx->next_poll = qhca_next_poll;
	cqx->end_poll = qhca_end_poll;
	cqx->read_opcode = qhca_wc_read_opcode;
	cqx->read_vendor_err = qhca_wc_read_vendor_err;
	cqx->read_wc_flags = qhca_wc_read_wc_flags;
	cqx->read_byte_len = qhca_wc_read_byte_len;
	cqx->read_imm_data = qhca_wc_read_imm_data;
	cqx->read_qp_num = qhca_wc_read_qp_num;
	cqx->read_src_qp = qhca_wc_read_src_qp;
	cqx->read_slid = qhca_wc_read_slid;
	cqx->read_sl = qhca_wc_read_sl;
	cqx->read_dlid_path_bits = qhca_wc_read_dlid_path_bits;
}

#define QHCA_CQ_SUPPORTED_WC_FLAGS	IBV_WC_STANDARD_FLAGS
#define QHCA_CQ_SUPPORTED_FLAGS	IBV_CREATE_CQ_ATTR_SINGLE_THREADED

static struct ibv_cq_ex *qhca_create_cq_common(struct ibv_context *ibctx,
					       struct ibv_cq_init_attr_ex *attr)
{
	struct qhca_uv_create_cq_resp resp = {};
	struct qhca_uv_create_cq cmd = {};
	struct ibv_cq_init_attr_ex kattr;
	struct qhca_cq *cq;
	uint32_t depth;
	int ret;

	if (!check_comp_mask(attr->comp_mask, IBV_CQ_INIT_ATTR_MASK_FLAGS) ||
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	     !check_comp_mask(attr->flags, QHCA_CQ_SUPPORTED_FLAGS)) ||
	    !check_comp_mask(attr->wc_flags, QHCA_CQ_SUPPORTED_WC_FLAGS)) {
		errno = EOPNOTSUPP;
		return NULL;
	}

	ret = qhca_cq_depth(attr->cqe, &depth);
	if (ret) {
		errno = ret;
		return NULL;
	}

	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}

	ret = qhca_cq_setup(cq, depth);
	if (ret)
		goto err_free;

	cmd.buf_va = (uintptr_t)cq->ring;
	cmd.depth = depth;

	/* SINGLE_THREADED is a hint for us only; the CQ locks anyway */
	kattr = *attr;
	kattr.cqe = depth;
	kattr.comp_mask = 0;
	kattr.flags = 0;

	ret = ibv_cmd_create_cq_ex(ibctx, &kattr, &cq->vcq, &cmd.ibv_cmd,
				   sizeof(cmd), &resp.ibv_resp, sizeof(resp),
				   0);
	if (ret)
		goto err_teardown;

	cq->cqn = resp.cqn;
	if (cq->cqn > QHCA_DB_NUM_MASK ||
	    qhca_check_cq_resp(&resp.drv_payload, depth)) {
		verbs_err(verbs_get_ctx(ibctx),
			  "qhca: CQ %u geometry differs between kernel and provider (depth/log stride %u/%u vs %u/%u; comp_mask %#x): kernel module and libqhca do not match\n",
			  resp.cqn, resp.depth, resp.log_stride, depth,
			  qhca_geom_log2_ceil(QHCA_CQE_SIZE), resp.comp_mask);
		ibv_cmd_destroy_cq(&cq->vcq.cq);
		ret = EINVAL;
		goto err_teardown;
	}
	/* All of the ring is usable: the device stops only when it is full */
	cq->vcq.cq.cqe = depth;

	return &cq->vcq.cq_ex;

err_teardown:
	qhca_cq_teardown(cq);
err_free:
	free(cq);
	errno = ret;
	return NULL;
}

struct ibv_cq *qhca_create_cq(struct ibv_context *ibctx, int cqe,
			      struct ibv_comp_channel *channel,
			      int comp_vector)
{
	struct ibv_cq_init_attr_ex attr = {
		.cqe = cqe,
		.channel = channel,
		.comp_vector = comp_vector,
	};
	struct ibv_cq_ex *cqx;

	cqx = qhca_create_cq_common(ibctx, &attr);
	return cqx ? ibv_cq_ex_to_cq(cqx) : NULL;
}

struct ibv_cq_ex *qhca_create_cq_ex(struct ibv_context *ibctx,
				    struct ibv_cq_init_attr_ex *attr)
{
	return qhca_create_cq_common(ibctx, attr);
}

/*
 * ibv_resize_cq(): a new ring; what has not been polled moves to its first
 * entries (the device copies it), and polling goes on there from index 0.
 * Not between ibv_start_poll() and ibv_end_poll().
 */
int qhca_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct qhca_uv_resize_cq_resp resp = {};
	struct qhca_uv_resize_cq cmd = {};
	struct qhca_cq *cq = to_qhca_cq(ibcq);
	struct qhca_cqe *ring, *old;
	size_t size, old_size;
	uint32_t depth;
	int ret;

	ret = qhca_cq_depth(cqe, &depth);
	if (ret)
		return ret;
	ring = qhca_alloc_ring((size_t)depth * sizeof(struct qhca_cqe), &size);
	if (!ring)
		return ENOMEM;

	pthread_spin_lock(&cq->lock);
	if (cq->have_cur) {
		ret = EBUSY;
		goto out;
	}
	/* the device keeps what we have not polled, none of what we have */
	if (cq->ci != cq->db_ci)
		qhca_cq_update_ci(cq);
	cmd.buf_va = (uintptr_t)ring;
	cmd.depth = depth;
	ret = ibv_cmd_resize_cq(ibcq, depth, &cmd.ibv_cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp));
	if (ret)
		goto out;
	old = cq->ring;
	old_size = cq->buf_size;
	cq->ring = ring;
	cq->buf_size = size;
	cq->depth = depth;
	cq->ci = 0;
	cq->db_ci = 0;
	ibcq->cqe = depth;
	ring = old;
	size = old_size;
out:
	pthread_spin_unlock(&cq->lock);
	qhca_free_ring(ring, size);
	return ret;
}

int qhca_destroy_cq(struct ibv_cq *ibcq)
{
	struct qhca_cq *cq = to_qhca_cq(ibcq);
	int ret;

	ret = ibv_cmd_destroy_cq(ibcq);
	if (ret)
		return ret;

	qhca_cq_teardown(cq);
	free(cq);
	return 0;
}
