/*
 * cadences.h - every rank of an attempt collects garbage and checkpoints
 * at the same step (docs/cadence.md)
 *
 * For each running attempt of a job with a cadence, cadence.c decides
 * when the next action is due and at which step; this posts it as a gc or
 * checkpoint directive (directive.h), waits until the directive is done
 * (every live rank acknowledged it) before the next of its kind, and
 * records what happened: an action a rank carried out after its step
 * (late, with both steps), and one the ranks never acknowledged within
 * the cadence's patience (abandoned, so the cadence goes on).
 *
 * The clocks are in memory, on the monotonic clock (a wall-clock step
 * must not make every rank late): a restarted scheduler starts them again
 * from the attempt's next report that carries a step.
 */
#ifndef SCHEDULER_CADENCES_H
#define SCHEDULER_CADENCES_H

#include <stdint.h>

#include "scheduler/schedd.h"

/* The margin a directive's step leaves beyond the fastest step the
 * scheduler knows: one report interval (how old a reported step can be)
 * plus this much for the delivery and the estimate's error. */
#define CADENCES_MARGIN_MS 500

/* Some ranks of attempt a reported, the fastest of them at step
 * `fastest` (-1: none reported a step): update the attempt's step rate,
 * then post what is due. Costs nothing per rank. */
int cadences_report(struct schedd *sd, struct attempt *a, int64_t fastest);
/* Every tick: post what is due and give up on what waited too long, for
 * every running attempt. */
int cadences_tick(struct schedd *sd);
/* The acks in rank status `in` of attempt a, from the agent of placement
 * p's node (after directive_acks counted them; a rank of another node is
 * ignored): the first rank that carried out a gc or checkpoint
 * after its step is recorded as late (event cadence_late, once per
 * directive). */
int cadences_acks(struct schedd *sd, struct attempt *a,
    const struct placement *p, const struct proto_rank_status *in);
/* A gc or checkpoint (kind) of attempt a as soon as possible (lockstep
 * checkpoint JOB): the step it will happen at into *step, its directive
 * into *seq. -EAGAIN when the step rate of the attempt is not known yet
 * (its ranks have not reported steps through the SDK for long enough),
 * -EBUSY when one of that kind is still pending for a step no later than
 * the one it would pick (its step and seq into *step and *seq): the
 * caller waits for that one. A pending one further ahead (the next
 * multiple of a step cadence) does not delay this one. */
int cadences_now(struct schedd *sd, struct attempt *a,
    enum proto_directive_kind kind, int64_t *step, uint64_t *seq);

#endif
