/*
 * http.c - the scheduler's HTTP/1.1 server (libuv + http_parser)
 *
 * Each connection owns an http_parser, the request being parsed, and an
 * output queue with one entry (struct http_out) per request, in request
 * order. The handler fills an entry; the entry is written only after the
 * server's uv_check callback has run flush_fn (group commit) and decided
 * whether a durable response still stands. Entries behind an unfinished
 * deferred response (a long poll) wait in the queue, so responses always
 * leave in request order.
 *
 * Pipelined requests behind a pending deferred response are parsed and
 * handled at once; only their responses wait. Reading pauses (the parser
 * is paused and the unparsed rest is kept) when a connection has
 * HTTP_PIPELINE_MAX unwritten responses or HTTP_WRITE_HIGH bytes the
 * kernel has not taken yet, and resumes as they drain. That bounds the
 * memory one peer can cost without stopping the reads that notice a long
 * poller going away.
 *
 * A connection that must close after a response (an error, "Connection:
 * close", HTTP/1.0, end of input) writes it, shuts down its sending side,
 * and then reads and discards until the peer closes or HTTP_LINGER_MS
 * passes. Closing at once could reset the connection with unread input
 * and destroy the reply before the peer has read it (a 413 answered while
 * the body is still arriving).
 *
 * Lifetime: a connection is freed only from the close callback of the
 * last of its two handles (stream and timer). Everything that ends a
 * connection goes through conn_close(), which marks it closing, cancels
 * its deferred responses and calls uv_close(); callbacks on the stack
 * check `closing` and return.
 */
#include "http.h"

#include <assert.h>
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <http_parser.h>

#include "common/log.h"
#include "common/xalloc.h"

#define HTTP_MAX_HEADER         16384
#define HTTP_MAX_HEADER_STR     "16384"
#define HTTP_DEFAULT_MAX_BODY   (1024 * 1024)
#define HTTP_DEFAULT_IDLE_MS    60000
#define HTTP_LINGER_MS          2000
#define HTTP_PIPELINE_MAX       32
#define HTTP_WRITE_HIGH         (4 * 1024 * 1024)
#define HTTP_READ_BUF           (64 * 1024)
#define HTTP_BACKLOG            511

/* A minimal intrusive circular list. A node that is in no list points to
 * itself, so removing it again is harmless. */
struct http_list {
    struct http_list *prev;
    struct http_list *next;
};

enum http_out_state {
    HTTP_OUT_HANDLER,       /* the handler is filling it */
    HTTP_OUT_DEFERRED,      /* waiting for http_deferred_finish() */
    HTTP_OUT_READY,         /* complete; written once settled */
    HTTP_OUT_CANCELLED,     /* its connection closed before it finished */
};

struct http_deferred {
    http_cancel_fn *cancel;
    void *arg;
};

/* One response slot per request, queued on its connection in order. */
struct http_out {
    struct http_out *next;
    struct http_conn *conn;
    enum http_out_state state;
    bool deferred;          /* http_resp_defer() called, not yet finished */
    bool settled;           /* a flush ran after it became ready */
    bool keep_alive;        /* the connection stays open after it */
    bool head;              /* HEAD request: no body on the wire */
    char *what;             /* "GET /v1/jobs" for the log */
    struct http_resp resp;
    struct http_deferred d;
};

/* A write request owns the bytes it writes; freed in its callback. */
struct http_write {
    uv_write_t req;
    char *head;
    char *body;
};

union http_stream {
    uv_handle_t handle;
    uv_stream_t stream;
    uv_tcp_t tcp;
    uv_pipe_t pipe;
};

struct http_listener {
    struct http_list node;      /* in srv->listeners */
    struct http_server *srv;
    union http_stream h;
    bool is_unix;
    char *path;                 /* the socket file we created, or NULL */
};

struct http_conn {
    struct http_list node;      /* in srv->conns until it starts closing */
    struct http_list dirty;     /* in srv->dirty while it has news */
    struct http_server *srv;
    union http_stream h;
    uv_timer_t timer;           /* idle timeout, then linger timeout */
    uv_shutdown_t shutdown_req;
    int nhandles;               /* open handles; freed when 0 */
    unsigned long id;
    http_parser parser;

    bool is_unix;
    uid_t uid;
    gid_t gid;
    pid_t pid;

    /* The request being parsed. */
    struct sbuf url;
    struct sbuf hname;
    struct sbuf hval;
    bool in_value;
    char *authorization;
    char *content_type;
    bool expect_continue;
    struct sbuf body;
    int fail_status;            /* set by a parser callback that failed */
    const char *fail_code;
    char fail_msg[128];

    /* Responses in request order. */
    struct http_out *out_head;
    struct http_out *out_tail;
    size_t nout;
    size_t ndeferred;
    size_t timer_wq;            /* unsent bytes when the idle timer began */

    struct sbuf inbuf;          /* unparsed input while paused */
    bool reading;
    bool paused;                /* parser paused for backpressure */
    bool close_after;           /* no more requests; close after the last */
    bool shut;                  /* uv_shutdown() issued */
    bool lingering;             /* shut down; discarding input */
    bool peer_eof;
    bool closing;
    bool is_dirty;
};

struct http_server {
    uv_loop_t *loop;
    size_t max_body;
    uint64_t idle_ms;
    http_handler_fn *handler;
    http_flush_fn *flush;
    void *arg;

    uv_check_t check;
    uv_idle_t idle;
    struct http_list listeners;
    struct http_list conns;
    struct http_list dirty;     /* conns with responses to settle */
    size_t nconns;
    unsigned nhandles;          /* every open handle, ours and conns' */
    unsigned long next_id;

    bool closing;
    void (*done)(void *);
    void *done_arg;

    /* Every read is parsed (or copied) before the next one starts, so
     * one buffer serves all connections. */
    char rbuf[HTTP_READ_BUF];
};

static void conn_close(struct http_conn *conn);
static void conn_parse(struct http_conn *conn, const char *data, size_t len);
static void conn_resume(struct http_conn *conn);
static void conn_read_start(struct http_conn *conn);
static void conn_read_stop(struct http_conn *conn);
static void conn_timer_cb(uv_timer_t *timer);

/* --- lists --------------------------------------------------------------- */

static void
http_list_init(struct http_list *l)
{
    l->prev = l;
    l->next = l;
}

