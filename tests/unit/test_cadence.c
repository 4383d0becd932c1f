/*
 * test_cadence.c - when every rank acts, and at which step (cadence.c)
 */
#include "scheduler/cadence.h"
#include "tests/tap.h"

/* Steps reported at `rate` steps per second, every `every` ms, from t0. */
static void
feed(struct cadence_rate *r, double rate, int64_t t0, int64_t t1, int64_t every)
{
    for (int64_t t = t0; t <= t1; t += every)
        cadence_observe(r, (int64_t)(rate * (double)t / 1000.0), t);
}

static void
test_rate(void)
{
    struct cadence_rate r;
    int64_t p;

    cadence_rate_init(&r);
    is_int((int)cadence_predict(&r, 1000), -1, "no step: no prediction");
    cadence_observe(&r, 10, 1000);
    is_int((int)cadence_predict(&r, 2000), -1,
        "one step: no rate, no prediction");
    cadence_observe(&r, 20, 1100);
    is_int((int)cadence_predict(&r, 2000), -1,
        "two steps less than a window apart: still none");
    cadence_observe(&r, 60, 1500);
    p = cadence_predict(&r, 2500);
    ok(p >= 159 && p <= 161, "100 steps/s: at +1 s, step ~160 (%lld)",
        (long long)p);
    cadence_observe(&r, 50, 1600);
    is_int((int)r.step, 60, "a slower rank's lower step changes nothing");

    cadence_rate_init(&r);
    feed(&r, 20, 0, 10000, 1000);
    p = cadence_predict(&r, 12000);
    ok(p >= 239 && p <= 241,
        "20 steps/s reported every second: step ~240 "
        "at 12 s (%lld)",
        (long long)p);
    /* The job slows down to 5 steps/s: the estimate follows. */
    for (int64_t t = 11000, s = 200; t <= 30000; t += 1000, s += 5)
        cadence_observe(&r, s, t);
    ok(r.per_ms * 1000 > 4.5 && r.per_ms * 1000 < 6,
        "the rate follows a slower job (%.2f steps/s)", r.per_ms * 1000);
}

static void
test_due_time(void)
{
    struct proto_cadence every = { 10, 0 };
    struct cadence_clock k;
    struct cadence_rate r;
    int64_t s;

    cadence_rate_init(&r);
    cadence_clock_init(&k, 0, -1);
    is_int((int)cadence_due(&every, &k, &r, 20000, 1500), -1,
        "no rate: nothing is due");
    feed(&r, 100, 0, 8000, 1000);
    is_int((int)cadence_due(&every, &k, &r, 8000, 1500), -1,
        "8 s + 1.5 s lead < 10 s: not due");
    s = cadence_due(&every, &k, &r, 8600, 1500);
    ok(s >= 1000 && s <= 1020, "due at 8.6 s: the step of 10.1 s, ~1011 (%lld)",
        (long long)s);
    cadence_posted(&k, 7, s, 8600, 1500);
    is_int((int)cadence_due(&every, &k, &r, 30000, 1500), -1,
        "nothing while one is pending");
    cadence_done(&k, 6);
    is_int((int)k.pending, 7, "another directive's end changes nothing");
    cadence_done(&k, 7);
    feed(&r, 100, 9000, 19000, 1000);
    is_int((int)cadence_due(&every, &k, &r, 18000, 1500), -1,
        "the next one is due a period after the last, not before");
    ok(cadence_due(&every, &k, &r, 18700, 1500) > 2000, "... and then it is");
    every.s = 0;
    is_int((int)cadence_due(&every, &k, &r, 99000, 1500), -1,
        "no cadence: never due");
}

static void
test_due_steps(void)
{
    struct proto_cadence every = { 0, 500 };
    struct cadence_clock k;
    struct cadence_rate r;

    cadence_rate_init(&r);
    cadence_clock_init(&k, 0, -1);
    feed(&r, 100, 0, 3000, 1000);
    /* At 3 s, step 300; with 1.5 s lead ~450: the next multiple is 500. */
    is_int((int)cadence_due(&every, &k, &r, 3000, 1500), 500,
        "every 500 steps: the first multiple beyond the lead");
    cadence_posted(&k, 1, 500, 3000, 1500);
    cadence_done(&k, 1);
    is_int((int)cadence_due(&every, &k, &r, 3000, 1500), 1000,
        "the next is the next multiple");
    /* Already well past 1000 by the estimate at 12 s: skip ahead. */
    feed(&r, 100, 4000, 12000, 1000);
    is_int((int)cadence_due(&every, &k, &r, 12000, 1500), 1500,
        "a multiple the ranks may have passed is skipped");
    cadence_clock_init(&k, 0, 1700);
    is_int((int)cadence_due(&every, &k, &r, 12000, 1500), 2000,
        "an attempt resumed from step 1700: next multiple 2000");
    ok(cadence_patience_ms(&every, &r) >= 120000,
        "patience is at least two minutes");
}

int
main(void)
{
    plan(NO_PLAN);
    test_rate();
    test_due_time();
    test_due_steps();
    return done_testing();
}
