"""A simulated fabric for qhca guests (issue 25): hosts, a switch, impaired links.

Each host is a network namespace of its own with a learning bridge (br0)
that the taps of its guests join; one more namespace is the switch, a
learning bridge with a port per host. Host i's link to the switch is a veth
pair carried through qhca-linkem (tests/fabric/qhca-linkem.c), which
forwards the frames of both directions and impairs them as tc netem and a
rate-limited queue would:

    host i: taps -- br0 -- up0 ==veth== w<i> [qhca-linkem h<i>] s<i> ==veth== p<i> -- br0 :switch

A userspace link emulator, not tc: the kernels this project is tested on
(6.18, a minimal configuration) have no sch_netem, RED, fq_codel or tc
gact, only htb, tbf and the FIFOs (docs/fabric.md says how to check yours).
Direction "up" of link h<i> is what host i sends, "down" what the switch's
port to host i sends it.

A fabric is described by a name, a file or a list of KEY=VALUE:

    lan                      one host per guest, nothing impaired
    lossy                    1% of what each host sends lost
    wan                      RTT 20 ms, 100 Mbit/s ports
    hosts=2,loss=1%,delay=5ms,reorder=25%

Keys (the link keys apply to what each host sends, so each path between
two hosts crosses one impaired hop each way: RTT = 2 x delay; the port keys
to the switch's output port towards each host, where traffic from several
hosts to one meets):
    hosts=N      hosts (default: one per guest); place=H,H,...: the host of
                 each guest (default: guest i on host ((i - 1) mod N) + 1)
    vxlan=on     the hosts' bridges joined by VXLAN (VNI 42, UDP 4789) over
                 an IP underlay (10.77.0.<i>/24 on up0) instead of L2
    link keys    delay=T jitter=T loss=P% loss-burst=P%,R% reorder=P%
                 duplicate=P% corrupt=P%
    port keys    rate=R (e.g. 100m: bits/s) limit=B (bytes queued, with
                 rate) ecn=B (CE-mark ECN-capable frames queued behind
                 more than B bytes)
A file has one statement a line: "hosts N", "vxlan on", "place H H ...",
"link all|I KEY=VALUE..." (what host I sends), "port all|I KEY=VALUE..."
(the switch's port to host I); "#" starts a comment.

Everything lives in namespaces the run makes (qf<pid>-sw, qf<pid>-h<i>) and
is removed by stop(), also after a failed start; namespaces of a run whose
process is gone are removed by the next run.
"""

import os
import re
import shutil
import signal
import socket
import subprocess
import time

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("QHCA_BUILD", os.path.join(TOP, "build"))
LINKEM_SRC = os.path.join(TOP, "tests", "fabric", "qhca-linkem.c")
LINKEM = os.path.join(BUILD, "fabric", "qhca-linkem")

LINK_KEYS = ("delay", "jitter", "loss", "loss-burst", "reorder", "duplicate", "corrupt",
             "down")
PORT_KEYS = ("rate", "limit", "ecn")

FABRICS = {
    "lan": "",
    "lossy": "loss=1%",
    "lossy5": "loss=5%",
    "bursty": "loss-burst=0.5%,25%",
    "reorder": "delay=1ms,reorder=25%",
    "dup": "duplicate=5%",
    "corrupt": "corrupt=1%",
    "wan": "delay=10ms,rate=100m,limit=1m",
    "rtt1": "delay=500us",
    "bottleneck": "rate=100m,limit=256k",
    "ecn": "rate=100m,limit=512k,ecn=64k",
    "vxlan": "vxlan=on",
}


class FabricError(ValueError):
    pass


def _num(v, what):
    try:
        return float(v)
    except ValueError:
        raise FabricError(f"{what}: '{v}' is not a number") from None


def parse_time_us(v):
    m = re.fullmatch(r"([0-9.]+)\s*(us|ms|s)?", v)
    if not m:
        raise FabricError(f"time '{v}': a number with us, ms or s")
    x = _num(m.group(1), "time") * {"us": 1, "ms": 1000, "s": 1000000, None: 1000}[m.group(2)]
    if not 0 <= x <= 10_000_000:
        raise FabricError(f"time '{v}': 0..10 s")
    return int(x)


