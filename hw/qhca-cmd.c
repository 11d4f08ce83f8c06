/*
 * qhca device logic: the command queue, the commands as a table of
 * descriptors, and the commands of the smaller objects.
 *
 * Everything here treats guest memory as hostile: every index, length,
 * address and handle is range-checked, and bad input gives an error
 * status with a trace event and a LOG_GUEST_ERROR message.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/bswap.h"
#include "qemu/host-utils.h"
#include "qhca-cmd-int.h"
#include "qhca-roce.h"
#include "trace.h"

void qhca_free_mr(QhcaCore *c, uint32_t idx)
{
    QhcaMr *mr = c->mr[idx];

    if (mr->mw_type) {
        qhca_mw_unbind(c, mr);
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
    qhca_budget_release(c, qhca_qp_engine_units(qp->sq.log_depth));
    /*
     * Type 2 windows bound to the QP end with it: a QP made later with the
     * same number (in the same PD) must not find them usable
     */
    for (i = 1; i < QHCA_MAX_MR; i++) {
        QhcaMr *mw = c->mr[i];

        if (mw && mw->mw_type == QHCA_MW_TYPE_2 && mw->valid &&
            mw->mw_qpn == qpn) {
            qhca_mw_unbind(c, mw);
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
void qhca_free_all(QhcaCore *c)
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
        QHCA_GUEST_ERROR(c, gid_index_out_range, idx, QHCA_GID_TABLE_LEN);
        return QHCA_CMD_ERR_PARAM;
    }
    /*
     * A GID is an IPv4 address (IPv4-mapped) or an IPv6 unicast address:
     * frames from or to anything else are never taken, so none is sent
     */
    if (add && (qhca_roce_gid_is_ipv4(x->cmd->gid.gid) ?
                qhca_roce_gid_is_mcast(x->cmd->gid.gid) :
                !qhca_roce_ip6_unicast(x->cmd->gid.gid))) {
        QHCA_GUEST_ERROR(c, gid_not_unicast, idx, ldl_be_p(x->cmd->gid.gid),
                         ldl_be_p(x->cmd->gid.gid + 12));
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
        QHCA_GUEST_ERROR(c, create_eq_bad_vector, vector, QHCA_MSIX_VECTORS);
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
        QHCA_GUEST_ERROR(c, create_cq_bad_doorbell_page, db_page,
                         QHCA_DB_PAGES);
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
        QHCA_GUEST_ERROR(c, resize_cq_smaller_than_cqes_held,
                         le32_to_cpu(p->cqn), n, 1u << nr.log_depth);
        qhca_pages_free(c, &nr.mem);
        return QHCA_CMD_ERR_PARAM;
    }
    for (i = 0; i < n; i++) {
        struct qhca_cqe e;
        uint64_t from;

        if (!qhca_ring_entry_addr(&cq->ring, cq->ring.ci + i, &from) ||
            !qhca_op_dma_read(c, from, &e, sizeof(e)) ||
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
    /* QPs that waited for room in the CQ may go on: the run visits all */
    c->scan_all = true;
    qhca_op_schedule(c);
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

/* The counters in enum qhca_stat order */
static int cmd_query_stats(QhcaCore *c, QhcaCmdCtx *x)
{
    uint32_t first = le32_to_cpu(x->cmd->query_stats.first);
    unsigned i;

    if (first > QHCA_STAT_NUM) {
        QHCA_GUEST_ERROR(c, query_stats_first_out_of_range, first,
                         QHCA_STAT_NUM);
        return QHCA_CMD_ERR_PARAM;
    }
    for (i = first; i < QHCA_STAT_NUM; i++) {
        x->reply.stats[i - first] = cpu_to_le64(qhca_core_stat(c, i));
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
    if (!qhca_srq_geometry_ok(db_page, p->log_depth, p->log_stride, limit)) {
        QHCA_GUEST_ERROR(c, create_srq_bad_geometry_limit, db_page,
                         p->log_depth, p->log_stride, limit);
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

/* The doorbell page, geometry and limit an SRQ may have (as for a QP) */
bool qhca_srq_geometry_ok(uint32_t db_page, uint32_t log_depth,
                          uint32_t log_stride, uint32_t limit)
{
    return db_page < QHCA_DB_PAGES &&
           log_stride >= QHCA_RECV_WQE_MIN_LOG_STRIDE &&
           log_stride <= QHCA_WQE_MAX_LOG_STRIDE &&
           log_depth <= (uint32_t)ctz32(QHCA_MAX_QP_WR) &&
           limit < (1u << log_depth);
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
        QHCA_GUEST_ERROR(c, resize_srq_bad_depth_limit, srqn, p->log_depth,
                         ctz32(QHCA_MAX_QP_WR), srq->limit,
                         p->reserved[0] || p->reserved[1] || p->reserved[2]);
        return QHCA_CMD_ERR_PARAM;
    }
    n = srq->ring.pi - srq->ring.ci;
    if (n > (1u << p->log_depth)) {
        QHCA_GUEST_ERROR(c, resize_srq_smaller_than_wqes_posted, srqn, n,
                         1u << p->log_depth);
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
            !qhca_op_dma_read(c, from, wqe, stride) ||
            !qhca_op_dma_write(c, to, wqe, stride)) {
            QHCA_GUEST_ERROR(c, resize_srq_copy_failed, srqn, idx);
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
                         p->sgid_index, flow_label);
        return QHCA_CMD_ERR_PARAM;
    }
    if (!qhca_av_gids_ok(c, p->sgid_index, p->dgid, true)) {
        QHCA_GUEST_ERROR(c, create_ah_bad_gids, p->sgid_index,
                         ldl_be_p(p->dgid), ldl_be_p(p->dgid + 12));
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
        QHCA_GUEST_ERROR(c, mcast_not_ud, qpn, qp->type,
                         le32_to_cpu(p->reserved));
        return QHCA_CMD_ERR_PARAM;
    }
    if (!qhca_roce_gid_is_mcast(p->gid)) {
        QHCA_GUEST_ERROR(c, mcast_gid_not_multicast, qpn, ldl_be_p(p->gid),
                         ldl_be_p(p->gid + 12));
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
            QHCA_GUEST_ERROR(c, mcast_not_attached, qpn,
                             ldl_be_p(p->gid + 12));
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

static int cmd_add_gid(QhcaCore *c, QhcaCmdCtx *x)
{
    return cmd_gid(c, x, true);
}

static int cmd_del_gid(QhcaCore *c, QhcaCmdCtx *x)
{
    return cmd_gid(c, x, false);
}

static int cmd_attach_mcast(QhcaCore *c, QhcaCmdCtx *x)
{
    return cmd_mcast(c, x, true);
}

static int cmd_detach_mcast(QhcaCore *c, QhcaCmdCtx *x)
{
    return cmd_mcast(c, x, false);
}

/*
 * The commands, by opcode.  A command is executed by @exec, or is a
 * DESTROY_* (or DEALLOC_PD) of an entry of the object table at @table
 * (@size entries): the object must exist and, if it has a reference count
 * (at @refs, else SIZE_MAX), not be in use; then @destroy frees it.
 */
typedef struct QhcaCmdDesc {
    const char *name;
    QhcaCmdFn *exec;
    size_t table;
    uint32_t size;
    size_t refs;
    void (*destroy)(QhcaCore *c, uint32_t n);
} QhcaCmdDesc;

#define CMD(op, fn)     [QHCA_CMD_##op] = { .name = #op, .exec = fn }
#define DESTROY(op, tbl, refs_off, fn) [QHCA_CMD_##op] = {               \
        .name = #op, .table = offsetof(QhcaCore, tbl),                  \
        .size = ARRAY_SIZE(((QhcaCore *)NULL)->tbl), .refs = refs_off,  \
        .destroy = fn }

static const QhcaCmdDesc qhca_cmds[QHCA_CMD_MAX] = {
    CMD(QUERY_DEVICE, cmd_query_device),
    CMD(QUERY_PORT, cmd_query_port),
    CMD(ADD_GID, cmd_add_gid),
    CMD(DEL_GID, cmd_del_gid),
    CMD(CREATE_EQ, cmd_create_eq),
    DESTROY(DESTROY_EQ, eq, offsetof(QhcaEq, refs), qhca_free_eq),
    CMD(ALLOC_PD, cmd_alloc_pd),
    DESTROY(DEALLOC_PD, pd, offsetof(QhcaPd, refs), qhca_free_pd),
    CMD(REG_MR, qhca_cmd_reg_mr),
    CMD(DEREG_MR, qhca_cmd_dereg_mr),
    CMD(ALLOC_MR, qhca_cmd_alloc_mr),
    CMD(CREATE_CQ, cmd_create_cq),
    DESTROY(DESTROY_CQ, cq, offsetof(QhcaCq, refs), qhca_free_cq),
    CMD(CREATE_QP, qhca_cmd_create_qp),
    CMD(MODIFY_QP, qhca_cmd_modify_qp),
    CMD(QUERY_QP, qhca_cmd_query_qp),
    DESTROY(DESTROY_QP, qp, SIZE_MAX, qhca_free_qp),
    CMD(CREATE_SRQ, cmd_create_srq),
    CMD(MODIFY_SRQ, cmd_modify_srq),
    CMD(QUERY_SRQ, cmd_query_srq),
    DESTROY(DESTROY_SRQ, srq, offsetof(QhcaSrq, refs), qhca_free_srq),
    CMD(CREATE_AH, cmd_create_ah),
    DESTROY(DESTROY_AH, ah, SIZE_MAX, qhca_free_ah),
    CMD(QUERY_STATS, cmd_query_stats),
    CMD(QUERY_QP_STATE, qhca_cmd_query_qp_state),
    CMD(QUERY_CQ, cmd_query_cq),
    CMD(REREG_MR, qhca_cmd_rereg_mr),
    CMD(RESIZE_CQ, cmd_resize_cq),
    CMD(ATTACH_MCAST, cmd_attach_mcast),
    CMD(DETACH_MCAST, cmd_detach_mcast),
    CMD(RESIZE_SRQ, cmd_resize_srq),
    CMD(ALLOC_MW, qhca_cmd_alloc_mw),
    CMD(DEALLOC_MW, qhca_cmd_dealloc_mw),
};

#undef CMD
#undef DESTROY

static int cmd_destroy(QhcaCore *c, QhcaCmdCtx *x, const QhcaCmdDesc *d)
{
    void **table = (void **)((uint8_t *)c + d->table);
    uint32_t n = le32_to_cpu(x->cmd->obj.handle);

    if (n >= d->size || !table[n]) {
        return QHCA_CMD_ERR_HANDLE;
    }
    if (d->refs != SIZE_MAX && *(uint32_t *)((uint8_t *)table[n] + d->refs)) {
        return QHCA_CMD_ERR_BUSY;
    }
    d->destroy(c, n);
    return QHCA_CMD_OK;
}

/* The command's descriptor, or NULL for an unknown opcode */
static const QhcaCmdDesc *qhca_cmd_desc(uint16_t op)
{
    return op < ARRAY_SIZE(qhca_cmds) && qhca_cmds[op].name ?
           &qhca_cmds[op] : NULL;
}

static int qhca_exec(QhcaCore *c, QhcaCmdCtx *x, const QhcaCmdDesc *d)
{
    uint16_t op = le16_to_cpu(x->cmd->hdr.opcode);

    if (le16_to_cpu(x->cmd->hdr.flags)) {
        QHCA_GUEST_ERROR(c, command_reserved_flags_set, op,
                         le32_to_cpu(x->cmd->hdr.cookie),
                         le16_to_cpu(x->cmd->hdr.flags));
        return QHCA_CMD_ERR_PARAM;
    }
    if (!d) {
        QHCA_GUEST_ERROR(c, command_unknown_opcode, op,
                         le32_to_cpu(x->cmd->hdr.cookie));
        return QHCA_CMD_ERR_OPCODE;
    }
    return d->exec ? d->exec(c, x) : cmd_destroy(c, x, d);
}

/* Execute queued commands while there is room for their completions */
void qhca_cmdq_run(QhcaCore *c)
{
    while (c->cmdq.ci != c->cmdq.pi && !c->halted &&
           !(c->status & QHCA_STATUS_FATAL) && !qhca_hostq_full(&c->cmdcq)) {
        struct qhca_cmd cmd;
        struct qhca_cmd_comp comp = { 0 };
        QhcaCmdCtx x = { .cmd = &cmd };
        const QhcaCmdDesc *d;
        int status;

        if (!qhca_op_dma_read(c, qhca_hostq_addr(&c->cmdq, c->cmdq.ci,
                                                 QHCA_CMD_SIZE),
                              &cmd, sizeof(cmd))) {
            qhca_fatal(c, QHCA_FATAL_CMDQ_DMA);
            return;
        }
        d = qhca_cmd_desc(le16_to_cpu(cmd.hdr.opcode));
        status = qhca_exec(c, &x, d);
        trace_qhca_cmd(d ? d->name : "unknown", le16_to_cpu(cmd.hdr.opcode),
                       le32_to_cpu(cmd.hdr.cookie), status, x.result);
        if (status == QHCA_CMD_OK && x.resp) {
            uint64_t raddr = le64_to_cpu(cmd.hdr.resp_addr);
            uint32_t rlen = MIN(le32_to_cpu(cmd.hdr.resp_len), x.resp_size);

            if ((raddr & (QHCA_PAGE_SIZE - 1)) + rlen > QHCA_PAGE_SIZE) {
                QHCA_GUEST_ERROR(c, command_response_crosses_page,
                                 le16_to_cpu(cmd.hdr.opcode),
                                 le32_to_cpu(cmd.hdr.cookie), raddr, rlen);
                status = QHCA_CMD_ERR_PARAM;
            } else if (rlen && !qhca_op_dma_write(c, raddr, x.resp, rlen)) {
                status = QHCA_CMD_ERR_DMA;
            }
        }
        comp.cookie = cmd.hdr.cookie;
        comp.status = cpu_to_le16(status);
        comp.opcode = le16_to_cpu(cmd.hdr.opcode) & 0xff;
        comp.result = cpu_to_le32(x.result);
        if (!qhca_hostq_produce(c, &c->cmdcq, &comp, sizeof(comp),
                                offsetof(struct qhca_cmd_comp, owner),
                                QHCA_CMD_COMP_SIZE)) {
            qhca_fatal(c, QHCA_FATAL_CMDCQ_DMA);
            return;
        }
        c->cmdq.ci++;
        qhca_hostq_notify(c, &c->cmdcq);
    }
}
