/*
 * Grant tracking: which pages of its guest's RAM a device may touch.
 *
 * The harness watches the device read each command from the command queue
 * and write each completion, and so knows what the guest handed over:
 *
 *   - the command queue, its completion ring and the async EQ, from the
 *     queue registers at CTRL.ENABLE (kept until a reset);
 *   - while a command runs: its page lists (both levels) and its response
 *     buffer;
 *   - once a create command completes with OK: the pages its page lists
 *     describe (EQ, CQ, SRQ and QP rings, MR pages, or a physical MR's
 *     range), until the object is destroyed or the device reset;
 *   - a REG_MR work request read from an SQ: its page list and the pages
 *     it names, until the MR is deregistered;
 *   - a REREG_MR with a new translation, once it completes with OK: the
 *     pages it describes (or its physical range) instead of the MR's old
 *     ones; a RESIZE_CQ (RESIZE_SRQ): its new ring's pages while it runs
 *     (it copies the CQEs held, the WQEs not yet taken there), then, if
 *     OK, instead of the CQ's (SRQ's) old ring.
 *
 * Granularity is the 4 KiB page, and whole described pages are granted (a
 * ring of 1 KiB in a 4 KiB page grants the page): an over-approximation, so
 * that a finding is a real access outside anything the guest handed over.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "harness.h"

enum { GK_EQ, GK_CQ, GK_QP, GK_SRQ, GK_MR, GK_COUNT };

static const uint32_t gk_max[GK_COUNT] = {
    [GK_EQ] = QHCA_MAX_EQS,
    [GK_CQ] = QHCA_MAX_CQ,
    [GK_QP] = QHCA_MAX_QP,
    [GK_SRQ] = QHCA_MAX_SRQ,
    [GK_MR] = QHCA_MAX_MR,
};

/* Work bound for one page list, then all of RAM is granted instead */
#define GRANT_WORK_MAX  (1u << 20)

/* A set of RAM pages (page numbers, each once) */
typedef struct PageSet {
    GArray *pages;              /* uint32_t */
} PageSet;

typedef struct SqInfo {
    PageSet pages;
    uint8_t stride_log;
} SqInfo;

struct HxGrants {
    uint32_t count[HX_RAM_PAGES];   /* grants covering each page */
    PageSet regs;
    PageSet cmd;                    /* the running command's lists, resp */
    PageSet pending;                /* its object's memory, if it succeeds */
    PageSet pending_sq;
    uint8_t pending_sq_stride;
    bool cmd_valid;
    struct qhca_cmd cmd_copy;
    PageSet *obj[GK_COUNT];
    SqInfo *sq;                     /* [QHCA_MAX_QP] */
    GArray *live_qps;               /* uint32_t qpn with an SQ */
    uint8_t scratch[HX_RAM_PAGES];  /* building a set */
    unsigned work;
};

static void set_init(PageSet *s)
{
    if (!s->pages) {
        s->pages = g_array_new(false, false, sizeof(uint32_t));
    }
}

static void set_free(PageSet *s)
{
    if (s->pages) {
        g_array_free(s->pages, true);
        s->pages = NULL;
    }
}

HxGrants *hx_grants_new(void)
{
    HxGrants *g = g_new0(HxGrants, 1);
    unsigned k;

    for (k = 0; k < GK_COUNT; k++) {
        g->obj[k] = g_new0(PageSet, gk_max[k]);
    }
    g->sq = g_new0(SqInfo, QHCA_MAX_QP);
    g->live_qps = g_array_new(false, false, sizeof(uint32_t));
    return g;
}

void hx_grants_free(HxGrants *g)
{
    unsigned k, i;

    if (!g) {
        return;
    }
    for (k = 0; k < GK_COUNT; k++) {
        for (i = 0; i < gk_max[k]; i++) {
            set_free(&g->obj[k][i]);
        }
        g_free(g->obj[k]);
    }
    for (i = 0; i < QHCA_MAX_QP; i++) {
        set_free(&g->sq[i].pages);
    }
    g_free(g->sq);
    g_array_free(g->live_qps, true);
    set_free(&g->regs);
    set_free(&g->cmd);
    set_free(&g->pending);
    set_free(&g->pending_sq);
    g_free(g);
}

