# SPDX-License-Identifier: GPL-2.0-or-later
# Copyright (c) 2026 The qhca authors
"""Seeds: RC and UD traffic (SEND and RECV, SRQ, RDMA, atomics, placement,
windows, loopback, RNR and retries, remote and local errors, fast
registration, hostile frames, a lossy wire, resets and MSI-X aimed at the
device)."""

import struct

from mkcorpus_format import A, B, H, MR_LEN, RC, RC_SRQ, UC, UD, Input, sge


def send_recv():
    i = Input()
    i.recv(B, RC, 0xb1, [sge(0, 1500), sge(4000, 4000)])
    i.send(A, RC, 'QHCA_WQE_SEND_WITH_IMM', 0xa1,
           [sge(0, 1000), sge(1000, 2000)])
    i.expect(B, RC, 0xb1).expect(A, RC, 0xa1)
    i.recv(B, RC, 0xb2, [sge(0, 5000)]).recv(B, RC, 0xb3, [sge(0, 5000)])
    i.send(A, RC, 'QHCA_WQE_SEND', 0xa2, flags=H['QHCA_WQE_INLINE'],
           inline_len=100)
    i.send(A, RC, 'QHCA_WQE_SEND', 0xa3, [sge(0, 1000)])
    return i.expect(B, RC, 0xb2).expect(B, RC, 0xb3).expect(A, RC, 0xa3)


def srq():
    i = Input()
    for n in range(3):
        i.recv(B, RC_SRQ, 0x100 + n, [sge(n * 64, 64)])
    i.op('CMD', dev=B, opcode=H['QHCA_CMD_MODIFY_SRQ'], len=8,
         var=struct.pack('<II', 1, 2))
    i.op('POLL', dev=B, max=0, arm=8)
    for n in range(3):
        i.send(A, RC_SRQ, 'QHCA_WQE_SEND_WITH_IMM' if n == 2 else
               'QHCA_WQE_SEND', 1 + n, [sge(n * 4, 4)])
    for n in range(3):
        i.expect(B, RC_SRQ, 0x100 + n)
    return i.expect(A, RC_SRQ, 3)


def write_read(length, name_off=0):
    i = Input()
    i.send(A, RC, 'QHCA_WQE_RDMA_WRITE', 0x11, [sge(0x10000, length)],
           remote=0x200000 + name_off)
    i.expect(A, RC, 0x11, ms=100)
    i.send(A, RC, 'QHCA_WQE_RDMA_READ', 0x12, [sge(0x10000 + length,
                                                   length)],
           remote=0x200000 + name_off)
    i.expect(A, RC, 0x12, ms=100)
    i.recv(B, RC, 0x21, [sge(0x9000, 64)])
    i.send(A, RC, 'QHCA_WQE_RDMA_WRITE_WITH_IMM', 0x13, [sge(0, 2500)],
           remote=0x300000)
    return i.expect(B, RC, 0x21).expect(A, RC, 0x13)


def atomics():
    i = Input()
    i.op('MEM_WRITE', dev=B, region=0, off=0x108, len=8,
         var=struct.pack('<Q', 100))
    i.send(A, RC, 'QHCA_WQE_ATOMIC_FETCH_AND_ADD', 1, [sge(0x300, 8)],
           remote=0x108, add=5)
    i.expect(A, RC, 1)
    i.send(A, RC, 'QHCA_WQE_ATOMIC_CMP_AND_SWP', 2, [sge(0x308, 8)],
           remote=0x108, add=105, swap=7)
    i.send(A, RC, 'QHCA_WQE_ATOMIC_CMP_AND_SWP', 3, [sge(0x310, 8)],
           remote=0x108, add=1, swap=99)
    i.expect(A, RC, 2).expect(A, RC, 3)
    # misaligned: an invalid request, the QP goes to ERR
    i.send(A, RC, 'QHCA_WQE_ATOMIC_FETCH_AND_ADD', 4, [sge(0x300, 8)],
           remote=0x104, add=1)
    i.expect(A, RC, 4, 'QHCA_CQE_REM_INV_REQ_ERR')
    return i.expect_qp(A, RC, 'QHCA_QPS_ERR')


