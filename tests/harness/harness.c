/*
 * Two qhca devices on an in-process wire: the QhcaCoreOps callbacks, QEMU's
 * re-entrancy guard, MSI-X, the bottom half, the virtual clock and the wire
 * (see harness.h).
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "harness.h"
#include "qhca-roce.h"
#include "qhca-qp.h"

static const uint8_t hx_macs[2][6] = {
    { 0x52, 0x54, 0x00, 0x00, 0x00, 0x0a },
    { 0x52, 0x54, 0x00, 0x00, 0x00, 0x0b },
};
static const uint32_t hx_ips[2] = { 0xc6120001, 0xc6120002 };

static const char *const finding_names[HX_FIND_COUNT] = {
    [HX_FIND_GRANT] = "grant",
    [HX_FIND_BUDGET] = "budget",
    [HX_FIND_SPIN] = "spin",
    [HX_FIND_FRAME] = "frame",
    [HX_FIND_IRQ] = "irq",
    [HX_FIND_INFLIGHT] = "inflight",
};

const char *hx_finding_name(HxFinding f)
{
    return f < HX_FIND_COUNT ? finding_names[f] : "?";
}

static bool finding_ignored(HxFinding f)
{
    const char *env = getenv("QHCA_HARNESS_IGNORE");
    g_auto(GStrv) names = NULL;
    unsigned i;

    if (!env) {
        return false;
    }
    names = g_strsplit(env, ",", -1);
    for (i = 0; names[i]; i++) {
        if (!strcmp(g_strstrip(names[i]), finding_names[f]) ||
            !strcmp(names[i], "all")) {
            return true;
        }
    }
    return false;
}

void hx_finding(HxPair *p, HxFinding f, const char *fmt, ...)
{
    va_list ap;

    p->findings[f]++;
    if (finding_ignored(f)) {
        return;
    }
    hx_trace_dump();
    fprintf(stderr, "==qhca-harness== FINDING %s: ", hx_finding_name(f));
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    fflush(stderr);
    abort();
}

/*
 * Guest-physical address space of one guest: RAM, and the device's BARs
 */

static bool in_window(uint64_t addr, uint64_t len, uint64_t base,
                      uint64_t size)
{
    return addr >= base && addr - base < size && len <= size - (addr - base);
}

static void mark_dirty(HxDev *d, uint64_t addr, uint64_t len)
{
    uint64_t pg;

    for (pg = addr >> QHCA_PAGE_SHIFT;
         pg <= (addr + len - 1) >> QHCA_PAGE_SHIFT && pg < HX_RAM_PAGES;
         pg++) {
        d->dirty[pg] = 1;
    }
}

bool hx_mem_write(HxDev *d, uint64_t addr, const void *buf, uint64_t len)
{
    if (!len) {
        return true;
    }
    if (!in_window(addr, len, 0, HX_RAM_SIZE)) {
        return false;
    }
    memcpy(d->ram + addr, buf, len);
    mark_dirty(d, addr, len);
    return true;
}

bool hx_mem_read(HxDev *d, uint64_t addr, void *buf, uint64_t len)
{
    if (!len) {
        return true;
    }
    if (!in_window(addr, len, 0, HX_RAM_SIZE)) {
        memset(buf, 0, len);
        return false;
    }
    memcpy(buf, d->ram + addr, len);
    return true;
}

void hx_mem_fill(HxDev *d, uint64_t addr, uint8_t val, uint64_t len)
{
    if (len && in_window(addr, len, 0, HX_RAM_SIZE)) {
        memset(d->ram + addr, val, len);
        mark_dirty(d, addr, len);
    }
}

/*
 * QEMU's MemReentrancyGuard: an MMIO access while the device is engaged
 * in I/O is dropped (memory.c: "Blocked re-entrant IO")
 */
static bool guard_enter(HxDev *d)
{
    if (d->engaged) {
        d->blocked_reentrant++;
        return false;
    }
    d->engaged = true;
    return true;
}

