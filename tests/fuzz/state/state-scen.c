/*
 * The scenarios of the saved-state fuzz target: the situations device A is
 * saved in (each a seed of tests/fuzz/corpus-state/ and a checkpoint every
 * input of that scenario starts from), and for each what a real migration
 * must end in: after A is loaded from the stream it was saved as, with the
 * frames on their way to it lost (they arrive while it is down), what was
 * under way completes once, with the right status, opcode, length and
 * bytes, and the device still works.
 *
 * Every scenario starts from hx_pair_setup()'s pair (tests/harness/
 * driver.c) and issues commands to device A only, but for CREATE_AH and
 * MODIFY_QP to B, which leave B's memory grants as they are (state-ckpt.c
 * checks).  Offsets are into each device's 4 MiB MR; the input's own
 * work (state-fuzz.c) uses 0x380000 and up.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "state-fuzz.h"

#define WAIT_NS         (2000 * SF_MS)
#define BIG             (128 * 1024)    /* 128 packets at the pair's MTU */

#define A               SF_A
#define B               SF_B

/*
 * Helpers
 */

HxQp *sf_qp(HxDev *d, unsigned slot)
{
    return &d->drv.qp[slot];
}

uint64_t sf_mr_addr(HxDev *d, uint64_t off)
{
    return d->drv.mr.mem + off;
}

void sf_fill(HxDev *d, uint64_t off, uint32_t len, uint32_t seed)
{
    uint8_t buf[4096];
    uint32_t i, done = 0;

    while (done < len) {
        uint32_t n = MIN(len - done, sizeof(buf));

        for (i = 0; i < n; i++) {
            uint32_t k = done + i;

            buf[i] = k * 7 + seed * 13 + (k >> 8) + (k >> 16);
        }
        hx_mem_write(d, sf_mr_addr(d, off + done), buf, n);
        done += n;
    }
}

bool sf_same(HxDev *d, uint64_t off, HxDev *e, uint64_t eoff, uint32_t len,
             const char *what)
{
    const uint8_t *p = d->ram + sf_mr_addr(d, off);
    const uint8_t *q = e->ram + sf_mr_addr(e, eoff);
    uint32_t i;

    for (i = 0; i < len; i++) {
        if (p[i] != q[i]) {
            sf_note(true, "%s: byte %u of %u differs (%c 0x%" PRIx64
                    ": 0x%02x, %c 0x%" PRIx64 ": 0x%02x)", what, i, len,
                    d->name, off + i, p[i], e->name, eoff + i, q[i]);
            return false;
        }
    }
    return true;
}

static HxDev *peer(HxDev *d)
{
    return &sf_pair.dev[!d->idx];
}

/*
 * A send WQE of @opcode on @qp: @len bytes at @off of @d's MR (none if 0),
 * to @roff of the MR of the device @qp is connected to; UD to the peer's
 * UD QP through the AH to its IPv4 GID
 */
void sf_post(HxDev *d, HxQp *qp, uint8_t opcode, uint64_t wr_id,
             uint64_t off, uint32_t len, uint64_t roff)
{
    HxDev *to = qp->loopback ? d : peer(d);
    struct qhca_send_wqe w = hx_wqe(opcode, wr_id);
    struct qhca_sge s = hx_sge(&d->drv.mr, off, len);

    if (qp->type == QHCA_QPT_UD) {
        w.ud.ahn = cpu_to_le32(d->drv.ahn);
        w.ud.remote_qpn = cpu_to_le32(qp->peer_qpn);
        w.ud.remote_qkey = cpu_to_le32(HX_QKEY);
    } else {
        w.rdma.remote_addr = cpu_to_le64(to->drv.mr.iova + roff);
        w.rdma.rkey = cpu_to_le32(to->drv.mr.key);
    }
    stl_be_p(w.imm_data, (uint32_t)wr_id ^ 0x5a5a0000);
    hx_post_send(d, qp, &w, &s, len ? 1 : 0, NULL, 0, true);
}

void sf_post_recv(HxDev *d, HxQp *qp, uint64_t wr_id, uint64_t off,
                  uint32_t len)
{
    struct qhca_sge s = hx_sge(&d->drv.mr, off, len);

    hx_post_recv(d, qp, wr_id, &s, 1, true);
}

/*
 * An atomic of @opcode on @qp at @roff of the peer's MR, the value it
 * returns to @off
 */
static void post_atomic(HxDev *d, HxQp *qp, uint8_t opcode, uint64_t wr_id,
                        uint64_t off, uint64_t roff, uint64_t cmp_add,
                        uint64_t swap)
{
    HxDev *to = qp->loopback ? d : peer(d);
    struct qhca_send_wqe w = hx_wqe(opcode, wr_id);
    struct qhca_sge s = hx_sge(&d->drv.mr, off, 8);

    w.rdma.remote_addr = cpu_to_le64(to->drv.mr.iova + roff);
    w.rdma.rkey = cpu_to_le32(to->drv.mr.key);
    w.rdma.compare_add = cpu_to_le64(cmp_add);
    w.rdma.swap = cpu_to_le64(swap);
    hx_post_send(d, qp, &w, &s, 1, NULL, 0, true);
}

unsigned sf_drop_frames_to(HxDev *d)
{
    HxPair *p = &sf_pair;
    GList *l = p->wire.head;
    unsigned n = 0;

    while (l) {
        GList *next = l->next;
        HxFrame *f = l->data;

        if (f->to == d->idx) {
            p->wire_bytes -= f->len;
            g_queue_delete_link(&p->wire, l);
            g_free(f);
            n++;
        }
        l = next;
    }
    return n;
}

/* The CQE of (@qp, @wr_id) on @d: @status, @opcode, @len (UINT32_MAX: any) */
static bool expect(HxDev *d, HxQp *qp, uint64_t wr_id, uint8_t status,
                   uint8_t opcode, uint32_t len)
{
    struct qhca_cqe c;

    if (!hx_wait_cqe(d, qp->qpn, wr_id, &c, WAIT_NS)) {
        sf_note(true, "no CQE for wr_id 0x%" PRIx64 " of %c's QP %u", wr_id,
                d->name, qp->qpn);
        return false;
    }
    if (c.status != status || c.opcode != opcode ||
        (len != UINT32_MAX && le32_to_cpu(c.byte_len) != len)) {
        sf_note(true, "wr_id 0x%" PRIx64 " of %c's QP %u: status %u opcode "
                "%u length %u, expected %u, %u, %d", wr_id, d->name,
                qp->qpn, c.status, c.opcode, le32_to_cpu(c.byte_len),
                status, opcode, (int)len);
        return false;
    }
    return true;
}

static bool ok(HxDev *d, HxQp *qp, uint64_t wr_id, uint8_t opcode,
               uint32_t len)
{
    return expect(d, qp, wr_id, QHCA_CQE_SUCCESS, opcode, len);
}

/* Step until @cond, at most @max steps (time moves on when idle) */
static bool step_until(bool (*cond)(void), unsigned max)
{
    unsigned i;

    for (i = 0; i < max && !cond(); i++) {
        if (!hx_step(&sf_pair)) {
            hx_advance(&sf_pair, 100 * 1000);
        }
    }
    return cond();
}

static uint64_t stat(HxDev *d, unsigned k)
{
    return qhca_core_stat(&d->core, k);
}

static bool a_sent_8(void)
{
    return sf_pair.sent[0] >= 8;
}

/*
 * What step_until(placed) waits for: 16 bytes of a message from @w_from
 * at @w_soff placed by @w_to at @w_doff, @w_at bytes into it (a received
 * frame counts once it is received, and is processed by the next bottom
 * half: a frame received and not processed is not saved, it is lost)
 */
static HxDev *w_from, *w_to;
static uint64_t w_soff, w_doff, w_at;

