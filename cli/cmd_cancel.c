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

/* The planned stop of the job's latest attempt, or NULL. */
static const cJSON *
latest_stop(const cJSON *job)
{
    const cJSON *atts = cJSON_GetObjectItemCaseSensitive(job, "attempts");
    const cJSON *last = cJSON_GetArrayItem(atts, cJSON_GetArraySize(atts) - 1);

    return cJSON_GetObjectItemCaseSensitive(last, "stop");
}

/* name: the job id as a number prints it ("007" is "7"). */
static void
print_cancelled(const cJSON *job, const char *name)
{
    const char *state = cli_jstr(job, "state");
    const cJSON *stop = latest_stop(job);

    if (stop && strcmp(cli_jstr(stop, "kind"), "cancel") == 0)
        printf("job %s is cancelled once every rank has checkpointed step "
               "%lld\n",
            name, (long long)cli_jint(stop, "checkpoint_step", 0));
    else if (strcmp(state, "CANCELLED") == 0)
        printf("cancelled job %s\n", name);
    else if (cli_job_state_final(state))
        printf("job %s already ended: %s\n", name, state);
    else
        printf("job %s is being cancelled (%s)\n", name, state);
}

struct cancel_opts {
    bool checkpoint;
};

static const struct cli_opt cancel_opts[] = {
    CLI_OPT_FLAG("checkpoint", struct cancel_opts, checkpoint),
    CLI_OPT_END,
};

static int
cancel_one(struct cli *cli, int64_t id, bool checkpoint)
{
    char *path = xasprintf("/v1/jobs/%lld/cancel", (long long)id);
    cJSON *body = NULL;
    char name[32];
    int status;

    if (checkpoint) {
        body = cJSON_CreateObject();
        cJSON_AddNumberToObject(body, "version", PROTO_VERSION);
        cJSON_AddTrueToObject(body, "checkpoint");
    }
    snprintf(name, sizeof(name), "%lld", (long long)id);
    status = cli_call_print(cli, "POST", path, body, "job", name,
        print_cancelled);
    cJSON_Delete(body);
    free(path);
    return status;
}

static int
cmd_cancel(int argc, char **argv, struct cli *cli)
{
    struct cancel_opts opts = { 0 };
    struct cli_args args;
    int64_t *ids;
    int status;

    if ((status = cli_parse(cli, argc, argv, &opts, &args)) != CLI_CONTINUE)
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
        if (cancel_one(cli, ids[i], opts.checkpoint) != CLI_EXIT_OK)
            status = CLI_EXIT_FAIL;
    }
    free(ids);
    return status;
}

const struct cli_cmd cli_cmd_cancel = {
    .name = "cancel",
    .summary = "cancel jobs",
    .usage = "usage: lockstep cancel [--checkpoint] [--json] JOB...\n"
             "\n"
             "  --checkpoint  first have every rank checkpoint at the same\n"
             "                step (lockstep checkpoint), then cancel; a job\n"
             "                that does not checkpoint within 120 s is\n"
             "                cancelled anyway\n"
             "  --json        print each job object the scheduler returns\n",
    .opts = cancel_opts,
    .min_args = 1,
    .max_args = -1,
    .missing = "which job? give one or more ids",
    .fn = cmd_cancel,
};
