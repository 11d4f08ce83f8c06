// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * qhca rdma-core provider: the pure parts of the data path.  Queue sizing,
 * send/receive WQE encoding and CQE decoding, exactly as laid out in
 * include/qhca_hw.h.  Nothing here takes a lock, makes a system call or
 * touches the doorbell page; the host tests in tests/provider/
 * (datapath-*.c) check it field by field.
 */

#include <config.h>

#include <endian.h>
#include <errno.h>
#include <string.h>

#include <ccan/array_size.h>

#include "qhca.h"

/*
 * Queue sizing.  The rules are the hardware contract's (qhca_hw.h, "Queue
 * geometry"), which the kernel driver applies too; these put them in the
 * provider's error convention (a positive errno).
 */
int qhca_wq_depth(uint32_t max_wr, uint32_t *depth)
{
	*depth = qhca_geom_wq_depth(max_wr, QHCA_MAX_QUEUE_DEPTH);
	return *depth ? 0 : EINVAL;
}

int qhca_sq_size(uint32_t max_wr, uint32_t max_sge, uint32_t max_inline,
		 struct qhca_wq_geom *out)
{
	return qhca_geom_sq(max_wr, max_sge, max_inline, QHCA_MAX_QUEUE_DEPTH,
			    out) ? EINVAL : 0;
}

int qhca_rq_size(uint32_t max_wr, uint32_t max_sge, struct qhca_wq_geom *out)
{
	return qhca_geom_rq(max_wr, max_sge, QHCA_MAX_QUEUE_DEPTH, out) ?
		       EINVAL : 0;
}

/* CQ depth: all of it usable */
int qhca_cq_depth(int cqe, uint32_t *depth)
{
	*depth = cqe < 1 ? 0 :
			   qhca_geom_cq_depth((uint32_t)cqe, QHCA_MAX_QUEUE_DEPTH);
	return *depth ? 0 : EINVAL;
}

/*
 * The kernel's answer to a create, against the geometry the provider
 * computed and allocated before it.  With QHCA_CREATE_RESP_GEOMETRY every
 * field must agree.  Without it the kernel module predates the geometry
 * fields (docs/abi.md, "Compatibility"): it applies the same rules but
 * returns only the depths, which must agree (or be 0).  EINVAL on any
 * difference; the caller destroys the object.
 */
static bool qhca_wq_matches(const struct qhca_wq *wq, uint32_t depth,
			    uint32_t log_stride, uint32_t max_sge)
{
	return wq->depth == depth && wq->log_stride == log_stride &&
	       wq->max_sge == max_sge;
}

int qhca_check_cq_resp(const struct qhca_create_cq_resp *resp,
		       uint32_t depth)
{
	if (!(resp->comp_mask & QHCA_CREATE_RESP_GEOMETRY))
		return resp->depth && resp->depth != depth ? EINVAL : 0;
	if (resp->depth != depth ||
	    resp->log_stride != qhca_geom_log2_ceil(QHCA_CQE_SIZE))
		return EINVAL;
	return 0;
}

int qhca_check_qp_resp(const struct qhca_create_qp_resp *resp,
		       const struct qhca_wq *sq, const struct qhca_wq *rq)
{
	if (!(resp->comp_mask & QHCA_CREATE_RESP_GEOMETRY))
		return (resp->sq_depth && resp->sq_depth != sq->depth) ||
		       (resp->rq_depth && resp->rq_depth != rq->depth) ?
			       EINVAL : 0;
	if (!qhca_wq_matches(sq, resp->sq_depth, resp->sq_log_stride,
			     resp->max_send_sge) ||
	    sq->max_inline != resp->max_inline ||
	    !qhca_wq_matches(rq, resp->rq_depth, resp->rq_log_stride,
			     resp->max_recv_sge))
		return EINVAL;
	return 0;
}

int qhca_check_srq_resp(const struct qhca_create_srq_resp *resp,
			const struct qhca_wq *wq)
{
	if (!(resp->comp_mask & QHCA_CREATE_RESP_GEOMETRY))
		return resp->depth && resp->depth != wq->depth ? EINVAL : 0;
	return qhca_wq_matches(wq, resp->depth, resp->log_stride,
			       resp->max_sge) ? 0 : EINVAL;
}

