# SPDX-License-Identifier: GPL-2.0-or-later
# Copyright (c) 2026 The qhca authors
"""Seeds: commands (object life cycles, bad fields, handles and headers,
a CQ on the device's own BAR) and queries."""

import struct

from mkcorpus_format import (A, B, H, HX_REG_BAR, QPN_CMD, RC, RC_SRQ,
                             UC, UC_SRQ, UD, Input, sge)


def commands():
    """Object life cycles through CMD with page lists the harness fills."""
    i = Input()
    cq = struct.pack('<QIBBH', 0, 0, 0, 0, 0) + bytes([6, 0, 0, 0]) + \
        struct.pack('<III', 1, 0, 0)
    i.op('CMD', dev=A, opcode=H['QHCA_CMD_CREATE_CQ'], fix=3, len=len(cq),
         var=cq)
    qp = bytes([H['QHCA_QPT_RC'], 4, 4, 7, 6, 0]) + struct.pack(
        '<HIIIIII', 0, 1, 1, 1, 0xffffffff, 0, 64) + bytes(32)
    i.op('CMD', dev=A, opcode=H['QHCA_CMD_CREATE_QP'], fix=3, len=len(qp),
         var=qp)
    i.op('CMD', dev=A, opcode=H['QHCA_CMD_QUERY_DEVICE'])
    i.op('CMD', dev=A, opcode=H['QHCA_CMD_QUERY_PORT'])
    i.op('CMD', dev=A, opcode=H['QHCA_CMD_ALLOC_PD'])
    mr = struct.pack('<IIQQ', 1, 0xf, 0x1234, 3 * 4096) + bytes(16) + \
        struct.pack('<II', 0, 5)
    i.op('CMD', dev=A, opcode=H['QHCA_CMD_REG_MR'], fix=3, len=len(mr),
         var=mr)
    phys = struct.pack('<IIQQ', 1, 0xf, 0x900000, 8192) + bytes(16) + \
        struct.pack('<II', H['QHCA_MR_PHYS'], 6)
    i.op('CMD', dev=A, opcode=H['QHCA_CMD_REG_MR'], fix=2, len=len(phys),
         var=phys)
    ah = struct.pack('<IBBBBI', 1, 0, 64, 0, 0, 0) + bytes(8) + bytes(
        [0] * 10 + [0xff, 0xff, 198, 18, 0, 2])
    i.op('CMD', dev=A, opcode=H['QHCA_CMD_CREATE_AH'], fix=2, len=len(ah),
         var=ah)
    for op, handle in (('QHCA_CMD_DESTROY_QP', QPN_CMD),
                       ('QHCA_CMD_DESTROY_CQ', 2),
                       ('QHCA_CMD_DESTROY_AH', 2), ('QHCA_CMD_DEALLOC_PD', 2),
                       ('QHCA_CMD_QUERY_QP', 2), ('QHCA_CMD_QUERY_SRQ', 1),
                       ('QHCA_CMD_DESTROY_EQ', 1)):
        i.op('CMD', dev=A, opcode=H[op], len=8, var=struct.pack('<II',
                                                                handle, 0))
    i.op('CMD', dev=A, opcode=0x77, len=4, var=b'\x01\x02\x03\x04')
    i.op('REG_WRITE', dev=A, off=H['QHCA_REG_CMDQ_BASE_LO'], val=0x5000)
    i.op('REG_READ', dev=A, off=H['QHCA_REG_STAT_GUEST_ERRORS'])
    i.op('DB_WRITE', dev=A, page=3, off=H['QHCA_DB_CQ_ARM'], val=1)
    i.op('LINK', dev=B, up=0).op('LINK', dev=B, up=1)
    # the device still works
    i.recv(B, RC, 0x61, [sge(0, 64)])
    i.send(A, RC, 'QHCA_WQE_SEND', 0x62, [sge(0, 64)])
    return i.expect(B, RC, 0x61).expect(A, RC, 0x62)


def pbl(addr=0, n=1, levels=1, shift=12):
    return struct.pack('<QIBBH', addr, n, levels, shift, 0)


