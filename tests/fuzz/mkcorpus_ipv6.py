# SPDX-License-Identifier: GPL-2.0-or-later
# Copyright (c) 2026 The qhca authors
"""Seeds: RC, UC and UD over IPv6, hostile IPv6 frames, GIDs, AHs and
address vectors mixing IPv4 and IPv6."""

from mkcorpus_format import A, B, H, RC, RC_SRQ, UC, UD, Input, sge


# IPv6: GID 1 of each device is its IPv6 address; CONNECT
# with qp & 16 connects over it, UD sends with rkey 1 use the AH to the
# peer's IPv6 GID
IP6 = 16


def ipv6_rc_uc():
    """RC and UC over IPv6 (traffic class and flow label from the PSN's
    top bits), SEND, WRITE, READ and atomics; then back to IPv4."""
    i = Input()
    i.connect(qp=IP6, psn=0xb8fffff0)
    i.recv(B, RC, 0x7b1, [sge(0, 5000)])
    i.send(A, RC, 'QHCA_WQE_SEND_WITH_IMM', 0x7a1, [sge(0, 3000)])
    i.expect(B, RC, 0x7b1).expect(A, RC, 0x7a1)
    i.send(A, RC, 'QHCA_WQE_RDMA_WRITE', 0x7a2, [sge(0x10000, 65536)],
           remote=0x200000)
    i.send(B, RC, 'QHCA_WQE_RDMA_READ', 0x7a3, [sge(0x40000, 65536)],
           remote=0x200000)
    i.send(A, RC, 'QHCA_WQE_ATOMIC_FETCH_AND_ADD', 0x7a4, [sge(0x100, 8)],
           remote=0x300000, add=5)
    i.expect(A, RC, 0x7a2, ms=100).expect(B, RC, 0x7a3, ms=100)
    i.expect(A, RC, 0x7a4)
    i.connect(qp=8 | IP6, mtu=1, psn=0x2a012345)
    i.recv(B, UC, 0x7b5, [sge(0, 4096)])
    i.send(A, UC, 'QHCA_WQE_SEND', 0x7a5, [sge(0, 2000)])
    i.recv(A, UC, 0x7b6, [sge(0, 16)])
    i.send(B, UC, 'QHCA_WQE_RDMA_WRITE_WITH_IMM', 0x7a6, [sge(0, 3000)],
           remote=0x1000)
    i.expect(A, UC, 0x7a5).expect(B, UC, 0x7b5)
    i.expect(B, UC, 0x7a6).expect(A, UC, 0x7b6)
    # RC on the SRQ stays on IPv4 meanwhile; RC back to IPv4
    i.recv(B, RC_SRQ, 0x7b7, [sge(0, 64)])
    i.send(A, RC_SRQ, 'QHCA_WQE_SEND', 0x7a7, [sge(0, 64)])
    i.expect(B, RC_SRQ, 0x7b7).expect(A, RC_SRQ, 0x7a7)
    i.connect(qp=RC)
    i.recv(B, RC, 0x7b8, [sge(0, 64)])
    i.send(A, RC, 'QHCA_WQE_SEND', 0x7a8, [sge(0, 64)])
    return i.expect(B, RC, 0x7b8).expect(A, RC, 0x7a8)


