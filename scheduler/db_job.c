/*
 * db_job.c - the store's jobs
 *
 * A job row holds its spec (argv and env as JSON), its state with the
 * evidence of its last failure, and its restart accounting. Every read
 * selects JOB_COLUMNS, which adds the job's highest complete checkpoint
 * step, and builds the job with job_from_row.
 */
#include "scheduler/db.h"
#include "scheduler/db_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "common/log.h"

#define JOB_COLUMNS                                                            \
    "id, name, user, state, reason, priority, nodes, ranks_per_node, "         \
    "gpus_per_node, cpus_per_rank, memory_mb_per_node, argv, env, "            \
    "workdir, max_restarts, checkpoint_dir, submit_ms, start_ms, end_ms, "     \
    "attempt, failed_rank, exit_code, signal, stderr_tail, "                   \
    "max_infra_restarts, hang_timeout_s, keep_checkpoints, restarts, "         \
    "infra_restarts, fail_streak, not_before_ms, reserved, "                   \
    "(SELECT max(step) FROM checkpoints c WHERE c.job_id = jobs.id), "         \
    "gc_every_s, gc_every_steps, checkpoint_every_s, checkpoint_every_steps, " \
    "held_by, "                                                                \
    "resume_from, resume_step, resume_from_job"

static const char sql_job_insert[] =
    "INSERT INTO jobs (name, user, state, reason, priority, nodes, "
    "ranks_per_node, gpus_per_node, cpus_per_rank, memory_mb_per_node, "
    "argv, env, workdir, max_restarts, checkpoint_dir, submit_ms, "
    "max_infra_restarts, hang_timeout_s, keep_checkpoints, gc_every_s, "
    "gc_every_steps, checkpoint_every_s, checkpoint_every_steps, "
    "resume_from, resume_step, resume_from_job) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, "
    "?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26)";

int
db_job_insert(struct db *db, struct job *job)
{
    sqlite3_stmt *st = db->job_insert;
    const struct proto_job_spec *s = &job->spec;
    char *argv = db_json_strv(s->argv, s->argc);
    char *env = db_json_kv(s->env, s->nenv);
    int rc;

    DB_BIND(st, 1, DB_TEXT(s->name), DB_TEXT(job->user),
        DB_TEXT(proto_job_state_str(job->state)), DB_TEXT(job->reason),
        DB_INT(s->priority), DB_INT(s->nodes), DB_INT(s->ranks_per_node),
        DB_INT(s->gpus_per_node), DB_INT(s->cpus_per_rank),
        DB_INT(s->memory_mb_per_node), DB_TEXT(argv), DB_TEXT(env),
        DB_TEXT(s->workdir ? s->workdir : "/"), DB_INT(s->max_restarts),
        DB_TEXT(s->checkpoint_dir), DB_INT(job->submit_ms),
        DB_INT(s->max_infra_restarts), DB_INT(s->hang_timeout_s),
        DB_INT(s->keep_checkpoints), DB_INT(s->gc_every.s),
        DB_INT(s->gc_every.steps), DB_INT(s->checkpoint_every.s),
        DB_INT(s->checkpoint_every.steps),
        DB_TEXT(s->resume_from ? s->resume_from : ""), DB_INT(s->resume_step),
        DB_INT(s->resume_from_job));
    free(argv);
    free(env);
    rc = db_write(db, st, "job insert");
    if (rc == 0)
        job->id = sqlite3_last_insert_rowid(db->sq);
    return rc;
}

static const char sql_job_update[] =
    "UPDATE jobs SET state = ?2, reason = ?3, start_ms = ?4, end_ms = ?5, "
    "attempt = ?6, failed_rank = ?7, exit_code = ?8, signal = ?9, "
    "stderr_tail = ?10, restarts = ?11, infra_restarts = ?12, "
    "fail_streak = ?13, not_before_ms = ?14, reserved = ?15, held_by = ?16 "
    "WHERE id = ?1";

int
db_job_update(struct db *db, const struct job *job)
{
    char *reserved = db_json_strv(job->reserved, job->nreserved);

    DB_BIND(db->job_update, 1, DB_INT(job->id),
        DB_TEXT(proto_job_state_str(job->state)), DB_TEXT(job->reason),
        DB_INT(job->start_ms), DB_INT(job->end_ms), DB_INT(job->attempt),
        DB_IF(job->failed_rank >= 0, DB_INT(job->failed_rank)),
        DB_IF(job->has_exit, DB_INT(job->exit_code)),
        DB_IF(job->has_exit, DB_INT(job->signal)),
        DB_IF(job->failed_rank >= 0, DB_TEXT(job->stderr_tail)),
        DB_INT(job->restarts), DB_INT(job->infra_restarts),
        DB_INT(job->fail_streak), DB_INT(job->not_before_ms), DB_TEXT(reserved),
        DB_TEXT(job->held_by));
    free(reserved);
    return db_write(db, db->job_update, "job update");
}