def commands_bad():
    """Commands with bad fields, handles and headers (qtest /qhca/cmd/bad,
    pd-mr, eq-cq, qp-create-bad, srq-ah)."""
    i = Input()

    def cmd(op, payload=b'', fix=0, dev=A):
        i.op('CMD', dev=dev, opcode=H[op] if isinstance(op, str) else op,
             fix=fix, len=len(payload), var=payload)

    cq_tail = bytes([6, 0, 0, 0]) + struct.pack('<III', 1, 0, 0)
    for desc in (pbl(0x120001), pbl(0x120000, 1, 1, 11),
                 pbl(0x120000, 1, 3), pbl(0x120000, 0),
                 pbl(0x120000, 1, 1, 31), pbl(0x120000, 600, 1),
                 pbl(0x120000, 300000, 2), pbl(0xdead0000000, 1),
                 pbl(HX_REG_BAR, 1), pbl(0x120000, 2, 2)):
        cmd('QHCA_CMD_CREATE_CQ', desc + cq_tail, fix=2)
    cmd('QHCA_CMD_CREATE_EQ', pbl() + bytes([6, 0, 0, 0]) +
        struct.pack('<I', 0), fix=1)
    cmd('QHCA_CMD_CREATE_EQ', pbl() + bytes([6, 0, 0, 0]) +
        struct.pack('<I', 16), fix=1)
    cmd('QHCA_CMD_CREATE_EQ', pbl() + bytes([7, 0, 0, 0]) +
        struct.pack('<I', 2), fix=1)
    for max_pages in (0, 600, 16):
        cmd('QHCA_CMD_ALLOC_MR', struct.pack('<IIII', 1, max_pages, 3, 0))
    mr = struct.pack('<IIQQ', 1, 0x1f, 0x1000, 4096) + pbl() + \
        struct.pack('<II', 0, 1)
    cmd('QHCA_CMD_REG_MR', mr, fix=1)
    mr = struct.pack('<IIQQ', 1, 0xf, 0xfffffffffffff000, 0x2000) + pbl() + \
        struct.pack('<II', 0, 1)
    cmd('QHCA_CMD_REG_MR', mr, fix=1)
    mr = struct.pack('<IIQQ', 1, 0xf, 0x1000, 4096) + pbl(0, 1, 1, 40) + \
        struct.pack('<II', 0, 0x100)
    cmd('QHCA_CMD_REG_MR', mr, fix=1)
    mr = struct.pack('<IIQQ', 1, 0xf, 0, 1 << 33) + bytes(16) + \
        struct.pack('<II', H['QHCA_MR_PHYS'], 9)
    cmd('QHCA_CMD_REG_MR', mr)
    # GSI QPs: one only; a QP on an SRQ of another PD; bad geometry
    qp = bytes([H['QHCA_QPT_GSI'], 4, 4, 7, 6, 1]) + struct.pack(
        '<HIIIIII', 0, 1, 1, 1, 0xffffffff, 0, 0) + bytes(32)
    cmd('QHCA_CMD_CREATE_QP', qp, fix=1)
    cmd('QHCA_CMD_CREATE_QP', qp, fix=1)
    for geo in ((4, 4, 5, 6), (4, 4, 12, 6), (13, 4, 7, 6), (4, 4, 6, 4)):
        qp = bytes([H['QHCA_QPT_UD']] + list(geo) + [0]) + struct.pack(
            '<HIIIIII', 0, 1, 1, 1, 0xffffffff, 0, 64) + bytes(32)
        cmd('QHCA_CMD_CREATE_QP', qp, fix=1)
    qp = bytes([H['QHCA_QPT_RC'], 4, 0, 7, 6, 0]) + struct.pack(
        '<HIIIIII', 0, 1, 1, 1, 1, 0, 0) + bytes(32)
    cmd('QHCA_CMD_CREATE_QP', qp, fix=1)
    # modify with every kind of bad attribute
    attr = bytearray(64)
    attr[0] = H['QHCA_QPS_RTS']
    for mask in (0x2, 0x1 | 0x100, 0x1 | 0x200, 0xffffffff, 0x1 | 0x80):
        attr[1] = 5
        attr[2] = 7
        attr[3] = 40
        attr[9] = 20
        cmd('QHCA_CMD_MODIFY_QP', struct.pack('<II', 2, mask) + bytes(attr))
    cmd('QHCA_CMD_MODIFY_QP', struct.pack('<II', 4, 0x1) + bytes(
        [H['QHCA_QPS_SQD']]) + bytes(63))
    cmd('QHCA_CMD_CREATE_SRQ', pbl() + struct.pack('<IIBBHI', 1, 0, 4, 6, 0,
                                                   16), fix=1)
    cmd('QHCA_CMD_MODIFY_SRQ', struct.pack('<II', 1, 64))
    cmd('QHCA_CMD_CREATE_AH', struct.pack('<IBBBBI', 1, 16, 0, 0, 0, 1 << 20)
        + bytes(24))
    cmd('QHCA_CMD_ADD_GID', struct.pack('<II', 16, 0) + bytes(16))
    cmd('QHCA_CMD_DEL_GID', struct.pack('<II', 5, 0) + bytes(16))
    for op, handle in (('QHCA_CMD_DEREG_MR', 0x112), ('QHCA_CMD_DEREG_MR', 0),
                       ('QHCA_CMD_DESTROY_CQ', 1), ('QHCA_CMD_DEALLOC_PD', 1),
                       ('QHCA_CMD_DESTROY_SRQ', 1), ('QHCA_CMD_QUERY_QP', 999),
                       ('QHCA_CMD_DESTROY_AH', 4096), ('QHCA_CMD_DESTROY_EQ',
                                                      0)):
        cmd(op, struct.pack('<II', handle, 0))
    # bad headers: flags, a response across a page, where there is no RAM,
    # on the command queue itself
    for h in range(1, 8):
        cmd('QHCA_CMD_QUERY_DEVICE', fix=h << 2)
    cmd('QHCA_CMD_QUERY_QP', struct.pack('<II', 2, 0), fix=5 << 2)
    # the fast-register MR deregistered (any variant), the MR itself
    cmd('QHCA_CMD_DEREG_MR', struct.pack('<II', 0x2ff, 0), dev=B)
    cmd('QHCA_CMD_DEREG_MR', struct.pack('<II', 0x111, 0), dev=B)
    # B's MR is gone: A's WRITE into it fails
    i.send(A, RC, 'QHCA_WQE_RDMA_WRITE', 0x71, [sge(0, 64)], remote=0)
    i.expect(A, RC, 0x71, 'QHCA_CQE_REM_ACCESS_ERR')
    # and A still answers commands
    cmd('QHCA_CMD_QUERY_PORT')
    return i.expect_qp(A, RC, 'QHCA_QPS_ERR')


