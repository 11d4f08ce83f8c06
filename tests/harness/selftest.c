/*
 * Self-test of the two-device host harness (harness.h), which the host
 * transport tests (tests/unit/test-qhca-transport.c) and the fuzzer
 * (tests/fuzz/qhca-fuzz.c) stand on: the pair comes up, and SEND/RECV, RDMA
 * WRITE, READ, an atomic and a UD SEND complete with the right data, RC and
 * UD over IPv6, UD multicast, and again between QPs of one device
 * (loopback), with every DMA checked against the guest's grants; all of it
 * again on a pair that hx_pair_reset() started over (as the fuzzer reuses
 * its pair); the loop queue's bound; the grant checker, REREG_MR and
 * RESIZE_CQ moving grants.
 *
 * A GLib test program (g_test: --tap, -p PATH, -l), built and run by
 * `meson test` in the unit group (tests/harness/meson.build).  Each case
 * sets up a new pair and makes its checks in sequence, each named
 * (tests/unit/unit-check.h):
 *   /harness/round/new          the round of transfers on a new pair
 *   /harness/round/after-reset  a round, hx_pair_reset(), the round again
 *   /harness/loop-queue         the loop queue's bound and its filter
 *   /harness/grant              the grant checker
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "harness.h"
#include "qhca-roce.h"
#include "unit-check.h"

typedef struct Fx {
    HxPair *p;
    HxDev *a, *b;
    /* checks not printed, only remembered in all_ok (a round before reset) */
    bool quiet;
    bool all_ok;
} Fx;

static void fx_setup(Fx *f, gconstpointer data)
{
    f->p = hx_pair_new(&f->a, &f->b);
    f->quiet = false;
    f->all_ok = true;
}

static void fx_teardown(Fx *f, gconstpointer data)
{
    hx_pair_free(f->p);
}

/* A named check: "# ok - NAME" or "# not ok - NAME" (failing the case) */
static bool check(Fx *f, bool ok, const char *name)
{
    if (f->quiet) {
        f->all_ok &= ok;
        return ok;
    }
    return unit_check(ok, "%s", name);
}

/*
 * @a posts RDMA @op @wr_id on @qa: @len bytes at @local of its MR, to or
 * from @remote of @peer's MR (@peer is @a for loopback)
 */
static void rdma(HxDev *a, HxQp *qa, uint8_t op, uint64_t wr_id,
                 uint64_t local, HxDev *peer, uint64_t remote, uint32_t len)
{
    struct qhca_send_wqe w = hx_wqe(op, wr_id);
    struct qhca_sge s = hx_sge(&a->drv.mr, local, len);

    w.rdma.remote_addr = cpu_to_le64(peer->drv.mr.iova + remote);
    w.rdma.rkey = cpu_to_le32(peer->drv.mr.key);
    hx_post_send(a, qa, &w, &s, 1, NULL, 0, true);
}

static void fill(HxDev *d, uint64_t addr, uint32_t len, uint32_t seed)
{
    uint32_t i;

    for (i = 0; i < len; i++) {
        uint8_t b = i * 7 + seed + (i >> 8);

        hx_mem_write(d, addr, &b, 1);
        addr++;
    }
}

static bool same(HxDev *a, uint64_t pa, HxDev *b, uint64_t pb, uint32_t len)
{
    return !memcmp(a->ram + pa, b->ram + pb, len);
}

static bool cqe_is(HxDev *d, HxQp *qp, uint64_t wr_id, uint8_t status)
{
    struct qhca_cqe c;

    return hx_wait_cqe(d, qp->qpn, wr_id, &c, 100 * 1000 * 1000) &&
           c.status == status;
}

/* A SEND of @len bytes at @soff of @from's MR into 4 KiB at @roff of @to's */
static void rc_send(HxDev *from, HxQp *qs, uint64_t soff, HxDev *to,
                    HxQp *qr, uint64_t roff, uint32_t len, uint64_t send_id,
                    uint64_t recv_id)
{
    struct qhca_sge s = hx_sge(&from->drv.mr, soff, len);
    struct qhca_sge r = hx_sge(&to->drv.mr, roff, 4096);
    struct qhca_send_wqe w = hx_wqe(QHCA_WQE_SEND, send_id);

    hx_post_recv(to, qr, recv_id, &r, 1, true);
    hx_post_send(from, qs, &w, &s, 1, NULL, 0, true);
}

