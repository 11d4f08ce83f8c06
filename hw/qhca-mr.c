/*
 * qhca device logic: MR and memory window keys, and access to memory
 * through them.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qhca-mr.h"
#include "trace.h"

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
        QHCA_GUEST_ERROR(c, reg_mr_wr_not_free_fast_register_mr, key, pdn);
        return QHCA_CQE_LOC_PROT_ERR;
    }
    if ((access & ~QHCA_ACCESS_MASK) || num_pages > mr->max_pages ||
        length == 0 || length > QHCA_MAX_MR_SIZE || iova + length < iova ||
        page_shift < QHCA_PAGE_SHIFT || page_shift > 30) {
        QHCA_GUEST_ERROR(c, reg_mr_wr_bad_access_range_pages, key, access,
                         iova, length, num_pages, mr->max_pages, page_shift);
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
bool qhca_range_in(uint64_t base, uint64_t size, uint64_t addr,
                   uint64_t len)
{
    return addr >= base && len <= size && addr - base <= size - len;
}

/*
 * Memory windows (see QhcaMr and include/qhca_hw.h).  A window that is
 * bound no more: its MR counts it no more.
 */
void qhca_mw_unbind(QhcaCore *c, QhcaMr *mw)
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
        QHCA_GUEST_ERROR(c, bind_mw_not_a_window_of_pd, mw_key, pdn, new_key);
        return QHCA_CQE_MW_BIND_ERR;
    }
    if ((access & ~(QHCA_ACCESS_REMOTE_READ | QHCA_ACCESS_REMOTE_WRITE |
                    QHCA_ACCESS_REMOTE_ATOMIC)) ||
        (mw->mw_type == QHCA_MW_TYPE_2 && (mw->valid || !len))) {
        QHCA_GUEST_ERROR(c, bind_mw_bad_rights_or_window_bound, mw_key,
                         mw->mw_type, mw->valid, len, access);
        return QHCA_CQE_MW_BIND_ERR;
    }
    if (len) {
        mr = LOOKUP(c, mr, mr_lkey >> QHCA_KEY_INDEX_SHIFT);
        if (!mr || mr->mw_type || mr->key != mr_lkey || !mr->valid ||
            mr->pdn != pdn || !(mr->access & QHCA_ACCESS_MW_BIND) ||
            ((access & (QHCA_ACCESS_REMOTE_WRITE |
                        QHCA_ACCESS_REMOTE_ATOMIC)) &&
             !(mr->access & QHCA_ACCESS_LOCAL_WRITE)) ||
            !qhca_range_in(mr->iova, mr->length, addr, len)) {
            QHCA_GUEST_ERROR(c, bind_mw_mr_does_not_allow_it, mw_key, mr_lkey,
                             addr, len, access);
            return QHCA_CQE_MW_BIND_ERR;
        }
    }
    qhca_mw_unbind(c, mw);
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
        qhca_mw_unbind(c, mr);
        trace_qhca_mw_invalidate(key, qpn);
        return QHCA_CQE_SUCCESS;
    }
    if (!mr || mr->key != key || !mr->fast_reg || mr->pdn != pdn) {
        QHCA_GUEST_ERROR(c, invalidate_not_fast_register_mr, key, pdn, qpn);
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
    if (!whole && !qhca_range_in(mr->iova, mr->length, addr, len)) {
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
    } else if (!qhca_range_in(mw->iova, mw->length, addr, len)) {
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
        return write ? qhca_op_dma_write(c, addr, buf, len) :
                       qhca_op_dma_read(c, addr, buf, len);
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
        if (!(write ? qhca_op_dma_write(c, pa, p, n) :
                      qhca_op_dma_read(c, pa, p, n))) {
            return false;
        }
        p += n;
        addr += n;
        len -= n;
    }
    return true;
}
