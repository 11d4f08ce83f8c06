/*
 * Two qhca devices on an in-process wire, each with its own flat guest RAM,
 * driven without QEMU: the device logic (every hw/qhca-*.c but the QEMU
 * glue hw/qhca.c) reaches this harness only through QhcaCoreOps.
 *
 * What the harness models of QEMU:
 *   - DMA against a flat RAM of HX_RAM_SIZE bytes at guest-physical 0;
 *     the device's own BAR0 and BAR2 are mapped at HX_REG_BAR_ADDR and
 *     HX_DB_BAR_ADDR, so DMA and MSI-X writes that the guest aims there
 *     become register and doorbell writes (hw/qhca.c refuses them; the
 *     harness does not, so the device logic is tested without that second
 *     line of defence); the configuration space of the root port above the
 *     device is at HX_PORT_ADDR, where a write can reset or unplug the
 *     device from inside its own DMA or interrupt; anything else is
 *     unassigned (the access fails, as in QEMU);
 *   - QEMU's re-entrancy guard (MemReentrancyGuard): MMIO, the bottom half
 *     and netdev receive are guarded, a guarded access while the device is
 *     engaged is dropped; the timer callback is not guarded (hw/qhca.c uses
 *     timer_new_ns);
 *   - MSI-X: each vector has an address and data; an interrupt is an MSI
 *     write, made synchronously from inside the irq callback;
 *   - the bottom half (schedule -> qhca_core_run on the next step), the
 *     virtual clock and the one retransmission timer per device, the
 *     netdev's can_receive/queue/flush;
 *   - loopback as hw/qhca.c has it: every frame a device sends goes to
 *     qhca_core_loopback() (which queues a frame for the device itself)
 *     and onto the wire.
 *
 * What it checks (each a "finding", HxFinding):
 *   - every DMA the device makes into RAM is within what the guest granted
 *     (the command rings, the memory of objects created successfully, the
 *     page lists and response buffer of the command being executed, MR
 *     pages and fast-registration page lists), at page granularity;
 *   - no entry into the device (a run of the bottom half, a timer, an MMIO
 *     write, a delivered frame) sends more than a frame budget;
 *   - the bottom half does not reschedule itself forever without doing
 *     anything;
 *   - frames the device sends are well-formed RoCEv2 (the device's own
 *     parser, ICRC included) from its MAC, no longer than
 *     QHCA_TX_FRAME_MAX, and interrupts name a vector the device has;
 *   - after every entry, the device's data in flight is the sum of its QPs'
 *     parts (qhca_qp_inflight_check()).
 * A finding prints a report and aborts, unless QHCA_HARNESS_IGNORE lists
 * its name (grant, budget, spin, frame, irq, inflight; comma-separated).
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef QHCA_HARNESS_H
#define QHCA_HARNESS_H

#include "qemu/osdep.h"
#include "qhca-core.h"
#include "../common/qhca-drv.h"

#define HX_RAM_SIZE             (16u << 20)
#define HX_RAM_PAGES            (HX_RAM_SIZE / QHCA_PAGE_SIZE)
#define HX_REG_BAR_ADDR         0xfe000000ULL   /* BAR0 in guest space */
#define HX_DB_BAR_ADDR          0xfd000000ULL   /* BAR2 */
#define HX_APIC_ADDR            0xfee00000ULL   /* default MSI-X target */
/*
 * The PCIe root port above each device: its configuration space, as the
 * guest reaches it through ECAM.  Bridge Control's Secondary Bus Reset
 * (the dword at 0x3c, bit 22) resets the device, Slot Control's power off
 * (the dword at 0x58: PCC and the power indicator off) unplugs it, and a
 * new device is plugged in its place, as QEMU does for a guest that aims
 * the device's DMA or MSI-X there; neither goes through the device's
 * registers
 */
#define HX_PORT_ADDR            0xe0000000ULL
#define HX_PORT_SIZE            0x1000
#define HX_PORT_BRCTL           0x3c
#define HX_PORT_BRCTL_SBR       (0x40u << 16)
#define HX_PORT_SLTCTL          0x58
#define HX_PORT_SLTCTL_OFF      0x0700  /* PCC | power indicator off */

