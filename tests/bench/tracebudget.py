#!/usr/bin/env python3
"""Break qhca messages into their steps from two QEMUs' trace logs.

Run two guests with

    -msg timestamp=on -D DIR/qemu-%d.log -trace events=EVENTS

where EVENTS lists at least qhca_doorbell, qhca_wqe_fetch, qhca_tx_pkt,
qhca_rx_frame, qhca_rx_pkt, qhca_cqe and qhca_ack_tx (QEMU's "log" trace
backend then writes "TID@SEC.USEC:event args" lines), and give this script
the two log files.  For every request packet one QEMU sent and the other
received it prints, per opcode, the median and 90th percentile of each step:

  db->fetch    guest doorbell (MMIO, vCPU thread) to the device's bottom
               half fetching the WQE (main-loop thread)
  fetch->tx    WQE fetch to the frame handed to the netdev
  tx->rxframe  the wire: frame handed to the netdev to the peer QEMU's
               netdev receive callback
  rxframe->rx  the peer's receive callback to its bottom half parsing it
  rx->cqe      parsing to the receive CQE written (last packet only)
  cqe->reply   the peer's receive CQE to the peer's next doorbell: the
               guest's own time to poll, process and post the next WQE
  rx->ack      parsing to the ACK sent (packets with AckReq)

Both QEMUs run on one host, so their timestamps share one clock.
"""

import re
import statistics
import sys

LINE = re.compile(r'^(\d+)@(\d+)\.(\d+):(qhca_\w+) ?(.*)$')


def load(path):
    ev = []
    with open(path, errors='replace') as f:
        for line in f:
            m = LINE.match(line.strip())
            if not m:
                continue
            tid, sec, usec, name, args = m.groups()
            ev.append((int(sec) * 1000000 + int(usec), int(tid), name, args))
    ev.sort(key=lambda e: e[0])
    return ev


def num(args, key):
    m = re.search(key + r' (0x[0-9a-f]+|\d+)', args)
    return int(m.group(1), 0) if m else None


def pct(vals, p):
    vals = sorted(vals)
    if not vals:
        return float('nan')
    return vals[min(len(vals) - 1, int(p * len(vals)))]


def analyse(a, b, names):
    steps = {}

    def add(op, step, us):
        if us is not None and us >= 0:
            steps.setdefault((op, step), []).append(us)

    for src, dst in ((a, b), (b, a)):
        # the peer's received packets by (qpn, psn, opcode)
        rx_pkt = {}
        rx_frames = [e[0] for e in dst if e[2] == 'qhca_rx_frame']
        for i, e in enumerate(dst):
            if e[2] == 'qhca_rx_pkt':
                key = (num(e[3], 'qpn'), num(e[3], 'psn'), num(e[3], 'opcode'))
                rx_pkt.setdefault(key, i)
        last_db = None
        last_fetch = None
        fi = 0
        for e in src:
            if e[2] == 'qhca_doorbell':
                last_db = e[0]
            elif e[2] == 'qhca_wqe_fetch':
                last_fetch = e[0]
                if last_db is not None:
                    add('*', 'db->fetch', e[0] - last_db)
                    last_db = None
            elif e[2] == 'qhca_tx_pkt':
                op = num(e[3], 'opcode')
                if op is None or op in (0x10, 0x11, 0x12):
                    continue        # responses and ACKs
                key = (num(e[3], 'dest qpn'), num(e[3], 'psn'), op)
                name = names.get(op, '0x%02x' % op)
                if last_fetch is not None:
                    add(name, 'fetch->tx', e[0] - last_fetch)
                    last_fetch = None
                j = rx_pkt.get(key)
                if j is None:
                    continue
                t_rx = dst[j][0]
                while fi < len(rx_frames) and rx_frames[fi] < e[0]:
                    fi += 1
                if fi < len(rx_frames) and rx_frames[fi] <= t_rx:
                    add(name, 'tx->rxframe', rx_frames[fi] - e[0])
                    add(name, 'rxframe->rx', t_rx - rx_frames[fi])
                # what the peer did next with it
                for k in range(j + 1, min(j + 40, len(dst))):
                    n2, a2 = dst[k][2], dst[k][3]
                    if n2 == 'qhca_rx_pkt':
                        break
                    if n2 == 'qhca_cqe' and num(a2, 'qpn') == key[0]:
                        add(name, 'rx->cqe', dst[k][0] - t_rx)
                        for m in range(k + 1, min(k + 200, len(dst))):
                            if dst[m][2] == 'qhca_doorbell':
                                add(name, 'cqe->reply', dst[m][0] - dst[k][0])
                                break
                    if n2 == 'qhca_ack_tx' and num(a2, 'psn') == key[1]:
                        add(name, 'rx->ack', dst[k][0] - t_rx)
    return steps


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    names = {0x04: 'SEND_ONLY', 0x0a: 'WRITE_ONLY', 0x06: 'WRITE_FIRST',
             0x07: 'WRITE_MIDDLE', 0x08: 'WRITE_LAST', 0x00: 'SEND_FIRST',
             0x01: 'SEND_MIDDLE', 0x02: 'SEND_LAST', 0x0c: 'READ_REQUEST'}
    steps = analyse(load(sys.argv[1]), load(sys.argv[2]), names)
    print('%-14s %-12s %8s %10s %10s' % ('packet', 'step', 'count',
                                        'median us', 'p90 us'))
    for (op, step), vals in sorted(steps.items()):
        print('%-14s %-12s %8d %10.1f %10.1f' % (
            op, step, len(vals), statistics.median(vals), pct(vals, 0.9)))


if __name__ == '__main__':
    main()
