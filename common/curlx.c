/*
 * curlx.c - libcurl's multi interface driven by a daemon's libuv loop
 *
 * The shape is curl's docs/examples/multi-uv.c: curl's socket callback
 * starts, changes or stops one uv_poll_t per socket it wants watched, its
 * timer callback arms one uv_timer_t, and both loop callbacks hand the
 * event back with curl_multi_socket_action() and then collect finished
 * transfers. Unlike the example there are no globals, every call is
 * checked, each transfer carries its context through CURLOPT_PRIVATE, and
 * the whole thing can be torn down while transfers are in flight.
 *
 * Sockets are opened with SOCK_CLOEXEC (CURLOPT_OPENSOCKETFUNCTION) so the
 * ranks the agent spawns never inherit a connection to the scheduler.
 */
#include "common/curlx.h"

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include <curl/curl.h>

#include "common/config.h"
#include "common/jsonx.h"
#include "common/log.h"
#include "common/xalloc.h"

/* A response larger than this is refused (the work reply is the largest;
 * 64 MiB covers thousands of launches with full environments). */
#define CURLX_MAX_RESPONSE (64u << 20)
#define CURLX_CONNECT_TIMEOUT_MS 5000L

/* One socket curl asked us to watch. */
struct curlx_sock {
    uv_poll_t poll;
    struct curlx *cx;
    curl_socket_t fd;
    LIST_ENTRY(curlx_sock) link;
};

struct curlx_req {
    struct curlx *cx;
    CURL *easy;
    struct curl_slist *headers;
    char *body;
    size_t len; /* of body */
    char *path;
    char *content_type; /* NULL: none */
    bool post;          /* else GET */
    struct sbuf resp;
    char errbuf[CURL_ERROR_SIZE];
    curlx_done_fn cb;
    void *arg;
    bool cancelled; /* removed from the multi; awaiting delivery */
    unsigned tries; /* servers tried after a refused connection */
    unsigned hops;  /* not_leader answers followed */
    LIST_ENTRY(curlx_req) link;
};

/* One server to send requests to (a replica, when there are several). */
struct curlx_server {
    char *base_url;  /* "http://localhost" for a Unix socket */
    char *unix_path; /* NULL for a URL */
};

struct curlx {
    uv_loop_t *loop;
    CURLM *multi;
    uv_timer_t timer;        /* curl's own timeout */
    uv_timer_t cancel_timer; /* delivers cancelled requests */
    struct curlx_server *servers;
    size_t nservers;
    size_t cur;                 /* where requests go */
    struct curlx_server leader; /* a leader named by a replica that is
                                 * none of servers (base_url NULL: none) */
    bool follow;                /* follow not_leader answers */
    curlx_switch_fn *switch_cb;
    void *switch_arg;
    char *header;        /* extra header line, may be NULL */
    char *ca;            /* CA file for https://, NULL: the system's */
    curlx_sign_fn *sign; /* a header line per request, may be NULL */
    void *sign_arg;
    LIST_HEAD(, curlx_req) reqs;
    LIST_HEAD(, curlx_sock) socks;
    char peer_ip[64]; /* of the last answer over TCP; "" none yet */
    int peer_port;
    int open_handles; /* handles whose close callback is due */
    bool closing;
};

static void curlx_check_done(struct curlx *cx);

/* ---- teardown ---------------------------------------------------------- */

/* Every handle (the two timers, each socket's poll) counts in
 * open_handles; the last close callback frees cx. */
static void
curlx_unref(struct curlx *cx)
{
    if (--cx->open_handles > 0)
        return;
    for (size_t i = 0; i < cx->nservers; i++) {
        free(cx->servers[i].base_url);
        free(cx->servers[i].unix_path);
    }
    free(cx->servers);
    free(cx->leader.base_url);
    free(cx->leader.unix_path);
    free(cx->ca);
    free(cx->header);
    free(cx);
    curl_global_cleanup();
}

static void
curlx_handle_close_cb(uv_handle_t *h)
{
    curlx_unref(h->data);
}

static void
curlx_sock_close_cb(uv_handle_t *h)
{
    struct curlx_sock *cs = container_of((uv_poll_t *)h, struct curlx_sock,
        poll);
    struct curlx *cx = cs->cx;

    free(cs);
    curlx_unref(cx);
}

