/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * qhca rdma-core provider: private types and the provider's internal API.
 *
 * Everything declared here is internal to libqhca-rdmav34.so (the version
 * script exports only verbs_provider_qhca).  The functions in the "pure"
 * sections touch only memory, so the host unit tests (tests/provider/:
 * unit-datapath.c and its datapath-*.c) call them directly, with a plain
 * memory page standing in for the doorbell page.
 */

#ifndef __QHCA_H__
#define __QHCA_H__

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/driver.h>
#include <infiniband/kern-abi.h>
#include <util/mmio.h>
#include <util/udma_barrier.h>

#include "qhca_hw.h"
#include "qhca-abi.h"
/* _STRUCT_* macros made from qhca-abi.h by rdma-core's make_abi_structs.py */
#include "qhca-kabi.h"

/*
 * Command and response wrappers: rdma-core header + our udata (qhca_uv_*:
 * the names qhca_create_*_resp are the udata structs themselves)
 */
DECLARE_DRV_CMD(qhca_get_context, IB_USER_VERBS_CMD_GET_CONTEXT, empty,
		qhca_alloc_ucontext_resp);
DECLARE_DRV_CMD(qhca_uv_create_cq, IB_USER_VERBS_EX_CMD_CREATE_CQ,
		qhca_create_cq_cmd, qhca_create_cq_resp);
DECLARE_DRV_CMD(qhca_uv_resize_cq, IB_USER_VERBS_CMD_RESIZE_CQ,
		qhca_resize_cq_cmd, qhca_resize_cq_resp);
DECLARE_DRV_CMD(qhca_uv_create_qp, IB_USER_VERBS_CMD_CREATE_QP,
		qhca_create_qp_cmd, qhca_create_qp_resp);
DECLARE_DRV_CMD(qhca_uv_create_srq, IB_USER_VERBS_CMD_CREATE_SRQ,
		qhca_create_srq_cmd, qhca_create_srq_resp);
DECLARE_DRV_CMD(qhca_uv_modify_srq, IB_USER_VERBS_CMD_MODIFY_SRQ,
		qhca_modify_srq_cmd, empty);
DECLARE_DRV_CMD(qhca_uv_create_ah, IB_USER_VERBS_CMD_CREATE_AH, empty,
		qhca_create_ah_resp);

/* Queue numbers are < 65536: a two-level QPN -> QP table */
#define QHCA_QP_TABLE_SHIFT		8
#define QHCA_QP_TABLE_SIZE		(1u << QHCA_QP_TABLE_SHIFT)
#define QHCA_QP_TABLE_MASK		(QHCA_QP_TABLE_SIZE - 1)

struct qhca_qp;

struct qhca_device {
	struct verbs_device ibv_dev;
};

struct qhca_context {
	struct verbs_context ibv_ctx;
	/* This context's doorbell page (BAR2 page db_page), write only */
	void *db;
	uint32_t db_page;
	uint32_t max_inline;
	uint32_t sq_wqe_size;
	uint32_t rq_wqe_size;
	uint32_t cqe_size;
	uint32_t max_sge;

	/* QPN -> QP, for completions; written under qp_table_mutex and the
	 * QP's CQ locks, read under a CQ lock */
	pthread_mutex_t qp_table_mutex;
	struct {
		struct qhca_qp **table;
		unsigned int refcnt;
	} qp_table[QHCA_QP_TABLE_SIZE];
};

/* A ring of WQEs the provider writes and the device reads: SQ, RQ or SRQ */
struct qhca_wq {
	void *buf;
	size_t buf_size;		/* bytes mapped, whole pages */
	uint32_t depth;			/* entries, a power of two */
	uint32_t log_stride;		/* entry size is 1 << log_stride */
	uint32_t max_sge;		/* what the stride holds (the cap) */
	uint32_t max_inline;		/* SQ only */
	/*
	 * Free-running indices (only their low 16 bits go to the device).
	 * pi: next entry to write; written under lock.  ci: first entry the
	 * device may still use; advanced by the poller (under the CQ lock
	 * for SQ/RQ, under lock for an SRQ).  Both atomics, so that each
	 * side may read the other's without its lock.
	 */
	_Atomic(uint32_t) pi;
	_Atomic(uint32_t) ci;
	pthread_spinlock_t lock;
};

struct qhca_cq {
	struct verbs_cq vcq;
	struct qhca_cqe *ring;
	size_t buf_size;
	uint32_t depth;
	uint32_t cqn;
	uint32_t ci;			/* free running; under lock */
	uint32_t db_ci;			/* last ci told to the device */
	pthread_spinlock_t lock;
	/*
	 * ibv_cq_ex polling: between start_poll() and end_poll(), the entry
	 * at ci (not yet consumed) decoded into cur_wc.
	 */
	bool have_cur;
	struct ibv_wc cur_wc;
};

