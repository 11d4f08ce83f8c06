/*
 * Two qhca devices in two QEMUs, and migrating either QEMU while the
 * devices talk (qhca-mig.h)
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "libqtest.h"
#include "hw/pci/pci_regs.h"
#include "qobject/qdict.h"
#include "qhca-mig.h"

/* The pair the devices' waits relay for (their QQhca.idle) */
static MigPair *mig_cur;

/* A frame is at most a 4096-byte MTU's packet and its headers */
#define MIG_FRAME_MAX   9216
/* Frames the relay holds for a QEMU that does not read them */
#define MIG_QUEUE_MAX   100000

/* Live migrations and loads wait this long (steps of the relay) */
#define MIG_WAIT_STEPS  200000

static void mig_idle_a(void)
{
    mig_pump(mig_cur);
    if (mig_cur->n[1].qts) {
        qtest_clock_step(mig_cur->n[1].qts, MIG_STEP_NS);
    }
}

static void mig_idle_b(void)
{
    mig_pump(mig_cur);
    if (mig_cur->n[0].qts) {
        qtest_clock_step(mig_cur->n[0].qts, MIG_STEP_NS);
    }
}

/*
 * The machine of a node; the same on every QEMU it migrates to.  Device
 * ids qa and qb, netdevs na and nb, MACs 52:54:00:00:00:0a and ...:0b as
 * the two-device harness's mac_a and mac_b.
 */
static char *mig_args(const MigNode *n, int fd)
{
    return g_strdup_printf("-machine q35 -nodefaults -m %dM "
                           "-netdev socket,id=n%c,fd=%d "
                           "-device qhca,id=q%c,addr=04.0,netdev=n%c,"
                           "mac=52:54:00:00:00:0%c",
                           MIG_RAM_MB, n->name, fd, n->name, n->name,
                           n->name);
}

static int mig_socketpair(int *fd)
{
    int sv[2];

    /* the test's end is neither blocking nor inherited by the QEMUs */
    g_assert_cmpint(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv), ==, 0);
    g_assert_cmpint(fcntl(sv[0], F_SETFL, O_NONBLOCK), ==, 0);
    g_assert_cmpint(fcntl(sv[0], F_SETFD, FD_CLOEXEC), ==, 0);
    *fd = sv[0];
    return sv[1];
}

static void mig_node_start(MigPair *p, int i)
{
    MigNode *n = &p->n[i];
    g_autofree char *args = NULL;
    int qemu_fd;

    n->name = i ? 'b' : 'a';
    n->mac = i ? mac_b : mac_a;
    qemu_fd = mig_socketpair(&n->fd);
    args = mig_args(n, qemu_fd);
    n->qts = qtest_init(args);
    close(qemu_fd);
    n->bus = qpci_new_pc(n->qts, NULL);
    pc_alloc_init(&n->alloc, n->qts, ALLOC_NO_FLAGS);
    qhca_init(&n->d, n->bus, QPCI_DEVFN(4, 0), &n->alloc);
    n->d.idle = i ? mig_idle_b : mig_idle_a;
    qhca_enable(&n->d);
}

void mig_pair_start(MigPair *p)
{
    memset(p, 0, sizeof(*p));
    g_queue_init(&p->q[0]);
    g_queue_init(&p->q[1]);
    p->mig = -1;
    mig_cur = p;
    mig_node_start(p, 0);
    mig_node_start(p, 1);
}

void mig_pair_stop(MigPair *p)
{
    int i;

    mig_cur = NULL;
    for (i = 0; i < 2; i++) {
        MigNode *n = &p->n[i];

        if (n->qts) {
            qhca_uninit(&n->d);
            qpci_free_pc(n->bus);
            qtest_quit(n->qts);
        }
        alloc_destroy(&n->alloc);
        close(n->fd);
        g_queue_clear_full(&p->q[i], (GDestroyNotify)g_bytes_unref);
    }
}

