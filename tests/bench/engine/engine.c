/*
 * qhca-engine-bench: the device's own speed, with no guest (see eb.h and
 * docs/performance.md, "The engine bench").
 *
 *   qhca-engine-bench [--setup a|b] [--wire udp|unix] [--op write|read|send]
 *                     [--size BYTES] [--qps N] [--depth N] [--seconds S]
 *                     [--iters N] [--window-kib N] [--rx-batch N]
 *                     [--tx-batch N] [--rcvbuf BYTES] [--sndbuf BYTES]
 *                     [--virtual-clock]
 *                     [--cg-side 0|1] [--cpus C0,C1]
 *                     [--crc table|clmul|avx2|avx512]
 *   qhca-engine-bench --memcpy [--size BYTES] [--seconds S]
 *
 * Device A is the requester (it posts the WRITEs, READs or SENDs on every
 * QP), device B the responder (for SEND it keeps every RQ full).  Each QP
 * keeps --depth work requests outstanding (default: 32, or fewer so that
 * all QPs together have at most 4096), every one signalled.  The run posts
 * for --seconds (or until --iters messages are posted), then lets every
 * outstanding one complete.
 *
 * Set-up a: both devices in this process, on one core; a frame one sends is
 * received by the other at once (qhca_core_receive(), the full receive
 * path: parse, ICRC check, queue, engine), or held while the other's
 * receive queue is full.  Set-up b: the devices are made and connected in
 * this process, which then forks: A stays (core C0), B runs in the child
 * (core C1); each has a non-blocking datagram socket and a loop like
 * QEMU's main loop (one ppoll() per iteration; per readable socket one
 * recv() as net/dgram.c does, or one recvmmsg() of --rx-batch; a device's
 * frames sent one sendto() each as net/dgram.c does, or batched with
 * sendmmsg() at the end of the run that made them with --tx-batch).
 *
 * One line of key=value pairs on stdout (scripts/lib/qhca_engine_bench.py
 * reads it).  Exit 0 if every message completed successfully, 1 if not,
 * 2 for a usage error.
 *
 * --virtual-clock: the devices' clock stands still while anything can run
 * and jumps to the next timer when nothing can (set-up a only), so that
 * instruction counts repeat.  --cg-side N: under valgrind --tool=callgrind
 * --collect-atstart=no, count only device N's instructions during the run
 * (set-up a).
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "eb.h"
#include "qhca-roce.h"
#include "qemu/bswap.h"
#include <getopt.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>

typedef enum EbOp { EB_OP_WRITE, EB_OP_READ, EB_OP_SEND } EbOp;

typedef struct EbOpts {
    char setup;
    EbWireType wire;
    EbOp op;
    uint32_t size;
    unsigned qps;
    unsigned depth;
    double seconds;
    uint64_t iters;
    unsigned window_kib;
    unsigned rx_batch;
    unsigned tx_batch;
    int rcvbuf;
    int sndbuf;
    int cg_side;
    int cpu[2];
    int crc;
    bool memcpy_only;
} EbOpts;

static EbOpts opt = {
    .setup = 'a', .wire = EB_WIRE_INPROC, .op = EB_OP_WRITE, .size = 65536,
    .qps = 1, .seconds = 2.0, .window_kib = 64, .rx_batch = 1,
    .tx_batch = 1, .cg_side = -1, .cpu = { 0, 1 }, .crc = -1,
};

/* --crc: how the ICRC is computed (QHCA_ROCE_CRC32_*) */
static const char *const crc_names[QHCA_ROCE_CRC32_LEVELS] = {
    [QHCA_ROCE_CRC32_TABLE] = "table",
    [QHCA_ROCE_CRC32_CLMUL] = "clmul",
    [QHCA_ROCE_CRC32_CLMUL_AVX2] = "avx2",
    [QHCA_ROCE_CRC32_CLMUL_AVX512] = "avx512",
};

static const char *const op_names[] = { "write", "read", "send" };
static const char *const wire_names[] = { "inproc", "udp", "unix" };

/* The requester's progress */
typedef struct EbRun {
    bool posting;
    uint64_t posted;
    uint64_t outstanding;
    int64_t t_start, t_end;
} EbRun;

static EbRun run;

static void pin(int cpu)
{
    cpu_set_t set;

    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set) < 0) {
        perror("engine-bench: sched_setaffinity");
    }
}

