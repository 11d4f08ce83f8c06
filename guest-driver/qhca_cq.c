// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * qhca: completion queues.
 *
 * A CQ is a ring of 32-byte CQEs the device writes with an owner bit
 * (qhca_hw.h).  User CQs live in the provider's memory, which is pinned
 * here; kernel CQs are polled here.  Consumed entries are returned to the
 * device with the CQ_CI doorbell, and a CQ is armed for one completion
 * event with CQ_ARM or CQ_ARM_SOLICITED; the event arrives on the EQ of
 * the CQ's completion vector (qhca_eq.c).
 */

#include <rdma/uverbs_ioctl.h>

#include "qhca.h"
#include "qhca-abi.h"

struct qhca_cq *qhca_cq_get(struct qhca_dev *dev, u32 cqn)
{
	struct qhca_cq *cq;
	unsigned long flags;

	xa_lock_irqsave(&dev->cq_xa, flags);
	cq = xa_load(&dev->cq_xa, cqn);
	if (cq && !refcount_inc_not_zero(&cq->refcount))
		cq = NULL;
	xa_unlock_irqrestore(&dev->cq_xa, flags);
	return cq;
}

void qhca_cq_put(struct qhca_cq *cq)
{
	if (refcount_dec_and_test(&cq->refcount))
		complete(&cq->free);
}

/* The user CQ's ring: the provider sized it by qhca_geom_cq_depth() too */
static int qhca_cq_user_ring(struct qhca_dev *dev, struct qhca_cq *cq,
			     const struct ib_cq_init_attr *attr, u32 depth,
			     struct ib_udata *udata)
{
	struct qhca_create_cq_cmd cmd;
	int ret;

	ret = qhca_udata_in(udata, &cmd, sizeof(cmd));
	if (ret)
		return ret;
	if (cmd.reserved || cmd.depth != depth) {
		ibdev_dbg(&dev->ibdev, "bad CQ depth %u for %u CQEs\n",
			  cmd.depth, attr->cqe);
		return -EINVAL;
	}
	return qhca_ring_pin(dev, &cq->ring, cmd.buf_va, cmd.depth,
			     ilog2(QHCA_CQE_SIZE));
}

int qhca_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		   struct uverbs_attr_bundle *attrs)
{
	struct ib_udata *udata = attrs ? &attrs->driver_udata : NULL;
	struct qhca_dev *dev = to_qhca_dev(ibcq->device);
	struct qhca_cq *cq = to_qhca_cq(ibcq);
	struct qhca_cmd_create_cq cmd = {};
	struct qhca_pbl pbl;
	u32 depth;
	int ret;

	if (attr->flags)
		return -EOPNOTSUPP;
	/* 0: no CQE asked for, or more than the device's max_cqe */
	depth = qhca_geom_cq_depth(attr->cqe, dev->max_cqe);
	if (!depth || attr->comp_vector >= dev->num_ceqs)
		return -EINVAL;

	spin_lock_init(&cq->lock);
	refcount_set(&cq->refcount, 1);
	init_completion(&cq->free);
	cq->user = !!udata;
	if (udata) {
		ret = qhca_cq_user_ring(dev, cq, attr, depth, udata);
	} else {
		ret = qhca_ring_alloc(dev, &cq->ring, depth,
				      ilog2(QHCA_CQE_SIZE));
	}
	if (ret)
		return ret;
	depth = cq->ring.depth;

	ret = qhca_ring_pbl(dev, &cq->ring, &pbl, &cmd.mem);
	if (ret)
		goto err_ring;
	cmd.log_depth = ilog2(depth);
	cmd.eqn = cpu_to_le32(dev->ceqs[attr->comp_vector].eqn);
	cmd.db_page = cpu_to_le32(qhca_ucontext_db_page(udata));
	ret = qhca_cmd(dev, QHCA_CMD_CREATE_CQ, &cmd, sizeof(cmd), &cq->cqn);
	qhca_pbl_free(dev, &pbl);
	if (ret)
		goto err_ring;

	ret = xa_insert_irq(&dev->cq_xa, cq->cqn, cq, GFP_KERNEL);
	if (ret)
		goto err_destroy;

	/* Every entry is usable: the device stops only at depth unconsumed */
	ibcq->cqe = depth;
	if (udata) {
		struct qhca_create_cq_resp resp = {
			.cqn = cq->cqn,
			.depth = depth,
			.comp_mask = QHCA_CREATE_RESP_GEOMETRY,
			.log_stride = ilog2(QHCA_CQE_SIZE),
		};

		ret = qhca_udata_out(udata, &resp, sizeof(resp));
		if (ret)
			goto err_xa;
	}

	atomic_inc(&dev->num_objects);
	return 0;

err_xa:
	xa_erase_irq(&dev->cq_xa, cq->cqn);
	qhca_cq_put(cq);
	wait_for_completion(&cq->free);
err_destroy:
	qhca_cmd_destroy(dev, QHCA_CMD_DESTROY_CQ, cq->cqn, 0);
err_ring:
	qhca_ring_free(dev, &cq->ring);
	return ret;
}

