/*
 * The test mini-driver of the qhca device: what the QEMU qtests (through
 * the libqos driver qtest/libqos/qhca.c and the two-device helper
 * qtest/qhca-wire.c) and the host harness (tests/harness/driver.c) both do
 * to a device, written once over a small ops struct (QhcaDrvOps) that each
 * supplies: guest memory as the CPU sees it, the device's registers and
 * doorbells, and a way to let the device run while waiting.
 *
 *   - the command queue, its completion queue and the async EQ: enabling
 *     the device with them empty, posting a command and taking its
 *     completion;
 *   - rings in guest memory as a driver lays them out (pages in reverse
 *     order, so translation mistakes show) and their one-level page lists;
 *   - EQ, CQ, SRQ and MR creation, GIDs, address handles;
 *   - taking a QP through its states (RC and UC: INIT, RTR, RTS; UD);
 *   - send and receive WQEs, doorbells, and taking CQEs.
 *
 * Every layout comes from include/qhca_hw.h.  Nothing here asserts: a
 * function reports a command's status (or -1 for no completion) and
 * leaves what a failure means to its caller (the qtests assert, the
 * harness and its fuzzer go on).  QEMU's build links this file into
 * libqos (scripts/build links tests/common/ into tests/qtest/libqos/,
 * scripts/qemu/0004-qhca-qtests.patch compiles it); the harness's
 * meson.build and scripts/fuzz compile it into the harness.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef QHCA_DRV_H
#define QHCA_DRV_H

#include "hw/qhca/qhca_hw.h"

/* The command queue, its completion ring and the async EQ (log2 entries) */
#define QHCA_DRV_CMDQ_LOG       3
#define QHCA_DRV_CMDCQ_LOG      3
#define QHCA_DRV_AEQ_LOG        4
/* The response buffer each command names */
#define QHCA_DRV_RESP_LEN       256
/* Pages a ring may have */
#define QHCA_DRV_RING_MAX_PAGES 64

typedef struct QhcaDrvOps {
    /* Guest memory as the guest's CPU sees it */
    void (*mem_read)(void *opaque, uint64_t addr, void *buf, uint64_t len);
    void (*mem_write)(void *opaque, uint64_t addr, const void *buf,
                      uint64_t len);
    void (*mem_set)(void *opaque, uint64_t addr, uint8_t val, uint64_t len);
    /* @n zeroed pages for rings and page lists; 0 if there is no room */
    uint64_t (*alloc_pages)(void *opaque, uint32_t n);
    /* BAR0 registers, and BAR2: offset @off of doorbell page @page */
    uint32_t (*reg_read)(void *opaque, uint32_t off);
    void (*reg_write)(void *opaque, uint32_t off, uint32_t val);
    void (*db_write)(void *opaque, uint32_t page, uint32_t off, uint32_t val);
    /*
     * Let the device (and whatever feeds it) run for a while, as the guest
     * does while it waits; false if nothing is left that could happen
     */
    bool (*step)(void *opaque);
    /*
     * Optional: called with each command of qhca_drv_cmd() (and of every
     * function that posts one) before it is posted, its cookie not yet
     * given; it may change the command; false: the command is not posted
     * (it fails with -1)
     */
    bool (*cmd_filter)(void *opaque, struct qhca_cmd *cmd);
} QhcaDrvOps;

/* One device as the mini-driver sees it */
typedef struct QhcaDrv {
    const QhcaDrvOps *ops;
    void *opaque;
    /* one page each: the command queue, its CQ, the async EQ, responses */
    uint64_t cmdq, cmdcq, aeq, resp;
    uint16_t cmdq_pi, cmdcq_ci, aeq_ci;
    uint32_t cookie;
    bool arm_cmdcq;             /* re-arm the command CQ on each completion */
    unsigned cmd_steps;         /* step()s a command waits for at most */
} QhcaDrv;

