/*
 * cmd_checkpoint.c - lockstep checkpoint: a synchronized checkpoint now
 *
 * POST /v1/jobs/ID/directives {"kind":"checkpoint"}: the scheduler picks
 * a step no rank has reached yet and every rank is told to checkpoint at
 * it (docs/cadence.md). --wait then polls the job until the registry
 * holds a complete checkpoint of that step or later, the job ends, or
 * --timeout runs out.
 */
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>

#include "common/timeid.h"
#include "common/xalloc.h"

#define CKPT_WAIT_POLL_MS 500
#define CKPT_WAIT_DEFAULT_S 600

struct ckpt_opts {
    bool wait;
    int64_t timeout_s;
};

static const struct cli_opt ckpt_opts[] = {
    CLI_OPT_FLAG("wait", struct ckpt_opts, wait),
    CLI_OPT_INT("timeout", struct ckpt_opts, timeout_s, 1, 7 * 24 * 3600),
    CLI_OPT_END,
};

/* The newest complete checkpoint step of job; -1 none. */
static int64_t
newest_checkpoint(const cJSON *job)
{
    const cJSON *cks = cJSON_GetObjectItemCaseSensitive(job, "checkpoints");
    const cJSON *it;
    int64_t best = -1;

    cJSON_ArrayForEach(it, cks) {
        if (cli_jint(it, "step", -1) > best)
            best = cli_jint(it, "step", -1);
    }
    return best;
}

/* Poll job id until a complete checkpoint of step or later; with json,
 * the job object as it was then is printed instead of a sentence. */
static int
ckpt_wait(struct cli *cli, int64_t id, int64_t step, int64_t timeout_s,
    bool json)
{
    char *path = xasprintf("/v1/jobs/%lld", (long long)id);
    int64_t deadline = timeid_mono_ms() + timeout_s * 1000;
    int status = CLI_EXIT_FAIL;
    struct cli_resp resp;

    cli_resp_init(&resp);
    for (;;) {
        cJSON *job = NULL;
        struct err err;
        int64_t have;

        if (cli_call(cli, "GET", path, NULL, CLI_HTTP_QUIET, &resp, &job,
                &err) < 0) {
            cli_warn(cli, "%s", err.msg);
            break;
        }
        have = newest_checkpoint(job);
        if (have >= step) {
            if (json)
                cli_print_body(&resp);
            else
                printf("job %lld: checkpoint of step %lld is complete\n",
                    (long long)id, (long long)have);
            status = CLI_EXIT_OK;
        } else if (cli_job_state_final(cli_jstr(job, "state"))) {
            cli_warn(cli,
                "job %lld ended (%s) before its checkpoint of step "
                "%lld was complete",
                (long long)id, cli_jstr(job, "state"), (long long)step);
        } else if (timeid_mono_ms() >= deadline) {
            cli_warn(cli,
                "the checkpoint of step %lld of job %lld is not "
                "complete after %llds; newest complete: %lld",
                (long long)step, (long long)id, (long long)timeout_s,
                (long long)have);
        } else {
            cJSON_Delete(job);
            cli_sleep_ms(CKPT_WAIT_POLL_MS);
            continue;
        }
        cJSON_Delete(job);
        break;
    }
    cli_resp_release(&resp);
    free(path);
    return status;
}

static int
cmd_checkpoint(int argc, char **argv, struct cli *cli)
{
    struct ckpt_opts opts = { 0 };
    cJSON *body = cJSON_CreateObject(), *reply = NULL;
    struct cli_resp resp;
    struct cli_args args;
    struct err err;
    char *path = NULL, name[32];
    int64_t id, step;
    bool json;
    int status;

    cli_resp_init(&resp);
    if ((status = cli_parse(cli, argc, argv, &opts, &args)) != CLI_CONTINUE ||
        (status = cli_parse_job_id(cli, args.argv[0], &id)) != 0)
        goto out;
    if (opts.timeout_s > 0 && !opts.wait) {
        status = cli_usage(cli, "--timeout is how long --wait waits: give "
                                "--wait too");
        goto out;
    }
    if (opts.timeout_s == 0)
        opts.timeout_s = CKPT_WAIT_DEFAULT_S;
    json = args.json || cli->json;
    snprintf(name, sizeof(name), "%lld", (long long)id);
    path = xasprintf("/v1/jobs/%lld/directives", (long long)id);
    cJSON_AddNumberToObject(body, "version", PROTO_VERSION);
    cJSON_AddStringToObject(body, "kind", "checkpoint");
    if ((status = cli_call(cli, "POST", path, body, CLI_HTTP_QUIET, &resp,
             &reply, &err)) < 0) {
        status = cli_fail_about(cli, "job", name, status, &err);
        goto out;
    }
    step = cli_jint(reply, "step", -1);
    if (json && !opts.wait)
        cli_print_body(&resp);
    else if (!json)
        printf("job %lld: every rank checkpoints at step %lld (attempt "
               "%lld)%s\n",
            (long long)id, (long long)step,
            (long long)cli_jint(reply, "attempt", 0),
            cJSON_IsTrue(
                cJSON_GetObjectItemCaseSensitive(reply, "already_pending"))
                ? ", already asked for"
                : "");
    fflush(stdout);
    status = opts.wait ? ckpt_wait(cli, id, step, opts.timeout_s, json)
                       : CLI_EXIT_OK;
out:
    cJSON_Delete(body);
    cJSON_Delete(reply);
    cli_resp_release(&resp);
    free(path);
    return status;
}

const struct cli_cmd cli_cmd_checkpoint = {
    .name = "checkpoint",
    .summary = "have every rank of a job checkpoint at the same step now",
    .usage =
        "usage: lockstep checkpoint [--wait [--timeout SECS]] JOB\n"
        "\n"
        "Every rank of the job's running attempt is told to checkpoint at\n"
        "the same step, the first one the scheduler is sure no rank has\n"
        "reached yet (the ranks must call lockstep.step() and act on\n"
        "act.checkpoint; docs/cadence.md).\n"
        "\n"
        "  --wait          wait until the checkpoint is complete (every rank\n"
        "                  committed it); exit 1 if the job ends first\n"
        "  --timeout SECS  give up waiting after SECS (default 600)\n"
        "  --json          print the scheduler's reply (with --wait: the job\n"
        "                  object once the checkpoint is complete)\n",
    .opts = ckpt_opts,
    CLI_ONE_JOB,
    .fn = cmd_checkpoint,
};
