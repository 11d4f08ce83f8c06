/*
 * QTest for the qhca RDMA HCA, on the qos graph (libqos/qhca.c): PCI
 * identity, BARs, MSI-X, registers, reset, the doorbell pages, and every
 * command with its error paths.  Each test gets its own QEMU (the device's
 * counters start from zero) with the device at 04.0 of the machine's PCI
 * bus, enabled and its BARs mapped; the tests that need the command queue
 * enable the device first (qhca_enable()).
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "libqtest-single.h"
#include "libqos/qgraph.h"
#include "libqos/pci.h"
#include "libqos/qhca.h"
#include "hw/pci/pci_regs.h"
#include "qemu/bswap.h"
#include "qemu/module.h"

static void test_pci_identity(void *obj, void *data,
                              QGuestAllocator *alloc)
{
    QQhca *t = obj;

    g_assert_cmphex(qpci_config_readw(&t->dev, PCI_VENDOR_ID), ==,
                    QHCA_PCI_VENDOR_ID);
    g_assert_cmphex(qpci_config_readw(&t->dev, PCI_DEVICE_ID), ==,
                    QHCA_PCI_DEVICE_ID);
    g_assert_cmphex(qpci_config_readb(&t->dev, PCI_REVISION_ID), ==,
                    QHCA_PCI_REVISION);
    g_assert_cmphex(qpci_config_readw(&t->dev, PCI_CLASS_DEVICE), ==,
                    QHCA_PCI_CLASS);
    g_assert_cmphex(qpci_config_readb(&t->dev, PCI_INTERRUPT_PIN), ==, 1);
    /* A PCI Express endpoint */
    g_assert_cmpint(qpci_find_capability(&t->dev, PCI_CAP_ID_EXP, 0), !=, 0);
}

static void test_bars(void *obj, void *data,
                      QGuestAllocator *alloc)
{
    QQhca *t = obj;
    uint32_t bar;

    g_assert_cmphex(t->reg_size, ==, QHCA_REG_BAR_SIZE);
    g_assert_cmphex(t->db_size, ==, QHCA_DB_BAR_SIZE);

    /* BAR0 and BAR2 are 64-bit memory BARs, not prefetchable */
    bar = qpci_config_readl(&t->dev, PCI_BASE_ADDRESS_0 + 4 * QHCA_REG_BAR);
    g_assert_cmphex(bar & PCI_BASE_ADDRESS_SPACE, ==,
                    PCI_BASE_ADDRESS_SPACE_MEMORY);
    g_assert_cmphex(bar & PCI_BASE_ADDRESS_MEM_TYPE_MASK, ==,
                    PCI_BASE_ADDRESS_MEM_TYPE_64);
    g_assert_cmphex(bar & PCI_BASE_ADDRESS_MEM_PREFETCH, ==, 0);
    bar = qpci_config_readl(&t->dev, PCI_BASE_ADDRESS_0 + 4 * QHCA_DB_BAR);
    g_assert_cmphex(bar & PCI_BASE_ADDRESS_MEM_TYPE_MASK, ==,
                    PCI_BASE_ADDRESS_MEM_TYPE_64);
    g_assert_cmphex(bar & PCI_BASE_ADDRESS_MEM_PREFETCH, ==, 0);
}

/* The window-kib property: out of range refuses to realize, in range works */
static void test_window_property(void)
{
    const char *qemu = getenv("QTEST_QEMU_BINARY");
    static const char *const bad[] = { "8", "8192" };
    static const char *const good[] = { "16", "4096" };
    int i;

    g_assert_nonnull(qemu);
    for (i = 0; i < ARRAY_SIZE(bad); i++) {
        g_autofree char *dev = g_strdup_printf("qhca,window-kib=%s", bad[i]);
        g_autofree char *err = NULL;
        const char *argv[] = { qemu, "-machine", "q35", "-nodefaults",
                               "-display", "none", "-S", "-device", dev,
                               NULL };
        int status = 0;

        g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL,
                                   G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL,
                                   NULL, &err, &status, NULL));
        g_assert_nonnull(strstr(err, "window-kib must be"));
        g_assert_false(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    for (i = 0; i < ARRAY_SIZE(good); i++) {
        QTestState *qts = qtest_initf("-machine q35 -nodefaults "
                                      "-device qhca,window-kib=%s", good[i]);

        qtest_quit(qts);
    }
}

static void test_registers(void *obj, void *data,
                           QGuestAllocator *alloc)
{
    QQhca *t = obj;

    g_assert_cmphex(qhca_rd(t, QHCA_REG_VERSION), ==, QHCA_VERSION);
    /* MAC byte 0 in bits 7:0 of MAC_LO */
    g_assert_cmphex(qhca_rd(t, QHCA_REG_MAC_LO), ==, 0x12005452);
    g_assert_cmphex(qhca_rd(t, QHCA_REG_MAC_HI), ==, 0x5634);
    g_assert_cmpuint(qhca_rd(t, QHCA_REG_NUM_VECTORS), ==, QHCA_MSIX_VECTORS);
    g_assert_cmpuint(qhca_rd(t, QHCA_REG_NUM_DB_PAGES), ==, QHCA_DB_PAGES);
    g_assert_cmphex(qhca_rd(t, QHCA_REG_STATUS), ==, 0);
    g_assert_cmphex(qhca_rd(t, QHCA_REG_CTRL), ==, 0);

    /* Read-only registers ignore writes; undefined ones read 0 */
    qhca_wr(t, QHCA_REG_VERSION, 0xdeadbeef);
    g_assert_cmphex(qhca_rd(t, QHCA_REG_VERSION), ==, QHCA_VERSION);
    qhca_wr(t, QHCA_REG_MAC_LO, 0);
    g_assert_cmphex(qhca_rd(t, QHCA_REG_MAC_LO), ==, 0x12005452);
    qhca_wr(t, 0xffc, 0x1);
    g_assert_cmphex(qhca_rd(t, 0xffc), ==, 0);
    /* VERSION and MAC_LO writes, the write and the read of 0xffc */
    g_assert_cmpuint(qhca_rd(t, QHCA_REG_STAT_GUEST_ERRORS), ==, 4);
}

/*
 * The queue registers (three blocks of base LO/HI and log2 depth, 0x10
 * apart, found by one lookup in the device): each keeps what is written to
 * it and no other, and the holes between the blocks (+0xc) are undefined.
 */