/*
 * Send opcodes.  Which QP types may post an opcode and what it carries is
 * the device's table (qhca_wqe_op_info() in qhca_hw.h); this one gives
 * libibverbs' names for the opcodes, indexed by enum ibv_wr_opcode: the
 * device's opcode and the ibv_wr_*() operation (its send_ops_flags bit).
 * The device numbers its opcodes as Linux's enum ib_wr_opcode; libibverbs'
 * enum ibv_wr_opcode happens to agree for these, but the map is explicit so
 * that neither side depends on it.  FLUSH and ATOMIC WRITE have no
 * ibv_post_send() form (struct ibv_send_wr has no field for them, and
 * rdma-core's own providers refuse them there too); REG_MR is the kernel's
 * alone.  An entry without send_op is no opcode.
 */
static const struct qhca_wr_op {
	uint64_t send_op;		/* IBV_QP_EX_WITH_* */
	uint8_t hw_op;			/* enum qhca_wqe_opcode */
	bool post_send;			/* ibv_post_send() takes it */
} qhca_wr_ops[] = {
	[IBV_WR_RDMA_WRITE] = { IBV_QP_EX_WITH_RDMA_WRITE,
				QHCA_WQE_RDMA_WRITE, true },
	[IBV_WR_RDMA_WRITE_WITH_IMM] = { IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM,
					 QHCA_WQE_RDMA_WRITE_WITH_IMM, true },
	[IBV_WR_SEND] = { IBV_QP_EX_WITH_SEND, QHCA_WQE_SEND, true },
	[IBV_WR_SEND_WITH_IMM] = { IBV_QP_EX_WITH_SEND_WITH_IMM,
				   QHCA_WQE_SEND_WITH_IMM, true },
	[IBV_WR_RDMA_READ] = { IBV_QP_EX_WITH_RDMA_READ, QHCA_WQE_RDMA_READ,
			       true },
	[IBV_WR_ATOMIC_CMP_AND_SWP] = { IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP,
					QHCA_WQE_ATOMIC_CMP_AND_SWP, true },
	[IBV_WR_ATOMIC_FETCH_AND_ADD] = { IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
					  QHCA_WQE_ATOMIC_FETCH_AND_ADD, true },
	[IBV_WR_LOCAL_INV] = { IBV_QP_EX_WITH_LOCAL_INV, QHCA_WQE_LOCAL_INV,
			       true },
	[IBV_WR_BIND_MW] = { IBV_QP_EX_WITH_BIND_MW, QHCA_WQE_BIND_MW, true },
	[IBV_WR_SEND_WITH_INV] = { IBV_QP_EX_WITH_SEND_WITH_INV,
				   QHCA_WQE_SEND_WITH_INV, true },
#ifdef QHCA_HAVE_IBV_FLUSH
	[IBV_WR_FLUSH] = { IBV_QP_EX_WITH_FLUSH, QHCA_WQE_FLUSH, false },
#endif
	[IBV_WR_ATOMIC_WRITE] = { IBV_QP_EX_WITH_ATOMIC_WRITE,
				  QHCA_WQE_ATOMIC_WRITE, false },
};

/* The device's QP type of a user QP; 0, which is none, for the others */
static uint32_t qhca_hw_qp_type(enum ibv_qp_type qp_type)
{
	switch (qp_type) {
	case IBV_QPT_RC:
		return QHCA_QPT_RC;
	case IBV_QPT_UC:
		return QHCA_QPT_UC;
	case IBV_QPT_UD:
		return QHCA_QPT_UD;
	default:
		return 0;
	}
}

/*
 * May a user QP of @qp_type post @hw_op: what the device's table allows,
 * except that UD QPs get the two datagram sends alone, as mlx5's do, and
 * not the local operations the device takes on any QP (the kernel posts
 * LOCAL_INV and REG_MR on any of its QPs).
 */
static bool qhca_user_op_allowed(uint8_t hw_op, enum ibv_qp_type qp_type)
{
	if (qp_type == IBV_QPT_UD && qhca_wqe_op_has(hw_op, QHCA_WQE_OPF_LOCAL))
		return false;
	return qhca_wqe_op_allowed(hw_op, qhca_hw_qp_type(qp_type));
}

