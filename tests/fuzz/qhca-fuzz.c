/*
 * libFuzzer target for the qhca device logic: two devices on the harness's
 * in-process wire (tests/harness/), each input starting from a freshly set
 * up pair (hx_pair_setup(): on each device GID 0 its IPv4 address and GID
 * 1 its IPv6 one, a PD, EQ, CQ, SRQ, a 4 MiB MR, a fast-register MR, AHs
 * to the peer's IPv4 and IPv6 GIDs, an RC QP with its own RQ and one on
 * the SRQ, both connected to the peer's over IPv4, a UD QP in RTS, and a
 * UC QP with its own RQ and one on the SRQ, both connected to the
 * peer's).  The harness aborts on a DMA outside what the guest granted,
 * on too many frames from one call into a device, and on a bottom half
 * that spins; the sanitizers do the rest; both devices are torn down after
 * each input, so LeakSanitizer sees their leaks.
 *
 * Input format
 * ------------
 * A sequence of operations, run until the input ends, or 8000 iterations
 * of the main loop or 500 ms of virtual time have passed.  Each is a tag
 * byte, whose value modulo FZ_OP_COUNT picks the operation, and then the
 * operation's fixed-size arguments (the packed Fz* structures below,
 * little-endian), and for some a variable part whose length is one of the
 * arguments (cut short at the end of the input).  An input that ends
 * inside the fixed part of an operation ends before it.  Selectors:
 *
 *   dev     bit 0: device A (0) or B (1)
 *   qp      < 16: the driver's QP table of that device (0 RC with RQ, 1 RC
 *           on the SRQ, 2 UD, 3 UC with RQ, 4 UC on the SRQ, then QPs made
 *           by CMD; an empty slot is slot % 3), else a raw QP number
 *   key     bits 1:0: 0 the MR's key, 1 the fast-register MR's key, 2 the
 *           MR's key with another index, 3 a raw key (sel << 8 | 0x11)
 *
 * Operations (tag % FZ_OP_COUNT):
 *
 *    0 PUMP        run the main loop for steps + 1 iterations
 *    1 ADVANCE     move the virtual clock by 2^(exp % 36) ns, firing timers
 *    2 SETTLE      run until idle (at most ms + 1 ms of virtual time),
 *                  consuming CQEs and events on both devices
 *    3 REG_WRITE   MMIO write of val to BAR0 offset off & 0xffc
 *    4 REG_READ    MMIO read of BAR0 offset off & 0xffc
 *    5 DB_WRITE    doorbell write: page, offset off & 0xfc, val
 *    6 CMD         a command: opcode, len bytes of payload after the
 *                  header; fix bit 0 allocates the memory its page lists
 *                  describe (from the geometry in the payload) and, for
 *                  CREATE_QP, enters the QP in the driver's table; fix bit 1
 *                  puts the driver's PD, CQ, EQ and SRQ numbers in it; fix
 *                  bits 4:2 make the header bad: 1 flags set, 2 a response
 *                  buffer crossing a page, 3 one where there is no RAM, 4 a
 *                  response buffer of 0 bytes, 5 one on the command queue,
 *                  6 flags and a response at 0 of any length, 7 one that
 *                  ends past the end of RAM
 *    7 SEND        a send WQE on qp's SQ: opcode, flags, up to 3 SGEs into
 *                  the MR (offset, length, key), inline data (a pattern),
 *                  remote offset and rkey into the peer's MR, atomic
 *                  operands, immediate (also the wr_id); rings the SQ
 *                  doorbell unless nodb; FLUSH takes its FETH from the
 *                  high half of swap; BIND_MW binds the window of the last
 *                  ALLOC_MW to the MR of rkey at remote, length add, rights
 *                  swap & 0x3f, new key variant imm; rkey 0x7f is that
 *                  window's key.  On UD, rkey picks the AH: 1 the
 *                  one to the peer's IPv6 GID, 2 the last AH a good AV
 *                  op made (if any), 3 the group AH the last MCAST with
 *                  flags & 16 made (if any; DestQP 0xFFFFFF), else and
 *                  0 the IPv4 one, >= 4 a raw AH number
 *    8 RECV        a receive WQE wr_id for qp (its RQ, or the SRQ)
 *    9 WQE_RAW     len raw bytes at byte off of SQ (which 0) or RQ/SRQ
 *                  slot (driver's producer index + slot), no doorbell:
 *                  rewrites WQEs in flight
 *   10 DB_QP       SQ/RQ doorbell of qp: mode 0 the driver's index, 1 the
 *                  driver's index + (int16)val, 2 val, 3 the driver's index
 *                  advanced by val % 64 first (posting whatever is there)
 *   11 FRAME_RAW   len raw bytes onto the wire to device to & 1; with
 *                  to & 2, Ethernet addresses made right
 *   12 FRAME       a well-formed RoCEv2 frame (right ICRC) from the peer to
 *                  device to & 1: BTH opcode, dest qp, PSN (psn_mode 0 the
 *                  raw psn, 1 the peer's last PSN to that QP + 1 + psn,
 *                  2 the target's last PSN from that QP + psn), extension
 *                  headers from the other fields (the FETH: compare's low
 *                  32 bits), plen payload bytes;
 *                  flags: 1 SE, 2 AckReq, 4 source IP 6.6.6.6, 8 bad ICRC,
 *                  16 raw va (not an offset into the target's MR), 32 wrong
 *                  P_Key
 *   13 WIRE_MUTATE frame idx in flight: drop, duplicate, flip a byte (xor
 *                  val | 1 at pos), truncate to pos, move to the tail, or
 *                  drop everything in flight (action % 6)
 *   14 WIRE_MODE   what the wire does to from's frames from now on: pass,
 *                  drop every n-th, duplicate every n-th, drop all, swap
 *                  pairs, drop one in n at random (mode % 6, n = every;
 *                  frames are counted in both directions together)
 *   15 RESET       kind % 3: CTRL.RESET; a system reset; CTRL.RESET and
 *                  the driver's whole setup again, reconnected to the peer
 *   16 MSIX        vector's MSI-X message: kind % 5: to the APIC (an
 *                  ordinary interrupt), to BAR0 + off (a register write of
 *                  data, e.g. CTRL = RESET, made from inside the interrupt),
 *                  to BAR2 + off (a doorbell), to RAM at off, to the root
 *                  port's configuration at off (HX_PORT_ADDR: data with
 *                  HX_PORT_BRCTL_SBR at HX_PORT_BRCTL is a bus reset,
 *                  HX_PORT_SLTCTL_OFF at HX_PORT_SLTCTL an unplug, both
 *                  from inside the interrupt); DMA reaches the port too,
 *                  at any address a command or WQE names
 *   17 LINK        the port's link up or down
 *   18 POLL        consume up to max CQEs and the EQs; arm bits: 1 CQ, 2 CQ
 *                  solicited, 4 EQ, 8 async EQ, 16 command completions
 *   19 MEM_WRITE   len bytes into guest RAM: region % 4: the MR, the ring
 *                  area, anywhere, the fast-register page list
 *   20 EXPECT_CQE  wait up to ms + 1 ms (at most 10 ms unless strict) for
 *                  the CQE of (qp, wr_id); with QHCA_FUZZ_STRICT=1 its
 *                  absence, or a status other than status (0xff: any),
 *                  aborts (the seed corpus checks itself this way)
 *   21 EXPECT_QP   QUERY_QP; with QHCA_FUZZ_STRICT=1 a state other than
 *                  state aborts
 *   22 CONNECT     reconnect RC pair qp & 1 with the given path MTU,
 *                  timeout, retry counts, RNR timer, max_rd_atomic, access
 *                  and start PSN; with qp & 2, loopback on device
 *                  (qp >> 2) & 1 instead: its QPs 0 and 1 connected to
 *                  each other, and its UD sends to its own address and UD
 *                  QP from now on.  With qp & 8 the same for the UC QPs
 *                  (3 and 4; UC takes only MTU, access and PSN): pair
 *                  3 + (qp & 1), or loopback (3 and 4 of one device).
 *                  With qp & 16 over IPv6 (GID 1 to the peer's GID 1),
 *                  traffic class psn >> 24, flow label from the PSN; a
 *                  loopback makes AHs to its own IPv4 and IPv6 GIDs
 *   23 QUERY       a query command (which % 4): QUERY_STATS from first =
 *                  arg; QUERY_QP_STATE of qp arg (< 16: the QP table, else
 *                  a raw number); QUERY_CQ of arg (0: the driver's CQ, else
 *                  a raw number); QUERY_SRQ of arg (0: the driver's SRQ).
 *                  The response goes where resp % 8 says, at off: 0 the
 *                  driver's response page (off % 4096, so it may cross the
 *                  page), 1 BAR0, 2 BAR2, 3 no RAM, 4 the end of RAM, 5 the
 *                  command queue, 6 the CQ ring, 7 the MR; len bytes.  With
 *                  QHCA_FUZZ_STRICT=1 a status other than status (0xff:
 *                  any) aborts, and so does, in the response page, a byte
 *                  written outside the min(len, size) bytes at off, a
 *                  byte written by a failed command, a result of
 *                  QUERY_STATS other than QHCA_STAT_NUM, a counter smaller
 *                  than the same device's counter read before, and a
 *                  QUERY_QP_STATE of a table QP whose type is not the
 *                  table's or (UC, UD) with bytes in flight or READs
 *                  outstanding
 *   24 FRAME6      FRAME's fields (an FzFrame), then an FzIp6: the same
 *                  frame over IPv6 (from the peer's GID 1 to the target's)
 *                  with traffic class tclass and flow label flow; src and
 *                  dst % 8 replace the addresses (addr6_sel(): 0 the right
 *                  one, 1 IPv4-mapped, 2 multicast ff02::val, 3 ::, 4 ::1,
 *                  5 another host on the subnet, 6 the other device's, 7
 *                  fe80::val), flags & 4 spoofs the source; ICRC and UDP
 *                  checksum are made right after that, then mangle % 8: 1
 *                  next header = val, 2 payload length = val, 3 UDP
 *                  checksum = val, 4 a wrong UDP checksum, 5 hop limit
 *                  val, 6 cut to val bytes, 7 IP version val >> 4; flags
 *                  & 8 a bad ICRC
 *   25 GID         ADD_GID (del & 1: DEL_GID) at index: kind % 16 < 8 an
 *                  addr6_sel() address of the device (lo the val), else
 *                  the raw 16 bytes hi, lo
 *   26 AV          an address vector: source GID index sgid, destination
 *                  addr6_sel(dgid) of the peer (0 its IPv6 GID, 1 its
 *                  IPv4 one, ... 6 our own), traffic class, flow label,
 *                  hop limit val >> 8; which & 1 = 0: qp (driver's table)
 *                  taken RESET -> INIT -> RTR with it, and to RTS if RTR
 *                  worked; 1: CREATE_AH
 *   27 REREG       REREG_MR of key (key selector) with what, pd (0 the
 *                  driver's), access, and for a translation iova (the
 *                  MR's + iova), length and mem % 8 (op_rereg()); a good
 *                  one of the driver's MR moves the driver's view
 *   28 RESIZE      RESIZE_CQ of cq % 4 (the driver's CQ, the next CQ
 *                  number, arg, 0) to 2^log entries in mem % 8
 *                  (op_resize()); a good one of the driver's CQ moves the
 *                  driver to the new ring at index 0.  With cq & 4
 *                  RESIZE_SRQ of the driver's SRQ (the next SRQ number,
 *                  arg, 0) instead, cq & 8 a reserved byte set; a good one
 *                  of the driver's SRQ moves the driver's SRQ ring, its
 *                  producer index unchanged
 *   29 MCAST       ATTACH_MCAST (flags & 1: DETACH_MCAST) of qp to the
 *                  group group_gid(group, val) (IPv4-mapped 224/4, IPv6
 *                  ff00::/8, or hostile: just outside 224/4, unicast,
 *                  ::, IPv4-compatible); flags & 2 a new UD QP in RTS
 *                  (table slot 5 on; on the SRQ with flags & 4), 8 a
 *                  reserved field not 0, 16 a CREATE_AH to the group
 *                  (SEND rkey 3), 32 count more new UD QPs in RESET to
 *                  the group, else count more groups val + n (op_mcast())
 *   30 MFRAME      FRAME's fields (an FzFrame), then an FzMframe: the
 *                  frame to a group of the target (group_gid(group,
 *                  val), IPv6 unless IPv4-mapped) with the group's MAC
 *                  or its own, another group's, broadcast (mac % 4),
 *                  DestQP 0xFFFFFF or not (dqp % 4), a unicast or
 *                  multicast source (src % 4) (op_mframe())
 *                  GID, AV, REREG, RESIZE and MCAST check their command's
 *                  status against status (0xff: any) under
 *                  QHCA_FUZZ_STRICT=1
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "harness.h"
#include "qhca-roce.h"
#include "fuzz-entry.h"
#include <sanitizer/common_interface_defs.h>

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
#define STEP_LIMIT      8000
#define TIME_LIMIT      (500LL * 1000 * 1000)   /* virtual ns */
#define MS              (1000 * 1000)

