/*
 * http_conn.c - one HTTP connection: reading, writing, closing
 *
 * A connection reads into the server's shared buffer and hands the bytes
 * to the parser (http_parse.c), keeps its responses in a queue in request
 * order, and writes the head of that queue once the check phase has
 * settled it (http_server.c). Its timer is its nearest deadline while
 * it is open (the request head's, the body's, the writes', or the idle
 * timeout; none while only a deferred response waits or our own
 * backpressure holds its input) and the linger timeout once its sending
 * side is shut down. Accepting applies the connection caps (http_caps.h):
 * a new connection may be shed, restricted to agent requests, or make
 * room by evicting the oldest connection without a complete request
 * head. Backpressure pauses the parser and keeps the unparsed rest until
 * the queue drains (see http_int.h).
 */
#include "scheduler/http_int.h"

#include <assert.h>
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <arpa/inet.h>

#include "common/log.h"
#include "common/xalloc.h"

/* A write request owns the bytes it writes; freed in its callback. */
struct http_write {
    uv_write_t req;
    char *head;
    char *body;
};

static void conn_timer_cb(uv_timer_t *timer);
static void conn_read_start(struct http_conn *conn);

/* --- response queue ------------------------------------------------------ */

/* The response of queue node l; NULL for the queue's own head. */
static struct http_out *
conn_out(struct http_conn *conn, struct http_list *l)
{
    return l == &conn->outq ? NULL : container_of(l, struct http_out, node);
}

void
http_conn_enqueue(struct http_conn *conn, struct http_out *out)
{
    http_list_add_tail(&conn->outq, &out->node);
    conn->nout++;
}

static struct http_out *
conn_dequeue(struct http_conn *conn)
{
    struct http_out *out = conn_out(conn, conn->outq.next);

    if (out == NULL)
        return NULL;
    http_list_remove(&out->node);
    conn->nout--;
    return out;
}

bool
http_conn_should_pause(const struct http_conn *conn)
{
    return conn->nout >= HTTP_PIPELINE_MAX ||
           conn->h.stream.write_queue_size > HTTP_WRITE_HIGH;
}

/* --- lifetime ------------------------------------------------------------ */

/* The write deadline's start: unsent bytes that shrank by
 * HTTP_WRITE_PROGRESS (or appeared) restart it, none clear it. */
static void
conn_write_progress(struct http_conn *conn, uint64_t now)
{
    size_t wq = conn->h.stream.write_queue_size;

    if (wq == 0) {
        conn->write_since = 0;
        conn->write_mark = 0;
    } else if (conn->write_since == 0 ||
               wq + HTTP_WRITE_PROGRESS <= conn->write_mark) {
        conn->write_since = now;
        conn->write_mark = wq;
    } else if (wq > conn->write_mark) {
        conn->write_mark = wq;
    }
}

/* conn's nearest deadline (loop ms) and which it is; false when it has
 * none (a long poll waits and nothing else is under way). */
static bool
conn_deadline(struct http_conn *conn, uint64_t now, uint64_t *at,
    enum http_deadline *dl)
{
    struct http_server *srv = conn->srv;

    conn_write_progress(conn, now);
    if (conn->write_since != 0) {
        *at = conn->write_since + srv->write_ms;
        *dl = HTTP_DL_WRITE;
    } else if (conn->paused) {
        /* Our own backpressure holds the request back: not the peer's
         * slowness (the write deadline covers a peer that reads none). */
        return false;
    } else if (conn->phase == HTTP_PHASE_HEAD) {
        /* Silence ends a connection before its head is due, too. */
        *at = conn->phase_since + srv->header_ms;
        *dl = HTTP_DL_HEADER;
        if (conn->active_ms + srv->idle_ms < *at) {
            *at = conn->active_ms + srv->idle_ms;
            *dl = HTTP_DL_IDLE;
        }
    } else if (conn->phase == HTTP_PHASE_BODY) {
        *at = conn->phase_since + srv->body_ms;
        *dl = HTTP_DL_BODY;
    } else if (conn->ndeferred > 0 || conn->held != NULL) {
        /* Waiting for its answer, or for a held flush to be released:
         * the scheduler's own time, not the peer's. */
        return false;
    } else {
        *at = conn->active_ms + srv->idle_ms;
        *dl = HTTP_DL_IDLE;
    }
    return true;
}

