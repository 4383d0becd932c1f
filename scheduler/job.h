/*
 * job.h - jobs, their states and the transition tables
 *
 * A job is the unit a user submits; each start of it is an attempt (an
 * epoch, see attempt.h). The legal state changes of jobs and attempts are
 * pure tables here, so every caller (the API, the failure handling, the
 * loader) goes through the same rules and unit tests can check them
 * without a database or a loop.
 *
 *   PENDING → PLACED → RUNNING → SUCCEEDED
 *      │  ▲      │        ├───→ FAILED
 *      │  │      │        ├───→ CANCELLED
 *      │  │      │        └───→ RESTARTING → PLACED (next attempt)
 *      │  └──────┴────────┴─ (requeue: PLACED or RUNNING → PENDING)
 *      └─────────┴─ (cancel, failure) …
 *
 * A queued job (PENDING, RESTARTING) may be held (held_by): it stays in
 * its state and the scheduling pass leaves it alone until it is
 * released. Holding is a fact of the job, not a state.
 *
 * The states and their names are common/proto.h's (the CLI shares them);
 * the tables of legal changes are here. The in-memory model holds only
 * unfinished jobs (PENDING, PLACED, RUNNING, RESTARTING) in a
 * `struct job_table`; finished ones live in SQLite only.
 */
#ifndef SCHEDULER_JOB_H
#define SCHEDULER_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/itab.h"
#include "common/proto.h"

struct attempt;
struct job_qclass;

struct job {
    int64_t id; /* 0 until inserted */
    char *user;
    enum proto_job_state state;
    char *reason;               /* never NULL */
    struct proto_job_spec spec; /* name, argv, resources, ... */
    int64_t submit_ms;
    int64_t start_ms; /* first time it ran; 0 until then */
    int64_t end_ms;   /* 0 until finished */
    int attempt;      /* latest attempt number; 0 before any */
    char *held_by;    /* who holds it (lockstep hold); "" not held;
                       * never NULL; only a queued job is held */

    /* Evidence of the latest failure; failed_rank < 0 means none. */
    int failed_rank;
    bool has_exit; /* exit_code and signal are known */
    int exit_code;
    int signal;
    char *stderr_tail; /* may be NULL */

    /* Recovery (docs/fault-tolerance.md). */
    int restarts;          /* spent from spec.max_restarts */
    int infra_restarts;    /* spent from spec.max_infra_restarts */
    int fail_streak;       /* consecutive failures (backoff) */
    int64_t not_before_ms; /* RESTARTING: no next attempt before this */
    char **reserved;       /* RESTARTING: nodes kept for the next
                            * attempt, in node-rank order */
    size_t nreserved;
    int64_t ckpt_step;    /* highest complete checkpoint; -1 none */
    char *restart_reason; /* RESTARTING: why (the failure and the
                           * restart decision); the scheduling pass
                           * adds what it waits for. NULL otherwise */

    /* In-memory model only. */
    struct attempt *cur;   /* borrowed: the live attempt, or NULL */
    uint64_t draining;     /* scheduling pass: the pass that found an
                            * earlier attempt still holding resources
                            * somewhere (pass.c) */
    struct itab_link link; /* in the job_table, in id order */
    /* The job_table's queue and counts (job_queue.c): */
    struct job_qclass *qclass; /* its class while queued, else NULL */
    struct job *qprev, *qnext; /* in its class's list, in id order */
    bool qparked;              /* in its class's parked list */
    unsigned counted;          /* JOB_COUNT_* it is counted under */
    /* The nodes blamed for its failures, as the pass last read them
     * (pass.c): names and times, valid while blamed_gen is the store's
     * blame generation. */
    char **blamed;
    int64_t *blamed_ms;
    size_t nblamed;
    uint64_t blamed_gen; /* 0: never read */
};

/* Whether from → to is a legal change (the tables). from == to is not. */
bool job_transition_ok(enum proto_job_state from, enum proto_job_state to);
bool attempt_transition_ok(enum proto_attempt_state from,
    enum proto_attempt_state to);

/* Move job (attempt a) to `to`. Returns 0, or -EINVAL (unchanged) when
 * the table forbids it. Pure: only event.c calls these, so that every
 * change is written and announced (event.h). */
int job_transition(struct job *job, enum proto_job_state to);
int attempt_transition(struct attempt *a, enum proto_attempt_state to);

/* A zeroed job with empty reason and spec defaults. Caller destroys. */
struct job *job_create(void);
/* Frees the job and everything it owns. Accepts NULL. The attempt it
 * points to is not freed (it belongs to the scheduler's attempt list). */
void job_destroy(struct job *job);
/* Replace who holds the job (copied; "" or NULL: not held). */
void job_set_held(struct job *job, const char *who);
/* Whether job is held. */
bool job_held(const struct job *job);

/* What a user asks of a job (lockstep hold, release, requeue). */
enum job_control {
    JOB_CONTROL_HOLD,    /* a queued job waits until released */
    JOB_CONTROL_RELEASE, /* a held job may be placed again */
    JOB_CONTROL_REQUEUE, /* a placed or running job starts again from
                          * its latest complete checkpoint */
};

