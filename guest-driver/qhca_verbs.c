// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * qhca verbs: device and port queries, the RoCE GID table, protection
 * domains, user contexts and their doorbell page, memory regions, address
 * handles, and the ib_device_ops table.  Completion queues are in
 * qhca_cq.c, queue pairs and shared receive queues in qhca_qp.c.
 */

#include <linux/mm.h>
#include <linux/slab.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_umem.h>
#include <rdma/iter.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include "qhca.h"
#include "qhca-abi.h"

/* ---- udata ---- */

/*
 * Copy the provider's command of @len bytes; a longer one must have only
 * zeros past what this driver knows.
 */
int qhca_udata_in(struct ib_udata *udata, void *cmd, size_t len)
{
	if (udata->inlen < len)
		return -EINVAL;
	if (udata->inlen > len &&
	    !ib_is_udata_cleared(udata, len, udata->inlen - len))
		return -EOPNOTSUPP;
	return ib_copy_from_udata(cmd, udata, len);
}

/* For verbs whose driver command is empty */
int qhca_udata_no_in(struct ib_udata *udata)
{
	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EOPNOTSUPP;
	return 0;
}

/* The response, truncated to what the provider has room for */
int qhca_udata_out(struct ib_udata *udata, void *resp, size_t len)
{
	return ib_copy_to_udata(udata, resp, min(udata->outlen, len));
}

/* The doorbell page of the user context behind @udata (0 for kernel) */
u32 qhca_ucontext_db_page(struct ib_udata *udata)
{
	struct qhca_ucontext *uctx;

	if (!udata)
		return QHCA_KERNEL_DB_PAGE;
	uctx = rdma_udata_to_drv_context(udata, struct qhca_ucontext,
					 ibucontext);
	return uctx->db_page;
}

/* IB access rights and the device's, both ways (QPs, MRs, REG_MR WRs) */
static const struct {
	int ib;
	u32 hw;
} qhca_access_map[] = {
	{ IB_ACCESS_LOCAL_WRITE, QHCA_ACCESS_LOCAL_WRITE },
	{ IB_ACCESS_REMOTE_WRITE, QHCA_ACCESS_REMOTE_WRITE },
	{ IB_ACCESS_REMOTE_READ, QHCA_ACCESS_REMOTE_READ },
	{ IB_ACCESS_REMOTE_ATOMIC, QHCA_ACCESS_REMOTE_ATOMIC },
#ifdef QHCA_HAVE_FLUSH
	{ IB_ACCESS_FLUSH_GLOBAL, QHCA_ACCESS_FLUSH_GLOBAL },
#endif
};

u32 qhca_access(int ib_access)
{
	u32 access = 0;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(qhca_access_map); i++)
		if (ib_access & qhca_access_map[i].ib)
			access |= qhca_access_map[i].hw;
	return access;
}

int qhca_ib_access(u32 access)
{
	int ib = 0;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(qhca_access_map); i++)
		if (access & qhca_access_map[i].hw)
			ib |= qhca_access_map[i].ib;
	return ib;
}

/*
 * IB_ACCESS_FLUSH_PERSISTENT is never granted: the core refuses it (with
 * EOPNOTSUPP) since IB_DEVICE_FLUSH_PERSISTENT is not offered
 */
#ifdef QHCA_HAVE_FLUSH
#define QHCA_ACCESS_FLUSH	IB_ACCESS_FLUSH_GLOBAL
#else
#define QHCA_ACCESS_FLUSH	0
#endif
#define QHCA_MR_ACCESS	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
			 IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC | \
			 QHCA_ACCESS_FLUSH)

/*
 * Rights of a user MR: those above, optional ones (which mean nothing to
 * the device) and, with memory windows, IB_ACCESS_MW_BIND.  QPs take
 * qhca_access(), which has no MW_BIND: the right is the MR's alone.
 */
static bool qhca_user_mr_access_ok(struct qhca_dev *dev, int access)
{
	int ok = QHCA_MR_ACCESS | IB_ACCESS_OPTIONAL;

	if (dev->caps & QHCA_CAP_MW)
		ok |= IB_ACCESS_MW_BIND;
	return !(access & ~ok);
}

static u32 qhca_mr_access(int ib_access)
{
	u32 access = qhca_access(ib_access);

	if (ib_access & IB_ACCESS_MW_BIND)
		access |= QHCA_ACCESS_MW_BIND;
	return access;
}

