#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# Copyright (c) 2026 The qhca authors
"""Write the fuzzer's seed corpus and the crash reproducers.

    tests/fuzz/mkcorpus.py            (re)write tests/fuzz/corpus/,
                                      tests/fuzz/regressions/ and the
                                      dictionary tests/fuzz/qhca.dict

Each seed is the traffic of one qtest scenario (qtest/qhca-test.c) in the
input format of tests/fuzz/qhca-fuzz.c: the operation numbers and the
argument layouts are read from tests/fuzz/qhca-fuzz.h (its FZ_OP_* enum and
its packed Fz* structures), the hardware constants from include/qhca_hw.h and
hw/qhca-roce.h, so the encoder cannot drift from the decoder.  Seeds end
with EXPECT operations; `scripts/fuzz --replay` runs them with
QHCA_FUZZ_STRICT=1, so a seed that no longer does what it says fails.

The reproducers in tests/fuzz/regressions/ are the issue's defects written
the same way; each crashes the fuzz target until its defect is fixed.

The scenarios are in mkcorpus_*.py by subject: mkcorpus_format.py (the
format read from the headers and the Input encoder), mkcorpus_rc.py (RC and
UD), mkcorpus_cmd.py (commands and queries), mkcorpus_uc.py (UC),
mkcorpus_ipv6.py (IPv6), mkcorpus_resize.py (REREG_MR, RESIZE_CQ and
RESIZE_SRQ), mkcorpus_mcast.py (UD multicast), mkcorpus_regress.py (the
reproducers) and mkcorpus_dict.py (the dictionary); SEEDS and REGRESSIONS
here name what is written.
"""

import argparse
import os

from mkcorpus_cmd import commands, commands_bad, cq_on_own_bar, queries
from mkcorpus_dict import dictionary
from mkcorpus_format import MR_LEN, H
from mkcorpus_ipv6 import (ipv6_hostile_frames, ipv6_mixed_versions,
                           ipv6_rc_uc, ipv6_ud)
from mkcorpus_mcast import mcast_commands, mcast_hostile_frames, mcast_ud
from mkcorpus_rc import (atomics, bad_remote, bad_wqe, fast_reg,
                         congestion, hostile_frames, local_prot, loopback,
                         lossy,
                         lossy_rdma, mix, msix_doorbell, placement,
                         read_pieces_rd_atomic, reads_in_flight,
                         remote_errors, reset_mid_transfer, retry_exceeded,
                         rnr, send_recv, solicited, srq, ud, windows,
                         write_read)
from mkcorpus_regress import (bh_spin, read_flood, uaf_bus_reset_msix,
                              uaf_timer_msix_reset, wqe_rewrite_leak)
from mkcorpus_resize import rereg_mr, resize_cq, resize_srq
from mkcorpus_uc import (uc_errors, uc_loopback, uc_lost_packet,
                         uc_rc_crossed, uc_send_write)

HERE = os.path.dirname(os.path.abspath(__file__))


SEEDS = {
    'send-recv': send_recv,
    'srq': srq,
    'write-read-64k': lambda: write_read(64 << 10),
    'write-read-1m': lambda: write_read(1 << 20, 64),
    'atomics': atomics,
    'placement': placement,
    'windows': windows,
    'ud-grh': ud,
    'loopback': loopback,
    'rnr': rnr,
    'retry-exceeded': retry_exceeded,
    'bad-rkey': lambda: bad_remote(0, 64, 'QHCA_WQE_RDMA_WRITE', rkey=2),
    'out-of-bounds-write': lambda: bad_remote(MR_LEN - 100, 200,
                                              'QHCA_WQE_RDMA_WRITE'),
    'out-of-bounds-read': lambda: bad_remote(MR_LEN - 96, 200,
                                             'QHCA_WQE_RDMA_READ'),
    'access-flags': lambda: bad_remote(0, 64, 'QHCA_WQE_RDMA_WRITE',
                                       access=H['QHCA_ACCESS_REMOTE_READ']),
    'bad-wqe': bad_wqe,
    'local-prot': local_prot,
    'remote-errors': remote_errors,
    'fast-reg': fast_reg,
    'solicited': solicited,
    'hostile-frames': hostile_frames,
    'congestion': congestion,
    'lossy': lambda: lossy(1, 7, every_b=7),
    'dup': lambda: lossy(2, 2, every_b=3),
    'reorder': lambda: lossy(4, 1, every_b=1),
    'lossy-rdma': lossy_rdma,
    'reads-in-flight': reads_in_flight,
    'mix': mix,
    'reset-mid-transfer': reset_mid_transfer,
    'msix-doorbell': msix_doorbell,
    'commands': commands,
    'commands-bad': commands_bad,
    'cq-on-own-bar': cq_on_own_bar,
    'uc-send-write': uc_send_write,
    'uc-lost-packet': lambda: uc_lost_packet(False),
    'uc-lost-packet-srq': lambda: uc_lost_packet(True),
    'uc-errors': uc_errors,
    'uc-rc-crossed': uc_rc_crossed,
    'uc-loopback': uc_loopback,
    'queries': queries,
    'ipv6-rc-uc': ipv6_rc_uc,
    'ipv6-ud': ipv6_ud,
    'ipv6-hostile-frames': ipv6_hostile_frames,
    'ipv6-mixed-versions': ipv6_mixed_versions,
    'rereg-mr': rereg_mr,
    'resize-cq': resize_cq,
    'resize-srq': resize_srq,
    'mcast-ud': mcast_ud,
    'mcast-hostile-frames': mcast_hostile_frames,
    'mcast-commands': mcast_commands,
}


REGRESSIONS = {
    'uaf-timer-msix-reset': uaf_timer_msix_reset,
    'uaf-bus-reset-msix': lambda: uaf_bus_reset_msix(False),
    'uaf-slot-power-off-msix': lambda: uaf_bus_reset_msix(True),
    'read-flood-budget': read_flood,
    'bh-spin-window-full': bh_spin,
    'wqe-rewrite-inline-leak': wqe_rewrite_leak,
    'read-pieces-rd-atomic': lambda: read_pieces_rd_atomic(False),
    'read-pieces-rd-atomic-lossy': lambda: read_pieces_rd_atomic(True),
}


def write_dict(path, ops):
    with open(path, 'w', encoding='ascii') as f:
        f.write('# Whole operations of tests/fuzz/qhca-fuzz.c (written by '
                'mkcorpus.py)\n')
        for name, data in sorted(ops.items()):
            f.write('%s="%s"\n' % (name, ''.join('\\x%02x' % b
                                                 for b in data)))


def write_dir(path, items, keep):
    os.makedirs(path, exist_ok=True)
    for name, fn in items.items():
        with open(os.path.join(path, name), 'wb') as f:
            f.write(fn().data)
    for name in os.listdir(path):
        if name not in items and not keep(name):
            os.remove(os.path.join(path, name))


def main():
    argparse.ArgumentParser(
        description=__doc__.split('\n')[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog='\n'.join(__doc__.split('\n')[1:])).parse_args()
    write_dir(os.path.join(HERE, 'corpus'), SEEDS, lambda n: False)
    # crashers found by fuzzing (not written here) stay
    write_dir(os.path.join(HERE, 'regressions'), REGRESSIONS,
              lambda n: True)
    write_dict(os.path.join(HERE, 'qhca.dict'), dictionary())
    print('%d seeds in tests/fuzz/corpus, %d reproducers in '
          'tests/fuzz/regressions, tests/fuzz/qhca.dict'
          % (len(SEEDS), len(REGRESSIONS)))


if __name__ == '__main__':
    main()
