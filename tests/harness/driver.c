/*
 * The harness's mini-driver: brings a device up, posts commands and waits
 * for their completions, creates the objects of a connected pair, posts
 * WQEs and polls CQEs.  The same sequences as the qtest's helpers
 * (qtest/qhca-test.c), on the harness's flat RAM; every layout comes from
 * include/qhca_hw.h.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "harness.h"

#define CMDQ_ADDR       (HX_CTRL_BASE + 0x0000)
#define CMDCQ_ADDR      (HX_CTRL_BASE + 0x1000)
#define AEQ_ADDR        (HX_CTRL_BASE + 0x2000)
#define RESP_ADDR       HX_RESP_ADDR
#define CMDQ_LOG        3
#define CMDCQ_LOG       3
#define AEQ_LOG         4
#define CMD_WAIT_STEPS  2000

const HxConnOpts hx_default_conn = {
    .mtu = 3, .timeout = 8, .retry_cnt = 7, .rnr_retry = 7,
    .min_rnr_timer = 1, .max_rd_atomic = 4,
    .access = QHCA_ACCESS_REMOTE_WRITE | QHCA_ACCESS_REMOTE_READ |
              QHCA_ACCESS_REMOTE_ATOMIC,
    .sq_psn = 0xfffff0,
};

/* An IPv4 address as a GID: IPv4-mapped IPv6, ::ffff:a.b.c.d */
void hx_gid_ipv4(uint8_t *gid, uint32_t ip)
{
    memset(gid, 0, 16);
    gid[10] = gid[11] = 0xff;
    stl_be_p(&gid[12], ip);
}

/* An AH on @d to @gid (IPv4-mapped or IPv6) at @mac, from GID @sgid */
static bool make_ah(HxDev *d, uint8_t sgid, const uint8_t *gid,
                    const uint8_t *mac, uint32_t *ahn)
{
    struct qhca_cmd_create_ah ah = { 0 };

    ah.pdn = cpu_to_le32(d->drv.pdn);
    ah.sgid_index = sgid;
    ah.hop_limit = 64;
    memcpy(ah.dgid, gid, 16);
    memcpy(ah.dmac, mac, 6);
    return hx_cmd(d, QHCA_CMD_CREATE_AH, &ah, sizeof(ah), ahn) ==
           QHCA_CMD_OK;
}

uint64_t hx_alloc_ring_pages(HxDev *d, uint32_t n)
{
    uint64_t a = d->drv.ring_next;

    if (!n || n > (HX_RING_END - a) / QHCA_PAGE_SIZE) {
        return 0;
    }
    d->drv.ring_next += (uint64_t)n * QHCA_PAGE_SIZE;
    hx_mem_fill(d, a, 0, (uint64_t)n * QHCA_PAGE_SIZE);
    return a;
}

uint64_t hx_alloc_data(HxDev *d, uint64_t len)
{
    uint64_t a = d->drv.data_next;

    len = ROUND_UP(MAX(len, 1), QHCA_PAGE_SIZE);
    if (len > HX_DATA_END - a) {
        return 0;
    }
    d->drv.data_next += len;
    return a;
}

/* A one-level page list of @n pages (n <= 512) */
struct qhca_pbl_desc hx_pbl(HxDev *d, const uint64_t *pages, uint32_t n,
                            uint8_t shift)
{
    struct qhca_pbl_desc m = { 0 };
    uint64_t pbl = hx_alloc_ring_pages(d, 1);
    uint32_t i;

    for (i = 0; pbl && i < MIN(n, QHCA_PBL_ENTRIES); i++) {
        uint64_t le = cpu_to_le64(pages[i]);

        hx_mem_write(d, pbl + 8ULL * i, &le, 8);
    }
    m.pbl_addr = cpu_to_le64(pbl);
    m.num_pages = cpu_to_le32(n);
    m.levels = 1;
    m.page_shift = shift;
    return m;
}

/* A ring of 2^log entries of 2^stride_log bytes, its pages in reverse */
struct qhca_pbl_desc hx_ring_alloc(HxDev *d, HxRing *r, uint32_t log,
                                   uint32_t stride_log)
{
    uint64_t bytes = 1ULL << MIN(log + stride_log, 30);
    uint32_t n = MIN(DIV_ROUND_UP(bytes, QHCA_PAGE_SIZE), HX_RING_MAX_PAGES);
    uint64_t mem = hx_alloc_ring_pages(d, n);
    uint32_t i;

    memset(r, 0, sizeof(*r));
    r->log = log;
    r->stride_log = stride_log;
    r->npages = mem ? n : 0;
    for (i = 0; i < r->npages; i++) {
        r->page[i] = mem + (uint64_t)(n - 1 - i) * QHCA_PAGE_SIZE;
    }
    return hx_pbl(d, r->page, r->npages, QHCA_PAGE_SHIFT);
}