/*
 * ibv_resize_cq(): the provider has a new ring of @cqe entries (sized by
 * qhca_geom_cq_depth() as create's) and has told the device of every CQE
 * it polled; the device moves the rest to the new ring's first entries.
 * Kernel CQs are polled here under a spinlock and are not resized.
 */
int qhca_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata)
{
	struct qhca_dev *dev = to_qhca_dev(ibcq->device);
	struct qhca_cq *cq = to_qhca_cq(ibcq);
	struct qhca_cmd_resize_cq cmd = {};
	struct qhca_resize_cq_resp resp = {};
	struct qhca_resize_cq_cmd ucmd;
	struct qhca_ring ring = {};
	struct qhca_pbl pbl;
	u32 depth, carried;
	int ret;

	if (!udata || !cq->user)
		return -EOPNOTSUPP;
	depth = qhca_geom_cq_depth(cqe, dev->max_cqe);
	if (!depth)
		return -EINVAL;
	ret = qhca_udata_in(udata, &ucmd, sizeof(ucmd));
	if (ret)
		return ret;
	if (ucmd.reserved || ucmd.depth != depth)
		return -EINVAL;
	ret = qhca_ring_pin(dev, &ring, ucmd.buf_va, depth,
			    ilog2(QHCA_CQE_SIZE));
	if (ret)
		return ret;
	ret = qhca_ring_pbl(dev, &ring, &pbl, &cmd.mem);
	if (ret)
		goto err_ring;
	cmd.cqn = cpu_to_le32(cq->cqn);
	cmd.log_depth = ilog2(depth);
	ret = qhca_cmd(dev, QHCA_CMD_RESIZE_CQ, &cmd, sizeof(cmd), &carried);
	qhca_pbl_free(dev, &pbl);
	if (ret)
		goto err_ring;

	/* the device writes to the new ring only */
	qhca_ring_free(dev, &cq->ring);
	cq->ring = ring;
	ibcq->cqe = depth;
	resp.depth = depth;
	resp.carried = carried;
	return qhca_udata_out(udata, &resp, sizeof(resp));

err_ring:
	qhca_ring_free(dev, &ring);
	return ret;
}

int qhca_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct qhca_dev *dev = to_qhca_dev(ibcq->device);
	struct qhca_cq *cq = to_qhca_cq(ibcq);

	/*
	 * Out of the table first: once the device has destroyed it, the
	 * number may be handed out again at once.  No event handler runs for
	 * this CQ once the references are gone.
	 */
	xa_erase_irq(&dev->cq_xa, cq->cqn);
	qhca_cq_put(cq);
	wait_for_completion(&cq->free);

	qhca_cmd_destroy(dev, QHCA_CMD_DESTROY_CQ, cq->cqn, 0);
	qhca_ring_free(dev, &cq->ring);
	atomic_dec(&dev->num_objects);
	return 0;
}

/*
 * CQE opcode to ib_wc_opcode, for the opcodes of the kernel's own work
 * requests; anything else reads as IB_WC_RECV
 */
static const struct {
	bool known;
	enum ib_wc_opcode opcode;
} qhca_wc_opcodes[] = {
	[QHCA_CQE_OP_SEND] = { true, IB_WC_SEND },
	[QHCA_CQE_OP_RDMA_WRITE] = { true, IB_WC_RDMA_WRITE },
	[QHCA_CQE_OP_RDMA_READ] = { true, IB_WC_RDMA_READ },
	[QHCA_CQE_OP_COMP_SWAP] = { true, IB_WC_COMP_SWAP },
	[QHCA_CQE_OP_FETCH_ADD] = { true, IB_WC_FETCH_ADD },
	[QHCA_CQE_OP_LOCAL_INV] = { true, IB_WC_LOCAL_INV },
	[QHCA_CQE_OP_REG_MR] = { true, IB_WC_REG_MR },
	[QHCA_CQE_OP_RECV] = { true, IB_WC_RECV },
	[QHCA_CQE_OP_RECV_RDMA_WITH_IMM] = { true, IB_WC_RECV_RDMA_WITH_IMM },
};

