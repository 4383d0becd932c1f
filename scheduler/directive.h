/*
 * directive.h - the channel from the scheduler to the ranks of an attempt
 *
 * docs/architecture.md "Directives". Every instruction to the ranks
 * ("stack dump now"; with the cadence, "at step S collect garbage", "at
 * step S checkpoint") is a directive of the attempt: a sequence number,
 * a kind and a step (-1: at once). Posting one persists it and wakes the
 * attempt's nodes; each node's launch lists the directives its ranks have
 * not acknowledged yet (launch.h); the agent carries out each (itself,
 * or through the ranks' SDK, by the kind's target) and reports an ack per
 * rank with the step it acted at and how long it took, repeated while
 * the directive is listed, so duplicates are harmless and a restarted
 * scheduler hears them again. A directive is done once every rank on a
 * node still in the attempt acknowledged it. Directives of an attempt
 * that is not the one the agent runs are never delivered: launches are
 * per (job, attempt).
 */
#ifndef SCHEDULER_DIRECTIVE_H
#define SCHEDULER_DIRECTIVE_H

#include <stdint.h>

#include "common/proto.h"
#include "scheduler/schedd.h"

/* Post a directive of kind at step (-1: at once) to active attempt a.
 * *seq (may be NULL): its sequence number. */
int directive_post(struct schedd *sd, struct attempt *a,
    enum proto_directive_kind kind, int64_t step, uint64_t *seq);

/* The acks in rank status `in` (a rank of placement p's node): record
 * them, and mark the directives every live rank has now acknowledged
 * done. */
int directive_acks(struct schedd *sd, struct attempt *a,
    const struct placement *p, const struct proto_rank_status *in);

/* Whether directive seq of a is done: every rank on a node still in the
 * attempt (not lost, not released) acknowledged it. An unknown seq is
 * not. */
bool directive_done(const struct attempt *a, uint64_t seq);

/* The directives placement p's ranks have yet to acknowledge, into l
 * (allocated; the launch's release frees them). */
void directive_launch(const struct attempt *a, const struct placement *p,
    struct proto_launch *l);

#endif
