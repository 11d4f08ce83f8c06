/*
 * qhca: the QEMU APIs that differ between the QEMU versions the device
 * builds in (docs/platform.md, "The device in your own QEMU tree").
 *
 * The device's sources are written to QEMU's current API (10.1 and later:
 * the pinned 10.0 and Debian's newest QEMU are checked, the latter by
 * scripts/qemu-compat-check); this header maps that API onto 10.0.  It is
 * the only place that tests QEMU's version.  Include it after
 * "qemu/osdep.h", which gives config-host.h's QEMU_VERSION_MAJOR/MINOR.
 *
 *   QOM class_init            10.1+: void fn(ObjectClass *, const void *data)
 *                             10.0:  void fn(ObjectClass *, void *data)
 *   TypeInfo.interfaces       10.1+: const InterfaceInfo *
 *                             10.0:  InterfaceInfo *
 *
 * A QOM type is then written as
 *
 *     static void foo_class_init(ObjectClass *klass, const void *data)
 *     {
 *         ...
 *     }
 *     QHCA_CLASS_INIT_COMPAT(foo_class_init);
 *
 *     static const TypeInfo foo_types[] = {
 *         {
 *             .name = TYPE_FOO,
 *             .parent = TYPE_BAR,
 *             .class_init = QHCA_CLASS_INIT(foo_class_init),
 *             .interfaces = QHCA_INTERFACES({ INTERFACE_PCIE_DEVICE }, { }),
 *         },
 *     };
 *     DEFINE_TYPES(foo_types)
 *
 * (DEFINE_TYPES is in every QEMU we build in and needs no mapping.)
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef QHCA_COMPAT_H
#define QHCA_COMPAT_H

#include "qom/object.h"

#ifndef QEMU_VERSION_MAJOR
#error "qhca-compat.h needs config-host.h: include qemu/osdep.h first"
#endif

/* Is the QEMU being built MAJOR.MINOR or newer? */
#define QHCA_QEMU_AT_LEAST(major, minor)                                    \
    (QEMU_VERSION_MAJOR > (major) ||                                        \
     (QEMU_VERSION_MAJOR == (major) && QEMU_VERSION_MINOR >= (minor)))

#if QHCA_QEMU_AT_LEAST(10, 1)

#define QHCA_CLASS_INIT(fn)             (fn)
#define QHCA_CLASS_INIT_COMPAT(fn)      QEMU_BUILD_BUG_ON(0)
#define QHCA_INTERFACES(...)            ((const InterfaceInfo[]) { __VA_ARGS__ })

#else

/*
 * 10.0's TypeInfo.class_init takes a void *: a wrapper of that type calls
 * the const void * function (a cast of the function pointer instead would
 * call it through an incompatible type).
 */
#define QHCA_CLASS_INIT(fn)             fn##_qemu10_0
#define QHCA_CLASS_INIT_COMPAT(fn)                                          \
    static void fn##_qemu10_0(ObjectClass *klass, void *data)               \
    {                                                                       \
        fn(klass, data);                                                    \
    }                                                                       \
    QEMU_BUILD_BUG_ON(0)
#define QHCA_INTERFACES(...)            ((InterfaceInfo[]) { __VA_ARGS__ })

#endif

#endif /* QHCA_COMPAT_H */