/* A ring of 2^log entries of 2^stride_log bytes, its pages not contiguous */
typedef struct QhcaDrvRing {
    uint64_t page[QHCA_DRV_RING_MAX_PAGES];
    uint32_t npages;
    uint32_t log;
    uint32_t stride_log;
} QhcaDrvRing;

void qhca_drv_init(QhcaDrv *q, const QhcaDrvOps *ops, void *opaque,
                   uint64_t cmdq, uint64_t cmdcq, uint64_t aeq,
                   uint64_t resp, unsigned cmd_steps);
/* Write the queue registers (no reset, no enable) */
void qhca_drv_set_queue_regs(QhcaDrv *q);
/* Reset the device, empty its queues and enable it: is it READY? */
bool qhca_drv_enable(QhcaDrv *q);

/* Has the device written entry @idx (at @addr) of a ring of 2^@log? */
bool qhca_drv_entry_ready(QhcaDrv *q, uint64_t addr, uint32_t log,
                          uint16_t idx, uint32_t owner_off);
/* The same, letting the device run for up to @steps step()s */
bool qhca_drv_wait_entry(QhcaDrv *q, uint64_t addr, uint32_t log,
                         uint16_t idx, uint32_t owner_off, unsigned steps);

/*
 * Commands.  qhca_drv_cmd_init() fills in @cmd as qhca_drv_cmd() posts
 * it (its response to q->resp); false if @len does not fit.
 * qhca_drv_cmd_post() gives it the next cookie, writes it to the queue and
 * rings the doorbell; qhca_drv_cmd_take() waits for the next completion
 * and takes it.  qhca_drv_cmd_run() does both: the status, or -1 if no
 * completion came or it was another command's (its cookie or opcode).
 */
bool qhca_drv_cmd_init(QhcaDrv *q, struct qhca_cmd *cmd, uint16_t opcode,
                       const void *payload, size_t len);
void qhca_drv_cmd_post(QhcaDrv *q, struct qhca_cmd *cmd);
bool qhca_drv_cmd_take(QhcaDrv *q, struct qhca_cmd_comp *comp);
int qhca_drv_cmd_run(QhcaDrv *q, struct qhca_cmd *cmd,
                     struct qhca_cmd_comp *comp);
/* A command: its status (-1 as above), its result in *@result */
int qhca_drv_cmd(QhcaDrv *q, uint16_t opcode, const void *payload,
                 size_t len, uint32_t *result);
/* Arm the command CQ, now and after each completion taken */
void qhca_drv_arm_cmdcq(QhcaDrv *q);
/* Take the async events the device has written; how many */
unsigned qhca_drv_aeq_poll(QhcaDrv *q);

/* Page lists and rings */
struct qhca_pbl_desc qhca_drv_pbl_desc(uint64_t pbl, uint32_t pages,
                                       uint8_t shift);
/* A one-level list of @n (at most QHCA_PBL_ENTRIES) pages, on a new page */
struct qhca_pbl_desc qhca_drv_pbl(QhcaDrv *q, const uint64_t *pages,
                                  uint32_t n, uint8_t shift);
/*
 * A ring of 2^@log entries of 2^@stride_log bytes (at most
 * QHCA_DRV_RING_MAX_PAGES pages: r->npages 0 if there is no room) and its
 * page list
 */
struct qhca_pbl_desc qhca_drv_ring_alloc(QhcaDrv *q, QhcaDrvRing *r,
                                         uint32_t log, uint32_t stride_log);
/* The address of entry @idx (0 past the ring's pages) */
uint64_t qhca_drv_ring_addr(const QhcaDrvRing *r, uint32_t idx);
bool qhca_drv_ring_ready(QhcaDrv *q, const QhcaDrvRing *r, uint16_t idx,
                         uint32_t owner_off);

/* Objects: each the command's status, the new object's number in *@out */
int qhca_drv_create_eq(QhcaDrv *q, const struct qhca_pbl_desc *mem,
                       uint32_t log, uint32_t vector, uint32_t *out);
