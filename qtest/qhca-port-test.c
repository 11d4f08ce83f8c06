/*
 * QTest for the qhca RDMA HCA: the port shared with a NIC (-device
 * qhca,nic=ID, hw/qhca-port.c).  Each device shares the backend of a NIC
 * with its MAC; the test's wire joins the two backends.  RDMA runs over
 * them, the backend's frames are steered (RoCEv2 to the device's MAC, or
 * multicast, to the device; the rest to the NIC), captures of the backend
 * show both, and unplugging either device, or deleting the backend, while
 * the other runs is safe.  The steering captures use rtl8139 as the NIC:
 * without a guest driver it drops what it gets, where a virtio-net without
 * one holds the backend until its driver comes (docs/hardware.md).
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "libqtest.h"
#include "qobject/qdict.h"
#include "hw/pci/pci_regs.h"
#include "qemu/bswap.h"
#include "qhca-wire.h"

static const uint8_t mac_c[6] = { 0x52, 0x54, 0x00, 0x00, 0x00, 0x0c };

/* Frames of a pcap file (filter-dump's), each as a GByteArray */
static GPtrArray *pcap_frames(const char *path)
{
    GPtrArray *out = g_ptr_array_new_with_free_func(
        (GDestroyNotify)g_byte_array_unref);
    g_autofree gchar *buf = NULL;
    gsize len, off = 24;

    g_assert_true(g_file_get_contents(path, &buf, &len, NULL));
    g_assert_cmpuint(len, >=, 24);
    g_assert_cmphex((uint32_t)ldl_le_p(buf), ==, 0xa1b2c3d4);
    while (off + 16 <= len) {
        uint32_t n = (uint32_t)ldl_le_p(buf + off + 8);
        GByteArray *f;

        g_assert_cmpuint(off + 16 + n, <=, len);
        f = g_byte_array_new();
        g_byte_array_append(f, (const guint8 *)buf + off + 16, n);
        g_ptr_array_add(out, f);
        off += 16 + n;
    }
    g_assert_cmpuint(off, ==, len);
    return out;
}

/* How many frames of @path have this destination and source MAC (NULL: any) */
static unsigned pcap_count(const char *path, const uint8_t *dst,
                           const uint8_t *src)
{
    g_autoptr(GPtrArray) fr = pcap_frames(path);
    unsigned i, n = 0;

    for (i = 0; i < fr->len; i++) {
        GByteArray *f = g_ptr_array_index(fr, i);

        if (f->len >= 12 && (!dst || !memcmp(f->data, dst, 6)) &&
            (!src || !memcmp(f->data + 6, src, 6))) {
            n++;
        }
    }
    return n;
}

/* Is there a frame in @path exactly like @frame (len bytes)? */
static bool pcap_has(const char *path, const uint8_t *frame, size_t len)
{
    g_autoptr(GPtrArray) fr = pcap_frames(path);
    unsigned i;

    for (i = 0; i < fr->len; i++) {
        GByteArray *f = g_ptr_array_index(fr, i);

        if (f->len == len && !memcmp(f->data, frame, len)) {
            return true;
        }
    }
    return false;
}

static uint32_t rx_frames(QQhca *d)
{
    return qhca_rd(d, QHCA_REG_STAT_RX_FRAMES);
}

/* Let QEMU read the wire until @d has received @want frames in all */
static void wait_rx(Pair *p, QQhca *d, uint32_t want)
{
    int i;

    for (i = 0; i < 5000 && rx_frames(d) < want; i++) {
        wire_pump();
        g_usleep(200);
    }
    g_assert_cmpuint(rx_frames(d), ==, want);
}

/* Let QEMU read the wire until @path holds @want frames */
static void wait_pcap(Pair *p, const char *path, unsigned want)
{
    int i;

    for (i = 0; i < 5000 && pcap_count(path, NULL, NULL) < want; i++) {
        settle(p, 1);
        g_usleep(200);
    }
    g_assert_cmpuint(pcap_count(path, NULL, NULL), ==, want);
}

