// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * qhca_ktest: a kernel verbs self-test between two hosts, through the
 * RDMA CM.  It exercises the kernel paths of an RDMA driver that user
 * space tools do not reach: kernel RC, UD and UC QPs, an SRQ, fast
 * registration, RDMA READ/WRITE, atomics, inline data, send with
 * invalidate, local invalidate, kernel address handles (from a path and
 * from a work completion) and CQ arming with completion events.
 *
 *   insmod qhca_ktest.ko role=server [port=7470]
 *   insmod qhca_ktest.ko role=client peer=198.18.0.1 [port=7470]
 *   insmod qhca_ktest.ko role=drain local=198.18.0.1 [dead=1]
 *
 * The test runs in module init; insmod fails (-EIO) if a check failed and
 * the module stays loaded only on success (rmmod it afterwards).  Each
 * check is logged as "qhca_ktest: ok - NAME" or "qhca_ktest: not ok -
 * NAME".  The server must be listening before the client starts.
 *
 * RC (port): the client sends with immediate data into the server's SRQ;
 * the server registers a 2-page buffer by a REG_MR work request and sends
 * its address and rkey (inline); the client writes a pattern there, reads
 * it back, does fetch-and-add and compare-and-swap on its first word, and
 * sends with invalidate of that rkey; the server checks the buffer and
 * the invalidation, registers the MR again with a new key and invalidates
 * it with LOCAL_INV.  UD (port + 1): the client resolves the server by
 * SIDR and sends to it through an address handle; the server answers
 * through an address handle made from the work completion's GRH.
 * UC (port + 2): the server fast-registers a 2-page buffer on its UC QP
 * and sends its address and rkey; the client sends to it with and without
 * immediate data, writes one pattern into the first page by RDMA WRITE and
 * another into the second by RDMA WRITE with immediate; the server checks
 * the messages, the immediates and the bytes of both pages.
 *
 * drain (one host): an RC QP in INIT with work requests posted is drained
 * with ib_drain_qp(): every request must complete with WR_FLUSH_ERR and
 * the drain must return.  With dead=1 the test first waits (60 s) for the
 * device to report IB_EVENT_DEVICE_FATAL, so that the driver, not the
 * device, has to flush.
 */

#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/inet.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <net/ipv6.h>
#include <net/net_namespace.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>
#include <rdma/rdma_cm_ib.h>

MODULE_DESCRIPTION("kernel verbs self-test for qhca (two hosts, RDMA CM)");
MODULE_LICENSE("Dual BSD/GPL");

static char *role = "server";
module_param(role, charp, 0444);
MODULE_PARM_DESC(role, "server or client");
static char *peer = "";
module_param(peer, charp, 0444);
MODULE_PARM_DESC(peer, "the server's IPv4 address (client)");
static char *local = "";
module_param(local, charp, 0444);
MODULE_PARM_DESC(local, "this host's IPv4 address on the device (drain)");
static bool dead;
module_param(dead, bool, 0444);
MODULE_PARM_DESC(dead, "drain: wait for the device to die before draining");
static int port = 7470;
module_param(port, int, 0444);
MODULE_PARM_DESC(port, "RDMA CM port for RC; port + 1 for UD, port + 2 for UC");

#define KT_TIMEOUT		(10 * HZ)
#define KT_RECVS		4
#define KT_MSG_SIZE		512
#define KT_RBUF_SIZE		8192	/* the fast-registered region */
#define KT_IMM			0x12345678
#define KT_UC_IMM		0x2468ace0	/* UC RDMA WRITE with immediate */
#define KT_ADD			5
#define KT_SWAP			0xdeadbeefcafef00dULL
#define KT_EVENTS		8

struct kt_msg {
	__le64 addr;
	__le32 rkey;
	__le32 len;
	char text[32];
};

struct kt_event {
	enum rdma_cm_event_type type;
	int status;
	struct rdma_cm_id *id;
	u32 qp_num;
	u32 qkey;
	bool has_ah;
	struct rdma_ah_attr ah_attr;
};

struct kt_cq {
	struct ib_cq *cq;
	struct completion event;
};

struct kt {
	bool server;
	bool ud;
	bool uc;
	int failures;

	spinlock_t ev_lock;		/* the event ring */
	wait_queue_head_t ev_wait;
	struct kt_event ev[KT_EVENTS];
	unsigned int ev_head, ev_tail;

	struct rdma_cm_id *listen_id;
	struct rdma_cm_id *id;		/* the connection's id */
	struct ib_device *dev;
	struct ib_pd *pd;
	struct kt_cq scq;		/* send completions */
	struct kt_cq rcq;		/* receive completions */
	struct ib_srq *srq;
	struct ib_qp *qp;

	/* receive buffers and send staging: one mapping */
	u8 *msgs;
	u64 msgs_dma;
	/* the RDMA region */
	u8 *rbuf;
	u64 rbuf_dma;
	struct scatterlist rsg;
	bool rsg_mapped;
	struct ib_mr *mr;

	struct completion srq_limit;	/* IB_EVENT_SRQ_LIMIT_REACHED */

	/* UD */
	struct ib_ah *ah;
	u32 remote_qpn;
	u32 remote_qkey;
};

#define KT_SEND_OFF		(KT_RECVS * KT_MSG_SIZE)
#define KT_MSGS_SIZE		((KT_RECVS + 2) * KT_MSG_SIZE)

static const char *kt_name(const struct kt *kt)
{
	return kt->ud ? "UD" : kt->uc ? "UC" : "RC";
}

static enum ib_qp_type kt_qp_type(const struct kt *kt)
{
	return kt->ud ? IB_QPT_UD : kt->uc ? IB_QPT_UC : IB_QPT_RC;
}

static void kt_check(struct kt *kt, bool cond, const char *name)
{
	if (cond) {
		pr_info("qhca_ktest: ok - %s %s\n", kt_name(kt), name);
	} else {
		pr_err("qhca_ktest: not ok - %s %s\n", kt_name(kt), name);
		kt->failures++;
	}
}

static int kt_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *event)
{
	struct kt *kt = id->context;
	struct kt_event *ev;
	unsigned long flags;

	spin_lock_irqsave(&kt->ev_lock, flags);
	if (kt->ev_head - kt->ev_tail >= KT_EVENTS) {
		spin_unlock_irqrestore(&kt->ev_lock, flags);
		pr_err("qhca_ktest: CM event %d dropped\n", event->event);
		return 0;
	}
	ev = &kt->ev[kt->ev_head % KT_EVENTS];
	memset(ev, 0, sizeof(*ev));
	ev->type = event->event;
	ev->status = event->status;
	ev->id = id;
	if (event->event == RDMA_CM_EVENT_ESTABLISHED && !kt->ud)
		ev->qp_num = event->param.conn.qp_num;
	if (event->event == RDMA_CM_EVENT_ESTABLISHED && kt->ud &&
	    !kt->server) {
		ev->qp_num = event->param.ud.qp_num;
		ev->qkey = event->param.ud.qkey;
		rdma_copy_ah_attr(&ev->ah_attr, &event->param.ud.ah_attr);
		ev->has_ah = true;
	}
	kt->ev_head++;
	spin_unlock_irqrestore(&kt->ev_lock, flags);
	wake_up(&kt->ev_wait);
	return 0;
}

/* The next CM event, which must be @type; its id in *@id */
static int kt_wait_cm(struct kt *kt, enum rdma_cm_event_type type,
		      struct kt_event *out)
{
	struct kt_event ev;

