// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * qhca rdma-core provider: device matching, user context (with its doorbell
 * page), device and port queries, protection domains, memory regions,
 * address handles, ring memory and the context's QPN table.  CQs are in
 * qhca_cq.c, QPs and SRQs in qhca_qp.c, the WQE/CQE formats in qhca_wqe.c.
 *
 * Verbs this provider does not implement are left out of qhca_ctx_ops;
 * verbs_set_ops() then routes them to libibverbs' defaults, which fail with
 * EOPNOTSUPP (README.md lists them).
 */

#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <util/util.h>

#include "qhca.h"

static const struct verbs_match_ent qhca_match_table[] = {
	VERBS_PCI_MATCH(QHCA_PCI_VENDOR_ID, QHCA_PCI_DEVICE_ID, NULL),
	{}
};

static int qhca_query_device_ex(struct ibv_context *ibctx,
				const struct ibv_query_device_ex_input *input,
				struct ibv_device_attr_ex *attr,
				size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp;
	size_t resp_size = sizeof(resp);
	uint64_t fw_ver;
	int ret;

	ret = ibv_cmd_query_device_any(ibctx, input, attr, attr_size, &resp,
				       &resp_size);
	if (ret)
		return ret;

	/* The driver reports the device's QHCA_REG_VERSION: major.minor */
	fw_ver = resp.base.fw_ver;
	snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver),
		 "%u.%u", (unsigned int)(fw_ver >> 16) & 0xffff,
		 (unsigned int)fw_ver & 0xffff);

	return 0;
}

static int qhca_query_port(struct ibv_context *ibctx, uint8_t port,
			   struct ibv_port_attr *attr)
{
	struct ibv_query_port cmd;

	return ibv_cmd_query_port(ibctx, port, attr, &cmd, sizeof(cmd));
}

static struct ibv_pd *qhca_alloc_pd(struct ibv_context *ibctx)
{
	struct ib_uverbs_alloc_pd_resp resp;
	struct ibv_alloc_pd cmd;
	struct ibv_pd *pd;
	int ret;

	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}

	ret = ibv_cmd_alloc_pd(ibctx, pd, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (ret) {
		free(pd);
		errno = ret;
		return NULL;
	}

	return pd;
}

static int qhca_dealloc_pd(struct ibv_pd *pd)
{
	int ret;

	ret = ibv_cmd_dealloc_pd(pd);
	if (ret)
		return ret;

	free(pd);
	return 0;
}

static struct ibv_mr *qhca_reg_mr(struct ibv_pd *pd, void *addr,
				  size_t length, uint64_t hca_va, int access)
{
	struct ib_uverbs_reg_mr_resp resp;
	struct ibv_reg_mr cmd;
	struct verbs_mr *vmr;
	int ret;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr) {
		errno = ENOMEM;
		return NULL;
	}

	ret = ibv_cmd_reg_mr(pd, addr, length, hca_va, access, vmr, &cmd,
			     sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(vmr);
		errno = ret;
		return NULL;
	}

	return &vmr->ibv_mr;
}

/*
 * The MR's PD, rights or memory change in place (its keys stay); the
 * kernel and the device check all of it.  hca_va follows the new address,
 * as ibv_reg_mr()'s does.
 */
static int qhca_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
			 void *addr, size_t length, int access)
{
	struct ib_uverbs_rereg_mr_resp resp;
	struct ibv_rereg_mr cmd;

	return ibv_cmd_rereg_mr(vmr, flags, addr, length, (uintptr_t)addr,
				access, pd, &cmd, sizeof(cmd), &resp,
				sizeof(resp));
}

static int qhca_dereg_mr(struct verbs_mr *vmr)
{
	int ret;

	ret = ibv_cmd_dereg_mr(vmr);
	if (ret)
		return ret;

	free(vmr);
	return 0;
}

/*
 * Memory windows (types 1 and 2B): the kernel has the device allocate an
 * unbound window and returns its key; binds are work requests
 * (qhca_bind_mw(), IBV_WR_BIND_MW, ibv_wr_bind_mw()), which change the key
 */
static struct ibv_mw *qhca_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct ib_uverbs_alloc_mw_resp resp;
	struct ibv_alloc_mw cmd;
	struct ibv_mw *mw;
	int ret;

	mw = calloc(1, sizeof(*mw));
	if (!mw) {
		errno = ENOMEM;
		return NULL;
	}

	ret = ibv_cmd_alloc_mw(pd, type, mw, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (ret) {
		free(mw);
		errno = ret;
		return NULL;
	}

	return mw;
}

/* Bound or not; its MR can be deregistered afterwards */
static int qhca_dealloc_mw(struct ibv_mw *mw)
{
	int ret;

	ret = ibv_cmd_dealloc_mw(mw);
	if (ret)
		return ret;

	free(mw);
	return 0;
}

/*
 * UD work requests name the device's address handle (ahn); the kernel
 * resolves the destination MAC and programs the device.  RoCE needs a GRH.
 */
static struct ibv_ah *qhca_create_ah(struct ibv_pd *pd,
				     struct ibv_ah_attr *attr)
{
	struct qhca_uv_create_ah_resp resp = {};
	struct qhca_ah *ah;
	int ret;

