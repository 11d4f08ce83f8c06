/*
 * libFuzzer target for the device's saved state (hw/qhca-save.c,
 * hw/qhca-qp-save.c, hw/qhca-stream.c): qhca_core_load() of mutated saved
 * streams into a device of the host harness (tests/harness/) that has
 * live objects and, in most scenarios, transfers under way, as a
 * migration's destination would load a stream that came over the wire.
 *
 * Input format
 * ------------
 *   byte 0      the scenario (% the number of scenarios, state-scen.c):
 *               the situation of the pair the input starts from
 *   byte 1      the plan: what is done around the load (SF_PLAN_* below)
 *   the rest    the stream loaded into device A
 *
 * The seeds (tests/fuzz/corpus-state/, written by --write-corpus) are
 * device A's own saved state in each scenario: loading one is a real
 * migration of A, and the rest of the run must behave.
 *
 * One input
 * ---------
 * The pair is put where the scenario left it (state-ckpt.c: both devices
 * fresh cores loaded from their saved states, RAM, wire, clock and the
 * mini-driver's view as they were), the frames on their way to A dropped
 * (they arrive while it is down) unless the plan keeps them, and the
 * input's stream loaded into A (the load resets A first).
 *   - Refused: A must be as after a reset (no object, nothing charged to
 *     the budget, no live QP, registers and queues cleared, its timer
 *     off), with a reason; the pair runs on for a while and A must
 *     still hold nothing.
 *   - Accepted: A's state saved again must load again, charging the same
 *     budget and QPs, and give the same bytes when saved once more
 *     (save(load(x)) is a fixed point); then the pair runs for a bounded
 *     number of steps and of virtual time, work is posted on both devices
 *     (SENDs, WRITEs, READs, an atomic, RC, UC and UD) as the plan says,
 *     the pair runs again, the same save/load check is made, and every
 *     object of A is destroyed by commands, in the order its references
 *     allow: each destroy must succeed and A must then hold nothing and
 *     have nothing charged (the reference counts and the budget the load
 *     recomputed are right).  That is skipped if A's command queue does
 *     not answer (a stream may move it) and by plan.
 * Both cores are torn down at the end (LeakSanitizer sees what leaked).
 * A crash, a sanitizer report, a failed check (==qhca-fuzz-state== FAIL)
 * or a harness finding (budget, spin, frame, irq; tests/harness/harness.h)
 * is a bug.  The grant finding cannot fire for A: a stream may name any
 * page, so all of A's RAM is granted to it; its DMA is checked instead to
 * reach nothing outside RAM, its BARs and its port (state-ckpt.c).  B's
 * grants are checked as everywhere.
 *
 * Plan bits (byte 1):
 *   0x01 keep the frames on their way to A   0x10 a long run (3 s virtual)
 *   0x02 work posted on A                    0x20 no teardown by commands
 *   0x04 work posted on B                    0x40 saved and loaded again
 *   0x08 a wire that loses 1 frame in 5           while the work runs
 *                                            0x80 A's link down and up
 *
 * Environment: QHCA_FUZZ_STRICT=1 (the replay's) adds, for each input:
 * the scenario's real migration (the pair taken there from scratch, A
 * saved and loaded again from its current stream with its grants what the
 * guest granted: save(load(x)) == x, and what was under way ends as the
 * scenario says, every completion and byte, and the teardown works), the
 * input run twice from its checkpoint with the same outcome (the devices'
 * saved states, frames sent and clock), and for an input whose stream is
 * the current one, save(load(x)) == x.  QHCA_FUZZ_STATE_SEEDS=1: every input is a
 * real stream, a refused one fails; each says whether it is the stream
 * the scenario gives now (==qhca-fuzz-state== seed current/stale).
 * QHCA_FUZZ_STATE_VERBOSE=1 prints why a stream was refused;
 * QHCA_FUZZ_STATE_DUMP=FILE writes a state A saved and then refused there.
 *
 * `qhca-fuzz-state --write-corpus DIR` writes the seeds, one per scenario,
 * each checked by its real migration first.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "state-fuzz.h"
#include "../fuzz-entry.h"
#include <sanitizer/common_interface_defs.h>

#define SF_PLAN_KEEP_FRAMES     0x01
#define SF_PLAN_WORK_A          0x02
#define SF_PLAN_WORK_B          0x04
#define SF_PLAN_LOSSY           0x08
#define SF_PLAN_LONG            0x10
#define SF_PLAN_NO_TEARDOWN     0x20
#define SF_PLAN_RELOAD          0x40
#define SF_PLAN_LINK            0x80

#define HDR_LEN                 2
/* Steps of the main loop an input may take (teardown apart) */
#define STEP_LIMIT              3000
#define TEARDOWN_STEPS          4000
/* More objects than that are not torn down one by one (the time it takes) */
#define TEARDOWN_MAX            200
#define TABLE_MAX               MAX(QHCA_MAX_MR, QHCA_MAX_AH)