static u32 qhca_next_key_variant(struct qhca_dev *dev)
{
	return (u32)atomic_inc_return(&dev->key_variant) &
	       QHCA_KEY_VARIANT_MASK;
}

/* ---- device and port ---- */

static int qhca_query_device(struct ib_device *ibdev,
			     struct ib_device_attr *attr,
			     struct ib_udata *udata)
{
	struct qhca_dev *dev = to_qhca_dev(ibdev);
	const struct qhca_device_attr *a = &dev->attr;
	int ret;

	ret = qhca_udata_no_in(udata);
	if (ret)
		return ret;

	memset(attr, 0, sizeof(*attr));
	attr->fw_ver = le64_to_cpu(a->fw_version);
	attr->sys_image_guid = ibdev->node_guid;
	attr->max_mr_size = dev->max_mr_size;
	attr->page_size_cap = le64_to_cpu(a->page_size_cap) &
			      QHCA_PAGE_SIZE_CAP;
	attr->vendor_id = le32_to_cpu(a->vendor_id);
	attr->vendor_part_id = le32_to_cpu(a->vendor_part_id);
	attr->hw_ver = le32_to_cpu(a->hw_version);
	attr->max_qp = le32_to_cpu(a->max_qp);
	attr->max_qp_wr = dev->max_qp_wr;
	attr->device_cap_flags = IB_DEVICE_CURR_QP_STATE_MOD |
				 IB_DEVICE_RC_RNR_NAK_GEN |
				 IB_DEVICE_SYS_IMAGE_GUID |
				 IB_DEVICE_PORT_ACTIVE_EVENT;
	if (dev->caps & QHCA_CAP_FRMR)
		attr->device_cap_flags |= IB_DEVICE_MEM_MGT_EXTENSIONS;
	/* user SRQs only: kernel SRQs keep their size (qhca_modify_srq()) */
	if (dev->caps & QHCA_CAP_SRQ)
		attr->device_cap_flags |= IB_DEVICE_SRQ_RESIZE;
	if (dev->caps & QHCA_CAP_MW)
		attr->device_cap_flags |= IB_DEVICE_MEM_WINDOW |
					  IB_DEVICE_MEM_WINDOW_TYPE_2B;
#ifdef QHCA_HAVE_FLUSH
	if (dev->caps & QHCA_CAP_ATOMIC_WRITE)
		attr->device_cap_flags |= IB_DEVICE_ATOMIC_WRITE;
	if (dev->caps & QHCA_CAP_FLUSH_GLOBAL)
		attr->device_cap_flags |= IB_DEVICE_FLUSH_GLOBAL;
#endif
	attr->max_send_sge = min_t(u32, le32_to_cpu(a->max_sge),
				   QHCA_MAX_SGE);
	attr->max_recv_sge = attr->max_send_sge;
	attr->max_sge_rd = attr->max_send_sge;
	attr->max_cq = le32_to_cpu(a->max_cq);
	attr->max_cqe = dev->max_cqe;
	attr->max_mr = le32_to_cpu(a->max_mr);
	/* windows are entries of the MR table */
	if (dev->caps & QHCA_CAP_MW)
		attr->max_mw = attr->max_mr;
	attr->max_pd = le32_to_cpu(a->max_pd);
	attr->max_qp_rd_atom = dev->max_rd_atom;
	attr->max_qp_init_rd_atom = dev->max_rd_atom;
	attr->max_res_rd_atom = attr->max_qp * dev->max_rd_atom;
	attr->atomic_cap = (dev->caps & QHCA_CAP_ATOMIC) ?
			   IB_ATOMIC_HCA : IB_ATOMIC_NONE;
	attr->max_ah = le32_to_cpu(a->max_ah);
	if (dev->caps & QHCA_CAP_SRQ) {
		attr->max_srq = le32_to_cpu(a->max_srq);
		attr->max_srq_wr = dev->max_srq_wr;
		attr->max_srq_sge = min_t(u32, le32_to_cpu(a->max_srq_sge),
					  QHCA_MAX_SGE);
	}
	if (dev->caps & QHCA_CAP_FRMR)
		attr->max_fast_reg_page_list_len = dev->max_fast_reg_pages;
	if (dev->caps & QHCA_CAP_MCAST) {
		attr->max_mcast_grp = le32_to_cpu(a->max_mcast_grp);
		attr->max_mcast_qp_attach = le32_to_cpu(a->max_mcast_qp_attach);
		attr->max_total_mcast_qp_attach = attr->max_mcast_grp *
						  attr->max_mcast_qp_attach;
	}
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
	struct qhca_dev *dev = to_qhca_dev(ibdev);
	struct qhca_port_attr hw = {};
	struct net_device *ndev;
	bool active = false;
	bool link_up;
	int ret;