uint64_t hx_ring_addr(const HxRing *r, uint32_t idx)
{
    uint64_t off = (uint64_t)(idx & ((1u << r->log) - 1)) << r->stride_log;
    uint64_t pg = off / QHCA_PAGE_SIZE;

    if (pg >= r->npages) {
        return 0;
    }
    return r->page[pg] + off % QHCA_PAGE_SIZE;
}

/* Has the device written entry @ci of a ring whose owner byte is at @off? */
static bool entry_ready(HxDev *d, uint64_t addr, uint32_t log, uint16_t ci,
                        uint32_t owner_off)
{
    uint8_t owner = 0;

    hx_mem_read(d, addr + owner_off, &owner, 1);
    return (owner & QHCA_OWNER_BIT) == !((ci >> log) & 1);
}

/* Post a command and wait for its completion: its status, -1 if none */
int hx_cmd(HxDev *d, uint16_t opcode, const void *payload, size_t len,
           uint32_t *result)
{
    HxDrv *v = &d->drv;
    struct qhca_cmd cmd;
    struct qhca_cmd_comp comp;
    uint64_t caddr;
    unsigned i;

    if (!v->up || len > sizeof(cmd.raw)) {
        return -1;
    }
    memset(&cmd, 0, sizeof(cmd));
    cmd.hdr.opcode = cpu_to_le16(opcode);
    cmd.hdr.cookie = cpu_to_le32(++v->cookie);
    cmd.hdr.resp_addr = cpu_to_le64(RESP_ADDR);
    cmd.hdr.resp_len = cpu_to_le32(256);
    if (v->hdr_override) {
        v->hdr_override = false;
        cmd.hdr.flags = cpu_to_le16(v->hdr_flags);
        cmd.hdr.resp_addr = cpu_to_le64(v->hdr_resp_addr);
        cmd.hdr.resp_len = cpu_to_le32(v->hdr_resp_len);
    }
    if (len) {
        memcpy(cmd.raw, payload, len);
    }
    hx_mem_write(d, CMDQ_ADDR + (v->cmdq_pi & ((1 << CMDQ_LOG) - 1)) *
                 QHCA_CMD_SIZE, &cmd, sizeof(cmd));
    v->cmdq_pi++;
    hx_db_write(d, QHCA_KERNEL_DB_PAGE, QHCA_DB_CMDQ, v->cmdq_pi);

    caddr = CMDCQ_ADDR + (v->cmdcq_ci & ((1 << CMDCQ_LOG) - 1)) *
            QHCA_CMD_COMP_SIZE;
    for (i = 0; i < CMD_WAIT_STEPS; i++) {
        if (entry_ready(d, caddr, CMDCQ_LOG, v->cmdcq_ci,
                        offsetof(struct qhca_cmd_comp, owner))) {
            break;
        }
        if (!hx_step(d->pair)) {
            break;
        }
    }
    if (!entry_ready(d, caddr, CMDCQ_LOG, v->cmdcq_ci,
                     offsetof(struct qhca_cmd_comp, owner))) {
        return -1;
    }
    hx_mem_read(d, caddr, &comp, sizeof(comp));
    v->cmdcq_ci++;
    hx_db_write(d, QHCA_KERNEL_DB_PAGE, QHCA_DB_CMDCQ,
                v->cmdcq_ci | (v->arm_cmdcq ? QHCA_DB_CMDCQ_ARM : 0));
    if (le32_to_cpu(comp.cookie) != v->cookie) {
        return -1;
    }
    if (result) {
        *result = le32_to_cpu(comp.result);
    }
    return le16_to_cpu(comp.status);
}

static bool cmd_ok(HxDev *d, uint16_t opcode, const void *payload,
                   size_t len, uint32_t *result)
{
    return hx_cmd(d, opcode, payload, len, result) == QHCA_CMD_OK;
}