def ipv6_ud():
    """UD through the AH to the peer's IPv6 GID (the IPv6 header in the GRH
    area), through the IPv4 one, and both on loopback over IPv6."""
    i = Input()
    grh = H['QHCA_GRH_SIZE']
    i.recv(B, UD, 0x8b1, [sge(0, grh + 100)])
    i.recv(B, UD, 0x8b2, [sge(0x1000, grh + 100)])
    i.send(A, UD, 'QHCA_WQE_SEND_WITH_IMM', 0x8a1, [sge(0, 100)], rkey=1)
    i.expect(A, UD, 0x8a1).expect(B, UD, 0x8b1)
    i.send(A, UD, 'QHCA_WQE_SEND', 0x8a2, [sge(0, 100)])
    i.expect(A, UD, 0x8a2).expect(B, UD, 0x8b2)
    # too long for the receive with its GRH area
    i.recv(B, UD, 0x8b3, [sge(0, grh + 50)])
    i.send(A, UD, 'QHCA_WQE_SEND', 0x8a3, [sge(0, 100)], rkey=1)
    i.expect(A, UD, 0x8a3).expect(B, UD, 0x8b3, 'QHCA_CQE_LOC_LEN_ERR')
    # loopback on A over IPv6: RC between its RC QPs, UD to itself
    i.connect(qp=2 | IP6, psn=0x11000000)
    i.recv(A, RC_SRQ, 0x8b4, [sge(0x20000, 4096)])
    i.send(A, RC, 'QHCA_WQE_SEND', 0x8a4, [sge(0, 3000)])
    i.expect(A, RC_SRQ, 0x8b4).expect(A, RC, 0x8a4)
    i.recv(A, UD, 0x8b5, [sge(0x60000, grh + 100)])
    i.send(A, UD, 'QHCA_WQE_SEND', 0x8a5, [sge(0, 100)], rkey=1)
    return i.expect(A, UD, 0x8a5).expect(A, UD, 0x8b5)


def ipv6_hostile_frames():
    """IPv6 frames to B's UD and RC QPs that must be dropped: IPv4-mapped,
    multicast, unspecified, loopback or foreign destinations, spoofed or
    non-unicast sources, another next header, a wrong payload length or
    UDP checksum, a bad version, truncated; each would not fit the receive
    (LOC_LEN_ERR) if taken.  Then frames that are right are taken: any
    traffic class and flow label, a UDP checksum of 0."""
    i = Input()
    grh = H['QHCA_GRH_SIZE']
    ud = dict(to=B, opcode=H['QHCA_ROCE_OP_UD_SEND_ONLY'], qp=UD,
              psn_mode=1, plen=200)
    i.recv(B, UD, 0x9b1, [sge(0, grh + 16)])
    i.recv(B, UD, 0x9b2, [sge(0x1000, grh + 16)])
    bad = [dict(dst=1), dict(dst=2), dict(dst=3), dict(dst=4), dict(dst=5),
           dict(dst=6), dict(dst=7, val=0x1234),
           dict(src=1), dict(src=2), dict(src=3), dict(src=4),
           dict(mangle=1, val=6), dict(mangle=1, val=0),
           dict(mangle=2, val=1000), dict(mangle=2, val=8),
           dict(mangle=3, val=0x1234), dict(mangle=4),
           dict(mangle=7, val=0x40), dict(mangle=6, val=60),
           dict(mangle=6, val=90)]
    for n, ip6 in enumerate(bad):
        ip6.setdefault('tclass', n * 8)
        ip6.setdefault('flow', n * 0x11111)
        i.frame6(ip6, psn=n, **ud)
    i.frame6(dict(), flags=8, psn=30, **ud)
    i.settle(5)
    ud['plen'] = 16
    i.frame6(dict(tclass=0xff, flow=0xfffff), psn=40, **ud)
    i.frame6(dict(tclass=1, flow=1, mangle=3, val=0), psn=41, **ud)
    i.expect(B, UD, 0x9b1).expect(B, UD, 0x9b2)
    # RC: the same against B's RC QP, which is connected over IPv4: an IPv6
    # frame from the peer's IPv6 GID does not match its path either
    i.recv(B, RC, 0x9b3, [sge(0, 16)])
    for n, ip6 in enumerate((dict(), dict(src=1), dict(dst=1),
                             dict(mangle=2, val=0))):
        i.frame6(ip6, to=B, opcode=H['QHCA_ROCE_OP_RC_SEND_ONLY'], qp=RC,
                 psn_mode=1, psn=0, flags=2, plen=64)
    i.settle(5)
    i.send(A, RC, 'QHCA_WQE_SEND', 0x9a3, [sge(0, 16)])
    i.expect(B, RC, 0x9b3).expect(A, RC, 0x9a3)
    i.expect_qp(B, RC, 'QHCA_QPS_RTS')
    # connected over IPv6, the right IPv6 frame is taken
    i.connect(qp=IP6)
    i.recv(B, RC, 0x9b5, [sge(0, 64)])
    i.send(A, RC, 'QHCA_WQE_SEND', 0x9a5, [sge(0, 16)])
    i.expect(B, RC, 0x9b5).expect(A, RC, 0x9a5)
    i.recv(B, RC, 0x9b4, [sge(0, 64)])
    i.frame6(dict(tclass=0x20, flow=0x54321), to=B,
             opcode=H['QHCA_ROCE_OP_RC_SEND_ONLY_IMM'], qp=RC, psn_mode=1,
             psn=0, flags=2, plen=64, imm=0x9b4)
    return i.expect(B, RC, 0x9b4)


