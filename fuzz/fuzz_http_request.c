/*
 * fuzz_http_request.c - the scheduler's HTTP server, fed bytes by a peer
 *
 * No seam: the real server (scheduler/http*.c: accepting, reading,
 * http_parser and our callbacks over it, pipelining, backpressure,
 * deferred responses, the group commit, writing, lingering, closing)
 * listens on a Unix socket in the harness's directory, and each input is
 * written to it by one client connection, then the client shuts down its
 * sending side and reads until the server closes. The handler answers
 * every request with its sequence number; some are deferred (a long
 * poll) and finished a loop iteration later.
 *
 * Input: one byte of settings, then the bytes the client sends.
 *   bits 0-1  how the bytes are cut into writes, each read by the server
 *             on its own: whole, 1, 7 or 61 bytes at a time (at most 256
 *             writes: longer inputs are cut into longer pieces)
 *   bit 2     the commit fails: every durable response becomes a 503
 *   bit 3     a server with a 64-byte body limit (413s)
 *   bit 4     every response is durable
 *   bit 5     over TCP to a server whose connection caps keep all its
 *             room for agents: the connection is restricted, and only a
 *             request with an Agent credential reaches the handler (the
 *             rest get 503)
 *
 * Checked beyond the sanitizers, for every input:
 *   - what the server writes is well-formed HTTP (parsed by http_parser);
 *   - the handler's responses come back in request order, none twice;
 *   - without deferred responses every handled request is answered, and
 *     at most one more response (the server's own rejection) follows;
 *   - the server closes the connection once the client is done, within
 *     a bounded number of loop iterations (no hang), and every deferred
 *     response it held was finished or cancelled (no leak of them);
 *   - the handler sees a method, a path starting with '/', a query and a
 *     NUL-terminated body of body_len bytes.
 */
#include "fuzz/fuzz.h"

#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <http_parser.h>
#include <uv.h>

#include "common/err.h"
#include "common/sbuf.h"
#include "scheduler/http.h"

#define FUZZ_HTTP_ITER_MAX 20000 /* loop iterations an input may take */
#define FUZZ_HTTP_DEFER_MAX 64

struct fuzz_http {
    uv_loop_t loop;
    uv_timer_t finish;          /* finishes the deferred responses */
    struct http_server *srv[3]; /* Unix; Unix with a small body; TCP */
    char path[2][256];
    int port; /* srv[2]'s */
    /* per input */
    unsigned flags;
    unsigned handled;   /* handler calls */
    unsigned deferred;  /* of those, deferred */
    unsigned cancelled; /* deferred responses cancelled by a close */
    unsigned finished;
    struct http_deferred *pending[FUZZ_HTTP_DEFER_MAX];
    bool head[8192]; /* request seq was a HEAD (its reply has no body) */
    size_t npending;
};

static struct fuzz_http fh;

/* --- the server side --------------------------------------------------- */

static void
fuzz_http_cancel(struct http_deferred *d, void *arg)
{
    (void)arg;
    for (size_t i = 0; i < fh.npending; i++) {
        if (fh.pending[i] == d) {
            fh.pending[i] = fh.pending[--fh.npending];
            fh.cancelled++;
            return;
        }
    }
    fuzz_assert(!"cancel of a deferred response not pending");
}

static void
fuzz_http_finish_cb(uv_timer_t *t)
{
    (void)t;
    while (fh.npending > 0) {
        struct http_deferred *d = fh.pending[--fh.npending];
        struct http_resp *resp = http_deferred_resp(d);

        resp->status = 202;
        sbuf_addstr(&resp->body, "{\"deferred\":true}");
        fh.finished++;
        http_deferred_finish(d);
    }
}

/* What a handler may rely on. */
static void
fuzz_http_check_req(const struct http_req *req)
{
    fuzz_assert(req->method != NULL && req->method[0] != '\0');
    fuzz_assert(req->path != NULL && req->path[0] == '/');
    fuzz_assert(req->query != NULL);
    fuzz_assert(req->body != NULL && req->body[req->body_len] == '\0');
    fuzz_assert(!req->is_unix || req->peer_uid == getuid());
}

static void
fuzz_http_handler(struct http_req *req, struct http_resp *resp, void *arg)
{
    char buf[64], small[4];
    unsigned seq = fh.handled++;
    cJSON *o;

    (void)arg;
    fuzz_http_check_req(req);
    if (seq < sizeof(fh.head))
        fh.head[seq] = strcmp(req->method, "HEAD") == 0;
    o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "seq", seq);
    cJSON_AddStringToObject(o, "method", req->method);
    cJSON_AddStringToObject(o, "path", req->path);
    cJSON_AddStringToObject(o, "query", req->query);
    cJSON_AddNumberToObject(o, "body_len", (double)req->body_len);
    if (req->authorization)
        cJSON_AddStringToObject(o, "auth", req->authorization);
    if (req->content_type)
        cJSON_AddStringToObject(o, "ctype", req->content_type);
    /* The query decoder, with room and without. */
    if (http_query_get(req, "node", buf, sizeof(buf)))
        cJSON_AddStringToObject(o, "node", buf);
    (void)http_query_get(req, "limit", small, sizeof(small));
    (void)http_query_get(req, req->path + 1, buf, sizeof(buf));
    http_resp_json(resp, 200, o);
    http_resp_header(resp, "X-Seq", "%u", seq);
    /* Half of them (or all) wait for the commit; never a HEAD's, whose
     * 503 would lose the X-Seq the client needs to skip its body. */
    resp->durable = ((fh.flags & 0x10) != 0 || (seq & 1)) &&
                    strcmp(req->method, "HEAD") != 0;
    if (strncmp(req->path, "/defer", 6) == 0 &&
        fh.npending < FUZZ_HTTP_DEFER_MAX) {
        fh.pending[fh.npending++] = http_resp_defer(resp, fuzz_http_cancel,
            NULL);
        fh.deferred++;
        fuzz_assert(uv_timer_start(&fh.finish, fuzz_http_finish_cb, 0, 0) == 0);
    }
}

