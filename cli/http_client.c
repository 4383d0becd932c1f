/*
 * http_client.c - the CLI's own HTTP/1.1 client (http_client.h)
 *
 * A request is: find or make the connection (a Unix socket, or
 * getaddrinfo and a non-blocking connect to each address in turn, then
 * the TLS handshake for https://), write the request, feed what comes
 * back to http_parser until its message is complete. Every wait is a
 * poll() bounded by the request's deadline. The connection stays open
 * when the reply allows it (HTTP/1.1 without "Connection: close").
 */
#include "cli/http_client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <http_parser.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/sbuf.h"
#include "common/xalloc.h"
#include "version.h"

struct hc_conn {
    int fd;       /* -1 when closed */
    SSL *ssl;     /* on fd, for https:// */
    char *key;    /* target and CA of the open connection */
    SSL_CTX *ctx; /* kept for further connections with ... */
    char *ctx_ca; /* ... this CA file ("": the system's store) */
};

/* A target, taken apart. */
struct hc_url {
    bool tls;
    const char *sock; /* a Unix socket's path, or NULL */
    char host[256];   /* without brackets */
    char port[8];
    char authority[300]; /* for Host: */
    const char *prefix;  /* the URL's path, put before each request's */
    size_t prefix_len;
};

static int hc_fail(struct hc_error *err, enum hc_fail fail, const char *fmt,
    ...) __attribute__((format(printf, 3, 4)));

static int
hc_fail(struct hc_error *err, enum hc_fail fail, const char *fmt, ...)
{
    va_list ap;

    err->fail = fail;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    return -1;
}

static int64_t
hc_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- targets --------------------------------------------------------- */

static int
hc_parse_url(const char *target, struct hc_url *u, struct hc_error *err)
{
    const char *a, *end, *port = NULL, *hend;

    memset(u, 0, sizeof(*u));
    if (target[0] == '/') {
        u->sock = target;
        snprintf(u->authority, sizeof(u->authority), "localhost");
        return 0;
    }
    if (strncmp(target, "https://", 8) == 0) {
        u->tls = true;
        a = target + 8;
    } else if (strncmp(target, "http://", 7) == 0) {
        a = target + 7;
    } else {
        return hc_fail(err, HC_BAD_URL, "unsupported URL '%s'", target);
    }
    end = a + strcspn(a, "/?#");
    if (a[0] == '[') {
        hend = memchr(a, ']', (size_t)(end - a));
        if (hend == NULL)
            return hc_fail(err, HC_BAD_URL, "bad IPv6 address in '%s'", target);
        if (hend + 1 < end && hend[1] == ':')
            port = hend + 2;
        a++;
    } else {
        hend = memchr(a, ':', (size_t)(end - a));
        if (hend != NULL)
            port = hend + 1;
        else
            hend = end;
    }
    if (hend == a || (size_t)(hend - a) >= sizeof(u->host) ||
        (port && ((size_t)(end - port) >= sizeof(u->port) || port == end)))
        return hc_fail(err, HC_BAD_URL, "bad host or port in '%s'", target);
    memcpy(u->host, a, (size_t)(hend - a));
    if (port)
        memcpy(u->port, port, (size_t)(end - port));
    else
        snprintf(u->port, sizeof(u->port), "%s", u->tls ? "443" : "80");
    a = target + (u->tls ? 8 : 7);
    snprintf(u->authority, sizeof(u->authority), "%.*s", (int)(end - a), a);
    u->prefix = end;
    u->prefix_len = strcspn(end, "?#");
    return 0;
}

/* ---- waiting ----------------------------------------------------------- */

/* Wait for events on fd until deadline: 1 ready, 0 timed out, -1 error
 * (errno). */
static int
hc_wait(int fd, short events, int64_t deadline)
{
    for (;;) {
        struct pollfd p = { .fd = fd, .events = events };
        int64_t left = deadline - hc_now_ms();
        int n;

        if (left <= 0)
            return 0;
        n = poll(&p, 1, left > 60000 ? 60000 : (int)left);
        if (n > 0)
            return 1;
        if (n < 0 && errno != EINTR)
            return -1;
    }
}

/* ---- connecting -------------------------------------------------------- */

