/*
 * test_db.c - the scheduler's database layer on a real file
 *
 * A fresh database in a mkdtemp directory (WAL and reopen exercised, not
 * :memory:): migrate, insert and load a job and its attempt, reopen, and
 * refuse a database whose schema is newer than the binary. The test does
 * not include sqlite3.h (only the store's scheduler/db*.c files may); it
 * sets PRAGMA user_version by writing the database header (offset 60,
 * big-endian) directly.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/err.h"
#include "common/xalloc.h"
#include "scheduler/db.h"
#include "tests/tap.h"
#include "tests/testdir.h"

static char dir[] = "/tmp/lockstep-test-db.XXXXXX";
static char path[256];

static struct job *
sample_job(void)
{
    struct job *job = job_create();
    struct proto_job_spec *s = &job->spec;

    job->user = xstrdup("alice");
    job->submit_ms = 1234;
    s->name = xstrdup("train");
    s->argc = 2;
    s->argv = xcalloc(3, sizeof(*s->argv));
    s->argv[0] = xstrdup("python3");
    s->argv[1] = xstrdup("train.py");
    s->nenv = 1;
    s->env = xcalloc(2, sizeof(*s->env));
    s->env[0].key = xstrdup("K");
    s->env[0].value = xstrdup("V \"quoted\"");
    s->workdir = xstrdup("/w");
    s->checkpoint_dir = xstrdup("");
    s->nodes = 2;
    s->ranks_per_node = 2;
    s->gpus_per_node = 1;
    s->priority = 7;
    s->max_restarts = 3;
    return job;
}

static int
count_job(struct job *job, void *arg)
{
    (*(int *)arg)++;
    return 0;
}

/* db_open(path) with synchronous=FULL, checked: the check is named what. */
static struct db *
open_checked(const char *what)
{
    struct err err;
    struct db *db;

    err_clear(&err);
    db = db_open(path, &(struct db_open_opts){ .sync_full = true }, &err);
    ok(db != NULL, "%s: %s", what, err.msg);
    return db;
}

static void
test_fresh(void)
{
    struct err err = { 0 };
    struct db *db = open_checked("open a fresh database");
    struct job *job, *got = NULL;
    struct node *node;
    struct attempt *a, *ga = NULL;
    char *user = NULL, *role = NULL;
    int n = 0;

    if (db == NULL)
        return;
    is_int(db_schema_version(db), migrate_latest(),
        "migrated to the latest schema");

    node = node_create("n1");
    node->registered_ms = 1;
    node->last_seen_ms = 2;
    is_int(db_node_insert(db, node), 0, "insert a node");

    job = sample_job();
    is_int(db_job_insert(db, job), 0, "insert a job");
    ok(job->id > 0, "the job got an id (%lld)", (long long)job->id);
    ok(db_txn_is_open(db), "writes open a transaction lazily");
    is_int(db_job_get(db, job->id, &got), 0, "read it back before commit");
    is_str(got ? got->spec.env[0].value : NULL, "V \"quoted\"",
        "env round-trips");
    job_destroy(got);
    got = NULL;

    a = attempt_create(job->id, 1, 1, 2);
    a->placements[0].node_name = xstrdup("n1");
    a->placements[0].ngpus = 1;
    a->placements[0].gpus = xcalloc(1, sizeof(int));
    a->placements[0].gpus[0] = 3;
    a->placements[0].gen = 99;
    free(a->master_addr);
    a->master_addr = xstrdup("10.0.0.1");
    a->master_port = 29500;
    is_int(db_attempt_insert(db, a), 0, "insert an attempt");
    job_set_held(job, "carol");
    is_int(db_job_update(db, job), 0, "hold the job");
    is_int(db_job_get(db, job->id, &got), 0, "read the held job back");
    is_str(got ? got->held_by : NULL, "carol", "held_by round-trips");
    job_destroy(got);
    got = NULL;
    job_set_held(job, NULL);
    job->state = PROTO_JOB_PLACED;
    job->attempt = 1;
    is_int(db_job_update(db, job), 0, "update the job");
    a->ranks[1].state = PROTO_RANK_EXITED;
    a->ranks[1].has_exit = true;
    a->ranks[1].exit_code = 3;
    free(a->ranks[1].stderr_tail);
    a->ranks[1].stderr_tail = xstrdup("boom");
    is_int(db_rank_update(db, a, &a->ranks[1]), 0, "update a rank");
    {
        char held[64] = "";

        ok(db_rank_node(db, job->id, 1, 1, held, sizeof(held)) == 0 &&
                strcmp(held, "n1") == 0,
            "the node of a rank, without loading the attempt (%s)", held);
        is_int(db_rank_node(db, job->id, 1, 2, held, sizeof(held)), -ERANGE,
            "a rank past the world: -ERANGE");
        is_int(db_rank_node(db, job->id, 1, -1, held, sizeof(held)), -ERANGE,
            "a negative rank: -ERANGE");
        is_int(db_rank_node(db, job->id, 9, 0, held, sizeof(held)), -ENOENT,
            "no such attempt: -ENOENT");
    }
    is_int(db_event_insert(db, 5, "alice", "job/1", "job_submitted", NULL), 0,
        "insert an event");
    is_int(db_token_insert(db, "abc", "bob", "operator", 5), 0,
        "insert a token");
    is_int(db_txn_commit(db), 0, "commit");
    ok(!db_txn_is_open(db), "no transaction after commit");

    is_int(db_token_lookup(db, "abc", &user, &role), 0, "token lookup");
    is_str(role, "operator", "token role");
    free(user);
    free(role);
    is_int(db_token_lookup(db, "nope", &user, &role), -ENOENT,
        "unknown token is -ENOENT");
    is_int(db_job_get(db, 999, &got), -ENOENT, "unknown job is -ENOENT");

    /* Uncommitted work is rolled back on close. */
    job->state = PROTO_JOB_RUNNING;
    is_int(db_job_update(db, job), 0, "an uncommitted update");
    db_close(db);
    attempt_destroy(a);
    node_destroy(node);

    db = db_open(path, &(struct db_open_opts){ .sync_full = false }, &err);
    ok(db != NULL, "reopen the file: %s", err.msg);
    if (db == NULL) {
        job_destroy(job);
        return;
    }
    is_int(db_job_get(db, job->id, &got), 0, "the job survived the reopen");
    is_str(got ? proto_job_state_str(got->state) : NULL, "PLACED",
        "the committed state, not the uncommitted one");
    is_int(got ? got->spec.priority : 0, 7, "priority kept");
    is_str(got ? got->spec.argv[1] : NULL, "train.py", "argv kept");
    is_str(got ? got->user : NULL, "alice", "user kept");
    is_str(got ? got->held_by : NULL, "", "released: held_by is empty");
    job_destroy(got);
    {
        struct job_table t;

        job_table_init(&t);
        is_int(db_jobs_load_unfinished(db, &t), 0, "load unfinished jobs");
        is_int(job_table_count(&t), 1, "one unfinished job");
        job_table_release(&t);
    }
    {
        struct db_job_filter f = { .user = "alice", .all = true };

        is_int(db_jobs_foreach(db, &f, count_job, &n), 0, "list jobs");
        is_int(n, 1, "alice has one job");
        f.user = "bob";
        n = 0;
        db_jobs_foreach(db, &f, count_job, &n);
        is_int(n, 0, "bob has none");
    }
    is_int(db_attempt_get(db, job->id, 1, &ga), 0, "load the attempt");
    if (ga) {
        is_str(ga->placements[0].node_name, "n1", "placement node");
        is_int(ga->placements[0].gpus[0], 3, "placement GPUs");
        is_int((long long)ga->placements[0].gen, 99, "placement gen");
        is_int(ga->ranks[1].exit_code, 3, "rank exit code");
        is_str(ga->ranks[1].stderr_tail, "boom", "rank stderr tail");
        ok(!ga->ranks[0].has_exit, "a pending rank has no exit code");
        is_str(ga->master_addr, "10.0.0.1", "master address");
    }
    attempt_destroy(ga);
    db_close(db);
    job_destroy(job);
}