	if (!wait_event_timeout(kt->ev_wait, kt->ev_head != kt->ev_tail,
				KT_TIMEOUT)) {
		pr_err("qhca_ktest: no CM event (waiting for %s)\n",
		       rdma_event_msg(type));
		return -ETIMEDOUT;
	}
	spin_lock_irq(&kt->ev_lock);
	ev = kt->ev[kt->ev_tail % KT_EVENTS];
	kt->ev_tail++;
	spin_unlock_irq(&kt->ev_lock);

	if (ev.type != type || ev.status) {
		pr_err("qhca_ktest: CM event %s (status %d), expected %s\n",
		       rdma_event_msg(ev.type), ev.status,
		       rdma_event_msg(type));
		if (ev.has_ah)
			rdma_destroy_ah_attr(&ev.ah_attr);
		return -EPROTO;
	}
	if (out)
		*out = ev;
	else if (ev.has_ah)
		rdma_destroy_ah_attr(&ev.ah_attr);
	return 0;
}

static void kt_comp(struct ib_cq *cq, void *ctx)
{
	struct kt_cq *kcq = ctx;

	complete(&kcq->event);
}

/* One work completion, waiting for completion events when there is none */
static int kt_poll(struct kt_cq *kcq, struct ib_wc *wc)
{
	int n;

	for (;;) {
		n = ib_poll_cq(kcq->cq, 1, wc);
		if (n < 0)
			return n;
		if (n)
			return 0;
		reinit_completion(&kcq->event);
		if (ib_req_notify_cq(kcq->cq, IB_CQ_NEXT_COMP |
				     IB_CQ_REPORT_MISSED_EVENTS) > 0)
			continue;
		if (!wait_for_completion_timeout(&kcq->event, KT_TIMEOUT)) {
			pr_err("qhca_ktest: no completion event\n");
			return -ETIMEDOUT;
		}
	}
}

/*
 * The next completion, which must be a successful @opcode for @wr_id
 * (receive completions on the receive CQ, the others on the send CQ).
 */
static int kt_expect(struct kt *kt, u64 wr_id, enum ib_wc_opcode opcode,
		     struct ib_wc *wc, const char *what)
{
	int ret = kt_poll(opcode & IB_WC_RECV ? &kt->rcq : &kt->scq, wc);

	if (ret) {
		kt_check(kt, false, what);
		return ret;
	}
	if (wc->status != IB_WC_SUCCESS || wc->wr_id != wr_id ||
	    wc->opcode != opcode) {
		pr_err("qhca_ktest: %s: status %d (%s) wr_id %llu opcode %d, expected wr_id %llu opcode %d\n",
		       what, wc->status, ib_wc_status_msg(wc->status),
		       wc->wr_id, wc->opcode, wr_id, opcode);
		kt_check(kt, false, what);
		return -EIO;
	}
	return 0;
}

static u8 *kt_recv_buf(struct kt *kt, int i)
{
	return kt->msgs + i * KT_MSG_SIZE;
}

