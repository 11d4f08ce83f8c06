/*
 * qhca QP engine: the RoCEv2 transport, common part.
 *
 *   qhca-req.c   requester: reads send WQEs, segments them into packets at
 *                the path MTU, keeps a window of unacknowledged PSNs;
 *   qhca-comp.c  completer: ACKs, NAKs, READ responses and atomic ACKs,
 *                send CQEs in order, retransmission on timeout, NAK, RNR;
 *   qhca-resp.c  responder: checks each request (PSN, opcode sequence, rkey
 *                and bounds, resources), executes SENDs into receive WQEs,
 *                RDMA WRITEs, READs and atomics, ACKs and NAKs, replays
 *                READ and atomic responses for duplicates;
 *   qhca-qp.c    (this file) what they share: SGEs, addressing and frames,
 *                timers, the receive dispatch, QP life cycle, doorbells,
 *                flushing, and the run loop.
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
#include "qhca-qp-int.h"
#include "trace.h"

/*
 * Errors and the ERR state
 */

void qhca_qp_to_err(QhcaCore *c, QhcaQp *qp)
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

/* Copy between @buf and byte @off..@off+@len of the SGE list */
int qhca_sge_copy(QhcaCore *c, uint32_t pdn, const struct qhca_sge *sge,
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

/*
 * Frames
 */

/*
 * Fill the Ethernet/IP/UDP fields of @h for a packet of @qp: IPv4 if the
 * source GID and @dgid are IPv4-mapped, IPv6 if both are IPv6 unicast
 * addresses; false if the source GID is not valid or the two differ.  A
 * UD QP may send to a multicast group: to the group's multicast MAC,
 * whatever @dmac says.
 */
bool qhca_qp_addr(QhcaCore *c, const QhcaQp *qp, uint8_t sgid_index,
                  const uint8_t *dgid, const uint8_t *dmac,
                  uint8_t hop_limit, uint8_t tclass, uint32_t flow_label,
                  QhcaRoceHdr *h)
{
    bool ud = qp->type == QHCA_QPT_UD;

    if (sgid_index >= QHCA_GID_TABLE_LEN || !c->gid[sgid_index].valid ||
        !(ud ? qhca_roce_set_gids_ud(h, c->gid[sgid_index].gid, dgid) :
          qhca_roce_set_gids(h, c->gid[sgid_index].gid, dgid))) {
        return false;
    }
    memcpy(h->src_mac, c->mac, 6);
    if (ud && qhca_roce_gid_is_mcast(dgid)) {
        qhca_roce_mcast_mac(dgid, h->dst_mac);
    } else {
        memcpy(h->dst_mac, dmac, 6);
    }
    h->ttl = hop_limit ? hop_limit : 64;
    h->tos = tclass;
    h->flow_label = flow_label & QHCA_ROCE_FLOW_LABEL_MASK;
    if (!h->ipv6) {
        h->ip_id = c->ip_id++;
    }
    h->src_port = qhca_roce_udp_sport(qhca_roce_qpn_hash(qp->qpn));
    h->pkey = QHCA_ROCE_DEFAULT_PKEY;
    return true;
}

bool qhca_rc_addr(QhcaCore *c, const QhcaQp *qp, QhcaRoceHdr *h)
{
    h->dest_qp = le32_to_cpu(qp->attr.dest_qpn);
    return qhca_qp_addr(c, qp, qp->attr.sgid_index, qp->attr.dgid,
                        qp->attr.dmac, qp->attr.hop_limit,
                        qp->attr.traffic_class,
                        le32_to_cpu(qp->attr.flow_label), h);
}

/*
 * Build a frame around @payload (gathered by the caller into the frame) and
 * send it.  @fill, if set, writes the payload in place.
 */
int qhca_frame_start(QhcaCore *c, const QhcaRoceHdr *h, size_t len)
{
    size_t flen = qhca_roce_frame_len_hdr(h, len);

    if (!flen || flen > sizeof(c->txbuf)) {
        return -1;
    }
    return qhca_roce_build_headers(c->txbuf, sizeof(c->txbuf), h, len);
}

void qhca_frame_send(QhcaCore *c, const QhcaRoceHdr *h, size_t len)
{
    size_t flen = qhca_roce_frame_len_hdr(h, len);

    qhca_roce_finish(c->txbuf, flen);
    c->stat_tx_frames++;
    c->stat_tx_bytes += flen;
    c->run_tx_frames++;
    c->run_tx_bytes += flen;
    trace_qhca_tx_pkt(h->dest_qp, h->opcode, h->psn, len);
    qhca_op_tx(c, c->txbuf, flen);
}

/*
 * Frames this run of the bottom half may still send (all QPs together):
 * one event, whatever the guest or the wire asked for, sends at most
 * QHCA_RUN_TX_FRAMES frames or QHCA_RUN_TX_BYTES bytes; the rest waits for
 * the next run.  A halted core (a reset on its way) sends nothing more: the
 * loops that send stop at their next check.
 */
unsigned qhca_tx_room(QhcaCore *c)
{
    if (c->halted || c->run_tx_frames >= QHCA_RUN_TX_FRAMES ||
        c->run_tx_bytes >= QHCA_RUN_TX_BYTES) {
        return 0;
    }
    return QHCA_RUN_TX_FRAMES - c->run_tx_frames;
}

void qhca_send_simple(QhcaCore *c, const QhcaRoceHdr *h,
                      const void *payload, size_t len)
{
    int off = qhca_frame_start(c, h, len);

    if (off < 0) {
        return;
    }
    if (len) {
        memcpy(c->txbuf + off, payload, len);
    }
    qhca_frame_send(c, h, len);
}

/*
 * Completions
 */

uint8_t qhca_cqe_opcode(uint8_t wqe_opcode)
{
    const struct qhca_wqe_op_info *info = qhca_wqe_op_info(wqe_opcode);

    return info ? info->cqe_opcode : QHCA_CQE_OP_SEND;
}

/*
 * Timer
 */

uint64_t qhca_qp_timeout_ns(const QhcaQp *qp)
{
    uint8_t t = qp->attr.timeout;
    uint64_t ns;

    if (t == 0) {
        return 0;                       /* infinite */
    }
    ns = 4096ULL << MIN(t, 31);
    return MAX(ns, QHCA_MIN_TIMEOUT_NS);
}

static void core_timer_update(QhcaCore *c)
{
    int64_t min = -1;
    uint32_t i;

    for (i = 0; i < c->nlive; i++) {
        QhcaQp *qp = qhca_core_qp(c, c->live_qpn[i]);

        if (qp && qp->eng && qp->eng->deadline >= 0 &&
            (min < 0 || qp->eng->deadline < min)) {
            min = qp->eng->deadline;
        }
    }
    if (min != c->timer_deadline && !c->halted) {
        c->timer_deadline = min;
        c->ops->timer_mod(c->opaque, min);
    }
}

/*
 * @qp's deadline may have changed: the device's timer goes off no later
 * than it.  A deadline that moved later, or went away, leaves the timer
 * early; when it goes off, qhca_qp_engine_timer() finds the QPs due and
 * sets it again from all of them, so the paths taken per packet need not
 * look at every QP.
 */
static void core_timer_lower(QhcaCore *c, QhcaQp *qp)
{
    int64_t t = qp->eng ? qp->eng->deadline : -1;

    if (t >= 0 && (c->timer_deadline < 0 || t < c->timer_deadline) &&
        !c->halted) {
        c->timer_deadline = t;
        c->ops->timer_mod(c->opaque, t);
    }
}

/*
 * The device's state was loaded (qhca_core_load()): the timer from the
 * QPs' deadlines, and a run for what they have to do
 */
void qhca_qp_engine_loaded(QhcaCore *c)
{
    c->timer_deadline = -2;     /* differs from every deadline: re-armed */
    core_timer_update(c);
    qhca_qp_inflight_recount(c);
    c->scan_all = true;
    c->ops->schedule(c->opaque);
}

/*
 * When to send again what is not acknowledged: after the round trip the QP
 * measured (srtt + 4 * rttvar) if it measured one, never before
 * QHCA_RTO_MIN_NS and never after the QP's own timeout
 */
uint64_t qhca_qp_rto_ns(const QhcaQp *qp)
{
    const QhcaQpEngine *e = qp->eng;
    uint64_t t = qhca_qp_timeout_ns(qp);
    uint64_t rto = e->srtt_ns ? e->srtt_ns + 4 * e->rttvar_ns :
                   QHCA_RTO_INIT_NS;

    rto = MAX(rto, QHCA_RTO_MIN_NS);
    return t ? MIN(rto, t) : rto;
}

/*
 * Start a timeout period (something was sent with nothing outstanding, or
 * the peer acknowledged more): the timer goes off after the RTO for an
 * early retransmission, and at the end of the period for a timeout that
 * counts against retry_cnt (qhca_comp_timer())
 */
void qhca_qp_arm_timer(QhcaCore *c, QhcaQp *qp)
{
    QhcaQpEngine *e = qp->eng;
    uint64_t rto, timeout = qhca_qp_timeout_ns(qp);

    e->period_ns = c->ops->now_ns(c->opaque);
    /*
     * Until a round trip has been measured the RTO is a guess (10 ms), and
     * a path longer than that sends its probe before any ACK can come: the
     * probe's go-back cancels the round trip being measured, and without
     * a measurement the next period guesses 10 ms again, every round trip
     * (a 20 ms path resent every window).  So, as TCP keeps its backed-off
     * RTO until a measurement (RFC 6298, 5.7), the backoff stays until
     * the first round trip is measured.
     */
    if (e->srtt_ns) {
        e->probe_shift = 0;
    }
    rto = qhca_qp_rto_ns(qp) << e->probe_shift;
    e->deadline = e->period_ns + (timeout ? MIN(rto, timeout) : rto);
}

/*
 * The device's data in flight: what every QP that sends has sent and not
 * had acknowledged.  Each QP's part (QhcaQpEngine.inflight_counted) is
 * brought up to date after the engine has handled the QP (a run's visit, a
 * doorbell, a frame, its timer, a state change) and is taken out when it is
 * destroyed; the requester adds what it sends at once (qhca-req.c,
 * req_sent()).  The sum used to be counted afresh over all QPs before each
 * run and doorbell: with many QPs that count cost more than the packets.
 */
static uint64_t qp_inflight_part(const QhcaQp *qp)
{
    if (!qp->eng || !qp_is_rc(qp) ||
        (qp->attr.qp_state != QHCA_QPS_RTS &&
         qp->attr.qp_state != QHCA_QPS_SQD)) {
        return 0;
    }
    return (uint64_t)qp_inflight(qp) * qp_mtu(qp);
}

void qhca_qp_inflight_sync(QhcaCore *c, QhcaQp *qp)
{
    QhcaQpEngine *e = qp->eng;
    uint64_t part;

    if (!e) {
        return;
    }
    part = qp_inflight_part(qp);
    c->inflight_bytes += part - e->inflight_counted;
    e->inflight_counted = part;
}

void qhca_qp_inflight_recount(QhcaCore *c)
{
    uint64_t sum = 0;
    uint32_t i;

    for (i = 0; i < c->nlive; i++) {
        QhcaQp *qp = qhca_core_qp(c, c->live_qpn[i]);

        if (qp && qp->eng) {
            qp->eng->inflight_counted = qp_inflight_part(qp);
            sum += qp->eng->inflight_counted;
        }
    }
    c->inflight_bytes = sum;
}

bool qhca_qp_inflight_check(const QhcaCore *c)
{
    uint64_t sum = 0;
    uint32_t i;

    for (i = 0; i < c->nlive; i++) {
        const QhcaQp *qp = qhca_core_qp((QhcaCore *)c, c->live_qpn[i]);

        if (qp && qp->eng) {
            sum += qp->eng->inflight_counted;
        }
    }
    return sum == c->inflight_bytes;
}

/*
 * The lists of QPs with work (see QhcaCore.ready_qpn): a QP is on each at
 * most once, so neither can hold more than QHCA_MAX_QP
 */
void qhca_qp_ready(QhcaCore *c, QhcaQp *qp)
{
    QhcaQpEngine *e = qp->eng;

    if (e && !e->ready) {
        e->ready = true;
        c->ready_qpn[c->nready++] = qp->qpn;
    }
    c->ops->schedule(c->opaque);
}

/*
 * @qp waits for @need bytes of room in the device's window (its packet's
 * new data): the runs visit it again only when that much is free, so that
 * a QP waiting for a READ piece's answers is not visited for every packet's
 * worth of room (a visit reads and checks its WQE again).  The line is a
 * ring, oldest first.
 */
void qhca_qp_dwait(QhcaCore *c, QhcaQp *qp, uint64_t need)
{
    QhcaQpEngine *e = qp->eng;

    e->dwait_need = need;
    if (!e->dwait) {
        e->dwait = true;
        c->dwait_qpn[(c->dwait_head + c->ndwait++) % QHCA_MAX_QP] = qp->qpn;
    }
}

/*
 * Take @qpn out of a list of QPNs (QHCA_MAX_QP entries, a ring of *n from
 * @head on), keeping the others' order
 */
static void qp_list_remove(uint16_t *list, uint32_t head, uint32_t *n,
                           uint32_t qpn)
{
    uint32_t i, k = 0;

    for (i = 0; i < *n; i++) {
        uint16_t q = list[(head + i) % QHCA_MAX_QP];

        if (q != qpn) {
            list[(head + k++) % QHCA_MAX_QP] = q;
        }
    }
    *n = k;
}

/*
 * An RC or UC packet belongs to @qp only if it comes from the QP's path:
 * from the destination GID and to the source GID the QP was connected
 * with (as Soft-RoCE checks), in the same IP version (the parser keeps
 * IPv4-mapped addresses out of IPv6 frames).  The UDP source port is not
 * compared: RoCEv2 uses it for entropy.
 */
bool qhca_qp_from_path(QhcaCore *c, const QhcaQp *qp, const QhcaRoceHdr *h)
{
    uint8_t sgid = qp->attr.sgid_index;
    uint8_t src[16], dst[16];

    if (!(qp->attr_set & QHCA_QP_ATTR_AV) || sgid >= QHCA_GID_TABLE_LEN ||
        !c->gid[sgid].valid) {
        return false;
    }
    qhca_roce_src_gid(h, src);
    qhca_roce_dst_gid(h, dst);
    return !memcmp(src, qp->attr.dgid, 16) &&
           !memcmp(dst, c->gid[sgid].gid, 16);
}

/* A frame to @gid is for this device: one of its valid GIDs is @gid */
bool qhca_qp_own_gid(QhcaCore *c, const uint8_t *gid)
{
    unsigned i;

    for (i = 0; i < QHCA_GID_TABLE_LEN; i++) {
        if (c->gid[i].valid && !memcmp(c->gid[i].gid, gid, 16)) {
            return true;
        }
    }
    return false;
}

static const char *const qhca_rx_drop_names[QHCA_RX_DROP__MAX] = {
    [QHCA_RX_DROP_NOT_READY] = "device not ready",
    [QHCA_RX_DROP_TOO_LONG] = "frame too long",
    [QHCA_RX_DROP_DROP_PPM] = "dropped on purpose (drop-ppm)",
    [QHCA_RX_DROP_OWN_MAC] = "from our own MAC (a reflection)",
    [QHCA_RX_DROP_NOT_OUR_MAC] = "not for our MAC",
    [QHCA_RX_DROP_RXQ_FULL] = "receive queue full (shared port)",
    [QHCA_RX_DROP_MCAST_MAC_UNICAST] = "multicast MAC, unicast address",
    [QHCA_RX_DROP_NOT_OUR_GID] = "not for one of our GIDs",
    [QHCA_RX_DROP_NO_QP] = "no such QP",
    [QHCA_RX_DROP_UD_TO_CONN] = "UD packet for an RC or UC QP",
    [QHCA_RX_DROP_CONN_TO_UD] = "RC or UC packet for a UD QP",
    [QHCA_RX_DROP_UC_RC_MISMATCH] = "UC packet for an RC QP or the reverse",
    [QHCA_RX_DROP_MCAST_NOT_UD] = "multicast but not UD",
    [QHCA_RX_DROP_MCAST_QPN] = "multicast to a QPN other than 0xFFFFFF",
    [QHCA_RX_DROP_MCAST_MAC] = "multicast MAC not the group's",
    [QHCA_RX_DROP_MCAST_SOURCE] = "source address not unicast",
    [QHCA_RX_DROP_MCAST_NO_GROUP] = "no QP attached to the group",
    [QHCA_RX_DROP_QP_STATE] = "QP cannot receive",
    [QHCA_RX_DROP_QKEY] = "Q_Key mismatch",
    [QHCA_RX_DROP_UD_NO_RECV_WQE] = "no receive WQE (UD)",
    [QHCA_RX_DROP_PSN_AHEAD] = "PSN ahead: sequence NAK",
    [QHCA_RX_DROP_UC_REST] = "UC: the rest of a dropped message",
    [QHCA_RX_DROP_DUP_READ_UNTRACKED] = "duplicate READ no resource tracked",
    [QHCA_RX_DROP_DUP_ATOMIC_UNTRACKED] =
        "duplicate atomic no resource tracked",
    [QHCA_RX_DROP_FLUSH_FETH] = "FLUSH: bad FETH",
    [QHCA_RX_DROP_RESP_PSN_WINDOW] = "response PSN out of window",
    [QHCA_RX_DROP_NAK_ACKED] = "NAK for a PSN already acknowledged",
    [QHCA_RX_DROP_SEQ_NAK_DONE] = "sequence NAK acted on",
    [QHCA_RX_DROP_NOT_EMPTY_READ_RESP] =
        "not the answer to the FLUSH/ATOMIC WRITE",
    [QHCA_RX_DROP_UC_REMOTE_ACCESS] = "remote access error",
    [QHCA_RX_DROP_UC_INVALID_REQ] = "invalid request",
    [QHCA_RX_DROP_UC_NO_RECV_WQE] = "no receive WQE",
    [QHCA_RX_DROP_UC_PSN] = "PSN not the expected one",
};

const char *qhca_rx_drop_name(QhcaRxDrop why)
{
    if ((unsigned)why >= QHCA_RX_DROP__MAX || !qhca_rx_drop_names[why]) {
        return "unknown";
    }
    return qhca_rx_drop_names[why];
}

/* The last 32 bits of an address, for the traces */
static uint32_t gid_tail(const uint8_t *gid)
{
    return ldl_be_p(gid + 12);
}

/*
 * A UD frame to multicast group @dgid: to every QP attached to the group
 * (at most QHCA_MAX_MCAST_QP_ATTACH), each checking its state and Q_Key as
 * for a unicast frame.  The frame must be addressed as a multicast frame
 * throughout: the group's MAC, DestQP 0xFFFFFF, a UD opcode, a unicast
 * source.
 */
static void mcast_receive(QhcaCore *c, const QhcaRocePkt *pkt,
                          const uint8_t *frame, const uint8_t *dgid)
{
    uint32_t qpn[QHCA_MAX_MCAST_QP_ATTACH];
    uint8_t mac[6], sgid[16];
    const QhcaMcg *g = qhca_core_mcg(c, dgid);
    QhcaRxDrop why;
    uint32_t i, n;

    qhca_roce_src_gid(&pkt->hdr, sgid);
    qhca_roce_mcast_mac(dgid, mac);
    if (!(pkt->op->flags & QHCA_ROCE_OPF_UD)) {
        why = QHCA_RX_DROP_MCAST_NOT_UD;
    } else if (pkt->hdr.dest_qp != QHCA_MCAST_QPN) {
        why = QHCA_RX_DROP_MCAST_QPN;
    } else if (memcmp(frame, mac, 6)) {
        why = QHCA_RX_DROP_MCAST_MAC;
    } else if (!qhca_roce_gid_is_unicast(sgid)) {
        why = QHCA_RX_DROP_MCAST_SOURCE;
    } else if (!g) {
        why = QHCA_RX_DROP_MCAST_NO_GROUP;
    } else {
        /* the receivers cannot change the group, but copy it anyway */
        n = g->nqp;
        memcpy(qpn, g->qpn, n * sizeof(qpn[0]));
        trace_qhca_mcast_rx(gid_tail(dgid), n);
        for (i = 0; i < n; i++) {
            QhcaQp *qp = qhca_core_qp(c, qpn[i]);

            if (qp && qp->type == QHCA_QPT_UD) {
                qhca_ud_recv(c, qp, pkt, frame);
            }
        }
        return;
    }
    c->stat_rx_dropped++;
    QHCA_TRACE_RX_DROP_PKT(pkt, pkt->hdr.dest_qp, why);
}

void qhca_qp_engine_receive(QhcaCore *c, const uint8_t *frame, size_t len)
{
    QhcaRocePkt pkt;
    QhcaRoceErr err;
    uint8_t dgid[16];
    QhcaQp *qp;

    /* our MAC, or the multicast MAC of a group a QP is attached to */
    if (len < QHCA_ROCE_ETH_HLEN ||
        (memcmp(frame, c->mac, 6) &&
         (!(frame[0] & 1) || !qhca_core_mcast_mac(c, frame)))) {
        c->stat_rx_dropped++;
        QHCA_TRACE_RX_DROP(len, QHCA_RX_DROP_NOT_OUR_MAC);
        return;
    }
    err = qhca_roce_parse(frame, len, &pkt);
    if (err != QHCA_ROCE_OK) {
        if (err == QHCA_ROCE_ERR_ICRC) {
            c->stat_rx_bad_icrc++;
        } else {
            c->stat_rx_dropped++;
        }
        trace_qhca_rx_drop_malformed(len, qhca_roce_strerror(err), err);
        return;
    }
    trace_qhca_rx_pkt(pkt.hdr.dest_qp, pkt.hdr.opcode, pkt.hdr.psn,
                      pkt.payload_len);
    qhca_roce_dst_gid(&pkt.hdr, dgid);
    if (qhca_roce_gid_is_mcast(dgid) || (frame[0] & 1)) {
        if (!qhca_roce_gid_is_mcast(dgid)) {
            c->stat_rx_dropped++;
            QHCA_TRACE_RX_DROP_PKT(&pkt, pkt.hdr.dest_qp,
                                   QHCA_RX_DROP_MCAST_MAC_UNICAST);
            return;
        }
        mcast_receive(c, &pkt, frame, dgid);
        return;
    }
    if (!qhca_qp_own_gid(c, dgid)) {
        c->stat_rx_dropped++;
        QHCA_TRACE_RX_DROP_PKT(&pkt, pkt.hdr.dest_qp, QHCA_RX_DROP_NOT_OUR_GID);
        return;
    }
    qp = qhca_core_qp(c, pkt.hdr.dest_qp);
    if (!qp) {
        c->stat_rx_dropped++;
        QHCA_TRACE_RX_DROP_PKT(&pkt, pkt.hdr.dest_qp, QHCA_RX_DROP_NO_QP);
        return;
    }
    if (pkt.op->flags & QHCA_ROCE_OPF_UD) {
        if (qp_is_conn(qp)) {
            c->stat_rx_dropped++;
            QHCA_TRACE_RX_DROP_PKT(&pkt, qp->qpn, QHCA_RX_DROP_UD_TO_CONN);
            return;
        }
        qhca_ud_recv(c, qp, &pkt, frame);
        return;
    }
    if (!qp_is_conn(qp)) {
        c->stat_rx_dropped++;
        QHCA_TRACE_RX_DROP_PKT(&pkt, qp->qpn, QHCA_RX_DROP_CONN_TO_UD);
        return;
    }
    /* a CNP is for RC and UC QPs alike */
    if (!(pkt.op->flags & QHCA_ROCE_OPF_CNP) &&
        !(pkt.op->flags & QHCA_ROCE_OPF_UC) != qp_is_rc(qp)) {
        c->stat_rx_dropped++;
        QHCA_TRACE_RX_DROP_PKT(&pkt, qp->qpn, QHCA_RX_DROP_UC_RC_MISMATCH);
        return;
    }
    if (!qhca_qp_from_path(c, qp, &pkt.hdr)) {
        uint8_t sgid[16];

        qhca_roce_src_gid(&pkt.hdr, sgid);
        c->stat_rx_dropped++;
        trace_qhca_err_rx_path(qp->qpn, gid_tail(sgid), gid_tail(dgid));
        return;
    }
    if (pkt.op->flags & QHCA_ROCE_OPF_CNP) {
        qhca_cc_cnp(c, qp, &pkt);
        return;
    }
    if ((pkt.hdr.tos & QHCA_ROCE_ECN_MASK) == QHCA_ROCE_ECN_CE) {
        qhca_cc_marked(c, qp, &pkt);
    }
    if (pkt.op->flags & QHCA_ROCE_OPF_RESPONSE) {
        qhca_comp_recv(c, qp, &pkt, frame);
    } else {
        qhca_resp_recv(c, qp, &pkt, frame);
    }
    if (qp->eng) {
        qhca_qp_inflight_sync(c, qp);
        core_timer_lower(c, qp);
    }
}

/*
 * QP life cycle, doorbells, the run loop and the timer
 */

/* Host memory of a QP's engine state, in the budget's 8-byte units */
uint32_t qhca_qp_engine_units(uint32_t sq_log_depth)
{
    return DIV_ROUND_UP(sizeof(QhcaQpEngine) +
                        ((uint64_t)sizeof(QhcaWqeState) << sq_log_depth), 8);
}

/* The caller has charged qhca_qp_engine_units() to the budget */
void qhca_qp_engine_create(QhcaCore *c, QhcaQp *qp)
{
    qp->eng = g_new0(QhcaQpEngine, 1);
    qp->eng->wqe = g_new0(QhcaWqeState, 1u << qp->sq.log_depth);
    qp->eng->deadline = -1;
    qp->eng->units = qhca_qp_engine_units(qp->sq.log_depth);
    qp->eng->window_bytes = c->window_bytes;
    /* the run loop and the timer visit only the QPs that exist */
    qp->eng->live_idx = c->nlive;
    c->live_qpn[c->nlive++] = qp->qpn;
}

void qhca_qp_engine_destroy(QhcaCore *c, QhcaQp *qp)
{
    uint32_t idx = qp->eng->live_idx;
    QhcaQp *last = qhca_core_qp(c, c->live_qpn[c->nlive - 1]);

    /* the last live QP takes this one's place */
    c->live_qpn[idx] = c->live_qpn[--c->nlive];
    if (last && last != qp) {
        last->eng->live_idx = idx;
    }
    c->inflight_bytes -= qp->eng->inflight_counted;
    if (qp->eng->ready) {
        qp_list_remove(c->ready_qpn, 0, &c->nready, qp->qpn);
    }
    if (qp->eng->dwait) {
        qp_list_remove(c->dwait_qpn, c->dwait_head, &c->ndwait, qp->qpn);
    }
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
        uint32_t units = e->units, live_idx = e->live_idx;
        bool ready = e->ready, dwait = e->dwait;
        uint64_t dwait_need = e->dwait_need;
        uint64_t counted = e->inflight_counted;

        memset(wqe, 0, sizeof(*wqe) << qp->sq.log_depth);
        memset(e, 0, sizeof(*e));
        e->wqe = wqe;
        e->units = units;
        e->live_idx = live_idx;
        /* what it learnt of its path goes with the connection */
        e->window_bytes = c->window_bytes;
        e->ready = ready;
        e->dwait = dwait;
        e->dwait_need = dwait_need;
        e->inflight_counted = counted;
        e->deadline = -1;
        qp->sq.pi = qp->sq.ci = 0;
        qp->rq.pi = qp->rq.ci = 0;
    }
    if (mask & QHCA_QP_ATTR_SQ_PSN) {
        e->next_psn = le32_to_cpu(qp->attr.sq_psn);
        e->acked = psn_add(e->next_psn, -1);
        e->tx_end = e->next_psn;
        e->rtt_pending = false;
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
        qhca_resp_stop(qp);
        e->deadline = -1;
        if (qp->srqn != QHCA_NO_SRQ) {
            qhca_post_async(c, QHCA_EQE_LAST_WQE_REACHED, qp->qpn);
        }
    }
    /* the new state's part in the device's window is taken at the visit */
    qp_schedule(c, qp);
}

