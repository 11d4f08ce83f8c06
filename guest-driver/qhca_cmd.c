// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * qhca: the command queue client.
 *
 * Commands go into a one-page ring (QHCA_CMDQ_DEPTH entries); the device
 * executes them in order and writes a completion with the command's cookie
 * into the command completion ring (CMDCQ), then raises vector 0 if the
 * CMDCQ is armed.  Up to QHCA_CMDQ_DEPTH commands are in flight, one per
 * context: the context index is in the low bits of the cookie, a sequence
 * number in the rest, so a late completion cannot be taken for another
 * command.  Because commands complete in order, a ring entry is free again
 * once at most QHCA_CMDQ_DEPTH - 1 other commands are in flight, which the
 * context semaphore guarantees.
 *
 * Callers that may sleep wait for the completion interrupt; callers in
 * atomic context poll the CMDCQ themselves (bounded busy-wait); NOWAIT
 * commands (destroying an address handle from atomic context) are posted
 * and forgotten: the device executes commands in order, so whatever is
 * posted later sees the object gone.
 *
 * A command that does not complete within cmd_timeout_ms (5 s) makes the
 * device dead: it is reset (no more DMA), every waiter is released with
 * -EIO and later commands fail at once.
 */

#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/ktime.h>
#include <linux/moduleparam.h>

#include "qhca.h"

static unsigned int cmd_timeout_ms = QHCA_CMD_TIMEOUT_MS;
module_param(cmd_timeout_ms, uint, 0644);
MODULE_PARM_DESC(cmd_timeout_ms,
		 "ms without a command completion before the device is declared dead (default 5000)");

#define QHCA_CMD_COOKIE_SHIFT	QHCA_CMDQ_LOG_DEPTH
#define QHCA_CMD_STATUS_DEAD	0xffff	/* not a device status */

static const char *const qhca_cmd_names[QHCA_CMD_MAX] = {
	[QHCA_CMD_QUERY_DEVICE] = "QUERY_DEVICE",
	[QHCA_CMD_QUERY_PORT] = "QUERY_PORT",
	[QHCA_CMD_ADD_GID] = "ADD_GID",
	[QHCA_CMD_DEL_GID] = "DEL_GID",
	[QHCA_CMD_CREATE_EQ] = "CREATE_EQ",
	[QHCA_CMD_DESTROY_EQ] = "DESTROY_EQ",
	[QHCA_CMD_ALLOC_PD] = "ALLOC_PD",
	[QHCA_CMD_DEALLOC_PD] = "DEALLOC_PD",
	[QHCA_CMD_REG_MR] = "REG_MR",
	[QHCA_CMD_DEREG_MR] = "DEREG_MR",
	[QHCA_CMD_ALLOC_MR] = "ALLOC_MR",
	[QHCA_CMD_CREATE_CQ] = "CREATE_CQ",
	[QHCA_CMD_DESTROY_CQ] = "DESTROY_CQ",
	[QHCA_CMD_CREATE_QP] = "CREATE_QP",
	[QHCA_CMD_MODIFY_QP] = "MODIFY_QP",
	[QHCA_CMD_QUERY_QP] = "QUERY_QP",
	[QHCA_CMD_DESTROY_QP] = "DESTROY_QP",
	[QHCA_CMD_CREATE_SRQ] = "CREATE_SRQ",
	[QHCA_CMD_MODIFY_SRQ] = "MODIFY_SRQ",
	[QHCA_CMD_QUERY_SRQ] = "QUERY_SRQ",
	[QHCA_CMD_DESTROY_SRQ] = "DESTROY_SRQ",
	[QHCA_CMD_CREATE_AH] = "CREATE_AH",
	[QHCA_CMD_DESTROY_AH] = "DESTROY_AH",
	[QHCA_CMD_QUERY_STATS] = "QUERY_STATS",
	[QHCA_CMD_QUERY_QP_STATE] = "QUERY_QP_STATE",
	[QHCA_CMD_QUERY_CQ] = "QUERY_CQ",
	[QHCA_CMD_REREG_MR] = "REREG_MR",
	[QHCA_CMD_RESIZE_CQ] = "RESIZE_CQ",
	[QHCA_CMD_ATTACH_MCAST] = "ATTACH_MCAST",
	[QHCA_CMD_DETACH_MCAST] = "DETACH_MCAST",
	[QHCA_CMD_RESIZE_SRQ] = "RESIZE_SRQ",
	[QHCA_CMD_ALLOC_MW] = "ALLOC_MW",
	[QHCA_CMD_DEALLOC_MW] = "DEALLOC_MW",
};

