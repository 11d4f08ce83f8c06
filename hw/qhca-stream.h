/*
 * qhca device logic: the byte stream the device's saved state is written
 * to and read from (qhca-save.c, docs/hardware.md "Saved state"): integers
 * little-endian, in records of a type and a length.  A reader never reads
 * beyond its buffer; the first problem stops it and is kept, with where it
 * was found, for the error the migration fails with.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_QHCA_STREAM_H
#define HW_QHCA_STREAM_H

#include "qhca-state.h"

typedef struct QhcaStreamW {
    GByteArray *buf;
    size_t rec;                 /* where the open record's header is */
} QhcaStreamW;

void qhca_w_u8(QhcaStreamW *w, uint8_t v);
void qhca_w_u16(QhcaStreamW *w, uint16_t v);
void qhca_w_u32(QhcaStreamW *w, uint32_t v);
void qhca_w_u64(QhcaStreamW *w, uint64_t v);
void qhca_w_bytes(QhcaStreamW *w, const void *p, size_t len);
/* A record of @type; qhca_w_end() writes its length */
void qhca_w_begin(QhcaStreamW *w, uint8_t type, uint8_t flags);
void qhca_w_end(QhcaStreamW *w);

#define QHCA_STREAM_WHY_LEN     160

typedef struct QhcaStreamR {
    const uint8_t *p;
    size_t len;
    size_t off;
    size_t base;                /* offset of p in the whole stream */
    bool *failed;               /* shared by a reader and its records */
    char *why;                  /* QHCA_STREAM_WHY_LEN bytes, shared */
} QhcaStreamR;

/* Each returns 0 once the reader has failed (or runs out: it fails) */
uint8_t qhca_r_u8(QhcaStreamR *r);
uint16_t qhca_r_u16(QhcaStreamR *r);
uint32_t qhca_r_u32(QhcaStreamR *r);
uint64_t qhca_r_u64(QhcaStreamR *r);
void qhca_r_bytes(QhcaStreamR *r, void *p, size_t len);
bool qhca_r_ok(const QhcaStreamR *r);
/* Fail with a reason (the first failure is kept); returns false */
bool G_GNUC_PRINTF(2, 3) qhca_r_fail(QhcaStreamR *r, const char *fmt, ...);
/* The next @len bytes as a reader of their own (sharing the failure) */
QhcaStreamR qhca_r_sub(QhcaStreamR *r, size_t len);
/* A record's reader read all of it (a longer record fails) */
bool qhca_r_done(QhcaStreamR *r, const char *what);

#endif
