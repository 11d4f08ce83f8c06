"""Boot qhca guests with QEMU's own Python package (qemu.machine.QEMUMachine).

The guests of scripts/launch (which is built on it: its --help says what
the kernel command line, devices, networks and console protocol are), for
the host-side scripts: scripts/launch, scripts/demo, scripts/bench and the
test groups in scripts/test.d/.

    from qhca_guests import GuestRun, guest_lock
    with guest_lock():
        run = GuestRun(n=2, run_script="scripts/guest/run-bench.sh",
                       add=["scripts/guest/pair.sh"], directory=d)
        run.run(on_line=callback)     # boots, watches, stops; True if all ok
        run.outputs[2]                # guest 2's run script output

Only the Python 3.11 standard library and QEMU's python/ directory (from
the pinned QEMU source in build/src/qemu) are used.
"""

import contextlib
import fcntl
import gzip
import io
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("QHCA_BUILD", os.path.join(TOP, "build"))
QEMU_BIN = os.path.join(BUILD, "qemu", "qemu-system-x86_64")
KERNEL = os.path.join(BUILD, "kernel", "vmlinuz")
IMAGE = os.path.join(BUILD, "image", "initramfs.cpio.gz")
QEMU_PYTHON = os.path.join(BUILD, "src", "qemu", "python")
GUEST_LOCK = os.path.join(BUILD, ".guest-run.lock")
KVM_PROBE = os.environ.get("QHCA_KVM_PROBE", os.path.join(BUILD, "kvm-probe"))
OVS_PKGDATADIR = os.environ.get("OVS_PKGDATADIR", "/usr/share/openvswitch")


def log(msg):
    print(f"[{os.path.basename(sys.argv[0])}] {msg}", file=sys.stderr, flush=True)


def _quiet_qmp_eof(unraisable):
    """A guest that powers off closes QEMU's end of the QMP socket first;
    qemu.qmp.legacy.QEMUMonitorProtocol.__del__ then tries to close the
    session once more and prints the EOFError that QEMUMachine already
    handled. Swallow exactly that one; everything else as usual."""
    if (isinstance(unraisable.exc_value, EOFError)
            and "QEMUMonitorProtocol.__del__" in repr(unraisable.object)):
        return
    sys.__unraisablehook__(unraisable)


def qemu_machine_class():
    """QEMUMachine from the pinned QEMU source (build/src/qemu/python)."""
    if not os.path.isdir(os.path.join(QEMU_PYTHON, "qemu", "machine")):
        raise RuntimeError(f"{QEMU_PYTHON}/qemu/machine missing: run scripts/fetch qemu")
    if QEMU_PYTHON not in sys.path:
        sys.path.insert(0, QEMU_PYTHON)
    from qemu.machine import QEMUMachine  # pylint: disable=import-outside-toplevel
    sys.unraisablehook = _quiet_qmp_eof
    return QEMUMachine


@contextlib.contextmanager
def guest_lock(path=GUEST_LOCK):
    """Hold the machine-wide guest-run lock (one guest run at a time)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "a+", encoding="utf-8") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f"waiting for {path} (another guest run holds it)")
            t0 = time.time()
            fcntl.flock(f, fcntl.LOCK_EX)
            log(f"got {path} after {time.time() - t0:.0f} s")
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


# --- run archives ----------------------------------------------------------

def cpio_newc(entries):
    """A newc cpio archive (bytes) of (name, mode, data) entries, owner 0:0."""
    out = io.BytesIO()

    def put(name, mode, data, ino):
        nb = name.encode() + b"\0"
        hdr = "070701" + "".join(f"{v:08x}" for v in (
            ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(nb), 0))
        out.write(hdr.encode() + nb)
        out.write(b"\0" * (-(110 + len(nb)) % 4))
        out.write(data)
        out.write(b"\0" * (-len(data) % 4))
    for ino, (name, mode, data) in enumerate(entries, 1):
        put(name, mode, data, ino)
    put("TRAILER!!!", 0, b"", 0)
    return out.getvalue()


def run_archive(run_script=None, add=()):
    """gzip'd cpio with /qhca/run.sh and the added files (as scripts/launch)."""
    entries = [("qhca", 0o40755, b"")]
    files = {}
    if run_script:
        with open(run_script, "rb") as f:
            files["run.sh"] = (0o100755, f.read())
    for p in add:
        with open(p, "rb") as f:
            files[os.path.basename(p)] = (0o100000 | (os.stat(p).st_mode & 0o777), f.read())
    for name in sorted(files):
        entries.append((f"qhca/{name}", *files[name]))
    return gzip.compress(cpio_newc(entries), mtime=0)


# --- host CPU accounting ------------------------------------------------------

CLK_TCK = os.sysconf("SC_CLK_TCK")


def thread_cpu(pid):
    """{tid: (name, cpu seconds)} for every thread of process PID."""
    res = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return res
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat", encoding="utf-8") as f:
                s = f.read()
        except OSError:
            continue
        name = s[s.index("(") + 1:s.rindex(")")]
        fields = s[s.rindex(")") + 2:].split()
        # fields[11], [12]: utime, stime (fields 14 and 15 of stat)
        res[int(tid)] = (name, (int(fields[11]) + int(fields[12])) / CLK_TCK)
    return res


def qemu_cpu(pid):
    """CPU seconds of a QEMU process: {'main': main-loop thread, 'vcpu':
    vCPU threads, 'other': the rest, 'total': all}."""
    out = {"main": 0.0, "vcpu": 0.0, "other": 0.0}
    for tid, (name, sec) in thread_cpu(pid).items():
        if tid == pid:
            out["main"] += sec
        elif name.startswith("CPU "):
            out["vcpu"] += sec
        else:
            out["other"] += sec
    out["total"] = out["main"] + out["vcpu"] + out["other"]
    return out


# --- guests ---------------------------------------------------------------------

def qemu_img():
    """qemu-img: the pinned build's if it has one, else Debian's
    (qemu-utils; the qcow2 format is the same)."""
    own = os.path.join(os.path.dirname(QEMU_BIN), "qemu-img")
    if os.access(own, os.X_OK):
        return own
    if not shutil.which("qemu-img"):
        from qhca_apt import apt_install  # pylint: disable=import-outside-toplevel
        if not apt_install("qemu-utils"):
            raise RuntimeError("qemu-img: could not install qemu-utils")
    return shutil.which("qemu-img")


def mac(i):
    return f"52:54:00:71:48:{i:02x}"


def guest_ip(i):
    return f"198.18.0.{i}"


def free_udp_ports(n):
    socks = []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def _die_with_parent():
    """preexec_fn: the child gets SIGTERM when this process dies
    (prctl PR_SET_PDEATHSIG), so that no daemon of a run outlives it."""
    import ctypes  # pylint: disable=import-outside-toplevel
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)


def kvm_usable():
    return os.access("/dev/kvm", os.R_OK | os.W_OK)


