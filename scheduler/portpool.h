/*
 * portpool.h - the master ports the scheduler hands out (pure)
 *
 * Each live attempt holds one port of the configured range (its rank 0
 * listens there for the torchrun rendezvous) from its placement until it
 * is dropped: a withdrawn attempt's rank 0 may still listen while it is
 * being killed. A port only has to be unique on the host that listens:
 * the scheduler keeps one pool per master node (node rank 0's; created
 * when a node is first a master, schedd.h), so the same port serves
 * jobs mastered on different nodes. Ports are handed out round-robin so
 * that one freed a moment ago is reused last.
 *
 * Pure: nothing here does I/O.
 */
#ifndef SCHEDULER_PORTPOOL_H
#define SCHEDULER_PORTPOOL_H

#include <stdbool.h>

struct portpool {
    int base;
    int count;
    unsigned char *used; /* count flags */
    int nused;           /* how many of them are set */
    int cursor;
};

/* A pool of count ports from base, all free. */
void portpool_init(struct portpool *pp, int base, int count);
void portpool_release(struct portpool *pp);
/* Mark every port free. */
void portpool_clear(struct portpool *pp);

/* The next free port (marked used), or -EAGAIN when none is free. */
int portpool_alloc(struct portpool *pp);
/* Mark a port used or free; ports outside the range are ignored. */
void portpool_mark(struct portpool *pp, int port, bool used);
/* How many are free (O(1)). */
int portpool_nfree(const struct portpool *pp);

#endif
