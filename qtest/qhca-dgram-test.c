/*
 * QTest: a peer cannot cut a qhca device's wire with an empty datagram.
 *
 * QEMU 10.0's datagram backends (-netdev dgram, and -netdev socket with
 * udp= or mcast=) took a zero-length datagram for the end of a connection
 * and stopped reading their socket for good: after one empty UDP datagram
 * from anybody who can reach the port, the device never received again.
 * scripts/qemu/0002-net-dgram-zero-length.patch drops the empty datagram and
 * keeps reading; these cases fail without it.
 *
 * Each case starts QEMU with a qhca device on a datagram netdev bound to a
 * UDP port on 127.0.0.1, enables the device through the libqos driver
 * (libqos/qhca.h: qhca_init(), qhca_enable()), and plays its peer from a
 * UDP socket of its own: a frame, empty datagrams, a frame. Both frames must
 * be counted in STAT_RX_FRAMES.  A plain qtest (qtest_pc_boot() on q35), as
 * qhca-wire.c's are: the device needs a netdev on a port the case picks.
 *
 * The batch cases test scripts/qemu/0005-net-dgram-batch.patch (rx-batch,
 * tx-batch, rcvbuf, sndbuf): two devices in one QEMU whose dgram netdevs
 * (AF_UNIX, or UDP on 127.0.0.1) are joined to each other with those
 * options, with a 256 KiB window so that bursts fill a batch (qhca-wire.c's
 * harness, its test wire unused).  A 1 MiB RDMA WRITE, a READ of it back
 * and a SEND (one frame each way, sent by tx-batch's bottom half alone):
 * the bytes compared, every frame one device sent counted as received by
 * the other and none resent.  Values out of range are refused.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "libqtest.h"
#include "libqos/libqos-pc.h"
#include "libqos/qhca.h"
#include "qemu/bswap.h"
#include "qobject/qdict.h"
#include "qhca-wire.h"

#define RX_WAIT_US      (5 * G_USEC_PER_SEC)

static const uint8_t dev_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };

typedef struct Peer {
    int fd;             /* the test's UDP socket, bound on 127.0.0.1 */
    int port;           /* its port */
    int qemu_port;      /* the port QEMU's netdev is bound to */
} Peer;

static int udp_socket(int port)
{
    struct sockaddr_in sa = {
        .sin_family = AF_INET,
        .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
        .sin_port = htons(port),
    };
    int fd = socket(AF_INET, SOCK_DGRAM, 0);

    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
    return fd;
}

static int udp_port(int fd)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);

    g_assert_cmpint(getsockname(fd, (struct sockaddr *)&sa, &len), ==, 0);
    return ntohs(sa.sin_port);
}

static void peer_open(Peer *p)
{
    int probe = udp_socket(0);

    /* a free port for QEMU: taken by the kernel, then given back */
    p->qemu_port = udp_port(probe);
    close(probe);
    p->fd = udp_socket(0);
    p->port = udp_port(p->fd);
}

static void peer_send(Peer *p, const void *buf, size_t len)
{
    struct sockaddr_in sa = {
        .sin_family = AF_INET,
        .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
        .sin_port = htons(p->qemu_port),
    };

    g_assert_cmpint(sendto(p->fd, buf, len, 0, (struct sockaddr *)&sa,
                           sizeof(sa)), ==, len);
}

/* An Ethernet frame addressed to the device (IPv4 ethertype, zero body) */
static void peer_send_frame(Peer *p)
{
    uint8_t frame[60] = { 0 };

    memcpy(frame, dev_mac, 6);
    memcpy(frame + 6, (uint8_t[]){ 0x52, 0x54, 0x00, 0xab, 0xcd, 0xef }, 6);
    frame[12] = 0x08;
    peer_send(p, frame, sizeof(frame));
}

static uint32_t rx_frames_reach(QQhca *d, uint32_t want)
{
    gint64 deadline = g_get_monotonic_time() + RX_WAIT_US;
    uint32_t n;

    /* QEMU's main loop reads the socket; give it real time */
    for (;;) {
        n = qhca_rd(d, QHCA_REG_STAT_RX_FRAMES);
        if (n >= want || g_get_monotonic_time() > deadline) {
            return n;
        }
        g_usleep(10 * 1000);
    }
}

