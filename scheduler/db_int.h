/*
 * db_int.h - the store's private interface, shared by its files only
 *
 * The store (db.h) is split by concern, one file each:
 *
 *   db.c          open, close, pragmas, transactions, the statement
 *                 table, the error mapper and the generic row loops
 *   db_col.c      values in and out of columns: text binds, column
 *                 copies, and the JSON text that lists and maps are
 *                 stored as
 *   db_node.c     nodes
 *   db_job.c      jobs
 *   db_attempt.c  attempts with their placements and ranks
 *   db_directive.c  the directives of attempts
 *   db_ckpt.c     complete checkpoints and per-rank commits
 *   db_stats.c    per-rank step, gc and checkpoint figures by window
 *   db_blame.c    blame put on nodes, and its withdrawal
 *   db_history.c  failure history (crash loops) and goodput rows
 *   db_event.c    the event log and API tokens
 *   db_obs.c      the alert queue and the counts behind /metrics
 *   db_health.c   node health: findings, checks' latest runs, history
 *   db_check.c    refusing a lost or damaged database at open
 *   db_copy.c     whole-database copies (the online backup)
 *   db_repl.c     replication: each transaction's changeset, applying
 *                 another replica's, the whole database as an image
 *   db_migrate.c  schema migrations (needs none of this header)
 *
 * Only these files include sqlite3.h, and each does so itself: this header
 * names SQLite's types by their struct tags, so nothing outside the store
 * can reach SQLite through it. No file but the store's includes it.
 *
 * Every statement is prepared once in db_open, from the tables each
 * concern file exports below, into a named slot of struct db; db_close
 * finalizes them. A function uses a statement through these helpers, so
 * that every exit resets it and clears its bindings (db_exec, db_write,
 * db_rows, db_lookup, DB_WRITE and DB_ROWS, or db_done by hand).
 *
 * Threading: the loop thread only, like db.h.
 */
#ifndef SCHEDULER_DB_INT_H
#define SCHEDULER_DB_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "scheduler/db.h"

struct sqlite3_stmt;
struct sqlite3_session;

struct db {
    struct sqlite3 *sq;
    char *path;
    bool in_txn;
    bool repl;                       /* record changes (db_repl.c) */
    struct sqlite3_session *session; /* the open transaction's */
    uint64_t blame_gen; /* db_blame_gen: bumped by every blame write */
    int wal_pages;      /* db_wal.c: the WAL's pages at the last commit */

