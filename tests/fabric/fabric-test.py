#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
# Copyright (c) 2026 The qhca authors
"""The simulated fabric of scripts/lib/qhca_fabric.py, without guests:

  fabric-test.py TOP

Two hosts (network namespaces) joined by the switch namespace through
qhca-linkem, an address on each host's bridge, and UDP echoes between them:
the round trip follows the spec's delay (one impaired hop each way: twice
it), a loss set while it runs loses about that share each way, VXLAN
between the hosts carries the same echoes, a spec that cannot be built (a
host's bridge taken) leaves nothing behind, bad specs are refused with
reasons, and after each fabric no namespace of it is left. Needs root and
`ip netns` (skipped otherwise: "1..0 # SKIP"). About 5 s.

TAP on stdout ("ok N /fabric/NAME").
"""

import os
import subprocess
import sys
import tempfile

TOP = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(TOP, "scripts", "lib"))
import qhca_fabric as F  # noqa: E402  pylint: disable=wrong-import-position

ECHO = r"""
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], 7007))
print("ready", flush=True)
while True:
    d, a = s.recvfrom(2048)
    if d == b"quit":
        break
    s.sendto(d, a)
"""

PROBE = r"""
import socket, sys, time
n, gap = int(sys.argv[2]), float(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(0.5)
got, rtts = 0, []
for i in range(n):
    t0 = time.monotonic()
    s.sendto(str(i).encode(), (sys.argv[1], 7007))
    try:
        while True:
            d, _ = s.recvfrom(2048)
            if d == str(i).encode():
                got += 1
                rtts.append(time.monotonic() - t0)
                break
    except socket.timeout:
        pass
    time.sleep(gap)
s.sendto(b"quit", (sys.argv[1], 7007))
print(got, min(rtts) * 1000 if rtts else -1)
"""

N = 0
FAILED = 0


def case(ok, name, note=""):
    global N, FAILED  # pylint: disable=global-statement
    N += 1
    FAILED += 0 if ok else 1
    # the note on a line of its own: "ok N NAME # ..." would read as a
    # TAP directive
    if note:
        print(f"# {note}")
    print(f"{'ok' if ok else 'not ok'} {N} /fabric/{name}", flush=True)


def netns_list():
    r = subprocess.run(["ip", "netns", "list"], stdout=subprocess.PIPE, text=True, check=False)
    return [l.split()[0] for l in r.stdout.splitlines() if l.strip()]


def ours():
    return [n for n in netns_list() if n.startswith(f"qf{os.getpid()}-")]


def echo_round(fab, n, gap=0.01, addr="198.18.0.202"):
    """n UDP echoes from host 1 to host 2: (answered, shortest RTT ms)."""
    srv = subprocess.Popen(["ip", "netns", "exec", fab.ns(2), sys.executable, "-c", ECHO, addr],
                           stdout=subprocess.PIPE, text=True)
    try:
        srv.stdout.readline()
        r = subprocess.run(["ip", "netns", "exec", fab.ns(1), sys.executable, "-c", PROBE,
                            addr, str(n), str(gap)], stdout=subprocess.PIPE, text=True,
                           timeout=120, check=False)
        got, rtt = r.stdout.split()
        return int(got), float(rtt)
    finally:
        srv.kill()
        srv.wait()


def with_fabric(spec, d, fn, addrs=True):
    fab = F.Fabric(spec, 2, d, seed=1)
    fab.start()
    try:
        if addrs:
            for h in (1, 2):
                subprocess.run(["ip", "-n", fab.ns(h), "addr", "add", f"198.18.0.{200 + h}/24",
                                "dev", "br0"], check=True)
        return fn(fab)
    finally:
        fab.stop()