static bool placed(void)
{
    return !memcmp(w_from->ram + sf_mr_addr(w_from, w_soff + w_at),
                   w_to->ram + sf_mr_addr(w_to, w_doff + w_at), 16);
}

static bool until_placed(HxDev *from, uint64_t soff, HxDev *to,
                         uint64_t doff, uint64_t at)
{
    w_from = from;
    w_soff = soff;
    w_to = to;
    w_doff = doff;
    w_at = at;
    return step_until(placed, 1000);
}

/*
 * The device still works: on @slot's QPs (RC or UC) a SEND from A to B
 * and a WRITE from B to A, each checked
 */
static bool live(unsigned slot)
{
    HxQp *qa = sf_qp(A, slot), *qb = sf_qp(B, slot);

    sf_fill(A, 0x300000, 3000, 31);
    sf_fill(B, 0x310000, 5000, 32);
    sf_post_recv(B, qb, 0x7001, 0x320000, 4096);
    sf_post(A, qa, QHCA_WQE_SEND, 0x7002, 0x300000, 3000, 0);
    sf_post(B, qb, QHCA_WQE_RDMA_WRITE, 0x7003, 0x310000, 5000, 0x330000);
    return ok(A, qa, 0x7002, QHCA_CQE_OP_SEND, UINT32_MAX) &&
           ok(B, qb, 0x7001, QHCA_CQE_OP_RECV, 3000) &&
           ok(B, qb, 0x7003, QHCA_CQE_OP_RDMA_WRITE, UINT32_MAX) &&
           sf_same(A, 0x300000, B, 0x320000, 3000, "live: SEND") &&
           sf_same(B, 0x310000, A, 0x330000, 5000, "live: WRITE");
}

static bool live_rc(void)
{
    return live(HX_QP_RC);
}

static bool nothing(void)
{
    return true;
}

/*
 * RC transfers
 */

/* A is the requester of a 128 KiB WRITE, its first window sent */
static bool write_req(void)
{
    sf_fill(A, 0, BIG, 1);
    sf_post(A, sf_qp(A, HX_QP_RC), QHCA_WQE_RDMA_WRITE, 0xa1, 0, BIG,
            0x100000);
    return step_until(a_sent_8, 1000);
}

static bool write_req_done(void)
{
    return ok(A, sf_qp(A, HX_QP_RC), 0xa1, QHCA_CQE_OP_RDMA_WRITE,
              UINT32_MAX) &&
           sf_same(A, 0, B, 0x100000, BIG, "WRITE") && live_rc();
}

/* A is the responder of a 128 KiB WRITE, part of it placed */
static bool write_resp(void)
{
    sf_fill(B, 0, BIG, 2);
    sf_post(B, sf_qp(B, HX_QP_RC), QHCA_WQE_RDMA_WRITE, 0xb1, 0, BIG,
            0x100000);
    return until_placed(B, 0, A, 0x100000, 96 * 1024);
}

static bool write_resp_done(void)
{
    return ok(B, sf_qp(B, HX_QP_RC), 0xb1, QHCA_CQE_OP_RDMA_WRITE,
              UINT32_MAX) &&
           sf_same(B, 0, A, 0x100000, BIG, "WRITE") && live_rc();
}

/* A READs 128 KiB, part of the answer in */
static bool read_req(void)
{
    sf_fill(B, 0x100000, BIG, 3);
    sf_post(A, sf_qp(A, HX_QP_RC), QHCA_WQE_RDMA_READ, 0xa2, 0x200000, BIG,
            0x100000);
    return until_placed(B, 0x100000, A, 0x200000, 16384);
}

static bool read_req_done(void)
{
    return ok(A, sf_qp(A, HX_QP_RC), 0xa2, QHCA_CQE_OP_RDMA_READ, BIG) &&
           sf_same(B, 0x100000, A, 0x200000, BIG, "READ") && live_rc();
}

static bool a_sent_20(void)
{
    return sf_pair.sent[0] >= 20;
}

/*
 * A answers two READs and an atomic of B's: the first READ under way, the
 * rest in its responder resources and response queue
 */
static bool read_resp(void)
{
    HxQp *qb = sf_qp(B, HX_QP_RC);

    sf_fill(A, 0x100000, BIG, 4);
    sf_fill(A, 0x140000, 32768, 5);
    hx_mem_write(A, sf_mr_addr(A, 0x160000), "\x10\0\0\0\0\0\0\0", 8);
    sf_post(B, qb, QHCA_WQE_RDMA_READ, 0xb2, 0x200000, BIG, 0x100000);
    sf_post(B, qb, QHCA_WQE_RDMA_READ, 0xb3, 0x300000, 32768, 0x140000);
    post_atomic(B, qb, QHCA_WQE_ATOMIC_FETCH_AND_ADD, 0xb4, 0x310000,
                0x160000, 2, 0);
    return step_until(a_sent_20, 1000);
}

static bool read_resp_done(void)
{
    HxQp *qb = sf_qp(B, HX_QP_RC);

    return ok(B, qb, 0xb2, QHCA_CQE_OP_RDMA_READ, BIG) &&
           ok(B, qb, 0xb3, QHCA_CQE_OP_RDMA_READ, 32768) &&
           ok(B, qb, 0xb4, QHCA_CQE_OP_FETCH_ADD, UINT32_MAX) &&
           sf_same(A, 0x100000, B, 0x200000, BIG, "first READ") &&
           sf_same(A, 0x140000, B, 0x300000, 32768, "second READ") &&
           ldq_le_p(B->ram + sf_mr_addr(B, 0x310000)) == 0x10 &&
           ldq_le_p(A->ram + sf_mr_addr(A, 0x160000)) == 0x12 && live_rc();
}

static bool a_added(void)
{
    return ldq_le_p(A->ram + sf_mr_addr(A, 0x100)) != 100;
}

/*
 * A executed B's FETCH_ADD and its answer was lost: the retry after the
 * migration is answered from the saved resource, without adding again
 */
static bool atomic_replay(void)
{
    hx_mem_write(A, sf_mr_addr(A, 0x100), "\x64\0\0\0\0\0\0\0", 8);
    hx_wire_set_mode(&sf_pair, 0, HX_WIRE_BLACKHOLE, 0);
    post_atomic(B, sf_qp(B, HX_QP_RC), QHCA_WQE_ATOMIC_FETCH_AND_ADD, 0xb5,
                0x300, 0x100, 5, 0);
    if (!step_until(a_added, 1000)) {
        return false;
    }
    hx_settle(&sf_pair, 0, 1000);
    return true;
}

static bool atomic_replay_done(void)
{
    hx_wire_set_mode(&sf_pair, 0, HX_WIRE_PASS, 0);
    if (!ok(B, sf_qp(B, HX_QP_RC), 0xb5, QHCA_CQE_OP_FETCH_ADD, UINT32_MAX)) {
        return false;
    }
    if (ldq_le_p(B->ram + sf_mr_addr(B, 0x300)) != 100 ||
        ldq_le_p(A->ram + sf_mr_addr(A, 0x100)) != 105) {
        sf_note(true, "FETCH_ADD returned %" PRIu64 " and left %" PRIu64
                " (100 and 105 expected)",
                ldq_le_p(B->ram + sf_mr_addr(B, 0x300)),
                ldq_le_p(A->ram + sf_mr_addr(A, 0x100)));
        return false;
    }
    return live_rc();
}

