/*
 * db_wal.c - WAL checkpoints off the loop (db.h, "WAL checkpoints")
 *
 * SQLite checkpoints its WAL by itself once it holds 1,000 pages, in the
 * thread that commits, and a checkpoint fsyncs the WAL and the database
 * file: on the scheduler's loop that was seconds of stall on a busy disk
 * (9,000 simulated agents: a 4 s stall every 5 s, when their last_seen
 * was written). db_wal_manual turns that off for a connection and counts
 * the WAL's pages instead; a second connection of its own (struct
 * db_ckpt), used by one pool thread at a time, runs PASSIVE checkpoints:
 * they copy what no reader needs and never wait for a lock, and, the
 * connection keeping SQLite's default synchronous=FULL, sync the WAL
 * before the database is written and the database after, as the
 * automatic checkpoint did.
 */
#include "scheduler/db.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/xalloc.h"
#include "scheduler/db_int.h"

struct db_ckpt {
    char *path;
    sqlite3 *sq; /* opened by the first run */
};

static int
db_wal_hook(void *arg, sqlite3 *sq, const char *name, int pages)
{
    struct db *db = arg;

    (void)sq;
    (void)name;
    db->wal_pages = pages;
    return SQLITE_OK;
}

void
db_wal_manual(struct db *db)
{
    /* Replaces the automatic checkpoint's own hook. */
    sqlite3_wal_hook(db->sq, db_wal_hook, db);
}

int
db_wal_pages(const struct db *db)
{
    return db->wal_pages;
}

struct db_ckpt *
db_ckpt_create(const char *path)
{
    struct db_ckpt *c = xcalloc(1, sizeof(*c));

    c->path = xstrdup(path);
    return c;
}

/* Open c's connection and read the file once: a connection learns that
 * the file is in WAL mode when it first reads it (until then a
 * checkpoint does nothing). */
static int
db_ckpt_open(struct db_ckpt *c, char *msg, size_t cap)
{
    int rc = sqlite3_open_v2(c->path, &c->sq,
        SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);

    if (rc == SQLITE_OK)
        rc = sqlite3_exec(c->sq, "PRAGMA schema_version", NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        return 0;
    snprintf(msg, cap, "cannot open '%s' to checkpoint it: %s", c->path,
        c->sq ? sqlite3_errmsg(c->sq) : sqlite3_errstr(rc));
    sqlite3_close(c->sq);
    c->sq = NULL;
    return -EIO;
}

int
db_ckpt_run(struct db_ckpt *c, int *wal_pages, int *copied, char *msg,
    size_t cap)
{
    int rc;

    *wal_pages = *copied = 0;
    if (c->sq == NULL && db_ckpt_open(c, msg, cap) < 0)
        return -EIO;
    rc = sqlite3_wal_checkpoint_v2(c->sq, "main", SQLITE_CHECKPOINT_PASSIVE,
        wal_pages, copied);
    if (rc != SQLITE_OK && rc != SQLITE_BUSY) {
        snprintf(msg, cap, "checkpoint of '%s': %s", c->path,
            sqlite3_errmsg(c->sq));
        return -EIO;
    }
    return 0;
}

void
db_ckpt_destroy(struct db_ckpt *c)
{
    if (c == NULL)
        return;
    sqlite3_close(c->sq);
    free(c->path);
    free(c);
}