static unsigned int qhca_cmd_timeout(void)
{
	return max(READ_ONCE(cmd_timeout_ms), 100u);
}

static const char *qhca_cmd_name(u16 opcode)
{
	if (opcode < QHCA_CMD_MAX && qhca_cmd_names[opcode])
		return qhca_cmd_names[opcode];
	return "unknown";
}

static int qhca_cmd_errno(u16 status)
{
	switch (status) {
	case QHCA_CMD_OK:
		return 0;
	case QHCA_CMD_ERR_OPCODE:
	case QHCA_CMD_ERR_UNSUPPORTED:
		return -EOPNOTSUPP;
	case QHCA_CMD_ERR_PARAM:
	case QHCA_CMD_ERR_HANDLE:
	case QHCA_CMD_ERR_STATE:
		return -EINVAL;
	case QHCA_CMD_ERR_NO_RESOURCES:
		return -ENOMEM;
	case QHCA_CMD_ERR_BUSY:
		return -EBUSY;
	case QHCA_CMD_ERR_DMA:
		return -EFAULT;
	default:
		return -EIO;
	}
}

/* An MR with memory windows bound stays: the consumer's doing, not a bug */
static bool qhca_cmd_mr_busy_ok(u16 opcode)
{
	return opcode == QHCA_CMD_DEREG_MR || opcode == QHCA_CMD_REREG_MR;
}

static void qhca_cmd_report(struct qhca_dev *dev, u16 opcode, u16 status)
{
	/*
	 * Out-of-range and resource errors follow from what the consumer
	 * asked for; the others mean a driver or device problem.
	 */
	if (status == QHCA_CMD_ERR_PARAM || status == QHCA_CMD_ERR_STATE ||
	    status == QHCA_CMD_ERR_NO_RESOURCES ||
	    (status == QHCA_CMD_ERR_BUSY && qhca_cmd_mr_busy_ok(opcode)))
		ibdev_dbg(&dev->ibdev, "%s: status %u\n", qhca_cmd_name(opcode),
			  status);
	else if (status != QHCA_CMD_STATUS_DEAD)
		ibdev_err_ratelimited(&dev->ibdev, "%s failed: status %u\n",
				      qhca_cmd_name(opcode), status);
}

static void qhca_cmd_ctx_release(struct qhca_dev *dev,
				 struct qhca_cmd_ctx *ctx)
{
	struct qhca_cmdq *cq = &dev->cmdq;

	clear_bit(ctx - cq->ctx, &cq->busy);
	up(&cq->slots);
}

/*
 * Consume the completions the device has written.  With @arm the CMDCQ is
 * armed again (interrupt context); pollers leave the arm state alone.
 */
void qhca_cmdq_poll(struct qhca_dev *dev, bool arm)
{
	struct qhca_cmdq *cq = &dev->cmdq;
	const u32 depth = 1u << QHCA_CMDCQ_LOG_DEPTH;
	unsigned long flags;
	u16 start;

	spin_lock_irqsave(&cq->poll_lock, flags);
	start = cq->ci;
	for (;;) {
		struct qhca_cmd_comp *comp = cq->cq.buf +
			(cq->ci & (depth - 1)) * QHCA_CMD_COMP_SIZE;
		struct qhca_cmd_ctx *ctx;
		u32 cookie;

		if (!qhca_owner_ok(READ_ONCE(comp->owner), cq->ci, depth))
			break;
		dma_rmb();
		cookie = le32_to_cpu(comp->cookie);
		ctx = &cq->ctx[cookie & (QHCA_CMDQ_DEPTH - 1)];
		cq->ci++;

		if (!ctx->posted || ctx->cookie != cookie) {
			ibdev_warn_ratelimited(&dev->ibdev,
					       "completion with unknown cookie %#x\n",
					       cookie);
			continue;
		}
		ctx->status = le16_to_cpu(comp->status);
		ctx->result = le32_to_cpu(comp->result);
		ctx->posted = false;
		if (ctx->nowait) {
			if (ctx->status)
				qhca_cmd_report(dev, ctx->opcode, ctx->status);
			qhca_cmd_ctx_release(dev, ctx);
		} else {
			complete(&ctx->done);
		}
	}
	if (arm)
		qhca_kdb(dev, QHCA_DB_CMDCQ, cq->ci | QHCA_DB_CMDCQ_ARM);
	else if (cq->ci != start)
		qhca_kdb(dev, QHCA_DB_CMDCQ, cq->ci);
	spin_unlock_irqrestore(&cq->poll_lock, flags);
}

