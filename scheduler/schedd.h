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
 * pass), lifecycle.c (placing, finishing, cancelling attempts, rank
 * reports, releasing resources, node state changes), recovery.c (failures:
 * evidence, blame, exclusion, the restart decision), watchdog.c (hangs and
 * their stack dumps), checkpoint.c (the checkpoint registry), api*.c (HTTP
 * handlers), auth.c (identity). The decisions themselves are pure:
 * policy.c, goodput.c, sched.c.
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
#include "scheduler/policy.h"

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
    int lease_ms;               /* < node_timeout_ms (main checks) */
    int dump_timeout_ms;
    struct policy_config policy;
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
    int lease_ms;               /* supervisors' lease, sent to agents */
    int dump_timeout_ms;        /* how long a hang waits for stack dumps */
    struct policy_config policy;
    int64_t started_ms;         /* wall clock at start-up */

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
    uv_timer_t backoff_timer;   /* the next restart backoff to expire */
    uv_check_t commit_check;    /* commit what no reply flushed */
    int nhandles;               /* still open */
    bool sched_armed;
    int64_t last_pass_mono;
    int64_t last_pass_ms;       /* how long the last pass took */
    int64_t last_persist_mono;
    int64_t restart_retry_ms;   /* wall clock: a restarting job the last
                                 * pass left unplaced is tried again from
                                 * then (the tick); 0 none */

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

/* Apply a job status from the agent of placement p's node (only the ranks
 * that run there): persist rank changes, record progress, stack dumps and
 * checkpoint commits, then decide (fail, succeed, running). */
int schedd_attempt_report(struct schedd *sd, struct placement *p,
    const struct proto_job_status *st);
/* Mark the ranks of placement p lost and fail its attempt (if active) with
 * `kind` (POLICY_KIND_NODE_LOST or POLICY_KIND_LOST_RANKS). */
int schedd_placement_lost(struct schedd *sd, struct placement *p,
    enum policy_kind kind, const char *why);
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
/* Remove a finished job from the model (and free it). */
void schedd_job_finish(struct schedd *sd, struct job *job);
/* Write the job's row (state, reason, budgets, reservation, evidence). */
int schedd_job_save(struct schedd *sd, struct job *job);
/* Write the attempt's row. */
int schedd_attempt_save(struct schedd *sd, struct attempt *a);
/* Take attempt a out of every node's desired state: its agents tear it
 * down (or, for a dump request, see the new dump_seq). */
void schedd_attempt_wake_nodes(struct schedd *sd, struct attempt *a);
/* The job of a live attempt, active or not (NULL once it finished). */
struct job *schedd_attempt_job(struct schedd *sd, const struct attempt *a);
/* Arm the backoff timer for the earliest pending restart (if any). */
void schedd_backoff_arm(struct schedd *sd);
/* Whether node (not LOST yet) has gone silent: its agent's connection
 * closed, or no status for two heartbeats. What its ranks' peers do
 * meanwhile is no evidence of their own. */
bool schedd_node_silent(const struct schedd *sd, const struct node *node,
    int64_t mono);

/* ---- recovery.c --------------------------------------------------------- */

/* The evidence of one failure (docs/fault-tolerance.md §Failure kinds).
 * Strings are borrowed for the call; fields that do not apply stay at
 * their "none" values. */
struct schedd_failure {
    enum policy_kind kind;
    const char *node;           /* where the evidence points; NULL none */
    int rank;                   /* -1: none */
    bool has_exit;
    int exit_code;
    int signal;
    const char *stderr_tail;    /* NULL: none */
    bool fenced;                /* the rank's supervisor fenced it */
    int64_t last_step;          /* -1: none */
    int64_t last_heartbeat_ms;  /* 0: none */
    int64_t idle_ms;            /* hang: no progress for this long */
    const char *source;         /* hang: "step" or "output" */
    const char *actor;          /* node_excluded: who excluded the node */
    bool blame;                 /* the failure is `node`'s fault */
    bool node_suspect;          /* rank_exit: the node was suspect */
    int64_t failed_ms;          /* when, by the evidence; 0: now */
    cJSON *dumps;               /* hang: [{rank, dump}]; taken (freed) */
    const char *reason;         /* the attempt's reason; NULL: derived */
};

/* A failure with no evidence yet: rank -1, steps -1. */
void schedd_failure_init(struct schedd_failure *f, enum policy_kind kind);

/*
 * Record the failure of active attempt a and recover: end the attempt
 * (FAILED, failed_ms, detected_ms, the evidence), withdraw it from its
 * nodes, blame the node (excluding it when it crosses the threshold),
 * then decide: a crash loop or a spent budget ends the job FAILED, else
 * the job is RESTARTING with its healthy nodes reserved and a backoff.
 * One job_failure event carries the evidence. An attempt that is not
 * active is left alone (f->dumps is still freed). While a hang waits for
 * its stack dumps, any other failure of the attempt ends the hang instead
 * (it came first).
 */
int schedd_attempt_failed(struct schedd *sd, struct attempt *a,
    struct schedd_failure *f);

enum schedd_exclude {
    SCHEDD_EXCLUDE_BLAME,       /* blamed too often: UNHEALTHY, counted */
    SCHEDD_EXCLUDE_OPERATOR,    /* cordon --evict: not counted as blame */
};

/*
 * The one way a node leaves UP under running jobs. BLAME marks it
 * UNHEALTHY with `reason` (event node_excluded with `evidence`, taken);
 * OPERATOR expects the caller to have cordoned it already. Either way
 * every active attempt with ranks there fails with kind node_excluded.
 */
int schedd_node_exclude(struct schedd *sd, struct node *node,
    const char *actor, enum schedd_exclude how, const char *reason,
    cJSON *evidence);

/* ---- watchdog.c --------------------------------------------------------- */

/* From the tick: detect hangs in running attempts (asking their agents
 * for stack dumps) and end hangs whose dump wait ran out. */
void schedd_watchdog_tick(struct schedd *sd);
/* After a report: end a's hang if every node has sent its dumps. */
int schedd_watchdog_dumps(struct schedd *sd, struct attempt *a);
/* End a's pending hang now with the dumps received so far. */
int schedd_watchdog_finish(struct schedd *sd, struct attempt *a);

/* ---- checkpoint.c ------------------------------------------------------- */

/* The path of a job's checkpoint step: "<checkpoint_dir>/step-<N>", or ""
 * without a checkpoint directory. Caller frees. */
char *schedd_ckpt_path(const struct job *job, int64_t step);
/* Complete steps found by the convention scan of attempt a (its node rank
 * 0 agent): record the new ones. */
int schedd_ckpt_scan(struct schedd *sd, struct job *job, struct attempt *a,
    const int64_t *steps, size_t n);
/* Rank `rank` of attempt a committed `step` (SDK or API; source says
 * which). Records it and completes the checkpoint when every rank has.
 * *committed (may be NULL): ranks that committed it so far (the world
 * size once complete). */
int schedd_ckpt_commit(struct schedd *sd, struct job *job, struct attempt *a,
    int rank, int64_t step, const char *source, int *committed);
/* Rebuild a live attempt's commit tallies from the database (start-up). */
int schedd_ckpt_load(struct schedd *sd, struct job *job, struct attempt *a);
/* Note (once per node and attempt) that a report of an old attempt was
 * ignored: event stale_attempt_rejected. */
int schedd_stale_report(struct schedd *sd, struct node *node, int64_t job,
    int attempt, const char *what);

#endif
