#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# Copyright (c) 2026 The qhca authors
"""A PCIe device resets or unplugs itself from inside its own code.

  tests/upstream/pcie-self-reset.py [--qemu FILE] [--device NAME]...
        [--target sbr|slot] [--via msix|dma] [--runs N] [--valgrind]
        [--log-dir DIR] [--trace PATTERN]... [--keep-going]

QEMU's own devices (e1000e, igb, nvme) behind a pcie-root-port on q35,
driven over the qtest protocol (-accel qtest, no guest). The script enables
q35's ECAM window (PCIEXBAR, MCH config 0x60), gives the port its bus
numbers and memory window, maps the device's BARs, enables MSI-X and aims
one vector (or, --via dma, a DMA write of the device) at the port's own
config space in ECAM:

  --target sbr   Bridge Control (0x3e), data with Secondary Bus Reset (0x40):
                 the port resets its secondary bus, so the device, inside
                 the write
  --target slot  Slot Control (PCIe capability + 0x18), power controller off
                 and power indicator off: the port unplugs the device
                 (pcie_cap_slot_do_unplug), inside the write; needs native
                 hot-plug on the port (ACPI PCI hot-plug off)

then makes the device raise that vector from inside its own code:

  e1000e   ICS write (RXQ0 -> the aimed vector, TXQ0 -> vector 0 with a
           non-zero EITR0): e1000e_msix_notify() inside the MMIO write
  igb      EICS write with GPIE.MSIX_MODE (bits 1 and 2; EITR2 non-zero):
           igb_send_msix() inside the MMIO write
  nvme     an I/O CQ (qid 1, vector 1) and SQ, then a Flush: the CQE's
           interrupt in nvme_post_cqes(), the CQ's bottom half
  nvme --via dma
           the admin CQ (ACQ) placed at the port's config page in ECAM;
           three Get Features and one Set Features (Command Set Profile,
           cdw11=1) submitted at once: the fourth CQE's status
           (IOCS_COMBINATION_REJECTED | DNR, shifted, with the phase bit:
           0x8257) lands on Bridge Control with SBR set, inside the
           pci_dma_write() of nvme_post_cqes()

Each run is one QEMU (under valgrind with --valgrind, log in --log-dir),
stopped with SIGTERM after 10 ms of virtual time once the vector or CQE was
raised. A run fails ("not ok") if QEMU dies (a signal, an abort), hangs (no
reply to a qtest command in 60 s, 300 s under valgrind; then it is killed),
exits non-zero, or valgrind reports errors (Invalid read/write, use of freed
memory; with a QEMU built with ASan, a sanitizer report: ASAN_OPTIONS
defaults to detect_leaks=0). Each line also says whether the reset or unplug happened (the
device's command register reads 0 after a reset, its vendor ID 0xffff after
an unplug).

Exit status: 0 if every run was clean, 1 if any failed, 2 for bad arguments.
"""

import argparse
import os
import re
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_QEMU = os.path.join(TOP, 'build', 'qemu', 'qemu-system-x86_64')

ECAM = 0xb0000000           # PCIEXBAR's default base (MCH_HOST_BRIDGE_PCIEXBAR_DEFAULT)
RP_DEV = 2                  # the pcie-root-port at 00:02.0
WIN_BASE = 0xc0000000       # the port's memory window
WIN_LIMIT = 0xc0ffffff
SINK = 0x00300000           # RAM the vectors not aimed at the port write to
QEMU_WAIT_S = 600           # valgrind on a loaded machine starts slowly


def ecam(bus, dev, fn, off):
    return ECAM | bus << 20 | dev << 15 | fn << 12 | off


class QemuDied(Exception):
    pass


