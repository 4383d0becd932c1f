/*
 * test_refusals.c - which refused requests become events
 * (scheduler/refusals.h): one per key per quiet time with the count in
 * between, an overall rate, a bounded table
 */
#include "scheduler/refusals.h"

#include <stdio.h>
#include <string.h>

#include "tests/tap.h"

static void
test_per_key(void)
{
    struct refusals r;
    uint64_t quiet = 99, unrec = 99;
    int64_t t = 1000;

    refusals_init(&r);
    ok(refusals_take(&r, REFUSAL_BAD_MAC, "k1", t, &quiet, &unrec),
        "the first refusal of a key is recorded");
    ok(quiet == 0 && unrec == 0, "with nothing unrecorded before it");
    ok(!refusals_take(&r, REFUSAL_BAD_MAC, "k1", t + 10, &quiet, &unrec),
        "the same key within its quiet time is not");
    ok(!refusals_take(&r, REFUSAL_BAD_MAC, "k1", t + 20, &quiet, &unrec),
        "nor again");
    ok(refusals_take(&r, REFUSAL_REPLAY, "k2", t + 30, &quiet, &unrec),
        "another key is");
    ok(refusals_take(&r, REFUSAL_BAD_MAC, "k1", t + REFUSALS_QUIET_MS, &quiet,
           &unrec),
        "k1 again once its quiet time is over");
    ok(quiet == 2, "saying 2 were not recorded in between (%llu)",
        (unsigned long long)quiet);
    ok(r.count[REFUSAL_BAD_MAC] == 4 && r.recorded[REFUSAL_BAD_MAC] == 2,
        "every refusal counted, two recorded");
    is_str(refusal_reason_str(REFUSAL_CLOCK_SKEW), "clock_skew",
        "reason words");
    is_str(refusal_reason_str(REFUSAL_N), "unknown", "out of range");
    refusals_release(&r);
}

static void
test_overall_rate(void)
{
    struct refusals r;
    uint64_t quiet = 0, unrec = 0, n = 0;
    char key[32];
    int64_t t = 5000;

    refusals_init(&r);
    /* A flood of distinct keys (say, random node names) at one instant. */
    for (int i = 0; i < 1000; i++) {
        snprintf(key, sizeof(key), "flood-%d", i);
        if (refusals_take(&r, REFUSAL_BAD_MAC, key, t, &quiet, &unrec))
            n++;
    }
    ok(n == REFUSALS_BURST, "a flood writes a burst of events (%llu)",
        (unsigned long long)n);
    ok(r.unrecorded == 1000 - REFUSALS_BURST, "the rest are kept out");
    ok(refusals_take(&r, REFUSAL_BAD_MAC, "later", t + 1000, &quiet, &unrec),
        "a second later there is room again");
    ok(unrec == 1000 - REFUSALS_BURST,
        "and the event says how many were kept out (%llu)",
        (unsigned long long)unrec);
    ok(r.count[REFUSAL_BAD_MAC] == 1001, "all counted");
    refusals_release(&r);
}

static void
test_bounded(void)
{
    struct refusals r;
    uint64_t quiet = 0, unrec = 0;
    char key[32];
    int64_t t = 0;

    refusals_init(&r);
    /* Slowly enough for the bucket: every key recorded and remembered. */
    for (int i = 0; i < REFUSALS_KEYS + 10; i++) {
        snprintf(key, sizeof(key), "key-%d", i);
        t += 1000 / REFUSALS_RATE;
        refusals_take(&r, REFUSAL_FORBIDDEN, key, t, &quiet, &unrec);
    }
    ok(r.tab.count <= REFUSALS_KEYS, "at most %d keys remembered (%zu)",
        REFUSALS_KEYS, r.tab.count);
    t += REFUSALS_FORGET_MS;
    refusals_take(&r, REFUSAL_FORBIDDEN, "fresh", t, &quiet, &unrec);
    ok(r.tab.count == 1, "keys without events for a while are forgotten");
    refusals_release(&r);
}

int
main(void)
{
    plan(NO_PLAN);
    test_per_key();
    test_overall_rate();
    test_bounded();
    return done_testing();
}
