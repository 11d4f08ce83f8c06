/*
 * qhca QP engine, private to its files: the transport state of a QP and
 * what the requester (qhca-req.c), the completer (qhca-comp.c), the
 * responder (qhca-resp.c) and the common part (qhca-qp.c) share.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_QHCA_QP_INT_H
#define HW_QHCA_QP_INT_H

#include "qhca-qp.h"
#include "qhca-roce.h"

/*
 * Unacknowledged data in flight, READ responses included, is limited to the
 * device's window (QhcaCore.window_bytes, the "window-kib" property: 64 KiB
 * by default), per QP and for all QPs of the device together.  A larger
 * burst can overflow the socket buffer of a QEMU netdev on UDP (about
 * 200 KiB), and then every retransmission overflows it again; a lossless
 * wire can take more.
 */
#define QHCA_WINDOW_MAX         1024    /* packets, for the stale check */
#define QHCA_CWND_MIN           8       /* packets in flight, after losses */
#define QHCA_ACK_REQ_EVERY      16      /* AckReq at least this often, and */
                                        /* at least 4 times per window */
#define QHCA_TX_BUDGET          512     /* packets per QP per run */
#define QHCA_KICK_BUDGET        16      /* packets sent by a doorbell itself */
/* The longest message (IBA: 2^31 bytes); longer RETH lengths are invalid */
#define QHCA_MAX_MSG_BYTES      QHCA_MAX_MSG_SIZE
#define QHCA_MIN_TIMEOUT_NS     (1 * 1000 * 1000)
/*
 * Early retransmission (see qhca_comp_timer()): the first after an RTO
 * estimated from the round trips measured (srtt + 4 * rttvar, as TCP),
 * within these bounds and never later than the QP's timeout; each further
 * one without progress waits twice as long, up to QHCA_RTO_MAX_SHIFT.
 */
#define QHCA_RTO_MIN_NS         (2 * 1000 * 1000)
/*
 * The window follows the path (window_follow()): QHCA_WINDOW_GAIN times
 * the largest bandwidth-delay product of recent delivery rounds, from the
 * device's window-kib up to QHCA_WINDOW_LIMIT
 */
#define QHCA_WINDOW_GAIN_NUM    3
#define QHCA_WINDOW_GAIN_DEN    2
#define QHCA_RTO_INIT_NS        (10 * 1000 * 1000)
#define QHCA_RTO_MAX_SHIFT      10
/*
 * Congestion control (qhca-cc.c, docs/hardware.md "Congestion control"):
 * a responder sends at most one CNP per QP every QHCA_CNP_INTERVAL_NS; a
 * requester cuts what it may have in flight at most once a round trip
 * (the smoothed one, at least QHCA_CC_STEP_MIN_NS), by alpha / 2, and
 * recovers in steps of that round trip: halfway to where it was cut,
 * which grows a packet a step (after QHCA_CC_HYPER_STEP steps one more
 * each step).  Alpha moves by QHCA_CC_G towards 1 at each cut and
 * towards 0 each step.
 */
#define QHCA_CNP_INTERVAL_NS    (50 * 1000)
#define QHCA_CNP_DSCP           48
#define QHCA_CC_ONE             1024
#define QHCA_CC_G               (QHCA_CC_ONE / 16)
#define QHCA_CC_STEP_MIN_NS     (55 * 1000)
#define QHCA_CC_HYPER_STEP      10
#define QHCA_CC_MIN             2       /* packets */
#define QHCA_CC_MAX_CATCHUP     64      /* periods taken at once */
#define QHCA_GSI_QKEY           0x80010000u

enum {
    WQE_FREE,                   /* not started (or consumed) */
    WQE_STARTED,                /* has its PSNs; being sent or waiting */
    WQE_DONE,                   /* finished with status, not yet consumed */
};

