/*
 * test_job.c - the job and attempt transition tables
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "scheduler/attempt.h"
#include "scheduler/job.h"
#include "tests/tap.h"

struct edge {
    enum proto_job_state from, to;
};

/* A transition the tables must allow (legal) or refuse, by name. */
struct spot {
    int from, to;
    bool legal;
    const char *name;
};

static const struct edge job_legal[] = {
    { PROTO_JOB_PENDING, PROTO_JOB_PLACED },
    { PROTO_JOB_PENDING, PROTO_JOB_CANCELLED },
    { PROTO_JOB_PLACED, PROTO_JOB_RUNNING },
    { PROTO_JOB_PLACED, PROTO_JOB_RESTARTING },
    { PROTO_JOB_PLACED, PROTO_JOB_SUCCEEDED },
    { PROTO_JOB_PLACED, PROTO_JOB_FAILED },
    { PROTO_JOB_PLACED, PROTO_JOB_CANCELLED },
    { PROTO_JOB_RUNNING, PROTO_JOB_SUCCEEDED },
    { PROTO_JOB_RUNNING, PROTO_JOB_FAILED },
    { PROTO_JOB_RUNNING, PROTO_JOB_CANCELLED },
    { PROTO_JOB_RUNNING, PROTO_JOB_RESTARTING },
    { PROTO_JOB_PLACED, PROTO_JOB_PENDING },  /* requeue */
    { PROTO_JOB_RUNNING, PROTO_JOB_PENDING }, /* requeue */
    { PROTO_JOB_RESTARTING, PROTO_JOB_PLACED },
    { PROTO_JOB_RESTARTING, PROTO_JOB_CANCELLED },
};

static bool
is_legal(enum proto_job_state from, enum proto_job_state to)
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
    static const struct spot spots[] = {
        { PROTO_JOB_SUCCEEDED, PROTO_JOB_RUNNING, false,
            "a finished job never comes back" },
        { PROTO_JOB_CANCELLED, PROTO_JOB_FAILED, false,
            "a cancelled job does not fail later" },
        { PROTO_JOB_PENDING, PROTO_JOB_RUNNING, false,
            "PENDING cannot skip PLACED" },
        { PROTO_JOB_PENDING, PROTO_JOB_PENDING, false, "no self transition" },
        { 42, PROTO_JOB_PENDING, false, "out-of-range state is refused" },
    };
    int mismatches = 0;

    for (int f = 0; f < PROTO_JOB_STATE_COUNT; f++) {
        for (int t = 0; t < PROTO_JOB_STATE_COUNT; t++) {
            bool want = is_legal((enum proto_job_state)f,
                (enum proto_job_state)t);

            if (job_transition_ok((enum proto_job_state)f,
                    (enum proto_job_state)t) != want) {
                diag("%s -> %s: want %s",
                    proto_job_state_str((enum proto_job_state)f),
                    proto_job_state_str((enum proto_job_state)t),
                    want ? "legal" : "illegal");
                mismatches++;
            }
        }
    }
    is_int(mismatches, 0, "job table matches the lifecycle (49 pairs)");
    for (size_t i = 0; i < sizeof(spots) / sizeof(spots[0]); i++) {
        const struct spot *s = &spots[i];

        ok(job_transition_ok((enum proto_job_state)s->from,
               (enum proto_job_state)s->to) == s->legal,
            "%s", s->name);
    }
}

static void
test_job_transition(void)
{
    struct job *job = job_create();

    is_int(job->state, PROTO_JOB_PENDING, "new job is PENDING");
    is_int(job_transition(job, PROTO_JOB_PLACED), 0, "PENDING -> PLACED");
    is_int(job_transition(job, PROTO_JOB_RUNNING), 0, "PLACED -> RUNNING");
    is_int(job_transition(job, PROTO_JOB_RESTARTING), 0,
        "RUNNING -> RESTARTING");
    is_int(job_transition(job, PROTO_JOB_RUNNING), -EINVAL,
        "RESTARTING -> RUNNING is refused");
    is_int(job->state, PROTO_JOB_RESTARTING, "a refused change leaves it");
    is_int(job_transition(job, PROTO_JOB_PLACED), 0, "RESTARTING -> PLACED");
    is_int(job_transition(job, PROTO_JOB_SUCCEEDED), 0, "PLACED -> SUCCEEDED");
    is_int(job_transition(job, PROTO_JOB_CANCELLED), -EINVAL,
        "SUCCEEDED -> CANCELLED is refused");
    is_str(proto_job_state_str(job->state), "SUCCEEDED", "state name");
    job_destroy(job);
    job_destroy(NULL);
}

