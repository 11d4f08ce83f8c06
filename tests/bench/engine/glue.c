/*
 * The engine bench's stand-in for hw/qhca.c: QhcaCoreOps over a flat RAM,
 * a bottom-half flag, one timer, and the wire (in-process or a datagram
 * socket), with time charged to accounts by TSC.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "eb.h"
#include <poll.h>
#include <time.h>
#include <x86intrin.h>
#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define EB_HAVE_CALLGRIND 1
#endif
#endif

static const uint8_t eb_macs[2][6] = {
    { 0x52, 0x54, 0x00, 0x00, 0xeb, 0x0a },
    { 0x52, 0x54, 0x00, 0x00, 0xeb, 0x0b },
};
static const uint32_t eb_ips[2] = { 0xc6120001, 0xc6120002 };

/*
 * Clock
 */

bool eb_virtual_clock;
int64_t eb_vclock = 1000000000;

int64_t eb_now_ns(void)
{
    struct timespec ts;

    if (eb_virtual_clock) {
        return eb_vclock;
    }
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/*
 * Accounts
 */

uint64_t eb_acct[EB_ACCT_COUNT];
static EbAcct cur_acct = EB_ACCT_LOOP;
static uint64_t last_tsc;
static double tsc_ns = 1.0;
static int cg_acct = -1;

double eb_tsc_ns(void)
{
    return tsc_ns;
}

void eb_tsc_calibrate(void)
{
    int64_t t0 = eb_now_ns(), t1;
    uint64_t c0 = __rdtsc(), c1;
    bool v = eb_virtual_clock;

    eb_virtual_clock = false;
    t0 = eb_now_ns();
    c0 = __rdtsc();
    do {
        t1 = eb_now_ns();
    } while (t1 - t0 < 50000000);
    c1 = __rdtsc();
    eb_virtual_clock = v;
    tsc_ns = (double)(t1 - t0) / (double)(c1 - c0);
}

void eb_acct_reset(void)
{
    memset(eb_acct, 0, sizeof(eb_acct));
    last_tsc = __rdtsc();
}

void eb_cg_measure(int a)
{
    cg_acct = a;
}

EbAcct eb_switch(EbAcct to)
{
    uint64_t now = __rdtsc();
    EbAcct prev = cur_acct;

    eb_acct[prev] += now - last_tsc;
    last_tsc = now;
    cur_acct = to;
#ifdef EB_HAVE_CALLGRIND
    if (cg_acct >= 0 && ((int)prev == cg_acct) != ((int)to == cg_acct)) {
        CALLGRIND_TOGGLE_COLLECT;
    }
#endif
    return prev;
}

/*
 * QhcaCoreOps
 */

static bool ram_ok(uint64_t addr, uint64_t len)
{
    return addr <= EB_RAM_SIZE && len <= EB_RAM_SIZE - addr;
}

static bool ops_dma_read(void *opaque, uint64_t addr, void *buf, uint64_t len)
{
    EbDev *d = opaque;

    if (!ram_ok(addr, len)) {
        return false;
    }
    memcpy(buf, d->ram + addr, len);
    return true;
}

static bool ops_dma_write(void *opaque, uint64_t addr, const void *buf,
                          uint64_t len)
{
    EbDev *d = opaque;

    if (!ram_ok(addr, len)) {
        return false;
    }
    memcpy(d->ram + addr, buf, len);
    return true;
}

static void ops_irq(void *opaque, unsigned vector)
{
}

static bool hold_push(EbHold *h, const uint8_t *frame, size_t len)
{
    EbFrame *f;

    if (h->count == EB_HOLD_MAX) {
        h->dropped++;
        return false;
    }
    f = &h->f[(h->head + h->count) % EB_HOLD_MAX];
    f->data = g_malloc(len);
    memcpy(f->data, frame, len);
    f->len = len;
    h->count++;
    return true;
}

static void hold_pop(EbHold *h)
{
    g_free(h->f[h->head].data);
    h->head = (h->head + 1) % EB_HOLD_MAX;
    h->count--;
}

/* Send one frame on the socket now; false if it would block */
static bool sock_send(EbDev *d, const uint8_t *frame, size_t len)
{
    EbAcct prev = eb_switch(EB_ACCT_SYS0 + d->idx);
    ssize_t n;

    d->syscalls++;
    n = sendto(d->fd, frame, len, MSG_DONTWAIT,
               (struct sockaddr *)&d->peer_addr, d->peer_addr_len);
    eb_switch(prev);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK ||
                  errno == ENOBUFS)) {
        d->eagain++;
        return false;
    }
    return true;        /* sent, or lost as QEMU loses it */
}

