/*
 * db_col.c - values in and out of the store's columns
 *
 * Text is bound as a copy (SQLITE_TRANSIENT), so callers may free what
 * they bound at once; column text is copied before the next step or
 * reset. Lists and maps (GPU indices, labels, argv, env, reserved nodes)
 * are stored as JSON text, encoded and decoded here so the rest of the
 * scheduler never sees a column.
 */
#include "scheduler/db.h"
#include "scheduler/db_int.h"

#include <errno.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "common/jsonx.h"
#include "common/xalloc.h"

/* ---- binds and columns -------------------------------------------------- */

void
db_bind_text(sqlite3_stmt *st, int i, const char *s)
{
    sqlite3_bind_text(st, i, s ? s : "", -1, SQLITE_TRANSIENT);
}

void
db_bind_vals(sqlite3_stmt *st, int first, const struct db_val *v, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        int i = first + (int)k;

        switch (v[k].type) {
        case DB_VAL_NULL:
            sqlite3_bind_null(st, i);
            break;
        case DB_VAL_INT:
            sqlite3_bind_int64(st, i, v[k].i);
            break;
        case DB_VAL_TEXT:
            db_bind_text(st, i, v[k].s);
            break;
        case DB_VAL_OPT_TEXT:
            if (v[k].s != NULL)
                db_bind_text(st, i, v[k].s);
            else
                sqlite3_bind_null(st, i);
            break;
        }
    }
}

void
db_bind_attempt_key(sqlite3_stmt *st, int first, int64_t job_id, int attempt)
{
    sqlite3_bind_int64(st, first, job_id);
    sqlite3_bind_int(st, first + 1, attempt);
}

const char *
db_col_text(sqlite3_stmt *st, int i)
{
    const unsigned char *s = sqlite3_column_text(st, i);

    return s ? (const char *)s : "";
}

char *
db_col_strdup(sqlite3_stmt *st, int i)
{
    return xstrdup(db_col_text(st, i));
}

bool
db_col_is_null(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL;
}

/* ---- JSON encoders ------------------------------------------------------ */

/* Print a JSON value as a new string and delete it. */
static char *
json_take_print(cJSON *json)
{
    char *s = jsonx_print(json);

    cJSON_Delete(json);
    return s;
}

char *
db_json_int_array(const int *v, size_t n)
{
    cJSON *arr = cJSON_CreateArray();

    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(arr, cJSON_CreateNumber(v[i]));
    return json_take_print(arr);
}

char *
db_json_kv(const struct proto_kv *kv, size_t n)
{
    cJSON *obj = cJSON_CreateObject();

    for (size_t i = 0; i < n; i++)
        cJSON_AddStringToObject(obj, kv[i].key, kv[i].value);
    return json_take_print(obj);
}

char *
db_json_strv(char *const *v, size_t n)
{
    cJSON *arr = cJSON_CreateArray();

    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(arr, cJSON_CreateString(v[i]));
    return json_take_print(arr);
}

/* ---- JSON decoders ------------------------------------------------------ */

/* Store item, the i-th of its container, in element i of vec. */
typedef void json_item_fn(const cJSON *item, void *vec, size_t i);

/* The string value of item, or "" when it is not a string. */
static const char *
json_str_or_empty(const cJSON *item)
{
    const char *s = cJSON_GetStringValue(item);

    return s ? s : "";
}

static void
json_int_item(const cJSON *item, void *vec, size_t i)
{
    ((int *)vec)[i] = (int)cJSON_GetNumberValue(item);
}

static void
json_kv_item(const cJSON *item, void *vec, size_t i)
{
    struct proto_kv *kv = (struct proto_kv *)vec + i;

    kv->key = xstrdup(item->string);
    kv->value = xstrdup(json_str_or_empty(item));
}

static void
json_str_item(const cJSON *item, void *vec, size_t i)
{
    ((char **)vec)[i] = xstrdup(json_str_or_empty(item));
}

