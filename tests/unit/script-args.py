#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
# Copyright (c) 2026 The qhca authors
"""The host scripts' command lines and host checks (issue 23, the traps):

  script-args.py TOP

Copies TOP/scripts into a temporary tree with a build/ holding a package
and a marker, and a PATH whose apt-get, sudo, ninja, make, ... only write
down that they ran. Then, for every user entry point under scripts/:

  --help                 exit 0, the usage (the script's name) on stdout
  --no-such-option       exit 2, a message on stderr
  an unknown target      exit 2 (scripts/build-debs dkmss, scripts/test
                         unitt, ...), a message on stderr

and after each run build/ must be as before (every path, size and mtime:
nothing made, changed or deleted) and none of the fake tools ran.

Then the host checks of scripts/common.sh and scripts/lib/qhca_apt.py
with fake os-release files (QHCA_OS_RELEASE, QHCA_DEBIAN_VERSION):
Fedora, Ubuntu and a Debian without /etc/debian_version are not Debian
hosts, Debian 12 and 13 are, Debian 11 and unstable are not releases to
add sources on; and apt_install of a missing package on a Fedora host
fails naming the package and QHCA_NO_APT without running apt or sudo.

TAP on stdout, one case per check ("ok N /script-args/NAME").
"""

import os
import shutil
import subprocess
import sys
import tempfile

# script: (unknown target argument or None); every user entry point
ENTRY = {
    "build": "dkmss",
    "build-debs": "dkmss",
    "build-distro": "14",
    "build-docs": "svgs",
    "build-driver": "qhca",
    "build-image": "apps",
    "build-rdma-core": "all",
    "build-userlib": "all",
    "checkpatch-driver": "no-such-file.c",
    "fetch": "kernell",
    "test": "unitt",
    "fuzz": "hostt",
    "demo": "rping",
    "launch": "guests",
    "bench": "ib_write_bw",
    "pcap-check": "no-such-capture.pcap",
}
# entry points checked the same way when the tree has them (being added)
OPTIONAL = {
    "qemu-compat-check": "no-such-target",
    "build-qemu-debs": "no-such-target",
}
FAKE_TOOLS = ["apt-get", "apt-cache", "apt", "sudo", "ninja", "make", "cmake", "meson",
              "mmdebstrap", "dpkg-source", "dpkg-deb", "qemu-system-x86_64", "mscgen", "dot",
              "clang-14", "tshark", "perl"]

results = []


def case(ok, name, diag=""):
    results.append((ok, name, diag))


def snapshot(root):
    """Every path under ROOT with its type, size and mtime."""
    out = {}
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            p = os.path.join(d, n)
            st = os.lstat(p)
            out[os.path.relpath(p, root)] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return out


def diff(before, after):
    changed = [p for p in sorted(set(before) | set(after)) if before.get(p) != after.get(p)]
    return ", ".join(changed[:8]) + (" ..." if len(changed) > 8 else "")


