// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * qhca: PCI probe/remove, device bring-up, and the pairing of the RDMA
 * device with the net_device that carries its IP addresses.
 *
 * The device publishes a MAC address; the guest's Ethernet interface with
 * the same permanent MAC (a virtio-net) is bound to port 1 with
 * ib_device_set_netdev(), and the RoCEv2 GIDs come from its IP addresses.
 * The netdev may appear before or after this driver probes.
 */

#include <linux/etherdevice.h>
#include <linux/interrupt.h>
#include <linux/iopoll.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/rtnetlink.h>

#include "qhca.h"

MODULE_DESCRIPTION("qhca software RoCEv2 HCA driver");
MODULE_LICENSE("Dual BSD/GPL");

#define QHCA_REG_TIMEOUT_US	(100 * USEC_PER_MSEC)

static int qhca_reset(struct qhca_dev *dev)
{
	u32 ctrl;

	qhca_reg_write(dev, QHCA_REG_CTRL, QHCA_CTRL_RESET);
	return readl_poll_timeout(dev->regs + QHCA_REG_CTRL, ctrl,
				  !(ctrl & QHCA_CTRL_RESET), 10,
				  QHCA_REG_TIMEOUT_US);
}

static int qhca_enable(struct qhca_dev *dev)
{
	u32 status;
	int ret;

	qhca_reg_write(dev, QHCA_REG_CTRL, QHCA_CTRL_ENABLE);
	ret = readl_poll_timeout(dev->regs + QHCA_REG_STATUS, status,
				 status & (QHCA_STATUS_READY |
					   QHCA_STATUS_FATAL),
				 10, QHCA_REG_TIMEOUT_US);
	if (!ret && (status & QHCA_STATUS_FATAL)) {
		dev_err(&dev->pdev->dev, "device fatal error %u\n",
			qhca_reg_read(dev, QHCA_REG_FATAL_CODE));
		return -EIO;
	}
	if (ret)
		dev_err(&dev->pdev->dev, "device did not become ready\n");
	return ret;
}

/* ---- netdev pairing (all of it runs under the RTNL) ---- */

static bool qhca_netdev_matches(struct qhca_dev *dev, struct net_device *ndev)
{
	return ndev->type == ARPHRD_ETHER && ndev->addr_len == ETH_ALEN &&
	       ether_addr_equal_unaligned(ndev->perm_addr, dev->mac);
}

static void qhca_port_event(struct qhca_dev *dev, enum ib_event_type type)
{
	struct ib_event event = {
		.device = &dev->ibdev,
		.element.port_num = QHCA_PORT,
		.event = type,
	};

	ib_dispatch_event(&event);
}

/* Report a port state change, if there is one, as an async event. */
static void qhca_update_port_state(struct qhca_dev *dev)
{
	struct net_device *ndev = dev->netdev;
	enum ib_port_state state = IB_PORT_DOWN;

	ASSERT_RTNL();

	if (ndev && netif_running(ndev) && netif_carrier_ok(ndev) &&
	    READ_ONCE(dev->hw_link_up) && !qhca_dead(dev))
		state = IB_PORT_ACTIVE;
	if (state == dev->port_state)
		return;

	dev->port_state = state;
	ibdev_dbg(&dev->ibdev, "port %u %s\n", QHCA_PORT,
		  state == IB_PORT_ACTIVE ? "active" : "down");
	qhca_port_event(dev, state == IB_PORT_ACTIVE ? IB_EVENT_PORT_ACTIVE :
						      IB_EVENT_PORT_ERR);
}

/*
 * The paired netdev's MAC (ip link set DEV address ...) should be the
 * device's: the peers resolve the IP addresses of the RoCEv2 GIDs to the
 * netdev's MAC and send their RDMA frames there, where the device, which
 * takes only frames to its own MAC, never sees them. Warn once per device
 * with both MACs; the port state is the netdev's as before.
 */
static void qhca_check_netdev_mac(struct qhca_dev *dev,
				  struct net_device *ndev)
{
	if (ether_addr_equal_unaligned(ndev->dev_addr, dev->mac)) {
		if (test_bit(QHCA_DEV_WARNED_MAC_DIFFERS, &dev->flags))
			ibdev_info(&dev->ibdev,
				   "netdev %s has the device's MAC %pM again\n",
				   netdev_name(ndev), dev->mac);
		return;
	}
	if (test_and_set_bit(QHCA_DEV_WARNED_MAC_DIFFERS, &dev->flags))
		return;
	ibdev_warn(&dev->ibdev,
		   "netdev %s MAC %pM differs from the device's MAC %pM: RDMA frames sent to %pM do not reach port %u (set it back with: ip link set %s address %pM)\n",
		   netdev_name(ndev), ndev->dev_addr, dev->mac,
		   ndev->dev_addr, QHCA_PORT, netdev_name(ndev), dev->mac);
}

