/*
 * cmd_cordon.c - lockstep cordon / uncordon / drain: an operator takes
 * nodes out of scheduling, or puts them back, with a reason
 *
 * All three share one implementation: POST /v1/nodes/NAME/{cordon,
 * uncordon,drain} with {"version":1,"reason":"..."}, once per node named.
 * Cordoning and draining demand a reason because the next person on call
 * will read it in the node's history (with who and when); uncordoning
 * may omit it. `cordon --evict` also moves the jobs running there to other
 * nodes at once (they restart from their latest complete checkpoint),
 * instead of letting them finish. `drain --wait` then polls each node
 * until no job holds it any more.
 *
 * With --json: the node object the scheduler returns for one node; an
 * array of them for several.
 */
#include "cli/cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "common/xalloc.h"

#define DRAIN_POLL_MS 500

struct cordon_opts {
    const char *verb; /* "cordon", "uncordon", "drain" */
    const char *reason;
    bool evict;
    bool wait;
};

/* uncordon knows --evict, so that it can say where it goes. */
static int
set_evict(void *opts, const char *value, struct sbuf *why)
{
    struct cordon_opts *o = opts;

    (void)value;
    if (strcmp(o->verb, "cordon") != 0) {
        sbuf_addstr(why, "--evict goes with cordon");
        return -EINVAL;
    }
    o->evict = true;
    return 0;
}

static int
set_wait(void *opts, const char *value, struct sbuf *why)
{
    struct cordon_opts *o = opts;

    (void)value;
    if (strcmp(o->verb, "drain") != 0) {
        sbuf_addstr(why, "--wait goes with drain");
        return -EINVAL;
    }
    o->wait = true;
    return 0;
}

/* uncordon knows --evict only to refuse it. */
static const struct cli_opt cordon_opts[] = {
    CLI_OPT_STR("reason", struct cordon_opts, reason),
    CLI_OPT_CALL("evict", FLAG, set_evict),
    CLI_OPT_END,
};

static const struct cli_opt drain_opts[] = {
    CLI_OPT_STR("reason", struct cordon_opts, reason),
    CLI_OPT_CALL("wait", FLAG, set_wait),
    CLI_OPT_END,
};

/* Poll node until no job holds it; its last object in *out. */
static int
drain_wait(struct cli *cli, const char *name, cJSON **out)
{
    char *path = cli_path(cli, "/v1/nodes", name, NULL);
    int rc;

    for (;;) {
        struct cli_resp resp = { 0 };
        struct err err = { 0 };
        cJSON *node = NULL;

        rc = cli_call(cli, "GET", path, NULL, 0, &resp, &node, &err);
        cli_resp_release(&resp);
        if (rc < 0) {
            free(path);
            return cli_fail_about(cli, "node", name, rc, &err);
        }
        if (cJSON_GetArraySize(
                cJSON_GetObjectItemCaseSensitive(node, "jobs")) == 0) {
            cJSON_Delete(*out);
            *out = node;
            break;
        }
        cJSON_Delete(node);
        cli_sleep_ms(DRAIN_POLL_MS);
    }
    free(path);
    return CLI_EXIT_OK;
}

/* POST the verb for one node; its object into *out. */
static int
cordon_one(struct cli *cli, const struct cordon_opts *o, const char *name,
    cJSON **out)
{
    struct cli_resp resp = { 0 };
    struct err err = { 0 };
    cJSON *body = cJSON_CreateObject();
    char *path = cli_path(cli, "/v1/nodes", name, o->verb);
    int rc;

    jsonx_add_int(body, "version", PROTO_VERSION);
    jsonx_add_str(body, "reason", o->reason ? o->reason : "");
    if (o->evict)
        cJSON_AddBoolToObject(body, "evict", true);
    rc = cli_call(cli, "POST", path, body, 0, &resp, out, &err);
    cli_resp_release(&resp);
    cJSON_Delete(body);
    free(path);
    if (rc < 0)
        return cli_fail_about(cli, "node", name, rc, &err);
    if (o->wait) {
        if (!cli->json)
            printf("node %s is %s; waiting for its jobs to end\n", name,
                cli_jstr(*out, "state"));
        fflush(stdout);
        return drain_wait(cli, name, out);
    }
    return CLI_EXIT_OK;
}