typedef struct Fz {
    const uint8_t *p;
    size_t n;
} Fz;

static HxPair pair;
static bool strict;
static bool ready;
/* per device: the fast-register page list and its pages */
static uint64_t frmr_pbl[2];
/* per device: the AH the last good AV operation made (0: none) */
static uint32_t av_ahn[2];
/* per device: the AH to a group the last MCAST with flags & 16 made */
static uint32_t mcast_ahn[2];
/*
 * per device: the window the last good ALLOC_MW (a CMD op) made, with the
 * key the last BIND_MW SEND op gave it (0: none); rkey selector 0x7f
 */
static uint32_t mw_key[2];
/* per device: the counters QUERY_STATS returned last (strict checks) */
static uint64_t stats_seen[2][QHCA_STAT_NUM];

static bool take(Fz *f, void *out, size_t len)
{
    if (f->n < len) {
        f->n = 0;
        return false;
    }
    memcpy(out, f->p, len);
    f->p += len;
    f->n -= len;
    return true;
}

static const uint8_t *take_var(Fz *f, size_t *len)
{
    const uint8_t *p = f->p;

    *len = MIN(*len, f->n);
    f->p += *len;
    f->n -= *len;
    return p;
}

static void strict_fail(const char *fmt, ...) G_GNUC_PRINTF(1, 2);

