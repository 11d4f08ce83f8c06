# SPDX-License-Identifier: GPL-2.0-or-later
# Copyright (c) 2026 The qhca authors
"""Seeds: UC (docs/hardware.md 10.2): the qtests /qhca/uc/* and more."""

from mkcorpus_format import (A, B, H, MR_LEN, RC, UC, UC_SRQ, UD, Input,
                             sge)


def uc_send_write():
    """SEND and RDMA WRITE, with and without immediate, on both UC pairs."""
    i = Input()
    i.recv(B, UC, 0x1b1, [sge(0x10000, 4096)])
    # three packets at MTU 1024
    i.send(A, UC, 'QHCA_WQE_SEND', 0x1a1, [sge(0, 3000)])
    i.expect(A, UC, 0x1a1).expect(B, UC, 0x1b1)
    i.recv(B, UC, 0x1b2, [sge(0x20000, 64)])
    i.send(A, UC, 'QHCA_WQE_SEND_WITH_IMM', 0x1a2, [sge(0, 64)])
    i.expect(A, UC, 0x1a2).expect(B, UC, 0x1b2)
    i.send(A, UC, 'QHCA_WQE_RDMA_WRITE', 0x1a3, [sge(0, 5000)],
           remote=0x100000)
    i.expect(A, UC, 0x1a3)
    # WRITE with immediate: consumes a receive WQE, its buffer untouched
    i.recv(B, UC, 0x1b3, [sge(0, 16)])
    i.send(A, UC, 'QHCA_WQE_RDMA_WRITE_WITH_IMM', 0x1a4, [sge(0, 2500)],
           remote=0x200000)
    i.expect(A, UC, 0x1a4).expect(B, UC, 0x1b3)
    # the other pair, on the SRQ, and back from B
    i.recv(A, UC_SRQ, 0x2b1, [sge(0x30000, 8192)])
    i.send(B, UC_SRQ, 'QHCA_WQE_SEND_WITH_IMM', 0x2a1, [sge(0, 6000)],
           flags=H['QHCA_WQE_SIGNALED'] | H['QHCA_WQE_SOLICITED'])
    i.expect(B, UC_SRQ, 0x2a1).expect(A, UC_SRQ, 0x2b1)
    i.send(B, UC_SRQ, 'QHCA_WQE_SEND', 0x2a2, flags=H['QHCA_WQE_SIGNALED'] |
           H['QHCA_WQE_INLINE'], inline_len=150)
    i.recv(A, UC_SRQ, 0x2b2, [sge(0x40000, 256)])
    i.expect(B, UC_SRQ, 0x2a2, ms=5)
    i.query(A, 'QUERY_QP_STATE', UC).query(B, 'QUERY_QP_STATE', UC_SRQ)
    for dev in (A, B):
        for qp in (UC, UC_SRQ):
            i.expect_qp(dev, qp, 'QHCA_QPS_RTS')
    return i