/* Frames are counted per outermost call into a device */
static void enter(HxDev *d)
{
    if (d->nesting++ == 0) {
        d->call_frames = 0;
    }
}

static void replug(HxDev *d);

static void leave(HxDev *d)
{
    if (--d->nesting == 0 && !qhca_qp_inflight_check(&d->core)) {
        hx_finding(d->pair, HX_FIND_INFLIGHT, "device %c: its data in flight "
                   "(%" PRIu64 " bytes) is not the sum of its QPs' parts",
                   d->name, d->core.inflight_bytes);
    }
    if (d->nesting == 0 && d->replug) {
        replug(d);
    }
}

static void regs_written(HxDev *d, uint32_t off, uint32_t val)
{
    static const uint32_t lo[3] = {
        QHCA_REG_CMDQ_BASE_LO, QHCA_REG_CMDCQ_BASE_LO, QHCA_REG_AEQ_BASE_LO,
    };
    unsigned i;

    for (i = 0; i < 3; i++) {
        if (off == lo[i]) {
            d->sh_base[i] = (d->sh_base[i] & ~0xffffffffULL) | val;
        } else if (off == lo[i] + 4) {
            d->sh_base[i] = (d->sh_base[i] & 0xffffffffULL) |
                            ((uint64_t)val << 32);
        } else if (off == lo[i] + 8) {
            d->sh_log[i] = val;
        }
    }
}

static void after_reset(HxDev *d)
{
    hx_grants_clear(d);
    memset(d->sh_base, 0, sizeof(d->sh_base));
    memset(d->sh_log, 0, sizeof(d->sh_log));
    memset(d->lat_base, 0, sizeof(d->lat_base));
    memset(d->lat_log, 0, sizeof(d->lat_log));
    d->drv.up = false;
}

void hx_mmio_write(HxDev *d, uint32_t off, uint32_t val)
{
    d->inputs++;
    if (!guard_enter(d)) {
        return;
    }
    enter(d);
    regs_written(d, off, val);
    if (off == QHCA_REG_CTRL && (val & QHCA_CTRL_ENABLE) &&
        !(val & QHCA_CTRL_RESET) &&
        !(qhca_core_reg_read(&d->core, QHCA_REG_CTRL) & QHCA_CTRL_ENABLE)) {
        /* the device takes its queue registers now */
        memcpy(d->lat_base, d->sh_base, sizeof(d->lat_base));
        memcpy(d->lat_log, d->sh_log, sizeof(d->lat_log));
        hx_grants_regs(d);
    }
    qhca_core_reg_write(&d->core, off, val);
    if (off == QHCA_REG_CTRL && (val & QHCA_CTRL_RESET)) {
        after_reset(d);
    }
    leave(d);
    d->engaged = false;
}

uint32_t hx_mmio_read(HxDev *d, uint32_t off)
{
    uint32_t val;

    if (!guard_enter(d)) {
        return 0xffffffff;
    }
    enter(d);
    val = qhca_core_reg_read(&d->core, off);
    leave(d);
    d->engaged = false;
    return val;
}

void hx_db_write(HxDev *d, uint32_t page, uint32_t off, uint32_t val)
{
    d->inputs++;
    if (!guard_enter(d)) {
        return;
    }
    enter(d);
    qhca_core_db_write(&d->core, page, off, val);
    leave(d);
    d->engaged = false;
}

void hx_system_reset(HxDev *d)
{
    d->inputs++;
    enter(d);
    qhca_core_reset(&d->core);
    after_reset(d);
    leave(d);
}

void hx_set_link(HxDev *d, bool up)
{
    d->inputs++;
    d->link_up = up;
    enter(d);
    qhca_core_link_changed(&d->core);
    leave(d);
}

