/*
 * qhca device logic: the commands of MRs and memory windows.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qhca-cmd-int.h"
#include "trace.h"

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
        QHCA_GUEST_ERROR(c, reg_mr_bad_access_flags_range, access, flags,
                         iova, length);
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

static int reg_mr(QhcaCore *c, QhcaCmdCtx *x, bool fast)
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
        QHCA_GUEST_ERROR(c, mr_key_variant_out_range, variant,
                         QHCA_KEY_VARIANT_MASK);
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
            QHCA_GUEST_ERROR(c, alloc_mr_bad_max_pages, mr->max_pages,
                             QHCA_MAX_FAST_REG_PAGES);
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

int qhca_cmd_reg_mr(QhcaCore *c, QhcaCmdCtx *x)
{
    return reg_mr(c, x, false);
}

int qhca_cmd_alloc_mr(QhcaCore *c, QhcaCmdCtx *x)
{
    return reg_mr(c, x, true);
}

/*
 * REREG_MR: an MR's PD, access rights or translation (iova, length, pages),
 * each as its flag asks; the key stays.  Everything is checked before
 * anything changes.  Remote accesses check the MR packet by packet, so a
 * message under way sees the new MR from its next packet on.
 */
int qhca_cmd_rereg_mr(QhcaCore *c, QhcaCmdCtx *x)
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
        QHCA_GUEST_ERROR(c, rereg_mr_windows_bound, key, mr->mw_bound);
        return QHCA_CMD_ERR_BUSY;
    }
    if (!what || (what & ~QHCA_REREG_MASK)) {
        QHCA_GUEST_ERROR(c, rereg_mr_bad_flags, key, what, QHCA_REREG_MASK);
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

int qhca_cmd_dereg_mr(QhcaCore *c, QhcaCmdCtx *x)
{
    uint32_t key = le32_to_cpu(x->cmd->obj.handle);
    QhcaMr *mr = LOOKUP(c, mr, key >> QHCA_KEY_INDEX_SHIFT);

    /* Fast-register MRs change variant; accept any variant of the index */
    if (!mr || mr->mw_type || (!mr->fast_reg && mr->key != key)) {
        return QHCA_CMD_ERR_HANDLE;
    }
    if (mr->mw_bound) {
        QHCA_GUEST_ERROR(c, dereg_mr_windows_bound, key, mr->mw_bound);
        return QHCA_CMD_ERR_BUSY;
    }
    qhca_free_mr(c, key >> QHCA_KEY_INDEX_SHIFT);
    return QHCA_CMD_OK;
}

/* ALLOC_MW: an unbound window, in the MR table (its key: index | variant) */
int qhca_cmd_alloc_mw(QhcaCore *c, QhcaCmdCtx *x)
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
        QHCA_GUEST_ERROR(c, alloc_mw_bad_type_or_reserved, p->type,
                         p->reserved[0], p->reserved[1], p->reserved[2]);
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
int qhca_cmd_dealloc_mw(QhcaCore *c, QhcaCmdCtx *x)
{
    uint32_t key = le32_to_cpu(x->cmd->obj.handle);
    QhcaMr *mw = LOOKUP(c, mr, key >> QHCA_KEY_INDEX_SHIFT);

    if (!mw || !mw->mw_type) {
        return QHCA_CMD_ERR_HANDLE;
    }
    qhca_free_mr(c, key >> QHCA_KEY_INDEX_SHIFT);
    return QHCA_CMD_OK;
}
