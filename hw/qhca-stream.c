/*
 * qhca device logic: the byte stream of the device's saved state.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qhca-stream.h"

void qhca_w_bytes(QhcaStreamW *w, const void *p, size_t len)
{
    g_byte_array_append(w->buf, p, len);
}

void qhca_w_u8(QhcaStreamW *w, uint8_t v)
{
    qhca_w_bytes(w, &v, 1);
}

void qhca_w_u16(QhcaStreamW *w, uint16_t v)
{
    uint8_t b[2];

    stw_le_p(b, v);
    qhca_w_bytes(w, b, sizeof(b));
}

void qhca_w_u32(QhcaStreamW *w, uint32_t v)
{
    uint8_t b[4];

    stl_le_p(b, v);
    qhca_w_bytes(w, b, sizeof(b));
}

void qhca_w_u64(QhcaStreamW *w, uint64_t v)
{
    uint8_t b[8];

    stq_le_p(b, v);
    qhca_w_bytes(w, b, sizeof(b));
}

/* A record header: type, flags, 2 reserved bytes, the payload's length */
void qhca_w_begin(QhcaStreamW *w, uint8_t type, uint8_t flags)
{
    w->rec = w->buf->len;
    qhca_w_u8(w, type);
    qhca_w_u8(w, flags);
    qhca_w_u16(w, 0);
    qhca_w_u32(w, 0);
}

void qhca_w_end(QhcaStreamW *w)
{
    stl_le_p(w->buf->data + w->rec + 4, w->buf->len - w->rec - 8);
}

bool qhca_r_ok(const QhcaStreamR *r)
{
    return !*r->failed;
}

bool qhca_r_fail(QhcaStreamR *r, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (*r->failed) {
        return false;
    }
    *r->failed = true;
    n = snprintf(r->why, QHCA_STREAM_WHY_LEN, "at byte %zu: ",
                 r->base + r->off);
    if (n < 0 || n >= QHCA_STREAM_WHY_LEN) {
        return false;
    }
    va_start(ap, fmt);
    vsnprintf(r->why + n, QHCA_STREAM_WHY_LEN - n, fmt, ap);
    va_end(ap);
    return false;
}

static const uint8_t *r_take(QhcaStreamR *r, size_t len)
{
    const uint8_t *p;

    if (*r->failed) {
        return NULL;
    }
    if (len > r->len - r->off) {
        qhca_r_fail(r, "truncated (%zu more bytes wanted, %zu left)", len,
                    r->len - r->off);
        return NULL;
    }
    p = r->p + r->off;
    r->off += len;
    return p;
}

void qhca_r_bytes(QhcaStreamR *r, void *p, size_t len)
{
    const uint8_t *s = r_take(r, len);

    if (s) {
        memcpy(p, s, len);
    } else {
        memset(p, 0, len);
    }
}

uint8_t qhca_r_u8(QhcaStreamR *r)
{
    const uint8_t *s = r_take(r, 1);

    return s ? *s : 0;
}

uint16_t qhca_r_u16(QhcaStreamR *r)
{
    const uint8_t *s = r_take(r, 2);

    return s ? lduw_le_p(s) : 0;
}

uint32_t qhca_r_u32(QhcaStreamR *r)
{
    const uint8_t *s = r_take(r, 4);

    return s ? ldl_le_p(s) : 0;
}

uint64_t qhca_r_u64(QhcaStreamR *r)
{
    const uint8_t *s = r_take(r, 8);

    return s ? ldq_le_p(s) : 0;
}

QhcaStreamR qhca_r_sub(QhcaStreamR *r, size_t len)
{
    QhcaStreamR sub = *r;
    const uint8_t *p;

    sub.base = r->base + r->off;
    p = r_take(r, len);
    sub.p = p;
    sub.off = 0;
    sub.len = p ? len : 0;
    return sub;
}

bool qhca_r_done(QhcaStreamR *r, const char *what)
{
    if (*r->failed) {
        return false;
    }
    if (r->off != r->len) {
        return qhca_r_fail(r, "%s record has %zu bytes more than it should",
                           what, r->len - r->off);
    }
    return true;
}
