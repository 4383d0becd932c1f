/*
 * db.h - every SQL statement of the scheduler, behind typed functions
 *
 * Only the store's own files (scheduler/db*.c, split by concern behind
 * the private db_int.h) include sqlite3.h. The database is opened in WAL
 * mode with foreign keys on; every statement is prepared once in db_open.
 *
 * Group commit: mutating functions begin a transaction lazily (BEGIN
 * IMMEDIATE) if none is open; db_txn_commit() ends it. The scheduler
 * commits once per loop iteration, before any reply that depends on the
 * change is written, so one fsync covers every change of that iteration.
 * Reads see the open transaction's changes.
 *
 * Errors: functions return 0 or a negative errno. SQLite failures are
 * logged once here with a call-site label, sqlite3_errmsg and the
 * extended code, then mapped: IOERR → -EIO, FULL → -ENOSPC, READONLY →
 * -EROFS, CONSTRAINT → -EEXIST, BUSY/LOCKED → -EBUSY, CORRUPT/NOTADB →
 * -EIO, anything else → -EIO. A lookup that finds nothing returns -ENOENT
 * without logging.
 *
 * Threading: the loop thread only.
 */
#ifndef SCHEDULER_DB_H
#define SCHEDULER_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "scheduler/attempt.h"
#include "scheduler/health.h"
#include "scheduler/job.h"
#include "scheduler/node.h"
#include "scheduler/policy.h"

struct db;
struct sqlite3;

struct db_open_opts {
    bool sync_full; /* synchronous=FULL, else NORMAL */
    /* Refuse a lost or damaged database instead of starting an empty one
     * (db_check.c): a missing file is created only when nothing shows
     * there was one (the marker path + DB_MARKER_SUFFIX, which db_open
     * writes once the schema is in, and SQLite's -wal and -shm files);
     * a file with no schema where the marker is, or one SQLite finds
     * damaged, is refused. */
    bool guard;
    /* Bound on PRAGMA quick_check at open (a check cut short is logged,
     * and the open goes on); 0: no check. */
    int64_t check_ms;
};

/* The marker's name: the database's path with this appended. */
#define DB_MARKER_SUFFIX "-created"

/* Open the database at path (creating it if missing, unless the guard
 * says it was lost) and bring its schema up to date. Refuses a database
 * whose schema is newer than this binary knows (-EPROTO). Returns NULL
 * with err set; err->code is -ENODATA for a lost database and -EUCLEAN
 * for a damaged one (both only with guard, but for a file SQLite cannot
 * read as a database at all, which is -EUCLEAN always). */
struct db *db_open(const char *path, const struct db_open_opts *opts,
    struct err *err);
/* Rolls back an open transaction, finalizes statements, closes. Accepts
 * NULL. */
void db_close(struct db *db);

/* ---- WAL checkpoints (db_wal.c) ------------------------------------------
 *
 * db_wal_manual: db's commits no longer checkpoint the WAL (SQLite's
 * automatic checkpoint, at 1,000 pages, fsyncs twice in the committing
 * thread); db_wal_pages says how many pages it held at the last commit.
 * A struct db_ckpt is a connection of its own that db_ckpt_run
 * checkpoints with (PASSIVE: it never waits for a lock, and copies what
 * no reader still needs), made for one thread at a time: the scheduler
 * runs it on the thread pool (walckpt.c). db_ckpt_run: 0 (pages in the
 * WAL and copied out through the pointers) or -EIO with msg set. */
void db_wal_manual(struct db *db);
int db_wal_pages(const struct db *db);
struct db_ckpt;
struct db_ckpt *db_ckpt_create(const char *path);
int db_ckpt_run(struct db_ckpt *c, int *wal_pages, int *copied, char *msg,
    size_t cap);
void db_ckpt_destroy(struct db_ckpt *c);

/* The schema version the database is at (PRAGMA user_version). */
int db_schema_version(struct db *db);

/* ---- transactions ------------------------------------------------------- */

/* Begin the iteration's transaction if none is open. */
int db_txn_begin(struct db *db);
/* Commit the open transaction; 0 when none is open. On failure the
 * transaction is rolled back. */
int db_txn_commit(struct db *db);
void db_txn_rollback(struct db *db);
bool db_txn_is_open(const struct db *db);