class Qtest:
    """One QEMU with -qtest on a unix socket this side listens on."""

    def __init__(self, argv, log_path, reply_timeout):
        self.reply_timeout = reply_timeout
        self.hung = False
        self.dir = tempfile.mkdtemp(prefix='pcie-self-reset.')
        path = os.path.join(self.dir, 'qtest.sock')
        self.lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.lsock.bind(path)
        self.lsock.listen(1)
        self.log = open(log_path, 'w', encoding='utf-8')
        self.argv = argv + ['-qtest', 'unix:' + path]
        self.log.write('# ' + ' '.join(self.argv) + '\n')
        self.log.flush()
        env = dict(os.environ)
        # an ASan build: QEMU's exit leaks are not what is looked for
        env.setdefault('ASAN_OPTIONS', 'detect_leaks=0')
        self.proc = subprocess.Popen(self.argv, stdout=self.log,
                                     stderr=subprocess.STDOUT, env=env)
        self.lsock.settimeout(1)
        deadline = time.monotonic() + QEMU_WAIT_S
        while True:
            try:
                self.sock, _ = self.lsock.accept()
                break
            except socket.timeout:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise QemuDied('QEMU did not connect to the qtest socket')
        self.sock.settimeout(None)
        self.buf = b''

    def cmd(self, line):
        try:
            self.sock.sendall(line.encode() + b'\n')
        except OSError as e:
            raise QemuDied('qtest socket: %s (after "%s")' % (e, line)) from e
        deadline = time.monotonic() + self.reply_timeout
        while True:
            while b'\n' not in self.buf:
                r, _, _ = select.select([self.sock], [], [], 5)
                if not r:
                    if self.proc.poll() is not None:
                        raise QemuDied('QEMU exited during "%s"' % line)
                    if time.monotonic() > deadline:
                        self.hung = True
                        raise QemuDied('QEMU hung: no reply in %d s to "%s"'
                                       % (self.reply_timeout, line))
                    continue
                try:
                    data = self.sock.recv(65536)
                except OSError:
                    data = b''
                if not data:
                    raise QemuDied('QEMU closed the qtest socket during "%s"'
                                   % line)
                self.buf += data
            reply, self.buf = self.buf.split(b'\n', 1)
            reply = reply.decode(errors='replace')
            if reply.startswith('IRQ'):
                continue
            if not reply.startswith('OK'):
                raise QemuDied('qtest "%s": %s' % (line, reply))
            return reply[2:].strip()

    def outl(self, port, val):
        self.cmd('outl 0x%x 0x%x' % (port, val))

    def readb(self, a):
        return int(self.cmd('readb 0x%x' % a), 16)

    def readw(self, a):
        return int(self.cmd('readw 0x%x' % a), 16)

    def readl(self, a):
        return int(self.cmd('readl 0x%x' % a), 16)

    def readq(self, a):
        return int(self.cmd('readq 0x%x' % a), 16)

    def writew(self, a, v):
        self.cmd('writew 0x%x 0x%x' % (a, v))

    def writel(self, a, v):
        self.cmd('writel 0x%x 0x%x' % (a, v))

    def writeq(self, a, v):
        self.cmd('writeq 0x%x 0x%x' % (a, v))

    def memwrite(self, a, data):
        self.cmd('write 0x%x 0x%x 0x%s' % (a, len(data), data.hex()))

    def clock_step(self, ns):
        self.cmd('clock_step %d' % ns)

    def stop(self, timeout):
        """SIGTERM (QEMU shuts down normally); return its exit status."""
        try:
            self.sock.close()
        except OSError:
            pass
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        if self.hung:
            timeout = min(timeout, 30)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
            self.log.write('# killed after %d s\n' % timeout)
        self.log.close()
        self.lsock.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        return rc


# ---------------------------------------------------------------------------
# PCI set-up through ECAM

def find_cap(q, bus, dev, cap_id):
    pos = q.readb(ecam(bus, dev, 0, 0x34)) & 0xfc
    while pos:
        hdr = q.readw(ecam(bus, dev, 0, pos))
        if hdr & 0xff == cap_id:
            return pos
        pos = (hdr >> 8) & 0xfc
    raise QemuDied('no capability 0x%x on %02x:%02x.0' % (cap_id, bus, dev))


