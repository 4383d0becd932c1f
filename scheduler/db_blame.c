/*
 * db_blame.c - the store's record of blame put on nodes
 *
 * A blame row says that a node was held responsible for an attempt's
 * failure, with the kind, the evidence and the step the failing rank had
 * reached. Its status (schema/0008) says what it counts for: provisional
 * (waiting for the job to confirm or withdraw it), confirmed (counted
 * toward the node's exclusion), withdrawn (the job's own failure after
 * all; the attempt's evidence says so too) or reset (recorded before an
 * operator's uncordon). The old `withdrawn` column is kept in step.
 */
#include "scheduler/db.h"
#include "scheduler/db_int.h"

#include <sqlite3.h>

#define BLAME_COLS                                                             \
    "id, node, job_id, attempt, time_ms, kind, evidence, status, step, "       \
    "settled_ms, note"

static const char sql_blame_insert[] =
    "INSERT INTO blame (node, job_id, attempt, time_ms, kind, evidence, "
    "withdrawn, status, step) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)";

int
db_blame_insert(struct db *db, const char *node, int64_t job_id, int attempt,
    int64_t time_ms, const char *kind, const char *evidence,
    enum policy_blame_status status, int64_t step)
{
    db->blame_gen++;
    return DB_WRITE(db, db->blame_insert, "blame insert", DB_TEXT(node),
        DB_INT(job_id), DB_INT(attempt), DB_INT(time_ms), DB_TEXT(kind),
        DB_TEXT(evidence ? evidence : "{}"),
        DB_INT(status == POLICY_BLAME_WITHDRAWN),
        DB_TEXT(policy_blame_status_str(status)), DB_INT(step));
}

static const char sql_blame_withdraw[] =
    "UPDATE blame SET withdrawn = 1, status = 'withdrawn', settled_ms = ?3, "
    "note = ?4 WHERE job_id = ?1 AND attempt = ?2 "
    "AND status IN ('provisional', 'confirmed')";

/* The attempt's evidence says so too: "blamed" becomes "blame_withdrawn". */
static const char sql_failure_unblame[] =
    "UPDATE attempts SET failure_blame = 'withdrawn' "
    "WHERE job_id = ?1 AND attempt = ?2 AND failure_blame = 'blamed'";

int
db_blame_withdraw(struct db *db, int64_t job_id, int attempt, int64_t time_ms,
    const char *note)
{
    db->blame_gen++;
    int rc;

    rc = DB_WRITE(db, db->blame_withdraw, "blame withdraw", DB_INT(job_id),
        DB_INT(attempt), DB_INT(time_ms), DB_TEXT(note));
    if (rc < 0)
        return rc;
    return DB_WRITE(db, db->failure_unblame, "failure unblame", DB_INT(job_id),
        DB_INT(attempt));
}

static const char sql_blame_settle[] =
    "UPDATE blame SET status = ?2, withdrawn = ?3, settled_ms = ?4, "
    "note = ?5 WHERE id = ?1";

int
db_blame_settle(struct db *db, int64_t id, int64_t job_id, int attempt,
    enum policy_blame_status status, int64_t time_ms, const char *note)
{
    db->blame_gen++;
    bool withdrawn = status == POLICY_BLAME_WITHDRAWN;
    int rc;

    rc = DB_WRITE(db, db->blame_settle, "blame settle", DB_INT(id),
        DB_TEXT(policy_blame_status_str(status)), DB_INT(withdrawn),
        DB_INT(time_ms), DB_TEXT(note));
    if (rc < 0 || !withdrawn)
        return rc;
    return DB_WRITE(db, db->failure_unblame, "failure unblame", DB_INT(job_id),
        DB_INT(attempt));
}

static const char sql_blame_reset[] =
    "UPDATE blame SET status = 'reset', settled_ms = ?2, note = ?3 "
    "WHERE node = ?1 AND status IN ('provisional', 'confirmed')";

int
db_blame_reset(struct db *db, const char *node, int64_t time_ms,
    const char *note)
{
    db->blame_gen++;
    return DB_WRITE(db, db->blame_reset, "blame reset", DB_TEXT(node),
        DB_INT(time_ms), DB_TEXT(note));
}

static const char sql_blame_node[] =
    "SELECT " BLAME_COLS " FROM blame WHERE node = ?1 AND withdrawn = 0 "
    "AND status = 'confirmed' AND time_ms >= ?2 ORDER BY time_ms";

static const char sql_blame_history[] = "SELECT " BLAME_COLS
                                        " FROM blame WHERE node = ?1 "
                                        "ORDER BY id DESC LIMIT ?2";

static const char sql_blame_job[] =
    "SELECT " BLAME_COLS " FROM blame WHERE job_id = ?1 AND withdrawn = 0 "
    "AND status IN ('provisional', 'confirmed') AND time_ms >= ?2 "
    "ORDER BY id";

static const char sql_blame_provisional[] =
    "SELECT " BLAME_COLS " FROM blame WHERE status = 'provisional' "
    "ORDER BY id";

static int
blame_row(sqlite3_stmt *st, void *arg)
{
    struct db_walk *w = arg;
    struct db_blame b = {
        .id = sqlite3_column_int64(st, 0),
        .node = db_col_text(st, 1),
        .job_id = sqlite3_column_int64(st, 2),
        .attempt = sqlite3_column_int(st, 3),
        .time_ms = sqlite3_column_int64(st, 4),
        .kind = db_col_text(st, 5),
        .evidence = db_col_text(st, 6),
        .step = sqlite3_column_int64(st, 8),
        .settled_ms = sqlite3_column_int64(st, 9),
        .note = db_col_text(st, 10),
    };

    if (policy_blame_status_parse(db_col_text(st, 7), &b.status) < 0)
        b.status = POLICY_BLAME_CONFIRMED;
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
db_blame_node_history(struct db *db, const char *node, int limit,
    db_blame_fn *fn, void *arg)
{
    struct db_walk w = { .fn.blame = fn, .arg = arg };

    return DB_ROWS(db, db->blame_history, "blame history", blame_row, &w,
        DB_TEXT(node), DB_INT(limit));
}

uint64_t
db_blame_gen(const struct db *db)
{
    return db->blame_gen;
}

int
db_blame_job_foreach(struct db *db, int64_t job_id, int64_t since_ms,
    db_blame_fn *fn, void *arg)
{
    struct db_walk w = { .fn.blame = fn, .arg = arg };

    return DB_ROWS(db, db->blame_job, "blame by job", blame_row, &w,
        DB_INT(job_id), DB_INT(since_ms));
}

int
db_blame_provisional_foreach(struct db *db, db_blame_fn *fn, void *arg)
{
    struct db_walk w = { .fn.blame = fn, .arg = arg };

    return db_rows(db, db->blame_provisional, "provisional blame", blame_row,
        &w);
}

const struct db_stmt_def db_blame_stmts[] = {
    DB_STMT(blame_insert),
    DB_STMT(blame_withdraw),
    DB_STMT(failure_unblame),
    DB_STMT(blame_settle),
    DB_STMT(blame_reset),
    DB_STMT(blame_node),
    DB_STMT(blame_history),
    DB_STMT(blame_job),
    DB_STMT(blame_provisional),
    DB_STMT_END,
};