/* Atomics done both ways, their results in A's responder resources */
static bool atomics(void)
{
    HxQp *qa = sf_qp(A, HX_QP_RC), *qb = sf_qp(B, HX_QP_RC);

    post_atomic(B, qb, QHCA_WQE_ATOMIC_CMP_AND_SWP, 0xb6, 0x300, 0x200, 0, 7);
    post_atomic(B, qb, QHCA_WQE_ATOMIC_FETCH_AND_ADD, 0xb7, 0x308, 0x208, 3,
                0);
    post_atomic(A, qa, QHCA_WQE_ATOMIC_FETCH_AND_ADD, 0xa3, 0x300, 0x400, 9,
                0);
    return ok(B, qb, 0xb6, QHCA_CQE_OP_COMP_SWAP, UINT32_MAX) &&
           ok(B, qb, 0xb7, QHCA_CQE_OP_FETCH_ADD, UINT32_MAX) &&
           ok(A, qa, 0xa3, QHCA_CQE_OP_FETCH_ADD, UINT32_MAX);
}

static bool atomics_done(void)
{
    HxQp *qb = sf_qp(B, HX_QP_RC);

    post_atomic(B, qb, QHCA_WQE_ATOMIC_FETCH_AND_ADD, 0xb8, 0x310, 0x208, 1,
                0);
    if (!ok(B, qb, 0xb8, QHCA_CQE_OP_FETCH_ADD, UINT32_MAX)) {
        return false;
    }
    if (ldq_le_p(A->ram + sf_mr_addr(A, 0x200)) != 7 ||
        ldq_le_p(A->ram + sf_mr_addr(A, 0x208)) != 4 ||
        ldq_le_p(B->ram + sf_mr_addr(B, 0x310)) != 3 ||
        ldq_le_p(B->ram + sf_mr_addr(B, 0x400)) != 9) {
        sf_note(true, "atomics: wrong values after the migration");
        return false;
    }
    return live_rc();
}

/* A receives a 100 KiB SEND into a receive WQE it has begun */
static bool send_mid(void)
{
    sf_post_recv(A, sf_qp(A, HX_QP_RC), 0xa4, 0x100000, 2 * BIG);
    sf_fill(B, 0, 100 * 1024, 6);
    sf_post(B, sf_qp(B, HX_QP_RC), QHCA_WQE_SEND, 0xb9, 0, 100 * 1024, 0);
    return until_placed(B, 0, A, 0x100000, 16384);
}

static bool send_mid_done(void)
{
    return ok(B, sf_qp(B, HX_QP_RC), 0xb9, QHCA_CQE_OP_SEND, UINT32_MAX) &&
           ok(A, sf_qp(A, HX_QP_RC), 0xa4, QHCA_CQE_OP_RECV, 100 * 1024) &&
           sf_same(B, 0, A, 0x100000, 100 * 1024, "SEND") && live_rc();
}

/* The same on the SRQ: two receives, the first one being filled */
static bool send_srq(void)
{
    HxQp *qa = sf_qp(A, HX_QP_RC_SRQ), *qb = sf_qp(B, HX_QP_RC_SRQ);

    sf_post_recv(A, qa, 0xa5, 0x100000, BIG);
    sf_post_recv(A, qa, 0xa6, 0x140000, BIG);
    sf_fill(B, 0, 100 * 1024, 7);
    sf_fill(B, 0x40000, 20000, 8);
    sf_post(B, qb, QHCA_WQE_SEND, 0xba, 0, 100 * 1024, 0);
    sf_post(B, qb, QHCA_WQE_SEND_WITH_IMM, 0xbb, 0x40000, 20000, 0);
    return until_placed(B, 0, A, 0x100000, 16384);
}

static bool send_srq_done(void)
{
    HxQp *qa = sf_qp(A, HX_QP_RC_SRQ), *qb = sf_qp(B, HX_QP_RC_SRQ);

    return ok(B, qb, 0xba, QHCA_CQE_OP_SEND, UINT32_MAX) &&
           ok(B, qb, 0xbb, QHCA_CQE_OP_SEND, UINT32_MAX) &&
           ok(A, qa, 0xa5, QHCA_CQE_OP_RECV, 100 * 1024) &&
           ok(A, qa, 0xa6, QHCA_CQE_OP_RECV, 20000) &&
           sf_same(B, 0, A, 0x100000, 100 * 1024, "SRQ SEND") &&
           sf_same(B, 0x40000, A, 0x140000, 20000, "SRQ SEND_WITH_IMM") &&
           live(HX_QP_RC_SRQ);
}

/* A sends with immediate data: a SEND_WITH_IMM and a WRITE_WITH_IMM */
static bool imm_req(void)
{
    HxQp *qa = sf_qp(A, HX_QP_RC), *qb = sf_qp(B, HX_QP_RC);

    sf_post_recv(B, qb, 0xbc, 0x200000, 65536);
    sf_post_recv(B, qb, 0xbd, 0x210000, 16);
    sf_fill(A, 0, 60000, 9);
    sf_fill(A, 0x10000, 60000, 10);
    sf_post(A, qa, QHCA_WQE_SEND_WITH_IMM, 0xa7, 0, 60000, 0);
    sf_post(A, qa, QHCA_WQE_RDMA_WRITE_WITH_IMM, 0xa8, 0x10000, 60000,
            0x300000);
    return step_until(a_sent_8, 1000);
}

static bool imm_req_done(void)
{
    HxQp *qa = sf_qp(A, HX_QP_RC), *qb = sf_qp(B, HX_QP_RC);
    struct qhca_cqe c;
    unsigned i;

    if (!ok(A, qa, 0xa7, QHCA_CQE_OP_SEND, UINT32_MAX) ||
        !ok(A, qa, 0xa8, QHCA_CQE_OP_RDMA_WRITE, UINT32_MAX)) {
        return false;
    }
    for (i = 0; i < 2; i++) {
        uint64_t id = i ? 0xbd : 0xbc;
        uint32_t imm = i ? 0xa8u ^ 0x5a5a0000u : 0xa7u ^ 0x5a5a0000u;

        if (!hx_wait_cqe(B, qb->qpn, id, &c, WAIT_NS) ||
            c.status != QHCA_CQE_SUCCESS ||
            c.opcode != (i ? QHCA_CQE_OP_RECV_RDMA_WITH_IMM :
                             QHCA_CQE_OP_RECV) ||
            le32_to_cpu(c.byte_len) != 60000 ||
            (uint32_t)ldl_be_p(c.imm_data) != imm) {
            sf_note(true, "receive 0x%" PRIx64 " of the immediate data is "
                    "missing or wrong", id);
            return false;
        }
    }
    return sf_same(A, 0, B, 0x200000, 60000, "SEND_WITH_IMM") &&
           sf_same(A, 0x10000, B, 0x300000, 60000, "WRITE_WITH_IMM") &&
           live_rc();
}

/*
 * UC
 */

/* A receives a UC SEND, then a UC WRITE, part of them in */
static bool uc_resp(void)
{
    HxQp *qa = sf_qp(A, HX_QP_UC), *qb = sf_qp(B, HX_QP_UC);

    sf_post_recv(A, qa, 0xa9, 0x100000, 65536);
    sf_post_recv(A, qa, 0xaa, 0x110000, 65536);
    sf_fill(B, 0, 60000, 11);
    sf_fill(B, 0x10000, 60000, 12);
    sf_post(B, qb, QHCA_WQE_SEND, 0xbe, 0, 60000, 0);
    sf_post(B, qb, QHCA_WQE_RDMA_WRITE, 0xbf, 0x10000, 60000, 0x200000);
    return until_placed(B, 0, A, 0x100000, 16384);
}

/*
 * UC does not send again what is lost: the SEND and the WRITE under way
 * may be lost (a message lost part-way leaves its receive WQE to the next
 * one); a 4 KiB SEND after the migration lands intact in one of the two
 */