static int
cordon_common(int argc, char **argv, struct cli *cli, const char *verb)
{
    struct cordon_opts o = { .verb = verb };
    struct cli_args args;
    cJSON *all = cJSON_CreateArray();
    int status, worst = CLI_EXIT_OK;

    if ((status = cli_parse(cli, argc, argv, &o, &args)) != CLI_CONTINUE)
        goto out;
    for (int i = 0; i < args.argc; i++) {
        if ((status = cli_check_node_name(cli, args.argv[i])) != 0)
            goto out;
    }
    if (strcmp(verb, "uncordon") != 0 && (o.reason == NULL || !*o.reason)) {
        status = cli_usage(cli, "--reason is required: say why, for whoever "
                                "reads the node's history next");
        goto out;
    }
    for (int i = 0; i < args.argc; i++) {
        cJSON *node = NULL;

        status = cordon_one(cli, &o, args.argv[i], &node);
        if (status != CLI_EXIT_OK) {
            cJSON_Delete(node);
            worst = status;
            continue;
        }
        if (!cli->json)
            printf("node %s is %s\n", args.argv[i], cli_jstr(node, "state"));
        cJSON_AddItemToArray(all, node);
    }
    status = worst;
    if (cli->json) {
        char *s = jsonx_print(args.argc == 1 && cJSON_GetArraySize(all) == 1
                                  ? cJSON_GetArrayItem(all, 0)
                                  : all);

        printf("%s\n", s);
        free(s);
    }
out:
    cJSON_Delete(all);
    return status;
}

static int
cmd_cordon(int argc, char **argv, struct cli *cli)
{
    return cordon_common(argc, argv, cli, "cordon");
}

static int
cmd_uncordon(int argc, char **argv, struct cli *cli)
{
    return cordon_common(argc, argv, cli, "uncordon");
}

static int
cmd_drain(int argc, char **argv, struct cli *cli)
{
    return cordon_common(argc, argv, cli, "drain");
}

#define CLI_NODES                                                              \
    .min_args = 1, .max_args = -1, .missing = "which node? give its name",     \
    .operand = CLI_OPERAND_NODE

const struct cli_cmd cli_cmd_cordon = {
    .name = "cordon",
    .summary = "stop placing new work on nodes",
    .usage = "usage: lockstep cordon NODE... --reason REASON [--evict] "
             "[--json]\n"
             "\n"
             "  --reason REASON  why (kept in the node's history with who\n"
             "                   and when; required)\n"
             "  --evict          also restart the jobs running there on other\n"
             "                   nodes now, from their latest checkpoint\n"
             "  --json           print the node object the scheduler returns\n"
             "                   (an array of them for several nodes)\n",
    .opts = cordon_opts,
    CLI_NODES,
    .fn = cmd_cordon,
    .flags = CLI_CMD_OPERATOR,
};

const struct cli_cmd cli_cmd_uncordon = {
    .name = "uncordon",
    .summary = "make nodes schedulable again",
    .usage = "usage: lockstep uncordon NODE... [--reason REASON] [--json]\n"
             "\n"
             "  Clears a cordon or a drain, and a blame exclusion; not an\n"
             "  open health finding's exclusion (lockstep health ack).\n"
             "\n"
             "  --reason REASON  why (kept in the node's history)\n"
             "  --json           print the node object the scheduler returns\n"
             "                   (an array of them for several nodes)\n",
    .opts = cordon_opts,
    CLI_NODES,
    .fn = cmd_uncordon,
    .flags = CLI_CMD_OPERATOR,
};

const struct cli_cmd cli_cmd_drain = {
    .name = "drain",
    .summary = "let the jobs on nodes finish, then keep them cordoned",
    .usage = "usage: lockstep drain NODE... --reason REASON [--wait] "
             "[--json]\n"
             "\n"
             "  No new work goes there; the jobs running there finish\n"
             "  (DRAINING), then the node is CORDONED until uncordoned.\n"
             "\n"
             "  --reason REASON  why (kept in the node's history with who\n"
             "                   and when; required)\n"
             "  --wait           return once no job holds the nodes any more\n"
             "  --json           print the node object the scheduler returns\n"
             "                   (an array of them for several nodes)\n",
    .opts = drain_opts,
    CLI_NODES,
    .fn = cmd_drain,
    .flags = CLI_CMD_OPERATOR,
};
