/*
 * status.h - an agent's status report: what it means for nodes and jobs
 *
 * A report (docs/api.md "Node report") registers the node the first time
 * its name is seen, updates its resources when they change, keeps
 * last_seen in memory only (nodes.h), records rank state changes,
 * progress, stack dumps and checkpoint commits, and releases the
 * placements the agent no longer holds. Then each reported attempt is
 * decided: it runs once every rank runs, succeeds once every rank exited
 * 0, and fails (recovery.h) with the first failed rank's evidence.
 *
 * Reconcile: on registration, a new agent process, or the first report
 * after the scheduler started, the report is compared with the placements
 * the scheduler expects there: a placement the agent has seen (its
 * generation ≤ the agent's) but does not report is lost. A new agent
 * process also answers for what its predecessor had applied: had it
 * re-adopted those ranks, it would list them.
 *
 * Fencing: what the agent says of an attempt the scheduler no longer
 * places there (an older attempt, e.g. after a partition healed) is
 * ignored, and noted once as a stale_attempt_rejected event.
 */
#ifndef SCHEDULER_STATUS_H
#define SCHEDULER_STATUS_H

#include "common/proto.h"
#include "scheduler/schedd.h"

/*
 * Apply the report (its node is authenticated by the caller) received at
 * now (wall clock), and fill the reply: the heartbeat interval, the node's
 * desired-state generation and the lease the agent grants its
 * supervisors. The report's job statuses may be reordered.
 */
int status_apply(struct schedd *sd, struct proto_node_report *rep, int64_t now,
    struct proto_status_reply *reply);

#endif