#define JOB_CONTROL_WHY_MAX 256

/*
 * Why op cannot be done to job now: NULL when it can, else the API's 409
 * code ("ended", "not_queued", "not_held", "not_running") with a message
 * naming the job, its state and what to do instead in why (len bytes;
 * JOB_CONTROL_WHY_MAX is enough). Holding a held job is allowed (nothing
 * changes). Pure.
 */
const char *job_control_refusal(const struct job *job, enum job_control op,
    char *why, size_t len);

/* Replace the reason (copied). */
void job_set_reason(struct job *job, const char *reason);
/* Record failure evidence (stderr_tail copied; NULL allowed). */
void job_set_failure(struct job *job, int rank, bool has_exit, int exit_code,
    int signal, const char *stderr_tail);
/* Replace the blamed nodes (names and times copied; n may be 0) read at
 * blame generation gen. */
void job_set_blamed(struct job *job, const char *const *names,
    const int64_t *time_ms, size_t n, uint64_t gen);
/* Replace the reserved node names (copied; n may be 0). */
void job_set_reserved(struct job *job, const char *const *names, size_t n);
/* The path of checkpoint step N: "<checkpoint_dir>/step-<N>", or "" when
 * the job has no checkpoint directory. Caller frees. */
char *job_ckpt_path(const struct job *job, int64_t step);

/* ---- the table of unfinished jobs, by id -------------------------------- */

/*
 * Besides the jobs by id, the table keeps what the scheduler would
 * otherwise recount by walking every job (job_queue.c), current at every
 * change because the one event path (event.c) calls job_table_sync after
 * each:
 *  - the queue: every queued job (PENDING or RESTARTING, held or not) in
 *    scheduling order: RESTARTING first, then priority (higher first),
 *    then id. It is kept in classes of equal (restarting, priority), each
 *    a list in id order, so a new submission is appended in O(log
 *    classes) and the scheduling pass walks the queue without sorting it.
 *    A queued job may be parked (job_table_park): it stays queued and
 *    counted, but the walk (job_queue_first/next) passes it by until
 *    job_table_unpark_all puts every parked job back in its place (a
 *    merge, O(queue)). The pass parks the jobs that could never fit on
 *    the nodes as they are, and unparks them when the nodes change;
 *  - per user, how many jobs count against the queued-jobs limit
 *    (PENDING, or held: quota.h) and how many against the running-jobs
 *    limit (PLACED, RUNNING or RESTARTING, held or not: quota.h).
 */
struct job_table {
    struct itab t;               /* insertion order (ids ascend) */
    struct job_qclass **classes; /* in queue order; each owned */
    size_t nclasses;
    size_t nqueued; /* parked or not */
    size_t nparked;
    struct itab users; /* struct job_user, by name */
};

/* A user's counts. */
struct job_user {
    char *name;
    size_t queued;  /* PENDING or held */
    size_t running; /* PLACED, RUNNING or RESTARTING */
    struct itab_link link;
};

/* What a job is counted under (job->counted). */
enum job_count_flags {
    JOB_COUNT_QUEUED = (1 << 0),
    JOB_COUNT_RUNNING = (1 << 1),
};

void job_table_init(struct job_table *t);
/* Destroys every job still in the table. */
void job_table_release(struct job_table *t);
/* Takes ownership. The id must be set and not present yet. Syncs it. */
void job_table_add(struct job_table *t, struct job *job);
/* Unlinks (does not free) the job, from the queue and the counts too. */
void job_table_remove(struct job_table *t, struct job *job);
/* job's state, hold or priority may have changed: put it where it now
 * belongs in the queue and the counts. Cheap when nothing changed. */
void job_table_sync(struct job_table *t, struct job *job);
/* Park a queued job: out of the walk below until job_table_unpark_all.
 * A change of its state or priority (job_table_sync) unparks it. */
void job_table_park(struct job_table *t, struct job *job);
void job_table_unpark_all(struct job_table *t);
/* The queue in scheduling order, parked jobs left out: the first queued
 * job (NULL when none), the one after job (NULL after the last); how many
 * are queued, parked ones included. */
struct job *job_queue_first(const struct job_table *t);
struct job *job_queue_next(const struct job_table *t, const struct job *job);
size_t job_queue_count(const struct job_table *t);
/* Whether a is before b in the queue's order (both queued or not). */
bool job_queue_before(const struct job *a, const struct job *b);
/* user's counts (zeros for a user without jobs). */
struct job_user job_table_user(const struct job_table *t, const char *user);
struct job *job_table_find(const struct job_table *t, int64_t id);
/* The jobs in id order: the first (NULL when empty), the one after job
 * (NULL after the last), and how many. */
struct job *job_table_first(const struct job_table *t);
struct job *job_table_next(const struct job *job);
/* The same, newest first: the last (NULL when empty), the one before. */
struct job *job_table_last(const struct job_table *t);
struct job *job_table_prev(const struct job *job);
size_t job_table_count(const struct job_table *t);

#endif
