/*
 * recovery.h - a failed attempt: evidence, blame, exclusion, what next
 *
 * docs/fault-tolerance.md §Recovery. Every failure, whatever found it (a
 * rank report, the node-loss timer, a reconcile, the hang watchdog, an
 * exclusion), comes here as a failure_case (failure.h: the evidence and
 * what it means, classified by pure functions). Recovery then decides
 * (policy_plan, pure) and applies the decision, in one transaction:
 *
 *  1. the attempt ends FAILED with its evidence (event.h withdraws it from
 *     every node, whose agents tear its ranks down);
 *  2. a crash loop is looked for in the job's earlier failures;
 *  3. the node the evidence points to is blamed: at once (confirmed) when
 *     the evidence points at the node itself, else provisionally, until
 *     the job's next attempt elsewhere confirms it or the job withdraws
 *     it (withdrawn at once, with the blame of the attempts it repeated,
 *     when the failure is the job's own deterministic bug; an exclusion
 *     that withdrawn blame no longer supports is lifted);
 *  4. the job is RESTARTING with a backoff and its healthy nodes reserved,
 *     or FAILED (a crash loop, a spent budget); the job_failure event
 *     carries the evidence, then the job's state event the decision;
 *  5. a node now blamed (confirmed) by enough different jobs is excluded.
 *
 * An exclusion fails every active attempt on the node, and those
 * failures may exclude further nodes: such work is queued and done in
 * order by the outermost call, never by recursion. While a hang waits
 * for its stack dumps, any other failure of that attempt ends the hang
 * instead (it came first).
 *
 * The next attempt is placed by the scheduling pass (pass.h) once the
 * backoff has passed and this attempt is released everywhere.
 */
#ifndef SCHEDULER_RECOVERY_H
#define SCHEDULER_RECOVERY_H

#include <cjson/cJSON.h>

#include "scheduler/failure.h"
#include "scheduler/schedd.h"

/* Create the queue (sd->recovery). Never fails. */
struct recovery *recovery_create(struct schedd *sd);
/* Accepts NULL. */
void recovery_destroy(struct recovery *rc);

/*
 * Active attempt a failed as fc says (fc's contents are taken; the struct
 * itself stays the caller's). An attempt that is not active by the time
 * it is handled is left alone. Returns 0 or the first negative errno of
 * this and the work it queued.
 */
int recovery_fail(struct schedd *sd, struct attempt *a,
    struct failure_case *fc);

enum recovery_exclude {
    RECOVERY_EXCLUDE_BLAME,    /* blamed too often: UNHEALTHY, counted */
    RECOVERY_EXCLUDE_OPERATOR, /* cordon --evict: not counted as blame */
    RECOVERY_EXCLUDE_HEALTH,   /* a health finding excluded it (nodes.h
                                * marked it): not counted as blame */
};

/*
 * The one way a node leaves UP under running jobs. BLAME marks it
 * UNHEALTHY with `reason` (event node_excluded carrying `evidence`,
 * taken; NULL none); OPERATOR expects the caller to have cordoned it
 * already, HEALTH to have marked it with the finding that excludes it.
 * Every active attempt with ranks there fails with kind node_excluded
 * (the infrastructure's budget), except, for OPERATOR, the attempts with
 * a planned stop (planned.h): recovery_evict fails those once their
 * checkpoint is complete.
 */
int recovery_exclude(struct schedd *sd, struct node *node, const char *actor,
    enum recovery_exclude how, const char *reason, cJSON *evidence);

/* Fail active attempt a as node_excluded: `node` (one of its nodes) was
 * evicted by actor (an operator's cordon --evict; never blamed). */
int recovery_evict(struct schedd *sd, struct attempt *a, const char *node,
    const char *actor, const char *reason);

/*
 * Settle provisional blame by what the jobs did since (policy_blame_settle):
 * confirmed when a later attempt got past the failure on other nodes
 * (the node then checked for exclusion), withdrawn when the job ended
 * without. The tick calls it; a failure and a success settle their own
 * job's rows at once.
 */
int recovery_blame_tick(struct schedd *sd);

/* Attempt a succeeded (its state already SUCCEEDED, its job's not yet):
 * its job's provisional blame is settled by it. */
int recovery_attempt_succeeded(struct schedd *sd, const struct attempt *a);

#endif
