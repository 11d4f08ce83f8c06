/*
 * Host tests of the device's saved state (hw/qhca-save.c), on two devices
 * of the host harness (tests/harness/harness.h): a device is "migrated" by
 * saving its state, dropping the frames on their way to it (they arrive
 * while it is down), and loading the state into it again: the load resets
 * the device first, so everything it has afterwards came from the stream.
 *
 *   roundtrip      every kind of object saved, loaded and saved again gives
 *                  the same bytes and the same recomputed state
 *   write, read    RC transfers migrated mid-message on either side
 *                  complete once each with every byte right
 *   atomic-replay  a responder migrated after executing an atomic whose
 *                  answer is lost answers the retry from the saved
 *                  resource: the atomic is executed once
 *   back-and-forth a long stream with both devices migrated again and again
 *   refused        truncated, corrupted and foreign streams are refused
 *                  with a reason and leave the device reset; the good
 *                  stream still loads after them
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "hx-test.h"

static void assert_ok(HxDev *d, HxQp *qp, uint64_t wr_id, uint8_t opcode,
                      uint32_t len)
{
    struct qhca_cqe c = cqe_of(d, qp, wr_id);

    g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
    g_assert_cmpuint(c.opcode, ==, opcode);
    if (len != UINT32_MAX) {
        g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, len);
    }
}

/* No CQE of @qp beyond those matched already comes */
static void assert_no_more_cqes(HxDev *d, HxQp *qp)
{
    struct qhca_cqe c;

    hx_settle(d->pair, 50 * 1000 * 1000, 100000);
    while (hx_poll_cq(d, &c)) {
        g_assert_cmpuint(le32_to_cpu(c.qpn), !=, qp->qpn);
    }
}

static GByteArray *save(HxDev *d)
{
    GByteArray *b = g_byte_array_new();

    qhca_core_save(&d->core, b);
    return b;
}

/* Frames on their way to @d are lost: they arrive while it is down */
static unsigned drop_frames_to(HxPair *p, HxDev *d)
{
    GList *l = p->wire.head;
    unsigned n = 0;

    while (l) {
        GList *next = l->next;
        HxFrame *fr = l->data;

        if (fr->to == d->idx) {
            p->wire_bytes -= fr->len;
            g_queue_delete_link(&p->wire, l);
            g_free(fr);
            n++;
        }
        l = next;
    }
    return n;
}

/*
 * Migrate @d: save, lose what is in flight to it, load into it (reset
 * first); saving again gives the same bytes
 */
static void migrate(HxDev *d)
{
    g_autoptr(GByteArray) s = save(d);
    g_autoptr(GByteArray) again = NULL;
    g_autofree char *why = NULL;
    uint32_t pages = d->core.pages_used, nlive = d->core.nlive;

    drop_frames_to(d->pair, d);
    if (!qhca_core_load(&d->core, s->data, s->len, &why)) {
        g_error("load of %c's own state refused: %s", d->name, why);
    }
    g_assert_cmpuint(d->core.pages_used, ==, pages);
    g_assert_cmpuint(d->core.nlive, ==, nlive);
    again = save(d);
    g_assert_cmpmem(again->data, again->len, s->data, s->len);
}

/* Step until device @d sent @frames more frames (or nothing is left) */
static void run_until_sent(Fx *f, HxDev *d, unsigned frames)
{
    unsigned start = f->p->sent[d->idx];
    unsigned i;

    for (i = 0; i < 100000 && f->p->sent[d->idx] - start < frames; i++) {
        if (!hx_step(f->p)) {
            hx_advance(f->p, 100 * 1000);
        }
    }
    if (f->p->sent[d->idx] - start < frames) {
        g_test_message("%c sent %u frames; its RC QP's state is %u", d->name,
                       f->p->sent[d->idx] - start,
                       d->core.qp[rc(d)->qpn]->attr.qp_state);
    }
    g_assert_cmpuint(f->p->sent[d->idx] - start, >=, frames);
}