static void test_queue_registers(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    static const uint32_t base[] = {
        QHCA_REG_CMDQ_BASE_LO, QHCA_REG_CMDCQ_BASE_LO, QHCA_REG_AEQ_BASE_LO,
    };
    QQhca *t = obj;
    unsigned i;

    for (i = 0; i < ARRAY_SIZE(base); i++) {
        qhca_wr(t, base[i], 0x1000 * (i + 1));
        qhca_wr(t, base[i] + 4, 0x10 + i);
        qhca_wr(t, base[i] + 8, 2 + i);
    }
    for (i = 0; i < ARRAY_SIZE(base); i++) {
        g_assert_cmphex(qhca_rd(t, base[i]), ==, 0x1000 * (i + 1));
        g_assert_cmphex(qhca_rd(t, base[i] + 4), ==, 0x10 + i);
        g_assert_cmphex(qhca_rd(t, base[i] + 8), ==, 2 + i);
    }
    g_assert_cmpuint(qhca_rd(t, QHCA_REG_STAT_GUEST_ERRORS), ==, 0);
    for (i = 0; i < ARRAY_SIZE(base); i++) {
        qhca_wr(t, base[i] + 0xc, 0x55);
        g_assert_cmphex(qhca_rd(t, base[i] + 0xc), ==, 0);
    }
    /* the holes changed nothing */
    g_assert_cmphex(qhca_rd(t, QHCA_REG_CMDQ_LOG_DEPTH), ==, 2);
    g_assert_cmphex(qhca_rd(t, QHCA_REG_CMDCQ_BASE_LO), ==, 0x2000);
    g_assert_cmpuint(qhca_rd(t, QHCA_REG_STAT_GUEST_ERRORS), ==, 6);
}

static void test_msix(void *obj, void *data,
                      QGuestAllocator *alloc)
{
    QQhca *t = obj;
    uint8_t cap;
    uint16_t ctrl;
    uint32_t table;

    cap = qpci_find_capability(&t->dev, PCI_CAP_ID_MSIX, 0);
    g_assert_cmpint(cap, !=, 0);
    ctrl = qpci_config_readw(&t->dev, cap + PCI_MSIX_FLAGS);
    g_assert_cmpuint((ctrl & PCI_MSIX_FLAGS_QSIZE) + 1, ==, QHCA_MSIX_VECTORS);
    table = qpci_config_readl(&t->dev, cap + PCI_MSIX_TABLE);
    g_assert_cmpuint(table & PCI_MSIX_TABLE_BIR, ==, QHCA_MSIX_BAR);
    table = qpci_config_readl(&t->dev, cap + PCI_MSIX_PBA);
    g_assert_cmpuint(table & PCI_MSIX_PBA_BIR, ==, QHCA_MSIX_BAR);

    qpci_msix_enable(&t->dev);
    g_assert_true(t->dev.msix_enabled);
    ctrl = qpci_config_readw(&t->dev, cap + PCI_MSIX_FLAGS);
    g_assert_cmphex(ctrl & PCI_MSIX_FLAGS_ENABLE, ==, PCI_MSIX_FLAGS_ENABLE);
    qpci_msix_disable(&t->dev);
}

static void set_queue_regs(QQhca *t)
{
    qhca_wr(t, QHCA_REG_CMDQ_BASE_LO, 0x101000);
    qhca_wr(t, QHCA_REG_CMDQ_BASE_HI, 0);
    qhca_wr(t, QHCA_REG_CMDQ_LOG_DEPTH, 3);
    qhca_wr(t, QHCA_REG_CMDCQ_BASE_LO, 0x102000);
    qhca_wr(t, QHCA_REG_CMDCQ_LOG_DEPTH, 3);
    qhca_wr(t, QHCA_REG_AEQ_BASE_LO, 0x103000);
    qhca_wr(t, QHCA_REG_AEQ_LOG_DEPTH, 4);
}

static void test_enable_bad_config(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    QQhca *t = obj;

    /* No command completion ring: enabling fails and reports why */
    qhca_wr(t, QHCA_REG_CMDQ_BASE_LO, 0x101000);
    qhca_wr(t, QHCA_REG_CMDQ_LOG_DEPTH, 3);
    qhca_wr(t, QHCA_REG_AEQ_BASE_LO, 0x103000);
    qhca_wr(t, QHCA_REG_AEQ_LOG_DEPTH, 4);
    qhca_wr(t, QHCA_REG_CTRL, QHCA_CTRL_ENABLE);
    g_assert_cmphex(qhca_rd(t, QHCA_REG_STATUS), ==, QHCA_STATUS_FATAL);
    g_assert_cmpuint(qhca_rd(t, QHCA_REG_FATAL_CODE), ==,
                     QHCA_FATAL_BAD_CONFIG);
    /* A reset recovers */
    qhca_wr(t, QHCA_REG_CTRL, QHCA_CTRL_RESET);
    set_queue_regs(t);
    qhca_wr(t, QHCA_REG_CTRL, QHCA_CTRL_ENABLE);
    g_assert_cmphex(qhca_rd(t, QHCA_REG_STATUS), ==, QHCA_STATUS_READY);
}

static void check_queue_regs_clear(QQhca *t)
{
    g_assert_cmphex(qhca_rd(t, QHCA_REG_CTRL), ==, 0);
    g_assert_cmphex(qhca_rd(t, QHCA_REG_STATUS), ==, 0);
    g_assert_cmphex(qhca_rd(t, QHCA_REG_CMDQ_BASE_LO), ==, 0);
    g_assert_cmphex(qhca_rd(t, QHCA_REG_CMDQ_BASE_HI), ==, 0);
    g_assert_cmphex(qhca_rd(t, QHCA_REG_CMDQ_LOG_DEPTH), ==, 0);
    g_assert_cmphex(qhca_rd(t, QHCA_REG_AEQ_BASE_LO), ==, 0);
    g_assert_cmphex(qhca_rd(t, QHCA_REG_AEQ_LOG_DEPTH), ==, 0);
}

