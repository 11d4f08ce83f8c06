// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Provider data-path tests (unit-datapath.c, datapath.h): send and receive
 * WQE encoding of every opcode and flag, and the requests refused before a
 * WQE is written.
 */

#include <config.h>

#include "datapath.h"

/* ------------------------------------------------------------------------
 * Send and receive WQE encoding
 */
#define WQE_BUF 2048
#define FILL 0xa5

static const struct qhca_sq_params rc_params = {
	.qp_type = IBV_QPT_RC, .max_sge = 12, .max_inline = 192,
};

static const struct qhca_sq_params ud_params = {
	.qp_type = IBV_QPT_UD, .max_sge = 12, .max_inline = 192,
};

static const struct qhca_sq_params uc_params = {
	.qp_type = IBV_QPT_UC, .max_sge = 12, .max_inline = 192,
};

/* Build wr with p and compare the header and SGEs with the expected image */
static bool check_send_wqe(const char *name, const struct qhca_sq_params *p,
			   const struct ibv_send_wr *wr, const uint8_t *ehdr)
{
	uint8_t buf[WQE_BUF], esge[W_SGE];
	size_t end;
	int ret, i;
	bool good;

	memset(buf, FILL, sizeof(buf));
	ret = qhca_build_send_wqe(buf, p, wr);
	if (ret) {
		diag("%s: build returned %d", name, ret);
		return false;
	}
	good = same_bytes(buf, ehdr, W_HDR, name);
	for (i = 0; good && i < ehdr[W_NUM_SGE]; i++) {
		exp_sge(esge, &wr->sg_list[i]);
		good = same_bytes(buf + W_HDR + W_SGE * i, esge, W_SGE, name);
	}
	end = W_HDR + W_SGE * ehdr[W_NUM_SGE];
	if (ehdr[W_FLAGS] & F_INLINE)
		end = W_HDR + get32(ehdr + W_INLINE_LEN);
	if (good && !all_bytes(buf + end, sizeof(buf) - end, FILL)) {
		diag("%s: wrote past its last SGE/inline byte", name);
		good = false;
	}
	return good;
}

