/*
 * qhca device logic: registers, command queue, objects, EQs and CQs.
 *
 * Everything here treats guest memory and register writes as hostile: every
 * index, length, address and handle is range-checked, and bad input gives
 * an error status, a dropped doorbell or a fatal device state, each with a
 * trace event and a LOG_GUEST_ERROR message.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/bswap.h"
#include "qemu/host-utils.h"
#include "qhca-core.h"
#include "qhca-qp.h"
#include "qhca-roce.h"
#include "trace.h"

/*
 * Guest input the device refuses (an error status, CQE or dropped frame)
 * and register or doorbell use that the hardware contract leaves undefined
 * (ignored): counted in STAT_GUEST_ERRORS and logged with LOG_GUEST_ERROR
 * under the name of the condition's trace event.  Called through
 * QHCA_GUEST_ERROR() and QHCA_GUEST_UB(), which also emit that event
 * (qhca_err_* and qhca_ub_* in hw/trace-events), as hw/nvme names one
 * event per condition.
 */
void qhca_guest_error(QhcaCore *c, const char *event, uint64_t val)
{
    c->stat_guest_errors++;
    qemu_log_mask(LOG_GUEST_ERROR, "%s (0x%" PRIx64 ")\n", event, val);
}

static bool dma_read(QhcaCore *c, uint64_t addr, void *buf, uint64_t len)
{
    return qhca_op_dma_read(c, addr, buf, len);
}

static bool dma_write(QhcaCore *c, uint64_t addr, const void *buf,
                      uint64_t len)
{
    return qhca_op_dma_write(c, addr, buf, len);
}

/*
 * Page lists and rings
 */

static void qhca_pages_free(QhcaCore *c, QhcaPages *p)
{
    assert(c->pages_used >= p->count);
    c->pages_used -= p->count;
    g_free(p->addr);
    p->addr = NULL;
    p->count = 0;
}

/*
 * Copy the page list described by @d into @p.  @min_bytes is how much
 * memory the object needs; @queue restricts the page size to 4 KiB.
 */
