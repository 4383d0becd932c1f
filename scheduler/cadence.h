/*
 * cadence.h - when every rank of an attempt acts, and at which step
 *
 * docs/cadence.md. The scheduler picks the step S at which every rank
 * collects garbage or checkpoints: one that no rank can have reached by
 * the time the directive arrives. It knows the ranks' steps only from
 * their reports, which are up to one report interval old when they
 * arrive, so it estimates the job's step rate from the fastest rank's
 * step over time and looks `lead` milliseconds ahead (the report
 * interval plus the delivery time, with margin).
 *
 * Pure: times are passed in (the scheduler's monotonic clock, ms).
 */
#ifndef SCHEDULER_CADENCE_H
#define SCHEDULER_CADENCE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/proto.h"

/* The step rate of an attempt, from the fastest rank's step. */
struct cadence_rate {
    int64_t step;               /* the fastest step seen; -1 none */
    int64_t seen_ms;            /* when it was first seen */
    int64_t base_step, base_ms; /* the start of the current window */
    double per_ms;              /* steps per ms; 0 unknown */
};

/* The rate windows: a sample spans at least this long, and weighs this
 * much against the estimate so far (an exponential average). */
#define CADENCE_WINDOW_MS 500
#define CADENCE_WEIGHT 0.3

void cadence_rate_init(struct cadence_rate *r);
/* A report says some rank is at step `step` at now. */
void cadence_observe(struct cadence_rate *r, int64_t step, int64_t now);
/* The fastest rank's step at time `at` by the estimate; -1 when the rate
 * is not known yet (fewer than two steps seen a window apart). */
int64_t cadence_predict(const struct cadence_rate *r, int64_t at);

/* One cadence (gc or checkpoint) of an attempt. */
struct cadence_clock {
    int64_t last_ms;    /* when the last action was due (or the
                         * attempt first reported a step) */
    int64_t last_step;  /* the last step acted at; -1 none */
    uint64_t pending;   /* the directive not done yet; 0 none */
    int64_t pending_ms; /* when it was posted */
    int64_t pending_step;
};

void cadence_clock_init(struct cadence_clock *k, int64_t start_ms,
    int64_t resume_step);

/*
 * The step the next action of cadence c should happen at, when it is due
 * at now; -1 when it is not (no cadence, an action still pending, the
 * rate not known yet, or the period not over):
 *  - every P seconds: due once now + lead reaches last_ms + P; the step
 *    is the one predicted for now + lead, plus one;
 *  - every K steps: due as soon as nothing is pending; the step is the
 *    first multiple of K beyond both the last action and the step
 *    predicted for now + lead.
 */
int64_t cadence_due(const struct proto_cadence *c,
    const struct cadence_clock *k, const struct cadence_rate *r, int64_t now,
    int64_t lead);

/* The action of step `step` was posted as directive seq at now. */
void cadence_posted(struct cadence_clock *k, uint64_t seq, int64_t step,
    int64_t now, int64_t lead);
/* Directive seq is done (every rank acknowledged it). */
void cadence_done(struct cadence_clock *k, uint64_t seq);

/* How long a pending action may wait for its acknowledgements, from its
 * posting, before the cadence gives up on it (a rank that never commits
 * the checkpoint it was asked for): 4 periods, within these bounds. */
#define CADENCE_PATIENCE_MIN_MS (2 * 60 * 1000)
#define CADENCE_PATIENCE_MAX_MS (24 * 3600 * 1000)
int64_t cadence_patience_ms(const struct proto_cadence *c,
    const struct cadence_rate *r);

#endif
