/*
 * db_attempt.c - the store's attempts, with their placements and ranks
 *
 * An attempt is one start of a job. Its placements (which node holds
 * which node rank, with the GPUs, CPUs and memory given) and its ranks
 * (how each rank is doing or how it ended) live in their own tables,
 * written with the attempt and read back into it. Reads first collect
 * the attempt rows, then load each one's children, so the child queries
 * never run while the outer statement is still stepping.
 */
#include "scheduler/db.h"
#include "scheduler/db_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <sqlite3.h>

#include "common/log.h"
#include "common/xalloc.h"

/* ---- writes ------------------------------------------------------------- */

static const char sql_attempt_insert[] =
    "INSERT INTO attempts (job_id, attempt, state, reason, start_ms, "
    "end_ms, nodes, ranks_per_node, master_addr, master_port, resume_step, "
    "resume_from) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)";

static const char sql_placement_insert[] =
    "INSERT INTO placements (job_id, attempt, node_rank, node, gpus, cpus, "
    "memory_mb, gen, released) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)";

static const char sql_rank_insert[] =
    "INSERT INTO ranks (job_id, attempt, rank, node, local_rank, state, "
    "pid, start_ms, end_ms, exit_code, signal, stderr_tail, step, fenced, "
    "dump) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, "
    "?15)";

/* Bind a rank's changing columns from ?first on (state .. dump). */
static void
rank_bind(sqlite3_stmt *st, const struct attempt_rank *r, int first)
{
    DB_BIND(st, first, DB_TEXT(proto_rank_state_str(r->state)), DB_INT(r->pid),
        DB_INT(r->start_ms), DB_INT(r->end_ms),
        DB_IF(r->has_exit, DB_INT(r->exit_code)),
        DB_IF(r->has_exit, DB_INT(r->signal)), DB_TEXT(r->stderr_tail),
        DB_INT(r->step), DB_INT(r->fenced), DB_TEXT(r->dump));
}

static int
placement_insert(struct db *db, const struct attempt *a,
    const struct placement *p)
{
    sqlite3_stmt *st = db->placement_insert;
    char *gpus = db_json_int_array(p->gpus, p->ngpus);

    DB_BIND(st, 1, DB_INT(a->job_id), DB_INT(a->num), DB_INT(p->node_rank),
        DB_TEXT(p->node_name), DB_TEXT(gpus), DB_INT(p->cpus),
        DB_INT(p->memory_mb), DB_INT((sqlite3_int64)p->gen),
        DB_INT(p->released));
    free(gpus);
    return db_write(db, st, "placement insert");
}

static int
rank_insert(struct db *db, const struct attempt *a,
    const struct attempt_rank *rk)
{
    sqlite3_stmt *st = db->rank_insert;

    DB_BIND(st, 1, DB_INT(a->job_id), DB_INT(a->num), DB_INT(rk->rank),
        DB_TEXT(a->placements[rk->node_rank].node_name),
        DB_INT(rk->local_rank));
    rank_bind(st, rk, 6);
    return db_write(db, st, "rank insert");
}

int
db_attempt_insert(struct db *db, const struct attempt *a)
{
    sqlite3_stmt *st = db->attempt_insert;
    int rc;

    DB_BIND(st, 1, DB_INT(a->job_id), DB_INT(a->num),
        DB_TEXT(proto_attempt_state_str(a->state)), DB_TEXT(a->reason),
        DB_INT(a->start_ms), DB_INT(a->end_ms), DB_INT(a->nnodes),
        DB_INT(a->ranks_per_node), DB_TEXT(a->master_addr),
        DB_INT(a->master_port), DB_INT(a->resume_step),
        DB_TEXT(a->resume_from));
    if ((rc = db_write(db, st, "attempt insert")) < 0)
        return rc;
    for (int k = 0; k < a->nnodes; k++) {
        if ((rc = placement_insert(db, a, &a->placements[k])) < 0)
            return rc;
    }
    for (size_t r = 0; r < a->nranks; r++) {
        if ((rc = rank_insert(db, a, &a->ranks[r])) < 0)
            return rc;
    }
    return 0;
}

static const char sql_attempt_update[] =
    "UPDATE attempts SET state = ?3, reason = ?4, end_ms = ?5, "
    "running_ms = ?6, failed_ms = ?7, detected_ms = ?8, released_ms = ?9, "
    "failure_kind = ?10, dump_deadline_ms = ?11, hang_seq = ?12, "
    "failure_node = ?13, failure_rank = ?14, failure_exit_code = ?15, "
    "failure_signal = ?16, failure_fenced = ?17, failure_last_step = ?18, "
    "failure_heartbeat_ms = ?19, failure_idle_ms = ?20, "
    "failure_source = ?21, failure_actor = ?22, failure_stderr = ?23, "
    "failure_evidence_ms = ?24, failure_blame = ?25 "
    "WHERE job_id = ?1 AND attempt = ?2";