static int
count_ckpt(const struct db_checkpoint *c, void *arg)
{
    int64_t *last = arg;

    *last = c->step;
    return 0;
}

static int
count_blame(const struct db_blame *b, void *arg)
{
    (void)b;
    (*(int *)arg)++;
    return 0;
}

/* The last blame row a walk saw, copied. */
struct blame_seen {
    int rows;
    int64_t id, step, settled_ms;
    enum policy_blame_status status;
    char note[64];
};

static int
see_blame(const struct db_blame *b, void *arg)
{
    struct blame_seen *s = arg;

    s->rows++;
    s->id = b->id;
    s->step = b->step;
    s->settled_ms = b->settled_ms;
    s->status = b->status;
    snprintf(s->note, sizeof(s->note), "%s", b->note);
    return 0;
}

/* Schema 8: a blame row's status, step and note; only confirmed rows are
 * the node's count. */
static void
test_blame_statuses(struct db *db, int64_t job_id)
{
    struct blame_seen s = { 0 };
    int n = 0;

    is_int(db_blame_insert(db, "n8", job_id, 2, 970, "rank_exit", "{}",
               POLICY_BLAME_PROVISIONAL, 5),
        0, "a provisional blame");
    db_blame_node_foreach(db, "n8", 0, count_blame, &n);
    is_int(n, 0, "a provisional blame is not the node's count");
    db_blame_job_foreach(db, job_id, 0, count_blame, &n);
    is_int(n, 1, "but it keeps the job off the node");
    is_int(db_blame_provisional_foreach(db, see_blame, &s), 0,
        "list provisional blame");
    ok(s.rows == 1 && s.step == 5 && s.status == POLICY_BLAME_PROVISIONAL,
        "the provisional row, with its step");
    is_int(db_blame_settle(db, s.id, job_id, 2, POLICY_BLAME_CONFIRMED, 980,
               "attempt 3 got past step 5 on other nodes"),
        0, "confirm it");
    n = 0;
    db_blame_node_foreach(db, "n8", 0, count_blame, &n);
    is_int(n, 1, "a confirmed blame counts");
    memset(&s, 0, sizeof(s));
    db_blame_provisional_foreach(db, see_blame, &s);
    is_int(s.rows, 0, "no provisional blame left");
    is_int(db_blame_reset(db, "n8", 990, "reset by alice's uncordon"), 0,
        "an uncordon resets the node's blame");
    n = 0;
    db_blame_node_foreach(db, "n8", 0, count_blame, &n);
    is_int(n, 0, "reset blame no longer counts");
    memset(&s, 0, sizeof(s));
    is_int(db_blame_node_history(db, "n8", 10, see_blame, &s), 0,
        "the node's blame history");
    ok(s.rows == 1 && s.status == POLICY_BLAME_RESET && s.settled_ms == 990 &&
            strcmp(s.note, "reset by alice's uncordon") == 0,
        "kept, reset, with when and why");
}

struct gp_seen {
    int rows;
    int64_t resumed_ckpt_ms;
    int last_ckpt_attempt;
    int world;
};

