/*
 * cmd_stats.c - lockstep stats: cluster-wide goodput
 *
 * The effective training time ratio over every job that ever started,
 * where the rest of the time went (work lost to failures, recovery), and
 * how many failures of each kind the scheduler handled. On-call reads it
 * to see whether the cluster is getting better or worse at keeping runs
 * going.
 */
#include "cli/cli.h"

#include "common/timeid.h"

static void
print_stats(const cJSON *st, const char *name)
{
    const cJSON *fail = cJSON_GetObjectItemCaseSensitive(st, "failures");
    const cJSON *ettr = cJSON_GetObjectItemCaseSensitive(st, "ettr");
    const cJSON *it;
    char b[32];

    printf("jobs started:  %lld\n", (long long)cli_jint(st, "jobs", 0));
    printf("wall-clock:    %s (summed over jobs)\n",
        timeid_fmt_duration(cli_jint(st, "wall_ms", 0), b, sizeof(b)));
    printf("productive:    %s\n",
        timeid_fmt_duration(cli_jint(st, "productive_ms", 0), b, sizeof(b)));
    printf("lost work:     %s\n",
        timeid_fmt_duration(cli_jint(st, "lost_ms", 0), b, sizeof(b)));
    printf("recovery:      %s\n",
        timeid_fmt_duration(cli_jint(st, "recovery_ms", 0), b, sizeof(b)));
    printf("rank-time:     %s productive\n",
        timeid_fmt_duration(cli_jint(st, "rank_productive_ms", 0), b,
            sizeof(b)));
    printf("ETTR:          %.3f\n",
        cJSON_IsNumber(ettr) ? ettr->valuedouble : 0.0);
    printf("failures:     ");
    cJSON_ArrayForEach(it, fail)
        printf(" %s %lld%s", it->string, (long long)cli_jnum(it, 0),
            it->next ? "," : "");
    printf("\n");
}

const struct cli_cmd cli_cmd_stats = {
    .name = "stats",
    .summary = "cluster-wide goodput and failure counts",
    CLI_GET("stats", "/v1/stats", print_stats),
};