/* ---- replication (db_repl.c) -------------------------------------------- */

/* A replica's database (scheduler/repl.h): refuse a schema with a table
 * that has no primary key (its changes could not be recorded: -EINVAL
 * with err naming it), set synchronous=OFF (the Raft log is what is
 * durable; this file is rebuilt from it at start) and record the changes
 * of every transaction from now on. */
int db_repl_enable(struct db *db, struct err *err);
/* The changes of the open transaction so far, as a changeset (call just
 * before db_txn_commit). *data NULL and *len 0 when there are none or
 * replication is off; else caller frees. 0 or a negative errno. */
int db_txn_changes(struct db *db, void **data, size_t *len);
/* Apply another replica's changeset in a transaction of its own (none may
 * be open: -EBUSY). A conflict aborts it all: -EIO with err saying which
 * table (the states diverged). */
int db_changes_apply(struct db *db, const void *data, size_t len,
    struct err *err);
/* The whole database as the bytes of a database file (a replica's
 * snapshot). No transaction may be open (-EBUSY). *data: caller frees. */
int db_image_save(struct db *db, void **data, size_t *len);
/* Replace the whole database by an image db_image_save made (a snapshot
 * restore). No transaction may be open. 0, -EINVAL (not an image), -EIO,
 * with err set. */
int db_image_load(struct db *db, const void *data, size_t len, struct err *err);

/* The replicas table (schema/0014-replicas.sql): the leader records its
 * Raft address and API URL when it starts to serve. */
int db_replica_set(struct db *db, uint64_t id, const char *address,
    const char *url, int64_t led_ms);
/* The API URL replica id recorded into buf: 0, -ENOENT (it never led). */
int db_replica_url(struct db *db, uint64_t id, char *buf, size_t len);

/* ---- whole-database copies (db_copy.c) ---------------------------------- */

/* A consistent copy of the committed state, as the bytes of a database
 * file (the online backup: docs/operations.md "Backup and restore"). It
 * reads through a read-only connection of its own, so it sees nothing of
 * the iteration's open transaction. *data: caller frees. 0, or -EIO with
 * err set. */
int db_backup(struct db *db, char **data, size_t *len, struct err *err);
/* The database file at path (a backup, or a stopped single scheduler's
 * lockstep.db) as a seed: checked (-EUCLEAN damaged; -EINVAL not a
 * lockstep database), brought to this binary's schema in memory
 * (-EPROTO a newer one) without a write to the file, its replicas table
 * emptied, and returned as an image for db_image_load. *data: caller
 * frees. 0, or a negative errno with err naming the file. */
int db_seed_image(const char *path, void **data, size_t *len, struct err *err);

/* ---- nodes -------------------------------------------------------------- */

int db_node_insert(struct db *db, const struct node *node);
/* Everything but last_seen_ms. */
int db_node_update(struct db *db, const struct node *node);
int db_node_touch(struct db *db, const char *name, int64_t last_seen_ms);
/* The witness set last sent to the node and its agent's witness port
 * (scheduler/nodes_witness.h). */
int db_node_witness(struct db *db, const struct node *node);
/* Forget a node (an operator removed it): its row stays, for the
 * placements that name it, but is never loaded again; a node of that
 * name that registers later (db_node_insert) takes it over. */
int db_node_remove(struct db *db, const char *name);
/* Create a node for every row and add it to t. */
int db_nodes_load(struct db *db, struct node_table *t);

/* ---- jobs --------------------------------------------------------------- */

/* Insert a new job (state, user, spec, submit_ms set); sets job->id. */
int db_job_insert(struct db *db, struct job *job);
/* Write state, reason, start/end, attempt and failure evidence. */
int db_job_update(struct db *db, const struct job *job);
/* Load one job; -ENOENT when there is none. *out: caller destroys. */
int db_job_get(struct db *db, int64_t id, struct job **out);
/* Add every unfinished job to t, in id order. */
int db_jobs_load_unfinished(struct db *db, struct job_table *t);

struct db_job_filter {
    const char *user; /* NULL: every user */
    bool has_state;
    enum proto_job_state state;
    bool all;           /* false: only unfinished jobs */
    bool ended;         /* only finished jobs (history); beats all */
    const char *name;   /* NULL: any name; else exactly this one */
    int64_t ended_from; /* 0: any; else only jobs ended at or after it */
    int64_t limit;      /* 0: no limit; else at most this many */
};