def parse_pct(v):
    x = _num(v.rstrip("%"), "percentage")
    if not 0 <= x <= 100:
        raise FabricError(f"percentage '{v}': 0..100")
    return x


def parse_size(v, what, lo, hi):
    """A rate (k, m, g: 10^3, 10^6, 10^9 bits/s; "100mbit" too) or a
    size in bytes (k, m, g: 2^10, 2^20, 2^30)."""
    m = re.fullmatch(r"([0-9.]+)\s*([kmgKMG]?)(bit|b|B)?", v)
    if not m:
        raise FabricError(f"{what} '{v}': a number with k, m or g")
    unit = m.group(2).lower()
    mult = ({"": 1, "k": 1e3, "m": 1e6, "g": 1e9} if what == "rate" else
            {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30})[unit]
    x = _num(m.group(1), what) * mult
    if not lo <= x <= hi:
        raise FabricError(f"{what} '{v}': {lo}..{hi}")
    return int(x)


def linkem_args(key, v):
    """A fabric KEY=VALUE as qhca-linkem's KEY=VALUE."""
    if key in ("delay", "jitter"):
        return f"{key}={parse_time_us(v)}"
    if key in ("loss", "reorder", "duplicate", "corrupt"):
        return f"{key}={parse_pct(v):g}"
    if key == "loss-burst":
        parts = v.split(",") if "," in v else v.split("/")
        if len(parts) != 2:
            raise FabricError(f"loss-burst '{v}': P%,R% (good to bad, bad to good)")
        return f"loss-burst={parse_pct(parts[0]):g},{parse_pct(parts[1]):g}"
    if key == "rate":
        return f"rate={parse_size(v, 'rate', 1000, 100e9)}"
    if key in ("limit", "ecn"):
        return f"{key}={parse_size(v, key, 1500 if key == 'limit' else 0, 1 << 30)}"
    if key == "down":
        if v not in ("0", "1"):
            raise FabricError("down: 0 or 1")
        return f"down={v}"
    raise FabricError(f"unknown key '{key}' (keys: hosts, place, vxlan, "
                      f"{', '.join(LINK_KEYS[:-1] + PORT_KEYS)})")


class Spec:
    """A parsed fabric: hosts, placement, VXLAN, and the linkem settings of
    each host's link ("up": what it sends) and switch port ("down")."""

    def __init__(self):
        self.name = "custom"
        self.hosts = None
        self.place = None
        self.vxlan = False
        # host (0: all) -> {"up": {key: linkem value}, "down": {...}}
        self.imp = {}

    def _set(self, host, direction, key, value):
        arg = linkem_args(key, value)
        self.imp.setdefault(host, {"up": {}, "down": {}})[direction][key] = arg.split("=", 1)[1]

    def apply_kv(self, host, kv, where=None):
        for item in kv:
            if "=" not in item:
                raise FabricError(f"'{item}': KEY=VALUE")
            k, v = item.split("=", 1)
            if k == "down" and where is None:
                # a link down is down both ways
                self._set(host, "up", k, v)
                self._set(host, "down", k, v)
            elif k in LINK_KEYS:
                self._set(host, where or "up", k, v)
            elif k in PORT_KEYS:
                self._set(host, where or "down", k, v)
            else:
                linkem_args(k, v)   # raises with the key list

    def settings(self, host, direction):
        d = dict(self.imp.get(0, {}).get(direction, {}))
        d.update(self.imp.get(host, {}).get(direction, {}))
        return d

    def describe(self):
        parts = [f"hosts={self.hosts}"]
        if self.vxlan:
            parts.append("vxlan")
        for h in sorted(self.imp):
            for dr in ("up", "down"):
                if self.imp[h][dr]:
                    parts.append(f"{'all' if h == 0 else h}.{dr}:" +
                                 ",".join(f"{k}={v}" for k, v in self.imp[h][dr].items()))
        return " ".join(parts)


def _split_top(spec):
    """KEY=VALUE items split at commas that start a new KEY= (loss-burst's
    value has a comma of its own)."""
    items = []
    for part in spec.split(","):
        if items and "=" not in part:
            items[-1] += "," + part
        else:
            items.append(part)
    return [i.strip() for i in items if i.strip()]


