/*
 * libqos driver for the qhca RDMA HCA
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "../libqtest.h"
#include "qemu/bswap.h"
#include "qemu/module.h"
#include "qhca.h"

uint32_t qhca_rd(QQhca *d, uint32_t reg)
{
    return qpci_io_readl(&d->dev, d->reg, reg);
}

void qhca_wr(QQhca *d, uint32_t reg, uint32_t val)
{
    qpci_io_writel(&d->dev, d->reg, reg, val);
}

void qhca_db(QQhca *d, uint32_t page, uint32_t off, uint32_t val)
{
    qpci_io_writel(&d->dev, d->db, page * QHCA_PAGE_SIZE + off, val);
}

uint64_t qhca_alloc(QQhca *d, uint64_t size)
{
    uint64_t a;

    size = ROUND_UP(size, 4096);
    a = guest_alloc(d->alloc, size);
    g_assert_cmphex(a, !=, 0);
    qtest_memset(d->qts, a, 0, size);
    return a;
}

void qhca_set_queue_regs(QQhca *d)
{
    qhca_wr(d, QHCA_REG_CMDQ_BASE_LO, d->cmdq);
    qhca_wr(d, QHCA_REG_CMDQ_BASE_HI, d->cmdq >> 32);
    qhca_wr(d, QHCA_REG_CMDQ_LOG_DEPTH, QHCA_QOS_CMDQ_LOG);
    qhca_wr(d, QHCA_REG_CMDCQ_BASE_LO, d->cmdcq);
    qhca_wr(d, QHCA_REG_CMDCQ_BASE_HI, d->cmdcq >> 32);
    qhca_wr(d, QHCA_REG_CMDCQ_LOG_DEPTH, QHCA_QOS_CMDCQ_LOG);
    qhca_wr(d, QHCA_REG_AEQ_BASE_LO, d->aeq);
    qhca_wr(d, QHCA_REG_AEQ_BASE_HI, d->aeq >> 32);
    qhca_wr(d, QHCA_REG_AEQ_LOG_DEPTH, QHCA_QOS_AEQ_LOG);
}

void qhca_enable(QQhca *d)
{
    d->cmdq_pi = d->cmdcq_ci = 0;
    d->cookie = 0;
    qtest_memset(d->qts, d->cmdq, 0, 4096);
    qtest_memset(d->qts, d->cmdcq, 0, 4096);
    qtest_memset(d->qts, d->aeq, 0, 4096);
    qhca_wr(d, QHCA_REG_CTRL, QHCA_CTRL_RESET);
    qhca_set_queue_regs(d);
    qhca_wr(d, QHCA_REG_CTRL, QHCA_CTRL_ENABLE);
    g_assert_cmphex(qhca_rd(d, QHCA_REG_STATUS), ==, QHCA_STATUS_READY);
}

bool qhca_ring_has_entry(QQhca *d, uint64_t base, uint32_t log,
                         uint32_t esize, uint32_t owner_off, uint16_t ci)
{
    uint8_t owner = qtest_readb(d->qts, base + (ci & ((1u << log) - 1)) *
                                esize + owner_off);
    bool want = !((ci >> log) & 1);

    return (owner & QHCA_OWNER_BIT) == want;
}

bool qhca_wait_entry(QQhca *d, uint64_t base, uint32_t log, uint32_t esize,
                     uint32_t owner_off, uint16_t ci)
{
    int i;

    /*
     * Each qtest command lets the main loop run the device's bottom half;
     * stepping the virtual clock by 10 us runs its timers.  At most 2 s of
     * virtual time.
     */
    for (i = 0; i < 200000; i++) {
        if (qhca_ring_has_entry(d, base, log, esize, owner_off, ci)) {
            return true;
        }
        if (d->idle) {
            d->idle();
        }
        qtest_clock_step(d->qts, 10000);
    }
    return false;
}