bool qhca_qp_engine_sq_draining(QhcaCore *c, QhcaQp *qp)
{
    return qp->attr.qp_state == QHCA_QPS_SQD && qp->sq.ci != qp->eng->req_idx;
}

/* QUERY_QP_STATE: what the engine holds for @qp, little-endian */
void qhca_qp_engine_state(QhcaCore *c, QhcaQp *qp,
                          struct qhca_qp_state_info *s)
{
    const QhcaQpEngine *e = qp->eng;
    const QhcaRing *rq = &qp->rq;

    memset(s, 0, sizeof(*s));
    s->qp_state = qp->attr.qp_state;
    s->type = qp->type;
    if (!e) {
        return;
    }
    if (qp->srqn != QHCA_NO_SRQ) {
        rq = NULL;
    }
    s->retry_left = e->retry_left;
    s->rnr_left = qp->attr.rnr_retry == 7 ? 7 : e->rnr_left;
    s->next_psn = cpu_to_le32(e->next_psn);
    s->acked_psn = cpu_to_le32(e->acked);
    s->epsn = cpu_to_le32(e->epsn);
    s->sq_pi = cpu_to_le16(e->sq_pi);
    s->sq_ci = cpu_to_le16(qp->sq.ci);
    s->rq_pi = cpu_to_le16(rq ? e->rq_pi : 0);
    s->rq_ci = cpu_to_le16(rq ? rq->ci : 0);
    if (qp_is_rc(qp)) {
        s->inflight_bytes = cpu_to_le32(MIN((uint64_t)qp_inflight(qp) *
                                            qp_mtu(qp), UINT32_MAX));
    }
    s->rd_outstanding = cpu_to_le32(e->rd_outstanding);
    s->srtt_us = cpu_to_le32(MIN(e->srtt_ns / 1000, UINT32_MAX));
    if (qp_is_rc(qp)) {
        s->window_bytes = cpu_to_le32(e->window_bytes);
    }
    s->min_rtt_us = cpu_to_le32(MIN(e->min_rtt_ns / 1000, UINT32_MAX));
    if (qp_is_rc(qp) && e->cc_cur) {
        s->cc_window_bytes = cpu_to_le32(MIN((uint64_t)e->cc_cur *
                                             qp_mtu(qp), UINT32_MAX));
    }
}