/*
 * A UD SEND of 100 bytes at @send_off of @from's MR through AH @ahn to
 * @to's UD QP, into a receive of 40 + 100 bytes at @recv_off of @to's MR
 */
static void ud_send(HxDev *from, HxDev *to, uint32_t ahn, uint64_t send_off,
                    uint64_t recv_off, uint64_t send_id, uint64_t recv_id)
{
    HxQp *qs = &from->drv.qp[HX_QP_UD], *qr = &to->drv.qp[HX_QP_UD];
    struct qhca_sge s = hx_sge(&from->drv.mr, send_off, 100);
    struct qhca_sge r = hx_sge(&to->drv.mr, recv_off, 40 + 100);
    struct qhca_send_wqe w = hx_wqe(QHCA_WQE_SEND, send_id);

    hx_post_recv(to, qr, recv_id, &r, 1, true);
    w.ud.ahn = cpu_to_le32(ahn);
    w.ud.remote_qpn = cpu_to_le32(qr->qpn);
    w.ud.remote_qkey = cpu_to_le32(HX_QKEY);
    hx_post_send(from, qs, &w, &s, 1, NULL, 0, true);
}

static bool mcast_attach(HxDev *d, uint32_t qpn, const uint8_t *gid)
{
    struct qhca_cmd_mcast m = { 0 };

    m.qpn = cpu_to_le32(qpn);
    memcpy(m.gid, gid, 16);
    return hx_cmd(d, QHCA_CMD_ATTACH_MCAST, &m, sizeof(m), NULL) ==
           QHCA_CMD_OK;
}

/*
 * UD multicast: B's UD QP, a second UD QP of B and A's own UD QP attached
 * to 239.1.2.3; A sends 100 bytes through an AH to the group: each of the
 * three receives them (A's looped back) into its own receive buffer, the
 * grants of which are each QP's RECV
 */
static bool mcast_fanout(HxDev *a, HxDev *b)
{
    struct qhca_cmd_create_ah ah = { 0 };
    HxQp *qa = &a->drv.qp[HX_QP_UD], *qb = &b->drv.qp[HX_QP_UD], *qb2;
    struct qhca_sge s = hx_sge(&a->drv.mr, 0x30000, 100), r[3];
    struct qhca_send_wqe w = hx_wqe(QHCA_WQE_SEND, 0xd0);
    uint32_t qpn, ahn = 0;
    bool ok;

    hx_gid_ipv4(ah.dgid, 0xef010203);
    qb2 = hx_drv_make_ud(b, false, true, &qpn);
    ok = qb2 && mcast_attach(b, qb->qpn, ah.dgid) &&
         mcast_attach(b, qb2->qpn, ah.dgid) &&
         mcast_attach(a, qa->qpn, ah.dgid);
    ah.pdn = cpu_to_le32(a->drv.pdn);
    ah.hop_limit = 64;
    ok = ok && hx_cmd(a, QHCA_CMD_CREATE_AH, &ah, sizeof(ah), &ahn) ==
         QHCA_CMD_OK;
    if (!ok) {
        return false;
    }
    fill(a, a->drv.mr.mem + 0x30000, 100, 6);
    r[0] = hx_sge(&b->drv.mr, 0x300000, 40 + 100);
    r[1] = hx_sge(&b->drv.mr, 0x310000, 40 + 100);
    r[2] = hx_sge(&a->drv.mr, 0x320000, 40 + 100);
    hx_post_recv(b, qb, 0xd1, &r[0], 1, true);
    hx_post_recv(b, qb2, 0xd2, &r[1], 1, true);
    hx_post_recv(a, qa, 0xd3, &r[2], 1, true);
    w.ud.ahn = cpu_to_le32(ahn);
    w.ud.remote_qpn = cpu_to_le32(QHCA_MCAST_QPN);
    w.ud.remote_qkey = cpu_to_le32(HX_QKEY);
    hx_post_send(a, qa, &w, &s, 1, NULL, 0, true);
    return cqe_is(a, qa, 0xd0, QHCA_CQE_SUCCESS) &&
           cqe_is(b, qb, 0xd1, QHCA_CQE_SUCCESS) &&
           cqe_is(b, qb2, 0xd2, QHCA_CQE_SUCCESS) &&
           cqe_is(a, qa, 0xd3, QHCA_CQE_SUCCESS) &&
           same(a, a->drv.mr.mem + 0x30000, b,
                b->drv.mr.mem + 0x300000 + 40, 100) &&
           same(a, a->drv.mr.mem + 0x30000, b,
                b->drv.mr.mem + 0x310000 + 40, 100) &&
           same(a, a->drv.mr.mem + 0x30000, a,
                a->drv.mr.mem + 0x320000 + 40, 100);
}