def setup_port(q):
    # PCIEXBAR (MCH 00:00.0 config 0x60): base 0xb0000000, 256 MiB, enabled
    q.outl(0xcf8, 0x80000064)
    q.outl(0xcf8 + 4, 0)
    q.outl(0xcf8, 0x80000060)
    q.outl(0xcf8 + 4, ECAM | 1)
    rp = lambda off: ecam(0, RP_DEV, 0, off)  # noqa: E731
    if q.readw(rp(0)) == 0xffff:
        raise QemuDied('no root port at 00:%02x.0 through ECAM' % RP_DEV)
    q.writel(rp(0x18), 0x00010100)                 # primary 0, secondary 1, subordinate 1
    q.writel(rp(0x1c), 0x000000f0)                 # I/O window off
    q.writel(rp(0x20), (WIN_LIMIT >> 16 & 0xfff0) << 16 | WIN_BASE >> 16)
    q.writel(rp(0x24), 0x0000fff0)                 # prefetchable window off
    q.writel(rp(0x28), 0)
    q.writel(rp(0x2c), 0)
    q.writew(rp(0x04), 0x0006)                     # memory, bus master
    return find_cap(q, 0, RP_DEV, 0x10)


def setup_endpoint(q):
    """Map the memory BARs of 01:00.0 in the port's window; return them."""
    ep = lambda off: ecam(1, 0, 0, off)  # noqa: E731
    if q.readw(ep(0)) == 0xffff:
        raise QemuDied('no device at 01:00.0')
    bars = {}
    nxt = WIN_BASE
    i = 0
    while i < 6:
        reg = ep(0x10 + 4 * i)
        q.writel(reg, 0xffffffff)
        v = q.readl(reg)
        if v == 0 or v & 1:                         # none, or I/O: left off
            q.writel(reg, 0)
            i += 1
            continue
        is64 = (v >> 1) & 3 == 2
        size = (~(v & ~0xf) & 0xffffffff) + 1
        nxt = (nxt + size - 1) & ~(size - 1)
        q.writel(reg, nxt)
        if is64:
            q.writel(ep(0x10 + 4 * (i + 1)), 0)
        bars[i] = nxt
        nxt += size
        i += 2 if is64 else 1
    q.writew(ep(0x04), 0x0006)
    return bars


def setup_msix(q, bars, attack_vec, attack_addr, attack_data):
    """Enable MSI-X; every vector writes RAM at SINK but attack_vec."""
    ep = lambda off: ecam(1, 0, 0, off)  # noqa: E731
    cap = find_cap(q, 1, 0, 0x11)
    ctrl = q.readw(ep(cap + 2))
    n = (ctrl & 0x7ff) + 1
    tbl = q.readl(ep(cap + 4))
    base = bars[tbl & 7] + (tbl & ~7)
    q.writew(ep(cap + 2), (ctrl | 0x8000) & ~0x4000)
    for v in range(n):
        e = base + 16 * v
        if v == attack_vec:
            q.writel(e, attack_addr)
            q.writel(e + 4, 0)
            q.writel(e + 8, attack_data)
        else:
            q.writel(e, SINK + 4 * v)
            q.writel(e + 4, 0)
            q.writel(e + 8, 0x1000 + v)
        q.writel(e + 12, 0)                         # unmasked
    return n


def attack_target(q, target, exp_cap):
    """Address and data of the write that resets or unplugs."""
    if target == 'sbr':
        # dword 0x3c: interrupt line 0, pin (read-only), Bridge Control SBR
        return ecam(0, RP_DEV, 0, 0x3c), 0x00400000
    a = ecam(0, RP_DEV, 0, exp_cap + 0x18)
    sltctl = q.readw(a)
    # PCC (0x400) = power off, PIC (0x300) = indicator off; Slot Status 0
    return a, (sltctl & ~0x0700) | 0x0700