def placement():
    """IBA 1.5 memory placement: ATOMIC WRITE and FLUSH on a QP with the
    global-flush right, then the refused ones: a FLUSH frame with reserved
    FETH bits, a misaligned ATOMIC WRITE."""
    i = Input()
    i.connect(access=0x1e)
    aw = struct.unpack('<Q', b'ATOMWRIT')[0]
    i.send(A, RC, 'QHCA_WQE_ATOMIC_WRITE', 1, remote=0x108, add=aw)
    i.expect(A, RC, 1)
    # a range (FETH 1: global, range), then the whole MR (0x11)
    i.send(A, RC, 'QHCA_WQE_FLUSH', 2, remote=0, add=4096, swap=1 << 32)
    i.send(A, RC, 'QHCA_WQE_FLUSH', 3, remote=0x20, add=0, swap=0x11 << 32)
    i.expect(A, RC, 2).expect(A, RC, 3)
    # persistence is never granted: a remote access error
    i.send(A, RC, 'QHCA_WQE_FLUSH', 4, remote=0, add=64, swap=2 << 32)
    i.expect(A, RC, 4, 'QHCA_CQE_REM_ACCESS_ERR')
    i.expect_qp(A, RC, 'QHCA_QPS_ERR')
    i.connect(access=0x1e)
    # a FLUSH frame with reserved FETH bits: NAKed, B's QP to ERR
    i.op('FRAME', to=B, opcode=0x1c, qp=RC, psn_mode=0, psn=0xfffff0, flags=2,
         dma_len=64, compare=0x101)
    i.settle(20)
    i.expect_qp(B, RC, 'QHCA_QPS_ERR')
    i.connect(access=0x1e)
    # misaligned ATOMIC WRITE: an invalid request
    i.send(A, RC, 'QHCA_WQE_ATOMIC_WRITE', 5, remote=0x104, add=aw)
    i.expect(A, RC, 5, 'QHCA_CQE_REM_INV_REQ_ERR')
    return i.expect_qp(A, RC, 'QHCA_QPS_ERR')


def windows():
    """Memory windows (the new key's variant is the
    wr_id's low byte): B allocates a type 1 window, binds
    it to 512 bytes of its MR for remote write, A writes through it, then
    past its end (refused); a type 2 window, bound and invalidated."""
    i = Input()
    i.op('CMD', dev=B, opcode=H['QHCA_CMD_ALLOC_MW'], len=8,
         var=struct.pack('<IB3x', 1, H['QHCA_MW_TYPE_1']))
    i.send(B, RC, 'QHCA_WQE_BIND_MW', 0x31, remote=0x100, add=512,
           swap=H['QHCA_ACCESS_REMOTE_WRITE'])
    i.expect(B, RC, 0x31)
    i.send(A, RC, 'QHCA_WQE_RDMA_WRITE', 0x32, [sge(0, 64)], remote=0x100,
           rkey=0x7f)
    i.expect(A, RC, 0x32)
    # LOCAL_INV of a type 1 window: refused locally
    i.send(B, RC, 'QHCA_WQE_LOCAL_INV', 0x33, rkey=0x7f)
    i.expect(B, RC, 0x33, 'QHCA_CQE_LOC_PROT_ERR')
    i.connect()
    i.op('CMD', dev=B, opcode=H['QHCA_CMD_ALLOC_MW'], len=8,
         var=struct.pack('<IB3x', 1, H['QHCA_MW_TYPE_2']))
    i.send(B, RC, 'QHCA_WQE_BIND_MW', 0x34, remote=0, add=4096,
           swap=H['QHCA_ACCESS_REMOTE_WRITE'] | H['QHCA_ACCESS_REMOTE_READ'])
    i.expect(B, RC, 0x34)
    i.send(A, RC, 'QHCA_WQE_RDMA_READ', 0x35, [sge(0, 64)], remote=0x200,
           rkey=0x7f)
    i.expect(A, RC, 0x35)
    i.send(B, RC, 'QHCA_WQE_LOCAL_INV', 0x36, rkey=0x7f)
    i.expect(B, RC, 0x36)
    # through the window no more: a remote access error
    return bad_remote_more(i, 0x100, 'QHCA_WQE_RDMA_WRITE', rkey=0x7f)


def bad_remote_more(i, remote, opcode, rkey):
    i.send(A, RC, opcode, 0xe1, [sge(0, 16)], remote=remote, rkey=rkey)
    i.expect(A, RC, 0xe1, 'QHCA_CQE_REM_ACCESS_ERR')
    return i.expect_qp(A, RC, 'QHCA_QPS_ERR')