void eb_sock_setup_tx_batch(EbDev *d, unsigned batch)
{
    unsigned i;

    d->tx_batch = batch;
    if (batch <= 1) {
        return;
    }
    d->tx_msgs = g_new0(struct mmsghdr, batch);
    d->tx_iov = g_new0(struct iovec, batch);
    d->tx_bufs = g_malloc(batch * (size_t)QHCA_TX_FRAME_MAX);
    for (i = 0; i < batch; i++) {
        d->tx_iov[i].iov_base = d->tx_bufs + i * (size_t)QHCA_TX_FRAME_MAX;
        d->tx_msgs[i].msg_hdr.msg_iov = &d->tx_iov[i];
        d->tx_msgs[i].msg_hdr.msg_iovlen = 1;
        d->tx_msgs[i].msg_hdr.msg_name = &d->peer_addr;
        d->tx_msgs[i].msg_hdr.msg_namelen = d->peer_addr_len;
    }
}

/* The frames batched by a run of the device: one sendmmsg() */
void eb_sock_tx_flush(EbDev *d)
{
    unsigned done = 0;

    while (done < d->tx_pending) {
        EbAcct prev = eb_switch(EB_ACCT_SYS0 + d->idx);
        int n;

        d->syscalls++;
        n = sendmmsg(d->fd, d->tx_msgs + done, d->tx_pending - done,
                     MSG_DONTWAIT);
        eb_switch(prev);
        if (n <= 0) {
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK ||
                          errno == ENOBUFS)) {
                d->eagain++;
                break;
            }
            done++;     /* lost */
            continue;
        }
        done += n;
    }
    for (; done < d->tx_pending; done++) {
        hold_push(&d->hold, d->tx_iov[done].iov_base,
                  d->tx_iov[done].iov_len);
        d->want_pollout = true;
    }
    d->tx_pending = 0;
}

static void ops_tx(void *opaque, const uint8_t *frame, size_t len)
{
    EbDev *d = opaque;

    d->tx_frames++;
    d->tx_bytes += len;
    /* as hw/qhca.c: a frame for the device itself is looped inside it */
    qhca_core_loopback(&d->core, frame, len);
    if (d->hold.count) {
        hold_push(&d->hold, frame, len);
        return;
    }
    if (d->wire == EB_WIRE_INPROC) {
        EbDev *p = d->peer;

        if (qhca_core_can_receive(&p->core)) {
            eb_dev_receive(p, frame, len);
        } else {
            hold_push(&d->hold, frame, len);
        }
        return;
    }
    if (d->tx_batch > 1) {
        unsigned i = d->tx_pending++;

        memcpy(d->tx_iov[i].iov_base, frame, len);
        d->tx_iov[i].iov_len = len;
        if (d->tx_pending == d->tx_batch) {
            eb_sock_tx_flush(d);
        }
        return;
    }
    if (!sock_send(d, frame, len)) {
        hold_push(&d->hold, frame, len);
        d->want_pollout = true;
    }
}

static bool ops_link_up(void *opaque)
{
    return true;
}

static void ops_schedule(void *opaque)
{
    EbDev *d = opaque;

    d->bh_pending = true;
}

static int64_t ops_now_ns(void *opaque)
{
    return eb_now_ns();
}

static void ops_timer_mod(void *opaque, int64_t deadline_ns)
{
    EbDev *d = opaque;

    d->timer_deadline = deadline_ns;
}

static void ops_rx_resume(void *opaque)
{
    EbDev *d = opaque;

    d->rx_resumed = true;
}

static const QhcaCoreOps eb_core_ops = {
    .dma_read = ops_dma_read,
    .dma_write = ops_dma_write,
    .irq = ops_irq,
    .tx = ops_tx,
    .link_up = ops_link_up,
    .schedule = ops_schedule,
    .now_ns = ops_now_ns,
    .timer_mod = ops_timer_mod,
    .rx_resume = ops_rx_resume,
};