static int
goodput_row(const struct db_goodput_row *r, void *arg)
{
    struct gp_seen *g = arg;

    g->rows++;
    if (r->attempt == 2)
        g->resumed_ckpt_ms = r->resumed_ckpt_ms;
    g->last_ckpt_attempt = r->last_ckpt_attempt;
    g->world = r->world_size;
    return 0;
}

/* Schema 2: restart budgets, attempt evidence, checkpoints, blame. */
static void
test_fault_tolerance(void)
{
    struct db *db = open_checked("open for the fault-tolerance rows");
    struct err err = { 0 };
    struct job *job, *got = NULL;
    struct attempt *a1, *a2, *ga = NULL;
    struct node *node;
    struct db_checkpoint c;
    struct db_failure_row *rows = NULL;
    struct gp_seen gp = { 0, 0, 0, 0 };
    const char *reserved[] = { "n1" };
    int64_t last = -1;
    size_t nrows = 0;
    int nblame = 0;

    if (db == NULL)
        return;
    node = node_create("n9");
    node->registered_ms = 1;
    node->unhealthy = true;
    free(node->health_reason);
    node->health_reason = xstrdup("blamed for failures of 3 jobs");
    node->state = NODE_STATE_UNHEALTHY;
    is_int(db_node_insert(db, node), 0, "insert an excluded node");
    node->cordoned = true;
    node->state = NODE_STATE_CORDONED;
    is_int(db_node_update(db, node), 0, "cordon it too");
    node_destroy(node);

    job = sample_job();
    job->spec.max_infra_restarts = 7;
    job->spec.hang_timeout_s = 60;
    job->spec.keep_checkpoints = 2;
    free(job->spec.checkpoint_dir);
    job->spec.checkpoint_dir = xstrdup("/ck");
    is_int(db_job_insert(db, job), 0, "insert a job with the new fields");
    a1 = attempt_create(job->id, 1, 1, 2);
    a1->placements[0].node_name = xstrdup("n9");
    a1->start_ms = 100;
    is_int(db_attempt_insert(db, a1), 0, "insert attempt 1");
    a1->state = PROTO_ATTEMPT_FAILED;
    a1->running_ms = 150;
    a1->failed_ms = 900;
    a1->detected_ms = 950;
    a1->released_ms = 990;
    a1->end_ms = 950;
    {
        struct evidence ev;

        evidence_init(&ev, POLICY_KIND_HANG);
        ev.rank = 1;
        ev.last_step = 12;
        ev.idle_ms = 60000;
        attempt_set_failure(a1, &ev, true);
        evidence_release(&ev);
    }
    is_int(db_directive_insert(db, a1,
               attempt_directive_add(a1, PROTO_DIRECTIVE_DUMP, -1, 800)),
        0, "a dump directive");
    is_int(db_directive_insert(db, a1,
               attempt_directive_add(a1, PROTO_DIRECTIVE_DUMP, -1, 850)),
        0, "a second one");
    a1->directives[1].done_ms = 870;
    is_int(db_directive_done(db, a1, &a1->directives[1]), 0,
        "the second one done");
    is_int(db_attempt_update(db, a1), 0, "record its failure");
    a1->ranks[1].state = PROTO_RANK_EXITED;
    a1->ranks[1].has_exit = true;
    a1->ranks[1].exit_code = 1;
    a1->ranks[1].step = 12;
    a1->ranks[1].end_ms = 940;
    free(a1->ranks[1].dump);
    a1->ranks[1].dump = xstrdup("rank 1 pid 7 state T");
    is_int(db_rank_update(db, a1, &a1->ranks[1]), 0, "a rank's end");

    memset(&c, 0, sizeof(c));
    c.job_id = job->id;
    c.step = 10;
    c.attempt = 1;
    c.path = "/ck/step-10";
    c.committed = 2;
    c.complete_ms = 500;
    c.source = "sdk";
    is_int(db_checkpoint_insert(db, &c), 1, "a complete checkpoint");
    c.complete_ms = 600;
    is_int(db_checkpoint_insert(db, &c), 0, "the same step again: no change");
    is_int(db_commit_insert(db, job->id, 1, 20, 0, 700), 1, "a commit");
    is_int(db_commit_insert(db, job->id, 1, 20, 0, 701), 0,
        "the same rank again: not counted twice");

    a2 = attempt_create(job->id, 2, 1, 2);
    a2->placements[0].node_name = xstrdup("n9");
    a2->start_ms = 1000;
    attempt_set_resume(a2, 10, "/ck/step-10");
    is_int(db_attempt_insert(db, a2), 0, "insert attempt 2 (resuming)");
    job->state = PROTO_JOB_RESTARTING;
    job->attempt = 2;
    job->infra_restarts = 1;
    job->fail_streak = 2;
    job->not_before_ms = 4242;
    job_set_reserved(job, reserved, 1);
    is_int(db_job_update(db, job), 0, "a restarting job's state");
    is_int(db_blame_insert(db, "n9", job->id, 1, 950, "hang", "{}",
               POLICY_BLAME_CONFIRMED, -1),
        0, "blame a node");
    is_int(db_txn_commit(db), 0, "commit");

    is_int(db_job_get(db, job->id, &got), 0, "read the job back");
    if (got) {
        is_int(got->spec.max_infra_restarts, 7, "max_infra_restarts");
        is_int(got->spec.hang_timeout_s, 60, "hang_timeout_s");
        is_int(got->spec.keep_checkpoints, 2, "keep_checkpoints");
        is_int(got->infra_restarts, 1, "infra restarts spent");
        is_int(got->fail_streak, 2, "failure streak");
        is_int(got->not_before_ms, 4242, "backoff deadline");
        ok(got->nreserved == 1 && strcmp(got->reserved[0], "n1") == 0,
            "reserved nodes");
        is_int(got->ckpt_step, 10, "the highest complete checkpoint");
    }
    job_destroy(got);
    is_int(db_attempt_get(db, job->id, 1, &ga), 0, "read attempt 1 back");
    if (ga) {
        ok(ga->has_failure && ga->failure.kind == POLICY_KIND_HANG,
            "its failure kind");
        is_int(ga->failure.rank, 1, "the evidence's rank");
        is_int(ga->failure.last_step, 12, "the evidence's last step");
        is_int(ga->failure.idle_ms, 60000, "the evidence's idle time");
        ok(!ga->failure.has_exit, "a hung rank has no exit status");
        is_int(ga->failed_ms, 900, "failed_ms");
        is_int(ga->released_ms, 990, "released_ms");
        is_int((long long)ga->directive_seq, 2, "the last directive");
        ok(ga->ndirectives == 2 && ga->directives[0].done_ms == 0 &&
                ga->directives[1].done_ms == 870 &&
                ga->directives[1].kind == PROTO_DIRECTIVE_DUMP,
            "the directives, one of them done");
        is_int(ga->ranks[1].step, 12, "a rank's last step");
        is_str(ga->ranks[1].dump, "rank 1 pid 7 state T", "a rank's dump");
    }
    attempt_destroy(ga);
    ga = NULL;
    is_int(db_attempt_get(db, job->id, 2, &ga), 0, "read attempt 2 back");
    if (ga) {
        is_int(ga->resume_step, 10, "resume step");
        is_str(ga->resume_from, "/ck/step-10", "resume path");
        ok(!ga->has_failure, "no failure yet");
    }
    attempt_destroy(ga);
    is_int(db_checkpoints_foreach(db, job->id, count_ckpt, &last), 0,
        "list checkpoints");
    is_int(last, 10, "the checkpoint is listed");
    is_int(db_blame_node_foreach(db, "n9", 0, count_blame, &nblame), 0,
        "blame of the node");
    is_int(nblame, 1, "one blame row");
    is_int(db_blame_withdraw(db, job->id, 1, 960, "test"), 0, "withdraw it");
    nblame = 0;
    db_blame_job_foreach(db, job->id, 0, count_blame, &nblame);
    is_int(nblame, 0, "withdrawn blame no longer counts");
    test_blame_statuses(db, job->id);
    is_int(db_job_failures(db, job->id, 1, &rows, &nrows), 0,
        "failure history");
    ok(nrows == 1 && rows[0].attempt == 1 && rows[0].rank_has_exit &&
            rows[0].rank_exit_code == 1 && rows[0].rank_step == 12 &&
            rows[0].nnodes == 1 && strcmp(rows[0].nodes[0], "n9") == 0,
        "attempt 1's failure with rank 1's end and its nodes");
    db_failure_rows_free(rows, nrows);
    is_int(db_goodput_foreach(db, job->id, goodput_row, &gp), 0,
        "goodput rows");
    ok(gp.rows == 2 && gp.resumed_ckpt_ms == 500 && gp.last_ckpt_attempt == 1 &&
            gp.world == 4,
        "with the resumed checkpoint and the world size");
    db_txn_commit(db);
    db_close(db);
    attempt_destroy(a1);
    attempt_destroy(a2);
    job_destroy(job);

    /* The node's exclusion survives a reopen, cordoned or not. */
    db = db_open(path, &(struct db_open_opts){ .sync_full = true }, &err);
    if (db) {
        struct node_table t;
        struct node *n9;

        node_table_init(&t);
        is_int(db_nodes_load(db, &t), 0, "load nodes");
        n9 = node_table_find(&t, "n9");
        ok(n9 && n9->unhealthy && n9->cordoned,
            "excluded and cordoned both kept");
        is_str(n9 ? n9->health_reason : NULL, "blamed for failures of 3 jobs",
            "the exclusion's reason");
        node_table_release(&t);
        db_close(db);
    }
}