	/* The device's own wire; the cached state if it cannot answer */
	ret = qhca_cmd_exec(dev, QHCA_CMD_QUERY_PORT, NULL, 0, &hw,
			    sizeof(hw), NULL, 0);
	if (!ret) {
		link_up = le32_to_cpu(hw.link_up);
		WRITE_ONCE(dev->hw_link_up, link_up);
	} else {
		link_up = READ_ONCE(dev->hw_link_up) && !qhca_dead(dev);
	}

	/* The core has zeroed *attr. */
	attr->gid_tbl_len = QHCA_GID_TABLE_LEN;
	attr->pkey_tbl_len = QHCA_PKEY_TABLE_LEN;
	attr->port_cap_flags = IB_PORT_CM_SUP;
	attr->ip_gids = true;
	attr->max_msg_sz = 0x80000000;
	attr->max_mtu = IB_MTU_4096;
	if (!ret && le32_to_cpu(hw.max_mtu))
		attr->max_mtu = ib_mtu_int_to_enum(le32_to_cpu(hw.max_mtu));
	attr->active_mtu = IB_MTU_1024;
	attr->max_vl_num = 1;
	attr->active_width = IB_WIDTH_1X;
	attr->active_speed = IB_SPEED_SDR;

	ndev = ib_device_get_netdev(ibdev, port);
	if (ndev) {
		active = netif_running(ndev) && netif_carrier_ok(ndev);
		attr->active_mtu = min(iboe_get_mtu(READ_ONCE(ndev->mtu)),
				       attr->max_mtu);
		dev_put(ndev);

		ret = ib_get_eth_speed(ibdev, port, &attr->active_speed,
				       &attr->active_width);
		if (ret)
			ibdev_dbg(ibdev, "no link speed (%d)\n", ret);
	}

	if (active && link_up) {
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

/* The core keeps the GID table; the device gets a copy for its frames. */
static int qhca_add_gid(const struct ib_gid_attr *attr, void **context)
{
	struct qhca_dev *dev = to_qhca_dev(attr->device);
	struct qhca_cmd_gid cmd = {};
	int ret;

	if (attr->index >= QHCA_GID_TABLE_LEN)
		return -EINVAL;
	if (attr->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP)
		return -EOPNOTSUPP;

	cmd.index = cpu_to_le32(attr->index);
	memcpy(cmd.gid, attr->gid.raw, sizeof(cmd.gid));
	ret = qhca_cmd(dev, QHCA_CMD_ADD_GID, &cmd, sizeof(cmd), NULL);
	if (ret)
		return ret;

	ibdev_dbg(&dev->ibdev, "GID %u: %pI6\n", attr->index, attr->gid.raw);
	return 0;
}

static int qhca_del_gid(const struct ib_gid_attr *attr, void **context)
{
	struct qhca_dev *dev = to_qhca_dev(attr->device);
	struct qhca_cmd_gid cmd = {};
	int ret;

	if (attr->index >= QHCA_GID_TABLE_LEN)
		return -EINVAL;

	cmd.index = cpu_to_le32(attr->index);
	ret = qhca_cmd(dev, QHCA_CMD_DEL_GID, &cmd, sizeof(cmd), NULL);
	/* A dead device has no GID table left */
	if (ret && !qhca_dead(dev))
		return ret;

	ibdev_dbg(&dev->ibdev, "GID %u removed\n", attr->index);
	return 0;
}

/* ---- protection domains ---- */

static int qhca_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct qhca_dev *dev = to_qhca_dev(ibpd->device);
	struct qhca_pd *pd = to_qhca_pd(ibpd);
	int ret;

	ret = qhca_udata_no_in(udata);
	if (ret)
		return ret;

	ret = qhca_cmd(dev, QHCA_CMD_ALLOC_PD, NULL, 0, &pd->pdn);
	if (ret)
		return ret;

	atomic_inc(&dev->num_objects);
	return 0;
}

static int qhca_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct qhca_dev *dev = to_qhca_dev(ibpd->device);

	qhca_cmd_destroy(dev, QHCA_CMD_DEALLOC_PD, to_qhca_pd(ibpd)->pdn, 0);
	atomic_dec(&dev->num_objects);
	return 0;
}

/* ---- user contexts ---- */

