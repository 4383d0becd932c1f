/*
 * db.c - the scheduler's SQLite access: every statement, prepared once
 *
 * Each function binds every value (no SQL is ever built with printf),
 * steps, and on every exit path resets the statement and clears its
 * bindings. Text columns are copied before the next step or reset.
 *
 * Writes go into one transaction per loop iteration (group commit; see
 * db.h). Lists and maps are stored as JSON text, encoded and decoded here
 * so the rest of the scheduler never sees a column.
 */
#include "scheduler/db.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "common/jsonx.h"
#include "common/log.h"
#include "common/xalloc.h"

struct db {
    sqlite3 *sq;
    char *path;
    bool in_txn;

    sqlite3_stmt *begin;
    sqlite3_stmt *commit;
    sqlite3_stmt *rollback;
    sqlite3_stmt *user_version;
    sqlite3_stmt *node_insert;
    sqlite3_stmt *node_update;
    sqlite3_stmt *node_touch;
    sqlite3_stmt *nodes_all;
    sqlite3_stmt *job_insert;
    sqlite3_stmt *job_update;
    sqlite3_stmt *job_get;
    sqlite3_stmt *jobs_unfinished;
    sqlite3_stmt *jobs_all;
    sqlite3_stmt *jobs_live;
    sqlite3_stmt *jobs_state;
    sqlite3_stmt *jobs_user_all;
    sqlite3_stmt *jobs_user_live;
    sqlite3_stmt *jobs_user_state;
    sqlite3_stmt *attempt_insert;
    sqlite3_stmt *placement_insert;
    sqlite3_stmt *rank_insert;
    sqlite3_stmt *attempt_update;
    sqlite3_stmt *rank_update;
    sqlite3_stmt *placement_release;
    sqlite3_stmt *attempt_get;
    sqlite3_stmt *attempts_job;
    sqlite3_stmt *attempts_live;
    sqlite3_stmt *placements_of;
    sqlite3_stmt *ranks_of;
    sqlite3_stmt *event_insert;
    sqlite3_stmt *events_subject;
    sqlite3_stmt *token_insert;
    sqlite3_stmt *token_lookup;
    sqlite3_stmt *checkpoint_insert;
    sqlite3_stmt *checkpoints_job;
    sqlite3_stmt *commit_insert;
    sqlite3_stmt *commits_attempt;
    sqlite3_stmt *blame_insert;
    sqlite3_stmt *blame_withdraw;
    sqlite3_stmt *failure_unblame;
    sqlite3_stmt *blame_node;
    sqlite3_stmt *blame_job;
    sqlite3_stmt *failures_job;
    sqlite3_stmt *placement_nodes;
    sqlite3_stmt *goodput_all;
    sqlite3_stmt *goodput_job;
};

/* ---- errors and statement helpers --------------------------------------- */