/* Arm conn's timer for its nearest deadline at now. */
static void
conn_timer_arm(struct http_conn *conn, uint64_t now)
{
    enum http_deadline dl;
    uint64_t at;
    int rc;

    if (!conn_deadline(conn, now, &at, &dl)) {
        uv_timer_stop(&conn->timer);
        return;
    }
    rc = uv_timer_start(&conn->timer, conn_timer_cb, at > now ? at - now : 1,
        0);
    if (rc < 0)
        log_warn("conn=%lu cannot start timer: %s", conn->id, uv_strerror(rc));
}

void
http_conn_timer_restart(struct http_conn *conn)
{
    if (conn->closing || conn->lingering)
        return;
    /* The loop's clock was read before this iteration's callbacks; a
     * slow handler or commit must not shorten the timeout. */
    uv_update_time(conn->srv->loop);
    conn->active_ms = uv_now(conn->srv->loop);
    conn_timer_arm(conn, conn->active_ms);
}

static void
conn_destroy(struct http_conn *conn)
{
    assert(http_list_empty(&conn->outq));
    sbuf_release(&conn->url);
    sbuf_release(&conn->hname);
    sbuf_release(&conn->hval);
    sbuf_release(&conn->body);
    sbuf_release(&conn->inbuf);
    http_tls_conn_free(conn);
    free(conn->authorization);
    free(conn->content_type);
    free(conn);
}

/* After a flood of connections has gone (a quarter of the peak left, the
 * peak HTTP_TRIM_PEAK or more), hand the freed heap back to the system:
 * glibc keeps it otherwise, and the scheduler's memory would stay at
 * what the flood took (bench/attack.sh). */
static void
conn_trim(struct http_server *srv)
{
    if (srv->peak_conns < HTTP_TRIM_PEAK || srv->nconns > srv->peak_conns / 4)
        return;
    malloc_trim(0);
    srv->peak_conns = srv->nconns;
}

static void
conn_handle_closed(struct http_conn *conn)
{
    struct http_server *srv = conn->srv;

    if (--conn->nhandles == 0) {
        conn_destroy(conn);
        conn_trim(srv);
    }
    http_server_handle_closed(srv);
}

static void
conn_stream_close_cb(uv_handle_t *handle)
{
    conn_handle_closed(container_of(handle, struct http_conn, h.handle));
}

static void
conn_timer_close_cb(uv_handle_t *handle)
{
    conn_handle_closed(
        container_of((uv_timer_t *)handle, struct http_conn, timer));
}

/* Take conn out of the server's open counts. */
static void
conn_uncount(struct http_conn *conn)
{
    struct http_server *srv = conn->srv;

    srv->nconns--;
    if (conn->peer[0])
        http_peers_del(&srv->peers, conn->peer);
    conn->peer[0] = '\0';
    if (conn->counted_user)
        srv->nuser--;
    conn->counted_user = false;
    if (conn->restricted)
        srv->nrestricted--;
    conn->restricted = false;
    if (conn->is_unix)
        srv->nunix--;
    else if (conn->agent)
        srv->nagent--;
    else if (conn->op)
        srv->noperator--;
}

/* conn leaves the user budget, its peer's count and the restriction. */
static void
conn_trust(struct http_conn *conn)
{
    struct http_server *srv = conn->srv;

    if (conn->counted_user)
        srv->nuser--;
    conn->counted_user = false;
    if (conn->peer[0])
        http_peers_del(&srv->peers, conn->peer);
    conn->peer[0] = '\0';
    if (conn->restricted)
        srv->nrestricted--;
    conn->restricted = false;
}

void
http_conn_mark_agent(struct http_conn *conn)
{
    if (conn->agent || conn->op || conn->is_unix || conn->closing)
        return;
    conn->agent = true;
    conn->srv->nagent++;
    http_list_remove(&conn->headless);
    conn_trust(conn);
}

