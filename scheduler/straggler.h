/*
 * straggler.h - stragglers found from the ranks' timed sections
 * (docs/cadence.md "Sections")
 *
 * When rankstats closes an attempt's window, the section figures each
 * rank reported in it (rankwin.h) go to the database, one row per rank
 * per section, judged against the job's median for the section with
 * straggler_ratio. Then the rule of rankwin.h runs over the attempt's
 * stored windows: a rank slow in a section in at least straggler_windows
 * of its last 5 judged windows makes its node a straggler. The first time
 * in an attempt that a node is found one (also across a scheduler
 * restart: the node's events are the record), a "straggler" node event is
 * written with the evidence (job, attempt, rank, section, ratio, p50_us,
 * median_us, windows, judged_windows) and the schedd straggler hook runs
 * with the same evidence, so the node findings can make the node SUSPECT.
 *
 * The view reads the same rows with the same rule, so `lockstep show`
 * names exactly the nodes that were raised (for the configuration of the
 * time).
 */
#ifndef SCHEDULER_STRAGGLER_H
#define SCHEDULER_STRAGGLER_H

#include <stdint.h>

#include "common/jsonx.h"
#include "scheduler/schedd.h"

/* Write a's section figures of the window being closed (window_ms: its
 * stamp, the one of its rank_stats rows), prune the job's old section
 * windows, and raise the nodes newly found stragglers. Call before the
 * window is cleared. 0 or a negative errno (recorded). */
int straggler_window(struct schedd *sd, struct attempt *a, int64_t window_ms);

/* Add the section figures of the job's attempt to o, the job's
 * "rank_stats" object (docs/api.md): "straggler_rule", "sections" (one
 * per rank and section, newest window) and "stragglers" (one per node, its
 * worst rank and section). 0 or a negative errno. */
int straggler_view(struct schedd *sd, int64_t job_id, int attempt, cJSON *o);

#endif