def ud_qp_rts(i, dev, qpn):
    """RESET -> INIT -> RTR -> RTS of a UD QP made by CMD."""
    attr = bytearray(64)
    attr[0] = H['QHCA_QPS_INIT']
    attr[16:20] = struct.pack('<I', 0x1234)
    for state, mask in ((H['QHCA_QPS_INIT'], 0x1 | 0x10 | 0x20 | 0x40),
                        (H['QHCA_QPS_RTR'], 0x1),
                        (H['QHCA_QPS_RTS'], 0x1 | 0x10000)):
        attr[0] = state
        i.op('CMD', dev=dev, opcode=H['QHCA_CMD_MODIFY_QP'], len=72,
             var=struct.pack('<II', qpn, mask) + bytes(attr))


def cq_on_own_bar():
    """A CQ whose ring is the device's own registers (BAR0): its CQEs would
    write CTRL; and an MR over BAR0 the peer writes into."""
    i = Input()
    # a page list at the end of the ring area naming BAR0
    i.op('MEM_WRITE', dev=A, region=1, off=0x2e0000, len=8,
         var=struct.pack('<Q', HX_REG_BAR))
    cq = pbl(0x110000 + 0x2e0000) + bytes([7, 0, 0, 0]) + \
        struct.pack('<III', 1, 0, 0)
    i.op('CMD', dev=A, opcode=H['QHCA_CMD_CREATE_CQ'], fix=2, len=len(cq),
         var=cq)
    # a UD QP on it (the first slot after the driver's own QPs), in RTS,
    # sending to B
    qp = bytes([H['QHCA_QPT_UD'], 4, 4, 8, 7, 1]) + struct.pack(
        '<HIIIIII', 0, 1, 2, 2, 0xffffffff, 0, 64) + bytes(32)
    i.op('CMD', dev=A, opcode=H['QHCA_CMD_CREATE_QP'], fix=1, len=len(qp),
         var=qp)
    ud_qp_rts(i, A, QPN_CMD)
    i.op('POLL', dev=A, max=0, arm=1 | 4 | 8)
    i.recv(B, UD, 0x81, [sge(0, 256)])
    i.send(A, 5, 'QHCA_WQE_SEND', 0x82, [sge(0, 64)])
    i.settle(5)
    i.expect(B, UD, 0x81, ms=20)
    # a physical MR over BAR0 on B, written by A
    # (its key is 0x300: index 3, variant 0, the FRAME's raw key 3)
    mr = struct.pack('<IIQQ', 1, 0xf, HX_REG_BAR, 4096) + bytes(16) + \
        struct.pack('<II', H['QHCA_MR_PHYS'], 0)
    i.op('CMD', dev=B, opcode=H['QHCA_CMD_REG_MR'], len=len(mr), var=mr)
    for n in range(2):
        i.op('FRAME', to=B, opcode=H['QHCA_ROCE_OP_RC_RDMA_WRITE_ONLY'],
             qp=RC, psn_mode=0, psn=0xfffff0 + n, flags=2 | 16,
             va=HX_REG_BAR + H['QHCA_REG_CTRL'], rkey=3, dma_len=4, plen=4,
             pattern=2)
    return i.settle(5)


