/*
 * db_obs.c - the store's side of what on-call observes: the alert queue
 * (schema/0010-alerts.sql) and the counts behind GET /metrics
 */
#include "scheduler/db.h"
#include "scheduler/db_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

/* ---- the alert queue ---------------------------------------------------- */

static const char sql_alert_insert[] =
    "INSERT INTO alerts (time_ms, kind, node, job_id, reason) "
    "VALUES (?1, ?2, ?3, ?4, ?5)";

int
db_alert_insert(struct db *db, const struct db_alert *a, int64_t *id)
{
    int rc = DB_WRITE(db, db->alert_insert, "alert insert", DB_INT(a->time_ms),
        DB_TEXT(a->kind), DB_TEXT(a->node), DB_INT(a->job_id),
        DB_TEXT(a->reason));

    if (rc == 0 && id)
        *id = sqlite3_last_insert_rowid(db->sq);
    return rc;
}

static const char sql_alert_count[] = "SELECT COUNT(*) FROM alerts";

static int
count_row(sqlite3_stmt *st, void *arg)
{
    *(int64_t *)arg = sqlite3_column_int64(st, 0);
    return 0;
}

int
db_alert_count(struct db *db, int64_t *n)
{
    *n = 0;
    return db_lookup(db, db->alert_count, "alert count", count_row, n);
}

static const char sql_alert_oldest[] =
    "SELECT id, time_ms, kind, node, job_id, reason, tries, next_ms, "
    "last_error FROM alerts ORDER BY id LIMIT 1";

static int
alert_row(sqlite3_stmt *st, void *arg)
{
    struct db_alert *a = arg;

    a->id = sqlite3_column_int64(st, 0);
    a->time_ms = sqlite3_column_int64(st, 1);
    a->kind = db_col_strdup(st, 2);
    a->node = db_col_strdup(st, 3);
    a->job_id = sqlite3_column_int64(st, 4);
    a->reason = db_col_strdup(st, 5);
    a->tries = sqlite3_column_int(st, 6);
    a->next_ms = sqlite3_column_int64(st, 7);
    a->last_error = db_col_strdup(st, 8);
    return 0;
}

int
db_alert_oldest(struct db *db, struct db_alert *out)
{
    memset(out, 0, sizeof(*out));
    return db_lookup(db, db->alert_oldest, "alert oldest", alert_row, out);
}

void
db_alert_free(struct db_alert *a)
{
    free(a->kind);
    free(a->node);
    free(a->reason);
    free(a->last_error);
    memset(a, 0, sizeof(*a));
}

static const char sql_alert_retry[] =
    "UPDATE alerts SET tries = ?2, next_ms = ?3, last_error = ?4 "
    "WHERE id = ?1";

int
db_alert_retry(struct db *db, int64_t id, int tries, int64_t next_ms,
    const char *error)
{
    return DB_WRITE(db, db->alert_retry, "alert retry", DB_INT(id),
        DB_INT(tries), DB_INT(next_ms), DB_TEXT(error));
}

static const char sql_alert_delete[] = "DELETE FROM alerts WHERE id = ?1";

int
db_alert_delete(struct db *db, int64_t id)
{
    return DB_WRITE(db, db->alert_delete, "alert delete", DB_INT(id));
}

/* ---- counts for /metrics ------------------------------------------------ */

static const char sql_jobs_by_state[] =
    "SELECT state, COUNT(*), SUM(restarts) + SUM(infra_restarts) FROM jobs "
    "GROUP BY state";
static const char sql_attempts_by_state[] =
    "SELECT state, COUNT(*), 0 FROM attempts GROUP BY state";

struct count_walk {
    db_count_fn *fn;
    void *arg;
};

static int
state_count_row(sqlite3_stmt *st, void *arg)
{
    struct count_walk *w = arg;

    return w->fn(db_col_text(st, 0), sqlite3_column_int64(st, 1),
        sqlite3_column_int64(st, 2), w->arg);
}

int
db_jobs_count_by_state(struct db *db, db_count_fn *fn, void *arg)
{
    struct count_walk w = { fn, arg };

    return db_rows(db, db->jobs_by_state, "jobs by state", state_count_row, &w);
}

int
db_attempts_count_by_state(struct db *db, db_count_fn *fn, void *arg)
{
    struct count_walk w = { fn, arg };

    return db_rows(db, db->attempts_by_state, "attempts by state",
        state_count_row, &w);
}

const struct db_stmt_def db_obs_stmts[] = {
    DB_STMT(alert_insert),
    DB_STMT(alert_count),
    DB_STMT(alert_oldest),
    DB_STMT(alert_retry),
    DB_STMT(alert_delete),
    DB_STMT(jobs_by_state),
    DB_STMT(attempts_by_state),
    DB_STMT_END,
};