/* Add the pages of a set to the grant counts, or take them away */
static void set_apply(HxGrants *g, const PageSet *s, int delta)
{
    unsigned i;

    if (!s->pages) {
        return;
    }
    for (i = 0; i < s->pages->len; i++) {
        g->count[g_array_index(s->pages, uint32_t, i)] += delta;
    }
}

/* Sets are freed when emptied: an input leaves nothing allocated behind */
static void set_revoke(HxGrants *g, PageSet *s)
{
    set_apply(g, s, -1);
    set_free(s);
}

/*
 * Building a set: mark ranges in the scratch bitmap, then collect.  The
 * work is bounded: a page list that names too much grants all of RAM.
 */
static void build_begin(HxGrants *g)
{
    memset(g->scratch, 0, sizeof(g->scratch));
    g->work = 0;
}

static void build_range(HxGrants *g, uint64_t addr, uint64_t len)
{
    uint64_t pg, last;

    if (!len || addr >= HX_RAM_SIZE) {
        return;
    }
    len = MIN(len, HX_RAM_SIZE - addr);
    last = (addr + len - 1) >> QHCA_PAGE_SHIFT;
    for (pg = addr >> QHCA_PAGE_SHIFT; pg <= last; pg++) {
        if (++g->work > GRANT_WORK_MAX) {
            memset(g->scratch, 1, sizeof(g->scratch));
            return;
        }
        g->scratch[pg] = 1;
    }
}

/* Add the marked pages that @s does not hold yet to @s, and grant them */
static void build_end(HxGrants *g, PageSet *s, bool grant)
{
    unsigned i;

    set_init(s);
    for (i = 0; i < s->pages->len; i++) {
        g->scratch[g_array_index(s->pages, uint32_t, i)] = 0;
    }
    for (i = 0; i < HX_RAM_PAGES; i++) {
        if (g->scratch[i]) {
            uint32_t pg = i;

            g_array_append_val(s->pages, pg);
            if (grant) {
                g->count[pg]++;
            }
        }
    }
}

void hx_grants_add_range(HxDev *d, uint64_t addr, uint64_t len)
{
    HxGrants *g = d->grants;

    build_begin(g);
    build_range(g, addr, len);
    build_end(g, &g->regs, true);
}

void hx_grants_clear(HxDev *d)
{
    HxGrants *g = d->grants;
    unsigned k, i;

    for (k = 0; k < GK_COUNT; k++) {
        for (i = 0; i < gk_max[k]; i++) {
            set_free(&g->obj[k][i]);
        }
    }
    for (i = 0; i < g->live_qps->len; i++) {
        set_free(&g->sq[g_array_index(g->live_qps, uint32_t, i)].pages);
    }
    g_array_set_size(g->live_qps, 0);
    set_free(&g->regs);
    set_free(&g->cmd);
    set_free(&g->pending);
    set_free(&g->pending_sq);
    g->cmd_valid = false;
    memset(g->count, 0, sizeof(g->count));
}

bool hx_grants_check(HxDev *d, uint64_t addr, uint64_t len)
{
    HxGrants *g = d->grants;
    uint64_t pg, last;

    if (!len || addr >= HX_RAM_SIZE) {
        return true;
    }
    len = MIN(len, HX_RAM_SIZE - addr);
    last = (addr + len - 1) >> QHCA_PAGE_SHIFT;
    for (pg = addr >> QHCA_PAGE_SHIFT; pg <= last; pg++) {
        if (!g->count[pg]) {
            return false;
        }
    }
    return true;
}