/* Log a failure once, with its label, and map it to a negative errno. */
static int
db_fail(struct db *db, const char *label, int rc)
{
    int ext = sqlite3_extended_errcode(db->sq);

    log_error("database %s failed: %s (code %d)", label,
        sqlite3_errmsg(db->sq), ext);
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

static void
db_done(sqlite3_stmt *st)
{
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
}

/* Step a statement that returns no rows. */
static int
db_exec(struct db *db, sqlite3_stmt *st, const char *label)
{
    int rc = sqlite3_step(st);

    db_done(st);
    if (rc != SQLITE_DONE)
        return db_fail(db, label, rc);
    return 0;
}

static void
bind_text(sqlite3_stmt *st, int i, const char *s)
{
    sqlite3_bind_text(st, i, s ? s : "", -1, SQLITE_TRANSIENT);
}

/* The column as a new string ("" for NULL). */
static char *
col_strdup(sqlite3_stmt *st, int i)
{
    const unsigned char *s = sqlite3_column_text(st, i);

    return xstrdup(s ? (const char *)s : "");
}

static const char *
col_text(sqlite3_stmt *st, int i)
{
    const unsigned char *s = sqlite3_column_text(st, i);

    return s ? (const char *)s : "";
}

/* ---- JSON columns ------------------------------------------------------- */

static char *
json_int_array(const int *v, size_t n)
{
    cJSON *arr = cJSON_CreateArray();
    char *s;

    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(arr, cJSON_CreateNumber(v[i]));
    s = jsonx_print(arr);
    cJSON_Delete(arr);
    return s;
}

static char *
json_kv(const struct proto_kv *kv, size_t n)
{
    cJSON *obj = cJSON_CreateObject();
    char *s;

    for (size_t i = 0; i < n; i++)
        cJSON_AddStringToObject(obj, kv[i].key, kv[i].value);
    s = jsonx_print(obj);
    cJSON_Delete(obj);
    return s;
}

static char *
json_strv(char *const *v, size_t n)
{
    cJSON *arr = cJSON_CreateArray();
    char *s;

    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(arr, cJSON_CreateString(v[i]));
    s = jsonx_print(arr);
    cJSON_Delete(arr);
    return s;
}

static int
unjson_int_array(const char *text, int **out, size_t *n)
{
    cJSON *arr = cJSON_Parse(text);
    const cJSON *item;
    size_t i = 0;
    int *v;

    if (!cJSON_IsArray(arr)) {
        cJSON_Delete(arr);
        return -EIO;
    }
    v = xcalloc((size_t)cJSON_GetArraySize(arr) + 1, sizeof(*v));
    cJSON_ArrayForEach(item, arr) {
        v[i++] = (int)cJSON_GetNumberValue(item);
    }
    cJSON_Delete(arr);
    *out = v;
    *n = i;
    return 0;
}

static int
unjson_kv(const char *text, struct proto_kv **out, size_t *n)
{
    cJSON *obj = cJSON_Parse(text);
    const cJSON *item;
    struct proto_kv *kv;
    size_t i = 0;

    if (!cJSON_IsObject(obj)) {
        cJSON_Delete(obj);
        return -EIO;
    }
    kv = xcalloc((size_t)cJSON_GetArraySize(obj) + 1, sizeof(*kv));
    cJSON_ArrayForEach(item, obj) {
        const char *v = cJSON_GetStringValue(item);

        kv[i].key = xstrdup(item->string);
        kv[i].value = xstrdup(v ? v : "");
        i++;
    }
    cJSON_Delete(obj);
    *out = kv;
    *n = i;
    return 0;
}

static int
unjson_strv(const char *text, char ***out, size_t *n)
{
    cJSON *arr = cJSON_Parse(text);
    const cJSON *item;
    size_t i = 0;
    char **v;

    if (!cJSON_IsArray(arr)) {
        cJSON_Delete(arr);
        return -EIO;
    }
    v = xcalloc((size_t)cJSON_GetArraySize(arr) + 1, sizeof(*v));
    cJSON_ArrayForEach(item, arr) {
        const char *s = cJSON_GetStringValue(item);

        v[i++] = xstrdup(s ? s : "");
    }
    cJSON_Delete(arr);
    *out = v;
    *n = i;
    return 0;
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

/* ---- nodes -------------------------------------------------------------- */

static const char sql_node_insert[] =
    "INSERT INTO nodes (name, state, reason, cordoned, addr, cpus, "
    "memory_mb, gpus, labels, agent_id, unhealthy, health_reason, "
    "registered_ms, last_seen_ms) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)";

static const char sql_node_update[] =
    "UPDATE nodes SET state = ?2, reason = ?3, cordoned = ?4, addr = ?5, "
    "cpus = ?6, memory_mb = ?7, gpus = ?8, labels = ?9, agent_id = ?10, "
    "unhealthy = ?11, health_reason = ?12 WHERE name = ?1";

/* Bind the columns shared by insert and update (?1..?12). */
static void
node_bind(sqlite3_stmt *st, const struct node *node)
{
    char *gpus = json_int_array(node->gpus, node->ngpus);
    char *labels = json_kv(node->labels, node->nlabels);

    bind_text(st, 1, node->name);
    bind_text(st, 2, node_state_str(node->state));
    bind_text(st, 3, node->reason);
    sqlite3_bind_int(st, 4, node->cordoned);
    bind_text(st, 5, node->addr);
    sqlite3_bind_int(st, 6, node->cpus);
    sqlite3_bind_int64(st, 7, node->memory_mb);
    bind_text(st, 8, gpus);
    bind_text(st, 9, labels);
    bind_text(st, 10, node->agent_id);
    sqlite3_bind_int(st, 11, node->unhealthy);
    bind_text(st, 12, node->health_reason);
    free(gpus);
    free(labels);
}

int
db_node_insert(struct db *db, const struct node *node)
{
    int rc = db_txn_begin(db);

    if (rc < 0)
        return rc;
    node_bind(db->node_insert, node);
    sqlite3_bind_int64(db->node_insert, 13, node->registered_ms);
    sqlite3_bind_int64(db->node_insert, 14, node->last_seen_ms);
    return db_exec(db, db->node_insert, "node insert");
}

int
db_node_update(struct db *db, const struct node *node)
{
    int rc = db_txn_begin(db);

    if (rc < 0)
        return rc;
    node_bind(db->node_update, node);
    return db_exec(db, db->node_update, "node update");
}

static const char sql_node_touch[] =
    "UPDATE nodes SET last_seen_ms = ?2 WHERE name = ?1";

int
db_node_touch(struct db *db, const char *name, int64_t last_seen_ms)
{
    int rc = db_txn_begin(db);

    if (rc < 0)
        return rc;
    bind_text(db->node_touch, 1, name);
    sqlite3_bind_int64(db->node_touch, 2, last_seen_ms);
    return db_exec(db, db->node_touch, "node touch");
}

static const char sql_nodes_all[] =
    "SELECT name, state, reason, cordoned, addr, cpus, memory_mb, gpus, "
    "labels, agent_id, registered_ms, last_seen_ms, unhealthy, "
    "health_reason FROM nodes ORDER BY name";

int
db_nodes_load(struct db *db, struct node_table *t)
{
    sqlite3_stmt *st = db->nodes_all;
    int rc;

    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct node *node = node_create(col_text(st, 0));
        enum node_state state = NODE_STATE_UP;

        node_state_parse(col_text(st, 1), &state);
        node->lost = state == NODE_STATE_LOST;
        node->unhealthy = sqlite3_column_int(st, 12) != 0;
        free(node->health_reason);
        node->health_reason = col_strdup(st, 13);
        free(node->reason);
        node->reason = col_strdup(st, 2);
        node->cordoned = sqlite3_column_int(st, 3) != 0;
        free(node->addr);
        node->addr = col_strdup(st, 4);
        node->cpus = sqlite3_column_int(st, 5);
        node->memory_mb = sqlite3_column_int64(st, 6);
        free(node->agent_id);
        node->agent_id = col_strdup(st, 9);
        node->registered_ms = sqlite3_column_int64(st, 10);
        node->last_seen_ms = sqlite3_column_int64(st, 11);
        node->last_seen_saved_ms = node->last_seen_ms;
        if (unjson_int_array(col_text(st, 7), &node->gpus, &node->ngpus) < 0 ||
            unjson_kv(col_text(st, 8), &node->labels, &node->nlabels) < 0) {
            log_error("database: node '%s' has malformed gpus or labels",
                node->name);
            node_destroy(node);
            db_done(st);
            return -EIO;
        }
        node->state = node_state_compute(node);
        node_table_add(t, node);
    }
    db_done(st);
    if (rc != SQLITE_DONE)
        return db_fail(db, "nodes load", rc);
    return 0;
}

/* ---- jobs --------------------------------------------------------------- */

#define JOB_COLUMNS                                                         \
    "id, name, user, state, reason, priority, nodes, ranks_per_node, "      \
    "gpus_per_node, cpus_per_rank, memory_mb_per_node, argv, env, "         \
    "workdir, max_restarts, checkpoint_dir, submit_ms, start_ms, end_ms, "  \
    "attempt, failed_rank, exit_code, signal, stderr_tail, "                \
    "max_infra_restarts, hang_timeout_s, keep_checkpoints, restarts, "      \
    "infra_restarts, fail_streak, not_before_ms, reserved, "                \
    "(SELECT max(step) FROM checkpoints c WHERE c.job_id = jobs.id)"

static const char sql_job_insert[] =
    "INSERT INTO jobs (name, user, state, reason, priority, nodes, "
    "ranks_per_node, gpus_per_node, cpus_per_rank, memory_mb_per_node, "
    "argv, env, workdir, max_restarts, checkpoint_dir, submit_ms, "
    "max_infra_restarts, hang_timeout_s, keep_checkpoints) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, "
    "?15, ?16, ?17, ?18, ?19)";

int
db_job_insert(struct db *db, struct job *job)
{
    sqlite3_stmt *st = db->job_insert;
    const struct proto_job_spec *s = &job->spec;
    char *argv, *env;
    int rc = db_txn_begin(db);

    if (rc < 0)
        return rc;
    argv = json_strv(s->argv, s->argc);
    env = json_kv(s->env, s->nenv);
    bind_text(st, 1, s->name);
    bind_text(st, 2, job->user);
    bind_text(st, 3, job_state_str(job->state));
    bind_text(st, 4, job->reason);
    sqlite3_bind_int(st, 5, s->priority);
    sqlite3_bind_int(st, 6, s->nodes);
    sqlite3_bind_int(st, 7, s->ranks_per_node);
    sqlite3_bind_int(st, 8, s->gpus_per_node);
    sqlite3_bind_int(st, 9, s->cpus_per_rank);
    sqlite3_bind_int64(st, 10, s->memory_mb_per_node);
    bind_text(st, 11, argv);
    bind_text(st, 12, env);
    bind_text(st, 13, s->workdir ? s->workdir : "/");
    sqlite3_bind_int(st, 14, s->max_restarts);
    bind_text(st, 15, s->checkpoint_dir);
    sqlite3_bind_int64(st, 16, job->submit_ms);
    sqlite3_bind_int(st, 17, s->max_infra_restarts);
    sqlite3_bind_int(st, 18, s->hang_timeout_s);
    sqlite3_bind_int(st, 19, s->keep_checkpoints);
    free(argv);
    free(env);
    rc = db_exec(db, st, "job insert");
    if (rc == 0)
        job->id = sqlite3_last_insert_rowid(db->sq);
    return rc;
}

static const char sql_job_update[] =
    "UPDATE jobs SET state = ?2, reason = ?3, start_ms = ?4, end_ms = ?5, "
    "attempt = ?6, failed_rank = ?7, exit_code = ?8, signal = ?9, "
    "stderr_tail = ?10, restarts = ?11, infra_restarts = ?12, "
    "fail_streak = ?13, not_before_ms = ?14, reserved = ?15 WHERE id = ?1";

int
db_job_update(struct db *db, const struct job *job)
{
    sqlite3_stmt *st = db->job_update;
    char *reserved;
    int rc = db_txn_begin(db);

    if (rc < 0)
        return rc;
    sqlite3_bind_int64(st, 1, job->id);
    bind_text(st, 2, job_state_str(job->state));
    bind_text(st, 3, job->reason);
    sqlite3_bind_int64(st, 4, job->start_ms);
    sqlite3_bind_int64(st, 5, job->end_ms);
    sqlite3_bind_int(st, 6, job->attempt);
    if (job->failed_rank >= 0) {
        sqlite3_bind_int(st, 7, job->failed_rank);
        bind_text(st, 10, job->stderr_tail ? job->stderr_tail : "");
    }
    if (job->has_exit) {
        sqlite3_bind_int(st, 8, job->exit_code);
        sqlite3_bind_int(st, 9, job->signal);
    }
    sqlite3_bind_int(st, 11, job->restarts);
    sqlite3_bind_int(st, 12, job->infra_restarts);
    sqlite3_bind_int(st, 13, job->fail_streak);
    sqlite3_bind_int64(st, 14, job->not_before_ms);
    reserved = json_strv(job->reserved, job->nreserved);
    bind_text(st, 15, reserved);
    free(reserved);
    return db_exec(db, st, "job update");
}

/* Build a job from a row of JOB_COLUMNS. NULL when the row is malformed. */
static struct job *
job_from_row(sqlite3_stmt *st)
{
    struct job *job = job_create();
    struct proto_job_spec *s = &job->spec;

    job->id = sqlite3_column_int64(st, 0);
    s->name = col_strdup(st, 1);
    job->user = col_strdup(st, 2);
    job_set_reason(job, col_text(st, 4));
    s->priority = sqlite3_column_int(st, 5);
    s->nodes = sqlite3_column_int(st, 6);
    s->ranks_per_node = sqlite3_column_int(st, 7);
    s->gpus_per_node = sqlite3_column_int(st, 8);
    s->cpus_per_rank = sqlite3_column_int(st, 9);
    s->memory_mb_per_node = sqlite3_column_int64(st, 10);
    s->workdir = col_strdup(st, 13);
    s->max_restarts = sqlite3_column_int(st, 14);
    s->checkpoint_dir = col_strdup(st, 15);
    job->submit_ms = sqlite3_column_int64(st, 16);
    job->start_ms = sqlite3_column_int64(st, 17);
    job->end_ms = sqlite3_column_int64(st, 18);
    job->attempt = sqlite3_column_int(st, 19);
    if (sqlite3_column_type(st, 20) != SQLITE_NULL) {
        job->failed_rank = sqlite3_column_int(st, 20);
        job->stderr_tail = col_strdup(st, 23);
    }
    if (sqlite3_column_type(st, 21) != SQLITE_NULL) {
        job->has_exit = true;
        job->exit_code = sqlite3_column_int(st, 21);
        job->signal = sqlite3_column_int(st, 22);
    }
    s->max_infra_restarts = sqlite3_column_int(st, 24);
    s->hang_timeout_s = sqlite3_column_int(st, 25);
    s->keep_checkpoints = sqlite3_column_int(st, 26);
    job->restarts = sqlite3_column_int(st, 27);
    job->infra_restarts = sqlite3_column_int(st, 28);
    job->fail_streak = sqlite3_column_int(st, 29);
    job->not_before_ms = sqlite3_column_int64(st, 30);
    job->ckpt_step = sqlite3_column_type(st, 32) == SQLITE_NULL
                         ? -1
                         : sqlite3_column_int64(st, 32);
    if (job_state_parse(col_text(st, 3), &job->state) < 0 ||
        unjson_strv(col_text(st, 11), &s->argv, &s->argc) < 0 ||
        unjson_kv(col_text(st, 12), &s->env, &s->nenv) < 0 ||
        unjson_strv(col_text(st, 31), &job->reserved, &job->nreserved) < 0) {
        log_error("database: job %lld has a malformed row",
            (long long)job->id);
        job_destroy(job);
        return NULL;
    }
    return job;
}

static const char sql_job_get[] =
    "SELECT " JOB_COLUMNS " FROM jobs WHERE id = ?1";

int
db_job_get(struct db *db, int64_t id, struct job **out)
{
    sqlite3_stmt *st = db->job_get;
    int rc;

    *out = NULL;
    sqlite3_bind_int64(st, 1, id);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *out = job_from_row(st);
        db_done(st);
        return *out ? 0 : -EIO;
    }
    db_done(st);
    if (rc == SQLITE_DONE)
        return -ENOENT;
    return db_fail(db, "job get", rc);
}

