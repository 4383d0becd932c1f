/*
 * test_job.c - the job and attempt transition tables
 */
#include <errno.h>
#include <string.h>

#include "scheduler/job.h"
#include "tests/tap.h"

struct edge {
    enum job_state from, to;
};

static const struct edge job_legal[] = {
    { JOB_STATE_PENDING, JOB_STATE_PLACED },
    { JOB_STATE_PENDING, JOB_STATE_CANCELLED },
    { JOB_STATE_PLACED, JOB_STATE_RUNNING },
    { JOB_STATE_PLACED, JOB_STATE_RESTARTING },
    { JOB_STATE_PLACED, JOB_STATE_SUCCEEDED },
    { JOB_STATE_PLACED, JOB_STATE_FAILED },
    { JOB_STATE_PLACED, JOB_STATE_CANCELLED },
    { JOB_STATE_RUNNING, JOB_STATE_SUCCEEDED },
    { JOB_STATE_RUNNING, JOB_STATE_FAILED },
    { JOB_STATE_RUNNING, JOB_STATE_CANCELLED },
    { JOB_STATE_RUNNING, JOB_STATE_RESTARTING },
    { JOB_STATE_RESTARTING, JOB_STATE_PLACED },
    { JOB_STATE_RESTARTING, JOB_STATE_CANCELLED },
};

static bool
is_legal(enum job_state from, enum job_state to)
{
    for (size_t i = 0; i < sizeof(job_legal) / sizeof(job_legal[0]); i++) {
        if (job_legal[i].from == from && job_legal[i].to == to)
            return true;
    }
    return false;
}

static void
test_job_table(void)
{
    int mismatches = 0;

    for (int f = 0; f < JOB_STATE_COUNT; f++) {
        for (int t = 0; t < JOB_STATE_COUNT; t++) {
            bool want = is_legal((enum job_state)f, (enum job_state)t);

            if (job_transition_ok((enum job_state)f, (enum job_state)t) !=
                want) {
                diag("%s -> %s: want %s", job_state_str((enum job_state)f),
                    job_state_str((enum job_state)t),
                    want ? "legal" : "illegal");
                mismatches++;
            }
        }
    }
    is_int(mismatches, 0, "job table matches the lifecycle (49 pairs)");
    ok(!job_transition_ok(JOB_STATE_SUCCEEDED, JOB_STATE_RUNNING),
        "a finished job never comes back");
    ok(!job_transition_ok(JOB_STATE_CANCELLED, JOB_STATE_FAILED),
        "a cancelled job does not fail later");
    ok(!job_transition_ok(JOB_STATE_PENDING, JOB_STATE_RUNNING),
        "PENDING cannot skip PLACED");
    ok(!job_transition_ok(JOB_STATE_PENDING, JOB_STATE_PENDING),
        "no self transition");
    ok(!job_transition_ok((enum job_state)42, JOB_STATE_PENDING),
        "out-of-range state is refused");
}

static void
test_job_transition(void)
{
    struct job *job = job_create();

    is_int(job->state, JOB_STATE_PENDING, "new job is PENDING");
    is_int(job_transition(job, JOB_STATE_PLACED), 0, "PENDING -> PLACED");
    is_int(job_transition(job, JOB_STATE_RUNNING), 0, "PLACED -> RUNNING");
    is_int(job_transition(job, JOB_STATE_RESTARTING), 0,
        "RUNNING -> RESTARTING");
    is_int(job_transition(job, JOB_STATE_RUNNING), -EINVAL,
        "RESTARTING -> RUNNING is refused");
    is_int(job->state, JOB_STATE_RESTARTING, "a refused change leaves it");
    is_int(job_transition(job, JOB_STATE_PLACED), 0, "RESTARTING -> PLACED");
    is_int(job_transition(job, JOB_STATE_SUCCEEDED), 0, "PLACED -> SUCCEEDED");
    is_int(job_transition(job, JOB_STATE_CANCELLED), -EINVAL,
        "SUCCEEDED -> CANCELLED is refused");
    is_str(job_state_str(job->state), "SUCCEEDED", "state name");
    job_destroy(job);
    job_destroy(NULL);
}

