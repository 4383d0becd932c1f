/*
 * cmd_whoami.c - lockstep whoami: the identity the scheduler sees
 *
 * Over the Unix socket that is the uid we run as; over TCP, the token's
 * user. The quickest check that the CLI reaches the scheduler at all.
 */
#include "cli/cli.h"


static void
print_whoami(const cJSON *me)
{
    printf("%s (%s)\n", cli_jstr(me, "user"), cli_jstr(me, "role"));
}

int
cmd_whoami(int argc, char **argv, struct cli *cli)
{
    return cli_get_print(argc, argv, cli, "/v1/whoami", print_whoami, NULL);
}
