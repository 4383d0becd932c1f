/*
 * cadence.c - when every rank of an attempt acts, and at which step
 * (cadence.h)
 */
#include "scheduler/cadence.h"

#include <math.h>

void
cadence_rate_init(struct cadence_rate *r)
{
    r->step = -1;
    r->seen_ms = 0;
    r->base_step = -1;
    r->base_ms = 0;
    r->per_ms = 0;
}

void
cadence_observe(struct cadence_rate *r, int64_t step, int64_t now)
{
    double inst;

    if (step < 0 || step <= r->step)
        return;
    r->step = step;
    r->seen_ms = now;
    if (r->base_step < 0) {
        r->base_step = step;
        r->base_ms = now;
        return;
    }
    if (now - r->base_ms < CADENCE_WINDOW_MS)
        return;
    inst = (double)(step - r->base_step) / (double)(now - r->base_ms);
    r->per_ms = r->per_ms > 0
                    ? (1 - CADENCE_WEIGHT) * r->per_ms + CADENCE_WEIGHT * inst
                    : inst;
    r->base_step = step;
    r->base_ms = now;
}

int64_t
cadence_predict(const struct cadence_rate *r, int64_t at)
{
    double ahead;

    if (r->step < 0 || r->per_ms <= 0)
        return -1;
    ahead = r->per_ms * (double)(at > r->seen_ms ? at - r->seen_ms : 0);
    if (ahead > (double)PROTO_CADENCE_STEPS_MAX)
        ahead = (double)PROTO_CADENCE_STEPS_MAX;
    return r->step + (int64_t)ceil(ahead);
}

void
cadence_clock_init(struct cadence_clock *k, int64_t start_ms,
    int64_t resume_step)
{
    k->last_ms = start_ms;
    k->last_step = resume_step;
    k->pending = 0;
    k->pending_ms = 0;
    k->pending_step = -1;
}

int64_t
cadence_due(const struct proto_cadence *c, const struct cadence_clock *k,
    const struct cadence_rate *r, int64_t now, int64_t lead)
{
    int64_t at, next;

    if (!proto_cadence_set(c) || k->pending != 0)
        return -1;
    at = cadence_predict(r, now + lead);
    if (at < 0)
        return -1;
    if (c->s > 0)
        return now + lead >= k->last_ms + c->s * 1000 ? at + 1 : -1;
    next = k->last_step > at ? k->last_step : at;
    return (next / c->steps + 1) * c->steps;
}

void
cadence_posted(struct cadence_clock *k, uint64_t seq, int64_t step, int64_t now,
    int64_t lead)
{
    k->pending = seq;
    k->pending_ms = now;
    k->pending_step = step;
    k->last_ms = now + lead;
    k->last_step = step;
}

void
cadence_done(struct cadence_clock *k, uint64_t seq)
{
    if (k->pending == seq)
        k->pending = 0;
}

int64_t
cadence_patience_ms(const struct proto_cadence *c, const struct cadence_rate *r)
{
    double period = (double)c->s * 1000;

    if (c->steps > 0 && r->per_ms > 0)
        period = (double)c->steps / r->per_ms;
    if (period * 4 < CADENCE_PATIENCE_MIN_MS)
        return CADENCE_PATIENCE_MIN_MS;
    if (period * 4 > CADENCE_PATIENCE_MAX_MS)
        return CADENCE_PATIENCE_MAX_MS;
    return (int64_t)(period * 4);
}
