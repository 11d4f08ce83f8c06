"""The doc test: every command line and XML block of the user's and the
learner's pages, run as written (scripts/test.d/docs-quick, scripts/test.d/docs).

The convention (docs/testing.md, "The doc test"): in PAGES, every code
block is fenced and its info string says how it is run:

  ```sh host [full]          a shell script on the host (bash -e), in the
                             run's working directory; "full": only in the
                             full run (it needs packages, images or guests)
  ```sh host-a / host-b      the same on host A / host B (two hosts)
  ```sh guest1 [guest2...] [server]
                             a script (bash -e) in each guest's root shell,
                             with i=N set first; "server": started in the
                             background, the next block is its client, and
                             its exit status is checked after that block
  ```sh file=NAME            a file written into the working directory
  ```qemu guest1 [guest2...] [host-a|host-b]
                             a QEMU command line (bash, $i = N for each
                             guest); the guest runs until a QEMU block of a
                             later section starts or the page ends
  ```qemu probe [host-a|host-b]
                             a command line only started (-S), its devices
                             listed on the monitor and quit, in both runs
  ```monitor guest1          HMP commands on guest 1's monitor (Ctrl-A C
                             on its -serial mon:stdio)
  ```xml                     libvirt XML: parsed (xmllint) here, run by
                             the libvirt group (scripts/test.d/libvirt)
  ```text                    output or messages, never run

Any other fenced block, and any indented code block, fails the test.

Two runs:
  quick  the pages parsed; every XML block through xmllint; every "sh host"
         block not marked full run; every QEMU command line started with
         -S added, the qhca devices counted in `info pci`, the monitor
         blocks sent to it, then quit.  Guest images, kernel and packages
         are stand-ins of the same names (empty qcow2, the project's kernel
         and initramfs).  Seconds, no guest boots: in CI.
  full   the same with the real files (guestN.img: qcow2 over the stock
         Debian 12 image of scripts/build-distro; vmlinuz and initrd.img
         out of it; the packages of scripts/build-debs), every guest booted
         and every guest block run.  Minutes: on demand.

The only substitutions: -accel kvm -cpu host becomes -accel tcg -cpu
Westmere where KVM does not work (a wrapper named qemu-system-x86_64 first
in PATH, which runs build/qemu/qemu-system-x86_64); each host is a
network namespace of the run (host, host-a, host-b; A and B joined by a
veth, 192.0.2.1/24 and 192.0.2.2/24, MTU 9216).
"""

import os
import pty
import re
import shutil
import subprocess
import tempfile
import threading
import time

from qhca_guests import BUILD, IMAGE, KERNEL, QEMU_BIN, TOP, choose_accel, log, qemu_img

PAGES = ["docs/using-your-own-guest.md", "docs/qhca-device.md",
         "docs/life-of-a-work-request.md", "docs/migration.md"]
HOSTS = ("host", "host-a", "host-b")
GUEST_RE = re.compile(r"guest[0-9]+$")
PROMPT = re.compile(rb"root@debian[0-9]+:[^\n]*# ")
DISTRO_REL = os.environ.get("QHCA_DOCTEST_DEBIAN", "12")
LIBVIRT_GROUP = os.path.join(TOP, "scripts", "test.d", "libvirt")
# indented blocks of output in sections this test does not own: reported,
# not failed (they should become ```text blocks); none now
EXEMPT_SECTIONS = set()


class DocError(Exception):
    pass