/* @opts: more options of the dgram netdev (e.g. rx-batch) */
static void empty_datagram(bool dgram, const char *opts)
{
    g_autofree char *netdev = NULL;
    QOSState *qs;
    QQhca d;
    Peer p;
    int i;

    peer_open(&p);
    if (dgram) {
        netdev = g_strdup_printf("dgram,id=n0,local.type=inet,"
                                 "local.host=127.0.0.1,local.port=%d,"
                                 "remote.type=inet,remote.host=127.0.0.1,"
                                 "remote.port=%d%s", p.qemu_port, p.port,
                                 opts);
    } else {
        netdev = g_strdup_printf("socket,id=n0,localaddr=127.0.0.1:%d,"
                                 "udp=127.0.0.1:%d", p.qemu_port, p.port);
    }
    qs = qtest_pc_boot("-machine q35 -nodefaults -m 128M -netdev %s "
                       "-device qhca,netdev=n0,mac=" QHCA_QOS_MAC
                       ",addr=04.0", netdev);
    qhca_init(&d, qs->pcibus, QHCA_QOS_DEVFN, &qs->alloc);

    g_assert_cmphex(qhca_rd(&d, QHCA_REG_MAC_LO), ==, ldl_le_p(dev_mac));
    qhca_enable(&d);

    /* the wire works */
    peer_send_frame(&p);
    g_assert_cmpuint(rx_frames_reach(&d, 1), ==, 1);

    /* empty datagrams, then a frame: it must arrive */
    for (i = 0; i < 3; i++) {
        peer_send(&p, "", 0);
    }
    peer_send_frame(&p);
    g_assert_cmpuint(rx_frames_reach(&d, 2), ==, 2);
    /* and no empty datagram was counted as a frame */
    g_usleep(200 * 1000);
    g_assert_cmpuint(qhca_rd(&d, QHCA_REG_STAT_RX_FRAMES), ==, 2);

    qhca_uninit(&d);
    qtest_shutdown(qs);
    close(p.fd);
}

static void test_dgram(void)
{
    empty_datagram(true, "");
}

/*
 * The same through rx-batch's recvmmsg(): empty datagrams among frames do
 * not stop the batched reads
 */
static void test_dgram_batch_empty(void)
{
    empty_datagram(true, ",rx-batch=16,tx-batch=16");
}

static void test_socket_udp(void)
{
    empty_datagram(false, "");
}

#define BATCH_OPTS  "rx-batch=32,tx-batch=32,rcvbuf=1M,sndbuf=1M"