/*
 * No netdev has the device's MAC (a missing or different mac= on the
 * guest NIC or on the qhca device): say so once per device, with the MAC
 * and the Ethernet netdevs there are, instead of a port silently DOWN.
 */
static void qhca_pair_check(struct work_struct *work)
{
	struct qhca_dev *dev = container_of(to_delayed_work(work),
					    struct qhca_dev, pair_check_work);
	struct net_device *ndev;
	char others[160];
	int len = 0;

	if (test_bit(QHCA_DEV_UNREGISTERING, &dev->flags))
		return;
	rtnl_lock();
	if (dev->netdev ||
	    test_and_set_bit(QHCA_DEV_WARNED_NO_NETDEV, &dev->flags)) {
		rtnl_unlock();
		return;
	}
	others[0] = '\0';
	for_each_netdev(&init_net, ndev) {
		if (ndev->type != ARPHRD_ETHER || ndev->addr_len != ETH_ALEN)
			continue;
		len += scnprintf(others + len, sizeof(others) - len, " %s %pM",
				 netdev_name(ndev), ndev->perm_addr);
	}
	ibdev_warn(&dev->ibdev,
		   "no netdev has the device's MAC %pM: port %u stays DOWN until one does (give the guest NIC and the qhca device the same mac=); Ethernet netdevs (permanent MAC):%s\n",
		   dev->mac, QHCA_PORT, len ? others : " none");
	rtnl_unlock();
}

static void qhca_bind_netdev(struct qhca_dev *dev, struct net_device *ndev)
{
	int ret;

	ret = ib_device_set_netdev(&dev->ibdev, ndev, QHCA_PORT);
	if (ret) {
		ibdev_warn(&dev->ibdev, "cannot bind netdev %s: %d\n",
			   netdev_name(ndev), ret);
		return;
	}

	dev->netdev = ndev;
	ibdev_info(&dev->ibdev, "bound to netdev %s\n", netdev_name(ndev));
	qhca_check_netdev_mac(dev, ndev);
	qhca_update_port_state(dev);

	/*
	 * The core adds GIDs for addresses that appear from now on; the ones
	 * the netdev already has are picked up by a rescan, which takes the
	 * RTNL itself and so runs from a work item.
	 */
	schedule_work(&dev->gid_rescan_work);
}

static void qhca_unbind_netdev(struct qhca_dev *dev)
{
	struct net_device *ndev = dev->netdev;
	int ret;

	ret = ib_device_set_netdev(&dev->ibdev, NULL, QHCA_PORT);
	if (ret)
		ibdev_warn(&dev->ibdev, "cannot unbind netdev %s: %d\n",
			   netdev_name(ndev), ret);

	dev->netdev = NULL;
	ibdev_info(&dev->ibdev, "unbound from netdev %s\n", netdev_name(ndev));
	qhca_update_port_state(dev);
	/* A netdev of this MAC may come back; warn if none does. */
	if (!test_bit(QHCA_DEV_UNREGISTERING, &dev->flags))
		mod_delayed_work(system_wq, &dev->pair_check_work,
				 msecs_to_jiffies(QHCA_PAIR_WAIT_MS));
}

static int qhca_netdev_event(struct notifier_block *nb, unsigned long event,
			     void *ptr)
{
	struct qhca_dev *dev = container_of(nb, struct qhca_dev, netdev_nb);
	struct net_device *ndev = netdev_notifier_info_to_dev(ptr);

	switch (event) {
	case NETDEV_REGISTER:
		if (!qhca_netdev_matches(dev, ndev))
			break;
		if (dev->netdev)
			ibdev_warn(&dev->ibdev,
				   "netdev %s has MAC %pM too; staying on %s\n",
				   netdev_name(ndev), dev->mac,
				   netdev_name(dev->netdev));
		else
			qhca_bind_netdev(dev, ndev);
		break;
	case NETDEV_UNREGISTER:
		if (ndev == dev->netdev)
			qhca_unbind_netdev(dev);
		break;
	case NETDEV_UP:
	case NETDEV_DOWN:
	case NETDEV_CHANGE:
		if (ndev == dev->netdev)
			qhca_update_port_state(dev);
		break;
	case NETDEV_CHANGEADDR:
		if (ndev == dev->netdev)
			qhca_check_netdev_mac(dev, ndev);
		break;
	case NETDEV_CHANGEMTU:
		/* query_port reads the MTU from the netdev each time. */
		if (ndev == dev->netdev)
			ibdev_dbg(&dev->ibdev, "netdev %s MTU %u\n",
				  netdev_name(ndev), READ_ONCE(ndev->mtu));
		break;
	default:
		break;
	}

	return NOTIFY_DONE;
}