static const char sql_jobs_unfinished[] =
    "SELECT " JOB_COLUMNS " FROM jobs "
    "WHERE state IN ('PENDING', 'PLACED', 'RUNNING', 'RESTARTING') "
    "ORDER BY id";


int
db_jobs_load_unfinished(struct db *db, struct job_table *t)
{
    sqlite3_stmt *st = db->jobs_unfinished;
    int rc;

    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct job *job = job_from_row(st);

        if (job == NULL) {
            db_done(st);
            return -EIO;
        }
        job_table_add(t, job);
    }
    db_done(st);
    if (rc != SQLITE_DONE)
        return db_fail(db, "jobs load", rc);
    return 0;
}

/* One statement per filter combination, so each can use its index
 * (jobs_state, jobs_user_state) instead of scanning every job ever run. */
#define JOBS_LIVE "state IN ('PENDING', 'PLACED', 'RUNNING', 'RESTARTING')"

static const char sql_jobs_all[] =
    "SELECT " JOB_COLUMNS " FROM jobs ORDER BY id DESC";
static const char sql_jobs_live[] =
    "SELECT " JOB_COLUMNS " FROM jobs WHERE " JOBS_LIVE " ORDER BY id DESC";
static const char sql_jobs_state[] =
    "SELECT " JOB_COLUMNS " FROM jobs WHERE state = ?2 ORDER BY id DESC";
static const char sql_jobs_user_all[] =
    "SELECT " JOB_COLUMNS " FROM jobs WHERE user = ?1 ORDER BY id DESC";
static const char sql_jobs_user_live[] =
    "SELECT " JOB_COLUMNS " FROM jobs WHERE user = ?1 AND " JOBS_LIVE
    " ORDER BY id DESC";
static const char sql_jobs_user_state[] =
    "SELECT " JOB_COLUMNS " FROM jobs WHERE user = ?1 AND state = ?2 "
    "ORDER BY id DESC";

int
db_jobs_foreach(struct db *db, const struct db_job_filter *filter,
    db_job_fn *fn, void *arg)
{
    sqlite3_stmt *st;
    int rc;

    if (filter->user && filter->has_state)
        st = db->jobs_user_state;
    else if (filter->user)
        st = filter->all ? db->jobs_user_all : db->jobs_user_live;
    else if (filter->has_state)
        st = db->jobs_state;
    else
        st = filter->all ? db->jobs_all : db->jobs_live;
    if (filter->user)
        bind_text(st, 1, filter->user);
    if (filter->has_state)
        bind_text(st, 2, job_state_str(filter->state));
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct job *job = job_from_row(st);
        int frc;

        if (job == NULL) {
            db_done(st);
            return -EIO;
        }
        frc = fn(job, arg);
        job_destroy(job);
        if (frc != 0) {
            db_done(st);
            return frc;
        }
    }
    db_done(st);
    if (rc != SQLITE_DONE)
        return db_fail(db, "jobs list", rc);
    return 0;
}

