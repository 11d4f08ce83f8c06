/*
 * qhca device logic: page lists, rings and host queues in guest memory, and
 * the budget of host memory the device keeps for them.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qhca-mem.h"
#include "trace.h"

/*
 * The budget: host memory kept for guest-created objects, in 8-byte units
 * (QHCA_PAGE_BUDGET), the one place c->pages_used changes
 */

bool qhca_budget_charge(QhcaCore *c, uint32_t units)
{
    if (units > QHCA_PAGE_BUDGET - c->pages_used) {
        trace_qhca_err_budget(units, c->pages_used);
        return false;
    }
    c->pages_used += units;
    return true;
}

void qhca_budget_release(QhcaCore *c, uint32_t units)
{
    assert(c->pages_used >= units);
    c->pages_used -= units;
}

/*
 * Page lists and rings
 */

void qhca_pages_free(QhcaCore *c, QhcaPages *p)
{
    qhca_budget_release(c, p->count);
    g_free(p->addr);
    p->addr = NULL;
    p->count = 0;
}

/*
 * Copy the page list described by @d into @p.  @min_bytes is how much
 * memory the object needs; @queue restricts the page size to 4 KiB.
 */
int qhca_pages_load(QhcaCore *c, const struct qhca_pbl_desc *d,
                    uint64_t min_bytes, bool queue, QhcaPages *p)
{
    uint64_t pbl = le64_to_cpu(d->pbl_addr);
    uint32_t n = le32_to_cpu(d->num_pages);
    uint8_t levels = d->levels;
    uint8_t shift = d->page_shift;
    uint64_t *addr;
    uint64_t at = pbl;          /* what is read: for the trace */
    uint32_t i;

    if (shift < QHCA_PAGE_SHIFT || shift > 30 ||
        (queue && shift != QHCA_PAGE_SHIFT)) {
        QHCA_GUEST_ERROR(c, page_list_bad_page_shift, shift, queue);
        return QHCA_CMD_ERR_PARAM;
    }
    if (n == 0 || (levels != 1 && levels != 2) ||
        (levels == 1 && n > QHCA_PBL_ENTRIES) ||
        n > QHCA_PBL_ENTRIES * QHCA_PBL_ENTRIES) {
        QHCA_GUEST_ERROR(c, page_list_bad_page_count_levels, n, levels);
        return QHCA_CMD_ERR_PARAM;
    }
    if (((uint64_t)n << shift) < min_bytes) {
        QHCA_GUEST_ERROR(c, page_list_too_small_object, n, shift, min_bytes);
        return QHCA_CMD_ERR_PARAM;
    }
    if (pbl & (QHCA_PAGE_SIZE - 1)) {
        QHCA_GUEST_ERROR(c, page_list_address_not_page_aligned, pbl);
        return QHCA_CMD_ERR_PARAM;
    }
    if (!qhca_budget_charge(c, n)) {
        return QHCA_CMD_ERR_NO_RESOURCES;
    }

    addr = g_new(uint64_t, n);
    if (levels == 1) {
        if (!qhca_op_dma_read(c, pbl, addr, (uint64_t)n * 8)) {
            goto dma_error;
        }
    } else {
        uint32_t n1 = DIV_ROUND_UP(n, QHCA_PBL_ENTRIES);
        g_autofree uint64_t *l1 = g_new(uint64_t, n1);

        if (!qhca_op_dma_read(c, pbl, l1, (uint64_t)n1 * 8)) {
            goto dma_error;
        }
        for (i = 0; i < n1; i++) {
            uint64_t a = le64_to_cpu(l1[i]);
            uint32_t cnt = MIN(QHCA_PBL_ENTRIES, n - i * QHCA_PBL_ENTRIES);

            if (a & (QHCA_PAGE_SIZE - 1)) {
                QHCA_GUEST_ERROR(c, page_list_level_2_page_not_aligned, pbl,
                                 i, a);
                g_free(addr);
                qhca_budget_release(c, n);
                return QHCA_CMD_ERR_PARAM;
            }
            at = a;
            if (!qhca_op_dma_read(c, a, addr + (uint64_t)i * QHCA_PBL_ENTRIES,
                          (uint64_t)cnt * 8)) {
                goto dma_error;
            }
        }
    }
    for (i = 0; i < n; i++) {
        addr[i] = le64_to_cpu(addr[i]);
        if (addr[i] & ((1ULL << shift) - 1)) {
            QHCA_GUEST_ERROR(c, page_list_page_not_aligned, pbl, i, addr[i],
                             shift);
            g_free(addr);
            qhca_budget_release(c, n);
            return QHCA_CMD_ERR_PARAM;
        }
    }
    p->addr = addr;
    p->count = n;
    p->shift = shift;
    return QHCA_CMD_OK;

dma_error:
    g_free(addr);
    qhca_budget_release(c, n);
    QHCA_GUEST_ERROR(c, page_list_dma_read_failed, pbl, levels, at);
    return QHCA_CMD_ERR_DMA;
}

/*
 * A page list from the device's saved state (qhca-save.c), checked as
 * qhca_pages_load() checks one from the guest; @addr becomes @p's
 * (freed on failure)
 */