void
http_conn_mark_operator(struct http_conn *conn)
{
    if (conn->agent || conn->op || conn->is_unix || conn->closing)
        return;
    conn->op = true;
    conn->srv->noperator++;
    http_list_remove(&conn->headless);
    conn_trust(conn);
}

const char *
http_conn_refuse_restricted(struct http_conn *conn)
{
    char what[128];

    if (!conn->restricted)
        return NULL;
    conn->srv->st.refused[conn->why]++;
    snprintf(what, sizeof(what), "refused a user request from %s (%s cap)",
        conn->peer[0] ? conn->peer : "?", http_refusal_name(conn->why));
    http_server_log_refusal(conn->srv, what);
    return http_refusal_name(conn->why);
}

void
http_conn_close(struct http_conn *conn)
{
    struct http_out *out;

    if (conn->closing)
        return;
    conn->closing = true;
    http_list_remove(&conn->node);
    http_list_remove(&conn->headless);
    http_list_remove(&conn->dirty);
    conn->is_dirty = false;
    conn->held = NULL;
    conn_uncount(conn);
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
        http_out_destroy(out);
    }
    uv_close(&conn->h.handle, conn_stream_close_cb);
    uv_close((uv_handle_t *)&conn->timer, conn_timer_close_cb);
}

static void
conn_timer_cb(uv_timer_t *timer)
{
    struct http_conn *conn = container_of(timer, struct http_conn, timer);
    enum http_deadline dl;
    uint64_t now = uv_now(conn->srv->loop), at;

    if (conn->lingering) {
        http_conn_close(conn);
        return;
    }
    /* Progress since the timer was armed may have moved the deadline. */
    if (!conn_deadline(conn, now, &at, &dl) || at > now) {
        conn_timer_arm(conn, now);
        return;
    }
    conn->srv->st.timeouts[dl]++;
    log_debug("conn=%lu %s timeout", conn->id, http_deadline_name(dl));
    http_conn_close(conn);
}

static void
conn_shutdown_cb(uv_shutdown_t *req, int status)
{
    struct http_conn *conn = container_of(req, struct http_conn, shutdown_req);
    int rc;

    if (status == UV_ECANCELED || conn->closing)
        return;
    if (status < 0 || conn->peer_eof) {
        http_conn_close(conn);
        return;
    }
    /* Read and drop what the peer still sends until it closes too. */
    conn->lingering = true;
    rc = uv_timer_start(&conn->timer, conn_timer_cb, HTTP_LINGER_MS, 0);
    if (rc < 0) {
        http_conn_close(conn);
        return;
    }
    conn_read_start(conn);
}

void
http_conn_shutdown(struct http_conn *conn)
{
    int rc;

    if (conn->shut || conn->closing)
        return;
    conn->shut = true;
    conn->close_after = true;
    /* A TLS peer learns from close_notify that the reply is complete;
     * it leaves before the stream's shutdown, which waits for every
     * queued write. */
    http_tls_close_notify(conn);
    rc = http_tls_flush(conn);
    if (rc == 0)
        rc = uv_shutdown(&conn->shutdown_req, &conn->h.stream,
            conn_shutdown_cb);
    if (rc < 0) {
        log_debug("conn=%lu cannot shut down: %s", conn->id, uv_strerror(rc));
        http_conn_close(conn);
    }
}

/* --- input --------------------------------------------------------------- */

static void
conn_alloc_cb(uv_handle_t *handle, size_t suggested, uv_buf_t *buf)
{
    struct http_conn *conn = container_of(handle, struct http_conn, h.handle);

    (void)suggested;
    *buf = uv_buf_init(conn->srv->rbuf, sizeof(conn->srv->rbuf));
}

static void
conn_eof(struct http_conn *conn)
{
    conn->peer_eof = true;
    http_conn_read_stop(conn);
    if (conn->shut) {
        /* Shut down already: close now if that completed, else when it
         * does (conn_shutdown_cb sees peer_eof). */
        if (conn->lingering)
            http_conn_close(conn);
        return;
    }
    if (conn->ndeferred > 0) {
        /* A long poller went away: nobody waits for its answer. */
        http_conn_close(conn);
        return;
    }
    /* The peer may only have shut down its sending side: answer what it
     * asked, then close. A partly received request is dropped. */
    conn->close_after = true;
    if (!http_list_empty(&conn->outq))
        conn_out(conn, conn->outq.prev)->keep_alive = false;
    else
        http_conn_shutdown(conn);
}