def queries():
    """QUERY_STATS, QUERY_QP_STATE, QUERY_CQ (and QUERY_SRQ) with hostile
    handles, first counters and response buffers."""
    i = Input()
    num = H['QHCA_STAT_NUM']
    par, hdl = 'QHCA_CMD_ERR_PARAM', 'QHCA_CMD_ERR_HANDLE'
    for first, length, off, st in ((0, num * 8, 0, 'QHCA_CMD_OK'),
                                   (0, 4096, 0, 'QHCA_CMD_OK'),
                                   (8, 80, 8, 'QHCA_CMD_OK'),
                                   (num - 1, 8, 4088, 'QHCA_CMD_OK'),
                                   (0, 7, 100, 'QHCA_CMD_OK'),
                                   (3, 0, 0, 'QHCA_CMD_OK'),
                                   (num, 256, 0, 'QHCA_CMD_OK'),
                                   (num + 1, 256, 0, par),
                                   (0xffffffff, 256, 0, par),
                                   (0x80000000, 256, 0, par),
                                   (0, num * 8, 4000, par),
                                   (0, 0xffffffff, 1, 'QHCA_CMD_OK')):
        i.query(A, 'QUERY_STATS', first, off=off, length=length, status=st)
    for qp in (RC, RC_SRQ, UD, UC, UC_SRQ):
        i.query(B, 'QUERY_QP_STATE', qp, off=4096 - 48)
    for handle in (16, 1023, 1024, 0xffff, 0x10002, 0xffffffff):
        i.query(B, 'QUERY_QP_STATE', handle, status=hdl)
    i.query(A, 'QUERY_QP_STATE', RC, off=4095, length=1)
    i.query(A, 'QUERY_QP_STATE', RC, off=4095, length=2, status=par)
    i.query(A, 'QUERY_CQ', 0, length=16).query(A, 'QUERY_CQ', 0, length=3)
    for handle in (2, 0xdead, 0xffffffff):
        i.query(A, 'QUERY_CQ', handle, status=hdl)
    i.query(A, 'QUERY_SRQ', 0).query(A, 'QUERY_SRQ', 9, status=hdl)
    # handles 0 and 1 (QP1 is not made) through CMD
    for op, handle in (('QHCA_CMD_QUERY_QP_STATE', 0),
                       ('QHCA_CMD_QUERY_QP_STATE', 1),
                       ('QHCA_CMD_QUERY_CQ', 0)):
        i.op('CMD', dev=A, opcode=H[op], len=8,
             var=struct.pack('<II', handle, 0))
    # traffic, then the counters again (they only grow)
    i.recv(B, RC, 0x7b1, [sge(0, 64)]).recv(B, UC, 0x7b2, [sge(0, 64)])
    i.send(A, RC, 'QHCA_WQE_SEND', 0x7a1, [sge(0, 64)])
    i.send(A, UC, 'QHCA_WQE_SEND', 0x7a2, [sge(0, 64)])
    i.expect(B, RC, 0x7b1).expect(B, UC, 0x7b2)
    i.query(A, 'QUERY_STATS').query(B, 'QUERY_STATS')
    i.query(B, 'QUERY_STATS', 5, off=2000, length=num * 8)
    # responses where they do harm: no RAM, the end of RAM, the MR, the
    # command queue, the CQ ring, the device's own doorbells and registers
    i.query(A, 'QUERY_STATS', resp=3, status='QHCA_CMD_ERR_DMA')
    i.query(A, 'QUERY_STATS', resp=4, off=0, length=1)
    i.query(A, 'QUERY_STATS', resp=4, off=0, length=2, status=par)
    i.query(A, 'QUERY_CQ', 0, resp=7, off=0x100)
    i.query(B, 'QUERY_QP_STATE', UC, resp=5, off=0x400, status=None)
    i.query(B, 'QUERY_CQ', 0, resp=6, off=0x20, status=None)
    i.query(A, 'QUERY_STATS', resp=2, off=H['QHCA_DB_CQ_ARM'], length=8,
            status=None)
    i.query(A, 'QUERY_STATS', resp=1, off=0, status=None)
    return i.settle(5)
