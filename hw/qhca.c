/*
 * qhca: a software RDMA host channel adapter (RoCEv2), QEMU glue.
 *
 * QOM, PCI BARs, MSI-X, the NIC on the netdev backend (or the port shared
 * with another NIC, qhca-port.c), the bottom half and the retransmission
 * timer live here; the device logic is in qhca-core.c
 * (registers, commands, objects) and qhca-qp.c (the transport).
 * The hardware contract is include/qhca_hw.h, linked into QEMU's tree as
 * include/hw/qhca/; docs/hardware.md describes it in prose.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/defer-call.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qemu/timer.h"
#include "qapi/error.h"
#include "qemu/error-report.h"
#include "system/runstate.h"
#include "hw/pci/pci_device.h"
#include "hw/pci/pcie.h"
#include "hw/pci/msi.h"
#include "hw/pci/msix.h"
#include "hw/qdev-properties.h"
#include "migration/vmstate.h"
#include "net/net.h"
#include "qom/object.h"
#include "qhca-compat.h"
#include "qhca-core.h"
#include "qhca-port.h"
#include "trace.h"

#define TYPE_QHCA "qhca"
OBJECT_DECLARE_SIMPLE_TYPE(QhcaState, QHCA)

struct QhcaState {
    PCIDevice parent_obj;

    MemoryRegion reg_bar;
    MemoryRegion db_bar;

    NICState *nic;              /* netdev=: a backend of its own */
    NICConf conf;
    char *nic_id;               /* nic=: shares that NIC's backend ... */
    QhcaPort *port;             /* ... through this filter on it */
    bool port_up;               /* the port's link as the core last saw it */

    QEMUBH *bh;
    QEMUTimer *timer;

    uint32_t window_kib;
    bool ecn;
    uint32_t drop_ppm;

    /*
     * Migration: the device logic's saved state (qhca_core_save()), from
     * pre_save to post_save and from the stream to post_load
     */
    uint8_t *mig_buf;
    uint32_t mig_len;
    VMChangeStateEntry *vm_change;
    bool bh_held;               /* the bottom half ran while the VM was */
                                /* stopped: it runs again once it runs */

    QhcaCore core;
};

/*
 * Does [addr, addr + len) touch one of the device's own BARs?  A guest can
 * aim a ring, a page list or an MSI-X message there, so that the device
 * would write its own registers (CTRL.RESET among them) while the engine
 * holds objects.  QEMU's re-entrancy guard blocks such an access while the
 * device is in MMIO, its bottom half or its receive callback; this check
 * refuses it everywhere and counts it as a guest error.  (Addresses are
 * bus addresses: behind an IOMMU they are not compared with the BARs, and
 * QEMU's guard is what remains.)
 */
static bool qhca_hits_own_bar(QhcaState *s, uint64_t addr, uint64_t len)
{
    static const int bars[] = { QHCA_REG_BAR, QHCA_DB_BAR, QHCA_MSIX_BAR };
    PCIDevice *pdev = PCI_DEVICE(s);
    uint64_t last;
    int i;

    if (!len) {
        return false;
    }
    if (addr + (len - 1) < addr) {
        return true;                    /* wraps: never a valid access */
    }
    last = addr + (len - 1);
    for (i = 0; i < ARRAY_SIZE(bars); i++) {
        pcibus_t base = pci_get_bar_addr(pdev, bars[i]);
        pcibus_t size = pdev->io_regions[bars[i]].size;

        if (base != PCI_BAR_UNMAPPED && size &&
            addr <= base + (size - 1) && base <= last) {
            return true;
        }
    }
    return false;
}

static bool qhca_dma_read(void *opaque, uint64_t addr, void *buf,
                          uint64_t len)
{
    QhcaState *s = opaque;

    trace_qhca_dma_read(addr, len);
    if (qhca_hits_own_bar(s, addr, len)) {
        trace_qhca_err_dma_own_bar(addr, len);
        QHCA_GUEST_ERROR(&s->core, dma_read_from_devices_own_bars, addr, len);
        return false;
    }
    return pci_dma_read(PCI_DEVICE(s), addr, buf, len) == MEMTX_OK;
}

