/*
 * cli_http.c - talking to the scheduler
 *
 * One connection per process (http_client.c, the CLI's own HTTP/1.1
 * client), reused so that `logs --follow` and `submit --wait` keep it
 * open. The scheduler is reached over
 * TCP (an http:// or https:// URL, with an optional bearer token) or over
 * its Unix socket (an absolute path; the kernel tells the scheduler who we
 * are, so no token is needed). Errors the API returns as
 * {"error": {"code", "message"}} are shown as "lockstep <cmd>: <message>".
 */
#include "cli/cli.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "cli/http_client.h"
#include "common/config.h"
#include "common/jsonx.h"
#include "common/xalloc.h"

/* A CLI waits on a person's behalf: give up on a dead connection quickly,
 * but let a long reply (a 1 MiB log chunk, 100,000 jobs) arrive. */
#define CLI_CONNECT_TIMEOUT_MS 5000L
#define CLI_TIMEOUT_MS 120000L

/* ---- set-up -------------------------------------------------------------- */

struct cli_add {
    struct cli *cli;
    struct err *err;
};

/* One server of the list: a URL (trailing '/' dropped) or a socket. */
static int
cli_server_check(const char *s, size_t n, char **out, struct err *err)
{
    if (n > 0 && s[0] == '/') {
        *out = xstrndup(s, n);
        return 0;
    }
    if ((n < 7 || strncmp(s, "http://", 7) != 0) &&
        (n < 8 || strncmp(s, "https://", 8) != 0))
        return err_set(err, -EINVAL,
            "invalid server '%.*s': expected an http:// or https:// URL or "
            "an absolute Unix socket path",
            (int)n, s);
    while (n > 0 && s[n - 1] == '/')
        n--;
    *out = xstrndup(s, n);
    return 0;
}

/* One item of the server list into cli->servers (config_each_item). */
static int
cli_add_server(const char *item, size_t n, void *arg)
{
    struct cli_add *a = arg;
    char *one = NULL;
    int rc;

    if ((rc = cli_server_check(item, n, &one, a->err)) < 0)
        return rc;
    a->cli->servers = xreallocarray(a->cli->servers, a->cli->nservers + 1,
        sizeof(*a->cli->servers));
    a->cli->servers[a->cli->nservers++] = one;
    return 0;
}

int
cli_init(struct cli *cli, const char *server, const char *token,
    struct err *err)
{
    struct cli_add a = { cli, err };
    int rc;

    memset(cli, 0, sizeof(*cli));
    cli->server = server;
    cli->token = token && *token ? token : NULL;
    /* Replicas: a list, split at commas (blanks around items ignored). */
    rc = config_each_item(server, cli_add_server, &a);
    if (rc == -ENOENT)
        return cli_server_check(server, strlen(server), &cli->leader_url, err);
    if (rc < 0)
        cli_release(cli);
    return rc;
}

void
cli_release(struct cli *cli)
{
    hc_conn_free(cli->conn);
    for (size_t i = 0; i < cli->nservers; i++)
        free(cli->servers[i]);
    free(cli->servers);
    free(cli->leader_url);
    free(cli->failure);
    cli->conn = NULL;
    cli->servers = NULL;
    cli->nservers = 0;
    cli->leader_url = NULL;
    cli->failure = NULL;
}

/* Where the next request goes: the leader a replica named, else the
 * server of the list in turn. */
static const char *
cli_target(const struct cli *cli)
{
    return cli->leader_url ? cli->leader_url : cli->servers[cli->cur];
}

char *
cli_escape(struct cli *cli, const char *s)
{
    (void)cli;
    return hc_escape(s);
}

void
cli_query_add(struct cli *cli, struct sbuf *path, const char *key,
    const char *value)
{
    char *e;

    if (value == NULL)
        return;
    e = cli_escape(cli, value);
    sbuf_addf(path, "%c%s=%s",
        path->len > 0 && strchr(path->buf, '?') ? '&' : '?', key, e);
    free(e);
}