static int
hc_connect_unix(const struct hc_url *u, long timeout_ms, struct hc_error *err)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    struct timeval tv = { .tv_sec = timeout_ms / 1000,
        .tv_usec = (timeout_ms % 1000) * 1000 };
    int fd;

    if (strlen(u->sock) >= sizeof(sa.sun_path)) {
        err->oserr = ENAMETOOLONG;
        return hc_fail(err, HC_CONNECT, "%s", strerror(ENAMETOOLONG));
    }
    memcpy(sa.sun_path, u->sock, strlen(u->sock) + 1);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        err->oserr = errno;
        return hc_fail(err, HC_CONNECT, "%s", strerror(errno));
    }
    /* A blocking connect, bounded: it waits only while the listener's
     * backlog is full. */
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        int e = errno;

        close(fd);
        if (e == EAGAIN || e == EINPROGRESS)
            return hc_fail(err, HC_TIMEOUT,
                "Connection timed out after %ld milliseconds", timeout_ms);
        err->oserr = e;
        return hc_fail(err, HC_CONNECT, "%s", strerror(e));
    }
    tv = (struct timeval){ 0 };
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

/* One address: the connected socket, -1 with errno (ETIMEDOUT past
 * deadline). */
static int
hc_connect_addr(const struct addrinfo *ai, int64_t deadline)
{
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
        0);
    int e = 0, one = 1, w;
    socklen_t len = sizeof(e);

    if (fd < 0)
        return -1;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
        if (errno != EINPROGRESS)
            goto fail;
        if ((w = hc_wait(fd, POLLOUT, deadline)) <= 0) {
            if (w == 0)
                errno = ETIMEDOUT;
            goto fail;
        }
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) < 0)
            goto fail;
        if (e != 0) {
            errno = e;
            goto fail;
        }
    }
    /* Requests are small and answered at once: no Nagle delay. */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
fail:
    e = errno;
    close(fd);
    errno = e;
    return -1;
}

static int
hc_connect_tcp(const struct hc_url *u, int64_t deadline, long timeout_ms,
    struct hc_error *err)
{
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *ai;
    int rc = getaddrinfo(u->host, u->port, &hints, &res), fd = -1, e = 0;