/*
 * The pair set up, then SEND/RECV, RDMA WRITE and READ, fetch and add, UD,
 * IPv6, multicast and loopback, each checked; at the end no grant or spin
 * finding.  False if a check failed.
 */
static bool round_of_transfers(Fx *f)
{
    HxPair *p = f->p;
    HxDev *a = f->a, *b = f->b;
    HxQp *qa, *qb;
    struct qhca_send_wqe w;
    struct qhca_sge s;
    uint64_t v;
    bool ok;

    f->all_ok = true;
    if (!check(f, hx_pair_setup(p), "pair setup")) {
        return false;
    }
    qa = &a->drv.qp[HX_QP_RC];
    qb = &b->drv.qp[HX_QP_RC];

    /* 3000 bytes, three packets at MTU 1024 */
    fill(a, a->drv.mr.mem, 3000, 1);
    rc_send(a, qa, 0, b, qb, 0, 3000, 0xa1, 0xb1);
    check(f, cqe_is(b, qb, 0xb1, QHCA_CQE_SUCCESS) &&
          cqe_is(a, qa, 0xa1, QHCA_CQE_SUCCESS) &&
          same(a, a->drv.mr.mem, b, b->drv.mr.mem, 3000),
          "send/recv");

    /* RDMA WRITE of 64 KiB, READ of it back */
    fill(a, a->drv.mr.mem + 0x10000, 0x10000, 2);
    rdma(a, qa, QHCA_WQE_RDMA_WRITE, 0xa2, 0x10000, b, 0x20000,
         0x10000);
    check(f, cqe_is(a, qa, 0xa2, QHCA_CQE_SUCCESS) &&
          same(a, a->drv.mr.mem + 0x10000, b,
               b->drv.mr.mem + 0x20000, 0x10000), "rdma write");
    rdma(a, qa, QHCA_WQE_RDMA_READ, 0xa3, 0x40000, b, 0x20000,
         0x10000);
    check(f, cqe_is(a, qa, 0xa3, QHCA_CQE_SUCCESS) &&
          same(a, a->drv.mr.mem + 0x40000, b,
               b->drv.mr.mem + 0x20000, 0x10000), "rdma read");

    /* fetch and add */
    v = cpu_to_le64(100);
    hx_mem_write(b, b->drv.mr.mem + 0x100, &v, 8);
    w = hx_wqe(QHCA_WQE_ATOMIC_FETCH_AND_ADD, 0xa4);
    w.rdma.remote_addr = cpu_to_le64(b->drv.mr.iova + 0x100);
    w.rdma.rkey = cpu_to_le32(b->drv.mr.key);
    w.rdma.compare_add = cpu_to_le64(5);
    s = hx_sge(&a->drv.mr, 0x200, 8);
    hx_post_send(a, qa, &w, &s, 1, NULL, 0, true);
    ok = cqe_is(a, qa, 0xa4, QHCA_CQE_SUCCESS);
    hx_mem_read(b, b->drv.mr.mem + 0x100, &v, 8);
    check(f, ok && le64_to_cpu(v) == 105 &&
          ldq_le_p(a->ram + a->drv.mr.mem + 0x200) == 100,
          "fetch and add");

    /* UD send with a GRH */
    qa = &a->drv.qp[HX_QP_UD];
    qb = &b->drv.qp[HX_QP_UD];
    ud_send(a, b, a->drv.ahn, 0, 0x80000, 0xa5, 0xb5);
    check(f, cqe_is(a, qa, 0xa5, QHCA_CQE_SUCCESS) &&
          cqe_is(b, qb, 0xb5, QHCA_CQE_SUCCESS) &&
          same(a, a->drv.mr.mem, b, b->drv.mr.mem + 0x80000 + 40, 100),
          "ud send");

    /* IPv6: RC connected over the GIDs 1, UD through the AH to one */
    {
        HxConnOpts o = hx_default_conn;
        struct qhca_cqe c;
        const uint8_t *grh;

        o.ipv6 = true;
        o.tclass = 0x28;
        o.flow_label = 0x12345;
        qa = &a->drv.qp[HX_QP_RC];
        qb = &b->drv.qp[HX_QP_RC];
        ok = hx_connect_rc(a, qa, b, qb, &o);
        fill(a, a->drv.mr.mem + 0x1000, 3000, 5);
        rc_send(a, qa, 0x1000, b, qb, 0x1000, 3000, 0xa6, 0xb6);
        check(f, ok && cqe_is(b, qb, 0xb6, QHCA_CQE_SUCCESS) &&
              cqe_is(a, qa, 0xa6, QHCA_CQE_SUCCESS) &&
              same(a, a->drv.mr.mem + 0x1000, b,
                   b->drv.mr.mem + 0x1000, 3000),
              "ipv6: rc send/recv");
        check(f, hx_connect_rc(a, qa, b, qb, &hx_default_conn),
              "ipv6: rc back to ipv4");

        qa = &a->drv.qp[HX_QP_UD];
        qb = &b->drv.qp[HX_QP_UD];
        ud_send(a, b, a->drv.ahn6, 0, 0x88000, 0xa7, 0xb7);
        grh = b->ram + b->drv.mr.mem + 0x88000;
        check(f, cqe_is(a, qa, 0xa7, QHCA_CQE_SUCCESS) &&
              hx_wait_cqe(b, qb->qpn, 0xb7, &c, 100 * 1000 * 1000) &&
              c.status == QHCA_CQE_SUCCESS &&
              c.network_hdr_type == QHCA_NET_ROCE_V2_IPV6 &&
              grh[0] >> 4 == 6 && !memcmp(grh + 8, a->ip6, 16) &&
              !memcmp(grh + 24, b->ip6, 16) &&
              same(a, a->drv.mr.mem, b, b->drv.mr.mem + 0x88000 + 40, 100),
              "ipv6: ud send, the IPv6 header in the GRH area");
    }

    check(f, mcast_fanout(a, b), "ud multicast: two QPs on the peer, one "
          "looped back");

    /* Loopback on A: its two RC QPs connected, UD to itself */
    check(f, hx_connect_loopback(a, &hx_default_conn), "loopback connect");
    qa = &a->drv.qp[HX_QP_RC];
    qb = &a->drv.qp[HX_QP_RC_SRQ];
    fill(a, a->drv.mr.mem + 0x90000, 3000, 3);
    rc_send(a, qa, 0x90000, a, qb, 0xa0000, 3000, 0xc2, 0xc1);
    check(f, cqe_is(a, qb, 0xc1, QHCA_CQE_SUCCESS) &&
          cqe_is(a, qa, 0xc2, QHCA_CQE_SUCCESS) &&
          same(a, a->drv.mr.mem + 0x90000, a, a->drv.mr.mem + 0xa0000,
               3000), "loopback send/recv");
    fill(a, a->drv.mr.mem + 0x100000, 0x10000, 4);
    rdma(a, qa, QHCA_WQE_RDMA_WRITE, 0xc3, 0x100000, a, 0x120000,
         0x10000);
    rdma(a, qa, QHCA_WQE_RDMA_READ, 0xc4, 0x140000, a, 0x120000,
         0x10000);
    check(f, cqe_is(a, qa, 0xc3, QHCA_CQE_SUCCESS) &&
          cqe_is(a, qa, 0xc4, QHCA_CQE_SUCCESS) &&
          same(a, a->drv.mr.mem + 0x100000, a,
               a->drv.mr.mem + 0x120000, 0x10000) &&
          same(a, a->drv.mr.mem + 0x100000, a,
               a->drv.mr.mem + 0x140000, 0x10000),
          "loopback rdma write and read");
    qa = &a->drv.qp[HX_QP_UD];
    ud_send(a, a, a->drv.ahn, 0x90000, 0x180000, 0xc6, 0xc5);
    check(f, cqe_is(a, qa, 0xc6, QHCA_CQE_SUCCESS) &&
          cqe_is(a, qa, 0xc5, QHCA_CQE_SUCCESS) &&
          same(a, a->drv.mr.mem + 0x90000, a,
               a->drv.mr.mem + 0x180000 + 40, 100),
          "loopback ud send to itself");
    hx_settle(p, 1000 * 1000 * 1000, 10000);
    check(f, p->findings[HX_FIND_GRANT] == 0 &&
          p->findings[HX_FIND_SPIN] == 0, "no findings");
    return f->all_ok;
}