static enum ib_wc_opcode qhca_wc_opcode(u8 opcode)
{
	if (opcode >= ARRAY_SIZE(qhca_wc_opcodes) ||
	    !qhca_wc_opcodes[opcode].known)
		return IB_WC_RECV;
	return qhca_wc_opcodes[opcode].opcode;
}

/* CQE status to ib_wc_status; a value not in the table is a general error */
static const struct {
	bool known;
	enum ib_wc_status status;
} qhca_wc_statuses[] = {
	[QHCA_CQE_SUCCESS] = { true, IB_WC_SUCCESS },
	[QHCA_CQE_LOC_LEN_ERR] = { true, IB_WC_LOC_LEN_ERR },
	[QHCA_CQE_LOC_QP_OP_ERR] = { true, IB_WC_LOC_QP_OP_ERR },
	[QHCA_CQE_LOC_PROT_ERR] = { true, IB_WC_LOC_PROT_ERR },
	[QHCA_CQE_WR_FLUSH_ERR] = { true, IB_WC_WR_FLUSH_ERR },
	[QHCA_CQE_MW_BIND_ERR] = { true, IB_WC_MW_BIND_ERR },
	[QHCA_CQE_BAD_RESP_ERR] = { true, IB_WC_BAD_RESP_ERR },
	[QHCA_CQE_LOC_ACCESS_ERR] = { true, IB_WC_LOC_ACCESS_ERR },
	[QHCA_CQE_REM_INV_REQ_ERR] = { true, IB_WC_REM_INV_REQ_ERR },
	[QHCA_CQE_REM_ACCESS_ERR] = { true, IB_WC_REM_ACCESS_ERR },
	[QHCA_CQE_REM_OP_ERR] = { true, IB_WC_REM_OP_ERR },
	[QHCA_CQE_RETRY_EXC_ERR] = { true, IB_WC_RETRY_EXC_ERR },
	[QHCA_CQE_RNR_RETRY_EXC_ERR] = { true, IB_WC_RNR_RETRY_EXC_ERR },
	[QHCA_CQE_REM_ABORT_ERR] = { true, IB_WC_REM_ABORT_ERR },
	[QHCA_CQE_GENERAL_ERR] = { true, IB_WC_GENERAL_ERR },
};

static enum ib_wc_status qhca_wc_status(u8 status)
{
	if (status >= ARRAY_SIZE(qhca_wc_statuses) ||
	    !qhca_wc_statuses[status].known)
		return IB_WC_GENERAL_ERR;
	return qhca_wc_statuses[status].status;
}

/*
 * Translate one CQE (cq->lock held, interrupts off).  False if its QP is
 * gone: the entry is dropped.
 */
static bool qhca_cqe_to_wc(struct qhca_dev *dev, const struct qhca_cqe *cqe,
			   struct ib_wc *wc)
{
	u32 qpn = le32_to_cpu(cqe->qpn);
	struct qhca_qp *qp;
	bool recv;

	recv = cqe->opcode & QHCA_CQE_OP_RECV;

	/* Holding the table lock keeps the QP from being freed meanwhile */
	xa_lock(&dev->qp_xa);
	qp = xa_load(&dev->qp_xa, qpn);
	if (!qp) {
		xa_unlock(&dev->qp_xa);
		ibdev_dbg(&dev->ibdev, "CQE for QP %u, which is gone\n", qpn);
		return false;
	}
	qhca_wq_completed(qp, !recv, le16_to_cpu(cqe->wqe_index));
	wc->qp = &qp->ibqp;
	xa_unlock(&dev->qp_xa);