/* A frame for node @to, unless its link is cut (then it is lost) */
static void mig_queue(MigPair *p, int to, const uint8_t *buf, size_t len)
{
    if (p->cut && to == p->mig) {
        p->lost++;
        return;
    }
    g_queue_push_tail(&p->q[to], g_bytes_new(buf, len));
    g_assert_cmpuint(g_queue_get_length(&p->q[to]), <, MIG_QUEUE_MAX);
}

/*
 * Hand what waits for node @to to its QEMU, as far as its socket takes
 * (a node saved to a file has none: its link is cut until it is loaded)
 */
static void mig_flush(MigPair *p, int to)
{
    GBytes *f;

    if (!p->n[to].qts) {
        return;
    }
    while ((f = g_queue_peek_head(&p->q[to]))) {
        gsize len;
        const void *data = g_bytes_get_data(f, &len);
        ssize_t n = send(p->n[to].fd, data, len, MSG_DONTWAIT);

        if (n < 0) {
            g_assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
            return;
        }
        g_assert_cmpint(n, ==, len);
        g_bytes_unref(g_queue_pop_head(&p->q[to]));
        p->to[to]++;
    }
}

/*
 * Take in what node @i sent: for the other node, or lost if either's
 * link is cut.  While a node is migrated, every frame to or from it
 * spends the budget; the last one cuts its link.
 */
static void mig_take(MigPair *p, int i)
{
    uint8_t buf[MIG_FRAME_MAX];

    for (;;) {
        ssize_t n = recv(p->n[i].fd, buf, sizeof(buf),
                         MSG_DONTWAIT | MSG_TRUNC);

        if (n < 0) {
            g_assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
            return;
        }
        g_assert_cmpint(n, >, 0);
        g_assert_cmpint(n, <=, sizeof(buf));
        p->from[i]++;
        p->n[i].from_gen++;
        if (p->cut && i == p->mig) {
            p->lost++;
            continue;
        }
        mig_queue(p, !i, buf, n);
        if (p->mig >= 0 && p->budget > 0 && !--p->budget) {
            p->cut = true;
        }
    }
}

void mig_pump(MigPair *p)
{
    int i;

    for (i = 0; i < 2; i++) {
        mig_take(p, i);
    }
    for (i = 0; i < 2; i++) {
        mig_flush(p, i);
    }
}

/* Node @i is about to be migrated, the wire to carry @budget frames */
static void mig_begin(MigPair *p, int i, int budget)
{
    p->mig = i;
    p->budget = budget;
    p->cut = budget == 0;
}

void mig_step(MigPair *p)
{
    int i;

    mig_pump(p);
    for (i = 0; i < 2; i++) {
        if (p->n[i].qts) {
            qtest_clock_step(p->n[i].qts, MIG_STEP_NS);
        }
    }
}

bool mig_run_until_from(MigPair *p, int i, unsigned frames)
{
    unsigned k;

    for (k = 0; k < QHCA_QOS_STEPS && p->from[i] < frames; k++) {
        mig_step(p);
    }
    return p->from[i] >= frames;
}

QTestState *mig_spawn(MigPair *p, int i, const char *extra, int *fd)
{
    g_autofree char *args = NULL;
    QTestState *qts;
    int qemu_fd = mig_socketpair(fd);

    args = mig_args(&p->n[i], qemu_fd);
    qts = qtest_initf("%s -S -incoming defer %s", args, extra ? extra : "");
    close(qemu_fd);
    return qts;
}

char *mig_status(QTestState *qts)
{
    QDict *r = qtest_qmp_assert_success_ref(qts,
                                            "{ 'execute': 'query-migrate' }");
    char *s = g_strdup(qdict_haskey(r, "status") ?
                       qdict_get_str(r, "status") : "none");

    qobject_unref(r);
    return s;
}

static bool mig_status_is(QTestState *qts, const char *want)
{
    g_autofree char *s = mig_status(qts);

    /* a migration of a test never fails or is cancelled */
    g_assert_cmpstr(s, !=, "failed");
    g_assert_cmpstr(s, !=, "cancelled");
    return !strcmp(s, want);
}