void test_send_wqe(void)
{
	uint8_t e[W_HDR], buf[WQE_BUF], data[200];
	struct qhca_ah ah = { .ahn = 0x4321 };
	struct ibv_sge isge[2];
	struct ibv_send_wr wr;
	__be32 imm = htobe32(0xdeadbeef);
	size_t i;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0x0102030405060708ull;
	wr.opcode = IBV_WR_SEND;
	wr.sg_list = test_sges;
	wr.num_sge = 2;
	exp_hdr(e, OP_SEND, 0, 2, 0, wr.wr_id);
	ok(check_send_wqe("SEND", &rc_params, &wr, e),
	   "WQE: SEND opcode 0x02, wr_id, 2 SGEs at 64/80");

	wr.opcode = IBV_WR_SEND_WITH_IMM;
	wr.imm_data = imm;
	wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;
	exp_hdr(e, OP_SEND_IMM, F_SIGNALED | F_SOLICITED, 2, 0, wr.wr_id);
	memcpy(e + W_IMM, &imm, 4);
	ok(check_send_wqe("SEND_WITH_IMM", &rc_params, &wr, e) &&
	   e[W_IMM] == 0xde && e[W_IMM + 3] == 0xef,
	   "WQE: SEND_WITH_IMM 0x03, imm_data bytes in network order, SIGNALED|SOLICITED");

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 7;
	wr.opcode = IBV_WR_SEND_WITH_INV;
	wr.invalidate_rkey = 0x00c0ffee;
	wr.sg_list = test_sges;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_FENCE;
	exp_hdr(e, OP_SEND_INV, F_FENCE, 1, 0, 7);
	put32(e, W_INV_RKEY, 0x00c0ffee);
	ok(check_send_wqe("SEND_WITH_INV", &rc_params, &wr, e),
	   "WQE: SEND_WITH_INV 0x09, invalidate_rkey at 20, FENCE");

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 8;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = 0xfedcba9876543210ull;
	wr.wr.rdma.rkey = 0x12345678;
	wr.sg_list = test_sges;
	wr.num_sge = 3;
	exp_hdr(e, OP_RDMA_WRITE, 0, 3, 0, 8);
	put64(e, W_RADDR, 0xfedcba9876543210ull);
	put32(e, W_RKEY, 0x12345678);
	ok(check_send_wqe("RDMA_WRITE", &rc_params, &wr, e),
	   "WQE: RDMA_WRITE 0x00, remote_addr at 24, rkey at 32, 3 SGEs");

	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.imm_data = imm;
	exp_hdr(e, OP_RDMA_WRITE_IMM, 0, 3, 0, 8);
	put64(e, W_RADDR, 0xfedcba9876543210ull);
	put32(e, W_RKEY, 0x12345678);
	memcpy(e + W_IMM, &imm, 4);
	ok(check_send_wqe("RDMA_WRITE_WITH_IMM", &rc_params, &wr, e),
	   "WQE: RDMA_WRITE_WITH_IMM 0x01, remote address and imm_data");

	wr.opcode = IBV_WR_RDMA_READ;
	wr.num_sge = 1;
	exp_hdr(e, OP_RDMA_READ, 0, 1, 0, 8);
	put64(e, W_RADDR, 0xfedcba9876543210ull);
	put32(e, W_RKEY, 0x12345678);
	ok(check_send_wqe("RDMA_READ", &rc_params, &wr, e),
	   "WQE: RDMA_READ 0x04, remote address, 1 SGE");

	wr.send_flags = IBV_SEND_INLINE;
	ok(check_send_wqe("RDMA_READ inline", &rc_params, &wr, e),
	   "WQE: IBV_SEND_INLINE is ignored for RDMA_READ (SGEs, no INLINE flag)");

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 9;
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.remote_addr = 0x1000;
	wr.wr.atomic.rkey = 0x777;
	wr.wr.atomic.compare_add = 0x1111111122222222ull;
	wr.wr.atomic.swap = 0x3333333344444444ull;
	wr.sg_list = &test_sges[2];
	wr.num_sge = 1;
	exp_hdr(e, OP_CMP_SWP, 0, 1, 0, 9);
	put64(e, W_RADDR, 0x1000);
	put32(e, W_RKEY, 0x777);
	put64(e, W_CMP_ADD, 0x1111111122222222ull);
	put64(e, W_SWAP, 0x3333333344444444ull);
	ok(check_send_wqe("ATOMIC_CMP_AND_SWP", &rc_params, &wr, e),
	   "WQE: ATOMIC_CMP_AND_SWP 0x05, remote_addr/rkey/compare_add at 40/swap at 48");

	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	exp_hdr(e, OP_FETCH_ADD, 0, 1, 0, 9);
	put64(e, W_RADDR, 0x1000);
	put32(e, W_RKEY, 0x777);
	put64(e, W_CMP_ADD, 0x1111111122222222ull);
	ok(check_send_wqe("ATOMIC_FETCH_AND_ADD", &rc_params, &wr, e),
	   "WQE: ATOMIC_FETCH_AND_ADD 0x06, add in compare_add, swap 0");

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 10;
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.invalidate_rkey = 0x4242;
	wr.send_flags = IBV_SEND_SIGNALED;
	exp_hdr(e, OP_LOCAL_INV, F_SIGNALED, 0, 0, 10);
	put32(e, W_INV_RKEY, 0x4242);
	ok(check_send_wqe("LOCAL_INV", &rc_params, &wr, e),
	   "WQE: LOCAL_INV 0x07, invalidate_rkey, no SGEs");

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 11;
	wr.opcode = IBV_WR_SEND_WITH_IMM;
	wr.imm_data = imm;
	wr.wr.ud.ah = &ah.ibv_ah;
	wr.wr.ud.remote_qpn = 0x1234;
	wr.wr.ud.remote_qkey = 0x80010000;
	wr.sg_list = test_sges;
	wr.num_sge = 1;
	exp_hdr(e, OP_SEND_IMM, 0, 1, 0, 11);
	memcpy(e + W_IMM, &imm, 4);
	put32(e, W_AHN, 0x4321);
	put32(e, W_RQPN, 0x1234);
	put32(e, W_QKEY, 0x80010000);
	ok(check_send_wqe("UD SEND_WITH_IMM", &ud_params, &wr, e),
	   "WQE: UD send: ahn at 24, remote_qpn at 28, remote_qkey at 32");

	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + 1);
	isge[0].addr = (uintptr_t)data;
	isge[0].length = 150;
	isge[1].addr = (uintptr_t)(data + 150);
	isge[1].length = 42;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 12;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_INLINE;
	wr.sg_list = isge;
	wr.num_sge = 2;
	exp_hdr(e, OP_SEND, F_INLINE, 0, 192, 12);
	memset(buf, FILL, sizeof(buf));
	ok(check_send_wqe("SEND inline", &rc_params, &wr, e) &&
	   !qhca_build_send_wqe(buf, &rc_params, &wr) &&
	   !memcmp(buf + W_HDR, data, 192),
	   "WQE: inline SEND: INLINE flag, num_sge 0, inline_len, data at 64");

	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = 0x5000;
	wr.wr.rdma.rkey = 0x99;
	exp_hdr(e, OP_RDMA_WRITE, F_INLINE, 0, 192, 12);
	put64(e, W_RADDR, 0x5000);
	put32(e, W_RKEY, 0x99);
	ok(check_send_wqe("RDMA_WRITE inline", &rc_params, &wr, e),
	   "WQE: inline RDMA_WRITE");

	{
		struct ibv_mr mr = { .lkey = 0x5501 };
		struct ibv_mw mw = { .rkey = 0x7702, .type = IBV_MW_TYPE_2 };

		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 14;
		wr.opcode = IBV_WR_BIND_MW;
		wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
		/* SGEs mean nothing to a bind: none are written */
		wr.sg_list = test_sges;
		wr.num_sge = 2;
		wr.bind_mw.mw = &mw;
		wr.bind_mw.rkey = 0x7703;
		wr.bind_mw.bind_info.mr = &mr;
		wr.bind_mw.bind_info.addr = 0x0000123456789000ull;
		wr.bind_mw.bind_info.length = 0x1234500000ull;
		wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE |
						       IBV_ACCESS_REMOTE_ATOMIC;
		exp_hdr(e, OP_BIND_MW, F_SIGNALED, 0, 0, 14);
		put64(e, W_BADDR, 0x0000123456789000ull);
		put64(e, W_BLEN, 0x1234500000ull);
		put32(e, W_BMR, 0x5501);
		put32(e, W_BMW, 0x7702);
		put32(e, W_BNEW, 0x7703);
		put32(e, W_BACCESS, A_REMOTE_WRITE | A_REMOTE_ATOMIC);
		ok(check_send_wqe("BIND_MW", &rc_params, &wr, e) &&
		   mw.rkey == 0x7702,
		   "WQE: BIND_MW 0x08 (type 2): addr at 24, length at 32, MR lkey at 40, window key at 44, new key at 48, rights at 52; no SGEs or INLINE");

		wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_READ;
		put32(e, W_BACCESS, A_REMOTE_READ);
		ok(check_send_wqe("BIND_MW UC", &uc_params, &wr, e),
		   "WQE: BIND_MW on a UC QP, remote read right 0x4");
	}

	{
		struct qhca_sq_params sig = rc_params;

		sig.sig_all = true;
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 13;
		wr.opcode = IBV_WR_SEND;
		exp_hdr(e, OP_SEND, F_SIGNALED, 0, 0, 13);
		ok(check_send_wqe("sq_sig_all", &sig, &wr, e),
		   "WQE: sq_sig_all sets SIGNALED without IBV_SEND_SIGNALED");
	}
}

