/*
 * cmd_jobs.c - lockstep jobs: one line per job
 *
 * GET /v1/jobs with the filters as query parameters. Without --all the
 * scheduler returns unfinished jobs only; --state implies --all, because
 * asking for FAILED jobs and getting none back because they are finished
 * would surprise everyone.
 */
#include "cli/cli.h"

#include <getopt.h>
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
            cli_fmt_age(cli_jint(job, "submit_ms", 0), now, age,
                sizeof(age)));
        cli_table_cell(t, "%s", cli_jstr(job, "reason"));
    }
    cli_table_print(t, stdout, 0);
    cli_table_destroy(t);
}

int
cmd_jobs(int argc, char **argv, struct cli *cli)
{
    enum { OPT_ALL = 256, OPT_STATE, OPT_USER, OPT_JSON };
    static const struct option lopts[] = {
        { "all", no_argument, NULL, OPT_ALL },
        { "state", required_argument, NULL, OPT_STATE },
        { "user", required_argument, NULL, OPT_USER },
        { "json", no_argument, NULL, OPT_JSON },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *state = NULL, *user = NULL;
    bool all = false, json = cli->json;
    struct cli_resp resp;
    struct sbuf path;
    cJSON *jobs = NULL;
    int c, status = CLI_EXIT_FAIL;

    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", lopts, NULL)) != -1) {
        switch (c) {
        case OPT_ALL:
            all = true;
            break;
        case OPT_STATE:
            state = cli_job_state_parse(optarg);
            if (state == NULL)
                return cli_usage(cli, "unknown job state '%s'", optarg);
            break;
        case OPT_USER:
            if (*optarg == '\0')
                return cli_usage(cli, "--user needs a user name");
            user = optarg;
            break;
        case OPT_JSON:
            json = true;
            break;
        case 'h':
            return cli_help(cli);
        default:
            return cli_opt_error(cli, argv, c);
        }
    }
    if (optind < argc)
        return cli_usage(cli, "unexpected argument '%s'", argv[optind]);

    sbuf_init(&path);
    cli_resp_init(&resp);
    sbuf_addstr(&path, "/v1/jobs");
    if (all || state)
        sbuf_addstr(&path, "?all=1");
    if (state)
        sbuf_addf(&path, "&state=%s", state);
    if (user) {
        char *u = cli_escape(cli, user);

        sbuf_addf(&path, "%cuser=%s", all || state ? '&' : '?', u);
        free(u);
    }
    if (cli_call(cli, "GET", path.buf, NULL, 0, &resp, &jobs, NULL) < 0)
        goto out;
    if (!cJSON_IsArray(jobs)) {
        cli_warn(cli, "unexpected reply from the scheduler: not a list");
        goto out;
    }
    if (json)
        cli_print_body(&resp);
    else if (cJSON_GetArraySize(jobs) == 0)
        fprintf(stderr, "no %sjobs%s\n", all || state ? "" : "unfinished ",
            all || state ? " match" : " (--all includes finished ones)");
    else
        print_jobs(jobs);
    status = CLI_EXIT_OK;
out:
    cJSON_Delete(jobs);
    cli_resp_release(&resp);
    sbuf_release(&path);
    return status;
}
