/*
 * cmd_token.c - lockstep token create | list | revoke: bearer tokens for
 * TCP clients
 *
 * create (operators): the token is printed on stdout alone, so that
 * `LOCKSTEP_TOKEN=$(lockstep token create --user alice)` works; the
 * scheduler stores only its SHA-256 and cannot show it again. --ttl sets
 * its lifetime (default 30 days, the scheduler's; "never" for none).
 * list: one's own tokens (an operator's: everyone's, or --user's), never
 * a secret. revoke ID: one's own token, or any for an operator; it fails
 * from the next request on.
 */
#include "cli/cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "common/sbuf.h"
#include "common/timeid.h"
#include "common/xalloc.h"

struct token_opts {
    const char *user;
    const char *role;
    int64_t ttl_s; /* -1: the scheduler's default; 0: never */
};

static int
set_ttl(void *opts, const char *value, struct sbuf *why)
{
    int64_t ms;

    if (strcmp(value, "never") == 0) {
        ((struct token_opts *)opts)->ttl_s = 0;
        return 0;
    }
    ms = cli_parse_duration(value);
    if (ms < 1000) {
        sbuf_addf(why,
            "invalid --ttl '%s': expected a duration (90m, 12h, 30d, 1w, "
            "1d12h; at least 1s) or 'never'",
            value);
        return -EINVAL;
    }
    ((struct token_opts *)opts)->ttl_s = ms / 1000;
    return 0;
}

static const struct cli_opt token_opts[] = {
    CLI_OPT_STR("user", struct token_opts, user),
    CLI_OPT_WORD("role", struct token_opts, role, "user", "operator"),
    CLI_OPT_CALL("ttl", STR, set_ttl),
    CLI_OPT_END,
};

/* The subcommand, before any option: "create", "list" or "revoke".
 * Returns CLI_CONTINUE or the exit status. */
static int
check_subcommand(struct cli *cli, int argc, char **argv)
{
    if (argc < 2 || argv[1][0] == '-') {
        if (argc >= 2 &&
            (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0))
            return cli_help(cli);
        return cli_usage(cli,
            "missing subcommand: expected 'create', 'list' or 'revoke'");
    }
    if (strcmp(argv[1], "create") != 0 && strcmp(argv[1], "list") != 0 &&
        strcmp(argv[1], "revoke") != 0)
        return cli_usage(cli,
            "unknown subcommand '%s': expected 'create', 'list' or 'revoke'",
            argv[1]);
    return CLI_CONTINUE;
}

static int
token_create(struct cli *cli, const struct token_opts *o)
{
    struct cli_resp resp;
    cJSON *body, *reply = NULL;
    int status = CLI_EXIT_FAIL;

    body = cJSON_CreateObject();
    jsonx_add_int(body, "version", PROTO_VERSION);
    jsonx_add_str(body, "user", o->user);
    jsonx_add_str(body, "role", o->role);
    if (o->ttl_s >= 0)
        jsonx_add_int(body, "ttl_s", o->ttl_s);
    cli_resp_init(&resp);
    if (cli_call(cli, "POST", "/v1/tokens", body, 0, &resp, &reply, NULL) ==
        0) {
        const char *token = cli_jstr(reply, "token");

        if (cli->json) {
            cli_print_body(&resp);
            status = CLI_EXIT_OK;
        } else if (*token == '\0') {
            cli_warn(cli, "unexpected reply from the scheduler: no token");
        } else {
            printf("%s\n", token);
            status = CLI_EXIT_OK;
        }
    }
    cJSON_Delete(reply);
    cJSON_Delete(body);
    cli_resp_release(&resp);
    return status;
}