/* ---- attempts ----------------------------------------------------------- */

static const char sql_attempt_insert[] =
    "INSERT INTO attempts (job_id, attempt, state, reason, start_ms, "
    "end_ms, nodes, ranks_per_node, master_addr, master_port, resume_step, "
    "resume_from, dump_seq) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)";

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

static void
rank_bind(sqlite3_stmt *st, const struct attempt_rank *r, int first)
{
    bind_text(st, first, proto_rank_state_str(r->state));
    sqlite3_bind_int(st, first + 1, r->pid);
    sqlite3_bind_int64(st, first + 2, r->start_ms);
    sqlite3_bind_int64(st, first + 3, r->end_ms);
    if (r->has_exit) {
        sqlite3_bind_int(st, first + 4, r->exit_code);
        sqlite3_bind_int(st, first + 5, r->signal);
    }
    bind_text(st, first + 6, r->stderr_tail);
    sqlite3_bind_int64(st, first + 7, r->step);
    sqlite3_bind_int(st, first + 8, r->fenced);
    bind_text(st, first + 9, r->dump);
}

int
db_attempt_insert(struct db *db, const struct attempt *a)
{
    sqlite3_stmt *st = db->attempt_insert;
    int rc = db_txn_begin(db);

    if (rc < 0)
        return rc;
    sqlite3_bind_int64(st, 1, a->job_id);
    sqlite3_bind_int(st, 2, a->num);
    bind_text(st, 3, attempt_state_str(a->state));
    bind_text(st, 4, a->reason);
    sqlite3_bind_int64(st, 5, a->start_ms);
    sqlite3_bind_int64(st, 6, a->end_ms);
    sqlite3_bind_int(st, 7, a->nnodes);
    sqlite3_bind_int(st, 8, a->ranks_per_node);
    bind_text(st, 9, a->master_addr);
    sqlite3_bind_int(st, 10, a->master_port);
    sqlite3_bind_int64(st, 11, a->resume_step);
    bind_text(st, 12, a->resume_from);
    sqlite3_bind_int64(st, 13, (sqlite3_int64)a->dump_seq);
    if ((rc = db_exec(db, st, "attempt insert")) < 0)
        return rc;
    st = db->placement_insert;
    for (int k = 0; k < a->nnodes; k++) {
        const struct placement *p = &a->placements[k];
        char *gpus = json_int_array(p->gpus, p->ngpus);

        sqlite3_bind_int64(st, 1, a->job_id);
        sqlite3_bind_int(st, 2, a->num);
        sqlite3_bind_int(st, 3, p->node_rank);
        bind_text(st, 4, p->node_name);
        bind_text(st, 5, gpus);
        sqlite3_bind_int(st, 6, p->cpus);
        sqlite3_bind_int64(st, 7, p->memory_mb);
        sqlite3_bind_int64(st, 8, (sqlite3_int64)p->gen);
        sqlite3_bind_int(st, 9, p->released);
        free(gpus);
        if ((rc = db_exec(db, st, "placement insert")) < 0)
            return rc;
    }
    st = db->rank_insert;
    for (size_t r = 0; r < a->nranks; r++) {
        const struct attempt_rank *rk = &a->ranks[r];

        sqlite3_bind_int64(st, 1, a->job_id);
        sqlite3_bind_int(st, 2, a->num);
        sqlite3_bind_int(st, 3, rk->rank);
        bind_text(st, 4, a->placements[rk->node_rank].node_name);
        sqlite3_bind_int(st, 5, rk->local_rank);
        rank_bind(st, rk, 6);
        if ((rc = db_exec(db, st, "rank insert")) < 0)
            return rc;
    }
    return 0;
}

static const char sql_attempt_update[] =
    "UPDATE attempts SET state = ?3, reason = ?4, end_ms = ?5, "
    "running_ms = ?6, failed_ms = ?7, detected_ms = ?8, released_ms = ?9, "
    "failure_kind = ?10, failure = ?11, dump_seq = ?12, "
    "dump_deadline_ms = ?13 WHERE job_id = ?1 AND attempt = ?2";

int
db_attempt_update(struct db *db, const struct attempt *a)
{
    sqlite3_stmt *st = db->attempt_update;
    int rc = db_txn_begin(db);

    if (rc < 0)
        return rc;
    sqlite3_bind_int64(st, 1, a->job_id);
    sqlite3_bind_int(st, 2, a->num);
    bind_text(st, 3, attempt_state_str(a->state));
    bind_text(st, 4, a->reason);
    sqlite3_bind_int64(st, 5, a->end_ms);
    sqlite3_bind_int64(st, 6, a->running_ms);
    sqlite3_bind_int64(st, 7, a->failed_ms);
    sqlite3_bind_int64(st, 8, a->detected_ms);
    sqlite3_bind_int64(st, 9, a->released_ms);
    bind_text(st, 10, a->has_failure ? policy_kind_str(a->failure_kind)
                                     : "");
    if (a->failure)
        bind_text(st, 11, a->failure);
    sqlite3_bind_int64(st, 12, (sqlite3_int64)a->dump_seq);
    sqlite3_bind_int64(st, 13, a->dump_deadline_ms);
    return db_exec(db, st, "attempt update");
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
    int rc = db_txn_begin(db);

    if (rc < 0)
        return rc;
    sqlite3_bind_int64(st, 1, a->job_id);
    sqlite3_bind_int(st, 2, a->num);
    sqlite3_bind_int(st, 3, r->rank);
    rank_bind(st, r, 4);
    return db_exec(db, st, "rank update");
}

static const char sql_placement_release[] =
    "UPDATE placements SET released = 1 "
    "WHERE job_id = ?1 AND attempt = ?2 AND node_rank = ?3";

int
db_placement_release(struct db *db, const struct placement *p)
{
    sqlite3_stmt *st = db->placement_release;
    int rc = db_txn_begin(db);

    if (rc < 0)
        return rc;
    sqlite3_bind_int64(st, 1, p->attempt->job_id);
    sqlite3_bind_int(st, 2, p->attempt->num);
    sqlite3_bind_int(st, 3, p->node_rank);
    return db_exec(db, st, "placement release");
}

#define ATTEMPT_COLUMNS                                                     \
    "job_id, attempt, state, reason, start_ms, end_ms, nodes, "             \
    "ranks_per_node, master_addr, master_port, resume_step, resume_from, "  \
    "running_ms, failed_ms, detected_ms, released_ms, failure_kind, "       \
    "failure, dump_seq, dump_deadline_ms"

static const char sql_placements_of[] =
    "SELECT node_rank, node, gpus, cpus, memory_mb, gen, released "
    "FROM placements WHERE job_id = ?1 AND attempt = ?2 ORDER BY node_rank";

static const char sql_ranks_of[] =
    "SELECT rank, state, pid, start_ms, end_ms, exit_code, signal, "
    "stderr_tail, step, fenced, dump FROM ranks "
    "WHERE job_id = ?1 AND attempt = ?2 ORDER BY rank";