def ud():
    i = Input()
    i.recv(B, UD, 0x77, [sge(0, 140)])
    # a wrong Q_Key is dropped without a completion at B
    i.send(A, UD, 'QHCA_WQE_SEND', 0x60, [sge(0, 100)], remote=0x4321)
    i.expect(A, UD, 0x60)
    i.send(A, UD, 'QHCA_WQE_SEND_WITH_IMM', 0x61, [sge(0, 100)])
    return i.expect(A, UD, 0x61).expect(B, UD, 0x77)


def loopback():
    """Loopback on device A: RC between its two RC QPs, UD to itself."""
    i = Input()
    i.connect(qp=2)
    i.recv(A, RC_SRQ, 0x51, [sge(0x20000, 4096)])
    i.send(A, RC, 'QHCA_WQE_SEND', 0x41, [sge(0, 3000)])
    i.expect(A, RC_SRQ, 0x51).expect(A, RC, 0x41)
    i.send(A, RC, 'QHCA_WQE_RDMA_WRITE', 0x42, [sge(0x10000, 65536)],
           remote=0x200000)
    i.expect(A, RC, 0x42, ms=100)
    i.send(A, RC, 'QHCA_WQE_RDMA_READ', 0x43, [sge(0x40000, 65536)],
           remote=0x200000)
    i.expect(A, RC, 0x43, ms=100)
    i.recv(A, UD, 0x77, [sge(0x60000, 140)])
    i.send(A, UD, 'QHCA_WQE_SEND', 0x60, [sge(0, 100)], remote=0x4321)
    i.expect(A, UD, 0x60)
    i.send(A, UD, 'QHCA_WQE_SEND_WITH_IMM', 0x61, [sge(0, 100)])
    return i.expect(A, UD, 0x61).expect(A, UD, 0x77)


def rnr():
    i = Input()
    i.connect(rnr_retry=2)
    i.send(A, RC, 'QHCA_WQE_SEND', 0x31, [sge(0, 10)])
    i.expect(A, RC, 0x31, 'QHCA_CQE_RNR_RETRY_EXC_ERR', ms=100)
    i.connect(rnr_retry=7)
    i.send(A, RC, 'QHCA_WQE_SEND', 0x32, [sge(0, 10)])
    i.op('ADVANCE', exp=22)
    i.recv(B, RC, 0x33, [sge(0, 10)])
    return i.expect(B, RC, 0x33, ms=100).expect(A, RC, 0x32, ms=100)


def retry_exceeded():
    i = Input()
    i.connect(retry=3)
    i.op('WIRE_MODE', **{'from': A}, mode=3, every=1)
    i.send(A, RC, 'QHCA_WQE_SEND', 0x99, [sge(0, 100)])
    i.expect(A, RC, 0x99, 'QHCA_CQE_RETRY_EXC_ERR', ms=200)
    return i.expect_qp(A, RC, 'QHCA_QPS_ERR')


def bad_remote(remote, length, opcode, rkey=0, access=0xe):
    i = Input()
    if access != 0xe:
        i.connect(access=access)
    i.send(A, RC, opcode, 0xe1, [sge(0, length)], remote=remote, rkey=rkey)
    i.send(A, RC, 'QHCA_WQE_SEND', 0xe2, [sge(0, length)])
    i.expect(A, RC, 0xe1, 'QHCA_CQE_REM_ACCESS_ERR')
    i.expect(A, RC, 0xe2, 'QHCA_CQE_WR_FLUSH_ERR')
    return i.expect_qp(A, RC, 'QHCA_QPS_ERR').expect_qp(B, RC,
                                                        'QHCA_QPS_ERR')


def bad_wqe():
    i = Input()
    i.op('SEND', dev=A, qp=RC, opcode=0x55, flags=1, nsge=1,
         sge=[sge(0, 16)], imm=0xd1)
    i.send(A, RC, 'QHCA_WQE_SEND', 0xd2, [sge(0, 16)])
    i.expect(A, RC, 0xd1, 'QHCA_CQE_LOC_QP_OP_ERR')
    i.expect(A, RC, 0xd2, 'QHCA_CQE_WR_FLUSH_ERR')
    # 13 SGEs do not fit the 256-byte WQEs of the other RC QP
    i.op('SEND', dev=A, qp=RC_SRQ, opcode=H['QHCA_WQE_SEND'], flags=1,
         nsge=13, sge=[sge(0, 8)] * 3, imm=0xd4)
    return i.expect(A, RC_SRQ, 0xd4, 'QHCA_CQE_LOC_QP_OP_ERR')


