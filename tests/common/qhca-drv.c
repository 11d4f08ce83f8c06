/*
 * The test mini-driver of the qhca device (qhca-drv.h)
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qhca-drv.h"

#define M(x) QHCA_QP_ATTR_##x

void qhca_drv_init(QhcaDrv *q, const QhcaDrvOps *ops, void *opaque,
                   uint64_t cmdq, uint64_t cmdcq, uint64_t aeq,
                   uint64_t resp, unsigned cmd_steps)
{
    memset(q, 0, sizeof(*q));
    q->ops = ops;
    q->opaque = opaque;
    q->cmdq = cmdq;
    q->cmdcq = cmdcq;
    q->aeq = aeq;
    q->resp = resp;
    q->cmd_steps = cmd_steps;
}

static void wr(QhcaDrv *q, uint32_t reg, uint32_t val)
{
    q->ops->reg_write(q->opaque, reg, val);
}

void qhca_drv_set_queue_regs(QhcaDrv *q)
{
    wr(q, QHCA_REG_CMDQ_BASE_LO, q->cmdq);
    wr(q, QHCA_REG_CMDQ_BASE_HI, q->cmdq >> 32);
    wr(q, QHCA_REG_CMDQ_LOG_DEPTH, QHCA_DRV_CMDQ_LOG);
    wr(q, QHCA_REG_CMDCQ_BASE_LO, q->cmdcq);
    wr(q, QHCA_REG_CMDCQ_BASE_HI, q->cmdcq >> 32);
    wr(q, QHCA_REG_CMDCQ_LOG_DEPTH, QHCA_DRV_CMDCQ_LOG);
    wr(q, QHCA_REG_AEQ_BASE_LO, q->aeq);
    wr(q, QHCA_REG_AEQ_BASE_HI, q->aeq >> 32);
    wr(q, QHCA_REG_AEQ_LOG_DEPTH, QHCA_DRV_AEQ_LOG);
}

bool qhca_drv_enable(QhcaDrv *q)
{
    const uint64_t pages[] = { q->cmdq, q->cmdcq, q->aeq, q->resp };
    size_t i;

    wr(q, QHCA_REG_CTRL, QHCA_CTRL_RESET);
    q->cmdq_pi = q->cmdcq_ci = q->aeq_ci = 0;
    q->cookie = 0;
    q->arm_cmdcq = false;
    for (i = 0; i < ARRAY_SIZE(pages); i++) {
        q->ops->mem_set(q->opaque, pages[i], 0, QHCA_PAGE_SIZE);
    }
    qhca_drv_set_queue_regs(q);
    wr(q, QHCA_REG_CTRL, QHCA_CTRL_ENABLE);
    return q->ops->reg_read(q->opaque, QHCA_REG_STATUS) == QHCA_STATUS_READY;
}

bool qhca_drv_entry_ready(QhcaDrv *q, uint64_t addr, uint32_t log,
                          uint16_t idx, uint32_t owner_off)
{
    uint8_t owner = 0;

    q->ops->mem_read(q->opaque, addr + owner_off, &owner, 1);
    return (owner & QHCA_OWNER_BIT) == !((idx >> log) & 1);
}

bool qhca_drv_wait_entry(QhcaDrv *q, uint64_t addr, uint32_t log,
                         uint16_t idx, uint32_t owner_off, unsigned steps)
{
    unsigned i;

    for (i = 0; i < steps; i++) {
        if (qhca_drv_entry_ready(q, addr, log, idx, owner_off)) {
            return true;
        }
        if (!q->ops->step(q->opaque)) {
            break;
        }
    }
    return qhca_drv_entry_ready(q, addr, log, idx, owner_off);
}

bool qhca_drv_cmd_init(QhcaDrv *q, struct qhca_cmd *cmd, uint16_t opcode,
                       const void *payload, size_t len)
{
    memset(cmd, 0, sizeof(*cmd));
    if (len > sizeof(cmd->raw)) {
        return false;
    }
    cmd->hdr.opcode = cpu_to_le16(opcode);
    cmd->hdr.resp_addr = cpu_to_le64(q->resp);
    cmd->hdr.resp_len = cpu_to_le32(QHCA_DRV_RESP_LEN);
    if (len) {
        memcpy(cmd->raw, payload, len);
    }
    return true;
}

void qhca_drv_cmd_post(QhcaDrv *q, struct qhca_cmd *cmd)
{
    uint32_t slot = q->cmdq_pi & ((1 << QHCA_DRV_CMDQ_LOG) - 1);

    cmd->hdr.cookie = cpu_to_le32(++q->cookie);
    q->ops->mem_write(q->opaque, q->cmdq + slot * QHCA_CMD_SIZE, cmd,
                      sizeof(*cmd));
    q->cmdq_pi++;
    q->ops->db_write(q->opaque, QHCA_KERNEL_DB_PAGE, QHCA_DB_CMDQ,
                     q->cmdq_pi);
}

bool qhca_drv_cmd_take(QhcaDrv *q, struct qhca_cmd_comp *comp)
{
    uint32_t slot = q->cmdcq_ci & ((1 << QHCA_DRV_CMDCQ_LOG) - 1);
    uint64_t addr = q->cmdcq + slot * QHCA_CMD_COMP_SIZE;

    if (!qhca_drv_wait_entry(q, addr, QHCA_DRV_CMDCQ_LOG, q->cmdcq_ci,
                             offsetof(struct qhca_cmd_comp, owner),
                             q->cmd_steps)) {
        return false;
    }
    q->ops->mem_read(q->opaque, addr, comp, sizeof(*comp));
    q->cmdcq_ci++;
    q->ops->db_write(q->opaque, QHCA_KERNEL_DB_PAGE, QHCA_DB_CMDCQ,
                     q->cmdcq_ci | (q->arm_cmdcq ? QHCA_DB_CMDCQ_ARM : 0));
    return true;
}

int qhca_drv_cmd_run(QhcaDrv *q, struct qhca_cmd *cmd,
                     struct qhca_cmd_comp *comp)
{
    qhca_drv_cmd_post(q, cmd);
    if (!qhca_drv_cmd_take(q, comp) || comp->cookie != cmd->hdr.cookie ||
        comp->opcode != (le16_to_cpu(cmd->hdr.opcode) & 0xff)) {
        return -1;
    }
    return le16_to_cpu(comp->status);
}

int qhca_drv_cmd(QhcaDrv *q, uint16_t opcode, const void *payload,
                 size_t len, uint32_t *result)
{
    struct qhca_cmd cmd;
    struct qhca_cmd_comp comp;
    int st;

    if (!qhca_drv_cmd_init(q, &cmd, opcode, payload, len) ||
        (q->ops->cmd_filter && !q->ops->cmd_filter(q->opaque, &cmd))) {
        return -1;
    }
    st = qhca_drv_cmd_run(q, &cmd, &comp);
    if (st >= 0 && result) {
        *result = le32_to_cpu(comp.result);
    }
    return st;
}

void qhca_drv_arm_cmdcq(QhcaDrv *q)
{
    q->arm_cmdcq = true;
    q->ops->db_write(q->opaque, QHCA_KERNEL_DB_PAGE, QHCA_DB_CMDCQ,
                     q->cmdcq_ci | QHCA_DB_CMDCQ_ARM);
}

unsigned qhca_drv_aeq_poll(QhcaDrv *q)
{
    unsigned n = 0;

    while (qhca_drv_entry_ready(q, q->aeq + (q->aeq_ci &
                                ((1 << QHCA_DRV_AEQ_LOG) - 1)) *
                                QHCA_EQE_SIZE, QHCA_DRV_AEQ_LOG, q->aeq_ci,
                                offsetof(struct qhca_eqe, owner))) {
        q->aeq_ci++;
        n++;
    }
    return n;
}

struct qhca_pbl_desc qhca_drv_pbl_desc(uint64_t pbl, uint32_t pages,
                                       uint8_t shift)
{
    struct qhca_pbl_desc m = { 0 };

    m.pbl_addr = cpu_to_le64(pbl);
    m.num_pages = cpu_to_le32(pages);
    m.levels = 1;
    m.page_shift = shift;
    return m;
}

struct qhca_pbl_desc qhca_drv_pbl(QhcaDrv *q, const uint64_t *pages,
                                  uint32_t n, uint8_t shift)
{
    uint64_t le[QHCA_PBL_ENTRIES];
    uint64_t pbl = q->ops->alloc_pages(q->opaque, 1);
    uint32_t i;

    for (i = 0; i < MIN(n, QHCA_PBL_ENTRIES); i++) {
        le[i] = cpu_to_le64(pages[i]);
    }
    if (pbl && i) {
        q->ops->mem_write(q->opaque, pbl, le, 8ULL * i);
    }
    return qhca_drv_pbl_desc(pbl, n, shift);
}

struct qhca_pbl_desc qhca_drv_ring_alloc(QhcaDrv *q, QhcaDrvRing *r,
                                         uint32_t log, uint32_t stride_log)
{
    uint64_t bytes = 1ULL << MIN(log + stride_log, 30);
    uint32_t n = MIN(DIV_ROUND_UP(bytes, QHCA_PAGE_SIZE),
                     QHCA_DRV_RING_MAX_PAGES);
    uint64_t mem = q->ops->alloc_pages(q->opaque, n);
    uint32_t i;

    memset(r, 0, sizeof(*r));
    r->log = log;
    r->stride_log = stride_log;
    r->npages = mem ? n : 0;
    for (i = 0; i < r->npages; i++) {
        r->page[i] = mem + (uint64_t)(n - 1 - i) * QHCA_PAGE_SIZE;
    }
    return qhca_drv_pbl(q, r->page, r->npages, QHCA_PAGE_SHIFT);
}

uint64_t qhca_drv_ring_addr(const QhcaDrvRing *r, uint32_t idx)
{
    uint64_t off = (uint64_t)(idx & ((1u << r->log) - 1)) << r->stride_log;
    uint64_t pg = off / QHCA_PAGE_SIZE;

    if (pg >= r->npages) {
        return 0;
    }
    return r->page[pg] + off % QHCA_PAGE_SIZE;
}

bool qhca_drv_ring_ready(QhcaDrv *q, const QhcaDrvRing *r, uint16_t idx,
                         uint32_t owner_off)
{
    uint64_t a = qhca_drv_ring_addr(r, idx);

    return a && qhca_drv_entry_ready(q, a, r->log, idx, owner_off);
}

int qhca_drv_create_eq(QhcaDrv *q, const struct qhca_pbl_desc *mem,
                       uint32_t log, uint32_t vector, uint32_t *out)
{
    struct qhca_cmd_create_eq e = { 0 };

    e.mem = *mem;
    e.log_depth = log;
    e.vector = cpu_to_le32(vector);
    return qhca_drv_cmd(q, QHCA_CMD_CREATE_EQ, &e, sizeof(e), out);
}

int qhca_drv_create_cq(QhcaDrv *q, const struct qhca_pbl_desc *mem,
                       uint32_t log, uint32_t eqn, uint32_t *out)
{
    struct qhca_cmd_create_cq c = { 0 };

    c.mem = *mem;
    c.log_depth = log;
    c.eqn = cpu_to_le32(eqn);
    return qhca_drv_cmd(q, QHCA_CMD_CREATE_CQ, &c, sizeof(c), out);
}

int qhca_drv_create_srq(QhcaDrv *q, const struct qhca_pbl_desc *mem,
                        uint32_t pdn, uint32_t log, uint32_t stride_log,
                        uint32_t *out)
{
    struct qhca_cmd_create_srq s = { 0 };

    s.mem = *mem;
    s.pdn = cpu_to_le32(pdn);
    s.log_depth = log;
    s.log_stride = stride_log;
    return qhca_drv_cmd(q, QHCA_CMD_CREATE_SRQ, &s, sizeof(s), out);
}

int qhca_drv_reg_mr(QhcaDrv *q, uint32_t pdn, uint32_t access, uint64_t iova,
                    uint64_t len, const struct qhca_pbl_desc *mem,
                    uint32_t *key)
{
    struct qhca_cmd_reg_mr c = { 0 };

    c.mem = *mem;
    c.pdn = cpu_to_le32(pdn);
    c.access = cpu_to_le32(access);
    c.iova = cpu_to_le64(iova);
    c.length = cpu_to_le64(len);
    c.key_variant = cpu_to_le32(0x11);
    return qhca_drv_cmd(q, QHCA_CMD_REG_MR, &c, sizeof(c), key);
}

void qhca_drv_gid_ipv4(uint8_t *gid, uint32_t ip)
{
    memset(gid, 0, 16);
    gid[10] = gid[11] = 0xff;
    stl_be_p(&gid[12], ip);
}

int qhca_drv_add_gid(QhcaDrv *q, uint32_t index, const uint8_t *gid)
{
    struct qhca_cmd_gid g = { .index = cpu_to_le32(index) };

    memcpy(g.gid, gid, 16);
    return qhca_drv_cmd(q, QHCA_CMD_ADD_GID, &g, sizeof(g), NULL);
}

int qhca_drv_create_ah(QhcaDrv *q, uint32_t pdn, uint8_t sgid_index,
                       const uint8_t *dgid, const uint8_t *dmac,
                       uint32_t *ahn)
{
    struct qhca_cmd_create_ah ah = { 0 };

    ah.pdn = cpu_to_le32(pdn);
    ah.sgid_index = sgid_index;
    ah.hop_limit = 64;
    memcpy(ah.dgid, dgid, 16);
    memcpy(ah.dmac, dmac, 6);
    return qhca_drv_cmd(q, QHCA_CMD_CREATE_AH, &ah, sizeof(ah), ahn);
}

int qhca_drv_modify_qp(QhcaDrv *q, uint32_t qpn, uint32_t mask,
                       const struct qhca_qp_attr *a)
{
    struct qhca_cmd_modify_qp m = { 0 };

    m.qpn = cpu_to_le32(qpn);
    m.attr_mask = cpu_to_le32(mask);
    m.attr = *a;
    return qhca_drv_cmd(q, QHCA_CMD_MODIFY_QP, &m, sizeof(m), NULL);
}

int qhca_drv_query_qp(QhcaDrv *q, uint32_t qpn, struct qhca_qp_attr *a)
{
    struct qhca_cmd_obj o = { .handle = cpu_to_le32(qpn) };
    int st = qhca_drv_cmd(q, QHCA_CMD_QUERY_QP, &o, sizeof(o), NULL);

    if (st == QHCA_CMD_OK) {
        q->ops->mem_read(q->opaque, q->resp, a, sizeof(*a));
    }
    return st;
}

int qhca_drv_qp_connect(QhcaDrv *q, uint32_t qpn, bool rc,
                        const struct qhca_qp_attr *t)
{
    struct qhca_qp_attr a = { 0 };
    uint32_t rtr = rc ? M(MAX_DEST_RD_ATOMIC) | M(MIN_RNR_TIMER) : 0;
    uint32_t rts = rc ? M(TIMEOUT) | M(RETRY_CNT) | M(RNR_RETRY) |
                        M(MAX_QP_RD_ATOMIC) : 0;
    int st;

    /* each step adds its attributes to those of the steps before */
    a.qp_state = QHCA_QPS_INIT;
    a.access_flags = t->access_flags;
    st = qhca_drv_modify_qp(q, qpn, M(STATE) | M(PKEY_INDEX) | M(PORT) |
                            M(ACCESS_FLAGS), &a);
    if (st != QHCA_CMD_OK) {
        return st;
    }
    a.qp_state = QHCA_QPS_RTR;
    a.path_mtu = t->path_mtu;
    a.dest_qpn = t->dest_qpn;
    a.rq_psn = t->rq_psn;
    a.max_dest_rd_atomic = t->max_dest_rd_atomic;
    a.min_rnr_timer = t->min_rnr_timer;
    a.sgid_index = t->sgid_index;
    a.hop_limit = t->hop_limit;
    a.traffic_class = t->traffic_class;
    a.flow_label = t->flow_label;
    memcpy(a.dgid, t->dgid, sizeof(a.dgid));
    memcpy(a.dmac, t->dmac, sizeof(a.dmac));
    st = qhca_drv_modify_qp(q, qpn, M(STATE) | M(AV) | M(PATH_MTU) |
                            M(DEST_QPN) | M(RQ_PSN) | rtr, &a);
    if (st != QHCA_CMD_OK) {
        return st;
    }
    a.qp_state = QHCA_QPS_RTS;
    a.timeout = t->timeout;
    a.retry_cnt = t->retry_cnt;
    a.rnr_retry = t->rnr_retry;
    a.sq_psn = t->sq_psn;
    a.max_rd_atomic = t->max_rd_atomic;
    return qhca_drv_modify_qp(q, qpn, M(STATE) | M(SQ_PSN) | rts, &a);
}