static void msix_defaults(HxDev *d)
{
    unsigned v;

    for (v = 0; v < QHCA_MSIX_VECTORS; v++) {
        d->msix[v].addr = HX_APIC_ADDR;
        d->msix[v].data = v;
    }
}

/*
 * The device is unplugged and a new one plugged in its place: QEMU's
 * unrealize (qhca_core_cleanup(), done by hw/qhca.c from a bottom half
 * once the device's code has returned) and realize (qhca_core_init())
 */
static void replug(HxDev *d)
{
    d->replug = false;
    qhca_core_cleanup(&d->core);
    after_reset(d);
    d->timer_deadline = -1;
    d->bh_pending = false;
    d->rx_held = false;
    msix_defaults(d);
    d->port_sltctl = 0;
    qhca_core_init(&d->core, d->core.ops, d, d->mac);
}

void hx_port_write(HxDev *d, uint32_t off, uint32_t val)
{
    if (off == HX_PORT_BRCTL) {
        bool sbr = val & HX_PORT_BRCTL_SBR;

        if (sbr && !(d->port_brctl & HX_PORT_BRCTL_SBR)) {
            /* the bus reset resets the device and its PCI state */
            d->bus_resets++;
            qhca_core_reset(&d->core);
            after_reset(d);
            msix_defaults(d);
        }
        d->port_brctl = val;
    } else if (off == HX_PORT_SLTCTL) {
        bool off_now = (val & HX_PORT_SLTCTL_OFF) == HX_PORT_SLTCTL_OFF;

        if (off_now && (d->port_sltctl & HX_PORT_SLTCTL_OFF) !=
                       HX_PORT_SLTCTL_OFF) {
            d->unplugs++;
            if (qhca_core_busy(&d->core)) {
                qhca_core_stop(&d->core);
                d->replug = true;
            } else {
                replug(d);
                return;
            }
        }
        d->port_sltctl = val;
    }
}

/* An access of the device's own BARs by DMA or an MSI-X message */
static bool bar_access(HxDev *d, uint64_t addr, void *buf, uint64_t len,
                       bool write)
{
    uint8_t *p = buf;
    bool ok = true;
    uint64_t i;

    for (i = 0; i < len; i += 4) {
        uint64_t a = addr + i;
        uint32_t v;

        /* registers and doorbells take aligned 32-bit accesses only */
        if (len - i < 4 || (a & 3)) {
            ok = false;
            break;
        }
        if (write) {
            v = ldl_le_p(p + i);
            if (in_window(a, 4, HX_REG_BAR_ADDR, QHCA_REG_BAR_SIZE)) {
                if (d->engaged) {
                    d->blocked_reentrant++;
                    ok = false;
                    continue;
                }
                hx_mmio_write(d, a - HX_REG_BAR_ADDR, v);
            } else if (in_window(a, 4, HX_DB_BAR_ADDR, QHCA_DB_BAR_SIZE)) {
                if (d->engaged) {
                    d->blocked_reentrant++;
                    ok = false;
                    continue;
                }
                hx_db_write(d, (a - HX_DB_BAR_ADDR) >> QHCA_PAGE_SHIFT,
                            (a - HX_DB_BAR_ADDR) & (QHCA_PAGE_SIZE - 1), v);
            } else {
                ok = false;
            }
        } else {
            if (in_window(a, 4, HX_REG_BAR_ADDR, QHCA_REG_BAR_SIZE) &&
                !d->engaged) {
                v = hx_mmio_read(d, a - HX_REG_BAR_ADDR);
            } else {
                v = 0xffffffff;
                ok = false;
            }
            stl_le_p(p + i, v);
        }
    }
    return ok;
}

