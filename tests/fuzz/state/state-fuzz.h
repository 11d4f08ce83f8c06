/*
 * The saved-state fuzz target (qhca-fuzz-state): what its parts share.
 * state-fuzz.c has the input format, the run of one input and its checks,
 * and libFuzzer's entry points; state-ckpt.c the checkpoints every input
 * starts from; state-scen.c the situations the checkpoints are taken in
 * (the scenarios) and what each must end in after a real migration.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef QHCA_STATE_FUZZ_H
#define QHCA_STATE_FUZZ_H

#include "harness.h"

#define SF_MS           (1000 * 1000LL)

/* The pair every input runs on: device A is the one loaded */
extern HxPair sf_pair;
#define SF_A            (&sf_pair.dev[0])
#define SF_B            (&sf_pair.dev[1])

/* Print a failed check (a bug, or a broken expectation) and abort */
void G_GNUC_PRINTF(1, 2) G_NORETURN sf_fail(const char *fmt, ...);
/* Print a note for the replay's log (QHCA_FUZZ_STATE_VERBOSE=1, or always) */
void G_GNUC_PRINTF(2, 3) sf_note(bool always, const char *fmt, ...);

/*
 * A scenario: the situation device A is saved in.  @setup runs on a pair
 * hx_pair_setup() brought up and leaves A where it is saved; @verify runs
 * after A was loaded from that very stream (what a migration does) and
 * checks that what was under way ends as it would have without the
 * migration: every completion and every byte (false, with sf_note()s, if
 * not).  @plan is the seed's plan byte (state-fuzz.c, SF_PLAN_*).
 */
typedef struct SfScen {
    const char *name;
    bool (*setup)(void);
    bool (*verify)(void);
    uint8_t plan;
} SfScen;

extern const SfScen sf_scens[];
extern const unsigned sf_nscens;
/*
 * What every scenario starts from (after hx_pair_setup()): more objects
 * of A; the key of its type 1 window, unbound
 */
bool sf_base(void);
extern uint32_t sf_mw1_key;

/*
 * Checkpoints (state-ckpt.c).  sf_ckpt_restore() puts the pair where
 * scenario @scen left it: RAM, the glue's state, the mini-driver's view,
 * the wire and the clock as they were, device B loaded from its saved
 * state and device A from its own, both into freshly made cores; the
 * first call for a scenario builds its checkpoint from scratch
 * (hx_pair_reset(), hx_pair_setup(), the scenario's setup).  A's DMA goes
 * through sf_a_ops: every access outside RAM, the device's BARs and its
 * port must fail, and all of RAM is granted to it (a loaded page list may
 * name any page).  sf_ckpt_end() tears both cores down at the end of an
 * input and checks that B's grants are what they were.
 */
void sf_ckpt_init(void);
void sf_ckpt_restore(unsigned scen);
/*
 * The pair taken to scenario @scen from scratch (its checkpoint taken
 * again) and left as it is: device A the harness's, its grants what the
 * guest granted, as in a real migration of it
 */
void sf_ckpt_fresh(unsigned scen);
void sf_ckpt_end(void);
/* The stream A was saved as in scenario @scen (built if need be): a ref */
GByteArray *sf_ckpt_stream(unsigned scen);
/* A's DMA accesses outside RAM so far (all of them failed) */
extern uint64_t sf_dma_outside;

/* Helpers for scenarios and the input's work (state-scen.c) */
HxQp *sf_qp(HxDev *d, unsigned slot);
uint64_t sf_mr_addr(HxDev *d, uint64_t off);
void sf_fill(HxDev *d, uint64_t off, uint32_t len, uint32_t seed);
bool sf_same(HxDev *d, uint64_t off, HxDev *e, uint64_t eoff, uint32_t len,
             const char *what);
void sf_post(HxDev *d, HxQp *qp, uint8_t opcode, uint64_t wr_id,
             uint64_t off, uint32_t len, uint64_t roff);
void sf_post_recv(HxDev *d, HxQp *qp, uint64_t wr_id, uint64_t off,
                  uint32_t len);
unsigned sf_drop_frames_to(HxDev *d);

#endif
