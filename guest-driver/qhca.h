/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * qhca: driver for the qhca software RoCEv2 HCA (a QEMU PCIe device).
 *
 * Shared state of the PCI part (qhca_main.c), the command queue and event
 * queues (qhca_cmd.c, qhca_eq.c), queue memory (qhca_mem.c) and the verbs
 * (qhca_verbs.c, qhca_cq.c, qhca_qp.c).
 */
#ifndef QHCA_H
#define QHCA_H

#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/dma-mapping.h>
#include <linux/idr.h>
#include <linux/if_ether.h>
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/notifier.h>
#include <linux/pci.h>
#include <linux/refcount.h>
#include <linux/semaphore.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>

#include "qhca_hw.h"

#define QHCA_DRV_NAME		"qhca"
#define QHCA_NODE_DESC		"qhca RoCEv2 HCA"

/* The device has one port; RDMA port numbers start at 1. */
#define QHCA_PORT		1
#define QHCA_PKEY_TABLE_LEN	1

/* Command queue: one page of commands, one of completions. */
#define QHCA_CMDQ_LOG_DEPTH	QHCA_CMDQ_MAX_LOG_DEPTH
#define QHCA_CMDQ_DEPTH		BIT(QHCA_CMDQ_LOG_DEPTH)
#define QHCA_CMDCQ_LOG_DEPTH	QHCA_CMDCQ_MAX_LOG_DEPTH
#define QHCA_AEQ_LOG_DEPTH	QHCA_AEQ_MAX_LOG_DEPTH
/* Each command context owns a response slot in one page. */
#define QHCA_CMD_RESP_SLOT	(QHCA_PAGE_SIZE / QHCA_CMDQ_DEPTH)
#define QHCA_CMD_TIMEOUT_MS	5000

/* Completion event queues: 1024 events each (four pages). */
#define QHCA_CEQ_LOG_DEPTH	10

/*
 * Queue depths, strides and their limits (QHCA_MAX_QUEUE_DEPTH,
 * QHCA_MIN_WQ_DEPTH, ...) are the hardware contract's: qhca_hw.h, "Queue
 * geometry", shared with the provider.
 */

/* Memory registration: at most two levels of 512-entry page lists. */
#define QHCA_PBL_MAX_PAGES	(QHCA_PBL_ENTRIES * QHCA_PBL_ENTRIES)
/* Page sizes the device takes in a page list: 4 KiB .. 1 GiB */
#define QHCA_PAGE_SIZE_CAP	GENMASK_ULL(30, QHCA_PAGE_SHIFT)

enum qhca_dev_flag {
	QHCA_DEV_DEAD,		/* no more commands; the device was reset */
	QHCA_DEV_UNREGISTERING,	/* no more events to the RDMA core */
	QHCA_DEV_WARNED_NO_NETDEV,	/* "no netdev has the MAC" said */
	QHCA_DEV_WARNED_MAC_DIFFERS,	/* "netdev's MAC differs" said */
};

/*
 * How long after registration (or after the paired netdev went away) the
 * device may stay without a netdev of its MAC before the driver warns:
 * the guest NIC's driver may load after this one.
 */
#define QHCA_PAIR_WAIT_MS	10000

/* A command in flight (one per command queue entry). */
struct qhca_cmd_ctx {
	struct completion done;
	u32 cookie;
	u32 result;
	u16 status;
	bool posted;		/* waiting for its completion */
	bool nowait;		/* nobody waits: free it on completion */
	u16 opcode;
};

/* One page of device-written or driver-written ring memory. */
struct qhca_queue_mem {
	void *buf;
	dma_addr_t dma;
};

struct qhca_cmdq {
	struct qhca_queue_mem sq;	/* commands */
	struct qhca_queue_mem cq;	/* completions (CMDCQ) */
	struct qhca_queue_mem resp;	/* response slots */
	spinlock_t post_lock;		/* pi, seq and the command ring */
	spinlock_t poll_lock;		/* ci and the contexts' results */
	struct semaphore slots;		/* free contexts */
	unsigned long busy;		/* contexts in use (bit per context) */
	u32 seq;
	u16 pi;
	u16 ci;
	struct qhca_cmd_ctx ctx[QHCA_CMDQ_DEPTH];
};

