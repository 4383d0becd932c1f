/*
 * cmd_node.c - lockstep node: one node in detail, with its history
 *
 * The scheduler keeps every state change of a node as an event with who,
 * when and why; this shows the newest of them under the node's resources.
 */
#include "cli/cli.h"

#include <stdlib.h>

#include "common/jsonx.h"
#include "common/timeid.h"
#include "common/xalloc.h"

static void
print_events(const cJSON *events)
{
    static const char *const headers[] = { "TIME", "ACTOR", "KIND", "SUBJECT",
        "DETAIL" };
    struct cli_table *t = cli_table_create(headers, ARRAY_SIZE(headers));
    const cJSON *e;

    cJSON_ArrayForEach(e, events) {
        const cJSON *detail = cJSON_GetObjectItemCaseSensitive(e, "detail");
        char when[64];

        cli_table_row(t);
        cli_table_cell(t, "%s",
            cli_fmt_time(cli_jint(e, "time_ms", 0), when, sizeof(when)));
        cli_table_cell(t, "%s", cli_jstr(e, "actor"));
        cli_table_cell(t, "%s", cli_jstr(e, "kind"));
        cli_table_cell(t, "%s", cli_jstr(e, "subject"));
        if (detail == NULL || cJSON_IsNull(detail) ||
            (cJSON_IsObject(detail) && detail->child == NULL)) {
            cli_table_cell(t, "-");
        } else {
            char *s = jsonx_print(detail);

            cli_table_cell(t, "%s", s);
            free(s);
        }
    }
    printf("\nevents:\n");
    cli_table_print(t, stdout, 2);
    cli_table_destroy(t);
}

static void
print_node(const cJSON *n, const char *name)
{
    const cJSON *events = cJSON_GetObjectItemCaseSensitive(n, "events");
    char *gpus = cli_fmt_int_list(cJSON_GetObjectItemCaseSensitive(n, "gpus"),
        true);
    char *free_gpus = cli_fmt_int_list(
        cJSON_GetObjectItemCaseSensitive(n, "free_gpus"), true);
    char *labels = cli_fmt_labels(
        cJSON_GetObjectItemCaseSensitive(n, "labels"));
    char *jobs = cli_fmt_int_list(cJSON_GetObjectItemCaseSensitive(n, "jobs"),
        false);
    const char *reason = cli_jstr(n, "reason");
    int64_t now = timeid_now_ms();
    int64_t seen = cli_jint(n, "last_seen_ms", 0);
    char m1[32], m2[32], t1[64], t2[64], age[32];

    printf("node %s  %s\n", cli_jstr(n, "name"), cli_jstr(n, "state"));
    if (*reason)
        printf("  reason:      %s\n", reason);
    printf("  addr:        %s\n", cli_jstr(n, "addr"));
    printf("  cpus:        %lld free of %lld\n",
        (long long)cli_jint(n, "free_cpus", 0),
        (long long)cli_jint(n, "cpus", 0));
    printf("  memory:      %s free of %s\n",
        cli_fmt_mb(cli_jint(n, "free_memory_mb", 0), m1, sizeof(m1)),
        cli_fmt_mb(cli_jint(n, "memory_mb", 0), m2, sizeof(m2)));
    printf("  gpus:        %s free of %s\n", free_gpus, gpus);
    printf("  labels:      %s\n", labels);
    printf("  jobs:        %s\n", jobs);
    printf("  last seen:   %s", cli_fmt_time(seen, t1, sizeof(t1)));
    if (seen > 0)
        printf(" (%s ago)", cli_fmt_age(seen, now, age, sizeof(age)));
    printf("\n  registered:  %s\n",
        cli_fmt_time(cli_jint(n, "registered_ms", 0), t2, sizeof(t2)));
    if (cJSON_GetArraySize(events) > 0)
        print_events(events);
    free(jobs);
    free(labels);
    free(free_gpus);
    free(gpus);
}

const struct cli_cmd cli_cmd_node = {
    .name = "node",
    .summary = "show a node and its recent events",
    CLI_ONE_NODE,
    CLI_GET("node NODE", "/v1/nodes", print_node),
};
