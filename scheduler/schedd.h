/*
 * schedd.h - the scheduler's context: configuration, model, database
 *
 * `struct schedd` is the one object every part of lockstepd is handed. It
 * owns the settled configuration, the database, the log store and the
 * in-memory model (every node, every unfinished job, every live attempt:
 * active, or finished but still holding resources on some node), plus
 * the iteration's commit. It decides nothing: the services above it
 * (docs/architecture.md) do, and they find each other's state through the
 * opaque pointers below, never by calling up.
 *
 * SQLite is the source of truth: the model is loaded from it at start-up
 * and every decision is written to it, in the loop iteration's
 * transaction, before it is acted on. The transaction is committed before
 * any reply that depends on it is written (the HTTP server's flush hook
 * calls schedd_flush) and, for changes no reply waits on, by a uv_check at
 * the end of the iteration. If a commit fails, nothing of that iteration
 * happened: the transaction is rolled back, queued replies become 503, and
 * the model is reloaded from the database on the next iteration.
 *
 * Hooks: the layers above register what must happen when the model
 * changes in a way they care about (a node's desired state changed, the
 * model is being reloaded, a scheduling pass is wanted). Lower layers call
 * schedd_node_changed() and schedd_sched_trigger(), which run the hooks;
 * so nothing below the transport ever calls into it.
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
#include "scheduler/health.h"
#include "scheduler/job.h"
#include "scheduler/metrics.h"
#include "scheduler/node.h"
#include "scheduler/nonces.h"
#include "scheduler/policy.h"
#include "scheduler/portpool.h"
#include "scheduler/quota.h"
#include "scheduler/refusals.h"
#include "scheduler/sched_pass.h"

struct commitsync;
struct walckpt;
struct db;
struct logstore;

/* One answer of jobs_check_fits (jobs.c) for a request shape, good while
 * the node inventory's generation is still gen. */
#define SCHEDD_FITS 16
struct schedd_fit {
    uint64_t gen; /* 0: empty */
    int nodes, ranks_per_node, gpus_per_node, cpus_per_rank;
    int64_t memory_mb_per_node;
    bool fits;
    char why[SCHED_REASON_MAX];
};
struct obs;
struct pass;
struct recovery;
struct repl;
struct schedd;
struct webhook;

#define SCHEDD_ACTOR "scheduler"

/* What main reads from the configuration (docs/config.md). */
/* The HTTP server's deadlines and connection caps, passed on by api.c
 * (http.h; docs/operations.md "Connection limits"). */
struct schedd_http_limits {
    int header_timeout_ms;
    int body_timeout_ms;
    int write_timeout_ms;
    int idle_timeout_ms;
    size_t max_conns; /* resolved against RLIMIT_NOFILE by main */
    size_t reserve;
    size_t per_peer;
};

struct schedd_opts {
    const char *listen_host; /* NULL or "": no TCP */
    int listen_port;
    const char *socket_path; /* NULL or "": no Unix socket */
    bool tls;                /* TLS on the TCP listener (else plain) */
    const char *tls_cert;    /* PEM chain, key and the clients' CA */
    const char *tls_key;
    const char *tls_ca;    /* "": not checked */
    const char *port_file; /* NULL or "" */
    const char *state_dir;
    const char *secret; /* cluster secret bytes */
    size_t secret_len;
    const char *secret_prev; /* the previous one (a rotation), or NULL */
    size_t secret_prev_len;
    int agent_auth_window_ms; /* agent request timestamps: now ± this */
    bool agent_auth_legacy;   /* accept the static credential of before */
    size_t agent_nonces_max;  /* nonces.h; 0: the default */
    const char *operators;    /* comma-separated names */
    int heartbeat_ms;
    int node_timeout_ms;
    size_t max_body;
    int master_port_base;
    int master_port_count;
    bool db_sync_full;
    int64_t db_check_ms; /* bound on the start-up check; 0: none */
    int lease_ms;        /* < node_timeout_ms (main checks) */
    int lease_ping_ms;   /* 0: no lease pings */
    int short_lease_ms;  /* <= lease_ms, >= 4 x lease_ping_ms */
    int dump_timeout_ms;
    int rank_stats_window_ms;
    double straggler_ratio; /* straggler.h */
    int straggler_windows;
    const char *sched_policy; /* a scheduling policy's name */
    struct policy_config policy;
    /* What on-call observes (alerts.h, obs.h, webhook.h). */
    const char *alert_webhook_url; /* NULL or "": alerts off */
    int alert_webhook_timeout_ms;
    int alert_queue_max;
    int alert_backoff_max_ms;
    int event_retention_days; /* 0: keep events forever */
    bool metrics_token_required;
    struct health_config health;
    struct quota_config quota;      /* per-user limits */
    int64_t log_max_bytes;          /* stored rank output per job; 0: no cap */
    struct schedd_http_limits http; /* deadlines and caps (api.c) */
    /* One replica of a replicated scheduler (repl.h): the database is
     * rebuilt from the Raft log at start (the file is emptied here) and
     * every transaction's changes are recorded. */
    bool replica;
};

