"""scripts/bench --tests nvme-fio: fio over NVMe/RDMA, qhca beside Soft-RoCE.

Kept apart from scripts/bench's perftest plan: bench calls
main(a, d) with its parsed arguments when --tests is nvme-fio. Two guests
per transport (qhca, rxe: those of --transports), the target and host of
scripts/guest/apps/run-nvme.sh, and fio cases (4 KiB random read and write,
128 KiB sequential read and write; iodepth 32, one job) for --seconds each,
--runs times; the figures are medians. Prints a table and writes
nvme-fio.csv and nvme-fio.json into the run directory. Asserts nothing.
"""

import json
import os
import statistics

import qhca_guests
from qhca_guests import TOP, log

CASES = [("randread-4k", "randread", "4k"), ("randwrite-4k", "randwrite", "4k"),
         ("read-128k", "read", "128k"), ("write-128k", "write", "128k")]
APPS = os.path.join(TOP, "scripts", "guest", "apps")


def boot(a, transport, d):
    """{case: [(MB/s, IOPS) per run]} and the run's status"""
    os.makedirs(d, exist_ok=True)
    res = {}
    cases = ",".join(f"{n}:{rw}:{bs}" for n, rw, bs in CASES)
    run = qhca_guests.GuestRun(
        n=2, rxe={1, 2} if transport == "rxe" else (),
        run_script=os.path.join(APPS, "bench-nvme.sh"),
        add=[os.path.join(TOP, "scripts", "guest", "pair.sh"),
             os.path.join(APPS, "apps-lib.sh"), os.path.join(APPS, "run-nvme.sh")],
        directory=d, timeout=a.timeout or (600 + len(CASES) * a.runs * (a.seconds + 60)),
        accel=a.accel, qemu_bin=a.qemu, mem=2048, mtu=a.mtu, wire=a.wire,
        append=f"apps.bench_cases={cases} apps.bench_seconds={a.seconds} "
               f"apps.bench_runs={a.runs}")
    run.run()
    for line in run.outputs.get(2, "").splitlines():
        f = line.split()
        if len(f) == 5 and f[0] == "fio-result":
            res.setdefault(f[1], []).append((float(f[3]) * 1024 / 1e6, float(f[4])))
        elif line.startswith("fio-failed") or line.startswith("not ok"):
            log(f"{transport}: {line}")
    return res, run.status


def main(a, d):
    trs = [t for t in ("qhca", "rxe") if t in a.transports]
    figs = {}
    with qhca_guests.guest_lock():
        for tr in trs:
            log(f"nvme-fio on {tr}: {len(CASES)} cases x {a.runs} runs of {a.seconds} s")
            res, status = boot(a, tr, os.path.join(d, f"nvme-fio-{tr}"))
            figs[tr] = {c: {"MBps": statistics.median(x for x, _ in v),
                            "iops": statistics.median(y for _, y in v), "runs": v}
                        for c, v in res.items()}
            log(f"{tr}: {status}")
    rows = []
    print(f"{'fio over NVMe/RDMA':<16}" + "".join(f"{t + ' MB/s':>14}{t + ' IOPS':>12}" for t in trs)
          + ("  qhca/rxe" if len(trs) == 2 else ""))
    for name, _, _ in CASES:
        cells, row = "", {"case": name}
        for t in trs:
            f = figs.get(t, {}).get(name)
            cells += f"{f['MBps']:>14.1f}{f['iops']:>12.0f}" if f else f"{'FAILED':>14}{'':>12}"
            row[f"{t}_MBps"] = f["MBps"] if f else ""
            row[f"{t}_iops"] = f["iops"] if f else ""
        ratio = ""
        if len(trs) == 2 and row.get("qhca_MBps") and row.get("rxe_MBps"):
            ratio = f"  {row['qhca_MBps'] / row['rxe_MBps']:.2f}x"
        print(f"{name:<16}{cells}{ratio}")
        rows.append(row)
    cols = ["case"] + [f"{t}_{k}" for t in trs for k in ("MBps", "iops")]
    with open(os.path.join(d, "nvme-fio.csv"), "w", encoding="utf-8") as f:
        f.write(",".join(cols) + "\n")
        for r in rows:
            f.write(",".join(str(r.get(c, "")) for c in cols) + "\n")
    with open(os.path.join(d, "nvme-fio.json"), "w", encoding="utf-8") as f:
        json.dump({"seconds": a.seconds, "runs": a.runs, "iodepth": 32, "figures": figs}, f, indent=1)
    log(f"written {d}/nvme-fio.csv and nvme-fio.json")
    return 0 if all(figs.get(t) for t in trs) else 1
