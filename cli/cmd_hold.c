/*
 * cmd_hold.c - lockstep hold / release / requeue: control when a job runs
 *
 * POST /v1/jobs/ID/{hold,release,requeue} for each job given, as cancel
 * does: one bad id does not stop the others, and the exit status is 1 if
 * any failed. `hold` keeps a waiting job from being placed until
 * `release`; `requeue` stops a running job (after a checkpoint at a
 * common step when its ranks report steps) and queues it again, to
 * resume from its latest complete checkpoint without spending a restart.
 */
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

struct hold_opts {
    bool hold; /* requeue: hold it once requeued */
    bool now;  /* requeue: without the checkpoint first */
};

static const struct cli_opt hold_opts[] = {
    CLI_OPT_END,
};

static const struct cli_opt requeue_opts[] = {
    CLI_OPT_FLAG("hold", struct hold_opts, hold),
    CLI_OPT_FLAG("now", struct hold_opts, now),
    CLI_OPT_END,
};

/* The planned stop of the job's latest attempt, or NULL. */
static const cJSON *
latest_stop(const cJSON *job)
{
    const cJSON *atts = cJSON_GetObjectItemCaseSensitive(job, "attempts");
    const cJSON *last = cJSON_GetArrayItem(atts, cJSON_GetArraySize(atts) - 1);

    return cJSON_GetObjectItemCaseSensitive(last, "stop");
}

static void
print_held(const cJSON *job, const char *name)
{
    printf("job %s is held (%s); lockstep release %s lets it run\n", name,
        cli_jstr(job, "state"), name);
}

static void
print_released(const cJSON *job, const char *name)
{
    printf("released job %s (%s)\n", name, cli_jstr(job, "state"));
}

static void
print_requeued(const cJSON *job, const char *name)
{
    const cJSON *stop = latest_stop(job);

    if (stop && strcmp(cli_jstr(stop, "kind"), "requeue") == 0)
        printf("job %s is requeued once every rank has checkpointed step "
               "%lld\n",
            name, (long long)cli_jint(stop, "checkpoint_step", 0));
    else if (stop && strcmp(cli_jstr(stop, "kind"), "cancel") == 0)
        printf("job %s is being cancelled after its checkpoint: not "
               "requeued\n",
            name);
    else
        printf("requeued job %s (%s): %s\n", name, cli_jstr(job, "state"),
            cli_jstr(job, "reason"));
}

/* The body of one request: none, or requeue's options. */
static cJSON *
control_body(const struct hold_opts *o)
{
    cJSON *body;

    if (!o->hold && !o->now)
        return NULL;
    body = cJSON_CreateObject();
    cJSON_AddNumberToObject(body, "version", PROTO_VERSION);
    cJSON_AddBoolToObject(body, "hold", o->hold);
    cJSON_AddBoolToObject(body, "checkpoint", !o->now);
    return body;
}

/* POST /v1/jobs/ID/verb for every job given (the entry's options:
 * hold and release have none). */
static int
control_jobs(int argc, char **argv, struct cli *cli, const char *verb,
    cli_print_fn *print)
{
    struct hold_opts opts = { 0 };
    struct cli_args args;
    int64_t *ids;
    int status;

    if ((status = cli_parse(cli, argc, argv, &opts, &args)) != CLI_CONTINUE)
        return status;
    /* Check every id before changing anything. */
    ids = xcalloc((size_t)args.argc, sizeof(*ids));
    for (int i = 0; i < args.argc; i++) {
        if (cli_parse_job_id(cli, args.argv[i], &ids[i]) != 0) {
            free(ids);
            return CLI_EXIT_USAGE;
        }
    }
    status = CLI_EXIT_OK;
    for (int i = 0; i < args.argc; i++) {
        char *path = xasprintf("/v1/jobs/%lld/%s", (long long)ids[i], verb);
        cJSON *body = control_body(&opts);
        char name[32];

        snprintf(name, sizeof(name), "%lld", (long long)ids[i]);
        if (cli_call_print(cli, "POST", path, body, "job", name, print) !=
            CLI_EXIT_OK)
            status = CLI_EXIT_FAIL;
        cJSON_Delete(body);
        free(path);
    }
    free(ids);
    return status;
}

static int
cmd_hold(int argc, char **argv, struct cli *cli)
{
    return control_jobs(argc, argv, cli, "hold", print_held);
}

static int
cmd_release(int argc, char **argv, struct cli *cli)
{
    return control_jobs(argc, argv, cli, "release", print_released);
}

static int
cmd_requeue(int argc, char **argv, struct cli *cli)
{
    return control_jobs(argc, argv, cli, "requeue", print_requeued);
}

const struct cli_cmd cli_cmd_hold = {
    .name = "hold",
    .summary = "keep waiting jobs from starting until released",
    .usage =
        "usage: lockstep hold [--json] JOB...\n"
        "\n"
        "  A pending (or restarting) job stays queued, with the reason\n"
        "  \"held by USER\", until lockstep release. A running job\n"
        "  cannot be held: lockstep requeue --hold stops it and holds it.\n"
        "\n"
        "  --json  print each job object the scheduler returns\n",
    .opts = hold_opts,
    .min_args = 1,
    .max_args = -1,
    .missing = "which job? give one or more ids",
    .fn = cmd_hold,
};

const struct cli_cmd cli_cmd_release = {
    .name = "release",
    .summary = "let held jobs start",
    .usage = "usage: lockstep release [--json] JOB...\n"
             "\n"
             "  --json  print each job object the scheduler returns\n",
    .opts = hold_opts,
    .min_args = 1,
    .max_args = -1,
    .missing = "which job? give one or more ids",
    .fn = cmd_release,
};

const struct cli_cmd cli_cmd_requeue = {
    .name = "requeue",
    .summary = "stop running jobs and queue them again",
    .usage = "usage: lockstep requeue [--hold] [--now] [--json] JOB...\n"
             "\n"
             "  The job's ranks first checkpoint at a common step (when they\n"
             "  report steps through the SDK; at most 120 s), then its\n"
             "  attempt stops and the job is PENDING again: its next attempt\n"
             "  resumes from the latest complete checkpoint. No restart is\n"
             "  spent and no node is blamed.\n"
             "\n"
             "  --hold  hold the job once requeued (lockstep release)\n"
             "  --now   stop at once, without the checkpoint first\n"
             "  --json  print each job object the scheduler returns\n",
    .opts = requeue_opts,
    .min_args = 1,
    .max_args = -1,
    .missing = "which job? give one or more ids",
    .fn = cmd_requeue,
};
