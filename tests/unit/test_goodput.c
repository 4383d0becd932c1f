/*
 * test_goodput.c - productive, lost and recovery time (scheduler/goodput.c)
 *
 * Hand-computed timelines: a clean run, a failure resumed from a
 * checkpoint of the failed attempt, one resumed from an older checkpoint,
 * an attempt that failed before running, a job that ended FAILED, and a
 * job that is restarting now.
 */
#include <string.h>

#include "common/xalloc.h"
#include "scheduler/goodput.h"
#include "tests/tap.h"

static bool
near(double a, double b)
{
    return a - b < 1e-9 && b - a < 1e-9;
}

/* Timelines below are written from 0; real times are epoch ms. */
#define T0 1800000000000LL
#define AT(t) ((t) > 0 ? T0 + (t) : 0)

enum part { WALL, PRODUCTIVE, LOST, RECOVERY };

/* One timeline: its attempts (start, running, end, failed; 0 where a
 * time does not apply), the checkpoint attempt 1 resumed from or left
 * (the attempt that completed it, and when; 0: none), whether the job
 * ended FAILED, now, and the checks in order (a NULL name ends them),
 * with more of them in `more` when set. */
struct timeline {
    int64_t att[3][4];
    size_t n;
    int ckpt_attempt;
    int64_t ckpt_ms;
    bool job_failed;
    int64_t now;
    struct {
        enum part part;
        int64_t want;
        const char *name;
    } checks[4];
    void (*more)(const struct goodput *g);
};

static void
clean_more(const struct goodput *g)
{
    struct goodput_attempt none[1];
    struct goodput g0;

    memset(none, 0, sizeof(none));
    ok(near(g->ettr, 1000.0 / 1100.0), "ettr = productive / wall");
    goodput_compute(none, 0, false, T0 + 2100, &g0);
    is_int(g0.wall_ms, 0, "no attempts: nothing");
}

static void
parts_more(const struct goodput *g)
{
    ok(g->productive_ms + g->lost_ms + g->recovery_ms <= g->wall_ms,
        "the parts never exceed wall");
}

static const struct timeline timelines[] = {
    {   /* a clean run */
        .att = { { 1000, 1100, 2100, 0 } }, .n = 1, .now = 2100,
        .checks = {
            { WALL, 1100, "wall: from the first start to the end" },
            { PRODUCTIVE, 1000, "productive: the whole running time" },
            { LOST, 0, "nothing lost" },
            { RECOVERY, 0, "no recovery" },
        },
        .more = clean_more,
    },
    {   /* Attempt 1 runs 100..1100, completes a checkpoint at 700, fails
         * at 1000 (detected 1100); attempt 2 resumes from it, runs from
         * 1300 to 2300. */
        .att = { { 0, 100, 1100, 1000 }, { 1200, 1300, 2300, 0 } }, .n = 2,
        .ckpt_attempt = 1, .ckpt_ms = 700, .now = 2300,
        .checks = {
            { WALL, 2300, "wall" },
            { PRODUCTIVE, 600 + 1000,
              "productive: up to the checkpoint, then all of attempt 2" },
            { LOST, 300, "lost: checkpoint to failure" },
            { RECOVERY, 300, "recovery: failure to attempt 2 running" },
        },
        .more = parts_more,
    },
    {   /* The checkpoint attempt 2 resumed from was completed in an
         * earlier attempt: all of attempt 1's running time is lost. */
        .att = { { 0, 100, 1100, 1000 }, { 1200, 1300, 2300, 0 } }, .n = 2,
        .now = 2300,
        .checks = {
            { PRODUCTIVE, 1000, "only attempt 2 is productive" },
            { LOST, 900, "attempt 1 is lost entirely" },
        },
    },
    {   /* Attempt 2 fails during start-up; attempt 3 runs. The recovery
         * after attempt 1's failure lasts until attempt 3 runs. */
        .att = { { 0, 100, 1100, 1000 }, { 1200, 0, 1300, 1250 },
            { 1400, 1500, 2500, 0 } }, .n = 3, .now = 2500,
        .checks = {
            { RECOVERY, 500, "one recovery interval, 1000..1500" },
            { PRODUCTIVE, 1000, "attempt 3" },
            { LOST, 900, "attempt 1" },
        },
    },
    {   /* the job ended FAILED */
        .att = { { 0, 100, 1100, 1000 }, { 1200, 1300, 1800, 1700 } }, .n = 2,
        .ckpt_attempt = 1, .ckpt_ms = 600, .job_failed = true, .now = 1800,
        .checks = {
            { PRODUCTIVE, 500, "the part of attempt 1 that was resumed" },
            { LOST, 400 + 400, "the rest of attempt 1 and all of the last" },
            { RECOVERY, 300, "no recovery after the final failure" },
        },
    },
    {   /* Attempt 1 failed at 1000; the job restarts, now is 1500. */
        .att = { { 0, 100, 1100, 1000 } }, .n = 1, .ckpt_attempt = 1,
        .ckpt_ms = 800, .now = 1500,
        .checks = {
            { PRODUCTIVE, 700, "up to the checkpoint it will resume from" },
            { LOST, 200, "the rest" },
            { RECOVERY, 500, "recovering since the failure" },
        },
    },
};

