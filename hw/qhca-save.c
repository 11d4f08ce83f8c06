/*
 * qhca device logic: the device's saved state, for migration and snapshots
 * (docs/hardware.md, "Saved state").  The glue (qhca.c) saves the stream
 * qhca_core_save() writes as one buffer of its VMState and hands it back to
 * qhca_core_load() on the destination.
 *
 * The stream is a header (magic, version) and records, each of a type,
 * flags and a length: the registers and host queues, then the objects
 * (GIDs, EQs, PDs, CQs, SRQs, AHs, MRs and windows, QPs with their
 * transport state, multicast groups), the counters, and an end record.
 * Objects come after those they refer to.  A record flagged optional can
 * be left out, and a loader that does not know its type skips it: that is
 * how a later version adds state that an older one may do without, as
 * QEMU's VMState subsections do.  A record of a type the loader does not
 * know and not flagged optional, or a newer version, is refused by name.
 *
 * What can be recomputed is not saved: reference counts, windows counted by
 * their MR, the memory budget, the list of live QPs, frames received and
 * not processed, frames in flight (the transport sends again what the peer
 * has not acknowledged, from the WQEs in guest memory), the timer (re-armed
 * from the QPs' deadlines, which are on the virtual clock the migration
 * carries over).
 *
 * Loading treats the stream as hostile, as the guest's own input: every
 * index, key, length, address and reference is checked as the commands
 * check them, each object's memory is charged to the budget, and any
 * failure leaves the device reset (no object of a partial load survives)
 * with the reason for the error the migration fails with.
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
#include "qhca-cmd.h"
#include "qhca-qp.h"
#include "qhca-roce.h"
#include "trace.h"

#define QHCA_SAVE_MAGIC         0x53434851u     /* "QHCS" */
#define QHCA_SAVE_VERSION       1

/* Record types, in the order they come in a stream */
enum {
    REC_DEVICE = 1,
    REC_GID = 2,
    REC_EQ = 3,
    REC_PD = 4,
    REC_CQ = 5,
    REC_SRQ = 6,
    REC_AH = 7,
    REC_MR = 8,
    REC_QP = 9,
    REC_QP_CC = 10,             /* optional */
    REC_MCG = 11,
    REC_COUNTERS = 12,          /* optional */
    REC_END = 255,
};

#define REC_F_OPTIONAL          1

static const char *const rec_name[] = {
    [REC_DEVICE] = "device", [REC_GID] = "GID", [REC_EQ] = "EQ",
    [REC_PD] = "PD", [REC_CQ] = "CQ", [REC_SRQ] = "SRQ", [REC_AH] = "AH",
    [REC_MR] = "MR", [REC_QP] = "QP", [REC_QP_CC] = "QP congestion",
    [REC_MCG] = "multicast group", [REC_COUNTERS] = "counters",
};

#define QP_ATTR_KNOWN (QHCA_QP_ATTR_STATE | QHCA_QP_ATTR_CUR_STATE |       \
                       QHCA_QP_ATTR_EN_SQD_ASYNC | QHCA_QP_ATTR_ACCESS_FLAGS | \
                       QHCA_QP_ATTR_PKEY_INDEX | QHCA_QP_ATTR_PORT |        \
                       QHCA_QP_ATTR_QKEY | QHCA_QP_ATTR_AV |                \
                       QHCA_QP_ATTR_PATH_MTU | QHCA_QP_ATTR_TIMEOUT |       \
                       QHCA_QP_ATTR_RETRY_CNT | QHCA_QP_ATTR_RNR_RETRY |    \
                       QHCA_QP_ATTR_RQ_PSN | QHCA_QP_ATTR_MAX_QP_RD_ATOMIC | \
                       QHCA_QP_ATTR_MIN_RNR_TIMER | QHCA_QP_ATTR_SQ_PSN |   \
                       QHCA_QP_ATTR_MAX_DEST_RD_ATOMIC |                    \
                       QHCA_QP_ATTR_DEST_QPN)

/*
 * Saving
 */

static void save_hostq(QhcaStreamW *w, const QhcaHostQueue *q)
{
    qhca_w_u64(w, q->base);
    qhca_w_u8(w, q->log_depth);
    qhca_w_u16(w, q->pi);
    qhca_w_u16(w, q->ci);
    qhca_w_u8(w, q->armed);
}

static void save_pages(QhcaStreamW *w, const QhcaPages *p)
{
    uint32_t i;

    qhca_w_u8(w, p->shift);
    qhca_w_u32(w, p->addr ? p->count : 0);
    for (i = 0; p->addr && i < p->count; i++) {
        qhca_w_u64(w, p->addr[i]);
    }
}

static void save_ring(QhcaStreamW *w, const QhcaRing *r)
{
    qhca_w_u8(w, r->log_depth);
    qhca_w_u8(w, r->log_stride);
    qhca_w_u16(w, r->pi);
    qhca_w_u16(w, r->ci);
    save_pages(w, &r->mem);
}

