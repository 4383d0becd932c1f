/*
 * test_cli_http.c - the CLI's HTTP client (cli/http_client.c) against a
 * real server on a Unix socket and on loopback TCP: a child process that
 * answers each request by its path with a reply of one framing
 * (Content-Length, chunked in pieces, up to the close), or with
 * something that is not HTTP, nothing, half a reply, or no reply at all;
 * the connection kept between requests, and replaced when the server
 * closed it meanwhile; the request as sent; the failures classified.
 * TLS against the real scheduler is t1016's.
 */
#include "cli/http_client.h"

#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/sbuf.h"
#include "common/xalloc.h"
#include "tests/tap.h"

/* ---- the server ------------------------------------------------------- */

/* Read one request head and body from fd into req; 0, 1 for a TLS
 * handshake (not HTTP), or -1 at the end. */
static int
srv_read_request(int fd, struct sbuf *req)
{
    char buf[4096];
    const char *end, *cl;
    size_t want;

    sbuf_reset(req);
    for (;;) {
        ssize_t n;

        if ((end = strstr(req->buf, "\r\n\r\n")) != NULL) {
            cl = strcasestr(req->buf, "Content-Length: ");
            want = (size_t)(end + 4 - req->buf) +
                   (cl && cl < end ? strtoul(cl + 16, NULL, 10) : 0);
            if (req->len >= want)
                return 0;
        }
        n = read(fd, buf, sizeof(buf));
        if (n <= 0)
            return -1;
        sbuf_add(req, buf, (size_t)n);
        if (req->buf[0] == 0x16)
            return 1;
    }
}

static void
srv_send(int fd, const char *s)
{
    size_t len = strlen(s);

    while (len > 0) {
        ssize_t n = write(fd, s, len);

        if (n <= 0)
            return;
        s += n;
        len -= (size_t)n;
    }
}

/* Answer one request of connection nconn; returns whether the
 * connection goes on. */
static bool
srv_answer(int fd, const struct sbuf *req, int nconn)
{
    char *r = NULL;
    bool more = true;

    if (strncmp(req->buf, "GET /cl ", 8) == 0) {
        r = xasprintf("HTTP/1.1 200 OK\r\nX-Conn: %d\r\nX-Pad:  v  \r\n"
                      "Content-Length: 6\r\n\r\nconn=%d",
            nconn, nconn);
    } else if (strncmp(req->buf, "GET /chunked ", 13) == 0) {
        srv_send(fd, "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n"
                     "\r\n5\r\nhello\r\n");
        usleep(50000);
        srv_send(fd, "6\r\n world\r\n0\r\n\r\n");
    } else if (strncmp(req->buf, "GET /eof ", 9) == 0) {
        r = xstrdup("HTTP/1.0 200 OK\r\n\r\nto the close");
        more = false;
    } else if (strncmp(req->buf, "GET /stale ", 11) == 0) {
        /* Says keep-alive, then closes: the next request finds it gone. */
        r = xasprintf("HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nconn=%d",
            nconn);
        more = false;
    } else if (strncmp(req->buf, "GET /ssh ", 9) == 0) {
        r = xstrdup("SSH-2.0-OpenSSH_9.2\r\n");
        more = false;
    } else if (strncmp(req->buf, "GET /empty ", 11) == 0 ||
               strncmp(req->buf, "POST /empty ", 12) == 0) {
        more = false;
    } else if (strncmp(req->buf, "GET /short ", 11) == 0) {
        r = xstrdup("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
        more = false;
    } else if (strncmp(req->buf, "GET /silent ", 12) == 0) {
        sleep(5);
        more = false;
    } else if (strncmp(req->buf, "GET /continue ", 14) == 0) {
        r = xstrdup("HTTP/1.1 100 Continue\r\nX-Early: 1\r\n\r\n"
                    "HTTP/1.1 200 OK\r\nX-Late: 1\r\nContent-Length: 2\r\n"
                    "Connection: close\r\n\r\nok");
        more = false;
    } else {
        /* The request as received, as the body. */
        r = xasprintf("HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n%s",
            req->len, req->buf);
    }
    if (r)
        srv_send(fd, r);
    free(r);
    return more;
}

/* A child serving lfd, one connection at a time, until killed. */
static pid_t
srv_start(int lfd)
{
    pid_t pid = fork();
    struct sbuf req;
    int nconn = 0;

    if (pid != 0) {
        close(lfd);
        return pid;
    }
    sbuf_init(&req);
    for (;;) {
        int fd = accept(lfd, NULL, NULL), rc;

        if (fd < 0)
            continue;
        nconn++;
        while ((rc = srv_read_request(fd, &req)) == 0 &&
               srv_answer(fd, &req, nconn))
            ;
        if (rc == 1)
            srv_send(fd, "HTTP/1.1 400 Bad Request\r\nConnection: close\r\n"
                         "Content-Length: 0\r\n\r\n");
        close(fd);
    }
}

static int
listen_unix(const char *path)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);

    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    unlink(path);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        listen(fd, 8) < 0)
        return -1;
    return fd;
}

