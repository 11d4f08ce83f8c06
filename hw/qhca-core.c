/*
 * qhca device logic: the device's entry points (registers, doorbells, the
 * bottom half, the timer, frames from the wire and looped back), reset,
 * and the teardown rule that keeps device code from being torn down
 * under its own feet.
 *
 * Everything here treats register writes as hostile: every index is
 * range-checked, and bad input gives a dropped doorbell or a fatal device
 * state, each with a trace event and a LOG_GUEST_ERROR message.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/bswap.h"
#include "qhca-core.h"
#include "qhca-cmd.h"
#include "qhca-qp.h"
#include "qhca-roce.h"
#include "trace.h"

static bool qhca_rx_run(QhcaCore *c, unsigned budget, unsigned loop_budget);

static void core_run(QhcaCore *c)
{
    bool more;

    if (!(c->status & QHCA_STATUS_READY) || c->halted) {
        return;
    }
    c->run_tx_frames = 0;
    c->run_tx_bytes = 0;
    qhca_cmdq_run(c);
    if (c->timer_due) {
        c->timer_due = false;
        qhca_qp_engine_timer(c);
    }
    more = qhca_rx_run(c, 256, QHCA_RUN_LOOP_FRAMES);
    more |= qhca_qp_engine_run(c);
    if (more) {
        qhca_op_schedule(c);
    }
}

/*
 * The glue's timer callback is not guarded against re-entrancy the way the
 * bottom half, MMIO and the receive callback are: it only asks for a run,
 * and qhca_core_run() handles the expired timers.  Nothing of the engine
 * runs where an interrupt or DMA aimed at the device itself could reset it
 * under the engine's feet.
 */
static void core_timer(QhcaCore *c)
{
    c->timer_due = true;
    qhca_op_schedule(c);
}

typedef struct QhcaRxFrame {
    size_t len;
    bool pooled;                /* a buffer of QHCA_RX_POOL_FRAME bytes */
    uint8_t data[];
} QhcaRxFrame;

/* A buffer for a received frame of @len bytes (see QhcaCore.rx_pool) */
static QhcaRxFrame *rx_frame_new(QhcaCore *c, size_t len)
{
    QhcaRxFrame *f;

    if (len > QHCA_RX_POOL_FRAME) {
        f = g_malloc(sizeof(*f) + len);
        f->pooled = false;
    } else if (c->rx_pool_len) {
        f = c->rx_pool[--c->rx_pool_len];
    } else {
        f = g_malloc(sizeof(*f) + QHCA_RX_POOL_FRAME);
        f->pooled = true;
    }
    f->len = len;
    return f;
}

static void rx_frame_free(QhcaCore *c, QhcaRxFrame *f)
{
    if (f->pooled && c->rx_pool_len < QHCA_RX_POOL_LEN) {
        c->rx_pool[c->rx_pool_len++] = f;
        return;
    }
    g_free(f);
}

bool qhca_core_ready(const QhcaCore *c)
{
    return c->status & QHCA_STATUS_READY;
}

bool qhca_core_can_receive(QhcaCore *c)
{
    if (g_queue_get_length(&c->rxq) >= QHCA_RXQ_MAX_FRAMES ||
        c->rxq_bytes >= QHCA_RXQ_MAX_BYTES) {
        c->rx_blocked = true;
        return false;
    }
    return true;
}

/*
 * Take a received frame (from the wire or looped back) onto @q, or drop it:
 * what every frame goes through before the engine sees it
 */
static void qhca_rx_enqueue(QhcaCore *c, GQueue *q, uint32_t *bytes,
                            const uint8_t *frame, size_t len)
{
    QhcaRxFrame *f;

    c->stat_rx_frames++;
    c->stat_rx_bytes += len;
    if (!(c->status & QHCA_STATUS_READY) || len > QHCA_MAX_RX_FRAME) {
        c->stat_rx_dropped++;
        QHCA_TRACE_RX_DROP(len, !(c->status & QHCA_STATUS_READY) ?
                           QHCA_RX_DROP_NOT_READY : QHCA_RX_DROP_TOO_LONG);
        return;
    }
    if (c->drop_ppm) {
        /* a lossy wire on purpose (the "drop-ppm" property), for tests */
        c->drop_rng = c->drop_rng * 6364136223846793005ULL +
                      1442695040888963407ULL;
        if ((c->drop_rng >> 33) % 1000000 < c->drop_ppm) {
            c->stat_rx_dropped++;
            QHCA_TRACE_RX_DROP(len, QHCA_RX_DROP_DROP_PPM);
            return;
        }
    }
    f = rx_frame_new(c, len);
    memcpy(f->data, frame, len);
    g_queue_push_tail(q, f);
    *bytes += len;
    qhca_op_schedule(c);
}

