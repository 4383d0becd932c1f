/*
 * hc_res.h - a growing list of check results, as the built-in checks of
 * lockstep-check build them
 *
 * A check appends proto_check_result values (common/proto.h) and, at the
 * end, hands them to the caller as JSON. The list owns every string in it.
 */
#ifndef AGENT_HC_RES_H
#define AGENT_HC_RES_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "common/proto.h"

struct hc_res {
    struct proto_check_result *v;
    size_t n, cap;
};

/*
 * Appends a result of `check` with the given status, code and scope and
 * evidence formatted from fmt (cut at PROTO_CHECK_EVIDENCE_MAX - 1
 * bytes); count is 1 and there are no numbers. Returns the new result,
 * which stays valid until the next append.
 */
struct proto_check_result *hc_res_add(struct hc_res *res, const char *check,
    enum proto_check_status status, const char *code, const char *scope,
    const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* Adds the figure name = value to r (at most PROTO_CHECK_NUMBERS_MAX). */
void hc_res_number(struct proto_check_result *r, const char *name,
    double value);

/* The first result with this code (and scope, unless NULL); NULL if none. */
struct proto_check_result *hc_res_find(const struct hc_res *res,
    const char *code, const char *scope);

/* Appends every result to the JSON array out with duration_ms set. */
void hc_res_to_json(const struct hc_res *res, int64_t duration_ms, cJSON *out);

void hc_res_release(struct hc_res *res);

/* Monotonic milliseconds and wall-clock milliseconds. */
int64_t hc_mono_ms(void);
int64_t hc_wall_ms(void);

#endif
