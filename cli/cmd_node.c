/*
 * cmd_node.c - lockstep node: one node in detail, with its history; and
 * `lockstep node remove NAME` (operators), which forgets one
 *
 * The scheduler keeps every state change of a node as an event with who,
 * when and why; this shows the newest of them under the node's resources,
 * after its blame (docs/fault-tolerance.md §Blame) and its health: each
 * check's latest results, its findings (open ones, then recently closed
 * ones) and the results that changed something.
 * `remove` is POST /v1/nodes/NAME/remove: refused (409) while jobs hold
 * the node, unless --force, which evicts them (they restart elsewhere)
 * and forgets the node once they have left.
 */
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>

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

/* The node's blame rows: what counts toward its exclusion (confirmed),
 * what waits for its job (provisional), and what no longer counts. */
static void
print_blame(const cJSON *blame)
{
    static const char *const headers[] = { "TIME", "JOB", "ATTEMPT", "KIND",
        "STEP", "STATUS", "NOTE" };
    struct cli_table *t = cli_table_create(headers, ARRAY_SIZE(headers));
    const cJSON *b;

    cJSON_ArrayForEach(b, blame) {
        char when[64];

        cli_table_row(t);
        cli_table_cell(t, "%s",
            cli_fmt_time(cli_jint(b, "time_ms", 0), when, sizeof(when)));
        cli_table_cell(t, "%lld", (long long)cli_jint(b, "job", 0));
        cli_table_cell(t, "%lld", (long long)cli_jint(b, "attempt", 0));
        cli_table_cell(t, "%s", cli_jstr(b, "kind"));
        if (cli_jint(b, "step", -1) >= 0)
            cli_table_cell(t, "%lld", (long long)cli_jint(b, "step", -1));
        else
            cli_table_cell(t, "-");
        cli_table_cell(t, "%s", cli_jstr(b, "status"));
        cli_table_cell(t, "%s",
            *cli_jstr(b, "note") ? cli_jstr(b, "note") : "-");
    }
    printf("\nblame:\n");
    cli_table_print(t, stdout, 2);
    cli_table_destroy(t);
}

/* Each check's latest run: one line per result. */
static void
print_checks(const cJSON *checks)
{
    static const char *const headers[] = { "CHECK", "RUN", "STATUS", "CODE",
        "SCOPE", "EVIDENCE" };
    struct cli_table *t = cli_table_create(headers, ARRAY_SIZE(headers));
    const cJSON *c, *r;

    cJSON_ArrayForEach(c, checks) {
        cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(c, "results")) {
            cli_table_row(t);
            cli_table_cell(t, "%s", cli_jstr(c, "check"));
            cli_table_cell(t, "%lld", (long long)cli_jint(c, "run", 0));
            cli_table_cell(t, "%s", cli_jstr(r, "status"));
            cli_table_cell(t, "%s", cli_jstr(r, "code"));
            cli_table_cell(t, "%s", cli_jstr(r, "scope"));
            cli_table_cell(t, "%s", cli_jstr(r, "evidence"));
        }
    }
    printf("\nchecks (latest run):\n");
    cli_table_print(t, stdout, 2);
    cli_table_destroy(t);
}

/* Open findings first, then the recently closed ones. */
static void
print_findings(const cJSON *findings)
{
    static const char *const headers[] = { "FINDING", "STATUS", "RUNS",
        "EXCLUDES", "LAST-SEEN", "CLOSED", "EVIDENCE" };
    struct cli_table *t = cli_table_create(headers, ARRAY_SIZE(headers));
    int64_t now = timeid_now_ms();
    const cJSON *f;

    cJSON_ArrayForEach(f, findings) {
        bool open = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(f, "open"));
        char age[32];

        cli_table_row(t);
        cli_table_cell(t, "%s@%s", cli_jstr(f, "code"), cli_jstr(f, "scope"));
        cli_table_cell(t, "%s", cli_jstr(f, "status"));
        cli_table_cell(t, "%lld", (long long)cli_jint(f, "consecutive", 0));
        cli_table_cell(t, "%s",
            cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(f, "excluding"))
                ? "yes"
                : "no");
        cli_table_cell(t, "%s ago",
            cli_fmt_age(cli_jint(f, "last_ms", 0), now, age, sizeof(age)));
        if (open)
            cli_table_cell(t, "open");
        else if (*cli_jstr(f, "closed_by"))
            cli_table_cell(t, "%s by %s", cli_jstr(f, "closed_how"),
                cli_jstr(f, "closed_by"));
        else
            cli_table_cell(t, "%s", cli_jstr(f, "closed_how"));
        cli_table_cell(t, "%s", cli_jstr(f, "evidence"));
    }
    printf("\nfindings:\n");
    cli_table_print(t, stdout, 2);
    cli_table_destroy(t);
}

/* Results that changed something, newest first. */
static void
print_history(const cJSON *history)
{
    static const char *const headers[] = { "TIME", "CHECK", "STATUS", "CODE",
        "SCOPE", "EVIDENCE" };
    struct cli_table *t = cli_table_create(headers, ARRAY_SIZE(headers));
    const cJSON *r;

    cJSON_ArrayForEach(r, history) {
        char when[64];

        cli_table_row(t);
        cli_table_cell(t, "%s",
            cli_fmt_time(cli_jint(r, "at_ms", 0), when, sizeof(when)));
        cli_table_cell(t, "%s", cli_jstr(r, "check"));
        cli_table_cell(t, "%s", cli_jstr(r, "status"));
        cli_table_cell(t, "%s", cli_jstr(r, "code"));
        cli_table_cell(t, "%s", cli_jstr(r, "scope"));
        cli_table_cell(t, "%s", cli_jstr(r, "evidence"));
    }
    printf("\nhealth history:\n");
    cli_table_print(t, stdout, 2);
    cli_table_destroy(t);
}