static bool uc_resp_done(void)
{
    HxQp *qa = sf_qp(A, HX_QP_UC), *qb = sf_qp(B, HX_QP_UC);
    struct qhca_cqe c;
    uint64_t id;

    if (!ok(B, qb, 0xbe, QHCA_CQE_OP_SEND, UINT32_MAX) ||
        !ok(B, qb, 0xbf, QHCA_CQE_OP_RDMA_WRITE, UINT32_MAX)) {
        return false;
    }
    sf_fill(B, 0x20000, 4096, 13);
    sf_post(B, qb, QHCA_WQE_SEND, 0xc0, 0x20000, 4096, 0);
    if (!ok(B, qb, 0xc0, QHCA_CQE_OP_SEND, UINT32_MAX)) {
        return false;
    }
    hx_settle(&sf_pair, 10 * SF_MS, 10000);
    for (id = 0xa9; id <= 0xaa; id++) {
        uint64_t off = id == 0xa9 ? 0x100000 : 0x110000;

        if (!hx_wait_cqe(A, qa->qpn, id, &c, 0)) {
            continue;
        }
        if (c.status != QHCA_CQE_SUCCESS) {
            sf_note(true, "UC receive 0x%" PRIx64 ": status %u", id,
                    c.status);
            return false;
        }
        if (le32_to_cpu(c.byte_len) == 4096) {
            return sf_same(B, 0x20000, A, off, 4096, "UC SEND") &&
                   live(HX_QP_UC);
        }
        if (le32_to_cpu(c.byte_len) != 60000 ||
            !sf_same(B, 0, A, off, 60000, "UC SEND under way")) {
            return false;
        }
    }
    sf_note(true, "the UC SEND after the migration did not arrive");
    return false;
}

/* A sends a UC SEND, part of it sent */
static bool uc_req(void)
{
    HxQp *qa = sf_qp(A, HX_QP_UC), *qb = sf_qp(B, HX_QP_UC);

    sf_post_recv(B, qb, 0xc1, 0x100000, 65536);
    sf_post_recv(B, qb, 0xc2, 0x110000, 65536);
    sf_fill(A, 0, 60000, 14);
    sf_post(A, qa, QHCA_WQE_SEND, 0xab, 0, 60000, 0);
    return step_until(a_sent_8, 1000);
}

static bool uc_req_done(void)
{
    HxQp *qa = sf_qp(A, HX_QP_UC), *qb = sf_qp(B, HX_QP_UC);

    sf_fill(A, 0x20000, 4096, 15);
    sf_post(A, qa, QHCA_WQE_SEND, 0xac, 0x20000, 4096, 0);
    return ok(A, qa, 0xab, QHCA_CQE_OP_SEND, UINT32_MAX) &&
           ok(A, qa, 0xac, QHCA_CQE_OP_SEND, UINT32_MAX) &&
           ok(B, qb, 0xc1, QHCA_CQE_OP_RECV, 60000) &&
           ok(B, qb, 0xc2, QHCA_CQE_OP_RECV, 4096) &&
           sf_same(A, 0, B, 0x100000, 60000, "UC SEND") &&
           sf_same(A, 0x20000, B, 0x110000, 4096, "UC SEND after") &&
           live(HX_QP_UC_SRQ);
}

/*
 * UD: a datagram received and one receive left; two sends posted, their
 * doorbell rung, not yet sent
 */
static bool ud(void)
{
    HxQp *qa = sf_qp(A, HX_QP_UD), *qb = sf_qp(B, HX_QP_UD);

    sf_post_recv(A, qa, 0xad, 0x100000, 4096);
    sf_post_recv(A, qa, 0xae, 0x101000, 4096);
    sf_post_recv(B, qb, 0xc3, 0x100000, 4096);
    sf_post_recv(B, qb, 0xc4, 0x101000, 4096);
    sf_fill(B, 0, 1000, 16);
    sf_post(B, qb, QHCA_WQE_SEND, 0xc5, 0, 1000, 0);
    if (!ok(A, qa, 0xad, QHCA_CQE_OP_RECV, 40 + 1000) ||
        !ok(B, qb, 0xc5, QHCA_CQE_OP_SEND, UINT32_MAX)) {
        return false;
    }
    sf_fill(A, 0, 1000, 17);
    sf_fill(A, 0x1000, 2000, 18);
    sf_post(A, qa, QHCA_WQE_SEND, 0xaf, 0, 1000, 0);
    sf_post(A, qa, QHCA_WQE_SEND_WITH_IMM, 0xb0, 0x1000, 2000, 0);
    return true;
}

static bool ud_done(void)
{
    HxQp *qa = sf_qp(A, HX_QP_UD), *qb = sf_qp(B, HX_QP_UD);

    sf_fill(B, 0x2000, 500, 19);
    sf_post(B, qb, QHCA_WQE_SEND, 0xc6, 0x2000, 500, 0);
    return ok(A, qa, 0xaf, QHCA_CQE_OP_SEND, UINT32_MAX) &&
           ok(A, qa, 0xb0, QHCA_CQE_OP_SEND, UINT32_MAX) &&
           ok(B, qb, 0xc3, QHCA_CQE_OP_RECV, 40 + 1000) &&
           ok(B, qb, 0xc4, QHCA_CQE_OP_RECV, 40 + 2000) &&
           ok(B, qb, 0xc6, QHCA_CQE_OP_SEND, UINT32_MAX) &&
           ok(A, qa, 0xae, QHCA_CQE_OP_RECV, 40 + 500) &&
           sf_same(B, 0, A, 0x100000 + 40, 1000, "UD before") &&
           sf_same(A, 0, B, 0x100000 + 40, 1000, "UD SEND") &&
           sf_same(A, 0x1000, B, 0x101000 + 40, 2000, "UD SEND_WITH_IMM") &&
           sf_same(B, 0x2000, A, 0x101000 + 40, 500, "UD after");
}

/*
 * Objects
 */

/* Windows of A: type 2 bound to its RC QP, type 1 bound read-only */
static uint32_t mw2_key, mw1_key;

static bool bind_mw(HxDev *d, HxQp *qp, uint64_t wr_id, uint32_t key,
                 uint32_t new_key, uint64_t off, uint64_t len, uint32_t acc)
{
    struct qhca_send_wqe w = hx_wqe(QHCA_WQE_BIND_MW, wr_id);

    w.bind.addr = cpu_to_le64(d->drv.mr.iova + off);
    w.bind.length = cpu_to_le64(len);
    w.bind.mr_lkey = cpu_to_le32(d->drv.mr.key);
    w.bind.mw_key = cpu_to_le32(key);
    w.bind.new_key = cpu_to_le32(new_key);
    w.bind.access = cpu_to_le32(acc);
    hx_post_send(d, qp, &w, NULL, 0, NULL, 0, true);
    return ok(d, qp, wr_id, QHCA_CQE_OP_BIND_MW, UINT32_MAX);
}

static bool alloc_mw(HxDev *d, uint8_t type, uint32_t *key)
{
    struct qhca_cmd_alloc_mw m = { .pdn = cpu_to_le32(d->drv.pdn),
                                   .type = type };

    return hx_cmd(d, QHCA_CMD_ALLOC_MW, &m, sizeof(m), key) == QHCA_CMD_OK;
}

static bool windows(void)
{
    HxQp *qa = sf_qp(A, HX_QP_RC);
    uint32_t k2, k1, spare;

    if (!alloc_mw(A, QHCA_MW_TYPE_2, &k2) ||
        !alloc_mw(A, QHCA_MW_TYPE_1, &k1) ||
        !alloc_mw(A, QHCA_MW_TYPE_2, &spare)) {
        return false;
    }
    mw2_key = (k2 & ~0xffu) | ((k2 + 1) & 0xff);
    mw1_key = (k1 & ~0xffu) | ((k1 + 1) & 0xff);
    sf_fill(A, 0x3000, 8192, 20);
    return bind_mw(A, qa, 0xb1, k2, mw2_key, 0x1000, 4096,
                QHCA_ACCESS_REMOTE_WRITE | QHCA_ACCESS_REMOTE_READ) &&
           bind_mw(A, qa, 0xb2, k1, mw1_key, 0x3000, 8192,
                QHCA_ACCESS_REMOTE_READ);
}

