/*
 * db_health.c - the store's node health: findings, each check's latest
 * run, and the history of results that changed something
 *
 * A finding keeps its row when it closes (as history); the newest
 * HEALTH_CLOSED_KEEP closed findings and HEALTH_RESULTS_KEEP results of a
 * node are kept, older ones are deleted as new ones are written.
 */
#include "scheduler/db.h"
#include "scheduler/db_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "common/err.h"
#include "common/jsonx.h"
#include "common/log.h"
#include "common/xalloc.h"

#define HEALTH_CLOSED_KEEP 100
#define HEALTH_RESULTS_KEEP 200

/* ---- findings ----------------------------------------------------------- */

static char *
numbers_json(const struct health_finding *f)
{
    cJSON *o = cJSON_CreateObject();
    char *s;

    for (size_t i = 0; i < f->nnumbers; i++)
        cJSON_AddNumberToObject(o, f->numbers[i].name, f->numbers[i].value);
    s = jsonx_print(o);
    cJSON_Delete(o);
    return s;
}

static void
numbers_unjson(const char *text, struct health_finding *f)
{
    cJSON *o = cJSON_Parse(text);
    const cJSON *it;
    size_t n = 0;

    f->numbers = xcalloc((size_t)cJSON_GetArraySize(o) + 1,
        sizeof(*f->numbers));
    cJSON_ArrayForEach(it, o) {
        if (!cJSON_IsNumber(it) || it->string == NULL)
            continue;
        f->numbers[n].name = xstrdup(it->string);
        f->numbers[n++].value = it->valuedouble;
    }
    f->nnumbers = n;
    cJSON_Delete(o);
}

static const char sql_finding_insert[] =
    "INSERT INTO health_findings (node, check_name, code, scope, status, "
    "evidence, numbers, first_ms, last_ms, count, consecutive, last_run, "
    "excluding, pass_since, open, closed_ms, closed_how, closed_by, "
    "closed_why) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
    "?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)";

static const char sql_finding_update[] =
    "UPDATE health_findings SET status = ?5, evidence = ?6, numbers = ?7, "
    "first_ms = ?8, last_ms = ?9, count = ?10, consecutive = ?11, "
    "last_run = ?12, excluding = ?13, pass_since = ?14, open = ?15, "
    "closed_ms = ?16, closed_how = ?17, closed_by = ?18, closed_why = ?19 "
    "WHERE id = ?20 AND node = ?1 AND check_name = ?2 AND code = ?3 AND "
    "scope = ?4";

static const char sql_findings_prune[] =
    "DELETE FROM health_findings WHERE node = ?1 AND open = 0 AND id NOT IN "
    "(SELECT id FROM health_findings WHERE node = ?1 AND open = 0 "
    "ORDER BY id DESC LIMIT ?2)";

int
db_health_finding_put(struct db *db, const char *node, struct health_finding *f,
    int64_t now, const char *closed_by, const char *closed_why)
{
    sqlite3_stmt *st = f->id ? db->finding_update : db->finding_insert;
    char *numbers = numbers_json(f);
    int rc;

    DB_BIND(st, 1, DB_TEXT(node), DB_TEXT(f->check), DB_TEXT(f->code),
        DB_TEXT(f->scope), DB_TEXT(proto_check_status_str(f->status)),
        DB_TEXT(f->evidence), DB_TEXT(numbers), DB_INT(f->first_ms),
        DB_INT(f->last_ms), DB_INT(f->count), DB_INT(f->consecutive),
        DB_INT(f->last_run), DB_INT(f->excluding), DB_INT(f->pass_since),
        DB_INT(f->open), DB_INT(f->open ? 0 : now), DB_TEXT(f->closed_how),
        DB_TEXT(closed_by), DB_TEXT(closed_why));
    if (f->id)
        DB_BIND(st, 20, DB_INT(f->id));
    free(numbers);
    rc = db_write(db, st,
        f->id ? "health finding update" : "health finding insert");
    if (rc < 0)
        return rc;
    if (f->id == 0)
        f->id = sqlite3_last_insert_rowid(db->sq);
    if (f->open)
        return 0;
    return DB_WRITE(db, db->findings_prune, "health findings prune",
        DB_TEXT(node), DB_INT(HEALTH_CLOSED_KEEP));
}

static const char sql_findings_node[] =
    "SELECT id, node, check_name, code, scope, status, evidence, numbers, "
    "first_ms, last_ms, count, consecutive, last_run, excluding, "
    "pass_since, open, closed_ms, closed_how, closed_by, closed_why "
    "FROM health_findings WHERE node = ?1 ORDER BY open DESC, id DESC "
    "LIMIT ?2";

