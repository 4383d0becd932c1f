/*
 * db_blame.c - the store's record of blame put on nodes
 *
 * A blame row says that a node was held responsible for an attempt's
 * failure, with the kind and evidence. The scheduler counts a node's
 * recent blame to exclude it, and keeps a restarting job off the nodes
 * blamed for its own recent failures. A withdrawn row stays for the
 * record but no longer counts, and the attempt's evidence says so too.
 */
#include "scheduler/db.h"
#include "scheduler/db_int.h"

#include <sqlite3.h>

static const char sql_blame_insert[] =
    "INSERT INTO blame (node, job_id, attempt, time_ms, kind, evidence, "
    "withdrawn) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";

int
db_blame_insert(struct db *db, const char *node, int64_t job_id, int attempt,
    int64_t time_ms, const char *kind, const char *evidence, bool withdrawn)
{
    return DB_WRITE(db, db->blame_insert, "blame insert", DB_TEXT(node),
        DB_INT(job_id), DB_INT(attempt), DB_INT(time_ms), DB_TEXT(kind),
        DB_TEXT(evidence ? evidence : "{}"), DB_INT(withdrawn));
}

static const char sql_blame_withdraw[] =
    "UPDATE blame SET withdrawn = 1 WHERE job_id = ?1 AND attempt = ?2";

/* The attempt's evidence says so too: "blamed" becomes "blame_withdrawn". */
static const char sql_failure_unblame[] =
    "UPDATE attempts SET failure_blame = 'withdrawn' "
    "WHERE job_id = ?1 AND attempt = ?2 AND failure_blame = 'blamed'";

int
db_blame_withdraw(struct db *db, int64_t job_id, int attempt)
{
    int rc;

    db_bind_attempt_key(db->blame_withdraw, 1, job_id, attempt);
    if ((rc = db_write(db, db->blame_withdraw, "blame withdraw")) < 0)
        return rc;
    db_bind_attempt_key(db->failure_unblame, 1, job_id, attempt);
    return db_write(db, db->failure_unblame, "failure unblame");
}

static const char sql_blame_node[] =
    "SELECT node, job_id, attempt, time_ms, kind, evidence FROM blame "
    "WHERE node = ?1 AND withdrawn = 0 AND time_ms >= ?2 ORDER BY time_ms";

static const char sql_blame_job[] =
    "SELECT node, job_id, attempt, time_ms, kind, evidence FROM blame "
    "WHERE job_id = ?1 AND withdrawn = 0 AND time_ms >= ?2 ORDER BY id";

static int
blame_row(sqlite3_stmt *st, void *arg)
{
    struct db_walk *w = arg;
    struct db_blame b = {
        .node = db_col_text(st, 0),
        .job_id = sqlite3_column_int64(st, 1),
        .attempt = sqlite3_column_int(st, 2),
        .time_ms = sqlite3_column_int64(st, 3),
        .kind = db_col_text(st, 4),
        .evidence = db_col_text(st, 5),
    };

    return w->fn.blame(&b, w->arg);
}

int
db_blame_node_foreach(struct db *db, const char *node, int64_t since_ms,
    db_blame_fn *fn, void *arg)
{
    struct db_walk w = { .fn.blame = fn, .arg = arg };

    return DB_ROWS(db, db->blame_node, "blame by node", blame_row, &w,
        DB_TEXT(node), DB_INT(since_ms));
}

int
db_blame_job_foreach(struct db *db, int64_t job_id, int64_t since_ms,
    db_blame_fn *fn, void *arg)
{
    struct db_walk w = { .fn.blame = fn, .arg = arg };

    return DB_ROWS(db, db->blame_job, "blame by job", blame_row, &w,
        DB_INT(job_id), DB_INT(since_ms));
}

const struct db_stmt_def db_blame_stmts[] = {
    DB_STMT(blame_insert),
    DB_STMT(blame_withdraw),
    DB_STMT(failure_unblame),
    DB_STMT(blame_node),
    DB_STMT(blame_job),
    DB_STMT_END,
};