struct walk_seen {
    int rows;
    int stop_at; /* return 7 on this row (1-based); 0: never */
    int64_t first_id;
};

static int
walk_event(const struct db_event *ev, void *arg)
{
    struct walk_seen *w = arg;

    if (w->rows++ == 0)
        w->first_id = ev->id;
    return w->rows == w->stop_at ? 7 : 0;
}

static int
walk_job(struct job *job, void *arg)
{
    struct walk_seen *w = arg;

    if (w->rows++ == 0)
        w->first_id = job->id;
    return w->rows == w->stop_at ? 7 : 0;
}

/* The row loop: a non-zero return stops a walk and comes back unchanged,
 * and the statement is whole again for the next call, as it is after a
 * failed write. */
static void
test_walks(void)
{
    struct walk_seen w = { 0, 1, 0 };
    struct db_job_filter all = { .all = true };
    struct db *db = open_checked("open for the walks");
    char *user = NULL, *role = NULL;

    if (db == NULL)
        return;
    for (int i = 1; i <= 3; i++)
        is_int(db_event_insert(db, 10 + i, "test", "job/9", "walked", NULL), 0,
            "insert event %d", i);
    is_int(db_events_foreach(db, "job/9", 10, walk_event, &w), 7,
        "a walk stopped by its callback returns what it returned");
    is_int(w.rows, 1, "and saw no row after it");
    memset(&w, 0, sizeof(w));
    is_int(db_events_foreach(db, "job/9", 10, walk_event, &w), 0,
        "the next walk of the same query runs");
    is_int(w.rows, 3, "over every row");
    memset(&w, 0, sizeof(w));
    is_int(db_events_foreach(db, "job/9", 2, walk_event, &w), 0,
        "a limited walk");
    is_int(w.rows, 2, "sees only the limit");

    memset(&w, 0, sizeof(w));
    w.stop_at = 1;
    is_int(db_jobs_foreach(db, &all, walk_job, &w), 7,
        "a job walk stopped on its first row");
    memset(&w, 0, sizeof(w));
    is_int(db_jobs_foreach(db, &all, walk_job, &w), 0, "then walked whole");
    is_int(w.rows, 2, "both jobs listed");
    is_int(w.first_id, 2, "newest first");

    is_int(db_token_insert(db, "abc", "eve", "user", 6), -EEXIST,
        "a duplicate token is -EEXIST");
    is_int(db_token_insert(db, "def", "carol", "user", 7), 0,
        "the statement works after the failure");
    is_int(db_txn_commit(db), 0, "commit");
    is_int(db_token_lookup(db, "def", &user, &role), 0, "look it up");
    is_str(user, "carol", "its own values, none left from the failure");
    free(user);
    free(role);
    user = role = NULL;
    is_int(db_token_lookup(db, "abc", &user, &role), 0,
        "the first token is unchanged");
    is_str(user, "bob", "its user kept");
    free(user);
    free(role);
    db_close(db);
}

