/*
 * QTest for the qhca RDMA HCA: the device never tears itself down under
 * its own feet.  The guest aims device B's interrupts or DMA at another
 * device's registers: the Secondary Bus Reset of the bridge above B, the
 * power control of B's slot, or a second device that then does it.  The
 * reset or unplug then happens synchronously, inside B's own doorbell,
 * bottom half, retransmission timer or command queue, while that code holds
 * B's objects (docs/security.md, "The device never tears itself down under
 * its own feet").  Before, QEMU read freed memory there and crashed (ASan
 * in qtest-san shows each one); now the teardown waits until B's code
 * returns, B comes back reset and works, and QEMU and device A go on.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "libqtest.h"
#include "hw/pci/pci_regs.h"
#include "qemu/bswap.h"
#include "qhca-wire.h"

/* What the guest aims B at */
typedef enum Hit {
    HIT_BUS_RESET,              /* Bridge Control, Secondary Bus Reset */
    HIT_POWER_OFF,              /* Slot Control, power off */
    HIT_VIA_A,                  /* device A's doorbell: A's interrupt resets */
} Hit;

/* Which code of B's is running when it is hit */
typedef enum Path {
    PATH_DOORBELL,              /* B's SQ doorbell: a UD SEND's completion */
    PATH_WIRE,                  /* B's bottom half: a SEND from A arrives */
    PATH_WIRE_DMA,              /* the same, the hit is A's RDMA WRITE's data */
    PATH_TIMER,                 /* B's retransmission timer: retry exceeded */
    PATH_CMDQ,                  /* B's command queue: a command's completion */
    PATH_CMDQ_DMA,              /* the same, hit by the command's response */
} Path;

typedef struct Case {
    PairTopo topo;
    Hit hit;
    Path path;
} Case;

/* The dword with Bridge Control (0x3e) and the data that sets SBR in it */
#define BRCTL_DWORD     0x3c
#define BRCTL_SBR       ((uint32_t)PCI_BRIDGE_CTL_BUS_RESET << 16)

static uint16_t pcie_cap(QPCIDevice *dev)
{
    uint8_t cap = qpci_find_capability(dev, PCI_CAP_ID_EXP, 0);

    g_assert_cmpint(cap, !=, 0);
    return cap;
}

/* The bridge whose bus reset resets B, and the port whose slot B is in */
static QPCIDevice *reset_bridge(Pair *p)
{
    return p->up ? p->up : p->port;
}

static QPCIDevice *slot_port(Pair *p)
{
    return p->down ? p->down : p->port;
}

/* The dword of Slot Control at power off (Slot Status 0: nothing cleared) */
static uint32_t power_off_data(QPCIDevice *port)
{
    uint16_t ctl = qpci_config_readw(port, pcie_cap(port) + PCI_EXP_SLTCTL);

    g_assert_cmphex(ctl & PCI_EXP_SLTCTL_PCC, ==, 0);
    return (ctl & ~PCI_EXP_SLTCTL_PIC) | PCI_EXP_SLTCTL_PWR_IND_OFF |
           PCI_EXP_SLTCTL_PCC;
}

/* Where the hit lands, and what is written there */
static void hit_target(Pair *p, Hit hit, uint64_t *addr, uint32_t *data)
{
    if (hit == HIT_POWER_OFF) {
        *addr = ecam_addr(slot_port(p), pcie_cap(slot_port(p)) +
                          PCI_EXP_SLTCTL);
        *data = power_off_data(slot_port(p));
    } else {
        *addr = ecam_addr(reset_bridge(p), BRCTL_DWORD);
        *data = BRCTL_SBR;
    }
}

/* A signalled UD SEND of 16 bytes of @m from @e to QPN @qpn via AH @ahn */
static void ud_send(End *e, uint64_t wr_id, uint32_t ahn, uint32_t qpn,
                    const Mr *m)
{
    struct qhca_send_wqe w = wqe(QHCA_WQE_SEND, wr_id);
    struct qhca_sge s = sge(m, 0, 16);

    w.ud.ahn = cpu_to_le32(ahn);
    w.ud.remote_qpn = cpu_to_le32(qpn);
    w.ud.remote_qkey = cpu_to_le32(0x1234);
    post_send(e, &w, &s, 1, NULL, 0);
}

/*
 * HIT_VIA_A: an event of A's waits on A's EQ (its interrupt went to a
 * scratch page), and A's vector is then aimed at the hit.  B's interrupt
 * goes to A's EQ doorbell with ARM: A raises its interrupt at once, from
 * inside B's code, and that resets B.  Where B's interrupt goes, and with
 * what, in *@relay_addr and *@relay_data.
 */