int qhca_wr_opcode(enum ibv_wr_opcode op, enum ibv_qp_type qp_type,
		   uint8_t *hw_op)
{
	const struct qhca_wr_op *w;

	if ((unsigned int)op >= ARRAY_SIZE(qhca_wr_ops))
		return EINVAL;
	w = &qhca_wr_ops[op];
	if (!w->send_op || !w->post_send ||
	    !qhca_user_op_allowed(w->hw_op, qp_type))
		return EINVAL;
	*hw_op = w->hw_op;
	return 0;
}

/* The ibv_wr_*() operations a QP of this type accepts (send_ops_flags) */
uint64_t qhca_supported_send_ops(enum ibv_qp_type qp_type)
{
	uint64_t ops = 0;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(qhca_wr_ops); i++)
		if (qhca_wr_ops[i].send_op &&
		    qhca_user_op_allowed(qhca_wr_ops[i].hw_op, qp_type))
			ops |= qhca_wr_ops[i].send_op;
	return ops;
}

/*
 * WQE flags.  The device also knows the QP's sq_sig_all, but SIGNALED is
 * set on every WQE of such a QP anyway.
 */
uint8_t qhca_wqe_flags(unsigned int send_flags, bool sig_all)
{
	uint8_t flags = 0;

	if ((send_flags & IBV_SEND_SIGNALED) || sig_all)
		flags |= QHCA_WQE_SIGNALED;
	if (send_flags & IBV_SEND_SOLICITED)
		flags |= QHCA_WQE_SOLICITED;
	if (send_flags & IBV_SEND_FENCE)
		flags |= QHCA_WQE_FENCE;
	return flags;
}

/* Clear the 64-byte header and fill the common fields */
void qhca_wqe_init(struct qhca_send_wqe *wqe, uint8_t hw_op, uint8_t flags,
		   uint64_t wr_id)
{
	memset(wqe, 0, sizeof(*wqe));
	wqe->opcode = hw_op;
	wqe->flags = flags;
	wqe->wr_id = htole64(wr_id);
}

void qhca_wqe_set_rdma(struct qhca_send_wqe *wqe, uint64_t remote_addr,
		       uint32_t rkey)
{
	wqe->rdma.remote_addr = htole64(remote_addr);
	wqe->rdma.rkey = htole32(rkey);
}

void qhca_wqe_set_atomic(struct qhca_send_wqe *wqe, uint64_t remote_addr,
			 uint32_t rkey, uint64_t compare_add, uint64_t swap)
{
	qhca_wqe_set_rdma(wqe, remote_addr, rkey);
	wqe->rdma.compare_add = htole64(compare_add);
	wqe->rdma.swap = htole64(swap);
}

void qhca_wqe_set_ud(struct qhca_send_wqe *wqe, uint32_t ahn,
		     uint32_t remote_qpn, uint32_t remote_qkey)
{
	wqe->ud.ahn = htole32(ahn);
	wqe->ud.remote_qpn = htole32(remote_qpn);
	wqe->ud.remote_qkey = htole32(remote_qkey);
}

/* num_sge must fit the stride (checked by the callers) */
void qhca_wqe_set_sgl(struct qhca_send_wqe *wqe, const struct ibv_sge *sg,
		      uint32_t num_sge)
{
	struct qhca_sge *dst = (struct qhca_sge *)(wqe + 1);
	uint32_t i;

	for (i = 0; i < num_sge; i++) {
		dst[i].addr = htole64(sg[i].addr);
		dst[i].length = htole32(sg[i].length);
		dst[i].lkey = htole32(sg[i].lkey);
	}
	wqe->num_sge = num_sge;
	wqe->flags &= ~QHCA_WQE_INLINE;
	wqe->inline_len = 0;
}