static void
curlx_sock_close(struct curlx_sock *cs)
{
    LIST_REMOVE(cs, link);
    uv_close((uv_handle_t *)&cs->poll, curlx_sock_close_cb);
}

static void
curlx_req_free(struct curlx_req *req)
{
    if (req->easy != NULL)
        curl_easy_cleanup(req->easy);
    curl_slist_free_all(req->headers);
    free(req->body);
    free(req->path);
    free(req->content_type);
    sbuf_release(&req->resp);
    free(req);
}

void
curlx_destroy(struct curlx *cx)
{
    struct curlx_sock *cs;
    struct curlx_req *req;

    if (cx == NULL || cx->closing)
        return;
    cx->closing = true;

    /* Stop watching while every fd is still open, then let curl close
     * them. The socket callback still handles CURL_POLL_REMOVE (it closes
     * that socket's poll handle); the timer callback is ignored now. */
    LIST_FOREACH(cs, &cx->socks, link)
        uv_poll_stop(&cs->poll);
    uv_timer_stop(&cx->timer);
    uv_timer_stop(&cx->cancel_timer);

    while ((req = LIST_FIRST(&cx->reqs)) != NULL) {
        if (!req->cancelled)
            curl_multi_remove_handle(cx->multi, req->easy);
        LIST_REMOVE(req, link);
        curlx_req_free(req);
    }
    curl_multi_setopt(cx->multi, CURLMOPT_SOCKETFUNCTION, NULL);
    curl_multi_setopt(cx->multi, CURLMOPT_TIMERFUNCTION, NULL);
    curl_multi_cleanup(cx->multi);
    cx->multi = NULL;

    while ((cs = LIST_FIRST(&cx->socks)) != NULL)
        curlx_sock_close(cs);
    uv_close((uv_handle_t *)&cx->cancel_timer, curlx_handle_close_cb);
    uv_close((uv_handle_t *)&cx->timer, curlx_handle_close_cb);
}

/* ---- replicas: which server ---------------------------------------------- */

static const struct curlx_server *
curlx_target(const struct curlx *cx)
{
    return cx->leader.base_url ? &cx->leader : &cx->servers[cx->cur];
}

static void
curlx_switched(struct curlx *cx)
{
    const struct curlx_server *t = curlx_target(cx);

    log_info("scheduler: now %s", t->unix_path ? t->unix_path : t->base_url);
    if (cx->switch_cb)
        cx->switch_cb(cx->switch_arg);
}

/* The next server of the list, forgetting a leader learned. */
static void
curlx_next_server(struct curlx *cx)
{
    if (cx->leader.base_url) {
        free(cx->leader.base_url);
        free(cx->leader.unix_path);
        cx->leader.base_url = cx->leader.unix_path = NULL;
    } else if (cx->nservers > 1) {
        cx->cur = (cx->cur + 1) % cx->nservers;
    } else {
        return;
    }
    curlx_switched(cx);
}

/* A replica named url as the leader: the server of the list that it is,
 * else (once every one was tried) url itself. */
static void
curlx_follow(struct curlx *cx, const char *url, unsigned tried)
{
    size_t n = strlen(url);

    while (n > 0 && url[n - 1] == '/')
        n--;
    for (size_t i = 0; i < cx->nservers; i++) {
        if (cx->servers[i].unix_path == NULL &&
            strlen(cx->servers[i].base_url) == n &&
            strncmp(cx->servers[i].base_url, url, n) == 0) {
            if (cx->cur != i || cx->leader.base_url) {
                free(cx->leader.base_url);
                cx->leader.base_url = NULL;
                cx->cur = i;
                curlx_switched(cx);
            }
            return;
        }
    }
    if (tried + 1 < cx->nservers) {
        /* Maybe one of ours by another name (a socket). */
        curlx_next_server(cx);
        return;
    }
    free(cx->leader.base_url);
    free(cx->leader.unix_path);
    cx->leader.unix_path = NULL;
    cx->leader.base_url = xstrndup(url, n);
    curlx_switched(cx);
}

/* A replica that does not lead answered (421 or 503, not_leader): the
 * leader's URL it named into *leader (caller frees; NULL: none now). */
