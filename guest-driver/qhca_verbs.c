// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * qhca verbs: the ib_device_ops of the qhca RoCEv2 HCA.
 *
 * This slice implements device and port queries, the RoCE GID table,
 * protection domains, user contexts and their doorbell page mmap.  Queue
 * pairs, completion queues and memory regions are not implemented yet:
 * their ops are left unset, so the RDMA core answers -EOPNOTSUPP for them.
 */

#include <linux/mm.h>
#include <linux/slab.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_verbs.h>

#include "qhca.h"
#include "qhca-abi.h"

static int qhca_query_device(struct ib_device *ibdev,
			     struct ib_device_attr *attr,
			     struct ib_udata *udata)
{
	struct qhca_dev *dev = to_qhca_dev(ibdev);

	memset(attr, 0, sizeof(*attr));

	attr->fw_ver = dev->version;
	attr->sys_image_guid = ibdev->node_guid;
	attr->max_mr_size = QHCA_DRV_MAX_MR_SIZE;
	attr->page_size_cap = QHCA_PAGE_SIZE;
	attr->vendor_id = dev->pdev->vendor;
	attr->vendor_part_id = dev->pdev->device;
	attr->hw_ver = dev->pdev->revision;
	attr->max_qp = QHCA_DRV_MAX_QP;
	attr->max_qp_wr = QHCA_DRV_MAX_QP_WR;
	attr->max_send_sge = QHCA_MAX_SGE;
	attr->max_recv_sge = QHCA_MAX_SGE;
	attr->max_sge_rd = QHCA_MAX_SGE;
	attr->max_cq = QHCA_DRV_MAX_CQ;
	attr->max_cqe = QHCA_DRV_MAX_CQE;
	attr->max_mr = QHCA_DRV_MAX_MR;
	attr->max_pd = QHCA_DRV_MAX_PD;
	attr->max_qp_rd_atom = QHCA_DRV_MAX_RD_ATOM;
	attr->max_qp_init_rd_atom = QHCA_DRV_MAX_RD_ATOM;
	attr->max_res_rd_atom = QHCA_DRV_MAX_QP * QHCA_DRV_MAX_RD_ATOM;
	attr->atomic_cap = (dev->caps & QHCA_CAP_ATOMIC) ?
			   IB_ATOMIC_HCA : IB_ATOMIC_NONE;
	attr->max_ah = QHCA_DRV_MAX_AH;
	attr->max_srq = QHCA_DRV_MAX_SRQ;
	attr->max_srq_wr = QHCA_DRV_MAX_SRQ_WR;
	attr->max_srq_sge = QHCA_MAX_SGE;
	attr->max_pkeys = QHCA_PKEY_TABLE_LEN;
	attr->local_ca_ack_delay = 15;

	return 0;
}

static void qhca_get_dev_fw_str(struct ib_device *ibdev, char *str)
{
	struct qhca_dev *dev = to_qhca_dev(ibdev);

	snprintf(str, IB_FW_VERSION_NAME_MAX, "%u.%u", dev->version >> 16,
		 dev->version & 0xffff);
}

static int qhca_query_port(struct ib_device *ibdev, u32 port,
			   struct ib_port_attr *attr)
{
	struct net_device *ndev;
	bool active = false;
	int ret;

	/* The core has zeroed *attr. */
	attr->gid_tbl_len = QHCA_GID_TABLE_LEN;
	attr->pkey_tbl_len = QHCA_PKEY_TABLE_LEN;
	attr->port_cap_flags = IB_PORT_CM_SUP;
	attr->ip_gids = true;
	attr->max_msg_sz = 0x80000000;
	attr->max_mtu = IB_MTU_4096;
	attr->active_mtu = IB_MTU_1024;
	attr->max_vl_num = 1;
	attr->active_width = IB_WIDTH_1X;
	attr->active_speed = IB_SPEED_SDR;