static void strict_fail(const char *fmt, ...)
{
    va_list ap;

    if (!strict) {
        return;
    }
    fprintf(stderr, "==qhca-fuzz== expectation failed: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    abort();
}

static HxDev *dev_sel(uint8_t sel)
{
    return &pair.dev[sel & 1];
}

static HxDev *peer_of(HxDev *d)
{
    return &pair.dev[!d->idx];
}

/*
 * Take an operation's arguments, whose first byte selects the device: that
 * device if its driver has it up, else NULL
 */
static HxDev *take_dev_up(Fz *f, void *args, size_t len)
{
    HxDev *d;

    if (!take(f, args, len)) {
        return NULL;
    }
    d = dev_sel(*(uint8_t *)args);
    return d->drv.up ? d : NULL;
}

/*
 * Pages software has no business giving a device as memory: BAR0 and
 * BAR2 in turn (bars), or the four pages of the command queues, the
 * async EQ and the response page
 */
static uint64_t hostile_page(bool bars, uint32_t i)
{
    if (bars) {
        return (i & 1) ? HX_DB_BAR_ADDR : HX_REG_BAR_ADDR;
    }
    return HX_CTRL_BASE + (i % 4) * QHCA_PAGE_SIZE;
}

static uint32_t qpn_sel(HxDev *d, uint8_t sel)
{
    HxQp *qp;

    if (sel >= HX_MAX_QPS) {
        return sel;
    }
    qp = hx_drv_qp(d, sel);
    return qp ? qp->qpn : sel;
}

static uint32_t key_sel(HxDev *d, uint8_t sel)
{
    if (sel == 0x7f && mw_key[d->idx]) {
        return mw_key[d->idx];
    }
    switch (sel & 3) {
    case 0:
        return d->drv.mr.key;
    case 1:
        return d->drv.frmr_key;
    case 2:
        return d->drv.mr.key ^ (1u << QHCA_KEY_INDEX_SHIFT);
    default:
        return (uint32_t)sel << QHCA_KEY_INDEX_SHIFT | 0x11;
    }
}

static uint64_t key_iova(HxDev *d, uint8_t sel)
{
    return (sel & 3) == 1 ? FRMR_IOVA : d->drv.mr.iova;
}

static void fill_sges(HxDev *d, const FzSge *in, struct qhca_sge *out)
{
    unsigned i;

    for (i = 0; i < 3; i++) {
        out[i].addr = cpu_to_le64(key_iova(d, in[i].key) +
                                  le32_to_cpu(in[i].off));
        out[i].length = in[i].len;
        out[i].lkey = cpu_to_le32(key_sel(d, in[i].key));
    }
}

/* The fast-register MR's page list, made once per setup */
static void frmr_setup(HxDev *d)
{
    uint64_t pages[FRMR_PAGES];
    uint64_t mem = hx_alloc_data(d, FRMR_PAGES * QHCA_PAGE_SIZE);
    unsigned i;

    for (i = 0; i < FRMR_PAGES; i++) {
        pages[i] = mem + (uint64_t)(FRMR_PAGES - 1 - i) * QHCA_PAGE_SIZE;
    }
    frmr_pbl[d->idx] = le64_to_cpu(hx_pbl(d, pages, FRMR_PAGES,
                                          QHCA_PAGE_SHIFT).pbl_addr);
}

static bool setup(void)
{
    int i;

    if (!hx_pair_setup(&pair)) {
        return false;
    }
    for (i = 0; i < 2; i++) {
        frmr_setup(&pair.dev[i]);
    }
    memset(stats_seen, 0, sizeof(stats_seen));
    memset(av_ahn, 0, sizeof(av_ahn));
    memset(mcast_ahn, 0, sizeof(mcast_ahn));
    memset(mw_key, 0, sizeof(mw_key));
    return true;
}

/*
 * Operations
 */

static void op_cmd(Fz *f)
{
    FzCmd a;
    struct qhca_cmd c;
    HxDev *d;
    const uint8_t *pl;
    size_t len;
    HxRing sq = { 0 }, rq = { 0 }, ring = { 0 };
    uint32_t result = 0;
    int st;

    if (!take(f, &a, sizeof(a))) {
        return;
    }
    d = dev_sel(a.dev);
    len = MIN(a.len, sizeof(c.raw));
    pl = take_var(f, &len);
    memset(&c, 0, sizeof(c));
    memcpy(c.raw, pl, len);

    if (a.fix & 2) {
        switch (a.opcode) {
        case QHCA_CMD_CREATE_CQ:
            c.create_cq.eqn = cpu_to_le32(d->drv.eqn);
            break;
        case QHCA_CMD_CREATE_QP:
            c.create_qp.pdn = cpu_to_le32(d->drv.pdn);
            c.create_qp.send_cqn = cpu_to_le32(d->drv.cqn);
            c.create_qp.recv_cqn = cpu_to_le32(d->drv.cqn);
            if (le32_to_cpu(c.create_qp.srqn) != QHCA_NO_SRQ) {
                c.create_qp.srqn = cpu_to_le32((c.create_qp.srqn & 1) ?
                                               d->drv.srqn : QHCA_NO_SRQ);
            }
            break;
        case QHCA_CMD_REG_MR:
            c.reg_mr.pdn = cpu_to_le32(d->drv.pdn);
            break;
        case QHCA_CMD_ALLOC_MR:
            c.alloc_mr.pdn = cpu_to_le32(d->drv.pdn);
            break;
        case QHCA_CMD_CREATE_SRQ:
            c.create_srq.pdn = cpu_to_le32(d->drv.pdn);
            break;
        case QHCA_CMD_CREATE_AH:
            c.create_ah.pdn = cpu_to_le32(d->drv.pdn);
            break;
        }
    }
    if (a.fix & 1) {
        switch (a.opcode) {
        case QHCA_CMD_CREATE_EQ:
            c.create_eq.mem = hx_ring_alloc(d, &ring,
                                            MIN(c.create_eq.log_depth, 15),
                                            4);
            break;
        case QHCA_CMD_CREATE_CQ:
            c.create_cq.mem = hx_ring_alloc(d, &ring,
                                            MIN(c.create_cq.log_depth, 15),
                                            5);
            break;
        case QHCA_CMD_CREATE_SRQ:
            c.create_srq.mem = hx_ring_alloc(d, &ring,
                                             MIN(c.create_srq.log_depth, 15),
                                             MIN(c.create_srq.log_stride,
                                                 11));
            break;
        case QHCA_CMD_CREATE_QP:
            c.create_qp.sq = hx_ring_alloc(d, &sq,
                                           MIN(c.create_qp.sq_log_depth, 15),
                                           MIN(c.create_qp.sq_log_stride,
                                               11));
            c.create_qp.rq = hx_ring_alloc(d, &rq,
                                           MIN(c.create_qp.rq_log_depth, 15),
                                           MIN(c.create_qp.rq_log_stride,
                                               11));
            break;
        case QHCA_CMD_REG_MR:
            if (!(le32_to_cpu(c.reg_mr.flags) & QHCA_MR_PHYS)) {
                uint64_t iova = le64_to_cpu(c.reg_mr.iova);
                uint64_t span = (iova & (QHCA_PAGE_SIZE - 1)) +
                                MIN(le64_to_cpu(c.reg_mr.length), 2u << 20);
                uint32_t n = MIN(DIV_ROUND_UP(span, QHCA_PAGE_SIZE),
                                 QHCA_PBL_ENTRIES);
                uint64_t mem = hx_alloc_data(d, (uint64_t)n *
                                             QHCA_PAGE_SIZE);
                uint64_t pages[QHCA_PBL_ENTRIES];
                uint32_t i;

                for (i = 0; i < n; i++) {
                    pages[i] = mem + (uint64_t)i * QHCA_PAGE_SIZE;
                }
                c.reg_mr.mem = hx_pbl(d, pages, mem ? n : 0, QHCA_PAGE_SHIFT);
            }
            break;
        }
    }
    if (a.fix & 0x1c) {
        static const struct {
            uint16_t flags;
            uint64_t addr;
            uint32_t len;
        } hdrs[8] = {
            { 0, HX_CTRL_BASE + 0x3000, 256 },
            { 1, HX_CTRL_BASE + 0x3000, 256 },
            { 0, HX_CTRL_BASE + 0x3000 + 4000, 256 },
            { 0, 0xdead00000000ULL, 256 },
            { 0, HX_CTRL_BASE + 0x3000, 0 },
            { 0, HX_CTRL_BASE, 128 },
            { 0x8000, 0, 0xffffffff },
            { 0, HX_RAM_SIZE - 8, 64 },
        };
        unsigned h = (a.fix >> 2) & 7;

        d->drv.hdr_override = true;
        d->drv.hdr_flags = hdrs[h].flags;
        d->drv.hdr_resp_addr = hdrs[h].addr;
        d->drv.hdr_resp_len = hdrs[h].len;
    }
    st = hx_cmd(d, a.opcode, c.raw, sizeof(c.raw), &result);
    if (st == QHCA_CMD_OK && (a.fix & 1) && a.opcode == QHCA_CMD_CREATE_QP) {
        hx_drv_qp_add(d, &c.create_qp, result, &sq, &rq);
    }
    if (st == QHCA_CMD_OK && a.opcode == QHCA_CMD_ALLOC_MW) {
        mw_key[d->idx] = result;
    }
}

static void op_send(Fz *f)
{
    FzSend a;
    struct qhca_send_wqe w = { 0 };
    struct qhca_sge sges[3];
    uint8_t inl[QHCA_MAX_INLINE + 64];
    HxDev *d, *peer;
    HxQp *qp;
    uint32_t room, il;
    unsigned i;

    if (!take(f, &a, sizeof(a))) {
        return;
    }
    d = dev_sel(a.dev);
    qp = hx_drv_qp(d, a.qp);
    if (!qp || !d->drv.up) {
        return;
    }
    /* the remote memory and QP of a loopback connection are our own */
    peer = qp->loopback ? d : peer_of(d);
    w.opcode = a.opcode;
    w.flags = a.flags;
    w.wr_id = cpu_to_le64(le32_to_cpu(a.imm));
    stl_be_p(w.imm_data, le32_to_cpu(a.imm));
    fill_sges(d, a.sge, sges);
    switch (a.opcode) {
    case QHCA_WQE_REG_MR: {
        uint32_t key = (d->drv.frmr_key & ~QHCA_KEY_VARIANT_MASK) |
                       (le64_to_cpu(a.add) & QHCA_KEY_VARIANT_MASK);

        w.reg.iova = cpu_to_le64(FRMR_IOVA +
                                 ((le64_to_cpu(a.add) >> 32) & 0xffff));
        w.reg.length = cpu_to_le64(le32_to_cpu(a.remote));
        w.reg.pbl_addr = cpu_to_le64(frmr_pbl[d->idx]);
        w.reg.key = cpu_to_le32(key);
        w.reg.access = cpu_to_le32(le32_to_cpu(a.imm) & 0x1f);
        w.reg.num_pages = cpu_to_le32(a.nsge);
        w.reg.page_shift = 12 + (le64_to_cpu(a.swap) & 0x1f);
        d->drv.frmr_key = key;
        break;
    }
    case QHCA_WQE_LOCAL_INV:
        w.invalidate_rkey = cpu_to_le32(key_sel(d, a.rkey));
        break;
    case QHCA_WQE_BIND_MW: {
        /* window mw_key of this device, to its MR at remote, rights swap */
        uint32_t cur = mw_key[d->idx];
        uint32_t next = (cur & ~QHCA_KEY_VARIANT_MASK) |
                        (le32_to_cpu(a.imm) & QHCA_KEY_VARIANT_MASK);

        w.bind.addr = cpu_to_le64(key_iova(d, a.rkey) +
                                  le32_to_cpu(a.remote));
        w.bind.length = a.add;
        w.bind.mr_lkey = cpu_to_le32(key_sel(d, a.rkey));
        w.bind.mw_key = cpu_to_le32(cur);
        w.bind.new_key = cpu_to_le32(next);
        w.bind.access = cpu_to_le32(le64_to_cpu(a.swap) & 0x3f);
        if (cur) {
            mw_key[d->idx] = next;
        }
        break;
    }
    case QHCA_WQE_SEND_WITH_INV:
        w.invalidate_rkey = cpu_to_le32(key_sel(peer, a.rkey));
        break;
    default:
        if (qp->type == QHCA_QPT_RC || qp->type == QHCA_QPT_UC) {
            w.rdma.remote_addr = cpu_to_le64(key_iova(peer, a.rkey) +
                                             le32_to_cpu(a.remote));
            w.rdma.rkey = cpu_to_le32(key_sel(peer, a.rkey));
            w.rdma.compare_add = a.add;
            w.rdma.swap = a.swap;
            /* FLUSH: its FETH (placement type, selectivity level) */
            w.rdma.feth = cpu_to_le32(le64_to_cpu(a.swap) >> 32);
        } else {
            bool group = a.rkey == 3 && mcast_ahn[d->idx];

            w.ud.ahn = cpu_to_le32(a.rkey >= 4 ? a.rkey :
                                   a.rkey == 1 ? d->drv.ahn6 :
                                   a.rkey == 2 && av_ahn[d->idx] ?
                                   av_ahn[d->idx] :
                                   group ? mcast_ahn[d->idx] : d->drv.ahn);
            w.ud.remote_qpn = cpu_to_le32(group ? QHCA_MCAST_QPN :
                                          qp->peer_qpn ? qp->peer_qpn :
                                          peer->drv.qp[HX_QP_UD].qpn);
            w.ud.remote_qkey = a.remote ? a.remote : cpu_to_le32(HX_QKEY);
        }
        break;
    }
    if (a.flags & QHCA_WQE_INLINE) {
        room = (1u << qp->sq.stride_log) - QHCA_SEND_WQE_HDR_SIZE;
        il = le16_to_cpu(a.inline_len);
        for (i = 0; i < MIN(il, sizeof(inl)); i++) {
            inl[i] = i + a.imm;
        }
        hx_post_send(d, qp, &w, NULL, 0, inl, MIN(il, room), !a.nodb);
        if (il != MIN(il, room)) {
            /* a length beyond what the slot holds */
            uint64_t addr = hx_ring_addr(&qp->sq, qp->sq_pi - 1);
            uint32_t le = cpu_to_le32(il);

            hx_mem_write(d, addr + offsetof(struct qhca_send_wqe,
                                            inline_len), &le, 4);
        }
    } else {
        hx_post_send(d, qp, &w, sges, MIN(a.nsge, 3), NULL, 0, !a.nodb);
        if (a.nsge > 3) {
            uint64_t addr = hx_ring_addr(&qp->sq, qp->sq_pi - 1);

            hx_mem_write(d, addr + offsetof(struct qhca_send_wqe, num_sge),
                         &a.nsge, 1);
        }
    }
}

static void op_recv(Fz *f)
{
    FzRecv a;
    struct qhca_sge sges[3];
    HxDev *d;
    HxQp *qp;

    if (!take(f, &a, sizeof(a))) {
        return;
    }
    d = dev_sel(a.dev);
    qp = hx_drv_qp(d, a.qp);
    if (!qp || !d->drv.up) {
        return;
    }
    fill_sges(d, a.sge, sges);
    hx_post_recv(d, qp, le32_to_cpu(a.wr_id), sges,
                 MIN(a.nsge, 3), !a.nodb);
}

static HxRing *qp_ring(HxDev *d, HxQp *qp, bool rq, uint16_t **pi)
{
    if (!rq) {
        *pi = &qp->sq_pi;
        return &qp->sq;
    }
    if (qp->srqn != QHCA_NO_SRQ) {
        *pi = &d->drv.srq_pi;
        return &d->drv.srq;
    }
    *pi = &qp->rq_pi;
    return &qp->rq;
}

static void op_wqe_raw(Fz *f)
{
    FzWqeRaw a;
    const uint8_t *bytes;
    size_t len;
    HxDev *d;
    HxQp *qp;
    HxRing *r;
    uint16_t *pi;
    uint64_t addr;
    uint32_t stride;

    if (!take(f, &a, sizeof(a))) {
        return;
    }
    len = a.len;
    bytes = take_var(f, &len);
    d = dev_sel(a.dev);
    qp = hx_drv_qp(d, a.qp);
    if (!qp) {
        return;
    }
    r = qp_ring(d, qp, a.which & 1, &pi);
    addr = hx_ring_addr(r, *pi + a.slot);
    stride = 1u << r->stride_log;
    if (!addr || a.off >= stride) {
        return;
    }
    hx_mem_write(d, addr + a.off, bytes, MIN(len, stride - a.off));
}

static void op_db_qp(Fz *f)
{
    FzDbQp a;
    HxDev *d;
    HxQp *qp;
    uint16_t *pi, val;
    bool rq;

    if (!take(f, &a, sizeof(a))) {
        return;
    }
    d = dev_sel(a.dev);
    qp = hx_drv_qp(d, a.qp);
    if (!qp) {
        return;
    }
    rq = a.which & 1;
    qp_ring(d, qp, rq, &pi);
    val = le16_to_cpu(a.val);
    switch (a.mode & 3) {
    case 0:
        val = *pi;
        break;
    case 1:
        val = *pi + (int16_t)val;
        break;
    case 2:
        break;
    default:
        *pi += val % 64;
        val = *pi;
        break;
    }
    if (rq) {
        hx_ring_rq(d, qp, val);
    } else {
        hx_ring_sq(d, qp, val);
    }
}

static void op_frame_raw(Fz *f)
{
    FzFrameRaw a;
    uint8_t buf[12288];
    const uint8_t *bytes;
    size_t len;
    HxDev *to;

    if (!take(f, &a, sizeof(a))) {
        return;
    }
    len = MIN(le16_to_cpu(a.len), sizeof(buf));
    bytes = take_var(f, &len);
    memcpy(buf, bytes, len);
    to = dev_sel(a.to);
    if ((a.to & 2) && len >= 12) {
        memcpy(buf, to->mac, 6);
        memcpy(buf + 6, peer_of(to)->mac, 6);
    }
    hx_wire_inject(&pair, to->idx, buf, len);
}

static uint8_t frame_payload[8192];
static uint8_t frame_buf[QHCA_ROCE_HDR_MAX_LEN + sizeof(frame_payload) + 8];

/*
 * The headers of FRAME's frame to device to & 1 from its peer, and its
 * payload in frame_payload: the payload's length
 */
static uint32_t frame_hdr(const FzFrame *fa, QhcaRoceHdr *hp)
{
    FzFrame a = *fa;
    QhcaRoceHdr h = { 0 };
    uint8_t *payload = frame_payload;
    HxDev *to, *from;
    HxQp *qp;
    uint32_t plen, i, key;
    uint64_t va;

    to = dev_sel(a.to);
    from = peer_of(to);
    qp = a.qp < HX_MAX_QPS ? hx_drv_qp(to, a.qp) : NULL;
    memcpy(h.dst_mac, to->mac, 6);
    memcpy(h.src_mac, from->mac, 6);
    h.src_ip = (a.flags & 4) ? 0x06060606 : from->ip;
    h.dst_ip = to->ip;
    h.ttl = 64;
    h.src_port = 0xc000 | (a.psn & 0x3fff);
    h.opcode = a.opcode;
    h.se = a.flags & 1;
    h.ack_req = a.flags & 2;
    h.pkey = (a.flags & 32) ? 0x1234 : QHCA_ROCE_DEFAULT_PKEY;
    h.dest_qp = qpn_sel(to, a.qp) & QHCA_ROCE_QPN_MASK;
    switch (a.psn_mode % 3) {
    case 0:
        h.psn = le32_to_cpu(a.psn);
        break;
    case 1:
        h.psn = pair.last_psn[from->idx][h.dest_qp & 1023] + 1 +
                le32_to_cpu(a.psn);
        break;
    default:
        h.psn = pair.last_psn[to->idx][(qp ? qp->peer_qpn : 0) & 1023] +
                le32_to_cpu(a.psn);
        break;
    }
    h.psn &= QHCA_ROCE_PSN_MASK;
    key = (a.rkey & 3) == 3 ? (uint32_t)a.rkey << QHCA_KEY_INDEX_SHIFT :
          key_sel(to, a.rkey);
    va = le64_to_cpu(a.va);
    if (!(a.flags & 16)) {
        va += key_iova(to, a.rkey);
    }
    h.reth.va = va;
    h.reth.rkey = key;
    h.reth.dma_len = le32_to_cpu(a.dma_len);
    h.aeth.syndrome = a.syndrome;
    h.aeth.msn = le32_to_cpu(a.msn) & QHCA_ROCE_MSN_MASK;
    h.atomic.va = va;
    h.atomic.rkey = key;
    h.atomic.swap_add = le64_to_cpu(a.swap_add);
    h.atomic.compare = le64_to_cpu(a.compare);
    h.atomic_ack_orig = le64_to_cpu(a.swap_add);
    h.imm = le32_to_cpu(a.imm);
    h.ieth_rkey = key;
    h.feth = le64_to_cpu(a.compare);    /* FLUSH */
    h.deth.qkey = a.qkey ? le32_to_cpu(a.qkey) : HX_QKEY;
    h.deth.src_qp = (a.src_qp ? le32_to_cpu(a.src_qp) :
                     from->drv.qp[HX_QP_UD].qpn) & QHCA_ROCE_QPN_MASK;
    plen = MIN(le16_to_cpu(a.plen), sizeof(frame_payload));
    for (i = 0; i < plen; i++) {
        payload[i] = a.pattern + i;
    }
    *hp = h;
    return plen;
}

/* Build FRAME's frame @h with @plen bytes of frame_payload and inject it */
static void frame_send(const FzFrame *a, const QhcaRoceHdr *h, uint32_t plen)
{
    int len = qhca_roce_build(frame_buf, sizeof(frame_buf), h, frame_payload,
                              plen);

    if (len <= 0) {
        return;
    }
    if (a->flags & 8) {
        frame_buf[len - 1] ^= 0x5a;          /* a bad ICRC */
    }
    hx_wire_inject(&pair, dev_sel(a->to)->idx, frame_buf, len);
}

static void op_frame(Fz *f)
{
    FzFrame a;
    QhcaRoceHdr h;
    uint32_t plen;

    if (!take(f, &a, sizeof(a))) {
        return;
    }
    plen = frame_hdr(&a, &h);
    frame_send(&a, &h, plen);
}

/*
 * An IPv6 address for FRAME6, GID and AV: kind % 8 of @d (the device the
 * address is of) and @other (the other end)
 */
static void addr6_sel(uint8_t kind, HxDev *d, HxDev *other, uint16_t val,
                      uint8_t *out)
{
    memset(out, 0, 16);
    switch (kind % 8) {
    case 0:
        memcpy(out, d->ip6, 16);
        break;
    case 1:
        hx_gid_ipv4(out, d->ip);            /* IPv4-mapped */
        break;
    case 2:
        out[0] = 0xff;                      /* ff02::val, multicast */
        out[1] = 0x02;
        stw_be_p(&out[14], val);
        break;
    case 3:
        break;                              /* :: */
    case 4:
        out[15] = 1;                        /* ::1 */
        break;
    case 5:
        memcpy(out, d->ip6, 16);            /* a stranger on the subnet */
        stw_be_p(&out[14], val ^ 0x6666);
        break;
    case 6:
        memcpy(out, other->ip6, 16);
        break;
    default:
        out[0] = 0xfe;                      /* fe80::val, link-local */
        out[1] = 0x80;
        stw_be_p(&out[14], val);
        break;
    }
}

static void op_frame6(Fz *f)
{
    FzFrame a;
    FzIp6 b;
    QhcaRoceHdr h;
    uint8_t *ip = frame_buf + QHCA_ROCE_IP_OFFSET;
    HxDev *to;
    uint32_t plen;
    uint16_t val;
    int len;

    if (!take(f, &a, sizeof(a)) || !take(f, &b, sizeof(b))) {
        return;
    }
    to = dev_sel(a.to);
    val = le16_to_cpu(b.val);
    plen = frame_hdr(&a, &h);
    h.ipv6 = true;
    h.tos = b.tclass;
    h.ttl = b.mangle % 8 == 5 ? val : 64;
    h.flow_label = le32_to_cpu(b.flow) & QHCA_ROCE_FLOW_LABEL_MASK;
    memcpy(h.src_ip6, peer_of(to)->ip6, 16);
    memcpy(h.dst_ip6, to->ip6, 16);
    len = qhca_roce_build(frame_buf, sizeof(frame_buf), &h, frame_payload,
                          plen);
    if (len <= 0) {
        return;
    }
    /* the addresses, next header and version, then ICRC and checksum */
    addr6_sel(b.src, peer_of(to), to, val, ip + 8);
    addr6_sel(b.dst, to, peer_of(to), val, ip + 24);
    if (a.flags & 4) {
        ip[8] ^= 0x06;
    }
    switch (b.mangle % 8) {
    case 1:
        ip[6] = val;
        break;
    case 7:
        ip[0] = (ip[0] & 0x0f) | (val & 0xf0);
        break;
    }
    qhca_roce_finish(frame_buf, len);
    switch (b.mangle % 8) {
    case 2:
        stw_be_p(ip + 4, val);
        break;
    case 3:
        stw_be_p(ip + 40 + 6, val);
        break;
    case 4:
        ip[40 + 7] ^= 1;
        break;
    case 6:
        len = MIN(len, val);
        break;
    }
    if ((a.flags & 8) && len > 0) {
        frame_buf[len - 1] ^= 0x5a;
    }
    hx_wire_inject(&pair, to->idx, frame_buf, len);
}

static void op_wire_mutate(Fz *f)
{
    FzWireMutate a;
    unsigned n = g_queue_get_length(&pair.wire);
    HxFrame *fr, *copy;
    GList *l;
    uint16_t pos;

    if (!take(f, &a, sizeof(a)) || !n) {
        return;
    }
    l = g_queue_peek_nth_link(&pair.wire, a.idx % n);
    fr = l->data;
    pos = le16_to_cpu(a.pos);
    switch (a.action % 6) {
    case 0:
        g_queue_delete_link(&pair.wire, l);
        g_free(fr);
        break;
    case 1:
        copy = g_memdup2(fr, sizeof(*fr) + fr->len);
        g_queue_insert_after(&pair.wire, l, copy);
        break;
    case 2:
        if (fr->len) {
            fr->data[pos % fr->len] ^= a.val | 1;
        }
        break;
    case 3:
        fr->len = MIN(fr->len, pos);
        break;
    case 4:
        g_queue_unlink(&pair.wire, l);
        g_queue_push_tail_link(&pair.wire, l);
        break;
    default:
        while ((fr = g_queue_pop_head(&pair.wire))) {
            g_free(fr);
        }
        break;
    }
}

static void op_reset(Fz *f)
{
    FzReset a;
    HxDev *d, *peer;

    if (!take(f, &a, sizeof(a))) {
        return;
    }
    d = dev_sel(a.dev);
    peer = peer_of(d);
    switch (a.kind % 3) {
    case 0:
        hx_mmio_write(d, QHCA_REG_CTRL, QHCA_CTRL_RESET);
        break;
    case 1:
        hx_system_reset(d);
        break;
    default:
        if (!hx_drv_setup(d)) {
            return;
        }
        frmr_setup(d);
        if (peer->drv.up) {
            hx_connect_rc(d, &d->drv.qp[HX_QP_RC], peer,
                          &peer->drv.qp[HX_QP_RC], &hx_default_conn);
            hx_connect_rc(d, &d->drv.qp[HX_QP_RC_SRQ], peer,
                          &peer->drv.qp[HX_QP_RC_SRQ], &hx_default_conn);
            hx_connect_rc(d, &d->drv.qp[HX_QP_UC], peer,
                          &peer->drv.qp[HX_QP_UC], &hx_default_conn);
            hx_connect_rc(d, &d->drv.qp[HX_QP_UC_SRQ], peer,
                          &peer->drv.qp[HX_QP_UC_SRQ], &hx_default_conn);
        }
        {
            struct qhca_qp_attr at = { 0 };
            HxQp *ud = &d->drv.qp[HX_QP_UD];

            at.qp_state = QHCA_QPS_INIT;
            at.qkey = cpu_to_le32(HX_QKEY);
            hx_modify_qp(d, ud->qpn, QHCA_QP_ATTR_STATE |
                         QHCA_QP_ATTR_PKEY_INDEX | QHCA_QP_ATTR_PORT |
                         QHCA_QP_ATTR_QKEY, &at);
            at.qp_state = QHCA_QPS_RTR;
            hx_modify_qp(d, ud->qpn, QHCA_QP_ATTR_STATE, &at);
            at.qp_state = QHCA_QPS_RTS;
            hx_modify_qp(d, ud->qpn, QHCA_QP_ATTR_STATE |
                         QHCA_QP_ATTR_SQ_PSN, &at);
            ud->peer_qpn = peer->drv.qp[HX_QP_UD].qpn;
        }
        hx_poll_all(d, 0, HX_ARM_CQ | HX_ARM_EQ | HX_ARM_AEQ);
        break;
    }
}

static void op_msix(Fz *f)
{
    FzMsix a;
    HxMsix *m;
    uint32_t off;

    if (!take(f, &a, sizeof(a))) {
        return;
    }
    m = &dev_sel(a.dev)->msix[a.vector % QHCA_MSIX_VECTORS];
    off = le32_to_cpu(a.off);
    m->data = le32_to_cpu(a.data);
    switch (a.kind % 5) {
    case 0:
        m->addr = HX_APIC_ADDR;
        break;
    case 4:
        m->addr = HX_PORT_ADDR + (off & (HX_PORT_SIZE - 4));
        break;
    case 1:
        m->addr = HX_REG_BAR_ADDR + (off & (QHCA_REG_BAR_SIZE - 4));
        break;
    case 2:
        m->addr = HX_DB_BAR_ADDR + (off & (QHCA_DB_BAR_SIZE - 4));
        break;
    case 3:
        m->addr = off % (HX_RAM_SIZE - 4);
        break;
    }
}

static void op_mem_write(Fz *f)
{
    FzMemWrite a;
    const uint8_t *bytes;
    size_t len;
    HxDev *d;
    uint64_t addr;
    uint32_t off;

    if (!take(f, &a, sizeof(a))) {
        return;
    }
    len = a.len;
    bytes = take_var(f, &len);
    d = dev_sel(a.dev);
    off = le32_to_cpu(a.off);
    switch (a.region % 4) {
    case 0:
        addr = d->drv.mr.mem + off % MAX(d->drv.mr.len, 1);
        break;
    case 1:
        addr = HX_RING_BASE + off % (HX_RING_END - HX_RING_BASE);
        break;
    case 2:
        addr = off % HX_RAM_SIZE;
        break;
    default:
        addr = frmr_pbl[d->idx] + off % QHCA_PAGE_SIZE;
        break;
    }
    hx_mem_write(d, addr, bytes, MIN(len, HX_RAM_SIZE - addr));
}

static void op_expect_cqe(Fz *f)
{
    FzExpectCqe a;
    struct qhca_cqe c;
    HxDev *d;
    uint32_t qpn;

    if (!take(f, &a, sizeof(a))) {
        return;
    }
    d = dev_sel(a.dev);
    qpn = qpn_sel(d, a.qp);
    /* when nothing checks, a missing CQE is not worth a long wait */
    if (!hx_wait_cqe(d, qpn, le32_to_cpu(a.wr_id), &c,
                     (int64_t)(strict ? a.ms + 1 : MIN(a.ms + 1, 10)) * MS)) {
        strict_fail("no CQE for qpn %u wr_id 0x%x on device %c", qpn,
                    le32_to_cpu(a.wr_id), d->name);
        return;
    }
    if (a.status != 0xff && c.status != a.status) {
        strict_fail("CQE for qpn %u wr_id 0x%x on device %c: status %u, "
                    "expected %u", qpn, le32_to_cpu(a.wr_id), d->name,
                    c.status, a.status);
    }
}

static void op_expect_qp(Fz *f)
{
    FzExpectQp a;
    struct qhca_qp_attr at;
    HxDev *d;
    uint32_t qpn;

    if (!take(f, &a, sizeof(a))) {
        return;
    }
    d = dev_sel(a.dev);
    qpn = qpn_sel(d, a.qp);
    if (hx_query_qp(d, qpn, &at) != QHCA_CMD_OK) {
        strict_fail("QUERY_QP %u on device %c failed", qpn, d->name);
    } else if (at.qp_state != a.state) {
        strict_fail("QP %u on device %c in state %u, expected %u", qpn,
                    d->name, at.qp_state, a.state);
    }
}

static void op_connect(Fz *f)
{
    FzConnect a;
    HxConnOpts o = { 0 };
    unsigned q;

    if (!take(f, &a, sizeof(a))) {
        return;
    }
    if (a.qp & 8) {
        q = (a.qp & 1) ? HX_QP_UC_SRQ : HX_QP_UC;
    } else {
        q = (a.qp & 1) ? HX_QP_RC_SRQ : HX_QP_RC;
    }
    o.mtu = a.mtu;
    o.timeout = a.timeout;
    o.retry_cnt = a.retry;
    o.rnr_retry = a.rnr_retry;
    o.min_rnr_timer = a.min_rnr;
    o.max_rd_atomic = a.max_rd;
    o.access = a.access;
    o.sq_psn = le32_to_cpu(a.psn);
    if (a.qp & 16) {
        o.ipv6 = true;
        o.tclass = o.sq_psn >> 24;
        o.flow_label = o.sq_psn * 0x9e3779b1u >> 12;
    }
    if (a.qp & 2) {
        if (a.qp & 8) {
            hx_connect_uc_loopback(dev_sel(a.qp >> 2), &o);
        } else {
            hx_connect_loopback(dev_sel(a.qp >> 2), &o);
        }
        return;
    }
    hx_connect_rc(&pair.dev[0], &pair.dev[0].drv.qp[q], &pair.dev[1],
                  &pair.dev[1].drv.qp[q], &o);
}

/* The strict checks of a QUERY_STATS response read back from @buf */
static void query_stats_check(HxDev *d, uint32_t first, uint32_t result,
                              const uint8_t *buf, uint32_t n)
{
    uint32_t i;

    if (result != QHCA_STAT_NUM) {
        strict_fail("QUERY_STATS on device %c: result %u, expected %u",
                    d->name, result, QHCA_STAT_NUM);
    }
    for (i = 0; i < n / 8 && first + i < QHCA_STAT_NUM; i++) {
        uint64_t v = ldq_le_p(buf + 8 * i);
        uint64_t *seen = &stats_seen[d->idx][first + i];

        if (v < *seen) {
            strict_fail("QUERY_STATS on device %c: counter %u went back "
                        "from %" PRIu64 " to %" PRIu64, d->name, first + i,
                        *seen, v);
        }
        *seen = v;
    }
}

static void query_qp_state_check(HxDev *d, HxQp *qp, const uint8_t *buf,
                                 uint32_t n)
{
    struct qhca_qp_state_info s = { 0 };

    memcpy(&s, buf, MIN(n, sizeof(s)));
    if (n > offsetof(struct qhca_qp_state_info, type) &&
        s.type != qp->type) {
        strict_fail("QUERY_QP_STATE of QP %u on device %c: type %u, "
                    "expected %u", qp->qpn, d->name, s.type, qp->type);
    }
    if (n >= offsetof(struct qhca_qp_state_info, srtt_us) &&
        qp->type != QHCA_QPT_RC &&
        (s.inflight_bytes || s.rd_outstanding)) {
        strict_fail("QUERY_QP_STATE of QP %u on device %c (type %u): %u "
                    "bytes in flight, %u READs outstanding", qp->qpn,
                    d->name, qp->type, le32_to_cpu(s.inflight_bytes),
                    le32_to_cpu(s.rd_outstanding));
    }
}

/*
 * A query command with a hostile handle, first counter or response buffer;
 * in the driver's response page (filled with a canary first) the strict
 * checks see exactly what the device wrote
 */
static void op_query(Fz *f)
{
    static const uint16_t opcodes[4] = {
        QHCA_CMD_QUERY_STATS, QHCA_CMD_QUERY_QP_STATE, QHCA_CMD_QUERY_CQ,
        QHCA_CMD_QUERY_SRQ,
    };
    const uint8_t canary = 0xa5;
    FzQuery a;
    struct qhca_cmd_obj o = { 0 };
    HxDev *d;
    HxQp *qp = NULL;
    uint8_t page[QHCA_PAGE_SIZE];
    uint32_t arg, len, size = 0, result = 0, off, i, n;
    uint64_t addr;
    int st;

    if (!take(f, &a, sizeof(a))) {
        return;
    }
    d = dev_sel(a.dev);
    if (!d->drv.up) {
        return;
    }
    arg = le32_to_cpu(a.arg);
    len = le32_to_cpu(a.len);
    off = le16_to_cpu(a.off);
    switch (a.which % 4) {
    case 0:
        o.handle = cpu_to_le32(arg);    /* struct qhca_cmd_query_stats */
        size = arg <= QHCA_STAT_NUM ? (QHCA_STAT_NUM - arg) * 8 : 0;
        break;
    case 1:
        if (arg < HX_MAX_QPS) {
            qp = hx_drv_qp(d, arg);
        }
        o.handle = cpu_to_le32(qp ? qp->qpn : arg);
        size = sizeof(struct qhca_qp_state_info);
        break;
    case 2:
        o.handle = cpu_to_le32(arg ? arg : d->drv.cqn);
        size = sizeof(struct qhca_cq_info);
        break;
    default:
        o.handle = cpu_to_le32(arg ? arg : d->drv.srqn);
        size = sizeof(struct qhca_srq_attr);
        break;
    }
    switch (a.resp % 8) {
    case 0:
        off %= QHCA_PAGE_SIZE;
        addr = HX_RESP_ADDR + off;
        hx_mem_fill(d, HX_RESP_ADDR, canary, QHCA_PAGE_SIZE);
        break;
    case 1:
        addr = HX_REG_BAR_ADDR + off % QHCA_REG_BAR_SIZE;
        break;
    case 2:
        addr = HX_DB_BAR_ADDR + off % QHCA_DB_BAR_SIZE;
        break;
    case 3:
        addr = 0xdead00000000ULL + off;
        break;
    case 4:
        addr = HX_RAM_SIZE - 1 - off % QHCA_PAGE_SIZE;
        break;
    case 5:
        addr = HX_CTRL_BASE + off % QHCA_PAGE_SIZE;
        break;
    case 6:
        addr = d->drv.cq.page[0] + off % QHCA_PAGE_SIZE;
        break;
    default:
        addr = d->drv.mr.mem + off % MAX(d->drv.mr.len, 1);
        break;
    }
    d->drv.hdr_override = true;
    d->drv.hdr_flags = 0;
    d->drv.hdr_resp_addr = addr;
    d->drv.hdr_resp_len = len;
    st = hx_cmd(d, opcodes[a.which % 4], &o, sizeof(o), &result);
    if (a.status != 0xff && st != a.status) {
        strict_fail("query %u (arg %u) on device %c: status %d, expected %u",
                    opcodes[a.which % 4], arg, d->name, st, a.status);
    }
    if (a.resp % 8) {
        return;
    }
    /* the response page: what the device wrote, and only that */
    n = st == QHCA_CMD_OK ? MIN(len, size) : 0;
    if (off + n > QHCA_PAGE_SIZE) {
        strict_fail("query %u (arg %u) on device %c: a response of %u "
                    "bytes at %u, across the page, accepted",
                    opcodes[a.which % 4], arg, d->name, n, off);
        n = QHCA_PAGE_SIZE - off;
    }
    hx_mem_read(d, HX_RESP_ADDR, page, sizeof(page));
    for (i = 0; i < QHCA_PAGE_SIZE; i++) {
        if ((i < off || i >= off + n) && page[i] != canary) {
            strict_fail("query %u (arg %u, len %u) on device %c, status "
                        "%d: byte %u of the response page written (the "
                        "response is %u bytes at %u)", opcodes[a.which % 4],
                        arg, len, d->name, st, i, n, off);
            break;
        }
    }
    if (st != QHCA_CMD_OK) {
        return;
    }
    if (a.which % 4 == 0) {
        query_stats_check(d, arg, result, page + off, n);
    } else if (a.which % 4 == 1 && qp) {
        query_qp_state_check(d, qp, page + off, n);
    }
}

static void status_check(const char *what, HxDev *d, int st, uint8_t want)
{
    if (want != 0xff && st != want) {
        strict_fail("%s on device %c: status %d, expected %u", what,
                    d->name, st, want);
    }
}

/* ADD_GID or DEL_GID of a GID kind % 16 picks: < 8 addr6_sel(), else raw */
static void op_gid(Fz *f)
{
    FzGid a;
    struct qhca_cmd_gid g = { 0 };
    HxDev *d;
    int st;

    d = take_dev_up(f, &a, sizeof(a));
    if (!d) {
        return;
    }
    g.index = cpu_to_le32(a.index);
    if (a.kind % 16 < 8) {
        addr6_sel(a.kind, d, peer_of(d), le64_to_cpu(a.lo), g.gid);
    } else {
        stq_be_p(&g.gid[0], le64_to_cpu(a.hi));
        stq_be_p(&g.gid[8], le64_to_cpu(a.lo));
    }
    st = hx_cmd(d, (a.del & 1) ? QHCA_CMD_DEL_GID : QHCA_CMD_ADD_GID, &g,
                sizeof(g), NULL);
    status_check((a.del & 1) ? "DEL_GID" : "ADD_GID", d, st, a.status);
}

/* The address vector fields of AV, in a CREATE_AH or a struct qhca_qp_attr */
#define AV_FILL(x, a, dgid, dmac) do {                  \
        (x).sgid_index = (a).sgid;                      \
        (x).hop_limit = le16_to_cpu((a).val) >> 8;      \
        (x).traffic_class = (a).tclass;                 \
        (x).flow_label = (a).flow;                      \
        memcpy((x).dgid, (dgid), 16);                   \
        memcpy((x).dmac, (dmac), 6);                    \
    } while (0)