/* The job is borrowed for the call. A non-zero return stops the walk and
 * is returned. */
typedef int db_job_fn(struct job *job, void *arg);
/* Newest first (by id). name, ended_from and limit are applied to the
 * rows the user/state/all/ended statement returns. */
int db_jobs_foreach(struct db *db, const struct db_job_filter *filter,
    db_job_fn *fn, void *arg);

/* ---- attempts ----------------------------------------------------------- */

/* Insert the attempt row, its placements and its (pending) ranks. */
int db_attempt_insert(struct db *db, const struct attempt *a);
/* Write its state, reason, times, failure evidence and pending hang. */
int db_attempt_update(struct db *db, const struct attempt *a);
int db_rank_update(struct db *db, const struct attempt *a,
    const struct attempt_rank *r);
int db_placement_release(struct db *db, const struct placement *p);

/* The node that ran rank of (job_id, attempt), into node (cap bytes),
 * without loading the attempt: 0, -ENOENT (no such attempt), -ERANGE
 * (no such rank) or another negative errno. */
int db_rank_node(struct db *db, int64_t job_id, int attempt, int rank,
    char *node, size_t cap);
/* One attempt with placements, ranks and directives; -ENOENT when absent.
 * *out: caller destroys. */
int db_attempt_get(struct db *db, int64_t job_id, int num,
    struct attempt **out);
/* Every attempt of a job, oldest first. *out (array of pointers) and each
 * attempt: caller frees/destroys. */
int db_attempts_load_job(struct db *db, int64_t job_id, struct attempt ***out,
    size_t *n);
/* Attempts that are active or still hold a placement; fn takes ownership
 * of each. */
typedef int db_attempt_fn(struct attempt *a, void *arg);
int db_attempts_load_live(struct db *db, db_attempt_fn *fn, void *arg);

/* ---- checkpoints -------------------------------------------------------- */

/* A complete checkpoint (a row of the registry). Strings are borrowed:
 * for the call (insert) or for the callback (foreach). */
struct db_checkpoint {
    int64_t job_id;
    int64_t step;
    int attempt;
    const char *path;
    int committed;
    int64_t complete_ms;
    const char *source; /* convention sdk api */
};

/* Record a complete checkpoint. Returns 1 when recorded, 0 when the job
 * already had that step (nothing changes), or a negative errno. */
int db_checkpoint_insert(struct db *db, const struct db_checkpoint *c);
typedef int db_checkpoint_fn(const struct db_checkpoint *c, void *arg);
/* A job's complete checkpoints, lowest step first. */
int db_checkpoints_foreach(struct db *db, int64_t job_id, db_checkpoint_fn *fn,
    void *arg);

/* Record that `rank` committed `step` in the attempt. Returns 1 when new,
 * 0 when it had been recorded, or a negative errno. */
int db_commit_insert(struct db *db, int64_t job_id, int attempt, int64_t step,
    int rank, int64_t time_ms);
typedef int db_commit_fn(int rank, int64_t step, void *arg);
/* The recorded commits of an attempt for steps above `above`. */
int db_commits_foreach(struct db *db, int64_t job_id, int attempt,
    int64_t above, db_commit_fn *fn, void *arg);

/* ---- blame -------------------------------------------------------------- */

int db_blame_insert(struct db *db, const char *node, int64_t job_id,
    int attempt, int64_t time_ms, const char *kind, const char *evidence,
    enum policy_blame_status status, int64_t step);
/* Withdraw the blame an attempt's failure put on nodes (rows provisional
 * or confirmed; its evidence's blame becomes "withdrawn"), at time_ms,
 * with note saying why. */
int db_blame_withdraw(struct db *db, int64_t job_id, int attempt,
    int64_t time_ms, const char *note);
/* Set row id's status (to confirmed or withdrawn; a withdrawal also marks
 * attempt (job_id, attempt)'s evidence), at time_ms, with note. */
int db_blame_settle(struct db *db, int64_t id, int64_t job_id, int attempt,
    enum policy_blame_status status, int64_t time_ms, const char *note);
/* An operator's uncordon: the node's provisional and confirmed rows
 * become "reset" (kept, no longer counted). */