/* The ids an events query returned, in order. */
struct ids_seen {
    int n;
    int64_t id[16];
};

static int
walk_ids(const struct db_event *ev, void *arg)
{
    struct ids_seen *s = arg;

    if (s->n < 16)
        s->id[s->n] = ev->id;
    s->n++;
    return 0;
}

/* GET /v1/events' query: subject, kind pattern, time, follow, limit, in id
 * order; the retention's prune. */
static void
test_events_query(void)
{
    struct db *db = open_checked("open for the events query");
    struct db_event_filter f = { .limit = 100 };
    struct ids_seen s;
    int64_t first = 0, n = 0;

    if (db == NULL)
        return;
    memset(&s, 0, sizeof(s));
    is_int(db_events_query(db, &f, walk_ids, &s), 0, "query everything");
    first = s.n > 0 ? s.id[s.n - 1] : 0; /* the newest so far */
    is_int(db_event_insert(db, 1000, "scheduler", "node/q1", "node_lost", NULL),
        0, "event a");
    is_int(
        db_event_insert(db, 2000, "alice", "node/q1", "request_refused", NULL),
        0, "event b");
    is_int(db_event_insert(db, 3000, "scheduler", "job/77", "job_failed", NULL),
        0, "event c");
    is_int(db_event_insert(db, 4000, "scheduler", "node/q2", "node_up", NULL),
        0, "event d");
    f = (struct db_event_filter){ .subject = "node/q1", .limit = 100 };
    memset(&s, 0, sizeof(s));
    is_int(db_events_query(db, &f, walk_ids, &s), 0, "by subject");
    ok(s.n == 2 && s.id[0] == first + 1 && s.id[1] == first + 2,
        "a node's events, oldest first");
    f = (struct db_event_filter){ .kind = "node_*",
        .after_id = first,
        .limit = 100 };
    memset(&s, 0, sizeof(s));
    is_int(db_events_query(db, &f, walk_ids, &s), 0, "by kind pattern");
    ok(s.n == 2 && s.id[0] == first + 1 && s.id[1] == first + 4,
        "node_* matches node_lost and node_up, not the others");
    f = (struct db_event_filter){ .since_ms = 2500,
        .after_id = first,
        .limit = 100 };
    memset(&s, 0, sizeof(s));
    is_int(db_events_query(db, &f, walk_ids, &s), 0, "since");
    is_int(s.n, 2, "the events at or after since");
    f = (struct db_event_filter){ .after_id = first + 1, .limit = 2 };
    memset(&s, 0, sizeof(s));
    is_int(db_events_query(db, &f, walk_ids, &s), 0, "follow");
    ok(s.n == 2 && s.id[0] == first + 2 && s.id[1] == first + 3,
        "after: the oldest `limit` after the id");
    f = (struct db_event_filter){ .limit = 2 };
    memset(&s, 0, sizeof(s));
    is_int(db_events_query(db, &f, walk_ids, &s), 0, "newest");
    ok(s.n == 2 && s.id[0] == first + 3 && s.id[1] == first + 4,
        "without after: the newest `limit`, in id order");
    is_int(db_events_prune(db, 2500, 1, &n), 0, "prune a batch of one");
    is_int((int)n, 1, "one went");
    is_int(db_events_prune(db, 2500, 100, &n), 0, "prune the rest");
    ok(n >= 1, "the others older than the cut went");
    f = (struct db_event_filter){ .after_id = first, .limit = 100 };
    memset(&s, 0, sizeof(s));
    is_int(db_events_query(db, &f, walk_ids, &s), 0, "after the prune");
    ok(s.n == 2 && s.id[0] == first + 3, "the newer events stay");
    is_int(db_txn_commit(db), 0, "commit");
    db_close(db);
}

static int
token_count(const struct db_token *t, void *arg)
{
    (void)t;
    (*(int *)arg)++;
    return 0;
}