static void batch_transfer(bool unix_socket)
{
    g_autofree char *dir = NULL, *netdevs = NULL;
    g_autofree char *path_a = NULL, *path_b = NULL;
    const uint32_t len = 1 << 20;
    g_autofree uint8_t *out = g_malloc(len);
    g_autofree uint8_t *in = g_malloc(len);
    uint64_t va[QHCA_STAT_NUM], vb[QHCA_STAT_NUM];
    Mr src, back, dst, rbuf;
    struct qhca_send_wqe w;
    struct qhca_sge s;
    struct qhca_cqe c;
    Pair p;
    End a, b;

    if (unix_socket) {
        dir = g_dir_make_tmp("qhca-dgram-XXXXXX", NULL);
        g_assert_nonnull(dir);
        path_a = g_strdup_printf("%s/a", dir);
        path_b = g_strdup_printf("%s/b", dir);
        netdevs = g_strdup_printf(
            "-netdev dgram,id=na,local.type=unix,local.path=%s,"
            "remote.type=unix,remote.path=%s," BATCH_OPTS " "
            "-netdev dgram,id=nb,local.type=unix,local.path=%s,"
            "remote.type=unix,remote.path=%s," BATCH_OPTS,
            path_a, path_b, path_b, path_a);
    } else {
        Peer pa, pb;

        /* two free ports, taken by the kernel and given back */
        peer_open(&pa);
        peer_open(&pb);
        close(pa.fd);
        close(pb.fd);
        netdevs = g_strdup_printf(
            "-netdev dgram,id=na,local.type=inet,local.host=127.0.0.1,"
            "local.port=%d,remote.type=inet,remote.host=127.0.0.1,"
            "remote.port=%d," BATCH_OPTS " "
            "-netdev dgram,id=nb,local.type=inet,local.host=127.0.0.1,"
            "local.port=%d,remote.type=inet,remote.host=127.0.0.1,"
            "remote.port=%d," BATCH_OPTS,
            pa.qemu_port, pb.qemu_port, pb.qemu_port, pa.qemu_port);
    }
    pair_netdevs = netdevs;
    pair_dev_props = ",window-kib=256";
    pair_start(&p, WIRE_PASS);
    pair_netdevs = NULL;
    pair_dev_props = "";
    rc_pair(&p, &a, &b, NULL, false);
    src = mr_reg(&p.a, a.pdn, len, QHCA_ACCESS_LOCAL_WRITE, 0x40000000);
    back = mr_reg(&p.a, a.pdn, len, QHCA_ACCESS_LOCAL_WRITE, 0x50000000);
    dst = mr_reg(&p.b, b.pdn, len, QHCA_ACCESS_LOCAL_WRITE |
                 QHCA_ACCESS_REMOTE_WRITE | QHCA_ACCESS_REMOTE_READ,
                 0x60000000);
    rbuf = mr_reg(&p.b, b.pdn, 64, QHCA_ACCESS_LOCAL_WRITE, 0x70000000);
    fill(out, len, 5);
    mr_io(&p.a, &src, 0, out, len, true);

    w = wqe(QHCA_WQE_RDMA_WRITE, 0x51);
    w.rdma.remote_addr = cpu_to_le64(dst.iova);
    w.rdma.rkey = cpu_to_le32(dst.key);
    s = sge(&src, 0, len);
    post_send(&a, &w, &s, 1, NULL, 0);
    expect_cqe(&a, 0x51, QHCA_CQE_SUCCESS, QHCA_CQE_OP_RDMA_WRITE);
    mr_io(&p.b, &dst, 0, in, len, false);
    g_assert_true(memcmp(in, out, len) == 0);

    w = wqe(QHCA_WQE_RDMA_READ, 0x52);
    w.rdma.remote_addr = cpu_to_le64(dst.iova);
    w.rdma.rkey = cpu_to_le32(dst.key);
    s = sge(&back, 0, len);
    post_send(&a, &w, &s, 1, NULL, 0);
    expect_cqe(&a, 0x52, QHCA_CQE_SUCCESS, QHCA_CQE_OP_RDMA_READ);
    memset(in, 0, len);
    mr_io(&p.a, &back, 0, in, len, false);
    g_assert_true(memcmp(in, out, len) == 0);

    /* one frame each way: the SEND, its ACK */
    s = sge(&rbuf, 0, 64);
    post_recv(&b, 0x61, &s, 1);
    w = wqe(QHCA_WQE_SEND, 0x53);
    s = sge(&src, 100, 40);
    post_send(&a, &w, &s, 1, NULL, 0);
    c = poll_cq(&b);
    g_assert_cmphex(le64_to_cpu(c.wr_id), ==, 0x61);
    g_assert_cmpuint(c.status, ==, QHCA_CQE_SUCCESS);
    g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, 40);
    expect_cqe(&a, 0x53, QHCA_CQE_SUCCESS, QHCA_CQE_OP_SEND);
    mr_io(&p.b, &rbuf, 0, in, 40, false);
    g_assert_cmpmem(in, 40, out + 100, 40);

    /* every frame arrived once, none was resent */
    g_assert_cmpuint(query_stats(&p.a, 0, va), ==, QHCA_STAT_NUM);
    g_assert_cmpuint(query_stats(&p.b, 0, vb), ==, QHCA_STAT_NUM);
    g_assert_cmpuint(stat_of(va, QHCA_STAT_TX_FRAMES), >=, 512);
    g_assert_cmpuint(stat_of(va, QHCA_STAT_TX_FRAMES), ==,
                     stat_of(vb, QHCA_STAT_RX_FRAMES));
    g_assert_cmpuint(stat_of(vb, QHCA_STAT_TX_FRAMES), ==,
                     stat_of(va, QHCA_STAT_RX_FRAMES));
    g_assert_cmpuint(stat_of(va, QHCA_STAT_RETRANSMITS), ==, 0);
    g_assert_cmpuint(stat_of(vb, QHCA_STAT_RETRANSMITS), ==, 0);
    g_assert_cmpuint(stat_of(vb, QHCA_STAT_RX_DROPPED), ==, 0);
    g_assert_cmpuint(stat_of(va, QHCA_STAT_RX_DROPPED), ==, 0);
    pair_stop(&p);
    if (dir) {
        unlink(path_a);
        unlink(path_b);
        rmdir(dir);
    }
}