static void test_enable_and_reset(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    QQhca *t = obj;

    set_queue_regs(t);
    g_assert_cmphex(qhca_rd(t, QHCA_REG_CMDQ_BASE_LO), ==, 0x101000);
    g_assert_cmphex(qhca_rd(t, QHCA_REG_CMDQ_LOG_DEPTH), ==, 3);

    qhca_wr(t, QHCA_REG_CTRL, QHCA_CTRL_ENABLE);
    g_assert_cmphex(qhca_rd(t, QHCA_REG_CTRL), ==, QHCA_CTRL_ENABLE);
    g_assert_cmphex(qhca_rd(t, QHCA_REG_STATUS) & QHCA_STATUS_READY, ==,
                    QHCA_STATUS_READY);

    /* Queue registers are locked while the device is enabled */
    qhca_wr(t, QHCA_REG_CMDQ_BASE_LO, 0x5000);
    g_assert_cmphex(qhca_rd(t, QHCA_REG_CMDQ_BASE_LO), ==, 0x101000);

    /* Software reset clears everything and reads back 0 */
    qhca_wr(t, QHCA_REG_CTRL, QHCA_CTRL_RESET);
    check_queue_regs_clear(t);

    /* So does a system reset */
    set_queue_regs(t);
    qhca_wr(t, QHCA_REG_CTRL, QHCA_CTRL_ENABLE);
    qtest_system_reset(t->qts);
    /* The reset also cleared the BARs and the command register: remap */
    qpci_iounmap(&t->dev, t->reg);
    qpci_iounmap(&t->dev, t->db);
    qpci_device_enable(&t->dev);
    t->reg = qpci_iomap(&t->dev, QHCA_REG_BAR, NULL);
    t->db = qpci_iomap(&t->dev, QHCA_DB_BAR, NULL);
    g_assert_cmphex(qhca_rd(t, QHCA_REG_VERSION), ==, QHCA_VERSION);
    check_queue_regs_clear(t);
}

static void test_doorbell_page_reads(void *obj, void *data,
                                     QGuestAllocator *alloc)
{
    QQhca *t = obj;

    /* Doorbell pages are write-only: reads return 0 and count an error */
    g_assert_cmphex(qpci_io_readl(&t->dev, t->db, QHCA_DB_SQ), ==, 0);
    g_assert_cmpuint(qhca_rd(t, QHCA_REG_STAT_GUEST_ERRORS), ==, 1);
}
static void test_cmd_query(void *obj, void *data,
                           QGuestAllocator *alloc)
{
    QQhca *d = obj;
    struct qhca_device_attr a;
    struct qhca_port_attr p;
    static const uint8_t guid[8] = { 0x50, 0x54, 0x00, 0xff, 0xfe,
                                     0x12, 0x34, 0x56 };

    qhca_enable(d);
    qhca_cmd_ok(d, QHCA_CMD_QUERY_DEVICE, NULL, 0);
    qtest_memread(d->qts, d->qd.resp, &a, sizeof(a));
    g_assert_cmphex(le32_to_cpu(a.vendor_id), ==, QHCA_PCI_VENDOR_ID);
    g_assert_cmphex(le32_to_cpu(a.vendor_part_id), ==, QHCA_PCI_DEVICE_ID);
    g_assert_cmpuint(le32_to_cpu(a.max_sge), ==, QHCA_MAX_SGE);
    g_assert_cmpuint(le32_to_cpu(a.max_inline), ==, QHCA_MAX_INLINE);
    g_assert_cmpuint(le32_to_cpu(a.max_qp), >=, 64);
    g_assert_cmpuint(le32_to_cpu(a.max_eq), ==, QHCA_MSIX_VECTORS - 1);
    g_assert_true(le32_to_cpu(a.caps) & QHCA_CAP_RC);
    /* EUI-64 from the MAC, universal/local bit flipped */
    g_assert_cmpmem(&a.node_guid, 8, guid, 8);

    qhca_cmd_ok(d, QHCA_CMD_QUERY_PORT, NULL, 0);
    qtest_memread(d->qts, d->qd.resp, &p, sizeof(p));
    g_assert_cmpuint(le32_to_cpu(p.link_up), ==, 1);
    g_assert_cmpuint(le32_to_cpu(p.max_mtu), ==, 4096);
    g_assert_cmpuint(le32_to_cpu(p.gid_tbl_len), ==, QHCA_GID_TABLE_LEN);
}

static void test_cmd_bad(void *obj, void *data,
                         QGuestAllocator *alloc)
{
    QQhca *d = obj;
    struct qhca_cmd_gid g = { .index = cpu_to_le32(QHCA_GID_TABLE_LEN) };
    uint32_t errors;

    qhca_enable(d);
    g_assert_cmpint(qhca_cmd_post(d, 0x7f, NULL, 0, NULL), ==,
                    QHCA_CMD_ERR_OPCODE);
    g_assert_cmpint(qhca_cmd_post(d, QHCA_CMD_ADD_GID, &g, sizeof(g), NULL), ==,
                    QHCA_CMD_ERR_PARAM);
    g_assert_cmpint(qhca_cmd_obj(d, QHCA_CMD_DESTROY_QP, 77), ==,
                    QHCA_CMD_ERR_HANDLE);
    g_assert_cmpint(qhca_cmd_obj(d, QHCA_CMD_DESTROY_CQ, 0xffffffff), ==,
                    QHCA_CMD_ERR_HANDLE);
    g_assert_cmpint(qhca_cmd_obj(d, QHCA_CMD_DEREG_MR, 0), ==,
                    QHCA_CMD_ERR_HANDLE);

    /* A doorbell claiming more commands than the queue holds is dropped */
    errors = qhca_rd(d, QHCA_REG_STAT_GUEST_ERRORS);
    qhca_db(d, 0, QHCA_DB_CMDQ, d->qd.cmdq_pi + (1 << QHCA_QOS_CMDQ_LOG) + 1);
    g_assert_cmpuint(qhca_rd(d, QHCA_REG_STAT_GUEST_ERRORS), ==, errors + 1);
    /* Command doorbells on a user page are dropped too */
    qhca_db(d, 5, QHCA_DB_CMDQ, d->qd.cmdq_pi + 1);
    g_assert_cmpuint(qhca_rd(d, QHCA_REG_STAT_GUEST_ERRORS), ==, errors + 2);
    /* ... and the queue still works */
    qhca_mk_pd(d);

    /* Fill the command queue past its wrap: completions keep coming */
    for (int i = 0; i < 3 * (1 << QHCA_QOS_CMDQ_LOG); i++) {
        qhca_cmd_ok(d, QHCA_CMD_QUERY_PORT, NULL, 0);
    }
}