/*
 * Queue memory: a ring of 2^n entries of 2^log_stride bytes.  Kernel
 * rings are separate DMA-coherent pages (entries never straddle a page);
 * user rings are pinned user memory.
 */
struct qhca_ring {
	u32 depth;
	u8 log_stride;
	u32 npages;
	void **va;		/* kernel: each page's address */
	dma_addr_t *dma;	/* kernel: each page's bus address */
	struct ib_umem *umem;	/* user */
};

/* A page list for a command; the device copies it, so it is temporary. */
struct qhca_pbl {
	u32 n;			/* entries */
	u32 nl2;		/* level-2 pages, 0 for a one-level list */
	__le64 *l1;
	dma_addr_t l1_dma;
	__le64 **l2;
	dma_addr_t *l2_dma;
};

/* A completion event queue and its MSI-X vector. */
struct qhca_eq {
	struct qhca_dev *dev;
	struct qhca_ring ring;
	u32 eqn;
	u16 ci;
	u16 vector;
	bool created;		/* the device has it */
	bool irq_requested;
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
	unsigned long flags;		/* enum qhca_dev_flag */

	struct qhca_cmdq cmdq;
	struct qhca_queue_mem aeq;
	u16 aeq_ci;

	/* What QUERY_DEVICE said, in CPU order where the driver uses it. */
	struct qhca_device_attr attr;
	u64 max_mr_size;
	u32 max_qp_wr;
	u32 max_cqe;
	u32 max_srq_wr;
	u32 max_fast_reg_pages;
	u32 max_rd_atom;
	atomic_t key_variant;		/* for new memory keys */

	int num_vectors;
	u32 num_ceqs;			/* completion EQs (vectors 1..) */
	struct qhca_eq *ceqs;
	atomic64_t async_irqs;		/* interrupts seen on the async vector */

	struct ida db_ida;		/* doorbell pages 1..num_db_pages-1 */

	/* Object tables for event dispatch (interrupt-safe locks). */
	struct xarray cq_xa;
	struct xarray qp_xa;
	struct xarray srq_xa;

	/* Netdev pairing; netdev and port_state change under the RTNL only. */
	struct notifier_block netdev_nb;
	struct net_device *netdev;
	enum ib_port_state port_state;	/* last state reported by event */
	bool hw_link_up;		/* the device's own wire */
	struct work_struct gid_rescan_work;
	struct work_struct port_work;
	struct work_struct fatal_work;
	struct delayed_work pair_check_work;	/* warns: no netdev paired */

	/* Live objects, for the unload report */
	atomic_t num_objects;
};

struct qhca_pd {
	struct ib_pd ibpd;
	u32 pdn;
};

struct qhca_ucontext {
	struct ib_ucontext ibucontext;
	struct rdma_user_mmap_entry *db_entry;
	u32 db_page;
};

/* An mmap-able doorbell page; owns its page number until freed. */
struct qhca_user_mmap_entry {
	struct rdma_user_mmap_entry rdma_entry;
	struct qhca_dev *dev;
	phys_addr_t address;
	u32 db_page;
};

struct qhca_cq {
	struct ib_cq ibcq;
	struct qhca_ring ring;
	spinlock_t lock;		/* kernel CQs: ci, polling, arming */
	u32 cqn;
	u16 ci;				/* next CQE to poll (free running) */
	bool user;
	refcount_t refcount;		/* event dispatch */
	struct completion free;
};

/* A kernel send, receive or shared receive queue. */
struct qhca_wq {
	struct qhca_ring ring;
	spinlock_t lock;		/* posting: pi and the ring */
	u16 pi;				/* next WQE to write */
	u16 ci;				/* oldest WQE not yet completed */
	u16 flushed;			/* dead device: next WQE to flush */
	bool soft_flush;		/* dead device: flushed by the driver */
	u32 max_sge;
	u32 max_inline;			/* send queues */
};

struct qhca_srq {
	struct ib_srq ibsrq;
	struct qhca_wq wq;
	u32 srqn;
	bool user;
	unsigned long *done;		/* kernel: completed, not yet reusable */
	refcount_t refcount;		/* event dispatch */
	struct completion free;
	struct mutex modify_lock;	/* modify_srq: the ring and the limit */
};