static void save_device(const QhcaCore *c, QhcaStreamW *w)
{
    qhca_w_begin(w, REC_DEVICE, 0);
    qhca_w_bytes(w, c->mac, 6);
    qhca_w_u32(w, c->ctrl);
    qhca_w_u32(w, c->status);
    qhca_w_u32(w, c->fatal_code);
    save_hostq(w, &c->cmdq);
    save_hostq(w, &c->cmdcq);
    save_hostq(w, &c->aeq);
    qhca_w_u8(w, c->mw_variant);
    qhca_w_u16(w, c->ip_id);
    qhca_w_u8(w, c->link_was_up);
    qhca_w_u64(w, c->drop_rng);
    qhca_w_end(w);
}

static void save_mr(QhcaStreamW *w, uint32_t n, const QhcaMr *mr)
{
    qhca_w_begin(w, REC_MR, 0);
    qhca_w_u16(w, n);
    qhca_w_u32(w, mr->pdn);
    qhca_w_u32(w, mr->key);
    qhca_w_u32(w, mr->access);
    qhca_w_u8(w, mr->valid | mr->phys << 1 | mr->fast_reg << 2);
    qhca_w_u32(w, mr->max_pages);
    qhca_w_u64(w, mr->iova);
    qhca_w_u64(w, mr->length);
    qhca_w_u8(w, mr->mw_type);
    qhca_w_u32(w, mr->mw_mr_key);
    qhca_w_u32(w, mr->mw_qpn);
    save_pages(w, &mr->pages);
    qhca_w_end(w);
}

static void save_qp(QhcaStreamW *w, const QhcaQp *qp)
{
    qhca_w_begin(w, REC_QP, 0);
    qhca_w_u16(w, qp->qpn);
    qhca_w_u8(w, qp->type);
    qhca_w_u32(w, qp->pdn);
    qhca_w_u32(w, qp->send_cqn);
    qhca_w_u32(w, qp->recv_cqn);
    qhca_w_u32(w, qp->srqn);
    qhca_w_u32(w, qp->db_page);
    qhca_w_u32(w, qp->max_inline);
    qhca_w_u8(w, qp->sq_sig_all);
    save_ring(w, &qp->sq);
    qhca_w_u8(w, qp->rq.mem.addr != NULL);
    if (qp->rq.mem.addr) {
        save_ring(w, &qp->rq);
    }
    qhca_w_bytes(w, &qp->attr, sizeof(qp->attr));
    qhca_w_u32(w, qp->attr_set);
    qhca_qp_engine_save(qp, w);
    qhca_w_end(w);

    qhca_w_begin(w, REC_QP_CC, REC_F_OPTIONAL);
    qhca_w_u16(w, qp->qpn);
    qhca_qp_engine_save_cc(qp, w);
    qhca_w_end(w);
}

void qhca_core_save(const QhcaCore *c, GByteArray *out)
{
    QhcaStreamW w = { .buf = out };
    uint32_t i, nrec = 0;
    unsigned k;

    qhca_w_u32(&w, QHCA_SAVE_MAGIC);
    qhca_w_u16(&w, QHCA_SAVE_VERSION);
    qhca_w_u16(&w, 0);

    save_device(c, &w);
    nrec++;
    for (i = 0; i < QHCA_GID_TABLE_LEN; i++) {
        if (c->gid[i].valid) {
            qhca_w_begin(&w, REC_GID, 0);
            qhca_w_u8(&w, i);
            qhca_w_bytes(&w, c->gid[i].gid, 16);
            qhca_w_end(&w);
            nrec++;
        }
    }
    for (i = 0; i < QHCA_MAX_EQS; i++) {
        const QhcaEq *eq = c->eq[i];

        if (eq) {
            qhca_w_begin(&w, REC_EQ, 0);
            qhca_w_u16(&w, i);
            qhca_w_u32(&w, eq->vector);
            qhca_w_u8(&w, eq->armed);
            save_ring(&w, &eq->ring);
            qhca_w_end(&w);
            nrec++;
        }
    }
    for (i = 0; i < QHCA_MAX_PD; i++) {
        if (c->pd[i]) {
            qhca_w_begin(&w, REC_PD, 0);
            qhca_w_u16(&w, i);
            qhca_w_end(&w);
            nrec++;
        }
    }
    for (i = 0; i < QHCA_MAX_CQ; i++) {
        const QhcaCq *cq = c->cq[i];

        if (cq) {
            qhca_w_begin(&w, REC_CQ, 0);
            qhca_w_u16(&w, i);
            qhca_w_u32(&w, cq->eqn);
            qhca_w_u32(&w, cq->db_page);
            qhca_w_u8(&w, cq->arm);
            qhca_w_u8(&w, cq->error);
            save_ring(&w, &cq->ring);
            qhca_w_end(&w);
            nrec++;
        }
    }
    for (i = 0; i < QHCA_MAX_SRQ; i++) {
        const QhcaSrq *srq = c->srq[i];

        if (srq) {
            qhca_w_begin(&w, REC_SRQ, 0);
            qhca_w_u16(&w, i);
            qhca_w_u32(&w, srq->pdn);
            qhca_w_u32(&w, srq->db_page);
            qhca_w_u32(&w, srq->limit);
            save_ring(&w, &srq->ring);
            qhca_w_end(&w);
            nrec++;
        }
    }
    for (i = 0; i < QHCA_MAX_AH; i++) {
        const QhcaAh *ah = c->ah[i];

        if (ah) {
            qhca_w_begin(&w, REC_AH, 0);
            qhca_w_u16(&w, i);
            qhca_w_u32(&w, ah->pdn);
            qhca_w_u8(&w, ah->sgid_index);
            qhca_w_u8(&w, ah->hop_limit);
            qhca_w_u8(&w, ah->traffic_class);
            qhca_w_u32(&w, ah->flow_label);
            qhca_w_bytes(&w, ah->dmac, 6);
            qhca_w_bytes(&w, ah->dgid, 16);
            qhca_w_end(&w);
            nrec++;
        }
    }
    for (i = 0; i < QHCA_MAX_MR; i++) {
        if (c->mr[i]) {
            save_mr(&w, i, c->mr[i]);
            nrec++;
        }
    }
    for (i = 0; i < QHCA_MAX_QP; i++) {
        if (c->qp[i]) {
            save_qp(&w, c->qp[i]);
            nrec += 2;
        }
    }
    for (i = 0; i < QHCA_MAX_MCAST_GRP; i++) {
        const QhcaMcg *g = &c->mcg[i];

        if (g->nqp) {
            qhca_w_begin(&w, REC_MCG, 0);
            qhca_w_u8(&w, i);
            qhca_w_bytes(&w, g->gid, 16);
            qhca_w_bytes(&w, g->mac, 6);
            qhca_w_u8(&w, g->nqp);
            for (k = 0; k < g->nqp; k++) {
                qhca_w_u16(&w, g->qpn[k]);
            }
            qhca_w_end(&w);
            nrec++;
        }
    }
    qhca_w_begin(&w, REC_COUNTERS, REC_F_OPTIONAL);
    qhca_w_u32(&w, QHCA_STAT_NUM);
    for (k = 0; k < QHCA_STAT_NUM; k++) {
        qhca_w_u64(&w, qhca_core_stat(c, k));
    }
    qhca_w_end(&w);
    nrec++;
    /* the end: how many records came before it (a cut stream fails) */
    qhca_w_begin(&w, REC_END, 0);
    qhca_w_u32(&w, nrec);
    qhca_w_end(&w);
    trace_qhca_save(out->len, nrec);
}

