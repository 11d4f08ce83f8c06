#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
# Copyright (c) 2026 The qhca authors
"""The link emulator of the simulated fabric (qhca-linkem.c), on real veths:

  linkem-test.py QHCA-LINKEM

In a network namespace of its own (qlemt-PID), two veth pairs a0-a1 and
b0-b1 (MTU 9000, IPv6 off so that nothing but the test's frames crosses
them), and c1, d1 whose peers are in qlemt-PID-a (10.77.0.1) and
qlemt-PID-b (10.77.0.2), joined by
`qhca-linkem --seed 1 --ctl SOCK L:a1:b1 T:c1:d1`.  This process joins
qlemt-PID (setns) and sends raw Ethernet frames on a0 (direction up of L)
or b0 (down) and receives them on the other side, with each impairment
set over the control socket, and checks what arrives against the counters
of `stats L`; then TCP between the other two namespaces through link T
(GSO super-frames, loss and corruption).  The namespaces are deleted at
the end, qhca-linkem is stopped by its PID.  Needs root and `ip netns`:
otherwise the whole test is skipped ("1..0 # SKIP").  About 10 s.

TAP on stdout, one case per impairment ("ok N /linkem/NAME"), with the
measured numbers as "#" lines.
"""

import ctypes
import os
import random
import select
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

SOL_PACKET = 263
PACKET_AUXDATA = 8
PACKET_IGNORE_OUTGOING = 23
SO_RCVBUFFORCE = 33
TP_STATUS_VLAN_VALID = 1 << 4
TP_STATUS_VLAN_TPID_VALID = 1 << 6
PACKET_OUTGOING = 4
CLONE_NEWNET = 0x40000000

ETYPE = 0x88b5          # local experimental
DST = bytes.fromhex("020000000bbb")
SRC = {"a0": bytes.fromhex("02000000aa00"), "b0": bytes.fromhex("02000000bb00")}
NS = f"qlemt-{os.getpid()}"

results = []


def case(ok, name, notes=()):
    results.append((ok, name, list(notes)))


def sh(*cmd, check=True):
    return subprocess.run(cmd, check=check, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)


class Port:
    """Raw sockets on one veth of the namespace: tx (sends only) and rx
    (every frame arriving, VLAN tags put back from PACKET_AUXDATA)."""

    def __init__(self, ifname):
        self.name = ifname
        self.src = SRC[ifname]
        self.tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
        self.tx.bind((ifname, 0))
        self.rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW,
                                socket.htons(3))
        self.rx.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 64 << 20)
        self.rx.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
        try:
            self.rx.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
        except OSError:
            pass
        self.rx.bind((ifname, 3))
        self.rx.setblocking(False)

    def send(self, frame):
        self.tx.send(frame)

    def poll(self, got, timeout, peer):
        """Append (time, frame) of what arrived from PEER's source address;
        wait up to TIMEOUT for the first.  How many arrived."""
        n = 0
        if not select.select([self.rx], [], [], timeout)[0]:
            return 0
        while True:
            try:
                data, anc, _, addr = self.rx.recvmsg(
                    70000, socket.CMSG_SPACE(20))
            except BlockingIOError:
                return n
            t = time.monotonic()
            if addr[2] == PACKET_OUTGOING:
                continue
            for level, kind, a in anc:
                if level == SOL_PACKET and kind == PACKET_AUXDATA:
                    st, _, _, _, _, tci, tpid = struct.unpack("=IIIHHHH", a[:20])
                    if st & TP_STATUS_VLAN_VALID:
                        if not st & TP_STATUS_VLAN_TPID_VALID:
                            tpid = 0x8100
                        data = data[:12] + struct.pack("!HH", tpid, tci) + data[12:]
            if data[6:12] == peer.src:
                got.append((t, data))
                n += 1


def frame(src, payload, vlan=None, etype=ETYPE):
    tag = struct.pack("!HH", 0x8100, vlan) if vlan is not None else b""
    return DST + src + tag + struct.pack("!H", etype) + payload