int db_blame_reset(struct db *db, const char *node, int64_t time_ms,
    const char *note);

/* A blame row; strings borrowed for the callback. */
struct db_blame {
    int64_t id;
    const char *node;
    int64_t job_id;
    int attempt;
    int64_t time_ms;
    const char *kind;
    const char *evidence;
    enum policy_blame_status status;
    int64_t step;       /* the failing rank's step; -1 none */
    int64_t settled_ms; /* when the status last changed; 0 never */
    const char *note;   /* why */
};
typedef int db_blame_fn(const struct db_blame *b, void *arg);
/* The confirmed blame of a node since since_ms, oldest first (what the
 * exclusion counts; policy_blame_counts says which of them count). */
int db_blame_node_foreach(struct db *db, const char *node, int64_t since_ms,
    db_blame_fn *fn, void *arg);
/* Every blame row of a node, newest first, at most limit. */
int db_blame_node_history(struct db *db, const char *node, int limit,
    db_blame_fn *fn, void *arg);
/* A number that changes whenever any blame row is written (inserted,
 * withdrawn, settled, reset; also by a write later rolled back): a copy
 * read at one value is current while it stays the same. Never 0. */
uint64_t db_blame_gen(const struct db *db);
/* Blame a job put on nodes that still stands (provisional or confirmed)
 * since since_ms. */
int db_blame_job_foreach(struct db *db, int64_t job_id, int64_t since_ms,
    db_blame_fn *fn, void *arg);
/* Every provisional row, in order. */
int db_blame_provisional_foreach(struct db *db, db_blame_fn *fn, void *arg);

/* ---- rank statistics ---------------------------------------------------- */

/* One rank's summary of one window (schema/0007, rankwin.h). Strings are
 * borrowed for the call or the callback. */
struct db_rank_stat {
    int64_t job_id;
    int attempt;
    int rank;
    int64_t window_ms; /* when the window closed (wall clock) */
    const char *node;
    struct rankwin_summary s;
};

int db_rank_stat_insert(struct db *db, const struct db_rank_stat *r);
/* Keep only the newest `keep` windows (by window_ms) of a job's rows. */
int db_rank_stats_prune(struct db *db, int64_t job_id, int keep);
typedef int db_rank_stat_fn(const struct db_rank_stat *r, void *arg);
/* A job's rows, newest window first, then by attempt and rank. */
int db_rank_stats_foreach(struct db *db, int64_t job_id, db_rank_stat_fn *fn,
    void *arg);

/* One rank's figures for one timed section in one window (schema/0008,
 * rankwin.h). Strings are borrowed for the call or the callback. */
struct db_rank_section {
    int64_t job_id;
    int attempt;
    int rank;
    int64_t window_ms;
    const char *node;
    const char *section;
    int64_t p50_us, p99_us, n;
    int64_t median_us; /* the job's for the section; 0 judged no one */
    bool slow;
};

int db_rank_section_insert(struct db *db, const struct db_rank_section *r);
/* Keep only the newest `keep` windows of a job's section rows. */
int db_rank_sections_prune(struct db *db, int64_t job_id, int keep);
typedef int db_rank_section_fn(const struct db_rank_section *r, void *arg);
/* A job attempt's section rows, newest window first, then by rank and
 * section. */
int db_rank_sections_foreach(struct db *db, int64_t job_id, int attempt,
    db_rank_section_fn *fn, void *arg);

/* ---- directives --------------------------------------------------------- */

/* A new directive of attempt a. */
int db_directive_insert(struct db *db, const struct attempt *a,
    const struct attempt_directive *d);
/* d is done (its done_ms). */
int db_directive_done(struct db *db, const struct attempt *a,
    const struct attempt_directive *d);

/* ---- failure history (crash loops) -------------------------------------- */

struct db_failure_row {
    int attempt;
    struct evidence failure; /* its evidence */
    int64_t resume_step;
    /* How the asked-for rank ended in that attempt. */
    bool rank_known;
    enum proto_rank_state rank_state;
    bool rank_has_exit;
    int rank_exit_code;
    int rank_signal;
    int64_t rank_step;
    int64_t rank_end_ms;
    int64_t detected_ms; /* when that attempt's failure was seen */
    char **nodes;        /* the nodes it ran on, by node rank */
    size_t nnodes;
};