/*
 * What the device keeps of each SQ WQE it has started.  An RC WQE gets its
 * PSNs once, when it is started; a retransmission sends the same PSNs
 * again.  WQEs complete in order: only the oldest (at sq.ci) is consumed.
 */
typedef struct QhcaWqeState {
    uint8_t state;
    uint8_t status;             /* CQE status once WQE_DONE */
    uint8_t opcode;             /* WQE opcode */
    bool signaled;
    bool sent_once;             /* every packet was sent at least once */
    bool rd_counted;            /* counted in rd_outstanding */
    bool resp_done;             /* READ/atomic: the whole answer is in */
    bool reread;                /* READ: asked again from next_resp_psn */
    uint32_t first_psn;
    uint32_t last_psn;          /* READ: PSN of the last response */
    uint32_t next_resp_psn;     /* READ/atomic: next expected response */
    uint32_t byte_len;
    uint32_t pieces_sent;       /* READ: pieces asked for at least once */
    /*
     * The WQE as validated when it was started (header, SGEs, inline
     * data), as a fingerprint: a WQE read again for a later packet or a
     * retransmission must still be the same, or it fails
     */
    uint64_t fingerprint;
} QhcaWqeState;

/*
 * A responder resource (IBA 9.7.5.1.x "responder resources"): one READ or
 * atomic the responder executed, kept to answer a duplicate of it.  There
 * are max_dest_rd_atomic of them, used round robin; a request that finds
 * the oldest one still queued exceeds what the requester was granted.
 */
typedef struct QhcaRdRes {
    bool valid;
    bool atomic;
    bool queued;                /* its responses are in the response queue */
    bool replay;                /* READ: answering a duplicate request */
    uint32_t psn;
    uint64_t orig;              /* atomic: the value returned */
    uint32_t rkey;              /* READ: what was asked for */
    uint64_t va;
    uint32_t len;
    uint32_t next;              /* next response packet to send */
    uint32_t npkt;
} QhcaRdRes;

/*
 * Responses go out in PSN order.  While READ responses are pending, later
 * ACKs, NAKs and atomic ACKs wait behind them in this queue; consecutive
 * ACKs and NAKs collapse into the newest, so the queue never holds more
 * than one READ or atomic per resource and one ACK between them.
 */
enum { RESPQ_ACK, RESPQ_READ, RESPQ_ATOMIC };

typedef struct QhcaRespQEntry {
    uint8_t kind;
    uint8_t syndrome;           /* RESPQ_ACK */
    uint8_t res;                /* RESPQ_READ/ATOMIC: index in res[] */
    uint32_t psn;               /* RESPQ_ACK */
} QhcaRespQEntry;

#define QHCA_RESPQ_LEN          (2 * QHCA_MAX_RD_ATOMIC + 2)
#define QHCA_READ_BURST         64      /* READ response packets per run */

struct QhcaQpEngine {
    /* requester and completer */
    uint16_t sq_pi;
    uint16_t req_idx;           /* next WQE to (re)send */
    uint64_t req_off;           /* bytes of it already sent */
    uint32_t next_psn;          /* first PSN of the next new WQE */
    uint32_t acked;             /* every PSN up to this one is acknowledged */
    uint32_t pkts_since_ackreq;
    QhcaWqeState *wqe;          /* one per SQ slot */
    unsigned rd_outstanding;
    int64_t deadline;           /* retransmission or RNR timer, -1 off */
    bool rnr_wait;              /* sending held until the deadline */
    uint8_t retry_left;
    uint8_t rnr_left;
    bool drained_notified;
    bool nak_rewound;           /* went back once for the NAK at nak_psn */
    uint32_t nak_psn;