/* A loopback TCP socket; listening unless closed_port, whose port
 * nothing listens on after. */
static int
listen_tcp(int *port, bool closed_port)
{
    struct sockaddr_in sa = { .sin_family = AF_INET,
        .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) < 0)
        return -1;
    *port = ntohs(sa.sin_port);
    if (closed_port) {
        close(fd);
        return -1;
    }
    return listen(fd, 8) < 0 ? -1 : fd;
}

/* ---- the client ------------------------------------------------------- */

struct got {
    struct sbuf headers; /* "name=value;" each */
    struct sbuf body;
};

static void
got_header(void *arg, const char *n, size_t nl, const char *v, size_t vl)
{
    struct got *g = arg;

    sbuf_addf(&g->headers, "%.*s=%.*s;", (int)nl, n, (int)vl, v);
}

static void
got_reset(void *arg)
{
    sbuf_reset(&((struct got *)arg)->headers);
}

static void
got_body(void *arg, const char *data, size_t len)
{
    sbuf_add(&((struct got *)arg)->body, data, len);
}

static struct got g;
static const struct hc_sink sink = { .header = got_header,
    .reset = got_reset,
    .body = got_body,
    .arg = &g };

/* GET (or POST body) path from target on c. */
static long
req(struct hc_conn *c, const char *target, const char *path, const char *body,
    long timeout_ms, struct hc_error *e)
{
    struct hc_request r = { .target = target,
        .method = body ? "POST" : "GET",
        .path = path,
        .headers = "Accept: application/json\r\n",
        .body = body,
        .body_len = body ? strlen(body) : 0,
        .connect_timeout_ms = 2000,
        .timeout_ms = timeout_ms };

    sbuf_reset(&g.headers);
    sbuf_reset(&g.body);
    return hc_perform(c, &r, &sink, e);
}

static void
test_framing(const char *sock)
{
    struct hc_conn *c = hc_conn_new();
    struct hc_error e;

    is_int(req(c, sock, "/cl", NULL, 10000, &e), 200, "Content-Length reply");
    is_str(g.body.buf, "conn=1", "its body");
    is_str(g.headers.buf, "X-Conn=1;X-Pad=v  ;Content-Length=6;",
        "its headers, the value's leading blanks gone");
    is_int(req(c, sock, "/cl", NULL, 10000, &e), 200, "again");
    is_str(g.body.buf, "conn=1", "on the same connection");
    is_int(req(c, sock, "/chunked", NULL, 10000, &e), 201, "chunked reply");
    is_str(g.body.buf, "hello world", "its chunks, arriving apart, joined");
    is_int(req(c, sock, "/eof", NULL, 10000, &e), 200, "reply to the close");
    is_str(g.body.buf, "to the close", "its body");
    is_int(req(c, sock, "/cl", NULL, 10000, &e), 200, "after a close");
    is_str(g.body.buf, "conn=2", "a new connection");
    is_int(req(c, sock, "/stale", NULL, 10000, &e), 200, "keep-alive, closed");
    is_int(req(c, sock, "/cl", NULL, 10000, &e), 200,
        "a connection the server closed meanwhile is replaced");
    is_str(g.body.buf, "conn=3", "by a new one");
    is_int(req(c, sock, "/continue", NULL, 10000, &e), 200, "after a 100");
    is_str(g.headers.buf, "X-Late=1;Content-Length=2;Connection=close;",
        "only the final reply's headers");
    is_str(g.body.buf, "ok", "its body");
    hc_conn_free(c);
}

static void
test_request_text(const char *sock)
{
    struct hc_conn *c = hc_conn_new();
    struct hc_error e;
    char *target = xasprintf("%s", sock);

    is_int(req(c, target, "/v1/jobs?x=%20", "{\"a\":1}", 10000, &e), 200,
        "a POST");
    ok(strncmp(g.body.buf,
           "POST /v1/jobs?x=%20 HTTP/1.1\r\nHost: localhost\r\n", 47) == 0,
        "request line and Host for a socket");
    ok(strstr(g.body.buf, "\r\nAccept: application/json\r\n") &&
            strstr(g.body.buf, "\r\nContent-Length: 7\r\n\r\n{\"a\":1}") &&
            strstr(g.body.buf, "\r\nUser-Agent: lockstep/"),
        "the caller's headers, the length and the body");
    is_int(req(c, target, "/v1/x", NULL, 10000, &e), 200, "a GET");
    ok(strstr(g.body.buf, "Content-Length") == NULL, "a GET has no length");
    free(target);
    hc_conn_free(c);
}

/* The server's number of the connection of the last /cl reply (its
 * X-Conn header: the body is cut at 6 bytes). */
static int
conn_no(void)
{
    const char *h = strstr(g.headers.buf, "X-Conn=");

    return h ? atoi(h + 7) : -1;
}