char *
cli_path(struct cli *cli, const char *base, const char *name, const char *verb)
{
    char *e = cli_escape(cli, name);
    char *path = xasprintf("%s/%s%s%s", base, e, verb ? "/" : "",
        verb ? verb : "");

    free(e);
    return path;
}

/* ---- replies ------------------------------------------------------------- */

void
cli_resp_init(struct cli_resp *resp)
{
    memset(resp, 0, sizeof(*resp));
    sbuf_init(&resp->body);
}

static void
cli_resp_clear_headers(struct cli_resp *resp)
{
    for (size_t i = 0; i < resp->nheaders; i++) {
        free(resp->headers[i].name);
        free(resp->headers[i].value);
    }
    free(resp->headers);
    resp->headers = NULL;
    resp->nheaders = 0;
}

void
cli_resp_release(struct cli_resp *resp)
{
    cli_resp_clear_headers(resp);
    sbuf_release(&resp->body);
    cli_resp_init(resp);
}

const char *
cli_resp_header(const struct cli_resp *resp, const char *name)
{
    for (size_t i = 0; i < resp->nheaders; i++) {
        if (strcasecmp(resp->headers[i].name, name) == 0)
            return resp->headers[i].value;
    }
    return NULL;
}

static void
cli_body_cb(void *arg, const char *data, size_t len)
{
    struct cli_resp *resp = arg;

    sbuf_add(&resp->body, data, len);
}

/* An interim reply (100 Continue) ended: only the final reply's headers
 * stay. */
static void
cli_reset_cb(void *arg)
{
    cli_resp_clear_headers(arg);
}

static void
cli_header_cb(void *arg, const char *name, size_t nlen, const char *value,
    size_t vlen)
{
    struct cli_resp *resp = arg;

    while (vlen > 0 && (value[vlen - 1] == ' ' || value[vlen - 1] == '\t'))
        vlen--;
    resp->headers = xreallocarray(resp->headers, resp->nheaders + 1,
        sizeof(*resp->headers));
    resp->headers[resp->nheaders].name = xstrndup(name, nlen);
    resp->headers[resp->nheaders].value = xstrndup(value, vlen);
    resp->nheaders++;
}

/* ---- requests ------------------------------------------------------------ */

/* How to point the CLI at the scheduler, after an error that shows it
 * looked in the wrong place (cli->hint). */
#define CLI_HINT_SERVER                                                        \
    "point the CLI at the scheduler with LOCKSTEP_SERVER=URL|SOCKET or "       \
    "--server"
#define CLI_HINT_UNREACHABLE                                                   \
    CLI_HINT_SERVER "; for a local cluster, run '. DIR/env' (DIR as given "    \
                    "to deploy/local-cluster.sh up)"

/* Where the server came from, for "cannot reach scheduler at X (...)". */
static const char *
cli_server_from(const struct cli *cli)
{
    if (cli->server_from == NULL)
        return "the default; none was given";
    if (strcmp(cli->server_from, "--server") == 0)
        return "from --server";
    return "from LOCKSTEP_SERVER";
}

/* How to give the CLI the CA, after a certificate it could not verify. */
#define CLI_HINT_CA                                                            \
    "give the CLI the CA that signed the scheduler's certificate (the "        \
    "scheduler's tls_ca) with LOCKSTEP_CA=FILE or --ca FILE; for a local "     \
    "cluster, run '. DIR/env'"
#define CLI_HINT_TLS                                                           \
    "a scheduler with tls = off speaks plain HTTP: use its http:// URL, or "   \
    "a Unix socket"

/* A TLS failure (e is one) as a message in err; sets cli->hint. Returns
 * -EPROTO. */