static void test_cmd_pd_mr(void *obj, void *data,
                           QGuestAllocator *alloc)
{
    QQhca *d = obj;
    struct qhca_cmd_reg_mr m = { 0 };
    uint32_t pdn, key, key2, key3;

    qhca_enable(d);
    pdn = qhca_mk_pd(d);
    g_assert_cmpuint(pdn, ==, 1);

    m.pdn = cpu_to_le32(pdn);
    m.access = cpu_to_le32(QHCA_ACCESS_LOCAL_WRITE | QHCA_ACCESS_REMOTE_READ);
    m.iova = cpu_to_le64(0x7f0000001234ULL);
    m.length = cpu_to_le64(3 * 4096);
    m.mem = qhca_mem(d, 4, NULL);     /* 0x234 + 3 pages needs 4 pages */
    m.key_variant = cpu_to_le32(0x5a);
    key = qhca_cmd_ok(d, QHCA_CMD_REG_MR, &m, sizeof(m));
    g_assert_cmphex(key & QHCA_KEY_VARIANT_MASK, ==, 0x5a);
    g_assert_cmpuint(key >> QHCA_KEY_INDEX_SHIFT, >=, 1);

    /* Too few pages for the range */
    m.mem = qhca_mem(d, 3, NULL);
    g_assert_cmpint(qhca_cmd_post(d, QHCA_CMD_REG_MR, &m, sizeof(m), NULL), ==,
                    QHCA_CMD_ERR_PARAM);
    /* Bad page size, access bits, zero length, wrapping range */
    m.mem = qhca_mem(d, 4, NULL);
    m.mem.page_shift = 11;
    g_assert_cmpint(qhca_cmd_post(d, QHCA_CMD_REG_MR, &m, sizeof(m), NULL), ==,
                    QHCA_CMD_ERR_PARAM);
    m.mem.page_shift = 12;
    m.access = cpu_to_le32(0x100);
    g_assert_cmpint(qhca_cmd_post(d, QHCA_CMD_REG_MR, &m, sizeof(m), NULL), ==,
                    QHCA_CMD_ERR_PARAM);
    m.access = 0;
    m.length = 0;
    g_assert_cmpint(qhca_cmd_post(d, QHCA_CMD_REG_MR, &m, sizeof(m), NULL), ==,
                    QHCA_CMD_ERR_PARAM);
    m.length = cpu_to_le64(4096);
    m.iova = cpu_to_le64(UINT64_MAX - 100);
    g_assert_cmpint(qhca_cmd_post(d, QHCA_CMD_REG_MR, &m, sizeof(m), NULL), ==,
                    QHCA_CMD_ERR_PARAM);
    /* A page list that is not in guest memory */
    m.iova = 0;
    m.mem.pbl_addr = cpu_to_le64(QHCA_NO_RAM_ADDR);
    g_assert_cmpint(qhca_cmd_post(d, QHCA_CMD_REG_MR, &m, sizeof(m), NULL), ==,
                    QHCA_CMD_ERR_DMA);
    /* A page list entry that is not page aligned */
    m.mem = qhca_mem(d, 1, NULL);
    qtest_writeq(d->qts, le64_to_cpu(m.mem.pbl_addr), 0x300004);
    g_assert_cmpint(qhca_cmd_post(d, QHCA_CMD_REG_MR, &m, sizeof(m), NULL), ==,
                    QHCA_CMD_ERR_PARAM);
    /* No such PD */
    m.mem = qhca_mem(d, 1, NULL);
    m.pdn = cpu_to_le32(9);
    g_assert_cmpint(qhca_cmd_post(d, QHCA_CMD_REG_MR, &m, sizeof(m), NULL), ==,
                    QHCA_CMD_ERR_HANDLE);

    /* A guest-physical (DMA) MR needs no page list */
    m.pdn = cpu_to_le32(pdn);
    m.flags = cpu_to_le32(QHCA_MR_PHYS);
    m.mem.pbl_addr = cpu_to_le64(QHCA_NO_RAM_ADDR);
    key2 = qhca_cmd_ok(d, QHCA_CMD_REG_MR, &m, sizeof(m));
    g_assert_cmphex(key2, !=, key);
    /* ... and may cover all of guest memory, unlike a page-list MR */
    m.length = cpu_to_le64(1ULL << 40);
    key3 = qhca_cmd_ok(d, QHCA_CMD_REG_MR, &m, sizeof(m));
    g_assert_cmpint(qhca_cmd_obj(d, QHCA_CMD_DEREG_MR, key3), ==,
                    QHCA_CMD_OK);
    m.flags = 0;
    m.mem = qhca_mem(d, 1, NULL);
    g_assert_cmpint(qhca_cmd_post(d, QHCA_CMD_REG_MR, &m, sizeof(m), NULL), ==,
                    QHCA_CMD_ERR_PARAM);
    m.length = cpu_to_le64(4096);

    /* The PD is busy while MRs use it */
    g_assert_cmpint(qhca_cmd_obj(d, QHCA_CMD_DEALLOC_PD, pdn), ==,
                    QHCA_CMD_ERR_BUSY);
    /* Deregistration needs the exact key */
    g_assert_cmpint(qhca_cmd_obj(d, QHCA_CMD_DEREG_MR, key ^ 1), ==,
                    QHCA_CMD_ERR_HANDLE);
    g_assert_cmpint(qhca_cmd_obj(d, QHCA_CMD_DEREG_MR, key), ==, QHCA_CMD_OK);
    g_assert_cmpint(qhca_cmd_obj(d, QHCA_CMD_DEREG_MR, key), ==,
                    QHCA_CMD_ERR_HANDLE);
    g_assert_cmpint(qhca_cmd_obj(d, QHCA_CMD_DEREG_MR, key2), ==, QHCA_CMD_OK);
    g_assert_cmpint(qhca_cmd_obj(d, QHCA_CMD_DEALLOC_PD, pdn), ==, QHCA_CMD_OK);
    g_assert_cmpint(qhca_cmd_obj(d, QHCA_CMD_DEALLOC_PD, pdn), ==,
                    QHCA_CMD_ERR_HANDLE);
}

static void test_cmd_alloc_mr(void *obj, void *data,
                              QGuestAllocator *alloc)
{
    QQhca *d = obj;
    struct qhca_cmd_alloc_mr f = { 0 };
    uint32_t key;

    qhca_enable(d);
    f.pdn = cpu_to_le32(qhca_mk_pd(d));
    f.max_pages = cpu_to_le32(1u << 20);    /* above max_fast_reg_pages */
    g_assert_cmpint(qhca_cmd_post(d, QHCA_CMD_ALLOC_MR, &f, sizeof(f), NULL),
                    ==, QHCA_CMD_ERR_PARAM);
    f.max_pages = cpu_to_le32(16);
    f.key_variant = cpu_to_le32(7);
    key = qhca_cmd_ok(d, QHCA_CMD_ALLOC_MR, &f, sizeof(f));
    g_assert_cmphex(key & 0xff, ==, 7);
    g_assert_cmpint(qhca_cmd_obj(d, QHCA_CMD_DEREG_MR, key), ==, QHCA_CMD_OK);
}