static int kt_post_recv(struct kt *kt, int i)
{
	struct ib_sge sge = {
		.addr = kt->msgs_dma + i * KT_MSG_SIZE,
		.length = KT_MSG_SIZE,
		.lkey = kt->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = {
		.wr_id = i,
		.sg_list = &sge,
		.num_sge = 1,
	};

	ib_dma_sync_single_for_device(kt->dev, sge.addr, KT_MSG_SIZE,
				      DMA_BIDIRECTIONAL);
	if (kt->srq)
		return ib_post_srq_recv(kt->srq, &wr, NULL);
	return ib_post_recv(kt->qp, &wr, NULL);
}

/* The received message of completion @wc (after its GRH for UD) */
static void *kt_received(struct kt *kt, const struct ib_wc *wc)
{
	ib_dma_sync_single_for_cpu(kt->dev, kt->msgs_dma +
				   wc->wr_id * KT_MSG_SIZE, KT_MSG_SIZE,
				   DMA_BIDIRECTIONAL);
	return kt_recv_buf(kt, wc->wr_id) + (kt->ud ? sizeof(struct ib_grh) : 0);
}

/* Send @len bytes of @data (copied to the staging buffer) */
static int kt_send(struct kt *kt, enum ib_wr_opcode opcode, u64 wr_id,
		   const void *data, u32 len, int flags, u32 imm_or_inv)
{
	u8 *staging = kt->msgs + KT_SEND_OFF;
	struct ib_sge sge = {
		.addr = kt->msgs_dma + KT_SEND_OFF,
		.length = len,
		.lkey = kt->pd->local_dma_lkey,
	};
	struct ib_ud_wr wr = {
		.wr = {
			.wr_id = wr_id,
			.opcode = opcode,
			.send_flags = IB_SEND_SIGNALED | flags,
			.sg_list = &sge,
			.num_sge = 1,
		},
	};

	if (flags & IB_SEND_INLINE) {
		/* Inline data: the SGE holds a kernel virtual address */
		sge.addr = (uintptr_t)data;
	} else {
		memcpy(staging, data, len);
		ib_dma_sync_single_for_device(kt->dev, sge.addr, len,
					      DMA_BIDIRECTIONAL);
	}
	if (opcode == IB_WR_SEND_WITH_IMM)
		wr.wr.ex.imm_data = cpu_to_be32(imm_or_inv);
	else if (opcode == IB_WR_SEND_WITH_INV)
		wr.wr.ex.invalidate_rkey = imm_or_inv;
	if (kt->ud) {
		wr.ah = kt->ah;
		wr.remote_qpn = kt->remote_qpn;
		wr.remote_qkey = kt->remote_qkey;
	}
	return ib_post_send(kt->qp, &wr.wr, NULL);
}

static int kt_post_one(struct kt *kt, const struct ib_send_wr *wr,
		       const char *what)
{
	int ret = ib_post_send(kt->qp, wr, NULL);

	if (ret) {
		pr_err("qhca_ktest: posting %s: %d\n", what, ret);
		kt_check(kt, false, what);
	}
	return ret;
}

/* ---- set-up and tear-down ---- */

static void kt_srq_event(struct ib_event *event, void *ctx)
{
	struct kt *kt = ctx;

	if (event->event == IB_EVENT_SRQ_LIMIT_REACHED)
		complete(&kt->srq_limit);
	else
		pr_err("qhca_ktest: SRQ event %s\n",
		       ib_event_msg(event->event));
}

static int kt_cq_create(struct kt *kt, struct kt_cq *kcq)
{
	struct ib_cq_init_attr cq_attr = { .cqe = 64 };

	init_completion(&kcq->event);
	kcq->cq = ib_create_cq(kt->dev, kt_comp, NULL, kcq, &cq_attr);
	if (IS_ERR(kcq->cq)) {
		int ret = PTR_ERR(kcq->cq);

		kcq->cq = NULL;
		return ret;
	}
	return 0;
}

static int kt_alloc(struct kt *kt, struct rdma_cm_id *id)
{
	struct ib_qp_init_attr qp_attr = {};
	int ret, i;

	kt->id = id;
	kt->dev = id->device;
	kt->pd = ib_alloc_pd(kt->dev, 0);
	if (IS_ERR(kt->pd)) {
		ret = PTR_ERR(kt->pd);
		kt->pd = NULL;
		return ret;
	}
	ret = kt_cq_create(kt, &kt->scq);
	if (!ret)
		ret = kt_cq_create(kt, &kt->rcq);
	if (ret)
		return ret;

	kt->msgs = kzalloc(KT_MSGS_SIZE, GFP_KERNEL);
	kt->rbuf = kzalloc(KT_RBUF_SIZE, GFP_KERNEL);
	if (!kt->msgs || !kt->rbuf)
		return -ENOMEM;
	kt->msgs_dma = ib_dma_map_single(kt->dev, kt->msgs, KT_MSGS_SIZE,
					 DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(kt->dev, kt->msgs_dma)) {
		kt->msgs_dma = 0;
		return -ENOMEM;
	}

	/* The server receives RC messages through an SRQ */
	if (kt->server && kt_qp_type(kt) == IB_QPT_RC) {
		struct ib_srq_init_attr srq_attr = {
			.event_handler = kt_srq_event,
			.srq_context = kt,
			.attr = { .max_wr = KT_RECVS, .max_sge = 1 },
			.srq_type = IB_SRQT_BASIC,
		};

		kt->srq = ib_create_srq(kt->pd, &srq_attr);
		if (IS_ERR(kt->srq)) {
			ret = PTR_ERR(kt->srq);
			kt->srq = NULL;
			return ret;
		}
	}

	qp_attr.send_cq = kt->scq.cq;
	qp_attr.recv_cq = kt->rcq.cq;
	qp_attr.srq = kt->srq;
	qp_attr.qp_type = kt_qp_type(kt);
	qp_attr.sq_sig_type = IB_SIGNAL_REQ_WR;
	qp_attr.cap.max_send_wr = 16;
	qp_attr.cap.max_recv_wr = kt->srq ? 0 : KT_RECVS;
	qp_attr.cap.max_send_sge = 2;
	qp_attr.cap.max_recv_sge = 1;
	qp_attr.cap.max_inline_data = sizeof(struct kt_msg);
	ret = rdma_create_qp(id, kt->pd, &qp_attr);
	if (ret)
		return ret;
	kt->qp = id->qp;
	kt_check(kt, qp_attr.cap.max_inline_data >= sizeof(struct kt_msg) &&
		 qp_attr.cap.max_send_wr >= 16,
		 "QP caps written back");

	for (i = 0; i < KT_RECVS; i++) {
		ret = kt_post_recv(kt, i);
		if (ret)
			return ret;
	}
	return 0;
}

static void kt_free(struct kt *kt)
{
	if (kt->ah)
		rdma_destroy_ah(kt->ah, RDMA_DESTROY_AH_SLEEPABLE);
	kt->ah = NULL;
	if (kt->qp)
		rdma_destroy_qp(kt->id);
	kt->qp = NULL;
	if (kt->mr)
		ib_dereg_mr(kt->mr);
	kt->mr = NULL;
	if (kt->srq)
		ib_destroy_srq(kt->srq);
	kt->srq = NULL;
	if (kt->rsg_mapped)
		ib_dma_unmap_sg(kt->dev, &kt->rsg, 1, DMA_BIDIRECTIONAL);
	kt->rsg_mapped = false;
	if (kt->rbuf_dma)
		ib_dma_unmap_single(kt->dev, kt->rbuf_dma, KT_RBUF_SIZE,
				    DMA_BIDIRECTIONAL);
	kt->rbuf_dma = 0;
	if (kt->msgs_dma)
		ib_dma_unmap_single(kt->dev, kt->msgs_dma, KT_MSGS_SIZE,
				    DMA_BIDIRECTIONAL);
	kt->msgs_dma = 0;
	kfree(kt->msgs);
	kt->msgs = NULL;
	kfree(kt->rbuf);
	kt->rbuf = NULL;
	if (kt->scq.cq)
		ib_destroy_cq(kt->scq.cq);
	kt->scq.cq = NULL;
	if (kt->rcq.cq)
		ib_destroy_cq(kt->rcq.cq);
	kt->rcq.cq = NULL;
	if (kt->pd)
		ib_dealloc_pd(kt->pd);
	kt->pd = NULL;
	if (kt->id && kt->id != kt->listen_id)
		rdma_destroy_id(kt->id);
	kt->id = NULL;
	if (kt->listen_id)
		rdma_destroy_id(kt->listen_id);
	kt->listen_id = NULL;
}

static int kt_addr(struct sockaddr_in *sin, const char *ip, int p)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(p);
	if (ip && !in4_pton(ip, -1, (u8 *)&sin->sin_addr.s_addr, -1, NULL))
		return -EINVAL;
	return 0;
}

/* Arm the SRQ limit at the number of posted receives */
static void kt_srq_arm(struct kt *kt)
{
	struct ib_srq_attr attr = { .srq_limit = KT_RECVS };
	int ret;

	init_completion(&kt->srq_limit);
	ret = ib_modify_srq(kt->srq, &attr, IB_SRQ_LIMIT);
	kt_check(kt, !ret, "SRQ limit armed");
	memset(&attr, 0, sizeof(attr));
	ret = ib_query_srq(kt->srq, &attr);
	/* armed before the peer can send: nothing taken yet */
	kt_check(kt, !ret && attr.max_wr >= KT_RECVS && attr.max_sge >= 1 &&
		 attr.srq_limit == KT_RECVS, "query SRQ");
}

/* Server: listen, take the connection request, create the resources */
static int kt_server_accept(struct kt *kt, int p)
{
	struct rdma_conn_param param = {};
	struct sockaddr_in sin;
	struct kt_event ev;
	int ret;

	kt->listen_id = rdma_create_id(&init_net, kt_cm_handler, kt,
				       kt->ud ? RDMA_PS_UDP : RDMA_PS_TCP,
				       kt_qp_type(kt));
	if (IS_ERR(kt->listen_id)) {
		ret = PTR_ERR(kt->listen_id);
		kt->listen_id = NULL;
		return ret;
	}
	kt_addr(&sin, NULL, p);
	ret = rdma_bind_addr(kt->listen_id, (struct sockaddr *)&sin);
	if (!ret)
		ret = rdma_listen(kt->listen_id, 1);
	if (ret)
		return ret;
	pr_info("qhca_ktest: %s server listening on port %d\n", kt_name(kt),
		p);

	ret = kt_wait_cm(kt, RDMA_CM_EVENT_CONNECT_REQUEST, &ev);
	if (ret)
		return ret;
	kt->id = ev.id;
	pr_info("qhca_ktest: connection request on %s\n",
		dev_name(&kt->id->device->dev));
	ret = kt_alloc(kt, kt->id);
	if (ret)
		return ret;
	/*
	 * The SRQ limit is armed before the connection is accepted: the
	 * event comes when a receive is taken with the limit armed, and the
	 * client may send as soon as it is connected
	 */
	if (kt->srq)
		kt_srq_arm(kt);

	/* UC has no RDMA READ or atomics to take or give resources for */
	param.responder_resources = kt->uc ? 0 : 4;
	param.initiator_depth = kt->uc ? 0 : 4;
	rdma_lock_handler(kt->id);
	ret = rdma_accept(kt->id, &param);
	rdma_unlock_handler(kt->id);
	if (ret)
		return ret;
	if (!kt->ud)
		ret = kt_wait_cm(kt, RDMA_CM_EVENT_ESTABLISHED, NULL);
	return ret;
}