    if (rc != 0)
        return hc_fail(err, HC_RESOLVE, "Could not resolve host: %s (%s)",
            u->host, rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
    for (ai = res; ai != NULL && fd < 0; ai = ai->ai_next) {
        fd = hc_connect_addr(ai, deadline);
        if (fd < 0)
            e = errno;
        if (e == ETIMEDOUT)
            break;
    }
    freeaddrinfo(res);
    if (fd >= 0)
        return fd;
    if (e == ETIMEDOUT)
        return hc_fail(err, HC_TIMEOUT,
            "Connection timed out after %ld milliseconds", timeout_ms);
    err->oserr = e;
    return hc_fail(err, HC_CONNECT, "%s", strerror(e));
}

/* ---- TLS --------------------------------------------------------------- */

/* The newest OpenSSL error as text, or fallback; clears the queue. */
static const char *
hc_ssl_error(char *buf, size_t len, const char *fallback)
{
    unsigned long e = ERR_peek_last_error();

    if (e == 0)
        snprintf(buf, len, "%s", fallback);
    else
        ERR_error_string_n(e, buf, len);
    ERR_clear_error();
    return buf;
}

/* The context for CA file ca (NULL: the system's store), made once. */
static SSL_CTX *
hc_tls_ctx(struct hc_conn *c, const char *ca, struct hc_error *err)
{
    const char *want = ca ? ca : "";
    char buf[200];
    FILE *f;

    if (c->ctx && strcmp(c->ctx_ca, want) == 0)
        return c->ctx;
    SSL_CTX_free(c->ctx);
    free(c->ctx_ca);
    c->ctx_ca = xstrdup(want);
    c->ctx = SSL_CTX_new(TLS_client_method());
    if (c->ctx == NULL) {
        hc_fail(err, HC_TLS, "%s", hc_ssl_error(buf, sizeof(buf), "no TLS"));
        return NULL;
    }
    SSL_CTX_set_min_proto_version(c->ctx, TLS1_2_VERSION);
    /* A server that closes without close_notify ends the reply; its
     * framing (length, chunks) says whether it was whole. */
    SSL_CTX_set_options(c->ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
    SSL_CTX_set_verify(c->ctx, SSL_VERIFY_PEER, NULL);
    if (ca == NULL) {
        SSL_CTX_set_default_verify_paths(c->ctx);
        return c->ctx;
    }
    if (SSL_CTX_load_verify_locations(c->ctx, ca, NULL) == 1)
        return c->ctx;
    if ((f = fopen(ca, "r")) == NULL) {
        hc_fail(err, HC_TLS_CA, "%s", strerror(errno));
    } else {
        fclose(f);
        hc_fail(err, HC_TLS_CA, "no PEM certificate could be read from it (%s)",
            hc_ssl_error(buf, sizeof(buf), "?"));
    }
    ERR_clear_error();
    SSL_CTX_free(c->ctx);
    c->ctx = NULL;
    return NULL;
}

/* Why the handshake of ssl failed, in err. */
static int
hc_tls_failed(SSL *ssl, int r, const struct hc_url *u, struct hc_error *err)
{
    int se = errno, e = SSL_get_error(ssl, r);
    long v = SSL_get_verify_result(ssl);
    char buf[200];

    if (v == X509_V_ERR_HOSTNAME_MISMATCH ||
        v == X509_V_ERR_IP_ADDRESS_MISMATCH)
        return hc_fail(err, HC_TLS_VERIFY,
            "SSL: no alternative certificate subject name matches target "
            "host name '%s'",
            u->host);
    if (v != X509_V_OK)
        return hc_fail(err, HC_TLS_VERIFY, "SSL certificate problem: %s",
            X509_verify_cert_error_string(v));
    if (e == SSL_ERROR_SYSCALL && ERR_peek_last_error() == 0)
        return hc_fail(err, HC_TLS, "%s",
            se ? strerror(se)
               : "the server closed the connection in the "
                 "TLS handshake");
    return hc_fail(err, HC_TLS, "%s",
        hc_ssl_error(buf, sizeof(buf), "TLS handshake failed"));
}

static int
hc_tls_start(struct hc_conn *c, const struct hc_url *u, const char *ca,
    int64_t deadline, long timeout_ms, struct hc_error *err)
{
    SSL_CTX *ctx = hc_tls_ctx(c, ca, err);
    unsigned char ip[16];
    int r, w;

    if (ctx == NULL)
        return -1;
    c->ssl = SSL_new(ctx);
    if (c->ssl == NULL || SSL_set_fd(c->ssl, c->fd) != 1)
        return hc_fail(err, HC_TLS, "cannot set up TLS");
    /* The name checked against the certificate: never connect without. */
    if (inet_pton(AF_INET, u->host, ip) == 1 ||
        inet_pton(AF_INET6, u->host, ip) == 1) {
        if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), u->host) != 1)
            return hc_fail(err, HC_TLS, "cannot check the certificate for %s",
                u->host);
    } else if (SSL_set_tlsext_host_name(c->ssl, u->host) != 1 ||
               SSL_set1_host(c->ssl, u->host) != 1) {
        return hc_fail(err, HC_TLS, "cannot check the certificate for %s",
            u->host);
    }
    for (;;) {
        int e;

        errno = 0;
        if ((r = SSL_connect(c->ssl)) == 1)
            break;
        e = SSL_get_error(c->ssl, r);

        if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
            return hc_tls_failed(c->ssl, r, u, err);
        w = hc_wait(c->fd, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT,
            deadline);
        if (w == 0)
            return hc_fail(err, HC_TIMEOUT,
                "Connection timed out after %ld milliseconds (TLS handshake)",
                timeout_ms);
        if (w < 0)
            return hc_fail(err, HC_TLS, "%s", strerror(errno));
    }
    return 0;
}

static void
hc_close(struct hc_conn *c)
{
    if (c->ssl) {
        SSL_free(c->ssl);
        c->ssl = NULL;
    }
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    free(c->key);
    c->key = NULL;
}

/* Open a connection to req's target; 0 or -1 with err. */
static int
hc_open(struct hc_conn *c, const struct hc_request *req, const struct hc_url *u,
    int64_t deadline, struct hc_error *err)
{
    int64_t cdl = hc_now_ms() + req->connect_timeout_ms;

    if (cdl > deadline)
        cdl = deadline;
    hc_close(c);
    c->fd = u->sock ? hc_connect_unix(u, req->connect_timeout_ms, err)
                    : hc_connect_tcp(u, cdl, req->connect_timeout_ms, err);
    if (c->fd < 0)
        return -1;
    if (u->tls &&
        hc_tls_start(c, u, req->ca, cdl, req->connect_timeout_ms, err) < 0) {
        hc_close(c);
        return -1;
    }
    c->key = xasprintf("%s\n%s", req->target, req->ca ? req->ca : "");
    return 0;
}