/* Copy the data the SGEs point at after the header */
int qhca_wqe_set_inline(struct qhca_send_wqe *wqe, const struct ibv_sge *sg,
			uint32_t num_sge, uint32_t max_inline)
{
	uint8_t *dst = (uint8_t *)(wqe + 1);
	uint64_t total = 0;
	uint32_t i;

	for (i = 0; i < num_sge; i++)
		total += sg[i].length;
	if (total > max_inline)
		return EINVAL;

	for (i = 0; i < num_sge; i++) {
		if (!sg[i].length)
			continue;
		memcpy(dst, (void *)(uintptr_t)sg[i].addr, sg[i].length);
		dst += sg[i].length;
	}
	wqe->num_sge = 0;
	wqe->flags |= QHCA_WQE_INLINE;
	wqe->inline_len = htole32((uint32_t)total);
	return 0;
}

int qhca_wqe_set_inline_list(struct qhca_send_wqe *wqe,
			     const struct ibv_data_buf *buf, size_t num_buf,
			     uint32_t max_inline)
{
	uint8_t *dst = (uint8_t *)(wqe + 1);
	uint64_t total = 0;
	size_t i;

	for (i = 0; i < num_buf; i++)
		total += buf[i].length;
	if (total > max_inline)
		return EINVAL;

	for (i = 0; i < num_buf; i++) {
		if (!buf[i].length)
			continue;
		memcpy(dst, buf[i].addr, buf[i].length);
		dst += buf[i].length;
	}
	wqe->num_sge = 0;
	wqe->flags |= QHCA_WQE_INLINE;
	wqe->inline_len = htole32((uint32_t)total);
	return 0;
}

/*
 * Memory windows: the rights a bind gives are remote ones (IBA 10.6.7.2),
 * and only those reach the WQE.  Programs often pass their MR's own flags:
 * the flags that mean nothing to a window (local write, MW_BIND, how the
 * MR's memory is registered, the optional ones) are ignored, as Soft-RoCE
 * and mlx5 ignore them.  What the device's windows cannot do is EINVAL: a
 * zero-based window, FLUSH rights (the device gives them through MRs
 * only), bits rdma-core does not name.
 */
#define QHCA_MW_REMOTE_RIGHTS \
	(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
	 IBV_ACCESS_REMOTE_ATOMIC)
#define QHCA_MW_IGNORED_RIGHTS \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND | IBV_ACCESS_ON_DEMAND | \
	 IBV_ACCESS_HUGETLB | IBV_ACCESS_OPTIONAL_RANGE)

int qhca_mw_access(unsigned int mw_access_flags, uint32_t *access)
{
	if (mw_access_flags & ~(QHCA_MW_REMOTE_RIGHTS |
				QHCA_MW_IGNORED_RIGHTS))
		return EINVAL;
	*access = 0;
	if (mw_access_flags & IBV_ACCESS_REMOTE_WRITE)
		*access |= QHCA_ACCESS_REMOTE_WRITE;
	if (mw_access_flags & IBV_ACCESS_REMOTE_READ)
		*access |= QHCA_ACCESS_REMOTE_READ;
	if (mw_access_flags & IBV_ACCESS_REMOTE_ATOMIC)
		*access |= QHCA_ACCESS_REMOTE_ATOMIC;
	return 0;
}

/*
 * The bind.* fields of a BIND_MW WQE: the window, named by its key now
 * (@mw_key), gets @new_key and, with an MR, [addr, addr + length) of it
 * with the rights asked for.  Without an MR the length must be 0: an
 * unbind, which only type 1 windows take (the caller checks the type).
 */
int qhca_wqe_set_bind(struct qhca_send_wqe *wqe, uint32_t mw_key,
		      uint32_t new_key, const struct ibv_mw_bind_info *bind)
{
	uint32_t access;

	if (qhca_mw_access(bind->mw_access_flags, &access))
		return EINVAL;
	if (bind->mr) {
		wqe->bind.addr = htole64(bind->addr);
		wqe->bind.length = htole64(bind->length);
		wqe->bind.mr_lkey = htole32(bind->mr->lkey);
	} else if (bind->addr || bind->length) {
		return EINVAL;
	}
	wqe->bind.mw_key = htole32(mw_key);
	wqe->bind.new_key = htole32(new_key);
	wqe->bind.access = htole32(access);
	return 0;
}

#define QHCA_SEND_FLAGS_SUPPORTED \
	(IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | \
	 IBV_SEND_INLINE)

