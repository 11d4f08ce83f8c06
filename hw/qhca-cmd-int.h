/*
 * qhca device logic, private to the command files (qhca-cmd*.c): a command
 * being executed, and the handlers the descriptor table in qhca-cmd.c
 * names.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_QHCA_CMD_INT_H
#define HW_QHCA_CMD_INT_H

#include "qhca-cmd.h"
#include "qhca-cq.h"
#include "qhca-mr.h"
#include "qhca-qp.h"

typedef struct QhcaCmdCtx {
    const struct qhca_cmd *cmd;
    uint32_t result;
    const void *resp;           /* the reply: points into reply below */
    uint32_t resp_size;
    union {                     /* one command's own, not shared by devices */
        struct qhca_device_attr device;
        struct qhca_port_attr port;
        struct qhca_qp_attr qp;
        struct qhca_srq_attr srq;
        struct qhca_qp_state_info qp_state;
        struct qhca_cq_info cq;
        qhca_le64 stats[QHCA_STAT_NUM];
    } reply;
} QhcaCmdCtx;

typedef int QhcaCmdFn(QhcaCore *c, QhcaCmdCtx *x);

/* qhca-cmd-mr.c */
QhcaCmdFn qhca_cmd_reg_mr, qhca_cmd_alloc_mr, qhca_cmd_rereg_mr,
          qhca_cmd_dereg_mr, qhca_cmd_alloc_mw, qhca_cmd_dealloc_mw;
/* qhca-cmd-qp.c */
QhcaCmdFn qhca_cmd_create_qp, qhca_cmd_modify_qp, qhca_cmd_query_qp,
          qhca_cmd_query_qp_state;

/* An address vector's GIDs (qhca-cmd-qp.c; CREATE_AH uses it too) */
bool qhca_av_gids_ok(QhcaCore *c, uint8_t sgid_index, const uint8_t *dgid,
                     bool ud);

/* Free entry @n of an object table (it exists and is not in use) */
void qhca_free_mr(QhcaCore *c, uint32_t idx);

#endif
