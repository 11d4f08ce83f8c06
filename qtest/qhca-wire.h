/*
 * Two qhca devices in one QEMU on a wire the test controls, and what tests
 * of the transport between them need: rings, memory regions, connected QPs,
 * posting and polling, frames built and injected by the test.  Used by
 * the transport, faults and teardown qtests (plain qtests on q35: the qos
 * graph has no machine with two of a device); each device is driven through
 * the libqos driver (libqos/qhca.h), and what these helpers do to it
 * (rings, objects, QP states, WQEs, CQEs) is the mini-driver the qtests
 * share with the host harness (qhca-drv.h): they assert what it reports.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef QHCA_WIRE_H
#define QHCA_WIRE_H

#include "libqos/libqos-pc.h"
#include "libqos/qhca.h"
#include "hw/qhca/qhca-roce.h"

#define RAM_SIZE_MB     512
#define IP_A            0xc6120001      /* 198.18.0.1 */
#define IP_B            0xc6120002      /* 198.18.0.2 */
#define IP_EVIL         0x06060606      /* 6.6.6.6: on no QP's path */
#define FIRST_PSN       0xfffff0        /* rc_connect_one(): both ways */
#define PAIR_PORT_DEVFN QPCI_DEVFN(6, 0) /* pair_start_ex(): B's root port */
/* pair_start_topo(): behind the root port, bus 1; with a switch, 3 */
#define PAIR_B_PORT_DEVFN   QPCI_DEVFN(1 << 5, 0)
#define PAIR_UP_DEVFN       QPCI_DEVFN(1 << 5, 0)
#define PAIR_DOWN_DEVFN     QPCI_DEVFN(2 << 5, 0)
#define PAIR_B_SWITCH_DEVFN QPCI_DEVFN(3 << 5, 0)
/* q35's ECAM window as firmware places it (ecam_enable()) */
#define PAIR_PCIEXBAR       0x60
#define PAIR_ECAM_BASE      0xb0000000ULL

/*
 * Over IPv6, each device has the link-local GID the kernel derives from
 * its MAC (fe80::5054:ff:fe00:n for 52:54:00:00:00:n) at GID6_INDEX
 * (add_gid6()), beside the IPv4 GID end_create() puts at index 0
 */
#define GID6_INDEX  1

#define ALL_ACCESS  (QHCA_ACCESS_LOCAL_WRITE | QHCA_ACCESS_REMOTE_WRITE | \
                     QHCA_ACCESS_REMOTE_READ | QHCA_ACCESS_REMOTE_ATOMIC)

typedef enum WirePolicy {
    WIRE_PASS,
    WIRE_DROP_EVERY_5,
    WIRE_DROP_RANDOM,           /* 15%, seeded by the test's random seed */
    WIRE_DUP,
    WIRE_REORDER,
    WIRE_BLACKHOLE,
} WirePolicy;

typedef struct Wire {
    int fd[2];                  /* the test's ends: device A, device B */
    WirePolicy policy;
    unsigned frames;            /* frames relayed or dropped */
    unsigned dropped;
    GByteArray *in[2];          /* partial input from each device */
    GByteArray *held;           /* reorder: a frame waiting for the next */
    int held_to;
    GByteArray *last[2];        /* the last frame each device sent */
} Wire;

/* A ring in guest memory, pages in reverse order (the mini-driver's) */
typedef QhcaDrvRing Ring;

typedef struct Mr {
    uint32_t key;
    uint64_t iova;
    uint64_t len;
    uint64_t mem;               /* the pages, contiguous but reversed */
    uint32_t npages;
} Mr;

typedef struct End {
    QQhca *d;
    uint32_t pdn, eqn, cqn, qpn, srqn;
    Ring cq, sq, rq, srq, eq;
    uint16_t cq_ci, sq_pi, rq_pi, srq_pi, eq_ci;
    uint32_t ip;
    const uint8_t *mac;
} End;

typedef struct ConnOpts {
    uint8_t mtu;                /* IB enum, 1..5 */
    uint8_t timeout;
    uint8_t retry_cnt;
    uint8_t rnr_retry;
    uint8_t min_rnr_timer;
    uint32_t access;
    uint8_t rd_atomic;          /* max_(dest_)rd_atomic; 0: 4 */
    bool psn_zero;              /* PSNs from 0, not FIRST_PSN (wrapping) */
} ConnOpts;

/* Where device B sits */
typedef enum PairTopo {
    PAIR_B_DIRECT,              /* on the root bus, 05.0 */
    PAIR_B_PORT,                /* behind root port rp0 */
    PAIR_B_SWITCH,              /* rp0, upstream port up0, downstream dp0 */
    PAIR_B_NIC_PORT,            /* B direct, its NIC (pair_nic) behind rp0 */
} PairTopo;

typedef struct Pair {
    QOSState *qs;
    QQhca a, b;
    QPCIDevice *port;           /* B's root port, if B is behind one */
    QPCIDevice *up, *down;      /* the switch's ports (PAIR_B_SWITCH) */
    int b_devfn;
    uint64_t b_mmio;            /* where B's BARs are mapped from */
    Wire w;
} Pair;

