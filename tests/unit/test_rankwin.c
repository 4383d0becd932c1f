/*
 * test_rankwin.c - per-rank windows and the persistently-slow rule
 * (rankwin.c)
 */
#include <stdio.h>

#include "scheduler/rankwin.h"
#include "tests/tap.h"

static void
test_window(void)
{
    struct rankwin *w = rankwin_create(4, 1000);
    struct rankwin_summary s;

    ok(!rankwin_any(w), "a new window has nothing");
    is_int((int)rankwin_median(w), 0, "no ranks: no median");
    rankwin_step(w, 0, 10, 1000, 1500);
    is_int((int)rankwin_median(w), 0, "one rank: no median");
    rankwin_step(w, 1, 12, 1100, 1600);
    rankwin_step(w, 2, 11, 3000, 4000);
    rankwin_step(w, 3, 9, 0, 0);       /* no step time yet */
    rankwin_step(w, 9, 9, 5000, 5000); /* not a rank: ignored */
    ok(rankwin_any(w), "reports make the window non-empty");
    is_int((int)rankwin_median(w), 1100,
        "median of 1000, 1100, 3000 (rank 3 reported none)");
    rankwin_step(w, 0, 20, 1200, 1800);
    is_int((int)rankwin_median(w), 1200, "the last report of a rank counts");

    ok(rankwin_ack(w, 2, 5, true, 15, 40), "gc ack counted");
    ok(!rankwin_ack(w, 2, 5, true, 15, 40), "the same ack again: not");
    ok(rankwin_ack(w, 2, 7, true, 30, 10), "another gc");
    ok(rankwin_ack(w, 2, 8, true, 45, 20), "a third gc");
    ok(rankwin_ack(w, 2, 6, false, 20, 900), "a checkpoint");
    ok(!rankwin_ack(w, 9, 6, false, 20, 900), "not a rank: nothing");
    rankwin_summarize(w, 2, rankwin_median(w), &s);
    is_int((int)s.step, 11, "step");
    is_int((int)s.step_p50_us, 3000, "p50");
    is_int((int)s.step_p99_us, 4000, "p99");
    ok(s.slow, "3000 > 1.25 x 1200: slow in this window");
    is_int((int)s.gc_count, 3, "three gcs");
    is_int((int)s.gc_p50_ms, 20, "gc median of 40, 10, 20");
    is_int((int)s.gc_max_ms, 40, "gc max");
    is_int((int)s.gc_step, 45, "last gc step");
    is_int((int)s.ckpt_count, 1, "one checkpoint");
    is_int((int)s.ckpt_max_ms, 900, "its duration");
    is_int((int)s.ckpt_step, 20, "its step");
    rankwin_summarize(w, 1, rankwin_median(w), &s);
    ok(!s.slow, "1100 is not slow");

    rankwin_next(w, 2000);
    is_int((int)w->start_ms, 2000, "the next window starts now");
    ok(!rankwin_any(w), "and is empty");
    ok(!rankwin_ack(w, 2, 7, true, 30, 10),
        "an ack counted in the last window is not counted again");
    rankwin_summarize(w, 2, 0, &s);
    is_int((int)s.gc_count, 0, "the window's gc count is cleared");
    is_int((int)s.gc_step, 45, "the attempt's last gc step is kept");
    is_int((int)s.ckpt_step, 20, "and its last checkpoint step");
    ok(!s.slow, "no median: not slow");
    for (int i = 0; i < RANKWIN_SAMPLES + 10; i++)
        rankwin_ack(w, 1, 100 + (uint64_t)i, true, 100 + i, i == 3 ? 500 : 1);
    rankwin_summarize(w, 1, 0, &s);
    is_int((int)s.gc_count, RANKWIN_SAMPLES + 10, "every gc counted");
    is_int((int)s.gc_max_ms, 500, "the maximum of all");
    is_int((int)s.gc_p50_ms, 1, "the median of those kept");
    rankwin_destroy(w);
    rankwin_destroy(NULL);
}