static void test_cmd_eq_cq(void *obj, void *data,
                           QGuestAllocator *alloc)
{
    QQhca *d = obj;
    struct qhca_cmd_create_eq e = { 0 };
    struct qhca_cmd_create_cq c = { 0 };
    uint32_t eqn, cqn;

    qhca_enable(d);
    /* Vector 0 belongs to the async EQ */
    e.mem = qhca_mem(d, 1, NULL);
    e.log_depth = 4;
    e.vector = 0;
    g_assert_cmpint(qhca_cmd_post(d, QHCA_CMD_CREATE_EQ, &e, sizeof(e), NULL),
                    ==, QHCA_CMD_ERR_PARAM);
    e.vector = cpu_to_le32(QHCA_MSIX_VECTORS);
    g_assert_cmpint(qhca_cmd_post(d, QHCA_CMD_CREATE_EQ, &e, sizeof(e), NULL),
                    ==, QHCA_CMD_ERR_PARAM);
    eqn = qhca_mk_eq(d, 1, NULL);

    /* 256 CQEs of 32 bytes need 2 pages */
    c.mem = qhca_mem(d, 1, NULL);
    c.log_depth = 8;
    c.eqn = cpu_to_le32(eqn);
    g_assert_cmpint(qhca_cmd_post(d, QHCA_CMD_CREATE_CQ, &c, sizeof(c), NULL),
                    ==, QHCA_CMD_ERR_PARAM);
    c.log_depth = 0;
    g_assert_cmpint(qhca_cmd_post(d, QHCA_CMD_CREATE_CQ, &c, sizeof(c), NULL),
                    ==, QHCA_CMD_ERR_PARAM);
    c.log_depth = 7;
    c.eqn = cpu_to_le32(eqn + 1);
    g_assert_cmpint(qhca_cmd_post(d, QHCA_CMD_CREATE_CQ, &c, sizeof(c), NULL),
                    ==, QHCA_CMD_ERR_HANDLE);
    c.eqn = cpu_to_le32(eqn);
    c.db_page = cpu_to_le32(QHCA_DB_PAGES);
    g_assert_cmpint(qhca_cmd_post(d, QHCA_CMD_CREATE_CQ, &c, sizeof(c), NULL),
                    ==, QHCA_CMD_ERR_PARAM);
    c.db_page = 0;
    cqn = qhca_cmd_ok(d, QHCA_CMD_CREATE_CQ, &c, sizeof(c));

    g_assert_cmpint(qhca_cmd_obj(d, QHCA_CMD_DESTROY_EQ, eqn), ==,
                    QHCA_CMD_ERR_BUSY);
    g_assert_cmpint(qhca_cmd_obj(d, QHCA_CMD_DESTROY_CQ, cqn), ==, QHCA_CMD_OK);
    g_assert_cmpint(qhca_cmd_obj(d, QHCA_CMD_DESTROY_EQ, eqn), ==, QHCA_CMD_OK);
}

typedef struct QpFixture {
    QQhca *d;
    uint32_t pdn, eqn, cqn, qpn;
    uint64_t eq_ring, cq_ring, sq, rq;
} QpFixture;

static void qp_fixture(QpFixture *f, void *obj, uint8_t type)
{
    struct qhca_cmd_create_qp q;

    f->d = obj;
    qhca_enable(f->d);
    f->pdn = qhca_mk_pd(f->d);
    f->eqn = qhca_mk_eq(f->d, 1, &f->eq_ring);
    f->cqn = qhca_mk_cq(f->d, f->eqn, 6, &f->cq_ring);
    q = qhca_qp_desc(f->d, type, f->pdn, f->cqn, &f->sq, &f->rq);
    f->qpn = qhca_cmd_ok(f->d, QHCA_CMD_CREATE_QP, &q, sizeof(q));
}

#define M(x) QHCA_QP_ATTR_##x

/* RESET -> INIT -> RTR -> RTS for an RC QP */
static void rc_to_rts(QQhca *d, uint32_t qpn)
{
    struct qhca_qp_attr a = { 0 };

    a.qp_state = QHCA_QPS_INIT;
    a.access_flags = cpu_to_le32(QHCA_ACCESS_REMOTE_WRITE);
    g_assert_cmpint(qhca_modify_qp(d, qpn, M(STATE) | M(PKEY_INDEX) | M(PORT) |
                                   M(ACCESS_FLAGS), &a), ==, QHCA_CMD_OK);
    a.qp_state = QHCA_QPS_RTR;
    a.path_mtu = 3;
    a.dest_qpn = cpu_to_le32(0x123);
    a.rq_psn = cpu_to_le32(0x1000);
    a.max_dest_rd_atomic = 4;
    a.min_rnr_timer = 12;
    a.sgid_index = 1;
    a.hop_limit = 64;
    a.dgid[10] = a.dgid[11] = 0xff;
    a.dgid[15] = 2;
    g_assert_cmpint(qhca_modify_qp(d, qpn, M(STATE) | M(AV) | M(PATH_MTU) |
                                   M(DEST_QPN) | M(RQ_PSN) |
                                   M(MAX_DEST_RD_ATOMIC) | M(MIN_RNR_TIMER),
                                   &a), ==, QHCA_CMD_OK);
    a.qp_state = QHCA_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.sq_psn = cpu_to_le32(0x2000);
    a.max_rd_atomic = 4;
    g_assert_cmpint(qhca_modify_qp(d, qpn, M(STATE) | M(TIMEOUT) |
                                   M(RETRY_CNT) | M(RNR_RETRY) | M(SQ_PSN) |
                                   M(MAX_QP_RD_ATOMIC), &a), ==, QHCA_CMD_OK);
}

