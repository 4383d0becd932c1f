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

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "common/xalloc.h"

static int
cordon_common(int argc, char **argv, struct cli *cli, const char *verb,
    bool is_cordon)
{
    enum { OPT_REASON = 256, OPT_JSON, OPT_EVICT };
    static const struct option lopts[] = {
        { "reason", required_argument, NULL, OPT_REASON },
        { "evict", no_argument, NULL, OPT_EVICT },
        { "json", no_argument, NULL, OPT_JSON },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *reason = NULL;
    bool json = cli->json, evict = false;
    struct cli_resp resp;
    cJSON *body, *node = NULL;
    char *name, *path;
    struct err err;
    int c, rc, status = CLI_EXIT_FAIL;

    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", lopts, NULL)) != -1) {
        switch (c) {
        case OPT_REASON:
            reason = optarg;
            break;
        case OPT_JSON:
            json = true;
            break;
        case OPT_EVICT:
            if (!is_cordon)
                return cli_usage(cli, "--evict goes with cordon");
            evict = true;
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
    if (is_cordon && (reason == NULL || *reason == '\0'))
        return cli_usage(cli, "--reason is required: say why, for whoever "
                              "reads the node's history next");

    body = cJSON_CreateObject();
    jsonx_add_int(body, "version", PROTO_VERSION);
    jsonx_add_str(body, "reason", reason ? reason : "");
    if (evict)
        cJSON_AddBoolToObject(body, "evict", true);
    cli_resp_init(&resp);
    name = cli_escape(cli, argv[optind]);
    path = xasprintf("/v1/nodes/%s/%s", name, verb);
    rc = cli_call(cli, "POST", path, body, CLI_HTTP_QUIET, &resp, &node,
        &err);
    if (rc < 0) {
        cli_fail_about(cli, "node", argv[optind], rc, &err);
    } else {
        if (json)
            cli_print_body(&resp);
        else
            printf("node %s is %s\n", argv[optind], cli_jstr(node, "state"));
        status = CLI_EXIT_OK;
    }
    cJSON_Delete(node);
    cJSON_Delete(body);
    cli_resp_release(&resp);
    free(path);
    free(name);
    return status;
}

int
cmd_cordon(int argc, char **argv, struct cli *cli)
{
    return cordon_common(argc, argv, cli, "cordon", true);
}

int
cmd_uncordon(int argc, char **argv, struct cli *cli)
{
    return cordon_common(argc, argv, cli, "uncordon", false);
}