def parse(spec, guests=None):
    """A Spec from a name, a file or KEY=VALUE[,KEY=VALUE...]."""
    s = Spec()
    if spec in FABRICS:
        s.name = spec
        items = _split_top(FABRICS[spec])
    elif os.path.isfile(spec):
        s.name = os.path.basename(spec)
        return _parse_file(s, spec, guests)
    elif "=" in spec:
        items = _split_top(spec)
    else:
        raise FabricError(f"fabric '{spec}': a name ({', '.join(FABRICS)}), a file "
                          "or KEY=VALUE,...")
    rest = []
    for item in items:
        k, _, v = item.partition("=")
        if k == "hosts":
            s.hosts = _hosts(v)
        elif k == "place":
            s.place = [_hosts(x) for x in v.split(":")]
        elif k == "vxlan":
            s.vxlan = _onoff(v)
        else:
            rest.append(item)
    s.apply_kv(0, rest)
    return _finish(s, guests)


def _hosts(v):
    if not v.isdigit() or not 1 <= int(v) <= 16:
        raise FabricError(f"hosts '{v}': 1..16")
    return int(v)


def _onoff(v):
    if v not in ("on", "off", "1", "0"):
        raise FabricError(f"'{v}': on or off")
    return v in ("on", "1")


def _parse_file(s, path, guests):
    with open(path, encoding="utf-8") as f:
        for n, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].split()
            if not line:
                continue
            try:
                if line[0] == "hosts" and len(line) == 2:
                    s.hosts = _hosts(line[1])
                elif line[0] == "vxlan" and len(line) == 2:
                    s.vxlan = _onoff(line[1])
                elif line[0] == "place" and len(line) >= 2:
                    s.place = [_hosts(x) for x in line[1:]]
                elif line[0] in ("link", "port") and len(line) >= 3:
                    h = 0 if line[1] == "all" else _hosts(line[1])
                    s.apply_kv(h, line[2:], "up" if line[0] == "link" else "down")
                else:
                    raise FabricError(f"'{' '.join(line)}': hosts N, vxlan on|off, "
                                      "place H..., link|port all|I KEY=VALUE...")
            except FabricError as e:
                raise FabricError(f"{path}:{n}: {e}") from None
    return _finish(s, guests)


def _finish(s, guests):
    if s.hosts is None:
        s.hosts = max(len(s.place), max(s.place)) if s.place else (guests or 2)
    if s.place is not None:
        if guests is not None and len(s.place) != guests:
            raise FabricError(f"place: {len(s.place)} hosts for {guests} guests")
        if max(s.place) > s.hosts:
            raise FabricError(f"place: host {max(s.place)} of {s.hosts}")
    for h in s.imp:
        if h > s.hosts:
            raise FabricError(f"host {h} of {s.hosts}")
    return s


def build_linkem():
    """build/fabric/qhca-linkem, compiled when missing or older than its source."""
    if os.path.exists(LINKEM) and os.path.getmtime(LINKEM) >= os.path.getmtime(LINKEM_SRC):
        return LINKEM
    os.makedirs(os.path.dirname(LINKEM), exist_ok=True)
    cc = shutil.which("gcc") or shutil.which("cc")
    if not cc:
        raise RuntimeError("no C compiler for qhca-linkem")
    tmp = LINKEM + ".tmp"
    r = subprocess.run([cc, "-O2", "-std=gnu11", "-Wall", "-Wextra", "-o", tmp, LINKEM_SRC],
                       stderr=subprocess.PIPE, text=True, check=False)
    if r.returncode:
        raise RuntimeError(f"qhca-linkem does not build:\n{r.stderr}")
    os.replace(tmp, LINKEM)
    return LINKEM


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def remove_stale():
    """Namespaces of fabrics whose run is gone (qf<pid>-*)."""
    r = subprocess.run(["ip", "netns", "list"], stdout=subprocess.PIPE, text=True, check=False)
    for line in r.stdout.splitlines():
        m = re.match(r"(qf(\d+)-\S+)", line)
        if m and not _pid_alive(int(m.group(2))):
            subprocess.run(["ip", "netns", "del", m.group(1)], check=False,
                           stderr=subprocess.DEVNULL)