static void qhca_gid_rescan(struct work_struct *work)
{
	struct qhca_dev *dev = container_of(work, struct qhca_dev,
					    gid_rescan_work);

	rdma_roce_rescan_port(&dev->ibdev, QHCA_PORT);
}

/* The device's link changed (async event) */
static void qhca_port_work(struct work_struct *work)
{
	struct qhca_dev *dev = container_of(work, struct qhca_dev, port_work);

	if (test_bit(QHCA_DEV_UNREGISTERING, &dev->flags))
		return;
	rtnl_lock();
	ibdev_info(&dev->ibdev, "device link %s\n",
		   READ_ONCE(dev->hw_link_up) ? "up" : "down");
	qhca_update_port_state(dev);
	rtnl_unlock();
}

/* The device is dead (command timeout or fatal error event) */
static void qhca_fatal_work(struct work_struct *work)
{
	struct qhca_dev *dev = container_of(work, struct qhca_dev, fatal_work);
	struct ib_event event = {
		.device = &dev->ibdev,
		.element.port_num = QHCA_PORT,
		.event = IB_EVENT_DEVICE_FATAL,
	};

	if (test_bit(QHCA_DEV_UNREGISTERING, &dev->flags))
		return;
	ib_dispatch_event(&event);
	rtnl_lock();
	qhca_update_port_state(dev);
	rtnl_unlock();
}

/* ---- RDMA device ---- */

static int qhca_ib_register(struct qhca_dev *dev)
{
	struct ib_device *ibdev = &dev->ibdev;
	int ret;

	ibdev->node_type = RDMA_NODE_IB_CA;
	ibdev->phys_port_cnt = 1;
	/* Vector 0 is the async vector; the others are for completions. */
	ibdev->num_comp_vectors = dev->num_ceqs;
	ibdev->dev.parent = &dev->pdev->dev;
	strscpy(ibdev->node_desc, QHCA_NODE_DESC, sizeof(ibdev->node_desc));
	/* EUI-64 from the MAC, in network order (QUERY_DEVICE) */
	memcpy(&ibdev->node_guid, &dev->attr.node_guid,
	       sizeof(ibdev->node_guid));
	ib_set_device_ops(ibdev, &qhca_dev_ops);

	ret = ib_register_device(ibdev, "qhca%d", &dev->pdev->dev);
	if (ret) {
		dev_err(&dev->pdev->dev, "cannot register RDMA device: %d\n",
			ret);
		return ret;
	}

	/* Replays NETDEV_REGISTER (and UP) for the netdevs that exist. */
	dev->netdev_nb.notifier_call = qhca_netdev_event;
	ret = register_netdevice_notifier(&dev->netdev_nb);
	if (ret) {
		ibdev_err(ibdev, "cannot register netdev notifier: %d\n", ret);
		cancel_work_sync(&dev->gid_rescan_work);
		ib_unregister_device(ibdev);
		return ret;
	}
	/* The replay found no netdev of the MAC: warn if none comes. */
	rtnl_lock();
	if (!dev->netdev)
		mod_delayed_work(system_wq, &dev->pair_check_work,
				 msecs_to_jiffies(QHCA_PAIR_WAIT_MS));
	rtnl_unlock();

	return 0;
}

static void qhca_ib_unregister(struct qhca_dev *dev)
{
	/* No more events from the work items */
	set_bit(QHCA_DEV_UNREGISTERING, &dev->flags);
	cancel_work_sync(&dev->port_work);
	cancel_work_sync(&dev->fatal_work);
	/* Replays NETDEV_UNREGISTER, which unbinds the netdev. */
	unregister_netdevice_notifier(&dev->netdev_nb);
	cancel_delayed_work_sync(&dev->pair_check_work);
	cancel_work_sync(&dev->gid_rescan_work);
	ib_unregister_device(&dev->ibdev);
}

