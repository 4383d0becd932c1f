/*
 * stats.h - goodput: per job and cluster-wide
 *
 * docs/fault-tolerance.md §Goodput. The rows come from the database (one
 * per attempt, with the checkpoint it resumed from and its job's state);
 * this groups them by job, tells each attempt which checkpoint its
 * successor resumed from, and leaves the arithmetic to goodput.c (pure).
 * The cluster-wide figures walk every attempt ever recorded: an on-demand
 * report, one indexed scan.
 */
#ifndef SCHEDULER_STATS_H
#define SCHEDULER_STATS_H

#include <stdint.h>

#include "scheduler/goodput.h"
#include "scheduler/policy.h"
#include "scheduler/schedd.h"

struct stats_cluster {
    struct goodput total;
    int64_t jobs;
    int64_t rank_productive_ms; /* productive time × world size, summed */
    int64_t failures[POLICY_KIND_COUNT];
};

/* One job's goodput. Returns 0 or a negative errno. */
int stats_job(struct schedd *sd, int64_t job_id, struct goodput *out);
/* Every job's, summed. */
int stats_cluster(struct schedd *sd, struct stats_cluster *out);

#endif
