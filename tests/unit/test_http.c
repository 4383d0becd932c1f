/*
 * test_http.c - the scheduler's HTTP server on a real loop
 *
 * The server runs on the main thread's uv loop, listening on 127.0.0.1
 * port 0 and on a Unix socket in a temporary directory. A client thread
 * talks to it with blocking sockets and parses the replies with
 * http_parser (response mode), then asks the loop to close the server;
 * the test ends by requiring uv_loop_close() == 0.
 *
 * Everything the handler and the client thread share is atomic; TAP lines
 * come from the client thread only while the loop runs.
 */
#include "scheduler/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <http_parser.h>

#include "common/log.h"
#include "common/xalloc.h"
#include "tests/tap.h"

#define MAX_BODY 4096
#define IDLE_MS 1000
#define HEADER_MS 2500
#define BODY_MS 2500
#define WRITE_MS 2000

static uv_loop_t loop;
static struct http_server *srv;
static uv_async_t stop_async;
static int tcp_port;
static char tmpdir[] = "/tmp/lockstep-test-http-XXXXXX";
static char sock_path[100];

static atomic_int flush_calls;
static atomic_int fail_flush; /* flush_fn returns -EIO while set */
static atomic_int cancel_calls;
static atomic_int holds; /* /hold requests seen */
static atomic_int defers_done;
static int done_calls;         /* loop thread only */
static atomic_int hold_flush;  /* flush_fn holds its responses while set */
static atomic_int release_rc;  /* ... and releases them with this */
static uint64_t hold_ticket;   /* loop thread only */
static uv_timer_t releaser;    /* releases what is held, 300 ms later */
static atomic_int hold_manual; /* flush_fn holds; only release_async frees */
static atomic_int tickets;     /* the last ticket held (hold_manual) */
static atomic_int release_to;  /* release_async: release up to this */
static uv_async_t release_async;

/* --- the server side (loop thread) --------------------------------------- */

struct defer_ctx {
    uv_timer_t timer;
    struct http_deferred *d;
};

static void
defer_close_cb(uv_handle_t *handle)
{
    free(container_of((uv_timer_t *)handle, struct defer_ctx, timer));
}

static void
defer_timer_cb(uv_timer_t *timer)
{
    struct defer_ctx *ctx = container_of(timer, struct defer_ctx, timer);
    struct http_resp *resp = http_deferred_resp(ctx->d);
    cJSON *j = cJSON_CreateObject();

    cJSON_AddBoolToObject(j, "deferred", 1);
    http_resp_json(resp, 200, j);
    http_deferred_finish(ctx->d);
    atomic_fetch_add(&defers_done, 1);
    uv_close((uv_handle_t *)&ctx->timer, defer_close_cb);
}

static void
defer_cancel_cb(struct http_deferred *d, void *arg)
{
    struct defer_ctx *ctx = arg;

    (void)d;
    atomic_fetch_add(&cancel_calls, 1);
    if (ctx != NULL)
        uv_close((uv_handle_t *)&ctx->timer, defer_close_cb);
}

/* One timer that stays open: finishing from it leaves no closing handle
 * behind that would keep the loop from blocking in poll by accident. */
static uv_timer_t finisher;
static struct http_deferred *finisher_d;

static void
finisher_cb(uv_timer_t *timer)
{
    cJSON *j = cJSON_CreateObject();

    (void)timer;
    cJSON_AddBoolToObject(j, "deferred", 1);
    http_resp_json(http_deferred_resp(finisher_d), 200, j);
    http_deferred_finish(finisher_d);
    finisher_d = NULL;
}

static void
finisher_cancel_cb(struct http_deferred *d, void *arg)
{
    (void)d;
    (void)arg;
    uv_timer_stop(&finisher);
    finisher_d = NULL;
}

static void
releaser_cb(uv_timer_t *timer)
{
    (void)timer;
    http_server_release(srv, hold_ticket, atomic_load(&release_rc),
        "not confirmed durable");
}

static int
test_flush(void *arg)
{
    (void)arg;
    atomic_fetch_add(&flush_calls, 1);
    if (atomic_load(&hold_flush)) {
        /* A commit that is final only later (a replicated scheduler's
         * quorum): the releaser settles everything held so far. */
        http_server_hold(srv, ++hold_ticket);
        uv_timer_start(&releaser, releaser_cb, 300, 0);
        return 0;
    }
    if (atomic_load(&hold_manual)) {
        /* Final when the test says so (release_async). */
        http_server_hold(srv, (uint64_t)atomic_fetch_add(&tickets, 1) + 1);
        return 0;
    }
    return atomic_load(&fail_flush) ? -EIO : 0;
}

static void
release_async_cb(uv_async_t *async)
{
    (void)async;
    if (srv)
        http_server_release(srv, (uint64_t)atomic_load(&release_to), 0, NULL);
}

static void
test_handler(struct http_req *req, struct http_resp *resp, void *arg)
{
    char buf[256];
    cJSON *j;

    (void)arg;
    if (strcmp(req->path, "/echo") == 0) {
        j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "method", req->method);
        cJSON_AddStringToObject(j, "path", req->path);
        cJSON_AddStringToObject(j, "query", req->query);
        cJSON_AddStringToObject(j, "body", req->body);
        cJSON_AddNumberToObject(j, "body_len", (double)req->body_len);
        if (req->authorization)
            cJSON_AddStringToObject(j, "auth", req->authorization);
        if (req->content_type)
            cJSON_AddStringToObject(j, "ctype", req->content_type);
        if (http_query_get(req, "q", buf, sizeof(buf)))
            cJSON_AddStringToObject(j, "q", buf);
        http_resp_json(resp, 200, j);
        http_resp_header(resp, "X-Test", "echo %d", 1);
        resp->durable = strcmp(req->method, "POST") == 0;
    } else if (strcmp(req->path, "/durable") == 0) {
        j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "kind", "durable");
        http_resp_json(resp, 201, j);
        resp->durable = true;
    } else if (strcmp(req->path, "/plain") == 0) {
        j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "kind", "plain");
        http_resp_json(resp, 200, j);
    } else if (strcmp(req->path, "/whoami") == 0) {
        j = cJSON_CreateObject();
        cJSON_AddBoolToObject(j, "is_unix", req->is_unix);
        cJSON_AddNumberToObject(j, "uid", req->peer_uid);
        cJSON_AddNumberToObject(j, "gid", req->peer_gid);
        cJSON_AddNumberToObject(j, "pid", req->peer_pid);
        http_resp_json(resp, 200, j);
    } else if (strcmp(req->path, "/defer") == 0) {
        struct defer_ctx *ctx = xcalloc(1, sizeof(*ctx));
        long ms = 50;

        if (http_query_get(req, "ms", buf, sizeof(buf)))
            ms = strtol(buf, NULL, 10);
        uv_timer_init(&loop, &ctx->timer);
        ctx->d = http_resp_defer(resp, defer_cancel_cb, ctx);
        uv_timer_start(&ctx->timer, defer_timer_cb, (uint64_t)ms, 0);
    } else if (strcmp(req->path, "/defer-shared") == 0 && finisher_d == NULL) {
        finisher_d = http_resp_defer(resp, finisher_cancel_cb, NULL);
        uv_timer_start(&finisher, finisher_cb, 20, 0);
    } else if (strcmp(req->path, "/hold") == 0) {
        http_resp_defer(resp, defer_cancel_cb, NULL);
        atomic_fetch_add(&holds, 1);
    } else if (strcmp(req->path, "/big") == 0) {
        char *chunk = xmalloc(1 << 20);

        memset(chunk, 'x', 1 << 20);
        resp->content_type = "text/plain";
        for (int i = 0; i < 8; i++)
            sbuf_add(&resp->body, chunk, 1 << 20);
        free(chunk);
    } else if (strcmp(req->path, "/nconns") == 0) {
        j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "n", (double)http_server_nconns(srv));
        http_resp_json(resp, 200, j);
    } else {
        http_resp_error(resp, 404, "not_found", "no route for '%s'", req->path);
    }
}