	if (!attr->is_global) {
		errno = EINVAL;
		return NULL;
	}

	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		errno = ENOMEM;
		return NULL;
	}

	ret = ibv_cmd_create_ah(pd, &ah->ibv_ah, attr, &resp.ibv_resp,
				sizeof(resp));
	if (ret) {
		free(ah);
		errno = ret;
		return NULL;
	}
	ah->ahn = resp.ahn;

	return &ah->ibv_ah;
}

static int qhca_destroy_ah(struct ibv_ah *ibah)
{
	struct qhca_ah *ah = to_qhca_ah(ibah);
	int ret;

	ret = ibv_cmd_destroy_ah(ibah);
	if (ret)
		return ret;

	free(ah);
	return 0;
}

/*
 * Multicast: the kernel checks the QP (UD) and the group and attaches
 * the QP on the device; rdma_join_multicast() ends here too (librdmacm
 * attaches the id's QP once the join completes)
 */
static int qhca_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
			     uint16_t lid)
{
	return ibv_cmd_attach_mcast(qp, gid, lid);
}

static int qhca_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
			     uint16_t lid)
{
	return ibv_cmd_detach_mcast(qp, gid, lid);
}

/*
 * Queue memory: whole pages of anonymous memory (zero filled, page
 * aligned), kept out of fork() children so that the pages the kernel
 * pinned for the device stay the parent's.
 */
void *qhca_alloc_ring(size_t size, size_t *alloc_size)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t len;
	void *buf;

	if (page < (long)QHCA_PAGE_SIZE)
		page = QHCA_PAGE_SIZE;
	len = align(size ? size : 1, page);

	buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		return NULL;

	if (ibv_dontfork_range(buf, len)) {
		munmap(buf, len);
		return NULL;
	}

	*alloc_size = len;
	return buf;
}

void qhca_free_ring(void *buf, size_t alloc_size)
{
	if (!buf)
		return;
	ibv_dofork_range(buf, alloc_size);
	munmap(buf, alloc_size);
}

/* QPN -> QP table: completions name their QP by number */
void qhca_ctx_init_qp_table(struct qhca_context *ctx)
{
	pthread_mutex_init(&ctx->qp_table_mutex, NULL);
	memset(ctx->qp_table, 0, sizeof(ctx->qp_table));
}

void qhca_ctx_free_qp_table(struct qhca_context *ctx)
{
	unsigned int i;

	for (i = 0; i < QHCA_QP_TABLE_SIZE; i++)
		free(ctx->qp_table[i].table);
	pthread_mutex_destroy(&ctx->qp_table_mutex);
}

/*
 * Called with the QP's CQ locks held (or before the QP can complete
 * anything), so that pollers never see a half-made entry.
 */
int qhca_qp_table_insert(struct qhca_context *ctx, struct qhca_qp *qp)
{
	uint32_t idx = qp->qpn >> QHCA_QP_TABLE_SHIFT;
	int ret = 0;

	if (qp->qpn > QHCA_DB_NUM_MASK)
		return EINVAL;

	pthread_mutex_lock(&ctx->qp_table_mutex);
	if (!ctx->qp_table[idx].table) {
		ctx->qp_table[idx].table =
			calloc(QHCA_QP_TABLE_SIZE, sizeof(struct qhca_qp *));
		if (!ctx->qp_table[idx].table) {
			ret = ENOMEM;
			goto out;
		}
	}
	if (ctx->qp_table[idx].table[qp->qpn & QHCA_QP_TABLE_MASK]) {
		ret = EEXIST;
		goto out;
	}
	ctx->qp_table[idx].table[qp->qpn & QHCA_QP_TABLE_MASK] = qp;
	ctx->qp_table[idx].refcnt++;
out:
	pthread_mutex_unlock(&ctx->qp_table_mutex);
	return ret;
}

/*
 * Called with the QP's CQ locks held.  Second-level tables are kept until
 * the context goes: a poller may be reading one without the mutex.
 */
void qhca_qp_table_remove(struct qhca_context *ctx, uint32_t qpn)
{
	uint32_t idx = qpn >> QHCA_QP_TABLE_SHIFT;

	if (qpn > QHCA_DB_NUM_MASK)
		return;

	pthread_mutex_lock(&ctx->qp_table_mutex);
	if (ctx->qp_table[idx].table &&
	    ctx->qp_table[idx].table[qpn & QHCA_QP_TABLE_MASK]) {
		ctx->qp_table[idx].table[qpn & QHCA_QP_TABLE_MASK] = NULL;
		ctx->qp_table[idx].refcnt--;
	}
	pthread_mutex_unlock(&ctx->qp_table_mutex);
}

static void qhca_free_context(struct ibv_context *ibctx);