static const char sql_findings_open[] =
    "SELECT id, node, check_name, code, scope, status, evidence, numbers, "
    "first_ms, last_ms, count, consecutive, last_run, excluding, "
    "pass_since, open, closed_ms, closed_how, closed_by, closed_why "
    "FROM health_findings WHERE open = 1 ORDER BY id";

/* A row of sql_findings_*: the finding (its strings borrowed from the
 * row, its numbers allocated: finding_row_done frees them). */
static void
finding_row(sqlite3_stmt *st, struct db_finding *out)
{
    struct health_finding *f = &out->f;
    enum proto_check_status status = PROTO_CHECK_UNKNOWN;

    memset(out, 0, sizeof(*out));
    proto_check_status_parse(db_col_text(st, 5), &status);
    f->id = sqlite3_column_int64(st, 0);
    out->node = db_col_text(st, 1);
    f->check = (char *)db_col_text(st, 2);
    f->code = (char *)db_col_text(st, 3);
    f->scope = (char *)db_col_text(st, 4);
    f->status = status;
    f->evidence = (char *)db_col_text(st, 6);
    numbers_unjson(db_col_text(st, 7), f);
    f->first_ms = sqlite3_column_int64(st, 8);
    f->last_ms = sqlite3_column_int64(st, 9);
    f->count = sqlite3_column_int64(st, 10);
    f->consecutive = sqlite3_column_int(st, 11);
    f->last_run = (uint64_t)sqlite3_column_int64(st, 12);
    f->excluding = sqlite3_column_int(st, 13) != 0;
    f->pass_since = sqlite3_column_int64(st, 14);
    f->open = sqlite3_column_int(st, 15) != 0;
    out->closed_ms = sqlite3_column_int64(st, 16);
    out->closed_how = db_col_text(st, 17);
    out->closed_by = db_col_text(st, 18);
    out->closed_why = db_col_text(st, 19);
}

static void
finding_row_done(struct db_finding *r)
{
    for (size_t i = 0; i < r->f.nnumbers; i++)
        free(r->f.numbers[i].name);
    free(r->f.numbers);
}

static int
finding_walk(sqlite3_stmt *st, void *arg)
{
    struct db_walk *w = arg;
    struct db_finding r;
    int rc;

    finding_row(st, &r);
    rc = w->fn.finding(&r, w->arg);
    finding_row_done(&r);
    return rc;
}

int
db_health_findings_foreach(struct db *db, const char *node, int limit,
    db_finding_fn *fn, void *arg)
{
    struct db_walk w = { .fn.finding = fn, .arg = arg };

    return DB_ROWS(db, db->findings_node, "health findings", finding_walk, &w,
        DB_TEXT(node), DB_INT(limit));
}

/* ---- checks ------------------------------------------------------------- */

static const char sql_check_put[] =
    "INSERT INTO health_checks (node, check_name, run, at_ms, results) "
    "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (node, check_name) DO UPDATE "
    "SET run = excluded.run, at_ms = excluded.at_ms, "
    "results = excluded.results";

int
db_health_check_put(struct db *db, const char *node,
    const struct health_check *hc, int64_t now)
{
    cJSON *arr = cJSON_CreateArray();
    char *text;
    int rc;

    for (size_t i = 0; i < hc->nresults; i++)
        cJSON_AddItemToArray(arr, proto_check_result_to_json(&hc->results[i]));
    text = jsonx_print(arr);
    cJSON_Delete(arr);
    rc = DB_WRITE(db, db->check_put, "health check put", DB_TEXT(node),
        DB_TEXT(hc->check), DB_INT(hc->run), DB_INT(now), DB_TEXT(text));
    free(text);
    return rc;
}

static const char sql_checks_all[] =
    "SELECT node, check_name, run, results FROM health_checks";

static const char sql_result_insert[] =
    "INSERT INTO health_results (node, check_name, code, scope, status, "
    "evidence, run, at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";

static const char sql_results_prune[] =
    "DELETE FROM health_results WHERE node = ?1 AND id NOT IN (SELECT id "
    "FROM health_results WHERE node = ?1 ORDER BY id DESC LIMIT ?2)";

