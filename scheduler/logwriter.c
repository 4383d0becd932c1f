/*
 * logwriter.c - the log store's writes, on a thread of their own
 *
 * One FIFO of items: the loop appends (under the mutex) and signals the
 * thread; the thread writes the oldest item not yet written, marks it
 * written and wakes the loop (uv_async_send, which coalesces); the loop
 * takes the written items off the front, in order, and calls their done
 * callbacks. So an item's callback never runs before those queued ahead
 * of it, and the thread holds the mutex only to look at the queue, never
 * while it writes.
 */
#include "scheduler/logwriter.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/uvx.h"
#include "common/xalloc.h"
#include "scheduler/logstore.h"

struct lw_item {
    struct lw_item *next;
    struct logwriter_chunk c; /* c.data points into data */
    logwriter_done_fn *done;
    void *arg;
    bool written; /* by the thread (under the mutex) */
    int rc;
    int64_t size;
    char data[]; /* c.len bytes */
};

struct logwriter {
    struct logstore *ls;
    size_t max_queued;
    uv_async_t async; /* the thread wrote something */
    uv_thread_t thread;
    uv_mutex_t mu;
    uv_cond_t cond;
    /* under mu: */
    struct lw_item *head, *tail; /* every item not yet reported done */
    struct lw_item *next_write;  /* the oldest not yet written */
    bool stop;
    /* loop thread only: */
    size_t queued; /* bytes of the items in the queue */
};

static void
lw_thread(void *arg)
{
    struct logwriter *lw = arg;

    uv_mutex_lock(&lw->mu);
    for (;;) {
        struct lw_item *it;

        while (!lw->stop && lw->next_write == NULL)
            uv_cond_wait(&lw->cond, &lw->mu);
        if (lw->stop)
            break;
        it = lw->next_write;
        uv_mutex_unlock(&lw->mu);
        it->rc = logstore_write(lw->ls, it->c.job, it->c.attempt, it->c.rank,
            it->c.err_stream, it->c.offset, it->c.data, it->c.len, &it->size);
        uv_mutex_lock(&lw->mu);
        it->written = true;
        lw->next_write = it->next;
        uv_async_send(&lw->async);
    }
    uv_mutex_unlock(&lw->mu);
}

/* Report the items at the front that are written (all of them with
 * -ECANCELED for the unwritten ones when cancel). */
static void
lw_report(struct logwriter *lw, bool cancel)
{
    for (;;) {
        struct lw_item *it;

        uv_mutex_lock(&lw->mu);
        it = lw->head;
        if (it != NULL && (it->written || cancel)) {
            lw->head = it->next;
            if (lw->head == NULL)
                lw->tail = NULL;
            if (lw->next_write == it)
                lw->next_write = it->next;
        } else {
            it = NULL;
        }
        uv_mutex_unlock(&lw->mu);
        if (it == NULL)
            return;
        lw->queued -= it->c.len;
        if (!it->written) {
            it->rc = -ECANCELED;
            it->size = 0;
        }
        it->done(it->arg, it->rc, it->size, &it->c);
        free(it);
    }
}

static void
lw_async_cb(uv_async_t *a)
{
    lw_report(container_of(a, struct logwriter, async), false);
}

struct logwriter *
logwriter_create(uv_loop_t *loop, struct logstore *ls, size_t max_queued,
    struct err *err)
{
    struct logwriter *lw = xcalloc(1, sizeof(*lw));
    int rc;

    lw->ls = ls;
    lw->max_queued = max_queued;
    if ((rc = uv_async_init(loop, &lw->async, lw_async_cb)) < 0) {
        free(lw);
        err_set(err, rc, "cannot create the log writer's wakeup: %s",
            uv_strerror(rc));
        return NULL;
    }
    uv_mutex_init(&lw->mu);
    uv_cond_init(&lw->cond);
    if ((rc = uv_thread_create(&lw->thread, lw_thread, lw)) < 0) {
        err_set(err, rc, "cannot start the log writer thread: %s",
            uv_strerror(rc));
        uv_cond_destroy(&lw->cond);
        uv_mutex_destroy(&lw->mu);
        uvx_close_one((uv_handle_t *)&lw->async, free, lw);
        return NULL;
    }
    return lw;
}

int
logwriter_write(struct logwriter *lw, const struct logwriter_chunk *c,
    bool force, logwriter_done_fn *done, void *arg)
{
    size_t max = force ? LOGWRITER_FORCE_FACTOR * lw->max_queued
                       : lw->max_queued;
    struct lw_item *it;

    if (lw->queued > 0 && lw->queued + c->len > max)
        return -EAGAIN;
    it = xmalloc(sizeof(*it) + c->len + 1);
    memset(it, 0, sizeof(*it));
    it->c = *c;
    if (c->len > 0)
        memcpy(it->data, c->data, c->len);
    it->c.data = it->data;
    it->done = done;
    it->arg = arg;
    lw->queued += c->len;
    uv_mutex_lock(&lw->mu);
    if (lw->tail != NULL)
        lw->tail->next = it;
    else
        lw->head = it;
    lw->tail = it;
    if (lw->next_write == NULL)
        lw->next_write = it;
    uv_cond_signal(&lw->cond);
    uv_mutex_unlock(&lw->mu);
    return 0;
}

size_t
logwriter_queued(const struct logwriter *lw)
{
    return lw->queued;
}

void
logwriter_destroy(struct logwriter *lw)
{
    if (lw == NULL)
        return;
    uv_mutex_lock(&lw->mu);
    lw->stop = true;
    uv_cond_signal(&lw->cond);
    uv_mutex_unlock(&lw->mu);
    uv_thread_join(&lw->thread);
    lw_report(lw, true);
    uv_cond_destroy(&lw->cond);
    uv_mutex_destroy(&lw->mu);
    uvx_close_one((uv_handle_t *)&lw->async, free, lw);
}
