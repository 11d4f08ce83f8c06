// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * qhca-uverbs-smoke: exercise the qhca driver's uverbs surface through the
 * raw write() ABI of /dev/infiniband/uverbsN, without rdma-core or the qhca
 * provider: the context and its doorbell page, queries, PDs, MRs, and the
 * driver's udata validation for CQs, QPs and SRQs (include/qhca-abi.h):
 * good commands succeed, every malformed field is refused.  Prints
 * "ok - NAME" / "not ok - NAME" per case and exits 1 if any case failed.
 *
 *   qhca-uverbs-smoke [DEV [STATE [MTU]]]
 *     DEV    uverbs device (default /dev/infiniband/uverbs0)
 *     STATE  expected port state (1 DOWN, 4 ACTIVE); not checked if absent
 *     MTU    expected active_mtu (IB enum: 3 = 1024, 5 = 4096)
 *   HOLD=N   keep the context and a doorbell mapping for N seconds at the
 *            end, then report what a QUERY_PORT returns (EIO once the
 *            driver was removed underneath)
 *
 * Build (static, for the guest image): scripts/build-driver, or
 *   gcc -static -O2 -Wall -I include -o qhca-uverbs-smoke \
 *       guest-driver/tools/qhca-uverbs-smoke.c
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/ib_user_verbs.h>

#include "qhca-abi.h"
#include "qhca_hw.h"

/* link_layer of a port in the uverbs ABI (IBV_LINK_LAYER_ETHERNET) */
#define LINK_LAYER_ETHERNET	2
#define QPT_RC			2

static int fd = -1;
static int failures;

static void check(int cond, const char *name)
{
	if (cond) {
		printf("ok - %s\n", name);
	} else {
		printf("not ok - %s (errno %d: %s)\n", name, errno,
		       strerror(errno));
		failures++;
	}
}

/* One legacy write() command; the response goes where cmd says. */
static int uverbs_cmd(uint32_t command, const void *cmd, size_t inlen,
		      size_t outlen)
{
	struct ib_uverbs_cmd_hdr hdr = {
		.command = command,
		.in_words = (sizeof(hdr) + inlen) / 4,
		.out_words = outlen / 4,
	};
	char buf[512];

	memcpy(buf, &hdr, sizeof(hdr));
	memcpy(buf + sizeof(hdr), cmd, inlen);
	errno = 0;
	return write(fd, buf, sizeof(hdr) + inlen) ==
		       (ssize_t)(sizeof(hdr) + inlen) ? 0 : -1;
}

/* The command fails with @err */
static int fails_with(int ret, int err)
{
	return ret && errno == err;
}

