/*
 * walckpt.c - the WAL checkpointed on the thread pool (walckpt.h)
 */
#include "scheduler/walckpt.h"

#include <stdbool.h>
#include <stdlib.h>

#include "common/log.h"
#include "common/timeid.h"
#include "common/xalloc.h"
#include "scheduler/db.h"

struct walckpt {
    uv_loop_t *loop;
    uv_work_t work;
    struct db_ckpt *ck;
    bool busy;           /* a checkpoint in flight */
    bool closing;        /* walckpt_close was called while busy */
    int64_t warned_mono; /* last failure logged */
    /* The pool thread's while busy: */
    int rc;
    int wal_pages;
    int copied;
    char msg[256];
};

struct walckpt *
walckpt_create(uv_loop_t *loop, const char *path)
{
    struct walckpt *w = xcalloc(1, sizeof(*w));

    w->loop = loop;
    w->ck = db_ckpt_create(path);
    w->work.data = w;
    return w;
}

static void
walckpt_free(struct walckpt *w)
{
    db_ckpt_destroy(w->ck);
    free(w);
}

static void
walckpt_work(uv_work_t *req)
{
    struct walckpt *w = req->data;

    w->rc = db_ckpt_run(w->ck, &w->wal_pages, &w->copied, w->msg,
        sizeof(w->msg));
}

static void
walckpt_after(uv_work_t *req, int status)
{
    struct walckpt *w = req->data;
    int64_t mono = timeid_mono_ms();

    w->busy = false;
    if (w->closing) {
        walckpt_free(w);
        return;
    }
    if (status == 0 && w->rc == 0) {
        log_debug("wal checkpoint: %d of %d pages copied", w->copied,
            w->wal_pages);
        return;
    }
    if (w->warned_mono == 0 || mono - w->warned_mono >= 60000) {
        w->warned_mono = mono;
        log_warn("%s (the WAL keeps growing until a checkpoint succeeds)",
            status == 0 ? w->msg : uv_strerror(status));
    }
}

void
walckpt_poke(struct walckpt *w, int pages)
{
    int rc;

    if (w == NULL || w->busy || pages < WALCKPT_PAGES)
        return;
    rc = uv_queue_work(w->loop, &w->work, walckpt_work, walckpt_after);
    if (rc < 0) {
        log_warn("cannot queue a WAL checkpoint: %s", uv_strerror(rc));
        return;
    }
    w->busy = true;
}

void
walckpt_close(struct walckpt *w)
{
    if (w == NULL)
        return;
    if (w->busy)
        w->closing = true;
    else
        walckpt_free(w);
}
