/*
 * db_directive.c - the store's directives of attempts
 *
 * One row per directive (schema/0003): its kind, the step it applies at,
 * when it was issued and when every live rank had acknowledged it. Which
 * rank acknowledged is kept in memory only: agents repeat their acks for
 * as long as a directive is listed in their launch, so a scheduler that
 * restarts hears them again.
 */
#include "scheduler/db.h"
#include "scheduler/db_int.h"

#include <sqlite3.h>

#include "common/log.h"

/* Both take a directive's row bound in the order of its columns (?1 to
 * ?7), so that one function binds it; the update uses the key and
 * done_ms. */
static const char sql_directive_insert[] =
    "INSERT INTO directives (job_id, attempt, seq, kind, step, issued_ms, "
    "done_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";

static const char sql_directive_done[] =
    "UPDATE directives SET done_ms = ?7 "
    "WHERE job_id = ?1 AND attempt = ?2 AND seq = ?3";

/* Write the row of a's directive d with st, one of the two above. */
static int
directive_write(struct db *db, sqlite3_stmt *st, const char *label,
    const struct attempt *a, const struct attempt_directive *d)
{
    return DB_WRITE(db, st, label, DB_INT(a->job_id), DB_INT(a->num),
        DB_INT((sqlite3_int64)d->seq),
        DB_TEXT(proto_directive_kind_str(d->kind)), DB_INT(d->step),
        DB_INT(d->issued_ms), DB_INT(d->done_ms));
}

int
db_directive_insert(struct db *db, const struct attempt *a,
    const struct attempt_directive *d)
{
    return directive_write(db, db->directive_insert, "directive insert", a, d);
}

int
db_directive_done(struct db *db, const struct attempt *a,
    const struct attempt_directive *d)
{
    return directive_write(db, db->directive_done, "directive done", a, d);
}

static const char sql_directives_of[] =
    "SELECT seq, kind, step, issued_ms, done_ms FROM directives "
    "WHERE job_id = ?1 AND attempt = ?2 ORDER BY seq";

/* Add the directive of a row of sql_directives_of to the attempt (arg).
 * A kind this scheduler does not know (a newer one wrote it) is kept
 * out: nothing here could carry it out. */
static int
directive_row(sqlite3_stmt *st, void *arg)
{
    struct attempt *a = arg;
    enum proto_directive_kind kind;
    uint64_t seq = (uint64_t)sqlite3_column_int64(st, 0);

    if (proto_directive_kind_parse(db_col_text(st, 1), &kind) < 0) {
        log_warn("job=%lld attempt=%d: directive %llu of unknown kind '%s' "
                 "ignored",
            (long long)a->job_id, a->num, (unsigned long long)seq,
            db_col_text(st, 1));
        if (seq > a->directive_seq)
            a->directive_seq = seq;
        return 0;
    }
    attempt_directive_load(a, seq, kind, sqlite3_column_int64(st, 2),
        sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 4));
    return 0;
}

int
db_directives_load(struct db *db, struct attempt *a)
{
    db_bind_attempt_key(db->directives_of, 1, a->job_id, a->num);
    return db_rows(db, db->directives_of, "directives load", directive_row, a);
}

const struct db_stmt_def db_directive_stmts[] = {
    DB_STMT(directive_insert),
    DB_STMT(directive_done),
    DB_STMT(directives_of),
    DB_STMT_END,
};