def local_prot():
    i = Input()
    i.send(A, RC, 'QHCA_WQE_SEND', 0xc1, [sge(MR_LEN - 100, 200)])
    i.expect(A, RC, 0xc1, 'QHCA_CQE_LOC_PROT_ERR')
    return i.expect_qp(A, RC, 'QHCA_QPS_ERR')


def remote_errors():
    i = Input()
    i.recv(B, RC, 0xf1, [sge(0, 100)])
    i.send(A, RC, 'QHCA_WQE_SEND', 0xf2, [sge(0, 200)])
    i.expect(B, RC, 0xf1, 'QHCA_CQE_LOC_LEN_ERR')
    i.expect(A, RC, 0xf2, 'QHCA_CQE_REM_INV_REQ_ERR')
    # a receive WQE with a bad lkey: remote operation error
    i.recv(B, RC_SRQ, 0xf3, [sge(0, 100, key=2)])
    i.send(A, RC_SRQ, 'QHCA_WQE_SEND', 0xf4, [sge(0, 50)])
    i.expect(B, RC_SRQ, 0xf3, 'QHCA_CQE_LOC_PROT_ERR')
    return i.expect(A, RC_SRQ, 0xf4, 'QHCA_CQE_REM_OP_ERR')


def fast_reg():
    i = Input()
    # B registers two pages of its fast-register MR, variant 2, access
    # LOCAL_WRITE | REMOTE_WRITE (the low bits of the wr_id)
    i.op('SEND', dev=B, qp=RC, opcode=H['QHCA_WQE_REG_MR'], flags=1,
         nsge=2, remote=8192, add=2, imm=0x23)
    i.expect(B, RC, 0x23)
    i.send(A, RC, 'QHCA_WQE_RDMA_WRITE', 0x42, [sge(0, 256)],
           remote=4096 - 100, rkey=1)
    i.expect(A, RC, 0x42)
    i.recv(B, RC, 0x43, [sge(0, 64)])
    i.send(A, RC, 'QHCA_WQE_SEND_WITH_INV', 0x44, [sge(0, 8)], rkey=1)
    i.expect(B, RC, 0x43).expect(A, RC, 0x44)
    i.send(A, RC, 'QHCA_WQE_RDMA_WRITE', 0x45, [sge(0, 16)], rkey=1)
    i.expect(A, RC, 0x45, 'QHCA_CQE_REM_ACCESS_ERR')
    # LOCAL_INV of an MR that is not fast-register fails locally
    i.op('SEND', dev=B, qp=RC_SRQ, opcode=H['QHCA_WQE_LOCAL_INV'], flags=1,
         rkey=0, imm=0x46)
    return i.expect(B, RC_SRQ, 0x46, 'QHCA_CQE_LOC_PROT_ERR')


def solicited():
    i = Input()
    i.recv(B, RC, 0, [sge(0, 64)]).recv(B, RC, 1, [sge(64, 64)])
    i.op('POLL', dev=B, max=0, arm=2 | 4)
    i.send(A, RC, 'QHCA_WQE_SEND', 1, [sge(0, 8)])
    i.expect(A, RC, 1)
    i.send(A, RC, 'QHCA_WQE_SEND', 2, [sge(0, 8)],
           flags=H['QHCA_WQE_SIGNALED'] | H['QHCA_WQE_SOLICITED'])
    return i.expect(A, RC, 2).expect(B, RC, 0).expect(B, RC, 1)