static void
test_failures(const char *sock, int port, int closed_port)
{
    struct hc_conn *c = hc_conn_new();
    struct hc_error e;
    char *url = xasprintf("http://127.0.0.1:%d/prefix", port);
    char *closed = xasprintf("http://127.0.0.1:%d", closed_port);
    char *tls = xasprintf("https://127.0.0.1:%d", port);
    int n0;

    is_int(req(c, url, "/v1/y", NULL, 10000, &e), 200, "over TCP");
    ok(strncmp(g.body.buf, "GET /prefix/v1/y HTTP/1.1\r\n", 27) == 0,
        "the URL's path comes first");
    ok(strstr(g.body.buf, "\r\nHost: 127.0.0.1:") != NULL, "Host: the URL's");
    is_int(req(c, sock, "/ssh", NULL, 10000, &e), -1, "not HTTP");
    ok(e.fail == HC_NOT_HTTP && strstr(e.msg, "'SSH-2.0-OpenSSH_9.2'"),
        "is said, with what came: %s", e.msg);
    is_int(req(c, sock, "/empty", NULL, 10000, &e), -1, "nothing");
    ok(e.fail == HC_EMPTY, "an empty reply: %s", e.msg);
    /* Closed or reset before any reply on a new connection (a server
     * dying with it in its listen queue): a GET is tried once more, a
     * POST never (it may have been taken). Connections counted by the
     * server: a fresh one's number before and after. */
    hc_conn_free(c);
    c = hc_conn_new();
    is_int(req(c, sock, "/cl", NULL, 10000, &e), 200, "a connection");
    n0 = conn_no();
    hc_conn_free(c);
    c = hc_conn_new();
    is_int(req(c, sock, "/empty", NULL, 10000, &e), -1, "a GET: nothing");
    is_int(req(c, sock, "/empty", "{}", 10000, &e), -1, "a POST: nothing");
    ok(e.fail == HC_EMPTY, "said as such: %s", e.msg);
    is_int(req(c, sock, "/cl", NULL, 10000, &e), 200, "another connection");
    is_int(conn_no(), n0 + 4, "the GET was tried twice, the POST once");
    hc_conn_free(c);
    c = hc_conn_new();
    is_int(req(c, sock, "/short", NULL, 10000, &e), -1, "half a reply");
    ok(e.fail == HC_IO, "cut short: %s", e.msg);
    is_int(req(c, sock, "/silent", NULL, 300, &e), -1, "no reply in time");
    ok(e.fail == HC_TIMEOUT, "a timeout: %s", e.msg);
    is_int(req(c, closed, "/v1/x", NULL, 10000, &e), -1, "refused");
    ok(e.fail == HC_CONNECT && e.oserr == ECONNREFUSED, "ECONNREFUSED: %s",
        e.msg);
    is_int(req(c, "/nonexistent/x.sock", "/v1/x", NULL, 10000, &e), -1,
        "no socket");
    ok(e.fail == HC_CONNECT && e.oserr == ENOENT, "ENOENT: %s", e.msg);
    is_int(req(c, "http://no-such-host.invalid:9", "/", NULL, 10000, &e), -1,
        "no such host");
    ok(e.fail == HC_RESOLVE && strstr(e.msg, "no-such-host.invalid"), "%s",
        e.msg);
    is_int(req(c, tls, "/v1/x", NULL, 10000, &e), -1, "TLS to plain HTTP");
    ok(e.fail == HC_TLS, "a TLS failure: %s", e.msg);
    free(url);
    free(closed);
    free(tls);
    hc_conn_free(c);
}

static void
test_escape(void)
{
    char *s = hc_escape("a b/c?d=é~-._");

    is_str(s, "a%20b%2Fc%3Fd%3D%C3%A9~-._", "escaped, unreserved kept");
    free(s);
}

int
main(void)
{
    char dir[] = "/tmp/test_cli_http.XXXXXX";
    char *sock;
    int port = 0, closed_port = 0, lfd, tfd;
    pid_t p1, p2;

    plan(NO_PLAN);
    sbuf_init(&g.headers);
    sbuf_init(&g.body);
    if (mkdtemp(dir) == NULL)
        return 1;
    sock = xasprintf("%s/s.sock", dir);
    lfd = listen_unix(sock);
    tfd = listen_tcp(&port, false);
    listen_tcp(&closed_port, true);
    ok(lfd >= 0 && tfd >= 0, "servers listen");
    p1 = srv_start(lfd);
    p2 = srv_start(tfd);
    test_framing(sock);
    test_request_text(sock);
    test_failures(sock, port, closed_port);
    test_escape();
    kill(p1, SIGKILL);
    kill(p2, SIGKILL);
    waitpid(p1, NULL, 0);
    waitpid(p2, NULL, 0);
    unlink(sock);
    rmdir(dir);
    free(sock);
    sbuf_release(&g.headers);
    sbuf_release(&g.body);
    return done_testing();
}