class Fabric:
    """The namespaces, bridges, links and the link emulator of one Spec."""

    def __init__(self, spec, guests, directory, mtu=9000, seed=None):
        self.spec = spec if isinstance(spec, Spec) else parse(spec, guests)
        self.guests = guests
        self.dir = directory
        self.mtu = mtu
        self.seed = seed if seed is not None else int(time.time())
        self.tag = f"qf{os.getpid()}"
        self.sw = f"{self.tag}-sw"
        self.made = []
        self.proc = None
        self.ctl = None
        self.log = None

    # -- names --
    def host_of(self, guest):
        if self.spec.place:
            return self.spec.place[guest - 1]
        return (guest - 1) % self.spec.hosts + 1

    def ns(self, host):
        return f"{self.tag}-h{host}"

    def guest_ns(self, guest):
        return self.ns(self.host_of(guest))

    # -- set-up --
    def _ip(self, ns, *args):
        r = subprocess.run(["ip", "-n", ns, *args], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, check=False)
        if r.returncode:
            raise RuntimeError(f"ip -n {ns} {' '.join(args)}: {r.stderr.strip()}")
        return r.stdout

    def _netns(self, name):
        subprocess.run(["ip", "netns", "del", name], check=False, stderr=subprocess.DEVNULL)
        r = subprocess.run(["ip", "netns", "add", name], stderr=subprocess.PIPE, text=True,
                           check=False)
        if r.returncode:
            raise RuntimeError(f"ip netns add {name}: {r.stderr.strip()}")
        self.made.append(name)
        self._ip(name, "link", "set", "lo", "up")

    def start(self):
        if not shutil.which("ip"):
            raise RuntimeError("no ip command (iproute2)")
        os.makedirs(self.dir, exist_ok=True)
        remove_stale()
        exe = build_linkem()
        try:
            self._start(exe)
        except BaseException:
            self.stop()
            raise

    def _start(self, exe):
        under = self.mtu + 100 if self.spec.vxlan else self.mtu
        self._netns(self.sw)
        self._ip(self.sw, "link", "add", "br0", "type", "bridge", "stp_state", "0")
        self._ip(self.sw, "link", "set", "br0", "mtu", str(under), "up")
        links = []
        for h in range(1, self.spec.hosts + 1):
            ns = self.ns(h)
            self._netns(ns)
            self._ip(ns, "link", "add", "br0", "type", "bridge", "stp_state", "0")
            self._ip(ns, "link", "set", "br0", "mtu", str(self.mtu), "up")
            # host i's uplink, its wire end in the switch, the emulator's
            # other end and the switch's port
            self._ip(ns, "link", "add", "up0", "mtu", str(under), "type", "veth",
                     "peer", "name", f"w{h}", "mtu", str(under), "netns", self.sw)
            self._ip(self.sw, "link", "add", f"s{h}", "mtu", str(under), "type", "veth",
                     "peer", "name", f"p{h}", "mtu", str(under))
            for dev in (f"w{h}", f"s{h}"):
                self._ip(self.sw, "link", "set", dev, "up")
            self._ip(self.sw, "link", "set", f"p{h}", "master", "br0", "up")
            if self.spec.vxlan:
                self._ip(ns, "addr", "add", f"10.77.0.{h}/24", "dev", "up0")
                self._ip(ns, "link", "set", "up0", "up")
                self._ip(ns, "link", "add", "vx0", "type", "vxlan", "id", "42", "dstport",
                         "4789", "local", f"10.77.0.{h}", "nolearning")
                self._ip(ns, "link", "set", "vx0", "mtu", str(self.mtu), "master", "br0", "up")
            else:
                self._ip(ns, "link", "set", "up0", "master", "br0", "up")
            links.append(f"h{h}:w{h}:s{h}")
        if self.spec.vxlan:
            for h in range(1, self.spec.hosts + 1):
                for o in range(1, self.spec.hosts + 1):
                    if o != h:
                        r = subprocess.run(
                            ["bridge", "-n", self.ns(h), "fdb", "append", "00:00:00:00:00:00",
                             "dev", "vx0", "dst", f"10.77.0.{o}"],
                            stderr=subprocess.PIPE, text=True, check=False)
                        if r.returncode:
                            raise RuntimeError(f"bridge fdb append: {r.stderr.strip()}")
        self.ctl = os.path.join(self.dir, "linkem.sock")
        if os.path.exists(self.ctl):
            os.unlink(self.ctl)
        args = ["ip", "netns", "exec", self.sw, exe, "--seed", str(self.seed),
                "--ctl", self.ctl]
        for h in range(1, self.spec.hosts + 1):
            for dr in ("up", "down"):
                kv = self.spec.settings(h, dr)
                if kv:
                    args += ["--set", f"h{h} {dr} " + " ".join(f"{k}={v}" for k, v in kv.items())]
        args += links
        # pylint: disable=consider-using-with
        self.log = open(os.path.join(self.dir, "linkem.log"), "w", encoding="utf-8")
        self.log.write(" ".join(args) + "\n")
        self.log.flush()
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.log, text=True,
                                     preexec_fn=_die_with_parent)
        line = self.proc.stdout.readline()
        if "ready" not in line:
            raise RuntimeError(f"qhca-linkem did not start (see {self.log.name})")

    def add_tap(self, guest, tap):
        """A tap for guest GUEST on its host's bridge."""
        ns = self.guest_ns(guest)
        self._ip(ns, "tuntap", "add", "dev", tap, "mode", "tap")
        self._ip(ns, "link", "set", tap, "mtu", str(self.mtu), "master", "br0", "up")

    # -- at run time --
    def request(self, line):
        """One control request to qhca-linkem; its reply."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
            s.settimeout(5)
            s.connect(self.ctl)
            s.send(line.encode())
            return s.recv(65536).decode().strip()

    def set(self, host, kv, direction=None):
        """Change the impairment of host HOST's link (0: every host):
        KV as in the spec; link keys act on "up", port keys on "down"
        unless DIRECTION says."""
        one = Spec()
        one.apply_kv(0, kv, direction)
        hosts = range(1, self.spec.hosts + 1) if host == 0 else [host]
        for h in hosts:
            for dr in ("up", "down"):
                d = one.settings(0, dr)
                if d:
                    r = self.request(f"set h{h} {dr} " +
                                     " ".join(f"{k}={v}" for k, v in d.items()))
                    if not r.startswith("ok"):
                        raise RuntimeError(f"linkem: {r}")

    def clear(self, host=0):
        for h in (range(1, self.spec.hosts + 1) if host == 0 else [host]):
            for dr in ("up", "down"):
                r = self.request(f"clear h{h} {dr}")
                if not r.startswith("ok"):
                    raise RuntimeError(f"linkem: {r}")

    def stats(self):
        """{host: {"up": {counter: n}, "down": {...}}} from qhca-linkem."""
        res = {}
        for h in range(1, self.spec.hosts + 1):
            r = self.request(f"stats h{h}")
            if not r.startswith("ok"):
                raise RuntimeError(f"linkem: {r}")
            d = {}
            for part in r[2:].split("|"):
                f = part.split()
                if f:
                    d[f[0]] = {k: int(v) for k, v in (x.split("=") for x in f[1:])}
            res[h] = d
        return res

    def fdb(self):
        """What the hosts' bridges learnt: [(h<i>/br0, MAC, port)]."""
        res = []
        for h in range(1, self.spec.hosts + 1):
            r = subprocess.run(["bridge", "-n", self.ns(h), "fdb", "show"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               check=False)
            for line in r.stdout.splitlines():
                f = line.split()
                if len(f) >= 5 and f[1] == "dev" and "master" in f and "permanent" not in f:
                    res.append((f"h{h}/br0", f[0], f[2]))
        return res

    def stop(self):
        if self.proc is not None:
            try:
                with open(os.path.join(self.dir, "fabric-stats"), "w", encoding="utf-8") as f:
                    for h, d in self.stats().items():
                        for dr, c in d.items():
                            f.write(f"h{h} {dr} " + " ".join(f"{k}={v}" for k, v in c.items())
                                    + "\n")
            except (OSError, RuntimeError, ValueError):
                pass
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
        if self.log:
            self.log.close()
            self.log = None
        for name in reversed(self.made):
            subprocess.run(["ip", "netns", "del", name], check=False, stderr=subprocess.DEVNULL)
        self.made = []


def _die_with_parent():
    import ctypes  # pylint: disable=import-outside-toplevel
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)
