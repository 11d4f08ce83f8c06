#!/usr/bin/python3
"""Peer stopped mid-transfer: how much CPU does the other QEMU's main loop use?

  tests/bench/peer-stop.py [--stop 1|2] [--kill] [--qp-timeout N]
                           [--seconds 60] [--qemu FILE] [--dir DIR]
                           [--test ib_write_bw]

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

--idle runs no RDMA at all (the plan's case does nothing), for the main
loop's figure without the device's part.

With --kill the peer's QEMU gets SIGKILL instead (issue 25: a peer that is
gone, not paused), guest 1 by default: the server, the responder, so that
the survivor is the requester. Its QP must end in retry-exceeded (the
device's trace event qhca_retry_exceeded, with its time stamp, in
DIR/trace-PID.log) at the time the IBA gives, (retry_cnt + 1) x 4.096 us x
2^timeout (perftest's retry count 7; --qp-timeout defaults to 18 here:
8 x 1.07 s = 8.6 s), and from a second after that its device must do
nothing: no frame, MMIO access or DMA (trace events, enabled over QMP at
the kill). The main-loop thread's CPU in the minute after the kill is
printed (issue 25 asks for under 1 s; under TCG the same QEMU's main loop
uses about that with the device idle). Then the survivor is killed too
(the run has nothing left to do) and the script prints "ok - ..." /
"not ok - ..." lines for the two checks (the on-demand fabric group runs
it).

Prints one line "peer-stop: ..." with the figures, also in DIR/peer-stop.json.
Holds build/.guest-run.lock while guests run.
"""

