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
/* Put a QP that is set up into the table, with its references and engine */
void qhca_qp_install(QhcaCore *c, QhcaQp *qp);

#endif