/* Every failed attempt of a job, oldest first, with how `rank` ended in
 * each. *out: free with db_failure_rows_free. */
int db_job_failures(struct db *db, int64_t job_id, int rank,
    struct db_failure_row **out, size_t *n);
void db_failure_rows_free(struct db_failure_row *v, size_t n);

/* ---- goodput ------------------------------------------------------------ */

/* One attempt with what goodput needs of its job and checkpoints. */
struct db_goodput_row {
    int64_t job_id;
    int attempt;
    enum proto_attempt_state state;
    int64_t start_ms;
    int64_t running_ms;
    int64_t end_ms;
    int64_t failed_ms;
    bool has_failure;
    enum policy_kind failure_kind;
    int64_t resume_step;
    int resumed_ckpt_attempt; /* the checkpoint it resumed from: the */
    int64_t resumed_ckpt_ms;  /* attempt that completed it and when */
    int last_ckpt_attempt;    /* the job's highest complete checkpoint */
    int64_t last_ckpt_ms;
    enum proto_job_state job_state;
    int64_t job_end_ms;
    int world_size;
};
typedef int db_goodput_fn(const struct db_goodput_row *r, void *arg);
/* Every attempt of job_id (all jobs when 0), by job then attempt. */
int db_goodput_foreach(struct db *db, int64_t job_id, db_goodput_fn *fn,
    void *arg);

/* ---- node health (db_health.c) ------------------------------------------ */

/* Write finding f of node (insert when f->id is 0, setting it; else
 * update). A closed one records now, and who closed it and why (NULL:
 * the scheduler); the node's oldest closed findings are pruned. */
int db_health_finding_put(struct db *db, const char *node,
    struct health_finding *f, int64_t now, const char *closed_by,
    const char *closed_why);
/* A finding as stored, for the callback (strings borrowed). */
struct db_finding {
    const char *node;
    struct health_finding f;
    int64_t closed_ms;
    const char *closed_how;
    const char *closed_by;
    const char *closed_why;
};
typedef int db_finding_fn(const struct db_finding *r, void *arg);
/* The node's findings, open ones first, then the newest closed ones;
 * at most limit. */
int db_health_findings_foreach(struct db *db, const char *node, int limit,
    db_finding_fn *fn, void *arg);
/* Write a check's latest run on node. */
int db_health_check_put(struct db *db, const char *node,
    const struct health_check *hc, int64_t now);
/* Add a result that changed something to node's history (pruned). */
int db_health_result_insert(struct db *db, const char *node,
    const struct proto_check_result *r, int64_t now);
struct db_health_result {
    const char *check; /* borrowed for the callback */
    const char *code;
    const char *scope;
    const char *status;
    const char *evidence;
    int64_t run;
    int64_t at_ms;
};
typedef int db_health_result_fn(const struct db_health_result *r, void *arg);
/* The node's newest `limit` history rows, newest first. */
int db_health_results_foreach(struct db *db, const char *node, int limit,
    db_health_result_fn *fn, void *arg);
/* An operator removed node: its open findings close ("removed") and its
 * checks' latest runs go, so a node of that name registering later
 * starts afresh. */
int db_health_forget(struct db *db, const char *node, int64_t now);
/* Give the loaded nodes their open findings and checks' latest runs. */
int db_health_load(struct db *db, struct node_table *t);

/* ---- events ------------------------------------------------------------- */

/* detail: a JSON object as text ("{}" when NULL). */
int db_event_insert(struct db *db, int64_t time_ms, const char *actor,
    const char *subject, const char *kind, const char *detail);

struct db_event {
    int64_t id;
    int64_t time_ms;
    const char *actor; /* borrowed for the callback */
    const char *subject;
    const char *kind;
    const char *detail;
};
typedef int db_event_fn(const struct db_event *ev, void *arg);
/* The newest `limit` events of subject, newest first. */
int db_events_foreach(struct db *db, const char *subject, int limit,
    db_event_fn *fn, void *arg);

/* What GET /v1/events selects: NULL / 0 fields do not filter. */
struct db_event_filter {
    const char *subject; /* "node/n1", "job/12" */
    const char *kind;    /* a GLOB pattern: "node_lost", "node_*" */
    int64_t since_ms;    /* time_ms >= since_ms */
    int64_t after_id;    /* > 0: id > after_id, oldest first (follow) */
    int limit;           /* at most this many */
};
/* The events that match f in id order: with f->after_id the oldest ones
 * after it, else the newest `limit`. */
