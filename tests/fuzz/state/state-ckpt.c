/*
 * Checkpoints of the saved-state fuzz target: where each input starts.
 *
 * Bringing a pair up takes some 3 ms (hx_pair_setup(): some 60 commands),
 * and a scenario more; an input takes far less.  So the pair is brought
 * up and taken to each scenario's situation once, and what that left is
 * kept: the non-zero pages of both guests' RAM, what the harness's glue
 * and mini-driver know of each device, the frames on the wire, the clock,
 * and each device's saved state.  An input starts from a copy of that:
 * RAM pages put back (those written since, and those of the checkpoint
 * held in RAM before), the glue and driver state copied, and each device
 * a fresh core (qhca_core_init(), as a migration's destination is) loaded
 * from its saved state: device B from its own, device A from its own too,
 * so that it has live objects when the input's stream is loaded into it.
 * The first input of a scenario goes through the same restore as every
 * later one, so what an input does depends on the input alone: a crash
 * found in the middle of a run is reproduced by the input on its own.
 *
 * Grants.  What device B may touch is what the harness saw the guest hand
 * over by commands while the pair was set up (tests/harness/grant.c); an
 * input issues no command to B and B is never reset, so B's grants stay
 * as they are, and every scenario must leave them as hx_pair_setup() made
 * them (checked when a checkpoint is built, and after every input).
 * Device A's loaded page lists may name any page of its RAM (a hostile
 * stream may): all of A's RAM is granted to it, and its DMA goes through
 * sf_a_ops, which checks that every access outside RAM, the device's own
 * BARs and its root port's configuration fails, as the harness makes it.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "state-fuzz.h"

/* A guest's RAM at a checkpoint: its non-zero pages */
typedef struct SfRam {
    uint16_t slot[HX_RAM_PAGES];    /* 0: a page of zeroes; else 1 + index */
    uint32_t npages;
    uint8_t *data;                  /* npages pages */
} SfRam;

/* What the harness's glue and mini-driver hold of a device */
typedef struct SfGlue {
    bool bh_pending;
    int64_t timer_deadline;
    bool link_up;
    HxMsix msix[QHCA_MSIX_VECTORS];
    uint64_t irqs[QHCA_MSIX_VECTORS];
    uint32_t port_brctl;
    uint32_t port_sltctl;
    uint64_t bus_resets;
    uint64_t unplugs;
    uint64_t sh_base[3];
    uint32_t sh_log[3];
    uint64_t lat_base[3];
    uint32_t lat_log[3];
    HxDrv drv;
} SfGlue;

typedef struct SfCkpt {
    bool built;
    SfRam ram[2];
    SfGlue glue[2];
    GByteArray *state[2];
    int64_t now;
    GQueue wire;                    /* HxFrame */
    HxFrame *held[2];
    HxWireMode mode[2];
    unsigned every[2];
    unsigned sent[2];
    unsigned wire_count;
    uint32_t rng;
    uint64_t wire_lost;
    uint32_t last_psn[2][1024];
} SfCkpt;

HxPair sf_pair;
uint64_t sf_dma_outside;

static SfCkpt *ckpts;
/* The checkpoint RAM holds, but for the pages marked dirty since */
static SfCkpt *resident;
/* A scenario's build left B's grants other than hx_pair_setup()'s */
static bool b_grants_known;
static uint8_t b_grants[HX_RAM_PAGES];
/* Device B was reset or unplugged by an input: its grants are gone */
static bool b_grants_lost;
static bool cores_live;
static const QhcaCoreOps *hx_ops;
static QhcaCoreOps a_ops;

/*
 * Device A's DMA: the harness's, and an access that is not all in RAM,
 * the BARs or the port must fail (it reaches no memory)
 */
static bool in_range(uint64_t addr, uint64_t len, uint64_t base,
                     uint64_t size)
{
    return addr >= base && addr - base < size && len <= size - (addr - base);
}