static void test_round_new(Fx *f, gconstpointer data)
{
    round_of_transfers(f);
}

/*
 * The round on a pair that hx_pair_reset() started over after a round of
 * its own (as the fuzzer reuses one pair for every input): the first
 * round's checks are one check, the second's are named
 */
static void test_round_after_reset(Fx *f, gconstpointer data)
{
    bool ok;

    f->quiet = true;
    ok = round_of_transfers(f);
    f->quiet = false;
    check(f, ok, "a round before the reset");
    hx_pair_reset(f->p);
    round_of_transfers(f);
}

/*
 * The loop queue is bounded, and one run of the bottom half receives at
 * most QHCA_RUN_LOOP_FRAMES of it: 3000 frames to A itself (a UD SEND to a
 * QP that does not exist) offered at once
 */
static void test_loop_queue(Fx *f, gconstpointer data)
{
    HxPair *p = f->p;
    HxDev *a = f->a;
    QhcaRoceHdr h = { 0 };
    uint8_t frame[256], payload[64] = { 0 };
    uint32_t dropped, rx_dropped;
    int n, i, queued = 0;
    bool ok;

    if (!check(f, hx_pair_setup(p), "pair setup")) {
        return;
    }
    dropped = a->core.stat_loop_dropped;
    rx_dropped = a->core.stat_rx_dropped;
    memcpy(h.dst_mac, a->mac, 6);
    memcpy(h.src_mac, a->mac, 6);
    h.src_ip = h.dst_ip = a->ip;
    h.ttl = 64;
    h.src_port = 0xc000;
    h.pkey = 0xffff;
    h.opcode = QHCA_ROCE_OP_UD_SEND_ONLY;
    h.dest_qp = 1000;
    h.deth.qkey = HX_QKEY;
    h.deth.src_qp = 2;
    n = qhca_roce_build(frame, sizeof(frame), &h, payload, sizeof(payload));
    for (i = 0; i < 3000 && n > 0; i++) {
        queued += qhca_core_loopback(&a->core, frame, n);
    }
    check(f, n > 0 && queued == 3000 &&
          g_queue_get_length(&a->core.loopq) == QHCA_LOOPQ_MAX_FRAMES &&
          a->core.stat_loop_dropped - dropped ==
          3000 - QHCA_LOOPQ_MAX_FRAMES,
          "loop queue: bounded, the rest dropped and counted");
    hx_step(p);
    check(f, g_queue_get_length(&a->core.loopq) ==
          QHCA_LOOPQ_MAX_FRAMES - QHCA_RUN_LOOP_FRAMES,
          "loop queue: one run receives at most QHCA_RUN_LOOP_FRAMES");
    hx_settle(p, 1000 * 1000 * 1000, 10000);
    check(f, g_queue_is_empty(&a->core.loopq) && !a->core.loopq_bytes &&
          a->core.stat_rx_dropped - rx_dropped == 3000,
          "loop queue: all received (no such QP) or dropped");
    /* not for A: another MAC, or one of A's MACs but not its IP */
    h.dst_mac[5] ^= 1;
    n = qhca_roce_build(frame, sizeof(frame), &h, payload, sizeof(payload));
    ok = !qhca_core_loopback(&a->core, frame, n);
    h.dst_mac[5] ^= 1;
    h.dst_ip ^= 1;
    n = qhca_roce_build(frame, sizeof(frame), &h, payload, sizeof(payload));
    check(f, ok && !qhca_core_loopback(&a->core, frame, n) &&
          g_queue_is_empty(&a->core.loopq),
          "loopback: only frames to our MAC and one of our GIDs");
}