static bool windows_done(void)
{
    HxQp *qb = sf_qp(B, HX_QP_RC);
    struct qhca_send_wqe w = hx_wqe(QHCA_WQE_RDMA_WRITE, 0xc7);
    struct qhca_sge s = hx_sge(&B->drv.mr, 0, 512);

    sf_fill(B, 0, 512, 21);
    w.rdma.remote_addr = cpu_to_le64(A->drv.mr.iova + 0x1100);
    w.rdma.rkey = cpu_to_le32(mw2_key);
    hx_post_send(B, qb, &w, &s, 1, NULL, 0, true);
    w = hx_wqe(QHCA_WQE_RDMA_READ, 0xc8);
    s = hx_sge(&B->drv.mr, 0x10000, 8192);
    w.rdma.remote_addr = cpu_to_le64(A->drv.mr.iova + 0x3000);
    w.rdma.rkey = cpu_to_le32(mw1_key);
    hx_post_send(B, qb, &w, &s, 1, NULL, 0, true);
    return ok(B, qb, 0xc7, QHCA_CQE_OP_RDMA_WRITE, UINT32_MAX) &&
           ok(B, qb, 0xc8, QHCA_CQE_OP_RDMA_READ, 8192) &&
           sf_same(B, 0, A, 0x1100, 512, "WRITE through the type 2 window") &&
           sf_same(A, 0x3000, B, 0x10000, 8192,
                   "READ through the type 1 window") &&
           live_rc();
}

/* A's UD QP and a second one attached to two groups; B has an AH to one */
static uint32_t mc_ahn;

static bool attach(HxDev *d, uint32_t qpn, const uint8_t *gid)
{
    struct qhca_cmd_mcast m = { .qpn = cpu_to_le32(qpn) };

    memcpy(m.gid, gid, 16);
    return hx_cmd(d, QHCA_CMD_ATTACH_MCAST, &m, sizeof(m), NULL) ==
           QHCA_CMD_OK;
}

static bool mcast(void)
{
    static const uint8_t g6[16] = { 0xff, 0x0e, [15] = 0x42 };
    struct qhca_cmd_create_ah ah = { 0 };
    uint8_t g4[16];
    uint32_t qpn;
    HxQp *q2 = hx_drv_make_ud(A, false, true, &qpn);

    hx_gid_ipv4(g4, 0xef010203);
    if (!q2 || !attach(A, sf_qp(A, HX_QP_UD)->qpn, g4) ||
        !attach(A, sf_qp(A, HX_QP_UD)->qpn, g6) ||
        !attach(A, q2->qpn, g4)) {
        return false;
    }
    memcpy(ah.dgid, g4, 16);
    ah.pdn = cpu_to_le32(B->drv.pdn);
    ah.hop_limit = 64;
    if (hx_cmd(B, QHCA_CMD_CREATE_AH, &ah, sizeof(ah), &mc_ahn) !=
        QHCA_CMD_OK) {
        return false;
    }
    sf_post_recv(A, sf_qp(A, HX_QP_UD), 0xb3, 0x100000, 4096);
    sf_post_recv(A, q2, 0xb4, 0x110000, 4096);
    return true;
}

static bool mcast_done(void)
{
    HxQp *qb = sf_qp(B, HX_QP_UD), *q2 = sf_qp(A, HX_QP_SETUP);
    struct qhca_send_wqe w = hx_wqe(QHCA_WQE_SEND, 0xc9);
    struct qhca_sge s = hx_sge(&B->drv.mr, 0, 500);

    sf_fill(B, 0, 500, 22);
    w.ud.ahn = cpu_to_le32(mc_ahn);
    w.ud.remote_qpn = cpu_to_le32(QHCA_MCAST_QPN);
    w.ud.remote_qkey = cpu_to_le32(HX_QKEY);
    hx_post_send(B, qb, &w, &s, 1, NULL, 0, true);
    return ok(B, qb, 0xc9, QHCA_CQE_OP_SEND, UINT32_MAX) &&
           ok(A, sf_qp(A, HX_QP_UD), 0xb3, QHCA_CQE_OP_RECV, 40 + 500) &&
           ok(A, q2, 0xb4, QHCA_CQE_OP_RECV, 40 + 500) &&
           sf_same(B, 0, A, 0x100000 + 40, 500, "group datagram") &&
           sf_same(B, 0, A, 0x110000 + 40, 500, "group datagram, QP 2") &&
           live_rc();
}

/* A's RC QP in ERR: a WRITE with a bad rkey, and a SEND flushed */
static bool qp_err(void)
{
    HxQp *qa = sf_qp(A, HX_QP_RC);
    struct qhca_send_wqe w = hx_wqe(QHCA_WQE_RDMA_WRITE, 0xb5);
    struct qhca_sge s = hx_sge(&A->drv.mr, 0, 4096);

    w.rdma.remote_addr = cpu_to_le64(B->drv.mr.iova);
    w.rdma.rkey = cpu_to_le32(B->drv.mr.key ^ 0x100);
    hx_post_send(A, qa, &w, &s, 1, NULL, 0, true);
    sf_post(A, qa, QHCA_WQE_SEND, 0xb6, 0, 100, 0);
    return expect(A, qa, 0xb5, QHCA_CQE_REM_ACCESS_ERR,
                  QHCA_CQE_OP_RDMA_WRITE, UINT32_MAX) &&
           expect(A, qa, 0xb6, QHCA_CQE_WR_FLUSH_ERR, QHCA_CQE_OP_SEND,
                  UINT32_MAX);
}

static bool qp_err_done(void)
{
    HxQp *qa = sf_qp(A, HX_QP_RC);
    struct qhca_qp_attr a;

    if (hx_query_qp(A, qa->qpn, &a) != QHCA_CMD_OK ||
        a.qp_state != QHCA_QPS_ERR) {
        sf_note(true, "A's RC QP is not in ERR after the migration");
        return false;
    }
    sf_post(A, qa, QHCA_WQE_SEND, 0xb7, 0, 100, 0);
    return expect(A, qa, 0xb7, QHCA_CQE_WR_FLUSH_ERR, QHCA_CQE_OP_SEND,
                  UINT32_MAX) && live(HX_QP_RC_SRQ);
}

/* A disabled (CTRL.ENABLE cleared): not READY, its objects kept */
static bool disabled(void)
{
    hx_mmio_write(A, QHCA_REG_CTRL, 0);
    return !(hx_mmio_read(A, QHCA_REG_STATUS) & QHCA_STATUS_READY);
}

static bool disabled_done(void)
{
    if (hx_mmio_read(A, QHCA_REG_STATUS) & QHCA_STATUS_READY) {
        sf_note(true, "A is READY after the migration of a disabled device");
        return false;
    }
    hx_mmio_write(A, QHCA_REG_CTRL, QHCA_CTRL_ENABLE);
    if (!(hx_mmio_read(A, QHCA_REG_STATUS) & QHCA_STATUS_READY)) {
        sf_note(true, "A is not READY after ENABLE");
        return false;
    }
    return live_rc();
}

/* A failed: ENABLE with bad queue registers after a reset */
static bool fatal(void)
{
    hx_mmio_write(A, QHCA_REG_CTRL, QHCA_CTRL_RESET);
    hx_mmio_write(A, QHCA_REG_CMDQ_BASE_LO, 0x123);
    hx_mmio_write(A, QHCA_REG_CTRL, QHCA_CTRL_ENABLE);
    return (hx_mmio_read(A, QHCA_REG_STATUS) & QHCA_STATUS_FATAL) != 0;
}