/* Tokens with an id, prefix, expiry, revocation and last-used time. */
static void
test_tokens(void)
{
    struct db *db = open_checked("open for tokens");
    struct db_token t = { .hash = "h1",
        .user = "alice",
        .role = "user",
        .prefix = "lst_0123",
        .created_by = "root",
        .created_ms = 10,
        .expires_ms = 1000 };
    struct db_token got;
    int64_t id1 = 0, id2 = 0;
    int n = 0, before = 0;

    if (db == NULL)
        return;
    /* The database may hold tokens of the tests before. */
    is_int(db_tokens_foreach(db, NULL, token_count, &before), 0, "count");
    is_int(db_token_add(db, &t, &id1), 0, "add a token");
    t.hash = "h2";
    t.user = "tok-bob";
    t.expires_ms = 0;
    is_int(db_token_add(db, &t, &id2), 0, "add another");
    ok(id1 > 0 && id2 == id1 + 1, "numbered in order");
    is_int(db_token_add(db, &t, &id2), -EEXIST, "the same hash twice");
    is_int(db_token_insert(db, "h3", "tok-carol", "user", 11), 0,
        "the plain insert numbers too");
    is_int(db_token_find(db, "h3", &got), 0, "find it");
    is_int((int)got.id, (int)id2 + 1, "as the next");
    ok(got.expires_ms == 0 && got.revoked_ms == 0, "never expires");
    db_token_release(&got);
    is_int(db_token_find(db, "h1", &got), 0, "find by hash");
    ok(got.id == id1 && strcmp(got.user, "alice") == 0 &&
            strcmp(got.prefix, "lst_0123") == 0 && got.expires_ms == 1000 &&
            got.last_used_ms == 0 && strcmp(got.created_by, "root") == 0,
        "every field back");
    db_token_release(&got);
    is_int(db_token_used(db, id1, 500), 0, "used");
    is_int(db_token_revoke(db, id1, 600), 0, "revoke");
    is_int(db_token_revoke(db, id1, 700), 0, "revoke again");
    is_int(db_token_get(db, id1, &got), 0, "get by id");
    ok(got.last_used_ms == 500 && got.revoked_ms == 600,
        "last used kept; the first revocation kept");
    db_token_release(&got);
    is_int(db_token_get(db, 99, &got), -ENOENT, "unknown id");
    is_int(db_tokens_foreach(db, NULL, token_count, &n), 0, "every token");
    is_int(n, before + 3, "three more");
    n = 0;
    is_int(db_tokens_foreach(db, "tok-bob", token_count, &n), 0, "bob's");
    is_int(n, 1, "one");
    db_close(db);
}

/* The alert queue: oldest first, retries kept, ids never reused. */
static void
test_alerts(void)
{
    struct db *db = open_checked("open for the alert queue");
    struct db_alert a = { .time_ms = 5,
        .kind = "node_lost",
        .node = "n1",
        .reason = "no status" };
    struct db_alert got;
    int64_t id1 = 0, id2 = 0, n = -1;

    if (db == NULL)
        return;
    is_int(db_alert_oldest(db, &got), -ENOENT, "an empty queue");
    is_int(db_alert_insert(db, &a, &id1), 0, "queue one");
    a.kind = "job_failed";
    a.node = "";
    a.job_id = 12;
    is_int(db_alert_insert(db, &a, &id2), 0, "queue another");
    ok(id2 > id1, "ids grow");
    is_int(db_alert_count(db, &n), 0, "count");
    is_int((int)n, 2, "two queued");
    is_int(db_alert_retry(db, id1, 1, 999, "connection refused"), 0,
        "a failed try");
    is_int(db_alert_oldest(db, &got), 0, "the oldest");
    ok(got.id == id1 && strcmp(got.kind, "node_lost") == 0 &&
            strcmp(got.node, "n1") == 0 && got.tries == 1 &&
            got.next_ms == 999 &&
            strcmp(got.last_error, "connection refused") == 0,
        "is the first, with its try");
    db_alert_free(&got);
    is_int(db_alert_delete(db, id1), 0, "delivered");
    is_int(db_alert_delete(db, id2), 0, "delivered too");
    is_int(db_alert_insert(db, &a, &id1), 0, "queue a third");
    ok(id1 > id2, "an emptied queue never hands an id out again");
    is_int(db_alert_oldest(db, &got), 0, "read it");
    ok(got.job_id == 12 && got.node[0] == '\0', "a job's alert, no node");
    db_alert_free(&got);
    is_int(db_txn_commit(db), 0, "commit");
    db_close(db);
}

/* Rows seen by a rank-stats walk. */
struct stat_seen {
    int rows;
    int64_t first_window, last_window;
    struct db_rank_stat first;
    char node[16];
};

static int
walk_stat(const struct db_rank_stat *r, void *arg)
{
    struct stat_seen *w = arg;

    if (w->rows++ == 0) {
        w->first = *r;
        snprintf(w->node, sizeof(w->node), "%s", r->node);
        w->first_window = r->window_ms;
    }
    w->last_window = r->window_ms;
    return 0;
}

