/*
 * Stand-in for QEMU's "qemu/log.h" (see qemu/osdep.h here): guest-error
 * messages are swallowed, or printed to stderr when QHCA_LOG is set in the
 * environment.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef QHCA_HARNESS_STUB_LOG_H
#define QHCA_HARNESS_STUB_LOG_H

#define CPU_LOG_TB_OUT_ASM      (1 << 0)
#define LOG_GUEST_ERROR         (1 << 11)
#define LOG_UNIMP               (1 << 10)

/* Set from QHCA_LOG by the harness (tests/harness/trace.c) */
extern int qhca_stub_log_mask;

void qhca_stub_log(const char *fmt, ...) G_GNUC_PRINTF(1, 2);

#define qemu_log_mask(mask, ...) \
    do { \
        if (unlikely(qhca_stub_log_mask & (mask))) { \
            qhca_stub_log(__VA_ARGS__); \
        } \
    } while (0)

#define qemu_log(...) qhca_stub_log(__VA_ARGS__)

#endif