static const struct verbs_context_ops qhca_ctx_ops = {
	/* the device and its port */
	.query_device_ex = qhca_query_device_ex,
	.query_port = qhca_query_port,
	.free_context = qhca_free_context,

	/* protection domains, memory regions and memory windows */
	.alloc_pd = qhca_alloc_pd,
	.dealloc_pd = qhca_dealloc_pd,
	.reg_mr = qhca_reg_mr,
	.rereg_mr = qhca_rereg_mr,
	.dereg_mr = qhca_dereg_mr,
	.alloc_mw = qhca_alloc_mw,
	.bind_mw = qhca_bind_mw,
	.dealloc_mw = qhca_dealloc_mw,

	/* completion queues */
	.create_cq = qhca_create_cq,
	.create_cq_ex = qhca_create_cq_ex,
	.poll_cq = qhca_poll_cq,
	.req_notify_cq = qhca_req_notify_cq,
	.resize_cq = qhca_resize_cq,
	.destroy_cq = qhca_destroy_cq,

	/* queue pairs */
	.create_qp = qhca_create_qp,
	.create_qp_ex = qhca_create_qp_ex,
	.query_qp = qhca_query_qp,
	.modify_qp = qhca_modify_qp,
	.post_send = qhca_post_send,
	.post_recv = qhca_post_recv,
	.destroy_qp = qhca_destroy_qp,

	/* shared receive queues */
	.create_srq = qhca_create_srq,
	.query_srq = qhca_query_srq,
	.modify_srq = qhca_modify_srq,
	.post_srq_recv = qhca_post_srq_recv,
	.destroy_srq = qhca_destroy_srq,

	/* address handles and multicast groups */
	.create_ah = qhca_create_ah,
	.destroy_ah = qhca_destroy_ah,
	.attach_mcast = qhca_attach_mcast,
	.detach_mcast = qhca_detach_mcast,
};

static struct verbs_context *qhca_alloc_context(struct ibv_device *ibdev,
						int cmd_fd,
						void *private_data)
{
	struct qhca_get_context_resp resp = {};
	struct qhca_get_context cmd = {};
	struct qhca_context *ctx;
	int ret;

	ctx = verbs_init_and_alloc_context(ibdev, cmd_fd, ctx, ibv_ctx,
					   RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;

	ret = ibv_cmd_get_context(&ctx->ibv_ctx, &cmd.ibv_cmd, sizeof(cmd),
				  &resp.ibv_resp, sizeof(resp));
	if (ret) {
		verbs_err(&ctx->ibv_ctx, "qhca: get_context failed: %d\n",
			  ret);
		goto err_free;
	}

	ctx->db_page = resp.db_page;
	ctx->max_inline = resp.max_inline;
	ctx->sq_wqe_size = resp.sq_wqe_size;
	ctx->rq_wqe_size = resp.rq_wqe_size;
	ctx->cqe_size = resp.cqe_size;
	ctx->max_sge = resp.max_sge;

	/* 0: not filled in by this driver; anything else must be our CQE */
	if (ctx->cqe_size && ctx->cqe_size != sizeof(struct qhca_cqe)) {
		verbs_err(&ctx->ibv_ctx,
			  "qhca: kernel CQE size %u, provider %zu\n",
			  ctx->cqe_size, sizeof(struct qhca_cqe));
		ret = EINVAL;
		goto err_free;
	}

	/*
	 * The kernel hands this context one doorbell page of BAR2; the device
	 * only takes 32-bit writes there, so map it write only.
	 */
	ctx->db = mmap(NULL, QHCA_PAGE_SIZE, PROT_WRITE, MAP_SHARED, cmd_fd,
		       resp.db_mmap_key);
	if (ctx->db == MAP_FAILED) {
		ret = errno;
		verbs_err(&ctx->ibv_ctx,
			  "qhca: mmap of doorbell page %u failed: %d\n",
			  resp.db_page, ret);
		goto err_free;
	}

	qhca_ctx_init_qp_table(ctx);
	verbs_set_ops(&ctx->ibv_ctx, &qhca_ctx_ops);

	return &ctx->ibv_ctx;

err_free:
	/* Closes cmd_fd, which releases the kernel's ucontext */
	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
	errno = ret;
	return NULL;
}

static void qhca_free_context(struct ibv_context *ibctx)
{
	struct qhca_context *ctx = to_qhca_ctx(ibctx);

	munmap(ctx->db, QHCA_PAGE_SIZE);
	qhca_ctx_free_qp_table(ctx);
	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
}

static struct verbs_device *qhca_alloc_device(struct verbs_sysfs_dev *sysfs_dev)
{
	struct qhca_device *dev;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;

	return &dev->ibv_dev;
}

static void qhca_uninit_device(struct verbs_device *verbs_device)
{
	struct qhca_device *dev = to_qhca_dev(&verbs_device->device);

	free(dev);
}

static const struct verbs_device_ops qhca_dev_ops = {
	.name = "qhca",
	.match_min_abi_version = QHCA_UVERBS_ABI_VERSION,
	.match_max_abi_version = QHCA_UVERBS_ABI_VERSION,
	.match_table = qhca_match_table,
	.alloc_device = qhca_alloc_device,
	.uninit_device = qhca_uninit_device,
	.alloc_context = qhca_alloc_context,
};

PROVIDER_DRIVER(qhca, qhca_dev_ops);