/* The node's health sections, when its agent runs checks. */
static void
print_health(const cJSON *n)
{
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(n, "health");
    const cJSON *v;

    if (!cJSON_IsObject(h))
        return;
    v = cJSON_GetObjectItemCaseSensitive(n, "checks");
    if (cJSON_GetArraySize(v) > 0)
        print_checks(v);
    v = cJSON_GetObjectItemCaseSensitive(n, "findings");
    if (cJSON_GetArraySize(v) > 0)
        print_findings(v);
    v = cJSON_GetObjectItemCaseSensitive(n, "health_history");
    if (cJSON_GetArraySize(v) > 0)
        print_history(v);
}

static void
print_node(const cJSON *n, const char *name)
{
    const cJSON *events = cJSON_GetObjectItemCaseSensitive(n, "events");
    const cJSON *blame = cJSON_GetObjectItemCaseSensitive(n, "blame");
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
    if (*cli_jstr(n, "cordoned_by"))
        printf("  %s by:  %s at %s\n",
            cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(n, "drain"))
                ? "drained "
                : "cordoned",
            cli_jstr(n, "cordoned_by"),
            cli_fmt_time(cli_jint(n, "cordoned_at_ms", 0), t2, sizeof(t2)));
    if (cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(n, "health")))
        printf("  health:      %s (boot %s)\n",
            cli_jstr(cJSON_GetObjectItemCaseSensitive(n, "health"), "summary"),
            cli_jstr(cJSON_GetObjectItemCaseSensitive(n, "health"), "boot_id"));
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
    if (cJSON_GetArraySize(blame) > 0)
        print_blame(blame);
    print_health(n);
    if (cJSON_GetArraySize(events) > 0)
        print_events(events);
    free(jobs);
    free(labels);
    free(free_gpus);
    free(gpus);
}

static void
print_removed(const cJSON *reply, const char *name)
{
    char *jobs;

    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "removed"))) {
        printf("removed node %s\n", name);
        return;
    }
    jobs = cli_fmt_int_list(cJSON_GetObjectItemCaseSensitive(reply, "jobs"),
        false);
    printf("node %s is cordoned and its jobs (%s) are being evicted; it is "
           "removed once they have left\n",
        name, jobs);
    free(jobs);
}

struct node_opts {
    bool force;
};

static const struct cli_opt node_opts[] = {
    CLI_OPT_FLAG("force", struct node_opts, force),
    CLI_OPT_END,
};

/* lockstep node remove NAME [--force] */
static int
node_remove(struct cli *cli, const char *name, bool force)
{
    char *path;
    cJSON *body = NULL;
    int status;

    if (cli_check_node_name(cli, name) != 0)
        return CLI_EXIT_USAGE;
    if (force) {
        body = cJSON_CreateObject();
        cJSON_AddNumberToObject(body, "version", PROTO_VERSION);
        cJSON_AddTrueToObject(body, "force");
    }
    path = cli_path(cli, "/v1/nodes", name, "remove");
    status = cli_call_print(cli, "POST", path, body, "node", name,
        print_removed);
    cJSON_Delete(body);
    free(path);
    return status;
}

static int
cmd_node(int argc, char **argv, struct cli *cli)
{
    struct node_opts o = { 0 };
    struct cli_args args;
    char *path;
    int status;

    if ((status = cli_parse(cli, argc, argv, &o, &args)) != CLI_CONTINUE)
        return status;
    if (args.argc == 2 && strcmp(args.argv[0], "remove") == 0)
        return node_remove(cli, args.argv[1], o.force);
    if (args.argc == 2)
        return cli_usage(cli,
            "unknown node command '%s' (node NAME shows "
            "one; node remove NAME forgets one)",
            args.argv[0]);
    if (o.force)
        return cli_usage(cli, "--force goes with node remove NAME");
    if (cli_check_node_name(cli, args.argv[0]) != 0)
        return CLI_EXIT_USAGE;
    path = cli_path(cli, "/v1/nodes", args.argv[0], NULL);
    status = cli_call_print(cli, "GET", path, NULL, "node", args.argv[0],
        print_node);
    free(path);
    return status;
}

const struct cli_cmd cli_cmd_node = {
    .name = "node",
    .summary = "show a node, its health, blame and recent events; remove one",
    .usage = "usage: lockstep node NODE [--json]\n"
             "       lockstep node remove NODE [--force] [--json]\n"
             "\n"
             "  remove   forget a node (operators): a decommissioned one, or\n"
             "           a LOST one that will not come back; a node of that\n"
             "           name that reports later registers as new. Refused\n"
             "           while jobs hold the node\n"
             "  --force  remove it anyway: cordon it, fail its jobs over\n"
             "           at once (they restart elsewhere from their latest\n"
             "           complete checkpoint; the node is not blamed) and\n"
             "           forget it once they have left\n"
             "  --json   print the API reply unchanged\n",
    .opts = node_opts,
    .min_args = 1,
    .max_args = 2,
    .missing = "which node? give its name",
    .fn = cmd_node,
    .operand = CLI_OPERAND_NODE,
};