/*
 * An address vector with source GID index sgid and destination dgid
 * (addr6_sel() of the peer: 0 its IPv6 GID, 1 its IPv4 one, ...): which
 * & 1 = 0, qp taken RESET -> INIT -> RTR with it (then RTS if that
 * worked); 1, CREATE_AH (a good one is what UD sends with rkey 2 use)
 */
static void op_av(Fz *f)
{
    FzAv a;
    HxDev *d, *peer;
    uint8_t dgid[16];
    const uint8_t *dmac;
    int st;

    d = take_dev_up(f, &a, sizeof(a));
    if (!d) {
        return;
    }
    peer = peer_of(d);
    addr6_sel(a.dgid, peer, d, le16_to_cpu(a.val), dgid);
    dmac = a.dgid % 8 == 6 ? d->mac : peer->mac;
    if (a.which & 1) {
        struct qhca_cmd_create_ah ah = { 0 };
        uint32_t ahn = 0;

        ah.pdn = cpu_to_le32(d->drv.pdn);
        AV_FILL(ah, a, dgid, dmac);
        st = hx_cmd(d, QHCA_CMD_CREATE_AH, &ah, sizeof(ah), &ahn);
        if (st == QHCA_CMD_OK) {
            av_ahn[d->idx] = ahn;
        }
        status_check("CREATE_AH", d, st, a.status);
    } else {
        struct qhca_qp_attr at = { 0 };
        HxQp *qp = hx_drv_qp(d, a.qp);
        uint32_t rc;

        if (!qp) {
            return;
        }
        rc = qp->type == QHCA_QPT_RC ? QHCA_QP_ATTR_MAX_DEST_RD_ATOMIC |
             QHCA_QP_ATTR_MIN_RNR_TIMER : 0;
        at.qp_state = QHCA_QPS_RESET;
        hx_modify_qp(d, qp->qpn, QHCA_QP_ATTR_STATE, &at);
        qp->sq_pi = qp->rq_pi = 0;
        at.qp_state = QHCA_QPS_INIT;
        at.access_flags = cpu_to_le32(hx_default_conn.access);
        hx_modify_qp(d, qp->qpn, QHCA_QP_ATTR_STATE |
                     QHCA_QP_ATTR_PKEY_INDEX | QHCA_QP_ATTR_PORT |
                     QHCA_QP_ATTR_ACCESS_FLAGS, &at);
        at.qp_state = QHCA_QPS_RTR;
        at.path_mtu = 3;
        at.dest_qpn = cpu_to_le32(qp->peer_qpn);
        at.max_dest_rd_atomic = 4;
        at.min_rnr_timer = 1;
        AV_FILL(at, a, dgid, dmac);
        st = hx_modify_qp(d, qp->qpn, QHCA_QP_ATTR_STATE | QHCA_QP_ATTR_AV |
                          QHCA_QP_ATTR_PATH_MTU | QHCA_QP_ATTR_DEST_QPN |
                          QHCA_QP_ATTR_RQ_PSN | rc, &at);
        status_check("MODIFY_QP to RTR with an AV", d, st, a.status);
        if (st == QHCA_CMD_OK) {
            at.qp_state = QHCA_QPS_RTS;
            at.timeout = 8;
            at.retry_cnt = 7;
            at.rnr_retry = 7;
            at.max_rd_atomic = 4;
            hx_modify_qp(d, qp->qpn, QHCA_QP_ATTR_STATE |
                         QHCA_QP_ATTR_SQ_PSN | (rc ? QHCA_QP_ATTR_TIMEOUT |
                         QHCA_QP_ATTR_RETRY_CNT | QHCA_QP_ATTR_RNR_RETRY |
                         QHCA_QP_ATTR_MAX_QP_RD_ATOMIC : 0), &at);
        }
    }
}

