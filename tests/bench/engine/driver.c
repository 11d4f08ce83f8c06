/*
 * The engine bench's host-side driver, control path: the shared test
 * mini-driver (tests/common/qhca-drv.c) over the bench's flat RAM, and the
 * objects a run needs: GID, PD, EQ, one CQ, one MR (a source half and a
 * target half) and the RC QPs, connected in pairs A[i] <-> B[i].
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "eb.h"
#include "qemu/bswap.h"

static void drv_mem_read(void *opaque, uint64_t addr, void *buf,
                         uint64_t len)
{
    EbDev *d = opaque;

    g_assert(addr <= EB_RAM_SIZE && len <= EB_RAM_SIZE - addr);
    memcpy(buf, d->ram + addr, len);
}

static void drv_mem_write(void *opaque, uint64_t addr, const void *buf,
                          uint64_t len)
{
    EbDev *d = opaque;

    g_assert(addr <= EB_RAM_SIZE && len <= EB_RAM_SIZE - addr);
    memcpy(d->ram + addr, buf, len);
}

static void drv_mem_set(void *opaque, uint64_t addr, uint8_t val,
                        uint64_t len)
{
    EbDev *d = opaque;

    g_assert(addr <= EB_RAM_SIZE && len <= EB_RAM_SIZE - addr);
    memset(d->ram + addr, val, len);
}

static uint64_t drv_alloc_pages(void *opaque, uint32_t n)
{
    EbDev *d = opaque;
    uint64_t a = d->ring_next;

    if ((uint64_t)n * QHCA_PAGE_SIZE > EB_RING_END - a) {
        return 0;
    }
    d->ring_next += (uint64_t)n * QHCA_PAGE_SIZE;
    memset(d->ram + a, 0, (size_t)n * QHCA_PAGE_SIZE);
    return a;
}

static uint32_t drv_reg_read(void *opaque, uint32_t off)
{
    EbDev *d = opaque;

    return qhca_core_reg_read(&d->core, off);
}

static void drv_reg_write(void *opaque, uint32_t off, uint32_t val)
{
    EbDev *d = opaque;

    qhca_core_reg_write(&d->core, off, val);
}

static void drv_db_write(void *opaque, uint32_t page, uint32_t off,
                         uint32_t val)
{
    eb_dev_db(opaque, page, off, val);
}

static bool drv_step(void *opaque)
{
    EbDev *d = opaque;

    if (!d->bh_pending) {
        return false;
    }
    eb_dev_run(d);
    return true;
}

static const QhcaDrvOps eb_drv_ops = {
    .mem_read = drv_mem_read,
    .mem_write = drv_mem_write,
    .mem_set = drv_mem_set,
    .alloc_pages = drv_alloc_pages,
    .reg_read = drv_reg_read,
    .reg_write = drv_reg_write,
    .db_write = drv_db_write,
    .step = drv_step,
};

#define EB_ACCESS (QHCA_ACCESS_LOCAL_WRITE | QHCA_ACCESS_REMOTE_WRITE | \
                   QHCA_ACCESS_REMOTE_READ)

static bool create_qp(EbDev *d, EbQp *qp)
{
    struct qhca_cmd_create_qp q = { 0 };
    uint32_t qpn;

    q.type = QHCA_QPT_RC;
    q.sq_log_depth = EB_SQ_LOG;
    q.sq_log_stride = 7;        /* 4 SGEs */
    q.rq_log_depth = EB_RQ_LOG;
    q.rq_log_stride = 5;        /* 1 SGE */
    q.pdn = cpu_to_le32(d->pdn);
    q.send_cqn = cpu_to_le32(d->cqn);
    q.recv_cqn = cpu_to_le32(d->cqn);
    q.srqn = cpu_to_le32(QHCA_NO_SRQ);
    q.sq = qhca_drv_ring_alloc(&d->drv, &qp->sq, EB_SQ_LOG, 7);
    q.rq = qhca_drv_ring_alloc(&d->drv, &qp->rq, EB_RQ_LOG, 5);
    if (!qp->sq.npages || !qp->rq.npages ||
        qhca_drv_cmd(&d->drv, QHCA_CMD_CREATE_QP, &q, sizeof(q), &qpn) !=
        QHCA_CMD_OK) {
        return false;
    }
    qp->qpn = qpn;
    return true;
}

