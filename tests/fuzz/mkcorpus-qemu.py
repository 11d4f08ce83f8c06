#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# Copyright (c) 2026 The qhca authors
"""Seeds for QEMU's generic-fuzz on qhca:  tests/fuzz/mkcorpus-qemu.py [--check]

Writes tests/fuzz/corpus-qemu/ (seeds that bring the device up) and
tests/fuzz/regressions-qemu/ (one input per defect class, named after it),
inputs of QEMU's generic-fuzz (tests/qtest/fuzz/generic_fuzz.c in QEMU:
operations separated by "FUZZ", each an opcode byte and its fields) for the
target generic-fuzz-qhca of scripts/qemu/0003-qhca-generic-fuzz.patch: q35,
the device at 01:00.0 behind a pcie-root-port at 00:02.0.

Every input starts the same way: PCI_WRITE to the MCH (the fuzzer's PCI
device 0, 00:00.0) sets PCIEXBAR (0xb0000000, enabled), PCI_WRITE to the
port (device 1) gives it bus numbers and a memory window, and WRITEs into
the ECAM window (MemoryRegion 0, pcie-mmcfg-mmio) map the device's BARs
(BAR0 0xc0000000, BAR4 0xc0001000, BAR2 0xc0100000), enable memory and bus
mastering and MSI-X. Then the MSI-X table (vector 0 and 1), the registers
(CTRL.RESET, the queues, CTRL.ENABLE, a read of STATUS) and commands.

generic-fuzz has no operation that writes guest RAM: the device's DMA
reads of RAM are answered from the DMA patterns (ADD_DMA_PATTERN) in the
order the reads come, one pattern per read, within one operation (the
predefined configs avoid double fetches). So before each operation that
makes the device read, this script adds one pattern per read, holding what
a driver would have put there (the command, the page list, the WQE), and
clears them after. Which reads an operation makes is found by running the
fuzzer itself (build/qemu-san/qemu-fuzz-x86_64, FUZZ_SERIALIZE_QTEST=1
QTEST_LOG=1: each DMA fill is logged as "[DMA] write ADDR LEN"), once per
read discovered: run it after a change of the device's DMA order. The
fills are checked against what the script meant, and --check (also run
after writing) replays each input with the device's trace events
(generic-fuzz with the same arguments plus -trace qhca_*) and checks what
each one must reach: commands OK, STATUS READY, QP 2 in RTS, the SEND's
CQE, and for the regressions the reset or unplug from inside the device.

Seeds (tests/fuzz/corpus-qemu/):
  qp-up               device READY, PD, EQ (vector 1), CQ, GID, UD QP to
                      RTS, AH; EQ and CQ armed
  ud-send             ... and a signalled inline UD SEND: CQE, EQE, vector 1
  rc-loopback-send    an RC QP connected to a second RC QP of the device
                      (its own GID), a RECV and a signalled SEND over the
                      loopback queue
  dma-cmd-resp-bus-reset
                      a QUERY_QP response aimed into ECAM so that its Q_Key
                      lands on the port's Bridge Control with SBR: the bus
                      reset inside the command loop
Regressions (tests/fuzz/regressions-qemu/; issue 20 items 1 and 3): both
crash the device of e34bcc9 (ASan heap-use-after-free in sq_consume)
  bus-reset-msix-send     vector 1 aimed at the port's Bridge Control with
                          Secondary Bus Reset; the SEND's CQE raises it
                          inside the SQ doorbell
  slot-power-off-msix-send  vector 1 aimed at the port's Slot Control with
                          power off: unplug inside the SQ doorbell
"""

import argparse
import os
import re
import struct
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get('QHCA_BUILD', os.path.join(TOP, 'build'))
FUZZER = os.path.join(BUILD, 'qemu-san', 'qemu-fuzz-x86_64')
PATCH = os.path.join(TOP, 'scripts', 'qemu', '0003-qhca-generic-fuzz.patch')
CORPUS = os.path.join(TOP, 'tests', 'fuzz', 'corpus-qemu')
REGRESSIONS = os.path.join(TOP, 'tests', 'fuzz', 'regressions-qemu')
SEP = b'FUZZ'

