/*
 * QTest for the qhca RDMA HCA: PCI identity, BARs, MSI-X, registers, reset.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "libqtest.h"
#include "libqos/pci.h"
#include "libqos/pci-pc.h"
#include "hw/pci/pci_regs.h"
#include "hw/qhca/qhca_hw.h"

#define QHCA_DEVFN      QPCI_DEVFN(4, 0)
#define QHCA_MAC        "52:54:00:12:34:56"

typedef struct QhcaTest {
    QTestState *qts;
    QPCIBus *bus;
    QPCIDevice *dev;
    QPCIBar reg;
    QPCIBar db;
    uint64_t reg_size;
    uint64_t db_size;
} QhcaTest;

static void qhca_start(QhcaTest *t)
{
    t->qts = qtest_initf("-machine q35 -nodefaults "
                         "-device qhca,addr=04.0,mac=" QHCA_MAC);
    t->bus = qpci_new_pc(t->qts, NULL);
    t->dev = qpci_device_find(t->bus, QHCA_DEVFN);
    g_assert_nonnull(t->dev);
    qpci_device_enable(t->dev);
    t->reg = qpci_iomap(t->dev, QHCA_REG_BAR, &t->reg_size);
    t->db = qpci_iomap(t->dev, QHCA_DB_BAR, &t->db_size);
}

static void qhca_stop(QhcaTest *t)
{
    qpci_iounmap(t->dev, t->reg);
    qpci_iounmap(t->dev, t->db);
    g_free(t->dev);
    qpci_free_pc(t->bus);
    qtest_quit(t->qts);
}

static uint32_t rd(QhcaTest *t, uint32_t reg)
{
    return qpci_io_readl(t->dev, t->reg, reg);
}

static void wr(QhcaTest *t, uint32_t reg, uint32_t val)
{
    qpci_io_writel(t->dev, t->reg, reg, val);
}

static void test_pci_identity(void)
{
    QhcaTest t;

    qhca_start(&t);
    g_assert_cmphex(qpci_config_readw(t.dev, PCI_VENDOR_ID), ==,
                    QHCA_PCI_VENDOR_ID);
    g_assert_cmphex(qpci_config_readw(t.dev, PCI_DEVICE_ID), ==,
                    QHCA_PCI_DEVICE_ID);
    g_assert_cmphex(qpci_config_readb(t.dev, PCI_REVISION_ID), ==,
                    QHCA_PCI_REVISION);
    g_assert_cmphex(qpci_config_readw(t.dev, PCI_CLASS_DEVICE), ==,
                    QHCA_PCI_CLASS);
    g_assert_cmphex(qpci_config_readb(t.dev, PCI_INTERRUPT_PIN), ==, 1);
    /* A PCI Express endpoint */
    g_assert_cmpint(qpci_find_capability(t.dev, PCI_CAP_ID_EXP, 0), !=, 0);
    qhca_stop(&t);
}

static void test_bars(void)
{
    QhcaTest t;
    uint32_t bar;

    qhca_start(&t);
    g_assert_cmphex(t.reg_size, ==, QHCA_REG_BAR_SIZE);
    g_assert_cmphex(t.db_size, ==, QHCA_DB_BAR_SIZE);

    /* BAR0 and BAR2 are 64-bit memory BARs, not prefetchable */
    bar = qpci_config_readl(t.dev, PCI_BASE_ADDRESS_0 + 4 * QHCA_REG_BAR);
    g_assert_cmphex(bar & PCI_BASE_ADDRESS_SPACE, ==,
                    PCI_BASE_ADDRESS_SPACE_MEMORY);
    g_assert_cmphex(bar & PCI_BASE_ADDRESS_MEM_TYPE_MASK, ==,
                    PCI_BASE_ADDRESS_MEM_TYPE_64);
    g_assert_cmphex(bar & PCI_BASE_ADDRESS_MEM_PREFETCH, ==, 0);
    bar = qpci_config_readl(t.dev, PCI_BASE_ADDRESS_0 + 4 * QHCA_DB_BAR);
    g_assert_cmphex(bar & PCI_BASE_ADDRESS_MEM_TYPE_MASK, ==,
                    PCI_BASE_ADDRESS_MEM_TYPE_64);
    g_assert_cmphex(bar & PCI_BASE_ADDRESS_MEM_PREFETCH, ==, 0);
    qhca_stop(&t);
}

