/*
 * qhca QP engine: the RoCEv2 transport.
 *
 *   requester  reads send WQEs, segments them into packets at the path MTU,
 *              and keeps a window of unacknowledged PSNs;
 *   completer  handles ACKs, NAKs, READ responses and atomic ACKs, writes
 *              send CQEs in order, retransmits on timeout, NAK and RNR;
 *   responder  checks the PSN of each request, executes SENDs into receive
 *              WQEs, RDMA WRITEs, READs and atomics, ACKs, NAKs, and replays
 *              READ and atomic responses for duplicate requests.
 *
 * All of this runs from the device's bottom half and timer, never from the
 * network layer's receive callback (see qhca_core_receive()).
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qhca-qp.h"
#include "qhca-roce.h"
#include "trace.h"

/*
 * Unacknowledged data in flight, READ responses included: 64 KiB.  A larger
 * burst overflows the socket buffer of a QEMU netdev (about 200 KiB) and
 * then every retransmission overflows it again.
 */
#define QHCA_WINDOW_BYTES       (64 * 1024)
#define QHCA_WINDOW_MAX         1024    /* packets, for the stale check */
#define QHCA_ACK_REQ_EVERY      16      /* AckReq at least this often */
#define QHCA_TX_BUDGET          512     /* packets per QP per run */
#define QHCA_MIN_TIMEOUT_NS     (1 * 1000 * 1000)
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
} QhcaWqeState;

typedef struct QhcaRdRes {      /* responder resource: READ/atomic replay */
    bool valid;
    bool atomic;
    uint32_t psn;
    uint64_t orig;              /* atomic: the value returned */
    /* READ responses still to send, a few per run of the bottom half */
    bool sending;
    uint32_t rkey;
    uint64_t va;
    uint32_t len;
    uint32_t next;              /* next response packet */
    uint32_t npkt;
} QhcaRdRes;

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

    /* responder */
    uint16_t rq_pi;
    uint32_t epsn;
    uint32_t msn;
    bool nak_sent;
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
    QhcaRdRes replay;           /* a duplicate READ being answered again */
    unsigned res_next;
};

static uint32_t psn_add(uint32_t psn, uint32_t n)
{
    return (psn + n) & QHCA_ROCE_PSN_MASK;
}

/* Signed distance a - b in the 24-bit PSN space */
static int32_t psn_diff(uint32_t a, uint32_t b)
{
    return ((int32_t)((a - b) << 8)) >> 8;
}

static uint32_t qp_mtu(const QhcaQp *qp)
{
    uint8_t m = qp->attr.path_mtu;

    return 256u << ((m >= 1 && m <= 5 ? m : 3) - 1);
}

/* The window in packets at the QP's path MTU */
static int32_t qp_window(const QhcaQp *qp)
{
    return MAX(8, QHCA_WINDOW_BYTES / qp_mtu(qp));
}

static bool qp_is_rc(const QhcaQp *qp)
{
    return qp->type == QHCA_QPT_RC;
}

static uint32_t sq_mask(const QhcaQp *qp)
{
    return (1u << qp->sq.log_depth) - 1;
}

static void qp_schedule(QhcaCore *c)
{
    c->ops->schedule(c->opaque);
}

/*
 * Errors and the ERR state
 */

static void qp_to_err(QhcaCore *c, QhcaQp *qp)
{
    if (qp->attr.qp_state == QHCA_QPS_ERR) {
        return;
    }
    trace_qhca_qp_modify(qp->qpn, qp->attr.qp_state, QHCA_QPS_ERR, 0);
    qhca_qp_engine_modified(c, qp, qp->attr.qp_state, QHCA_QPS_ERR, 0);
    qp->attr.qp_state = QHCA_QPS_ERR;
}

/*
 * Local memory: scatter/gather through lkeys
 */

enum { SGE_OK, SGE_LEN, SGE_PROT };

/* Copy between @buf and byte @off..@off+@len of the SGE list */
static int sge_copy(QhcaCore *c, uint32_t pdn, const struct qhca_sge *sge,
                    unsigned n, uint64_t off, void *buf, uint64_t len,
                    bool to_sge)
{
    uint8_t *p = buf;
    unsigned i;

    for (i = 0; i < n && len; i++) {
        uint64_t slen = le32_to_cpu(sge[i].length);
        uint64_t addr = le64_to_cpu(sge[i].addr);
        uint64_t chunk;
        const QhcaMr *mr;

        if (off >= slen) {
            off -= slen;
            continue;
        }
        chunk = MIN(slen - off, len);
        mr = qhca_mr_check(c, le32_to_cpu(sge[i].lkey), pdn,
                           to_sge ? QHCA_ACCESS_LOCAL_WRITE : 0,
                           addr + off, chunk);
        if (!mr || !qhca_mr_rw(c, mr, addr + off, p, chunk, to_sge)) {
            return SGE_PROT;
        }
        p += chunk;
        len -= chunk;
        off = 0;
    }
    return len ? SGE_LEN : SGE_OK;
}

static uint64_t sge_total(const struct qhca_sge *sge, unsigned n)
{
    uint64_t t = 0;
    unsigned i;

    for (i = 0; i < n; i++) {
        t += le32_to_cpu(sge[i].length);
    }
    return t;
}

/*
 * Frames
 */

static bool gid_ipv4(const uint8_t *gid, uint32_t *ip)
{
    static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                        0xff, 0xff };

    if (memcmp(gid, prefix, sizeof(prefix))) {
        return false;
    }
    *ip = ldl_be_p(gid + 12);
    return true;
}

/* Fill the Ethernet/IP/UDP fields of @h for a packet of @qp */
static bool qp_addr(QhcaCore *c, const QhcaQp *qp, uint8_t sgid_index,
                    const uint8_t *dgid, const uint8_t *dmac,
                    uint8_t hop_limit, uint8_t tclass, QhcaRoceHdr *h)
{
    if (sgid_index >= QHCA_GID_TABLE_LEN || !c->gid[sgid_index].valid ||
        !gid_ipv4(c->gid[sgid_index].gid, &h->src_ip) ||
        !gid_ipv4(dgid, &h->dst_ip)) {
        return false;
    }
    memcpy(h->src_mac, c->mac, 6);
    memcpy(h->dst_mac, dmac, 6);
    h->ttl = hop_limit ? hop_limit : 64;
    h->tos = tclass;
    h->ip_id = c->ip_id++;
    h->src_port = qhca_roce_udp_sport(qhca_roce_qpn_hash(qp->qpn));
    h->pkey = QHCA_ROCE_DEFAULT_PKEY;
    return true;
}

static bool rc_addr(QhcaCore *c, const QhcaQp *qp, QhcaRoceHdr *h)
{
    h->dest_qp = le32_to_cpu(qp->attr.dest_qpn);
    return qp_addr(c, qp, qp->attr.sgid_index, qp->attr.dgid, qp->attr.dmac,
                   qp->attr.hop_limit, qp->attr.traffic_class, h);
}

/*
 * Build a frame around @payload (gathered by the caller into the frame) and
 * send it.  @fill, if set, writes the payload in place.
 */
static int frame_start(QhcaCore *c, const QhcaRoceHdr *h, size_t len)
{
    size_t flen = qhca_roce_frame_len(h->opcode, len);

    if (!flen || flen > sizeof(c->txbuf)) {
        return -1;
    }
    return qhca_roce_build_headers(c->txbuf, sizeof(c->txbuf), h, len);
}

static void frame_send(QhcaCore *c, const QhcaRoceHdr *h, size_t len)
{
    size_t flen = qhca_roce_frame_len(h->opcode, len);

    qhca_roce_finish(c->txbuf, flen);
    c->stat_tx_frames++;
    trace_qhca_tx_pkt(h->dest_qp, h->opcode, h->psn, len);
    c->ops->tx(c->opaque, c->txbuf, flen);
}

static void send_simple(QhcaCore *c, const QhcaRoceHdr *h,
                        const void *payload, size_t len)
{
    int off = frame_start(c, h, len);

    if (off < 0) {
        return;
    }
    memcpy(c->txbuf + off, payload, len);
    frame_send(c, h, len);
}

/* Responder: ACK or NAK with @syndrome for @psn */
static void send_ack(QhcaCore *c, QhcaQp *qp, uint32_t psn, uint8_t syndrome)
{
    QhcaRoceHdr h = { 0 };

    if (!rc_addr(c, qp, &h)) {
        return;
    }
    h.opcode = QHCA_ROCE_OP_RC_ACKNOWLEDGE;
    h.psn = psn;
    h.aeth.syndrome = syndrome;
    h.aeth.msn = qp->eng->msn & QHCA_ROCE_MSN_MASK;
    trace_qhca_ack_tx(qp->qpn, psn, syndrome);
    send_simple(c, &h, NULL, 0);
}

/*
 * Completions
 */

static uint8_t cqe_opcode(uint8_t wqe_opcode)
{
    switch (wqe_opcode) {
    case QHCA_WQE_RDMA_WRITE:
    case QHCA_WQE_RDMA_WRITE_WITH_IMM:
        return QHCA_CQE_OP_RDMA_WRITE;
    case QHCA_WQE_RDMA_READ:
        return QHCA_CQE_OP_RDMA_READ;
    case QHCA_WQE_ATOMIC_CMP_AND_SWP:
        return QHCA_CQE_OP_COMP_SWAP;
    case QHCA_WQE_ATOMIC_FETCH_AND_ADD:
        return QHCA_CQE_OP_FETCH_ADD;
    case QHCA_WQE_LOCAL_INV:
        return QHCA_CQE_OP_LOCAL_INV;
    case QHCA_WQE_REG_MR:
        return QHCA_CQE_OP_REG_MR;
    default:
        return QHCA_CQE_OP_SEND;
    }
}

/* Finish WQE @idx with @status; it completes when it reaches the head */
static void wqe_done(QhcaQp *qp, uint16_t idx, uint8_t status)
{
    QhcaWqeState *st = &qp->eng->wqe[idx & sq_mask(qp)];

    st->state = WQE_DONE;
    st->status = status;
}

