/*
 * QTest for the qhca RDMA HCA: its saved state in a migration stream,
 * corrupted.  Device A (in its QEMU, an RC QP connected to device B's in
 * another, a 256 KiB RDMA WRITE half sent) is saved to a file (migration
 * to file:).  Each case loads a copy of that stream with one corruption
 * into a new QEMU (-incoming defer, migrate-incoming with exit-on-error
 * off): the migration fails, QEMU is still there (it answers QMP, never
 * ran the guest) and quits cleanly, and no sanitizer said anything (the
 * qtest-san group runs this under ASan and UBSan).  A corruption of the
 * device's own state must be refused by the device, with its message
 * ("qhca qa: incoming device state refused: REASON", the reason named per
 * case); a cut stream fails in QEMU's stream layer.  The last case loads
 * the stream as it was saved: A comes back, its WRITE completes and new
 * transfers both ways work, bytes compared.
 *
 * The device state is found in the stream after its section's name
 * ("0000:00:04.0/qhca") as the buffer of the device's VMState: a 32-bit
 * big-endian length and the stream qhca_core_save() writes (hw/qhca-save.c:
 * "QHCS", version 1, records of a type, flags and a little-endian length,
 * the last an end record), which the test walks record by record.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "libqtest.h"
#include "qemu/bswap.h"
#include "qobject/qdict.h"
#include "qhca-mig.h"

/* The saved state's format (hw/qhca-save.c), version 1 */
#define SAVE_HDR        8               /* magic, version, reserved */
#define REC_HDR         8               /* type, flags, reserved, length */
#define REC_DEVICE      1
#define REC_PD          4
#define REC_CQ          5
#define REC_MR          8
#define REC_QP          9
#define REC_COUNTERS    12
#define REC_END         255
#define REC_F_OPTIONAL  1
/* Offsets in a QP record's body */
#define QP_SCQN         7
#define QP_SQ           28              /* its send queue's ring */
/* ... in a ring: log depth, log stride, producer, consumer, page list */
#define RING_CI         4
#define RING_PAGES      6
/* ... in an MR record's body */
#define MR_KEY          6
#define MR_PAGES        44
/* ... in the engine's part of a QP record */
#define ENG_DEADLINE    28
#define ENG_WQES        56

#define WRITE_LEN       (256 << 10)

typedef struct Saved {
    MigPair p;
    End a, b;
    Mr src, dst;
    uint8_t *out;
    char *dir;
    char *path;                 /* the stream as saved */
    GByteArray *stream;
    size_t dev;                 /* where the device state starts */
    uint32_t dev_len;
    int64_t clock;              /* A's virtual clock when it was saved */
} Saved;

static Saved *saved;

/* A record of the device state: its header's offset in the stream */
typedef struct Rec {
    size_t off;
    uint8_t type;
    uint32_t len;
} Rec;

/* The @nth record of @type (0: the first); false if there is none */
static bool rec_find(const Saved *s, uint8_t type, unsigned nth, Rec *r)
{
    const uint8_t *p = s->stream->data;
    size_t off = s->dev + SAVE_HDR, end = s->dev + s->dev_len;

    while (off + REC_HDR <= end) {
        r->off = off;
        r->type = p[off];
        r->len = ldl_le_p(p + off + 4);
        if (r->type == type && !nth--) {
            return true;
        }
        off += REC_HDR + r->len;
    }
    return false;
}

static Rec rec_get(const Saved *s, uint8_t type)
{
    Rec r;

    g_assert_true(rec_find(s, type, 0, &r));
    return r;
}

/* Where a QP record's ring at @ring (body offset) ends */
static size_t ring_end(const uint8_t *body, size_t ring)
{
    return ring + RING_PAGES + 5 + 8 * ldl_le_p(body + ring + RING_PAGES + 1);
}