/*
 * Frames are queued and processed by qhca_core_run() (a bottom half), never
 * from inside the network layer's delivery: a frame this device sends may
 * be delivered to a peer in the same QEMU synchronously, and that peer's
 * answer must not re-enter this device's engine.
 */
static void core_receive(QhcaCore *c, const uint8_t *frame, size_t len)
{
    if (len >= 12 && !memcmp(frame + 6, c->mac, 6)) {
        /*
         * Our own source MAC: a copy of a frame we sent, reflected by the
         * wire (a multicast socket loops it back, a hub may); frames to
         * ourselves are looped inside the device (qhca_core_loopback()),
         * so taking this copy too would deliver them twice.
         */
        c->stat_rx_frames++;
        c->stat_rx_bytes += len;
        c->stat_rx_dropped++;
        QHCA_TRACE_RX_DROP(len, QHCA_RX_DROP_OWN_MAC);
        return;
    }
    qhca_rx_enqueue(c, &c->rxq, &c->rxq_bytes, frame, len);
}

/*
 * Loopback.  The glue hands every frame the device sends here first: a
 * frame for this device itself (its destination MAC is ours and its
 * destination IPv4 or IPv6 address one of our GIDs: what the receive path
 * accepts) is queued on the loop queue and received by qhca_core_run()
 * like a frame from the wire.  Called from inside the engine (the transmit
 * path): it never processes the frame here, it only queues it, bounded,
 * and asks for a run.  Returns true if the frame was for this device
 * (queued or dropped); the glue still puts it on the wire (see
 * docs/hardware.md).
 */
static bool core_loopback(QhcaCore *c, const uint8_t *frame, size_t len)
{
    uint8_t dgid[16];

    if (len < QHCA_ROCE_ETH_HLEN ||
        !qhca_roce_frame_dst_gid(frame, len, dgid)) {
        return false;
    }
    /*
     * To one of our GIDs at our MAC, or to a multicast group a QP of ours
     * is attached to (as NICs loop multicast back to their own receivers)
     */
    if (frame[0] & 1 ?
        !qhca_roce_gid_is_mcast(dgid) || !qhca_core_mcg(c, dgid) :
        memcmp(frame, c->mac, 6) || !qhca_qp_own_gid(c, dgid)) {
        return false;
    }
    c->stat_loopback++;
    if (g_queue_get_length(&c->loopq) >= QHCA_LOOPQ_MAX_FRAMES ||
        c->loopq_bytes + len > QHCA_LOOPQ_MAX_BYTES) {
        c->stat_loop_dropped++;
        c->stat_rx_frames++;
        c->stat_rx_bytes += len;
        c->stat_rx_dropped++;
        trace_qhca_loop_drop(len, g_queue_get_length(&c->loopq),
                             c->loopq_bytes);
        return true;
    }
    trace_qhca_loopback(len);
    qhca_rx_enqueue(c, &c->loopq, &c->loopq_bytes, frame, len);
    return true;
}

static void qhca_rx_one(QhcaCore *c, GQueue *q, uint32_t *bytes)
{
    QhcaRxFrame *f = g_queue_pop_head(q);

    *bytes -= f->len;
    qhca_qp_engine_receive(c, f->data, f->len);
    rx_frame_free(c, f);
}

/*
 * Process up to @budget queued frames from the wire and up to @loop_budget
 * looped ones, taking turns; true if more are waiting.  Of the looped
 * frames only those queued before this run: what the engine sends to
 * itself while it runs waits for the next run, so a looped exchange never
 * goes on within one run.
 */