def hostile_frames():
    i = Input()
    i.recv(B, RC, 1, [sge(0, 64)]).recv(B, RC, 2, [sge(0, 64)])
    i.send(A, RC, 'QHCA_WQE_SEND', 1, [sge(0, 32)])
    i.expect(B, RC, 1).expect(A, RC, 1)
    send_only = H['QHCA_ROCE_OP_RC_SEND_ONLY']
    # the last SEND again with a bad ICRC, then as a duplicate
    i.op('FRAME', to=B, opcode=send_only, qp=RC, psn_mode=1,
         psn=0xffffffff, flags=8, plen=32)
    i.op('FRAME', to=B, opcode=send_only, qp=RC, psn_mode=1,
         psn=0xffffffff, flags=32, plen=32)
    i.op('FRAME', to=B, opcode=send_only, qp=RC, psn_mode=1,
         psn=0xffffffff, flags=4, plen=32)
    for n in range(6):
        junk = bytes((n * 37 + k * 11) & 0xff for k in range(20 + 23 * n))
        i.op('FRAME_RAW', to=B | 2, len=len(junk), var=junk)
    i.op('FRAME', to=B, opcode=send_only, qp=RC, psn_mode=1,
         psn=0xffffffff, plen=32)
    i.op('FRAME', to=B, opcode=0x1f, qp=RC, psn_mode=1, plen=0)
    i.settle(5)
    i.send(A, RC, 'QHCA_WQE_SEND', 2, [sge(0, 32)])
    return i.expect(B, RC, 2).expect(A, RC, 2)


def congestion():
    """ECN and CNPs (hw/qhca-cc.c): requests marked CE (B answers with
    CNPs), CNPs to A's RC QP (taken), to its UC and UD QPs and with no
    reserved bytes (ignored or taken), then traffic goes on."""
    i = Input()
    i.recv(B, RC, 1, [sge(0, 64)]).recv(B, RC, 2, [sge(0, 64)])
    i.send(A, RC, 'QHCA_WQE_SEND', 1, [sge(0, 32)])
    i.expect(B, RC, 1).expect(A, RC, 1)
    send_only = H['QHCA_ROCE_OP_RC_SEND_ONLY']
    cnp = H['QHCA_ROCE_OP_CNP']
    # the last SEND again, marked CE: a duplicate, and a CNP back
    i.op('FRAME', to=B, opcode=send_only, qp=RC, psn_mode=1,
         psn=0xffffffff, flags=64 | 2, plen=32)
    for qp in (RC, UC, UD, RC_SRQ):
        i.op('FRAME', to=A, opcode=cnp, qp=qp, psn_mode=0, psn=0,
             flags=0, plen=16)
    i.op('FRAME', to=A, opcode=cnp, qp=RC, psn_mode=0, psn=0, flags=64,
         plen=0)
    i.op('FRAME', to=A, opcode=cnp, qp=RC, psn_mode=0, psn=0, flags=4,
         plen=16)
    for n in range(8):
        i.send(A, RC, 'QHCA_WQE_RDMA_WRITE', 10 + n, [sge(0, 4096)],
               remote=0x200000 + 0x1000 * n)
    i.op('FRAME', to=A, opcode=cnp, qp=RC, psn_mode=0, psn=0, plen=16)
    i.settle(5)
    i.send(A, RC, 'QHCA_WQE_SEND', 2, [sge(0, 32)])
    return i.expect(B, RC, 2).expect(A, RC, 2)


def lossy(mode, every, count=24, every_b=0):
    i = Input()
    i.op('WIRE_MODE', **{'from': A}, mode=mode, every=every)
    if every_b:
        i.op('WIRE_MODE', **{'from': B}, mode=mode, every=every_b)
    for n in range(count):
        i.recv(B, RC, 0x1000 + n, [sge(4 * n, 4)])
    for n in range(count):
        i.send(A, RC, 'QHCA_WQE_SEND', n + 1, [sge(4 * n, 4)])
    for n in range(count):
        i.expect(B, RC, 0x1000 + n, ms=200)
    for n in range(count):
        i.expect(A, RC, n + 1, ms=200)
    return i


def lossy_rdma():
    i = Input()
    i.op('WIRE_MODE', **{'from': B}, mode=5, every=7)
    i.op('WIRE_MODE', **{'from': A}, mode=5, every=7)
    i.send(A, RC, 'QHCA_WQE_RDMA_WRITE', 1, [sge(0, 256 << 10)],
           remote=0x100000)
    i.send(A, RC, 'QHCA_WQE_RDMA_READ', 2, [sge(0x100000, 256 << 10)],
           remote=0x100000)
    i.expect(A, RC, 1, ms=250).expect(A, RC, 2, ms=250)
    for n in range(8):
        i.send(A, RC, 'QHCA_WQE_ATOMIC_FETCH_AND_ADD', 10 + n,
               [sge(0x200000 + 8 * n, 8)], remote=0, add=1)
    for n in range(8):
        i.expect(A, RC, 10 + n, ms=250)
    return i