/* ---- every kind of object ---- */

static uint32_t pd_refs(HxDev *d, uint32_t n)
{
    return d->core.pd[n] ? d->core.pd[n]->refs : UINT32_MAX;
}

static void test_roundtrip(Fx *f, gconstpointer data)
{
    HxDev *a = f->a;
    struct qhca_cmd_alloc_mw mw = { .pdn = cpu_to_le32(a->drv.pdn),
                                    .type = QHCA_MW_TYPE_2 };
    struct qhca_cmd_mcast mc = {
        .qpn = cpu_to_le32(a->drv.qp[HX_QP_UD].qpn),
        .gid = { 0xff, 0x0e, [15] = 0x42 },
    };
    struct qhca_send_wqe w;
    uint32_t mw_key = 0, refs, mr_index;
    unsigned bound;

    g_assert_cmpint(hx_cmd(a, QHCA_CMD_ALLOC_MW, &mw, sizeof(mw), &mw_key),
                    ==, QHCA_CMD_OK);
    g_assert_cmpint(hx_cmd(a, QHCA_CMD_ATTACH_MCAST, &mc, sizeof(mc), NULL),
                    ==, QHCA_CMD_OK);
    /* a type 2 window bound to the RC QP over 4 KiB of the MR */
    w = hx_wqe(QHCA_WQE_BIND_MW, 0xb1);
    w.bind.addr = cpu_to_le64(a->drv.mr.iova + 0x1000);
    w.bind.length = cpu_to_le64(4096);
    w.bind.mr_lkey = cpu_to_le32(a->drv.mr.key);
    w.bind.mw_key = cpu_to_le32(mw_key);
    w.bind.new_key = cpu_to_le32(mw_key + 1);
    w.bind.access = cpu_to_le32(QHCA_ACCESS_REMOTE_WRITE);
    post(a, rc(a), &w, 0, 0);
    assert_ok(a, rc(a), 0xb1, QHCA_CQE_OP_BIND_MW, UINT32_MAX);

    mr_index = a->drv.mr.key >> QHCA_KEY_INDEX_SHIFT;
    bound = a->core.mr[mr_index]->mw_bound;
    g_assert_cmpuint(bound, ==, 1);
    refs = pd_refs(a, a->drv.pdn);
    migrate(a);
    g_assert_cmpuint(pd_refs(a, a->drv.pdn), ==, refs);
    g_assert_cmpuint(a->core.mr[mr_index]->mw_bound, ==, bound);
    g_assert_cmpuint(a->core.cq[a->drv.cqn]->refs, >, 0);
    g_assert_cmpuint(a->core.mcg[0].nqp + a->core.mcg[1].nqp, >=, 1);

    /* and the loaded device works: B writes through the window */
    fill(f->b, 0, 512, 9);
    w = hx_wqe(QHCA_WQE_RDMA_WRITE, 0xc1);
    w.rdma.remote_addr = cpu_to_le64(a->drv.mr.iova + 0x1000);
    w.rdma.rkey = cpu_to_le32(mw_key + 1);
    post(f->b, rc(f->b), &w, 0, 512);
    assert_ok(f->b, rc(f->b), 0xc1, QHCA_CQE_OP_RDMA_WRITE, UINT32_MAX);
    g_assert_cmpmem(mr_mem(a, 0x1000), 512, mr_mem(f->b, 0), 512);
}

/* ---- transfers migrated mid-message ---- */

