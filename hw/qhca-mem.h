/*
 * qhca device logic: page lists, rings and host queues in guest memory, and
 * the budget of host memory the device keeps for guest-created objects
 * (QHCA_PAGE_BUDGET units: page list entries and engine state).
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_QHCA_MEM_H
#define HW_QHCA_MEM_H

#include "qhca-state.h"

/* Take @units of the budget; false (and a trace event) if they do not fit */
bool qhca_budget_charge(QhcaCore *c, uint32_t units);
void qhca_budget_release(QhcaCore *c, uint32_t units);

int qhca_pages_load(QhcaCore *c, const struct qhca_pbl_desc *d,
                    uint64_t min_bytes, bool queue, QhcaPages *p);
void qhca_pages_free(QhcaCore *c, QhcaPages *p);
bool qhca_pages_restore(QhcaCore *c, QhcaPages *p, uint8_t shift,
                        uint32_t n, uint64_t *addr, uint64_t min_bytes,
                        bool queue);

int qhca_ring_init(QhcaCore *c, QhcaRing *r, const struct qhca_pbl_desc *d,
                   uint32_t log_depth, uint32_t log_stride);
bool qhca_ring_entry_addr(const QhcaRing *r, uint32_t idx, uint64_t *addr);
bool qhca_write_entry(QhcaCore *c, uint64_t addr, const void *entry,
                      size_t size, size_t owner_off);
bool qhca_ring_produce(QhcaCore *c, QhcaRing *r, void *entry, size_t size,
                       size_t owner_off);
bool qhca_ring_full(const QhcaRing *r);
bool qhca_ci_valid(uint16_t pi, uint16_t old_ci, uint16_t new_ci);

/* Host queues (QhcaHostQueue) of @esize-byte entries */
bool qhca_hostq_regs_ok(const QhcaHostQueue *q, uint32_t max_log_depth);
uint64_t qhca_hostq_addr(const QhcaHostQueue *q, uint16_t idx,
                         uint32_t esize);
bool qhca_hostq_full(const QhcaHostQueue *q);
bool qhca_hostq_produce(QhcaCore *c, QhcaHostQueue *q, void *entry,
                        size_t size, size_t owner_off, uint32_t esize);
/* Both device-written host queues interrupt on QHCA_MSIX_VEC_ASYNC */
void qhca_hostq_notify(QhcaCore *c, QhcaHostQueue *q);

#endif