static void arm_a_relay(Pair *p, End *a, const End *b, uint64_t addr,
                        uint32_t data, uint64_t *relay_addr,
                        uint32_t *relay_data)
{
    Mr ma = mr_reg(&p->a, a->pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x1000);

    msix_aim(&p->a, 1, qhca_alloc(&p->a, 4096), 0);
    qhca_db(&p->a, 0, QHCA_DB_EQ, a->eqn | QHCA_DB_EQ_ARM);
    qhca_db(&p->a, 0, QHCA_DB_CQ_ARM, a->cqn | (uint32_t)a->cq_ci << 16);
    ud_send(a, 0x70, ud_ah(a, IP_B, mac_b), b->qpn, &ma);
    expect_cqe(a, 0x70, QHCA_CQE_SUCCESS, QHCA_CQE_OP_SEND);
    msix_aim(&p->a, 1, addr, data);
    *relay_addr = p->a.db.addr + QHCA_DB_EQ;
    *relay_data = a->eqn | QHCA_DB_EQ_ARM | (uint32_t)a->eq_ci << 16;
}

/* Make B's EQ and CQ raise B's vector 1 at the next completion */
static void arm_b(End *b)
{
    qhca_db(b->d, 0, QHCA_DB_EQ, b->eqn | QHCA_DB_EQ_ARM);
    qhca_db(b->d, 0, QHCA_DB_CQ_ARM, b->cqn | (uint32_t)b->cq_ci << 16);
}

/* An MR of @e's whose one page is guest-physical @page (anything there) */
static Mr mr_at(End *e, uint64_t page, uint32_t access)
{
    struct qhca_cmd_reg_mr c = { 0 };
    Mr m = { .iova = 0x40000, .len = 4096, .mem = page, .npages = 1 };
    uint64_t pbl = qhca_alloc(e->d, 4096);

    qtest_writeq(e->d->qts, pbl, page);
    c.pdn = cpu_to_le32(e->pdn);
    c.access = cpu_to_le32(access);
    c.iova = cpu_to_le64(m.iova);
    c.length = cpu_to_le64(m.len);
    c.mem = qhca_pbl(pbl, 1);
    m.key = qhca_cmd_ok(e->d, QHCA_CMD_REG_MR, &c, sizeof(c));
    return m;
}

/*
 * Post a command to @d without waiting for its completion: @len bytes of
 * @payload, its response (at most @resp_len bytes) to @resp_addr
 */
static void cmd_post_nowait(QQhca *d, uint16_t opcode, const void *payload,
                            size_t len, uint64_t resp_addr, uint32_t resp_len)
{
    struct qhca_cmd cmd;

    g_assert_true(qhca_drv_cmd_init(&d->qd, &cmd, opcode, payload, len));
    cmd.hdr.resp_addr = cpu_to_le64(resp_addr);
    cmd.hdr.resp_len = cpu_to_le32(resp_len);
    qhca_drv_cmd_post(&d->qd, &cmd);
}

/*
 * PATH_CMDQ_DMA: a UD QP of @b's whose Q_Key is @data; QUERY_QP answers
 * its attributes, the Q_Key at byte 16, so a response written to @addr - 16
 * writes @data to @addr, from inside B's command loop
 */
static void query_qp_at(End *b, uint64_t addr, uint32_t data)
{
    struct qhca_cmd_create_qp q;
    struct qhca_qp_attr at = { 0 };
    uint64_t sq, rq;
    uint32_t qpn;

    QEMU_BUILD_BUG_ON(offsetof(struct qhca_qp_attr, qkey) != 16);
    q = qhca_qp_desc(b->d, QHCA_QPT_UD, b->pdn, b->cqn, &sq, &rq);
    qpn = qhca_cmd_ok(b->d, QHCA_CMD_CREATE_QP, &q, sizeof(q));
    at.qp_state = QHCA_QPS_INIT;
    at.qkey = cpu_to_le32(data);
    g_assert_cmpint(qhca_modify_qp(b->d, qpn, QHCA_QP_ATTR_STATE |
                                   QHCA_QP_ATTR_PKEY_INDEX |
                                   QHCA_QP_ATTR_PORT | QHCA_QP_ATTR_QKEY,
                                   &at), ==, QHCA_CMD_OK);
    qpn = cpu_to_le32(qpn);
    cmd_post_nowait(b->d, QHCA_CMD_QUERY_QP, &qpn, sizeof(qpn), addr - 16,
                    20);
}