void eb_dev_init(EbDev *d, int idx)
{
    memset(d, 0, sizeof(*d));
    d->idx = idx;
    memcpy(d->mac, eb_macs[idx], 6);
    d->ip = eb_ips[idx];
    /* calloc: the kernel's zero pages until touched */
    d->ram = g_malloc0(EB_RAM_SIZE);
    d->ring_next = EB_RING_BASE;
    d->timer_deadline = -1;
    d->fd = -1;
    qhca_core_init(&d->core, &eb_core_ops, d, d->mac);
}

/*
 * Entry points, each charged to the device's account
 */

void eb_dev_run(EbDev *d)
{
    EbAcct prev = eb_switch(EB_ACCT_DEV0 + d->idx);

    d->bh_pending = false;
    qhca_core_run(&d->core);
    if (d->tx_pending) {
        eb_sock_tx_flush(d);
    }
    eb_switch(prev);
}

void eb_dev_timer(EbDev *d)
{
    EbAcct prev = eb_switch(EB_ACCT_DEV0 + d->idx);

    d->timer_deadline = -1;
    qhca_core_timer(&d->core);
    eb_switch(prev);
}

void eb_dev_db(EbDev *d, uint32_t page, uint32_t off, uint32_t val)
{
    EbAcct prev = eb_switch(EB_ACCT_DEV0 + d->idx);

    qhca_core_db_write(&d->core, page, off, val);
    eb_switch(prev);
}

void eb_dev_receive(EbDev *d, const uint8_t *frame, size_t len)
{
    EbAcct prev = eb_switch(EB_ACCT_DEV0 + d->idx);

    d->rx_frames++;
    d->rx_bytes += len;
    qhca_core_receive(&d->core, frame, len);
    eb_switch(prev);
}

bool eb_hold_flush(EbDev *d)
{
    bool any = false;

    while (d->hold.count) {
        EbFrame *f = &d->hold.f[d->hold.head];

        if (d->wire == EB_WIRE_INPROC) {
            if (!qhca_core_can_receive(&d->peer->core)) {
                break;
            }
            eb_dev_receive(d->peer, f->data, f->len);
        } else if (!sock_send(d, f->data, f->len)) {
            d->want_pollout = true;
            break;
        }
        hold_pop(&d->hold);
        any = true;
    }
    if (!d->hold.count) {
        d->want_pollout = false;
    }
    return any;
}

unsigned eb_sock_rx(EbDev *d, unsigned batch, uint8_t *buf)
{
    static struct mmsghdr *msgs;
    static struct iovec *iov;
    static unsigned nmsgs;
    EbAcct prev;
    unsigned i, got = 0;
    int n;

    if (batch <= 1) {
        ssize_t len;

        prev = eb_switch(EB_ACCT_SYS0 + d->idx);
        d->syscalls++;
        len = recv(d->fd, buf, EB_FRAME_MAX, MSG_DONTWAIT);
        eb_switch(prev);
        if (len > 0) {
            eb_dev_receive(d, buf, len);
            return 1;
        }
        return 0;
    }
    if (nmsgs < batch) {
        g_free(msgs);
        g_free(iov);
        msgs = g_new0(struct mmsghdr, batch);
        iov = g_new0(struct iovec, batch);
        nmsgs = batch;
    }
    for (i = 0; i < batch; i++) {
        iov[i].iov_base = buf + (size_t)i * EB_FRAME_MAX;
        iov[i].iov_len = EB_FRAME_MAX;
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    /* as many as the device can queue now (the net layer's can_receive) */
    prev = eb_switch(EB_ACCT_SYS0 + d->idx);
    d->syscalls++;
    n = recvmmsg(d->fd, msgs, batch, MSG_DONTWAIT, NULL);
    eb_switch(prev);
    for (i = 0; n > 0 && i < (unsigned)n; i++) {
        if (msgs[i].msg_len) {
            eb_dev_receive(d, iov[i].iov_base, msgs[i].msg_len);
            got++;
        }
    }
    return got;
}

bool eb_step_inproc(EbDev *devs, unsigned n)
{
    bool any = false;
    unsigned i;

    for (i = 0; i < n; i++) {
        EbDev *d = &devs[i];

        if (d->bh_pending) {
            eb_dev_run(d);
            any = true;
        }
        if (d->hold.count && eb_hold_flush(d)) {
            any = true;
        }
        if (d->timer_deadline >= 0 && eb_now_ns() >= d->timer_deadline) {
            eb_dev_timer(d);
            any = true;
        }
    }
    return any;
}