/* The command queue, its completion ring and the async EQ */
void hx_grants_regs(HxDev *d)
{
    static const uint32_t esize[3] = {
        QHCA_CMD_SIZE, QHCA_CMD_COMP_SIZE, QHCA_EQE_SIZE,
    };
    HxGrants *g = d->grants;
    unsigned i;

    build_begin(g);
    for (i = 0; i < 3; i++) {
        build_range(g, d->lat_base[i],
                    (uint64_t)esize[i] << MIN(d->lat_log[i], 16));
    }
    build_end(g, &g->regs, true);
}

/*
 * Page lists.  Mark the list itself (both levels) and/or the pages it
 * describes; the list is read from RAM as the device reads it.
 */
static void build_pbl(HxDev *d, const struct qhca_pbl_desc *m, bool lists,
                      bool pages)
{
    HxGrants *g = d->grants;
    uint64_t pbl = le64_to_cpu(m->pbl_addr);
    uint32_t n = le32_to_cpu(m->num_pages);
    uint64_t psize = 1ULL << (m->page_shift >= 12 && m->page_shift <= 30 ?
                              m->page_shift : 12);
    uint32_t i;

    n = MIN(n, QHCA_PBL_ENTRIES * QHCA_PBL_ENTRIES);
    if (m->levels != 2) {
        n = MIN(n, QHCA_PBL_ENTRIES);
        if (lists) {
            build_range(g, pbl, (uint64_t)n * 8);
        }
        for (i = 0; pages && i < n && g->work <= GRANT_WORK_MAX; i++) {
            uint64_t a = 0;

            hx_mem_read(d, pbl + 8ULL * i, &a, 8);
            build_range(g, le64_to_cpu(a), psize);
        }
        return;
    }
    {
        uint32_t n1 = DIV_ROUND_UP(n, QHCA_PBL_ENTRIES);

        if (lists) {
            build_range(g, pbl, (uint64_t)n1 * 8);
        }
        for (i = 0; i < n1 && g->work <= GRANT_WORK_MAX; i++) {
            uint64_t l2 = 0;
            uint32_t cnt = MIN(QHCA_PBL_ENTRIES, n - i * QHCA_PBL_ENTRIES);
            uint32_t j;

            hx_mem_read(d, pbl + 8ULL * i, &l2, 8);
            l2 = le64_to_cpu(l2);
            if (lists) {
                build_range(g, l2, (uint64_t)cnt * 8);
            }
            for (j = 0; pages && j < cnt && g->work <= GRANT_WORK_MAX; j++) {
                uint64_t a = 0;

                hx_mem_read(d, l2 + 8ULL * j, &a, 8);
                build_range(g, le64_to_cpu(a), psize);
            }
        }
    }
}

/* A physical MR's range (QHCA_MR_PHYS: the iova is guest-physical) */
static void phys_range(HxGrants *g, uint64_t iova, uint64_t len)
{
    if (iova < HX_RAM_SIZE) {
        build_range(g, iova, MIN(len, HX_RAM_SIZE - iova));
    }
}

