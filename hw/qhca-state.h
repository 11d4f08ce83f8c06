/*
 * qhca device logic, bottom layer: the device's state and its object
 * tables, and the only ways out of the device logic (qhca_op_*()).
 * Independent of QOM/PCI/netdev: the glue in qhca.c hands it a QhcaCoreOps
 * with DMA, interrupt, transmit and timer callbacks, so the device logic
 * can also run in host unit tests, the harness and the fuzzer.
 *
 * The layers above, each using only those below it: qhca-mem.h (page
 * lists, rings, host queues, the memory budget), qhca-cq.h (CQs and EQs),
 * qhca-mr.h (MR and window keys), the transport engine (qhca-qp.h),
 * the commands (qhca-cmd.h) and the device's entry points (qhca-core.h).
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_QHCA_STATE_H
#define HW_QHCA_STATE_H

#include "hw/qhca/qhca_hw.h"

/* Device limits (reported by QUERY_DEVICE) */
#define QHCA_MAX_PD             1024
#define QHCA_MAX_MR             4096    /* key index 1..4095 */
#define QHCA_MAX_CQ             1024
#define QHCA_MAX_QP             1024    /* qpn 1 (GSI) .. 1023 */
#define QHCA_MAX_SRQ            256
#define QHCA_MAX_AH             4096
#define QHCA_MAX_QP_WR          4096
#define QHCA_MAX_CQE            32768
#define QHCA_MAX_RD_ATOMIC      16
#define QHCA_MAX_FAST_REG_PAGES 512
#define QHCA_MAX_MR_SIZE        (1ULL << 32)
/*
 * Host memory the device keeps for guest-created objects, in 8-byte units
 * (16 MiB): the page lists of rings and MRs and each QP's engine state (one
 * entry per SQ slot).  Fixed-size objects are bounded by their tables.
 */
#define QHCA_PAGE_BUDGET        (2u << 20)
/* Data in flight per QP: the default, and what "window-kib" may set */
#define QHCA_WINDOW_DEFAULT     (64 * 1024)
#define QHCA_WINDOW_MIN         (16 * 1024)
#define QHCA_WINDOW_LIMIT       (4 * 1024 * 1024)
/* What one run of the bottom half sends at most, all QPs together */
#define QHCA_RUN_TX_FRAMES      1024
#define QHCA_RUN_TX_BYTES       (2u << 20)

typedef struct QhcaCore QhcaCore;

typedef struct QhcaCoreOps {
    /* Return false if the access failed (no memory there, bus master off) */
    bool (*dma_read)(void *opaque, uint64_t addr, void *buf, uint64_t len);
    bool (*dma_write)(void *opaque, uint64_t addr, const void *buf,
                      uint64_t len);
    void (*irq)(void *opaque, unsigned vector);
    void (*tx)(void *opaque, const uint8_t *frame, size_t len);
    bool (*link_up)(void *opaque);
    /* Ask for qhca_core_run() to be called soon (a bottom half) */
    void (*schedule)(void *opaque);
    int64_t (*now_ns)(void *opaque);
    /* Call qhca_core_timer() at deadline_ns; -1 cancels */
    void (*timer_mod)(void *opaque, int64_t deadline_ns);
    /* The receive queue has room again (qemu_flush_queued_packets) */
    void (*rx_resume)(void *opaque);
} QhcaCoreOps;

/* Frames received and not yet processed (bounded) */
#define QHCA_RXQ_MAX_FRAMES     4096
#define QHCA_RXQ_MAX_BYTES      (32u << 20)
/*
 * Frames the device sent to itself (loopback), waiting to be received like
 * frames from the wire (bounded: dropped when full), and how many of them
 * one run of the bottom half receives at most (as many as a run may send)
 */
#define QHCA_LOOPQ_MAX_FRAMES   2048
#define QHCA_LOOPQ_MAX_BYTES    (8u << 20)
#define QHCA_RUN_LOOP_FRAMES    QHCA_RUN_TX_FRAMES
/* Largest frame the device sends: headers + 4096-byte MTU payload + ICRC */
#define QHCA_TX_FRAME_MAX       4352
/*
 * Received frames up to this long are queued in buffers the device keeps
 * (at most QHCA_RX_POOL_LEN of them once given back, 2.2 MiB), longer ones
 * in buffers of their own
 */
#define QHCA_RX_POOL_FRAME      QHCA_TX_FRAME_MAX
#define QHCA_RX_POOL_LEN        512
/* Longer received frames cannot be RoCEv2 from a 4096-byte MTU */
#define QHCA_MAX_RX_FRAME       9216