int
db_health_result_insert(struct db *db, const char *node,
    const struct proto_check_result *r, int64_t now)
{
    int rc = DB_WRITE(db, db->result_insert, "health result insert",
        DB_TEXT(node), DB_TEXT(r->check), DB_TEXT(r->code),
        DB_TEXT(r->scope && *r->scope ? r->scope : "node"),
        DB_TEXT(proto_check_status_str(r->status)), DB_TEXT(r->evidence),
        DB_INT(r->run), DB_INT(r->at_ms > 0 ? r->at_ms : now));

    if (rc < 0)
        return rc;
    return DB_WRITE(db, db->results_prune, "health results prune",
        DB_TEXT(node), DB_INT(HEALTH_RESULTS_KEEP));
}

static const char sql_results_node[] =
    "SELECT check_name, code, scope, status, evidence, run, at_ms "
    "FROM health_results WHERE node = ?1 ORDER BY id DESC LIMIT ?2";

static int
result_walk(sqlite3_stmt *st, void *arg)
{
    struct db_walk *w = arg;
    struct db_health_result r = {
        .check = db_col_text(st, 0),
        .code = db_col_text(st, 1),
        .scope = db_col_text(st, 2),
        .status = db_col_text(st, 3),
        .evidence = db_col_text(st, 4),
        .run = sqlite3_column_int64(st, 5),
        .at_ms = sqlite3_column_int64(st, 6),
    };

    return w->fn.health_result(&r, w->arg);
}

int
db_health_results_foreach(struct db *db, const char *node, int limit,
    db_health_result_fn *fn, void *arg)
{
    struct db_walk w = { .fn.health_result = fn, .arg = arg };

    return DB_ROWS(db, db->results_node, "health results", result_walk, &w,
        DB_TEXT(node), DB_INT(limit));
}

/* ---- a removed node ----------------------------------------------------- */

static const char sql_findings_forget[] =
    "UPDATE health_findings SET open = 0, closed_ms = ?2, "
    "closed_how = 'removed' WHERE node = ?1 AND open = 1";

static const char sql_checks_forget[] =
    "DELETE FROM health_checks WHERE node = ?1";

int
db_health_forget(struct db *db, const char *node, int64_t now)
{
    int rc = DB_WRITE(db, db->findings_forget, "health findings forget",
        DB_TEXT(node), DB_INT(now));

    if (rc == 0)
        rc = DB_WRITE(db, db->checks_forget, "health checks forget",
            DB_TEXT(node));
    return rc;
}

/* ---- loading ------------------------------------------------------------ */

/* The node's health, created when its row says its agent sends health. */
static struct health *
node_health(struct node_table *t, const char *name)
{
    struct node *node = node_table_find(t, name);

    if (node == NULL)
        return NULL;
    if (node->health == NULL) {
        node->health = health_create();
        free(node->health->agent_id);
        node->health->agent_id = xstrdup(node->agent_id);
    }
    return node->health;
}

static int
load_finding(sqlite3_stmt *st, void *arg)
{
    struct db_finding r;
    struct health *h;

    finding_row(st, &r);
    h = node_health(arg, r.node);
    if (h)
        health_add_finding(h, &r.f);
    finding_row_done(&r);
    return 0;
}

static int
load_check(sqlite3_stmt *st, void *arg)
{
    struct health *h = node_health(arg, db_col_text(st, 0));
    cJSON *arr = cJSON_Parse(db_col_text(st, 3));
    struct proto_check_result *v;
    const cJSON *it;
    size_t n = 0;

    if (h == NULL) {
        cJSON_Delete(arr);
        return 0;
    }
    v = xcalloc((size_t)cJSON_GetArraySize(arr) + 1, sizeof(*v));
    cJSON_ArrayForEach(it, arr) {
        struct err err = { 0 };

        if (proto_check_result_from_json(it, true, &v[n], &err) == 0)
            n++;
    }
    cJSON_Delete(arr);
    health_add_check(h, db_col_text(st, 1),
        (uint64_t)sqlite3_column_int64(st, 2), v, n);
    return 0;
}

int
db_health_load(struct db *db, struct node_table *t)
{
    int rc = db_rows(db, db->findings_open, "health findings load",
        load_finding, t);

    if (rc == 0)
        rc = db_rows(db, db->checks_all, "health checks load", load_check, t);
    return rc;
}

const struct db_stmt_def db_health_stmts[] = {
    DB_STMT(finding_insert),
    DB_STMT(finding_update),
    DB_STMT(findings_prune),
    DB_STMT(findings_node),
    DB_STMT(findings_open),
    DB_STMT(check_put),
    DB_STMT(checks_all),
    DB_STMT(result_insert),
    DB_STMT(results_prune),
    DB_STMT(results_node),
    DB_STMT(findings_forget),
    DB_STMT(checks_forget),
    DB_STMT_END,
};