static bool
http_list_empty(const struct http_list *l)
{
    return l->next == l;
}

static void
http_list_add_tail(struct http_list *head, struct http_list *n)
{
    n->prev = head->prev;
    n->next = head;
    head->prev->next = n;
    head->prev = n;
}

static void
http_list_remove(struct http_list *n)
{
    n->prev->next = n->next;
    n->next->prev = n->prev;
    http_list_init(n);
}

/* Move every node of from to the (empty) list to. */
static void
http_list_move(struct http_list *from, struct http_list *to)
{
    http_list_init(to);
    if (http_list_empty(from))
        return;
    to->next = from->next;
    to->prev = from->prev;
    to->next->prev = to;
    to->prev->next = to;
    http_list_init(from);
}

/* --- responses ----------------------------------------------------------- */

static void
http_resp_init(struct http_resp *resp)
{
    resp->status = 200;
    resp->content_type = "application/json";
    sbuf_init(&resp->headers);
    sbuf_init(&resp->body);
    resp->durable = false;
}

void
http_resp_json(struct http_resp *resp, int status, cJSON *json)
{
    char *s;

    assert(json != NULL);
    s = cJSON_PrintUnformatted(json);
    cJSON_Delete(json);
    if (s == NULL)
        fatalx("cannot print JSON response: out of memory");
    resp->status = status;
    resp->content_type = "application/json";
    sbuf_reset(&resp->body);
    sbuf_addstr(&resp->body, s);
    cJSON_free(s);
}

static void
http_resp_verror(struct http_resp *resp, int status, const char *code,
    const char *fmt, va_list ap)
{
    struct sbuf msg;
    cJSON *root, *e;

    sbuf_init(&msg);
    sbuf_vaddf(&msg, fmt, ap);
    root = cJSON_CreateObject();
    e = cJSON_AddObjectToObject(root, "error");
    if (root == NULL || e == NULL ||
        cJSON_AddStringToObject(e, "code", code) == NULL ||
        cJSON_AddStringToObject(e, "message", msg.buf) == NULL)
        fatalx("cannot build JSON error: out of memory");
    sbuf_release(&msg);
    http_resp_json(resp, status, root);
}

void
http_resp_error(struct http_resp *resp, int status, const char *code,
    const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    http_resp_verror(resp, status, code, fmt, ap);
    va_end(ap);
}

void
http_resp_header(struct http_resp *resp, const char *name,
    const char *fmt, ...)
{
    struct sbuf v;
    va_list ap;

    sbuf_init(&v);
    va_start(ap, fmt);
    sbuf_vaddf(&v, fmt, ap);
    va_end(ap);
    /* A value must not end the header line early (response splitting). */
    for (size_t i = 0; i < v.len; i++)
        if (v.buf[i] == '\r' || v.buf[i] == '\n')
            v.buf[i] = ' ';
    sbuf_addf(&resp->headers, "%s: %s\r\n", name, v.buf);
    sbuf_release(&v);
}

static struct http_out *
out_create(struct http_conn *conn, char *what)
{
    struct http_out *out = xcalloc(1, sizeof(*out));

    out->conn = conn;
    out->state = HTTP_OUT_HANDLER;
    out->keep_alive = true;
    out->what = what;
    http_resp_init(&out->resp);
    return out;
}

static void
out_destroy(struct http_out *out)
{
    if (out == NULL)
        return;
    sbuf_release(&out->resp.headers);
    sbuf_release(&out->resp.body);
    free(out->what);
    free(out);
}

/* --- deferred responses -------------------------------------------------- */

static void conn_mark_dirty(struct http_conn *conn);
static void conn_timer_restart(struct http_conn *conn);

struct http_deferred *
http_resp_defer(struct http_resp *resp, http_cancel_fn *cancel, void *arg)
{
    struct http_out *out = container_of(resp, struct http_out, resp);

    assert(out->state == HTTP_OUT_HANDLER);
    assert(!out->deferred);
    out->deferred = true;
    out->d.cancel = cancel;
    out->d.arg = arg;
    return &out->d;
}

struct http_resp *
http_deferred_resp(struct http_deferred *d)
{
    return &container_of(d, struct http_out, d)->resp;
}

void
http_deferred_finish(struct http_deferred *d)
{
    struct http_out *out = container_of(d, struct http_out, d);
    struct http_conn *conn = out->conn;

    if (out->state == HTTP_OUT_HANDLER) {
        /* Finished before the handler even returned. */
        out->deferred = false;
        return;
    }
    assert(out->state == HTTP_OUT_DEFERRED);
    out->state = HTTP_OUT_READY;
    out->deferred = false;
    assert(conn->ndeferred > 0);
    if (--conn->ndeferred == 0)
        conn_timer_restart(conn);
    conn_mark_dirty(conn);
}

/* --- server bookkeeping -------------------------------------------------- */

static void
server_handle_closed(struct http_server *srv)
{
    void (*done)(void *);
    void *arg;

    assert(srv->nhandles > 0);
    if (--srv->nhandles > 0 || !srv->closing)
        return;
    done = srv->done;
    arg = srv->done_arg;
    free(srv);
    if (done)
        done(arg);
}

static void
server_idle_cb(uv_idle_t *idle)
{
    /* Nothing to do: while this handle is active, the loop polls without
     * blocking, so the check phase that writes queued responses comes at
     * once even when they were queued outside of I/O (a timer). */
    (void)idle;
}

/* --- connections: output ------------------------------------------------- */

static void
conn_mark_dirty(struct http_conn *conn)
{
    struct http_server *srv = conn->srv;
    int rc;

    if (conn->closing || conn->is_dirty || srv->closing)
        return;
    conn->is_dirty = true;
    http_list_add_tail(&srv->dirty, &conn->dirty);
    if (!uv_is_active((uv_handle_t *)&srv->idle)) {
        rc = uv_idle_start(&srv->idle, server_idle_cb);
        if (rc < 0)
            log_warn("cannot start idle handle: %s", uv_strerror(rc));
    }
}

static void
conn_enqueue(struct http_conn *conn, struct http_out *out)
{
    out->next = NULL;
    if (conn->out_tail)
        conn->out_tail->next = out;
    else
        conn->out_head = out;
    conn->out_tail = out;
    conn->nout++;
}

