/*
 * attempt.h - one start of a job: its placements and the state of its ranks
 *
 * An attempt is placed on `nnodes` nodes; node rank k runs ranks
 * k*ranks_per_node … (k+1)*ranks_per_node-1. Each placement holds
 * resources on its node (node.h) until released.
 *
 * Live attempts (active, or finished but still held on some node) are kept
 * in memory in the scheduler's attempt list; the API's job view loads
 * attempts from the database into the same structures (then `node` and
 * `job` pointers are NULL).
 *
 * Pure: nothing here does I/O.
 */
#ifndef SCHEDULER_ATTEMPT_H
#define SCHEDULER_ATTEMPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/proto.h"
#include "scheduler/cadence.h"
#include "scheduler/evidence.h"
#include "scheduler/policy.h"
#include "scheduler/rankwin.h"

struct job;
struct node;

struct placement {
    struct attempt *attempt; /* back pointer */
    char *node_name;
    struct node *node; /* borrowed; NULL in a database view */
    int node_rank;
    int *gpus; /* the GPU ids held on that node */
    size_t ngpus;
    int cpus;          /* held */
    int64_t memory_mb; /* held */
    uint64_t gen;      /* node generation that first carried it */
    bool released;
};

struct attempt_rank {
    int rank;
    int node_rank;
    int local_rank;
    enum proto_rank_state state;
    int pid;
    int64_t start_ms;
    int64_t end_ms;
    bool has_exit; /* exit_code/signal are known */
    int exit_code;
    int signal;
    char *stderr_tail; /* never NULL */
    bool fenced;       /* its supervisor's lease ran out */
    int64_t step;      /* last step reported; -1 none */
    char *dump;        /* stack dump (hang evidence); never NULL */

    /* In memory only: why the rank could not be started (its agent's
     * launch_error), NULL when it could; decided on as it arrives. */
    char *launch_error;
    /* In memory only: progress as last reported, for the watchdog. */
    int64_t idle_ms; /* the agent's measure at seen_mono */
    enum proto_progress progress;
    int64_t seen_mono;   /* when that report arrived, less the loop's
                            stalls so far (schedd stalled_ms); 0 never */
    int64_t ckpt_max;    /* highest SDK commit counted; -1 none */
    int64_t step_p50_us; /* the SDK's step time: median, p99 (in */
    int64_t step_p99_us; /* memory; 0 unknown) */
};

/* An instruction to the ranks of the attempt (docs/architecture.md
 * "Directives"): "stack dump now", later "at step S collect garbage",
 * "at step S checkpoint". Each has a sequence number within the attempt;
 * the agents acknowledge it for each rank once it was carried out. */
struct attempt_directive {
    uint64_t seq;
    enum proto_directive_kind kind;
    int64_t step; /* -1: at once */
    int64_t issued_ms;
    int64_t done_ms; /* every live rank acknowledged it; 0 not
                      * yet */
    size_t nacked;
    bool *acked; /* by rank; in memory only (agents repeat
                  * their acks while it is pending) */
    bool late;   /* a rank acted after its step (recorded) */
};
/* Directives kept per attempt; adding one drops the oldest done ones. */
#define ATTEMPT_DIRECTIVES_MAX 16

/* Ranks that committed one (not yet complete) checkpoint step through the
 * SDK or the API in this attempt. */
struct attempt_tally {
    int64_t step;
    int committed;
};

/* A planned stop of an attempt (cordon --evict, cancel --checkpoint):
 * what to do once the checkpoint of `step` is complete, or at the
 * deadline, whichever comes first. */
enum attempt_stop_kind {
    ATTEMPT_STOP_EVICT,   /* fail it as node_excluded, by the operator */
    ATTEMPT_STOP_CANCEL,  /* cancel the job */
    ATTEMPT_STOP_REQUEUE, /* requeue the job (jobs_requeue) */
};

struct attempt_stop {
    enum attempt_stop_kind kind;
    int64_t step;        /* the checkpoint it waits for */
    int64_t deadline_ms; /* when it stops anyway */
    char *node;          /* EVICT: the node evicted */
    bool hold;           /* REQUEUE: hold the job once requeued */
    char *actor;
    char *reason;
};

struct attempt {
    int64_t job_id;
    int num; /* attempt number, 1-based */
    enum proto_attempt_state state;
    char *reason; /* never NULL */
    int64_t start_ms;
    int64_t end_ms;
    int nnodes;
    int ranks_per_node;
    char *master_addr;
    int master_port;

    /* Fault tolerance (docs/fault-tolerance.md). */
    int64_t resume_step;      /* the checkpoint it resumed from; -1 */
    char *resume_from;        /* its path; never NULL */
    int64_t running_ms;       /* every rank reported running; 0 not yet */
    int64_t failed_ms;        /* when the evidence says it failed */
    int64_t detected_ms;      /* when the scheduler decided it had */
    int64_t released_ms;      /* every node released it */
    bool has_failure;         /* it failed: failure is its evidence */
    struct evidence failure;  /* also a hang's while it waits for its
                               * dumps (has_failure still false) */
    int64_t dump_deadline_ms; /* a hang waiting for its dumps; 0 none */
    uint64_t hang_seq;        /* the dump directive that hang waits for */
    struct attempt_directive *directives; /* the newest, by seq */
    size_t ndirectives;
    uint64_t directive_seq;        /* the last sequence number handed out */
    struct attempt_tally *tallies; /* incomplete checkpoint steps */
    size_t ntallies;

