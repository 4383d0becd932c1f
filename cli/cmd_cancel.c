/*
 * cmd_cancel.c - lockstep cancel: cancel one or more jobs
 *
 * Each job is cancelled on its own (POST /v1/jobs/ID/cancel), so one bad
 * id does not stop the others; the exit status is 1 if any failed.
 * Cancelling a finished job is not an error: the scheduler returns it
 * unchanged and we say what state it ended in.
 */
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

/* name: the job id as a number prints it ("007" is "7"). */
static void
print_cancelled(const cJSON *job, const char *name)
{
    const char *state = cli_jstr(job, "state");

    if (strcmp(state, "CANCELLED") == 0)
        printf("cancelled job %s\n", name);
    else if (cli_job_state_final(state))
        printf("job %s already ended: %s\n", name, state);
    else
        printf("job %s is being cancelled (%s)\n", name, state);
}

static int
cancel_one(struct cli *cli, int64_t id)
{
    char *path = xasprintf("/v1/jobs/%lld/cancel", (long long)id);
    char name[32];
    int status;

    snprintf(name, sizeof(name), "%lld", (long long)id);
    status = cli_call_print(cli, "POST", path, NULL, "job", name,
        print_cancelled);
    free(path);
    return status;
}

static int
cmd_cancel(int argc, char **argv, struct cli *cli)
{
    struct cli_args args;
    int64_t *ids;
    int status;

    if ((status = cli_parse(cli, argc, argv, NULL, &args)) != CLI_CONTINUE)
        return status;
    /* Check every id before cancelling anything. */
    ids = xcalloc((size_t)args.argc, sizeof(*ids));
    for (int i = 0; i < args.argc; i++) {
        if (cli_parse_job_id(cli, args.argv[i], &ids[i]) != 0) {
            free(ids);
            return CLI_EXIT_USAGE;
        }
    }
    status = CLI_EXIT_OK;
    for (int i = 0; i < args.argc; i++) {
        if (cancel_one(cli, ids[i]) != CLI_EXIT_OK)
            status = CLI_EXIT_FAIL;
    }
    free(ids);
    return status;
}

const struct cli_cmd cli_cmd_cancel = {
    .name = "cancel",
    .summary = "cancel jobs",
    .usage = "usage: lockstep cancel [--json] JOB...\n"
             "\n"
             "  --json  print each job object the scheduler returns\n",
    .min_args = 1,
    .max_args = -1,
    .missing = "which job? give one or more ids",
    .fn = cmd_cancel,
};
