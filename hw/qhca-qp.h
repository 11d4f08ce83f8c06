/*
 * qhca QP engine: the transport (requester, responder, completer) behind
 * the QPs that the commands (qhca-cmd-qp.c) create.  It uses the layers
 * below it (qhca-state.h, qhca-mem.h, qhca-cq.h, qhca-mr.h) and is used by
 * the commands and the device's entry points (qhca-core.c).
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_QHCA_QP_H
#define HW_QHCA_QP_H

#include "qhca-cq.h"
#include "qhca-mr.h"

uint32_t qhca_qp_engine_units(uint32_t sq_log_depth);
void qhca_qp_engine_create(QhcaCore *c, QhcaQp *qp);
void qhca_qp_engine_destroy(QhcaCore *c, QhcaQp *qp);
void qhca_qp_engine_modified(QhcaCore *c, QhcaQp *qp, uint8_t from,
                             uint8_t to, uint32_t mask);
bool qhca_qp_engine_sq_draining(QhcaCore *c, QhcaQp *qp);
void qhca_qp_engine_state(QhcaCore *c, QhcaQp *qp,
                          struct qhca_qp_state_info *s);
void qhca_qp_engine_doorbell(QhcaCore *c, QhcaQp *qp, bool sq, uint16_t pi);
bool qhca_qp_engine_run(QhcaCore *c);
void qhca_qp_engine_timer(QhcaCore *c);
void qhca_qp_engine_receive(QhcaCore *c, const uint8_t *frame, size_t len);
/* @gid (16 bytes, IPv4-mapped for IPv4) is one of the device's valid GIDs */
bool qhca_qp_own_gid(QhcaCore *c, const uint8_t *gid);
void qhca_srq_check_limit(QhcaCore *c, uint32_t srqn, QhcaSrq *srq);

#endif
