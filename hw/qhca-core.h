/*
 * qhca device logic: the device's entry points, all the glue (qhca.c),
 * the harness and the fuzzer call.  Each counts itself in QhcaCore.busy
 * (see qhca-core.c).
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_QHCA_CORE_H
#define HW_QHCA_CORE_H

#include "qhca-state.h"

void qhca_core_init(QhcaCore *c, const QhcaCoreOps *ops, void *opaque,
                    const uint8_t *mac);
void qhca_core_reset(QhcaCore *c);
void qhca_core_cleanup(QhcaCore *c);
bool qhca_core_busy(const QhcaCore *c);
void qhca_core_stop(QhcaCore *c);
uint32_t qhca_core_reg_read(QhcaCore *c, uint64_t addr);
void qhca_core_reg_write(QhcaCore *c, uint64_t addr, uint32_t val);
void qhca_core_db_write(QhcaCore *c, uint32_t page, uint32_t off,
                        uint32_t val);
void qhca_core_run(QhcaCore *c);
void qhca_core_timer(QhcaCore *c);
bool qhca_core_can_receive(QhcaCore *c);
/* Is the device enabled and taking frames (STATUS.READY)? */
bool qhca_core_ready(const QhcaCore *c);
void qhca_core_receive(QhcaCore *c, const uint8_t *frame, size_t len);
/*
 * A frame from a port that cannot make its sender wait (a port shared with
 * the NIC, hw/qhca-port.c): received as by qhca_core_receive(), or dropped
 * and counted when the receive queue is full (qhca_core_can_receive())
 */
void qhca_core_receive_nowait(QhcaCore *c, const uint8_t *frame, size_t len);
bool qhca_core_loopback(QhcaCore *c, const uint8_t *frame, size_t len);
void qhca_core_link_changed(QhcaCore *c);
/*
 * The device's saved state (qhca-save.c): appended to @out; loaded into a
 * core that is not busy, which is reset first and again if the stream is
 * refused (false, and the reason in *@why unless NULL: g_free() it)
 */
void qhca_core_save(const QhcaCore *c, GByteArray *out);
/* More than a device's state can be (its tables full, the budget used) */
#define QHCA_SAVE_MAX           (64u << 20)
bool qhca_core_load(QhcaCore *c, const uint8_t *buf, size_t len, char **why);

#endif