static void
server_done(void *arg)
{
    int *n = arg;

    (*n)++;
}

static void
stop_async_cb(uv_async_t *async)
{
    http_server_close(srv, server_done, &done_calls);
    srv = NULL;
    uv_close((uv_handle_t *)async, NULL);
    uv_close((uv_handle_t *)&finisher, NULL);
    uv_close((uv_handle_t *)&releaser, NULL);
    uv_close((uv_handle_t *)&release_async, NULL);
}

/* --- the client side (client thread) ------------------------------------- */

struct cresp {
    int status;
    bool close;
    char ctype[64];
    char xtest[64];
    struct sbuf body;
};

struct client {
    int fd;
    http_parser p;
    struct cresp r[64];
    int n;
    bool eof;
    char hname[64];
};

static double
now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int
cr_message_begin(http_parser *p)
{
    struct client *c = p->data;
    struct cresp *r = &c->r[c->n];

    memset(r, 0, sizeof(*r));
    sbuf_init(&r->body);
    return 0;
}

static int
cr_header_field(http_parser *p, const char *at, size_t len)
{
    struct client *c = p->data;

    snprintf(c->hname, sizeof(c->hname), "%.*s", (int)len, at);
    return 0;
}

static int
cr_header_value(http_parser *p, const char *at, size_t len)
{
    struct client *c = p->data;
    struct cresp *r = &c->r[c->n];

    if (strcasecmp(c->hname, "connection") == 0)
        r->close = len == 5 && strncasecmp(at, "close", 5) == 0;
    else if (strcasecmp(c->hname, "content-type") == 0)
        snprintf(r->ctype, sizeof(r->ctype), "%.*s", (int)len, at);
    else if (strcasecmp(c->hname, "x-test") == 0)
        snprintf(r->xtest, sizeof(r->xtest), "%.*s", (int)len, at);
    return 0;
}

static int
cr_body(http_parser *p, const char *at, size_t len)
{
    struct client *c = p->data;

    sbuf_add(&c->r[c->n].body, at, len);
    return 0;
}

static int
cr_message_complete(http_parser *p)
{
    struct client *c = p->data;

    c->r[c->n].status = p->status_code;
    if (c->n < (int)ARRAY_SIZE(c->r) - 1)
        c->n++;
    return 0;
}

static const http_parser_settings cr_settings = {
    .on_message_begin = cr_message_begin,
    .on_header_field = cr_header_field,
    .on_header_value = cr_header_value,
    .on_body = cr_body,
    .on_message_complete = cr_message_complete,
};