static bool fatal_done(void)
{
    uint32_t st = hx_mmio_read(A, QHCA_REG_STATUS);

    if (!(st & QHCA_STATUS_FATAL) ||
        hx_mmio_read(A, QHCA_REG_FATAL_CODE) != QHCA_FATAL_BAD_CONFIG) {
        sf_note(true, "A's fatal error is gone after the migration "
                "(STATUS 0x%x)", st);
        return false;
    }
    if (!hx_drv_enable(A)) {
        sf_note(true, "A does not come up again after a reset");
        return false;
    }
    return hx_cmd(A, QHCA_CMD_QUERY_DEVICE, NULL, 0, NULL) == QHCA_CMD_OK;
}

static bool rnr_seen(void)
{
    return stat(A, QHCA_STAT_RNR_NAKS_RCVD) >= 1;
}

/* A's SEND was refused for want of a receive WQE: A waits to try again */
static bool rnr(void)
{
    sf_fill(A, 0, 2048, 23);
    sf_post(A, sf_qp(A, HX_QP_RC), QHCA_WQE_SEND, 0xb8, 0, 2048, 0);
    return step_until(rnr_seen, 1000);
}

static bool rnr_done(void)
{
    HxQp *qb = sf_qp(B, HX_QP_RC);

    sf_post_recv(B, qb, 0xca, 0x100000, 4096);
    return ok(A, sf_qp(A, HX_QP_RC), 0xb8, QHCA_CQE_OP_SEND, UINT32_MAX) &&
           ok(B, qb, 0xca, QHCA_CQE_OP_RECV, 2048) &&
           sf_same(A, 0, B, 0x100000, 2048, "SEND after RNR") && live_rc();
}

static bool retransmitted(void)
{
    return stat(A, QHCA_STAT_RETRANSMITS) >= 1;
}

/* A's acknowledgements are lost: it sent its WRITE again after a timeout */
static bool retry(void)
{
    hx_wire_set_mode(&sf_pair, 1, HX_WIRE_BLACKHOLE, 0);
    sf_fill(A, 0, 16384, 24);
    sf_post(A, sf_qp(A, HX_QP_RC), QHCA_WQE_RDMA_WRITE, 0xb9, 0, 16384,
            0x100000);
    return step_until(retransmitted, 100000);
}

static bool retry_done(void)
{
    hx_wire_set_mode(&sf_pair, 1, HX_WIRE_PASS, 0);
    return ok(A, sf_qp(A, HX_QP_RC), 0xb9, QHCA_CQE_OP_RDMA_WRITE,
              UINT32_MAX) &&
           sf_same(A, 0, B, 0x100000, 16384, "WRITE retried") && live_rc();
}

/*
 * A's WRITE sent again after a timeout (its acknowledgements lost), with a
 * BIND_MW after it that was done at once: the requester went back to the
 * WRITE, past which a WQE is done already
 */
static uint32_t rw_key;

static bool rewind_past_done(void)
{
    HxQp *qa = sf_qp(A, HX_QP_RC);
    struct qhca_send_wqe w = hx_wqe(QHCA_WQE_BIND_MW, 0xbe);
    uint32_t k1;

    if (!alloc_mw(A, QHCA_MW_TYPE_1, &k1)) {
        return false;
    }
    rw_key = (k1 & ~0xffu) | ((k1 + 1) & 0xff);
    hx_wire_set_mode(&sf_pair, 1, HX_WIRE_BLACKHOLE, 0);
    sf_fill(A, 0, 32768, 33);
    sf_fill(A, 0x18000, 4096, 34);
    sf_post(A, qa, QHCA_WQE_RDMA_WRITE, 0xbd, 0, 32768, 0x100000);
    w.bind.addr = cpu_to_le64(A->drv.mr.iova + 0x18000);
    w.bind.length = cpu_to_le64(4096);
    w.bind.mr_lkey = cpu_to_le32(A->drv.mr.key);
    w.bind.mw_key = cpu_to_le32(k1);
    w.bind.new_key = cpu_to_le32(rw_key);
    w.bind.access = cpu_to_le32(QHCA_ACCESS_REMOTE_READ);
    hx_post_send(A, qa, &w, NULL, 0, NULL, 0, true);
    return step_until(retransmitted, 100000);
}

static bool rewind_past_done_done(void)
{
    HxQp *qa = sf_qp(A, HX_QP_RC), *qb = sf_qp(B, HX_QP_RC);
    struct qhca_send_wqe w = hx_wqe(QHCA_WQE_RDMA_READ, 0xce);
    struct qhca_sge s = hx_sge(&B->drv.mr, 0x10000, 4096);

    hx_wire_set_mode(&sf_pair, 1, HX_WIRE_PASS, 0);
    if (!ok(A, qa, 0xbd, QHCA_CQE_OP_RDMA_WRITE, UINT32_MAX) ||
        !ok(A, qa, 0xbe, QHCA_CQE_OP_BIND_MW, UINT32_MAX)) {
        return false;
    }
    w.rdma.remote_addr = cpu_to_le64(A->drv.mr.iova + 0x18000);
    w.rdma.rkey = cpu_to_le32(rw_key);
    hx_post_send(B, qb, &w, &s, 1, NULL, 0, true);
    return ok(B, qb, 0xce, QHCA_CQE_OP_RDMA_READ, 4096) &&
           sf_same(A, 0, B, 0x100000, 32768, "WRITE sent again") &&
           sf_same(A, 0x18000, B, 0x10000, 4096, "READ through the window") &&
           live_rc();
}

/* A's fast-register MR registered by a REG_MR WQE over 16 pages in reverse */
#define FR_PAGES        16
#define FR_IOVA         0x70000000ULL
static uint64_t fr_page[FR_PAGES];
static uint32_t fr_key;

static bool fastreg(void)
{
    HxQp *qa = sf_qp(A, HX_QP_RC);
    struct qhca_send_wqe w = hx_wqe(QHCA_WQE_REG_MR, 0xba);
    uint64_t mem = hx_alloc_data(A, FR_PAGES * QHCA_PAGE_SIZE);
    struct qhca_pbl_desc pbl;
    unsigned i;

    for (i = 0; i < FR_PAGES; i++) {
        fr_page[i] = mem + (uint64_t)(FR_PAGES - 1 - i) * QHCA_PAGE_SIZE;
    }
    pbl = hx_pbl(A, fr_page, FR_PAGES, QHCA_PAGE_SHIFT);
    fr_key = (A->drv.frmr_key & ~0xffu) | ((A->drv.frmr_key + 1) & 0xff);
    w.reg.iova = cpu_to_le64(FR_IOVA);
    w.reg.length = cpu_to_le64(FR_PAGES * QHCA_PAGE_SIZE);
    w.reg.pbl_addr = pbl.pbl_addr;
    w.reg.key = cpu_to_le32(fr_key);
    w.reg.access = cpu_to_le32(QHCA_ACCESS_LOCAL_WRITE |
                               QHCA_ACCESS_REMOTE_WRITE |
                               QHCA_ACCESS_REMOTE_READ);
    w.reg.num_pages = cpu_to_le32(FR_PAGES);
    w.reg.page_shift = QHCA_PAGE_SHIFT;
    hx_post_send(A, qa, &w, NULL, 0, NULL, 0, true);
    return ok(A, qa, 0xba, QHCA_CQE_OP_REG_MR, UINT32_MAX);
}

static bool fastreg_done(void)
{
    HxQp *qb = sf_qp(B, HX_QP_RC);
    struct qhca_send_wqe w = hx_wqe(QHCA_WQE_RDMA_WRITE, 0xcb);
    struct qhca_sge s = hx_sge(&B->drv.mr, 0, 20000);
    const uint8_t *src = B->ram + sf_mr_addr(B, 0);
    uint32_t i;

    sf_fill(B, 0, 20000, 25);
    w.rdma.remote_addr = cpu_to_le64(FR_IOVA + 100);
    w.rdma.rkey = cpu_to_le32(fr_key);
    hx_post_send(B, qb, &w, &s, 1, NULL, 0, true);
    if (!ok(B, qb, 0xcb, QHCA_CQE_OP_RDMA_WRITE, UINT32_MAX)) {
        return false;
    }
    for (i = 0; i < 20000; i++) {
        uint64_t o = 100 + i;
        uint8_t v = A->ram[fr_page[o / QHCA_PAGE_SIZE] + o % QHCA_PAGE_SIZE];

        if (v != src[i]) {
            sf_note(true, "fast-registered WRITE: byte %u differs", i);
            return false;
        }
    }
    return live_rc();
}

