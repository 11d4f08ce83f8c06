/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * qhca uverbs ABI: what the rdma-core provider (userlib/) and the kernel
 * driver (guest-driver/) pass each other in udata, and the mmap offsets.
 * Laid out like include/uapi/rdma/<driver>-abi.h: only __u types, every
 * struct a multiple of 8 bytes, 64-bit fields naturally aligned.
 *
 * The hardware contract (what the device sees) is qhca_hw.h, not this file.
 */
#ifndef QHCA_ABI_USER_H
#define QHCA_ABI_USER_H

#include <linux/types.h>

#define QHCA_UVERBS_ABI_VERSION		1

/* ibv_open_device() */
struct qhca_alloc_ucontext_resp {
	__aligned_u64 db_mmap_key;	/* mmap() offset of this context's doorbell page */
	__u32 db_page;			/* index of that page in BAR2 */
	__u32 max_inline;		/* inline data bytes per send WQE */
	__u32 sq_wqe_size;		/* bytes per SQ WQE (struct qhca_send_wqe) */
	__u32 rq_wqe_size;		/* bytes per RQ/SRQ WQE (struct qhca_recv_wqe) */
	__u32 cqe_size;			/* bytes per CQE (struct qhca_cqe) */
	__u32 max_sge;
};

/* ibv_create_cq(): the provider allocates the ring, the kernel pins it */
struct qhca_create_cq_cmd {
	__aligned_u64 buf_va;		/* page aligned; depth * cqe_size bytes */
	__u32 depth;			/* power of two, as sized by the provider */
	__u32 reserved;
};

/*
 * ibv_resize_cq(): a new ring allocated as create's; the provider has told
 * the device (CQ_CI) of every CQE it polled, and the device moves the rest
 * to the new ring's first entries (carried)
 */
struct qhca_resize_cq_cmd {
	__aligned_u64 buf_va;
	__u32 depth;
	__u32 reserved;
};

struct qhca_resize_cq_resp {
	__u32 depth;
	__u32 carried;
};

/*
 * The create responses return the queue geometry the kernel computed with
 * the rules of qhca_hw.h ("Queue geometry"), flagged in comp_mask by
 * QHCA_CREATE_RESP_GEOMETRY.  Kernels before that flag wrote only the
 * fields above comp_mask (and 0 in the QP's comp_mask, then "reserved");
 * a provider with a smaller response buffer gets the start of it (the
 * kernel copies what fits).  docs/abi.md, "Compatibility".
 */
#define QHCA_CREATE_RESP_GEOMETRY	(1u << 0)

struct qhca_create_cq_resp {
	__u32 cqn;
	__u32 depth;
	__u32 comp_mask;		/* QHCA_CREATE_RESP_GEOMETRY */
	__u32 log_stride;		/* log2 of the CQE size */
};

/* ibv_create_qp(): SQ and RQ rings in user memory (rq_va 0 with an SRQ) */
struct qhca_create_qp_cmd {
	__aligned_u64 sq_va;
	__aligned_u64 rq_va;
	__u32 sq_depth;			/* power of two */
	__u32 rq_depth;			/* power of two, 0 with an SRQ */
};

struct qhca_create_qp_resp {
	__u32 qpn;
	__u32 sq_depth;
	__u32 rq_depth;			/* 0 with an SRQ */
	__u32 comp_mask;		/* QHCA_CREATE_RESP_GEOMETRY */
	__u32 sq_log_stride;
	__u32 rq_log_stride;		/* 0 with an SRQ */
	__u32 max_send_sge;
	__u32 max_recv_sge;		/* 0 with an SRQ */
	__u32 max_inline;
	__u32 reserved;
};

/* ibv_create_srq() */
struct qhca_create_srq_cmd {
	__aligned_u64 buf_va;
	__u32 depth;			/* power of two */
	__u32 reserved;
};

struct qhca_create_srq_resp {
	__u32 srqn;
	__u32 depth;
	__u32 comp_mask;		/* QHCA_CREATE_RESP_GEOMETRY */
	__u32 log_stride;
	__u32 max_sge;
	__u32 reserved;
};

/*
 * ibv_modify_srq(IBV_SRQ_MAX_WR): a new ring allocated as create's, of the
 * same stride, for depth entries (the uverbs max_wr); the device carries
 * the WQEs not yet taken over at their indices.  Only with IBV_SRQ_MAX_WR:
 * a modify of the limit alone has no driver data.
 */
struct qhca_modify_srq_cmd {
	__aligned_u64 buf_va;
	__u32 depth;			/* power of two */
	__u32 reserved;
};

/* ibv_create_ah(): UD WQEs name the device's address handle by number */
struct qhca_create_ah_resp {
	__u32 ahn;
	__u32 reserved;
};

#endif /* QHCA_ABI_USER_H */