static void test_write(Fx *f, gconstpointer data)
{
    const uint32_t len = 256 * 1024;
    struct qhca_send_wqe w;

    fill(f->a, 0, len, 1);
    fill(f->a, 0x100000, 3000, 2);
    memset(mr_mem(f->b, 0x100000), 0, len);
    post_recv(f->b, rc(f->b), 0xb1, 0x200000, 4096);
    w = rdma_wqe(QHCA_WQE_RDMA_WRITE, 0xa1, f->b, 0x100000);
    post(f->a, rc(f->a), &w, 0, len);
    w = hx_wqe(QHCA_WQE_SEND_WITH_IMM, 0xa2);
    stl_be_p(w.imm_data, 0x12345678);
    post(f->a, rc(f->a), &w, 0x100000, 3000);

    /* the requester, mid-WRITE */
    run_until_sent(f, f->a, 40);
    migrate(f->a);
    /* the responder, mid-WRITE or mid-SEND */
    run_until_sent(f, f->a, 40);
    migrate(f->b);

    assert_ok(f->a, rc(f->a), 0xa1, QHCA_CQE_OP_RDMA_WRITE, UINT32_MAX);
    assert_ok(f->a, rc(f->a), 0xa2, QHCA_CQE_OP_SEND, UINT32_MAX);
    assert_ok(f->b, rc(f->b), 0xb1, QHCA_CQE_OP_RECV, 3000);
    g_assert_cmpmem(mr_mem(f->b, 0x100000), len, mr_mem(f->a, 0), len);
    g_assert_cmpmem(mr_mem(f->b, 0x200000), 3000, mr_mem(f->a, 0x100000),
                    3000);
    assert_no_more_cqes(f->a, rc(f->a));
    assert_no_more_cqes(f->b, rc(f->b));
}

static void test_read(Fx *f, gconstpointer data)
{
    const uint32_t len = 256 * 1024;
    struct qhca_send_wqe w;

    fill(f->b, 0x100000, len, 3);
    memset(mr_mem(f->a, 0x200000), 0, len);
    w = rdma_wqe(QHCA_WQE_RDMA_READ, 0xa1, f->b, 0x100000);
    post(f->a, rc(f->a), &w, 0x200000, len);

    /* the responder, mid-answer (its READ resource and response queue) */
    run_until_sent(f, f->b, 30);
    migrate(f->b);
    /* the requester, mid-answer */
    run_until_sent(f, f->b, 30);
    migrate(f->a);

    assert_ok(f->a, rc(f->a), 0xa1, QHCA_CQE_OP_RDMA_READ, len);
    g_assert_cmpmem(mr_mem(f->a, 0x200000), len, mr_mem(f->b, 0x100000), len);
    assert_no_more_cqes(f->a, rc(f->a));
}

/*
 * The responder executed the FETCH_ADD and is migrated before its answer
 * reaches the requester (the answer is lost): the requester asks again,
 * and the loaded responder answers from the resource it saved, with the
 * value it returned the first time, without adding again
 */
static void test_atomic_replay(Fx *f, gconstpointer data)
{
    struct qhca_send_wqe w;
    struct qhca_cqe c;
    unsigned i;

    stq_le_p(mr_mem(f->b, 0x100), 100);
    stq_le_p(mr_mem(f->a, 0x300), 0);
    w = rdma_wqe(QHCA_WQE_ATOMIC_FETCH_AND_ADD, 0xa1, f->b, 0x100);
    w.rdma.compare_add = cpu_to_le64(5);
    /* B's answers are lost until it is migrated */
    hx_wire_set_mode(f->p, 1, HX_WIRE_BLACKHOLE, 0);
    post(f->a, rc(f->a), &w, 0x300, 8);
    /* until B executed it */
    for (i = 0; i < 1000 && ldq_le_p(mr_mem(f->b, 0x100)) == 100; i++) {
        hx_step(f->p);
    }
    g_assert_cmpuint(ldq_le_p(mr_mem(f->b, 0x100)), ==, 105);
    hx_settle(f->p, 0, 1000);
    migrate(f->b);
    hx_wire_set_mode(f->p, 1, HX_WIRE_PASS, 0);

    c = cqe_of(f->a, rc(f->a), 0xa1);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
    g_assert_cmpuint(ldq_le_p(mr_mem(f->a, 0x300)), ==, 100);
    g_assert_cmpuint(ldq_le_p(mr_mem(f->b, 0x100)), ==, 105);
    g_assert_cmpuint(qhca_core_stat(&f->a->core, QHCA_STAT_RETRANSMITS), >,
                     0);
}

