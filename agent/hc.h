/*
 * hc.h - lockstep-check's built-in checks and what they share
 *
 * lockstep-check (check_main.c) runs one check per process: `lockstep-check
 * NAME [OPTION VALUE]...`. Each built-in is a function of this signature:
 *
 *     int hc_NAME_run(int argc, char **argv, cJSON *out);
 *
 * argv holds the arguments after NAME (argv[0] is the first option, not the
 * program). It appends its results (proto_check_result_to_json objects;
 * "check" may be left out) to the array out and returns 0, HC_USAGE (2)
 * for a usage error after printing why on stderr (lockstep-check exits
 * 2), or a negative errno for a failure that leaves nothing to report
 * (exit 1; the runner makes that UNKNOWN). A check that cannot decide
 * appends UNKNOWN (never PASS); one that does not apply here, SKIPPED.
 *
 * Everything here blocks (statfs, sysfs reads): that is the point of the
 * child process. The agent's runner (health.c) bounds it with a deadline.
 * libuv-free; links common/ only.
 */
#ifndef AGENT_HC_H
#define AGENT_HC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "common/proto.h"

/* The exit status of a usage error. */
#define HC_USAGE 2

/*
 * Append a result to out: status, code, scope (NULL: "node") and evidence
 * (printf format, cut to PROTO_CHECK_EVIDENCE_MAX). Returns the new object,
 * so that the caller can add numbers with hc_number.
 */
cJSON *hc_add(cJSON *out, enum proto_check_status status, const char *code,
    const char *scope, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Add the figure name = v to a result made by hc_add. */
void hc_number(cJSON *result, const char *name, double v);

/*
 * Read the small file dir/name (name may be NULL: dir is the path) into
 * buf, NUL-terminated, trailing white space removed. Returns its length or
 * -errno.
 */
int hc_read(const char *dir, const char *name, char *buf, size_t size);

/*
 * Option parsing over argv (after NAME): *i is the index of an option.
 * hc_opt matches "--name VALUE" (or "--name=VALUE"), sets *value and moves
 * *i past it; it prints a usage error for a missing value and sets
 * *bad. hc_opt_int parses the value as an integer in [min, max].
 */
bool hc_opt(const char *check, int argc, char **argv, int *i, const char *name,
    const char **value, bool *bad);
bool hc_opt_int(const char *check, int argc, char **argv, int *i,
    const char *name, int64_t min, int64_t max, int64_t *value, bool *bad);
/* Print "lockstep-check NAME: unknown option 'X'" and return HC_USAGE. */
int hc_usage_unknown(const char *check, const char *arg);

int hc_disk_run(int argc, char **argv, cJSON *out);
int hc_memory_run(int argc, char **argv, cJSON *out);
int hc_nic_run(int argc, char **argv, cJSON *out);
int hc_pcie_run(int argc, char **argv, cJSON *out);

#endif
