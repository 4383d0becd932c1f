/*
 * pass.h - when and how the scheduling pass runs
 *
 * The pass is deferred and coalesced: submits, exits, releases and node
 * changes only trigger it (schedd_sched_trigger, through the context's
 * hook), so a burst of requests costs one pass, never one per request.
 * Passes are at least PASS_SPACING_MS apart, and at least twice as far as
 * the last one took, so a steady stream of triggers costs at most about a
 * third of the loop even on a huge cluster. The pass itself is pure
 * (sched_pass.h, with the policy named in the configuration); this file
 * builds its input from the model and turns its decisions into
 * placements (launch.h).
 *
 * Cost at scale (docs/scale.md): a pass walks the queue the job table
 * keeps in scheduling order (job.h; nothing is sorted), fills arrays kept
 * between passes (nothing is allocated per job), and its reasons replace
 * a job's only when they change. A submission costs no pass when the last
 * pass shows it could place nothing new (the job could never fit on the
 * schedulable nodes, comes after the job that blocked the queue, or no
 * master port is free): the job gets that reason at once (the sched_queued
 * hook). Only a change that could move the queue (a job ending, a node
 * joining or freeing room, a hold or release, a restart) triggers a pass.
 *
 * Restarts: a RESTARTING job enters the pass only once its backoff has
 * passed and every placement of its previous attempt is released (or its
 * node LOST, whose supervisors' leases have expired): an attempt never
 * starts while ranks of the one before may still run anywhere. Until then
 * its reserved nodes are marked so that no other job takes them; in the
 * pass it goes first, prefers those nodes and avoids the nodes blamed for
 * its recent failures. All of that is in SQLite (the job's not_before_ms
 * and reserved, the attempts' placements, the blame table), so a restarted
 * scheduler continues exactly where it stopped; the pass keeps each
 * restarting job's blamed nodes in memory and reads the blame table again
 * only after a blame row was written (db_blame_gen). What keeps a restart from
 * fitting can also lapse silently (the blame window of the nodes it
 * avoids), and a restart must never be forgotten, so pass_tick retries an
 * unplaced one: at its backoff deadline, else every PASS_RESTART_RETRY_MS.
 */
#ifndef SCHEDULER_PASS_H
#define SCHEDULER_PASS_H

#include <stdint.h>

#include "common/err.h"
#include "scheduler/schedd.h"

/* Create the pass with the named policy (sched_pass.h) and register it as
 * the context's sched_trigger and sched_queued hooks. -EINVAL with err set for
 * an unknown policy. */
struct pass *pass_create(struct schedd *sd, const char *policy,
    struct err *err);
/* Close its timers; freed once they are closed. Accepts NULL. */
void pass_destroy(struct pass *ps);

/* Run the pass soon (coalesced; never synchronously). */
void pass_trigger(struct pass *ps);
/* From the tick: trigger the pass when an unplaced restart is due. */
void pass_tick(struct pass *ps, int64_t now_ms);

#endif