/* A long stream of WRITEs and SENDs, both devices migrated again and again */
static void test_back_and_forth(Fx *f, gconstpointer data)
{
    const unsigned n = 24;
    const uint32_t len = 60000;         /* 59 packets, 16 sent at once */
    struct qhca_send_wqe w;
    unsigned i, m = 0;

    for (i = 0; i < n; i++) {
        fill(f->a, i * 0x10000, len, 10 + i);
        post_recv(f->b, rc(f->b), 0xb000 + i, 0x200000 + i * 0x10000,
                  0x10000);
    }
    for (i = 0; i < n; i++) {
        w = i % 2 ? hx_wqe(QHCA_WQE_SEND, 0xa000 + i) :
            rdma_wqe(QHCA_WQE_RDMA_WRITE_WITH_IMM, 0xa000 + i, f->b,
                     0x200000 + i * 0x10000);
        post(f->a, rc(f->a), &w, i * 0x10000, len);
        run_until_sent(f, f->a, 20);
        migrate(i % 3 ? f->a : f->b);
        m++;
    }
    for (i = 0; i < n; i++) {
        assert_ok(f->a, rc(f->a), 0xa000 + i,
                  i % 2 ? QHCA_CQE_OP_SEND : QHCA_CQE_OP_RDMA_WRITE,
                  UINT32_MAX);
        assert_ok(f->b, rc(f->b), 0xb000 + i,
                  i % 2 ? QHCA_CQE_OP_RECV : QHCA_CQE_OP_RECV_RDMA_WITH_IMM,
                  len);
        g_assert_cmpmem(mr_mem(f->b, 0x200000 + i * 0x10000), len,
                        mr_mem(f->a, i * 0x10000), len);
    }
    assert_no_more_cqes(f->a, rc(f->a));
    assert_no_more_cqes(f->b, rc(f->b));
    g_assert_cmpuint(m, ==, n);
}

/* ---- hostile streams ---- */

/* The device is as after a reset: nothing of a partial load is left */
static void assert_reset(HxDev *d)
{
    unsigned i;

    g_assert_cmpuint(d->core.status, ==, 0);
    g_assert_cmpuint(d->core.pages_used, ==, 0);
    g_assert_cmpuint(d->core.nlive, ==, 0);
    for (i = 0; i < QHCA_MAX_QP; i++) {
        g_assert_null(d->core.qp[i]);
    }
    for (i = 0; i < QHCA_MAX_MR; i++) {
        g_assert_null(d->core.mr[i]);
    }
    for (i = 0; i < QHCA_MAX_PD; i++) {
        g_assert_null(d->core.pd[i]);
    }
}

static void expect_refused(HxDev *d, const uint8_t *buf, size_t len,
                           const char *reason)
{
    g_autofree char *why = NULL;

    g_assert_false(qhca_core_load(&d->core, buf, len, &why));
    g_assert_nonnull(why);
    if (reason && !strstr(why, reason)) {
        g_error("refused for \"%s\", expected \"%s\"", why, reason);
    }
    assert_reset(d);
}

/* @s without its end record, then a record, then an end counting it */
static GByteArray *with_record(const GByteArray *s, uint8_t type,
                               uint8_t flags, const void *payload,
                               uint32_t len)
{
    GByteArray *o = g_byte_array_new();
    uint32_t count = ldl_le_p(s->data + s->len - 4);
    uint8_t h[8] = { type, flags };
    uint8_t end[12] = { 255, 0, 0, 0, 4 };

    g_byte_array_append(o, s->data, s->len - 12);
    stl_le_p(h + 4, len);
    g_byte_array_append(o, h, 8);
    g_byte_array_append(o, payload, len);
    stl_le_p(end + 8, count + 1);
    g_byte_array_append(o, end, 12);
    return o;
}

