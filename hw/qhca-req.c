/*
 * qhca QP engine: the requester.  Reads send WQEs from the SQ, checks each
 * when it is started, gives an RC WQE its PSNs, segments it into packets at
 * the path MTU within the window, and executes local WQEs (LOCAL_INV,
 * REG_MR).  UD and GSI WQEs are one packet each.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qhca-qp-int.h"
#include "trace.h"

static uint64_t sge_total(const struct qhca_sge *sge, unsigned n)
{
    uint64_t t = 0;
    unsigned i;

    for (i = 0; i < n; i++) {
        t += le32_to_cpu(sge[i].length);
    }
    return t;
}

bool qhca_wqe_read(QhcaCore *c, QhcaQp *qp, uint16_t idx,
                   struct qhca_send_wqe *w, uint64_t *addr)
{
    return qhca_ring_entry_addr(&qp->sq, idx, addr) &&
           qhca_op_dma_read(c, *addr, w, sizeof(*w));
}

/* The opcode table of include/qhca_hw.h: may a QP of this type post it */
static bool wqe_op_valid(const QhcaQp *qp, uint8_t op)
{
    return qhca_wqe_op_allowed(op, qp->type);
}


/*
 * Check a WQE (index @idx of the SQ, for the traces) when it is first
 * started.  Returns 0 or a CQE status, and the message length in *len.
 */
int qhca_wqe_check(QhcaCore *c, QhcaQp *qp, uint16_t idx,
                   const struct qhca_send_wqe *w, uint64_t addr,
                   struct qhca_sge *sge, uint64_t *len)
{
    uint32_t room = (1u << qp->sq.log_stride) - QHCA_SEND_WQE_HDR_SIZE;

    if (!wqe_op_valid(qp, w->opcode) ||
        (w->flags & ~(QHCA_WQE_SIGNALED | QHCA_WQE_SOLICITED |
                      QHCA_WQE_INLINE | QHCA_WQE_FENCE))) {
        QHCA_GUEST_ERROR(c, wqe_bad_opcode_flags_this_qp, qp->qpn, idx,
                         w->opcode, w->flags, qp->type);
        return QHCA_CQE_LOC_QP_OP_ERR;
    }
    if (w->flags & QHCA_WQE_INLINE) {
        uint32_t il = le32_to_cpu(w->inline_len);

        if (il > qp->max_inline || il > room ||
            !qhca_wqe_op_has(w->opcode, QHCA_WQE_OPF_INLINE)) {
            QHCA_GUEST_ERROR(c, wqe_bad_inline_data, qp->qpn, idx, w->opcode,
                             il, qp->max_inline, room);
            return QHCA_CQE_LOC_QP_OP_ERR;
        }
        *len = il;
        return 0;
    }
    if (w->num_sge > QHCA_MAX_SGE ||
        w->num_sge * sizeof(struct qhca_sge) > room) {
        QHCA_GUEST_ERROR(c, wqe_too_many_sges, qp->qpn, idx, w->num_sge,
                         MIN(QHCA_MAX_SGE, room / sizeof(struct qhca_sge)));
        return QHCA_CQE_LOC_QP_OP_ERR;
    }
    if (w->num_sge && !qhca_op_dma_read(c, addr +
                                        QHCA_SEND_WQE_HDR_SIZE, sge,
                                        w->num_sge * sizeof(*sge))) {
        return QHCA_CQE_LOC_QP_OP_ERR;
    }
    *len = sge_total(sge, w->num_sge);
    if (*len > 0x80000000ULL) {
        QHCA_GUEST_ERROR(c, wqe_message_longer_2_gib, qp->qpn, idx, *len);
        return QHCA_CQE_LOC_LEN_ERR;
    }
    if (qhca_wqe_op_has(w->opcode, QHCA_WQE_OPF_ATOMIC) && *len != 8) {
        QHCA_GUEST_ERROR(c, wqe_atomic_needs_one_8_byte_buffer, qp->qpn, idx,
                         *len);
        return QHCA_CQE_LOC_LEN_ERR;
    }
    if (is_empty_read_answered(w->opcode)) {
        uint32_t feth = le32_to_cpu(w->rdma.feth);
        uint32_t level = feth >> QHCA_FLUSH_LEVEL_SHIFT;

        /* what they carry is in the WQE itself; no buffers */
        if (w->num_sge ||
            (w->opcode == QHCA_WQE_FLUSH &&
             (!(feth & QHCA_FLUSH_TYPE_MASK) ||
              (feth & ~(QHCA_FLUSH_TYPE_MASK |
                        3u << QHCA_FLUSH_LEVEL_SHIFT)) ||
              level > QHCA_FLUSH_MR ||
              le64_to_cpu(w->rdma.compare_add) > QHCA_MAX_MSG_BYTES))) {
            QHCA_GUEST_ERROR(c, wqe_bad_flush_or_atomic_write, qp->qpn, idx,
                             w->opcode, w->num_sge, feth,
                             le64_to_cpu(w->rdma.compare_add));
            return QHCA_CQE_LOC_QP_OP_ERR;
        }
        *len = w->opcode == QHCA_WQE_ATOMIC_WRITE ? 8 : 0;
    }
    if (!qp_is_conn(qp) && *len > 4096) {
        return QHCA_CQE_LOC_LEN_ERR;
    }
    return 0;
}

