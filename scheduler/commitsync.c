/*
 * commitsync.c - committed transactions made durable off the loop
 *
 * commitsync.h says what and why. One uv_work_t is reused: while it is
 * in flight, requests only raise `wanted`; its after-work callback
 * reports what it covered and starts the next one when more is wanted.
 * The pool thread touches only the fields marked below, and only between
 * uv_queue_work and the after-work callback, when the loop leaves them
 * alone.
 */
#include "scheduler/commitsync.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/xalloc.h"

struct commitsync {
    uv_loop_t *loop;
    char *wal; /* the WAL's path */
    char *dir; /* its directory */
    uv_work_t work;
    bool busy;       /* work in flight */
    bool closing;    /* commitsync_close was called */
    uint64_t wanted; /* the highest seq requested */
    uint64_t synced; /* the highest seq reported durable */
    commitsync_fn *cb;
    void *arg;
    void (*done)(void *);
    void *done_arg;
    /* The pool thread's, while busy: */
    int fd;          /* the WAL, -1 until opened */
    uint64_t target; /* what this sync covers */
    int err;         /* 0 or the errno of what failed */
    const char *what;
};

/* fsync the directory of the WAL (a new file's entry). */
static int
commitsync_dirsync(const struct commitsync *cs)
{
    int fd = open(cs->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc = 0;

    if (fd < 0)
        return -errno;
    if (fsync(fd) < 0)
        rc = -errno;
    close(fd);
    return rc;
}

/* Open (again) the file now at the WAL's path, and sync its directory. */
static int
commitsync_open(struct commitsync *cs)
{
    if (cs->fd >= 0)
        close(cs->fd);
    cs->fd = open(cs->wal, O_RDONLY | O_CLOEXEC);
    if (cs->fd < 0)
        return -errno;
    return commitsync_dirsync(cs);
}

/* Whether the file at the WAL's path is still the one cs->fd holds. */
static bool
commitsync_same(const struct commitsync *cs)
{
    struct stat a, b;

    return fstat(cs->fd, &a) == 0 && stat(cs->wal, &b) == 0 &&
           a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* On a pool thread. */
static void
commitsync_work_cb(uv_work_t *w)
{
    struct commitsync *cs = container_of(w, struct commitsync, work);
    int rc = 0;

    cs->err = 0;
    for (int tries = 0; tries < 3; tries++) {
        if (cs->fd < 0 && (rc = commitsync_open(cs)) < 0) {
            cs->what = "open";
            break;
        }
        if (fdatasync(cs->fd) < 0) {
            rc = -errno;
            cs->what = "fdatasync";
            break;
        }
        if (commitsync_same(cs))
            break;
        /* SQLite replaced the WAL since we opened it: sync the new one. */
        close(cs->fd);
        cs->fd = -1;
    }
    if (rc == 0 && cs->fd < 0) {
        rc = -ESTALE;
        cs->what = "keep up with";
    }
    cs->err = -rc;
}

static void commitsync_start(struct commitsync *cs);

static void
commitsync_after_cb(uv_work_t *w, int status)
{
    struct commitsync *cs = container_of(w, struct commitsync, work);

    cs->busy = false;
    if (status < 0)
        fatalx("cannot sync the database's WAL '%s': %s", cs->wal,
            uv_strerror(status));
    if (cs->err != 0)
        fatalx("cannot %s the database's WAL '%s': %s; stopping (what "
               "reached the disk is unknown)",
            cs->what, cs->wal, strerror(cs->err));
    cs->synced = cs->target;
    if (cs->cb)
        cs->cb(cs->synced, cs->arg);
    if (cs->closing && cs->wanted <= cs->synced) {
        if (cs->fd >= 0)
            close(cs->fd);
        if (cs->done)
            cs->done(cs->done_arg);
        free(cs->wal);
        free(cs->dir);
        free(cs);
        return;
    }
    commitsync_start(cs);
}

static void
commitsync_start(struct commitsync *cs)
{
    int rc;

    /* Also while closing: the last commits are synced before the end. */
    if (cs->busy || cs->wanted <= cs->synced)
        return;
    cs->target = cs->wanted;
    rc = uv_queue_work(cs->loop, &cs->work, commitsync_work_cb,
        commitsync_after_cb);
    if (rc < 0)
        fatalx("cannot queue the WAL sync: %s", uv_strerror(rc));
    cs->busy = true;
}

struct commitsync *
commitsync_create(uv_loop_t *loop, const char *db_path, commitsync_fn *cb,
    void *arg, struct err *err)
{
    struct commitsync *cs = xcalloc(1, sizeof(*cs));
    char *copy = xstrdup(db_path);

    (void)err;
    cs->loop = loop;
    cs->wal = xasprintf("%s-wal", db_path);
    cs->dir = xstrdup(dirname(copy));
    free(copy);
    cs->fd = -1;
    cs->cb = cb;
    cs->arg = arg;
    return cs;
}

void
commitsync_request(struct commitsync *cs, uint64_t seq)
{
    if (seq > cs->wanted)
        cs->wanted = seq;
    commitsync_start(cs);
}

uint64_t
commitsync_synced(const struct commitsync *cs)
{
    return cs->synced;
}

static void
commitsync_idle_close_cb(uv_handle_t *h)
{
    struct commitsync *cs = h->data;

    if (cs->done)
        cs->done(cs->done_arg);
    free(h);
    free(cs->wal);
    free(cs->dir);
    free(cs);
}

void
commitsync_close(struct commitsync *cs, void (*done)(void *), void *arg)
{
    uv_timer_t *t;

    if (cs == NULL)
        return;
    cs->closing = true;
    cs->done = done;
    cs->done_arg = arg;
    commitsync_start(cs);
    if (cs->busy)
        return; /* commitsync_after_cb finishes */
    if (cs->fd >= 0)
        close(cs->fd);
    cs->fd = -1;
    /* Never synchronously: a closed timer handle's callback. */
    t = xcalloc(1, sizeof(*t));
    uv_timer_init(cs->loop, t);
    t->data = cs;
    uv_close((uv_handle_t *)t, commitsync_idle_close_cb);
}
