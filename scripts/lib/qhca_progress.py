"""Progress of a long step whose output goes to a log.

    from qhca_progress import run_logged, ticker
    rc = run_logged(["scripts/build", "all"], "build/runs/x/build.log",
                    "build", prefix="demo")
    with ticker("guests", "build/runs/x/launch.log", prefix="demo"):
        ...  # a long step in this process that writes that log

runs the command with its stdout and stderr in the log and, every
QHCA_PROGRESS_SECONDS (default 30) while it runs, prints one line on stderr:

    [demo] build: 3m20s, log build/runs/x/build.log, now: [build] qemu: compiling, 812/1703 steps

"now:" is the newest progress line of the log (a line of a qhca script,
"[NAME] ..."), and when there is none since, the newest ninja step
"[N/M]" as "N/M steps". Only the Python 3 standard library is used.
"""

import contextlib
import os
import re
import subprocess
import sys
import threading
import time

# "[build] ...", "[build-debs] ...": the scripts' own log lines
SCRIPT_LINE = re.compile(rb"^\[([a-z][-a-z0-9._]*)\] (.*)$")
NINJA_STEP = re.compile(rb"^\[(\d+)/(\d+)\] ")


def interval():
    """Seconds between progress lines (QHCA_PROGRESS_SECONDS, default 30)."""
    try:
        return max(1.0, float(os.environ.get("QHCA_PROGRESS_SECONDS", "30")))
    except ValueError:
        return 30.0


def duration(seconds):
    """3m20s, 45s, 1h02m."""
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def log_state(path, tail_bytes=65536):
    """What the end of the log says: the newest script line and the
    newest ninja step after it ("" where there is none)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - tail_bytes))
            data = f.read()
    except OSError:
        return "", ""
    stage = steps = ""
    for line in reversed(data.replace(b"\r", b"\n").split(b"\n")):
        if not steps and not stage:
            m = NINJA_STEP.match(line)
            if m:
                steps = f"{int(m.group(1))}/{int(m.group(2))} steps"
                continue
        m = SCRIPT_LINE.match(line)
        if m:
            stage = line.decode("utf-8", "replace")
            break
    return stage[:200], steps


def progress_line(label, started, path):
    stage, steps = log_state(path)
    now = ", ".join(x for x in (stage, steps) if x)
    return (f"{label}: {duration(time.monotonic() - started)}, log {path}"
            + (f", now: {now}" if now else ""))


def run_logged(cmd, path, label, prefix=None, every=None, **kw):
    """Run CMD with its output in PATH (appended to when append=True in
    KW), printing a progress line every EVERY seconds; its exit status."""
    prefix = prefix or os.path.basename(sys.argv[0])
    every = every or interval()
    mode = "ab" if kw.pop("append", False) else "wb"
    started = time.monotonic()
    with open(path, mode) as f:
        p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, **kw)
        due = started + every
        while True:
            try:
                return p.wait(timeout=max(0.1, due - time.monotonic()))
            except subprocess.TimeoutExpired:
                print(f"[{prefix}] {progress_line(label, started, path)}",
                      file=sys.stderr, flush=True)
                due += every
            except KeyboardInterrupt:
                p.terminate()
                p.wait()
                raise


@contextlib.contextmanager
def ticker(label, path, prefix=None, every=None):
    """The same progress line for a step run in this process (one that
    writes PATH), from a thread, while the with block runs."""
    prefix = prefix or os.path.basename(sys.argv[0])
    every = every or interval()
    started = time.monotonic()
    done = threading.Event()

    def tick():
        while not done.wait(every):
            print(f"[{prefix}] {progress_line(label, started, path)}",
                  file=sys.__stderr__, flush=True)

    t = threading.Thread(target=tick, daemon=True)
    t.start()
    try:
        yield
    finally:
        done.set()
        t.join()
