/*
 * http_server.c - the HTTP server: lifetime, listeners, group commit
 *
 * The server owns its listeners (TCP and Unix sockets), the connections
 * they accept (http_conn.c), and two loop handles. The uv_check handle is
 * the group commit: once per loop iteration, after all I/O, it runs
 * flush_fn once for every response that became ready since the last time
 * and then lets each connection write what it may. The uv_idle handle does
 * nothing but keep the loop from blocking in poll while responses wait,
 * so that a response finished outside of I/O (a timer) is not delayed.
 *
 * The server is freed from the close callback of the last of all its
 * handles, its own and its connections' and listeners', and then runs the
 * done callback given to http_server_close().
 */
#include "scheduler/http_int.h"

#include <assert.h>
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/log.h"
#include "common/xalloc.h"

/* --- bookkeeping --------------------------------------------------------- */

void
http_server_handle_closed(struct http_server *srv)
{
    void (*done)(void *);
    void *arg;

    assert(srv->nhandles > 0);
    if (--srv->nhandles > 0 || !srv->closing)
        return;
    done = srv->done;
    arg = srv->done_arg;
    SSL_CTX_free(srv->tls);
    /* Every connection is closed: what is left of held flushes is empty. */
    while (!http_list_empty(&srv->held)) {
        struct http_hold *h = container_of(srv->held.next, struct http_hold,
            node);

        http_list_remove(&h->node);
        free(h);
    }
    free(srv);
    if (done)
        done(arg);
}

void
http_server_flush_msg(struct http_server *srv, const char *msg)
{
    snprintf(srv->flush_msg, sizeof(srv->flush_msg), "%s", msg);
}

size_t
http_server_nconns(const struct http_server *srv)
{
    return srv->nconns;
}

void
http_server_stats(const struct http_server *srv, struct http_server_stats *st)
{
    *st = srv->st;
    st->conns = srv->nconns;
    st->conns_user = srv->nuser;
    st->conns_agent = srv->nagent;
    st->conns_operator = srv->noperator;
    st->conns_unix = srv->nunix;
    st->conns_restricted = srv->nrestricted;
    st->max_conns = srv->caps.max_conns;
    st->reserve = srv->caps.reserve;
    st->per_peer = srv->caps.per_peer;
}

const char *
http_deadline_name(enum http_deadline dl)
{
    static const char *const names[HTTP_DL_N] = { "header", "body", "write",
        "idle" };

    return dl < HTTP_DL_N ? names[dl] : "?";
}

/* Whether a line of rl may be logged now; if so, *quiet receives how many
 * were not since the last. */
static bool
ratelog_due(struct http_server *srv, struct http_ratelog *rl,
    unsigned long long *quiet)
{
    uint64_t now = uv_now(srv->loop);

    if (rl->ms != 0 && now - rl->ms < 10000) {
        rl->quiet++;
        return false;
    }
    *quiet = rl->quiet;
    rl->ms = now;
    rl->quiet = 0;
    return true;
}

void
http_server_log_refusal(struct http_server *srv, const char *what)
{
    unsigned long long quiet;

    if (!ratelog_due(srv, &srv->refusals, &quiet))
        return;
    if (quiet > 0)
        log_warn("%s (and %llu more refused or shed since the last line)", what,
            quiet);
    else
        log_warn("%s", what);
}

void
http_server_log_tls(struct http_server *srv, const char *what)
{
    unsigned long long quiet;

    if (!ratelog_due(srv, &srv->tls_log, &quiet))
        return;
    if (quiet > 0)
        log_notice("%s (and %llu more TLS failures since the last line)", what,
            quiet);
    else
        log_notice("%s", what);
}

/* --- group commit -------------------------------------------------------- */

static void
server_idle_cb(uv_idle_t *idle)
{
    /* Nothing to do: while this handle is active, the loop polls without
     * blocking, so the check phase that writes queued responses comes at
     * once even when they were queued outside of I/O (a timer). */
    (void)idle;
}

