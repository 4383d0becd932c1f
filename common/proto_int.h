/*
 * proto_int.h - helpers shared by the proto*.c files (not for others)
 */
#ifndef COMMON_PROTO_INT_H
#define COMMON_PROTO_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "err.h"
#include "proto.h"

/* The object `key` of obj, string → string, into kv pairs (caller frees
 * with proto_kv_array_free): at most maxn entries, keys valid variable
 * names (env_keys) or label names, values at most maxval bytes. Absent:
 * 0 with nothing set. */
int proto_kv_from_json(const cJSON *obj, const char *key, size_t maxn,
    bool env_keys, size_t maxval, struct proto_kv **out, size_t *n,
    struct err *err);
/* jsonx_get_int into an int (*out keeps its value when absent). */
int proto_get_int(const cJSON *obj, const char *key, bool required, int64_t min,
    int64_t max, int *out, struct err *err);

#endif
