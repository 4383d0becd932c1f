/*
 * cmd_cancel.c - lockstep cancel: cancel one or more jobs
 *
 * Each job is cancelled on its own (POST /v1/jobs/ID/cancel), so one bad
 * id does not stop the others; the exit status is 1 if any failed.
 * Cancelling a finished job is not an error: the scheduler returns it
 * unchanged and we say what state it ended in.
 *
 * Instead of ids, --user, --name and --state select the unfinished jobs
 * to cancel (GET /v1/jobs with them as filters). Without --user that is
 * the caller's own jobs, operators included: cancelling every user's
 * jobs takes --all-users, so that `cancel --state RUNNING` never empties
 * the cluster by accident.
 */
#include "cli/cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/sbuf.h"
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
    bool all_users;
    const char *user; /* the filters, or NULL */
    const char *name;
    const char *state; /* canonical name (static) */
};

static int
set_user(void *opts, const char *value, struct sbuf *why)
{
    if (*value == '\0') {
        sbuf_addstr(why, "--user needs a user name");
        return -EINVAL;
    }
    ((struct cancel_opts *)opts)->user = value;
    return 0;
}

static int
set_name(void *opts, const char *value, struct sbuf *why)
{
    (void)why;
    ((struct cancel_opts *)opts)->name = value;
    return 0;
}

static int
set_state(void *opts, const char *value, struct sbuf *why)
{
    struct cancel_opts *o = opts;

    o->state = cli_job_state_parse(value);
    if (o->state == NULL || cli_job_state_final(o->state)) {
        sbuf_addf(why,
            "invalid --state '%s': expected the state of an unfinished job "
            "(PENDING, PLACED, RUNNING, RESTARTING)",
            value);
        return -EINVAL;
    }
    return 0;
}

static const struct cli_opt cancel_opts[] = {
    CLI_OPT_FLAG("checkpoint", struct cancel_opts, checkpoint),
    CLI_OPT_SELECT("user", set_user),
    CLI_OPT_SELECT("name", set_name),
    CLI_OPT_SELECT("state", set_state),
    CLI_OPT_FLAG("all-users", struct cancel_opts, all_users),
    CLI_OPT_END,
};

/* The caller's user name (GET /v1/whoami); caller frees. NULL after
 * saying why. */
static char *
whoami(struct cli *cli)
{
    struct cli_resp resp;
    cJSON *me = NULL;
    char *user = NULL;

    cli_resp_init(&resp);
    if (cli_call(cli, "GET", "/v1/whoami", NULL, 0, &resp, &me, NULL) == 0 &&
        *cli_jstr(me, "user"))
        user = xstrdup(cli_jstr(me, "user"));
    cJSON_Delete(me);
    cli_resp_release(&resp);
    return user;
}

/* The ids of the unfinished jobs the filters select, newest first, into
 * *ids (caller frees). Returns how many, or -1 after saying why. */
static int
select_jobs(struct cli *cli, const struct cancel_opts *o, int64_t **ids)
{
    char *me = NULL, *path;
    struct cli_resp resp;
    struct sbuf p;
    cJSON *jobs = NULL;
    const cJSON *job;
    int n = -1;

    if (o->user == NULL && !o->all_users && (me = whoami(cli)) == NULL)
        return -1;
    sbuf_init(&p);
    sbuf_addstr(&p, "/v1/jobs");
    cli_query_add(cli, &p, "state", o->state);
    cli_query_add(cli, &p, "user", o->user ? o->user : me);
    cli_query_add(cli, &p, "name", o->name);
    path = sbuf_detach(&p, NULL);
    cli_resp_init(&resp);
    if (cli_call(cli, "GET", path, NULL, 0, &resp, &jobs, NULL) == 0) {
        *ids = xcalloc((size_t)cJSON_GetArraySize(jobs) + 1, sizeof(**ids));
        n = 0;
        cJSON_ArrayForEach(job, jobs) {
            (*ids)[n++] = cli_jint(job, "id", 0);
        }
    }
    cJSON_Delete(jobs);
    cli_resp_release(&resp);
    free(path);
    free(me);
    return n;
}

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

/* The ids the operands name, all checked before anything is cancelled,
 * into *ids (caller frees); or the usage error's exit status. */
static int
operand_jobs(struct cli *cli, const struct cli_args *args, int64_t **ids)
{
    *ids = xcalloc((size_t)args->argc + 1, sizeof(**ids));
    for (int i = 0; i < args->argc; i++) {
        if (cli_parse_job_id(cli, args->argv[i], &(*ids)[i]) != 0) {
            free(*ids);
            *ids = NULL;
            return CLI_EXIT_USAGE;
        }
    }
    return CLI_CONTINUE;
}

static int
cmd_cancel(int argc, char **argv, struct cli *cli)
{
    struct cancel_opts opts = { 0 };
    bool filtered;
    struct cli_args args;
    int64_t *ids = NULL;
    int status, n, failed = 0;

    if ((status = cli_parse(cli, argc, argv, &opts, &args)) != CLI_CONTINUE)
        return status;
    filtered = opts.user || opts.name || opts.state;
    if (filtered && args.argc > 0)
        return cli_usage(cli, "give job ids or --user, --name and --state, "
                              "not both");
    if (opts.all_users && (opts.user || !filtered))
        return cli_usage(cli, "--all-users goes with --name or --state, "
                              "instead of --user");
    if (!filtered) {
        if ((status = operand_jobs(cli, &args, &ids)) != CLI_CONTINUE)
            return status;
        n = args.argc;
    } else if ((n = select_jobs(cli, &opts, &ids)) < 0) {
        return CLI_EXIT_FAIL;
    } else if (n == 0) {
        fprintf(stderr, "no unfinished jobs match\n");
    }
    for (int i = 0; i < n; i++) {
        if (cancel_one(cli, ids[i], opts.checkpoint) != CLI_EXIT_OK)
            failed++;
    }
    if (filtered && failed > 0)
        cli_warn(cli, "%d of %d jobs could not be cancelled", failed, n);
    free(ids);
    return failed > 0 ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

const struct cli_cmd cli_cmd_cancel = {
    .name = "cancel",
    .summary = "cancel jobs",
    .usage = "usage: lockstep cancel [--checkpoint] [--json] JOB...\n"
             "       lockstep cancel [--checkpoint] [--json] [--user USER |\n"
             "                       --all-users] [--name NAME] [--state S]\n"
             "\n"
             "  --checkpoint   first have every rank checkpoint at the same\n"
             "                 step (lockstep checkpoint), then cancel; a job\n"
             "                 that does not checkpoint within 120 s is\n"
             "                 cancelled anyway\n"
             "  --user USER    every unfinished job of USER (default with\n"
             "                 --name or --state: your own)\n"
             "  --name NAME    every unfinished job named NAME\n"
             "  --state S      every job in S (PENDING, PLACED, RUNNING,\n"
             "                 RESTARTING)\n"
             "  --all-users    with --name or --state: every user's jobs\n"
             "                 (operators)\n"
             "  --json         print each job object the scheduler returns,\n"
             "                 one per line\n",
    .opts = cancel_opts,
    .min_args = 1,
    .max_args = -1,
    .missing = "which job? give one or more ids",
    .fn = cmd_cancel,
};