/* ---- PCI ---- */

static int qhca_map_bars(struct qhca_dev *dev)
{
	struct pci_dev *pdev = dev->pdev;

	if (!(pci_resource_flags(pdev, QHCA_REG_BAR) & IORESOURCE_MEM) ||
	    pci_resource_len(pdev, QHCA_REG_BAR) < QHCA_REG_BAR_SIZE ||
	    !(pci_resource_flags(pdev, QHCA_DB_BAR) & IORESOURCE_MEM) ||
	    pci_resource_len(pdev, QHCA_DB_BAR) < 2 * QHCA_PAGE_SIZE) {
		dev_err(&pdev->dev, "unexpected BAR layout\n");
		return -ENODEV;
	}

	dev->regs = pci_iomap(pdev, QHCA_REG_BAR, QHCA_REG_BAR_SIZE);
	if (!dev->regs)
		return -ENOMEM;

	dev->kdb = pci_iomap_range(pdev, QHCA_DB_BAR,
				   QHCA_KERNEL_DB_PAGE * QHCA_PAGE_SIZE,
				   QHCA_PAGE_SIZE);
	if (!dev->kdb) {
		pci_iounmap(pdev, dev->regs);
		return -ENOMEM;
	}

	dev->db_bar_start = pci_resource_start(pdev, QHCA_DB_BAR);
	return 0;
}

static void qhca_unmap_bars(struct qhca_dev *dev)
{
	pci_iounmap(dev->pdev, dev->kdb);
	pci_iounmap(dev->pdev, dev->regs);
}

/* Check the version, reset the device and read its identity. */
static int qhca_hw_init(struct qhca_dev *dev)
{
	struct pci_dev *pdev = dev->pdev;
	u32 lo, hi, pages, bar_pages;
	int ret;

	dev->version = qhca_reg_read(dev, QHCA_REG_VERSION);
	if ((dev->version >> 16) != QHCA_VERSION_MAJOR) {
		dev_err(&pdev->dev,
			"device interface version %#x, driver needs %u.x\n",
			dev->version, QHCA_VERSION_MAJOR);
		return -ENODEV;
	}

	ret = qhca_reset(dev);
	if (ret) {
		dev_err(&pdev->dev, "device reset timed out\n");
		return ret;
	}

	dev->caps = qhca_reg_read(dev, QHCA_REG_CAPS);

	lo = qhca_reg_read(dev, QHCA_REG_MAC_LO);
	hi = qhca_reg_read(dev, QHCA_REG_MAC_HI);
	dev->mac[0] = lo;
	dev->mac[1] = lo >> 8;
	dev->mac[2] = lo >> 16;
	dev->mac[3] = lo >> 24;
	dev->mac[4] = hi;
	dev->mac[5] = hi >> 8;
	if (!is_valid_ether_addr(dev->mac)) {
		dev_err(&pdev->dev, "invalid MAC address %pM\n", dev->mac);
		return -EINVAL;
	}

	pages = qhca_reg_read(dev, QHCA_REG_NUM_DB_PAGES);
	bar_pages = pci_resource_len(pdev, QHCA_DB_BAR) / QHCA_PAGE_SIZE;
	dev->num_db_pages = min(pages, bar_pages);
	if (dev->num_db_pages < 2) {
		dev_err(&pdev->dev, "%u doorbell pages, need at least 2\n",
			pages);
		return -ENODEV;
	}

	return 0;
}

static int qhca_irq_init(struct qhca_dev *dev)
{
	struct pci_dev *pdev = dev->pdev;
	u32 nvec;
	int ret;

	/* The async vector, and a completion vector per CPU */
	nvec = qhca_reg_read(dev, QHCA_REG_NUM_VECTORS);
	nvec = min3(nvec, (u32)QHCA_MSIX_VECTORS, num_online_cpus() + 1);
	if (nvec < 2) {
		dev_err(&pdev->dev, "%u MSI-X vectors, need 2\n", nvec);
		return -ENODEV;
	}

	ret = pci_alloc_irq_vectors(pdev, 2, nvec, PCI_IRQ_MSIX);
	if (ret < 0) {
		dev_err(&pdev->dev, "cannot allocate MSI-X vectors: %d\n",
			ret);
		return ret;
	}
	dev->num_vectors = ret;

	ret = pci_request_irq(pdev, QHCA_MSIX_VEC_ASYNC, qhca_async_irq, NULL,
			      dev, "qhca-async@pci:%s", pci_name(pdev));
	if (ret) {
		dev_err(&pdev->dev, "cannot request the async interrupt: %d\n",
			ret);
		pci_free_irq_vectors(pdev);
		return ret;
	}

	return 0;
}