static int
cli_tls_failed(struct cli *cli, const struct hc_error *e, struct err *err)
{
    if (e->fail == HC_TLS_CA) {
        cli->hint = NULL;
        return err_set(err, -EPROTO, "cannot use the CA file '%s' (%s): %s",
            cli->ca ? cli->ca : "(the system's)",
            cli->ca_from ? cli->ca_from : "LOCKSTEP_CA", e->msg);
    }
    if (e->fail == HC_TLS_VERIFY) {
        cli->hint = CLI_HINT_CA;
        return err_set(err, -EPROTO,
            "cannot verify the scheduler at %s: its TLS certificate was "
            "refused (%s)",
            cli->server, e->msg);
    }
    cli->hint = CLI_HINT_TLS;
    return err_set(err, -EPROTO, "TLS with the scheduler at %s failed: %s",
        cli->server, e->msg);
}

/* The error of a request that got no HTTP reply (e). A peer that
 * answered in something other than HTTP is not a lockstep scheduler;
 * for one that could not be reached, say where we looked and how to look
 * elsewhere. Returns the negative errno set in err. */
static int
cli_http_failed(struct cli *cli, const struct hc_error *e, struct err *err)
{
    const char *cause = e->msg;

    if (e->fail == HC_TLS_VERIFY || e->fail == HC_TLS || e->fail == HC_TLS_CA)
        return cli_tls_failed(cli, e, err);
    if (e->fail == HC_NOT_HTTP || e->fail == HC_BAD_URL) {
        cli->hint = CLI_HINT_SERVER;
        return err_set(err, -EPROTO,
            "the server at %s (%s) is not a lockstep scheduler: it does not "
            "answer HTTP (%s)",
            cli->server, cli_server_from(cli), cause);
    }
    if (e->fail != HC_CONNECT && e->fail != HC_RESOLVE && e->fail != HC_TIMEOUT)
        return err_set(err, -EIO, "cannot reach scheduler at %s: %s",
            cli->server, cause);
    cli->unreachable = true;
    /* A refused connection or a timeout is most likely a scheduler that
     * is down (one line: docs/operations.md "Scheduler outages"); no
     * socket file, a name that does not resolve or the default address
     * are more likely the wrong place, so the hint follows. */
    if (e->oserr != ECONNREFUSED && e->fail != HC_TIMEOUT)
        cli->hint = CLI_HINT_UNREACHABLE;
    /* Whole in cli->failure: a long address would cut err's copy short
     * of what matters most, that running jobs are not affected. */
    free(cli->failure);
    cli->failure = xasprintf("scheduler unreachable at %s (%s): %c%s; "
                             "running jobs are not affected",
        cli->server, cli_server_from(cli), tolower((unsigned char)cause[0]),
        cause[0] ? cause + 1 : "");
    return err_set(err, e->fail == HC_TIMEOUT ? -ETIMEDOUT : -ECONNREFUSED,
        "%s", cli->failure);
}

/* One request to the current target: the reply (status in resp->status)
 * and 0, or -1 with why in e. */
static int
cli_perform(struct cli *cli, const char *method, const char *path,
    const char *json, struct cli_resp *resp, struct hc_error *e)
{
    const char *target = cli_target(cli);
    const struct hc_sink sink = { .header = cli_header_cb,
        .reset = cli_reset_cb,
        .body = cli_body_cb,
        .arg = resp };
    struct hc_request req = { .target = target,
        .ca = target[0] == '/' ? NULL : cli->ca,
        .method = method,
        .path = path,
        .body = json,
        .body_len = json ? strlen(json) : 0,
        .connect_timeout_ms = CLI_CONNECT_TIMEOUT_MS,
        .timeout_ms = CLI_TIMEOUT_MS };
    struct sbuf hdrs;
    long status;

    cli_resp_release(resp);
    if (cli->conn == NULL)
        cli->conn = hc_conn_new();
    sbuf_init(&hdrs);
    sbuf_addstr(&hdrs, "Accept: application/json\r\n");
    if (cli->token)
        sbuf_addf(&hdrs, "Authorization: Bearer %s\r\n", cli->token);
    if (json)
        sbuf_addstr(&hdrs, "Content-Type: application/json\r\n");
    req.headers = hdrs.buf;
    status = hc_perform(cli->conn, &req, &sink, e);
    sbuf_release(&hdrs);
    if (status < 0)
        return -1;
    resp->status = status;
    return 0;
}

