/*
 * main.c - the lockstep command: global options and subcommand dispatch
 *
 * `cmds[]` is the whole command surface (git's commands[], tmux's
 * cmd_table). Names match exactly, never by prefix, so that a script
 * written today keeps meaning the same thing when a command is added.
 * Global options come before the subcommand; each subcommand parses its
 * own with getopt_long. After the command, stdout is flushed and checked,
 * so `lockstep jobs > /full/disk` fails instead of claiming success.
 */
#include "cli/cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "version.h"

static int cmd_help(int argc, char **argv, struct cli *cli);

static const struct cli_cmd cmds[] = {
    { "submit", cmd_submit, "submit a job",
        "usage: lockstep submit [options] [--] COMMAND [ARG...]\n"
        "\n"
        "  --name NAME           job name (default: basename of COMMAND)\n"
        "  --nodes N             nodes to run on (default 1)\n"
        "  --ranks-per-node R    processes per node (default 1)\n"
        "  --gpus-per-node G     GPUs per node (default 0)\n"
        "  --cpus-per-rank C     CPUs per process (default 1)\n"
        "  --memory-mb M         memory per node in MiB (default 0)\n"
        "  --priority P          -1000..1000, higher runs first (default 0)\n"
        "  --env K=V             set a variable for every rank (repeatable);\n"
        "                        --env K passes this shell's value of K\n"
        "  --workdir DIR         working directory (default: the current one)\n"
        "  --max-restarts N      restarts after the job's own failures, e.g.\n"
        "                        a rank exiting non-zero (default 3)\n"
        "  --max-infra-restarts N\n"
        "                        restarts after infrastructure failures: node\n"
        "                        lost, hang, node excluded (default 20)\n"
        "  --hang-timeout SECS   restart when a rank makes no progress (a step\n"
        "                        reported through the SDK, or else output) for\n"
        "                        this long; 0 disables (default 1800)\n"
        "  --checkpoint-dir DIR  where the job keeps its checkpoints; a restart\n"
        "                        resumes from the newest complete one\n"
        "  --keep-checkpoints K  keep only the K newest complete checkpoints\n"
        "                        (default 0: keep all)\n"
        "  --wait                wait for the job to end; exit 0 only if it\n"
        "                        SUCCEEDED (Ctrl-C ends the wait, not the job)\n"
        "  --json                print the job object the scheduler returns\n",
        0 },
    { "jobs", cmd_jobs, "list jobs",
        "usage: lockstep jobs [--all] [--state STATE] [--user USER] [--json]\n"
        "\n"
        "  --all          include finished jobs (default: unfinished only)\n"
        "  --state STATE  only jobs in STATE (PENDING, PLACED, RUNNING,\n"
        "                 RESTARTING, SUCCEEDED, FAILED, CANCELLED)\n"
        "  --user USER    only USER's jobs (operators see everyone's)\n"
        "  --json         print the API reply unchanged\n",
        0 },
    { "show", cmd_show, "show a job and each of its attempts",
        "usage: lockstep show JOB [--json]\n"
        "\n"
        "  --json  print the API reply unchanged\n",
        0 },
    { "logs", cmd_logs, "print a job's output",
        "usage: lockstep logs JOB [--rank R] [--attempt N] [--stream out|err]\n"
        "                         [--follow]\n"
        "\n"
        "  --rank R          only rank R (default: every rank, each line\n"
        "                    prefixed with [rank N])\n"
        "  --attempt N       attempt N (default: the latest)\n"
        "  --stream out|err  stdout (default) or stderr\n"
        "  -f, --follow      keep printing until the job has ended\n",
        0 },
    { "cancel", cmd_cancel, "cancel jobs",
        "usage: lockstep cancel [--json] JOB...\n"
        "\n"
        "  --json  print each job object the scheduler returns\n",
        0 },
    { "nodes", cmd_nodes, "list nodes",
        "usage: lockstep nodes [--json]\n"
        "\n"
        "  --json  print the API reply unchanged\n",
        0 },
    { "node", cmd_node, "show a node and its recent events",
        "usage: lockstep node NODE [--json]\n"
        "\n"
        "  --json  print the API reply unchanged\n",
        0 },
    { "cordon", cmd_cordon, "stop placing new work on a node",
        "usage: lockstep cordon NODE --reason REASON [--evict] [--json]\n"
        "\n"
        "  --reason REASON  why (kept in the node's history; required)\n"
        "  --evict          also restart the jobs running there on other\n"
        "                   nodes now, from their latest checkpoint\n"
        "  --json           print the node object the scheduler returns\n",
        CLI_CMD_OPERATOR },
    { "uncordon", cmd_uncordon, "make a node schedulable again",
        "usage: lockstep uncordon NODE [--reason REASON] [--json]\n"
        "\n"
        "  --reason REASON  why (kept in the node's history)\n"
        "  --json           print the node object the scheduler returns\n",
        CLI_CMD_OPERATOR },
    { "token", cmd_token, "create an API token",
        "usage: lockstep token create --user USER [--role user|operator]\n"
        "                             [--json]\n"
        "\n"
        "  --user USER             whom the token identifies\n"
        "  --role user|operator    what it may do (default user)\n"
        "  --json                  print the API reply unchanged\n"
        "\n"
        "The token is printed once; the scheduler keeps only its hash.\n",
        CLI_CMD_OPERATOR },
    { "stats", cmd_stats, "cluster-wide goodput and failure counts",
        "usage: lockstep stats [--json]\n"
        "\n"
        "  --json  print the API reply unchanged\n",
        0 },
    { "whoami", cmd_whoami, "show who the scheduler thinks you are",
        "usage: lockstep whoami [--json]\n"
        "\n"
        "  --json  print the API reply unchanged\n",
        0 },
    { "help", cmd_help, "show help for a command",
        "usage: lockstep help [COMMAND]\n", CLI_CMD_LOCAL },
};