static bool loop_sent(void)
{
    return stat(A, QHCA_STAT_LOOPBACK) >= 20;
}

/* A's two RC QPs connected to each other, a WRITE between them under way */
static bool loopback(void)
{
    if (!hx_connect_loopback(A, &hx_default_conn)) {
        return false;
    }
    sf_fill(A, 0, BIG, 26);
    sf_post(A, sf_qp(A, HX_QP_RC), QHCA_WQE_RDMA_WRITE, 0xbb, 0, BIG,
            0x100000);
    return step_until(loop_sent, 1000);
}

static bool loopback_done(void)
{
    return ok(A, sf_qp(A, HX_QP_RC), 0xbb, QHCA_CQE_OP_RDMA_WRITE,
              UINT32_MAX) &&
           sf_same(A, 0, A, 0x100000, BIG, "loopback WRITE") &&
           live(HX_QP_UC);
}

/* The RC pair connected again over IPv6, a SEND under way */
static bool ipv6(void)
{
    HxConnOpts o = hx_default_conn;

    o.ipv6 = true;
    o.tclass = 0x28;
    o.flow_label = 0x12345;
    if (!hx_connect_rc(A, sf_qp(A, HX_QP_RC), B, sf_qp(B, HX_QP_RC), &o)) {
        return false;
    }
    sf_post_recv(B, sf_qp(B, HX_QP_RC), 0xcc, 0x100000, BIG);
    sf_fill(A, 0, 100 * 1024, 27);
    sf_post(A, sf_qp(A, HX_QP_RC), QHCA_WQE_SEND, 0xbc, 0, 100 * 1024, 0);
    return step_until(a_sent_8, 1000);
}

static bool ipv6_done(void)
{
    return ok(A, sf_qp(A, HX_QP_RC), 0xbc, QHCA_CQE_OP_SEND, UINT32_MAX) &&
           ok(B, sf_qp(B, HX_QP_RC), 0xcc, QHCA_CQE_OP_RECV, 100 * 1024) &&
           sf_same(A, 0, B, 0x100000, 100 * 1024, "SEND over IPv6") &&
           live_rc();
}

/* WRITEs both ways over a wire that loses frames: congestion state */
static bool lossy(void)
{
    hx_wire_set_mode(&sf_pair, 0, HX_WIRE_DROP_RANDOM, 7);
    hx_wire_set_mode(&sf_pair, 1, HX_WIRE_DROP_RANDOM, 7);
    sf_fill(A, 0, BIG, 28);
    sf_fill(B, 0, BIG, 29);
    sf_post(A, sf_qp(A, HX_QP_RC), QHCA_WQE_RDMA_WRITE, 0xbd, 0, BIG,
            0x100000);
    sf_post(B, sf_qp(B, HX_QP_RC), QHCA_WQE_RDMA_WRITE, 0xcd, 0, BIG,
            0x200000);
    return step_until(retransmitted, 100000);
}

static bool lossy_done(void)
{
    hx_wire_set_mode(&sf_pair, 0, HX_WIRE_PASS, 0);
    hx_wire_set_mode(&sf_pair, 1, HX_WIRE_PASS, 0);
    return ok(A, sf_qp(A, HX_QP_RC), 0xbd, QHCA_CQE_OP_RDMA_WRITE,
              UINT32_MAX) &&
           ok(B, sf_qp(B, HX_QP_RC), 0xcd, QHCA_CQE_OP_RDMA_WRITE,
              UINT32_MAX) &&
           sf_same(A, 0, B, 0x100000, BIG, "lossy WRITE from A") &&
           sf_same(B, 0, A, 0x200000, BIG, "lossy WRITE from B") &&
           live_rc();
}

/* Every QP of A busy at once, both ways */
static bool busy(void)
{
    HxQp *ra = sf_qp(A, HX_QP_RC), *rb = sf_qp(B, HX_QP_RC);
    HxQp *sa = sf_qp(A, HX_QP_RC_SRQ), *sb = sf_qp(B, HX_QP_RC_SRQ);
    HxQp *ua = sf_qp(A, HX_QP_UC), *ub = sf_qp(B, HX_QP_UC);
    HxQp *da = sf_qp(A, HX_QP_UD), *db = sf_qp(B, HX_QP_UD);

    sf_fill(A, 0, 0x40000, 30);
    sf_fill(B, 0, 0x40000, 31);
    sf_post_recv(A, ra, 0xa1, 0x100000, 65536);
    sf_post_recv(B, sb, 0xb1, 0x100000, 65536);
    sf_post_recv(B, ub, 0xb2, 0x110000, 65536);
    sf_post_recv(B, db, 0xb3, 0x120000, 4096);
    sf_post(A, ra, QHCA_WQE_RDMA_WRITE, 0xa2, 0, 65536, 0x200000);
    sf_post(A, sa, QHCA_WQE_SEND, 0xa3, 0x10000, 50000, 0);
    sf_post(A, ua, QHCA_WQE_SEND, 0xa4, 0x20000, 30000, 0);
    sf_post(A, da, QHCA_WQE_SEND, 0xa5, 0x30000, 1024, 0);
    sf_post(A, ra, QHCA_WQE_RDMA_READ, 0xa6, 0x140000, 32768, 0x20000);
    sf_post(B, rb, QHCA_WQE_SEND, 0xb4, 0x30000, 40000, 0);
    sf_post(B, rb, QHCA_WQE_RDMA_READ, 0xb5, 0x300000, 65536, 0x10000);
    return until_placed(B, 0x30000, A, 0x100000, 16384);
}

static bool busy_done(void)
{
    HxQp *ra = sf_qp(A, HX_QP_RC), *rb = sf_qp(B, HX_QP_RC);
    HxQp *sa = sf_qp(A, HX_QP_RC_SRQ), *sb = sf_qp(B, HX_QP_RC_SRQ);
    HxQp *ua = sf_qp(A, HX_QP_UC), *da = sf_qp(A, HX_QP_UD);
    HxQp *db = sf_qp(B, HX_QP_UD);

    /* the UC SEND may be lost (frames to A were, its answers not): any */
    return ok(A, ra, 0xa2, QHCA_CQE_OP_RDMA_WRITE, UINT32_MAX) &&
           ok(A, sa, 0xa3, QHCA_CQE_OP_SEND, UINT32_MAX) &&
           ok(A, ua, 0xa4, QHCA_CQE_OP_SEND, UINT32_MAX) &&
           ok(A, da, 0xa5, QHCA_CQE_OP_SEND, UINT32_MAX) &&
           ok(A, ra, 0xa6, QHCA_CQE_OP_RDMA_READ, 32768) &&
           ok(A, ra, 0xa1, QHCA_CQE_OP_RECV, 40000) &&
           ok(B, rb, 0xb4, QHCA_CQE_OP_SEND, UINT32_MAX) &&
           ok(B, rb, 0xb5, QHCA_CQE_OP_RDMA_READ, 65536) &&
           ok(B, sb, 0xb1, QHCA_CQE_OP_RECV, 50000) &&
           ok(B, db, 0xb3, QHCA_CQE_OP_RECV, 40 + 1024) &&
           sf_same(A, 0, B, 0x200000, 65536, "busy: WRITE") &&
           sf_same(A, 0x10000, B, 0x100000, 50000, "busy: SRQ SEND") &&
           sf_same(A, 0x30000, B, 0x120000 + 40, 1024, "busy: UD") &&
           sf_same(B, 0x20000, A, 0x140000, 32768, "busy: READ by A") &&
           sf_same(B, 0x30000, A, 0x100000, 40000, "busy: SEND to A") &&
           sf_same(A, 0x10000, B, 0x300000, 65536, "busy: READ by B") &&
           live_rc();
}