/*
 * A BIND_MW WQE of ibv_bind_mw() (type 1) or of an IBV_WR_BIND_MW work
 * request (type 2, which must bind: an MR and a length): everything in
 * the header, no SGEs, IBV_SEND_INLINE ignored.  The caller sets mw->rkey
 * to @new_key once the WQE is posted.
 */
int qhca_build_bind_wqe(void *wqe_buf, const struct qhca_sq_params *p,
			uint64_t wr_id, unsigned int send_flags,
			const struct ibv_mw *mw, uint32_t new_key,
			const struct ibv_mw_bind_info *bind)
{
	struct qhca_send_wqe *wqe = wqe_buf;
	uint8_t hw_op;

	if (send_flags & ~QHCA_SEND_FLAGS_SUPPORTED || !mw ||
	    qhca_wr_opcode(IBV_WR_BIND_MW, p->qp_type, &hw_op))
		return EINVAL;
	if (mw->type != IBV_MW_TYPE_1 &&
	    (mw->type != IBV_MW_TYPE_2 || !bind->mr || !bind->length))
		return EINVAL;
	qhca_wqe_init(wqe, hw_op, qhca_wqe_flags(send_flags, p->sig_all),
		      wr_id);
	return qhca_wqe_set_bind(wqe, mw->rkey, new_key, bind);
}

/*
 * Validate one ibv_send_wr against its QP and write it as a send WQE at
 * wqe (a ring slot of the QP's stride).  Returns 0 or an errno; on error
 * the slot may be partly written, which is harmless while the producer
 * index does not cover it.  The fields written are those the device's
 * opcode table gives the opcode.
 *
 * IBV_SEND_INLINE is honoured for the opcodes that carry data (SEND*,
 * RDMA_WRITE*) and ignored for the others, which then use their SGEs; a
 * local operation (LOCAL_INV) has no SGEs.
 */
int qhca_build_send_wqe(void *wqe_buf, const struct qhca_sq_params *p,
			const struct ibv_send_wr *wr)
{
	struct qhca_send_wqe *wqe = wqe_buf;
	const struct qhca_wqe_op_info *op;
	bool inl;
	uint8_t hw_op;
	int ret;

	if (wr->send_flags & ~QHCA_SEND_FLAGS_SUPPORTED)
		return EINVAL;
	ret = qhca_wr_opcode(wr->opcode, p->qp_type, &hw_op);
	if (ret)
		return ret;
	/* type 1 windows are bound by ibv_bind_mw() only */
	if (hw_op == QHCA_WQE_BIND_MW)
		return wr->bind_mw.mw && wr->bind_mw.mw->type == IBV_MW_TYPE_2 ?
			       qhca_build_bind_wqe(wqe, p, wr->wr_id,
						   wr->send_flags,
						   wr->bind_mw.mw,
						   wr->bind_mw.rkey,
						   &wr->bind_mw.bind_info) :
			       EINVAL;
	if (wr->num_sge < 0)
		return EINVAL;
	if (p->qp_type == IBV_QPT_UD && !wr->wr.ud.ah)
		return EINVAL;

	op = qhca_wqe_op_info(hw_op);
	inl = (wr->send_flags & IBV_SEND_INLINE) &&
	      (op->flags & QHCA_WQE_OPF_INLINE);
	if (!inl && !(op->flags & QHCA_WQE_OPF_LOCAL) &&
	    (uint32_t)wr->num_sge > p->max_sge)
		return EINVAL;

	qhca_wqe_init(wqe, hw_op, qhca_wqe_flags(wr->send_flags, p->sig_all),
		      wr->wr_id);

	if (op->flags & QHCA_WQE_OPF_IMM)
		memcpy(wqe->imm_data, &wr->imm_data, sizeof(wqe->imm_data));
	if (op->flags & QHCA_WQE_OPF_INV)
		wqe->invalidate_rkey = htole32(wr->invalidate_rkey);
	/* FETCH_AND_ADD has no swap operand: 0 */
	if (op->flags & QHCA_WQE_OPF_ATOMIC)
		qhca_wqe_set_atomic(wqe, wr->wr.atomic.remote_addr,
				    wr->wr.atomic.rkey,
				    wr->wr.atomic.compare_add,
				    hw_op == QHCA_WQE_ATOMIC_CMP_AND_SWP ?
					    wr->wr.atomic.swap : 0);
	else if (op->flags & QHCA_WQE_OPF_REMOTE)
		qhca_wqe_set_rdma(wqe, wr->wr.rdma.remote_addr,
				  wr->wr.rdma.rkey);

	if (p->qp_type == IBV_QPT_UD)
		qhca_wqe_set_ud(wqe, to_qhca_ah(wr->wr.ud.ah)->ahn,
				wr->wr.ud.remote_qpn, wr->wr.ud.remote_qkey);

	if (op->flags & QHCA_WQE_OPF_LOCAL)
		return 0;
	if (inl)
		return qhca_wqe_set_inline(wqe, wr->sg_list, wr->num_sge,
					   p->max_inline);
	qhca_wqe_set_sgl(wqe, wr->sg_list, wr->num_sge);
	return 0;
}