static bool qhca_rx_run(QhcaCore *c, unsigned budget, unsigned loop_budget)
{
    loop_budget = MIN(loop_budget, g_queue_get_length(&c->loopq));
    while ((budget || loop_budget) && !c->halted) {
        bool any = false;

        if (loop_budget && !g_queue_is_empty(&c->loopq)) {
            loop_budget--;
            qhca_rx_one(c, &c->loopq, &c->loopq_bytes);
            any = true;
        } else {
            loop_budget = 0;
        }
        if (budget && !g_queue_is_empty(&c->rxq)) {
            budget--;
            qhca_rx_one(c, &c->rxq, &c->rxq_bytes);
            any = true;
        } else {
            budget = 0;
        }
        if (!any) {
            break;
        }
    }
    if (c->rx_blocked && g_queue_get_length(&c->rxq) < QHCA_RXQ_MAX_FRAMES &&
        c->rxq_bytes < QHCA_RXQ_MAX_BYTES) {
        c->rx_blocked = false;
        c->ops->rx_resume(c->opaque);
    }
    return !g_queue_is_empty(&c->rxq) || !g_queue_is_empty(&c->loopq);
}

static void core_link_changed(QhcaCore *c)
{
    bool up = c->ops->link_up(c->opaque);

    if (up != c->link_was_up) {
        c->link_was_up = up;
        qhca_post_async(c, up ? QHCA_EQE_PORT_ACTIVE : QHCA_EQE_PORT_ERR, 1);
    }
}

/*
 * Registers and doorbells
 */

static bool qhca_queue_regs_ok(QhcaCore *c)
{
    return qhca_hostq_regs_ok(&c->cmdq, QHCA_CMDQ_MAX_LOG_DEPTH) &&
           qhca_hostq_regs_ok(&c->cmdcq, QHCA_CMDCQ_MAX_LOG_DEPTH) &&
           qhca_hostq_regs_ok(&c->aeq, QHCA_AEQ_MAX_LOG_DEPTH);
}

static void qhca_rxq_clear(QhcaCore *c)
{
    void *f;

    while ((f = g_queue_pop_head(&c->rxq))) {
        g_free(f);
    }
    c->rxq_bytes = 0;
    while ((f = g_queue_pop_head(&c->loopq))) {
        g_free(f);
    }
    c->loopq_bytes = 0;
}

/* The reset itself: every object freed, every register cleared */
static void core_reset_now(QhcaCore *c)
{
    c->halted = false;
    c->reset_pending = false;
    qhca_free_all(c);
    qhca_rxq_clear(c);
    c->nready = c->ndwait = c->dwait_head = 0;
    c->scan_all = false;
    c->inflight_bytes = 0;
    c->ctrl = 0;
    c->status = 0;
    c->fatal_code = QHCA_FATAL_NONE;
    memset(&c->cmdq, 0, sizeof(c->cmdq));
    memset(&c->cmdcq, 0, sizeof(c->cmdcq));
    memset(&c->aeq, 0, sizeof(c->aeq));
    c->timer_deadline = -1;
    c->timer_due = false;
    c->ops->timer_mod(c->opaque, -1);
    if (c->rx_blocked) {
        c->rx_blocked = false;
        c->ops->rx_resume(c->opaque);
    }
    trace_qhca_reset();
}

void qhca_core_init(QhcaCore *c, const QhcaCoreOps *ops, void *opaque,
                    const uint8_t *mac)
{
    memset(c, 0, sizeof(*c));
    g_queue_init(&c->rxq);
    g_queue_init(&c->loopq);
    c->timer_deadline = -1;
    c->ops = ops;
    c->opaque = opaque;
    memcpy(c->mac, mac, 6);
    c->window_bytes = QHCA_WINDOW_DEFAULT;
    c->ecn = true;
}

/*
 * A reset or an unplug can be asked for while device code runs: an
 * interrupt or a DMA write of the device reaches a bridge's Secondary Bus
 * Reset, a slot's power control or another device that resets this one,
 * synchronously, inside the device's own doorbell, bottom half or receive
 * path, while that code holds QPs, CQs and rings.  Every entry point of the
 * core counts itself in @busy; a reset asked for while @busy halts the core
 * (it calls none of its ops again: no DMA, interrupt or frame) and is done
 * by the outermost entry point just before it returns, when nothing of the
 * device holds an object any more.  docs/security.md argues why this covers
 * every path.
 */
static bool core_enter(QhcaCore *c)
{
    if (c->stopped) {
        return false;
    }
    c->busy++;
    return true;
}

static void core_leave(QhcaCore *c)
{
    assert(c->busy);
    if (c->busy == 1 && c->reset_pending && !c->stopped) {
        trace_qhca_reset_deferred_done();
        core_reset_now(c);
    }
    c->busy--;
}

