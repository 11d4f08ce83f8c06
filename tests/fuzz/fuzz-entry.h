/*
 * The entry points libFuzzer calls (see the libFuzzer documentation).
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef QHCA_FUZZ_ENTRY_H
#define QHCA_FUZZ_ENTRY_H

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
