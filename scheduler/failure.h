/*
 * failure.h - what a failed attempt's evidence says, and what it means
 *
 * docs/fault-tolerance.md §Failure kinds. The classifiers turn what the
 * scheduler saw into a
 * `struct failure_case`: the evidence (evidence.h), whether it points at
 * the node
 * (blame), which budget it may spend, and a sentence for people. They
 * hold every rule of "what does this failure mean", including the
 * fencing rule (a rank its supervisor killed because the lease ran out
 * says its node was cut off, unless the scheduler itself was down), so
 * unit tests check them without a loop, a database or a clock.
 *
 * Pure: no I/O, no clock, no globals.
 */
#ifndef SCHEDULER_FAILURE_H
#define SCHEDULER_FAILURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "scheduler/attempt.h"
#include "scheduler/evidence.h"
#include "scheduler/node.h"
#include "scheduler/policy.h"

/* A failure as the recovery decides on it. */
struct failure_case {
    struct evidence ev;
    bool blame;       /* the evidence points at ev.node */
    bool suspect;     /* a rank exit on a node that is lost or
                       * unhealthy: the infrastructure's budget */
    char reason[256]; /* the attempt's reason, for people */
    /* The blame row's status, set by recovery once it knows whether the
     * failure repeats (policy_blame_class; docs/fault-tolerance.md
     * §Blame). */
    enum policy_blame_status blame_status;
};

void failure_case_init(struct failure_case *fc, enum policy_kind kind);
void failure_case_release(struct failure_case *fc);

/* The stack dumps of a's ranks, the hung rank's first, then the others in
 * rank order, at most `max`: [{rank, dump}]. Caller owns the array. */
cJSON *failure_dumps_json(const struct attempt *a, int hung, size_t max);

/*
 * Rank r of active attempt a ended badly (exited non-zero, by a signal,
 * fenced, lost, or never started). node is r's node (NULL when unknown);
 * started_ms is when this scheduler started and lease_ms the supervisors'
 * lease. A fenced rank is a lost node (blamed, unless its lease ran out
 * before this scheduler had been up for a whole lease: then the
 * scheduler's own outage cut it off); a lost rank is lost_ranks; a rank
 * with a launch error is launch_failed, blaming no node (its reason
 * "launch failed: <cause> (rank R on node N)", its evidence's stderr_tail
 * the cause); anything else a rank exit, which spends the infrastructure
 * budget when the node is suspect (lost or unhealthy).
 */
void failure_case_rank(struct failure_case *fc, const struct attempt *a,
    const struct attempt_rank *r, const struct node *node, int64_t started_ms,
    int64_t lease_ms);

/*
 * The ranks of placement p are gone (kind POLICY_KIND_NODE_LOST or
 * POLICY_KIND_LOST_RANKS; why says how, e.g. "node lost"). first is the
 * first rank found lost. A lost node failed when it was last heard from;
 * lost ranks when the agent came back without them (failed_ms 0: now).
 */
void failure_case_lost(struct failure_case *fc, const struct attempt *a,
    const struct placement *p, const struct attempt_rank *first,
    enum policy_kind kind, const char *why);

/*
 * Node p->node left UP under active attempt a (kind node_excluded): by
 * actor, blamed when the exclusion came from blame (an operator's
 * eviction is maintenance, not the node's fault); why is the sentence.
 */
void failure_case_excluded(struct failure_case *fc, const struct attempt *a,
    const struct placement *p, const char *actor, bool blame, const char *why);

/*
 * The hang whose evidence `pending` was recorded when it was detected,
 * now that a's stack dumps are in (or their wait is over): a rank whose
 * dump shows it stopped or in uninterruptible sleep is the better culprit
 * than the one progress pointed at (its peers wait in S).
 */
void failure_case_hang(struct failure_case *fc, const struct attempt *a,
    const struct evidence *pending);

#endif