class Block:
    # pylint: disable=too-many-instance-attributes
    def __init__(self, page, line, info, text, section, libvirt):
        self.page, self.line, self.info, self.text = page, line, info, text
        self.section, self.libvirt = section, libvirt
        words = info.split()
        self.lang = words[0] if words else ""
        self.words = words[1:]
        self.guests, self.host, self.flags, self.file = [], "host", set(), None

    def where(self):
        return f"{self.page}:{self.line}"

    def check(self):
        """Parse the info string; DocError if the test cannot run it."""
        lang, words = self.lang, self.words
        bad = f"{self.where()}: fenced block ```{self.info}: "
        if self.libvirt:
            # the libvirt group (scripts/test.d/libvirt) runs these
            if not os.path.exists(LIBVIRT_GROUP):
                raise DocError(bad + "in the libvirt section, and there is no libvirt group "
                               "to run it")
            if lang not in ("xml", "sh", "text"):
                raise DocError(bad + "the libvirt section has xml, sh and text blocks")
            return
        if lang == "text":
            return
        if lang == "xml":
            raise DocError(bad + "XML outside the libvirt section: nothing runs it")
        for w in words:
            if GUEST_RE.match(w):
                self.guests.append(w)
            elif w in HOSTS:
                self.host = w
            elif w.startswith("file=") and lang == "sh" and len(words) == 1:
                self.file = w[5:]
            elif (lang, w) in (("sh", "full"), ("sh", "server"), ("qemu", "probe")):
                self.flags.add(w)
            else:
                raise DocError(bad + f"unknown word '{w}' (docs/testing.md, the doc test)")
        if lang == "sh":
            if self.file:
                return
            if self.guests and ("host" in words or "host-a" in words or "host-b" in words):
                raise DocError(bad + "a host and guests")
            if "server" in self.flags and len(self.guests) != 1:
                raise DocError(bad + "a server runs in one guest")
            if "full" in self.flags and self.guests:
                raise DocError(bad + "'full' is for host blocks (guest blocks run only in the full run)")
        elif lang == "qemu":
            if bool(self.guests) == ("probe" in self.flags):
                raise DocError(bad + "name the guest(s) or say probe")
        elif lang == "monitor":
            if len(self.guests) != 1:
                raise DocError(bad + "one guest")
        else:
            raise DocError(bad + "unknown kind (sh, qemu, monitor, xml, text)")


def parse(page):
    """The fenced blocks of PAGE (a path under TOP); DocError on a block the
    test cannot run or an indented code block."""
    path = os.path.join(TOP, page)
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    blocks, errors = [], []
    section, libvirt = "", False
    fence = None
    list_indent = 0
    prev_blank = True
    for n, line in enumerate(lines, 1):
        if fence is not None:
            if line.strip() == "```" and line.startswith(" " * fence["indent"] + "```"):
                body = "\n".join(x[fence["indent"]:] if x.startswith(" " * fence["indent"])
                                 else x for x in fence["lines"])
                b = Block(page, fence["line"], fence["info"], body + "\n", section, libvirt)
                try:
                    b.check()
                    blocks.append(b)
                except DocError as e:
                    errors.append(str(e))
                fence = None
            else:
                fence["lines"].append(line)
            prev_blank = False
            continue
        if "BEGIN libvirt section" in line:
            libvirt = True
        if "END libvirt section" in line:
            libvirt = False
        m = re.match(r"^( *)```(.*)$", line)
        if m:
            fence = {"indent": len(m.group(1)), "info": m.group(2).strip(), "line": n,
                     "lines": []}
            if not fence["info"]:
                errors.append(f"{page}:{n}: fenced block without an info string")
            prev_blank = False
            continue
        if line.startswith("#"):
            section = line.lstrip("#").strip()
        if not line.strip():
            prev_blank = True
            continue
        indent = len(line) - len(line.lstrip(" "))
        if "\t" in line[:indent + 1]:
            errors.append(f"{page}:{n}: a tab in the indentation")
        lm = re.match(r"^( *)([*+-]|[0-9]+\.) +", line)
        if prev_blank and indent >= list_indent + 4 and not lm:
            if (page, section) in EXEMPT_SECTIONS:
                print(f"# {page}:{n}: indented block in section '{section}' not checked "
                      "(output; it should be a ```text block)", flush=True)
            else:
                errors.append(f"{page}:{n}: indented code block: fence it with an info "
                              "string (docs/testing.md, the doc test)")
        if lm:
            list_indent = len(lm.group(0))
        elif indent == 0:
            list_indent = 0
        prev_blank = False
    if fence is not None:
        errors.append(f"{page}:{fence['line']}: fenced block never closed")
    return blocks, errors