def uc_lost_packet(srq):
    """A packet of a message lost: that message is dropped, the next one
    lands in the receive WQE it had begun (IBA 9.8.3)."""
    i = Input()
    qp = UC_SRQ if srq else UC
    i.recv(B, qp, 0x3b1, [sge(0x10000, 8192)])
    i.recv(B, qp, 0x3b2, [sge(0x20000, 8192)])
    # 3000 bytes: first, middle, last; the middle (or, on the SRQ, last of
    # a two-packet message) is dropped on the wire
    i.send(A, qp, 'QHCA_WQE_SEND', 0x3a1, [sge(0, 2000 if srq else 3000)])
    i.op('WIRE_MUTATE', idx=1, action=0)
    i.send(A, qp, 'QHCA_WQE_SEND_WITH_IMM', 0x3a2, [sge(0x1000, 100)])
    i.send(A, qp, 'QHCA_WQE_SEND', 0x3a3, [sge(0x2000, 200)])
    for wr in (0x3a1, 0x3a2, 0x3a3):
        i.expect(A, qp, wr)
    i.expect(B, qp, 0x3b1).expect(B, qp, 0x3b2)
    # a WRITE whose first packet is lost: the rest is dropped
    i.send(A, qp, 'QHCA_WQE_RDMA_WRITE', 0x3a4, [sge(0, 4000)],
           remote=0x100000)
    i.op('WIRE_MUTATE', idx=0, action=0)
    i.recv(B, qp, 0x3b3, [sge(0x30000, 64)])
    i.send(A, qp, 'QHCA_WQE_SEND', 0x3a5, [sge(0, 64)])
    i.expect(A, qp, 0x3a4).expect(A, qp, 0x3a5).expect(B, qp, 0x3b3)
    # a lossy and reordering wire for a while: whatever arrives, the QPs
    # stay in RTS
    i.op('WIRE_MODE', **{'from': A}, mode=5, every=3)
    for n in range(6):
        i.recv(B, qp, 0x3c0 + n, [sge(0x40000 + 0x2000 * n, 8192)])
    for n in range(6):
        i.send(A, qp, 'QHCA_WQE_SEND', 0x3d0 + n, [sge(0, 1000 * (n + 1))])
    i.settle(5)
    i.op('WIRE_MODE', **{'from': A}, mode=0, every=0)
    return i.expect_qp(B, qp, 'QHCA_QPS_RTS').expect_qp(A, qp,
                                                         'QHCA_QPS_RTS')


def uc_errors():
    """What RC answers with a NAK UC drops silently; READ and atomics are
    not UC operations."""
    i = Input()
    # no receive WQE (RC: RNR NAK), a bad rkey, out of bounds, no access
    i.send(A, UC, 'QHCA_WQE_SEND', 0x4a1, [sge(0, 100)])
    i.send(A, UC, 'QHCA_WQE_RDMA_WRITE', 0x4a2, [sge(0, 64)], remote=0,
           rkey=2)
    i.send(A, UC, 'QHCA_WQE_RDMA_WRITE', 0x4a3, [sge(0, 200)],
           remote=MR_LEN - 100)
    i.send(A, UC, 'QHCA_WQE_RDMA_WRITE_WITH_IMM', 0x4a4, [sge(0, 64)],
           remote=0, rkey=3)
    for wr in range(0x4a1, 0x4a5):
        i.expect(A, UC, wr)
    i.settle(5)
    i.expect_qp(B, UC, 'QHCA_QPS_RTS')
    # the QP goes on
    i.recv(B, UC, 0x4b1, [sge(0, 64)])
    i.send(A, UC, 'QHCA_WQE_SEND', 0x4a5, [sge(0, 64)])
    i.expect(B, UC, 0x4b1).expect(A, UC, 0x4a5)
    # a receive buffer too small: the responder's own error, QP to ERR
    i.recv(B, UC_SRQ, 0x4b2, [sge(0, 16)])
    i.send(A, UC_SRQ, 'QHCA_WQE_SEND', 0x4a6, [sge(0, 64)])
    i.expect(A, UC_SRQ, 0x4a6).expect(B, UC_SRQ, 0x4b2,
                                      'QHCA_CQE_LOC_LEN_ERR')
    i.expect_qp(B, UC_SRQ, 'QHCA_QPS_ERR')
    # READ, atomics, SEND with invalidate: LOC_QP_OP_ERR, SQE
    i.send(A, UC, 'QHCA_WQE_RDMA_READ', 0x4a7, [sge(0, 64)], remote=0)
    i.expect(A, UC, 0x4a7, 'QHCA_CQE_LOC_QP_OP_ERR')
    i.expect_qp(A, UC, 'QHCA_QPS_SQE')
    i.send(B, UC, 'QHCA_WQE_ATOMIC_FETCH_AND_ADD', 0x4a8, [sge(0, 8)],
           remote=0, add=1)
    i.expect(B, UC, 0x4a8, 'QHCA_CQE_LOC_QP_OP_ERR')
    i.expect_qp(B, UC, 'QHCA_QPS_SQE')
    i.send(A, UC_SRQ, 'QHCA_WQE_SEND_WITH_INV', 0x4a9, [sge(0, 8)], rkey=1)
    i.expect(A, UC_SRQ, 0x4a9, 'QHCA_CQE_LOC_QP_OP_ERR')
    return i.expect_qp(A, UC_SRQ, 'QHCA_QPS_SQE')