static void
test_rank_stats(void)
{
    struct db *db = open_checked("open for the rank stats");
    struct stat_seen w;
    int rc = 0;

    if (db == NULL)
        return;
    for (int win = 1; win <= RANKWIN_KEEP + 2 && rc == 0; win++) {
        for (int rank = 0; rank < 2 && rc == 0; rank++) {
            struct db_rank_stat r = { .job_id = 1,
                .attempt = 1,
                .rank = rank,
                .window_ms = 1000 * win,
                .node = "n1",
                .s = { .step = 10 * win,
                    .step_p50_us = 100 + rank,
                    .step_p99_us = 200,
                    .median_us = 100,
                    .slow = rank == 1,
                    .gc_count = 2,
                    .gc_p50_ms = 3,
                    .gc_max_ms = 4,
                    .gc_step = 5,
                    .ckpt_count = 1,
                    .ckpt_max_ms = 6,
                    .ckpt_step = -1 } };

            rc = db_rank_stat_insert(db, &r);
        }
        if (rc == 0)
            rc = db_rank_stats_prune(db, 1, RANKWIN_KEEP);
    }
    is_int(rc, 0, "insert %d windows of 2 ranks, pruning after each",
        RANKWIN_KEEP + 2);
    is_int(db_txn_commit(db), 0, "commit");
    memset(&w, 0, sizeof(w));
    is_int(db_rank_stats_foreach(db, 1, walk_stat, &w), 0, "walk them");
    is_int(w.rows, 2 * RANKWIN_KEEP, "only the newest windows are kept");
    is_int((int)w.first_window, 1000 * (RANKWIN_KEEP + 2), "newest first");
    is_int((int)w.last_window, 3000, "the two oldest windows pruned");
    is_int(w.first.rank, 0, "then by rank");
    is_str(w.node, "n1", "node");
    ok(w.first.s.step == 10 * (RANKWIN_KEEP + 2) &&
            w.first.s.step_p50_us == 100 && w.first.s.step_p99_us == 200 &&
            w.first.s.median_us == 100 && !w.first.s.slow &&
            w.first.s.gc_count == 2 && w.first.s.gc_p50_ms == 3 &&
            w.first.s.gc_max_ms == 4 && w.first.s.gc_step == 5 &&
            w.first.s.ckpt_count == 1 && w.first.s.ckpt_max_ms == 6 &&
            w.first.s.ckpt_step == -1,
        "every field reads back");
    memset(&w, 0, sizeof(w));
    is_int(db_rank_stats_foreach(db, 2, walk_stat, &w), 0, "another job");
    is_int(w.rows, 0, "has none");
    db_close(db);
}

/* Rows seen by a rank-sections walk. */
struct sec_seen {
    int rows;
    int64_t first_window, last_window;
    struct db_rank_section first;
    char node[16], section[16];
};

static int
walk_sec(const struct db_rank_section *r, void *arg)
{
    struct sec_seen *w = arg;

    if (w->rows++ == 0) {
        w->first = *r;
        snprintf(w->node, sizeof(w->node), "%s", r->node);
        snprintf(w->section, sizeof(w->section), "%s", r->section);
        w->first_window = r->window_ms;
    }
    w->last_window = r->window_ms;
    return 0;
}

static void
test_rank_sections(void)
{
    static const char *const names[] = { "io", "compute" };
    struct db *db = open_checked("open for the rank sections");
    struct sec_seen w;
    int rc = 0;

    if (db == NULL)
        return;
    for (int win = 1; win <= RANKWIN_KEEP + 2 && rc == 0; win++) {
        for (int k = 0; k < 4 && rc == 0; k++) {
            struct db_rank_section r = { .job_id = 1,
                .attempt = win <= 2 ? 1 : 2,
                .rank = k / 2,
                .window_ms = 1000 * win,
                .node = k / 2 ? "n2" : "n1",
                .section = names[k % 2],
                .p50_us = 100 + k,
                .p99_us = 200,
                .n = 50,
                .median_us = 100,
                .slow = k == 3 };

            rc = db_rank_section_insert(db, &r);
        }
        if (rc == 0)
            rc = db_rank_sections_prune(db, 1, RANKWIN_KEEP);
    }
    is_int(rc, 0, "insert %d windows of 2 ranks x 2 sections, pruning",
        RANKWIN_KEEP + 2);
    is_int(db_txn_commit(db), 0, "commit");
    memset(&w, 0, sizeof(w));
    is_int(db_rank_sections_foreach(db, 1, 2, walk_sec, &w), 0,
        "walk attempt 2");
    is_int(w.rows, 4 * RANKWIN_KEEP, "only the newest windows are kept");
    is_int((int)w.first_window, 1000 * (RANKWIN_KEEP + 2), "newest first");
    is_int((int)w.last_window, 3000, "the oldest windows pruned");
    is_str(w.section, "compute", "then by rank and section name");
    is_str(w.node, "n1", "node");
    ok(w.first.rank == 0 && w.first.attempt == 2 && w.first.p50_us == 101 &&
            w.first.p99_us == 200 && w.first.n == 50 &&
            w.first.median_us == 100 && !w.first.slow,
        "every field reads back");
    memset(&w, 0, sizeof(w));
    is_int(db_rank_sections_foreach(db, 1, 1, walk_sec, &w), 0, "attempt 1");
    is_int(w.rows, 0, "pruned with its windows");
    db_close(db);
}

/* A finished (or running) job named name, ended at end_ms; its id. */
static int64_t
insert_named(struct db *db, const char *name, enum proto_job_state state,
    int64_t end_ms)
{
    struct job *job = sample_job();
    int64_t id;

    free(job->spec.name);
    job->spec.name = xstrdup(name);
    job->state = state;
    is_int(db_job_insert(db, job), 0, "insert %s", name);
    job->end_ms = end_ms;
    is_int(db_job_update(db, job), 0, "end %s", name);
    id = job->id;
    job_destroy(job);
    return id;
}

/* The history's filters (ended, name, ended_from, limit), and a node
 * removed: never loaded again, its name free for a new registration. */