/* A paused QEMU's clock, set as the source's was, and it runs */
static void mig_resume(QTestState *qts, int64_t clock)
{
    QDict *r;

    g_assert_cmpint(qtest_clock_set(qts, clock), ==, clock);
    r = qtest_qmp_assert_success_ref(qts, "{ 'execute': 'query-status' }");
    g_assert_cmpstr(qdict_get_str(r, "status"), ==, "paused");
    qobject_unref(r);
    qtest_qmp_assert_success(qts, "{ 'execute': 'cont' }");
}

/* BAR @bar of @dev as its configuration space has it (64-bit memory) */
static uint64_t mig_bar_addr(QPCIDevice *dev, int bar)
{
    uint32_t lo = qpci_config_readl(dev, PCI_BASE_ADDRESS_0 + 4 * bar);
    uint32_t hi = qpci_config_readl(dev, PCI_BASE_ADDRESS_0 + 4 * bar + 4);

    g_assert_cmphex(lo & (PCI_BASE_ADDRESS_SPACE |
                          PCI_BASE_ADDRESS_MEM_TYPE_MASK), ==,
                    PCI_BASE_ADDRESS_MEM_TYPE_64);
    return ((uint64_t)hi << 32) | (lo & PCI_BASE_ADDRESS_MEM_MASK);
}

/*
 * Node @i is now QEMU @qts, its netdev's other end @fd: the relay and the
 * test's handles move to it, and its link is whole again.  What the old
 * QEMU sent and the relay had not taken, what the relay held for it, and
 * what it had not sent yet are lost.  The device is not touched: it must
 * be as the driver left it, its BARs where the driver mapped them, memory
 * and bus mastering on.
 */
static void mig_adopt(MigPair *p, int i, QTestState *qts, int fd)
{
    MigNode *n = &p->n[i];
    uint16_t cmd;

    p->cut = true;
    mig_take(p, i);
    p->lost += g_queue_get_length(&p->q[i]);
    g_queue_clear_full(&p->q[i], (GDestroyNotify)g_bytes_unref);
    p->mig = -1;
    p->cut = false;
    close(n->fd);
    n->fd = fd;
    n->qts = qts;
    n->bus = qpci_new_pc(qts, NULL);
    n->d.qts = qts;
    n->d.dev.bus = n->bus;
    n->gen++;
    n->from_gen = 0;
    g_assert_cmphex(mig_bar_addr(&n->d.dev, QHCA_REG_BAR), ==,
                    n->d.reg.addr);
    g_assert_cmphex(mig_bar_addr(&n->d.dev, QHCA_DB_BAR), ==,
                    n->d.db.addr);
    cmd = qpci_config_readw(&n->d.dev, PCI_COMMAND);
    g_assert_cmphex(cmd & (PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER), ==,
                    PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);
}

/* The old QEMU of node @i, its migration completed, is told to quit */
static int64_t mig_drop_source(MigPair *p, int i)
{
    MigNode *n = &p->n[i];
    QDict *r;
    int64_t clock;

    r = qtest_qmp_assert_success_ref(n->qts, "{ 'execute': 'query-status' }");
    g_assert_cmpstr(qdict_get_str(r, "status"), ==, "postmigrate");
    qobject_unref(r);
    clock = qtest_clock_step(n->qts, 1);
    qpci_free_pc(n->bus);
    n->bus = NULL;
    qtest_quit(n->qts);
    n->qts = NULL;
    return clock;
}

static int64_t mig_downtime(QTestState *qts)
{
    QDict *r = qtest_qmp_assert_success_ref(qts,
                                            "{ 'execute': 'query-migrate' }");
    int64_t ms = qdict_haskey(r, "downtime") ?
                 qdict_get_int(r, "downtime") : -1;

    qobject_unref(r);
    return ms;
}

