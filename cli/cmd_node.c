/*
 * cmd_node.c - lockstep node: one node in detail, with its history
 *
 * The scheduler keeps every state change of a node as an event with who,
 * when and why; this shows the newest of them under the node's resources.
 */
#include "cli/cli.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "common/timeid.h"
#include "common/xalloc.h"

static void
print_events(const cJSON *events)
{
    static const char *const headers[] = { "TIME", "ACTOR", "KIND",
        "SUBJECT", "DETAIL" };
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
print_node(const cJSON *n)
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

int
cmd_node(int argc, char **argv, struct cli *cli)
{
    static const struct option lopts[] = {
        { "json", no_argument, NULL, 'j' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    bool json = cli->json;
    struct cli_resp resp;
    cJSON *node = NULL;
    char *name, *path;
    struct err err;
    int c, rc, status = CLI_EXIT_FAIL;

    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", lopts, NULL)) != -1) {
        switch (c) {
        case 'j':
            json = true;
            break;
        case 'h':
            return cli_help(cli);
        default:
            return cli_opt_error(cli, argv, c);
        }
    }
    if (optind >= argc)
        return cli_usage(cli, "which node? give its name");
    if (argc - optind > 1)
        return cli_usage(cli, "unexpected argument '%s'", argv[optind + 1]);
    if (!proto_valid_name(argv[optind], PROTO_NODE_NAME_MAX))
        return cli_usage(cli, "invalid node name '%s'", argv[optind]);

    cli_resp_init(&resp);
    name = cli_escape(cli, argv[optind]);
    path = xasprintf("/v1/nodes/%s", name);
    rc = cli_call(cli, "GET", path, NULL, CLI_HTTP_QUIET, &resp, &node,
        &err);
    if (rc < 0) {
        cli_fail_about(cli, "node", argv[optind], rc, &err);
    } else {
        if (json)
            cli_print_body(&resp);
        else
            print_node(node);
        status = CLI_EXIT_OK;
    }
    cJSON_Delete(node);
    cli_resp_release(&resp);
    free(path);
    free(name);
    return status;
}