/* ---- bytes ------------------------------------------------------------- */

/* Write all of buf; 0, or -1 with err (HC_IO, HC_TIMEOUT). */
static int
hc_write(struct hc_conn *c, const char *buf, size_t len, int64_t deadline,
    long timeout_ms, struct hc_error *err)
{
    while (len > 0) {
        ssize_t n;
        short ev = POLLOUT;
        int w;

        if (c->ssl) {
            size_t done = 0;
            int r = SSL_write_ex(c->ssl, buf, len, &done), e;

            n = r == 1 ? (ssize_t)done : -1;
            e = r == 1 ? 0 : SSL_get_error(c->ssl, r);
            if (e == SSL_ERROR_WANT_READ)
                ev = POLLIN;
            else if (e != 0 && e != SSL_ERROR_WANT_WRITE)
                return hc_fail(err, HC_IO, "Send failure: %s",
                    e == SSL_ERROR_SYSCALL ? strerror(errno) : "TLS error");
        } else {
            n = send(c->fd, buf, len, MSG_NOSIGNAL);
            if (n < 0 && errno != EAGAIN && errno != EINTR)
                return hc_fail(err, HC_IO, "Send failure: %s", strerror(errno));
        }
        if (n > 0) {
            buf += n;
            len -= (size_t)n;
            continue;
        }
        if ((w = hc_wait(c->fd, ev, deadline)) == 0)
            return hc_fail(err, HC_TIMEOUT,
                "Operation timed out after %ld milliseconds", timeout_ms);
        if (w < 0)
            return hc_fail(err, HC_IO, "Send failure: %s", strerror(errno));
    }
    return 0;
}

/* Read what is there, waiting until deadline: the bytes read (> 0), 0 at
 * the end of the stream, -1 with err. */
static ssize_t
hc_read(struct hc_conn *c, char *buf, size_t len, int64_t deadline,
    long timeout_ms, struct hc_error *err)
{
    for (;;) {
        short ev = POLLIN;
        ssize_t n;
        int w;

        if (c->ssl) {
            size_t done = 0;
            int r, e;

            errno = 0;
            r = SSL_read_ex(c->ssl, buf, len, &done);

            if (r == 1)
                return (ssize_t)done;
            e = SSL_get_error(c->ssl, r);
            if (e == SSL_ERROR_ZERO_RETURN ||
                (e == SSL_ERROR_SYSCALL && errno == 0))
                return 0;
            if (e == SSL_ERROR_WANT_WRITE)
                ev = POLLOUT;
            else if (e != SSL_ERROR_WANT_READ)
                return hc_fail(err, HC_IO, "Recv failure: %s",
                    e == SSL_ERROR_SYSCALL ? strerror(errno) : "TLS error");
        } else {
            n = recv(c->fd, buf, len, 0);
            if (n >= 0)
                return n;
            if (errno != EAGAIN && errno != EINTR)
                return hc_fail(err, HC_IO, "Recv failure: %s", strerror(errno));
        }
        if ((w = hc_wait(c->fd, ev, deadline)) == 0)
            return hc_fail(err, HC_TIMEOUT,
                "Operation timed out after %ld milliseconds", timeout_ms);
        if (w < 0)
            return hc_fail(err, HC_IO, "Recv failure: %s", strerror(errno));
    }
}

/* ---- the reply --------------------------------------------------------- */

struct hc_reply {
    http_parser parser;
    const struct hc_sink *sink;
    struct sbuf field, value; /* the header being read */
    bool in_value;
    bool complete;
    bool leftover; /* bytes came after the complete reply */
};

static void
hc_header_done(struct hc_reply *r)
{
    if (r->in_value || r->field.len > 0)
        r->sink->header(r->sink->arg, r->field.buf, r->field.len, r->value.buf,
            r->value.len);
    sbuf_reset(&r->field);
    sbuf_reset(&r->value);
    r->in_value = false;
}

static int
hc_on_field(http_parser *p, const char *at, size_t len)
{
    struct hc_reply *r = p->data;

    if (r->in_value)
        hc_header_done(r);
    sbuf_add(&r->field, at, len);
    return 0;
}