static int qhca_alloc_ucontext(struct ib_ucontext *ibucontext,
			       struct ib_udata *udata)
{
	struct qhca_ucontext *uctx = to_qhca_ucontext(ibucontext);
	struct qhca_dev *dev = to_qhca_dev(ibucontext->device);
	struct qhca_alloc_ucontext_resp resp = {};
	struct qhca_user_mmap_entry *entry;
	int page;
	int ret;

	ret = qhca_udata_no_in(udata);
	if (ret)
		return ret;
	if (qhca_dead(dev))
		return -EIO;

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
	uctx->db_page = page;

	resp.db_mmap_key = rdma_user_mmap_get_offset(&entry->rdma_entry);
	resp.db_page = page;
	resp.max_inline = le32_to_cpu(dev->attr.max_inline);
	/* Header sizes: the strides are per QP (see qhca_qp.c) */
	resp.sq_wqe_size = sizeof(struct qhca_send_wqe);
	resp.rq_wqe_size = sizeof(struct qhca_recv_wqe);
	resp.cqe_size = sizeof(struct qhca_cqe);
	resp.max_sge = QHCA_MAX_SGE;

	ret = qhca_udata_out(udata, &resp, sizeof(resp));
	if (ret) {
		rdma_user_mmap_entry_remove(uctx->db_entry);
		return ret;
	}

	atomic_inc(&dev->num_objects);
	return 0;
}

static void qhca_dealloc_ucontext(struct ib_ucontext *ibucontext)
{
	struct qhca_dev *dev = to_qhca_dev(ibucontext->device);

	rdma_user_mmap_entry_remove(to_qhca_ucontext(ibucontext)->db_entry);
	atomic_dec(&dev->num_objects);
}

static void qhca_disassociate_ucontext(struct ib_ucontext *ibucontext)
{
	/*
	 * The RDMA core destroys the context's objects (which frees their
	 * device resources and unpins their rings) and zaps the doorbell
	 * mapping itself; nothing else refers to the device.
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

/* ---- memory regions ---- */

static struct qhca_mr *qhca_mr_alloc(void)
{
	return kzalloc(sizeof(struct qhca_mr), GFP_KERNEL);
}

static void qhca_mr_set_key(struct qhca_mr *mr, u32 key)
{
	mr->ibmr.lkey = key;
	mr->ibmr.rkey = key;
}

/* The kernel's DMA MR: guest-physical addresses, no page list */
static struct ib_mr *qhca_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct qhca_dev *dev = to_qhca_dev(ibpd->device);
	struct qhca_cmd_reg_mr cmd = {};
	struct qhca_mr *mr;
	u32 key;
	int ret;

	if (access & ~QHCA_MR_ACCESS)
		return ERR_PTR(-EOPNOTSUPP);

	mr = qhca_mr_alloc();
	if (!mr)
		return ERR_PTR(-ENOMEM);

	cmd.pdn = cpu_to_le32(to_qhca_pd(ibpd)->pdn);
	cmd.access = cpu_to_le32(qhca_access(access));
	cmd.iova = 0;
	/* The device bounds every MR, this one too: see the README */
	cmd.length = cpu_to_le64(dev->max_mr_size);
	cmd.flags = cpu_to_le32(QHCA_MR_PHYS);
	cmd.key_variant = cpu_to_le32(qhca_next_key_variant(dev));
	ret = qhca_cmd(dev, QHCA_CMD_REG_MR, &cmd, sizeof(cmd), &key);
	if (ret) {
		kfree(mr);
		return ERR_PTR(ret);
	}

	qhca_mr_set_key(mr, key);
	atomic_inc(&dev->num_objects);
	return &mr->ibmr;
}

/*
 * Pin @length bytes at @start and describe them for the device: the page
 * list and the page size (the largest the device takes that fits @virt_addr)
 */
static int qhca_mr_pin(struct qhca_dev *dev, u64 start, u64 length,
		       u64 virt_addr, int access, struct ib_umem **umem,
		       struct qhca_pbl *pbl, unsigned long *pgsz)
{
	struct ib_block_iter biter;
	size_t npages;
	u32 i = 0;
	int ret;

