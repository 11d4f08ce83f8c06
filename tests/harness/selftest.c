/*
 * Self-test of the two-device harness: the pair comes up, and SEND/RECV,
 * RDMA WRITE, READ, an atomic and a UD SEND complete with the right data,
 * with every DMA checked against the guest's grants.  Prints TAP lines.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "harness.h"

static int failures;
static int tests;

static void report(bool ok, const char *name)
{
    tests++;
    if (!ok) {
        failures++;
    }
    printf("%s %d - %s\n", ok ? "ok" : "not ok", tests, name);
}

static struct qhca_send_wqe wqe(uint8_t opcode, uint64_t wr_id)
{
    struct qhca_send_wqe w = { 0 };

    w.opcode = opcode;
    w.flags = QHCA_WQE_SIGNALED;
    w.wr_id = cpu_to_le64(wr_id);
    return w;
}

static void fill(HxDev *d, uint64_t addr, uint32_t len, uint32_t seed)
{
    uint32_t i;

    for (i = 0; i < len; i++) {
        uint8_t b = i * 7 + seed + (i >> 8);

        hx_mem_write(d, addr, &b, 1);
        addr++;
    }
}

static bool same(HxDev *a, uint64_t pa, HxDev *b, uint64_t pb, uint32_t len)
{
    return !memcmp(a->ram + pa, b->ram + pb, len);
}

static bool cqe_is(HxDev *d, HxQp *qp, uint64_t wr_id, uint8_t status)
{
    struct qhca_cqe c;

    return hx_wait_cqe(d, qp->qpn, wr_id, &c, 100 * 1000 * 1000) &&
           c.status == status;
}

int main(void)
{
    static HxPair pair;
    HxPair *p = &pair;
    HxDev *a = &p->dev[0], *b = &p->dev[1];
    HxQp *qa, *qb;
    struct qhca_send_wqe w;
    struct qhca_sge s, r;
    uint64_t v;
    bool ok;
    int round;

    hx_trace_init();
    hx_pair_init(p);
    for (round = 0; round < 2; round++) {
        if (round) {
            hx_pair_reset(p);
        }
        report(hx_pair_setup(p), "pair setup");
        qa = &a->drv.qp[HX_QP_RC];
        qb = &b->drv.qp[HX_QP_RC];

        /* 3000 bytes, three packets at MTU 1024 */
        fill(a, a->drv.mr.mem, 3000, 1);
        r = hx_sge(&b->drv.mr, 0, 4096);
        hx_post_recv(b, qb, 0xb1, &r, 1, true);
        s = hx_sge(&a->drv.mr, 0, 3000);
        w = wqe(QHCA_WQE_SEND, 0xa1);
        hx_post_send(a, qa, &w, &s, 1, NULL, 0, true);
        report(cqe_is(b, qb, 0xb1, QHCA_CQE_SUCCESS) &&
               cqe_is(a, qa, 0xa1, QHCA_CQE_SUCCESS) &&
               same(a, a->drv.mr.mem, b, b->drv.mr.mem, 3000),
               "send/recv");

        /* RDMA WRITE of 64 KiB, READ of it back */
        fill(a, a->drv.mr.mem + 0x10000, 0x10000, 2);
        w = wqe(QHCA_WQE_RDMA_WRITE, 0xa2);
        w.rdma.remote_addr = cpu_to_le64(b->drv.mr.iova + 0x20000);
        w.rdma.rkey = cpu_to_le32(b->drv.mr.key);
        s = hx_sge(&a->drv.mr, 0x10000, 0x10000);
        hx_post_send(a, qa, &w, &s, 1, NULL, 0, true);
        report(cqe_is(a, qa, 0xa2, QHCA_CQE_SUCCESS) &&
               same(a, a->drv.mr.mem + 0x10000, b,
                    b->drv.mr.mem + 0x20000, 0x10000), "rdma write");
        w = wqe(QHCA_WQE_RDMA_READ, 0xa3);
        w.rdma.remote_addr = cpu_to_le64(b->drv.mr.iova + 0x20000);
        w.rdma.rkey = cpu_to_le32(b->drv.mr.key);
        s = hx_sge(&a->drv.mr, 0x40000, 0x10000);
        hx_post_send(a, qa, &w, &s, 1, NULL, 0, true);
        report(cqe_is(a, qa, 0xa3, QHCA_CQE_SUCCESS) &&
               same(a, a->drv.mr.mem + 0x40000, b,
                    b->drv.mr.mem + 0x20000, 0x10000), "rdma read");

        /* fetch and add */
        v = cpu_to_le64(100);
        hx_mem_write(b, b->drv.mr.mem + 0x100, &v, 8);
        w = wqe(QHCA_WQE_ATOMIC_FETCH_AND_ADD, 0xa4);
        w.rdma.remote_addr = cpu_to_le64(b->drv.mr.iova + 0x100);
        w.rdma.rkey = cpu_to_le32(b->drv.mr.key);
        w.rdma.compare_add = cpu_to_le64(5);
        s = hx_sge(&a->drv.mr, 0x200, 8);
        hx_post_send(a, qa, &w, &s, 1, NULL, 0, true);
        ok = cqe_is(a, qa, 0xa4, QHCA_CQE_SUCCESS);
        hx_mem_read(b, b->drv.mr.mem + 0x100, &v, 8);
        report(ok && le64_to_cpu(v) == 105 &&
               ldq_le_p(a->ram + a->drv.mr.mem + 0x200) == 100,
               "fetch and add");

        /* UD send with a GRH */
        qa = &a->drv.qp[HX_QP_UD];
        qb = &b->drv.qp[HX_QP_UD];
        r = hx_sge(&b->drv.mr, 0x80000, 40 + 100);
        hx_post_recv(b, qb, 0xb5, &r, 1, true);
        w = wqe(QHCA_WQE_SEND, 0xa5);
        w.ud.ahn = cpu_to_le32(a->drv.ahn);
        w.ud.remote_qpn = cpu_to_le32(qb->qpn);
        w.ud.remote_qkey = cpu_to_le32(HX_QKEY);
        s = hx_sge(&a->drv.mr, 0, 100);
        hx_post_send(a, qa, &w, &s, 1, NULL, 0, true);
        report(cqe_is(a, qa, 0xa5, QHCA_CQE_SUCCESS) &&
               cqe_is(b, qb, 0xb5, QHCA_CQE_SUCCESS) &&
               same(a, a->drv.mr.mem, b, b->drv.mr.mem + 0x80000 + 40, 100),
               "ud send");
        hx_settle(p, 1000 * 1000 * 1000, 10000);
        report(p->findings[HX_FIND_GRANT] == 0 &&
               p->findings[HX_FIND_SPIN] == 0, "no findings");
    }
    /* The grant checker itself: what the guest never handed over */
    {
        uint8_t buf[16];
        unsigned before;
        bool r1, r2, r3;

        setenv("QHCA_HARNESS_IGNORE", "grant", 1);
        before = p->findings[HX_FIND_GRANT];
        r1 = a->core.ops->dma_read(a, a->drv.mr.mem + 0x1000, buf, 16);
        report(r1 && p->findings[HX_FIND_GRANT] == before,
               "grant: a read of MR memory passes");
        r2 = a->core.ops->dma_read(a, 0x500000, buf, 16);
        report(r2 && p->findings[HX_FIND_GRANT] == before + 1,
               "grant: a read of memory never granted is a finding");
        r3 = a->core.ops->dma_write(a, 0x100000000ULL, buf, 16);
        report(!r3 && p->findings[HX_FIND_GRANT] == before + 1,
               "grant: a write where there is no RAM fails, no finding");
        hx_mmio_write(a, QHCA_REG_CTRL, QHCA_CTRL_RESET);
        a->core.ops->dma_read(a, a->drv.mr.mem + 0x1000, buf, 16);
        report(p->findings[HX_FIND_GRANT] == before + 2,
               "grant: nothing is granted after a reset");
        unsetenv("QHCA_HARNESS_IGNORE");
    }
    hx_pair_destroy(p);
    printf("1..%d\n", tests);
    return failures ? 1 : 0;
}
