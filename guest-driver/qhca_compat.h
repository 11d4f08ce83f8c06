/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * qhca: the differences between the kernels the driver builds on, from
 * Linux 6.1 (Debian 12) over 6.12 (Debian 13) to 7.3 (trixie-backports).
 * The only file of the driver that looks at the kernel version: the rest is
 * written against the newest API, and this header gives older kernels what
 * they lack. Included at the end of qhca.h.
 *
 * qhca_op_*: what the ib_device_ops table takes on this kernel, the
 * driver's function itself or a wrapper for an older signature.
 */
#ifndef QHCA_COMPAT_H
#define QHCA_COMPAT_H

#include <linux/version.h>
#include <linux/netdevice.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

/*
 * create_cq gets the uverbs attribute bundle since 6.11, the udata before
 * (which the core always embedded in a bundle; NULL for kernel CQs).
 */
#if KERNEL_VERSION(6, 11, 0) > LINUX_VERSION_CODE
static inline int qhca_op_create_cq(struct ib_cq *ibcq,
				    const struct ib_cq_init_attr *attr,
				    struct ib_udata *udata)
{
	return qhca_create_cq(ibcq, attr, udata ?
			      rdma_udata_to_uverbs_attr_bundle(udata) : NULL);
}
#else
#define qhca_op_create_cq qhca_create_cq
#endif

/*
 * The user CQ resize operation: resize_user_cq(cq, unsigned int cqe, udata)
 * in newer kernels, resize_cq(cq, int cqe, udata) before. Which one the
 * headers have is found by the Kbuild (QHCA_HAVE_RESIZE_USER_CQ), not by
 * the version: the rename is recent.
 */
#ifdef QHCA_HAVE_RESIZE_USER_CQ
static inline int qhca_op_resize_cq(struct ib_cq *ibcq, unsigned int cqe,
				    struct ib_udata *udata)
{
	return cqe > INT_MAX ? -EINVAL : qhca_resize_cq(ibcq, cqe, udata);
}

#define QHCA_RESIZE_CQ_OP	resize_user_cq
#else
#define qhca_op_resize_cq qhca_resize_cq
#define QHCA_RESIZE_CQ_OP	resize_cq
#endif

#if KERNEL_VERSION(6, 12, 0) > LINUX_VERSION_CODE
/*
 * ib_device_get_netdev() is exported since 6.12. Before, the same from the
 * port data the core keeps (the driver sets the netdev with
 * ib_device_set_netdev() and has no get_netdev op).
 */
static inline struct net_device *ib_device_get_netdev(struct ib_device *ibdev,
						      u32 port)
{
	struct ib_port_data *pdata;
	struct net_device *ndev;

	if (!rdma_is_port_valid(ibdev, port))
		return NULL;
	pdata = &ibdev->port_data[port];
	spin_lock(&pdata->netdev_lock);
	ndev = rcu_dereference_protected(pdata->netdev,
					 lockdep_is_held(&pdata->netdev_lock));
	if (ndev)
		dev_hold(ndev);
	spin_unlock(&pdata->netdev_lock);
	if (ndev && ndev->reg_state != NETREG_REGISTERED) {
		dev_put(ndev);
		return NULL;
	}
	return ndev;
}

/* rdma_roce_rescan_port() is new in 6.12; the device has one port. */
static inline void rdma_roce_rescan_port(struct ib_device *ibdev, u32 port)
{
	rdma_roce_rescan_device(ibdev);
}
#endif

/* reg_user_mr gets a DMA handle (struct ib_dmah) since 6.17 */
#if KERNEL_VERSION(6, 17, 0) > LINUX_VERSION_CODE
static inline struct ib_mr *qhca_op_reg_user_mr(struct ib_pd *ibpd, u64 start,
						u64 length, u64 virt_addr,
						int access,
						struct ib_udata *udata)
{
	return qhca_reg_user_mr(ibpd, start, length, virt_addr, access, NULL,
				udata);
}
#else
#define qhca_op_reg_user_mr qhca_reg_user_mr
#endif

/*
 * ib_umem_get() is called ib_umem_get_va() since 7.2 (rdma-next, May 2026:
 * "RDMA/umem: Rename ib_umem_get() to ib_umem_get_va()").
 */
#if KERNEL_VERSION(7, 2, 0) > LINUX_VERSION_CODE
static inline struct ib_umem *ib_umem_get_va(struct ib_device *device,
					     unsigned long addr, size_t size,
					     int access)
{
	return ib_umem_get(device, addr, size, access);
}
#endif

#endif /* QHCA_COMPAT_H */
