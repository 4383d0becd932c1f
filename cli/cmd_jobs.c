/*
 * cmd_jobs.c - lockstep jobs: one line per job
 *
 * GET /v1/jobs with the filters as query parameters. Without --all the
 * scheduler returns unfinished jobs only; --state implies --all, because
 * asking for FAILED jobs and getting none back because they are finished
 * would surprise everyone.
 */
#include "cli/cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/sbuf.h"
#include "common/timeid.h"
#include "common/xalloc.h"

static void
print_jobs(const cJSON *jobs)
{
    static const char *const headers[] = { "ID", "NAME", "USER", "STATE",
        "NODES×RANKS", "AGE", "REASON" };
    struct cli_table *t = cli_table_create(headers, ARRAY_SIZE(headers));
    int64_t now = timeid_now_ms();
    const cJSON *job;

    cJSON_ArrayForEach(job, jobs) {
        char age[32];

        cli_table_row(t);
        cli_table_cell(t, "%lld", (long long)cli_jint(job, "id", 0));
        cli_table_cell(t, "%s", cli_jstr(job, "name"));
        cli_table_cell(t, "%s", cli_jstr(job, "user"));
        cli_table_cell(t, "%s", cli_jstr(job, "state"));
        cli_table_cell(t, "%lld×%lld", (long long)cli_jint(job, "nodes", 0),
            (long long)cli_jint(job, "ranks_per_node", 0));
        cli_table_cell(t, "%s",
            cli_fmt_age(cli_jint(job, "submit_ms", 0), now, age, sizeof(age)));
        cli_table_cell(t, "%s", cli_jstr(job, "reason"));
    }
    cli_table_print(t, stdout, 0);
    cli_table_destroy(t);
}

struct jobs_opts {
    bool all;
    const char *state; /* canonical name (static), or NULL */
    const char *user;
    const char *name;
    int64_t limit; /* 0: no limit */
};

static int
set_state(void *opts, const char *value, struct sbuf *why)
{
    struct jobs_opts *o = opts;

    o->state = cli_job_state_parse(value);
    if (o->state == NULL) {
        sbuf_addf(why, "unknown job state '%s'", value);
        return -EINVAL;
    }
    return 0;
}

static int
set_user(void *opts, const char *value, struct sbuf *why)
{
    if (*value == '\0') {
        sbuf_addstr(why, "--user needs a user name");
        return -EINVAL;
    }
    ((struct jobs_opts *)opts)->user = value;
    return 0;
}

static const struct cli_opt jobs_opts[] = {
    CLI_OPT_FLAG("all", struct jobs_opts, all),
    CLI_OPT_CALL("state", STR, set_state),
    CLI_OPT_CALL("user", STR, set_user),
    CLI_OPT_STR("name", struct jobs_opts, name),
    CLI_OPT_INT("limit", struct jobs_opts, limit, 1, 100000),
    CLI_OPT_END,
};

/* GET /v1/jobs with the filters as query parameters; caller frees. */
static char *
jobs_path(struct cli *cli, const struct jobs_opts *o)
{
    struct sbuf path;

    sbuf_init(&path);
    sbuf_addstr(&path, "/v1/jobs");
    if (o->all || o->state)
        cli_query_add(cli, &path, "all", "1");
    cli_query_add(cli, &path, "state", o->state);
    cli_query_add(cli, &path, "user", o->user);
    cli_query_add(cli, &path, "name", o->name);
    if (o->limit > 0)
        sbuf_addf(&path, "%climit=%lld", strchr(path.buf, '?') ? '&' : '?',
            (long long)o->limit);
    return sbuf_detach(&path, NULL);
}

static int
cmd_jobs(int argc, char **argv, struct cli *cli)
{
    struct jobs_opts o = { 0 };
    struct cli_args args;
    char *path;
    int status;

    if ((status = cli_parse(cli, argc, argv, &o, &args)) != CLI_CONTINUE)
        return status;
    path = jobs_path(cli, &o);
    status = cli_get_list(cli, path,
        o.all || o.state ? "no jobs match"
                         : "no unfinished jobs (--all includes finished ones)",
        print_jobs);
    free(path);
    return status;
}

const struct cli_cmd cli_cmd_jobs = {
    .name = "jobs",
    .summary = "list jobs",
    .usage =
        "usage: lockstep jobs [--all] [--state STATE] [--user USER]\n"
        "                     [--name NAME] [--limit N] [--json]\n"
        "\n"
        "  --all          include finished jobs (default: unfinished only)\n"
        "  --state STATE  only jobs in STATE (PENDING, PLACED, RUNNING,\n"
        "                 RESTARTING, SUCCEEDED, FAILED, CANCELLED)\n"
        "  --user USER    only USER's jobs (operators see everyone's)\n"
        "  --name NAME    only jobs named NAME\n"
        "  --limit N      at most N jobs, the newest\n"
        "  --json         print the API reply unchanged\n",
    .opts = jobs_opts,
    .fn = cmd_jobs,
};
