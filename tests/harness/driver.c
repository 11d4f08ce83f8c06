/*
 * The harness's mini-driver: brings a device up, posts commands and waits
 * for their completions, creates the objects of a connected pair, posts
 * WQEs and polls CQEs.  What it does to a device is the shared mini-driver
 * of the qtests (tests/common/qhca-drv.c), here over the harness's flat
 * RAM, its MMIO and its main loop; this file keeps the harness's own
 * layout (the queues at HX_CTRL_BASE, rings from HX_RING_BASE, MR memory
 * from HX_DATA_BASE) and its objects and connections.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "harness.h"
/*
 * The shared mini-driver, compiled with this file: scripts/fuzz builds the
 * harness from its own list of tests/harness/ files
 */
#include "../common/qhca-drv.c"

#define CMDQ_ADDR       (HX_CTRL_BASE + 0x0000)
#define CMDCQ_ADDR      (HX_CTRL_BASE + 0x1000)
#define AEQ_ADDR        (HX_CTRL_BASE + 0x2000)
#define RESP_ADDR       HX_RESP_ADDR
#define CMD_WAIT_STEPS  2000

const HxConnOpts hx_default_conn = {
    .mtu = 3, .timeout = 8, .retry_cnt = 7, .rnr_retry = 7,
    .min_rnr_timer = 1, .max_rd_atomic = 4,
    .access = QHCA_ACCESS_REMOTE_WRITE | QHCA_ACCESS_REMOTE_READ |
              QHCA_ACCESS_REMOTE_ATOMIC,
    .sq_psn = 0xfffff0,
};

/* The shared mini-driver's ops: the guest's accesses to its device */

static void drv_mem_read(void *dev, uint64_t addr, void *buf, uint64_t len)
{
    hx_mem_read(dev, addr, buf, len);
}

static void drv_mem_write(void *dev, uint64_t addr, const void *buf,
                          uint64_t len)
{
    hx_mem_write(dev, addr, buf, len);
}

static void drv_mem_set(void *dev, uint64_t addr, uint8_t val,
                        uint64_t len)
{
    hx_mem_fill(dev, addr, val, len);
}

static uint64_t drv_alloc_pages(void *dev, uint32_t n)
{
    return hx_alloc_ring_pages(dev, n);
}

static uint32_t drv_reg_read(void *dev, uint32_t off)
{
    return hx_mmio_read(dev, off);
}

static void drv_reg_write(void *dev, uint32_t off, uint32_t val)
{
    hx_mmio_write(dev, off, val);
}

static void drv_db_write(void *dev, uint32_t page, uint32_t off,
                         uint32_t val)
{
    hx_db_write(dev, page, off, val);
}

/* One step of the pair's main loop; false once it has nothing to do */
static bool drv_step(void *dev)
{
    HxDev *d = dev;

    return hx_step(d->pair);
}

void hx_gid_ipv4(uint8_t *gid, uint32_t ip)
{
    qhca_drv_gid_ipv4(gid, ip);
}

/* An AH on @d to @gid (IPv4-mapped or IPv6) at @mac, from GID @sgid */
static bool make_ah(HxDev *d, uint8_t sgid, const uint8_t *gid,
                    const uint8_t *mac, uint32_t *ahn)
{
    return qhca_drv_create_ah(&d->drv.qd, d->drv.pdn, sgid, gid, mac,
                              ahn) == QHCA_CMD_OK;
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
    return qhca_drv_pbl(&d->drv.qd, pages, n, shift);
}

/* A ring of 2^log entries of 2^stride_log bytes, its pages in reverse */
struct qhca_pbl_desc hx_ring_alloc(HxDev *d, HxRing *r, uint32_t log,
                                   uint32_t stride_log)
{
    return qhca_drv_ring_alloc(&d->drv.qd, r, log, stride_log);
}

uint64_t hx_ring_addr(const HxRing *r, uint32_t idx)
{
    return qhca_drv_ring_addr(r, idx);
}

/*
 * Every command the shared mini-driver posts for the harness: none while
 * the device is not up; the next command's header fields if the caller
 * set them (the fuzzer's header overrides)
 */
static bool drv_cmd_filter(void *dev, struct qhca_cmd *cmd)
{
    HxDrv *v = &((HxDev *)dev)->drv;

    if (!v->up) {
        return false;
    }
    if (v->hdr_override) {
        v->hdr_override = false;
        cmd->hdr.flags = cpu_to_le16(v->hdr_flags);
        cmd->hdr.resp_addr = cpu_to_le64(v->hdr_resp_addr);
        cmd->hdr.resp_len = cpu_to_le32(v->hdr_resp_len);
    }
    return true;
}

static const QhcaDrvOps hx_drv_ops = {
    .mem_read = drv_mem_read,
    .mem_write = drv_mem_write,
    .mem_set = drv_mem_set,
    .alloc_pages = drv_alloc_pages,
    .reg_read = drv_reg_read,
    .reg_write = drv_reg_write,
    .db_write = drv_db_write,
    .step = drv_step,
    .cmd_filter = drv_cmd_filter,
};

