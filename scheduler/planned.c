/*
 * planned.c - a synchronized checkpoint first, then the stop (planned.h)
 */
#include "scheduler/planned.h"

#include <errno.h>

#include "common/log.h"
#include "common/timeid.h"
#include "common/xalloc.h"
#include "scheduler/cadences.h"
#include "scheduler/jobs.h"
#include "scheduler/recovery.h"

static const char *
planned_verb(enum attempt_stop_kind kind)
{
    switch (kind) {
    case ATTEMPT_STOP_EVICT:
        return "evicted";
    case ATTEMPT_STOP_CANCEL:
        return "cancelled";
    case ATTEMPT_STOP_REQUEUE:
        break;
    }
    return "requeued";
}

/* A stop asked while `waiting` waits for its checkpoint: a cancel wins
 * over everything (the job must end, not move), a requeue over an
 * eviction (the job moves either way, spending no budget); a second
 * requeue may add the hold. */
static void
planned_join(struct attempt_stop *waiting, const struct attempt_stop *stop)
{
    if (stop->kind == ATTEMPT_STOP_CANCEL)
        waiting->kind = ATTEMPT_STOP_CANCEL;
    if (stop->kind != ATTEMPT_STOP_REQUEUE ||
        waiting->kind == ATTEMPT_STOP_CANCEL)
        return;
    if (waiting->kind == ATTEMPT_STOP_EVICT) {
        waiting->kind = ATTEMPT_STOP_REQUEUE;
        waiting->hold = false;
        xstrset(&waiting->actor, stop->actor);
    }
    waiting->hold = waiting->hold || stop->hold;
}

/* Ask a's ranks for a checkpoint and remember what to do after it. false
 * when they cannot take one (no step rate known): stop at once. */
static bool
planned_start(struct schedd *sd, struct attempt *a,
    const struct attempt_stop *stop)
{
    struct attempt_stop s = *stop;
    uint64_t seq;
    int rc;

    if (a->stop != NULL) {
        planned_join(a->stop, stop);
        return true;
    }
    if (a->state != PROTO_ATTEMPT_RUNNING)
        return false;
    rc = cadences_now(sd, a, PROTO_DIRECTIVE_CHECKPOINT, &s.step, &seq);
    if (rc < 0 && rc != -EBUSY)
        return false;
    s.deadline_ms = timeid_now_ms() + PLANNED_TIMEOUT_MS;
    attempt_set_stop(a, &s);
    log_info("job=%lld attempt=%d %s after its checkpoint of step %lld "
             "(at most %d s from now)",
        (long long)a->job_id, a->num, planned_verb(s.kind), (long long)s.step,
        PLANNED_TIMEOUT_MS / 1000);
    return true;
}

int
planned_evict(struct schedd *sd, struct node *node, const char *actor,
    const char *reason)
{
    struct attempt_stop stop = { .kind = ATTEMPT_STOP_EVICT,
        .node = node->name,
        .actor = (char *)actor,
        .reason = (char *)reason };

    for (size_t i = 0; i < node->nholds; i++)
        planned_start(sd, node->holds[i]->attempt, &stop);
    /* Every attempt without a planned stop now goes at once. */
    return recovery_exclude(sd, node, actor, RECOVERY_EXCLUDE_OPERATOR, reason,
        NULL);
}

int
planned_cancel(struct schedd *sd, struct job *job, const char *actor,
    bool *waiting)
{
    struct attempt_stop stop = { .kind = ATTEMPT_STOP_CANCEL,
        .actor = (char *)actor,
        .reason = (char *)"" };

    *waiting = job->cur && planned_start(sd, job->cur, &stop);
    return *waiting ? 0 : jobs_cancel(sd, job, actor);
}

int
planned_requeue(struct schedd *sd, struct job *job, const char *actor,
    bool hold, bool *waiting)
{
    struct attempt_stop stop = { .kind = ATTEMPT_STOP_REQUEUE,
        .actor = (char *)actor,
        .reason = (char *)"",
        .hold = hold };

    *waiting = job->cur && planned_start(sd, job->cur, &stop);
    return *waiting ? 0 : jobs_requeue(sd, job, actor, hold);
}

/* The attempt ended while its stop waited (a rank failed, its node was
 * lost): an eviction or a requeue has nothing left to move (the job is
 * restarting or ended), but an accepted cancel still ends the job, and an
 * accepted hold still holds it while it waits. */
static int
planned_orphan(struct schedd *sd, struct attempt *a, struct attempt_stop *s)
{
    struct job *job = schedd_attempt_job(sd, a);

    if (job == NULL)
        return 0;
    if (s->kind == ATTEMPT_STOP_CANCEL)
        return jobs_cancel(sd, job, s->actor);
    if (s->kind == ATTEMPT_STOP_REQUEUE && s->hold &&
        proto_job_state_queued(job->state))
        return jobs_hold(sd, job, s->actor);
    return 0;
}

int
planned_check(struct schedd *sd, struct attempt *a)
{
    struct attempt_stop *s = a->stop;
    struct job *job = a->job;
    bool done, late;
    int rc = 0;

    if (s == NULL)
        return 0;
    if (job == NULL || !proto_attempt_state_active(a->state)) {
        a->stop = NULL;
        rc = planned_orphan(sd, a, s);
        attempt_stop_free(s);
        return rc;
    }
    done = job->ckpt_step >= s->step;
    late = timeid_now_ms() >= s->deadline_ms;
    if (!done && !late)
        return 0;
    if (late && !done)
        log_warn("job=%lld attempt=%d: the checkpoint of step %lld is not "
                 "complete after %d s; stopping without it (newest "
                 "complete: %lld)",
            (long long)a->job_id, a->num, (long long)s->step,
            PLANNED_TIMEOUT_MS / 1000, (long long)job->ckpt_step);
    /* Taken off first: carrying it out may free the attempt. */
    a->stop = NULL;
    if (s->kind == ATTEMPT_STOP_EVICT)
        rc = recovery_evict(sd, a, s->node, s->actor, s->reason);
    else if (s->kind == ATTEMPT_STOP_REQUEUE)
        rc = jobs_requeue(sd, job, s->actor, s->hold);
    else
        rc = jobs_cancel(sd, job, s->actor);
    attempt_stop_free(s);
    return rc;
}

int
planned_tick(struct schedd *sd)
{
    struct attempt *a, *next;
    int rc = 0;

    for (a = sd->attempts; a && rc == 0; a = next) {
        next = a->next;
        rc = planned_check(sd, a);
    }
    return rc;
}