def test_frame(src, cid, seq, size, rnd, vlan=None):
    head = b"QLEM" + struct.pack("!BI", cid, seq)
    pad = size - 14 - (4 if vlan is not None else 0) - len(head)
    return frame(src, head + rnd.randbytes(max(pad, 0)), vlan)


def seq_of(f):
    """The sequence number of a test frame (None if not one)."""
    off = 18 if f[12:14] == b"\x81\x00" else 14
    if f[off:off + 4] != b"QLEM":
        return None
    return struct.unpack("!I", f[off + 5:off + 9])[0]


def run(tx, rx, frames, gap=0.0, window=0, idle=0.3, limit=8.0, want=None):
    """Send FRAMES on TX, GAP seconds apart (0: at once) or at most WINDOW
    ahead of what arrived, receiving on RX meanwhile; then until WANT
    arrived or nothing for IDLE s.  ([send times], [(time, frame)])."""
    got, sent = [], []
    t0 = time.monotonic()
    for i, f in enumerate(frames):
        if window:
            stop = time.monotonic() + 2
            while i - len(got) >= window and time.monotonic() < stop:
                rx.poll(got, 0.01, tx)
        if gap:
            due = t0 + i * gap
            while time.monotonic() < due:
                rx.poll(got, 0, tx)
        sent.append(time.monotonic())
        tx.send(f)
        if gap or window:
            rx.poll(got, 0, tx)
    last = time.monotonic()
    stop = last + limit
    while time.monotonic() < stop and (want is None or len(got) < want):
        if rx.poll(got, 0.02, tx):
            last = time.monotonic()
        elif time.monotonic() - last > idle:
            break
    return sent, got


class Ctl:
    def __init__(self, path):
        self.path = path

    def req(self, line):
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
            s.settimeout(5)
            s.connect(self.path)
            s.send(line.encode())
            return s.recv(4096).decode()

    def ok(self, line):
        r = self.req(line)
        check(r == "ok", f"{line!r}: {r!r}")

    def stats(self, name="L"):
        r = self.req("stats " + name)
        check(r.startswith("ok up "), r)
        out = {}
        for part in r[3:].split(" | "):
            words = part.split()
            out[words[0]] = {k: int(v) for k, v in
                             (w.split("=") for w in words[1:])}
        return out


def delta(a, b, d):
    return {k: b[d][k] - a[d][k] for k in b[d] if k != "qmax"}


def check(cond, what):
    if not cond:
        raise AssertionError(what)


