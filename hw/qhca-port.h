/*
 * qhca: a port shared with the guest's NIC (QEMU glue).
 *
 * With -device qhca,nic=ID the device has no network backend of its own:
 * a net filter on the NIC's backend (this file) takes the RoCEv2 frames for
 * the device's MAC out of what the backend sends the NIC, and puts the
 * device's frames on the backend as if the NIC had sent them.  One MAC on
 * one backend, as a RoCE NIC has on one switch port (docs/hardware.md,
 * "One port with the guest's NIC").
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_QHCA_PORT_H
#define HW_QHCA_PORT_H

#include "net/filter.h"

#define TYPE_QHCA_PORT "qhca-port"
OBJECT_DECLARE_SIMPLE_TYPE(QhcaPort, QHCA_PORT)

typedef struct QhcaPortOps {
    /* is the device taking frames now (enabled by its driver)? */
    bool (*accepting)(void *opaque);
    /* a RoCEv2 frame for the device, len bytes; not kept after the call */
    void (*receive)(void *opaque, const uint8_t *frame, size_t len);
    /*
     * the backend is being deleted (netdev_del): the port is gone after
     * this returns and must not be used again
     */
    void (*gone)(void *opaque);
} QhcaPortOps;

/*
 * A port on the network backend of the NIC device whose id is nic_id,
 * as a child "port" of owner.  mac is set to the NIC's MAC if it is all
 * zero; a different MAC is kept, with a warning.
 */
QhcaPort *qhca_port_new(Object *owner, const char *nic_id, uint8_t *mac,
                        const QhcaPortOps *ops, void *opaque, Error **errp);
/* Detach and free the port: no callback after this */
void qhca_port_free(QhcaPort *port);
/* Send a frame out through the backend (dropped when the NIC is gone) */
void qhca_port_send(QhcaPort *port, const uint8_t *frame, size_t len);
/* Are the backend and the NIC there, with their links up? */
bool qhca_port_link_up(QhcaPort *port);

#endif
