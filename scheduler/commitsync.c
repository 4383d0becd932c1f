/*
 * commitsync.c - committed transactions made durable off the loop
 *
 * commitsync.h says what and why. Up to COMMITSYNC_SLOTS fdatasyncs run
 * at once, each in its own slot (a uv_work_t and a descriptor of its
 * own): a commit made while one runs starts the next at once instead of
 * waiting for it to end, so a reply waits for about one fsync, not two.
 * A slot covers every commit made before it started (its target), so
 * slots may end in any order: the synced point is the highest target
 * that ended. A pool thread touches only its slot's fields, and only
 * between uv_queue_work and the after-work callback, when the loop
 * leaves them alone.
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

#define COMMITSYNC_SLOTS 2

struct commitsync;

struct commitsync_slot {
    struct commitsync *cs;
    uv_work_t work;
    bool busy; /* work in flight */
    /* The pool thread's, while busy: */
    int fd;          /* the WAL, -1 until opened */
    uint64_t target; /* what this sync covers */
    int err;         /* 0 or the errno of what failed */
    const char *what;
};

struct commitsync {
    uv_loop_t *loop;
    char *wal; /* the WAL's path */
    char *dir; /* its directory */
    struct commitsync_slot slots[COMMITSYNC_SLOTS];
    bool closing;     /* commitsync_close was called */
    uint64_t wanted;  /* the highest seq requested */
    uint64_t started; /* the highest target started */
    uint64_t synced;  /* the highest seq reported durable */
    commitsync_fn *cb;
    void *arg;
    void (*done)(void *);
    void *done_arg;
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
commitsync_open(struct commitsync_slot *sl)
{
    if (sl->fd >= 0)
        close(sl->fd);
    sl->fd = open(sl->cs->wal, O_RDONLY | O_CLOEXEC);
    if (sl->fd < 0)
        return -errno;
    return commitsync_dirsync(sl->cs);
}

/* Whether the file at the WAL's path is still the one sl->fd holds. */
static bool
commitsync_same(const struct commitsync_slot *sl)
{
    struct stat a, b;

    return fstat(sl->fd, &a) == 0 && stat(sl->cs->wal, &b) == 0 &&
           a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* On a pool thread. */
static void
commitsync_work_cb(uv_work_t *w)
{
    struct commitsync_slot *sl = container_of(w, struct commitsync_slot, work);
    int rc = 0;

    sl->err = 0;
    for (int tries = 0; tries < 3; tries++) {
        if (sl->fd < 0 && (rc = commitsync_open(sl)) < 0) {
            sl->what = "open";
            break;
        }
        if (fdatasync(sl->fd) < 0) {
            rc = -errno;
            sl->what = "fdatasync";
            break;
        }
        if (commitsync_same(sl))
            break;
        /* SQLite replaced the WAL since we opened it: sync the new one. */
        close(sl->fd);
        sl->fd = -1;
    }
    if (rc == 0 && sl->fd < 0) {
        rc = -ESTALE;
        sl->what = "keep up with";
    }
    sl->err = -rc;
}

static bool
commitsync_idle(const struct commitsync *cs)
{
    for (int i = 0; i < COMMITSYNC_SLOTS; i++) {
        if (cs->slots[i].busy)
            return false;
    }
    return true;
}

static void
commitsync_free(struct commitsync *cs)
{
    for (int i = 0; i < COMMITSYNC_SLOTS; i++) {
        if (cs->slots[i].fd >= 0)
            close(cs->slots[i].fd);
    }
    if (cs->done)
        cs->done(cs->done_arg);
    free(cs->wal);
    free(cs->dir);
    free(cs);
}

static void commitsync_start(struct commitsync *cs);

static void
commitsync_after_cb(uv_work_t *w, int status)
{
    struct commitsync_slot *sl = container_of(w, struct commitsync_slot, work);
    struct commitsync *cs = sl->cs;

    sl->busy = false;
    if (status < 0)
        fatalx("cannot sync the database's WAL '%s': %s", cs->wal,
            uv_strerror(status));
    if (sl->err != 0)
        fatalx("cannot %s the database's WAL '%s': %s; stopping (what "
               "reached the disk is unknown)",
            sl->what, cs->wal, strerror(sl->err));
    /* fdatasync covers everything written before it began. */
    if (sl->target > cs->synced) {
        cs->synced = sl->target;
        if (cs->cb)
            cs->cb(cs->synced, cs->arg);
    }
    if (cs->closing && cs->wanted <= cs->synced && commitsync_idle(cs)) {
        commitsync_free(cs);
        return;
    }
    commitsync_start(cs);
}

static void
commitsync_start(struct commitsync *cs)
{
    struct commitsync_slot *sl = NULL;
    int rc;

    /* Also while closing: the last commits are synced before the end. */
    if (cs->wanted <= cs->started)
        return;
    for (int i = 0; i < COMMITSYNC_SLOTS && sl == NULL; i++) {
        if (!cs->slots[i].busy)
            sl = &cs->slots[i];
    }
    if (sl == NULL)
        return; /* the first slot to end starts it */
    sl->target = cs->started = cs->wanted;
    rc = uv_queue_work(cs->loop, &sl->work, commitsync_work_cb,
        commitsync_after_cb);
    if (rc < 0)
        fatalx("cannot queue the WAL sync: %s", uv_strerror(rc));
    sl->busy = true;
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
    for (int i = 0; i < COMMITSYNC_SLOTS; i++) {
        cs->slots[i].cs = cs;
        cs->slots[i].fd = -1;
    }
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

    free(h);
    commitsync_free(cs);
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
    if (!commitsync_idle(cs))
        return; /* commitsync_after_cb finishes */
    /* Never synchronously: a closed timer handle's callback. */
    t = xcalloc(1, sizeof(*t));
    uv_timer_init(cs->loop, t);
    t->data = cs;
    uv_close((uv_handle_t *)t, commitsync_idle_close_cb);
}
