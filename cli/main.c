/*
 * main.c - the lockstep command: global options and subcommand dispatch
 *
 * `cli_cmds[]` (cmd_help.c) is the whole command surface (git's
 * commands[], tmux's cmd_table); each entry lives with its code in
 * cmd_<name>.c. Names match
 * exactly, never by prefix, so that a script written today keeps meaning
 * the same thing when a command is added. Global options come before the
 * subcommand; each subcommand parses its own with cli_parse. After the
 * command, stdout is flushed and checked, so `lockstep jobs > /full/disk`
 * fails instead of claiming success.
 */
#include "cli/cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "version.h"

/* The global options, from the environment and the command line. */
struct globals {
    const char *server;
    const char *server_from; /* "--server", "LOCKSTEP_SERVER" or NULL */
    const char *token;
    const char *ca;
    const char *ca_from; /* "--ca" or "LOCKSTEP_CA" */
    bool json;
};

/* Parse the options before the command; optind is left on the command.
 * Returns CLI_CONTINUE, or the exit status for --version, --help or a
 * usage error. */
static int
parse_globals(int argc, char **argv, struct globals *g)
{
    enum { OPT_SERVER = 256, OPT_TOKEN, OPT_CA, OPT_JSON, OPT_VERSION };
    static const struct option opts[] = {
        { "server", required_argument, NULL, OPT_SERVER },
        { "token", required_argument, NULL, OPT_TOKEN },
        { "ca", required_argument, NULL, OPT_CA },
        { "json", no_argument, NULL, OPT_JSON },
        { "version", no_argument, NULL, OPT_VERSION },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int c;

    opterr = 0;
    while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
        switch (c) {
        case OPT_SERVER:
            g->server = optarg;
            g->server_from = "--server";
            break;
        case OPT_TOKEN:
            g->token = optarg;
            break;
        case OPT_CA:
            g->ca = optarg;
            g->ca_from = "--ca";
            break;
        case OPT_JSON:
            g->json = true;
            break;
        case OPT_VERSION:
            printf("lockstep %s\n", LOCKSTEP_VERSION);
            return fflush(stdout) || ferror(stdout) ? CLI_EXIT_FAIL
                                                    : CLI_EXIT_OK;
        case 'h':
            cli_print_main_help(cli_cmds, stdout);
            return CLI_EXIT_OK;
        default:
            return cli_opt_error(NULL, argv, c);
        }
    }
    return CLI_CONTINUE;
}

/* The command named by the word at optind, or NULL after saying why. */
static const struct cli_cmd *
find_command(int argc, char **argv)
{
    const struct cli_cmd *cmd;

    if (optind >= argc) {
        cli_print_main_usage(stderr);
    } else if ((cmd = cli_cmd_find(cli_cmds, argv[optind])) != NULL) {
        return cmd;
    } else {
        fprintf(stderr, "%s: unknown command '%s'\n", CLI_PROG, argv[optind]);
    }
    fprintf(stderr, "Try '%s help' for the list of commands.\n", CLI_PROG);
    return NULL;
}

/* After the command: a write error on stdout fails it. */
static int
check_stdout(const struct cli_cmd *cmd, int rc)
{
    if (fflush(stdout) != 0) {
        fprintf(stderr, "%s %s: cannot write output: %s\n", CLI_PROG, cmd->name,
            strerror(errno));
        return CLI_EXIT_FAIL;
    }
    if (ferror(stdout)) {
        fprintf(stderr, "%s %s: cannot write output\n", CLI_PROG, cmd->name);
        return CLI_EXIT_FAIL;
    }
    return rc;
}

/* Run cmd with its own arguments (argv[0] is its name). */
static int
run(const struct cli_cmd *cmd, const struct globals *g, int argc, char **argv)
{
    const char *server = g->server, *from = g->server_from;
    struct cli cli;
    struct err err;
    int rc;

    if (server == NULL || *server == '\0') {
        server = CLI_DEFAULT_SERVER;
        from = NULL;
    }
    if (cli_init(&cli, server, g->token, &err) < 0 &&
        !(cmd->flags & CLI_CMD_LOCAL)) {
        fprintf(stderr, "%s: %s\n", CLI_PROG, err.msg);
        cli_release(&cli);
        return CLI_EXIT_USAGE;
    }
    cli.server_from = from;
    cli.ca = g->ca != NULL && g->ca[0] != '\0' ? g->ca : NULL;
    cli.ca_from = g->ca_from;
    cli.cmd = cmd;
    cli.cmds = cli_cmds;
    cli.json = g->json;

    /* Each command parses from its own name, with getopt fully reset. */
    optind = 0;
    rc = cmd->fn(argc, argv, &cli);
    /* A failure because the scheduler is down has its own status. */
    if (rc == CLI_EXIT_FAIL && cli.unreachable)
        rc = CLI_EXIT_UNREACHABLE;

    cli_release(&cli);
    return check_stdout(cmd, rc);
}

int
main(int argc, char **argv)
{
    struct globals g = { .server = getenv("LOCKSTEP_SERVER"),
        .server_from = "LOCKSTEP_SERVER",
        .token = getenv("LOCKSTEP_TOKEN"),
        .ca = getenv("LOCKSTEP_CA"),
        .ca_from = "LOCKSTEP_CA" };
    const struct cli_cmd *cmd;
    int rc;

    if ((rc = parse_globals(argc, argv, &g)) != CLI_CONTINUE)
        return rc;
    if ((cmd = find_command(argc, argv)) == NULL)
        return CLI_EXIT_USAGE;
    return run(cmd, &g, argc - optind, argv + optind);
}