/*
 * The device stopped answering (or reported a fatal error): reset it so
 * that it touches no more memory, release every waiter and refuse further
 * commands.  Any context.
 */
void qhca_dev_set_dead(struct qhca_dev *dev, const char *why)
{
	struct qhca_cmdq *cq = &dev->cmdq;
	unsigned long flags;
	int i;

	if (test_and_set_bit(QHCA_DEV_DEAD, &dev->flags))
		return;

	ibdev_err(&dev->ibdev, "device is dead (%s): resetting it\n", why);
	qhca_reg_write(dev, QHCA_REG_CTRL, QHCA_CTRL_RESET);

	spin_lock_irqsave(&cq->poll_lock, flags);
	for (i = 0; i < QHCA_CMDQ_DEPTH; i++) {
		struct qhca_cmd_ctx *ctx = &cq->ctx[i];

		if (!ctx->posted)
			continue;
		ctx->posted = false;
		ctx->status = QHCA_CMD_STATUS_DEAD;
		if (ctx->nowait)
			qhca_cmd_ctx_release(dev, ctx);
		else
			complete(&ctx->done);
	}
	spin_unlock_irqrestore(&cq->poll_lock, flags);

	schedule_work(&dev->fatal_work);
}

/* A free context; may sleep unless @atomic. */
static struct qhca_cmd_ctx *qhca_cmd_ctx_get(struct qhca_dev *dev,
					     bool atomic)
{
	struct qhca_cmdq *cq = &dev->cmdq;
	int i;

	if (atomic) {
		ktime_t end = ktime_add_ms(ktime_get(), qhca_cmd_timeout());

		while (down_trylock(&cq->slots)) {
			if (qhca_dead(dev))
				return ERR_PTR(-EIO);
			if (ktime_after(ktime_get(), end))
				return ERR_PTR(-ETIMEDOUT);
			qhca_cmdq_poll(dev, false);
			udelay(2);
		}
	} else if (down_timeout(&cq->slots,
				msecs_to_jiffies(qhca_cmd_timeout()))) {
		return ERR_PTR(qhca_dead(dev) ? -EIO : -ETIMEDOUT);
	}

	/* The semaphore guarantees a free context. */
	for (i = 0; i < QHCA_CMDQ_DEPTH; i++)
		if (!test_and_set_bit(i, &cq->busy))
			return &cq->ctx[i];

	WARN_ON_ONCE(1);
	up(&cq->slots);
	return ERR_PTR(-EIO);
}

/* Write the command into the ring and ring the doorbell. */
static void qhca_cmd_post(struct qhca_dev *dev, struct qhca_cmd_ctx *ctx,
			  u16 opcode, const void *in, size_t in_len,
			  size_t out_len)
{
	struct qhca_cmdq *cq = &dev->cmdq;
	unsigned int idx = ctx - cq->ctx;
	struct qhca_cmd *cmd;
	unsigned long flags;

	spin_lock_irqsave(&cq->post_lock, flags);
	ctx->cookie = (++cq->seq << QHCA_CMD_COOKIE_SHIFT) | idx;
	ctx->opcode = opcode;
	ctx->status = 0;
	ctx->result = 0;
	reinit_completion(&ctx->done);
	/* Visible before the completion can be seen by the poller */
	smp_store_release(&ctx->posted, true);

	cmd = cq->sq.buf + (cq->pi & (QHCA_CMDQ_DEPTH - 1)) * QHCA_CMD_SIZE;
	memset(cmd, 0, sizeof(*cmd));
	cmd->hdr.opcode = cpu_to_le16(opcode);
	cmd->hdr.cookie = cpu_to_le32(ctx->cookie);
	if (out_len) {
		cmd->hdr.resp_addr = cpu_to_le64(cq->resp.dma +
						 idx * QHCA_CMD_RESP_SLOT);
		cmd->hdr.resp_len = cpu_to_le32(out_len);
	}
	if (in_len)
		memcpy(cmd->raw, in, in_len);
	cq->pi++;
	qhca_kdb(dev, QHCA_DB_CMDQ, cq->pi);
	spin_unlock_irqrestore(&cq->post_lock, flags);
}

