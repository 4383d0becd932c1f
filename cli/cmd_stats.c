/*
 * cmd_stats.c - lockstep stats: cluster-wide goodput
 *
 * The effective training time ratio over every job that ever started,
 * where the rest of the time went (work lost to failures, recovery), and
 * how many failures of each kind the scheduler handled. On-call reads it
 * to see whether the cluster is getting better or worse at keeping runs
 * going.
 */
#include "cli/cli.h"

#include <getopt.h>

#include "common/timeid.h"

static void
print_stats(const cJSON *st)
{
    const cJSON *fail = cJSON_GetObjectItemCaseSensitive(st, "failures");
    const cJSON *ettr = cJSON_GetObjectItemCaseSensitive(st, "ettr");
    const cJSON *it;
    char b[32];

    printf("jobs started:  %lld\n", (long long)cli_jint(st, "jobs", 0));
    printf("wall-clock:    %s (summed over jobs)\n",
        timeid_fmt_duration(cli_jint(st, "wall_ms", 0), b, sizeof(b)));
    printf("productive:    %s\n",
        timeid_fmt_duration(cli_jint(st, "productive_ms", 0), b, sizeof(b)));
    printf("lost work:     %s\n",
        timeid_fmt_duration(cli_jint(st, "lost_ms", 0), b, sizeof(b)));
    printf("recovery:      %s\n",
        timeid_fmt_duration(cli_jint(st, "recovery_ms", 0), b, sizeof(b)));
    printf("rank-time:     %s productive\n",
        timeid_fmt_duration(cli_jint(st, "rank_productive_ms", 0), b,
            sizeof(b)));
    printf("ETTR:          %.3f\n",
        cJSON_IsNumber(ettr) ? ettr->valuedouble : 0.0);
    printf("failures:     ");
    cJSON_ArrayForEach(it, fail)
        printf(" %s %lld%s", it->string, (long long)it->valuedouble,
            it->next ? "," : "");
    printf("\n");
}

int
cmd_stats(int argc, char **argv, struct cli *cli)
{
    static const struct option lopts[] = {
        { "json", no_argument, NULL, 'j' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    bool json = cli->json;
    struct cli_resp resp;
    cJSON *st = NULL;
    int c, status = CLI_EXIT_FAIL;

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
    if (optind < argc)
        return cli_usage(cli, "unexpected argument '%s'", argv[optind]);

    cli_resp_init(&resp);
    if (cli_call(cli, "GET", "/v1/stats", NULL, 0, &resp, &st, NULL) == 0) {
        if (json)
            cli_print_body(&resp);
        else
            print_stats(st);
        status = CLI_EXIT_OK;
    }
    cJSON_Delete(st);
    cli_resp_release(&resp);
    return status;
}