/*
 * A reset asked for with @own of the core's entry points on the stack
 * being the asker itself (CTRL.RESET: the register write, which holds
 * nothing); more than that, and it waits for them
 */
static void core_reset_request(QhcaCore *c, uint32_t own)
{
    if (c->stopped) {
        return;
    }
    if (c->busy > own) {
        trace_qhca_reset_deferred(c->busy);
        c->halted = true;
        c->reset_pending = true;
        c->status &= ~QHCA_STATUS_READY;
        return;
    }
    core_reset_now(c);
}

void qhca_core_reset(QhcaCore *c)
{
    core_reset_request(c, 0);
}

bool qhca_core_busy(const QhcaCore *c)
{
    return c->busy != 0;
}

/*
 * Unrealize while device code runs: the core does nothing from now on, and
 * the glue calls qhca_core_cleanup() once qhca_core_busy() is false
 */
void qhca_core_stop(QhcaCore *c)
{
    trace_qhca_stop(c->busy);
    c->halted = true;
    c->stopped = true;
    c->status = 0;
}

void qhca_core_cleanup(QhcaCore *c)
{
    assert(!c->busy);
    c->halted = true;
    c->stopped = true;
    qhca_free_all(c);
    qhca_rxq_clear(c);
    while (c->rx_pool_len) {
        g_free(c->rx_pool[--c->rx_pool_len]);
    }
}

static void qhca_ctrl_write(QhcaCore *c, uint32_t val)
{
    if (val & QHCA_CTRL_RESET) {
        core_reset_request(c, 1);
        return;
    }
    if (val & ~QHCA_CTRL_ENABLE) {
        QHCA_GUEST_UB(c, ctrl_reserved_bits_set, val, val & ~QHCA_CTRL_ENABLE);
    }
    if ((val & QHCA_CTRL_ENABLE) && !(c->ctrl & QHCA_CTRL_ENABLE)) {
        if (c->status & QHCA_STATUS_FATAL) {
            /* a fatal error needs a reset, not another ENABLE */
            QHCA_GUEST_UB(c, ctrl_enable_after_fatal_error, c->fatal_code);
            return;
        }
        c->ctrl = QHCA_CTRL_ENABLE;
        if (!qhca_queue_regs_ok(c)) {
            QHCA_GUEST_ERROR(c, ctrl_enable_bad_queue_registers,
                             c->cmdq.base, c->cmdq.log_depth,
                             c->cmdcq.base, c->cmdcq.log_depth,
                             c->aeq.base, c->aeq.log_depth);
            qhca_fatal(c, QHCA_FATAL_BAD_CONFIG);
            return;
        }
        c->status |= QHCA_STATUS_READY;
        c->link_was_up = c->ops->link_up(c->opaque);
    } else if (!(val & QHCA_CTRL_ENABLE) && (c->ctrl & QHCA_CTRL_ENABLE)) {
        /* Disabling stops the device; only a reset frees objects */
        c->ctrl = 0;
        c->status &= ~QHCA_STATUS_READY;
    }
}

/*
 * The queues software sets up before ENABLE (command queue, its completion
 * queue, the async event queue) have a block of registers each, 0x10
 * apart: the base address, low and high half, and the log2 depth.
 */
enum { QREG_BASE_LO, QREG_BASE_HI, QREG_LOG_DEPTH };
QEMU_BUILD_BUG_ON(QHCA_REG_CMDQ_BASE_HI != QHCA_REG_CMDQ_BASE_LO + 4 ||
                  QHCA_REG_CMDQ_LOG_DEPTH != QHCA_REG_CMDQ_BASE_LO + 8 ||
                  QHCA_REG_CMDCQ_BASE_LO != QHCA_REG_CMDQ_BASE_LO + 0x10 ||
                  QHCA_REG_CMDCQ_BASE_HI != QHCA_REG_CMDCQ_BASE_LO + 4 ||
                  QHCA_REG_CMDCQ_LOG_DEPTH != QHCA_REG_CMDCQ_BASE_LO + 8 ||
                  QHCA_REG_AEQ_BASE_LO != QHCA_REG_CMDQ_BASE_LO + 0x20 ||
                  QHCA_REG_AEQ_BASE_HI != QHCA_REG_AEQ_BASE_LO + 4 ||
                  QHCA_REG_AEQ_LOG_DEPTH != QHCA_REG_AEQ_BASE_LO + 8);

