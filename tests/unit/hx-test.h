/*
 * What the host tests on two devices of the harness share (the transport
 * and the saved-state tests): the fixture (a pair set up by
 * hx_pair_setup(), no harness finding at its end), and posting, polling and
 * comparing memory through each device's 4 MiB MR.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef QHCA_HX_TEST_H
#define QHCA_HX_TEST_H

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "harness.h"

/* Virtual time a CQE may take: covers every retry of every timer here */
#define WAIT_NS         (2 * 1000 * 1000 * 1000LL)
#define MTU             1024u

typedef struct Fx {
    HxPair *p;
    HxDev *a, *b;
} Fx;

static inline void fx_setup(Fx *f, gconstpointer data)
{
    f->p = hx_pair_new(&f->a, &f->b);
    g_assert_true(hx_pair_setup(f->p));
}

static inline void fx_teardown(Fx *f, gconstpointer data)
{
    int i;

    hx_settle(f->p, 100 * 1000 * 1000, 100000);
    for (i = 0; i < HX_FIND_COUNT; i++) {
        g_assert_cmpuint(f->p->findings[i], ==, 0);
    }
    hx_pair_free(f->p);
}

static inline HxQp *rc(HxDev *d)
{
    return &d->drv.qp[HX_QP_RC];
}

static inline struct qhca_send_wqe rdma_wqe(uint8_t opcode, uint64_t wr_id,
                                            HxDev *peer, uint64_t off)
{
    struct qhca_send_wqe w = hx_wqe(opcode, wr_id);

    w.rdma.remote_addr = cpu_to_le64(peer->drv.mr.iova + off);
    w.rdma.rkey = cpu_to_le32(peer->drv.mr.key);
    return w;
}

/* A pattern that differs by @seed and every byte's position */
static inline void fill(HxDev *d, uint64_t off, uint32_t len,
                        uint32_t seed)
{
    uint8_t *m = d->ram + d->drv.mr.mem + off;
    uint32_t i;

    for (i = 0; i < len; i++) {
        m[i] = i * 7 + seed * 13 + (i >> 8) + (i >> 16);
    }
}

static inline bool same(HxDev *a, uint64_t aoff, HxDev *b, uint64_t boff,
                        uint32_t len)
{
    return !memcmp(a->ram + a->drv.mr.mem + aoff,
                   b->ram + b->drv.mr.mem + boff, len);
}

static inline uint8_t *mr_mem(HxDev *d, uint64_t off)
{
    return d->ram + d->drv.mr.mem + off;
}

/* The CQE of @wr_id on @qp; status 0xff if none came within WAIT_NS */
static inline struct qhca_cqe cqe_of(HxDev *d, HxQp *qp,
                                     uint64_t wr_id)
{
    struct qhca_cqe c;

    if (!hx_wait_cqe(d, qp->qpn, wr_id, &c, WAIT_NS)) {
        g_test_message("no CQE for wr_id 0x%" PRIx64 " on %c's QP %u",
                       wr_id, d->name, qp->qpn);
        memset(&c, 0, sizeof(c));
        c.status = 0xff;
    }
    return c;
}

static inline void post_recv(HxDev *d, HxQp *qp, uint64_t wr_id,
                             uint64_t off, uint32_t len)
{
    struct qhca_sge s = hx_sge(&d->drv.mr, off, len);

    hx_post_recv(d, qp, wr_id, &s, 1, true);
}

static inline void post(HxDev *d, HxQp *qp, struct qhca_send_wqe *w,
                        uint64_t off, uint32_t len)
{
    struct qhca_sge s = hx_sge(&d->drv.mr, off, len);

    hx_post_send(d, qp, w, &s, len ? 1 : 0, NULL, 0, true);
}

#endif
