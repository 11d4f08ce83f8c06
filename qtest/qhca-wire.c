/*
 * Two qhca devices in one QEMU on a wire the test controls (qhca-wire.h)
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "libqtest.h"
#include "hw/pci/pci_regs.h"
#include "qemu/bswap.h"
#include "qemu/iov.h"
#include "qobject/qdict.h"
#include "qhca-wire.h"

/*
 * Two devices on a wire the test controls.
 *
 * As tests/qtest/e1000e-test.c does, each device's netdev is a socket whose
 * other end the test holds (frames are a 4-byte big-endian length and the
 * frame).  The test relays frames between the two devices and can drop,
 * duplicate, reorder or swallow them, or inject its own.
 */

static Wire *cur_wire;

void wire_write(int fd, const uint8_t *buf, uint32_t len)
{
    uint32_t be = cpu_to_be32(len);
    struct iovec iov[] = {
        { .iov_base = &be, .iov_len = sizeof(be) },
        { .iov_base = (void *)buf, .iov_len = len },
    };
    ssize_t n = iov_send(fd, iov, 2, 0, sizeof(be) + len);

    g_assert_cmpint(n, ==, sizeof(be) + len);
}

static void wire_deliver(Wire *w, int to, const uint8_t *buf, uint32_t len)
{
    w->frames++;
    switch (w->policy) {
    case WIRE_DROP_EVERY_5:
        if (w->frames % 5 == 0) {
            w->dropped++;
            return;
        }
        break;
    case WIRE_DROP_RANDOM:
        if (g_test_rand_int_range(0, 100) < 15) {
            w->dropped++;
            return;
        }
        break;
    case WIRE_BLACKHOLE:
        w->dropped++;
        return;
    case WIRE_DUP:
        wire_write(w->fd[to], buf, len);
        break;
    case WIRE_REORDER:
        if (!w->held) {
            w->held = g_byte_array_new();
            g_byte_array_append(w->held, buf, len);
            w->held_to = to;
            return;
        }
        wire_write(w->fd[to], buf, len);
        wire_write(w->fd[w->held_to], w->held->data, w->held->len);
        g_byte_array_unref(w->held);
        w->held = NULL;
        return;
    default:
        break;
    }
    wire_write(w->fd[to], buf, len);
}