static int qhca_pages_load(QhcaCore *c, const struct qhca_pbl_desc *d,
                           uint64_t min_bytes, bool queue, QhcaPages *p)
{
    uint64_t pbl = le64_to_cpu(d->pbl_addr);
    uint32_t n = le32_to_cpu(d->num_pages);
    uint8_t levels = d->levels;
    uint8_t shift = d->page_shift;
    uint64_t *addr;
    uint32_t i;

    if (shift < QHCA_PAGE_SHIFT || shift > 30 ||
        (queue && shift != QHCA_PAGE_SHIFT)) {
        QHCA_GUEST_ERROR(c, page_list_bad_page_shift, shift);
        return QHCA_CMD_ERR_PARAM;
    }
    if (n == 0 || (levels != 1 && levels != 2) ||
        (levels == 1 && n > QHCA_PBL_ENTRIES) ||
        n > QHCA_PBL_ENTRIES * QHCA_PBL_ENTRIES) {
        QHCA_GUEST_ERROR(c, page_list_bad_page_count_levels, n);
        return QHCA_CMD_ERR_PARAM;
    }
    if (((uint64_t)n << shift) < min_bytes) {
        QHCA_GUEST_ERROR(c, page_list_too_small_object, n);
        return QHCA_CMD_ERR_PARAM;
    }
    if (pbl & (QHCA_PAGE_SIZE - 1)) {
        QHCA_GUEST_ERROR(c, page_list_address_not_page_aligned, pbl);
        return QHCA_CMD_ERR_PARAM;
    }
    if (n > QHCA_PAGE_BUDGET - c->pages_used) {
        trace_qhca_err_budget(n, c->pages_used);
        return QHCA_CMD_ERR_NO_RESOURCES;
    }

    addr = g_new(uint64_t, n);
    if (levels == 1) {
        if (!dma_read(c, pbl, addr, (uint64_t)n * 8)) {
            goto dma_error;
        }
    } else {
        uint32_t n1 = DIV_ROUND_UP(n, QHCA_PBL_ENTRIES);
        g_autofree uint64_t *l1 = g_new(uint64_t, n1);

        if (!dma_read(c, pbl, l1, (uint64_t)n1 * 8)) {
            goto dma_error;
        }
        for (i = 0; i < n1; i++) {
            uint64_t a = le64_to_cpu(l1[i]);
            uint32_t cnt = MIN(QHCA_PBL_ENTRIES, n - i * QHCA_PBL_ENTRIES);

            if (a & (QHCA_PAGE_SIZE - 1)) {
                QHCA_GUEST_ERROR(c, page_list_level_2_page_not_aligned, a);
                g_free(addr);
                return QHCA_CMD_ERR_PARAM;
            }
            if (!dma_read(c, a, addr + (uint64_t)i * QHCA_PBL_ENTRIES,
                          (uint64_t)cnt * 8)) {
                goto dma_error;
            }
        }
    }
    for (i = 0; i < n; i++) {
        addr[i] = le64_to_cpu(addr[i]);
        if (addr[i] & ((1ULL << shift) - 1)) {
            QHCA_GUEST_ERROR(c, page_list_page_not_aligned, addr[i]);
            g_free(addr);
            return QHCA_CMD_ERR_PARAM;
        }
    }
    p->addr = addr;
    p->count = n;
    p->shift = shift;
    c->pages_used += n;
    return QHCA_CMD_OK;

dma_error:
    g_free(addr);
    QHCA_GUEST_ERROR(c, page_list_dma_read_failed, pbl);
    return QHCA_CMD_ERR_DMA;
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
static int qhca_ring_init(QhcaCore *c, QhcaRing *r,
                          const struct qhca_pbl_desc *d,
                          uint32_t log_depth, uint32_t log_stride)
{
    if (log_depth < 1 || log_depth > QHCA_MAX_QUEUE_LOG) {
        QHCA_GUEST_ERROR(c, ring_bad_log_depth, log_depth);
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
static bool qhca_write_entry(QhcaCore *c, uint64_t addr, const void *entry,
                             size_t size, size_t owner_off)
{
    const uint8_t *e = entry;

    return dma_write(c, addr, e, owner_off) &&
           dma_write(c, addr + owner_off + 1, e + owner_off + 1,
                     size - owner_off - 1) &&
           dma_write(c, addr + owner_off, e + owner_off, 1);
}

/*
 * Write one entry of a device-written ring; @owner_off is the offset of its
 * owner byte.  The owner byte is written last.
 */
static bool qhca_ring_produce(QhcaCore *c, QhcaRing *r, void *entry,
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

static bool qhca_ring_full(const QhcaRing *r)
{
    return (uint16_t)(r->pi - r->ci) >= (1u << r->log_depth);
}

/* A consumer index from a doorbell is valid if it is between ci and pi */
static bool qhca_ci_valid(uint16_t pi, uint16_t old_ci, uint16_t new_ci)
{
    return (uint16_t)(new_ci - old_ci) <= (uint16_t)(pi - old_ci);
}

/*
 * Events and completions
 */

static void qhca_eq_post(QhcaCore *c, uint32_t eqn, uint8_t type,
                         uint32_t obj)
{
    QhcaEq *eq = eqn < QHCA_MAX_EQS ? c->eq[eqn] : NULL;
    struct qhca_eqe eqe = { .type = type, .obj = cpu_to_le32(obj) };

    if (!eq) {
        return;
    }
    if (qhca_ring_full(&eq->ring)) {
        QHCA_GUEST_ERROR(c, eq_overflow_event_dropped, eqn);
        return;
    }
    if (!qhca_ring_produce(c, &eq->ring, &eqe, sizeof(eqe),
                           offsetof(struct qhca_eqe, owner))) {
        QHCA_GUEST_ERROR(c, eq_dma_write_failed, eqn);
        return;
    }
    trace_qhca_eqe(eqn, type, obj);
    if (eq->armed) {
        eq->armed = false;
        trace_qhca_irq(eq->vector);
        qhca_op_irq(c, eq->vector);
    }
}

void qhca_post_async(QhcaCore *c, uint8_t type, uint32_t obj)
{
    struct qhca_eqe eqe = { .type = type, .obj = cpu_to_le32(obj) };
    uint32_t depth = 1u << c->aeq_log_depth;
    uint64_t addr;

    if (!(c->status & QHCA_STATUS_READY)) {
        return;
    }
    if ((uint16_t)(c->aeq_pi - c->aeq_ci) >= depth) {
        QHCA_GUEST_ERROR(c, async_eq_overflow_event_dropped, type);
        return;
    }
    eqe.owner = ((c->aeq_pi >> c->aeq_log_depth) & 1) ? 0 : QHCA_OWNER_BIT;
    addr = c->aeq_base + (uint64_t)(c->aeq_pi & (depth - 1)) * QHCA_EQE_SIZE;
    if (!qhca_write_entry(c, addr, &eqe, sizeof(eqe),
                          offsetof(struct qhca_eqe, owner))) {
        c->status |= QHCA_STATUS_FATAL;
        c->fatal_code = QHCA_FATAL_AEQ_DMA;
        return;
    }
    c->aeq_pi++;
    trace_qhca_eqe(0, type, obj);
    if (c->aeq_armed) {
        c->aeq_armed = false;
        trace_qhca_irq(QHCA_MSIX_VEC_ASYNC);
        qhca_op_irq(c, QHCA_MSIX_VEC_ASYNC);
    }
}

static void qhca_cq_event(QhcaCore *c, uint32_t cqn, QhcaCq *cq)
{
    cq->arm = QHCA_CQ_DISARMED;
    qhca_eq_post(c, cq->eqn, QHCA_EQE_COMPLETION, cqn);
}

/* Returns false if the CQ is gone, broken or full (the CQE is lost) */
bool qhca_post_cqe(QhcaCore *c, uint32_t cqn, struct qhca_cqe *cqe)
{
    QhcaCq *cq = cqn < QHCA_MAX_CQ ? c->cq[cqn] : NULL;
    bool solicited;

    if (!cq || cq->error) {
        return false;
    }
    if (qhca_ring_full(&cq->ring)) {
        cq->error = true;
        QHCA_GUEST_ERROR(c, cq_overflow, cqn);
        qhca_post_async(c, QHCA_EQE_CQ_ERROR, cqn);
        return false;
    }
    if (!qhca_ring_produce(c, &cq->ring, cqe, sizeof(*cqe),
                           offsetof(struct qhca_cqe, owner))) {
        cq->error = true;
        QHCA_GUEST_ERROR(c, cq_dma_write_failed, cqn);
        qhca_post_async(c, QHCA_EQE_CQ_ERROR, cqn);
        return false;
    }
    trace_qhca_cqe(cqn, le32_to_cpu(cqe->qpn), cqe->status, cqe->opcode,
                   le32_to_cpu(cqe->byte_len));
    solicited = (cqe->flags & QHCA_CQE_SOLICITED) ||
                cqe->status != QHCA_CQE_SUCCESS;
    if (cq->arm == QHCA_CQ_ARM_NEXT ||
        (cq->arm == QHCA_CQ_ARM_SOLICITED && solicited)) {
        qhca_cq_event(c, cqn, cq);
    }
    return true;
}

/*
 * Object tables
 */

static int qhca_alloc_slot(void **table, uint32_t size, uint32_t first)
{
    uint32_t i;

    for (i = first; i < size; i++) {
        if (!table[i]) {
            return i;
        }
    }
    return -1;
}

#define LOOKUP(c, tbl, n) \
    ((n) < ARRAY_SIZE((c)->tbl) ? (c)->tbl[(n)] : NULL)

QhcaQp *qhca_core_qp(QhcaCore *c, uint32_t qpn)
{
    return LOOKUP(c, qp, qpn);
}

QhcaSrq *qhca_core_srq(QhcaCore *c, uint32_t srqn)
{
    return LOOKUP(c, srq, srqn);
}

QhcaAh *qhca_core_ah(QhcaCore *c, uint32_t ahn)
{
    return LOOKUP(c, ah, ahn);
}

/* The multicast group @gid, if a QP is attached to it */
const QhcaMcg *qhca_core_mcg(QhcaCore *c, const uint8_t *gid)
{
    unsigned i;

    for (i = 0; i < QHCA_MAX_MCAST_GRP; i++) {
        if (c->mcg[i].nqp && !memcmp(c->mcg[i].gid, gid, 16)) {
            return &c->mcg[i];
        }
    }
    return NULL;
}

/* Whether a group with a QP attached has the Ethernet multicast MAC @mac */
bool qhca_core_mcast_mac(QhcaCore *c, const uint8_t *mac)
{
    unsigned i;

    for (i = 0; i < QHCA_MAX_MCAST_GRP; i++) {
        if (c->mcg[i].nqp && !memcmp(c->mcg[i].mac, mac, 6)) {
            return true;
        }
    }
    return false;
}

/* Take QP @qpn out of group @g; false if it was not attached */
static bool qhca_mcg_remove(QhcaMcg *g, uint32_t qpn)
{
    uint32_t i;

    for (i = 0; i < g->nqp; i++) {
        if (g->qpn[i] == qpn) {
            g->qpn[i] = g->qpn[--g->nqp];
            return true;
        }
    }
    return false;
}

/* REG_MR work request: fill a free fast-register MR (status: a CQE status) */
int qhca_mr_fast_reg(QhcaCore *c, uint32_t pdn, uint32_t key, uint32_t access,
                     uint64_t iova, uint64_t length, uint64_t pbl_addr,
                     uint32_t num_pages, uint8_t page_shift)
{
    QhcaMr *mr = LOOKUP(c, mr, key >> QHCA_KEY_INDEX_SHIFT);
    struct qhca_pbl_desc d = {
        .pbl_addr = cpu_to_le64(pbl_addr),
        .num_pages = cpu_to_le32(num_pages),
        .levels = 1,
        .page_shift = page_shift,
    };
    QhcaPages pages;

    if (!mr || !mr->fast_reg || mr->valid || mr->pdn != pdn) {
        QHCA_GUEST_ERROR(c, reg_mr_wr_not_free_fast_register_mr, key);
        return QHCA_CQE_LOC_PROT_ERR;
    }
    if ((access & ~QHCA_ACCESS_MASK) || num_pages > mr->max_pages ||
        length == 0 || length > QHCA_MAX_MR_SIZE || iova + length < iova ||
        page_shift < QHCA_PAGE_SHIFT || page_shift > 30) {
        QHCA_GUEST_ERROR(c, reg_mr_wr_bad_access_range_pages, num_pages);
        return QHCA_CQE_LOC_QP_OP_ERR;
    }
    if (qhca_pages_load(c, &d, (iova & ((1ULL << page_shift) - 1)) + length,
                        false, &pages)) {
        return QHCA_CQE_LOC_PROT_ERR;
    }
    if (mr->pages.addr) {
        qhca_pages_free(c, &mr->pages);
    }
    mr->pages = pages;
    mr->key = key;
    mr->access = access;
    mr->iova = iova;
    mr->length = length;
    mr->valid = true;
    return QHCA_CQE_SUCCESS;
}

/* [addr, addr + len) lies in [base, base + size) (64-bit, no overflow) */
static bool range_in(uint64_t base, uint64_t size, uint64_t addr,
                     uint64_t len)
{
    return addr >= base && len <= size && addr - base <= size - len;
}

/*
 * Memory windows (see QhcaMr and include/qhca_hw.h).  A window that is
 * bound no more: its MR counts it no more.
 */
static void mw_unbind(QhcaCore *c, QhcaMr *mw)
{
    QhcaMr *mr;

    if (!mw->valid) {
        return;
    }
    mr = LOOKUP(c, mr, mw->mw_mr_key >> QHCA_KEY_INDEX_SHIFT);
    if (mr && !mr->mw_type && mr->mw_bound) {
        mr->mw_bound--;
    }
    mw->valid = false;
    mw->access = 0;
    mw->iova = 0;
    mw->length = 0;
}

/*
 * BIND_MW work request (status: a CQE status): window @mw_key of the QP's
 * PD gets @new_key (same index) and, unless @len is 0 (type 1: unbind),
 * [@addr, @addr + @len) of MR @mr_lkey with the remote rights @access.  A
 * type 2 window must be unbound, and is bound to QP @qpn alone.
 */
int qhca_mw_bind(QhcaCore *c, uint32_t pdn, uint32_t qpn, uint32_t mw_key,
                 uint32_t new_key, uint32_t mr_lkey, uint64_t addr,
                 uint64_t len, uint32_t access)
{
    QhcaMr *mw = LOOKUP(c, mr, mw_key >> QHCA_KEY_INDEX_SHIFT);
    QhcaMr *mr = NULL;

    if (!mw || !mw->mw_type || mw->key != mw_key || mw->pdn != pdn ||
        (new_key >> QHCA_KEY_INDEX_SHIFT) != (mw_key >> QHCA_KEY_INDEX_SHIFT)) {
        QHCA_GUEST_ERROR(c, bind_mw_not_a_window_of_pd, mw_key);
        return QHCA_CQE_MW_BIND_ERR;
    }
    if ((access & ~(QHCA_ACCESS_REMOTE_READ | QHCA_ACCESS_REMOTE_WRITE |
                    QHCA_ACCESS_REMOTE_ATOMIC)) ||
        (mw->mw_type == QHCA_MW_TYPE_2 && (mw->valid || !len))) {
        QHCA_GUEST_ERROR(c, bind_mw_bad_rights_or_window_bound, access);
        return QHCA_CQE_MW_BIND_ERR;
    }
    if (len) {
        mr = LOOKUP(c, mr, mr_lkey >> QHCA_KEY_INDEX_SHIFT);
        if (!mr || mr->mw_type || mr->key != mr_lkey || !mr->valid ||
            mr->pdn != pdn || !(mr->access & QHCA_ACCESS_MW_BIND) ||
            ((access & (QHCA_ACCESS_REMOTE_WRITE |
                        QHCA_ACCESS_REMOTE_ATOMIC)) &&
             !(mr->access & QHCA_ACCESS_LOCAL_WRITE)) ||
            !range_in(mr->iova, mr->length, addr, len)) {
            QHCA_GUEST_ERROR(c, bind_mw_mr_does_not_allow_it, mr_lkey);
            return QHCA_CQE_MW_BIND_ERR;
        }
    }
    mw_unbind(c, mw);
    mw->key = new_key;
    if (mr) {
        mw->valid = true;
        mw->iova = addr;
        mw->length = len;
        mw->access = access;
        mw->mw_mr_key = mr_lkey;
        mw->mw_qpn = qpn;
        mr->mw_bound++;
    }
    trace_qhca_mw_bind(mw_key, new_key, mr_lkey, addr, len, access);
    return QHCA_CQE_SUCCESS;
}

/*
 * LOCAL_INV and SEND_WITH_INV (status: a CQE status): a fast-register MR of
 * the PD, or a bound type 2 window of the PD; remotely (@qpn a QP, not
 * QHCA_ANY_QPN) only a window bound to that QP
 */
int qhca_mr_invalidate(QhcaCore *c, uint32_t pdn, uint32_t qpn, uint32_t key)
{
    QhcaMr *mr = LOOKUP(c, mr, key >> QHCA_KEY_INDEX_SHIFT);

    if (mr && mr->mw_type == QHCA_MW_TYPE_2 && mr->key == key &&
        mr->valid && mr->pdn == pdn &&
        (qpn == QHCA_ANY_QPN || mr->mw_qpn == qpn)) {
        mw_unbind(c, mr);
        trace_qhca_mw_invalidate(key, qpn);
        return QHCA_CQE_SUCCESS;
    }
    if (!mr || mr->key != key || !mr->fast_reg || mr->pdn != pdn) {
        QHCA_GUEST_ERROR(c, invalidate_not_fast_register_mr, key);
        return QHCA_CQE_LOC_PROT_ERR;
    }
    mr->valid = false;
    return QHCA_CQE_SUCCESS;
}

/*
 * MR table entry @mr (a LOOKUP() result) as key @key of PD @pdn with
 * @access over [addr, addr + len), or over all of it with @whole; windows
 * are not MRs
 */
static QhcaMr *mr_entry_check(QhcaMr *mr, uint32_t key, uint32_t pdn,
                              uint32_t access, uint64_t addr, uint64_t len,
                              bool whole)
{
    if (!mr || mr->mw_type || mr->key != key || !mr->valid ||
        mr->pdn != pdn) {
        trace_qhca_err_key(key, addr, len, "no such valid MR key in this PD");
        return NULL;
    }
    if ((mr->access & access) != access) {
        trace_qhca_err_key(key, addr, len, "access not allowed");
        return NULL;
    }
    if (!whole && !range_in(mr->iova, mr->length, addr, len)) {
        trace_qhca_err_key(key, addr, len, "out of bounds");
        return NULL;
    }
    return mr;
}

QhcaMr *qhca_mr_check(QhcaCore *c, uint32_t key, uint32_t pdn,
                      uint32_t access, uint64_t addr, uint64_t len)
{
    return mr_entry_check(LOOKUP(c, mr, key >> QHCA_KEY_INDEX_SHIFT), key,
                          pdn, access, addr, len, false);
}

/*
 * A remote key, for a request on QP @qpn of PD @pdn: an MR's key as
 * qhca_mr_check() sees it, or a bound window's, whose rights and bounds are
 * checked and whose MR (as it is now) is returned.  @whole (RDMA FLUSH of a
 * region): the whole MR or window, @addr and @len are not looked at.  One
 * table lookup for an MR's key, two for a window's.
 */
QhcaMr *qhca_rkey_check(QhcaCore *c, uint32_t key, uint32_t pdn, uint32_t qpn,
                        uint32_t access, uint64_t addr, uint64_t len,
                        bool whole)
{
    QhcaMr *mw = LOOKUP(c, mr, key >> QHCA_KEY_INDEX_SHIFT);

    if (!mw || !mw->mw_type) {
        return mr_entry_check(mw, key, pdn, access, addr, len, whole);
    }
    if (mw->key != key || !mw->valid || mw->pdn != pdn ||
        (mw->mw_type == QHCA_MW_TYPE_2 && mw->mw_qpn != qpn)) {
        trace_qhca_err_key(key, addr, len,
                           "no such bound window for this QP and PD");
        return NULL;
    }
    if ((mw->access & access) != access) {
        trace_qhca_err_key(key, addr, len, "the window does not allow it");
        return NULL;
    }
    if (whole) {
        addr = mw->iova;
        len = mw->length;
    } else if (!range_in(mw->iova, mw->length, addr, len)) {
        trace_qhca_err_key(key, addr, len, "out of the window's bounds");
        return NULL;
    }
    /*
     * The window's MR as it is now: invalidated and fast-registered again
     * under the same key since the bind, it may grant less than it did
     * then.  It must allow binding, and local write for a window with
     * remote write or atomic rights, at every access (as at the bind).
     */
    return mr_entry_check(LOOKUP(c, mr, mw->mw_mr_key >> QHCA_KEY_INDEX_SHIFT),
                          mw->mw_mr_key, pdn, QHCA_ACCESS_MW_BIND |
                          (mw->access & (QHCA_ACCESS_REMOTE_WRITE |
                                         QHCA_ACCESS_REMOTE_ATOMIC) ?
                           QHCA_ACCESS_LOCAL_WRITE : 0), addr, len, false);
}

/* Copy between @buf and [addr, addr + len) of @mr, already bounds-checked */
bool qhca_mr_rw(QhcaCore *c, const QhcaMr *mr, uint64_t addr, void *buf,
                uint64_t len, bool write)
{
    uint8_t *p = buf;

    if (mr->phys) {
        return write ? dma_write(c, addr, buf, len) :
                       dma_read(c, addr, buf, len);
    }
    while (len) {
        uint64_t psize = 1ULL << mr->pages.shift;
        uint64_t off = addr - (mr->iova & ~(psize - 1));
        uint64_t idx = off >> mr->pages.shift;
        uint64_t in_page = off & (psize - 1);
        uint64_t n = MIN(len, psize - in_page);
        uint64_t pa;

        if (idx >= mr->pages.count) {
            return false;
        }
        pa = mr->pages.addr[idx] + in_page;
        if (!(write ? dma_write(c, pa, p, n) : dma_read(c, pa, p, n))) {
            return false;
        }
        p += n;
        addr += n;
        len -= n;
    }
    return true;
}

static void qhca_free_mr(QhcaCore *c, uint32_t idx)
{
    QhcaMr *mr = c->mr[idx];

    if (mr->mw_type) {
        mw_unbind(c, mr);
    }
    c->pd[mr->pdn]->refs--;
    qhca_pages_free(c, &mr->pages);
    g_free(mr);
    c->mr[idx] = NULL;
}

static void qhca_free_qp(QhcaCore *c, uint32_t qpn)
{
    QhcaQp *qp = c->qp[qpn];
    unsigned i;

    qhca_qp_engine_destroy(c, qp);
    /*
     * Type 2 windows bound to the QP end with it: a QP made later with the
     * same number (in the same PD) must not find them usable
     */
    for (i = 1; i < QHCA_MAX_MR; i++) {
        QhcaMr *mw = c->mr[i];

        if (mw && mw->mw_type == QHCA_MW_TYPE_2 && mw->valid &&
            mw->mw_qpn == qpn) {
            mw_unbind(c, mw);
        }
    }
    /* as DETACH_MCAST from every group the QP is still attached to */
    for (i = 0; i < QHCA_MAX_MCAST_GRP; i++) {
        qhca_mcg_remove(&c->mcg[i], qpn);
    }
    c->pd[qp->pdn]->refs--;
    c->cq[qp->send_cqn]->refs--;
    c->cq[qp->recv_cqn]->refs--;
    if (qp->srqn != QHCA_NO_SRQ) {
        c->srq[qp->srqn]->refs--;
    }
    qhca_pages_free(c, &qp->sq.mem);
    if (qp->rq.mem.addr) {
        qhca_pages_free(c, &qp->rq.mem);
    }
    g_free(qp);
    c->qp[qpn] = NULL;
}

static void qhca_free_srq(QhcaCore *c, uint32_t n)
{
    QhcaSrq *srq = c->srq[n];

    c->pd[srq->pdn]->refs--;
    qhca_pages_free(c, &srq->ring.mem);
    g_free(srq);
    c->srq[n] = NULL;
}

static void qhca_free_cq(QhcaCore *c, uint32_t n)
{
    QhcaCq *cq = c->cq[n];

    c->eq[cq->eqn]->refs--;
    qhca_pages_free(c, &cq->ring.mem);
    g_free(cq);
    c->cq[n] = NULL;
}

static void qhca_free_ah(QhcaCore *c, uint32_t n)
{
    c->pd[c->ah[n]->pdn]->refs--;
    g_free(c->ah[n]);
    c->ah[n] = NULL;
}

static void qhca_free_eq(QhcaCore *c, uint32_t n)
{
    qhca_pages_free(c, &c->eq[n]->ring.mem);
    g_free(c->eq[n]);
    c->eq[n] = NULL;
}

static void qhca_free_pd(QhcaCore *c, uint32_t n)
{
    g_free(c->pd[n]);
    c->pd[n] = NULL;
}

static void qhca_free_table(QhcaCore *c, void **table, uint32_t size,
                            void (*destroy)(QhcaCore *c, uint32_t n))
{
    uint32_t i;

    for (i = 0; i < size; i++) {
        if (table[i]) {
            destroy(c, i);
        }
    }
}

/* Free every object, dependents first */
static void qhca_free_all(QhcaCore *c)
{
    qhca_free_table(c, (void **)c->qp, QHCA_MAX_QP, qhca_free_qp);
    qhca_free_table(c, (void **)c->srq, QHCA_MAX_SRQ, qhca_free_srq);
    qhca_free_table(c, (void **)c->cq, QHCA_MAX_CQ, qhca_free_cq);
    qhca_free_table(c, (void **)c->mr, QHCA_MAX_MR, qhca_free_mr);
    qhca_free_table(c, (void **)c->ah, QHCA_MAX_AH, qhca_free_ah);
    qhca_free_table(c, (void **)c->pd, QHCA_MAX_PD, qhca_free_pd);
    qhca_free_table(c, (void **)c->eq, QHCA_MAX_EQS, qhca_free_eq);
    memset(c->gid, 0, sizeof(c->gid));
    memset(c->mcg, 0, sizeof(c->mcg));
    assert(c->pages_used == 0);
}

/*
 * Commands
 */

typedef struct QhcaCmdCtx {
    const struct qhca_cmd *cmd;
    uint32_t result;
    const void *resp;           /* the reply: points into reply below */
    uint32_t resp_size;
    union {                     /* one command's own, not shared by devices */
        struct qhca_device_attr device;
        struct qhca_port_attr port;
        struct qhca_qp_attr qp;
        struct qhca_srq_attr srq;
        struct qhca_qp_state_info qp_state;
        struct qhca_cq_info cq;
        qhca_le64 stats[QHCA_STAT_NUM];
    } reply;
} QhcaCmdCtx;

/* What the device does: QUERY_DEVICE's caps and register CAPS */
#define QHCA_CORE_CAPS (QHCA_CAP_RC | QHCA_CAP_UD | QHCA_CAP_SRQ | \
                        QHCA_CAP_ATOMIC | QHCA_CAP_FRMR | QHCA_CAP_UC | \
                        QHCA_CAP_MCAST | QHCA_CAP_ATOMIC_WRITE | \
                        QHCA_CAP_FLUSH_GLOBAL | QHCA_CAP_MW)

static int cmd_query_device(QhcaCore *c, QhcaCmdCtx *x)
{
    struct qhca_device_attr a;
    uint8_t guid[8];

    memset(&a, 0, sizeof(a));
    guid[0] = c->mac[0] ^ 2;
    guid[1] = c->mac[1];
    guid[2] = c->mac[2];
    guid[3] = 0xff;
    guid[4] = 0xfe;
    guid[5] = c->mac[3];
    guid[6] = c->mac[4];
    guid[7] = c->mac[5];
    memcpy(&a.node_guid, guid, 8);
    a.fw_version = cpu_to_le64(QHCA_VERSION);
    a.max_mr_size = cpu_to_le64(QHCA_MAX_MR_SIZE);
    a.page_size_cap = cpu_to_le64(0x7ffff000ULL);   /* 4 KiB .. 1 GiB */
    a.vendor_id = cpu_to_le32(QHCA_PCI_VENDOR_ID);
    a.vendor_part_id = cpu_to_le32(QHCA_PCI_DEVICE_ID);
    a.hw_version = cpu_to_le32(QHCA_PCI_REVISION);
    a.max_qp = cpu_to_le32(QHCA_MAX_QP - 2);
    a.max_qp_wr = cpu_to_le32(QHCA_MAX_QP_WR);
    a.max_sge = cpu_to_le32(QHCA_MAX_SGE);
    a.max_cq = cpu_to_le32(QHCA_MAX_CQ - 1);
    a.max_cqe = cpu_to_le32(QHCA_MAX_CQE);
    a.max_mr = cpu_to_le32(QHCA_MAX_MR - 1);
    a.max_pd = cpu_to_le32(QHCA_MAX_PD - 1);
    a.max_qp_rd_atom = cpu_to_le32(QHCA_MAX_RD_ATOMIC);
    a.max_qp_init_rd_atom = cpu_to_le32(QHCA_MAX_RD_ATOMIC);
    a.max_srq = cpu_to_le32(QHCA_MAX_SRQ - 1);
    a.max_srq_wr = cpu_to_le32(QHCA_MAX_QP_WR);
    a.max_srq_sge = cpu_to_le32(QHCA_MAX_SGE);
    a.max_ah = cpu_to_le32(QHCA_MAX_AH - 1);
    a.max_inline = cpu_to_le32(QHCA_MAX_INLINE);
    a.max_eq = cpu_to_le32(QHCA_MAX_EQS - 1);
    a.max_fast_reg_pages = cpu_to_le32(QHCA_MAX_FAST_REG_PAGES);
    a.caps = cpu_to_le32(QHCA_CORE_CAPS);
    a.max_mcast_grp = cpu_to_le32(QHCA_MAX_MCAST_GRP);
    a.max_mcast_qp_attach = cpu_to_le32(QHCA_MAX_MCAST_QP_ATTACH);
    x->reply.device = a;
    x->resp = &x->reply.device;
    x->resp_size = sizeof(a);
    return QHCA_CMD_OK;
}

static int cmd_query_port(QhcaCore *c, QhcaCmdCtx *x)
{
    struct qhca_port_attr a;

    memset(&a, 0, sizeof(a));
    a.link_up = cpu_to_le32(c->ops->link_up(c->opaque) ? 1 : 0);
    a.max_mtu = cpu_to_le32(4096);
    a.gid_tbl_len = cpu_to_le32(QHCA_GID_TABLE_LEN);
    x->reply.port = a;
    x->resp = &x->reply.port;
    x->resp_size = sizeof(a);
    return QHCA_CMD_OK;
}

static int cmd_gid(QhcaCore *c, QhcaCmdCtx *x, bool add)
{
    uint32_t idx = le32_to_cpu(x->cmd->gid.index);

    if (idx >= QHCA_GID_TABLE_LEN) {
        QHCA_GUEST_ERROR(c, gid_index_out_range, idx);
        return QHCA_CMD_ERR_PARAM;
    }
    /*
     * A GID is an IPv4 address (IPv4-mapped) or an IPv6 unicast address:
     * frames from or to anything else are never taken, so none is sent
     */
    if (add && (qhca_roce_gid_is_ipv4(x->cmd->gid.gid) ?
                qhca_roce_gid_is_mcast(x->cmd->gid.gid) :
                !qhca_roce_ip6_unicast(x->cmd->gid.gid))) {
        QHCA_GUEST_ERROR(c, gid_not_unicast, idx);
        return QHCA_CMD_ERR_PARAM;
    }
    c->gid[idx].valid = add;
    if (add) {
        memcpy(c->gid[idx].gid, x->cmd->gid.gid, 16);
    } else {
        memset(c->gid[idx].gid, 0, 16);
    }
    return QHCA_CMD_OK;
}

static int cmd_create_eq(QhcaCore *c, QhcaCmdCtx *x)
{
    const struct qhca_cmd_create_eq *p = &x->cmd->create_eq;
    uint32_t vector = le32_to_cpu(p->vector);
    QhcaEq *eq;
    int n, ret;

    if (vector == QHCA_MSIX_VEC_ASYNC || vector >= QHCA_MSIX_VECTORS) {
        QHCA_GUEST_ERROR(c, create_eq_bad_vector, vector);
        return QHCA_CMD_ERR_PARAM;
    }
    n = qhca_alloc_slot((void **)c->eq, QHCA_MAX_EQS, 1);
    if (n < 0) {
        return QHCA_CMD_ERR_NO_RESOURCES;
    }
    eq = g_new0(QhcaEq, 1);
    ret = qhca_ring_init(c, &eq->ring, &p->mem, p->log_depth,
                         ctz32(QHCA_EQE_SIZE));
    if (ret) {
        g_free(eq);
        return ret;
    }
    eq->vector = vector;
    c->eq[n] = eq;
    x->result = n;
    return QHCA_CMD_OK;
}

static int cmd_alloc_pd(QhcaCore *c, QhcaCmdCtx *x)
{
    int n = qhca_alloc_slot((void **)c->pd, QHCA_MAX_PD, 1);

    if (n < 0) {
        return QHCA_CMD_ERR_NO_RESOURCES;
    }
    c->pd[n] = g_new0(QhcaPd, 1);
    x->result = n;
    return QHCA_CMD_OK;
}

/*
 * An MR's access rights and translation: @iova, @length and, unless
 * QHCA_MR_PHYS is in @flags, the pages of @mem behind them, loaded into
 * mr->pages (which must be empty).  Nothing is kept on an error.
 */
static int mr_set_translation(QhcaCore *c, QhcaMr *mr, uint32_t access,
                              uint64_t iova, uint64_t length, uint32_t flags,
                              const struct qhca_pbl_desc *mem)
{
    bool phys = flags & QHCA_MR_PHYS;
    uint64_t span;

    /* A guest-physical (DMA) MR may span all of guest memory */
    if ((access & ~QHCA_ACCESS_MASK) || (flags & ~QHCA_MR_PHYS) ||
        length == 0 || (!phys && length > QHCA_MAX_MR_SIZE) ||
        iova + length < iova) {
        QHCA_GUEST_ERROR(c, reg_mr_bad_access_flags_range, length);
        return QHCA_CMD_ERR_PARAM;
    }
    mr->access = access;
    mr->iova = iova;
    mr->length = length;
    mr->phys = phys;
    if (phys) {
        return QHCA_CMD_OK;
    }
    /* The pages back [iova & ~page_mask, iova + length) */
    if (mem->page_shift < QHCA_PAGE_SHIFT || mem->page_shift > 30) {
        QHCA_GUEST_ERROR(c, reg_mr_bad_page_shift, mem->page_shift);
        return QHCA_CMD_ERR_PARAM;
    }
    span = (iova & ((1ULL << mem->page_shift) - 1)) + length;
    return qhca_pages_load(c, mem, span, false, &mr->pages);
}

static int cmd_reg_mr(QhcaCore *c, QhcaCmdCtx *x, bool fast)
{
    const struct qhca_cmd_reg_mr *p = &x->cmd->reg_mr;
    const struct qhca_cmd_alloc_mr *f = &x->cmd->alloc_mr;
    uint32_t pdn = le32_to_cpu(fast ? f->pdn : p->pdn);
    uint32_t variant = le32_to_cpu(fast ? f->key_variant : p->key_variant);
    QhcaMr *mr;
    int n, ret;

    if (!LOOKUP(c, pd, pdn)) {
        return QHCA_CMD_ERR_HANDLE;
    }
    if (variant > QHCA_KEY_VARIANT_MASK) {
        QHCA_GUEST_ERROR(c, mr_key_variant_out_range, variant);
        return QHCA_CMD_ERR_PARAM;
    }
    n = qhca_alloc_slot((void **)c->mr, QHCA_MAX_MR, 1);
    if (n < 0) {
        return QHCA_CMD_ERR_NO_RESOURCES;
    }
    mr = g_new0(QhcaMr, 1);
    mr->pdn = pdn;
    mr->key = (n << QHCA_KEY_INDEX_SHIFT) | variant;
    if (fast) {
        mr->fast_reg = true;
        mr->max_pages = le32_to_cpu(f->max_pages);
        if (mr->max_pages == 0 ||
            mr->max_pages > QHCA_MAX_FAST_REG_PAGES) {
            QHCA_GUEST_ERROR(c, alloc_mr_bad_max_pages, mr->max_pages);
            g_free(mr);
            return QHCA_CMD_ERR_PARAM;
        }
    } else {
        ret = mr_set_translation(c, mr, le32_to_cpu(p->access),
                                 le64_to_cpu(p->iova), le64_to_cpu(p->length),
                                 le32_to_cpu(p->flags), &p->mem);
        if (ret) {
            g_free(mr);
            return ret;
        }
        mr->valid = true;
    }
    c->pd[pdn]->refs++;
    c->mr[n] = mr;
    x->result = mr->key;
    return QHCA_CMD_OK;
}

/*
 * REREG_MR: an MR's PD, access rights or translation (iova, length, pages),
 * each as its flag asks; the key stays.  Everything is checked before
 * anything changes.  Remote accesses check the MR packet by packet, so a
 * message under way sees the new MR from its next packet on.
 */
static int cmd_rereg_mr(QhcaCore *c, QhcaCmdCtx *x)
{
    const struct qhca_cmd_rereg_mr *p = &x->cmd->rereg_mr;
    uint32_t key = le32_to_cpu(p->key);
    uint32_t what = le32_to_cpu(p->what);
    uint32_t pdn = le32_to_cpu(p->pdn);
    QhcaMr *mr = LOOKUP(c, mr, key >> QHCA_KEY_INDEX_SHIFT);
    uint32_t access;
    QhcaMr t;
    int ret;

    if (!mr || mr->mw_type || mr->key != key || mr->fast_reg) {
        return QHCA_CMD_ERR_HANDLE;
    }
    if (mr->mw_bound) {
        QHCA_GUEST_ERROR(c, rereg_mr_windows_bound, mr->mw_bound);
        return QHCA_CMD_ERR_BUSY;
    }
    if (!what || (what & ~QHCA_REREG_MASK)) {
        QHCA_GUEST_ERROR(c, rereg_mr_bad_flags, what);
        return QHCA_CMD_ERR_PARAM;
    }
    if ((what & QHCA_REREG_PD) && !LOOKUP(c, pd, pdn)) {
        return QHCA_CMD_ERR_HANDLE;
    }
    access = (what & QHCA_REREG_ACCESS) ? le32_to_cpu(p->access) : mr->access;
    memset(&t, 0, sizeof(t));
    if (what & QHCA_REREG_TRANS) {
        ret = mr_set_translation(c, &t, access, le64_to_cpu(p->iova),
                                 le64_to_cpu(p->length),
                                 le32_to_cpu(p->mr_flags), &p->mem);
    } else {
        /* the same translation (not loaded again), perhaps new rights */
        ret = mr_set_translation(c, &t, access, mr->iova, mr->length,
                                 QHCA_MR_PHYS, NULL);
    }
    if (ret) {
        return ret;
    }
    if (what & QHCA_REREG_PD) {
        c->pd[mr->pdn]->refs--;
        c->pd[pdn]->refs++;
        mr->pdn = pdn;
    }
    mr->access = t.access;
    if (what & QHCA_REREG_TRANS) {
        qhca_pages_free(c, &mr->pages);
        mr->pages = t.pages;
        mr->iova = t.iova;
        mr->length = t.length;
        mr->phys = t.phys;
    }
    trace_qhca_rereg_mr(key, what, mr->pdn, mr->access);
    return QHCA_CMD_OK;
}

static int cmd_dereg_mr(QhcaCore *c, QhcaCmdCtx *x)
{
    uint32_t key = le32_to_cpu(x->cmd->obj.handle);
    QhcaMr *mr = LOOKUP(c, mr, key >> QHCA_KEY_INDEX_SHIFT);

    /* Fast-register MRs change variant; accept any variant of the index */
    if (!mr || mr->mw_type || (!mr->fast_reg && mr->key != key)) {
        return QHCA_CMD_ERR_HANDLE;
    }
    if (mr->mw_bound) {
        QHCA_GUEST_ERROR(c, dereg_mr_windows_bound, mr->mw_bound);
        return QHCA_CMD_ERR_BUSY;
    }
    qhca_free_mr(c, key >> QHCA_KEY_INDEX_SHIFT);
    return QHCA_CMD_OK;
}

/* ALLOC_MW: an unbound window, in the MR table (its key: index | variant) */
static int cmd_alloc_mw(QhcaCore *c, QhcaCmdCtx *x)
{
    const struct qhca_cmd_alloc_mw *p = &x->cmd->alloc_mw;
    uint32_t pdn = le32_to_cpu(p->pdn);
    QhcaMr *mw;
    int n;

    if (!LOOKUP(c, pd, pdn)) {
        return QHCA_CMD_ERR_HANDLE;
    }
    if ((p->type != QHCA_MW_TYPE_1 && p->type != QHCA_MW_TYPE_2) ||
        p->reserved[0] || p->reserved[1] || p->reserved[2]) {
        QHCA_GUEST_ERROR(c, alloc_mw_bad_type_or_reserved, p->type);
        return QHCA_CMD_ERR_PARAM;
    }
    n = qhca_alloc_slot((void **)c->mr, QHCA_MAX_MR, 1);
    if (n < 0) {
        return QHCA_CMD_ERR_NO_RESOURCES;
    }
    mw = g_new0(QhcaMr, 1);
    mw->pdn = pdn;
    mw->mw_type = p->type;
    mw->key = (n << QHCA_KEY_INDEX_SHIFT) | c->mw_variant++;
    c->pd[pdn]->refs++;
    c->mr[n] = mw;
    x->result = mw->key;
    return QHCA_CMD_OK;
}

/*
 * DEALLOC_MW: bound or not (its key changes with every bind: any variant
 * of the index names it)
 */
static int cmd_dealloc_mw(QhcaCore *c, QhcaCmdCtx *x)
{
    uint32_t key = le32_to_cpu(x->cmd->obj.handle);
    QhcaMr *mw = LOOKUP(c, mr, key >> QHCA_KEY_INDEX_SHIFT);

    if (!mw || !mw->mw_type) {
        return QHCA_CMD_ERR_HANDLE;
    }
    qhca_free_mr(c, key >> QHCA_KEY_INDEX_SHIFT);
    return QHCA_CMD_OK;
}

static int cmd_create_cq(QhcaCore *c, QhcaCmdCtx *x)
{
    const struct qhca_cmd_create_cq *p = &x->cmd->create_cq;
    uint32_t eqn = le32_to_cpu(p->eqn);
    uint32_t db_page = le32_to_cpu(p->db_page);
    QhcaCq *cq;
    int n, ret;

    if (!LOOKUP(c, eq, eqn)) {
        return QHCA_CMD_ERR_HANDLE;
    }
    if (db_page >= QHCA_DB_PAGES) {
        QHCA_GUEST_ERROR(c, create_cq_bad_doorbell_page, db_page);
        return QHCA_CMD_ERR_PARAM;
    }
    n = qhca_alloc_slot((void **)c->cq, QHCA_MAX_CQ, 1);
    if (n < 0) {
        return QHCA_CMD_ERR_NO_RESOURCES;
    }
    cq = g_new0(QhcaCq, 1);
    ret = qhca_ring_init(c, &cq->ring, &p->mem, p->log_depth,
                         ctz32(QHCA_CQE_SIZE));
    if (ret) {
        g_free(cq);
        return ret;
    }
    cq->eqn = eqn;
    cq->db_page = db_page;
    c->eq[eqn]->refs++;
    c->cq[n] = cq;
    x->result = n;
    return QHCA_CMD_OK;
}

/*
 * RESIZE_CQ: the CQ moves to a new ring.  The CQEs written and not yet
 * released by the consumer index (the CQ_CI doorbell) are copied in order
 * to the new ring's first entries, and the CQ goes on there: producer index
 * after them, consumer index 0.  Software releases what it has polled
 * before the command and polls the new ring from index 0 after it.  The
 * old ring stays in use if anything fails.
 */
static int cmd_resize_cq(QhcaCore *c, QhcaCmdCtx *x)
{
    const struct qhca_cmd_resize_cq *p = &x->cmd->resize_cq;
    QhcaCq *cq = LOOKUP(c, cq, le32_to_cpu(p->cqn));
    QhcaRing nr = { 0 };
    uint16_t n, i;
    int ret;

    if (!cq) {
        return QHCA_CMD_ERR_HANDLE;
    }
    ret = qhca_ring_init(c, &nr, &p->mem, p->log_depth,
                         ctz32(QHCA_CQE_SIZE));
    if (ret) {
        return ret;
    }
    n = cq->ring.pi - cq->ring.ci;
    if (n > (1u << nr.log_depth)) {
        QHCA_GUEST_ERROR(c, resize_cq_smaller_than_cqes_held, n);
        qhca_pages_free(c, &nr.mem);
        return QHCA_CMD_ERR_PARAM;
    }
    for (i = 0; i < n; i++) {
        struct qhca_cqe e;
        uint64_t from;

        if (!qhca_ring_entry_addr(&cq->ring, cq->ring.ci + i, &from) ||
            !dma_read(c, from, &e, sizeof(e)) ||
            !qhca_ring_produce(c, &nr, &e, sizeof(e),
                               offsetof(struct qhca_cqe, owner))) {
            qhca_pages_free(c, &nr.mem);
            return QHCA_CMD_ERR_DMA;
        }
    }
    qhca_pages_free(c, &cq->ring.mem);
    cq->ring = nr;
    trace_qhca_resize_cq(le32_to_cpu(p->cqn), 1u << nr.log_depth, n);
    x->result = n;
    /* QPs that waited for room in the CQ may go on */
    qhca_op_schedule(c);
    return QHCA_CMD_OK;
}

static int cmd_create_qp(QhcaCore *c, QhcaCmdCtx *x)
{
    const struct qhca_cmd_create_qp *p = &x->cmd->create_qp;
    uint32_t pdn = le32_to_cpu(p->pdn);
    uint32_t scqn = le32_to_cpu(p->send_cqn);
    uint32_t rcqn = le32_to_cpu(p->recv_cqn);
    uint32_t srqn = le32_to_cpu(p->srqn);
    uint32_t db_page = le32_to_cpu(p->db_page);
    uint32_t max_inline = le32_to_cpu(p->max_inline);
    QhcaSrq *srq = NULL;
    QhcaQp *qp;
    int n, ret;

    if (p->type != QHCA_QPT_RC && p->type != QHCA_QPT_UC &&
        p->type != QHCA_QPT_UD && p->type != QHCA_QPT_GSI) {
        QHCA_GUEST_ERROR(c, create_qp_bad_type, p->type);
        return QHCA_CMD_ERR_PARAM;
    }
    if (!LOOKUP(c, pd, pdn) || !LOOKUP(c, cq, scqn) || !LOOKUP(c, cq, rcqn)) {
        return QHCA_CMD_ERR_HANDLE;
    }
    if (srqn != QHCA_NO_SRQ) {
        srq = LOOKUP(c, srq, srqn);
        if (!srq) {
            return QHCA_CMD_ERR_HANDLE;
        }
        if (srq->pdn != pdn || p->type == QHCA_QPT_GSI) {
            QHCA_GUEST_ERROR(c, create_qp_srq_not_usable_here, srqn);
            return QHCA_CMD_ERR_PARAM;
        }
    }
    if (db_page >= QHCA_DB_PAGES ||
        p->sq_log_stride < QHCA_SEND_WQE_MIN_LOG_STRIDE ||
        p->sq_log_stride > QHCA_WQE_MAX_LOG_STRIDE ||
        (!srq && (p->rq_log_stride < QHCA_RECV_WQE_MIN_LOG_STRIDE ||
                  p->rq_log_stride > QHCA_WQE_MAX_LOG_STRIDE)) ||
        max_inline > QHCA_MAX_INLINE ||
        max_inline > (1u << p->sq_log_stride) - QHCA_SEND_WQE_HDR_SIZE ||
        p->sq_log_depth > ctz32(QHCA_MAX_QP_WR) ||
        (!srq && p->rq_log_depth > ctz32(QHCA_MAX_QP_WR))) {
        QHCA_GUEST_ERROR(c, create_qp_bad_queue_geometry, p->sq_log_stride);
        return QHCA_CMD_ERR_PARAM;
    }
    if (p->type == QHCA_QPT_GSI) {
        if (c->qp[1]) {
            return QHCA_CMD_ERR_NO_RESOURCES;
        }
        n = 1;
    } else {
        n = qhca_alloc_slot((void **)c->qp, QHCA_MAX_QP, 2);
        if (n < 0) {
            return QHCA_CMD_ERR_NO_RESOURCES;
        }
    }
    qp = g_new0(QhcaQp, 1);
    ret = qhca_ring_init(c, &qp->sq, &p->sq, p->sq_log_depth,
                         p->sq_log_stride);
    if (ret) {
        g_free(qp);
        return ret;
    }
    if (!srq) {
        ret = qhca_ring_init(c, &qp->rq, &p->rq, p->rq_log_depth,
                             p->rq_log_stride);
        if (ret) {
            qhca_pages_free(c, &qp->sq.mem);
            g_free(qp);
            return ret;
        }
    }
    /* the engine's state per SQ slot counts in the budget too */
    if (qhca_qp_engine_units(p->sq_log_depth) >
        QHCA_PAGE_BUDGET - c->pages_used) {
        trace_qhca_err_budget(qhca_qp_engine_units(p->sq_log_depth),
                              c->pages_used);
        qhca_pages_free(c, &qp->sq.mem);
        if (qp->rq.mem.addr) {
            qhca_pages_free(c, &qp->rq.mem);
        }
        g_free(qp);
        return QHCA_CMD_ERR_NO_RESOURCES;
    }
    qp->qpn = n;
    qp->type = p->type;
    qp->pdn = pdn;
    qp->send_cqn = scqn;
    qp->recv_cqn = rcqn;
    qp->srqn = srq ? srqn : QHCA_NO_SRQ;
    qp->db_page = db_page;
    qp->max_inline = max_inline;
    qp->sq_sig_all = p->sq_sig_all;
    qp->attr.qp_state = QHCA_QPS_RESET;
    c->pd[pdn]->refs++;
    c->cq[scqn]->refs++;
    c->cq[rcqn]->refs++;
    if (srq) {
        srq->refs++;
    }
    qhca_qp_engine_create(c, qp);
    c->qp[n] = qp;
    x->result = n;
    return QHCA_CMD_OK;
}

/*
 * The IBA QP state machine (IBA 10.3.1, 11.2.4.2): for each transition and
 * QP type, the attributes that must and may be given.
 */
typedef struct QhcaQpTrans {
    bool valid;
    uint32_t req[4];            /* indexed by qhca_qp_kind() */
    uint32_t opt[4];
} QhcaQpTrans;

enum { KIND_RC, KIND_UD, KIND_GSI, KIND_UC };

#define A(x) QHCA_QP_ATTR_##x

static const QhcaQpTrans qhca_qp_trans[7][7] = {
    [QHCA_QPS_RESET] = {
        [QHCA_QPS_RESET] = { .valid = true },
        [QHCA_QPS_INIT] = {
            .valid = true,
            .req = {
                [KIND_RC] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
                [KIND_UD] = A(PKEY_INDEX) | A(PORT) | A(QKEY),
                [KIND_GSI] = A(PKEY_INDEX) | A(QKEY),
                [KIND_UC] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
            },
        },
    },
    [QHCA_QPS_INIT] = {
        [QHCA_QPS_INIT] = {
            .valid = true,
            .opt = {
                [KIND_RC] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
                [KIND_UD] = A(PKEY_INDEX) | A(PORT) | A(QKEY),
                [KIND_GSI] = A(PKEY_INDEX) | A(QKEY),
                [KIND_UC] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
            },
        },
        [QHCA_QPS_RTR] = {
            .valid = true,
            .req = {
                [KIND_RC] = A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN) |
                            A(MAX_DEST_RD_ATOMIC) | A(MIN_RNR_TIMER),
                [KIND_UC] = A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN),
            },
            .opt = {
                [KIND_RC] = A(ACCESS_FLAGS) | A(PKEY_INDEX),
                [KIND_UC] = A(ACCESS_FLAGS) | A(PKEY_INDEX),
                [KIND_UD] = A(PKEY_INDEX) | A(QKEY),
                [KIND_GSI] = A(PKEY_INDEX) | A(QKEY),
            },
        },
    },
    [QHCA_QPS_RTR] = {
        [QHCA_QPS_RTS] = {
            .valid = true,
            .req = {
                [KIND_RC] = A(TIMEOUT) | A(RETRY_CNT) | A(RNR_RETRY) |
                            A(SQ_PSN) | A(MAX_QP_RD_ATOMIC),
                [KIND_UD] = A(SQ_PSN),
                [KIND_GSI] = A(SQ_PSN),
                [KIND_UC] = A(SQ_PSN),
            },
            .opt = {
                [KIND_RC] = A(CUR_STATE) | A(ACCESS_FLAGS) |
                            A(MIN_RNR_TIMER),
                [KIND_UD] = A(CUR_STATE) | A(QKEY),
                [KIND_GSI] = A(CUR_STATE) | A(QKEY),
                [KIND_UC] = A(CUR_STATE) | A(ACCESS_FLAGS),
            },
        },
    },
    [QHCA_QPS_RTS] = {
        [QHCA_QPS_RTS] = {
            .valid = true,
            .opt = {
                [KIND_RC] = A(CUR_STATE) | A(ACCESS_FLAGS) |
                            A(MIN_RNR_TIMER),
                [KIND_UD] = A(CUR_STATE) | A(QKEY),
                [KIND_GSI] = A(CUR_STATE) | A(QKEY),
                [KIND_UC] = A(CUR_STATE) | A(ACCESS_FLAGS),
            },
        },
        [QHCA_QPS_SQD] = {
            .valid = true,
            .opt = {
                [KIND_RC] = A(EN_SQD_ASYNC),
                [KIND_UD] = A(EN_SQD_ASYNC),
                [KIND_GSI] = A(EN_SQD_ASYNC),
                [KIND_UC] = A(EN_SQD_ASYNC),
            },
        },
    },
    [QHCA_QPS_SQD] = {
        [QHCA_QPS_RTS] = {
            .valid = true,
            .opt = {
                [KIND_RC] = A(CUR_STATE) | A(ACCESS_FLAGS) |
                            A(MIN_RNR_TIMER),
                [KIND_UD] = A(CUR_STATE) | A(QKEY),
                [KIND_GSI] = A(CUR_STATE) | A(QKEY),
                [KIND_UC] = A(CUR_STATE) | A(ACCESS_FLAGS),
            },
        },
        [QHCA_QPS_SQD] = {
            .valid = true,
            .opt = {
                [KIND_RC] = A(AV) | A(TIMEOUT) | A(RETRY_CNT) |
                            A(RNR_RETRY) | A(MAX_QP_RD_ATOMIC) |
                            A(MAX_DEST_RD_ATOMIC) | A(ACCESS_FLAGS) |
                            A(PKEY_INDEX) | A(MIN_RNR_TIMER),
                [KIND_UD] = A(PKEY_INDEX) | A(QKEY),
                [KIND_GSI] = A(PKEY_INDEX) | A(QKEY),
                [KIND_UC] = A(AV) | A(ACCESS_FLAGS) | A(PKEY_INDEX),
            },
        },
    },
    [QHCA_QPS_SQE] = {
        [QHCA_QPS_RTS] = {
            .valid = true,
            .opt = {
                [KIND_UD] = A(CUR_STATE) | A(QKEY),
                [KIND_GSI] = A(CUR_STATE) | A(QKEY),
                [KIND_UC] = A(CUR_STATE) | A(ACCESS_FLAGS),
            },
        },
    },
};

static int qhca_qp_kind(const QhcaQp *qp)
{
    return qp->type == QHCA_QPT_RC ? KIND_RC :
           qp->type == QHCA_QPT_UC ? KIND_UC :
           qp->type == QHCA_QPT_UD ? KIND_UD : KIND_GSI;
}

/*
 * The GIDs of an address vector whose source GID is valid: the destination
 * is an IPv4 address (IPv4-mapped) or an IPv6 unicast one, of the source
 * GID's IP version.  An AH may be made before its GID is: then this is
 * left to the UD WQE that uses it (qhca_qp_addr()).
 */
static bool qhca_av_gids_ok(QhcaCore *c, uint8_t sgid_index,
                            const uint8_t *dgid, bool ud)
{
    QhcaRoceHdr h;

    if (sgid_index >= QHCA_GID_TABLE_LEN || !c->gid[sgid_index].valid) {
        /* a multicast group is never a connected QP's destination */
        return ud || !qhca_roce_gid_is_mcast(dgid);
    }
    return ud ? qhca_roce_set_gids_ud(&h, c->gid[sgid_index].gid, dgid) :
           qhca_roce_set_gids(&h, c->gid[sgid_index].gid, dgid);
}

/* Check the values of the attributes in @mask */
static bool qhca_qp_attr_ok(QhcaCore *c, uint32_t mask,
                            const struct qhca_qp_attr *a)
{
    if ((mask & A(PATH_MTU)) && (a->path_mtu < 1 || a->path_mtu > 5)) {
        return false;
    }
    if ((mask & A(TIMEOUT)) && a->timeout > 31) {
        return false;
    }
    if ((mask & A(RETRY_CNT)) && a->retry_cnt > 7) {
        return false;
    }
    if ((mask & A(RNR_RETRY)) && a->rnr_retry > 7) {
        return false;
    }
    if ((mask & A(MIN_RNR_TIMER)) && a->min_rnr_timer > 31) {
        return false;
    }
    if ((mask & A(MAX_QP_RD_ATOMIC)) &&
        a->max_rd_atomic > QHCA_MAX_RD_ATOMIC) {
        return false;
    }
    if ((mask & A(MAX_DEST_RD_ATOMIC)) &&
        a->max_dest_rd_atomic > QHCA_MAX_RD_ATOMIC) {
        return false;
    }
    if ((mask & A(ACCESS_FLAGS)) &&
        (le32_to_cpu(a->access_flags) & ~QHCA_ACCESS_MASK)) {
        return false;
    }
    if ((mask & A(DEST_QPN)) && le32_to_cpu(a->dest_qpn) > 0xffffff) {
        return false;
    }
    if ((mask & A(RQ_PSN)) && le32_to_cpu(a->rq_psn) > 0xffffff) {
        return false;
    }
    if ((mask & A(SQ_PSN)) && le32_to_cpu(a->sq_psn) > 0xffffff) {
        return false;
    }
    if ((mask & A(AV)) &&
        (a->sgid_index >= QHCA_GID_TABLE_LEN ||
         !c->gid[a->sgid_index].valid ||
         !qhca_av_gids_ok(c, a->sgid_index, a->dgid, false) ||
         le32_to_cpu(a->flow_label) > 0xfffff)) {
        return false;
    }
    return true;
}

static int cmd_modify_qp(QhcaCore *c, QhcaCmdCtx *x)
{
    const struct qhca_cmd_modify_qp *p = &x->cmd->modify_qp;
    uint32_t qpn = le32_to_cpu(p->qpn);
    uint32_t mask = le32_to_cpu(p->attr_mask);
    const struct qhca_qp_attr *a = &p->attr;
    QhcaQp *qp = LOOKUP(c, qp, qpn);
    uint8_t cur, next;
    uint32_t req, opt;
    int kind;

    if (!qp) {
        return QHCA_CMD_ERR_HANDLE;
    }
    kind = qhca_qp_kind(qp);
    cur = qp->attr.qp_state;
    if (mask & A(CUR_STATE)) {
        if (a->cur_qp_state > QHCA_QPS_ERR) {
            return QHCA_CMD_ERR_PARAM;
        }
        if (a->cur_qp_state != cur) {
            trace_qhca_err_qp_state(qpn, cur, a->cur_qp_state);
            return QHCA_CMD_ERR_STATE;
        }
    }
    next = (mask & A(STATE)) ? a->qp_state : cur;
    if (next > QHCA_QPS_ERR) {
        return QHCA_CMD_ERR_PARAM;
    }
    if (next == QHCA_QPS_RESET || next == QHCA_QPS_ERR) {
        /* Allowed from any state; other attributes are ignored (IBA) */
        req = 0;
        opt = ~0u;
        mask &= A(STATE) | A(CUR_STATE);
    } else {
        const QhcaQpTrans *t = &qhca_qp_trans[cur][next];

        if (!t->valid) {
            trace_qhca_err_qp_state(qpn, cur, next);
            return QHCA_CMD_ERR_STATE;
        }
        req = t->req[kind];
        opt = t->opt[kind];
    }
    if ((mask & req) != req ||
        (mask & ~(req | opt | A(STATE) | A(CUR_STATE)))) {
        trace_qhca_err_qp_attr(qpn, cur, next, mask);
        return QHCA_CMD_ERR_STATE;
    }
    /*
     * PORT and PKEY_INDEX carry no value here: the device has one port and
     * one P_Key (0xffff); the driver checks what the consumer asked for.
     */
    if (!qhca_qp_attr_ok(c, mask, a)) {
        trace_qhca_err_qp_attr(qpn, cur, next, mask);
        return QHCA_CMD_ERR_PARAM;
    }

#define SET(bit, field) \
    do { if (mask & A(bit)) { qp->attr.field = a->field; } } while (0)
    SET(EN_SQD_ASYNC, en_sqd_async_notify);
    SET(ACCESS_FLAGS, access_flags);
    SET(QKEY, qkey);
    SET(PATH_MTU, path_mtu);
    SET(TIMEOUT, timeout);
    SET(RETRY_CNT, retry_cnt);
    SET(RNR_RETRY, rnr_retry);
    SET(RQ_PSN, rq_psn);
    SET(MAX_QP_RD_ATOMIC, max_rd_atomic);
    SET(MIN_RNR_TIMER, min_rnr_timer);
    SET(SQ_PSN, sq_psn);
    SET(MAX_DEST_RD_ATOMIC, max_dest_rd_atomic);
    SET(DEST_QPN, dest_qpn);
#undef SET
    if (mask & A(AV)) {
        qp->attr.sgid_index = a->sgid_index;
        qp->attr.hop_limit = a->hop_limit;
        qp->attr.traffic_class = a->traffic_class;
        qp->attr.flow_label = a->flow_label;
        memcpy(qp->attr.dgid, a->dgid, 16);
        memcpy(qp->attr.dmac, a->dmac, 6);
    }
    qp->attr_set |= mask;
    qp->attr.qp_state = next;
    trace_qhca_qp_modify(qpn, cur, next, mask);
    qhca_qp_engine_modified(c, qp, cur, next, mask);
    return QHCA_CMD_OK;
}

#undef A

static int cmd_query_qp(QhcaCore *c, QhcaCmdCtx *x)
{
    struct qhca_qp_attr a;
    QhcaQp *qp = LOOKUP(c, qp, le32_to_cpu(x->cmd->obj.handle));

    if (!qp) {
        return QHCA_CMD_ERR_HANDLE;
    }
    a = qp->attr;
    a.cur_qp_state = a.qp_state;
    a.sq_draining = qhca_qp_engine_sq_draining(c, qp);
    x->reply.qp = a;
    x->resp = &x->reply.qp;
    x->resp_size = sizeof(a);
    return QHCA_CMD_OK;
}

static int cmd_query_qp_state(QhcaCore *c, QhcaCmdCtx *x)
{
    QhcaQp *qp = LOOKUP(c, qp, le32_to_cpu(x->cmd->obj.handle));

    if (!qp) {
        return QHCA_CMD_ERR_HANDLE;
    }
    qhca_qp_engine_state(c, qp, &x->reply.qp_state);
    x->resp = &x->reply.qp_state;
    x->resp_size = sizeof(x->reply.qp_state);
    return QHCA_CMD_OK;
}

static int cmd_query_cq(QhcaCore *c, QhcaCmdCtx *x)
{
    struct qhca_cq_info *a = &x->reply.cq;
    QhcaCq *cq = LOOKUP(c, cq, le32_to_cpu(x->cmd->obj.handle));

    if (!cq) {
        return QHCA_CMD_ERR_HANDLE;
    }
    memset(a, 0, sizeof(*a));
    a->depth = cpu_to_le32(1u << cq->ring.log_depth);
    a->pi = cpu_to_le16(cq->ring.pi);
    a->ci = cpu_to_le16(cq->ring.ci);
    a->arm = cq->arm;
    a->error = cq->error;
    a->eqn = cpu_to_le32(cq->eqn);
    x->resp = a;
    x->resp_size = sizeof(*a);
    return QHCA_CMD_OK;
}

/* Where each counter of enum qhca_stat is kept */
static const size_t qhca_stat_field[QHCA_STAT_NUM] = {
#define F(n, f) [QHCA_STAT_##n] = offsetof(QhcaCore, stat_##f)
    F(TX_FRAMES, tx_frames), F(RX_FRAMES, rx_frames),
    F(RX_DROPPED, rx_dropped), F(RX_BAD_ICRC, rx_bad_icrc),
    F(RETRANSMITS, retransmits), F(GUEST_ERRORS, guest_errors),
    F(LOOPBACK, loopback), F(LOOP_DROPPED, loop_dropped),
    F(TX_BYTES, tx_bytes), F(RX_BYTES, rx_bytes),
    F(NAKS_SENT, naks_sent), F(NAKS_RCVD, naks_rcvd),
    F(RNR_NAKS_SENT, rnr_naks_sent), F(RNR_NAKS_RCVD, rnr_naks_rcvd),
    F(SEQ_ERRORS, seq_errors), F(DUP_REQUESTS, dup_requests),
    F(TIMEOUTS, timeouts), F(RETRY_EXCEEDED, retry_exceeded),
    F(RNR_RETRY_EXCEEDED, rnr_retry_exceeded),
#undef F
};

/* The registers STAT_* are the low halves of the first counters, in order */
QEMU_BUILD_BUG_ON(QHCA_REG_STAT_LOOP_DROPPED - QHCA_REG_STAT_TX_FRAMES !=
                  4 * QHCA_STAT_LOOP_DROPPED);

static uint64_t qhca_stat(const QhcaCore *c, unsigned i)
{
    return *(const uint64_t *)((const char *)c + qhca_stat_field[i]);
}

/* The counters in enum qhca_stat order */
static int cmd_query_stats(QhcaCore *c, QhcaCmdCtx *x)
{
    uint32_t first = le32_to_cpu(x->cmd->query_stats.first);
    unsigned i;

    if (first > QHCA_STAT_NUM) {
        QHCA_GUEST_ERROR(c, query_stats_first_out_of_range, first);
        return QHCA_CMD_ERR_PARAM;
    }
    for (i = first; i < QHCA_STAT_NUM; i++) {
        x->reply.stats[i - first] = cpu_to_le64(qhca_stat(c, i));
    }
    x->resp = x->reply.stats;
    x->resp_size = (QHCA_STAT_NUM - first) * sizeof(x->reply.stats[0]);
    x->result = QHCA_STAT_NUM;
    return QHCA_CMD_OK;
}

static int cmd_create_srq(QhcaCore *c, QhcaCmdCtx *x)
{
    const struct qhca_cmd_create_srq *p = &x->cmd->create_srq;
    uint32_t pdn = le32_to_cpu(p->pdn);
    uint32_t db_page = le32_to_cpu(p->db_page);
    uint32_t limit = le32_to_cpu(p->limit);
    QhcaSrq *srq;
    int n, ret;

    if (!LOOKUP(c, pd, pdn)) {
        return QHCA_CMD_ERR_HANDLE;
    }
    if (db_page >= QHCA_DB_PAGES ||
        p->log_stride < QHCA_RECV_WQE_MIN_LOG_STRIDE ||
        p->log_stride > QHCA_WQE_MAX_LOG_STRIDE ||
        p->log_depth > ctz32(QHCA_MAX_QP_WR) ||
        limit >= (1u << p->log_depth)) {
        QHCA_GUEST_ERROR(c, create_srq_bad_geometry_limit, limit);
        return QHCA_CMD_ERR_PARAM;
    }
    n = qhca_alloc_slot((void **)c->srq, QHCA_MAX_SRQ, 1);
    if (n < 0) {
        return QHCA_CMD_ERR_NO_RESOURCES;
    }
    srq = g_new0(QhcaSrq, 1);
    ret = qhca_ring_init(c, &srq->ring, &p->mem, p->log_depth, p->log_stride);
    if (ret) {
        g_free(srq);
        return ret;
    }
    srq->pdn = pdn;
    srq->db_page = db_page;
    srq->limit = limit;
    c->pd[pdn]->refs++;
    c->srq[n] = srq;
    x->result = n;
    return QHCA_CMD_OK;
}

static int cmd_modify_srq(QhcaCore *c, QhcaCmdCtx *x)
{
    uint32_t n = le32_to_cpu(x->cmd->modify_srq.srqn);
    uint32_t limit = le32_to_cpu(x->cmd->modify_srq.limit);
    QhcaSrq *srq = LOOKUP(c, srq, n);

    if (!srq) {
        return QHCA_CMD_ERR_HANDLE;
    }
    if (limit >= (1u << srq->ring.log_depth)) {
        return QHCA_CMD_ERR_PARAM;
    }
    srq->limit = limit;
    return QHCA_CMD_OK;
}

static int cmd_query_srq(QhcaCore *c, QhcaCmdCtx *x)
{
    struct qhca_srq_attr a;
    QhcaSrq *srq = LOOKUP(c, srq, le32_to_cpu(x->cmd->obj.handle));

    if (!srq) {
        return QHCA_CMD_ERR_HANDLE;
    }
    memset(&a, 0, sizeof(a));
    a.depth = cpu_to_le32(1u << srq->ring.log_depth);
    a.limit = cpu_to_le32(srq->limit);
    a.max_sge = cpu_to_le32(MIN(QHCA_MAX_SGE,
                                ((1u << srq->ring.log_stride) -
                                 QHCA_RECV_WQE_HDR_SIZE) /
                                sizeof(struct qhca_sge)));
    x->reply.srq = a;
    x->resp = &x->reply.srq;
    x->resp_size = sizeof(a);
    return QHCA_CMD_OK;
}

/*
 * RESIZE_SRQ: the SRQ moves to a new ring of the same stride.  The WQEs
 * posted and not yet taken (ci to pi) keep their free-running indices and
 * are copied from slot i % old depth to slot i % new depth, so completions
 * of WQEs taken before (which name their index) stay right for software.
 * A QP that has taken a WQE holds a copy of it (wr_id and SGEs) and never
 * reads the ring again for it; commands run between the engine's loops, so
 * nothing holds the old ring's page list when it is freed.  The old ring
 * stays in use if anything fails.
 */
static int cmd_resize_srq(QhcaCore *c, QhcaCmdCtx *x)
{
    const struct qhca_cmd_resize_srq *p = &x->cmd->resize_srq;
    uint32_t srqn = le32_to_cpu(p->srqn);
    QhcaSrq *srq = LOOKUP(c, srq, srqn);
    uint8_t wqe[1u << QHCA_WQE_MAX_LOG_STRIDE];
    QhcaRing nr = { 0 };
    uint32_t stride;
    uint16_t n, i;
    int ret;

    if (!srq) {
        QHCA_GUEST_ERROR(c, resize_srq_no_such_srq, srqn);
        return QHCA_CMD_ERR_HANDLE;
    }
    if (p->reserved[0] || p->reserved[1] || p->reserved[2] ||
        p->log_depth < 1 || p->log_depth > ctz32(QHCA_MAX_QP_WR) ||
        srq->limit >= (1u << p->log_depth)) {
        QHCA_GUEST_ERROR(c, resize_srq_bad_depth_limit, p->log_depth);
        return QHCA_CMD_ERR_PARAM;
    }
    n = srq->ring.pi - srq->ring.ci;
    if (n > (1u << p->log_depth)) {
        QHCA_GUEST_ERROR(c, resize_srq_smaller_than_wqes_posted, n);
        return QHCA_CMD_ERR_PARAM;
    }
    ret = qhca_ring_init(c, &nr, &p->mem, p->log_depth, srq->ring.log_stride);
    if (ret) {
        return ret;
    }
    nr.ci = srq->ring.ci;
    nr.pi = srq->ring.pi;
    stride = 1u << srq->ring.log_stride;
    assert(stride <= sizeof(wqe));
    for (i = 0; i < n; i++) {
        uint16_t idx = srq->ring.ci + i;
        uint64_t from, to;

        if (!qhca_ring_entry_addr(&srq->ring, idx, &from) ||
            !qhca_ring_entry_addr(&nr, idx, &to) ||
            !dma_read(c, from, wqe, stride) ||
            !dma_write(c, to, wqe, stride)) {
            QHCA_GUEST_ERROR(c, resize_srq_copy_failed, idx);
            qhca_pages_free(c, &nr.mem);
            return QHCA_CMD_ERR_DMA;
        }
    }
    qhca_pages_free(c, &srq->ring.mem);
    srq->ring = nr;
    trace_qhca_resize_srq(srqn, 1u << nr.log_depth, n);
    x->result = n;
    return QHCA_CMD_OK;
}

static int cmd_create_ah(QhcaCore *c, QhcaCmdCtx *x)
{
    const struct qhca_cmd_create_ah *p = &x->cmd->create_ah;
    uint32_t pdn = le32_to_cpu(p->pdn);
    uint32_t flow_label = le32_to_cpu(p->flow_label);
    QhcaAh *ah;
    int n;

    if (!LOOKUP(c, pd, pdn)) {
        return QHCA_CMD_ERR_HANDLE;
    }
    if (p->sgid_index >= QHCA_GID_TABLE_LEN || flow_label > 0xfffff) {
        QHCA_GUEST_ERROR(c, create_ah_bad_sgid_index_flow_label,
                         p->sgid_index);
        return QHCA_CMD_ERR_PARAM;
    }
    if (!qhca_av_gids_ok(c, p->sgid_index, p->dgid, true)) {
        QHCA_GUEST_ERROR(c, create_ah_bad_gids, p->sgid_index);
        return QHCA_CMD_ERR_PARAM;
    }
    n = qhca_alloc_slot((void **)c->ah, QHCA_MAX_AH, 1);
    if (n < 0) {
        return QHCA_CMD_ERR_NO_RESOURCES;
    }
    ah = g_new0(QhcaAh, 1);
    ah->pdn = pdn;
    ah->sgid_index = p->sgid_index;
    ah->hop_limit = p->hop_limit;
    ah->traffic_class = p->traffic_class;
    ah->flow_label = flow_label;
    memcpy(ah->dmac, p->dmac, 6);
    memcpy(ah->dgid, p->dgid, 16);
    c->pd[pdn]->refs++;
    c->ah[n] = ah;
    x->result = n;
    return QHCA_CMD_OK;
}

/*
 * ATTACH_MCAST and DETACH_MCAST: a UD QP and a multicast GID.  Bounded:
 * QHCA_MAX_MCAST_GRP groups of QHCA_MAX_MCAST_QP_ATTACH QPs, so a frame to
 * a group reaches at most QHCA_MAX_MCAST_QP_ATTACH QPs.  Attaching a QP
 * attached already answers OK; detaching one that is not, ERR_PARAM.
 */
static int cmd_mcast(QhcaCore *c, QhcaCmdCtx *x, bool attach)
{
    const struct qhca_cmd_mcast *p = &x->cmd->mcast;
    uint32_t qpn = le32_to_cpu(p->qpn);
    QhcaQp *qp = LOOKUP(c, qp, qpn);
    QhcaMcg *g = NULL, *free_g = NULL;
    unsigned i;

    if (!qp) {
        return QHCA_CMD_ERR_HANDLE;
    }
    if (qp->type != QHCA_QPT_UD || p->reserved) {
        QHCA_GUEST_ERROR(c, mcast_not_ud, qpn);
        return QHCA_CMD_ERR_PARAM;
    }
    if (!qhca_roce_gid_is_mcast(p->gid)) {
        QHCA_GUEST_ERROR(c, mcast_gid_not_multicast, qpn);
        return QHCA_CMD_ERR_PARAM;
    }
    for (i = 0; i < QHCA_MAX_MCAST_GRP; i++) {
        if (!c->mcg[i].nqp) {
            free_g = free_g ? free_g : &c->mcg[i];
        } else if (!memcmp(c->mcg[i].gid, p->gid, 16)) {
            g = &c->mcg[i];
        }
    }
    if (!attach) {
        if (!g || !qhca_mcg_remove(g, qpn)) {
            QHCA_GUEST_ERROR(c, mcast_not_attached, qpn);
            return QHCA_CMD_ERR_PARAM;
        }
        return QHCA_CMD_OK;
    }
    if (!g) {
        if (!free_g) {
            return QHCA_CMD_ERR_NO_RESOURCES;
        }
        g = free_g;
        memcpy(g->gid, p->gid, 16);
        qhca_roce_mcast_mac(g->gid, g->mac);
    }
    for (i = 0; i < g->nqp; i++) {
        if (g->qpn[i] == qpn) {
            return QHCA_CMD_OK;
        }
    }
    if (g->nqp == QHCA_MAX_MCAST_QP_ATTACH) {
        return QHCA_CMD_ERR_NO_RESOURCES;
    }
    g->qpn[g->nqp++] = qpn;
    return QHCA_CMD_OK;
}

/*
 * Every DESTROY_* and DEALLOC_PD: the object must exist and, if it has a
 * reference count (at @refs_off), not be in use
 */
static int cmd_destroy(QhcaCore *c, QhcaCmdCtx *x, void **table,
                       uint32_t size, size_t refs_off,
                       void (*destroy)(QhcaCore *c, uint32_t n))
{
    uint32_t n = le32_to_cpu(x->cmd->obj.handle);

    if (n >= size || !table[n]) {
        return QHCA_CMD_ERR_HANDLE;
    }
    if (refs_off != SIZE_MAX &&
        *(uint32_t *)((uint8_t *)table[n] + refs_off)) {
        return QHCA_CMD_ERR_BUSY;
    }
    destroy(c, n);
    return QHCA_CMD_OK;
}

static int qhca_exec(QhcaCore *c, QhcaCmdCtx *x)
{
    uint16_t op = le16_to_cpu(x->cmd->hdr.opcode);

    if (le16_to_cpu(x->cmd->hdr.flags)) {
        QHCA_GUEST_ERROR(c, command_reserved_flags_set, op);
        return QHCA_CMD_ERR_PARAM;
    }
    switch (op) {
    case QHCA_CMD_QUERY_DEVICE:
        return cmd_query_device(c, x);
    case QHCA_CMD_QUERY_PORT:
        return cmd_query_port(c, x);
    case QHCA_CMD_ADD_GID:
        return cmd_gid(c, x, true);
    case QHCA_CMD_DEL_GID:
        return cmd_gid(c, x, false);
    case QHCA_CMD_CREATE_EQ:
        return cmd_create_eq(c, x);
    case QHCA_CMD_DESTROY_EQ:
        return cmd_destroy(c, x, (void **)c->eq, QHCA_MAX_EQS,
                           offsetof(QhcaEq, refs), qhca_free_eq);
    case QHCA_CMD_ALLOC_PD:
        return cmd_alloc_pd(c, x);
    case QHCA_CMD_DEALLOC_PD:
        return cmd_destroy(c, x, (void **)c->pd, QHCA_MAX_PD,
                           offsetof(QhcaPd, refs), qhca_free_pd);
    case QHCA_CMD_REG_MR:
        return cmd_reg_mr(c, x, false);
    case QHCA_CMD_DEREG_MR:
        return cmd_dereg_mr(c, x);
    case QHCA_CMD_ALLOC_MR:
        return cmd_reg_mr(c, x, true);
    case QHCA_CMD_CREATE_CQ:
        return cmd_create_cq(c, x);
    case QHCA_CMD_DESTROY_CQ:
        return cmd_destroy(c, x, (void **)c->cq, QHCA_MAX_CQ,
                           offsetof(QhcaCq, refs), qhca_free_cq);
    case QHCA_CMD_CREATE_QP:
        return cmd_create_qp(c, x);
    case QHCA_CMD_MODIFY_QP:
        return cmd_modify_qp(c, x);
    case QHCA_CMD_QUERY_QP:
        return cmd_query_qp(c, x);
    case QHCA_CMD_DESTROY_QP:
        return cmd_destroy(c, x, (void **)c->qp, QHCA_MAX_QP, SIZE_MAX,
                           qhca_free_qp);
    case QHCA_CMD_CREATE_SRQ:
        return cmd_create_srq(c, x);
    case QHCA_CMD_MODIFY_SRQ:
        return cmd_modify_srq(c, x);
    case QHCA_CMD_QUERY_SRQ:
        return cmd_query_srq(c, x);
    case QHCA_CMD_DESTROY_SRQ:
        return cmd_destroy(c, x, (void **)c->srq, QHCA_MAX_SRQ,
                           offsetof(QhcaSrq, refs), qhca_free_srq);
    case QHCA_CMD_RESIZE_SRQ:
        return cmd_resize_srq(c, x);
    case QHCA_CMD_ALLOC_MW:
        return cmd_alloc_mw(c, x);
    case QHCA_CMD_DEALLOC_MW:
        return cmd_dealloc_mw(c, x);
    case QHCA_CMD_CREATE_AH:
        return cmd_create_ah(c, x);
    case QHCA_CMD_DESTROY_AH:
        return cmd_destroy(c, x, (void **)c->ah, QHCA_MAX_AH, SIZE_MAX,
                           qhca_free_ah);
    case QHCA_CMD_QUERY_STATS:
        return cmd_query_stats(c, x);
    case QHCA_CMD_QUERY_QP_STATE:
        return cmd_query_qp_state(c, x);
    case QHCA_CMD_QUERY_CQ:
        return cmd_query_cq(c, x);
    case QHCA_CMD_REREG_MR:
        return cmd_rereg_mr(c, x);
    case QHCA_CMD_RESIZE_CQ:
        return cmd_resize_cq(c, x);
    case QHCA_CMD_ATTACH_MCAST:
        return cmd_mcast(c, x, true);
    case QHCA_CMD_DETACH_MCAST:
        return cmd_mcast(c, x, false);
    default:
        QHCA_GUEST_ERROR(c, command_unknown_opcode, op);
        return QHCA_CMD_ERR_OPCODE;
    }
}

static void qhca_fatal(QhcaCore *c, uint32_t code)
{
    c->status |= QHCA_STATUS_FATAL;
    c->fatal_code = code;
    trace_qhca_err_fatal(code);
    qemu_log_mask(LOG_GUEST_ERROR, "qhca: fatal error %u\n", code);
}

/* Execute queued commands while there is room for their completions */
static void qhca_cmdq_run(QhcaCore *c)
{
    uint32_t depth = 1u << c->cmdq_log_depth;
    uint32_t cdepth = 1u << c->cmdcq_log_depth;

    while (c->cmdq_ci != c->cmdq_pi && !c->halted &&
           !(c->status & QHCA_STATUS_FATAL) &&
           (uint16_t)(c->cmdcq_pi - c->cmdcq_ci) < cdepth) {
        struct qhca_cmd cmd;
        struct qhca_cmd_comp comp = { 0 };
        QhcaCmdCtx x = { .cmd = &cmd };
        uint64_t addr = c->cmdq_base +
                        (uint64_t)(c->cmdq_ci & (depth - 1)) * QHCA_CMD_SIZE;
        int status;

        if (!dma_read(c, addr, &cmd, sizeof(cmd))) {
            qhca_fatal(c, QHCA_FATAL_CMDQ_DMA);
            return;
        }
        status = qhca_exec(c, &x);
        trace_qhca_cmd(le16_to_cpu(cmd.hdr.opcode), le32_to_cpu(cmd.hdr.cookie),
                       status, x.result);
        if (status == QHCA_CMD_OK && x.resp) {
            uint64_t raddr = le64_to_cpu(cmd.hdr.resp_addr);
            uint32_t rlen = MIN(le32_to_cpu(cmd.hdr.resp_len), x.resp_size);

            if ((raddr & (QHCA_PAGE_SIZE - 1)) + rlen > QHCA_PAGE_SIZE) {
                QHCA_GUEST_ERROR(c, command_response_crosses_page, raddr);
                status = QHCA_CMD_ERR_PARAM;
            } else if (rlen && !dma_write(c, raddr, x.resp, rlen)) {
                status = QHCA_CMD_ERR_DMA;
            }
        }
        comp.cookie = cmd.hdr.cookie;
        comp.status = cpu_to_le16(status);
        comp.opcode = le16_to_cpu(cmd.hdr.opcode) & 0xff;
        comp.result = cpu_to_le32(x.result);
        comp.owner = ((c->cmdcq_pi >> c->cmdcq_log_depth) & 1) ?
                     0 : QHCA_OWNER_BIT;
        addr = c->cmdcq_base +
               (uint64_t)(c->cmdcq_pi & (cdepth - 1)) * QHCA_CMD_COMP_SIZE;
        if (!qhca_write_entry(c, addr, &comp, sizeof(comp),
                              offsetof(struct qhca_cmd_comp, owner))) {
            qhca_fatal(c, QHCA_FATAL_CMDCQ_DMA);
            return;
        }
        c->cmdq_ci++;
        c->cmdcq_pi++;
        if (c->cmdcq_armed) {
            c->cmdcq_armed = false;
            trace_qhca_irq(QHCA_MSIX_VEC_ASYNC);
            qhca_op_irq(c, QHCA_MSIX_VEC_ASYNC);
        }
    }
}

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
    uint8_t data[];
} QhcaRxFrame;

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
        trace_qhca_rx_drop(len, "device not ready or frame too long");
        return;
    }
    if (c->drop_ppm) {
        /* a lossy wire on purpose (the "drop-ppm" property), for tests */
        c->drop_rng = c->drop_rng * 6364136223846793005ULL +
                      1442695040888963407ULL;
        if ((c->drop_rng >> 33) % 1000000 < c->drop_ppm) {
            c->stat_rx_dropped++;
            trace_qhca_rx_drop(len, "dropped on purpose (drop-ppm)");
            return;
        }
    }
    f = g_malloc(sizeof(*f) + len);
    f->len = len;
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
        trace_qhca_rx_drop(len, "from our own MAC (a reflection)");
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
    g_free(f);
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
    return c->cmdq_base && !(c->cmdq_base & (QHCA_PAGE_SIZE - 1)) &&
           c->cmdq_log_depth >= 1 &&
           c->cmdq_log_depth <= QHCA_CMDQ_MAX_LOG_DEPTH &&
           c->cmdcq_base && !(c->cmdcq_base & (QHCA_PAGE_SIZE - 1)) &&
           c->cmdcq_log_depth >= 1 &&
           c->cmdcq_log_depth <= QHCA_CMDCQ_MAX_LOG_DEPTH &&
           c->aeq_base && !(c->aeq_base & (QHCA_PAGE_SIZE - 1)) &&
           c->aeq_log_depth >= 1 &&
           c->aeq_log_depth <= QHCA_AEQ_MAX_LOG_DEPTH;
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
    c->ctrl = 0;
    c->status = 0;
    c->fatal_code = QHCA_FATAL_NONE;
    c->cmdq_base = 0;
    c->cmdq_log_depth = 0;
    c->cmdcq_base = 0;
    c->cmdcq_log_depth = 0;
    c->aeq_base = 0;
    c->aeq_log_depth = 0;
    c->cmdq_pi = c->cmdq_ci = 0;
    c->cmdcq_pi = c->cmdcq_ci = 0;
    c->cmdcq_armed = false;
    c->aeq_pi = c->aeq_ci = 0;
    c->aeq_armed = false;
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
}