void hx_drv_init(HxDev *d)
{
    qhca_drv_init(&d->drv.qd, &hx_drv_ops, d, CMDQ_ADDR, CMDCQ_ADDR,
                  AEQ_ADDR, RESP_ADDR, CMD_WAIT_STEPS);
}

/* Post a command and wait for its completion: its status, -1 if none */
int hx_cmd(HxDev *d, uint16_t opcode, const void *payload, size_t len,
           uint32_t *result)
{
    return qhca_drv_cmd(&d->drv.qd, opcode, payload, len, result);
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

    memset(v, 0, sizeof(*v));
    hx_drv_init(d);
    v->ring_next = HX_RING_BASE;
    v->data_next = HX_DATA_BASE;
    v->up = qhca_drv_enable(&v->qd);
    return v->up;
}

int hx_modify_qp(HxDev *d, uint32_t qpn, uint32_t mask,
                 const struct qhca_qp_attr *a)
{
    return qhca_drv_modify_qp(&d->drv.qd, qpn, mask, a);
}

int hx_query_qp(HxDev *d, uint32_t qpn, struct qhca_qp_attr *a)
{
    return qhca_drv_query_qp(&d->drv.qd, qpn, a);
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
    QhcaDrv *q = &v->qd;
    struct qhca_pbl_desc mem;
    struct qhca_cmd_alloc_mr am = { 0 };
    uint8_t dgid[16];
    const uint32_t mr_len = 4u << 20;
    uint64_t pages[QHCA_PBL_ENTRIES];
    uint64_t l1[2];
    uint32_t i;

    if (!hx_drv_enable(d)) {
        return false;
    }
    hx_gid_ipv4(dgid, d->ip);
    if (qhca_drv_add_gid(q, HX_GID_IPV4, dgid) != QHCA_CMD_OK ||
        qhca_drv_add_gid(q, HX_GID_IPV6, d->ip6) != QHCA_CMD_OK ||
        !cmd_ok(d, QHCA_CMD_ALLOC_PD, NULL, 0, &v->pdn)) {
        return false;
    }
    mem = hx_ring_alloc(d, &v->eq, 6, 4);
    if (qhca_drv_create_eq(q, &mem, 6, 1, &v->eqn) != QHCA_CMD_OK) {
        return false;
    }
    mem = hx_ring_alloc(d, &v->cq, 8, 5);
    if (qhca_drv_create_cq(q, &mem, 8, v->eqn, &v->cqn) != QHCA_CMD_OK) {
        return false;
    }
    mem = hx_ring_alloc(d, &v->srq, 6, 7);
    if (qhca_drv_create_srq(q, &mem, v->pdn, 6, 7, &v->srqn) !=
        QHCA_CMD_OK) {
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
    mem = hx_pbl(d, l1, 2, QHCA_PAGE_SHIFT);
    mem.num_pages = cpu_to_le32(mr_len / QHCA_PAGE_SIZE);
    mem.levels = 2;
    if (qhca_drv_reg_mr(q, v->pdn, HX_ALL_ACCESS, v->mr.iova, mr_len, &mem,
                        &v->mr.key) != QHCA_CMD_OK) {
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
    struct qhca_qp_attr t = { 0 };

    a.qp_state = QHCA_QPS_RESET;
    if (hx_modify_qp(d, qp->qpn, M(STATE), &a) != QHCA_CMD_OK) {
        return false;
    }
    qp->sq_pi = qp->rq_pi = 0;
    t.access_flags = cpu_to_le32(o->access);
    t.path_mtu = o->mtu;
    t.dest_qpn = cpu_to_le32(pqp->qpn);
    t.rq_psn = cpu_to_le32((o->sq_psn + peer->idx) & 0xffffff);
    t.max_dest_rd_atomic = 4;
    t.min_rnr_timer = o->min_rnr_timer;
    t.hop_limit = 64;
    if (o->ipv6) {
        t.sgid_index = HX_GID_IPV6;
        t.traffic_class = o->tclass;
        t.flow_label = cpu_to_le32(o->flow_label & 0xfffff);
        memcpy(t.dgid, peer->ip6, 16);
    } else {
        t.sgid_index = HX_GID_IPV4;
        hx_gid_ipv4(t.dgid, peer->ip);
    }
    memcpy(t.dmac, peer->mac, 6);
    t.timeout = o->timeout;
    t.retry_cnt = o->retry_cnt;
    t.rnr_retry = o->rnr_retry;
    t.sq_psn = cpu_to_le32((o->sq_psn + d->idx) & 0xffffff);
    t.max_rd_atomic = o->max_rd_atomic;
    if (qhca_drv_qp_connect(&d->drv.qd, qp->qpn, qp->type != QHCA_QPT_UC,
                            &t) != QHCA_CMD_OK) {
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
    if (qhca_drv_qp_ud_up(&d->drv.qd, qp->qpn, HX_QKEY, 0x100, true) !=
        QHCA_CMD_OK) {
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

HxQp *hx_drv_make_rc_pair(HxPair *p, unsigned slot)
{
    HxDev *a = &p->dev[0], *b = &p->dev[1];

    if (slot < HX_QP_SETUP || slot >= HX_MAX_QPS ||
        a->drv.qp[slot].valid || b->drv.qp[slot].valid ||
        !make_qp(a, slot, QHCA_QPT_RC, false) ||
        !make_qp(b, slot, QHCA_QPT_RC, false) ||
        !hx_connect_rc(a, &a->drv.qp[slot], b, &b->drv.qp[slot],
                       &hx_default_conn)) {
        return NULL;
    }
    return &a->drv.qp[slot];
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
    return qhca_drv_sge(m->iova + off, len, m->key);
}

/* A signaled send WQE of @opcode; the caller fills in the rest */
struct qhca_send_wqe hx_wqe(uint8_t opcode, uint64_t wr_id)
{
    return qhca_drv_wqe(opcode, wr_id);
}

void hx_ring_sq(HxDev *d, HxQp *qp, uint16_t pi)
{
    qhca_drv_db(&d->drv.qd, QHCA_DB_SQ, qp->qpn, pi);
}

void hx_ring_rq(HxDev *d, HxQp *qp, uint16_t pi)
{
    if (qp->srqn != QHCA_NO_SRQ) {
        qhca_drv_db(&d->drv.qd, QHCA_DB_SRQ, d->drv.srqn, pi);
    } else {
        qhca_drv_db(&d->drv.qd, QHCA_DB_RQ, qp->qpn, pi);
    }
}

void hx_post_send(HxDev *d, HxQp *qp, struct qhca_send_wqe *w,
                  const struct qhca_sge *sges, unsigned nsge,
                  const void *inl, uint32_t inl_len, bool ring)
{
    if (!qhca_drv_put_send(&d->drv.qd, &qp->sq, qp->sq_pi, w, sges, nsge,
                           inl, inl_len)) {
        return;
    }
    qp->sq_pi++;
    if (ring) {
        hx_ring_sq(d, qp, qp->sq_pi);
    }
}

void hx_post_recv(HxDev *d, HxQp *qp, uint64_t wr_id,
                  const struct qhca_sge *sges, unsigned nsge, bool ring)
{
    bool srq = qp->srqn != QHCA_NO_SRQ;
    uint16_t *pi = srq ? &d->drv.srq_pi : &qp->rq_pi;

    if (!qhca_drv_put_recv(&d->drv.qd, srq ? &d->drv.srq : &qp->rq, *pi,
                           wr_id, sges, nsge)) {
        return;
    }
    (*pi)++;
    if (ring) {
        hx_ring_rq(d, qp, *pi);
    }
}

/* Take the next CQE of the device's CQ, if the device wrote one */
bool hx_poll_cq(HxDev *d, struct qhca_cqe *cqe)
{
    HxDrv *v = &d->drv;

    if (!v->up || !qhca_drv_poll_cq(&v->qd, &v->cq, &v->cq_ci, v->cqn, cqe)) {
        return false;
    }
    v->cqe_log[v->cqe_count++ % HX_CQE_LOG] = *cqe;
    return true;
}

/* Consume CQEs and events, as an interrupt handler would, and re-arm */
void hx_poll_all(HxDev *d, unsigned max, unsigned arm)
{
    HxDrv *v = &d->drv;
    QhcaDrv *q = &v->qd;
    struct qhca_cqe cqe;
    unsigned n = 0;

    if (!v->up) {
        return;
    }
    while (n < max && hx_poll_cq(d, &cqe)) {
        n++;
    }
    while (qhca_drv_ring_ready(q, &v->eq, v->eq_ci,
                               offsetof(struct qhca_eqe, owner))) {
        v->eq_ci++;
    }
    qhca_drv_aeq_poll(q);
    if (arm & (HX_ARM_CQ | HX_ARM_CQ_SOLICITED)) {
        qhca_drv_db(q, (arm & HX_ARM_CQ) ? QHCA_DB_CQ_ARM :
                    QHCA_DB_CQ_ARM_SOLICITED, v->cqn, v->cq_ci);
    }
    qhca_drv_db(q, QHCA_DB_EQ, v->eqn | ((arm & HX_ARM_EQ) ?
                QHCA_DB_EQ_ARM : 0), v->eq_ci);
    hx_db_write(d, QHCA_KERNEL_DB_PAGE, QHCA_DB_AEQ,
                q->aeq_ci | ((arm & HX_ARM_AEQ) ? QHCA_DB_AEQ_ARM : 0));
    if (arm & HX_ARM_CMDCQ) {
        qhca_drv_arm_cmdcq(q);
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