/* Client: resolve the server, create the resources, connect */
static int kt_client_connect(struct kt *kt, int p)
{
	struct rdma_conn_param param = {};
	struct sockaddr_in sin;
	struct kt_event ev;
	int ret;

	ret = kt_addr(&sin, peer, p);
	if (ret) {
		pr_err("qhca_ktest: bad peer address '%s'\n", peer);
		return ret;
	}
	kt->id = rdma_create_id(&init_net, kt_cm_handler, kt,
				kt->ud ? RDMA_PS_UDP : RDMA_PS_TCP,
				kt_qp_type(kt));
	if (IS_ERR(kt->id)) {
		ret = PTR_ERR(kt->id);
		kt->id = NULL;
		return ret;
	}
	ret = rdma_resolve_addr(kt->id, NULL, (struct sockaddr *)&sin, 5000);
	if (!ret)
		ret = kt_wait_cm(kt, RDMA_CM_EVENT_ADDR_RESOLVED, NULL);
	if (!ret)
		ret = rdma_resolve_route(kt->id, 5000);
	if (!ret)
		ret = kt_wait_cm(kt, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL);
	if (ret)
		return ret;
	ret = kt_alloc(kt, kt->id);
	if (ret)
		return ret;

	param.responder_resources = kt->uc ? 0 : 4;
	param.initiator_depth = kt->uc ? 0 : 4;
	param.retry_count = 7;
	param.rnr_retry_count = 7;
	ret = rdma_connect(kt->id, &param);
	if (ret)
		return ret;
	ret = kt_wait_cm(kt, RDMA_CM_EVENT_ESTABLISHED, &ev);
	if (ret)
		return ret;
	if (!kt->ud) {
		kt->remote_qpn = ev.qp_num;
		return 0;
	}

	/* SIDR: the server's QP, Q_Key and a path to it */
	kt->remote_qpn = ev.qp_num;
	kt->remote_qkey = ev.qkey;
	kt->ah = rdma_create_ah(kt->pd, &ev.ah_attr, 0);
	if (!IS_ERR(kt->ah)) {
		/*
		 * A flow label wider than the GRH's 20 bits: UCX passes
		 * 0xffffffff to ibv_create_ah. The bits that do not exist are
		 * dropped (as modify_qp does, and other devices), not refused.
		 */
		struct rdma_ah_attr wide = ev.ah_attr;
		struct ib_ah *ah;

		wide.grh.flow_label = 0xffffffff;
		ah = rdma_create_ah(kt->pd, &wide, RDMA_CREATE_AH_SLEEPABLE);
		kt_check(kt, !IS_ERR(ah),
			 "address handle with flow label 0xffffffff (upper bits dropped)");
		if (IS_ERR(ah))
			pr_err("qhca_ktest: rdma_create_ah, flow label 0xffffffff: %ld\n",
			       PTR_ERR(ah));
		else
			rdma_destroy_ah(ah, RDMA_DESTROY_AH_SLEEPABLE);
	}
	rdma_destroy_ah_attr(&ev.ah_attr);
	if (IS_ERR(kt->ah)) {
		ret = PTR_ERR(kt->ah);
		kt->ah = NULL;
		pr_err("qhca_ktest: rdma_create_ah (atomic): %d\n", ret);
		return ret;
	}
	kt_check(kt, true, "address handle from the SIDR path (atomic)");
	return 0;
}

/* ---- RC ---- */

static int kt_fast_reg(struct kt *kt, u64 wr_id, const char *what)
{
	struct ib_reg_wr reg = {
		.wr = {
			.wr_id = wr_id,
			.opcode = IB_WR_REG_MR,
			.send_flags = IB_SEND_SIGNALED,
		},
		.mr = kt->mr,
		.key = kt->mr->rkey,
		.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_READ |
			  IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC,
	};
	struct ib_wc wc;
	int n;

	n = ib_map_mr_sg(kt->mr, &kt->rsg, 1, NULL, PAGE_SIZE);
	if (n != 1) {
		pr_err("qhca_ktest: ib_map_mr_sg: %d\n", n);
		kt_check(kt, false, what);
		return -EIO;
	}
	if (kt_post_one(kt, &reg.wr, what))
		return -EIO;
	if (kt_expect(kt, wr_id, IB_WC_REG_MR, &wc, what))
		return -EIO;
	kt_check(kt, true, what);
	return 0;
}

/* The region the client will use, registered by a work request */
static int kt_region(struct kt *kt, u64 wr_id)
{
	int ret;

	sg_init_one(&kt->rsg, kt->rbuf, KT_RBUF_SIZE);
	if (ib_dma_map_sg(kt->dev, &kt->rsg, 1, DMA_BIDIRECTIONAL) != 1)
		return -ENOMEM;
	kt->rsg_mapped = true;
	kt->mr = ib_alloc_mr(kt->pd, IB_MR_TYPE_MEM_REG,
			     KT_RBUF_SIZE / PAGE_SIZE);
	if (IS_ERR(kt->mr)) {
		ret = PTR_ERR(kt->mr);
		kt->mr = NULL;
		kt_check(kt, false, "ib_alloc_mr");
		return ret;
	}
	if (kt_fast_reg(kt, wr_id, "fast registration (REG_MR)"))
		return -EIO;
	return 0;
}

/* One receive consumed: fewer than the limit are left */
static void kt_srq_limit_check(struct kt *kt)
{
	struct ib_srq_attr attr = {};

	kt_check(kt, wait_for_completion_timeout(&kt->srq_limit, KT_TIMEOUT),
		 "SRQ limit event");
	kt_check(kt, !ib_query_srq(kt->srq, &attr) && !attr.srq_limit,
		 "SRQ limit disarmed by the event");
}