/* Ten SENDs of 4 KiB from A to B and a 64 KiB RDMA WRITE back, bytes checked */
static void rc_traffic(Pair *p, End *a, End *b, uint32_t seed)
{
    g_autofree uint8_t *src = g_malloc(65536);
    g_autofree uint8_t *dst = g_malloc(65536);
    Mr ma, mb;
    struct qhca_sge s, r;
    struct qhca_send_wqe w;
    unsigned i;

    ma = mr_reg(&p->a, a->pdn, 65536, ALL_ACCESS, 0x100000);
    mb = mr_reg(&p->b, b->pdn, 65536, ALL_ACCESS, 0x200000);
    fill(src, 65536, seed);
    mr_io(&p->a, &ma, 0, src, 65536, true);
    for (i = 0; i < 10; i++) {
        r = sge(&mb, i * 4096, 4096);
        post_recv(b, 0xb0 + i, &r, 1);
        s = sge(&ma, i * 4096, 4096);
        w = wqe(QHCA_WQE_SEND, 0xa0 + i);
        post_send(a, &w, &s, 1, NULL, 0);
    }
    for (i = 0; i < 10; i++) {
        expect_cqe(a, 0xa0 + i, QHCA_CQE_SUCCESS, QHCA_CQE_OP_SEND);
        expect_cqe(b, 0xb0 + i, QHCA_CQE_SUCCESS, QHCA_CQE_OP_RECV);
    }
    mr_io(&p->b, &mb, 0, dst, 40960, false);
    g_assert_cmpmem(dst, 40960, src, 40960);

    fill(dst, 65536, seed + 1);
    mr_io(&p->b, &mb, 0, dst, 65536, true);
    w = wqe(QHCA_WQE_RDMA_WRITE, 0xc0);
    w.rdma.remote_addr = cpu_to_le64(ma.iova);
    w.rdma.rkey = cpu_to_le32(ma.key);
    s = sge(&mb, 0, 65536);
    post_send(b, &w, &s, 1, NULL, 0);
    expect_cqe(b, 0xc0, QHCA_CQE_SUCCESS, QHCA_CQE_OP_RDMA_WRITE);
    mr_io(&p->a, &ma, 0, src, 65536, false);
    g_assert_cmpmem(src, 65536, dst, 65536);
}

/*
 * Devices A and B sharing NICs of model @nic (B where @topo puts it), an
 * RC QP each, connected, and rc_traffic() between them
 */
static void shared_pair(Pair *p, const char *nic, PairTopo topo, End *a,
                        End *b, uint32_t seed)
{
    pair_nic = nic;
    pair_start_topo(p, WIRE_PASS, topo);
    pair_nic = NULL;
    rc_pair(p, a, b, NULL, false);
    rc_traffic(p, a, b, seed);
}

static uint32_t port_link(QQhca *d)
{
    struct qhca_port_attr pa;

    qhca_cmd_ok(d, QHCA_CMD_QUERY_PORT, NULL, 0);
    qtest_memread(d->qts, d->qd.resp, &pa, sizeof(pa));
    return le32_to_cpu(pa.link_up);
}

static char *qom_str(QTestState *qts, const char *path, const char *prop)
{
    QDict *r = qtest_qmp(qts, "{'execute': 'qom-get', 'arguments': "
                         "{'path': %s, 'property': %s}}", path, prop);
    char *s = g_strdup(qdict_get_try_str(r, "return"));

    qobject_unref(r);
    return s;
}

static bool qom_exists(QTestState *qts, const char *path)
{
    QDict *r = qtest_qmp(qts, "{'execute': 'qom-list', 'arguments': "
                         "{'path': %s}}", path);
    bool ok = qdict_haskey(r, "return");

    qobject_unref(r);
    return ok;
}

/*
 * RC over two virtio-net backends shared with the devices: the devices
 * took their NICs' MACs (no mac= given), their ports are up, SENDs and an
 * RDMA WRITE arrive whole, and the link follows the NIC's (set_link)
 */