static struct http_out *
conn_dequeue(struct http_conn *conn)
{
    struct http_out *out = conn->out_head;

    if (out == NULL)
        return NULL;
    conn->out_head = out->next;
    if (conn->out_head == NULL)
        conn->out_tail = NULL;
    conn->nout--;
    out->next = NULL;
    return out;
}

static bool
conn_should_pause(const struct http_conn *conn)
{
    return conn->nout >= HTTP_PIPELINE_MAX ||
        conn->h.stream.write_queue_size > HTTP_WRITE_HIGH;
}

static void
conn_timer_restart(struct http_conn *conn)
{
    int rc;

    if (conn->closing || conn->lingering)
        return;
    if (conn->ndeferred > 0) {
        uv_timer_stop(&conn->timer);
        return;
    }
    /* The loop's clock was read before this iteration's callbacks; a
     * slow handler or commit must not shorten the timeout. */
    uv_update_time(conn->srv->loop);
    conn->timer_wq = conn->h.stream.write_queue_size;
    rc = uv_timer_start(&conn->timer, conn_timer_cb, conn->srv->idle_ms, 0);
    if (rc < 0)
        log_warn("conn=%lu cannot start timer: %s", conn->id,
            uv_strerror(rc));
}

static void
conn_write_cb(uv_write_t *req, int status)
{
    struct http_write *w = container_of(req, struct http_write, req);
    struct http_conn *conn = container_of(req->handle, struct http_conn,
        h.stream);

    free(w->head);
    free(w->body);
    free(w);
    if (status == UV_ECANCELED || conn->closing)
        return;
    if (status < 0) {
        log_debug("conn=%lu write failed: %s", conn->id,
            uv_strerror(status));
        conn_close(conn);
        return;
    }
    conn_timer_restart(conn);
    /* The kernel took more bytes: reading may go on. */
    conn_resume(conn);
}

/* Write head (and body, when not NULL); takes ownership of both. */
static int
conn_write(struct http_conn *conn, char *head, size_t hlen, char *body,
    size_t blen)
{
    struct http_write *w = xmalloc(sizeof(*w));
    uv_buf_t bufs[2];
    unsigned n = 0;
    int rc;

    w->head = head;
    w->body = body;
    bufs[n++] = uv_buf_init(head, (unsigned)hlen);
    if (body != NULL && blen > 0)
        bufs[n++] = uv_buf_init(body, (unsigned)blen);
    rc = uv_write(&w->req, &conn->h.stream, bufs, n, conn_write_cb);
    if (rc < 0) {
        free(w->head);
        free(w->body);
        free(w);
    }
    return rc;
}

static int
conn_write_out(struct http_conn *conn, struct http_out *out)
{
    struct http_resp *resp = &out->resp;
    struct sbuf head;
    const char *reason;
    char *h, *b = NULL;
    size_t hlen, blen = 0;

    reason = http_status_str((enum http_status)resp->status);
    sbuf_init(&head);
    sbuf_addf(&head,
        "HTTP/1.1 %d %s\r\n"
        "Content-Type: %s\r\n"
        "Content-Length: %zu\r\n"
        "%s"
        "Connection: %s\r\n"
        "\r\n",
        resp->status, reason,
        resp->content_type ? resp->content_type : "application/json",
        resp->body.len, resp->headers.buf,
        out->keep_alive ? "keep-alive" : "close");
    log_debug("conn=%lu %s status=%d", conn->id, out->what, resp->status);
    h = sbuf_detach(&head, &hlen);
    if (!out->head)
        b = sbuf_detach(&resp->body, &blen);
    return conn_write(conn, h, hlen, b, blen);
}

static void
conn_shutdown_cb(uv_shutdown_t *req, int status)
{
    struct http_conn *conn = container_of(req, struct http_conn,
        shutdown_req);
    int rc;

    if (status == UV_ECANCELED || conn->closing)
        return;
    if (status < 0 || conn->peer_eof) {
        conn_close(conn);
        return;
    }
    /* Read and drop what the peer still sends until it closes too. */
    conn->lingering = true;
    rc = uv_timer_start(&conn->timer, conn_timer_cb, HTTP_LINGER_MS, 0);
    if (rc < 0) {
        conn_close(conn);
        return;
    }
    conn_read_start(conn);
}

static void
conn_shutdown(struct http_conn *conn)
{
    int rc;

    if (conn->shut || conn->closing)
        return;
    conn->shut = true;
    conn->close_after = true;
    rc = uv_shutdown(&conn->shutdown_req, &conn->h.stream, conn_shutdown_cb);
    if (rc < 0) {
        log_debug("conn=%lu cannot shut down: %s", conn->id,
            uv_strerror(rc));
        conn_close(conn);
    }
}

/* Decide the outcome of every response that became ready since the last
 * flush: a durable one stands only if that flush committed. */
static void
conn_settle(struct http_conn *conn, int flush_rc)
{
    for (struct http_out *out = conn->out_head; out; out = out->next) {
        if (out->state != HTTP_OUT_READY || out->settled)
            continue;
        if (flush_rc < 0 && out->resp.durable) {
            sbuf_reset(&out->resp.headers);
            http_resp_error(&out->resp, 503, "unavailable",
                "cannot commit: %s", strerror(-flush_rc));
            out->resp.durable = false;
        }
        out->settled = true;
    }
}

/* Write settled responses from the head of the queue, stopping at one
 * that is not ready (a deferred response keeps the order). */
static void
conn_write_ready(struct http_conn *conn)
{
    struct http_out *out;
    bool keep;
    int rc;

    while (!conn->closing && (out = conn->out_head) != NULL &&
        out->state == HTTP_OUT_READY && out->settled) {
        conn_dequeue(conn);
        keep = out->keep_alive;
        rc = conn_write_out(conn, out);
        out_destroy(out);
        if (rc < 0) {
            log_debug("conn=%lu cannot write: %s", conn->id,
                uv_strerror(rc));
            conn_close(conn);
            return;
        }
        if (!keep) {
            /* The last response: nothing was parsed after it. */
            assert(conn->out_head == NULL);
            conn_shutdown(conn);
            return;
        }
        /* Idle time counts from the last response, not the request. */
        conn_timer_restart(conn);
    }
}

/* Queue a response the server makes itself (a malformed request, a limit)
 * and close the connection after it. */