/* Reset the device and bring it up with its queues at HX_CTRL_BASE */
bool hx_drv_enable(HxDev *d)
{
    HxDrv *v = &d->drv;

    hx_mmio_write(d, QHCA_REG_CTRL, QHCA_CTRL_RESET);
    memset(v, 0, sizeof(*v));
    v->ring_next = HX_RING_BASE;
    v->data_next = HX_DATA_BASE;
    hx_mem_fill(d, HX_CTRL_BASE, 0, 4 * QHCA_PAGE_SIZE);
    hx_mmio_write(d, QHCA_REG_CMDQ_BASE_LO, CMDQ_ADDR);
    hx_mmio_write(d, QHCA_REG_CMDQ_BASE_HI, 0);
    hx_mmio_write(d, QHCA_REG_CMDQ_LOG_DEPTH, CMDQ_LOG);
    hx_mmio_write(d, QHCA_REG_CMDCQ_BASE_LO, CMDCQ_ADDR);
    hx_mmio_write(d, QHCA_REG_CMDCQ_BASE_HI, 0);
    hx_mmio_write(d, QHCA_REG_CMDCQ_LOG_DEPTH, CMDCQ_LOG);
    hx_mmio_write(d, QHCA_REG_AEQ_BASE_LO, AEQ_ADDR);
    hx_mmio_write(d, QHCA_REG_AEQ_BASE_HI, 0);
    hx_mmio_write(d, QHCA_REG_AEQ_LOG_DEPTH, AEQ_LOG);
    hx_mmio_write(d, QHCA_REG_CTRL, QHCA_CTRL_ENABLE);
    v->up = hx_mmio_read(d, QHCA_REG_STATUS) == QHCA_STATUS_READY;
    return v->up;
}

int hx_modify_qp(HxDev *d, uint32_t qpn, uint32_t mask,
                 const struct qhca_qp_attr *a)
{
    struct qhca_cmd_modify_qp m = { 0 };

    m.qpn = cpu_to_le32(qpn);
    m.attr_mask = cpu_to_le32(mask);
    m.attr = *a;
    return hx_cmd(d, QHCA_CMD_MODIFY_QP, &m, sizeof(m), NULL);
}

int hx_query_qp(HxDev *d, uint32_t qpn, struct qhca_qp_attr *a)
{
    struct qhca_cmd_obj o = { .handle = cpu_to_le32(qpn) };
    int st = hx_cmd(d, QHCA_CMD_QUERY_QP, &o, sizeof(o), NULL);

    if (st == QHCA_CMD_OK) {
        hx_mem_read(d, RESP_ADDR, a, sizeof(*a));
    }
    return st;
}

HxQp *hx_drv_qp(HxDev *d, unsigned sel)
{
    HxQp *qp = &d->drv.qp[sel % HX_MAX_QPS];

    if (!qp->valid) {
        qp = &d->drv.qp[sel % 3];
    }
    return qp->valid ? qp : NULL;
}

/* Remember a QP created by a CREATE_QP command the caller posted */
void hx_drv_qp_add(HxDev *d, const struct qhca_cmd_create_qp *q,
                   uint32_t qpn, const HxRing *sq, const HxRing *rq)
{
    unsigned i;

    for (i = 0; i < HX_MAX_QPS; i++) {
        HxQp *qp = &d->drv.qp[i];

        if (!qp->valid || qp->qpn == qpn) {
            memset(qp, 0, sizeof(*qp));
            qp->valid = true;
            qp->qpn = qpn;
            qp->type = q->type;
            qp->srqn = le32_to_cpu(q->srqn);
            qp->max_inline = le32_to_cpu(q->max_inline);
            qp->sq = *sq;
            qp->rq = *rq;
            return;
        }
    }
}

static bool create_qp(HxDev *d, HxQp *qp, uint8_t type, bool srq)
{
    struct qhca_cmd_create_qp q = { 0 };
    uint32_t qpn;

    memset(qp, 0, sizeof(*qp));
    q.type = type;
    q.sq_log_depth = 6;
    q.sq_log_stride = 8;        /* 256 bytes: 12 SGEs or 192 inline bytes */
    q.rq_log_depth = srq ? 0 : 6;
    q.rq_log_stride = 7;        /* 7 SGEs */
    q.pdn = cpu_to_le32(d->drv.pdn);
    q.send_cqn = cpu_to_le32(d->drv.cqn);
    q.recv_cqn = cpu_to_le32(d->drv.cqn);
    q.srqn = cpu_to_le32(srq ? d->drv.srqn : QHCA_NO_SRQ);
    q.max_inline = cpu_to_le32(192);
    q.sq = hx_ring_alloc(d, &qp->sq, 6, 8);
    if (!srq) {
        q.rq = hx_ring_alloc(d, &qp->rq, 6, 7);
    }
    if (!cmd_ok(d, QHCA_CMD_CREATE_QP, &q, sizeof(q), &qpn)) {
        return false;
    }
    qp->valid = true;
    qp->qpn = qpn;
    qp->type = type;
    qp->srqn = srq ? d->drv.srqn : QHCA_NO_SRQ;
    qp->max_inline = 192;
    return true;
}

