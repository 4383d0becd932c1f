/*
 * cmd_nodes.c - lockstep nodes: one line per node
 *
 * What on-call looks at first: which nodes are not UP and why (with who
 * cordoned them), their health checks' summary, what is free (free/total
 * for CPUs, memory and GPUs alike), what runs where, and when each agent
 * last reported.
 */
#include "cli/cli.h"

#include <stdlib.h>

#include "common/timeid.h"
#include "common/xalloc.h"

/* The node's health summary ("ok", "2 findings"), "-" without checks. */
static const char *
health_summary(const cJSON *n)
{
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(n, "health");

    return cJSON_IsObject(h) ? cli_jstr(h, "summary") : "-";
}

static void
print_nodes(const cJSON *nodes, const char *name)
{
    static const char *const headers[] = { "NAME", "STATE", "CPUS(free/total)",
        "MEM(free/total)", "GPUS(free/total)", "LABELS", "JOBS", "LAST-SEEN",
        "HEALTH", "REASON" };
    struct cli_table *t;
    int64_t now = timeid_now_ms();
    const cJSON *n;

    if (cJSON_GetArraySize(nodes) == 0) {
        fprintf(stderr, "no nodes have registered\n");
        return;
    }
    t = cli_table_create(headers, ARRAY_SIZE(headers));
    cJSON_ArrayForEach(n, nodes) {
        char *labels = cli_fmt_labels(
            cJSON_GetObjectItemCaseSensitive(n, "labels"));
        char *jobs = cli_fmt_int_list(
            cJSON_GetObjectItemCaseSensitive(n, "jobs"), false);
        int64_t seen = cli_jint(n, "last_seen_ms", 0);
        const char *reason = cli_jstr(n, "reason");
        char mem[32], free_mem[32], age[32];

        cli_table_row(t);
        cli_table_cell(t, "%s", cli_jstr(n, "name"));
        cli_table_cell(t, "%s", cli_jstr(n, "state"));
        cli_table_cell(t, "%lld/%lld", (long long)cli_jint(n, "free_cpus", 0),
            (long long)cli_jint(n, "cpus", 0));
        cli_table_cell(t, "%s/%s",
            cli_fmt_mb(cli_jint(n, "free_memory_mb", 0), free_mem,
                sizeof(free_mem)),
            cli_fmt_mb(cli_jint(n, "memory_mb", 0), mem, sizeof(mem)));
        cli_table_cell(t, "%d/%d",
            cJSON_GetArraySize(
                cJSON_GetObjectItemCaseSensitive(n, "free_gpus")),
            cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(n, "gpus")));
        cli_table_cell(t, "%s", labels);
        cli_table_cell(t, "%s", jobs);
        if (seen > 0)
            cli_table_cell(t, "%s ago",
                cli_fmt_age(seen, now, age, sizeof(age)));
        else
            cli_table_cell(t, "never");
        cli_table_cell(t, "%s", health_summary(n));
        if (*cli_jstr(n, "cordoned_by") && *reason)
            cli_table_cell(t, "%s (by %s)", reason, cli_jstr(n, "cordoned_by"));
        else
            cli_table_cell(t, "%s", *reason ? reason : "");
        free(jobs);
        free(labels);
    }
    cli_table_print(t, stdout, 0);
    cli_table_destroy(t);
}

const struct cli_cmd cli_cmd_nodes = {
    .name = "nodes",
    .summary = "list nodes",
    .hint = "for one node: lockstep node NAME",
    CLI_GET("nodes", "/v1/nodes", print_nodes),
};