static int
fuzz_http_flush(void *arg)
{
    (void)arg;
    return (fh.flags & 0x04) ? -EIO : 0;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    struct http_server_opts opts[3] = { { 0 }, { .max_body = 64 },
        { .max_conns = 1, .reserve = 1 } };
    struct err err = { 0 };

    (void)argc;
    (void)argv;
    fuzz_quiet();
    fuzz_assert(uv_loop_init(&fh.loop) == 0);
    fuzz_assert(uv_timer_init(&fh.loop, &fh.finish) == 0);
    for (int i = 0; i < 3; i++) {
        fh.srv[i] = http_server_create(&fh.loop, &opts[i], fuzz_http_handler,
            fuzz_http_flush, NULL, &err);
        fuzz_assert(fh.srv[i] != NULL);
    }
    for (int i = 0; i < 2; i++) {
        snprintf(fh.path[i], sizeof(fh.path[i]), "%s/http%d.sock", fuzz_dir(),
            i);
        if (http_server_listen_unix(fh.srv[i], fh.path[i], &err) < 0)
            fuzz_fail("fuzz_http_request: %s\n", err.msg);
    }
    if (http_server_listen_tcp(fh.srv[2], "127.0.0.1", 0, &fh.port, &err) < 0)
        fuzz_fail("fuzz_http_request: %s\n", err.msg);
    return 0;
}

/* --- the client side --------------------------------------------------- */

struct fuzz_reply {
    http_parser p;
    struct sbuf hname, hval; /* the header being parsed */
    bool in_value;
    long seq; /* of the response being parsed, -1: none */
    long last_seq;
    unsigned n;     /* complete final responses */
    unsigned nseq;  /* of those, the handler's */
    unsigned extra; /* of those, not the handler's (rejections, 503s) */
};

static int
reply_begin_cb(http_parser *p)
{
    struct fuzz_reply *r = p->data;

    r->seq = -1;
    r->in_value = false;
    sbuf_reset(&r->hname);
    sbuf_reset(&r->hval);
    return 0;
}

/* A header is complete (its name and value may come in pieces). */
static void
reply_header_done(struct fuzz_reply *r)
{
    if (strcasecmp(r->hname.buf, "X-Seq") == 0)
        r->seq = strtol(r->hval.buf, NULL, 10);
    r->in_value = false;
    sbuf_reset(&r->hname);
    sbuf_reset(&r->hval);
}

static int
reply_field_cb(http_parser *p, const char *at, size_t len)
{
    struct fuzz_reply *r = p->data;

    if (r->in_value)
        reply_header_done(r);
    sbuf_add(&r->hname, at, len);
    return 0;
}

static int
reply_value_cb(http_parser *p, const char *at, size_t len)
{
    struct fuzz_reply *r = p->data;

    r->in_value = true;
    sbuf_add(&r->hval, at, len);
    return 0;
}

static int
reply_headers_cb(http_parser *p)
{
    struct fuzz_reply *r = p->data;

    if (r->in_value)
        reply_header_done(r);
    /* A response to HEAD announces a body it does not carry (the
     * handler keeps those out of the commit, so they keep X-Seq). */
    if (r->seq >= 0 && (size_t)r->seq < sizeof(fh.head) && fh.head[r->seq])
        return 1;
    return 0;
}

static int
reply_complete_cb(http_parser *p)
{
    struct fuzz_reply *r = p->data;

    if (p->status_code / 100 == 1)
        return 0; /* 100 Continue: interim */
    r->n++;
    if (r->seq >= 0) {
        /* In request order, each once. */
        fuzz_assert(r->seq > r->last_seq);
        fuzz_assert((unsigned long)r->seq < fh.handled);
        r->last_seq = r->seq;
        r->nseq++;
    } else {
        fuzz_assert(p->status_code >= 400);
        r->extra++;
    }
    return 0;
}

static const http_parser_settings reply_settings = {
    .on_message_begin = reply_begin_cb,
    .on_header_field = reply_field_cb,
    .on_header_value = reply_value_cb,
    .on_headers_complete = reply_headers_cb,
    .on_message_complete = reply_complete_cb,
};