	wc->wr_id = le64_to_cpu(cqe->wr_id);
	wc->status = qhca_wc_status(cqe->status);
	wc->opcode = qhca_wc_opcode(cqe->opcode);
	wc->vendor_err = cqe->vendor_err;
	wc->byte_len = le32_to_cpu(cqe->byte_len);
	wc->src_qp = le32_to_cpu(cqe->src_qp) & 0xffffff;
	wc->wc_flags = 0;
	if (cqe->flags & QHCA_CQE_WITH_IMM) {
		wc->wc_flags |= IB_WC_WITH_IMM;
		memcpy(&wc->ex.imm_data, cqe->imm_data,
		       sizeof(wc->ex.imm_data));
	} else if (cqe->flags & QHCA_CQE_WITH_INV) {
		wc->wc_flags |= IB_WC_WITH_INVALIDATE;
		wc->ex.invalidate_rkey = le32_to_cpu(cqe->invalidated_rkey);
	}
	/*
	 * UD and GSI receives: the buffer starts with the 40-byte GRH area,
	 * which holds the IPv6 header, or the IPv4 header in its last 20
	 * bytes; the core's ib_init_ah_attr_from_wc() reads it when told the
	 * header type (the device numbers them as enum rdma_network_type).
	 */
	BUILD_BUG_ON(RDMA_NETWORK_IPV4 != QHCA_NET_ROCE_V2_IPV4);
	BUILD_BUG_ON(RDMA_NETWORK_IPV6 != QHCA_NET_ROCE_V2_IPV6);
	if (cqe->flags & QHCA_CQE_GRH) {
		wc->wc_flags |= IB_WC_GRH;
		if (cqe->network_hdr_type == QHCA_NET_ROCE_V2_IPV4 ||
		    cqe->network_hdr_type == QHCA_NET_ROCE_V2_IPV6) {
			wc->network_hdr_type = cqe->network_hdr_type;
			wc->wc_flags |= IB_WC_WITH_NETWORK_HDR_TYPE;
		}
	}
	wc->pkey_index = 0;
	wc->slid = 0;
	wc->sl = 0;
	wc->dlid_path_bits = 0;
	wc->port_num = QHCA_PORT;
	return true;
}

int qhca_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc)
{
	struct qhca_dev *dev = to_qhca_dev(ibcq->device);
	struct qhca_cq *cq = to_qhca_cq(ibcq);
	unsigned long flags;
	int n = 0;
	u16 start;

	if (cq->user)
		return -EINVAL;

	spin_lock_irqsave(&cq->lock, flags);
	start = cq->ci;
	while (n < num_entries) {
		struct qhca_cqe *cqe = qhca_ring_entry(&cq->ring, cq->ci);

		if (!qhca_owner_ok(READ_ONCE(cqe->owner), cq->ci,
				   cq->ring.depth))
			break;
		dma_rmb();
		cq->ci++;
		if (qhca_cqe_to_wc(dev, cqe, &wc[n]))
			n++;
	}
	if (cq->ci != start)
		qhca_kdb(dev, QHCA_DB_CQ_CI,
			 cq->cqn | (u32)cq->ci << QHCA_DB_IDX_SHIFT);
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

int qhca_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct qhca_dev *dev = to_qhca_dev(ibcq->device);
	struct qhca_cq *cq = to_qhca_cq(ibcq);
	unsigned long irqflags;
	struct qhca_cqe *cqe;
	int ret = 0;
	u32 off;

	off = (flags & IB_CQ_SOLICITED_MASK) == IB_CQ_SOLICITED ?
	      QHCA_DB_CQ_ARM_SOLICITED : QHCA_DB_CQ_ARM;

	spin_lock_irqsave(&cq->lock, irqflags);
	qhca_kdb(dev, off, cq->cqn | (u32)cq->ci << QHCA_DB_IDX_SHIFT);
	if (flags & IB_CQ_REPORT_MISSED_EVENTS) {
		cqe = qhca_ring_entry(&cq->ring, cq->ci);
		if (qhca_owner_ok(READ_ONCE(cqe->owner), cq->ci,
				  cq->ring.depth))
			ret = 1;
	}
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return ret;
}

/*
 * A dead device completes nothing more; the driver flushes a kernel QP's
 * outstanding work requests itself (qhca_qp.c), writing the CQEs the
 * device would have written: WR_FLUSH_ERR, after the valid entries, with
 * the owner bit of their pass.  cq->lock held; false if the CQ is full.
 */
bool qhca_cq_soft_flush_cqe(struct qhca_cq *cq, u32 qpn, __le64 wr_id,
			    bool send, u16 wqe_index)
{
	const u32 depth = cq->ring.depth;
	struct qhca_cqe *cqe, new = {};
	u16 pi = cq->ci;

	lockdep_assert_held(&cq->lock);
	for (;;) {
		if ((u16)(pi - cq->ci) >= depth)
			return false;
		cqe = qhca_ring_entry(&cq->ring, pi);
		if (!qhca_owner_ok(READ_ONCE(cqe->owner), pi, depth))
			break;
		pi++;
	}

	new.wr_id = wr_id;
	new.status = QHCA_CQE_WR_FLUSH_ERR;
	new.opcode = send ? QHCA_CQE_OP_SEND : QHCA_CQE_OP_RECV;
	new.qpn = cpu_to_le32(qpn);
	new.wqe_index = cpu_to_le16(wqe_index);
	new.owner = (pi & depth) ? 0 : QHCA_OWNER_BIT;
	/* Pollers hold cq->lock: the entry is whole when they look */
	memcpy(cqe, &new, sizeof(new));
	return true;
}