/* The body offset of the engine's part of QP record @r */
static size_t qp_engine(const Saved *s, const Rec *r)
{
    const uint8_t *body = s->stream->data + r->off + REC_HDR;
    size_t off = ring_end(body, QP_SQ);

    if (body[off++]) {                  /* a receive queue of its own */
        off = ring_end(body, off);
    }
    return off + sizeof(struct qhca_qp_attr) + 4;
}

/*
 * The device state in the stream: after the name of the device's
 * section, its length (big-endian) and "QHCS"; its records end with the
 * end record exactly at that length
 */
static void find_device_state(Saved *s)
{
    static const char name[] = "0000:00:04.0/qhca";
    const uint8_t *p = s->stream->data;
    const uint8_t *sec, *magic;
    Rec end;

    sec = memmem(p, s->stream->len, name, strlen(name));
    g_assert_nonnull(sec);
    g_assert_cmpuint(sec[-1], ==, strlen(name));
    magic = memmem(sec, s->stream->len - (sec - p), "QHCS", 4);
    g_assert_nonnull(magic);
    s->dev = magic - p;
    s->dev_len = ldl_be_p(magic - 4);
    g_assert_cmpuint(s->dev + s->dev_len, <=, s->stream->len);
    g_assert_cmpuint(lduw_le_p(magic + 4), ==, 1);
    end = rec_get(s, REC_END);
    g_assert_cmpuint(end.off + REC_HDR + end.len, ==, s->dev + s->dev_len);
    g_test_message("device state: %u bytes at %zu of %u", s->dev_len,
                   s->dev, s->stream->len);
}

/*
 * A and B with an RC QP each, connected, and an AH of A's; A's 256 KiB
 * WRITE to B is under way (its first 60 packets on the wire) when A is
 * saved to a file, its link cut from then until it is loaded
 */
static Saved *saved_get(void)
{
    struct qhca_send_wqe w;
    struct qhca_sge sg;
    g_autoptr(GError) err = NULL;
    gchar *data;
    gsize len;
    Saved *s;

    if (saved) {
        return saved;
    }
    s = saved = g_new0(Saved, 1);
    mig_pair_start(&s->p);
    end_create(&s->a, &s->p.n[0].d, QHCA_QPT_RC, IP_A, mac_a, false);
    end_create(&s->b, &s->p.n[1].d, QHCA_QPT_RC, IP_B, mac_b, false);
    rc_connect_one(&s->a, &s->b, &rc_default_opts);
    rc_connect_one(&s->b, &s->a, &rc_default_opts);
    ud_ah(&s->a, IP_B, mac_b);
    s->src = mr_reg(s->a.d, s->a.pdn, WRITE_LEN, QHCA_ACCESS_LOCAL_WRITE,
                    0x40000000);
    s->dst = mr_reg(s->b.d, s->b.pdn, WRITE_LEN, QHCA_ACCESS_LOCAL_WRITE |
                    QHCA_ACCESS_REMOTE_WRITE, 0x7f1234560000);
    s->out = g_malloc(WRITE_LEN);
    fill(s->out, WRITE_LEN, 0x5a);
    mr_io(s->a.d, &s->src, 0, s->out, WRITE_LEN, true);
    w = wqe(QHCA_WQE_RDMA_WRITE, 0x7001);
    w.rdma.remote_addr = cpu_to_le64(s->dst.iova);
    w.rdma.rkey = cpu_to_le32(s->dst.key);
    sg = sge(&s->src, 0, WRITE_LEN);
    post_send(&s->a, &w, &sg, 1, NULL, 0);
    g_assert_true(mig_run_until_from(&s->p, 0, 60));

    s->dir = g_dir_make_tmp("qhca-mig-XXXXXX", &err);
    g_assert_no_error(err);
    s->path = g_strdup_printf("%s/saved", s->dir);
    mig_save_file(&s->p, 0, 0, s->path, &s->clock);
    g_assert_true(g_file_get_contents(s->path, &data, &len, &err));
    g_assert_no_error(err);
    s->stream = g_byte_array_new_take((guint8 *)data, len);
    find_device_state(s);
    return s;
}