static QhcaHostQueue *qreg_find_block(QhcaCore *c, uint64_t addr)
{
    switch (addr & ~0xfULL) {
    case QHCA_REG_CMDQ_BASE_LO:
        return &c->cmdq;
    case QHCA_REG_CMDCQ_BASE_LO:
        return &c->cmdcq;
    case QHCA_REG_AEQ_BASE_LO:
        return &c->aeq;
    default:
        return NULL;
    }
}

/* The host queue whose registers are at @addr, and which of them (QREG_*) */
static QhcaHostQueue *qreg_find(QhcaCore *c, uint64_t addr, unsigned *field)
{
    unsigned f = (addr & 0xf) / 4;

    if ((addr & 3) || f > QREG_LOG_DEPTH) {
        return NULL;
    }
    *field = f;
    return qreg_find_block(c, addr);
}

uint32_t qhca_core_reg_read(QhcaCore *c, uint64_t addr)
{
    QhcaHostQueue *q;
    unsigned field;

    if (addr >= QHCA_REG_STAT_TX_FRAMES &&
        addr <= QHCA_REG_STAT_LOOP_DROPPED && !(addr & 3)) {
        return (uint32_t)qhca_core_stat(c,
                                        (addr - QHCA_REG_STAT_TX_FRAMES) / 4);
    }
    switch (addr) {
    case QHCA_REG_VERSION:
        return QHCA_VERSION;
    case QHCA_REG_CAPS:
        return QHCA_CORE_CAPS;
    case QHCA_REG_STATUS:
        return c->status;
    case QHCA_REG_CTRL:
        return c->ctrl;
    case QHCA_REG_MAC_LO:
        return ldl_le_p(c->mac);
    case QHCA_REG_MAC_HI:
        return lduw_le_p(c->mac + 4);
    case QHCA_REG_NUM_VECTORS:
        return QHCA_MSIX_VECTORS;
    case QHCA_REG_NUM_DB_PAGES:
        return QHCA_DB_PAGES;
    case QHCA_REG_LINK:
        return c->ops->link_up(c->opaque) ? QHCA_LINK_UP : 0;
    case QHCA_REG_FATAL_CODE:
        return c->fatal_code;
    default:
        break;
    }
    q = qreg_find(c, addr, &field);
    if (q) {
        switch (field) {
        case QREG_BASE_LO:
            return (uint32_t)q->base;
        case QREG_BASE_HI:
            return q->base >> 32;
        default:
            return q->log_depth;
        }
    }
    QHCA_GUEST_UB(c, read_undefined_register, addr);
    return 0;
}

static void set_lo(uint64_t *reg, uint32_t val)
{
    *reg = (*reg & ~0xffffffffULL) | val;
}

static void set_hi(uint64_t *reg, uint32_t val)
{
    *reg = (*reg & 0xffffffffULL) | ((uint64_t)val << 32);
}

static void core_reg_write(QhcaCore *c, uint64_t addr, uint32_t val)
{
    QhcaHostQueue *q;
    unsigned field;

    if (addr == QHCA_REG_CTRL) {
        qhca_ctrl_write(c, val);
        return;
    }
    if (addr < QHCA_REG_CMDQ_BASE_LO || addr > QHCA_REG_AEQ_LOG_DEPTH) {
        QHCA_GUEST_UB(c, write_read_only_undefined_register, addr, val);
        return;
    }
    if (c->ctrl & QHCA_CTRL_ENABLE) {
        QHCA_GUEST_UB(c, queue_register_written_while_enabled, addr, val);
        return;
    }
    q = qreg_find(c, addr, &field);
    if (!q) {
        QHCA_GUEST_UB(c, write_read_only_undefined_register, addr, val);
        return;
    }
    switch (field) {
    case QREG_BASE_LO:
        set_lo(&q->base, val);
        break;
    case QREG_BASE_HI:
        set_hi(&q->base, val);
        break;
    default:
        q->log_depth = val;
        break;
    }
}

