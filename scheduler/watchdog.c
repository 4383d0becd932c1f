/*
 * watchdog.c - detect hangs, collect their stack dumps, hand them over
 *
 * watchdog.h describes the mechanism; which rank hung is decided by
 * policy_hang_pick, and what the dumps say by failure_case_hang (both
 * pure). The failure itself is recovery's (recovery.h).
 */
#include "scheduler/watchdog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "common/log.h"
#include "common/timeid.h"
#include "common/xalloc.h"
#include "scheduler/db.h"
#include "scheduler/directive.h"
#include "scheduler/failure.h"
#include "scheduler/recovery.h"

/* The least a rank that has not shown any progress yet gets. */
#define WATCHDOG_STARTUP_MS (300 * 1000)

/* The rank's idle time now, or -1 when it is not watched: not running, or
 * no report since the scheduler started. mono and seen_mono are on the
 * clock that leaves out the scheduler's own stalls (monotonic time less
 * sd->stalled_ms): a loop that could not read the rank's reports for a
 * while is no sign that the rank was idle (docs/fault-tolerance.md
 * "Scheduler stalls"). */
static int64_t
rank_idle_now(const struct attempt_rank *rk, int64_t mono)
{
    if (rk->state != PROTO_RANK_RUNNING || rk->seen_mono == 0)
        return -1;
    return rk->idle_ms + (mono - rk->seen_mono);
}

/*
 * Whether a's ranks can be judged now. Not while a node of it is silent
 * or gone (the ranks elsewhere then wait for its ranks: node loss is the
 * failure, and the node-loss timer finds it), nor while a failed rank's
 * verdict waits for such a node (status.c).
 */
static bool
attempt_watchable(const struct schedd *sd, const struct attempt *a,
    int64_t mono)
{
    for (int k = 0; k < a->nnodes; k++) {
        const struct node *node = a->placements[k].node;

        if (node == NULL || node->lost || schedd_node_silent(sd, node, mono))
            return false;
    }
    return attempt_first_failure(a) == NULL;
}

/* End a's pending hang now with the dumps received so far. */
static int
watchdog_finish(struct schedd *sd, struct attempt *a)
{
    struct failure_case fc;
    size_t ndumps = 0;

    a->dump_deadline_ms = 0;
    failure_case_init(&fc, POLICY_KIND_HANG);
    failure_case_hang(&fc, a, &a->failure);
    if (fc.ev.rank != a->failure.rank)
        log_info("job=%lld attempt=%d: rank %d is stopped or stuck (its "
                 "dump); blaming it rather than rank %d",
            (long long)a->job_id, a->num, fc.ev.rank, a->failure.rank);
    for (size_t r = 0; r < a->nranks; r++)
        ndumps += a->ranks[r].dump[0] != '\0';
    log_info("job=%lld attempt=%d: %zu stack dump(s) received",
        (long long)a->job_id, a->num, ndumps);
    return recovery_fail(sd, a, &fc);
}

/* Hang detected: record its evidence, ask every node for stack dumps
 * (a dump directive) and start the wait. */
static int
hang_start(struct schedd *sd, struct attempt *a, const struct attempt_rank *rk,
    int64_t idle, int64_t now)
{
    const struct placement *p = &a->placements[rk->node_rank];
    struct evidence pending;
    int rc;

    evidence_init(&pending, POLICY_KIND_HANG);
    pending.rank = rk->rank;
    pending.node = xstrdup(p->node_name);
    pending.idle_ms = idle;
    pending.source = xstrdup(proto_progress_str(rk->progress));
    pending.last_step = rk->step;
    pending.failed_ms = now - idle;
    if (p->node)
        pending.last_heartbeat_ms = p->node->last_seen_ms;
    /* Evidence pending: not failed yet. */
    attempt_set_failure(a, &pending, false);
    evidence_release(&pending);
    a->dump_deadline_ms = now + sd->dump_timeout_ms;
    log_notice("job=%lld attempt=%d rank=%d node=%s hung: no progress for "
               "%lld ms (%s); collecting stack dumps",
        (long long)a->job_id, a->num, rk->rank, p->node_name, (long long)idle,
        proto_progress_str(rk->progress));
    if ((rc = directive_post(sd, a, PROTO_DIRECTIVE_DUMP, -1, &a->hang_seq)) <
            0 ||
        (rc = schedd_db_check(sd, db_attempt_update(sd->db, a))) < 0)
        return rc;
    if (sd->dump_timeout_ms <= 0)
        return watchdog_finish(sd, a);
    return 0;
}

int
watchdog_dumps(struct schedd *sd, struct attempt *a)
{
    /* A node that is gone sends nothing; the others decide. */
    if (a->dump_deadline_ms <= 0 || !proto_attempt_state_active(a->state) ||
        !directive_done(a, a->hang_seq))
        return 0;
    return watchdog_finish(sd, a);
}

/* The job's limit, raised for ranks that have not shown any progress. */
static int64_t
hang_limit(const struct job *job, const struct attempt *a)
{
    int64_t t = (int64_t)job->spec.hang_timeout_s * 1000;

    for (size_t r = 0; r < a->nranks; r++) {
        if (a->ranks[r].state == PROTO_RANK_RUNNING &&
            a->ranks[r].progress == PROTO_PROGRESS_NONE &&
            t < WATCHDOG_STARTUP_MS)
            t = WATCHDOG_STARTUP_MS;
    }
    return t;
}

/* Look for a hung rank in running attempt a. */
static void
attempt_check(struct schedd *sd, struct attempt *a, int64_t mono, int64_t now)
{
    size_t n = a->nranks + 1;
    int64_t *idle = xcalloc(n, sizeof(*idle));
    int64_t *step = xcalloc(n, sizeof(*step));
    int64_t *limit = xcalloc(n, sizeof(*limit));
    int64_t t = hang_limit(a->job, a);
    long pick;

    for (size_t r = 0; r < a->nranks; r++) {
        idle[r] = rank_idle_now(&a->ranks[r], mono - sd->stalled_ms);
        step[r] = a->ranks[r].step;
        limit[r] = t;
    }
    pick = policy_hang_pick(idle, step, limit, a->nranks);
    if (pick >= 0)
        hang_start(sd, a, &a->ranks[pick], idle[pick], now);
    free(idle);
    free(step);
    free(limit);
}

void
watchdog_tick(struct schedd *sd)
{
    int64_t mono = timeid_mono_ms(), now = timeid_now_ms();

    for (struct attempt *a = sd->attempts; a; a = a->next) {
        const struct job *job = a->job;

        if (!proto_attempt_state_active(a->state) || !schedd_available(sd))
            continue;
        if (a->dump_deadline_ms > 0) {
            if (now >= a->dump_deadline_ms) {
                log_info("job=%lld attempt=%d: stack dump wait over",
                    (long long)a->job_id, a->num);
                watchdog_finish(sd, a);
            }
            continue;
        }
        /* Only once every rank runs: before that, ranks waiting for a
         * peer that never started are not hung, the start is. */
        if (job == NULL || job->spec.hang_timeout_s <= 0 ||
            a->state != PROTO_ATTEMPT_RUNNING ||
            !attempt_watchable(sd, a, mono))
            continue;
        attempt_check(sd, a, mono, now);
    }
}