int qhca_cmd_post(QQhca *d, uint16_t opcode, const void *payload, size_t len,
                  uint32_t *result)
{
    struct qhca_cmd cmd;
    struct qhca_cmd_comp comp;
    uint32_t slot;

    g_assert_cmpuint(len, <=, sizeof(cmd.raw));
    memset(&cmd, 0, sizeof(cmd));
    cmd.hdr.opcode = cpu_to_le16(opcode);
    cmd.hdr.cookie = cpu_to_le32(++d->cookie);
    cmd.hdr.resp_addr = cpu_to_le64(d->resp);
    cmd.hdr.resp_len = cpu_to_le32(256);
    if (len) {
        memcpy(cmd.raw, payload, len);
    }
    slot = d->cmdq_pi & ((1 << QHCA_QOS_CMDQ_LOG) - 1);
    qtest_memwrite(d->qts, d->cmdq + slot * QHCA_CMD_SIZE, &cmd, sizeof(cmd));
    d->cmdq_pi++;
    qhca_db(d, 0, QHCA_DB_CMDQ, d->cmdq_pi);

    g_assert_true(qhca_wait_entry(d, d->cmdcq, QHCA_QOS_CMDCQ_LOG,
                                  QHCA_CMD_COMP_SIZE,
                                  offsetof(struct qhca_cmd_comp, owner),
                                  d->cmdcq_ci));
    slot = d->cmdcq_ci & ((1 << QHCA_QOS_CMDCQ_LOG) - 1);
    qtest_memread(d->qts, d->cmdcq + slot * QHCA_CMD_COMP_SIZE, &comp,
                  sizeof(comp));
    d->cmdcq_ci++;
    qhca_db(d, 0, QHCA_DB_CMDCQ, d->cmdcq_ci);
    g_assert_cmpuint(le32_to_cpu(comp.cookie), ==, d->cookie);
    g_assert_cmpuint(comp.opcode, ==, opcode & 0xff);
    if (result) {
        *result = le32_to_cpu(comp.result);
    }
    return le16_to_cpu(comp.status);
}

uint32_t qhca_cmd_ok(QQhca *d, uint16_t opcode, const void *payload,
                     size_t len)
{
    uint32_t result = 0;

    g_assert_cmpint(qhca_cmd_post(d, opcode, payload, len, &result), ==,
                    QHCA_CMD_OK);
    return result;
}

int qhca_cmd_obj(QQhca *d, uint16_t opcode, uint32_t handle)
{
    struct qhca_cmd_obj o = { .handle = cpu_to_le32(handle) };

    return qhca_cmd_post(d, opcode, &o, sizeof(o), NULL);
}

struct qhca_pbl_desc qhca_pbl(uint64_t pbl, uint32_t pages)
{
    struct qhca_pbl_desc m = { 0 };

    m.pbl_addr = cpu_to_le64(pbl);
    m.num_pages = cpu_to_le32(pages);
    m.levels = 1;
    m.page_shift = 12;
    return m;
}

struct qhca_pbl_desc qhca_mem(QQhca *d, uint32_t pages, uint64_t *first_page)
{
    uint64_t pbl = qhca_alloc(d, 4096);
    uint32_t i;

    for (i = 0; i < pages; i++) {
        /* Deliberately not contiguous: a gap page after each page */
        uint64_t pg = qhca_alloc(d, 8192);

        if (i == 0 && first_page) {
            *first_page = pg;
        }
        qtest_writeq(d->qts, pbl + 8 * i, pg);
    }
    return qhca_pbl(pbl, pages);
}

struct qhca_pbl_desc qhca_shared_pages(QQhca *d, uint32_t pages)
{
    uint64_t pbl = qhca_alloc(d, 4096);
    uint64_t pg = qhca_alloc(d, 4096);
    uint32_t i;

    for (i = 0; i < pages; i++) {
        qtest_writeq(d->qts, pbl + 8 * i, pg);
    }
    return qhca_pbl(pbl, pages);
}

uint32_t qhca_mk_pd(QQhca *d)
{
    return qhca_cmd_ok(d, QHCA_CMD_ALLOC_PD, NULL, 0);
}

uint32_t qhca_mk_eq(QQhca *d, uint32_t vector, uint64_t *ring)
{
    struct qhca_cmd_create_eq e = { 0 };

    e.mem = qhca_mem(d, 1, ring);
    e.log_depth = 6;
    e.vector = cpu_to_le32(vector);
    return qhca_cmd_ok(d, QHCA_CMD_CREATE_EQ, &e, sizeof(e));
}

uint32_t qhca_mk_cq(QQhca *d, uint32_t eqn, uint32_t log, uint64_t *ring)
{
    struct qhca_cmd_create_cq c = { 0 };

    c.mem = qhca_mem(d, MAX(1, ((1u << log) * QHCA_CQE_SIZE) / 4096), ring);
    c.log_depth = log;
    c.eqn = cpu_to_le32(eqn);
    return qhca_cmd_ok(d, QHCA_CMD_CREATE_CQ, &c, sizeof(c));
}

struct qhca_cmd_create_qp qhca_qp_desc(QQhca *d, uint8_t type, uint32_t pdn,
                                       uint32_t cqn, uint64_t *sq,
                                       uint64_t *rq)
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
    q.sq = qhca_mem(d, 1, sq);
    q.rq = qhca_mem(d, 1, rq);
    return q;
}

