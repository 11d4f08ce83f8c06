/*
 * Trace events and guest-error logs of the device logic in the engine
 * bench: off (the generated trace_NAME() stand-ins test qhca_trace_enabled
 * and do nothing), as a QEMU built with the default trace backend and no
 * event enabled.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "trace.h"

int qhca_trace_enabled;
int qhca_stub_log_mask;

void qhca_trace_emit(const char *name, const char *fmt, ...)
{
}

void qhca_stub_log(const char *fmt, ...)
{
}
