/*
 * fuzz_api_request.c - the scheduler's API, every route, with a real
 * database
 *
 * No seam: the scheduler is started in the harness as lockstepd starts
 * it (the context over an SQLite database in the harness's directory,
 * the scheduling pass, observation, the API on a Unix socket, the
 * periodic work), with two registered nodes and a job. Each input is one
 * request to one route, sent over a new connection: as an operator (the
 * socket's peer is root or the scheduler's own user) or, on the agent
 * routes, with node n1's agent credential; or the input's bytes as they
 * are. So every body and query the API parses goes through its handler:
 * job specs, cordon, drain and acknowledgement bodies, tokens, checkpoint
 * commits, directives, hold and cancel options, agent status reports,
 * logs, collectives, modex requests and replies, and every listing's
 * query. The world (database, model) starts afresh every
 * FUZZ_API_RESET inputs so that it does not grow without bound.
 *
 * Input: one byte picks the route (routes[] below; past the table: raw
 * bytes), one byte the path's {} segment (0: the job or node set up,
 * 1: another that does not exist, 2: the first line of the rest,
 * %-encoded), then the body (POST; a first line starting with '?' is its
 * query string) or the query string (GET).
 *
 * Checked beyond the sanitizers: the reply is well-formed HTTP; no 500
 * (a handler's bug) and no 503 (the database refused something: the
 * disk is fine here); an error reply is the API's error body with a
 * code and a message.
 */
#include "fuzz/fuzz.h"

#include <sys/socket.h>
#include <sys/un.h>

#include <http_parser.h>
#include <uv.h>

#include "common/cred.h"
#include "common/jsonx.h"
#include "common/sbuf.h"
#include "common/timeid.h"
#include "scheduler/api.h"
#include "scheduler/obs.h"
#include "scheduler/pass.h"
#include "scheduler/recovery.h"
#include "scheduler/schedd.h"
#include "scheduler/tick.h"

#define FUZZ_API_RESET 2000
#define FUZZ_API_ITER_MAX 100000

enum { ARG_NONE, ARG_JOB, ARG_NODE, ARG_TOKEN };

struct route {
    const char *method;
    const char *path; /* "{}": the segment */
    int arg;
    bool agent; /* send n1's agent credential */
};

static const struct route routes[] = {
    { "POST", "/v1/jobs", ARG_NONE, false },
    { "GET", "/v1/jobs", ARG_NONE, false },
    { "GET", "/v1/history", ARG_NONE, false },
    { "GET", "/v1/jobs/{}", ARG_JOB, false },
    { "POST", "/v1/jobs/{}/cancel", ARG_JOB, false },
    { "POST", "/v1/jobs/{}/hold", ARG_JOB, false },
    { "POST", "/v1/jobs/{}/release", ARG_JOB, false },
    { "POST", "/v1/jobs/{}/requeue", ARG_JOB, false },
    { "POST", "/v1/jobs/{}/directives", ARG_JOB, false },
    { "POST", "/v1/jobs/{}/checkpoints", ARG_JOB, false },
    { "POST", "/v1/jobs/{}/checkpoints", ARG_JOB, true },
    { "GET", "/v1/jobs/{}/logs", ARG_JOB, false },
    { "GET", "/v1/stats", ARG_NONE, false },
    { "GET", "/v1/nodes", ARG_NONE, false },
    { "GET", "/v1/nodes/{}", ARG_NODE, false },
    { "POST", "/v1/nodes/{}/cordon", ARG_NODE, false },
    { "POST", "/v1/nodes/{}/uncordon", ARG_NODE, false },
    { "POST", "/v1/nodes/{}/remove", ARG_NODE, false },
    { "POST", "/v1/nodes/{}/drain", ARG_NODE, false },
    { "POST", "/v1/nodes/{}/health/ack", ARG_NODE, false },
    { "GET", "/v1/events", ARG_NONE, false },
    { "GET", "/v1/whoami", ARG_NONE, false },
    { "POST", "/v1/tokens", ARG_NONE, false },
    { "GET", "/v1/tokens", ARG_NONE, false },
    { "POST", "/v1/tokens/{}/revoke", ARG_TOKEN, false },
    { "GET", "/v1/health", ARG_NONE, false },
    { "GET", "/metrics", ARG_NONE, false },
    { "POST", "/v1/agent/status", ARG_NONE, true },
    { "GET", "/v1/agent/work", ARG_NONE, true },
    { "POST", "/v1/agent/logs", ARG_NONE, true },
    { "POST", "/v1/agent/collective", ARG_NONE, true },
    { "POST", "/v1/agent/modex", ARG_NONE, true },
    { "GET", "/v1/agent/modex", ARG_NONE, true },
    { "POST", "/v1/agent/modex/reply", ARG_NONE, true },
};
#define NROUTES (sizeof(routes) / sizeof(routes[0]))

