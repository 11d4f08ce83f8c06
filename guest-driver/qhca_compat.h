/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * qhca: the differences between the kernels the driver builds on, from
 * Linux 6.1 (Debian 12) to the newest 6.x Debian ships. The only file of
 * the driver that looks at the kernel version; the rest is written against
 * the newest API and this header gives older kernels what they lack.
 */
#ifndef QHCA_COMPAT_H
#define QHCA_COMPAT_H

#include <linux/version.h>
#include <linux/netdevice.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

/*
 * ib_device_ops.create_cq: since 6.11 it gets the uverbs attribute bundle
 * (the driver's udata is in it), before that the udata itself.
 */
#if KERNEL_VERSION(6, 11, 0) <= LINUX_VERSION_CODE
#define qhca_create_cq_arg uverbs_attr_bundle
static inline struct ib_udata *
qhca_create_cq_udata(struct uverbs_attr_bundle *attrs)
{
	return attrs ? &attrs->driver_udata : NULL;
}
#else
#define qhca_create_cq_arg ib_udata
static inline struct ib_udata *qhca_create_cq_udata(struct ib_udata *udata)
{
	return udata;
}
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

#endif /* QHCA_COMPAT_H */
