/*
 * cmd_help.c - lockstep help: the list of commands, or one command's usage
 *
 * Also what main.c prints for `lockstep --help` and for a missing
 * command, and the list of commands itself (cli_cmds), which main.c
 * dispatches on and the fuzz harness drives; `help` reads the list
 * through cli->cmds.
 */
#include "cli/cli.h"

#include <string.h>

static const char main_usage[] =
    "usage: lockstep [--server URL|PATH] [--token TOKEN] [--ca FILE] [--json]\n"
    "                COMMAND [ARGS]\n"
    "       lockstep --version\n";

const struct cli_cmd *const cli_cmds[] = {
    &cli_cmd_submit,
    &cli_cmd_jobs,
    &cli_cmd_history,
    &cli_cmd_show,
    &cli_cmd_logs,
    &cli_cmd_cancel,
    &cli_cmd_hold,
    &cli_cmd_release,
    &cli_cmd_requeue,
    &cli_cmd_checkpoint,
    &cli_cmd_nodes,
    &cli_cmd_node,
    &cli_cmd_cordon,
    &cli_cmd_uncordon,
    &cli_cmd_events,
    &cli_cmd_drain,
    &cli_cmd_health,
    &cli_cmd_token,
    &cli_cmd_admin,
    &cli_cmd_replicas,
    &cli_cmd_stats,
    &cli_cmd_whoami,
    &cli_cmd_help,
    NULL,
};

const struct cli_cmd *
cli_cmd_find(const struct cli_cmd *const *cmds, const char *name)
{
    for (size_t i = 0; cmds[i]; i++) {
        if (strcmp(cmds[i]->name, name) == 0)
            return cmds[i];
    }
    return NULL;
}

void
cli_print_main_usage(FILE *out)
{
    fputs(main_usage, out);
}

void
cli_print_main_help(const struct cli_cmd *const *cmds, FILE *out)
{
    fputs(main_usage, out);
    fputs("\ncommands:\n", out);
    for (size_t i = 0; cmds[i]; i++)
        fprintf(out, "  %-10s %s%s\n", cmds[i]->name, cmds[i]->summary,
            cmds[i]->flags & CLI_CMD_OPERATOR ? " (operator)" : "");
    fputs("\n"
          "options:\n"
          "  --server URL|PATH  the scheduler: an http(s):// URL or the path\n"
          "                     of its Unix socket (default $LOCKSTEP_SERVER,\n"
          "                     else " CLI_DEFAULT_SERVER ")\n"
          "  --token TOKEN      bearer token for TCP (default "
          "$LOCKSTEP_TOKEN)\n"
          "  --ca FILE          the CA certificate an https:// scheduler's\n"
          "                     certificate must chain to (default\n"
          "                     $LOCKSTEP_CA, else the system's trust store)\n"
          "  --json             print API replies unchanged\n"
          "  --version          print the version\n"
          "\n"
          "Run 'lockstep help COMMAND' for a command's options.\n",
        out);
}

/* Not through cli_parse: `help` reads its one word as a command name,
 * even one that looks like an option. */
static int
cmd_help(int argc, char **argv, struct cli *cli)
{
    const struct cli_cmd *cmd;

    if (argc < 2) {
        cli_print_main_help(cli->cmds, stdout);
        return CLI_EXIT_OK;
    }
    if (argc > 2)
        return cli_usage(cli, "too many arguments");
    cmd = cli_cmd_find(cli->cmds, argv[1]);
    if (cmd == NULL)
        return cli_usage(cli, "unknown command '%s'", argv[1]);
    cli_print_usage(cmd, stdout);
    return CLI_EXIT_OK;
}

const struct cli_cmd cli_cmd_help = {
    .name = "help",
    .summary = "show help for a command",
    .usage = "usage: lockstep help [COMMAND]\n",
    .fn = cmd_help,
    .flags = CLI_CMD_LOCAL,
};