/* An access of the root port's configuration by DMA: dwords */
static bool port_access(HxDev *d, uint64_t addr, void *buf, uint64_t len,
                        bool write)
{
    uint8_t *p = buf;
    uint64_t i;

    if ((addr & 3) || (len & 3)) {
        return false;
    }
    for (i = 0; i < len; i += 4) {
        uint32_t off = addr + i - HX_PORT_ADDR;

        if (write) {
            hx_port_write(d, off, ldl_le_p(p + i));
        } else {
            stl_le_p(p + i, off == HX_PORT_BRCTL ? d->port_brctl :
                            off == HX_PORT_SLTCTL ? d->port_sltctl : 0);
        }
    }
    return true;
}

/*
 * QhcaCoreOps
 */

static bool ops_dma(HxDev *d, uint64_t addr, void *buf, uint64_t len,
                    bool write)
{
    uint64_t n;

    if (!len) {
        return true;
    }
    if (addr >= HX_RAM_SIZE) {
        if (in_window(addr, len, HX_REG_BAR_ADDR, QHCA_REG_BAR_SIZE) ||
            in_window(addr, len, HX_DB_BAR_ADDR, QHCA_DB_BAR_SIZE)) {
            return bar_access(d, addr, buf, len, write);
        }
        if (in_window(addr, len, HX_PORT_ADDR, HX_PORT_SIZE)) {
            return port_access(d, addr, buf, len, write);
        }
        return false;
    }
    /* the part in RAM is done, the rest fails (as address_space_rw) */
    n = MIN(len, HX_RAM_SIZE - addr);
    if (!hx_grants_check(d, addr, n)) {
        hx_finding(d->pair, HX_FIND_GRANT,
                   "device %c %s guest RAM 0x%" PRIx64 "+0x%" PRIx64
                   " that the guest did not grant", d->name,
                   write ? "wrote" : "read", addr, n);
    }
    if (write) {
        memcpy(d->ram + addr, buf, n);
        mark_dirty(d, addr, n);
        d->progress++;
        hx_grants_dma_write(d, addr, buf, n);
    } else {
        memcpy(buf, d->ram + addr, n);
        d->dma_reads++;
        hx_grants_dma_read(d, addr, buf, n);
    }
    return n == len;
}

static bool ops_dma_read(void *opaque, uint64_t addr, void *buf, uint64_t len)
{
    return ops_dma(opaque, addr, buf, len, false);
}

static bool ops_dma_write(void *opaque, uint64_t addr, const void *buf,
                          uint64_t len)
{
    return ops_dma(opaque, addr, (void *)buf, len, true);
}

/* An MSI-X message: a 32-bit write of the vector's data to its address */
static void ops_irq(void *opaque, unsigned vector)
{
    HxDev *d = opaque;
    const HxMsix *m;
    uint8_t data[4];

    d->progress++;
    if (vector >= QHCA_MSIX_VECTORS) {
        hx_finding(d->pair, HX_FIND_IRQ, "device %c raised vector %u",
                   d->name, vector);
        return;
    }
    d->irqs[vector]++;
    m = &d->msix[vector];
    stl_le_p(data, m->data);
    if (in_window(m->addr, 4, HX_REG_BAR_ADDR, QHCA_REG_BAR_SIZE) ||
        in_window(m->addr, 4, HX_DB_BAR_ADDR, QHCA_DB_BAR_SIZE)) {
        bar_access(d, m->addr, data, 4, true);
    } else if (in_window(m->addr, 4, HX_PORT_ADDR, HX_PORT_SIZE)) {
        port_access(d, m->addr, data, 4, true);
    } else if (in_window(m->addr, 4, 0, HX_RAM_SIZE)) {
        hx_mem_write(d, m->addr, data, 4);
    }
}

/*
 * Mark an ECN-capable IPv4 or IPv6 frame CE (the IPv4 header checksum
 * made again; the ICRC leaves the field out)
 */