void
http_conn_mark_dirty(struct http_conn *conn)
{
    struct http_server *srv = conn->srv;
    int rc;

    if (conn->closing || conn->is_dirty || srv->closing)
        return;
    if (conn->held != NULL) {
        /* Written after the held flush it waits in (order). */
        conn->redirty = true;
        return;
    }
    conn->is_dirty = true;
    http_list_add_tail(&srv->dirty, &conn->dirty);
    if (!uv_is_active((uv_handle_t *)&srv->idle)) {
        rc = uv_idle_start(&srv->idle, server_idle_cb);
        if (rc < 0)
            log_warn("cannot start idle handle: %s", uv_strerror(rc));
    }
}

/* The flush just made holds the batch: its connections wait, with the
 * responses ready now, until http_server_release(). */
static void
server_hold_batch(struct http_server *srv, struct http_list *batch)
{
    struct http_hold *h = xcalloc(1, sizeof(*h));

    h->ticket = srv->hold_ticket;
    http_list_init(&h->conns);
    while (!http_list_empty(batch)) {
        struct http_conn *conn = container_of(batch->next, struct http_conn,
            dirty);

        http_list_remove(&conn->dirty);
        conn->is_dirty = false;
        if (conn->closing)
            continue;
        h->nouts += http_conn_batch(conn);
        conn->held = h;
        http_list_add_tail(&h->conns, &conn->dirty);
    }
    srv->nheld += h->nouts;
    http_list_add_tail(&srv->held, &h->node);
}

void
http_server_hold(struct http_server *srv, uint64_t ticket)
{
    struct http_hold *last;

    assert(srv->in_flush && ticket != 0);
    if (!http_list_empty(&srv->held)) {
        last = container_of(srv->held.prev, struct http_hold, node);
        assert(ticket >= last->ticket);
    }
    srv->hold_ticket = ticket;
}

void
http_server_release(struct http_server *srv, uint64_t ticket, int rc,
    const char *msg)
{
    /* The 503s read it (conn_settle); each flush clears it again. */
    snprintf(srv->flush_msg, sizeof(srv->flush_msg), "%s",
        rc < 0 && msg ? msg : "");
    while (!http_list_empty(&srv->held)) {
        struct http_hold *h = container_of(srv->held.next, struct http_hold,
            node);

        if (h->ticket > ticket)
            break;
        http_list_remove(&h->node);
        srv->nheld -= h->nouts;
        while (!http_list_empty(&h->conns)) {
            struct http_conn *conn = container_of(h->conns.next,
                struct http_conn, dirty);

            http_list_remove(&conn->dirty);
            conn->held = NULL;
            http_conn_released(conn, rc);
            if (!conn->closing && conn->redirty) {
                conn->redirty = false;
                http_conn_mark_dirty(conn);
            }
        }
        free(h);
    }
}

size_t
http_server_held(const struct http_server *srv)
{
    return srv->nheld;
}

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
        srv->flush_msg[0] = '\0';
        srv->hold_ticket = 0;
        srv->in_flush = true;
        rc = srv->flush(srv->arg);
        srv->in_flush = false;
        if (rc < 0)
            log_warn("cannot commit, durable responses fail with 503: %s",
                strerror(-rc));
        else if (srv->hold_ticket != 0)
            server_hold_batch(srv, &batch);
    }
    while (!http_list_empty(&batch)) {
        conn = container_of(batch.next, struct http_conn, dirty);
        http_list_remove(&conn->dirty);
        conn->is_dirty = false;
        if (conn->closing)
            continue;
        http_conn_flushed(conn, rc);
    }
    if (http_list_empty(&srv->dirty))
        uv_idle_stop(&srv->idle);
}

/* --- create -------------------------------------------------------------- */

static uint64_t
opt_ms(int v, uint64_t def)
{
    return v > 0 ? (uint64_t)v : def;
}

/* Deadlines and caps from opts (NULL: defaults, no caps). */
static void
http_server_limits(struct http_server *srv, const struct http_server_opts *o)
{
    srv->header_ms = opt_ms(o ? o->header_timeout_ms : 0,
        HTTP_DEFAULT_HEADER_MS);
    srv->body_ms = opt_ms(o ? o->body_timeout_ms : 0, HTTP_DEFAULT_BODY_MS);
    srv->write_ms = opt_ms(o ? o->write_timeout_ms : 0, HTTP_DEFAULT_WRITE_MS);
    srv->exempt_uid[0] = srv->exempt_uid[1] = 0;
    if (o == NULL)
        return;
    srv->caps.max_conns = o->max_conns;
    srv->caps.reserve = o->reserve;
    srv->caps.per_peer = o->per_peer;
    srv->exempt_uid[0] = o->exempt_uid[0];
    srv->exempt_uid[1] = o->exempt_uid[1];
}

