/*
 * jobs.h - what users do to jobs: submit, cancel, commit a checkpoint
 *
 * The API's handlers parse and authorise; these functions decide and
 * write, through the event path (event.h).
 */
#ifndef SCHEDULER_JOBS_H
#define SCHEDULER_JOBS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "common/proto.h"
#include "scheduler/db.h"
#include "scheduler/schedd.h"

/* A new PENDING job of user with spec (its contents are taken; the struct
 * is left zeroed). *out: the job, owned by the model (valid until it
 * changes). */
int jobs_submit(struct schedd *sd, const char *user,
    struct proto_job_spec *spec, struct job **out);

/* Whether filter selects unfinished jobs only (what the model holds):
 * then jobs_foreach_live answers it without the database. */
bool jobs_filter_live(const struct db_job_filter *filter);
/* db_jobs_foreach over the model's unfinished jobs, newest first, with
 * the filter's user, state, name and limit: O(jobs looked at) instead of
 * a sort of every unfinished row. The job is borrowed for the call. */
int jobs_foreach_live(struct schedd *sd, const struct db_job_filter *filter,
    int (*fn)(struct job *job, void *arg), void *arg);

/* jobs_submit for each of specs[0..n) (their contents taken), in order:
 * *ids the new jobs' ids (the caller frees). On a failure the iteration
 * is failed (its transaction rolls back: none of them was submitted) and
 * *ids is NULL. */
int jobs_submit_many(struct schedd *sd, const char *user,
    struct proto_job_spec *specs, size_t n, int64_t **ids);

/* The per-user submission limits (quota.h) for one request of user
 * submitting n jobs (a batch, POST /v1/jobs with "jobs", is one request
 * for the rate limit and n jobs for the queued-jobs limit, all or none):
 * 0, or -EBUSY with why (the limit and the user's count) and *retry_s for
 * the 429. A refusal is a `submit_refused` event on subject user/<name>,
 * at most one per user and limit per 10 s (the detail counts the ones
 * left out). */
int jobs_quota(struct schedd *sd, const char *user, bool op, size_t n,
    char *why, size_t len, int64_t *retry_s);

/*
 * Resolve where attempt 1 of a new job of spec resumes from, for a
 * submitter user (read_all, an operator: may read every job):
 * spec->resume_from_job J becomes J's latest complete checkpoint (its path in
 * resume_from, its step in resume_step): -EPERM when it is another user's,
 * -EINVAL when it does not exist or has no complete checkpoint (or one without
 * a path: J had no checkpoint directory); err says which. A path in resume_from
 * gets the step its last component names (step-<N>), or -1. Nothing to do
 * without either. docs/fault-tolerance.md §Checkpoints.
 */
int jobs_resolve_resume(struct schedd *sd, struct proto_job_spec *spec,
    const char *user, bool read_all, struct err *err);

#define JOBS_REFUSAL_MAX 512

/*
 * Whether a job of spec could ever run here (docs/api.md, "Jobs that can
 * never run"): 0, or -ERANGE with the refusal, naming what is short, in
 * why (len bytes; JOBS_REFUSAL_MAX is enough) when no set of registered
 * nodes, whatever their state (a cordoned, lost or unhealthy
 * node may come back), could hold it even were they idle
 * (sched_fits_ever). Never refused: a spec with wait_for_nodes, and any
 * job while no node is registered or within node_timeout_ms of start-up
 * (agents are still registering). The answer for a request shape is
 * kept (sd->fits) until the node inventory changes (sd->nodes.gen), so a
 * submission costs O(1), not a walk over the nodes.
 */
int jobs_check_fits(struct schedd *sd, const struct proto_job_spec *spec,
    char *why, size_t len);

/* Cancel job (by actor): its active attempt is torn down, the job ends
 * CANCELLED and leaves the model (job is freed). A finished job is left
 * alone. */
int jobs_cancel(struct schedd *sd, struct job *job, const char *actor);

/*
 * lockstep hold, release and requeue (docs/api.md "Hold, release,
 * requeue"); the caller checked job_control_refusal. jobs_hold: queued
 * job waits, in its state, with the reason "held by ACTOR", until it is
 * released (holding a held job changes nothing); event job_held.
 * jobs_release: it may be placed again; event job_released.
 */
int jobs_hold(struct schedd *sd, struct job *job, const char *actor);
int jobs_release(struct schedd *sd, struct job *job, const char *actor);

/*
 * Requeue job (PLACED or RUNNING) at once, by actor: its active attempt
 * ends CANCELLED with the reason "requeued by ACTOR" (no failure: no
 * budget spent, no node blamed) and the job goes back to PENDING (held
 * by actor when hold), whence its next attempt resumes from its latest
 * complete checkpoint. Event job_pending {attempt, requeued: true,
 * resume_step, held}. planned_requeue takes the checkpoint first.
 */
int jobs_requeue(struct schedd *sd, struct job *job, const char *actor,
    bool hold);

struct jobs_commit_result {
    int committed; /* ranks that committed the step so far */
    int world_size;
    bool complete; /* this step or a later one is complete */
    int current;   /* -ESTALE: the job's current attempt */
    bool ended;    /* -ESTALE: ... which has ended */
};

/*
 * Rank `rank` of attempt `attempt` of live job committed `step` (through
 * the API, by actor). Returns 0 with out filled; -ESTALE when attempt is
 * not the job's live current attempt (fencing: nothing counts, and a
 * stale_attempt_rejected event is written); -EINVAL with err set when
 * rank is not below the world size.
 */
int jobs_commit(struct schedd *sd, struct job *job, int attempt, int rank,
    int64_t step, const char *actor, struct jobs_commit_result *out,
    struct err *err);

#endif