static void qhca_irq_uninit(struct qhca_dev *dev)
{
	pci_free_irq(dev->pdev, QHCA_MSIX_VEC_ASYNC, dev);
	pci_free_irq_vectors(dev->pdev);
}

/* The device's limits and port, read once at bring-up */
static int qhca_query_hw(struct qhca_dev *dev)
{
	struct qhca_device_attr *a = &dev->attr;
	struct qhca_port_attr port;
	int ret;

	ret = qhca_cmd_exec(dev, QHCA_CMD_QUERY_DEVICE, NULL, 0, a,
			    sizeof(*a), NULL, 0);
	if (ret) {
		dev_err(&dev->pdev->dev, "QUERY_DEVICE failed: %d\n", ret);
		return ret;
	}
	dev->max_mr_size = le64_to_cpu(a->max_mr_size);
	dev->max_qp_wr = min_t(u32, le32_to_cpu(a->max_qp_wr),
			       QHCA_MAX_QUEUE_DEPTH);
	dev->max_cqe = min_t(u32, le32_to_cpu(a->max_cqe),
			     QHCA_MAX_QUEUE_DEPTH);
	dev->max_srq_wr = min_t(u32, le32_to_cpu(a->max_srq_wr),
				QHCA_MAX_QUEUE_DEPTH);
	dev->max_fast_reg_pages = min_t(u32,
					le32_to_cpu(a->max_fast_reg_pages),
					QHCA_PBL_ENTRIES);
	dev->max_rd_atom = min(le32_to_cpu(a->max_qp_rd_atom),
			       le32_to_cpu(a->max_qp_init_rd_atom));
	dev->caps = le32_to_cpu(a->caps);

	ret = qhca_cmd_exec(dev, QHCA_CMD_QUERY_PORT, NULL, 0, &port,
			    sizeof(port), NULL, 0);
	if (ret) {
		dev_err(&dev->pdev->dev, "QUERY_PORT failed: %d\n", ret);
		return ret;
	}
	dev->hw_link_up = le32_to_cpu(port.link_up);

	/* The kernel's DMA MR (local_dma_lkey) is bounded like any MR */
	if ((u64)__pa(high_memory - 1) >= dev->max_mr_size)
		dev_warn(&dev->pdev->dev,
			 "memory above %#llx is out of reach of kernel DMA (local_dma_lkey)\n",
			 dev->max_mr_size);
	return 0;
}

static void qhca_free_dev(struct qhca_dev *dev)
{
	WARN_ON(!xa_empty(&dev->cq_xa) || !xa_empty(&dev->qp_xa) ||
		!xa_empty(&dev->srq_xa));
	xa_destroy(&dev->srq_xa);
	xa_destroy(&dev->qp_xa);
	xa_destroy(&dev->cq_xa);
	ida_destroy(&dev->db_ida);
	ib_dealloc_device(&dev->ibdev);
}