def parse_all(pages=None):
    blocks, errors = [], []
    for p in pages or PAGES:
        b, e = parse(p)
        blocks += b
        errors += e
    return blocks, errors


# --- running -------------------------------------------------------------------------

WRAPPER = """#!/bin/bash
# qemu-system-x86_64 for the doc test: the pinned build, with only what a
# host without KVM forces substituted (and -S added in the quick run)
args=() prev=
for a in "$@"; do
    if [ "$QHCA_DOCTEST_ACCEL" = tcg ]; then
        [ "$prev" = -accel ] && [ "$a" = kvm ] && a=tcg
        [ "$prev" = -cpu ] && [ "$a" = host ] && a=Westmere
    fi
    args+=("$a"); prev=$a
done
printf '%s' "$$" >>"$QHCA_DOCTEST_LOG"; printf ' %q' "${args[@]}" $QHCA_DOCTEST_EXTRA >>"$QHCA_DOCTEST_LOG"
echo >>"$QHCA_DOCTEST_LOG"
exec "$QHCA_DOCTEST_QEMU" "${args[@]}" $QHCA_DOCTEST_EXTRA
"""


class Console:
    """A process on a pty: a QEMU with -serial mon:stdio (serial console
    and, after Ctrl-A C, the monitor)."""

    def __init__(self, name, argv, env, cwd, logpath):
        self.name = name
        master, slave = pty.openpty()
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env,
                                     cwd=cwd, start_new_session=True)
        os.close(slave)
        self.fd = master
        self.buf = b""
        self.pos = 0
        self.cv = threading.Condition()
        self.log = open(logpath, "ab")
        self.seq = 0
        self.in_monitor = False
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        while True:
            try:
                data = os.read(self.fd, 4096)
            except OSError:
                data = b""
            if not data:
                break
            self.log.write(data)
            self.log.flush()
            with self.cv:
                self.buf += data
                self.cv.notify_all()
        with self.cv:
            self.cv.notify_all()

    def running(self):
        return self.proc.poll() is None

    def tail(self, n=3000):
        return self.buf[-n:].decode("utf-8", "replace").replace("\r", "")

    def expect(self, rx, timeout):
        rx = re.compile(rx) if isinstance(rx, bytes) else rx
        deadline = time.monotonic() + timeout
        with self.cv:
            while True:
                m = rx.search(self.buf, self.pos)
                if m:
                    self.pos = m.end()
                    return m
                left = deadline - time.monotonic()
                if left <= 0:
                    raise DocError(f"{self.name}: timed out after {timeout} s waiting for "
                                   f"{rx.pattern!r}; console:\n{self.tail()}")
                if not self.running():
                    raise DocError(f"{self.name}: QEMU exited ({self.proc.returncode}) waiting "
                                   f"for {rx.pattern!r}; console:\n{self.tail()}")
                self.cv.wait(min(left, 1.0))

    def send(self, text):
        os.write(self.fd, text.encode() if isinstance(text, str) else text)

    # -- the monitor --
    def monitor(self, cmd=None, timeout=60):
        """Switch to the monitor (and run CMD there: its output)."""
        if not self.in_monitor:
            with self.cv:
                self.pos = len(self.buf)
            # Ctrl-A C toggles; the mux starts on the serial console, but
            # should it not, the second one gets there
            for _ in range(4):
                self.send(b"\x01c")
                try:
                    self.expect(rb"\(qemu\) ", 5)
                    break
                except DocError:
                    if not self.running():
                        raise
            else:
                raise DocError(f"{self.name}: no (qemu) prompt after Ctrl-A C:\n{self.tail()}")
            self.in_monitor = True
        if cmd is None:
            return ""
        with self.cv:
            self.pos = len(self.buf)
        start = self.pos
        self.send(cmd + "\n")
        m = self.expect(rb"\r?\n(.*?)\(qemu\) ", timeout)
        out = self.buf[start:m.end()].decode("utf-8", "replace")
        out = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", out).replace("\r", "")
        return out.split("\n", 1)[1].rsplit("(qemu) ", 1)[0] if "\n" in out else ""

    def serial(self):
        if self.in_monitor:
            self.send(b"\x01c")
            self.in_monitor = False
            time.sleep(0.3)

    # -- the guest's root shell --
    def wait_shell(self, timeout=900):
        self.serial()
        self.expect(PROMPT, timeout)
        deadline = time.monotonic() + 60
        while True:
            self.seq += 1
            tok = f"QSETUP{self.seq}"
            self.send("stty -echo; dmesg -n 1; export TERM=dumb PAGER=cat SYSTEMD_PAGER= "
                      "SYSTEMD_COLORS=0 DEBIAN_FRONTEND=noninteractive; "
                      f"bind 'set enable-bracketed-paste off' 2>/dev/null; echo {tok}''OK\n")
            try:
                self.expect(f"{tok}OK".encode(), 10)
                return
            except DocError:
                if time.monotonic() > deadline:
                    raise

    def sh(self, cmd, timeout=120):
        """CMD (one line) in the guest's shell: (status, output)."""
        self.serial()
        self.seq += 1
        n = self.seq
        with self.cv:
            self.pos = len(self.buf)
        start = self.pos
        sep = " " if cmd.rstrip().endswith("&") else "; "
        self.send(f"{cmd}{sep}echo QEND{n}'-'$?'-'QEND\n")
        m = self.expect(f"QEND{n}-([0-9]+)-QEND".encode(), timeout)
        text = PROMPT.sub(b"", self.buf[start:m.start()]).decode("utf-8", "replace")
        return int(m.group(1)), text.replace("\r", "")

    def put_file(self, path, text):
        """TEXT into PATH in the guest (a quoted here-document)."""
        eof = "QHCA_DOC_EOF"
        if eof in text:
            raise DocError("here-document marker in a block")
        self.serial()
        self.seq += 1
        n = self.seq
        with self.cv:
            self.pos = len(self.buf)
        self.send(f"cat >{path} <<'{eof}'\n")
        for line in text.rstrip("\n").split("\n"):
            self.send(line + "\n")
            time.sleep(0.01)
        self.send(f"{eof}\necho QPUT{n}''OK\n")
        self.expect(f"QPUT{n}OK".encode(), 60)

    def stop(self, clean, timeout=180):
        """Power the guest off (CLEAN: systemctl poweroff in its shell,
        else the monitor's quit); kill QEMU if it is still there."""
        if self.running():
            try:
                if clean:
                    self.serial()
                    self.send("\nsync; systemctl poweroff\n")
                else:
                    self.monitor()
                    self.send("quit\n")
                deadline = time.monotonic() + timeout
                while self.running() and time.monotonic() < deadline:
                    time.sleep(0.5)
            except (DocError, OSError) as e:
                log(f"{self.name}: {e}")
        if self.running():
            try:
                os.killpg(self.proc.pid, 9)
            except OSError:
                pass
        self.proc.wait()
        self.reader.join(timeout=5)
        os.close(self.fd)
        self.log.close()
        return self.proc.returncode