static void dma_checked(uint64_t addr, uint64_t len, bool ok, bool write)
{
    if (!len || in_range(addr, len, 0, HX_RAM_SIZE) ||
        in_range(addr, len, HX_REG_BAR_ADDR, QHCA_REG_BAR_SIZE) ||
        in_range(addr, len, HX_DB_BAR_ADDR, QHCA_DB_BAR_SIZE) ||
        in_range(addr, len, HX_PORT_ADDR, HX_PORT_SIZE)) {
        return;
    }
    sf_dma_outside++;
    if (ok) {
        sf_fail("device A's DMA %s of 0x%" PRIx64 "+0x%" PRIx64 " outside "
                "its RAM did not fail", write ? "write" : "read", addr, len);
    }
}

static bool a_dma_read(void *opaque, uint64_t addr, void *buf, uint64_t len)
{
    bool ok = hx_ops->dma_read(opaque, addr, buf, len);

    dma_checked(addr, len, ok, false);
    return ok;
}

static bool a_dma_write(void *opaque, uint64_t addr, const void *buf,
                        uint64_t len)
{
    bool ok = hx_ops->dma_write(opaque, addr, buf, len);

    dma_checked(addr, len, ok, true);
    return ok;
}

void sf_ckpt_init(void)
{
    hx_pair_init(&sf_pair);
    hx_ops = sf_pair.dev[0].core.ops;
    a_ops = *hx_ops;
    a_ops.dma_read = a_dma_read;
    a_ops.dma_write = a_dma_write;
    ckpts = g_new0(SfCkpt, sf_nscens);
}

static void grant_map(HxDev *d, uint8_t *map)
{
    unsigned pg;

    for (pg = 0; pg < HX_RAM_PAGES; pg++) {
        map[pg] = hx_grants_check(d, (uint64_t)pg * QHCA_PAGE_SIZE,
                                  QHCA_PAGE_SIZE);
    }
}

static bool page_is_zero(const uint8_t *p)
{
    unsigned i;

    for (i = 0; i < QHCA_PAGE_SIZE; i++) {
        if (p[i]) {
            return false;
        }
    }
    return true;
}

static void ram_take(SfRam *r, HxDev *d)
{
    unsigned pg, n = 0;

    for (pg = 0; pg < HX_RAM_PAGES; pg++) {
        if (d->dirty[pg] &&
            !page_is_zero(d->ram + (uint64_t)pg * QHCA_PAGE_SIZE)) {
            n++;
        }
    }
    r->data = g_malloc((size_t)MAX(n, 1) * QHCA_PAGE_SIZE);
    r->npages = 0;
    for (pg = 0; pg < HX_RAM_PAGES; pg++) {
        const uint8_t *p = d->ram + (uint64_t)pg * QHCA_PAGE_SIZE;

        r->slot[pg] = 0;
        if (d->dirty[pg] && !page_is_zero(p)) {
            memcpy(r->data + (size_t)r->npages * QHCA_PAGE_SIZE, p,
                   QHCA_PAGE_SIZE);
            r->slot[pg] = ++r->npages;
        }
    }
}

/* Put @r back into @d's RAM, which holds @old but for its dirty pages */
static void ram_put(const SfRam *r, const SfRam *old, HxDev *d)
{
    unsigned pg;

    for (pg = 0; pg < HX_RAM_PAGES; pg++) {
        uint8_t *p = d->ram + (uint64_t)pg * QHCA_PAGE_SIZE;

        if (!d->dirty[pg] && (r == old || (!r->slot[pg] && !old->slot[pg]))) {
            continue;
        }
        if (r->slot[pg]) {
            memcpy(p, r->data + (size_t)(r->slot[pg] - 1) * QHCA_PAGE_SIZE,
                   QHCA_PAGE_SIZE);
        } else {
            memset(p, 0, QHCA_PAGE_SIZE);
        }
        d->dirty[pg] = 0;
    }
}

