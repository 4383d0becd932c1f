/*
 * cli_msg.c - the CLI's messages: warnings, failures, usage, help
 *
 * Everything a person reads on stderr goes through here, as
 * "lockstep <cmd>: <message>" (cli.h); stdout is flushed first so the two
 * streams interleave in order.
 */
#include "cli/cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *
cli_cmd_name(const struct cli *cli)
{
    return cli && cli->cmd ? cli->cmd->name : NULL;
}

__attribute__((format(printf, 2, 0))) static void
cli_vwarn(struct cli *cli, const char *fmt, va_list ap)
{
    const char *name = cli_cmd_name(cli);

    fflush(stdout);
    if (name)
        fprintf(stderr, "%s %s: ", CLI_PROG, name);
    else
        fprintf(stderr, "%s: ", CLI_PROG);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    if (cli && cli->hint) {
        if (name)
            fprintf(stderr, "%s %s: %s\n", CLI_PROG, name, cli->hint);
        else
            fprintf(stderr, "%s: %s\n", CLI_PROG, cli->hint);
        cli->hint = NULL;
    }
}

void
cli_warn(struct cli *cli, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    cli_vwarn(cli, fmt, ap);
    va_end(ap);
}

void
cli_print_usage(const struct cli_cmd *cmd, FILE *out)
{
    fprintf(out, "%s", cmd->usage);
}

int
cli_synopsis(struct cli *cli)
{
    if (cli && cli->cmd) {
        /* Only the synopsis lines: the option list is for --help. */
        const char *u = cli->cmd->usage;
        const char *blank = strstr(u, "\n\n");
        int n = blank ? (int)(blank - u) + 1 : (int)strlen(u);

        fprintf(stderr, "%.*s", n, u);
        fprintf(stderr, "Try '%s help %s' for more.\n", CLI_PROG,
            cli->cmd->name);
    }
    return CLI_EXIT_USAGE;
}

int
cli_help(struct cli *cli)
{
    cli_print_usage(cli->cmd, stdout);
    return CLI_EXIT_OK;
}