static void test_port_rc(void)
{
    Pair p;
    End a, b;
    g_autofree char *mac = NULL;

    pair_nic = "virtio-net-pci";
    pair_start(&p, WIRE_PASS);
    pair_nic = NULL;
    mac = qom_str(p.qs->qts, "/machine/peripheral/qa", "mac");
    g_assert_cmpstr(mac, ==, "52:54:00:00:00:0a");
    g_assert_true(qom_exists(p.qs->qts, "/machine/peripheral/qa/port"));
    g_assert_cmpuint(port_link(&p.a), ==, 1);
    g_assert_cmpuint(port_link(&p.b), ==, 1);
    rc_pair(&p, &a, &b, NULL, false);
    rc_traffic(&p, &a, &b, 1);
    g_assert_cmpuint(rx_frames(&p.b), >=, 10);
    g_assert_cmpuint(rx_frames(&p.a), >=, 16);

    /* the NIC's link is the port's: down with it, up again with it */
    qtest_qmp_assert_success(p.qs->qts, "{'execute': 'set_link', "
                             "'arguments': {'name': 'nica', 'up': false}}");
    g_assert_cmpuint(port_link(&p.a), ==, 0);
    qtest_qmp_assert_success(p.qs->qts, "{'execute': 'set_link', "
                             "'arguments': {'name': 'nica', 'up': true}}");
    g_assert_cmpuint(port_link(&p.a), ==, 1);
    rc_traffic(&p, &a, &b, 2);
    pair_stop(&p);
}

/* A RoCEv2 frame from B's MAC to @dst (IPv4 unless @v6), to no QP */
static size_t roce_frame(uint8_t *buf, size_t size, const uint8_t *dst,
                         bool v6, bool mcast)
{
    QhcaRoceHdr h = { 0 };
    int n;

    memcpy(h.dst_mac, dst, 6);
    memcpy(h.src_mac, mac_b, 6);
    if (v6) {
        h.ipv6 = true;
        gid6_of(h.src_ip6, mac_b);
        gid6_of(h.dst_ip6, dst);
    } else {
        h.src_ip = IP_B;
        h.dst_ip = mcast ? 0xe0000101 : IP_A;      /* 224.0.1.1 */
    }
    h.ttl = 64;
    h.src_port = 0xc123;
    h.pkey = QHCA_ROCE_DEFAULT_PKEY;
    h.opcode = mcast ? 0x64 : 0x04;                 /* UD / RC SEND ONLY */
    h.dest_qp = mcast ? 0xffffff : 0x4321;
    h.deth.qkey = 0x11111111;
    n = qhca_roce_build(buf, size, &h, "port", 4);
    g_assert_cmpint(n, >, 0);
    return n;
}

/*
 * What goes where.  Capture P0 is given on the command line, so it comes
 * before the port on the backend; P1 is added at run time, after it, and
 * so sees only what the port lets through to the NIC.
 */