	ndev = ib_device_get_netdev(ibdev, port);
	if (ndev) {
		active = netif_running(ndev) && netif_carrier_ok(ndev);
		attr->active_mtu = iboe_get_mtu(READ_ONCE(ndev->mtu));
		dev_put(ndev);

		ret = ib_get_eth_speed(ibdev, port, &attr->active_speed,
				       &attr->active_width);
		if (ret)
			ibdev_dbg(ibdev, "no link speed (%d)\n", ret);
	}

	if (active) {
		attr->state = IB_PORT_ACTIVE;
		attr->phys_state = IB_PORT_PHYS_STATE_LINK_UP;
	} else {
		attr->state = IB_PORT_DOWN;
		attr->phys_state = IB_PORT_PHYS_STATE_DISABLED;
	}

	return 0;
}

static int qhca_get_port_immutable(struct ib_device *ibdev, u32 port,
				   struct ib_port_immutable *immutable)
{
	immutable->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
	immutable->gid_tbl_len = QHCA_GID_TABLE_LEN;
	immutable->pkey_tbl_len = QHCA_PKEY_TABLE_LEN;
	immutable->max_mad_size = IB_MGMT_MAD_SIZE;

	return 0;
}

static enum rdma_link_layer qhca_get_link_layer(struct ib_device *ibdev,
						u32 port)
{
	return IB_LINK_LAYER_ETHERNET;
}

static int qhca_query_pkey(struct ib_device *ibdev, u32 port, u16 index,
			   u16 *pkey)
{
	if (index >= QHCA_PKEY_TABLE_LEN)
		return -EINVAL;

	*pkey = IB_DEFAULT_PKEY_FULL;
	return 0;
}

static int qhca_add_gid(const struct ib_gid_attr *attr, void **context)
{
	struct qhca_dev *dev = to_qhca_dev(attr->device);
	struct qhca_gid_entry *entry;

	if (attr->index >= QHCA_GID_TABLE_LEN)
		return -EINVAL;
	if (attr->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP)
		return -EOPNOTSUPP;

	mutex_lock(&dev->gid_lock);
	entry = &dev->gids[attr->index];
	entry->gid = attr->gid;
	entry->gid_type = attr->gid_type;
	entry->valid = true;
	mutex_unlock(&dev->gid_lock);

	ibdev_dbg(&dev->ibdev, "GID %u: %pI6\n", attr->index, attr->gid.raw);
	return 0;
}

static int qhca_del_gid(const struct ib_gid_attr *attr, void **context)
{
	struct qhca_dev *dev = to_qhca_dev(attr->device);

	if (attr->index >= QHCA_GID_TABLE_LEN)
		return -EINVAL;

	mutex_lock(&dev->gid_lock);
	memset(&dev->gids[attr->index], 0, sizeof(dev->gids[attr->index]));
	mutex_unlock(&dev->gid_lock);

	ibdev_dbg(&dev->ibdev, "GID %u removed\n", attr->index);
	return 0;
}

static int qhca_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct qhca_dev *dev = to_qhca_dev(ibpd->device);
	struct qhca_pd *pd = to_qhca_pd(ibpd);
	int pdn;

	pdn = ida_alloc_range(&dev->pd_ida, 1, QHCA_DRV_MAX_PD, GFP_KERNEL);
	if (pdn < 0)
		return pdn;

	pd->pdn = pdn;
	return 0;
}

static int qhca_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct qhca_dev *dev = to_qhca_dev(ibpd->device);

	ida_free(&dev->pd_ida, to_qhca_pd(ibpd)->pdn);
	return 0;
}

static int qhca_alloc_ucontext(struct ib_ucontext *ibucontext,
			       struct ib_udata *udata)
{
	struct qhca_ucontext *uctx = to_qhca_ucontext(ibucontext);
	struct qhca_dev *dev = to_qhca_dev(ibucontext->device);
	struct qhca_alloc_ucontext_resp resp = {};
	struct qhca_user_mmap_entry *entry;
	int page;
	int ret;

