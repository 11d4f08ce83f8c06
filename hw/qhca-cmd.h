/*
 * qhca device logic: the command queue and the commands.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_QHCA_CMD_H
#define HW_QHCA_CMD_H

#include "qhca-state.h"

/* Execute queued commands while there is room for their completions */
void qhca_cmdq_run(QhcaCore *c);
/* Free every object, dependents first (reset, unrealize) */
void qhca_free_all(QhcaCore *c);
/* The geometry CREATE_QP and CREATE_SRQ accept (a loaded state's too) */
bool qhca_qp_geometry_ok(uint32_t db_page, uint32_t sq_log_depth,
                         uint32_t sq_log_stride, bool has_rq,
                         uint32_t rq_log_depth, uint32_t rq_log_stride,
                         uint32_t max_inline);
bool qhca_srq_geometry_ok(uint32_t db_page, uint32_t log_depth,
                          uint32_t log_stride, uint32_t limit);
/* Put a QP that is set up into the table, with its references and engine */
void qhca_qp_install(QhcaCore *c, QhcaQp *qp);

#endif