static void test_cmd_qp_states(void *obj, void *data,
                               QGuestAllocator *alloc)
{
    QpFixture f;
    struct qhca_qp_attr a = { 0 };

    qp_fixture(&f, obj, QHCA_QPT_RC);
    g_assert_cmpuint(f.qpn, >=, 2);
    g_assert_cmpuint(qhca_query_qp(f.d, f.qpn).qp_state, ==, QHCA_QPS_RESET);

    /* RESET -> RTS is not a transition */
    a.qp_state = QHCA_QPS_RTS;
    g_assert_cmpint(qhca_modify_qp(f.d, f.qpn, M(STATE), &a), ==,
                    QHCA_CMD_ERR_STATE);
    /* RESET -> INIT without its required attributes */
    a.qp_state = QHCA_QPS_INIT;
    g_assert_cmpint(qhca_modify_qp(f.d, f.qpn, M(STATE) | M(PORT), &a), ==,
                    QHCA_CMD_ERR_STATE);
    /* ... or with one that is not allowed there */
    g_assert_cmpint(qhca_modify_qp(f.d, f.qpn, M(STATE) | M(PKEY_INDEX) |
                                   M(PORT) | M(ACCESS_FLAGS) | M(SQ_PSN), &a),
                    ==, QHCA_CMD_ERR_STATE);
    /* CUR_STATE must match */
    a.cur_qp_state = QHCA_QPS_RTS;
    g_assert_cmpint(qhca_modify_qp(f.d, f.qpn, M(STATE) | M(CUR_STATE), &a), ==,
                    QHCA_CMD_ERR_STATE);
    /* The AV needs a valid source GID */
    qhca_add_gid(f.d, 1, 0xc6120001);
    rc_to_rts(f.d, f.qpn);

    a = qhca_query_qp(f.d, f.qpn);
    g_assert_cmpuint(a.qp_state, ==, QHCA_QPS_RTS);
    g_assert_cmpuint(le32_to_cpu(a.dest_qpn), ==, 0x123);
    g_assert_cmpuint(le32_to_cpu(a.sq_psn), ==, 0x2000);
    g_assert_cmpuint(le32_to_cpu(a.rq_psn), ==, 0x1000);
    g_assert_cmpuint(a.path_mtu, ==, 3);
    g_assert_cmpuint(a.timeout, ==, 14);
    g_assert_cmpuint(a.max_dest_rd_atomic, ==, 4);
    g_assert_cmpuint(le32_to_cpu(a.access_flags), ==,
                     QHCA_ACCESS_REMOTE_WRITE);

    /* RTS -> SQD -> RTS, then out-of-range values */
    memset(&a, 0, sizeof(a));
    a.qp_state = QHCA_QPS_SQD;
    g_assert_cmpint(qhca_modify_qp(f.d, f.qpn, M(STATE), &a), ==, QHCA_CMD_OK);
    a.qp_state = QHCA_QPS_SQD;
    a.retry_cnt = 8;
    g_assert_cmpint(qhca_modify_qp(f.d, f.qpn, M(STATE) | M(RETRY_CNT), &a), ==,
                    QHCA_CMD_ERR_PARAM);
    a.qp_state = QHCA_QPS_RTS;
    g_assert_cmpint(qhca_modify_qp(f.d, f.qpn, M(STATE), &a), ==, QHCA_CMD_OK);

    /* Anything -> ERR -> RESET -> INIT */
    a.qp_state = QHCA_QPS_ERR;
    g_assert_cmpint(qhca_modify_qp(f.d, f.qpn, M(STATE), &a), ==, QHCA_CMD_OK);
    a.qp_state = QHCA_QPS_RESET;
    g_assert_cmpint(qhca_modify_qp(f.d, f.qpn, M(STATE), &a), ==, QHCA_CMD_OK);
    g_assert_cmpuint(qhca_query_qp(f.d, f.qpn).qp_state, ==, QHCA_QPS_RESET);

    /* Objects in use cannot go away; the QP can */
    g_assert_cmpint(qhca_cmd_obj(f.d, QHCA_CMD_DESTROY_CQ, f.cqn), ==,
                    QHCA_CMD_ERR_BUSY);
    g_assert_cmpint(qhca_cmd_obj(f.d, QHCA_CMD_DEALLOC_PD, f.pdn), ==,
                    QHCA_CMD_ERR_BUSY);
    g_assert_cmpint(qhca_cmd_obj(f.d, QHCA_CMD_DESTROY_QP, f.qpn), ==,
                    QHCA_CMD_OK);
    g_assert_cmpint(qhca_cmd_obj(f.d, QHCA_CMD_DESTROY_CQ, f.cqn), ==,
                    QHCA_CMD_OK);
    g_assert_cmpint(qhca_cmd_obj(f.d, QHCA_CMD_DEALLOC_PD, f.pdn), ==,
                    QHCA_CMD_OK);
}

static void test_cmd_qp_create_bad(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    QpFixture f;
    struct qhca_cmd_create_qp q;

    qp_fixture(&f, obj, QHCA_QPT_UD);
    /* QP types the hardware contract does not define */
    q = qhca_qp_desc(f.d, 0, f.pdn, f.cqn, NULL, NULL);
    g_assert_cmpint(qhca_cmd_post(f.d, QHCA_CMD_CREATE_QP, &q, sizeof(q), NULL),
                    ==, QHCA_CMD_ERR_PARAM);
    q.type = QHCA_QPT_UD + 1;
    g_assert_cmpint(qhca_cmd_post(f.d, QHCA_CMD_CREATE_QP, &q, sizeof(q), NULL),
                    ==, QHCA_CMD_ERR_PARAM);
    q = qhca_qp_desc(f.d, QHCA_QPT_RC, f.pdn, f.cqn + 5, NULL, NULL);
    g_assert_cmpint(qhca_cmd_post(f.d, QHCA_CMD_CREATE_QP, &q, sizeof(q), NULL),
                    ==, QHCA_CMD_ERR_HANDLE);
    q = qhca_qp_desc(f.d, QHCA_QPT_RC, f.pdn, f.cqn, NULL, NULL);
    q.sq_log_stride = 12;
    g_assert_cmpint(qhca_cmd_post(f.d, QHCA_CMD_CREATE_QP, &q, sizeof(q), NULL),
                    ==, QHCA_CMD_ERR_PARAM);
    q.sq_log_stride = 7;
    q.max_inline = cpu_to_le32(128);    /* more than stride - header */
    g_assert_cmpint(qhca_cmd_post(f.d, QHCA_CMD_CREATE_QP, &q, sizeof(q), NULL),
                    ==, QHCA_CMD_ERR_PARAM);
    q.max_inline = 0;
    q.sq_log_depth = 6;                 /* 64 x 128 bytes > one page */
    g_assert_cmpint(qhca_cmd_post(f.d, QHCA_CMD_CREATE_QP, &q, sizeof(q), NULL),
                    ==, QHCA_CMD_ERR_PARAM);
    q.sq_log_depth = 4;
    q.srqn = cpu_to_le32(3);
    g_assert_cmpint(qhca_cmd_post(f.d, QHCA_CMD_CREATE_QP, &q, sizeof(q), NULL),
                    ==, QHCA_CMD_ERR_HANDLE);

    /* One GSI QP, always QP1 */
    q = qhca_qp_desc(f.d, QHCA_QPT_GSI, f.pdn, f.cqn, NULL, NULL);
    g_assert_cmpuint(qhca_cmd_ok(f.d, QHCA_CMD_CREATE_QP, &q, sizeof(q)), ==,
                     1);
    g_assert_cmpint(qhca_cmd_post(f.d, QHCA_CMD_CREATE_QP, &q, sizeof(q), NULL),
                    ==, QHCA_CMD_ERR_NO_RESOURCES);
}

