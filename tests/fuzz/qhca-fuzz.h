/*
 * The qhca fuzz target's input format and what its parts share.
 *
 * The format is described at the top of qhca-fuzz.c: a tag byte, whose
 * value modulo FZ_OP_COUNT is the operation's number in the enum below
 * and its index in qhca-fuzz.c's operation table, then the operation's
 * packed Fz* arguments below.  tests/fuzz/mkcorpus.py reads the numbers
 * and the layouts out of this file to write the seeds, the dictionary and
 * the reproducers: a new operation goes at the end (before FZ_OP_COUNT),
 * or every existing input changes its meaning.
 *
 * The operations are in a file per subject: fuzz-device.c (the main loop,
 * time, registers, doorbells, resets, MSI-X, link, polling, memory),
 * fuzz-queues.c (WQEs, QP doorbells, expectations, connections),
 * fuzz-wire.c (frames), fuzz-cmd.c (commands and queries), fuzz-addr.c
 * (GIDs, address vectors, multicast) and fuzz-resize.c (REREG_MR,
 * RESIZE_CQ, RESIZE_SRQ); qhca-fuzz.c has the table, the state and the
 * selectors they share, and libFuzzer's entry points.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef QHCA_FUZZ_H
#define QHCA_FUZZ_H

#include "harness.h"

enum {
    FZ_OP_PUMP,
    FZ_OP_ADVANCE,
    FZ_OP_SETTLE,
    FZ_OP_REG_WRITE,
    FZ_OP_REG_READ,
    FZ_OP_DB_WRITE,
    FZ_OP_CMD,
    FZ_OP_SEND,
    FZ_OP_RECV,
    FZ_OP_WQE_RAW,
    FZ_OP_DB_QP,
    FZ_OP_FRAME_RAW,
    FZ_OP_FRAME,
    FZ_OP_WIRE_MUTATE,
    FZ_OP_WIRE_MODE,
    FZ_OP_RESET,
    FZ_OP_MSIX,
    FZ_OP_LINK,
    FZ_OP_POLL,
    FZ_OP_MEM_WRITE,
    FZ_OP_EXPECT_CQE,
    FZ_OP_EXPECT_QP,
    FZ_OP_CONNECT,
    FZ_OP_QUERY,
    FZ_OP_FRAME6,
    FZ_OP_GID,
    FZ_OP_AV,
    FZ_OP_REREG,
    FZ_OP_RESIZE,
    FZ_OP_MCAST,
    FZ_OP_MFRAME,
    FZ_OP_COUNT
};

typedef struct QEMU_PACKED FzSge {
    uint32_t off;
    uint32_t len;
    uint8_t key;
} FzSge;

typedef struct QEMU_PACKED FzPump {
    uint8_t steps;
} FzPump;

typedef struct QEMU_PACKED FzAdvance {
    uint8_t exp;
} FzAdvance;

typedef struct QEMU_PACKED FzSettle {
    uint8_t ms;
} FzSettle;

typedef struct QEMU_PACKED FzRegWrite {
    uint8_t dev;
    uint16_t off;
    uint32_t val;
} FzRegWrite;

typedef struct QEMU_PACKED FzRegRead {
    uint8_t dev;
    uint16_t off;
} FzRegRead;

typedef struct QEMU_PACKED FzDbWrite {
    uint8_t dev;
    uint8_t page;
    uint8_t off;
    uint32_t val;
} FzDbWrite;

typedef struct QEMU_PACKED FzCmd {
    uint8_t dev;
    uint8_t opcode;
    uint8_t fix;
    uint8_t len;                /* then len bytes of payload */
} FzCmd;

typedef struct QEMU_PACKED FzSend {
    uint8_t dev;
    uint8_t qp;
    uint8_t opcode;
    uint8_t flags;
    uint16_t inline_len;
    uint8_t nsge;
    FzSge sge[3];
    uint32_t remote;
    uint8_t rkey;
    uint64_t add;
    uint64_t swap;
    uint32_t imm;
    uint8_t nodb;
} FzSend;

typedef struct QEMU_PACKED FzRecv {
    uint8_t dev;
    uint8_t qp;
    uint8_t nsge;
    FzSge sge[3];
    uint8_t nodb;
    uint32_t wr_id;
} FzRecv;

