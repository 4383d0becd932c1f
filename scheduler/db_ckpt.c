/*
 * db_ckpt.c - the store's checkpoint registry and per-rank commits
 *
 * A checkpoint row records a complete step of a job, once: a second
 * report of the same step changes nothing. A commit row records that one
 * rank committed one step in one attempt, also once, so a repeated
 * report is never counted twice (checkpoint.c does the counting).
 */
#include "scheduler/db.h"
#include "scheduler/db_int.h"

#include <sqlite3.h>

/* Write an INSERT ... ON CONFLICT DO NOTHING with the n values of v: 1
 * when it added the row, 0 when the row was there already, or a negative
 * errno. */
static int
ckpt_insert_new(struct db *db, sqlite3_stmt *st, const char *label,
    const struct db_val *v, size_t n)
{
    int rc = db_write_vals(db, st, label, v, n);

    if (rc < 0)
        return rc;
    return sqlite3_changes(db->sq) > 0 ? 1 : 0;
}

static const char sql_checkpoint_insert[] =
    "INSERT INTO checkpoints (job_id, step, attempt, path, committed, "
    "complete_ms, source) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) "
    "ON CONFLICT (job_id, step) DO NOTHING";

int
db_checkpoint_insert(struct db *db, const struct db_checkpoint *c)
{
    return ckpt_insert_new(db, db->checkpoint_insert, "checkpoint insert",
        DB_VALS(DB_INT(c->job_id), DB_INT(c->step), DB_INT(c->attempt),
            DB_TEXT(c->path), DB_INT(c->committed), DB_INT(c->complete_ms),
            DB_TEXT(c->source)));
}

static const char sql_checkpoints_job[] =
    "SELECT job_id, step, attempt, path, committed, complete_ms, source "
    "FROM checkpoints WHERE job_id = ?1 ORDER BY step";

static int
ckpt_row(sqlite3_stmt *st, void *arg)
{
    struct db_walk *w = arg;
    struct db_checkpoint c = {
        .job_id = sqlite3_column_int64(st, 0),
        .step = sqlite3_column_int64(st, 1),
        .attempt = sqlite3_column_int(st, 2),
        .path = db_col_text(st, 3),
        .committed = sqlite3_column_int(st, 4),
        .complete_ms = sqlite3_column_int64(st, 5),
        .source = db_col_text(st, 6),
    };

    return w->fn.checkpoint(&c, w->arg);
}

int
db_checkpoints_foreach(struct db *db, int64_t job_id, db_checkpoint_fn *fn,
    void *arg)
{
    struct db_walk w = { .fn.checkpoint = fn, .arg = arg };

    return DB_ROWS(db, db->checkpoints_job, "checkpoints list", ckpt_row, &w,
        DB_INT(job_id));
}

static const char sql_commit_insert[] =
    "INSERT INTO checkpoint_commits (job_id, attempt, step, rank, time_ms) "
    "VALUES (?1, ?2, ?3, ?4, ?5) "
    "ON CONFLICT (job_id, attempt, step, rank) DO NOTHING";

int
db_commit_insert(struct db *db, int64_t job_id, int attempt, int64_t step,
    int rank, int64_t time_ms)
{
    return ckpt_insert_new(db, db->commit_insert, "checkpoint commit insert",
        DB_VALS(DB_INT(job_id), DB_INT(attempt), DB_INT(step), DB_INT(rank),
            DB_INT(time_ms)));
}

static const char sql_commits_attempt[] =
    "SELECT rank, step FROM checkpoint_commits "
    "WHERE job_id = ?1 AND attempt = ?2 AND step > ?3 ORDER BY step, rank";

static int
commit_row(sqlite3_stmt *st, void *arg)
{
    struct db_walk *w = arg;

    return w->fn.commit(sqlite3_column_int(st, 0), sqlite3_column_int64(st, 1),
        w->arg);
}

int
db_commits_foreach(struct db *db, int64_t job_id, int attempt, int64_t above,
    db_commit_fn *fn, void *arg)
{
    struct db_walk w = { .fn.commit = fn, .arg = arg };

    return DB_ROWS(db, db->commits_attempt, "checkpoint commits load",
        commit_row, &w, DB_INT(job_id), DB_INT(attempt), DB_INT(above));
}

const struct db_stmt_def db_ckpt_stmts[] = {
    DB_STMT(checkpoint_insert),
    DB_STMT(checkpoints_job),
    DB_STMT(commit_insert),
    DB_STMT(commits_attempt),
    DB_STMT_END,
};