/* Wait for a posted command; 0 once it completed. */
static int qhca_cmd_wait(struct qhca_dev *dev, struct qhca_cmd_ctx *ctx,
			 bool atomic)
{
	if (atomic) {
		ktime_t end = ktime_add_ms(ktime_get(), qhca_cmd_timeout());

		for (;;) {
			qhca_cmdq_poll(dev, false);
			if (try_wait_for_completion(&ctx->done))
				return 0;
			if (ktime_after(ktime_get(), end))
				break;
			udelay(2);
		}
	} else {
		if (wait_for_completion_timeout(&ctx->done,
						msecs_to_jiffies(qhca_cmd_timeout())))
			return 0;
		/* A lost interrupt is not a dead device */
		qhca_cmdq_poll(dev, false);
		if (try_wait_for_completion(&ctx->done)) {
			ibdev_warn(&dev->ibdev, "%s: completion without interrupt\n",
				   qhca_cmd_name(ctx->opcode));
			return 0;
		}
	}
	return -ETIMEDOUT;
}

/**
 * qhca_cmd_exec - run one device command
 * @dev: the device
 * @opcode: enum qhca_cmd_opcode
 * @in: the payload after the header (or NULL)
 * @in_len: its length, at most sizeof(qhca_cmd.raw)
 * @out: where to copy the command's response (or NULL)
 * @out_len: the response's length, at most QHCA_CMD_RESP_SLOT
 * @result: the completion's result field (or NULL)
 * @flags: QHCA_CMD_ATOMIC, QHCA_CMD_NOWAIT
 *
 * Return: 0, the device's error as an errno, -ETIMEDOUT if the device did
 * not answer (it is then dead), or -EIO if it is dead.
 */
int qhca_cmd_exec(struct qhca_dev *dev, u16 opcode, const void *in,
		  size_t in_len, void *out, size_t out_len, u32 *result,
		  unsigned int flags)
{
	struct qhca_cmdq *cq = &dev->cmdq;
	bool atomic = flags & (QHCA_CMD_ATOMIC | QHCA_CMD_NOWAIT);
	struct qhca_cmd_ctx *ctx;
	u16 status;
	int ret;

	if (WARN_ON_ONCE(in_len > sizeof_field(struct qhca_cmd, raw) ||
			 out_len > QHCA_CMD_RESP_SLOT ||
			 ((flags & QHCA_CMD_NOWAIT) && (out || result))))
		return -EINVAL;
	if (!atomic)
		might_sleep();
	if (qhca_dead(dev))
		return -EIO;

	ctx = qhca_cmd_ctx_get(dev, atomic);
	if (IS_ERR(ctx)) {
		if (PTR_ERR(ctx) == -ETIMEDOUT)
			qhca_dev_set_dead(dev, "no free command slot");
		return PTR_ERR(ctx);
	}
	ctx->nowait = flags & QHCA_CMD_NOWAIT;
	qhca_cmd_post(dev, ctx, opcode, in, in_len, out_len);
	if (ctx->nowait)
		return 0;

	ret = qhca_cmd_wait(dev, ctx, atomic);
	if (ret) {
		ibdev_err(&dev->ibdev, "%s: no completion after %u ms\n",
			  qhca_cmd_name(opcode), qhca_cmd_timeout());
		/* Releases the context too (status DEAD); it is not reused */
		qhca_dev_set_dead(dev, "command timeout");
		return -ETIMEDOUT;
	}

	status = ctx->status;
	if (result)
		*result = ctx->result;
	if (!status && out)
		memcpy(out, cq->resp.buf + (ctx - cq->ctx) * QHCA_CMD_RESP_SLOT,
		       out_len);
	qhca_cmd_ctx_release(dev, ctx);

	if (status == QHCA_CMD_STATUS_DEAD)
		return -EIO;
	if (status)
		qhca_cmd_report(dev, opcode, status);
	return qhca_cmd_errno(status);
}

/*
 * DESTROY_*, DEALLOC_PD, DEREG_MR: the object's host resources are freed
 * whatever this returns; a failure is only logged.
 */