static bool
curlx_not_leader(const struct curlx_req *req, long status, char **leader)
{
    const cJSON *e, *code, *l;
    cJSON *root = NULL;
    bool yes = false;

    *leader = NULL;
    if ((status != 421 && status != 503) || req->resp.len == 0 ||
        jsonx_parse(req->resp.buf, req->resp.len, &root, NULL) < 0)
        return false;
    e = cJSON_GetObjectItemCaseSensitive(root, "error");
    code = cJSON_GetObjectItemCaseSensitive(e, "code");
    if (cJSON_IsString(code) && strcmp(code->valuestring, "not_leader") == 0) {
        yes = true;
        l = cJSON_GetObjectItemCaseSensitive(root, "leader");
        if (cJSON_IsString(l) && l->valuestring[0])
            *leader = xstrdup(l->valuestring);
    }
    cJSON_Delete(root);
    return yes;
}

static void curlx_req_target(struct curlx_req *req);
static int curlx_req_headers(struct curlx_req *req);

/* Whether a finished request goes again, to another replica: its
 * connection was refused (nothing was sent), or a replica that does not
 * lead answered and named the leader (nothing was done). Any other
 * outcome, a reset connection above all (the request may have been
 * carried out), is the caller's. It goes signed afresh (a new time and
 * nonce): a replica it reached before may have seen its nonce. */
static bool
curlx_req_again(struct curlx_req *req, CURLcode code)
{
    struct curlx *cx = req->cx;
    long status = 0;
    char *leader = NULL;

    if (!cx->follow || cx->closing)
        return false;
    if (code == CURLE_COULDNT_CONNECT) {
        if (cx->nservers + (cx->leader.base_url ? 1 : 0) < 2 ||
            ++req->tries >= cx->nservers + (cx->leader.base_url ? 1 : 0))
            return false;
        curlx_next_server(cx);
    } else if (code == CURLE_OK &&
               curl_easy_getinfo(req->easy, CURLINFO_RESPONSE_CODE, &status) ==
                   CURLE_OK &&
               curlx_not_leader(req, status, &leader)) {
        if (leader == NULL) {
            /* An election: the caller retries; the next request tries
             * another replica. */
            curlx_next_server(cx);
            return false;
        }
        if (req->hops++ > 2 * cx->nservers + 2) {
            free(leader);
            return false;
        }
        curlx_follow(cx, leader, req->tries++);
        free(leader);
    } else {
        return false;
    }
    if (curlx_req_headers(req) < 0) {
        log_error("cannot build request headers");
        return false;
    }
    sbuf_reset(&req->resp);
    req->errbuf[0] = '\0';
    curlx_req_target(req);
    if (curl_multi_add_handle(cx->multi, req->easy) != CURLM_OK)
        return false;
    return true;
}

/* ---- curl → loop -------------------------------------------------------- */

static int
curlx_rc_from_curl(CURLcode code)
{
    switch (code) {
    case CURLE_OK:
        return 0;
    case CURLE_COULDNT_CONNECT:
        return -ECONNREFUSED;
    case CURLE_OPERATION_TIMEDOUT:
        return -ETIMEDOUT;
    case CURLE_COULDNT_RESOLVE_HOST:
        return -EHOSTUNREACH;
    case CURLE_GOT_NOTHING:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_PARTIAL_FILE:
        return -ECONNRESET;
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
        return -EPROTO;
    default:
        return -EIO;
    }
}

/* Keep where an answer came from over TCP (curlx_peer); an answer over
 * a Unix socket has no address and leaves it. */
static void
curlx_note_peer(struct curlx_req *req)
{
    struct curlx *cx = req->cx;
    char *ip = NULL;
    long port = 0;

    if (curl_easy_getinfo(req->easy, CURLINFO_PRIMARY_IP, &ip) != CURLE_OK ||
        curl_easy_getinfo(req->easy, CURLINFO_PRIMARY_PORT, &port) !=
            CURLE_OK ||
        ip == NULL || ip[0] == '\0' || port <= 0 || port > 65535 ||
        strlen(ip) >= sizeof(cx->peer_ip))
        return;
    memcpy(cx->peer_ip, ip, strlen(ip) + 1);
    cx->peer_port = (int)port;
}

bool
curlx_peer(const struct curlx *cx, char *ip, size_t iplen, int *port)
{
    if (cx->peer_ip[0] == '\0' || strlen(cx->peer_ip) >= iplen)
        return false;
    memcpy(ip, cx->peer_ip, strlen(cx->peer_ip) + 1);
    *port = cx->peer_port;
    return true;
}