struct qhca_qp {
	struct ib_qp ibqp;
	struct qhca_wq sq;
	struct qhca_wq rq;		/* unused with an SRQ */
	u32 qpn;
	u8 hw_type;			/* enum qhca_qp_type */
	bool user;
	bool sig_all;
	struct qhca_srq *srq;
	struct mutex state_lock;	/* modify and query */
	enum ib_qp_state state;
	refcount_t refcount;		/* event dispatch */
	struct completion free;
};

struct qhca_mr {
	struct ib_mr ibmr;
	struct ib_umem *umem;
	int access;			/* user MRs: IB access flags */
	/* Fast registration: the page list a REG_MR work request names */
	__le64 *pages;
	dma_addr_t pages_dma;
	u32 max_pages;
	u32 npages;
};

struct qhca_ah {
	struct ib_ah ibah;
	u32 ahn;
};

/*
 * A memory window.  ibmw.rkey is the key ALLOC_MW gave; binds (work
 * requests the provider posts) change its variant, which the kernel never
 * learns: DEALLOC_MW takes any variant of the index.
 */
struct qhca_mw {
	struct ib_mw ibmw;
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

static inline struct qhca_cq *to_qhca_cq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct qhca_cq, ibcq);
}

static inline struct qhca_qp *to_qhca_qp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct qhca_qp, ibqp);
}

static inline struct qhca_srq *to_qhca_srq(struct ib_srq *ibsrq)
{
	return container_of(ibsrq, struct qhca_srq, ibsrq);
}

static inline struct qhca_mr *to_qhca_mr(struct ib_mr *ibmr)
{
	return container_of(ibmr, struct qhca_mr, ibmr);
}

