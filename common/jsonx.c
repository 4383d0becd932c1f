/*
 * jsonx.c - strict helpers over cJSON
 *
 * cJSON is permissive by design (it keeps duplicate keys, stores every
 * number as a double); the validators here make every message field pass
 * the same checks: right type, integral, in range, bounded length.
 */
#include "jsonx.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sbuf.h"
#include "xalloc.h"

/* Integers above this are not exactly representable in a double. */
#define JSONX_INT_LIMIT 9007199254740992.0

int
jsonx_parse(const char *buf, size_t len, cJSON **out, struct err *err)
{
    const char *end = NULL;
    cJSON *json;

    *out = NULL;
    if (len == 0)
        return err_set(err, -EINVAL, "invalid JSON: empty body");
    json = cJSON_ParseWithLengthOpts(buf, len, &end, false);
    if (json == NULL) {
        const char *at = cJSON_GetErrorPtr();
        size_t off = at && at >= buf && at <= buf + len ? (size_t)(at - buf)
                                                        : 0;
        return err_set(err, -EINVAL, "invalid JSON at byte %zu", off);
    }
    /* Only whitespace may follow the value. */
    while (end && end < buf + len &&
           (*end == ' ' || *end == '\n' || *end == '\r' || *end == '\t'))
        end++;
    if (end && end < buf + len && *end != '\0') {
        size_t off = (size_t)(end - buf);
        cJSON_Delete(json);
        return err_set(err, -EINVAL, "invalid JSON: trailing data at byte %zu",
            off);
    }
    *out = json;
    return 0;
}

int
jsonx_check_keys(const cJSON *obj, const char *const *allowed, struct err *err)
{
    const cJSON *item;

    if (!cJSON_IsObject(obj))
        return err_set(err, -EINVAL, "expected a JSON object");
    cJSON_ArrayForEach(item, obj) {
        const char *const *a;
        const cJSON *other;
        bool known = false;

        for (a = allowed; *a; a++) {
            if (strcmp(*a, item->string) == 0) {
                known = true;
                break;
            }
        }
        if (!known)
            return err_set(err, -EINVAL, "unknown field '%s'", item->string);
        /* A key given twice is ambiguous; refuse it. */
        for (other = item->next; other; other = other->next) {
            if (strcmp(other->string, item->string) == 0)
                return err_set(err, -EINVAL, "field '%s' given twice",
                    item->string);
        }
    }
    return 0;
}

static const cJSON *
jsonx_field(const cJSON *obj, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(obj, key);
}

/* The field key of obj in *item: 1 when present, 0 when absent and not
 * required (nothing to read), -EINVAL when absent and required. */
static int
jsonx_need(const cJSON *obj, const char *key, bool required, const cJSON **item,
    struct err *err)
{
    *item = jsonx_field(obj, key);
    if (*item != NULL)
        return 1;
    if (required)
        return err_set(err, -EINVAL, "missing field '%s'", key);
    return 0;
}

static int
jsonx_number(const cJSON *item, const char *key, int64_t min, int64_t max,
    int64_t *out, struct err *err)
{
    double d;

    if (!cJSON_IsNumber(item))
        return err_set(err, -EINVAL, "field '%s': must be an integer", key);
    d = item->valuedouble;
    if (!isfinite(d) || d != floor(d) || fabs(d) > JSONX_INT_LIMIT)
        return err_set(err, -EINVAL, "field '%s': must be an integer", key);
    if (d < (double)min || d > (double)max)
        return err_set(err, -EINVAL,
            "field '%s': must be between %lld and %lld, got %.0f", key,
            (long long)min, (long long)max, d);
    *out = (int64_t)d;
    return 0;
}

int
jsonx_check_version(const cJSON *obj, int want, struct err *err)
{
    const cJSON *v = jsonx_field(obj, "version");
    int64_t got;
    int rc;

    if (v == NULL)
        return err_set(err, -EINVAL, "missing field 'version'");
    rc = jsonx_number(v, "version", 0, 1000000, &got, err);
    if (rc < 0)
        return rc;
    if (got != want)
        return err_set(err, -EINVAL,
            "field 'version': unsupported version %lld (this build speaks %d)",
            (long long)got, want);
    return 0;
}

int
jsonx_get_int(const cJSON *obj, const char *key, bool required, int64_t min,
    int64_t max, int64_t *out, struct err *err)
{
    const cJSON *item;
    int rc = jsonx_need(obj, key, required, &item, err);

    if (rc <= 0)
        return rc;
    return jsonx_number(item, key, min, max, out, err);
}