def ipv6_mixed_versions():
    """GIDs, AHs and address vectors mixing IPv4 and IPv6, or not unicast:
    refused with ERR_PARAM; the good ones work."""
    i = Input()
    perr = 'QHCA_CMD_ERR_PARAM'
    # ADD_GID: multicast, ::, ::1 refused; link-local and raw IPv6 taken
    for kind in (2, 3, 4):
        i.status_op('GID', perr, dev=A, index=5, kind=kind, lo=1)
    i.status_op('GID', dev=A, index=5, kind=7, lo=0x55)
    i.status_op('GID', dev=A, index=6, kind=8, hi=0x20010db800000000,
                lo=0x1234)
    i.status_op('GID', dev=A, index=6, kind=8, hi=0xff0e000000000000,
                lo=1, status=perr)
    i.status_op('GID', dev=A, index=6, kind=1)
    i.status_op('GID', dev=A, index=5, kind=0, status=None, **{'del': 1})
    # CREATE_AH: IPv4 source to IPv6 destination and back, multicast, ::
    for sgid, dgid in ((0, 0), (1, 1), (1, 3), (1, 4), (0, 2), (0, 7)):
        i.status_op('AV', perr, dev=A, which=1, sgid=sgid, dgid=dgid,
                    val=0x4000)
    # IPv6 multicast from IPv6 (UD multicast, if the device has it)
    i.status_op('AV', None, dev=A, which=1, sgid=1, dgid=2, val=0x4000)
    i.status_op('AV', dev=A, which=1, sgid=1, dgid=0, tclass=0x48,
                flow=0xabcde, val=0x2000)
    i.recv(B, UD, 0xab1, [sge(0, H['QHCA_GRH_SIZE'] + 64)])
    i.send(A, UD, 'QHCA_WQE_SEND', 0xaa1, [sge(0, 64)], rkey=2)
    i.expect(A, UD, 0xaa1).expect(B, UD, 0xab1)
    # MODIFY_QP to RTR with mixed AVs: refused, the QP stays in INIT
    for sgid, dgid in ((0, 0), (1, 1), (1, 2), (1, 3)):
        i.status_op('AV', perr, dev=A, which=0, qp=RC, sgid=sgid,
                    dgid=dgid, val=0x4000)
        i.expect_qp(A, RC, 'QHCA_QPS_INIT')
    # a good one over IPv6 on both sides (CONNECT puts back the PSNs)
    i.status_op('AV', dev=A, which=0, qp=RC, sgid=1, dgid=0, val=0x4000)
    i.expect_qp(A, RC, 'QHCA_QPS_RTS')
    i.connect(qp=IP6)
    i.recv(B, RC, 0xab2, [sge(0, 64)])
    i.send(A, RC, 'QHCA_WQE_SEND', 0xaa2, [sge(0, 64)])
    return i.expect(B, RC, 0xab2).expect(A, RC, 0xaa2)