struct http_server *
http_server_create(uv_loop_t *loop, const struct http_server_opts *opts,
    http_handler_fn *handler, http_flush_fn *flush, void *arg, struct err *err)
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
                       ? (uint64_t)opts->idle_timeout_ms
                       : HTTP_DEFAULT_IDLE_MS;
    http_server_limits(srv, opts);
    srv->handler = handler;
    srv->flush = flush;
    srv->arg = arg;
    http_list_init(&srv->listeners);
    http_list_init(&srv->conns);
    http_list_init(&srv->headless);
    http_list_init(&srv->dirty);
    http_list_init(&srv->held);

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

/* --- listeners ----------------------------------------------------------- */

static void
listener_close_cb(uv_handle_t *handle)
{
    struct http_listener *l = container_of(handle, struct http_listener,
        h.handle);
    struct http_server *srv = l->srv;

    free(l->path);
    free(l);
    http_server_handle_closed(srv);
}

static void
listener_close(struct http_listener *l)
{
    http_list_remove(&l->node);
    if (l->path != NULL && unlink(l->path) < 0 && errno != ENOENT)
        log_warn("cannot remove socket '%s': %s", l->path, strerror(errno));
    uv_close(&l->h.handle, listener_close_cb);
}

/* A listener whose handle is initialised and counted by the server, in
 * *lp. Errors name the address as where: "cannot listen on <where>: ...". */
static int
listener_open(struct http_server *srv, bool is_unix, const char *where,
    struct http_listener **lp, struct err *err)
{
    struct http_listener *l = xcalloc(1, sizeof(*l));
    int rc;

    l->srv = srv;
    l->is_unix = is_unix;
    http_list_init(&l->node);
    rc = is_unix ? uv_pipe_init(srv->loop, &l->h.pipe, 0)
                 : uv_tcp_init(srv->loop, &l->h.tcp);
    if (rc < 0) {
        free(l);
        return err_set(err, rc, "cannot listen on %s: %s", where,
            uv_strerror(rc));
    }
    srv->nhandles++;
    *lp = l;
    return 0;
}

/* Close l after a libuv call failed with rc; returns rc. */
static int
listener_fail(struct http_listener *l, int rc, const char *where,
    struct err *err)
{
    listener_close(l);
    return err_set(err, rc, "cannot listen on %s: %s", where, uv_strerror(rc));
}

static void
listener_connection_cb(uv_stream_t *stream, int status)
{
    struct http_listener *l = container_of(stream, struct http_listener,
        h.stream);

    if (status < 0) {
        /* Out of descriptors, libuv sheds what it can itself (1.44,
         * src/unix/stream.c: uv__server_io calls uv__emfile_trick, which
         * closes the descriptor libuv keeps in reserve, accepts and closes
         * every pending connection and opens the reserve again; we are
         * not called then; t4153). We see only what that could not shed:
         * no reserve left (another descriptor took its slot), or another
         * error. */
        l->srv->st.accept_errors++;
        http_server_log_refusal(l->srv, "cannot accept a connection");
        log_debug("cannot accept a connection: %s", uv_strerror(status));
        return;
    }
    if (l->srv->closing)
        return;
    http_conn_accept(l->srv, stream, l->is_unix);
}

/* Resolve host and port for bind(); addr names them in errors. */
static int
tcp_resolve(const char *host, int port, const char *addr, struct addrinfo **res,
    struct err *err)
{
    struct addrinfo hints;
    char portstr[16];
    int rc, g;

    snprintf(portstr, sizeof(portstr), "%d", port);
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    g = getaddrinfo(host, portstr, &hints, res);
    if (g != 0) {
        rc = g == EAI_SYSTEM ? -errno : -EINVAL;
        return err_set(err, rc, "cannot listen on %s: %s", addr,
            g == EAI_SYSTEM ? strerror(-rc) : gai_strerror(g));
    }
    return 0;
}

