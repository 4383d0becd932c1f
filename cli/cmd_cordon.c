/*
 * cmd_cordon.c - lockstep cordon / uncordon: an operator takes a node out
 * of scheduling, or puts it back, with a reason
 *
 * Both share one implementation: POST /v1/nodes/NAME/{cordon,uncordon}
 * with {"version":1,"reason":"..."}. Cordoning demands a reason because
 * the next person on call will read it in the node's history; uncordoning
 * may omit it. `cordon --evict` also moves the jobs running there to other
 * nodes at once (they restart from their latest complete checkpoint),
 * instead of letting them finish.
 */
#include "cli/cli.h"

#include <errno.h>
#include <stdlib.h>

#include "common/jsonx.h"
#include "common/xalloc.h"

struct cordon_opts {
    bool cordon; /* cordon, not uncordon */
    const char *reason;
    bool evict;
};

/* Both commands know --evict, so that uncordon can say where it goes. */
static int
set_evict(void *opts, const char *value, struct sbuf *why)
{
    struct cordon_opts *o = opts;

    if (!o->cordon) {
        sbuf_addstr(why, "--evict goes with cordon");
        return -EINVAL;
    }
    o->evict = true;
    return 0;
}

static const struct cli_opt cordon_opts[] = {
    CLI_OPT_STR("reason", struct cordon_opts, reason),
    CLI_OPT_CALL("evict", FLAG, set_evict),
    CLI_OPT_END,
};

static void
print_node_state(const cJSON *node, const char *name)
{
    printf("node %s is %s\n", name, cli_jstr(node, "state"));
}

static int
cordon_common(int argc, char **argv, struct cli *cli, const char *verb,
    bool is_cordon)
{
    struct cordon_opts o = { .cordon = is_cordon };
    struct cli_args args;
    cJSON *body;
    char *path;
    int status;

    if ((status = cli_parse(cli, argc, argv, &o, &args)) != CLI_CONTINUE)
        return status;
    if (cli_check_node_name(cli, args.argv[0]) != 0)
        return CLI_EXIT_USAGE;
    if (is_cordon && (o.reason == NULL || *o.reason == '\0'))
        return cli_usage(cli, "--reason is required: say why, for whoever "
                              "reads the node's history next");

    body = cJSON_CreateObject();
    jsonx_add_int(body, "version", PROTO_VERSION);
    jsonx_add_str(body, "reason", o.reason ? o.reason : "");
    if (o.evict)
        cJSON_AddBoolToObject(body, "evict", true);
    path = cli_path(cli, "/v1/nodes", args.argv[0], verb);
    status = cli_call_print(cli, "POST", path, body, "node", args.argv[0],
        print_node_state);
    cJSON_Delete(body);
    free(path);
    return status;
}

static int
cmd_cordon(int argc, char **argv, struct cli *cli)
{
    return cordon_common(argc, argv, cli, "cordon", true);
}

static int
cmd_uncordon(int argc, char **argv, struct cli *cli)
{
    return cordon_common(argc, argv, cli, "uncordon", false);
}

const struct cli_cmd cli_cmd_cordon = {
    .name = "cordon",
    .summary = "stop placing new work on a node",
    .usage = "usage: lockstep cordon NODE --reason REASON [--evict] [--json]\n"
             "\n"
             "  --reason REASON  why (kept in the node's history; required)\n"
             "  --evict          also restart the jobs running there on other\n"
             "                   nodes now, from their latest checkpoint\n"
             "  --json           print the node object the scheduler returns\n",
    .opts = cordon_opts,
    CLI_ONE_NODE,
    .fn = cmd_cordon,
    .flags = CLI_CMD_OPERATOR,
};

const struct cli_cmd cli_cmd_uncordon = {
    .name = "uncordon",
    .summary = "make a node schedulable again",
    .usage = "usage: lockstep uncordon NODE [--reason REASON] [--json]\n"
             "\n"
             "  --reason REASON  why (kept in the node's history)\n"
             "  --json           print the node object the scheduler returns\n",
    .opts = cordon_opts,
    CLI_ONE_NODE,
    .fn = cmd_uncordon,
    .flags = CLI_CMD_OPERATOR,
};