/* Memory described by a page list, copied from the guest at creation */
typedef struct QhcaPages {
    uint64_t *addr;
    uint32_t count;
    uint8_t shift;
} QhcaPages;

/* A ring in guest memory */
typedef struct QhcaRing {
    QhcaPages mem;
    uint32_t log_depth;
    uint32_t log_stride;
    uint16_t pi;
    uint16_t ci;
} QhcaRing;

/*
 * A host queue: a queue software sets up by registers before ENABLE, in
 * one contiguous block of guest memory of 2^log_depth entries (the command
 * queue, its completion queue, the async event queue).  Software writes
 * the command queue and the device the other two; each has one doorbell.
 */
typedef struct QhcaHostQueue {
    uint64_t base;              /* registers *_BASE_LO/HI */
    uint32_t log_depth;         /* register *_LOG_DEPTH */
    uint16_t pi;
    uint16_t ci;
    bool armed;                 /* device-written: interrupt at the next */
} QhcaHostQueue;

typedef struct QhcaPd {
    uint32_t refs;
} QhcaPd;

/*
 * An MR, or a memory window (mw_type != 0), in one table and key space.  A
 * bound window's iova, length and access are the window's; it reaches
 * memory through the MR whose key is mw_mr_key, which counts it in mw_bound
 * (an MR with windows bound is neither deregistered nor re-registered).
 */
typedef struct QhcaMr {
    uint32_t pdn;
    uint32_t key;               /* index << 8 | variant */
    uint32_t access;
    bool valid;                 /* fast-register MRs start invalid */
    bool phys;
    bool fast_reg;
    uint32_t max_pages;         /* fast_reg */
    uint64_t iova;
    uint64_t length;
    QhcaPages pages;
    uint32_t mw_bound;          /* MR: windows bound to it */
    uint8_t mw_type;            /* MW: QHCA_MW_TYPE_1 or _2; 0: an MR */
    uint32_t mw_mr_key;         /* MW while valid (bound): its MR */
    uint32_t mw_qpn;            /* type 2 MW while valid: the one QP */
} QhcaMr;

typedef struct QhcaEq {
    QhcaRing ring;
    uint32_t vector;
    uint32_t refs;
    bool armed;
} QhcaEq;

enum qhca_cq_arm {
    QHCA_CQ_DISARMED,
    QHCA_CQ_ARM_NEXT,
    QHCA_CQ_ARM_SOLICITED,
};

typedef struct QhcaCq {
    QhcaRing ring;
    uint32_t eqn;
    uint32_t db_page;
    uint32_t refs;
    enum qhca_cq_arm arm;
    bool error;
} QhcaCq;

typedef struct QhcaSrq {
    QhcaRing ring;
    uint32_t pdn;
    uint32_t db_page;
    uint32_t limit;
    uint32_t refs;
} QhcaSrq;

typedef struct QhcaAh {
    uint32_t pdn;
    uint8_t sgid_index;
    uint8_t hop_limit;
    uint8_t traffic_class;
    uint32_t flow_label;
    uint8_t dmac[6];
    uint8_t dgid[16];
} QhcaAh;

typedef struct QhcaQpEngine QhcaQpEngine;

typedef struct QhcaQp {
    uint32_t qpn;
    uint8_t type;
    uint32_t pdn;
    uint32_t send_cqn;
    uint32_t recv_cqn;
    uint32_t srqn;
    uint32_t db_page;
    uint32_t max_inline;
    bool sq_sig_all;
    QhcaRing sq;
    QhcaRing rq;
    struct qhca_qp_attr attr;   /* current attributes, host-endian fields */
    uint32_t attr_set;          /* QHCA_QP_ATTR_* ever set */
    QhcaQpEngine *eng;          /* transport state (qhca-qp.c) */
} QhcaQp;

/* A multicast group: free while no QP is attached (nqp == 0) */
typedef struct QhcaMcg {
    uint8_t gid[16];
    uint8_t mac[6];             /* its Ethernet multicast MAC */
    uint32_t nqp;
    uint32_t qpn[QHCA_MAX_MCAST_QP_ATTACH];
} QhcaMcg;

typedef struct QhcaGid {
    bool valid;
    uint8_t gid[16];
} QhcaGid;

struct QhcaCore {
    const QhcaCoreOps *ops;
    void *opaque;
    uint8_t mac[6];
    uint32_t window_bytes;      /* limit of data in flight, per QP and for */
                                /* all QPs together */
    uint64_t inflight_bytes;    /* unacknowledged, all QPs (per run) */
    bool ecn;                   /* congestion control (qhca-cc.c) */
    uint32_t drop_ppm;          /* received frames dropped on purpose */
    uint64_t drop_rng;