static void qhca_db_cq(QhcaCore *c, uint32_t page, uint32_t off,
                       uint32_t val)
{
    uint32_t cqn = val & QHCA_DB_NUM_MASK;
    uint16_t ci = val >> QHCA_DB_IDX_SHIFT;
    QhcaCq *cq = LOOKUP(c, cq, cqn);

    if (!cq || cq->db_page != page) {
        QHCA_GUEST_UB(c, cq_doorbell_no_such_cq_this_page, page, cqn);
        return;
    }
    if (!qhca_ci_valid(cq->ring.pi, cq->ring.ci, ci)) {
        QHCA_GUEST_UB(c, cq_doorbell_consumer_index_beyond, cqn, ci,
                      cq->ring.ci, cq->ring.pi);
        return;
    }
    cq->ring.ci = ci;
    if (off == QHCA_DB_CQ_CI) {
        return;
    }
    cq->arm = off == QHCA_DB_CQ_ARM ? QHCA_CQ_ARM_NEXT :
                                      QHCA_CQ_ARM_SOLICITED;
    /* Unconsumed completions are reported at once: no lost wake-ups */
    if (cq->ring.pi != ci && cq->arm == QHCA_CQ_ARM_NEXT) {
        qhca_cq_event(c, cqn, cq);
    }
}

/*
 * The host queues' doorbells, one path: the command queue's gives its new
 * producer index (software writes that queue); the others' give their new
 * consumer index and may arm them (the device writes those).  New
 * commands, or room for completions again, run the command queue.
 */
static void hostq_doorbell(QhcaCore *c, uint32_t off, uint32_t val)
{
    QhcaHostQueue *q;
    uint16_t ci;
    bool arm;

    switch (off) {
    case QHCA_DB_CMDQ:
        if ((uint16_t)((val & 0xffff) - c->cmdq.ci) >
            (1u << c->cmdq.log_depth)) {
            QHCA_GUEST_UB(c, cmdq_doorbell_more_commands_entries,
                          val & 0xffff, c->cmdq.ci, 1u << c->cmdq.log_depth);
            return;
        }
        c->cmdq.pi = val & 0xffff;
        qhca_op_schedule(c);
        return;
    case QHCA_DB_CMDCQ:
        q = &c->cmdcq;
        ci = val & QHCA_DB_CMDCQ_CI_MASK;
        arm = val & QHCA_DB_CMDCQ_ARM;
        if (!qhca_ci_valid(q->pi, q->ci, ci)) {
            QHCA_GUEST_UB(c, cmdcq_doorbell_index_beyond_producer, ci,
                          q->ci, q->pi);
            return;
        }
        break;
    default:
        q = &c->aeq;
        ci = val & QHCA_DB_AEQ_CI_MASK;
        arm = val & QHCA_DB_AEQ_ARM;
        if (!qhca_ci_valid(q->pi, q->ci, ci)) {
            QHCA_GUEST_UB(c, aeq_doorbell_index_beyond_producer, ci,
                          q->ci, q->pi);
            return;
        }
        break;
    }
    q->ci = ci;
    if (arm) {
        q->armed = true;
        qhca_hostq_notify(c, q);
    }
    if (q == &c->cmdcq) {
        qhca_op_schedule(c);
    }
}

static void qhca_db_kernel(QhcaCore *c, uint32_t off, uint32_t val)
{
    switch (off) {
    case QHCA_DB_EQ: {
        uint32_t eqn = val & QHCA_DB_EQ_NUM_MASK;
        uint16_t ci = val >> QHCA_DB_IDX_SHIFT;
        QhcaEq *eq = LOOKUP(c, eq, eqn);

        if (!eq || !qhca_ci_valid(eq->ring.pi, eq->ring.ci, ci)) {
            QHCA_GUEST_UB(c, eq_doorbell_bad_eq_index, eqn, eq != NULL, ci,
                          eq ? eq->ring.ci : 0, eq ? eq->ring.pi : 0);
            return;
        }
        eq->ring.ci = ci;
        if (val & QHCA_DB_EQ_ARM) {
            eq->armed = true;
            if (eq->ring.pi != ci) {
                eq->armed = false;
                trace_qhca_irq(eq->vector);
                qhca_op_irq(c, eq->vector);
            }
        }
        return;
    }
    case QHCA_DB_CMDQ:
    case QHCA_DB_CMDCQ:
    case QHCA_DB_AEQ:
        hostq_doorbell(c, off, val);
        return;
    }
    QHCA_GUEST_UB(c, write_undefined_doorbell, off, val);
}

