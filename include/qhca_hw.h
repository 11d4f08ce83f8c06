/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * qhca hardware contract: PCI identity, BAR layout, registers, doorbells,
 * command queue, commands, and the WQE/CQE/EQE layouts.
 *
 * This header is included by the QEMU device (hw/), the Linux driver
 * (guest-driver/) and the rdma-core provider (userlib/).  Everything the
 * device reads or writes is little-endian with a fixed size; every structure
 * has a static size assertion.  docs/hardware.md describes the same contract
 * in prose.  Bit fields are given as a mask and a shift; each side uses its
 * own helpers (FIELD_PREP in Linux, explicit shifts elsewhere).
 */
#ifndef QHCA_HW_H
#define QHCA_HW_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/build_bug.h>
#define QHCA_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
typedef u8 qhca_u8;
typedef u32 qhca_u32;
typedef __le16 qhca_le16;
typedef __le32 qhca_le32;
typedef __le64 qhca_le64;
#else
#include <stdint.h>
#include <assert.h>
#define QHCA_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
typedef uint8_t qhca_u8;
typedef uint32_t qhca_u32;
typedef uint16_t qhca_le16;
typedef uint32_t qhca_le32;
typedef uint64_t qhca_le64;
#endif

#define QHCA_CHECK_SIZE(type, size) \
	QHCA_STATIC_ASSERT(sizeof(type) == (size), #type " must be " #size " bytes")

/* ------------------------------------------------------------------------
 * PCI identity
 */
/*
 * 1af4:10f0, the first ID of the range QEMU's docs/specs/pci-ids.rst gives
 * "for experimental usage without registration" (1af4:10f0..10ff, Red
 * Hat's vendor ID, whose 1000..10ff device IDs Red Hat donates to QEMU).
 * Linux's virtio_pci matches vendor 1af4 with any device ID but leaves
 * device IDs outside 0x1000..0x107f alone (-ENODEV). An official ID is
 * needed before qhca is merged upstream or shipped in a distribution:
 * docs/hardware.md, "PCI identity".
 */
#define QHCA_PCI_VENDOR_ID		0x1af4
#define QHCA_PCI_DEVICE_ID		0x10f0
#define QHCA_PCI_REVISION		0x01
#define QHCA_PCI_CLASS			0x0280	/* network controller, other */

/* Device interface version reported in QHCA_REG_VERSION */
#define QHCA_VERSION_MAJOR		1
#define QHCA_VERSION_MINOR		0
#define QHCA_VERSION			((QHCA_VERSION_MAJOR << 16) | QHCA_VERSION_MINOR)

/* ------------------------------------------------------------------------
 * BARs
 *   BAR0: registers (64-bit, non-prefetchable memory)
 *   BAR2: doorbell pages (64-bit, non-prefetchable); page 0 belongs to the
 *         kernel driver, pages 1..N-1 are handed to user contexts
 *   BAR4: MSI-X table and PBA
 */
#define QHCA_REG_BAR			0
#define QHCA_DB_BAR			2
#define QHCA_MSIX_BAR			4

#define QHCA_REG_BAR_SIZE		0x1000
#define QHCA_PAGE_SHIFT			12
#define QHCA_PAGE_SIZE			(1u << QHCA_PAGE_SHIFT)
#define QHCA_DB_PAGES			256
#define QHCA_DB_BAR_SIZE		(QHCA_DB_PAGES * QHCA_PAGE_SIZE)
#define QHCA_KERNEL_DB_PAGE		0

#define QHCA_MSIX_VECTORS		16
/* Vector 0: command completions and the async event queue. */
#define QHCA_MSIX_VEC_ASYNC		0

/* ------------------------------------------------------------------------
 * BAR0 registers (32-bit accesses; 64-bit addresses are LO/HI pairs)
 */
#define QHCA_REG_VERSION		0x000	/* RO: QHCA_VERSION */
#define QHCA_REG_CAPS			0x004	/* RO: QHCA_CAP_* */
#define QHCA_REG_STATUS			0x008	/* RO: QHCA_STATUS_* */
#define QHCA_REG_CTRL			0x00c	/* RW: QHCA_CTRL_* */
#define QHCA_REG_MAC_LO			0x010	/* RO: MAC bytes 0..3 (byte 0 in bits 7:0) */
#define QHCA_REG_MAC_HI			0x014	/* RO: MAC bytes 4..5 in bits 15:0 */
#define QHCA_REG_NUM_VECTORS		0x018	/* RO: MSI-X vectors */
#define QHCA_REG_NUM_DB_PAGES		0x01c	/* RO: doorbell pages in BAR2 */
#define QHCA_REG_LINK			0x020	/* RO: QHCA_LINK_* */
#define QHCA_REG_FATAL_CODE		0x024	/* RO: QHCA_FATAL_* when STATUS.FATAL */

#define QHCA_REG_CMDQ_BASE_LO		0x040	/* RW: command queue, 4 KiB aligned */
#define QHCA_REG_CMDQ_BASE_HI		0x044
#define QHCA_REG_CMDQ_LOG_DEPTH		0x048	/* RW: log2 entries, 1..5 */
#define QHCA_REG_CMDCQ_BASE_LO		0x050	/* RW: command completion ring */
#define QHCA_REG_CMDCQ_BASE_HI		0x054
#define QHCA_REG_CMDCQ_LOG_DEPTH	0x058	/* RW: log2 entries, 1..8 (one page) */
#define QHCA_REG_AEQ_BASE_LO		0x060	/* RW: async event queue, 4 KiB aligned */
#define QHCA_REG_AEQ_BASE_HI		0x064
#define QHCA_REG_AEQ_LOG_DEPTH		0x068	/* RW: log2 entries, 1..8 (one page) */

/*
 * Statistics: the low 32 bits of the first eight 64-bit counters of enum
 * qhca_stat (RO, wrap).  QUERY_STATS returns all of them, 64 bits each.
 */
#define QHCA_REG_STAT_TX_FRAMES		0x100
#define QHCA_REG_STAT_RX_FRAMES		0x104
#define QHCA_REG_STAT_RX_DROPPED	0x108	/* not RoCEv2 for us, or malformed */
#define QHCA_REG_STAT_RX_BAD_ICRC	0x10c
#define QHCA_REG_STAT_RETRANSMITS	0x110
#define QHCA_REG_STAT_GUEST_ERRORS	0x114
#define QHCA_REG_STAT_LOOPBACK		0x118	/* frames sent to the device itself */
#define QHCA_REG_STAT_LOOP_DROPPED	0x11c	/* of those, dropped: loop queue full */

#define QHCA_CAP_RC			(1u << 0)
#define QHCA_CAP_UD			(1u << 1)
#define QHCA_CAP_SRQ			(1u << 2)
#define QHCA_CAP_ATOMIC			(1u << 3)
#define QHCA_CAP_FRMR			(1u << 4)
#define QHCA_CAP_UC			(1u << 5)
#define QHCA_CAP_MCAST			(1u << 6)	/* ATTACH/DETACH_MCAST */
#define QHCA_CAP_ATOMIC_WRITE		(1u << 7)	/* RDMA ATOMIC WRITE (IBA 1.5) */
#define QHCA_CAP_FLUSH_GLOBAL		(1u << 8)	/* RDMA FLUSH, global visibility */
#define QHCA_CAP_MW			(1u << 9)	/* memory windows, type 1 and 2B */

#define QHCA_STATUS_READY		(1u << 0)	/* CTRL.ENABLE and queues set up */
#define QHCA_STATUS_FATAL		(1u << 1)	/* needs a reset */

#define QHCA_CTRL_ENABLE		(1u << 0)
#define QHCA_CTRL_RESET			(1u << 1)	/* write 1: reset; reads 0 */

#define QHCA_LINK_UP			(1u << 0)

#define QHCA_FATAL_NONE			0
#define QHCA_FATAL_CMDQ_DMA		1	/* command queue DMA failed */
#define QHCA_FATAL_AEQ_DMA		2	/* async event queue DMA failed */
#define QHCA_FATAL_BAD_CONFIG		3	/* ENABLE with invalid queue registers */
#define QHCA_FATAL_CMDCQ_DMA		4	/* command completion DMA failed */

/* ------------------------------------------------------------------------
 * Doorbells (BAR2): 32-bit writes at these offsets within a doorbell page.
 * Queue indices are free-running 16-bit counters; queue depths are powers
 * of two no larger than 32768.  Queue numbers are < 65536.  A doorbell for a
 * queue that does not belong to the page's context is dropped.
 */
#define QHCA_DB_SQ			0x000	/* qpn | sq_pi << 16 */
#define QHCA_DB_RQ			0x004	/* qpn | rq_pi << 16 */
#define QHCA_DB_SRQ			0x008	/* srqn | srq_pi << 16 */
#define QHCA_DB_CQ_CI			0x00c	/* cqn | cq_ci << 16: consumed CQEs */
#define QHCA_DB_CQ_ARM			0x010	/* cqn | cq_ci << 16: arm, next completion */
#define QHCA_DB_CQ_ARM_SOLICITED	0x014	/* cqn | cq_ci << 16: arm, solicited only */
/* Kernel page (0) only */
#define QHCA_DB_EQ			0x020	/* eqn | arm << 15 | eq_ci << 16 */
#define QHCA_DB_CMDQ			0x024	/* cmdq_pi (bits 15:0) */
#define QHCA_DB_CMDCQ			0x028	/* cmdcq_ci (bits 15:0) | arm << 31 */
#define QHCA_DB_AEQ			0x02c	/* aeq_ci (bits 15:0) | arm << 31 */

#define QHCA_DB_NUM_MASK		0x0000ffffu
#define QHCA_DB_IDX_SHIFT		16
#define QHCA_DB_EQ_NUM_MASK		0x00007fffu
#define QHCA_DB_EQ_ARM			(1u << 15)
#define QHCA_DB_CMDCQ_CI_MASK		0x0000ffffu
#define QHCA_DB_CMDCQ_ARM		(1u << 31)
#define QHCA_DB_AEQ_CI_MASK		0x0000ffffu
#define QHCA_DB_AEQ_ARM			(1u << 31)


/* ------------------------------------------------------------------------
 * Rings.  Every ring (command queue, command completion ring, event queues,
 * CQs, SQs, RQs, SRQs) is an array of fixed-size entries whose count is a
 * power of two.  Producer and consumer indices are free-running 16-bit
 * counters; entry i lives at (i & (depth - 1)) * entry_size.
 *
 * Rings the device writes (CMDCQ, EQs, CQs) carry an owner bit: the device
 * writes entries of its n-th pass over the ring (n = 0, 1, ...) with
 * owner = !(n & 1), so a zero-filled ring holds no valid entry and software
 * expects owner 1 on the first pass, 0 on the second, and so on.
 */
#define QHCA_OWNER_BIT			0x01

/*
 * Page lists.  Queue and MR memory is never assumed contiguous beyond one
 * page.  A page list is an array of little-endian 64-bit guest-physical page
 * addresses, itself held in one 4 KiB page (QHCA_PBL_ENTRIES entries).
 * With QHCA_PBL_LEVELS 2 each entry instead points to a page that holds up
 * to QHCA_PBL_ENTRIES page addresses.  The device copies the list when the
 * object is created; later changes to the list in memory have no effect.
 */
#define QHCA_PBL_ENTRIES		(QHCA_PAGE_SIZE / 8)
#define QHCA_PBL_MAX_LEVELS		2

/* ------------------------------------------------------------------------
 * Command queue.  The driver writes a struct qhca_cmd at cmdq_pi, advances
 * cmdq_pi and writes it to QHCA_DB_CMDQ.  The device executes commands in
 * order and, for each, writes a struct qhca_cmd_comp to the command
 * completion ring (CMDCQ) with the command's cookie; if the CMDCQ is armed
 * (QHCA_DB_CMDCQ with QHCA_DB_CMDCQ_ARM) it then raises MSI-X vector 0 and
 * disarms.  The device never has more completions outstanding than the
 * CMDCQ holds: it stops taking commands while the CMDCQ is full.
 * Commands that return data write it to resp_addr (at most resp_len bytes,
 * within one page).
 */
#define QHCA_CMD_SIZE			128
#define QHCA_CMD_COMP_SIZE		16
#define QHCA_CMDQ_MAX_LOG_DEPTH		5	/* 32 x 128 bytes = one page */
#define QHCA_CMDCQ_MAX_LOG_DEPTH	8	/* 256 x 16 bytes = one page */
#define QHCA_AEQ_MAX_LOG_DEPTH		8	/* 256 x 16 bytes = one page */

enum qhca_cmd_opcode {
	QHCA_CMD_QUERY_DEVICE		= 0x01,	/* resp: struct qhca_device_attr */
	QHCA_CMD_QUERY_PORT		= 0x02,	/* resp: struct qhca_port_attr */
	QHCA_CMD_ADD_GID		= 0x03,
	QHCA_CMD_DEL_GID		= 0x04,
	QHCA_CMD_CREATE_EQ		= 0x05,	/* result: eqn */
	QHCA_CMD_DESTROY_EQ		= 0x06,
	QHCA_CMD_ALLOC_PD		= 0x07,	/* result: pdn */
	QHCA_CMD_DEALLOC_PD		= 0x08,
	QHCA_CMD_REG_MR			= 0x09,	/* result: key (lkey == rkey) */
	QHCA_CMD_DEREG_MR		= 0x0a,
	QHCA_CMD_ALLOC_MR		= 0x0b,	/* fast-register MR; result: key */
	QHCA_CMD_CREATE_CQ		= 0x0c,	/* result: cqn */
	QHCA_CMD_DESTROY_CQ		= 0x0d,
	QHCA_CMD_CREATE_QP		= 0x0e,	/* result: qpn */
	QHCA_CMD_MODIFY_QP		= 0x0f,
	QHCA_CMD_QUERY_QP		= 0x10,	/* resp: struct qhca_qp_attr */
	QHCA_CMD_DESTROY_QP		= 0x11,
	QHCA_CMD_CREATE_SRQ		= 0x12,	/* result: srqn */
	QHCA_CMD_MODIFY_SRQ		= 0x13,
	QHCA_CMD_QUERY_SRQ		= 0x14,	/* resp: struct qhca_srq_attr */
	QHCA_CMD_DESTROY_SRQ		= 0x15,
	QHCA_CMD_CREATE_AH		= 0x16,	/* result: ahn */
	QHCA_CMD_DESTROY_AH		= 0x17,
	QHCA_CMD_QUERY_STATS		= 0x18,	/* resp: le64 per enum qhca_stat
						 * from .first; result: QHCA_STAT_NUM */
	QHCA_CMD_QUERY_QP_STATE		= 0x19,	/* resp: struct qhca_qp_state_info */
	QHCA_CMD_QUERY_CQ		= 0x1a,	/* resp: struct qhca_cq_info */
	QHCA_CMD_REREG_MR		= 0x1b,	/* struct qhca_cmd_rereg_mr */
	QHCA_CMD_RESIZE_CQ		= 0x1c,	/* result: CQEs carried over */
	QHCA_CMD_ATTACH_MCAST		= 0x1d,	/* struct qhca_cmd_mcast */
	QHCA_CMD_DETACH_MCAST		= 0x1e,	/* struct qhca_cmd_mcast */
	QHCA_CMD_RESIZE_SRQ		= 0x1f,	/* result: WQEs carried over */
	QHCA_CMD_ALLOC_MW		= 0x20,	/* struct qhca_cmd_alloc_mw; result: key */
	QHCA_CMD_DEALLOC_MW		= 0x21,	/* struct qhca_cmd_obj: the key */
	QHCA_CMD_MAX
};

enum qhca_cmd_status {
	QHCA_CMD_OK			= 0,
	QHCA_CMD_ERR_OPCODE		= 1,	/* unknown opcode */
	QHCA_CMD_ERR_PARAM		= 2,	/* a field is out of range */
	QHCA_CMD_ERR_NO_RESOURCES	= 3,	/* table full or budget exceeded */
	QHCA_CMD_ERR_HANDLE		= 4,	/* no such object */
	QHCA_CMD_ERR_BUSY		= 5,	/* object still referenced */
	QHCA_CMD_ERR_STATE		= 6,	/* transition not allowed */
	QHCA_CMD_ERR_DMA		= 7,	/* guest memory could not be read/written */
	QHCA_CMD_ERR_UNSUPPORTED	= 8,	/* valid but not implemented */
};

struct qhca_cmd_hdr {
	qhca_le16 opcode;		/* enum qhca_cmd_opcode */
	qhca_le16 flags;		/* must be 0 */
	qhca_le32 cookie;		/* echoed in the completion */
	qhca_le64 resp_addr;		/* guest-physical, for commands with a resp */
	qhca_le32 resp_len;
	qhca_le32 reserved;
};
QHCA_CHECK_SIZE(struct qhca_cmd_hdr, 24);

struct qhca_cmd_comp {
	qhca_le32 cookie;
	qhca_le16 status;		/* enum qhca_cmd_status */
	qhca_u8 opcode;			/* low 8 bits of the command's opcode */
	qhca_u8 owner;			/* QHCA_OWNER_BIT */
	qhca_le32 result;		/* object number or key, per command */
	qhca_le32 reserved;
};
QHCA_CHECK_SIZE(struct qhca_cmd_comp, QHCA_CMD_COMP_SIZE);

/* Memory described by a page list (see "Page lists") */
struct qhca_pbl_desc {
	qhca_le64 pbl_addr;		/* page-aligned guest-physical address */
	qhca_le32 num_pages;		/* pages of memory described */
	qhca_u8 levels;			/* 1 or 2 */
	qhca_u8 page_shift;		/* 12..30: size of each described page */
	qhca_le16 reserved;
};
QHCA_CHECK_SIZE(struct qhca_pbl_desc, 16);

/* GIDs: RoCEv2 only; IPv4 addresses as IPv4-mapped IPv6 (::ffff:a.b.c.d) */
#define QHCA_GID_TABLE_LEN		16
struct qhca_cmd_gid {			/* ADD_GID, DEL_GID (only index used) */
	qhca_le32 index;		/* < QHCA_GID_TABLE_LEN */
	qhca_le32 reserved;
	qhca_u8 gid[16];		/* network byte order */
};

#define QHCA_MAX_EQS			QHCA_MSIX_VECTORS
struct qhca_cmd_create_eq {
	struct qhca_pbl_desc mem;	/* depth * 16 bytes */
	qhca_u8 log_depth;		/* 1..15 */
	qhca_u8 reserved[3];
	qhca_le32 vector;		/* MSI-X vector, 1..NUM_VECTORS-1 */
};

struct qhca_cmd_obj {			/* every DESTROY_*, DEALLOC_PD, DEREG_MR,
					 * QUERY_QP, QUERY_SRQ */
	qhca_le32 handle;		/* pdn, key, cqn, qpn, srqn, ahn or eqn */
	qhca_le32 reserved;
};

/* MR access flags (the IB verbs meaning) */
#define QHCA_ACCESS_LOCAL_WRITE		(1u << 0)
#define QHCA_ACCESS_REMOTE_WRITE	(1u << 1)
#define QHCA_ACCESS_REMOTE_READ		(1u << 2)
#define QHCA_ACCESS_REMOTE_ATOMIC	(1u << 3)
#define QHCA_ACCESS_FLUSH_GLOBAL	(1u << 4)	/* target of RDMA FLUSH */
#define QHCA_ACCESS_MW_BIND		(1u << 5)	/* MR only: windows may be bound */
#define QHCA_ACCESS_MASK		0x3fu

/* Keys: index << 8 | variant.  Key 0 is never valid. */
#define QHCA_KEY_INDEX_SHIFT		8
#define QHCA_KEY_VARIANT_MASK		0xffu

struct qhca_cmd_reg_mr {
	qhca_le32 pdn;
	qhca_le32 access;		/* QHCA_ACCESS_* */
	qhca_le64 iova;			/* first byte's address as seen in WQEs/RETHs */
	qhca_le64 length;		/* bytes; 0 < length <= max_mr_size */
	struct qhca_pbl_desc mem;	/* pages backing [iova & ~page_mask, ...) */
	qhca_le32 flags;		/* QHCA_MR_PHYS: iova is guest-physical */
	qhca_le32 key_variant;		/* low 8 bits of the returned key */
};
#define QHCA_MR_PHYS			(1u << 0)	/* no page list: mem ignored */

/* REREG_MR: what changes (the key stays) */
#define QHCA_REREG_TRANS		(1u << 0)	/* iova, length, pages */
#define QHCA_REREG_PD			(1u << 1)
#define QHCA_REREG_ACCESS		(1u << 2)
#define QHCA_REREG_MASK			0x7u

struct qhca_cmd_rereg_mr {
	qhca_le32 key;			/* a registered (not fast-register) MR */
	qhca_le32 what;			/* QHCA_REREG_* */
	qhca_le32 pdn;			/* with QHCA_REREG_PD */
	qhca_le32 access;		/* with QHCA_REREG_ACCESS */
	qhca_le64 iova;			/* with QHCA_REREG_TRANS: as REG_MR's */
	qhca_le64 length;
	struct qhca_pbl_desc mem;
	qhca_le32 mr_flags;		/* QHCA_MR_PHYS */
	qhca_le32 reserved;
};

struct qhca_cmd_alloc_mr {
	qhca_le32 pdn;
	qhca_le32 max_pages;		/* <= max_fast_reg_pages */
	qhca_le32 key_variant;
	qhca_le32 reserved;
};

struct qhca_cmd_create_cq {
	struct qhca_pbl_desc mem;	/* depth * QHCA_CQE_SIZE bytes */
	qhca_u8 log_depth;		/* 1..15 */
	qhca_u8 reserved[3];
	qhca_le32 eqn;			/* completion events go to this EQ */
	qhca_le32 db_page;		/* doorbell page allowed to ring this CQ */
	qhca_le32 reserved2;
};

/* RESIZE_CQ: the CQ's new ring; the CQEs not yet released move to it */
struct qhca_cmd_resize_cq {
	qhca_le32 cqn;
	qhca_u8 log_depth;		/* 1..15, room for the CQEs held */
	qhca_u8 reserved[3];
	struct qhca_pbl_desc mem;	/* depth * QHCA_CQE_SIZE bytes */
};

enum qhca_qp_type {
	QHCA_QPT_RC			= 2,
	QHCA_QPT_UC			= 3,	/* SEND and RDMA WRITE, no ACKs */
	QHCA_QPT_UD			= 4,
	QHCA_QPT_GSI			= 1,	/* QP1; at most one */
};

#define QHCA_NO_SRQ			0xffffffffu

struct qhca_cmd_create_qp {
	qhca_u8 type;			/* enum qhca_qp_type */
	qhca_u8 sq_log_depth;		/* 1..15 */
	qhca_u8 rq_log_depth;		/* 1..15; 0 when srqn != QHCA_NO_SRQ */
	qhca_u8 sq_log_stride;		/* send WQE size: 64 << (n - 6), n 6..11 */
	qhca_u8 rq_log_stride;		/* recv WQE size, n 5..11 */
	qhca_u8 sq_sig_all;		/* 1: every WQE completes signaled */
	qhca_le16 reserved;
	qhca_le32 pdn;
	qhca_le32 send_cqn;
	qhca_le32 recv_cqn;
	qhca_le32 srqn;			/* or QHCA_NO_SRQ */
	qhca_le32 db_page;		/* doorbell page allowed to ring this QP */
	qhca_le32 max_inline;		/* <= stride - 64 */
	struct qhca_pbl_desc sq;
	struct qhca_pbl_desc rq;	/* ignored with an SRQ */
};

/* Attribute mask of MODIFY_QP: same bit numbers as Linux's enum ib_qp_attr_mask */
#define QHCA_QP_ATTR_STATE		(1u << 0)
#define QHCA_QP_ATTR_CUR_STATE		(1u << 1)
#define QHCA_QP_ATTR_EN_SQD_ASYNC	(1u << 2)
#define QHCA_QP_ATTR_ACCESS_FLAGS	(1u << 3)
#define QHCA_QP_ATTR_PKEY_INDEX		(1u << 4)
#define QHCA_QP_ATTR_PORT		(1u << 5)
#define QHCA_QP_ATTR_QKEY		(1u << 6)
#define QHCA_QP_ATTR_AV			(1u << 7)
#define QHCA_QP_ATTR_PATH_MTU		(1u << 8)
#define QHCA_QP_ATTR_TIMEOUT		(1u << 9)
#define QHCA_QP_ATTR_RETRY_CNT		(1u << 10)
#define QHCA_QP_ATTR_RNR_RETRY		(1u << 11)
#define QHCA_QP_ATTR_RQ_PSN		(1u << 12)
#define QHCA_QP_ATTR_MAX_QP_RD_ATOMIC	(1u << 13)
#define QHCA_QP_ATTR_MIN_RNR_TIMER	(1u << 15)
#define QHCA_QP_ATTR_SQ_PSN		(1u << 16)
#define QHCA_QP_ATTR_MAX_DEST_RD_ATOMIC	(1u << 17)
#define QHCA_QP_ATTR_DEST_QPN		(1u << 20)

enum qhca_qp_state {			/* Linux's enum ib_qp_state numbering */
	QHCA_QPS_RESET			= 0,
	QHCA_QPS_INIT			= 1,
	QHCA_QPS_RTR			= 2,
	QHCA_QPS_RTS			= 3,
	QHCA_QPS_SQD			= 4,
	QHCA_QPS_SQE			= 5,
	QHCA_QPS_ERR			= 6,
};

/* QP attributes: MODIFY_QP payload (after qpn/attr_mask) and QUERY_QP resp */
struct qhca_qp_attr {
	qhca_u8 qp_state;		/* enum qhca_qp_state */
	qhca_u8 cur_qp_state;
	qhca_u8 path_mtu;		/* IB enum: 1=256 .. 5=4096 */
	qhca_u8 timeout;		/* 4.096us * 2^timeout; 0 = infinite */
	qhca_u8 retry_cnt;		/* 0..7 */
	qhca_u8 rnr_retry;		/* 0..7; 7 = infinite */
	qhca_u8 min_rnr_timer;		/* IB RNR timer encoding, 0..31 */
	qhca_u8 max_rd_atomic;		/* outstanding READ/atomic as requester */
	qhca_u8 max_dest_rd_atomic;	/* as responder */
	qhca_u8 sgid_index;
	qhca_u8 hop_limit;
	qhca_u8 traffic_class;
	qhca_le32 access_flags;		/* QHCA_ACCESS_REMOTE_* allowed on this QP */
	qhca_le32 qkey;
	qhca_le32 dest_qpn;		/* 24 bits */
	qhca_le32 rq_psn;		/* 24 bits */
	qhca_le32 sq_psn;		/* 24 bits */
	qhca_le32 flow_label;		/* 20 bits */
	qhca_u8 dgid[16];		/* network byte order */
	qhca_u8 dmac[6];
	qhca_u8 en_sqd_async_notify;
	qhca_u8 sq_draining;		/* QUERY_QP only */
	qhca_le32 reserved;
};
QHCA_CHECK_SIZE(struct qhca_qp_attr, 64);

struct qhca_cmd_modify_qp {
	qhca_le32 qpn;
	qhca_le32 attr_mask;		/* QHCA_QP_ATTR_* */
	struct qhca_qp_attr attr;
};

struct qhca_cmd_create_srq {
	struct qhca_pbl_desc mem;
	qhca_le32 pdn;
	qhca_le32 db_page;
	qhca_u8 log_depth;		/* 1..15 */
	qhca_u8 log_stride;		/* recv WQE size, 5..11 */
	qhca_le16 reserved;
	qhca_le32 limit;		/* 0: not armed */
};

struct qhca_cmd_modify_srq {
	qhca_le32 srqn;
	qhca_le32 limit;		/* arms the limit event; < depth */
};

/*
 * RESIZE_SRQ: the SRQ's new ring, of the same stride.  The WQEs posted and
 * not yet taken keep their free-running indices: WQE i moves from slot
 * i % old depth to slot i % new depth
 */
struct qhca_cmd_resize_srq {
	qhca_le32 srqn;
	qhca_u8 log_depth;		/* room for the WQEs not yet taken; > limit */
	qhca_u8 reserved[3];		/* 0 */
	struct qhca_pbl_desc mem;	/* depth << log_stride bytes */
};

struct qhca_srq_attr {
	qhca_le32 depth;
	qhca_le32 limit;		/* 0 once the limit event fired */
	qhca_le32 max_sge;
	qhca_le32 reserved;
};
QHCA_CHECK_SIZE(struct qhca_srq_attr, 16);

struct qhca_cmd_create_ah {
	qhca_le32 pdn;
	qhca_u8 sgid_index;
	qhca_u8 hop_limit;
	qhca_u8 traffic_class;
	qhca_u8 reserved;
	qhca_le32 flow_label;
	qhca_u8 dmac[6];
	qhca_le16 reserved2;
	qhca_u8 dgid[16];
};

/*
 * Multicast (UD QPs only): a group is a multicast GID, IPv6 ff00::/8 or
 * IPv4-mapped 224.0.0.0/4; it exists while a QP is attached to it
 */
#define QHCA_MAX_MCAST_GRP		64	/* groups per device */
#define QHCA_MAX_MCAST_QP_ATTACH	16	/* QPs per group */
#define QHCA_MCAST_QPN			0xffffff	/* multicast DestQP */
/*
 * Memory windows share the MR table and its key space (index << 8 |
 * variant): a key names an MR or an MW.  A window is allocated unbound; a
 * BIND_MW WQE binds it to part of an MR with QHCA_ACCESS_MW_BIND, giving
 * it a new key (same index, new variant) and remote rights.  Type 1: bound
 * and unbound (length 0) only by BIND_MW, usable from any QP of its PD.
 * Type 2 (2B): bound only when unbound, to the QP that binds it, which is
 * the only QP its key works on; unbound by LOCAL_INV or a SEND with
 * invalidate on that QP.  DEALLOC_MW of a bound window is allowed; an MR
 * with windows bound cannot be deregistered or re-registered (ERR_BUSY).
 */
#define QHCA_MW_TYPE_1			1
#define QHCA_MW_TYPE_2			2

struct qhca_cmd_alloc_mw {
	qhca_le32 pdn;
	qhca_u8 type;			/* QHCA_MW_TYPE_* */
	qhca_u8 reserved[3];		/* 0 */
};

struct qhca_cmd_mcast {			/* ATTACH_MCAST, DETACH_MCAST */
	qhca_le32 qpn;			/* a UD QP */
	qhca_le32 reserved;		/* 0 */
	qhca_u8 gid[16];		/* the group, network byte order */
};

struct qhca_cmd_query_stats {
	qhca_le32 first;		/* enum qhca_stat; <= QHCA_STAT_NUM */
	qhca_le32 reserved;
};

struct qhca_cmd {
	struct qhca_cmd_hdr hdr;
	union {
		qhca_u8 raw[QHCA_CMD_SIZE - sizeof(struct qhca_cmd_hdr)];
		struct qhca_cmd_gid gid;
		struct qhca_cmd_create_eq create_eq;
		struct qhca_cmd_obj obj;
		struct qhca_cmd_reg_mr reg_mr;
		struct qhca_cmd_alloc_mr alloc_mr;
		struct qhca_cmd_create_cq create_cq;
		struct qhca_cmd_create_qp create_qp;
		struct qhca_cmd_modify_qp modify_qp;
		struct qhca_cmd_create_srq create_srq;
		struct qhca_cmd_modify_srq modify_srq;
		struct qhca_cmd_create_ah create_ah;
		struct qhca_cmd_query_stats query_stats;
		struct qhca_cmd_rereg_mr rereg_mr;
		struct qhca_cmd_resize_cq resize_cq;
		struct qhca_cmd_mcast mcast;
		struct qhca_cmd_resize_srq resize_srq;
		struct qhca_cmd_alloc_mw alloc_mw;
	};
};
QHCA_CHECK_SIZE(struct qhca_cmd, QHCA_CMD_SIZE);

/*
 * Device counters (QUERY_STATS: one qhca_le64 each, in this order from the
 * command's .first on, as many as resp_len holds; the result is how many
 * the device has, so a driver built for fewer or more counters can tell).  They start at 0 when the
 * device is created and are not cleared by a reset; they wrap at 2^64.
 */
enum qhca_stat {
	QHCA_STAT_TX_FRAMES,		/* RoCEv2 frames sent (loopback included) */
	QHCA_STAT_RX_FRAMES,		/* frames received, taken or dropped */
	QHCA_STAT_RX_DROPPED,		/* not RoCEv2 for us, or malformed */
	QHCA_STAT_RX_BAD_ICRC,
	QHCA_STAT_RETRANSMITS,		/* go-backs: timeouts, NAKs, probes */
	QHCA_STAT_GUEST_ERRORS,		/* guest errors and undefined use */
	QHCA_STAT_LOOPBACK,		/* frames sent to the device itself */
	QHCA_STAT_LOOP_DROPPED,		/* of those, dropped: loop queue full */
	QHCA_STAT_TX_BYTES,		/* bytes of the frames counted above */
	QHCA_STAT_RX_BYTES,
	QHCA_STAT_NAKS_SENT,		/* NAKs (not RNR) sent as responder */
	QHCA_STAT_NAKS_RCVD,		/* NAKs (not RNR) taken as requester */
	QHCA_STAT_RNR_NAKS_SENT,
	QHCA_STAT_RNR_NAKS_RCVD,
	QHCA_STAT_SEQ_ERRORS,		/* request packets ahead of the ePSN */
	QHCA_STAT_DUP_REQUESTS,		/* request packets behind the ePSN */
	QHCA_STAT_TIMEOUTS,		/* retransmission timer expiries that
					 * count against retry_cnt */
	QHCA_STAT_RETRY_EXCEEDED,	/* QPs failed: retry_cnt exhausted */
	QHCA_STAT_RNR_RETRY_EXCEEDED,	/* QPs failed: rnr_retry exhausted */
	QHCA_STAT_ECN_MARKED,		/* RC/UC packets taken with ECN CE */
	QHCA_STAT_CNP_SENT,		/* CNPs sent for them (as responder) */
	QHCA_STAT_CNP_HANDLED,		/* CNPs taken by an RC QP that sends */
	QHCA_STAT_CNP_IGNORED,		/* CNPs to a QP that does not (UC, or
					 * not in RTS/SQD) */
	QHCA_STAT_NUM
};

/* QUERY_QP_STATE response: the device's live view of one QP */
struct qhca_qp_state_info {
	qhca_u8 qp_state;		/* enum qhca_qp_state */
	qhca_u8 type;			/* enum qhca_qp_type */
	qhca_u8 retry_left;		/* retries left before RETRY_EXC_ERR */
	qhca_u8 rnr_left;		/* RNR retries left (rnr_retry 7: 7) */
	qhca_le32 next_psn;		/* requester: PSN of the next new packet */
	qhca_le32 acked_psn;		/* requester: all up to here acknowledged */
	qhca_le32 epsn;			/* responder: expected PSN */
	qhca_le16 sq_pi;		/* SQ doorbell value the device has */
	qhca_le16 sq_ci;		/* oldest SQ WQE not yet completed */
	qhca_le16 rq_pi;
	qhca_le16 rq_ci;
	qhca_le32 inflight_bytes;	/* sent, not yet acknowledged */
	qhca_le32 rd_outstanding;	/* READ/atomic requests awaiting replies */
	qhca_le32 srtt_us;		/* smoothed round trip; 0: none measured */
	qhca_le32 window_bytes;		/* RC requester: what it may have in
					 * flight now (it follows the path);
					 * 0 from a device before it */
	qhca_le32 min_rtt_us;		/* shortest round trip measured */
	qhca_le32 cc_window_bytes;	/* RC requester: the limit CNPs set
					 * (congestion control); 0: none */
};
QHCA_CHECK_SIZE(struct qhca_qp_state_info, 48);

/* QUERY_CQ response */
struct qhca_cq_info {
	qhca_le32 depth;
	qhca_le16 pi;			/* next CQE the device writes */
	qhca_le16 ci;			/* consumer index last rung by the driver */
	qhca_u8 arm;			/* 0 not armed, 1 next, 2 solicited */
	qhca_u8 error;			/* overflowed or DMA failed */
	qhca_le16 reserved;
	qhca_le32 eqn;
};
QHCA_CHECK_SIZE(struct qhca_cq_info, 16);

/* QUERY_DEVICE response */
struct qhca_device_attr {
	qhca_le64 fw_version;
	qhca_le64 node_guid;		/* EUI-64 from the MAC, network byte order */
	qhca_le64 max_mr_size;
	qhca_le64 page_size_cap;
	qhca_le32 vendor_id;
	qhca_le32 vendor_part_id;
	qhca_le32 hw_version;
	qhca_le32 max_qp;
	qhca_le32 max_qp_wr;
	qhca_le32 max_sge;
	qhca_le32 max_cq;
	qhca_le32 max_cqe;
	qhca_le32 max_mr;
	qhca_le32 max_pd;
	qhca_le32 max_qp_rd_atom;
	qhca_le32 max_qp_init_rd_atom;
	qhca_le32 max_srq;
	qhca_le32 max_srq_wr;
	qhca_le32 max_srq_sge;
	qhca_le32 max_ah;
	qhca_le32 max_inline;
	qhca_le32 max_eq;
	qhca_le32 max_fast_reg_pages;
	qhca_le32 caps;			/* QHCA_CAP_* */
	qhca_le32 max_mcast_grp;	/* QHCA_MAX_MCAST_GRP */
	qhca_le32 max_mcast_qp_attach;	/* QHCA_MAX_MCAST_QP_ATTACH */
	qhca_le32 reserved[2];
};
QHCA_CHECK_SIZE(struct qhca_device_attr, 128);

/* QUERY_PORT response */
struct qhca_port_attr {
	qhca_le32 link_up;		/* the device's wire (its QEMU netdev) */
	qhca_le32 max_mtu;		/* bytes: 4096 */
	qhca_le32 gid_tbl_len;
	qhca_le32 reserved[5];
};
QHCA_CHECK_SIZE(struct qhca_port_attr, 32);

/* ------------------------------------------------------------------------
 * Event queues.  The async EQ (registers AEQ_*) reports async events and
 * raises vector 0 when armed; completion EQs (CREATE_EQ) report
 * QHCA_EQE_COMPLETION and raise their own vector when armed.  An EQ is armed
 * by a doorbell with the arm bit and disarmed by each interrupt it raises.
 */
#define QHCA_EQE_SIZE			16

enum qhca_eqe_type {
	QHCA_EQE_COMPLETION		= 0x01,	/* obj: cqn */
	QHCA_EQE_CQ_ERROR		= 0x02,	/* obj: cqn (overflow, DMA error) */
	QHCA_EQE_QP_FATAL		= 0x03,	/* obj: qpn */
	QHCA_EQE_QP_REQ_ERR		= 0x04,	/* obj: qpn */
	QHCA_EQE_QP_ACCESS_ERR		= 0x05,	/* obj: qpn */
	QHCA_EQE_COMM_EST		= 0x06,	/* obj: qpn */
	QHCA_EQE_SQ_DRAINED		= 0x07,	/* obj: qpn */
	QHCA_EQE_LAST_WQE_REACHED	= 0x08,	/* obj: qpn */
	QHCA_EQE_SRQ_LIMIT		= 0x09,	/* obj: srqn */
	QHCA_EQE_PORT_ACTIVE		= 0x0a,	/* obj: port (1) */
	QHCA_EQE_PORT_ERR		= 0x0b,	/* obj: port (1) */
	QHCA_EQE_DEVICE_FATAL		= 0x0c,
};

struct qhca_eqe {
	qhca_u8 type;			/* enum qhca_eqe_type */
	qhca_u8 reserved[2];
	qhca_u8 owner;			/* QHCA_OWNER_BIT */
	qhca_le32 obj;
	qhca_le64 data;			/* reserved */
};
QHCA_CHECK_SIZE(struct qhca_eqe, QHCA_EQE_SIZE);

/* ------------------------------------------------------------------------
 * Work queue entries.  A send WQE is a 64-byte header followed by num_sge
 * struct qhca_sge or by inline_len bytes of inline data; its size (stride)
 * is fixed per QP at creation.  A receive WQE is a 16-byte header followed
 * by num_sge struct qhca_sge.
 */
enum qhca_wqe_opcode {			/* Linux's enum ib_wr_opcode numbering */
	QHCA_WQE_RDMA_WRITE		= 0x00,
	QHCA_WQE_RDMA_WRITE_WITH_IMM	= 0x01,
	QHCA_WQE_SEND			= 0x02,
	QHCA_WQE_SEND_WITH_IMM		= 0x03,
	QHCA_WQE_RDMA_READ		= 0x04,
	QHCA_WQE_ATOMIC_CMP_AND_SWP	= 0x05,
	QHCA_WQE_ATOMIC_FETCH_AND_ADD	= 0x06,
	QHCA_WQE_LOCAL_INV		= 0x07,	/* an MR or a type 2 MW */
	QHCA_WQE_BIND_MW		= 0x08,	/* bind.*, no SGEs */
	QHCA_WQE_SEND_WITH_INV		= 0x09,
	QHCA_WQE_FLUSH			= 0x0e,	/* RC; rdma.*, no SGEs */
	QHCA_WQE_ATOMIC_WRITE		= 0x0f,	/* RC; rdma.*, no SGEs */
	QHCA_WQE_REG_MR			= 0x20,	/* fast registration */
};
/* The QP types and fields of each: qhca_wqe_op_info(), after the CQEs */

/* The largest message, and FLUSH range (the port's max_msg_sz): 2 GiB */
#define QHCA_MAX_MSG_SIZE		0x80000000ull

/* FLUSH placement types and selectivity levels (IBA 1.5 FETH) */
#define QHCA_FLUSH_GLOBAL		(1u << 0)
#define QHCA_FLUSH_PERSISTENT		(1u << 1)	/* never granted */
#define QHCA_FLUSH_TYPE_MASK		0x0fu
#define QHCA_FLUSH_RANGE		0u
#define QHCA_FLUSH_MR			1u
#define QHCA_FLUSH_LEVEL_SHIFT		4

#define QHCA_WQE_SIGNALED		(1u << 0)
#define QHCA_WQE_SOLICITED		(1u << 1)
#define QHCA_WQE_INLINE			(1u << 2)
#define QHCA_WQE_FENCE			(1u << 3)

#define QHCA_SEND_WQE_HDR_SIZE		64
#define QHCA_RECV_WQE_HDR_SIZE		16
#define QHCA_SEND_WQE_MIN_LOG_STRIDE	6
#define QHCA_RECV_WQE_MIN_LOG_STRIDE	5
#define QHCA_WQE_MAX_LOG_STRIDE		11
#define QHCA_MAX_SGE			16
#define QHCA_MAX_INLINE			512

struct qhca_sge {
	qhca_le64 addr;
	qhca_le32 length;
	qhca_le32 lkey;
};
QHCA_CHECK_SIZE(struct qhca_sge, 16);

struct qhca_send_wqe {
	qhca_u8 opcode;			/* enum qhca_wqe_opcode */
	qhca_u8 flags;			/* QHCA_WQE_* */
	qhca_u8 num_sge;
	qhca_u8 reserved0;
	qhca_le32 inline_len;		/* with QHCA_WQE_INLINE */
	qhca_le64 wr_id;
	qhca_u8 imm_data[4];		/* *_WITH_IMM: copied to the wire as is */
	qhca_le32 invalidate_rkey;	/* SEND_WITH_INV, LOCAL_INV */
	union {
		struct {		/* RDMA and atomic opcodes */
			qhca_le64 remote_addr;
			qhca_le32 rkey;
			/*
			 * FLUSH: the FETH as sent: placement type in bits
			 * 3:0 (QHCA_FLUSH_GLOBAL), selectivity level in bits
			 * 5:4 (QHCA_FLUSH_RANGE or _MR); 0 otherwise
			 */
			qhca_le32 feth;
			/*
			 * compare or add data; FLUSH: the length of the range;
			 * ATOMIC_WRITE: the 8 bytes to write, in the order
			 * they are to be in remote memory
			 */
			qhca_le64 compare_add;
			qhca_le64 swap;
			qhca_le64 reserved2;
		} rdma;
		struct {		/* UD and GSI sends */
			qhca_le32 ahn;
			qhca_le32 remote_qpn;
			qhca_le32 remote_qkey;
			qhca_le32 reserved[7];
		} ud;
		struct {		/* BIND_MW */
			qhca_le64 addr;		/* window start, an iova of the MR */
			qhca_le64 length;	/* 0: unbind (type 1 only) */
			qhca_le32 mr_lkey;	/* the MR (QHCA_ACCESS_MW_BIND) */
			qhca_le32 mw_key;	/* the window's key now */
			qhca_le32 new_key;	/* its key after: same index */
			qhca_le32 access;	/* QHCA_ACCESS_REMOTE_* */
		} bind;
		struct {		/* REG_MR */
			qhca_le64 iova;
			qhca_le64 length;
			qhca_le64 pbl_addr;	/* one-level list of 4 KiB pages */
			qhca_le32 key;		/* new key: same index, new variant */
			qhca_le32 access;	/* QHCA_ACCESS_* */
			qhca_le32 num_pages;
			qhca_u8 page_shift;
			qhca_u8 reserved[3];
		} reg;
	};
};
QHCA_CHECK_SIZE(struct qhca_send_wqe, QHCA_SEND_WQE_HDR_SIZE);

struct qhca_recv_wqe {
	qhca_le64 wr_id;
	qhca_u8 num_sge;
	qhca_u8 reserved[7];
};
QHCA_CHECK_SIZE(struct qhca_recv_wqe, QHCA_RECV_WQE_HDR_SIZE);

/* ------------------------------------------------------------------------
 * Queue geometry: the one statement of the sizing rules.  The driver sizes
 * kernel queues and checks user queues with these, returns what it computed
 * in the create responses (qhca-abi.h), and the provider, which allocates
 * user rings before the create, computes the same with these and refuses a
 * create whose response differs.  tests/unit/test-qhca-geom.c checks them.
 *
 *   depth (SQ, RQ, SRQ, CQ) = next power of two of max(n, 8), at most
 *                             QHCA_MAX_QUEUE_DEPTH and the device's limit;
 *   send stride = next power of two of
 *                 64 + max(16 * max_sge, max_inline), at least 64;
 *   recv stride = next power of two of 16 + 16 * max_sge, at least 32;
 *   the caps a queue reports are what its stride holds (at most
 *   QHCA_MAX_SGE SGEs and QHCA_MAX_INLINE bytes), and applying the rules to
 *   those caps gives the same stride again.
 *
 * Rings are indexed by free-running 16-bit counters, so a ring has at most
 * 2^15 entries (a full ring must differ from an empty one).
 */
#define QHCA_MAX_QUEUE_LOG		15
#define QHCA_MAX_QUEUE_DEPTH		(1u << QHCA_MAX_QUEUE_LOG)
#define QHCA_MIN_WQ_DEPTH		8u	/* SQ, RQ, SRQ */
#define QHCA_MIN_CQ_DEPTH		8u

struct qhca_wq_geom {
	qhca_u32 depth;			/* entries, a power of two */
	qhca_u32 log_stride;		/* log2 of the entry size in bytes */
	qhca_u32 max_sge;		/* SGEs one entry holds */
	qhca_u32 max_inline;		/* inline bytes one entry holds (SQ) */
};

/* Smallest l with 2^l >= n: 0 for n <= 1, at most 32 */
static inline qhca_u32 qhca_geom_log2_ceil(qhca_u32 n)
{
	qhca_u32 l = 0;

	while (l < 32 && ((qhca_u32)1 << l) < n)
		l++;
	return l;
}

/*
 * Depth for n entries: the next power of two of max(n, min_depth), or 0 when
 * that is above max_depth (which QHCA_MAX_QUEUE_DEPTH also caps).
 */
static inline qhca_u32 qhca_geom_depth(qhca_u32 n, qhca_u32 min_depth,
				       qhca_u32 max_depth)
{
	qhca_u32 l;

	if (max_depth > QHCA_MAX_QUEUE_DEPTH)
		max_depth = QHCA_MAX_QUEUE_DEPTH;
	if (n > max_depth)
		return 0;
	l = qhca_geom_log2_ceil(n < min_depth ? min_depth : n);
	if (l > QHCA_MAX_QUEUE_LOG || (1u << l) > max_depth)
		return 0;
	return 1u << l;
}

/* SQ, RQ and SRQ depth for max_wr work requests; 0 if out of range */
static inline qhca_u32 qhca_geom_wq_depth(qhca_u32 max_wr, qhca_u32 max_depth)
{
	return qhca_geom_depth(max_wr, QHCA_MIN_WQ_DEPTH, max_depth);
}

/* CQ depth for cqe entries (all of them usable); 0 if out of range */
static inline qhca_u32 qhca_geom_cq_depth(qhca_u32 cqe, qhca_u32 max_depth)
{
	if (cqe < 1)
		return 0;
	return qhca_geom_depth(cqe, QHCA_MIN_CQ_DEPTH, max_depth);
}

/* Send queue geometry; 0, or -1 when a cap is out of range */
static inline int qhca_geom_sq(qhca_u32 max_wr, qhca_u32 max_sge,
			       qhca_u32 max_inline, qhca_u32 max_depth,
			       struct qhca_wq_geom *g)
{
	qhca_u32 need, room;

	if (max_sge > QHCA_MAX_SGE || max_inline > QHCA_MAX_INLINE)
		return -1;
	g->depth = qhca_geom_wq_depth(max_wr, max_depth);
	if (!g->depth)
		return -1;
	need = max_sge * (qhca_u32)sizeof(struct qhca_sge);
	if (max_inline > need)
		need = max_inline;
	g->log_stride = qhca_geom_log2_ceil(QHCA_SEND_WQE_HDR_SIZE + need);
	if (g->log_stride < QHCA_SEND_WQE_MIN_LOG_STRIDE)
		g->log_stride = QHCA_SEND_WQE_MIN_LOG_STRIDE;
	if (g->log_stride > QHCA_WQE_MAX_LOG_STRIDE)
		return -1;
	room = (1u << g->log_stride) - QHCA_SEND_WQE_HDR_SIZE;
	g->max_sge = room / (qhca_u32)sizeof(struct qhca_sge);
	if (g->max_sge > QHCA_MAX_SGE)
		g->max_sge = QHCA_MAX_SGE;
	g->max_inline = room > QHCA_MAX_INLINE ? QHCA_MAX_INLINE : room;
	return 0;
}

/* Receive queue (RQ or SRQ) geometry; 0, or -1 when out of range */
static inline int qhca_geom_rq(qhca_u32 max_wr, qhca_u32 max_sge,
			       qhca_u32 max_depth, struct qhca_wq_geom *g)
{
	if (max_sge > QHCA_MAX_SGE)
		return -1;
	g->depth = qhca_geom_wq_depth(max_wr, max_depth);
	if (!g->depth)
		return -1;
	g->log_stride = qhca_geom_log2_ceil(QHCA_RECV_WQE_HDR_SIZE +
					    max_sge *
					    (qhca_u32)sizeof(struct qhca_sge));
	if (g->log_stride < QHCA_RECV_WQE_MIN_LOG_STRIDE)
		g->log_stride = QHCA_RECV_WQE_MIN_LOG_STRIDE;
	if (g->log_stride > QHCA_WQE_MAX_LOG_STRIDE)
		return -1;
	g->max_sge = ((1u << g->log_stride) - QHCA_RECV_WQE_HDR_SIZE) /
		     (qhca_u32)sizeof(struct qhca_sge);
	if (g->max_sge > QHCA_MAX_SGE)
		g->max_sge = QHCA_MAX_SGE;
	g->max_inline = 0;
	return 0;
}

/* ------------------------------------------------------------------------
 * Completion queue entries
 */
#define QHCA_CQE_SIZE			32

enum qhca_cqe_status {			/* Linux's enum ib_wc_status numbering */
	QHCA_CQE_SUCCESS		= 0,
	QHCA_CQE_LOC_LEN_ERR		= 1,
	QHCA_CQE_LOC_QP_OP_ERR		= 2,
	QHCA_CQE_LOC_PROT_ERR		= 4,
	QHCA_CQE_WR_FLUSH_ERR		= 5,
	QHCA_CQE_MW_BIND_ERR		= 6,
	QHCA_CQE_BAD_RESP_ERR		= 7,
	QHCA_CQE_LOC_ACCESS_ERR		= 8,
	QHCA_CQE_REM_INV_REQ_ERR	= 9,
	QHCA_CQE_REM_ACCESS_ERR		= 10,
	QHCA_CQE_REM_OP_ERR		= 11,
	QHCA_CQE_RETRY_EXC_ERR		= 12,
	QHCA_CQE_RNR_RETRY_EXC_ERR	= 13,
	QHCA_CQE_REM_ABORT_ERR		= 16,
	QHCA_CQE_GENERAL_ERR		= 21,
};

enum qhca_cqe_opcode {			/* Linux's enum ib_wc_opcode numbering */
	QHCA_CQE_OP_SEND		= 0,
	QHCA_CQE_OP_RDMA_WRITE		= 1,
	QHCA_CQE_OP_RDMA_READ		= 2,
	QHCA_CQE_OP_COMP_SWAP		= 3,
	QHCA_CQE_OP_FETCH_ADD		= 4,
	QHCA_CQE_OP_BIND_MW		= 5,
	QHCA_CQE_OP_LOCAL_INV		= 6,
	QHCA_CQE_OP_FLUSH		= 8,
	QHCA_CQE_OP_ATOMIC_WRITE	= 9,
	QHCA_CQE_OP_REG_MR		= 10,	/* after IB_WC_ATOMIC_WRITE (9) */
	QHCA_CQE_OP_RECV		= 128,
	QHCA_CQE_OP_RECV_RDMA_WITH_IMM	= 129,
};

#define QHCA_CQE_WITH_IMM		(1u << 0)
#define QHCA_CQE_WITH_INV		(1u << 1)
#define QHCA_CQE_GRH			(1u << 2)	/* UD: GRH in the first 40 bytes */
#define QHCA_CQE_SOLICITED		(1u << 3)

struct qhca_cqe {
	qhca_le64 wr_id;
	qhca_u8 status;			/* enum qhca_cqe_status */
	qhca_u8 opcode;			/* enum qhca_cqe_opcode */
	qhca_u8 flags;			/* QHCA_CQE_* */
	qhca_u8 owner;			/* QHCA_OWNER_BIT */
	qhca_le32 byte_len;
	qhca_le32 qpn;
	qhca_le32 src_qp;		/* UD/GSI receive */
	union {
		qhca_u8 imm_data[4];	/* WITH_IMM: as received */
		qhca_le32 invalidated_rkey; /* WITH_INV */
	};
	qhca_u8 network_hdr_type;	/* UD receive: QHCA_NET_* */
	qhca_u8 vendor_err;		/* device detail for error statuses */
	qhca_le16 wqe_index;		/* SQ/RQ index of the completed WQE */
};
QHCA_CHECK_SIZE(struct qhca_cqe, QHCA_CQE_SIZE);

/*
 * UD receive buffers start with a 40-byte GRH slot: the IPv6 header (0..39)
 * or the IPv4 header (20..39, 0..19 zero), as network_hdr_type says (the
 * values of Linux's enum rdma_network_type)
 */
#define QHCA_GRH_SIZE			40
#define QHCA_NET_ROCE_V2_IPV4		2
#define QHCA_NET_ROCE_V2_IPV6		3

/* ------------------------------------------------------------------------
 * The send opcodes: one table of what each WQE opcode is.  Per opcode: the
 * QP types that may post it, the header fields it uses, how the device
 * executes it, and the opcode of its CQE on the requester side.  The
 * device checks WQEs against it, the driver and the provider build them
 * from it; adding an opcode is one entry here and its executor.
 * docs/hardware.md section 8 shows it as a table, and
 * tests/unit/test-qhca-opcodes.c checks it.
 *
 * QP types are a bit mask of enum qhca_qp_type values.
 */
#define QHCA_QPT_BIT(type)		(1u << (type))
#define QHCA_QPT_BITS_CONN		(QHCA_QPT_BIT(QHCA_QPT_RC) | \
					 QHCA_QPT_BIT(QHCA_QPT_UC))