class Tree:
    def __init__(self, top):
        self.dir = tempfile.mkdtemp(prefix="qhca-script-args-")
        shutil.copytree(os.path.join(top, "scripts"), os.path.join(self.dir, "scripts"),
                        symlinks=True)
        self.build = os.path.join(self.dir, "build")
        os.makedirs(os.path.join(self.build, "packages"))
        for f in ("packages/qhca-dkms_0.1.0_all.deb", "packages/libqhca_0.1.0+rdma56_amd64.deb",
                  "marker"):
            with open(os.path.join(self.build, f), "w", encoding="utf-8") as fh:
                fh.write("keep me\n")
        self.calls = os.path.join(self.dir, "fake-calls")
        fake = os.path.join(self.dir, "fakebin")
        os.makedirs(fake)
        for t in FAKE_TOOLS:
            p = os.path.join(fake, t)
            with open(p, "w", encoding="utf-8") as fh:
                fh.write(f'#!/bin/sh\necho "{t} $*" >>{self.calls}\nexit 1\n')
            os.chmod(p, 0o755)
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith("QHCA_") and k not in ("MESON_TEST_ITERATION",)}
        self.env["PATH"] = fake + ":" + os.environ.get("PATH", "/usr/bin:/bin")
        # a version without git (the copy is no repository), so that a
        # script that goes past its arguments gets as far as it can
        self.env["QHCA_DEB_VERSION"] = "0.1.0~test"

    def run(self, args, env=None, timeout=60):
        e = dict(self.env)
        e.update(env or {})
        try:
            return subprocess.run(args, cwd=self.dir, env=e, capture_output=True, text=True,
                                  timeout=timeout, check=False)
        except subprocess.TimeoutExpired as ex:
            return subprocess.CompletedProcess(args, 124, ex.stdout or "", "timed out")

    def fake_calls(self):
        try:
            with open(self.calls, encoding="utf-8") as f:
                return f.read().strip()
        except OSError:
            return ""

    def clear_calls(self):
        if os.path.exists(self.calls):
            os.unlink(self.calls)


def check_script(t, name, bad_target):
    script = os.path.join(t.dir, "scripts", name)
    runs = [("help", ["--help"]), ("unknown-option", ["--no-such-option"])]
    if bad_target:
        runs.append(("unknown-target", [bad_target]))
    for what, args in runs:
        before = snapshot(t.build)
        t.clear_calls()
        r = t.run([script] + args)
        after = snapshot(t.build)
        calls = t.fake_calls()
        cmd = f"scripts/{name} {' '.join(args)}"
        diag = (f"{cmd}: exit {r.returncode}\nstdout: {r.stdout[-600:]}\n"
                f"stderr: {r.stderr[-600:]}")
        if what == "help":
            case(r.returncode == 0 and name in r.stdout,
                 f"/script-args/{name}/help", diag)
        else:
            case(r.returncode == 2 and r.stderr.strip() != "",
                 f"/script-args/{name}/{what}", diag)
        case(before == after and not calls, f"/script-args/{name}/{what}-changes-nothing",
             f"{cmd}: changed in build/: {diff(before, after) or 'nothing'}; "
             f"ran: {calls or 'nothing'}")


def os_release(t, name, text, debian_version=True):
    """A fake os-release file and the env naming it (and a debian_version
    file, or a path where there is none)."""
    p = os.path.join(t.dir, f"os-release-{name}")
    with open(p, "w", encoding="utf-8") as f:
        f.write(text)
    dv = os.path.join(t.dir, f"debian_version-{name}")
    if debian_version:
        with open(dv, "w", encoding="utf-8") as f:
            f.write("12.8\n")
    return {"QHCA_OS_RELEASE": p, "QHCA_DEBIAN_VERSION": dv,
            "QHCA_BUILD": os.path.join(t.dir, "build-hostcheck")}


HOSTS = {
    # name: (os-release, has /etc/debian_version, a Debian host?, a release to add sources on?)
    "fedora": ('NAME="Fedora Linux"\nID=fedora\nVERSION_ID=41\n', False, False, None),
    "ubuntu": ('NAME="Ubuntu"\nID=ubuntu\nID_LIKE=debian\nVERSION_ID="24.04"\n', True, False,
               None),
    "debian-no-version-file": ('ID=debian\nVERSION_ID="12"\n', False, False, None),
    "debian12": ('PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\nVERSION_ID="12"\n',
                 True, True, True),
    "debian13": ("ID=debian\nVERSION_ID='13'\n", True, True, True),
    "debian11": ('ID=debian\nVERSION_ID="11"\n', True, True, False),
    "debian-sid": ('PRETTY_NAME="Debian GNU/Linux forky/sid"\nID=debian\n', True, True, False),
}


