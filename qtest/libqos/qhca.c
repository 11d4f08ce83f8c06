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
    qhca_drv_set_queue_regs(&d->qd);
}

void qhca_enable(QQhca *d)
{
    g_assert_true(qhca_drv_enable(&d->qd));
}

bool qhca_ring_has_entry(QQhca *d, uint64_t base, uint32_t log,
                         uint32_t esize, uint32_t owner_off, uint16_t ci)
{
    return qhca_drv_entry_ready(&d->qd, base + (ci & ((1u << log) - 1)) *
                                esize, log, ci, owner_off);
}

bool qhca_wait_entry(QQhca *d, uint64_t base, uint32_t log, uint32_t esize,
                     uint32_t owner_off, uint16_t ci)
{
    return qhca_drv_wait_entry(&d->qd, base + (ci & ((1u << log) - 1)) *
                               esize, log, ci, owner_off, QHCA_QOS_STEPS);
}

int qhca_cmd_post(QQhca *d, uint16_t opcode, const void *payload, size_t len,
                  uint32_t *result)
{
    struct qhca_cmd cmd;
    struct qhca_cmd_comp comp;
    int status;

    g_assert_true(qhca_drv_cmd_init(&d->qd, &cmd, opcode, payload, len));
    status = qhca_drv_cmd_run(&d->qd, &cmd, &comp);
    /* a completion came, with the command's cookie and opcode */
    g_assert_cmpint(status, >=, 0);
    if (result) {
        *result = le32_to_cpu(comp.result);
    }
    return status;
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
    return qhca_drv_pbl_desc(pbl, pages, QHCA_PAGE_SHIFT);
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
    struct qhca_pbl_desc mem = qhca_mem(d, 1, ring);
    uint32_t eqn = 0;

    g_assert_cmpint(qhca_drv_create_eq(&d->qd, &mem, 6, vector, &eqn), ==,
                    QHCA_CMD_OK);
    return eqn;
}

uint32_t qhca_mk_cq(QQhca *d, uint32_t eqn, uint32_t log, uint64_t *ring)
{
    struct qhca_pbl_desc mem;
    uint32_t cqn = 0;

    mem = qhca_mem(d, MAX(1, ((1u << log) * QHCA_CQE_SIZE) / 4096), ring);
    g_assert_cmpint(qhca_drv_create_cq(&d->qd, &mem, log, eqn, &cqn), ==,
                    QHCA_CMD_OK);
    return cqn;
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
    uint8_t gid[16];

    qhca_drv_gid_ipv4(gid, ipv4);
    g_assert_cmpint(qhca_drv_add_gid(&d->qd, index, gid), ==, QHCA_CMD_OK);
}

int qhca_modify_qp(QQhca *d, uint32_t qpn, uint32_t mask,
                   const struct qhca_qp_attr *a)
{
    int status = qhca_drv_modify_qp(&d->qd, qpn, mask, a);

    g_assert_cmpint(status, >=, 0);
    return status;
}

struct qhca_qp_attr qhca_query_qp(QQhca *d, uint32_t qpn)
{
    struct qhca_qp_attr a;

    g_assert_cmpint(qhca_drv_query_qp(&d->qd, qpn, &a), ==, QHCA_CMD_OK);
    return a;
}

/* The mini-driver's ops: the qtest's memory and the device's BARs */

static void qos_mem_read(void *opaque, uint64_t addr, void *buf, uint64_t len)
{
    QQhca *d = opaque;

    qtest_memread(d->qts, addr, buf, len);
}

static void qos_mem_write(void *opaque, uint64_t addr, const void *buf,
                          uint64_t len)
{
    QQhca *d = opaque;

    qtest_memwrite(d->qts, addr, buf, len);
}

static void qos_mem_set(void *opaque, uint64_t addr, uint8_t val,
                        uint64_t len)
{
    QQhca *d = opaque;

    qtest_memset(d->qts, addr, val, len);
}

static uint64_t qos_alloc_pages(void *opaque, uint32_t n)
{
    return qhca_alloc(opaque, (uint64_t)n * QHCA_PAGE_SIZE);
}

static uint32_t qos_reg_read(void *opaque, uint32_t off)
{
    return qhca_rd(opaque, off);
}

static void qos_reg_write(void *opaque, uint32_t off, uint32_t val)
{
    qhca_wr(opaque, off, val);
}

static void qos_db_write(void *opaque, uint32_t page, uint32_t off,
                         uint32_t val)
{
    qhca_db(opaque, page, off, val);
}

/*
 * Each qtest command lets the main loop run the device's bottom half;
 * stepping the virtual clock by 10 us runs its timers
 */
static bool qos_step(void *opaque)
{
    QQhca *d = opaque;

    if (d->idle) {
        d->idle();
    }
    qtest_clock_step(d->qts, 10000);
    return true;
}

static const QhcaDrvOps qhca_qos_drv_ops = {
    .mem_read = qos_mem_read,
    .mem_write = qos_mem_write,
    .mem_set = qos_mem_set,
    .alloc_pages = qos_alloc_pages,
    .reg_read = qos_reg_read,
    .reg_write = qos_reg_write,
    .db_write = qos_db_write,
    .step = qos_step,
};

/* Map the BARs and allocate the queues of a device found in d->dev */
static void qhca_setup(QQhca *d, QGuestAllocator *alloc)
{
    uint64_t cmdq, cmdcq, aeq, resp;

    d->qts = d->dev.bus->qts;
    d->alloc = alloc;
    qpci_device_enable(&d->dev);
    d->reg = qpci_iomap(&d->dev, QHCA_REG_BAR, &d->reg_size);
    d->db = qpci_iomap(&d->dev, QHCA_DB_BAR, &d->db_size);
    cmdq = qhca_alloc(d, 4096);
    cmdcq = qhca_alloc(d, 4096);
    aeq = qhca_alloc(d, 4096);
    resp = qhca_alloc(d, 4096);
    qhca_drv_init(&d->qd, &qhca_qos_drv_ops, d, cmdq, cmdcq, aeq, resp,
                  QHCA_QOS_STEPS);
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
    guest_free(d->alloc, d->qd.resp);
    guest_free(d->alloc, d->qd.aeq);
    guest_free(d->alloc, d->qd.cmdcq);
    guest_free(d->alloc, d->qd.cmdq);
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
