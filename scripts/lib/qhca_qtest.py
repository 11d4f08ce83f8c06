"""Shared parts of the test groups "qtest" and "qtest-san" (scripts/test.d/).

The qhca qtests (qtest/*.c, built by QEMU's meson: scripts/build qemu into
build/qemu with gcc, scripts/build qemu-san into build/qemu-san with clang,
ASan, UBSan and libFuzzer) are glib test programs; each runs with --tap -k
and its TAP lines become the runner's ("ok 3 /x86_64/qhca/wire/mix" is
"ok - GROUP/x86_64/qhca/wire/mix"). Also here: the captures of the wire
checked by scripts/pcap-check (qtest) and QEMU's generic-fuzz for qhca
(qtest-san).

    import qhca_qtest as q
    ok = q.build("qtest", "qemu") and q.run_qtests("qtest", q.QEMU_DIR, 600)

Lines go to stdout as scripts/test counts them (say()); what a reader needs
to see why a case failed goes to stderr. The logs are in build/test-logs/.
"""

import os
import re
import subprocess
import sys

from qhca_apt import apt_install
from qhca_guests import TOP, BUILD, log
from qhca_testgroup import read_text, say

LOGS = os.path.join(BUILD, "test-logs")
QEMU_DIR = os.path.join(BUILD, "qemu")          # gcc (scripts/build qemu)
QEMU_SAN_DIR = os.path.join(BUILD, "qemu-san")  # clang, ASan+UBSan, libFuzzer
# Debian's python3, as scripts/common.sh's PYTHON (a pyenv python3 early in
# PATH cannot import Debian's meson)
PYTHON = "/usr/bin/python3"

# glib's TAP: "ok N /x86_64/qhca/..." / "not ok N /x86_64/... # SKIP why"
TAP_CASE = re.compile(r"(ok|not ok) [0-9]+ (/[^ ]*)")
# what ASan, LSan and UBSan print when they find something
SANITIZER_REPORT = re.compile(r"ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|"
                              r"SUMMARY: [A-Za-z]+Sanitizer")


def qtests():
    """The qtest programs' names, from QEMU_QTESTS in scripts/common.sh
    (which scripts/build builds them from)."""
    r = subprocess.run(["bash", "-c", '. "$1" && printf %s "$QEMU_QTESTS"', "qtests",
                        os.path.join(TOP, "scripts", "common.sh")],
                       stdout=subprocess.PIPE, check=True)
    return r.stdout.decode().split()


def stderr_lines(lines):
    sys.stdout.flush()
    for line in lines:
        print(line, file=sys.stderr)
    sys.stderr.flush()


def tail(path, n):
    return read_text(path).splitlines()[-n:]


def build(group, target, niceness=None):
    """scripts/build TARGET, its output on stderr; on a failure "not ok -
    GROUP: build TARGET" and False."""
    cmd = [os.path.join(TOP, "scripts", "build"), target]
    if niceness is not None:
        cmd = ["nice", "-n", str(niceness)] + cmd
    sys.stdout.flush()
    r = subprocess.run(cmd, stdout=sys.stderr, check=False)
    if r.returncode != 0:
        say(f"not ok - {group}: build {target} (exit status {r.returncode})")
        return False
    return True


def run_logged(cmd, logpath, env=None):
    """CMD with its stdout and stderr in LOGPATH; its exit status as a
    shell reports it (128 + N for a death by signal N)."""
    with open(logpath, "wb") as f:
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=env,
                            check=False).returncode
    return 128 - rc if rc < 0 else rc