/* A replica that does not lead answered (docs/api.md "Replicas"): 421 or
 * 503 with the code not_leader. *leader: the leader's URL it named
 * (caller frees), or NULL while there is none. */
static bool
cli_not_leader(const struct cli_resp *resp, char **leader)
{
    cJSON *json = NULL;
    bool yes = false;

    *leader = NULL;
    if ((resp->status != 421 && resp->status != 503) ||
        jsonx_parse(resp->body.buf, resp->body.len, &json, NULL) < 0)
        return false;
    if (strcmp(
            cli_jstr(cJSON_GetObjectItemCaseSensitive(json, "error"), "code"),
            "not_leader") == 0) {
        const char *l = cli_jstr(json, "leader");

        yes = true;
        if (*l)
            *leader = xstrdup(l);
    }
    cJSON_Delete(json);
    return yes;
}

/* Go on with the next server of the list (after a refused connection
 * or a replica that does not lead), forgetting a leader learned. */
static void
cli_next_server(struct cli *cli)
{
    if (cli->leader_url && cli->nservers > 0) {
        free(cli->leader_url);
        cli->leader_url = NULL;
        return;
    }
    if (cli->nservers > 0)
        cli->cur = (cli->cur + 1) % cli->nservers;
}

/* A follower named the leader: use the server of the list that is it,
 * else (tried every one already) the URL itself. */
static void
cli_follow(struct cli *cli, char *leader, size_t tried)
{
    for (size_t i = 0; i < cli->nservers; i++) {
        if (strcmp(cli->servers[i], leader) == 0) {
            cli->cur = i;
            free(cli->leader_url);
            cli->leader_url = NULL;
            free(leader);
            return;
        }
    }
    if (tried + 1 < cli->nservers) {
        /* Maybe one of ours by another name (a socket): try those
         * first, they need no token. */
        free(leader);
        cli_next_server(cli);
        return;
    }
    free(cli->leader_url);
    cli->leader_url = leader;
}

/* How long a request waits for an election among replicas to end. */
#define CLI_ELECTION_WAIT_MS 15000
#define CLI_ELECTION_POLL_MS 200

int
cli_http(struct cli *cli, const char *method, const char *path,
    const cJSON *body, unsigned flags, struct cli_resp *resp, struct err *err)
{
    char *json = body ? jsonx_print(body) : NULL, *leader = NULL;
    size_t tried = 0, hops = 0;
    int64_t waited = 0;
    struct hc_error e;
    struct err lerr;
    int got, rc = 0;

    if (err == NULL)
        err = &lerr;
    for (;;) {
        got = cli_perform(cli, method, path, json, resp, &e);
        /* Nothing was sent over a connection that was never made: the
         * next replica may be the one that answers. */
        if (got < 0 && e.fail == HC_CONNECT && cli->nservers > 1 &&
            ++tried < cli->nservers + (cli->leader_url ? 1 : 0)) {
            cli_next_server(cli);
            continue;
        }
        if (got < 0 || !cli_not_leader(resp, &leader))
            break;
        /* A replica that does not lead processed nothing either. */
        if (leader && hops++ < 2 * cli->nservers + 2) {
            cli_follow(cli, leader, tried++);
            continue;
        }
        free(leader);
        if (waited >= CLI_ELECTION_WAIT_MS)
            break;
        cli_sleep_ms(CLI_ELECTION_POLL_MS);
        waited += CLI_ELECTION_POLL_MS;
        cli_next_server(cli);
        tried = hops = 0;
    }
    if (got < 0) {
        free(cli->failure);
        cli->failure = NULL;
        rc = cli_http_failed(cli, &e, err);
        if (!(flags & (CLI_HTTP_QUIET | CLI_HTTP_QUIET_DOWN)))
            cli_warn(cli, "%s", cli->failure ? cli->failure : err->msg);
        resp->status = 0;
    } else {
        cli->hint = NULL;
        cli->unreachable = false;
    }
    free(json);
    return rc;
}