static bool qhca_dma_write(void *opaque, uint64_t addr, const void *buf,
                           uint64_t len)
{
    QhcaState *s = opaque;

    trace_qhca_dma_write(addr, len);
    if (qhca_hits_own_bar(s, addr, len)) {
        trace_qhca_err_dma_own_bar(addr, len);
        QHCA_GUEST_ERROR(&s->core, dma_write_devices_own_bars, addr, len);
        return false;
    }
    return pci_dma_write(PCI_DEVICE(s), addr, buf, len) == MEMTX_OK;
}

static void qhca_irq(void *opaque, unsigned vector)
{
    QhcaState *s = opaque;
    PCIDevice *pdev = PCI_DEVICE(s);

    if (!msix_enabled(pdev) || vector >= QHCA_MSIX_VECTORS) {
        return;
    }
    if (!msix_is_masked(pdev, vector)) {
        MSIMessage msg = msix_get_message(pdev, vector);

        if (qhca_hits_own_bar(s, msg.address, 4)) {
            trace_qhca_err_msix_own_bar(vector, msg.address);
            QHCA_GUEST_ERROR(&s->core, msi_x_message_aimed_devices_own_bars,
                             vector, msg.address);
            return;
        }
    }
    msix_notify(pdev, vector);
}

/*
 * A frame for the device itself is looped inside it (queued, received by
 * the next run of the bottom half) and, like every other frame, also handed
 * to the netdev: a capture of the port (filter-dump) shows all the RoCEv2
 * traffic of the device.  Peers drop the copy (not their MAC); if the wire
 * reflects it back, qhca_core_receive() drops it (our source MAC).
 */
static void qhca_tx(void *opaque, const uint8_t *frame, size_t len)
{
    QhcaState *s = opaque;

    trace_qhca_tx_frame(len);
    qhca_core_loopback(&s->core, frame, len);
    if (s->port) {
        qhca_port_send(s->port, frame, len);
    } else if (s->nic) {
        qemu_send_packet(qemu_get_queue(s->nic), frame, len);
    }
}

static bool qhca_link_up(void *opaque)
{
    QhcaState *s = opaque;

    if (s->nic_id) {
        return s->port && qhca_port_link_up(s->port);
    }
    return s->nic && !qemu_get_queue(s->nic)->link_down;
}

/*
 * A shared port's link is the NIC's and its backend's; the net layer tells
 * only them of a change (set_link), so the device looks whenever it runs,
 * which every frame received makes it do
 */
static void qhca_port_poll(QhcaState *s)
{
    bool up;

    if (!s->nic_id) {
        return;
    }
    up = qhca_link_up(s);
    if (up != s->port_up) {
        s->port_up = up;
        trace_qhca_link(up);
        qhca_core_link_changed(&s->core);
    }
}

static void qhca_schedule(void *opaque)
{
    QhcaState *s = opaque;

    qemu_bh_schedule(s->bh);
}

static int64_t qhca_now_ns(void *opaque)
{
    return qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
}

static void qhca_timer_mod(void *opaque, int64_t deadline_ns)
{
    QhcaState *s = opaque;

    if (deadline_ns < 0) {
        timer_del(s->timer);
    } else {
        timer_mod(s->timer, deadline_ns);
    }
}

static void qhca_rx_resume(void *opaque)
{
    QhcaState *s = opaque;

    if (s->nic) {
        qemu_flush_queued_packets(qemu_get_queue(s->nic));
    }
}

static const QhcaCoreOps qhca_core_ops = {
    .dma_read = qhca_dma_read,
    .dma_write = qhca_dma_write,
    .irq = qhca_irq,
    .tx = qhca_tx,
    .link_up = qhca_link_up,
    .schedule = qhca_schedule,
    .now_ns = qhca_now_ns,
    .timer_mod = qhca_timer_mod,
    .rx_resume = qhca_rx_resume,
};