/* Hand one finished request to its owner and free it. The request is
 * already out of the multi handle. */
static void
curlx_req_deliver(struct curlx_req *req, int rc)
{
    long status = 0;

    if (rc == 0 && curl_easy_getinfo(req->easy, CURLINFO_RESPONSE_CODE,
                       &status) != CURLE_OK)
        rc = -EIO;
    if (rc == 0)
        curlx_note_peer(req);
    LIST_REMOVE(req, link);
    /* A TLS failure's cause is curl's text ("SSL certificate problem:
     * unable to get local issuer certificate"): the body carries it. */
    if (rc == -EPROTO) {
        sbuf_reset(&req->resp);
        sbuf_addstr(&req->resp, req->errbuf[0] ? req->errbuf : "TLS failed");
    }
    req->cb(rc, rc == 0 ? status : 0, &req->resp, req->arg);
    curlx_req_free(req);
}

static void
curlx_check_done(struct curlx *cx)
{
    struct curlx_req *req;
    CURLMsg *msg;
    CURLcode code;
    CURL *easy;
    int left;

    while (!cx->closing && (msg = curl_multi_info_read(cx->multi, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        /* msg is invalid once the handle is removed: copy first. */
        easy = msg->easy_handle;
        code = msg->data.result;
        req = NULL;
        curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&req);
        /* Every easy handle in the multi is one of ours. */
        assert(req != NULL);
        curl_multi_remove_handle(cx->multi, easy);
        if (code != CURLE_OK)
            log_debug("request failed: %s", req->errbuf[0] != '\0'
                                                ? req->errbuf
                                                : curl_easy_strerror(code));
        if (curlx_req_again(req, code))
            continue;
        curlx_req_deliver(req, curlx_rc_from_curl(code));
    }
}

static void
curlx_socket_action(struct curlx *cx, curl_socket_t fd, int flags)
{
    CURLMcode mc;
    int running;

    mc = curl_multi_socket_action(cx->multi, fd, flags, &running);
    if (mc != CURLM_OK)
        log_error("curl_multi_socket_action: %s", curl_multi_strerror(mc));
    curlx_check_done(cx);
}

static void
curlx_poll_cb(uv_poll_t *poll, int status, int events)
{
    struct curlx_sock *cs = container_of(poll, struct curlx_sock, poll);
    struct curlx *cx = cs->cx;
    int flags = 0;

    if (cx->closing)
        return;
    if (status < 0) {
        flags = CURL_CSELECT_ERR;
    } else {
        if (events & UV_READABLE)
            flags |= CURL_CSELECT_IN;
        if (events & UV_WRITABLE)
            flags |= CURL_CSELECT_OUT;
    }
    /* cs may be freed inside (CURL_POLL_REMOVE); cx may not. */
    curlx_socket_action(cx, cs->fd, flags);
}

static void
curlx_timer_cb(uv_timer_t *timer)
{
    struct curlx *cx = container_of(timer, struct curlx, timer);

    if (!cx->closing)
        curlx_socket_action(cx, CURL_SOCKET_TIMEOUT, 0);
}

static int
curlx_timer_fn(CURLM *multi, long timeout_ms, void *userp)
{
    struct curlx *cx = userp;
    int rc;

    (void)multi;
    if (cx->closing)
        return 0;
    if (timeout_ms < 0) {
        uv_timer_stop(&cx->timer);
        return 0;
    }
    /* 0 means "as soon as possible": the next loop turn, never from
     * inside this callback (curl must not be re-entered). */
    rc = uv_timer_start(&cx->timer, curlx_timer_cb, (uint64_t)timeout_ms, 0);
    if (rc < 0) {
        log_error("cannot start curl timer: %s", uv_strerror(rc));
        return -1;
    }
    return 0;
}

static int
curlx_socket_fn(CURL *easy, curl_socket_t fd, int action, void *userp,
    void *socketp)
{
    struct curlx *cx = userp;
    struct curlx_sock *cs = socketp;
    int events = 0;
    int rc;

    (void)easy;
    if (action == CURL_POLL_REMOVE) {
        if (cs != NULL) {
            uv_poll_stop(&cs->poll);
            curlx_sock_close(cs);
            if (cx->multi != NULL)
                curl_multi_assign(cx->multi, fd, NULL);
        }
        return 0;
    }
    if (cx->closing)
        return 0;
    if (cs == NULL) {
        cs = xcalloc(1, sizeof(*cs));
        cs->cx = cx;
        cs->fd = fd;
        rc = uv_poll_init_socket(cx->loop, &cs->poll, fd);
        if (rc < 0) {
            /* The transfer then ends at its own timeout. */
            log_error("cannot watch socket fd=%d: %s", (int)fd,
                uv_strerror(rc));
            free(cs);
            return 0;
        }
        cs->poll.data = cx;
        cx->open_handles++;
        LIST_INSERT_HEAD(&cx->socks, cs, link);
        curl_multi_assign(cx->multi, fd, cs);
    }
    if (action == CURL_POLL_IN || action == CURL_POLL_INOUT)
        events |= UV_READABLE;
    if (action == CURL_POLL_OUT || action == CURL_POLL_INOUT)
        events |= UV_WRITABLE;
    rc = uv_poll_start(&cs->poll, events, curlx_poll_cb);
    if (rc < 0)
        log_error("cannot poll socket fd=%d: %s", (int)fd, uv_strerror(rc));
    return 0;
}

static curl_socket_t
curlx_opensocket_fn(void *arg, curlsocktype purpose, struct curl_sockaddr *addr)
{
    (void)arg;
    (void)purpose;
    return socket(addr->family, addr->socktype | SOCK_CLOEXEC, addr->protocol);
}

static size_t
curlx_write_fn(char *data, size_t size, size_t nmemb, void *userp)
{
    struct curlx_req *req = userp;
    size_t n = size * nmemb;

    if (req->resp.len + n > CURLX_MAX_RESPONSE)
        return 0; /* curl fails the transfer */
    sbuf_add(&req->resp, data, n);
    return n;
}

/* ---- cancellation -------------------------------------------------------- */

static void
curlx_cancel_timer_cb(uv_timer_t *timer)
{
    struct curlx *cx = container_of(timer, struct curlx, cancel_timer);
    struct curlx_req *req;

    /* A callback may start or cancel requests: rescan from the head after
     * each delivery. */
    for (;;) {
        for (req = LIST_FIRST(&cx->reqs); req != NULL && !req->cancelled;
             req = LIST_NEXT(req, link))
            ;
        if (req == NULL || cx->closing)
            return;
        curlx_req_deliver(req, -ECANCELED);
    }
}

void
curlx_cancel(struct curlx_req *req)
{
    struct curlx *cx = req->cx;
    int rc;

    if (req->cancelled || cx->closing)
        return;
    req->cancelled = true;
    curl_multi_remove_handle(cx->multi, req->easy);
    rc = uv_timer_start(&cx->cancel_timer, curlx_cancel_timer_cb, 0, 0);
    if (rc < 0)
        log_error("cannot start cancel timer: %s", uv_strerror(rc));
}

/* ---- setup --------------------------------------------------------------- */

/* One server of the list (n bytes of s). */
static int
curlx_check_one(const char *s, size_t n, struct err *err)
{
    char *one = xstrndup(s, n);
    const char *host;
    int rc = -EINVAL;

    if (one[0] == '/')
        rc = 0;
    if (strncmp(one, "http://", 7) == 0 || strncmp(one, "https://", 8) == 0) {
        host = strstr(one, "://") + 3;
        /* A path prefix would silently move every endpoint. */
        if (host[0] != '\0' && host[0] != '/' &&
            strcspn(host, "/") + strspn(host + strcspn(host, "/"), "/") ==
                strlen(host))
            rc = 0;
    }
    if (rc < 0)
        err_set(err, -EINVAL,
            "server '%s': must be an http:// or https:// URL "
            "without a path, or an absolute Unix socket path",
            one);
    free(one);
    return rc;
}

static int
curlx_check_item(const char *s, size_t n, void *arg)
{
    return curlx_check_one(s, n, arg);
}

int
curlx_check_server(const char *server, struct err *err)
{
    int rc = server ? config_each_item(server, curlx_check_item, err) : -ENOENT;

    if (rc == -ENOENT)
        return curlx_check_one(server ? server : "",
            server ? strlen(server) : 0, err);
    return rc;
}

static int
curlx_add_server(const char *s, size_t n, void *arg)
{
    struct curlx *cx = arg;
    struct curlx_server *sv;

    cx->servers = xreallocarray(cx->servers, cx->nservers + 1,
        sizeof(*cx->servers));
    sv = &cx->servers[cx->nservers++];
    if (s[0] == '/') {
        sv->unix_path = xstrndup(s, n);
        sv->base_url = xstrdup("http://localhost");
    } else {
        while (n > 0 && s[n - 1] == '/')
            n--;
        sv->unix_path = NULL;
        sv->base_url = xstrndup(s, n);
    }
    return 0;
}

void
curlx_follow_leader(struct curlx *cx, curlx_switch_fn *cb, void *arg)
{
    cx->follow = true;
    cx->switch_cb = cb;
    cx->switch_arg = arg;
}

struct curlx *
curlx_create(uv_loop_t *loop, const char *server, struct err *err)
{
    struct curlx *cx;
    int rc;

    if ((rc = curlx_check_server(server, err)) < 0)
        return NULL;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        err_set(err, -EIO, "cannot initialise libcurl");
        return NULL;
    }
    cx = xcalloc(1, sizeof(*cx));
    cx->loop = loop;
    cx->multi = curl_multi_init();
    if (cx->multi == NULL) {
        err_set(err, -EIO, "cannot initialise a curl multi handle");
        free(cx);
        curl_global_cleanup();
        return NULL;
    }
    config_each_item(server, curlx_add_server, cx);
    curl_multi_setopt(cx->multi, CURLMOPT_SOCKETFUNCTION, curlx_socket_fn);
    curl_multi_setopt(cx->multi, CURLMOPT_SOCKETDATA, cx);
    curl_multi_setopt(cx->multi, CURLMOPT_TIMERFUNCTION, curlx_timer_fn);
    curl_multi_setopt(cx->multi, CURLMOPT_TIMERDATA, cx);

    /* uv_timer_init cannot fail on Unix: a failure is a broken
     * invariant. */
    if ((rc = uv_timer_init(loop, &cx->timer)) < 0 ||
        (rc = uv_timer_init(loop, &cx->cancel_timer)) < 0)
        fatalx("cannot create timer: %s", uv_strerror(rc));
    cx->timer.data = cx;
    cx->cancel_timer.data = cx;
    cx->open_handles = 2;
    return cx;
}

