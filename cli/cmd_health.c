/*
 * cmd_health.c - lockstep health ack: an operator acknowledges a node's
 * health finding
 *
 * POST /v1/nodes/NAME/health/ack {"version":1,"finding":"code[@scope]",
 * "reason":"..."}. A finding that excluded the node is latched: it clears
 * on a new boot, on passing for health_holddown_ms, or through this, with
 * who and why recorded. Acknowledging "health.flapping" returns a node
 * that was kept out for flapping. A finding whose check still fails is
 * raised again by the check's next run.
 */
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"

struct health_opts {
    const char *reason;
};

static const struct cli_opt health_opts[] = {
    CLI_OPT_STR("reason", struct health_opts, reason),
    CLI_OPT_END,
};

static void
print_acked(const cJSON *node, const char *name)
{
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(node, "health");

    printf("node %s is %s (health: %s)\n", name, cli_jstr(node, "state"),
        cJSON_IsObject(h) ? cli_jstr(h, "summary") : "none");
}

static int
cmd_health(int argc, char **argv, struct cli *cli)
{
    struct health_opts o = { 0 };
    struct cli_args args;
    cJSON *body;
    char *path;
    int status;

    if ((status = cli_parse(cli, argc, argv, &o, &args)) != CLI_CONTINUE)
        return status;
    if (strcmp(args.argv[0], "ack") != 0)
        return cli_usage(cli,
            "unknown health command '%s' (health ack NODE "
            "FINDING acknowledges a finding)",
            args.argv[0]);
    if (args.argc != 3)
        return cli_usage(cli, "health ack needs NODE and FINDING (code or "
                              "code@scope)");
    if (cli_check_node_name(cli, args.argv[1]) != 0)
        return CLI_EXIT_USAGE;
    if (o.reason == NULL || *o.reason == '\0')
        return cli_usage(cli, "--reason is required: say why, for whoever "
                              "reads the node's history next");
    body = cJSON_CreateObject();
    jsonx_add_int(body, "version", PROTO_VERSION);
    jsonx_add_str(body, "finding", args.argv[2]);
    jsonx_add_str(body, "reason", o.reason);
    path = cli_path(cli, "/v1/nodes", args.argv[1], "health/ack");
    status = cli_call_print(cli, "POST", path, body, "node", args.argv[1],
        print_acked);
    cJSON_Delete(body);
    free(path);
    return status;
}

const struct cli_cmd cli_cmd_health = {
    .name = "health",
    .summary = "acknowledge a node's health finding",
    .usage = "usage: lockstep health ack NODE FINDING --reason REASON "
             "[--json]\n"
             "\n"
             "  FINDING          a finding's code, or code@scope for one\n"
             "                   scope (lockstep node NODE lists them);\n"
             "                   health.flapping returns a flapping node\n"
             "  --reason REASON  why (kept with who in the node's history;\n"
             "                   required)\n"
             "  --json           print the node object the scheduler returns\n",
    .opts = health_opts,
    .min_args = 1,
    .max_args = 3,
    .missing = "which health command? health ack NODE FINDING",
    .fn = cmd_health,
    .flags = CLI_CMD_OPERATOR,
};