/* Consume the head WQE: its CQE if it needs one, then free the slot */
static bool sq_consume(QhcaCore *c, QhcaQp *qp)
{
    QhcaQpEngine *e = qp->eng;
    QhcaWqeState *st = &e->wqe[qp->sq.ci & sq_mask(qp)];
    uint8_t status = st->status;

    if (st->signaled || qp->sq_sig_all || status != QHCA_CQE_SUCCESS) {
        struct qhca_cqe cqe = { 0 };
        uint64_t addr, wr_id = 0;

        if (qhca_ring_entry_addr(&qp->sq, qp->sq.ci, &addr)) {
            c->ops->dma_read(c->opaque,
                             addr + offsetof(struct qhca_send_wqe, wr_id),
                             &wr_id, sizeof(wr_id));
        }
        cqe.wr_id = wr_id;
        cqe.status = status;
        cqe.opcode = cqe_opcode(st->opcode);
        cqe.byte_len = cpu_to_le32(st->byte_len);
        cqe.qpn = cpu_to_le32(qp->qpn);
        cqe.wqe_index = cpu_to_le16(qp->sq.ci);
        if (!qhca_post_cqe(c, qp->send_cqn, &cqe)) {
            qp_to_err(c, qp);
            return false;
        }
    }
    if (st->rd_counted) {
        e->rd_outstanding--;
    }
    memset(st, 0, sizeof(*st));
    if (qp->sq.ci == e->req_idx) {
        /* it was being sent (again): go on with the next one */
        e->req_idx++;
        e->req_off = 0;
    }
    qp->sq.ci++;
    if (status != QHCA_CQE_SUCCESS) {
        if (qp_is_rc(qp)) {
            qp_to_err(c, qp);
        } else if (qp->attr.qp_state != QHCA_QPS_ERR) {
            qp->attr.qp_state = QHCA_QPS_SQE;
            qp_schedule(c);
        }
        return false;
    }
    return true;
}

static bool is_rd_atomic(uint8_t op);
static void req_rewind(QhcaCore *c, QhcaQp *qp, uint32_t psn);

/*
 * The completer: consume finished WQEs at the head of the SQ, in order.
 * An RC SEND or WRITE is finished once all its packets were sent and
 * acknowledged; a READ or atomic once its whole answer is in.
 */
static void sq_complete(QhcaCore *c, QhcaQp *qp)
{
    QhcaQpEngine *e = qp->eng;

    while (qp->sq.ci != e->sq_pi) {
        QhcaWqeState *st = &e->wqe[qp->sq.ci & sq_mask(qp)];

        if (st->state == WQE_STARTED && qp_is_rc(qp)) {
            if (is_rd_atomic(st->opcode)) {
                if (!st->resp_done) {
                    /* acknowledged past what came back: the rest is lost */
                    if (psn_diff(e->acked, st->next_resp_psn) >= 0 &&
                        !st->reread) {
                        st->reread = true;
                        req_rewind(c, qp, st->next_resp_psn);
                    }
                    return;
                }
            } else if (!st->sent_once ||
                       psn_diff(e->acked, st->last_psn) < 0) {
                return;
            }
            st->state = WQE_DONE;
            st->status = QHCA_CQE_SUCCESS;
        }
        if (st->state != WQE_DONE || !sq_consume(c, qp)) {
            return;
        }
    }
}
/*
 * Timer
 */

static uint64_t qp_timeout_ns(const QhcaQp *qp)
{
    uint8_t t = qp->attr.timeout;
    uint64_t ns;

    if (t == 0) {
        return 0;                       /* infinite */
    }
    ns = 4096ULL << MIN(t, 31);
    return MAX(ns, QHCA_MIN_TIMEOUT_NS);
}