static bool wire_mark_ce(uint8_t *f, size_t len)
{
    uint16_t type;

    if (len < 14 + 40) {
        return false;
    }
    type = f[12] << 8 | f[13];
    if (type == 0x0800) {
        if (!(f[15] & 3) || (f[15] & 3) == 3) {
            return false;
        }
        f[15] |= 3;
        f[24] = f[25] = 0;
        stw_be_p(f + 24, qhca_roce_inet_csum(f + 14, QHCA_ROCE_IPV4_HLEN));
        return true;
    }
    if (type == 0x86dd) {
        /* traffic class: the low nibble of byte 14, the high one of 15 */
        if (!(f[15] & 0x30) || (f[15] & 0x30) == 0x30) {
            return false;
        }
        f[15] |= 0x30;
        return true;
    }
    return false;
}

static void wire_push(HxPair *p, int to, const uint8_t *frame, size_t len)
{
    HxFrame *f;
    bool mark = false;

    if (g_queue_get_length(&p->wire) >= HX_WIRE_MAX_FRAMES) {
        p->wire_lost++;
        return;
    }
    f = g_malloc(sizeof(*f) + len);
    f->to = to;
    f->len = len;
    f->due = p->now;
    if (p->wire_rate_bps) {
        int64_t start = MAX(p->now, p->wire_free[to]);
        int64_t ser = (int64_t)((len * 8 * 1000000000ull) / p->wire_rate_bps);
        uint64_t queued = (uint64_t)(start - p->now) * p->wire_rate_bps /
                          8000000000ull;

        if (p->wire_limit && queued > p->wire_limit) {
            p->wire_lost++;
            g_free(f);
            return;
        }
        p->wire_queue_max = MAX(p->wire_queue_max, queued);
        mark = p->wire_ecn && queued > p->wire_ecn;
        p->wire_free[to] = start + ser;
        f->due = start + ser;
    }
    f->due += p->wire_delay_ns;
    memcpy(f->data, frame, len);
    if (mark && wire_mark_ce(f->data, len)) {
        p->wire_marked++;
    }
    g_queue_push_tail(&p->wire, f);
}

void hx_wire_inject(HxPair *p, int to, const uint8_t *frame, size_t len)
{
    wire_push(p, to & 1, frame, len);
}

void hx_wire_set_mode(HxPair *p, int from, HxWireMode mode, unsigned every)
{
    from &= 1;
    p->mode[from] = mode < HX_WIRE_MODE_COUNT ? mode : HX_WIRE_PASS;
    p->every[from] = MAX(1, every);
    if (p->held[from] && p->mode[from] != HX_WIRE_REORDER) {
        g_queue_push_tail(&p->wire, p->held[from]);
        p->held[from] = NULL;
    }
}