/*
 * The device does nothing while the VM is stopped: what it would send or
 * write then would go beside a saved state already taken (a migration's
 * source after the switch-over, a destination before it runs, a snapshot).
 * The net layer holds received frames meanwhile and the virtual clock, and
 * with it the timer, stands still.
 *
 * A run's frames are one burst (defer_call_begin()/defer_call_end()): a
 * backend that batches its system calls, as -netdev dgram,tx-batch=N does,
 * sends them together when the run ends.
 */
static void qhca_bh(void *opaque)
{
    QhcaState *s = opaque;

    if (!runstate_is_running()) {
        s->bh_held = true;
        return;
    }
    defer_call_begin();
    qhca_port_poll(s);
    qhca_core_run(&s->core);
    defer_call_end();
}

static void qhca_vm_change(void *opaque, bool running, RunState state)
{
    QhcaState *s = opaque;

    if (running && s->bh_held) {
        s->bh_held = false;
        qemu_bh_schedule(s->bh);
    }
}

/* Not re-entrancy guarded: qhca_core_timer() only schedules the bottom half */
static void qhca_timer_cb(void *opaque)
{
    QhcaState *s = opaque;

    qhca_port_poll(s);
    qhca_core_timer(&s->core);
}

static uint64_t qhca_reg_read(void *opaque, hwaddr addr, unsigned size)
{
    QhcaState *s = opaque;
    uint32_t val = qhca_core_reg_read(&s->core, addr);

    trace_qhca_mmio_read(addr, size, val);
    return val;
}

static void qhca_reg_write(void *opaque, hwaddr addr, uint64_t val,
                           unsigned size)
{
    QhcaState *s = opaque;

    trace_qhca_mmio_write(addr, size, val);
    qhca_core_reg_write(&s->core, addr, val);
}

static const MemoryRegionOps qhca_reg_ops = {
    .read = qhca_reg_read,
    .write = qhca_reg_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = {
        .min_access_size = 4,
        .max_access_size = 4,
    },
    .impl = {
        .min_access_size = 4,
        .max_access_size = 4,
    },
};

static uint64_t qhca_db_read(void *opaque, hwaddr addr, unsigned size)
{
    QhcaState *s = opaque;

    QHCA_GUEST_UB(&s->core, read_from_doorbell_page, addr, size);
    return 0;
}

static void qhca_db_write(void *opaque, hwaddr addr, uint64_t val,
                          unsigned size)
{
    QhcaState *s = opaque;

    qhca_core_db_write(&s->core, addr >> QHCA_PAGE_SHIFT,
                       addr & (QHCA_PAGE_SIZE - 1), val);
}

static const MemoryRegionOps qhca_db_ops = {
    .read = qhca_db_read,
    .write = qhca_db_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = {
        .min_access_size = 4,
        .max_access_size = 4,
    },
    .impl = {
        .min_access_size = 4,
        .max_access_size = 4,
    },
};

static bool qhca_can_receive(NetClientState *nc)
{
    QhcaState *s = qemu_get_nic_opaque(nc);

    return qhca_core_can_receive(&s->core);
}

static ssize_t qhca_receive(NetClientState *nc, const uint8_t *buf,
                            size_t size)
{
    QhcaState *s = qemu_get_nic_opaque(nc);

    trace_qhca_rx_frame(size);
    qhca_core_receive(&s->core, buf, size);
    return size;
}

static void qhca_set_link_status(NetClientState *nc)
{
    QhcaState *s = qemu_get_nic_opaque(nc);

    trace_qhca_link(qhca_link_up(s));
    qhca_core_link_changed(&s->core);
}

static bool qhca_port_accepting(void *opaque)
{
    QhcaState *s = opaque;

    return qhca_core_ready(&s->core);
}

