/*
 * test_goodput.c - productive, lost and recovery time (scheduler/goodput.c)
 *
 * Hand-computed timelines: a clean run, a failure resumed from a
 * checkpoint of the failed attempt, one resumed from an older checkpoint,
 * an attempt that failed before running, a job that ended FAILED, and a
 * job that is restarting now.
 */
#include <string.h>

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

static struct goodput_attempt
att(int num, int64_t start, int64_t running, int64_t end, int64_t failed)
{
    struct goodput_attempt a;

    memset(&a, 0, sizeof(a));
    a.num = num;
    a.start_ms = T0 + start;
    a.running_ms = AT(running);
    a.end_ms = AT(end);
    a.failed_ms = AT(failed);
    a.failed = failed > 0;
    return a;
}

static void
test_clean(void)
{
    struct goodput_attempt v[] = { att(1, 1000, 1100, 2100, 0) };
    struct goodput g;

    goodput_compute(v, 1, false, T0 + 2100, &g);
    is_int(g.wall_ms, 1100, "wall: from the first start to the end");
    is_int(g.productive_ms, 1000, "productive: the whole running time");
    is_int(g.lost_ms, 0, "nothing lost");
    is_int(g.recovery_ms, 0, "no recovery");
    ok(near(g.ettr, 1000.0 / 1100.0), "ettr = productive / wall");

    goodput_compute(v, 0, false, T0 + 2100, &g);
    is_int(g.wall_ms, 0, "no attempts: nothing");
}

static void
test_resumed_from_own_checkpoint(void)
{
    /* Attempt 1 runs 100..1100, completes a checkpoint at 700, fails at
     * 1000 (detected 1100); attempt 2 resumes from it, runs from 1300 to
     * 2300. */
    struct goodput_attempt v[] = {
        att(1, 0, 100, 1100, 1000),
        att(2, 1200, 1300, 2300, 0),
    };
    struct goodput g;

    v[0].ckpt_attempt = 1;
    v[0].ckpt_complete_ms = T0 + 700;
    goodput_compute(v, 2, false, T0 + 2300, &g);
    is_int(g.wall_ms, 2300, "wall");
    is_int(g.productive_ms, 600 + 1000,
        "productive: up to the checkpoint, then all of attempt 2");
    is_int(g.lost_ms, 300, "lost: checkpoint to failure");
    is_int(g.recovery_ms, 300, "recovery: failure to attempt 2 running");
    ok(g.productive_ms + g.lost_ms + g.recovery_ms <= g.wall_ms,
        "the parts never exceed wall");
}

static void
test_resumed_from_older_checkpoint(void)
{
    /* The checkpoint attempt 2 resumed from was completed in an earlier
     * attempt: all of attempt 1's running time is lost. */
    struct goodput_attempt v[] = {
        att(1, 0, 100, 1100, 1000),
        att(2, 1200, 1300, 2300, 0),
    };
    struct goodput g;

    v[0].ckpt_attempt = 0;
    v[0].ckpt_complete_ms = 0;
    goodput_compute(v, 2, false, T0 + 2300, &g);
    is_int(g.productive_ms, 1000, "only attempt 2 is productive");
    is_int(g.lost_ms, 900, "attempt 1 is lost entirely");
}

static void
test_failed_before_running(void)
{
    /* Attempt 2 fails during start-up; attempt 3 runs. The recovery after
     * attempt 1's failure lasts until attempt 3 runs. */
    struct goodput_attempt v[] = {
        att(1, 0, 100, 1100, 1000),
        att(2, 1200, 0, 1300, 1250),
        att(3, 1400, 1500, 2500, 0),
    };
    struct goodput g;

    goodput_compute(v, 3, false, T0 + 2500, &g);
    is_int(g.recovery_ms, 500, "one recovery interval, 1000..1500");
    is_int(g.productive_ms, 1000, "attempt 3");
    is_int(g.lost_ms, 900, "attempt 1");
}

static void
test_job_failed(void)
{
    struct goodput_attempt v[] = {
        att(1, 0, 100, 1100, 1000),
        att(2, 1200, 1300, 1800, 1700),
    };
    struct goodput g;

    v[0].ckpt_attempt = 1;
    v[0].ckpt_complete_ms = T0 + 600;
    goodput_compute(v, 2, true, T0 + 1800, &g);
    is_int(g.productive_ms, 500, "the part of attempt 1 that was resumed");
    is_int(g.lost_ms, 400 + 400, "the rest of attempt 1 and all of the last");
    is_int(g.recovery_ms, 300, "no recovery after the final failure");
}

static void
test_restarting_now(void)
{
    /* Attempt 1 failed at 1000; the job restarts, now is 1500. */
    struct goodput_attempt v[] = { att(1, 0, 100, 1100, 1000) };
    struct goodput g;

    v[0].ckpt_attempt = 1;
    v[0].ckpt_complete_ms = T0 + 800;
    goodput_compute(v, 1, false, T0 + 1500, &g);
    is_int(g.productive_ms, 700, "up to the checkpoint it will resume from");
    is_int(g.lost_ms, 200, "the rest");
    is_int(g.recovery_ms, 500, "recovering since the failure");
}

static void
test_running_now(void)
{
    struct goodput_attempt v[] = { att(1, 0, 100, 0, 0) };
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
    test_clean();
    test_resumed_from_own_checkpoint();
    test_resumed_from_older_checkpoint();
    test_failed_before_running();
    test_job_failed();
    test_restarting_now();
    test_running_now();
    return done_testing();
}
