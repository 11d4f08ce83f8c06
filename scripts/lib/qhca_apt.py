"""Debian packages for the host-side Python scripts: apt_install() as
scripts/common.sh's apt_install, for the scripts that are not bash.

    from qhca_apt import apt_install
    if not apt_install("tshark", "meson/bookworm-backports"):
        ...

Both install only what dpkg does not have ("ok installed"), add the same
apt source file (/etc/apt/sources.list.d/qhca.sources) on the Debian mirror
this machine's apt is configured for, share the once-a-day `apt-get update`
stamp (build/.apt-updated) and run the same `apt-get install`; one may
follow the other. Only the Python 3 standard library is used.

Both refuse to install anything, or to add sources to apt, on a host that
is not Debian (host_problem(): no /etc/debian_version, no apt-get, or ID
in /etc/os-release not debian): the error names the packages to install
by hand (docs/building.md, "Other hosts") and QHCA_NO_APT=1 makes them
trust that the packages are there. On a Debian release other than 12 and
13 the sources are not added unless QHCA_ANY_DEBIAN=1 (release_problem()).
QHCA_OS_RELEASE and QHCA_DEBIAN_VERSION name other files than
/etc/os-release and /etc/debian_version (for the tests).
"""

import os
import re
import shutil
import subprocess
import sys
import time

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("QHCA_BUILD", os.path.join(TOP, "build"))
APT_UPDATED = os.path.join(BUILD, ".apt-updated")
SOURCES = "/etc/apt/sources.list.d/qhca.sources"
# the suites whose "main" index names the Debian mirror (debian_mirror())
DEBIAN_SUITE = re.compile(r"(bullseye|bookworm|trixie|forky|sid|oldstable|stable|testing|unstable)"
                          r"(-updates|-backports)?")


def log(msg):
    print(f"[{os.path.basename(sys.argv[0])}] {msg}", file=sys.stderr, flush=True)


def as_root(cmd, **kw):
    """Run CMD (a list) as root: directly when we are, else with sudo."""
    return subprocess.run(cmd if os.geteuid() == 0 else ["sudo"] + cmd, check=False, **kw)


def os_release():
    """The fields of the os-release file (QHCA_OS_RELEASE, default
    /etc/os-release), unquoted; {} when there is none."""
    fields = {}
    try:
        with open(os.environ.get("QHCA_OS_RELEASE", "/etc/os-release"), encoding="utf-8",
                  errors="replace") as f:
            for line in f:
                k, sep, v = line.strip().partition("=")
                if sep and k not in fields:
                    fields[k] = v.strip("\"'")
    except OSError:
        pass
    return fields


def host_problem():
    """Why this is not a Debian host apt can install on (one line); "" when
    it is one."""
    osr = os.environ.get("QHCA_OS_RELEASE", "/etc/os-release")
    dv = os.environ.get("QHCA_DEBIAN_VERSION", "/etc/debian_version")
    dist = os_release().get("ID", "")
    if not os.path.isfile(dv):
        return f"not a Debian host (no {dv}; ID={dist or 'unknown'} in {osr})"
    if not shutil.which("apt-get"):
        return "no apt-get on this host"
    if dist != "debian":
        return f"not Debian but {dist or 'an unknown distribution'} (ID={dist or 'unset'} in {osr})"
    return ""


def release_problem():
    """A Debian release other than 12 and 13 (one line); "" for those or
    with QHCA_ANY_DEBIAN=1."""
    v = os_release().get("VERSION_ID", "")
    if v in ("12", "13") or os.environ.get("QHCA_ANY_DEBIAN") == "1":
        return ""
    return (f"Debian {v or 'without a VERSION_ID (testing or unstable)'} is not Debian 12 "
            "or 13, the releases the scripts are tested on")


def no_apt_hint(pkgs):
    """What to do instead of apt."""
    return ("install these by hand (Debian package names; the Fedora and Ubuntu ones are in "
            f"docs/building.md, \"Other hosts\"): {' '.join(p.split('/')[0] for p in pkgs)}; "
            "then run again with QHCA_NO_APT=1 (nothing is installed then; the scripts trust "
            "that the packages are there). Only Debian 12 and 13 hosts are tested")


def installed(name):
    """Is Debian package NAME installed (dpkg's "ok installed")?"""
    r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", name], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, check=False)
    return r.returncode == 0 and b"ok installed" in r.stdout


