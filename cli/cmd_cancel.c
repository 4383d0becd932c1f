/*
 * cmd_cancel.c - lockstep cancel: cancel one or more jobs
 *
 * Each job is cancelled on its own (POST /v1/jobs/ID/cancel), so one bad
 * id does not stop the others; the exit status is 1 if any failed.
 * Cancelling a finished job is not an error: the scheduler returns it
 * unchanged and we say what state it ended in.
 */
#include "cli/cli.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

static int
cancel_one(struct cli *cli, int64_t id, bool json, struct cli_resp *resp)
{
    char *path = xasprintf("/v1/jobs/%lld/cancel", (long long)id);
    char name[32];
    cJSON *job = NULL;
    struct err err;
    int rc, status = CLI_EXIT_FAIL;

    rc = cli_call(cli, "POST", path, NULL, CLI_HTTP_QUIET, resp, &job, &err);
    if (rc < 0) {
        snprintf(name, sizeof(name), "%lld", (long long)id);
        cli_fail_about(cli, "job", name, rc, &err);
    } else {
        const char *state = cli_jstr(job, "state");

        if (json)
            cli_print_body(resp);
        else if (strcmp(state, "CANCELLED") == 0)
            printf("cancelled job %lld\n", (long long)id);
        else if (cli_job_state_final(state))
            printf("job %lld already ended: %s\n", (long long)id, state);
        else
            printf("job %lld is being cancelled (%s)\n", (long long)id,
                state);
        status = CLI_EXIT_OK;
    }
    cJSON_Delete(job);
    free(path);
    return status;
}

int
cmd_cancel(int argc, char **argv, struct cli *cli)
{
    static const struct option lopts[] = {
        { "json", no_argument, NULL, 'j' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    bool json = cli->json;
    struct cli_resp resp;
    int64_t *ids;
    int c, n, status = CLI_EXIT_OK;

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
    if (optind >= argc)
        return cli_usage(cli, "which job? give one or more ids");
    /* Check every id before cancelling anything. */
    n = argc - optind;
    ids = xcalloc((size_t)n, sizeof(*ids));
    for (int i = 0; i < n; i++) {
        if (cli_parse_job_id(cli, argv[optind + i], &ids[i]) != 0) {
            free(ids);
            return CLI_EXIT_USAGE;
        }
    }
    cli_resp_init(&resp);
    for (int i = 0; i < n; i++) {
        if (cancel_one(cli, ids[i], json, &resp) != CLI_EXIT_OK)
            status = CLI_EXIT_FAIL;
    }
    cli_resp_release(&resp);
    free(ids);
    return status;
}