static void qhca_port_receive(void *opaque, const uint8_t *frame, size_t len)
{
    QhcaState *s = opaque;

    trace_qhca_rx_frame(len);
    qhca_core_receive_nowait(&s->core, frame, len);
}

static void qhca_port_gone(void *opaque)
{
    QhcaState *s = opaque;

    trace_qhca_port_gone();
    s->port = NULL;
    qhca_port_poll(s);
}

static const QhcaPortOps qhca_port_ops = {
    .accepting = qhca_port_accepting,
    .receive = qhca_port_receive,
    .gone = qhca_port_gone,
};

static NetClientInfo qhca_net_info = {
    .type = NET_CLIENT_DRIVER_NIC,
    .size = sizeof(NICState),
    .can_receive = qhca_can_receive,
    .receive = qhca_receive,
    .link_status_changed = qhca_set_link_status,
};

static void qhca_port_detach(QhcaState *s)
{
    if (s->port) {
        qhca_port_free(s->port);
        s->port = NULL;
    }
}

static void qhca_realize(PCIDevice *pdev, Error **errp)
{
    QhcaState *s = QHCA(pdev);
    DeviceState *dev = DEVICE(pdev);
    int i;

    if (s->window_kib < QHCA_WINDOW_MIN / 1024 ||
        s->window_kib > QHCA_WINDOW_LIMIT / 1024) {
        error_setg(errp, "qhca: window-kib must be %u..%u",
                   QHCA_WINDOW_MIN / 1024, QHCA_WINDOW_LIMIT / 1024);
        return;
    }
    if (s->drop_ppm > 1000000) {
        error_setg(errp, "qhca: drop-ppm must be at most 1000000");
        return;
    }
    if (s->nic_id) {
        if (s->conf.peers.ncs[0]) {
            error_setg(errp, "qhca: give nic= (share a NIC's backend) or "
                       "netdev= (a backend of its own), not both");
            return;
        }
        s->port = qhca_port_new(OBJECT(s), s->nic_id, s->conf.macaddr.a,
                                &qhca_port_ops, s, errp);
        if (!s->port) {
            return;
        }
    }
    pdev->config[PCI_INTERRUPT_PIN] = 1;

    memory_region_init_io(&s->reg_bar, OBJECT(s), &qhca_reg_ops, s,
                          "qhca-regs", QHCA_REG_BAR_SIZE);
    pci_register_bar(pdev, QHCA_REG_BAR,
                     PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64, &s->reg_bar);

    memory_region_init_io(&s->db_bar, OBJECT(s), &qhca_db_ops, s,
                          "qhca-doorbells", QHCA_DB_BAR_SIZE);
    pci_register_bar(pdev, QHCA_DB_BAR,
                     PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64, &s->db_bar);

    if (msix_init_exclusive_bar(pdev, QHCA_MSIX_VECTORS, QHCA_MSIX_BAR,
                                errp)) {
        qhca_port_detach(s);
        return;
    }
    for (i = 0; i < QHCA_MSIX_VECTORS; i++) {
        msix_vector_use(pdev, i);
    }

    if (pcie_endpoint_cap_init(pdev, 0x80) < 0) {
        error_setg(errp, "qhca: failed to initialize PCIe capability");
        qhca_port_detach(s);
        msix_unuse_all_vectors(pdev);
        msix_uninit_exclusive_bar(pdev);
        return;
    }

    if (!s->port) {
        qemu_macaddr_default_if_unset(&s->conf.macaddr);
        s->nic = qemu_new_nic(&qhca_net_info, &s->conf,
                              object_get_typename(OBJECT(s)), dev->id,
                              &dev->mem_reentrancy_guard, s);
        qemu_format_nic_info_str(qemu_get_queue(s->nic), s->conf.macaddr.a);
    }

    s->bh = qemu_bh_new_guarded(qhca_bh, s, &dev->mem_reentrancy_guard);
    s->timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, qhca_timer_cb, s);
    qhca_core_init(&s->core, &qhca_core_ops, s, s->conf.macaddr.a);
    s->core.window_bytes = s->window_kib * 1024;
    s->core.drop_ppm = s->drop_ppm;
    s->core.ecn = s->ecn;
    s->core.drop_rng = s->conf.macaddr.a[5] + 1;
    s->vm_change = qemu_add_vm_change_state_handler(qhca_vm_change, s);
    s->port_up = qhca_link_up(s);
}