    /* Cadence (docs/cadence.md), in memory, monotonic ms: a restarted
     * scheduler starts the clocks again when the attempt next reports. */
    struct cadence_rate rate;
    struct cadence_clock gc, ckpt;
    bool cadence_started; /* the clocks run (from the first report of a
                           * step) */

    /* A planned stop waiting for a synchronized checkpoint first
     * (planned.h), in memory. */
    struct attempt_stop *stop; /* NULL: none */

    /* The current window of per-rank step times and durations
     * (rankwin.h), in memory; NULL until a rank reports. */
    struct rankwin *stats;

    struct placement *placements; /* nnodes, by node rank */
    /* The placements' node names as a JSON array, written once by
     * launch.c for the desired states that carry them; NULL until then.
     * In memory. */
    char *nodes_json;
    struct attempt_rank *ranks; /* nnodes * ranks_per_node, by rank */
    size_t nranks;
    /* Ranks PENDING, failed (exited non-zero, signalled, lost) and
     * succeeded (exited 0), kept by attempt_rank_uncount/_count around
     * every change of a rank's state or exit and by attempt_recount
     * after a load, so that a report's decision costs O(1), not a walk
     * of every rank (a 100,000-rank job sends 12,500 reports a second). */
    size_t npending, nfailed, nsucceeded;

    struct job *job;             /* borrowed; NULL once the job finished */
    struct attempt *prev, *next; /* the scheduler's live list */
};

/* An attempt with nnodes placements (node names unset) and every rank
 * pending. Caller destroys. */
struct attempt *attempt_create(int64_t job_id, int num, int nnodes,
    int ranks_per_node);
/* Frees everything the attempt owns. Accepts NULL. */
void attempt_destroy(struct attempt *a);
void attempt_set_reason(struct attempt *a, const char *reason);
/* Replace the evidence with a copy of e (has_failure as given); NULL
 * clears it. */
void attempt_set_failure(struct attempt *a, const struct evidence *e,
    bool failed);
void attempt_set_resume(struct attempt *a, int64_t step, const char *path);
/* Set (a copy of stop; its strings may be NULL) or, with NULL, clear a's
 * planned stop. */
void attempt_set_stop(struct attempt *a, const struct attempt_stop *stop);
/* Free a stop taken off its attempt; NULL is fine. */
void attempt_stop_free(struct attempt_stop *stop);

/* Count a checkpoint commit of `step` by a rank not counted for it yet
 * (the caller makes sure of that). Returns how many ranks committed it so
 * far. */
int attempt_tally_add(struct attempt *a, int64_t step);
/* Forget the tallies of steps <= step (they can no longer matter). */
void attempt_tally_prune(struct attempt *a, int64_t step);

/* ---- directives ------------------------------------------------------- */

/* A new directive of kind at step (-1: at once), issued at now: the next
 * sequence number. Beyond ATTEMPT_DIRECTIVES_MAX the oldest done ones are
 * forgotten first. The pointers these return are valid until the next
 * directive is added. */
struct attempt_directive *attempt_directive_add(struct attempt *a,
    enum proto_directive_kind kind, int64_t step, int64_t now);
/* Put back a directive loaded from the database (its acks are unknown). */
struct attempt_directive *attempt_directive_load(struct attempt *a,
    uint64_t seq, enum proto_directive_kind kind, int64_t step,
    int64_t issued_ms, int64_t done_ms);
/* The directive seq; NULL when unknown (or forgotten). */
struct attempt_directive *attempt_directive_find(const struct attempt *a,
    uint64_t seq);
/* rank acknowledged d; true when that is news. */
bool attempt_directive_ack(const struct attempt *a, struct attempt_directive *d,
    int rank);
/* Whether every rank of node rank k acknowledged d. */
bool attempt_directive_node_done(const struct attempt *a,
    const struct attempt_directive *d, int k);
/* Whether every rank acknowledged d on the nodes k with live[k] (a node
 * that is lost, or whose placement was released, sends nothing, so the
 * caller leaves it out). */
bool attempt_directive_live_done(const struct attempt *a,
    const struct attempt_directive *d, const bool *live);

/* The placement on node `name`; NULL if none. */
struct placement *attempt_placement_by_node(struct attempt *a,
    const char *name);

/* Whether every placement has been released. */
bool attempt_fully_released(const struct attempt *a);

/* Around a change of rk's state, exit code or signal (rk in a). */
void attempt_rank_uncount(struct attempt *a, const struct attempt_rank *rk);
void attempt_rank_count(struct attempt *a, const struct attempt_rank *rk);
/* The counts from every rank (after the ranks were loaded). */
void attempt_recount(struct attempt *a);

/* Summaries over the ranks. */
bool attempt_all_started(const struct attempt *a);   /* running or exited */
bool attempt_all_succeeded(const struct attempt *a); /* exited 0 */
/* The failed rank (exited non-zero, signalled, lost) that failed first
 * by end time (lowest rank on ties), or NULL. */
const struct attempt_rank *attempt_first_failure(const struct attempt *a);

/* "rank 1 exited with code 3", "rank 1 killed by signal 9", "rank 1 lost
 * on node n2", into buf. */
void attempt_rank_failure_str(const struct attempt *a,
    const struct attempt_rank *r, char *buf, size_t len);

/* The GPU ids rank `local_rank` of a placement sees: when the node's
 * GPUs divide evenly among its ranks each rank gets its own slice,
 * otherwise every rank sees all of them. Writes into out (room for
 * p->ngpus) and returns the count. */
size_t attempt_rank_gpus(const struct placement *p, int ranks_per_node,
    int local_rank, int *out);

#endif