/* The device read a command: what it may touch while running it */
static void command_read(HxDev *d, const struct qhca_cmd *c)
{
    HxGrants *g = d->grants;
    uint16_t op = le16_to_cpu(c->hdr.opcode);
    uint64_t resp = le64_to_cpu(c->hdr.resp_addr);
    uint32_t rlen = le32_to_cpu(c->hdr.resp_len);
    const struct qhca_pbl_desc *descs[2] = { NULL, NULL };
    unsigned i;

    set_revoke(g, &g->cmd);
    set_free(&g->pending);
    set_free(&g->pending_sq);
    g->cmd_copy = *c;
    g->cmd_valid = true;

    switch (op) {
    case QHCA_CMD_CREATE_EQ:
        descs[0] = &c->create_eq.mem;
        break;
    case QHCA_CMD_CREATE_CQ:
        descs[0] = &c->create_cq.mem;
        break;
    case QHCA_CMD_CREATE_SRQ:
        descs[0] = &c->create_srq.mem;
        break;
    case QHCA_CMD_CREATE_QP:
        descs[0] = &c->create_qp.sq;
        if (le32_to_cpu(c->create_qp.srqn) == QHCA_NO_SRQ) {
            descs[1] = &c->create_qp.rq;
        }
        break;
    case QHCA_CMD_REG_MR:
        if (!(le32_to_cpu(c->reg_mr.flags) & QHCA_MR_PHYS)) {
            descs[0] = &c->reg_mr.mem;
        }
        break;
    case QHCA_CMD_REREG_MR:
        if ((le32_to_cpu(c->rereg_mr.what) & QHCA_REREG_TRANS) &&
            !(le32_to_cpu(c->rereg_mr.mr_flags) & QHCA_MR_PHYS)) {
            descs[0] = &c->rereg_mr.mem;
        }
        break;
    case QHCA_CMD_RESIZE_CQ:
        descs[0] = &c->resize_cq.mem;
        break;
    case QHCA_CMD_RESIZE_SRQ:
        descs[0] = &c->resize_srq.mem;
        break;
    default:
        break;
    }

    /* for the command: the response buffer (within its page), the lists */
    build_begin(g);
    build_range(g, resp, MIN((uint64_t)rlen,
                             QHCA_PAGE_SIZE - (resp & (QHCA_PAGE_SIZE - 1))));
    for (i = 0; i < 2; i++) {
        if (descs[i]) {
            build_pbl(d, descs[i], true, false);
        }
    }
    /*
     * RESIZE_CQ copies the CQEs held into the new ring while it runs,
     * RESIZE_SRQ the WQEs not yet taken
     */
    if (op == QHCA_CMD_RESIZE_CQ || op == QHCA_CMD_RESIZE_SRQ) {
        build_pbl(d, descs[0], false, true);
    }
    build_end(g, &g->cmd, true);

    /* for the object, if it is created */
    build_begin(g);
    for (i = 0; i < 2; i++) {
        if (descs[i]) {
            build_pbl(d, descs[i], false, true);
        }
    }
    if (op == QHCA_CMD_REG_MR &&
        (le32_to_cpu(c->reg_mr.flags) & QHCA_MR_PHYS)) {
        phys_range(g, le64_to_cpu(c->reg_mr.iova),
                   le64_to_cpu(c->reg_mr.length));
    }
    if (op == QHCA_CMD_REREG_MR &&
        (le32_to_cpu(c->rereg_mr.what) & QHCA_REREG_TRANS) &&
        (le32_to_cpu(c->rereg_mr.mr_flags) & QHCA_MR_PHYS)) {
        phys_range(g, le64_to_cpu(c->rereg_mr.iova),
                   le64_to_cpu(c->rereg_mr.length));
    }
    build_end(g, &g->pending, false);
    if (op == QHCA_CMD_CREATE_QP) {
        build_begin(g);
        build_pbl(d, descs[0], false, true);
        build_end(g, &g->pending_sq, false);
        g->pending_sq_stride = c->create_qp.sq_log_stride;
    }
}

static int cmd_kind(uint16_t op, bool *create)
{
    *create = true;
    switch (op) {
    case QHCA_CMD_CREATE_EQ:
        return GK_EQ;
    case QHCA_CMD_CREATE_CQ:
        return GK_CQ;
    case QHCA_CMD_CREATE_QP:
        return GK_QP;
    case QHCA_CMD_CREATE_SRQ:
        return GK_SRQ;
    case QHCA_CMD_REG_MR:
    case QHCA_CMD_ALLOC_MR:
        return GK_MR;
    }
    *create = false;
    switch (op) {
    case QHCA_CMD_DESTROY_EQ:
        return GK_EQ;
    case QHCA_CMD_DESTROY_CQ:
        return GK_CQ;
    case QHCA_CMD_DESTROY_QP:
        return GK_QP;
    case QHCA_CMD_DESTROY_SRQ:
        return GK_SRQ;
    case QHCA_CMD_DEREG_MR:
        return GK_MR;
    }
    return -1;
}