/* Guest RAM layout the mini-driver uses */
#define HX_CTRL_BASE            0x100000u       /* CMDQ, CMDCQ, AEQ, resp */
#define HX_RESP_ADDR            (HX_CTRL_BASE + 0x3000) /* command responses */
#define HX_RING_BASE            0x110000u       /* page lists and rings */
#define HX_RING_END             0x400000u
#define HX_DATA_BASE            0x800000u       /* MR memory */
#define HX_DATA_END             HX_RAM_SIZE

/* Frames sent by one call into a device (HX_FIND_BUDGET) */
#define HX_FRAME_BUDGET         4096
/* Bottom-half runs in a row that do nothing and reschedule (HX_FIND_SPIN) */
#define HX_SPIN_LIMIT           1000
/* Frames held on the wire; more are lost */
#define HX_WIRE_MAX_FRAMES      8192

typedef enum HxFinding {
    HX_FIND_GRANT,
    HX_FIND_BUDGET,
    HX_FIND_SPIN,
    HX_FIND_FRAME,
    HX_FIND_IRQ,
    HX_FIND_INFLIGHT,
    HX_FIND_COUNT
} HxFinding;

typedef struct HxPair HxPair;
typedef struct HxDev HxDev;
typedef struct HxGrants HxGrants;

/* A ring in guest memory as the driver laid it out (pages not contiguous) */
#define HX_RING_MAX_PAGES       QHCA_DRV_RING_MAX_PAGES
typedef QhcaDrvRing HxRing;

/* An MR over contiguous guest pages */
typedef struct HxMr {
    uint32_t key;
    uint64_t iova;
    uint64_t len;
    uint64_t mem;
} HxMr;

typedef struct HxQp {
    bool valid;
    uint32_t qpn;
    uint8_t type;
    uint32_t srqn;              /* QHCA_NO_SRQ: own RQ */
    uint32_t max_inline;
    HxRing sq, rq;
    uint16_t sq_pi, rq_pi;
    /* the peer's QP this one is connected to (RC, UC), or sends to (UD) */
    uint32_t peer_qpn;
    bool loopback;              /* ... on the same device */
} HxQp;

#define HX_MAX_QPS              16
#define HX_CQE_LOG              64

/*
 * The mini-driver's state of one device: the shared mini-driver's
 * (tests/common/qhca-drv.h: the command queue and the AEQ), and the
 * objects hx_drv_setup() makes
 */
typedef struct HxDrv {
    QhcaDrv qd;
    bool up;                    /* enabled and set up */
    uint16_t eq_ci, cq_ci, srq_pi;
    uint64_t ring_next;         /* bump allocators */
    uint64_t data_next;
    uint32_t pdn, eqn, cqn, srqn, ahn;
    uint32_t ahn6;              /* an AH to the peer's IPv6 GID */
    HxRing eq, cq, srq;
    HxMr mr;                    /* 4 MiB, every access */
    uint32_t frmr_key;          /* fast-register MR (ALLOC_MR) */
    HxQp qp[HX_MAX_QPS];        /* HX_QP_*, then QPs made by commands */
    /* the next command's header fields, if set (then cleared) */
    bool hdr_override;
    uint16_t hdr_flags;
    uint64_t hdr_resp_addr;
    uint32_t hdr_resp_len;
    /* the last CQEs polled, for HX expectations */
    struct qhca_cqe cqe_log[HX_CQE_LOG];
    unsigned cqe_count;
} HxDrv;

#define HX_QP_RC                0
#define HX_QP_RC_SRQ            1
#define HX_QP_UD                2
#define HX_QP_UC                3       /* UC with its own RQ */
#define HX_QP_UC_SRQ            4       /* UC on the SRQ */
#define HX_QP_SETUP             5       /* QPs hx_drv_setup() makes */

