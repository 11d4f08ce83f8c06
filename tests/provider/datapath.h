/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the provider's data-path host tests share (tests/provider/): the byte
 * offsets and values of docs/hardware.md the expected images are written
 * with, contexts, CQs, SRQs and QPs made in memory without a device
 * (unit-datapath.c), and the cases, one file per subject (datapath-*.c),
 * which unit-datapath.c's main() adds.
 */
#ifndef QHCA_TEST_DATAPATH_H
#define QHCA_TEST_DATAPATH_H

#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ccan/array_size.h>

#include "qhca.h"
#include "unit-check.h"

#define ok(...) unit_check(__VA_ARGS__)

/* Send WQE header per docs/hardware.md section 8 */
enum {
	W_OPCODE = 0, W_FLAGS = 1, W_NUM_SGE = 2, W_RSVD0 = 3,
	W_INLINE_LEN = 4, W_WR_ID = 8, W_IMM = 16, W_INV_RKEY = 20,
	W_RADDR = 24, W_RKEY = 32, W_CMP_ADD = 40, W_SWAP = 48,
	W_AHN = 24, W_RQPN = 28, W_QKEY = 32,
	W_BADDR = 24, W_BLEN = 32, W_BMR = 40, W_BMW = 44, W_BNEW = 48,
	W_BACCESS = 52,
	W_HDR = 64, W_SGE = 16,
	R_WR_ID = 0, R_NUM_SGE = 8, R_HDR = 16,
};

/* Linux's ib_wr_opcode values and the WQE flag bits, as literals */
enum {
	OP_RDMA_WRITE = 0x00, OP_RDMA_WRITE_IMM = 0x01, OP_SEND = 0x02,
	OP_SEND_IMM = 0x03, OP_RDMA_READ = 0x04, OP_CMP_SWP = 0x05,
	OP_FETCH_ADD = 0x06, OP_LOCAL_INV = 0x07, OP_BIND_MW = 0x08,
	OP_SEND_INV = 0x09,
	F_SIGNALED = 1, F_SOLICITED = 2, F_INLINE = 4, F_FENCE = 8,
};

/* The device's access bits (docs/hardware.md), as literals */
enum {
	A_LOCAL_WRITE = 1, A_REMOTE_WRITE = 2, A_REMOTE_READ = 4,
	A_REMOTE_ATOMIC = 8,
};

/* CQE per docs/hardware.md section 9 */
enum {
	C_WR_ID = 0, C_STATUS = 8, C_OPCODE = 9, C_FLAGS = 10, C_OWNER = 11,
	C_BYTE_LEN = 12, C_QPN = 16, C_SRC_QP = 20, C_IMM = 24, C_NHT = 28,
	C_VENDOR_ERR = 29, C_WQE_INDEX = 30, C_SIZE = 32,
};

/* Linux's ib_wc_opcode values used by the contract, and the CQE flags */
enum {
	CO_SEND = 0, CO_RDMA_WRITE = 1, CO_RDMA_READ = 2, CO_COMP_SWAP = 3,
	CO_FETCH_ADD = 4, CO_BIND_MW = 5, CO_LOCAL_INV = 6, CO_FLUSH = 8,
	CO_ATOMIC_WRITE = 9,
	CO_REG_MR = 10, CO_RECV = 128,
	CO_RECV_RDMA_IMM = 129,
	CF_WITH_IMM = 1, CF_WITH_INV = 2, CF_GRH = 4, CF_SOLICITED = 8,
};

struct test_cqe {
	uint64_t wr_id;
	uint8_t status;
	uint8_t opcode;
	uint8_t flags;
	uint32_t byte_len;
	uint32_t qpn;
	uint32_t src_qp;
	uint8_t imm[4];
	uint8_t vendor_err;
	uint16_t wqe_index;
};

struct qp_spec {
	enum ibv_qp_type type;
	struct ibv_qp_cap cap;
	struct qhca_cq *scq;
	struct qhca_cq *rcq;
	struct qhca_srq *srq;
	uint32_t qpn;
	int sig_all;
	uint64_t send_ops;
};

void __attribute__((format(printf, 1, 2))) diag(const char *fmt, ...);

/* Byte images */
void put16(uint8_t *b, size_t off, uint16_t v);
void put32(uint8_t *b, size_t off, uint32_t v);
void put64(uint8_t *b, size_t off, uint64_t v);
uint32_t get32(const void *p);
bool same_bytes(const uint8_t *got, const uint8_t *want, size_t len,
		const char *what);
bool all_bytes(const uint8_t *p, size_t len, uint8_t v);
void exp_hdr(uint8_t *e, uint8_t op, uint8_t flags, uint8_t num_sge,
	     uint32_t inline_len, uint64_t wr_id);
void exp_sge(uint8_t *e, const struct ibv_sge *sge);

/* A context without a device: a memory page for doorbells */
struct qhca_context *new_ctx(void);
void free_ctx(struct qhca_context *ctx);
uint32_t db_val(struct qhca_context *ctx, uint32_t off);
struct qhca_cq *new_cq(struct qhca_context *ctx, int cqe, uint32_t cqn);
void free_cq(struct qhca_cq *cq);
struct qhca_srq *new_srq(struct qhca_context *ctx, uint32_t max_wr,
			 uint32_t max_sge, uint32_t srqn);
void free_srq(struct qhca_srq *srq);
struct qhca_qp *new_qp(struct qhca_context *ctx, const struct qp_spec *s);
void free_qp(struct qhca_context *ctx, struct qhca_qp *qp);

/* Play the device: write a CQE at its producer index, owner byte last */
void dev_write_cqe(struct qhca_cq *cq, uint32_t dev_pi,
		   const struct test_cqe *c);
void dev_complete(struct qhca_cq *cq, uint32_t dev_pi, uint32_t qpn,
		  uint8_t opcode, uint16_t wqe_index, uint64_t wr_id);

/* Three SGEs with addresses, lengths and keys of every width */
extern struct ibv_sge test_sges[3];

/* The cases */
/* datapath-create.c */
void test_sizing(void);
void test_create_resp(void);
void test_create_validation(void);
/* datapath-wqe.c */
void test_send_wqe(void);
void test_send_wqe_errors(void);
void test_recv_wqe(void);
/* datapath-cq.c */
void test_cqe_decode(void);
void test_poll_wrap(void);
void test_cq_ex(void);
void test_cq_clean_wrap(void);
/* datapath-post.c */
void test_post_send(void);
void test_srq(void);
void test_srq_resize(void);
/* datapath-wr.c */
void test_wr_api(void);
void test_wr_placement(void);
void test_wr_api_ud(void);
/* datapath-mw.c */
void test_bind_mw(void);
void test_wr_bind_mw(void);
void test_bind_mw_local_rights(void);
/* datapath-syscalls.c */
void test_no_syscalls(void);

#endif