static void saved_free(void)
{
    Saved *s = saved;
    g_autofree char *cut = NULL, *log = NULL;

    if (!s) {
        return;
    }
    mig_pair_stop(&s->p);
    cut = g_strdup_printf("%s/corrupt", s->dir);
    log = g_strdup_printf("%s/stderr", s->dir);
    unlink(cut);
    unlink(log);
    unlink(s->path);
    rmdir(s->dir);
    g_free(s->path);
    g_free(s->dir);
    g_free(s->out);
    g_byte_array_unref(s->stream);
    g_free(s);
    saved = NULL;
}

/* Replace @del bytes at @off of @b with @len bytes of @ins */
static void stream_splice(GByteArray *b, size_t off, size_t del,
                          const void *ins, size_t len)
{
    g_autoptr(GByteArray) n = g_byte_array_sized_new(b->len - del + len);

    g_byte_array_append(n, b->data, off);
    g_byte_array_append(n, ins, len);
    g_byte_array_append(n, b->data + off + del, b->len - off - del);
    g_byte_array_set_size(b, 0);
    g_byte_array_append(b, n->data, n->len);
}

/* The device state's length as the VMState has it */
static void set_dev_len(const Saved *s, GByteArray *b, uint32_t len)
{
    stl_be_p(b->data + s->dev - 4, len);
}

/*
 * The corruptions: each changes a copy @b of the stream; @why is what the
 * device's refusal says (after "incoming device state refused: "), @msg
 * another message of the device's, neither: QEMU's stream layer fails it
 */
typedef struct Corruption {
    const char *name;
    void (*apply)(const Saved *s, GByteArray *b);
    const char *why;
    const char *msg;
} Corruption;

static void c_magic(const Saved *s, GByteArray *b)
{
    b->data[s->dev] ^= 0x01;
}

static void c_version(const Saved *s, GByteArray *b)
{
    stw_le_p(b->data + s->dev + 4, 2);
}

static void c_reserved(const Saved *s, GByteArray *b)
{
    b->data[s->dev + 6] = 1;
}

static void c_rec_flags(const Saved *s, GByteArray *b)
{
    b->data[rec_get(s, REC_QP).off + 1] = 0x80;
}

static void c_rec_type(const Saved *s, GByteArray *b)
{
    b->data[rec_get(s, REC_QP).off] = 0x70;
}

/* Skipped as an optional record: the QP's congestion state has no QP */
static void c_rec_optional(const Saved *s, GByteArray *b)
{
    Rec r = rec_get(s, REC_QP);

    b->data[r.off] = 0x70;
    b->data[r.off + 1] = REC_F_OPTIONAL;
}

static void c_rec_long(const Saved *s, GByteArray *b)
{
    stl_le_p(b->data + rec_get(s, REC_QP).off + 4, 0x7fffffff);
}

static void c_rec_short(const Saved *s, GByteArray *b)
{
    Rec r = rec_get(s, REC_QP);

    stl_le_p(b->data + r.off + 4, r.len - 4);
}

static void c_order(const Saved *s, GByteArray *b)
{
    b->data[rec_get(s, REC_COUNTERS).off] = REC_DEVICE;
}

static void c_qp_slot(const Saved *s, GByteArray *b)
{
    stw_le_p(b->data + rec_get(s, REC_QP).off + REC_HDR, 0);
}

static void c_qp_cq(const Saved *s, GByteArray *b)
{
    stl_le_p(b->data + rec_get(s, REC_QP).off + REC_HDR + QP_SCQN, 999);
}

static void c_qp_ring(const Saved *s, GByteArray *b)
{
    b->data[rec_get(s, REC_QP).off + REC_HDR + QP_SQ] = 0;
}