    /* registers */
    uint32_t ctrl;
    uint32_t status;
    uint32_t fatal_code;

    /*
     * The host queues: the command queue (cmdq.pi is the last doorbell
     * value, cmdq.ci the next command to execute), its completion queue
     * and the async event queue
     */
    QhcaHostQueue cmdq;
    QhcaHostQueue cmdcq;
    QhcaHostQueue aeq;

    QhcaGid gid[QHCA_GID_TABLE_LEN];
    QhcaEq *eq[QHCA_MAX_EQS];
    QhcaPd *pd[QHCA_MAX_PD];
    QhcaMr *mr[QHCA_MAX_MR];
    uint8_t mw_variant;         /* the key variant of the next window */
    QhcaCq *cq[QHCA_MAX_CQ];
    QhcaQp *qp[QHCA_MAX_QP];
    QhcaSrq *srq[QHCA_MAX_SRQ];
    QhcaAh *ah[QHCA_MAX_AH];
    QhcaMcg mcg[QHCA_MAX_MCAST_GRP];
    uint32_t pages_used;        /* against QHCA_PAGE_BUDGET */
    bool link_was_up;

    /* received frames, processed by qhca_core_run() */
    GQueue rxq;
    uint32_t rxq_bytes;
    bool rx_blocked;            /* told the net layer we are full */
    /* frames sent to ourselves, processed by qhca_core_run() too */
    GQueue loopq;
    uint32_t loopq_bytes;
    /*
     * Frame buffers of QHCA_RX_POOL_FRAME bytes the two queues took and gave
     * back, for the next frames (qhca-core.c): no allocation per frame
     */
    void *rx_pool[QHCA_RX_POOL_LEN];
    uint32_t rx_pool_len;
    uint8_t txbuf[QHCA_TX_FRAME_MAX];
    uint16_t ip_id;
    int64_t timer_deadline;     /* -1: not armed */
    bool timer_due;             /* the timer fired; handled by the next run */
    /* what this run of the bottom half sent, against QHCA_RUN_TX_* */
    uint32_t run_tx_frames;
    uint64_t run_tx_bytes;
    /* the QPNs of every QP that exists, in no order (qhca-qp.c) */
    uint16_t live_qpn[QHCA_MAX_QP];
    uint32_t nlive;
    /*
     * The QPs the next run visits, each once (QhcaQpEngine.ready), or every
     * live QP (scan_all: after a change the engine cannot pin on one QP);
     * the QPs waiting for room in the device's window, oldest first
     * (QhcaQpEngine.dwait; a ring: ndwait of them from dwait_head on); and
     * the run's own copy of the first list.  None is migrated: a loaded
     * device visits every QP once (qhca-qp.c).
     */
    uint16_t ready_qpn[QHCA_MAX_QP];
    uint32_t nready;
    bool scan_all;
    uint16_t dwait_qpn[QHCA_MAX_QP];
    uint32_t dwait_head;
    uint32_t ndwait;
    uint16_t run_qpn[QHCA_MAX_QP];

    /* statistics registers */
    /* counters, enum qhca_stat: the registers show their low 32 bits */
    uint64_t stat_tx_frames;
    uint64_t stat_rx_frames;
    uint64_t stat_rx_dropped;
    uint64_t stat_rx_bad_icrc;
    uint64_t stat_retransmits;
    uint64_t stat_guest_errors;
    uint64_t stat_loopback;
    uint64_t stat_loop_dropped;
    uint64_t stat_tx_bytes;
    uint64_t stat_rx_bytes;
    uint64_t stat_naks_sent;
    uint64_t stat_naks_rcvd;
    uint64_t stat_rnr_naks_sent;
    uint64_t stat_rnr_naks_rcvd;
    uint64_t stat_seq_errors;
    uint64_t stat_dup_requests;
    uint64_t stat_timeouts;
    uint64_t stat_retry_exceeded;
    uint64_t stat_rnr_retry_exceeded;
    uint64_t stat_ecn_marked;
    uint64_t stat_cnp_sent;
    uint64_t stat_cnp_handled;
    uint64_t stat_cnp_ignored;

    /*
     * Teardown asked for while device code runs (docs/security.md, "The
     * device never tears itself down under its own feet"): @busy counts
     * the core's entry points on the stack; a reset asked for meanwhile
     * halts the core at once and is done when the outermost entry point
     * returns; an unplug stops it for good (qhca_core_stop()).  A halted
     * core calls out through none of its ops (qhca_op_*()).
     */
    uint32_t busy;
    bool halted;
    bool reset_pending;
    bool stopped;
};

