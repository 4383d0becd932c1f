/*
 * job.c - job and attempt states as pure transition tables
 *
 * Nothing here does I/O: the tables decide what may happen, the callers
 * (attempt.c, api_jobs.c, schedd.c) persist the result. Keeping the rules
 * in one table means a forbidden change (a finished job coming back to
 * life, a cancelled attempt succeeding) is refused the same way wherever
 * it is attempted.
 */
#include "scheduler/job.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "scheduler/attempt.h"

/* The states a state may change to, as a set: TO(a) | TO(b). */
#define TO(s) (1u << (s))

/*
 * job_next[from]. PLACED may go straight to SUCCEEDED or FAILED: a short
 * job can start and end between two agent reports, so the scheduler
 * never sees it running. RESTARTING waits in the queue and goes to PLACED
 * when its next attempt is placed. PLACED and RUNNING go back to PENDING
 * when a user requeues the job (no failure, no budget spent).
 */
static const unsigned job_next[PROTO_JOB_STATE_COUNT] = {
    [PROTO_JOB_PENDING] = TO(PROTO_JOB_PLACED) | TO(PROTO_JOB_CANCELLED),
    [PROTO_JOB_PLACED] = TO(PROTO_JOB_RUNNING) | TO(PROTO_JOB_RESTARTING) |
                         TO(PROTO_JOB_SUCCEEDED) | TO(PROTO_JOB_FAILED) |
                         TO(PROTO_JOB_CANCELLED) | TO(PROTO_JOB_PENDING),
    [PROTO_JOB_RUNNING] = TO(PROTO_JOB_RESTARTING) | TO(PROTO_JOB_SUCCEEDED) |
                          TO(PROTO_JOB_FAILED) | TO(PROTO_JOB_CANCELLED) |
                          TO(PROTO_JOB_PENDING),
    [PROTO_JOB_RESTARTING] = TO(PROTO_JOB_PLACED) | TO(PROTO_JOB_CANCELLED),
};

static const unsigned attempt_next[PROTO_ATTEMPT_STATE_COUNT] = {
    [PROTO_ATTEMPT_STARTING] = TO(PROTO_ATTEMPT_RUNNING) |
                               TO(PROTO_ATTEMPT_SUCCEEDED) |
                               TO(PROTO_ATTEMPT_FAILED) |
                               TO(PROTO_ATTEMPT_CANCELLED),
    [PROTO_ATTEMPT_RUNNING] = TO(PROTO_ATTEMPT_SUCCEEDED) |
                              TO(PROTO_ATTEMPT_FAILED) |
                              TO(PROTO_ATTEMPT_CANCELLED),
};

/* Whether next[from], of a table of n states, has to. */
static bool
transition_ok(const unsigned *next, size_t n, int from, int to)
{
    if (from < 0 || (size_t)from >= n || to < 0 || (size_t)to >= n)
        return false;
    return (next[from] & TO(to)) != 0;
}

bool
job_transition_ok(enum proto_job_state from, enum proto_job_state to)
{
    return transition_ok(job_next, ARRAY_SIZE(job_next), (int)from, (int)to);
}

bool
attempt_transition_ok(enum proto_attempt_state from,
    enum proto_attempt_state to)
{
    return transition_ok(attempt_next, ARRAY_SIZE(attempt_next), (int)from,
        (int)to);
}

int
job_transition(struct job *job, enum proto_job_state to)
{
    if (!job_transition_ok(job->state, to))
        return -EINVAL;
    job->state = to;
    return 0;
}

int
attempt_transition(struct attempt *a, enum proto_attempt_state to)
{
    if (!attempt_transition_ok(a->state, to))
        return -EINVAL;
    a->state = to;
    return 0;
}

struct job *
job_create(void)
{
    struct job *job = xcalloc(1, sizeof(*job));

    proto_job_spec_init(&job->spec);
    job->reason = xstrdup("");
    job->held_by = xstrdup("");
    job->failed_rank = -1;
    job->ckpt_step = -1;
    return job;
}

