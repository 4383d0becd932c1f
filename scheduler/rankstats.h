/*
 * rankstats.h - per-rank step times, GC and checkpoint durations, kept in
 * memory and summarized to the database once per window (docs/cadence.md
 * "Step statistics")
 *
 * Every rank status of a live attempt feeds the attempt's window
 * (rankwin.h): the step time the rank's SDK reports and the durations of
 * the gc and checkpoint directives it acknowledged (each ack once, though
 * agents repeat them). When the window is rank_stats_window_ms old, and
 * when the attempt ends, one row per rank that reported goes to the
 * database and the oldest windows of the job beyond RANKWIN_KEEP are
 * deleted: at most one row per rank per window, at most RANKWIN_KEEP
 * windows per job. A scheduler that restarts loses the open window only.
 * The ranks' timed sections go the same way, with their own rows and the
 * straggler rule (straggler.h), at the same window close.
 */
#ifndef SCHEDULER_RANKSTATS_H
#define SCHEDULER_RANKSTATS_H

#include <stdint.h>

#include "common/jsonx.h"
#include "scheduler/schedd.h"

/* The window when the configuration gives none. */
#define RANKSTATS_WINDOW_MS 30000

/* Rank status `in` of attempt a from the agent of placement p's node (a
 * rank of another node is ignored): its step time and its acks. */
void rankstats_rank(struct schedd *sd, struct attempt *a,
    const struct placement *p, const struct proto_rank_status *in);
/* After a status was decided on: an attempt that is over writes its last
 * window and stops keeping one. */
int rankstats_attempt(struct schedd *sd, struct attempt *a);
/* Every tick: write the windows that are due. */
int rankstats_tick(struct schedd *sd);

/* The job's "rank_stats" object from the database (docs/api.md; with
 * straggler.h's "sections", "stragglers" and "straggler_rule"), or a
 * JSON null when it has no rows; last_ckpt: the job's newest complete
 * checkpoint (-1 none). NULL with *rc set on a database error. */
cJSON *rankstats_view(struct schedd *sd, int64_t job_id, int64_t last_ckpt,
    int *rc);

#endif
