/*
 * commitsync.h - committed transactions made durable off the loop
 *
 * The scheduler opens SQLite with synchronous=NORMAL in WAL mode: a
 * commit writes its frames to the WAL file (the page cache: a kill -9 of
 * the scheduler loses nothing committed) without an fsync. This object
 * makes them durable against power loss: commitsync_request(seq) says
 * that transactions up to seq are committed, and libuv's thread pool
 * runs fdatasync on the WAL file (at most two at once); when one
 * returns, everything committed before it started is on disk and the
 * callback reports that seq on the loop. Requests made while both run
 * are coalesced into the next: one fsync covers every commit made
 * meanwhile (group commit across loop iterations), a commit waits for
 * about one fsync (the second slot starts it at once), and the loop
 * never waits for the disk.
 *
 * The caller holds every reply back until the synced seq covers the
 * commit it depends on (schedd_commit_wait, http_server_hold; the
 * callback releases them: docs/architecture.md "Durable replies"):
 * docs/scale.md "Group commit" gives the argument that this keeps
 * synchronous=FULL's promise.
 *
 * The WAL file is opened by path on the first sync, and its directory is
 * synced once after every open (a new file's entry must survive a power
 * loss too). After each fdatasync the file at the path must still be the
 * one synced (same inode); if SQLite replaced it, it is opened and synced
 * again before the seq is reported. A failed fdatasync is fatal: after
 * one, the kernel may have dropped the dirty pages it could not write,
 * and nothing later can tell what reached the disk (crash-only; the
 * restart recovers from what is durable).
 *
 * Threading: create, request, close and the callback run on the loop
 * thread; only the fdatasync itself runs on a pool thread, on a file
 * descriptor nothing else uses.
 */
#ifndef SCHEDULER_COMMITSYNC_H
#define SCHEDULER_COMMITSYNC_H

#include <stdint.h>

#include <uv.h>

#include "common/err.h"

struct commitsync;

/* Everything up to seq is durable (called on the loop). */
typedef void commitsync_fn(uint64_t seq, void *arg);

/* For the database at db_path (its WAL is db_path + "-wal"). Returns NULL
 * with err set on failure. */
struct commitsync *commitsync_create(uv_loop_t *loop, const char *db_path,
    commitsync_fn *cb, void *arg, struct err *err);
/* Transactions up to seq are committed: make them durable (soon). */
void commitsync_request(struct commitsync *cs, uint64_t seq);
/* The last seq reported durable. */
uint64_t commitsync_synced(const struct commitsync *cs);
/* Stop: what was requested is synced and reported (the sync in flight,
 * and one more if requests came after it started), then cs is freed and
 * done(arg) runs (never synchronously). Accepts NULL (done is then not
 * called). */
void commitsync_close(struct commitsync *cs, void (*done)(void *), void *arg);

#endif