typedef struct QEMU_PACKED FzWqeRaw {
    uint8_t dev;
    uint8_t qp;
    uint8_t which;
    int8_t slot;
    uint8_t off;
    uint8_t len;                /* then len bytes */
} FzWqeRaw;

typedef struct QEMU_PACKED FzDbQp {
    uint8_t dev;
    uint8_t qp;
    uint8_t which;
    uint8_t mode;
    uint16_t val;
} FzDbQp;

typedef struct QEMU_PACKED FzFrameRaw {
    uint8_t to;
    uint16_t len;               /* then len bytes */
} FzFrameRaw;

typedef struct QEMU_PACKED FzFrame {
    uint8_t to;
    uint8_t opcode;
    uint8_t qp;
    uint8_t psn_mode;
    uint32_t psn;
    uint8_t flags;
    uint64_t va;
    uint8_t rkey;
    uint32_t dma_len;
    uint8_t syndrome;
    uint32_t msn;
    uint64_t swap_add;
    uint64_t compare;
    uint32_t imm;
    uint32_t qkey;
    uint32_t src_qp;
    uint16_t plen;
    uint8_t pattern;
} FzFrame;

typedef struct QEMU_PACKED FzWireMutate {
    uint8_t idx;
    uint8_t action;
    uint16_t pos;
    uint8_t val;
} FzWireMutate;

typedef struct QEMU_PACKED FzWireMode {
    uint8_t from;
    uint8_t mode;
    uint8_t every;
} FzWireMode;

typedef struct QEMU_PACKED FzReset {
    uint8_t dev;
    uint8_t kind;
} FzReset;

typedef struct QEMU_PACKED FzMsix {
    uint8_t dev;
    uint8_t vector;
    uint8_t kind;
    uint32_t off;
    uint32_t data;
} FzMsix;

typedef struct QEMU_PACKED FzLink {
    uint8_t dev;
    uint8_t up;
} FzLink;

typedef struct QEMU_PACKED FzPoll {
    uint8_t dev;
    uint8_t max;
    uint8_t arm;
} FzPoll;

typedef struct QEMU_PACKED FzMemWrite {
    uint8_t dev;
    uint8_t region;
    uint32_t off;
    uint8_t len;                /* then len bytes */
} FzMemWrite;

typedef struct QEMU_PACKED FzExpectCqe {
    uint8_t dev;
    uint8_t qp;
    uint32_t wr_id;
    uint8_t status;
    uint8_t ms;
} FzExpectCqe;

typedef struct QEMU_PACKED FzExpectQp {
    uint8_t dev;
    uint8_t qp;
    uint8_t state;
} FzExpectQp;

typedef struct QEMU_PACKED FzConnect {
    uint8_t qp;
    uint8_t mtu;
    uint8_t timeout;
    uint8_t retry;
    uint8_t rnr_retry;
    uint8_t min_rnr;
    uint8_t max_rd;
    uint8_t access;
    uint32_t psn;
} FzConnect;

typedef struct QEMU_PACKED FzQuery {
    uint8_t dev;
    uint8_t which;
    uint32_t arg;
    uint8_t resp;
    uint16_t off;
    uint32_t len;
    uint8_t status;
} FzQuery;

/* FRAME6: an FzFrame, then this */
typedef struct QEMU_PACKED FzIp6 {
    uint8_t tclass;
    uint32_t flow;
    uint8_t src;
    uint8_t dst;
    uint8_t mangle;
    uint16_t val;
} FzIp6;

typedef struct QEMU_PACKED FzGid {
    uint8_t dev;
    uint8_t del;
    uint8_t index;
    uint8_t kind;
    uint64_t hi;
    uint64_t lo;
    uint8_t status;
} FzGid;

typedef struct QEMU_PACKED FzAv {
    uint8_t dev;
    uint8_t which;
    uint8_t qp;
    uint8_t sgid;
    uint8_t dgid;
    uint8_t tclass;
    uint32_t flow;
    uint16_t val;
    uint8_t status;
} FzAv;

typedef struct QEMU_PACKED FzRereg {
    uint8_t dev;
    uint8_t key;
    uint8_t what;
    uint8_t pd;
    uint8_t access;
    uint8_t mem;
    uint32_t iova;
    uint32_t length;
    uint16_t val;
    uint8_t status;
} FzRereg;

typedef struct QEMU_PACKED FzResize {
    uint8_t dev;
    uint8_t cq;
    uint8_t log;
    uint8_t mem;
    uint32_t arg;
    uint8_t status;
} FzResize;

