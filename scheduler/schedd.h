/*
 * schedd.h - the scheduler's top-level context and its decisions
 *
 * `struct schedd` owns the loop's handles, the database, the HTTP server,
 * the log store and the in-memory model: every node, every unfinished job
 * and every live attempt (active, or finished but still holding resources
 * on some node). SQLite is the source of truth: the model is loaded from
 * it at start-up and every decision is written to it, in the loop
 * iteration's transaction, before it is acted on. The transaction is
 * committed before any reply that depends on it is written (the HTTP
 * server's flush hook, and a uv_check for changes no reply waits on).
 *
 * If a commit fails, nothing of that iteration happened: the transaction
 * is rolled back, queued replies become 503, and the model is reloaded
 * from the database on the next iteration.
 *
 * Files: schedd.c (context, load, commit, the scheduling trigger and
 * pass), lifecycle.c (placing, failing, finishing, cancelling attempts,
 * releasing resources, node state changes), api*.c (HTTP handlers),
 * auth.c (identity).
 *
 * Threading: everything runs on the loop thread.
 */
#ifndef SCHEDULER_SCHEDD_H
#define SCHEDULER_SCHEDD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "common/err.h"
#include "scheduler/attempt.h"
#include "scheduler/job.h"
#include "scheduler/node.h"

struct db;
struct http_server;
struct logstore;
struct api_waiter;

/* What main reads from the configuration (docs/config.md). */
struct schedd_opts {
    const char *listen_host;    /* NULL or "": no TCP */
    int listen_port;
    const char *socket_path;    /* NULL or "": no Unix socket */
    const char *port_file;      /* NULL or "" */
    const char *state_dir;
    const char *secret;         /* cluster secret bytes */
    size_t secret_len;
    const char *operators;      /* comma-separated names */
    int heartbeat_ms;
    int node_timeout_ms;
    size_t max_body;
    int master_port_base;
    int master_port_count;
    bool db_sync_full;
};

struct schedd {
    uv_loop_t *loop;

    /* Configuration (copied). */
    char *state_dir;
    char *secret;
    size_t secret_len;
    char **operators;
    size_t noperators;
    uid_t self_uid;
    int heartbeat_ms;
    int node_timeout_ms;
    size_t max_body;
    int port_base;
    int port_count;
    int lock_fd;                /* flock on state_dir/lockstepd.lock */

    struct db *db;
    struct http_server *http;
    struct logstore *logs;

    /* The model. */
    struct node_table nodes;
    struct job_table jobs;
    struct attempt *attempts;   /* live attempts (owned) */
    uint64_t gen;               /* last generation handed out */
    unsigned char *ports_used;  /* port_count flags */
    int port_cursor;

    /* Handles (embedded; closed by schedd_stop). */
    uv_timer_t sched_timer;     /* deferred, coalesced scheduling pass */
    uv_timer_t tick_timer;      /* node timeouts, lazy last_seen writes */
    uv_timer_t reload_timer;    /* model reload after a failed commit */
    uv_check_t commit_check;    /* commit what no reply flushed */
    int nhandles;               /* still open */
    bool sched_armed;
    int64_t last_pass_mono;
    int64_t last_pass_ms;       /* how long the last pass took */
    int64_t last_persist_mono;

    bool failed;                /* a write or commit failed this iteration */
    bool rolled_back;           /* work was rolled back since the last
                                 * HTTP flush: its replies must be 503 */
    bool stopping;
    void (*stopped_cb)(struct schedd *sd);
};

/* ---- schedd.c ----------------------------------------------------------- */

/* Open the database under opts->state_dir, load the model, create the log
 * store. Starts nothing. Returns NULL with err set. */
struct schedd *schedd_create(uv_loop_t *loop, const struct schedd_opts *opts,
    struct err *err);
/* Create the HTTP server, listen, write the port file, start the timers.
 * On failure the caller still calls schedd_stop(). */
int schedd_start(struct schedd *sd, const struct schedd_opts *opts,
    struct err *err);
/* Stop accepting, commit, close every handle; cb runs once all are
 * closed (never synchronously). */
void schedd_stop(struct schedd *sd, void (*cb)(struct schedd *sd));
/* Free everything; the handles must be closed. Accepts NULL. */
void schedd_destroy(struct schedd *sd);

/* Commit the iteration's transaction. Returns 0 or a negative errno (and
 * then schedules the reload). */
int schedd_commit(struct schedd *sd);
/* The HTTP flush hook: commit, and fail if anything was rolled back since
 * the previous flush (the replies queued meanwhile may depend on it). */
int schedd_flush(struct schedd *sd);
/* Record a failed database write: the iteration will not be committed. */
int schedd_db_error(struct schedd *sd, int rc);
/* Whether requests may be served (not failed, not reloading). */
bool schedd_available(const struct schedd *sd);

/* Run the scheduling pass soon (coalesced; never synchronously). */
void schedd_sched_trigger(struct schedd *sd);
/* The next desired-state generation (increases across restarts). */
uint64_t schedd_next_gen(struct schedd *sd);

/* Append an event in the current transaction; takes ownership of detail
 * (may be NULL). Returns 0 or a negative errno (already recorded with
 * schedd_db_error). */
int schedd_event(struct schedd *sd, const char *actor, const char *subject,
    const char *kind, cJSON *detail);

/* Whether user is an operator by name (the operators list). */
bool schedd_is_operator_name(const struct schedd *sd, const char *user);

/* ---- lifecycle.c -------------------------------------------------------- */

/* Place job's next attempt on nodes[0..nodes) (node rank order) with the
 * given GPU ids (nodes × gpus_per_node, node-rank major, may be NULL when
 * none) on master port `port`: writes the attempt, placements, ranks, job
 * state and event, then updates the model and wakes the nodes' agents. */
int schedd_place(struct schedd *sd, struct job *job, struct node **nodes,
    const int *gpus, int port);

/* Apply a rank report for attempt a from `node` (the ranks on that node):
 * persist changes, then decide (fail, succeed, running). */
int schedd_attempt_report(struct schedd *sd, struct attempt *a,
    const struct proto_job_status *st);
/* Fail an active attempt: r is the failed rank (evidence), reason the
 * text. Restarts the job if its budget allows, else fails it. */
int schedd_attempt_fail(struct schedd *sd, struct attempt *a,
    const struct attempt_rank *r, const char *reason);
/* Mark the ranks of placement p lost and fail its attempt (if active). */
int schedd_placement_lost(struct schedd *sd, struct placement *p,
    const char *why);
/* The agent of p's node no longer holds p's attempt: free its resources
 * (persisted), and drop the attempt once nothing holds it. */
int schedd_placement_release(struct schedd *sd, struct placement *p);

/* Cancel a job (by actor). Finished jobs are left alone. */
int schedd_job_cancel(struct schedd *sd, struct job *job, const char *actor);

/* Recompute a node's derived state; persist and log an event when it
 * changed. */
int schedd_node_refresh(struct schedd *sd, struct node *node,
    const char *actor, const char *why);
/* A node's desired state changed: new generation, wake its long polls. */
void schedd_node_changed(struct schedd *sd, struct node *node);
/* The node has been silent too long: LOST, its attempts fail. */
int schedd_node_lost(struct schedd *sd, struct node *node);

/* Master ports of live attempts (active, or still held on a node). */
int schedd_port_alloc(struct schedd *sd);
void schedd_port_mark(struct schedd *sd, int port, bool used);
int schedd_ports_free(const struct schedd *sd);

/* Unlink and free an attempt that is neither active nor held. */
void schedd_attempt_drop(struct schedd *sd, struct attempt *a);

#endif