/* Fill a's placements and ranks from their tables. */
static int
attempt_load_children(struct db *db, struct attempt *a)
{
    sqlite3_stmt *st = db->placements_of;
    int rc;

    sqlite3_bind_int64(st, 1, a->job_id);
    sqlite3_bind_int(st, 2, a->num);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int k = sqlite3_column_int(st, 0);
        struct placement *p;

        if (k < 0 || k >= a->nnodes)
            continue;
        p = &a->placements[k];
        free(p->node_name);
        p->node_name = col_strdup(st, 1);
        free(p->gpus);
        p->gpus = NULL;
        if (unjson_int_array(col_text(st, 2), &p->gpus, &p->ngpus) < 0) {
            db_done(st);
            log_error("database: job %lld attempt %d has malformed gpus",
                (long long)a->job_id, a->num);
            return -EIO;
        }
        p->cpus = sqlite3_column_int(st, 3);
        p->memory_mb = sqlite3_column_int64(st, 4);
        p->gen = (uint64_t)sqlite3_column_int64(st, 5);
        p->released = sqlite3_column_int(st, 6) != 0;
    }
    db_done(st);
    if (rc != SQLITE_DONE)
        return db_fail(db, "placements load", rc);

    st = db->ranks_of;
    sqlite3_bind_int64(st, 1, a->job_id);
    sqlite3_bind_int(st, 2, a->num);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int r = sqlite3_column_int(st, 0);
        struct attempt_rank *rk;

        if (r < 0 || (size_t)r >= a->nranks)
            continue;
        rk = &a->ranks[r];
        proto_rank_state_parse(col_text(st, 1), &rk->state);
        rk->pid = sqlite3_column_int(st, 2);
        rk->start_ms = sqlite3_column_int64(st, 3);
        rk->end_ms = sqlite3_column_int64(st, 4);
        rk->has_exit = sqlite3_column_type(st, 5) != SQLITE_NULL;
        rk->exit_code = sqlite3_column_int(st, 5);
        rk->signal = sqlite3_column_int(st, 6);
        free(rk->stderr_tail);
        rk->stderr_tail = col_strdup(st, 7);
        rk->step = sqlite3_column_int64(st, 8);
        rk->fenced = sqlite3_column_int(st, 9) != 0;
        free(rk->dump);
        rk->dump = col_strdup(st, 10);
    }
    db_done(st);
    if (rc != SQLITE_DONE)
        return db_fail(db, "ranks load", rc);
    return 0;
}

/* An attempt from a row of ATTEMPT_COLUMNS, without children. */
static struct attempt *
attempt_from_row(sqlite3_stmt *st)
{
    int nnodes = sqlite3_column_int(st, 6);
    int rpn = sqlite3_column_int(st, 7);
    struct attempt *a;

    if (nnodes < 1 || nnodes > PROTO_NODES_MAX || rpn < 1 ||
        rpn > PROTO_RANKS_PER_NODE_MAX)
        return NULL;
    a = attempt_create(sqlite3_column_int64(st, 0),
        sqlite3_column_int(st, 1), nnodes, rpn);
    if (attempt_state_parse(col_text(st, 2), &a->state) < 0) {
        attempt_destroy(a);
        return NULL;
    }
    attempt_set_reason(a, col_text(st, 3));
    a->start_ms = sqlite3_column_int64(st, 4);
    a->end_ms = sqlite3_column_int64(st, 5);
    free(a->master_addr);
    a->master_addr = col_strdup(st, 8);
    a->master_port = sqlite3_column_int(st, 9);
    attempt_set_resume(a, sqlite3_column_int64(st, 10), col_text(st, 11));
    a->running_ms = sqlite3_column_int64(st, 12);
    a->failed_ms = sqlite3_column_int64(st, 13);
    a->detected_ms = sqlite3_column_int64(st, 14);
    a->released_ms = sqlite3_column_int64(st, 15);
    if (col_text(st, 16)[0] != '\0') {
        enum policy_kind kind = POLICY_KIND_RANK_EXIT;

        policy_kind_parse(col_text(st, 16), &kind);
        attempt_set_failure(a, kind, sqlite3_column_type(st, 17) ==
                                             SQLITE_NULL
                                         ? "{}"
                                         : col_text(st, 17));
    } else if (sqlite3_column_type(st, 17) != SQLITE_NULL) {
        /* A hang's evidence, waiting for its dumps. */
        attempt_set_failure(a, POLICY_KIND_HANG, col_text(st, 17));
        a->has_failure = false;
    }
    a->dump_seq = (uint64_t)sqlite3_column_int64(st, 18);
    a->dump_deadline_ms = sqlite3_column_int64(st, 19);
    return a;
}

/* Run an attempt query (bound already) and hand each attempt, with its
 * children, to fn. The rows are collected first so fn and the children
 * queries never interleave with the outer statement. */
static int
attempts_collect(struct db *db, sqlite3_stmt *st, const char *label,
    db_attempt_fn *fn, void *arg)
{
    struct attempt **list = NULL;
    size_t n = 0, cap = 0, i;
    int rc;

    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct attempt *a = attempt_from_row(st);

        if (a == NULL) {
            log_error("database: an attempt of job %lld is malformed",
                (long long)sqlite3_column_int64(st, 0));
            rc = SQLITE_CORRUPT;
            break;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            list = xreallocarray(list, cap, sizeof(*list));
        }
        list[n++] = a;
    }
    db_done(st);
    if (rc != SQLITE_DONE) {
        rc = rc == SQLITE_CORRUPT ? -EIO : db_fail(db, label, rc);
        goto out;
    }
    rc = 0;
    for (i = 0; i < n; i++) {
        if (rc == 0)
            rc = attempt_load_children(db, list[i]);
        if (rc == 0) {
            rc = fn(list[i], arg);
            list[i] = NULL;
        }
    }
out:
    for (i = 0; i < n; i++)
        attempt_destroy(list[i]);
    free(list);
    return rc;
}

static const char sql_attempt_get[] =
    "SELECT " ATTEMPT_COLUMNS " FROM attempts "
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
    sqlite3_bind_int64(db->attempt_get, 1, job_id);
    sqlite3_bind_int(db->attempt_get, 2, num);
    rc = attempts_collect(db, db->attempt_get, "attempt get",
        attempt_take_one, out);
    if (rc == 0 && *out == NULL)
        return -ENOENT;
    return rc;
}

static const char sql_attempts_job[] =
    "SELECT " ATTEMPT_COLUMNS " FROM attempts WHERE job_id = ?1 "
    "ORDER BY attempt";

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

/* ---- checkpoints -------------------------------------------------------- */

static const char sql_checkpoint_insert[] =
    "INSERT INTO checkpoints (job_id, step, attempt, path, committed, "
    "complete_ms, source) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) "
    "ON CONFLICT (job_id, step) DO NOTHING";

int
db_checkpoint_insert(struct db *db, const struct db_checkpoint *c)
{
    sqlite3_stmt *st = db->checkpoint_insert;
    int rc = db_txn_begin(db);

    if (rc < 0)
        return rc;
    sqlite3_bind_int64(st, 1, c->job_id);
    sqlite3_bind_int64(st, 2, c->step);
    sqlite3_bind_int(st, 3, c->attempt);
    bind_text(st, 4, c->path);
    sqlite3_bind_int(st, 5, c->committed);
    sqlite3_bind_int64(st, 6, c->complete_ms);
    bind_text(st, 7, c->source);
    rc = db_exec(db, st, "checkpoint insert");
    if (rc < 0)
        return rc;
    return sqlite3_changes(db->sq) > 0 ? 1 : 0;
}

