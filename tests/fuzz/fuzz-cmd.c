/*
 * Operations of the qhca fuzz target (the input format: qhca-fuzz.c) on
 * the command queue: any command with a fixed-up or hostile payload and
 * header, and the query commands with hostile handles and response
 * buffers, checked byte for byte: CMD and QUERY.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "harness.h"
#include "qhca-fuzz.h"

void op_cmd(Fz *f)
{
    FzCmd a;
    struct qhca_cmd c;
    HxDev *d;
    const uint8_t *pl;
    size_t len;
    HxRing sq = { 0 }, rq = { 0 }, ring = { 0 };
    uint32_t result = 0;
    int st;

    if (!take(f, &a, sizeof(a))) {
        return;
    }
    d = dev_sel(a.dev);
    len = MIN(a.len, sizeof(c.raw));
    pl = take_var(f, &len);
    memset(&c, 0, sizeof(c));
    memcpy(c.raw, pl, len);

    if (a.fix & 2) {
        switch (a.opcode) {
        case QHCA_CMD_CREATE_CQ:
            c.create_cq.eqn = cpu_to_le32(d->drv.eqn);
            break;
        case QHCA_CMD_CREATE_QP:
            c.create_qp.pdn = cpu_to_le32(d->drv.pdn);
            c.create_qp.send_cqn = cpu_to_le32(d->drv.cqn);
            c.create_qp.recv_cqn = cpu_to_le32(d->drv.cqn);
            if (le32_to_cpu(c.create_qp.srqn) != QHCA_NO_SRQ) {
                c.create_qp.srqn = cpu_to_le32((c.create_qp.srqn & 1) ?
                                               d->drv.srqn : QHCA_NO_SRQ);
            }
            break;
        case QHCA_CMD_REG_MR:
            c.reg_mr.pdn = cpu_to_le32(d->drv.pdn);
            break;
        case QHCA_CMD_ALLOC_MR:
            c.alloc_mr.pdn = cpu_to_le32(d->drv.pdn);
            break;
        case QHCA_CMD_CREATE_SRQ:
            c.create_srq.pdn = cpu_to_le32(d->drv.pdn);
            break;
        case QHCA_CMD_CREATE_AH:
            c.create_ah.pdn = cpu_to_le32(d->drv.pdn);
            break;
        }
    }
    if (a.fix & 1) {
        switch (a.opcode) {
        case QHCA_CMD_CREATE_EQ:
            c.create_eq.mem = hx_ring_alloc(d, &ring,
                                            MIN(c.create_eq.log_depth, 15),
                                            4);
            break;
        case QHCA_CMD_CREATE_CQ:
            c.create_cq.mem = hx_ring_alloc(d, &ring,
                                            MIN(c.create_cq.log_depth, 15),
                                            5);
            break;
        case QHCA_CMD_CREATE_SRQ:
            c.create_srq.mem = hx_ring_alloc(d, &ring,
                                             MIN(c.create_srq.log_depth, 15),
                                             MIN(c.create_srq.log_stride,
                                                 11));
            break;
        case QHCA_CMD_CREATE_QP:
            c.create_qp.sq = hx_ring_alloc(d, &sq,
                                           MIN(c.create_qp.sq_log_depth, 15),
                                           MIN(c.create_qp.sq_log_stride,
                                               11));
            c.create_qp.rq = hx_ring_alloc(d, &rq,
                                           MIN(c.create_qp.rq_log_depth, 15),
                                           MIN(c.create_qp.rq_log_stride,
                                               11));
            break;
        case QHCA_CMD_REG_MR:
            if (!(le32_to_cpu(c.reg_mr.flags) & QHCA_MR_PHYS)) {
                uint64_t iova = le64_to_cpu(c.reg_mr.iova);
                uint64_t span = (iova & (QHCA_PAGE_SIZE - 1)) +
                                MIN(le64_to_cpu(c.reg_mr.length), 2u << 20);
                uint32_t n = MIN(DIV_ROUND_UP(span, QHCA_PAGE_SIZE),
                                 QHCA_PBL_ENTRIES);
                uint64_t mem = hx_alloc_data(d, (uint64_t)n *
                                             QHCA_PAGE_SIZE);
                uint64_t pages[QHCA_PBL_ENTRIES];
                uint32_t i;

                for (i = 0; i < n; i++) {
                    pages[i] = mem + (uint64_t)i * QHCA_PAGE_SIZE;
                }
                c.reg_mr.mem = hx_pbl(d, pages, mem ? n : 0, QHCA_PAGE_SHIFT);
            }
            break;
        }
    }
    if (a.fix & 0x1c) {
        static const struct {
            uint16_t flags;
            uint64_t addr;
            uint32_t len;
        } hdrs[8] = {
            { 0, HX_CTRL_BASE + 0x3000, 256 },
            { 1, HX_CTRL_BASE + 0x3000, 256 },
            { 0, HX_CTRL_BASE + 0x3000 + 4000, 256 },
            { 0, 0xdead00000000ULL, 256 },
            { 0, HX_CTRL_BASE + 0x3000, 0 },
            { 0, HX_CTRL_BASE, 128 },
            { 0x8000, 0, 0xffffffff },
            { 0, HX_RAM_SIZE - 8, 64 },
        };
        unsigned h = (a.fix >> 2) & 7;

        d->drv.hdr_override = true;
        d->drv.hdr_flags = hdrs[h].flags;
        d->drv.hdr_resp_addr = hdrs[h].addr;
        d->drv.hdr_resp_len = hdrs[h].len;
    }
    st = hx_cmd(d, a.opcode, c.raw, sizeof(c.raw), &result);
    if (st == QHCA_CMD_OK && (a.fix & 1) && a.opcode == QHCA_CMD_CREATE_QP) {
        hx_drv_qp_add(d, &c.create_qp, result, &sq, &rq);
    }
    if (st == QHCA_CMD_OK && a.opcode == QHCA_CMD_ALLOC_MW) {
        mw_key[d->idx] = result;
    }
}

/* The strict checks of a QUERY_STATS response read back from @buf */
static void query_stats_check(HxDev *d, uint32_t first, uint32_t result,
                              const uint8_t *buf, uint32_t n)
{
    uint32_t i;

    if (result != QHCA_STAT_NUM) {
        strict_fail("QUERY_STATS on device %c: result %u, expected %u",
                    d->name, result, QHCA_STAT_NUM);
    }
    for (i = 0; i < n / 8 && first + i < QHCA_STAT_NUM; i++) {
        uint64_t v = ldq_le_p(buf + 8 * i);
        uint64_t *seen = &stats_seen[d->idx][first + i];

        if (v < *seen) {
            strict_fail("QUERY_STATS on device %c: counter %u went back "
                        "from %" PRIu64 " to %" PRIu64, d->name, first + i,
                        *seen, v);
        }
        *seen = v;
    }
}