static void forget_sq(HxGrants *g, uint32_t qpn)
{
    unsigned i;

    set_free(&g->sq[qpn].pages);
    for (i = 0; i < g->live_qps->len; i++) {
        if (g_array_index(g->live_qps, uint32_t, i) == qpn) {
            g_array_remove_index_fast(g->live_qps, i);
            return;
        }
    }
}

/*
 * A REREG_MR that changed the translation, a RESIZE_CQ or a RESIZE_SRQ
 * completed: the object's memory is what the command described from now
 * on, and no longer what it had before (its old pages are the guest's
 * again)
 */
static void object_moved(HxGrants *g, uint16_t op)
{
    const struct qhca_cmd *c = &g->cmd_copy;
    PageSet *s;
    uint32_t idx;

    if (op == QHCA_CMD_REREG_MR) {
        if (!(le32_to_cpu(c->rereg_mr.what) & QHCA_REREG_TRANS)) {
            return;
        }
        idx = le32_to_cpu(c->rereg_mr.key) >> QHCA_KEY_INDEX_SHIFT;
        if (idx >= gk_max[GK_MR]) {
            return;
        }
        s = &g->obj[GK_MR][idx];
    } else if (op == QHCA_CMD_RESIZE_SRQ) {
        idx = le32_to_cpu(c->resize_srq.srqn);
        if (idx >= gk_max[GK_SRQ]) {
            return;
        }
        s = &g->obj[GK_SRQ][idx];
    } else {
        idx = le32_to_cpu(c->resize_cq.cqn);
        if (idx >= gk_max[GK_CQ]) {
            return;
        }
        s = &g->obj[GK_CQ][idx];
    }
    set_revoke(g, s);
    set_init(s);
    if (g->pending.pages) {
        g_array_append_vals(s->pages, g->pending.pages->data,
                            g->pending.pages->len);
    }
    set_apply(g, s, 1);
}

/* The completion of the command read by command_read() is in RAM */
static void command_done(HxDev *d, const struct qhca_cmd_comp *comp)
{
    HxGrants *g = d->grants;
    uint16_t op = le16_to_cpu(g->cmd_copy.hdr.opcode);
    uint32_t result = le32_to_cpu(comp->result);
    bool create;
    int kind = cmd_kind(op, &create);

    g->cmd_valid = false;
    set_revoke(g, &g->cmd);
    if (le16_to_cpu(comp->status) != QHCA_CMD_OK) {
        goto out;
    }
    if (op == QHCA_CMD_REREG_MR || op == QHCA_CMD_RESIZE_CQ ||
        op == QHCA_CMD_RESIZE_SRQ) {
        object_moved(g, op);
        goto out;
    }
    if (kind < 0) {
        goto out;
    }
    if (!create) {
        result = le32_to_cpu(g->cmd_copy.obj.handle);
    }
    if (kind == GK_MR) {
        result >>= QHCA_KEY_INDEX_SHIFT;
    }
    if (result >= gk_max[kind]) {
        goto out;
    }
    set_revoke(g, &g->obj[kind][result]);
    if (kind == GK_QP) {
        forget_sq(g, result);
    }
    if (!create) {
        goto out;
    }
    set_init(&g->obj[kind][result]);
    if (g->pending.pages) {
        g_array_append_vals(g->obj[kind][result].pages,
                            g->pending.pages->data, g->pending.pages->len);
    }
    set_apply(g, &g->obj[kind][result], 1);
    if (kind == GK_QP) {
        SqInfo *sq = &g->sq[result];

        set_init(&sq->pages);
        if (g->pending_sq.pages) {
            g_array_append_vals(sq->pages.pages, g->pending_sq.pages->data,
                                g->pending_sq.pages->len);
        }
        sq->stride_log = g->pending_sq_stride;
        g_array_append_val(g->live_qps, result);
    }
out:
    set_free(&g->pending);
    set_free(&g->pending_sq);
}