static void test_port_steering(void)
{
    g_autofree char *dir = g_dir_make_tmp("qhca-port-XXXXXX", NULL);
    g_autofree char *p0 = g_build_filename(dir, "before.pcap", NULL);
    g_autofree char *p1 = g_build_filename(dir, "after.pcap", NULL);
    g_autofree char *args = NULL;
    uint8_t roce4[256], roce6[256], mcast[256], other[256], port2[256];
    uint8_t frag[256], arp[60] = { 0 };
    size_t n4, n6, nm, no, np, nf;
    Pair p;
    End a, b;
    uint32_t rx0;
    unsigned a_tx, b_tx, to_nic = 0;

    args = g_strdup_printf("-object filter-dump,id=p0,netdev=na,file=%s", p0);
    pair_nic = "rtl8139";
    pair_args = args;
    pair_start(&p, WIRE_PASS);
    pair_nic = NULL;
    pair_args = "";
    qtest_qmp_assert_success(p.qs->qts, "{'execute': 'object-add', "
                             "'arguments': {'qom-type': 'filter-dump', "
                             "'id': 'p1', 'netdev': 'na', 'file': %s}}", p1);
    rc_pair(&p, &a, &b, NULL, false);
    rc_traffic(&p, &a, &b, 3);
    settle(&p, 20);

    /* P0 has both directions of the RDMA traffic; P1 none of it */
    a_tx = pcap_count(p0, mac_b, mac_a);
    b_tx = pcap_count(p0, mac_a, mac_b);
    g_assert_cmpuint(a_tx, ==, qhca_rd(&p.a, QHCA_REG_STAT_TX_FRAMES));
    g_assert_cmpuint(b_tx, ==, rx_frames(&p.a));
    g_assert_cmpuint(a_tx, >=, 10);
    g_assert_cmpuint(b_tx, >=, 16);
    g_assert_cmpuint(pcap_count(p1, NULL, NULL), ==, 0);

    /* to the device: RoCEv2 to its MAC, over IPv4 and IPv6; multicast */
    n4 = roce_frame(roce4, sizeof(roce4), mac_a, false, false);
    n6 = roce_frame(roce6, sizeof(roce6), mac_a, true, false);
    nm = roce_frame(mcast, sizeof(mcast), (const uint8_t *)
                    "\x01\x00\x5e\x00\x01\x01", false, true);
    rx0 = rx_frames(&p.a);
    wire_write(p.w.fd[0], roce4, n4);
    wire_write(p.w.fd[0], roce6, n6);
    wire_write(p.w.fd[0], mcast, nm);
    wait_rx(&p, &p.a, rx0 + 3);

    /* to the NIC: another MAC, another UDP port, a fragment, ARP */
    no = roce_frame(other, sizeof(other), mac_c, false, false);
    np = roce_frame(port2, sizeof(port2), mac_a, false, false);
    stw_be_p(port2 + QHCA_ROCE_UDP_OFFSET + 2, 4792);
    nf = roce_frame(frag, sizeof(frag), mac_a, false, false);
    frag[QHCA_ROCE_IP_OFFSET + 6] |= 0x20;          /* more fragments */
    memset(arp, 0xff, 6);
    memcpy(arp + 6, mac_b, 6);
    stw_be_p(arp + 12, 0x0806);
    wire_write(p.w.fd[0], other, no);
    wire_write(p.w.fd[0], port2, np);
    wire_write(p.w.fd[0], frag, nf);
    wire_write(p.w.fd[0], arp, sizeof(arp));
    to_nic += 4;
    wait_pcap(&p, p1, to_nic);
    g_assert_cmpuint(rx_frames(&p.a), ==, rx0 + 3);
    g_assert_true(pcap_has(p1, other, no));
    g_assert_true(pcap_has(p1, port2, np));
    g_assert_true(pcap_has(p1, frag, nf));
    g_assert_true(pcap_has(p1, arp, sizeof(arp)));
    g_assert_false(pcap_has(p1, roce4, n4));
    /* P0 saw all seven */
    g_assert_true(pcap_has(p0, roce4, n4) && pcap_has(p0, roce6, n6) &&
                  pcap_has(p0, mcast, nm) && pcap_has(p0, other, no) &&
                  pcap_has(p0, port2, np) && pcap_has(p0, frag, nf) &&
                  pcap_has(p0, arp, sizeof(arp)));

    /* a device its driver has not enabled leaves RoCEv2 to the NIC */
    qhca_wr(&p.a, QHCA_REG_CTRL, 0);
    wire_write(p.w.fd[0], roce4, n4);
    to_nic++;
    wait_pcap(&p, p1, to_nic);
    g_assert_cmpuint(rx_frames(&p.a), ==, rx0 + 3);
    g_assert_true(pcap_has(p1, roce4, n4));

    pair_stop(&p);
    unlink(p0);
    unlink(p1);
    rmdir(dir);
}

/* device_del @id behind root port @port, the guest powering the slot off */
static void unplug(Pair *p, QPCIDevice *port, const char *id)
{
    QTestState *qts = p->qs->qts;
    uint8_t cap = qpci_find_capability(port, PCI_CAP_ID_EXP, 0);
    uint16_t ctl;

    g_assert_cmpuint(cap, !=, 0);
    qtest_qmp_device_del_send(qts, id);
    ctl = qpci_config_readw(port, cap + PCI_EXP_SLTCTL);
    ctl = (ctl & ~PCI_EXP_SLTCTL_PIC) | PCI_EXP_SLTCTL_PWR_IND_OFF |
          PCI_EXP_SLTCTL_PCC;
    qpci_config_writew(port, cap + PCI_EXP_SLTCTL, ctl);
    wait_device_deleted(qts, id);
}

/*
 * The qhca device unplugged while its NIC runs: the port goes with it
 * (the same NIC takes a new qhca device, which it would refuse if the old
 * port were still on its backend), and RoCEv2 to the MAC now reaches the
 * NIC
 */