static void
test_names(void)
{
    enum proto_job_state js;
    enum proto_attempt_state as;
    int bad = 0;

    for (int i = 0; i < PROTO_JOB_STATE_COUNT; i++) {
        if (proto_job_state_parse(proto_job_state_str((enum proto_job_state)i),
                &js) < 0 ||
            js != (enum proto_job_state)i)
            bad++;
    }
    for (int i = 0; i < PROTO_ATTEMPT_STATE_COUNT; i++) {
        if (proto_attempt_state_parse(
                proto_attempt_state_str((enum proto_attempt_state)i), &as) <
                0 ||
            as != (enum proto_attempt_state)i)
            bad++;
    }
    is_int(bad, 0, "every state name parses back");
    is_int(proto_job_state_parse("running", &js), -EINVAL,
        "state names are exact (uppercase)");
    ok(proto_job_state_finished(PROTO_JOB_FAILED) &&
            !proto_job_state_finished(PROTO_JOB_RESTARTING),
        "finished states");
    ok(proto_job_state_queued(PROTO_JOB_RESTARTING) &&
            proto_job_state_queued(PROTO_JOB_PENDING) &&
            !proto_job_state_queued(PROTO_JOB_PLACED),
        "queued states");
}

static void
test_attempt_table(void)
{
    static const struct spot spots[] = {
        { PROTO_ATTEMPT_STARTING, PROTO_ATTEMPT_RUNNING, true,
            "STARTING -> RUNNING" },
        { PROTO_ATTEMPT_STARTING, PROTO_ATTEMPT_FAILED, true,
            "STARTING -> FAILED" },
        { PROTO_ATTEMPT_STARTING, PROTO_ATTEMPT_SUCCEEDED, true,
            "STARTING -> SUCCEEDED (short job)" },
        { PROTO_ATTEMPT_RUNNING, PROTO_ATTEMPT_CANCELLED, true,
            "RUNNING -> CANCELLED" },
        { PROTO_ATTEMPT_RUNNING, PROTO_ATTEMPT_STARTING, false,
            "RUNNING -> STARTING is refused" },
        { PROTO_ATTEMPT_FAILED, PROTO_ATTEMPT_SUCCEEDED, false,
            "FAILED -> SUCCEEDED is refused" },
        { PROTO_ATTEMPT_CANCELLED, PROTO_ATTEMPT_RUNNING, false,
            "CANCELLED -> RUNNING is refused" },
    };

    for (size_t i = 0; i < sizeof(spots) / sizeof(spots[0]); i++) {
        const struct spot *s = &spots[i];

        ok(attempt_transition_ok((enum proto_attempt_state)s->from,
               (enum proto_attempt_state)s->to) == s->legal,
            "%s", s->name);
    }
    ok(proto_attempt_state_active(PROTO_ATTEMPT_STARTING) &&
            proto_attempt_state_active(PROTO_ATTEMPT_RUNNING) &&
            !proto_attempt_state_active(PROTO_ATTEMPT_FAILED),
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
    is_int(job_table_count(&t), 499, "count follows");
    is_int(job_table_first(&t)->id, 7, "list keeps insertion order");
    job_table_release(&t);
}

static struct job *
queue_job(struct job_table *t, int64_t id, const char *user, int prio,
    enum proto_job_state st)
{
    struct job *job = job_create();

    job->id = id;
    job->user = xstrdup(user);
    job->spec.priority = prio;
    job->state = st;
    job_table_add(t, job);
    return job;
}

/* The queue's ids in order, space-separated, into buf. */
static const char *
queue_ids(const struct job_table *t, char *buf, size_t len)
{
    size_t off = 0;

    buf[0] = '\0';
    for (const struct job *j = job_queue_first(t); j && off < len;
         j = job_queue_next(t, j))
        off += (size_t)snprintf(buf + off, len - off, "%s%lld", off ? " " : "",
            (long long)j->id);
    return buf;
}

/* The queue and the per-user counts follow every change (job_table_sync,
 * as the event path calls it). */
static void
test_queue(void)
{
    struct job_table t;
    struct job *a, *b, *c;
    char buf[256];

    job_table_init(&t);
    queue_job(&t, 1, "alice", 0, PROTO_JOB_PENDING);
    a = queue_job(&t, 2, "alice", 5, PROTO_JOB_PENDING);
    b = queue_job(&t, 3, "bob", 0, PROTO_JOB_RUNNING);
    queue_job(&t, 4, "bob", 0, PROTO_JOB_PENDING);
    c = queue_job(&t, 5, "alice", 5, PROTO_JOB_RESTARTING);
    is_str(queue_ids(&t, buf, sizeof(buf)), "5 2 1 4",
        "queue: restarting first, then priority, then id; running left out");
    is_int(job_queue_count(&t), 4, "queue: four queued");
    is_int(job_table_user(&t, "alice").queued, 2, "alice: 2 pending");
    is_int(job_table_user(&t, "bob").running, 1, "bob: 1 running");

    b->state = PROTO_JOB_PENDING; /* requeued: an old id back in line */
    job_table_sync(&t, b);
    is_str(queue_ids(&t, buf, sizeof(buf)), "5 2 1 3 4",
        "a requeued job goes back in id order");
    is_int(job_table_user(&t, "bob").running, 0, "bob: none running");
    is_int(job_table_user(&t, "bob").queued, 2, "bob: 2 pending");

    a->state = PROTO_JOB_PLACED;
    job_table_sync(&t, a);
    c->state = PROTO_JOB_PLACED;
    job_set_held(c, NULL);
    job_table_sync(&t, c);
    is_str(queue_ids(&t, buf, sizeof(buf)), "1 3 4", "placed jobs leave");
    is_int(job_table_user(&t, "alice").queued, 1, "alice: 1 pending");
    is_int(job_table_user(&t, "alice").running, 2, "alice: 2 placed");

    a->state = PROTO_JOB_RESTARTING;
    job_set_held(a, "op");
    job_table_sync(&t, a);
    is_str(queue_ids(&t, buf, sizeof(buf)), "2 1 3 4",
        "a restarting job goes first, held or not");
    is_int(job_table_user(&t, "alice").queued, 2,
        "alice: a held restarting job counts as queued");
    job_table_remove(&t, a);
    job_destroy(a);
    is_int(job_table_user(&t, "alice").queued, 1, "removed: uncounted");
    is_str(queue_ids(&t, buf, sizeof(buf)), "1 3 4", "and out of the queue");
    ok(job_queue_before(job_table_find(&t, 1), job_table_find(&t, 3)),
        "job_queue_before: 1 before 3");
    job_table_park(&t, job_table_find(&t, 1));
    job_table_park(&t, job_table_find(&t, 4));
    is_str(queue_ids(&t, buf, sizeof(buf)), "3", "parked jobs are passed by");
    is_int(job_queue_count(&t), 3, "and still counted as queued");
    queue_job(&t, 9, "bob", 0, PROTO_JOB_PENDING);
    job_table_unpark_all(&t);
    is_str(queue_ids(&t, buf, sizeof(buf)), "1 3 4 9",
        "unparked: back in their places");
    job_table_park(&t, job_table_find(&t, 3));
    job_table_sync(&t, job_table_find(&t, 3));
    is_str(queue_ids(&t, buf, sizeof(buf)), "1 3 4 9", "a sync unparks");
    job_table_release(&t);
    is_int(job_queue_count(&t), 0, "released: empty");
}

/* A random stream of changes: the queue always equals the jobs sorted. */
static void
test_queue_random(void)
{
    static const enum proto_job_state states[] = { PROTO_JOB_PENDING,
        PROTO_JOB_RESTARTING, PROTO_JOB_PLACED, PROTO_JOB_RUNNING };
    struct job_table t;
    struct job *jobs[200];
    unsigned seed = 11;
    int bad = 0;

    job_table_init(&t);
    for (int i = 0; i < 200; i++)
        jobs[i] = queue_job(&t, i + 1, i % 3 ? "u1" : "u2", rand_r(&seed) % 4,
            states[rand_r(&seed) % 4]);
    for (int step = 0; step < 2000; step++) {
        struct job *j = jobs[rand_r(&seed) % 200];
        const struct job *prev = NULL;
        size_t n = 0, want = 0, queued = 0, parked = 0, total = 0;

        if (rand_r(&seed) % 3 == 0) {
            job_table_park(&t, jobs[rand_r(&seed) % 200]);
            if (rand_r(&seed) % 10 == 0)
                job_table_unpark_all(&t);
        }
        j->state = states[rand_r(&seed) % 4];
        if (rand_r(&seed) % 5 == 0)
            j->spec.priority = rand_r(&seed) % 4;
        job_set_held(j,
            rand_r(&seed) % 7 == 0 && proto_job_state_queued(j->state) ? "op"
                                                                       : NULL);
        job_table_sync(&t, j);
        for (const struct job *q = job_queue_first(&t); q;
             q = job_queue_next(&t, q), n++) {
            bad += prev && !job_queue_before(prev, q);
            prev = q;
        }
        for (int i = 0; i < 200; i++) {
            want += proto_job_state_queued(jobs[i]->state) && !jobs[i]->qparked;
            parked += jobs[i]->qparked;
            total += proto_job_state_queued(jobs[i]->state);
            queued += strcmp(jobs[i]->user, "u1") == 0 &&
                      (jobs[i]->state == PROTO_JOB_PENDING ||
                          job_held(jobs[i]));
        }
        bad += n != want || total != job_queue_count(&t) || parked != t.nparked;
        bad += queued != job_table_user(&t, "u1").queued;
    }
    is_int(bad, 0, "2000 random changes: queue in order, counts right");
    job_table_unpark_all(&t);
    {
        const struct job *prev = NULL;
        size_t n = 0, want = 0;

        for (const struct job *q = job_queue_first(&t); q;
             q = job_queue_next(&t, q), n++) {
            bad += prev && !job_queue_before(prev, q);
            prev = q;
        }
        for (int i = 0; i < 200; i++)
            want += proto_job_state_queued(jobs[i]->state);
        is_int(bad, 0, "all unparked: in order");
        is_int((int)n, (int)want, "all unparked: every queued job walked");
    }
    job_table_release(&t);
}

/* What hold, release and requeue refuse, state by state. */
static void
test_control(void)
{
    static const struct {
        enum proto_job_state state;
        bool held;
        const char *hold, *release, *requeue; /* the 409 code; NULL ok */
    } cases[] = {
        { PROTO_JOB_PENDING, false, NULL, "not_held", "not_running" },
        { PROTO_JOB_PENDING, true, NULL, NULL, "not_running" },
        { PROTO_JOB_RESTARTING, false, NULL, "not_held", "not_running" },
        { PROTO_JOB_RESTARTING, true, NULL, NULL, "not_running" },
        { PROTO_JOB_PLACED, false, "not_queued", "not_held", NULL },
        { PROTO_JOB_RUNNING, false, "not_queued", "not_held", NULL },
        { PROTO_JOB_SUCCEEDED, false, "ended", "ended", "ended" },
        { PROTO_JOB_FAILED, false, "ended", "ended", "ended" },
        { PROTO_JOB_CANCELLED, false, "ended", "ended", "ended" },
    };
    char why[JOB_CONTROL_WHY_MAX];
    struct job *job = job_create();
    int mismatches = 0;

    job->id = 12;
    ok(!job_held(job), "a new job is not held");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *want[] = { cases[i].hold, cases[i].release,
            cases[i].requeue };

        job->state = cases[i].state;
        job_set_held(job, cases[i].held ? "alice" : NULL);
        for (int op = 0; op < 3; op++) {
            const char *got = job_control_refusal(job, (enum job_control)op,
                why, sizeof(why));

            if ((got == NULL) != (want[op] == NULL) ||
                (got && strcmp(got, want[op]) != 0)) {
                diag("%s held=%d op=%d: got %s, want %s",
                    proto_job_state_str(cases[i].state), cases[i].held, op,
                    got ? got : "(allowed)", want[op] ? want[op] : "(allowed)");
                mismatches++;
            } else if (got && strstr(why, "job 12") == NULL) {
                diag("the refusal does not name the job: %s", why);
                mismatches++;
            }
        }
    }
    is_int(mismatches, 0,
        "hold/release/requeue refuse exactly as the "
        "table says, naming the job");
    job->state = PROTO_JOB_RUNNING;
    job_set_held(job, NULL);
    job_control_refusal(job, JOB_CONTROL_HOLD, why, sizeof(why));
    ok(strstr(why, "lockstep requeue --hold 12") != NULL,
        "holding a running job says how: %s", why);
    job->state = PROTO_JOB_SUCCEEDED;
    job_control_refusal(job, JOB_CONTROL_REQUEUE, why, sizeof(why));
    is_str(why, "job 12 already ended: SUCCEEDED", "an ended job says so");
    job->state = PROTO_JOB_PENDING;
    job_set_held(job, "bob");
    ok(job_held(job) && strcmp(job->held_by, "bob") == 0, "held by bob");
    job_control_refusal(job, JOB_CONTROL_REQUEUE, why, sizeof(why));
    ok(strstr(why, "held") != NULL, "requeue of a held job says it is held");
    job_set_held(job, "");
    ok(!job_held(job), "\"\" is not held");
    job_destroy(job);
}

