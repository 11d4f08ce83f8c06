#!/usr/bin/python3
"""Throughput against loss and against round trip on the fabric, side by side.

  tests/bench/fabric-sweep.py [--loss LIST] [--rtt LIST] [--transports LIST]
                              [--runs N] [--size BYTES] [--dir DIR]

One run of this script runs scripts/bench --fabric once per point of each
sweep (docs/fabric.md; issue 25, item 5): --loss (percent of what each host
sends lost, default 0,1,5,20) and --rtt (milliseconds of round trip, half
of it on each host's link, default 0.1,1,5,20), each with the transports
of --transports (default qhca,tcp,rxe: perftest ib_write_bw of --size
bytes, one QP, between two qhca guests, TCP's stream between the same
guests (qperf), and perftest between two Soft-RoCE guests). Every figure
is the median of --runs runs (scripts/bench). It writes DIR/sweep.csv (one
row per point and transport: median, the runs' least and most) and
DIR/sweep.png (throughput against loss, against round trip), and prints
the table. Nothing is asserted: it measures.

Under TCG on two host cores each guest's vCPU takes most of a core: the
figures are TCG's as much as the transports' (docs/performance.md says
how much). An empty list (--loss '' or --rtt '') leaves that sweep out.
"""

import argparse
import csv
import os
import subprocess
import sys
import time

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(TOP, "scripts", "bench")


def floats(s):
    """A comma-separated list of numbers ('' is none)."""
    try:
        return [float(x) for x in s.split(",") if x.strip()]
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"not a list of numbers: {s!r}") from e


def spec_of(sweep, v):
    """The fabric of one point."""
    if sweep == "loss":
        return "lan" if v == 0 else f"loss={v:g}%"
    return f"delay={v * 500:g}us"          # each way: half the round trip


def run_point(a, d, sweep, v, first):
    """scripts/bench on one point; its results.csv rows we keep."""
    sub = os.path.join(d, f"{sweep}-{v:g}")
    cmd = [BENCH, "--fabric", spec_of(sweep, v), "--transports", a.transports,
           "--tests", "ib_write_bw", "--sizes", str(a.size), "--runs", str(a.runs),
           "--dir", sub]
    if not first:
        cmd.append("--no-build")
    print(f"[fabric-sweep] {sweep} {v:g}: {' '.join(cmd[1:])}", flush=True)
    with open(os.path.join(d, f"{sweep}-{v:g}.log"), "w", encoding="utf-8") as f:
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, check=False).returncode
    rows = []
    try:
        with open(os.path.join(sub, "results.csv"), encoding="utf-8") as f:
            for r in csv.DictReader(f):
                if r["test"] in ("ib_write_bw", "tcp_bw") and r["size"] == str(a.size):
                    rows.append({"sweep": sweep, "point": f"{v:g}", "fabric": spec_of(sweep, v),
                                 "transport": r["transport"], "test": r["test"],
                                 "MBps_median": r["median"], "MBps_min": r["min_run"],
                                 "MBps_max": r["max_run"], "runs": r["values"],
                                 "accel": r["accel"], "commit": r["commit"][:12]})
    except OSError:
        pass
    if rc != 0 or not rows:
        print(f"[fabric-sweep] {sweep} {v:g}: scripts/bench exit {rc}, {len(rows)} figures "
              f"(see {sub})", flush=True)
    return rows


def plot(path, rows):
    """Throughput against loss and against round trip, a line each transport."""
    try:
        import matplotlib  # pylint: disable=import-outside-toplevel
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
    except ImportError:
        return False
    sweeps = [s for s in ("loss", "rtt") if any(r["sweep"] == s for r in rows)]
    if not sweeps:
        return False
    fig, axes = plt.subplots(1, len(sweeps), figsize=(6 * len(sweeps), 4.5), squeeze=False)
    for ax, s in zip(axes[0], sweeps):
        for tr in sorted({r["transport"] for r in rows if r["sweep"] == s}):
            pts = sorted((float(r["point"]), float(r["MBps_median"] or 0)) for r in rows
                         if r["sweep"] == s and r["transport"] == tr)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=tr)
        ax.set_xlabel("loss, % of what each host sends" if s == "loss" else "round trip, ms")
        ax.set_ylabel("MB/s (median)")
        if s == "rtt":
            ax.set_xscale("log")
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        ax.set_title(f"64 KiB WRITE / TCP stream against {s}")
    fig.tight_layout()
    fig.savefig(path)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.split("\n")[1:]))
    ap.add_argument("--loss", type=floats, default=floats("0,1,5,20"))
    ap.add_argument("--rtt", type=floats, default=floats("0.1,1,5,20"))
    ap.add_argument("--transports", default="qhca,tcp,rxe")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--size", type=int, default=65536)
    ap.add_argument("--dir")
    a = ap.parse_args()
    bad = [t for t in a.transports.split(",") if t not in ("qhca", "tcp", "rxe")]
    if bad or a.runs < 1 or a.size < 1 or any(not 0 <= v <= 100 for v in a.loss) or \
            any(not 0 < v <= 1000 for v in a.rtt):
        ap.error("--transports of qhca,tcp,rxe; --runs and --size at least 1; loss 0..100; "
                 "rtt above 0, at most 1000 ms")
    d = os.path.abspath(a.dir or os.path.join(
        TOP, "build", "runs", f"fabric-sweep-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"))
    os.makedirs(d, exist_ok=True)
    rows = []
    first = True
    for sweep, points in (("loss", a.loss), ("rtt", a.rtt)):
        for v in points:
            rows += run_point(a, d, sweep, v, first)
            first = False
    cols = ["sweep", "point", "fabric", "transport", "test", "MBps_median", "MBps_min",
            "MBps_max", "runs", "accel", "commit"]
    with open(os.path.join(d, "sweep.csv"), "w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows(rows)
    print(f"{'sweep':5} {'point':>6} " + " ".join(f"{t:>22}" for t in a.transports.split(",")))
    for sweep, points in (("loss", a.loss), ("rtt", a.rtt)):
        for v in points:
            cells = []
            for t in a.transports.split(","):
                r = [x for x in rows if x["sweep"] == sweep and x["point"] == f"{v:g}"
                     and x["transport"] == t]
                cells.append(f"{r[0]['MBps_median']} ({r[0]['MBps_min']}-{r[0]['MBps_max']})"
                             if r else "-")
            print(f"{sweep:5} {v:>6g} " + " ".join(f"{c:>22}" for c in cells))
    plotted = plot(os.path.join(d, "sweep.png"), rows)
    print(f"fabric-sweep: {d}/sweep.csv{' and sweep.png' if plotted else ''} (MB/s, medians)")
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