import argparse
import json
import os
import re
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
    ap.add_argument("--kill", action="store_true",
                    help="SIGKILL the peer's QEMU instead of SIGSTOP")
    ap.add_argument("--idle", action="store_true",
                    help="no RDMA at all (the baseline of --kill's CPU figure)")
    ap.add_argument("--qp-timeout", type=int)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--warmup", type=float, default=10)
    ap.add_argument("--test", default="ib_write_bw")
    ap.add_argument("--size", type=int, default=65536)
    ap.add_argument("--qemu", default=qhca_guests.QEMU_BIN)
    ap.add_argument("--accel", default="tcg")
    ap.add_argument("--dir")
    a = ap.parse_args()
    if a.qp_timeout is None:
        a.qp_timeout = 18 if a.kill else 22
    if not 1 <= a.qp_timeout <= 31:
        ap.error("--qp-timeout must be 1..31")
    d = os.path.abspath(a.dir or os.path.join(
        BUILD, "runs", f"peer-stop-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"))
    os.makedirs(d, exist_ok=True)
    duration = int(a.warmup + a.seconds + 40)
    plan = os.path.join(d, "bench.plan")
    with open(plan, "w", encoding="utf-8") as f:
        f.write("peerstop idle\n" if a.idle else
                f"peerstop perf {a.test} {a.size} 1 - -D {duration} -u {a.qp_timeout}\n")
    run = qhca_guests.GuestRun(
        n=2, run_script=os.path.join(TOP, "scripts", "guest", "run-bench.sh"),
        add=[os.path.join(TOP, "scripts", "guest", "pair.sh"), plan],
        directory=d, timeout=duration + 300, accel=a.accel, qemu_bin=a.qemu,
        qemu_extra=["-trace", "qhca_retry_exceeded", "-msg", "timestamp=on",
                    "-D", os.path.join(d, "trace-%d.log")] if a.kill else [])
    other = 3 - a.stop
    st = {"phase": "wait"}

    def on_line(i, line):
        if i == 2 and "QHCA-BENCH-BEGIN peerstop" in line and st["phase"] == "wait":
            st["phase"] = "running"
            st["t_begin"] = time.monotonic()

    def retry_exceeded(po):
        """The survivor's first qhca_retry_exceeded: when, after the kill"""
        try:
            with open(os.path.join(d, f"trace-{po}.log"), encoding="utf-8",
                      errors="replace") as f:
                for line in f:
                    m = re.search(r"@(\d+\.\d+):qhca_retry_exceeded", line)
                    if m or "qhca_retry_exceeded" in line:
                        t = float(m.group(1)) if m else time.time()
                        st["t_error"] = t - st["t_stop_wall"]
                        st["error_line"] = line.strip()
                        st["cpu_error"] = qhca_guests.qemu_cpu(po)
                        st["t_error_mono"] = time.monotonic()
                        return
        except OSError:
            pass

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
            os.kill(ps, signal.SIGKILL if a.kill else signal.SIGSTOP)
            st["t_stop_wall"] = time.time()
            if a.kill:
                # from now on every frame, MMIO access and DMA of the
                # survivor's device in its trace (cheap: it should be idle)
                for ev in DEVICE_EVENTS:
                    try:
                        r.vms[other].qmp("trace-event-set-state", name=ev, enable=True)
                    except Exception as e:  # pylint: disable=broad-except
                        log(f"trace {ev}: {e}")
            st["stopped_pid"] = ps
            st["t_stop"] = time.monotonic()
            st["cpu0"] = qhca_guests.qemu_cpu(po)
            st["survivor_pid"] = po
            st["threads0"] = qhca_guests.thread_cpu(po)
            st["phase"] = "stopped"
            log(f"{'SIGKILL' if a.kill else 'SIGSTOP'} guest{a.stop} (QEMU {ps}); "
                f"measuring guest{other}'s QEMU {po} for {a.seconds:.0f} s")
        if a.kill and st["phase"] == "stopped" and "t_error" not in st:
            retry_exceeded(r.pid(other))
        if st["phase"] == "stopped" and now - st["t_stop"] >= a.seconds:
            po = r.pid(other)
            c2 = qhca_guests.qemu_cpu(po) if po else None
            st["wall"] = time.monotonic() - st["t_stop"]
            if c2:
                st["during"] = {k: c2[k] - st["cpu0"][k] for k in c2}
                if "cpu_error" in st:
                    st["after_error"] = {k: c2[k] - st["cpu_error"][k] for k in c2}
                    st["after_error"]["seconds"] = time.monotonic() - st["t_error_mono"]
                t2 = qhca_guests.thread_cpu(po)
                st["threads"] = {f"{tid} {n}": round(sec - st["threads0"].get(tid, (n, 0))[1], 2)
                                 for tid, (n, sec) in t2.items()}
            if a.kill:
                # nothing is left to run: the survivor (ours) goes too
                if po:
                    os.kill(po, signal.SIGKILL)
                st["phase"] = "killed"
                log(f"SIGKILL guest{other}: the measurement is over")
            else:
                os.kill(st["stopped_pid"], signal.SIGCONT)
                st["phase"] = "resumed"
                log(f"SIGCONT guest{a.stop}")

    with qhca_guests.guest_lock():
        ok = run.run(on_line=on_line, on_tick=on_tick)
    if st.get("phase") == "stopped" and not a.kill:   # ended while stopped
        os.kill(st["stopped_pid"], signal.SIGCONT)
    formula = 8 * 4.096e-6 * 2 ** a.qp_timeout
    res = {"qemu": a.qemu, "test": a.test, "size": a.size, "qp_timeout": a.qp_timeout,
           "stopped_guest": a.stop, "measured_guest": other, "seconds": st.get("wall"),
           "during": st.get("during"), "before_5s": st.get("before_5s"),
           "threads": st.get("threads"), "run_ok": ok, "status": run.status,
           "dir": d, "signal": "KILL" if a.kill else "STOP",
           "retry_exceeded_after": st.get("t_error"), "iba_time": formula,
           "error_line": st.get("error_line"), "after_error": st.get("after_error"),
           "survivor_pid": st.get("survivor_pid")}
    if a.kill and "t_stop_wall" in st:
        res["device_events"] = device_events(d, st.get("survivor_pid"), st["t_stop_wall"],
                                             st.get("t_error"))
    with open(os.path.join(d, "peer-stop.json"), "w", encoding="utf-8") as f:
        json.dump(res, f, indent=1)
    if "during" not in res or res["during"] is None:
        print(f"peer-stop: no measurement (phase {st.get('phase')}); see {d}")
        if a.kill:
            print("not ok - peer-stop: the survivor measured after the kill")
        return 1
    du, bf = res["during"], res["before_5s"]
    if a.kill:
        return kill_report(a, res, other, formula)
    print(f"peer-stop: {a.test} {a.size} B, -u {a.qp_timeout}, guest{a.stop} stopped: "
          f"guest{other}'s QEMU main-loop thread {du['main']:.2f} s CPU in {res['seconds']:.1f} s "
          f"(vCPU {du['vcpu']:.2f} s, other threads {du['other']:.2f} s); "
          f"in the 5 s before the stop: main {bf['main']:.2f} s, vCPU {bf['vcpu']:.2f} s; "
          f"run {'ok' if ok else 'not ok'}; {d}")
    return 0