#define QHCA_QPT_BITS_ANY		(QHCA_QPT_BITS_CONN | \
					 QHCA_QPT_BIT(QHCA_QPT_UD) | \
					 QHCA_QPT_BIT(QHCA_QPT_GSI))

/* What an opcode carries in struct qhca_send_wqe and how it is executed */
#define QHCA_WQE_OPF_REMOTE		(1u << 0)	/* rdma.remote_addr, rdma.rkey */
#define QHCA_WQE_OPF_IMM		(1u << 1)	/* imm_data */
/*
 * rdma.compare_add and (CMP_AND_SWP) rdma.swap are the operands; the SGEs
 * total exactly 8 bytes, where the original value lands (else LOC_LEN_ERR)
 */
#define QHCA_WQE_OPF_ATOMIC		(1u << 2)
/* QHCA_WQE_INLINE allowed: it carries data from the SQ to the wire */
#define QHCA_WQE_OPF_INLINE		(1u << 3)
#define QHCA_WQE_OPF_INV		(1u << 4)	/* invalidate_rkey */
/* Executed by the device itself: nothing is sent, no PSN, no response */
#define QHCA_WQE_OPF_LOCAL		(1u << 5)
/*
 * Answered with a READ or ATOMIC response, not an ACK: one of the QP's
 * max_rd_atomic outstanding requests and of the responder's resources
 */