def probe_state(path=None):
    """'ok', 'fail' or 'unknown': the cached KVM probe in PATH (KVM_PROBE)."""
    try:
        with open(path or KVM_PROBE, encoding="utf-8") as f:
            s, k = f.read().split()[:2]
    except (OSError, ValueError):
        return "unknown"
    return s if k == os.uname().release else "unknown"


def record_probe(state, reason, path=None):
    with open(path or KVM_PROBE, "w", encoding="utf-8") as f:
        f.write(f"{state} {os.uname().release} "
                f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {reason}\n")


def choose_accel(accel, probe=None):
    if accel == "tcg":
        return "tcg"
    if accel == "kvm":
        if not kvm_usable():
            raise RuntimeError("--accel kvm: /dev/kvm is not usable")
        return "kvm"
    return "kvm" if kvm_usable() and probe_state(probe) != "fail" else "tcg"


# seconds a guest that has reported may wait at the end barrier once a
# peer has powered off (GuestRun)
END_GRACE_S = 30


# --wire-opts: the dgram netdev options of scripts/qemu/0005-net-dgram-batch.patch
WIRE_OPTS_RE = re.compile(r"(?:(?:rx-batch|tx-batch)=[0-9]+|(?:rcvbuf|sndbuf)=[0-9]+[kKMG]?)"
                          r"(?:,(?:(?:rx-batch|tx-batch)=[0-9]+|(?:rcvbuf|sndbuf)=[0-9]+[kKMG]?))*")


class GuestRun:
    """N guests wired as scripts/launch wires them, each running a script.

    n            number of guests
    rxe          guest numbers (set) without a qhca device that use Soft-RoCE
    two_networks each guest's qhca device has a netdev of its own on a
                 second network (netdev=, the wiring before issue 23),
                 instead of sharing its virtio-net's (nic=: one network,
                 one MAC, one port)
    one_segment  with two_networks: one Ethernet segment for every netdev
                 (implied by rxe with qhca guests in the run)
    run_script   /qhca/run.sh of every guest; runs {i: script} per guest
    add          more files into every guest's /qhca/
    timeout      limit of the run script (guest side, rc 124), and the
                 guests are stopped at ready + timeout + 150 s
    nice         run QEMU under nice(1), below builds and other work
    bridges      Linux bridges in a network namespace even for two guests
                 (what live migration needs: see migrate())
    learning     the bridges learn MACs (ageing_time 300 s; the default
                 with one network); False: they flood like hubs
                 (ageing_time 0; the default with two_networks, where a
                 guest's virtio-net and qhca share a MAC on two ports)
    migratable   guests that may be migrated: each gets a second tap on
                 each bridge for the QEMU it moves to
    migrate_plan [(guest, count, start_s, gap_s)]: migrations the host
                 does by itself, the first START_S after every guest is
                 ready (guests can ask for more: _migrate_request())
    snapshots    each guest gets a qcow2 image (not attached to it) that
                 holds its internal snapshots: snapshot(), and
                 "QHCA-SNAPSHOT" console lines (_snapshot_request())
    switch       what the bridges are: "linux" (Linux bridges, the
                 default) or "ovs" (Open vSwitch bridges on OVS's
                 userspace datapath, datapath_type=netdev, with its own
                 ovsdb-server and ovs-vswitchd in the run's namespace and
                 RUNDIR/ovs; implies bridges; docs/switches.md). Default:
                 $QHCA_GUEST_SWITCH, else "linux"
    """

    # pylint: disable=too-many-instance-attributes,too-many-arguments
    def __init__(self, n=2, rxe=(), one_segment=False, run_script=None, runs=None,
                 add=(), directory=None, timeout=600, ready_timeout=None,
                 accel="auto", append="", mem=1024, image=IMAGE,
                 qemu_bin=QEMU_BIN, qemu_extra=(), capture=None, no_qhca=False,
                 mtu=None, wire=None, nice=False, kvm_probe=None, bridges=False,
                 learning=None, migratable=(), migrate_plan=(), snapshots=False,
                 two_networks=None, switch=None, wire_opts=None, fabric=None):
        if not 1 <= n <= 200:
            raise ValueError("n must be 1..200")
        self.n = n
        self.rxe = set(rxe)
        self.no_qhca = no_qhca
        if two_networks is None:
            two_networks = os.environ.get("QHCA_NETWORKS", "1") == "2"
        self.two_networks = two_networks
        # one network: every netdev is on one segment anyway
        self.one_segment = not two_networks or one_segment or (
            bool(self.rxe) and not no_qhca and len(self.rxe) < n)
        self.run_script = run_script
        self.runs = runs or {}
        self.add = list(add)
        self.dir = os.path.abspath(directory or os.path.join(
            BUILD, "runs", time.strftime("%Y%m%d-%H%M%S") + f"-{os.getpid()}"))
        self.timeout = timeout
        self.ready_timeout = ready_timeout
        self.accel_wanted = accel
        self.accel = None
        # where "auto" keeps what it learnt of KVM on this host (KVM_PROBE)
        self.kvm_probe = kvm_probe or KVM_PROBE
        self.append = append
        self.mem = mem
        self.image = image
        self.qemu_bin = qemu_bin
        self.qemu_extra = list(qemu_extra)
        self.capture = capture
        self.nice = nice
        # as scripts/launch: eth0 MTU 9000 (RDMA path MTU 4096), UDP wire
        self.mtu = int(mtu or os.environ.get("QHCA_GUEST_MTU", 9000))
        self.wire = wire or os.environ.get("QHCA_WIRE", "udp")
        # more options of the two guests' -netdev dgram (scripts/qemu/0005)
        self.wire_opts = (os.environ.get("QHCA_WIRE_OPTS", "") if wire_opts is None
                          else wire_opts)
        if self.wire_opts and not WIRE_OPTS_RE.fullmatch(self.wire_opts):
            raise ValueError(f"wire options '{self.wire_opts}': K=V[,K=V...] of "
                             "rx-batch, tx-batch, rcvbuf, sndbuf")
        self.sockdir = None
        if not 576 <= self.mtu <= 65535:
            raise ValueError("mtu must be 576..65535")
        if self.wire not in ("udp", "unix"):
            raise ValueError("wire must be udp or unix")
        self.learning = (not two_networks) if learning is None else learning
        self.switch = switch or os.environ.get("QHCA_GUEST_SWITCH", "linux")
        if self.switch not in ("linux", "ovs"):
            raise ValueError("switch must be linux or ovs")
        # OVS's bridges replace the Linux bridges: the namespace topology
        bridges = bridges or self.switch == "ovs"
        self._ovs = {}
        self.migratable = set(migratable)
        if (self.migratable or migrate_plan) and not bridges and not (
                fabric or os.environ.get("QHCA_FABRIC")) and not (
                n >= 3 or (two_networks and self.one_segment)):
            raise ValueError(
                "live migration needs the bridge topology (bridges=True, "
                "scripts/launch --bridges): on the two-guest UDP wire each guest's "
                "QEMU binds its own UDP ports, which the QEMU it moves to cannot "
                "bind while the first one runs")
        # migrations asked for by a guest (QHCA-MIGRATE lines) and done
        self._migrate_plan = []
        self._host_plan = list(migrate_plan)
        for g, _, _, _ in self._host_plan:
            self.migratable.add(g)
        self.migrations = []
        self.snapshots = snapshots
        self._snap_done = set()
        self._snap_plan = []
        self.snapshot_log = []
        self.accel_running = None
        self._alt = {}
        self.netns = None
        # a simulated fabric of hosts and a switch (scripts/lib/qhca_fabric.py)
        if fabric is None:
            fabric = os.environ.get("QHCA_FABRIC") or None
        self.fabric_spec = None
        self.fabric = None
        self.fabric_log = []
        if fabric is not None:
            from qhca_fabric import parse  # pylint: disable=import-outside-toplevel
            self.fabric_spec = fabric if not isinstance(fabric, str) else parse(fabric, n)
            if two_networks:
                raise ValueError("a fabric carries one network: not with two networks")
            if self.switch != "linux":
                raise ValueError("a fabric's bridges are Linux bridges")
        if self.fabric_spec is not None:
            pass
        elif n >= 3 or (n >= 2 and ((two_networks and self.one_segment) or bridges)):
            self.netns = f"qhca-{os.getpid()}"
        self.ports = []
        self.vms = {}
        self.ready = {}
        self.exited = {}
        self.fail = {}
        self.outputs = {}
        self.status = {}
        self._logpos = {}
        self._logtail = {}
        self._marks = {}
        self._netns_made = False
        self.t0 = 0.0
        for p in [self.run_script, *self.runs.values(), *self.add, self.image,
                  KERNEL, self.qemu_bin]:
            if p and not os.path.exists(p):
                raise FileNotFoundError(p)

    # -- topology --
    def has_qhca(self, i):
        return not self.no_qhca and i not in self.rxe

    def nets(self):
        """The networks: "ip" (the virtio-nets, and the qhca devices that
        share their backends), and "rdma" for qhca's own netdevs."""
        return ("ip", "rdma") if self.two_networks else ("ip",)

    def _netdev(self, net, i, alt=False):
        nid = f"{net}net"
        if self.n == 1:
            hub = 1 if net == "ip" or self.one_segment else 2
            return f"hubport,id={nid},hubid={hub}"
        if self.netns or self.fabric_spec is not None:
            tap = f"q{i}{net}" + ("m" if alt else "")
            return f"tap,id={nid},ifname={tap},script=no,downscript=no"
        opts = f",{self.wire_opts}" if self.wire_opts else ""
        if self.wire == "unix":
            return (f"dgram,id={nid},local.type=unix,"
                    f"local.path={self.sockdir}/{net}{i},remote.type=unix,"
                    f"remote.path={self.sockdir}/{net}{3 - i}{opts}")
        base = 0 if net == "ip" else self.n
        me, peer = self.ports[base + i - 1], self.ports[base + (3 - i) - 1]
        return (f"dgram,id={nid},local.type=inet,local.host=127.0.0.1,"
                f"local.port={me},remote.type=inet,remote.host=127.0.0.1,"
                f"remote.port={peer}{opts}")

    def _ip(self, *args, check=True):
        return subprocess.run(["ip", *args], check=check, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE)

    def guest_ns(self, i):
        """The network namespace guest I's QEMU runs in (None: this one)."""
        if self.fabric is not None:
            return self.fabric.guest_ns(i)
        return self.netns

    def _start_fabric(self):
        from qhca_fabric import Fabric  # pylint: disable=import-outside-toplevel
        self.fabric = Fabric(self.fabric_spec, self.n, os.path.join(self.dir, "fabric"),
                             mtu=self.mtu)
        self.fabric.start()
        try:
            for i in range(1, self.n + 1):
                for tap in ["q{i}ip"] + (["q{i}ipm"] if i in self.migratable else []):
                    self.fabric.add_tap(i, tap.format(i=i))
        except BaseException:
            self.fabric.stop()
            self.fabric = None
            raise
        log(f"fabric {self.fabric_spec.name}: {self.fabric_spec.describe()}")

    def _fabric_request(self, i, line):
        """A guest changes the fabric with a console line "QHCA-FABRIC
        host=H|all KEY=VALUE..." (the keys of a fabric spec: link keys act
        on what host H sends, port keys on the switch's port to it) or
        "QHCA-FABRIC host=H|all clear"; done at once, noted in
        RUNDIR/fabric/requests."""
        m = re.match(r"QHCA-FABRIC host=(all|\d+)((?: [a-z-]+(?:=\S+)?)+)\s*$", line)
        if not m or self.fabric is None:
            return
        host = 0 if m.group(1) == "all" else int(m.group(1))
        kv = m.group(2).split()
        t = self.elapsed()
        try:
            if host > self.fabric.spec.hosts:
                raise ValueError(f"no host {host}")
            if kv == ["clear"]:
                self.fabric.clear(host)
            else:
                self.fabric.set(host, kv)
            res = "ok"
        except (ValueError, RuntimeError, OSError) as e:
            res = f"error: {e}"
        rec = f"{t:.2f} guest{i} host={m.group(1)} {' '.join(kv)}: {res}"
        self.fabric_log.append(rec)
        log(f"fabric: {rec}")
        with open(os.path.join(self.dir, "fabric", "requests"), "a", encoding="utf-8") as f:
            f.write(rec + "\n")

    def _start_networks(self):
        if self.fabric_spec is not None:
            self._start_fabric()
            return
        if self.n == 2 and not self.netns:
            if self.wire == "unix":
                # AF_UNIX paths have room for about 107 bytes: a short dir
                self.sockdir = tempfile.mkdtemp(prefix="qhca-wire.", dir="/tmp")
            else:
                self.ports = free_udp_ports(4)
        if not self.netns:
            return
        if not shutil.which("ip"):
            raise RuntimeError("no ip command (iproute2)")
        self._ip("netns", "del", self.netns, check=False)
        self._ip("netns", "add", self.netns)
        self._netns_made = True
        try:
            self._make_bridges()
        except BaseException:
            self._stop_networks()
            raise

    def _make_bridges(self):
        nsip = ["-n", self.netns]
        if self.switch == "ovs":
            self._ovs_start()
        for net in self.nets():
            br = "br-ip" if net == "ip" or self.one_segment else "br-rdma"
            if self.switch == "ovs":
                self._ovs_bridge(br)
            elif self._ip(*nsip, "link", "show", br, check=False).returncode != 0:
                # ageing_time 0: no learning, every frame floods as in a
                # hub; 30000 (centiseconds) is Linux's default
                ageing = "30000" if self.learning else "0"
                self._ip(*nsip, "link", "add", br, "type", "bridge", "ageing_time", ageing,
                         "stp_state", "0")
                self._ip(*nsip, "link", "set", br, "mtu", "9000", "up")
            for i in range(1, self.n + 1):
                if net == "rdma" and not self.has_qhca(i):
                    continue
                for tap in [f"q{i}{net}"] + ([f"q{i}{net}m"] if i in self.migratable else []):
                    self._ip(*nsip, "tuntap", "add", "dev", tap, "mode", "tap")
                    if self.switch == "ovs":
                        self._ip(*nsip, "link", "set", tap, "mtu", "9000", "up")
                        self._ovs_port(br, tap)
                    else:
                        self._ip(*nsip, "link", "set", tap, "mtu", "9000", "master", br, "up")

    # -- Open vSwitch (switch="ovs"): its two daemons, run for this run only --
    def _ovs_env(self):
        run = os.path.join(self.dir, "ovs", "run")
        return {**os.environ, "OVS_RUNDIR": run, "OVS_DBDIR": run, "OVS_SYSCONFDIR": run,
                "OVS_LOGDIR": os.path.join(self.dir, "ovs"), "OVS_PKGDATADIR": OVS_PKGDATADIR}

    def _ovs_cmd(self, *cmd, check=True):
        """An OVS client (ovs-vsctl, ovs-appctl, ovs-ofctl, ovsdb-tool) on
        this run's daemons; its stdout."""
        r = subprocess.run(list(cmd), env=self._ovs_env(), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, check=False, timeout=60)
        if check and r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip()[:300]}")
        return r.stdout

    def _ovs_daemon(self, name, *args, ready=None):
        run = self._ovs_env()["OVS_RUNDIR"]
        out = open(os.path.join(self.dir, "ovs", f"{name}.out"), "ab")  # pylint: disable=consider-using-with
        # ip netns exec execs the daemon: the PID is the daemon's. It ends
        # with us (PR_SET_PDEATHSIG) if we are killed before _ovs_stop()
        p = subprocess.Popen(["ip", "netns", "exec", self.netns, name, *args, "--pidfile",
                              "--log-file"], env=self._ovs_env(), stdin=subprocess.DEVNULL,
                             stdout=out, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
        out.close()
        self._ovs.setdefault("procs", []).append(p)
        t0 = time.monotonic()
        while ready and not os.path.exists(os.path.join(run, ready)):
            if p.poll() is not None or time.monotonic() - t0 > 20:
                raise RuntimeError(f"{name} did not start (RUNDIR/ovs/{name}.log)")
            time.sleep(0.05)

    def _ovs_start(self):
        """ovsdb-server and ovs-vswitchd in the run's namespace, with a
        conf.db of their own in RUNDIR/ovs/run (logs in RUNDIR/ovs): the
        host's OVS, if any, is not touched. Debian's openvswitch-switch is
        not installed for the user: on a systemd host it starts and
        enables host-wide daemons."""
        missing = [t for t in ("ovsdb-server", "ovs-vswitchd", "ovs-vsctl", "ovs-appctl",
                               "ovs-ofctl", "ovsdb-tool") if not shutil.which(t)]
        schema = os.path.join(OVS_PKGDATADIR, "vswitch.ovsschema")
        if missing or not os.path.isfile(schema):
            raise RuntimeError(
                f"--switch ovs: no {' '.join(missing) or schema}: install Open vSwitch "
                "(Debian: apt-get install openvswitch-switch; its service is not needed: "
                "each run starts daemons of its own, docs/switches.md)")
        run = self._ovs_env()["OVS_RUNDIR"]
        shutil.rmtree(run, ignore_errors=True)
        os.makedirs(run)
        db = os.path.join(run, "conf.db")
        self._ovs_cmd("ovsdb-tool", "create", db, schema)
        self._ovs_daemon("ovsdb-server", db, f"--remote=punix:{run}/db.sock", ready="db.sock")
        self._ovs_cmd("ovs-vsctl", "--no-wait", "init")
        # without it ovs-vswitchd reads the taps by AF_PACKET without the
        # virtio-net header: a frame whose checksum the guest left to the
        # NIC (CHECKSUM_PARTIAL) goes out with it unfilled, and TCP between
        # the guests fails (InCsumErrors); with it OVS keeps the header
        self._ovs_cmd("ovs-vsctl", "--no-wait", "set", "Open_vSwitch", ".",
                      "other_config:userspace-tso-enable=true")
        self._ovs_daemon("ovs-vswitchd", f"unix:{run}/db.sock", ready="ovs-vswitchd.pid")

    def _ovs_bridge(self, br):
        vs = ["ovs-vsctl", "--timeout=30"]
        if br in self._ovs_cmd(*vs, "list-br").split():
            return
        # the userspace datapath: no openvswitch kernel module needed
        self._ovs_cmd(*vs, "add-br", br, "--", "set", "Bridge", br, "datapath_type=netdev",
                      "other_config:mac-aging-time=300", "--", "set", "Interface", br,
                      "mtu_request=9000")
        if not self.learning:
            # a hub: every frame to every other port (instead of NORMAL)
            self._ovs_cmd("ovs-ofctl", "del-flows", br)
            self._ovs_cmd("ovs-ofctl", "add-flow", br, "priority=0,actions=flood")

    def _ovs_port(self, br, tap):
        self._ovs_cmd("ovs-vsctl", "--timeout=30", "add-port", br, tap, "--", "set",
                      "Interface", tap, "mtu_request=9000")
        mtu = self._ovs_cmd("ovs-vsctl", "get", "Interface", tap, "mtu", check=False).strip()
        if mtu != "9000":
            log(f"ovs: port {tap} has MTU {mtu or '?'}, not 9000")

    def _ovs_stop(self):
        """Stop the run's two OVS daemons (by their PIDs), remove their
        database and sockets; the logs stay in RUNDIR/ovs."""
        for p in reversed(self._ovs.pop("procs", [])):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        shutil.rmtree(self._ovs_env()["OVS_RUNDIR"], ignore_errors=True)

    def fdb(self):
        """What the switch learnt: [(bridge, MAC, port)] (Linux: bridge fdb;
        OVS: ovs-appctl fdb/show, port numbers named), [] without bridges."""
        res = []
        if self.fabric is not None:
            return self.fabric.fdb()
        if not self._netns_made:
            return res
        if self.switch == "ovs":
            if not self._ovs.get("procs"):
                return res
            names = {}
            for line in self._ovs_cmd("ovs-vsctl", "--format=csv", "--no-headings",
                                      "--columns=ofport,name", "list", "Interface",
                                      check=False).splitlines():
                num, _, name = line.partition(",")
                names[num.strip()] = name.strip().strip('"')
            for br in self._ovs_cmd("ovs-vsctl", "list-br", check=False).split():
                for line in self._ovs_cmd("ovs-appctl", "fdb/show", br,
                                          check=False).splitlines()[1:]:
                    f = line.split()
                    if len(f) >= 3:
                        res.append((br, f[2], names.get(f[0], f[0])))
            return res
        r = subprocess.run(["bridge", "-n", self.netns, "fdb", "show"], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True, check=False)
        for line in r.stdout.splitlines():
            f = line.split()
            if len(f) >= 5 and f[1] == "dev" and "master" in f and "permanent" not in f:
                res.append((f[f.index("master") + 1], f[0], f[2]))
        return res

    def _stop_networks(self):
        if self.fabric is not None:
            try:
                with open(os.path.join(self.dir, "fdb"), "w", encoding="utf-8") as f:
                    for e in self.fabric.fdb():
                        f.write(" ".join(e) + "\n")
            except OSError as e:
                log(f"fabric fdb: {e}")
            self.fabric.stop()
            self.fabric = None
        if self.sockdir:
            shutil.rmtree(self.sockdir, ignore_errors=True)
            self.sockdir = None
        if self._netns_made:
            # what the switch had learnt at the end: RUNDIR/fdb
            try:
                with open(os.path.join(self.dir, "fdb"), "w", encoding="utf-8") as f:
                    for e in self.fdb():
                        f.write(" ".join(e) + "\n")
            except (OSError, RuntimeError, subprocess.SubprocessError) as e:
                log(f"{self.switch} fdb: {e}")
            if self.switch == "ovs":
                # the ports' counters (drops among them): RUNDIR/ovs/dpctl-show
                if self._ovs.get("procs"):
                    with open(os.path.join(self.dir, "ovs", "dpctl-show"), "w",
                              encoding="utf-8") as f:
                        f.write(self._ovs_cmd("ovs-appctl", "dpctl/show", "-s", check=False))
                self._ovs_stop()
            self._ip("netns", "del", self.netns, check=False)
            self._netns_made = False

    # -- one guest --
    def qemu_args(self, i, accel, serial=None, alt=False, gen=0):
        """QEMU's arguments for guest I (without QEMUMachine's own); the
        serial console goes to guestI.log unless SERIAL says otherwise
        (appended to: the QEMU a guest migrates to goes on in the same
        file); ALT: the second taps, GEN: the migration it is made for
        (migrate(): a capture goes to CAPTURE.GEN)."""
        cpu = os.environ.get("QHCA_KVM_CPU", "host") if accel == "kvm" else "Westmere"
        peers = ",".join(guest_ip(j) for j in range(1, self.n + 1) if j != i)
        # no_timer_check: the kernel's check that the IO-APIC timer ticks
        # gives up, and panics ("IO-APIC + timer doesn't work!"), when a
        # loaded host runs the TCG vCPU too slowly during it (seen with two
        # guests booting beside a test run on two cores)
        append = (f"console=ttyS0 quiet panic=-1 oops=panic no_timer_check"
                  f" qguest.id={i} qguest.n={self.n}"
                  f" qguest.ip={guest_ip(i)}/24 qguest.run_timeout={self.timeout}")
        if peers:
            append += f" qguest.peers={peers}"
        if not self.has_qhca(i):
            append += " qguest.noqhca"
        if i in self.rxe:
            append += " qguest.rxe"
        if self.append:
            append += " " + self.append
        args = ["-name", f"guest{i},debug-threads=on", "-machine", "q35", "-accel", accel, "-cpu", cpu,
                "-m", str(self.mem), "-smp", "1", "-nodefaults", "-no-reboot",
                "-kernel", KERNEL, "-initrd", os.path.join(self.dir, f"guest{i}.initrd"),
                "-append", append,
                "-netdev", self._netdev("ip", i, alt),
                "-device", f"virtio-net-pci,netdev=ipnet,id=nic0,mac={mac(i)},romfile=,"
                           f"host_mtu={self.mtu}"]
        if self.has_qhca(i) and self.two_networks:
            args += ["-netdev", self._netdev("rdma", i, alt),
                     "-device", f"qhca,netdev=rdmanet,mac={mac(i)}"]
        elif self.has_qhca(i):
            # one network: the virtio-net's backend, and its MAC
            args += ["-device", "qhca,nic=nic0"]
        if self.capture and i == 1:
            nd = "rdmanet" if self.has_qhca(1) and self.two_networks else "ipnet"
            cap = self.capture + (f".{gen}" if gen else "")
            args += ["-object", f"filter-dump,id=capture,netdev={nd},file={cap}"]
        if self.snapshots:
            img = os.path.join(self.dir, f"guest{i}.snap.qcow2")
            args += ["-blockdev", f"driver=file,node-name=snapfile,filename={img}",
                     "-blockdev", "driver=qcow2,node-name=snap,file=snapfile"]
        args += self.qemu_extra
        if serial:
            args += ["-serial", serial]
        else:
            path = os.path.join(self.dir, f"guest{i}.log")
            args += ["-chardev", f"file,id=console,path={path},append=on",
                     "-serial", "chardev:console"]
        return args

    def _write_initrd(self, i):
        """The image with guest I's run archive appended."""
        os.makedirs(self.dir, exist_ok=True)
        initrd = os.path.join(self.dir, f"guest{i}.initrd")
        with open(initrd, "wb") as out, open(self.image, "rb") as img:
            shutil.copyfileobj(img, out)
            out.write(run_archive(self.runs.get(i, self.run_script), self.add))

    def exec_interactive(self):
        """Replace this process by QEMU running guest 1 with its serial
        console (and QEMU's monitor: Ctrl-A C) on this terminal."""
        accel = choose_accel(self.accel_wanted, self.kvm_probe)
        if (accel == "kvm" and self.accel_wanted == "auto" and
                probe_state(self.kvm_probe) != "ok" and not self.kvm_starts()):
            log(f"KVM guests do not start here ({self.kvm_failure}): "
                f"recorded in {self.kvm_probe}; using TCG")
            record_probe("fail", self.kvm_failure, self.kvm_probe)
            accel = "tcg"
        self._write_initrd(1)
        args = [self.qemu_bin, *self.qemu_args(1, accel, serial="mon:stdio"),
                "-display", "none"]
        log(f"interactive guest under {accel} (Ctrl-A X quits QEMU)")
        os.execv(self.qemu_bin, args)

    def kvm_starts(self):
        """Whether a guest boots under KVM here: one guest of this run's
        image, under KVM, must reach the ready marker in the time a KVM
        boot gets (20 s), as the boot of a run decides.  QEMU answering
        QMP is not enough: on a nested KVM that emulates some
        instructions badly, QEMU starts and the guest hangs in early boot
        (seen: 6.18 hosts, -cpu host).  No exec'd guest can fall back
        later, so --interactive asks first."""
        os.makedirs(self.dir, exist_ok=True)
        script = os.path.join(self.dir, "kvm-probe.sh")
        with open(script, "w", encoding="utf-8") as f:
            f.write("#!/bin/sh\nexit 0\n")
        probe = GuestRun(1, run_script=script, directory=os.path.join(self.dir, "kvm-probe"),
                         timeout=30, ready_timeout=self.ready_timeout, accel="kvm",
                         append=self.append, mem=self.mem, image=self.image,
                         qemu_bin=self.qemu_bin, kvm_probe=os.path.join(self.dir, "kvm-probe.state"),
                         two_networks=self.two_networks, mtu=self.mtu, wire=self.wire)
        try:
            r = probe._boot_and_watch("kvm", None, None)  # pylint: disable=protected-access
        except Exception as e:  # pylint: disable=broad-except
            self.kvm_failure = f"{type(e).__name__}: {e}"[:300]
            return False
        if r == "kvm-failed":
            self.kvm_failure = probe.kvm_failure
            return False
        if 1 not in probe.ready:
            self.kvm_failure = "guest1: no ready marker"
            return False
        return True

    def _start_guest(self, i, accel):
        machine_cls = qemu_machine_class()
        self._write_initrd(i)
        if self.snapshots:
            img = os.path.join(self.dir, f"guest{i}.snap.qcow2")
            subprocess.run([qemu_img(), "create", "-q", "-f", "qcow2", img, "64M"],
                           check=True)
        args = self.qemu_args(i, accel)
        wrapper = ["nice"] if self.nice else []
        if self.guest_ns(i):
            wrapper += ["ip", "netns", "exec", self.guest_ns(i)]
        with open(os.path.join(self.dir, f"guest{i}.cmdline"), "w", encoding="utf-8") as f:
            f.write(" ".join(wrapper + [self.qemu_bin] + args) + "\n")
        open(os.path.join(self.dir, f"guest{i}.log"), "wb").close()
        vm = machine_cls(self.qemu_bin, args=args, wrapper=wrapper, name=f"guest{i}.qemu",
                         log_dir=self.dir, base_temp_dir=self.dir)
        vm.launch()
        self.vms[i] = vm
        self._logpos[i] = 0
        self._logtail[i] = b""
        self._marks[i] = set()

    def pid(self, i):
        vm = self.vms.get(i)
        return vm.get_pid() if vm is not None and vm.is_running() else None

    def elapsed(self):
        return time.monotonic() - self.t0

    def _read_log(self, i, on_line):
        """New complete lines of guest I's console; markers are noted."""
        path = os.path.join(self.dir, f"guest{i}.log")
        try:
            with open(path, "rb") as f:
                f.seek(self._logpos[i])
                data = f.read()
        except OSError:
            return
        self._logpos[i] += len(data)
        buf = self._logtail[i] + data
        lines = buf.split(b"\n")
        self._logtail[i] = lines.pop()
        for raw in lines:
            line = raw.decode("utf-8", "replace").replace("\r", "")
            for m in ("QHCA-GUEST-READY", "QHCA-RUN-BEGIN", "QHCA-RUN-END",
                      "QHCA-POWEROFF"):
                if line.startswith(m):
                    self._marks[i].add(m)
            self._migrate_request(i, line)
            self._snapshot_request(i, line)
            if line.startswith("QHCA-FABRIC "):
                self._fabric_request(i, line)
            if on_line:
                on_line(i, line)

    def marker(self, i, m):
        return m in self._marks.get(i, ())

    # -- live migration --
    def _migrate_request(self, i, line):
        """A guest's run script asks for migrations with a console line
        "QHCA-MIGRATE guest=G count=N gap=S": guest G is migrated N times,
        to a new QEMU each time, the first S seconds after the line and
        each next S seconds after the one before ended."""
        m = re.match(r"QHCA-MIGRATE guest=(\d+) count=(\d+) gap=(\d+(?:\.\d+)?)", line)
        if not m:
            return
        g, count, gap = int(m.group(1)), int(m.group(2)), float(m.group(3))
        if g not in self.migratable or not 1 <= count <= 50:
            log(f"guest{i} asked to migrate guest{g} {count} times: not migratable here")
            self.migrations.append({"guest": g, "status": "refused",
                                    "error": "not migratable in this run"})
            self._write_migrations()
            return
        self._migrate_plan.append({"guest": g, "left": count, "gap": gap,
                                   "due": self.elapsed() + gap})

    def _migrate_due(self):
        """Do the next migration asked for, if its time has come."""
        for plan in self._migrate_plan:
            if plan["left"] and self.elapsed() >= plan["due"]:
                g = plan["guest"]
                if g in self.exited or not self.vms[g].is_running():
                    plan["left"] = 0
                    continue
                self.migrate(g)
                plan["left"] -= 1
                plan["due"] = self.elapsed() + plan["gap"]
                return

    # -- snapshots --
    def _snapshot_request(self, i, line):
        """A guest asks for snapshots with a console line "QHCA-SNAPSHOT
        op=save|load guests=G[,G...] tag=T": each guest's VM state saved
        to (or loaded from) its snapshot image under tag T, all of them
        stopped first and run again together after.  Each (op, tag,
        guests) is done once: a guest loaded back to before its request
        prints it again."""
        m = re.match(r"QHCA-SNAPSHOT op=(save|load) guests=([0-9,]+) tag=([A-Za-z0-9_-]+)", line)
        if not m or not self.snapshots:
            return
        key = (m.group(1), m.group(3), m.group(2))
        if key in self._snap_done:
            return
        self._snap_done.add(key)
        self._snap_plan.append((m.group(1), [int(g) for g in m.group(2).split(",")],
                                m.group(3)))

    def _snapshot_due(self):
        while self._snap_plan:
            op, guests, tag = self._snap_plan.pop(0)
            self.snapshot(op, guests, tag)

    @staticmethod
    def _job(vm, cmd, job, timeout=300, **args):
        """Run QMP job command CMD as JOB and wait for it to conclude."""
        r = vm.qmp(cmd, **{"job-id": job}, **args)
        if "error" in r:
            raise RuntimeError(r["error"].get("desc", str(r)))
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            jobs = {j["id"]: j for j in vm.qmp("query-jobs")["return"]}
            j = jobs.get(job)
            if j and j["status"] == "concluded":
                vm.qmp("job-dismiss", id=job)
                if j.get("error"):
                    raise RuntimeError(j["error"])
                return
            time.sleep(0.1)
        raise RuntimeError(f"{cmd} did not finish in {timeout} s")

    def snapshot(self, op, guests, tag):
        """Save (op "save") or load ("load") the internal snapshot TAG of
        GUESTS: every one stopped, then each saved or loaded, then all run
        again.  Recorded in self.snapshot_log and RUNDIR/snapshots."""
        rec = {"op": op, "guests": ",".join(map(str, guests)), "tag": tag,
               "at_s": round(self.elapsed(), 1)}
        t0 = time.monotonic()
        vms = [(g, self.vms[g]) for g in guests
               if g in self.vms and self.vms[g].is_running()]
        try:
            for _, vm in vms:
                vm.qmp("stop")
            for g, vm in vms:
                self._job(vm, f"snapshot-{op}", f"{op}-{tag}-{g}", tag=tag,
                          vmstate="snap", devices=["snap"])
            rec["status"] = "completed" if len(vms) == len(guests) else "guest gone"
        except Exception as e:  # pylint: disable=broad-except
            rec["status"] = "failed"
            rec["error"] = str(e).replace(" ", "_")[:200]
            log(f"snapshot {op} {tag} of guest(s) {guests} failed: {e}")
        finally:
            for _, vm in vms:
                try:
                    vm.qmp("cont")
                except Exception:  # pylint: disable=broad-except
                    pass
        rec["ms"] = round((time.monotonic() - t0) * 1000)
        log(f"snapshot {op} {tag} of guest(s) {rec['guests']}: {rec['status']} in {rec['ms']} ms")
        self.snapshot_log.append(rec)
        with open(os.path.join(self.dir, "snapshots"), "w", encoding="utf-8") as f:
            for r in self.snapshot_log:
                f.write(" ".join(f"{k}={v}" for k, v in r.items()) + "\n")
        return rec

    def _write_migrations(self):
        with open(os.path.join(self.dir, "migrations"), "w", encoding="utf-8") as f:
            for r in self.migrations:
                f.write(" ".join(f"{k}={v}" for k, v in r.items()) + "\n")

    def _fdb_learnt(self, i, alt, wait_s=2.0):
        """Milliseconds after the switch-over until both learning bridges
        had guest I's MAC on its new taps (-1: not within WAIT_S)."""
        t0 = time.monotonic()
        taps = [f"q{i}{net}" + ("m" if alt else "") for net in self.nets()
                if net == "ip" or self.has_qhca(i)]
        while time.monotonic() - t0 < wait_s:
            have = {port for _, m, port in self.fdb() if m == mac(i)}
            if all(t in have for t in taps):
                return round((time.monotonic() - t0) * 1000)
            time.sleep(0.02)
        return -1

    def migrate(self, i, timeout=180):
        """Live-migrate guest I to a new QEMU on this host, as a user would
        with QMP: the new QEMU starts with -incoming defer on the guest's
        other taps (the bridges learn the port again from the device's
        and the NIC's announcements after the switch-over), the old one
        migrates to it over a UNIX socket and is then stopped.  Returns
        the record kept in self.migrations (and RUNDIR/migrations):
        status, QEMU's downtime and total time in ms."""
        src = self.vms[i]
        k = len(self.migrations) + 1
        alt = not self._alt.get(i, False)
        accel = self.accel_running
        args = self.qemu_args(i, accel, alt=alt, gen=k) + ["-incoming", "defer"]
        wrapper = ["nice"] if self.nice else []
        if self.guest_ns(i):
            wrapper += ["ip", "netns", "exec", self.guest_ns(i)]
        rec = {"n": k, "guest": i, "to": "second taps" if alt else "first taps",
               "at_s": round(self.elapsed(), 1)}
        sock = os.path.join(self.dir, f"migrate{k}.sock")
        machine_cls = qemu_machine_class()
        dst = machine_cls(self.qemu_bin, args=args, wrapper=wrapper,
                          name=f"guest{i}.m{k}.qemu", log_dir=self.dir,
                          base_temp_dir=self.dir)
        t0 = time.monotonic()
        try:
            dst.launch()
            dst.qmp("migrate-incoming", uri=f"unix:{sock}")
            # as fast as the host can: the default 128 MiB/s stretches the
            # copy of a guest's memory under TCG for nothing
            src.qmp("migrate-set-parameters", **{"max-bandwidth": 8 << 30})
            r = src.qmp("migrate", uri=f"unix:{sock}")
            if "error" in r:
                raise RuntimeError(r["error"].get("desc", str(r)))
            st = {}
            while time.monotonic() - t0 < timeout:
                st = src.qmp("query-migrate")["return"]
                if st.get("status") in ("completed", "failed", "cancelled"):
                    break
                time.sleep(0.1)
            rec["status"] = st.get("status", "timeout")
            rec["downtime_ms"] = st.get("downtime", "")
            rec["total_ms"] = st.get("total-time", "")
            rec["ram_mb"] = round(st.get("ram", {}).get("transferred", 0) / 1e6, 1)
            if rec["status"] != "completed":
                rec["error"] = st.get("error-desc", "").replace(" ", "_")
                raise RuntimeError(f"migration {rec['status']}: {st.get('error-desc', '')}")
            for _ in range(100):
                if dst.qmp("query-status")["return"].get("running"):
                    break
                time.sleep(0.1)
            else:
                raise RuntimeError("the destination did not run after the migration")
        except Exception as e:  # pylint: disable=broad-except
            rec.setdefault("status", "failed")
            rec.setdefault("error", str(e).replace(" ", "_")[:200])
            log(f"guest{i}: migration {k} failed: {e}")
            try:
                dst.shutdown(hard=True)
            except Exception:  # pylint: disable=broad-except
                pass
            self.migrations.append(rec)
            self._write_migrations()
            return rec
        try:
            src.shutdown(hard=True)
        except Exception:  # pylint: disable=broad-except
            pass
        if self.learning:
            rec["fdb_ms"] = self._fdb_learnt(i, alt)
        self.vms[i] = dst
        self._alt[i] = alt
        log(f"guest{i} migrated ({rec['to']}): downtime {rec['downtime_ms']} ms, "
            f"total {rec['total_ms']} ms")
        self.migrations.append(rec)
        self._write_migrations()
        return rec

    def _stop_guests(self):
        for i, vm in self.vms.items():
            if i in self.exited:
                continue
            try:
                if vm.is_running():
                    vm.shutdown(hard=True)
                else:
                    vm.wait(timeout=10)
            except Exception as e:  # pylint: disable=broad-except
                log(f"guest{i}: stopping QEMU: {e}")
            self.exited.setdefault(i, self.elapsed())

    def _boot_and_watch(self, accel, on_line, on_tick):
        """Returns 'kvm-failed' if KVM guests did not boot, else None."""
        rt = self.ready_timeout or (20 if accel == "kvm" else 300)
        self.accel_running = accel
        self.t0 = time.monotonic()
        self.vms, self.ready, self.exited, self.fail = {}, {}, {}, {}
        self._start_networks()
        try:
            for i in range(1, self.n + 1):
                try:
                    self._start_guest(i, accel)
                except Exception as e:  # pylint: disable=broad-except
                    # qemu.machine raises when QEMU dies before QMP answers:
                    # under KVM that is the host's KVM failing (an MSR QEMU
                    # cannot set under nested KVM aborts it), which "auto"
                    # falls back from; under TCG it is an error
                    if accel != "kvm":
                        raise
                    why = " | ".join(
                        l.strip() for l in str(e).splitlines()
                        if "qemu-system-x86_64:" in l or "Exit code" in l)[:300]
                    self.kvm_failure = (f"guest{i}: QEMU did not start under KVM "
                                        f"({type(e).__name__}{': ' + why if why else ''})")
                    return "kvm-failed"
            log(f"booting {self.n} guest(s) under {accel}: logs in {self.dir}")
            deadline = None
            while True:
                time.sleep(0.25)
                t = self.elapsed()
                self._migrate_due()
                self._snapshot_due()
                for i in range(1, self.n + 1):
                    self._read_log(i, on_line)
                    if i not in self.ready and self.marker(i, "QHCA-GUEST-READY"):
                        self.ready[i] = t
                        log(f"guest{i} ready after {t:.1f}s")
                    if i not in self.exited and not self.vms[i].is_running():
                        self.exited[i] = t
                        self._read_log(i, on_line)
                if on_tick:
                    on_tick(self)
                if accel == "kvm":
                    for i in range(1, self.n + 1):
                        if i not in self.ready and (i in self.exited or t > rt):
                            self.kvm_failure = f"guest{i}: no ready marker after {t:.1f}s"
                            return "kvm-failed"
                running = [i for i in range(1, self.n + 1) if i not in self.exited]
                if not running:
                    break
                dead = [i for i in self.exited if not self.marker(i, "QHCA-RUN-END")]
                pending = [i for i in running if not self.marker(i, "QHCA-RUN-END")]
                if dead and not pending:
                    log("a guest died without reporting; the others have reported: stopping them")
                    break
                # Every guest has reported and some have powered off, but
                # others still wait at the guest init's end barrier for
                # guests that are gone (seen with four guests under load:
                # the last one waited out its whole run timeout; a barrier
                # answer that came too late for nc -w 2, from a guest that
                # had counted its peer and left, would do it). Nothing is
                # left to run: stop them after a grace
                if (self.exited and not pending and "qguest.shell" not in self.append
                        and t - max(self.exited.values()) > END_GRACE_S):
                    log(f"every guest has reported; guest(s) {running} still at the end "
                        f"barrier {END_GRACE_S} s after the last power-off: stopping them")
                    break
                if len(self.ready) == self.n and deadline is None:
                    deadline = t + self.timeout + 150
                    for g, count, start, gap in self._host_plan:
                        self._migrate_plan.append({"guest": g, "left": count,
                                                   "gap": gap, "due": t + start})
                    if (accel == "kvm" and self.accel_wanted == "auto"
                            and probe_state(self.kvm_probe) != "ok"):
                        record_probe("ok", f"guests reached the ready marker in {t:.1f}s",
                                     self.kvm_probe)
                if len(self.ready) < self.n and t > rt:
                    for i in range(1, self.n + 1):
                        if i not in self.ready:
                            self.fail[i] = f"no ready marker after {rt}s"
                    log(f"not every guest reached the ready marker in {rt}s: stopping")
                    break
                if deadline is not None and t > deadline:
                    for i in running:
                        self.fail[i] = f"timed out (killed after {t:.0f}s)"
                    log(f"run timed out after {t:.0f}s: stopping the guests")
                    break
            return None
        finally:
            self._stop_guests()
            self._stop_networks()
            for i in range(1, self.n + 1):
                try:
                    os.unlink(os.path.join(self.dir, f"guest{i}.initrd"))
                except OSError:
                    pass

    def run(self, on_line=None, on_tick=None):
        """Boot, watch, stop; collect outputs and status. True if every guest
        ran its script with exit code 0. on_line(i, line) gets every console
        line as it comes; on_tick(run) is called about four times a second."""
        os.makedirs(self.dir, exist_ok=True)
        accel = choose_accel(self.accel_wanted, self.kvm_probe)
        # SIGTERM stops the guests too (the finally of _boot_and_watch)
        old_term = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        try:
            return self._run(accel, on_line, on_tick)
        finally:
            signal.signal(signal.SIGTERM, old_term)

    def _run(self, accel, on_line, on_tick):
        r = self._boot_and_watch(accel, on_line, on_tick)
        if r == "kvm-failed":
            log(f"KVM guests did not boot ({self.kvm_failure})")
            if self.accel_wanted != "auto":
                raise RuntimeError(f"KVM guests did not boot ({self.kvm_failure})")
            for i in range(1, self.n + 1):
                for suffix in ("log", "qemu.log"):
                    p = os.path.join(self.dir, f"guest{i}.{suffix}")
                    if os.path.exists(p):
                        os.replace(p, os.path.join(self.dir, f"guest{i}.kvm-failed.{suffix}"))
            record_probe("fail", self.kvm_failure, self.kvm_probe)
            log(f"recorded in {self.kvm_probe}; redoing the run under TCG")
            accel = "tcg"
            self._boot_and_watch(accel, on_line, on_tick)
        self.accel = accel
        return self._results()

    def _results(self):
        ok = True
        lines = [f"accel: {self.accel}"]
        for i in range(1, self.n + 1):
            path = os.path.join(self.dir, f"guest{i}.log")
            with open(path, "rb") as f:
                text = f.read().decode("utf-8", "replace").replace("\r", "")
            out, grab, rc = [], False, None
            for line in text.split("\n"):
                if line.startswith("QHCA-OUTPUT-BEGIN"):
                    grab, out = True, []
                elif line.startswith("QHCA-OUTPUT-END"):
                    grab = False
                elif grab:
                    out.append(line)
                m = re.match(r"QHCA-RUN-END id=\d+ rc=(\d+)", line)
                if m:
                    rc = int(m.group(1))
            self.outputs[i] = "\n".join(out) + ("\n" if out else "")
            with open(os.path.join(self.dir, f"guest{i}.out"), "w", encoding="utf-8") as f:
                f.write(self.outputs[i])
            if "Kernel panic" in text:
                st = "CRASHED: " + next(l for l in text.split("\n") if "Kernel panic" in l)
            elif rc is not None:
                st = "ok (run script exit 0)" if rc == 0 else f"FAILED: run script exit {rc}"
            elif i in self.fail:
                st = f"FAILED: {self.fail[i]}"
            elif i not in self.ready:
                st = "FAILED: QEMU exited before the ready marker"
            else:
                st = "FAILED: run did not finish"
            self.status[i] = st
            ok = ok and st.startswith("ok")
            ready = f"ready after {self.ready[i]:.1f}s" if i in self.ready else "never ready"
            lines.append(f"guest{i}: {st}; {ready}; log {path}")
            try:
                with open(os.path.join(self.dir, f"guest{i}.qemu.log"), "rb") as f:
                    said = f.read(300).decode("utf-8", "replace").replace("\n", " ").strip()
            except OSError:
                said = ""
            if said:
                lines.append(f"guest{i}: QEMU said: {said}")
            try:
                os.unlink(os.path.join(self.dir, f"guest{i}.initrd"))
            except OSError:
                pass
        if self.capture:
            lines.append(f"capture: {self.capture}")
        lines.append(f"run directory: {self.dir}")
        with open(os.path.join(self.dir, "summary"), "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        for line in lines:
            log(line)
        return ok