/* The first line of a reply's body, at most 40 bytes; caller frees. */
static char *
cli_first_line(const struct cli_resp *resp)
{
    size_t n = strcspn(resp->body.buf, "\r\n");

    return xasprintf("%.*s%s", (int)(n > 40 ? 40 : n), resp->body.buf,
        n > 40 ? "..." : "");
}

/* What a reply that is not the API's says about the server: it is not
 * a lockstep scheduler (a web server, a proxy's page, another API). */
static char *
cli_not_lockstep(struct cli *cli, const struct cli_resp *resp, const char *what)
{
    char *line = cli_first_line(resp);
    char *msg = xasprintf("the server at %s is not a lockstep scheduler: it "
                          "answered HTTP %ld, %s%s%s%s",
        cli->server, resp->status, what, *line ? " (\"" : "", line,
        *line ? "\")" : "");

    cli->hint = CLI_HINT_SERVER;
    free(line);
    return msg;
}

/* The message of an error reply: the API's {"error": {"message"}}, or,
 * for anything else (a web server's page, a proxy's), that the server is
 * not a lockstep scheduler. */
static char *
cli_error_message(struct cli *cli, const struct cli_resp *resp)
{
    cJSON *json = NULL;
    char *msg = NULL;

    if (jsonx_parse(resp->body.buf, resp->body.len, &json, NULL) == 0) {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(json, "error");
        const char *m = cli_jstr(e, "message");
        const char *code = cli_jstr(e, "code");

        if (*m)
            msg = xstrdup(m);
        else if (*code)
            msg = xasprintf("HTTP %ld (%s)", resp->status, code);
        else
            msg = cli_not_lockstep(cli, resp, "JSON of another API");
    }
    cJSON_Delete(json);
    if (msg == NULL && resp->status >= 502 && resp->status <= 504)
        /* A gateway's page: the scheduler behind a proxy is restarting
         * or down, the address is right. */
        msg = xasprintf("HTTP %ld from %s, not the scheduler's answer (a "
                        "proxy in front of a scheduler that is down?)",
            resp->status, cli->server);
    if (msg == NULL)
        msg = cli_not_lockstep(cli, resp,
            resp->body.len ? "not JSON" : "no body");
    if (resp->status == 401 && cli->token == NULL) {
        char *hint = xasprintf("%s (over TCP the scheduler needs a token: "
                               "set LOCKSTEP_TOKEN or use --token)",
            msg);
        free(msg);
        msg = hint;
    }
    return msg;
}

int
cli_call(struct cli *cli, const char *method, const char *path,
    const cJSON *body, unsigned flags, struct cli_resp *resp, cJSON **out,
    struct err *err)
{
    int rc;

    if (out)
        *out = NULL;
    rc = cli_http(cli, method, path, body, flags, resp, err);
    if (rc < 0)
        return rc;
    if (resp->status < 200 || resp->status > 299) {
        char *msg = cli_error_message(cli, resp);

        err_set(err, -EIO, "%s", msg);
        if (!(flags & CLI_HTTP_QUIET))
            cli_warn(cli, "%s", msg);
        free(msg);
        return -EIO;
    }
    if (out) {
        struct err perr;

        if (jsonx_parse(resp->body.buf, resp->body.len, out, &perr) < 0) {
            char *msg = cli_not_lockstep(cli, resp, "not JSON");

            err_set(err, -EPROTO, "%s", msg);
            if (!(flags & CLI_HTTP_QUIET))
                cli_warn(cli, "%s", msg);
            free(msg);
            return -EPROTO;
        }
    }
    return 0;
}