static const char sql_checkpoints_job[] =
    "SELECT job_id, step, attempt, path, committed, complete_ms, source "
    "FROM checkpoints WHERE job_id = ?1 ORDER BY step";

int
db_checkpoints_foreach(struct db *db, int64_t job_id, db_checkpoint_fn *fn,
    void *arg)
{
    sqlite3_stmt *st = db->checkpoints_job;
    int rc;

    sqlite3_bind_int64(st, 1, job_id);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct db_checkpoint c = {
            .job_id = sqlite3_column_int64(st, 0),
            .step = sqlite3_column_int64(st, 1),
            .attempt = sqlite3_column_int(st, 2),
            .path = col_text(st, 3),
            .committed = sqlite3_column_int(st, 4),
            .complete_ms = sqlite3_column_int64(st, 5),
            .source = col_text(st, 6),
        };
        int frc = fn(&c, arg);

        if (frc != 0) {
            db_done(st);
            return frc;
        }
    }
    db_done(st);
    if (rc != SQLITE_DONE)
        return db_fail(db, "checkpoints list", rc);
    return 0;
}

static const char sql_commit_insert[] =
    "INSERT INTO checkpoint_commits (job_id, attempt, step, rank, time_ms) "
    "VALUES (?1, ?2, ?3, ?4, ?5) "
    "ON CONFLICT (job_id, attempt, step, rank) DO NOTHING";

int
db_commit_insert(struct db *db, int64_t job_id, int attempt, int64_t step,
    int rank, int64_t time_ms)
{
    sqlite3_stmt *st = db->commit_insert;
    int rc = db_txn_begin(db);

    if (rc < 0)
        return rc;
    sqlite3_bind_int64(st, 1, job_id);
    sqlite3_bind_int(st, 2, attempt);
    sqlite3_bind_int64(st, 3, step);
    sqlite3_bind_int(st, 4, rank);
    sqlite3_bind_int64(st, 5, time_ms);
    rc = db_exec(db, st, "checkpoint commit insert");
    if (rc < 0)
        return rc;
    return sqlite3_changes(db->sq) > 0 ? 1 : 0;
}

static const char sql_commits_attempt[] =
    "SELECT rank, step FROM checkpoint_commits "
    "WHERE job_id = ?1 AND attempt = ?2 AND step > ?3 ORDER BY step, rank";

int
db_commits_foreach(struct db *db, int64_t job_id, int attempt,
    int64_t above, db_commit_fn *fn, void *arg)
{
    sqlite3_stmt *st = db->commits_attempt;
    int rc;

    sqlite3_bind_int64(st, 1, job_id);
    sqlite3_bind_int(st, 2, attempt);
    sqlite3_bind_int64(st, 3, above);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int frc = fn(sqlite3_column_int(st, 0), sqlite3_column_int64(st, 1),
            arg);

        if (frc != 0) {
            db_done(st);
            return frc;
        }
    }
    db_done(st);
    if (rc != SQLITE_DONE)
        return db_fail(db, "checkpoint commits load", rc);
    return 0;
}

/* ---- blame -------------------------------------------------------------- */

static const char sql_blame_insert[] =
    "INSERT INTO blame (node, job_id, attempt, time_ms, kind, evidence, "
    "withdrawn) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";

int
db_blame_insert(struct db *db, const char *node, int64_t job_id, int attempt,
    int64_t time_ms, const char *kind, const char *evidence, bool withdrawn)
{
    sqlite3_stmt *st = db->blame_insert;
    int rc = db_txn_begin(db);

    if (rc < 0)
        return rc;
    bind_text(st, 1, node);
    sqlite3_bind_int64(st, 2, job_id);
    sqlite3_bind_int(st, 3, attempt);
    sqlite3_bind_int64(st, 4, time_ms);
    bind_text(st, 5, kind);
    bind_text(st, 6, evidence ? evidence : "{}");
    sqlite3_bind_int(st, 7, withdrawn);
    return db_exec(db, st, "blame insert");
}

static const char sql_blame_withdraw[] =
    "UPDATE blame SET withdrawn = 1 WHERE job_id = ?1 AND attempt = ?2";

/* The attempt's evidence says so too: "blamed" becomes "blame_withdrawn". */
static const char sql_failure_unblame[] =
    "UPDATE attempts SET failure = json_remove(json_set(failure, "
    "'$.blame_withdrawn', json_extract(failure, '$.blamed')), '$.blamed') "
    "WHERE job_id = ?1 AND attempt = ?2 AND json_valid(failure) "
    "AND json_extract(failure, '$.blamed') IS NOT NULL";

int
db_blame_withdraw(struct db *db, int64_t job_id, int attempt)
{
    sqlite3_stmt *st = db->blame_withdraw;
    int rc = db_txn_begin(db);

    if (rc < 0)
        return rc;
    sqlite3_bind_int64(st, 1, job_id);
    sqlite3_bind_int(st, 2, attempt);
    if ((rc = db_exec(db, st, "blame withdraw")) < 0)
        return rc;
    st = db->failure_unblame;
    sqlite3_bind_int64(st, 1, job_id);
    sqlite3_bind_int(st, 2, attempt);
    return db_exec(db, st, "failure unblame");
}

static const char sql_blame_node[] =
    "SELECT node, job_id, attempt, time_ms, kind, evidence FROM blame "
    "WHERE node = ?1 AND withdrawn = 0 AND time_ms >= ?2 ORDER BY time_ms";

static const char sql_blame_job[] =
    "SELECT node, job_id, attempt, time_ms, kind, evidence FROM blame "
    "WHERE job_id = ?1 AND withdrawn = 0 AND time_ms >= ?2 ORDER BY id";

static int
blame_walk(struct db *db, sqlite3_stmt *st, const char *label,
    db_blame_fn *fn, void *arg)
{
    int rc;

    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct db_blame b = {
            .node = col_text(st, 0),
            .job_id = sqlite3_column_int64(st, 1),
            .attempt = sqlite3_column_int(st, 2),
            .time_ms = sqlite3_column_int64(st, 3),
            .kind = col_text(st, 4),
            .evidence = col_text(st, 5),
        };
        int frc = fn(&b, arg);

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
db_blame_node_foreach(struct db *db, const char *node, int64_t since_ms,
    db_blame_fn *fn, void *arg)
{
    bind_text(db->blame_node, 1, node);
    sqlite3_bind_int64(db->blame_node, 2, since_ms);
    return blame_walk(db, db->blame_node, "blame by node", fn, arg);
}

int
db_blame_job_foreach(struct db *db, int64_t job_id, int64_t since_ms,
    db_blame_fn *fn, void *arg)
{
    sqlite3_bind_int64(db->blame_job, 1, job_id);
    sqlite3_bind_int64(db->blame_job, 2, since_ms);
    return blame_walk(db, db->blame_job, "blame by job", fn, arg);
}

/* ---- failure history ---------------------------------------------------- */

/* Every failed attempt of a job, with how one rank ended in it. */
static const char sql_failures_job[] =
    "SELECT a.attempt, a.failure_kind, a.failure, a.resume_step, "
    "r.state, r.exit_code, r.signal, r.step, r.end_ms, a.detected_ms "
    "FROM attempts a LEFT JOIN ranks r ON r.job_id = a.job_id "
    "AND r.attempt = a.attempt AND r.rank = ?2 "
    "WHERE a.job_id = ?1 AND a.failure_kind != '' ORDER BY a.attempt";

static const char sql_placement_nodes[] =
    "SELECT attempt, node FROM placements WHERE job_id = ?1 "
    "ORDER BY attempt, node_rank";

void
db_failure_rows_free(struct db_failure_row *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i].failure);
        for (size_t k = 0; k < v[i].nnodes; k++)
            free(v[i].nodes[k]);
        free(v[i].nodes);
    }
    free(v);
}