static bool make_qp(HxDev *d, unsigned slot, uint8_t type, bool srq)
{
    return create_qp(d, &d->drv.qp[slot], type, srq);
}

/*
 * Every device: GID 0 (its IPv4 address), GID 1 (its IPv6 address), a PD,
 * an EQ on vector 1, a CQ of 256 entries, an SRQ, a 4 MiB MR with every
 * access, a fast-register MR, an AH to the peer's IPv4 GID and one to its
 * IPv6 GID, and QPs: RC with its own RQ, RC on the SRQ, UD, UC
 * with its own RQ, UC on the SRQ
 */
bool hx_drv_setup(HxDev *d)
{
    HxDrv *v = &d->drv;
    HxDev *peer = &d->pair->dev[!d->idx];
    struct qhca_cmd_gid gid = { 0 };
    struct qhca_cmd_create_eq ce = { 0 };
    struct qhca_cmd_create_cq cc = { 0 };
    struct qhca_cmd_create_srq cs = { 0 };
    struct qhca_cmd_reg_mr rm = { 0 };
    struct qhca_cmd_alloc_mr am = { 0 };
    uint8_t dgid[16];
    const uint32_t mr_len = 4u << 20;
    uint64_t pages[QHCA_PBL_ENTRIES];
    uint64_t l1[2];
    uint32_t i;

    if (!hx_drv_enable(d)) {
        return false;
    }
    gid.index = cpu_to_le32(HX_GID_IPV4);
    hx_gid_ipv4(gid.gid, d->ip);
    if (!cmd_ok(d, QHCA_CMD_ADD_GID, &gid, sizeof(gid), NULL)) {
        return false;
    }
    gid.index = cpu_to_le32(HX_GID_IPV6);
    memcpy(gid.gid, d->ip6, 16);
    if (!cmd_ok(d, QHCA_CMD_ADD_GID, &gid, sizeof(gid), NULL) ||
        !cmd_ok(d, QHCA_CMD_ALLOC_PD, NULL, 0, &v->pdn)) {
        return false;
    }
    ce.mem = hx_ring_alloc(d, &v->eq, 6, 4);
    ce.log_depth = 6;
    ce.vector = cpu_to_le32(1);
    if (!cmd_ok(d, QHCA_CMD_CREATE_EQ, &ce, sizeof(ce), &v->eqn)) {
        return false;
    }
    cc.mem = hx_ring_alloc(d, &v->cq, 8, 5);
    cc.log_depth = 8;
    cc.eqn = cpu_to_le32(v->eqn);
    if (!cmd_ok(d, QHCA_CMD_CREATE_CQ, &cc, sizeof(cc), &v->cqn)) {
        return false;
    }
    cs.mem = hx_ring_alloc(d, &v->srq, 6, 7);
    cs.pdn = cpu_to_le32(v->pdn);
    cs.log_depth = 6;
    cs.log_stride = 7;
    if (!cmd_ok(d, QHCA_CMD_CREATE_SRQ, &cs, sizeof(cs), &v->srqn)) {
        return false;
    }

    /* 4 MiB at the start of the data area, a two-level page list */
    v->mr.iova = 0x40000000ULL + d->idx * 0x1000000ULL;
    v->mr.len = mr_len;
    v->mr.mem = hx_alloc_data(d, mr_len);
    for (i = 0; i < 2; i++) {
        uint32_t j;

        for (j = 0; j < QHCA_PBL_ENTRIES; j++) {
            pages[j] = v->mr.mem + ((uint64_t)i * QHCA_PBL_ENTRIES + j) *
                       QHCA_PAGE_SIZE;
        }
        l1[i] = le64_to_cpu(hx_pbl(d, pages, QHCA_PBL_ENTRIES,
                                   QHCA_PAGE_SHIFT).pbl_addr);
    }
    rm.mem = hx_pbl(d, l1, 2, QHCA_PAGE_SHIFT);
    rm.mem.num_pages = cpu_to_le32(mr_len / QHCA_PAGE_SIZE);
    rm.mem.levels = 2;
    rm.pdn = cpu_to_le32(v->pdn);
    rm.access = cpu_to_le32(HX_ALL_ACCESS);
    rm.iova = cpu_to_le64(v->mr.iova);
    rm.length = cpu_to_le64(mr_len);
    rm.key_variant = cpu_to_le32(0x11);
    if (!cmd_ok(d, QHCA_CMD_REG_MR, &rm, sizeof(rm), &v->mr.key)) {
        return false;
    }
    am.pdn = cpu_to_le32(v->pdn);
    am.max_pages = cpu_to_le32(16);
    am.key_variant = cpu_to_le32(1);
    if (!cmd_ok(d, QHCA_CMD_ALLOC_MR, &am, sizeof(am), &v->frmr_key)) {
        return false;
    }
    hx_gid_ipv4(dgid, peer->ip);
    if (!make_ah(d, HX_GID_IPV4, dgid, peer->mac, &v->ahn) ||
        !make_ah(d, HX_GID_IPV6, peer->ip6, peer->mac, &v->ahn6)) {
        return false;
    }
    return make_qp(d, HX_QP_RC, QHCA_QPT_RC, false) &&
           make_qp(d, HX_QP_RC_SRQ, QHCA_QPT_RC, true) &&
           make_qp(d, HX_QP_UD, QHCA_QPT_UD, false) &&
           make_qp(d, HX_QP_UC, QHCA_QPT_UC, false) &&
           make_qp(d, HX_QP_UC_SRQ, QHCA_QPT_UC, true);
}