	*umem = ib_umem_get_va(&dev->ibdev, start, length, access);
	if (IS_ERR(*umem)) {
		ret = PTR_ERR(*umem);
		*umem = NULL;
		return ret;
	}
	*pgsz = ib_umem_find_best_pgsz(*umem,
				       le64_to_cpu(dev->attr.page_size_cap) &
				       QHCA_PAGE_SIZE_CAP, virt_addr);
	npages = *pgsz ? ib_umem_num_dma_blocks(*umem, *pgsz) : 0;
	ret = -EINVAL;
	if (*pgsz && npages <= QHCA_PBL_MAX_PAGES)
		ret = qhca_pbl_alloc(dev, pbl, npages);
	if (ret) {
		ib_umem_release(*umem);
		*umem = NULL;
		return ret;
	}
	rdma_umem_for_each_dma_block(*umem, &biter, *pgsz)
		qhca_pbl_set(pbl, i++, rdma_block_iter_dma_address(&biter));
	return 0;
}

struct ib_mr *qhca_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
			       u64 virt_addr, int access, struct ib_dmah *dmah,
			       struct ib_udata *udata)
{
	struct qhca_dev *dev = to_qhca_dev(ibpd->device);
	struct qhca_cmd_reg_mr cmd = {};
	unsigned long pgsz;
	struct qhca_pbl pbl;
	struct qhca_mr *mr;
	u32 key;
	int ret;

	if (dmah || !qhca_user_mr_access_ok(dev, access))
		return ERR_PTR(-EOPNOTSUPP);
	if (!length || length > dev->max_mr_size)
		return ERR_PTR(-EINVAL);
	ret = qhca_udata_no_in(udata);
	if (ret)
		return ERR_PTR(ret);

	mr = qhca_mr_alloc();
	if (!mr)
		return ERR_PTR(-ENOMEM);

	ret = qhca_mr_pin(dev, start, length, virt_addr, access, &mr->umem,
			  &pbl, &pgsz);
	if (ret)
		goto err_free;

	cmd.pdn = cpu_to_le32(to_qhca_pd(ibpd)->pdn);
	cmd.access = cpu_to_le32(qhca_mr_access(access));
	cmd.iova = cpu_to_le64(virt_addr);
	cmd.length = cpu_to_le64(length);
	qhca_pbl_desc(&pbl, &cmd.mem, __ffs(pgsz));
	cmd.key_variant = cpu_to_le32(qhca_next_key_variant(dev));
	ret = qhca_cmd(dev, QHCA_CMD_REG_MR, &cmd, sizeof(cmd), &key);
	qhca_pbl_free(dev, &pbl);
	if (ret)
		goto err_umem;

	qhca_mr_set_key(mr, key);
	mr->access = access;
	atomic_inc(&dev->num_objects);
	ibdev_dbg(&dev->ibdev, "MR %#x: %u pages of %lu bytes, %u-level list\n",
		  key, pbl.n, pgsz, cmd.mem.levels);
	return &mr->ibmr;

err_umem:
	ib_umem_release(mr->umem);
err_free:
	kfree(mr);
	return ERR_PTR(ret);
}

/*
 * ibv_rereg_mr(): the MR's PD, rights or memory change in place (the keys
 * stay), each as @flags asks; the device checks and applies all of it or
 * nothing.  A new translation is pinned first and the old one released
 * once the device uses the new.
 */
struct ib_mr *qhca_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				 u64 length, u64 virt_addr, int access,
				 struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct qhca_dev *dev = to_qhca_dev(ibmr->device);
	struct qhca_mr *mr = to_qhca_mr(ibmr);
	struct qhca_cmd_rereg_mr cmd = {};
	struct ib_umem *umem = NULL;
	unsigned long pgsz;
	struct qhca_pbl pbl;
	int ret;

	if (flags & ~IB_MR_REREG_SUPPORTED || !mr->umem)
		return ERR_PTR(-EOPNOTSUPP);
	if ((flags & IB_MR_REREG_ACCESS) &&
	    !qhca_user_mr_access_ok(dev, access))
		return ERR_PTR(-EOPNOTSUPP);
	ret = qhca_udata_no_in(udata);
	if (ret)
		return ERR_PTR(ret);

	cmd.key = cpu_to_le32(ibmr->lkey);
	if (flags & IB_MR_REREG_PD) {
		cmd.what |= cpu_to_le32(QHCA_REREG_PD);
		cmd.pdn = cpu_to_le32(to_qhca_pd(ibpd)->pdn);
	}
	if (flags & IB_MR_REREG_ACCESS) {
		cmd.what |= cpu_to_le32(QHCA_REREG_ACCESS);
		cmd.access = cpu_to_le32(qhca_mr_access(access));
	}
	if (flags & IB_MR_REREG_TRANS) {
		if (!length || length > dev->max_mr_size)
			return ERR_PTR(-EINVAL);
		/* pinned with the rights the MR will have */
		ret = qhca_mr_pin(dev, start, length, virt_addr,
				  (flags & IB_MR_REREG_ACCESS) ?
				  access : mr->access, &umem, &pbl,
				  &pgsz);
		if (ret)
			return ERR_PTR(ret);
		cmd.what |= cpu_to_le32(QHCA_REREG_TRANS);
		cmd.iova = cpu_to_le64(virt_addr);
		cmd.length = cpu_to_le64(length);
		qhca_pbl_desc(&pbl, &cmd.mem, __ffs(pgsz));
	}
	ret = qhca_cmd(dev, QHCA_CMD_REREG_MR, &cmd, sizeof(cmd), NULL);
	if (umem)
		qhca_pbl_free(dev, &pbl);
	if (ret) {
		if (umem)
			ib_umem_release(umem);
		return ERR_PTR(ret);
	}
	if (umem) {
		ib_umem_release(mr->umem);
		mr->umem = umem;
	}
	if (flags & IB_MR_REREG_ACCESS)
		mr->access = access;
	return NULL;
}