static int kt_rc_server(struct kt *kt)
{
	struct ib_send_wr inv = {
		.wr_id = 31,
		.opcode = IB_WR_LOCAL_INV,
		.send_flags = IB_SEND_SIGNALED,
	};
	struct kt_msg msg = {};
	struct ib_wc wc;
	__le64 first;
	u64 i;
	u32 rkey;
	u8 *p;
	int ret;

	ret = kt_server_accept(kt, port);
	kt_check(kt, !ret, "connection accepted (SRQ)");
	if (ret)
		return ret;

	ret = kt_region(kt, 30);
	if (ret)
		return ret;

	/* 1: the client's greeting, with immediate data, via the SRQ */
	if (kt_expect(kt, 0, IB_WC_RECV, &wc, "receive through the SRQ"))
		return -EIO;
	p = kt_received(kt, &wc);
	kt_check(kt, (wc.wc_flags & IB_WC_WITH_IMM) &&
		 be32_to_cpu(wc.ex.imm_data) == KT_IMM &&
		 wc.byte_len == 6 && !memcmp(p, "hello", 6),
		 "SEND_WITH_IMM data and immediate");
	kt_srq_limit_check(kt);
	kt_post_recv(kt, wc.wr_id);

	/* 2: where to write, sent inline */
	msg.addr = cpu_to_le64(kt->mr->iova);
	msg.rkey = cpu_to_le32(kt->mr->rkey);
	msg.len = cpu_to_le32(KT_RBUF_SIZE);
	strscpy(msg.text, "region", sizeof(msg.text));
	rkey = kt->mr->rkey;
	ret = kt_send(kt, IB_WR_SEND, 10, &msg, sizeof(msg), IB_SEND_INLINE,
		      0);
	if (ret || kt_expect(kt, 10, IB_WC_SEND, &wc, "inline send")) {
		kt_check(kt, false, "inline send");
		return -EIO;
	}
	kt_check(kt, true, "inline send");

	/* 3: the client is done (RDMA and atomics) and invalidates the MR */
	if (kt_expect(kt, 1, IB_WC_RECV, &wc, "SEND_WITH_INV received"))
		return -EIO;
	kt_check(kt, (wc.wc_flags & IB_WC_WITH_INVALIDATE) &&
		 wc.ex.invalidate_rkey == rkey,
		 "SEND_WITH_INV invalidated our rkey");
	kt_post_recv(kt, wc.wr_id);

	ib_dma_sync_single_for_cpu(kt->dev, sg_dma_address(&kt->rsg),
				   KT_RBUF_SIZE, DMA_BIDIRECTIONAL);
	memcpy(&first, kt->rbuf, sizeof(first));
	for (i = sizeof(first); i < KT_RBUF_SIZE; i++)
		if (kt->rbuf[i] != (u8)(i * 7 + 3))
			break;
	kt_check(kt, i == KT_RBUF_SIZE, "RDMA WRITE data in our memory");
	kt_check(kt, le64_to_cpu(first) == KT_SWAP,
		 "atomics left the swapped value");

	/* 4: register again under a new key, then invalidate locally */
	ib_update_fast_reg_key(kt->mr, (u8)ib_inc_rkey(kt->mr->rkey));
	kt_check(kt, kt->mr->rkey != rkey, "new fast-registration key");
	if (kt_fast_reg(kt, 32, "fast registration with a new key"))
		return -EIO;
	inv.ex.invalidate_rkey = kt->mr->rkey;
	if (kt_post_one(kt, &inv, "LOCAL_INV") ||
	    kt_expect(kt, 31, IB_WC_LOCAL_INV, &wc, "LOCAL_INV"))
		return -EIO;
	kt_check(kt, true, "LOCAL_INV");

	ret = kt_send(kt, IB_WR_SEND, 11, "bye", 4, 0, 0);
	if (ret || kt_expect(kt, 11, IB_WC_SEND, &wc, "send bye"))
		return -EIO;
	ret = kt_wait_cm(kt, RDMA_CM_EVENT_DISCONNECTED, NULL);
	kt_check(kt, !ret, "disconnected by the client");
	return 0;
}

/* The connected QP as the device reports it */
static void kt_query_qp(struct kt *kt)
{
	struct ib_qp_init_attr init = {};
	struct ib_qp_attr attr = {};
	const struct ib_global_route *grh;
	struct sockaddr_in sin;
	__be32 ip;
	int ret;

	ret = ib_query_qp(kt->qp, &attr, IB_QP_STATE | IB_QP_AV |
			  IB_QP_PATH_MTU | IB_QP_DEST_QPN | IB_QP_CAP, &init);
	kt_check(kt, !ret && attr.qp_state == IB_QPS_RTS, "query QP: RTS");
	if (ret)
		return;
	kt_check(kt, attr.dest_qp_num == kt->remote_qpn,
		 "query QP: destination QPN");
	kt_check(kt, attr.path_mtu >= IB_MTU_256 &&
		 attr.path_mtu <= IB_MTU_4096, "query QP: path MTU");
	kt_addr(&sin, peer, 0);
	grh = rdma_ah_read_grh(&attr.ah_attr);
	memcpy(&ip, &grh->dgid.raw[12], sizeof(ip));
	kt_check(kt, (rdma_ah_get_ah_flags(&attr.ah_attr) & IB_AH_GRH) &&
		 ipv6_addr_v4mapped((struct in6_addr *)grh->dgid.raw) &&
		 ip == sin.sin_addr.s_addr, "query QP: destination GID");
	kt_check(kt, init.cap.max_send_wr >= 16 &&
		 init.qp_type == IB_QPT_RC, "query QP: caps and type");
}

static int kt_rc_client(struct kt *kt)
{
	struct ib_sge sge;
	struct ib_rdma_wr rw = {};
	struct ib_atomic_wr aw = {};
	struct kt_msg msg;
	struct ib_wc wc;
	__le64 orig, got;
	u64 raddr, i;
	u32 rkey;
	u8 *p;
	int ret;

	ret = kt_client_connect(kt, port);
	kt_check(kt, !ret, "connection established");
	if (ret)
		return ret;
	kt_query_qp(kt);

	kt->rbuf_dma = ib_dma_map_single(kt->dev, kt->rbuf, KT_RBUF_SIZE,
					 DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(kt->dev, kt->rbuf_dma)) {
		kt->rbuf_dma = 0;
		return -ENOMEM;
	}

	/* 1: greeting */
	ret = kt_send(kt, IB_WR_SEND_WITH_IMM, 20, "hello", 6, 0, KT_IMM);
	if (ret || kt_expect(kt, 20, IB_WC_SEND, &wc, "SEND_WITH_IMM"))
		return -EIO;
	kt_check(kt, true, "SEND_WITH_IMM");

	/* 2: the server's region */
	if (kt_expect(kt, 0, IB_WC_RECV, &wc, "receive the region"))
		return -EIO;
	p = kt_received(kt, &wc);
	memcpy(&msg, p, sizeof(msg));
	kt_check(kt, wc.byte_len == sizeof(msg) &&
		 !strcmp(msg.text, "region"), "inline data received");
	kt_post_recv(kt, wc.wr_id);
	raddr = le64_to_cpu(msg.addr);
	rkey = le32_to_cpu(msg.rkey);

	/* 3: RDMA WRITE a pattern, READ it back */
	for (i = 0; i < KT_RBUF_SIZE; i++)
		kt->rbuf[i] = i * 7 + 3;
	ib_dma_sync_single_for_device(kt->dev, kt->rbuf_dma, KT_RBUF_SIZE,
				      DMA_BIDIRECTIONAL);
	sge.addr = kt->rbuf_dma;
	sge.length = KT_RBUF_SIZE;
	sge.lkey = kt->pd->local_dma_lkey;
	rw.wr.wr_id = 21;
	rw.wr.opcode = IB_WR_RDMA_WRITE;
	rw.wr.send_flags = IB_SEND_SIGNALED;
	rw.wr.sg_list = &sge;
	rw.wr.num_sge = 1;
	rw.remote_addr = raddr;
	rw.rkey = rkey;
	if (kt_post_one(kt, &rw.wr, "RDMA WRITE") ||
	    kt_expect(kt, 21, IB_WC_RDMA_WRITE, &wc, "RDMA WRITE"))
		return -EIO;
	kt_check(kt, true, "RDMA WRITE of 2 pages");

	memset(kt->rbuf, 0, KT_RBUF_SIZE);
	ib_dma_sync_single_for_device(kt->dev, kt->rbuf_dma, KT_RBUF_SIZE,
				      DMA_BIDIRECTIONAL);
	rw.wr.wr_id = 22;
	rw.wr.opcode = IB_WR_RDMA_READ;
	if (kt_post_one(kt, &rw.wr, "RDMA READ") ||
	    kt_expect(kt, 22, IB_WC_RDMA_READ, &wc, "RDMA READ"))
		return -EIO;
	ib_dma_sync_single_for_cpu(kt->dev, kt->rbuf_dma, KT_RBUF_SIZE,
				   DMA_BIDIRECTIONAL);
	for (i = 0; i < KT_RBUF_SIZE; i++)
		if (kt->rbuf[i] != (u8)(i * 7 + 3))
			break;
	kt_check(kt, i == KT_RBUF_SIZE && wc.byte_len == KT_RBUF_SIZE,
		 "RDMA READ returns what was written");

	/* 4: atomics on the first word */
	memcpy(&orig, kt->rbuf, sizeof(orig));
	sge.length = sizeof(u64);
	aw.wr.wr_id = 23;
	aw.wr.opcode = IB_WR_ATOMIC_FETCH_AND_ADD;
	aw.wr.send_flags = IB_SEND_SIGNALED;
	aw.wr.sg_list = &sge;
	aw.wr.num_sge = 1;
	aw.remote_addr = raddr;
	aw.rkey = rkey;
	aw.compare_add = KT_ADD;
	if (kt_post_one(kt, &aw.wr, "FETCH_AND_ADD") ||
	    kt_expect(kt, 23, IB_WC_FETCH_ADD, &wc, "FETCH_AND_ADD"))
		return -EIO;
	ib_dma_sync_single_for_cpu(kt->dev, kt->rbuf_dma, sizeof(u64),
				   DMA_BIDIRECTIONAL);
	kt_check(kt, !memcmp(kt->rbuf, &orig, sizeof(orig)),
		 "FETCH_AND_ADD returns the old value");

	aw.wr.wr_id = 24;
	aw.wr.opcode = IB_WR_ATOMIC_CMP_AND_SWP;
	aw.compare_add = le64_to_cpu(orig) + KT_ADD;
	aw.swap = KT_SWAP;
	if (kt_post_one(kt, &aw.wr, "CMP_AND_SWP") ||
	    kt_expect(kt, 24, IB_WC_COMP_SWAP, &wc, "CMP_AND_SWP"))
		return -EIO;
	ib_dma_sync_single_for_cpu(kt->dev, kt->rbuf_dma, sizeof(u64),
				   DMA_BIDIRECTIONAL);
	memcpy(&got, kt->rbuf, sizeof(got));
	kt_check(kt, le64_to_cpu(got) == le64_to_cpu(orig) + KT_ADD,
		 "CMP_AND_SWP saw the added value");

	/* 5: done; invalidate the server's rkey with the message */
	ret = kt_send(kt, IB_WR_SEND_WITH_INV, 25, "done", 5, 0, rkey);
	if (ret || kt_expect(kt, 25, IB_WC_SEND, &wc, "SEND_WITH_INV"))
		return -EIO;
	kt_check(kt, true, "SEND_WITH_INV");

	if (kt_expect(kt, 1, IB_WC_RECV, &wc, "receive bye"))
		return -EIO;
	p = kt_received(kt, &wc);
	kt_check(kt, !strcmp(p, "bye"), "last message");

	ret = rdma_disconnect(kt->id);
	if (!ret)
		ret = kt_wait_cm(kt, RDMA_CM_EVENT_DISCONNECTED, NULL);
	kt_check(kt, !ret, "disconnect");
	return 0;
}