typedef struct QEMU_PACKED FzMcast {
    uint8_t dev;
    uint8_t flags;
    uint8_t qp;
    uint8_t group;
    uint32_t val;
    uint8_t count;
    uint8_t status;
} FzMcast;

/* MFRAME: an FzFrame, then this */
typedef struct QEMU_PACKED FzMframe {
    uint8_t group;
    uint32_t val;
    uint8_t mac;
    uint8_t dqp;
    uint8_t src;
} FzMframe;

#define FRMR_IOVA       0x70000000ULL
#define FRMR_PAGES      16
#define MS              (1000 * 1000)

/* What is left of the input */
typedef struct Fz {
    const uint8_t *p;
    size_t n;
} Fz;

/* The state of a run (qhca-fuzz.c), set up again for each input */
extern HxPair pair;
/* QHCA_FUZZ_STRICT=1: failed expectations abort */
extern bool strict;
/* per device: the fast-register page list and its pages */
extern uint64_t frmr_pbl[2];
/* per device: the AH the last good AV operation made (0: none) */
extern uint32_t av_ahn[2];
/* per device: the AH to a group the last MCAST with flags & 16 made */
extern uint32_t mcast_ahn[2];
/*
 * per device: the window the last good ALLOC_MW (a CMD op) made, with the
 * key the last BIND_MW SEND op gave it (0: none); rkey selector 0x7f
 */
extern uint32_t mw_key[2];
/* per device: the counters QUERY_STATS returned last (strict checks) */
extern uint64_t stats_seen[2][QHCA_STAT_NUM];

/* Taking the input (qhca-fuzz.c) */
bool take(Fz *f, void *out, size_t len);
const uint8_t *take_var(Fz *f, size_t *len);
HxDev *take_dev_up(Fz *f, void *args, size_t len);

/* Expectations, checked under QHCA_FUZZ_STRICT=1 */
void strict_fail(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
void status_check(const char *what, HxDev *d, int st, uint8_t want);

/* Selectors of the input format (qhca-fuzz.c) */
HxDev *dev_sel(uint8_t sel);
HxDev *peer_of(HxDev *d);
uint32_t qpn_sel(HxDev *d, uint8_t sel);
uint32_t key_sel(HxDev *d, uint8_t sel);
uint64_t key_iova(HxDev *d, uint8_t sel);
uint64_t hostile_page(bool bars, uint32_t i);
void fill_sges(HxDev *d, const FzSge *in, struct qhca_sge *out);
void addr6_sel(uint8_t kind, HxDev *d, HxDev *other, uint16_t val,
               uint8_t *out);
bool group_gid(uint8_t kind, HxDev *d, uint32_t val, uint8_t *gid);
void frmr_setup(HxDev *d);

/* The operations, in the order of the enum */
void op_pump(Fz *f);                /* fuzz-device.c */
void op_advance(Fz *f);
void op_settle(Fz *f);
void op_reg_write(Fz *f);
void op_reg_read(Fz *f);
void op_db_write(Fz *f);
void op_cmd(Fz *f);                 /* fuzz-cmd.c */
void op_send(Fz *f);                /* fuzz-queues.c */
void op_recv(Fz *f);
void op_wqe_raw(Fz *f);
void op_db_qp(Fz *f);
void op_frame_raw(Fz *f);           /* fuzz-wire.c */
void op_frame(Fz *f);
void op_wire_mutate(Fz *f);
void op_wire_mode(Fz *f);
void op_reset(Fz *f);               /* fuzz-device.c */
void op_msix(Fz *f);
void op_link(Fz *f);
void op_poll(Fz *f);
void op_mem_write(Fz *f);
void op_expect_cqe(Fz *f);          /* fuzz-queues.c */
void op_expect_qp(Fz *f);
void op_connect(Fz *f);
void op_query(Fz *f);               /* fuzz-cmd.c */
void op_frame6(Fz *f);              /* fuzz-wire.c */
void op_gid(Fz *f);                 /* fuzz-addr.c */
void op_av(Fz *f);
void op_rereg(Fz *f);               /* fuzz-resize.c */
void op_resize(Fz *f);
void op_mcast(Fz *f);               /* fuzz-addr.c */
void op_mframe(Fz *f);              /* fuzz-wire.c */

#endif