static void test_registers(void)
{
    QhcaTest t;

    qhca_start(&t);
    g_assert_cmphex(rd(&t, QHCA_REG_VERSION), ==, QHCA_VERSION);
    /* MAC byte 0 in bits 7:0 of MAC_LO */
    g_assert_cmphex(rd(&t, QHCA_REG_MAC_LO), ==, 0x12005452);
    g_assert_cmphex(rd(&t, QHCA_REG_MAC_HI), ==, 0x5634);
    g_assert_cmpuint(rd(&t, QHCA_REG_NUM_VECTORS), ==, QHCA_MSIX_VECTORS);
    g_assert_cmpuint(rd(&t, QHCA_REG_NUM_DB_PAGES), ==, QHCA_DB_PAGES);
    g_assert_cmphex(rd(&t, QHCA_REG_STATUS), ==, 0);
    g_assert_cmphex(rd(&t, QHCA_REG_CTRL), ==, 0);

    /* Read-only registers ignore writes; undefined ones read 0 */
    wr(&t, QHCA_REG_VERSION, 0xdeadbeef);
    g_assert_cmphex(rd(&t, QHCA_REG_VERSION), ==, QHCA_VERSION);
    wr(&t, QHCA_REG_MAC_LO, 0);
    g_assert_cmphex(rd(&t, QHCA_REG_MAC_LO), ==, 0x12005452);
    wr(&t, 0xffc, 0x1);
    g_assert_cmphex(rd(&t, 0xffc), ==, 0);
    /* VERSION and MAC_LO writes, the write and the read of 0xffc */
    g_assert_cmpuint(rd(&t, QHCA_REG_STAT_GUEST_ERRORS), ==, 4);
    qhca_stop(&t);
}

static void test_msix(void)
{
    QhcaTest t;
    uint8_t cap;
    uint16_t ctrl;
    uint32_t table;

    qhca_start(&t);
    cap = qpci_find_capability(t.dev, PCI_CAP_ID_MSIX, 0);
    g_assert_cmpint(cap, !=, 0);
    ctrl = qpci_config_readw(t.dev, cap + PCI_MSIX_FLAGS);
    g_assert_cmpuint((ctrl & PCI_MSIX_FLAGS_QSIZE) + 1, ==, QHCA_MSIX_VECTORS);
    table = qpci_config_readl(t.dev, cap + PCI_MSIX_TABLE);
    g_assert_cmpuint(table & PCI_MSIX_TABLE_BIR, ==, QHCA_MSIX_BAR);
    table = qpci_config_readl(t.dev, cap + PCI_MSIX_PBA);
    g_assert_cmpuint(table & PCI_MSIX_PBA_BIR, ==, QHCA_MSIX_BAR);

    qpci_msix_enable(t.dev);
    g_assert_true(t.dev->msix_enabled);
    ctrl = qpci_config_readw(t.dev, cap + PCI_MSIX_FLAGS);
    g_assert_cmphex(ctrl & PCI_MSIX_FLAGS_ENABLE, ==, PCI_MSIX_FLAGS_ENABLE);
    qpci_msix_disable(t.dev);
    qhca_stop(&t);
}

static void set_queue_regs(QhcaTest *t)
{
    wr(t, QHCA_REG_CMDQ_BASE_LO, 0x1000);
    wr(t, QHCA_REG_CMDQ_BASE_HI, 0x1);
    wr(t, QHCA_REG_CMDQ_LOG_DEPTH, 3);
    wr(t, QHCA_REG_AEQ_BASE_LO, 0x3000);
    wr(t, QHCA_REG_AEQ_LOG_DEPTH, 4);
}