/*
 * Page lists of REREG and RESIZE: with val bit 15, num_pages = val & 0x3ff;
 * with bit 14, page_shift = 12 + (val & 31)
 */
static void desc_mutate(struct qhca_pbl_desc *m, uint16_t val)
{
    if (val & 0x8000) {
        m->num_pages = cpu_to_le32(val & 0x3ff);
    }
    if (val & 0x4000) {
        m->page_shift = 12 + (val & 31);
    }
}

/*
 * REREG_MR of key (key_sel()) with what, pd (0 the driver's, else raw),
 * access and, for a new translation, iova (the MR's iova + iova), length
 * and memory mem % 8: 0 new pages, 1 the MR's own pages, 2 the ring area
 * (other objects' memory), 3 the command queue's pages, 4 QHCA_MR_PHYS
 * (iova guest-physical), 5 a page list where there is no RAM, 6 BAR0 and
 * BAR2, 7 the MR's pages by a two-level list; desc_mutate() with val.
 * The driver's MR moves with a good one (its iova, length, pages)
 */
static void op_rereg(Fz *f)
{
    static uint64_t pages[QHCA_PBL_ENTRIES];
    FzRereg a;
    struct qhca_cmd_rereg_mr r = { 0 };
    HxDev *d;
    HxMr *mr;
    uint64_t iova, length, span, mem = 0;
    uint32_t n, i;
    int st;

    d = take_dev_up(f, &a, sizeof(a));
    if (!d) {
        return;
    }
    mr = &d->drv.mr;
    iova = mr->iova + le32_to_cpu(a.iova);
    length = le32_to_cpu(a.length);
    span = (iova & (QHCA_PAGE_SIZE - 1)) + MIN(length, 2u << 20);
    n = MIN(DIV_ROUND_UP(span, QHCA_PAGE_SIZE), QHCA_PBL_ENTRIES);
    switch (a.mem % 8) {
    case 0:
        mem = hx_alloc_data(d, (uint64_t)n * QHCA_PAGE_SIZE);
        n = mem ? n : 0;
        break;
    case 1:
    case 7:
        mem = mr->mem;
        break;
    case 2:
        mem = HX_RING_BASE;
        break;
    case 4:
        iova = le32_to_cpu(a.iova);
        r.mr_flags = cpu_to_le32(QHCA_MR_PHYS);
        mem = iova;
        break;
    }
    for (i = 0; i < n; i++) {
        switch (a.mem % 8) {
        case 3:
        case 6:
            pages[i] = hostile_page(a.mem % 8 == 6, i);
            break;
        default:
            pages[i] = mem + (uint64_t)i * QHCA_PAGE_SIZE;
            break;
        }
    }
    if (a.mem % 8 != 4) {
        r.mem = hx_pbl(d, pages, n, QHCA_PAGE_SHIFT);
    }
    if (a.mem % 8 == 5) {
        r.mem.pbl_addr = cpu_to_le64(0xdead00000000ULL);
    } else if (a.mem % 8 == 7) {
        uint64_t l2 = le64_to_cpu(r.mem.pbl_addr);

        r.mem = hx_pbl(d, &l2, 1, QHCA_PAGE_SHIFT);
        r.mem.num_pages = cpu_to_le32(n);
        r.mem.levels = 2;
    }
    desc_mutate(&r.mem, le16_to_cpu(a.val));
    r.key = cpu_to_le32(key_sel(d, a.key));
    r.what = cpu_to_le32(a.what);
    r.pdn = cpu_to_le32(a.pd ? a.pd : d->drv.pdn);
    r.access = cpu_to_le32(a.access);
    r.iova = cpu_to_le64(iova);
    r.length = cpu_to_le64(length);
    st = hx_cmd(d, QHCA_CMD_REREG_MR, &r, sizeof(r), NULL);
    status_check("REREG_MR", d, st, a.status);
    if (st == QHCA_CMD_OK && (a.what & QHCA_REREG_TRANS) &&
        le32_to_cpu(r.key) == mr->key) {
        mr->iova = iova;
        mr->len = MAX(length, 1);
        mr->mem = n && pages[0] < HX_RAM_SIZE ? pages[0] : mr->mem;
    }
}