# generic-fuzz opcodes (enum cmds) and access sizes
OP_READ, OP_WRITE, OP_PCI_WRITE = 2, 3, 5
OP_ADD_DMA_PATTERN, OP_CLEAR_DMA_PATTERNS, OP_CLOCK_STEP = 7, 8, 9
SZ = {1: 0, 2: 1, 4: 2, 8: 3}

# fuzzable PCI devices (in the order of .objects) and MemoryRegions (in
# address order of the flat view once the BARs are mapped)
PCI_MCH, PCI_PORT = 0, 1
MR_ECAM, MR_REGS, MR_MSIX = 0, 1, 2
MR_DB = 4

ECAM = 0xb0000000
PORT_CFG = 2 << 15                  # 00:02.0 in ECAM
DEV_CFG = 1 << 20                   # 01:00.0
PORT_EXP_CAP = 0x54                 # the port's PCI Express capability
PORT_SLTCTL_RESET = 0x03c0          # its Slot Control after reset, no firmware
DEV_MSIX_CAP = 0x40
BAR0, BAR4, BAR2 = 0xc0000000, 0xc0001000, 0xc0100000

# guest RAM
CMDQ, CMDCQ, AEQ, RESP = 0x100000, 0x101000, 0x102000, 0x103000
EQ_PBL, EQ_RING = 0x104000, 0x105000
CQ_PBL, CQ_RING = 0x106000, 0x107000
QP_MEM = 0x110000                   # per QP: SQ PBL, SQ ring, RQ PBL, RQ ring
MSI_SINK = 0x10f000
PAYLOAD = 0x120000
CMDQ_LOG, CMDCQ_LOG, AEQ_LOG = 5, 8, 8

# include/qhca_hw.h
CMD_QUERY_PORT, CMD_ADD_GID, CMD_CREATE_EQ, CMD_ALLOC_PD = 0x02, 0x03, 0x05, 0x07
CMD_REG_MR, CMD_CREATE_CQ, CMD_CREATE_QP, CMD_MODIFY_QP = 0x09, 0x0c, 0x0e, 0x0f
CMD_QUERY_QP, CMD_CREATE_AH = 0x10, 0x16
REG_STATUS, REG_CTRL = 0x08, 0x0c
DB_SQ, DB_RQ, DB_CQ_ARM, DB_EQ, DB_CMDQ = 0x00, 0x04, 0x10, 0x20, 0x24
QPT_RC, QPT_UD = 2, 4
A_STATE, A_ACCESS, A_PKEY, A_PORT, A_QKEY, A_AV = 1, 1 << 3, 1 << 4, 1 << 5, 1 << 6, 1 << 7
A_MTU, A_TIMEOUT, A_RETRY, A_RNR, A_RQ_PSN, A_MAX_RD = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12, 1 << 13
A_MIN_RNR, A_SQ_PSN, A_MAX_DEST_RD, A_DEST_QPN = 1 << 15, 1 << 16, 1 << 17, 1 << 20
QKEY = 0x1234
IP = bytes([10, 0, 2, 15])
MAC = bytes([0x52, 0x54, 0x00, 0x12, 0x34, 0x56])   # the device's default MAC
GID = bytes(10) + b'\xff\xff' + IP
PEER_MAC = bytes([0x52, 0x55, 0x0a, 0x00, 0x02, 0x02])
PEER_GID = bytes(10) + b'\xff\xff' + bytes([10, 0, 2, 2])


def le64(v):
    return struct.pack('<Q', v)


def pbl(addr, pages=1):
    return struct.pack('<QIBBH', addr, pages, 1, 12, 0)


def qp_attr(state, qkey=0, sq_psn=0, rq_psn=0, dest_qpn=0, mtu=0,
            timeout=0, retry=0, rnr=0, min_rnr=0, rd=0, dest_rd=0,
            access=0, dgid=bytes(16), dmac=bytes(6), hop=0):
    a = struct.pack('<BBBBBBBBBBBBIIIIII', state, 0, mtu, timeout, retry,
                    rnr, min_rnr, rd, dest_rd, 0, hop, 0, access, qkey,
                    dest_qpn, rq_psn, sq_psn, 0)
    a += dgid + dmac + bytes(2) + bytes(4)
    assert len(a) == 64
    return a