/*
 * Loading
 */

static bool load_hostq(QhcaStreamR *r, QhcaHostQueue *q, uint32_t max_log,
                       const char *what)
{
    q->base = qhca_r_u64(r);
    q->log_depth = qhca_r_u8(r);
    q->pi = qhca_r_u16(r);
    q->ci = qhca_r_u16(r);
    q->armed = qhca_r_u8(r);
    if (!qhca_r_ok(r)) {
        return false;
    }
    if (q->log_depth > max_log || (q->armed & ~1) ||
        (uint16_t)(q->pi - q->ci) > (1u << q->log_depth)) {
        return qhca_r_fail(r, "bad %s registers (log depth %u, producer %u, "
                           "consumer %u)", what, q->log_depth, q->pi, q->ci);
    }
    return true;
}

/*
 * A page list of at least @min_bytes (if known: 0 takes the caller's
 * check afterwards); @may_be_empty: none at all is allowed
 */
static bool load_pages(QhcaCore *c, QhcaStreamR *r, QhcaPages *p,
                       uint64_t min_bytes, bool queue, bool may_be_empty)
{
    uint8_t shift = qhca_r_u8(r);
    uint32_t n = qhca_r_u32(r), i;
    uint64_t *addr;

    if (!qhca_r_ok(r)) {
        return false;
    }
    memset(p, 0, sizeof(*p));
    if (!n && may_be_empty) {
        return true;
    }
    /* never allocate for more entries than the record holds */
    if (n > QHCA_PBL_ENTRIES * QHCA_PBL_ENTRIES || n > (r->len - r->off) / 8) {
        return qhca_r_fail(r, "page list of %u pages is too long", n);
    }
    addr = g_new(uint64_t, MAX(n, 1));
    for (i = 0; i < n; i++) {
        addr[i] = qhca_r_u64(r);
    }
    if (!qhca_pages_restore(c, p, shift, n, addr, min_bytes, queue)) {
        return qhca_r_fail(r, "bad page list (%u pages of 2^%u bytes, %" PRIu64
                           " bytes wanted, %u of %u units of the budget "
                           "used)", n, shift, min_bytes, c->pages_used,
                           QHCA_PAGE_BUDGET);
    }
    return true;
}

/*
 * A ring; @own_pi: its producer index is the ring's (a QP's queues keep
 * theirs in the engine, which checks it)
 */
static bool load_ring(QhcaCore *c, QhcaStreamR *r, QhcaRing *ring,
                      uint32_t min_stride, uint32_t max_stride, bool own_pi)
{
    ring->log_depth = qhca_r_u8(r);
    ring->log_stride = qhca_r_u8(r);
    ring->pi = qhca_r_u16(r);
    ring->ci = qhca_r_u16(r);
    if (!qhca_r_ok(r)) {
        return false;
    }
    if (ring->log_depth < 1 || ring->log_depth > QHCA_MAX_QUEUE_LOG ||
        ring->log_stride < min_stride || ring->log_stride > max_stride ||
        (own_pi &&
         (uint16_t)(ring->pi - ring->ci) > (1u << ring->log_depth))) {
        return qhca_r_fail(r, "bad ring (log depth %u, log stride %u, "
                           "producer %u, consumer %u)", ring->log_depth,
                           ring->log_stride, ring->pi, ring->ci);
    }
    return load_pages(c, r, &ring->mem,
                      1ULL << (ring->log_depth + ring->log_stride), true,
                      false);
}