/* Read CQE @ci of a ring of 2^log entries, waiting for it */
static struct qhca_cqe read_cqe(QQhca *d, uint64_t ring, uint32_t log,
                                uint16_t ci)
{
    struct qhca_cqe cqe;

    g_assert_true(qhca_wait_entry(d, ring, log, QHCA_CQE_SIZE,
                                  offsetof(struct qhca_cqe, owner), ci));
    qtest_memread(d->qts, ring + (ci & ((1u << log) - 1)) * QHCA_CQE_SIZE,
                  &cqe, sizeof(cqe));
    return cqe;
}

static void test_qp_flush(void *obj, void *data,
                          QGuestAllocator *alloc)
{
    QpFixture f;
    struct qhca_qp_attr a = { 0 };
    struct qhca_eqe eqe;
    uint16_t ci = 0;
    int i;

    qp_fixture(&f, obj, QHCA_QPT_UD);
    /* Three send WQEs and two receive WQEs, then ERR: all are flushed */
    for (i = 0; i < 3; i++) {
        qtest_writeq(f.d->qts, f.sq + i * 128 +
                     offsetof(struct qhca_send_wqe, wr_id), 0x5000 + i);
    }
    for (i = 0; i < 2; i++) {
        qtest_writeq(f.d->qts, f.rq + i * 64, 0x7000 + i);
    }
    qhca_db(f.d, 0, QHCA_DB_SQ, f.qpn | 3 << 16);
    qhca_db(f.d, 0, QHCA_DB_RQ, f.qpn | 2 << 16);
    /* A doorbell from another page is not this QP's */
    qhca_db(f.d, 3, QHCA_DB_SQ, f.qpn | 4 << 16);
    /* Arm the CQ and the EQ so that completion reports an event */
    qhca_db(f.d, 0, QHCA_DB_CQ_ARM, f.cqn);
    qhca_db(f.d, 0, QHCA_DB_EQ, f.eqn | QHCA_DB_EQ_ARM);

    a.qp_state = QHCA_QPS_ERR;
    g_assert_cmpint(qhca_modify_qp(f.d, f.qpn, M(STATE), &a), ==, QHCA_CMD_OK);
    for (i = 0; i < 3; i++, ci++) {
        struct qhca_cqe c = read_cqe(f.d, f.cq_ring, 6, ci);

        g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 0x5000 + i);
        g_assert_cmpuint(c.status, ==, QHCA_CQE_WR_FLUSH_ERR);
        g_assert_cmpuint(le32_to_cpu(c.qpn), ==, f.qpn);
    }
    for (i = 0; i < 2; i++, ci++) {
        struct qhca_cqe c = read_cqe(f.d, f.cq_ring, 6, ci);

        g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 0x7000 + i);
        g_assert_cmpuint(c.status, ==, QHCA_CQE_WR_FLUSH_ERR);
        g_assert_cmpuint(c.opcode, ==, QHCA_CQE_OP_RECV);
    }
    /* Nothing else: the fourth SQ doorbell came from the wrong page */
    g_assert_false(qhca_ring_has_entry(f.d, f.cq_ring, 6, QHCA_CQE_SIZE,
                                       offsetof(struct qhca_cqe, owner), ci));
    /* One completion event for the armed CQ */
    g_assert_true(qhca_wait_entry(f.d, f.eq_ring, 6, QHCA_EQE_SIZE,
                                  offsetof(struct qhca_eqe, owner), 0));
    qtest_memread(f.d->qts, f.eq_ring, &eqe, sizeof(eqe));
    g_assert_cmpuint(eqe.type, ==, QHCA_EQE_COMPLETION);
    g_assert_cmpuint(le32_to_cpu(eqe.obj), ==, f.cqn);
    g_assert_false(qhca_ring_has_entry(f.d, f.eq_ring, 6, QHCA_EQE_SIZE,
                                       offsetof(struct qhca_eqe, owner), 1));
    /* A consumer index beyond what was produced is refused */
    i = qhca_rd(f.d, QHCA_REG_STAT_GUEST_ERRORS);
    qhca_db(f.d, 0, QHCA_DB_CQ_CI, f.cqn | (ci + 1) << 16);
    g_assert_cmpuint(qhca_rd(f.d, QHCA_REG_STAT_GUEST_ERRORS), ==, i + 1);
}

static void test_cmd_srq_ah(void *obj, void *data,
                            QGuestAllocator *alloc)
{
    QQhca *d = obj;
    struct qhca_cmd_create_srq s = { 0 };
    struct qhca_cmd_modify_srq m = { 0 };
    struct qhca_cmd_create_ah ah = { 0 };
    struct qhca_srq_attr sa;
    uint32_t pdn, srqn, ahn;

    qhca_enable(d);
    pdn = qhca_mk_pd(d);
    s.mem = qhca_mem(d, 1, NULL);
    s.pdn = cpu_to_le32(pdn);
    s.log_depth = 5;
    s.log_stride = 7;
    s.limit = cpu_to_le32(32);          /* must be below the depth */
    g_assert_cmpint(qhca_cmd_post(d, QHCA_CMD_CREATE_SRQ, &s, sizeof(s), NULL),
                    ==, QHCA_CMD_ERR_PARAM);
    s.limit = cpu_to_le32(4);
    srqn = qhca_cmd_ok(d, QHCA_CMD_CREATE_SRQ, &s, sizeof(s));
    g_assert_cmpint(qhca_cmd_obj(d, QHCA_CMD_QUERY_SRQ, srqn), ==, QHCA_CMD_OK);
    qtest_memread(d->qts, d->qd.resp, &sa, sizeof(sa));
    g_assert_cmpuint(le32_to_cpu(sa.depth), ==, 32);
    g_assert_cmpuint(le32_to_cpu(sa.limit), ==, 4);
    g_assert_cmpuint(le32_to_cpu(sa.max_sge), ==, 7);
    m.srqn = cpu_to_le32(srqn);
    m.limit = cpu_to_le32(9);
    qhca_cmd_ok(d, QHCA_CMD_MODIFY_SRQ, &m, sizeof(m));
    g_assert_cmpint(qhca_cmd_obj(d, QHCA_CMD_QUERY_SRQ, srqn), ==, QHCA_CMD_OK);
    qtest_memread(d->qts, d->qd.resp, &sa, sizeof(sa));
    g_assert_cmpuint(le32_to_cpu(sa.limit), ==, 9);

    ah.pdn = cpu_to_le32(pdn);
    ah.sgid_index = QHCA_GID_TABLE_LEN;
    g_assert_cmpint(qhca_cmd_post(d, QHCA_CMD_CREATE_AH, &ah, sizeof(ah), NULL),
                    ==, QHCA_CMD_ERR_PARAM);
    ah.sgid_index = 0;
    ahn = qhca_cmd_ok(d, QHCA_CMD_CREATE_AH, &ah, sizeof(ah));
    g_assert_cmpint(qhca_cmd_obj(d, QHCA_CMD_DEALLOC_PD, pdn), ==,
                    QHCA_CMD_ERR_BUSY);
    g_assert_cmpint(qhca_cmd_obj(d, QHCA_CMD_DESTROY_AH, ahn), ==, QHCA_CMD_OK);
    g_assert_cmpint(qhca_cmd_obj(d, QHCA_CMD_DESTROY_SRQ, srqn), ==,
                    QHCA_CMD_OK);
    g_assert_cmpint(qhca_cmd_obj(d, QHCA_CMD_DESTROY_SRQ, srqn), ==,
                    QHCA_CMD_ERR_HANDLE);
    g_assert_cmpint(qhca_cmd_obj(d, QHCA_CMD_DEALLOC_PD, pdn), ==, QHCA_CMD_OK);
}