void test_send_wqe_errors(void)
{
	uint8_t buf[WQE_BUF], data[256] = { 0 };
	struct ibv_sge big = { .addr = (uintptr_t)data, .length = 193 };
	struct qhca_ah ah = { .ahn = 1 };
	struct ibv_send_wr wr;
	static const enum ibv_wr_opcode rc_only[] = {
		IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM,
		IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP,
		IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_LOCAL_INV,
		IBV_WR_SEND_WITH_INV,
	};
	static const enum ibv_wr_opcode never[] = {
		/* 14: IBV_WR_FLUSH, named only from rdma-core 45 on (the
		 * provider is also built against rdma-core 44's headers)
		 */
		IBV_WR_TSO, IBV_WR_DRIVER1,
		(enum ibv_wr_opcode)14, IBV_WR_ATOMIC_WRITE,
		(enum ibv_wr_opcode)99,
	};
	bool good;
	size_t i;

	memset(&wr, 0, sizeof(wr));
	wr.wr.ud.ah = &ah.ibv_ah;
	good = true;
	for (i = 0; i < ARRAY_SIZE(rc_only); i++) {
		wr.opcode = rc_only[i];
		if (qhca_build_send_wqe(buf, &ud_params, &wr) != EINVAL)
			good = false;
		if (qhca_build_send_wqe(buf, &rc_params, &wr) != 0)
			good = false;
	}
	ok(good, "UD QPs take only SEND/SEND_WITH_IMM; RC takes all nine opcodes");

	good = true;
	for (i = 0; i < ARRAY_SIZE(never); i++) {
		wr.opcode = never[i];
		if (qhca_build_send_wqe(buf, &rc_params, &wr) != EINVAL)
			good = false;
	}
	ok(good, "TSO, FLUSH, ATOMIC_WRITE and unknown opcodes are EINVAL");

	{
		struct ibv_mr mr = { .lkey = 0x5501 };
		struct ibv_mw mw = { .rkey = 0x7702, .type = IBV_MW_TYPE_2 };
		static const unsigned int bad_rights[] = {
			IBV_ACCESS_ZERO_BASED,
			IBV_ACCESS_ZERO_BASED | IBV_ACCESS_REMOTE_WRITE,
#ifdef QHCA_HAVE_IBV_FLUSH
			IBV_ACCESS_FLUSH_GLOBAL,
#endif
			1u << 12,
		};

		memset(&wr, 0, sizeof(wr));
		wr.opcode = IBV_WR_BIND_MW;
		wr.bind_mw.mw = &mw;
		wr.bind_mw.rkey = 0x7703;
		wr.bind_mw.bind_info.mr = &mr;
		wr.bind_mw.bind_info.length = 4096;
		wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
		good = qhca_build_send_wqe(buf, &rc_params, &wr) == 0 &&
		       qhca_build_send_wqe(buf, &ud_params, &wr) == EINVAL;
		for (i = 0; i < ARRAY_SIZE(bad_rights); i++) {
			wr.bind_mw.bind_info.mw_access_flags = bad_rights[i];
			if (qhca_build_send_wqe(buf, &rc_params, &wr) != EINVAL)
				good = false;
		}
		ok(good, "BIND_MW: UD QPs refuse it; zero-based windows, FLUSH rights (rdma-core 45+) and an unnamed bit are EINVAL");

		wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
		wr.bind_mw.bind_info.length = 0;
		good = qhca_build_send_wqe(buf, &rc_params, &wr) == EINVAL;
		wr.bind_mw.bind_info.length = 4096;
		wr.bind_mw.bind_info.mr = NULL;
		good = good &&
		       qhca_build_send_wqe(buf, &rc_params, &wr) == EINVAL;
		wr.bind_mw.bind_info.mr = &mr;
		mw.type = IBV_MW_TYPE_1;
		good = good &&
		       qhca_build_send_wqe(buf, &rc_params, &wr) == EINVAL;
		wr.bind_mw.mw = NULL;
		good = good &&
		       qhca_build_send_wqe(buf, &rc_params, &wr) == EINVAL;
		ok(good && mw.rkey == 0x7702,
		   "IBV_WR_BIND_MW: a type 2 unbind (length 0), no MR, a type 1 window (ibv_bind_mw() only), no window are EINVAL");
	}

	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_SEND;
	wr.sg_list = test_sges;
	wr.num_sge = 13;
	ok(qhca_build_send_wqe(buf, &rc_params, &wr) == EINVAL,
	   "num_sge above the QP's max_send_sge is EINVAL");

	wr.num_sge = 1;
	wr.sg_list = &big;
	wr.send_flags = IBV_SEND_INLINE;
	ok(qhca_build_send_wqe(buf, &rc_params, &wr) == EINVAL,
	   "inline data above the QP's max_inline_data is EINVAL");

	wr.send_flags = IBV_SEND_IP_CSUM;
	ok(qhca_build_send_wqe(buf, &rc_params, &wr) == EINVAL,
	   "IBV_SEND_IP_CSUM is EINVAL");

	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_SEND;
	ok(qhca_build_send_wqe(buf, &ud_params, &wr) == EINVAL,
	   "UD send without an AH is EINVAL");
}

