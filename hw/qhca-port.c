/*
 * qhca: a port shared with the guest's NIC (QEMU glue).
 *
 * A net filter ("qhca-port") on the backend of the NIC named by
 * -device qhca,nic=ID.  Of what the backend sends the NIC, it takes the
 * RoCEv2 frames for the device's MAC (qhca_roce_steer()) and hands them to
 * the device; the rest passes.  The device's frames go to the backend as
 * if the NIC had sent them, through the filters before this one, so a
 * filter-dump given on the command line (which comes before the devices)
 * sees both directions of both devices.
 *
 * Why a filter and not a second NIC on the backend: a QEMU backend has one
 * peer, and filters are the net layer's way to look at and take frames on
 * a backend (filter-redirector, filter-mirror, COLO's).  What it costs:
 * a filter cannot hold a backend back, so when the device's receive queue
 * is full its frames are dropped and counted (qhca_core_receive_nowait())
 * where a NIC of its own would make the backend wait.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/error-report.h"
#include "qemu/iov.h"
#include "qapi/error.h"
#include "qom/object_interfaces.h"
#include "hw/qdev-core.h"
#include "net/net.h"
#include "net/filter.h"
#include "standard-headers/linux/virtio_net.h"
#include "qhca-compat.h"
#include "qhca-port.h"
#include "qhca-roce.h"
#include "trace.h"

/*
 * The longest virtio-net header a backend may carry before each frame
 * (tap with a virtio-net peer: 10 or 12 bytes; 20 with a hash report)
 */
#define QHCA_PORT_VNET_HDR_MAX  64

struct QhcaPort {
    NetFilterState parent_obj;

    const QhcaPortOps *ops;     /* NULL: not (or no longer) a device's */
    void *opaque;
    uint8_t mac[6];
};

static ssize_t qhca_port_receive_iov(NetFilterState *nf,
                                     NetClientState *sender, unsigned flags,
                                     const struct iovec *iov, int iovcnt,
                                     NetPacketSent *sent_cb)
{
    QhcaPort *port = QHCA_PORT(nf);
    uint8_t hdr[QHCA_ROCE_STEER_LEN];
    struct virtio_net_hdr vh = { 0 };
    g_autofree uint8_t *copy = NULL;
    const uint8_t *frame;
    size_t vhl, size, n;
    bool csum;

    /* only what the backend sends its NIC; frames to the wire pass */
    if (!port->ops || sender != nf->netdev) {
        return 0;
    }
    /* a tap with a virtio-net peer puts a virtio-net header first */
    vhl = flags & QEMU_NET_PACKET_FLAG_RAW ? 0 :
          qemu_get_vnet_hdr_len(nf->netdev);
    size = iov_size(iov, iovcnt);
    if (vhl) {
        if (vhl < sizeof(vh) || vhl > QHCA_PORT_VNET_HDR_MAX || size < vhl ||
            iov_to_buf(iov, iovcnt, 0, &vh, sizeof(vh)) != sizeof(vh) ||
            vh.gso_type != VIRTIO_NET_HDR_GSO_NONE) {
            return 0;           /* not a frame the device could take */
        }
    }
    n = iov_to_buf(iov, iovcnt, vhl, hdr, sizeof(hdr));
    if (!qhca_roce_steer(hdr, n, port->mac) ||
        !port->ops->accepting(port->opaque)) {
        return 0;
    }
    size -= vhl;
    csum = vh.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM;
    if (iovcnt == 1 && !csum) {
        frame = (const uint8_t *)iov[0].iov_base + vhl;
    } else {
        copy = g_malloc(size);
        iov_to_buf(iov, iovcnt, vhl, copy, size);
        /*
         * a checksum the sender left to the NIC (a Soft-RoCE guest's
         * virtio-net with offloads, over a tap) is finished as the NIC
         * would; one that points outside the frame is left as it is, and
         * the device drops the frame if the checksum is wrong
         */
        if (csum) {
            qhca_roce_finish_csum(copy, size, lduw_le_p(&vh.csum_start),
                                  lduw_le_p(&vh.csum_offset));
        }
        frame = copy;
    }
    trace_qhca_port_rx(size);
    port->ops->receive(port->opaque, frame, size);
    return size + vhl;
}

static void qhca_port_setup(NetFilterState *nf, Error **errp)
{
    QhcaPort *port = QHCA_PORT(nf);

    if (!port->ops) {
        error_setg(errp, "%s is made by -device qhca,nic=ID, not by -object",
                   TYPE_QHCA_PORT);
    }
}

static void qhca_port_cleanup(NetFilterState *nf)
{
    QhcaPort *port = QHCA_PORT(nf);
    const QhcaPortOps *ops = port->ops;

    /* the backend is going (its filters are unparented first) */
    port->ops = NULL;
    if (ops) {
        ops->gone(port->opaque);
    }
}

static void qhca_port_class_init(ObjectClass *oc, const void *data)
{
    NetFilterClass *nfc = NETFILTER_CLASS(oc);

    nfc->setup = qhca_port_setup;
    nfc->cleanup = qhca_port_cleanup;
    nfc->receive_iov = qhca_port_receive_iov;
}

QHCA_CLASS_INIT_COMPAT(qhca_port_class_init);