static void test_refused(Fx *f, gconstpointer data)
{
    const uint32_t len = 64 * 1024;
    g_autoptr(GByteArray) s = NULL;
    g_autoptr(GByteArray) bad = NULL;
    g_autoptr(GByteArray) opt = NULL;
    g_autoptr(GByteArray) req = NULL;
    g_autofree uint8_t *buf = NULL;
    static const uint8_t junk[5] = { 1, 2, 3, 4, 5 };
    struct qhca_send_wqe w;
    unsigned i, loaded = 0;
    size_t cut;

    /* a device with a transfer under way */
    fill(f->a, 0, len, 4);
    w = rdma_wqe(QHCA_WQE_RDMA_WRITE, 0xa1, f->b, 0x100000);
    post(f->a, rc(f->a), &w, 0, len);
    run_until_sent(f, f->a, 10);
    s = save(f->a);
    buf = g_malloc(s->len);

    /* cut anywhere */
    for (cut = 0; cut < s->len; cut += 1 + cut / 64) {
        expect_refused(f->a, s->data, cut, NULL);
    }
    /* foreign or newer */
    memcpy(buf, s->data, s->len);
    buf[0] ^= 1;
    expect_refused(f->a, buf, s->len, "not a qhca device state");
    memcpy(buf, s->data, s->len);
    stw_le_p(buf + 4, 2);
    expect_refused(f->a, buf, s->len, "version 2");
    /* the device record's MAC (after the header and the record header) */
    memcpy(buf, s->data, s->len);
    buf[8 + 8 + 5] ^= 0x40;
    expect_refused(f->a, buf, s->len, "MAC differs");
    /* a record this version does not know: refused, or skipped if optional */
    req = with_record(s, 77, 0, junk, sizeof(junk));
    expect_refused(f->a, req->data, req->len, "does not know");
    opt = with_record(s, 77, 1, junk, sizeof(junk));
    g_assert_true(qhca_core_load(&f->a->core, opt->data, opt->len, NULL));
    /* bytes after the end */
    bad = g_byte_array_new();
    g_byte_array_append(bad, s->data, s->len);
    g_byte_array_append(bad, junk, 1);
    expect_refused(f->a, bad->data, bad->len, "after the end");

    /*
     * Every byte changed in turn (a sample of them): refused with the
     * device reset, or loaded (a value the checks allow); never a crash
     * or a leak, which ASan would report
     */
    for (i = 0; i < s->len; i += 1 + i / 128) {
        g_autofree char *why = NULL;

        memcpy(buf, s->data, s->len);
        buf[i] ^= 0xa5;
        if (qhca_core_load(&f->a->core, buf, s->len, &why)) {
            loaded++;
        } else {
            assert_reset(f->a);
        }
    }
    g_test_message("%u of the changed streams loaded", loaded);

    /* the good stream loads after all that, and the transfer completes */
    drop_frames_to(f->p, f->a);
    g_assert_true(qhca_core_load(&f->a->core, s->data, s->len, NULL));
    assert_ok(f->a, rc(f->a), 0xa1, QHCA_CQE_OP_RDMA_WRITE, UINT32_MAX);
    g_assert_cmpmem(mr_mem(f->b, 0x100000), len, mr_mem(f->a, 0), len);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
#define T(path, fn) \
    g_test_add("/qhca/save/" path, Fx, NULL, fx_setup, fn, fx_teardown)
    T("roundtrip", test_roundtrip);
    T("write", test_write);
    T("read", test_read);
    T("atomic-replay", test_atomic_replay);
    T("back-and-forth", test_back_and_forth);
    T("refused", test_refused);
#undef T
    return g_test_run();
}