static size_t counts_bad;

/* Whether a's kept counts are what a recount gives. */
static void
counts_check(struct attempt *a)
{
    size_t p = a->npending, f = a->nfailed, s = a->nsucceeded;

    attempt_recount(a);
    counts_bad += p != a->npending || f != a->nfailed || s != a->nsucceeded;
}

/* Set rank r of a as a report would, keeping the counts. */
static void
rank_set(struct attempt *a, size_t r, enum proto_rank_state st, int code,
    int sig)
{
    struct attempt_rank *rk = &a->ranks[r];

    attempt_rank_uncount(a, rk);
    rk->state = st;
    rk->exit_code = code;
    rk->signal = sig;
    rk->end_ms = st == PROTO_RANK_EXITED || st == PROTO_RANK_LOST
                     ? 1000 + (int64_t)r
                     : 0;
    attempt_rank_count(a, rk);
    counts_check(a);
}

/* The rank summaries come from counts kept at each change; a recount
 * from the ranks agrees after every step. */
static void
test_attempt_counts(void)
{
    struct attempt *a = attempt_create(1, 1, 2, 3);

    ok(!attempt_all_started(a) && !attempt_all_succeeded(a) &&
            attempt_first_failure(a) == NULL,
        "a new attempt: nothing started, nothing failed");
    for (size_t r = 0; r < 6; r++)
        rank_set(a, r, PROTO_RANK_RUNNING, 0, 0);
    ok(attempt_all_started(a) && !attempt_all_succeeded(a),
        "every rank running: all started");
    for (size_t r = 0; r < 6; r++)
        rank_set(a, r, PROTO_RANK_EXITED, 0, 0);
    ok(attempt_all_succeeded(a) && attempt_first_failure(a) == NULL,
        "every rank exited 0: all succeeded");
    rank_set(a, 4, PROTO_RANK_EXITED, 0, 9);
    rank_set(a, 2, PROTO_RANK_LOST, 0, 0);
    ok(!attempt_all_succeeded(a) && attempt_first_failure(a) != NULL &&
            attempt_first_failure(a)->rank == 2,
        "a signalled rank and a lost one: the first to end is the failure");
    rank_set(a, 2, PROTO_RANK_EXITED, 0, 0);
    rank_set(a, 4, PROTO_RANK_EXITED, 0, 0);
    rank_set(a, 0, PROTO_RANK_EXITED, 3, 0);
    rank_set(a, 0, PROTO_RANK_EXITED, 0, 0);
    is_int((int)counts_bad, 0,
        "after every change the kept counts are the recount's");
    ok(attempt_all_succeeded(a), "changed back: all succeeded again");
    attempt_destroy(a);
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
    test_queue();
    test_queue_random();
    test_control();
    test_attempt_counts();
    return done_testing();
}