/* ---- UD ---- */

static int kt_ud_server(struct kt *kt)
{
	struct ib_wc wc;
	u8 *p;
	int ret;

	ret = kt_server_accept(kt, port + 1);
	kt_check(kt, !ret, "SIDR request accepted");
	if (ret)
		return ret;

	if (kt_expect(kt, 0, IB_WC_RECV, &wc, "UD receive"))
		return -EIO;
	p = kt_received(kt, &wc);
	kt_check(kt, (wc.wc_flags & IB_WC_GRH) &&
		 (wc.wc_flags & IB_WC_WITH_NETWORK_HDR_TYPE) &&
		 wc.network_hdr_type == RDMA_NETWORK_IPV4,
		 "GRH with an IPv4 header");
	kt_check(kt, (wc.wc_flags & IB_WC_WITH_IMM) &&
		 be32_to_cpu(wc.ex.imm_data) == KT_IMM &&
		 wc.byte_len == sizeof(struct ib_grh) + 5 &&
		 !strcmp(p, "ping"), "UD data and immediate");

	/* Answer through an address handle made from the completion */
	kt->ah = ib_create_ah_from_wc(kt->pd, &wc,
				      (void *)kt_recv_buf(kt, wc.wr_id), 1);
	if (IS_ERR(kt->ah)) {
		ret = PTR_ERR(kt->ah);
		kt->ah = NULL;
		pr_err("qhca_ktest: ib_create_ah_from_wc: %d\n", ret);
		kt_check(kt, false, "address handle from the GRH");
		return ret;
	}
	kt_check(kt, true, "address handle from the GRH");
	kt->remote_qpn = wc.src_qp;
	kt->remote_qkey = RDMA_UDP_QKEY;
	ret = kt_send(kt, IB_WR_SEND, 40, "pong", 5, IB_SEND_INLINE, 0);
	if (ret || kt_expect(kt, 40, IB_WC_SEND, &wc, "UD reply"))
		return -EIO;
	kt_check(kt, true, "UD reply sent");

	/* Destroyed as an atomic-context caller would */
	rdma_destroy_ah(kt->ah, 0);
	kt->ah = NULL;
	return 0;
}

static int kt_ud_client(struct kt *kt)
{
	struct ib_wc wc;
	u8 *p;
	int ret;

	ret = kt_client_connect(kt, port + 1);
	kt_check(kt, !ret, "SIDR resolution");
	if (ret)
		return ret;
	kt_check(kt, kt->remote_qkey == RDMA_UDP_QKEY, "SIDR Q_Key");

	ret = kt_send(kt, IB_WR_SEND_WITH_IMM, 41, "ping", 5, 0, KT_IMM);
	if (ret || kt_expect(kt, 41, IB_WC_SEND, &wc, "UD send"))
		return -EIO;
	kt_check(kt, true, "UD send");
	if (kt_expect(kt, 0, IB_WC_RECV, &wc, "UD reply received"))
		return -EIO;
	p = kt_received(kt, &wc);
	kt_check(kt, !strcmp(p, "pong") && wc.src_qp == kt->remote_qpn,
		 "UD reply from the server's QP");
	return 0;
}

/* ---- UC ---- */

#define KT_UC_HALF		(KT_RBUF_SIZE / 2)

/* The byte at @i of the client's pattern for the UC region */
static u8 kt_uc_byte(u32 i)
{
	return i < KT_UC_HALF ? (u8)(i * 13 + 5) : (u8)(i * 11 + 1);
}

/* A signaled send of @len bytes of @data and its completion, checked */
static int kt_uc_send(struct kt *kt, enum ib_wr_opcode opcode, u64 wr_id,
		      const void *data, u32 len, u32 imm, const char *what)
{
	struct ib_wc wc;
	int ret;

	ret = kt_send(kt, opcode, wr_id, data, len, 0, imm);
	if (ret) {
		pr_err("qhca_ktest: posting %s: %d\n", what, ret);
		kt_check(kt, false, what);
		return -EIO;
	}
	if (kt_expect(kt, wr_id, IB_WC_SEND, &wc, what))
		return -EIO;
	kt_check(kt, true, what);
	return 0;
}

static const char kt_uc_msg[] = "uc send";
static const char kt_uc_msg_imm[] = "uc send with immediate";