int qhca_drv_qp_ud_up(QhcaDrv *q, uint32_t qpn, uint32_t qkey,
                      uint32_t sq_psn, bool rts)
{
    struct qhca_qp_attr a = { 0 };
    int st;

    a.qp_state = QHCA_QPS_INIT;
    a.qkey = cpu_to_le32(qkey);
    st = qhca_drv_modify_qp(q, qpn, M(STATE) | M(PKEY_INDEX) | M(PORT) |
                            M(QKEY), &a);
    if (st != QHCA_CMD_OK) {
        return st;
    }
    a.qp_state = QHCA_QPS_RTR;
    st = qhca_drv_modify_qp(q, qpn, M(STATE), &a);
    if (st != QHCA_CMD_OK || !rts) {
        return st;
    }
    a.qp_state = QHCA_QPS_RTS;
    a.sq_psn = cpu_to_le32(sq_psn);
    return qhca_drv_modify_qp(q, qpn, M(STATE) | M(SQ_PSN), &a);
}

struct qhca_sge qhca_drv_sge(uint64_t addr, uint32_t len, uint32_t lkey)
{
    struct qhca_sge s = {
        .addr = cpu_to_le64(addr),
        .length = cpu_to_le32(len),
        .lkey = cpu_to_le32(lkey),
    };