#define QHCA_WQE_OPF_RD_ATOMIC		(1u << 6)
/* Everything is in the header: a WQE with SGEs is LOC_QP_OP_ERR */
#define QHCA_WQE_OPF_NO_SGE		(1u << 7)

/* One more than the largest WQE opcode: the table's size */
#define QHCA_WQE_OP_COUNT		(QHCA_WQE_REG_MR + 1)

struct qhca_wqe_op_info {
	qhca_u32 flags;			/* QHCA_WQE_OPF_* */
	qhca_u8 qp_types;		/* QHCA_QPT_BIT() of each type that may post it */
	qhca_u8 cqe_opcode;		/* enum qhca_cqe_opcode of its send CQE */
};

/*
 * The entry of WQE opcode @opcode, or NULL for a value that is no opcode
 * (any 32-bit value: the driver passes its enum ib_wr_opcode as it is).
 * The table is inside the function so that a file that does not use it
 * has no unused variable.
 */
static inline const struct qhca_wqe_op_info *qhca_wqe_op_info(qhca_u32 opcode)
{
	static const struct qhca_wqe_op_info ops[QHCA_WQE_OP_COUNT] = {
		[QHCA_WQE_RDMA_WRITE] = {
			.qp_types = QHCA_QPT_BITS_CONN,
			.flags = QHCA_WQE_OPF_REMOTE | QHCA_WQE_OPF_INLINE,
			.cqe_opcode = QHCA_CQE_OP_RDMA_WRITE,
		},
		[QHCA_WQE_RDMA_WRITE_WITH_IMM] = {
			.qp_types = QHCA_QPT_BITS_CONN,
			.flags = QHCA_WQE_OPF_REMOTE | QHCA_WQE_OPF_IMM |
				 QHCA_WQE_OPF_INLINE,
			.cqe_opcode = QHCA_CQE_OP_RDMA_WRITE,
		},
		[QHCA_WQE_SEND] = {
			.qp_types = QHCA_QPT_BITS_ANY,
			.flags = QHCA_WQE_OPF_INLINE,
			.cqe_opcode = QHCA_CQE_OP_SEND,
		},
		[QHCA_WQE_SEND_WITH_IMM] = {
			.qp_types = QHCA_QPT_BITS_ANY,
			.flags = QHCA_WQE_OPF_IMM | QHCA_WQE_OPF_INLINE,
			.cqe_opcode = QHCA_CQE_OP_SEND,
		},
		[QHCA_WQE_RDMA_READ] = {
			.qp_types = QHCA_QPT_BIT(QHCA_QPT_RC),
			.flags = QHCA_WQE_OPF_REMOTE | QHCA_WQE_OPF_RD_ATOMIC,
			.cqe_opcode = QHCA_CQE_OP_RDMA_READ,
		},
		[QHCA_WQE_ATOMIC_CMP_AND_SWP] = {
			.qp_types = QHCA_QPT_BIT(QHCA_QPT_RC),
			.flags = QHCA_WQE_OPF_REMOTE | QHCA_WQE_OPF_ATOMIC |
				 QHCA_WQE_OPF_RD_ATOMIC,
			.cqe_opcode = QHCA_CQE_OP_COMP_SWAP,
		},
		[QHCA_WQE_ATOMIC_FETCH_AND_ADD] = {
			.qp_types = QHCA_QPT_BIT(QHCA_QPT_RC),
			.flags = QHCA_WQE_OPF_REMOTE | QHCA_WQE_OPF_ATOMIC |
				 QHCA_WQE_OPF_RD_ATOMIC,
			.cqe_opcode = QHCA_CQE_OP_FETCH_ADD,
		},
		[QHCA_WQE_LOCAL_INV] = {
			.qp_types = QHCA_QPT_BITS_ANY,
			.flags = QHCA_WQE_OPF_INV | QHCA_WQE_OPF_LOCAL,
			.cqe_opcode = QHCA_CQE_OP_LOCAL_INV,
		},
		[QHCA_WQE_BIND_MW] = {
			.qp_types = QHCA_QPT_BITS_CONN,
			.flags = QHCA_WQE_OPF_LOCAL | QHCA_WQE_OPF_NO_SGE,
			.cqe_opcode = QHCA_CQE_OP_BIND_MW,
		},
		[QHCA_WQE_SEND_WITH_INV] = {
			.qp_types = QHCA_QPT_BIT(QHCA_QPT_RC),
			.flags = QHCA_WQE_OPF_INV | QHCA_WQE_OPF_INLINE,
			.cqe_opcode = QHCA_CQE_OP_SEND,
		},
		[QHCA_WQE_FLUSH] = {
			.qp_types = QHCA_QPT_BIT(QHCA_QPT_RC),
			.flags = QHCA_WQE_OPF_REMOTE | QHCA_WQE_OPF_RD_ATOMIC |
				 QHCA_WQE_OPF_NO_SGE,
			.cqe_opcode = QHCA_CQE_OP_FLUSH,
		},
		[QHCA_WQE_ATOMIC_WRITE] = {
			.qp_types = QHCA_QPT_BIT(QHCA_QPT_RC),
			.flags = QHCA_WQE_OPF_REMOTE | QHCA_WQE_OPF_RD_ATOMIC |
				 QHCA_WQE_OPF_NO_SGE,
			.cqe_opcode = QHCA_CQE_OP_ATOMIC_WRITE,
		},
		[QHCA_WQE_REG_MR] = {
			.qp_types = QHCA_QPT_BITS_ANY,
			.flags = QHCA_WQE_OPF_LOCAL,
			.cqe_opcode = QHCA_CQE_OP_REG_MR,
		},
	};

	if (opcode >= QHCA_WQE_OP_COUNT || !ops[opcode].qp_types)
		return (const struct qhca_wqe_op_info *)0;
	return &ops[opcode];
}

/* Nonzero if a QP of @qp_type (enum qhca_qp_type) may post @opcode */
static inline int qhca_wqe_op_allowed(qhca_u32 opcode, qhca_u32 qp_type)
{
	const struct qhca_wqe_op_info *op = qhca_wqe_op_info(opcode);

	return op && qp_type < 8 && (op->qp_types & QHCA_QPT_BIT(qp_type));
}

/* Nonzero if @opcode is an opcode with every QHCA_WQE_OPF_* bit of @flags */
static inline int qhca_wqe_op_has(qhca_u32 opcode, qhca_u32 flags)
{
	const struct qhca_wqe_op_info *op = qhca_wqe_op_info(opcode);

	return op && (op->flags & flags) == flags;
}

#endif /* QHCA_HW_H */