/* Decrypt what a TLS connection has buffered and parse it, until the
 * parser pauses (the rest waits, encrypted, in the SSL object's input),
 * the last request was read, or more input is needed; then send what the
 * SSL object produced (handshake messages, session tickets). */
static void
conn_tls_pump(struct http_conn *conn)
{
    char why[128];
    ssize_t n;

    while (!conn->closing && !conn->paused && !conn->close_after) {
        n = http_tls_read(conn, conn->srv->rbuf, sizeof(conn->srv->rbuf), why,
            sizeof(why));
        if (n > 0) {
            http_conn_parse(conn, conn->srv->rbuf, (size_t)n);
            continue;
        }
        if (n == HTTP_TLS_CLOSED) {
            /* close_notify: the peer sends no more, as at end of file. */
            conn_eof(conn);
            return;
        }
        if (n < 0) {
            http_tls_failed(conn, why);
            return;
        }
        break;
    }
    if (!conn->closing && !conn->shut && http_tls_flush(conn) < 0)
        http_conn_close(conn);
}

/* Input that arrived on conn. */
static void
conn_input(struct http_conn *conn, const char *data, size_t len)
{
    bool plain;

    if (conn->ssl == NULL) {
        http_conn_parse(conn, data, len);
        return;
    }
    if (http_tls_feed(conn, data, len, &plain) == HTTP_TLS_NOT_TLS) {
        http_tls_not_tls(conn, plain);
        return;
    }
    conn_tls_pump(conn);
}

static void
conn_read_cb(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
    struct http_conn *conn = container_of(stream, struct http_conn, h.stream);

    if (conn->closing || nread == 0)
        return;
    if (nread < 0) {
        if (nread == UV_EOF) {
            conn_eof(conn);
        } else {
            log_debug("conn=%lu read failed: %s", conn->id,
                uv_strerror((int)nread));
            http_conn_close(conn);
        }
        return;
    }
    /* After the last request, input is read only to notice the close. */
    if (!conn->close_after)
        conn_input(conn, buf->base, (size_t)nread);
    /* Input alone moves no deadline but the idle one (a trickle of bytes
     * does not extend the head's). */
    http_conn_timer_restart(conn);
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
        http_conn_close(conn);
        return;
    }
    conn->reading = true;
}

void
http_conn_read_stop(struct http_conn *conn)
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

    if (!conn->paused || conn->closing || http_conn_should_pause(conn))
        return;
    conn->paused = false;
    log_debug("conn=%lu resumed", conn->id);
    http_parser_pause(&conn->parser, 0);
    buf = sbuf_detach(&conn->inbuf, &len);
    if (!conn->close_after)
        http_conn_parse(conn, buf, len);
    free(buf);
    /* TLS input that arrived with it and was not yet decrypted. */
    if (conn->ssl != NULL && !conn->closing)
        conn_tls_pump(conn);
    if (!conn->closing && !conn->paused)
        conn_read_start(conn);
    /* The deadlines apply again (or still do, paused anew). */
    if (!conn->closing && !conn->lingering)
        conn_timer_arm(conn, uv_now(conn->srv->loop));
}

/* --- output -------------------------------------------------------------- */

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
        log_debug("conn=%lu write failed: %s", conn->id, uv_strerror(status));
        http_conn_close(conn);
        return;
    }
    http_conn_timer_restart(conn);
    /* The kernel took more bytes: reading may go on. */
    conn_resume(conn);
}

int
http_conn_write(struct http_conn *conn, char *head, size_t hlen, char *body,
    size_t blen)
{
    int rc;

    if (conn->ssl == NULL)
        return http_conn_write_raw(conn, head, hlen, body, blen);
    /* Encrypted at once: the plaintext is freed here and the stream's
     * write queue holds the ciphertext (the backpressure's measure). */
    rc = http_tls_write(conn, head, hlen);
    if (rc == 0 && body != NULL && blen > 0)
        rc = http_tls_write(conn, body, blen);
    free(head);
    free(body);
    return rc < 0 ? rc : http_tls_flush(conn);
}

