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
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "libqtest.h"
#include "libqos/libqos-pc.h"
#include "libqos/qhca.h"
#include "qemu/bswap.h"

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

static void empty_datagram(bool dgram)
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
                                 "remote.port=%d", p.qemu_port, p.port);
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

    qhca_uninit(&d);
    qtest_shutdown(qs);
    close(p.fd);
}

static void test_dgram(void)
{
    empty_datagram(true);
}

static void test_socket_udp(void)
{
    empty_datagram(false);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/qhca/netdev/dgram/empty-datagram", test_dgram);
    qtest_add_func("/qhca/netdev/socket-udp/empty-datagram", test_socket_udp);
    return g_test_run();
}