def read_pieces_rd_atomic(loss):
    """A 256 KiB READ (asked for in pieces of half a window) followed at
    once by atomics, with max_rd_atomic = max_dest_rd_atomic = 4: the
    requester counts the READ once, the responder each piece"""
    i = Input()
    if loss:
        i.op('WIRE_MODE', **{'from': B}, mode=5, every=7)
        i.op('WIRE_MODE', **{'from': A}, mode=5, every=7)
    i.send(A, RC, 'QHCA_WQE_RDMA_READ', 2, [sge(0x100000, 256 << 10)],
           remote=0x100000)
    for n in range(4):
        i.send(A, RC, 'QHCA_WQE_ATOMIC_FETCH_AND_ADD', 10 + n,
               [sge(0x200000 + 8 * n, 8)], remote=0, add=1)
    i.expect(A, RC, 2, ms=250)
    for n in range(4):
        i.expect(A, RC, 10 + n, ms=250)
    return i


def reads_in_flight():
    i = Input()
    i.op('WIRE_MODE', **{'from': B}, mode=5, every=7)
    for n in range(8):
        i.send(A, RC, 'QHCA_WQE_RDMA_READ', n, [sge((n % 4) << 18, 64 << 10)],
               remote=0x200000)
    for n in range(8):
        i.expect(A, RC, n, ms=250)
    return i


def mix():
    i = Input()
    i.connect(mtu=1)
    i.recv(B, RC, 1, [sge(0, 8192)]).recv(B, RC, 2, [sge(0, 8192)])
    i.send(A, RC, 'QHCA_WQE_SEND', 1, [sge(0, 1000)])
    i.send(A, RC, 'QHCA_WQE_SEND_WITH_IMM', 2, [sge(0, 100)])
    i.send(A, RC, 'QHCA_WQE_RDMA_WRITE', 3, [sge(0, 4000)], remote=1000)
    i.send(A, RC, 'QHCA_WQE_RDMA_READ', 4, [sge(4096, 1500)], remote=1000)
    i.send(A, RC, 'QHCA_WQE_ATOMIC_FETCH_AND_ADD', 5, [sge(6000, 8)],
           remote=8, add=1)
    i.send(A, RC, 'QHCA_WQE_ATOMIC_CMP_AND_SWP', 6, [sge(6000, 8)],
           remote=8)
    i.expect(B, RC, 1).expect(B, RC, 2)
    for n in range(1, 7):
        i.expect(A, RC, n)
    return i


def reset_mid_transfer():
    i = Input()
    i.send(A, RC, 'QHCA_WQE_RDMA_WRITE', 0x50, [sge(0, 1 << 20)],
           remote=0x100000)
    i.op('PUMP', steps=3)
    i.op('RESET', dev=B, kind=2)
    i.settle(20)
    i.recv(B, RC, 0x51, [sge(0, 64)])
    i.send(A, RC, 'QHCA_WQE_SEND', 0x52, [sge(0, 64)])
    i.expect(B, RC, 0x51).expect(A, RC, 0x52)
    # and a device reset that nobody recovers from
    i.send(A, RC, 'QHCA_WQE_RDMA_WRITE', 0x53, [sge(0, 1 << 20)],
           remote=0x100000)
    i.op('PUMP', steps=2)
    i.op('RESET', dev=A, kind=0)
    return i.settle(20)


def msix_doorbell():
    """Vector 1 (the EQ's) aimed at the EQ doorbell: it re-arms itself."""
    i = Input()
    i.op('MSIX', dev=B, vector=1, kind=2, off=H['QHCA_DB_EQ'],
         data=1 | H['QHCA_DB_EQ_ARM'])
    i.op('MSIX', dev=A, vector=0, kind=3, off=0x3ff000, data=0xdeadbeef)
    i.recv(B, RC, 7, [sge(0, 64)])
    i.send(A, RC, 'QHCA_WQE_SEND', 8, [sge(0, 64)])
    return i.expect(B, RC, 7).expect(A, RC, 8)