/* The grant checker itself: what the guest never handed over */
static void test_grant(Fx *f, gconstpointer data)
{
    HxPair *p = f->p;
    HxDev *a = f->a;
    uint8_t buf[16];
    unsigned before;
    bool r1, r2, r3, ok;

    if (!check(f, hx_pair_setup(p), "pair setup")) {
        return;
    }
    setenv("QHCA_HARNESS_IGNORE", "grant", 1);
    before = p->findings[HX_FIND_GRANT];
    r1 = a->core.ops->dma_read(a, a->drv.mr.mem + 0x1000, buf, 16);
    check(f, r1 && p->findings[HX_FIND_GRANT] == before,
          "grant: a read of MR memory passes");
    r2 = a->core.ops->dma_read(a, 0x500000, buf, 16);
    check(f, r2 && p->findings[HX_FIND_GRANT] == before + 1,
          "grant: a read of memory never granted is a finding");
    r3 = a->core.ops->dma_write(a, 0x100000000ULL, buf, 16);
    check(f, !r3 && p->findings[HX_FIND_GRANT] == before + 1,
          "grant: a write where there is no RAM fails, no finding");

    /* a new translation: the MR's new page granted, its old ones not */
    {
        struct qhca_cmd_rereg_mr rr = { 0 };
        uint64_t pg = hx_alloc_data(a, QHCA_PAGE_SIZE);
        int st;

        rr.key = cpu_to_le32(a->drv.mr.key);
        rr.what = cpu_to_le32(QHCA_REREG_TRANS);
        rr.iova = cpu_to_le64(a->drv.mr.iova);
        rr.length = cpu_to_le64(QHCA_PAGE_SIZE);
        rr.mem = hx_pbl(a, &pg, 1, QHCA_PAGE_SHIFT);
        st = hx_cmd(a, QHCA_CMD_REREG_MR, &rr, sizeof(rr), NULL);
        before = p->findings[HX_FIND_GRANT];
        a->core.ops->dma_read(a, pg, buf, 16);
        ok = p->findings[HX_FIND_GRANT] == before;
        a->core.ops->dma_read(a, a->drv.mr.mem + 0x1000, buf, 16);
        check(f, st == QHCA_CMD_OK && ok &&
              p->findings[HX_FIND_GRANT] == before + 1,
              "grant: REREG_MR moves the MR's grant to its new pages");
    }
    /* RESIZE_CQ: the new ring granted, the old one not */
    {
        struct qhca_cmd_resize_cq rc = { 0 };
        HxRing ring;
        uint32_t carried = 0;
        int st;

        rc.cqn = cpu_to_le32(a->drv.cqn);
        rc.log_depth = 7;
        rc.mem = hx_ring_alloc(a, &ring, 7, 5);
        st = hx_cmd(a, QHCA_CMD_RESIZE_CQ, &rc, sizeof(rc), &carried);
        before = p->findings[HX_FIND_GRANT];
        a->core.ops->dma_read(a, ring.page[0], buf, 16);
        ok = p->findings[HX_FIND_GRANT] == before;
        a->core.ops->dma_read(a, a->drv.cq.page[0], buf, 16);
        check(f, st == QHCA_CMD_OK && ok &&
              p->findings[HX_FIND_GRANT] == before + 1,
              "grant: RESIZE_CQ moves the CQ's grant to its new ring");
        a->drv.cq = ring;
        a->drv.cq_ci = 0;
    }
    before = p->findings[HX_FIND_GRANT];
    hx_mmio_write(a, QHCA_REG_CTRL, QHCA_CTRL_RESET);
    a->core.ops->dma_read(a, a->drv.mr.mem + 0x1000, buf, 16);
    check(f, p->findings[HX_FIND_GRANT] == before + 1,
          "grant: nothing is granted after a reset");
    unsetenv("QHCA_HARNESS_IGNORE");
}