static void glue_take(SfGlue *g, const HxDev *d)
{
    g->bh_pending = d->bh_pending;
    g->timer_deadline = d->timer_deadline;
    g->link_up = d->link_up;
    memcpy(g->msix, d->msix, sizeof(g->msix));
    memcpy(g->irqs, d->irqs, sizeof(g->irqs));
    g->port_brctl = d->port_brctl;
    g->port_sltctl = d->port_sltctl;
    g->bus_resets = d->bus_resets;
    g->unplugs = d->unplugs;
    memcpy(g->sh_base, d->sh_base, sizeof(g->sh_base));
    memcpy(g->sh_log, d->sh_log, sizeof(g->sh_log));
    memcpy(g->lat_base, d->lat_base, sizeof(g->lat_base));
    memcpy(g->lat_log, d->lat_log, sizeof(g->lat_log));
    g->drv = d->drv;
}

static void glue_put(const SfGlue *g, HxDev *d)
{
    d->engaged = false;
    d->bh_pending = g->bh_pending;
    d->timer_deadline = g->timer_deadline;
    d->rx_held = false;
    d->link_up = g->link_up;
    memcpy(d->msix, g->msix, sizeof(d->msix));
    memcpy(d->irqs, g->irqs, sizeof(d->irqs));
    d->blocked_reentrant = 0;
    d->port_brctl = g->port_brctl;
    d->port_sltctl = g->port_sltctl;
    d->bus_resets = g->bus_resets;
    d->unplugs = g->unplugs;
    d->replug = false;
    d->nesting = 0;
    d->call_frames = 0;
    d->progress = 0;
    d->inputs = 0;
    d->idle_runs = 0;
    memcpy(d->sh_base, g->sh_base, sizeof(d->sh_base));
    memcpy(d->sh_log, g->sh_log, sizeof(d->sh_log));
    memcpy(d->lat_base, g->lat_base, sizeof(d->lat_base));
    memcpy(d->lat_log, g->lat_log, sizeof(d->lat_log));
    d->drv = g->drv;
}

static HxFrame *frame_dup(const HxFrame *f)
{
    return f ? g_memdup2(f, sizeof(*f) + f->len) : NULL;
}

static void wire_free(GQueue *q, HxFrame **held)
{
    HxFrame *f;
    int i;

    while ((f = g_queue_pop_head(q))) {
        g_free(f);
    }
    for (i = 0; i < 2; i++) {
        g_free(held[i]);
        held[i] = NULL;
    }
}

static void wire_copy(GQueue *to, HxFrame **to_held, GQueue *from,
                      HxFrame *const *from_held)
{
    GList *l;
    int i;

    for (l = from->head; l; l = l->next) {
        g_queue_push_tail(to, frame_dup(l->data));
    }
    for (i = 0; i < 2; i++) {
        to_held[i] = frame_dup(from_held[i]);
    }
}

static void pair_take(SfCkpt *k)
{
    HxPair *p = &sf_pair;

    k->now = p->now;
    g_queue_init(&k->wire);
    wire_copy(&k->wire, k->held, &p->wire, p->held);
    memcpy(k->mode, p->mode, sizeof(k->mode));
    memcpy(k->every, p->every, sizeof(k->every));
    memcpy(k->sent, p->sent, sizeof(k->sent));
    k->wire_count = p->wire_count;
    k->rng = p->rng;
    k->wire_lost = p->wire_lost;
    memcpy(k->last_psn, p->last_psn, sizeof(k->last_psn));
}

static void pair_put(SfCkpt *k)
{
    HxPair *p = &sf_pair;
    GList *l;

    wire_free(&p->wire, p->held);
    wire_copy(&p->wire, p->held, &k->wire, k->held);
    p->wire_bytes = 0;
    for (l = p->wire.head; l; l = l->next) {
        p->wire_bytes += ((HxFrame *)l->data)->len;
    }
    p->now = k->now;
    memcpy(p->mode, k->mode, sizeof(p->mode));
    memcpy(p->every, k->every, sizeof(p->every));
    memcpy(p->sent, k->sent, sizeof(p->sent));
    p->wire_count = k->wire_count;
    p->rng = k->rng;
    p->wire_lost = k->wire_lost;
    memcpy(p->last_psn, k->last_psn, sizeof(p->last_psn));
    p->steps = 0;
    p->step_limit = 0;
    p->time_limit = 0;
    p->stopped = false;
    memset(p->findings, 0, sizeof(p->findings));
}