static int kt_uc_server(struct kt *kt)
{
	struct kt_msg msg = {};
	struct ib_wc wc;
	u32 i;
	u8 *p;
	int ret;

	ret = kt_server_accept(kt, port + 2);
	kt_check(kt, !ret, "connection accepted");
	if (ret)
		return ret;

	/* The region, fast-registered through the UC QP */
	ret = kt_region(kt, 50);
	if (ret)
		return ret;
	msg.addr = cpu_to_le64(kt->mr->iova);
	msg.rkey = cpu_to_le32(kt->mr->rkey);
	msg.len = cpu_to_le32(KT_RBUF_SIZE);
	strscpy(msg.text, "uc region", sizeof(msg.text));
	if (kt_uc_send(kt, IB_WR_SEND, 51, &msg, sizeof(msg), 0,
		       "SEND of the region"))
		return -EIO;

	/* The client's two SENDs: the receive queue's first WQEs, in order */
	if (kt_expect(kt, 0, IB_WC_RECV, &wc, "SEND received"))
		return -EIO;
	p = kt_received(kt, &wc);
	kt_check(kt, !(wc.wc_flags & IB_WC_WITH_IMM) &&
		 wc.byte_len == sizeof(kt_uc_msg) &&
		 !memcmp(p, kt_uc_msg, sizeof(kt_uc_msg)),
		 "SEND data received");
	kt_post_recv(kt, wc.wr_id);
	if (kt_expect(kt, 1, IB_WC_RECV, &wc, "SEND_WITH_IMM received"))
		return -EIO;
	p = kt_received(kt, &wc);
	kt_check(kt, (wc.wc_flags & IB_WC_WITH_IMM) &&
		 be32_to_cpu(wc.ex.imm_data) == KT_IMM &&
		 wc.byte_len == sizeof(kt_uc_msg_imm) &&
		 !memcmp(p, kt_uc_msg_imm, sizeof(kt_uc_msg_imm)),
		 "SEND_WITH_IMM data and immediate received");
	kt_post_recv(kt, wc.wr_id);

	/* The WRITE with immediate (the second page) takes a receive */
	if (kt_expect(kt, 2, IB_WC_RECV_RDMA_WITH_IMM, &wc,
		      "RDMA WRITE_WITH_IMM received"))
		return -EIO;
	kt_check(kt, (wc.wc_flags & IB_WC_WITH_IMM) &&
		 be32_to_cpu(wc.ex.imm_data) == KT_UC_IMM &&
		 wc.byte_len == KT_UC_HALF,
		 "RDMA WRITE_WITH_IMM immediate and length");
	kt_post_recv(kt, wc.wr_id);

	ib_dma_sync_single_for_cpu(kt->dev, sg_dma_address(&kt->rsg),
				   KT_RBUF_SIZE, DMA_BIDIRECTIONAL);
	for (i = 0; i < KT_UC_HALF; i++)
		if (kt->rbuf[i] != kt_uc_byte(i))
			break;
	kt_check(kt, i == KT_UC_HALF, "RDMA WRITE data in our memory");
	for (i = KT_UC_HALF; i < KT_RBUF_SIZE; i++)
		if (kt->rbuf[i] != kt_uc_byte(i))
			break;
	kt_check(kt, i == KT_RBUF_SIZE,
		 "RDMA WRITE_WITH_IMM data in our memory");

	if (kt_uc_send(kt, IB_WR_SEND, 52, "bye", 4, 0, "send bye"))
		return -EIO;
	ret = kt_wait_cm(kt, RDMA_CM_EVENT_DISCONNECTED, NULL);
	kt_check(kt, !ret, "disconnected by the client");
	return 0;
}

/* An RDMA WRITE (with @imm unless 0) of the region's bytes [@off, +@len) */
static int kt_uc_write(struct kt *kt, u64 wr_id, u64 raddr, u32 rkey,
		       u32 off, u32 len, u32 imm, const char *what)
{
	struct ib_sge sge = {
		.addr = kt->rbuf_dma + off,
		.length = len,
		.lkey = kt->pd->local_dma_lkey,
	};
	struct ib_rdma_wr rw = {
		.wr = {
			.wr_id = wr_id,
			.opcode = imm ? IB_WR_RDMA_WRITE_WITH_IMM :
					IB_WR_RDMA_WRITE,
			.send_flags = IB_SEND_SIGNALED,
			.sg_list = &sge,
			.num_sge = 1,
			.ex.imm_data = cpu_to_be32(imm),
		},
		.remote_addr = raddr + off,
		.rkey = rkey,
	};
	struct ib_wc wc;

	if (kt_post_one(kt, &rw.wr, what) ||
	    kt_expect(kt, wr_id, IB_WC_RDMA_WRITE, &wc, what))
		return -EIO;
	kt_check(kt, true, what);
	return 0;
}

static int kt_uc_client(struct kt *kt)
{
	struct kt_msg msg;
	struct ib_wc wc;
	u64 raddr;
	u32 rkey, i;
	u8 *p;
	int ret;

	/* The server, done with UD, is listening again by then */
	msleep(1000);
	ret = kt_client_connect(kt, port + 2);
	kt_check(kt, !ret, "connection established");
	if (ret)
		return ret;

	kt->rbuf_dma = ib_dma_map_single(kt->dev, kt->rbuf, KT_RBUF_SIZE,
					 DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(kt->dev, kt->rbuf_dma)) {
		kt->rbuf_dma = 0;
		return -ENOMEM;
	}

	if (kt_expect(kt, 0, IB_WC_RECV, &wc, "receive the region"))
		return -EIO;
	p = kt_received(kt, &wc);
	memcpy(&msg, p, sizeof(msg));
	kt_check(kt, wc.byte_len == sizeof(msg) &&
		 !strcmp(msg.text, "uc region") &&
		 le32_to_cpu(msg.len) == KT_RBUF_SIZE, "region received");
	kt_post_recv(kt, wc.wr_id);
	raddr = le64_to_cpu(msg.addr);
	rkey = le32_to_cpu(msg.rkey);

	if (kt_uc_send(kt, IB_WR_SEND, 60, kt_uc_msg, sizeof(kt_uc_msg), 0,
		       "SEND") ||
	    kt_uc_send(kt, IB_WR_SEND_WITH_IMM, 61, kt_uc_msg_imm,
		       sizeof(kt_uc_msg_imm), KT_IMM, "SEND_WITH_IMM"))
		return -EIO;

	/* A pattern per page: WRITE the first, WRITE_WITH_IMM the second */
	for (i = 0; i < KT_RBUF_SIZE; i++)
		kt->rbuf[i] = kt_uc_byte(i);
	ib_dma_sync_single_for_device(kt->dev, kt->rbuf_dma, KT_RBUF_SIZE,
				      DMA_BIDIRECTIONAL);
	if (kt_uc_write(kt, 62, raddr, rkey, 0, KT_UC_HALF, 0,
			"RDMA WRITE") ||
	    kt_uc_write(kt, 63, raddr, rkey, KT_UC_HALF, KT_UC_HALF,
			KT_UC_IMM, "RDMA WRITE_WITH_IMM"))
		return -EIO;

	/* The server has checked everything when it says bye */
	if (kt_expect(kt, 1, IB_WC_RECV, &wc, "receive bye"))
		return -EIO;
	p = kt_received(kt, &wc);
	kt_check(kt, !strcmp(p, "bye"), "last message");

	ret = rdma_disconnect(kt->id);
	if (!ret)
		ret = kt_wait_cm(kt, RDMA_CM_EVENT_DISCONNECTED, NULL);
	kt_check(kt, !ret, "disconnect");
	return 0;
}