static void ops_tx(void *opaque, const uint8_t *frame, size_t len)
{
    HxDev *d = opaque;
    HxPair *p = d->pair;
    int s = d->idx;
    HxFrame *f;
    QhcaRocePkt pkt;
    QhcaRoceErr err;

    d->progress++;
    if (++d->call_frames == HX_FRAME_BUDGET + 1) {
        hx_finding(p, HX_FIND_BUDGET,
                   "device %c sent more than %u frames in one call",
                   d->name, HX_FRAME_BUDGET);
    }
    if (len > QHCA_TX_FRAME_MAX) {
        hx_finding(p, HX_FIND_FRAME, "device %c sent a %zu-byte frame",
                   d->name, len);
        return;
    }
    err = qhca_roce_parse(frame, len, &pkt);
    if (err != QHCA_ROCE_OK || memcmp(frame + 6, d->mac, 6)) {
        hx_finding(p, HX_FIND_FRAME, "device %c sent a frame that is "
                   "not well-formed RoCEv2 from its MAC: %s", d->name,
                   err ? qhca_roce_strerror(err) : "source MAC");
    }
    /*
     * As hw/qhca.c: a frame for the device itself is queued on its loop
     * queue (received by its next bottom-half run) and also goes on the
     * wire, where the peer drops it (not its MAC)
     */
    qhca_core_loopback(&d->core, frame, len);
    if (err == QHCA_ROCE_OK) {
        p->last_psn[s][pkt.hdr.dest_qp & 1023] = pkt.hdr.psn;
    } else if (len >= 54) {
        /* BTH at 42 over IPv4: dest QP in bytes 5..7, PSN in 9..11 */
        uint32_t dqp = ldl_be_p(frame + 46) & 0xffffff;
        uint32_t psn = ldl_be_p(frame + 50) & 0xffffff;

        p->last_psn[s][dqp & 1023] = psn;
    }
    p->sent[s]++;
    /* one count for both directions, as the qtest's wire */
    p->wire_count++;
    switch (p->mode[s]) {
    case HX_WIRE_DROP_EVERY:
        if (p->wire_count % p->every[s] == 0) {
            p->wire_lost++;
            return;
        }
        break;
    case HX_WIRE_DUP_EVERY:
        if (p->wire_count % p->every[s] == 0) {
            wire_push(p, !s, frame, len);
        }
        break;
    case HX_WIRE_DROP_RANDOM:
        p->rng = p->rng * 1103515245 + 12345;
        if ((p->rng >> 16) % p->every[s] == 0) {
            p->wire_lost++;
            return;
        }
        break;
    case HX_WIRE_BLACKHOLE:
        p->wire_lost++;
        return;
    case HX_WIRE_REORDER:
        if (!p->held[s]) {
            f = g_malloc(sizeof(*f) + len);
            f->to = !s;
            f->due = 0;
            f->len = len;
            memcpy(f->data, frame, len);
            p->held[s] = f;
            return;
        }
        wire_push(p, !s, frame, len);
        g_queue_push_tail(&p->wire, p->held[s]);
        p->held[s] = NULL;
        return;
    default:
        break;
    }
    wire_push(p, !s, frame, len);
}

static bool ops_link_up(void *opaque)
{
    HxDev *d = opaque;

    return d->link_up;
}

static void ops_schedule(void *opaque)
{
    HxDev *d = opaque;

    d->bh_pending = true;
}

static int64_t ops_now_ns(void *opaque)
{
    HxDev *d = opaque;

    return d->pair->now;
}

static void ops_timer_mod(void *opaque, int64_t deadline_ns)
{
    HxDev *d = opaque;

    d->timer_deadline = deadline_ns < 0 ? -1 : deadline_ns;
}

static void ops_rx_resume(void *opaque)
{
    HxDev *d = opaque;

    d->rx_held = false;
}

static const QhcaCoreOps hx_ops = {
    .dma_read = ops_dma_read,
    .dma_write = ops_dma_write,
    .irq = ops_irq,
    .tx = ops_tx,
    .link_up = ops_link_up,
    .schedule = ops_schedule,
    .now_ns = ops_now_ns,
    .timer_mod = ops_timer_mod,
    .rx_resume = ops_rx_resume,
};

/*
 * The main loop
 */

/* The bottom half: guarded as aio_bh_call() does */
static void run_bh(HxDev *d)
{
    bool was = d->engaged;
    uint64_t progress = d->progress;
    bool input = d->inputs != 0;

    d->inputs = 0;
    d->engaged = true;
    enter(d);
    qhca_core_run(&d->core);
    leave(d);
    d->engaged = was;
    if (d->bh_pending && d->progress == progress && !input) {
        if (++d->idle_runs >= HX_SPIN_LIMIT) {
            hx_finding(d->pair, HX_FIND_SPIN,
                       "device %c: the bottom half ran %u times in a row "
                       "doing nothing and rescheduled itself", d->name,
                       d->idle_runs);
            d->bh_pending = false;
            d->idle_runs = 0;
        }
    } else {
        d->idle_runs = 0;
    }
}

static void fire_timer(HxDev *d)
{
    d->timer_deadline = -1;
    d->inputs++;
    enter(d);
    qhca_core_timer(&d->core);
    leave(d);
}

