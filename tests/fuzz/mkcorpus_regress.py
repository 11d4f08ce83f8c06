# SPDX-License-Identifier: GPL-2.0-or-later
# Copyright (c) 2026 The qhca authors
"""Reproducers of known defects found by fuzzing a hostile guest and wire
(docs/security.md, "Corpus and reproducers"), for tests/fuzz/regressions/;
each crashes the fuzz target until its defect is fixed."""

import struct

from mkcorpus_format import A, B, H, MR_LEN, RC, UD, Input, sge


def uaf_timer_msix_reset():
    """1: the retransmission timer's error completion raises vector 1, which
    the guest aimed at CTRL with RESET; the reset frees every object while
    the timer path still uses them."""
    i = Input()
    i.op('MSIX', dev=A, vector=1, kind=1, off=H['QHCA_REG_CTRL'],
         data=H['QHCA_CTRL_RESET'])
    i.connect(timeout=1, retry=0)
    i.op('POLL', dev=A, max=0, arm=1 | 4)
    i.op('WIRE_MODE', **{'from': A}, mode=3, every=1)
    i.send(A, RC, 'QHCA_WQE_SEND', 0x1, [sge(0, 64)])
    return i.op('ADVANCE', exp=24).settle(10)


def uaf_bus_reset_msix(unplug):
    """5 (issue 20): A's UD SEND completes inside A's SQ doorbell and raises
    vector 1, which the guest aimed at the root port's Secondary Bus Reset
    (or its slot's power-off): the reset (or unplug) freed every object
    while the doorbell's completion path still used them."""
    i = Input()
    off, data = ((H['HX_PORT_SLTCTL'], H['HX_PORT_SLTCTL_OFF']) if unplug
                 else (H['HX_PORT_BRCTL'], H['HX_PORT_BRCTL_SBR']))
    i.op('MSIX', dev=A, vector=1, kind=4, off=off, data=data)
    i.op('POLL', dev=A, max=0, arm=1 | 4)
    i.send(A, UD, 'QHCA_WQE_SEND', 0x1, [sge(0, 64)])
    return i.settle(10)


def read_flood():
    """2: one READ request for all of a 4 MiB MR at MTU 256, then a newer
    request: every response is sent in one run of the bottom half."""
    i = Input()
    i.connect(mtu=1)
    i.op('FRAME', to=B, opcode=H['QHCA_ROCE_OP_RC_RDMA_READ_REQUEST'],
         qp=RC, psn_mode=0, psn=(0xfffff0 + A) & 0xffffff, va=0, rkey=0,
         dma_len=MR_LEN, flags=2)
    i.op('FRAME', to=B, opcode=H['QHCA_ROCE_OP_RC_SEND_ONLY'], qp=RC,
         psn_mode=0, psn=(0xfffff0 + A + 16384 + 100) & 0xffffff, plen=8)
    return i.settle(10)


def bh_spin():
    """3: a SEND larger than the send window to a peer whose answers are
    lost: the bottom half reschedules itself on every run."""
    i = Input()
    i.connect(timeout=0)
    i.op('WIRE_MODE', **{'from': B}, mode=3, every=1)
    i.recv(B, RC, 1, [sge(0, 1 << 20)])
    i.send(A, RC, 'QHCA_WQE_SEND', 2, [sge(0, 1 << 20)])
    for _ in range(8):
        i.op('PUMP', steps=255)
    return i


def wqe_rewrite_leak():
    """4: a 2 MiB SEND is rewritten in place as a 16-byte inline SEND and
    NAKed at 1 MiB: the device gathers from WQE + 64 + 1 MiB."""
    i = Input()
    i.recv(B, RC, 1, [sge(0, 2 << 20)])
    i.send(A, RC, 'QHCA_WQE_SEND', 2, [sge(0, 2 << 20)])
    i.op('PUMP', steps=1)
    wqe = struct.pack('<BBBBI', H['QHCA_WQE_SEND'],
                      H['QHCA_WQE_SIGNALED'] | H['QHCA_WQE_INLINE'], 0, 0, 16)
    i.op('WQE_RAW', dev=A, qp=RC, which=0, slot=-1, off=0, len=len(wqe),
         var=wqe)
    i.op('FRAME', to=A, opcode=H['QHCA_ROCE_OP_RC_ACKNOWLEDGE'], qp=RC,
         psn_mode=0, psn=(0xfffff0 + A + 1024) & 0xffffff,
         syndrome=H['QHCA_ROCE_AETH_NAK'] | H['QHCA_ROCE_NAK_PSN_SEQ_ERR'])
    return i.settle(10)
