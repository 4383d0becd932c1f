/*
 * db_history.c - the store's queries over what already happened
 *
 * Two read-only views across attempts: a job's failure history (each
 * failed attempt with how one rank ended in it and the nodes it ran on),
 * which crash-loop detection compares a new failure against; and the
 * goodput rows, one per attempt with what goodput needs of its job and
 * of the checkpoints it resumed from and left behind.
 */
#include "scheduler/db.h"
#include "scheduler/db_int.h"

#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "common/xalloc.h"

/* ---- failure history ---------------------------------------------------- */

/* Every failed attempt of a job, with how one rank ended in it. */
/* clang-format off */
static const char sql_failures_job[] =
    "SELECT a.attempt, a.failure_kind, a.resume_step, "
    "r.state, r.exit_code, r.signal, r.step, r.end_ms, a.detected_ms, "
    DB_EVIDENCE_COLUMNS " "
    "FROM attempts a LEFT JOIN ranks r ON r.job_id = a.job_id "
    "AND r.attempt = a.attempt AND r.rank = ?2 "
    "WHERE a.job_id = ?1 AND a.failure_kind != '' ORDER BY a.attempt";
/* clang-format on */

static const char sql_placement_nodes[] =
    "SELECT attempt, node FROM placements WHERE job_id = ?1 "
    "ORDER BY attempt, node_rank";

void
db_failure_rows_free(struct db_failure_row *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        evidence_release(&v[i].failure);
        for (size_t k = 0; k < v[i].nnodes; k++)
            free(v[i].nodes[k]);
        free(v[i].nodes);
    }
    free(v);
}

struct failure_vec {
    struct db_failure_row *v;
    size_t n;
};

/* Append a row of sql_failures_job to the vector (arg). */
static int
failure_row(sqlite3_stmt *st, void *arg)
{
    struct failure_vec *vec = arg;
    struct db_failure_row *f;

    vec->v = xreallocarray(vec->v, vec->n + 1, sizeof(*vec->v));
    f = &vec->v[vec->n++];
    memset(f, 0, sizeof(*f));
    f->attempt = sqlite3_column_int(st, 0);
    evidence_init(&f->failure, POLICY_KIND_RANK_EXIT);
    policy_kind_parse(db_col_text(st, 1), &f->failure.kind);
    f->resume_step = sqlite3_column_int64(st, 2);
    f->rank_known = !db_col_is_null(st, 3);
    if (f->rank_known)
        proto_rank_state_parse(db_col_text(st, 3), &f->rank_state);
    f->rank_has_exit = !db_col_is_null(st, 4);
    f->rank_exit_code = sqlite3_column_int(st, 4);
    f->rank_signal = sqlite3_column_int(st, 5);
    f->rank_step = f->rank_known ? sqlite3_column_int64(st, 6) : -1;
    f->rank_end_ms = sqlite3_column_int64(st, 7);
    f->detected_ms = sqlite3_column_int64(st, 8);
    db_col_evidence(st, 9, &f->failure);
    return 0;
}

/* Add the node of a row of sql_placement_nodes to its failed attempt in
 * the vector (arg), if that attempt failed. */
static int
failure_node_row(sqlite3_stmt *st, void *arg)
{
    struct failure_vec *vec = arg;
    int num = sqlite3_column_int(st, 0);

    for (size_t i = 0; i < vec->n; i++) {
        struct db_failure_row *f = &vec->v[i];

        if (f->attempt != num)
            continue;
        f->nodes = xreallocarray(f->nodes, f->nnodes + 1, sizeof(*f->nodes));
        f->nodes[f->nnodes++] = db_col_strdup(st, 1);
        break;
    }
    return 0;
}

int
db_job_failures(struct db *db, int64_t job_id, int rank,
    struct db_failure_row **out, size_t *n)
{
    struct failure_vec vec = { NULL, 0 };
    int rc;