static void
print_tokens(const cJSON *list)
{
    static const char *const headers[] = { "ID", "PREFIX", "USER", "ROLE",
        "CREATED", "EXPIRES", "LAST USED", "STATE" };
    struct cli_table *t = cli_table_create(headers, ARRAY_SIZE(headers));
    int64_t now = timeid_now_ms();
    const cJSON *o;
    char b1[32], b2[32], b3[32];

    cJSON_ArrayForEach(o, list) {
        int64_t exp = cli_jint(o, "expires_ms", 0);
        int64_t used = cli_jint(o, "last_used_ms", 0);

        cli_table_row(t);
        cli_table_cell(t, "%lld", (long long)cli_jint(o, "id", 0));
        cli_table_cell(t, "%s...", cli_jstr(o, "prefix"));
        cli_table_cell(t, "%s", cli_jstr(o, "user"));
        cli_table_cell(t, "%s", cli_jstr(o, "role"));
        cli_table_cell(t, "%s",
            cli_fmt_time(cli_jint(o, "created_ms", 0), b1, sizeof(b1)));
        cli_table_cell(t, "%s",
            exp ? cli_fmt_time(exp, b2, sizeof(b2)) : "never");
        if (used)
            cli_table_cell(t, "%s ago", cli_fmt_age(used, now, b3, sizeof(b3)));
        else
            cli_table_cell(t, "-");
        cli_table_cell(t, "%s", cli_jstr(o, "state"));
    }
    cli_table_print(t, stdout, 0);
    cli_table_destroy(t);
}

static int
token_list(struct cli *cli, const struct token_opts *o)
{
    struct sbuf path;
    int status;

    sbuf_init(&path);
    sbuf_addstr(&path, "/v1/tokens");
    if (o->user)
        sbuf_addf(&path, "?user=%s", o->user);
    status = cli_get_list(cli, path.buf, "no tokens", print_tokens);
    sbuf_release(&path);
    return status;
}

static void
print_revoked(const cJSON *reply, const char *name)
{
    (void)name;
    printf("token %lld revoked\n", (long long)cli_jint(reply, "id", 0));
}

static int
token_revoke(struct cli *cli, const struct cli_args *args)
{
    char path[64];
    char *end = NULL;
    long long id;

    if (args->argc != 1)
        return cli_usage(cli, "token revoke takes one token id (see "
                              "'lockstep token list')");
    errno = 0;
    id = strtoll(args->argv[0], &end, 10);
    if (errno != 0 || *end != '\0' || id <= 0)
        return cli_usage(cli,
            "invalid token id '%s': expected a number "
            "from 'lockstep token list'",
            args->argv[0]);
    snprintf(path, sizeof(path), "/v1/tokens/%lld/revoke", id);
    return cli_call_print(cli, "POST", path, NULL, "token", args->argv[0],
        print_revoked);
}

static int
cmd_token(int argc, char **argv, struct cli *cli)
{
    struct token_opts o = { .role = "user", .ttl_s = -1 };
    struct cli_args args;
    char sub[8];
    int status;

    if ((status = check_subcommand(cli, argc, argv)) != CLI_CONTINUE)
        return status;
    /* The parser may rewrite argv[0] of what it is given. */
    snprintf(sub, sizeof(sub), "%s", argv[1]);
    status = cli_parse(cli, argc - 1, argv + 1, &o, &args);
    if (status != CLI_CONTINUE)
        return status;
    if (strcmp(sub, "revoke") == 0)
        return token_revoke(cli, &args);
    if (args.argc > 0)
        return cli_usage(cli, "unexpected argument '%s'", args.argv[0]);
    if (strcmp(sub, "list") == 0)
        return token_list(cli, &o);
    if (o.user == NULL || *o.user == '\0')
        return cli_usage(cli, "--user is required");
    return token_create(cli, &o);
}

const struct cli_cmd cli_cmd_token = {
    .name = "token",
    .summary = "create, list and revoke API tokens",
    .usage =
        "usage: lockstep token create --user USER [--role user|operator]\n"
        "                             [--ttl DURATION|never] [--json]\n"
        "       lockstep token list [--user USER] [--json]\n"
        "       lockstep token revoke ID\n"
        "\n"
        "  --user USER             create: whom the token identifies;\n"
        "                          list: only USER's (operators)\n"
        "  --role user|operator    what it may do (default user)\n"
        "  --ttl DURATION          how long it is valid (90m, 12h, 30d, 1w;\n"
        "                          default 30d, the scheduler's; 'never')\n"
        "  --json                  print the API reply unchanged\n"
        "\n"
        "create is an operator's; the token is printed once and the\n"
        "scheduler keeps only its hash. list shows your own tokens (an\n"
        "operator: everyone's), never a secret. revoke ID stops a token\n"
        "(your own, or any for an operator) from its next request on.\n",
    .opts = token_opts,
    .fn = cmd_token,
    .max_args = 1,
    .flags = CLI_CMD_OPERATOR,
};