    /* responder */
    uint16_t rq_pi;
    uint32_t epsn;
    uint32_t msn;
    bool nak_sent;
    bool uc_drop;               /* UC: dropping until a first packet */
    bool comm_est;
    enum { RESP_IDLE, RESP_SEND, RESP_WRITE } resp;
    bool have_recv;             /* a receive WQE is in use */
    bool recv_error;
    uint64_t recv_wr_id;
    uint16_t recv_idx;
    uint8_t recv_nsge;
    struct qhca_sge recv_sge[QHCA_MAX_SGE];
    uint64_t recv_off;
    uint64_t wr_va;             /* RDMA WRITE in progress */
    uint32_t wr_rkey;
    uint64_t wr_left;
    uint32_t wr_len;
    QhcaRdRes res[QHCA_MAX_RD_ATOMIC];
    unsigned res_next;
    QhcaRespQEntry respq[QHCA_RESPQ_LEN];
    unsigned respq_head;
    unsigned respq_count;

    uint32_t units;             /* host memory charged to the budget */
    uint32_t live_idx;          /* where its QPN is in QhcaCore.live_qpn */
    bool ready;                 /* on QhcaCore.ready_qpn */
    bool dwait;                 /* on QhcaCore.dwait_qpn */
    uint64_t dwait_need;        /* the bytes of window it waits for */
    uint64_t inflight_counted;  /* its part of QhcaCore.inflight_bytes */
    uint32_t window_bytes;      /* QhcaCore.window_bytes when created */
    uint32_t cwnd;              /* packets in flight after a loss; 0: all */
    uint32_t tx_end;            /* one past the highest PSN sent */
    bool rtt_pending;           /* a round trip is being measured: */
    uint32_t rtt_psn;           /* from sending this PSN */
    int64_t rtt_t0;             /* at this time, to its acknowledgement */
    int64_t srtt_ns;            /* smoothed round trip, 0: none measured */
    int64_t rttvar_ns;
    /*
     * The path's bandwidth-delay product, which window_bytes follows
     * (qhca-comp.c, window_follow()); not saved: learnt again after a load
     */
    int64_t min_rtt_ns;         /* the shortest round trip measured, 0: none */
    uint32_t bw_psn;            /* a delivery round ends when this PSN is */
    int64_t bw_t0;              /* acknowledged; it began then (0: none) */
    uint64_t bw_bytes;          /* bytes acknowledged in the round */
    uint64_t bdp_max;           /* the largest product of recent rounds */
    /*
     * Congestion control (qhca-cc.c): what may be in flight since the
     * path marked the QP's frames (packets; 0: no such limit), what that
     * recovers towards, and DCQCN's alpha; the responder's last CNP.  Not
     * saved: a loaded QP starts with no limit
     */
    uint32_t cc_cur;
    uint32_t cc_target;
    uint16_t cc_alpha;          /* of QHCA_CC_ONE */
    bool cc_seen;               /* cut before: cc_alpha is what it learnt */
    uint8_t cc_stage;           /* increase steps since the last cut */
    int64_t cc_cut_t;           /* the last cut */
    int64_t cc_inc_t;           /* the last step (or cut) */
    int64_t cnp_t;              /* a CNP sent then (0: none yet) */
    int64_t period_ns;          /* the QP's timeout period started then */
    uint8_t probe_shift;        /* early retransmissions in this period */
    bool probing;               /* only the first PSN not acknowledged may */
                                /* go out, asking for an ACK */
};

static inline uint32_t psn_add(uint32_t psn, uint32_t n)
{
    return (psn + n) & QHCA_ROCE_PSN_MASK;
}

/* Signed distance a - b in the 24-bit PSN space */
static inline int32_t psn_diff(uint32_t a, uint32_t b)
{
    return ((int32_t)((a - b) << 8)) >> 8;
}

static inline uint32_t qp_mtu(const QhcaQp *qp)
{
    uint8_t m = qp->attr.path_mtu;

    return 256u << ((m >= 1 && m <= 5 ? m : 3) - 1);
}

/* The window in packets at the QP's path MTU */
static inline int32_t qp_window(const QhcaQp *qp)
{
    return MAX(8, qp->eng->window_bytes / qp_mtu(qp));
}