/* A fast-registration MR: filled by a REG_MR work request */
static struct ib_mr *qhca_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
				   u32 max_num_sg)
{
	struct qhca_dev *dev = to_qhca_dev(ibpd->device);
	struct qhca_cmd_alloc_mr cmd = {};
	struct qhca_mr *mr;
	u32 key;
	int ret;

	if (type != IB_MR_TYPE_MEM_REG || !(dev->caps & QHCA_CAP_FRMR))
		return ERR_PTR(-EOPNOTSUPP);
	if (!max_num_sg || max_num_sg > dev->max_fast_reg_pages)
		return ERR_PTR(-EINVAL);

	mr = qhca_mr_alloc();
	if (!mr)
		return ERR_PTR(-ENOMEM);

	mr->max_pages = max_num_sg;
	mr->pages = dma_alloc_coherent(&dev->pdev->dev, QHCA_PAGE_SIZE,
				       &mr->pages_dma, GFP_KERNEL);
	if (!mr->pages) {
		ret = -ENOMEM;
		goto err_free;
	}

	cmd.pdn = cpu_to_le32(to_qhca_pd(ibpd)->pdn);
	cmd.max_pages = cpu_to_le32(max_num_sg);
	cmd.key_variant = cpu_to_le32(qhca_next_key_variant(dev));
	ret = qhca_cmd(dev, QHCA_CMD_ALLOC_MR, &cmd, sizeof(cmd), &key);
	if (ret)
		goto err_pages;

	qhca_mr_set_key(mr, key);
	atomic_inc(&dev->num_objects);
	return &mr->ibmr;

err_pages:
	dma_free_coherent(&dev->pdev->dev, QHCA_PAGE_SIZE, mr->pages,
			  mr->pages_dma);
err_free:
	kfree(mr);
	return ERR_PTR(ret);
}

static int qhca_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct qhca_mr *mr = to_qhca_mr(ibmr);

	if (mr->npages >= mr->max_pages)
		return -ENOMEM;
	mr->pages[mr->npages++] = cpu_to_le64(addr);
	return 0;
}

static int qhca_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg,
			  int sg_nents, unsigned int *sg_offset)
{
	struct qhca_mr *mr = to_qhca_mr(ibmr);

	if (!mr->pages)
		return -EINVAL;
	/* The device takes 4 KiB .. 1 GiB pages */
	if (!(ibmr->page_size & QHCA_PAGE_SIZE_CAP) ||
	    !is_power_of_2(ibmr->page_size))
		return -EINVAL;
	mr->npages = 0;
	return ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, qhca_set_page);
}

/*
 * An MR with memory windows bound stays (-EBUSY, the device's answer), as
 * the IBA has it; any other failure is the device's, and the MR goes
 */
static int qhca_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct qhca_dev *dev = to_qhca_dev(ibmr->device);
	struct qhca_mr *mr = to_qhca_mr(ibmr);

	if (qhca_cmd_destroy(dev, QHCA_CMD_DEREG_MR, ibmr->lkey, 0) == -EBUSY)
		return -EBUSY;
	ib_umem_release(mr->umem);
	if (mr->pages)
		dma_free_coherent(&dev->pdev->dev, QHCA_PAGE_SIZE, mr->pages,
				  mr->pages_dma);
	kfree(mr);
	atomic_dec(&dev->num_objects);
	return 0;
}

/* ---- memory windows ---- */