    /* db.c */
    struct sqlite3_stmt *begin;
    struct sqlite3_stmt *commit;
    struct sqlite3_stmt *rollback;
    struct sqlite3_stmt *user_version;
    /* db_node.c */
    struct sqlite3_stmt *node_insert;
    struct sqlite3_stmt *node_update;
    struct sqlite3_stmt *node_touch;
    struct sqlite3_stmt *node_witness;
    struct sqlite3_stmt *node_remove;
    struct sqlite3_stmt *nodes_all;
    /* db_job.c */
    struct sqlite3_stmt *job_insert;
    struct sqlite3_stmt *job_update;
    struct sqlite3_stmt *job_get;
    struct sqlite3_stmt *jobs_unfinished;
    struct sqlite3_stmt *jobs_all;
    struct sqlite3_stmt *jobs_live;
    struct sqlite3_stmt *jobs_state;
    struct sqlite3_stmt *jobs_user_all;
    struct sqlite3_stmt *jobs_user_live;
    struct sqlite3_stmt *jobs_user_state;
    struct sqlite3_stmt *jobs_ended;
    struct sqlite3_stmt *jobs_user_ended;
    /* db_attempt.c */
    struct sqlite3_stmt *attempt_insert;
    struct sqlite3_stmt *placement_insert;
    struct sqlite3_stmt *rank_insert;
    struct sqlite3_stmt *attempt_update;
    struct sqlite3_stmt *rank_update;
    struct sqlite3_stmt *placement_release;
    struct sqlite3_stmt *attempt_get;
    struct sqlite3_stmt *rank_node;
    struct sqlite3_stmt *attempts_job;
    struct sqlite3_stmt *attempts_live;
    struct sqlite3_stmt *placements_of;
    struct sqlite3_stmt *ranks_of;
    /* db_directive.c */
    struct sqlite3_stmt *directive_insert;
    struct sqlite3_stmt *directive_done;
    struct sqlite3_stmt *directives_of;
    /* db_stats.c */
    struct sqlite3_stmt *rank_stat_insert;
    struct sqlite3_stmt *rank_stats_prune;
    struct sqlite3_stmt *rank_stats_job;
    struct sqlite3_stmt *rank_section_insert;
    struct sqlite3_stmt *rank_sections_prune;
    struct sqlite3_stmt *rank_sections_job;
    /* db_ckpt.c */
    struct sqlite3_stmt *checkpoint_insert;
    struct sqlite3_stmt *checkpoints_job;
    struct sqlite3_stmt *commit_insert;
    struct sqlite3_stmt *commits_attempt;
    /* db_blame.c */
    struct sqlite3_stmt *blame_insert;
    struct sqlite3_stmt *blame_withdraw;
    struct sqlite3_stmt *failure_unblame;
    struct sqlite3_stmt *blame_settle;
    struct sqlite3_stmt *blame_reset;
    struct sqlite3_stmt *blame_node;
    struct sqlite3_stmt *blame_history;
    struct sqlite3_stmt *blame_job;
    struct sqlite3_stmt *blame_provisional;
    /* db_history.c */
    struct sqlite3_stmt *failures_job;
    struct sqlite3_stmt *placement_nodes;
    struct sqlite3_stmt *goodput_all;
    struct sqlite3_stmt *goodput_job;
    /* db_health.c */
    struct sqlite3_stmt *finding_insert;
    struct sqlite3_stmt *finding_update;
    struct sqlite3_stmt *findings_prune;
    struct sqlite3_stmt *findings_node;
    struct sqlite3_stmt *findings_open;
    struct sqlite3_stmt *check_put;
    struct sqlite3_stmt *checks_all;
    struct sqlite3_stmt *result_insert;
    struct sqlite3_stmt *results_prune;
    struct sqlite3_stmt *results_node;
    struct sqlite3_stmt *findings_forget;
    struct sqlite3_stmt *checks_forget;
    /* db_event.c */
    struct sqlite3_stmt *event_insert;
    struct sqlite3_stmt *events_subject;
    struct sqlite3_stmt *token_insert;
    struct sqlite3_stmt *token_lookup;
    struct sqlite3_stmt *token_add;
    struct sqlite3_stmt *token_find;
    struct sqlite3_stmt *token_get;
    struct sqlite3_stmt *tokens_list;
    struct sqlite3_stmt *token_used;
    struct sqlite3_stmt *token_revoke;
    struct sqlite3_stmt *events_recent;
    struct sqlite3_stmt *events_after;
    struct sqlite3_stmt *events_prune;
    /* db_repl.c */
    struct sqlite3_stmt *replica_set;
    struct sqlite3_stmt *replica_url;
    /* db_obs.c */
    struct sqlite3_stmt *alert_insert;
    struct sqlite3_stmt *alert_count;
    struct sqlite3_stmt *alert_oldest;
    struct sqlite3_stmt *alert_retry;
    struct sqlite3_stmt *alert_delete;
    struct sqlite3_stmt *jobs_by_state;
    struct sqlite3_stmt *attempts_by_state;
};

/* ---- the statement table ------------------------------------------------ */

/* One prepared statement: where it lives in struct db and its SQL text
 * (a static const char[] next to the function that uses it). */
struct db_stmt_def {
    size_t offset;
    const char *sql;
};

/* The statement in slot field, whose SQL is the static const char
 * sql_<field>[] of the same file. */
/* clang-format off */
#define DB_STMT(field) { offsetof(struct db, field), sql_##field }
#define DB_STMT_END { 0, NULL }
/* clang-format on */

/* Each concern file's statements, ended by DB_STMT_END; db_open prepares
 * them all. */
extern const struct db_stmt_def db_node_stmts[];
extern const struct db_stmt_def db_job_stmts[];
extern const struct db_stmt_def db_attempt_stmts[];
extern const struct db_stmt_def db_directive_stmts[];
extern const struct db_stmt_def db_ckpt_stmts[];
extern const struct db_stmt_def db_stats_stmts[];
extern const struct db_stmt_def db_blame_stmts[];
extern const struct db_stmt_def db_history_stmts[];
extern const struct db_stmt_def db_event_stmts[];
extern const struct db_stmt_def db_obs_stmts[];
extern const struct db_stmt_def db_health_stmts[];
extern const struct db_stmt_def db_repl_stmts[];