static void
conn_reject(struct http_conn *conn, int status, const char *code,
    const char *msg)
{
    struct http_out *out;

    log_debug("conn=%lu rejected status=%d: %s", conn->id, status, msg);
    out = out_create(conn, xstrdup("(rejected)"));
    http_resp_error(&out->resp, status, code, "%s%s",
        status == 400 && strcmp(code, "bad_request") == 0 ?
        "malformed HTTP request: " : "", msg);
    out->keep_alive = false;
    out->state = HTTP_OUT_READY;
    conn_enqueue(conn, out);
    conn->close_after = true;
    conn_mark_dirty(conn);
}

/* --- connections: input -------------------------------------------------- */

static void
conn_alloc_cb(uv_handle_t *handle, size_t suggested, uv_buf_t *buf)
{
    struct http_conn *conn = container_of(handle, struct http_conn,
        h.handle);

    (void)suggested;
    *buf = uv_buf_init(conn->srv->rbuf, sizeof(conn->srv->rbuf));
}

static void
conn_eof(struct http_conn *conn)
{
    conn->peer_eof = true;
    conn_read_stop(conn);
    if (conn->shut) {
        /* Shut down already: close now if that completed, else when it
         * does (conn_shutdown_cb sees peer_eof). */
        if (conn->lingering)
            conn_close(conn);
        return;
    }
    if (conn->ndeferred > 0) {
        /* A long poller went away: nobody waits for its answer. */
        conn_close(conn);
        return;
    }
    /* The peer may only have shut down its sending side: answer what it
     * asked, then close. A partly received request is dropped. */
    conn->close_after = true;
    if (conn->out_tail != NULL)
        conn->out_tail->keep_alive = false;
    else
        conn_shutdown(conn);
}

static void
conn_read_cb(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
    struct http_conn *conn = container_of(stream, struct http_conn,
        h.stream);

    if (conn->closing || nread == 0)
        return;
    if (nread < 0) {
        if (nread == UV_EOF) {
            conn_eof(conn);
        } else {
            log_debug("conn=%lu read failed: %s", conn->id,
                uv_strerror((int)nread));
            conn_close(conn);
        }
        return;
    }
    conn_timer_restart(conn);
    /* After the last request, input is read only to notice the close. */
    if (conn->close_after)
        return;
    conn_parse(conn, buf->base, (size_t)nread);
}

static void
conn_read_start(struct http_conn *conn)
{
    int rc;

    if (conn->reading || conn->closing || conn->peer_eof)
        return;
    rc = uv_read_start(&conn->h.stream, conn_alloc_cb, conn_read_cb);
    if (rc < 0) {
        log_debug("conn=%lu cannot read: %s", conn->id, uv_strerror(rc));
        conn_close(conn);
        return;
    }
    conn->reading = true;
}

static void
conn_read_stop(struct http_conn *conn)
{
    if (!conn->reading)
        return;
    uv_read_stop(&conn->h.stream);
    conn->reading = false;
}

/* Parse what was held back while paused, once the queue has drained. */
static void
conn_resume(struct http_conn *conn)
{
    char *buf;
    size_t len;

    if (!conn->paused || conn->closing || conn_should_pause(conn))
        return;
    conn->paused = false;
    log_debug("conn=%lu resumed", conn->id);
    http_parser_pause(&conn->parser, 0);
    buf = sbuf_detach(&conn->inbuf, &len);
    if (!conn->close_after)
        conn_parse(conn, buf, len);
    free(buf);
    if (!conn->closing && !conn->paused)
        conn_read_start(conn);
}

static int
conn_fail(struct http_conn *conn, int status, const char *code,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Record why a parser callback failed; returns -1 for the parser. */
static int
conn_fail(struct http_conn *conn, int status, const char *code,
    const char *fmt, ...)
{
    va_list ap;

    conn->fail_status = status;
    conn->fail_code = code;
    va_start(ap, fmt);
    vsnprintf(conn->fail_msg, sizeof(conn->fail_msg), fmt, ap);
    va_end(ap);
    return -1;
}

static int
hex_digit(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decode %XX in a path. Returns -EINVAL on a bad escape or a control
 * character, which no route and no log line should ever see. */
static int
path_decode(const char *s, size_t n, struct sbuf *out)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];

        if (c == '%') {
            int hi, lo;

            if (i + 2 >= n)
                return -EINVAL;
            hi = hex_digit((unsigned char)s[i + 1]);
            lo = hex_digit((unsigned char)s[i + 2]);
            if (hi < 0 || lo < 0)
                return -EINVAL;
            c = (unsigned char)(hi * 16 + lo);
            i += 2;
        }
        if (c < 0x20 || c == 0x7f)
            return -EINVAL;
        sbuf_addch(out, (char)c);
    }
    return 0;
}

static int
parser_message_begin_cb(http_parser *p)
{
    struct http_conn *conn = p->data;

    sbuf_reset(&conn->url);
    sbuf_reset(&conn->hname);
    sbuf_reset(&conn->hval);
    sbuf_reset(&conn->body);
    free(conn->authorization);
    conn->authorization = NULL;
    free(conn->content_type);
    conn->content_type = NULL;
    conn->in_value = false;
    conn->expect_continue = false;
    return 0;
}

static int
parser_url_cb(http_parser *p, const char *at, size_t len)
{
    struct http_conn *conn = p->data;

    sbuf_add(&conn->url, at, len);
    return 0;
}

static void
conn_header_done(struct http_conn *conn)
{
    char *v = conn->hval.buf;
    size_t n = conn->hval.len;

    while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
        v[--n] = '\0';
    if (strcasecmp(conn->hname.buf, "authorization") == 0) {
        if (conn->authorization == NULL)
            conn->authorization = xstrdup(v);
    } else if (strcasecmp(conn->hname.buf, "content-type") == 0) {
        if (conn->content_type == NULL)
            conn->content_type = xstrdup(v);
    } else if (strcasecmp(conn->hname.buf, "expect") == 0) {
        conn->expect_continue = strcasecmp(v, "100-continue") == 0;
    }
}

static int
parser_header_field_cb(http_parser *p, const char *at, size_t len)
{
    struct http_conn *conn = p->data;

    if (conn->in_value) {
        conn_header_done(conn);
        conn->in_value = false;
        sbuf_reset(&conn->hname);
        sbuf_reset(&conn->hval);
    }
    sbuf_add(&conn->hname, at, len);
    return 0;
}