/* The world: a scheduler and its parts, as lockstepd_start makes them. */
static struct {
    uv_loop_t loop;
    char dir[512], sock[600], secret_path[600];
    char *secret;
    size_t secret_len;
    struct schedd *sd;
    struct recovery *recovery;
    struct pass *pass;
    struct obs *obs;
    struct api *api;
    struct tick *tick;
    unsigned inputs, worlds;
} w;

/* --- one request ---------------------------------------------------- */

struct reply {
    http_parser p;
    struct sbuf body;
    bool complete;
};

/* Pipelined replies (raw bytes): the last one's body is kept. */
static int
reply_begin_cb(http_parser *p)
{
    sbuf_reset(&((struct reply *)p->data)->body);
    return 0;
}

static int
reply_body_cb(http_parser *p, const char *at, size_t len)
{
    sbuf_add(&((struct reply *)p->data)->body, at, len);
    return 0;
}

static int
reply_complete_cb(http_parser *p)
{
    ((struct reply *)p->data)->complete = true;
    return 0;
}

static const http_parser_settings reply_settings = {
    .on_message_begin = reply_begin_cb,
    .on_body = reply_body_cb,
    .on_message_complete = reply_complete_cb,
};

/* Send req over a new connection; run the loop until the server closed
 * it; returns the reply's status (0: none came). */
static int
exchange(const char *req, size_t len, struct sbuf *body)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    struct reply r = { 0 };
    char buf[65536];
    size_t off = 0;
    ssize_t n;
    unsigned iter = 0;
    bool shut = false;
    int fd;

    http_parser_init(&r.p, HTTP_RESPONSE);
    r.p.data = &r;
    sbuf_init(&r.body);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    fuzz_assert(fd >= 0);
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", w.sock);
    fuzz_assert(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
    for (;;) {
        if (++iter > FUZZ_API_ITER_MAX)
            fuzz_fail("the scheduler took more than %d loop iterations\n",
                FUZZ_API_ITER_MAX);
        if (off < len) {
            n = send(fd, req + off, len - off, MSG_NOSIGNAL);
            if (n > 0)
                off += (size_t)n;
            else if (n < 0 && errno != EAGAIN && errno != EINTR)
                off = len; /* it closed: read what it said */
        }
        if (off == len && !shut) {
            (void)shutdown(fd, SHUT_WR);
            shut = true;
        }
        uv_run(&w.loop, UV_RUN_NOWAIT);
        n = read(fd, buf, sizeof(buf));
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (n < 0 && errno == ECONNRESET)
            break;
        fuzz_assert(n >= 0);
        if (http_parser_execute(&r.p, &reply_settings, buf, (size_t)n) !=
                (size_t)n ||
            HTTP_PARSER_ERRNO(&r.p) != HPE_OK)
            fuzz_fail("the scheduler wrote malformed HTTP: %s\n",
                http_errno_description(HTTP_PARSER_ERRNO(&r.p)));
        if (n == 0)
            break;
    }
    close(fd);
    *body = r.body;
    return r.complete ? (int)r.p.status_code : 0;
}

/* The Authorization header of node n1's agent for this request, as the
 * agent makes it (scheduler/auth.c checks it): the one place to follow
 * a change of the agents' credentials. */
static void
agent_credential(struct sbuf *s, const char *method, const char *target,
    const void *body, size_t blen)
{
    unsigned char key[CRED_KEY_LEN];
    char *line;

    cred_node_key(w.secret, w.secret_len, "n1", key);
    line = cred_agent_sign(key, "n1", method, target, body, blen,
        timeid_now_ms());
    if (line == NULL)
        abort(); /* no random source: nothing here can run */
    sbuf_addf(s, "%s\r\n", line);
    free(line);
}

/* A request with the agent's credential when asked, closing after. */
static char *
request(const char *method, const char *target, bool agent, const void *body,
    size_t blen, size_t *len)
{
    struct sbuf s;

    sbuf_init(&s);
    sbuf_addf(&s,
        "%s %s HTTP/1.1\r\nHost: lockstep\r\nConnection: close\r\n"
        "Content-Type: application/json\r\nContent-Length: %zu\r\n",
        method, target, blen);
    if (agent)
        agent_credential(&s, method, target, body, blen);
    sbuf_addstr(&s, "\r\n");
    sbuf_add(&s, body, blen);
    return sbuf_detach(&s, len);
}