static void test_port_unplug_qhca(void)
{
    g_autofree char *dir = g_dir_make_tmp("qhca-port-XXXXXX", NULL);
    g_autofree char *pb = g_build_filename(dir, "b.pcap", NULL);
    uint8_t roce[256];
    size_t n;
    Pair p;
    End a, b;

    shared_pair(&p, "rtl8139", PAIR_B_PORT, &a, &b, 4);
    qtest_qmp_assert_success(p.qs->qts, "{'execute': 'object-add', "
                             "'arguments': {'qom-type': 'filter-dump', "
                             "'id': 'pb', 'netdev': 'nb', 'file': %s}}", pb);

    unplug(&p, p.port, "qb");
    p.b.qts = NULL;
    g_assert_false(qom_exists(p.qs->qts, "/machine/peripheral/qb"));
    n = roce_frame(roce, sizeof(roce), mac_b, false, false);
    /* B's MAC is the NIC's alone again: A's frame to it reaches the NIC */
    memcpy(roce + 6, mac_a, 6);
    wire_write(p.w.fd[1], roce, n);
    wait_pcap(&p, pb, 1);
    g_assert_true(pcap_has(pb, roce, n));
    qtest_qmp_assert_success(p.qs->qts, "{'execute': 'query-status'}");

    /* the NIC's backend is free for a new device */
    qtest_qmp_device_add(p.qs->qts, "qhca", "qb", "{'bus': 'rp0', "
                         "'nic': 'nicb'}");
    g_assert_true(qom_exists(p.qs->qts, "/machine/peripheral/qb/port"));
    qhca_cmd_ok(&p.a, QHCA_CMD_QUERY_DEVICE, NULL, 0);
    pair_stop(&p);
    unlink(pb);
    rmdir(dir);
}

/*
 * A SEND of 4 KiB posted on @e (of device @d) while its port leads
 * nowhere: for 50 ms of the wire nothing of it reaches device @peer
 */
static void send_goes_nowhere(Pair *p, QQhca *d, End *e, QQhca *peer,
                              uint64_t wr_id)
{
    uint32_t rx = rx_frames(peer);
    Mr m = mr_reg(d, e->pdn, 4096, ALL_ACCESS, 0x300000);
    struct qhca_sge s = sge(&m, 0, 4096);
    struct qhca_send_wqe w = wqe(QHCA_WQE_SEND, wr_id);
    int i;

    post_send(e, &w, &s, 1, NULL, 0);
    for (i = 0; i < 50; i++) {
        settle(p, 1);
        g_usleep(1000);
    }
    g_assert_cmpuint(rx_frames(peer), ==, rx);
}

/*
 * The NIC unplugged while the qhca device runs: the device stays, its port
 * goes down, what it sends goes nowhere, and it still takes commands; then
 * its backend is deleted too, and the port with it
 */
static void test_port_unplug_nic(void)
{
    Pair p;
    End a, b;

    shared_pair(&p, "virtio-net-pci", PAIR_B_NIC_PORT, &a, &b, 5);
    g_assert_cmpuint(port_link(&p.b), ==, 1);

    unplug(&p, p.port, "nicb");
    g_assert_cmpuint(port_link(&p.b), ==, 0);
    send_goes_nowhere(&p, &p.b, &b, &p.a, 0xd0);
    g_assert_cmpuint(qhca_rd(&p.b, QHCA_REG_STATUS) & QHCA_STATUS_READY, ==,
                     QHCA_STATUS_READY);
    qhca_cmd_ok(&p.b, QHCA_CMD_QUERY_DEVICE, NULL, 0);

    qtest_qmp_assert_success(p.qs->qts, "{'execute': 'netdev_del', "
                             "'arguments': {'id': 'nb'}}");
    g_assert_false(qom_exists(p.qs->qts, "/machine/peripheral/qb/port"));
    g_assert_cmpuint(port_link(&p.b), ==, 0);
    qhca_cmd_ok(&p.b, QHCA_CMD_QUERY_DEVICE, NULL, 0);
    pair_stop(&p);
}

/*
 * The backend deleted under both devices (netdev_del): the port goes, the
 * device's link is down, it sends nothing; the NIC is the net layer's to
 * handle (its link is down)
 */
static void test_port_netdev_del(void)
{
    Pair p;
    End a, b;

    shared_pair(&p, "virtio-net-pci", PAIR_B_DIRECT, &a, &b, 6);
    qtest_qmp_assert_success(p.qs->qts, "{'execute': 'netdev_del', "
                             "'arguments': {'id': 'na'}}");
    g_assert_false(qom_exists(p.qs->qts, "/machine/peripheral/qa/port"));
    g_assert_true(qom_exists(p.qs->qts, "/machine/peripheral/qa"));
    g_assert_cmpuint(port_link(&p.a), ==, 0);
    send_goes_nowhere(&p, &p.a, &a, &p.b, 0xe0);
    qhca_cmd_ok(&p.a, QHCA_CMD_QUERY_DEVICE, NULL, 0);
    qtest_qmp_assert_success(p.qs->qts, "{'execute': 'query-status'}");
    pair_stop(&p);
}