def device_state(q, port_restore=False):
    ep = lambda off: ecam(1, 0, 0, off)  # noqa: E731
    if port_restore:
        q.writel(ecam(0, RP_DEV, 0, 0x18), 0x00010100)
        q.writew(ecam(0, RP_DEV, 0, 0x04), 0x0006)
    vid = q.readw(ep(0))
    if vid == 0xffff:
        return 'unplugged (01:00.0 vendor ID 0xffff)'
    cmd = q.readw(ep(4))
    bar0 = q.readl(ep(0x10))
    if cmd == 0:
        return 'reset (command 0x0000, BAR0 0x%08x)' % bar0
    return 'present, not reset (command 0x%04x)' % cmd


# ---------------------------------------------------------------------------
# The devices

def e1000e_args():
    return ['-netdev', 'hubport,id=n0,hubid=0',
            '-device', 'e1000e,id=dut,bus=rp0,netdev=n0,romfile=']


def e1000e_run(q, target, via):
    exp = setup_port(q)
    bars = setup_endpoint(q)
    addr, data = attack_target(q, target, exp)
    setup_msix(q, bars, 1, addr, data)
    mmio = bars[0]
    q.writel(mmio + 0xe4, 0x00000809)               # IVAR: RXQ0 -> 1, TXQ0 -> 0
    q.writel(mmio + 0xe8, 0x100)                    # EITR0
    q.writel(mmio + 0xd0, 0x00500000)               # IMS: RXQ0 | TXQ0
    q.writel(mmio + 0xc8, 0x00500000)               # ICS: raise both


def igb_args():
    return ['-netdev', 'hubport,id=n0,hubid=0',
            '-device', 'igb,id=dut,bus=rp0,netdev=n0,romfile=']


def igb_run(q, target, via):
    exp = setup_port(q)
    bars = setup_endpoint(q)
    addr, data = attack_target(q, target, exp)
    setup_msix(q, bars, 1, addr, data)
    mmio = bars[0]
    q.writel(mmio + 0x1514, 0x10)                   # GPIE.MSIX_MODE
    q.writel(mmio + 0x1680 + 4 * 2, 0x100)          # EITR2
    q.writel(mmio + 0x1524, 0x6)                    # EIMS: vectors 1, 2
    q.writel(mmio + 0x1520, 0x6)                    # EICS: raise both


def nvme_args():
    return ['-blockdev', 'driver=null-co,node-name=null0,read-zeroes=on',
            '-device', 'nvme,id=dut,bus=rp0,serial=deadbeef,drive=null0']


ASQ, ACQ, IOSQ, IOCQ = 0x110000, 0x120000, 0x130000, 0x140000


def nvme_sqe(opcode, cid, nsid=0, prp1=0, cdw10=0, cdw11=0):
    return struct.pack('<BBHI16xQQII16x', opcode, 0, cid, nsid, prp1, 0,
                       cdw10, cdw11)


def nvme_enable(q, bar0, acq, acqs):
    q.writel(bar0 + 0x14, 0)
    q.writel(bar0 + 0x24, acqs << 16 | 15)          # AQA: ACQS, ASQS 15
    q.writeq(bar0 + 0x28, ASQ)
    q.writeq(bar0 + 0x30, acq)
    q.writel(bar0 + 0x14, 0x00460001)               # IOCQES 4, IOSQES 6, EN
    for _ in range(100):
        if q.readl(bar0 + 0x1c) & 1:
            return
        q.clock_step(1000000)
    raise QemuDied('nvme: CSTS.RDY not set (CSTS 0x%x)' % q.readl(bar0 + 0x1c))


def nvme_admin(q, bar0, idx, sqe):
    """Submit admin command idx (0-based, no wrap) and wait for its CQE."""
    q.memwrite(ASQ + 64 * idx, sqe)
    q.writel(bar0 + 0x1000, idx + 1)
    for _ in range(200):
        dw3 = q.readl(ACQ + 16 * idx + 12)
        if dw3 >> 16 & 1:                           # phase bit of pass 1
            status = dw3 >> 17
            q.writel(bar0 + 0x1004, idx + 1)
            if status:
                raise QemuDied('nvme admin command %d: status 0x%x'
                               % (idx, status))
            return
        q.clock_step(100000)
    raise QemuDied('nvme admin command %d: no completion' % idx)


