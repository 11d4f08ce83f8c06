# SPDX-License-Identifier: GPL-2.0-or-later
# Copyright (c) 2026 The qhca authors
"""The dictionary tests/fuzz/qhca.dict: whole hostile operations."""

import struct

from mkcorpus_format import (A, B, H, MR_LEN, RC, UC, UC_SRQ, UD, Input,
                             sge)
from mkcorpus_ipv6 import IP6
from mkcorpus_mcast import (DETACH, G4, G4_COMPAT, G6, G_OWN4, GROUP_AH,
                            MORE_QPS, NEW_QP, RESERVED)
from mkcorpus_resize import SRQ_OP


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