static int
hc_on_value(http_parser *p, const char *at, size_t len)
{
    struct hc_reply *r = p->data;

    sbuf_add(&r->value, at, len);
    r->in_value = true;
    return 0;
}

static int
hc_on_headers(http_parser *p)
{
    hc_header_done(p->data);
    return 0;
}

static int
hc_on_body(http_parser *p, const char *at, size_t len)
{
    struct hc_reply *r = p->data;

    r->sink->body(r->sink->arg, at, len);
    return 0;
}

static int
hc_on_complete(http_parser *p)
{
    struct hc_reply *r = p->data;

    /* An interim reply (100 Continue): the final one follows. */
    if (p->status_code / 100 == 1) {
        r->sink->reset(r->sink->arg);
        return 0;
    }
    r->complete = true;
    http_parser_pause(p, 1);
    return 0;
}

static const http_parser_settings hc_settings = {
    .on_header_field = hc_on_field,
    .on_header_value = hc_on_value,
    .on_headers_complete = hc_on_headers,
    .on_body = hc_on_body,
    .on_message_complete = hc_on_complete,
};

/* What a peer that does not speak HTTP sent, for a person: its first
 * bytes, printable. */
static int
hc_not_http(const char *buf, size_t len, struct hc_error *err)
{
    char shown[48];
    size_t i, n = len < sizeof(shown) - 1 ? len : sizeof(shown) - 1;

    for (i = 0; i < n && buf[i] != '\r' && buf[i] != '\n'; i++)
        shown[i] = buf[i] >= 0x20 && buf[i] < 0x7f ? buf[i] : '?';
    shown[i] = '\0';
    return hc_fail(err, HC_NOT_HTTP, "its reply begins '%s'", shown);
}

/* Feed buf to the parser; -1 with err when it is not HTTP. */
static int
hc_feed(struct hc_reply *r, const char *buf, size_t len, bool first,
    struct hc_error *err)
{
    enum http_errno e;
    size_t used = http_parser_execute(&r->parser, &hc_settings, buf, len);

    e = HTTP_PARSER_ERRNO(&r->parser);
    if (e == HPE_OK || (e == HPE_PAUSED && r->complete)) {
        /* More than the reply: the connection is out of step, and is not
         * kept for the next request (its reply would be these bytes). */
        if (r->complete && used < len)
            r->leftover = true;
        return 0;
    }
    if (first && r->parser.status_code == 0)
        return hc_not_http(buf, len, err);
    if (r->parser.status_code == 0)
        return hc_fail(err, HC_NOT_HTTP, "%s", http_errno_description(e));
    return hc_fail(err, HC_IO, "a broken HTTP reply (%s)",
        http_errno_description(e));
}

/* Read the reply. *got: whether any byte of it came. */
static int
hc_read_reply(struct hc_conn *c, struct hc_reply *r, int64_t deadline,
    long timeout_ms, bool *got, struct hc_error *err)
{
    char buf[16384];
    bool first;

    *got = false;
    while (!r->complete) {
        ssize_t n = hc_read(c, buf, sizeof(buf), deadline, timeout_ms, err);

        if (n < 0)
            return -1;
        if (n == 0) {
            if (!*got)
                return hc_fail(err, HC_EMPTY, "Empty reply from server");
            /* The end of a reply that runs to the close. */
            http_parser_execute(&r->parser, &hc_settings, NULL, 0);
            if (r->complete)
                break;
            return hc_fail(err, HC_IO,
                "the connection closed before the reply was complete");
        }
        /* Set before the parse: a reply that broke after its first
         * bytes must not be retried into a response already begun. */
        first = !*got;
        *got = true;
        if (hc_feed(r, buf, (size_t)n, first, err) < 0)
            return -1;
    }
    return 0;
}

/* ---- requests ---------------------------------------------------------- */

static char *
hc_request_text(const struct hc_request *req, const struct hc_url *u,
    size_t *len)
{
    struct sbuf sb;

    sbuf_init(&sb);
    sbuf_addf(&sb,
        "%s %.*s%s HTTP/1.1\r\nHost: %s\r\nUser-Agent: lockstep/%s\r\n",
        req->method, (int)u->prefix_len, u->prefix ? u->prefix : "", req->path,
        u->authority, LOCKSTEP_VERSION);
    if (req->headers)
        sbuf_addstr(&sb, req->headers);
    if (req->body || strcmp(req->method, "POST") == 0)
        sbuf_addf(&sb, "Content-Length: %zu\r\n",
            req->body ? req->body_len : 0);
    sbuf_addstr(&sb, "\r\n");
    if (req->body)
        sbuf_add(&sb, req->body, req->body_len);
    return sbuf_detach(&sb, len);
}