int db_events_query(struct db *db, const struct db_event_filter *f,
    db_event_fn *fn, void *arg);
/* Delete at most `max` events older than before_ms (retention); *n: how
 * many went. */
int db_events_prune(struct db *db, int64_t before_ms, int max, int64_t *n);

/* ---- the alert queue (db_obs.c) ----------------------------------------- */

struct db_alert {
    int64_t id;
    int64_t time_ms;
    char *kind;     /* owned when read by db_alert_oldest (db_alert_free) */
    char *node;     /* "" none */
    int64_t job_id; /* 0 none */
    char *reason;
    int tries;
    int64_t next_ms; /* not before, wall clock */
    char *last_error;
};
/* Queue a (kind, node, job_id, reason, time_ms); *id (may be NULL): its
 * id. */
int db_alert_insert(struct db *db, const struct db_alert *a, int64_t *id);
int db_alert_count(struct db *db, int64_t *n);
/* The oldest queued alert into *out (free with db_alert_free); -ENOENT
 * when the queue is empty. */
int db_alert_oldest(struct db *db, struct db_alert *out);
void db_alert_free(struct db_alert *a);
/* A failed try: its count, when the next may be, what went wrong. */
int db_alert_retry(struct db *db, int64_t id, int tries, int64_t next_ms,
    const char *error);
/* Delivered (or dropped): the row goes. */
int db_alert_delete(struct db *db, int64_t id);

/* ---- counts for /metrics (db_obs.c) ------------------------------------- */

/* One group: its state, how many rows, and (jobs) their restarts. */
typedef int db_count_fn(const char *state, int64_t n, int64_t restarts,
    void *arg);
int db_jobs_count_by_state(struct db *db, db_count_fn *fn, void *arg);
int db_attempts_count_by_state(struct db *db, db_count_fn *fn, void *arg);

/* ---- tokens ------------------------------------------------------------- */

/* A bearer token's row (the secret itself is never stored: hash is its
 * SHA-256). Times in epoch ms; expires_ms 0: never; revoked_ms 0: not
 * revoked; last_used_ms 0: not used (written at most once a minute). */
struct db_token {
    int64_t id;
    char *hash;
    char *user;
    char *role;
    char *prefix;
    char *created_by;
    int64_t created_ms;
    int64_t expires_ms;
    int64_t revoked_ms;
    int64_t last_used_ms;
};
typedef int db_token_fn(const struct db_token *t, void *arg);

/* A token that never expires (numbered as db_token_add does). */
int db_token_insert(struct db *db, const char *hash, const char *user,
    const char *role, int64_t created_ms);
/* -ENOENT when unknown. *user and *role: caller frees. */
int db_token_lookup(struct db *db, const char *hash, char **user, char **role);
/* A new token (t's id, revoked and last-used ignored): *id its number, the
 * next after the highest. -EEXIST: that hash is there. */
int db_token_add(struct db *db, const struct db_token *t, int64_t *id);
/* By hash; -ENOENT when unknown. *t: db_token_release. */
int db_token_find(struct db *db, const char *hash, struct db_token *t);
/* By id; -ENOENT when unknown. *t: db_token_release. */
int db_token_get(struct db *db, int64_t id, struct db_token *t);
void db_token_release(struct db_token *t);
/* Every token of user (NULL: everyone's), by id. */
int db_tokens_foreach(struct db *db, const char *user, db_token_fn *fn,
    void *arg);
/* Set its last-used time. */
int db_token_used(struct db *db, int64_t id, int64_t now_ms);
/* Revoke it at now_ms (a revoked one keeps its first time). */
int db_token_revoke(struct db *db, int64_t id, int64_t now_ms);

/* ---- migrations (db_migrate.c; used by db_open) ------------------------- */

/* The newest schema version this binary knows. */
int migrate_latest(void);
/* Apply every migration newer than the database's user_version, each in
 * its own transaction. Refuses a database newer than migrate_latest().
 * Errors name path. */
int migrate_run(struct sqlite3 *sq, const char *path, struct err *err);

#endif