static void c_qp_attr(const Saved *s, GByteArray *b)
{
    Rec r = rec_get(s, REC_QP);
    size_t attr = qp_engine(s, &r) - 4 - sizeof(struct qhca_qp_attr);

    b->data[r.off + REC_HDR + attr +
            offsetof(struct qhca_qp_attr, path_mtu)] = 9;
}

static void c_qp_sq_pi(const Saved *s, GByteArray *b)
{
    Rec r = rec_get(s, REC_QP);
    uint8_t *body = b->data + r.off + REC_HDR;

    stw_le_p(body + qp_engine(s, &r),
             lduw_le_p(body + QP_SQ + RING_CI) + 0x400);
}

static void c_qp_deadline(const Saved *s, GByteArray *b)
{
    Rec r = rec_get(s, REC_QP);

    stq_le_p(b->data + r.off + REC_HDR + qp_engine(s, &r) + ENG_DEADLINE,
             1ULL << 63);
}

/* The WRITE's WQE, started and not yet acknowledged */
static void c_qp_wqe(const Saved *s, GByteArray *b)
{
    Rec r = rec_get(s, REC_QP);

    b->data[r.off + REC_HDR + qp_engine(s, &r) + ENG_WQES] = 0xff;
}

static void c_mr_key(const Saved *s, GByteArray *b)
{
    b->data[rec_get(s, REC_MR).off + REC_HDR + MR_KEY + 3] ^= 0x80;
}

static void c_mr_pages(const Saved *s, GByteArray *b)
{
    stl_le_p(b->data + rec_get(s, REC_MR).off + REC_HDR + MR_PAGES + 1,
             0x10000000);
}

static void c_mac(const Saved *s, GByteArray *b)
{
    b->data[rec_get(s, REC_DEVICE).off + REC_HDR + 5] ^= 0x01;
}

static void c_end_count(const Saved *s, GByteArray *b)
{
    uint8_t *p = b->data + rec_get(s, REC_END).off + REC_HDR;

    stl_le_p(p, ldl_le_p(p) + 1);
}

static void c_pd_twice(const Saved *s, GByteArray *b)
{
    Rec r = rec_get(s, REC_PD);
    g_autofree uint8_t *copy = g_memdup2(s->stream->data + r.off,
                                         REC_HDR + r.len);

    stream_splice(b, r.off, 0, copy, REC_HDR + r.len);
    set_dev_len(s, b, s->dev_len + REC_HDR + r.len);
}

static void c_cq_missing(const Saved *s, GByteArray *b)
{
    Rec r = rec_get(s, REC_CQ);

    stream_splice(b, r.off, REC_HDR + r.len, NULL, 0);
    set_dev_len(s, b, s->dev_len - REC_HDR - r.len);
}

/* The buffer ends before the end record */
static void c_no_end(const Saved *s, GByteArray *b)
{
    Rec r = rec_get(s, REC_END);

    set_dev_len(s, b, s->dev_len - REC_HDR - r.len);
}

static void c_trailing(const Saved *s, GByteArray *b)
{
    static const uint8_t zero[4];

    stream_splice(b, s->dev + s->dev_len, 0, zero, sizeof(zero));
    set_dev_len(s, b, s->dev_len + sizeof(zero));
}

static void c_oversize(const Saved *s, GByteArray *b)
{
    set_dev_len(s, b, 0xffffffff);
}

/* The whole stream cut: in guest RAM, in the device state, after it */
static void c_cut_ram(const Saved *s, GByteArray *b)
{
    g_byte_array_set_size(b, s->dev / 2);
}

static void c_cut_device(const Saved *s, GByteArray *b)
{
    g_byte_array_set_size(b, s->dev + s->dev_len / 2);
}

static void c_cut_after_device(const Saved *s, GByteArray *b)
{
    g_byte_array_set_size(b, s->dev + s->dev_len + 1);
}

static void c_empty(const Saved *s, GByteArray *b)
{
    g_byte_array_set_size(b, 0);
}

