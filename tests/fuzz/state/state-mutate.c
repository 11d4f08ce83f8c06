/*
 * The saved-state target's mutator: libFuzzer's own mutations know
 * nothing of records, so most of what they make is refused by the first
 * length or count that no longer matches (a case worth having, but not
 * all the time).  This one takes the stream apart into its records
 * (hw/qhca-save.c: a header, then records of a type, flags, two reserved
 * bytes and a 32-bit length) and changes one of them: its payload by
 * libFuzzer's mutations (the record's length follows), a word of it set to
 * a value the loader's checks compare with, the record dropped, doubled,
 * moved, its optional flag flipped, or taken from another input (the
 * cross-over); then the end record's count is made right again.  One time
 * in eight it leaves the structure to libFuzzer, and now and then it
 * changes the scenario or the plan byte.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "state-fuzz.h"

#define HDR_LEN         2       /* scenario, plan */
#define STREAM_HDR      8       /* magic, version, reserved */
#define REC_HDR         8
#define REC_END         255
#define MAX_RECS        4096

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
                               unsigned int seed);
size_t LLVMFuzzerCustomCrossOver(const uint8_t *data1, size_t size1,
                                 const uint8_t *data2, size_t size2,
                                 uint8_t *out, size_t max_out_size,
                                 unsigned int seed);

typedef struct Rec {
    size_t off;                 /* of its header, in the input */
    size_t len;                 /* header and payload */
} Rec;

typedef struct Recs {
    Rec r[MAX_RECS];
    unsigned n;
    size_t end;                 /* where the records stop */
} Recs;

static uint32_t rnd(uint32_t *s)
{
    *s = *s * 1103515245 + 12345;
    return *s >> 8;
}

/* The records of an input; false if it is not made of records */
static bool parse(const uint8_t *d, size_t size, Recs *rs)
{
    size_t off = HDR_LEN + STREAM_HDR;

    rs->n = 0;
    if (size < off) {
        return false;
    }
    while (off + REC_HDR <= size && rs->n < MAX_RECS) {
        size_t len = ldl_le_p(d + off + 4);

        if (len > size - off - REC_HDR) {
            break;
        }
        rs->r[rs->n].off = off;
        rs->r[rs->n].len = REC_HDR + len;
        rs->n++;
        off += REC_HDR + len;
    }
    rs->end = off;
    return rs->n > 0;
}

/* The end record's count made the number of records before it again */
static void fix_end(uint8_t *d, size_t size)
{
    Recs *rs = g_new(Recs, 1);
    unsigned i;

    if (parse(d, size, rs)) {
        for (i = 0; i < rs->n; i++) {
            const Rec *r = &rs->r[i];

            if (d[r->off] == REC_END && r->len == REC_HDR + 4) {
                stl_le_p(d + r->off + REC_HDR, i);
                break;
            }
        }
    }
    g_free(rs);
}

/* Replace bytes [at, at + old) of @d (@size) with @n bytes of @p */
static size_t splice(uint8_t *d, size_t size, size_t max, size_t at,
                     size_t old, const uint8_t *p, size_t n)
{
    if (size - old + n > max) {
        return 0;
    }
    memmove(d + at + n, d + at + old, size - at - old);
    if (n) {
        memcpy(d + at, p, n);
    }
    return size - old + n;
}

static const uint64_t interesting[] = {
    0, 1, 2, 3, 7, 8, 15, 16, 31, 32, 63, 64, 255, 256, 4095, 4096, 4097,
    0x7fff, 0x8000, 0xffff, 0x10000, 0xfffff, 0x100000, 0xffffff, 0x1000000,
    0x7fffffff, 0x80000000, 0xffffffff, 0x100000000ULL,
    HX_RAM_SIZE - 4096, HX_RAM_SIZE, HX_REG_BAR_ADDR, HX_DB_BAR_ADDR,
    HX_PORT_ADDR, HX_PORT_ADDR + HX_PORT_BRCTL, HX_CTRL_BASE,
    0x7fffffffffffffffULL, 0x8000000000000000ULL, UINT64_MAX,
    UINT64_MAX - 1,
};

/* A 1, 2, 4 or 8-byte field of payload @p (@len) set to a value */
static void set_word(uint8_t *p, size_t len, uint32_t *s)
{
    static const unsigned widths[] = { 1, 2, 4, 8 };
    unsigned w = widths[rnd(s) % 4];
    uint64_t v = interesting[rnd(s) % ARRAY_SIZE(interesting)];
    size_t at;

    if (len < w) {
        return;
    }
    at = rnd(s) % (len - w + 1);
    switch (rnd(s) % 4) {
    case 0:
        v = ldq_le_p(p + at) + 1;
        break;
    case 1:
        v = ldq_le_p(p + at) - 1;
        break;
    default:
        break;
    }
    switch (w) {
    case 1:
        p[at] = v;
        break;
    case 2:
        stw_le_p(p + at, v);
        break;
    case 4:
        stl_le_p(p + at, v);
        break;
    default:
        stq_le_p(p + at, v);
        break;
    }
}