/* Rank output of one stream of one rank, at an offset (logstore.h). */
struct schedd_log_chunk {
    int64_t job;
    int attempt;
    int rank;
    bool err_stream;
    int64_t offset;
    const void *data; /* borrowed */
    size_t len;
};

/* Registered by the layers above (see the top of this file). Each may be
 * NULL; arg is theirs. */
struct schedd_hooks {
    /* node's desired state changed (its generation went up): answer its
     * agent's long poll. Runs inside the change, before the commit. */
    void (*node_changed)(struct schedd *sd, struct node *node, void *arg);
    /* The model is about to be cleared and reloaded: forget every
     * pointer into it. */
    void (*model_reset)(struct schedd *sd, void *arg);
    /* node is about to leave the model (an operator removed it; nothing
     * holds it): forget every pointer to it and close the gap at its idx
     * (node_table_remove). */
    void (*node_removed)(struct schedd *sd, struct node *node, void *arg);
    /* A scheduling pass is wanted soon (coalesced by the callee; never
     * run synchronously). */
    void (*sched_trigger)(struct schedd *sd, void *arg);
    /* job was just submitted: a pass is wanted unless the callee can
     * tell, without one, that it could place nothing (then it sets the
     * job's reason). Registered with sched_trigger (same arg). */
    void (*sched_queued)(struct schedd *sd, struct job *job, void *arg);
    /* An alert was queued (alerts.h): deliver it once committed. */
    void (*alert_queued)(struct schedd *sd, void *arg);
    /* Replication (repl.h registers them on a replica). replicate: the
     * transaction schedd_commit just committed locally changed data (the
     * changeset; taken over, also on failure): propose it. 0, or a
     * negative errno (the replica then stops serving). replicate_wait:
     * the ticket of the latest entry proposed and not yet committed, 0
     * when none: what replies written now must wait for. */
    int (*replicate)(struct schedd *sd, void *data, size_t len, void *arg);
    /* Rank output the leader stored (schedd_log_write): propose it too,
     * so that the other replicas keep it. 0 or a negative errno. */
    int (*replicate_log)(struct schedd *sd, const struct schedd_log_chunk *c,
        void *arg);
    uint64_t (*replicate_wait)(struct schedd *sd, void *arg);
    /* The commits up to ticket (schedd_commit_wait's) are durable (rc
     * 0: synced by commitsync, or committed by a quorum) or failed (a
     * negative errno): release the replies held for them (the API). */
    void (*committed)(struct schedd *sd, uint64_t ticket, int rc, void *arg);
    void *arg;
    void *sched_arg;
    void *alert_arg;
    void *repl_arg;
};

/* Every job and attempt the database holds, by state, and the restarts
 * of every job: GET /metrics's gauges. Counted from the database once per
 * model load (schedd_model_load: start-up, a reload after a failed
 * write, a replica taking the lead) and kept by event.c on the one path
 * where states change, so a scrape walks no jobs. t1010 compares them
 * with a recount of the database after many changes and a restart. */
struct schedd_counts {
    int64_t jobs[PROTO_JOB_STATE_COUNT];
    int64_t attempts[PROTO_ATTEMPT_STATE_COUNT];
    int64_t restarts; /* restarts + infra_restarts of every job */
};

struct schedd {
    uv_loop_t *loop;

    /* Configuration (copied). */
    char *state_dir;
    char *secret;
    size_t secret_len;
    char *secret_prev; /* NULL: no rotation under way */
    size_t secret_prev_len;
    uint64_t secret_gen; /* bumped by every schedd_set_secrets */
    int agent_auth_window_ms;
    bool agent_auth_legacy;
    char **operators;
    size_t noperators;
    uid_t self_uid;
    int heartbeat_ms;
    int node_timeout_ms;
    int64_t stalled_ms; /* loop stalls not counted as silence (tick.c) */
    size_t max_body;
    int lease_ms;             /* supervisors' lease, sent to agents */
    int lease_ping_ms;        /* leaseping.h; 0: none */
    int short_lease_ms;       /* the lease of a node whose pings arrive */
    int dump_timeout_ms;      /* how long a hang waits for stack dumps */
    int rank_stats_window_ms; /* rankstats.h */
    double straggler_ratio;   /* straggler.h */
    int straggler_windows;
    struct policy_config policy;
    int64_t started_ms; /* wall clock at start-up */
    /* What on-call observes (alerts.h, obs.h, webhook.h). */
    char *alert_url; /* NULL: alerts off */
    int alert_timeout_ms;
    int alert_queue_max;
    int alert_backoff_max_ms;
    int event_retention_days;
    bool metrics_token_required;
    uint64_t alerts_raised;              /* queued since start-up */
    uint64_t alerts_dropped;             /* dropped from a full queue */
    struct metrics_hist commit_hist;     /* schedd_commit's, in seconds */
    struct metrics_hist pass_hist;       /* each scheduling pass (pass.c) */
    int lock_fd;                         /* flock on state_dir/lockstepd.lock */
    struct health_config health;         /* node health policy (health.h) */
    struct quota_config quota_cfg;       /* per-user submission limits */
    struct quota quota;                  /* their state (quota.h) */
    struct schedd_fit fits[SCHEDD_FITS]; /* jobs_check_fits's cache */
    size_t fits_next;                    /* the slot replaced next */
    struct nonces nonces;                /* agent requests seen (auth.c) */
    struct refusals refusals;            /* refused requests (api_obs.c) */
    uint64_t agent_auth_used[3];         /* by enum auth_agent_key (auth.h) */
    int64_t agent_auth_logged_ms[3];     /* its last log line (monotonic) */

