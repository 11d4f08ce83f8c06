/*
 * Stand-in for QEMU's "qemu/osdep.h" when the device logic (every
 * hw/qhca-*.c except the QEMU glue hw/qhca.c) is built on the host, for the
 * two-device harness (tests/harness/) and the fuzzer (tests/fuzz/).
 *
 * It provides what QEMU's osdep.h provides to those files: the standard and
 * POSIX headers, GLib, and QEMU's small utility macros.  Anything the device
 * files use from other QEMU headers has its own stand-in next to this one
 * (qemu/log.h, qemu/bswap.h, qemu/host-utils.h).
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef QHCA_HARNESS_STUB_OSDEP_H
#define QHCA_HARNESS_STUB_OSDEP_H

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>
#include <glib.h>

#ifndef MIN
#define MIN(a, b) (((a) < (b)) ? (a) : (b))
#endif
#ifndef MAX
#define MAX(a, b) (((a) > (b)) ? (a) : (b))
#endif
#define MIN_CONST(a, b) MIN(a, b)
#define MAX_CONST(a, b) MAX(a, b)

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(x) (sizeof(x) / sizeof((x)[0]))
#endif
#define DIV_ROUND_UP(n, d) (((n) + (d) - 1) / (d))
#define ROUND_DOWN(n, d) ((n) & -(0 ? (n) : (d)))
#define ROUND_UP(n, d) ROUND_DOWN((n) + (d) - 1, (d))
#define QEMU_ALIGN_DOWN(n, m) ((n) / (m) * (m))
#define QEMU_ALIGN_UP(n, m) QEMU_ALIGN_DOWN((n) + (m) - 1, (m))
#define QEMU_IS_ALIGNED(n, m) (((n) % (m)) == 0)

#ifndef container_of
#define container_of(ptr, type, member) \
    ((type *)((char *)(ptr) - offsetof(type, member)))
#endif

#define QEMU_BUILD_BUG_ON(x) _Static_assert(!(x), "not expecting: " #x)
#define QEMU_BUILD_BUG_MSG(x, msg) _Static_assert(!(x), msg)
#define QEMU_PACKED __attribute__((packed))
#define QEMU_ALWAYS_INLINE __attribute__((always_inline))
#define QEMU_FALLTHROUGH __attribute__((fallthrough))
#define QEMU_NORETURN __attribute__((noreturn))
#define QEMU_WARN_UNUSED_RESULT __attribute__((warn_unused_result))
#define G_NORETURN_STUB __attribute__((noreturn))

#ifndef likely
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#endif

#endif
