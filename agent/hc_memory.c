/*
 * hc_memory.c - lockstep-check memory: available memory from meminfo
 *
 *   lockstep-check memory [--proc-root DIR] [--warn-pct N] [--fail-pct N]
 *
 * Reads DIR/meminfo (DIR: /proc). MemAvailable below --fail-pct (2)
 * percent of MemTotal is FAIL memory.exhausted, below --warn-pct (5) WARN
 * memory.low, else PASS memory.ok; a meminfo without the two fields is
 * UNKNOWN memory.unreadable.
 */
#include "agent/hc.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The value in kB of "Key:" in meminfo text, -1 when absent. */
static int64_t
hc_meminfo_kb(const char *text, const char *key)
{
    size_t len = strlen(key);
    const char *p = text;

    while (p != NULL && *p != '\0') {
        if (strncmp(p, key, len) == 0 && p[len] == ':')
            return strtoll(p + len + 1, NULL, 10);
        p = strchr(p, '\n');
        if (p != NULL)
            p++;
    }
    return -1;
}

int
hc_memory_run(int argc, char **argv, cJSON *out)
{
    const char *root = "/proc";
    int64_t warn_pct = 5, fail_pct = 2, total, avail;
    char text[16384];
    double pct;
    bool bad = false;
    int i = 0, rc;
    cJSON *r;

    while (i < argc && !bad) {
        if (!hc_opt("memory", argc, argv, &i, "proc-root", &root, &bad) &&
            !hc_opt_int("memory", argc, argv, &i, "warn-pct", 0, 100, &warn_pct,
                &bad) &&
            !hc_opt_int("memory", argc, argv, &i, "fail-pct", 0, 100, &fail_pct,
                &bad))
            return hc_usage_unknown("memory", argv[i]);
    }
    if (bad)
        return HC_USAGE;
    if ((rc = hc_read(root, "meminfo", text, sizeof(text))) < 0) {
        hc_add(out, PROTO_CHECK_UNKNOWN, "memory.unreadable", NULL,
            "%s/meminfo: %s", root, strerror(-rc));
        return 0;
    }
    total = hc_meminfo_kb(text, "MemTotal");
    avail = hc_meminfo_kb(text, "MemAvailable");
    if (total <= 0 || avail < 0) {
        hc_add(out, PROTO_CHECK_UNKNOWN, "memory.unreadable", NULL,
            "%s/meminfo: no MemTotal or MemAvailable", root);
        return 0;
    }
    pct = 100.0 * (double)avail / (double)total;
    if (pct < (double)fail_pct)
        r = hc_add(out, PROTO_CHECK_FAIL, "memory.exhausted", NULL,
            "%.1f%% of memory available (fail < %d%%)", pct, (int)fail_pct);
    else if (pct < (double)warn_pct)
        r = hc_add(out, PROTO_CHECK_WARN, "memory.low", NULL,
            "%.1f%% of memory available (warn < %d%%)", pct, (int)warn_pct);
    else
        r = hc_add(out, PROTO_CHECK_PASS, "memory.ok", NULL,
            "%.1f%% of memory available", pct);
    hc_number(r, "total_mb", (double)total / 1024.0);
    hc_number(r, "available_mb", (double)avail / 1024.0);
    hc_number(r, "available_pct", pct);
    return 0;
}
