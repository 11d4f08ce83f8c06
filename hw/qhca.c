/*
 * qhca: a software RDMA host channel adapter (RoCEv2), QEMU glue.
 *
 * This file holds the QOM/PCI/MSI-X/netdev glue.  The hardware contract is
 * include/qhca_hw.h (linked as hw/qhca/qhca_hw.h); docs/hardware.md is its
 * prose description.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/module.h"
#include "qapi/error.h"
#include "hw/pci/pci_device.h"
#include "hw/pci/pcie.h"
#include "hw/pci/msix.h"
#include "hw/qdev-properties.h"
#include "migration/vmstate.h"
#include "net/net.h"
#include "qom/object.h"
#include "trace.h"

#include "hw/qhca/qhca_hw.h"

#define TYPE_QHCA "qhca"
OBJECT_DECLARE_SIMPLE_TYPE(QhcaState, QHCA)

struct QhcaState {
    PCIDevice parent_obj;

    MemoryRegion reg_bar;
    MemoryRegion db_bar;

    NICState *nic;
    NICConf conf;

    uint32_t ctrl;
    uint32_t status;
    uint32_t fatal_code;
    uint64_t cmdq_base;
    uint32_t cmdq_log_depth;
    uint64_t cmdcq_base;
    uint32_t cmdcq_log_depth;
    uint64_t aeq_base;
    uint32_t aeq_log_depth;

    uint32_t stat_tx_frames;
    uint32_t stat_rx_frames;
    uint32_t stat_rx_dropped;
    uint32_t stat_rx_bad_icrc;
    uint32_t stat_retransmits;
    uint32_t stat_guest_errors;
};

static void qhca_guest_error(QhcaState *s, const char *what, uint64_t val)
{
    s->stat_guest_errors++;
    trace_qhca_err_guest(what, val);
    qemu_log_mask(LOG_GUEST_ERROR, "qhca: %s (0x%" PRIx64 ")\n", what, val);
}

static bool qhca_link_up(QhcaState *s)
{
    return s->nic && !qemu_get_queue(s->nic)->link_down;
}

static void qhca_reset_state(QhcaState *s)
{
    s->ctrl = 0;
    s->status = 0;
    s->fatal_code = QHCA_FATAL_NONE;
    s->cmdq_base = 0;
    s->cmdq_log_depth = 0;
    s->cmdcq_base = 0;
    s->cmdcq_log_depth = 0;
    s->aeq_base = 0;
    s->aeq_log_depth = 0;
    trace_qhca_reset();
}

static uint64_t qhca_reg_read(void *opaque, hwaddr addr, unsigned size)
{
    QhcaState *s = opaque;
    const uint8_t *mac = s->conf.macaddr.a;
    uint64_t val = 0;

    switch (addr) {
    case QHCA_REG_VERSION:
        val = QHCA_VERSION;
        break;
    case QHCA_REG_CAPS:
        val = 0;
        break;
    case QHCA_REG_STATUS:
        val = s->status;
        break;
    case QHCA_REG_CTRL:
        val = s->ctrl;
        break;
    case QHCA_REG_MAC_LO:
        val = ldl_le_p(mac);
        break;
    case QHCA_REG_MAC_HI:
        val = lduw_le_p(mac + 4);
        break;
    case QHCA_REG_NUM_VECTORS:
        val = QHCA_MSIX_VECTORS;
        break;
    case QHCA_REG_NUM_DB_PAGES:
        val = QHCA_DB_PAGES;
        break;
    case QHCA_REG_LINK:
        val = qhca_link_up(s) ? QHCA_LINK_UP : 0;
        break;
    case QHCA_REG_FATAL_CODE:
        val = s->fatal_code;
        break;
    case QHCA_REG_CMDQ_BASE_LO:
        val = (uint32_t)s->cmdq_base;
        break;
    case QHCA_REG_CMDQ_BASE_HI:
        val = s->cmdq_base >> 32;
        break;
    case QHCA_REG_CMDQ_LOG_DEPTH:
        val = s->cmdq_log_depth;
        break;
    case QHCA_REG_CMDCQ_BASE_LO:
        val = (uint32_t)s->cmdcq_base;
        break;
    case QHCA_REG_CMDCQ_BASE_HI:
        val = s->cmdcq_base >> 32;
        break;
    case QHCA_REG_CMDCQ_LOG_DEPTH:
        val = s->cmdcq_log_depth;
        break;
    case QHCA_REG_AEQ_BASE_LO:
        val = (uint32_t)s->aeq_base;
        break;
    case QHCA_REG_AEQ_BASE_HI:
        val = s->aeq_base >> 32;
        break;
    case QHCA_REG_AEQ_LOG_DEPTH:
        val = s->aeq_log_depth;
        break;
    case QHCA_REG_STAT_TX_FRAMES:
        val = s->stat_tx_frames;
        break;
    case QHCA_REG_STAT_RX_FRAMES:
        val = s->stat_rx_frames;
        break;
    case QHCA_REG_STAT_RX_DROPPED:
        val = s->stat_rx_dropped;
        break;
    case QHCA_REG_STAT_RX_BAD_ICRC:
        val = s->stat_rx_bad_icrc;
        break;
    case QHCA_REG_STAT_RETRANSMITS:
        val = s->stat_retransmits;
        break;
    case QHCA_REG_STAT_GUEST_ERRORS:
        val = s->stat_guest_errors;
        break;
    default:
        qhca_guest_error(s, "read of undefined register", addr);
        break;
    }
    trace_qhca_mmio_read(addr, size, val);
    return val;
}

static void qhca_set_lo(uint64_t *reg, uint64_t val)
{
    *reg = (*reg & ~0xffffffffULL) | (uint32_t)val;
}

static void qhca_set_hi(uint64_t *reg, uint64_t val)
{
    *reg = (*reg & 0xffffffffULL) | (val << 32);
}

static void qhca_ctrl_write(QhcaState *s, uint32_t val)
{
    if (val & QHCA_CTRL_RESET) {
        qhca_reset_state(s);
        return;
    }
    if (val & ~QHCA_CTRL_ENABLE) {
        qhca_guest_error(s, "CTRL: reserved bits set", val);
    }
    s->ctrl = val & QHCA_CTRL_ENABLE;
    if (s->ctrl & QHCA_CTRL_ENABLE) {
        s->status |= QHCA_STATUS_READY;
    } else {
        s->status &= ~QHCA_STATUS_READY;
    }
}

static void qhca_reg_write(void *opaque, hwaddr addr, uint64_t val,
                           unsigned size)
{
    QhcaState *s = opaque;
    bool enabled = s->ctrl & QHCA_CTRL_ENABLE;

    trace_qhca_mmio_write(addr, size, val);

    switch (addr) {
    case QHCA_REG_CTRL:
        qhca_ctrl_write(s, val);
        return;
    case QHCA_REG_CMDQ_BASE_LO:
    case QHCA_REG_CMDQ_BASE_HI:
    case QHCA_REG_CMDQ_LOG_DEPTH:
    case QHCA_REG_CMDCQ_BASE_LO:
    case QHCA_REG_CMDCQ_BASE_HI:
    case QHCA_REG_CMDCQ_LOG_DEPTH:
    case QHCA_REG_AEQ_BASE_LO:
    case QHCA_REG_AEQ_BASE_HI:
    case QHCA_REG_AEQ_LOG_DEPTH:
        if (enabled) {
            qhca_guest_error(s, "queue register written while enabled", addr);
            return;
        }
        break;
    default:
        qhca_guest_error(s, "write to read-only or undefined register", addr);
        return;
    }

    switch (addr) {
    case QHCA_REG_CMDQ_BASE_LO:
        qhca_set_lo(&s->cmdq_base, val);
        break;
    case QHCA_REG_CMDQ_BASE_HI:
        qhca_set_hi(&s->cmdq_base, val);
        break;
    case QHCA_REG_CMDQ_LOG_DEPTH:
        s->cmdq_log_depth = val;
        break;
    case QHCA_REG_CMDCQ_BASE_LO:
        qhca_set_lo(&s->cmdcq_base, val);
        break;
    case QHCA_REG_CMDCQ_BASE_HI:
        qhca_set_hi(&s->cmdcq_base, val);
        break;
    case QHCA_REG_CMDCQ_LOG_DEPTH:
        s->cmdcq_log_depth = val;
        break;
    case QHCA_REG_AEQ_BASE_LO:
        qhca_set_lo(&s->aeq_base, val);
        break;
    case QHCA_REG_AEQ_BASE_HI:
        qhca_set_hi(&s->aeq_base, val);
        break;
    case QHCA_REG_AEQ_LOG_DEPTH:
        s->aeq_log_depth = val;
        break;
    }
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

    qhca_guest_error(s, "read from doorbell page", addr);
    return 0;
}

static void qhca_db_write(void *opaque, hwaddr addr, uint64_t val,
                          unsigned size)
{
    unsigned page = addr >> QHCA_PAGE_SHIFT;
    unsigned off = addr & (QHCA_PAGE_SIZE - 1);

    trace_qhca_doorbell(page, off, val);
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
    return true;
}

static ssize_t qhca_receive(NetClientState *nc, const uint8_t *buf,
                            size_t size)
{
    QhcaState *s = qemu_get_nic_opaque(nc);

    s->stat_rx_frames++;
    trace_qhca_rx_frame(size);
    return size;
}

static void qhca_set_link_status(NetClientState *nc)
{
    QhcaState *s = qemu_get_nic_opaque(nc);

    trace_qhca_link(qhca_link_up(s));
}

static NetClientInfo qhca_net_info = {
    .type = NET_CLIENT_DRIVER_NIC,
    .size = sizeof(NICState),
    .can_receive = qhca_can_receive,
    .receive = qhca_receive,
    .link_status_changed = qhca_set_link_status,
};

static void qhca_realize(PCIDevice *pdev, Error **errp)
{
    QhcaState *s = QHCA(pdev);
    DeviceState *dev = DEVICE(pdev);
    int i;

    pdev->config[PCI_INTERRUPT_PIN] = 1;
    pci_config_set_prog_interface(pdev->config, 0);

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
        return;
    }
    for (i = 0; i < QHCA_MSIX_VECTORS; i++) {
        msix_vector_use(pdev, i);
    }

    if (pcie_endpoint_cap_init(pdev, 0x80) < 0) {
        error_setg(errp, "qhca: failed to initialize PCIe capability");
        msix_uninit_exclusive_bar(pdev);
        return;
    }

    qemu_macaddr_default_if_unset(&s->conf.macaddr);
    s->nic = qemu_new_nic(&qhca_net_info, &s->conf,
                          object_get_typename(OBJECT(s)), dev->id,
                          &dev->mem_reentrancy_guard, s);
    qemu_format_nic_info_str(qemu_get_queue(s->nic), s->conf.macaddr.a);
}

static void qhca_exit(PCIDevice *pdev)
{
    QhcaState *s = QHCA(pdev);

    qemu_del_nic(s->nic);
    msix_unuse_all_vectors(pdev);
    msix_uninit_exclusive_bar(pdev);
}

static void qhca_reset_hold(Object *obj, ResetType type)
{
    qhca_reset_state(QHCA(obj));
}

static const Property qhca_properties[] = {
    DEFINE_NIC_PROPERTIES(QhcaState, conf),
};

static const VMStateDescription qhca_vmstate = {
    .name = TYPE_QHCA,
    .unmigratable = 1,
};

static void qhca_class_init(ObjectClass *klass, void *data)
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
}

static const TypeInfo qhca_info = {
    .name = TYPE_QHCA,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(QhcaState),
    .class_init = qhca_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_PCIE_DEVICE },
        { }
    },
};

static void qhca_register_types(void)
{
    type_register_static(&qhca_info);
}

type_init(qhca_register_types)
