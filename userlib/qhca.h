/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * qhca rdma-core provider: private types.
 */

#ifndef __QHCA_H__
#define __QHCA_H__

#include <stddef.h>
#include <stdint.h>

#include <infiniband/driver.h>
#include <infiniband/kern-abi.h>

#include "qhca_hw.h"
#include "qhca-abi.h"
/* _STRUCT_* macros made from qhca-abi.h by rdma-core's make_abi_structs.py */
#include "qhca-kabi.h"

/* Command and response wrappers: rdma-core header + our udata */
DECLARE_DRV_CMD(qhca_get_context, IB_USER_VERBS_CMD_GET_CONTEXT, empty,
		qhca_alloc_ucontext_resp);

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
};

static inline struct qhca_device *to_qhca_dev(struct ibv_device *ibdev)
{
	return container_of(ibdev, struct qhca_device, ibv_dev.device);
}

static inline struct qhca_context *to_qhca_ctx(struct ibv_context *ibctx)
{
	return container_of(ibctx, struct qhca_context, ibv_ctx.context);
}

#endif /* __QHCA_H__ */