/* A request of the world's set-up, which must succeed. */
static void
setup_request(const char *method, const char *target, bool agent,
    const char *body)
{
    struct sbuf reply;
    size_t len;
    char *req = request(method, target, agent, body, strlen(body), &len);
    int status = exchange(req, len, &reply);

    if (status < 200 || status > 299)
        fuzz_fail("set-up %s %s: %d %s\n", method, target, status, reply.buf);
    sbuf_release(&reply);
    free(req);
}

/* --- the world --------------------------------------------------------- */

static void
world_create(void)
{
    static const char report[] =
        "{\"version\":1,\"node\":\"%s\",\"register\":true,\"agent_id\":"
        "\"a-%s\",\"addr\":\"127.0.0.1\",\"cpus\":64,\"memory_mb\":100000,"
        "\"gpus\":[0,1,2,3],\"gen\":0,\"jobs\":[]}";
    struct schedd_opts o = {
        .socket_path = w.sock,
        .state_dir = w.dir,
        .secret = w.secret,
        .secret_len = w.secret_len,
        .operators = "",
        .heartbeat_ms = 1000,
        .node_timeout_ms = 10000,
        .max_body = 1048576,
        .master_port_base = 29500,
        .master_port_count = 1000,
        .lease_ms = 5000,
        .dump_timeout_ms = 5000,
        .rank_stats_window_ms = 30000,
        .straggler_ratio = 1.15,
        .straggler_windows = 3,
        .sched_policy = "fifo",
        .policy = { .crash_loop_threshold = 2,
            .backoff_ms = 500,
            .backoff_max_ms = 60000,
            .blame_threshold = 3,
            .blame_window_ms = 3600000,
            .blame_hw_signals = 1u << 7 },
        .alert_webhook_timeout_ms = 5000,
        .alert_queue_max = 1000,
        .alert_backoff_max_ms = 300000,
        .event_retention_days = 30,
        .quota = { .user = { 1000, 0, 200 }, .op = { 0, 0, 200 } },
        .http = { 10000, 30000, 30000, 60000, 0, 0, 256 },
    };
    struct err err = { 0 };
    char body[512], cmd[600];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir -p '%s'", w.dir, w.dir);
    fuzz_assert(system(cmd) == 0);
    health_config_default(&o.health);
    w.sd = schedd_create(&w.loop, &o, &err);
    if (w.sd == NULL)
        fuzz_fail("cannot create the scheduler: %s\n", err.msg);
    w.recovery = recovery_create(w.sd);
    w.pass = pass_create(w.sd, o.sched_policy, &err);
    fuzz_assert(w.pass != NULL);
    fuzz_assert(schedd_start(w.sd, &err) == 0);
    w.obs = obs_create(w.sd, &err);
    fuzz_assert(w.obs != NULL);
    w.api = api_create(w.sd, &o, &err);
    if (w.api == NULL)
        fuzz_fail("cannot start the API: %s\n", err.msg);
    w.tick = tick_create(w.sd, &err);
    fuzz_assert(w.tick != NULL);
    pass_trigger(w.pass);
    w.worlds++;

    snprintf(body, sizeof(body), report, "n1", "n1");
    setup_request("POST", "/v1/agent/status", true, body);
    setup_request("POST", "/v1/jobs", false,
        "{\"version\":1,\"name\":\"fuzz\",\"argv\":[\"sleep\",\"1\"],"
        "\"nodes\":1,\"checkpoint_dir\":\"/ck\"}");
    setup_request("POST", "/v1/tokens", false,
        "{\"version\":1,\"user\":\"alice\"}");
}

static void
world_destroy(void)
{
    tick_destroy(w.tick);
    obs_destroy(w.obs);
    pass_destroy(w.pass);
    schedd_stop(w.sd, NULL);
    api_close(w.api, NULL, NULL);
    uv_run(&w.loop, UV_RUN_DEFAULT);
    recovery_destroy(w.recovery);
    schedd_destroy(w.sd);
    w.sd = NULL;
    w.recovery = NULL;
    w.pass = NULL;
    w.obs = NULL;
    w.api = NULL;
    w.tick = NULL;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    static const char secret[] = "fuzz-cluster-secret-0123456789";

    (void)argc;
    (void)argv;
    fuzz_quiet();
    fuzz_assert(uv_loop_init(&w.loop) == 0);
    snprintf(w.dir, sizeof(w.dir), "%s/state", fuzz_dir());
    snprintf(w.sock, sizeof(w.sock), "%s/api.sock", fuzz_dir());
    w.secret = xstrdup(secret);
    w.secret_len = strlen(secret);
    world_create();
    return 0;
}