/*
 * RESIZE_CQ of cq % 4 (0 the driver's CQ, 1 the next CQ number, the first
 * one CMD makes, 2 arg, 3 none) to 2^log entries in mem % 8: 0 a new ring,
 * 1 its page list where there is no RAM, 2 the MR's pages, 3 the CQ's
 * own ring's pages, 4 a new ring and arg & 0x7f pages, 5 a new ring with
 * page shift 12 + arg % 20, 6 BAR0 and BAR2 (arg & 1: pages where there
 * is no RAM), 7 the command queue's pages.  A good resize of the driver's
 * CQ moves the driver to the new ring at index 0.  With cq & 4 the same
 * for RESIZE_SRQ of the driver's SRQ (the next SRQ number, arg, none) and
 * its ring; cq & 8 sets a reserved byte; a good resize of the driver's SRQ
 * moves the driver to the new ring at the same producer index
 */
static void op_resize(Fz *f)
{
    FzResize a;
    struct qhca_cmd_resize_cq r = { 0 };
    struct qhca_cmd_resize_srq rs = { 0 };
    struct qhca_pbl_desc desc;
    uint64_t pages[HX_RING_MAX_PAGES], mem = 0;
    HxDev *d;
    HxRing *old, nr = { 0 };
    uint32_t arg, n, i, result = 0, shift, num, own, stride_log;
    bool srq;
    int st;

    d = take_dev_up(f, &a, sizeof(a));
    if (!d) {
        return;
    }
    srq = a.cq & 4;
    old = srq ? &d->drv.srq : &d->drv.cq;
    own = srq ? d->drv.srqn : d->drv.cqn;
    stride_log = srq ? d->drv.srq.stride_log : __builtin_ctz(QHCA_CQE_SIZE);
    arg = le32_to_cpu(a.arg);
    switch (a.cq % 4) {
    case 0:
        num = own;
        break;
    case 1:
        num = own + 1;
        break;
    case 2:
        num = arg;
        break;
    default:
        num = 0;
        break;
    }
    n = DIV_ROUND_UP(1ULL << (stride_log + MIN(a.log, 15)), QHCA_PAGE_SIZE);
    n = MIN(n, HX_RING_MAX_PAGES);
    if (a.mem % 8 <= 1 || a.mem % 8 == 4 || a.mem % 8 == 5) {
        mem = hx_alloc_ring_pages(d, n);
        n = mem ? n : 0;
    }
    for (i = 0; i < n; i++) {
        switch (a.mem % 8) {
        case 2:
            /* zeroed first, as a driver makes a ring */
            pages[i] = d->drv.mr.mem + (uint64_t)i * QHCA_PAGE_SIZE;
            hx_mem_fill(d, pages[i], 0, QHCA_PAGE_SIZE);
            break;
        case 3:
            pages[i] = old->npages ? old->page[i % old->npages] : 0;
            break;
        case 6:
            pages[i] = (arg & 1) ? 0xdead00000000ULL + i * QHCA_PAGE_SIZE :
                       hostile_page(true, i);
            break;
        case 7:
            pages[i] = hostile_page(false, i);
            break;
        default:
            pages[i] = mem + (uint64_t)(n - 1 - i) * QHCA_PAGE_SIZE;
            break;
        }
    }
    desc = hx_pbl(d, pages, n, QHCA_PAGE_SHIFT);
    switch (a.mem % 8) {
    case 1:
        desc.pbl_addr = cpu_to_le64(0xdead00000000ULL);
        break;
    case 4:
        desc.num_pages = cpu_to_le32(arg & 0x7f);
        break;
    case 5:
        desc.page_shift = 12 + arg % 20;
        break;
    }
    if (srq) {
        rs.srqn = cpu_to_le32(num);
        rs.log_depth = a.log;
        rs.reserved[2] = (a.cq & 8) ? 1 : 0;
        rs.mem = desc;
        st = hx_cmd(d, QHCA_CMD_RESIZE_SRQ, &rs, sizeof(rs), &result);
        status_check("RESIZE_SRQ", d, st, a.status);
    } else {
        r.cqn = cpu_to_le32(num);
        r.log_depth = a.log;
        r.mem = desc;
        st = hx_cmd(d, QHCA_CMD_RESIZE_CQ, &r, sizeof(r), &result);
        status_check("RESIZE_CQ", d, st, a.status);
    }
    if (st != QHCA_CMD_OK || num != own) {
        return;
    }
    if (result > 1u << MIN(a.log, 15)) {
        strict_fail("%s on device %c: %u entries carried to a ring of %u",
                    srq ? "RESIZE_SRQ" : "RESIZE_CQ", d->name, result,
                    1u << MIN(a.log, 15));
    }
    /* the ring as the device sees it, in 4 KiB pages */
    shift = desc.page_shift >= 12 && desc.page_shift <= 31 ?
            desc.page_shift - 12 : 0;
    nr.log = MIN(a.log, 15);
    nr.stride_log = stride_log;
    nr.npages = MIN(n, HX_RING_MAX_PAGES);
    for (i = 0; i < nr.npages; i++) {
        uint32_t e = i >> MIN(shift, 31);

        nr.page[i] = e < n ? pages[e] + (uint64_t)(i & ((1u << shift) - 1)) *
                     QHCA_PAGE_SIZE : 0;
    }
    if (a.mem % 8 == 1) {
        nr.npages = 0;
    }
    if (srq) {
        d->drv.srq = nr;
    } else {
        d->drv.cq = nr;
        d->drv.cq_ci = 0;
    }
}

