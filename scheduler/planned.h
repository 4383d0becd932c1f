/*
 * planned.h - planned stops lose no steps: a synchronized checkpoint
 * first, then the stop
 *
 * docs/cadence.md "Planned stops". `lockstep cordon NODE --evict`,
 * `lockstep cancel JOB --checkpoint` and `lockstep requeue JOB` stop
 * running attempts on purpose. For an attempt whose ranks report steps
 * through the SDK, the stop first asks every rank for a checkpoint at a
 * common step (cadences.h) and waits until that checkpoint is complete -
 * then the attempt is evicted (and restarts elsewhere from that step),
 * the job is requeued (and starts again from that step, spending no
 * budget) or it is cancelled. The wait is bounded by PLANNED_TIMEOUT_MS:
 * a job that does not checkpoint when asked is stopped anyway. An attempt
 * whose step rate is not known (no SDK) is stopped at once, as before.
 *
 * A cancel asked while another stop waits turns it into a cancel; a
 * requeue asked while an eviction waits turns it into the requeue. When
 * the attempt ends during the wait (a rank failed), an eviction or a
 * requeue has nothing left to do, a cancel still cancels the job and a
 * requeue's hold still holds it.
 *
 * The waiting stops are in memory (struct attempt_stop), kept with the
 * attempt: a scheduler restarted during the wait forgets them (the node
 * stays cordoned and its jobs keep running there until an operator
 * evicts again; a cancel or a requeue must be asked again), and so does
 * an attempt released at once when it ends (its node lost) before the
 * next check.
 */
#ifndef SCHEDULER_PLANNED_H
#define SCHEDULER_PLANNED_H

#include "scheduler/schedd.h"

/* How long a planned stop waits for its checkpoint. */
#define PLANNED_TIMEOUT_MS (120 * 1000)

/* Evict the active attempts running on node (already cordoned by actor
 * with reason): after a checkpoint where their ranks can take one, at
 * once otherwise. */
int planned_evict(struct schedd *sd, struct node *node, const char *actor,
    const char *reason);
/* Cancel job after a checkpoint when its running attempt can take one
 * (*waiting true: the job is cancelled later), else at once (the job is
 * freed before this returns, as jobs_cancel does). */
int planned_cancel(struct schedd *sd, struct job *job, const char *actor,
    bool *waiting);
/* Requeue job (PLACED or RUNNING; jobs_requeue) after a checkpoint when
 * its running attempt can take one (*waiting true: requeued later, also
 * when a planned stop already waits: a cancel stays a cancel, an
 * eviction becomes this requeue), else at once. */
int planned_requeue(struct schedd *sd, struct job *job, const char *actor,
    bool hold, bool *waiting);
/* Attempt a reported (status.c), or a tick: carry out its planned stop
 * when its checkpoint is complete or its deadline passed. */
int planned_check(struct schedd *sd, struct attempt *a);
/* planned_check for every live attempt. */
int planned_tick(struct schedd *sd);

#endif