/* Build a job from a row of JOB_COLUMNS. NULL when the row is malformed
 * (logged). */
static struct job *
job_from_row(sqlite3_stmt *st)
{
    struct job *job = job_create();
    struct proto_job_spec *s = &job->spec;

    job->id = sqlite3_column_int64(st, 0);
    s->name = db_col_strdup(st, 1);
    job->user = db_col_strdup(st, 2);
    job_set_reason(job, db_col_text(st, 4));
    s->priority = sqlite3_column_int(st, 5);
    s->nodes = sqlite3_column_int(st, 6);
    s->ranks_per_node = sqlite3_column_int(st, 7);
    s->gpus_per_node = sqlite3_column_int(st, 8);
    s->cpus_per_rank = sqlite3_column_int(st, 9);
    s->memory_mb_per_node = sqlite3_column_int64(st, 10);
    s->workdir = db_col_strdup(st, 13);
    s->max_restarts = sqlite3_column_int(st, 14);
    s->checkpoint_dir = db_col_strdup(st, 15);
    job->submit_ms = sqlite3_column_int64(st, 16);
    job->start_ms = sqlite3_column_int64(st, 17);
    job->end_ms = sqlite3_column_int64(st, 18);
    job->attempt = sqlite3_column_int(st, 19);
    if (!db_col_is_null(st, 20)) {
        job->failed_rank = sqlite3_column_int(st, 20);
        job->stderr_tail = db_col_strdup(st, 23);
    }
    if (!db_col_is_null(st, 21)) {
        job->has_exit = true;
        job->exit_code = sqlite3_column_int(st, 21);
        job->signal = sqlite3_column_int(st, 22);
    }
    s->max_infra_restarts = sqlite3_column_int(st, 24);
    s->hang_timeout_s = sqlite3_column_int(st, 25);
    s->keep_checkpoints = sqlite3_column_int(st, 26);
    job->restarts = sqlite3_column_int(st, 27);
    job->infra_restarts = sqlite3_column_int(st, 28);
    job->fail_streak = sqlite3_column_int(st, 29);
    job->not_before_ms = sqlite3_column_int64(st, 30);
    job->ckpt_step = db_col_is_null(st, 32) ? -1 : sqlite3_column_int64(st, 32);
    s->gc_every.s = sqlite3_column_int64(st, 33);
    s->gc_every.steps = sqlite3_column_int64(st, 34);
    s->checkpoint_every.s = sqlite3_column_int64(st, 35);
    s->checkpoint_every.steps = sqlite3_column_int64(st, 36);
    job_set_held(job, db_col_text(st, 37));
    s->resume_from = db_col_strdup(st, 38);
    s->resume_step = sqlite3_column_int64(st, 39);
    s->resume_from_job = sqlite3_column_int64(st, 40);
    if (proto_job_state_parse(db_col_text(st, 3), &job->state) < 0 ||
        db_unjson_strv(db_col_text(st, 11), &s->argv, &s->argc) < 0 ||
        db_unjson_kv(db_col_text(st, 12), &s->env, &s->nenv) < 0 ||
        db_unjson_strv(db_col_text(st, 31), &job->reserved, &job->nreserved) <
            0) {
        log_error("database: job %lld has a malformed row", (long long)job->id);
        job_destroy(job);
        return NULL;
    }
    return job;
}

static const char sql_job_get[] = "SELECT " JOB_COLUMNS
                                  " FROM jobs WHERE id = ?1";

static int
job_get_row(sqlite3_stmt *st, void *arg)
{
    struct job **out = arg;

    *out = job_from_row(st);
    return *out ? 0 : -EIO;
}

int
db_job_get(struct db *db, int64_t id, struct job **out)
{
    *out = NULL;
    sqlite3_bind_int64(db->job_get, 1, id);
    return db_lookup(db, db->job_get, "job get", job_get_row, out);
}

static const char sql_jobs_unfinished[] =
    "SELECT " JOB_COLUMNS " FROM jobs "
    "WHERE state IN ('PENDING', 'PLACED', 'RUNNING', 'RESTARTING') "
    "ORDER BY id";

/* Add the row's job to the table (arg). */
static int
job_table_row(sqlite3_stmt *st, void *arg)
{
    struct job *job = job_from_row(st);

    if (job == NULL)
        return -EIO;
    job_table_add(arg, job);
    return 0;
}