	page = ida_alloc_range(&dev->db_ida, 1, dev->num_db_pages - 1,
			       GFP_KERNEL);
	if (page < 0)
		return page;

	entry = kzalloc(sizeof(*entry), GFP_KERNEL);
	if (!entry) {
		ida_free(&dev->db_ida, page);
		return -ENOMEM;
	}
	entry->dev = dev;
	entry->db_page = page;
	entry->address = dev->db_bar_start + (phys_addr_t)page * QHCA_PAGE_SIZE;

	ret = rdma_user_mmap_entry_insert(ibucontext, &entry->rdma_entry,
					  PAGE_SIZE);
	if (ret) {
		kfree(entry);
		ida_free(&dev->db_ida, page);
		return ret;
	}
	/* From here on, qhca_mmap_free() releases the entry and its page. */
	uctx->db_entry = &entry->rdma_entry;

	resp.db_mmap_key = rdma_user_mmap_get_offset(&entry->rdma_entry);
	resp.db_page = page;
	resp.max_inline = QHCA_MAX_INLINE;
	resp.sq_wqe_size = sizeof(struct qhca_send_wqe);
	resp.rq_wqe_size = sizeof(struct qhca_recv_wqe);
	resp.cqe_size = sizeof(struct qhca_cqe);
	resp.max_sge = QHCA_MAX_SGE;

	ret = ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
	if (ret) {
		rdma_user_mmap_entry_remove(uctx->db_entry);
		return ret;
	}

	return 0;
}

static void qhca_dealloc_ucontext(struct ib_ucontext *ibucontext)
{
	rdma_user_mmap_entry_remove(to_qhca_ucontext(ibucontext)->db_entry);
}

static void qhca_disassociate_ucontext(struct ib_ucontext *ibucontext)
{
	/*
	 * The RDMA core zaps the doorbell mappings itself; the device holds
	 * no per-context state yet.
	 */
}

static int qhca_mmap(struct ib_ucontext *ibucontext,
		     struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *rdma_entry;
	struct qhca_user_mmap_entry *entry;
	int ret;

	rdma_entry = rdma_user_mmap_entry_get(ibucontext, vma);
	if (!rdma_entry)
		return -EINVAL;

	entry = to_qhca_mmap_entry(rdma_entry);
	ret = rdma_user_mmap_io(ibucontext, vma, PHYS_PFN(entry->address),
				PAGE_SIZE, pgprot_noncached(vma->vm_page_prot),
				rdma_entry);

	rdma_user_mmap_entry_put(rdma_entry);
	return ret;
}

static void qhca_mmap_free(struct rdma_user_mmap_entry *rdma_entry)
{
	struct qhca_user_mmap_entry *entry = to_qhca_mmap_entry(rdma_entry);

	ida_free(&entry->dev->db_ida, entry->db_page);
	kfree(entry);
}

const struct ib_device_ops qhca_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = QHCA_UVERBS_ABI_VERSION,

	.add_gid = qhca_add_gid,
	.alloc_pd = qhca_alloc_pd,
	.alloc_ucontext = qhca_alloc_ucontext,
	.dealloc_pd = qhca_dealloc_pd,
	.dealloc_ucontext = qhca_dealloc_ucontext,
	.del_gid = qhca_del_gid,
	.disassociate_ucontext = qhca_disassociate_ucontext,
	.get_dev_fw_str = qhca_get_dev_fw_str,
	.get_link_layer = qhca_get_link_layer,
	.get_port_immutable = qhca_get_port_immutable,
	.mmap = qhca_mmap,
	.mmap_free = qhca_mmap_free,
	.query_device = qhca_query_device,
	.query_pkey = qhca_query_pkey,
	.query_port = qhca_query_port,

	INIT_RDMA_OBJ_SIZE(ib_pd, qhca_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, qhca_ucontext, ibucontext),
};