static int
parser_header_value_cb(http_parser *p, const char *at, size_t len)
{
    struct http_conn *conn = p->data;

    conn->in_value = true;
    sbuf_add(&conn->hval, at, len);
    return 0;
}

static int
parser_headers_complete_cb(http_parser *p)
{
    static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
    struct http_conn *conn = p->data;
    size_t max = conn->srv->max_body;
    int rc;

    if (conn->in_value) {
        conn_header_done(conn);
        conn->in_value = false;
    }
    if (p->method == HTTP_CONNECT)
        return conn_fail(conn, 405, "method_not_allowed",
            "method CONNECT is not supported");
    /* Refuse an announced oversized body before any of it is read. */
    if ((p->flags & F_CONTENTLENGTH) && p->content_length > max)
        return conn_fail(conn, 413, "too_large",
            "request body of %llu bytes is over the limit of %zu bytes",
            (unsigned long long)p->content_length, max);
    /* A client waiting for "100 Continue" (curl does for large bodies)
     * gets it at once, unless earlier responses are still queued: an
     * interim response must not overtake them. It then sends the body
     * after its own timeout. */
    if (conn->expect_continue && p->http_major == 1 && p->http_minor >= 1 &&
        conn->nout == 0) {
        rc = conn_write(conn, xstrdup(cont), sizeof(cont) - 1, NULL, 0);
        if (rc < 0)
            return conn_fail(conn, 500, "internal",
                "cannot write 100 Continue: %s", uv_strerror(rc));
    }
    return 0;
}

static int
parser_body_cb(http_parser *p, const char *at, size_t len)
{
    struct http_conn *conn = p->data;
    size_t max = conn->srv->max_body;

    if (len > max - conn->body.len)
        return conn_fail(conn, 413, "too_large",
            "request body is over the limit of %zu bytes", max);
    sbuf_add(&conn->body, at, len);
    return 0;
}

/* A complete request: hand it to the handler and queue its response. */
static int
parser_message_complete_cb(http_parser *p)
{
    struct http_conn *conn = p->data;
    struct http_server *srv = conn->srv;
    struct http_parser_url u;
    struct http_req req;
    struct http_out *out;
    struct sbuf path, query;
    const char *method = http_method_str((enum http_method)p->method);

    sbuf_init(&path);
    sbuf_init(&query);
    http_parser_url_init(&u);
    if (http_parser_parse_url(conn->url.buf, conn->url.len, 0, &u) != 0)
        return conn_fail(conn, 400, "bad_request",
            "invalid request target");
    if (u.field_set & (1 << UF_PATH)) {
        if (path_decode(conn->url.buf + u.field_data[UF_PATH].off,
                u.field_data[UF_PATH].len, &path) < 0) {
            sbuf_release(&path);
            return conn_fail(conn, 400, "bad_request",
                "invalid escape or character in request path");
        }
    }
    if (path.len == 0 || path.buf[0] != '/') {
        sbuf_release(&path);
        return conn_fail(conn, 400, "bad_request",
            "request path must start with '/'");
    }
    if (u.field_set & (1 << UF_QUERY))
        sbuf_add(&query, conn->url.buf + u.field_data[UF_QUERY].off,
            u.field_data[UF_QUERY].len);

    memset(&req, 0, sizeof(req));
    req.method = method;
    req.path = path.buf;
    req.query = query.buf;
    req.body = conn->body.buf;
    req.body_len = conn->body.len;
    req.authorization = conn->authorization;
    req.content_type = conn->content_type;
    req.is_unix = conn->is_unix;
    req.peer_uid = conn->uid;
    req.peer_gid = conn->gid;
    req.peer_pid = conn->pid;
    req.conn = conn;

    /* The log names the path as sent (still %-encoded: one line). */
    out = out_create(conn, xasprintf("%s %.*s", method,
        (int)u.field_data[UF_PATH].len,
        conn->url.buf + u.field_data[UF_PATH].off));
    out->keep_alive = http_should_keep_alive(p) != 0;
    out->head = p->method == HTTP_HEAD;
    srv->handler(&req, &out->resp, srv->arg);
    sbuf_release(&path);
    sbuf_release(&query);

    if (conn->closing) {
        /* The handler closed the server, and this connection with it. */
        if (out->deferred && out->d.cancel)
            out->d.cancel(&out->d, out->d.arg);
        out_destroy(out);
        return -1;
    }
    conn_enqueue(conn, out);
    if (out->deferred) {
        out->state = HTTP_OUT_DEFERRED;
        conn->ndeferred++;
        uv_timer_stop(&conn->timer);
    } else {
        out->state = HTTP_OUT_READY;
        conn_mark_dirty(conn);
    }
    if (!out->keep_alive) {
        conn->close_after = true;
        http_parser_pause(p, 1);
    } else if (conn_should_pause(conn)) {
        http_parser_pause(p, 1);
    }
    return 0;
}

static const http_parser_settings parser_settings = {
    .on_message_begin = parser_message_begin_cb,
    .on_url = parser_url_cb,
    .on_header_field = parser_header_field_cb,
    .on_header_value = parser_header_value_cb,
    .on_headers_complete = parser_headers_complete_cb,
    .on_body = parser_body_cb,
    .on_message_complete = parser_message_complete_cb,
};

static void
conn_parse(struct http_conn *conn, const char *data, size_t len)
{
    size_t off = 0, n;
    enum http_errno e;

    while (off < len) {
        n = http_parser_execute(&conn->parser, &parser_settings,
            data + off, len - off);
        if (conn->closing)
            return;
        e = HTTP_PARSER_ERRNO(&conn->parser);
        off += n;
        if (e == HPE_PAUSED) {
            if (conn->close_after)
                return;     /* nothing after the last request counts */
            /* Backpressure: keep the rest and stop reading. */
            log_debug("conn=%lu paused: %zu responses queued, %zu bytes "
                "unsent", conn->id, conn->nout,
                conn->h.stream.write_queue_size);
            sbuf_add(&conn->inbuf, data + off, len - off);
            conn->paused = true;
            conn_read_stop(conn);
            return;
        }
        if (e != HPE_OK) {
            if (conn->fail_status != 0)
                conn_reject(conn, conn->fail_status, conn->fail_code,
                    conn->fail_msg);
            else if (e == HPE_HEADER_OVERFLOW)
                conn_reject(conn, 431, "too_large",
                    "request header block is over the limit of "
                    HTTP_MAX_HEADER_STR " bytes");
            else
                conn_reject(conn, 400, "bad_request",
                    http_errno_description(e));
            return;
        }
        /* A request with "Upgrade:" makes the parser stop after it; we do
         * not upgrade, so go on with the next request. */
        if (n == 0)
            break;
    }
}