/* A free slot @n of a table of @size, from @first on */
static bool slot_ok(QhcaStreamR *r, void **table, uint32_t size,
                    uint32_t first, uint32_t n, const char *what)
{
    if (n < first || n >= size) {
        return qhca_r_fail(r, "%s %u does not exist on this device", what, n);
    }
    if (table[n]) {
        return qhca_r_fail(r, "%s %u comes twice", what, n);
    }
    return true;
}

static bool load_device(QhcaCore *c, QhcaStreamR *r)
{
    uint8_t mac[6];

    qhca_r_bytes(r, mac, 6);
    c->ctrl = qhca_r_u32(r);
    c->status = qhca_r_u32(r);
    c->fatal_code = qhca_r_u32(r);
    if (!load_hostq(r, &c->cmdq, QHCA_CMDQ_MAX_LOG_DEPTH, "command queue") ||
        !load_hostq(r, &c->cmdcq, QHCA_CMDCQ_MAX_LOG_DEPTH,
                    "command completion queue") ||
        !load_hostq(r, &c->aeq, QHCA_AEQ_MAX_LOG_DEPTH, "async event queue")) {
        return false;
    }
    c->mw_variant = qhca_r_u8(r);
    c->ip_id = qhca_r_u16(r);
    c->link_was_up = qhca_r_u8(r);
    c->drop_rng = qhca_r_u64(r);
    if (!qhca_r_ok(r)) {
        return false;
    }
    if (memcmp(mac, c->mac, 6)) {
        return qhca_r_fail(r, "the device's MAC differs: the stream's is "
                           "%02x:%02x:%02x:%02x:%02x:%02x (give the same "
                           "mac= on the destination)", mac[0], mac[1],
                           mac[2], mac[3], mac[4], mac[5]);
    }
    if ((c->ctrl & ~QHCA_CTRL_ENABLE) ||
        (c->status & ~(QHCA_STATUS_READY | QHCA_STATUS_FATAL)) ||
        c->fatal_code > QHCA_FATAL_CMDCQ_DMA || (c->link_was_up & ~1) ||
        ((c->status & QHCA_STATUS_READY) &&
         (!(c->ctrl & QHCA_CTRL_ENABLE) ||
          !qhca_hostq_regs_ok(&c->cmdq, QHCA_CMDQ_MAX_LOG_DEPTH) ||
          !qhca_hostq_regs_ok(&c->cmdcq, QHCA_CMDCQ_MAX_LOG_DEPTH) ||
          !qhca_hostq_regs_ok(&c->aeq, QHCA_AEQ_MAX_LOG_DEPTH)))) {
        return qhca_r_fail(r, "bad registers (CTRL 0x%x, STATUS 0x%x, fatal "
                           "code %u)", c->ctrl, c->status, c->fatal_code);
    }
    return true;
}

static bool load_gid(QhcaCore *c, QhcaStreamR *r)
{
    uint8_t i = qhca_r_u8(r);
    uint8_t gid[16];

    qhca_r_bytes(r, gid, 16);
    if (!qhca_r_ok(r)) {
        return false;
    }
    if (i >= QHCA_GID_TABLE_LEN || c->gid[i].valid) {
        return qhca_r_fail(r, "GID %u does not exist or comes twice", i);
    }
    c->gid[i].valid = true;
    memcpy(c->gid[i].gid, gid, 16);
    return true;
}

static bool load_eq(QhcaCore *c, QhcaStreamR *r)
{
    uint16_t n = qhca_r_u16(r);
    uint32_t vector = qhca_r_u32(r);
    uint8_t armed = qhca_r_u8(r);
    QhcaEq *eq;

    if (!qhca_r_ok(r) ||
        !slot_ok(r, (void **)c->eq, QHCA_MAX_EQS, 1, n, "EQ")) {
        return false;
    }
    if (vector == QHCA_MSIX_VEC_ASYNC || vector >= QHCA_MSIX_VECTORS ||
        armed > 1) {
        return qhca_r_fail(r, "EQ %u: bad vector %u", n, vector);
    }
    eq = g_new0(QhcaEq, 1);
    if (!load_ring(c, r, &eq->ring, ctz32(QHCA_EQE_SIZE),
                   ctz32(QHCA_EQE_SIZE), true)) {
        g_free(eq);
        return false;
    }
    eq->vector = vector;
    eq->armed = armed;
    c->eq[n] = eq;
    return true;
}

static bool load_pd(QhcaCore *c, QhcaStreamR *r)
{
    uint16_t n = qhca_r_u16(r);

    if (!qhca_r_ok(r) ||
        !slot_ok(r, (void **)c->pd, QHCA_MAX_PD, 1, n, "PD")) {
        return false;
    }
    c->pd[n] = g_new0(QhcaPd, 1);
    return true;
}

