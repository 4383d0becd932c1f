/*
 * health_parse.h - the health runner's pure parts (unit tested)
 *
 * No libuv, no I/O: what health.c decides about text.
 */
#ifndef AGENT_HEALTH_PARSE_H
#define AGENT_HEALTH_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/proto.h"

/* The most results one run of one check may yield. */
#define HEALTH_RESULTS_PER_CHECK 256

/*
 * A site check's settings from the first 4 KiB of its file: a comment line
 * (#, //, -- or ;) holding "lockstep:" then key=value words, interval= and
 * timeout= durations with a unit (ms, s, m, h): `# lockstep: interval=60s
 * timeout=10s`. Sets what the line names and leaves the rest; no such line
 * is 0. -EINVAL with err for an unknown key or a bad value (interval from
 * 100 ms to 1 day, timeout from 100 ms to 1 hour).
 */
int health_header_parse(const char *text, size_t len, int64_t *interval_ms,
    int64_t *timeout_ms, struct err *err);

/*
 * A check's stdout (text, NUL-terminated) into results: one JSON object or
 * a non-empty array of them (at most HEALTH_RESULTS_PER_CHECK), each a result
 * as proto_check_result_from_json(strict = false) takes it. Returns 0 with *res
 * (caller releases each and frees) and *n, or -EINVAL with err.
 */
int health_output_parse(const char *text, struct proto_check_result **res,
    size_t *n, struct err *err);

/* Whether the (status, code, scope) sets of a and b differ. */
bool health_results_differ(const struct proto_check_result *a, size_t na,
    const struct proto_check_result *b, size_t nb);

#endif
