/*
 * QEMU's build links include/qhca_hw.h into its tree as hw/qhca/qhca_hw.h;
 * the host builds of the device logic find it here.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "../../../../../include/qhca_hw.h"