/* Deliver what is on the wire, as the netdev would; true if any */
static bool deliver(HxPair *p)
{
    GList *l = p->wire.head;
    unsigned n = 0, max = p->deliver_max ? p->deliver_max : 64;

    while (l && n < max) {
        GList *next = l->next;
        HxFrame *f = l->data;
        HxDev *d = &p->dev[f->to];

        if (f->due > p->now) {
            l = next;                   /* still on its way */
            continue;
        }
        if (!d->rx_held) {
            if (!qhca_core_can_receive(&d->core)) {
                d->rx_held = true;
            } else {
                bool was = d->engaged;

                g_queue_delete_link(&p->wire, l);
                d->inputs++;
                d->engaged = true;
                enter(d);
                qhca_core_receive(&d->core, f->data, f->len);
                leave(d);
                d->engaged = was;
                g_free(f);
                n++;
            }
        }
        l = next;
    }
    return n > 0;
}

bool hx_step(HxPair *p)
{
    bool did = false;
    int i;

    if (p->stopped) {
        return false;
    }
    if (p->step_limit && ++p->steps > p->step_limit) {
        p->stopped = true;
        return false;
    }
    for (i = 0; i < 2; i++) {
        HxDev *d = &p->dev[i];

        if (d->timer_deadline >= 0 && d->timer_deadline <= p->now) {
            fire_timer(d);
            did = true;
        }
    }
    for (i = 0; i < 2; i++) {
        HxDev *d = &p->dev[i];

        if (d->bh_pending) {
            d->bh_pending = false;
            run_bh(d);
            did = true;
        }
    }
    return deliver(p) || did;
}

void hx_pump(HxPair *p, unsigned max_steps)
{
    while (max_steps-- && hx_step(p)) {
        continue;
    }
}

static bool release_held(HxPair *p)
{
    bool any = false;
    int i;

    for (i = 0; i < 2; i++) {
        if (p->held[i]) {
            g_queue_push_tail(&p->wire, p->held[i]);
            p->held[i] = NULL;
            any = true;
        }
    }
    return any;
}

static int64_t next_deadline(HxPair *p)
{
    int64_t t = -1;
    int i;

    for (i = 0; i < 2; i++) {
        int64_t d = p->dev[i].timer_deadline;

        if (d >= 0 && (t < 0 || d < t)) {
            t = d;
        }
    }
    if (p->wire_delay_ns || p->wire_rate_bps) {
        GList *l;

        for (l = p->wire.head; l; l = l->next) {
            HxFrame *f = l->data;

            if (f->due > p->now && (t < 0 || f->due < t)) {
                t = f->due;
            }
        }
    }
    return t;
}

void hx_settle(HxPair *p, int64_t max_ns, unsigned max_steps)
{
    int64_t end = p->now + MAX(0, max_ns);

    while (max_steps-- && !p->stopped) {
        int64_t t;

        if (hx_step(p) || release_held(p)) {
            continue;
        }
        t = next_deadline(p);
        if (t < 0 || t > end) {
            break;
        }
        if (p->time_limit && t > p->time_limit) {
            p->stopped = true;
            break;
        }
        p->now = MAX(p->now, t);
    }
}

void hx_advance(HxPair *p, int64_t ns)
{
    int64_t end = p->now + MAX(0, ns);
    unsigned guard = 10000;

    while (guard-- && !p->stopped) {
        int64_t t;

        if (hx_step(p)) {
            continue;
        }
        t = next_deadline(p);
        if (t < 0 || t > end) {
            break;
        }
        if (p->time_limit && t > p->time_limit) {
            p->stopped = true;
            return;
        }
        p->now = MAX(p->now, t);
    }
    if (p->time_limit && end > p->time_limit) {
        p->stopped = true;
        return;
    }
    p->now = MAX(p->now, end);
    hx_pump(p, 64);
}

