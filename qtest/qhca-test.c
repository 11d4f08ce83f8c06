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
#include "qemu/bswap.h"
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
    t->qts = qtest_initf("-machine q35 -nodefaults -m 256M "
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
    wr(t, QHCA_REG_CMDQ_BASE_LO, 0x101000);
    wr(t, QHCA_REG_CMDQ_BASE_HI, 0);
    wr(t, QHCA_REG_CMDQ_LOG_DEPTH, 3);
    wr(t, QHCA_REG_CMDCQ_BASE_LO, 0x102000);
    wr(t, QHCA_REG_CMDCQ_LOG_DEPTH, 3);
    wr(t, QHCA_REG_AEQ_BASE_LO, 0x103000);
    wr(t, QHCA_REG_AEQ_LOG_DEPTH, 4);
}

static void test_enable_bad_config(void)
{
    QhcaTest t;

    qhca_start(&t);
    /* No command completion ring: enabling fails and reports why */
    wr(&t, QHCA_REG_CMDQ_BASE_LO, 0x101000);
    wr(&t, QHCA_REG_CMDQ_LOG_DEPTH, 3);
    wr(&t, QHCA_REG_AEQ_BASE_LO, 0x103000);
    wr(&t, QHCA_REG_AEQ_LOG_DEPTH, 4);
    wr(&t, QHCA_REG_CTRL, QHCA_CTRL_ENABLE);
    g_assert_cmphex(rd(&t, QHCA_REG_STATUS), ==, QHCA_STATUS_FATAL);
    g_assert_cmpuint(rd(&t, QHCA_REG_FATAL_CODE), ==, QHCA_FATAL_BAD_CONFIG);
    /* A reset recovers */
    wr(&t, QHCA_REG_CTRL, QHCA_CTRL_RESET);
    set_queue_regs(&t);
    wr(&t, QHCA_REG_CTRL, QHCA_CTRL_ENABLE);
    g_assert_cmphex(rd(&t, QHCA_REG_STATUS), ==, QHCA_STATUS_READY);
    qhca_stop(&t);
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
    g_assert_cmphex(rd(&t, QHCA_REG_CMDQ_BASE_LO), ==, 0x101000);
    g_assert_cmphex(rd(&t, QHCA_REG_CMDQ_LOG_DEPTH), ==, 3);

    wr(&t, QHCA_REG_CTRL, QHCA_CTRL_ENABLE);
    g_assert_cmphex(rd(&t, QHCA_REG_CTRL), ==, QHCA_CTRL_ENABLE);
    g_assert_cmphex(rd(&t, QHCA_REG_STATUS) & QHCA_STATUS_READY, ==,
                    QHCA_STATUS_READY);

    /* Queue registers are locked while the device is enabled */
    wr(&t, QHCA_REG_CMDQ_BASE_LO, 0x5000);
    g_assert_cmphex(rd(&t, QHCA_REG_CMDQ_BASE_LO), ==, 0x101000);

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

/* ------------------------------------------------------------------------
 * Command queue tests.  The test plays the driver: it owns guest RAM above
 * 1 MiB (no guest code runs under qtest) and hands it out with a bump
 * allocator.
 */

#define CMDQ_ADDR       0x101000
#define CMDCQ_ADDR      0x102000
#define AEQ_ADDR        0x103000
#define CMDQ_LOG        3
#define CMDCQ_LOG       3
#define AEQ_LOG         4
#define RESP_ADDR       0x104000
#define RAM_FREE        0x200000
#define NO_RAM_ADDR     0xfff000000000ULL   /* nothing is mapped there */

typedef struct QhcaDev {
    QhcaTest t;
    uint16_t cmdq_pi;
    uint16_t cmdcq_ci;
    uint32_t cookie;
    uint64_t next_free;
} QhcaDev;

static uint64_t dev_alloc(QhcaDev *d, uint64_t size)
{
    uint64_t a = d->next_free;

    d->next_free += ROUND_UP(size, 4096);
    g_assert_cmphex(d->next_free, <, 256 * 1024 * 1024);
    qtest_memset(d->t.qts, a, 0, ROUND_UP(size, 4096));
    return a;
}

static void dev_up(QhcaDev *d)
{
    memset(d, 0, sizeof(*d));
    qhca_start(&d->t);
    d->next_free = RAM_FREE;
    qtest_memset(d->t.qts, CMDQ_ADDR, 0, 4 * 4096);
    wr(&d->t, QHCA_REG_CTRL, QHCA_CTRL_RESET);
    wr(&d->t, QHCA_REG_CMDQ_BASE_LO, CMDQ_ADDR);
    wr(&d->t, QHCA_REG_CMDQ_LOG_DEPTH, CMDQ_LOG);
    wr(&d->t, QHCA_REG_CMDCQ_BASE_LO, CMDCQ_ADDR);
    wr(&d->t, QHCA_REG_CMDCQ_LOG_DEPTH, CMDCQ_LOG);
    wr(&d->t, QHCA_REG_AEQ_BASE_LO, AEQ_ADDR);
    wr(&d->t, QHCA_REG_AEQ_LOG_DEPTH, AEQ_LOG);
    wr(&d->t, QHCA_REG_CTRL, QHCA_CTRL_ENABLE);
    g_assert_cmphex(rd(&d->t, QHCA_REG_STATUS), ==, QHCA_STATUS_READY);
}

static void dev_down(QhcaDev *d)
{
    qhca_stop(&d->t);
}

static void db(QhcaDev *d, uint32_t page, uint32_t off, uint32_t val)
{
    qpci_io_writel(d->t.dev, d->t.db, page * QHCA_PAGE_SIZE + off, val);
}

/* Wait for the device to write the completion at @ci of a ring */
static bool ring_has_entry(QTestState *qts, uint64_t base, uint32_t log,
                           uint32_t esize, uint32_t owner_off, uint16_t ci)
{
    uint8_t owner = qtest_readb(qts, base + (ci & ((1u << log) - 1)) * esize +
                                owner_off);
    bool want = !((ci >> log) & 1);

    return (owner & QHCA_OWNER_BIT) == want;
}

static bool wait_entry(QTestState *qts, uint64_t base, uint32_t log,
                       uint32_t esize, uint32_t owner_off, uint16_t ci)
{
    int i;

    /* Each qtest command lets the main loop run the device's BH */
    for (i = 0; i < 2000; i++) {
        if (ring_has_entry(qts, base, log, esize, owner_off, ci)) {
            return true;
        }
        qtest_clock_step(qts, 1000);
    }
    return false;
}

/* Post a command and wait for its completion; returns the status */
static int cmd_post(QhcaDev *d, uint16_t opcode, const void *payload,
                    size_t len, uint32_t *result)
{
    struct qhca_cmd cmd;
    struct qhca_cmd_comp comp;
    uint64_t caddr;

    g_assert_cmpuint(len, <=, sizeof(cmd.raw));
    memset(&cmd, 0, sizeof(cmd));
    cmd.hdr.opcode = cpu_to_le16(opcode);
    cmd.hdr.cookie = cpu_to_le32(++d->cookie);
    cmd.hdr.resp_addr = cpu_to_le64(RESP_ADDR);
    cmd.hdr.resp_len = cpu_to_le32(256);
    memcpy(cmd.raw, payload, len);
    qtest_memwrite(d->t.qts, CMDQ_ADDR + (d->cmdq_pi & ((1 << CMDQ_LOG) - 1)) *
                   QHCA_CMD_SIZE, &cmd, sizeof(cmd));
    d->cmdq_pi++;
    db(d, 0, QHCA_DB_CMDQ, d->cmdq_pi);

    g_assert_true(wait_entry(d->t.qts, CMDCQ_ADDR, CMDCQ_LOG,
                             QHCA_CMD_COMP_SIZE,
                             offsetof(struct qhca_cmd_comp, owner),
                             d->cmdcq_ci));
    caddr = CMDCQ_ADDR + (d->cmdcq_ci & ((1 << CMDCQ_LOG) - 1)) *
            QHCA_CMD_COMP_SIZE;
    qtest_memread(d->t.qts, caddr, &comp, sizeof(comp));
    d->cmdcq_ci++;
    db(d, 0, QHCA_DB_CMDCQ, d->cmdcq_ci);
    g_assert_cmpuint(le32_to_cpu(comp.cookie), ==, d->cookie);
    g_assert_cmpuint(comp.opcode, ==, opcode & 0xff);
    if (result) {
        *result = le32_to_cpu(comp.result);
    }
    return le16_to_cpu(comp.status);
}

static uint32_t cmd_ok(QhcaDev *d, uint16_t opcode, const void *payload,
                       size_t len)
{
    uint32_t result = 0;

    g_assert_cmpint(cmd_post(d, opcode, payload, len, &result), ==,
                    QHCA_CMD_OK);
    return result;
}

static int cmd_obj(QhcaDev *d, uint16_t opcode, uint32_t handle)
{
    struct qhca_cmd_obj o = { .handle = cpu_to_le32(handle) };

    return cmd_post(d, opcode, &o, sizeof(o), NULL);
}

/* Memory of @pages 4 KiB pages, described by a one-level page list */
static struct qhca_pbl_desc dev_mem(QhcaDev *d, uint32_t pages,
                                    uint64_t *first_page)
{
    struct qhca_pbl_desc m = { 0 };
    uint64_t pbl = dev_alloc(d, 4096);
    uint32_t i;

    for (i = 0; i < pages; i++) {
        /* Deliberately not contiguous: a gap page after each page */
        uint64_t pg = dev_alloc(d, 8192);

        if (i == 0 && first_page) {
            *first_page = pg;
        }
        qtest_writeq(d->t.qts, pbl + 8 * i, pg);
    }
    m.pbl_addr = cpu_to_le64(pbl);
    m.num_pages = cpu_to_le32(pages);
    m.levels = 1;
    m.page_shift = 12;
    return m;
}

static uint32_t mk_pd(QhcaDev *d)
{
    return cmd_ok(d, QHCA_CMD_ALLOC_PD, NULL, 0);
}

static uint32_t mk_eq(QhcaDev *d, uint32_t vector, uint64_t *ring)
{
    struct qhca_cmd_create_eq e = { 0 };

    e.mem = dev_mem(d, 1, ring);
    e.log_depth = 6;
    e.vector = cpu_to_le32(vector);
    return cmd_ok(d, QHCA_CMD_CREATE_EQ, &e, sizeof(e));
}

static uint32_t mk_cq(QhcaDev *d, uint32_t eqn, uint32_t log, uint64_t *ring)
{
    struct qhca_cmd_create_cq c = { 0 };

    c.mem = dev_mem(d, MAX(1, ((1u << log) * QHCA_CQE_SIZE) / 4096), ring);
    c.log_depth = log;
    c.eqn = cpu_to_le32(eqn);
    return cmd_ok(d, QHCA_CMD_CREATE_CQ, &c, sizeof(c));
}

static struct qhca_cmd_create_qp qp_desc(QhcaDev *d, uint8_t type,
                                         uint32_t pdn, uint32_t cqn,
                                         uint64_t *sq, uint64_t *rq)
{
    struct qhca_cmd_create_qp q = { 0 };

    q.type = type;
    q.sq_log_depth = 4;
    q.rq_log_depth = 4;
    q.sq_log_stride = 7;        /* 128-byte send WQEs: 16 x 128 = 2 KiB */
    q.rq_log_stride = 6;
    q.pdn = cpu_to_le32(pdn);
    q.send_cqn = cpu_to_le32(cqn);
    q.recv_cqn = cpu_to_le32(cqn);
    q.srqn = cpu_to_le32(QHCA_NO_SRQ);
    q.max_inline = cpu_to_le32(64);
    q.sq = dev_mem(d, 1, sq);
    q.rq = dev_mem(d, 1, rq);
    return q;
}

static void add_gid(QhcaDev *d, uint32_t index, uint32_t ipv4)
{
    struct qhca_cmd_gid g = { .index = cpu_to_le32(index) };

    g.gid[10] = 0xff;
    g.gid[11] = 0xff;
    stl_be_p(&g.gid[12], ipv4);
    cmd_ok(d, QHCA_CMD_ADD_GID, &g, sizeof(g));
}

static void test_cmd_query(void)
{
    QhcaDev d;
    struct qhca_device_attr a;
    struct qhca_port_attr p;
    static const uint8_t guid[8] = { 0x50, 0x54, 0x00, 0xff, 0xfe,
                                     0x12, 0x34, 0x56 };

    dev_up(&d);
    cmd_ok(&d, QHCA_CMD_QUERY_DEVICE, NULL, 0);
    qtest_memread(d.t.qts, RESP_ADDR, &a, sizeof(a));
    g_assert_cmphex(le32_to_cpu(a.vendor_id), ==, QHCA_PCI_VENDOR_ID);
    g_assert_cmphex(le32_to_cpu(a.vendor_part_id), ==, QHCA_PCI_DEVICE_ID);
    g_assert_cmpuint(le32_to_cpu(a.max_sge), ==, QHCA_MAX_SGE);
    g_assert_cmpuint(le32_to_cpu(a.max_inline), ==, QHCA_MAX_INLINE);
    g_assert_cmpuint(le32_to_cpu(a.max_qp), >=, 64);
    g_assert_cmpuint(le32_to_cpu(a.max_eq), ==, QHCA_MSIX_VECTORS - 1);
    g_assert_true(le32_to_cpu(a.caps) & QHCA_CAP_RC);
    /* EUI-64 from the MAC, universal/local bit flipped */
    g_assert_cmpmem(&a.node_guid, 8, guid, 8);

    cmd_ok(&d, QHCA_CMD_QUERY_PORT, NULL, 0);
    qtest_memread(d.t.qts, RESP_ADDR, &p, sizeof(p));
    g_assert_cmpuint(le32_to_cpu(p.link_up), ==, 1);
    g_assert_cmpuint(le32_to_cpu(p.max_mtu), ==, 4096);
    g_assert_cmpuint(le32_to_cpu(p.gid_tbl_len), ==, QHCA_GID_TABLE_LEN);
    dev_down(&d);
}

static void test_cmd_bad(void)
{
    QhcaDev d;
    struct qhca_cmd_gid g = { .index = cpu_to_le32(QHCA_GID_TABLE_LEN) };
    uint32_t errors;

    dev_up(&d);
    g_assert_cmpint(cmd_post(&d, 0x7f, NULL, 0, NULL), ==,
                    QHCA_CMD_ERR_OPCODE);
    g_assert_cmpint(cmd_post(&d, QHCA_CMD_ADD_GID, &g, sizeof(g), NULL), ==,
                    QHCA_CMD_ERR_PARAM);
    g_assert_cmpint(cmd_obj(&d, QHCA_CMD_DESTROY_QP, 77), ==,
                    QHCA_CMD_ERR_HANDLE);
    g_assert_cmpint(cmd_obj(&d, QHCA_CMD_DESTROY_CQ, 0xffffffff), ==,
                    QHCA_CMD_ERR_HANDLE);
    g_assert_cmpint(cmd_obj(&d, QHCA_CMD_DEREG_MR, 0), ==,
                    QHCA_CMD_ERR_HANDLE);

    /* A doorbell claiming more commands than the queue holds is dropped */
    errors = rd(&d.t, QHCA_REG_STAT_GUEST_ERRORS);
    db(&d, 0, QHCA_DB_CMDQ, d.cmdq_pi + (1 << CMDQ_LOG) + 1);
    g_assert_cmpuint(rd(&d.t, QHCA_REG_STAT_GUEST_ERRORS), ==, errors + 1);
    /* Command doorbells on a user page are dropped too */
    db(&d, 5, QHCA_DB_CMDQ, d.cmdq_pi + 1);
    g_assert_cmpuint(rd(&d.t, QHCA_REG_STAT_GUEST_ERRORS), ==, errors + 2);
    /* ... and the queue still works */
    mk_pd(&d);

    /* Fill the command queue past its wrap: completions keep coming */
    for (int i = 0; i < 3 * (1 << CMDQ_LOG); i++) {
        cmd_ok(&d, QHCA_CMD_QUERY_PORT, NULL, 0);
    }
    dev_down(&d);
}

static void test_cmd_pd_mr(void)
{
    QhcaDev d;
    struct qhca_cmd_reg_mr m = { 0 };
    uint32_t pdn, key, key2;

    dev_up(&d);
    pdn = mk_pd(&d);
    g_assert_cmpuint(pdn, ==, 1);

    m.pdn = cpu_to_le32(pdn);
    m.access = cpu_to_le32(QHCA_ACCESS_LOCAL_WRITE | QHCA_ACCESS_REMOTE_READ);
    m.iova = cpu_to_le64(0x7f0000001234ULL);
    m.length = cpu_to_le64(3 * 4096);
    m.mem = dev_mem(&d, 4, NULL);     /* 0x234 + 3 pages needs 4 pages */
    m.key_variant = cpu_to_le32(0x5a);
    key = cmd_ok(&d, QHCA_CMD_REG_MR, &m, sizeof(m));
    g_assert_cmphex(key & QHCA_KEY_VARIANT_MASK, ==, 0x5a);
    g_assert_cmpuint(key >> QHCA_KEY_INDEX_SHIFT, >=, 1);

    /* Too few pages for the range */
    m.mem = dev_mem(&d, 3, NULL);
    g_assert_cmpint(cmd_post(&d, QHCA_CMD_REG_MR, &m, sizeof(m), NULL), ==,
                    QHCA_CMD_ERR_PARAM);
    /* Bad page size, access bits, zero length, wrapping range */
    m.mem = dev_mem(&d, 4, NULL);
    m.mem.page_shift = 11;
    g_assert_cmpint(cmd_post(&d, QHCA_CMD_REG_MR, &m, sizeof(m), NULL), ==,
                    QHCA_CMD_ERR_PARAM);
    m.mem.page_shift = 12;
    m.access = cpu_to_le32(0x100);
    g_assert_cmpint(cmd_post(&d, QHCA_CMD_REG_MR, &m, sizeof(m), NULL), ==,
                    QHCA_CMD_ERR_PARAM);
    m.access = 0;
    m.length = 0;
    g_assert_cmpint(cmd_post(&d, QHCA_CMD_REG_MR, &m, sizeof(m), NULL), ==,
                    QHCA_CMD_ERR_PARAM);
    m.length = cpu_to_le64(4096);
    m.iova = cpu_to_le64(UINT64_MAX - 100);
    g_assert_cmpint(cmd_post(&d, QHCA_CMD_REG_MR, &m, sizeof(m), NULL), ==,
                    QHCA_CMD_ERR_PARAM);
    /* A page list that is not in guest memory */
    m.iova = 0;
    m.mem.pbl_addr = cpu_to_le64(NO_RAM_ADDR);
    g_assert_cmpint(cmd_post(&d, QHCA_CMD_REG_MR, &m, sizeof(m), NULL), ==,
                    QHCA_CMD_ERR_DMA);
    /* A page list entry that is not page aligned */
    m.mem = dev_mem(&d, 1, NULL);
    qtest_writeq(d.t.qts, le64_to_cpu(m.mem.pbl_addr), 0x300004);
    g_assert_cmpint(cmd_post(&d, QHCA_CMD_REG_MR, &m, sizeof(m), NULL), ==,
                    QHCA_CMD_ERR_PARAM);
    /* No such PD */
    m.mem = dev_mem(&d, 1, NULL);
    m.pdn = cpu_to_le32(9);
    g_assert_cmpint(cmd_post(&d, QHCA_CMD_REG_MR, &m, sizeof(m), NULL), ==,
                    QHCA_CMD_ERR_HANDLE);

    /* A guest-physical (DMA) MR needs no page list */
    m.pdn = cpu_to_le32(pdn);
    m.flags = cpu_to_le32(QHCA_MR_PHYS);
    m.mem.pbl_addr = cpu_to_le64(NO_RAM_ADDR);
    key2 = cmd_ok(&d, QHCA_CMD_REG_MR, &m, sizeof(m));
    g_assert_cmphex(key2, !=, key);

    /* The PD is busy while MRs use it */
    g_assert_cmpint(cmd_obj(&d, QHCA_CMD_DEALLOC_PD, pdn), ==,
                    QHCA_CMD_ERR_BUSY);
    /* Deregistration needs the exact key */
    g_assert_cmpint(cmd_obj(&d, QHCA_CMD_DEREG_MR, key ^ 1), ==,
                    QHCA_CMD_ERR_HANDLE);
    g_assert_cmpint(cmd_obj(&d, QHCA_CMD_DEREG_MR, key), ==, QHCA_CMD_OK);
    g_assert_cmpint(cmd_obj(&d, QHCA_CMD_DEREG_MR, key), ==,
                    QHCA_CMD_ERR_HANDLE);
    g_assert_cmpint(cmd_obj(&d, QHCA_CMD_DEREG_MR, key2), ==, QHCA_CMD_OK);
    g_assert_cmpint(cmd_obj(&d, QHCA_CMD_DEALLOC_PD, pdn), ==, QHCA_CMD_OK);
    g_assert_cmpint(cmd_obj(&d, QHCA_CMD_DEALLOC_PD, pdn), ==,
                    QHCA_CMD_ERR_HANDLE);
    dev_down(&d);
}

static void test_cmd_alloc_mr(void)
{
    QhcaDev d;
    struct qhca_cmd_alloc_mr f = { 0 };
    uint32_t key;

    dev_up(&d);
    f.pdn = cpu_to_le32(mk_pd(&d));
    f.max_pages = cpu_to_le32(1u << 20);    /* above max_fast_reg_pages */
    g_assert_cmpint(cmd_post(&d, QHCA_CMD_ALLOC_MR, &f, sizeof(f), NULL), ==,
                    QHCA_CMD_ERR_PARAM);
    f.max_pages = cpu_to_le32(16);
    f.key_variant = cpu_to_le32(7);
    key = cmd_ok(&d, QHCA_CMD_ALLOC_MR, &f, sizeof(f));
    g_assert_cmphex(key & 0xff, ==, 7);
    g_assert_cmpint(cmd_obj(&d, QHCA_CMD_DEREG_MR, key), ==, QHCA_CMD_OK);
    dev_down(&d);
}

static void test_cmd_eq_cq(void)
{
    QhcaDev d;
    struct qhca_cmd_create_eq e = { 0 };
    struct qhca_cmd_create_cq c = { 0 };
    uint32_t eqn, cqn;

    dev_up(&d);
    /* Vector 0 belongs to the async EQ */
    e.mem = dev_mem(&d, 1, NULL);
    e.log_depth = 4;
    e.vector = 0;
    g_assert_cmpint(cmd_post(&d, QHCA_CMD_CREATE_EQ, &e, sizeof(e), NULL), ==,
                    QHCA_CMD_ERR_PARAM);
    e.vector = cpu_to_le32(QHCA_MSIX_VECTORS);
    g_assert_cmpint(cmd_post(&d, QHCA_CMD_CREATE_EQ, &e, sizeof(e), NULL), ==,
                    QHCA_CMD_ERR_PARAM);
    eqn = mk_eq(&d, 1, NULL);

    /* 256 CQEs of 32 bytes need 2 pages */
    c.mem = dev_mem(&d, 1, NULL);
    c.log_depth = 8;
    c.eqn = cpu_to_le32(eqn);
    g_assert_cmpint(cmd_post(&d, QHCA_CMD_CREATE_CQ, &c, sizeof(c), NULL), ==,
                    QHCA_CMD_ERR_PARAM);
    c.log_depth = 0;
    g_assert_cmpint(cmd_post(&d, QHCA_CMD_CREATE_CQ, &c, sizeof(c), NULL), ==,
                    QHCA_CMD_ERR_PARAM);
    c.log_depth = 7;
    c.eqn = cpu_to_le32(eqn + 1);
    g_assert_cmpint(cmd_post(&d, QHCA_CMD_CREATE_CQ, &c, sizeof(c), NULL), ==,
                    QHCA_CMD_ERR_HANDLE);
    c.eqn = cpu_to_le32(eqn);
    c.db_page = cpu_to_le32(QHCA_DB_PAGES);
    g_assert_cmpint(cmd_post(&d, QHCA_CMD_CREATE_CQ, &c, sizeof(c), NULL), ==,
                    QHCA_CMD_ERR_PARAM);
    c.db_page = 0;
    cqn = cmd_ok(&d, QHCA_CMD_CREATE_CQ, &c, sizeof(c));

    g_assert_cmpint(cmd_obj(&d, QHCA_CMD_DESTROY_EQ, eqn), ==,
                    QHCA_CMD_ERR_BUSY);
    g_assert_cmpint(cmd_obj(&d, QHCA_CMD_DESTROY_CQ, cqn), ==, QHCA_CMD_OK);
    g_assert_cmpint(cmd_obj(&d, QHCA_CMD_DESTROY_EQ, eqn), ==, QHCA_CMD_OK);
    dev_down(&d);
}

typedef struct QpFixture {
    QhcaDev d;
    uint32_t pdn, eqn, cqn, qpn;
    uint64_t eq_ring, cq_ring, sq, rq;
} QpFixture;

static void qp_fixture(QpFixture *f, uint8_t type)
{
    struct qhca_cmd_create_qp q;

    dev_up(&f->d);
    f->pdn = mk_pd(&f->d);
    f->eqn = mk_eq(&f->d, 1, &f->eq_ring);
    f->cqn = mk_cq(&f->d, f->eqn, 6, &f->cq_ring);
    q = qp_desc(&f->d, type, f->pdn, f->cqn, &f->sq, &f->rq);
    f->qpn = cmd_ok(&f->d, QHCA_CMD_CREATE_QP, &q, sizeof(q));
}

static int modify(QhcaDev *d, uint32_t qpn, uint32_t mask,
                  const struct qhca_qp_attr *a)
{
    struct qhca_cmd_modify_qp m = { 0 };

    m.qpn = cpu_to_le32(qpn);
    m.attr_mask = cpu_to_le32(mask);
    m.attr = *a;
    return cmd_post(d, QHCA_CMD_MODIFY_QP, &m, sizeof(m), NULL);
}

static struct qhca_qp_attr query_qp(QhcaDev *d, uint32_t qpn)
{
    struct qhca_qp_attr a;

    g_assert_cmpint(cmd_obj(d, QHCA_CMD_QUERY_QP, qpn), ==, QHCA_CMD_OK);
    qtest_memread(d->t.qts, RESP_ADDR, &a, sizeof(a));
    return a;
}

#define M(x) QHCA_QP_ATTR_##x

/* RESET -> INIT -> RTR -> RTS for an RC QP */
static void rc_to_rts(QhcaDev *d, uint32_t qpn)
{
    struct qhca_qp_attr a = { 0 };

    a.qp_state = QHCA_QPS_INIT;
    a.access_flags = cpu_to_le32(QHCA_ACCESS_REMOTE_WRITE);
    g_assert_cmpint(modify(d, qpn, M(STATE) | M(PKEY_INDEX) | M(PORT) |
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
    g_assert_cmpint(modify(d, qpn, M(STATE) | M(AV) | M(PATH_MTU) |
                           M(DEST_QPN) | M(RQ_PSN) | M(MAX_DEST_RD_ATOMIC) |
                           M(MIN_RNR_TIMER), &a), ==, QHCA_CMD_OK);
    a.qp_state = QHCA_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.sq_psn = cpu_to_le32(0x2000);
    a.max_rd_atomic = 4;
    g_assert_cmpint(modify(d, qpn, M(STATE) | M(TIMEOUT) | M(RETRY_CNT) |
                           M(RNR_RETRY) | M(SQ_PSN) | M(MAX_QP_RD_ATOMIC),
                           &a), ==, QHCA_CMD_OK);
}

static void test_cmd_qp_states(void)
{
    QpFixture f;
    struct qhca_qp_attr a = { 0 };

    qp_fixture(&f, QHCA_QPT_RC);
    g_assert_cmpuint(f.qpn, >=, 2);
    g_assert_cmpuint(query_qp(&f.d, f.qpn).qp_state, ==, QHCA_QPS_RESET);

    /* RESET -> RTS is not a transition */
    a.qp_state = QHCA_QPS_RTS;
    g_assert_cmpint(modify(&f.d, f.qpn, M(STATE), &a), ==,
                    QHCA_CMD_ERR_STATE);
    /* RESET -> INIT without its required attributes */
    a.qp_state = QHCA_QPS_INIT;
    g_assert_cmpint(modify(&f.d, f.qpn, M(STATE) | M(PORT), &a), ==,
                    QHCA_CMD_ERR_STATE);
    /* ... or with one that is not allowed there */
    g_assert_cmpint(modify(&f.d, f.qpn, M(STATE) | M(PKEY_INDEX) | M(PORT) |
                           M(ACCESS_FLAGS) | M(SQ_PSN), &a), ==,
                    QHCA_CMD_ERR_STATE);
    /* CUR_STATE must match */
    a.cur_qp_state = QHCA_QPS_RTS;
    g_assert_cmpint(modify(&f.d, f.qpn, M(STATE) | M(CUR_STATE), &a), ==,
                    QHCA_CMD_ERR_STATE);
    /* The AV needs a valid source GID */
    add_gid(&f.d, 1, 0xc6120001);
    rc_to_rts(&f.d, f.qpn);

    a = query_qp(&f.d, f.qpn);
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
    g_assert_cmpint(modify(&f.d, f.qpn, M(STATE), &a), ==, QHCA_CMD_OK);
    a.qp_state = QHCA_QPS_SQD;
    a.retry_cnt = 8;
    g_assert_cmpint(modify(&f.d, f.qpn, M(STATE) | M(RETRY_CNT), &a), ==,
                    QHCA_CMD_ERR_PARAM);
    a.qp_state = QHCA_QPS_RTS;
    g_assert_cmpint(modify(&f.d, f.qpn, M(STATE), &a), ==, QHCA_CMD_OK);

    /* Anything -> ERR -> RESET -> INIT */
    a.qp_state = QHCA_QPS_ERR;
    g_assert_cmpint(modify(&f.d, f.qpn, M(STATE), &a), ==, QHCA_CMD_OK);
    a.qp_state = QHCA_QPS_RESET;
    g_assert_cmpint(modify(&f.d, f.qpn, M(STATE), &a), ==, QHCA_CMD_OK);
    g_assert_cmpuint(query_qp(&f.d, f.qpn).qp_state, ==, QHCA_QPS_RESET);

    /* Objects in use cannot go away; the QP can */
    g_assert_cmpint(cmd_obj(&f.d, QHCA_CMD_DESTROY_CQ, f.cqn), ==,
                    QHCA_CMD_ERR_BUSY);
    g_assert_cmpint(cmd_obj(&f.d, QHCA_CMD_DEALLOC_PD, f.pdn), ==,
                    QHCA_CMD_ERR_BUSY);
    g_assert_cmpint(cmd_obj(&f.d, QHCA_CMD_DESTROY_QP, f.qpn), ==,
                    QHCA_CMD_OK);
    g_assert_cmpint(cmd_obj(&f.d, QHCA_CMD_DESTROY_CQ, f.cqn), ==,
                    QHCA_CMD_OK);
    g_assert_cmpint(cmd_obj(&f.d, QHCA_CMD_DEALLOC_PD, f.pdn), ==,
                    QHCA_CMD_OK);
    dev_down(&f.d);
}

static void test_cmd_qp_create_bad(void)
{
    QpFixture f;
    struct qhca_cmd_create_qp q;

    qp_fixture(&f, QHCA_QPT_UD);
    q = qp_desc(&f.d, 3, f.pdn, f.cqn, NULL, NULL);
    g_assert_cmpint(cmd_post(&f.d, QHCA_CMD_CREATE_QP, &q, sizeof(q), NULL),
                    ==, QHCA_CMD_ERR_PARAM);
    q = qp_desc(&f.d, QHCA_QPT_RC, f.pdn, f.cqn + 5, NULL, NULL);
    g_assert_cmpint(cmd_post(&f.d, QHCA_CMD_CREATE_QP, &q, sizeof(q), NULL),
                    ==, QHCA_CMD_ERR_HANDLE);
    q = qp_desc(&f.d, QHCA_QPT_RC, f.pdn, f.cqn, NULL, NULL);
    q.sq_log_stride = 12;
    g_assert_cmpint(cmd_post(&f.d, QHCA_CMD_CREATE_QP, &q, sizeof(q), NULL),
                    ==, QHCA_CMD_ERR_PARAM);
    q.sq_log_stride = 7;
    q.max_inline = cpu_to_le32(128);    /* more than stride - header */
    g_assert_cmpint(cmd_post(&f.d, QHCA_CMD_CREATE_QP, &q, sizeof(q), NULL),
                    ==, QHCA_CMD_ERR_PARAM);
    q.max_inline = 0;
    q.sq_log_depth = 6;                 /* 64 x 128 bytes > one page */
    g_assert_cmpint(cmd_post(&f.d, QHCA_CMD_CREATE_QP, &q, sizeof(q), NULL),
                    ==, QHCA_CMD_ERR_PARAM);
    q.sq_log_depth = 4;
    q.srqn = cpu_to_le32(3);
    g_assert_cmpint(cmd_post(&f.d, QHCA_CMD_CREATE_QP, &q, sizeof(q), NULL),
                    ==, QHCA_CMD_ERR_HANDLE);

    /* One GSI QP, always QP1 */
    q = qp_desc(&f.d, QHCA_QPT_GSI, f.pdn, f.cqn, NULL, NULL);
    g_assert_cmpuint(cmd_ok(&f.d, QHCA_CMD_CREATE_QP, &q, sizeof(q)), ==, 1);
    g_assert_cmpint(cmd_post(&f.d, QHCA_CMD_CREATE_QP, &q, sizeof(q), NULL),
                    ==, QHCA_CMD_ERR_NO_RESOURCES);
    dev_down(&f.d);
}

/* Read CQE @ci of a ring of 2^log entries, waiting for it */
static struct qhca_cqe read_cqe(QhcaDev *d, uint64_t ring, uint32_t log,
                                uint16_t ci)
{
    struct qhca_cqe cqe;

    g_assert_true(wait_entry(d->t.qts, ring, log, QHCA_CQE_SIZE,
                             offsetof(struct qhca_cqe, owner), ci));
    qtest_memread(d->t.qts, ring + (ci & ((1u << log) - 1)) * QHCA_CQE_SIZE,
                  &cqe, sizeof(cqe));
    return cqe;
}

static void test_qp_flush(void)
{
    QpFixture f;
    struct qhca_qp_attr a = { 0 };
    struct qhca_eqe eqe;
    uint16_t ci = 0;
    int i;

    qp_fixture(&f, QHCA_QPT_UD);
    /* Three send WQEs and two receive WQEs, then ERR: all are flushed */
    for (i = 0; i < 3; i++) {
        qtest_writeq(f.d.t.qts, f.sq + i * 128, 0x5000 + i);
    }
    for (i = 0; i < 2; i++) {
        qtest_writeq(f.d.t.qts, f.rq + i * 64, 0x7000 + i);
    }
    db(&f.d, 0, QHCA_DB_SQ, f.qpn | 3 << 16);
    db(&f.d, 0, QHCA_DB_RQ, f.qpn | 2 << 16);
    /* A doorbell from another page is not this QP's */
    db(&f.d, 3, QHCA_DB_SQ, f.qpn | 4 << 16);
    /* Arm the CQ and the EQ so that completion reports an event */
    db(&f.d, 0, QHCA_DB_CQ_ARM, f.cqn);
    db(&f.d, 0, QHCA_DB_EQ, f.eqn | QHCA_DB_EQ_ARM);

    a.qp_state = QHCA_QPS_ERR;
    g_assert_cmpint(modify(&f.d, f.qpn, M(STATE), &a), ==, QHCA_CMD_OK);
    for (i = 0; i < 3; i++, ci++) {
        struct qhca_cqe c = read_cqe(&f.d, f.cq_ring, 6, ci);

        g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 0x5000 + i);
        g_assert_cmpuint(c.status, ==, QHCA_CQE_WR_FLUSH_ERR);
        g_assert_cmpuint(le32_to_cpu(c.qpn), ==, f.qpn);
    }
    for (i = 0; i < 2; i++, ci++) {
        struct qhca_cqe c = read_cqe(&f.d, f.cq_ring, 6, ci);

        g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 0x7000 + i);
        g_assert_cmpuint(c.status, ==, QHCA_CQE_WR_FLUSH_ERR);
        g_assert_cmpuint(c.opcode, ==, QHCA_CQE_OP_RECV);
    }
    /* Nothing else: the fourth SQ doorbell came from the wrong page */
    g_assert_false(ring_has_entry(f.d.t.qts, f.cq_ring, 6, QHCA_CQE_SIZE,
                                  offsetof(struct qhca_cqe, owner), ci));
    /* One completion event for the armed CQ */
    g_assert_true(wait_entry(f.d.t.qts, f.eq_ring, 6, QHCA_EQE_SIZE,
                             offsetof(struct qhca_eqe, owner), 0));
    qtest_memread(f.d.t.qts, f.eq_ring, &eqe, sizeof(eqe));
    g_assert_cmpuint(eqe.type, ==, QHCA_EQE_COMPLETION);
    g_assert_cmpuint(le32_to_cpu(eqe.obj), ==, f.cqn);
    g_assert_false(ring_has_entry(f.d.t.qts, f.eq_ring, 6, QHCA_EQE_SIZE,
                                  offsetof(struct qhca_eqe, owner), 1));
    /* A consumer index beyond what was produced is refused */
    i = rd(&f.d.t, QHCA_REG_STAT_GUEST_ERRORS);
    db(&f.d, 0, QHCA_DB_CQ_CI, f.cqn | (ci + 1) << 16);
    g_assert_cmpuint(rd(&f.d.t, QHCA_REG_STAT_GUEST_ERRORS), ==, i + 1);
    dev_down(&f.d);
}

static void test_cmd_srq_ah(void)
{
    QhcaDev d;
    struct qhca_cmd_create_srq s = { 0 };
    struct qhca_cmd_modify_srq m = { 0 };
    struct qhca_cmd_create_ah ah = { 0 };
    struct qhca_srq_attr sa;
    uint32_t pdn, srqn, ahn;

    dev_up(&d);
    pdn = mk_pd(&d);
    s.mem = dev_mem(&d, 1, NULL);
    s.pdn = cpu_to_le32(pdn);
    s.log_depth = 5;
    s.log_stride = 7;
    s.limit = cpu_to_le32(32);          /* must be below the depth */
    g_assert_cmpint(cmd_post(&d, QHCA_CMD_CREATE_SRQ, &s, sizeof(s), NULL),
                    ==, QHCA_CMD_ERR_PARAM);
    s.limit = cpu_to_le32(4);
    srqn = cmd_ok(&d, QHCA_CMD_CREATE_SRQ, &s, sizeof(s));
    g_assert_cmpint(cmd_obj(&d, QHCA_CMD_QUERY_SRQ, srqn), ==, QHCA_CMD_OK);
    qtest_memread(d.t.qts, RESP_ADDR, &sa, sizeof(sa));
    g_assert_cmpuint(le32_to_cpu(sa.depth), ==, 32);
    g_assert_cmpuint(le32_to_cpu(sa.limit), ==, 4);
    g_assert_cmpuint(le32_to_cpu(sa.max_sge), ==, 7);
    m.srqn = cpu_to_le32(srqn);
    m.limit = cpu_to_le32(9);
    cmd_ok(&d, QHCA_CMD_MODIFY_SRQ, &m, sizeof(m));
    g_assert_cmpint(cmd_obj(&d, QHCA_CMD_QUERY_SRQ, srqn), ==, QHCA_CMD_OK);
    qtest_memread(d.t.qts, RESP_ADDR, &sa, sizeof(sa));
    g_assert_cmpuint(le32_to_cpu(sa.limit), ==, 9);

    ah.pdn = cpu_to_le32(pdn);
    ah.sgid_index = QHCA_GID_TABLE_LEN;
    g_assert_cmpint(cmd_post(&d, QHCA_CMD_CREATE_AH, &ah, sizeof(ah), NULL),
                    ==, QHCA_CMD_ERR_PARAM);
    ah.sgid_index = 0;
    ahn = cmd_ok(&d, QHCA_CMD_CREATE_AH, &ah, sizeof(ah));
    g_assert_cmpint(cmd_obj(&d, QHCA_CMD_DEALLOC_PD, pdn), ==,
                    QHCA_CMD_ERR_BUSY);
    g_assert_cmpint(cmd_obj(&d, QHCA_CMD_DESTROY_AH, ahn), ==, QHCA_CMD_OK);
    g_assert_cmpint(cmd_obj(&d, QHCA_CMD_DESTROY_SRQ, srqn), ==, QHCA_CMD_OK);
    g_assert_cmpint(cmd_obj(&d, QHCA_CMD_DESTROY_SRQ, srqn), ==,
                    QHCA_CMD_ERR_HANDLE);
    g_assert_cmpint(cmd_obj(&d, QHCA_CMD_DEALLOC_PD, pdn), ==, QHCA_CMD_OK);
    dev_down(&d);
}

static void test_cmd_interrupt(void)
{
    QhcaDev d;

    dev_up(&d);
    qpci_msix_enable(d.t.dev);
    /* Vectors start masked: a notification shows as a pending bit */
    g_assert_true(qpci_msix_masked(d.t.dev, 0));
    g_assert_false(qpci_msix_pending(d.t.dev, 0));
    /* Not armed: no interrupt */
    mk_pd(&d);
    g_assert_false(qpci_msix_pending(d.t.dev, 0));
    db(&d, 0, QHCA_DB_CMDCQ, d.cmdcq_ci | QHCA_DB_CMDCQ_ARM);
    mk_pd(&d);
    g_assert_true(qpci_msix_pending(d.t.dev, 0));
    qpci_msix_disable(d.t.dev);
    dev_down(&d);
}

static void test_cmd_reset_frees(void)
{
    QhcaDev d;
    QpFixture f;
    uint32_t pdn;

    qp_fixture(&f, QHCA_QPT_RC);
    d = f.d;
    /* A reset destroys every object: numbering starts over */
    wr(&d.t, QHCA_REG_CTRL, QHCA_CTRL_RESET);
    d.cmdq_pi = d.cmdcq_ci = 0;
    qtest_memset(d.t.qts, CMDQ_ADDR, 0, 3 * 4096);
    set_queue_regs(&d.t);
    wr(&d.t, QHCA_REG_CMDQ_BASE_LO, CMDQ_ADDR);
    wr(&d.t, QHCA_REG_CMDCQ_BASE_LO, CMDCQ_ADDR);
    wr(&d.t, QHCA_REG_CTRL, QHCA_CTRL_ENABLE);
    g_assert_cmpint(cmd_obj(&d, QHCA_CMD_QUERY_QP, f.qpn), ==,
                    QHCA_CMD_ERR_HANDLE);
    pdn = mk_pd(&d);
    g_assert_cmpuint(pdn, ==, f.pdn);
    dev_down(&d);
}

#undef M

static void qhca_add_cmd_tests(void)
{
    qtest_add_func("/qhca/cmd/query", test_cmd_query);
    qtest_add_func("/qhca/cmd/bad", test_cmd_bad);
    qtest_add_func("/qhca/cmd/pd-mr", test_cmd_pd_mr);
    qtest_add_func("/qhca/cmd/alloc-mr", test_cmd_alloc_mr);
    qtest_add_func("/qhca/cmd/eq-cq", test_cmd_eq_cq);
    qtest_add_func("/qhca/cmd/qp-states", test_cmd_qp_states);
    qtest_add_func("/qhca/cmd/qp-create-bad", test_cmd_qp_create_bad);
    qtest_add_func("/qhca/cmd/srq-ah", test_cmd_srq_ah);
    qtest_add_func("/qhca/cmd/interrupt", test_cmd_interrupt);
    qtest_add_func("/qhca/cmd/reset-frees", test_cmd_reset_frees);
    qtest_add_func("/qhca/qp/flush", test_qp_flush);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    qtest_add_func("/qhca/pci/identity", test_pci_identity);
    qtest_add_func("/qhca/pci/bars", test_bars);
    qtest_add_func("/qhca/pci/msix", test_msix);
    qtest_add_func("/qhca/regs/basic", test_registers);
    qtest_add_func("/qhca/regs/enable-reset", test_enable_and_reset);
    qtest_add_func("/qhca/regs/enable-bad-config", test_enable_bad_config);
    qtest_add_func("/qhca/doorbell/read", test_doorbell_page_reads);
    qhca_add_cmd_tests();

    return g_test_run();
}