typedef struct HxMsix {
    uint64_t addr;
    uint32_t data;
} HxMsix;

struct HxDev {
    QhcaCore core;
    HxPair *pair;
    int idx;                    /* 0: A, 1: B */
    char name;
    uint8_t mac[6];
    uint32_t ip;
    uint8_t ip6[16];            /* its IPv6 address: GID 1 */

    uint8_t *ram;
    uint8_t dirty[HX_RAM_PAGES];
    uint64_t dma_reads;         /* the device's DMA reads of guest RAM */
    HxGrants *grants;

    /* QEMU glue state */
    bool engaged;               /* MemReentrancyGuard.engaged_in_io */
    bool bh_pending;
    int64_t timer_deadline;     /* -1: not armed */
    bool rx_held;               /* can_receive said no; until rx_resume */
    bool link_up;
    HxMsix msix[QHCA_MSIX_VECTORS];
    uint64_t irqs[QHCA_MSIX_VECTORS];
    uint64_t blocked_reentrant;
    /* the root port (HX_PORT_ADDR) */
    uint32_t port_brctl;
    uint32_t port_sltctl;
    uint64_t bus_resets;
    uint64_t unplugs;
    bool replug;                /* unplugged inside device code: at leave */

    /* per-call accounting */
    unsigned nesting;           /* calls into the device in progress */
    uint32_t call_frames;
    uint64_t progress;          /* tx, DMA writes, interrupts */
    uint64_t inputs;            /* MMIO, frames delivered, timer firings */
    unsigned idle_runs;

    /*
     * The queue registers (CMDQ, CMDCQ, AEQ) as the guest wrote them, and
     * as they were when the guest last enabled the device
     */
    uint64_t sh_base[3];
    uint32_t sh_log[3];
    uint64_t lat_base[3];
    uint32_t lat_log[3];

    HxDrv drv;
};

typedef enum HxWireMode {
    HX_WIRE_PASS,
    HX_WIRE_DROP_EVERY,
    HX_WIRE_DUP_EVERY,
    HX_WIRE_BLACKHOLE,
    HX_WIRE_REORDER,
    HX_WIRE_DROP_RANDOM,        /* 1 in every, pseudo-random, reproducible */
    HX_WIRE_MODE_COUNT
} HxWireMode;

typedef struct HxFrame {
    int to;
    int64_t due;                /* delivered from this virtual time on */
    size_t len;
    uint8_t data[];
} HxFrame;

struct HxPair {
    HxDev dev[2];
    int64_t now;                /* virtual clock, ns */
    GQueue wire;                /* HxFrame, in flight */
    unsigned wire_bytes;
    HxWireMode mode[2];         /* by sender */
    unsigned every[2];
    unsigned sent[2];           /* frames each device sent */
    unsigned wire_count;        /* frames both sent */
    uint32_t rng;
    HxFrame *held[2];           /* reorder: waiting for the next frame */
    uint64_t wire_lost;
    uint32_t last_psn[2][1024]; /* last PSN device i sent to a QP number */
    unsigned deliver_max;       /* frames a step delivers; 0: 64 */
    /*
     * A path (0: none): each frame arrives wire_delay_ns after it left
     * its sender's line, which carries wire_rate_bps bits per second and
     * queues at most wire_limit bytes (more are lost) and marks an
     * ECN-capable frame CE when more than wire_ecn bytes wait (0: never),
     * as a switch port with ECN marking does
     */
    int64_t wire_delay_ns;
    uint64_t wire_rate_bps;
    uint64_t wire_limit;
    uint64_t wire_ecn;
    uint64_t wire_marked;       /* frames marked CE */
    uint64_t wire_queue_max;    /* the most bytes that waited at once */
    int64_t wire_free[2];       /* the line to device i is free then */
    uint64_t steps;             /* hx_step() calls */
    uint64_t step_limit;        /* 0: none */
    int64_t time_limit;         /* virtual ns; 0: none */
    bool stopped;               /* a limit was hit: stop doing things */
    unsigned findings[HX_FIND_COUNT];
};

