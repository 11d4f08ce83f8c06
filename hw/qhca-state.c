/*
 * qhca device logic: guest errors, the object tables, the counters.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qhca-state.h"
#include "trace.h"

/*
 * Guest input the device refuses (an error status, CQE or dropped frame)
 * and register or doorbell use that the hardware contract leaves undefined
 * (ignored): counted in STAT_GUEST_ERRORS and logged with LOG_GUEST_ERROR
 * under the name of the condition's trace event, with the event's
 * arguments in hex.  Called through QHCA_GUEST_ERROR() and QHCA_GUEST_UB(),
 * which also emit that event (qhca_err_* and qhca_ub_* in hw/trace-events),
 * as hw/nvme names one event per condition.
 */
static const char *guest_error_args(char *buf, size_t size,
                                    const uint64_t *arg, unsigned nargs)
{
    size_t len = 0;
    unsigned i;

    buf[0] = 0;
    for (i = 0; i < MIN(nargs, QHCA_GUEST_ERROR_MAX_ARGS); i++) {
        len += snprintf(buf + len, size - len, "%s0x%" PRIx64,
                        i ? ", " : "", arg[i]);
    }
    return buf;
}

void qhca_guest_error(QhcaCore *c, const char *event, const uint64_t *arg,
                      unsigned nargs)
{
    char buf[QHCA_GUEST_ERROR_MAX_ARGS * 20];

    c->stat_guest_errors++;
    qemu_log_mask(LOG_GUEST_ERROR, "%s (%s)\n", event,
                  guest_error_args(buf, sizeof(buf), arg, nargs));
}

/*
 * Object tables
 */

int qhca_alloc_slot(void **table, uint32_t size, uint32_t first)
{
    uint32_t i;

    for (i = first; i < size; i++) {
        if (!table[i]) {
            return i;
        }
    }
    return -1;
}

QhcaQp *qhca_core_qp(QhcaCore *c, uint32_t qpn)
{
    return LOOKUP(c, qp, qpn);
}

QhcaSrq *qhca_core_srq(QhcaCore *c, uint32_t srqn)
{
    return LOOKUP(c, srq, srqn);
}

QhcaAh *qhca_core_ah(QhcaCore *c, uint32_t ahn)
{
    return LOOKUP(c, ah, ahn);
}

/* The multicast group @gid, if a QP is attached to it */
const QhcaMcg *qhca_core_mcg(QhcaCore *c, const uint8_t *gid)
{
    unsigned i;

    for (i = 0; i < QHCA_MAX_MCAST_GRP; i++) {
        if (c->mcg[i].nqp && !memcmp(c->mcg[i].gid, gid, 16)) {
            return &c->mcg[i];
        }
    }
    return NULL;
}

/* Whether a group with a QP attached has the Ethernet multicast MAC @mac */
bool qhca_core_mcast_mac(QhcaCore *c, const uint8_t *mac)
{
    unsigned i;

    for (i = 0; i < QHCA_MAX_MCAST_GRP; i++) {
        if (c->mcg[i].nqp && !memcmp(c->mcg[i].mac, mac, 6)) {
            return true;
        }
    }
    return false;
}

/* Take QP @qpn out of group @g; false if it was not attached */
bool qhca_mcg_remove(QhcaMcg *g, uint32_t qpn)
{
    uint32_t i;

    for (i = 0; i < g->nqp; i++) {
        if (g->qpn[i] == qpn) {
            g->qpn[i] = g->qpn[--g->nqp];
            return true;
        }
    }
    return false;
}

/* Where each counter of enum qhca_stat is kept */
static const size_t qhca_stat_field[QHCA_STAT_NUM] = {
#define F(n, f) [QHCA_STAT_##n] = offsetof(QhcaCore, stat_##f)
    F(TX_FRAMES, tx_frames), F(RX_FRAMES, rx_frames),
    F(RX_DROPPED, rx_dropped), F(RX_BAD_ICRC, rx_bad_icrc),
    F(RETRANSMITS, retransmits), F(GUEST_ERRORS, guest_errors),
    F(LOOPBACK, loopback), F(LOOP_DROPPED, loop_dropped),
    F(TX_BYTES, tx_bytes), F(RX_BYTES, rx_bytes),
    F(NAKS_SENT, naks_sent), F(NAKS_RCVD, naks_rcvd),
    F(RNR_NAKS_SENT, rnr_naks_sent), F(RNR_NAKS_RCVD, rnr_naks_rcvd),
    F(SEQ_ERRORS, seq_errors), F(DUP_REQUESTS, dup_requests),
    F(TIMEOUTS, timeouts), F(RETRY_EXCEEDED, retry_exceeded),
    F(RNR_RETRY_EXCEEDED, rnr_retry_exceeded),
    F(ECN_MARKED, ecn_marked), F(CNP_SENT, cnp_sent),
    F(CNP_HANDLED, cnp_handled), F(CNP_IGNORED, cnp_ignored),
#undef F
};

/* The registers STAT_* are the low halves of the first counters, in order */
QEMU_BUILD_BUG_ON(QHCA_REG_STAT_LOOP_DROPPED - QHCA_REG_STAT_TX_FRAMES !=
                  4 * QHCA_STAT_LOOP_DROPPED);

uint64_t qhca_core_stat(const QhcaCore *c, unsigned i)
{
    return *(const uint64_t *)((const char *)c + qhca_stat_field[i]);
}

void qhca_core_set_stat(QhcaCore *c, unsigned i, uint64_t v)
{
    *(uint64_t *)((char *)c + qhca_stat_field[i]) = v;
}


void qhca_fatal(QhcaCore *c, uint32_t code)
{
    c->status |= QHCA_STATUS_FATAL;
    c->fatal_code = code;
    trace_qhca_err_fatal(code);
    qemu_log_mask(LOG_GUEST_ERROR, "qhca: fatal error %u\n", code);
}
