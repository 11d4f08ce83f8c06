/*
 * qhca device logic: the commands of QPs, and the IBA QP state machine.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/host-utils.h"
#include "qhca-cmd-int.h"
#include "qhca-roce.h"
#include "trace.h"

/*
 * The doorbell page and queue geometry a QP may have (CREATE_QP's, and a
 * QP's in a saved state); @has_rq: it has its own receive queue (no SRQ)
 */
bool qhca_qp_geometry_ok(uint32_t db_page, uint32_t sq_log_depth,
                         uint32_t sq_log_stride, bool has_rq,
                         uint32_t rq_log_depth, uint32_t rq_log_stride,
                         uint32_t max_inline)
{
    return db_page < QHCA_DB_PAGES &&
           sq_log_stride >= QHCA_SEND_WQE_MIN_LOG_STRIDE &&
           sq_log_stride <= QHCA_WQE_MAX_LOG_STRIDE &&
           (!has_rq || (rq_log_stride >= QHCA_RECV_WQE_MIN_LOG_STRIDE &&
                        rq_log_stride <= QHCA_WQE_MAX_LOG_STRIDE)) &&
           max_inline <= QHCA_MAX_INLINE &&
           max_inline <= (1u << sq_log_stride) - QHCA_SEND_WQE_HDR_SIZE &&
           sq_log_depth <= (uint32_t)ctz32(QHCA_MAX_QP_WR) &&
           (!has_rq || rq_log_depth <= (uint32_t)ctz32(QHCA_MAX_QP_WR));
}

int qhca_cmd_create_qp(QhcaCore *c, QhcaCmdCtx *x)
{
    const struct qhca_cmd_create_qp *p = &x->cmd->create_qp;
    uint32_t pdn = le32_to_cpu(p->pdn);
    uint32_t scqn = le32_to_cpu(p->send_cqn);
    uint32_t rcqn = le32_to_cpu(p->recv_cqn);
    uint32_t srqn = le32_to_cpu(p->srqn);
    uint32_t db_page = le32_to_cpu(p->db_page);
    uint32_t max_inline = le32_to_cpu(p->max_inline);
    QhcaSrq *srq = NULL;
    QhcaQp *qp;
    int n, ret;

    if (p->type != QHCA_QPT_RC && p->type != QHCA_QPT_UC &&
        p->type != QHCA_QPT_UD && p->type != QHCA_QPT_GSI) {
        QHCA_GUEST_ERROR(c, create_qp_bad_type, p->type);
        return QHCA_CMD_ERR_PARAM;
    }
    if (!LOOKUP(c, pd, pdn) || !LOOKUP(c, cq, scqn) || !LOOKUP(c, cq, rcqn)) {
        return QHCA_CMD_ERR_HANDLE;
    }
    if (srqn != QHCA_NO_SRQ) {
        srq = LOOKUP(c, srq, srqn);
        if (!srq) {
            return QHCA_CMD_ERR_HANDLE;
        }
        if (srq->pdn != pdn || p->type == QHCA_QPT_GSI) {
            QHCA_GUEST_ERROR(c, create_qp_srq_not_usable_here, srqn,
                             srq->pdn, p->type, pdn);
            return QHCA_CMD_ERR_PARAM;
        }
    }
    if (!qhca_qp_geometry_ok(db_page, p->sq_log_depth, p->sq_log_stride,
                             !srq, p->rq_log_depth, p->rq_log_stride,
                             max_inline)) {
        QHCA_GUEST_ERROR(c, create_qp_bad_queue_geometry, p->type, db_page,
                         p->sq_log_depth, p->sq_log_stride, p->rq_log_depth,
                         p->rq_log_stride, max_inline, srqn);
        return QHCA_CMD_ERR_PARAM;
    }
    if (p->type == QHCA_QPT_GSI) {
        if (c->qp[1]) {
            return QHCA_CMD_ERR_NO_RESOURCES;
        }
        n = 1;
    } else {
        n = qhca_alloc_slot((void **)c->qp, QHCA_MAX_QP, 2);
        if (n < 0) {
            return QHCA_CMD_ERR_NO_RESOURCES;
        }
    }
    qp = g_new0(QhcaQp, 1);
    ret = qhca_ring_init(c, &qp->sq, &p->sq, p->sq_log_depth,
                         p->sq_log_stride);
    if (ret) {
        g_free(qp);
        return ret;
    }
    if (!srq) {
        ret = qhca_ring_init(c, &qp->rq, &p->rq, p->rq_log_depth,
                             p->rq_log_stride);
        if (ret) {
            qhca_pages_free(c, &qp->sq.mem);
            g_free(qp);
            return ret;
        }
    }
    /* the engine's state per SQ slot counts in the budget too */
    if (!qhca_budget_charge(c, qhca_qp_engine_units(p->sq_log_depth))) {
        qhca_pages_free(c, &qp->sq.mem);
        if (qp->rq.mem.addr) {
            qhca_pages_free(c, &qp->rq.mem);
        }
        g_free(qp);
        return QHCA_CMD_ERR_NO_RESOURCES;
    }
    qp->qpn = n;
    qp->type = p->type;
    qp->pdn = pdn;
    qp->send_cqn = scqn;
    qp->recv_cqn = rcqn;
    qp->srqn = srq ? srqn : QHCA_NO_SRQ;
    qp->db_page = db_page;
    qp->max_inline = max_inline;
    qp->sq_sig_all = p->sq_sig_all;
    qp->attr.qp_state = QHCA_QPS_RESET;
    qhca_qp_install(c, qp);
    x->result = n;
    return QHCA_CMD_OK;
}