int
jsonx_get_bool(const cJSON *obj, const char *key, bool required, bool *out,
    struct err *err)
{
    const cJSON *item;
    int rc = jsonx_need(obj, key, required, &item, err);

    if (rc <= 0)
        return rc;
    if (!cJSON_IsBool(item))
        return err_set(err, -EINVAL, "field '%s': must be true or false", key);
    *out = cJSON_IsTrue(item);
    return 0;
}

int
jsonx_get_str(const cJSON *obj, const char *key, bool required, size_t maxlen,
    char **out, struct err *err)
{
    const cJSON *item;
    size_t len;
    int rc = jsonx_need(obj, key, required, &item, err);

    if (rc <= 0)
        return rc;
    if (!cJSON_IsString(item) || item->valuestring == NULL)
        return err_set(err, -EINVAL, "field '%s': must be a string", key);
    len = strlen(item->valuestring);
    if (len > maxlen)
        return err_set(err, -EINVAL, "field '%s': longer than %zu bytes", key,
            maxlen);
    free(*out);
    *out = xstrdup(item->valuestring);
    return 0;
}

int
jsonx_count(const cJSON *c, const char *key, bool is_object, const char *what,
    size_t maxn, size_t *count, struct err *err)
{
    if (!(is_object ? cJSON_IsObject(c) : cJSON_IsArray(c)))
        return err_set(err, -EINVAL, "field '%s': must be %s", key, what);
    *count = (size_t)cJSON_GetArraySize(c);
    if (*count > maxn)
        return err_set(err, -EINVAL, "field '%s': more than %zu entries", key,
            maxn);
    return 0;
}

int
jsonx_get_str_array(const cJSON *obj, const char *key, bool required,
    size_t maxn, size_t maxlen, char ***out, size_t *n, struct err *err)
{
    const cJSON *arr, *item;
    char **v;
    size_t i = 0, count;
    int rc = jsonx_need(obj, key, required, &arr, err);

    if (rc <= 0)
        return rc;
    rc = jsonx_count(arr, key, false, "an array of strings", maxn, &count, err);
    if (rc < 0)
        return rc;
    v = xcalloc(count + 1, sizeof(*v));
    cJSON_ArrayForEach(item, arr) {
        if (!cJSON_IsString(item) || item->valuestring == NULL) {
            xstrv_free(v, i);
            return err_set(err, -EINVAL, "field '%s[%zu]': must be a string",
                key, i);
        }
        if (strlen(item->valuestring) > maxlen) {
            xstrv_free(v, i);
            return err_set(err, -EINVAL,
                "field '%s[%zu]': longer than %zu bytes", key, i, maxlen);
        }
        v[i++] = xstrdup(item->valuestring);
    }
    *out = v;
    *n = count;
    return 0;
}

int
jsonx_get_int_array(const cJSON *obj, const char *key, bool required,
    size_t maxn, int64_t min, int64_t max, int **out, size_t *n,
    struct err *err)
{
    const cJSON *arr, *item;
    size_t i = 0, count;
    int *v;
    int rc = jsonx_need(obj, key, required, &arr, err);

    if (rc <= 0)
        return rc;
    rc = jsonx_count(arr, key, false, "an array of integers", maxn, &count,
        err);
    if (rc < 0)
        return rc;
    v = xcalloc(count + 1, sizeof(*v));
    cJSON_ArrayForEach(item, arr) {
        char name[96];
        int64_t x;

        /* The element's name is printed for the error only. */
        if (jsonx_number(item, key, min, max, &x, NULL) < 0) {
            snprintf(name, sizeof(name), "%s[%zu]", key, i);
            rc = jsonx_number(item, name, min, max, &x, err);
            free(v);
            return rc;
        }
        v[i++] = (int)x;
    }
    *out = v;
    *n = count;
    return 0;
}

cJSON *
jsonx_add_int(cJSON *obj, const char *key, int64_t v)
{
    return cJSON_AddNumberToObject(obj, key, (double)v);
}

cJSON *
jsonx_add_str(cJSON *obj, const char *key, const char *s)
{
    return cJSON_AddStringToObject(obj, key, s ? s : "");
}

