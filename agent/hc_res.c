/*
 * hc_res.c - a growing list of check results (see hc_res.h)
 */
#include "hc_res.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/xalloc.h"

struct proto_check_result *
hc_res_add(struct hc_res *res, const char *check,
    enum proto_check_status status, const char *code, const char *scope,
    const char *fmt, ...)
{
    struct proto_check_result *r;
    char ev[PROTO_CHECK_EVIDENCE_MAX];
    va_list ap;

    if (res->n == res->cap) {
        res->cap = res->cap ? 2 * res->cap : 8;
        res->v = xreallocarray(res->v, res->cap, sizeof(*res->v));
    }
    va_start(ap, fmt);
    vsnprintf(ev, sizeof(ev), fmt, ap);
    va_end(ap);
    r = &res->v[res->n++];
    memset(r, 0, sizeof(*r));
    r->check = xstrdup(check);
    r->status = status;
    r->code = xstrdup(code);
    r->scope = xstrdup(scope ? scope : "node");
    r->evidence = xstrdup(ev);
    r->count = 1;
    r->numbers = xcalloc(PROTO_CHECK_NUMBERS_MAX, sizeof(*r->numbers));
    return r;
}

void
hc_res_number(struct proto_check_result *r, const char *name, double value)
{
    if (r->nnumbers >= PROTO_CHECK_NUMBERS_MAX)
        return;
    r->numbers[r->nnumbers].name = xstrdup(name);
    r->numbers[r->nnumbers].value = value;
    r->nnumbers++;
}

struct proto_check_result *
hc_res_find(const struct hc_res *res, const char *code, const char *scope)
{
    for (size_t i = 0; i < res->n; i++)
        if (strcmp(res->v[i].code, code) == 0 &&
            (scope == NULL || strcmp(res->v[i].scope, scope) == 0))
            return &res->v[i];
    return NULL;
}

void
hc_res_to_json(const struct hc_res *res, int64_t duration_ms, cJSON *out)
{
    int64_t now = hc_wall_ms();

    for (size_t i = 0; i < res->n; i++) {
        res->v[i].duration_ms = duration_ms;
        res->v[i].at_ms = now;
        cJSON_AddItemToArray(out, proto_check_result_to_json(&res->v[i]));
    }
}

void
hc_res_release(struct hc_res *res)
{
    for (size_t i = 0; i < res->n; i++)
        proto_check_result_release(&res->v[i]);
    free(res->v);
    memset(res, 0, sizeof(*res));
}

int64_t
hc_mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t
hc_wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