static void check_queue_regs_clear(QhcaTest *t)
{
    g_assert_cmphex(rd(t, QHCA_REG_CTRL), ==, 0);
    g_assert_cmphex(rd(t, QHCA_REG_STATUS), ==, 0);
    g_assert_cmphex(rd(t, QHCA_REG_CMDQ_BASE_LO), ==, 0);
    g_assert_cmphex(rd(t, QHCA_REG_CMDQ_BASE_HI), ==, 0);
    g_assert_cmphex(rd(t, QHCA_REG_CMDQ_LOG_DEPTH), ==, 0);
    g_assert_cmphex(rd(t, QHCA_REG_AEQ_BASE_LO), ==, 0);
    g_assert_cmphex(rd(t, QHCA_REG_AEQ_LOG_DEPTH), ==, 0);
}

static void test_enable_and_reset(void)
{
    QhcaTest t;

    qhca_start(&t);
    set_queue_regs(&t);
    g_assert_cmphex(rd(&t, QHCA_REG_CMDQ_BASE_LO), ==, 0x1000);
    g_assert_cmphex(rd(&t, QHCA_REG_CMDQ_BASE_HI), ==, 0x1);
    g_assert_cmphex(rd(&t, QHCA_REG_CMDQ_LOG_DEPTH), ==, 3);

    wr(&t, QHCA_REG_CTRL, QHCA_CTRL_ENABLE);
    g_assert_cmphex(rd(&t, QHCA_REG_CTRL), ==, QHCA_CTRL_ENABLE);
    g_assert_cmphex(rd(&t, QHCA_REG_STATUS) & QHCA_STATUS_READY, ==,
                    QHCA_STATUS_READY);

    /* Queue registers are locked while the device is enabled */
    wr(&t, QHCA_REG_CMDQ_BASE_LO, 0x5000);
    g_assert_cmphex(rd(&t, QHCA_REG_CMDQ_BASE_LO), ==, 0x1000);

    /* Software reset clears everything and reads back 0 */
    wr(&t, QHCA_REG_CTRL, QHCA_CTRL_RESET);
    check_queue_regs_clear(&t);

    /* So does a system reset */
    set_queue_regs(&t);
    wr(&t, QHCA_REG_CTRL, QHCA_CTRL_ENABLE);
    qtest_system_reset(t.qts);
    /* The reset also cleared the BARs and the command register: remap */
    qpci_iounmap(t.dev, t.reg);
    qpci_iounmap(t.dev, t.db);
    qpci_device_enable(t.dev);
    t.reg = qpci_iomap(t.dev, QHCA_REG_BAR, NULL);
    t.db = qpci_iomap(t.dev, QHCA_DB_BAR, NULL);
    g_assert_cmphex(rd(&t, QHCA_REG_VERSION), ==, QHCA_VERSION);
    check_queue_regs_clear(&t);
    qhca_stop(&t);
}

static void test_doorbell_page_reads(void)
{
    QhcaTest t;

    qhca_start(&t);
    /* Doorbell pages are write-only: reads return 0 and count an error */
    g_assert_cmphex(qpci_io_readl(t.dev, t.db, QHCA_DB_SQ), ==, 0);
    g_assert_cmpuint(rd(&t, QHCA_REG_STAT_GUEST_ERRORS), ==, 1);
    qhca_stop(&t);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    qtest_add_func("/qhca/pci/identity", test_pci_identity);
    qtest_add_func("/qhca/pci/bars", test_bars);
    qtest_add_func("/qhca/pci/msix", test_msix);
    qtest_add_func("/qhca/regs/basic", test_registers);
    qtest_add_func("/qhca/regs/enable-reset", test_enable_and_reset);
    qtest_add_func("/qhca/doorbell/read", test_doorbell_page_reads);

    return g_test_run();
}
