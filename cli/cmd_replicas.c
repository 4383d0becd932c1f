/*
 * cmd_replicas.c - lockstep replicas: the replicas of a replicated
 * scheduler, their roles, terms and lag; `add` and `remove` (operators)
 *
 * GET /v1/replicas is answered by the leader (the CLI follows it there):
 * the Raft configuration with, for each follower, how far its log is
 * behind the leader's (lag, in entries). `add ID HOST:PORT [--url URL]`
 * makes a replica started empty (with `replicas` not naming it) a
 * voter once it has caught up; `remove ID` takes one out (stop it
 * afterwards). Both wait for the change to be committed.
 */
#include "cli/cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "common/xalloc.h"

struct replicas_opts {
    const char *url;
};

static const struct cli_opt replicas_opts[] = {
    CLI_OPT_STR("url", struct replicas_opts, url),
    CLI_OPT_END,
};

static void
print_replicas(const cJSON *reply, const char *name)
{
    static const char *const headers[] = { "ID", "ADDRESS", "ROLE", "STATE",
        "LAG", "URL" };
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(reply, "replicas");
    struct cli_table *t = cli_table_create(headers, ARRAY_SIZE(headers));
    const cJSON *m;

    (void)name;
    printf("term %lld, leader %lld, commit index %lld\n",
        (long long)cli_jint(reply, "term", 0),
        (long long)cli_jint(reply, "leader_id", 0),
        (long long)cli_jint(reply, "commit_index", 0));
    cJSON_ArrayForEach(m, list) {
        const char *url = cli_jstr(m, "url");

        cli_table_row(t);
        cli_table_cell(t, "%lld", (long long)cli_jint(m, "id", 0));
        cli_table_cell(t, "%s", cli_jstr(m, "address"));
        cli_table_cell(t, "%s", cli_jstr(m, "role"));
        cli_table_cell(t, "%s", cli_jstr(m, "state"));
        cli_table_cell(t, "%lld", (long long)cli_jint(m, "lag", 0));
        cli_table_cell(t, "%s", *url ? url : "-");
    }
    cli_table_print(t, stdout, 0);
    cli_table_destroy(t);
}

/* A replica id operand: 1..65535, else a usage error (printed). */
static int
parse_id(struct cli *cli, const char *s, long long *id)
{
    char *end = NULL;

    errno = 0;
    *id = strtoll(s, &end, 10);
    if (errno != 0 || *end != '\0' || *id < 1 || *id > 65535)
        return cli_usage(cli, "invalid replica id '%s': expected 1 to 65535",
            s);
    return 0;
}

static int
replicas_add(struct cli *cli, const struct cli_args *args,
    const struct replicas_opts *o)
{
    cJSON *body;
    long long id;
    int status;

    if (args->argc != 3)
        return cli_usage(cli, "replicas add takes ID and HOST:PORT (its "
                              "replica_address)");
    if (parse_id(cli, args->argv[1], &id) != 0)
        return CLI_EXIT_USAGE;
    body = cJSON_CreateObject();
    jsonx_add_int(body, "version", PROTO_VERSION);
    jsonx_add_int(body, "id", id);
    jsonx_add_str(body, "address", args->argv[2]);
    if (o->url)
        jsonx_add_str(body, "url", o->url);
    status = cli_call_print(cli, "POST", "/v1/replicas", body, "replica",
        args->argv[1], print_replicas);
    cJSON_Delete(body);
    return status;
}

static int
replicas_remove(struct cli *cli, const struct cli_args *args)
{
    char path[64];
    long long id;

    if (args->argc != 2)
        return cli_usage(cli, "replicas remove takes one replica id");
    if (parse_id(cli, args->argv[1], &id) != 0)
        return CLI_EXIT_USAGE;
    snprintf(path, sizeof(path), "/v1/replicas/%lld/remove", id);
    return cli_call_print(cli, "POST", path, NULL, "replica", args->argv[1],
        print_replicas);
}

static int
cmd_replicas(int argc, char **argv, struct cli *cli)
{
    struct replicas_opts o = { 0 };
    struct cli_args args;
    int status;

    if ((status = cli_parse(cli, argc, argv, &o, &args)) != CLI_CONTINUE)
        return status;
    if (args.argc >= 1 && strcmp(args.argv[0], "add") == 0)
        return replicas_add(cli, &args, &o);
    if (o.url)
        return cli_usage(cli, "--url goes with replicas add");
    if (args.argc >= 1 && strcmp(args.argv[0], "remove") == 0)
        return replicas_remove(cli, &args);
    if (args.argc >= 1)
        return cli_usage(cli,
            "unknown replicas command '%s': expected add or remove",
            args.argv[0]);
    return cli_call_print(cli, "GET", "/v1/replicas", NULL, NULL, NULL,
        print_replicas);
}

const struct cli_cmd cli_cmd_replicas = {
    .name = "replicas",
    .summary = "list the scheduler's replicas; add or remove one",
    .usage = "usage: lockstep replicas [--json]\n"
             "       lockstep replicas add ID HOST:PORT [--url URL] [--json]\n"
             "       lockstep replicas remove ID [--json]\n"
             "\n"
             "Lists each replica with its Raft address, role, state, lag\n"
             "(log entries behind the leader) and URL.\n"
             "  add      (operators) make replica ID, started with\n"
             "           replica_address HOST:PORT and no replicas list,\n"
             "           a voter once it caught up\n"
             "  --url    the URL its clients reach it at\n"
             "  remove   (operators) take replica ID out (stop it after)\n"
             "  --json   print the API reply unchanged\n",
    .opts = replicas_opts,
    .fn = cmd_replicas,
    .max_args = 3,
};