bool eb_drv_setup(EbDev *d, unsigned nqps, bool need_rq)
{
    QhcaDrv *q = &d->drv;
    struct qhca_pbl_desc mem;
    uint64_t pages[QHCA_PBL_ENTRIES];
    uint64_t l1[EB_MR_LEN / QHCA_PAGE_SIZE / QHCA_PBL_ENTRIES];
    uint8_t gid[16];
    uint32_t i, j;

    qhca_drv_init(q, &eb_drv_ops, d, EB_CTRL_BASE, EB_CTRL_BASE + 0x1000,
                  EB_CTRL_BASE + 0x2000, EB_CTRL_BASE + 0x3000, 100000);
    if (!qhca_drv_enable(q)) {
        return false;
    }
    qhca_drv_gid_ipv4(gid, d->ip);
    if (qhca_drv_add_gid(q, 0, gid) != QHCA_CMD_OK ||
        qhca_drv_cmd(q, QHCA_CMD_ALLOC_PD, NULL, 0, &d->pdn) != QHCA_CMD_OK) {
        return false;
    }
    mem = qhca_drv_ring_alloc(q, &d->eq, 6, 4);
    if (qhca_drv_create_eq(q, &mem, 6, 1, &d->eqn) != QHCA_CMD_OK) {
        return false;
    }
    mem = qhca_drv_ring_alloc(q, &d->cq, EB_CQ_LOG, 5);
    if (!d->cq.npages ||
        qhca_drv_create_cq(q, &mem, EB_CQ_LOG, d->eqn, &d->cqn) !=
        QHCA_CMD_OK) {
        return false;
    }
    /* the MR: 4 KiB pages, as a guest's, in a two-level page list */
    d->mr_iova = 0x40000000ULL + d->idx * 0x10000000ULL;
    for (i = 0; i < ARRAY_SIZE(l1); i++) {
        for (j = 0; j < QHCA_PBL_ENTRIES; j++) {
            pages[j] = EB_DATA_BASE +
                       ((uint64_t)i * QHCA_PBL_ENTRIES + j) * QHCA_PAGE_SIZE;
        }
        l1[i] = le64_to_cpu(qhca_drv_pbl(q, pages, QHCA_PBL_ENTRIES,
                                         QHCA_PAGE_SHIFT).pbl_addr);
    }
    mem = qhca_drv_pbl(q, l1, ARRAY_SIZE(l1), QHCA_PAGE_SHIFT);
    mem.num_pages = cpu_to_le32(EB_MR_LEN / QHCA_PAGE_SIZE);
    mem.levels = 2;
    if (qhca_drv_reg_mr(q, d->pdn, EB_ACCESS, d->mr_iova, EB_MR_LEN, &mem,
                        &d->lkey) != QHCA_CMD_OK) {
        return false;
    }
    d->nqps = nqps;
    d->qps = g_new0(EbQp, nqps);
    d->refill = g_new0(unsigned, nqps);
    for (i = 0; i < nqps; i++) {
        if (!create_qp(d, &d->qps[i])) {
            fprintf(stderr, "engine-bench: QP %u of %u not created "
                    "(ring memory used: %" PRIu64 " MiB)\n", i, nqps,
                    (d->ring_next - EB_RING_BASE) >> 20);
            return false;
        }
    }
    return true;
}

static bool connect_one(EbDev *d, EbQp *qp, EbDev *peer, EbQp *pqp,
                        unsigned mtu)
{
    struct qhca_qp_attr t = { 0 };

    t.access_flags = cpu_to_le32(QHCA_ACCESS_REMOTE_WRITE |
                                 QHCA_ACCESS_REMOTE_READ);
    t.path_mtu = mtu;
    t.dest_qpn = cpu_to_le32(pqp->qpn);
    t.rq_psn = cpu_to_le32(0x100 * (peer->idx + 1));
    t.max_dest_rd_atomic = QHCA_MAX_RD_ATOMIC;
    t.min_rnr_timer = 1;
    t.sgid_index = 0;
    t.hop_limit = 64;
    qhca_drv_gid_ipv4(t.dgid, peer->ip);
    memcpy(t.dmac, peer->mac, 6);
    t.timeout = 14;
    t.retry_cnt = 7;
    t.rnr_retry = 7;
    t.sq_psn = cpu_to_le32(0x100 * (d->idx + 1));
    t.max_rd_atomic = QHCA_MAX_RD_ATOMIC;
    if (qhca_drv_qp_connect(&d->drv, qp->qpn, true, &t) != QHCA_CMD_OK) {
        return false;
    }
    qp->peer_qpn = pqp->qpn;
    return true;
}

bool eb_drv_connect(EbDev *a, EbDev *b, unsigned mtu)
{
    unsigned i;

    for (i = 0; i < a->nqps && i < b->nqps; i++) {
        if (!connect_one(a, &a->qps[i], b, &b->qps[i], mtu) ||
            !connect_one(b, &b->qps[i], a, &a->qps[i], mtu)) {
            return false;
        }
    }
    return true;
}