#define M(x) QHCA_QP_ATTR_##x

/*
 * RESET -> INIT -> RTR -> RTS of one side of an RC or UC connection (UC
 * without RC's RNR, READ/atomic, timeout and retry attributes)
 */
static bool rc_connect_one(HxDev *d, HxQp *qp, HxDev *peer, HxQp *pqp,
                           const HxConnOpts *o)
{
    struct qhca_qp_attr a = { 0 };
    bool rc = qp->type != QHCA_QPT_UC;
    uint32_t rtr = rc ? M(MAX_DEST_RD_ATOMIC) | M(MIN_RNR_TIMER) : 0;
    uint32_t rts = rc ? M(TIMEOUT) | M(RETRY_CNT) | M(RNR_RETRY) |
                        M(MAX_QP_RD_ATOMIC) : 0;

    a.qp_state = QHCA_QPS_RESET;
    if (hx_modify_qp(d, qp->qpn, M(STATE), &a) != QHCA_CMD_OK) {
        return false;
    }
    qp->sq_pi = qp->rq_pi = 0;
    a.qp_state = QHCA_QPS_INIT;
    a.access_flags = cpu_to_le32(o->access);
    if (hx_modify_qp(d, qp->qpn, M(STATE) | M(PKEY_INDEX) | M(PORT) |
                     M(ACCESS_FLAGS), &a) != QHCA_CMD_OK) {
        return false;
    }
    a.qp_state = QHCA_QPS_RTR;
    a.path_mtu = o->mtu;
    a.dest_qpn = cpu_to_le32(pqp->qpn);
    a.rq_psn = cpu_to_le32((o->sq_psn + peer->idx) & 0xffffff);
    a.max_dest_rd_atomic = 4;
    a.min_rnr_timer = o->min_rnr_timer;
    a.hop_limit = 64;
    if (o->ipv6) {
        a.sgid_index = HX_GID_IPV6;
        a.traffic_class = o->tclass;
        a.flow_label = cpu_to_le32(o->flow_label & 0xfffff);
        memcpy(a.dgid, peer->ip6, 16);
    } else {
        a.sgid_index = HX_GID_IPV4;
        hx_gid_ipv4(a.dgid, peer->ip);
    }
    memcpy(a.dmac, peer->mac, 6);
    if (hx_modify_qp(d, qp->qpn, M(STATE) | M(AV) | M(PATH_MTU) |
                     M(DEST_QPN) | M(RQ_PSN) | rtr, &a) != QHCA_CMD_OK) {
        return false;
    }
    a.qp_state = QHCA_QPS_RTS;
    a.timeout = o->timeout;
    a.retry_cnt = o->retry_cnt;
    a.rnr_retry = o->rnr_retry;
    a.sq_psn = cpu_to_le32((o->sq_psn + d->idx) & 0xffffff);
    a.max_rd_atomic = o->max_rd_atomic;
    if (hx_modify_qp(d, qp->qpn, M(STATE) | M(SQ_PSN) | rts,
                     &a) != QHCA_CMD_OK) {
        return false;
    }
    qp->peer_qpn = pqp->qpn;
    qp->loopback = d == peer;
    return true;
}

bool hx_connect_rc(HxDev *a, HxQp *qa, HxDev *b, HxQp *qb,
                   const HxConnOpts *o)
{
    return rc_connect_one(a, qa, b, qb, o) && rc_connect_one(b, qb, a, qa, o);
}