cJSON *
jsonx_add_int_array(cJSON *obj, const char *key, const int *v, size_t n)
{
    cJSON *arr = cJSON_AddArrayToObject(obj, key);

    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(arr, cJSON_CreateNumber(v[i]));
    return arr;
}

cJSON *
jsonx_add_str_array(cJSON *obj, const char *key, char *const *v, size_t n)
{
    cJSON *arr = cJSON_AddArrayToObject(obj, key);

    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(arr, cJSON_CreateString(v[i]));
    return arr;
}

/* ---- printing ------------------------------------------------------------ */

/*
 * The printer writes what cJSON_PrintUnformatted writes, into an sbuf,
 * with one difference: an integral number up to 2^53 is written as its
 * digits. cJSON writes every number past INT_MAX through "%1.15g", a
 * sscanf and often "%1.17g" (as "1.76434e+15", at times), which made
 * number printing a tenth of the scheduler's CPU per agent status (the
 * generations are such numbers; docs/scale.md).
 */

static void
jsonx_write_uint(struct sbuf *sb, uint64_t v)
{
    char digits[24];
    size_t i = sizeof(digits);

    do {
        digits[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v > 0);
    sbuf_add(sb, digits + i, sizeof(digits) - i);
}

static void
jsonx_write_number(struct sbuf *sb, double d)
{
    char text[32];
    double back;

    if (isnan(d) || isinf(d)) {
        sbuf_add(sb, "null", 4);
    } else if (d == floor(d) && fabs(d) <= JSONX_INT_LIMIT) {
        if (signbit(d)) /* "-0" too, as cJSON */
            sbuf_addch(sb, '-');
        jsonx_write_uint(sb, (uint64_t)fabs(d));
    } else {
        /* As cJSON: 15 digits when they read back as the same double
         * (within an epsilon), else 17. */
        snprintf(text, sizeof(text), "%1.15g", d);
        back = strtod(text, NULL);
        if (fabs(back - d) > fmax(fabs(back), fabs(d)) * DBL_EPSILON)
            snprintf(text, sizeof(text), "%1.17g", d);
        sbuf_addstr(sb, text);
    }
}

static void
jsonx_write_string(struct sbuf *sb, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    static const char shorts[] = "\"\\\b\f\n\r\t";
    const char *run, *e;

    sbuf_addch(sb, '"');
    for (run = s = s ? s : ""; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        char esc[6] = { '\\', 0 };
        size_t n = 2;

        if (c >= 32 && c != '"' && c != '\\')
            continue;
        sbuf_add(sb, run, (size_t)(s - run));
        run = s + 1;
        if ((e = strchr(shorts, c)) != NULL) {
            esc[1] = "\"\\bfnrt"[e - shorts];
        } else {
            memcpy(esc + 1, "u00", 3);
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            n = 6;
        }
        sbuf_add(sb, esc, n);
    }
    sbuf_add(sb, run, (size_t)(s - run));
    sbuf_addch(sb, '"');
}

void
jsonx_write(struct sbuf *sb, const cJSON *json)
{
    const cJSON *c;

    switch (json != NULL ? json->type & 0xFF : cJSON_NULL) {
    case cJSON_False:
        sbuf_add(sb, "false", 5);
        break;
    case cJSON_True:
        sbuf_add(sb, "true", 4);
        break;
    case cJSON_Number:
        jsonx_write_number(sb, json->valuedouble);
        break;
    case cJSON_String:
        jsonx_write_string(sb, json->valuestring);
        break;
    case cJSON_Raw:
        sbuf_addstr(sb, json->valuestring ? json->valuestring : "null");
        break;
    case cJSON_Array:
    case cJSON_Object:
        sbuf_addch(sb, cJSON_IsArray(json) ? '[' : '{');
        for (c = json->child; c != NULL; c = c->next) {
            if (c != json->child)
                sbuf_addch(sb, ',');
            if (cJSON_IsObject(json)) {
                jsonx_write_string(sb, c->string);
                sbuf_addch(sb, ':');
            }
            jsonx_write(sb, c);
        }
        sbuf_addch(sb, cJSON_IsArray(json) ? ']' : '}');
        break;
    default: /* cJSON_NULL, cJSON_Invalid */
        sbuf_add(sb, "null", 4);
    }
}

char *
jsonx_print(const cJSON *json)
{
    struct sbuf sb;

    sbuf_init(&sb);
    jsonx_write(&sb, json);
    return sbuf_detach(&sb, NULL);
}