static void
test_history_and_remove(void)
{
    struct db *db = open_checked("open for history");
    struct walk_seen w = { 0 };
    struct db_job_filter f = { .ended = true, .name = "hist-a" };
    struct node_table t;
    struct node *n;
    int64_t b;
    int cnt = 0;

    if (db == NULL)
        return;
    insert_named(db, "hist-a", PROTO_JOB_SUCCEEDED, 100);
    b = insert_named(db, "hist-b", PROTO_JOB_FAILED, 200);
    insert_named(db, "hist-a", PROTO_JOB_RUNNING, 0);
    is_int(db_jobs_foreach(db, &f, count_job, &cnt), 0, "ended and named");
    is_int(cnt, 1, "only the finished hist-a");
    f = (struct db_job_filter){ .all = true, .name = "hist-a" };
    cnt = 0;
    db_jobs_foreach(db, &f, count_job, &cnt);
    is_int(cnt, 2, "both hist-a with all");
    f = (struct db_job_filter){ .ended = true,
        .ended_from = 150,
        .name = "hist-b" };
    cnt = 0;
    db_jobs_foreach(db, &f, count_job, &cnt);
    is_int(cnt, 1, "hist-b ended after 150");
    f.name = "hist-a";
    cnt = 0;
    db_jobs_foreach(db, &f, count_job, &cnt);
    is_int(cnt, 0, "hist-a ended before it");
    f = (struct db_job_filter){ .ended = true, .limit = 1 };
    is_int(db_jobs_foreach(db, &f, walk_job, &w), 0,
        "a walk that reaches its limit returns 0");
    is_int(w.rows, 1, "and saw the limit");
    is_int(w.first_id, b, "the newest finished job");

    is_int(db_node_remove(db, "n9"), 0, "remove n9");
    node_table_init(&t);
    is_int(db_nodes_load(db, &t), 0, "load nodes");
    ok(node_table_find(&t, "n9") == NULL, "a removed node is not loaded");
    node_table_release(&t);
    n = node_create("n9");
    n->cpus = 96;
    n->registered_ms = 5;
    is_int(db_node_insert(db, n), 0, "a node of that name registers again");
    node_destroy(n);
    node_table_init(&t);
    db_nodes_load(db, &t);
    n = node_table_find(&t, "n9");
    ok(n && n->cpus == 96 && !n->unhealthy && !n->cordoned,
        "as new: its own resources, no exclusion or cordon kept");
    node_table_release(&t);
    is_int(db_txn_commit(db), 0, "commit");
    db_close(db);
}

static void
test_newer_refused(void)
{
    unsigned char v[4] = { 0, 0, 0x03, 0xe7 }; /* 999 */
    struct err err;
    struct db *db;
    int fd = open(path, O_WRONLY);

    ok(fd >= 0, "open the database file");
    if (fd < 0)
        return;
    ok(pwrite(fd, v, sizeof(v), 60) == 4, "set user_version to 999");
    close(fd);
    err_clear(&err);
    db = db_open(path, &(struct db_open_opts){ .sync_full = true }, &err);
    ok(db == NULL, "a database newer than the binary is refused");
    ok(strstr(err.msg, "newer") != NULL, "the error says so: %s", err.msg);
    db_close(db);
}

/* With db_wal_manual, commits never checkpoint: the WAL grows past
 * SQLite's 1,000 pages; a checkpoint of a connection of its own copies
 * it all, and the next commit starts the WAL over. */
static void
test_wal_manual(void)
{
    char wal[300], msg[256] = "";
    struct db *db = open_checked("open for the WAL test");
    struct db_ckpt *ck;
    struct job *job;
    struct stat st;
    int pages = 0, copied = 0, i;

    if (db == NULL)
        return;
    db_wal_manual(db);
    for (i = 0; i < 400 && db_wal_pages(db) <= 1200; i++) {
        db_txn_begin(db);
        for (int k = 0; k < 50; k++) {
            job = sample_job();
            db_job_insert(db, job);
            job_destroy(job);
        }
        db_txn_commit(db);
    }
    ok(db_wal_pages(db) > 1200, "commits leave the WAL to grow (%d pages)",
        db_wal_pages(db));
    snprintf(wal, sizeof(wal), "%s-wal", path);
    ok(stat(wal, &st) == 0 && st.st_size > 1200 * 4096,
        "no automatic checkpoint started it over (%lld bytes)",
        (long long)st.st_size);
    ck = db_ckpt_create(path);
    is_int(db_ckpt_run(ck, &pages, &copied, msg, sizeof(msg)), 0,
        "a checkpoint of its own connection: %s", msg);
    ok(pages > 1200 && copied == pages, "it copied every page (%d of %d)",
        copied, pages);
    job = sample_job();
    db_txn_begin(db);
    db_job_insert(db, job);
    db_txn_commit(db);
    job_destroy(job);
    ok(db_wal_pages(db) < 100, "the next commit starts the WAL over (%d)",
        db_wal_pages(db));
    db_ckpt_destroy(ck);
    ck = db_ckpt_create("/nonexistent/lockstep.db");
    ok(db_ckpt_run(ck, &pages, &copied, msg, sizeof(msg)) == -EIO &&
            strstr(msg, "/nonexistent/lockstep.db") != NULL,
        "a database it cannot open: -EIO, named (%s)", msg);
    db_ckpt_destroy(ck);
    db_close(db);
}

int
main(void)
{
    plan(NO_PLAN);
    if (mkdtemp(dir) == NULL) {
        ok(0, "mkdtemp: %s", strerror(errno));
        return done_testing();
    }
    snprintf(path, sizeof(path), "%s/lockstep.db", dir);
    test_fresh();
    test_fault_tolerance();
    test_walks();
    test_events_query();
    test_alerts();
    test_tokens();
    test_rank_stats();
    test_rank_sections();
    test_history_and_remove();
    test_wal_manual();
    test_newer_refused();
    test_rmtree(dir);
    return done_testing();
}