    struct db *db;
    struct logstore *logs;
    struct logwriter *logw;       /* its writes (NULL once stopped) */
    uint64_t log_refused;         /* chunks refused, the queue too long */
    int64_t log_refused_noted_ms; /* when that was last logged */
    /* Group commit (schedd_commit_wait): transactions committed so far,
     * and the WAL's syncer (commitsync.h; NULL with db_synchronous=normal
     * and on a replica, whose Raft log is what is durable). */
    uint64_t commit_seq;
    uint64_t syncs; /* WAL fsyncs that reported (each covers >= 1 commit) */
    struct commitsync *sync;
    /* The WAL's checkpoints, off the loop (NULL on a replica). */
    struct walckpt *walck;

    /* The model. */
    struct node_table nodes;
    struct job_table jobs;
    struct attempt *attempts;    /* live attempts (owned) */
    uint64_t gen;                /* last generation handed out */
    struct schedd_counts counts; /* by state, for /metrics (above) */
    /* Every master node's pool of master ports (node->ports) is
     * master_port_count ports from master_port_base. */
    int master_port_base;
    int master_port_count;

    /* The services that keep state (owned by main; NULL until created). */
    struct pass *pass;
    struct recovery *recovery;
    struct repl *repl; /* NULL: a single scheduler */
    struct obs *obs;
    struct webhook *webhook;
    struct schedd_hooks hooks;

    /* Handles (embedded; closed by schedd_stop). */
    uv_timer_t reload_timer; /* model reload after a failed commit */
    uv_check_t commit_check; /* commit what no reply flushed */

    bool failed;      /* a write or commit failed this iteration */
    int db_errno;     /* the last failed write's error (-ENOSPC ...), 0
                       * once a commit succeeds again */
    bool rolled_back; /* work was rolled back since the last
                       * HTTP flush: its replies must be 503 */
    bool stopping;
    void (*stopped_cb)(struct schedd *sd);
};

/* Open the database under opts->state_dir, load the model, create the log
 * store. Starts nothing. Returns NULL with err set. */
struct schedd *schedd_create(uv_loop_t *loop, const struct schedd_opts *opts,
    struct err *err);
/* Start the commit hook. On failure the caller still calls schedd_stop(). */
int schedd_start(struct schedd *sd, struct err *err);
/* Commit, close the context's handles; cb runs once they are closed
 * (never synchronously). The services are stopped first (main.c). */
void schedd_stop(struct schedd *sd, void (*cb)(struct schedd *sd));
/* Free everything; the handles must be closed. Accepts NULL. */
void schedd_destroy(struct schedd *sd);

/* Commit the iteration's transaction. Returns 0 or a negative errno (and
 * then schedules the reload). */
int schedd_commit(struct schedd *sd);
/* The HTTP flush hook: commit, and fail if anything was rolled back since
 * the previous flush (the replies queued meanwhile may depend on it). */
int schedd_flush(struct schedd *sd);
/*
 * Durable replies (docs/architecture.md "Durable replies"): what replies
 * written now must wait for, 0 when nothing: the ticket of the latest
 * commit not yet durable. One sequence of tickets per process, from the
 * one source of durability it has: on a replica, the latest Raft entry
 * proposed and not yet committed by a quorum (the replicate_wait hook);
 * on a single scheduler with db_synchronous=full, the latest transaction
 * whose WAL frames are not yet fsynced (commitsync). Tickets never
 * decrease.
 */
uint64_t schedd_commit_wait(struct schedd *sd);
/* The commits up to ticket became durable (rc 0) or failed (a negative
 * errno): the committed hook, which releases the replies held for them. */