/* --- connections: lifetime ----------------------------------------------- */

static void
conn_destroy(struct http_conn *conn)
{
    assert(conn->out_head == NULL);
    sbuf_release(&conn->url);
    sbuf_release(&conn->hname);
    sbuf_release(&conn->hval);
    sbuf_release(&conn->body);
    sbuf_release(&conn->inbuf);
    free(conn->authorization);
    free(conn->content_type);
    free(conn);
}

static void
conn_handle_closed(struct http_conn *conn)
{
    struct http_server *srv = conn->srv;

    if (--conn->nhandles == 0)
        conn_destroy(conn);
    server_handle_closed(srv);
}

static void
conn_stream_close_cb(uv_handle_t *handle)
{
    conn_handle_closed(container_of(handle, struct http_conn, h.handle));
}

static void
conn_timer_close_cb(uv_handle_t *handle)
{
    conn_handle_closed(container_of((uv_timer_t *)handle, struct http_conn,
        timer));
}

static void
conn_close(struct http_conn *conn)
{
    struct http_out *out;

    if (conn->closing)
        return;
    conn->closing = true;
    http_list_remove(&conn->node);
    http_list_remove(&conn->dirty);
    conn->is_dirty = false;
    conn->srv->nconns--;
    log_debug("conn=%lu closed", conn->id);
    /* Each deferred response is either finished or cancelled, once. A
     * cancel callback may finish others of this queue; those are then
     * simply dropped. */
    while ((out = conn_dequeue(conn)) != NULL) {
        if (out->state == HTTP_OUT_DEFERRED) {
            out->state = HTTP_OUT_CANCELLED;
            conn->ndeferred--;
            if (out->d.cancel)
                out->d.cancel(&out->d, out->d.arg);
        }
        out_destroy(out);
    }
    uv_close(&conn->h.handle, conn_stream_close_cb);
    uv_close((uv_handle_t *)&conn->timer, conn_timer_close_cb);
}

static void
conn_timer_cb(uv_timer_t *timer)
{
    struct http_conn *conn = container_of(timer, struct http_conn, timer);
    size_t wq = conn->h.stream.write_queue_size;

    /* A large response to a slow reader completes its write request only
     * at the very end; the peer is not idle while the unsent part
     * shrinks. */
    if (!conn->lingering && wq > 0 && wq < conn->timer_wq) {
        conn_timer_restart(conn);
        return;
    }
    if (!conn->lingering)
        log_debug("conn=%lu idle timeout", conn->id);
    conn_close(conn);
}

static void
listener_connection_cb(uv_stream_t *stream, int status)
{
    struct http_listener *l = container_of(stream, struct http_listener,
        h.stream);
    struct http_server *srv = l->srv;
    struct http_conn *conn;
    int rc;

    if (status < 0) {
        log_warn("cannot accept a connection: %s", uv_strerror(status));
        return;
    }
    if (srv->closing)
        return;
    conn = xcalloc(1, sizeof(*conn));
    conn->srv = srv;
    conn->id = ++srv->next_id;
    conn->is_unix = l->is_unix;
    /* Meaningless over TCP, and never root should a handler forget to
     * look at is_unix. */
    conn->uid = (uid_t)-1;
    conn->gid = (gid_t)-1;
    conn->pid = -1;
    http_list_init(&conn->node);
    http_list_init(&conn->dirty);
    sbuf_init(&conn->url);
    sbuf_init(&conn->hname);
    sbuf_init(&conn->hval);
    sbuf_init(&conn->body);
    sbuf_init(&conn->inbuf);
    http_parser_init(&conn->parser, HTTP_REQUEST);
    conn->parser.data = conn;

    rc = l->is_unix ? uv_pipe_init(srv->loop, &conn->h.pipe, 0)
                    : uv_tcp_init(srv->loop, &conn->h.tcp);
    if (rc < 0) {
        log_warn("cannot accept a connection: %s", uv_strerror(rc));
        conn_destroy(conn);
        return;
    }
    rc = uv_timer_init(srv->loop, &conn->timer);
    assert(rc == 0);    /* uv_timer_init cannot fail */
    conn->nhandles = 2;
    srv->nhandles += 2;
    http_list_add_tail(&srv->conns, &conn->node);
    srv->nconns++;

    rc = uv_accept(stream, &conn->h.stream);
    if (rc < 0) {
        log_warn("cannot accept a connection: %s", uv_strerror(rc));
        conn_close(conn);
        return;
    }
    if (l->is_unix) {
        struct ucred cred;
        socklen_t len = sizeof(cred);
        uv_os_fd_t fd;

        rc = uv_fileno(&conn->h.handle, &fd);
        if (rc == 0 && getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred,
                &len) < 0)
            rc = -errno;
        if (rc < 0) {
            log_warn("cannot get peer credentials: %s", strerror(-rc));
            conn_close(conn);
            return;
        }
        conn->uid = cred.uid;
        conn->gid = cred.gid;
        conn->pid = cred.pid;
        log_debug("conn=%lu accepted unix uid=%ld pid=%ld", conn->id,
            (long)cred.uid, (long)cred.pid);
    } else {
        /* Small responses are written whole; do not let Nagle hold the
         * last segment of one back waiting for an ACK. */
        rc = uv_tcp_nodelay(&conn->h.tcp, 1);
        if (rc < 0)
            log_debug("conn=%lu cannot set TCP_NODELAY: %s", conn->id,
                uv_strerror(rc));
        log_debug("conn=%lu accepted tcp", conn->id);
    }
    conn_timer_restart(conn);
    conn_read_start(conn);
}

/* --- group commit -------------------------------------------------------- */