int qhca_cmd_destroy(struct qhca_dev *dev, u16 opcode, u32 handle,
		     unsigned int flags)
{
	struct qhca_cmd_obj obj = { .handle = cpu_to_le32(handle) };
	int ret;

	ret = qhca_cmd_exec(dev, opcode, &obj, sizeof(obj), NULL, 0, NULL,
			    flags);
	if (ret && ret != -EIO && ret != -ETIMEDOUT &&
	    !(ret == -EBUSY && qhca_cmd_mr_busy_ok(opcode)))
		ibdev_err(&dev->ibdev, "%s %u: %d\n", qhca_cmd_name(opcode),
			  handle, ret);
	return ret;
}

static int qhca_page_alloc(struct qhca_dev *dev, struct qhca_queue_mem *q)
{
	/* Zeroed and page aligned, as the device requires. */
	q->buf = dma_alloc_coherent(&dev->pdev->dev, QHCA_PAGE_SIZE, &q->dma,
				    GFP_KERNEL);
	return q->buf ? 0 : -ENOMEM;
}

static void qhca_page_free(struct qhca_dev *dev, struct qhca_queue_mem *q)
{
	if (!q->buf)
		return;
	dma_free_coherent(&dev->pdev->dev, QHCA_PAGE_SIZE, q->buf, q->dma);
	q->buf = NULL;
}

static_assert(QHCA_CMDQ_DEPTH * QHCA_CMD_SIZE <= QHCA_PAGE_SIZE);
static_assert((1 << QHCA_CMDCQ_LOG_DEPTH) * QHCA_CMD_COMP_SIZE <=
	      QHCA_PAGE_SIZE);
static_assert((1 << QHCA_AEQ_LOG_DEPTH) * QHCA_EQE_SIZE <= QHCA_PAGE_SIZE);
static_assert(QHCA_CMDQ_DEPTH <= BITS_PER_LONG);
static_assert(sizeof(struct qhca_device_attr) <= QHCA_CMD_RESP_SLOT);
static_assert(sizeof(struct qhca_qp_attr) <= QHCA_CMD_RESP_SLOT);

/* Only once the device can no longer write these pages. */
void qhca_cmdq_free(struct qhca_dev *dev)
{
	qhca_page_free(dev, &dev->aeq);
	qhca_page_free(dev, &dev->cmdq.resp);
	qhca_page_free(dev, &dev->cmdq.cq);
	qhca_page_free(dev, &dev->cmdq.sq);
}

/*
 * Allocate the command queue, its completion ring and response page and
 * the async EQ, and give the (reset, not yet enabled) device their
 * addresses.
 */
int qhca_cmdq_init(struct qhca_dev *dev)
{
	struct qhca_cmdq *cq = &dev->cmdq;
	int ret, i;

	spin_lock_init(&cq->post_lock);
	spin_lock_init(&cq->poll_lock);
	sema_init(&cq->slots, QHCA_CMDQ_DEPTH);
	for (i = 0; i < QHCA_CMDQ_DEPTH; i++)
		init_completion(&cq->ctx[i].done);

	ret = qhca_page_alloc(dev, &cq->sq);
	if (!ret)
		ret = qhca_page_alloc(dev, &cq->cq);
	if (!ret)
		ret = qhca_page_alloc(dev, &cq->resp);
	if (!ret)
		ret = qhca_page_alloc(dev, &dev->aeq);
	if (ret) {
		qhca_cmdq_free(dev);
		return ret;
	}

	qhca_reg_write64(dev, QHCA_REG_CMDQ_BASE_LO, cq->sq.dma);
	qhca_reg_write(dev, QHCA_REG_CMDQ_LOG_DEPTH, QHCA_CMDQ_LOG_DEPTH);
	qhca_reg_write64(dev, QHCA_REG_CMDCQ_BASE_LO, cq->cq.dma);
	qhca_reg_write(dev, QHCA_REG_CMDCQ_LOG_DEPTH, QHCA_CMDCQ_LOG_DEPTH);
	qhca_reg_write64(dev, QHCA_REG_AEQ_BASE_LO, dev->aeq.dma);
	qhca_reg_write(dev, QHCA_REG_AEQ_LOG_DEPTH, QHCA_AEQ_LOG_DEPTH);
	return 0;
}

/* The device is enabled: arm the command completion interrupt. */
void qhca_cmdq_start(struct qhca_dev *dev)
{
	qhca_cmdq_poll(dev, true);
}