    return s;
}

struct qhca_send_wqe qhca_drv_wqe(uint8_t opcode, uint64_t wr_id)
{
    struct qhca_send_wqe w = { 0 };

    w.opcode = opcode;
    w.flags = QHCA_WQE_SIGNALED;
    w.wr_id = cpu_to_le64(wr_id);
    return w;
}

void qhca_drv_db(QhcaDrv *q, uint32_t off, uint32_t num, uint16_t idx)
{
    q->ops->db_write(q->opaque, QHCA_KERNEL_DB_PAGE, off,
                     num | (uint32_t)idx << QHCA_DB_IDX_SHIFT);
}

bool qhca_drv_put_send(QhcaDrv *q, const QhcaDrvRing *sq, uint16_t idx,
                       struct qhca_send_wqe *w, const struct qhca_sge *sges,
                       unsigned nsge, const void *inl, uint32_t inl_len)
{
    uint64_t a = qhca_drv_ring_addr(sq, idx);
    uint32_t room = (1u << sq->stride_log) - QHCA_SEND_WQE_HDR_SIZE;

    if (!a) {
        return false;
    }
    if (inl) {
        w->flags |= QHCA_WQE_INLINE;
        w->inline_len = cpu_to_le32(inl_len);
        q->ops->mem_write(q->opaque, a + QHCA_SEND_WQE_HDR_SIZE, inl,
                          MIN(inl_len, room));
    } else {
        w->num_sge = nsge;
        q->ops->mem_write(q->opaque, a + QHCA_SEND_WQE_HDR_SIZE, sges,
                          MIN(nsge * sizeof(*sges), room));
    }
    q->ops->mem_write(q->opaque, a, w, sizeof(*w));
    return true;
}