int
db_job_failures(struct db *db, int64_t job_id, int rank,
    struct db_failure_row **out, size_t *n)
{
    sqlite3_stmt *st = db->failures_job;
    struct db_failure_row *v = NULL;
    size_t cnt = 0;
    int rc;

    *out = NULL;
    *n = 0;
    sqlite3_bind_int64(st, 1, job_id);
    sqlite3_bind_int(st, 2, rank);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct db_failure_row *f;

        v = xreallocarray(v, cnt + 1, sizeof(*v));
        f = &v[cnt++];
        memset(f, 0, sizeof(*f));
        f->attempt = sqlite3_column_int(st, 0);
        if (policy_kind_parse(col_text(st, 1), &f->kind) < 0)
            f->kind = POLICY_KIND_RANK_EXIT;
        f->failure = col_strdup(st, 2);
        f->resume_step = sqlite3_column_int64(st, 3);
        f->rank_known = sqlite3_column_type(st, 4) != SQLITE_NULL;
        if (f->rank_known)
            proto_rank_state_parse(col_text(st, 4), &f->rank_state);
        f->rank_has_exit = sqlite3_column_type(st, 5) != SQLITE_NULL;
        f->rank_exit_code = sqlite3_column_int(st, 5);
        f->rank_signal = sqlite3_column_int(st, 6);
        f->rank_step = f->rank_known ? sqlite3_column_int64(st, 7) : -1;
        f->rank_end_ms = sqlite3_column_int64(st, 8);
        f->detected_ms = sqlite3_column_int64(st, 9);
    }
    db_done(st);
    if (rc != SQLITE_DONE) {
        db_failure_rows_free(v, cnt);
        return db_fail(db, "failure history", rc);
    }
    st = db->placement_nodes;
    sqlite3_bind_int64(st, 1, job_id);
    while (cnt > 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        int num = sqlite3_column_int(st, 0);

        for (size_t i = 0; i < cnt; i++) {
            struct db_failure_row *f = &v[i];

            if (f->attempt != num)
                continue;
            f->nodes = xreallocarray(f->nodes, f->nnodes + 1,
                sizeof(*f->nodes));
            f->nodes[f->nnodes++] = col_strdup(st, 1);
            break;
        }
    }
    db_done(st);
    if (cnt > 0 && rc != SQLITE_DONE) {
        db_failure_rows_free(v, cnt);
        return db_fail(db, "failure history nodes", rc);
    }
    *out = v;
    *n = cnt;
    return 0;
}

/* ---- goodput ------------------------------------------------------------ */

#define GOODPUT_SELECT                                                      \
    "SELECT a.job_id, a.attempt, a.state, a.start_ms, a.running_ms, "       \
    "a.end_ms, a.failed_ms, a.failure_kind, a.resume_step, "                \
    "c.attempt, c.complete_ms, j.state, j.end_ms, "                         \
    "j.nodes * j.ranks_per_node, "                                          \
    "(SELECT attempt FROM checkpoints l WHERE l.job_id = a.job_id "         \
    " ORDER BY step DESC LIMIT 1), "                                        \
    "(SELECT complete_ms FROM checkpoints l WHERE l.job_id = a.job_id "     \
    " ORDER BY step DESC LIMIT 1) "                                         \
    "FROM attempts a JOIN jobs j ON j.id = a.job_id "                       \
    "LEFT JOIN checkpoints c ON c.job_id = a.job_id "                       \
    "AND c.step = a.resume_step "

static const char sql_goodput_all[] =
    GOODPUT_SELECT "ORDER BY a.job_id, a.attempt";
static const char sql_goodput_job[] =
    GOODPUT_SELECT "WHERE a.job_id = ?1 ORDER BY a.attempt";

int
db_goodput_foreach(struct db *db, int64_t job_id, db_goodput_fn *fn,
    void *arg)
{
    sqlite3_stmt *st = job_id > 0 ? db->goodput_job : db->goodput_all;
    int rc;

    if (job_id > 0)
        sqlite3_bind_int64(st, 1, job_id);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct db_goodput_row r;
        int frc;

        memset(&r, 0, sizeof(r));
        r.job_id = sqlite3_column_int64(st, 0);
        r.attempt = sqlite3_column_int(st, 1);
        attempt_state_parse(col_text(st, 2), &r.state);
        r.start_ms = sqlite3_column_int64(st, 3);
        r.running_ms = sqlite3_column_int64(st, 4);
        r.end_ms = sqlite3_column_int64(st, 5);
        r.failed_ms = sqlite3_column_int64(st, 6);
        r.has_failure =
            policy_kind_parse(col_text(st, 7), &r.failure_kind) == 0;
        r.resume_step = sqlite3_column_int64(st, 8);
        r.resumed_ckpt_attempt = sqlite3_column_int(st, 9);
        r.resumed_ckpt_ms = sqlite3_column_int64(st, 10);
        job_state_parse(col_text(st, 11), &r.job_state);
        r.job_end_ms = sqlite3_column_int64(st, 12);
        r.world_size = sqlite3_column_int(st, 13);
        r.last_ckpt_attempt = sqlite3_column_int(st, 14);
        r.last_ckpt_ms = sqlite3_column_int64(st, 15);
        frc = fn(&r, arg);
        if (frc != 0) {
            db_done(st);
            return frc;
        }
    }
    db_done(st);
    if (rc != SQLITE_DONE)
        return db_fail(db, "goodput rows", rc);
    return 0;
}

/* ---- events ------------------------------------------------------------- */

static const char sql_event_insert[] =
    "INSERT INTO events (time_ms, actor, subject, kind, detail) "
    "VALUES (?1, ?2, ?3, ?4, ?5)";

int
db_event_insert(struct db *db, int64_t time_ms, const char *actor,
    const char *subject, const char *kind, const char *detail)
{
    sqlite3_stmt *st = db->event_insert;
    int rc = db_txn_begin(db);

    if (rc < 0)
        return rc;
    sqlite3_bind_int64(st, 1, time_ms);
    bind_text(st, 2, actor);
    bind_text(st, 3, subject);
    bind_text(st, 4, kind);
    bind_text(st, 5, detail ? detail : "{}");
    return db_exec(db, st, "event insert");
}

static const char sql_events_subject[] =
    "SELECT id, time_ms, actor, subject, kind, detail FROM events "
    "WHERE subject = ?1 ORDER BY id DESC LIMIT ?2";

