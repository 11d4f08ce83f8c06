/*
 * Two qhca devices in two QEMUs, and migrating either QEMU while the
 * devices talk: what the migration qtests share (qhca-migration-test.c,
 * qhca-migration-stream-test.c).
 *
 * Device A is in one QEMU and device B in another, each on a socket
 * netdev (an AF_UNIX datagram pair) whose other end the test holds; the
 * test relays frames between them.  Migrating a node starts a new QEMU
 * with the same machine on a new socket pair, moves the running one into
 * it (QMP migrate, guest RAM and device state), hands the relay's end over
 * to the new socket and the test's handles of the node (QTestState, PCI
 * bus, the libqos driver of the device) to the new QEMU without touching
 * the device: its BARs were mapped by the source and come over with its
 * configuration space, so they are read back, not assigned again.  The
 * other node is never touched: its device sees the wire go quiet for a
 * while and then answer from the new QEMU.
 *
 * The helpers of the two-device harness (qhca-wire.h: ends, MRs, posting,
 * polling) work on either node's device.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef QHCA_MIG_H
#define QHCA_MIG_H

#include "libqos/pci-pc.h"
#include "libqos/malloc-pc.h"
#include "qhca-wire.h"

#define MIG_RAM_MB      64
/* Virtual time each step of the relay gives both QEMUs */
#define MIG_STEP_NS     10000

typedef struct MigNode {
    QTestState *qts;            /* NULL: saved to a file and gone */
    QPCIBus *bus;
    QGuestAllocator alloc;      /* the guest's memory map: it migrates */
    QQhca d;
    int fd;                     /* the relay's end of the node's netdev */
    char name;                  /* 'a' or 'b': netdev n@name, device q@name */
    const uint8_t *mac;
    unsigned gen;               /* migrations so far */
    unsigned from_gen;          /* frames taken from this QEMU */
} MigNode;

typedef struct MigPair {
    MigNode n[2];               /* A, B */
    GQueue q[2];                /* frames waiting to go to node i */
    unsigned from[2];           /* frames taken from node i */
    unsigned to[2];             /* frames handed to node i's socket */
    int mig;                    /* the node being migrated, or -1 */
    int budget;                 /* frames it may send or get; -1: any */
    bool cut;                   /* the budget is spent: its link is cut */
    unsigned lost;              /* frames to or from it, lost */
    unsigned seq;               /* unique migration URIs */
    int64_t downtime_ms;        /* of the last live migration */
} MigPair;

/* Start A and B, each in its QEMU, both devices enabled */
void mig_pair_start(MigPair *p);
void mig_pair_stop(MigPair *p);

/* Relay what the devices sent, without moving any clock */
void mig_pump(MigPair *p);
/* One step: relay, and let both QEMUs' clocks run by MIG_STEP_NS */
void mig_step(MigPair *p);
/* Step until node @i has sent @frames frames in all; false after 2 s */
bool mig_run_until_from(MigPair *p, int i, unsigned frames);

/*
 * Live-migrate node @i to a new QEMU (unix socket).  While the source
 * runs, the wire carries @budget frames (-1: any) to or from it, then
 * cuts its link: what it sends and what is sent to it from then on is
 * lost, and so is what its socket held when it stopped.  The new QEMU
 * starts paused, its clock is set to the source's (the qtest
 * accelerator's virtual clock does not migrate as a vCPU's does), and it
 * runs on a link that carries again.
 */
void mig_migrate(MigPair *p, int i, int budget);

/*
 * Save node @i to @path (migration to file:), the wire as in
 * mig_migrate() until it is loaded; its clock in *@clock
 */
void mig_save_file(MigPair *p, int i, int budget, const char *path,
                   int64_t *clock);
/* Load node @i (saved by mig_save_file()) from @path, with that clock */
void mig_load_file(MigPair *p, int i, const char *path, int64_t clock);

/*
 * A new QEMU for node @i's machine, paused and waiting (-incoming defer),
 * with @extra on its command line (e.g. a redirection of its stderr);
 * *@fd is the test's end of its netdev
 */
QTestState *mig_spawn(MigPair *p, int i, const char *extra, int *fd);
/* The incoming migration's status of @qts ("completed", "failed", ...) */
char *mig_status(QTestState *qts);

/* Step @steps times: is neither device's CQ of @a and @b written? */
bool mig_quiet(MigPair *p, End *a, End *b, int steps);
/* Async events the device of node @i has written since the last call */
unsigned mig_async_events(MigPair *p, int i);

#endif
