/*
 * cmd_history.c - lockstep history: finished jobs, as sacct shows them
 *
 * GET /v1/history with the filters as query parameters: jobs that ended
 * (SUCCEEDED, FAILED, CANCELLED), newest first, each with its times, its
 * attempts, why it ended and its goodput (ETTR: productive time over wall
 * time, docs/fault-tolerance.md). --since takes a duration back from now
 * ("2h", "1d12h"), a local date and time ("2026-11-24",
 * "2026-11-24 10:00", "2026-11-24T10:00:05") or a UTC time
 * ("2026-11-24T10:00:05Z"); cli_parse_since reads it.
 */
#include "cli/cli.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/sbuf.h"
#include "common/timeid.h"
#include "common/xalloc.h"

/* A duration such as "90s", "15m", "2h", "3d", "1w" or "1d12h": its
 * milliseconds, or -1 when s is not one. */
static int64_t
since_duration(const char *s)
{
    int64_t total = 0;

    if (!isdigit((unsigned char)*s))
        return -1;
    while (*s) {
        char *end;
        long long n;
        int64_t unit;

        if (!isdigit((unsigned char)*s))
            return -1;
        errno = 0;
        n = strtoll(s, &end, 10);
        if (errno != 0 || n > 100L * 365 * 86400)
            return -1;
        switch (*end) {
        case 's':
            unit = 1000;
            break;
        case 'm':
            unit = 60 * 1000;
            break;
        case 'h':
            unit = 3600 * 1000;
            break;
        case 'd':
            unit = 86400 * 1000;
            break;
        case 'w':
            unit = 7 * 86400 * 1000;
            break;
        default:
            return -1;
        }
        total += (int64_t)n * unit;
        if (total > (int64_t)100 * 365 * 86400 * 1000)
            return -1;
        s = end + 1;
    }
    return total;
}

/* An ISO 8601 time in UTC ("2026-11-24T10:00:05Z", as the scheduler's
 * JSON and webhook write them): its epoch milliseconds, or -1. */
static int64_t
since_utc(const char *s)
{
    struct tm tm;
    const char *end;

    memset(&tm, 0, sizeof(tm));
    end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (end == NULL || strcmp(end, "Z") != 0)
        return -1;
    return (int64_t)timegm(&tm) * 1000;
}

/* A local date, with a time of day or not: its epoch milliseconds, or -1
 * when s is none of the forms. */
static int64_t
since_time(const char *s)
{
    static const char *const forms[] = { "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M", "%Y-%m-%d",
        NULL };

    for (size_t i = 0; forms[i]; i++) {
        struct tm tm;
        const char *end;
        time_t t;

        memset(&tm, 0, sizeof(tm));
        end = strptime(s, forms[i], &tm);
        if (end == NULL || *end != '\0')
            continue;
        tm.tm_isdst = -1;
        if ((t = mktime(&tm)) == (time_t)-1)
            return -1;
        return (int64_t)t * 1000;
    }
    return -1;
}

int64_t
cli_parse_duration(const char *s)
{
    return since_duration(s);
}

int
cli_parse_since(const char *s, int64_t now_ms, int64_t *out, struct sbuf *why)
{
    int64_t v;

    if ((v = since_duration(s)) >= 0) {
        *out = now_ms - v > 1 ? now_ms - v : 1;
        return 0;
    }
    if ((v = since_utc(s)) > 0 || (v = since_time(s)) > 0) {
        *out = v;
        return 0;
    }
    sbuf_addf(why,
        "invalid --since '%s': expected a duration back from now (30m, 2h, "
        "1d12h, 1w), a local date and time (2026-11-24, "
        "2026-11-24 10:00, 2026-11-24T10:00:05) or a UTC time "
        "(2026-11-24T10:00:05Z)",
        s);
    return -EINVAL;
}

struct history_opts {
    int64_t since_ms;  /* 0: any */
    const char *state; /* canonical name (static), or NULL */
    const char *user;
    const char *name;
    int64_t limit; /* 0: the server's default, none */
};

static int
set_since(void *opts, const char *value, struct sbuf *why)
{
    return cli_parse_since(value, timeid_now_ms(),
        &((struct history_opts *)opts)->since_ms, why);
}

static int
set_state(void *opts, const char *value, struct sbuf *why)
{
    struct history_opts *o = opts;

    o->state = cli_job_state_parse(value);
    if (o->state == NULL || !cli_job_state_final(o->state)) {
        sbuf_addf(why,
            "invalid --state '%s': expected SUCCEEDED, FAILED or CANCELLED",
            value);
        return -EINVAL;
    }
    return 0;
}