/*
 * ibv_alloc_mw(): an unbound window of the PD, an entry of the MR table
 * whose key the device chooses.  Binding is a work request (BIND_MW) that
 * the provider posts; the kernel neither binds nor learns the new keys.
 */
static int qhca_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct qhca_dev *dev = to_qhca_dev(ibmw->device);
	struct qhca_cmd_alloc_mw cmd = {};
	u32 key;
	int ret;

	if (!(dev->caps & QHCA_CAP_MW))
		return -EOPNOTSUPP;
	ret = qhca_udata_no_in(udata);
	if (ret)
		return ret;

	switch (ibmw->type) {
	case IB_MW_TYPE_1:
		cmd.type = QHCA_MW_TYPE_1;
		break;
	case IB_MW_TYPE_2:
		cmd.type = QHCA_MW_TYPE_2;
		break;
	default:
		return -EINVAL;
	}
	cmd.pdn = cpu_to_le32(to_qhca_pd(ibmw->pd)->pdn);
	ret = qhca_cmd(dev, QHCA_CMD_ALLOC_MW, &cmd, sizeof(cmd), &key);
	if (ret)
		return ret;

	ibmw->rkey = key;
	atomic_inc(&dev->num_objects);
	return 0;
}

/* Bound or not: the device unbinds it (its MR counts it no more) */
static int qhca_dealloc_mw(struct ib_mw *ibmw)
{
	struct qhca_dev *dev = to_qhca_dev(ibmw->device);

	qhca_cmd_destroy(dev, QHCA_CMD_DEALLOC_MW, ibmw->rkey, 0);
	atomic_dec(&dev->num_objects);
	return 0;
}

/* ---- address handles ---- */

/* May be called in atomic context (without RDMA_CREATE_AH_SLEEPABLE) */
static int qhca_create_ah(struct ib_ah *ibah,
			  struct rdma_ah_init_attr *init_attr,
			  struct ib_udata *udata)
{
	struct qhca_dev *dev = to_qhca_dev(ibah->device);
	struct rdma_ah_attr *ah_attr = init_attr->ah_attr;
	struct qhca_cmd_create_ah cmd = {};
	struct qhca_ah *ah = to_qhca_ah(ibah);
	const struct ib_global_route *grh;
	unsigned int flags = 0;
	int ret;

	if (ah_attr->type != RDMA_AH_ATTR_TYPE_ROCE ||
	    !(rdma_ah_get_ah_flags(ah_attr) & IB_AH_GRH))
		return -EINVAL;
	grh = rdma_ah_read_grh(ah_attr);
	if (!grh->sgid_attr || grh->sgid_attr->index >= QHCA_GID_TABLE_LEN)
		return -EINVAL;
	ret = qhca_udata_no_in(udata);
	if (ret)
		return ret;

	cmd.pdn = cpu_to_le32(to_qhca_pd(ibah->pd)->pdn);
	cmd.sgid_index = grh->sgid_attr->index;
	cmd.hop_limit = grh->hop_limit;
	cmd.traffic_class = grh->traffic_class;
	/*
	 * 20 bits in a GRH (ibv_create_ah from UCX passes 0xffffffff); the
	 * device refuses more, so drop them as modify_qp does
	 */
	cmd.flow_label = cpu_to_le32(grh->flow_label & 0xfffff);
	memcpy(cmd.dmac, ah_attr->roce.dmac, ETH_ALEN);
	memcpy(cmd.dgid, grh->dgid.raw, sizeof(cmd.dgid));

	if (!(init_attr->flags & RDMA_CREATE_AH_SLEEPABLE))
		flags |= QHCA_CMD_ATOMIC;
	ret = qhca_cmd_exec(dev, QHCA_CMD_CREATE_AH, &cmd, sizeof(cmd), NULL,
			    0, &ah->ahn, flags);
	if (ret)
		return ret;

	if (udata) {
		struct qhca_create_ah_resp resp = { .ahn = ah->ahn };

		ret = qhca_udata_out(udata, &resp, sizeof(resp));
		if (ret) {
			qhca_cmd_destroy(dev, QHCA_CMD_DESTROY_AH, ah->ahn, 0);
			return ret;
		}
	}

	atomic_inc(&dev->num_objects);
	return 0;
}

/*
 * Without RDMA_DESTROY_AH_SLEEPABLE (atomic context) the command is only
 * posted: commands execute in order, so a later DEALLOC_PD finds the AH
 * gone.
 */
