/*
 * cmd_whoami.c - lockstep whoami: the identity the scheduler sees
 *
 * Over the Unix socket that is the uid we run as; over TCP, the token's
 * user. The quickest check that the CLI reaches the scheduler at all.
 */
#include "cli/cli.h"

static void
print_whoami(const cJSON *me, const char *name)
{
    printf("%s (%s)\n", cli_jstr(me, "user"), cli_jstr(me, "role"));
}

const struct cli_cmd cli_cmd_whoami = {
    .name = "whoami",
    .summary = "show who the scheduler thinks you are",
    CLI_GET("whoami", "/v1/whoami", print_whoami),
};