int qhca_build_recv_wqe(void *wqe_buf, uint32_t max_sge,
			const struct ibv_recv_wr *wr)
{
	struct qhca_recv_wqe *wqe = wqe_buf;
	struct qhca_sge *dst = (struct qhca_sge *)(wqe + 1);
	int i;

	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge)
		return EINVAL;

	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = htole64(wr->wr_id);
	wqe->num_sge = wr->num_sge;
	for (i = 0; i < wr->num_sge; i++) {
		dst[i].addr = htole64(wr->sg_list[i].addr);
		dst[i].length = htole32(wr->sg_list[i].length);
		dst[i].lkey = htole32(wr->sg_list[i].lkey);
	}
	return 0;
}

/*
 * CQE status: Linux's enum ib_wc_status numbering.  libibverbs' enum
 * ibv_wc_status agrees today; map explicitly anyway.  Values not in the
 * table are a general error.
 */
static const struct {
	bool known;
	enum ibv_wc_status status;
} qhca_wc_statuses[] = {
	[QHCA_CQE_SUCCESS] = { true, IBV_WC_SUCCESS },
	[QHCA_CQE_LOC_LEN_ERR] = { true, IBV_WC_LOC_LEN_ERR },
	[QHCA_CQE_LOC_QP_OP_ERR] = { true, IBV_WC_LOC_QP_OP_ERR },
	[QHCA_CQE_LOC_PROT_ERR] = { true, IBV_WC_LOC_PROT_ERR },
	[QHCA_CQE_WR_FLUSH_ERR] = { true, IBV_WC_WR_FLUSH_ERR },
	[QHCA_CQE_MW_BIND_ERR] = { true, IBV_WC_MW_BIND_ERR },
	[QHCA_CQE_BAD_RESP_ERR] = { true, IBV_WC_BAD_RESP_ERR },
	[QHCA_CQE_LOC_ACCESS_ERR] = { true, IBV_WC_LOC_ACCESS_ERR },
	[QHCA_CQE_REM_INV_REQ_ERR] = { true, IBV_WC_REM_INV_REQ_ERR },
	[QHCA_CQE_REM_ACCESS_ERR] = { true, IBV_WC_REM_ACCESS_ERR },
	[QHCA_CQE_REM_OP_ERR] = { true, IBV_WC_REM_OP_ERR },
	[QHCA_CQE_RETRY_EXC_ERR] = { true, IBV_WC_RETRY_EXC_ERR },
	[QHCA_CQE_RNR_RETRY_EXC_ERR] = { true, IBV_WC_RNR_RETRY_EXC_ERR },
	[QHCA_CQE_REM_ABORT_ERR] = { true, IBV_WC_REM_ABORT_ERR },
	[QHCA_CQE_GENERAL_ERR] = { true, IBV_WC_GENERAL_ERR },
};

enum ibv_wc_status qhca_wc_status(uint8_t hw_status)
{
	if (hw_status >= ARRAY_SIZE(qhca_wc_statuses) ||
	    !qhca_wc_statuses[hw_status].known)
		return IBV_WC_GENERAL_ERR;
	return qhca_wc_statuses[hw_status].status;
}

/*
 * CQE opcode: Linux's enum ib_wc_opcode numbering, which is not
 * libibverbs' (the kernel has IB_WC_REG_MR where user space has
 * IBV_WC_FLUSH, for one).  What is not in the table is EINVAL: anything a
 * user QP cannot complete, including REG_MR (a kernel-only work request).
 */
