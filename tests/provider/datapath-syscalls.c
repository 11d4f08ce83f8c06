// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Provider data-path tests (unit-datapath.c, datapath.h): no system call
 * on the data path, under seccomp strict mode.
 */

#include <config.h>

#include <errno.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "datapath.h"

/* ------------------------------------------------------------------------
 * No system call on the data path: run it under seccomp strict mode, where
 * any system call but read/write/exit/sigreturn kills the process.
 */
struct hot {
	struct qhca_context *ctx;
	struct qhca_cq *cq;
	struct qhca_srq *srq;
	struct qhca_qp *rc;
	struct qhca_qp *ud;
	uint32_t dev_pi;
};

static int hot_path(struct hot *h)
{
	struct ibv_sge sge = { .addr = 0x1000, .length = 8, .lkey = 1 };
	struct ibv_send_wr swr = {
		.opcode = IBV_WR_SEND, .sg_list = &sge, .num_sge = 1,
		.send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 };
	struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(&h->rc->vqp.qp);
	struct ibv_poll_cq_attr pattr = {};
	struct ibv_send_wr *sbad;
	struct ibv_recv_wr *rbad;
	struct ibv_wc wc[4];
	uint32_t idx;
	int n;

	idx = h->rc->sq.pi;
	if (qhca_post_send(&h->rc->vqp.qp, &swr, &sbad))
		return 1;
	dev_complete(h->cq, h->dev_pi++, h->rc->qpn, CO_SEND, idx, 1);
	if (qhca_poll_cq(&h->cq->vcq.cq, 4, wc) != 1)
		return 2;

	idx = h->rc->rq.pi;
	if (qhca_post_recv(&h->rc->vqp.qp, &rwr, &rbad))
		return 3;
	dev_complete(h->cq, h->dev_pi++, h->rc->qpn, CO_RECV, idx, 2);
	if (qhca_req_notify_cq(&h->cq->vcq.cq, 0))
		return 4;

	idx = h->srq->wq.pi;
	if (qhca_post_srq_recv(&h->srq->ibv_srq, &rwr, &rbad))
		return 5;
	dev_complete(h->cq, h->dev_pi++, h->ud->qpn, CO_RECV, idx, 3);

	idx = h->rc->sq.pi;
	ibv_wr_start(qpx);
	qpx->wr_id = 4;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(qpx, 1, 0x2000);
	ibv_wr_set_sge(qpx, 1, 0x1000, 8);
	if (ibv_wr_complete(qpx))
		return 6;
	dev_complete(h->cq, h->dev_pi++, h->rc->qpn, CO_RDMA_WRITE, idx, 4);

	if (ibv_start_poll(&h->cq->vcq.cq_ex, &pattr))
		return 7;
	n = 1;
	while (n < 16 && ibv_next_poll(&h->cq->vcq.cq_ex) == 0)
		n++;
	ibv_end_poll(&h->cq->vcq.cq_ex);
	return n == 3 ? 0 : 8;
}

void test_no_syscalls(void)
{
	int pipefd[2], status = 0;
	char result = 0;
	pid_t pid;

	if (pipe(pipefd)) {
		ok(false, "pipe: %s", strerror(errno));
		return;
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		struct hot h = {};
		struct qp_spec s = {
			.type = IBV_QPT_RC,
			.cap = { .max_send_wr = 16, .max_send_sge = 1,
				 .max_recv_wr = 16, .max_recv_sge = 1 },
			.qpn = 5,
			.send_ops = qhca_supported_send_ops(IBV_QPT_RC),
		};
		int r;

		close(pipefd[0]);
		h.ctx = new_ctx();
		h.cq = new_cq(h.ctx, 64, 2);
		h.srq = new_srq(h.ctx, 16, 1, 3);
		s.scq = h.cq;
		s.rcq = h.cq;
		h.rc = new_qp(h.ctx, &s);
		s.type = IBV_QPT_UD;
		s.srq = h.srq;
		s.qpn = 6;
		s.send_ops = 0;
		h.ud = new_qp(h.ctx, &s);

		/* once outside, for lazy binding and first-touch faults */
		r = hot_path(&h);
		if (r) {
			result = (char)('A' + r);
		} else if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT)) {
			result = 'S';
		} else {
			r = hot_path(&h);
			result = r ? (char)('A' + r) : 'K';
		}
		if (write(pipefd[1], &result, 1) != 1)
			syscall(SYS_exit, 1);
		syscall(SYS_exit, 0);
	}
	close(pipefd[1]);
	if (pid < 0 || read(pipefd[0], &result, 1) != 1)
		result = 0;
	close(pipefd[0]);
	if (pid > 0)
		waitpid(pid, &status, 0);
	if (result == 'S' && WIFEXITED(status) && !WEXITSTATUS(status)) {
		g_test_skip("seccomp strict mode unavailable: no system call on the data path not checked");
		return;
	}
	if (WIFSIGNALED(status))
		diag("child killed by signal %d (a system call?)",
		     WTERMSIG(status));
	else if (result != 'K')
		diag("child result %c", result ? result : '?');
	ok(pid > 0 && WIFEXITED(status) && result == 'K',
	   "post_send, post_recv, post_srq_recv, wr API, poll_cq, cq_ex, req_notify_cq make no system call");
}