class Seed:
    """The operations of one input and the guest memory they stand for."""

    def __init__(self, name):
        self.name = name
        self.ops = []           # (kind, bytes, expected qtest command or None)
        self.mem = {}           # page address -> bytearray(4096)
        self.cmdq_pi = 0
        self.cookie = 0

    # guest memory as a driver would have written it
    def poke(self, addr, data):
        while data:
            page = addr & ~0xfff
            off = addr - page
            n = min(len(data), 4096 - off)
            self.mem.setdefault(page, bytearray(4096))[off:off + n] = data[:n]
            addr += n
            data = data[n:]

    def peek(self, addr, length):
        out = b''
        while length:
            page = addr & ~0xfff
            off = addr - page
            n = min(length, 4096 - off)
            out += bytes(self.mem.get(page, bytearray(4096))[off:off + n])
            addr += n
            length -= n
        return out

    # operations; "dma" ones may make the device read RAM
    def pci_write(self, dev, off, val, size=4):
        devfn = {PCI_MCH: 0, PCI_PORT: 2 << 3}[dev]
        cmd = 'outl 0xcf8 0x%x' % (0x80000000 | devfn << 8 | off)
        self.ops.append(('pci', bytes([OP_PCI_WRITE]) +
                         struct.pack('<BBBxI', SZ[size], dev, off, val), cmd))

    def write(self, mr, off, val, size=4, dma=False):
        base = {MR_ECAM: ECAM, MR_REGS: BAR0, MR_MSIX: BAR4, MR_DB: BAR2}[mr]
        name = {1: 'writeb', 2: 'writew', 4: 'writel', 8: 'writeq'}[size]
        cmd = '%s 0x%x 0x%x' % (name, base + off, val)
        self.ops.append(('dma' if dma else 'mmio', bytes([OP_WRITE]) +
                         struct.pack('<BBxxIQ', SZ[size], mr, off, val), cmd))

    def read(self, mr, off):
        base = {MR_REGS: BAR0}[mr]
        self.ops.append(('mmio', bytes([OP_READ]) +
                         struct.pack('<BBxxI', SZ[4], mr, off),
                         'readl 0x%x' % (base + off)))

    def clock_step(self, n=1):
        for _ in range(n):
            self.ops.append(('clock', bytes([OP_CLOCK_STEP]), 'clock_step'))

    # the device
    def reg(self, off, val):
        self.write(MR_REGS, off, val, dma=True)

    def db(self, off, val, page=0):
        self.write(MR_DB, page * 4096 + off, val, dma=True)

    def cmd(self, opcode, payload=b'', resp=RESP, resp_len=256):
        self.cookie += 1
        c = struct.pack('<HHIQII', opcode, 0, self.cookie, resp, resp_len, 0)
        c += payload
        c += bytes(128 - len(c))
        slot = self.cmdq_pi & ((1 << CMDQ_LOG) - 1)
        self.poke(CMDQ + 128 * slot, c)
        self.cmdq_pi += 1
        self.db(DB_CMDQ, self.cmdq_pi)


def platform(s, vec1_addr, vec1_data):
    """ECAM on, the port's buses and window, BARs, bus master, MSI-X."""
    s.pci_write(PCI_MCH, 0x64, 0)
    s.pci_write(PCI_MCH, 0x60, ECAM | 1)
    s.pci_write(PCI_PORT, 0x18, 0x00010100)        # buses 0, 1, 1
    s.pci_write(PCI_PORT, 0x20, 0xc0f0c000)        # memory 0xc0000000-0xc0ffffff
    s.pci_write(PCI_PORT, 0x24, 0x0000fff0)        # prefetchable window off
    for off, val in ((0x10, BAR0), (0x14, 0), (0x18, BAR2), (0x1c, 0),
                     (0x20, BAR4), (0x24, 0)):
        s.write(MR_ECAM, DEV_CFG + off, val)
    s.write(MR_ECAM, DEV_CFG + 0x04, 0x0006, size=2)
    s.write(MR_ECAM, DEV_CFG + DEV_MSIX_CAP + 2, 0x8000, size=2)
    for v, (addr, data) in enumerate(((MSI_SINK, 0), (vec1_addr, vec1_data))):
        s.write(MR_MSIX, 16 * v, addr & 0xffffffff)
        s.write(MR_MSIX, 16 * v + 4, addr >> 32)
        s.write(MR_MSIX, 16 * v + 8, data)
        s.write(MR_MSIX, 16 * v + 12, 0)