static int qhca_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct qhca_dev *dev;
	int ret;

	/* Doorbell pages are mapped to user space one page each. */
	if (PAGE_SIZE != QHCA_PAGE_SIZE) {
		dev_err(&pdev->dev, "needs %u-byte pages\n", QHCA_PAGE_SIZE);
		return -ENODEV;
	}

	dev = ib_alloc_device(qhca_dev, ibdev);
	if (!dev)
		return -ENOMEM;

	dev->pdev = pdev;
	/* For ibdev_*() messages before the registration names the device */
	dev->ibdev.dev.parent = &pdev->dev;
	dev->port_state = IB_PORT_DOWN;
	atomic64_set(&dev->async_irqs, 0);
	atomic_set(&dev->num_objects, 0);
	ida_init(&dev->db_ida);
	xa_init_flags(&dev->cq_xa, XA_FLAGS_LOCK_IRQ);
	xa_init_flags(&dev->qp_xa, XA_FLAGS_LOCK_IRQ);
	xa_init_flags(&dev->srq_xa, XA_FLAGS_LOCK_IRQ);
	INIT_WORK(&dev->gid_rescan_work, qhca_gid_rescan);
	INIT_WORK(&dev->port_work, qhca_port_work);
	INIT_WORK(&dev->fatal_work, qhca_fatal_work);
	INIT_DELAYED_WORK(&dev->pair_check_work, qhca_pair_check);
	pci_set_drvdata(pdev, dev);

	ret = pci_enable_device(pdev);
	if (ret) {
		dev_err(&pdev->dev, "cannot enable PCI device: %d\n", ret);
		goto err_free;
	}
	pci_set_master(pdev);

	ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (ret) {
		dev_err(&pdev->dev, "no 64-bit DMA: %d\n", ret);
		goto err_disable;
	}

	ret = pci_request_regions(pdev, QHCA_DRV_NAME);
	if (ret) {
		dev_err(&pdev->dev, "cannot request BARs: %d\n", ret);
		goto err_disable;
	}

	ret = qhca_map_bars(dev);
	if (ret)
		goto err_release;

	ret = qhca_hw_init(dev);
	if (ret)
		goto err_unmap;

	/* The device stays in reset until it is enabled below. */
	ret = qhca_irq_init(dev);
	if (ret)
		goto err_unmap;

	ret = qhca_cmdq_init(dev);
	if (ret)
		goto err_irq;

	ret = qhca_enable(dev);
	if (ret)
		goto err_reset;
	qhca_cmdq_start(dev);
	qhca_aeq_start(dev);

	ret = qhca_query_hw(dev);
	if (ret)
		goto err_reset;

	ret = qhca_ceqs_init(dev);
	if (ret)
		goto err_reset;

	dev_info(&pdev->dev,
		 "version %u.%u, MAC %pM, %d vectors, %u doorbell pages, link %s\n",
		 dev->version >> 16, dev->version & 0xffff, dev->mac,
		 dev->num_vectors, dev->num_db_pages,
		 dev->hw_link_up ? "up" : "down");

	ret = qhca_ib_register(dev);
	if (ret)
		goto err_ceqs;

	return 0;

err_ceqs:
	qhca_ceqs_stop(dev);
err_reset:
	set_bit(QHCA_DEV_UNREGISTERING, &dev->flags);
	qhca_reset(dev);
	pci_clear_master(pdev);
	/* The reset device raises no more interrupts; let a late one end */
	synchronize_irq(pci_irq_vector(pdev, QHCA_MSIX_VEC_ASYNC));
	cancel_work_sync(&dev->port_work);
	cancel_work_sync(&dev->fatal_work);
	qhca_ceqs_free(dev);
	qhca_cmdq_free(dev);
err_irq:
	qhca_irq_uninit(dev);
err_unmap:
	qhca_unmap_bars(dev);
err_release:
	pci_release_regions(pdev);
err_disable:
	pci_clear_master(pdev);
	pci_disable_device(pdev);
err_free:
	qhca_free_dev(dev);
	return ret;
}

static void qhca_remove(struct pci_dev *pdev)
{
	struct qhca_dev *dev = pci_get_drvdata(pdev);

	/* Destroys every object that is left, user contexts' too */
	qhca_ib_unregister(dev);
	qhca_ceqs_stop(dev);

	if (qhca_reset(dev))
		dev_warn(&pdev->dev, "device reset timed out\n");
	/* No DMA from here on, even if the reset did not complete. */
	pci_clear_master(pdev);
	qhca_irq_uninit(dev);
	cancel_work_sync(&dev->port_work);
	cancel_work_sync(&dev->fatal_work);
	qhca_ceqs_free(dev);
	qhca_cmdq_free(dev);
	if (atomic_read(&dev->num_objects))
		dev_err(&pdev->dev, "%d objects not freed\n",
			atomic_read(&dev->num_objects));
	dev_dbg(&pdev->dev, "%lld async interrupts\n",
		atomic64_read(&dev->async_irqs));

	qhca_unmap_bars(dev);
	pci_release_regions(pdev);
	pci_disable_device(pdev);
	qhca_free_dev(dev);
}

static const struct pci_device_id qhca_pci_ids[] = {
	{ PCI_DEVICE(QHCA_PCI_VENDOR_ID, QHCA_PCI_DEVICE_ID) },
	{}
};
MODULE_DEVICE_TABLE(pci, qhca_pci_ids);

static struct pci_driver qhca_pci_driver = {
	.name = QHCA_DRV_NAME,
	.id_table = qhca_pci_ids,
	.probe = qhca_probe,
	.remove = qhca_remove,
};
module_pci_driver(qhca_pci_driver);