/* RNR timer values of the IBA (table 45), in microseconds */
static const uint32_t rnr_timer_us[32] = {
    655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960,
    1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960,
    61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

static void core_timer_update(QhcaCore *c)
{
    int64_t min = -1;
    uint32_t i;

    for (i = 1; i < QHCA_MAX_QP; i++) {
        QhcaQp *qp = qhca_core_qp(c, i);

        if (qp && qp->eng && qp->eng->deadline >= 0 &&
            (min < 0 || qp->eng->deadline < min)) {
            min = qp->eng->deadline;
        }
    }
    if (min != c->timer_deadline) {
        c->timer_deadline = min;
        c->ops->timer_mod(c->opaque, min);
    }
}

static void qp_arm_timer(QhcaCore *c, QhcaQp *qp)
{
    uint64_t t = qp_timeout_ns(qp);

    qp->eng->deadline = t ? c->ops->now_ns(c->opaque) + t : -1;
}

/*
 * Requester
 */

static bool read_wqe(QhcaCore *c, QhcaQp *qp, uint16_t idx,
                     struct qhca_send_wqe *w, uint64_t *addr)
{
    return qhca_ring_entry_addr(&qp->sq, idx, addr) &&
           c->ops->dma_read(c->opaque, *addr, w, sizeof(*w));
}

static bool wqe_op_valid(const QhcaQp *qp, uint8_t op)
{
    switch (op) {
    case QHCA_WQE_SEND:
    case QHCA_WQE_SEND_WITH_IMM:
        return true;
    case QHCA_WQE_RDMA_WRITE:
    case QHCA_WQE_RDMA_WRITE_WITH_IMM:
    case QHCA_WQE_RDMA_READ:
    case QHCA_WQE_ATOMIC_CMP_AND_SWP:
    case QHCA_WQE_ATOMIC_FETCH_AND_ADD:
    case QHCA_WQE_SEND_WITH_INV:
        return qp_is_rc(qp);
    case QHCA_WQE_LOCAL_INV:
    case QHCA_WQE_REG_MR:
        return true;
    default:
        return false;
    }
}

static bool is_rd_atomic(uint8_t op)
{
    return op == QHCA_WQE_RDMA_READ || op == QHCA_WQE_ATOMIC_CMP_AND_SWP ||
           op == QHCA_WQE_ATOMIC_FETCH_AND_ADD;
}

/*
 * Check a WQE when it is first started.  Returns 0 or a CQE status, and the
 * message length in *len.
 */
static int wqe_check(QhcaCore *c, QhcaQp *qp, const struct qhca_send_wqe *w,
                     uint64_t addr, struct qhca_sge *sge, uint64_t *len)
{
    uint32_t room = (1u << qp->sq.log_stride) - QHCA_SEND_WQE_HDR_SIZE;

    if (!wqe_op_valid(qp, w->opcode) ||
        (w->flags & ~(QHCA_WQE_SIGNALED | QHCA_WQE_SOLICITED |
                      QHCA_WQE_INLINE | QHCA_WQE_FENCE))) {
        qhca_guest_error(c, "WQE: bad opcode or flags for this QP",
                         w->opcode);
        return QHCA_CQE_LOC_QP_OP_ERR;
    }
    if (w->flags & QHCA_WQE_INLINE) {
        uint32_t il = le32_to_cpu(w->inline_len);

        if (il > qp->max_inline || il > room ||
            w->opcode == QHCA_WQE_RDMA_READ || is_rd_atomic(w->opcode) ||
            w->opcode == QHCA_WQE_LOCAL_INV || w->opcode == QHCA_WQE_REG_MR) {
            qhca_guest_error(c, "WQE: bad inline data", il);
            return QHCA_CQE_LOC_QP_OP_ERR;
        }
        *len = il;
        return 0;
    }
    if (w->num_sge > QHCA_MAX_SGE ||
        w->num_sge * sizeof(struct qhca_sge) > room) {
        qhca_guest_error(c, "WQE: too many SGEs", w->num_sge);
        return QHCA_CQE_LOC_QP_OP_ERR;
    }
    if (w->num_sge && !c->ops->dma_read(c->opaque, addr +
                                        QHCA_SEND_WQE_HDR_SIZE, sge,
                                        w->num_sge * sizeof(*sge))) {
        return QHCA_CQE_LOC_QP_OP_ERR;
    }
    *len = sge_total(sge, w->num_sge);
    if (*len > 0x80000000ULL) {
        qhca_guest_error(c, "WQE: message longer than 2 GiB", *len);
        return QHCA_CQE_LOC_LEN_ERR;
    }
    if ((w->opcode == QHCA_WQE_ATOMIC_CMP_AND_SWP ||
         w->opcode == QHCA_WQE_ATOMIC_FETCH_AND_ADD) && *len != 8) {
        qhca_guest_error(c, "WQE: atomic needs one 8-byte buffer", *len);
        return QHCA_CQE_LOC_LEN_ERR;
    }
    if (!qp_is_rc(qp) && *len > 4096) {
        return QHCA_CQE_LOC_LEN_ERR;
    }
    return 0;
}

/* Gather @n bytes at @off of the WQE's data into the frame at @dst */
static int gather(QhcaCore *c, QhcaQp *qp, const struct qhca_send_wqe *w,
                  uint64_t addr, const struct qhca_sge *sge, uint64_t off,
                  uint8_t *dst, uint32_t n)
{
    if (w->flags & QHCA_WQE_INLINE) {
        return c->ops->dma_read(c->opaque, addr + QHCA_SEND_WQE_HDR_SIZE + off,
                                dst, n) ? SGE_OK : SGE_PROT;
    }
    return sge_copy(c, qp->pdn, sge, w->num_sge, off, dst, n, false);
}

static uint8_t rc_opcode(uint8_t op, bool first, bool last)
{
    bool imm = op == QHCA_WQE_SEND_WITH_IMM ||
               op == QHCA_WQE_RDMA_WRITE_WITH_IMM;

    if (op == QHCA_WQE_RDMA_WRITE || op == QHCA_WQE_RDMA_WRITE_WITH_IMM) {
        if (first && last) {
            return imm ? QHCA_ROCE_OP_RC_RDMA_WRITE_ONLY_IMM :
                         QHCA_ROCE_OP_RC_RDMA_WRITE_ONLY;
        }
        return first ? QHCA_ROCE_OP_RC_RDMA_WRITE_FIRST :
               !last ? QHCA_ROCE_OP_RC_RDMA_WRITE_MIDDLE :
               imm ? QHCA_ROCE_OP_RC_RDMA_WRITE_LAST_IMM :
                     QHCA_ROCE_OP_RC_RDMA_WRITE_LAST;
    }
    if (first && last) {
        return op == QHCA_WQE_SEND_WITH_INV ? QHCA_ROCE_OP_RC_SEND_ONLY_INV :
               imm ? QHCA_ROCE_OP_RC_SEND_ONLY_IMM :
                     QHCA_ROCE_OP_RC_SEND_ONLY;
    }
    return first ? QHCA_ROCE_OP_RC_SEND_FIRST :
           !last ? QHCA_ROCE_OP_RC_SEND_MIDDLE :
           op == QHCA_WQE_SEND_WITH_INV ? QHCA_ROCE_OP_RC_SEND_LAST_INV :
           imm ? QHCA_ROCE_OP_RC_SEND_LAST_IMM :
                 QHCA_ROCE_OP_RC_SEND_LAST;
}

/* Execute a local WQE (LOCAL_INV, REG_MR) */
static uint8_t local_op(QhcaCore *c, QhcaQp *qp, const struct qhca_send_wqe *w)
{
    if (w->opcode == QHCA_WQE_LOCAL_INV) {
        return qhca_mr_invalidate(c, qp->pdn, le32_to_cpu(w->invalidate_rkey));
    }
    return qhca_mr_fast_reg(c, qp->pdn, le32_to_cpu(w->reg.key),
                            le32_to_cpu(w->reg.access),
                            le64_to_cpu(w->reg.iova),
                            le64_to_cpu(w->reg.length),
                            le64_to_cpu(w->reg.pbl_addr),
                            le32_to_cpu(w->reg.num_pages), w->reg.page_shift);
}

/* UD and GSI: one packet per WQE, complete once sent */
static uint8_t ud_send(QhcaCore *c, QhcaQp *qp, const struct qhca_send_wqe *w,
                       uint64_t addr, const struct qhca_sge *sge, uint64_t len)
{
    QhcaAh *ah = qhca_core_ah(c, le32_to_cpu(w->ud.ahn));
    uint32_t qkey = le32_to_cpu(w->ud.remote_qkey);
    QhcaRoceHdr h = { 0 };
    int off;

    if (!ah || ah->pdn != qp->pdn) {
        qhca_guest_error(c, "UD WQE: bad AH", le32_to_cpu(w->ud.ahn));
        return QHCA_CQE_LOC_QP_OP_ERR;
    }
    if (!qp_addr(c, qp, ah->sgid_index, ah->dgid, ah->dmac, ah->hop_limit,
                 ah->traffic_class, &h)) {
        qhca_guest_error(c, "UD WQE: AH GIDs are not IPv4", ah->sgid_index);
        return QHCA_CQE_LOC_QP_OP_ERR;
    }
    h.opcode = w->opcode == QHCA_WQE_SEND_WITH_IMM ?
               QHCA_ROCE_OP_UD_SEND_ONLY_IMM : QHCA_ROCE_OP_UD_SEND_ONLY;
    h.dest_qp = le32_to_cpu(w->ud.remote_qpn) & QHCA_ROCE_QPN_MASK;
    h.psn = qp->eng->next_psn;
    h.se = w->flags & QHCA_WQE_SOLICITED;
    h.deth.qkey = (qkey & 0x80000000u) ? le32_to_cpu(qp->attr.qkey) : qkey;
    h.deth.src_qp = qp->qpn;
    h.imm = ldl_be_p(w->imm_data);
    off = frame_start(c, &h, len);
    if (off < 0) {
        return QHCA_CQE_LOC_LEN_ERR;
    }
    if (gather(c, qp, w, addr, sge, 0, c->txbuf + off, len) != SGE_OK) {
        return QHCA_CQE_LOC_PROT_ERR;
    }
    frame_send(c, &h, len);
    qp->eng->next_psn = psn_add(qp->eng->next_psn, 1);
    return QHCA_CQE_SUCCESS;
}

/* Is anything sent and not yet answered? */
static bool req_outstanding(const QhcaQp *qp)
{
    const QhcaQpEngine *e = qp->eng;

    return qp->sq.ci != e->sq_pi &&
           e->wqe[qp->sq.ci & sq_mask(qp)].state == WQE_STARTED &&
           qp_is_rc(qp);
}

/* Send the packets of the RC WQE at req_idx; false if it must wait */
static bool rc_send_wqe(QhcaCore *c, QhcaQp *qp, const struct qhca_send_wqe *w,
                        uint64_t addr, const struct qhca_sge *sge,
                        uint64_t len, unsigned *budget)
{
    QhcaQpEngine *e = qp->eng;
    QhcaWqeState *st = &e->wqe[e->req_idx & sq_mask(qp)];
    uint32_t mtu = qp_mtu(qp);
    QhcaRoceHdr h = { 0 };

    if (!rc_addr(c, qp, &h)) {
        wqe_done(qp, e->req_idx, QHCA_CQE_LOC_QP_OP_ERR);
        return false;
    }

    if (w->opcode == QHCA_WQE_RDMA_READ) {
        /*
         * A READ is asked for in pieces of half a window, each a READ
         * request of its own for its share of the WQE's PSNs, so that the
         * answers in flight stay within the window
         */
        uint64_t chunk_max = (uint64_t)MAX(1, qp_window(qp) / 2) * mtu;

        do {
            uint64_t n = MIN(len - e->req_off, chunk_max);
            uint32_t psn = psn_add(st->first_psn, e->req_off / mtu);
            uint32_t end = psn_add(psn, MAX(1, DIV_ROUND_UP(n, mtu)) - 1);

            if (psn_diff(end, e->acked) > qp_window(qp) || !*budget) {
                return false;
            }
            h.opcode = QHCA_ROCE_OP_RC_RDMA_READ_REQUEST;
            h.psn = psn;
            h.ack_req = true;
            h.reth.va = le64_to_cpu(w->rdma.remote_addr) + e->req_off;
            h.reth.rkey = le32_to_cpu(w->rdma.rkey);
            h.reth.dma_len = n;
            send_simple(c, &h, NULL, 0);
            e->req_off += n;
            (*budget)--;
            if (e->deadline < 0) {
                qp_arm_timer(c, qp);
            }
        } while (e->req_off < len);
        return true;
    }
    if (is_rd_atomic(w->opcode)) {
        h.opcode = w->opcode == QHCA_WQE_ATOMIC_CMP_AND_SWP ?
                   QHCA_ROCE_OP_RC_COMPARE_SWAP : QHCA_ROCE_OP_RC_FETCH_ADD;
        h.psn = st->first_psn;
        h.ack_req = true;
        h.atomic.va = le64_to_cpu(w->rdma.remote_addr);
        h.atomic.rkey = le32_to_cpu(w->rdma.rkey);
        if (w->opcode == QHCA_WQE_ATOMIC_CMP_AND_SWP) {
            h.atomic.compare = le64_to_cpu(w->rdma.compare_add);
            h.atomic.swap_add = le64_to_cpu(w->rdma.swap);
        } else {
            h.atomic.swap_add = le64_to_cpu(w->rdma.compare_add);
        }
        send_simple(c, &h, NULL, 0);
        (*budget)--;
        if (e->deadline < 0) {
            qp_arm_timer(c, qp);
        }
        return true;
    }

    /* SEND and RDMA WRITE: one packet per MTU */
    do {
        bool first = e->req_off == 0;
        uint32_t n = MIN(len - e->req_off, mtu);
        bool last = e->req_off + n == len;
        uint32_t psn = psn_add(st->first_psn, e->req_off / mtu);
        int off;

        if (psn_diff(psn, e->acked) > qp_window(qp) || !*budget) {
            return false;
        }
        memset(&h.reth, 0, sizeof(h.reth));
        h.opcode = rc_opcode(w->opcode, first, last);
        h.psn = psn;
        h.se = last && (w->flags & QHCA_WQE_SOLICITED);
        h.ack_req = last || ++e->pkts_since_ackreq >= QHCA_ACK_REQ_EVERY;
        if (h.ack_req) {
            e->pkts_since_ackreq = 0;
        }
        if (first && (w->opcode == QHCA_WQE_RDMA_WRITE ||
                      w->opcode == QHCA_WQE_RDMA_WRITE_WITH_IMM)) {
            h.reth.va = le64_to_cpu(w->rdma.remote_addr);
            h.reth.rkey = le32_to_cpu(w->rdma.rkey);
            h.reth.dma_len = len;
        }
        h.imm = ldl_be_p(w->imm_data);
        h.ieth_rkey = le32_to_cpu(w->invalidate_rkey);
        off = frame_start(c, &h, n);
        if (off < 0) {
            wqe_done(qp, e->req_idx, QHCA_CQE_LOC_QP_OP_ERR);
            return false;
        }
        if (gather(c, qp, w, addr, sge, e->req_off, c->txbuf + off, n) !=
            SGE_OK) {
            /* Only the packets before this one reached the wire */
            wqe_done(qp, e->req_idx, QHCA_CQE_LOC_PROT_ERR);
            return false;
        }
        frame_send(c, &h, n);
        e->req_off += n;
        (*budget)--;
        if (e->deadline < 0) {
            qp_arm_timer(c, qp);
        }
    } while (e->req_off < len);
    return true;
}

/* Start WQE @w at req_idx: its state, and for RC its PSNs */
static void req_start(QhcaQp *qp, QhcaWqeState *st,
                      const struct qhca_send_wqe *w, uint64_t len)
{
    QhcaQpEngine *e = qp->eng;

    memset(st, 0, sizeof(*st));
    st->state = WQE_STARTED;
    st->opcode = w->opcode;
    st->signaled = w->flags & QHCA_WQE_SIGNALED;
    st->byte_len = len;
    if (qp_is_rc(qp) && w->opcode != QHCA_WQE_LOCAL_INV &&
        w->opcode != QHCA_WQE_REG_MR) {
        uint32_t npsn = 1;

        if (!is_rd_atomic(w->opcode) || w->opcode == QHCA_WQE_RDMA_READ) {
            npsn = MAX(1, DIV_ROUND_UP(len, qp_mtu(qp)));
        }
        st->first_psn = e->next_psn;
        st->last_psn = psn_add(e->next_psn, npsn - 1);
        st->next_resp_psn = e->next_psn;
        e->next_psn = psn_add(st->last_psn, 1);
        if (is_rd_atomic(w->opcode)) {
            st->rd_counted = true;
            e->rd_outstanding++;
        }
    }
}

static void req_run(QhcaCore *c, QhcaQp *qp, bool *more)
{
    QhcaQpEngine *e = qp->eng;
    unsigned budget = QHCA_TX_BUDGET;
    uint8_t state = qp->attr.qp_state;

    if (e->rnr_wait) {
        return;
    }
    while (e->req_idx != e->sq_pi && budget) {
        QhcaWqeState *st = &e->wqe[e->req_idx & sq_mask(qp)];
        struct qhca_send_wqe w;
        struct qhca_sge sge[QHCA_MAX_SGE];
        uint64_t addr, len = 0;
        int status;

        if (st->state == WQE_DONE ||
            (st->state == WQE_STARTED && st->resp_done)) {
            /* executed already, or answered while being sent again */
            e->req_idx++;
            e->req_off = 0;
            continue;
        }
        if (state != QHCA_QPS_RTS && !(state == QHCA_QPS_SQD &&
                                       st->state == WQE_STARTED)) {
            return;
        }
        if (!read_wqe(c, qp, e->req_idx, &w, &addr)) {
            wqe_done(qp, e->req_idx, QHCA_CQE_LOC_QP_OP_ERR);
            e->req_idx++;
            return;
        }
        trace_qhca_wqe_fetch(qp->qpn, e->req_idx, w.opcode, w.flags,
                             w.num_sge, e->req_off);
        status = wqe_check(c, qp, &w, addr, sge, &len);
        if (status) {
            if (st->state == WQE_FREE) {
                st->opcode = w.opcode;
                st->signaled = true;
            }
            wqe_done(qp, e->req_idx, status);
            e->req_idx++;
            return;
        }
        if (st->state == WQE_FREE) {
            if ((w.flags & QHCA_WQE_FENCE) && e->rd_outstanding) {
                return;
            }
            if (is_rd_atomic(w.opcode) && qp_is_rc(qp) &&
                e->rd_outstanding >= MAX(1, qp->attr.max_rd_atomic)) {
                return;
            }
            req_start(qp, st, &w, len);
            if (w.opcode == QHCA_WQE_LOCAL_INV ||
                w.opcode == QHCA_WQE_REG_MR) {
                wqe_done(qp, e->req_idx, local_op(c, qp, &w));
                e->req_idx++;
                continue;
            }
            if (!qp_is_rc(qp)) {
                wqe_done(qp, e->req_idx, ud_send(c, qp, &w, addr, sge, len));
                e->req_idx++;
                budget--;
                continue;
            }
        }
        if (!rc_send_wqe(c, qp, &w, addr, sge, len, &budget)) {
            if (st->state == WQE_DONE) {
                e->req_idx++;
                e->req_off = 0;
            } else {
                *more = true;
            }
            break;
        }
        st->sent_once = true;
        e->req_idx++;
        e->req_off = 0;
        if (e->deadline < 0) {
            qp_arm_timer(c, qp);
        }
    }
    if (e->req_idx != e->sq_pi && budget == 0) {
        *more = true;
    }
}

/* Go back to sending from @psn (timeout, sequence NAK, RNR NAK) */
static void req_rewind(QhcaCore *c, QhcaQp *qp, uint32_t psn)
{
    QhcaQpEngine *e = qp->eng;
    uint16_t i;

    for (i = qp->sq.ci; i != e->sq_pi; i++) {
        QhcaWqeState *st = &e->wqe[i & sq_mask(qp)];

        if (st->state == WQE_FREE) {
            return;
        }
        if (st->state != WQE_STARTED || st->resp_done) {
            continue;
        }
        if (psn_diff(psn, st->last_psn) <= 0) {
            uint32_t from = psn;

            if (st->opcode == QHCA_WQE_RDMA_READ) {
                from = st->next_resp_psn;       /* what is still missing */
            }
            e->req_idx = i;
            e->req_off = psn_diff(from, st->first_psn) <= 0 ? 0 :
                         (uint64_t)psn_diff(from, st->first_psn) *
                         qp_mtu(qp);
            if (is_rd_atomic(st->opcode) &&
                st->opcode != QHCA_WQE_RDMA_READ) {
                e->req_off = 0;
            }
            trace_qhca_retransmit(qp->qpn, psn);
            qp_schedule(c);
            return;
        }
    }
}

/* The peer has everything up to and including @psn */
static void req_acked(QhcaCore *c, QhcaQp *qp, uint32_t psn)
{
    QhcaQpEngine *e = qp->eng;

    /* only PSNs that were assigned, and only forward */
    if (psn_diff(psn, e->acked) > 0 && psn_diff(psn, e->next_psn) < 0) {
        e->acked = psn;
        e->retry_left = qp->attr.retry_cnt;
        e->rnr_left = qp->attr.rnr_retry;
        qp_arm_timer(c, qp);
    }
}

/* The READ or atomic whose answer is due next: the oldest unanswered */
static QhcaWqeState *req_head_rd(QhcaQp *qp, uint16_t *idx)
{
    QhcaQpEngine *e = qp->eng;
    uint16_t i;

    for (i = qp->sq.ci; i != e->sq_pi; i++) {
        QhcaWqeState *st = &e->wqe[i & sq_mask(qp)];

        if (st->state == WQE_FREE) {
            break;
        }
        if (st->state == WQE_STARTED && is_rd_atomic(st->opcode) &&
            !st->resp_done) {
            *idx = i;
            return st;
        }
    }
    return NULL;
}

static uint8_t nak_status(uint8_t code)
{
    switch (code) {
    case QHCA_ROCE_NAK_INVALID_REQ:
        return QHCA_CQE_REM_INV_REQ_ERR;
    case QHCA_ROCE_NAK_REMOTE_ACCESS:
        return QHCA_CQE_REM_ACCESS_ERR;
    case QHCA_ROCE_NAK_REMOTE_OP:
        return QHCA_CQE_REM_OP_ERR;
    default:
        return QHCA_CQE_BAD_RESP_ERR;
    }
}

/* Fail the started WQE that holds @psn; nothing after it may complete */
static void req_fail_at(QhcaQp *qp, uint32_t psn, uint8_t status)
{
    QhcaQpEngine *e = qp->eng;
    uint16_t i;

    for (i = qp->sq.ci; i != e->sq_pi; i++) {
        QhcaWqeState *st = &e->wqe[i & sq_mask(qp)];

        if (st->state == WQE_STARTED && psn_diff(psn, st->last_psn) <= 0) {
            wqe_done(qp, i, status);
            return;
        }
        if (st->state == WQE_FREE) {
            return;
        }
    }
}

/* Copy a READ response or the atomic result into the WQE's buffers */
static bool req_store(QhcaCore *c, QhcaQp *qp, uint16_t idx, uint64_t off,
                      const void *data, uint32_t n, bool last)
{
    struct qhca_send_wqe w;
    struct qhca_sge sge[QHCA_MAX_SGE];
    uint64_t addr, len;

    return read_wqe(c, qp, idx, &w, &addr) &&
           !wqe_check(c, qp, &w, addr, sge, &len) &&
           off + n <= len && (!last || off + n == len) &&
           sge_copy(c, qp->pdn, sge, w.num_sge, off, (void *)data, n,
                    true) == SGE_OK;
}

/* Completer: a response (ACK, NAK, READ response, atomic ACK) arrived */
static void comp_recv(QhcaCore *c, QhcaQp *qp, const QhcaRocePkt *pkt,
                      const uint8_t *frame)
{
    QhcaQpEngine *e = qp->eng;
    const QhcaRoceHdr *h = &pkt->hdr;
    uint8_t syn = h->aeth.syndrome;
    QhcaWqeState *st;
    uint16_t idx;

    if (qp->attr.qp_state != QHCA_QPS_RTS &&
        qp->attr.qp_state != QHCA_QPS_SQD) {
        return;
    }
    /* Responses for PSNs never sent, or long acknowledged, are stale */
    if (psn_diff(h->psn, e->next_psn) >= 0 ||
        psn_diff(h->psn, e->acked) <= -QHCA_WINDOW_MAX) {
        trace_qhca_rx_drop(pkt->frame_len, "response PSN out of window");
        return;
    }

    switch (h->opcode) {
    case QHCA_ROCE_OP_RC_ACKNOWLEDGE:
        trace_qhca_ack_rx(qp->qpn, h->psn, syn);
        switch (syn & QHCA_ROCE_AETH_TYPE_MASK) {
        case QHCA_ROCE_AETH_ACK:
            req_acked(c, qp, h->psn);
            break;
        case QHCA_ROCE_AETH_RNR_NAK:
            req_acked(c, qp, psn_add(h->psn, -1));
            if (qp->attr.rnr_retry != 7 && e->rnr_left == 0) {
                req_fail_at(qp, h->psn, QHCA_CQE_RNR_RETRY_EXC_ERR);
                break;
            }
            if (qp->attr.rnr_retry != 7) {
                e->rnr_left--;
            }
            req_rewind(c, qp, h->psn);
            e->rnr_wait = true;
            e->deadline = c->ops->now_ns(c->opaque) +
                          rnr_timer_us[syn & QHCA_ROCE_AETH_VALUE_MASK] *
                          1000LL;
            break;
        case QHCA_ROCE_AETH_NAK:
            req_acked(c, qp, psn_add(h->psn, -1));
            if ((syn & QHCA_ROCE_AETH_VALUE_MASK) ==
                QHCA_ROCE_NAK_PSN_SEQ_ERR) {
                c->stat_retransmits++;
                req_rewind(c, qp, h->psn);
            } else {
                req_fail_at(qp, h->psn,
                            nak_status(syn & QHCA_ROCE_AETH_VALUE_MASK));
            }
            break;
        default:
            break;
        }
        break;

    case QHCA_ROCE_OP_RC_ATOMIC_ACKNOWLEDGE:
        st = req_head_rd(qp, &idx);
        if (!st || st->opcode == QHCA_WQE_RDMA_READ ||
            h->psn != st->first_psn) {
            return;
        }
        /* everything before it is acknowledged too */
        req_acked(c, qp, psn_add(h->psn, -1));
        {
            uint64_t orig = cpu_to_le64(h->atomic_ack_orig);

            if (!req_store(c, qp, idx, 0, &orig, 8, true)) {
                wqe_done(qp, idx, QHCA_CQE_LOC_PROT_ERR);
                break;
            }
        }
        trace_qhca_atomic_done(qp->qpn, h->psn, idx, h->atomic_ack_orig);
        st->resp_done = true;
        st->next_resp_psn = psn_add(h->psn, 1);
        req_acked(c, qp, h->psn);
        break;

    default:    /* RDMA READ response */
        st = req_head_rd(qp, &idx);
        if (!st || st->opcode != QHCA_WQE_RDMA_READ ||
            psn_diff(h->psn, st->first_psn) < 0 ||
            psn_diff(h->psn, st->last_psn) > 0) {
            return;
        }
        if (h->psn != st->next_resp_psn) {
            /* a gap: ask again, once, from what we miss */
            if (psn_diff(h->psn, st->next_resp_psn) > 0 && !e->rnr_wait &&
                !st->reread) {
                st->reread = true;
                c->stat_retransmits++;
                req_rewind(c, qp, st->next_resp_psn);
            }
            return;
        }
        req_acked(c, qp, psn_add(st->first_psn, -1));
        {
            /* the WQE may be asked for in pieces: LAST ends a piece */
            bool end = (pkt->op->flags & QHCA_ROCE_OPF_LAST) &&
                       h->psn == st->last_psn;

            if (!req_store(c, qp, idx, (uint64_t)psn_diff(h->psn,
                           st->first_psn) * qp_mtu(qp),
                           frame + pkt->payload_off, pkt->payload_len, end)) {
                wqe_done(qp, idx, QHCA_CQE_LOC_PROT_ERR);
                break;
            }
            st->resp_done = end;
        }
        st->reread = false;
        st->next_resp_psn = psn_add(h->psn, 1);
        /* each response acknowledges its PSN */
        req_acked(c, qp, h->psn);
        break;
    }
    sq_complete(c, qp);
    if (!req_outstanding(qp)) {
        e->deadline = e->rnr_wait ? e->deadline : -1;
    }
    qp_schedule(c);
}

/*
 * Responder
 */

/* Take the next receive WQE (RQ or SRQ); false if there is none */
static bool take_recv(QhcaCore *c, QhcaQp *qp)
{
    QhcaQpEngine *e = qp->eng;
    QhcaSrq *srq = NULL;
    QhcaRing *r = &qp->rq;
    uint16_t pi = e->rq_pi;
    struct qhca_recv_wqe w;
    uint64_t addr;
    unsigned max;

    if (qp->srqn != QHCA_NO_SRQ) {
        srq = qhca_core_srq(c, qp->srqn);
        r = &srq->ring;
        pi = r->pi;
    }
    if (r->ci == pi) {
        return false;
    }
    e->have_recv = true;
    e->recv_error = false;
    e->recv_idx = r->ci;
    e->recv_off = 0;
    e->recv_wr_id = 0;
    e->recv_nsge = 0;
    max = MIN(QHCA_MAX_SGE, ((1u << r->log_stride) - QHCA_RECV_WQE_HDR_SIZE) /
                            sizeof(struct qhca_sge));
    if (!qhca_ring_entry_addr(r, r->ci, &addr) ||
        !c->ops->dma_read(c->opaque, addr, &w, sizeof(w)) ||
        w.num_sge > max ||
        !c->ops->dma_read(c->opaque, addr + QHCA_RECV_WQE_HDR_SIZE,
                          e->recv_sge, w.num_sge * sizeof(struct qhca_sge))) {
        qhca_guest_error(c, "receive WQE: bad num_sge", r->ci);
        e->recv_error = true;
    } else {
        e->recv_wr_id = le64_to_cpu(w.wr_id);
        e->recv_nsge = w.num_sge;
    }
    r->ci++;
    if (srq) {
        qhca_srq_check_limit(c, qp->srqn, srq);
    }
    return true;
}

static void recv_complete(QhcaCore *c, QhcaQp *qp, uint8_t status,
                          uint8_t opcode, uint32_t byte_len, uint8_t flags,
                          uint32_t imm, uint32_t src_qp)
{
    QhcaQpEngine *e = qp->eng;
    struct qhca_cqe cqe = { 0 };

    cqe.wr_id = cpu_to_le64(e->recv_wr_id);
    cqe.status = status;
    cqe.opcode = opcode;
    cqe.flags = flags;
    cqe.byte_len = cpu_to_le32(byte_len);
    cqe.qpn = cpu_to_le32(qp->qpn);
    cqe.src_qp = cpu_to_le32(src_qp);
    cqe.wqe_index = cpu_to_le16(e->recv_idx);
    if (flags & QHCA_CQE_WITH_IMM) {
        stl_be_p(cqe.imm_data, imm);
    } else if (flags & QHCA_CQE_WITH_INV) {
        cqe.invalidated_rkey = cpu_to_le32(imm);
    }
    if (flags & QHCA_CQE_GRH) {
        cqe.network_hdr_type = 2;       /* RoCEv2 over IPv4 */
    }
    e->have_recv = false;
    if (!qhca_post_cqe(c, qp->recv_cqn, &cqe) ||
        (status != QHCA_CQE_SUCCESS && qp_is_rc(qp))) {
        qp_to_err(c, qp);
    }
}

/* A class C/D responder error: NAK, report, QP to ERR */
static void resp_error(QhcaCore *c, QhcaQp *qp, uint32_t psn, uint8_t nak,
                       uint8_t event)
{
    send_ack(c, qp, psn, QHCA_ROCE_AETH_NAK | nak);
    qhca_post_async(c, event, qp->qpn);
    trace_qhca_resp_error(qp->qpn, psn, nak);
    qp_to_err(c, qp);
}

/*
 * Send up to @budget response packets of READ resource @r; the memory is
 * checked again for each packet (the MR may have gone meanwhile).  Returns
 * true when the READ is answered completely.
 */
static bool read_respond(QhcaCore *c, QhcaQp *qp, QhcaRdRes *r,
                         unsigned budget)
{
    uint32_t mtu = qp_mtu(qp);

    while (r->sending && budget--) {
        QhcaRoceHdr h = { 0 };
        uint32_t i = r->next;
        uint32_t n = r->len ? MIN(mtu, r->len - i * mtu) : 0;
        uint64_t va = r->va + (uint64_t)i * mtu;
        const QhcaMr *mr = NULL;
        int off;

        if (n) {
            mr = qhca_mr_check(c, r->rkey, qp->pdn, QHCA_ACCESS_REMOTE_READ,
                               va, n);
        }
        if ((n && !mr) || !rc_addr(c, qp, &h)) {
            r->sending = false;
            resp_error(c, qp, psn_add(r->psn, i), QHCA_ROCE_NAK_REMOTE_ACCESS,
                       QHCA_EQE_QP_ACCESS_ERR);
            return true;
        }
        h.opcode = r->npkt == 1 ? QHCA_ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY :
                   i == 0 ? QHCA_ROCE_OP_RC_RDMA_READ_RESPONSE_FIRST :
                   i == r->npkt - 1 ? QHCA_ROCE_OP_RC_RDMA_READ_RESPONSE_LAST :
                                      QHCA_ROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE;
        h.psn = psn_add(r->psn, i);
        h.aeth.syndrome = QHCA_ROCE_AETH_ACK | QHCA_ROCE_AETH_CREDIT_INVALID;
        h.aeth.msn = qp->eng->msn & QHCA_ROCE_MSN_MASK;
        off = frame_start(c, &h, n);
        if (off < 0 || (n && !qhca_mr_rw(c, mr, va, c->txbuf + off, n,
                                         false))) {
            r->sending = false;
            resp_error(c, qp, h.psn, QHCA_ROCE_NAK_REMOTE_OP,
                       QHCA_EQE_QP_FATAL);
            return true;
        }
        frame_send(c, &h, n);
        if (++r->next == r->npkt) {
            r->sending = false;
        }
    }
    return !r->sending;
}

static void read_start(QhcaQp *qp, QhcaRdRes *r, const QhcaRoceHdr *h)
{
    r->valid = true;
    r->atomic = false;
    r->psn = h->psn;
    r->rkey = h->reth.rkey;
    r->va = h->reth.va;
    r->len = h->reth.dma_len;
    r->next = 0;
    r->npkt = MAX(1, DIV_ROUND_UP(h->reth.dma_len, qp_mtu(qp)));
    r->sending = true;
}

/*
 * Responses go out in PSN order: before the responder answers anything
 * newer, the READ responses still pending are sent in full.
 */
static void read_flush(QhcaCore *c, QhcaQp *qp)
{
    QhcaQpEngine *e = qp->eng;
    unsigned i, n = ARRAY_SIZE(e->res);

    /* the oldest first: resources are used round-robin from res_next */
    for (i = 0; i < n; i++) {
        QhcaRdRes *r = &e->res[(e->res_next + i) % n];

        if (r->sending) {
            read_respond(c, qp, r, UINT_MAX);
        }
    }
    if (e->replay.sending) {
        read_respond(c, qp, &e->replay, UINT_MAX);
    }
}

/* From the run loop: a burst of each pending READ; true if more remain */
static bool read_run(QhcaCore *c, QhcaQp *qp)
{
    QhcaQpEngine *e = qp->eng;
    unsigned i, n = ARRAY_SIZE(e->res);
    bool done = true;

    for (i = 0; i < n; i++) {
        QhcaRdRes *r = &e->res[(e->res_next + i) % n];

        if (r->sending) {
            done = read_respond(c, qp, r, QHCA_READ_BURST);
            break;
        }
    }
    if (done && e->replay.sending) {
        done = read_respond(c, qp, &e->replay, QHCA_READ_BURST);
    }
    for (i = 0; i < n; i++) {
        done &= !e->res[i].sending;
    }
    return !done || e->replay.sending;
}

static void send_atomic_ack(QhcaCore *c, QhcaQp *qp, uint32_t psn,
                            uint64_t orig)
{
    QhcaRoceHdr h = { 0 };

    if (!rc_addr(c, qp, &h)) {
        return;
    }
    h.opcode = QHCA_ROCE_OP_RC_ATOMIC_ACKNOWLEDGE;
    h.psn = psn;
    h.aeth.syndrome = QHCA_ROCE_AETH_ACK | QHCA_ROCE_AETH_CREDIT_INVALID;
    h.aeth.msn = qp->eng->msn & QHCA_ROCE_MSN_MASK;
    h.atomic_ack_orig = orig;
    send_simple(c, &h, NULL, 0);
}

/* Check an RETH/AtomicETH target; NULL (after the NAK) if not allowed */
static const QhcaMr *resp_target(QhcaCore *c, QhcaQp *qp, uint32_t psn,
                                 uint32_t rkey, uint64_t va, uint64_t len,
                                 uint32_t access)
{
    const QhcaMr *mr = NULL;

    if (le32_to_cpu(qp->attr.access_flags) & access) {
        mr = qhca_mr_check(c, rkey, qp->pdn, access, va, len);
    } else {
        trace_qhca_err_key(rkey, va, len, "QP does not allow the access");
    }
    if (!mr) {
        resp_error(c, qp, psn, QHCA_ROCE_NAK_REMOTE_ACCESS,
                   QHCA_EQE_QP_ACCESS_ERR);
    }
    return mr;
}

static void resp_duplicate(QhcaCore *c, QhcaQp *qp, const QhcaRocePkt *pkt)
{
    QhcaQpEngine *e = qp->eng;
    const QhcaRoceHdr *h = &pkt->hdr;
    unsigned i;

    if (pkt->op->flags & QHCA_ROCE_OPF_READ) {
        /*
         * Replay: read the memory again, at the PSNs of this request (the
         * requester may ask again from the middle of a READ), but only as
         * far as was asked for before: PSNs from epsn on are new requests
         */
        QhcaRoceHdr rh = pkt->hdr;
        uint64_t room = (uint64_t)psn_diff(e->epsn, rh.psn) * qp_mtu(qp);

        rh.reth.dma_len = MIN(rh.reth.dma_len, room);
        if (!(le32_to_cpu(qp->attr.access_flags) & QHCA_ACCESS_REMOTE_READ) ||
            (rh.reth.dma_len &&
             !qhca_mr_check(c, rh.reth.rkey, qp->pdn, QHCA_ACCESS_REMOTE_READ,
                            rh.reth.va, rh.reth.dma_len))) {
            return;
        }
        for (i = 0; i < ARRAY_SIZE(e->res); i++) {
            QhcaRdRes *r = &e->res[i];

            /* asked again while still answering: start that one over */
            if (r->sending && !r->atomic &&
                psn_diff(rh.psn, r->psn) >= 0 &&
                psn_diff(rh.psn, psn_add(r->psn, r->npkt - 1)) <= 0) {
                read_start(qp, r, &rh);
                qp_schedule(c);
                return;
            }
        }
        read_flush(c, qp);
        read_start(qp, &e->replay, &rh);
        qp_schedule(c);
        return;
    }
    read_flush(c, qp);
    if (pkt->op->flags & QHCA_ROCE_OPF_ATOMIC) {
        for (i = 0; i < ARRAY_SIZE(e->res); i++) {
            if (e->res[i].valid && e->res[i].atomic &&
                e->res[i].psn == h->psn) {
                send_atomic_ack(c, qp, h->psn, e->res[i].orig);
            }
        }
        return;
    }
    /* SEND or WRITE seen before: acknowledge everything we have */
    send_ack(c, qp, psn_add(e->epsn, -1),
             QHCA_ROCE_AETH_ACK | QHCA_ROCE_AETH_CREDIT_INVALID);
}

static QhcaRdRes *res_alloc(QhcaQp *qp, uint32_t psn, bool atomic)
{
    QhcaQpEngine *e = qp->eng;
    unsigned n = MAX(1, qp->attr.max_dest_rd_atomic);
    QhcaRdRes *r = &e->res[e->res_next % n];

    /* responses are sent in order: the oldest is finished by now */
    assert(!r->sending);
    e->res_next = (e->res_next + 1) % n;
    r->valid = true;
    r->atomic = atomic;
    r->psn = psn;
    return r;
}

static void resp_recv(QhcaCore *c, QhcaQp *qp, const QhcaRocePkt *pkt,
                      const uint8_t *frame)
{
    QhcaQpEngine *e = qp->eng;
    const QhcaRoceHdr *h = &pkt->hdr;
    uint32_t f = pkt->op->flags;
    int32_t d;

    if (qp->attr.qp_state != QHCA_QPS_RTR &&
        qp->attr.qp_state != QHCA_QPS_RTS &&
        qp->attr.qp_state != QHCA_QPS_SQD) {
        trace_qhca_rx_drop(pkt->frame_len, "QP cannot receive");
        return;
    }
    if (qp->attr.qp_state == QHCA_QPS_RTR && !e->comm_est) {
        e->comm_est = true;
        qhca_post_async(c, QHCA_EQE_COMM_EST, qp->qpn);
    }
    d = psn_diff(h->psn, e->epsn);
    if (d > 0) {
        read_flush(c, qp);
        if (!e->nak_sent) {
            e->nak_sent = true;
            send_ack(c, qp, e->epsn,
                     QHCA_ROCE_AETH_NAK | QHCA_ROCE_NAK_PSN_SEQ_ERR);
        }
        trace_qhca_rx_drop(pkt->frame_len, "PSN ahead: sequence NAK");
        return;
    }
    if (d < 0) {
        trace_qhca_rx_dup(qp->qpn, h->psn, e->epsn);
        resp_duplicate(c, qp, pkt);
        return;
    }
    e->nak_sent = false;
    read_flush(c, qp);

    /* Opcode sequence: middle and last packets continue a message */
    if (!(f & QHCA_ROCE_OPF_FIRST)) {
        bool ok = (f & QHCA_ROCE_OPF_SEND) ? e->resp == RESP_SEND :
                                             e->resp == RESP_WRITE;
        if (!ok) {
            resp_error(c, qp, h->psn, QHCA_ROCE_NAK_INVALID_REQ,
                       QHCA_EQE_QP_REQ_ERR);
            return;
        }
    } else if (e->resp != RESP_IDLE) {
        resp_error(c, qp, h->psn, QHCA_ROCE_NAK_INVALID_REQ,
                   QHCA_EQE_QP_REQ_ERR);
        return;
    }

    if (f & QHCA_ROCE_OPF_SEND) {
        int r;

        if ((f & QHCA_ROCE_OPF_FIRST) && !take_recv(c, qp)) {
            send_ack(c, qp, h->psn, QHCA_ROCE_AETH_RNR_NAK |
                     (qp->attr.min_rnr_timer & QHCA_ROCE_AETH_VALUE_MASK));
            trace_qhca_rnr(qp->qpn, h->psn);
            return;
        }
        if (e->recv_error) {
            recv_complete(c, qp, QHCA_CQE_LOC_QP_OP_ERR, QHCA_CQE_OP_RECV,
                          0, 0, 0, 0);
            resp_error(c, qp, h->psn, QHCA_ROCE_NAK_REMOTE_OP,
                       QHCA_EQE_QP_FATAL);
            return;
        }
        r = sge_copy(c, qp->pdn, e->recv_sge, e->recv_nsge, e->recv_off,
                     (void *)(frame + pkt->payload_off), pkt->payload_len,
                     true);
        if (r != SGE_OK) {
            recv_complete(c, qp, r == SGE_LEN ? QHCA_CQE_LOC_LEN_ERR :
                          QHCA_CQE_LOC_PROT_ERR, QHCA_CQE_OP_RECV, 0, 0, 0, 0);
            resp_error(c, qp, h->psn, r == SGE_LEN ?
                       QHCA_ROCE_NAK_INVALID_REQ : QHCA_ROCE_NAK_REMOTE_OP,
                       r == SGE_LEN ? QHCA_EQE_QP_REQ_ERR :
                       QHCA_EQE_QP_FATAL);
            return;
        }
        e->recv_off += pkt->payload_len;
        e->resp = RESP_SEND;
        if (f & QHCA_ROCE_OPF_LAST) {
            uint8_t flags = h->se ? QHCA_CQE_SOLICITED : 0;
            uint32_t extra = 0;

            if (f & QHCA_ROCE_OPF_INV) {
                if (qhca_mr_invalidate(c, qp->pdn, h->ieth_rkey)) {
                    recv_complete(c, qp, QHCA_CQE_REM_INV_REQ_ERR,
                                  QHCA_CQE_OP_RECV, 0, 0, 0, 0);
                    resp_error(c, qp, h->psn, QHCA_ROCE_NAK_INVALID_REQ,
                               QHCA_EQE_QP_REQ_ERR);
                    return;
                }
                flags |= QHCA_CQE_WITH_INV;
                extra = h->ieth_rkey;
            } else if (f & QHCA_ROCE_OPF_IMM) {
                flags |= QHCA_CQE_WITH_IMM;
                extra = h->imm;
            }
            e->msn++;
            e->resp = RESP_IDLE;
            recv_complete(c, qp, QHCA_CQE_SUCCESS, QHCA_CQE_OP_RECV,
                          e->recv_off, flags, extra, 0);
        }
    } else if (f & QHCA_ROCE_OPF_WRITE) {
        if (f & QHCA_ROCE_OPF_FIRST) {
            /* The whole RETH range is checked before any byte is written */
            if (h->reth.dma_len &&
                !resp_target(c, qp, h->psn, h->reth.rkey, h->reth.va,
                             h->reth.dma_len, QHCA_ACCESS_REMOTE_WRITE)) {
                return;
            }
            e->wr_va = h->reth.va;
            e->wr_rkey = h->reth.rkey;
            e->wr_len = h->reth.dma_len;
            e->wr_left = h->reth.dma_len;
        }
        if (pkt->payload_len > e->wr_left ||
            ((f & QHCA_ROCE_OPF_LAST) && pkt->payload_len != e->wr_left)) {
            resp_error(c, qp, h->psn, QHCA_ROCE_NAK_INVALID_REQ,
                       QHCA_EQE_QP_REQ_ERR);
            return;
        }
        if ((f & QHCA_ROCE_OPF_IMM) && !e->have_recv && !take_recv(c, qp)) {
            send_ack(c, qp, h->psn, QHCA_ROCE_AETH_RNR_NAK |
                     (qp->attr.min_rnr_timer & QHCA_ROCE_AETH_VALUE_MASK));
            trace_qhca_rnr(qp->qpn, h->psn);
            return;
        }
        if (pkt->payload_len) {
            const QhcaMr *mr = resp_target(c, qp, h->psn, e->wr_rkey,
                                           e->wr_va, pkt->payload_len,
                                           QHCA_ACCESS_REMOTE_WRITE);

            if (!mr) {
                return;
            }
            if (!qhca_mr_rw(c, mr, e->wr_va,
                            (void *)(frame + pkt->payload_off),
                            pkt->payload_len, true)) {
                resp_error(c, qp, h->psn, QHCA_ROCE_NAK_REMOTE_OP,
                           QHCA_EQE_QP_FATAL);
                return;
            }
        }
        e->wr_va += pkt->payload_len;
        e->wr_left -= pkt->payload_len;
        e->resp = RESP_WRITE;
        if (f & QHCA_ROCE_OPF_LAST) {
            e->resp = RESP_IDLE;
            e->msn++;
            if (f & QHCA_ROCE_OPF_IMM) {
                recv_complete(c, qp, QHCA_CQE_SUCCESS,
                              QHCA_CQE_OP_RECV_RDMA_WITH_IMM, e->wr_len,
                              QHCA_CQE_WITH_IMM |
                              (h->se ? QHCA_CQE_SOLICITED : 0), h->imm, 0);
            }
        }
    } else if (f & QHCA_ROCE_OPF_READ) {
        uint32_t mtu = qp_mtu(qp);
        const QhcaMr *mr = NULL;

        if (h->reth.dma_len) {
            mr = resp_target(c, qp, h->psn, h->reth.rkey, h->reth.va,
                             h->reth.dma_len, QHCA_ACCESS_REMOTE_READ);
            if (!mr) {
                return;
            }
        }
        read_start(qp, res_alloc(qp, h->psn, false), h);
        e->msn++;
        e->epsn = psn_add(e->epsn, MAX(1, DIV_ROUND_UP(h->reth.dma_len, mtu)));
        qp_schedule(c);
        return;
    } else if (f & QHCA_ROCE_OPF_ATOMIC) {
        const QhcaMr *mr;
        uint64_t orig, val;

        if (h->atomic.va & 7) {
            resp_error(c, qp, h->psn, QHCA_ROCE_NAK_INVALID_REQ,
                       QHCA_EQE_QP_REQ_ERR);
            return;
        }
        mr = resp_target(c, qp, h->psn, h->atomic.rkey, h->atomic.va, 8,
                         QHCA_ACCESS_REMOTE_ATOMIC);
        if (!mr) {
            return;
        }
        if (!qhca_mr_rw(c, mr, h->atomic.va, &orig, 8, false)) {
            resp_error(c, qp, h->psn, QHCA_ROCE_NAK_REMOTE_OP,
                       QHCA_EQE_QP_FATAL);
            return;
        }
        orig = le64_to_cpu(orig);
        if (h->opcode == QHCA_ROCE_OP_RC_COMPARE_SWAP) {
            val = orig == h->atomic.compare ? h->atomic.swap_add : orig;
        } else {
            val = orig + h->atomic.swap_add;
        }
        val = cpu_to_le64(val);
        if (!qhca_mr_rw(c, mr, h->atomic.va, &val, 8, true)) {
            resp_error(c, qp, h->psn, QHCA_ROCE_NAK_REMOTE_OP,
                       QHCA_EQE_QP_FATAL);
            return;
        }
        res_alloc(qp, h->psn, true)->orig = orig;
        trace_qhca_atomic_exec(qp->qpn, h->psn, h->atomic.va, orig);
        e->msn++;
        e->epsn = psn_add(e->epsn, 1);
        send_atomic_ack(c, qp, h->psn, orig);
        return;
    }
    e->epsn = psn_add(e->epsn, 1);
    if (h->ack_req) {
        send_ack(c, qp, h->psn,
                 QHCA_ROCE_AETH_ACK | QHCA_ROCE_AETH_CREDIT_INVALID);
    }
}

/* UD and GSI receive: the GRH area, then the payload */
static void ud_recv(QhcaCore *c, QhcaQp *qp, const QhcaRocePkt *pkt,
                    const uint8_t *frame)
{
    const QhcaRoceHdr *h = &pkt->hdr;
    uint8_t grh[QHCA_GRH_SIZE] = { 0 };
    uint32_t qkey = qp->type == QHCA_QPT_GSI ? QHCA_GSI_QKEY :
                    le32_to_cpu(qp->attr.qkey);
    QhcaQpEngine *e = qp->eng;
    uint8_t flags = QHCA_CQE_GRH;
    int r;

    if (qp->attr.qp_state != QHCA_QPS_RTR &&
        qp->attr.qp_state != QHCA_QPS_RTS &&
        qp->attr.qp_state != QHCA_QPS_SQD &&
        qp->attr.qp_state != QHCA_QPS_SQE) {
        trace_qhca_rx_drop(pkt->frame_len, "QP cannot receive");
        return;
    }
    if (h->deth.qkey != qkey) {
        trace_qhca_rx_drop(pkt->frame_len, "Q_Key mismatch");
        return;
    }
    if (!take_recv(c, qp)) {
        trace_qhca_rx_drop(pkt->frame_len, "no receive WQE (UD)");
        return;
    }
    if (e->recv_error) {
        recv_complete(c, qp, QHCA_CQE_LOC_QP_OP_ERR, QHCA_CQE_OP_RECV,
                      0, 0, 0, 0);
        return;
    }
    memcpy(grh + 20, frame + pkt->ip_off, QHCA_ROCE_IPV4_HLEN);
    r = sge_copy(c, qp->pdn, e->recv_sge, e->recv_nsge, 0, grh,
                 sizeof(grh), true);
    if (r == SGE_OK) {
        r = sge_copy(c, qp->pdn, e->recv_sge, e->recv_nsge, sizeof(grh),
                     (void *)(frame + pkt->payload_off), pkt->payload_len,
                     true);
    }
    if (r != SGE_OK) {
        recv_complete(c, qp, r == SGE_LEN ? QHCA_CQE_LOC_LEN_ERR :
                      QHCA_CQE_LOC_PROT_ERR, QHCA_CQE_OP_RECV, 0, 0, 0, 0);
        return;
    }
    if (pkt->op->flags & QHCA_ROCE_OPF_IMM) {
        flags |= QHCA_CQE_WITH_IMM;
    }
    if (h->se) {
        flags |= QHCA_CQE_SOLICITED;
    }
    recv_complete(c, qp, QHCA_CQE_SUCCESS, QHCA_CQE_OP_RECV,
                  QHCA_GRH_SIZE + pkt->payload_len, flags, h->imm,
                  h->deth.src_qp);
}

static bool our_ip(QhcaCore *c, uint32_t ip)
{
    unsigned i;
    uint32_t g;

    for (i = 0; i < QHCA_GID_TABLE_LEN; i++) {
        if (c->gid[i].valid && gid_ipv4(c->gid[i].gid, &g) && g == ip) {
            return true;
        }
    }
    return false;
}

void qhca_qp_engine_receive(QhcaCore *c, const uint8_t *frame, size_t len)
{
    QhcaRocePkt pkt;
    QhcaRoceErr err;
    QhcaQp *qp;

    if (len < QHCA_ROCE_ETH_HLEN || memcmp(frame, c->mac, 6)) {
        c->stat_rx_dropped++;
        trace_qhca_rx_drop(len, "not for our MAC");
        return;
    }
    err = qhca_roce_parse(frame, len, &pkt);
    if (err != QHCA_ROCE_OK) {
        if (err == QHCA_ROCE_ERR_ICRC) {
            c->stat_rx_bad_icrc++;
        } else {
            c->stat_rx_dropped++;
        }
        trace_qhca_rx_drop(len, qhca_roce_strerror(err));
        return;
    }
    trace_qhca_rx_pkt(pkt.hdr.dest_qp, pkt.hdr.opcode, pkt.hdr.psn,
                      pkt.payload_len);
    if (!our_ip(c, pkt.hdr.dst_ip)) {
        c->stat_rx_dropped++;
        trace_qhca_rx_drop(len, "not for one of our GIDs");
        return;
    }
    qp = qhca_core_qp(c, pkt.hdr.dest_qp);
    if (!qp) {
        c->stat_rx_dropped++;
        trace_qhca_rx_drop(len, "no such QP");
        return;
    }
    if (pkt.op->flags & QHCA_ROCE_OPF_UD) {
        if (qp->type == QHCA_QPT_RC) {
            c->stat_rx_dropped++;
            trace_qhca_rx_drop(len, "UD packet for an RC QP");
            return;
        }
        ud_recv(c, qp, &pkt, frame);
        return;
    }
    if (qp->type != QHCA_QPT_RC) {
        c->stat_rx_dropped++;
        trace_qhca_rx_drop(len, "RC packet for a UD QP");
        return;
    }
    if (pkt.op->flags & QHCA_ROCE_OPF_RESPONSE) {
        comp_recv(c, qp, &pkt, frame);
    } else {
        resp_recv(c, qp, &pkt, frame);
    }
    core_timer_update(c);
}

/*
 * QP life cycle, doorbells, the run loop and the timer
 */

void qhca_qp_engine_create(QhcaCore *c, QhcaQp *qp)
{
    qp->eng = g_new0(QhcaQpEngine, 1);
    qp->eng->wqe = g_new0(QhcaWqeState, 1u << qp->sq.log_depth);
    qp->eng->deadline = -1;
}

void qhca_qp_engine_destroy(QhcaCore *c, QhcaQp *qp)
{
    g_free(qp->eng->wqe);
    g_free(qp->eng);
    qp->eng = NULL;
    core_timer_update(c);
}

void qhca_qp_engine_modified(QhcaCore *c, QhcaQp *qp, uint8_t from,
                             uint8_t to, uint32_t mask)
{
    QhcaQpEngine *e = qp->eng;

    if (to == QHCA_QPS_RESET) {
        /* Software starts over at index 0 after a reset */
        QhcaWqeState *wqe = e->wqe;

        memset(wqe, 0, sizeof(*wqe) << qp->sq.log_depth);
        memset(e, 0, sizeof(*e));
        e->wqe = wqe;
        e->deadline = -1;
        qp->sq.pi = qp->sq.ci = 0;
        qp->rq.pi = qp->rq.ci = 0;
    }
    if (mask & QHCA_QP_ATTR_SQ_PSN) {
        e->next_psn = le32_to_cpu(qp->attr.sq_psn);
        e->acked = psn_add(e->next_psn, -1);
    }
    if (mask & QHCA_QP_ATTR_RQ_PSN) {
        e->epsn = le32_to_cpu(qp->attr.rq_psn);
    }
    if (mask & QHCA_QP_ATTR_RETRY_CNT) {
        e->retry_left = qp->attr.retry_cnt;
    }
    if (mask & QHCA_QP_ATTR_RNR_RETRY) {
        e->rnr_left = qp->attr.rnr_retry;
    }
    if (to == QHCA_QPS_SQD) {
        e->drained_notified = false;
    }
    if (to == QHCA_QPS_ERR && from != QHCA_QPS_ERR) {
        unsigned i;

        for (i = 0; i < ARRAY_SIZE(e->res); i++) {
            e->res[i].sending = false;
        }
        e->replay.sending = false;
        e->deadline = -1;
        if (qp->srqn != QHCA_NO_SRQ) {
            qhca_post_async(c, QHCA_EQE_LAST_WQE_REACHED, qp->qpn);
        }
    }
    qp_schedule(c);
}

bool qhca_qp_engine_sq_draining(QhcaCore *c, QhcaQp *qp)
{
    return qp->attr.qp_state == QHCA_QPS_SQD && qp->sq.ci != qp->eng->req_idx;
}

void qhca_qp_engine_doorbell(QhcaCore *c, QhcaQp *qp, bool sq, uint16_t pi)
{
    QhcaRing *r = sq ? &qp->sq : &qp->rq;

    if (!sq && qp->srqn != QHCA_NO_SRQ) {
        qhca_guest_ub(c, "RQ doorbell for a QP with an SRQ", qp->qpn);
        return;
    }
    if ((uint16_t)(pi - r->ci) > (1u << r->log_depth)) {
        qhca_guest_ub(c, "QP doorbell: more WQEs than entries", pi);
        return;
    }
    if (sq) {
        qp->eng->sq_pi = pi;
    } else {
        qp->eng->rq_pi = pi;
    }
    qp_schedule(c);
}

/* Complete every posted WQE of @r with WR_FLUSH_ERR */
static void flush_ring(QhcaCore *c, QhcaQp *qp, QhcaRing *r, uint16_t pi,
                       bool sq)
{
    while (r->ci != pi) {
        struct qhca_cqe cqe = { 0 };
        uint64_t addr, wr_id = 0;

        if (qhca_ring_entry_addr(r, r->ci, &addr)) {
            c->ops->dma_read(c->opaque, addr + (sq ?
                             offsetof(struct qhca_send_wqe, wr_id) :
                             offsetof(struct qhca_recv_wqe, wr_id)),
                             &wr_id, sizeof(wr_id));
        }
        cqe.wr_id = wr_id;      /* already little-endian */
        cqe.status = QHCA_CQE_WR_FLUSH_ERR;
        cqe.opcode = QHCA_CQE_OP_RECV;
        if (sq) {
            uint8_t op = 0;

            /* the opcode tells software which queue wqe_index is in */
            if (qhca_ring_entry_addr(r, r->ci, &addr)) {
                c->ops->dma_read(c->opaque, addr, &op, 1);
            }
            cqe.opcode = cqe_opcode(op);
        }
        cqe.qpn = cpu_to_le32(qp->qpn);
        cqe.wqe_index = cpu_to_le16(r->ci);
        if (!qhca_post_cqe(c, sq ? qp->send_cqn : qp->recv_cqn, &cqe)) {
            return;
        }
        r->ci++;
    }
}

static void qp_flush(QhcaCore *c, QhcaQp *qp, bool rq)
{
    QhcaQpEngine *e = qp->eng;

    /* WQEs already finished complete with their own status first */
    sq_complete(c, qp);
    flush_ring(c, qp, &qp->sq, e->sq_pi, true);
    e->req_idx = qp->sq.ci;
    e->req_off = 0;
    if (!rq) {
        return;
    }
    if (e->have_recv) {
        recv_complete(c, qp, QHCA_CQE_WR_FLUSH_ERR, QHCA_CQE_OP_RECV,
                      0, 0, 0, 0);
    }
    if (qp->srqn == QHCA_NO_SRQ) {
        flush_ring(c, qp, &qp->rq, e->rq_pi, false);
    }
}

bool qhca_qp_engine_run(QhcaCore *c)
{
    bool more = false;
    uint32_t i;

    for (i = 1; i < QHCA_MAX_QP; i++) {
        QhcaQp *qp = qhca_core_qp(c, i);
        QhcaQpEngine *e;

        if (!qp) {
            continue;
        }
        e = qp->eng;
        switch (qp->attr.qp_state) {
        case QHCA_QPS_ERR:
            qp_flush(c, qp, true);
            continue;
        case QHCA_QPS_SQE:
            qp_flush(c, qp, false);
            continue;
        case QHCA_QPS_RTR:
            more |= read_run(c, qp);
            break;
        case QHCA_QPS_RTS:
        case QHCA_QPS_SQD:
            more |= read_run(c, qp);
            req_run(c, qp, &more);
            sq_complete(c, qp);
            if (qp->attr.qp_state == QHCA_QPS_SQD && !e->drained_notified &&
                qp->sq.ci == e->req_idx) {
                e->drained_notified = true;
                if (qp->attr.en_sqd_async_notify) {
                    qhca_post_async(c, QHCA_EQE_SQ_DRAINED, qp->qpn);
                }
            }
            break;
        default:
            break;
        }
    }
    core_timer_update(c);
    return more;
}

void qhca_qp_engine_timer(QhcaCore *c)
{
    int64_t now = c->ops->now_ns(c->opaque);
    uint32_t i;

    c->timer_deadline = -1;
    for (i = 1; i < QHCA_MAX_QP; i++) {
        QhcaQp *qp = qhca_core_qp(c, i);
        QhcaQpEngine *e;

        if (!qp || qp->eng->deadline < 0 || qp->eng->deadline > now) {
            continue;
        }
        e = qp->eng;
        e->deadline = -1;
        if (e->rnr_wait) {
            e->rnr_wait = false;
            qp_arm_timer(c, qp);
            continue;
        }
        if (!req_outstanding(qp)) {
            continue;                   /* nothing outstanding */
        }
        if (e->retry_left == 0) {
            trace_qhca_retry_exceeded(qp->qpn, psn_add(e->acked, 1));
            req_fail_at(qp, psn_add(e->acked, 1), QHCA_CQE_RETRY_EXC_ERR);
            /* nothing came back: the head itself failed */
            if (e->wqe[qp->sq.ci & sq_mask(qp)].state == WQE_STARTED) {
                wqe_done(qp, qp->sq.ci, QHCA_CQE_RETRY_EXC_ERR);
            }
            sq_complete(c, qp);
            continue;
        }
        e->retry_left--;
        c->stat_retransmits++;
        for (uint16_t j = qp->sq.ci; j != e->sq_pi; j++) {
            e->wqe[j & sq_mask(qp)].reread = false;
        }
        {
            uint16_t idx;
            QhcaWqeState *rd = req_head_rd(qp, &idx);
            uint32_t from = psn_add(e->acked, 1);

            /* a READ resumes at its first missing response */
            if (rd && psn_diff(from, rd->first_psn) >= 0) {
                from = rd->next_resp_psn;
            }
            req_rewind(c, qp, from);
        }
        qp_arm_timer(c, qp);
    }
    qp_schedule(c);
    core_timer_update(c);
}

void qhca_srq_check_limit(QhcaCore *c, uint32_t srqn, QhcaSrq *srq)
{
    uint16_t avail = srq->ring.pi - srq->ring.ci;

    if (srq->limit && avail < srq->limit) {
        srq->limit = 0;
        qhca_post_async(c, QHCA_EQE_SRQ_LIMIT, srqn);
    }
}