static bool load_cq(QhcaCore *c, QhcaStreamR *r)
{
    uint16_t n = qhca_r_u16(r);
    uint32_t eqn = qhca_r_u32(r);
    uint32_t db_page = qhca_r_u32(r);
    uint8_t arm = qhca_r_u8(r);
    uint8_t error = qhca_r_u8(r);
    QhcaCq *cq;

    if (!qhca_r_ok(r) ||
        !slot_ok(r, (void **)c->cq, QHCA_MAX_CQ, 1, n, "CQ")) {
        return false;
    }
    if (!LOOKUP(c, eq, eqn) || db_page >= QHCA_DB_PAGES ||
        arm > QHCA_CQ_ARM_SOLICITED || error > 1) {
        return qhca_r_fail(r, "CQ %u: bad EQ %u, doorbell page %u or state",
                           n, eqn, db_page);
    }
    cq = g_new0(QhcaCq, 1);
    if (!load_ring(c, r, &cq->ring, ctz32(QHCA_CQE_SIZE),
                   ctz32(QHCA_CQE_SIZE), true)) {
        g_free(cq);
        return false;
    }
    cq->eqn = eqn;
    cq->db_page = db_page;
    cq->arm = arm;
    cq->error = error;
    c->eq[eqn]->refs++;
    c->cq[n] = cq;
    return true;
}

static bool load_srq(QhcaCore *c, QhcaStreamR *r)
{
    uint16_t n = qhca_r_u16(r);
    uint32_t pdn = qhca_r_u32(r);
    uint32_t db_page = qhca_r_u32(r);
    uint32_t limit = qhca_r_u32(r);
    QhcaSrq *srq;

    if (!qhca_r_ok(r) ||
        !slot_ok(r, (void **)c->srq, QHCA_MAX_SRQ, 1, n, "SRQ")) {
        return false;
    }
    if (!LOOKUP(c, pd, pdn)) {
        return qhca_r_fail(r, "SRQ %u: no PD %u", n, pdn);
    }
    srq = g_new0(QhcaSrq, 1);
    if (!load_ring(c, r, &srq->ring, QHCA_RECV_WQE_MIN_LOG_STRIDE,
                   QHCA_WQE_MAX_LOG_STRIDE, true)) {
        g_free(srq);
        return false;
    }
    if (!qhca_srq_geometry_ok(db_page, srq->ring.log_depth,
                              srq->ring.log_stride, limit)) {
        qhca_pages_free(c, &srq->ring.mem);
        g_free(srq);
        return qhca_r_fail(r, "SRQ %u: bad doorbell page %u, depth or limit "
                           "%u", n, db_page, limit);
    }
    srq->pdn = pdn;
    srq->db_page = db_page;
    srq->limit = limit;
    c->pd[pdn]->refs++;
    c->srq[n] = srq;
    return true;
}

static bool load_ah(QhcaCore *c, QhcaStreamR *r)
{
    uint16_t n = qhca_r_u16(r);
    QhcaAh a = { 0 };

    a.pdn = qhca_r_u32(r);
    a.sgid_index = qhca_r_u8(r);
    a.hop_limit = qhca_r_u8(r);
    a.traffic_class = qhca_r_u8(r);
    a.flow_label = qhca_r_u32(r);
    qhca_r_bytes(r, a.dmac, 6);
    qhca_r_bytes(r, a.dgid, 16);
    if (!qhca_r_ok(r) ||
        !slot_ok(r, (void **)c->ah, QHCA_MAX_AH, 1, n, "AH")) {
        return false;
    }
    if (!LOOKUP(c, pd, a.pdn) || a.sgid_index >= QHCA_GID_TABLE_LEN ||
        a.flow_label > 0xfffff) {
        return qhca_r_fail(r, "AH %u: bad PD %u, GID index %u or flow label",
                           n, a.pdn, a.sgid_index);
    }
    c->ah[n] = g_memdup2(&a, sizeof(a));
    c->pd[a.pdn]->refs++;
    return true;
}

