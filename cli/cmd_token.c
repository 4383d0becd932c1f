/*
 * cmd_token.c - lockstep token create: a bearer token for TCP clients
 *
 * Operators only. The token is printed on stdout alone, so that
 * `LOCKSTEP_TOKEN=$(lockstep token create --user alice)` works; the
 * scheduler stores only its SHA-256 and cannot show it again.
 */
#include "cli/cli.h"

#include <getopt.h>
#include <string.h>

#include "common/jsonx.h"

int
cmd_token(int argc, char **argv, struct cli *cli)
{
    enum { OPT_USER = 256, OPT_ROLE, OPT_JSON };
    static const struct option lopts[] = {
        { "user", required_argument, NULL, OPT_USER },
        { "role", required_argument, NULL, OPT_ROLE },
        { "json", no_argument, NULL, OPT_JSON },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *user = NULL, *role = "user";
    bool json = cli->json;
    struct cli_resp resp;
    cJSON *body, *reply = NULL;
    int c, status = CLI_EXIT_FAIL;

    if (argc < 2 || argv[1][0] == '-') {
        if (argc >= 2 && (strcmp(argv[1], "--help") == 0 ||
                             strcmp(argv[1], "-h") == 0))
            return cli_help(cli);
        return cli_usage(cli, "missing subcommand: expected 'create'");
    }
    if (strcmp(argv[1], "create") != 0)
        return cli_usage(cli, "unknown subcommand '%s': expected 'create'",
            argv[1]);
    argc--;
    argv++;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", lopts, NULL)) != -1) {
        switch (c) {
        case OPT_USER:
            user = optarg;
            break;
        case OPT_ROLE:
            if (strcmp(optarg, "user") != 0 && strcmp(optarg, "operator") != 0)
                return cli_usage(cli,
                    "invalid --role '%s': expected user or operator", optarg);
            role = optarg;
            break;
        case OPT_JSON:
            json = true;
            break;
        case 'h':
            return cli_help(cli);
        default:
            return cli_opt_error(cli, argv, c);
        }
    }
    if (optind < argc)
        return cli_usage(cli, "unexpected argument '%s'", argv[optind]);
    if (user == NULL || *user == '\0')
        return cli_usage(cli, "--user is required");

    body = cJSON_CreateObject();
    jsonx_add_int(body, "version", PROTO_VERSION);
    jsonx_add_str(body, "user", user);
    jsonx_add_str(body, "role", role);
    cli_resp_init(&resp);
    if (cli_call(cli, "POST", "/v1/tokens", body, 0, &resp, &reply,
            NULL) == 0) {
        const char *token = cli_jstr(reply, "token");

        if (json) {
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