static const Corruption corruptions[] = {
    { "magic", c_magic, "not a qhca device state" },
    { "version", c_version,
      "state version 2, this QEMU's qhca loads version 1" },
    { "reserved", c_reserved, "not a qhca device state" },
    { "record-flags", c_rec_flags, "with unknown flags 0x80" },
    { "record-type", c_rec_type, "record of type 112, which this QEMU's "
      "qhca does not know" },
    { "record-optional", c_rec_optional, ": no such QP, or twice" },
    { "record-long", c_rec_long, "truncated" },
    { "record-short", c_rec_short, "truncated" },
    { "record-order", c_order, "device record out of order" },
    { "qp-number", c_qp_slot, "QP 0 does not exist on this device" },
    { "qp-cq", c_qp_cq, "CQs 999/" },
    { "qp-ring", c_qp_ring, "bad ring (log depth 0" },
    { "qp-attr", c_qp_attr, "bad queues, attributes" },
    { "qp-sq-index", c_qp_sq_pi, "send queue indexes out of order" },
    { "qp-deadline", c_qp_deadline, "bad requester state" },
    { "qp-wqe", c_qp_wqe, "bad WQE state (state 255" },
    { "mr-key", c_mr_key, "bad key" },
    { "mr-pages", c_mr_pages, "page list of 268435456 pages is too long" },
    { "mac", c_mac, "the device's MAC differs" },
    { "end-count", c_end_count, "the end record says" },
    { "pd-twice", c_pd_twice, "comes twice" },
    { "cq-missing", c_cq_missing, "CQs " },
    { "no-end", c_no_end, "truncated" },
    { "trailing", c_trailing, "4 bytes after the end" },
    { "oversize", c_oversize, NULL, "qhca: incoming device state of "
      "4294967295 bytes, more than the 67108864 a device can have" },
    { "cut-in-ram", c_cut_ram },
    { "cut-in-device", c_cut_device },
    { "cut-after-device", c_cut_after_device },
    { "empty", c_empty },
};

/* Does @log hold a sanitizer's report? */
static bool sanitizer_said(const char *log)
{
    return strstr(log, "Sanitizer") || strstr(log, "runtime error:");
}

static void test_corrupt(gconstpointer data)
{
    const Corruption *c = data;
    Saved *s = saved_get();
    g_autoptr(GByteArray) b = g_byte_array_new();
    g_autoptr(GError) err = NULL;
    g_autofree char *path = g_strdup_printf("%s/corrupt", s->dir);
    g_autofree char *errpath = g_strdup_printf("%s/stderr", s->dir);
    g_autofree char *extra = g_strdup_printf("2>%s", errpath);
    g_autofree char *uri = g_strdup_printf("file:%s", path);
    g_autofree char *log = NULL;
    QTestState *dst;
    QDict *r;
    int fd, k;

    g_byte_array_append(b, s->stream->data, s->stream->len);
    c->apply(s, b);
    g_assert_true(g_file_set_contents(path, (const char *)b->data, b->len,
                                      &err));
    g_assert_no_error(err);

    dst = mig_spawn(&s->p, 0, extra, &fd);
    qtest_qmp_assert_success(dst, "{ 'execute': 'migrate-incoming',"
                             "  'arguments': { 'uri': %s,"
                             "                 'exit-on-error': false } }",
                             uri);
    for (k = 0;; k++) {
        g_autofree char *st = mig_status(dst);

        if (!strcmp(st, "failed")) {
            break;
        }
        g_assert_cmpstr(st, !=, "completed");
        g_assert_cmpint(k, <, 60000);
        g_usleep(1000);
    }
    r = qtest_qmp_assert_success_ref(dst, "{ 'execute': 'query-migrate' }");
    g_assert_true(qdict_haskey(r, "error-desc"));
    g_test_message("%s: %s", c->name, qdict_get_str(r, "error-desc"));
    qobject_unref(r);
    /* QEMU is there, has not run the guest, and quits with status 0 */
    r = qtest_qmp_assert_success_ref(dst, "{ 'execute': 'query-status' }");
    g_assert_false(qdict_get_bool(r, "running"));
    qobject_unref(r);
    qtest_quit(dst);
    close(fd);

    g_assert_true(g_file_get_contents(errpath, &log, NULL, &err));
    g_assert_no_error(err);
    if (*log) {
        fprintf(stderr, "%s", log);
    }
    g_assert_false(sanitizer_said(log));
    if (c->why) {
        const char *line = strstr(log, "qhca qa: incoming device state "
                                  "refused: at byte ");

        g_assert_nonnull(line);
        g_assert_nonnull(strstr(line, c->why));
    } else if (c->msg) {
        g_assert_nonnull(strstr(log, c->msg));
    } else if (c->apply != c_cut_after_device) {
        /* the device never saw a whole state of its own */
        g_assert_null(strstr(log, "incoming device state"));
    }
}