static void test_batch_unix(void)
{
    batch_transfer(true);
}

static void test_batch_udp(void)
{
    batch_transfer(false);
}

/* netdev_add of a dgram netdev with @opt = @val; the error, or NULL */
static char *batch_add(QTestState *qts, const char *path, const char *id,
                       const char *opt, int64_t val)
{
    g_autofree char *local = g_strdup_printf("%s.%s", path, id);
    QDict *args = qdict_new(), *l = qdict_new(), *r = qdict_new(), *resp;
    char *err = NULL;

    qdict_put_str(l, "type", "unix");
    qdict_put_str(l, "path", local);
    qdict_put_str(r, "type", "unix");
    qdict_put_str(r, "path", path);
    qdict_put_str(args, "type", "dgram");
    qdict_put_str(args, "id", id);
    qdict_put(args, "local", l);
    qdict_put(args, "remote", r);
    qdict_put_int(args, opt, val);
    resp = qtest_qmp(qts, "{'execute': 'netdev_add', 'arguments': %p}",
                     args);
    if (qdict_haskey(resp, "error")) {
        err = g_strdup(qdict_get_str(qdict_get_qdict(resp, "error"),
                                     "desc"));
    }
    qobject_unref(resp);
    unlink(local);
    return err;
}

static void test_batch_bad(void)
{
    g_autofree char *dir = g_dir_make_tmp("qhca-dgram-XXXXXX", NULL);
    g_autofree char *path = g_strdup_printf("%s/peer", dir);
    QTestState *qts = qtest_init("-machine none -nodefaults");
    static const struct {
        const char *opt;
        int64_t val;
        const char *err;        /* NULL: taken */
    } cases[] = {
        { "rx-batch", 0, "rx-batch must be between 1 and 64" },
        { "rx-batch", 65, "rx-batch must be between 1 and 64" },
        { "tx-batch", 0, "tx-batch must be between 1 and 64" },
        { "tx-batch", 65, "tx-batch must be between 1 and 64" },
        { "rcvbuf", 0, "rcvbuf and sndbuf must be between 1 and" },
        { "sndbuf", 1LL << 31, "rcvbuf and sndbuf must be between 1 and" },
        { "rx-batch", 64, NULL },
        { "tx-batch", 64, NULL },
        { "rcvbuf", 1 << 20, NULL },
    };
    unsigned i;

    for (i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *id = g_strdup_printf("d%u", i);
        g_autofree char *err = batch_add(qts, path, id, cases[i].opt,
                                         cases[i].val);

        if (cases[i].err) {
            g_assert_nonnull(err);
            g_assert_nonnull(strstr(err, cases[i].err));
        } else {
            g_assert_null(err);
        }
    }
    qtest_quit(qts);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/qhca/netdev/dgram/empty-datagram", test_dgram);
    qtest_add_func("/qhca/netdev/socket-udp/empty-datagram", test_socket_udp);
    qtest_add_func("/qhca/netdev/dgram/batch/unix", test_batch_unix);
    qtest_add_func("/qhca/netdev/dgram/batch/udp", test_batch_udp);
    qtest_add_func("/qhca/netdev/dgram/batch/bad-value", test_batch_bad);
    qtest_add_func("/qhca/netdev/dgram/batch/empty-datagram",
                   test_dgram_batch_empty);
    return g_test_run();
}
