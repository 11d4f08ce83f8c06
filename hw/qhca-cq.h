/*
 * qhca device logic: completion queues and event queues.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_QHCA_CQ_H
#define HW_QHCA_CQ_H

#include "qhca-mem.h"

/* Returns false if the CQ is gone, broken or full (the CQE is lost) */
bool qhca_post_cqe(QhcaCore *c, uint32_t cqn, struct qhca_cqe *cqe);
/* An event on the async event queue */
void qhca_post_async(QhcaCore *c, uint8_t type, uint32_t obj);
/* A completion event for CQ @cqn: disarms it */
void qhca_cq_event(QhcaCore *c, uint32_t cqn, QhcaCq *cq);

#endif
