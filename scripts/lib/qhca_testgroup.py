"""Shared parts of the test groups in scripts/test.d/ that boot guests.

A group prints one line per case, "ok - NAME" or "not ok - NAME", with
"# " diagnostics; scripts/test counts the lines. The guests' own run
scripts print the same lines (scripts/guest/lib.sh); relay() passes them
on with the group's prefix.
"""

import os
import re
import time

from qhca_guests import TOP, BUILD, log
from qhca_progress import run_logged

GUEST = os.path.join(TOP, "scripts", "guest")
# console lines worth showing when a guest did not finish its checks
TROUBLE = r"Kernel panic|BUG:|Oops|qhca-init:|timed out|RIP:|Call Trace"


def say(line):
    print(line, flush=True)


def run_dir(name):
    """A new run directory build/runs/NAME-test-STAMP-PID."""
    d = os.path.join(BUILD, "runs", f"{name}-test-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}")
    os.makedirs(d, exist_ok=True)
    return d


def build(group, targets, rundir):
    """scripts/build TARGET for each target (log in RUNDIR/build-TARGET.log);
    on a failure "not ok - GROUP: build TARGET" with the log's tail, False.
    QHCA_GUEST_NO_BUILD=1 skips it (boot what is in build/). A progress
    line every 30 s on stderr while it runs (qhca_progress)."""
    if os.environ.get("QHCA_GUEST_NO_BUILD"):
        for t in targets:
            open(os.path.join(rundir, f"build-{t}.log"), "w", encoding="utf-8").close()
        return True
    for t in targets:
        blog = os.path.join(rundir, f"build-{t}.log")
        log(f"scripts/build {t} (log: {blog})")
        if run_logged(["nice", os.path.join(TOP, "scripts", "build"), t], blog,
                      f"scripts/build {t}") != 0:
            say(f"not ok - {group}: build {t}")
            for line in read_text(blog).splitlines()[-20:]:
                say(f"# {line}")
            say(f"# full log: {blog}")
            return False
    return True


def read_text(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace").replace("\r", "")
    except OSError:
        return ""


def relay(text, prefix, diagnostics=True):
    """Print the ok/not ok lines of TEXT (a run script's output) as
    "ok - PREFIXNAME", and its "# " lines as "#   PREFIX..." (with
    DIAGNOSTICS). Returns (all ok, the "# " lines)."""
    ok, notes = True, []
    for line in text.splitlines():
        if line.startswith("ok - "):
            say(f"ok - {prefix}{line[5:]}")
        elif line.startswith("not ok - "):
            say(f"not ok - {prefix}{line[9:]}")
            ok = False
        elif line.startswith("# "):
            notes.append(line)
            if diagnostics:
                say(f"#   {prefix}{line[2:]}")
    return ok, notes


def trouble(logpath, limit=10):
    """The console lines of a guest that say why it stopped."""
    return [l for l in read_text(logpath).splitlines() if re.search(TROUBLE, l)][:limit]


def unfinished(run, i, name, why=None):
    """"not ok - NAME" for guest I that did not finish, with why and what
    its console says."""
    say(f"not ok - {name}")
    say(f"#   {why or run.status.get(i, 'no status')}; log {run.dir}/guest{i}.log")
    for line in trouble(os.path.join(run.dir, f"guest{i}.log")):
        say(f"#   {line}")