struct qhca_srq {
	struct ibv_srq ibv_srq;
	struct qhca_wq wq;
	uint32_t srqn;
	/* done[i]: ring slot i completed but an older slot has not yet */
	uint8_t *done;
};

/* An SRQ ring of its own stride and its done[] (ibv_modify_srq resize) */
struct qhca_srq_ring {
	void *buf;
	size_t buf_size;
	uint32_t depth;
	uint8_t *done;
};

/* What the send WQE encoder needs to know about its QP */
struct qhca_sq_params {
	enum ibv_qp_type qp_type;
	uint32_t max_sge;
	uint32_t max_inline;
	bool sig_all;
};

struct qhca_qp {
	struct verbs_qp vqp;
	struct qhca_wq sq;
	struct qhca_wq rq;		/* unused (depth 0) with an SRQ */
	struct qhca_sq_params sqp;
	uint32_t qpn;
	/* ibv_wr_*() session state, under sq.lock */
	struct qhca_send_wqe *wr_cur;	/* WQE the wr_set_*() calls fill */
	uint32_t wr_start_pi;
	int wr_err;
	/*
	 * IBV_QP_EX_WITH_BIND_MW: the window of each SQ slot that
	 * ibv_wr_bind_mw() filled, whose rkey becomes the WQE's new key at
	 * wr_complete(); wr_nbind counts them in the session
	 */
	struct ibv_mw **sq_mw;
	uint32_t wr_nbind;
};

struct qhca_ah {
	struct ibv_ah ibv_ah;
	uint32_t ahn;
};

static inline struct qhca_device *to_qhca_dev(struct ibv_device *ibdev)
{
	return container_of(ibdev, struct qhca_device, ibv_dev.device);
}

static inline struct qhca_context *to_qhca_ctx(struct ibv_context *ibctx)
{
	return container_of(ibctx, struct qhca_context, ibv_ctx.context);
}

static inline struct qhca_cq *to_qhca_cq(struct ibv_cq *ibcq)
{
	return container_of(ibcq, struct qhca_cq, vcq.cq);
}

static inline struct qhca_cq *to_qhca_cq_ex(struct ibv_cq_ex *ibcqx)
{
	return container_of(ibcqx, struct qhca_cq, vcq.cq_ex);
}

static inline struct qhca_qp *to_qhca_qp(struct ibv_qp *ibqp)
{
	return container_of(ibqp, struct qhca_qp, vqp.qp);
}

static inline struct qhca_qp *to_qhca_qp_ex(struct ibv_qp_ex *ibqpx)
{
	return container_of(ibqpx, struct qhca_qp, vqp.qp_ex);
}

static inline struct qhca_srq *to_qhca_srq(struct ibv_srq *ibsrq)
{
	return container_of(ibsrq, struct qhca_srq, ibv_srq);
}

static inline struct qhca_ah *to_qhca_ah(struct ibv_ah *ibah)
{
	return container_of(ibah, struct qhca_ah, ibv_ah);
}

/* ------------------------------------------------------------------------
 * Pure: queue sizing by the shared rules of qhca_hw.h ("Queue geometry"),
 * and the check of the kernel's create responses against it (qhca_wqe.c).
 */
int qhca_wq_depth(uint32_t max_wr, uint32_t *depth);
int qhca_sq_size(uint32_t max_wr, uint32_t max_sge, uint32_t max_inline,
		 struct qhca_wq_geom *out);
int qhca_rq_size(uint32_t max_wr, uint32_t max_sge, struct qhca_wq_geom *out);
int qhca_cq_depth(int cqe, uint32_t *depth);
int qhca_check_cq_resp(const struct qhca_create_cq_resp *resp,
		       uint32_t depth);
int qhca_check_qp_resp(const struct qhca_create_qp_resp *resp,
		       const struct qhca_wq *sq, const struct qhca_wq *rq);
int qhca_check_srq_resp(const struct qhca_create_srq_resp *resp,
			const struct qhca_wq *wq);

/* ------------------------------------------------------------------------
 * Pure: WQE encoding and CQE decoding (qhca_wqe.c)
 */
int qhca_wr_opcode(enum ibv_wr_opcode op, enum ibv_qp_type qp_type,
		   uint8_t *hw_op);
uint64_t qhca_supported_send_ops(enum ibv_qp_type qp_type);
uint8_t qhca_wqe_flags(unsigned int send_flags, bool sig_all);
void qhca_wqe_init(struct qhca_send_wqe *wqe, uint8_t hw_op, uint8_t flags,
		   uint64_t wr_id);