static void
test_slow(void)
{
    ok(!rankwin_is_slow(1250, 1000), "1.25 x: not slow");
    ok(rankwin_is_slow(1251, 1000), "above 1.25 x: slow");
    ok(!rankwin_is_slow(5000, 0), "no median: never slow");
}

static void
test_persistent(void)
{
    bool judged[8] = { 1, 1, 1, 1, 1, 1, 1, 1 };
    bool slow[8] = { 1, 0, 1, 0, 1, 0, 0, 0 };
    int nslow, njudged;

    ok(rankwin_persistent(judged, slow, 8, &nslow, &njudged),
        "slow in 3 of the last 5: persistently slow");
    is_int(nslow, 3, "3 slow");
    is_int(njudged, 5, "of 5 judged");
    slow[0] = 0;
    ok(!rankwin_persistent(judged, slow, 8, &nslow, &njudged),
        "2 of the last 5: not");
    ok(!rankwin_persistent(judged, slow, 2, &nslow, &njudged),
        "fewer than K windows: never");
    {
        bool j2[7] = { 0, 1, 0, 1, 1, 0, 1 };
        bool s2[7] = { 0, 1, 0, 1, 0, 0, 1 };

        ok(rankwin_persistent(j2, s2, 7, &nslow, &njudged),
            "windows that judged no one do not count");
        is_int(njudged, 4, "4 judged windows");
    }
    {
        bool j3[7] = { 1, 1, 1, 1, 1, 1, 1 };
        bool s3[7] = { 0, 0, 0, 1, 1, 1, 1 };

        ok(!rankwin_persistent(j3, s3, 7, &nslow, &njudged),
            "slow long ago, not in the last 5: no longer");
        is_int(nslow, 2, "2 of the last 5");
    }
}

static struct proto_section
sec(const char *name, int64_t p50)
{
    struct proto_section s = { .p50_us = p50, .p99_us = p50 * 2, .n = 200 };

    snprintf(s.name, sizeof(s.name), "%s", name);
    return s;
}

static void
test_sections(void)
{
    struct rankwin *w = rankwin_create(4, 0);
    struct proto_section a[2] = { sec("compute", 100000), sec("io", 500) };
    struct proto_section slow[1] = { sec("compute", 120000) };
    struct proto_section bad[2] = { sec("a b", 1), sec("compute", 99000) };
    bool judged[5] = { 1, 0, 1, 1, 1 }, sl[5] = { 1, 1, 0, 1, 1 };
    int nslow, njudged;

    /* A synchronous job: equal step times, one rank 20% slower inside
     * its compute section. */
    rankwin_sections(w, 0, a, 2);
    is_int((int)rankwin_section_median(w, "compute"), 0,
        "one rank reported a section: no median");
    rankwin_sections(w, 1, a, 1);
    rankwin_sections(w, 2, slow, 1);
    rankwin_sections(w, 3, bad, 2);
    is_int((int)w->ranks[3].nsec, 1, "an invalid section name is skipped");
    is_int((int)rankwin_section_median(w, "compute"), 100000,
        "the section's median over the ranks that reported it");
    is_int((int)rankwin_section_median(w, "io"), 0, "io: one rank, none");
    ok(rankwin_is_straggler(120000, 100000, 1.15),
        "20%% slower is above a ratio of 1.15");
    ok(!rankwin_is_straggler(110000, 100000, 1.15), "10%% slower is not");
    ok(!rankwin_is_straggler(120000, 0, 1.15), "no median judges no one");
    rankwin_next(w, 10);
    is_int((int)w->ranks[2].nsec, 0, "the next window starts without");
    rankwin_destroy(w);

    ok(rankwin_straggling(judged, sl, 5, 3, &nslow, &njudged) && nslow == 3 &&
            njudged == 4,
        "slow in 3 of 4 judged windows: straggling (k=3)");
    ok(!rankwin_straggling(judged, sl, 5, 4, &nslow, &njudged),
        "... not with k=4");
    ok(!rankwin_straggling(judged, sl, 2, 3, &nslow, &njudged),
        "two windows cannot make 3");
}

int
main(void)
{
    plan(NO_PLAN);
    test_window();
    test_sections();
    test_slow();
    test_persistent();
    return done_testing();
}