def bring_up(s):
    s.reg(REG_CTRL, 2)
    for off, val in ((0x40, CMDQ), (0x44, 0), (0x48, CMDQ_LOG),
                     (0x50, CMDCQ), (0x54, 0), (0x58, CMDCQ_LOG),
                     (0x60, AEQ), (0x64, 0), (0x68, AEQ_LOG)):
        s.reg(off, val)
    s.reg(REG_CTRL, 1)
    s.read(MR_REGS, REG_STATUS)


def objects(s):
    """PD 1, EQ 1 on vector 1, CQ 1, GID 0, AH 1 (to the slirp gateway)."""
    s.cmd(CMD_QUERY_PORT)
    s.cmd(CMD_ALLOC_PD)
    s.poke(EQ_PBL, le64(EQ_RING))
    s.cmd(CMD_CREATE_EQ, pbl(EQ_PBL) + struct.pack('<B3xI', 6, 1))
    s.poke(CQ_PBL, le64(CQ_RING))
    s.cmd(CMD_CREATE_CQ, pbl(CQ_PBL) + struct.pack('<B3xIII', 6, 1, 0, 0))
    s.cmd(CMD_ADD_GID, struct.pack('<II', 0, 0) + GID)
    s.cmd(CMD_CREATE_AH, struct.pack('<IBBBBI', 1, 0, 64, 0, 0, 0) +
          PEER_MAC + bytes(2) + PEER_GID)


def create_qp(s, n, qptype):
    """QP number n (2, 3, ...): 16 x 128-byte SQ WQEs, 16 x 64-byte RQ WQEs."""
    base = QP_MEM + (n - 2) * 0x4000
    s.poke(base, le64(base + 0x1000))
    s.poke(base + 0x2000, le64(base + 0x3000))
    s.cmd(CMD_CREATE_QP,
          struct.pack('<BBBBBBHIIIIII', qptype, 4, 4, 7, 6, 0, 0, 1, 1, 1,
                      0xffffffff, 0, 64) + pbl(base) + pbl(base + 0x2000))
    return base + 0x1000, base + 0x3000


def modify(s, qpn, mask, attr):
    s.cmd(CMD_MODIFY_QP, struct.pack('<II', qpn, mask) + attr)


def ud_up(s, qpn):
    modify(s, qpn, A_STATE | A_PKEY | A_PORT | A_QKEY,
           qp_attr(1, qkey=QKEY))
    modify(s, qpn, A_STATE, qp_attr(2))
    modify(s, qpn, A_STATE | A_SQ_PSN, qp_attr(3))


def rc_up(s, qpn, dest):
    modify(s, qpn, A_STATE | A_PKEY | A_PORT | A_ACCESS,
           qp_attr(1, access=0x7))
    modify(s, qpn, A_STATE | A_AV | A_MTU | A_DEST_QPN | A_RQ_PSN |
           A_MAX_DEST_RD | A_MIN_RNR,
           qp_attr(2, mtu=3, dest_qpn=dest, rq_psn=0x100, dest_rd=4,
                   min_rnr=12, dgid=GID, dmac=MAC, hop=64))
    modify(s, qpn, A_STATE | A_TIMEOUT | A_RETRY | A_RNR | A_SQ_PSN |
           A_MAX_RD, qp_attr(3, timeout=14, retry=7, rnr=7, sq_psn=0x100,
                             rd=4))


def arm(s):
    s.db(DB_EQ, 1 | 1 << 15)
    s.db(DB_CQ_ARM, 1)


def send_wqe(s, ring, opcode_fields, data):
    w = struct.pack('<BBBBIQ4sI', 2, 1 | 4, 0, 0, len(data), 0x5eed, bytes(4),
                    0) + opcode_fields
    w += bytes(64 - len(w)) + data
    s.poke(ring, w + bytes(128 - len(w)))


def ud_send(s, qpn, ring):
    send_wqe(s, ring, struct.pack('<III', 1, qpn, QKEY),
             b'generic-fuzz UD SEND 32 bytes..!')
    s.db(DB_SQ, qpn | 1 << 16)
    s.clock_step(4)


