/*
 * Stand-in for QEMU's "qemu/osdep.h" in host unit tests: the device's plain
 * C files (hw/qhca-roce.c) include it first, as QEMU requires, but use
 * nothing from it beyond the standard headers below.  The POSIX network
 * headers are here because QEMU's osdep.h pulls them in too: a macro of
 * ours that clashes with theirs (IP_TTL did) must fail here as well.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef QHCA_TEST_STUB_OSDEP_H
#define QHCA_TEST_STUB_OSDEP_H

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
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

#endif