static bool load_mr(QhcaCore *c, QhcaStreamR *r)
{
    uint16_t n = qhca_r_u16(r);
    QhcaMr m = { 0 };
    uint8_t f;
    bool ok;

    m.pdn = qhca_r_u32(r);
    m.key = qhca_r_u32(r);
    m.access = qhca_r_u32(r);
    f = qhca_r_u8(r);
    m.valid = f & 1;
    m.phys = f & 2;
    m.fast_reg = f & 4;
    m.max_pages = qhca_r_u32(r);
    m.iova = qhca_r_u64(r);
    m.length = qhca_r_u64(r);
    m.mw_type = qhca_r_u8(r);
    m.mw_mr_key = qhca_r_u32(r);
    m.mw_qpn = qhca_r_u32(r);
    if (!qhca_r_ok(r) ||
        !slot_ok(r, (void **)c->mr, QHCA_MAX_MR, 1, n, "MR")) {
        return false;
    }
    if (m.mw_type) {
        /* a window: its MR and QP are checked once all are loaded */
        ok = m.mw_type <= QHCA_MW_TYPE_2 && !m.phys && !m.fast_reg &&
             !m.max_pages &&
             !(m.access & ~(QHCA_ACCESS_REMOTE_READ |
                            QHCA_ACCESS_REMOTE_WRITE |
                            QHCA_ACCESS_REMOTE_ATOMIC)) &&
             (m.valid ? m.length != 0 : !m.length && !m.access && !m.iova);
    } else {
        ok = !(m.access & ~QHCA_ACCESS_MASK) &&
             !(m.phys && m.fast_reg) &&
             (m.fast_reg ? m.max_pages >= 1 &&
                           m.max_pages <= QHCA_MAX_FAST_REG_PAGES :
                           !m.max_pages && m.valid && m.length != 0) &&
             (m.phys || m.length <= QHCA_MAX_MR_SIZE) &&
             m.iova + m.length >= m.iova && !m.mw_mr_key && !m.mw_qpn;
    }
    if (!ok || (f & ~7) || (m.key >> QHCA_KEY_INDEX_SHIFT) != n ||
        !LOOKUP(c, pd, m.pdn)) {
        return qhca_r_fail(r, "MR %u: bad key 0x%x, PD %u, flags 0x%x, type "
                           "%u, access 0x%x or range", n, m.key, m.pdn, f,
                           m.mw_type, m.access);
    }
    if (!load_pages(c, r, &m.pages, 0, false, true)) {
        return false;
    }
    if (m.pages.addr) {
        uint64_t span = (m.iova & ((1ULL << m.pages.shift) - 1)) + m.length;

        if (m.mw_type || m.phys ||
            (m.fast_reg && m.pages.count > m.max_pages) ||
            ((uint64_t)m.pages.count << m.pages.shift) < span) {
            qhca_pages_free(c, &m.pages);
            return qhca_r_fail(r, "MR %u: its %u pages do not fit it", n,
                               m.pages.count);
        }
    } else if (!m.mw_type && !m.phys && m.valid) {
        return qhca_r_fail(r, "MR %u: valid without pages", n);
    }
    c->mr[n] = g_memdup2(&m, sizeof(m));
    c->pd[m.pdn]->refs++;
    return true;
}

/* The attributes a QP could have been given, as modify_qp checks them */
static bool qp_attr_ok(const QhcaQp *qp)
{
    const struct qhca_qp_attr *a = &qp->attr;
    uint32_t set = qp->attr_set;

#define HAS(bit) (set & QHCA_QP_ATTR_##bit)
    return !(set & ~QP_ATTR_KNOWN) &&
           a->qp_state <= QHCA_QPS_ERR &&
           (!HAS(PATH_MTU) ? !a->path_mtu :
            a->path_mtu >= 1 && a->path_mtu <= 5) &&
           a->timeout <= 31 && a->retry_cnt <= 7 && a->rnr_retry <= 7 &&
           a->min_rnr_timer <= 31 &&
           a->max_rd_atomic <= QHCA_MAX_RD_ATOMIC &&
           a->max_dest_rd_atomic <= QHCA_MAX_RD_ATOMIC &&
           !(le32_to_cpu(a->access_flags) & ~QHCA_ACCESS_MASK) &&
           le32_to_cpu(a->dest_qpn) <= 0xffffff &&
           le32_to_cpu(a->rq_psn) <= 0xffffff &&
           le32_to_cpu(a->sq_psn) <= 0xffffff &&
           a->sgid_index < QHCA_GID_TABLE_LEN &&
           le32_to_cpu(a->flow_label) <= 0xfffff &&
           a->en_sqd_async_notify <= 1;
#undef HAS
}

/* What is set up: freed again by qhca_free_all() if the load fails */
static bool load_qp(QhcaCore *c, QhcaStreamR *r)
{
    uint16_t n = qhca_r_u16(r);
    uint8_t type = qhca_r_u8(r), has_rq;
    uint32_t pdn = qhca_r_u32(r);
    uint32_t scqn = qhca_r_u32(r);
    uint32_t rcqn = qhca_r_u32(r);
    uint32_t srqn = qhca_r_u32(r);
    uint32_t db_page = qhca_r_u32(r);
    uint32_t max_inline = qhca_r_u32(r);
    uint8_t sig_all = qhca_r_u8(r);
    QhcaSrq *srq = NULL;
    QhcaQp *qp;

    if (!qhca_r_ok(r) ||
        !slot_ok(r, (void **)c->qp, QHCA_MAX_QP, 1, n, "QP")) {
        return false;
    }
    if (srqn != QHCA_NO_SRQ) {
        srq = LOOKUP(c, srq, srqn);
    }
    if ((type != QHCA_QPT_RC && type != QHCA_QPT_UC &&
         type != QHCA_QPT_UD && type != QHCA_QPT_GSI) ||
        (type == QHCA_QPT_GSI) != (n == 1) ||
        !LOOKUP(c, pd, pdn) || !LOOKUP(c, cq, scqn) || !LOOKUP(c, cq, rcqn) ||
        (srqn != QHCA_NO_SRQ &&
         (!srq || srq->pdn != pdn || type == QHCA_QPT_GSI)) ||
        sig_all > 1) {
        return qhca_r_fail(r, "QP %u: bad type %u, PD %u, CQs %u/%u, SRQ "
                           "0x%x or doorbell page %u", n, type, pdn, scqn,
                           rcqn, srqn, db_page);
    }
    qp = g_new0(QhcaQp, 1);
    qp->qpn = n;
    qp->type = type;
    qp->pdn = pdn;
    qp->send_cqn = scqn;
    qp->recv_cqn = rcqn;
    qp->srqn = srqn;
    qp->db_page = db_page;
    qp->max_inline = max_inline;
    qp->sq_sig_all = sig_all;
    /* from here on the QP is in the table: qhca_free_all() can free it */
    if (!load_ring(c, r, &qp->sq, QHCA_SEND_WQE_MIN_LOG_STRIDE,
                   QHCA_WQE_MAX_LOG_STRIDE, false)) {
        g_free(qp);
        return false;
    }
    has_rq = qhca_r_u8(r);
    if (has_rq != !srq ||
        (has_rq && !load_ring(c, r, &qp->rq, QHCA_RECV_WQE_MIN_LOG_STRIDE,
                              QHCA_WQE_MAX_LOG_STRIDE, false))) {
        qhca_pages_free(c, &qp->sq.mem);
        g_free(qp);
        return qhca_r_fail(r, "QP %u: a receive queue and an SRQ, or neither",
                           n);
    }
    qhca_r_bytes(r, &qp->attr, sizeof(qp->attr));
    qp->attr_set = qhca_r_u32(r);
    if (!qhca_r_ok(r) ||
        !qhca_qp_geometry_ok(db_page, qp->sq.log_depth, qp->sq.log_stride,
                             has_rq, qp->rq.log_depth, qp->rq.log_stride,
                             max_inline) ||
        !qp_attr_ok(qp) ||
        !qhca_budget_charge(c, qhca_qp_engine_units(qp->sq.log_depth))) {
        qhca_r_fail(r, "QP %u: bad queues, attributes (state %u, set 0x%x) "
                    "or no room in the budget", n, qp->attr.qp_state,
                    qp->attr_set);
        qhca_pages_free(c, &qp->sq.mem);
        if (qp->rq.mem.addr) {
            qhca_pages_free(c, &qp->rq.mem);
        }
        g_free(qp);
        return false;
    }
    qhca_qp_install(c, qp);
    return qhca_qp_engine_load(c, qp, r);
}