static void
client_init(struct client *c, int fd)
{
    struct timeval tv = { .tv_sec = 5 };

    memset(c, 0, sizeof(*c));
    c->fd = fd;
    http_parser_init(&c->p, HTTP_RESPONSE);
    c->p.data = c;
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

static void
client_reset(struct client *c)
{
    for (int i = 0; i < c->n; i++)
        sbuf_release(&c->r[i].body);
    c->n = 0;
}

static void
client_close(struct client *c)
{
    client_reset(c);
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}

/* A new socket of domain connected to sa, or -1 (with a diagnostic
 * naming what). */
static int
connect_to(int domain, const struct sockaddr *sa, socklen_t len,
    const char *what)
{
    int fd = socket(domain, SOCK_STREAM, 0);

    if (fd < 0 || connect(fd, sa, len) < 0) {
        diag("connect %s: %s", what, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

static int
connect_tcp(void)
{
    struct sockaddr_in sa = { .sin_family = AF_INET };

    sa.sin_port = htons((uint16_t)tcp_port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return connect_to(AF_INET, (struct sockaddr *)&sa, sizeof(sa), "tcp");
}

static int
connect_unix(void)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };

    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
    return connect_to(AF_UNIX, (struct sockaddr *)&sa, sizeof(sa), "unix");
}

static bool
client_open(struct client *c, bool is_unix)
{
    client_init(c, is_unix ? connect_unix() : connect_tcp());
    return c->fd >= 0;
}

static bool
client_send(struct client *c, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = send(c->fd, s, n, MSG_NOSIGNAL);

        if (w < 0) {
            if (errno == EINTR)
                continue;
            diag("send: %s", strerror(errno));
            return false;
        }
        s += w;
        n -= (size_t)w;
    }
    return true;
}

static bool
client_sends(struct client *c, const char *s)
{
    return client_send(c, s, strlen(s));
}

/* Read until `want` responses in total are parsed, EOF or timeout.
 * Returns the number parsed. */
static int
client_read(struct client *c, int want)
{
    char buf[65536];
    ssize_t n;
    size_t used;

    while (c->n < want && !c->eof) {
        n = recv(c->fd, buf, sizeof(buf), 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno != ECONNRESET) {
            diag("recv: %s", strerror(errno));
            break;
        }
        if (n <= 0) {
            c->eof = true;
            http_parser_execute(&c->p, &cr_settings, NULL, 0);
            break;
        }
        used = http_parser_execute(&c->p, &cr_settings, buf, (size_t)n);
        if (used != (size_t)n) {
            diag("bad response: %s",
                http_errno_description(HTTP_PARSER_ERRNO(&c->p)));
            break;
        }
    }
    return c->n;
}

/* True when the server closes the connection (within the timeout). */
static bool
client_eof(struct client *c)
{
    char buf[4096];
    ssize_t n;

    if (c->eof)
        return true;
    for (;;) {
        n = recv(c->fd, buf, sizeof(buf), 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0 || (n < 0 && errno == ECONNRESET))
            return c->eof = true;
        if (n < 0)
            return false;
        http_parser_execute(&c->p, &cr_settings, buf, (size_t)n);
    }
}

static cJSON *
body_json(const struct cresp *r)
{
    return cJSON_ParseWithLength(r->body.buf, r->body.len);
}

static const char *
json_str(const cJSON *j, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double
json_num(const cJSON *j, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);

    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* The field key ("code", "message") of a reply's error object, in buf;
 * "(none)" without one. */
static const char *
error_field(const struct cresp *r, const char *key, char *buf, size_t len)
{
    cJSON *j = body_json(r);
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
    const char *v = json_str(e, key);

    snprintf(buf, len, "%s", v ? v : "(none)");
    cJSON_Delete(j);
    return buf;
}

/* is_str on the string field key of a reply's body. */
static void
is_body_str(const struct cresp *r, const char *key, const char *want,
    const char *name)
{
    cJSON *j = body_json(r);

    is_str(json_str(j, key), want, "%s", name);
    cJSON_Delete(j);
}

/* Send the request req on c, read its one reply and check its status;
 * the check is named name. */
static void
ask(struct client *c, const char *req, int status, const char *name)
{
    client_sends(c, req);
    client_read(c, 1);
    is_int(c->r[0].status, status, "%s", name);
}

/* Open c over TCP, as the check "tcp connect". */
static bool
tcp_open(struct client *c)
{
    return ok(client_open(c, false), "tcp connect");
}

/* The reply on c is an error with this code that closes the connection:
 * three checks named "<what>: ...". */
static void
closing_error(struct client *c, const char *what, const char *code)
{
    char buf[64];

    is_str(error_field(&c->r[0], "code", buf, sizeof(buf)), code, "%s: code %s",
        what, code);
    ok(c->r[0].close, "%s: Connection: close", what);
    ok(client_eof(c), "%s: server closes", what);
}

/* Whether the field key of a reply's body is true. */
static bool
body_true(const struct cresp *r, const char *key)
{
    cJSON *j = body_json(r);
    bool v = cJSON_IsTrue(cJSON_GetObjectItem(j, key));

    cJSON_Delete(j);
    return v;
}

static bool
wait_for(atomic_int *v, int want, int ms)
{
    double end = now_ms() + ms;

    while (atomic_load(v) < want && now_ms() < end)
        usleep(2000);
    return atomic_load(v) >= want;
}

/* Ask /nconns until it reports want (closes are asynchronous). */
static int
wait_nconns(int want)
{
    struct client c;
    double end = now_ms() + 3000;
    int n = -1;

    if (!client_open(&c, false))
        return -1;
    while (now_ms() < end) {
        cJSON *j;

        client_reset(&c);
        if (!client_sends(&c, "GET /nconns HTTP/1.1\r\nHost: x\r\n\r\n") ||
            client_read(&c, 1) != 1)
            break;
        j = body_json(&c.r[0]);
        n = (int)json_num(j, "n");
        cJSON_Delete(j);
        if (n == want)
            break;
        usleep(10000);
    }
    client_close(&c);
    return n;
}

static void
test_roundtrip_keepalive(void)
{
    static const char post_body[] = "{\"version\":1,\"name\":\"x y\"}";
    struct client c;
    char req[512];
    cJSON *j;

    if (!tcp_open(&c))
        return;
    client_sends(&c, "GET /echo?q=a%20b+c&x=1 HTTP/1.1\r\nHost: x\r\n\r\n");
    is_int(client_read(&c, 1), 1, "GET: one response");
    is_int(c.r[0].status, 200, "GET: status 200");
    is_str(c.r[0].ctype, "application/json", "GET: content type");
    is_str(c.r[0].xtest, "echo 1", "GET: extra header");
    ok(!c.r[0].close, "GET: connection kept alive");
    j = body_json(&c.r[0]);
    is_str(json_str(j, "method"), "GET", "GET: method");
    is_str(json_str(j, "path"), "/echo", "GET: path without query");
    is_str(json_str(j, "query"), "q=a%20b+c&x=1", "GET: raw query");
    is_str(json_str(j, "q"), "a b c", "GET: query value decoded");
    is_str(json_str(j, "body"), "", "GET: empty body");
    cJSON_Delete(j);

    snprintf(req, sizeof(req),
        "POST /ech%%6f HTTP/1.1\r\nHost: x\r\n"
        "Content-Type: application/json\r\n"
        "Authorization: Bearer lst_abc \r\n"
        "Content-Length: %zu\r\n\r\n%s",
        strlen(post_body), post_body);
    client_sends(&c, req);
    is_int(client_read(&c, 2), 2, "POST on the same connection");
    is_int(c.r[1].status, 200, "POST: status 200");
    j = body_json(&c.r[1]);
    is_str(json_str(j, "method"), "POST", "POST: method");
    is_str(json_str(j, "path"), "/echo", "POST: %%-decoded path");
    is_str(json_str(j, "body"), post_body, "POST: body");
    is_int((int)json_num(j, "body_len"), (int)strlen(post_body),
        "POST: body_len");
    is_str(json_str(j, "auth"), "Bearer lst_abc", "POST: authorization");
    is_str(json_str(j, "ctype"), "application/json", "POST: content type");
    cJSON_Delete(j);

    client_reset(&c);
    ask(&c, "GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n", 404,
        "third request on the connection: 404");
    client_close(&c);
}

static void
test_pipelining(void)
{
    struct client c;
    cJSON *j0, *j1, *j2;
    int before;

    if (!tcp_open(&c))
        return;
    before = atomic_load(&flush_calls);
    client_sends(&c,
        "GET /echo?q=one HTTP/1.1\r\nHost: x\r\n\r\n"
        "POST /durable HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
        "GET /echo?q=three HTTP/1.1\r\nHost: x\r\n\r\n");
    is_int(client_read(&c, 3), 3, "pipelining: three responses");
    j0 = body_json(&c.r[0]);
    j1 = body_json(&c.r[1]);
    j2 = body_json(&c.r[2]);
    is_str(json_str(j0, "q"), "one", "pipelining: first in order");
    is_int(c.r[1].status, 201, "pipelining: second is the durable 201");
    is_str(json_str(j1, "kind"), "durable", "pipelining: second in order");
    is_str(json_str(j2, "q"), "three", "pipelining: third in order");
    is_int(atomic_load(&flush_calls) - before, 1,
        "pipelining: one flush (group commit) for the three");
    cJSON_Delete(j0);
    cJSON_Delete(j1);
    cJSON_Delete(j2);

    /* A chunked request body is decoded by the parser. */
    client_reset(&c);
    client_sends(&c,
        "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
        "\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n");
    client_read(&c, 1);
    is_body_str(&c.r[0], "body", "hello world", "chunked body decoded");

    /* Expect: 100-continue gets the interim response, then the answer. */
    client_reset(&c);
    client_sends(&c, "POST /echo HTTP/1.1\r\nHost: x\r\n"
                     "Expect: 100-continue\r\nContent-Length: 3\r\n\r\n");
    is_int(client_read(&c, 1), 1, "expect: interim response");
    is_int(c.r[0].status, 100, "expect: 100 Continue");
    client_sends(&c, "abc");
    is_int(client_read(&c, 2), 2, "expect: final response");
    is_body_str(&c.r[1], "body", "abc", "expect: body after 100");
    client_close(&c);
}

static void
test_backpressure(void)
{
    struct client c;
    struct sbuf req;
    int i, n, in_order;
    cJSON *j;

    if (!tcp_open(&c))
        return;
    /* More pipelined requests than the server queues per connection: it
     * pauses parsing and resumes as responses leave. */
    sbuf_init(&req);
    for (i = 0; i < 40; i++)
        sbuf_addf(&req, "GET /echo?q=%d HTTP/1.1\r\nHost: x\r\n\r\n", i);
    client_send(&c, req.buf, req.len);
    n = client_read(&c, 40);
    is_int(n, 40, "40 pipelined requests: 40 responses");
    for (i = 0, in_order = 0; i < n; i++) {
        char want[16];

        snprintf(want, sizeof(want), "%d", i);
        j = body_json(&c.r[i]);
        in_order += json_str(j, "q") && strcmp(json_str(j, "q"), want) == 0;
        cJSON_Delete(j);
    }
    is_int(in_order, 40, "40 pipelined requests: all in order");

    /* The same behind a deferred response. */
    client_reset(&c);
    sbuf_reset(&req);
    sbuf_addstr(&req, "GET /defer?ms=100 HTTP/1.1\r\nHost: x\r\n\r\n");
    for (i = 0; i < 40; i++)
        sbuf_addf(&req, "GET /echo?q=%d HTTP/1.1\r\nHost: x\r\n\r\n", i);
    client_send(&c, req.buf, req.len);
    n = client_read(&c, 41);
    is_int(n, 41, "behind a deferred: 41 responses");
    ok(body_true(&c.r[0], "deferred"),
        "behind a deferred: the deferred one first");
    is_body_str(&c.r[40], "q", "39", "behind a deferred: the last one last");

    /* Requests that arrive while megabytes of response wait for a client
     * that does not read (the write queue limit pauses parsing). */
    client_reset(&c);
    client_sends(&c, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n");
    usleep(100000);
    client_sends(&c, "GET /echo?q=a HTTP/1.1\r\nHost: x\r\n\r\n"
                     "GET /echo?q=b HTTP/1.1\r\nHost: x\r\n\r\n");
    usleep(100000);
    is_int(client_read(&c, 3), 3, "an 8 MiB response and two more");
    is_int((long)c.r[0].body.len, 8L << 20, "big body complete");
    is_body_str(&c.r[2], "q", "b", "then the small ones");

    sbuf_release(&req);
    client_close(&c);

    /* "Upgrade:" is ignored; the connection goes on as HTTP/1.1. */
    if (!tcp_open(&c))
        return;
    client_sends(&c, "GET /echo?q=up HTTP/1.1\r\nHost: x\r\n"
                     "Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
                     "HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n"
                     "GET /echo?q=next HTTP/1.1\r\nHost: x\r\n\r\n");
    is_int(client_read(&c, 2), 2, "upgrade ignored: both answered");
    is_body_str(&c.r[1], "q", "next", "upgrade ignored: second request");
    client_close(&c);

    /* A control character in the decoded path. */
    if (!tcp_open(&c))
        return;
    ask(&c, "GET /a%0Ab HTTP/1.1\r\nHost: x\r\n\r\n", 400,
        "%0A in the path: 400");
    client_close(&c);
}

static void
test_limits(void)
{
    struct client c;
    char *big;
    size_t n;

    /* Announced oversized body: 413 at once, then close. */
    if (!tcp_open(&c))
        return;
    n = 200000;
    big = xmalloc(n + 256);
    n = (size_t)snprintf(big, 256,
        "POST /echo HTTP/1.1\r\nHost: x\r\n"
        "Content-Length: %d\r\n\r\n",
        200000);
    memset(big + n, 'a', 200000);
    client_send(&c, big, n + 200000);
    is_int(client_read(&c, 1), 1, "413: a response");
    is_int(c.r[0].status, 413, "413: status");
    closing_error(&c, "413", "too_large");
    client_close(&c);

    /* A chunked body that grows past the limit. */
    if (!tcp_open(&c))
        return;
    n = (size_t)snprintf(big, 256,
        "POST /echo HTTP/1.1\r\nHost: x\r\n"
        "Transfer-Encoding: chunked\r\n\r\n2000\r\n");
    memset(big + n, 'b', 0x2000);
    memcpy(big + n + 0x2000, "\r\n0\r\n\r\n", 7);
    client_send(&c, big, n + 0x2000 + 7);
    client_read(&c, 1);
    is_int(c.r[0].status, 413, "413 for a streamed chunked body");
    ok(client_eof(&c), "413 chunked: server closes");
    client_close(&c);

    /* A header block over 16 KiB. */
    if (!tcp_open(&c))
        return;
    n = (size_t)snprintf(big, 256, "GET /echo HTTP/1.1\r\nX-Big: ");
    memset(big + n, 'h', 20000);
    memcpy(big + n + 20000, "\r\n\r\n", 4);
    client_send(&c, big, n + 20004);
    client_read(&c, 1);
    is_int(c.r[0].status, 431, "431 for a 20 KiB header");
    ok(client_eof(&c), "431: server closes");
    client_close(&c);
    free(big);

    /* Garbage. */
    if (!tcp_open(&c))
        return;
    ask(&c, "GARBAGE\x01\x02 nonsense\r\n\r\n", 400, "400 for garbage");
    closing_error(&c, "400", "bad_request");
    client_close(&c);

    /* A good request, then garbage: the good one is answered first. */
    if (!tcp_open(&c))
        return;
    client_sends(&c, "GET /plain HTTP/1.1\r\nHost: x\r\n\r\nBLAH BLAH\r\n");
    is_int(client_read(&c, 2), 2, "good then bad: two responses");
    is_int(c.r[0].status, 200, "good then bad: 200 first");
    is_int(c.r[1].status, 400, "good then bad: then 400");
    ok(client_eof(&c), "good then bad: server closes");
    client_close(&c);

    /* HTTP/1.0 and Connection: close end the connection. */
    if (!tcp_open(&c))
        return;
    ask(&c, "GET /plain HTTP/1.0\r\n\r\n", 200, "HTTP/1.0: 200");
    ok(c.r[0].close, "HTTP/1.0: Connection: close");
    ok(client_eof(&c), "HTTP/1.0: server closes");
    client_close(&c);

    if (!tcp_open(&c))
        return;
    client_sends(&c, "GET /plain HTTP/1.1\r\nConnection: close\r\n\r\n"
                     "GET /plain HTTP/1.1\r\n\r\n");
    is_int(client_read(&c, 2), 1,
        "Connection: close: nothing after it is answered");
    ok(c.r[0].close, "Connection: close echoed");
    ok(client_eof(&c), "Connection: close: server closes");
    client_close(&c);
}

static void
test_deferred(void)
{
    struct client c;
    double t0, dt;
    int before;

    /* Completed from a timer; a pipelined request waits behind it. The
     * deferral outlasts the idle timeout, which must not apply. */
    if (!tcp_open(&c))
        return;
    before = atomic_load(&defers_done);
    t0 = now_ms();
    client_sends(&c, "GET /defer?ms=1300 HTTP/1.1\r\nHost: x\r\n\r\n"
                     "GET /echo?q=after HTTP/1.1\r\nHost: x\r\n\r\n");
    is_int(client_read(&c, 2), 2, "deferred: both responses");
    dt = now_ms() - t0;
    is_int(atomic_load(&defers_done) - before, 1, "deferred: timer ran");
    is_int(c.r[0].status, 200, "deferred: status");
    ok(body_true(&c.r[0], "deferred"),
        "deferred: first response is the deferred one");
    is_body_str(&c.r[1], "q", "after", "deferred: pipelined one after it");
    ok(dt >= 1250, "deferred: answered after the timer (%.0f ms)", dt);
    ok(!c.r[0].close && !c.r[1].close,
        "deferred: no idle timeout while pending");

    /* Promptness: finished from a timer, written in the same iteration's
     * check phase, not when the next event (this connection's idle timer,
     * IDLE_MS later) wakes the loop. */
    client_reset(&c);
    t0 = now_ms();
    client_sends(&c, "GET /defer-shared HTTP/1.1\r\nHost: x\r\n\r\n");
    client_read(&c, 1);
    dt = now_ms() - t0;
    is_int(c.r[0].status, 200, "short deferred: status");
    ok(dt < IDLE_MS / 2, "short deferred: written promptly (%.0f ms)", dt);
    client_close(&c);

    /* The client goes away before completion: cancel runs exactly once. */
    before = atomic_load(&cancel_calls);
    if (!tcp_open(&c))
        return;
    client_sends(&c, "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n");
    ok(wait_for(&holds, 1, 3000), "hold: handler ran");
    client_close(&c);
    ok(wait_for(&cancel_calls, before + 1, 3000),
        "hold: cancel called after the client closed");
    usleep(50000);
    is_int(atomic_load(&cancel_calls) - before, 1, "hold: cancel only once");

    /* The same with a timer-driven deferral in flight. */
    before = atomic_load(&cancel_calls);
    if (!ok(client_open(&c, true), "unix connect"))
        return;
    client_sends(&c, "GET /defer?ms=5000 HTTP/1.1\r\nHost: x\r\n\r\n");
    usleep(50000);
    client_close(&c);
    ok(wait_for(&cancel_calls, before + 1, 3000),
        "deferred with timer: cancelled on disconnect");
}

static void
test_flush_failure(void)
{
    struct client c;
    char code[64], msg[160];

    if (!tcp_open(&c))
        return;
    atomic_store(&fail_flush, 1);
    client_sends(&c,
        "POST /durable HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
        "GET /plain HTTP/1.1\r\nHost: x\r\n\r\n");
    is_int(client_read(&c, 2), 2, "flush failure: two responses");
    atomic_store(&fail_flush, 0);
    is_int(c.r[0].status, 503, "flush failure: durable turns into 503");
    is_str(error_field(&c.r[0], "code", code, sizeof(code)), "unavailable",
        "flush failure: code unavailable");
    is_str(error_field(&c.r[0], "message", msg, sizeof(msg)),
        "cannot commit: Input/output error", "flush failure: message");
    is_int(c.r[1].status, 200, "flush failure: non-durable stays 200");
    ok(!c.r[0].close, "flush failure: connection stays usable");

    client_reset(&c);
    client_sends(&c,
        "POST /durable HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}");
    client_read(&c, 1);
    is_int(c.r[0].status, 201, "after recovery: durable succeeds again");
    client_close(&c);
}

static void
test_held_flush(void)
{
    struct client c;
    char msg[160];
    double t0, dt;

    if (!tcp_open(&c))
        return;
    atomic_store(&hold_flush, 1);
    atomic_store(&release_rc, 0);
    t0 = now_ms();
    client_sends(&c,
        "POST /durable HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
        "GET /plain HTTP/1.1\r\nHost: x\r\n\r\n");
    is_int(client_read(&c, 2), 2, "held flush: two responses");
    dt = now_ms() - t0;
    ok(dt >= 250, "held flush: written once released (%.0f ms)", dt);
    is_int(c.r[0].status, 201, "held flush: durable stands once released");
    is_int(c.r[1].status, 200, "held flush: non-durable held too, then 200");

    /* A request that comes while the first is held is answered after
     * it, by a later flush. */
    client_reset(&c);
    client_sends(&c, "POST /durable HTTP/1.1\r\nHost: x\r\n"
                     "Content-Length: 2\r\n\r\n{}");
    usleep(100000);
    client_sends(&c, "GET /echo?q=later HTTP/1.1\r\nHost: x\r\n\r\n");
    is_int(client_read(&c, 2), 2, "held flush: both answered");
    is_int(c.r[0].status, 201, "held flush: the first one first");
    is_body_str(&c.r[1], "q", "later", "held flush: the later one after it");

    /* Released with a failure: durable responses turn into 503. */
    client_reset(&c);
    atomic_store(&release_rc, -EIO);
    client_sends(&c,
        "POST /durable HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
        "GET /plain HTTP/1.1\r\nHost: x\r\n\r\n");
    is_int(client_read(&c, 2), 2, "failed hold: two responses");
    is_int(c.r[0].status, 503, "failed hold: durable turns into 503");
    is_str(error_field(&c.r[0], "message", msg, sizeof(msg)),
        "not confirmed durable", "failed hold: the release's message");
    is_int(c.r[1].status, 200, "failed hold: non-durable stays 200");
    ok(!c.r[0].close, "failed hold: connection stays usable");
    atomic_store(&hold_flush, 0);
    atomic_store(&release_rc, 0);
    client_close(&c);

    /* A client that leaves while held costs nothing. */
    if (!tcp_open(&c))
        return;
    atomic_store(&hold_flush, 1);
    client_sends(&c, "POST /durable HTTP/1.1\r\nHost: x\r\n"
                     "Content-Length: 2\r\n\r\n{}");
    usleep(50000);
    client_close(&c);
    usleep(400000);
    atomic_store(&hold_flush, 0);
    if (!tcp_open(&c))
        return;
    ask(&c, "GET /plain HTTP/1.1\r\nHost: x\r\n\r\n", 200,
        "held flush: a client gone while held leaves the server serving");
    client_close(&c);
}

/* Whether anything arrived on c within about ms (nothing is consumed). */
static bool
client_quiet(struct client *c, int ms)
{
    char buf[16];

    usleep((useconds_t)ms * 1000);
    return recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT | MSG_PEEK) < 0 &&
           (errno == EAGAIN || errno == EWOULDBLOCK);
}

/* Holds released one ticket at a time (the WAL's fsync or a quorum
 * reaching one commit and then the next): a release frees only the
 * flushes up to its ticket, read-only replies wait with them, and a
 * connection that closes meanwhile costs nothing. */
static void
test_held_in_order(void)
{
    struct client a, b, gone;

    if (!tcp_open(&a) || !tcp_open(&b) || !tcp_open(&gone))
        return;
    atomic_store(&hold_manual, 1);
    client_sends(&a,
        "POST /durable HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}");
    ok(client_quiet(&a, 200), "held: the durable reply waits");
    client_sends(&b, "GET /plain HTTP/1.1\r\nHost: x\r\n\r\n");
    client_sends(&gone, "GET /plain HTTP/1.1\r\nHost: x\r\n\r\n");
    ok(client_quiet(&b, 200), "held: a read-only reply waits too");
    client_close(&gone);
    atomic_store(&release_to, 1);
    uv_async_send(&release_async);
    is_int(client_read(&a, 1), 1, "released 1: the first ticket's reply");
    is_int(a.r[0].status, 201, "released 1: it is the 201");
    ok(client_quiet(&b, 200), "released 1: a later ticket still waits");
    atomic_store(&hold_manual, 0);
    atomic_store(&release_to, atomic_load(&tickets));
    uv_async_send(&release_async);
    is_int(client_read(&b, 1), 1, "released to the last ticket: it comes");
    is_int(b.r[0].status, 200, "released: the GET's 200");
    client_reset(&a);
    client_sends(&a,
        "POST /durable HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}");
    is_int(client_read(&a, 1), 1, "no longer held: replies go at once");
    client_close(&a);
    client_close(&b);
}

static void
test_unix(void)
{
    struct client c;
    cJSON *j;

    if (!ok(client_open(&c, true), "unix connect"))
        return;
    ask(&c, "GET /whoami HTTP/1.1\r\nHost: x\r\n\r\n", 200, "unix: status");
    j = body_json(&c.r[0]);
    ok(cJSON_IsTrue(cJSON_GetObjectItem(j, "is_unix")), "unix: is_unix");
    is_int((long)json_num(j, "uid"), (long)getuid(), "unix: peer uid");
    is_int((long)json_num(j, "gid"), (long)getgid(), "unix: peer gid");
    is_int((long)json_num(j, "pid"), (long)getpid(), "unix: peer pid");
    cJSON_Delete(j);

    client_reset(&c);
    client_sends(&c, "POST /echo HTTP/1.1\r\nHost: x\r\n"
                     "Content-Length: 5\r\n\r\nhello");
    client_read(&c, 1);
    is_body_str(&c.r[0], "body", "hello", "unix: POST body");
    client_close(&c);

    if (!tcp_open(&c))
        return;
    client_sends(&c, "GET /whoami HTTP/1.1\r\nHost: x\r\n\r\n");
    client_read(&c, 1);
    j = body_json(&c.r[0]);
    ok(cJSON_IsFalse(cJSON_GetObjectItem(j, "is_unix")), "tcp: not unix");
    ok(json_num(j, "uid") != 0, "tcp: peer uid is not root");
    cJSON_Delete(j);
    client_close(&c);
}

static void
test_rude_peers(void)
{
    struct client c;
    double t0, dt;

    /* Idle keep-alive connection: closed after the timeout. */
    if (!tcp_open(&c))
        return;
    t0 = now_ms();
    ok(client_eof(&c), "idle connection closed by the server");
    dt = now_ms() - t0;
    ok(dt >= IDLE_MS - 50 && dt < IDLE_MS + 2000,
        "idle timeout after about %d ms (%.0f ms)", IDLE_MS, dt);
    client_close(&c);

    /* Gone in the middle of a request body. */
    if (client_open(&c, false)) {
        client_sends(&c, "POST /echo HTTP/1.1\r\nHost: x\r\n"
                         "Content-Length: 100\r\n\r\nabc");
        client_close(&c);
    }
    /* Gone in the middle of an 8 MiB response. */
    if (client_open(&c, false)) {
        char buf[1000];

        client_sends(&c, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n");
        recv(c.fd, buf, sizeof(buf), 0);
        client_close(&c);
    }
    /* Gone with a pipelined batch not yet answered. */
    if (client_open(&c, true)) {
        client_sends(&c, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n"
                         "GET /plain HTTP/1.1\r\nHost: x\r\n\r\n");
        client_close(&c);
    }
    /* Half-closed after a request: still answered. */
    if (ok(client_open(&c, false), "tcp connect")) {
        client_sends(&c, "GET /plain HTTP/1.1\r\nHost: x\r\n\r\n");
        shutdown(c.fd, SHUT_WR);
        is_int(client_read(&c, 1), 1, "half-closed client gets its answer");
        is_int(c.r[0].status, 200, "half-closed: 200");
        ok(client_eof(&c), "half-closed: then closed");
        client_close(&c);
    }
    is_int(wait_nconns(1), 1, "rude peers cost only themselves");
}

/* Send s one byte every 300 ms (more often than the idle timeout) until
 * the server closes; the milliseconds from t0 to the close, or -1. */
static double
trickle_until_closed(struct client *c, const char *s, double t0)
{
    struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
    char buf[4096];
    size_t i = 0, n = strlen(s);

    while (now_ms() - t0 < 8000) {
        if (poll(&pfd, 1, 300) > 0) {
            ssize_t r = read(c->fd, buf, sizeof(buf));

            if (r <= 0)
                return now_ms() - t0;
            continue; /* an answer (none expected) */
        }
        if (send(c->fd, s + i % n, 1, MSG_NOSIGNAL) < 0)
            return now_ms() - t0;
        i++;
    }
    return -1;
}

static void
test_deadlines(void)
{
    struct client c;
    double t0, dt;

    /* A head trickled faster than the idle timeout: the header deadline
     * ends it. */
    if (client_open(&c, false)) {
        t0 = now_ms();
        dt = trickle_until_closed(&c,
            "GET /x HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaa", t0);
        ok(dt >= HEADER_MS - 100 && dt < HEADER_MS + 1500,
            "a trickled head is cut off after about %d ms (%.0f ms)", HEADER_MS,
            dt);
        client_close(&c);
    }
    /* A body trickled faster than the idle timeout: the body deadline. */
    if (client_open(&c, false)) {
        client_sends(&c, "POST /echo HTTP/1.1\r\nHost: x\r\n"
                         "Content-Length: 1000\r\n\r\n");
        t0 = now_ms();
        dt = trickle_until_closed(&c, "abcdefghij", t0);
        ok(dt >= BODY_MS - 100 && dt < BODY_MS + 1500,
            "a trickled body is cut off after about %d ms (%.0f ms)", BODY_MS,
            dt);
        client_close(&c);
    }
    /* A long poll's wait is none of these: answered after 4 s, longer
     * than the idle and header timeouts. */
    if (client_open(&c, false)) {
        client_sends(&c, "GET /defer?ms=4000 HTTP/1.1\r\nHost: x\r\n\r\n");
        is_int(client_read(&c, 1), 1, "a 4 s long poll is answered");
        ok(c.n == 1 && c.r[0].status == 200 && body_true(&c.r[0], "deferred"),
            "with its deferred answer");
        client_close(&c);
    }
    /* A reader that takes nothing of an 8 MiB response: the write
     * deadline ends it (the kernel's buffers take only part of it). */
    if (client_open(&c, false)) {
        char buf[65536];
        size_t got = 0;
        ssize_t r;
        int rcv = 65536;

        setsockopt(c.fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
        client_sends(&c, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n");
        usleep((WRITE_MS + 1500) * 1000);
        while ((r = read(c.fd, buf, sizeof(buf))) > 0)
            got += (size_t)r;
        ok(r == 0 && got < 8u << 20,
            "a reader that stalls is cut off after the write deadline "
            "(%zu of %u bytes)",
            got, 8u << 20);
        client_close(&c);
    }
    /* A complete request in time, then the connection idles: idle
     * timeout as before. */
    if (client_open(&c, false)) {
        client_sends(&c, "GET /x HTTP/1.1\r\nHost: x\r\n\r\n");
        client_read(&c, 1);
        t0 = now_ms();
        ok(client_eof(&c), "idle after a request: closed");
        dt = now_ms() - t0;
        ok(dt < IDLE_MS + 1000, "after the idle timeout (%.0f ms)", dt);
        client_close(&c);
    }
}

static void *
client_main(void *arg)
{
    struct client hold;

    (void)arg;
    test_roundtrip_keepalive();
    test_pipelining();
    test_backpressure();
    test_limits();
    test_deferred();
    test_flush_failure();
    test_held_flush();
    test_held_in_order();
    test_unix();
    test_rude_peers();
    test_deadlines();

    /* Leave a pending deferred response for http_server_close. */
    if (client_open(&hold, true)) {
        int n = atomic_load(&holds);

        client_sends(&hold, "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n");
        ok(wait_for(&holds, n + 1, 3000), "final hold is pending");
    }
    atomic_store(&cancel_calls, 0);
    uv_async_send(&stop_async);
    ok(client_eof(&hold), "server close closes open connections");
    client_close(&hold);
    return NULL;
}

/* --- closing the server from inside the handler --------------------------- */

static struct http_server *srv2;
static uv_timer_t watchdog;
static int done2_calls;
static atomic_int cancel2_calls;
static atomic_int handled2;

static void
cancel2_cb(struct http_deferred *d, void *arg)
{
    (void)d;
    (void)arg;
    atomic_fetch_add(&cancel2_calls, 1);
}

static void
server2_done(void *arg)
{
    (void)arg;
    done2_calls++;
    uv_close((uv_handle_t *)&watchdog, NULL);
}

static void
handler2(struct http_req *req, struct http_resp *resp, void *arg)
{
    (void)arg;
    atomic_fetch_add(&handled2, 1);
    if (strcmp(req->path, "/close") == 0) {
        http_resp_defer(resp, cancel2_cb, NULL);
        http_server_close(srv2, server2_done, NULL);
    }
}

static void
watchdog_cb(uv_timer_t *timer)
{
    (void)timer;
    diag("watchdog: closing the second server");
    http_server_close(srv2, server2_done, NULL);
}

static void *
client2_main(void *arg)
{
    struct client c;

    (void)arg;
    if (ok(client_open(&c, false), "second server: connect")) {
        client_sends(&c, "GET /close HTTP/1.1\r\nHost: x\r\n\r\n"
                         "GET /plain HTTP/1.1\r\nHost: x\r\n\r\n");
        ok(client_eof(&c), "second server: closed from the handler");
        is_int(c.n, 0, "second server: no response");
        client_close(&c);
    }
    return NULL;
}

/* --- main (loop thread) -------------------------------------------------- */

static void
test_query_get(void)
{
    struct http_req req;
    char buf[8];

    memset(&req, 0, sizeof(req));
    req.query = "a=1&bb=x+y%21&empty=&flag&a%62c=enc&bad=%zz%&long=123456789";
    is_str(http_query_get(&req, "a", buf, sizeof(buf)), "1", "query: a");
    is_str(http_query_get(&req, "bb", buf, sizeof(buf)), "x y!",
        "query: '+' and %%XX");
    is_str(http_query_get(&req, "empty", buf, sizeof(buf)), "",
        "query: empty value");
    is_str(http_query_get(&req, "flag", buf, sizeof(buf)), "",
        "query: key without '='");
    is_str(http_query_get(&req, "abc", buf, sizeof(buf)), "enc",
        "query: encoded key");
    is_str(http_query_get(&req, "bad", buf, sizeof(buf)), "%zz%",
        "query: malformed escapes stay literal");
    ok(http_query_get(&req, "long", buf, sizeof(buf)) == NULL,
        "query: value that does not fit");
    ok(http_query_get(&req, "b", buf, sizeof(buf)) == NULL,
        "query: absent key (prefix of another)");
    ok(http_query_get(&req, "nope", buf, sizeof(buf)) == NULL,
        "query: absent key");
    req.query = "";
    ok(http_query_get(&req, "a", buf, sizeof(buf)) == NULL,
        "query: empty query");
}

/* Run loop to completion while fn plays the client on a thread of its
 * own: uv_run's result. */
static int
run_with_client(uv_loop_t *loop, void *(*fn)(void *))
{
    pthread_t th;
    int rc;

    if (pthread_create(&th, NULL, fn, NULL) != 0)
        fatal("pthread_create");
    rc = uv_run(loop, UV_RUN_DEFAULT);
    pthread_join(th, NULL);
    return rc;
}

/* A socket file nobody listens on, as a crashed server leaves it. */
static int
make_stale_socket(const char *path)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    int rc;

    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    rc = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
    close(fd);
    return rc;
}

int
main(void)
{
    struct http_server_opts opts = { .max_body = MAX_BODY,
        .idle_timeout_ms = IDLE_MS,
        .header_timeout_ms = HEADER_MS,
        .body_timeout_ms = BODY_MS,
        .write_timeout_ms = WRITE_MS };
    struct err err;
    char path2[300];
    struct stat st;
    int port2, rc, fd;

    plan(NO_PLAN);
    log_init("test_http",
        getenv("TEST_HTTP_DEBUG") ? LOG_LEVEL_DEBUG : LOG_LEVEL_WARN,
        LOG_MODE_PLAIN);
    test_query_get();

    if (mkdtemp(tmpdir) == NULL)
        fatal("mkdtemp");
    snprintf(sock_path, sizeof(sock_path), "%s/sched.sock", tmpdir);
    is_int(uv_loop_init(&loop), 0, "loop init");
    srv = http_server_create(&loop, &opts, test_handler, test_flush, NULL,
        &err);
    if (!ok(srv != NULL, "server created"))
        return 1;

    rc = http_server_listen_tcp(srv, "127.0.0.1", 0, &tcp_port, &err);
    is_int(rc, 0, "listen on 127.0.0.1:0");
    ok(tcp_port > 0, "bound port %d", tcp_port);
    rc = http_server_listen_tcp(srv, "127.0.0.1", tcp_port, &port2, &err);
    is_int(rc, UV_EADDRINUSE, "listening twice on a port fails");
    snprintf(path2, sizeof(path2), "cannot listen on 127.0.0.1:%d: ", tcp_port);
    ok(strncmp(err.msg, path2, strlen(path2)) == 0, "error names it: %s",
        err.msg);

    is_int(make_stale_socket(sock_path), 0, "stale socket file made");
    rc = http_server_listen_unix(srv, sock_path, &err);
    is_int(rc, 0, "listen on unix socket over a stale file");
    ok(stat(sock_path, &st) == 0 && (st.st_mode & 0777) == 0666,
        "unix socket mode 0666");
    rc = http_server_listen_unix(srv, sock_path, &err);
    is_int(rc, -EADDRINUSE, "a live socket is not replaced: %s", err.msg);

    snprintf(path2, sizeof(path2), "%s/plain-file", tmpdir);
    fd = open(path2, O_CREAT | O_WRONLY, 0600);
    close(fd);
    rc = http_server_listen_unix(srv, path2, &err);
    is_int(rc, -EEXIST, "a regular file is not replaced: %s", err.msg);
    unlink(path2);

    uv_async_init(&loop, &stop_async, stop_async_cb);
    uv_timer_init(&loop, &finisher);
    uv_timer_init(&loop, &releaser);
    uv_async_init(&loop, &release_async, release_async_cb);
    rc = run_with_client(&loop, client_main);

    is_int(rc, 0, "loop ran to completion");
    is_int(done_calls, 1, "close: done called once");
    is_int(atomic_load(&cancel_calls), 1,
        "close: pending deferred cancelled once");
    ok(stat(sock_path, &st) < 0 && errno == ENOENT,
        "close: unix socket file removed");

    /* A handler that closes the server under its own feet. */
    srv2 = http_server_create(&loop, NULL, handler2, NULL, NULL, &err);
    rc = http_server_listen_tcp(srv2, "127.0.0.1", 0, &tcp_port, &err);
    is_int(rc, 0, "second server listens");
    uv_timer_init(&loop, &watchdog);
    uv_timer_start(&watchdog, watchdog_cb, 10000, 0);
    uv_unref((uv_handle_t *)&watchdog);
    rc = run_with_client(&loop, client2_main);
    is_int(rc, 0, "second loop ran to completion");
    is_int(done2_calls, 1, "second server: done called once");
    is_int(atomic_load(&handled2), 1,
        "second server: nothing handled after the close");
    is_int(atomic_load(&cancel2_calls), 1,
        "second server: the handler's deferral cancelled");
    is_int(uv_loop_close(&loop), 0, "uv_loop_close == 0");
    rmdir(tmpdir);
    return done_testing();
}