int
db_attempt_update(struct db *db, const struct attempt *a)
{
    DB_BIND(db->attempt_update, 1, DB_INT(a->job_id), DB_INT(a->num),
        DB_TEXT(proto_attempt_state_str(a->state)), DB_TEXT(a->reason),
        DB_INT(a->end_ms), DB_INT(a->running_ms), DB_INT(a->failed_ms),
        DB_INT(a->detected_ms), DB_INT(a->released_ms),
        DB_TEXT(a->has_failure ? policy_kind_str(a->failure.kind) : ""),
        DB_INT(a->dump_deadline_ms), DB_INT((sqlite3_int64)a->hang_seq));
    db_bind_evidence(db->attempt_update, 13, &a->failure);
    return db_write(db, db->attempt_update, "attempt update");
}

static const char sql_rank_update[] =
    "UPDATE ranks SET state = ?4, pid = ?5, start_ms = ?6, end_ms = ?7, "
    "exit_code = ?8, signal = ?9, stderr_tail = ?10, step = ?11, "
    "fenced = ?12, dump = ?13 "
    "WHERE job_id = ?1 AND attempt = ?2 AND rank = ?3";

int
db_rank_update(struct db *db, const struct attempt *a,
    const struct attempt_rank *r)
{
    sqlite3_stmt *st = db->rank_update;

    DB_BIND(st, 1, DB_INT(a->job_id), DB_INT(a->num), DB_INT(r->rank));
    rank_bind(st, r, 4);
    return db_write(db, st, "rank update");
}

static const char sql_placement_release[] =
    "UPDATE placements SET released = 1 "
    "WHERE job_id = ?1 AND attempt = ?2 AND node_rank = ?3";

int
db_placement_release(struct db *db, const struct placement *p)
{
    return DB_WRITE(db, db->placement_release, "placement release",
        DB_INT(p->attempt->job_id), DB_INT(p->attempt->num),
        DB_INT(p->node_rank));
}

/* ---- children: placements and ranks ------------------------------------- */

static const char sql_placements_of[] =
    "SELECT node_rank, node, gpus, cpus, memory_mb, gen, released "
    "FROM placements WHERE job_id = ?1 AND attempt = ?2 ORDER BY node_rank";

static const char sql_ranks_of[] =
    "SELECT rank, state, pid, start_ms, end_ms, exit_code, signal, "
    "stderr_tail, step, fenced, dump FROM ranks "
    "WHERE job_id = ?1 AND attempt = ?2 ORDER BY rank";

/* Fill the attempt's (arg) placement from a row of sql_placements_of. A
 * node rank outside the attempt is skipped. */
static int
placement_row(sqlite3_stmt *st, void *arg)
{
    struct attempt *a = arg;
    int k = sqlite3_column_int(st, 0);
    struct placement *p;

    if (k < 0 || k >= a->nnodes)
        return 0;
    p = &a->placements[k];
    free(p->node_name);
    p->node_name = db_col_strdup(st, 1);
    free(p->gpus);
    p->gpus = NULL;
    if (db_unjson_int_array(db_col_text(st, 2), &p->gpus, &p->ngpus) < 0) {
        log_error("database: job %lld attempt %d has malformed gpus",
            (long long)a->job_id, a->num);
        return -EIO;
    }
    p->cpus = sqlite3_column_int(st, 3);
    p->memory_mb = sqlite3_column_int64(st, 4);
    p->gen = (uint64_t)sqlite3_column_int64(st, 5);
    p->released = sqlite3_column_int(st, 6) != 0;
    return 0;
}

/* Fill the attempt's (arg) rank from a row of sql_ranks_of. A rank
 * outside the attempt is skipped. */
static int
rank_row(sqlite3_stmt *st, void *arg)
{
    struct attempt *a = arg;
    int r = sqlite3_column_int(st, 0);
    struct attempt_rank *rk;

    if (r < 0 || (size_t)r >= a->nranks)
        return 0;
    rk = &a->ranks[r];
    proto_rank_state_parse(db_col_text(st, 1), &rk->state);
    rk->pid = sqlite3_column_int(st, 2);
    rk->start_ms = sqlite3_column_int64(st, 3);
    rk->end_ms = sqlite3_column_int64(st, 4);
    rk->has_exit = !db_col_is_null(st, 5);
    rk->exit_code = sqlite3_column_int(st, 5);
    rk->signal = sqlite3_column_int(st, 6);
    free(rk->stderr_tail);
    rk->stderr_tail = db_col_strdup(st, 7);
    rk->step = sqlite3_column_int64(st, 8);
    rk->fenced = sqlite3_column_int(st, 9) != 0;
    free(rk->dump);
    rk->dump = db_col_strdup(st, 10);
    return 0;
}

