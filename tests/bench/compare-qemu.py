#!/usr/bin/python3
"""Compare two QEMU binaries (two builds of the device) with scripts/bench.

  tests/bench/compare-qemu.py --base FILE --new FILE [--rounds 5]
                              [--base-env K=V]... [--new-env K=V]...
                              [--dir DIR] [-- BENCH ARGS...]

Runs scripts/bench ROUNDS times for each binary, alternating (base, new,
base, new, ...) so that a change of the machine's load hits both alike; each
bench run is one run of every case (--runs 1) between two qhca guests. The
figure of a case is the median of its ROUNDS runs; the table gives both
medians, new / base, and every run. Default bench arguments:
  --no-build --accel tcg --transports qhca --tests ib_write_bw,ib_send_lat
  --sizes 8,65536
(arguments after -- are added to them; a later option wins). --base-env
and --new-env set environment variables for one side's bench runs: e.g.
the same binary with --base-env QHCA_NETWORKS=2 compares the two-network
wiring (qhca on a netdev of its own) with the one-network default (qhca
sharing the virtio-net's backend). Writes DIR/compare.csv and prints the
table.
"""

import argparse
import csv
import os
import statistics
import subprocess
import sys
import time

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--dir")
    ap.add_argument("--base-env", action="append", default=[])
    ap.add_argument("--new-env", action="append", default=[])
    a = ap.parse_args(argv)
    envs = {}
    for which, kvs in (("base", a.base_env), ("new", a.new_env)):
        envs[which] = dict(os.environ)
        for kv in kvs:
            if "=" not in kv:
                ap.error(f"--{which}-env {kv}: K=V")
            k, v = kv.split("=", 1)
            envs[which][k] = v
    d = os.path.abspath(a.dir or os.path.join(
        TOP, "build", "runs", f"compare-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"))
    os.makedirs(d, exist_ok=True)
    bench = [os.path.join(TOP, "scripts", "bench"), "--no-build", "--accel", "tcg",
             "--transports", "qhca", "--tests", "ib_write_bw,ib_send_lat",
             "--sizes", "8,65536", *extra, "--runs", "1"]
    vals = {}      # (which, test, size, qps) -> [values]
    for r in range(1, a.rounds + 1):
        for which, qemu in (("base", a.base), ("new", a.new)):
            rd = os.path.join(d, f"{which}-{r}")
            print(f"round {r}: {which} ({qemu})", file=sys.stderr, flush=True)
            with open(os.path.join(d, f"{which}-{r}.log"), "w", encoding="utf-8") as log:
                subprocess.run([*bench, "--qemu", qemu, "--dir", rd, "--label", f"{which}-{r}"],
                               stdout=log, stderr=subprocess.STDOUT, check=False,
                               env=envs[which])
            try:
                with open(os.path.join(rd, "results.csv"), encoding="utf-8") as f:
                    for row in csv.DictReader(f):
                        if row["transport"] == "qhca":
                            key = (which, row["test"], int(row["size"]), row["qps"], row["unit"])
                            vals.setdefault(key, []).append(float(row["median"]))
            except OSError:
                print(f"round {r} {which}: no results (see {rd})", file=sys.stderr)
    cases = sorted({k[1:] for k in vals})
    out = os.path.join(d, "compare.csv")
    with open(out, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["test", "size", "qps", "unit", "base_median", "new_median", "new_over_base",
                    "base_runs", "new_runs", "base_qemu", "new_qemu", "base_env", "new_env"])
        print(f"{'test':<13}{'size':>7}  {'base':>10} {'new':>10} {'new/base':>9}   runs (base | new)")
        for t, s, q, unit in cases:
            b, n = vals.get(("base", t, s, q, unit), []), vals.get(("new", t, s, q, unit), [])
            bm = statistics.median(b) if b else None
            nm = statistics.median(n) if n else None
            ratio = nm / bm if bm and nm else None
            w.writerow([t, s, q, unit, bm, nm, ratio, ";".join(map(str, b)), ";".join(map(str, n)),
                        a.base, a.new, " ".join(a.base_env), " ".join(a.new_env)])
            fmt = (lambda v: f"{v:.4g}" if v is not None else "-")
            print(f"{t:<13}{s:>7}  {fmt(bm):>10} {fmt(nm):>10} {fmt(ratio):>9}   "
                  f"{' '.join(fmt(v) for v in b)} | {' '.join(fmt(v) for v in n)}  {unit}")
    print(f"written: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