class DocRun:
    """One run of the doc test over PAGES; report(ok, name, detail) per case."""

    # pylint: disable=too-many-instance-attributes
    def __init__(self, mode, run_dir, report, pages=None, top=TOP):
        self.mode = mode            # "quick" or "full"
        self.full = mode == "full"
        self.dir = run_dir
        self.work = os.path.join(run_dir, "work")
        self.report = report
        # QHCA_DOCTEST_PAGES=docs/a.md,docs/b.md: some pages only (by hand)
        self.pages = pages or [p for p in os.environ.get("QHCA_DOCTEST_PAGES", "").split(",")
                               if p] or PAGES
        self.top = top
        self.ns = {h: f"qdoc{os.getpid()}-{h}" for h in HOSTS}
        self.guests = {}            # name -> (Console, section, page)
        self.servers = []
        self.accel = choose_accel("auto")
        self.env = None
        self.ns_pages = set()

    # -- set-up --
    def _ip(self, *args):
        subprocess.run(["ip", *args], check=True, stdout=subprocess.DEVNULL)

    def setup(self):
        os.makedirs(self.work, exist_ok=True)
        for name in ("build", "scripts"):
            link = os.path.join(self.work, name)
            if not os.path.lexists(link):
                os.symlink(os.path.join(self.top, name), link)
        bindir = os.path.join(self.dir, "bin")
        os.makedirs(bindir, exist_ok=True)
        wrapper = os.path.join(bindir, "qemu-system-x86_64")
        with open(wrapper, "w", encoding="utf-8") as f:
            f.write(WRAPPER)
        os.chmod(wrapper, 0o755)
        self.env = dict(os.environ)
        self.env.update({
            "PATH": bindir + ":" + os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
            "QHCA_DOCTEST_QEMU": QEMU_BIN,
            "QHCA_DOCTEST_ACCEL": self.accel,
            "QHCA_DOCTEST_EXTRA": "" if self.full else "-S",
            "QHCA_DOCTEST_LOG": os.path.join(self.dir, "qemu-command-lines"),
        })
        for h in HOSTS:
            subprocess.run(["ip", "netns", "del", self.ns[h]], stderr=subprocess.DEVNULL,
                           check=False)
            self._ip("netns", "add", self.ns[h])
            self._ip("-n", self.ns[h], "link", "set", "lo", "up")
        a, b = self.ns["host-a"], self.ns["host-b"]
        self._ip("link", "add", "qdoc-a", "netns", a, "type", "veth", "peer", "name", "qdoc-b",
                 "netns", b)
        for ns, dev, ip in ((a, "qdoc-a", "192.0.2.1/24"), (b, "qdoc-b", "192.0.2.2/24")):
            self._ip("-n", ns, "link", "set", dev, "mtu", "9216", "up")
            self._ip("-n", ns, "addr", "add", ip, "dev", dev)
        log(f"doc test ({self.mode}): accel {self.accel}, working directory {self.work}, "
            f"hosts: network namespaces {' '.join(self.ns.values())}")

    def teardown(self):
        for name in list(self.guests):
            self._stop(name)
        for h in HOSTS:
            subprocess.run(["ip", "netns", "del", self.ns[h]], stderr=subprocess.DEVNULL,
                           check=False)

    def stand_ins(self, text):
        """The files a QEMU command line names, where the run has none."""
        w = self.work
        names = set(re.findall(r"file=([A-Za-z0-9_.-]+\.img)", text))
        names |= set(re.findall(r"-(?:kernel|initrd) +([A-Za-z0-9_.-]+)", text))
        for name in sorted(names):
            p = os.path.join(w, name)
            if os.path.exists(p):
                continue
            if re.fullmatch(r"guest[0-9]+\.img", name):
                if self.full:
                    base = os.path.join(BUILD, "distro", DISTRO_REL, "disk.img")
                    cmd = [qemu_img(), "create", "-q", "-f", "qcow2", "-b", base, "-F", "raw", p]
                else:
                    cmd = [qemu_img(), "create", "-q", "-f", "qcow2", p, "1G"]
                subprocess.run(cmd, check=True)
            elif name == "vmlinuz":
                os.symlink(os.path.join(BUILD, "distro", DISTRO_REL, "vmlinuz") if self.full
                           else KERNEL, p)
            elif name == "initrd.img":
                os.symlink(os.path.join(BUILD, "distro", DISTRO_REL, "initrd.img") if self.full
                           else IMAGE, p)
            elif not self.full:
                with open(p, "wb") as f:
                    f.truncate(32 << 20)

    def bash(self, block, host, timeout=3600):
        """A host block: bash -e in HOST's namespace; (status, output)."""
        argv = ["bash", "-e", "-c", block.text]
        if block.page in self.ns_pages:
            argv = ["ip", "netns", "exec", self.ns[host]] + argv
        try:
            r = subprocess.run(argv, cwd=self.work, env=self.env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=timeout, check=False)
            return r.returncode, r.stdout.decode("utf-8", "replace")
        except subprocess.TimeoutExpired as e:
            return 124, (e.stdout or b"").decode("utf-8", "replace") + f"\n(timed out: {timeout} s)"

    # -- blocks --
    def run_page(self, page, blocks):
        section = None
        for b in blocks:
            if b.section != section:
                section = b.section
            try:
                self.run_block(b)
            except DocError as e:
                self.report(False, f"{b.where()} ```{b.info}", str(e))
        self._collect_servers()
        for name in list(self.guests):
            self._stop(name)

    def _stop(self, name):
        con, _, _ = self.guests.pop(name)
        rc = con.stop(clean=self.full)
        log(f"{name} stopped (QEMU exit {rc})")

    def run_block(self, b):
        label = f"{b.where()} ```{b.info}"
        if b.lang == "text":
            return
        if b.libvirt and b.lang != "xml":
            return
        if b.lang == "xml":
            r = subprocess.run(["xmllint", "--noout", "-"], input=b.text.encode(),
                               capture_output=True, check=False)
            self.report(r.returncode == 0, f"{label}: XML parses (xmllint; run by the "
                        "libvirt group)", r.stderr.decode())
            return
        if b.lang == "sh" and b.file:
            with open(os.path.join(self.work, b.file), "w", encoding="utf-8") as f:
                f.write(b.text)
            os.chmod(os.path.join(self.work, b.file), 0o755)
            return
        if b.lang == "sh" and not b.guests:
            if "full" in b.flags and not self.full:
                return
            t0 = time.monotonic()
            rc, out = self.bash(b, b.host)
            self._save(b, out)
            self.report(rc == 0, f"{label}: exit {rc} ({time.monotonic() - t0:.0f} s)", out)
            return
        if b.lang == "qemu":
            self._qemu(b, label)
            return
        if b.lang == "monitor":
            self._monitor(b, label)
            return
        if b.lang == "sh":
            if self.full:
                self._guest_sh(b, label)
            return
        raise DocError(f"{label}: not runnable")

    def _save(self, b, out):
        name = re.sub(r"[^A-Za-z0-9]+", "-", f"{os.path.basename(b.page)}-{b.line}")
        with open(os.path.join(self.dir, f"{name}.out"), "w", encoding="utf-8") as f:
            f.write(out)

    def _qemu(self, b, label):
        # the guests of an earlier section stop first
        self._collect_servers()
        for name, (_, section, page) in list(self.guests.items()):
            if section != b.section or page != b.page:
                self._stop(name)
        names = b.guests or ["probe"]
        for name in names:
            if name in self.guests:
                self._stop(name)
            m = re.search(r"[0-9]+$", name)
            i = m.group(0) if m else "1"
            self.stand_ins(re.sub(r"\$\{?i\}?", i, b.text))
            argv = ["ip", "netns", "exec", self.ns[b.host], "bash", "-c",
                    f"i={i}\n" + b.text]
            tag = f"{name}-{os.path.basename(b.page)}-{b.line}"
            con = Console(name, argv, self.env, self.work, os.path.join(self.dir, f"{tag}.console"))
            t0 = time.monotonic()
            try:
                con.monitor()
                pci = con.monitor("info pci")
                n = pci.count("1af4:10f0")
                if "probe" in b.flags:
                    qtree = con.monitor("info qtree")
                    self.report(n >= 1, f"{label}: QEMU starts, info pci lists {n} qhca",
                                pci + qtree[-2000:])
                    con.stop(clean=False)
                    continue
                if self.full:
                    con.serial()
                    con.wait_shell()
                    self.report(True, f"{label} ({name}): started, {n} qhca in info pci, root "
                                      f"shell after {time.monotonic() - t0:.0f} s")
                else:
                    self.report(True, f"{label} ({name}): starts (-S), {n} qhca in info pci")
                self.guests[name] = (con, b.section, b.page)
            except DocError as e:
                con.stop(clean=False)
                self.report(False, f"{label} ({name}): QEMU as written", str(e))

    def _monitor(self, b, label):
        name = b.guests[0]
        if name not in self.guests:
            raise DocError(f"{label}: {name} is not running")
        con = self.guests[name][0]
        outs, ok = [], True
        for line in b.text.splitlines():
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            out = con.monitor(line.strip())
            outs.append(f"(qemu) {line.strip()}\n{out}")
            if re.search(r"^Error|error:", out, re.M | re.I):
                ok = False
        con.serial()
        if self.full:
            time.sleep(2)
        self.report(ok, f"{label}: the monitor took every command", "\n".join(outs))

    def _guest_sh(self, b, label):
        for name in b.guests:
            if name not in self.guests:
                raise DocError(f"{label}: {name} is not running")
        srv = "server" in b.flags
        threads, res = [], {}

        def one(name):
            con = self.guests[name][0]
            i = re.search(r"[0-9]+$", name).group(0)
            path = f"/tmp/doc-{b.line}.sh"
            try:
                con.put_file(path, f"i={i}\n" + b.text)
                if srv:
                    con.sh(f"rm -f {path}.rc; ss -ltnH > {path}.before; "
                           f"rdma res show cm_id 2>/dev/null | grep -c LISTEN >> {path}.before")
                    con.sh(f"(timeout 600 bash -e {path} >{path}.out 2>&1; echo $? >{path}.rc) &")
                    rc, out = con.sh(
                        f"for t in $(seq 120); do {{ ss -ltnH; rdma res show cm_id 2>/dev/null "
                        f"| grep -c LISTEN; }} | cmp -s - {path}.before || break; "
                        f"[ -f {path}.rc ] && break; sleep 0.5; done; [ ! -f {path}.rc ]",
                        timeout=200)
                    res[name] = (rc, "server listening" if rc == 0 else out)
                    self.servers.append((b, name, path, label))
                else:
                    res[name] = con.sh(f"timeout 3000 bash -e {path} 2>&1", timeout=3100)
            except DocError as e:
                res[name] = (-1, str(e))
        for name in b.guests:
            t = threading.Thread(target=one, args=(name,))
            t.start()
            threads.append(t)
        t0 = time.monotonic()
        for t in threads:
            t.join()
        for name in b.guests:
            rc, out = res[name]
            self._save(b, out)
            what = "listening (server)" if srv else f"exit {rc}"
            self.report(rc == 0, f"{label} in {name}: {what} ({time.monotonic() - t0:.0f} s)",
                        out)
        if not srv:
            self._collect_servers()

    def _collect_servers(self):
        """The servers' exit statuses (after their client block)."""
        for b, name, path, label in self.servers:
            if name not in self.guests:
                self.report(False, f"{label} in {name}: guest gone before the server ended")
                continue
            con = self.guests[name][0]
            try:
                con.sh(f"for t in $(seq 240); do [ -f {path}.rc ] && break; sleep 0.5; done",
                       timeout=200)
                _, out = con.sh(f"cat {path}.out; echo SERVER-RC=$(cat {path}.rc 2>/dev/null)")
            except DocError as e:
                out = str(e)
            m = re.search(r"SERVER-RC=([0-9]+)", out)
            rc = int(m.group(1)) if m else -1
            self._save(b, out)
            self.report(rc == 0, f"{label} in {name}: server exit {rc}", out)
        self.servers = []

    def run(self):
        blocks, errors = parse_all(self.pages)
        for e in errors:
            self.report(False, f"convention: {e}")
        counts = {}
        for b in blocks:
            counts[b.lang] = counts.get(b.lang, 0) + 1
        self.report(not errors, f"every code block of {len(self.pages)} pages fenced with a "
                                f"known info string ({len(blocks)} blocks: "
                                + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) + ")")
        # the hosts of a page with QEMU command lines are network
        # namespaces of the run; the launcher's commands (the learner's
        # pages) run on the machine itself, as they are written for
        self.ns_pages = {b.page for b in blocks if b.lang == "qemu"}
        self.setup()
        try:
            for page in self.pages:
                t0 = time.monotonic()
                self.run_page(page, [b for b in blocks if b.page == page])
                print(f"# {page}: {time.monotonic() - t0:.0f} s", flush=True)
        finally:
            self.teardown()