/* Fill a's placements and ranks from their tables. */
static int
attempt_load_children(struct db *db, struct attempt *a)
{
    int rc;

    db_bind_attempt_key(db->placements_of, 1, a->job_id, a->num);
    rc = db_rows(db, db->placements_of, "placements load", placement_row, a);
    if (rc < 0)
        return rc;
    db_bind_attempt_key(db->ranks_of, 1, a->job_id, a->num);
    rc = db_rows(db, db->ranks_of, "ranks load", rank_row, a);
    if (rc < 0)
        return rc;
    attempt_recount(a);
    return db_directives_load(db, a);
}

/* ---- reads -------------------------------------------------------------- */

#define ATTEMPT_COLUMNS                                                        \
    "job_id, attempt, state, reason, start_ms, end_ms, nodes, "                \
    "ranks_per_node, master_addr, master_port, resume_step, resume_from, "     \
    "running_ms, failed_ms, detected_ms, released_ms, failure_kind, "          \
    "dump_deadline_ms, hang_seq, " DB_EVIDENCE_COLUMNS

/* Columns 16 on (failure_kind, dump_deadline_ms, hang_seq, the evidence):
 * the attempt's failure, or the evidence of a hang waiting for its
 * dumps. */
static void
attempt_failure_from_row(sqlite3_stmt *st, struct attempt *a)
{
    const char *kind = db_col_text(st, 16);

    a->dump_deadline_ms = sqlite3_column_int64(st, 17);
    a->hang_seq = (uint64_t)sqlite3_column_int64(st, 18);
    if (kind[0] == '\0' && a->dump_deadline_ms <= 0)
        return;
    evidence_init(&a->failure, POLICY_KIND_HANG);
    db_col_evidence(st, 19, &a->failure);
    a->has_failure = kind[0] != '\0';
    if (a->has_failure && policy_kind_parse(kind, &a->failure.kind) < 0)
        a->failure.kind = POLICY_KIND_RANK_EXIT;
}

/* An attempt from a row of ATTEMPT_COLUMNS, without children. NULL when
 * the row is malformed. */
static struct attempt *
attempt_from_row(sqlite3_stmt *st)
{
    int nnodes = sqlite3_column_int(st, 6);
    int rpn = sqlite3_column_int(st, 7);
    struct attempt *a;

    if (nnodes < 1 || nnodes > PROTO_NODES_MAX || rpn < 1 ||
        rpn > PROTO_RANKS_PER_NODE_MAX)
        return NULL;
    a = attempt_create(sqlite3_column_int64(st, 0), sqlite3_column_int(st, 1),
        nnodes, rpn);
    if (proto_attempt_state_parse(db_col_text(st, 2), &a->state) < 0) {
        attempt_destroy(a);
        return NULL;
    }
    attempt_set_reason(a, db_col_text(st, 3));
    a->start_ms = sqlite3_column_int64(st, 4);
    a->end_ms = sqlite3_column_int64(st, 5);
    free(a->master_addr);
    a->master_addr = db_col_strdup(st, 8);
    a->master_port = sqlite3_column_int(st, 9);
    attempt_set_resume(a, sqlite3_column_int64(st, 10), db_col_text(st, 11));
    a->running_ms = sqlite3_column_int64(st, 12);
    a->failed_ms = sqlite3_column_int64(st, 13);
    a->detected_ms = sqlite3_column_int64(st, 14);
    a->released_ms = sqlite3_column_int64(st, 15);
    attempt_failure_from_row(st, a);
    return a;
}

struct attempt_vec {
    struct attempt **v;
    size_t n;
};

static int
attempt_vec_push(struct attempt *a, void *arg)
{
    struct attempt_vec *vec = arg;

    vec->v = xreallocarray(vec->v, vec->n + 1, sizeof(*vec->v));
    vec->v[vec->n++] = a;
    return 0;
}

/* Collect the row's attempt into the vector (arg). */
static int
attempt_collect_row(sqlite3_stmt *st, void *arg)
{
    struct attempt *a = attempt_from_row(st);

    if (a == NULL) {
        log_error("database: an attempt of job %lld is malformed",
            (long long)sqlite3_column_int64(st, 0));
        return -EIO;
    }
    return attempt_vec_push(a, arg);
}

/* Run an attempt query (bound already) and hand each attempt, with its
 * children, to fn, which takes ownership. The rows are collected first
 * so fn and the children queries never interleave with the outer
 * statement. */