static void test_cmd_interrupt(void *obj, void *data,
                               QGuestAllocator *alloc)
{
    QQhca *d = obj;

    qhca_enable(d);
    qpci_msix_enable(&d->dev);
    /* Vectors start masked: a notification shows as a pending bit */
    g_assert_true(qpci_msix_masked(&d->dev, 0));
    g_assert_false(qpci_msix_pending(&d->dev, 0));
    /* Not armed: no interrupt */
    qhca_mk_pd(d);
    g_assert_false(qpci_msix_pending(&d->dev, 0));
    qhca_db(d, 0, QHCA_DB_CMDCQ, d->qd.cmdcq_ci | QHCA_DB_CMDCQ_ARM);
    qhca_mk_pd(d);
    g_assert_true(qpci_msix_pending(&d->dev, 0));
    qpci_msix_disable(&d->dev);
}

static void test_cmd_reset_frees(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    QQhca *d = obj;
    QpFixture f;
    uint32_t pdn;

    qp_fixture(&f, obj, QHCA_QPT_RC);
    /* A reset destroys every object: numbering starts over */
    qhca_enable(d);
    g_assert_cmpint(qhca_cmd_obj(d, QHCA_CMD_QUERY_QP, f.qpn), ==,
                    QHCA_CMD_ERR_HANDLE);
    pdn = qhca_mk_pd(d);
    g_assert_cmpuint(pdn, ==, f.pdn);
}

#undef M

/* Random commands and doorbells must not hurt the device */
static void test_cmd_fuzz(void *obj, void *data,
                          QGuestAllocator *alloc)
{
    QQhca *d = obj;
    uint32_t i, status_ok = 0;

    qhca_enable(d);
    qhca_mk_pd(d);
    for (i = 0; i < 3000; i++) {
        uint8_t payload[104];
        uint32_t *w = (uint32_t *)payload;
        uint16_t op = g_test_rand_int_range(0, QHCA_CMD_MAX + 2);
        unsigned j;

        for (j = 0; j < sizeof(payload) / 4; j++) {
            /* small numbers hit valid handles, large ones everything else */
            w[j] = g_test_rand_bit() ? g_test_rand_int_range(0, 8) :
                   g_test_rand_int();
        }
        if (qhca_cmd_post(d, op, payload, sizeof(payload), NULL) ==
            QHCA_CMD_OK) {
            status_ok++;
        }
        if (i % 16 == 0) {
            /* user pages only: page 0 carries this test's command queue */
            qhca_db(d, g_test_rand_int_range(1, QHCA_DB_PAGES),
                    g_test_rand_int_range(0, 0x30) & ~3, g_test_rand_int());
        }
    }
    /* Some random commands were valid; the device still answers */
    g_assert_cmpuint(status_ok, >, 0);
    qhca_cmd_ok(d, QHCA_CMD_QUERY_DEVICE, NULL, 0);
    g_assert_false(qhca_rd(d, QHCA_REG_STATUS) & QHCA_STATUS_FATAL);
}


/* Every test its own QEMU: counters and objects start from nothing */
static void *qhca_fresh_qemu(GString *cmd_line, void *arg)
{
    qos_invalidate_command_line();
    return arg;
}

static void qhca_register_tests(void)
{
    QOSGraphTestOptions opts = { .before = qhca_fresh_qemu };

    qos_add_test("pci/identity", "qhca", test_pci_identity, &opts);
    qos_add_test("pci/bars", "qhca", test_bars, &opts);
    qos_add_test("pci/msix", "qhca", test_msix, &opts);
    qos_add_test("regs/basic", "qhca", test_registers, &opts);
    qos_add_test("regs/queue-registers", "qhca", test_queue_registers,
                 &opts);
    qos_add_test("regs/enable-reset", "qhca", test_enable_and_reset, &opts);
    qos_add_test("regs/enable-bad-config", "qhca", test_enable_bad_config,
                 &opts);
    qos_add_test("doorbell/read", "qhca", test_doorbell_page_reads, &opts);
    qos_add_test("cmd/query", "qhca", test_cmd_query, &opts);
    qos_add_test("cmd/bad", "qhca", test_cmd_bad, &opts);
    qos_add_test("cmd/pd-mr", "qhca", test_cmd_pd_mr, &opts);
    qos_add_test("cmd/alloc-mr", "qhca", test_cmd_alloc_mr, &opts);
    qos_add_test("cmd/eq-cq", "qhca", test_cmd_eq_cq, &opts);
    qos_add_test("cmd/qp-states", "qhca", test_cmd_qp_states, &opts);
    qos_add_test("cmd/qp-create-bad", "qhca", test_cmd_qp_create_bad, &opts);
    qos_add_test("cmd/srq-ah", "qhca", test_cmd_srq_ah, &opts);
    qos_add_test("cmd/interrupt", "qhca", test_cmd_interrupt, &opts);
    qos_add_test("cmd/reset-frees", "qhca", test_cmd_reset_frees, &opts);
    qos_add_test("cmd/fuzz", "qhca", test_cmd_fuzz, &opts);
    qos_add_test("qp/flush", "qhca", test_qp_flush, &opts);
    /* QEMU refusing to start needs no device on the graph */
    qtest_add_func("/qhca/props/window", test_window_property);
}

libqos_init(qhca_register_tests);