/*
 * A group address for MCAST and MFRAME, kind % 8 (val its low bits): 0
 * IPv4-mapped 239.0.0.0 + val (224/4), 1 IPv6 ff0e::val, 2 IPv4-mapped
 * just outside 224/4 (223.255.255.255 or 240.0.0.0 + val), 3 the device
 * @d's own IPv4 GID, 4 IPv6 ff00::/8 of any flags and scope (ffXY::val,
 * XY = val >> 24), 5 ::, 6 IPv4-compatible ::224.0.0.0 + val (no ffff),
 * 7 @d's IPv6 GID + val.  True if the address is an IPv4-mapped one
 */
static bool group_gid(uint8_t kind, HxDev *d, uint32_t val, uint8_t *gid)
{
    memset(gid, 0, 16);
    switch (kind % 8) {
    case 0:
        hx_gid_ipv4(gid, 0xef000000 | (val & 0xffffff));
        return true;
    case 1:
        gid[0] = 0xff;
        gid[1] = 0x0e;
        stl_be_p(&gid[12], val);
        return false;
    case 2:
        hx_gid_ipv4(gid, (val & 1) ? 0xdfffffff : 0xf0000000 | val);
        return true;
    case 3:
        hx_gid_ipv4(gid, d->ip);
        return true;
    case 4:
        gid[0] = 0xff;
        gid[1] = val >> 24;
        stl_be_p(&gid[12], val & 0xffffff);
        return false;
    case 5:
        return false;
    case 6:
        stl_be_p(&gid[12], 0xe0000000 | (val & 0x0fffffff));
        return false;
    default:
        memcpy(gid, d->ip6, 16);
        stl_be_p(&gid[12], ldl_be_p(&gid[12]) + val);
        return false;
    }
}

/*
 * ATTACH_MCAST (DETACH_MCAST with flags & 1) of QP qp to group_gid(group,
 * val); flags & 2: of a new UD QP in RTS entered in the driver's table
 * (on the SRQ with flags & 4) instead; flags & 8: reserved = val, not 0;
 * flags & 16: also a CREATE_AH to the group, from GID 0 for an
 * IPv4-mapped group, else GID 1 (what UD sends with rkey 3 use, with
 * DestQP 0xFFFFFF).  Then count more times: with flags & 32 for a new UD
 * QP outside the table, left in RESET, each time, else for the group of
 * val + 1, val + 2, ... (the limits: 16 QPs per group, 64 groups); the
 * status of the last one is checked against status
 */
