/*
 * db.c - the store's core: open, close, transactions, the row loop
 *
 * db_open opens the file with the pragmas STYLE.md asks for, brings the
 * schema up to date (db_migrate.c) and prepares every statement of every
 * concern file once, from their tables (db_int.h); db_close finalizes
 * them. Here too are the helpers every query goes through: the error
 * mapper, the write path that opens the iteration's transaction lazily
 * (group commit; see db.h), and the one loop that steps a query's rows.
 */
#include "scheduler/db.h"
#include "scheduler/db_int.h"

#include <errno.h>
#include <stdlib.h>
#include <strings.h>

#include <sqlite3.h>

#include "common/log.h"
#include "common/xalloc.h"

/* ---- errors and stepping ------------------------------------------------ */

int
db_fail(struct db *db, const char *label, int rc)
{
    int ext = sqlite3_extended_errcode(db->sq);

    log_error("database %s failed: %s (code %d)", label, sqlite3_errmsg(db->sq),
        ext);
    switch (rc & 0xff) {
    case SQLITE_FULL:
        return -ENOSPC;
    case SQLITE_READONLY:
        return -EROFS;
    case SQLITE_CONSTRAINT:
        return -EEXIST;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return -EBUSY;
    default:
        return -EIO;
    }
}

void
db_done(sqlite3_stmt *st)
{
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
}

int
db_exec(struct db *db, sqlite3_stmt *st, const char *label)
{
    int rc = sqlite3_step(st);

    db_done(st);
    if (rc != SQLITE_DONE)
        return db_fail(db, label, rc);
    return 0;
}

int
db_write(struct db *db, sqlite3_stmt *st, const char *label)
{
    int rc = db_txn_begin(db);

    if (rc < 0) {
        db_done(st);
        return rc;
    }
    return db_exec(db, st, label);
}

int
db_rows(struct db *db, sqlite3_stmt *st, const char *label, db_row_fn *row,
    void *arg)
{
    int rc;

    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int frc = row(st, arg);

        if (frc != 0) {
            db_done(st);
            return frc;
        }
    }
    db_done(st);
    if (rc != SQLITE_DONE)
        return db_fail(db, label, rc);
    return 0;
}

int
db_write_vals(struct db *db, sqlite3_stmt *st, const char *label,
    const struct db_val *v, size_t n)
{
    db_bind_vals(st, 1, v, n);
    return db_write(db, st, label);
}

int
db_rows_vals(struct db *db, sqlite3_stmt *st, const char *label, db_row_fn *row,
    void *arg, const struct db_val *v, size_t n)
{
    db_bind_vals(st, 1, v, n);
    return db_rows(db, st, label, row, arg);
}

int
db_lookup(struct db *db, sqlite3_stmt *st, const char *label, db_row_fn *row,
    void *arg)
{
    int rc = sqlite3_step(st);

    if (rc == SQLITE_ROW) {
        rc = row(st, arg);
        db_done(st);
        return rc;
    }
    db_done(st);
    if (rc == SQLITE_DONE)
        return -ENOENT;
    return db_fail(db, label, rc);
}

/* ---- transactions ------------------------------------------------------- */

static const char sql_begin[] = "BEGIN IMMEDIATE";
static const char sql_commit[] = "COMMIT";
static const char sql_rollback[] = "ROLLBACK";

int
db_txn_begin(struct db *db)
{
    int rc;

    if (db->in_txn)
        return 0;
    rc = db_exec(db, db->begin, "begin");
    if (rc == 0)
        db->in_txn = true;
    if (rc == 0 && (rc = db_repl_begin(db)) < 0)
        db_txn_rollback(db);
    return rc;
}

int
db_txn_commit(struct db *db)
{
    int rc;

    if (!db->in_txn)
        return 0;
    rc = db_exec(db, db->commit, "commit");
    if (rc < 0) {
        db_txn_rollback(db);
        return rc;
    }
    db->in_txn = false;
    db_repl_end(db);
    return 0;
}

void
db_txn_rollback(struct db *db)
{
    if (!db->in_txn)
        return;
    /* A failed COMMIT may already have rolled back; only roll back what
     * is still open. */
    if (!sqlite3_get_autocommit(db->sq))
        db_exec(db, db->rollback, "rollback");
    db->in_txn = false;
    db_repl_end(db);
}

bool
db_txn_is_open(const struct db *db)
{
    return db->in_txn;
}

static const char sql_user_version[] = "PRAGMA user_version";

int
db_schema_version(struct db *db)
{
    int v = -1;

    if (sqlite3_step(db->user_version) == SQLITE_ROW)
        v = sqlite3_column_int(db->user_version, 0);
    db_done(db->user_version);
    return v;
}

/* ---- the statement table ------------------------------------------------ */

