# SPDX-License-Identifier: GPL-2.0-or-later
# Copyright (c) 2026 The qhca authors
"""Seeds: UD multicast (docs/hardware.md 10.3)."""

import struct

from mkcorpus_format import (A, B, H, QPN_CMD, RC, UC, UC_SRQ, UD, Input,
                             sge)


# UD multicast (docs/hardware.md 10.3): MCAST flags, group kinds of
# group_gid(), the first UD QP MCAST makes (table slot 5), GRH area
DETACH, NEW_QP, NEW_QP_SRQ, RESERVED, GROUP_AH, MORE_QPS = 1, 2, 4, 8, 16, 32
G4, G6, G4_OUTSIDE, G_OWN4, G6_ANY, G_ZERO, G4_COMPAT, G_OWN6 = range(8)
UD2, UD3 = 5, 6
GRH = H['QHCA_GRH_SIZE']


def mcast_ud():
    """Sends to IPv4 and IPv6 groups: A's UD QP and two of B's attached;
    A sends through an AH to the group (DestQP 0xFFFFFF), B's two QPs
    and A's own (looped back) receive each message; after a detach the
    detached QP gets nothing (its receive, too small for the 100 bytes
    sent meanwhile, takes the next 16 bytes once attached again)."""
    i = Input()
    i.mcast(B, UD, G4, 5)
    i.mcast(B, 0, G4, 5, flags=NEW_QP)
    i.mcast(A, UD, G4, 5, flags=GROUP_AH)
    i.recv(B, UD, 0xdb1, [sge(0, GRH + 100)])
    i.recv(B, UD2, 0xdb2, [sge(0x1000, GRH + 100)])
    i.recv(A, UD, 0xdb3, [sge(0x2000, GRH + 100)])
    i.send(A, UD, 'QHCA_WQE_SEND_WITH_IMM', 0xda1, [sge(0x8000, 100)],
           rkey=3)
    i.expect(A, UD, 0xda1).expect(B, UD, 0xdb1).expect(B, UD2, 0xdb2)
    i.expect(A, UD, 0xdb3)
    # B's second QP leaves: its small receive is not used by the 100 bytes
    i.mcast(B, UD2, G4, 5, flags=DETACH)
    i.recv(B, UD2, 0xdb4, [sge(0x1000, GRH + 16)])
    i.recv(B, UD, 0xdb5, [sge(0, GRH + 100)])
    i.recv(A, UD, 0xdb6, [sge(0x2000, GRH + 100)])
    i.send(A, UD, 'QHCA_WQE_SEND', 0xda2, [sge(0x8000, 100)], rkey=3)
    i.expect(A, UD, 0xda2).expect(B, UD, 0xdb5).expect(A, UD, 0xdb6)
    i.mcast(B, UD2, G4, 5)
    i.recv(B, UD, 0xdb7, [sge(0, GRH + 16)])
    i.recv(A, UD, 0xdb8, [sge(0x2000, GRH + 16)])
    i.send(A, UD, 'QHCA_WQE_SEND', 0xda3, [sge(0x8000, 16)], rkey=3)
    i.expect(A, UD, 0xda3).expect(B, UD2, 0xdb4).expect(B, UD, 0xdb7)
    i.expect(A, UD, 0xdb8)
    # IPv6 group ff0e::42, B's QP on the SRQ and A's UD QP
    i.mcast(B, 0, G6, 0x42, flags=NEW_QP | NEW_QP_SRQ)
    i.mcast(A, UD, G6, 0x42, flags=GROUP_AH)
    i.recv(B, UD3, 0xdb9, [sge(0x3000, GRH + 64)])
    i.recv(A, UD, 0xdba, [sge(0x2000, GRH + 64)])
    i.send(A, UD, 'QHCA_WQE_SEND', 0xda4, [sge(0x8000, 64)], rkey=3)
    i.expect(A, UD, 0xda4).expect(B, UD3, 0xdb9).expect(A, UD, 0xdba)
    # unicast UD still works
    i.recv(B, UD, 0xdbb, [sge(0, GRH + 64)])
    i.send(A, UD, 'QHCA_WQE_SEND', 0xda5, [sge(0x8000, 64)])
    return i.expect(A, UD, 0xda5).expect(B, UD, 0xdbb)