static int kt_run(bool server, enum ib_qp_type type)
{
	struct kt *kt;
	int ret;

	kt = kzalloc(sizeof(*kt), GFP_KERNEL);
	if (!kt)
		return -ENOMEM;
	kt->server = server;
	kt->ud = type == IB_QPT_UD;
	kt->uc = type == IB_QPT_UC;
	spin_lock_init(&kt->ev_lock);
	init_waitqueue_head(&kt->ev_wait);

	if (kt->ud)
		ret = server ? kt_ud_server(kt) : kt_ud_client(kt);
	else if (kt->uc)
		ret = server ? kt_uc_server(kt) : kt_uc_client(kt);
	else
		ret = server ? kt_rc_server(kt) : kt_rc_client(kt);
	if (ret)
		pr_err("qhca_ktest: %s %s stopped: %d\n", kt_name(kt),
		       server ? "server" : "client", ret);
	kt_free(kt);
	while (kt->ev_tail != kt->ev_head) {
		if (kt->ev[kt->ev_tail % KT_EVENTS].has_ah)
			rdma_destroy_ah_attr(&kt->ev[kt->ev_tail %
						     KT_EVENTS].ah_attr);
		kt->ev_tail++;
	}
	if (!ret && kt->failures)
		ret = -EIO;
	kfree(kt);
	return ret;
}

/* ---- drain ---- */

struct kt_drain {
	struct ib_cqe cqe;
	atomic_t flushed;
	atomic_t other;
	struct completion fatal;
	struct ib_event_handler handler;
};

static void kt_drain_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kt_drain *d = container_of(wc->wr_cqe, struct kt_drain, cqe);

	if (wc->status == IB_WC_WR_FLUSH_ERR)
		atomic_inc(&d->flushed);
	else
		atomic_inc(&d->other);
}

static void kt_drain_event(struct ib_event_handler *handler,
			   struct ib_event *event)
{
	struct kt_drain *d = container_of(handler, struct kt_drain, handler);

	if (event->event == IB_EVENT_DEVICE_FATAL)
		complete(&d->fatal);
}

static int kt_drain_qp(struct kt *kt, struct kt_drain *d)
{
	struct ib_qp_init_attr init = {
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_ALL_WR,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ib_qp_attr attr = {
		.qp_state = IB_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IB_ACCESS_REMOTE_WRITE,
	};
	struct ib_recv_wr rwr = { .wr_cqe = &d->cqe };
	struct ib_send_wr swr = {
		.wr_cqe = &d->cqe,
		.opcode = IB_WR_SEND,
		.send_flags = IB_SEND_SIGNALED,
	};
	struct ib_cq *scq, *rcq;
	int ret;

	scq = ib_alloc_cq(kt->dev, NULL, 16, 0, IB_POLL_SOFTIRQ);
	if (IS_ERR(scq))
		return PTR_ERR(scq);
	rcq = ib_alloc_cq(kt->dev, NULL, 16, 0, IB_POLL_WORKQUEUE);
	if (IS_ERR(rcq)) {
		ib_free_cq(scq);
		return PTR_ERR(rcq);
	}
	init.send_cq = scq;
	init.recv_cq = rcq;
	kt->qp = ib_create_qp(kt->pd, &init);
	if (IS_ERR(kt->qp)) {
		ret = PTR_ERR(kt->qp);
		kt->qp = NULL;
		goto out;
	}
	ret = ib_modify_qp(kt->qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
			   IB_QP_PORT | IB_QP_ACCESS_FLAGS);
	if (!ret)
		ret = ib_post_recv(kt->qp, &rwr, NULL);
	if (!ret)
		ret = ib_post_recv(kt->qp, &rwr, NULL);
	if (!ret)
		ret = ib_post_send(kt->qp, &swr, NULL);
	kt_check(kt, !ret, "three work requests posted in INIT");
	if (ret)
		goto out;

	if (dead) {
		pr_info("qhca_ktest: waiting for the device to die\n");
		kt_check(kt, wait_for_completion_timeout(&d->fatal, 60 * HZ),
			 "device fatal event");
	}

	ib_drain_qp(kt->qp);
	kt_check(kt, true, "ib_drain_qp returned");
	kt_check(kt, atomic_read(&d->flushed) == 3 &&
		 !atomic_read(&d->other),
		 "every work request flushed before the drain ended");
	pr_info("qhca_ktest: %d flushed, %d other completions\n",
		atomic_read(&d->flushed), atomic_read(&d->other));
out:
	if (kt->qp)
		ib_destroy_qp(kt->qp);
	kt->qp = NULL;
	ib_free_cq(rcq);
	ib_free_cq(scq);
	return ret;
}

static int kt_drain(void)
{
	struct kt_drain *d;
	struct sockaddr_in sin;
	struct kt *kt;
	int ret;

	kt = kzalloc(sizeof(*kt), GFP_KERNEL);
	d = kzalloc(sizeof(*d), GFP_KERNEL);
	if (!kt || !d) {
		ret = -ENOMEM;
		goto out_free;
	}
	spin_lock_init(&kt->ev_lock);
	init_waitqueue_head(&kt->ev_wait);
	d->cqe.done = kt_drain_done;
	init_completion(&d->fatal);

	/* The device behind the local address */
	ret = kt_addr(&sin, local, 0);
	if (ret) {
		pr_err("qhca_ktest: bad local address '%s'\n", local);
		goto out_free;
	}
	kt->id = rdma_create_id(&init_net, kt_cm_handler, kt, RDMA_PS_TCP,
				IB_QPT_RC);
	if (IS_ERR(kt->id)) {
		ret = PTR_ERR(kt->id);
		kt->id = NULL;
		goto out_free;
	}
	ret = rdma_bind_addr(kt->id, (struct sockaddr *)&sin);
	if (ret || !kt->id->device) {
		pr_err("qhca_ktest: no RDMA device for %s: %d\n", local, ret);
		ret = ret ?: -ENODEV;
		goto out_id;
	}
	kt->dev = kt->id->device;
	INIT_IB_EVENT_HANDLER(&d->handler, kt->dev, kt_drain_event);
	ib_register_event_handler(&d->handler);

	kt->pd = ib_alloc_pd(kt->dev, 0);
	if (IS_ERR(kt->pd)) {
		ret = PTR_ERR(kt->pd);
		kt->pd = NULL;
	} else {
		ret = kt_drain_qp(kt, d);
		ib_dealloc_pd(kt->pd);
	}
	ib_unregister_event_handler(&d->handler);
out_id:
	rdma_destroy_id(kt->id);
out_free:
	if (!ret && kt->failures)
		ret = -EIO;
	kfree(d);
	kfree(kt);
	return ret;
}

static int __init qhca_ktest_init(void)
{
	bool server = !strcmp(role, "server");
	int ret;

	if (!strcmp(role, "drain")) {
		ret = kt_drain();
		pr_info("qhca_ktest: drain %s\n", ret ? "FAILED" : "passed");
		return ret ? -EIO : 0;
	}

	if (!server && strcmp(role, "client"))
		return -EINVAL;
	ret = kt_run(server, IB_QPT_RC);
	if (!ret)
		ret = kt_run(server, IB_QPT_UD);
	if (!ret)
		ret = kt_run(server, IB_QPT_UC);
	pr_info("qhca_ktest: %s %s\n", role, ret ? "FAILED" : "passed");
	return ret ? -EIO : 0;
}

static void __exit qhca_ktest_exit(void)
{
}

module_init(qhca_ktest_init);
module_exit(qhca_ktest_exit);