/* FNV-1a, 64 bits: enough to tell a WQE rewritten in guest memory */
static uint64_t fnv1a(uint64_t h, const void *buf, size_t len)
{
    const uint8_t *p = buf;

    while (len--) {
        h = (h ^ *p++) * 0x100000001b3ULL;
    }
    return h;
}

/*
 * The fingerprint of a checked WQE: its header, its SGEs or inline data.
 * 0 if the inline data cannot be read.
 */
static uint64_t wqe_fingerprint(QhcaCore *c, const struct qhca_send_wqe *w,
                                uint64_t addr, const struct qhca_sge *sge)
{
    uint64_t h = fnv1a(0xcbf29ce484222325ULL, w, sizeof(*w));

    if (w->flags & QHCA_WQE_INLINE) {
        uint8_t data[QHCA_MAX_INLINE];
        uint32_t il = le32_to_cpu(w->inline_len);

        if (il > sizeof(data) ||
            !qhca_op_dma_read(c, addr + QHCA_SEND_WQE_HDR_SIZE,
                              data, il)) {
            return 0;
        }
        return fnv1a(h, data, il) | 1;
    }
    return fnv1a(h, sge, w->num_sge * sizeof(*sge)) | 1;
}

/*
 * Read and check WQE @idx again for a later packet or a retransmission:
 * it must be the WQE that was started (software may not touch a WQE the
 * device owns), so that the device never leaves the original message.
 * Returns 0 or a CQE status.
 */
int qhca_wqe_reread(QhcaCore *c, QhcaQp *qp, const QhcaWqeState *st,
                    uint16_t idx, struct qhca_send_wqe *w, uint64_t *addr,
                    struct qhca_sge *sge, uint64_t *len)
{
    int status;

    if (!qhca_wqe_read(c, qp, idx, w, addr)) {
        return QHCA_CQE_LOC_QP_OP_ERR;
    }
    status = qhca_wqe_check(c, qp, idx, w, *addr, sge, len);
    if (status) {
        return status;
    }
    if (wqe_fingerprint(c, w, *addr, sge) != st->fingerprint ||
        *len != st->byte_len || w->opcode != st->opcode) {
        QHCA_GUEST_ERROR(c, wqe_changed_while_device_owned, qp->qpn, idx,
                         w->opcode, st->opcode, *len, st->byte_len);
        return QHCA_CQE_LOC_QP_OP_ERR;
    }
    return 0;
}