def seed_qp_up(name='qp-up', vec1=(MSI_SINK + 4, 1)):
    s = Seed(name)
    platform(s, *vec1)
    bring_up(s)
    objects(s)
    sq, _ = create_qp(s, 2, QPT_UD)
    ud_up(s, 2)
    arm(s)
    return s, sq


def seed_ud_send(name='ud-send', vec1=(MSI_SINK + 4, 1)):
    s, sq = seed_qp_up(name, vec1)
    ud_send(s, 2, sq)
    return s


def seed_rc_loopback():
    s = Seed('rc-loopback-send')
    platform(s, MSI_SINK + 4, 1)
    bring_up(s)
    objects(s)
    sq2, _ = create_qp(s, 2, QPT_RC)
    _, rq3 = create_qp(s, 3, QPT_RC)
    # an MR over guest-physical memory for the receive buffer
    s.cmd(CMD_REG_MR, struct.pack('<IIQQ', 1, 1, PAYLOAD, 4096) +
          pbl(0, 0) + struct.pack('<II', 1, 0))
    rc_up(s, 2, 3)
    rc_up(s, 3, 2)
    arm(s)
    s.poke(rq3, struct.pack('<QBBHI', 0x7ecf, 1, 0, 0, 0) +
           struct.pack('<QII', PAYLOAD, 4096, 0x100 | 0))
    s.db(DB_RQ, 3 | 1 << 16)
    send_wqe(s, sq2, b'', b'generic-fuzz RC SEND over loop.!')
    s.db(DB_SQ, 2 | 1 << 16)
    s.clock_step(8)
    return s


def seed_dma_cmd_resp():
    """QUERY_QP of a UD QP whose Q_Key holds SBR: the response's Q_Key
    (byte 16) lands on the port's dword 0x3c"""
    s, _ = seed_qp_up('dma-cmd-resp-bus-reset')
    create_qp(s, 3, QPT_UD)
    modify(s, 3, A_STATE | A_PKEY | A_PORT | A_QKEY,
           qp_attr(1, qkey=0x00400000))
    s.cmd(CMD_QUERY_QP, struct.pack('<II', 3, 0),
          resp=ECAM + PORT_CFG + 0x3c - 16, resp_len=20)
    s.clock_step(2)
    return s


SBR = (ECAM + PORT_CFG + 0x3c, 0x00400000)
POWER_OFF = (ECAM + PORT_CFG + PORT_EXP_CAP + 0x18,
             (PORT_SLTCTL_RESET & ~0x0300) | 0x0300 | 0x0400)

SEEDS = [
    (CORPUS, lambda: seed_qp_up()[0]),
    (CORPUS, seed_ud_send),
    (CORPUS, seed_rc_loopback),
    (CORPUS, seed_dma_cmd_resp),
    (REGRESSIONS, lambda: seed_ud_send('bus-reset-msix-send', SBR)),
    (REGRESSIONS, lambda: seed_ud_send('slot-power-off-msix-send', POWER_OFF)),
]

# What each input must reach, in its trace (regular expressions; "..."
# stands for any lines between)
ANY = r'[^\n]*\n(?:.*\n)*?'
SEND = r'qhca_doorbell page 0 offset 0x0 val 0x10002' + ANY + \
    r'qhca_cqe cqn 1 qpn 2 status 0 opcode 0 byte_len 32' + ANY + \
    r'qhca_eqe eqn 1 type 0x1 obj 1' + ANY + r'qhca_irq vector 1\n'
COMMON = [r'qhca_mmio_read addr 0x8 size 4 val 0x1\b',
          r'qhca_qp_modify qpn 2 state 2 -> 3']
