/*
 * Operations of the qhca fuzz target (the input format: qhca-fuzz.c) that
 * move memory under the device: REREG_MR of an MR, RESIZE_CQ and
 * RESIZE_SRQ: REREG and RESIZE.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "harness.h"
#include "qhca-fuzz.h"

/*
 * Page lists of REREG and RESIZE: with val bit 15, num_pages = val & 0x3ff;
 * with bit 14, page_shift = 12 + (val & 31)
 */
static void desc_mutate(struct qhca_pbl_desc *m, uint16_t val)
{
    if (val & 0x8000) {
        m->num_pages = cpu_to_le32(val & 0x3ff);
    }
    if (val & 0x4000) {
        m->page_shift = 12 + (val & 31);
    }
}

/*
 * REREG_MR of key (key_sel()) with what, pd (0 the driver's, else raw),
 * access and, for a new translation, iova (the MR's iova + iova), length
 * and memory mem % 8: 0 new pages, 1 the MR's own pages, 2 the ring area
 * (other objects' memory), 3 the command queue's pages, 4 QHCA_MR_PHYS
 * (iova guest-physical), 5 a page list where there is no RAM, 6 BAR0 and
 * BAR2, 7 the MR's pages by a two-level list; desc_mutate() with val.
 * The driver's MR moves with a good one (its iova, length, pages)
 */
void op_rereg(Fz *f)
{
    static uint64_t pages[QHCA_PBL_ENTRIES];
    FzRereg a;
    struct qhca_cmd_rereg_mr r = { 0 };
    HxDev *d;
    HxMr *mr;
    uint64_t iova, length, span, mem = 0;
    uint32_t n, i;
    int st;

    d = take_dev_up(f, &a, sizeof(a));
    if (!d) {
        return;
    }
    mr = &d->drv.mr;
    iova = mr->iova + le32_to_cpu(a.iova);
    length = le32_to_cpu(a.length);
    span = (iova & (QHCA_PAGE_SIZE - 1)) + MIN(length, 2u << 20);
    n = MIN(DIV_ROUND_UP(span, QHCA_PAGE_SIZE), QHCA_PBL_ENTRIES);
    switch (a.mem % 8) {
    case 0:
        mem = hx_alloc_data(d, (uint64_t)n * QHCA_PAGE_SIZE);
        n = mem ? n : 0;
        break;
    case 1:
    case 7:
        mem = mr->mem;
        break;
    case 2:
        mem = HX_RING_BASE;
        break;
    case 4:
        iova = le32_to_cpu(a.iova);
        r.mr_flags = cpu_to_le32(QHCA_MR_PHYS);
        mem = iova;
        break;
    }
    for (i = 0; i < n; i++) {
        switch (a.mem % 8) {
        case 3:
        case 6:
            pages[i] = hostile_page(a.mem % 8 == 6, i);
            break;
        default:
            pages[i] = mem + (uint64_t)i * QHCA_PAGE_SIZE;
            break;
        }
    }
    if (a.mem % 8 != 4) {
        r.mem = hx_pbl(d, pages, n, QHCA_PAGE_SHIFT);
    }
    if (a.mem % 8 == 5) {
        r.mem.pbl_addr = cpu_to_le64(0xdead00000000ULL);
    } else if (a.mem % 8 == 7) {
        uint64_t l2 = le64_to_cpu(r.mem.pbl_addr);

        r.mem = hx_pbl(d, &l2, 1, QHCA_PAGE_SHIFT);
        r.mem.num_pages = cpu_to_le32(n);
        r.mem.levels = 2;
    }
    desc_mutate(&r.mem, le16_to_cpu(a.val));
    r.key = cpu_to_le32(key_sel(d, a.key));
    r.what = cpu_to_le32(a.what);
    r.pdn = cpu_to_le32(a.pd ? a.pd : d->drv.pdn);
    r.access = cpu_to_le32(a.access);
    r.iova = cpu_to_le64(iova);
    r.length = cpu_to_le64(length);
    st = hx_cmd(d, QHCA_CMD_REREG_MR, &r, sizeof(r), NULL);
    status_check("REREG_MR", d, st, a.status);
    if (st == QHCA_CMD_OK && (a.what & QHCA_REREG_TRANS) &&
        le32_to_cpu(r.key) == mr->key) {
        mr->iova = iova;
        mr->len = MAX(length, 1);
        mr->mem = n && pages[0] < HX_RAM_SIZE ? pages[0] : mr->mem;
    }
}

/*
 * RESIZE_CQ of cq % 4 (0 the driver's CQ, 1 the next CQ number, the first
 * one CMD makes, 2 arg, 3 none) to 2^log entries in mem % 8: 0 a new ring,
 * 1 its page list where there is no RAM, 2 the MR's pages, 3 the CQ's
 * own ring's pages, 4 a new ring and arg & 0x7f pages, 5 a new ring with
 * page shift 12 + arg % 20, 6 BAR0 and BAR2 (arg & 1: pages where there
 * is no RAM), 7 the command queue's pages.  A good resize of the driver's
 * CQ moves the driver to the new ring at index 0.  With cq & 4 the same
 * for RESIZE_SRQ of the driver's SRQ (the next SRQ number, arg, none) and
 * its ring; cq & 8 sets a reserved byte; a good resize of the driver's SRQ
 * moves the driver to the new ring at the same producer index
 */
