/*
 * Operations of the qhca fuzz target (the input format: qhca-fuzz.c) on
 * addresses: GID table entries, address vectors (a QP's path and
 * CREATE_AH) and multicast groups: GID, AV and MCAST.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "harness.h"
#include "qhca-fuzz.h"

/* ADD_GID or DEL_GID of a GID kind % 16 picks: < 8 addr6_sel(), else raw */
void op_gid(Fz *f)
{
    FzGid a;
    struct qhca_cmd_gid g = { 0 };
    HxDev *d;
    int st;

    d = take_dev_up(f, &a, sizeof(a));
    if (!d) {
        return;
    }
    g.index = cpu_to_le32(a.index);
    if (a.kind % 16 < 8) {
        addr6_sel(a.kind, d, peer_of(d), le64_to_cpu(a.lo), g.gid);
    } else {
        stq_be_p(&g.gid[0], le64_to_cpu(a.hi));
        stq_be_p(&g.gid[8], le64_to_cpu(a.lo));
    }
    st = hx_cmd(d, (a.del & 1) ? QHCA_CMD_DEL_GID : QHCA_CMD_ADD_GID, &g,
                sizeof(g), NULL);
    status_check((a.del & 1) ? "DEL_GID" : "ADD_GID", d, st, a.status);
}

/* The address vector fields of AV, in a CREATE_AH or a struct qhca_qp_attr */
#define AV_FILL(x, a, dgid, dmac) do {                  \
        (x).sgid_index = (a).sgid;                      \
        (x).hop_limit = le16_to_cpu((a).val) >> 8;      \
        (x).traffic_class = (a).tclass;                 \
        (x).flow_label = (a).flow;                      \
        memcpy((x).dgid, (dgid), 16);                   \
        memcpy((x).dmac, (dmac), 6);                    \
    } while (0)

/*
 * An address vector with source GID index sgid and destination dgid
 * (addr6_sel() of the peer: 0 its IPv6 GID, 1 its IPv4 one, ...): which
 * & 1 = 0, qp taken RESET -> INIT -> RTR with it (then RTS if that
 * worked); 1, CREATE_AH (a good one is what UD sends with rkey 2 use)
 */
void op_av(Fz *f)
{
    FzAv a;
    HxDev *d, *peer;
    uint8_t dgid[16];
    const uint8_t *dmac;
    int st;

    d = take_dev_up(f, &a, sizeof(a));
    if (!d) {
        return;
    }
    peer = peer_of(d);
    addr6_sel(a.dgid, peer, d, le16_to_cpu(a.val), dgid);
    dmac = a.dgid % 8 == 6 ? d->mac : peer->mac;
    if (a.which & 1) {
        struct qhca_cmd_create_ah ah = { 0 };
        uint32_t ahn = 0;

        ah.pdn = cpu_to_le32(d->drv.pdn);
        AV_FILL(ah, a, dgid, dmac);
        st = hx_cmd(d, QHCA_CMD_CREATE_AH, &ah, sizeof(ah), &ahn);
        if (st == QHCA_CMD_OK) {
            av_ahn[d->idx] = ahn;
        }
        status_check("CREATE_AH", d, st, a.status);
    } else {
        struct qhca_qp_attr at = { 0 };
        HxQp *qp = hx_drv_qp(d, a.qp);
        uint32_t rc;

        if (!qp) {
            return;
        }
        rc = qp->type == QHCA_QPT_RC ? QHCA_QP_ATTR_MAX_DEST_RD_ATOMIC |
             QHCA_QP_ATTR_MIN_RNR_TIMER : 0;
        at.qp_state = QHCA_QPS_RESET;
        hx_modify_qp(d, qp->qpn, QHCA_QP_ATTR_STATE, &at);
        qp->sq_pi = qp->rq_pi = 0;
        at.qp_state = QHCA_QPS_INIT;
        at.access_flags = cpu_to_le32(hx_default_conn.access);
        hx_modify_qp(d, qp->qpn, QHCA_QP_ATTR_STATE |
                     QHCA_QP_ATTR_PKEY_INDEX | QHCA_QP_ATTR_PORT |
                     QHCA_QP_ATTR_ACCESS_FLAGS, &at);
        at.qp_state = QHCA_QPS_RTR;
        at.path_mtu = 3;
        at.dest_qpn = cpu_to_le32(qp->peer_qpn);
        at.max_dest_rd_atomic = 4;
        at.min_rnr_timer = 1;
        AV_FILL(at, a, dgid, dmac);
        st = hx_modify_qp(d, qp->qpn, QHCA_QP_ATTR_STATE | QHCA_QP_ATTR_AV |
                          QHCA_QP_ATTR_PATH_MTU | QHCA_QP_ATTR_DEST_QPN |
                          QHCA_QP_ATTR_RQ_PSN | rc, &at);
        status_check("MODIFY_QP to RTR with an AV", d, st, a.status);
        if (st == QHCA_CMD_OK) {
            at.qp_state = QHCA_QPS_RTS;
            at.timeout = 8;
            at.retry_cnt = 7;
            at.rnr_retry = 7;
            at.max_rd_atomic = 4;
            hx_modify_qp(d, qp->qpn, QHCA_QP_ATTR_STATE |
                         QHCA_QP_ATTR_SQ_PSN | (rc ? QHCA_QP_ATTR_TIMEOUT |
                         QHCA_QP_ATTR_RETRY_CNT | QHCA_QP_ATTR_RNR_RETRY |
                         QHCA_QP_ATTR_MAX_QP_RD_ATOMIC : 0), &at);
        }
    }
}

