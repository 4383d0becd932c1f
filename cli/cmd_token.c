/*
 * cmd_token.c - lockstep token create: a bearer token for TCP clients
 *
 * Operators only. The token is printed on stdout alone, so that
 * `LOCKSTEP_TOKEN=$(lockstep token create --user alice)` works; the
 * scheduler stores only its SHA-256 and cannot show it again.
 */
#include "cli/cli.h"

#include <string.h>

#include "common/jsonx.h"

struct token_opts {
    const char *user;
    const char *role;
};

static const struct cli_opt token_opts[] = {
    CLI_OPT_STR("user", struct token_opts, user),
    CLI_OPT_WORD("role", struct token_opts, role, "user", "operator"),
    CLI_OPT_END,
};

/* The one subcommand, before any option: "create". Returns CLI_CONTINUE
 * or the exit status. */
static int
check_subcommand(struct cli *cli, int argc, char **argv)
{
    if (argc < 2 || argv[1][0] == '-') {
        if (argc >= 2 &&
            (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0))
            return cli_help(cli);
        return cli_usage(cli, "missing subcommand: expected 'create'");
    }
    if (strcmp(argv[1], "create") != 0)
        return cli_usage(cli, "unknown subcommand '%s': expected 'create'",
            argv[1]);
    return CLI_CONTINUE;
}

static int
token_create(struct cli *cli, const struct token_opts *o)
{
    struct cli_resp resp;
    cJSON *body, *reply = NULL;
    int status = CLI_EXIT_FAIL;

    body = cJSON_CreateObject();
    jsonx_add_int(body, "version", PROTO_VERSION);
    jsonx_add_str(body, "user", o->user);
    jsonx_add_str(body, "role", o->role);
    cli_resp_init(&resp);
    if (cli_call(cli, "POST", "/v1/tokens", body, 0, &resp, &reply, NULL) ==
        0) {
        const char *token = cli_jstr(reply, "token");

        if (cli->json) {
            cli_print_body(&resp);
            status = CLI_EXIT_OK;
        } else if (*token == '\0') {
            cli_warn(cli, "unexpected reply from the scheduler: no token");
        } else {
            printf("%s\n", token);
            status = CLI_EXIT_OK;
        }
    }
    cJSON_Delete(reply);
    cJSON_Delete(body);
    cli_resp_release(&resp);
    return status;
}

static int
cmd_token(int argc, char **argv, struct cli *cli)
{
    struct token_opts o = { .role = "user" };
    struct cli_args args;
    int status;

    if ((status = check_subcommand(cli, argc, argv)) != CLI_CONTINUE)
        return status;
    status = cli_parse(cli, argc - 1, argv + 1, &o, &args);
    if (status != CLI_CONTINUE)
        return status;
    if (o.user == NULL || *o.user == '\0')
        return cli_usage(cli, "--user is required");
    return token_create(cli, &o);
}

const struct cli_cmd cli_cmd_token = {
    .name = "token",
    .summary = "create an API token",
    .usage = "usage: lockstep token create --user USER [--role user|operator]\n"
             "                             [--json]\n"
             "\n"
             "  --user USER             whom the token identifies\n"
             "  --role user|operator    what it may do (default user)\n"
             "  --json                  print the API reply unchanged\n"
             "\n"
             "The token is printed once; the scheduler keeps only its hash.\n",
    .opts = token_opts,
    .fn = cmd_token,
    .flags = CLI_CMD_OPERATOR,
};