/* Decode text, a JSON array (or object, when want_object), into a new
 * zeroed vector of elements of size elem, one more than it has, each
 * filled by fn. -EIO, with *out and *n untouched, for anything else. */
static int
json_decode(const char *text, bool want_object, size_t elem, json_item_fn *fn,
    void **out, size_t *n)
{
    cJSON *json = cJSON_Parse(text);
    const cJSON *item;
    size_t i = 0;
    void *vec;

    if (want_object ? !cJSON_IsObject(json) : !cJSON_IsArray(json)) {
        cJSON_Delete(json);
        return -EIO;
    }
    vec = xcalloc((size_t)cJSON_GetArraySize(json) + 1, elem);
    cJSON_ArrayForEach(item, json) {
        fn(item, vec, i++);
    }
    cJSON_Delete(json);
    *out = vec;
    *n = i;
    return 0;
}

int
db_unjson_int_array(const char *text, int **out, size_t *n)
{
    void *v;
    int rc = json_decode(text, false, sizeof(**out), json_int_item, &v, n);

    if (rc == 0)
        *out = v;
    return rc;
}

int
db_unjson_kv(const char *text, struct proto_kv **out, size_t *n)
{
    void *v;
    int rc = json_decode(text, true, sizeof(**out), json_kv_item, &v, n);

    if (rc == 0)
        *out = v;
    return rc;
}

int
db_unjson_strv(const char *text, char ***out, size_t *n)
{
    void *v;
    int rc = json_decode(text, false, sizeof(**out), json_str_item, &v, n);

    if (rc == 0)
        *out = v;
    return rc;
}

/* ---- failure evidence --------------------------------------------------- */

void
db_bind_evidence(struct sqlite3_stmt *st, int first, const struct evidence *e)
{
    DB_BIND(st, first, DB_OPT_TEXT(e->node),
        DB_IF(e->rank >= 0, DB_INT(e->rank)),
        DB_IF(e->has_exit, DB_INT(e->exit_code)),
        DB_IF(e->has_exit, DB_INT(e->signal)), DB_INT(e->fenced),
        DB_IF(e->last_step >= 0, DB_INT(e->last_step)),
        DB_INT(e->last_heartbeat_ms), DB_INT(e->idle_ms),
        DB_OPT_TEXT(e->source), DB_OPT_TEXT(e->actor),
        DB_OPT_TEXT(e->stderr_tail), DB_INT(e->failed_ms),
        DB_TEXT(evidence_blame_str(e->blame)));
}

static char *
col_opt_strdup(struct sqlite3_stmt *st, int i)
{
    return db_col_is_null(st, i) ? NULL : db_col_strdup(st, i);
}

void
db_col_evidence(struct sqlite3_stmt *st, int first, struct evidence *e)
{
    e->node = col_opt_strdup(st, first);
    e->rank = db_col_is_null(st, first + 1) ? -1
                                            : sqlite3_column_int(st, first + 1);
    e->has_exit = !db_col_is_null(st, first + 2);
    e->exit_code = sqlite3_column_int(st, first + 2);
    e->signal = sqlite3_column_int(st, first + 3);
    e->fenced = sqlite3_column_int(st, first + 4) != 0;
    e->last_step = db_col_is_null(st, first + 5)
                       ? -1
                       : sqlite3_column_int64(st, first + 5);
    e->last_heartbeat_ms = sqlite3_column_int64(st, first + 6);
    e->idle_ms = sqlite3_column_int64(st, first + 7);
    e->source = col_opt_strdup(st, first + 8);
    e->actor = col_opt_strdup(st, first + 9);
    e->stderr_tail = col_opt_strdup(st, first + 10);
    e->failed_ms = sqlite3_column_int64(st, first + 11);
    if (evidence_blame_parse(db_col_text(st, first + 12), &e->blame) < 0)
        e->blame = EVIDENCE_BLAME_NONE;
}
