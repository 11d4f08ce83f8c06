"""Stock Debian guests (scripts/build-distro images) driven over their
serial console, with QEMU's own Python package (qemu.machine.QEMUMachine).

    from qhca_distro import DistroGuest, wire_pair
    a = DistroGuest("12", 1, run_dir, pkg_disk=...)
    b = DistroGuest("13", 2, run_dir, pkg_disk=...)
    bridge_pair(a, b)                 # taps on a learning bridge, in a netns
    # (or wire_pair(a, b): -netdev dgram on 127.0.0.1, as scripts/launch)
    a.boot(); b.boot()
    a.wait_shell(); b.wait_shell()
    rc, out = a.sh("ibv_devinfo", timeout=60)
    a.poweroff()

Each guest boots the image's own kernel and initrd (-kernel/-initrd,
root=/dev/vda) from its own sparse copy of the stock image, so what a guest
installs stays for its next boot in the same run and the image itself is
never written. The devices are those of scripts/launch: a virtio-net
(52:54:00:71:48:<id>) and a qhca device that shares its backend
(-device qhca,nic=nic0: one network, one MAC, one port), on a tap of a
learning Linux bridge in a network namespace made for the run
(bridge_pair(); end_bridges() removes it), or on a UDP -netdev dgram
pair on 127.0.0.1 between two guests (wire_pair()).
The image logs root in on ttyS0 (the only change build-distro makes for
control); commands are typed there and end with a marker line that carries
their exit status.
"""

import atexit
import os
import re
import subprocess
import threading
import time

from qhca_guests import BUILD, QEMU_BIN, free_udp_ports, log, mac, qemu_machine_class

DISTRO = os.path.join(BUILD, "distro")
PROMPT = re.compile(rb"root@debian[0-9]+:[^\n]*# ")


class GuestError(Exception):
    pass