/* Read what the server wrote; true at end of stream. */
static bool
client_read(int fd, struct fuzz_reply *r)
{
    char buf[65536];
    ssize_t n;
    size_t done;

    for (;;) {
        n = read(fd, buf, sizeof(buf));
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return false;
        if (n < 0 && errno == ECONNRESET)
            return true;
        fuzz_assert(n >= 0);
        done = http_parser_execute(&r->p, &reply_settings, buf, (size_t)n);
        if (HTTP_PARSER_ERRNO(&r->p) != HPE_OK) {
            fuzz_fail("server wrote malformed HTTP: %s\n",
                http_errno_description(HTTP_PARSER_ERRNO(&r->p)));
        }
        fuzz_assert(done == (size_t)n);
        if (n == 0)
            return true;
    }
}

/* A connection to srv[2] over TCP, non-blocking once connected. */
static int
client_connect_tcp(void)
{
    struct sockaddr_in sa = { .sin_family = AF_INET,
        .sin_port = htons((uint16_t)fh.port),
        .sin_addr = { htonl(INADDR_LOOPBACK) } };
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    fuzz_assert(fd >= 0);
    fuzz_assert(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
    fuzz_assert(fcntl(fd, F_SETFL, O_NONBLOCK) == 0);
    return fd;
}

static int
client_connect(const char *path)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

    fuzz_assert(fd >= 0);
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    fuzz_assert(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
    return fd;
}

/* One loop iteration; counts towards the bound. */
static void
run_once(unsigned *iter)
{
    if (++*iter > FUZZ_HTTP_ITER_MAX) {
        fuzz_fail("the server took more than %d loop iterations\n",
            FUZZ_HTTP_ITER_MAX);
    }
    uv_run(&fh.loop, UV_RUN_NOWAIT);
}

/* Write all of data, one piece of `chunk` bytes per loop iteration. */
static void
client_send(int fd, const uint8_t *data, size_t size, size_t chunk,
    struct fuzz_reply *r, unsigned *iter)
{
    size_t off = 0, n;
    ssize_t w;

    while (off < size) {
        n = size - off < chunk ? size - off : chunk;
        w = send(fd, data + off, n, MSG_NOSIGNAL);
        if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
            /* The server reads no more (backpressure): let it write. */
            run_once(iter);
            (void)client_read(fd, r);
            continue;
        }
        if (w < 0 && (errno == EPIPE || errno == ECONNRESET))
            return; /* it closed: what it said is still to be read */
        fuzz_assert(w > 0);
        off += (size_t)w;
        run_once(iter);
        (void)client_read(fd, r);
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const size_t chunks[] = { SIZE_MAX, 1, 7, 61 };
    struct fuzz_reply r = { .last_seq = -1 };
    unsigned iter = 0;
    size_t chunk;
    int fd;

    fh.flags = fuzz_take_byte(&data, &size);
    fh.handled = fh.deferred = fh.cancelled = fh.finished = 0;
    memset(fh.head, 0, sizeof(fh.head));
    chunk = chunks[fh.flags & 3];
    /* At most 256 writes an input (each costs a loop iteration): the
     * cuts that matter fall inside a request's head, and a long input's
     * pieces grow instead. */
    if (chunk != SIZE_MAX && size / chunk > 256)
        chunk = size / 256 + 1;
    http_parser_init(&r.p, HTTP_RESPONSE);
    r.p.data = &r;
    sbuf_init(&r.hname);
    sbuf_init(&r.hval);

    fd = (fh.flags & 0x20) ? client_connect_tcp()
                           : client_connect(fh.path[(fh.flags >> 3) & 1]);
    client_send(fd, data, size, chunk, &r, &iter);
    fuzz_assert(shutdown(fd, SHUT_WR) == 0 || errno == ENOTCONN);
    while (!client_read(fd, &r))
        run_once(&iter);
    /* The client shut down first, so over TCP its side would wait in
     * TIME_WAIT: thousands of inputs a second would use up the local
     * ports. The server is gone by now; reset instead. */
    (void)setsockopt(fd, SOL_SOCKET, SO_LINGER,
        &(struct linger){ .l_onoff = 1, .l_linger = 0 }, sizeof(struct linger));
    close(fd);
    /* The server noticed the close; its side is gone within a few more
     * iterations (close callbacks). */
    while (http_server_nconns(fh.srv[0]) + http_server_nconns(fh.srv[1]) +
               http_server_nconns(fh.srv[2]) >
           0)
        run_once(&iter);
    run_once(&iter);

    fuzz_assert(fh.npending == 0);
    fuzz_assert(fh.finished + fh.cancelled == fh.deferred);
    fuzz_assert(r.nseq + r.extra == r.n);
    fuzz_assert(r.nseq <= fh.handled);
    if (!(fh.flags & 0x04))
        fuzz_assert(r.extra <= 1);
    if (fh.deferred == 0 && !(fh.flags & 0x04))
        fuzz_assert(r.nseq == fh.handled);
    if (fh.deferred == 0)
        fuzz_assert(r.n >= fh.handled && r.n <= fh.handled + 1);
    sbuf_release(&r.hname);
    sbuf_release(&r.hval);
    return 0;
}