void
curlx_set_header(struct curlx *cx, const char *line)
{
    free(cx->header);
    cx->header = line != NULL ? xstrdup(line) : NULL;
}

void
curlx_set_ca(struct curlx *cx, const char *path)
{
    free(cx->ca);
    cx->ca = path != NULL && path[0] != '\0' ? xstrdup(path) : NULL;
}

void
curlx_set_signer(struct curlx *cx, curlx_sign_fn *fn, void *arg)
{
    cx->sign = fn;
    cx->sign_arg = arg;
}

/* Point the request at the current server; curl copies the strings. */
static void
curlx_req_target(struct curlx_req *req)
{
    const struct curlx_server *t = curlx_target(req->cx);
    char *url = xasprintf("%s%s", t->base_url, req->path);

    curl_easy_setopt(req->easy, CURLOPT_URL, url);
    free(url);
    curl_easy_setopt(req->easy, CURLOPT_UNIX_SOCKET_PATH, t->unix_path);
}

/* The options every request gets; curl copies string options. */
static void
curlx_req_setopts(struct curlx_req *req, const char *path, long timeout_ms)
{
    struct curlx *cx = req->cx;
    CURL *easy = req->easy;

    req->path = xstrdup(path);
    curlx_req_target(req);
    curl_easy_setopt(easy, CURLOPT_PRIVATE, (char *)req);
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, req->errbuf);
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, curlx_write_fn);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, req);
    curl_easy_setopt(easy, CURLOPT_OPENSOCKETFUNCTION, curlx_opensocket_fn);
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, CURLX_CONNECT_TIMEOUT_MS);
    if (timeout_ms > 0)
        curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
    /* https:// is verified (curl's default: the peer's certificate and
     * its name), against our CA when one is set. */
    if (cx->ca != NULL)
        curl_easy_setopt(easy, CURLOPT_CAINFO, cx->ca);
    curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
}