class DistroGuest:
    """One stock Debian guest. rel: '12' or '13'; gid: 1..255 (MAC, name)."""

    # pylint: disable=too-many-instance-attributes,too-many-arguments
    def __init__(self, rel, gid, run_dir, pkg_disk=None, mem=2048, name=None,
                 qemu_bin=QEMU_BIN, disk=None, capture=None):
        self.rel = rel
        self.gid = gid
        self.name = name or f"deb{rel}-{gid}"
        self.dir = run_dir
        self.img_dir = os.path.join(DISTRO, rel)
        for f in ("disk.img", "vmlinuz", "initrd.img"):
            if not os.path.exists(os.path.join(self.img_dir, f)):
                raise FileNotFoundError(f"{self.img_dir}/{f}: run scripts/build-distro {rel}")
        self.disk = disk or os.path.join(run_dir, f"{self.name}.img")
        self.pkg_disk = pkg_disk
        self.mem = mem
        self.qemu_bin = qemu_bin
        self.capture = capture
        self.netdevs = {}
        self.netns = None           # bridge_pair(): QEMU runs in it
        self.vm = None
        self.boots = 0
        self._buf = b""
        self._pos = 0
        self._cv = threading.Condition()
        self._reader = None
        self._log = None
        self._seq = 0
        self.ip = None
        self.iface = None

    # -- disk and QEMU --
    def make_disk(self):
        """A sparse copy of the stock image (kept for the next boot)."""
        if os.path.exists(self.disk):
            return
        subprocess.run(["cp", "--sparse=always", os.path.join(self.img_dir, "disk.img"),
                        self.disk + ".part"], check=True)
        os.rename(self.disk + ".part", self.disk)

    def qemu_args(self):
        m = mac(self.gid)
        args = ["-name", f"{self.name},debug-threads=on", "-machine", "q35",
                "-accel", "tcg", "-cpu", "Westmere", "-m", str(self.mem), "-smp", "1",
                "-nodefaults", "-no-reboot",
                "-kernel", os.path.join(self.img_dir, "vmlinuz"),
                "-initrd", os.path.join(self.img_dir, "initrd.img"),
                "-append", "console=ttyS0,115200 root=/dev/vda rw panic=-1 no_timer_check",
                "-drive", f"file={self.disk},if=virtio,format=raw,cache=unsafe"]
        if self.pkg_disk:
            args += ["-drive", f"file={self.pkg_disk},if=virtio,format=raw,readonly=on"]
        args += ["-netdev", self.netdevs["ip"],
                 "-device", f"virtio-net-pci,netdev=ipnet,id=nic0,mac={m},romfile=,"
                            "host_mtu=9000",
                 "-device", "qhca,nic=nic0"]
        if self.capture:
            args += ["-object", f"filter-dump,id=capture,netdev=ipnet,file={self.capture}"]
        return args

    def boot(self):
        if self.vm is not None:
            raise GuestError(f"{self.name}: already running")
        self.make_disk()
        self.boots += 1
        machine_cls = qemu_machine_class()
        tag = f"{self.name}.boot{self.boots}"
        wrapper = ["ip", "netns", "exec", self.netns] if self.netns else []
        self.vm = machine_cls(self.qemu_bin, args=self.qemu_args(), name=tag,
                              wrapper=wrapper, log_dir=self.dir, base_temp_dir=self.dir)
        self.vm.set_console()
        with open(os.path.join(self.dir, f"{tag}.cmdline"), "w", encoding="utf-8") as f:
            f.write(" ".join([self.qemu_bin] + self.qemu_args()) + "\n")
        self.vm.launch()
        self._buf, self._pos = b"", 0
        self._log = open(os.path.join(self.dir, f"{tag}.console.log"), "wb")
        self._reader = threading.Thread(target=self._read_console, daemon=True)
        self._reader.start()
        self.t_boot = time.monotonic()
        log(f"{self.name}: booting (console log {self._log.name})")

    def _read_console(self):
        sock = self.vm.console_socket
        while True:
            try:
                data = sock.recv(4096)
            except OSError:
                data = b""
            if not data:
                break
            self._log.write(data)
            self._log.flush()
            with self._cv:
                self._buf += data
                self._cv.notify_all()
        with self._cv:
            self._cv.notify_all()

    def running(self):
        return self.vm is not None and self.vm.is_running()

    def expect(self, pattern, timeout):
        """Wait for PATTERN (bytes regex) in the console after the last
        match; returns the match. GuestError on timeout or QEMU exit."""
        rx = re.compile(pattern) if isinstance(pattern, bytes) else pattern
        deadline = time.monotonic() + timeout
        with self._cv:
            while True:
                m = rx.search(self._buf, self._pos)
                if m:
                    self._pos = m.end()
                    return m
                left = deadline - time.monotonic()
                if left <= 0:
                    raise GuestError(f"{self.name}: timed out after {timeout} s waiting for "
                                     f"{rx.pattern!r}")
                if not self.running():
                    raise GuestError(f"{self.name}: QEMU exited (waiting for {rx.pattern!r})")
                self._cv.wait(min(left, 1.0))

    def send(self, text):
        self.vm.console_socket.sendall(text.encode())

    def wait_shell(self, timeout=600):
        """Wait for the root shell on ttyS0 and make it fit for scripting."""
        self.expect(PROMPT, timeout)
        # no echo, no console kernel messages, no colours or pagers
        self._seq += 1
        tok = f"QSETUP{self._seq}"
        deadline = time.monotonic() + 60
        while True:
            self.send("stty -echo; dmesg -n 1; export TERM=dumb PAGER=cat SYSTEMD_PAGER= "
                      "SYSTEMD_COLORS=0 DEBIAN_FRONTEND=noninteractive; "
                      f"bind 'set enable-bracketed-paste off' 2>/dev/null; echo {tok}''OK\n")
            try:
                self.expect(f"{tok}OK".encode(), 10)
                break
            except GuestError:
                if time.monotonic() > deadline:
                    raise
        took = time.monotonic() - self.t_boot
        log(f"{self.name}: shell ready {took:.0f} s after QEMU started")
        return took

    def sh(self, cmd, timeout=120, check=False):
        """Run CMD (one shell line) on the console; (exit status, output)."""
        self._seq += 1
        n = self._seq
        with self._cv:
            self._pos = len(self._buf)
        start = self._pos
        sep = " " if cmd.rstrip().endswith("&") else "; "
        self.send(f"{cmd}{sep}echo QEND{n}'-'$?'-'QEND\n")
        m = self.expect(f"QEND{n}-([0-9]+)-QEND".encode(), timeout)
        text = PROMPT.sub(b"", self._buf[start:m.start()])
        text = text.decode("utf-8", "replace").replace("\r", "")
        rc = int(m.group(1))
        if check and rc != 0:
            raise GuestError(f"{self.name}: `{cmd}` exited {rc}:\n{text[-3000:]}")
        return rc, text

    # -- network (inside the guest) --
    def setup_ip(self, ip, mtu=9000):
        """Bring up the virtio-net (found by MAC) with IP/24."""
        m = mac(self.gid)
        rc, out = self.sh(f"ip -o link | awk -F': ' '/link\\/ether {m}/ && !/qhca/ {{print $2}}'")
        ifaces = [line.strip() for line in out.splitlines() if line.strip()]
        if rc != 0 or not ifaces:
            raise GuestError(f"{self.name}: no interface with MAC {m}: {out}")
        self.iface = ifaces[0]
        self.ip = ip
        self.sh(f"ip link set {self.iface} mtu {mtu} up && ip addr replace {ip}/24 dev "
                f"{self.iface}", check=True)
        return self.iface

    def poweroff(self, timeout=180):
        """Clean shutdown (the disk is kept): sync, systemctl poweroff (or,
        should that fail, the kernel's own power off after the sync), and
        wait for QEMU to exit; after TIMEOUT seconds QEMU is stopped.
        True if the guest powered off by itself."""
        if self.vm is None:
            return False
        clean = False
        if self.running():
            try:
                self.sh("sync", timeout=120)
                self.send("systemctl poweroff || { sync; echo o >/proc/sysrq-trigger; }\n")
                deadline = time.monotonic() + timeout
                while self.running() and time.monotonic() < deadline:
                    time.sleep(0.5)
                clean = not self.running()
            except GuestError as e:
                log(f"{self.name}: {e}")
            if not clean:
                log(f"{self.name}: no clean poweroff in {timeout} s; stopping QEMU")
        self.kill()
        return clean

    def kill(self):
        if self.vm is None:
            return
        try:
            self.vm.shutdown(hard=True)
        except Exception as e:  # pylint: disable=broad-except
            log(f"{self.name}: stopping QEMU: {e}")
        if self._reader:
            self._reader.join(timeout=5)
        if self._log:
            self._log.close()
        self.vm = None


