// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * qhca-uverbs-smoke: exercise the qhca driver's uverbs surface through the
 * raw write() ABI of /dev/infiniband/uverbsN, without rdma-core or the qhca
 * provider.  Prints "ok - NAME" / "not ok - NAME" per case and exits 1 if
 * any case failed.
 *
 *   qhca-uverbs-smoke [DEV [STATE [MTU]]]
 *     DEV    uverbs device (default /dev/infiniband/uverbs0)
 *     STATE  expected port state (1 DOWN, 4 ACTIVE); not checked if absent
 *     MTU    expected active_mtu (IB enum: 3 = 1024, 5 = 4096)
 *   HOLD=N   keep the context and a doorbell mapping for N seconds at the
 *            end, then report what a QUERY_PORT returns (EIO once the
 *            driver was removed underneath)
 *
 * Build (static, for the guest image):
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
#include <rdma/ib_user_verbs.h>

#include "qhca-abi.h"
#include "qhca_hw.h"

/* link_layer of a port in the uverbs ABI (IBV_LINK_LAYER_ETHERNET) */
#define LINK_LAYER_ETHERNET	2

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
	char buf[256];

	memcpy(buf, &hdr, sizeof(hdr));
	memcpy(buf + sizeof(hdr), cmd, inlen);
	return write(fd, buf, sizeof(hdr) + inlen) ==
		       (ssize_t)(sizeof(hdr) + inlen) ? 0 : -1;
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
	struct ib_uverbs_create_cq_resp cq = {};
	struct ib_uverbs_create_cq create_cq = {
		.response = (uintptr_t)&cq,
		.cqe = 16,
		.comp_channel = -1,
	};
	volatile uint32_t *db;
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
	      "context WQE and CQE sizes");

	check(!uverbs_cmd(IB_USER_VERBS_CMD_QUERY_DEVICE, &query_dev,
			  sizeof(query_dev), sizeof(dev)), "QUERY_DEVICE");
	printf("# vendor %#x part %#x hw %u fw %#llx max_qp %u max_cqe %u node_guid %#llx\n",
	       dev.vendor_id, dev.vendor_part_id, dev.hw_ver,
	       (unsigned long long)dev.fw_ver, dev.max_qp, dev.max_cqe,
	       (unsigned long long)dev.node_guid);
	check(dev.vendor_id == QHCA_PCI_VENDOR_ID &&
	      dev.vendor_part_id == QHCA_PCI_DEVICE_ID, "vendor and part id");

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
	dealloc_pd.pd_handle = pd.pd_handle;
	check(!uverbs_cmd(IB_USER_VERBS_CMD_DEALLOC_PD, &dealloc_pd,
			  sizeof(dealloc_pd), 0), "DEALLOC_PD");
	errno = 0;
	check(uverbs_cmd(IB_USER_VERBS_CMD_CREATE_CQ, &create_cq,
			 sizeof(create_cq), sizeof(cq)) && errno == EOPNOTSUPP,
	      "CREATE_CQ is not supported yet (EOPNOTSUPP)");

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
