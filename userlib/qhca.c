// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * qhca rdma-core provider: device matching, user context (with its doorbell
 * page), device and port queries, protection domains.
 *
 * Verbs this provider does not implement yet are left out of qhca_ctx_ops;
 * verbs_set_ops() then routes them to libibverbs' defaults, which fail with
 * EOPNOTSUPP.
 */

#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

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

static void qhca_free_context(struct ibv_context *ibctx);

static const struct verbs_context_ops qhca_ctx_ops = {
	.alloc_pd = qhca_alloc_pd,
	.dealloc_pd = qhca_dealloc_pd,
	.free_context = qhca_free_context,
	.query_device_ex = qhca_query_device_ex,
	.query_port = qhca_query_port,
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