/* ---- errors and stepping (db.c) ----------------------------------------- */

/* Log a failure once, with its call-site label, sqlite3_errmsg and the
 * extended code, and map rc to a negative errno as db.h says. */
int db_fail(struct db *db, const char *label, int rc);

/* Reset st and clear its bindings (a reset alone keeps them). */
void db_done(struct sqlite3_stmt *st);

/* Step a statement that returns no rows, then db_done it. 0, or
 * db_fail's errno. */
int db_exec(struct db *db, struct sqlite3_stmt *st, const char *label);

/* A write: begin the iteration's transaction if none is open, then
 * db_exec. The values may be bound before the call; st is reset and its
 * bindings cleared on every path, a failed begin included. */
int db_write(struct db *db, struct sqlite3_stmt *st, const char *label);

/* Called with st on a row. Column text is valid only for the call: copy
 * what is kept. A non-zero return stops the walk and is returned. */
typedef int db_row_fn(struct sqlite3_stmt *st, void *arg);

/* The one row loop. Step st (bound already) and call row for each row,
 * until the rows end (0), row returns non-zero (that value) or a step
 * fails (db_fail's errno, logged with label). st is reset and its
 * bindings cleared on every path. */
int db_rows(struct db *db, struct sqlite3_stmt *st, const char *label,
    db_row_fn *row, void *arg);

/* A lookup: like db_rows but for the first row only; -ENOENT, not
 * logged, when there is none. */
int db_lookup(struct db *db, struct sqlite3_stmt *st, const char *label,
    db_row_fn *row, void *arg);

/* A caller's callback and its argument, carried through db_rows (as its
 * arg) to the row function that decodes each row and calls the member of
 * fn that matches the query. */
struct db_walk {
    union {
        db_job_fn *job;
        db_checkpoint_fn *checkpoint;
        db_rank_stat_fn *rank_stat;
        db_rank_section_fn *rank_section;
        db_commit_fn *commit;
        db_blame_fn *blame;
        db_goodput_fn *goodput;
        db_event_fn *event;
        db_finding_fn *finding;
        db_health_result_fn *health_result;
    } fn;
    void *arg;
};

/* ---- replication (db_repl.c) -------------------------------------------- */

/* With replication on, start recording the transaction db_txn_begin just
 * opened (a session over every table); else nothing. 0 or db_fail's. */
int db_repl_begin(struct db *db);
/* Stop recording (the transaction ended either way). */
void db_repl_end(struct db *db);

/* Add the directives of a (bound by the caller's key) to it
 * (db_directive.c). */
int db_directives_load(struct db *db, struct attempt *a);

/* ---- values in and out of columns (db_col.c) ---------------------------- */

/* Bind s as text ("" for NULL), copied. */
void db_bind_text(struct sqlite3_stmt *st, int i, const char *s);

/* One value of a row to bind: an integer (of any C integer type; SQLite
 * stores it the same however it was bound), a text ("" for NULL), a text
 * or NULL, or NULL. Texts are copied when bound. */
struct db_val {
    enum db_val_type {
        DB_VAL_NULL,
        DB_VAL_INT,
        DB_VAL_TEXT,     /* NULL binds "" */
        DB_VAL_OPT_TEXT, /* NULL binds NULL */
    } type;
    int64_t i;
    const char *s;
};

#define DB_INT(v) ((struct db_val){ .type = DB_VAL_INT, .i = (int64_t)(v) })
#define DB_TEXT(v) ((struct db_val){ .type = DB_VAL_TEXT, .s = (v) })
#define DB_OPT_TEXT(v) ((struct db_val){ .type = DB_VAL_OPT_TEXT, .s = (v) })
#define DB_NULL ((struct db_val){ .type = DB_VAL_NULL })
/* v when cond holds, else NULL. */
#define DB_IF(cond, v) ((cond) ? (v) : DB_NULL)

/* Bind the n values of v to ?first, ?first+1, ... in order. */
void db_bind_vals(struct sqlite3_stmt *st, int first, const struct db_val *v,
    size_t n);
/* The values listed, as the array and its length that db_bind_vals and
 * the calls below take, so a statement's values read in the order of its
 * columns. */
#define DB_VALS(...)                                                           \
    (const struct db_val[]){ __VA_ARGS__ },                                    \
        sizeof((const struct db_val[]){ __VA_ARGS__ }) / sizeof(struct db_val)