int
http_conn_write_raw(struct http_conn *conn, char *head, size_t hlen, char *body,
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
    return http_conn_write(conn, h, hlen, b, blen);
}

/* Decide the outcome of every response that became ready since the last
 * flush: a durable one stands only if that flush committed. */
static void
conn_settle(struct http_conn *conn, int flush_rc, bool batched_only)
{
    for (struct http_list *l = conn->outq.next; l != &conn->outq; l = l->next) {
        struct http_out *out = conn_out(conn, l);

        if (out->state != HTTP_OUT_READY || out->settled)
            continue;
        if (batched_only && !out->batched)
            continue;
        out->batched = false;
        if (flush_rc < 0 && out->resp.durable) {
            sbuf_reset(&out->resp.headers);
            if (conn->srv->flush_msg[0])
                http_resp_error(&out->resp, 503, "unavailable", "%s",
                    conn->srv->flush_msg);
            else
                http_resp_error(&out->resp, 503, "unavailable",
                    "cannot commit: %s", strerror(-flush_rc));
            http_resp_header(&out->resp, "Retry-After", "5");
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

    while (!conn->closing && (out = conn_out(conn, conn->outq.next)) != NULL &&
           out->state == HTTP_OUT_READY && out->settled) {
        conn_dequeue(conn);
        keep = out->keep_alive;
        rc = conn_write_out(conn, out);
        http_out_destroy(out);
        if (rc < 0) {
            log_debug("conn=%lu cannot write: %s", conn->id, uv_strerror(rc));
            http_conn_close(conn);
            return;
        }
        if (!keep) {
            /* The last response: nothing was parsed after it. */
            assert(http_list_empty(&conn->outq));
            http_conn_shutdown(conn);
            return;
        }
        /* Idle time counts from the last response, not the request. */
        http_conn_timer_restart(conn);
    }
}

void
http_conn_flushed(struct http_conn *conn, int flush_rc)
{
    conn_settle(conn, flush_rc, false);
    conn_write_ready(conn);
    if (!conn->closing)
        conn_resume(conn);
}

size_t
http_conn_batch(struct http_conn *conn)
{
    size_t n = 0;

    for (struct http_list *l = conn->outq.next; l != &conn->outq; l = l->next) {
        struct http_out *out = conn_out(conn, l);

        if (out->state == HTTP_OUT_READY && !out->settled) {
            out->batched = true;
            n++;
        }
    }
    return n;
}

void
http_conn_released(struct http_conn *conn, int rc)
{
    conn_settle(conn, rc, true);
    conn_write_ready(conn);
    if (!conn->closing)
        conn_resume(conn);
}

void
http_conn_reject(struct http_conn *conn, int status, const char *code,
    const char *msg)
{
    struct http_out *out;

    log_debug("conn=%lu rejected status=%d: %s", conn->id, status, msg);
    out = http_out_create(conn, xstrdup("(rejected)"));
    http_resp_error(&out->resp, status, code, "%s%s",
        status == 400 && strcmp(code, "bad_request") == 0
            ? "malformed HTTP request: "
            : "",
        msg);
    if (status == 503)
        http_resp_header(&out->resp, "Retry-After", "%d", HTTP_RETRY_AFTER_S);
    out->keep_alive = false;
    out->state = HTTP_OUT_READY;
    http_conn_enqueue(conn, out);
    conn->close_after = true;
    http_conn_mark_dirty(conn);
}

/* --- accepting ----------------------------------------------------------- */

/* A new connection with its handles open and counted by the server, or
 * NULL (logged) when its stream cannot be initialised. */
static struct http_conn *
conn_create(struct http_server *srv, bool is_unix)
{
    struct http_conn *conn = xcalloc(1, sizeof(*conn));
    int rc;

    conn->srv = srv;
    conn->id = ++srv->next_id;
    conn->is_unix = is_unix;
    /* Meaningless over TCP, and never root should a handler forget to
     * look at is_unix. */
    conn->uid = (uid_t)-1;
    conn->gid = (gid_t)-1;
    conn->pid = -1;
    http_list_init(&conn->node);
    http_list_init(&conn->headless);
    http_list_init(&conn->dirty);
    http_list_init(&conn->outq);
    sbuf_init(&conn->url);
    sbuf_init(&conn->hname);
    sbuf_init(&conn->hval);
    sbuf_init(&conn->body);
    sbuf_init(&conn->inbuf);
    http_parser_init(&conn->parser, HTTP_REQUEST);
    conn->parser.data = conn;

    rc = is_unix ? uv_pipe_init(srv->loop, &conn->h.pipe, 0)
                 : uv_tcp_init(srv->loop, &conn->h.tcp);
    if (rc < 0) {
        log_warn("cannot accept a connection: %s", uv_strerror(rc));
        conn_destroy(conn);
        return NULL;
    }
    rc = uv_timer_init(srv->loop, &conn->timer);
    assert(rc == 0); /* uv_timer_init cannot fail */
    conn->nhandles = 2;
    srv->nhandles += 2;
    http_list_add_tail(&srv->conns, &conn->node);
    if (++srv->nconns > srv->peak_conns)
        srv->peak_conns = srv->nconns;
    if (is_unix)
        srv->nunix++;
    return conn;
}

/* Record who is on the other end of a Unix socket. */
static int
conn_peer_unix(struct http_conn *conn)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);
    uv_os_fd_t fd;
    int rc;

    rc = uv_fileno(&conn->h.handle, &fd);
    if (rc == 0 && getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
        rc = -errno;
    if (rc < 0) {
        log_warn("cannot get peer credentials: %s", strerror(-rc));
        return rc;
    }
    conn->uid = cred.uid;
    conn->gid = cred.gid;
    conn->pid = cred.pid;
    log_debug("conn=%lu accepted unix uid=%ld pid=%ld", conn->id,
        (long)cred.uid, (long)cred.pid);
    return 0;
}

static void
conn_peer_tcp(struct http_conn *conn)
{
    struct sockaddr_storage ss;
    int len = sizeof(ss), rc;
    const void *a;

    /* Small responses are written whole; do not let Nagle hold the last
     * segment of one back waiting for an ACK. */
    rc = uv_tcp_nodelay(&conn->h.tcp, 1);
    if (rc < 0)
        log_debug("conn=%lu cannot set TCP_NODELAY: %s", conn->id,
            uv_strerror(rc));
    /* The peer's address is its key for the per-peer cap. */
    rc = uv_tcp_getpeername(&conn->h.tcp, (struct sockaddr *)&ss, &len);
    if (rc == 0) {
        a = ss.ss_family == AF_INET6
                ? (const void *)&((struct sockaddr_in6 *)&ss)->sin6_addr
                : (const void *)&((struct sockaddr_in *)&ss)->sin_addr;
        if (inet_ntop(ss.ss_family, a, conn->peer, sizeof(conn->peer)) == NULL)
            snprintf(conn->peer, sizeof(conn->peer), "unknown");
    } else {
        snprintf(conn->peer, sizeof(conn->peer), "unknown");
    }
    log_debug("conn=%lu accepted tcp from %s", conn->id, conn->peer);
}

/* The oldest TCP connection that is no agent's and has not sent a
 * complete request head (the first of srv->headless: an accept at the cap
 * walked every connection once), or NULL. One accepted less than
 * HTTP_EVICT_GRACE_MS ago is not taken (nor, the list being in accept
 * order, any after it): a client that reconnects at once whenever it is
 * evicted would otherwise evict, in one burst of accepts, a new agent's
 * or operator's connection before its head could be read. */
static struct http_conn *
conn_evictable(struct http_server *srv)
{
    struct http_conn *c;

    if (http_list_empty(&srv->headless))
        return NULL;
    c = container_of(srv->headless.next, struct http_conn, headless);
    return uv_now(srv->loop) - c->accepted_ms >= HTTP_EVICT_GRACE_MS ? c : NULL;
}

/* Shed conn at once: a fixed 503 if the socket takes it, then a close. */
static void
conn_shed(struct http_conn *conn, enum http_refusal why)
{
    static const char msg[] =
        "HTTP/1.1 503 Service Unavailable\r\n"
        "Content-Type: application/json\r\n"
        "Retry-After: 5\r\n"
        "Connection: close\r\n"
        "Content-Length: 78\r\n"
        "\r\n"
        "{\"error\":{\"code\":\"overloaded\",\"message\":\"too many "
        "connections; retry later\"}}\n";
    uv_buf_t buf = uv_buf_init((char *)msg, sizeof(msg) - 1);
    char what[96];

    conn->srv->st.shed[why]++;
    /* Over TLS there is no session yet to carry the reply. */
    if (conn->srv->tls == NULL || conn->is_unix)
        (void)uv_try_write(&conn->h.stream, &buf, 1);
    snprintf(what, sizeof(what), "shed a connection from %s (%s cap)",
        conn->is_unix ? "the unix socket" : conn->peer, http_refusal_name(why));
    http_server_log_refusal(conn->srv, what);
    conn->peer[0] = '\0';
    http_conn_close(conn);
}

/* Apply the connection caps to a new conn (peer known, not yet counted
 * there). Returns false when it was shed. */
static bool
conn_admit(struct http_conn *conn)
{
    struct http_server *srv = conn->srv;
    struct http_caps_now now = {
        .total = srv->nconns - 1,
        .user = srv->nuser,
        .is_unix = conn->is_unix,
    };
    struct http_conn *victim;
    enum http_admit v;
    bool evict;

    if (conn->is_unix) {
        snprintf(conn->peer, sizeof(conn->peer), "uid:%lu",
            (unsigned long)conn->uid);
        now.exempt = conn->uid == srv->exempt_uid[0] ||
                     conn->uid == srv->exempt_uid[1];
    }
    now.peer = http_peers_count(&srv->peers, conn->peer);
    /* Looked for only when every slot is taken. */
    victim = srv->caps.max_conns > 0 && now.total >= srv->caps.max_conns
                 ? conn_evictable(srv)
                 : NULL;
    now.can_evict = victim != NULL;
    v = http_caps_admit(&srv->caps, &now, &evict, &conn->why);
    if (v == HTTP_ADMIT_SHED) {
        conn_shed(conn, conn->why);
        return false;
    }
    if (evict) {
        srv->st.evicted++;
        log_debug("conn=%lu evicted for room (no request head yet)",
            victim->id);
        http_conn_close(victim);
    }
    if (!(conn->is_unix && now.exempt))
        http_peers_add(&srv->peers, conn->peer);
    else
        conn->peer[0] = '\0';
    if (!conn->is_unix) {
        conn->counted_user = true;
        srv->nuser++;
        http_list_add_tail(&srv->headless, &conn->headless);
    }
    if (v == HTTP_ADMIT_RESTRICTED) {
        conn->restricted = true;
        srv->nrestricted++;
    }
    return true;
}

void
http_conn_accept(struct http_server *srv, uv_stream_t *listener, bool is_unix)
{
    struct http_conn *conn;
    int rc;

    conn = conn_create(srv, is_unix);
    if (conn == NULL)
        return;
    rc = uv_accept(listener, &conn->h.stream);
    if (rc < 0) {
        srv->st.accept_errors++;
        log_warn("cannot accept a connection: %s", uv_strerror(rc));
        http_conn_close(conn);
        return;
    }
    if (is_unix) {
        if (conn_peer_unix(conn) < 0) {
            http_conn_close(conn);
            return;
        }
    } else {
        conn_peer_tcp(conn);
    }
    srv->st.accepted++;
    conn->accepted_ms = uv_now(srv->loop);
    if (!conn_admit(conn))
        return;
    if (!is_unix && srv->tls != NULL && http_tls_conn_open(conn) < 0) {
        http_conn_close(conn);
        return;
    }
    /* The first request's head is due from the accept on. */
    conn->phase = HTTP_PHASE_HEAD;
    conn->phase_since = uv_now(srv->loop);
    http_conn_timer_restart(conn);
    conn_read_start(conn);
}