/*
 * What the requester may have in flight now: the window, or less after a
 * loss.  Each loss halves it (a timeout quarters it) and every packet
 * acknowledged gives one back, so a window larger than what the wire
 * buffers settles below the point where bursts are lost, instead of losing
 * the same packets on every retransmission.
 */
static inline int32_t qp_send_window(const QhcaQp *qp)
{
    int32_t w = qp_window(qp);

    if (qp->eng->cwnd) {
        w = MIN(w, (int32_t)qp->eng->cwnd);
    }
    /* and less while the path marks congestion (qhca-cc.c) */
    return qp->eng->cc_cur ? MIN(w, (int32_t)qp->eng->cc_cur) : w;
}

/* Packets sent and not acknowledged (what the peer still owes an answer) */
static inline uint32_t qp_inflight(const QhcaQp *qp)
{
    int32_t n = psn_diff(qp->eng->tx_end, qp->eng->acked) - 1;

    return n > 0 ? n : 0;
}

static inline bool qp_is_rc(const QhcaQp *qp)
{
    return qp->type == QHCA_QPT_RC;
}

/* RC or UC: connected to one peer QP, messages in PSN sequence */
static inline bool qp_is_conn(const QhcaQp *qp)
{
    return qp->type == QHCA_QPT_RC || qp->type == QHCA_QPT_UC;
}

static inline uint32_t sq_mask(const QhcaQp *qp)
{
    return (1u << qp->sq.log_depth) - 1;
}

/*
 * @qp has work for the next run of the bottom half: only the QPs named here
 * (and those waiting for the device's window, when it opens) are visited
 */
void qhca_qp_ready(QhcaCore *c, QhcaQp *qp);

static inline void qp_schedule(QhcaCore *c, QhcaQp *qp)
{
    qhca_qp_ready(c, qp);
}

/*
 * WQEs the responder answers with data and for which it holds a resource:
 * READ, the atomics, and FLUSH and ATOMIC WRITE (one request packet each,
 * answered by one READ response without payload)
 */
static inline bool is_rd_atomic(uint8_t op)
{
    return qhca_wqe_op_has(op, QHCA_WQE_OPF_RD_ATOMIC);
}

/* WQEs the device executes itself, sending nothing: no PSN, no answer */
static inline bool is_local_op(uint8_t op)
{
    return qhca_wqe_op_has(op, QHCA_WQE_OPF_LOCAL);
}

/* FLUSH and ATOMIC WRITE: answered by an empty READ RESPONSE ONLY */
static inline bool is_empty_read_answered(uint8_t op)
{
    return op == QHCA_WQE_FLUSH || op == QHCA_WQE_ATOMIC_WRITE;
}

/* Results of qhca_sge_copy() */
enum { SGE_OK, SGE_LEN, SGE_PROT };

/* qhca-qp.c: what every part uses */
void qhca_qp_to_err(QhcaCore *c, QhcaQp *qp);
int qhca_sge_copy(QhcaCore *c, uint32_t pdn, const struct qhca_sge *sge,
                  unsigned n, uint64_t off, void *buf, uint64_t len,
                  bool to_sge);
bool qhca_qp_addr(QhcaCore *c, const QhcaQp *qp, uint8_t sgid_index,
                  const uint8_t *dgid, const uint8_t *dmac,
                  uint8_t hop_limit, uint8_t tclass, uint32_t flow_label,
                  QhcaRoceHdr *h);
bool qhca_rc_addr(QhcaCore *c, const QhcaQp *qp, QhcaRoceHdr *h);
int qhca_frame_start(QhcaCore *c, const QhcaRoceHdr *h, size_t len);
void qhca_frame_send(QhcaCore *c, const QhcaRoceHdr *h, size_t len);
void qhca_send_simple(QhcaCore *c, const QhcaRoceHdr *h,
                      const void *payload, size_t len);