void qhca_wqe_set_rdma(struct qhca_send_wqe *wqe, uint64_t remote_addr,
		       uint32_t rkey);
void qhca_wqe_set_atomic(struct qhca_send_wqe *wqe, uint64_t remote_addr,
			 uint32_t rkey, uint64_t compare_add, uint64_t swap);
void qhca_wqe_set_ud(struct qhca_send_wqe *wqe, uint32_t ahn,
		     uint32_t remote_qpn, uint32_t remote_qkey);
int qhca_mw_access(unsigned int mw_access_flags, uint32_t *access);
int qhca_wqe_set_bind(struct qhca_send_wqe *wqe, uint32_t mw_key,
		      uint32_t new_key, const struct ibv_mw_bind_info *bind);
int qhca_build_bind_wqe(void *wqe, const struct qhca_sq_params *p,
			uint64_t wr_id, unsigned int send_flags,
			const struct ibv_mw *mw, uint32_t new_key,
			const struct ibv_mw_bind_info *bind);
void qhca_wqe_set_sgl(struct qhca_send_wqe *wqe, const struct ibv_sge *sg,
		      uint32_t num_sge);
int qhca_wqe_set_inline(struct qhca_send_wqe *wqe, const struct ibv_sge *sg,
			uint32_t num_sge, uint32_t max_inline);
int qhca_wqe_set_inline_list(struct qhca_send_wqe *wqe,
			     const struct ibv_data_buf *buf, size_t num_buf,
			     uint32_t max_inline);
int qhca_build_send_wqe(void *wqe, const struct qhca_sq_params *p,
			const struct ibv_send_wr *wr);
int qhca_build_recv_wqe(void *wqe, uint32_t max_sge,
			const struct ibv_recv_wr *wr);

enum ibv_wc_status qhca_wc_status(uint8_t hw_status);
int qhca_wc_opcode(uint8_t hw_op, enum ibv_wc_opcode *op);
unsigned int qhca_wc_flags(uint8_t hw_flags);
void qhca_cqe_to_wc(const struct qhca_cqe *cqe, struct ibv_wc *wc);

/* Does the CQE at free-running index ci hold a new entry (owner bit)? */
static inline bool qhca_cqe_owned(const struct qhca_cqe *cqe, uint32_t ci,
				  uint32_t depth)
{
	uint8_t owner = *(const volatile uint8_t *)&cqe->owner;

	/* pass n = ci / depth writes owner 1 when n is even */
	return (owner & QHCA_OWNER_BIT) == ((ci & depth) ? 0 : QHCA_OWNER_BIT);
}

static inline void *qhca_wq_entry(struct qhca_wq *wq, uint32_t idx)
{
	return (uint8_t *)wq->buf +
	       ((size_t)(idx & (wq->depth - 1)) << wq->log_stride);
}

/* Producer side, under wq->lock: is there no free entry? */
static inline bool qhca_wq_full(struct qhca_wq *wq)
{
	uint32_t pi = atomic_load_explicit(&wq->pi, memory_order_relaxed);
	uint32_t ci = atomic_load_explicit(&wq->ci, memory_order_acquire);

	return pi - ci >= wq->depth;
}

/*
 * Consumer side, for an SQ or RQ (in-order queues): a CQE says the WQE at
 * wqe_index is done, and with it every older one (unsignaled sends).
 * wqe_index is taken modulo the depth, so the device may report either
 * the free-running or the ring index.  A CQE naming an entry that is not
 * outstanding is ignored.
 */
static inline void qhca_wq_retire(struct qhca_wq *wq, uint16_t wqe_index)
{
	uint32_t ci = atomic_load_explicit(&wq->ci, memory_order_relaxed);
	uint32_t pi = atomic_load_explicit(&wq->pi, memory_order_acquire);
	uint32_t n;

	if (!wq->depth)
		return;
	n = ((uint32_t)wqe_index - ci) & (wq->depth - 1);
	if (n >= pi - ci)
		return;
	atomic_store_explicit(&wq->ci, ci + n + 1, memory_order_release);
}

/*
 * Doorbells: one 32-bit write of "queue number | index << 16" to the
 * context's doorbell page.  The page is mapped uncached (the kernel maps
 * it with pgprot_noncached), so every doorbell is a single strongly
 * ordered store: nothing is combined or held back, and mmio_flush_writes()
 * is not needed.  Callers make their ring writes visible first with
 * udma_to_device_barrier().
 */