static const struct {
	bool known;
	enum ibv_wc_opcode opcode;
} qhca_wc_opcodes[] = {
	[QHCA_CQE_OP_SEND] = { true, IBV_WC_SEND },
	[QHCA_CQE_OP_RDMA_WRITE] = { true, IBV_WC_RDMA_WRITE },
	[QHCA_CQE_OP_RDMA_READ] = { true, IBV_WC_RDMA_READ },
	[QHCA_CQE_OP_COMP_SWAP] = { true, IBV_WC_COMP_SWAP },
	[QHCA_CQE_OP_FETCH_ADD] = { true, IBV_WC_FETCH_ADD },
	[QHCA_CQE_OP_BIND_MW] = { true, IBV_WC_BIND_MW },
	[QHCA_CQE_OP_LOCAL_INV] = { true, IBV_WC_LOCAL_INV },
#ifdef QHCA_HAVE_IBV_FLUSH
	[QHCA_CQE_OP_FLUSH] = { true, IBV_WC_FLUSH },
#endif
	[QHCA_CQE_OP_ATOMIC_WRITE] = { true, IBV_WC_ATOMIC_WRITE },
	[QHCA_CQE_OP_RECV] = { true, IBV_WC_RECV },
	[QHCA_CQE_OP_RECV_RDMA_WITH_IMM] = { true, IBV_WC_RECV_RDMA_WITH_IMM },
};

int qhca_wc_opcode(uint8_t hw_op, enum ibv_wc_opcode *op)
{
	if (hw_op >= ARRAY_SIZE(qhca_wc_opcodes) ||
	    !qhca_wc_opcodes[hw_op].known)
		return EINVAL;
	*op = qhca_wc_opcodes[hw_op].opcode;
	return 0;
}

/* CQE flags to ibv_wc_flags (SOLICITED has no ibv_wc counterpart) */
unsigned int qhca_wc_flags(uint8_t hw_flags)
{
	unsigned int flags = 0;

	if (hw_flags & QHCA_CQE_WITH_IMM)
		flags |= IBV_WC_WITH_IMM;
	if (hw_flags & QHCA_CQE_WITH_INV)
		flags |= IBV_WC_WITH_INV;
	if (hw_flags & QHCA_CQE_GRH)
		flags |= IBV_WC_GRH;
	return flags;
}

/*
 * Decode one CQE whose owner bit has been checked (and followed by
 * udma_from_device_barrier()).  An opcode a user QP cannot complete turns
 * a successful CQE into IBV_WC_GENERAL_ERR.  As the IBA says, only wr_id,
 * status, qp_num and vendor_err mean something in an error completion;
 * opcode is filled when known, wc_flags is 0.
 */
void qhca_cqe_to_wc(const struct qhca_cqe *cqe, struct ibv_wc *wc)
{
	enum ibv_wc_opcode op = IBV_WC_SEND;
	bool op_ok;

	op_ok = qhca_wc_opcode(cqe->opcode, &op) == 0;

	wc->wr_id = le64toh(cqe->wr_id);
	wc->status = qhca_wc_status(cqe->status);
	if (wc->status == IBV_WC_SUCCESS && !op_ok)
		wc->status = IBV_WC_GENERAL_ERR;
	wc->opcode = op;
	wc->vendor_err = cqe->vendor_err;
	wc->byte_len = le32toh(cqe->byte_len);
	wc->qp_num = le32toh(cqe->qpn);
	wc->src_qp = le32toh(cqe->src_qp);
	wc->wc_flags = 0;
	wc->imm_data = 0;
	if (wc->status == IBV_WC_SUCCESS) {
		wc->wc_flags = qhca_wc_flags(cqe->flags);
		if (cqe->flags & QHCA_CQE_WITH_INV)
			wc->invalidated_rkey = le32toh(cqe->invalidated_rkey);
		else if (cqe->flags & QHCA_CQE_WITH_IMM)
			memcpy(&wc->imm_data, cqe->imm_data,
			       sizeof(wc->imm_data));
	}
	wc->pkey_index = 0;
	wc->slid = 0;
	wc->sl = 0;
	wc->dlid_path_bits = 0;
}