#define A                       SF_A
#define B                       SF_B
#define ARM_ALL                 (HX_ARM_CQ | HX_ARM_EQ | HX_ARM_AEQ)

static bool strict, seeds, verbose;
static uint64_t n_inputs, n_loaded, n_refused, n_teardowns;

void sf_fail(const char *fmt, ...)
{
    va_list ap;

    hx_trace_dump();
    fprintf(stderr, "==qhca-fuzz-state== FAIL: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    fflush(stderr);
    abort();
}

void sf_note(bool always, const char *fmt, ...)
{
    va_list ap;

    if (!always && !verbose) {
        return;
    }
    fprintf(stderr, "==qhca-fuzz-state== ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
}

static GByteArray *save(HxDev *d)
{
    GByteArray *b = g_byte_array_new();

    qhca_core_save(&d->core, b);
    return b;
}

/* @d holds no object, nothing charged, no live QP */
static const char *objects_left(HxDev *d)
{
    QhcaCore *c = &d->core;
    unsigned i;

    if (c->pages_used) {
        return "memory charged to the budget";
    }
    if (c->nlive) {
        return "live QPs";
    }
    for (i = 0; i < QHCA_MAX_QP; i++) {
        if (c->qp[i]) {
            return "a QP";
        }
    }
    for (i = 0; i < QHCA_MAX_MR; i++) {
        if (c->mr[i]) {
            return "an MR or a window";
        }
    }
    for (i = 0; i < QHCA_MAX_CQ; i++) {
        if (c->cq[i]) {
            return "a CQ";
        }
    }
    for (i = 0; i < QHCA_MAX_SRQ; i++) {
        if (c->srq[i]) {
            return "an SRQ";
        }
    }
    for (i = 0; i < QHCA_MAX_AH; i++) {
        if (c->ah[i]) {
            return "an AH";
        }
    }
    for (i = 0; i < QHCA_MAX_PD; i++) {
        if (c->pd[i]) {
            return "a PD";
        }
    }
    for (i = 0; i < QHCA_MAX_EQS; i++) {
        if (c->eq[i]) {
            return "an EQ";
        }
    }
    for (i = 0; i < QHCA_MAX_MCAST_GRP; i++) {
        if (c->mcg[i].nqp) {
            return "a multicast group";
        }
    }
    return NULL;
}

/* A load was refused: @d is as after a reset */
static void assert_reset(HxDev *d, const char *why)
{
    static const QhcaHostQueue zero;
    QhcaCore *c = &d->core;
    const char *left = objects_left(d);
    unsigned i;

    if (left) {
        sf_fail("load refused (%s) and device %c still has %s", why,
                d->name, left);
    }
    if (c->ctrl || c->status || c->fatal_code ||
        memcmp(&c->cmdq, &zero, sizeof(zero)) ||
        memcmp(&c->cmdcq, &zero, sizeof(zero)) ||
        memcmp(&c->aeq, &zero, sizeof(zero))) {
        sf_fail("load refused (%s) and device %c's registers are not reset "
                "(CTRL 0x%x, STATUS 0x%x)", why, d->name, c->ctrl,
                c->status);
    }
    for (i = 0; i < QHCA_GID_TABLE_LEN; i++) {
        if (c->gid[i].valid) {
            sf_fail("load refused (%s) and device %c has GID %u", why,
                    d->name, i);
        }
    }
    if (!g_queue_is_empty(&c->rxq) || !g_queue_is_empty(&c->loopq) ||
        c->timer_deadline != -1 || d->timer_deadline != -1) {
        sf_fail("load refused (%s) and device %c has frames queued or its "
                "timer armed", why, d->name);
    }
}

/* QHCA_FUZZ_STATE_DUMP=FILE: the state A saved and then refused, there */
static void dump_refused(const GByteArray *s)
{
    const char *path = getenv("QHCA_FUZZ_STATE_DUMP");

    if (path && *path &&
        !g_file_set_contents(path, (const char *)s->data, s->len, NULL)) {
        sf_note(true, "cannot write %s", path);
    }
}

/*
 * A's state, saved, loads again with the same budget and live QPs and
 * saves as the same bytes (@expect: and is those bytes)
 */
static void roundtrip(const char *when, const GByteArray *expect)
{
    QhcaCore *c = &A->core;
    g_autoptr(GByteArray) s1 = save(A);
    g_autoptr(GByteArray) s2 = NULL;
    g_autofree char *why = NULL;
    uint32_t pages = c->pages_used, nlive = c->nlive;
    size_t i;

    if (expect && (s1->len != expect->len ||
                   memcmp(s1->data, expect->data, s1->len))) {
        for (i = 0; i < MIN(s1->len, expect->len) &&
                    s1->data[i] == expect->data[i]; i++) {
            continue;
        }
        sf_fail("%s: a real stream loaded and saved again differs at byte "
                "%zu (%u bytes, %u before)", when, i, s1->len, expect->len);
    }
    if (!qhca_core_load(c, s1->data, s1->len, &why)) {
        dump_refused(s1);
        sf_fail("%s: device A's state, saved, is refused: %s", when, why);
    }
    if (c->pages_used != pages || c->nlive != nlive) {
        sf_fail("%s: loaded again, device A charges %u units and has %u live "
                "QPs, %u and %u before", when, c->pages_used, c->nlive, pages,
                nlive);
    }
    s2 = save(A);
    if (s1->len != s2->len || memcmp(s1->data, s2->data, s1->len)) {
        for (i = 0; i < MIN(s1->len, s2->len) && s1->data[i] == s2->data[i];
             i++) {
            continue;
        }
        sf_fail("%s: device A's state saved, loaded and saved again differs "
                "at byte %zu (%u bytes, %u before)", when, i, s2->len,
                s1->len);
    }
}

static void run(int64_t ns, unsigned steps)
{
    hx_settle(&sf_pair, ns, steps);
    hx_poll_all(A, 256, ARM_ALL);
    hx_poll_all(B, 256, ARM_ALL);
}

/*
 * Work on @d's QPs (its view of them), to the peer's MR at 0x3b0000 on;
 * on A a BIND_MW of its type 1 window too
 */
static void work(HxDev *d, uint32_t tag)
{
    HxQp *rc = sf_qp(d, HX_QP_RC);

    sf_fill(d, 0x380000, 0x10000, tag);
    sf_post_recv(d, rc, tag | 1, 0x3a0000, 8192);
    sf_post_recv(d, sf_qp(d, HX_QP_RC_SRQ), tag | 2, 0x3a2000, 8192);
    sf_post_recv(d, sf_qp(d, HX_QP_UD), tag | 3, 0x3a4000, 4096);
    sf_post_recv(d, sf_qp(d, HX_QP_UC), tag | 4, 0x3a6000, 8192);
    sf_post(d, rc, QHCA_WQE_SEND, tag | 5, 0x380000, 2000, 0);
    sf_post(d, rc, QHCA_WQE_RDMA_WRITE, tag | 6, 0x381000, 6000, 0x3b0000);
    sf_post(d, rc, QHCA_WQE_RDMA_READ, tag | 7, 0x3a8000, 3000, 0x384000);
    sf_post(d, rc, QHCA_WQE_ATOMIC_FETCH_AND_ADD, tag | 8, 0x3a9000, 8,
            0x388000);
    sf_post(d, sf_qp(d, HX_QP_RC_SRQ), QHCA_WQE_SEND_WITH_IMM, tag | 9,
            0x382000, 1500, 0);
    sf_post(d, sf_qp(d, HX_QP_UC), QHCA_WQE_RDMA_WRITE_WITH_IMM, tag | 10,
            0x383000, 4000, 0x3b4000);
    sf_post(d, sf_qp(d, HX_QP_UC_SRQ), QHCA_WQE_SEND, tag | 11, 0x384000,
            700, 0);
    sf_post(d, sf_qp(d, HX_QP_UD), QHCA_WQE_SEND, tag | 12, 0x385000, 512,
            0);
    if (d == A) {
        /* a local operation: A's type 1 window bound (over the MR) */
        struct qhca_send_wqe w = hx_wqe(QHCA_WQE_BIND_MW, tag | 13);

        w.bind.addr = cpu_to_le64(d->drv.mr.iova + 0x390000);
        w.bind.length = cpu_to_le64(8192);
        w.bind.mr_lkey = cpu_to_le32(d->drv.mr.key);
        w.bind.mw_key = cpu_to_le32(sf_mw1_key);
        w.bind.new_key = cpu_to_le32((sf_mw1_key & ~0xffu) |
                                     ((sf_mw1_key + 1) & 0xff));
        w.bind.access = cpu_to_le32(QHCA_ACCESS_REMOTE_READ);
        hx_post_send(d, rc, &w, NULL, 0, NULL, 0, true);
    }
}

static unsigned count_objects(HxDev *d)
{
    QhcaCore *c = &d->core;
    unsigned i, n = 0;

    for (i = 0; i < TABLE_MAX; i++) {
        n += (i < QHCA_MAX_MR && c->mr[i]) + (i < QHCA_MAX_QP && c->qp[i]) +
             (i < QHCA_MAX_AH && c->ah[i]) + (i < QHCA_MAX_SRQ && c->srq[i]) +
             (i < QHCA_MAX_CQ && c->cq[i]) + (i < QHCA_MAX_EQS && c->eq[i]) +
             (i < QHCA_MAX_PD && c->pd[i]);
    }
    return n;
}

static int destroy(HxDev *d, uint16_t op, uint32_t handle)
{
    struct qhca_cmd_obj o = { .handle = cpu_to_le32(handle) };

    return hx_cmd(d, op, &o, sizeof(o), NULL);
}

/*
 * Every object of @d destroyed by commands, windows first, PDs last: each
 * must go, and nothing be left.  False if @d's command queue does not
 * answer (then nothing can be told)
 */
static bool teardown(HxDev *d)
{
    static const struct {
        uint16_t op;
        const char *name;
    } order[] = {
        { QHCA_CMD_DEALLOC_MW, "DEALLOC_MW" },
        { QHCA_CMD_DESTROY_QP, "DESTROY_QP" },
        { QHCA_CMD_DEREG_MR, "DEREG_MR" },
        { QHCA_CMD_DESTROY_AH, "DESTROY_AH" },
        { QHCA_CMD_DESTROY_SRQ, "DESTROY_SRQ" },
        { QHCA_CMD_DESTROY_CQ, "DESTROY_CQ" },
        { QHCA_CMD_DESTROY_EQ, "DESTROY_EQ" },
        { QHCA_CMD_DEALLOC_PD, "DEALLOC_PD" },
    };
    QhcaCore *c = &d->core;
    const char *left;
    unsigned k, i;

    sf_pair.steps = 0;
    sf_pair.stopped = false;
    sf_pair.step_limit = TEARDOWN_STEPS;
    sf_pair.time_limit = 0;
    if (count_objects(d) > TEARDOWN_MAX || !d->drv.up ||
        !(c->status & QHCA_STATUS_READY) ||
        hx_cmd(d, QHCA_CMD_QUERY_DEVICE, NULL, 0, NULL) != QHCA_CMD_OK) {
        return false;
    }
    for (k = 0; k < ARRAY_SIZE(order); k++) {
        uint16_t op = order[k].op;

        for (i = 0; i < TABLE_MAX; i++) {
            uint32_t handle = i;
            bool there;
            int st;

            switch (op) {
            case QHCA_CMD_DEALLOC_MW:
                there = i < QHCA_MAX_MR && c->mr[i] && c->mr[i]->mw_type;
                handle = there ? c->mr[i]->key : 0;
                break;
            case QHCA_CMD_DEREG_MR:
                there = i < QHCA_MAX_MR && c->mr[i] && !c->mr[i]->mw_type;
                handle = there ? c->mr[i]->key : 0;
                break;
            case QHCA_CMD_DESTROY_QP:
                there = i < QHCA_MAX_QP && c->qp[i];
                break;
            case QHCA_CMD_DESTROY_AH:
                there = i < QHCA_MAX_AH && c->ah[i];
                break;
            case QHCA_CMD_DESTROY_SRQ:
                there = i < QHCA_MAX_SRQ && c->srq[i];
                break;
            case QHCA_CMD_DESTROY_CQ:
                there = i < QHCA_MAX_CQ && c->cq[i];
                break;
            case QHCA_CMD_DESTROY_EQ:
                there = i < QHCA_MAX_EQS && c->eq[i];
                break;
            default:
                there = i < QHCA_MAX_PD && c->pd[i];
                break;
            }
            if (!there) {
                continue;
            }
            st = destroy(d, op, handle);
            if (st < 0 || sf_pair.stopped) {
                return false;
            }
            if (st != QHCA_CMD_OK) {
                sf_fail("device %c: %s of 0x%x refused with status %d, once "
                        "all that could refer to it is gone", d->name,
                        order[k].name, handle, st);
            }
        }
    }
    left = objects_left(d);
    if (left) {
        sf_fail("device %c has %s after everything was destroyed", d->name,
                left);
    }
    n_teardowns++;
    return true;
}

/* What an input ended in, for the strict check that it is reproducible */
static void digest(GChecksum *sum)
{
    g_autoptr(GByteArray) sa = save(A);
    g_autoptr(GByteArray) sb = save(B);

    g_checksum_update(sum, sa->data, sa->len);
    g_checksum_update(sum, sb->data, sb->len);
    g_checksum_update(sum, (const guchar *)sf_pair.sent,
                      sizeof(sf_pair.sent));
    g_checksum_update(sum, (const guchar *)&sf_pair.now,
                      sizeof(sf_pair.now));
}

static void run_input(unsigned scen, uint8_t plan, const uint8_t *s,
                      size_t len, GChecksum *sum)
{
    g_autoptr(GByteArray) own = NULL;
    const GByteArray *cur = NULL;
    g_autofree char *why = NULL;
    bool long_run = plan & SF_PLAN_LONG;
    HxWireMode mode = plan & SF_PLAN_LOSSY ? HX_WIRE_DROP_RANDOM :
                      HX_WIRE_PASS;

    if (strict) {
        cur = own = sf_ckpt_stream(scen);
        if (len != cur->len || memcmp(s, cur->data, len)) {
            cur = NULL;
        }
    }
    sf_ckpt_restore(scen);
    sf_pair.step_limit = STEP_LIMIT;
    sf_pair.time_limit = sf_pair.now + (long_run ? 3000 : 200) * SF_MS;
    hx_wire_set_mode(&sf_pair, 0, mode, 5);
    hx_wire_set_mode(&sf_pair, 1, mode, 5);
    if (!(plan & SF_PLAN_KEEP_FRAMES)) {
        sf_drop_frames_to(A);
    }
    n_inputs++;
    if (!qhca_core_load(&A->core, s, len, &why)) {
        n_refused++;
        if (!why || !*why) {
            sf_fail("load refused without a reason");
        }
        sf_note(seeds, "refused: %s", why);
        if (seeds) {
            sf_fail("a real stream (scenario %s) is refused",
                    sf_scens[scen].name);
        }
        assert_reset(A, why);
        run(20 * SF_MS, 500);
        if (objects_left(A)) {
            sf_fail("device A was refused its state and has %s after a run",
                    objects_left(A));
        }
        if (sum) {
            digest(sum);
        }
        sf_ckpt_end();
        return;
    }
    n_loaded++;
    roundtrip("after the load", cur);
    if (plan & SF_PLAN_LINK) {
        hx_set_link(A, false);
    }
    run(2 * SF_MS, 200);
    if (plan & SF_PLAN_LINK) {
        hx_set_link(A, true);
    }
    if (plan & SF_PLAN_WORK_A) {
        work(A, 0xa000);
    }
    if (plan & SF_PLAN_WORK_B) {
        work(B, 0xb000);
    }
    if (plan & SF_PLAN_RELOAD) {
        run(SF_MS, 50);
        roundtrip("while the work runs", NULL);
    }
    run(long_run ? 3000 * SF_MS : 50 * SF_MS, 1500);
    roundtrip("after the run", NULL);
    if (sum) {
        digest(sum);
    }
    if (!(plan & SF_PLAN_NO_TEARDOWN)) {
        teardown(A);
    }
    sf_ckpt_end();
}

/*
 * The scenario's real migration: the pair taken there from scratch, A
 * saved, the frames on their way to it lost, A loaded from its stream
 * (its grants still what the guest granted: every DMA of the migrated
 * device is checked against them), what was under way ends as without
 * the migration, and A can be torn down.  Whether that holds does not
 * depend on the input: once per scenario and process
 */
static void migrate_scenario(unsigned scen)
{
    static uint8_t done[256];
    const SfScen *sc = &sf_scens[scen];
    g_autoptr(GByteArray) cur = NULL;
    g_autofree char *why = NULL;

    if (done[scen]) {
        return;
    }
    done[scen] = 1;
    sf_ckpt_fresh(scen);
    cur = save(A);
    sf_drop_frames_to(A);
    if (!qhca_core_load(&A->core, cur->data, cur->len, &why)) {
        sf_fail("scenario %s: A's own stream is refused: %s", sc->name, why);
    }
    roundtrip(sc->name, cur);
    if (!sc->verify()) {
        sf_fail("scenario %s: after the migration of A, what was under way "
                "did not end as it should", sc->name);
    }
    if (!teardown(A)) {
        sf_fail("scenario %s: A's command queue does not answer after the "
                "migration", sc->name);
    }
    sf_ckpt_end();
}

static int write_corpus(const char *dir)
{
    unsigned i;

    if (g_mkdir_with_parents(dir, 0755)) {
        fprintf(stderr, "cannot make %s: %s\n", dir, g_strerror(errno));
        return 1;
    }
    for (i = 0; i < sf_nscens; i++) {
        g_autofree char *path = g_build_filename(dir, sf_scens[i].name, NULL);
        g_autoptr(GByteArray) out = g_byte_array_new();
        g_autoptr(GByteArray) s = NULL;
        g_autoptr(GError) err = NULL;
        uint8_t hdr[HDR_LEN] = { i, sf_scens[i].plan };

        migrate_scenario(i);
        s = sf_ckpt_stream(i);
        g_byte_array_append(out, hdr, sizeof(hdr));
        g_byte_array_append(out, s->data, s->len);
        if (!g_file_set_contents(path, (const char *)out->data, out->len,
                                 &err)) {
            fprintf(stderr, "%s\n", err->message);
            return 1;
        }
        printf("%s: %u bytes\n", path, out->len);
    }
    return 0;
}

static void print_stats(void)
{
    if (n_inputs) {
        fprintf(stderr, "==qhca-fuzz-state== %" PRIu64 " inputs: %" PRIu64
                " loaded, %" PRIu64 " refused; %" PRIu64 " torn down by "
                "commands; %" PRIu64 " DMA accesses of A outside RAM (all "
                "failed)\n", n_inputs, n_loaded, n_refused, n_teardowns,
                sf_dma_outside);
    }
}

static bool env_on(const char *name)
{
    const char *s = getenv(name);

    return s && *s && strcmp(s, "0");
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    /* GLib's slice allocator caches memory: LeakSanitizer needs malloc */
    setenv("G_SLICE", "always-malloc", 1);
    strict = env_on("QHCA_FUZZ_STRICT");
    seeds = env_on("QHCA_FUZZ_STATE_SEEDS");
    verbose = env_on("QHCA_FUZZ_STATE_VERBOSE");
    hx_trace_init();
    __sanitizer_set_death_callback(hx_trace_dump);
    sf_ckpt_init();
    if (*argc >= 2 && !strcmp((*argv)[1], "--write-corpus")) {
        if (*argc != 3) {
            fprintf(stderr, "usage: %s --write-corpus DIR\n", (*argv)[0]);
            exit(2);
        }
        exit(write_corpus((*argv)[2]));
    }
    atexit(print_stats);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned scen;
    uint8_t plan;

    if (size < HDR_LEN) {
        return 0;
    }
    scen = data[0] % sf_nscens;
    plan = data[1];
    if (seeds) {
        g_autoptr(GByteArray) cur = sf_ckpt_stream(scen);

        sf_note(true, "seed %s (scenario %s)",
                size - HDR_LEN == cur->len &&
                !memcmp(data + HDR_LEN, cur->data, cur->len) ?
                "current" : "stale", sf_scens[scen].name);
    }
    if (strict) {
        g_autoptr(GChecksum) one = g_checksum_new(G_CHECKSUM_SHA256);
        g_autoptr(GChecksum) two = g_checksum_new(G_CHECKSUM_SHA256);

        migrate_scenario(scen);
        run_input(scen, plan, data + HDR_LEN, size - HDR_LEN, one);
        run_input(scen, plan, data + HDR_LEN, size - HDR_LEN, two);
        if (strcmp(g_checksum_get_string(one), g_checksum_get_string(two))) {
            sf_fail("the input ran twice from its checkpoint ends in two "
                    "different states");
        }
        return 0;
    }
    run_input(scen, plan, data + HDR_LEN, size - HDR_LEN, NULL);
    return 0;
}