class Cases:
    def __init__(self, exe, ctl):
        self.exe = exe
        self.ctl = ctl
        self.a = Port("a0")
        self.b = Port("b0")
        self.notes = []

    def note(self, text):
        self.notes.append(text)

    def fresh(self, *sets):
        """Impairments off, the wires drained, then SETS; stats before."""
        self.ctl.ok("clear L both")
        for p in (self.a, self.b):
            junk = []
            while p.poll(junk, 0.05, self.a) or p.poll(junk, 0, self.b):
                pass
        for s in sets:
            self.ctl.ok("set L " + s)
        return self.ctl.stats()

    def plain(self):
        rnd = random.Random(1)
        st0 = self.fresh()
        frames = [test_frame(SRC["a0"], 1, i, rnd.randint(60, 9000), rnd,
                             vlan=(i % 10 == 3) and (100 | (i % 8) << 13) or None)
                  for i in range(1000)]
        _, got = run(self.a, self.b, frames, window=32, want=1000)
        back = [test_frame(SRC["b0"], 1, i, rnd.randint(60, 9000), rnd)
                for i in range(200)]
        _, got_back = run(self.b, self.a, back, window=32, want=200)
        d = self.ctl.stats()
        up, down = delta(st0, d, "up"), delta(st0, d, "down")
        self.note(f"up: received {len(got)}/1000, rx={up['rx']} tx={up['tx']}; "
                  f"down: {len(got_back)}/200")
        check(len(got) == 1000, f"{len(got)} of 1000 arrived")
        check([f for _, f in got] == frames, "frames differ or reordered")
        check([f for _, f in got_back] == back, "down: frames differ")
        check(up["rx"] == up["tx"] == 1000, f"up counters {up}")
        check(down["rx"] == down["tx"] == 200, f"down counters {down}")
        check(sum(up.values()) == 2000, f"other counters moved: {up}")

    def small(self, cid, n, *sets, gap=50e-6, size=100):
        rnd = random.Random(cid)
        st0 = self.fresh(*sets)
        frames = [test_frame(SRC["a0"], cid, i, size, rnd) for i in range(n)]
        _, got = run(self.a, self.b, frames, gap=gap)
        return frames, got, delta(st0, self.ctl.stats(), "up")

    def loss(self):
        frames, got, up = self.small(2, 2000, "up loss=20")
        seqs = [seq_of(f) for _, f in got]
        missing = 2000 - len(got)
        self.note(f"lost {missing}/2000 ({missing / 20:.1f}%), counter lost={up['lost']}")
        check(seqs == sorted(set(seqs)), "reordered or duplicated")
        check(300 <= missing <= 500, f"{missing} lost")
        check(up["lost"] == missing and up["tx"] == len(got), f"counters {up}")

    def burst(self):
        frames, got, up = self.small(12, 4000, "up loss-burst=5,50", gap=25e-6)
        seen = {seq_of(f) for _, f in got}
        missing = [i for i in range(4000) if i not in seen]
        runs = sum(1 for i in missing if i - 1 not in missing)
        mean = len(missing) / max(runs, 1)
        self.note(f"lost {len(missing)}/4000 in {runs} bursts (mean {mean:.2f}; "
                  f"model: 9.1%, 2.0), counter lost={up['lost']}")
        check(200 <= len(missing) <= 560, f"{len(missing)} lost")
        check(mean >= 1.4, f"mean burst {mean:.2f}")
        check(up["lost"] == len(missing), f"counters {up}")

    def duplicate(self):
        frames, got, up = self.small(3, 2000, "up duplicate=10")
        seqs = [seq_of(f) for _, f in got]
        extra = len(got) - 2000
        self.note(f"{extra} copies of 2000 ({extra / 20:.1f}%), counter "
                  f"duplicated={up['duplicated']} tx={up['tx']}")
        check(set(seqs) == set(range(2000)), "frames missing")
        check(all(seqs.count(s) <= 2 for s in set(seqs)), "more than 2 copies")
        check(100 <= extra <= 300, f"{extra} copies")
        check(up["duplicated"] == extra and up["tx"] == len(got), f"counters {up}")

    def corrupt(self):
        frames, got, up = self.small(4, 2000, "up corrupt=10", size=200)
        check(len(got) == 2000, f"{len(got)} of 2000 arrived")
        bad = 0
        for want, (_, f) in zip(frames, got):
            if f == want:
                continue
            bad += 1
            diff = [(i, x ^ y) for i, (x, y) in enumerate(zip(want, f)) if x != y]
            check(len(f) == len(want) and len(diff) == 1 and diff[0][0] >= 14
                  and bin(diff[0][1]).count("1") == 1, f"not one bit: {diff}")
        self.note(f"{bad}/2000 corrupted ({bad / 20:.1f}%), counter "
                  f"corrupted={up['corrupted']}")
        check(100 <= bad <= 300, f"{bad} corrupted")
        check(up["corrupted"] == bad, f"counters {up}")

    def latencies(self, cid, n, gap, *sets):
        rnd = random.Random(cid)
        self.fresh(*sets)
        frames = [test_frame(SRC["a0"], cid, i, 200, rnd) for i in range(n)]
        sent, got = run(self.a, self.b, frames, gap=gap)
        seqs = [seq_of(f) for _, f in got]
        check(sorted(seqs) == list(range(n)), f"{len(got)} of {n} arrived once")
        return [t - sent[s] for (t, _), s in zip(got, seqs)], seqs

    def delay(self):
        lat, _ = self.latencies(5, 100, 2e-3, "up delay=20000")
        self.note(f"latency {min(lat) * 1e3:.2f}..{max(lat) * 1e3:.2f} ms")
        check(min(lat) >= 0.020 and max(lat) < 0.200, "latency out of range")

    def jitter(self):
        lat, seqs = self.latencies(15, 200, 1e-3, "up delay=10000 jitter=5000")
        late = sum(1 for i in range(1, len(seqs)) if seqs[i] < seqs[i - 1])
        self.note(f"latency {min(lat) * 1e3:.2f}..{max(lat) * 1e3:.2f} ms, "
                  f"{late} frames after a later one")
        check(min(lat) >= 0.005 and max(lat) < 0.100, "latency out of range")
        check(max(lat) - min(lat) >= 0.005, "no jitter")
        check(late > 0, "no reordering")

    def reorder(self):
        st0 = self.ctl.stats()
        lat, seqs = self.latencies(6, 1000, 100e-6, "up delay=5000 reorder=25")
        up = delta(st0, self.ctl.stats(), "up")
        # a frame that skipped the delay overtakes its predecessor, unless
        # that one skipped it too: about 25% * 75% of the frames
        pos = {s: i for i, s in enumerate(seqs)}
        ahead = sum(1 for s in range(1, 1000) if pos[s] < pos[s - 1])
        self.note(f"{ahead}/1000 ahead of their predecessor, counter "
                  f"reordered={up['reordered']}")
        check(100 <= ahead <= 400, f"{ahead} overtook")
        check(150 <= up["reordered"] <= 350, f"counters {up}")

    def rate(self, limit, n=500, size=1514):
        rnd = random.Random(7)
        st0 = self.fresh(f"up rate=10m limit={limit}")
        frames = [test_frame(SRC["a0"], 7, i, size, rnd) for i in range(n)]
        _, got = run(self.a, self.b, frames, idle=0.3)
        st1 = self.ctl.stats()
        up = delta(st0, st1, "up")
        spread = got[-1][0] - got[0][0] if got else 0
        wire = (len(got) - 1) * size * 8 / 10e6
        self.note(f"limit={limit}: {len(got)}/{n} arrived over {spread:.3f} s "
                  f"(at 10 Mbit/s: {wire:.3f} s), qdrop={up['qdrop']} "
                  f"qmax={st1['up']['qmax']}")
        seqs = [seq_of(f) for _, f in got]
        check(seqs == sorted(seqs), "reordered")
        check(len(got) + up["qdrop"] == n, f"received + qdrop != {n}")
        check(spread >= 0.8 * wire, "faster than the rate")
        return got, up, st1["up"]["qmax"]

    def rate_big(self):
        got, up, qmax = self.rate(1000000)
        check(len(got) == 500 and up["qdrop"] == 0, "drops below the limit")
        check(got[-1][0] - got[0][0] >= 0.4, "spread < 0.4 s")

    def rate_limit(self):
        got, up, qmax = self.rate(200000)
        check(up["qdrop"] > 0 and 100 <= len(got) <= 250, "limit not applied")
        check(200000 - 1514 <= qmax <= 200000, f"qmax {qmax}")

    def ecn(self):
        # seq % 5: IPv4 ECT(0), IPv4 ECT(1), IPv4 not-ECT, IPv6 ECT(0),
        # IPv4 ECT(0) behind a VLAN tag
        def ipv4(seq, ecn):
            body = b"QLEM" + struct.pack("!BI", 8, seq) + bytes(960)
            h = struct.pack("!BBHHHBBH4s4s", 0x45, ecn, 20 + len(body), seq, 0,
                            64, 253, 0, bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
            return h[:10] + struct.pack("!H", inet_csum(h)) + h[12:] + body

        def ipv6(seq, ecn):
            body = b"QLEM" + struct.pack("!BI", 8, seq) + bytes(940)
            return struct.pack("!IHBB16s16s", 6 << 28 | ecn << 20, len(body),
                               253, 64, bytes(15) + b"\1", bytes(15) + b"\2") + body

        sent = []
        for i in range(200):
            k = i % 5
            if k == 3:
                sent.append(frame(SRC["a0"], ipv6(i, 2), etype=0x86dd))
            else:
                sent.append(frame(SRC["a0"], ipv4(i, (2, 1, 0, 0, 2)[k]),
                                  vlan=100 if k == 4 else None, etype=0x0800))
        st0 = self.fresh("up rate=10m ecn=20000")
        _, got = run(self.a, self.b, sent, want=200)
        up = delta(st0, self.ctl.stats(), "up")
        check(len(got) == 200, f"{len(got)} of 200 arrived")
        ce, first = 0, None
        for i, ((_, f), want) in enumerate(zip(got, sent)):
            k = i % 5
            l3 = 18 if k == 4 else 14
            if k == 3:
                e = (f[l3 + 1] >> 4) & 3
                norm = f[:l3 + 1] + bytes([f[l3 + 1] & 0xcf | 0x20]) + f[l3 + 2:]
            else:
                e = f[l3 + 1] & 3
                check(inet_csum(f[l3:l3 + 20]) == 0, f"frame {i}: bad checksum")
                norm = (f[:l3 + 1] + bytes([want[l3 + 1]]) + f[l3 + 2:l3 + 10] +
                        want[l3 + 10:l3 + 12] + f[l3 + 12:])
            check(norm == want, f"frame {i} changed beyond ECN")
            if k == 2:
                check(e == 0, f"frame {i}: not-ECT marked")
            if e == 3 and first is None:
                first = i
            ce += e == 3
        self.note(f"{ce} of 160 ECT frames CE (first: #{first}), counter "
                  f"marked={up['marked']}")
        check(ce >= 50, "too few marked")
        check(seq_of_ip(got[0][1]) == 0 and got[0][1][15] & 3 == 2, "first frame marked")
        check(up["marked"] == ce, f"counters {up}")

    def down(self):
        rnd = random.Random(9)
        st0 = self.fresh("up down=1")
        frames = [test_frame(SRC["a0"], 9, i, 300, rnd) for i in range(200)]
        _, got = run(self.a, self.b, frames, gap=20e-6, idle=0.2)
        back = [test_frame(SRC["b0"], 9, i, 300, rnd) for i in range(50)]
        _, got_back = run(self.b, self.a, back, gap=20e-6, want=50)
        st1 = self.ctl.stats()
        up = delta(st0, st1, "up")
        self.note(f"down=1: {len(got)} arrived, downdrop={up['downdrop']}; "
                  f"other direction {len(got_back)}/50")
        check(not got and up["downdrop"] == 200, "frames passed a down link")
        check(len(got_back) == 50, "the other direction is down too")
        self.ctl.ok("set L up down=0")
        _, got = run(self.a, self.b, frames, gap=20e-6, want=200)
        self.note(f"down=0: {len(got)}/200 arrived")
        check(len(got) == 200, "not up again")

    def tcp(self):
        """TCP between two more namespaces through link T: GSO super-frames
        pass (far fewer frames than segments), and with loss and corruption
        the stream still arrives intact (no damage the checksums miss)."""
        def transfer(size):
            srv = subprocess.Popen(["ip", "netns", "exec", NS + "-b", sys.executable,
                                    "-c", SERVER], stdout=subprocess.PIPE, text=True)
            try:
                check(select.select([srv.stdout], [], [], 10)[0] and
                      srv.stdout.readline() == "listening\n", "no TCP server")
                cli = subprocess.run(["ip", "netns", "exec", NS + "-a", sys.executable,
                                      "-c", CLIENT, str(size)], capture_output=True,
                                     text=True, timeout=60)
                out = srv.communicate(timeout=60)[0]
            finally:
                if srv.poll() is None:
                    srv.kill()
                    srv.wait()
            check(cli.returncode == 0 and out and cli.stdout == out,
                  f"sent {cli.stdout.strip()!r} received {out.strip()!r}")

        self.ctl.ok("clear T both")
        st0 = self.ctl.stats("T")
        transfer(20000000)
        st1 = self.ctl.stats("T")
        up = delta(st0, st1, "up")
        self.note(f"20 MB intact in {up['rx']} frames up (segments: >= 13812)")
        check(0 < up["rx"] < 5000 and up["rx"] == up["tx"], f"counters {up}")
        self.ctl.ok("set T both loss=1 corrupt=2")
        transfer(20000000)
        up, down = delta(st1, self.ctl.stats("T"), "up"), delta(st1, self.ctl.stats("T"), "down")
        self.note(f"loss=1 corrupt=2: 20 MB intact; up lost={up['lost']} "
                  f"corrupted={up['corrupted']}, down lost={down['lost']} "
                  f"corrupted={down['corrupted']}")
        check(up["lost"] + up["corrupted"] + down["lost"] + down["corrupted"] > 0,
              "nothing impaired")
        self.ctl.ok("clear T both")

    def control(self):
        st0 = self.fresh("both loss=0")
        bad = ["set L up bogus=1", "set NOPE up loss=1", "set L up loss=101",
               "set L up loss=5 delay=abc", "set L sideways loss=1",
               "set L up loss", "set L up rate=10x", "set L up down=2",
               "set L up loss-burst=5", "clear NOPE up", "stats NOPE",
               "stats", "frobnicate", " ", "set L up"]
        for r in bad:
            reply = self.ctl.req(r)
            check(reply.startswith("error: "), f"{r!r}: {reply!r}")
        check(self.ctl.req("ping") == "ok", "ping")
        rnd = random.Random(10)
        frames = [test_frame(SRC["a0"], 10, i, 100, rnd) for i in range(300)]
        _, got = run(self.a, self.b, frames, gap=20e-6, want=300)
        up = delta(st0, self.ctl.stats(), "up")
        check(len(got) == 300 and up["rx"] == up["tx"] == 300,
              "a failed set changed something")
        r = subprocess.run([self.exe, "--help"], capture_output=True, text=True)
        check(r.returncode == 0 and "usage: qhca-linkem" in r.stdout, "--help")
        for args in (["--bogus", "L:x:y"], [], ["L:x"], ["L:x:x"], ["--seed", "z", "L:x:y"],
                     ["--set", "L up loss=200", "L:x:y"], ["A:x:y", "A:z:w"],
                     ["--set", "M up loss=1", "L:x:y"], ["bad/name:x:y"]):
            r = subprocess.run([self.exe] + args, capture_output=True, text=True)
            check(r.returncode == 2 and r.stderr and not r.stdout,
                  f"{args}: exit {r.returncode}")
        r = subprocess.run([self.exe, "L:nosuch0:nosuch1"], capture_output=True,
                           text=True)
        check(r.returncode == 1, f"missing interface: exit {r.returncode}")
        self.note(f"{len(bad)} bad requests refused, 9 bad command lines exit 2")


def seq_of_ip(f):
    off = 18 if f[12:14] == b"\x81\x00" else 14
    off += 40 if f[off] >> 4 == 6 else 20
    return struct.unpack("!I", f[off + 5:off + 9])[0]


def inet_csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


SERVER = r"""
import hashlib, socket
s = socket.socket()
s.bind(("10.77.0.2", 5001))
s.listen(1)
print("listening", flush=True)
c, _ = s.accept()
c.settimeout(30)
h, n = hashlib.sha256(), 0
while True:
    d = c.recv(1 << 20)
    if not d:
        break
    h.update(d)
    n += len(d)
print(n, h.hexdigest(), flush=True)
"""
CLIENT = r"""
import hashlib, random, socket, sys
data = random.Random(5).randbytes(int(sys.argv[1]))
s = socket.create_connection(("10.77.0.2", 5001), timeout=30)
s.sendall(data)
s.close()
print(len(data), hashlib.sha256(data).hexdigest(), flush=True)
"""


def setup():
    """NS with a0-a1, b0-b1 (raw frames) and c1, d1 (TCP) whose peers c0,
    d0 are in NS-a (10.77.0.1) and NS-b (10.77.0.2)."""
    for ns in (NS, NS + "-a", NS + "-b"):
        sh("ip", "netns", "add", ns)
        sh("ip", "netns", "exec", ns, "sysctl", "-qw",
           "net.ipv6.conf.all.disable_ipv6=1",
           "net.ipv6.conf.default.disable_ipv6=1", check=False)
    for x in "ab":
        sh("ip", "-n", NS, "link", "add", x + "0", "type", "veth",
           "peer", "name", x + "1")
    for x, host in (("c", "-a"), ("d", "-b")):
        sh("ip", "-n", NS, "link", "add", x + "1", "type", "veth",
           "peer", "name", x + "0", "netns", NS + host)
    for i in ("a0", "a1", "b0", "b1", "c1", "d1"):
        sh("ip", "-n", NS, "link", "set", i, "mtu", "9000", "up")
    for x, host, ip in (("c", "-a", "10.77.0.1/24"), ("d", "-b", "10.77.0.2/24")):
        sh("ip", "-n", NS + host, "addr", "add", ip, "dev", x + "0")
        sh("ip", "-n", NS + host, "link", "set", x + "0", "mtu", "9000", "up")
        sh("ip", "-n", NS + host, "link", "set", "lo", "up")


def start(exe, sock):
    p = subprocess.Popen(["ip", "netns", "exec", NS, exe, "--seed", "1",
                          "--ctl", sock, "L:a1:b1", "T:c1:d1"],
                         stdout=subprocess.PIPE)
    if select.select([p.stdout], [], [], 10)[0]:
        line = p.stdout.readline()
        if line == b"qhca-linkem: ready\n":
            return p
    p.kill()
    p.wait()
    raise RuntimeError("qhca-linkem did not get ready")


def run_cases(exe, sock, proc):
    """Every case, then SIGTERM; the process if still to be killed."""
    c = Cases(exe, Ctl(sock))
    for name, fn in [("no-impairment", c.plain), ("loss", c.loss),
                     ("loss-burst", c.burst), ("duplicate", c.duplicate),
                     ("corrupt", c.corrupt), ("delay", c.delay),
                     ("jitter", c.jitter), ("reorder", c.reorder),
                     ("rate-limit", c.rate_limit), ("rate", c.rate_big),
                     ("ecn", c.ecn), ("down", c.down), ("tcp", c.tcp),
                     ("control", c.control)]:
        c.notes = []
        t = time.monotonic()
        try:
            fn()
            ok = True
        except Exception as e:  # a failed check or a broken case
            ok = False
            c.note(f"{type(e).__name__}: {e}")
        c.note(f"{time.monotonic() - t:.2f} s")
        case(ok, name, c.notes)
        if proc.poll() is not None:
            case(False, "still-running", [f"exit {proc.returncode}"])
            proc = None
            break
    if proc:
        proc.terminate()
        try:
            rc = proc.wait(5)
        except subprocess.TimeoutExpired:
            rc = None
        case(rc == 0 and not os.path.exists(sock), "sigterm",
             [f"exit {rc}, control socket removed: {not os.path.exists(sock)}"])
        proc = None
    return proc


def main():
    if len(sys.argv) != 2:
        print("usage: linkem-test.py QHCA-LINKEM", file=sys.stderr)
        return 2
    exe = os.path.abspath(sys.argv[1])
    if os.geteuid() != 0:
        print("1..0 # SKIP needs root (network namespaces)")
        return 0
    if not shutil.which("ip") or sh("ip", "netns", "add", NS + "-probe",
                                    check=False).returncode:
        print("1..0 # SKIP no ip netns")
        return 0
    sh("ip", "netns", "del", NS + "-probe", check=False)
    tmp = tempfile.mkdtemp(prefix="qlemt-")
    proc = None
    try:
        setup()
        fd = os.open(f"/run/netns/{NS}", os.O_RDONLY)
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.setns(fd, CLONE_NEWNET):
            raise OSError(ctypes.get_errno(), "setns")
        os.close(fd)
        sock = os.path.join(tmp, "ctl")
        proc = start(exe, sock)
    except Exception as e:  # no namespace, veth or qhca-linkem
        case(False, "setup", [f"{type(e).__name__}: {e}",
                              getattr(e, "stderr", None) or ""])
    else:
        proc = run_cases(exe, sock, proc)
    finally:
        if proc:
            proc.kill()
            proc.wait()
        for ns in (NS, NS + "-a", NS + "-b"):
            sh("ip", "netns", "del", ns, check=False)
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"1..{len(results)}")
    for i, (ok, name, notes) in enumerate(results, 1):
        print(f"{'ok' if ok else 'not ok'} {i} /linkem/{name}")
        for n in notes:
            print(f"# {n}")
    return 0 if all(ok for ok, _, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