static const TypeInfo qhca_port_types[] = {
    {
        .name = TYPE_QHCA_PORT,
        .parent = TYPE_NETFILTER,
        .class_init = QHCA_CLASS_INIT(qhca_port_class_init),
        .instance_size = sizeof(QhcaPort),
    },
};

DEFINE_TYPES(qhca_port_types)

/* The network backend of the NIC device @nic_id, and the NIC's MAC */
static NetClientState *qhca_port_backend(const char *nic_id, uint8_t *mac,
                                         Error **errp)
{
    Object *dev = object_resolve_path_component(
        machine_get_container("peripheral"), nic_id);
    g_autofree char *netdev = NULL;
    NetClientState *be;
    NetFilterState *nf;

    if (!dev || !object_dynamic_cast(dev, TYPE_DEVICE)) {
        error_setg(errp, "qhca: nic '%s': no such device (give the NIC an "
                   "id, before the qhca device)", nic_id);
        return NULL;
    }
    if (object_dynamic_cast(dev, "qhca") ||
        !object_property_find(dev, "netdev")) {
        error_setg(errp, "qhca: nic '%s' is not a network card with a "
                   "netdev", nic_id);
        return NULL;
    }
    netdev = object_property_get_str(dev, "netdev", errp);
    if (!netdev) {
        return NULL;
    }
    be = *netdev ? qemu_find_netdev(netdev) : NULL;
    if (!be || !be->peer || be->peer->info->type != NET_CLIENT_DRIVER_NIC) {
        error_setg(errp, "qhca: nic '%s' has no network backend (netdev=)",
                   nic_id);
        return NULL;
    }
    QTAILQ_FOREACH(nf, &be->filters, next) {
        if (object_dynamic_cast(OBJECT(nf), TYPE_QHCA_PORT)) {
            error_setg(errp, "qhca: nic '%s' is already shared with "
                       "another qhca device", nic_id);
            return NULL;
        }
    }
    memcpy(mac, qemu_get_nic(be->peer)->conf->macaddr.a, 6);
    return be;
}

QhcaPort *qhca_port_new(Object *owner, const char *nic_id, uint8_t *mac,
                        const QhcaPortOps *ops, void *opaque, Error **errp)
{
    static const uint8_t zero[6];
    NetClientState *be;
    uint8_t nic_mac[6];
    QhcaPort *port;
    Object *obj;

    be = qhca_port_backend(nic_id, nic_mac, errp);
    if (!be) {
        return NULL;
    }
    if (!memcmp(mac, zero, 6)) {
        memcpy(mac, nic_mac, 6);
    } else if (memcmp(mac, nic_mac, 6)) {
        warn_report("qhca: mac %02x:%02x:%02x:%02x:%02x:%02x is not nic "
                    "'%s''s %02x:%02x:%02x:%02x:%02x:%02x: the guest driver "
                    "pairs the device with the netdev of its own MAC",
                    mac[0], mac[1], mac[2], mac[3], mac[4], mac[5], nic_id,
                    nic_mac[0], nic_mac[1], nic_mac[2], nic_mac[3],
                    nic_mac[4], nic_mac[5]);
    }

    obj = object_new(TYPE_QHCA_PORT);
    port = QHCA_PORT(obj);
    port->ops = ops;
    port->opaque = opaque;
    memcpy(port->mac, mac, 6);
    object_property_add_child(owner, "port", obj);
    object_unref(obj);
    if (!object_property_set_str(obj, "netdev", be->name, errp) ||
        !user_creatable_complete(USER_CREATABLE(obj), errp)) {
        port->ops = NULL;
        object_unparent(obj);
        return NULL;
    }
    trace_qhca_port_new(nic_id, be->name);
    return port;
}

void qhca_port_free(QhcaPort *port)
{
    port->ops = NULL;
    object_unparent(OBJECT(port));
}

void qhca_port_send(QhcaPort *port, const uint8_t *frame, size_t len)
{
    static const uint8_t no_offload[QHCA_PORT_VNET_HDR_MAX];
    NetFilterState *nf = NETFILTER(port);
    struct iovec iov[2];
    int vhl;

    /*
     * As the NIC sends: through the filters before this one (towards the
     * backend they run from the last to the first), then to the backend.
     * Without a NIC (unplugged) nothing goes out.  A backend that takes a
     * virtio-net header before each frame gets one that asks for nothing
     * (no checksum to finish, no segmentation).
     */
    if (!nf->netdev || !nf->netdev->peer) {
        return;
    }
    vhl = qemu_get_vnet_hdr_len(nf->netdev);
    if (vhl < 0 || vhl > QHCA_PORT_VNET_HDR_MAX) {
        return;
    }
    iov[0].iov_base = (void *)no_offload;
    iov[0].iov_len = vhl;
    iov[1].iov_base = (void *)frame;
    iov[1].iov_len = len;
    qemu_netfilter_pass_to_next(nf->netdev->peer, 0, vhl ? iov : iov + 1,
                                vhl ? 2 : 1, nf);
}

bool qhca_port_link_up(QhcaPort *port)
{
    NetClientState *be = NETFILTER(port)->netdev;

    return be && !be->link_down && be->peer && !be->peer->link_down;
}