/*
 * Life cycle
 */

static void dev_init(HxPair *p, int i)
{
    HxDev *d = &p->dev[i];

    d->pair = p;
    d->idx = i;
    d->name = 'A' + i;
    memcpy(d->mac, hx_macs[i], 6);
    d->ip = hx_ips[i];
    /* fd71:6863:6100::c612:1 and ...:2, unique local addresses */
    memset(d->ip6, 0, sizeof(d->ip6));
    d->ip6[0] = 0xfd;
    d->ip6[1] = 0x71;
    d->ip6[2] = 0x68;
    d->ip6[3] = 0x63;
    d->ip6[4] = 0x61;
    stl_be_p(&d->ip6[12], hx_ips[i]);
    d->timer_deadline = -1;
    d->link_up = true;
    msix_defaults(d);
    qhca_core_init(&d->core, &hx_ops, d, d->mac);
    hx_drv_init(d);
}

void hx_pair_init(HxPair *p)
{
    int i;

    memset(p, 0, sizeof(*p));
    p->rng = 1;
    g_queue_init(&p->wire);
    for (i = 0; i < 2; i++) {
        p->dev[i].ram = g_malloc0(HX_RAM_SIZE);
        p->dev[i].grants = hx_grants_new();
        dev_init(p, i);
    }
}

/* Tear down both devices and the wire (LeakSanitizer checks the rest) */
void hx_pair_cleanup(HxPair *p)
{
    HxFrame *f;
    int i;

    for (i = 0; i < 2; i++) {
        qhca_core_cleanup(&p->dev[i].core);
        hx_grants_clear(&p->dev[i]);
        g_free(p->held[i]);
        p->held[i] = NULL;
    }
    while ((f = g_queue_pop_head(&p->wire))) {
        g_free(f);
    }
}

void hx_pair_reset(HxPair *p)
{
    int i;

    hx_pair_cleanup(p);
    for (i = 0; i < 2; i++) {
        HxDev *d = &p->dev[i];
        uint8_t *ram = d->ram;
        HxGrants *g = d->grants;
        unsigned pg;

        for (pg = 0; pg < HX_RAM_PAGES; pg++) {
            if (d->dirty[pg]) {
                memset(ram + (uint64_t)pg * QHCA_PAGE_SIZE, 0,
                       QHCA_PAGE_SIZE);
            }
        }
        hx_grants_clear(d);
        memset(d, 0, sizeof(*d));
        d->ram = ram;
        d->grants = g;
        dev_init(p, i);
    }
    p->now = 0;
    p->wire_bytes = 0;
    p->wire_lost = 0;
    p->wire_delay_ns = 0;
    p->wire_rate_bps = 0;
    p->wire_limit = 0;
    p->wire_ecn = 0;
    p->wire_marked = 0;
    p->wire_queue_max = 0;
    memset(p->wire_free, 0, sizeof(p->wire_free));
    memset(p->mode, 0, sizeof(p->mode));
    memset(p->every, 0, sizeof(p->every));
    memset(p->sent, 0, sizeof(p->sent));
    p->wire_count = 0;
    p->rng = 1;
    memset(p->last_psn, 0, sizeof(p->last_psn));
    memset(p->findings, 0, sizeof(p->findings));
    p->steps = 0;
    p->stopped = false;
}

void hx_pair_destroy(HxPair *p)
{
    int i;

    hx_pair_cleanup(p);
    for (i = 0; i < 2; i++) {
        hx_grants_free(p->dev[i].grants);
        g_free(p->dev[i].ram);
    }
}

HxPair *hx_pair_new(HxDev **a, HxDev **b)
{
    HxPair *p = g_new0(HxPair, 1);

    hx_pair_init(p);
    *a = &p->dev[0];
    *b = &p->dev[1];
    return p;
}

void hx_pair_free(HxPair *p)
{
    hx_pair_destroy(p);
    g_free(p);
}