def nvme_run(q, target, via):
    exp = setup_port(q)
    bars = setup_endpoint(q)
    bar0 = bars[0]
    if via == 'dma':
        if target != 'sbr':
            raise SystemExit('nvme --via dma: only --target sbr')
        setup_msix(q, bars, -1, 0, 0)
        # the admin CQ is the port's config page: CQE 3 covers 0x30-0x3f,
        # its dword 3 (command id | status << 16) Bridge Control
        nvme_enable(q, bar0, ecam(0, RP_DEV, 0, 0), 15)
        for cid in range(3):                        # Get Features, Arbitration
            q.memwrite(ASQ + 64 * cid, nvme_sqe(0x0a, cid, cdw10=0x01))
        q.memwrite(ASQ + 64 * 3,                    # Set Features, Command Set Profile
                   nvme_sqe(0x09, 3, cdw10=0x19, cdw11=1))
        q.writel(bar0 + 0x1000, 4)
        return
    addr, data = attack_target(q, target, exp)
    setup_msix(q, bars, 1, addr, data)
    nvme_enable(q, bar0, ACQ, 15)
    # Create I/O CQ 1 (16 entries, vector 1, IEN, PC), then I/O SQ 1
    nvme_admin(q, bar0, 0, nvme_sqe(0x05, 0, prp1=IOCQ, cdw10=15 << 16 | 1,
                                    cdw11=1 << 16 | 3))
    nvme_admin(q, bar0, 1, nvme_sqe(0x01, 1, prp1=IOSQ, cdw10=15 << 16 | 1,
                                    cdw11=1 << 16 | 1))
    q.memwrite(IOSQ, nvme_sqe(0x00, 7, nsid=1))    # Flush
    q.writel(bar0 + 0x1008, 1)                      # SQ 1 tail


DEVICES = {
    'e1000e': (e1000e_args, e1000e_run),
    'igb': (igb_args, igb_run),
    'nvme': (nvme_args, nvme_run),
}


# ---------------------------------------------------------------------------

VG_ERR = re.compile(r'^==\d+== (Invalid (read|write|free)[^\n]*|'
                    r'Use of uninitialised[^\n]*|'
                    r'Conditional jump[^\n]*|'
                    r'Process terminating[^\n]*)', re.M)


