/*
 * db_event.c - the store's event log and API tokens
 *
 * Events are the audit log (append-only; pruned by age, event_retention_days)
 * of what happened to a job or a node, with who did it and why; a state change
 * and its event commit in the same transaction. Tokens are kept by hash only,
 * with the user and role they stand for.
 */
#include "scheduler/db.h"
#include "scheduler/db_int.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

/* ---- events ------------------------------------------------------------- */

static const char sql_event_insert[] =
    "INSERT INTO events (time_ms, actor, subject, kind, detail) "
    "VALUES (?1, ?2, ?3, ?4, ?5)";

int
db_event_insert(struct db *db, int64_t time_ms, const char *actor,
    const char *subject, const char *kind, const char *detail)
{
    return DB_WRITE(db, db->event_insert, "event insert", DB_INT(time_ms),
        DB_TEXT(actor), DB_TEXT(subject), DB_TEXT(kind),
        DB_TEXT(detail ? detail : "{}"));
}

static const char sql_events_subject[] =
    "SELECT id, time_ms, actor, subject, kind, detail FROM events "
    "WHERE subject = ?1 ORDER BY id DESC LIMIT ?2";

static int
event_row(sqlite3_stmt *st, void *arg)
{
    struct db_walk *w = arg;
    struct db_event ev = {
        .id = sqlite3_column_int64(st, 0),
        .time_ms = sqlite3_column_int64(st, 1),
        .actor = db_col_text(st, 2),
        .subject = db_col_text(st, 3),
        .kind = db_col_text(st, 4),
        .detail = db_col_text(st, 5),
    };

    return w->fn.event(&ev, w->arg);
}

int
db_events_foreach(struct db *db, const char *subject, int limit,
    db_event_fn *fn, void *arg)
{
    struct db_walk w = { .fn.event = fn, .arg = arg };

    return DB_ROWS(db, db->events_subject, "events list", event_row, &w,
        DB_TEXT(subject), DB_INT(limit));
}

/* ?1 subject, ?2 kind (GLOB), ?3 since_ms, ?4 after_id, ?5 limit. */
#define EVENTS_WHERE                                                           \
    "WHERE (?1 IS NULL OR subject = ?1) AND (?2 IS NULL OR kind GLOB ?2) "     \
    "AND time_ms >= ?3 AND id > ?4 "

static const char sql_events_recent[] =
    "SELECT * FROM (SELECT id, time_ms, actor, subject, kind, detail "
    "FROM events " EVENTS_WHERE "ORDER BY id DESC LIMIT ?5) ORDER BY id";

static const char sql_events_after[] =
    "SELECT id, time_ms, actor, subject, kind, detail FROM events " EVENTS_WHERE
    "ORDER BY id LIMIT ?5";

int
db_events_query(struct db *db, const struct db_event_filter *f, db_event_fn *fn,
    void *arg)
{
    struct db_walk w = { .fn.event = fn, .arg = arg };

    return DB_ROWS(db, f->after_id > 0 ? db->events_after : db->events_recent,
        "events query", event_row, &w, DB_OPT_TEXT(f->subject),
        DB_OPT_TEXT(f->kind), DB_INT(f->since_ms), DB_INT(f->after_id),
        DB_INT(f->limit));
}

static const char sql_events_prune[] =
    "DELETE FROM events WHERE id IN (SELECT id FROM events "
    "WHERE time_ms < ?1 LIMIT ?2)";

int
db_events_prune(struct db *db, int64_t before_ms, int max, int64_t *n)
{
    int rc = DB_WRITE(db, db->events_prune, "events prune", DB_INT(before_ms),
        DB_INT(max));

    *n = rc == 0 ? sqlite3_changes(db->sq) : 0;
    return rc;
}

/* ---- tokens ------------------------------------------------------------- */

static const char sql_token_insert[] =
    "INSERT INTO tokens (hash, user, role, created_ms, id) "
    "VALUES (?1, ?2, ?3, ?4, (SELECT coalesce(max(id), 0) + 1 FROM tokens))";

int
db_token_insert(struct db *db, const char *hash, const char *user,
    const char *role, int64_t created_ms)
{
    return DB_WRITE(db, db->token_insert, "token insert", DB_TEXT(hash),
        DB_TEXT(user), DB_TEXT(role), DB_INT(created_ms));
}

static const char sql_token_add[] =
    "INSERT INTO tokens (hash, user, role, created_ms, id, prefix, "
    "created_by, expires_ms) "
    "VALUES (?1, ?2, ?3, ?4, (SELECT coalesce(max(id), 0) + 1 FROM tokens), "
    "?5, ?6, ?7)";

#define TOKEN_COLS                                                             \
    "id, hash, user, role, prefix, created_by, created_ms, expires_ms, "       \
    "revoked_ms, last_used_ms "

static const char sql_token_lookup[] =
    "SELECT user, role FROM tokens WHERE hash = ?1";

struct token_found {
    char **user;
    char **role;
};

