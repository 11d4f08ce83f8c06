# SPDX-License-Identifier: GPL-2.0-or-later
# Copyright (c) 2026 The qhca authors
"""The fuzzer's input format and the encoder the seeds are written with.

The operation numbers and argument layouts are read from
tests/fuzz/qhca-fuzz.h (FMT), the hardware constants from
include/qhca_hw.h, hw/qhca-roce.h and tests/harness/harness.h (H); Input
appends operations, with helpers for what the scenarios do often.
"""

import os
import re
import struct

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

