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
"""

import os
import re
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))

CTYPES = {'uint8_t': 'B', 'int8_t': 'b', 'uint16_t': 'H', 'uint32_t': 'I',
          'uint64_t': 'Q'}


def read(path):
    with open(os.path.join(TOP, path), encoding='utf-8') as f:
        return f.read()


def constants():
    """QHCA_* numbers from the hardware contract and the wire header."""
    out = {}
    for path in ('include/qhca_hw.h', 'hw/qhca-roce.h',
                 'tests/harness/harness.h'):
        text = read(path)
        for m in re.finditer(r'^\s*(QHCA_\w+)\s*=\s*(0x[0-9a-fA-F]+|\d+)',
                             text, re.M):
            out[m.group(1)] = int(m.group(2), 0)
        for m in re.finditer(r'^#define\s+((?:QHCA|HX_PORT)_\w+)\s+\(?'
                             r'(0x[0-9a-fA-F]+|\d+)(?:u|ULL)?\)?\s*'
                             r'(?:/\*.*)?$', text, re.M):
            out.setdefault(m.group(1), int(m.group(2), 0))
        for m in re.finditer(r'^#define\s+(HX_PORT_\w+)\s+\((0x[0-9a-fA-F]+)u'
                             r' << (\d+)\)', text, re.M):
            out.setdefault(m.group(1), int(m.group(2), 0) << int(m.group(3)))
        for m in re.finditer(r'^#define\s+(QHCA_\w+)\s+\(1u << (\d+)\)',
                             text, re.M):
            out.setdefault(m.group(1), 1 << int(m.group(2)))
    # enum qhca_stat counts from 0 without values
    body = re.search(r'enum qhca_stat \{(.*?)\};',
                     read('include/qhca_hw.h'), re.S).group(1)
    for n, name in enumerate(re.findall(r'^\s*(QHCA_STAT_\w+)\b', body,
                                        re.M)):
        out[name] = n
    return out


class Format:
    """The input format, read from tests/fuzz/qhca-fuzz.h."""

    def __init__(self):
        text = read('tests/fuzz/qhca-fuzz.h')
        enum = re.search(r'enum \{\s*(FZ_OP_\w+.*?)FZ_OP_COUNT', text, re.S)
        names = re.findall(r'FZ_OP_(\w+)', enum.group(1))
        self.ops = {n: i for i, n in enumerate(names)}
        self.structs = {}
        for m in re.finditer(r'typedef struct QEMU_PACKED (Fz\w+) \{(.*?)\} '
                             r'\1;', text, re.S):
            fields = []
            for f in re.finditer(r'^\s*(\w+)\s+(\w+)(?:\[(\d+)\])?;',
                                 m.group(2), re.M):
                fields.append((f.group(1), f.group(2),
                               int(f.group(3) or 0)))
            self.structs[m.group(1)] = fields

    def pack(self, sname, values):
        out = b''
        for ctype, name, count in self.structs[sname]:
            v = values.pop(name, None)
            if ctype in CTYPES:
                fmt = '<' + CTYPES[ctype]
                bits = struct.calcsize(fmt) * 8
                if count:
                    raise ValueError('array of %s' % ctype)
                v = v or 0
                if ctype.startswith('int'):
                    out += struct.pack(fmt, v)
                else:
                    out += struct.pack(fmt, v & ((1 << bits) - 1))
            else:
                items = list(v or [])
                for i in range(max(count, 1)):
                    item = items[i] if i < len(items) else {}
                    if isinstance(item, tuple):
                        sub = [n for _, n, _ in self.structs[ctype]]
                        item = dict(zip(sub, item))
                    out += self.pack(ctype, dict(item))
        if values:
            raise ValueError('%s has no field(s) %s' % (sname,
                                                        ', '.join(values)))
        return out


FMT = Format()
H = constants()

A, B = 0, 1
RC, RC_SRQ, UD, UC, UC_SRQ = 0, 1, 2, 3, 4
# the QP numbers hx_drv_setup() gets on each device; a QP made by CMD next
QPN_UD, QPN_CMD = 4, 7
MS = 1
MR_LEN = 4 << 20
HX_REG_BAR = 0xfe000000     # tests/harness/harness.h: HX_REG_BAR_ADDR


class Input:
    def __init__(self):
        self.data = b''

    def op(self, name, var=b'', **fields):
        sname = 'Fz' + ''.join(w.capitalize() for w in name.split('_'))
        self.data += bytes([FMT.ops[name]]) + FMT.pack(sname, fields) + var
        return self

    # helpers for what the scenarios do often
    def send(self, dev, qp, opcode, wr_id, sge=(), flags=None, **kw):
        if flags is None:
            flags = H['QHCA_WQE_SIGNALED']
        return self.op('SEND', dev=dev, qp=qp, opcode=H[opcode], flags=flags,
                       nsge=len(sge), sge=list(sge), imm=wr_id, **kw)

    def recv(self, dev, qp, wr_id, sge):
        return self.op('RECV', dev=dev, qp=qp, nsge=len(sge), sge=list(sge),
                       wr_id=wr_id)

    def expect(self, dev, qp, wr_id, status='QHCA_CQE_SUCCESS', ms=50):
        st = 0xff if status is None else H[status]
        return self.op('EXPECT_CQE', dev=dev, qp=qp, wr_id=wr_id, status=st,
                       ms=ms)

    def expect_qp(self, dev, qp, state):
        return self.op('EXPECT_QP', dev=dev, qp=qp, state=H[state])

    def connect(self, qp=RC, mtu=3, timeout=8, retry=7, rnr_retry=7,
                min_rnr=1, max_rd=4, access=0xe, psn=0xfffff0):
        return self.op('CONNECT', qp=qp, mtu=mtu, timeout=timeout,
                       retry=retry, rnr_retry=rnr_retry, min_rnr=min_rnr,
                       max_rd=max_rd, access=access, psn=psn)

    def settle(self, ms=10):
        return self.op('SETTLE', ms=ms)

    def query(self, dev, which, arg=0, resp=0, off=0, length=256,
              status='QHCA_CMD_OK'):
        st = 0xff if status is None else H[status]
        which = ('QUERY_STATS', 'QUERY_QP_STATE', 'QUERY_CQ',
                 'QUERY_SRQ').index(which)
        return self.op('QUERY', dev=dev, which=which, arg=arg, resp=resp,
                       off=off, len=length, status=st)


    def frame6(self, ip6=None, **frame):
        """FRAME6: an FzFrame, then an FzIp6."""
        self.data += (bytes([FMT.ops['FRAME6']]) +
                      FMT.pack('FzFrame', frame) +
                      FMT.pack('FzIp6', dict(ip6 or {})))
        return self

    def mframe(self, mf=None, **frame):
        """MFRAME: an FzFrame, then an FzMframe."""
        self.data += (bytes([FMT.ops['MFRAME']]) +
                      FMT.pack('FzFrame', frame) +
                      FMT.pack('FzMframe', dict(mf or {})))
        return self

    def mcast(self, dev, qp=UD, group=0, val=0, status='QHCA_CMD_OK',
              **kw):
        return self.status_op('MCAST', status, dev=dev, qp=qp, group=group,
                              val=val, **kw)

    def status_op(self, name, status='QHCA_CMD_OK', **fields):
        st = 0xff if status is None else H[status]
        return self.op(name, status=st, **fields)


def sge(off, length, key=0):
    return (off, length, key)


# ---------------------------------------------------------------------------
# Seeds: the qtest scenarios

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


# UC (docs/hardware.md 10.2): the qtests /qhca/uc/* and more

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


# ---------------------------------------------------------------------------
# Reproducers of known defects found by fuzzing a hostile guest and wire
# (docs/security.md, "Corpus and reproducers")

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


def dictionary():
    """Whole hostile operations, for libFuzzer to splice into any input."""
    ops = {}

    def add(name, inp):
        ops[name] = inp.data

    for v in (0, 1):
        add('msix%d_ctrl_reset' % v, Input().op(
            'MSIX', dev=A, vector=v, kind=1, off=H['QHCA_REG_CTRL'],
            data=H['QHCA_CTRL_RESET']))
        add('msix%d_ctrl_reset_b' % v, Input().op(
            'MSIX', dev=B, vector=v, kind=1, off=H['QHCA_REG_CTRL'],
            data=H['QHCA_CTRL_RESET']))
    add('msix1_db_cmdq', Input().op('MSIX', dev=A, vector=1, kind=2,
                                    off=H['QHCA_DB_CMDQ'], data=1))
    for v in (0, 1):
        for dev, tag in ((A, ''), (B, '_b')):
            add('msix%d_port_bus_reset%s' % (v, tag), Input().op(
                'MSIX', dev=dev, vector=v, kind=4, off=H['HX_PORT_BRCTL'],
                data=H['HX_PORT_BRCTL_SBR']))
            add('msix%d_port_power_off%s' % (v, tag), Input().op(
                'MSIX', dev=dev, vector=v, kind=4, off=H['HX_PORT_SLTCTL'],
                data=H['HX_PORT_SLTCTL_OFF']))
    for k in range(3):
        add('reset%d' % k, Input().op('RESET', dev=A, kind=k))
        add('reset%d_b' % k, Input().op('RESET', dev=B, kind=k))
    add('link_down', Input().op('LINK', dev=B, up=0))
    for frm in (A, B):
        for mode in (1, 2, 3, 4, 5):
            add('wire_%d_%d' % (frm, mode), Input().op(
                'WIRE_MODE', **{'from': frm}, mode=mode, every=5))
    add('conn_fast_fail', Input().connect(timeout=1, retry=0))
    add('conn_mtu256', Input().connect(mtu=1))
    add('conn_rnr0', Input().connect(rnr_retry=0))
    add('conn_inf', Input().connect(timeout=0, rnr_retry=7))
    add('arm_all', Input().op('POLL', dev=A, max=0, arm=31))
    add('advance_16ms', Input().op('ADVANCE', exp=24))
    add('advance_1s', Input().op('ADVANCE', exp=30))
    nak = H['QHCA_ROCE_AETH_NAK'] | H['QHCA_ROCE_NAK_PSN_SEQ_ERR']
    for n, delta in enumerate((0, 1, 64, 1024, 0xffffffff)):
        add('nak_%d' % n, Input().op(
            'FRAME', to=A, opcode=H['QHCA_ROCE_OP_RC_ACKNOWLEDGE'], qp=RC,
            psn_mode=2, psn=delta, syndrome=nak))
        add('rnr_nak_%d' % n, Input().op(
            'FRAME', to=A, opcode=H['QHCA_ROCE_OP_RC_ACKNOWLEDGE'], qp=RC,
            psn_mode=2, psn=delta, syndrome=H['QHCA_ROCE_AETH_RNR_NAK']))
    add('read_4m', Input().op(
        'FRAME', to=B, opcode=H['QHCA_ROCE_OP_RC_RDMA_READ_REQUEST'], qp=RC,
        psn_mode=1, psn=0, dma_len=MR_LEN, flags=2))
    add('read_dup', Input().op(
        'FRAME', to=B, opcode=H['QHCA_ROCE_OP_RC_RDMA_READ_REQUEST'], qp=RC,
        psn_mode=1, psn=0xfffff000, dma_len=MR_LEN, flags=2))
    add('send_ahead', Input().op(
        'FRAME', to=B, opcode=H['QHCA_ROCE_OP_RC_SEND_ONLY'], qp=RC,
        psn_mode=1, psn=100000, plen=8))
    wqe = struct.pack('<BBBBI', H['QHCA_WQE_SEND'],
                      H['QHCA_WQE_SIGNALED'] | H['QHCA_WQE_INLINE'], 0, 0, 16)
    add('wqe_inline_rewrite', Input().op(
        'WQE_RAW', dev=A, qp=RC, which=0, slot=-1, off=0, len=len(wqe),
        var=wqe))
    add('db_backwards', Input().op('DB_QP', dev=A, qp=RC, which=0, mode=1,
                                   val=0xfffd))
    add('send_2m', Input().send(A, RC, 'QHCA_WQE_SEND', 9,
                                [sge(0, 2 << 20)]))
    # UC
    add('conn_uc_mtu256', Input().connect(qp=8, mtu=1))
    add('conn_uc_loop', Input().connect(qp=8 | 2))
    add('send_uc_2m', Input().send(A, UC, 'QHCA_WQE_SEND', 9,
                                   [sge(0, 2 << 20)]))
    add('write_uc_imm', Input().send(A, UC_SRQ,
                                     'QHCA_WQE_RDMA_WRITE_WITH_IMM', 9,
                                     [sge(0, 5000)], remote=0x1000))
    add('uc_read', Input().send(A, UC, 'QHCA_WQE_RDMA_READ', 9,
                                [sge(0, 64)]))
    for n, op in enumerate(('QHCA_ROCE_OP_UC_SEND_FIRST',
                            'QHCA_ROCE_OP_UC_SEND_MIDDLE',
                            'QHCA_ROCE_OP_UC_RDMA_WRITE_FIRST',
                            'QHCA_ROCE_OP_UC_RDMA_WRITE_LAST_IMM')):
        add('uc_frame_%d' % n, Input().op(
            'FRAME', to=B, opcode=H[op], qp=UC, psn_mode=1, psn=n,
            dma_len=4096, plen=1024))
    add('uc_frame_to_rc', Input().op(
        'FRAME', to=B, opcode=H['QHCA_ROCE_OP_UC_SEND_ONLY'], qp=RC,
        psn_mode=1, psn=0, plen=16))
    add('drop_head', Input().op('WIRE_MUTATE', idx=0, action=0))
    # queries
    add('query_stats', Input().query(A, 'QUERY_STATS', status=None))
    add('query_stats_bar0', Input().query(A, 'QUERY_STATS', resp=1,
                                          status=None))
    add('query_qp_uc', Input().query(B, 'QUERY_QP_STATE', UC, status=None))
    add('query_cq_ring', Input().query(A, 'QUERY_CQ', resp=6, status=None))
    # IPv6, mixed versions, rereg and resize
    add('conn_ipv6', Input().connect(qp=IP6, psn=0x40fffff0))
    add('conn_uc_ipv6', Input().connect(qp=8 | IP6))
    add('conn_loop_ipv6', Input().connect(qp=2 | IP6))
    add('ud_send_ipv6', Input().send(A, UD, 'QHCA_WQE_SEND', 9,
                                     [sge(0, 64)], rkey=1))
    for n, ip6 in enumerate((dict(dst=1), dict(src=2), dict(mangle=1,
                                                            val=0),
                             dict(mangle=2, val=0xffff), dict(flow=0xfffff,
                                                              tclass=0xff))):
        add('frame6_%d' % n, Input().frame6(
            ip6, to=B, opcode=H['QHCA_ROCE_OP_UD_SEND_ONLY'], qp=UD,
            psn_mode=1, plen=32))
    add('gid_mcast', Input().status_op('GID', None, dev=A, index=1, kind=2))
    add('gid_del_ipv6', Input().status_op('GID', None, dev=B, index=1,
                                          kind=0, **{'del': 1}))
    add('av_mixed', Input().status_op('AV', None, dev=A, which=0, qp=RC,
                                      sgid=0, dgid=0))
    add('ah_mixed', Input().status_op('AV', None, dev=A, which=1, sgid=1,
                                      dgid=1))
    add('rereg_ring', Input().status_op('REREG', None, dev=B, what=1, mem=2,
                                        length=0x10000))
    add('rereg_access', Input().status_op('REREG', None, dev=B, what=4,
                                          access=1))
    add('resize_cq', Input().status_op('RESIZE', None, dev=A, log=4))
    add('resize_cq_own', Input().status_op('RESIZE', None, dev=B, log=8,
                                           mem=3))
    add('resize_srq', Input().status_op('RESIZE', None, dev=B, cq=SRQ_OP,
                                        log=8))
    # UD multicast
    add('mcast_attach4', Input().mcast(B, UD, G4, 5, status=None))
    add('mcast_attach6', Input().mcast(B, UD, G6, 0x42, status=None))
    add('mcast_detach', Input().mcast(B, UD, G4, 5, flags=DETACH,
                                      status=None))
    add('mcast_new_qp', Input().mcast(B, 0, G4, 5, flags=NEW_QP,
                                      status=None))
    add('mcast_ah4', Input().mcast(A, UD, G4, 5, flags=GROUP_AH,
                                   status=None))
    add('mcast_ah6', Input().mcast(A, UD, G6, 0x42, flags=GROUP_AH,
                                   status=None))
    add('mcast_qps_limit', Input().mcast(B, UD, G4, 5, flags=MORE_QPS,
                                         count=16, status=None))
    add('mcast_groups_limit', Input().mcast(B, UD, G6, 0, count=64,
                                            status=None))
    add('mcast_hostile_gid', Input().mcast(B, UD, G4_COMPAT, 5,
                                           flags=RESERVED, status=None))
    add('ud_send_mcast', Input().send(A, UD, 'QHCA_WQE_SEND', 9,
                                      [sge(0, 64)], rkey=3))
    for n, mf in enumerate((dict(), dict(group=G6, val=0x42),
                            dict(dqp=1), dict(mac=1), dict(src=1),
                            dict(group=G_OWN4))):
        mf.setdefault('val', 5)
        add('mframe_%d' % n, Input().mframe(
            mf, to=B, opcode=H['QHCA_ROCE_OP_UD_SEND_ONLY'], qp=UD,
            psn_mode=1, plen=32))
    add('mframe_rc', Input().mframe(dict(val=5), to=B,
                                    opcode=H['QHCA_ROCE_OP_RC_SEND_ONLY'],
                                    qp=RC, psn_mode=1, plen=32))
    return ops


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
    if len(sys.argv) > 1:
        raise SystemExit(__doc__)
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
