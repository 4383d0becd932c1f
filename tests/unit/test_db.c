/*
 * test_db.c - the scheduler's database layer on a real file
 *
 * A fresh database in a mkdtemp directory (WAL and reopen exercised, not
 * :memory:): migrate, insert and load a job and its attempt, reopen, and
 * refuse a database whose schema is newer than the binary. The test does
 * not include sqlite3.h (only db.c may); it sets PRAGMA user_version by
 * writing the database header (offset 60, big-endian) directly.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/err.h"
#include "common/xalloc.h"
#include "scheduler/db.h"
#include "tests/tap.h"

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

static void
test_fresh(void)
{
    struct err err;
    struct db *db;
    struct job *job, *got = NULL;
    struct node *node;
    struct attempt *a, *ga = NULL;
    char *user = NULL, *role = NULL;
    int n = 0;

    err_clear(&err);
    db = db_open(path, true, &err);
    ok(db != NULL, "open a fresh database: %s", err.msg);
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
    job->state = JOB_STATE_PLACED;
    job->attempt = 1;
    is_int(db_job_update(db, job), 0, "update the job");
    a->ranks[1].state = PROTO_RANK_EXITED;
    a->ranks[1].has_exit = true;
    a->ranks[1].exit_code = 3;
    free(a->ranks[1].stderr_tail);
    a->ranks[1].stderr_tail = xstrdup("boom");
    is_int(db_rank_update(db, a, &a->ranks[1]), 0, "update a rank");
    is_int(db_event_insert(db, 5, "alice", "job/1", "job_submitted", NULL),
        0, "insert an event");
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
    job->state = JOB_STATE_RUNNING;
    is_int(db_job_update(db, job), 0, "an uncommitted update");
    db_close(db);
    attempt_destroy(a);
    node_destroy(node);

    db = db_open(path, false, &err);
    ok(db != NULL, "reopen the file: %s", err.msg);
    if (db == NULL) {
        job_destroy(job);
        return;
    }
    is_int(db_job_get(db, job->id, &got), 0, "the job survived the reopen");
    is_str(got ? job_state_str(got->state) : NULL, "PLACED",
        "the committed state, not the uncommitted one");
    is_int(got ? got->spec.priority : 0, 7, "priority kept");
    is_str(got ? got->spec.argv[1] : NULL, "train.py", "argv kept");
    is_str(got ? got->user : NULL, "alice", "user kept");
    job_destroy(got);
    {
        struct job_table t;

        job_table_init(&t);
        is_int(db_jobs_load_unfinished(db, &t), 0, "load unfinished jobs");
        is_int(t.count, 1, "one unfinished job");
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

static void
test_newer_refused(void)
{
    unsigned char v[4] = { 0, 0, 0x03, 0xe7 };  /* 999 */
    struct err err;
    struct db *db;
    int fd = open(path, O_WRONLY);

    ok(fd >= 0, "open the database file");
    if (fd < 0)
        return;
    ok(pwrite(fd, v, sizeof(v), 60) == 4, "set user_version to 999");
    close(fd);
    err_clear(&err);
    db = db_open(path, true, &err);
    ok(db == NULL, "a database newer than the binary is refused");
    ok(strstr(err.msg, "newer") != NULL, "the error says so: %s", err.msg);
    db_close(db);
}

int
main(void)
{
    char cmd[512];

    plan(NO_PLAN);
    if (mkdtemp(dir) == NULL) {
        ok(0, "mkdtemp: %s", strerror(errno));
        return done_testing();
    }
    snprintf(path, sizeof(path), "%s/lockstep.db", dir);
    test_fresh();
    test_newer_refused();
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        diag("cannot remove %s", dir);
    return done_testing();
}