/*
 * More objects on A: PDs, EQs on other vectors with CQs, an AH of another
 * PD, a physical MR, a UD QP on the SRQ left in RESET, a GID, the SRQ's
 * limit armed, a CQ armed for solicited events only
 */
static bool objects(void)
{
    struct qhca_cmd_create_ah ah = { 0 };
    struct qhca_cmd_reg_mr mr = { 0 };
    struct qhca_cmd_modify_srq ms = { 0 };
    struct qhca_pbl_desc mem;
    HxRing eq, cq;
    uint32_t pd2, pd3, eqn, cqn, n;
    uint8_t gid[16] = { 0xfe, 0x80, [15] = 0x0a };
    unsigned i;

    if (hx_cmd(A, QHCA_CMD_ALLOC_PD, NULL, 0, &pd2) != QHCA_CMD_OK ||
        hx_cmd(A, QHCA_CMD_ALLOC_PD, NULL, 0, &pd3) != QHCA_CMD_OK ||
        qhca_drv_add_gid(&A->drv.qd, 2, gid) != QHCA_CMD_OK) {
        return false;
    }
    for (i = 2; i < 4; i++) {
        mem = hx_ring_alloc(A, &eq, 5, 4);
        if (qhca_drv_create_eq(&A->drv.qd, &mem, 5, i, &eqn) != QHCA_CMD_OK) {
            return false;
        }
        mem = hx_ring_alloc(A, &cq, 4 + i, 5);
        if (qhca_drv_create_cq(&A->drv.qd, &mem, 4 + i, eqn, &cqn) !=
            QHCA_CMD_OK) {
            return false;
        }
        qhca_drv_db(&A->drv.qd, QHCA_DB_CQ_ARM_SOLICITED, cqn, 0);
        qhca_drv_db(&A->drv.qd, QHCA_DB_EQ, eqn | QHCA_DB_EQ_ARM, 0);
    }
    ah.pdn = cpu_to_le32(pd2);
    ah.sgid_index = 2;
    ah.hop_limit = 7;
    ah.traffic_class = 0x10;
    ah.flow_label = cpu_to_le32(0xabcde);
    memcpy(ah.dgid, B->ip6, 16);
    memcpy(ah.dmac, B->mac, 6);
    if (hx_cmd(A, QHCA_CMD_CREATE_AH, &ah, sizeof(ah), &n) != QHCA_CMD_OK) {
        return false;
    }
    mr.pdn = cpu_to_le32(pd3);
    mr.access = cpu_to_le32(QHCA_ACCESS_LOCAL_WRITE |
                            QHCA_ACCESS_REMOTE_READ);
    mr.iova = cpu_to_le64(hx_alloc_data(A, 8 * QHCA_PAGE_SIZE));
    mr.length = cpu_to_le64(8 * QHCA_PAGE_SIZE);
    mr.flags = cpu_to_le32(QHCA_MR_PHYS);
    mr.key_variant = cpu_to_le32(0x22);
    if (hx_cmd(A, QHCA_CMD_REG_MR, &mr, sizeof(mr), &n) != QHCA_CMD_OK) {
        return false;
    }
    hx_drv_make_ud(A, true, false, &n);
    ms.srqn = cpu_to_le32(A->drv.srqn);
    ms.limit = cpu_to_le32(3);
    return hx_cmd(A, QHCA_CMD_MODIFY_SRQ, &ms, sizeof(ms), NULL) ==
           QHCA_CMD_OK;
}

/* A command posted, its doorbell rung, not yet executed */
static bool cmd_pending(void)
{
    struct qhca_cmd c;

    if (!qhca_drv_cmd_init(&A->drv.qd, &c, QHCA_CMD_ALLOC_PD, NULL, 0)) {
        return false;
    }
    qhca_drv_cmd_post(&A->drv.qd, &c);
    return true;
}

static bool cmd_pending_done(void)
{
    struct qhca_cmd_comp comp;

    if (!qhca_drv_cmd_take(&A->drv.qd, &comp) ||
        le16_to_cpu(comp.status) != QHCA_CMD_OK ||
        comp.opcode != QHCA_CMD_ALLOC_PD || !A->core.pd[comp.result]) {
        sf_note(true, "the command pending at the migration did not "
                "complete with a new PD");
        return false;
    }
    return live_rc();
}

/*
 * What every scenario starts from, after hx_pair_setup(): on A two
 * windows, unbound (type 1 and type 2), and its UD QP attached to the
 * group 239.0.0.1, so that every seed has a window and a group
 */
uint32_t sf_mw1_key;

bool sf_base(void)
{
    uint8_t g[16];
    uint32_t k2;

    hx_gid_ipv4(g, 0xef000001);
    return alloc_mw(A, QHCA_MW_TYPE_1, &sf_mw1_key) &&
           alloc_mw(A, QHCA_MW_TYPE_2, &k2) &&
           attach(A, sf_qp(A, HX_QP_UD)->qpn, g);
}

/* Plans of the seeds (state-fuzz.c SF_PLAN_*): the default and others */
#define P_WORK          0x06    /* work on both, frames to A lost */
#define P_KEEP          0x07    /* ... the frames kept */
#define P_LOSSY         0x1e    /* ... a lossy wire, a long run */
#define P_RELOAD        0x46    /* ... loaded again while the work runs */
#define P_NO_TEARDOWN   0x26    /* ... the objects left to the cleanup */
#define P_LINK          0x86    /* ... the link down and up again */

const SfScen sf_scens[] = {
    { "idle", nothing, live_rc, P_WORK },
    { "write-req", write_req, write_req_done, P_WORK },
    { "write-resp", write_resp, write_resp_done, P_WORK },
    { "read-req", read_req, read_req_done, P_WORK },
    { "read-resp", read_resp, read_resp_done, P_WORK },
    { "atomic-replay", atomic_replay, atomic_replay_done, P_WORK },
    { "atomics", atomics, atomics_done, P_WORK },
    { "send-mid", send_mid, send_mid_done, P_WORK },
    { "send-srq", send_srq, send_srq_done, P_WORK },
    { "imm-req", imm_req, imm_req_done, P_WORK },
    { "uc-resp", uc_resp, uc_resp_done, P_WORK },
    { "uc-req", uc_req, uc_req_done, P_WORK },
    { "ud", ud, ud_done, P_WORK },
    { "windows", windows, windows_done, P_WORK },
    { "mcast", mcast, mcast_done, P_WORK },
    { "qp-err", qp_err, qp_err_done, P_WORK },
    { "disabled", disabled, disabled_done, P_WORK },
    { "fatal", fatal, fatal_done, P_WORK },
    { "rnr", rnr, rnr_done, P_WORK },
    { "retry", retry, retry_done, P_WORK },
    { "fastreg", fastreg, fastreg_done, P_WORK },
    { "loopback", loopback, loopback_done, P_WORK },
    { "ipv6", ipv6, ipv6_done, P_WORK },
    { "lossy", lossy, lossy_done, P_LOSSY },
    { "busy", busy, busy_done, P_RELOAD },
    { "objects", objects, live_rc, P_NO_TEARDOWN },
    { "cmd-pending", cmd_pending, cmd_pending_done, P_KEEP },
    { "rewind-past-done", rewind_past_done, rewind_past_done_done, P_WORK },
};

const unsigned sf_nscens = ARRAY_SIZE(sf_scens);