static void core_db_write(QhcaCore *c, uint32_t page, uint32_t off,
                          uint32_t val)
{
    trace_qhca_doorbell(page, off, val);
    if (!(c->status & QHCA_STATUS_READY)) {
        QHCA_GUEST_UB(c, doorbell_while_device_not_ready, page, off, val);
        return;
    }
    switch (off) {
    case QHCA_DB_SQ:
    case QHCA_DB_RQ: {
        uint32_t qpn = val & QHCA_DB_NUM_MASK;
        QhcaQp *qp = LOOKUP(c, qp, qpn);

        if (!qp || qp->db_page != page) {
            QHCA_GUEST_UB(c, qp_doorbell_no_such_qp_this_page, page, qpn);
            return;
        }
        qhca_qp_engine_doorbell(c, qp, off == QHCA_DB_SQ,
                                val >> QHCA_DB_IDX_SHIFT);
        return;
    }
    case QHCA_DB_SRQ: {
        uint32_t srqn = val & QHCA_DB_NUM_MASK;
        QhcaSrq *srq = LOOKUP(c, srq, srqn);
        uint16_t pi = val >> QHCA_DB_IDX_SHIFT;

        if (!srq || srq->db_page != page) {
            QHCA_GUEST_UB(c, srq_doorbell_no_such_srq_this_page, page, srqn);
            return;
        }
        if ((uint16_t)(pi - srq->ring.ci) > (1u << srq->ring.log_depth)) {
            QHCA_GUEST_UB(c, srq_doorbell_more_wqes_entries, srqn, pi,
                          srq->ring.ci, 1u << srq->ring.log_depth);
            return;
        }
        if ((uint16_t)(pi - srq->ring.ci) <
            (uint16_t)(srq->ring.pi - srq->ring.ci)) {
            QHCA_GUEST_UB(c, srq_doorbell_producer_index_moved, srqn, pi,
                          srq->ring.pi, srq->ring.ci);
            return;
        }
        srq->ring.pi = pi;
        /* not one QP's work: the run visits every QP */
        c->scan_all = true;
        qhca_op_schedule(c);
        return;
    }
    case QHCA_DB_CQ_CI:
    case QHCA_DB_CQ_ARM:
    case QHCA_DB_CQ_ARM_SOLICITED:
        qhca_db_cq(c, page, off, val);
        return;
    }
    if (page != QHCA_KERNEL_DB_PAGE) {
        QHCA_GUEST_UB(c, user_doorbell_page_undefined_offset, page, off,
                      val);
        return;
    }
    qhca_db_kernel(c, off, val);
}

/*
 * The entry points: each counts itself in c->busy (see core_enter())
 */

void qhca_core_run(QhcaCore *c)
{
    if (core_enter(c)) {
        core_run(c);
        core_leave(c);
    }
}

void qhca_core_timer(QhcaCore *c)
{
    if (core_enter(c)) {
        core_timer(c);
        core_leave(c);
    }
}

void qhca_core_receive(QhcaCore *c, const uint8_t *frame, size_t len)
{
    if (core_enter(c)) {
        core_receive(c, frame, len);
        core_leave(c);
    }
}

void qhca_core_receive_nowait(QhcaCore *c, const uint8_t *frame, size_t len)
{
    if (!core_enter(c)) {
        return;
    }
    if (g_queue_get_length(&c->rxq) >= QHCA_RXQ_MAX_FRAMES ||
        c->rxq_bytes >= QHCA_RXQ_MAX_BYTES) {
        c->stat_rx_frames++;
        c->stat_rx_bytes += len;
        c->stat_rx_dropped++;
        QHCA_TRACE_RX_DROP(len, QHCA_RX_DROP_RXQ_FULL);
    } else {
        core_receive(c, frame, len);
    }
    core_leave(c);
}

bool qhca_core_loopback(QhcaCore *c, const uint8_t *frame, size_t len)
{
    bool ours = false;

    if (core_enter(c)) {
        ours = core_loopback(c, frame, len);
        core_leave(c);
    }
    return ours;
}

void qhca_core_link_changed(QhcaCore *c)
{
    if (core_enter(c)) {
        core_link_changed(c);
        core_leave(c);
    }
}

void qhca_core_reg_write(QhcaCore *c, uint64_t addr, uint32_t val)
{
    if (core_enter(c)) {
        core_reg_write(c, addr, val);
        core_leave(c);
    }
}

void qhca_core_db_write(QhcaCore *c, uint32_t page, uint32_t off,
                        uint32_t val)
{
    if (core_enter(c)) {
        core_db_write(c, page, off, val);
        core_leave(c);
    }
}