static void
test_names(void)
{
    enum job_state js;
    enum attempt_state as;
    int bad = 0;

    for (int i = 0; i < JOB_STATE_COUNT; i++) {
        if (job_state_parse(job_state_str((enum job_state)i), &js) < 0 ||
            js != (enum job_state)i)
            bad++;
    }
    for (int i = 0; i < ATTEMPT_STATE_COUNT; i++) {
        if (attempt_state_parse(attempt_state_str((enum attempt_state)i),
                &as) < 0 || as != (enum attempt_state)i)
            bad++;
    }
    is_int(bad, 0, "every state name parses back");
    is_int(job_state_parse("running", &js), -EINVAL,
        "state names are exact (uppercase)");
    ok(job_state_finished(JOB_STATE_FAILED) &&
           !job_state_finished(JOB_STATE_RESTARTING),
        "finished states");
    ok(job_state_queued(JOB_STATE_RESTARTING) &&
           job_state_queued(JOB_STATE_PENDING) &&
           !job_state_queued(JOB_STATE_PLACED),
        "queued states");
}

static void
test_attempt_table(void)
{
    ok(attempt_transition_ok(ATTEMPT_STATE_STARTING, ATTEMPT_STATE_RUNNING),
        "STARTING -> RUNNING");
    ok(attempt_transition_ok(ATTEMPT_STATE_STARTING, ATTEMPT_STATE_FAILED),
        "STARTING -> FAILED");
    ok(attempt_transition_ok(ATTEMPT_STATE_STARTING,
           ATTEMPT_STATE_SUCCEEDED), "STARTING -> SUCCEEDED (short job)");
    ok(attempt_transition_ok(ATTEMPT_STATE_RUNNING,
           ATTEMPT_STATE_CANCELLED), "RUNNING -> CANCELLED");
    ok(!attempt_transition_ok(ATTEMPT_STATE_RUNNING,
           ATTEMPT_STATE_STARTING), "RUNNING -> STARTING is refused");
    ok(!attempt_transition_ok(ATTEMPT_STATE_FAILED,
           ATTEMPT_STATE_SUCCEEDED), "FAILED -> SUCCEEDED is refused");
    ok(!attempt_transition_ok(ATTEMPT_STATE_CANCELLED,
           ATTEMPT_STATE_RUNNING), "CANCELLED -> RUNNING is refused");
    ok(attempt_state_active(ATTEMPT_STATE_STARTING) &&
           attempt_state_active(ATTEMPT_STATE_RUNNING) &&
           !attempt_state_active(ATTEMPT_STATE_FAILED),
        "active attempt states");
}

static void
test_table(void)
{
    struct job_table t;
    int found = 0;

    job_table_init(&t);
    for (int i = 1; i <= 500; i++) {
        struct job *job = job_create();

        job->id = i * 7;
        job_table_add(&t, job);
    }
    for (int i = 1; i <= 500; i++)
        found += job_table_find(&t, i * 7) != NULL;
    is_int(found, 500, "every job is found after growth");
    ok(job_table_find(&t, 8) == NULL, "an absent id is not found");
    {
        struct job *job = job_table_find(&t, 70);

        job_table_remove(&t, job);
        job_destroy(job);
    }
    ok(job_table_find(&t, 70) == NULL, "a removed job is gone");
    is_int(t.count, 499, "count follows");
    is_int(t.head->id, 7, "list keeps insertion order");
    job_table_release(&t);
}

int
main(void)
{
    plan(NO_PLAN);
    test_job_table();
    test_job_transition();
    test_names();
    test_attempt_table();
    test_table();
    return done_testing();
}