DEVICE_EVENTS = ("qhca_tx_frame", "qhca_rx_frame", "qhca_mmio_write",
                 "qhca_mmio_read", "qhca_dma_read", "qhca_dma_write")


def device_events(d, pid, t_kill, t_err):
    """The survivor's device events after the kill: before and after its
    QP's error, by name"""
    out = {"before_error": {}, "after_error": {}, "late": 0}
    try:
        with open(os.path.join(d, f"trace-{pid}.log"), encoding="utf-8",
                  errors="replace") as f:
            for line in f:
                m = re.search(r"@(\d+\.\d+):(qhca_\w+)", line)
                if not m or m.group(2) not in DEVICE_EVENTS:
                    continue
                t = float(m.group(1)) - t_kill
                k = "after_error" if t_err is not None and t > t_err else "before_error"
                out[k][m.group(2)] = out[k].get(m.group(2), 0) + 1
                if t_err is not None and t > t_err + 1:
                    out["late"] += 1
    except OSError:
        pass
    return out


def kill_report(a, res, other, formula):
    """The --kill checks: retry-exceeded when the IBA says, and the idle
    survivor's main loop under 1 s of CPU a minute."""
    du, te = res["during"], res["retry_exceeded_after"]
    per_min = du["main"] * 60 / max(res["seconds"], 1)
    if a.idle:
        print(f"peer-stop: no RDMA, guest{a.stop} killed: guest{other}'s QEMU main-loop "
              f"thread {du['main']:.2f} s CPU in {res['seconds']:.1f} s "
              f"({per_min:.2f} s a minute), vCPU {du['vcpu']:.2f} s; {res['dir']}")
        return 0
    print(f"peer-stop: {a.test} {a.size} B, -u {a.qp_timeout}, guest{a.stop} killed: "
          f"guest{other}'s QP in retry-exceeded after "
          f"{'never' if te is None else f'{te:.2f} s'} (IBA: 8 x 4.096 us x "
          f"2^{a.qp_timeout} = {formula:.2f} s); its QEMU main-loop thread "
          f"{du['main']:.2f} s CPU in {res['seconds']:.1f} s ({per_min:.2f} s a minute), "
          f"vCPU {du['vcpu']:.2f} s; after the QP's error "
          f"{(res.get('after_error') or {}).get('main', -1):.2f} s main-loop CPU in "
          f"{(res.get('after_error') or {}).get('seconds', 0):.1f} s; {res['dir']}")
    # the guest prints the error a little after the CQE (console, TCG)
    good = te is not None and formula * 0.9 <= te <= formula + 5
    print(f"{'ok' if good else 'not ok'} - peer-stop: the survivor's QP ended in "
          f"retry-exceeded at the IBA's time ({formula:.2f} s; "
          f"{'none' if te is None else f'{te:.2f} s'})")
    ev = res.get("device_events") or {}
    print(f"# the survivor's device after the kill, before its QP's error: "
          f"{ev.get('before_error')}; after: {ev.get('after_error')}")
    # the device's own work ends with the QP: its WQEs flushed in error
    # (DMA) within a second, then nothing (no frame, MMIO access or DMA)
    late = ev.get("late", -1)
    good2 = te is not None and late == 0
    print(f"{'ok' if good2 else 'not ok'} - peer-stop: the survivor's device did nothing "
          f"from 1 s after its QP's error on ({late} frames, MMIO accesses and DMAs)")
    # The bound for the main loop; measured, not asserted: under
    # TCG the same QEMU's main loop uses about as much with the device idle
    # (the guest's timers and its network), docs/security.md
    print(f"# peer-stop: the survivor's main loop: {per_min:.2f} s of CPU a minute after "
          f"the kill (issue 25's bound: 1 s), "
          f"{(res.get('after_error') or {}).get('main', -1):.2f} s in the "
          f"{(res.get('after_error') or {}).get('seconds', 0):.0f} s after its QP's error")
    return 0 if good and good2 else 1


if __name__ == "__main__":
    sys.exit(main())
