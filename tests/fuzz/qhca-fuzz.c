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
 * This file has the operations' table (tag % FZ_OP_COUNT indexes it), the
 * state of a run, the selectors below and libFuzzer's entry points; the
 * input's enum and structures are in qhca-fuzz.h, and the operations in a
 * file per subject: fuzz-device.c, fuzz-queues.c, fuzz-wire.c, fuzz-cmd.c,
 * fuzz-addr.c and fuzz-resize.c.  QHCA_FUZZ_OPS=1 prints each operation
 * as it is taken (its offset in the input, tag and name).
 *
 * Input format
 * ------------
 * A sequence of operations, run until the input ends, or 8000 iterations
 * of the main loop or 500 ms of virtual time have passed.  Each is a tag
 * byte, whose value modulo FZ_OP_COUNT picks the operation, and then the
 * operation's fixed-size arguments (the packed Fz* structures of
 * qhca-fuzz.h, little-endian), and for some a variable part whose length
 * is one of the arguments (cut short at the end of the input).  An input
 * that ends inside the fixed part of an operation ends before it.
 * Selectors:
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
 *                  P_Key, 64 ECN CE (as a switch marks a frame; with
 *                  opcode 0x81 a CNP: hw/qhca-cc.c)
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
#include "qhca-fuzz.h"
#include "fuzz-entry.h"
#include <sanitizer/common_interface_defs.h>

#define STEP_LIMIT      8000
#define TIME_LIMIT      (500LL * 1000 * 1000)   /* virtual ns */

HxPair pair;
bool strict;
/* the pair was set up for an input before */
static bool ready;
/* per device: the fast-register page list and its pages */
uint64_t frmr_pbl[2];
/* per device: the AH the last good AV operation made (0: none) */
uint32_t av_ahn[2];
/* per device: the AH to a group the last MCAST with flags & 16 made */
uint32_t mcast_ahn[2];
/*
 * per device: the window the last good ALLOC_MW (a CMD op) made, with the
 * key the last BIND_MW SEND op gave it (0: none); rkey selector 0x7f
 */
uint32_t mw_key[2];
/* per device: the counters QUERY_STATS returned last (strict checks) */
uint64_t stats_seen[2][QHCA_STAT_NUM];

bool take(Fz *f, void *out, size_t len)
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

const uint8_t *take_var(Fz *f, size_t *len)
{
    const uint8_t *p = f->p;

    *len = MIN(*len, f->n);
    f->p += *len;
    f->n -= *len;
    return p;
}

void strict_fail(const char *fmt, ...)
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

HxDev *dev_sel(uint8_t sel)
{
    return &pair.dev[sel & 1];
}

HxDev *peer_of(HxDev *d)
{
    return &pair.dev[!d->idx];
}

/*
 * Take an operation's arguments, whose first byte selects the device: that
 * device if its driver has it up, else NULL
 */
HxDev *take_dev_up(Fz *f, void *args, size_t len)
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
uint64_t hostile_page(bool bars, uint32_t i)
{
    if (bars) {
        return (i & 1) ? HX_DB_BAR_ADDR : HX_REG_BAR_ADDR;
    }
    return HX_CTRL_BASE + (i % 4) * QHCA_PAGE_SIZE;
}

uint32_t qpn_sel(HxDev *d, uint8_t sel)
{
    HxQp *qp;

    if (sel >= HX_MAX_QPS) {
        return sel;
    }
    qp = hx_drv_qp(d, sel);
    return qp ? qp->qpn : sel;
}

uint32_t key_sel(HxDev *d, uint8_t sel)
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

uint64_t key_iova(HxDev *d, uint8_t sel)
{
    return (sel & 3) == 1 ? FRMR_IOVA : d->drv.mr.iova;
}

void fill_sges(HxDev *d, const FzSge *in, struct qhca_sge *out)
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
void frmr_setup(HxDev *d)
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

void status_check(const char *what, HxDev *d, int st, uint8_t want)
{
    if (want != 0xff && st != want) {
        strict_fail("%s on device %c: status %d, expected %u", what,
                    d->name, st, want);
    }
}

/*
 * An IPv6 address for FRAME6, GID and AV: kind % 8 of @d (the device the
 * address is of) and @other (the other end)
 */
