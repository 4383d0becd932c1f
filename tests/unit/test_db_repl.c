/*
 * test_db_repl.c - the store's replication: changesets and images
 *
 * Three databases in a temporary directory, as three replicas would
 * hold them: the leader's (replication on) records each transaction as
 * a changeset; a follower applies them and ends up with the same rows;
 * a third replica loads the leader's image (a snapshot) and goes on
 * from there with the next changeset. A changeset applied twice
 * conflicts and changes nothing; a rolled-back transaction leaves
 * nothing in the next one's changes; ids the follower hands out once it
 * leads continue the leader's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/sbuf.h"
#include "common/xalloc.h"
#include "scheduler/db.h"
#include "tests/tap.h"
#include "tests/testdir.h"

static char dir[256];

static struct db *
open_db(const char *name)
{
    char path[300];
    struct err err;
    struct db *db;

    err_clear(&err);
    snprintf(path, sizeof(path), "%s/%s.db", dir, name);
    db = db_open(path, &(struct db_open_opts){ .sync_full = true }, &err);
    ok(db != NULL, "open %s: %s", name, err.msg);
    return db;
}

static struct job *
new_job(const char *name)
{
    struct job *job = job_create();

    job->user = xstrdup("alice");
    job->submit_ms = 1000;
    job->spec.name = xstrdup(name);
    job->spec.argc = 1;
    job->spec.argv = xcalloc(2, sizeof(char *));
    job->spec.argv[0] = xstrdup("true");
    job->spec.workdir = xstrdup("/");
    job->spec.checkpoint_dir = xstrdup("");
    job->spec.nodes = 1;
    job->spec.ranks_per_node = 1;
    return job;
}

/* The leader's transaction so far, committed: its changeset. */
static int
commit_changes(struct db *db, void **cs, size_t *len)
{
    int rc = db_txn_changes(db, cs, len);

    if (rc == 0)
        rc = db_txn_commit(db);
    return rc;
}

static int
apply(struct db *db, const void *cs, size_t len, struct err *err)
{
    err_clear(err);
    return db_changes_apply(db, cs, len, err);
}

static int
job_line(struct job *j, void *arg)
{
    sbuf_addf(arg, "%lld:%s:%s,", (long long)j->id, j->spec.name,
        proto_job_state_str(j->state));
    return 0;
}

/* "id:name:STATE,..." of every job of db, newest first. */
static char *
jobs_of(struct db *db)
{
    struct db_job_filter f = { .all = true };
    struct sbuf sb;

    sbuf_init(&sb);
    if (db_jobs_foreach(db, &f, job_line, &sb) < 0)
        sbuf_addstr(&sb, "(error)");
    return sbuf_detach(&sb, NULL);
}

static void
test_changesets(struct db *leader, struct db *follower, struct db *third)
{
    struct job *a = new_job("a"), *b = new_job("b"), *c = new_job("c");
    struct job *d = NULL;
    void *cs1 = NULL, *cs2 = NULL, *cs3 = NULL, *img = NULL;
    size_t len1 = 0, len2 = 0, len3 = 0, ilen = 0;
    struct node *n = node_create("n1");
    struct err err;
    char *want, *got;

    is_int(db_repl_enable(leader, &err), 0,
        "replication on: every table has a primary key");
    is_int(db_job_insert(leader, a), 0, "insert job a");
    is_int(db_job_insert(leader, b), 0, "insert job b");
    n->registered_ms = 1;
    is_int(db_node_insert(leader, n), 0, "insert node n1");
    is_int(commit_changes(leader, &cs1, &len1), 0, "commit: changeset 1");
    ok(cs1 != NULL && len1 > 0, "changeset 1 holds the rows (%zu bytes)", len1);

    /* A transaction rolled back leaves nothing behind. */
    is_int(db_job_insert(leader, c), 0, "insert job c");
    db_txn_rollback(leader);
    b->state = PROTO_JOB_CANCELLED;
    is_int(db_job_update(leader, b), 0, "cancel job b");
    is_int(commit_changes(leader, &cs2, &len2), 0, "commit: changeset 2");

    is_int(apply(follower, cs1, len1, &err), 0, "follower applies 1: %s",
        err.msg);
    is_int(apply(follower, cs2, len2, &err), 0, "follower applies 2: %s",
        err.msg);
    want = jobs_of(leader);
    got = jobs_of(follower);
    is_str(want, "2:b:CANCELLED,1:a:PENDING,", "the leader's jobs");
    is_str(got, want, "the follower has the leader's jobs");
    ok(strstr(got, ":c:") == NULL, "nothing of the rolled-back job");
    free(got);

    is_int(apply(follower, cs1, len1, &err), -EIO,
        "changeset 1 again conflicts");
    ok(strstr(err.msg, "row exists") != NULL, "and says so: %s", err.msg);
    got = jobs_of(follower);
    is_str(got, want, "and changes nothing");
    free(got);

    /* A snapshot: the leader's image on a third replica, then the next
     * changeset on top of it. */
    is_int(db_image_save(leader, &img, &ilen), 0, "image of the leader");
    is_int(db_image_load(third, img, ilen, &err), 0, "loaded: %s", err.msg);
    a->state = PROTO_JOB_FAILED;
    is_int(db_job_update(leader, a), 0, "fail job a");
    {
        void *busy = NULL;
        size_t blen = 0;

        ok(db_image_save(leader, &busy, &blen) == -EBUSY && busy == NULL,
            "no image while a transaction is open");
    }
    is_int(commit_changes(leader, &cs3, &len3), 0, "commit: changeset 3");
    is_int(apply(third, cs3, len3, &err), 0, "third applies 3: %s", err.msg);
    is_int(apply(follower, cs3, len3, &err), 0, "follower applies 3");
    free(want);
    want = jobs_of(leader);
    got = jobs_of(third);
    is_str(want, "2:b:CANCELLED,1:a:FAILED,", "the leader's jobs");
    is_str(got, want, "image plus changeset: the leader's jobs");
    free(got);
    got = jobs_of(follower);
    is_str(got, want, "the follower's too");
    free(got);

    /* The follower takes over: its ids continue the leader's. */
    d = new_job("d");
    is_int(db_job_insert(follower, d), 0, "the follower inserts a job");
    ok(d->id > b->id, "with a new id (%lld > %lld)", (long long)d->id,
        (long long)b->id);
    db_txn_rollback(follower);

    is_int(db_image_load(third, "nonsense", 8, &err), -EINVAL,
        "not an image: refused");
    free(want);
    free(cs1);
    free(cs2);
    free(cs3);
    free(img);
    job_destroy(a);
    job_destroy(b);
    job_destroy(c);
    job_destroy(d);
    node_destroy(n);
}

int
main(void)
{
    struct db *leader, *follower, *third;

    plan(NO_PLAN);
    if (test_tmpdir(dir, sizeof(dir), "lockstep-test-db-repl") < 0)
        return 1;
    leader = open_db("leader");
    follower = open_db("follower");
    third = open_db("third");
    if (leader && follower && third)
        test_changesets(leader, follower, third);
    db_close(leader);
    db_close(follower);
    db_close(third);
    test_rmtree(dir);
    return done_testing();
}