static inline void qhca_ring_db(struct qhca_context *ctx, uint32_t offset,
				uint32_t num, uint32_t idx)
{
	mmio_write32((uint8_t *)ctx->db + offset,
		     (num & QHCA_DB_NUM_MASK) | (idx << QHCA_DB_IDX_SHIFT));
}

/* ------------------------------------------------------------------------
 * Ring memory and queue state (qhca.c, qhca_cq.c, qhca_qp.c).  The
 * *_setup() functions do what create_* does before the kernel command and
 * are what the unit tests use to build queues without a device.
 */
void *qhca_alloc_ring(size_t size, size_t *alloc_size);
void qhca_free_ring(void *buf, size_t alloc_size);

int qhca_cq_setup(struct qhca_cq *cq, uint32_t depth);
void qhca_cq_teardown(struct qhca_cq *cq);
void qhca_cq_fill_ex_ops(struct qhca_cq *cq);
void qhca_cq_clean(struct qhca_cq *cq, struct qhca_qp *qp);

int qhca_qp_setup(struct qhca_qp *qp, struct ibv_qp_init_attr_ex *attr);
void qhca_qp_teardown(struct qhca_qp *qp);
void qhca_qp_fill_wr_ops(struct qhca_qp *qp, uint64_t send_ops_flags);
void qhca_qp_reset_indices(struct qhca_qp *qp);
int qhca_srq_setup(struct qhca_srq *srq, struct ibv_srq_attr *attr);
void qhca_srq_teardown(struct qhca_srq *srq);
void qhca_srq_complete(struct qhca_srq *srq, uint16_t wqe_index);
int qhca_srq_ring_alloc(struct qhca_srq *srq, uint32_t max_wr,
			struct qhca_srq_ring *nr);
bool qhca_srq_ring_fits(struct qhca_srq *srq, const struct qhca_srq_ring *nr);
void qhca_srq_ring_switch(struct qhca_srq *srq, struct qhca_srq_ring *nr);
void qhca_srq_ring_free(struct qhca_srq_ring *nr);

void qhca_ctx_init_qp_table(struct qhca_context *ctx);
void qhca_ctx_free_qp_table(struct qhca_context *ctx);
int qhca_qp_table_insert(struct qhca_context *ctx, struct qhca_qp *qp);
void qhca_qp_table_remove(struct qhca_context *ctx, uint32_t qpn);

static inline struct qhca_qp *qhca_qp_lookup(struct qhca_context *ctx,
					     uint32_t qpn)
{
	struct qhca_qp **table;

	if (qpn > QHCA_DB_NUM_MASK)
		return NULL;
	table = ctx->qp_table[qpn >> QHCA_QP_TABLE_SHIFT].table;
	return table ? table[qpn & QHCA_QP_TABLE_MASK] : NULL;
}

/* ------------------------------------------------------------------------
 * Verbs (qhca_cq.c, qhca_qp.c)
 */
struct ibv_cq *qhca_create_cq(struct ibv_context *ibctx, int cqe,
			      struct ibv_comp_channel *channel,
			      int comp_vector);
struct ibv_cq_ex *qhca_create_cq_ex(struct ibv_context *ibctx,
				    struct ibv_cq_init_attr_ex *attr);
int qhca_destroy_cq(struct ibv_cq *ibcq);
int qhca_resize_cq(struct ibv_cq *ibcq, int cqe);
int qhca_poll_cq(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc);
int qhca_req_notify_cq(struct ibv_cq *ibcq, int solicited_only);

struct ibv_qp *qhca_create_qp(struct ibv_pd *pd,
			      struct ibv_qp_init_attr *attr);
int qhca_check_qp_attr(struct qhca_context *ctx,
		       struct ibv_qp_init_attr_ex *attr);
struct ibv_qp *qhca_create_qp_ex(struct ibv_context *ibctx,
				 struct ibv_qp_init_attr_ex *attr);
int qhca_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		   int attr_mask);
int qhca_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		  int attr_mask, struct ibv_qp_init_attr *init_attr);
int qhca_destroy_qp(struct ibv_qp *ibqp);
int qhca_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad_wr);
int qhca_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		   struct ibv_recv_wr **bad_wr);
int qhca_bind_mw(struct ibv_qp *ibqp, struct ibv_mw *mw,
		 struct ibv_mw_bind *mw_bind);

struct ibv_srq *qhca_create_srq(struct ibv_pd *pd,
				struct ibv_srq_init_attr *attr);
int qhca_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
		    int attr_mask);
int qhca_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr);
int qhca_destroy_srq(struct ibv_srq *ibsrq);
int qhca_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad_wr);

#endif /* __QHCA_H__ */