void mig_migrate(MigPair *p, int i, int budget)
{
    MigNode *n = &p->n[i];
    g_autofree char *path = g_strdup_printf("%s/qhca-mig-%d-%u.sock",
                                            g_get_tmp_dir(), getpid(),
                                            p->seq++);
    g_autofree char *uri = g_strdup_printf("unix:%s", path);
    QTestState *src = n->qts, *dst;
    unsigned from = p->from[i], lost = p->lost;
    int64_t clock;
    int fd, k;

    dst = mig_spawn(p, i, NULL, &fd);
    qtest_qmp_assert_success(dst, "{ 'execute': 'migrate-incoming',"
                             "  'arguments': { 'uri': %s,"
                             "                 'exit-on-error': false } }",
                             uri);
    qtest_qmp_assert_success(src, "{ 'execute': 'migrate-set-parameters',"
                             "  'arguments': { 'max-bandwidth': %lld } }",
                             1024LL << 20);
    mig_begin(p, i, budget);
    qtest_qmp_assert_success(src, "{ 'execute': 'migrate',"
                             "  'arguments': { 'uri': %s } }", uri);
    /* the source runs, and the wire carries up to the budget meanwhile */
    for (k = 0; !mig_status_is(src, "completed"); k++) {
        g_assert_cmpint(k, <, MIG_WAIT_STEPS);
        mig_step(p);
    }
    p->downtime_ms = mig_downtime(src);
    for (k = 0; !mig_status_is(dst, "completed"); k++) {
        g_assert_cmpint(k, <, MIG_WAIT_STEPS);
        mig_pump(p);
        g_usleep(1000);
    }
    clock = mig_drop_source(p, i);
    unlink(path);
    mig_adopt(p, i, dst, fd);
    g_test_message("node %c: migration %u, %u frames from the source, %u "
                   "frames lost, downtime %" PRId64 " ms", n->name, n->gen,
                   p->from[i] - from, p->lost - lost, p->downtime_ms);
    mig_resume(dst, clock);
    g_assert_cmphex(qhca_rd(&n->d, QHCA_REG_STATUS), ==, QHCA_STATUS_READY);
}

void mig_save_file(MigPair *p, int i, int budget, const char *path,
                   int64_t *clock)
{
    MigNode *n = &p->n[i];
    g_autofree char *uri = g_strdup_printf("file:%s", path);
    int k;

    mig_begin(p, i, budget);
    qtest_qmp_assert_success(n->qts, "{ 'execute': 'migrate',"
                             "  'arguments': { 'uri': %s } }", uri);
    for (k = 0; !mig_status_is(n->qts, "completed"); k++) {
        g_assert_cmpint(k, <, MIG_WAIT_STEPS);
        mig_step(p);
    }
    *clock = mig_drop_source(p, i);
}

void mig_load_file(MigPair *p, int i, const char *path, int64_t clock)
{
    g_autofree char *uri = g_strdup_printf("file:%s", path);
    QTestState *dst;
    int fd, k;

    g_assert_null(p->n[i].qts);
    dst = mig_spawn(p, i, NULL, &fd);
    qtest_qmp_assert_success(dst, "{ 'execute': 'migrate-incoming',"
                             "  'arguments': { 'uri': %s,"
                             "                 'exit-on-error': false } }",
                             uri);
    for (k = 0; !mig_status_is(dst, "completed"); k++) {
        g_assert_cmpint(k, <, MIG_WAIT_STEPS);
        mig_pump(p);
        g_usleep(1000);
    }
    mig_adopt(p, i, dst, fd);
    mig_resume(dst, clock);
    g_assert_cmphex(qhca_rd(&p->n[i].d, QHCA_REG_STATUS), ==,
                    QHCA_STATUS_READY);
}

bool mig_quiet(MigPair *p, End *a, End *b, int steps)
{
    int k;

    for (k = 0; k < steps; k++) {
        mig_step(p);
    }
    return !cqe_ready(a, a->cq_ci) && !cqe_ready(b, b->cq_ci);
}

unsigned mig_async_events(MigPair *p, int i)
{
    return qhca_drv_aeq_poll(&p->n[i].d.qd);
}
