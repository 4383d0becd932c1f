/*
 * walckpt.h - the WAL checkpointed on the thread pool
 *
 * The scheduler's connection commits without checkpointing
 * (db_wal_manual); after each commit walckpt_poke is told how many pages
 * the WAL holds, and past WALCKPT_PAGES a PASSIVE checkpoint of a
 * connection of its own (db_ckpt_run) runs on libuv's thread pool, one
 * at a time, so the loop never waits for the checkpoint's two fsyncs. A
 * checkpoint that fails is logged (at most once a minute) and tried
 * again at the next poke: the WAL only grows meanwhile, nothing is lost.
 *
 * Threading: create, poke, close and the after-work callback run on the
 * loop thread; only db_ckpt_run runs on a pool thread, on its own
 * connection.
 */
#ifndef SCHEDULER_WALCKPT_H
#define SCHEDULER_WALCKPT_H

#include <uv.h>

/* SQLite's own threshold for its automatic checkpoint. */
#define WALCKPT_PAGES 1000

struct walckpt;

/* path: the database file (copied). */
struct walckpt *walckpt_create(uv_loop_t *loop, const char *path);
/* The WAL holds pages after a commit: checkpoint it when it is time. */
void walckpt_poke(struct walckpt *w, int pages);
/* Frees w now, or when its checkpoint in flight ends. */
void walckpt_close(struct walckpt *w);

#endif