static void *ring(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* ---- CQs ---- */

struct cq_cmd {
	struct ib_uverbs_create_cq core;
	struct qhca_create_cq_cmd drv;
	uint64_t extra;			/* past what the driver knows */
};

struct cq_resp {
	struct ib_uverbs_create_cq_resp core;
	struct qhca_create_cq_resp drv;
};

/* @outlen: response bytes the caller offers (an older provider's fewer) */
static int create_cq_out(struct cq_cmd *c, size_t inlen, struct cq_resp *r,
			 size_t outlen)
{
	c->core.response = (uintptr_t)r;
	c->core.comp_channel = -1;
	return uverbs_cmd(IB_USER_VERBS_CMD_CREATE_CQ, c, inlen, outlen);
}

static int create_cq(struct cq_cmd *c, size_t inlen, struct cq_resp *r)
{
	memset(r, 0, sizeof(*r));
	return create_cq_out(c, inlen, r, sizeof(*r));
}

static int destroy_cq(uint32_t handle)
{
	struct ib_uverbs_destroy_cq_resp resp;
	struct ib_uverbs_destroy_cq d = {
		.response = (uintptr_t)&resp,
		.cq_handle = handle,
	};

	return uverbs_cmd(IB_USER_VERBS_CMD_DESTROY_CQ, &d, sizeof(d),
			  sizeof(resp));
}

static void cq_tests(void *buf, uint32_t *cq_handle)
{
	const size_t core = sizeof(struct ib_uverbs_create_cq);
	const size_t full = core + sizeof(struct qhca_create_cq_cmd);
	struct cq_resp r;
	struct cq_cmd c;

	memset(&c, 0, sizeof(c));
	c.core.cqe = 16;
	c.drv.buf_va = (uintptr_t)buf;
	c.drv.depth = 16;
	check(!create_cq(&c, full, &r) && r.drv.cqn && r.drv.depth == 16 &&
	      r.core.cqe == 16, "CREATE_CQ with a pinned 16-entry ring");
	printf("# cqn %u depth %u\n", r.drv.cqn, r.drv.depth);
	*cq_handle = r.core.cq_handle;
	check(r.drv.comp_mask == QHCA_CREATE_RESP_GEOMETRY &&
	      r.drv.log_stride == 5,
	      "CREATE_CQ returns its geometry (32-byte CQEs)");

	/*
	 * A provider from before the geometry fields offers 8 driver bytes:
	 * it gets cqn and depth, and nothing is written past them.
	 */
	memset(&r, 0, sizeof(r));
	r.drv.comp_mask = 0xdeadbeef;
	r.drv.log_stride = 0xdeadbeef;
	check(!create_cq_out(&c, full, &r, sizeof(r.core) + 8) &&
	      r.drv.cqn && r.drv.depth == 16 &&
	      r.drv.comp_mask == 0xdeadbeef && r.drv.log_stride == 0xdeadbeef &&
	      !destroy_cq(r.core.cq_handle),
	      "CREATE_CQ with an older provider's shorter response");

	c.drv.depth = 32;
	check(fails_with(create_cq(&c, full, &r), EINVAL),
	      "CREATE_CQ: depth above what the CQEs give");

	c.drv.depth = 12;
	check(fails_with(create_cq(&c, full, &r), EINVAL),
	      "CREATE_CQ: depth not a power of two");
	c.drv.depth = 8;
	check(fails_with(create_cq(&c, full, &r), EINVAL),
	      "CREATE_CQ: depth below the CQEs asked for");
	c.drv.depth = 65536;
	c.core.cqe = 16;
	check(fails_with(create_cq(&c, full, &r), EINVAL),
	      "CREATE_CQ: depth above max_cqe");
	c.drv.depth = 16;
	c.drv.reserved = 1;
	check(fails_with(create_cq(&c, full, &r), EINVAL),
	      "CREATE_CQ: reserved field set");
	c.drv.reserved = 0;
	c.drv.buf_va = (uintptr_t)buf + 64;
	check(fails_with(create_cq(&c, full, &r), EINVAL),
	      "CREATE_CQ: ring not page aligned");
	c.drv.buf_va = 0;
	check(fails_with(create_cq(&c, full, &r), EINVAL),
	      "CREATE_CQ: no ring");
	c.drv.buf_va = (uintptr_t)buf;
	check(fails_with(create_cq(&c, core + 8, &r), EINVAL),
	      "CREATE_CQ: short driver command");
	c.core.comp_vector = 99;
	check(fails_with(create_cq(&c, full, &r), EINVAL),
	      "CREATE_CQ: no such completion vector");
	c.core.comp_vector = 0;
	c.extra = 1;
	check(fails_with(create_cq(&c, sizeof(c), &r), EOPNOTSUPP),
	      "CREATE_CQ: unknown trailing command bytes");
	c.extra = 0;
	check(!create_cq(&c, sizeof(c), &r) && !destroy_cq(r.core.cq_handle),
	      "CREATE_CQ with zero trailing bytes, DESTROY_CQ");
}

/* ---- QPs and SRQs ---- */

struct qp_cmd {
	struct ib_uverbs_create_qp core;
	struct qhca_create_qp_cmd drv;
};

struct qp_resp {
	struct ib_uverbs_create_qp_resp core;
	struct qhca_create_qp_resp drv;
};

static int create_qp_out(struct qp_cmd *c, struct qp_resp *r, size_t outlen)
{
	c->core.response = (uintptr_t)r;
	return uverbs_cmd(IB_USER_VERBS_CMD_CREATE_QP, c, sizeof(*c), outlen);
}

static int create_qp(struct qp_cmd *c, struct qp_resp *r)
{
	memset(r, 0, sizeof(*r));
	return create_qp_out(c, r, sizeof(*r));
}

static int destroy_qp(uint32_t handle)
{
	struct ib_uverbs_destroy_qp_resp resp;
	struct ib_uverbs_destroy_qp d = {
		.response = (uintptr_t)&resp,
		.qp_handle = handle,
	};

	return uverbs_cmd(IB_USER_VERBS_CMD_DESTROY_QP, &d, sizeof(d),
			  sizeof(resp));
}

struct srq_cmd {
	struct ib_uverbs_create_srq core;
	struct qhca_create_srq_cmd drv;
};

struct srq_resp {
	struct ib_uverbs_create_srq_resp core;
	struct qhca_create_srq_resp drv;
};

static int create_srq(struct srq_cmd *c, struct srq_resp *r)
{
	memset(r, 0, sizeof(*r));
	c->core.response = (uintptr_t)r;
	return uverbs_cmd(IB_USER_VERBS_CMD_CREATE_SRQ, c, sizeof(*c),
			  sizeof(*r));
}

static int destroy_srq(uint32_t handle)
{
	struct ib_uverbs_destroy_srq_resp resp;
	struct ib_uverbs_destroy_srq d = {
		.response = (uintptr_t)&resp,
		.srq_handle = handle,
	};

	return uverbs_cmd(IB_USER_VERBS_CMD_DESTROY_SRQ, &d, sizeof(d),
			  sizeof(resp));
}

static void qp_tests(uint32_t pd, uint32_t cq, void *sq, void *rq)
{
	struct srq_resp sr;
	struct srq_cmd s;
	struct qp_resp r;
	struct qp_cmd c;

	/*
	 * 16 x 1 SGE, no inline: send stride 128 (64 + 16 rounded up),
	 * which holds 4 SGEs or 64 inline bytes; receive stride 32.
	 */
	memset(&c, 0, sizeof(c));
	c.core.pd_handle = pd;
	c.core.send_cq_handle = cq;
	c.core.recv_cq_handle = cq;
	c.core.max_send_wr = 16;
	c.core.max_recv_wr = 16;
	c.core.max_send_sge = 1;
	c.core.max_recv_sge = 1;
	c.core.qp_type = QPT_RC;
	c.drv.sq_va = (uintptr_t)sq;
	c.drv.rq_va = (uintptr_t)rq;
	c.drv.sq_depth = 16;
	c.drv.rq_depth = 16;
	check(!create_qp(&c, &r) && r.core.qpn >= 2 && r.drv.qpn == r.core.qpn &&
	      r.drv.sq_depth == 16 && r.drv.rq_depth == 16,
	      "CREATE_QP (RC) with pinned rings");
	printf("# qpn %u caps: send %u x %u sge, inline %u; recv %u x %u sge\n",
	       r.core.qpn, r.core.max_send_wr, r.core.max_send_sge,
	       r.core.max_inline_data, r.core.max_recv_wr,
	       r.core.max_recv_sge);
	check(r.core.max_send_wr == 16 && r.core.max_send_sge == 4 &&
	      r.core.max_inline_data == 64 && r.core.max_recv_wr == 16 &&
	      r.core.max_recv_sge == 1, "CREATE_QP writes back the stride's caps");
	check(r.drv.comp_mask == QHCA_CREATE_RESP_GEOMETRY &&
	      r.drv.sq_log_stride == 7 && r.drv.rq_log_stride == 5 &&
	      r.drv.max_send_sge == 4 && r.drv.max_recv_sge == 1 &&
	      r.drv.max_inline == 64 && r.drv.reserved == 0,
	      "CREATE_QP returns its geometry (strides 128 and 32, 4 and 1 SGEs, 64 inline)");
	check(!destroy_qp(r.core.qp_handle), "DESTROY_QP");

	/* An older provider's response: qpn, the depths and "reserved" */
	memset(&r, 0, sizeof(r));
	r.drv.sq_log_stride = 0xdeadbeef;
	r.drv.reserved = 0xdeadbeef;
	check(!create_qp_out(&c, &r, sizeof(r.core) + 16) &&
	      r.drv.qpn == r.core.qpn && r.drv.sq_depth == 16 &&
	      r.drv.sq_log_stride == 0xdeadbeef &&
	      r.drv.reserved == 0xdeadbeef && !destroy_qp(r.core.qp_handle),
	      "CREATE_QP with an older provider's shorter response");

	c.drv.sq_depth = 32;
	check(fails_with(create_qp(&c, &r), EINVAL),
	      "CREATE_QP: SQ depth not what the caps give");
	c.drv.sq_depth = 16;
	c.drv.rq_depth = 8;
	check(fails_with(create_qp(&c, &r), EINVAL),
	      "CREATE_QP: RQ depth not what the caps give");
	c.drv.rq_depth = 16;
	c.drv.sq_va += 256;
	check(fails_with(create_qp(&c, &r), EINVAL),
	      "CREATE_QP: SQ ring not page aligned");
	c.drv.sq_va = (uintptr_t)sq;
	c.core.max_send_wr = 100000;
	check(fails_with(create_qp(&c, &r), EINVAL),
	      "CREATE_QP: more WRs than max_qp_wr");
	c.core.max_send_wr = 16;
	c.core.max_inline_data = 600;
	check(fails_with(create_qp(&c, &r), EINVAL),
	      "CREATE_QP: more inline data than the device takes");
	c.core.max_inline_data = 0;

	/* An SRQ of 8 x 1 SGE (stride 32), and a QP that uses it */
	memset(&s, 0, sizeof(s));
	s.core.pd_handle = pd;
	s.core.max_wr = 8;
	s.core.max_sge = 1;
	s.drv.buf_va = (uintptr_t)rq;
	s.drv.depth = 8;
	s.drv.reserved = 1;
	check(fails_with(create_srq(&s, &sr), EINVAL),
	      "CREATE_SRQ: reserved field set");
	s.drv.reserved = 0;
	s.drv.depth = 16;
	check(fails_with(create_srq(&s, &sr), EINVAL),
	      "CREATE_SRQ: depth not what the caps give");
	s.drv.depth = 8;
	s.core.srq_limit = 8;
	check(fails_with(create_srq(&s, &sr), EINVAL),
	      "CREATE_SRQ: limit not below the depth");
	s.core.srq_limit = 2;
	check(!create_srq(&s, &sr) && sr.drv.srqn && sr.drv.depth == 8 &&
	      sr.core.max_wr == 8 && sr.core.max_sge == 1,
	      "CREATE_SRQ with a pinned ring");
	check(sr.drv.comp_mask == QHCA_CREATE_RESP_GEOMETRY &&
	      sr.drv.log_stride == 5 && sr.drv.max_sge == 1,
	      "CREATE_SRQ returns its geometry (stride 32, 1 SGE)");

	c.core.is_srq = 1;
	c.core.srq_handle = sr.core.srq_handle;
	c.core.max_recv_wr = 0;
	c.core.max_recv_sge = 0;
	c.drv.rq_depth = 0;
	check(fails_with(create_qp(&c, &r), EINVAL),
	      "CREATE_QP with an SRQ: an RQ ring is refused");
	c.drv.rq_va = 0;
	check(!create_qp(&c, &r) && r.drv.rq_depth == 0 &&
	      r.drv.comp_mask == QHCA_CREATE_RESP_GEOMETRY &&
	      r.drv.rq_log_stride == 0 && r.drv.max_recv_sge == 0 &&
	      r.drv.sq_log_stride == 7 &&
	      !destroy_qp(r.core.qp_handle), "CREATE_QP with an SRQ");
	check(!destroy_srq(sr.core.srq_handle), "DESTROY_SRQ");
}

/* ---- MRs ---- */

static void mr_tests(uint32_t pd, void *buf, size_t len)
{
	struct ib_uverbs_reg_mr_resp resp = {};
	struct ib_uverbs_reg_mr reg = {
		.response = (uintptr_t)&resp,
		.start = (uintptr_t)buf + 100,
		.length = len - 200,
		.hca_va = 0x7f0000000064ULL,
		.pd_handle = pd,
		.access_flags = IB_UVERBS_ACCESS_LOCAL_WRITE |
				IB_UVERBS_ACCESS_REMOTE_READ,
	};
	struct ib_uverbs_dereg_mr dereg = {};

	check(!uverbs_cmd(IB_USER_VERBS_CMD_REG_MR, &reg, sizeof(reg),
			  sizeof(resp)) && resp.lkey && resp.lkey == resp.rkey,
	      "REG_MR of an unaligned range, lkey == rkey");
	printf("# MR key %#x\n", resp.lkey);
	dereg.mr_handle = resp.mr_handle;
	check(!uverbs_cmd(IB_USER_VERBS_CMD_DEREG_MR, &dereg, sizeof(dereg),
			  0), "DEREG_MR");

	reg.access_flags |= IB_UVERBS_ACCESS_ZERO_BASED;
	check(fails_with(uverbs_cmd(IB_USER_VERBS_CMD_REG_MR, &reg,
				    sizeof(reg), sizeof(resp)), EOPNOTSUPP),
	      "REG_MR: zero-based access is not supported");
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "/dev/infiniband/uverbs0";
	struct {
		struct ib_uverbs_get_context_resp core;
		struct qhca_alloc_ucontext_resp drv;
	} ctx = {};
	struct ib_uverbs_get_context get_ctx = { .response = (uintptr_t)&ctx };
	struct ib_uverbs_query_device_resp dev = {};
	struct ib_uverbs_query_device query_dev = {
		.response = (uintptr_t)&dev,
	};
	struct ib_uverbs_query_port_resp port = {};
	struct ib_uverbs_query_port query_port = {
		.response = (uintptr_t)&port,
		.port_num = 1,
	};
	struct ib_uverbs_alloc_pd_resp pd = {};
	struct ib_uverbs_alloc_pd alloc_pd = { .response = (uintptr_t)&pd };
	struct ib_uverbs_dealloc_pd dealloc_pd = {};
	uint32_t cq_handle = 0;
	volatile uint32_t *db;
	void *cqbuf, *sq, *rq, *mrbuf;
	void *p;

	fd = open(path, O_RDWR);
	check(fd >= 0, "open uverbs device");
	if (fd < 0)
		return 1;

	check(!uverbs_cmd(IB_USER_VERBS_CMD_GET_CONTEXT, &get_ctx,
			  sizeof(get_ctx), sizeof(ctx)), "GET_CONTEXT");
	printf("# db_page %u mmap key %#llx max_inline %u wqe %u/%u cqe %u max_sge %u comp_vectors %u\n",
	       ctx.drv.db_page, (unsigned long long)ctx.drv.db_mmap_key,
	       ctx.drv.max_inline, ctx.drv.sq_wqe_size, ctx.drv.rq_wqe_size,
	       ctx.drv.cqe_size, ctx.drv.max_sge, ctx.core.num_comp_vectors);
	check(ctx.drv.db_page >= 1 && ctx.drv.db_page < QHCA_DB_PAGES,
	      "context doorbell page is a user page");
	check(ctx.drv.sq_wqe_size == sizeof(struct qhca_send_wqe) &&
	      ctx.drv.rq_wqe_size == sizeof(struct qhca_recv_wqe) &&
	      ctx.drv.cqe_size == sizeof(struct qhca_cqe),
	      "context WQE header and CQE sizes");

	check(!uverbs_cmd(IB_USER_VERBS_CMD_QUERY_DEVICE, &query_dev,
			  sizeof(query_dev), sizeof(dev)), "QUERY_DEVICE");
	printf("# vendor %#x part %#x hw %u fw %#llx max_qp %u max_qp_wr %u max_cqe %u max_srq %u node_guid %#llx\n",
	       dev.vendor_id, dev.vendor_part_id, dev.hw_ver,
	       (unsigned long long)dev.fw_ver, dev.max_qp, dev.max_qp_wr,
	       dev.max_cqe, dev.max_srq, (unsigned long long)dev.node_guid);
	check(dev.vendor_id == QHCA_PCI_VENDOR_ID &&
	      dev.vendor_part_id == QHCA_PCI_DEVICE_ID, "vendor and part id");
	check(dev.max_qp_wr && dev.max_cqe && dev.max_srq && dev.max_mr &&
	      dev.max_sge == QHCA_MAX_SGE, "device limits from QUERY_DEVICE");

	check(!uverbs_cmd(IB_USER_VERBS_CMD_QUERY_PORT, &query_port,
			  sizeof(query_port), sizeof(port)), "QUERY_PORT");
	printf("# port state %u phys %u active_mtu %u max_mtu %u gid_tbl %u pkey_tbl %u speed %u width %u link_layer %u cap %#x\n",
	       port.state, port.phys_state, port.active_mtu, port.max_mtu,
	       port.gid_tbl_len, port.pkey_tbl_len, port.active_speed,
	       port.active_width, port.link_layer, port.port_cap_flags);
	check(port.link_layer == LINK_LAYER_ETHERNET &&
	      port.gid_tbl_len == QHCA_GID_TABLE_LEN &&
	      port.pkey_tbl_len == 1, "port is RoCE with 16 GIDs, 1 P_Key");
	if (argc > 2)
		check(port.state == strtoul(argv[2], NULL, 0),
		      "port state as expected");
	if (argc > 3)
		check(port.active_mtu == strtoul(argv[3], NULL, 0),
		      "active_mtu as expected");

	check(!uverbs_cmd(IB_USER_VERBS_CMD_ALLOC_PD, &alloc_pd,
			  sizeof(alloc_pd), sizeof(pd)), "ALLOC_PD");

	cqbuf = ring(4096);
	sq = ring(4096);
	rq = ring(4096);
	mrbuf = ring(4 * 4096);
	check(cqbuf && sq && rq && mrbuf, "memory for the rings");
	if (cqbuf && sq && rq && mrbuf) {
		cq_tests(cqbuf, &cq_handle);
		qp_tests(pd.pd_handle, cq_handle, sq, rq);
		check(!destroy_cq(cq_handle), "DESTROY_CQ");
		mr_tests(pd.pd_handle, mrbuf, 4 * 4096);
	}

	dealloc_pd.pd_handle = pd.pd_handle;
	check(!uverbs_cmd(IB_USER_VERBS_CMD_DEALLOC_PD, &dealloc_pd,
			  sizeof(dealloc_pd), 0), "DEALLOC_PD");

	db = mmap(NULL, QHCA_PAGE_SIZE, PROT_WRITE, MAP_SHARED, fd,
		  ctx.drv.db_mmap_key);
	check(db != MAP_FAILED, "mmap the doorbell page");
	if (db != MAP_FAILED) {
		/* A CQ that does not exist: the device drops it. */
		db[QHCA_DB_CQ_CI / 4] = 0x1234;
		check(munmap((void *)db, QHCA_PAGE_SIZE) == 0,
		      "munmap the doorbell page");
	}
	p = mmap(NULL, QHCA_PAGE_SIZE, PROT_WRITE, MAP_SHARED, fd,
		 ctx.drv.db_mmap_key + QHCA_PAGE_SIZE);
	check(p == MAP_FAILED, "mmap at an unknown offset fails");
	p = mmap(NULL, QHCA_PAGE_SIZE, PROT_WRITE, MAP_PRIVATE, fd,
		 ctx.drv.db_mmap_key);
	check(p == MAP_FAILED, "private mmap of the doorbell page fails");

	if (getenv("HOLD")) {
		db = mmap(NULL, QHCA_PAGE_SIZE, PROT_WRITE, MAP_SHARED, fd,
			  ctx.drv.db_mmap_key);
		check(db != MAP_FAILED, "mmap the doorbell page and hold it");
		printf("# holding for %s s\n", getenv("HOLD"));
		fflush(stdout);
		sleep(atoi(getenv("HOLD")));
		errno = 0;
		uverbs_cmd(IB_USER_VERBS_CMD_QUERY_PORT, &query_port,
			   sizeof(query_port), sizeof(port));
		printf("# after holding: QUERY_PORT errno %d\n", errno);
	}

	close(fd);
	return failures ? 1 : 0;
}