/* What unrealize frees of the device logic and its timer, BH and NIC */
static void qhca_free_engine(QhcaState *s)
{
    g_free(s->mig_buf);
    s->mig_buf = NULL;
    qhca_core_cleanup(&s->core);
    timer_free(s->timer);
    qemu_bh_delete(s->bh);
    if (s->nic) {
        qemu_del_nic(s->nic);
    }
}

static void qhca_exit_deferred(void *opaque)
{
    QhcaState *s = opaque;

    qhca_free_engine(s);
    object_unref(OBJECT(s));
}

static void qhca_exit(PCIDevice *pdev)
{
    QhcaState *s = QHCA(pdev);

    /*
     * The shared port goes at once, in either case below: its receive
     * callback only queues (it is never on the stack here), and from now
     * on the NIC's backend must not hand the device anything
     */
    qhca_port_detach(s);
    if (qhca_core_busy(&s->core)) {
        /*
         * Unplugged from inside device code: an interrupt or DMA write of
         * ours reached a slot's power control (docs/security.md).  The
         * core is stopped now and calls out no more; what it holds, the
         * timer, the bottom half and the NIC (whose receive callback may
         * be on the stack) are freed from a bottom half of the main loop,
         * which keeps the device object alive until then.
         */
        trace_qhca_unrealize_deferred();
        qhca_core_stop(&s->core);
        timer_del(s->timer);
        object_ref(OBJECT(s));
        aio_bh_schedule_oneshot(qemu_get_aio_context(), qhca_exit_deferred,
                                s);
    } else {
        qhca_free_engine(s);
    }
    qemu_del_vm_change_state_handler(s->vm_change);
    pcie_cap_exit(pdev);
    msix_unuse_all_vectors(pdev);
    msix_uninit_exclusive_bar(pdev);
}

static void qhca_reset_hold(Object *obj, ResetType type)
{
    QhcaState *s = QHCA(obj);

    qhca_core_reset(&s->core);
}

static const Property qhca_properties[] = {
    DEFINE_NIC_PROPERTIES(QhcaState, conf),
    /* share this NIC's backend (one MAC, one port) instead of netdev= */
    DEFINE_PROP_STRING("nic", QhcaState, nic_id),
    /* data in flight per QP; more than the default wants a lossless wire */
    DEFINE_PROP_UINT32("window-kib", QhcaState, window_kib,
                       QHCA_WINDOW_DEFAULT / 1024),
    /* for tests and benchmarks: drop this many received frames per million */
    DEFINE_PROP_UINT32("drop-ppm", QhcaState, drop_ppm, 0),
    /* ECN-capable data frames, CNPs for marked ones, the rate they set */
    DEFINE_PROP_BOOL("ecn", QhcaState, ecn, true),
};

/*
 * Migration and snapshots: PCI config space and MSI-X as QEMU saves them,
 * and the device logic's state as one buffer, a versioned stream of
 * records of its own (hw/qhca-save.c, docs/hardware.md "Saved state") that
 * the host harness and the fuzzer load too.  Its post_load checks
 * everything in it as guest input: a bad stream fails the migration.
 */
static int qhca_pre_save(void *opaque)
{
    QhcaState *s = opaque;
    GByteArray *b = g_byte_array_new();

    qhca_core_save(&s->core, b);
    g_free(s->mig_buf);
    s->mig_len = b->len;
    s->mig_buf = g_byte_array_free(b, false);
    return 0;
}

static int qhca_post_save(void *opaque)
{
    QhcaState *s = opaque;

    g_free(s->mig_buf);
    s->mig_buf = NULL;
    s->mig_len = 0;
    return 0;
}

