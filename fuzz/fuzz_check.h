/*
 * fuzz_check.h - a health check's results on their way to the scheduler
 *
 * What a check finds travels: lockstep-check prints its results as a
 * JSON array (hc_res_to_json), the agent reads that output as it reads a
 * site check's (health_output_parse), names the check, and sends the
 * results in its node report (proto_health), which the scheduler parses
 * strictly. A result any of these refuses would cost the node its
 * report, so every result a check produced from any input must make the
 * whole trip. The harnesses of the checks' parsers call these.
 */
#ifndef FUZZ_FUZZ_CHECK_H
#define FUZZ_FUZZ_CHECK_H

#include "fuzz/fuzz.h"

#include "agent/hc_res.h"
#include "agent/health_parse.h"
#include "common/proto.h"

/* The agent's side: results of check `name` (as health.c names them) go
 * into a node report's health, which the scheduler must accept. Takes
 * ownership of res (n results). */
static inline void
fuzz_results_report(struct proto_check_result *res, size_t n, const char *name)
{
    struct proto_health h = { .boot_id = xstrdup("fuzz-boot") }, back;
    struct err err = { 0 };
    cJSON *json;

    for (size_t i = 0; i < n; i++) {
        free(res[i].check);
        res[i].check = xstrdup(name);
        res[i].run = 1;
        res[i].duration_ms = 12;
        res[i].at_ms = 1700000000000;
    }
    h.results = res;
    h.nresults = n;
    json = proto_health_to_json(&h);
    if (proto_health_from_json(json, &back, &err) < 0) {
        char *text = fuzz_json_text(json);

        fuzz_fail("the scheduler refuses what the agent reports: %s\n%s\n",
            err.msg, text);
    }
    proto_health_release(&back);
    cJSON_Delete(json);
    proto_health_release(&h);
}

/* A built-in check's results: printed as lockstep-check prints them, read
 * back as the agent reads them, then reported. */
static inline void
fuzz_results_travel(const struct hc_res *out, const char *name)
{
    struct proto_check_result *res = NULL;
    struct err err = { 0 };
    cJSON *arr = cJSON_CreateArray();
    char *text;
    size_t n = 0;

    if (out->n == 0)
        fuzz_fail("check %s produced no result at all\n", name);
    hc_res_to_json(out, 7, arr);
    text = fuzz_json_text(arr);
    cJSON_Delete(arr);
    if (health_output_parse(text, &res, &n, &err) < 0)
        fuzz_fail("the agent refuses what check %s printed: %s\n%s\n", name,
            err.msg, text);
    fuzz_assert(n == out->n);
    fuzz_results_report(res, n, name);
    free(text);
}

#endif