def case_list(program, qemu_bin):
    """The case paths PROGRAM lists (-l) against QEMU_BIN; a qos-graph
    program lists only what that QEMU's machines and devices give."""
    env = dict(os.environ, QTEST_QEMU_BINARY=qemu_bin, QTEST_QEMU_IMG="")
    r = subprocess.run([program, "-l"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                       env=env, timeout=300, check=False)
    return [l for l in r.stdout.decode(errors="replace").splitlines() if l.startswith("/")]


def same_cases(group, qemu_dir, full_dir):
    """Every qtest program of QEMU_DIR lists the same cases against its own
    QEMU as against the full one in FULL_DIR: a QEMU built with fewer
    devices (build/qemu-san) must not make a case vanish, which would not
    fail otherwise.  One "ok"/"not ok" per program; True if all agree."""
    ok = True
    for t in qtests():
        prog = os.path.join(qemu_dir, "tests", "qtest", t)
        mine = case_list(prog, os.path.join(qemu_dir, "qemu-system-x86_64"))
        full = case_list(prog, os.path.join(full_dir, "qemu-system-x86_64"))
        missing = [c for c in full if c not in mine]
        if full and not missing:
            say(f"ok - {group}/{t}: lists the same {len(mine)} cases as against the full QEMU")
        else:
            say(f"not ok - {group}/{t}: {len(missing)} of {len(full)} cases missing against "
                f"the full QEMU (a device or machine not built?): {' '.join(missing[:5])}")
            ok = False
    return ok


def run_qtests(group, qemu_dir, timeout, sanitizer=False):
    """Every qtest of QEMU_QTESTS in QEMU_DIR with --tap -k under TIMEOUT
    seconds, its log build/test-logs/NAME.tap (NAME-san.tap with
    SANITIZER), its cases as "ok - GROUP/PATH". A program that exits
    non-zero without a failed case is "not ok - GROUP/NAME: exited N"; with
    SANITIZER, a sanitizer report in the log is "not ok - GROUP/NAME:
    sanitizer report". True if all passed."""
    os.makedirs(LOGS, exist_ok=True)
    env = dict(os.environ, QTEST_QEMU_BINARY=os.path.join(qemu_dir, "qemu-system-x86_64"),
               QTEST_QEMU_IMG="")
    ok = True
    for t in qtests():
        out = os.path.join(LOGS, f"{t}-san.tap" if sanitizer else f"{t}.tap")
        log(f"running {t}" + (" (ASan, UBSan)" if sanitizer else ""))
        rc = run_logged(["timeout", str(timeout), os.path.join(qemu_dir, "tests", "qtest", t),
                         "--tap", "-k"], out, env)
        lines = read_text(out).splitlines()
        for line in lines:
            m = TAP_CASE.match(line)
            if m:
                say(f"{m.group(1)} - {group}{m.group(2)}")
        reports = [l for l in lines if SANITIZER_REPORT.search(l)]
        if sanitizer and reports:
            say(f"not ok - {group}/{t}: sanitizer report (see {out})")
            stderr_lines(reports[:5])
            ok = False
        if rc != 0:
            if not any(l.startswith("not ok ") for l in lines):
                say(f"not ok - {group}/{t}: exited {rc} (see {out})")
            stderr_lines([f"{t} exited {rc}; last lines of {out}:"] + tail(out, 20))
            ok = False
    return ok


def tshark():
    """tshark (Wireshark's dissector) for scripts/pcap-check, from Debian."""
    if apt_install("tshark"):
        return True
    say("not ok - qtest: install tshark")
    return False


def capture(program, path, name, prefix, require, one_address=None):
    """Case PATH of the qtest PROGRAM (build/qemu) with device A's wire
    recorded in build/test-logs/NAME.pcap (QHCA_QTEST_PCAP), the capture
    checked by scripts/pcap-check --require REQUIRE (opcode names), its
    lines as "ok - PREFIX: ...". With ONE_ADDRESS, every RoCEv2 frame must
    go from that IPv4 address to itself (loopback). True if all passed."""
    pcap = os.path.join(LOGS, f"{name}.pcap")
    if os.path.exists(pcap):
        os.unlink(pcap)
    env = dict(os.environ, QHCA_QTEST_PCAP=pcap,
               QTEST_QEMU_BINARY=os.path.join(QEMU_DIR, "qemu-system-x86_64"))
    test = os.path.join(QEMU_DIR, "tests", "qtest", program)
    if run_logged(["timeout", "300", test, "-p", f"/x86_64{path}"],
                  os.path.join(LOGS, f"{name}.tap"), env) != 0:
        say(f"not ok - {prefix}: {path} with a capture failed")
        return False
    sys.stdout.flush()
    r = subprocess.run([os.path.join(TOP, "scripts", "pcap-check"), "--require", ",".join(require),
                        pcap], stdout=subprocess.PIPE, check=False)
    for line in r.stdout.decode("utf-8", "replace").splitlines():
        say(re.sub(r"^((not )?ok - )", rf"\1{prefix}: ", line))
    ok = r.returncode == 0
    if one_address:
        t = subprocess.run(["tshark", "-r", pcap, "-Y", "udp.dstport==4791", "-T", "fields",
                            "-e", "ip.src", "-e", "ip.dst"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False)
        pairs = sorted(set(t.stdout.decode("utf-8", "replace").splitlines()))
        addrs = "".join(p.replace("\t", ">") + " " for p in pairs)
        if addrs == f"{one_address}>{one_address} ":
            say(f"ok - {prefix}: every frame from {one_address} to itself")
        else:
            say(f"not ok - {prefix}: addresses on the capture: {addrs}")
            ok = False
    return ok


def sanitizer_env():
    """ASAN_OPTIONS, UBSAN_OPTIONS and LSAN_OPTIONS for this process and
    its children: QHCA_ASAN_OPTIONS, QHCA_UBSAN_OPTIONS, QHCA_LSAN_OPTIONS
    or the strict defaults (any report stops the process or fails its exit
    status)."""
    for var, default in (("ASAN", "detect_leaks=1:halt_on_error=1"),
                         ("UBSAN", "halt_on_error=1:print_stacktrace=1"),
                         ("LSAN", "print_suppressions=0")):
        os.environ[f"{var}_OPTIONS"] = os.environ.get(f"QHCA_{var}_OPTIONS") or default


def generic_fuzz():
    """QEMU's generic-fuzz for qhca (scripts/fuzz qemu, build/qemu-san):
    the known crashers once, then QHCA_FUZZ_QEMU_SECONDS (default 30)
    seconds of fuzzing. True if neither found a crash."""
    fz = [PYTHON, os.path.join(TOP, "scripts", "fuzz"), "qemu"]
    secs = os.environ.get("QHCA_FUZZ_QEMU_SECONDS") or "30"
    ok = True
    rlog = os.path.join(LOGS, "fuzz-qemu-replay.log")
    rc = run_logged(fz + ["--replay"], rlog)
    if rc == 0:
        say("ok - generic-fuzz-qhca: known crashers replayed")
    else:
        stderr_lines(tail(rlog, 20))
        say(f"not ok - generic-fuzz-qhca: replay (exit {rc})")
        ok = False
    flog = os.path.join(LOGS, "fuzz-qemu.log")
    rc = run_logged(fz + ["--seconds", secs], flog)
    if rc == 0:
        speed = re.findall(r"exec/s: [0-9]*", read_text(flog))
        say(f"ok - generic-fuzz-qhca: {secs} s, no crash ({speed[-1] if speed else ''})")
    else:
        stderr_lines(tail(flog, 30))
        say(f"not ok - generic-fuzz-qhca: {secs} s (exit {rc}, log {flog})")
        ok = False
    return ok
