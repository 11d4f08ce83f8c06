/*
 * libqos driver for the qhca RDMA HCA: the device on the qos graph
 * ("qhca", consumes "pci-bus") and what a test needs to drive it: its
 * registers and doorbells, its command queue, and memory for the queues it
 * reads, all from the test's QGuestAllocator.  What it does to the device
 * is the mini-driver it shares with the host harness (qhca-drv.h, from
 * tests/common/ of the qhca tree), over the qtest's memory and the
 * device's BARs; the functions here assert what they expect.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef QGRAPH_QHCA_H
#define QGRAPH_QHCA_H

#include "qgraph.h"
#include "pci.h"
#include "libqos-malloc.h"
#include "hw/qhca/qhca_hw.h"
#include "qhca-drv.h"

/* Where the qos graph puts the device, and its MAC there */
#define QHCA_QOS_DEVFN      QPCI_DEVFN(4, 0)
#define QHCA_QOS_MAC        "52:54:00:12:34:56"

/* The command queue, its completion ring and the async EQ (entries) */
#define QHCA_QOS_CMDQ_LOG   QHCA_DRV_CMDQ_LOG
#define QHCA_QOS_CMDCQ_LOG  QHCA_DRV_CMDCQ_LOG
#define QHCA_QOS_AEQ_LOG    QHCA_DRV_AEQ_LOG

/* How long the driver waits for the device: 2 s of virtual time */
#define QHCA_QOS_STEPS      200000

/* A guest physical address where nothing is mapped */
#define QHCA_NO_RAM_ADDR    0xfff000000000ULL

typedef struct QQhca QQhca;

struct QQhca {
    QOSGraphObject obj;
    QPCIDevice dev;
    QPCIBar reg;                /* BAR0: registers */
    QPCIBar db;                 /* BAR2: doorbell pages */
    uint64_t reg_size;
    uint64_t db_size;
    QTestState *qts;
    QGuestAllocator *alloc;
    /*
     * The shared mini-driver: its queues and response buffer (one page
     * each: qd.cmdq, qd.cmdcq, qd.aeq, qd.resp) and their indices
     */
    QhcaDrv qd;
    /* called while waiting for the device (a test's wire), may be NULL */
    void (*idle)(void);
};

/*
 * For tests outside the graph (several devices in one QEMU): find the
 * device at @devfn of @bus, enable it, map its BARs and allocate its queues
 * from @alloc.  qhca_uninit() undoes it.
 */
void qhca_init(QQhca *d, QPCIBus *bus, int devfn, QGuestAllocator *alloc);
void qhca_uninit(QQhca *d);

uint32_t qhca_rd(QQhca *d, uint32_t reg);
void qhca_wr(QQhca *d, uint32_t reg, uint32_t val);
void qhca_db(QQhca *d, uint32_t page, uint32_t off, uint32_t val);

/* Zeroed guest memory, whole pages */
uint64_t qhca_alloc(QQhca *d, uint64_t size);

/* Set the queue registers (no reset, no enable) */
void qhca_set_queue_regs(QQhca *d);
/* Reset the device and enable it with its queues empty */
void qhca_enable(QQhca *d);

/* Has the device written entry @ci of a ring (owner bit)? */
bool qhca_ring_has_entry(QQhca *d, uint64_t base, uint32_t log,
                         uint32_t esize, uint32_t owner_off, uint16_t ci);
/* The same, waiting up to 2 s of virtual time */
bool qhca_wait_entry(QQhca *d, uint64_t base, uint32_t log, uint32_t esize,
                     uint32_t owner_off, uint16_t ci);

/* Post a command, wait for its completion; the status (result: @result) */
int qhca_cmd_post(QQhca *d, uint16_t opcode, const void *payload, size_t len,
                  uint32_t *result);
/* A command that must succeed; its result */
uint32_t qhca_cmd_ok(QQhca *d, uint16_t opcode, const void *payload,
                     size_t len);
/* A command on one object handle; the status */
int qhca_cmd_obj(QQhca *d, uint16_t opcode, uint32_t handle);

/* The descriptor of a one-level list of @pages 4 KiB pages at @pbl */
struct qhca_pbl_desc qhca_pbl(uint64_t pbl, uint32_t pages);
/* @pages pages (each followed by a gap page) in a one-level page list */
struct qhca_pbl_desc qhca_mem(QQhca *d, uint32_t pages, uint64_t *first_page);
/* @pages page-list entries that all name one zeroed page */
struct qhca_pbl_desc qhca_shared_pages(QQhca *d, uint32_t pages);

uint32_t qhca_mk_pd(QQhca *d);
uint32_t qhca_mk_eq(QQhca *d, uint32_t vector, uint64_t *ring);
uint32_t qhca_mk_cq(QQhca *d, uint32_t eqn, uint32_t log, uint64_t *ring);
/* A QP of 16 send and 16 receive WQEs, its rings at *@sq and *@rq */
struct qhca_cmd_create_qp qhca_qp_desc(QQhca *d, uint8_t type, uint32_t pdn,
                                       uint32_t cqn, uint64_t *sq,
                                       uint64_t *rq);
/* GID @index: the IPv4-mapped address @ipv4 */
void qhca_add_gid(QQhca *d, uint32_t index, uint32_t ipv4);
int qhca_modify_qp(QQhca *d, uint32_t qpn, uint32_t mask,
                   const struct qhca_qp_attr *a);
struct qhca_qp_attr qhca_query_qp(QQhca *d, uint32_t qpn);

#endif