def uc_rc_crossed():
    """UC frames to an RC QP and to a UD QP, RC and UD frames to a UC QP:
    dropped.  Each receive WQE is too small for the stranger's 64 bytes, so
    a frame taken shows as LOC_LEN_ERR instead of the 16 bytes that follow."""
    i = Input()
    i.recv(B, RC, 0x5b1, [sge(0, 16)]).recv(B, UC, 0x5b2, [sge(0, 16)])
    i.recv(B, UD, 0x5b3, [sge(0, H['QHCA_GRH_SIZE'] + 16)])
    for op, qp in (('QHCA_ROCE_OP_UC_SEND_ONLY', RC),
                   ('QHCA_ROCE_OP_UC_SEND_FIRST', RC),
                   ('QHCA_ROCE_OP_UC_RDMA_WRITE_ONLY_IMM', RC),
                   ('QHCA_ROCE_OP_RC_SEND_ONLY', UC),
                   ('QHCA_ROCE_OP_RC_RDMA_WRITE_ONLY_IMM', UC),
                   ('QHCA_ROCE_OP_UD_SEND_ONLY', UC),
                   ('QHCA_ROCE_OP_UC_SEND_ONLY', UD)):
        i.op('FRAME', to=B, opcode=H[op], qp=qp, psn_mode=1, psn=0,
             flags=2, dma_len=64, plen=64)
    # a UC message begun by a stranger's first packet, then junk PSNs
    i.op('FRAME', to=B, opcode=H['QHCA_ROCE_OP_UC_SEND_MIDDLE'], qp=UC,
         psn_mode=1, psn=7, plen=1024)
    i.op('FRAME', to=B, opcode=H['QHCA_ROCE_OP_UC_SEND_LAST'], qp=UC,
         psn_mode=0, psn=0x800000, plen=8)
    i.settle(5)
    i.send(A, RC, 'QHCA_WQE_SEND', 0x5a1, [sge(0, 16)])
    i.send(A, UC, 'QHCA_WQE_SEND', 0x5a2, [sge(0, 16)])
    i.send(A, UD, 'QHCA_WQE_SEND', 0x5a3, [sge(0, 16)])
    i.expect(B, RC, 0x5b1).expect(B, UC, 0x5b2).expect(B, UD, 0x5b3)
    for qp in (RC, UC):
        i.expect_qp(B, qp, 'QHCA_QPS_RTS')
    return i


def uc_loopback():
    """Loopback on device A: its two UC QPs connected to each other."""
    i = Input()
    i.connect(qp=8 | 2)
    i.op('WIRE_MODE', **{'from': A}, mode=3, every=1)
    i.recv(A, UC_SRQ, 0x6b1, [sge(0x20000, 4096)])
    i.send(A, UC, 'QHCA_WQE_SEND', 0x6a1, [sge(0, 3000)])
    i.expect(A, UC_SRQ, 0x6b1).expect(A, UC, 0x6a1)
    i.recv(A, UC, 0x6b2, [sge(0, 16)])
    i.send(A, UC_SRQ, 'QHCA_WQE_RDMA_WRITE_WITH_IMM', 0x6a2,
           [sge(0x10000, 65536)], remote=0x200000)
    i.expect(A, UC_SRQ, 0x6a2, ms=100).expect(A, UC, 0x6b2)
    # back to B, at MTU 256
    i.op('WIRE_MODE', **{'from': A}, mode=0, every=0)
    i.connect(qp=8, mtu=1, psn=0x123)
    i.recv(B, UC, 0x6b3, [sge(0, 4096)])
    i.send(A, UC, 'QHCA_WQE_SEND', 0x6a3, [sge(0, 1000)])
    return i.expect(A, UC, 0x6a3).expect(B, UC, 0x6b3)