static void qhca_ctrl_write(QhcaCore *c, uint32_t val)
{
    if (val & QHCA_CTRL_RESET) {
        core_reset_request(c, 1);
        return;
    }
    if (val & ~QHCA_CTRL_ENABLE) {
        QHCA_GUEST_UB(c, ctrl_reserved_bits_set, val);
    }
    if ((val & QHCA_CTRL_ENABLE) && !(c->ctrl & QHCA_CTRL_ENABLE)) {
        if (c->status & QHCA_STATUS_FATAL) {
            /* a fatal error needs a reset, not another ENABLE */
            QHCA_GUEST_UB(c, ctrl_enable_after_fatal_error, c->fatal_code);
            return;
        }
        c->ctrl = QHCA_CTRL_ENABLE;
        if (!qhca_queue_regs_ok(c)) {
            QHCA_GUEST_ERROR(c, ctrl_enable_bad_queue_registers, c->cmdq_base);
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

typedef struct QhcaQueueRegs {
    uint64_t *base;
    uint32_t *log_depth;
} QhcaQueueRegs;

static bool qreg_find_block(QhcaCore *c, uint64_t addr, QhcaQueueRegs *q)
{
    switch (addr & ~0xfULL) {
    case QHCA_REG_CMDQ_BASE_LO:
        *q = (QhcaQueueRegs) { &c->cmdq_base, &c->cmdq_log_depth };
        return true;
    case QHCA_REG_CMDCQ_BASE_LO:
        *q = (QhcaQueueRegs) { &c->cmdcq_base, &c->cmdcq_log_depth };
        return true;
    case QHCA_REG_AEQ_BASE_LO:
        *q = (QhcaQueueRegs) { &c->aeq_base, &c->aeq_log_depth };
        return true;
    default:
        return false;
    }
}

/* The queue registers at @addr, and which of them (QREG_*) */
static bool qreg_find(QhcaCore *c, uint64_t addr, QhcaQueueRegs *q,
                      unsigned *field)
{
    unsigned f = (addr & 0xf) / 4;

    if ((addr & 3) || f > QREG_LOG_DEPTH || !qreg_find_block(c, addr, q)) {
        return false;
    }
    *field = f;
    return true;
}

uint32_t qhca_core_reg_read(QhcaCore *c, uint64_t addr)
{
    QhcaQueueRegs q;
    unsigned field;

    if (addr >= QHCA_REG_STAT_TX_FRAMES &&
        addr <= QHCA_REG_STAT_LOOP_DROPPED && !(addr & 3)) {
        return (uint32_t)qhca_stat(c, (addr - QHCA_REG_STAT_TX_FRAMES) / 4);
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
    if (qreg_find(c, addr, &q, &field)) {
        switch (field) {
        case QREG_BASE_LO:
            return (uint32_t)*q.base;
        case QREG_BASE_HI:
            return *q.base >> 32;
        default:
            return *q.log_depth;
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
    QhcaQueueRegs q;
    unsigned field;

    if (addr == QHCA_REG_CTRL) {
        qhca_ctrl_write(c, val);
        return;
    }
    if (addr < QHCA_REG_CMDQ_BASE_LO || addr > QHCA_REG_AEQ_LOG_DEPTH) {
        QHCA_GUEST_UB(c, write_read_only_undefined_register, addr);
        return;
    }
    if (c->ctrl & QHCA_CTRL_ENABLE) {
        QHCA_GUEST_UB(c, queue_register_written_while_enabled, addr);
        return;
    }
    if (!qreg_find(c, addr, &q, &field)) {
        QHCA_GUEST_UB(c, write_read_only_undefined_register, addr);
        return;
    }
    switch (field) {
    case QREG_BASE_LO:
        set_lo(q.base, val);
        break;
    case QREG_BASE_HI:
        set_hi(q.base, val);
        break;
    default:
        *q.log_depth = val;
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
        QHCA_GUEST_UB(c, cq_doorbell_no_such_cq_this_page, val);
        return;
    }
    if (!qhca_ci_valid(cq->ring.pi, cq->ring.ci, ci)) {
        QHCA_GUEST_UB(c, cq_doorbell_consumer_index_beyond, val);
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

static void qhca_db_kernel(QhcaCore *c, uint32_t off, uint32_t val)
{
    switch (off) {
    case QHCA_DB_EQ: {
        uint32_t eqn = val & QHCA_DB_EQ_NUM_MASK;
        uint16_t ci = val >> QHCA_DB_IDX_SHIFT;
        QhcaEq *eq = LOOKUP(c, eq, eqn);

        if (!eq || !qhca_ci_valid(eq->ring.pi, eq->ring.ci, ci)) {
            QHCA_GUEST_UB(c, eq_doorbell_bad_eq_index, val);
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
    case QHCA_DB_CMDQ: {
        uint16_t pi = val & 0xffff;

        if ((uint16_t)(pi - c->cmdq_ci) > (1u << c->cmdq_log_depth)) {
            QHCA_GUEST_UB(c, cmdq_doorbell_more_commands_entries, val);
            return;
        }
        c->cmdq_pi = pi;
        qhca_op_schedule(c);
        return;
    }
    case QHCA_DB_CMDCQ: {
        uint16_t ci = val & QHCA_DB_CMDCQ_CI_MASK;

        if (!qhca_ci_valid(c->cmdcq_pi, c->cmdcq_ci, ci)) {
            QHCA_GUEST_UB(c, cmdcq_doorbell_index_beyond_producer, val);
            return;
        }
        c->cmdcq_ci = ci;
        if (val & QHCA_DB_CMDCQ_ARM) {
            c->cmdcq_armed = true;
            if (c->cmdcq_pi != ci) {
                c->cmdcq_armed = false;
                qhca_op_irq(c, QHCA_MSIX_VEC_ASYNC);
            }
        }
        /* Room for completions again: continue with queued commands */
        qhca_op_schedule(c);
        return;
    }
    case QHCA_DB_AEQ: {
        uint16_t ci = val & QHCA_DB_AEQ_CI_MASK;

        if (!qhca_ci_valid(c->aeq_pi, c->aeq_ci, ci)) {
            QHCA_GUEST_UB(c, aeq_doorbell_index_beyond_producer, val);
            return;
        }
        c->aeq_ci = ci;
        if (val & QHCA_DB_AEQ_ARM) {
            c->aeq_armed = true;
            if (c->aeq_pi != ci) {
                c->aeq_armed = false;
                qhca_op_irq(c, QHCA_MSIX_VEC_ASYNC);
            }
        }
        return;
    }
    }
    QHCA_GUEST_UB(c, write_undefined_doorbell, off);
}

static void core_db_write(QhcaCore *c, uint32_t page, uint32_t off,
                          uint32_t val)
{
    trace_qhca_doorbell(page, off, val);
    if (!(c->status & QHCA_STATUS_READY)) {
        QHCA_GUEST_UB(c, doorbell_while_device_not_ready, off);
        return;
    }
    switch (off) {
    case QHCA_DB_SQ:
    case QHCA_DB_RQ: {
        uint32_t qpn = val & QHCA_DB_NUM_MASK;
        QhcaQp *qp = LOOKUP(c, qp, qpn);

        if (!qp || qp->db_page != page) {
            QHCA_GUEST_UB(c, qp_doorbell_no_such_qp_this_page, val);
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
            QHCA_GUEST_UB(c, srq_doorbell_no_such_srq_this_page, val);
            return;
        }
        if ((uint16_t)(pi - srq->ring.ci) > (1u << srq->ring.log_depth)) {
            QHCA_GUEST_UB(c, srq_doorbell_more_wqes_entries, val);
            return;
        }
        if ((uint16_t)(pi - srq->ring.ci) <
            (uint16_t)(srq->ring.pi - srq->ring.ci)) {
            QHCA_GUEST_UB(c, srq_doorbell_producer_index_moved, val);
            return;
        }
        srq->ring.pi = pi;
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
        QHCA_GUEST_UB(c, user_doorbell_page_undefined_offset, off);
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