def mcast_hostile_frames():
    """Frames to B's group that must be dropped, each too big for the
    receive (one taken shows as LOC_LEN_ERR): DestQP other than 0xFFFFFF,
    B's unicast MAC, another group's MAC, broadcast, RC and UC opcodes,
    multicast sources, a group with no QP, the group MAC of a unicast
    address, hostile IPv6 groups, a wrong Q_Key, a bad ICRC; then the right
    frames (from the peer, from B's own address) are taken."""
    i = Input()
    ud = dict(to=B, opcode=H['QHCA_ROCE_OP_UD_SEND_ONLY'], qp=UD,
              psn_mode=1, plen=200)
    i.mcast(B, UD, G4, 7)
    i.mcast(B, UD, G6, 7)
    i.recv(B, UD, 0xeb1, [sge(0, GRH + 16)])
    i.recv(B, UD, 0xeb2, [sge(0x1000, GRH + 16)])
    i.recv(B, UD, 0xeb3, [sge(0x2000, GRH + 16)])
    bad = [dict(dqp=1), dict(dqp=2), dict(dqp=3), dict(mac=1), dict(mac=2),
           dict(mac=3), dict(src=1), dict(val=8), dict(val=0x800007),
           dict(group=G_OWN4), dict(group=G6, src=3),
           dict(group=G4_OUTSIDE), dict(group=G4_OUTSIDE, val=6),
           dict(group=G6, val=8), dict(group=G6, src=1),
           dict(group=G6, dqp=1), dict(group=G6, mac=1),
           dict(group=G6_ANY, val=0x02000007), dict(group=G_ZERO),
           dict(group=G4_COMPAT, val=7), dict(group=G_OWN6)]
    for n, mf in enumerate(bad):
        mf.setdefault('group', G4)
        mf.setdefault('val', 7)
        i.mframe(mf, psn=n, **ud)
    for op in ('QHCA_ROCE_OP_RC_SEND_ONLY', 'QHCA_ROCE_OP_UC_SEND_ONLY',
               'QHCA_ROCE_OP_RC_RDMA_WRITE_ONLY',
               'QHCA_ROCE_OP_UC_RDMA_WRITE_ONLY_IMM'):
        for group in (G4, G6):
            i.mframe(dict(group=group, val=7), to=B, opcode=H[op], qp=RC,
                     psn_mode=1, flags=2, dma_len=200, plen=200)
    i.mframe(dict(group=G4, val=7), qkey=0x4321, **ud)
    i.mframe(dict(group=G4, val=7), flags=8, **ud)
    i.settle(5)
    ud['plen'] = 16
    i.mframe(dict(group=G4, val=7), **ud)
    i.mframe(dict(group=G6, val=7), **ud)
    i.mframe(dict(group=G4, val=7, src=2), **ud)
    i.expect(B, UD, 0xeb1).expect(B, UD, 0xeb2).expect(B, UD, 0xeb3)
    for qp in (RC, UC):
        i.expect_qp(B, qp, 'QHCA_QPS_RTS')
    return i


def mcast_commands():
    """ATTACH_MCAST/DETACH_MCAST refusals (RC, UC, no such QP, groups that
    are not multicast, reserved not 0, detaching what is not attached), a
    destroyed QP leaving its group, 16 QPs per group and 64 groups."""
    i = Input()
    perr, herr = 'QHCA_CMD_ERR_PARAM', 'QHCA_CMD_ERR_HANDLE'
    nores = 'QHCA_CMD_ERR_NO_RESOURCES'
    for qp, st in ((RC, perr), (UC_SRQ, perr), (200, herr)):
        i.mcast(A, qp, G4, 1, status=st)
    for group in (G4_OUTSIDE, G_OWN4, G_ZERO, G4_COMPAT, G_OWN6):
        i.mcast(A, UD, group, 1, status=perr)
    i.mcast(A, UD, G4, 1, flags=RESERVED, status=perr)
    i.mcast(A, UD, G4, 1, flags=DETACH, status=perr)
    i.mcast(A, UD, G4, 1).mcast(A, UD, G4, 1)
    i.mcast(A, UD, G4, 1, flags=DETACH)
    i.mcast(A, UD, G4, 1, flags=DETACH, status=perr)
    i.mcast(A, UD, G6_ANY, 0x3f000001)
    i.mcast(A, UD, G6_ANY, 0x3f000001, flags=DETACH | RESERVED,
            status=perr)
    # a destroyed QP leaves its groups (then it is no QP)
    i.mcast(A, 0, G4, 9, flags=NEW_QP)
    i.op('CMD', dev=A, opcode=H['QHCA_CMD_DESTROY_QP'], len=4,
         var=struct.pack('<I', QPN_CMD))
    i.mcast(A, UD2, G4, 9, flags=DETACH, status=herr)
    # 16 QPs in one group (UD and 15 in RESET), a 17th refused
    i.mcast(A, UD, G4, 2, flags=MORE_QPS, count=15)
    i.mcast(A, UD, G4, 2, flags=MORE_QPS, count=1, status=nores)
    # a QP of no group detached from one that exists
    i.mcast(A, 0, G4, 2, flags=NEW_QP | DETACH, status=perr)
    # 64 groups: 62 more, then one too many, an existing one still taken
    i.mcast(A, UD, G6, 100, count=61)
    i.mcast(A, UD, G4, 0x80, count=1, status=nores)
    i.mcast(A, UD, G6, 161)
    i.mcast(A, UD, G6, 162, status=nores)
    i.mcast(A, UD, G6, 100, flags=DETACH)
    i.mcast(A, UD, G6, 162)
    # the RESET QPs of group 2 take nothing; A's UD QP does
    i.recv(A, UD, 0xfb1, [sge(0, GRH + 32)])
    i.mframe(dict(group=G4, val=2), to=A,
             opcode=H['QHCA_ROCE_OP_UD_SEND_ONLY'], qp=UD, psn_mode=1,
             plen=32)
    return i.expect(A, UD, 0xfb1)