static bool load_qp_cc(QhcaCore *c, QhcaStreamR *r, uint8_t *cc_seen)
{
    uint16_t n = qhca_r_u16(r);
    QhcaQp *qp;

    if (!qhca_r_ok(r)) {
        return false;
    }
    qp = LOOKUP(c, qp, n);
    if (!qp || cc_seen[n]) {
        return qhca_r_fail(r, "congestion state of QP %u: no such QP, or "
                           "twice", n);
    }
    cc_seen[n] = 1;
    return qhca_qp_engine_load_cc(c, qp, r);
}

static bool load_mcg(QhcaCore *c, QhcaStreamR *r)
{
    uint8_t i = qhca_r_u8(r), nqp;
    QhcaMcg g = { 0 };
    unsigned k, j;

    qhca_r_bytes(r, g.gid, 16);
    qhca_r_bytes(r, g.mac, 6);
    nqp = qhca_r_u8(r);
    if (!qhca_r_ok(r)) {
        return false;
    }
    if (i >= QHCA_MAX_MCAST_GRP || c->mcg[i].nqp || !nqp ||
        nqp > QHCA_MAX_MCAST_QP_ATTACH || !qhca_roce_gid_is_mcast(g.gid)) {
        return qhca_r_fail(r, "multicast group %u: bad index, GID or %u QPs",
                           i, nqp);
    }
    for (k = 0; k < nqp; k++) {
        const QhcaQp *qp;

        g.qpn[k] = qhca_r_u16(r);
        qp = LOOKUP(c, qp, g.qpn[k]);
        if (!qhca_r_ok(r)) {
            return false;
        }
        if (!qp || qp->type != QHCA_QPT_UD) {
            return qhca_r_fail(r, "multicast group %u: QP %u is no UD QP", i,
                               g.qpn[k]);
        }
        for (j = 0; j < k; j++) {
            if (g.qpn[j] == g.qpn[k]) {
                return qhca_r_fail(r, "multicast group %u: QP %u twice", i,
                                   g.qpn[k]);
            }
        }
    }
    for (j = 0; j < QHCA_MAX_MCAST_GRP; j++) {
        if (c->mcg[j].nqp && !memcmp(c->mcg[j].gid, g.gid, 16)) {
            return qhca_r_fail(r, "multicast group %u: its GID twice", i);
        }
    }
    g.nqp = nqp;
    c->mcg[i] = g;
    return true;
}

static bool load_counters(QhcaCore *c, QhcaStreamR *r)
{
    uint32_t n = qhca_r_u32(r), k;

    if (!qhca_r_ok(r) || n > (r->len - r->off) / 8) {
        return qhca_r_fail(r, "bad counters record (%u counters)", n);
    }
    /* counters this device does not have are left out; missing ones are 0 */
    for (k = 0; k < n; k++) {
        uint64_t v = qhca_r_u64(r);

        if (k < QHCA_STAT_NUM) {
            qhca_core_set_stat(c, k, v);
        }
    }
    return qhca_r_ok(r);
}

