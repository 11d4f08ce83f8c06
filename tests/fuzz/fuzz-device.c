/*
 * Operations of the qhca fuzz target (the input format: qhca-fuzz.c) on
 * the device as the platform and the driver see it: the main loop and
 * the virtual clock, registers and doorbells, resets, MSI-X messages,
 * the link, polling, and guest memory: PUMP, ADVANCE, SETTLE, REG_WRITE,
 * REG_READ, DB_WRITE, RESET, MSIX, LINK, POLL and MEM_WRITE.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "harness.h"
#include "qhca-fuzz.h"

void op_pump(Fz *f)
{
    FzPump a;

    if (take(f, &a, sizeof(a))) {
        hx_pump(&pair, a.steps + 1u);
    }
}

void op_advance(Fz *f)
{
    FzAdvance a;

    if (take(f, &a, sizeof(a))) {
        hx_advance(&pair, 1LL << (a.exp % 36));
    }
}

void op_settle(Fz *f)
{
    FzSettle a;
    int i;

    if (take(f, &a, sizeof(a))) {
        for (i = 0; i < 4; i++) {
            hx_settle(&pair, (int64_t)(a.ms + 1) * MS / 4, 500);
            hx_poll_all(&pair.dev[0], 256, HX_ARM_CQ | HX_ARM_EQ |
                        HX_ARM_AEQ);
            hx_poll_all(&pair.dev[1], 256, HX_ARM_CQ | HX_ARM_EQ |
                        HX_ARM_AEQ);
        }
    }
}

void op_reg_write(Fz *f)
{
    FzRegWrite a;

    if (take(f, &a, sizeof(a))) {
        hx_mmio_write(dev_sel(a.dev), le16_to_cpu(a.off) & 0xffc,
                      le32_to_cpu(a.val));
    }
}

void op_reg_read(Fz *f)
{
    FzRegRead a;

    if (take(f, &a, sizeof(a))) {
        hx_mmio_read(dev_sel(a.dev), le16_to_cpu(a.off) & 0xffc);
    }
}

void op_db_write(Fz *f)
{
    FzDbWrite a;

    if (take(f, &a, sizeof(a))) {
        hx_db_write(dev_sel(a.dev), a.page, a.off & 0xfc,
                    le32_to_cpu(a.val));
    }
}

void op_reset(Fz *f)
{
    FzReset a;
    HxDev *d, *peer;

    if (!take(f, &a, sizeof(a))) {
        return;
    }
    d = dev_sel(a.dev);
    peer = peer_of(d);
    switch (a.kind % 3) {
    case 0:
        hx_mmio_write(d, QHCA_REG_CTRL, QHCA_CTRL_RESET);
        break;
    case 1:
        hx_system_reset(d);
        break;
    default:
        if (!hx_drv_setup(d)) {
            return;
        }
        frmr_setup(d);
        if (peer->drv.up) {
            hx_connect_rc(d, &d->drv.qp[HX_QP_RC], peer,
                          &peer->drv.qp[HX_QP_RC], &hx_default_conn);
            hx_connect_rc(d, &d->drv.qp[HX_QP_RC_SRQ], peer,
                          &peer->drv.qp[HX_QP_RC_SRQ], &hx_default_conn);
            hx_connect_rc(d, &d->drv.qp[HX_QP_UC], peer,
                          &peer->drv.qp[HX_QP_UC], &hx_default_conn);
            hx_connect_rc(d, &d->drv.qp[HX_QP_UC_SRQ], peer,
                          &peer->drv.qp[HX_QP_UC_SRQ], &hx_default_conn);
        }
        {
            struct qhca_qp_attr at = { 0 };
            HxQp *ud = &d->drv.qp[HX_QP_UD];

            at.qp_state = QHCA_QPS_INIT;
            at.qkey = cpu_to_le32(HX_QKEY);
            hx_modify_qp(d, ud->qpn, QHCA_QP_ATTR_STATE |
                         QHCA_QP_ATTR_PKEY_INDEX | QHCA_QP_ATTR_PORT |
                         QHCA_QP_ATTR_QKEY, &at);
            at.qp_state = QHCA_QPS_RTR;
            hx_modify_qp(d, ud->qpn, QHCA_QP_ATTR_STATE, &at);
            at.qp_state = QHCA_QPS_RTS;
            hx_modify_qp(d, ud->qpn, QHCA_QP_ATTR_STATE |
                         QHCA_QP_ATTR_SQ_PSN, &at);
            ud->peer_qpn = peer->drv.qp[HX_QP_UD].qpn;
        }
        hx_poll_all(d, 0, HX_ARM_CQ | HX_ARM_EQ | HX_ARM_AEQ);
        break;
    }
}

void op_msix(Fz *f)
{
    FzMsix a;
    HxMsix *m;
    uint32_t off;

    if (!take(f, &a, sizeof(a))) {
        return;
    }
    m = &dev_sel(a.dev)->msix[a.vector % QHCA_MSIX_VECTORS];
    off = le32_to_cpu(a.off);
    m->data = le32_to_cpu(a.data);
    switch (a.kind % 5) {
    case 0:
        m->addr = HX_APIC_ADDR;
        break;
    case 4:
        m->addr = HX_PORT_ADDR + (off & (HX_PORT_SIZE - 4));
        break;
    case 1:
        m->addr = HX_REG_BAR_ADDR + (off & (QHCA_REG_BAR_SIZE - 4));
        break;
    case 2:
        m->addr = HX_DB_BAR_ADDR + (off & (QHCA_DB_BAR_SIZE - 4));
        break;
    case 3:
        m->addr = off % (HX_RAM_SIZE - 4);
        break;
    }
}

void op_link(Fz *f)
{
    FzLink a;

    if (take(f, &a, sizeof(a))) {
        hx_set_link(dev_sel(a.dev), a.up & 1);
    }
}

void op_poll(Fz *f)
{
    FzPoll a;

    if (take(f, &a, sizeof(a))) {
        hx_poll_all(dev_sel(a.dev), a.max, a.arm);
    }
}

void op_mem_write(Fz *f)
{
    FzMemWrite a;
    const uint8_t *bytes;
    size_t len;
    HxDev *d;
    uint64_t addr;
    uint32_t off;

    if (!take(f, &a, sizeof(a))) {
        return;
    }
    len = a.len;
    bytes = take_var(f, &len);
    d = dev_sel(a.dev);
    off = le32_to_cpu(a.off);
    switch (a.region % 4) {
    case 0:
        addr = d->drv.mr.mem + off % MAX(d->drv.mr.len, 1);
        break;
    case 1:
        addr = HX_RING_BASE + off % (HX_RING_END - HX_RING_BASE);
        break;
    case 2:
        addr = off % HX_RAM_SIZE;
        break;
    default:
        addr = frmr_pbl[d->idx] + off % QHCA_PAGE_SIZE;
        break;
    }
    hx_mem_write(d, addr, bytes, MIN(len, HX_RAM_SIZE - addr));
}