static void query_qp_state_check(HxDev *d, HxQp *qp, const uint8_t *buf,
                                 uint32_t n)
{
    struct qhca_qp_state_info s = { 0 };

    memcpy(&s, buf, MIN(n, sizeof(s)));
    if (n > offsetof(struct qhca_qp_state_info, type) &&
        s.type != qp->type) {
        strict_fail("QUERY_QP_STATE of QP %u on device %c: type %u, "
                    "expected %u", qp->qpn, d->name, s.type, qp->type);
    }
    if (n >= offsetof(struct qhca_qp_state_info, srtt_us) &&
        qp->type != QHCA_QPT_RC &&
        (s.inflight_bytes || s.rd_outstanding)) {
        strict_fail("QUERY_QP_STATE of QP %u on device %c (type %u): %u "
                    "bytes in flight, %u READs outstanding", qp->qpn,
                    d->name, qp->type, le32_to_cpu(s.inflight_bytes),
                    le32_to_cpu(s.rd_outstanding));
    }
}

/*
 * A query command with a hostile handle, first counter or response buffer;
 * in the driver's response page (filled with a canary first) the strict
 * checks see exactly what the device wrote
 */
void op_query(Fz *f)
{
    static const uint16_t opcodes[4] = {
        QHCA_CMD_QUERY_STATS, QHCA_CMD_QUERY_QP_STATE, QHCA_CMD_QUERY_CQ,
        QHCA_CMD_QUERY_SRQ,
    };
    const uint8_t canary = 0xa5;
    FzQuery a;
    struct qhca_cmd_obj o = { 0 };
    HxDev *d;
    HxQp *qp = NULL;
    uint8_t page[QHCA_PAGE_SIZE];
    uint32_t arg, len, size = 0, result = 0, off, i, n;
    uint64_t addr;
    int st;

    if (!take(f, &a, sizeof(a))) {
        return;
    }
    d = dev_sel(a.dev);
    if (!d->drv.up) {
        return;
    }
    arg = le32_to_cpu(a.arg);
    len = le32_to_cpu(a.len);
    off = le16_to_cpu(a.off);
    switch (a.which % 4) {
    case 0:
        o.handle = cpu_to_le32(arg);    /* struct qhca_cmd_query_stats */
        size = arg <= QHCA_STAT_NUM ? (QHCA_STAT_NUM - arg) * 8 : 0;
        break;
    case 1:
        if (arg < HX_MAX_QPS) {
            qp = hx_drv_qp(d, arg);
        }
        o.handle = cpu_to_le32(qp ? qp->qpn : arg);
        size = sizeof(struct qhca_qp_state_info);
        break;
    case 2:
        o.handle = cpu_to_le32(arg ? arg : d->drv.cqn);
        size = sizeof(struct qhca_cq_info);
        break;
    default:
        o.handle = cpu_to_le32(arg ? arg : d->drv.srqn);
        size = sizeof(struct qhca_srq_attr);
        break;
    }
    switch (a.resp % 8) {
    case 0:
        off %= QHCA_PAGE_SIZE;
        addr = HX_RESP_ADDR + off;
        hx_mem_fill(d, HX_RESP_ADDR, canary, QHCA_PAGE_SIZE);
        break;
    case 1:
        addr = HX_REG_BAR_ADDR + off % QHCA_REG_BAR_SIZE;
        break;
    case 2:
        addr = HX_DB_BAR_ADDR + off % QHCA_DB_BAR_SIZE;
        break;
    case 3:
        addr = 0xdead00000000ULL + off;
        break;
    case 4:
        addr = HX_RAM_SIZE - 1 - off % QHCA_PAGE_SIZE;
        break;
    case 5:
        addr = HX_CTRL_BASE + off % QHCA_PAGE_SIZE;
        break;
    case 6:
        addr = d->drv.cq.page[0] + off % QHCA_PAGE_SIZE;
        break;
    default:
        addr = d->drv.mr.mem + off % MAX(d->drv.mr.len, 1);
        break;
    }
    d->drv.hdr_override = true;
    d->drv.hdr_flags = 0;
    d->drv.hdr_resp_addr = addr;
    d->drv.hdr_resp_len = len;
    st = hx_cmd(d, opcodes[a.which % 4], &o, sizeof(o), &result);
    if (a.status != 0xff && st != a.status) {
        strict_fail("query %u (arg %u) on device %c: status %d, expected %u",
                    opcodes[a.which % 4], arg, d->name, st, a.status);
    }
    if (a.resp % 8) {
        return;
    }
    /* the response page: what the device wrote, and only that */
    n = st == QHCA_CMD_OK ? MIN(len, size) : 0;
    if (off + n > QHCA_PAGE_SIZE) {
        strict_fail("query %u (arg %u) on device %c: a response of %u "
                    "bytes at %u, across the page, accepted",
                    opcodes[a.which % 4], arg, d->name, n, off);
        n = QHCA_PAGE_SIZE - off;
    }
    hx_mem_read(d, HX_RESP_ADDR, page, sizeof(page));
    for (i = 0; i < QHCA_PAGE_SIZE; i++) {
        if ((i < off || i >= off + n) && page[i] != canary) {
            strict_fail("query %u (arg %u, len %u) on device %c, status "
                        "%d: byte %u of the response page written (the "
                        "response is %u bytes at %u)", opcodes[a.which % 4],
                        arg, len, d->name, st, i, n, off);
            break;
        }
    }
    if (st != QHCA_CMD_OK) {
        return;
    }
    if (a.which % 4 == 0) {
        query_stats_check(d, arg, result, page + off, n);
    } else if (a.which % 4 == 1 && qp) {
        query_qp_state_check(d, qp, page + off, n);
    }
}