int qhca_drv_create_cq(QhcaDrv *q, const struct qhca_pbl_desc *mem,
                       uint32_t log, uint32_t eqn, uint32_t *out);
int qhca_drv_create_srq(QhcaDrv *q, const struct qhca_pbl_desc *mem,
                        uint32_t pdn, uint32_t log, uint32_t stride_log,
                        uint32_t *out);
/* An MR over @mem, its key's variant 0x11 */
int qhca_drv_reg_mr(QhcaDrv *q, uint32_t pdn, uint32_t access, uint64_t iova,
                    uint64_t len, const struct qhca_pbl_desc *mem,
                    uint32_t *key);
/* An IPv4 address as a GID: IPv4-mapped IPv6, ::ffff:a.b.c.d */
void qhca_drv_gid_ipv4(uint8_t *gid, uint32_t ip);
int qhca_drv_add_gid(QhcaDrv *q, uint32_t index, const uint8_t *gid);
/* An AH (hop limit 64) to @dgid at @dmac from GID @sgid_index */
int qhca_drv_create_ah(QhcaDrv *q, uint32_t pdn, uint8_t sgid_index,
                       const uint8_t *dgid, const uint8_t *dmac,
                       uint32_t *ahn);

/* QPs */
int qhca_drv_modify_qp(QhcaDrv *q, uint32_t qpn, uint32_t mask,
                       const struct qhca_qp_attr *a);
/* QUERY_QP; the attributes in *@a if it worked */
int qhca_drv_query_qp(QhcaDrv *q, uint32_t qpn, struct qhca_qp_attr *a);
/*
 * RC (@rc) or UC: INIT, RTR, RTS with the attributes @t gives: access
 * flags; path (AV, MTU, destination QP, receive PSN) and for RC the
 * responder's READ/atomic depth and RNR timer; send PSN and for RC
 * timeout, retries and READ/atomic depth.  QHCA_CMD_OK or the status of
 * the first that failed
 */
int qhca_drv_qp_connect(QhcaDrv *q, uint32_t qpn, bool rc,
                        const struct qhca_qp_attr *t);
/* UD: INIT with Q_Key @qkey, RTR, and RTS with @sq_psn if @rts */
int qhca_drv_qp_ud_up(QhcaDrv *q, uint32_t qpn, uint32_t qkey,
                      uint32_t sq_psn, bool rts);

/* Work requests and completions */
struct qhca_sge qhca_drv_sge(uint64_t addr, uint32_t len, uint32_t lkey);
/* A signaled send WQE of @opcode; the caller fills in the rest */
struct qhca_send_wqe qhca_drv_wqe(uint8_t opcode, uint64_t wr_id);
/* A doorbell of the kernel's page: @num (QP, SRQ, CQ) and index @idx */
void qhca_drv_db(QhcaDrv *q, uint32_t off, uint32_t num, uint16_t idx);
/*
 * Write send WQE @w at index @idx of @sq with @nsge SGEs, or @inl_len
 * bytes of inline data if @inl (what fits the WQE); false if @idx is
 * past the ring's pages
 */
bool qhca_drv_put_send(QhcaDrv *q, const QhcaDrvRing *sq, uint16_t idx,
                       struct qhca_send_wqe *w, const struct qhca_sge *sges,
                       unsigned nsge, const void *inl, uint32_t inl_len);
bool qhca_drv_put_recv(QhcaDrv *q, const QhcaDrvRing *rq, uint16_t idx,
                       uint64_t wr_id, const struct qhca_sge *sges,
                       unsigned nsge);
/*
 * Take CQE *@ci of CQ @cqn (ring @cq) if the device wrote it: advance
 * *@ci and tell the device
 */
bool qhca_drv_poll_cq(QhcaDrv *q, const QhcaDrvRing *cq, uint16_t *ci,
                      uint32_t cqn, struct qhca_cqe *cqe);

#endif