def apt_repo(suite_matches):
    """The repository URI of this machine's first apt index of component
    "main" whose suite SUITE_MATCHES(suite) accepts (apt-get indextargets),
    without a trailing slash; "" when there is none."""
    r = subprocess.run(["apt-get", "indextargets", "--format",
                        "$(REPO_URI) $(RELEASE) $(COMPONENT)"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False)
    for line in r.stdout.decode("utf-8", "replace").splitlines():
        f = line.split()
        if len(f) >= 3 and f[2] == "main" and suite_matches(f[1]):
            return f[0].rstrip("/")
    return ""


def debian_mirror():
    """The Debian mirror this machine's apt uses (the repository of its
    first Debian "main" index), e.g. http://deb.debian.org/debian, without
    a trailing slash. QHCA_DEBIAN_MIRROR overrides; deb.debian.org when apt
    names no Debian repository."""
    m = os.environ.get("QHCA_DEBIAN_MIRROR", "") or apt_repo(DEBIAN_SUITE.fullmatch)
    return (m or "http://deb.debian.org/debian").rstrip("/")


def debian_security_mirror():
    """The Debian security archive this machine's apt uses (the repository
    of its first "SUITE-security main" index), without a trailing slash.
    QHCA_DEBIAN_SECURITY_MIRROR overrides; deb.debian.org's debian-security
    when apt names none."""
    m = (os.environ.get("QHCA_DEBIAN_SECURITY_MIRROR", "") or
         apt_repo(lambda suite: suite.endswith("-security")))
    return (m or "http://deb.debian.org/debian-security").rstrip("/")


def apt_sources():
    """Add the apt sources the scripts need (deb-src bookworm and trixie,
    deb/deb-src bookworm-backports) once, then `apt-get update` when the
    last one is a day old. Says what it adds; False if a step failed
    (or the host is not Debian 12 or 13: nothing is added then)."""
    why = host_problem()
    if why:
        log(f"error: {why}: the scripts fetch the pinned sources with Debian's apt (bookworm "
            "and trixie deb-src) and add nothing to this host's apt. Use a Debian 12 or 13 "
            "host, container or VM (docs/building.md, \"Other hosts\")")
        return False
    if not os.path.isfile(SOURCES):
        why = release_problem()
        if why:
            log(f"error: {why}: not adding Debian's bookworm, trixie and bookworm-backports "
                f"sources to {SOURCES} (QHCA_ANY_DEBIAN=1 adds them anyway)")
            return False
        mirror = debian_mirror()
        log(f"adding {SOURCES}: deb-src bookworm and trixie (QEMU 10.0 and rdma-core 56.1 "
            "sources), deb/deb-src bookworm-backports (meson >= 1.5, python3-pycotap, "
            "6.12 kernels)")
        text = f"""# Added by qhca scripts/common.sh
Types: deb-src
URIs: {mirror}
Suites: bookworm trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb deb-src
URIs: {mirror}
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"""
        if as_root(["tee", SOURCES], input=text.encode(), stdout=subprocess.DEVNULL).returncode:
            return False
        if os.path.exists(APT_UPDATED):
            os.unlink(APT_UPDATED)
    if not os.path.exists(APT_UPDATED) or time.time() - os.path.getmtime(APT_UPDATED) > 86400:
        log("apt-get update")
        if as_root(["apt-get", "update", "-qq"]).returncode:
            return False
        os.makedirs(BUILD, exist_ok=True)
        with open(APT_UPDATED, "a", encoding="utf-8"):
            os.utime(APT_UPDATED)
    return True


def apt_install(*pkgs):
    """Install the packages that are missing (each PKG or PKG/SUITE, as
    apt-get takes them). True when all are installed after it."""
    if os.environ.get("QHCA_NO_APT") == "1":
        return True
    missing = [p for p in pkgs if not installed(p.split("/")[0])]
    if not missing:
        return True
    why = host_problem()
    if why:
        log(f"error: {why}: not installing anything. Missing: "
            f"{' '.join(p.split('/')[0] for p in missing)}; {no_apt_hint(missing)}")
        return False
    if not apt_sources():
        return False
    log(f"installing: {' '.join(missing)}")
    r = as_root(["env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y", "-qq",
                 "--no-install-recommends"] + missing, stdout=subprocess.DEVNULL)
    return r.returncode == 0