/* db_bind_vals of the values listed: DB_BIND(st, 1, DB_INT(id),
 * DB_TEXT(name)). */
#define DB_BIND(st, first, ...)                                                \
    db_bind_vals((st), (first), DB_VALS(__VA_ARGS__))

/* Bind v to ?1, ?2, ... and db_write st: a write in one call. */
int db_write_vals(struct db *db, struct sqlite3_stmt *st, const char *label,
    const struct db_val *v, size_t n);
/* db_write_vals of the values listed:
 * DB_WRITE(db, db->node_touch, "node touch", DB_TEXT(name), DB_INT(ms)). */
#define DB_WRITE(db, st, label, ...)                                           \
    db_write_vals((db), (st), (label), DB_VALS(__VA_ARGS__))

/* Bind v to ?1, ?2, ... and db_rows st: a query in one call. */
int db_rows_vals(struct db *db, struct sqlite3_stmt *st, const char *label,
    db_row_fn *row, void *arg, const struct db_val *v, size_t n);
/* db_rows_vals of the values listed. */
#define DB_ROWS(db, st, label, row, arg, ...)                                  \
    db_rows_vals((db), (st), (label), (row), (arg), DB_VALS(__VA_ARGS__))
/* Bind ?first and ?first+1 to an attempt's key (job id, attempt). */
void db_bind_attempt_key(struct sqlite3_stmt *st, int first, int64_t job_id,
    int attempt);

/* The column's text, borrowed until the next step or reset ("" for
 * NULL). */
const char *db_col_text(struct sqlite3_stmt *st, int i);
/* The column's text as a new string ("" for NULL); caller frees. */
char *db_col_strdup(struct sqlite3_stmt *st, int i);
bool db_col_is_null(struct sqlite3_stmt *st, int i);

/* Lists and maps as JSON text. The encoders return a new string (caller
 * frees). The decoders set *out to a new array with one spare zeroed
 * element (so string vectors are NULL-terminated; caller frees it and,
 * for strings, each element) and *n to its length; -EIO, with *out
 * untouched, when text is not the expected JSON container. */
/* An attempt's failure evidence in DB_EVIDENCE_NCOLS columns from ?first
 * (failure_node .. failure_blame; NULL where a field does not apply), and
 * back from the column first of a row (kind is the caller's). */
#define DB_EVIDENCE_COLUMNS                                                    \
    "failure_node, failure_rank, failure_exit_code, failure_signal, "          \
    "failure_fenced, failure_last_step, failure_heartbeat_ms, "                \
    "failure_idle_ms, failure_source, failure_actor, failure_stderr, "         \
    "failure_evidence_ms, failure_blame"
#define DB_EVIDENCE_NCOLS 13
void db_bind_evidence(struct sqlite3_stmt *st, int first,
    const struct evidence *e);
void db_col_evidence(struct sqlite3_stmt *st, int first, struct evidence *e);

char *db_json_int_array(const int *v, size_t n);
char *db_json_kv(const struct proto_kv *kv, size_t n);
char *db_json_strv(char *const *v, size_t n);
int db_unjson_int_array(const char *text, int **out, size_t *n);
int db_unjson_kv(const char *text, struct proto_kv **out, size_t *n);
int db_unjson_strv(const char *text, char ***out, size_t *n);

/* ---- db_check.c: start-up checks (db_open) ----------------------------- */

struct sqlite3;

/* Whether path must be created (*create), or may be opened as it is;
 * -ENODATA with err set when it is missing but, with guard, something
 * shows it existed. */
int db_check_presence(const char *path, bool guard, bool *create,
    struct err *err);
/* Whether an SQLite result code says the file is damaged. */
bool db_check_damage_code(int rc);
/* err set to "database 'path' is damaged: why"; returns -EUCLEAN. */
int db_check_damaged(const char *path, const char *why, struct err *err);
/* The checks of an open database: no schema where the marker says there
 * was one (with guard), then PRAGMA quick_check within check_ms (0:
 * none). 0, or -EUCLEAN (damaged) or -EIO with err set. */
int db_check_content(struct sqlite3 *sq, const char *path, bool guard,
    int64_t check_ms, struct err *err);
/* Write path's marker (durably) unless it is there. */
int db_check_mark(const char *path, struct err *err);

#endif