/* Life cycle (a pair is reusable: hx_pair_reset() starts it over) */
void hx_pair_init(HxPair *p);
void hx_pair_reset(HxPair *p);
void hx_pair_cleanup(HxPair *p);
void hx_pair_destroy(HxPair *p);
/* A new pair on the heap, initialised, its two devices in *A and *B; free
 * it with hx_pair_free() */
HxPair *hx_pair_new(HxDev **a, HxDev **b);
void hx_pair_free(HxPair *p);

/* Findings */
void hx_finding(HxPair *p, HxFinding f, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);
const char *hx_finding_name(HxFinding f);

/* The guest's accesses to its device (guarded like QEMU's MMIO) */
void hx_mmio_write(HxDev *d, uint32_t off, uint32_t val);
uint32_t hx_mmio_read(HxDev *d, uint32_t off);
void hx_db_write(HxDev *d, uint32_t page, uint32_t off, uint32_t val);
void hx_system_reset(HxDev *d);
/*
 * A write of the device's root port's configuration (HX_PORT_ADDR): what
 * DMA and MSI-X writes aimed there do
 */
void hx_port_write(HxDev *d, uint32_t off, uint32_t val);
void hx_set_link(HxDev *d, bool up);

/* Guest RAM, as the guest's CPU sees it (no grant check) */
bool hx_mem_write(HxDev *d, uint64_t addr, const void *buf, uint64_t len);
bool hx_mem_read(HxDev *d, uint64_t addr, void *buf, uint64_t len);
void hx_mem_fill(HxDev *d, uint64_t addr, uint8_t val, uint64_t len);

/* The wire */
void hx_wire_inject(HxPair *p, int to, const uint8_t *frame, size_t len);
void hx_wire_set_mode(HxPair *p, int from, HxWireMode mode, unsigned every);

/*
 * Time and the main loop.  hx_step() fires expired timers, runs scheduled
 * bottom halves and delivers the frames on the wire; true if it did
 * anything.  hx_settle() steps until nothing is left to do, moving the
 * virtual clock to the next timer while it is within @max_ns from now.
 */
bool hx_step(HxPair *p);
void hx_pump(HxPair *p, unsigned max_steps);
void hx_advance(HxPair *p, int64_t ns);
void hx_settle(HxPair *p, int64_t max_ns, unsigned max_steps);

/* Grants (grant.c): what the device may touch in its guest's RAM */
HxGrants *hx_grants_new(void);
void hx_grants_free(HxGrants *g);
void hx_grants_clear(HxDev *d);
bool hx_grants_check(HxDev *d, uint64_t addr, uint64_t len);
void hx_grants_dma_read(HxDev *d, uint64_t addr, const void *buf,
                        uint64_t len);
void hx_grants_dma_write(HxDev *d, uint64_t addr, const void *buf,
                         uint64_t len);
void hx_grants_regs(HxDev *d);
void hx_grants_add_range(HxDev *d, uint64_t addr, uint64_t len);

/* The mini-driver (driver.c) */
typedef struct HxConnOpts {
    uint8_t mtu;                /* IB enum, 1..5 */
    uint8_t timeout;
    uint8_t retry_cnt;
    uint8_t rnr_retry;
    uint8_t min_rnr_timer;
    uint8_t max_rd_atomic;
    uint32_t access;
    uint32_t sq_psn;            /* the other side's rq_psn */
    /* over IPv6: GID 1 to the peer's GID 1, with this traffic class, flow */
    bool ipv6;
    uint8_t tclass;
    uint32_t flow_label;
} HxConnOpts;

extern const HxConnOpts hx_default_conn;

#define HX_ALL_ACCESS   (QHCA_ACCESS_LOCAL_WRITE | QHCA_ACCESS_REMOTE_WRITE | \
                         QHCA_ACCESS_REMOTE_READ | QHCA_ACCESS_REMOTE_ATOMIC | \
                         QHCA_ACCESS_FLUSH_GLOBAL | QHCA_ACCESS_MW_BIND)