/* Attempt k (from 1) of a timeline as goodput reads it. */
static struct goodput_attempt
att(int num, const int64_t *t)
{
    struct goodput_attempt a;

    memset(&a, 0, sizeof(a));
    a.num = num;
    a.start_ms = T0 + t[0];
    a.running_ms = AT(t[1]);
    a.end_ms = AT(t[2]);
    a.failed_ms = AT(t[3]);
    a.failed = t[3] > 0;
    return a;
}

/* goodput_compute over the timeline's attempts. */
static struct goodput
compute(const struct timeline *tl, struct goodput_attempt *v)
{
    struct goodput g;

    for (size_t k = 0; k < tl->n; k++)
        v[k] = att((int)k + 1, tl->att[k]);
    v[0].ckpt_attempt = tl->ckpt_attempt;
    v[0].ckpt_complete_ms = tl->ckpt_ms > 0 ? T0 + tl->ckpt_ms : 0;
    goodput_compute(v, tl->n, tl->job_failed, T0 + tl->now, &g);
    return g;
}

static void
test_timelines(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(timelines); i++) {
        const struct timeline *tl = &timelines[i];
        struct goodput_attempt v[3];
        struct goodput g = compute(tl, v);
        const int64_t parts[] = {
            [WALL] = g.wall_ms,
            [PRODUCTIVE] = g.productive_ms,
            [LOST] = g.lost_ms,
            [RECOVERY] = g.recovery_ms,
        };

        for (size_t c = 0; c < ARRAY_SIZE(tl->checks); c++) {
            if (tl->checks[c].name != NULL)
                is_int(parts[tl->checks[c].part], tl->checks[c].want, "%s",
                    tl->checks[c].name);
        }
        if (tl->more)
            tl->more(&g);
    }
}

static void
test_running_now(void)
{
    static const int64_t running[4] = { 0, 100, 0, 0 };
    struct goodput_attempt v[] = { att(1, running) };
    struct goodput g, sum;

    goodput_compute(v, 1, false, T0 + 600, &g);
    is_int(g.productive_ms, 500, "an active attempt counts up to now");
    memset(&sum, 0, sizeof(sum));
    goodput_add(&sum, &g);
    goodput_add(&sum, &g);
    is_int(sum.productive_ms, 1000, "totals add");
    ok(near(sum.ettr, 1000.0 / 1200.0), "total ettr from the sums");
}

int
main(void)
{
    plan(NO_PLAN);
    test_timelines();
    test_running_now();
    return done_testing();
}