static inline struct qhca_ah *to_qhca_ah(struct ib_ah *ibah)
{
	return container_of(ibah, struct qhca_ah, ibah);
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

/* Kernel doorbell page; writel orders the ring writes before it. */
static inline void qhca_kdb(struct qhca_dev *dev, u32 off, u32 val)
{
	writel(val, dev->kdb + off);
}

static inline bool qhca_dead(struct qhca_dev *dev)
{
	return test_bit(QHCA_DEV_DEAD, &dev->flags);
}

/* Entry @idx of a kernel ring (the index is taken modulo the depth). */
static inline void *qhca_ring_entry(const struct qhca_ring *r, u32 idx)
{
	size_t off = (size_t)(idx & (r->depth - 1)) << r->log_stride;

	return r->va[off >> QHCA_PAGE_SHIFT] + (off & (QHCA_PAGE_SIZE - 1));
}

/* Is the entry at free-running index @ci of a device-written ring new? */
static inline bool qhca_owner_ok(u8 owner, u16 ci, u32 depth)
{
	return (owner & QHCA_OWNER_BIT) == !(ci & depth);
}

/* qhca_cmd.c */
#define QHCA_CMD_ATOMIC		BIT(0)	/* caller cannot sleep: busy-poll */
#define QHCA_CMD_NOWAIT		BIT(1)	/* post only; result is not needed */

int qhca_cmdq_init(struct qhca_dev *dev);
void qhca_cmdq_free(struct qhca_dev *dev);
void qhca_cmdq_start(struct qhca_dev *dev);
void qhca_cmdq_poll(struct qhca_dev *dev, bool arm);
int qhca_cmd_exec(struct qhca_dev *dev, u16 opcode, const void *in,
		  size_t in_len, void *out, size_t out_len, u32 *result,
		  unsigned int flags);
int qhca_cmd_destroy(struct qhca_dev *dev, u16 opcode, u32 handle,
		     unsigned int flags);
void qhca_dev_set_dead(struct qhca_dev *dev, const char *why);

static inline int qhca_cmd(struct qhca_dev *dev, u16 opcode, const void *in,
			   size_t in_len, u32 *result)
{
	return qhca_cmd_exec(dev, opcode, in, in_len, NULL, 0, result, 0);
}

/* qhca_eq.c */
irqreturn_t qhca_async_irq(int irq, void *data);
int qhca_ceqs_init(struct qhca_dev *dev);
void qhca_ceqs_stop(struct qhca_dev *dev);
void qhca_ceqs_free(struct qhca_dev *dev);
void qhca_aeq_start(struct qhca_dev *dev);

/* qhca_mem.c */
int qhca_ring_alloc(struct qhca_dev *dev, struct qhca_ring *r, u32 depth,
		    u8 log_stride);
int qhca_ring_pin(struct qhca_dev *dev, struct qhca_ring *r, u64 va,
		  u32 depth, u8 log_stride);
void qhca_ring_free(struct qhca_dev *dev, struct qhca_ring *r);
int qhca_ring_pbl(struct qhca_dev *dev, const struct qhca_ring *r,
		  struct qhca_pbl *pbl, struct qhca_pbl_desc *desc);
int qhca_pbl_alloc(struct qhca_dev *dev, struct qhca_pbl *pbl, u32 n);
void qhca_pbl_set(struct qhca_pbl *pbl, u32 i, u64 addr);
void qhca_pbl_desc(const struct qhca_pbl *pbl, struct qhca_pbl_desc *desc,
		   u8 page_shift);
void qhca_pbl_free(struct qhca_dev *dev, struct qhca_pbl *pbl);

/* Lookups for event dispatch: a reference, released with *_put. */
struct qhca_cq *qhca_cq_get(struct qhca_dev *dev, u32 cqn);
void qhca_cq_put(struct qhca_cq *cq);
struct qhca_qp *qhca_qp_get(struct qhca_dev *dev, u32 qpn);
void qhca_qp_put(struct qhca_qp *qp);
struct qhca_srq *qhca_srq_get(struct qhca_dev *dev, u32 srqn);
void qhca_srq_put(struct qhca_srq *srq);

/* udata helpers (qhca_verbs.c) */
int qhca_udata_in(struct ib_udata *udata, void *cmd, size_t len);
int qhca_udata_no_in(struct ib_udata *udata);
int qhca_udata_out(struct ib_udata *udata, void *resp, size_t len);
u32 qhca_access(int ib_access);
int qhca_ib_access(u32 access);
u32 qhca_ucontext_db_page(struct ib_udata *udata);

/* qhca_cq.c */
int qhca_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		   struct uverbs_attr_bundle *attrs);
int qhca_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata);
int qhca_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int qhca_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc);
int qhca_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);
bool qhca_cq_soft_flush_cqe(struct qhca_cq *cq, u32 qpn, __le64 wr_id,
			    bool send, u16 wqe_index);

/* qhca_stats.c */
struct rdma_hw_stats *qhca_alloc_hw_port_stats(struct ib_device *ibdev,
					       u32 port_num);
int qhca_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		      u32 port, int index);
int qhca_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp);
int qhca_fill_res_cq_entry(struct sk_buff *msg, struct ib_cq *ibcq);

/* qhca_qp.c */
int qhca_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *attr,
		   struct ib_udata *udata);
int qhca_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		   int attr_mask, struct ib_udata *udata);
int qhca_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		  int attr_mask, struct ib_qp_init_attr *init_attr);
int qhca_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
int qhca_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		   const struct ib_send_wr **bad_wr);
int qhca_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		   const struct ib_recv_wr **bad_wr);
int qhca_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *attr,
		    struct ib_udata *udata);
int qhca_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		    enum ib_srq_attr_mask attr_mask, struct ib_udata *udata);
int qhca_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int qhca_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int qhca_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
		       const struct ib_recv_wr **bad_wr);
void qhca_wq_completed(struct qhca_qp *qp, bool send, u16 wqe_index);

extern const struct ib_device_ops qhca_dev_ops;

/* qhca_verbs.c; dmah: a DMA handle (Linux 6.17), never supported */
struct ib_dmah;
struct ib_mr *qhca_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
			       u64 virt_addr, int access, struct ib_dmah *dmah,
			       struct ib_udata *udata);
struct ib_mr *qhca_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				 u64 length, u64 virt_addr, int access,
				 struct ib_pd *ibpd, struct ib_udata *udata);

/* what older kernels lack or name differently (after the prototypes) */
#include "qhca_compat.h"

#endif /* QHCA_H */