/* Is @addr the start of a send WQE slot of some QP? */
static bool sq_slot(HxGrants *g, uint64_t addr)
{
    uint32_t pg = addr >> QHCA_PAGE_SHIFT;
    unsigned i, j;

    for (i = 0; i < g->live_qps->len; i++) {
        SqInfo *sq = &g->sq[g_array_index(g->live_qps, uint32_t, i)];

        if (!sq->pages.pages || sq->stride_log < 6 || sq->stride_log > 12 ||
            (addr & ((1u << sq->stride_log) - 1))) {
            continue;
        }
        for (j = 0; j < sq->pages.pages->len; j++) {
            if (g_array_index(sq->pages.pages, uint32_t, j) == pg) {
                return true;
            }
        }
    }
    return false;
}

/* A REG_MR work request: its list and the pages it names, for the MR */
static void reg_mr_wqe(HxDev *d, const struct qhca_send_wqe *w)
{
    HxGrants *g = d->grants;
    uint32_t idx = le32_to_cpu(w->reg.key) >> QHCA_KEY_INDEX_SHIFT;
    struct qhca_pbl_desc m = {
        .pbl_addr = w->reg.pbl_addr,
        .num_pages = w->reg.num_pages,
        .levels = 1,
        .page_shift = w->reg.page_shift,
    };

    if (idx >= QHCA_MAX_MR) {
        return;
    }
    build_begin(g);
    build_pbl(d, &m, true, true);
    build_end(g, &g->obj[GK_MR][idx], true);
}

static uint64_t ring_bytes(HxDev *d, int i, uint32_t esize)
{
    return (uint64_t)esize << MIN(d->lat_log[i], 16);
}

void hx_grants_dma_read(HxDev *d, uint64_t addr, const void *buf,
                        uint64_t len)
{
    HxGrants *g = d->grants;

    if (len == QHCA_CMD_SIZE && addr >= d->lat_base[0] &&
        addr - d->lat_base[0] < ring_bytes(d, 0, QHCA_CMD_SIZE)) {
        struct qhca_cmd c;

        memcpy(&c, buf, sizeof(c));
        command_read(d, &c);
        return;
    }
    /* a read of a whole WQE (or more) at the start of an SQ slot */
    if (len >= sizeof(struct qhca_send_wqe) &&
        *(const uint8_t *)buf == QHCA_WQE_REG_MR && sq_slot(g, addr)) {
        struct qhca_send_wqe w;

        memcpy(&w, buf, sizeof(w));
        reg_mr_wqe(d, &w);
    }
}

void hx_grants_dma_write(HxDev *d, uint64_t addr, const void *buf,
                         uint64_t len)
{
    HxGrants *g = d->grants;
    uint64_t base = d->lat_base[1];
    uint64_t owner = offsetof(struct qhca_cmd_comp, owner);
    uint64_t e;
    struct qhca_cmd_comp comp;

    (void)buf;
    if (!g->cmd_valid || addr + len <= base ||
        addr >= base + ring_bytes(d, 1, QHCA_CMD_COMP_SIZE)) {
        return;
    }
    /* the entry whose owner byte this write covers */
    e = (MAX(addr, base) - base) / QHCA_CMD_COMP_SIZE;
    for (; base + e * QHCA_CMD_COMP_SIZE < addr + len; e++) {
        uint64_t ea = base + e * QHCA_CMD_COMP_SIZE;

        if (ea + owner < addr || ea + owner >= addr + len) {
            continue;
        }
        hx_mem_read(d, ea, &comp, sizeof(comp));
        if (comp.cookie == g->cmd_copy.hdr.cookie &&
            comp.opcode == (le16_to_cpu(g->cmd_copy.hdr.opcode) & 0xff)) {
            command_done(d, &comp);
            return;
        }
    }
}
