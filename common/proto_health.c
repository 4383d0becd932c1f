/*
 * proto_health.c - a node's check results, as its agent reports them
 *
 * The "health" object of POST /v1/agent/status, and the one result a site
 * check prints on its stdout (the same shape, fewer fields required).
 * docs/api.md is the reference.
 */
#include "proto.h"
#include "proto_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jsonx.h"
#include "names.h"
#include "xalloc.h"

static const char *const check_status_names[PROTO_CHECK_STATUS_COUNT] = {
    [PROTO_CHECK_PASS] = "PASS",
    [PROTO_CHECK_WARN] = "WARN",
    [PROTO_CHECK_FAIL] = "FAIL",
    [PROTO_CHECK_UNKNOWN] = "UNKNOWN",
    [PROTO_CHECK_TIMEOUT] = "TIMEOUT",
    [PROTO_CHECK_HUNG] = "HUNG",
    [PROTO_CHECK_SKIPPED] = "SKIPPED",
};

const char *
proto_check_status_str(enum proto_check_status s)
{
    return names_str(check_status_names, PROTO_CHECK_STATUS_COUNT, (int)s,
        "UNKNOWN");
}

int
proto_check_status_parse(const char *s, enum proto_check_status *out)
{
    int i = names_index(check_status_names, PROTO_CHECK_STATUS_COUNT, s);

    if (i < 0)
        return -EINVAL;
    *out = (enum proto_check_status)i;
    return 0;
}

/* A check name, code or number name: [a-z0-9_.:-], starting with a letter
 * or digit. Scopes may also hold '/' (mount points) and upper case. */
static bool
valid_ident(const char *s, bool scope)
{
    if (s[0] == '\0' || s[0] == '.' || s[0] == '-' || s[0] == ':')
        return false;
    for (const char *p = s; *p; p++) {
        char c = *p;

        if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
            c == '.' || c == ':' || c == '-')
            continue;
        if (scope && ((c >= 'A' && c <= 'Z') || c == '/' || c == '@' ||
                         c == '+' || c == '='))
            continue;
        return false;
    }
    return true;
}

static int
get_ident(const cJSON *obj, const char *key, bool required, size_t max,
    bool scope, char **out, struct err *err)
{
    int rc;

    if ((rc = jsonx_get_str(obj, key, required, max, out, err)) < 0)
        return rc;
    if (*out != NULL && !valid_ident(*out, scope))
        return err_set(err, -EINVAL, "field '%s': '%.60s' may hold only %s",
            key, *out,
            scope ? "letters, digits and _ . : - / @ + ="
                  : "lower-case letters, digits and _ . : -");
    return 0;
}

static int
get_numbers(const cJSON *obj, struct proto_check_result *r, struct err *err)
{
    const cJSON *nums = cJSON_GetObjectItemCaseSensitive(obj, "numbers");
    const cJSON *item;
    size_t n;
    int rc;

    if (nums == NULL)
        return 0;
    if ((rc = jsonx_count(nums, "numbers", true, "an object of numbers",
             PROTO_CHECK_NUMBERS_MAX, &n, err)) < 0)
        return rc;
    r->numbers = xcalloc(n + 1, sizeof(*r->numbers));
    cJSON_ArrayForEach(item, nums) {
        if (strlen(item->string) > 64 || !valid_ident(item->string, false))
            return err_set(err, -EINVAL,
                "field 'numbers': '%.60s' is not a valid name", item->string);
        if (!cJSON_IsNumber(item) || !isfinite(item->valuedouble))
            return err_set(err, -EINVAL,
                "field 'numbers.%s': must be a finite number", item->string);
        r->numbers[r->nnumbers].name = xstrdup(item->string);
        r->numbers[r->nnumbers].value = item->valuedouble;
        r->nnumbers++;
    }
    return 0;
}

void
proto_check_result_release(struct proto_check_result *r)
{
    free(r->check);
    free(r->code);
    free(r->scope);
    free(r->evidence);
    for (size_t i = 0; i < r->nnumbers; i++)
        free(r->numbers[i].name);
    free(r->numbers);
    memset(r, 0, sizeof(*r));
}

void
proto_check_result_copy(struct proto_check_result *dst,
    const struct proto_check_result *src)
{
    *dst = *src;
    dst->check = src->check ? xstrdup(src->check) : NULL;
    dst->code = src->code ? xstrdup(src->code) : NULL;
    dst->scope = src->scope ? xstrdup(src->scope) : NULL;
    dst->evidence = src->evidence ? xstrdup(src->evidence) : NULL;
    dst->numbers = xcalloc(src->nnumbers + 1, sizeof(*dst->numbers));
    for (size_t i = 0; i < src->nnumbers; i++) {
        dst->numbers[i].name = xstrdup(src->numbers[i].name);
        dst->numbers[i].value = src->numbers[i].value;
    }
}

/* The fields only a report's result carries (the agent's own). */
static int
get_run_fields(const cJSON *json, struct proto_check_result *r, struct err *err)
{
    int64_t run = 0;
    int rc;

    if ((rc = jsonx_get_int(json, "duration_ms", false, 0, INT64_MAX,
             &r->duration_ms, err)) ||
        (rc = jsonx_get_int(json, "at_ms", false, 0, INT64_MAX, &r->at_ms,
             err)) ||
        (rc = jsonx_get_int(json, "run", false, 0, INT64_MAX, &run, err)))
        return rc;
    r->run = (uint64_t)run;
    return 0;
}