/*
 * A QP whose fields and rings are set up (and its engine's units charged)
 * goes into the table: it holds its PD, CQs and SRQ, and gets its engine
 * (CREATE_QP, and a QP loaded from a saved state)
 */
void qhca_qp_install(QhcaCore *c, QhcaQp *qp)
{
    c->pd[qp->pdn]->refs++;
    c->cq[qp->send_cqn]->refs++;
    c->cq[qp->recv_cqn]->refs++;
    if (qp->srqn != QHCA_NO_SRQ) {
        c->srq[qp->srqn]->refs++;
    }
    qhca_qp_engine_create(c, qp);
    c->qp[qp->qpn] = qp;
}

/*
 * The IBA QP state machine (IBA 10.3.1, 11.2.4.2): for each transition and
 * QP type, the attributes that must and may be given.
 */
typedef struct QhcaQpTrans {
    bool valid;
    uint32_t req[4];            /* indexed by qhca_qp_kind() */
    uint32_t opt[4];
} QhcaQpTrans;

enum { KIND_RC, KIND_UD, KIND_GSI, KIND_UC };

#define A(x) QHCA_QP_ATTR_##x

static const QhcaQpTrans qhca_qp_trans[7][7] = {
    [QHCA_QPS_RESET] = {
        [QHCA_QPS_RESET] = { .valid = true },
        [QHCA_QPS_INIT] = {
            .valid = true,
            .req = {
                [KIND_RC] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
                [KIND_UD] = A(PKEY_INDEX) | A(PORT) | A(QKEY),
                [KIND_GSI] = A(PKEY_INDEX) | A(QKEY),
                [KIND_UC] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
            },
        },
    },
    [QHCA_QPS_INIT] = {
        [QHCA_QPS_INIT] = {
            .valid = true,
            .opt = {
                [KIND_RC] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
                [KIND_UD] = A(PKEY_INDEX) | A(PORT) | A(QKEY),
                [KIND_GSI] = A(PKEY_INDEX) | A(QKEY),
                [KIND_UC] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
            },
        },
        [QHCA_QPS_RTR] = {
            .valid = true,
            .req = {
                [KIND_RC] = A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN) |
                            A(MAX_DEST_RD_ATOMIC) | A(MIN_RNR_TIMER),
                [KIND_UC] = A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN),
            },
            .opt = {
                [KIND_RC] = A(ACCESS_FLAGS) | A(PKEY_INDEX),
                [KIND_UC] = A(ACCESS_FLAGS) | A(PKEY_INDEX),
                [KIND_UD] = A(PKEY_INDEX) | A(QKEY),
                [KIND_GSI] = A(PKEY_INDEX) | A(QKEY),
            },
        },
    },
    [QHCA_QPS_RTR] = {
        [QHCA_QPS_RTS] = {
            .valid = true,
            .req = {
                [KIND_RC] = A(TIMEOUT) | A(RETRY_CNT) | A(RNR_RETRY) |
                            A(SQ_PSN) | A(MAX_QP_RD_ATOMIC),
                [KIND_UD] = A(SQ_PSN),
                [KIND_GSI] = A(SQ_PSN),
                [KIND_UC] = A(SQ_PSN),
            },
            .opt = {
                [KIND_RC] = A(CUR_STATE) | A(ACCESS_FLAGS) |
                            A(MIN_RNR_TIMER),
                [KIND_UD] = A(CUR_STATE) | A(QKEY),
                [KIND_GSI] = A(CUR_STATE) | A(QKEY),
                [KIND_UC] = A(CUR_STATE) | A(ACCESS_FLAGS),
            },
        },
    },
    [QHCA_QPS_RTS] = {
        [QHCA_QPS_RTS] = {
            .valid = true,
            .opt = {
                [KIND_RC] = A(CUR_STATE) | A(ACCESS_FLAGS) |
                            A(MIN_RNR_TIMER),
                [KIND_UD] = A(CUR_STATE) | A(QKEY),
                [KIND_GSI] = A(CUR_STATE) | A(QKEY),
                [KIND_UC] = A(CUR_STATE) | A(ACCESS_FLAGS),
            },
        },
        [QHCA_QPS_SQD] = {
            .valid = true,
            .opt = {
                [KIND_RC] = A(EN_SQD_ASYNC),
                [KIND_UD] = A(EN_SQD_ASYNC),
                [KIND_GSI] = A(EN_SQD_ASYNC),
                [KIND_UC] = A(EN_SQD_ASYNC),
            },
        },
    },
    [QHCA_QPS_SQD] = {
        [QHCA_QPS_RTS] = {
            .valid = true,
            .opt = {
                [KIND_RC] = A(CUR_STATE) | A(ACCESS_FLAGS) |
                            A(MIN_RNR_TIMER),
                [KIND_UD] = A(CUR_STATE) | A(QKEY),
                [KIND_GSI] = A(CUR_STATE) | A(QKEY),
                [KIND_UC] = A(CUR_STATE) | A(ACCESS_FLAGS),
            },
        },
        [QHCA_QPS_SQD] = {
            .valid = true,
            .opt = {
                [KIND_RC] = A(AV) | A(TIMEOUT) | A(RETRY_CNT) |
                            A(RNR_RETRY) | A(MAX_QP_RD_ATOMIC) |
                            A(MAX_DEST_RD_ATOMIC) | A(ACCESS_FLAGS) |
                            A(PKEY_INDEX) | A(MIN_RNR_TIMER),
                [KIND_UD] = A(PKEY_INDEX) | A(QKEY),
                [KIND_GSI] = A(PKEY_INDEX) | A(QKEY),
                [KIND_UC] = A(AV) | A(ACCESS_FLAGS) | A(PKEY_INDEX),
            },
        },
    },
    [QHCA_QPS_SQE] = {
        [QHCA_QPS_RTS] = {
            .valid = true,
            .opt = {
                [KIND_UD] = A(CUR_STATE) | A(QKEY),
                [KIND_GSI] = A(CUR_STATE) | A(QKEY),
                [KIND_UC] = A(CUR_STATE) | A(ACCESS_FLAGS),
            },
        },
    },
};