EXPECT = {
    'qp-up': COMMON,
    'ud-send': COMMON + [SEND],
    'rc-loopback-send': COMMON + [
        r'qhca_qp_modify qpn 3 state 2 -> 3',
        r'qhca_loopback',
        r'qhca_cqe cqn 1 qpn 3 status 0 opcode 128 byte_len 32',
        r'qhca_cqe cqn 1 qpn 2 status 0 opcode 0 byte_len 32'],
    # the reset or unplug happens inside the SEND's interrupt, in the SQ
    # doorbell, and (with the fix) waits until the device's code returns
    'bus-reset-msix-send': COMMON + [SEND + r'qhca_reset_deferred asked' +
                                     ANY + r'qhca_reset_deferred_done'],
    'slot-power-off-msix-send': COMMON + [
        SEND + r'qhca_unrealize_deferred' + ANY + r'qhca_stop'],
    'dma-cmd-resp-bus-reset': COMMON + [
        r'qhca_dma_write addr 0xb001002c len 20\n' +
        r'qhca_reset_deferred asked' + ANY + r'qhca_reset_deferred_done'],
}


# ---------------------------------------------------------------------------
# The fuzzer

def config():
    """The qhca entry's .args and .objects, from the patch."""
    text = open(PATCH, encoding='utf-8').read()
    entry = text[text.index('.name = "qhca"'):]
    def field(name):
        m = re.search(r'\.' + name + r'\s*=\s*((?:\+?\s*"[^"]*"\s*)+)', entry)
        return ''.join(re.findall(r'"([^"]*)"', m.group(1)))
    return field('args'), field('objects')


def fuzz_env(trace):
    env = dict(os.environ)
    env.setdefault('ASAN_OPTIONS', 'detect_leaks=0:halt_on_error=1')
    env.setdefault('UBSAN_OPTIONS', 'halt_on_error=1:print_stacktrace=1')
    args, objects = config()
    if trace:
        args += ' -trace qhca_*'
    # the generic target with the predefined config's settings, so the
    # trace can be switched on
    env.update(QEMU_FUZZ_ARGS=args, QEMU_FUZZ_OBJECTS=objects,
               QEMU_AVOID_DOUBLE_FETCH='1')
    return env


def run_fuzzer(path, log=False, trace=False):
    env = fuzz_env(trace)
    if log:
        env.update(FUZZ_SERIALIZE_QTEST='1', QTEST_LOG='1')
    r = subprocess.run([FUZZER, '--fuzz-target=generic-fuzz', '-runs=1', path],
                       env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, errors='replace',
                       check=False)
    return r.returncode, r.stdout


CMD_RE = re.compile(r'(\[DMA\] (?:\[DOUBLE-FETCH\] )?)?\[R \+[0-9.]+\] ([^\n\[]*)')


def encode(s, fills):
    """The input: fills[i] are the (addr, len) DMA fills of operation i."""
    out = []
    for i, (kind, op, _) in enumerate(s.ops):
        pats = [s.peek(a, n) for a, n in fills.get(i, [])]
        if kind == 'dma':
            pats.append(b'\x00')        # a fill not known yet shows up
        for p in pats:
            out.append(bytes([OP_ADD_DMA_PATTERN, 0, 0]) + p)
        out.append(op)
        if pats:
            out.append(bytes([OP_CLEAR_DMA_PATTERNS]))
    for o in out:
        if SEP in o:
            raise SystemExit('%s: an operation holds the separator' % s.name)
    return SEP.join(out)


def parse_ops(s, text):
    """Map the log's commands to operations (PCI_WRITE makes two)."""
    # qtest's log timer is gone in the fuzzer (its chardev "closed"): GLib
    # complains on every line, between a "[DMA] " tag and its command
    text = re.sub(r"\S*: GLib: g_timer_elapsed: assertion '[^']*' failed\n",
                  '', text)
    cmds = [(bool(m.group(1)), m.group(2).strip())
            for m in CMD_RE.finditer(text)]
    first = s.ops[0][2]
    start = next(i for i, (d, c) in enumerate(cmds) if c == first and not d)
    fills = {}
    i = 0
    pending = 0                 # commands of operation i still to come
    cur = None
    for dma, c in cmds[start:]:
        if dma:
            if cur is None or not c.startswith('write '):
                raise SystemExit('%s: unexpected DMA fill: %s' % (s.name, c))
            f = c.split()
            fills.setdefault(cur, []).append((int(f[1], 16), int(f[2], 16)))
            continue
        if pending:
            pending -= 1
            continue
        if i >= len(s.ops):
            break
        kind, _, want = s.ops[i]
        if not c.startswith(want):
            raise SystemExit('%s: operation %d made "%s", meant "%s"' %
                             (s.name, i, c, want))
        cur = i
        pending = 1 if kind == 'pci' else 0
        i += 1
    if i < len(s.ops):
        raise SystemExit('%s: the log ends at operation %d of %d (%s)' %
                         (s.name, i, len(s.ops), s.ops[i][2]))
    return fills