int
db_events_foreach(struct db *db, const char *subject, int limit,
    db_event_fn *fn, void *arg)
{
    sqlite3_stmt *st = db->events_subject;
    int rc;

    bind_text(st, 1, subject);
    sqlite3_bind_int(st, 2, limit);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct db_event ev = {
            .id = sqlite3_column_int64(st, 0),
            .time_ms = sqlite3_column_int64(st, 1),
            .actor = col_text(st, 2),
            .subject = col_text(st, 3),
            .kind = col_text(st, 4),
            .detail = col_text(st, 5),
        };
        int frc = fn(&ev, arg);

        if (frc != 0) {
            db_done(st);
            return frc;
        }
    }
    db_done(st);
    if (rc != SQLITE_DONE)
        return db_fail(db, "events list", rc);
    return 0;
}

/* ---- tokens ------------------------------------------------------------- */

static const char sql_token_insert[] =
    "INSERT INTO tokens (hash, user, role, created_ms) "
    "VALUES (?1, ?2, ?3, ?4)";

int
db_token_insert(struct db *db, const char *hash, const char *user,
    const char *role, int64_t created_ms)
{
    sqlite3_stmt *st = db->token_insert;
    int rc = db_txn_begin(db);

    if (rc < 0)
        return rc;
    bind_text(st, 1, hash);
    bind_text(st, 2, user);
    bind_text(st, 3, role);
    sqlite3_bind_int64(st, 4, created_ms);
    return db_exec(db, st, "token insert");
}

static const char sql_token_lookup[] =
    "SELECT user, role FROM tokens WHERE hash = ?1";

int
db_token_lookup(struct db *db, const char *hash, char **user, char **role)
{
    sqlite3_stmt *st = db->token_lookup;
    int rc;

    bind_text(st, 1, hash);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *user = col_strdup(st, 0);
        *role = col_strdup(st, 1);
        db_done(st);
        return 0;
    }
    db_done(st);
    if (rc == SQLITE_DONE)
        return -ENOENT;
    return db_fail(db, "token lookup", rc);
}

/* ---- open and close ----------------------------------------------------- */

struct db_stmt_def {
    size_t offset;              /* of the sqlite3_stmt * in struct db */
    const char *sql;
};

#define STMT(field, text) { offsetof(struct db, field), text }

static const struct db_stmt_def db_stmts[] = {
    STMT(begin, sql_begin),
    STMT(commit, sql_commit),
    STMT(rollback, sql_rollback),
    STMT(user_version, sql_user_version),
    STMT(node_insert, sql_node_insert),
    STMT(node_update, sql_node_update),
    STMT(node_touch, sql_node_touch),
    STMT(nodes_all, sql_nodes_all),
    STMT(job_insert, sql_job_insert),
    STMT(job_update, sql_job_update),
    STMT(job_get, sql_job_get),
    STMT(jobs_unfinished, sql_jobs_unfinished),
    STMT(jobs_all, sql_jobs_all),
    STMT(jobs_live, sql_jobs_live),
    STMT(jobs_state, sql_jobs_state),
    STMT(jobs_user_all, sql_jobs_user_all),
    STMT(jobs_user_live, sql_jobs_user_live),
    STMT(jobs_user_state, sql_jobs_user_state),
    STMT(attempt_insert, sql_attempt_insert),
    STMT(placement_insert, sql_placement_insert),
    STMT(rank_insert, sql_rank_insert),
    STMT(attempt_update, sql_attempt_update),
    STMT(rank_update, sql_rank_update),
    STMT(placement_release, sql_placement_release),
    STMT(attempt_get, sql_attempt_get),
    STMT(attempts_job, sql_attempts_job),
    STMT(attempts_live, sql_attempts_live),
    STMT(placements_of, sql_placements_of),
    STMT(ranks_of, sql_ranks_of),
    STMT(event_insert, sql_event_insert),
    STMT(events_subject, sql_events_subject),
    STMT(token_insert, sql_token_insert),
    STMT(token_lookup, sql_token_lookup),
    STMT(checkpoint_insert, sql_checkpoint_insert),
    STMT(checkpoints_job, sql_checkpoints_job),
    STMT(commit_insert, sql_commit_insert),
    STMT(commits_attempt, sql_commits_attempt),
    STMT(blame_insert, sql_blame_insert),
    STMT(blame_withdraw, sql_blame_withdraw),
    STMT(failure_unblame, sql_failure_unblame),
    STMT(blame_node, sql_blame_node),
    STMT(blame_job, sql_blame_job),
    STMT(failures_job, sql_failures_job),
    STMT(placement_nodes, sql_placement_nodes),
    STMT(goodput_all, sql_goodput_all),
    STMT(goodput_job, sql_goodput_job),
};

static sqlite3_stmt **
db_stmt_slot(struct db *db, const struct db_stmt_def *def)
{
    return (sqlite3_stmt **)((char *)db + def->offset);
}

/* Run a PRAGMA (which may return a row) and check it took. */
static int
db_pragma(struct db *db, const char *sql, const char *want, struct err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db->sq, sql, -1, &st, NULL);

    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW && want &&
            strcasecmp(col_text(st, 0), want) != 0) {
            rc = err_set(err, -EIO, "cannot set '%s' on '%s': got '%s'",
                sql, db->path, col_text(st, 0));
            sqlite3_finalize(st);
            return rc;
        }
        if (rc == SQLITE_ROW || rc == SQLITE_DONE)
            rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_OK)
        return err_set(err, -EIO, "cannot run '%s' on '%s': %s", sql,
            db->path, sqlite3_errmsg(db->sq));
    return 0;
}

struct db *
db_open(const char *path, bool sync_full, struct err *err)
{
    struct db *db = xcalloc(1, sizeof(*db));
    int rc;

    db->path = xstrdup(path);
    rc = sqlite3_open_v2(path, &db->sq,
        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
        NULL);
    if (rc != SQLITE_OK) {
        err_set(err, -EIO, "cannot open database '%s': %s", path,
            db->sq ? sqlite3_errmsg(db->sq) : sqlite3_errstr(rc));
        goto fail;
    }
    sqlite3_extended_result_codes(db->sq, 1);
    sqlite3_busy_timeout(db->sq, 5000);
    if (db_pragma(db, "PRAGMA journal_mode = WAL", "wal", err) < 0 ||
        db_pragma(db, sync_full ? "PRAGMA synchronous = FULL"
                                : "PRAGMA synchronous = NORMAL", NULL,
            err) < 0 ||
        db_pragma(db, "PRAGMA foreign_keys = ON", NULL, err) < 0)
        goto fail;
    if (migrate_run(db->sq, path, err) < 0)
        goto fail;
    for (size_t i = 0; i < sizeof(db_stmts) / sizeof(db_stmts[0]); i++) {
        sqlite3_stmt **slot = db_stmt_slot(db, &db_stmts[i]);

        rc = sqlite3_prepare_v3(db->sq, db_stmts[i].sql, -1,
            SQLITE_PREPARE_PERSISTENT, slot, NULL);
        if (rc != SQLITE_OK) {
            err_set(err, -EIO, "cannot prepare statement on '%s': %s "
                "(%.40s...)", path, sqlite3_errmsg(db->sq), db_stmts[i].sql);
            goto fail;
        }
    }
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
    for (size_t i = 0; i < sizeof(db_stmts) / sizeof(db_stmts[0]); i++)
        sqlite3_finalize(*db_stmt_slot(db, &db_stmts[i]));
    if (db->sq)
        sqlite3_close(db->sq);
    free(db->path);
    free(db);
}