static const struct db_stmt_def db_core_stmts[] = {
    DB_STMT(begin),
    DB_STMT(commit),
    DB_STMT(rollback),
    DB_STMT(user_version),
    DB_STMT_END,
};

/* Every concern's table; db_open prepares each statement of each once. */
static const struct db_stmt_def *const db_stmt_tables[] = {
    db_core_stmts,
    db_node_stmts,
    db_job_stmts,
    db_attempt_stmts,
    db_directive_stmts,
    db_ckpt_stmts,
    db_stats_stmts,
    db_blame_stmts,
    db_history_stmts,
    db_event_stmts,
    db_obs_stmts,
    db_health_stmts,
    db_repl_stmts,
};

#define DB_NTABLES (sizeof(db_stmt_tables) / sizeof(db_stmt_tables[0]))

static sqlite3_stmt **
db_stmt_slot(struct db *db, const struct db_stmt_def *def)
{
    return (sqlite3_stmt **)((char *)db + def->offset);
}

static int
db_prepare_all(struct db *db, struct err *err)
{
    for (size_t t = 0; t < DB_NTABLES; t++) {
        for (const struct db_stmt_def *d = db_stmt_tables[t]; d->sql; d++) {
            int rc = sqlite3_prepare_v3(db->sq, d->sql, -1,
                SQLITE_PREPARE_PERSISTENT, db_stmt_slot(db, d), NULL);

            if (rc != SQLITE_OK)
                return err_set(err, -EIO,
                    "cannot prepare statement on "
                    "'%s': %s (%.40s...)",
                    db->path, sqlite3_errmsg(db->sq), d->sql);
        }
    }
    return 0;
}

/* ---- open and close ----------------------------------------------------- */

/* Run a PRAGMA (which may return a row) and check it took. */
static int
db_pragma(struct db *db, const char *sql, const char *want, struct err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db->sq, sql, -1, &st, NULL);

    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW && want &&
            strcasecmp(db_col_text(st, 0), want) != 0) {
            rc = err_set(err, -EIO, "cannot set '%s' on '%s': got '%s'", sql,
                db->path, db_col_text(st, 0));
            sqlite3_finalize(st);
            return rc;
        }
        if (rc == SQLITE_ROW || rc == SQLITE_DONE)
            rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_OK && db_check_damage_code(rc))
        return db_check_damaged(db->path, sqlite3_errmsg(db->sq), err);
    if (rc != SQLITE_OK)
        return err_set(err, -EIO, "cannot run '%s' on '%s': %s", sql, db->path,
            sqlite3_errmsg(db->sq));
    return 0;
}

struct db *
db_open(const char *path, const struct db_open_opts *o, struct err *err)
{
    struct db *db = xcalloc(1, sizeof(*db));
    bool create;
    int rc;

    db->blame_gen = 1;
    db->path = xstrdup(path);
    if (db_check_presence(path, o->guard, &create, err) < 0)
        goto fail;
    rc = sqlite3_open_v2(path, &db->sq,
        SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) |
            SQLITE_OPEN_NOMUTEX,
        NULL);
    if (rc != SQLITE_OK) {
        err_set(err, -EIO, "cannot open database '%s': %s", path,
            db->sq ? sqlite3_errmsg(db->sq) : sqlite3_errstr(rc));
        goto fail;
    }
    sqlite3_extended_result_codes(db->sq, 1);
    sqlite3_busy_timeout(db->sq, 5000);
    /* Before anything that could write (journal_mode writes a header
     * into an empty file). */
    if (!create &&
        db_check_content(db->sq, path, o->guard, o->check_ms, err) < 0)
        goto fail;
    if (db_pragma(db, "PRAGMA journal_mode = WAL", "wal", err) < 0 ||
        db_pragma(db,
            o->sync_full ? "PRAGMA synchronous = FULL"
                         : "PRAGMA synchronous = NORMAL",
            NULL, err) < 0 ||
        db_pragma(db, "PRAGMA foreign_keys = ON", NULL, err) < 0)
        goto fail;
    if (migrate_run(db->sq, path, err) < 0)
        goto fail;
    if (db_prepare_all(db, err) < 0)
        goto fail;
    if (o->guard && db_check_mark(path, err) < 0)
        goto fail;
    return db;
fail:
    db_close(db);
    return NULL;
}

void
db_close(struct db *db)
{
    if (db == NULL)
        return;
    if (db->rollback && db->in_txn)
        db_txn_rollback(db);
    db_repl_end(db);
    /* Slots not yet prepared are NULL, which finalize accepts. */
    for (size_t t = 0; t < DB_NTABLES; t++) {
        for (const struct db_stmt_def *d = db_stmt_tables[t]; d->sql; d++)
            sqlite3_finalize(*db_stmt_slot(db, d));
    }
    if (db->sq)
        sqlite3_close(db->sq);
    free(db->path);
    free(db);
}
