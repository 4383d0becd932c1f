/*
 * uvx.c - libuv helpers the two daemons share
 *
 * An object that embeds handles may be freed only after each of their
 * close callbacks has run; uvx_close counts them down for it, so no
 * owner keeps a counter and a close callback of its own.
 */
#include "uvx.h"

#include <assert.h>
#include <stdlib.h>

#include "xalloc.h"

struct uvx_closing {
    size_t pending;
    uvx_done_fn *done;
    void *arg;
};

static void
uvx_close_cb(uv_handle_t *h)
{
    struct uvx_closing *c = h->data;

    if (--c->pending > 0)
        return;
    c->done(c->arg);
    free(c);
}

void
uvx_close(uv_handle_t *const *hs, size_t n, uvx_done_fn *done, void *arg)
{
    struct uvx_closing *c = xmalloc(sizeof(*c));

    assert(n > 0);
    c->pending = n;
    c->done = done;
    c->arg = arg;
    for (size_t i = 0; i < n; i++) {
        hs[i]->data = c;
        uv_close(hs[i], uvx_close_cb);
    }
}

void
uvx_close_one(uv_handle_t *h, uvx_done_fn *done, void *arg)
{
    uvx_close(&h, 1, done, arg);
}