/*
 * ATTACH_MCAST (DETACH_MCAST with flags & 1) of QP qp to group_gid(group,
 * val); flags & 2: of a new UD QP in RTS entered in the driver's table
 * (on the SRQ with flags & 4) instead; flags & 8: reserved = val, not 0;
 * flags & 16: also a CREATE_AH to the group, from GID 0 for an
 * IPv4-mapped group, else GID 1 (what UD sends with rkey 3 use, with
 * DestQP 0xFFFFFF).  Then count more times: with flags & 32 for a new UD
 * QP outside the table, left in RESET, each time, else for the group of
 * val + 1, val + 2, ... (the limits: 16 QPs per group, 64 groups); the
 * status of the last one is checked against status
 */
void op_mcast(Fz *f)
{
    FzMcast a;
    struct qhca_cmd_mcast m = { 0 };
    struct qhca_cmd_create_ah ah = { 0 };
    uint32_t val, qpn, ahn = 0;
    HxDev *d;
    HxQp *qp;
    bool v4;
    int st = QHCA_CMD_OK;
    unsigned n;

    d = take_dev_up(f, &a, sizeof(a));
    if (!d) {
        return;
    }
    val = le32_to_cpu(a.val);
    qpn = qpn_sel(d, a.qp);
    if (a.flags & 2) {
        qp = hx_drv_make_ud(d, a.flags & 4, true, &qpn);
        if (!qp) {
            return;
        }
    }
    if (a.flags & 16) {
        v4 = group_gid(a.group, d, val, ah.dgid);
        ah.pdn = cpu_to_le32(d->drv.pdn);
        ah.sgid_index = v4 ? 0 : 1;
        ah.hop_limit = 64;
        memcpy(ah.dmac, peer_of(d)->mac, 6);
        if (hx_cmd(d, QHCA_CMD_CREATE_AH, &ah, sizeof(ah), &ahn) ==
            QHCA_CMD_OK) {
            mcast_ahn[d->idx] = ahn;
        }
    }
    for (n = 0; n <= a.count; n++) {
        if (n && (a.flags & 32)) {
            hx_drv_make_ud(d, false, false, &qpn);
        }
        m.qpn = cpu_to_le32(qpn);
        m.reserved = (a.flags & 8) ? cpu_to_le32(val | 1) : 0;
        group_gid(a.group, d, (a.flags & 32) ? val : val + n, m.gid);
        st = hx_cmd(d, (a.flags & 1) ? QHCA_CMD_DETACH_MCAST :
                    QHCA_CMD_ATTACH_MCAST, &m, sizeof(m), NULL);
    }
    status_check((a.flags & 1) ? "DETACH_MCAST" : "ATTACH_MCAST", d, st,
                 a.status);
}