/* --- an input ---------------------------------------------------------- */

/* Append s[0..n) to out, %-encoding what a request target cannot hold. */
static void
add_encoded(struct sbuf *out, const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] > 0x20 && s[i] < 0x7f && s[i] != '%' && s[i] != '?' &&
            s[i] != '#' && s[i] != '/')
            sbuf_addch(out, (char)s[i]);
        else
            sbuf_addf(out, "%%%02X", s[i]);
    }
}

/* The request target of route r, its segment chosen by sel; the body may
 * give up its first line to the segment. */
static char *
target(const struct route *r, unsigned sel, const uint8_t **data, size_t *size)
{
    static const char *const mine[] = { "", "1", "n1", "1" };
    static const char *const other[] = { "", "99999", "n-none", "424242" };
    const char *brace = strstr(r->path, "{}");
    const uint8_t *nl;
    struct sbuf t;
    size_t n;

    sbuf_init(&t);
    if (brace == NULL) {
        sbuf_addstr(&t, r->path);
    } else {
        sbuf_add(&t, r->path, (size_t)(brace - r->path));
        if (sel % 3 == 0) {
            sbuf_addstr(&t, mine[r->arg]);
        } else if (sel % 3 == 1) {
            sbuf_addstr(&t, other[r->arg]);
        } else {
            nl = memchr(*data, '\n', *size);
            n = nl ? (size_t)(nl - *data) : *size;
            add_encoded(&t, *data, n);
            *data += nl ? n + 1 : n;
            *size -= nl ? n + 1 : n;
        }
        sbuf_addstr(&t, brace + 2);
    }
    /* A GET's query is the rest; a POST's the first line if it starts
     * with '?'. As sent: its bytes %-encoded where a request line could
     * not hold them, '&' and '=' kept. */
    if (strcmp(r->method, "GET") == 0)
        n = *size;
    else if (*size > 0 && (*data)[0] == '?')
        n = (nl = memchr(*data, '\n', *size)) ? (size_t)(nl - *data) : *size;
    else
        n = 0;
    if (n > 0) {
        sbuf_addch(&t, '?');
        for (size_t i = (*data)[0] == '?'; i < n; i++) {
            uint8_t c = (*data)[i];

            if (c > 0x20 && c < 0x7f && c != '#')
                sbuf_addch(&t, (char)c);
            else
                sbuf_addf(&t, "%%%02X", c);
        }
        n = n < *size ? n + 1 : n;
        *data += n;
        *size -= n;
    }
    return sbuf_detach(&t, NULL);
}

/* An error reply is the API's: {"error": {"code", "message"}}. */
static void
check_error_body(int status, const struct sbuf *body)
{
    const cJSON *e, *code, *msg;
    cJSON *json = NULL;

    if (jsonx_parse(body->buf, body->len, &json, NULL) < 0)
        fuzz_fail("a %d without a JSON body: %s\n", status, body->buf);
    e = cJSON_GetObjectItemCaseSensitive(json, "error");
    code = cJSON_GetObjectItemCaseSensitive(e, "code");
    msg = cJSON_GetObjectItemCaseSensitive(e, "message");
    if (!cJSON_IsString(code) || !cJSON_IsString(msg) ||
        code->valuestring[0] == '\0' || msg->valuestring[0] == '\0')
        fuzz_fail("a %d without an error code and message: %s\n", status,
            body->buf);
    cJSON_Delete(json);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned ri = fuzz_take_byte(&data, &size);
    unsigned sel = fuzz_take_byte(&data, &size);
    const struct route *r = ri < NROUTES ? &routes[ri] : NULL;
    struct sbuf body;
    char *req, *t;
    size_t len;
    int status;

    if (++w.inputs % FUZZ_API_RESET == 0) {
        world_destroy();
        world_create();
    }
    if (r == NULL) {
        /* Raw bytes, as an operator's connection sends them. */
        status = exchange((const char *)data, size, &body);
    } else {
        t = target(r, sel, &data, &size);
        req = request(r->method, t, r->agent, data, size, &len);
        status = exchange(req, len, &body);
        free(req);
        free(t);
    }
    if (status == 500 || status == 503)
        fuzz_fail("%s %s: %d %s\n", r ? r->method : "raw",
            r ? r->path : "request", status, body.buf);
    if (status >= 400)
        check_error_body(status, &body);
    sbuf_release(&body);
    return 0;
}