int
cli_fail_about(struct cli *cli, const char *kind, const char *name, int rc,
    const struct err *err)
{
    if (rc == -EIO && strstr(err->msg, name) == NULL)
        return cli_fail(cli, "%s %s: %s", kind, name, err->msg);
    return cli_fail(cli, "%s", err->msg);
}

void
cli_print_body(const struct cli_resp *resp)
{
    fwrite(resp->body.buf, 1, resp->body.len, stdout);
    if (resp->body.len == 0 || resp->body.buf[resp->body.len - 1] != '\n')
        fputc('\n', stdout);
}

int
cli_get_list(struct cli *cli, const char *path, const char *none,
    void (*print)(const cJSON *list))
{
    struct cli_resp resp;
    cJSON *list = NULL;
    int status = CLI_EXIT_FAIL;

    cli_resp_init(&resp);
    if (cli_call(cli, "GET", path, NULL, 0, &resp, &list, NULL) < 0)
        goto out;
    if (!cJSON_IsArray(list)) {
        cli_warn(cli, "unexpected reply from the scheduler: not a list");
        goto out;
    }
    if (cli->json)
        cli_print_body(&resp);
    else if (cJSON_GetArraySize(list) == 0)
        fprintf(stderr, "%s\n", none);
    else
        print(list);
    status = CLI_EXIT_OK;
out:
    cJSON_Delete(list);
    cli_resp_release(&resp);
    return status;
}

int
cli_call_print(struct cli *cli, const char *method, const char *path,
    const cJSON *body, const char *kind, const char *name, cli_print_fn *print)
{
    struct cli_resp resp;
    cJSON *reply = NULL;
    struct err err;
    int rc, status = CLI_EXIT_FAIL;

    cli_resp_init(&resp);
    rc = cli_call(cli, method, path, body, kind ? CLI_HTTP_QUIET : 0, &resp,
        &reply, &err);
    if (rc < 0) {
        if (kind)
            cli_fail_about(cli, kind, name, rc, &err);
    } else {
        if (cli->json)
            cli_print_body(&resp);
        else
            print(reply, name);
        status = CLI_EXIT_OK;
    }
    cJSON_Delete(reply);
    cli_resp_release(&resp);
    return status;
}

/* cli_run_get's request path with the operand s, or NULL after a usage
 * error (printed). Caller frees. */
static char *
run_get_path(struct cli *cli, const char *s)
{
    const struct cli_cmd *cmd = cli->cmd;
    int64_t id;

    switch (cmd->operand) {
    case CLI_OPERAND_NODE:
        if (cli_check_node_name(cli, s) != 0)
            return NULL;
        return cli_path(cli, cmd->get, s, NULL);
    case CLI_OPERAND_JOB:
        if (cli_parse_job_id(cli, s, &id) != 0)
            return NULL;
        return xasprintf("%s/%lld", cmd->get, (long long)id);
    case CLI_OPERAND_NONE:
        break;
    }
    return xstrdup(cmd->get);
}

int
cli_run_get(int argc, char **argv, struct cli *cli)
{
    static const char *const kinds[] = {
        [CLI_OPERAND_NONE] = NULL,
        [CLI_OPERAND_NODE] = "node",
        [CLI_OPERAND_JOB] = "job",
    };
    const struct cli_cmd *cmd = cli->cmd;
    const char *operand;
    struct cli_args args;
    char *path;
    int status;

    if ((status = cli_parse(cli, argc, argv, NULL, &args)) != CLI_CONTINUE)
        return status;
    operand = cmd->operand == CLI_OPERAND_NONE ? NULL : args.argv[0];
    if ((path = run_get_path(cli, operand)) == NULL)
        return CLI_EXIT_USAGE;
    status = cli_call_print(cli, "GET", path, NULL, kinds[cmd->operand],
        operand, cmd->print);
    free(path);
    return status;
}

void
cli_sleep_ms(int64_t ms)
{
    struct timespec ts = { .tv_sec = ms / 1000,
        .tv_nsec = (long)(ms % 1000) * 1000000L };

    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}
