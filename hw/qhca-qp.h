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
#include "qhca-stream.h"

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
/* Is QhcaCore.inflight_bytes the sum of the QPs' parts? */
bool qhca_qp_inflight_check(const QhcaCore *c);
void qhca_qp_engine_timer(QhcaCore *c);
void qhca_qp_engine_receive(QhcaCore *c, const uint8_t *frame, size_t len);
/* @gid (16 bytes, IPv4-mapped for IPv4) is one of the device's valid GIDs */
bool qhca_qp_own_gid(QhcaCore *c, const uint8_t *gid);
/* Its state in the device's saved state (qhca-qp-save.c) */
void qhca_qp_engine_save(const QhcaQp *qp, QhcaStreamW *w);
void qhca_qp_engine_save_cc(const QhcaQp *qp, QhcaStreamW *w);
bool qhca_qp_engine_load(QhcaCore *c, QhcaQp *qp, QhcaStreamR *r);
bool qhca_qp_engine_load_cc(QhcaCore *c, QhcaQp *qp, QhcaStreamR *r);
void qhca_qp_engine_loaded(QhcaCore *c);
void qhca_srq_check_limit(QhcaCore *c, uint32_t srqn, QhcaSrq *srq);

/*
 * Why a frame from the wire (or looped back) is dropped: the reason of
 * trace events qhca_rx_drop (before the frame's headers are parsed),
 * qhca_rx_drop_pkt (a parsed packet) and qhca_uc_drop (a UC message), with
 * its name (qhca_rx_drop_name()).  A frame the parser refuses has
 * qhca_rx_drop_malformed and the parser's QhcaRoceErr instead.  The
 * numbers are in docs/hardware.md (section 12): keep them.
 */
typedef enum QhcaRxDrop {
    /* the frame (qhca_rx_drop) */
    QHCA_RX_DROP_NOT_READY = 1,
    QHCA_RX_DROP_TOO_LONG = 2,
    QHCA_RX_DROP_DROP_PPM = 3,
    QHCA_RX_DROP_OWN_MAC = 4,
    QHCA_RX_DROP_NOT_OUR_MAC = 5,
    /* the packet and its QP (qhca_rx_drop_pkt) */
    QHCA_RX_DROP_MCAST_MAC_UNICAST = 6,
    QHCA_RX_DROP_NOT_OUR_GID = 7,
    QHCA_RX_DROP_NO_QP = 8,
    QHCA_RX_DROP_UD_TO_CONN = 9,
    QHCA_RX_DROP_CONN_TO_UD = 10,
    QHCA_RX_DROP_UC_RC_MISMATCH = 11,
    QHCA_RX_DROP_MCAST_NOT_UD = 12,
    QHCA_RX_DROP_MCAST_QPN = 13,
    QHCA_RX_DROP_MCAST_MAC = 14,
    QHCA_RX_DROP_MCAST_SOURCE = 15,
    QHCA_RX_DROP_MCAST_NO_GROUP = 16,
    QHCA_RX_DROP_QP_STATE = 17,
    QHCA_RX_DROP_QKEY = 18,
    QHCA_RX_DROP_UD_NO_RECV_WQE = 19,
    QHCA_RX_DROP_PSN_AHEAD = 20,
    QHCA_RX_DROP_UC_REST = 21,
    QHCA_RX_DROP_DUP_READ_UNTRACKED = 22,
    QHCA_RX_DROP_DUP_ATOMIC_UNTRACKED = 23,
    QHCA_RX_DROP_FLUSH_FETH = 24,
    QHCA_RX_DROP_RESP_PSN_WINDOW = 25,
    QHCA_RX_DROP_NAK_ACKED = 26,
    QHCA_RX_DROP_SEQ_NAK_DONE = 27,
    QHCA_RX_DROP_NOT_EMPTY_READ_RESP = 28,
    /* a UC message (qhca_uc_drop) */
    QHCA_RX_DROP_UC_REMOTE_ACCESS = 29,
    QHCA_RX_DROP_UC_INVALID_REQ = 30,
    QHCA_RX_DROP_UC_NO_RECV_WQE = 31,
    QHCA_RX_DROP_UC_PSN = 32,
    /* the frame again (qhca_rx_drop), from a shared port */
    QHCA_RX_DROP_RXQ_FULL = 33,
    QHCA_RX_DROP__MAX
} QhcaRxDrop;

/* A short name of @why ("not for our MAC", ...) */
const char *qhca_rx_drop_name(QhcaRxDrop why);

/* The trace events of a drop (the file using them includes "trace.h") */
#define QHCA_TRACE_RX_DROP(size, why) \
    trace_qhca_rx_drop(size, qhca_rx_drop_name(why), why)
#define QHCA_TRACE_RX_DROP_PKT(pkt, qpn, why)                              \
    trace_qhca_rx_drop_pkt((pkt)->frame_len, qpn, (pkt)->hdr.psn,          \
                           (pkt)->hdr.opcode, qhca_rx_drop_name(why), why)

#endif