extern const uint8_t mac_a[6];
extern const uint8_t mac_b[6];
extern const ConnOpts rc_default_opts;
/* More properties for both devices of the next pair_start(), e.g. ",a=b" */
extern const char *pair_dev_props;
/*
 * NULL: each device has its own netdev (netdev=na, nb).  A NIC model
 * ("virtio-net-pci", "rtl8139"): each device shares the backend of a NIC of
 * that model instead (nic=nica, nicb; the NICs at 08.0 and 09.0 have the
 * devices' MACs), as -device qhca,nic=ID does
 */
extern const char *pair_nic;
/* More arguments for the next pair_start()'s QEMU, e.g. "-object ..." */
extern const char *pair_args;
/*
 * NULL: the devices' netdevs (na, nb) are sockets to the test's wire.
 * Otherwise the -netdev options that make na and nb instead, e.g. two
 * dgram netdevs joined to each other: then the test's wire carries nothing
 * (WIRE_PASS only) and the devices' frames go through those netdevs
 */
extern const char *pair_netdevs;

/*
 * Start QEMU with devices A and B on the wire, both enabled; the devices'
 * ids are "qa" and "qb".  With @b_on_port, B sits behind a PCIe root port
 * (id "rp0", at PAIR_PORT_DEVFN, native PCIe hotplug) and can be unplugged.
 */
void pair_start_ex(Pair *p, WirePolicy policy, bool b_on_port);
void pair_start_topo(Pair *p, WirePolicy policy, PairTopo topo);
void pair_start(Pair *p, WirePolicy policy);
void pair_stop(Pair *p);

void wire_write(int fd, const uint8_t *buf, uint32_t len);
void wire_pump(void);
struct qhca_pbl_desc ring_alloc(QQhca *d, Ring *r, uint32_t log,
                                uint32_t stride_log);
uint64_t ring_addr(const Ring *r, uint32_t idx);
uint64_t mr_phys(const Mr *m, uint64_t off);
void mr_io(QQhca *d, const Mr *m, uint64_t off, void *buf,
           uint64_t len, bool write);
Mr mr_reg(QQhca *d, uint32_t pdn, uint64_t len, uint32_t access,
          uint64_t iova);
struct qhca_sge sge(const Mr *m, uint64_t off, uint32_t len);
void end_create_ex(End *e, QQhca *d, uint8_t type, uint32_t ip,
                   const uint8_t *mac, bool use_srq, uint64_t cq_page0);
void end_create_in_pd(End *e, const End *other, uint8_t type);
void end_create(End *e, QQhca *d, uint8_t type, uint32_t ip,
                const uint8_t *mac, bool use_srq);
void end_create_cq_at(End *e, QQhca *d, uint32_t ip,
                      const uint8_t *mac, uint64_t cq_page0);
void rc_connect_one(End *e, const End *peer, const ConnOpts *o);
/* The same with the path of @av (its GRH fields, dgid and dmac), not IPv4 */
void rc_connect_av(End *e, const End *peer, const ConnOpts *o,
                   const struct qhca_qp_attr *av);
void rc_pair(Pair *p, End *a, End *b, const ConnOpts *o, bool b_srq);
void post_send(End *e, struct qhca_send_wqe *w,
               const struct qhca_sge *sges, unsigned nsge,
               const void *inl, uint32_t inl_len);
void post_recv(End *e, uint64_t wr_id, const struct qhca_sge *sges,
               unsigned nsge);
bool cqe_ready(End *e, uint16_t ci);
bool wait_cqe(End *e);
struct qhca_cqe poll_cq(End *e);
bool cq_idle(End *e, int steps);
void expect_cqe(End *e, uint64_t wr_id, uint8_t status, uint8_t opcode);
uint8_t qp_state(End *e);
void fill(uint8_t *buf, size_t len, uint32_t seed);
struct qhca_send_wqe wqe(uint8_t opcode, uint64_t wr_id);
void inject(Pair *p, int to, const QhcaRoceHdr *h, const void *payload,
            size_t len);
QhcaRoceHdr hdr_from(const End *from, const End *to, uint8_t opcode,
                     uint32_t psn);
void settle(Pair *p, int steps);
void msix_aim(QQhca *d, unsigned vec, uint64_t addr, uint32_t val);
void msix_aim_at_self(QQhca *d, unsigned vec, uint32_t reg,
                      uint32_t val);
void ud_up(End *e, uint32_t qkey, bool rts);
uint32_t ud_ah(End *e, uint32_t ip, const uint8_t *mac);
void wait_device_deleted(QTestState *qts, const char *id);
struct qhca_send_wqe ud_wqe(uint8_t opcode, uint64_t wr_id, uint32_t ahn,
                            uint32_t qpn, uint32_t qkey);
/* QUERY_STATS: the device's counters from @first on, in @v[first...] */
uint64_t stat_of(const uint64_t *v, unsigned i);
unsigned query_stats(QQhca *d, uint32_t first, uint64_t *v);
void gid6_of(uint8_t *g, const uint8_t *mac);
int add_gid_raw(QQhca *d, uint32_t index, const uint8_t *gid);
void add_gid6(End *e);
/* Turn q35's ECAM window on; its base */
uint64_t ecam_enable(Pair *p);
uint64_t ecam_addr(QPCIDevice *dev, uint32_t reg);

#endif