static void op_mcast(Fz *f)
{
    FzMcast a;
    struct qhca_cmd_mcast m = { 0 };
    struct qhca_cmd_create_ah ah = { 0 };
    uint32_t val, qpn, ahn = 0;
    HxDev *d;
    HxQp *qp;
    bool v4;
    int st = QHCA_CMD_OK;
    unsigned n;

    d = take_dev_up(f, &a, sizeof(a));
    if (!d) {
        return;
    }
    val = le32_to_cpu(a.val);
    qpn = qpn_sel(d, a.qp);
    if (a.flags & 2) {
        qp = hx_drv_make_ud(d, a.flags & 4, true, &qpn);
        if (!qp) {
            return;
        }
    }
    if (a.flags & 16) {
        v4 = group_gid(a.group, d, val, ah.dgid);
        ah.pdn = cpu_to_le32(d->drv.pdn);
        ah.sgid_index = v4 ? 0 : 1;
        ah.hop_limit = 64;
        memcpy(ah.dmac, peer_of(d)->mac, 6);
        if (hx_cmd(d, QHCA_CMD_CREATE_AH, &ah, sizeof(ah), &ahn) ==
            QHCA_CMD_OK) {
            mcast_ahn[d->idx] = ahn;
        }
    }
    for (n = 0; n <= a.count; n++) {
        if (n && (a.flags & 32)) {
            hx_drv_make_ud(d, false, false, &qpn);
        }
        m.qpn = cpu_to_le32(qpn);
        m.reserved = (a.flags & 8) ? cpu_to_le32(val | 1) : 0;
        group_gid(a.group, d, (a.flags & 32) ? val : val + n, m.gid);
        st = hx_cmd(d, (a.flags & 1) ? QHCA_CMD_DETACH_MCAST :
                    QHCA_CMD_ATTACH_MCAST, &m, sizeof(m), NULL);
    }
    status_check((a.flags & 1) ? "DETACH_MCAST" : "ATTACH_MCAST", d, st,
                 a.status);
}

/*
 * MFRAME: FRAME's frame (an FzFrame), then an FzMframe: sent to group
 * group_gid(group, val) of the target (over IPv6 unless the group is
 * IPv4-mapped), to the Ethernet address mac % 4: 0 the group's multicast
 * MAC, 1 the target's own MAC, 2 the MAC of group val + 1, 3 broadcast;
 * with BTH DestQP dqp % 4: 0 0xFFFFFF, 1 FRAME's qp, 2 0xFFFFFE, 3
 * 0x7FFFFF; from src % 4: 0 the peer's address, 1 a multicast one
 * (239.1.1.1 or ff02::1), 2 the target's own, 3 the peer's IPv4 address
 * IPv4-mapped in an IPv6 frame (the peer's IPv6 one in an IPv4 frame is
 * not possible: then the peer's); right ICRC unless FRAME's flags & 8
 */
static void op_mframe(Fz *f)
{
    FzFrame a;
    FzMframe b;
    QhcaRoceHdr h;
    HxDev *to, *from;
    uint8_t gid[16];
    uint32_t plen, val;

    if (!take(f, &a, sizeof(a)) || !take(f, &b, sizeof(b))) {
        return;
    }
    to = dev_sel(a.to);
    from = peer_of(to);
    val = le32_to_cpu(b.val);
    plen = frame_hdr(&a, &h);
    h.ipv6 = !group_gid(b.group, to, val, gid);
    if (h.ipv6) {
        memcpy(h.dst_ip6, gid, 16);
        memcpy(h.src_ip6, from->ip6, 16);
        switch (b.src % 4) {
        case 1:
            memset(h.src_ip6, 0, 16);
            h.src_ip6[0] = 0xff;
            h.src_ip6[1] = 0x02;
            h.src_ip6[15] = 1;
            break;
        case 2:
            memcpy(h.src_ip6, to->ip6, 16);
            break;
        case 3:
            hx_gid_ipv4(h.src_ip6, from->ip);
            break;
        }
    } else {
        h.dst_ip = ldl_be_p(&gid[12]);
        h.src_ip = b.src % 4 == 1 ? 0xef010101 :
                   b.src % 4 == 2 ? to->ip : h.src_ip;
    }
    switch (b.mac % 4) {
    case 0:
        qhca_roce_mcast_mac(gid, h.dst_mac);
        break;
    case 1:
        memcpy(h.dst_mac, to->mac, 6);
        break;
    case 2:
        group_gid(b.group, to, val + 1, gid);
        qhca_roce_mcast_mac(gid, h.dst_mac);
        break;
    default:
        memset(h.dst_mac, 0xff, 6);
        break;
    }
    switch (b.dqp % 4) {
    case 0:
        h.dest_qp = QHCA_MCAST_QPN;
        break;
    case 2:
        h.dest_qp = QHCA_MCAST_QPN - 1;
        break;
    case 3:
        h.dest_qp = 0x7fffff;
        break;
    }
    frame_send(&a, &h, plen);
}

static void run_op(Fz *f, uint8_t op)
{
    union {
        FzPump pump;
        FzAdvance adv;
        FzSettle settle;
        FzRegWrite rw;
        FzRegRead rr;
        FzDbWrite db;
        FzWireMode wm;
        FzLink link;
        FzPoll poll;
    } a;
    int i;

    switch (op % FZ_OP_COUNT) {
    case FZ_OP_PUMP:
        if (take(f, &a.pump, sizeof(a.pump))) {
            hx_pump(&pair, a.pump.steps + 1u);
        }
        break;
    case FZ_OP_ADVANCE:
        if (take(f, &a.adv, sizeof(a.adv))) {
            hx_advance(&pair, 1LL << (a.adv.exp % 36));
        }
        break;
    case FZ_OP_SETTLE:
        if (take(f, &a.settle, sizeof(a.settle))) {
            for (i = 0; i < 4; i++) {
                hx_settle(&pair, (int64_t)(a.settle.ms + 1) * MS / 4, 500);
                hx_poll_all(&pair.dev[0], 256, HX_ARM_CQ | HX_ARM_EQ |
                            HX_ARM_AEQ);
                hx_poll_all(&pair.dev[1], 256, HX_ARM_CQ | HX_ARM_EQ |
                            HX_ARM_AEQ);
            }
        }
        break;
    case FZ_OP_REG_WRITE:
        if (take(f, &a.rw, sizeof(a.rw))) {
            hx_mmio_write(dev_sel(a.rw.dev), le16_to_cpu(a.rw.off) & 0xffc,
                          le32_to_cpu(a.rw.val));
        }
        break;
    case FZ_OP_REG_READ:
        if (take(f, &a.rr, sizeof(a.rr))) {
            hx_mmio_read(dev_sel(a.rr.dev), le16_to_cpu(a.rr.off) & 0xffc);
        }
        break;
    case FZ_OP_DB_WRITE:
        if (take(f, &a.db, sizeof(a.db))) {
            hx_db_write(dev_sel(a.db.dev), a.db.page, a.db.off & 0xfc,
                        le32_to_cpu(a.db.val));
        }
        break;
    case FZ_OP_CMD:
        op_cmd(f);
        break;
    case FZ_OP_SEND:
        op_send(f);
        break;
    case FZ_OP_RECV:
        op_recv(f);
        break;
    case FZ_OP_WQE_RAW:
        op_wqe_raw(f);
        break;
    case FZ_OP_DB_QP:
        op_db_qp(f);
        break;
    case FZ_OP_FRAME_RAW:
        op_frame_raw(f);
        break;
    case FZ_OP_FRAME:
        op_frame(f);
        break;
    case FZ_OP_WIRE_MUTATE:
        op_wire_mutate(f);
        break;
    case FZ_OP_WIRE_MODE:
        if (take(f, &a.wm, sizeof(a.wm))) {
            hx_wire_set_mode(&pair, a.wm.from & 1,
                             a.wm.mode % HX_WIRE_MODE_COUNT, a.wm.every);
        }
        break;
    case FZ_OP_RESET:
        op_reset(f);
        break;
    case FZ_OP_MSIX:
        op_msix(f);
        break;
    case FZ_OP_LINK:
        if (take(f, &a.link, sizeof(a.link))) {
            hx_set_link(dev_sel(a.link.dev), a.link.up & 1);
        }
        break;
    case FZ_OP_POLL:
        if (take(f, &a.poll, sizeof(a.poll))) {
            hx_poll_all(dev_sel(a.poll.dev), a.poll.max, a.poll.arm);
        }
        break;
    case FZ_OP_MEM_WRITE:
        op_mem_write(f);
        break;
    case FZ_OP_EXPECT_CQE:
        op_expect_cqe(f);
        break;
    case FZ_OP_EXPECT_QP:
        op_expect_qp(f);
        break;
    case FZ_OP_CONNECT:
        op_connect(f);
        break;
    case FZ_OP_QUERY:
        op_query(f);
        break;
    case FZ_OP_FRAME6:
        op_frame6(f);
        break;
    case FZ_OP_GID:
        op_gid(f);
        break;
    case FZ_OP_AV:
        op_av(f);
        break;
    case FZ_OP_REREG:
        op_rereg(f);
        break;
    case FZ_OP_RESIZE:
        op_resize(f);
        break;
    case FZ_OP_MCAST:
        op_mcast(f);
        break;
    case FZ_OP_MFRAME:
        op_mframe(f);
        break;
    }
}

int LLVMFuzzerInitialize(int *argc, char **argv[])
{
    const char *s = getenv("QHCA_FUZZ_STRICT");

    /* GLib's slice allocator caches memory: LeakSanitizer needs malloc */
    setenv("G_SLICE", "always-malloc", 1);
    strict = s && *s && strcmp(s, "0");
    hx_trace_init();
    __sanitizer_set_death_callback(hx_trace_dump);
    hx_pair_init(&pair);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Fz f = { .p = data, .n = size };
    uint8_t tag;

    if (ready) {
        hx_pair_reset(&pair);
    }
    ready = true;
    if (!setup()) {
        fprintf(stderr, "==qhca-fuzz== the pair could not be set up\n");
        abort();
    }
    pair.step_limit = STEP_LIMIT;
    pair.time_limit = TIME_LIMIT;
    while (!pair.stopped && take(&f, &tag, 1)) {
        run_op(&f, tag);
    }
    /* let the last operations take effect, then tear down */
    hx_settle(&pair, 100 * MS, 2000);
    hx_pair_cleanup(&pair);
    return 0;
}