/* What the device does: QUERY_DEVICE's caps and register CAPS */
#define QHCA_CORE_CAPS (QHCA_CAP_RC | QHCA_CAP_UD | QHCA_CAP_SRQ | \
                        QHCA_CAP_ATOMIC | QHCA_CAP_FRMR | QHCA_CAP_UC | \
                        QHCA_CAP_MCAST | QHCA_CAP_ATOMIC_WRITE | \
                        QHCA_CAP_FLUSH_GLOBAL | QHCA_CAP_MW)

/*
 * Refused guest input (@ev names trace event qhca_err_@ev) and undefined
 * register or doorbell use (qhca_ub_@ev), as hw/nvme's NVME_GUEST_ERR():
 * the event with its typed arguments (hw/trace-events), STAT_GUEST_ERRORS,
 * and LOG_GUEST_ERROR with the event's name and the arguments' values.
 * The arguments are integers, and are evaluated more than once: no side
 * effects.  The file using them includes its "trace.h".
 */
#define QHCA_GUEST_ERROR(c, ev, ...) do {                                \
        trace_qhca_err_##ev(__VA_ARGS__);                               \
        QHCA_GUEST_LOG(c, "qhca_err_" #ev, __VA_ARGS__);                \
    } while (0)
#define QHCA_GUEST_UB(c, ev, ...) do {                                   \
        trace_qhca_ub_##ev(__VA_ARGS__);                                \
        QHCA_GUEST_LOG(c, "qhca_ub_" #ev, __VA_ARGS__);                 \
    } while (0)
#define QHCA_GUEST_LOG(c, event, ...)                                    \
    qhca_guest_error(c, event, (const uint64_t[]) { __VA_ARGS__ },      \
                     sizeof((const uint64_t[]) { __VA_ARGS__ }) /       \
                     sizeof(uint64_t))

/* At most this many arguments are logged */
#define QHCA_GUEST_ERROR_MAX_ARGS 8

void qhca_guest_error(QhcaCore *c, const char *event, const uint64_t *arg,
                      unsigned nargs);

/*
 * The device logic reaches the bus, the interrupt controller and the wire
 * only through these.  A halted core (see QhcaCore.busy) reaches nothing:
 * a read fails, a write, an interrupt or a frame goes nowhere, as with a
 * device held in reset; what it does next cannot reach another device
 * that could tear it down again.
 */
static inline bool qhca_op_dma_read(QhcaCore *c, uint64_t addr, void *buf,
                                    uint64_t len)
{
    if (c->halted) {
        memset(buf, 0, len);
        return false;
    }
    return c->ops->dma_read(c->opaque, addr, buf, len);
}

static inline bool qhca_op_dma_write(QhcaCore *c, uint64_t addr,
                                     const void *buf, uint64_t len)
{
    return c->halted || c->ops->dma_write(c->opaque, addr, buf, len);
}

static inline void qhca_op_irq(QhcaCore *c, unsigned vector)
{
    if (!c->halted) {
        c->ops->irq(c->opaque, vector);
    }
}

static inline void qhca_op_tx(QhcaCore *c, const uint8_t *frame, size_t len)
{
    if (!c->halted) {
        c->ops->tx(c->opaque, frame, len);
    }
}

static inline void qhca_op_schedule(QhcaCore *c)
{
    if (!c->halted) {
        c->ops->schedule(c->opaque);
    }
}

/* Fatal device error @code (enum qhca_fatal): only a reset recovers */
void qhca_fatal(QhcaCore *c, uint32_t code);

/* Object tables: entry @n of table @tbl of QhcaCore, or NULL */
#define LOOKUP(c, tbl, n) \
    ((n) < ARRAY_SIZE((c)->tbl) ? (c)->tbl[(n)] : NULL)

int qhca_alloc_slot(void **table, uint32_t size, uint32_t first);
QhcaQp *qhca_core_qp(QhcaCore *c, uint32_t qpn);
QhcaSrq *qhca_core_srq(QhcaCore *c, uint32_t srqn);
QhcaAh *qhca_core_ah(QhcaCore *c, uint32_t ahn);
const QhcaMcg *qhca_core_mcg(QhcaCore *c, const uint8_t *gid);
bool qhca_core_mcast_mac(QhcaCore *c, const uint8_t *mac);
bool qhca_mcg_remove(QhcaMcg *g, uint32_t qpn);
/* Counter @i of enum qhca_stat */
uint64_t qhca_core_stat(const QhcaCore *c, unsigned i);
void qhca_core_set_stat(QhcaCore *c, unsigned i, uint64_t v);

#endif