/* Run the wire and the virtual clock: what B left behind would run now */
static void run_clock(Pair *p, int ms)
{
    int i;

    for (i = 0; i < ms; i++) {
        wire_pump();
        qtest_clock_step(p->qs->qts, 1000 * 1000);
    }
}

/* A SEND of 100 bytes from A to B on a new connection, bytes compared */
static void b_works(Pair *p)
{
    End a, b;
    Mr ma, mb;
    struct qhca_sge s;
    struct qhca_send_wqe w;
    uint8_t out[100], in[100];

    rc_pair(p, &a, &b, NULL, false);
    ma = mr_reg(&p->a, a.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    mb = mr_reg(&p->b, b.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    fill(out, sizeof(out), 0x5eed);
    mr_io(&p->a, &ma, 0, out, sizeof(out), true);
    s = sge(&mb, 0, sizeof(in));
    post_recv(&b, 0xb0, &s, 1);
    s = sge(&ma, 0, sizeof(out));
    w = wqe(QHCA_WQE_SEND, 0xa0);
    post_send(&a, &w, &s, 1, NULL, 0);
    expect_cqe(&b, 0xb0, QHCA_CQE_SUCCESS, QHCA_CQE_OP_RECV);
    expect_cqe(&a, 0xa0, QHCA_CQE_SUCCESS, QHCA_CQE_OP_SEND);
    mr_io(&p->b, &mb, 0, in, sizeof(in), false);
    g_assert_cmpmem(in, sizeof(in), out, sizeof(out));
}

/*
 * After a bus reset of B: the reset reached B's configuration space (its
 * command register is 0), the bridge is let out of reset, B is enumerated
 * again, is reset (nothing enabled, no object left) and works
 */
static void b_after_bus_reset(Pair *p, uint32_t old_qpn)
{
    QPCIBus *bus = p->qs->pcibus;
    QPCIDevice *br = reset_bridge(p);

    g_assert_cmphex(qpci_config_readw(br, PCI_BRIDGE_CONTROL) &
                    PCI_BRIDGE_CTL_BUS_RESET, ==, PCI_BRIDGE_CTL_BUS_RESET);
    qpci_config_writew(br, PCI_BRIDGE_CONTROL, 0);
    if (p->down) {
        /* the switch's downstream port was reset too: its bus and window */
        g_assert_cmphex(qpci_config_readw(p->down, PCI_COMMAND), ==, 0);
        g_assert_cmphex(qpci_config_readb(p->down, PCI_SECONDARY_BUS), ==, 0);
        qpci_config_writeb(p->down, PCI_PRIMARY_BUS, 2);
        qpci_config_writeb(p->down, PCI_SECONDARY_BUS, 3);
        qpci_config_writeb(p->down, PCI_SUBORDINATE_BUS, 3);
        qpci_config_writew(p->down, PCI_MEMORY_BASE, p->b_mmio >> 16);
        qpci_config_writew(p->down, PCI_MEMORY_LIMIT,
                           ((p->b_mmio + (64 << 20)) >> 16) - 0x10);
        qpci_device_enable(p->down);
    }
    g_assert_cmphex(qpci_config_readw(&p->b.dev, PCI_COMMAND), ==, 0);
    bus->mmio_alloc_ptr = p->b_mmio;
    qhca_init(&p->b, bus, p->b_devfn, &p->qs->alloc);
    p->b.idle = wire_pump;
    g_assert_cmphex(qhca_rd(&p->b, QHCA_REG_STATUS), ==, 0);
    g_assert_cmphex(qhca_rd(&p->b, QHCA_REG_CTRL), ==, 0);
    g_assert_cmphex(qhca_rd(&p->b, QHCA_REG_CMDQ_BASE_LO), ==, 0);
    qhca_enable(&p->b);
    g_assert_cmphex(qhca_rd(&p->b, QHCA_REG_STATUS), ==, QHCA_STATUS_READY);
    g_assert_cmpint(qhca_cmd_obj(&p->b, QHCA_CMD_DESTROY_QP, old_qpn), ==,
                    QHCA_CMD_ERR_HANDLE);
    b_works(p);
}

/*
 * After B unplugged itself: QEMU unrealized it (DEVICE_DELETED, the slot
 * empty), nothing of B's runs any more (the clock is run past every
 * timeout of B's), and its netdev is free again: a new qhca device is
 * plugged into the slot with it, enabled, and works
 */
static void b_after_unplug(Pair *p)
{
    QTestState *qts = p->qs->qts;
    QPCIDevice *port = slot_port(p);
    uint16_t cap = pcie_cap(port);
    uint16_t ctl;

    wait_device_deleted(qts, "qb");
    g_assert_cmphex(qpci_config_readw(port, cap + PCI_EXP_SLTSTA) &
                    PCI_EXP_SLTSTA_PDS, ==, 0);
    p->b.qts = NULL;
    run_clock(p, 2000);
    qhca_cmd_ok(&p->a, QHCA_CMD_QUERY_DEVICE, NULL, 0);
    qtest_qmp_device_add(qts, "qhca", "qb",
                         "{'bus': %s, 'netdev': 'nb', "
                         "'mac': '52:54:00:00:00:0b'}",
                         p->down ? "dp0" : "rp0");
    ctl = qpci_config_readw(port, cap + PCI_EXP_SLTCTL);
    ctl = (ctl & ~(PCI_EXP_SLTCTL_PCC | PCI_EXP_SLTCTL_PIC)) |
          PCI_EXP_SLTCTL_PWR_IND_ON;
    qpci_config_writew(port, cap + PCI_EXP_SLTCTL, ctl);
    g_assert_cmphex(qpci_config_readw(port, cap + PCI_EXP_SLTSTA) &
                    PCI_EXP_SLTSTA_PDS, ==, PCI_EXP_SLTSTA_PDS);
    p->qs->pcibus->mmio_alloc_ptr = p->b_mmio;
    qhca_init(&p->b, p->qs->pcibus, p->b_devfn, &p->qs->alloc);
    p->b.idle = wire_pump;
    qhca_enable(&p->b);
    b_works(p);
}

static void run_case(const void *opaque)
{
    const Case *t = opaque;
    Pair p;
    End a, b;
    Mr ma, mb;
    struct qhca_sge s;
    struct qhca_send_wqe w;
    ConnOpts o = rc_default_opts;
    uint64_t addr;
    uint32_t data, vec = 1, errors_a;
    uint8_t page0[4096], page0_was[4096];

    pair_start_topo(&p, t->path == PATH_TIMER ? WIRE_BLACKHOLE : WIRE_PASS,
                    t->topo);
    fill(page0_was, sizeof(page0_was), 0x9a9e0);
    qtest_memwrite(p.qs->qts, 0, page0_was, sizeof(page0_was));
    ecam_enable(&p);
    hit_target(&p, t->hit == HIT_VIA_A ? HIT_BUS_RESET : t->hit, &addr,
               &data);
    if (t->path == PATH_TIMER) {
        o.timeout = 1;
        o.retry_cnt = 0;
    }
    if (t->path == PATH_DOORBELL) {
        end_create(&a, &p.a, QHCA_QPT_UD, IP_A, mac_a, false);
        end_create(&b, &p.b, QHCA_QPT_UD, IP_B, mac_b, false);
        ud_up(&a, 0x1234, true);
        ud_up(&b, 0x1234, true);
    } else {
        rc_pair(&p, &a, &b, &o, false);
    }
    if (t->hit == HIT_VIA_A) {
        arm_a_relay(&p, &a, &b, addr, data, &addr, &data);
    }
    ma = mr_reg(&p.a, a.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    mb = mr_reg(&p.b, b.pdn, 4096, QHCA_ACCESS_LOCAL_WRITE, 0x1000);
    errors_a = qhca_rd(&p.a, QHCA_REG_STAT_GUEST_ERRORS);

    switch (t->path) {
    case PATH_DOORBELL:
        msix_aim(&p.b, vec, addr, data);
        arm_b(&b);
        /* the SEND completes inside this doorbell write, and B is hit */
        ud_send(&b, 0xb1, ud_ah(&b, IP_A, mac_a), a.qpn, &mb);
        break;
    case PATH_WIRE:
    case PATH_WIRE_DMA:
        if (t->path == PATH_WIRE_DMA) {
            /* A writes @data to @addr through an MR of B's over that page */
            Mr mx = mr_at(&b, addr & ~0xfffULL, QHCA_ACCESS_LOCAL_WRITE |
                          QHCA_ACCESS_REMOTE_WRITE);

            qtest_writel(p.qs->qts, mr_phys(&ma, 0), data);
            w = wqe(QHCA_WQE_RDMA_WRITE, 0xa1);
            w.rdma.remote_addr = cpu_to_le64(mx.iova + (addr & 0xfff));
            w.rdma.rkey = cpu_to_le32(mx.key);
            s = sge(&ma, 0, 4);
        } else {
            msix_aim(&p.b, vec, addr, data);
            arm_b(&b);
            s = sge(&mb, 0, 64);
            post_recv(&b, 0xb2, &s, 1);
            w = wqe(QHCA_WQE_SEND, 0xa1);
            s = sge(&ma, 0, 64);
        }
        /* B's bottom half receives it, and B is hit */
        post_send(&a, &w, &s, 1, NULL, 0);
        settle(&p, 20);
        break;
    case PATH_TIMER:
        msix_aim(&p.b, vec, addr, data);
        arm_b(&b);
        w = wqe(QHCA_WQE_SEND, 0xb3);
        s = sge(&mb, 0, 16);
        post_send(&b, &w, &s, 1, NULL, 0);
        /* no ACK: the timer's error completion hits B */
        run_clock(&p, 100);
        break;
    case PATH_CMDQ:
        msix_aim(&p.b, QHCA_MSIX_VEC_ASYNC, addr, data);
        qhca_db(&p.b, 0, QHCA_DB_CMDCQ, p.b.qd.cmdcq_ci | QHCA_DB_CMDCQ_ARM);
        /* the command loop completes it, and B is hit */
        cmd_post_nowait(&p.b, QHCA_CMD_QUERY_DEVICE, NULL, 0, p.b.qd.resp,
                        256);
        settle(&p, 5);
        break;
    case PATH_CMDQ_DMA:
        /* the command loop writes its response, and B is hit */
        query_qp_at(&b, addr, data);
        settle(&p, 5);
        break;
    }
    /*
     * After the hit B wrote nothing more: before, the command loop went on
     * with the reset queue registers, wrote a completion at guest address
     * 0 and ran "commands" from there
     */
    qtest_memread(p.qs->qts, 0, page0, sizeof(page0));
    g_assert_cmpmem(page0, sizeof(page0), page0_was, sizeof(page0_was));

    p.w.policy = WIRE_PASS;
    if (t->hit == HIT_POWER_OFF) {
        b_after_unplug(&p);
    } else {
        b_after_bus_reset(&p, b.qpn);
    }
    /* QEMU and A went on; A made no guest error of its own */
    qtest_qmp_assert_success(p.qs->qts, "{'execute': 'query-status'}");
    g_assert_cmphex(qhca_rd(&p.a, QHCA_REG_STATUS), ==, QHCA_STATUS_READY);
    g_assert_cmpuint(qhca_rd(&p.a, QHCA_REG_STAT_GUEST_ERRORS), ==, errors_a);
    pair_stop(&p);
}

static const struct {
    const char *name;
    Case c;
} cases[] = {
    { "bus-reset/msix/doorbell", { PAIR_B_PORT, HIT_BUS_RESET,
                                   PATH_DOORBELL } },
    { "bus-reset/msix/bh", { PAIR_B_PORT, HIT_BUS_RESET, PATH_WIRE } },
    { "bus-reset/msix/timer", { PAIR_B_PORT, HIT_BUS_RESET, PATH_TIMER } },
    { "bus-reset/msix/cmdq", { PAIR_B_PORT, HIT_BUS_RESET, PATH_CMDQ } },
    { "bus-reset/dma/bh", { PAIR_B_PORT, HIT_BUS_RESET, PATH_WIRE_DMA } },
    { "bus-reset/dma/cmdq", { PAIR_B_PORT, HIT_BUS_RESET, PATH_CMDQ_DMA } },
    { "bus-reset/switch/doorbell", { PAIR_B_SWITCH, HIT_BUS_RESET,
                                     PATH_DOORBELL } },
    { "power-off/msix/doorbell", { PAIR_B_PORT, HIT_POWER_OFF,
                                   PATH_DOORBELL } },
    { "power-off/msix/bh", { PAIR_B_PORT, HIT_POWER_OFF, PATH_WIRE } },
    { "power-off/msix/timer", { PAIR_B_PORT, HIT_POWER_OFF, PATH_TIMER } },
    { "power-off/msix/cmdq", { PAIR_B_PORT, HIT_POWER_OFF, PATH_CMDQ } },
    { "power-off/dma/bh", { PAIR_B_PORT, HIT_POWER_OFF, PATH_WIRE_DMA } },
    { "power-off/dma/cmdq", { PAIR_B_PORT, HIT_POWER_OFF, PATH_CMDQ_DMA } },
    { "power-off/switch/bh", { PAIR_B_SWITCH, HIT_POWER_OFF, PATH_WIRE } },
    { "via-other-device/doorbell", { PAIR_B_PORT, HIT_VIA_A,
                                     PATH_DOORBELL } },
};

int main(int argc, char **argv)
{
    unsigned i;

    g_test_init(&argc, &argv, NULL);
    for (i = 0; i < ARRAY_SIZE(cases); i++) {
        g_autofree char *path = g_strdup_printf("/qhca/teardown/%s",
                                                cases[i].name);

        qtest_add_data_func(path, &cases[i].c, run_case);
    }
    return g_test_run();
}