static int qhca_qp_kind(const QhcaQp *qp)
{
    return qp->type == QHCA_QPT_RC ? KIND_RC :
           qp->type == QHCA_QPT_UC ? KIND_UC :
           qp->type == QHCA_QPT_UD ? KIND_UD : KIND_GSI;
}

/*
 * The GIDs of an address vector whose source GID is valid: the destination
 * is an IPv4 address (IPv4-mapped) or an IPv6 unicast one, of the source
 * GID's IP version.  An AH may be made before its GID is: then this is
 * left to the UD WQE that uses it (qhca_qp_addr()).
 */
bool qhca_av_gids_ok(QhcaCore *c, uint8_t sgid_index,
                     const uint8_t *dgid, bool ud)
{
    QhcaRoceHdr h;

    if (sgid_index >= QHCA_GID_TABLE_LEN || !c->gid[sgid_index].valid) {
        /* a multicast group is never a connected QP's destination */
        return ud || !qhca_roce_gid_is_mcast(dgid);
    }
    return ud ? qhca_roce_set_gids_ud(&h, c->gid[sgid_index].gid, dgid) :
           qhca_roce_set_gids(&h, c->gid[sgid_index].gid, dgid);
}

/* Check the values of the attributes in @mask */
static bool qhca_qp_attr_ok(QhcaCore *c, uint32_t mask,
                            const struct qhca_qp_attr *a)
{
    if ((mask & A(PATH_MTU)) && (a->path_mtu < 1 || a->path_mtu > 5)) {
        return false;
    }
    if ((mask & A(TIMEOUT)) && a->timeout > 31) {
        return false;
    }
    if ((mask & A(RETRY_CNT)) && a->retry_cnt > 7) {
        return false;
    }
    if ((mask & A(RNR_RETRY)) && a->rnr_retry > 7) {
        return false;
    }
    if ((mask & A(MIN_RNR_TIMER)) && a->min_rnr_timer > 31) {
        return false;
    }
    if ((mask & A(MAX_QP_RD_ATOMIC)) &&
        a->max_rd_atomic > QHCA_MAX_RD_ATOMIC) {
        return false;
    }
    if ((mask & A(MAX_DEST_RD_ATOMIC)) &&
        a->max_dest_rd_atomic > QHCA_MAX_RD_ATOMIC) {
        return false;
    }
    if ((mask & A(ACCESS_FLAGS)) &&
        (le32_to_cpu(a->access_flags) & ~QHCA_ACCESS_MASK)) {
        return false;
    }
    if ((mask & A(DEST_QPN)) && le32_to_cpu(a->dest_qpn) > 0xffffff) {
        return false;
    }
    if ((mask & A(RQ_PSN)) && le32_to_cpu(a->rq_psn) > 0xffffff) {
        return false;
    }
    if ((mask & A(SQ_PSN)) && le32_to_cpu(a->sq_psn) > 0xffffff) {
        return false;
    }
    if ((mask & A(AV)) &&
        (a->sgid_index >= QHCA_GID_TABLE_LEN ||
         !c->gid[a->sgid_index].valid ||
         !qhca_av_gids_ok(c, a->sgid_index, a->dgid, false) ||
         le32_to_cpu(a->flow_label) > 0xfffff)) {
        return false;
    }
    return true;
}

