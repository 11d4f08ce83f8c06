/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * qhca: driver for the qhca software RoCEv2 HCA (a QEMU PCIe device).
 *
 * Shared state of the PCI part (qhca_main.c) and the verbs (qhca_verbs.c).
 */
#ifndef QHCA_H
#define QHCA_H

#include <linux/atomic.h>
#include <linux/dma-mapping.h>
#include <linux/idr.h>
#include <linux/if_ether.h>
#include <linux/io.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/notifier.h>
#include <linux/pci.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>

#include "qhca_hw.h"

#define QHCA_DRV_NAME		"qhca"
#define QHCA_NODE_DESC		"qhca RoCEv2 HCA"

/* The device has one port; RDMA port numbers start at 1. */
#define QHCA_PORT		1

/*
 * Limits reported by query_device.  They are the driver's own for now; the
 * device will report them through QUERY_DEVICE once the command queue is
 * set up.  QHCA_MAX_SGE, QHCA_MAX_INLINE and QHCA_GID_TABLE_LEN come from
 * qhca_hw.h.
 */
#define QHCA_DRV_MAX_QP		1024
#define QHCA_DRV_MAX_QP_WR	4096
#define QHCA_DRV_MAX_CQ		1024
#define QHCA_DRV_MAX_CQE	32767	/* rings hold at most 32768 */
#define QHCA_DRV_MAX_MR		4096
#define QHCA_DRV_MAX_MR_SIZE	BIT_ULL(32)
#define QHCA_DRV_MAX_PD		1024
#define QHCA_DRV_MAX_AH		1024
#define QHCA_DRV_MAX_SRQ	1024
#define QHCA_DRV_MAX_SRQ_WR	4096
#define QHCA_DRV_MAX_RD_ATOM	16
#define QHCA_PKEY_TABLE_LEN	1

/* Driver-side copy of the RoCE GID table (the device command comes later). */
struct qhca_gid_entry {
	union ib_gid gid;
	enum ib_gid_type gid_type;
	bool valid;
};

/* One page of device-written or driver-written ring memory. */
struct qhca_queue_mem {
	void *buf;
	dma_addr_t dma;
};

struct qhca_dev {
	struct ib_device ibdev;		/* must be first (ib_alloc_device) */
	struct pci_dev *pdev;

	void __iomem *regs;		/* BAR0 */
	void __iomem *kdb;		/* BAR2, doorbell page 0 */
	resource_size_t db_bar_start;	/* bus address of BAR2 */
	u32 num_db_pages;		/* usable doorbell pages, page 0 included */
	u32 version;
	u32 caps;			/* QHCA_CAP_* */
	u8 mac[ETH_ALEN] __aligned(2);

	/*
	 * The command queue, its completion ring and the async event queue.
	 * The device needs them to be enabled; commands and events are not
	 * processed yet.
	 */
	struct qhca_queue_mem cmdq;
	struct qhca_queue_mem cmdcq;
	struct qhca_queue_mem aeq;

	int num_vectors;
	char async_irq_name[48];
	atomic64_t async_irqs;		/* interrupts seen on the async vector */

	struct ida db_ida;		/* doorbell pages 1..num_db_pages-1 */
	struct ida pd_ida;

	/* Netdev pairing; netdev and port_state change under the RTNL only. */
	struct notifier_block netdev_nb;
	struct net_device *netdev;
	enum ib_port_state port_state;	/* last state reported by event */
	struct work_struct gid_rescan_work;

	struct mutex gid_lock;		/* protects gids */
	struct qhca_gid_entry gids[QHCA_GID_TABLE_LEN];
};

struct qhca_pd {
	struct ib_pd ibpd;
	u32 pdn;
};

struct qhca_ucontext {
	struct ib_ucontext ibucontext;
	struct rdma_user_mmap_entry *db_entry;
};

/* An mmap-able doorbell page; owns its page number until freed. */
struct qhca_user_mmap_entry {
	struct rdma_user_mmap_entry rdma_entry;
	struct qhca_dev *dev;
	phys_addr_t address;
	u32 db_page;
};

static inline struct qhca_dev *to_qhca_dev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct qhca_dev, ibdev);
}

static inline struct qhca_pd *to_qhca_pd(struct ib_pd *ibpd)
{
	return container_of(ibpd, struct qhca_pd, ibpd);
}

static inline struct qhca_ucontext *
to_qhca_ucontext(struct ib_ucontext *ibucontext)
{
	return container_of(ibucontext, struct qhca_ucontext, ibucontext);
}

static inline struct qhca_user_mmap_entry *
to_qhca_mmap_entry(struct rdma_user_mmap_entry *rdma_entry)
{
	return container_of(rdma_entry, struct qhca_user_mmap_entry,
			    rdma_entry);
}

static inline u32 qhca_reg_read(struct qhca_dev *dev, u32 reg)
{
	return readl(dev->regs + reg);
}

static inline void qhca_reg_write(struct qhca_dev *dev, u32 reg, u32 val)
{
	writel(val, dev->regs + reg);
}

static inline void qhca_reg_write64(struct qhca_dev *dev, u32 reg_lo,
				    u64 val)
{
	qhca_reg_write(dev, reg_lo, lower_32_bits(val));
	qhca_reg_write(dev, reg_lo + 4, upper_32_bits(val));
}

extern const struct ib_device_ops qhca_dev_ops;

#endif /* QHCA_H */