/*
 * A reset or an unplug that does not go through the device's registers:
 * A's interrupt, raised inside A's own SQ doorbell write (a UD SEND's
 * completion), is aimed at its root port's Secondary Bus Reset (data
 * NULL) or slot power-off.  The reset is done, or the device replaced,
 * when the doorbell write returns (never under the engine: ASan); A comes
 * up again and sends.
 */
static void test_port(Fx *f, gconstpointer data)
{
    bool unplug = data != NULL;
    HxPair *p = f->p;
    HxDev *a = f->a, *b = f->b;
    uint64_t hits;

    if (!check(f, hx_pair_setup(p), "pair setup")) {
        return;
    }
    a->msix[1].addr = HX_PORT_ADDR + (unplug ? HX_PORT_SLTCTL :
                                      HX_PORT_BRCTL);
    a->msix[1].data = unplug ? HX_PORT_SLTCTL_OFF : HX_PORT_BRCTL_SBR;
    hx_poll_all(a, 0, HX_ARM_CQ | HX_ARM_EQ);
    hits = unplug ? a->unplugs : a->bus_resets;
    ud_send(a, b, a->drv.ahn, 0x1000, 0x2000, 0xe1, 0xe2);
    check(f, (unplug ? a->unplugs : a->bus_resets) == hits + 1 &&
          !a->replug && !qhca_core_busy(&a->core) && !a->core.nlive &&
          qhca_core_reg_read(&a->core, QHCA_REG_STATUS) == 0,
          unplug ? "port: a slot power-off from inside the doorbell "
                   "replaces the device when the doorbell returns" :
                   "port: a bus reset from inside the doorbell resets the "
                   "device when the doorbell returns");
    hx_port_write(a, unplug ? HX_PORT_SLTCTL : HX_PORT_BRCTL, 0);
    check(f, hx_drv_setup(a) && hx_connect_rc(a, &a->drv.qp[HX_QP_RC], b,
                                              &b->drv.qp[HX_QP_RC],
                                              &hx_default_conn),
          "port: the device comes up again");
    rc_send(a, &a->drv.qp[HX_QP_RC], 0x3000, b, &b->drv.qp[HX_QP_RC],
            0x4000, 64, 0xe3, 0xe4);
    check(f, cqe_is(a, &a->drv.qp[HX_QP_RC], 0xe3, QHCA_CQE_SUCCESS) &&
          cqe_is(b, &b->drv.qp[HX_QP_RC], 0xe4, QHCA_CQE_SUCCESS) &&
          same(a, a->drv.mr.mem + 0x3000, b, b->drv.mr.mem + 0x4000, 64),
          "port: and sends");
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    hx_trace_init();
    g_test_add("/harness/round/new", Fx, NULL, fx_setup, test_round_new,
               fx_teardown);
    g_test_add("/harness/round/after-reset", Fx, NULL, fx_setup,
               test_round_after_reset, fx_teardown);
    g_test_add("/harness/loop-queue", Fx, NULL, fx_setup, test_loop_queue,
               fx_teardown);
    g_test_add("/harness/grant", Fx, NULL, fx_setup, test_grant,
               fx_teardown);
    g_test_add("/harness/port/bus-reset", Fx, NULL, fx_setup, test_port,
               fx_teardown);
    g_test_add("/harness/port/power-off", Fx, "unplug", fx_setup, test_port,
               fx_teardown);
    return g_test_run();
}