void qhca_add_gid(QQhca *d, uint32_t index, uint32_t ipv4)
{
    struct qhca_cmd_gid g = { .index = cpu_to_le32(index) };

    g.gid[10] = 0xff;
    g.gid[11] = 0xff;
    stl_be_p(&g.gid[12], ipv4);
    qhca_cmd_ok(d, QHCA_CMD_ADD_GID, &g, sizeof(g));
}

int qhca_modify_qp(QQhca *d, uint32_t qpn, uint32_t mask,
                   const struct qhca_qp_attr *a)
{
    struct qhca_cmd_modify_qp m = { 0 };

    m.qpn = cpu_to_le32(qpn);
    m.attr_mask = cpu_to_le32(mask);
    m.attr = *a;
    return qhca_cmd_post(d, QHCA_CMD_MODIFY_QP, &m, sizeof(m), NULL);
}

struct qhca_qp_attr qhca_query_qp(QQhca *d, uint32_t qpn)
{
    struct qhca_qp_attr a;

    g_assert_cmpint(qhca_cmd_obj(d, QHCA_CMD_QUERY_QP, qpn), ==, QHCA_CMD_OK);
    qtest_memread(d->qts, d->resp, &a, sizeof(a));
    return a;
}

/* Map the BARs and allocate the queues of a device found in d->dev */
static void qhca_setup(QQhca *d, QGuestAllocator *alloc)
{
    d->qts = d->dev.bus->qts;
    d->alloc = alloc;
    qpci_device_enable(&d->dev);
    d->reg = qpci_iomap(&d->dev, QHCA_REG_BAR, &d->reg_size);
    d->db = qpci_iomap(&d->dev, QHCA_DB_BAR, &d->db_size);
    d->cmdq = qhca_alloc(d, 4096);
    d->cmdcq = qhca_alloc(d, 4096);
    d->aeq = qhca_alloc(d, 4096);
    d->resp = qhca_alloc(d, 4096);
}

void qhca_init(QQhca *d, QPCIBus *bus, int devfn, QGuestAllocator *alloc)
{
    QPCIDevice *dev = qpci_device_find(bus, devfn);

    g_assert_nonnull(dev);
    memset(d, 0, sizeof(*d));
    d->dev = *dev;
    g_free(dev);
    qhca_setup(d, alloc);
}

void qhca_uninit(QQhca *d)
{
    guest_free(d->alloc, d->resp);
    guest_free(d->alloc, d->aeq);
    guest_free(d->alloc, d->cmdcq);
    guest_free(d->alloc, d->cmdq);
    qpci_iounmap(&d->dev, d->db);
    qpci_iounmap(&d->dev, d->reg);
}

/* The qos graph: "qhca" consumes a "pci-bus" and is a "pci-device" */

static void qhca_destructor(QOSGraphObject *obj)
{
    QQhca *d = container_of(obj, QQhca, obj);

    if (d->dev.msix_enabled) {
        qpci_msix_disable(&d->dev);
    }
    qhca_uninit(d);
}

static void *qhca_get_driver(void *obj, const char *interface)
{
    QQhca *d = obj;

    if (!g_strcmp0(interface, "qhca")) {
        return d;
    }
    if (!g_strcmp0(interface, "pci-device")) {
        return &d->dev;
    }
    fprintf(stderr, "%s not present in qhca\n", interface);
    g_assert_not_reached();
}

static void *qhca_create(void *pci_bus, QGuestAllocator *alloc, void *addr)
{
    QQhca *d = g_new0(QQhca, 1);
    QPCIAddress *address = addr;

    qpci_device_init(&d->dev, pci_bus, address);
    qhca_setup(d, alloc);
    d->obj.get_driver = qhca_get_driver;
    d->obj.destructor = qhca_destructor;
    return &d->obj;
}

static void qhca_register_nodes(void)
{
    QPCIAddress addr = {
        .devfn = QHCA_QOS_DEVFN,
        .vendor_id = QHCA_PCI_VENDOR_ID,
        .device_id = QHCA_PCI_DEVICE_ID,
    };
    QOSGraphEdgeOptions opts = {
        .extra_device_opts = "addr=04.0,mac=" QHCA_QOS_MAC,
        .before_cmd_line = "-nodefaults -m 512M",
    };

    add_qpci_address(&opts, &addr);
    qos_node_create_driver("qhca", qhca_create);
    qos_node_consumes("qhca", "pci-bus", &opts);
    qos_node_produces("qhca", "pci-device");
}

libqos_init(qhca_register_nodes);
