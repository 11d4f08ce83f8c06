/*
 * Trace events and guest-error logs of the device logic in host builds.
 *
 * QHCA_TRACE=1      print every trace event to stderr as it happens
 * QHCA_TRACE=ring   keep the last HX_TRACE_RING events; a harness finding
 *                   (or a sanitizer report, in the fuzzer) prints them
 * QHCA_LOG=1        print the device's LOG_GUEST_ERROR messages to stderr
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "harness.h"

#define HX_TRACE_RING   512
#define HX_TRACE_LEN    160

int qhca_trace_enabled;
int qhca_stub_log_mask;

static bool trace_ring;
static char ring[HX_TRACE_RING][HX_TRACE_LEN];
static unsigned ring_next;

void hx_trace_init(void)
{
    const char *t = getenv("QHCA_TRACE");
    const char *l = getenv("QHCA_LOG");

    qhca_trace_enabled = t && *t && strcmp(t, "0");
    trace_ring = qhca_trace_enabled && !strcmp(t, "ring");
    qhca_stub_log_mask = l && *l && strcmp(l, "0") ? LOG_GUEST_ERROR : 0;
}

void qhca_trace_emit(const char *name, const char *fmt, ...)
{
    char *line = trace_ring ? ring[ring_next++ % HX_TRACE_RING] : NULL;
    char buf[HX_TRACE_LEN];
    int n;
    va_list ap;

    if (!line) {
        line = buf;
    }
    n = MIN(snprintf(line, HX_TRACE_LEN, "%s ", name), HX_TRACE_LEN - 1);
    va_start(ap, fmt);
    vsnprintf(line + n, HX_TRACE_LEN - n, fmt, ap);
    va_end(ap);
    if (!trace_ring) {
        fprintf(stderr, "%s\n", line);
    }
}

void hx_trace_dump(void)
{
    unsigned i, n = MIN(ring_next, HX_TRACE_RING);

    if (!trace_ring) {
        return;
    }
    fprintf(stderr, "==qhca-harness== last %u trace events:\n", n);
    for (i = ring_next - n; i != ring_next; i++) {
        fprintf(stderr, "  %s\n", ring[i % HX_TRACE_RING]);
    }
}

void qhca_stub_log(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
}