    *out = NULL;
    *n = 0;
    DB_BIND(db->failures_job, 1, DB_INT(job_id), DB_INT(rank));
    rc = db_rows(db, db->failures_job, "failure history", failure_row, &vec);
    if (rc == 0 && vec.n > 0) {
        sqlite3_bind_int64(db->placement_nodes, 1, job_id);
        rc = db_rows(db, db->placement_nodes, "failure history nodes",
            failure_node_row, &vec);
    }
    if (rc < 0) {
        db_failure_rows_free(vec.v, vec.n);
        return rc;
    }
    *out = vec.v;
    *n = vec.n;
    return 0;
}

/* ---- goodput ------------------------------------------------------------ */

#define GOODPUT_SELECT                                                         \
    "SELECT a.job_id, a.attempt, a.state, a.start_ms, a.running_ms, "          \
    "a.end_ms, a.failed_ms, a.failure_kind, a.resume_step, "                   \
    "c.attempt, c.complete_ms, j.state, j.end_ms, "                            \
    "j.nodes * j.ranks_per_node, "                                             \
    "(SELECT attempt FROM checkpoints l WHERE l.job_id = a.job_id "            \
    " ORDER BY step DESC LIMIT 1), "                                           \
    "(SELECT complete_ms FROM checkpoints l WHERE l.job_id = a.job_id "        \
    " ORDER BY step DESC LIMIT 1) "                                            \
    "FROM attempts a JOIN jobs j ON j.id = a.job_id "                          \
    "LEFT JOIN checkpoints c ON c.job_id = a.job_id "                          \
    "AND c.step = a.resume_step "

static const char sql_goodput_all[] = GOODPUT_SELECT
    "ORDER BY a.job_id, a.attempt";
static const char sql_goodput_job[] = GOODPUT_SELECT
    "WHERE a.job_id = ?1 ORDER BY a.attempt";

static int
goodput_row(sqlite3_stmt *st, void *arg)
{
    struct db_walk *w = arg;
    struct db_goodput_row r;

    memset(&r, 0, sizeof(r));
    r.job_id = sqlite3_column_int64(st, 0);
    r.attempt = sqlite3_column_int(st, 1);
    proto_attempt_state_parse(db_col_text(st, 2), &r.state);
    r.start_ms = sqlite3_column_int64(st, 3);
    r.running_ms = sqlite3_column_int64(st, 4);
    r.end_ms = sqlite3_column_int64(st, 5);
    r.failed_ms = sqlite3_column_int64(st, 6);
    r.has_failure = policy_kind_parse(db_col_text(st, 7), &r.failure_kind) == 0;
    r.resume_step = sqlite3_column_int64(st, 8);
    r.resumed_ckpt_attempt = sqlite3_column_int(st, 9);
    r.resumed_ckpt_ms = sqlite3_column_int64(st, 10);
    proto_job_state_parse(db_col_text(st, 11), &r.job_state);
    r.job_end_ms = sqlite3_column_int64(st, 12);
    r.world_size = sqlite3_column_int(st, 13);
    r.last_ckpt_attempt = sqlite3_column_int(st, 14);
    r.last_ckpt_ms = sqlite3_column_int64(st, 15);
    return w->fn.goodput(&r, w->arg);
}

int
db_goodput_foreach(struct db *db, int64_t job_id, db_goodput_fn *fn, void *arg)
{
    struct db_walk w = { .fn.goodput = fn, .arg = arg };
    sqlite3_stmt *st = job_id > 0 ? db->goodput_job : db->goodput_all;

    if (job_id > 0)
        sqlite3_bind_int64(st, 1, job_id);
    return db_rows(db, st, "goodput rows", goodput_row, &w);
}

const struct db_stmt_def db_history_stmts[] = {
    DB_STMT(failures_job),
    DB_STMT(placement_nodes),
    DB_STMT(goodput_all),
    DB_STMT(goodput_job),
    DB_STMT_END,
};