void op_resize(Fz *f)
{
    FzResize a;
    struct qhca_cmd_resize_cq r = { 0 };
    struct qhca_cmd_resize_srq rs = { 0 };
    struct qhca_pbl_desc desc;
    uint64_t pages[HX_RING_MAX_PAGES], mem = 0;
    HxDev *d;
    HxRing *old, nr = { 0 };
    uint32_t arg, n, i, result = 0, shift, num, own, stride_log;
    bool srq;
    int st;

    d = take_dev_up(f, &a, sizeof(a));
    if (!d) {
        return;
    }
    srq = a.cq & 4;
    old = srq ? &d->drv.srq : &d->drv.cq;
    own = srq ? d->drv.srqn : d->drv.cqn;
    stride_log = srq ? d->drv.srq.stride_log : __builtin_ctz(QHCA_CQE_SIZE);
    arg = le32_to_cpu(a.arg);
    switch (a.cq % 4) {
    case 0:
        num = own;
        break;
    case 1:
        num = own + 1;
        break;
    case 2:
        num = arg;
        break;
    default:
        num = 0;
        break;
    }
    n = DIV_ROUND_UP(1ULL << (stride_log + MIN(a.log, 15)), QHCA_PAGE_SIZE);
    n = MIN(n, HX_RING_MAX_PAGES);
    if (a.mem % 8 <= 1 || a.mem % 8 == 4 || a.mem % 8 == 5) {
        mem = hx_alloc_ring_pages(d, n);
        n = mem ? n : 0;
    }
    for (i = 0; i < n; i++) {
        switch (a.mem % 8) {
        case 2:
            /* zeroed first, as a driver makes a ring */
            pages[i] = d->drv.mr.mem + (uint64_t)i * QHCA_PAGE_SIZE;
            hx_mem_fill(d, pages[i], 0, QHCA_PAGE_SIZE);
            break;
        case 3:
            pages[i] = old->npages ? old->page[i % old->npages] : 0;
            break;
        case 6:
            pages[i] = (arg & 1) ? 0xdead00000000ULL + i * QHCA_PAGE_SIZE :
                       hostile_page(true, i);
            break;
        case 7:
            pages[i] = hostile_page(false, i);
            break;
        default:
            pages[i] = mem + (uint64_t)(n - 1 - i) * QHCA_PAGE_SIZE;
            break;
        }
    }
    desc = hx_pbl(d, pages, n, QHCA_PAGE_SHIFT);
    switch (a.mem % 8) {
    case 1:
        desc.pbl_addr = cpu_to_le64(0xdead00000000ULL);
        break;
    case 4:
        desc.num_pages = cpu_to_le32(arg & 0x7f);
        break;
    case 5:
        desc.page_shift = 12 + arg % 20;
        break;
    }
    if (srq) {
        rs.srqn = cpu_to_le32(num);
        rs.log_depth = a.log;
        rs.reserved[2] = (a.cq & 8) ? 1 : 0;
        rs.mem = desc;
        st = hx_cmd(d, QHCA_CMD_RESIZE_SRQ, &rs, sizeof(rs), &result);
        status_check("RESIZE_SRQ", d, st, a.status);
    } else {
        r.cqn = cpu_to_le32(num);
        r.log_depth = a.log;
        r.mem = desc;
        st = hx_cmd(d, QHCA_CMD_RESIZE_CQ, &r, sizeof(r), &result);
        status_check("RESIZE_CQ", d, st, a.status);
    }
    if (st != QHCA_CMD_OK || num != own) {
        return;
    }
    if (result > 1u << MIN(a.log, 15)) {
        strict_fail("%s on device %c: %u entries carried to a ring of %u",
                    srq ? "RESIZE_SRQ" : "RESIZE_CQ", d->name, result,
                    1u << MIN(a.log, 15));
    }
    /* the ring as the device sees it, in 4 KiB pages */
    shift = desc.page_shift >= 12 && desc.page_shift <= 31 ?
            desc.page_shift - 12 : 0;
    nr.log = MIN(a.log, 15);
    nr.stride_log = stride_log;
    nr.npages = MIN(n, HX_RING_MAX_PAGES);
    for (i = 0; i < nr.npages; i++) {
        uint32_t e = i >> MIN(shift, 31);

        nr.page[i] = e < n ? pages[e] + (uint64_t)(i & ((1u << shift) - 1)) *
                     QHCA_PAGE_SIZE : 0;
    }
    if (a.mem % 8 == 1) {
        nr.npages = 0;
    }
    if (srq) {
        d->drv.srq = nr;
    } else {
        d->drv.cq = nr;
        d->drv.cq_ci = 0;
    }
}
