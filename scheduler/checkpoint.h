/*
 * checkpoint.h - the checkpoint registry
 *
 * docs/fault-tolerance.md §Checkpoints. A checkpoint of step N is complete
 * when every rank committed N in the same attempt:
 *  - SDK: each rank's agent reports the steps the rank committed;
 *    POST /v1/jobs/ID/checkpoints does the same for one rank. Commits are
 *    recorded per (attempt, step, rank) and counted; world_size distinct
 *    ranks make it complete.
 *  - convention: the agent of node rank 0 scans the checkpoint directory
 *    and reports every step-<N> that has its COMPLETE marker (written last,
 *    after every rank's data is durable).
 * Only the job's latest attempt counts (fencing): the callers refuse
 * commits of an older one. The next attempt resumes from the highest
 * complete step (launch.c); an incomplete step never gets into the
 * registry, so it is never resumed from.
 *
 * Cost: a rank's commits are counted once (the agent repeats them in every
 * report; attempt_rank.ckpt_max skips what was counted), and steps at or
 * below the highest complete one are ignored.
 */
#ifndef SCHEDULER_CHECKPOINT_H
#define SCHEDULER_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "scheduler/schedd.h"

/* Complete steps found by the convention scan of attempt a (its node rank
 * 0 agent): record the new ones. */
int checkpoint_scan(struct schedd *sd, struct job *job, struct attempt *a,
    const int64_t *steps, size_t n);
/* Rank `rank` of attempt a committed `step` (source: "sdk" or "api").
 * Records it and completes the checkpoint when every rank has.
 * *committed (may be NULL): ranks that committed it so far (the world
 * size once complete). */
int checkpoint_commit(struct schedd *sd, struct job *job, struct attempt *a,
    int rank, int64_t step, const char *source, int *committed);

#endif
