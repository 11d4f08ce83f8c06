#!/usr/bin/python3
"""Peer stopped mid-transfer: how much CPU does the other QEMU's main loop use?

  tests/bench/peer-stop.py [--stop 1|2] [--qp-timeout N] [--seconds 60]
                           [--qemu FILE] [--dir DIR] [--test ib_write_bw]

Boots two qhca guests (as scripts/launch does) and runs one long perftest
between them (guest 1 server, guest 2 client: for ib_write_bw the client is
the requester, the server the responder), 64 KiB messages, in duration mode.
Some seconds into the transfer it sends SIGSTOP to guest --stop's QEMU (by
PID, a process this script started), then reads the CPU time of the other
QEMU's main-loop thread (/proc/PID/task/PID/stat, utime + stime; the thread
that runs the device's bottom halves, timers and netdev handlers; the vCPU
threads are reported apart) at the start and the end of --seconds. Then
SIGCONT, and the run ends by itself. perftest's --qp-timeout (-u) sets the
retransmission timeout (4.096 us * 2^N): with 22 (17 s) the requester keeps
a full send window and retries for the whole measurement instead of giving
up after seven 67 ms timeouts (the default 14).

Prints one line "peer-stop: ..." with the figures, also in DIR/peer-stop.json.
Holds build/.guest-run.lock while guests run.
"""

import argparse
import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "scripts", "lib"))
import qhca_guests  # noqa: E402  pylint: disable=wrong-import-position
from qhca_guests import TOP, BUILD, log  # noqa: E402  pylint: disable=wrong-import-position


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stop", type=int, default=1, choices=[1, 2])
    ap.add_argument("--qp-timeout", type=int, default=22)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--warmup", type=float, default=10)
    ap.add_argument("--test", default="ib_write_bw")
    ap.add_argument("--size", type=int, default=65536)
    ap.add_argument("--qemu", default=qhca_guests.QEMU_BIN)
    ap.add_argument("--accel", default="tcg")
    ap.add_argument("--dir")
    a = ap.parse_args()
    d = os.path.abspath(a.dir or os.path.join(
        BUILD, "runs", f"peer-stop-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"))
    os.makedirs(d, exist_ok=True)
    duration = int(a.warmup + a.seconds + 40)
    plan = os.path.join(d, "bench.plan")
    with open(plan, "w", encoding="utf-8") as f:
        f.write(f"peerstop perf {a.test} {a.size} 1 - -D {duration} -u {a.qp_timeout}\n")
    run = qhca_guests.GuestRun(
        n=2, run_script=os.path.join(TOP, "scripts", "guest", "run-bench.sh"),
        add=[os.path.join(TOP, "scripts", "guest", "pair.sh"), plan],
        directory=d, timeout=duration + 300, accel=a.accel, qemu_bin=a.qemu)
    other = 3 - a.stop
    st = {"phase": "wait"}

    def on_line(i, line):
        if i == 2 and "QHCA-BENCH-BEGIN peerstop" in line and st["phase"] == "wait":
            st["phase"] = "running"
            st["t_begin"] = time.monotonic()

    def on_tick(r):
        now = time.monotonic()
        if st["phase"] == "running" and now - st["t_begin"] >= a.warmup:
            ps, po = r.pid(a.stop), r.pid(other)
            if not ps or not po:
                st["phase"] = "gone"
                return
            # the figure before: the last 5 s of the transfer
            c0 = qhca_guests.qemu_cpu(po)
            time.sleep(5)
            c1 = qhca_guests.qemu_cpu(po)
            st["before_5s"] = {k: c1[k] - c0[k] for k in c1}
            os.kill(ps, signal.SIGSTOP)
            st["stopped_pid"] = ps
            st["t_stop"] = time.monotonic()
            st["cpu0"] = qhca_guests.qemu_cpu(po)
            st["threads0"] = qhca_guests.thread_cpu(po)
            st["phase"] = "stopped"
            log(f"SIGSTOP guest{a.stop} (QEMU {ps}); measuring guest{other}'s QEMU {po} "
                f"for {a.seconds:.0f} s")
        elif st["phase"] == "stopped" and now - st["t_stop"] >= a.seconds:
            po = r.pid(other)
            c2 = qhca_guests.qemu_cpu(po) if po else None
            st["wall"] = time.monotonic() - st["t_stop"]
            if c2:
                st["during"] = {k: c2[k] - st["cpu0"][k] for k in c2}
                t2 = qhca_guests.thread_cpu(po)
                st["threads"] = {f"{tid} {n}": round(sec - st["threads0"].get(tid, (n, 0))[1], 2)
                                 for tid, (n, sec) in t2.items()}
            os.kill(st["stopped_pid"], signal.SIGCONT)
            st["phase"] = "resumed"
            log(f"SIGCONT guest{a.stop}")

    with qhca_guests.guest_lock():
        ok = run.run(on_line=on_line, on_tick=on_tick)
    if st.get("phase") == "stopped":       # the run ended while stopped
        os.kill(st["stopped_pid"], signal.SIGCONT)
    res = {"qemu": a.qemu, "test": a.test, "size": a.size, "qp_timeout": a.qp_timeout,
           "stopped_guest": a.stop, "measured_guest": other, "seconds": st.get("wall"),
           "during": st.get("during"), "before_5s": st.get("before_5s"),
           "threads": st.get("threads"), "run_ok": ok, "status": run.status,
           "dir": d}
    with open(os.path.join(d, "peer-stop.json"), "w", encoding="utf-8") as f:
        json.dump(res, f, indent=1)
    if "during" not in res or res["during"] is None:
        print(f"peer-stop: no measurement (phase {st.get('phase')}); see {d}")
        return 1
    du, bf = res["during"], res["before_5s"]
    print(f"peer-stop: {a.test} {a.size} B, -u {a.qp_timeout}, guest{a.stop} stopped: "
          f"guest{other}'s QEMU main-loop thread {du['main']:.2f} s CPU in {res['seconds']:.1f} s "
          f"(vCPU {du['vcpu']:.2f} s, other threads {du['other']:.2f} s); "
          f"in the 5 s before the stop: main {bf['main']:.2f} s, vCPU {bf['vcpu']:.2f} s; "
          f"run {'ok' if ok else 'not ok'}; {d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