static size_t mutate(uint8_t *d, size_t size, size_t max, uint32_t *s)
{
    g_autofree Recs *rs = g_new(Recs, 1);
    g_autofree uint8_t *tmp = NULL;
    const Rec *r;
    size_t n, cap, plen;
    unsigned i, j, op;

    switch (rnd(s) % 32) {
    case 0:
        d[0] = rnd(s);
        return size;
    case 1:
        d[1] ^= 1u << (rnd(s) % 8);
        return size;
    case 2:
    case 3:
        return LLVMFuzzerMutate(d, size, max);
    }
    if (!parse(d, size, rs)) {
        return LLVMFuzzerMutate(d, size, max);
    }
    i = rnd(s) % rs->n;
    r = &rs->r[i];
    op = rnd(s) % 32;
    switch (op) {
    case 0:                                     /* dropped */
        n = splice(d, size, max, r->off, r->len, NULL, 0);
        break;
    case 1:                                     /* doubled */
        tmp = g_memdup2(d + r->off, r->len);
        n = splice(d, size, max, r->off, 0, tmp, r->len);
        break;
    case 2:                                     /* moved */
        j = rnd(s) % rs->n;
        tmp = g_memdup2(d + r->off, r->len);
        n = splice(d, size, max, r->off, r->len, NULL, 0);
        if (n) {
            size_t at = rs->r[j].off;

            if (at > r->off) {
                at -= MIN(at - r->off, r->len);
            }
            n = splice(d, n, max, MIN(at, n), 0, tmp, r->len);
        }
        break;
    case 3:                                     /* optional or not */
        d[r->off + 1] ^= 1;
        n = size;
        break;
    case 4 ... 13:
        set_word(d + r->off + REC_HDR, r->len - REC_HDR, s);
        n = size;
        break;
    default:                                    /* payload by libFuzzer */
        plen = r->len - REC_HDR;
        if (!plen) {
            return LLVMFuzzerMutate(d, size, max);
        }
        /* mostly as long as it was; sometimes room to grow, within @max */
        cap = op < 28 ? plen : MAX(MIN(2 * plen + 64, max - (size - plen)),
                                   plen);
        tmp = g_malloc(cap);
        memcpy(tmp, d + r->off + REC_HDR, plen);
        n = LLVMFuzzerMutate(tmp, plen, cap);
        if (n < plen && op < 28) {
            /* kept as long: what was cut off stays as it was */
            n = plen;
        }
        stl_le_p(d + r->off + 4, n);
        n = splice(d, size, max, r->off + REC_HDR, plen, tmp, n);
        break;
    }
    if (!n) {
        return LLVMFuzzerMutate(d, size, max);
    }
    fix_end(d, n);
    return n;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
                               unsigned int seed)
{
    uint32_t s = seed;

    if (rnd(&s) % 8 == 0) {
        return LLVMFuzzerMutate(data, size, max_size);
    }
    return mutate(data, size, max_size, &s);
}

/* The object number a record starts with (GID and group: a byte) */
static unsigned rec_key(const uint8_t *d, const Rec *r)
{
    uint8_t type = d[r->off];
    size_t plen = r->len - REC_HDR;
    const uint8_t *p = d + r->off + REC_HDR;

    if (type == 1 || type == 12 || type == REC_END || !plen) {
        return type << 16;
    }
    if (type == 2 || type == 11 || plen < 2) {
        return type << 16 | p[0];
    }
    return type << 16 | lduw_le_p(p);
}

/*
 * The cross-over: input 1 with one of its records replaced by input 2's
 * of the same type and object number (mostly), or of the same type, or
 * one of input 2's added
 */
size_t LLVMFuzzerCustomCrossOver(const uint8_t *data1, size_t size1,
                                 const uint8_t *data2, size_t size2,
                                 uint8_t *out, size_t max_out_size,
                                 unsigned int seed)
{
    g_autofree Recs *r1 = g_new(Recs, 1);
    g_autofree Recs *r2 = g_new(Recs, 1);
    uint32_t s = seed;
    const Rec *from;
    unsigned i, k, same_key;
    size_t n;

    if (size1 > max_out_size || !parse(data1, size1, r1) ||
        !parse(data2, size2, r2)) {
        return 0;
    }
    memcpy(out, data1, size1);
    from = &r2->r[rnd(&s) % r2->n];
    same_key = rnd(&s) % 4;
    for (k = 0; k < r1->n; k++) {
        i = (k + rnd(&s)) % r1->n;
        if (same_key ? rec_key(data1, &r1->r[i]) == rec_key(data2, from) :
                       data1[r1->r[i].off] == data2[from->off]) {
            n = splice(out, size1, max_out_size, r1->r[i].off,
                       r1->r[i].len, data2 + from->off, from->len);
            if (n) {
                fix_end(out, n);
            }
            return n;
        }
    }
    if (rnd(&s) % 4) {
        return 0;
    }
    i = rnd(&s) % r1->n;
    n = splice(out, size1, max_out_size, r1->r[i].off, 0, data2 + from->off,
               from->len);
    if (n) {
        fix_end(out, n);
    }
    return n;
}