int qhca_cmd_modify_qp(QhcaCore *c, QhcaCmdCtx *x)
{
    const struct qhca_cmd_modify_qp *p = &x->cmd->modify_qp;
    uint32_t qpn = le32_to_cpu(p->qpn);
    uint32_t mask = le32_to_cpu(p->attr_mask);
    const struct qhca_qp_attr *a = &p->attr;
    QhcaQp *qp = LOOKUP(c, qp, qpn);
    uint8_t cur, next;
    uint32_t req, opt;
    int kind;

    if (!qp) {
        return QHCA_CMD_ERR_HANDLE;
    }
    kind = qhca_qp_kind(qp);
    cur = qp->attr.qp_state;
    if (mask & A(CUR_STATE)) {
        if (a->cur_qp_state > QHCA_QPS_ERR) {
            return QHCA_CMD_ERR_PARAM;
        }
        if (a->cur_qp_state != cur) {
            trace_qhca_err_qp_state(qpn, cur, a->cur_qp_state);
            return QHCA_CMD_ERR_STATE;
        }
    }
    next = (mask & A(STATE)) ? a->qp_state : cur;
    if (next > QHCA_QPS_ERR) {
        return QHCA_CMD_ERR_PARAM;
    }
    if (next == QHCA_QPS_RESET || next == QHCA_QPS_ERR) {
        /* Allowed from any state; other attributes are ignored (IBA) */
        req = 0;
        opt = ~0u;
        mask &= A(STATE) | A(CUR_STATE);
    } else {
        const QhcaQpTrans *t = &qhca_qp_trans[cur][next];

        if (!t->valid) {
            trace_qhca_err_qp_state(qpn, cur, next);
            return QHCA_CMD_ERR_STATE;
        }
        req = t->req[kind];
        opt = t->opt[kind];
    }
    if ((mask & req) != req ||
        (mask & ~(req | opt | A(STATE) | A(CUR_STATE)))) {
        trace_qhca_err_qp_attr(qpn, cur, next, mask);
        return QHCA_CMD_ERR_STATE;
    }
    /*
     * PORT and PKEY_INDEX carry no value here: the device has one port and
     * one P_Key (0xffff); the driver checks what the consumer asked for.
     */
    if (!qhca_qp_attr_ok(c, mask, a)) {
        trace_qhca_err_qp_attr(qpn, cur, next, mask);
        return QHCA_CMD_ERR_PARAM;
    }

#define SET(bit, field) \
    do { if (mask & A(bit)) { qp->attr.field = a->field; } } while (0)
    SET(EN_SQD_ASYNC, en_sqd_async_notify);
    SET(ACCESS_FLAGS, access_flags);
    SET(QKEY, qkey);
    SET(PATH_MTU, path_mtu);
    SET(TIMEOUT, timeout);
    SET(RETRY_CNT, retry_cnt);
    SET(RNR_RETRY, rnr_retry);
    SET(RQ_PSN, rq_psn);
    SET(MAX_QP_RD_ATOMIC, max_rd_atomic);
    SET(MIN_RNR_TIMER, min_rnr_timer);
    SET(SQ_PSN, sq_psn);
    SET(MAX_DEST_RD_ATOMIC, max_dest_rd_atomic);
    SET(DEST_QPN, dest_qpn);
#undef SET
    if (mask & A(AV)) {
        qp->attr.sgid_index = a->sgid_index;
        qp->attr.hop_limit = a->hop_limit;
        qp->attr.traffic_class = a->traffic_class;
        qp->attr.flow_label = a->flow_label;
        memcpy(qp->attr.dgid, a->dgid, 16);
        memcpy(qp->attr.dmac, a->dmac, 6);
    }
    qp->attr_set |= mask;
    qp->attr.qp_state = next;
    trace_qhca_qp_modify(qpn, cur, next, mask);
    qhca_qp_engine_modified(c, qp, cur, next, mask);
    return QHCA_CMD_OK;
}

#undef A

int qhca_cmd_query_qp(QhcaCore *c, QhcaCmdCtx *x)
{
    struct qhca_qp_attr a;
    QhcaQp *qp = LOOKUP(c, qp, le32_to_cpu(x->cmd->obj.handle));

    if (!qp) {
        return QHCA_CMD_ERR_HANDLE;
    }
    a = qp->attr;
    a.cur_qp_state = a.qp_state;
    a.sq_draining = qhca_qp_engine_sq_draining(c, qp);
    x->reply.qp = a;
    x->resp = &x->reply.qp;
    x->resp_size = sizeof(a);
    return QHCA_CMD_OK;
}

int qhca_cmd_query_qp_state(QhcaCore *c, QhcaCmdCtx *x)
{
    QhcaQp *qp = LOOKUP(c, qp, le32_to_cpu(x->cmd->obj.handle));

    if (!qp) {
        return QHCA_CMD_ERR_HANDLE;
    }
    qhca_qp_engine_state(c, qp, &x->reply.qp_state);
    x->resp = &x->reply.qp_state;
    x->resp_size = sizeof(x->reply.qp_state);
    return QHCA_CMD_OK;
}