static const char main_usage[] =
    "usage: lockstep [--server URL|PATH] [--token TOKEN] [--json] COMMAND "
    "[ARGS]\n"
    "       lockstep --version\n";

static void
print_main_help(FILE *out)
{
    fputs(main_usage, out);
    fputs("\ncommands:\n", out);
    for (size_t i = 0; i < ARRAY_SIZE(cmds); i++)
        fprintf(out, "  %-10s %s%s\n", cmds[i].name, cmds[i].summary,
            cmds[i].flags & CLI_CMD_OPERATOR ? " (operator)" : "");
    fputs("\n"
          "options:\n"
          "  --server URL|PATH  the scheduler: an http(s):// URL or the path\n"
          "                     of its Unix socket (default $LOCKSTEP_SERVER,\n"
          "                     else " CLI_DEFAULT_SERVER ")\n"
          "  --token TOKEN      bearer token for TCP (default "
          "$LOCKSTEP_TOKEN)\n"
          "  --json             print API replies unchanged\n"
          "  --version          print the version\n"
          "\n"
          "Run 'lockstep help COMMAND' for a command's options.\n",
        out);
}

static const struct cli_cmd *
find_cmd(const char *name)
{
    for (size_t i = 0; i < ARRAY_SIZE(cmds); i++) {
        if (strcmp(cmds[i].name, name) == 0)
            return &cmds[i];
    }
    return NULL;
}

static int
cmd_help(int argc, char **argv, struct cli *cli)
{
    const struct cli_cmd *cmd;

    if (argc < 2) {
        print_main_help(stdout);
        return CLI_EXIT_OK;
    }
    if (argc > 2)
        return cli_usage(cli, "too many arguments");
    cmd = find_cmd(argv[1]);
    if (cmd == NULL)
        return cli_usage(cli, "unknown command '%s'", argv[1]);
    cli_print_usage(cmd, stdout);
    return CLI_EXIT_OK;
}

int
main(int argc, char **argv)
{
    enum { OPT_SERVER = 256, OPT_TOKEN, OPT_JSON, OPT_VERSION };
    static const struct option opts[] = {
        { "server", required_argument, NULL, OPT_SERVER },
        { "token", required_argument, NULL, OPT_TOKEN },
        { "json", no_argument, NULL, OPT_JSON },
        { "version", no_argument, NULL, OPT_VERSION },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *server = getenv("LOCKSTEP_SERVER");
    const char *token = getenv("LOCKSTEP_TOKEN");
    const struct cli_cmd *cmd;
    struct cli cli;
    struct err err;
    bool json = false;
    int c, rc;

    opterr = 0;
    while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
        switch (c) {
        case OPT_SERVER:
            server = optarg;
            break;
        case OPT_TOKEN:
            token = optarg;
            break;
        case OPT_JSON:
            json = true;
            break;
        case OPT_VERSION:
            printf("lockstep %s\n", LOCKSTEP_VERSION);
            return fflush(stdout) || ferror(stdout) ? CLI_EXIT_FAIL
                                                    : CLI_EXIT_OK;
        case 'h':
            print_main_help(stdout);
            return CLI_EXIT_OK;
        default:
            return cli_opt_error(NULL, argv, c);
        }
    }
    if (optind >= argc) {
        fputs(main_usage, stderr);
        fprintf(stderr, "Try '%s help' for the list of commands.\n",
            CLI_PROG);
        return CLI_EXIT_USAGE;
    }
    cmd = find_cmd(argv[optind]);
    if (cmd == NULL) {
        fprintf(stderr, "%s: unknown command '%s'\n", CLI_PROG, argv[optind]);
        fprintf(stderr, "Try '%s help' for the list of commands.\n",
            CLI_PROG);
        return CLI_EXIT_USAGE;
    }
    if (server == NULL || *server == '\0')
        server = CLI_DEFAULT_SERVER;

    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "%s: cannot initialise libcurl\n", CLI_PROG);
        return CLI_EXIT_FAIL;
    }
    if (cli_init(&cli, server, token, &err) < 0 &&
        !(cmd->flags & CLI_CMD_LOCAL)) {
        fprintf(stderr, "%s: %s\n", CLI_PROG, err.msg);
        cli_release(&cli);
        curl_global_cleanup();
        return CLI_EXIT_USAGE;
    }
    cli.cmd = cmd;
    cli.json = json;

    /* Each command parses from its own name, with getopt fully reset. */
    argc -= optind;
    argv += optind;
    optind = 0;
    rc = cmd->fn(argc, argv, &cli);

    cli_release(&cli);
    curl_global_cleanup();
    if (fflush(stdout) != 0) {
        fprintf(stderr, "%s %s: cannot write output: %s\n", CLI_PROG,
            cmd->name, strerror(errno));
        return CLI_EXIT_FAIL;
    }
    if (ferror(stdout)) {
        fprintf(stderr, "%s %s: cannot write output\n", CLI_PROG,
            cmd->name);
        return CLI_EXIT_FAIL;
    }
    return rc;
}