static void
server_check_cb(uv_check_t *check)
{
    struct http_server *srv = container_of(check, struct http_server, check);
    struct http_list batch;
    struct http_conn *conn;
    int rc = 0;

    if (http_list_empty(&srv->dirty)) {
        uv_idle_stop(&srv->idle);
        return;
    }
    /* Everything that became ready up to now shares this flush. Anything
     * queued while we work (a resumed connection) waits for the next. */
    http_list_move(&srv->dirty, &batch);
    if (srv->flush != NULL) {
        rc = srv->flush(srv->arg);
        if (rc < 0)
            log_warn("cannot commit, durable responses fail with 503: %s",
                strerror(-rc));
    }
    while (!http_list_empty(&batch)) {
        conn = container_of(batch.next, struct http_conn, dirty);
        http_list_remove(&conn->dirty);
        conn->is_dirty = false;
        if (conn->closing)
            continue;
        conn_settle(conn, rc);
        conn_write_ready(conn);
        if (!conn->closing)
            conn_resume(conn);
    }
    if (http_list_empty(&srv->dirty))
        uv_idle_stop(&srv->idle);
}

/* --- server -------------------------------------------------------------- */

struct http_server *
http_server_create(uv_loop_t *loop, const struct http_server_opts *opts,
    http_handler_fn *handler, http_flush_fn *flush, void *arg,
    struct err *err)
{
    struct http_server *srv;
    int rc;

    if (loop == NULL || handler == NULL) {
        err_set(err, -EINVAL, "cannot create HTTP server: no loop or handler");
        return NULL;
    }
    srv = xcalloc(1, sizeof(*srv));
    srv->loop = loop;
    srv->max_body = opts && opts->max_body ? opts->max_body
                                           : HTTP_DEFAULT_MAX_BODY;
    srv->idle_ms = opts && opts->idle_timeout_ms > 0
        ? (uint64_t)opts->idle_timeout_ms : HTTP_DEFAULT_IDLE_MS;
    srv->handler = handler;
    srv->flush = flush;
    srv->arg = arg;
    http_list_init(&srv->listeners);
    http_list_init(&srv->conns);
    http_list_init(&srv->dirty);

    rc = uv_check_init(loop, &srv->check);
    if (rc == 0)
        rc = uv_idle_init(loop, &srv->idle);
    if (rc < 0) {
        /* Both inits only add the handle to the loop's list and cannot
         * fail on Unix; nothing would be left to undo here. */
        err_set(err, rc, "cannot create HTTP server: %s", uv_strerror(rc));
        free(srv);
        return NULL;
    }
    srv->nhandles = 2;
    /* The check handle runs every iteration but must not keep the loop
     * alive on its own; neither must the idle handle. */
    rc = uv_check_start(&srv->check, server_check_cb);
    assert(rc == 0);
    uv_unref((uv_handle_t *)&srv->check);
    uv_unref((uv_handle_t *)&srv->idle);

    /* Process-wide settings, made here because the server cannot work
     * without them: a peer that closes while we write must cost only its
     * connection (EPIPE), not the process (SIGPIPE); and the header limit
     * of http_parser is a global (the scheduler has no other user). */
    signal(SIGPIPE, SIG_IGN);
    http_parser_set_max_header_size(HTTP_MAX_HEADER);
    return srv;
}

size_t
http_server_nconns(const struct http_server *srv)
{
    return srv->nconns;
}

static void
listener_close_cb(uv_handle_t *handle)
{
    struct http_listener *l = container_of(handle, struct http_listener,
        h.handle);
    struct http_server *srv = l->srv;

    free(l->path);
    free(l);
    server_handle_closed(srv);
}

static void
listener_close(struct http_listener *l)
{
    http_list_remove(&l->node);
    if (l->path != NULL && unlink(l->path) < 0 && errno != ENOENT)
        log_warn("cannot remove socket '%s': %s", l->path, strerror(errno));
    uv_close(&l->h.handle, listener_close_cb);
}

static struct http_listener *
listener_create(struct http_server *srv, bool is_unix)
{
    struct http_listener *l = xcalloc(1, sizeof(*l));

    l->srv = srv;
    l->is_unix = is_unix;
    http_list_init(&l->node);
    return l;
}

int
http_server_listen_tcp(struct http_server *srv, const char *host, int port,
    int *bound_port, struct err *err)
{
    struct addrinfo hints, *res = NULL;
    struct http_listener *l;
    struct sockaddr_storage ss;
    int sslen = sizeof(ss);
    char addr[300], portstr[16];
    int rc, g;

    if (host == NULL || *host == '\0')
        host = "0.0.0.0";
    snprintf(addr, sizeof(addr), strchr(host, ':') ? "[%s]:%d" : "%s:%d",
        host, port);
    if (srv->closing)
        return err_set(err, -EINVAL, "cannot listen on %s: server is "
            "closing", addr);
    if (port < 0 || port > 65535)
        return err_set(err, -EINVAL, "cannot listen on %s: invalid port",
            addr);
    snprintf(portstr, sizeof(portstr), "%d", port);
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    g = getaddrinfo(host, portstr, &hints, &res);
    if (g != 0) {
        rc = g == EAI_SYSTEM ? -errno : -EINVAL;
        return err_set(err, rc, "cannot listen on %s: %s", addr,
            g == EAI_SYSTEM ? strerror(-rc) : gai_strerror(g));
    }

    l = listener_create(srv, false);
    rc = uv_tcp_init(srv->loop, &l->h.tcp);
    if (rc < 0) {
        freeaddrinfo(res);
        free(l);
        return err_set(err, rc, "cannot listen on %s: %s", addr,
            uv_strerror(rc));
    }
    srv->nhandles++;
    rc = uv_tcp_bind(&l->h.tcp, res->ai_addr, 0);
    freeaddrinfo(res);
    if (rc == 0)
        rc = uv_listen(&l->h.stream, HTTP_BACKLOG, listener_connection_cb);
    if (rc == 0)
        rc = uv_tcp_getsockname(&l->h.tcp, (struct sockaddr *)&ss, &sslen);
    if (rc < 0) {
        listener_close(l);
        return err_set(err, rc, "cannot listen on %s: %s", addr,
            uv_strerror(rc));
    }
    if (ss.ss_family == AF_INET6)
        port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    else
        port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
    if (bound_port)
        *bound_port = port;
    http_list_add_tail(&srv->listeners, &l->node);
    log_debug("listening on %s (port %d)", addr, port);
    return 0;
}

