/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Named checks inside a GLib test case, for the host tests whose cases
 * make many checks in sequence (tests/unit/test-qhca-geom.c,
 * test-qhca-opcodes.c, the provider's data-path tests in tests/provider/,
 * through datapath.h, and userlib/dlopen-check.c).
 *
 * unit_check(cond, fmt, ...) prints "# ok - NAME" or "# not ok - NAME", a
 * TAP comment inside the running case, and a failed check fails the case
 * (g_test_fail) without stopping it.  scripts/test.d/unit reports each
 * check as "ok - CASE: NAME" beside the case's own result, so a check that
 * fails is named; meson test sees the cases.
 */
#ifndef QHCA_UNIT_CHECK_H
#define QHCA_UNIT_CHECK_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include <glib.h>

static inline bool G_GNUC_PRINTF(2, 3)
unit_check(bool cond, const char *fmt, ...)
{
	va_list ap;

	printf("# %sok - ", cond ? "" : "not ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!cond)
		g_test_fail();
	return cond;
}

#endif