/* One exchange on the open connection; the status, or -1 with err and
 * *got saying whether any of the reply had come. */
static long
hc_exchange(struct hc_conn *c, const struct hc_request *req,
    const struct hc_url *u, const struct hc_sink *sink, int64_t deadline,
    bool *got, struct hc_error *err)
{
    struct hc_reply r = { .sink = sink };
    size_t len;
    char *text = hc_request_text(req, u, &len);
    int rc;

    *got = false;
    http_parser_init(&r.parser, HTTP_RESPONSE);
    r.parser.data = &r;
    sbuf_init(&r.field);
    sbuf_init(&r.value);
    rc = hc_write(c, text, len, deadline, req->timeout_ms, err);
    if (rc == 0)
        rc = hc_read_reply(c, &r, deadline, req->timeout_ms, got, err);
    free(text);
    sbuf_release(&r.field);
    sbuf_release(&r.value);
    if (rc < 0)
        return -1;
    if (!http_should_keep_alive(&r.parser) || r.leftover ||
        (c->ssl != NULL && SSL_pending(c->ssl) > 0))
        hc_close(c);
    return r.parser.status_code;
}

long
hc_perform(struct hc_conn *c, const struct hc_request *req,
    const struct hc_sink *sink, struct hc_error *err)
{
    struct sigaction ign = { .sa_handler = SIG_IGN }, old;
    int64_t deadline = hc_now_ms() + req->timeout_ms;
    struct hc_url u;
    char *key = xasprintf("%s\n%s", req->target, req->ca ? req->ca : "");
    long status = -1;

    memset(err, 0, sizeof(*err));
    sigemptyset(&ign.sa_mask);
    sigaction(SIGPIPE, &ign, &old);
    if (hc_parse_url(req->target, &u, err) < 0)
        goto out;
    for (int attempt = 0; attempt < 2; attempt++) {
        bool reused = c->fd >= 0 && strcmp(c->key, key) == 0, got;

        if (!reused && hc_open(c, req, &u, deadline, err) < 0)
            break;
        status = hc_exchange(c, req, &u, sink, deadline, &got, err);
        if (status > 0)
            break;
        hc_close(c);
        if (attempt == 1 || got || err->fail == HC_TIMEOUT)
            break;
        /* A kept connection the server closed meanwhile: once more on a
         * new one, as nothing of this request was processed. A new one
         * reset before any reply (a scheduler dying with it in its
         * listen queue) is tried once more only for a GET, which
         * changes nothing, shortly after: the outage then reads as one
         * (refused), and a request that changes state is never sent
         * twice. */
        if (!reused) {
            struct timespec pause = { 0, 100 * 1000 * 1000 };

            if (strcmp(req->method, "GET") != 0 ||
                (err->fail != HC_IO && err->fail != HC_EMPTY))
                break;
            nanosleep(&pause, NULL);
        }
        memset(err, 0, sizeof(*err));
    }
out:
    sigaction(SIGPIPE, &old, NULL);
    free(key);
    return status > 0 ? status : -1;
}

struct hc_conn *
hc_conn_new(void)
{
    struct hc_conn *c = xcalloc(1, sizeof(*c));

    c->fd = -1;
    return c;
}

void
hc_conn_free(struct hc_conn *c)
{
    if (c == NULL)
        return;
    hc_close(c);
    SSL_CTX_free(c->ctx);
    free(c->ctx_ca);
    free(c);
}

char *
hc_escape(const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    struct sbuf sb;

    sbuf_init(&sb);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;

        if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
            (ch >= '0' && ch <= '9') || strchr("-._~", ch) != NULL) {
            sbuf_addch(&sb, (char)ch);
        } else {
            sbuf_addch(&sb, '%');
            sbuf_addch(&sb, hex[ch >> 4]);
            sbuf_addch(&sb, hex[ch & 15]);
        }
    }
    return sbuf_detach(&sb, NULL);
}