/* The request's header lines, the signer's among them (signed now, with
 * what this request sends), in place of those it had. Returns 0, or
 * -ENOMEM when curl could not build the list, -EIO when the signer failed
 * (the request keeps the lines it had). */
static int
curlx_req_headers(struct curlx_req *req)
{
    struct curlx *cx = req->cx;
    struct curl_slist *h;
    char *ct, *signed_line = NULL;

    if (cx->sign != NULL &&
        (signed_line = cx->sign(req->post ? "POST" : "GET", req->path,
             req->body, req->len, cx->sign_arg)) == NULL)
        return -EIO;
    /* No "Expect: 100-continue": it would stall every POST over 1 KiB for
     * a second against a server that does not answer it. */
    h = curl_slist_append(NULL, "Expect:");
    if (h != NULL && cx->header != NULL)
        h = curl_slist_append(h, cx->header);
    if (h != NULL && signed_line != NULL)
        h = curl_slist_append(h, signed_line);
    free(signed_line);
    if (h != NULL && req->content_type != NULL) {
        ct = xasprintf("Content-Type: %s", req->content_type);
        h = curl_slist_append(h, ct);
        free(ct);
    }
    if (h == NULL)
        return -ENOMEM;
    /* curl keeps the list until the transfer (re)starts: the old one
     * goes once the new one is set. */
    curl_easy_setopt(req->easy, CURLOPT_HTTPHEADER, h);
    curl_slist_free_all(req->headers);
    req->headers = h;
    return 0;
}