int
db_jobs_load_unfinished(struct db *db, struct job_table *t)
{
    return db_rows(db, db->jobs_unfinished, "jobs load", job_table_row, t);
}

/* One statement per filter combination, so each can use its index
 * (jobs_state, jobs_user_state) instead of scanning every job ever run. */
#define JOBS_LIVE "state IN ('PENDING', 'PLACED', 'RUNNING', 'RESTARTING')"

static const char sql_jobs_all[] = "SELECT " JOB_COLUMNS
                                   " FROM jobs ORDER BY id DESC";
static const char sql_jobs_live[] = "SELECT " JOB_COLUMNS
                                    " FROM jobs WHERE " JOBS_LIVE
                                    " ORDER BY id DESC";
static const char sql_jobs_state[] =
    "SELECT " JOB_COLUMNS " FROM jobs WHERE state = ?2 ORDER BY id DESC";
static const char sql_jobs_user_all[] =
    "SELECT " JOB_COLUMNS " FROM jobs WHERE user = ?1 ORDER BY id DESC";
static const char sql_jobs_user_live[] =
    "SELECT " JOB_COLUMNS " FROM jobs WHERE user = ?1 AND " JOBS_LIVE
    " ORDER BY id DESC";
static const char sql_jobs_user_state[] =
    "SELECT " JOB_COLUMNS " FROM jobs WHERE user = ?1 AND state = ?2 "
    "ORDER BY id DESC";
#define JOBS_ENDED "state IN ('SUCCEEDED', 'FAILED', 'CANCELLED')"
static const char sql_jobs_ended[] = "SELECT " JOB_COLUMNS
                                     " FROM jobs WHERE " JOBS_ENDED
                                     " ORDER BY id DESC";
static const char sql_jobs_user_ended[] =
    "SELECT " JOB_COLUMNS " FROM jobs WHERE user = ?1 AND " JOBS_ENDED
    " ORDER BY id DESC";

/* A walk over jobs with the filters no statement applies. */
struct job_walk {
    const struct db_job_filter *filter;
    db_job_fn *fn;
    void *arg;
    int64_t n; /* jobs handed to fn so far */
};

/* Hand the row's job to the caller's fn, lending it for the call, if it
 * passes the filters; 1 stops the walk at the limit. */
static int
job_walk_row(sqlite3_stmt *st, void *arg)
{
    struct job_walk *w = arg;
    const struct db_job_filter *f = w->filter;
    struct job *job;
    int rc = 0;

    if (f->limit > 0 && w->n >= f->limit)
        return 1;
    if ((job = job_from_row(st)) == NULL)
        return -EIO;
    if ((f->name == NULL || strcmp(job->spec.name, f->name) == 0) &&
        (f->ended_from == 0 || job->end_ms >= f->ended_from)) {
        w->n++;
        rc = w->fn(job, w->arg);
    }
    job_destroy(job);
    return rc;
}

/* The statement for the filter's user, state and all/ended. */
static sqlite3_stmt *
jobs_stmt(struct db *db, const struct db_job_filter *filter)
{
    if (filter->user && filter->has_state)
        return db->jobs_user_state;
    if (filter->user && filter->ended)
        return db->jobs_user_ended;
    if (filter->user)
        return filter->all ? db->jobs_user_all : db->jobs_user_live;
    if (filter->has_state)
        return db->jobs_state;
    if (filter->ended)
        return db->jobs_ended;
    return filter->all ? db->jobs_all : db->jobs_live;
}

int
db_jobs_foreach(struct db *db, const struct db_job_filter *filter,
    db_job_fn *fn, void *arg)
{
    struct job_walk w = { .filter = filter, .fn = fn, .arg = arg };
    sqlite3_stmt *st = jobs_stmt(db, filter);
    int rc;

    if (filter->user)
        db_bind_text(st, 1, filter->user);
    if (filter->has_state)
        db_bind_text(st, 2, proto_job_state_str(filter->state));
    rc = db_rows(db, st, "jobs list", job_walk_row, &w);
    return rc == 1 && filter->limit > 0 && w.n >= filter->limit ? 0 : rc;
}

const struct db_stmt_def db_job_stmts[] = {
    DB_STMT(job_insert),
    DB_STMT(job_update),
    DB_STMT(job_get),
    DB_STMT(jobs_unfinished),
    DB_STMT(jobs_all),
    DB_STMT(jobs_live),
    DB_STMT(jobs_state),
    DB_STMT(jobs_user_all),
    DB_STMT(jobs_user_live),
    DB_STMT(jobs_user_state),
    DB_STMT(jobs_ended),
    DB_STMT(jobs_user_ended),
    DB_STMT_END,
};