def main():
    if os.geteuid() != 0 or subprocess.run(["ip", "netns", "list"], stdout=subprocess.DEVNULL,
                                           stderr=subprocess.DEVNULL).returncode:
        print("1..0 # SKIP needs root and ip netns")
        return 0
    d = tempfile.mkdtemp(prefix="qhca-fabric-test.")

    def delay(fab):
        echo_round(fab, 5)              # ARP and the bridges' learning first
        got, rtt = echo_round(fab, 20)
        case(got == 20 and 10.0 <= rtt < 100.0, "delay",
             f"delay=5ms: {got}/20 echoes, shortest round trip {rtt:.2f} ms (want >= 10)")
        fab.set(0, ["loss=30%"])
        got, _ = echo_round(fab, 300, gap=0.002)
        # each echo crosses two lossy hops: 0.7^2 = 49% answered
        case(120 <= got <= 180, "loss-set-while-running",
             f"loss=30% set at run time: {got}/300 echoes answered (want 120..180)")
        st = fab.stats()
        lost = sum(st[h]["up"]["lost"] for h in st)
        case(lost >= 300 - got, "stats", f"link emulator counted {lost} lost frames")
        fab.clear()
        got, rtt = echo_round(fab, 20)
        case(got == 20 and rtt < 10.0, "clear", f"after clear: {got}/20, {rtt:.2f} ms")
        return True

    with_fabric("hosts=2,delay=5ms", d, delay)
    case(not ours(), "removed", f"namespaces left: {ours()}")

    def vxlan(fab):
        echo_round(fab, 5)
        got, _ = echo_round(fab, 20)
        r = subprocess.run(["ip", "-n", fab.ns(1), "-d", "link", "show", "vx0"],
                           stdout=subprocess.PIPE, text=True, check=False)
        case(got == 20 and "vxlan id 42" in r.stdout, "vxlan",
             f"{got}/20 echoes over VXLAN between the hosts")
        return True

    with_fabric("vxlan", d, vxlan)
    case(not ours(), "vxlan-removed", f"namespaces left: {ours()}")

    # a start that fails half-way (the switch's bridge refuses the MTU)
    # leaves nothing behind
    fab = F.Fabric("lan", 2, d, mtu=70000)
    try:
        fab.start()
        case(False, "failed-start-cleans-up", "a 70000-byte MTU was taken")
        fab.stop()
    except RuntimeError as e:
        case(not ours(), "failed-start-cleans-up", f"refused ({str(e)[:60]}), left: {ours()}")

    bad = {"loss=101%": "0..100", "hosts=0": "1..16", "delay=1h": "time", "wat=1": "unknown key",
           "place=1:3,hosts=2": "host 3 of 2", "rate=5": "rate", "no-such-fabric": "a name"}
    errs = []
    for spec, want in bad.items():
        try:
            F.parse(spec, 2)
            errs.append(f"{spec}: taken")
        except F.FabricError as e:
            if want not in str(e):
                errs.append(f"{spec}: {e}")
    case(not errs, "bad-specs", "; ".join(errs) or f"{len(bad)} refused with their reasons")
    # docs/fabric.md's example file and its specs parse as written
    errs = []
    try:
        with open(os.path.join(TOP, "docs", "fabric.md"), encoding="utf-8") as f:
            doc = f.read()
        blk = doc.split("A file has one statement a line", 1)[1].split("\n\n", 2)[1]
        path = os.path.join(d, "example.fabric")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(l[4:] for l in blk.splitlines()) + "\n")
        sp = F.parse(path, 4)
        if sp.hosts != 4 or sp.place != [1, 2, 3, 4] or "rate" not in sp.settings(1, "down"):
            errs.append(f"example file: {sp.describe()}")
        for name in F.FABRICS:
            if f"`{name}`" not in doc:
                errs.append(f"fabric {name} not in docs/fabric.md")
        for line in doc.splitlines():
            if line.strip().startswith('echo "QHCA-FABRIC '):
                kv = line.split('"')[1].split()[2:]
                if kv != ["clear"]:
                    F.Spec().apply_kv(0, kv)
    except (OSError, IndexError, F.FabricError) as e:
        errs.append(str(e))
    case(not errs, "docs", "; ".join(errs) or "docs/fabric.md's file, names and console lines")
    print(f"1..{N}")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