def wire_pair(a, b):
    """The two guests' network: one -netdev dgram pair on 127.0.0.1 (UDP),
    as scripts/launch wires two guests."""
    p = free_udp_ports(2)
    for g, me, peer in ((a, p[0], p[1]), (b, p[1], p[0])):
        g.netns = None
        g.netdevs["ip"] = (f"dgram,id=ipnet,local.type=inet,local.host=127.0.0.1,"
                           f"local.port={me},remote.type=inet,remote.host=127.0.0.1,"
                           f"remote.port={peer}")


# the run's network namespace of bridge_pair(), made once, removed at exit
_NETNS = []


def _ip(*args, check=True):
    return subprocess.run(["ip", *args], check=check, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE)


def end_bridges():
    """Remove bridge_pair()'s namespace (its bridge and taps with it)."""
    while _NETNS:
        _ip("netns", "del", _NETNS.pop(), check=False)


def bridge_pair(a, b):
    """The guests on taps of one learning Linux bridge (ageing_time 300 s,
    as a switch; the NIC and the qhca device of a guest share its one
    tap) in a network namespace made for the run, where their QEMUs run.
    A guest keeps its tap (d<id>) for its next boot in the run."""
    if not _NETNS:
        ns = f"qhca-distro-{os.getpid()}"
        _ip("netns", "del", ns, check=False)
        _ip("netns", "add", ns)
        _NETNS.append(ns)
        atexit.register(end_bridges)
        _ip("-n", ns, "link", "add", "br0", "type", "bridge", "ageing_time", "30000",
            "stp_state", "0")
        _ip("-n", ns, "link", "set", "br0", "mtu", "9000", "up")
    ns = _NETNS[0]
    for g in (a, b):
        tap = f"d{g.gid}"
        if _ip("-n", ns, "link", "show", tap, check=False).returncode != 0:
            _ip("-n", ns, "tuntap", "add", "dev", tap, "mode", "tap")
            _ip("-n", ns, "link", "set", tap, "mtu", "9000", "master", "br0", "up")
        g.netns = ns
        g.netdevs["ip"] = f"tap,id=ipnet,ifname={tap},script=no,downscript=no"


def bridge_learnt(g):
    """Has bridge_pair()'s bridge learnt guest G's MAC on its tap?"""
    if not _NETNS:
        return False
    r = subprocess.run(["bridge", "-n", _NETNS[0], "fdb", "show", "br", "br0"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                       check=False)
    return any(l.startswith(f"{mac(g.gid)} dev d{g.gid} ") and "permanent" not in l
               for l in r.stdout.splitlines())