int
proto_check_result_from_json(const cJSON *json, bool strict,
    struct proto_check_result *r, struct err *err)
{
    static const char *const keys[] = { "check", "status", "code", "scope",
        "evidence", "duration_ms", "at_ms", "run", "count", "numbers", NULL };
    char *status = NULL;
    int rc;

    memset(r, 0, sizeof(*r));
    r->count = 1;
    if (!cJSON_IsObject(json))
        return err_set(err, -EINVAL, "a check result must be a JSON object");
    if ((rc = jsonx_check_keys(json, keys, err)) ||
        (rc = get_ident(json, "check", strict, PROTO_CHECK_NAME_MAX, false,
             &r->check, err)) ||
        (rc = jsonx_get_str(json, "status", true, 16, &status, err)) ||
        (rc = get_ident(json, "code", true, PROTO_CHECK_CODE_MAX, false,
             &r->code, err)) ||
        (rc = get_ident(json, "scope", false, PROTO_CHECK_SCOPE_MAX, true,
             &r->scope, err)) ||
        (rc = jsonx_get_str(json, "evidence", false, PROTO_CHECK_EVIDENCE_MAX,
             &r->evidence, err)) ||
        (rc = jsonx_get_int(json, "count", false, 1, INT64_MAX, &r->count,
             err)) ||
        (rc = get_numbers(json, r, err)) ||
        (strict && (rc = get_run_fields(json, r, err))))
        goto fail;
    if (proto_check_status_parse(status, &r->status) < 0) {
        rc = err_set(err, -EINVAL,
            "field 'status': '%.20s' is not one of PASS, WARN, FAIL, UNKNOWN, "
            "TIMEOUT, HUNG, SKIPPED",
            status);
        goto fail;
    }
    free(status);
    if (r->scope == NULL)
        r->scope = xstrdup("node");
    if (r->evidence == NULL)
        r->evidence = xstrdup("");
    return 0;
fail:
    free(status);
    proto_check_result_release(r);
    return rc;
}

cJSON *
proto_check_result_to_json(const struct proto_check_result *r)
{
    cJSON *o = cJSON_CreateObject();

    if (r->check)
        jsonx_add_str(o, "check", r->check);
    jsonx_add_str(o, "status", proto_check_status_str(r->status));
    jsonx_add_str(o, "code", r->code ? r->code : "");
    jsonx_add_str(o, "scope", r->scope ? r->scope : "node");
    jsonx_add_str(o, "evidence", r->evidence ? r->evidence : "");
    jsonx_add_int(o, "duration_ms", r->duration_ms);
    jsonx_add_int(o, "at_ms", r->at_ms);
    jsonx_add_int(o, "run", (int64_t)r->run);
    jsonx_add_int(o, "count", r->count);
    if (r->nnumbers) {
        cJSON *nums = cJSON_AddObjectToObject(o, "numbers");

        for (size_t i = 0; i < r->nnumbers; i++)
            cJSON_AddNumberToObject(nums, r->numbers[i].name,
                r->numbers[i].value);
    }
    return o;
}

void
proto_health_release(struct proto_health *h)
{
    free(h->boot_id);
    for (size_t i = 0; i < h->nresults; i++)
        proto_check_result_release(&h->results[i]);
    free(h->results);
    memset(h, 0, sizeof(*h));
}

int
proto_health_from_json(const cJSON *json, struct proto_health *h,
    struct err *err)
{
    static const char *const keys[] = { "boot_id", "full_pass", "results",
        NULL };
    const cJSON *arr, *item;
    size_t n = 0;
    int rc;

    memset(h, 0, sizeof(*h));
    if (!cJSON_IsObject(json))
        return err_set(err, -EINVAL, "field 'health': must be an object");
    if ((rc = jsonx_check_keys(json, keys, err)) ||
        (rc = jsonx_get_str(json, "boot_id", false, 64, &h->boot_id, err)) ||
        (rc = jsonx_get_bool(json, "full_pass", false, &h->full_pass, err)))
        goto fail;
    arr = cJSON_GetObjectItemCaseSensitive(json, "results");
    if (arr != NULL &&
        (rc = jsonx_count(arr, "results", false, "an array of objects",
             PROTO_CHECK_RESULTS_MAX, &n, err)) < 0)
        goto fail;
    h->results = xcalloc(n + 1, sizeof(*h->results));
    cJSON_ArrayForEach(item, arr) {
        rc = proto_check_result_from_json(item, true, &h->results[h->nresults],
            err);
        if (rc < 0) {
            err_prefix(err, "field 'results[%zu]': ", h->nresults);
            goto fail;
        }
        h->nresults++;
    }
    if (h->boot_id == NULL)
        h->boot_id = xstrdup("");
    return 0;
fail:
    proto_health_release(h);
    return rc;
}

cJSON *
proto_health_to_json(const struct proto_health *h)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *arr;

    jsonx_add_str(o, "boot_id", h->boot_id ? h->boot_id : "");
    cJSON_AddBoolToObject(o, "full_pass", h->full_pass);
    arr = cJSON_AddArrayToObject(o, "results");
    for (size_t i = 0; i < h->nresults; i++)
        cJSON_AddItemToArray(arr, proto_check_result_to_json(&h->results[i]));
    return o;
}