void wire_pump(void)
{
    Wire *w = cur_wire;
    uint8_t buf[16384];
    int i;

    if (!w) {
        return;
    }
    for (i = 0; i < 2; i++) {
        ssize_t n;

        while ((n = recv(w->fd[i], buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
            g_byte_array_append(w->in[i], buf, n);
        }
        while (w->in[i]->len >= 4) {
            uint32_t len = ldl_be_p(w->in[i]->data);

            g_assert_cmpuint(len, <=, 65536);
            if (w->in[i]->len < 4 + len) {
                break;
            }
            g_byte_array_set_size(w->last[i], 0);
            g_byte_array_append(w->last[i], w->in[i]->data + 4, len);
            wire_deliver(w, !i, w->in[i]->data + 4, len);
            g_byte_array_remove_range(w->in[i], 0, 4 + len);
        }
    }
    /* A frame held for reordering must not wait forever */
    if (w->held && w->frames % 8 == 7) {
        wire_write(w->fd[w->held_to], w->held->data, w->held->len);
        g_byte_array_unref(w->held);
        w->held = NULL;
    }
}

const uint8_t mac_a[6] = { 0x52, 0x54, 0x00, 0x00, 0x00, 0x0a };
const uint8_t mac_b[6] = { 0x52, 0x54, 0x00, 0x00, 0x00, 0x0b };

const char *pair_dev_props = "";
const char *pair_nic;
const char *pair_args = "";
const char *pair_netdevs;

/* Give bridge @br a 64 MiB memory window at the bus's next free address */
static void bridge_window(QPCIBus *bus, QPCIDevice *br)
{
    uint64_t base = ROUND_UP(bus->mmio_alloc_ptr, 1 << 20);

    qpci_config_writew(br, PCI_MEMORY_BASE, base >> 16);
    qpci_config_writew(br, PCI_MEMORY_LIMIT,
                       ((base + (64 << 20)) >> 16) - 0x10);
    qpci_device_enable(br);
}

/*
 * Put device B behind a PCIe root port, or behind a switch (an upstream
 * and a downstream port) on that root port: give the ports their bus
 * numbers and nested memory windows above everything mapped so far, and
 * let them forward DMA.  B's BARs are mapped from p->b_mmio.
 */
static int pair_bridges(Pair *p, PairTopo topo)
{
    QPCIBus *bus = p->qs->pcibus;
    QPCIDevice *port = qpci_device_find(bus, PAIR_PORT_DEVFN);

    g_assert_nonnull(port);
    g_assert_cmpint(qpci_secondary_buses_init(bus),
                    ==, topo == PAIR_B_SWITCH ? 3 : 1);
    bus->mmio_alloc_ptr = ROUND_UP(bus->mmio_alloc_ptr, 1 << 20);
    bridge_window(bus, port);
    p->port = port;
    if (topo == PAIR_B_SWITCH) {
        p->up = qpci_device_find(bus, PAIR_UP_DEVFN);
        p->down = qpci_device_find(bus, PAIR_DOWN_DEVFN);
        g_assert_nonnull(p->up);
        g_assert_nonnull(p->down);
        bridge_window(bus, p->up);
        bridge_window(bus, p->down);
    }
    p->b_mmio = bus->mmio_alloc_ptr;
    return topo == PAIR_B_SWITCH ? PAIR_B_SWITCH_DEVFN : PAIR_B_PORT_DEVFN;
}

void pair_start_topo(Pair *p, WirePolicy policy, PairTopo topo)
{
    g_autofree char *dump = NULL;
    g_autofree char *ea = NULL, *eb = NULL;
    g_autofree char *na = NULL, *nb = NULL;
    const char *pcap;
    const char *ports, *b_dev;
    int sa[2], sb[2];
    int i;

    memset(p, 0, sizeof(*p));
    g_assert_cmpint(socketpair(PF_UNIX, SOCK_STREAM, 0, sa), ==, 0);
    g_assert_cmpint(socketpair(PF_UNIX, SOCK_STREAM, 0, sb), ==, 0);
    /* QHCA_QTEST_PCAP=FILE records device A's wire (scripts/pcap-check) */
    pcap = getenv("QHCA_QTEST_PCAP");
    if (pcap) {
        dump = g_strdup_printf("-object filter-dump,id=fa,netdev=na,file=%s",
                               pcap);
    }
    /* B's bridges (before any device on them), then B */
    switch (topo) {
    case PAIR_B_PORT:
    case PAIR_B_NIC_PORT:
        ports = "-global ICH9-LPC.acpi-pci-hotplug-with-bridge-support=off "
                "-device pcie-root-port,id=rp0,chassis=1,addr=06.0";
        b_dev = topo == PAIR_B_PORT ? "-device qhca,id=qb,bus=rp0" :
                "-device qhca,id=qb,addr=05.0";
        break;
    case PAIR_B_SWITCH:
        ports = "-global ICH9-LPC.acpi-pci-hotplug-with-bridge-support=off "
                "-device pcie-root-port,id=rp0,chassis=1,addr=06.0 "
                "-device x3130-upstream,id=up0,bus=rp0 "
                "-device xio3130-downstream,id=dp0,bus=up0,chassis=2,slot=0";
        b_dev = "-device qhca,id=qb,bus=dp0";
        break;
    default:
        ports = "";
        b_dev = "-device qhca,id=qb,addr=05.0";
        break;
    }
    g_assert_true(pair_nic || topo != PAIR_B_NIC_PORT);
    if (pair_nic) {
        /* the NICs first: qhca's nic= names a device made before it */
        ea = g_strdup_printf("-device %s,id=nica,netdev=na,romfile=,"
                             "mac=52:54:00:00:00:0a,addr=08.0 "
                             "-device qhca,id=qa,addr=04.0,nic=nica",
                             pair_nic);
        eb = g_strdup_printf("%s -device %s,id=nicb,netdev=nb,romfile=,"
                             "mac=52:54:00:00:00:0b,%s %s,nic=nicb",
                             ports, pair_nic,
                             topo == PAIR_B_NIC_PORT ? "bus=rp0" : "addr=09.0",
                             b_dev);
    } else {
        ea = g_strdup("-device qhca,id=qa,addr=04.0,netdev=na,"
                      "mac=52:54:00:00:00:0a");
        eb = g_strdup_printf("%s %s,netdev=nb,mac=52:54:00:00:00:0b", ports,
                             b_dev);
    }
    if (pair_netdevs) {
        na = g_strdup(pair_netdevs);
        nb = g_strdup("");
    } else {
        na = g_strdup_printf("-netdev socket,id=na,fd=%d", sa[1]);
        nb = g_strdup_printf("-netdev socket,id=nb,fd=%d", sb[1]);
    }
    p->qs = qtest_pc_boot("-machine q35 -nodefaults -m %dM "
                          "%s %s%s %s %s%s %s %s",
                          RAM_SIZE_MB, na, ea, pair_dev_props, nb, eb,
                          pair_dev_props, dump ? dump : "", pair_args);
    close(sa[1]);
    close(sb[1]);
    p->w.fd[0] = sa[0];
    p->w.fd[1] = sb[0];
    p->w.policy = policy;
    for (i = 0; i < 2; i++) {
        p->w.in[i] = g_byte_array_new();
        p->w.last[i] = g_byte_array_new();
    }
    qhca_init(&p->a, p->qs->pcibus, QPCI_DEVFN(4, 0), &p->qs->alloc);
    if (topo == PAIR_B_DIRECT) {
        p->b_devfn = QPCI_DEVFN(5, 0);
    } else if (topo == PAIR_B_NIC_PORT) {
        pair_bridges(p, PAIR_B_PORT);
        p->b_devfn = QPCI_DEVFN(5, 0);
    } else {
        p->b_devfn = pair_bridges(p, topo);
    }
    qhca_init(&p->b, p->qs->pcibus, p->b_devfn, &p->qs->alloc);
    p->a.idle = p->b.idle = wire_pump;
    qhca_enable(&p->a);
    qhca_enable(&p->b);
    cur_wire = &p->w;
}

void pair_start_ex(Pair *p, WirePolicy policy, bool b_on_port)
{
    pair_start_topo(p, policy, b_on_port ? PAIR_B_PORT : PAIR_B_DIRECT);
}

void pair_start(Pair *p, WirePolicy policy)
{
    pair_start_ex(p, policy, false);
}

void pair_stop(Pair *p)
{
    int i;

    cur_wire = NULL;
    for (i = 0; i < 2; i++) {
        QQhca *d = i ? &p->b : &p->a;

        if (d->qts) {
            qhca_uninit(d);
        }
        close(p->w.fd[i]);
        g_byte_array_unref(p->w.in[i]);
        g_byte_array_unref(p->w.last[i]);
    }
    if (p->w.held) {
        g_byte_array_unref(p->w.held);
    }
    g_free(p->port);
    g_free(p->up);
    g_free(p->down);
    qtest_shutdown(p->qs);
}

/* A ring of 2^log entries of 2^stride_log bytes, pages in reverse order */
struct qhca_pbl_desc ring_alloc(QQhca *d, Ring *r, uint32_t log,
                                uint32_t stride_log)
{
    struct qhca_pbl_desc mem;

    g_assert_cmpuint(DIV_ROUND_UP(1u << (log + stride_log), 4096), <=,
                     ARRAY_SIZE(r->page));
    mem = qhca_drv_ring_alloc(&d->qd, r, log, stride_log);
    g_assert_cmpuint(r->npages, >, 0);
    return mem;
}

uint64_t ring_addr(const Ring *r, uint32_t idx)
{
    return qhca_drv_ring_addr(r, idx);
}

/* An MR over pages in reverse order, so translation mistakes show */
uint64_t mr_phys(const Mr *m, uint64_t off)
{
    uint64_t a = m->iova + off;
    uint64_t page = a / 4096 - m->iova / 4096;

    return m->mem + (m->npages - 1 - page) * 4096 + a % 4096;
}

void mr_io(QQhca *d, const Mr *m, uint64_t off, void *buf,
           uint64_t len, bool write)
{
    uint8_t *p = buf;

    while (len) {
        uint64_t n = MIN(len, 4096 - (m->iova + off) % 4096);

        if (write) {
            qtest_memwrite(d->qts, mr_phys(m, off), p, n);
        } else {
            qtest_memread(d->qts, mr_phys(m, off), p, n);
        }
        p += n;
        off += n;
        len -= n;
    }
}

Mr mr_reg(QQhca *d, uint32_t pdn, uint64_t len, uint32_t access,
          uint64_t iova)
{
    struct qhca_pbl_desc mem;
    Mr m = { .iova = iova, .len = len };
    uint64_t pbl, i, n1;

    m.npages = (iova % 4096 + len + 4095) / 4096;
    m.mem = qhca_alloc(d, (uint64_t)m.npages * 4096);
    /* Two-level page lists once one page of entries is not enough */
    n1 = DIV_ROUND_UP(m.npages, 512);
    pbl = qhca_alloc(d, 4096);
    for (i = 0; i < m.npages; i++) {
        uint64_t entry = m.mem + (m.npages - 1 - i) * 4096;

        if (m.npages <= 512) {
            qtest_writeq(d->qts, pbl + 8 * i, entry);
        } else {
            if (i % 512 == 0) {
                qtest_writeq(d->qts, pbl + 8 * (i / 512),
                             qhca_alloc(d, 4096));
            }
            qtest_writeq(d->qts, qtest_readq(d->qts, pbl + 8 * (i / 512)) +
                         8 * (i % 512), entry);
        }
    }
    mem = qhca_pbl(pbl, m.npages);
    mem.levels = n1 > 1 ? 2 : 1;
    g_assert_cmpint(qhca_drv_reg_mr(&d->qd, pdn, access, iova, len, &mem,
                                    &m.key), ==, QHCA_CMD_OK);
    return m;
}

struct qhca_sge sge(const Mr *m, uint64_t off, uint32_t len)
{
    return qhca_drv_sge(m->iova + off, len, m->key);
}

/* One end of a connection: PD, EQ, CQ, QP and its rings */
/*
 * @cq_page0, if not 0, replaces the first page of the CQ ring (the hostile
 * tests aim it at the device's own BAR)
 */
static void end_create_common(End *e, QQhca *d, uint8_t type, uint32_t ip,
                              const uint8_t *mac, bool use_srq,
                              uint64_t cq_page0, uint32_t pdn)
{
    struct qhca_pbl_desc mem;
    struct qhca_cmd_create_qp cq = { 0 };

    memset(e, 0, sizeof(*e));
    e->d = d;
    e->ip = ip;
    e->mac = mac;
    qhca_add_gid(d, 0, ip);
    e->pdn = pdn ? pdn : qhca_mk_pd(d);
    mem = ring_alloc(d, &e->eq, 6, 4);
    g_assert_cmpint(qhca_drv_create_eq(&d->qd, &mem, 6, 1, &e->eqn), ==,
                    QHCA_CMD_OK);
    mem = ring_alloc(d, &e->cq, 11, 5);         /* 2048 CQEs */
    if (cq_page0) {
        e->cq.page[0] = cq_page0;
        qtest_writeq(d->qts, le64_to_cpu(mem.pbl_addr), cq_page0);
    }
    g_assert_cmpint(qhca_drv_create_cq(&d->qd, &mem, 11, e->eqn, &e->cqn),
                    ==, QHCA_CMD_OK);
    e->srqn = QHCA_NO_SRQ;
    if (use_srq) {
        mem = ring_alloc(d, &e->srq, 6, 7);
        g_assert_cmpint(qhca_drv_create_srq(&d->qd, &mem, e->pdn, 6, 7,
                                            &e->srqn), ==, QHCA_CMD_OK);
    }
    cq.type = type;
    cq.sq_log_depth = 7;
    cq.sq_log_stride = 8;       /* 256 bytes: 12 SGEs or 192 inline bytes */
    cq.rq_log_depth = use_srq ? 0 : 8;
    cq.rq_log_stride = 7;       /* 7 SGEs */
    cq.pdn = cpu_to_le32(e->pdn);
    cq.send_cqn = cpu_to_le32(e->cqn);
    cq.recv_cqn = cpu_to_le32(e->cqn);
    cq.srqn = cpu_to_le32(e->srqn);
    cq.max_inline = cpu_to_le32(192);
    cq.sq = ring_alloc(d, &e->sq, 7, 8);
    if (!use_srq) {
        cq.rq = ring_alloc(d, &e->rq, 8, 7);
    }
    e->qpn = qhca_cmd_ok(d, QHCA_CMD_CREATE_QP, &cq, sizeof(cq));
}

void end_create_ex(End *e, QQhca *d, uint8_t type, uint32_t ip,
                   const uint8_t *mac, bool use_srq, uint64_t cq_page0)
{
    end_create_common(e, d, type, ip, mac, use_srq, cq_page0, 0);
}

/* Another QP (with its own CQ) in the PD of @other, on its device */
void end_create_in_pd(End *e, const End *other, uint8_t type)
{
    end_create_common(e, other->d, type, other->ip, other->mac, false, 0,
                      other->pdn);
}

void end_create(End *e, QQhca *d, uint8_t type, uint32_t ip,
                const uint8_t *mac, bool use_srq)
{
    end_create_ex(e, d, type, ip, mac, use_srq, 0);
}

/* An RC end whose CQ ring starts at @cq_page0 */
void end_create_cq_at(End *e, QQhca *d, uint32_t ip,
                      const uint8_t *mac, uint64_t cq_page0)
{
    end_create_ex(e, d, QHCA_QPT_RC, ip, mac, false, cq_page0);
}

void rc_connect_av(End *e, const End *peer, const ConnOpts *o,
                   const struct qhca_qp_attr *av)
{
    struct qhca_qp_attr a = { 0 };

    a.access_flags = cpu_to_le32(o->access);
    a.path_mtu = o->mtu;
    a.dest_qpn = cpu_to_le32(peer->qpn);
    a.rq_psn = cpu_to_le32(o->psn_zero ? 0 : FIRST_PSN + (e->ip & 1));
    a.max_dest_rd_atomic = o->rd_atomic ? o->rd_atomic : 4;
    a.min_rnr_timer = o->min_rnr_timer;
    if (av) {
        a.sgid_index = av->sgid_index;
        a.hop_limit = av->hop_limit;
        a.traffic_class = av->traffic_class;
        a.flow_label = av->flow_label;
        memcpy(a.dgid, av->dgid, 16);
        memcpy(a.dmac, av->dmac, 6);
    } else {
        a.sgid_index = 0;
        a.hop_limit = 64;
        a.dgid[10] = a.dgid[11] = 0xff;
        stl_be_p(&a.dgid[12], peer->ip);
        memcpy(a.dmac, peer->mac, 6);
    }
    a.timeout = o->timeout;
    a.retry_cnt = o->retry_cnt;
    a.rnr_retry = o->rnr_retry;
    a.sq_psn = cpu_to_le32(o->psn_zero ? 0 : FIRST_PSN + (peer->ip & 1));
    a.max_rd_atomic = o->rd_atomic ? o->rd_atomic : 4;
    /* INIT, RTR and RTS, each with its attributes of @a */
    g_assert_cmpint(qhca_drv_qp_connect(&e->d->qd, e->qpn, true, &a), ==,
                    QHCA_CMD_OK);
}

void rc_connect_one(End *e, const End *peer, const ConnOpts *o)
{
    rc_connect_av(e, peer, o, NULL);
}

const ConnOpts rc_default_opts = {
    .mtu = 3, .timeout = 8, .retry_cnt = 7, .rnr_retry = 7,
    .min_rnr_timer = 1, .access = ALL_ACCESS & ~QHCA_ACCESS_LOCAL_WRITE,
};

void rc_pair(Pair *p, End *a, End *b, const ConnOpts *o, bool b_srq)
{
    end_create(a, &p->a, QHCA_QPT_RC, IP_A, mac_a, false);
    end_create(b, &p->b, QHCA_QPT_RC, IP_B, mac_b, b_srq);
    rc_connect_one(a, b, o ? o : &rc_default_opts);
    rc_connect_one(b, a, o ? o : &rc_default_opts);
}

/* The WQEs of the SGEs or inline bytes that fit, and the doorbell */
void post_send(End *e, struct qhca_send_wqe *w,
               const struct qhca_sge *sges, unsigned nsge,
               const void *inl, uint32_t inl_len)
{
    g_assert_true(qhca_drv_put_send(&e->d->qd, &e->sq, e->sq_pi, w, sges,
                                    nsge, inl, inl_len));
    e->sq_pi++;
    qhca_drv_db(&e->d->qd, QHCA_DB_SQ, e->qpn, e->sq_pi);
}

void post_recv(End *e, uint64_t wr_id, const struct qhca_sge *sges,
               unsigned nsge)
{
    bool srq = e->srqn != QHCA_NO_SRQ;
    uint16_t *pi = srq ? &e->srq_pi : &e->rq_pi;

    g_assert_true(qhca_drv_put_recv(&e->d->qd, srq ? &e->srq : &e->rq, *pi,
                                    wr_id, sges, nsge));
    (*pi)++;
    if (srq) {
        qhca_drv_db(&e->d->qd, QHCA_DB_SRQ, e->srqn, *pi);
    } else {
        qhca_drv_db(&e->d->qd, QHCA_DB_RQ, e->qpn, *pi);
    }
}

/* Has the device written CQE @ci of ring @r (pages not contiguous)? */
bool cqe_ready(End *e, uint16_t ci)
{
    return qhca_drv_ring_ready(&e->d->qd, &e->cq, ci,
                               offsetof(struct qhca_cqe, owner));
}

/* Wait for the next CQE, the wire and the clock running, up to 2 s */
bool wait_cqe(End *e)
{
    return qhca_drv_wait_entry(&e->d->qd, ring_addr(&e->cq, e->cq_ci),
                               e->cq.log, e->cq_ci,
                               offsetof(struct qhca_cqe, owner),
                               QHCA_QOS_STEPS);
}

struct qhca_cqe poll_cq(End *e)
{
    struct qhca_cqe c;

    g_assert_true(wait_cqe(e));
    g_assert_true(qhca_drv_poll_cq(&e->d->qd, &e->cq, &e->cq_ci, e->cqn,
                                   &c));
    return c;
}

/* Let the devices and the wire run for @steps, then: is the CQ empty? */
bool cq_idle(End *e, int steps)
{
    int i;

    for (i = 0; i < steps; i++) {
        wire_pump();
        qtest_clock_step(e->d->qts, 10000);
    }
    return !cqe_ready(e, e->cq_ci);
}

void expect_cqe(End *e, uint64_t wr_id, uint8_t status, uint8_t opcode)
{
    struct qhca_cqe c = poll_cq(e);

    g_assert_cmphex(le64_to_cpu(c.wr_id), ==, wr_id);
    g_assert_cmpuint(c.status, ==, status);
    if (status == QHCA_CQE_SUCCESS) {
        g_assert_cmpuint(c.opcode, ==, opcode);
    }
    g_assert_cmpuint(le32_to_cpu(c.qpn), ==, e->qpn);
}

uint8_t qp_state(End *e)
{
    return qhca_query_qp(e->d, e->qpn).qp_state;
}

void fill(uint8_t *buf, size_t len, uint32_t seed)
{
    size_t i;

    for (i = 0; i < len; i++) {
        buf[i] = (uint8_t)(i * 7 + seed + (i >> 8));
    }
}

struct qhca_send_wqe wqe(uint8_t opcode, uint64_t wr_id)
{
    return qhca_drv_wqe(opcode, wr_id);
}

/*
 * Hostile guests and hostile wires: one regression test per defect class
 * closed in the transport engine and the glue (docs/security.md lists them
 * with the check each proves).  Frames are built with the device's own wire
 * library (hw/qhca/qhca-roce.c, linked into this test).
 */

/* A frame on the wire into device @to (0: A, 1: B) */
void inject(Pair *p, int to, const QhcaRoceHdr *h, const void *payload,
            size_t len)
{
    uint8_t buf[9216];
    int n = qhca_roce_build(buf, sizeof(buf), h, payload, len);

    g_assert_cmpint(n, >, 0);
    wire_write(p->w.fd[to], buf, n);
}

/* Headers of a packet of QP @from's connection, to QP @to */
QhcaRoceHdr hdr_from(const End *from, const End *to, uint8_t opcode,
                     uint32_t psn)
{
    QhcaRoceHdr h = { 0 };

    memcpy(h.dst_mac, to->mac, 6);
    memcpy(h.src_mac, from->mac, 6);
    h.src_ip = from->ip;
    h.dst_ip = to->ip;
    h.ttl = 64;
    h.src_port = 0xc123;
    h.pkey = QHCA_ROCE_DEFAULT_PKEY;
    h.opcode = opcode;
    h.dest_qp = to->qpn;
    h.psn = psn & QHCA_ROCE_PSN_MASK;
    return h;
}

/* Let both devices and the wire run for @steps without moving the clock */
void settle(Pair *p, int steps)
{
    int i;

    for (i = 0; i < steps; i++) {
        wire_pump();
        qhca_rd(&p->a, QHCA_REG_STATUS);
        qhca_rd(&p->b, QHCA_REG_STATUS);
    }
}

/* Aim MSI-X vector @vec of @d at guest-physical @addr, data @val */
void msix_aim(QQhca *d, unsigned vec, uint64_t addr, uint32_t val)
{
    QPCIDevice *dev = &d->dev;
    uint64_t off = dev->msix_table_off + vec * PCI_MSIX_ENTRY_SIZE;

    if (!dev->msix_enabled) {
        qpci_msix_enable(dev);
    }
    qpci_io_writel(dev, dev->msix_table_bar, off + PCI_MSIX_ENTRY_LOWER_ADDR,
                   addr);
    qpci_io_writel(dev, dev->msix_table_bar, off + PCI_MSIX_ENTRY_UPPER_ADDR,
                   addr >> 32);
    qpci_io_writel(dev, dev->msix_table_bar, off + PCI_MSIX_ENTRY_DATA, val);
    qpci_io_writel(dev, dev->msix_table_bar, off + PCI_MSIX_ENTRY_VECTOR_CTRL,
                   0);
}

/* Aim MSI-X vector @vec of @d at its own register @reg, data @val */
void msix_aim_at_self(QQhca *d, unsigned vec, uint32_t reg,
                      uint32_t val)
{
    msix_aim(d, vec, d->reg.addr + reg, val);
}

/*
 * Turn on q35's ECAM (MMCONFIG) window at its usual address, as firmware
 * does: PCIEXBAR in the host bridge's configuration space, 256 buses
 */
uint64_t ecam_enable(Pair *p)
{
    QPCIDevice *host = qpci_device_find(p->qs->pcibus, QPCI_DEVFN(0, 0));

    g_assert_nonnull(host);
    qpci_config_writel(host, PAIR_PCIEXBAR + 4, 0);
    qpci_config_writel(host, PAIR_PCIEXBAR, PAIR_ECAM_BASE | 1);
    /* the window answers: the host bridge's IDs through it */
    g_assert_cmphex(qtest_readl(p->qs->qts, PAIR_ECAM_BASE), ==,
                    qpci_config_readl(host, PCI_VENDOR_ID));
    g_free(host);
    return PAIR_ECAM_BASE;
}

/* The ECAM address of register @reg of the function at libqos @devfn */
uint64_t ecam_addr(QPCIDevice *dev, uint32_t reg)
{
    return PAIR_ECAM_BASE + ((uint64_t)dev->devfn << 12) + reg;
}

/* Take UD QP @e RESET -> INIT (Q_Key @qkey) -> RTR, and to RTS if @rts */
void ud_up(End *e, uint32_t qkey, bool rts)
{
    g_assert_cmpint(qhca_drv_qp_ud_up(&e->d->qd, e->qpn, qkey, 0, rts), ==,
                    QHCA_CMD_OK);
}

/* Wait for the DEVICE_DELETED event of device @id */
void wait_device_deleted(QTestState *qts, const char *id)
{
    for (;;) {
        QDict *resp = qtest_qmp_eventwait_ref(qts, "DEVICE_DELETED");
        QDict *data = qdict_get_qdict(resp, "data");
        bool found = data && qdict_haskey(data, "device") &&
                     !strcmp(qdict_get_str(data, "device"), id);

        qobject_unref(resp);
        if (found) {
            return;
        }
    }
}

/* An AH of @e's to the device at @ip, @mac (IPv4, hop limit 64) */
uint32_t ud_ah(End *e, uint32_t ip, const uint8_t *mac)
{
    uint8_t gid[16];
    uint32_t ahn = 0;

    qhca_drv_gid_ipv4(gid, ip);
    g_assert_cmpint(qhca_drv_create_ah(&e->d->qd, e->pdn, 0, gid, mac, &ahn),
                    ==, QHCA_CMD_OK);
    return ahn;
}

/* A UD send WQE to QP @qpn (Q_Key @qkey) through AH @ahn */
struct qhca_send_wqe ud_wqe(uint8_t opcode, uint64_t wr_id, uint32_t ahn,
                            uint32_t qpn, uint32_t qkey)
{
    struct qhca_send_wqe w = wqe(opcode, wr_id);

    w.ud.ahn = cpu_to_le32(ahn);
    w.ud.remote_qpn = cpu_to_le32(qpn);
    w.ud.remote_qkey = cpu_to_le32(qkey);
    return w;
}

uint64_t stat_of(const uint64_t *v, unsigned i)
{
    return v[i];
}

/* QUERY_STATS from counter @first on, into @v[first...]; its count */
unsigned query_stats(QQhca *d, uint32_t first, uint64_t *v)
{
    struct qhca_cmd_query_stats q = { .first = cpu_to_le32(first) };
    qhca_le64 raw[QHCA_STAT_NUM];
    uint32_t n;
    unsigned i;

    g_assert_cmpint(qhca_cmd_post(d, QHCA_CMD_QUERY_STATS, &q, sizeof(q), &n),
                    ==, QHCA_CMD_OK);
    qtest_memread(d->qts, d->qd.resp, raw, (QHCA_STAT_NUM - first) * 8);
    for (i = first; i < QHCA_STAT_NUM; i++) {
        v[i] = le64_to_cpu(raw[i - first]);
    }
    return n;
}

/* The link-local GID the kernel derives from @mac */
void gid6_of(uint8_t *g, const uint8_t *mac)
{
    static const uint8_t ll[16] = { 0xfe, 0x80, [8] = 0x50, 0x54, 0x00,
                                    0xff, 0xfe };

    memcpy(g, ll, 16);
    g[13] = mac[3];
    g[14] = mac[4];
    g[15] = mac[5];
}

/* ADD_GID of @gid at @index: its status */
int add_gid_raw(QQhca *d, uint32_t index, const uint8_t *gid)
{
    struct qhca_cmd_gid g = { .index = cpu_to_le32(index) };

    memcpy(g.gid, gid, 16);
    return qhca_cmd_post(d, QHCA_CMD_ADD_GID, &g, sizeof(g), NULL);
}

/* @e's device's link-local GID at GID6_INDEX */
void add_gid6(End *e)
{
    uint8_t g[16];

    gid6_of(g, e->mac);
    g_assert_cmpint(add_gid_raw(e->d, GID6_INDEX, g), ==, QHCA_CMD_OK);
}