static int qhca_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	struct qhca_dev *dev = to_qhca_dev(ibah->device);

	qhca_cmd_destroy(dev, QHCA_CMD_DESTROY_AH, to_qhca_ah(ibah)->ahn,
			 (flags & RDMA_DESTROY_AH_SLEEPABLE) ? 0 :
			 QHCA_CMD_NOWAIT);
	atomic_dec(&dev->num_objects);
	return 0;
}

/* ---- multicast ---- */

/*
 * The RDMA core has checked that the QP is UD and the GID multicast
 * (IPv6 ff00::/8 or IPv4-mapped 224.0.0.0/4); the device checks again and
 * holds to its limits (-ENOMEM: too many groups, or QPs in the group).
 * The LID means nothing on RoCE.
 */
static int qhca_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 opcode)
{
	struct qhca_dev *dev = to_qhca_dev(ibqp->device);
	struct qhca_cmd_mcast cmd = {};

	if (!(dev->caps & QHCA_CAP_MCAST))
		return -EOPNOTSUPP;
	cmd.qpn = cpu_to_le32(to_qhca_qp(ibqp)->qpn);
	memcpy(cmd.gid, gid->raw, sizeof(cmd.gid));
	return qhca_cmd_exec(dev, opcode, &cmd, sizeof(cmd), NULL, 0, NULL, 0);
}

static int qhca_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	return qhca_mcast(ibqp, gid, QHCA_CMD_ATTACH_MCAST);
}

static int qhca_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	return qhca_mcast(ibqp, gid, QHCA_CMD_DETACH_MCAST);
}

const struct ib_device_ops qhca_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = QHCA_UVERBS_ABI_VERSION,

	.add_gid = qhca_add_gid,
	.alloc_hw_port_stats = qhca_alloc_hw_port_stats,
	.alloc_mr = qhca_alloc_mr,
	.alloc_mw = qhca_alloc_mw,
	.alloc_pd = qhca_alloc_pd,
	.alloc_ucontext = qhca_alloc_ucontext,
	.attach_mcast = qhca_attach_mcast,
	.create_ah = qhca_create_ah,
	.create_cq = qhca_op_create_cq,
	.create_qp = qhca_create_qp,
	.create_srq = qhca_create_srq,
	.create_user_ah = qhca_create_ah,
	.dealloc_mw = qhca_dealloc_mw,
	.dealloc_pd = qhca_dealloc_pd,
	.dealloc_ucontext = qhca_dealloc_ucontext,
	.del_gid = qhca_del_gid,
	.dereg_mr = qhca_dereg_mr,
	.destroy_ah = qhca_destroy_ah,
	.destroy_cq = qhca_destroy_cq,
	.destroy_qp = qhca_destroy_qp,
	.destroy_srq = qhca_destroy_srq,
	.detach_mcast = qhca_detach_mcast,
	.disassociate_ucontext = qhca_disassociate_ucontext,
	.fill_res_cq_entry = qhca_fill_res_cq_entry,
	.fill_res_qp_entry = qhca_fill_res_qp_entry,
	.get_dev_fw_str = qhca_get_dev_fw_str,
	.get_dma_mr = qhca_get_dma_mr,
	.get_hw_stats = qhca_get_hw_stats,
	.get_link_layer = qhca_get_link_layer,
	.get_port_immutable = qhca_get_port_immutable,
	.map_mr_sg = qhca_map_mr_sg,
	.mmap = qhca_mmap,
	.mmap_free = qhca_mmap_free,
	.modify_qp = qhca_modify_qp,
	.modify_srq = qhca_modify_srq,
	.poll_cq = qhca_poll_cq,
	.post_recv = qhca_post_recv,
	.post_send = qhca_post_send,
	.post_srq_recv = qhca_post_srq_recv,
	.query_device = qhca_query_device,
	.query_pkey = qhca_query_pkey,
	.query_port = qhca_query_port,
	.query_qp = qhca_query_qp,
	.query_srq = qhca_query_srq,
	.reg_user_mr = qhca_op_reg_user_mr,
	.rereg_user_mr = qhca_rereg_user_mr,
	.req_notify_cq = qhca_req_notify_cq,
	.QHCA_RESIZE_CQ_OP = qhca_op_resize_cq,

	INIT_RDMA_OBJ_SIZE(ib_ah, qhca_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, qhca_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_mw, qhca_mw, ibmw),
	INIT_RDMA_OBJ_SIZE(ib_pd, qhca_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, qhca_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_srq, qhca_srq, ibsrq),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, qhca_ucontext, ibucontext),
};
