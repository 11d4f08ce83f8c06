/*
 * qhca device logic: MR and memory window keys, and access to memory
 * through them.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_QHCA_MR_H
#define HW_QHCA_MR_H

#include "qhca-mem.h"

QhcaMr *qhca_mr_check(QhcaCore *c, uint32_t key, uint32_t pdn,
                      uint32_t access, uint64_t addr, uint64_t len);
QhcaMr *qhca_rkey_check(QhcaCore *c, uint32_t key, uint32_t pdn, uint32_t qpn,
                        uint32_t access, uint64_t addr, uint64_t len,
                        bool whole);
int qhca_mw_bind(QhcaCore *c, uint32_t pdn, uint32_t qpn, uint32_t mw_key,
                 uint32_t new_key, uint32_t mr_lkey, uint64_t addr,
                 uint64_t len, uint32_t access);
/* A window that is bound no more: its MR counts it no more */
void qhca_mw_unbind(QhcaCore *c, QhcaMr *mw);
/* qhca_mr_invalidate()'s @qpn for LOCAL_INV: any QP of the PD */
#define QHCA_ANY_QPN            UINT32_MAX
int qhca_mr_invalidate(QhcaCore *c, uint32_t pdn, uint32_t qpn, uint32_t key);
bool qhca_mr_rw(QhcaCore *c, const QhcaMr *mr, uint64_t addr, void *buf,
                uint64_t len, bool write);
int qhca_mr_fast_reg(QhcaCore *c, uint32_t pdn, uint32_t key, uint32_t access,
                     uint64_t iova, uint64_t length, uint64_t pbl_addr,
                     uint32_t num_pages, uint8_t page_shift);
/* [addr, addr + len) lies in [base, base + size) (64-bit, no overflow) */
bool qhca_range_in(uint64_t base, uint64_t size, uint64_t addr, uint64_t len);

#endif