void addr6_sel(uint8_t kind, HxDev *d, HxDev *other, uint16_t val,
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

/*
 * A group address for MCAST and MFRAME, kind % 8 (val its low bits): 0
 * IPv4-mapped 239.0.0.0 + val (224/4), 1 IPv6 ff0e::val, 2 IPv4-mapped
 * just outside 224/4 (223.255.255.255 or 240.0.0.0 + val), 3 the device
 * @d's own IPv4 GID, 4 IPv6 ff00::/8 of any flags and scope (ffXY::val,
 * XY = val >> 24), 5 ::, 6 IPv4-compatible ::224.0.0.0 + val (no ffff),
 * 7 @d's IPv6 GID + val.  True if the address is an IPv4-mapped one
 */
bool group_gid(uint8_t kind, HxDev *d, uint32_t val, uint8_t *gid)
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
 * The operations, indexed by tag % FZ_OP_COUNT: entry N is operation N of
 * the list at the top of this file and of the FZ_OP_* enum
 */
typedef struct FzOp {
    const char *name;
    void (*run)(Fz *f);
} FzOp;

#define FZ_OP(op, fn) [FZ_OP_##op] = { #op, fn }

static const FzOp fz_ops[FZ_OP_COUNT] = {
    FZ_OP(PUMP, op_pump),
    FZ_OP(ADVANCE, op_advance),
    FZ_OP(SETTLE, op_settle),
    FZ_OP(REG_WRITE, op_reg_write),
    FZ_OP(REG_READ, op_reg_read),
    FZ_OP(DB_WRITE, op_db_write),
    FZ_OP(CMD, op_cmd),
    FZ_OP(SEND, op_send),
    FZ_OP(RECV, op_recv),
    FZ_OP(WQE_RAW, op_wqe_raw),
    FZ_OP(DB_QP, op_db_qp),
    FZ_OP(FRAME_RAW, op_frame_raw),
    FZ_OP(FRAME, op_frame),
    FZ_OP(WIRE_MUTATE, op_wire_mutate),
    FZ_OP(WIRE_MODE, op_wire_mode),
    FZ_OP(RESET, op_reset),
    FZ_OP(MSIX, op_msix),
    FZ_OP(LINK, op_link),
    FZ_OP(POLL, op_poll),
    FZ_OP(MEM_WRITE, op_mem_write),
    FZ_OP(EXPECT_CQE, op_expect_cqe),
    FZ_OP(EXPECT_QP, op_expect_qp),
    FZ_OP(CONNECT, op_connect),
    FZ_OP(QUERY, op_query),
    FZ_OP(FRAME6, op_frame6),
    FZ_OP(GID, op_gid),
    FZ_OP(AV, op_av),
    FZ_OP(REREG, op_rereg),
    FZ_OP(RESIZE, op_resize),
    FZ_OP(MCAST, op_mcast),
    FZ_OP(MFRAME, op_mframe),
};

/* QHCA_FUZZ_OPS=1: print each operation as it is taken */
static bool show_ops;

static void run_op(Fz *f, const uint8_t *data, uint8_t tag)
{
    const FzOp *op = &fz_ops[tag % FZ_OP_COUNT];

    if (show_ops) {
        fprintf(stderr, "==qhca-fuzz-op== byte %zu: tag %u: %s\n",
                (size_t)(f->p - data) - 1, tag, op->name);
    }
    op->run(f);
}

int LLVMFuzzerInitialize(int *argc, char **argv[])
{
    const char *s = getenv("QHCA_FUZZ_STRICT");
    unsigned i;

    /* GLib's slice allocator caches memory: LeakSanitizer needs malloc */
    setenv("G_SLICE", "always-malloc", 1);
    strict = s && *s && strcmp(s, "0");
    s = getenv("QHCA_FUZZ_OPS");
    show_ops = s && *s && strcmp(s, "0");
    for (i = 0; i < FZ_OP_COUNT; i++) {
        if (!fz_ops[i].run) {
            fprintf(stderr, "==qhca-fuzz== operation %u has no entry in "
                    "the table\n", i);
            abort();
        }
    }
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
        run_op(&f, data, tag);
    }
    /* let the last operations take effect, then tear down */
    hx_settle(&pair, 100 * MS, 2000);
    hx_pair_cleanup(&pair);
    return 0;
}
