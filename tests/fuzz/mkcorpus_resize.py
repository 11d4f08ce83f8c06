# SPDX-License-Identifier: GPL-2.0-or-later
# Copyright (c) 2026 The qhca authors
"""Seeds: REREG_MR, RESIZE_CQ and RESIZE_SRQ."""

import struct

from mkcorpus_format import A, B, H, RC, RC_SRQ, Input, sge


def rereg_mr():
    """REREG_MR of A's MR: rights taken away and given back, a new
    translation (new pages, then the ring area, read remotely), error
    paths (fast-register key, no flag, unknown flag, no such PD, bad
    rights, a page list where there is no RAM) leave it as it was."""
    i = Input()
    rr = H['QHCA_REREG_TRANS']
    i.status_op('REREG', dev=A, what=H['QHCA_REREG_ACCESS'],
                access=H['QHCA_ACCESS_LOCAL_WRITE'])
    i.send(B, RC, 'QHCA_WQE_RDMA_WRITE', 0xbb1, [sge(0, 64)], remote=0x1000)
    i.expect(B, RC, 0xbb1, 'QHCA_CQE_REM_ACCESS_ERR')
    i.connect()
    i.status_op('REREG', dev=A, what=H['QHCA_REREG_ACCESS'], access=0xf)
    i.send(B, RC, 'QHCA_WQE_RDMA_WRITE', 0xbb2, [sge(0, 64)], remote=0x1000)
    i.expect(B, RC, 0xbb2)
    # new pages, 64 KiB
    i.status_op('REREG', dev=A, what=rr, mem=0, length=0x10000)
    i.send(B, RC, 'QHCA_WQE_RDMA_WRITE', 0xbb3, [sge(0, 4096)],
           remote=0x8000)
    i.send(B, RC, 'QHCA_WQE_RDMA_WRITE', 0xbb4, [sge(0, 64)],
           remote=0x10000)
    i.expect(B, RC, 0xbb3).expect(B, RC, 0xbb4, 'QHCA_CQE_REM_ACCESS_ERR')
    i.connect()
    # the ring area (other objects' memory), read from B
    i.status_op('REREG', dev=A, what=rr | H['QHCA_REREG_ACCESS'], mem=2,
                length=0x20000, access=H['QHCA_ACCESS_LOCAL_WRITE'] |
                H['QHCA_ACCESS_REMOTE_READ'])
    i.send(B, RC, 'QHCA_WQE_RDMA_READ', 0xbb5, [sge(0x1000, 0x20000)],
           remote=0)
    i.expect(B, RC, 0xbb5, ms=100)
    # errors
    for st, kw in (('QHCA_CMD_ERR_HANDLE', dict(key=1, what=rr, mem=0,
                                               length=4096)),
                   ('QHCA_CMD_ERR_HANDLE', dict(key=2, what=4, access=1)),
                   ('QHCA_CMD_ERR_PARAM', dict(what=0)),
                   ('QHCA_CMD_ERR_PARAM', dict(what=8 | 4, access=1)),
                   ('QHCA_CMD_ERR_HANDLE', dict(what=2, pd=99)),
                   ('QHCA_CMD_ERR_PARAM', dict(what=4, access=0xc0)),
                   ('QHCA_CMD_ERR_PARAM', dict(what=rr, mem=0, length=0)),
                   (None, dict(what=rr, mem=5, length=4096))):
        i.status_op('REREG', st, dev=A, **kw)
    # back to new pages with every right, then a PD change and back
    i.status_op('REREG', dev=A, what=rr | 4, mem=0, length=1 << 20,
                access=0xf)
    i.send(B, RC, 'QHCA_WQE_RDMA_WRITE', 0xbb6, [sge(0, 8192)],
           remote=0xf0000)
    i.expect(B, RC, 0xbb6)
    i.op('CMD', dev=A, opcode=H['QHCA_CMD_ALLOC_PD'])
    i.status_op('REREG', dev=A, what=2, pd=2)
    i.send(B, RC, 'QHCA_WQE_RDMA_WRITE', 0xbb7, [sge(0, 64)], remote=0)
    i.expect(B, RC, 0xbb7, 'QHCA_CQE_REM_ACCESS_ERR')
    i.connect()
    i.status_op('REREG', dev=A, what=2)
    i.send(B, RC, 'QHCA_WQE_RDMA_WRITE', 0xbb8, [sge(0, 64)], remote=0)
    return i.expect(B, RC, 0xbb8)