/* Remove a socket file nobody answers on. A live one is EADDRINUSE, a
 * file that is not a socket EEXIST. */
static int
unix_remove_stale(const char *path, struct err *err)
{
    struct sockaddr_un sa;
    struct stat st;
    int fd, rc;

    if (lstat(path, &st) < 0) {
        if (errno == ENOENT)
            return 0;
        rc = -errno;
        return err_set(err, rc, "cannot listen on '%s': %s", path,
            strerror(-rc));
    }
    if (!S_ISSOCK(st.st_mode))
        return err_set(err, -EEXIST, "cannot listen on '%s': file exists "
            "and is not a socket", path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        rc = -errno;
        return err_set(err, rc, "cannot listen on '%s': %s", path,
            strerror(-rc));
    }
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    memcpy(sa.sun_path, path, strlen(path) + 1);
    /* Non-blocking, so a live server with a full backlog (EAGAIN) cannot
     * hang us; it counts as live. */
    rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? -errno : 0;
    close(fd);
    if (rc == 0 || rc == -EAGAIN)
        return err_set(err, -EADDRINUSE, "cannot listen on '%s': a server "
            "already answers there", path);
    if (rc != -ECONNREFUSED)
        return err_set(err, rc, "cannot listen on '%s': %s", path,
            strerror(-rc));
    if (unlink(path) < 0 && errno != ENOENT) {
        rc = -errno;
        return err_set(err, rc, "cannot remove stale socket '%s': %s", path,
            strerror(-rc));
    }
    log_debug("removed stale socket '%s'", path);
    return 0;
}

int
http_server_listen_unix(struct http_server *srv, const char *path,
    struct err *err)
{
    struct sockaddr_un sa;
    struct http_listener *l;
    int rc;

    if (srv->closing)
        return err_set(err, -EINVAL, "cannot listen on '%s': server is "
            "closing", path);
    if (path == NULL || *path == '\0' || strlen(path) >= sizeof(sa.sun_path))
        return err_set(err, -ENAMETOOLONG, "cannot listen on '%s': path "
            "is empty or longer than %zu bytes", path ? path : "",
            sizeof(sa.sun_path) - 1);
    rc = unix_remove_stale(path, err);
    if (rc < 0)
        return rc;

    l = listener_create(srv, true);
    rc = uv_pipe_init(srv->loop, &l->h.pipe, 0);
    if (rc < 0) {
        free(l);
        return err_set(err, rc, "cannot listen on '%s': %s", path,
            uv_strerror(rc));
    }
    srv->nhandles++;
    rc = uv_pipe_bind(&l->h.pipe, path);
    if (rc < 0) {
        listener_close(l);
        return err_set(err, rc, "cannot listen on '%s': %s", path,
            uv_strerror(rc));
    }
    /* From here on closing the listener removes the file. */
    l->path = xstrdup(path);
    /* Anyone may connect: identity comes from SO_PEERCRED. */
    if (chmod(path, 0666) < 0) {
        rc = -errno;
        listener_close(l);
        return err_set(err, rc, "cannot chmod '%s': %s", path,
            strerror(-rc));
    }
    rc = uv_listen(&l->h.stream, HTTP_BACKLOG, listener_connection_cb);
    if (rc < 0) {
        listener_close(l);
        return err_set(err, rc, "cannot listen on '%s': %s", path,
            uv_strerror(rc));
    }
    http_list_add_tail(&srv->listeners, &l->node);
    log_debug("listening on '%s'", path);
    return 0;
}

static void
server_check_close_cb(uv_handle_t *handle)
{
    server_handle_closed(container_of((uv_check_t *)handle,
        struct http_server, check));
}

static void
server_idle_close_cb(uv_handle_t *handle)
{
    server_handle_closed(container_of((uv_idle_t *)handle,
        struct http_server, idle));
}

void
http_server_close(struct http_server *srv, void (*done)(void *), void *arg)
{
    assert(!srv->closing);
    srv->closing = true;
    srv->done = done;
    srv->done_arg = arg;
    while (!http_list_empty(&srv->listeners))
        listener_close(container_of(srv->listeners.next,
            struct http_listener, node));
    while (!http_list_empty(&srv->conns))
        conn_close(container_of(srv->conns.next, struct http_conn, node));
    uv_close((uv_handle_t *)&srv->check, server_check_close_cb);
    uv_close((uv_handle_t *)&srv->idle, server_idle_close_cb);
}

/* --- request helpers ----------------------------------------------------- */

/* The next decoded byte of a query component ('+' is a space, %XX a byte;
 * a malformed escape or %00 stays literal). */
static int
query_next(const char **s, const char *end)
{
    const char *p = *s;
    int hi, lo;

    if (*p == '+') {
        *s = p + 1;
        return ' ';
    }
    if (*p == '%' && end - p >= 3) {
        hi = hex_digit((unsigned char)p[1]);
        lo = hex_digit((unsigned char)p[2]);
        if (hi >= 0 && lo >= 0 && (hi | lo) != 0) {
            *s = p + 3;
            return hi * 16 + lo;
        }
    }
    *s = p + 1;
    return (unsigned char)*p;
}

static bool
query_name_is(const char *s, const char *end, const char *key)
{
    while (s < end) {
        if (*key == '\0' || query_next(&s, end) != (unsigned char)*key)
            return false;
        key++;
    }
    return *key == '\0';
}

const char *
http_query_get(const struct http_req *req, const char *key, char *buf,
    size_t len)
{
    const char *q = req->query, *end, *eq, *v;
    size_t n;

    if (q == NULL || key == NULL || buf == NULL || len == 0)
        return NULL;
    while (*q != '\0') {
        end = strchr(q, '&');
        if (end == NULL)
            end = q + strlen(q);
        eq = memchr(q, '=', (size_t)(end - q));
        if (query_name_is(q, eq ? eq : end, key)) {
            n = 0;
            for (v = eq ? eq + 1 : end; v < end;) {
                if (n + 1 >= len)
                    return NULL;
                buf[n++] = (char)query_next(&v, end);
            }
            buf[n] = '\0';
            return buf;
        }
        q = *end ? end + 1 : end;
    }
    return NULL;
}