void schedd_committed(struct schedd *sd, uint64_t ticket, int rc);
/* Clear the model and load it afresh from the database (the model_reset
 * hook runs first): what a failed commit leads to, and what a replica
 * does when it starts to lead. 0, or a negative errno with err set. */
int schedd_reload(struct schedd *sd, struct err *err);
/* Count every job and attempt of db by state into c (a walk over all of
 * them: at a model load only). 0 or a negative errno. */
int schedd_counts_load(struct db *db, struct schedd_counts *c);
/* The outcome of schedd_log_write, on the loop: rc and size as
 * logstore_write gives them (size: the size held after). */
typedef void schedd_log_done_fn(struct schedd *sd, int rc, int64_t size,
    void *arg);
/* Store rank output shipped by an agent (logstore_write: written when
 * offset <= the size held), off the loop (logwriter.h), and, on a
 * replica, replicate what was written; then done(sd, rc, size, arg),
 * in the order of the calls. 0 when queued (done will run), -EAGAIN
 * when too much waits to be written (done will not run). */
int schedd_log_write(struct schedd *sd, const struct schedd_log_chunk *c,
    schedd_log_done_fn *done, void *arg);
/* A replica stores the rank output of the leader's log entry the same
 * way (never refused; a failure is logged and costs that output). */
void schedd_log_apply(struct schedd *sd, const struct schedd_log_chunk *c);
/* Record a failed database write: the iteration will not be committed.
 * Returns rc. */
int schedd_db_error(struct schedd *sd, int rc);
/* rc < 0 ? schedd_db_error(sd, rc) : 0. */
int schedd_db_check(struct schedd *sd, int rc);
/* Whether requests may be served (not failed, not reloading). */
bool schedd_available(const struct schedd *sd);
/* Why a change was not accepted, for a person: the disk when it is full
 * or read-only (rc, or else the last failed write's error), naming
 * state_dir; the database otherwise. Always says nothing was accepted. */
void schedd_unavailable_msg(const struct schedd *sd, int rc, char *buf,
    size_t len);

/* Run the scheduling pass soon (the sched_trigger hook). */
void schedd_sched_trigger(struct schedd *sd);
/* job was submitted: the sched_queued hook, or else sched_trigger. */
void schedd_sched_queued(struct schedd *sd, struct job *job);
/* A node's desired state changed: a new generation, then the
 * node_changed hook. */
void schedd_node_changed(struct schedd *sd, struct node *node);
/* The node_changed hook alone, for a change whose generation the caller
 * already handed out. */
void schedd_node_wake(struct schedd *sd, struct node *node);
/* node leaves the model: the node_removed hook, then it is unlinked from
 * the live attempts' placements and the table, and destroyed. */
void schedd_node_forget(struct schedd *sd, struct node *node);
/* The next desired-state generation (increases across restarts). */
uint64_t schedd_next_gen(struct schedd *sd);

/* Append an event in the current transaction; takes ownership of detail
 * (may be NULL). Returns 0 or a negative errno (already recorded with
 * schedd_db_error). */
int schedd_event(struct schedd *sd, const char *actor, const char *subject,
    const char *kind, cJSON *detail);
/* "job/<id>" and "node/<name>" into buf, for events. */
const char *schedd_subject_job(char *buf, size_t len, int64_t id);
const char *schedd_subject_node(char *buf, size_t len, const char *name);

/* Replace the cluster secrets (SIGHUP: docs/operations.md "Rotating the
 * cluster secret"): copied; prev NULL when none. */
void schedd_set_secrets(struct schedd *sd, const char *secret, size_t len,
    const char *prev, size_t prev_len);

/* Whether user is an operator by name (the operators list). */
bool schedd_is_operator_name(const struct schedd *sd, const char *user);

/* ---- the live attempts -------------------------------------------------- */

/* node's pool of master ports (portpool.h), created on first use. */
struct portpool *schedd_node_ports(struct schedd *sd, struct node *node);

/* Link a new attempt into the model: the live list, its master port (in
 * node rank 0's pool) and its placements' holds on their nodes. */
void schedd_attempt_add(struct schedd *sd, struct attempt *a);
/* Unlink and free an attempt that is neither active nor held. */
void schedd_attempt_drop(struct schedd *sd, struct attempt *a);
/* The job of a live attempt, active or not (NULL once it finished). */
struct job *schedd_attempt_job(struct schedd *sd, const struct attempt *a);
/* The job's latest attempt if it is still live (active, or failed and
 * tearing down), else NULL. */
struct attempt *schedd_job_latest(struct schedd *sd, const struct job *job);

/* Whether node has gone silent: its agent's connection closed, or no
 * status for two heartbeats, and it is not LOST yet or LOST with its jobs
 * still waiting for its witnesses (nodes_witness.h). What its ranks'
 * peers do meanwhile is no evidence of their own. */
bool schedd_node_silent(const struct schedd *sd, const struct node *node,
    int64_t mono);

#endif
