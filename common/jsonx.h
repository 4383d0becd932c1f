/*
 * jsonx.h - strict helpers over cJSON
 *
 * Getters validate one field and set err naming it ("field 'nodes': must be
 * an integer"). A missing optional field leaves *out at the default. JSON
 * numbers are doubles in cJSON; jsonx_get_int accepts only integral values
 * within [min, max] (and within ±2^53).
 */
#ifndef COMMON_JSONX_H
#define COMMON_JSONX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "err.h"

struct sbuf;

/* Parse exactly len bytes (no trailing garbage). On failure sets err
 * ("invalid JSON at byte 17") and returns -EINVAL. *out: caller deletes. */
int jsonx_parse(const char *buf, size_t len, cJSON **out, struct err *err);

/* Reject keys of obj that are not in allowed (NULL-terminated); also
 * rejects a non-object. Error: "unknown field 'foo'". */
int jsonx_check_keys(const cJSON *obj, const char *const *allowed,
    struct err *err);

/* Requires "version": PROTO_VERSION-style integer equal to want. */
int jsonx_check_version(const cJSON *obj, int want, struct err *err);

int jsonx_get_int(const cJSON *obj, const char *key, bool required, int64_t min,
    int64_t max, int64_t *out, struct err *err);
int jsonx_get_bool(const cJSON *obj, const char *key, bool required, bool *out,
    struct err *err);
/* *out becomes a new string (caller frees) when present; when absent and
 * not required, *out is left untouched. maxlen is in bytes. Embedded NUL
 * bytes are impossible in cJSON strings, so none are checked. */
int jsonx_get_str(const cJSON *obj, const char *key, bool required,
    size_t maxlen, char **out, struct err *err);
/* Array of strings; *out is NULL-terminated (caller frees each and it). */
int jsonx_get_str_array(const cJSON *obj, const char *key, bool required,
    size_t maxn, size_t maxlen, char ***out, size_t *n, struct err *err);
/* Array of integers in [min, max]. */
int jsonx_get_int_array(const cJSON *obj, const char *key, bool required,
    size_t maxn, int64_t min, int64_t max, int **out, size_t *n,
    struct err *err);

/* For a caller that reads a list itself: the number of entries of c,
 * the value of field key, which must be an array (an object when
 * is_object) of at most maxn entries. 0 with *count set, or -EINVAL with
 * err saying "field 'key': must be <what>" or "more than maxn entries". */
int jsonx_count(const cJSON *c, const char *key, bool is_object,
    const char *what, size_t maxn, size_t *count, struct err *err);

/* Builders: add to obj, return the added item (owned by obj). */
cJSON *jsonx_add_int(cJSON *obj, const char *key, int64_t v);
cJSON *jsonx_add_str(cJSON *obj, const char *key, const char *s);
cJSON *jsonx_add_int_array(cJSON *obj, const char *key, const int *v, size_t n);
cJSON *jsonx_add_str_array(cJSON *obj, const char *key, char *const *v,
    size_t n);

/* Print without formatting; caller frees with free(). Never NULL. What
 * cJSON_PrintUnformatted prints, except that integral numbers up to 2^53
 * are written as their digits (never "1.76434e+15"); NULL, an invalid
 * item and a raw one without text print as null. */
char *jsonx_print(const cJSON *json);
/* The same, appended to sb. */
void jsonx_write(struct sbuf *sb, const cJSON *json);

#endif