uint8_t qhca_cqe_opcode(uint8_t wqe_opcode);
void qhca_qp_arm_timer(QhcaCore *c, QhcaQp *qp);
bool qhca_qp_from_path(QhcaCore *c, const QhcaQp *qp, const QhcaRoceHdr *h);
uint64_t qhca_qp_timeout_ns(const QhcaQp *qp);
uint64_t qhca_qp_rto_ns(const QhcaQp *qp);
/*
 * The device's data in flight (QhcaCore.inflight_bytes) is the sum of every
 * QP's part, kept up to date: each QP's part again after the engine has
 * handled it (qhca_qp_inflight_sync()), all of them after a load
 * (qhca_qp_inflight_recount()); qhca_qp_inflight_check() says whether the
 * sum is right (the host harness checks it after every entry)
 */
void qhca_qp_inflight_sync(QhcaCore *c, QhcaQp *qp);
void qhca_qp_inflight_recount(QhcaCore *c);
/* @qp waits for room in the device's window */
void qhca_qp_dwait(QhcaCore *c, QhcaQp *qp, uint64_t need);
unsigned qhca_tx_room(QhcaCore *c);

/* qhca-req.c: the requester */
bool qhca_wqe_read(QhcaCore *c, QhcaQp *qp, uint16_t idx,
                   struct qhca_send_wqe *w, uint64_t *addr);
int qhca_wqe_check(QhcaCore *c, QhcaQp *qp, uint16_t idx,
                   const struct qhca_send_wqe *w, uint64_t addr,
                   struct qhca_sge *sge, uint64_t *len);
int qhca_wqe_reread(QhcaCore *c, QhcaQp *qp, const QhcaWqeState *st,
                    uint16_t idx, struct qhca_send_wqe *w, uint64_t *addr,
                    struct qhca_sge *sge, uint64_t *len);
void qhca_req_run(QhcaCore *c, QhcaQp *qp, bool *more, unsigned budget);
void qhca_req_rewind(QhcaCore *c, QhcaQp *qp, uint32_t psn);

/* qhca-comp.c: the completer */
void qhca_wqe_done(QhcaQp *qp, uint16_t idx, uint8_t status);
void qhca_sq_complete(QhcaCore *c, QhcaQp *qp);
void qhca_comp_recv(QhcaCore *c, QhcaQp *qp, const QhcaRocePkt *pkt,
                    const uint8_t *frame);
void qhca_comp_timer(QhcaCore *c, QhcaQp *qp, int64_t now);

/* qhca-cc.c: congestion control (ECN marks, CNPs, the rate they set) */
void qhca_cc_marked(QhcaCore *c, QhcaQp *qp, const QhcaRocePkt *pkt);
void qhca_cc_cnp(QhcaCore *c, QhcaQp *qp, const QhcaRocePkt *pkt);
void qhca_cc_acked(QhcaCore *c, QhcaQp *qp, int64_t now);
void qhca_cc_data_addr(const QhcaCore *c, QhcaRoceHdr *h);

/* qhca-resp.c: the responder */
/*
 * @flags: QHCA_CQE_* and, with QHCA_CQE_GRH, QHCA_RECV_IPV6 if the GRH
 * area holds an IPv6 header (not stored in the CQE's flags)
 */
#define QHCA_RECV_IPV6  (1u << 8)
void qhca_recv_complete(QhcaCore *c, QhcaQp *qp, uint8_t status,
                        uint8_t opcode, uint32_t byte_len, unsigned flags,
                        uint32_t imm, uint32_t src_qp);
void qhca_resp_recv(QhcaCore *c, QhcaQp *qp, const QhcaRocePkt *pkt,
                    const uint8_t *frame);
void qhca_ud_recv(QhcaCore *c, QhcaQp *qp, const QhcaRocePkt *pkt,
                  const uint8_t *frame);
bool qhca_resp_drain(QhcaCore *c, QhcaQp *qp, unsigned *budget);
void qhca_resp_stop(QhcaQp *qp);

#endif