/* Gather @n bytes at @off of the WQE's data into the frame at @dst */
static int gather(QhcaCore *c, QhcaQp *qp, const struct qhca_send_wqe *w,
                  uint64_t addr, const struct qhca_sge *sge, uint64_t off,
                  uint8_t *dst, uint32_t n)
{
    if (w->flags & QHCA_WQE_INLINE) {
        uint32_t il = le32_to_cpu(w->inline_len);

        /* never outside the inline data the WQE was checked with */
        if (off > il || n > il - off) {
            return SGE_LEN;
        }
        return qhca_op_dma_read(c, addr + QHCA_SEND_WQE_HDR_SIZE + off,
                                dst, n) ? SGE_OK : SGE_PROT;
    }
    return qhca_sge_copy(c, qp->pdn, sge, w->num_sge, off, dst, n, false);
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

/* Execute a local WQE (LOCAL_INV, REG_MR, BIND_MW) */
static uint8_t local_op(QhcaCore *c, QhcaQp *qp, const struct qhca_send_wqe *w)
{
    if (w->opcode == QHCA_WQE_LOCAL_INV) {
        return qhca_mr_invalidate(c, qp->pdn, QHCA_ANY_QPN,
                                  le32_to_cpu(w->invalidate_rkey));
    }
    if (w->opcode == QHCA_WQE_BIND_MW) {
        /* what it needs is in the header: SGEs are a malformed WQE */
        if (w->num_sge) {
            QHCA_GUEST_ERROR(c, wqe_bind_mw_with_sges, qp->qpn,
                             qp->eng->req_idx, w->num_sge);
            return QHCA_CQE_LOC_QP_OP_ERR;
        }
        return qhca_mw_bind(c, qp->pdn, qp->qpn, le32_to_cpu(w->bind.mw_key),
                            le32_to_cpu(w->bind.new_key),
                            le32_to_cpu(w->bind.mr_lkey),
                            le64_to_cpu(w->bind.addr),
                            le64_to_cpu(w->bind.length),
                            le32_to_cpu(w->bind.access));
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
        QHCA_GUEST_ERROR(c, ud_wqe_bad_ah, qp->qpn, qp->eng->req_idx,
                         le32_to_cpu(w->ud.ahn), qp->pdn);
        return QHCA_CQE_LOC_QP_OP_ERR;
    }
    if (!qhca_qp_addr(c, qp, ah->sgid_index, ah->dgid, ah->dmac, ah->hop_limit,
                      ah->traffic_class, ah->flow_label, &h)) {
        QHCA_GUEST_ERROR(c, ud_wqe_ah_bad_gids, qp->qpn, qp->eng->req_idx,
                         le32_to_cpu(w->ud.ahn), ah->sgid_index);
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
    off = qhca_frame_start(c, &h, len);
    if (off < 0) {
        return QHCA_CQE_LOC_LEN_ERR;
    }
    if (gather(c, qp, w, addr, sge, 0, c->txbuf + off, len) != SGE_OK) {
        return QHCA_CQE_LOC_PROT_ERR;
    }
    qhca_frame_send(c, &h, len);
    qp->eng->next_psn = psn_add(qp->eng->next_psn, 1);
    return QHCA_CQE_SUCCESS;
}

/* What sending (more of) a WQE came to */
enum {
    SEND_DONE,                  /* every packet of it is sent */
    SEND_WAIT,                  /* the window is full: an ACK or timer wakes */
    SEND_BUDGET,                /* this run's budget is spent: run again */
    SEND_FAILED,                /* the WQE failed (qhca_wqe_done) */
};

/* Where new PSNs start: past what was sent, and past what was acknowledged */
static uint32_t req_tx_end(const QhcaQpEngine *e)
{
    return psn_diff(e->tx_end, e->acked) > 0 ? e->tx_end :
           psn_add(e->acked, 1);
}

/*
 * The device's window: a packet with PSNs up to @last that were never sent
 * waits while the data in flight of all QPs together would go past the
 * window (a QP's own window is checked by its caller).  A retransmission
 * never waits for it: its data is in flight already.
 */
static bool dev_window_full(QhcaCore *c, QhcaQp *qp, uint32_t last)
{
    int32_t fresh = psn_diff(last, req_tx_end(qp->eng)) + 1;
    uint64_t mtu = qp_mtu(qp);

    if (fresh > 0 && c->inflight_bytes &&
        c->inflight_bytes + fresh * mtu > qp_window(qp) * mtu) {
        /* the next run that finds room visits it (qhca_qp_engine_run()) */
        qhca_qp_dwait(c, qp, fresh * mtu);
        return true;
    }
    return false;
}

/*
 * Must a packet starting at @first and ending at @last wait?  Past the
 * QP's window (@window packets after the last acknowledged PSN), past the
 * device's, or anything but the probe's packet while a probe is out.
 */
static bool req_must_wait(QhcaCore *c, QhcaQp *qp, uint32_t first,
                          uint32_t last, int32_t window)
{
    const QhcaQpEngine *e = qp->eng;

    return psn_diff(last, e->acked) > window ||
           dev_window_full(c, qp, last) ||
           (e->probing && first != psn_add(e->acked, 1));
}

/*
 * A packet of the WQE at req_idx went out, with @n more bytes of it and
 * PSNs up to @last: new ones count in the device's data in flight, and
 * the first new one after the last measurement starts a round trip's
 */
static void req_sent(QhcaCore *c, QhcaQp *qp, uint64_t n, unsigned *budget,
                     uint32_t last)
{
    QhcaQpEngine *e = qp->eng;
    uint32_t end = req_tx_end(e);
    int32_t fresh = psn_diff(last, end) + 1;

    if (fresh > 0) {
        c->inflight_bytes += (uint64_t)fresh * qp_mtu(qp);
        e->inflight_counted += (uint64_t)fresh * qp_mtu(qp);
        e->tx_end = psn_add(last, 1);
        if (!e->rtt_pending) {
            e->rtt_pending = true;
            e->rtt_psn = last;
            e->rtt_t0 = c->ops->now_ns(c->opaque);
        }
    }
    e->req_off += n;
    (*budget)--;
    if (e->deadline < 0) {
        qhca_qp_arm_timer(c, qp);
    }
}

/* Packets in one READ piece (see rc_send_read()) */
static uint32_t read_piece_pkts(const QhcaQp *qp)
{
    return MAX(1, qp_window(qp) / 2);
}

/*
 * READ requests and atomics the responder may still be answering: every
 * atomic not answered, and every READ piece asked for and not completely
 * answered.  Each takes one of the responder's max_dest_rd_atomic
 * resources, so no more than max_rd_atomic may be outstanding.
 */
static uint32_t rd_requests_out(const QhcaQp *qp)
{
    const QhcaQpEngine *e = qp->eng;
    uint32_t n = 0;
    uint16_t i;

    for (i = qp->sq.ci; i != e->sq_pi; i++) {
        const QhcaWqeState *st = &e->wqe[i & sq_mask(qp)];

        if (st->state == WQE_FREE) {
            break;
        }
        if (st->state != WQE_STARTED || !is_rd_atomic(st->opcode) ||
            st->resp_done) {
            continue;
        }
        if (st->opcode == QHCA_WQE_RDMA_READ) {
            uint32_t done = psn_diff(st->next_resp_psn, st->first_psn) /
                            read_piece_pkts(qp);

            n += st->pieces_sent > done ? st->pieces_sent - done : 0;
        } else {
            n++;
        }
    }
    return n;
}

/*
 * A READ is asked for in pieces of half a window, each a READ request of
 * its own for its share of the WQE's PSNs, so that the answers in flight
 * stay within the window.  The pieces are fixed from the WQE's first PSN
 * on: asked again from the middle of one (after a loss), the request ends
 * where that piece ends, so that it is a duplicate of exactly one request
 * the responder executed (and tracks), never partly a new one.
 */
typedef struct ReadPiece {
    uint64_t n;                 /* bytes asked for */
    uint32_t psn, end;          /* its PSNs */
    uint32_t piece;             /* which piece of the WQE */
} ReadPiece;

/* The piece of READ @st of @len bytes that req_off is in, from req_off on */
static ReadPiece read_next_piece(const QhcaQp *qp, const QhcaWqeState *st,
                                 uint64_t len)
{
    const QhcaQpEngine *e = qp->eng;
    uint32_t mtu = qp_mtu(qp);
    uint64_t chunk_max = (uint64_t)read_piece_pkts(qp) * mtu;
    ReadPiece p;

    p.n = MIN(len - e->req_off, chunk_max - e->req_off % chunk_max);
    p.psn = psn_add(st->first_psn, e->req_off / mtu);
    p.end = psn_add(p.psn, MAX(1, DIV_ROUND_UP(p.n, mtu)) - 1);
    p.piece = e->req_off / chunk_max;
    return p;
}

/* Must piece @p of READ @st wait (the windows, the READ limit)? */
static bool read_piece_waits(QhcaCore *c, QhcaQp *qp,
                             const QhcaWqeState *st, const ReadPiece *p)
{
    /* one piece at a time at least, whatever losses did to cwnd */
    if (req_must_wait(c, qp, p->psn, p->end,
                      MAX(qp_send_window(qp),
                          (int32_t)read_piece_pkts(qp)))) {
        return true;
    }
    /* a new piece needs a responder resource; a piece asked again not */
    return p->piece >= st->pieces_sent &&
           rd_requests_out(qp) >= MAX(1, qp->attr.max_rd_atomic);
}

static int rc_send_read(QhcaCore *c, QhcaQp *qp, const struct qhca_send_wqe *w,
                        QhcaWqeState *st, QhcaRoceHdr *h, uint64_t len,
                        unsigned *budget)
{
    QhcaQpEngine *e = qp->eng;

    do {
        ReadPiece p = read_next_piece(qp, st, len);

        if (read_piece_waits(c, qp, st, &p)) {
            return SEND_WAIT;
        }
        if (!*budget) {
            return SEND_BUDGET;
        }
        st->pieces_sent = MAX(st->pieces_sent, p.piece + 1);
        h->opcode = QHCA_ROCE_OP_RC_RDMA_READ_REQUEST;
        h->psn = p.psn;
        h->ack_req = true;
        h->reth.va = le64_to_cpu(w->rdma.remote_addr) + e->req_off;
        h->reth.rkey = le32_to_cpu(w->rdma.rkey);
        h->reth.dma_len = p.n;
        qhca_send_simple(c, h, NULL, 0);
        req_sent(c, qp, p.n, budget, p.end);
    } while (e->req_off < len);
    return SEND_DONE;
}

static int rc_send_atomic(QhcaCore *c, QhcaQp *qp,
                          const struct qhca_send_wqe *w, QhcaWqeState *st,
                          QhcaRoceHdr *h, unsigned *budget)
{
    h->opcode = w->opcode == QHCA_WQE_ATOMIC_CMP_AND_SWP ?
                QHCA_ROCE_OP_RC_COMPARE_SWAP : QHCA_ROCE_OP_RC_FETCH_ADD;
    h->psn = st->first_psn;
    h->ack_req = true;
    h->atomic.va = le64_to_cpu(w->rdma.remote_addr);
    h->atomic.rkey = le32_to_cpu(w->rdma.rkey);
    if (w->opcode == QHCA_WQE_ATOMIC_CMP_AND_SWP) {
        h->atomic.compare = le64_to_cpu(w->rdma.compare_add);
        h->atomic.swap_add = le64_to_cpu(w->rdma.swap);
    } else {
        h->atomic.swap_add = le64_to_cpu(w->rdma.compare_add);
    }
    qhca_send_simple(c, h, NULL, 0);
    req_sent(c, qp, 0, budget, h->psn);
    return SEND_DONE;
}

/*
 * FLUSH (FETH + RETH of the range) and ATOMIC WRITE (RETH of 8 bytes and
 * the 8 bytes): one request packet each, answered like a READ
 */
static int rc_send_flush_aw(QhcaCore *c, QhcaQp *qp,
                            const struct qhca_send_wqe *w, QhcaWqeState *st,
                            QhcaRoceHdr *h, unsigned *budget)
{
    uint64_t val = w->rdma.compare_add;     /* the bytes as they are */

    h->psn = st->first_psn;
    h->ack_req = true;
    h->reth.va = le64_to_cpu(w->rdma.remote_addr);
    h->reth.rkey = le32_to_cpu(w->rdma.rkey);
    if (w->opcode == QHCA_WQE_FLUSH) {
        h->opcode = QHCA_ROCE_OP_RC_FLUSH;
        h->feth = le32_to_cpu(w->rdma.feth);
        h->reth.dma_len = le64_to_cpu(w->rdma.compare_add);
        qhca_send_simple(c, h, NULL, 0);
    } else {
        h->opcode = QHCA_ROCE_OP_RC_ATOMIC_WRITE;
        h->reth.dma_len = 8;
        qhca_send_simple(c, h, &val, 8);
    }
    req_sent(c, qp, 0, budget, h->psn);
    return SEND_DONE;
}

/*
 * After the WQE at req_idx, is there another WQE that will send packets
 * (and so ask for an ACK)?  Not if none is posted, and not if the next is
 * a local operation (LOCAL_INV, REG_MR: its opcode byte is read to know).
 * What software writes there only decides when the ACK is asked for.
 */
static bool req_more_to_send(QhcaCore *c, QhcaQp *qp)
{
    uint16_t next = qp->eng->req_idx + 1;
    uint64_t addr;
    uint8_t op = 0;

    if (next == qp->eng->sq_pi || !qhca_ring_entry_addr(&qp->sq, next, &addr)) {
        return false;
    }
    qhca_op_dma_read(c, addr + offsetof(struct qhca_send_wqe, opcode),
                     &op, 1);
    return !is_local_op(op);
}

/* SEND and RDMA WRITE: one packet per MTU, from req_off on */
static int rc_send_data(QhcaCore *c, QhcaQp *qp, const struct qhca_send_wqe *w,
                        uint64_t addr, const struct qhca_sge *sge,
                        QhcaWqeState *st, QhcaRoceHdr *h, uint64_t len,
                        unsigned *budget)
{
    QhcaQpEngine *e = qp->eng;
    uint32_t mtu = qp_mtu(qp);
    /* ACKs keep coming while a window is in flight, at any MTU */
    uint32_t ack_every = MIN(QHCA_ACK_REQ_EVERY, MAX(1, qp_window(qp) / 4));

    do {
        bool first = e->req_off == 0;
        uint32_t n = MIN(len - e->req_off, mtu);
        bool last = e->req_off + n == len;
        uint32_t psn = psn_add(st->first_psn, e->req_off / mtu);
        int off;

        if (req_must_wait(c, qp, psn, psn, qp_send_window(qp))) {
            return SEND_WAIT;
        }
        if (!*budget) {
            return SEND_BUDGET;
        }
        memset(&h->reth, 0, sizeof(h->reth));
        h->opcode = rc_opcode(w->opcode, first, last);
        h->psn = psn;
        h->se = last && (w->flags & QHCA_WQE_SOLICITED);
        /*
         * An ACK is asked for every ack_every packets, by the last packet
         * of a message that no other message follows yet (the requester
         * then goes idle, and the WQE's completion waits for it; a message
         * followed by more is covered by a later AckReq: a stream of small
         * messages is not answered packet by packet), by a probe, and by
         * the last packet
         * before a full window (the QP's or the device's) stops the QP:
         * nothing else would ask for the ACK that opens it again
         */
        h->ack_req = (last && !req_more_to_send(c, qp)) ||
                     ++e->pkts_since_ackreq >= ack_every ||
                     e->probing ||
                     psn_diff(psn, e->acked) >= qp_send_window(qp) ||
                     dev_window_full(c, qp, psn_add(psn, 1));
        if (h->ack_req) {
            e->pkts_since_ackreq = 0;
        }
        if (first && (w->opcode == QHCA_WQE_RDMA_WRITE ||
                      w->opcode == QHCA_WQE_RDMA_WRITE_WITH_IMM)) {
            h->reth.va = le64_to_cpu(w->rdma.remote_addr);
            h->reth.rkey = le32_to_cpu(w->rdma.rkey);
            h->reth.dma_len = len;
        }
        h->imm = ldl_be_p(w->imm_data);
        h->ieth_rkey = le32_to_cpu(w->invalidate_rkey);
        off = qhca_frame_start(c, h, n);
        if (off < 0) {
            qhca_wqe_done(qp, e->req_idx, QHCA_CQE_LOC_QP_OP_ERR);
            return SEND_FAILED;
        }
        if (gather(c, qp, w, addr, sge, e->req_off, c->txbuf + off, n) !=
            SGE_OK) {
            /* Only the packets before this one reached the wire */
            qhca_wqe_done(qp, e->req_idx, QHCA_CQE_LOC_PROT_ERR);
            return SEND_FAILED;
        }
        qhca_frame_send(c, h, n);
        req_sent(c, qp, n, budget, psn);
    } while (e->req_off < len);
    return SEND_DONE;
}

/* Send the packets of the RC WQE at req_idx (from req_off on) */
static int rc_send_wqe(QhcaCore *c, QhcaQp *qp, const struct qhca_send_wqe *w,
                       uint64_t addr, const struct qhca_sge *sge,
                       uint64_t len, unsigned *budget)
{
    QhcaQpEngine *e = qp->eng;
    QhcaWqeState *st = &e->wqe[e->req_idx & sq_mask(qp)];
    QhcaRoceHdr h = { 0 };

    if (!qhca_rc_addr(c, qp, &h)) {
        qhca_wqe_done(qp, e->req_idx, QHCA_CQE_LOC_QP_OP_ERR);
        return SEND_FAILED;
    }
    qhca_cc_data_addr(c, &h);
    if (w->opcode == QHCA_WQE_RDMA_READ) {
        return rc_send_read(c, qp, w, st, &h, len, budget);
    }
    if (is_empty_read_answered(w->opcode)) {
        return rc_send_flush_aw(c, qp, w, st, &h, budget);
    }
    if (is_rd_atomic(w->opcode)) {
        return rc_send_atomic(c, qp, w, st, &h, budget);
    }
    return rc_send_data(c, qp, w, addr, sge, st, &h, len, budget);
}

/*
 * UC SEND and RDMA WRITE: RC's packets with UC opcodes, without AckReq,
 * window or timer: nothing is ever acknowledged, so the WQE is complete
 * once its last packet is on the wire (IBA 9.8.3)
 */
static int uc_send_wqe(QhcaCore *c, QhcaQp *qp, const struct qhca_send_wqe *w,
                       uint64_t addr, const struct qhca_sge *sge,
                       uint64_t len, unsigned *budget)
{
    QhcaQpEngine *e = qp->eng;
    QhcaWqeState *st = &e->wqe[e->req_idx & sq_mask(qp)];
    uint32_t mtu = qp_mtu(qp);
    QhcaRoceHdr h = { 0 };

    if (!qhca_rc_addr(c, qp, &h)) {
        qhca_wqe_done(qp, e->req_idx, QHCA_CQE_LOC_QP_OP_ERR);
        return SEND_FAILED;
    }
    do {
        bool first = e->req_off == 0;
        uint32_t n = MIN(len - e->req_off, mtu);
        bool last = e->req_off + n == len;
        int off;

        if (!*budget) {
            return SEND_BUDGET;
        }
        memset(&h.reth, 0, sizeof(h.reth));
        h.opcode = QHCA_ROCE_OP_UC_BASE + rc_opcode(w->opcode, first, last);
        h.psn = psn_add(st->first_psn, e->req_off / mtu);
        h.se = last && (w->flags & QHCA_WQE_SOLICITED);
        if (first && (w->opcode == QHCA_WQE_RDMA_WRITE ||
                      w->opcode == QHCA_WQE_RDMA_WRITE_WITH_IMM)) {
            h.reth.va = le64_to_cpu(w->rdma.remote_addr);
            h.reth.rkey = le32_to_cpu(w->rdma.rkey);
            h.reth.dma_len = len;
        }
        h.imm = ldl_be_p(w->imm_data);
        off = qhca_frame_start(c, &h, n);
        if (off < 0) {
            qhca_wqe_done(qp, e->req_idx, QHCA_CQE_LOC_QP_OP_ERR);
            return SEND_FAILED;
        }
        if (gather(c, qp, w, addr, sge, e->req_off, c->txbuf + off, n) !=
            SGE_OK) {
            qhca_wqe_done(qp, e->req_idx, QHCA_CQE_LOC_PROT_ERR);
            return SEND_FAILED;
        }
        qhca_frame_send(c, &h, n);
        e->req_off += n;
        (*budget)--;
    } while (e->req_off < len);
    qhca_wqe_done(qp, e->req_idx, QHCA_CQE_SUCCESS);
    return SEND_DONE;
}

/* Start WQE @w at req_idx: its state, and for RC and UC its PSNs */
static void req_start(QhcaQp *qp, QhcaWqeState *st,
                      const struct qhca_send_wqe *w, uint64_t len,
                      uint64_t fingerprint)
{
    QhcaQpEngine *e = qp->eng;

    memset(st, 0, sizeof(*st));
    st->state = WQE_STARTED;
    st->opcode = w->opcode;
    st->signaled = w->flags & QHCA_WQE_SIGNALED;
    st->byte_len = len;
    st->fingerprint = fingerprint;
    if (qp_is_conn(qp) && !is_local_op(w->opcode)) {
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

/*
 * The next packet of the WQE at req_idx (its first for a WQE not started)
 * is past the QP's or the device's window: known without reading the WQE
 * again, which a run over many QPs that wait would otherwise do for each.
 * A READ that has begun checks its next piece as rc_send_read() does (the
 * QP that gets each of its answers is visited for it); an atomic that has
 * begun is read again.
 */
static bool req_window_shut(QhcaCore *c, QhcaQp *qp, const QhcaWqeState *st)
{
    QhcaQpEngine *e = qp->eng;
    uint32_t psn = e->next_psn;

    if (st->state == WQE_STARTED) {
        if (st->opcode == QHCA_WQE_RDMA_READ && e->req_off < st->byte_len) {
            ReadPiece p = read_next_piece(qp, st, st->byte_len);

            return read_piece_waits(c, qp, st, &p);
        }
        psn = psn_add(st->first_psn, e->req_off / qp_mtu(qp));
        if (is_rd_atomic(st->opcode)) {
            return false;
        }
    }
    return req_must_wait(c, qp, psn, psn, qp_send_window(qp));
}

/*
 * Fetch and check the WQE at req_idx the first time: 0 with the WQE started,
 * -1 if it must wait (fence, READ/atomic limit), or a CQE status.
 */
static int req_fetch_new(QhcaCore *c, QhcaQp *qp, QhcaWqeState *st,
                         struct qhca_send_wqe *w, uint64_t *addr,
                         struct qhca_sge *sge, uint64_t *len)
{
    QhcaQpEngine *e = qp->eng;
    uint64_t fp;
    int status;

    if (!qhca_wqe_read(c, qp, e->req_idx, w, addr)) {
        return QHCA_CQE_LOC_QP_OP_ERR;
    }
    trace_qhca_wqe_fetch(qp->qpn, e->req_idx, w->opcode, w->flags,
                         w->num_sge, e->req_off);
    st->opcode = w->opcode;
    st->signaled = true;        /* an error always completes */
    status = qhca_wqe_check(c, qp, e->req_idx, w, *addr, sge, len);
    if (status) {
        return status;
    }
    fp = wqe_fingerprint(c, w, *addr, sge);
    if (!fp) {
        return QHCA_CQE_LOC_QP_OP_ERR;
    }
    if (((w->flags & QHCA_WQE_FENCE) && e->rd_outstanding) ||
        (is_rd_atomic(w->opcode) && qp_is_rc(qp) &&
         rd_requests_out(qp) >= MAX(1, qp->attr.max_rd_atomic))) {
        st->opcode = 0;
        st->signaled = false;
        return -1;
    }
    req_start(qp, st, w, *len, fp);
    return 0;
}

/*
 * The requester: start and send WQEs from req_idx on, within the window
 * and @budget packets.  *more is set only when the budget ran out with
 * work left: a full window waits for an ACK or the timer, never spins.
 */
void qhca_req_run(QhcaCore *c, QhcaQp *qp, bool *more, unsigned budget)
{
    QhcaQpEngine *e = qp->eng;
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
        if (qp_is_rc(qp) && req_window_shut(c, qp, st)) {
            return;             /* an ACK opens it; nothing to fetch now */
        }
        if (st->state == WQE_FREE) {
            status = req_fetch_new(c, qp, st, &w, &addr, sge, &len);
            if (status < 0) {
                return;
            }
            if (status) {
                qhca_wqe_done(qp, e->req_idx, status);
                e->req_idx++;
                return;
            }
            if (is_local_op(w.opcode)) {
                qhca_wqe_done(qp, e->req_idx, local_op(c, qp, &w));
                e->req_idx++;
                budget--;
                continue;
            }
            if (!qp_is_conn(qp)) {
                qhca_wqe_done(qp, e->req_idx,
                              ud_send(c, qp, &w, addr, sge, len));
                e->req_idx++;
                budget--;
                continue;
            }
        } else {
            status = qhca_wqe_reread(c, qp, st, e->req_idx, &w, &addr, sge,
                                     &len);
            if (status) {
                qhca_wqe_done(qp, e->req_idx, status);
                e->req_idx++;
                e->req_off = 0;
                return;
            }
            trace_qhca_wqe_fetch(qp->qpn, e->req_idx, w.opcode, w.flags,
                                 w.num_sge, e->req_off);
        }
        status = qp_is_rc(qp) ?
                 rc_send_wqe(c, qp, &w, addr, sge, len, &budget) :
                 uc_send_wqe(c, qp, &w, addr, sge, len, &budget);
        switch (status) {
        case SEND_DONE:
            st->sent_once = true;
            e->req_idx++;
            e->req_off = 0;
            if (qp_is_rc(qp) && e->deadline < 0) {
                qhca_qp_arm_timer(c, qp);
            }
            continue;
        case SEND_FAILED:
            e->req_idx++;
            e->req_off = 0;
            return;
        case SEND_BUDGET:
            *more = true;
            return;
        default:                /* SEND_WAIT */
            return;
        }
    }
    if (e->req_idx != e->sq_pi && budget == 0) {
        *more = true;
    }
}

/* Go back to sending from @psn (timeout, sequence NAK, RNR NAK) */
void qhca_req_rewind(QhcaCore *c, QhcaQp *qp, uint32_t psn)
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
            /* a round trip that includes a retransmission measures nothing */
            e->rtt_pending = false;
            qp_schedule(c, qp);
            return;
        }
    }
}

/* The peer has everything up to and including @psn */