int
http_server_listen_tcp(struct http_server *srv, const char *host, int port,
    int *bound_port, struct err *err)
{
    struct addrinfo *res = NULL;
    struct http_listener *l;
    struct sockaddr_storage ss;
    int sslen = sizeof(ss);
    char addr[300];
    int rc;

    if (host == NULL || *host == '\0')
        host = "0.0.0.0";
    snprintf(addr, sizeof(addr), strchr(host, ':') ? "[%s]:%d" : "%s:%d", host,
        port);
    if (srv->closing)
        return err_set(err, -EINVAL,
            "cannot listen on %s: server is "
            "closing",
            addr);
    if (port < 0 || port > 65535)
        return err_set(err, -EINVAL, "cannot listen on %s: invalid port", addr);
    rc = tcp_resolve(host, port, addr, &res, err);
    if (rc < 0)
        return rc;

    rc = listener_open(srv, false, addr, &l, err);
    if (rc < 0) {
        freeaddrinfo(res);
        return rc;
    }
    rc = uv_tcp_bind(&l->h.tcp, res->ai_addr, 0);
    freeaddrinfo(res);
    if (rc == 0)
        rc = uv_listen(&l->h.stream, HTTP_BACKLOG, listener_connection_cb);
    if (rc == 0)
        rc = uv_tcp_getsockname(&l->h.tcp, (struct sockaddr *)&ss, &sslen);
    if (rc < 0)
        return listener_fail(l, rc, addr, err);
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
        return err_set(err, -EEXIST,
            "cannot listen on '%s': file exists "
            "and is not a socket",
            path);
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
        return err_set(err, -EADDRINUSE,
            "cannot listen on '%s': a server "
            "already answers there",
            path);
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
    char where[sizeof(sa.sun_path) + 2];
    int rc;

    if (srv->closing)
        return err_set(err, -EINVAL,
            "cannot listen on '%s': server is "
            "closing",
            path);
    if (path == NULL || *path == '\0' || strlen(path) >= sizeof(sa.sun_path))
        return err_set(err, -ENAMETOOLONG,
            "cannot listen on '%s': path "
            "is empty or longer than %zu bytes",
            path ? path : "", sizeof(sa.sun_path) - 1);
    rc = unix_remove_stale(path, err);
    if (rc < 0)
        return rc;

    snprintf(where, sizeof(where), "'%s'", path);
    rc = listener_open(srv, true, where, &l, err);
    if (rc < 0)
        return rc;
    rc = uv_pipe_bind(&l->h.pipe, path);
    if (rc < 0)
        return listener_fail(l, rc, where, err);
    /* From here on closing the listener removes the file. */
    l->path = xstrdup(path);
    /* Anyone may connect: identity comes from SO_PEERCRED. */
    if (chmod(path, 0666) < 0) {
        rc = -errno;
        listener_close(l);
        return err_set(err, rc, "cannot chmod '%s': %s", path, strerror(-rc));
    }
    rc = uv_listen(&l->h.stream, HTTP_BACKLOG, listener_connection_cb);
    if (rc < 0)
        return listener_fail(l, rc, where, err);
    http_list_add_tail(&srv->listeners, &l->node);
    log_debug("listening on '%s'", path);
    return 0;
}

/* --- close --------------------------------------------------------------- */

static void
server_check_close_cb(uv_handle_t *handle)
{
    http_server_handle_closed(
        container_of((uv_check_t *)handle, struct http_server, check));
}

static void
server_idle_close_cb(uv_handle_t *handle)
{
    http_server_handle_closed(
        container_of((uv_idle_t *)handle, struct http_server, idle));
}

void
http_server_close(struct http_server *srv, void (*done)(void *), void *arg)
{
    assert(!srv->closing);
    srv->closing = true;
    srv->done = done;
    srv->done_arg = arg;
    while (!http_list_empty(&srv->listeners))
        listener_close(
            container_of(srv->listeners.next, struct http_listener, node));
    while (!http_list_empty(&srv->conns))
        http_conn_close(container_of(srv->conns.next, struct http_conn, node));
    http_peers_clear(&srv->peers);
    uv_close((uv_handle_t *)&srv->check, server_check_close_cb);
    uv_close((uv_handle_t *)&srv->idle, server_idle_close_cb);
}
