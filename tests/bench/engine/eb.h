/*
 * The engine bench (qhca-engine-bench): the device logic (every hw/qhca-*.c
 * but the QEMU glue, as the host harness builds it, here optimised and
 * without sanitizers) driven from the host with no guest: a host-side
 * driver posts WQEs into flat RAM and polls CQEs, and the devices' frames
 * cross either an in-process wire (set-up "a": both devices in one process
 * on one core) or a datagram socket between two processes (set-up "b": UDP
 * on 127.0.0.1 or AF_UNIX, the socket work done as QEMU 10.0's
 * net/dgram.c does it, or batched as the --rx-batch/--tx-batch options
 * say).  See docs/performance.md, "The engine bench".
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef QHCA_ENGINE_BENCH_H
#define QHCA_ENGINE_BENCH_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* sendmmsg, recvmmsg, sched_setaffinity */
#endif

#include "qemu/osdep.h"
#include "qhca-core.h"
#include "qhca-drv.h"

/* Each device's flat guest RAM and its layout */
#define EB_RAM_SIZE             (96u << 20)
#define EB_CTRL_BASE            0x100000u       /* CMDQ, CMDCQ, AEQ, resp */
#define EB_RING_BASE            0x200000u       /* page lists and rings */
#define EB_RING_END             0x4000000u
#define EB_DATA_BASE            0x4000000u      /* the MR */
#define EB_MR_LEN               (4u << 20)      /* source half, target half */
#define EB_MAX_MSG              (2u << 20)

#define EB_MAX_QPS              1000
#define EB_SQ_LOG               6
#define EB_RQ_LOG               6
#define EB_CQ_LOG               13              /* 8192 CQEs: 64 pages */
/* Work requests outstanding on all QPs of a device together, at most */
#define EB_MAX_OUTSTANDING      4096

/* Frames a sender holds when the peer or the socket cannot take them */
#define EB_HOLD_MAX             8192
#define EB_FRAME_MAX            (4096 + 65536)  /* QEMU's NET_BUFSIZE */

typedef enum EbWireType {
    EB_WIRE_INPROC,
    EB_WIRE_UDP,
    EB_WIRE_UNIX,
} EbWireType;

/*
 * Where time goes (set-up a, both sides in one process): every call into a
 * device or a driver switches the account being charged, by TSC
 */
typedef enum EbAcct {
    EB_ACCT_DEV0,       /* device A's entry points */
    EB_ACCT_DEV1,
    EB_ACCT_SYS0,       /* device A's socket system calls (set-up b) */
    EB_ACCT_SYS1,
    EB_ACCT_DRV0,       /* the host-side drivers: the guests' part */
    EB_ACCT_DRV1,
    EB_ACCT_LOOP,       /* the bench's own loop and wire */
    EB_ACCT_COUNT
} EbAcct;

typedef struct EbFrame {
    uint32_t len;
    uint8_t *data;
} EbFrame;

/* A FIFO of frames held by a sender, copied (QEMU's net queue) */
typedef struct EbHold {
    EbFrame f[EB_HOLD_MAX];
    unsigned head, count;
    uint64_t dropped;
} EbHold;

typedef struct EbQp {
    uint32_t qpn;
    uint32_t peer_qpn;
    QhcaDrvRing sq, rq;
    uint16_t sq_pi;
    uint16_t rq_pi;
    uint32_t outstanding;       /* send WRs posted and not completed */
    bool queued;                /* on the driver's refill list */
} EbQp;

typedef struct EbDev EbDev;

struct EbDev {
    QhcaCore core;
    int idx;
    uint8_t mac[6];
    uint32_t ip;
    uint8_t *ram;
    uint64_t ring_next;

    /* the glue's state */
    bool bh_pending;
    int64_t timer_deadline;     /* -1: not armed */
    bool rx_resumed;            /* rx_resume() since last looked */

    /* the wire */
    EbWireType wire;
    EbDev *peer;                /* in-process */
    int fd;                     /* socket */
    struct sockaddr_storage peer_addr;
    socklen_t peer_addr_len;
    EbHold hold;
    bool want_pollout;
    unsigned tx_batch;          /* sendmmsg() batches of up to this */
    unsigned tx_pending;
    struct mmsghdr *tx_msgs;
    struct iovec *tx_iov;
    uint8_t *tx_bufs;

    /* the driver */
    QhcaDrv drv;
    uint32_t pdn, eqn, cqn, lkey;
    uint64_t mr_iova;
    QhcaDrvRing eq, cq;
    uint16_t cq_ci;
    EbQp *qps;
    unsigned nqps;
    unsigned *refill;           /* QPs to post more on */
    unsigned nrefill;

    /* counters */
    uint64_t tx_frames, tx_bytes, rx_frames, rx_bytes;
    uint64_t eagain, syscalls, wakeups;
    uint64_t completions, errors, recv_completions;
};

/* The clock: real (CLOCK_MONOTONIC) or virtual (for repeatable counts) */
extern bool eb_virtual_clock;
extern int64_t eb_vclock;
int64_t eb_now_ns(void);

/* Accounting (glue.c) */
extern uint64_t eb_acct[EB_ACCT_COUNT];
EbAcct eb_switch(EbAcct to);
void eb_acct_reset(void);
double eb_tsc_ns(void);         /* ns per TSC tick, calibrated */
void eb_tsc_calibrate(void);
/* callgrind: count only the instructions of account @a (-1: none) */
void eb_cg_measure(int a);

/* The device and its glue (glue.c) */
void eb_dev_init(EbDev *d, int idx);
void eb_dev_run(EbDev *d);
void eb_dev_timer(EbDev *d);
void eb_dev_db(EbDev *d, uint32_t page, uint32_t off, uint32_t val);
void eb_dev_receive(EbDev *d, const uint8_t *frame, size_t len);
/* Deliver held frames while the receiver takes them; true if any */
bool eb_hold_flush(EbDev *d);
/* Set-up b: one wake-up of the socket: up to @batch frames; how many */
unsigned eb_sock_rx(EbDev *d, unsigned batch, uint8_t *buf);
void eb_sock_tx_flush(EbDev *d);
void eb_sock_setup_tx_batch(EbDev *d, unsigned batch);
/* Let both devices (or the one, in set-up b) run once; false if idle */
bool eb_step_inproc(EbDev *devs, unsigned n);

/* The driver's control path (driver.c) */
bool eb_drv_setup(EbDev *d, unsigned nqps, bool need_rq);
bool eb_drv_connect(EbDev *a, EbDev *b, unsigned mtu);

#endif