def resize_cq():
    """RESIZE_CQ of A's CQ (the one the driver polls) with completions
    held: carried to the new ring in order, the driver follows; error
    paths keep the old ring; the CQ's own pages and the MR's as new
    rings; a CQ the driver does not poll."""
    i = Input()
    for n in range(3):
        i.recv(B, RC, 0xcb0 + n, [sge(0, 64)])
        i.send(A, RC, 'QHCA_WQE_SEND', 0xca0 + n, [sge(0, 64)])
    i.op('PUMP', steps=200)
    i.status_op('RESIZE', dev=A, cq=0, log=9, mem=0)
    for n in range(3):
        i.expect(A, RC, 0xca0 + n).expect(B, RC, 0xcb0 + n)
    for n in range(8):
        i.send(A, RC, 'QHCA_WQE_RDMA_WRITE', 0xcc0 + n, [sge(0, 64)],
               remote=0x1000)
    for n in range(8):
        i.expect(A, RC, 0xcc0 + n)
    for st, kw in (('QHCA_CMD_ERR_PARAM', dict(log=16, mem=0)),
                   ('QHCA_CMD_ERR_PARAM', dict(log=0, mem=0)),
                   ('QHCA_CMD_ERR_HANDLE', dict(cq=2, arg=999, log=6)),
                   ('QHCA_CMD_ERR_HANDLE', dict(cq=3, log=6)),
                   ('QHCA_CMD_ERR_HANDLE', dict(cq=1, log=6)),
                   (None, dict(log=6, mem=1)),
                   (None, dict(log=6, mem=4, arg=0))):
        i.status_op('RESIZE', st, dev=A, **kw)
    i.recv(B, RC, 0xcb8, [sge(0, 64)])
    i.send(A, RC, 'QHCA_WQE_SEND', 0xca8, [sge(0, 64)])
    i.expect(A, RC, 0xca8).expect(B, RC, 0xcb8)
    # too small for what is held: 3 CQEs held, 2 entries
    for n in range(3):
        i.recv(B, RC, 0xcb3 + n, [sge(0, 64)])
        i.send(A, RC, 'QHCA_WQE_SEND', 0xca3 + n, [sge(0, 64)])
    i.op('PUMP', steps=200)
    i.status_op('RESIZE', 'QHCA_CMD_ERR_PARAM', dev=A, log=1, mem=0)
    # pages where there is no RAM: the copy fails, the old ring stays
    i.status_op('RESIZE', 'QHCA_CMD_ERR_DMA', dev=A, log=6, mem=6, arg=1)
    # B (it holds its receives): the MR's pages, 8 KiB pages
    i.status_op('RESIZE', dev=B, log=10, mem=2)
    i.status_op('RESIZE', None, dev=B, log=7, mem=5, arg=1)
    for n in range(3):
        i.expect(A, RC, 0xca3 + n).expect(B, RC, 0xcb3 + n)
    # a CQ the driver does not poll: made by CMD, resized, destroyed
    cq = bytes(16) + bytes([5]) + bytes(11)
    i.op('CMD', dev=A, opcode=H['QHCA_CMD_CREATE_CQ'], fix=3, len=len(cq),
         var=cq)
    i.status_op('RESIZE', dev=A, cq=1, log=7, mem=0)
    i.status_op('RESIZE', dev=A, cq=1, log=3, mem=7)
    i.op('CMD', dev=A, opcode=H['QHCA_CMD_DESTROY_CQ'], len=4,
         var=struct.pack('<I', 2))
    i.status_op('RESIZE', 'QHCA_CMD_ERR_HANDLE', dev=A, cq=1, log=7, mem=0)
    i.recv(B, RC, 0xcb9, [sge(0, 64)])
    i.send(A, RC, 'QHCA_WQE_SEND', 0xca9, [sge(0, 64)])
    return i.expect(A, RC, 0xca9).expect(B, RC, 0xcb9)