/* Take the pair to scenario @scen from scratch and keep what it left */
static void build(unsigned scen)
{
    SfCkpt *k = &ckpts[scen];
    uint8_t map[HX_RAM_PAGES];
    int i;

    /* RAM holds the resident checkpoint: hx_pair_reset() clears it too */
    for (i = 0; resident && i < 2; i++) {
        unsigned pg;

        for (pg = 0; pg < HX_RAM_PAGES; pg++) {
            sf_pair.dev[i].dirty[pg] |= resident->ram[i].slot[pg] != 0;
        }
    }
    resident = NULL;
    hx_pair_reset(&sf_pair);
    sf_pair.step_limit = 0;
    sf_pair.time_limit = 0;
    cores_live = true;
    if (!hx_pair_setup(&sf_pair) || !sf_base()) {
        sf_fail("the pair could not be set up");
    }
    if (!sf_scens[scen].setup() || sf_pair.stopped) {
        sf_fail("scenario %s could not be set up", sf_scens[scen].name);
    }
    grant_map(SF_B, map);
    if (b_grants_known && memcmp(map, b_grants, sizeof(map))) {
        sf_fail("scenario %s changed device B's grants: it may issue no "
                "command to B that makes or destroys memory",
                sf_scens[scen].name);
    }
    memcpy(b_grants, map, sizeof(map));
    b_grants_known = true;
    b_grants_lost = false;
    for (i = 0; i < 2; i++) {
        HxDev *d = &sf_pair.dev[i];

        if (k->built) {
            g_free(k->ram[i].data);
            g_byte_array_unref(k->state[i]);
        }
        ram_take(&k->ram[i], d);
        glue_take(&k->glue[i], d);
        k->state[i] = g_byte_array_new();
        qhca_core_save(&d->core, k->state[i]);
        memset(d->dirty, 0, sizeof(d->dirty));
    }
    if (k->built) {
        wire_free(&k->wire, k->held);
    }
    pair_take(k);
    k->built = true;
    resident = k;
}

static void load_own(HxDev *d, const QhcaCoreOps *ops, const GByteArray *s)
{
    g_autofree char *why = NULL;

    qhca_core_init(&d->core, ops, d, d->mac);
    if (!qhca_core_load(&d->core, s->data, s->len, &why)) {
        sf_fail("device %c's own saved state is refused: %s", d->name, why);
    }
}

GByteArray *sf_ckpt_stream(unsigned scen)
{
    if (!ckpts[scen].built) {
        build(scen);
    }
    return g_byte_array_ref(ckpts[scen].state[0]);
}

void sf_ckpt_fresh(unsigned scen)
{
    build(scen);
}

void sf_ckpt_restore(unsigned scen)
{
    SfCkpt *k = &ckpts[scen];
    int i;

    if (!k->built || b_grants_lost) {
        build(scen);
    }
    for (i = 0; cores_live && i < 2; i++) {
        qhca_core_cleanup(&sf_pair.dev[i].core);
    }
    for (i = 0; i < 2; i++) {
        HxDev *d = &sf_pair.dev[i];

        ram_put(&k->ram[i], resident ? &resident->ram[i] : &k->ram[i], d);
        glue_put(&k->glue[i], d);
    }
    resident = k;
    pair_put(k);
    load_own(SF_B, hx_ops, k->state[1]);
    load_own(SF_A, &a_ops, k->state[0]);
    cores_live = true;
    hx_grants_add_range(SF_A, 0, HX_RAM_SIZE);
}

void sf_ckpt_end(void)
{
    uint8_t map[HX_RAM_PAGES];
    SfCkpt *k = resident;
    int i;

    if (SF_B->bus_resets != k->glue[1].bus_resets ||
        SF_B->unplugs != k->glue[1].unplugs) {
        b_grants_lost = true;
    } else {
        grant_map(SF_B, map);
        if (memcmp(map, b_grants, sizeof(map))) {
            sf_fail("device B's grants changed during the input");
        }
    }
    for (i = 0; i < 2; i++) {
        qhca_core_cleanup(&sf_pair.dev[i].core);
    }
    cores_live = false;
    wire_free(&sf_pair.wire, sf_pair.held);
    sf_pair.wire_bytes = 0;
}
