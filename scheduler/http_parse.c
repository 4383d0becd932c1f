/*
 * http_parse.c - turning a connection's input into requests
 *
 * http_parser calls back for each piece of a request; the pieces collect
 * in the connection (URL, the few headers we use, the body) and a
 * complete request goes to the server's handler at once, with a response
 * slot queued behind the ones before it. The limits live here: CONNECT is
 * refused (405), an announced or actual body over max_body gets 413 before
 * more of it is kept, a header block over HTTP_MAX_HEADER gets 431, and
 * malformed HTTP gets 400; each ends the connection after the reply.
 *
 * A parser callback that fails records why in the connection (conn_fail)
 * and returns -1; http_conn_parse() turns that into the rejection.
 */
#include "scheduler/http_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/log.h"
#include "common/xalloc.h"

static int conn_fail(struct http_conn *conn, int status, const char *code,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Record why a parser callback failed; returns -1 for the parser. */
/* A complete request head arrived on conn: it is evictable no more. */
static void
conn_head_seen(struct http_conn *conn)
{
    conn->seen_head = true;
    http_list_remove(&conn->headless);
}

static int
conn_fail(struct http_conn *conn, int status, const char *code, const char *fmt,
    ...)
{
    va_list ap;

    conn->fail_status = status;
    conn->fail_code = code;
    va_start(ap, fmt);
    vsnprintf(conn->fail_msg, sizeof(conn->fail_msg), fmt, ap);
    va_end(ap);
    return -1;
}

/* --- request head -------------------------------------------------------- */

/* A restricted connection's request without credentials: 503. */
static int
conn_restricted_fail(struct http_conn *conn)
{
    char what[96];

    conn->srv->st.refused[conn->why]++;
    snprintf(what, sizeof(what), "refused a request from %s (%s cap)",
        conn->peer[0] ? conn->peer : "?", http_refusal_name(conn->why));
    http_server_log_refusal(conn->srv, what);
    return conn_fail(conn, 503, "overloaded",
        "too many connections (%s cap); retry later",
        http_refusal_name(conn->why));
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
    /* The head is due from its first byte (from the accept for the
     * connection's first request). */
    if (conn->phase != HTTP_PHASE_HEAD) {
        conn->phase = HTTP_PHASE_HEAD;
        conn->phase_since = uv_now(conn->srv->loop);
    }
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
    conn_head_seen(conn);
    conn->phase = HTTP_PHASE_BODY;
    conn->phase_since = uv_now(conn->srv->loop);
    if (p->method == HTTP_CONNECT)
        return conn_fail(conn, 405, "method_not_allowed",
            "method CONNECT is not supported");
    /* A connection in the agents' reserve carries agents' and operators'
     * requests only (http_caps.h): the handler checks the credential
     * itself, and refuses a user's (http_conn_refuse_restricted). */
    if (conn->restricted &&
        (conn->authorization == NULL ||
            (strncmp(conn->authorization, "Agent ", 6) != 0 &&
                strncmp(conn->authorization, "Bearer ", 7) != 0)))
        return conn_restricted_fail(conn);
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
        rc = http_conn_write(conn, xstrdup(cont), sizeof(cont) - 1, NULL, 0);
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

/* --- complete requests --------------------------------------------------- */

/* Split the request target into the decoded path and the raw query.
 * Returns 0, or conn_fail()'s -1 (the caller releases path and query). */
static int
request_target(struct http_conn *conn, struct http_parser_url *u,
    struct sbuf *path, struct sbuf *query)
{
    const char *url = conn->url.buf;

    http_parser_url_init(u);
    if (http_parser_parse_url(url, conn->url.len, 0, u) != 0)
        return conn_fail(conn, 400, "bad_request", "invalid request target");
    if ((u->field_set & (1 << UF_PATH)) &&
        http_path_decode(url + u->field_data[UF_PATH].off,
            u->field_data[UF_PATH].len, path) < 0)
        return conn_fail(conn, 400, "bad_request",
            "invalid escape or character in request path");
    if (path->len == 0 || path->buf[0] != '/')
        return conn_fail(conn, 400, "bad_request",
            "request path must start with '/'");
    if (u->field_set & (1 << UF_QUERY))
        sbuf_add(query, url + u->field_data[UF_QUERY].off,
            u->field_data[UF_QUERY].len);
    return 0;
}

/* What the handler sees; every pointer is borrowed from conn or the
 * arguments and valid during the handler call only. */
static void
request_fill(struct http_req *req, struct http_conn *conn, const char *method,
    const char *path, const char *query)
{
    memset(req, 0, sizeof(*req));
    req->method = method;
    req->path = path;
    req->query = query;
    req->body = conn->body.buf;
    req->body_len = conn->body.len;
    req->authorization = conn->authorization;
    req->content_type = conn->content_type;
    req->is_unix = conn->is_unix;
    req->peer_uid = conn->uid;
    req->peer_gid = conn->gid;
    req->peer_pid = conn->pid;
    req->conn = conn;
}

/* Queue the response of a handled request (ready, or waiting for its
 * deferred completion) and pause the parser after the last request or
 * under backpressure. Returns -1 if the handler closed the server. */
static int
request_queue(struct http_conn *conn, http_parser *p, struct http_out *out)
{
    if (conn->closing) {
        /* The handler closed the server, and this connection with it. */
        if (out->deferred && out->d.cancel)
            out->d.cancel(&out->d, out->d.arg);
        http_out_destroy(out);
        return -1;
    }
    http_conn_enqueue(conn, out);
    conn->phase = HTTP_PHASE_IDLE;
    /* A connection still restricted after its request was no agent's. */
    if (conn->restricted)
        out->keep_alive = false;
    if (out->deferred) {
        out->state = HTTP_OUT_DEFERRED;
        conn->ndeferred++;
        /* A long poll's wait has no deadline. */
        http_conn_timer_restart(conn);
    } else {
        out->state = HTTP_OUT_READY;
        http_conn_mark_dirty(conn);
    }
    if (!out->keep_alive) {
        conn->close_after = true;
        http_parser_pause(p, 1);
    } else if (http_conn_should_pause(conn)) {
        http_parser_pause(p, 1);
    }
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
    if (request_target(conn, &u, &path, &query) < 0) {
        sbuf_release(&path);
        sbuf_release(&query);
        return -1;
    }
    request_fill(&req, conn, method, path.buf, query.buf);
    /* The log names the path as sent (still %-encoded: one line). */
    out = http_out_create(conn,
        xasprintf("%s %.*s", method, (int)u.field_data[UF_PATH].len,
            conn->url.buf + u.field_data[UF_PATH].off));
    out->keep_alive = http_should_keep_alive(p) != 0;
    out->head = p->method == HTTP_HEAD;
    srv->handler(&req, &out->resp, srv->arg);
    sbuf_release(&path);
    sbuf_release(&query);
    return request_queue(conn, p, out);
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

/* --- driving the parser -------------------------------------------------- */

/* The parser stopped on error e: answer it and close after the answer. */
static void
conn_parse_failed(struct http_conn *conn, enum http_errno e)
{
    if (conn->fail_status != 0)
        http_conn_reject(conn, conn->fail_status, conn->fail_code,
            conn->fail_msg);
    else if (e == HPE_HEADER_OVERFLOW)
        http_conn_reject(conn, 431, "too_large",
            "request header block is over the limit of " HTTP_MAX_HEADER_STR
            " bytes");
    else
        http_conn_reject(conn, 400, "bad_request", http_errno_description(e));
}

void
http_conn_parse(struct http_conn *conn, const char *data, size_t len)
{
    size_t off = 0, n;
    enum http_errno e;

    while (off < len) {
        n = http_parser_execute(&conn->parser, &parser_settings, data + off,
            len - off);
        if (conn->closing)
            return;
        e = HTTP_PARSER_ERRNO(&conn->parser);
        off += n;
        if (e == HPE_PAUSED) {
            if (conn->close_after)
                return; /* nothing after the last request counts */
            /* Backpressure: keep the rest and stop reading. */
            log_debug("conn=%lu paused: %zu responses queued, %zu bytes "
                      "unsent",
                conn->id, conn->nout, conn->h.stream.write_queue_size);
            sbuf_add(&conn->inbuf, data + off, len - off);
            conn->paused = true;
            http_conn_read_stop(conn);
            return;
        }
        if (e != HPE_OK) {
            conn_parse_failed(conn, e);
            return;
        }
        /* A request with "Upgrade:" makes the parser stop after it; we do
         * not upgrade, so go on with the next request. */
        if (n == 0)
            break;
    }
}