def discover(s, tmp):
    """Find every operation's DMA fills; return the input."""
    fills = {}
    for _ in range(64):
        data = encode(s, fills)
        with open(tmp, 'wb') as f:
            f.write(data)
        rc, text = run_fuzzer(tmp, log=True)
        seen = parse_ops(s, text)
        new = {}
        grew = False
        for i, got in seen.items():
            known = fills.get(i, [])
            if got[:len(known)] != known:
                raise SystemExit('%s: operation %d: fills %s, expected %s' %
                                 (s.name, i, got, known))
            if len(got) > len(known):
                # the first unknown fill is right, what follows it is not
                new[i] = got[:len(known) + 1]
                grew = True
            else:
                new[i] = known
        for i in fills:
            if i not in seen:
                raise SystemExit('%s: operation %d made no fill now' %
                                 (s.name, i))
        fills = new
        if not grew:
            break
    else:
        raise SystemExit('%s: the fills do not settle' % s.name)
    # the final input: exactly the fills found, no probe patterns
    out = []
    for i, (kind, op, _) in enumerate(s.ops):
        pats = [s.peek(a, n) for a, n in fills.get(i, [])]
        for p in pats:
            out.append(bytes([OP_ADD_DMA_PATTERN, 0, 0]) + p)
        out.append(op)
        if pats:
            out.append(bytes([OP_CLEAR_DMA_PATTERNS]))
    return SEP.join(out), fills


# Commands refused on purpose (by opcode and cookie); every other must be OK
REFUSED = {}


def check(name, path):
    rc, text = run_fuzzer(path, trace=True)
    missing = [e for e in EXPECT[name] if not re.search(e, text)]
    for m in re.finditer(r'qhca_cmd \w+ (opcode 0x\w+ cookie 0x\w+ status [1-9]\d*)',
                         text):
        if m.group(1) not in REFUSED.get(name, set()):
            missing.append('command OK, not ' + m.group(1))
    bad = [line for line in text.splitlines()
           if 'ERROR: AddressSanitizer' in line or 'runtime error' in line]
    ok = rc == 0 and not missing and not bad
    print('%s - fuzz-qemu-seed %s: exit %d%s%s' %
          ('ok' if ok else 'not ok', name, rc,
           '; missing: ' + ', '.join(missing) if missing else '',
           '; ' + bad[0] if bad else ''), flush=True)
    return ok, text


def main():
    global FUZZER  # pylint: disable=global-statement
    ap = argparse.ArgumentParser(
        description=__doc__.split('\n')[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog='\n'.join(__doc__.split('\n')[1:]))
    ap.add_argument('--check', action='store_true',
                    help='only replay the inputs written and check their trace')
    ap.add_argument('--trace-dir', help='keep each check\'s output there')
    ap.add_argument('--fuzzer', default=None,
                    help='qemu-fuzz-x86_64 to run (default: '
                    'build/qemu-san/qemu-fuzz-x86_64)')
    args = ap.parse_args()
    if args.fuzzer:
        FUZZER = args.fuzzer
    if not os.access(FUZZER, os.X_OK):
        print('%s missing: scripts/build qemu-san' % FUZZER, file=sys.stderr)
        return 1
    ok = True
    for where, make in SEEDS:
        s = make()
        path = os.path.join(where, s.name)
        if not args.check:
            os.makedirs(where, exist_ok=True)
            data, fills = discover(s, path + '.tmp')
            os.unlink(path + '.tmp')
            with open(path, 'wb') as f:
                f.write(data)
            print('# %s: %d operations, %d DMA fills, %d bytes' %
                  (os.path.relpath(path, TOP), len(s.ops),
                   sum(len(v) for v in fills.values()), len(data)))
        good, text = check(s.name, path)
        ok &= good
        if args.trace_dir:
            os.makedirs(args.trace_dir, exist_ok=True)
            with open(os.path.join(args.trace_dir, s.name + '.log'), 'w',
                      encoding='utf-8') as f:
                f.write(text)
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