static double cpu_seconds(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
           ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static double wall_seconds(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * The data path of the host-side driver
 */

static uint8_t *ram_at(EbDev *d, uint64_t addr)
{
    return d->ram + addr;
}

static void post_send(EbDev *d, EbQp *qp, EbDev *peer)
{
    uint8_t *w = ram_at(d, qhca_drv_ring_addr(&qp->sq, qp->sq_pi));
    struct qhca_send_wqe wqe = { 0 };
    struct qhca_sge sge;
    uint64_t src = d->mr_iova, dst = peer->mr_iova + EB_MR_LEN / 2;

    wqe.flags = QHCA_WQE_SIGNALED;
    wqe.num_sge = 1;
    wqe.wr_id = cpu_to_le64(run.posted);
    switch (opt.op) {
    case EB_OP_WRITE:
        wqe.opcode = QHCA_WQE_RDMA_WRITE;
        break;
    case EB_OP_READ:
        wqe.opcode = QHCA_WQE_RDMA_READ;
        src = d->mr_iova + EB_MR_LEN / 2;
        dst = peer->mr_iova;
        break;
    case EB_OP_SEND:
        wqe.opcode = QHCA_WQE_SEND;
        break;
    }
    if (opt.op != EB_OP_SEND) {
        wqe.rdma.remote_addr = cpu_to_le64(dst);
        wqe.rdma.rkey = cpu_to_le32(peer->lkey);
    }
    sge = qhca_drv_sge(src, opt.size, d->lkey);
    memcpy(w + QHCA_SEND_WQE_HDR_SIZE, &sge, sizeof(sge));
    memcpy(w, &wqe, sizeof(wqe));
    qp->sq_pi++;
    qp->outstanding++;
    run.posted++;
    run.outstanding++;
}

static void post_recv(EbDev *d, EbQp *qp)
{
    uint8_t *w = ram_at(d, qhca_drv_ring_addr(&qp->rq, qp->rq_pi));
    struct qhca_recv_wqe r = { .wr_id = cpu_to_le64(qp->rq_pi),
                               .num_sge = 1 };
    struct qhca_sge sge = qhca_drv_sge(d->mr_iova + EB_MR_LEN / 2, opt.size,
                                       d->lkey);

    memcpy(w + QHCA_RECV_WQE_HDR_SIZE, &sge, sizeof(sge));
    memcpy(w, &r, sizeof(r));
    qp->rq_pi++;
}

static void refill_queue(EbDev *d, unsigned i)
{
    if (!d->qps[i].queued) {
        d->qps[i].queued = true;
        d->refill[d->nrefill++] = i;
    }
}

/* Post what the QPs on the refill list may have outstanding */
static bool drv_refill(EbDev *d, EbDev *peer)
{
    unsigned n = d->nrefill, k;

    if (!n) {
        return false;
    }
    d->nrefill = 0;
    for (k = 0; k < n; k++) {
        EbQp *qp = &d->qps[d->refill[k]];
        uint16_t pi = qp->sq_pi;

        qp->queued = false;
        while (run.posting && qp->outstanding < opt.depth) {
            if (opt.iters && run.posted >= opt.iters) {
                run.posting = false;
                break;
            }
            post_send(d, qp, peer);
        }
        if (qp->sq_pi != pi) {
            eb_dev_db(d, QHCA_KERNEL_DB_PAGE, QHCA_DB_SQ,
                      qp->qpn | (uint32_t)qp->sq_pi << QHCA_DB_IDX_SHIFT);
        }
    }
    return true;
}

static int qp_index(EbDev *d, uint32_t qpn)
{
    /* QPs are numbered in creation order from the first one */
    uint32_t i = qpn - d->qps[0].qpn;

    return i < d->nqps && d->qps[i].qpn == qpn ? (int)i : -1;
}

/* Take the CQEs the device wrote; true if any */
static bool drv_poll(EbDev *d, bool requester)
{
    unsigned got = 0;

    for (;;) {
        uint64_t a = qhca_drv_ring_addr(&d->cq, d->cq_ci);
        struct qhca_cqe *cqe = (struct qhca_cqe *)ram_at(d, a);
        int i;

        if ((cqe->owner & QHCA_OWNER_BIT) !=
            !((d->cq_ci >> EB_CQ_LOG) & 1)) {
            break;
        }
        d->cq_ci++;
        got++;
        i = qp_index(d, le32_to_cpu(cqe->qpn));
        if (cqe->status != QHCA_CQE_SUCCESS || i < 0) {
            if (!d->errors++) {
                fprintf(stderr, "engine-bench: device %c: CQE status %u "
                        "(vendor %u) opcode %u on QP %u\n", 'A' + d->idx,
                        cqe->status, cqe->vendor_err, cqe->opcode,
                        le32_to_cpu(cqe->qpn));
            }
            if (i >= 0 && !(cqe->opcode & QHCA_CQE_OP_RECV) &&
                requester) {
                d->qps[i].outstanding--;
                run.outstanding--;
            }
            continue;
        }
        if (cqe->opcode & QHCA_CQE_OP_RECV) {
            d->recv_completions++;
            post_recv(d, &d->qps[i]);
            eb_dev_db(d, QHCA_KERNEL_DB_PAGE, QHCA_DB_RQ,
                      d->qps[i].qpn |
                      (uint32_t)d->qps[i].rq_pi << QHCA_DB_IDX_SHIFT);
            continue;
        }
        d->completions++;
        d->qps[i].outstanding--;
        run.outstanding--;
        refill_queue(d, i);
    }
    if (got) {
        eb_dev_db(d, QHCA_KERNEL_DB_PAGE, QHCA_DB_CQ_CI,
                  d->cqn | (uint32_t)d->cq_ci << QHCA_DB_IDX_SHIFT);
    }
    return got;
}

/* The driver's turn: completions taken, work posted; true if any */
static bool drv_turn(EbDev *d, EbDev *peer, bool requester)
{
    EbAcct prev = eb_switch(EB_ACCT_DRV0 + d->idx);
    bool any = drv_poll(d, requester);

    if (requester) {
        any |= drv_refill(d, peer);
    }
    eb_switch(prev);
    return any;
}

static void fill_rqs(EbDev *d)
{
    unsigned i, k;

    for (i = 0; i < d->nqps; i++) {
        EbQp *qp = &d->qps[i];

        for (k = 0; k < (1u << EB_RQ_LOG) - 1; k++) {
            post_recv(d, qp);
        }
        eb_dev_db(d, QHCA_KERNEL_DB_PAGE, QHCA_DB_RQ,
                  qp->qpn | (uint32_t)qp->rq_pi << QHCA_DB_IDX_SHIFT);
    }
}

static void start_posting(EbDev *d)
{
    unsigned i;

    run.posting = true;
    run.t_start = wall_seconds() * 1e9;
    for (i = 0; i < d->nqps; i++) {
        refill_queue(d, i);
    }
}

static bool time_up(double t0)
{
    if (opt.iters) {
        return false;   /* drv_refill stops at --iters */
    }
    return wall_seconds() - t0 >= opt.seconds;
}

/*
 * Set-up a
 */

static int64_t next_deadline(EbDev *devs)
{
    int64_t t = -1;
    unsigned i;

    for (i = 0; i < 2; i++) {
        if (devs[i].timer_deadline >= 0 &&
            (t < 0 || devs[i].timer_deadline < t)) {
            t = devs[i].timer_deadline;
        }
    }
    return t;
}

static bool loop_inproc(EbDev *devs)
{
    double t0 = wall_seconds(), t_drain = 0;
    uint64_t idle = 0;

    start_posting(&devs[0]);
    for (;;) {
        bool any = eb_step_inproc(devs, 2);

        any |= drv_turn(&devs[0], &devs[1], true);
        if (opt.op == EB_OP_SEND) {
            any |= drv_turn(&devs[1], &devs[0], false);
        }
        if (run.posting && time_up(t0)) {
            run.posting = false;
        }
        if (!run.posting && !run.outstanding) {
            break;
        }
        if (!run.posting && !t_drain) {
            t_drain = wall_seconds();
        }
        if (t_drain && wall_seconds() - t_drain > 30) {
            fprintf(stderr, "engine-bench: %" PRIu64 " messages did not "
                    "complete in 30 s\n", run.outstanding);
            return false;
        }
        if (any) {
            idle = 0;
            continue;
        }
        if (eb_virtual_clock) {
            int64_t t = next_deadline(devs);

            if (t < 0) {
                fprintf(stderr, "engine-bench: stalled with %" PRIu64
                        " messages outstanding\n", run.outstanding);
                return false;
            }
            eb_vclock = MAX(eb_vclock, t);
        } else if (++idle > 2000000000ULL) {
            return false;
        }
    }
    run.t_end = wall_seconds() * 1e9;
    return true;
}

/*
 * Set-up b
 */

typedef struct EbSideReport {
    double cpu_s;
    double dev_s, sys_s, drv_s;
    uint64_t tx_frames, rx_frames, syscalls, wakeups, eagain, held_dropped;
    uint64_t errors, completions;
    uint64_t rx_dropped, retrans;
} EbSideReport;

static uint64_t core_retrans(EbDev *d);

static void side_report(EbDev *d, double cpu_s, EbSideReport *r)
{
    double ns = eb_tsc_ns() / 1e9;

    memset(r, 0, sizeof(*r));
    r->cpu_s = cpu_s;
    r->dev_s = eb_acct[EB_ACCT_DEV0 + d->idx] * ns;
    r->sys_s = eb_acct[EB_ACCT_SYS0 + d->idx] * ns;
    r->drv_s = eb_acct[EB_ACCT_DRV0 + d->idx] * ns;
    r->tx_frames = d->tx_frames;
    r->rx_frames = d->rx_frames;
    r->syscalls = d->syscalls;
    r->wakeups = d->wakeups;
    r->eagain = d->eagain;
    r->held_dropped = d->hold.dropped;
    r->errors = d->errors;
    r->completions = d->completions;
    r->rx_dropped = d->core.stat_rx_dropped;
    r->retrans = core_retrans(d);
}

static int make_socket(EbWireType w, const char *path,
                       struct sockaddr_storage *sa, socklen_t *len)
{
    int fd = socket(w == EB_WIRE_UDP ? AF_INET : AF_UNIX,
                    SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

    if (fd < 0) {
        perror("engine-bench: socket");
        exit(1);
    }
    memset(sa, 0, sizeof(*sa));
    if (w == EB_WIRE_UDP) {
        struct sockaddr_in *in = (struct sockaddr_in *)sa;

        in->sin_family = AF_INET;
        in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        *len = sizeof(*in);
    } else {
        struct sockaddr_un *un = (struct sockaddr_un *)sa;

        un->sun_family = AF_UNIX;
        snprintf(un->sun_path, sizeof(un->sun_path), "%s", path);
        unlink(path);
        *len = sizeof(*un);
    }
    if (bind(fd, (struct sockaddr *)sa, *len) < 0 ||
        getsockname(fd, (struct sockaddr *)sa, len) < 0) {
        perror("engine-bench: bind");
        exit(1);
    }
    if (opt.rcvbuf > 0 &&
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &opt.rcvbuf,
                   sizeof(opt.rcvbuf)) < 0) {
        perror("engine-bench: SO_RCVBUF");
    }
    if (opt.sndbuf > 0 &&
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &opt.sndbuf,
                   sizeof(opt.sndbuf)) < 0) {
        perror("engine-bench: SO_SNDBUF");
    }
    return fd;
}

/*
 * One side's loop, as QEMU's main loop: ppoll() on the socket (and the
 * control pipe), with no timeout while the bottom half is pending or the
 * driver has work; the socket's frames, the bottom half, the timer, then
 * the driver (which stands in for the vCPU)
 */
static bool loop_socket(EbDev *d, EbDev *peer, bool requester, int ctl_fd)
{
    uint8_t *buf = g_malloc((size_t)MAX(1, opt.rx_batch) * EB_FRAME_MAX);
    double t0 = wall_seconds(), t_drain = 0;
    bool stop = false, ok = true;

    if (requester) {
        start_posting(d);
    }
    while (!stop) {
        struct pollfd pfd[2] = {
            { .fd = d->fd, .events = 0 },
            { .fd = ctl_fd, .events = POLLIN },
        };
        bool busy = d->bh_pending || d->nrefill;
        int64_t timeout_ns = busy ? 0 : 10000000;
        struct timespec ts;
        EbAcct prev;
        int n;

        /* as net/dgram.c: read only while the device can take frames */
        if (qhca_core_can_receive(&d->core)) {
            pfd[0].events |= POLLIN;
        }
        if (d->want_pollout) {
            pfd[0].events |= POLLOUT;
        }
        if (!busy && d->timer_deadline >= 0) {
            timeout_ns = MIN(timeout_ns,
                             MAX(0, d->timer_deadline - eb_now_ns()));
        }
        ts.tv_sec = timeout_ns / 1000000000;
        ts.tv_nsec = timeout_ns % 1000000000;
        prev = eb_switch(EB_ACCT_SYS0 + d->idx);
        d->syscalls++;
        n = ppoll(pfd, 2, &ts, NULL);
        eb_switch(prev);
        d->wakeups++;
        if (n > 0 && (pfd[0].revents & POLLIN)) {
            eb_sock_rx(d, opt.rx_batch, buf);
        }
        if (n > 0 && (pfd[0].revents & POLLOUT)) {
            eb_hold_flush(d);
        }
        if (n > 0 && (pfd[1].revents & (POLLIN | POLLHUP))) {
            stop = true;        /* the requester is done */
        }
        if (d->bh_pending) {
            eb_dev_run(d);
        }
        if (d->timer_deadline >= 0 && eb_now_ns() >= d->timer_deadline) {
            eb_dev_timer(d);
        }
        if (requester || opt.op == EB_OP_SEND) {
            drv_turn(d, peer, requester);
        }
        if (!requester) {
            continue;
        }
        if (run.posting && time_up(t0)) {
            run.posting = false;
            t_drain = wall_seconds();
        }
        if (!run.posting && !run.outstanding) {
            break;
        }
        if (!run.posting && wall_seconds() - t_drain > 30) {
            fprintf(stderr, "engine-bench: %" PRIu64 " messages did not "
                    "complete in 30 s\n", run.outstanding);
            ok = false;
            break;
        }
    }
    run.t_end = wall_seconds() * 1e9;
    g_free(buf);
    return ok;
}

static uint64_t core_retrans(EbDev *d)
{
    return d->core.stat_retransmits;
}

static void print_result(const EbDev *a, const EbSideReport *ra,
                         const EbSideReport *rb, double cpu_a, double cpu_b,
                         bool ok)
{
    double secs = (run.t_end - run.t_start) / 1e9;
    uint64_t msgs = a->completions;
    double bytes = (double)msgs * opt.size;
    uint64_t pkts_per_msg = MAX(1, DIV_ROUND_UP(opt.size, 4096));
    uint64_t pkts = msgs * pkts_per_msg;

    printf("setup=%c wire=%s op=%s size=%u qps=%u depth=%u window_kib=%u "
           "rx_batch=%u tx_batch=%u rcvbuf=%d sndbuf=%d crc=%s seconds=%.6f "
           "messages=%"
           PRIu64
           " bytes=%.0f GBps=%.4f msgs_per_s=%.0f data_packets=%" PRIu64
           " ns_per_packet=%.1f",
           opt.setup, wire_names[opt.wire], op_names[opt.op], opt.size,
           opt.qps, opt.depth, opt.window_kib, opt.rx_batch, opt.tx_batch,
           opt.rcvbuf, opt.sndbuf, crc_names[qhca_roce_crc32_level()], secs,
           msgs, bytes,
           secs > 0 ? bytes / secs / 1e9 : 0,
           secs > 0 ? msgs / secs : 0, pkts,
           pkts ? secs * 1e9 / pkts : 0);
    printf(" a_cpu_s=%.4f a_dev_s=%.4f a_sys_s=%.4f a_drv_s=%.4f "
           "a_GBps_per_core=%.4f a_ns_per_packet=%.1f a_tx=%" PRIu64
           " a_rx=%" PRIu64 " a_syscalls=%" PRIu64 " a_wakeups=%" PRIu64
           " a_eagain=%" PRIu64 " a_rx_dropped=%" PRIu64 " a_retrans=%"
           PRIu64,
           cpu_a, ra->dev_s, ra->sys_s, ra->drv_s,
           cpu_a > 0 ? bytes / cpu_a / 1e9 : 0,
           pkts ? cpu_a * 1e9 / pkts : 0, ra->tx_frames, ra->rx_frames,
           ra->syscalls, ra->wakeups, ra->eagain, ra->rx_dropped,
           ra->retrans);
    printf(" b_cpu_s=%.4f b_dev_s=%.4f b_sys_s=%.4f b_drv_s=%.4f "
           "b_GBps_per_core=%.4f b_ns_per_packet=%.1f b_tx=%" PRIu64
           " b_rx=%" PRIu64 " b_syscalls=%" PRIu64 " b_wakeups=%" PRIu64
           " b_eagain=%" PRIu64 " b_rx_dropped=%" PRIu64 " b_retrans=%"
           PRIu64,
           cpu_b, rb->dev_s, rb->sys_s, rb->drv_s,
           cpu_b > 0 ? bytes / cpu_b / 1e9 : 0,
           pkts ? cpu_b * 1e9 / pkts : 0, rb->tx_frames, rb->rx_frames,
           rb->syscalls, rb->wakeups, rb->eagain, rb->rx_dropped,
           rb->retrans);
    printf(" errors=%" PRIu64 " ok=%d\n", ra->errors + rb->errors, ok);
    fflush(stdout);
}

static void usage(FILE *f)
{
    fprintf(f,
        "usage: qhca-engine-bench [--setup a|b] [--wire udp|unix]\n"
        "         [--op write|read|send] [--size BYTES] [--qps N]\n"
        "         [--depth N] [--seconds S] [--iters N] [--window-kib N]\n"
        "         [--rx-batch N] [--tx-batch N] [--rcvbuf BYTES]\n"
        "         [--sndbuf BYTES]\n"
        "         [--virtual-clock] [--cg-side 0|1] [--cpus C0,C1]\n"
        "         [--crc table|clmul|avx2|avx512]\n"
        "       qhca-engine-bench --memcpy [--size BYTES] [--seconds S]\n"
        "The device logic with no guest: see docs/performance.md,\n"
        "\"The engine bench\".  One line of key=value results on stdout.\n");
}

static bool parse_uint(const char *s, uint64_t max, uint64_t *out)
{
    char *end;
    unsigned long long v;

    errno = 0;
    v = strtoull(s, &end, 0);
    if (errno || end == s || *end || v > max || *s == '-') {
        return false;
    }
    *out = v;
    return true;
}

static void parse_args(int argc, char **argv)
{
    static const struct option lo[] = {
        { "setup", required_argument, NULL, 's' },
        { "wire", required_argument, NULL, 'w' },
        { "op", required_argument, NULL, 'o' },
        { "size", required_argument, NULL, 'z' },
        { "qps", required_argument, NULL, 'q' },
        { "depth", required_argument, NULL, 'd' },
        { "seconds", required_argument, NULL, 't' },
        { "iters", required_argument, NULL, 'n' },
        { "window-kib", required_argument, NULL, 'W' },
        { "rx-batch", required_argument, NULL, 'R' },
        { "tx-batch", required_argument, NULL, 'T' },
        { "rcvbuf", required_argument, NULL, 'B' },
        { "sndbuf", required_argument, NULL, 'S' },
        { "virtual-clock", no_argument, NULL, 'V' },
        { "cg-side", required_argument, NULL, 'C' },
        { "cpus", required_argument, NULL, 'P' },
        { "crc", required_argument, NULL, 'K' },
        { "memcpy", no_argument, NULL, 'M' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    uint64_t v;
    int c;

    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        bool bad = false;

        switch (c) {
        case 's':
            bad = strcmp(optarg, "a") && strcmp(optarg, "b");
            opt.setup = optarg[0];
            break;
        case 'w':
            if (!strcmp(optarg, "udp")) {
                opt.wire = EB_WIRE_UDP;
            } else if (!strcmp(optarg, "unix")) {
                opt.wire = EB_WIRE_UNIX;
            } else {
                bad = true;
            }
            break;
        case 'o':
            if (!strcmp(optarg, "write")) {
                opt.op = EB_OP_WRITE;
            } else if (!strcmp(optarg, "read")) {
                opt.op = EB_OP_READ;
            } else if (!strcmp(optarg, "send")) {
                opt.op = EB_OP_SEND;
            } else {
                bad = true;
            }
            break;
        case 'z':
            bad = !parse_uint(optarg, EB_MAX_MSG, &v) || !v;
            opt.size = v;
            break;
        case 'q':
            bad = !parse_uint(optarg, EB_MAX_QPS, &v) || !v;
            opt.qps = v;
            break;
        case 'd':
            bad = !parse_uint(optarg, (1u << EB_SQ_LOG) - 1, &v) || !v;
            opt.depth = v;
            break;
        case 't': {
            char *end;

            opt.seconds = strtod(optarg, &end);
            bad = *end || !(opt.seconds > 0 && opt.seconds <= 3600);
            break;
        }
        case 'n':
            bad = !parse_uint(optarg, UINT64_MAX, &v) || !v;
            opt.iters = v;
            break;
        case 'W':
            bad = !parse_uint(optarg, QHCA_WINDOW_LIMIT / 1024, &v) ||
                  v * 1024 < QHCA_WINDOW_MIN;
            opt.window_kib = v;
            break;
        case 'R':
            bad = !parse_uint(optarg, 256, &v) || !v;
            opt.rx_batch = v;
            break;
        case 'T':
            bad = !parse_uint(optarg, 256, &v) || !v;
            opt.tx_batch = v;
            break;
        case 'B':
            bad = !parse_uint(optarg, INT32_MAX, &v);
            opt.rcvbuf = v;
            break;
        case 'S':
            bad = !parse_uint(optarg, INT32_MAX, &v);
            opt.sndbuf = v;
            break;
        case 'V':
            eb_virtual_clock = true;
            break;
        case 'C':
            bad = !parse_uint(optarg, 1, &v);
            opt.cg_side = v;
            break;
        case 'P':
            bad = sscanf(optarg, "%d,%d", &opt.cpu[0], &opt.cpu[1]) != 2 ||
                  opt.cpu[0] < 0 || opt.cpu[1] < 0;
            break;
        case 'K':
            bad = true;
            for (v = 0; v < QHCA_ROCE_CRC32_LEVELS; v++) {
                if (!strcmp(optarg, crc_names[v])) {
                    opt.crc = v;
                    bad = false;
                }
            }
            break;
        case 'M':
            opt.memcpy_only = true;
            break;
        case 'h':
            usage(stdout);
            exit(0);
        default:
            bad = true;
            break;
        }
        if (bad) {
            usage(stderr);
            exit(2);
        }
    }
    if (optind != argc) {
        usage(stderr);
        exit(2);
    }
    if (opt.setup == 'a' && opt.wire != EB_WIRE_INPROC) {
        fprintf(stderr, "engine-bench: --wire is for --setup b\n");
        exit(2);
    }
    if (opt.setup == 'b' && opt.wire == EB_WIRE_INPROC) {
        opt.wire = EB_WIRE_UDP;
    }
    if (opt.setup == 'b' && (eb_virtual_clock || opt.cg_side >= 0)) {
        fprintf(stderr, "engine-bench: --virtual-clock and --cg-side are "
                "for --setup a\n");
        exit(2);
    }
    if (!opt.depth) {
        opt.depth = MAX(1, MIN(32u, EB_MAX_OUTSTANDING / opt.qps));
    }
    if ((uint64_t)opt.depth * opt.qps > EB_MAX_OUTSTANDING) {
        fprintf(stderr, "engine-bench: --depth x --qps is over %u\n",
                EB_MAX_OUTSTANDING);
        exit(2);
    }
    if (opt.size > EB_MR_LEN / 2) {
        fprintf(stderr, "engine-bench: --size is over %u\n", EB_MR_LEN / 2);
        exit(2);
    }
}

/* memcpy of --size bytes, cache-warm source and target, for --seconds */
static int bench_memcpy(void)
{
    size_t len = opt.size;
    uint8_t *src = g_malloc(len), *dst = g_malloc(len);
    uint64_t n = 0;
    double t0, t;

    memset(src, 0x5a, len);
    memset(dst, 0, len);
    t0 = wall_seconds();
    do {
        unsigned k;

        for (k = 0; k < 64; k++) {
            memcpy(dst, src, len);
            __asm__ volatile("" : : "r"(dst) : "memory");
        }
        n += 64;
        t = wall_seconds();
    } while (t - t0 < opt.seconds);
    printf("memcpy size=%zu seconds=%.6f copies=%" PRIu64 " GBps=%.4f\n",
           len, t - t0, n, (double)n * len / (t - t0) / 1e9);
    g_free(src);
    g_free(dst);
    return 0;
}

static EbDev devs[2];

int main(int argc, char **argv)
{
    EbSideReport ra, rb;
    double cpu0;
    bool ok;
    unsigned i;

    parse_args(argc, argv);
    if (opt.crc >= 0 && qhca_roce_crc32_set_level(opt.crc) != opt.crc) {
        fprintf(stderr, "engine-bench: --crc %s: this host has at most %s\n",
                crc_names[opt.crc], crc_names[qhca_roce_crc32_level()]);
        exit(2);
    }
    if (opt.memcpy_only) {
        return bench_memcpy();
    }
    signal(SIGPIPE, SIG_IGN);
    eb_tsc_calibrate();
    for (i = 0; i < 2; i++) {
        eb_dev_init(&devs[i], i);
        devs[i].core.window_bytes = opt.window_kib * 1024;
        devs[i].wire = EB_WIRE_INPROC;
        devs[i].peer = &devs[!i];
    }
    for (i = 0; i < 2; i++) {
        if (!eb_drv_setup(&devs[i], opt.qps, opt.op == EB_OP_SEND)) {
            fprintf(stderr, "engine-bench: device %c: set-up failed\n",
                    'A' + i);
            return 1;
        }
    }
    if (!eb_drv_connect(&devs[0], &devs[1], 5)) {
        fprintf(stderr, "engine-bench: connecting the QPs failed\n");
        return 1;
    }
    if (opt.op == EB_OP_SEND) {
        fill_rqs(&devs[1]);
    }
    memset(devs[0].ram + EB_DATA_BASE, 0xa5, EB_MR_LEN / 2);
    memset(devs[1].ram + EB_DATA_BASE, 0x5a, EB_MR_LEN / 2);
    while (eb_step_inproc(devs, 2)) {
    }

    if (opt.setup == 'a') {
        pin(opt.cpu[0]);
        eb_acct_reset();
        eb_cg_measure(opt.cg_side >= 0 ? EB_ACCT_DEV0 + opt.cg_side : -1);
        cpu0 = cpu_seconds();
        ok = loop_inproc(devs);
        cpu0 = cpu_seconds() - cpu0;
        eb_cg_measure(-1);
        eb_switch(EB_ACCT_LOOP);
        side_report(&devs[0], 0, &ra);
        side_report(&devs[1], 0, &rb);
        ok = ok && !ra.errors && !rb.errors;
        /* one core for both: each side's share is its devices' time */
        print_result(&devs[0], &ra, &rb, ra.dev_s, rb.dev_s, ok);
        return ok ? 0 : 1;
    } else {
        char dir[] = "/tmp/qhca-eb-XXXXXX";
        char path[2][sizeof(dir) + 8];
        int ctl[2], rep[2], go[2];
        pid_t pid;
        char c = 0;
        int st;

        if (opt.wire == EB_WIRE_UNIX && !mkdtemp(dir)) {
            perror("engine-bench: mkdtemp");
            return 1;
        }
        for (i = 0; i < 2; i++) {
            snprintf(path[i], sizeof(path[i]), "%s/%c", dir, 'a' + i);
            devs[i].wire = opt.wire;
            devs[i].fd = make_socket(opt.wire, path[i], &devs[i].peer_addr,
                                     &devs[i].peer_addr_len);
        }
        /* each sends to the other's address */
        {
            struct sockaddr_storage t = devs[0].peer_addr;
            socklen_t tl = devs[0].peer_addr_len;

            devs[0].peer_addr = devs[1].peer_addr;
            devs[0].peer_addr_len = devs[1].peer_addr_len;
            devs[1].peer_addr = t;
            devs[1].peer_addr_len = tl;
        }
        for (i = 0; i < 2; i++) {
            eb_sock_setup_tx_batch(&devs[i], opt.tx_batch);
        }
        if (pipe(ctl) < 0 || pipe(rep) < 0 || pipe(go) < 0) {
            perror("engine-bench: pipe");
            return 1;
        }
        pid = fork();
        if (pid < 0) {
            perror("engine-bench: fork");
            return 1;
        }
        if (pid == 0) {
            EbDev *b = &devs[1];

            close(devs[0].fd);
            close(ctl[1]);
            close(rep[0]);
            close(go[0]);
            pin(opt.cpu[1]);
            if (write(go[1], &c, 1) != 1) {
                _exit(1);
            }
            eb_acct_reset();
            cpu0 = cpu_seconds();
            ok = loop_socket(b, &devs[0], false, ctl[0]);
            cpu0 = cpu_seconds() - cpu0;
            eb_switch(EB_ACCT_LOOP);
            side_report(b, cpu0, &rb);
            if (write(rep[1], &rb, sizeof(rb)) != sizeof(rb)) {
                _exit(1);
            }
            _exit(ok ? 0 : 1);
        }
        close(devs[1].fd);
        close(ctl[0]);
        close(rep[1]);
        close(go[1]);
        pin(opt.cpu[0]);
        if (read(go[0], &c, 1) != 1) {
            fprintf(stderr, "engine-bench: the responder did not start\n");
            return 1;
        }
        eb_acct_reset();
        cpu0 = cpu_seconds();
        ok = loop_socket(&devs[0], &devs[1], true, -1);
        cpu0 = cpu_seconds() - cpu0;
        eb_switch(EB_ACCT_LOOP);
        side_report(&devs[0], cpu0, &ra);
        close(ctl[1]);          /* the responder stops */
        if (read(rep[0], &rb, sizeof(rb)) != sizeof(rb)) {
            fprintf(stderr, "engine-bench: no report from the responder\n");
            memset(&rb, 0, sizeof(rb));
            ok = false;
        }
        if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) ||
            WEXITSTATUS(st)) {
            ok = false;
        }
        if (opt.wire == EB_WIRE_UNIX) {
            unlink(path[0]);
            unlink(path[1]);
            rmdir(dir);
        }
        ok = ok && !ra.errors && !rb.errors;
        /* each side's CPU: its process's, less the driver's (the guest) */
        print_result(&devs[0], &ra, &rb, ra.cpu_s - ra.drv_s,
                     rb.cpu_s - rb.drv_s, ok);
        return ok ? 0 : 1;
    }
}