struct curlx_req *
curlx_request(struct curlx *cx, const char *method, const char *path,
    char *body, size_t len, const char *content_type, long timeout_ms,
    curlx_done_fn cb, void *arg)
{
    struct curlx_req *req;
    CURLMcode mc;
    CURL *easy;
    bool post = strcmp(method, "POST") == 0;

    if (cx->closing || (!post && strcmp(method, "GET") != 0)) {
        free(body);
        return NULL;
    }
    easy = curl_easy_init();
    if (easy == NULL) {
        log_error("cannot create a curl easy handle");
        free(body);
        return NULL;
    }
    req = xcalloc(1, sizeof(*req));
    req->cx = cx;
    req->easy = easy;
    req->body = body;
    req->len = len;
    req->post = post;
    req->content_type = content_type ? xstrdup(content_type) : NULL;
    req->cb = cb;
    req->arg = arg;
    sbuf_init(&req->resp);
    curlx_req_setopts(req, path, timeout_ms);
    if (curlx_req_headers(req) < 0) {
        log_error("cannot build request headers");
        curlx_req_free(req);
        return NULL;
    }
    if (post) {
        curl_easy_setopt(easy, CURLOPT_POST, 1L);
        curl_easy_setopt(easy, CURLOPT_POSTFIELDS,
            req->body != NULL ? req->body : "");
        curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    } else {
        curl_easy_setopt(easy, CURLOPT_HTTPGET, 1L);
    }

    mc = curl_multi_add_handle(cx->multi, easy);
    if (mc != CURLM_OK) {
        log_error("cannot start request: %s", curl_multi_strerror(mc));
        curlx_req_free(req);
        return NULL;
    }
    LIST_INSERT_HEAD(&cx->reqs, req, link);
    return req;
}

void
curlx_error_text(int rc, long http_status, const struct sbuf *body, char *out,
    size_t len)
{
    const cJSON *e, *code, *msg;
    cJSON *root = NULL;

    if (rc == -EPROTO && body != NULL && body->len > 0) {
        snprintf(out, len, "TLS: %s", body->buf);
        return;
    }
    if (rc < 0) {
        snprintf(out, len, "%s", uv_strerror(rc));
        return;
    }
    if (body != NULL && body->len > 0 &&
        jsonx_parse(body->buf, body->len, &root, NULL) == 0 &&
        (e = cJSON_GetObjectItemCaseSensitive(root, "error")) != NULL &&
        cJSON_IsString(code = cJSON_GetObjectItemCaseSensitive(e, "code")) &&
        cJSON_IsString(msg = cJSON_GetObjectItemCaseSensitive(e, "message")))
        snprintf(out, len, "HTTP %ld %s: %s", http_status, code->valuestring,
            msg->valuestring);
    else
        snprintf(out, len, "HTTP %ld", http_status);
    cJSON_Delete(root);
}
