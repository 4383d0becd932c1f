/*
 * cmd_events.c - lockstep events: the history of nodes and jobs
 *
 * GET /v1/events with the filters as query parameters (docs/api.md): the
 * newest --limit events in order, one line each (time, actor, subject,
 * kind, detail). --follow then asks for the events after the last one
 * seen (after=ID) once a second and prints each as it comes, until it is
 * interrupted. --json prints the reply unchanged; with --follow, one JSON
 * object per event per line. --since takes what `lockstep history` takes
 * (cli_parse_since: "10m", "2h", "2026-11-24T10:00",
 * "2026-11-24T10:00:00Z").
 */
#include "cli/cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "common/sbuf.h"
#include "common/timeid.h"
#include "common/xalloc.h"

#define EVENTS_FOLLOW_EVERY_MS 1000

struct events_opts {
    const char *node;
    int64_t job;
    const char *kind;
    int64_t since_ms;
    int64_t limit;
    bool follow;
};

static int
set_since(void *opts, const char *value, struct sbuf *why)
{
    return cli_parse_since(value, timeid_now_ms(),
        &((struct events_opts *)opts)->since_ms, why);
}

static const struct cli_opt events_opts[] = {
    CLI_OPT_STR("node", struct events_opts, node),
    CLI_OPT_INT("job", struct events_opts, job, 1, INT64_MAX),
    CLI_OPT_STR("kind", struct events_opts, kind),
    CLI_OPT_CALL("since", STR, set_since),
    CLI_OPT_INT("limit", struct events_opts, limit, 1, 1000),
    CLI_OPT_FLAG_LETTER("follow", 'f', struct events_opts, follow),
    CLI_OPT_END,
};

/* One event: "2026-11-24 10:00:05  scheduler  node/n2  node_excluded
 * {...}", or its JSON on one line. */
static void
print_event(const cJSON *ev, bool json)
{
    const cJSON *detail;
    char when[64], *text;

    if (json) {
        text = jsonx_print(ev);
        printf("%s\n", text);
        free(text);
        return;
    }
    detail = cJSON_GetObjectItemCaseSensitive(ev, "detail");
    text = detail != NULL ? jsonx_print(detail) : NULL;
    printf("%s  %-12s %-14s %-18s %s\n",
        cli_fmt_time(cli_jint(ev, "time_ms", 0), when, sizeof(when)),
        cli_jstr(ev, "actor"), cli_jstr(ev, "subject"), cli_jstr(ev, "kind"),
        text ? text : "{}");
    free(text);
}

/* GET /v1/events with the filters; after > 0: the events after it. */
static char *
events_path(struct cli *cli, const struct events_opts *o, int64_t after)
{
    struct sbuf path;

    sbuf_init(&path);
    sbuf_addstr(&path, "/v1/events?limit=");
    sbuf_addf(&path, "%lld", (long long)(o->limit ? o->limit : 100));
    cli_query_add(cli, &path, "node", o->node);
    cli_query_add(cli, &path, "kind", o->kind);
    if (o->job > 0)
        sbuf_addf(&path, "&job=%lld", (long long)o->job);
    if (o->since_ms > 0)
        sbuf_addf(&path, "&since=%lld", (long long)o->since_ms);
    if (after > 0)
        sbuf_addf(&path, "&after=%lld", (long long)after);
    return sbuf_detach(&path, NULL);
}

/* One request: print what came (the whole reply with --json unless
 * following), and the last id into *last. 0 or CLI_EXIT_FAIL. */
static int
events_fetch(struct cli *cli, const struct events_opts *o, int64_t *last,
    bool first)
{
    char *path = events_path(cli, o, *last);
    struct cli_resp resp;
    cJSON *reply = NULL, *list, *ev;
    int status = CLI_EXIT_FAIL;

    cli_resp_init(&resp);
    if (cli_call(cli, "GET", path, NULL, 0, &resp, &reply, NULL) < 0)
        goto out;
    list = cJSON_GetObjectItemCaseSensitive(reply, "events");
    if (!cJSON_IsArray(list)) {
        cli_warn(cli, "unexpected reply from the scheduler: no events list");
        goto out;
    }
    if (cli->json && !o->follow)
        cli_print_body(&resp);
    else if (first && !o->follow && cJSON_GetArraySize(list) == 0)
        fprintf(stderr, "no events match\n");
    cJSON_ArrayForEach(ev, list) {
        if (!cli->json || o->follow)
            print_event(ev, cli->json);
    }
    fflush(stdout);
    *last = cli_jint(reply, "last_id", *last);
    status = CLI_EXIT_OK;
out:
    cJSON_Delete(reply);
    cli_resp_release(&resp);
    free(path);
    return status;
}

static int
cmd_events(int argc, char **argv, struct cli *cli)
{
    struct events_opts o = { 0 };
    struct cli_args args;
    int64_t last = 0;
    int status;

    if ((status = cli_parse(cli, argc, argv, &o, &args)) != CLI_CONTINUE)
        return status;
    if (o.node && cli_check_node_name(cli, o.node) != 0)
        return CLI_EXIT_USAGE;
    if (o.node && o.job)
        return cli_usage(cli, "give --node or --job, not both");
    if ((status = events_fetch(cli, &o, &last, true)) != CLI_EXIT_OK ||
        !o.follow)
        return status;
    for (;;) {
        cli_sleep_ms(EVENTS_FOLLOW_EVERY_MS);
        if ((status = events_fetch(cli, &o, &last, false)) != CLI_EXIT_OK)
            return status;
    }
}

const struct cli_cmd cli_cmd_events = {
    .name = "events",
    .summary = "show what happened to nodes and jobs, and who did it",
    .usage =
        "usage: lockstep events [--node NODE | --job ID] [--kind KIND]\n"
        "                       [--since T] [--limit N] [--follow] [--json]\n"
        "\n"
        "  --node NODE    only the events of NODE\n"
        "  --job ID       only the events of job ID\n"
        "  --kind KIND    only events of KIND (node_lost; a pattern:\n"
        "                 'node_*')\n"
        "  --since T      events since T: a duration back from now (10m,\n"
        "                 2h, 1d12h), a local date and time (2026-11-24,\n"
        "                 2026-11-24T10:00) or a UTC time\n"
        "                 (2026-11-24T10:00:00Z)\n"
        "  --limit N      at most N events, the newest (default 100)\n"
        "  -f, --follow   then print new events as they happen, until\n"
        "                 interrupted\n"
        "  --json         print the API reply unchanged (with --follow:\n"
        "                 one JSON object per event per line)\n",
    .opts = events_opts,
    .fn = cmd_events,
};