/* @r (a QMP response, freed) is an error whose text has @want */
static void assert_error(QDict *r, const char *want)
{
    QDict *err = qdict_get_qdict(r, "error");

    g_assert_nonnull(err);
    g_test_message("refused: %s", qdict_get_str(err, "desc"));
    g_assert_nonnull(strstr(qdict_get_str(err, "desc"), want));
    qobject_unref(r);
}

/* What nic= refuses, each with its reason; nothing is left behind */
static void test_port_refused(void)
{
    g_autofree char *mac = NULL;
    QTestState *qts = qtest_init(
        "-machine q35 -nodefaults "
        "-global ICH9-LPC.acpi-pci-hotplug-with-bridge-support=off "
        "-device pcie-root-port,id=rp0,chassis=1,addr=06.0 "
        "-device pcie-root-port,id=rp1,chassis=2,addr=07.0 "
        "-netdev hubport,id=n0,hubid=0 -netdev hubport,id=n1,hubid=1 "
        "-netdev hubport,id=n2,hubid=2 "
        "-device virtio-net-pci,id=nic0,netdev=n0,romfile= "
        "-device virtio-net-pci,id=nic2,netdev=n2,romfile=,"
        "mac=52:54:00:00:00:22,addr=09.0 "
        "-device pcie-pci-bridge,id=plain,addr=0a.0");

    assert_error(qtest_qmp(qts, "{'execute': 'device_add', 'arguments': "
                           "{'driver': 'qhca', 'id': 'x', 'bus': 'rp0', "
                           "'nic': 'nope'}}"), "no such device");
    assert_error(qtest_qmp(qts, "{'execute': 'device_add', 'arguments': "
                           "{'driver': 'qhca', 'id': 'x', 'bus': 'rp0', "
                           "'nic': 'plain'}}"), "not a network card");
    assert_error(qtest_qmp(qts, "{'execute': 'device_add', 'arguments': "
                           "{'driver': 'qhca', 'id': 'x', 'bus': 'rp0', "
                           "'nic': 'nic0', 'netdev': 'n1'}}"), "not both");
    assert_error(qtest_qmp(qts, "{'execute': 'object-add', 'arguments': "
                           "{'qom-type': 'qhca-port', 'id': 'y', "
                           "'netdev': 'n1'}}"), "'qhca-port'");
    /* one device per NIC: a second one is refused, the first works on */
    qtest_qmp_device_add(qts, "qhca", "q0", "{'bus': 'rp0', 'nic': 'nic0'}");
    assert_error(qtest_qmp(qts, "{'execute': 'device_add', 'arguments': "
                           "{'driver': 'qhca', 'id': 'x', 'bus': 'rp1', "
                           "'nic': 'nic0'}}"), "already shared");
    assert_error(qtest_qmp(qts, "{'execute': 'device_add', 'arguments': "
                           "{'driver': 'qhca', 'id': 'x', 'bus': 'rp1', "
                           "'nic': 'q0'}}"), "not a network card");
    g_assert_false(qom_exists(qts, "/machine/peripheral/x"));
    /* a device with a MAC of its own keeps it (QEMU warns) */
    qtest_qmp_device_add(qts, "qhca", "q2", "{'bus': 'rp1', 'nic': 'nic2', "
                         "'mac': '52:54:00:00:00:99'}");
    mac = qom_str(qts, "/machine/peripheral/q2", "mac");
    g_assert_cmpstr(mac, ==, "52:54:00:00:00:99");
    qtest_quit(qts);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/qhca/port/rc", test_port_rc);
    qtest_add_func("/qhca/port/steering", test_port_steering);
    qtest_add_func("/qhca/port/unplug-qhca", test_port_unplug_qhca);
    qtest_add_func("/qhca/port/unplug-nic", test_port_unplug_nic);
    qtest_add_func("/qhca/port/netdev-del", test_port_netdev_del);
    qtest_add_func("/qhca/port/refused", test_port_refused);
    return g_test_run();
}