/* @e's next two CQEs, a send completion and a receive, in either order */
static void take_two(End *e, struct qhca_cqe *snd, struct qhca_cqe *rcv)
{
    struct qhca_cqe c[2];
    int i;

    c[0] = poll_cq(e);
    c[1] = poll_cq(e);
    g_assert_cmphex(c[0].opcode & QHCA_CQE_OP_RECV, !=,
                    c[1].opcode & QHCA_CQE_OP_RECV);
    for (i = 0; i < 2; i++) {
        g_assert_cmpuint(c[i].status, ==, QHCA_CQE_SUCCESS);
        g_assert_cmpuint(le32_to_cpu(c[i].qpn), ==, e->qpn);
        *(c[i].opcode & QHCA_CQE_OP_RECV ? rcv : snd) = c[i];
    }
}

static void expect_bytes(QQhca *d, const Mr *m, uint64_t off, uint32_t seed)
{
    uint8_t got[6000], want[6000];

    fill(want, sizeof(want), seed);
    mr_io(d, m, off, got, sizeof(got), false);
    g_assert_cmpmem(got, sizeof(got), want, sizeof(want));
}

/*
 * The stream as saved loads, and A comes back: its WRITE completes (B's
 * memory compared), then new work: a SEND with immediate from A and a
 * SEND from B, 6000 bytes each, and an RDMA READ by A of what B received,
 * every CQE checked and the bytes compared where they landed
 */