/* Windows refer to MRs and QPs that are all loaded now */
static bool check_windows(QhcaCore *c, QhcaStreamR *r)
{
    uint32_t i;

    for (i = 1; i < QHCA_MAX_MR; i++) {
        QhcaMr *mw = c->mr[i], *mr;

        if (!mw || !mw->mw_type || !mw->valid) {
            continue;
        }
        mr = LOOKUP(c, mr, mw->mw_mr_key >> QHCA_KEY_INDEX_SHIFT);
        if (!mr || mr->mw_type || mr->pdn != mw->pdn ||
            (mw->mw_type == QHCA_MW_TYPE_2 &&
             !LOOKUP(c, qp, mw->mw_qpn))) {
            return qhca_r_fail(r, "window 0x%x: bound to no MR 0x%x of its "
                               "PD, or to no QP %u", mw->key, mw->mw_mr_key,
                               mw->mw_qpn);
        }
        mr->mw_bound++;
    }
    return true;
}

static bool load_record(QhcaCore *c, QhcaStreamR *r, uint8_t type,
                        uint8_t *cc_seen)
{
    switch (type) {
    case REC_DEVICE:
        return load_device(c, r);
    case REC_GID:
        return load_gid(c, r);
    case REC_EQ:
        return load_eq(c, r);
    case REC_PD:
        return load_pd(c, r);
    case REC_CQ:
        return load_cq(c, r);
    case REC_SRQ:
        return load_srq(c, r);
    case REC_AH:
        return load_ah(c, r);
    case REC_MR:
        return load_mr(c, r);
    case REC_QP:
        return load_qp(c, r);
    case REC_QP_CC:
        return load_qp_cc(c, r, cc_seen);
    case REC_MCG:
        return load_mcg(c, r);
    case REC_COUNTERS:
        return load_counters(c, r);
    }
    g_assert_not_reached();
}

static bool load_stream(QhcaCore *c, QhcaStreamR *r)
{
    g_autofree uint8_t *cc_seen = g_new0(uint8_t, QHCA_MAX_QP);
    uint32_t magic = qhca_r_u32(r), nrec = 0;
    uint16_t version = qhca_r_u16(r);
    uint16_t reserved = qhca_r_u16(r);
    uint8_t last = 0;

    if (!qhca_r_ok(r)) {
        return false;
    }
    if (magic != QHCA_SAVE_MAGIC || reserved) {
        return qhca_r_fail(r, "not a qhca device state");
    }
    if (version != QHCA_SAVE_VERSION) {
        return qhca_r_fail(r, "state version %u, this QEMU's qhca loads "
                           "version %u", version, QHCA_SAVE_VERSION);
    }
    for (;;) {
        uint8_t type = qhca_r_u8(r);
        uint8_t flags = qhca_r_u8(r);
        uint16_t rsvd = qhca_r_u16(r);
        uint32_t len = qhca_r_u32(r);
        QhcaStreamR rec;

        if (!qhca_r_ok(r)) {
            return false;
        }
        if ((flags & ~REC_F_OPTIONAL) || rsvd) {
            return qhca_r_fail(r, "record of type %u with unknown flags 0x%x",
                               type, flags);
        }
        rec = qhca_r_sub(r, len);
        if (!qhca_r_ok(r)) {
            return false;
        }
        if (type == REC_END) {
            uint32_t count = qhca_r_u32(&rec);

            if (!qhca_r_done(&rec, "end")) {
                return false;
            }
            if (!last) {
                return qhca_r_fail(r, "no device record");
            }
            if (count != nrec) {
                return qhca_r_fail(r, "%u records, the end record says %u",
                                   nrec, count);
            }
            if (r->off != r->len) {
                return qhca_r_fail(r, "%zu bytes after the end",
                                   r->len - r->off);
            }
            return check_windows(c, r);
        }
        nrec++;
        if (type >= ARRAY_SIZE(rec_name) || !rec_name[type]) {
            if (flags & REC_F_OPTIONAL) {
                trace_qhca_load_skip(type, len);
                continue;
            }
            return qhca_r_fail(r, "record of type %u, which this QEMU's "
                               "qhca does not know (from a newer version?)",
                               type);
        }
        if ((type == REC_DEVICE) != (nrec == 1) || type < last ||
            (type == last && (type == REC_DEVICE || type == REC_COUNTERS))) {
            return qhca_r_fail(r, "%s record out of order", rec_name[type]);
        }
        /* a QP's congestion state follows it: QP records may come after */
        last = type == REC_QP_CC ? REC_QP : type;
        if (!load_record(c, &rec, type, cc_seen) ||
            !qhca_r_done(&rec, rec_name[type])) {
            return false;
        }
    }
}

bool qhca_core_load(QhcaCore *c, const uint8_t *buf, size_t len,
                    char **why)
{
    char reason[QHCA_STREAM_WHY_LEN] = "";
    bool failed = false;
    QhcaStreamR r = {
        .p = buf, .len = len, .failed = &failed, .why = reason,
    };

    assert(!qhca_core_busy(c));
    qhca_core_reset(c);
    if (len > QHCA_SAVE_MAX) {
        qhca_r_fail(&r, "%zu bytes, more than a device's state can be", len);
    }
    if (failed || !load_stream(c, &r)) {
        if (!failed) {
            qhca_r_fail(&r, "stream ends early");
        }
        trace_qhca_load_refused(reason);
        qemu_log_mask(LOG_GUEST_ERROR,
                      "qhca: incoming device state refused: %s\n", reason);
        if (why) {
            *why = g_strdup(reason);
        }
        qhca_core_reset(c);
        return false;
    }
    trace_qhca_load(len);
    qhca_qp_engine_loaded(c);
    return true;
}