void
job_destroy(struct job *job)
{
    if (job == NULL)
        return;
    free(job->user);
    free(job->reason);
    free(job->held_by);
    free(job->stderr_tail);
    job_set_reserved(job, NULL, 0);
    job_set_blamed(job, NULL, NULL, 0, 0);
    free(job->restart_reason);
    proto_job_spec_release(&job->spec);
    free(job);
}

void
job_set_held(struct job *job, const char *who)
{
    xstrset(&job->held_by, who ? who : "");
}

bool
job_held(const struct job *job)
{
    return job->held_by[0] != '\0';
}

const char *
job_control_refusal(const struct job *job, enum job_control op, char *why,
    size_t len)
{
    const char *state = proto_job_state_str(job->state);
    long long id = (long long)job->id;

    if (proto_job_state_finished(job->state)) {
        snprintf(why, len, "job %lld already ended: %s", id, state);
        return "ended";
    }
    switch (op) {
    case JOB_CONTROL_HOLD:
        if (proto_job_state_queued(job->state))
            return NULL;
        snprintf(why, len,
            "job %lld is %s: only a waiting job can be held; requeue it "
            "(lockstep requeue --hold %lld) to stop it and hold it, or "
            "cancel it",
            id, state, id);
        return "not_queued";
    case JOB_CONTROL_RELEASE:
        if (job_held(job))
            return NULL;
        snprintf(why, len, "job %lld is not held (%s)", id, state);
        return "not_held";
    case JOB_CONTROL_REQUEUE:
        if (job->state == PROTO_JOB_PLACED || job->state == PROTO_JOB_RUNNING)
            return NULL;
        snprintf(why, len,
            "job %lld is %s, not running: only a placed or running job can "
            "be requeued%s",
            id, state,
            job_held(job) ? " (it is held: lockstep release lets it run)"
                          : " (it is already waiting to be placed)");
        return "not_running";
    }
    snprintf(why, len, "unknown request");
    return "bad_request";
}

void
job_set_reason(struct job *job, const char *reason)
{
    /* The pass says the same of most jobs every time: no copy then. */
    if (job->reason && reason && strcmp(job->reason, reason) == 0)
        return;
    xstrset(&job->reason, reason);
}

void
job_set_blamed(struct job *job, const char *const *names,
    const int64_t *time_ms, size_t n, uint64_t gen)
{
    for (size_t i = 0; i < job->nblamed; i++)
        free(job->blamed[i]);
    free(job->blamed);
    free(job->blamed_ms);
    job->blamed = n ? xcalloc(n, sizeof(*job->blamed)) : NULL;
    job->blamed_ms = n ? xcalloc(n, sizeof(*job->blamed_ms)) : NULL;
    for (size_t i = 0; i < n; i++) {
        job->blamed[i] = xstrdup(names[i]);
        job->blamed_ms[i] = time_ms[i];
    }
    job->nblamed = n;
    job->blamed_gen = gen;
}

void
job_set_failure(struct job *job, int rank, bool has_exit, int exit_code,
    int signal, const char *stderr_tail)
{
    free(job->stderr_tail);
    job->stderr_tail = stderr_tail ? xstrdup(stderr_tail) : NULL;
    job->failed_rank = rank;
    job->has_exit = has_exit;
    job->exit_code = has_exit ? exit_code : 0;
    job->signal = has_exit ? signal : 0;
}

void
job_set_reserved(struct job *job, const char *const *names, size_t n)
{
    for (size_t i = 0; i < job->nreserved; i++)
        free(job->reserved[i]);
    free(job->reserved);
    job->reserved = NULL;
    job->nreserved = 0;
    if (n == 0)
        return;
    job->reserved = xcalloc(n + 1, sizeof(*job->reserved));
    for (size_t i = 0; i < n; i++)
        job->reserved[i] = xstrdup(names[i]);
    job->nreserved = n;
}

char *
job_ckpt_path(const struct job *job, int64_t step)
{
    const char *dir = job->spec.checkpoint_dir ? job->spec.checkpoint_dir : "";
    size_t n = strlen(dir);

    if (n == 0)
        return xstrdup("");
    while (n > 1 && dir[n - 1] == '/')
        n--;
    return xasprintf("%.*s/step-%lld", (int)n, dir, (long long)step);
}
