/*
 * db_stats.c - the store's per-rank statistics by window
 *
 * One row per rank per closed window (schema/0007): the rank's step time,
 * its gc and checkpoint figures, and the job median that judged it; and
 * one row per rank per timed section per window (schema/0008). The writer
 * prunes each job to its newest windows, so the rows of a job stay
 * bounded however long it runs.
 */
#include "scheduler/db.h"
#include "scheduler/db_int.h"

#include <sqlite3.h>

static const char sql_rank_stat_insert[] =
    "INSERT OR REPLACE INTO rank_stats (job_id, attempt, rank, window_ms, "
    "node, step, step_p50_us, step_p99_us, median_us, slow, gc_count, "
    "gc_p50_ms, gc_max_ms, gc_step, checkpoint_count, checkpoint_max_ms, "
    "checkpoint_step) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
    "?12, ?13, ?14, ?15, ?16, ?17)";

int
db_rank_stat_insert(struct db *db, const struct db_rank_stat *r)
{
    const struct rankwin_summary *s = &r->s;

    return DB_WRITE(db, db->rank_stat_insert, "rank stat insert",
        DB_INT(r->job_id), DB_INT(r->attempt), DB_INT(r->rank),
        DB_INT(r->window_ms), DB_TEXT(r->node), DB_INT(s->step),
        DB_INT(s->step_p50_us), DB_INT(s->step_p99_us), DB_INT(s->median_us),
        DB_INT(s->slow ? 1 : 0), DB_INT(s->gc_count), DB_INT(s->gc_p50_ms),
        DB_INT(s->gc_max_ms), DB_INT(s->gc_step), DB_INT(s->ckpt_count),
        DB_INT(s->ckpt_max_ms), DB_INT(s->ckpt_step));
}

/* Every row of the job older than its keep-th newest window. */
static const char sql_rank_stats_prune[] =
    "DELETE FROM rank_stats WHERE job_id = ?1 AND window_ms < "
    "(SELECT MIN(window_ms) FROM (SELECT DISTINCT window_ms FROM rank_stats "
    "WHERE job_id = ?1 ORDER BY window_ms DESC LIMIT ?2))";

int
db_rank_stats_prune(struct db *db, int64_t job_id, int keep)
{
    return DB_WRITE(db, db->rank_stats_prune, "rank stats prune",
        DB_INT(job_id), DB_INT(keep));
}

static const char sql_rank_stats_job[] =
    "SELECT job_id, attempt, rank, window_ms, node, step, step_p50_us, "
    "step_p99_us, median_us, slow, gc_count, gc_p50_ms, gc_max_ms, gc_step, "
    "checkpoint_count, checkpoint_max_ms, checkpoint_step FROM rank_stats "
    "WHERE job_id = ?1 ORDER BY window_ms DESC, attempt, rank";

static int
rank_stat_row(sqlite3_stmt *st, void *arg)
{
    struct db_walk *w = arg;
    struct db_rank_stat r = {
        .job_id = sqlite3_column_int64(st, 0),
        .attempt = sqlite3_column_int(st, 1),
        .rank = sqlite3_column_int(st, 2),
        .window_ms = sqlite3_column_int64(st, 3),
        .node = db_col_text(st, 4),
        .s = {
            .step = sqlite3_column_int64(st, 5),
            .step_p50_us = sqlite3_column_int64(st, 6),
            .step_p99_us = sqlite3_column_int64(st, 7),
            .median_us = sqlite3_column_int64(st, 8),
            .slow = sqlite3_column_int(st, 9) != 0,
            .gc_count = sqlite3_column_int64(st, 10),
            .gc_p50_ms = sqlite3_column_int64(st, 11),
            .gc_max_ms = sqlite3_column_int64(st, 12),
            .gc_step = sqlite3_column_int64(st, 13),
            .ckpt_count = sqlite3_column_int64(st, 14),
            .ckpt_max_ms = sqlite3_column_int64(st, 15),
            .ckpt_step = sqlite3_column_int64(st, 16),
        },
    };

    return w->fn.rank_stat(&r, w->arg);
}

int
db_rank_stats_foreach(struct db *db, int64_t job_id, db_rank_stat_fn *fn,
    void *arg)
{
    struct db_walk w = { .fn.rank_stat = fn, .arg = arg };

    return DB_ROWS(db, db->rank_stats_job, "rank stats list", rank_stat_row, &w,
        DB_INT(job_id));
}

/* ---- timed sections ----------------------------------------------------- */

static const char sql_rank_section_insert[] =
    "INSERT OR REPLACE INTO rank_sections (job_id, attempt, rank, window_ms, "
    "node, section, p50_us, p99_us, n, median_us, slow) VALUES (?1, ?2, ?3, "
    "?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)";

int
db_rank_section_insert(struct db *db, const struct db_rank_section *r)
{
    return DB_WRITE(db, db->rank_section_insert, "rank section insert",
        DB_INT(r->job_id), DB_INT(r->attempt), DB_INT(r->rank),
        DB_INT(r->window_ms), DB_TEXT(r->node), DB_TEXT(r->section),
        DB_INT(r->p50_us), DB_INT(r->p99_us), DB_INT(r->n),
        DB_INT(r->median_us), DB_INT(r->slow ? 1 : 0));
}

static const char sql_rank_sections_prune[] =
    "DELETE FROM rank_sections WHERE job_id = ?1 AND window_ms < "
    "(SELECT MIN(window_ms) FROM (SELECT DISTINCT window_ms FROM "
    "rank_sections WHERE job_id = ?1 ORDER BY window_ms DESC LIMIT ?2))";

int
db_rank_sections_prune(struct db *db, int64_t job_id, int keep)
{
    return DB_WRITE(db, db->rank_sections_prune, "rank sections prune",
        DB_INT(job_id), DB_INT(keep));
}

static const char sql_rank_sections_job[] =
    "SELECT job_id, attempt, rank, window_ms, node, section, p50_us, p99_us, "
    "n, median_us, slow FROM rank_sections WHERE job_id = ?1 AND attempt = ?2 "
    "ORDER BY window_ms DESC, rank, section";

static int
rank_section_row(sqlite3_stmt *st, void *arg)
{
    struct db_walk *w = arg;
    struct db_rank_section r = {
        .job_id = sqlite3_column_int64(st, 0),
        .attempt = sqlite3_column_int(st, 1),
        .rank = sqlite3_column_int(st, 2),
        .window_ms = sqlite3_column_int64(st, 3),
        .node = db_col_text(st, 4),
        .section = db_col_text(st, 5),
        .p50_us = sqlite3_column_int64(st, 6),
        .p99_us = sqlite3_column_int64(st, 7),
        .n = sqlite3_column_int64(st, 8),
        .median_us = sqlite3_column_int64(st, 9),
        .slow = sqlite3_column_int(st, 10) != 0,
    };

    return w->fn.rank_section(&r, w->arg);
}

int
db_rank_sections_foreach(struct db *db, int64_t job_id, int attempt,
    db_rank_section_fn *fn, void *arg)
{
    struct db_walk w = { .fn.rank_section = fn, .arg = arg };

    return DB_ROWS(db, db->rank_sections_job, "rank sections list",
        rank_section_row, &w, DB_INT(job_id), DB_INT(attempt));
}

const struct db_stmt_def db_stats_stmts[] = {
    DB_STMT(rank_stat_insert),
    DB_STMT(rank_stats_prune),
    DB_STMT(rank_stats_job),
    DB_STMT(rank_section_insert),
    DB_STMT(rank_sections_prune),
    DB_STMT(rank_sections_job),
    DB_STMT_END,
};