static int qhca_pre_load(void *opaque)
{
    QhcaState *s = opaque;

    g_free(s->mig_buf);
    s->mig_buf = NULL;
    return 0;
}

/* Before the buffer is allocated: never for more than a device can hold */
static bool qhca_mig_len_ok(void *opaque, int version_id)
{
    QhcaState *s = opaque;

    if (s->mig_len > QHCA_SAVE_MAX) {
        error_report("qhca: incoming device state of %u bytes, more than "
                     "the %u a device can have", s->mig_len, QHCA_SAVE_MAX);
        return false;
    }
    return true;
}

static int qhca_post_load(void *opaque, int version_id)
{
    QhcaState *s = opaque;
    g_autofree char *why = NULL;
    bool ok;

    if (qhca_core_busy(&s->core)) {
        return -EBUSY;          /* not reached: loads run outside the device */
    }
    ok = qhca_core_load(&s->core, s->mig_buf, s->mig_len, &why);
    g_free(s->mig_buf);
    s->mig_buf = NULL;
    s->mig_len = 0;
    if (!ok) {
        error_report("qhca %s: incoming device state refused: %s",
                     DEVICE(s)->id ? DEVICE(s)->id : "", why);
        return -EINVAL;
    }
    return 0;
}

static const VMStateDescription qhca_vmstate = {
    .name = TYPE_QHCA,
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_save = qhca_pre_save,
    .post_save = qhca_post_save,
    .pre_load = qhca_pre_load,
    .post_load = qhca_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_PCI_DEVICE(parent_obj, QhcaState),
        VMSTATE_MSIX(parent_obj, QhcaState),
        VMSTATE_UINT32(mig_len, QhcaState),
        VMSTATE_VALIDATE("qhca device state size", qhca_mig_len_ok),
        VMSTATE_VBUFFER_ALLOC_UINT32(mig_buf, QhcaState, 0, NULL, mig_len),
        VMSTATE_END_OF_LIST()
    },
};

static void qhca_class_init(ObjectClass *klass, const void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *pc = PCI_DEVICE_CLASS(klass);
    ResettableClass *rc = RESETTABLE_CLASS(klass);

    pc->realize = qhca_realize;
    pc->exit = qhca_exit;
    pc->vendor_id = QHCA_PCI_VENDOR_ID;
    pc->device_id = QHCA_PCI_DEVICE_ID;
    pc->revision = QHCA_PCI_REVISION;
    pc->class_id = QHCA_PCI_CLASS;
    rc->phases.hold = qhca_reset_hold;
    dc->desc = "qhca software RDMA HCA (RoCEv2)";
    dc->vmsd = &qhca_vmstate;
    set_bit(DEVICE_CATEGORY_NETWORK, dc->categories);
    device_class_set_props(dc, qhca_properties);
    object_class_property_set_description(klass, "nic",
        "ID of a NIC to share the backend and MAC of (one port; instead of "
        "netdev=), given before this device");
    object_class_property_set_description(klass, "window-kib",
        "data in flight per QP, 16..4096 KiB");
    object_class_property_set_description(klass, "drop-ppm",
        "for tests: drop this many received frames per million, 0..1000000");
    object_class_property_set_description(klass, "ecn",
        "congestion control: data frames ECN-capable, marked ones answered "
        "by CNPs, CNPs slow the sender (RoCEv2 annex A17, DCQCN-like)");
}

QHCA_CLASS_INIT_COMPAT(qhca_class_init);

static const TypeInfo qhca_types[] = {
    {
        .name = TYPE_QHCA,
        .parent = TYPE_PCI_DEVICE,
        .instance_size = sizeof(QhcaState),
        .class_init = QHCA_CLASS_INIT(qhca_class_init),
        .interfaces = QHCA_INTERFACES({ INTERFACE_PCIE_DEVICE }, { }),
    },
};

DEFINE_TYPES(qhca_types)