/*
 * Loopback on one device: its RC QP with its own RQ and its RC QP on the
 * SRQ connected to each other (its own GID and MAC), and AHs to its own
 * IPv4 and IPv6 addresses that UD sends use from now on, to its own UD QP
 */
bool hx_connect_loopback(HxDev *d, const HxConnOpts *o)
{
    uint8_t gid[16];
    uint32_t ahn, ahn6;

    hx_gid_ipv4(gid, d->ip);
    if (!hx_connect_rc(d, &d->drv.qp[HX_QP_RC], d, &d->drv.qp[HX_QP_RC_SRQ],
                       o) ||
        !make_ah(d, HX_GID_IPV4, gid, d->mac, &ahn) ||
        !make_ah(d, HX_GID_IPV6, d->ip6, d->mac, &ahn6)) {
        return false;
    }
    d->drv.ahn = ahn;
    d->drv.ahn6 = ahn6;
    d->drv.qp[HX_QP_UD].peer_qpn = d->drv.qp[HX_QP_UD].qpn;
    d->drv.qp[HX_QP_UD].loopback = true;
    return true;
}

/* Loopback of UC on one device: its two UC QPs connected to each other */
bool hx_connect_uc_loopback(HxDev *d, const HxConnOpts *o)
{
    return hx_connect_rc(d, &d->drv.qp[HX_QP_UC], d,
                         &d->drv.qp[HX_QP_UC_SRQ], o);
}

static bool ud_to_rts(HxDev *d, HxQp *qp, HxQp *pqp)
{
    struct qhca_qp_attr a = { 0 };

    a.qp_state = QHCA_QPS_INIT;
    a.qkey = cpu_to_le32(HX_QKEY);
    if (hx_modify_qp(d, qp->qpn, M(STATE) | M(PKEY_INDEX) | M(PORT) |
                     M(QKEY), &a) != QHCA_CMD_OK) {
        return false;
    }
    a.qp_state = QHCA_QPS_RTR;
    if (hx_modify_qp(d, qp->qpn, M(STATE), &a) != QHCA_CMD_OK) {
        return false;
    }
    a.qp_state = QHCA_QPS_RTS;
    a.sq_psn = cpu_to_le32(0x100);
    if (hx_modify_qp(d, qp->qpn, M(STATE) | M(SQ_PSN), &a) != QHCA_CMD_OK) {
        return false;
    }
    qp->peer_qpn = pqp->qpn;
    qp->loopback = false;
    return true;
}

#undef M

/*
 * One more UD QP on @d (on the SRQ if @srq), as the setup makes them: with
 * @rts, in the first free slot of the driver's table after the setup's
 * QPs, taken to RTS with the Q_Key HX_QKEY, sending to the peer's UD QP
 * (NULL if the table is full or CREATE_QP failed); else outside the
 * table, left in RESET (NULL).  Its QPN in *qpn if CREATE_QP worked
 */
HxQp *hx_drv_make_ud(HxDev *d, bool srq, bool rts, uint32_t *qpn)
{
    static HxQp spare;
    HxDev *peer = &d->pair->dev[!d->idx];
    HxQp *qp = &spare;
    unsigned i;

    for (i = HX_QP_SETUP; rts && qp == &spare; i++) {
        if (i == HX_MAX_QPS) {
            return NULL;
        }
        if (!d->drv.qp[i].valid) {
            qp = &d->drv.qp[i];
        }
    }
    if (!create_qp(d, qp, QHCA_QPT_UD, srq)) {
        qp->valid = false;
        return NULL;
    }
    *qpn = qp->qpn;
    if (!rts) {
        qp->valid = false;
        return NULL;
    }
    ud_to_rts(d, qp, &peer->drv.qp[HX_QP_UD]);
    return qp;
}

/* Both devices set up, RC and UC QPs connected, UD QPs in RTS, events armed */
bool hx_pair_setup(HxPair *p)
{
    HxDev *a = &p->dev[0], *b = &p->dev[1];
    int i;

    if (!hx_drv_setup(a) || !hx_drv_setup(b) ||
        !hx_connect_rc(a, &a->drv.qp[HX_QP_RC], b, &b->drv.qp[HX_QP_RC],
                       &hx_default_conn) ||
        !hx_connect_rc(a, &a->drv.qp[HX_QP_RC_SRQ], b,
                       &b->drv.qp[HX_QP_RC_SRQ], &hx_default_conn) ||
        !hx_connect_rc(a, &a->drv.qp[HX_QP_UC], b, &b->drv.qp[HX_QP_UC],
                       &hx_default_conn) ||
        !hx_connect_rc(a, &a->drv.qp[HX_QP_UC_SRQ], b,
                       &b->drv.qp[HX_QP_UC_SRQ], &hx_default_conn) ||
        !ud_to_rts(a, &a->drv.qp[HX_QP_UD], &b->drv.qp[HX_QP_UD]) ||
        !ud_to_rts(b, &b->drv.qp[HX_QP_UD], &a->drv.qp[HX_QP_UD])) {
        return false;
    }
    for (i = 0; i < 2; i++) {
        hx_poll_all(&p->dev[i], 0, HX_ARM_CQ | HX_ARM_EQ | HX_ARM_AEQ);
    }
    return true;
}