bool qhca_pages_restore(QhcaCore *c, QhcaPages *p, uint8_t shift,
                        uint32_t n, uint64_t *addr, uint64_t min_bytes,
                        bool queue)
{
    uint32_t i;

    if (shift < QHCA_PAGE_SHIFT || shift > 30 ||
        (queue && shift != QHCA_PAGE_SHIFT) ||
        n == 0 || n > QHCA_PBL_ENTRIES * QHCA_PBL_ENTRIES ||
        ((uint64_t)n << shift) < min_bytes) {
        g_free(addr);
        return false;
    }
    for (i = 0; i < n; i++) {
        if (addr[i] & ((1ULL << shift) - 1)) {
            g_free(addr);
            return false;
        }
    }
    if (!qhca_budget_charge(c, n)) {
        g_free(addr);
        return false;
    }
    p->addr = addr;
    p->count = n;
    p->shift = shift;
    return true;
}

bool qhca_ring_entry_addr(const QhcaRing *r, uint32_t idx, uint64_t *addr)
{
    uint64_t off = (uint64_t)(idx & ((1u << r->log_depth) - 1))
                   << r->log_stride;
    uint64_t page = off >> r->mem.shift;

    if (page >= r->mem.count) {
        return false;
    }
    *addr = r->mem.addr[page] + (off & ((1ULL << r->mem.shift) - 1));
    return true;
}

/* Set up a ring of 2^log_depth entries of 2^log_stride bytes */
int qhca_ring_init(QhcaCore *c, QhcaRing *r,
                   const struct qhca_pbl_desc *d,
                   uint32_t log_depth, uint32_t log_stride)
{
    if (log_depth < 1 || log_depth > QHCA_MAX_QUEUE_LOG) {
        QHCA_GUEST_ERROR(c, ring_bad_log_depth, log_depth, QHCA_MAX_QUEUE_LOG);
        return QHCA_CMD_ERR_PARAM;
    }
    r->log_depth = log_depth;
    r->log_stride = log_stride;
    r->pi = 0;
    r->ci = 0;
    return qhca_pages_load(c, d, 1ULL << (log_depth + log_stride), true,
                           &r->mem);
}

/* Write a ring entry at @addr with its owner byte (at @owner_off) last */
bool qhca_write_entry(QhcaCore *c, uint64_t addr, const void *entry,
                      size_t size, size_t owner_off)
{
    const uint8_t *e = entry;

    return qhca_op_dma_write(c, addr, e, owner_off) &&
           qhca_op_dma_write(c, addr + owner_off + 1, e + owner_off + 1,
                     size - owner_off - 1) &&
           qhca_op_dma_write(c, addr + owner_off, e + owner_off, 1);
}

/*
 * Write one entry of a device-written ring; @owner_off is the offset of its
 * owner byte.  The owner byte is written last.
 */
bool qhca_ring_produce(QhcaCore *c, QhcaRing *r, void *entry,
                       size_t size, size_t owner_off)
{
    uint8_t *e = entry;
    uint64_t addr;

    e[owner_off] = ((r->pi >> r->log_depth) & 1) ? 0 : QHCA_OWNER_BIT;
    if (!qhca_ring_entry_addr(r, r->pi, &addr) ||
        !qhca_write_entry(c, addr, e, size, owner_off)) {
        return false;
    }
    r->pi++;
    return true;
}

bool qhca_ring_full(const QhcaRing *r)
{
    return (uint16_t)(r->pi - r->ci) >= (1u << r->log_depth);
}

/* A consumer index from a doorbell is valid if it is between ci and pi */
bool qhca_ci_valid(uint16_t pi, uint16_t old_ci, uint16_t new_ci)
{
    return (uint16_t)(new_ci - old_ci) <= (uint16_t)(pi - old_ci);
}

/*
 * Host queues: one contiguous block each, set up by registers
 */

bool qhca_hostq_regs_ok(const QhcaHostQueue *q, uint32_t max_log_depth)
{
    return q->base && !(q->base & (QHCA_PAGE_SIZE - 1)) &&
           q->log_depth >= 1 && q->log_depth <= max_log_depth;
}

/* Where entry @idx (modulo the depth) is */
uint64_t qhca_hostq_addr(const QhcaHostQueue *q, uint16_t idx,
                         uint32_t esize)
{
    return q->base + (uint64_t)(idx & ((1u << q->log_depth) - 1)) * esize;
}

bool qhca_hostq_full(const QhcaHostQueue *q)
{
    return (uint16_t)(q->pi - q->ci) >= (1u << q->log_depth);
}

/*
 * Write the next entry of a device-written host queue, its owner byte (at
 * @owner_off) last; false if the DMA failed (nothing is produced)
 */
bool qhca_hostq_produce(QhcaCore *c, QhcaHostQueue *q, void *entry,
                        size_t size, size_t owner_off, uint32_t esize)
{
    uint8_t *e = entry;

    e[owner_off] = ((q->pi >> q->log_depth) & 1) ? 0 : QHCA_OWNER_BIT;
    if (!qhca_write_entry(c, qhca_hostq_addr(q, q->pi, esize), e, size,
                          owner_off)) {
        return false;
    }
    q->pi++;
    return true;
}

/* An armed device-written host queue with an entry: its interrupt */
void qhca_hostq_notify(QhcaCore *c, QhcaHostQueue *q)
{
    if (q->armed && q->pi != q->ci) {
        q->armed = false;
        trace_qhca_irq(QHCA_MSIX_VEC_ASYNC);
        qhca_op_irq(c, QHCA_MSIX_VEC_ASYNC);
    }
}