/*
 * An SQ doorbell starts sending at once, in the doorbell's own context (an
 * MMIO write: guarded against re-entrancy like the bottom half, and with
 * the engine between runs), up to QHCA_KICK_BUDGET packets; the bottom half
 * does the rest.  Waiting for the bottom half cost a wake-up of QEMU's
 * main-loop thread per message: 17 us typically, milliseconds when that
 * thread waited for a host core (docs/performance.md, time budget).
 */
static void qp_kick(QhcaCore *c, QhcaQp *qp)
{
    bool more = false;

    if (qp->attr.qp_state != QHCA_QPS_RTS || qp->eng->rnr_wait) {
        qp_schedule(c, qp);
        return;
    }
    qhca_req_run(c, qp, &more, QHCA_KICK_BUDGET);
    qhca_sq_complete(c, qp);
    qhca_qp_inflight_sync(c, qp);
    core_timer_lower(c, qp);
    /* what waits for an ACK, the window or a timer is woken by those */
    if (more) {
        qp_schedule(c, qp);
    }
}

void qhca_qp_engine_doorbell(QhcaCore *c, QhcaQp *qp, bool sq, uint16_t pi)
{
    QhcaRing *r = sq ? &qp->sq : &qp->rq;
    uint16_t old = sq ? qp->eng->sq_pi : qp->eng->rq_pi;

    if (!sq && qp->srqn != QHCA_NO_SRQ) {
        QHCA_GUEST_UB(c, rq_doorbell_qp_srq, qp->qpn, qp->srqn);
        return;
    }
    if ((uint16_t)(pi - r->ci) > (1u << r->log_depth)) {
        QHCA_GUEST_UB(c, qp_doorbell_more_wqes_entries, qp->qpn, sq, pi,
                      r->ci, 1u << r->log_depth);
        return;
    }
    /* posted WQEs cannot be taken back: the index only moves forward */
    if ((uint16_t)(pi - r->ci) < (uint16_t)(old - r->ci)) {
        QHCA_GUEST_UB(c, qp_doorbell_producer_index_moved, qp->qpn, sq, pi,
                      old, r->ci);
        return;
    }
    if (sq) {
        qp->eng->sq_pi = pi;
        qp_kick(c, qp);
        return;
    }
    qp->eng->rq_pi = pi;
    qp_schedule(c, qp);
}