SRQ_OP = 4          # RESIZE: cq & 4 resizes the SRQ (op_resize())


def resize_srq():
    """RESIZE_SRQ of B's SRQ (64 entries, the driver's) with receives
    posted: 3 taken by A's SENDs, the 7 not taken carried at their
    indices, 58 more posted past the old size, 65 SENDs take them in
    order; refusals (no room for the 7, bad depths, a reserved byte, no
    such SRQ, pages where there is no RAM) keep the old ring; the SRQ's
    own pages as the new ring."""
    i = Input()
    for n in range(10):
        i.recv(B, RC_SRQ, 0xe00 + n, [sge(n * 64, 64)])
    for n in range(3):
        i.send(A, RC_SRQ, 'QHCA_WQE_SEND', 0xd00 + n, [sge(0x10000, 32)])
    for n in range(3):
        i.expect(A, RC_SRQ, 0xd00 + n).expect(B, RC_SRQ, 0xe00 + n)
    for st, kw in (('QHCA_CMD_ERR_PARAM', dict(log=2, mem=0)),
                   ('QHCA_CMD_ERR_PARAM', dict(log=0, mem=0)),
                   ('QHCA_CMD_ERR_PARAM', dict(log=13, mem=0)),
                   ('QHCA_CMD_ERR_PARAM', dict(cq=SRQ_OP | 8, log=8)),
                   ('QHCA_CMD_ERR_HANDLE', dict(cq=SRQ_OP | 2, arg=99,
                                                log=8)),
                   ('QHCA_CMD_ERR_HANDLE', dict(cq=SRQ_OP | 3, log=8)),
                   ('QHCA_CMD_ERR_HANDLE', dict(cq=SRQ_OP | 1, log=8)),
                   ('QHCA_CMD_ERR_DMA', dict(log=8, mem=6, arg=1)),
                   (None, dict(log=8, mem=1))):
        kw.setdefault('cq', SRQ_OP)
        i.status_op('RESIZE', st, dev=B, **kw)
    # the old ring is still the SRQ's
    i.send(A, RC_SRQ, 'QHCA_WQE_SEND', 0xd03, [sge(0x10000, 32)])
    i.expect(A, RC_SRQ, 0xd03).expect(B, RC_SRQ, 0xe03)
    i.status_op('RESIZE', dev=B, cq=SRQ_OP, log=8, mem=0)
    for n in range(10, 68):
        i.recv(B, RC_SRQ, 0xe00 + n, [sge(n * 64, 64)])
    for first in range(4, 68, 32):
        last = min(first + 32, 68)
        for n in range(first, last):
            i.send(A, RC_SRQ, 'QHCA_WQE_SEND', 0xd00 + n,
                   [sge(0x10000, 32)])
        for n in range(first, last):
            i.expect(A, RC_SRQ, 0xd00 + n).expect(B, RC_SRQ, 0xe00 + n)
    # its own ring's pages (what is carried is copied onto itself)
    i.recv(B, RC_SRQ, 0xe44, [sge(0, 64)])
    i.status_op('RESIZE', dev=B, cq=SRQ_OP, log=8, mem=3)
    i.send(A, RC_SRQ, 'QHCA_WQE_SEND', 0xd44, [sge(0x10000, 32)])
    return i.expect(A, RC_SRQ, 0xd44).expect(B, RC_SRQ, 0xe44)
