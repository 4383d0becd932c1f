/*
 * cmd_whoami.c - lockstep whoami: the identity the scheduler sees
 *
 * Over the Unix socket that is the uid we run as; over TCP, the token's
 * user. The quickest check that the CLI reaches the scheduler at all.
 */
#include "cli/cli.h"

#include <getopt.h>

int
cmd_whoami(int argc, char **argv, struct cli *cli)
{
    static const struct option lopts[] = {
        { "json", no_argument, NULL, 'j' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    bool json = cli->json;
    struct cli_resp resp;
    cJSON *me = NULL;
    int c, status = CLI_EXIT_FAIL;

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
    if (optind < argc)
        return cli_usage(cli, "unexpected argument '%s'", argv[optind]);

    cli_resp_init(&resp);
    if (cli_call(cli, "GET", "/v1/whoami", NULL, 0, &resp, &me, NULL) == 0) {
        if (json)
            cli_print_body(&resp);
        else
            printf("%s (%s)\n", cli_jstr(me, "user"), cli_jstr(me, "role"));
        status = CLI_EXIT_OK;
    }
    cJSON_Delete(me);
    cli_resp_release(&resp);
    return status;
}