struct qhca_sge hx_sge(const HxMr *m, uint64_t off, uint32_t len)
{
    struct qhca_sge s = {
        .addr = cpu_to_le64(m->iova + off),
        .length = cpu_to_le32(len),
        .lkey = cpu_to_le32(m->key),
    };

    return s;
}

/* A signaled send WQE of @opcode; the caller fills in the rest */
struct qhca_send_wqe hx_wqe(uint8_t opcode, uint64_t wr_id)
{
    struct qhca_send_wqe w = { 0 };

    w.opcode = opcode;
    w.flags = QHCA_WQE_SIGNALED;
    w.wr_id = cpu_to_le64(wr_id);
    return w;
}

void hx_ring_sq(HxDev *d, HxQp *qp, uint16_t pi)
{
    hx_db_write(d, QHCA_KERNEL_DB_PAGE, QHCA_DB_SQ,
                qp->qpn | (uint32_t)pi << QHCA_DB_IDX_SHIFT);
}

void hx_ring_rq(HxDev *d, HxQp *qp, uint16_t pi)
{
    if (qp->srqn != QHCA_NO_SRQ) {
        hx_db_write(d, QHCA_KERNEL_DB_PAGE, QHCA_DB_SRQ,
                    d->drv.srqn | (uint32_t)pi << QHCA_DB_IDX_SHIFT);
    } else {
        hx_db_write(d, QHCA_KERNEL_DB_PAGE, QHCA_DB_RQ,
                    qp->qpn | (uint32_t)pi << QHCA_DB_IDX_SHIFT);
    }
}

void hx_post_send(HxDev *d, HxQp *qp, struct qhca_send_wqe *w,
                  const struct qhca_sge *sges, unsigned nsge,
                  const void *inl, uint32_t inl_len, bool ring)
{
    uint64_t a = hx_ring_addr(&qp->sq, qp->sq_pi);
    uint32_t room = (1u << qp->sq.stride_log) - QHCA_SEND_WQE_HDR_SIZE;

    if (!a) {
        return;
    }
    if (inl) {
        w->flags |= QHCA_WQE_INLINE;
        w->inline_len = cpu_to_le32(inl_len);
        hx_mem_write(d, a + QHCA_SEND_WQE_HDR_SIZE, inl, MIN(inl_len, room));
    } else {
        w->num_sge = nsge;
        hx_mem_write(d, a + QHCA_SEND_WQE_HDR_SIZE, sges,
                     MIN(nsge * sizeof(*sges), room));
    }
    hx_mem_write(d, a, w, sizeof(*w));
    qp->sq_pi++;
    if (ring) {
        hx_ring_sq(d, qp, qp->sq_pi);
    }
}

void hx_post_recv(HxDev *d, HxQp *qp, uint64_t wr_id,
                  const struct qhca_sge *sges, unsigned nsge, bool ring)
{
    struct qhca_recv_wqe w = { .wr_id = cpu_to_le64(wr_id), .num_sge = nsge };
    bool srq = qp->srqn != QHCA_NO_SRQ;
    HxRing *r = srq ? &d->drv.srq : &qp->rq;
    uint16_t *pi = srq ? &d->drv.srq_pi : &qp->rq_pi;
    uint64_t a = hx_ring_addr(r, *pi);
    uint32_t room = (1u << r->stride_log) - QHCA_RECV_WQE_HDR_SIZE;

    if (!a) {
        return;
    }
    hx_mem_write(d, a + QHCA_RECV_WQE_HDR_SIZE, sges,
                 MIN(nsge * sizeof(*sges), room));
    hx_mem_write(d, a, &w, sizeof(w));
    (*pi)++;
    if (ring) {
        hx_ring_rq(d, qp, *pi);
    }
}