static const struct cli_opt history_opts[] = {
    CLI_OPT_CALL("since", STR, set_since),
    CLI_OPT_CALL("state", STR, set_state),
    CLI_OPT_STR("user", struct history_opts, user),
    CLI_OPT_STR("name", struct history_opts, name),
    CLI_OPT_INT("limit", struct history_opts, limit, 1, 100000),
    CLI_OPT_END,
};

/* "97%" for an ETTR, "-" when the job never ran. */
static void
ettr_cell(struct cli_table *t, const cJSON *job)
{
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(job, "goodput");
    const cJSON *ettr = cJSON_GetObjectItemCaseSensitive(g, "ettr");

    if (cli_jint(g, "wall_ms", 0) <= 0 || !cJSON_IsNumber(ettr))
        cli_table_cell(t, "-");
    else
        cli_table_cell(t, "%.0f%%", ettr->valuedouble * 100.0);
}

static void
print_history(const cJSON *jobs)
{
    static const char *const headers[] = { "ID", "NAME", "USER", "STATE",
        "SUBMITTED", "STARTED", "ENDED", "ELAPSED", "ATTEMPTS", "ETTR",
        "REASON" };
    struct cli_table *t = cli_table_create(headers, ARRAY_SIZE(headers));
    const cJSON *job;

    cJSON_ArrayForEach(job, jobs) {
        int64_t start = cli_jint(job, "start_ms", 0);
        int64_t end = cli_jint(job, "end_ms", 0);
        char sub[64], st[64], en[64], el[32];

        cli_table_row(t);
        cli_table_cell(t, "%lld", (long long)cli_jint(job, "id", 0));
        cli_table_cell(t, "%s", cli_jstr(job, "name"));
        cli_table_cell(t, "%s", cli_jstr(job, "user"));
        cli_table_cell(t, "%s", cli_jstr(job, "state"));
        cli_table_cell(t, "%s",
            cli_fmt_time(cli_jint(job, "submit_ms", 0), sub, sizeof(sub)));
        cli_table_cell(t, "%s", cli_fmt_time(start, st, sizeof(st)));
        cli_table_cell(t, "%s", cli_fmt_time(end, en, sizeof(en)));
        cli_table_cell(t, "%s",
            start > 0 && end > 0 ? cli_fmt_age(start, end, el, sizeof(el))
                                 : "-");
        cli_table_cell(t, "%lld", (long long)cli_jint(job, "attempt", 0));
        ettr_cell(t, job);
        cli_table_cell(t, "%s", cli_jstr(job, "reason"));
    }
    cli_table_print(t, stdout, 0);
    cli_table_destroy(t);
}

/* GET /v1/history with the filters as query parameters; caller frees. */
static char *
history_path(struct cli *cli, const struct history_opts *o)
{
    struct sbuf path;

    sbuf_init(&path);
    sbuf_addstr(&path, "/v1/history");
    if (o->since_ms > 0)
        sbuf_addf(&path, "?since=%lld", (long long)o->since_ms);
    cli_query_add(cli, &path, "state", o->state);
    cli_query_add(cli, &path, "user", o->user);
    cli_query_add(cli, &path, "name", o->name);
    if (o->limit > 0)
        sbuf_addf(&path, "%climit=%lld", strchr(path.buf, '?') ? '&' : '?',
            (long long)o->limit);
    return sbuf_detach(&path, NULL);
}

static int
cmd_history(int argc, char **argv, struct cli *cli)
{
    struct history_opts o = { 0 };
    struct cli_args args;
    char *path;
    int status;

    if ((status = cli_parse(cli, argc, argv, &o, &args)) != CLI_CONTINUE)
        return status;
    path = history_path(cli, &o);
    status = cli_get_list(cli, path, "no finished jobs match", print_history);
    free(path);
    return status;
}

const struct cli_cmd cli_cmd_history = {
    .name = "history",
    .summary = "list finished jobs with their times, attempts and ETTR",
    .usage =
        "usage: lockstep history [--since T] [--user USER] [--state STATE]\n"
        "                        [--name NAME] [--limit N] [--json]\n"
        "\n"
        "  --since T      jobs that ended since T: a duration back from now\n"
        "                 (30m, 2h, 1d12h, 1w), a local date and time\n"
        "                 (2026-11-24, 2026-11-24 10:00) or a UTC time\n"
        "                 (2026-11-24T10:00:00Z)\n"
        "  --user USER    only USER's jobs (operators see everyone's)\n"
        "  --state STATE  only SUCCEEDED, FAILED or CANCELLED jobs\n"
        "  --name NAME    only jobs named NAME\n"
        "  --limit N      at most N jobs, the newest\n"
        "  --json         print the API reply unchanged\n",
    .opts = history_opts,
    .fn = cmd_history,
};