static int
token_found_row(sqlite3_stmt *st, void *arg)
{
    struct token_found *t = arg;

    *t->user = db_col_strdup(st, 0);
    *t->role = db_col_strdup(st, 1);
    return 0;
}

int
db_token_lookup(struct db *db, const char *hash, char **user, char **role)
{
    struct token_found t = { user, role };

    db_bind_text(db->token_lookup, 1, hash);
    return db_lookup(db, db->token_lookup, "token lookup", token_found_row, &t);
}

static const char sql_token_find[] = "SELECT " TOKEN_COLS
                                     "FROM tokens WHERE hash = ?1";

/* A row of TOKEN_COLS into *t (strings copied: db_token_release). */
static int
token_row(sqlite3_stmt *st, void *arg)
{
    struct db_token *t = arg;

    t->id = sqlite3_column_int64(st, 0);
    t->hash = db_col_strdup(st, 1);
    t->user = db_col_strdup(st, 2);
    t->role = db_col_strdup(st, 3);
    t->prefix = db_col_strdup(st, 4);
    t->created_by = db_col_strdup(st, 5);
    t->created_ms = sqlite3_column_int64(st, 6);
    t->expires_ms = sqlite3_column_int64(st, 7);
    t->revoked_ms = sqlite3_column_int64(st, 8);
    t->last_used_ms = sqlite3_column_int64(st, 9);
    return 0;
}

int
db_token_find(struct db *db, const char *hash, struct db_token *t)
{
    memset(t, 0, sizeof(*t));
    db_bind_text(db->token_find, 1, hash);
    return db_lookup(db, db->token_find, "token find", token_row, t);
}

int
db_token_add(struct db *db, const struct db_token *t, int64_t *id)
{
    struct db_token row;
    int rc = DB_WRITE(db, db->token_add, "token add", DB_TEXT(t->hash),
        DB_TEXT(t->user), DB_TEXT(t->role), DB_INT(t->created_ms),
        DB_TEXT(t->prefix), DB_TEXT(t->created_by), DB_INT(t->expires_ms));

    if (rc == 0 && (rc = db_token_find(db, t->hash, &row)) == 0) {
        *id = row.id;
        db_token_release(&row);
    }
    return rc;
}

static const char sql_token_get[] = "SELECT " TOKEN_COLS
                                    "FROM tokens WHERE id = ?1";

int
db_token_get(struct db *db, int64_t id, struct db_token *t)
{
    memset(t, 0, sizeof(*t));
    db_bind_vals(db->token_get, 1, (struct db_val[]){ DB_INT(id) }, 1);
    return db_lookup(db, db->token_get, "token get", token_row, t);
}

void
db_token_release(struct db_token *t)
{
    free(t->hash);
    free(t->user);
    free(t->role);
    free(t->prefix);
    free(t->created_by);
    memset(t, 0, sizeof(*t));
}

static const char sql_tokens_list[] =
    "SELECT " TOKEN_COLS "FROM tokens WHERE ?1 IS NULL OR user = ?1 "
    "ORDER BY id";

struct token_walk {
    db_token_fn *fn;
    void *arg;
};

static int
token_each(sqlite3_stmt *st, void *arg)
{
    struct token_walk *w = arg;
    struct db_token t;
    int rc;

    memset(&t, 0, sizeof(t));
    token_row(st, &t);
    rc = w->fn(&t, w->arg);
    db_token_release(&t);
    return rc;
}

int
db_tokens_foreach(struct db *db, const char *user, db_token_fn *fn, void *arg)
{
    struct token_walk w = { fn, arg };

    return DB_ROWS(db, db->tokens_list, "tokens list", token_each, &w,
        DB_IF(user != NULL, DB_TEXT(user)));
}

static const char sql_token_used[] =
    "UPDATE tokens SET last_used_ms = ?2 WHERE id = ?1";

int
db_token_used(struct db *db, int64_t id, int64_t now_ms)
{
    return DB_WRITE(db, db->token_used, "token last used", DB_INT(id),
        DB_INT(now_ms));
}

static const char sql_token_revoke[] =
    "UPDATE tokens SET revoked_ms = ?2 WHERE id = ?1 AND revoked_ms = 0";

int
db_token_revoke(struct db *db, int64_t id, int64_t now_ms)
{
    return DB_WRITE(db, db->token_revoke, "token revoke", DB_INT(id),
        DB_INT(now_ms));
}

const struct db_stmt_def db_event_stmts[] = {
    DB_STMT(event_insert),
    DB_STMT(events_subject),
    DB_STMT(events_recent),
    DB_STMT(events_after),
    DB_STMT(events_prune),
    DB_STMT(token_insert),
    DB_STMT(token_lookup),
    DB_STMT(token_add),
    DB_STMT(token_find),
    DB_STMT(token_get),
    DB_STMT(tokens_list),
    DB_STMT(token_used),
    DB_STMT(token_revoke),
    DB_STMT_END,
};