void test_recv_wqe(void)
{
	struct ibv_recv_wr wr = {
		.wr_id = 0xa1a2a3a4a5a6a7a8ull,
		.sg_list = test_sges,
		.num_sge = 3,
	};
	uint8_t buf[WQE_BUF], e[R_HDR], esge[W_SGE];
	bool good;
	int i;

	memset(buf, FILL, sizeof(buf));
	memset(e, 0, sizeof(e));
	put64(e, R_WR_ID, wr.wr_id);
	e[R_NUM_SGE] = 3;
	good = !qhca_build_recv_wqe(buf, 3, &wr) &&
	       same_bytes(buf, e, R_HDR, "recv WQE");
	for (i = 0; good && i < 3; i++) {
		exp_sge(esge, &test_sges[i]);
		good = same_bytes(buf + R_HDR + W_SGE * i, esge, W_SGE,
				  "recv SGE");
	}
	good = good && all_bytes(buf + R_HDR + 3 * W_SGE,
				 sizeof(buf) - R_HDR - 3 * W_SGE, FILL);
	ok(good, "recv WQE: wr_id at 0, num_sge at 8, reserved 0, SGEs at 16");
	ok(qhca_build_recv_wqe(buf, 2, &wr) == EINVAL,
	   "recv WQE: num_sge above max_recv_sge is EINVAL");
}