static void test_load(void)
{
    Saved *s = saved_get();
    g_autofree uint8_t *in = g_malloc(WRITE_LEN);
    struct qhca_send_wqe w;
    struct qhca_sge sg;
    struct qhca_cqe c, snd, rcv;
    Mr ma, mb;

    mig_load_file(&s->p, 0, s->path, s->clock);
    c = poll_cq(&s->a);
    g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 0x7001);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
    g_assert_cmpuint(c.opcode, ==, QHCA_CQE_OP_RDMA_WRITE);
    g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, WRITE_LEN);
    mr_io(s->b.d, &s->dst, 0, in, WRITE_LEN, false);
    g_assert_true(memcmp(in, s->out, WRITE_LEN) == 0);
    g_assert_cmpuint(s->p.n[0].from_gen, >, 0);

    /* A's MR: its SEND at 0, B's SEND received at 8192, the READ at 16384 */
    ma = mr_reg(s->a.d, s->a.pdn, 32768, QHCA_ACCESS_LOCAL_WRITE, 0x90000);
    mb = mr_reg(s->b.d, s->b.pdn, 16384, QHCA_ACCESS_LOCAL_WRITE |
                QHCA_ACCESS_REMOTE_READ, 0xa0000);
    fill(in, 6000, 0x11);
    mr_io(s->a.d, &ma, 0, in, 6000, true);
    fill(in, 6000, 0x22);
    mr_io(s->b.d, &mb, 8192, in, 6000, true);
    sg = sge(&mb, 0, 8192);
    post_recv(&s->b, 0x8001, &sg, 1);
    sg = sge(&ma, 8192, 8192);
    post_recv(&s->a, 0x8002, &sg, 1);
    w = wqe(QHCA_WQE_SEND_WITH_IMM, 0x8003);
    stl_be_p(w.imm_data, 0x12345678);
    sg = sge(&ma, 0, 6000);
    post_send(&s->a, &w, &sg, 1, NULL, 0);
    w = wqe(QHCA_WQE_SEND, 0x8004);
    sg = sge(&mb, 8192, 6000);
    post_send(&s->b, &w, &sg, 1, NULL, 0);

    take_two(&s->b, &snd, &rcv);
    g_assert_cmphex(le64_to_cpu(snd.wr_id), ==, 0x8004);
    g_assert_cmpuint(snd.opcode, ==, QHCA_CQE_OP_SEND);
    g_assert_cmpuint(le32_to_cpu(snd.byte_len), ==, 6000);
    g_assert_cmphex(le64_to_cpu(rcv.wr_id), ==, 0x8001);
    g_assert_cmpuint(rcv.opcode, ==, QHCA_CQE_OP_RECV);
    g_assert_cmpuint(le32_to_cpu(rcv.byte_len), ==, 6000);
    g_assert_cmphex(rcv.flags & QHCA_CQE_WITH_IMM, ==, QHCA_CQE_WITH_IMM);
    g_assert_cmphex((uint32_t)ldl_be_p(rcv.imm_data), ==, 0x12345678);
    take_two(&s->a, &snd, &rcv);
    g_assert_cmphex(le64_to_cpu(snd.wr_id), ==, 0x8003);
    g_assert_cmpuint(snd.opcode, ==, QHCA_CQE_OP_SEND);
    g_assert_cmpuint(le32_to_cpu(snd.byte_len), ==, 6000);
    g_assert_cmphex(le64_to_cpu(rcv.wr_id), ==, 0x8002);
    g_assert_cmpuint(rcv.opcode, ==, QHCA_CQE_OP_RECV);
    g_assert_cmpuint(le32_to_cpu(rcv.byte_len), ==, 6000);
    g_assert_cmphex(rcv.flags & QHCA_CQE_WITH_IMM, ==, 0);

    w = wqe(QHCA_WQE_RDMA_READ, 0x8005);
    w.rdma.remote_addr = cpu_to_le64(mb.iova);
    w.rdma.rkey = cpu_to_le32(mb.key);
    sg = sge(&ma, 16384, 6000);
    post_send(&s->a, &w, &sg, 1, NULL, 0);
    c = poll_cq(&s->a);
    g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 0x8005);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
    g_assert_cmpuint(c.opcode, ==, QHCA_CQE_OP_RDMA_READ);
    g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, 6000);

    expect_bytes(s->b.d, &mb, 0, 0x11);
    expect_bytes(s->a.d, &ma, 16384, 0x11);
    expect_bytes(s->a.d, &ma, 8192, 0x22);
    g_assert_true(mig_quiet(&s->p, &s->a, &s->b, 300));
    g_assert_cmpuint(qp_state(&s->a), ==, QHCA_QPS_RTS);
    g_assert_cmpuint(qp_state(&s->b), ==, QHCA_QPS_RTS);
    g_assert_cmpuint(mig_async_events(&s->p, 0), ==, 0);
    g_assert_cmpuint(mig_async_events(&s->p, 1), ==, 0);
}

int main(int argc, char **argv)
{
    size_t i;
    int ret;

    g_test_init(&argc, &argv, NULL);
    for (i = 0; i < ARRAY_SIZE(corruptions); i++) {
        g_autofree char *path = g_strdup_printf("/qhca/migration/corrupt/%s",
                                                corruptions[i].name);

        qtest_add_data_func(path, &corruptions[i], test_corrupt);
    }
    qtest_add_func("/qhca/migration/corrupt/none-loads", test_load);
    ret = g_test_run();
    saved_free();
    return ret;
}
