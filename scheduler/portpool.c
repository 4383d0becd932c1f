/*
 * portpool.c - the master ports the scheduler hands out (pure)
 */
#include "scheduler/portpool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

void
portpool_init(struct portpool *pp, int base, int count)
{
    pp->base = base;
    pp->count = count;
    pp->used = xcalloc((size_t)count + 1, 1);
    pp->nused = 0;
    pp->cursor = 0;
}

void
portpool_release(struct portpool *pp)
{
    free(pp->used);
    memset(pp, 0, sizeof(*pp));
}

void
portpool_clear(struct portpool *pp)
{
    if (pp->used)
        memset(pp->used, 0, (size_t)pp->count);
    pp->nused = 0;
}

int
portpool_alloc(struct portpool *pp)
{
    for (int i = 0; i < pp->count; i++) {
        int idx = (pp->cursor + i) % pp->count;

        if (!pp->used[idx]) {
            pp->cursor = (idx + 1) % pp->count;
            pp->used[idx] = 1;
            pp->nused++;
            return pp->base + idx;
        }
    }
    return -EAGAIN;
}

void
portpool_mark(struct portpool *pp, int port, bool used)
{
    int idx = port - pp->base;

    if (idx < 0 || idx >= pp->count || pp->used[idx] == used)
        return;
    pp->used[idx] = used;
    pp->nused += used ? 1 : -1;
}

int
portpool_nfree(const struct portpool *pp)
{
    return pp->count - pp->nused;
}