/* Take the next CQE of the device's CQ, if the device wrote one */
bool hx_poll_cq(HxDev *d, struct qhca_cqe *cqe)
{
    HxDrv *v = &d->drv;
    uint64_t a = hx_ring_addr(&v->cq, v->cq_ci);

    if (!v->up || !a ||
        !entry_ready(d, a, v->cq.log, v->cq_ci,
                     offsetof(struct qhca_cqe, owner))) {
        return false;
    }
    hx_mem_read(d, a, cqe, sizeof(*cqe));
    v->cq_ci++;
    hx_db_write(d, QHCA_KERNEL_DB_PAGE, QHCA_DB_CQ_CI,
                v->cqn | (uint32_t)v->cq_ci << QHCA_DB_IDX_SHIFT);
    v->cqe_log[v->cqe_count++ % HX_CQE_LOG] = *cqe;
    return true;
}

/* Consume CQEs and events, as an interrupt handler would, and re-arm */
void hx_poll_all(HxDev *d, unsigned max, unsigned arm)
{
    HxDrv *v = &d->drv;
    struct qhca_cqe cqe;
    unsigned n = 0;
    uint64_t a;

    if (!v->up) {
        return;
    }
    while (n < max && hx_poll_cq(d, &cqe)) {
        n++;
    }
    while ((a = hx_ring_addr(&v->eq, v->eq_ci)) &&
           entry_ready(d, a, v->eq.log, v->eq_ci,
                       offsetof(struct qhca_eqe, owner))) {
        v->eq_ci++;
    }
    while (entry_ready(d, AEQ_ADDR + (v->aeq_ci & ((1 << AEQ_LOG) - 1)) *
                       QHCA_EQE_SIZE, AEQ_LOG, v->aeq_ci,
                       offsetof(struct qhca_eqe, owner))) {
        v->aeq_ci++;
    }
    if (arm & (HX_ARM_CQ | HX_ARM_CQ_SOLICITED)) {
        hx_db_write(d, QHCA_KERNEL_DB_PAGE,
                    (arm & HX_ARM_CQ) ? QHCA_DB_CQ_ARM :
                    QHCA_DB_CQ_ARM_SOLICITED,
                    v->cqn | (uint32_t)v->cq_ci << QHCA_DB_IDX_SHIFT);
    }
    if (arm & HX_ARM_EQ) {
        hx_db_write(d, QHCA_KERNEL_DB_PAGE, QHCA_DB_EQ,
                    v->eqn | QHCA_DB_EQ_ARM |
                    (uint32_t)v->eq_ci << QHCA_DB_IDX_SHIFT);
    } else {
        hx_db_write(d, QHCA_KERNEL_DB_PAGE, QHCA_DB_EQ,
                    v->eqn | (uint32_t)v->eq_ci << QHCA_DB_IDX_SHIFT);
    }
    hx_db_write(d, QHCA_KERNEL_DB_PAGE, QHCA_DB_AEQ,
                v->aeq_ci | ((arm & HX_ARM_AEQ) ? QHCA_DB_AEQ_ARM : 0));
    if (arm & HX_ARM_CMDCQ) {
        v->arm_cmdcq = true;
        hx_db_write(d, QHCA_KERNEL_DB_PAGE, QHCA_DB_CMDCQ,
                    v->cmdcq_ci | QHCA_DB_CMDCQ_ARM);
    }
}

/*
 * Wait up to @max_ns of virtual time for the CQE of (qpn, wr_id), polling
 * the CQ meanwhile (earlier CQEs are kept in the driver's CQE log)
 */
bool hx_wait_cqe(HxDev *d, uint32_t qpn, uint64_t wr_id,
                 struct qhca_cqe *out, int64_t max_ns)
{
    HxPair *p = d->pair;
    int64_t end = p->now + max_ns;

    for (;;) {
        HxDrv *v = &d->drv;
        unsigned i, n = MIN(v->cqe_count, HX_CQE_LOG);
        struct qhca_cqe c;

        for (i = 0; i < n; i++) {
            c = v->cqe_log[(v->cqe_count - n + i) % HX_CQE_LOG];
            if (le32_to_cpu(c.qpn) == qpn && le64_to_cpu(c.wr_id) == wr_id) {
                *out = c;
                /* a CQE is matched once */
                v->cqe_log[(v->cqe_count - n + i) % HX_CQE_LOG].qpn =
                    cpu_to_le32(0xffffffff);
                return true;
            }
        }
        if (hx_poll_cq(d, &c)) {
            continue;
        }
        if (p->now >= end || p->stopped) {
            return false;
        }
        hx_settle(p, MIN(end - p->now, 1000000), 200);
        if (!hx_poll_cq(d, &c)) {
            int64_t before = p->now;

            hx_advance(p, MIN(end - p->now, 1000000));
            if (p->now == before) {
                return false;
            }
        }
    }
}