#define HX_QKEY         0x1234u
#define HX_GID_IPV4     0       /* GID table index of the IPv4 address */
#define HX_GID_IPV6     1       /* ... and of the IPv6 one */

void hx_gid_ipv4(uint8_t *gid, uint32_t ip);

/* The shared mini-driver's view of @d (harness.c: at every device's start) */
void hx_drv_init(HxDev *d);
bool hx_drv_enable(HxDev *d);
bool hx_drv_setup(HxDev *d);
bool hx_pair_setup(HxPair *p);
int hx_cmd(HxDev *d, uint16_t opcode, const void *payload, size_t len,
           uint32_t *result);
uint64_t hx_alloc_ring_pages(HxDev *d, uint32_t n);
uint64_t hx_alloc_data(HxDev *d, uint64_t len);
struct qhca_pbl_desc hx_pbl(HxDev *d, const uint64_t *pages, uint32_t n,
                            uint8_t shift);
struct qhca_pbl_desc hx_ring_alloc(HxDev *d, HxRing *r, uint32_t log,
                                   uint32_t stride_log);
uint64_t hx_ring_addr(const HxRing *r, uint32_t idx);
int hx_modify_qp(HxDev *d, uint32_t qpn, uint32_t mask,
                 const struct qhca_qp_attr *a);
int hx_query_qp(HxDev *d, uint32_t qpn, struct qhca_qp_attr *a);
bool hx_connect_rc(HxDev *a, HxQp *qa, HxDev *b, HxQp *qb,
                   const HxConnOpts *o);
bool hx_connect_loopback(HxDev *d, const HxConnOpts *o);
bool hx_connect_uc_loopback(HxDev *d, const HxConnOpts *o);
HxQp *hx_drv_qp(HxDev *d, unsigned sel);
HxQp *hx_drv_make_ud(HxDev *d, bool srq, bool rts, uint32_t *qpn);
/*
 * Another RC QP (own RQ) in slot @slot (>= HX_QP_SETUP) of both devices,
 * A's connected to B's; A's, or NULL
 */
HxQp *hx_drv_make_rc_pair(HxPair *p, unsigned slot);
void hx_drv_qp_add(HxDev *d, const struct qhca_cmd_create_qp *q,
                   uint32_t qpn, const HxRing *sq, const HxRing *rq);
struct qhca_sge hx_sge(const HxMr *m, uint64_t off, uint32_t len);
struct qhca_send_wqe hx_wqe(uint8_t opcode, uint64_t wr_id);
void hx_post_send(HxDev *d, HxQp *qp, struct qhca_send_wqe *w,
                  const struct qhca_sge *sges, unsigned nsge,
                  const void *inl, uint32_t inl_len, bool ring);
void hx_post_recv(HxDev *d, HxQp *qp, uint64_t wr_id,
                  const struct qhca_sge *sges, unsigned nsge, bool ring);
void hx_ring_sq(HxDev *d, HxQp *qp, uint16_t pi);
void hx_ring_rq(HxDev *d, HxQp *qp, uint16_t pi);
bool hx_poll_cq(HxDev *d, struct qhca_cqe *cqe);
void hx_poll_all(HxDev *d, unsigned max, unsigned arm);
bool hx_wait_cqe(HxDev *d, uint32_t qpn, uint64_t wr_id,
                 struct qhca_cqe *out, int64_t max_ns);

/* Arm flags of hx_poll_all() */
#define HX_ARM_CQ               (1u << 0)
#define HX_ARM_CQ_SOLICITED     (1u << 1)
#define HX_ARM_EQ               (1u << 2)
#define HX_ARM_AEQ              (1u << 3)
#define HX_ARM_CMDCQ            (1u << 4)

/* Tracing (trace.c): QHCA_TRACE=1 prints events, =ring keeps the last ones */
void qhca_trace_emit(const char *name, const char *fmt, ...)
    G_GNUC_PRINTF(2, 3);
void hx_trace_init(void);
void hx_trace_dump(void);

#endif