bool qhca_drv_put_recv(QhcaDrv *q, const QhcaDrvRing *rq, uint16_t idx,
                       uint64_t wr_id, const struct qhca_sge *sges,
                       unsigned nsge)
{
    struct qhca_recv_wqe w = { .wr_id = cpu_to_le64(wr_id), .num_sge = nsge };
    uint64_t a = qhca_drv_ring_addr(rq, idx);
    uint32_t room = (1u << rq->stride_log) - QHCA_RECV_WQE_HDR_SIZE;

    if (!a) {
        return false;
    }
    q->ops->mem_write(q->opaque, a + QHCA_RECV_WQE_HDR_SIZE, sges,
                      MIN(nsge * sizeof(*sges), room));
    q->ops->mem_write(q->opaque, a, &w, sizeof(w));
    return true;
}

bool qhca_drv_poll_cq(QhcaDrv *q, const QhcaDrvRing *cq, uint16_t *ci,
                      uint32_t cqn, struct qhca_cqe *cqe)
{
    if (!qhca_drv_ring_ready(q, cq, *ci, offsetof(struct qhca_cqe, owner))) {
        return false;
    }
    q->ops->mem_read(q->opaque, qhca_drv_ring_addr(cq, *ci), cqe,
                     sizeof(*cqe));
    (*ci)++;
    qhca_drv_db(q, QHCA_DB_CQ_CI, cqn, *ci);
    return true;
}