/* Complete every posted WQE of @r with WR_FLUSH_ERR */
/*
 * Complete up to *budget posted WQEs of @r with WR_FLUSH_ERR; true if some
 * remain for the next run (false also when the CQ is full: its consumer
 * index doorbell schedules a run)
 */
static bool flush_ring(QhcaCore *c, QhcaQp *qp, QhcaRing *r, uint16_t pi,
                       bool sq, unsigned *budget)
{
    while (r->ci != pi) {
        struct qhca_cqe cqe = { 0 };
        uint64_t addr, wr_id = 0;

        if (qhca_ring_entry_addr(r, r->ci, &addr)) {
            qhca_op_dma_read(c, addr + (sq ?
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
                qhca_op_dma_read(c, addr, &op, 1);
            }
            cqe.opcode = qhca_cqe_opcode(op);
        }
        cqe.qpn = cpu_to_le32(qp->qpn);
        cqe.wqe_index = cpu_to_le16(r->ci);
        if (!*budget) {
            return true;
        }
        if (!qhca_post_cqe(c, sq ? qp->send_cqn : qp->recv_cqn, &cqe)) {
            return false;
        }
        (*budget)--;
        r->ci++;
    }
    return false;
}

/* Flush the SQ (and the RQ if @rq), a bounded number of WQEs per run */
static bool qp_flush(QhcaCore *c, QhcaQp *qp, bool rq)
{
    QhcaQpEngine *e = qp->eng;
    unsigned budget = QHCA_TX_BUDGET;
    bool more;

    /* WQEs already finished complete with their own status first */
    qhca_sq_complete(c, qp);
    more = flush_ring(c, qp, &qp->sq, e->sq_pi, true, &budget);
    e->req_idx = qp->sq.ci;
    e->req_off = 0;
    if (!rq) {
        return more;
    }
    if (e->have_recv) {
        qhca_recv_complete(c, qp, QHCA_CQE_WR_FLUSH_ERR, QHCA_CQE_OP_RECV,
                           0, 0, 0, 0);
    }
    if (qp->srqn == QHCA_NO_SRQ) {
        more |= flush_ring(c, qp, &qp->rq, e->rq_pi, false, &budget);
    }
    return more;
}

/*
 * Visit one QP in a run: its flush, responder and requester work, bounded
 * per QP and, by qhca_tx_room(), for all QPs together; true if it has work
 * left that can progress now
 */
static bool qp_visit(QhcaCore *c, QhcaQp *qp)
{
    QhcaQpEngine *e = qp->eng;
    bool more = false;
    unsigned budget;

    switch (qp->attr.qp_state) {
    case QHCA_QPS_ERR:
        more = qp_flush(c, qp, true);
        break;
    case QHCA_QPS_SQE:
        more = qp_flush(c, qp, false);
        break;
    case QHCA_QPS_RTR:
        budget = MIN(QHCA_READ_BURST, qhca_tx_room(c));
        more = qhca_resp_drain(c, qp, &budget);
        break;
    case QHCA_QPS_RTS:
    case QHCA_QPS_SQD:
        budget = MIN(QHCA_READ_BURST, qhca_tx_room(c));
        more = qhca_resp_drain(c, qp, &budget);
        qhca_req_run(c, qp, &more, MIN(QHCA_TX_BUDGET, qhca_tx_room(c)));
        qhca_sq_complete(c, qp);
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
    qhca_qp_inflight_sync(c, qp);
    core_timer_lower(c, qp);
    return more;
}

/* Room in the device's window for what @qp waits for (qhca_qp_dwait()) */
static bool dev_window_room(const QhcaCore *c, const QhcaQp *qp)
{
    uint64_t need = MAX(qp->eng->dwait_need, (uint64_t)qp_mtu(qp));

    return !c->inflight_bytes ||
           c->inflight_bytes + need <= (uint64_t)qp_window(qp) * qp_mtu(qp);
}

/*
 * One run of the bottom half: the QPs with work (QhcaCore.ready_qpn, in
 * the order they got it), then, while the device's window has room, the
 * QPs that waited for it, oldest first, each at most once per run (one that
 * finds the window full again waits at the end of the line).  Every live
 * QP only after a change that is not one QP's (a load, an SRQ or CQ
 * doorbell).  A QP the budget (qhca_tx_room()) leaves with work, or not
 * visited because it ran out, goes to the end of the list for the next run.
 * Returns true only when work is left that can progress now; a QP that
 * waits for an ACK, the window or a timer is woken by those.
 */
bool qhca_qp_engine_run(QhcaCore *c)
{
    bool more = false;
    uint32_t i, n, again = 0, waiters;

    if (!c->nlive) {
        c->nready = c->ndwait = c->dwait_head = 0;
        c->scan_all = false;
        core_timer_update(c);
        return false;
    }
    if (c->scan_all) {
        c->scan_all = false;
        for (i = 0; i < c->nlive; i++) {
            QhcaQp *qp = qhca_core_qp(c, c->live_qpn[i]);

            if (qp && qp->eng && !qp->eng->ready) {
                qp->eng->ready = true;
                c->ready_qpn[c->nready++] = qp->qpn;
            }
        }
    }
    n = c->nready;
    memcpy(c->run_qpn, c->ready_qpn, n * sizeof(c->run_qpn[0]));
    c->nready = 0;
    for (i = 0; i < n; i++) {
        QhcaQp *qp = qhca_core_qp(c, c->run_qpn[i]);

        if (qp && qp->eng) {
            qp->eng->ready = false;
        }
    }
    for (i = 0; i < n; i++) {
        QhcaQp *qp = qhca_core_qp(c, c->run_qpn[i]);

        if (!qp || !qp->eng) {
            continue;
        }
        if (!qhca_tx_room(c)) {
            break;
        }
        if (qp_visit(c, qp)) {
            c->run_qpn[again++] = qp->qpn;
        }
    }
    /* not visited (the budget ran out), then visited with work left */
    for (; i < n; i++) {
        QhcaQp *qp = qhca_core_qp(c, c->run_qpn[i]);

        if (qp && qp->eng && !qp->eng->ready) {
            qp->eng->ready = true;
            c->ready_qpn[c->nready++] = qp->qpn;
        }
    }
    for (i = 0; i < again; i++) {
        QhcaQp *qp = qhca_core_qp(c, c->run_qpn[i]);

        if (qp && qp->eng && !qp->eng->ready) {
            qp->eng->ready = true;
            c->ready_qpn[c->nready++] = qp->qpn;
        }
    }
    more = c->nready > 0;
    /* the device's window: the QPs that wait for it, while it has room */
    for (waiters = c->ndwait; waiters && c->ndwait && qhca_tx_room(c);
         waiters--) {
        QhcaQp *qp = qhca_core_qp(c, c->dwait_qpn[c->dwait_head]);

        if (qp && qp->eng && !dev_window_room(c, qp)) {
            break;
        }
        c->dwait_head = (c->dwait_head + 1) % QHCA_MAX_QP;
        c->ndwait--;
        if (!qp || !qp->eng) {
            continue;
        }
        qp->eng->dwait = false;
        if (qp->eng->ready) {
            continue;           /* has work already: the next run visits it */
        }
        if (qp_visit(c, qp)) {
            qhca_qp_ready(c, qp);
            more = true;
        }
    }
    if (c->ndwait && !qhca_tx_room(c)) {
        more = true;
    }
    return more;
}

/*
 * The device's timer went off: every QP whose deadline has passed (the
 * timer may also go off early, see core_timer_lower()), then the timer
 * again from all QPs' deadlines
 */
void qhca_qp_engine_timer(QhcaCore *c)
{
    int64_t now = c->ops->now_ns(c->opaque);
    uint32_t i;

    c->timer_deadline = -1;
    for (i = 0; i < c->nlive; i++) {
        QhcaQp *qp = qhca_core_qp(c, c->live_qpn[i]);

        if (!qp || qp->eng->deadline < 0 || qp->eng->deadline > now) {
            continue;
        }
        qhca_comp_timer(c, qp, now);
        qhca_qp_inflight_sync(c, qp);
        qp_schedule(c, qp);
    }
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