static int
attempts_collect(struct db *db, sqlite3_stmt *st, const char *label,
    db_attempt_fn *fn, void *arg)
{
    struct attempt_vec vec = { NULL, 0 };
    size_t i;
    int rc;

    rc = db_rows(db, st, label, attempt_collect_row, &vec);
    for (i = 0; rc == 0 && i < vec.n; i++) {
        rc = attempt_load_children(db, vec.v[i]);
        if (rc == 0) {
            rc = fn(vec.v[i], arg);
            vec.v[i] = NULL;
        }
    }
    for (i = 0; i < vec.n; i++)
        attempt_destroy(vec.v[i]);
    free(vec.v);
    return rc;
}

static const char sql_attempt_get[] = "SELECT " ATTEMPT_COLUMNS
                                      " FROM attempts "
                                      "WHERE job_id = ?1 AND attempt = ?2";

static int
attempt_take_one(struct attempt *a, void *arg)
{
    struct attempt **out = arg;

    *out = a;
    return 0;
}

int
db_attempt_get(struct db *db, int64_t job_id, int num, struct attempt **out)
{
    int rc;

    *out = NULL;
    db_bind_attempt_key(db->attempt_get, 1, job_id, num);
    rc = attempts_collect(db, db->attempt_get, "attempt get", attempt_take_one,
        out);
    if (rc == 0 && *out == NULL)
        return -ENOENT;
    return rc;
}

static const char sql_attempts_job[] = "SELECT " ATTEMPT_COLUMNS
                                       " FROM attempts WHERE job_id = ?1 "
                                       "ORDER BY attempt";

int
db_attempts_load_job(struct db *db, int64_t job_id, struct attempt ***out,
    size_t *n)
{
    struct attempt_vec vec = { NULL, 0 };
    int rc;

    sqlite3_bind_int64(db->attempts_job, 1, job_id);
    rc = attempts_collect(db, db->attempts_job, "attempts load",
        attempt_vec_push, &vec);
    if (rc < 0) {
        for (size_t i = 0; i < vec.n; i++)
            attempt_destroy(vec.v[i]);
        free(vec.v);
        vec.v = NULL;
        vec.n = 0;
    }
    *out = vec.v;
    *n = vec.n;
    return rc;
}

static const char sql_attempts_live[] =
    "SELECT " ATTEMPT_COLUMNS " FROM attempts "
    "WHERE state IN ('STARTING', 'RUNNING') "
    "UNION "
    "SELECT " ATTEMPT_COLUMNS " FROM attempts WHERE (job_id, attempt) IN "
    "(SELECT job_id, attempt FROM placements WHERE released = 0) "
    "ORDER BY job_id, attempt";

int
db_attempts_load_live(struct db *db, db_attempt_fn *fn, void *arg)
{
    return attempts_collect(db, db->attempts_live, "live attempts load", fn,
        arg);
}

/* The world size of (job, attempt) and the node of rank ?3's node rank
 * (NULL when the rank is past the world). */
static const char sql_rank_node[] =
    "SELECT a.nodes * a.ranks_per_node, p.node FROM attempts a "
    "LEFT JOIN placements p ON p.job_id = a.job_id "
    "AND p.attempt = a.attempt AND p.node_rank = ?3 / a.ranks_per_node "
    "WHERE a.job_id = ?1 AND a.attempt = ?2";

struct rank_node_arg {
    int rank;
    char *node;
    size_t cap;
    bool found;
};

static int
rank_node_row(sqlite3_stmt *st, void *arg)
{
    struct rank_node_arg *r = arg;

    if (r->rank >= sqlite3_column_int64(st, 0) || db_col_is_null(st, 1))
        return 0;
    snprintf(r->node, r->cap, "%s", db_col_text(st, 1));
    r->found = true;
    return 0;
}

int
db_rank_node(struct db *db, int64_t job_id, int attempt, int rank, char *node,
    size_t cap)
{
    struct rank_node_arg r = { rank, node, cap, false };
    int rc;

    db_bind_attempt_key(db->rank_node, 1, job_id, attempt);
    sqlite3_bind_int(db->rank_node, 3, rank < 0 ? 0 : rank);
    rc = db_lookup(db, db->rank_node, "rank node", rank_node_row, &r);
    if (rc < 0)
        return rc;
    return rank >= 0 && r.found ? 0 : -ERANGE;
}

const struct db_stmt_def db_attempt_stmts[] = {
    DB_STMT(attempt_insert),
    DB_STMT(placement_insert),
    DB_STMT(rank_insert),
    DB_STMT(attempt_update),
    DB_STMT(rank_update),
    DB_STMT(placement_release),
    DB_STMT(attempt_get),
    DB_STMT(rank_node),
    DB_STMT(attempts_job),
    DB_STMT(attempts_live),
    DB_STMT(placements_of),
    DB_STMT(ranks_of),
    DB_STMT_END,
};