def check_hosts(t):
    common = os.path.join(t.dir, "scripts", "common.sh")
    lib = os.path.join(t.dir, "scripts", "lib")
    for name, (text, has_dv, debian, release_ok) in HOSTS.items():
        env = os_release(t, name, text, has_dv)
        r = t.run(["bash", "-c", f'. "{common}"; echo "HOST[$(host_problem)]"; '
                   'echo "RELEASE[$(release_problem)]"'], env)
        py = t.run([sys.executable, "-c",
                    f"import sys; sys.path.insert(0, {lib!r}); import qhca_apt as a; "
                    "print(f'HOST[{a.host_problem()}]'); "
                    "print(f'RELEASE[{a.release_problem()}]')"], env)
        for lang, res in (("bash", r), ("python", py)):
            host_ok = "HOST[]" in res.stdout
            case(res.returncode == 0 and host_ok == debian,
                 f"/script-args/host-check/{lang}/{name}-{'is' if debian else 'is-not'}-debian",
                 f"exit {res.returncode}: {res.stdout} {res.stderr}")
            if release_ok is not None:
                rel = "RELEASE[]" in res.stdout
                case(res.returncode == 0 and rel == release_ok,
                     f"/script-args/host-check/{lang}/{name}-sources-"
                     f"{'added' if release_ok else 'refused'}",
                     f"exit {res.returncode}: {res.stdout} {res.stderr}")
    # the whole apt_install on a Fedora host: a message, no apt, no sudo
    env = os_release(t, "fedora", HOSTS["fedora"][0], False)
    pkg = "qhca-no-such-package"
    for lang, args in (
            ("bash", ["bash", "-c", f'. "{common}"; apt_install {pkg} meson/bookworm-backports; '
                      'echo "returned $?"']),
            ("python", [sys.executable, "-c",
                        f"import sys; sys.path.insert(0, {lib!r}); import qhca_apt as a; "
                        f"sys.exit(0 if a.apt_install({pkg!r}) else 1)"])):
        t.clear_calls()
        r = t.run(args, env)
        calls = t.fake_calls()
        case(r.returncode != 0 and "returned" not in r.stdout and pkg in r.stderr
             and "QHCA_NO_APT=1" in r.stderr and "docs/building.md" in r.stderr and not calls,
             f"/script-args/host-check/{lang}/fedora-apt-install-refused",
             f"exit {r.returncode}: stdout {r.stdout} stderr {r.stderr} ran: {calls or 'nothing'}")
    # QHCA_NO_APT=1: nothing installed, no check, success
    env["QHCA_NO_APT"] = "1"
    t.clear_calls()
    r = t.run(["bash", "-c", f'. "{common}"; apt_install {pkg} && echo installed-by-hand'], env)
    case(r.returncode == 0 and "installed-by-hand" in r.stdout and not t.fake_calls(),
         "/script-args/host-check/bash/no-apt-trusts-the-user",
         f"exit {r.returncode}: {r.stdout} {r.stderr}")


def main():
    top = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                          os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    t = Tree(top)
    try:
        for name, bad in {**ENTRY, **OPTIONAL}.items():
            if not os.access(os.path.join(t.dir, "scripts", name), os.X_OK):
                if name in ENTRY:
                    case(False, f"/script-args/{name}/exists", "not an executable script")
                continue
            check_script(t, name, bad)
        # every executable file directly under scripts/ is an entry point above
        for n in sorted(os.listdir(os.path.join(top, "scripts"))):
            p = os.path.join(top, "scripts", n)
            if os.path.isfile(p) and os.access(p, os.X_OK) and n not in ENTRY \
                    and n not in OPTIONAL:
                case(False, f"/script-args/{n}/checked", "a script this test does not know")
        check_hosts(t)
    finally:
        shutil.rmtree(t.dir, ignore_errors=True)
    print(f"1..{len(results)}")
    for i, (ok, name, diag) in enumerate(results, 1):
        print(f"{'ok' if ok else 'not ok'} {i} {name}")
        if not ok:
            for line in diag.splitlines():
                print(f"# {line}")
    return 0 if all(ok for ok, _, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