def one_run(args, dev, n):
    name = '%s-%s-%s-%d' % (dev, args.target, args.via, n)
    log = os.path.join(args.log_dir, name + '.log')
    vglog = os.path.join(args.log_dir, name + '.valgrind')
    argv = []
    if args.valgrind:
        argv = ['valgrind', '--log-file=' + vglog, '--num-callers=30',
                '--trace-children=no']
    argv += [args.qemu, '-machine', 'q35', '-accel', 'qtest', '-nodefaults',
             '-display', 'none', '-m', '256M',
             '-global', 'ICH9-LPC.acpi-pci-hotplug-with-bridge-support=off',
             '-device', 'pcie-root-port,id=rp0,chassis=1,addr=%02x.0' % RP_DEV]
    for t in args.trace:
        argv += ['-trace', t]
    mkargs, run = DEVICES[dev]
    argv += mkargs()
    what = []
    state = '?'
    q = None
    try:
        q = Qtest(argv, log, 300 if args.valgrind else 60)
        run(q, args.target, args.via)
        for _ in range(10):                         # bottom halves, timers
            q.clock_step(1000000)
        state = device_state(q, port_restore=(args.via == 'dma'))
    except QemuDied as e:
        what.append(str(e))
    rc = q.stop(600 if args.valgrind else 60) if q else None
    if q and q.hung and rc == -signal.SIGKILL:
        what.append('QEMU killed (SIGKILL) after it hung')
    elif rc is not None and rc < 0:
        what.append('QEMU killed by signal %d (%s)' %
                    (-rc, signal.Signals(-rc).name))
    elif rc:
        what.append('QEMU exit status %d' % rc)
    with open(log, encoding='utf-8', errors='replace') as f:
        out = f.read()
    for pat in (r'SUMMARY: (\w+Sanitizer: [^\n]*)',
                r'(double free or corruption[^\n]*)', r'(malloc\(\)[^\n]*)',
                r'(free\(\)[^\n]*)', r'(Assertion[^\n]*)',
                r'(qemu-system-x86_64: [^\n]*)'):
        for m in re.finditer(pat, out):
            # qtest mode's own log after the socket closed, at SIGTERM
            if 'g_timer_elapsed' not in m.group(1):
                what.append(m.group(1).strip())
                break
    vg = ''
    if args.valgrind and os.path.exists(vglog):
        with open(vglog, encoding='utf-8', errors='replace') as f:
            text = f.read()
        m = re.search(r'ERROR SUMMARY: (\d+) errors? from (\d+) contexts?', text)
        errs = int(m.group(1)) if m else -1
        kinds = {}
        for k in VG_ERR.findall(text):
            kinds[k[0]] = kinds.get(k[0], 0) + 1
        vg = '; valgrind: %s errors' % (errs if errs >= 0 else 'no summary')
        if kinds:
            vg += ' (' + ', '.join('%d x %s' % (c, k)
                                   for k, c in sorted(kinds.items())) + ')'
        if errs != 0:
            what.append('valgrind errors')
    ok = not what
    print('%s - %s: device %s%s%s (log %s)' %
          ('ok' if ok else 'not ok', name, state, vg,
           '' if ok else '; ' + '; '.join(what), log), flush=True)
    return ok


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split('\n')[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog='\n'.join(__doc__.split('\n')[1:]))
    ap.add_argument('--qemu', default=os.environ.get('QEMU') or (
        DEFAULT_QEMU if os.path.exists(DEFAULT_QEMU) else 'qemu-system-x86_64'),
        help='QEMU binary (default: $QEMU, build/qemu/qemu-system-x86_64, '
        'qemu-system-x86_64 from PATH)')
    ap.add_argument('--device', action='append', choices=sorted(DEVICES),
                    help='device to try (repeatable; default: all)')
    ap.add_argument('--target', choices=['sbr', 'slot'], default='sbr')
    ap.add_argument('--via', choices=['msix', 'dma'], default='msix',
                    help='dma: nvme only, its admin CQ in ECAM')
    ap.add_argument('--runs', type=int, default=3)
    ap.add_argument('--valgrind', action='store_true')
    ap.add_argument('--log-dir', default=None,
                    help='logs (default: a new directory under /tmp)')
    ap.add_argument('--trace', action='append', default=[],
                    help="QEMU -trace pattern, e.g. 'pci_nvme_*'")
    args = ap.parse_args()
    devs = args.device or sorted(DEVICES)
    if args.via == 'dma' and devs != ['nvme']:
        ap.error('--via dma is implemented for --device nvme only')
    if args.via == 'dma' and args.target != 'sbr':
        ap.error('--via dma: --target sbr only')
    if args.runs < 1:
        ap.error('--runs must be at least 1')
    if args.valgrind and not shutil.which('valgrind'):
        ap.error('valgrind not found')
    if not args.log_dir:
        args.log_dir = tempfile.mkdtemp(prefix='pcie-self-reset-logs.')
    os.makedirs(args.log_dir, exist_ok=True)
    bad = 0
    for dev in devs:
        for n in range(1, args.runs + 1):
            if not one_run(args, dev, n):
                bad += 1
    total = len(devs) * args.runs
    print('# %d of %d runs failed (logs in %s)' % (bad, total, args.log_dir))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
