/*
 * test_http_tls.c - the HTTP server's TLS on a real loop
 *
 * The test makes its own certificates with OpenSSL (a CA, a server
 * certificate for 127.0.0.1 signed by it, a second CA, an expired and a
 * rotated certificate) in a temporary directory, then runs the server on
 * the main thread's uv loop with TLS on its TCP listener (127.0.0.1 port
 * 0) and a plain Unix socket beside it. A client thread speaks TLS with
 * blocking sockets and OpenSSL, verifying the server as curl does, and
 * parses the replies with http_parser; raw sockets play the clients that
 * do not speak TLS or speak it too slowly. The test ends with
 * uv_loop_close() == 0.
 */
#include "scheduler/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <http_parser.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "common/log.h"
#include "common/xalloc.h"
#include "tests/tap.h"

#define HEADER_MS 1500
#define WRITE_MS 1500
#define PER_PEER 6

static uv_loop_t loop;
static struct http_server *srv;
static uv_async_t stop_async;
static int tcp_port;
static char dir[] = "/tmp/lockstep-test-tls-XXXXXX";
static char sock_path[100];
static int done_calls;
static atomic_int cancel_calls;
static atomic_int holds;

/* The files: path(name) is "<dir>/<name>". */
static char *
path(const char *name)
{
    static char bufs[8][192];
    static int i;
    char *p = bufs[i++ % 8];

    snprintf(p, sizeof(bufs[0]), "%s/%s", dir, name);
    return p;
}

/* --- certificates ----------------------------------------------------------
 */

static void
add_ext(X509 *x, X509V3_CTX *ctx, int nid, const char *value)
{
    X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, ctx, nid, value);

    if (e == NULL || X509_add_ext(x, e, -1) != 1)
        fatalx("cannot add extension %d", nid);
    X509_EXTENSION_free(e);
}

/* A certificate for key, signed by issuer's key (self-signed when issuer
 * is NULL), valid from `from` to `to` days from now. */
static X509 *
make_cert(EVP_PKEY *key, X509 *issuer, EVP_PKEY *issuer_key, const char *cn,
    bool ca, long from, long to)
{
    static long serial = 1;
    X509 *x = X509_new();
    X509_NAME *name;
    X509V3_CTX v3;

    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), serial++);
    X509_gmtime_adj(X509_getm_notBefore(x), from * 86400);
    X509_gmtime_adj(X509_getm_notAfter(x), to * 86400);
    X509_set_pubkey(x, key);
    name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
        (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : name);
    X509V3_set_ctx_nodb(&v3);
    X509V3_set_ctx(&v3, issuer ? issuer : x, x, NULL, NULL, 0);
    add_ext(x, &v3, NID_subject_key_identifier, "hash");
    if (ca) {
        add_ext(x, &v3, NID_basic_constraints, "critical,CA:TRUE");
        add_ext(x, &v3, NID_key_usage, "critical,keyCertSign,cRLSign");
    } else {
        add_ext(x, &v3, NID_basic_constraints, "CA:FALSE");
        add_ext(x, &v3, NID_ext_key_usage, "serverAuth");
        add_ext(x, &v3, NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost");
    }
    if (X509_sign(x, issuer_key ? issuer_key : key, EVP_sha256()) == 0)
        fatalx("cannot sign a certificate");
    return x;
}

static void
write_pem(const char *name, X509 *x, EVP_PKEY *key)
{
    FILE *f = fopen(path(name), "w");

    if (f == NULL)
        fatal("cannot write %s", name);
    if (x != NULL)
        PEM_write_X509(f, x);
    if (key != NULL)
        PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL);
    fclose(f);
    chmod(path(name), key != NULL ? 0600 : 0644);
}

/* ca.pem, server.pem/.key (CN server-1), other-ca.pem, expired.pem (its
 * key server.key), rotated.pem/.key (CN server-2) and a key readable by
 * everyone (open.key). */
static void
make_certs(void)
{
    EVP_PKEY *cak = EVP_EC_gen("P-256"), *k = EVP_EC_gen("P-256");
    EVP_PKEY *ok_ = EVP_EC_gen("P-256"), *k2 = EVP_EC_gen("P-256");
    X509 *ca = make_cert(cak, NULL, NULL, "test CA", true, 0, 30);
    X509 *other = make_cert(ok_, NULL, NULL, "other CA", true, 0, 30);
    X509 *srvc = make_cert(k, ca, cak, "server-1", false, 0, 30);
    X509 *old = make_cert(k, ca, cak, "server-old", false, -30, -1);
    X509 *rot = make_cert(k2, ca, cak, "server-2", false, 0, 30);

    write_pem("ca.pem", ca, NULL);
    write_pem("other-ca.pem", other, NULL);
    write_pem("server.pem", srvc, NULL);
    write_pem("server.key", NULL, k);
    write_pem("expired.pem", old, NULL);
    write_pem("rotated.pem", rot, NULL);
    write_pem("rotated.key", NULL, k2);
    write_pem("open.key", NULL, k);
    chmod(path("open.key"), 0644);
    X509_free(ca);
    X509_free(other);
    X509_free(srvc);
    X509_free(old);
    X509_free(rot);
    EVP_PKEY_free(cak);
    EVP_PKEY_free(k);
    EVP_PKEY_free(ok_);
    EVP_PKEY_free(k2);
}

/* --- the server side (loop thread) -----------------------------------------
 */

struct defer_ctx {
    uv_timer_t timer;
    struct http_deferred *d;
};

static void
defer_close_cb(uv_handle_t *h)
{
    free(container_of((uv_timer_t *)h, struct defer_ctx, timer));
}

static void
defer_timer_cb(uv_timer_t *timer)
{
    struct defer_ctx *ctx = container_of(timer, struct defer_ctx, timer);
    cJSON *j = cJSON_CreateObject();

    cJSON_AddBoolToObject(j, "deferred", 1);
    http_resp_json(http_deferred_resp(ctx->d), 200, j);
    http_deferred_finish(ctx->d);
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

static void
stats_json(struct http_resp *resp)
{
    struct http_server_stats st;
    cJSON *j = cJSON_CreateObject();

    http_server_stats(srv, &st);
    cJSON_AddNumberToObject(j, "handshakes", (double)st.tls_handshakes);
    cJSON_AddNumberToObject(j, "failures", (double)st.tls_failures);
    cJSON_AddNumberToObject(j, "plain", (double)st.tls_plain);
    cJSON_AddNumberToObject(j, "header", (double)st.timeouts[HTTP_DL_HEADER]);
    cJSON_AddNumberToObject(j, "write", (double)st.timeouts[HTTP_DL_WRITE]);
    cJSON_AddNumberToObject(j, "conns", (double)st.conns);
    http_resp_json(resp, 200, j);
}

static void
test_handler(struct http_req *req, struct http_resp *resp, void *arg)
{
    struct err err;
    char buf[64];
    cJSON *j;

    (void)arg;
    if (strcmp(req->path, "/echo") == 0) {
        j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "body", req->body);
        if (http_query_get(req, "q", buf, sizeof(buf)))
            cJSON_AddStringToObject(j, "q", buf);
        cJSON_AddBoolToObject(j, "is_unix", req->is_unix);
        http_resp_json(resp, 200, j);
        resp->durable = strcmp(req->method, "POST") == 0;
    } else if (strcmp(req->path, "/defer") == 0) {
        struct defer_ctx *ctx = xcalloc(1, sizeof(*ctx));

        uv_timer_init(&loop, &ctx->timer);
        ctx->d = http_resp_defer(resp, defer_cancel_cb, ctx);
        uv_timer_start(&ctx->timer, defer_timer_cb, 300, 0);
    } else if (strcmp(req->path, "/hold") == 0) {
        http_resp_defer(resp, defer_cancel_cb, NULL);
        atomic_fetch_add(&holds, 1);
    } else if (strcmp(req->path, "/big") == 0) {
        resp->content_type = "text/plain";
        for (int i = 0; i < 8 << 10; i++)
            sbuf_addf(&resp->body, "%01023d\n", i);
    } else if (strcmp(req->path, "/stats") == 0) {
        stats_json(resp);
    } else if (strcmp(req->path, "/reload") == 0) {
        if (http_server_tls_load(srv, path("rotated.pem"), path("rotated.key"),
                path("ca.pem"), NULL, &err) < 0)
            http_resp_error(resp, 500, "internal", "%s", err.msg);
    } else {
        http_resp_error(resp, 404, "not_found", "no route for '%s'", req->path);
    }
}

static void
server_done(void *arg)
{
    (*(int *)arg)++;
}

static void
stop_async_cb(uv_async_t *async)
{
    http_server_close(srv, server_done, &done_calls);
    srv = NULL;
    uv_close((uv_handle_t *)async, NULL);
}

/* --- the client side (client thread) ---------------------------------------
 */

struct cresp {
    int status;
    bool close;
    char retry_after[16];
    struct sbuf body;
};

struct client {
    int fd;
    SSL *ssl;
    http_parser p;
    struct cresp r[48];
    int n;
    bool eof;
    bool close_notify; /* the server's close_notify arrived */
    char hname[64];
    char subject[128]; /* the server certificate's subject */
    char verify[128];  /* the handshake's failure, "" */
};

static SSL_CTX *cctx;       /* trusts ca.pem */
static SSL_CTX *cctx_other; /* trusts other-ca.pem only */

static double
now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int
cr_begin(http_parser *p)
{
    struct client *c = p->data;

    memset(&c->r[c->n], 0, sizeof(c->r[0]));
    sbuf_init(&c->r[c->n].body);
    return 0;
}

static int
cr_field(http_parser *p, const char *at, size_t len)
{
    struct client *c = p->data;

    snprintf(c->hname, sizeof(c->hname), "%.*s", (int)len, at);
    return 0;
}

static int
cr_value(http_parser *p, const char *at, size_t len)
{
    struct client *c = p->data;
    struct cresp *r = &c->r[c->n];

    if (strcasecmp(c->hname, "connection") == 0)
        r->close = len == 5 && strncasecmp(at, "close", 5) == 0;
    else if (strcasecmp(c->hname, "retry-after") == 0)
        snprintf(r->retry_after, sizeof(r->retry_after), "%.*s", (int)len, at);
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
cr_done(http_parser *p)
{
    struct client *c = p->data;

    c->r[c->n].status = p->status_code;
    if (c->n < (int)ARRAY_SIZE(c->r) - 1)
        c->n++;
    return 0;
}

static const http_parser_settings cr_settings = {
    .on_message_begin = cr_begin,
    .on_header_field = cr_field,
    .on_header_value = cr_value,
    .on_body = cr_body,
    .on_message_complete = cr_done,
};

static int
tcp_connect(void)
{
    struct sockaddr_in sa = { .sin_family = AF_INET };
    struct timeval tv = { .tv_sec = 5 };
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    sa.sin_port = htons((uint16_t)tcp_port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        diag("connect: %s", strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return fd;
}

static void
client_init(struct client *c, int fd)
{
    memset(c, 0, sizeof(*c));
    c->fd = fd;
    http_parser_init(&c->p, HTTP_RESPONSE);
    c->p.data = c;
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
    SSL_free(c->ssl);
    c->ssl = NULL;
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}

/* Connect over TLS with ctx, verifying the server for 127.0.0.1 as curl
 * does. False with c->verify saying why when the handshake fails. */
static bool
tls_open(struct client *c, SSL_CTX *ctx)
{
    static const unsigned char alpn[] = "\x02h2\x08http/1.1";
    X509 *peer;
    long v;

    client_init(c, tcp_connect());
    if (c->fd < 0)
        return false;
    c->ssl = SSL_new(ctx);
    SSL_set_fd(c->ssl, c->fd);
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), "127.0.0.1");
    SSL_set_alpn_protos(c->ssl, alpn, sizeof(alpn) - 1);
    ERR_clear_error();
    if (SSL_connect(c->ssl) != 1) {
        v = SSL_get_verify_result(c->ssl);
        snprintf(c->verify, sizeof(c->verify), "%s",
            v != X509_V_OK ? X509_verify_cert_error_string(v)
                           : "handshake failed");
        ERR_clear_error();
        return false;
    }
    peer = SSL_get1_peer_certificate(c->ssl);
    if (peer != NULL)
        X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName,
            c->subject, sizeof(c->subject));
    X509_free(peer);
    return true;
}

static bool
client_send(struct client *c, const char *s, size_t n)
{
    if (c->ssl == NULL)
        return send(c->fd, s, n, MSG_NOSIGNAL) == (ssize_t)n;
    return SSL_write(c->ssl, s, (int)n) == (int)n;
}

static bool
client_sends(struct client *c, const char *s)
{
    return client_send(c, s, strlen(s));
}

/* One read: the bytes, 0 at the end (c->eof, and c->close_notify when
 * the server said so), -1 on a timeout or error. */
static ssize_t
client_recv(struct client *c, char *buf, size_t len)
{
    ssize_t n;
    int e;

    if (c->ssl == NULL) {
        n = recv(c->fd, buf, len, 0);
        if (n == 0 || (n < 0 && errno == ECONNRESET)) {
            c->eof = true;
            return 0;
        }
        return n;
    }
    ERR_clear_error();
    n = SSL_read(c->ssl, buf, (int)len);
    if (n > 0)
        return n;
    e = SSL_get_error(c->ssl, (int)n);
    ERR_clear_error();
    if (e == SSL_ERROR_ZERO_RETURN) {
        c->close_notify = true;
        c->eof = true;
        return 0;
    }
    /* An alert, or the end without close_notify ("unexpected eof"). */
    if (e == SSL_ERROR_SSL || (e == SSL_ERROR_SYSCALL && errno != EAGAIN)) {
        c->eof = true;
        return 0;
    }
    return -1;
}

/* Read until want responses in all are parsed, the end, or a timeout. */
static int
client_read(struct client *c, int want)
{
    char buf[65536];
    ssize_t n;

    while (c->n < want && !c->eof) {
        n = client_recv(c, buf, sizeof(buf));
        if (n < 0)
            break;
        http_parser_execute(&c->p, &cr_settings, buf, (size_t)n);
    }
    return c->n;
}

/* Whether the server ends the connection (within the timeout). */
static bool
client_eof(struct client *c)
{
    char buf[4096];
    ssize_t n;

    while (!c->eof) {
        n = client_recv(c, buf, sizeof(buf));
        if (n < 0)
            return false;
        http_parser_execute(&c->p, &cr_settings, buf, (size_t)n);
    }
    return true;
}

static cJSON *
body_json(const struct cresp *r)
{
    return cJSON_ParseWithLength(r->body.buf, r->body.len);
}

/* The string field key of reply r, in buf ("" without it). */
static const char *
body_str(const struct cresp *r, const char *key, char *buf, size_t len)
{
    cJSON *j = body_json(r);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);

    snprintf(buf, len, "%s", cJSON_IsString(v) ? v->valuestring : "");
    cJSON_Delete(j);
    return buf;
}

/* A number from GET /stats. */
static long
stat_of(const char *key)
{
    struct client c;
    long v = -1;
    cJSON *j;

    if (!tls_open(&c, cctx))
        return -1;
    client_sends(&c, "GET /stats HTTP/1.1\r\nHost: x\r\n\r\n");
    if (client_read(&c, 1) == 1) {
        j = body_json(&c.r[0]);
        v = (long)cJSON_GetNumberValue(cJSON_GetObjectItem(j, key));
        cJSON_Delete(j);
    }
    client_close(&c);
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

/* --- the tests -------------------------------------------------------------
 */

static void
test_roundtrip(void)
{
    struct client c;
    char buf[64];

    if (!ok(tls_open(&c, cctx), "TLS handshake, server verified (%s)",
            c.verify))
        return;
    is_str(c.subject, "server-1", "the server's certificate");
    ok(SSL_version(c.ssl) >= TLS1_2_VERSION, "TLS 1.2 or later (%s)",
        SSL_get_version(c.ssl));
    {
        const unsigned char *proto;
        unsigned int len;

        SSL_get0_alpn_selected(c.ssl, &proto, &len);
        ok(len == 8 && memcmp(proto, "http/1.1", 8) == 0,
            "ALPN: http/1.1 chosen over h2");
    }
    client_sends(&c, "GET /echo?q=one HTTP/1.1\r\nHost: x\r\n\r\n");
    is_int(client_read(&c, 1), 1, "a reply over TLS");
    is_str(body_str(&c.r[0], "q", buf, sizeof(buf)), "one", "its body");
    ok(!c.r[0].close, "kept alive");
    client_sends(&c, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5"
                     "\r\n\r\nhello");
    is_int(client_read(&c, 2), 2, "a second request on the connection");
    is_str(body_str(&c.r[1], "body", buf, sizeof(buf)), "hello",
        "its body arrived");

    /* Connection: close ends with close_notify. */
    client_sends(&c, "GET /echo?q=last HTTP/1.1\r\nHost: x\r\n"
                     "Connection: close\r\n\r\n");
    is_int(client_read(&c, 3), 3, "Connection: close answered");
    ok(client_eof(&c) && c.close_notify, "then close_notify from the server");
    client_close(&c);
}

static void
test_pipelining(void)
{
    struct client c;
    struct sbuf req;
    int n, in_order = 0;
    char want[16], buf[64];

    if (!ok(tls_open(&c, cctx), "pipelining: TLS connect"))
        return;
    /* More than the server queues per connection, in TLS records it has
     * to keep encrypted while its parser waits; behind a long poll. */
    sbuf_init(&req);
    sbuf_addstr(&req, "GET /defer HTTP/1.1\r\nHost: x\r\n\r\n");
    for (int i = 0; i < 40; i++)
        sbuf_addf(&req, "GET /echo?q=%d HTTP/1.1\r\nHost: x\r\n\r\n", i);
    client_send(&c, req.buf, req.len);
    n = client_read(&c, 41);
    is_int(n, 41, "41 pipelined requests: 41 replies");
    body_str(&c.r[0], "q", buf, sizeof(buf));
    ok(c.r[0].status == 200 && buf[0] == '\0', "the long poll's first");
    for (int i = 1; i < n; i++) {
        snprintf(want, sizeof(want), "%d", i - 1);
        in_order += strcmp(body_str(&c.r[i], "q", buf, sizeof(buf)), want) == 0;
    }
    is_int(in_order, 40, "then all in order");

    /* 8 MiB while more requests arrive: the write queue (ciphertext)
     * pauses the parser, which resumes as it drains. */
    client_reset(&c);
    client_sends(&c, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n");
    usleep(100000);
    client_sends(&c, "GET /echo?q=a HTTP/1.1\r\nHost: x\r\n\r\n"
                     "GET /echo?q=b HTTP/1.1\r\nHost: x\r\n\r\n");
    is_int(client_read(&c, 3), 3, "8 MiB and two more");
    is_int((long)c.r[0].body.len, 8L << 20, "the 8 MiB complete");
    is_str(body_str(&c.r[2], "q", buf, sizeof(buf)), "b", "then the others");
    sbuf_release(&req);
    client_close(&c);
}

static void
test_not_trusted(void)
{
    struct client c;
    long before = stat_of("failures");
    double end = now_ms() + 3000;

    ok(!tls_open(&c, cctx_other), "a client without the CA refuses");
    ok(strstr(c.verify, "certificate") != NULL,
        "naming the certificate problem: %s", c.verify);
    client_close(&c);
    while (stat_of("failures") <= before && now_ms() < end)
        usleep(20000);
    ok(stat_of("failures") > before, "the server counts the failed handshake");
}

static void
test_not_tls(void)
{
    struct client c;
    char buf[64];
    long before = stat_of("plain");

    client_init(&c, tcp_connect());
    client_sends(&c, "GET /echo HTTP/1.1\r\nHost: x\r\n\r\n");
    is_int(client_read(&c, 1), 1, "plain HTTP to the TLS port: a reply");
    is_int(c.r[0].status, 400, "400");
    {
        cJSON *j = body_json(&c.r[0]);
        const cJSON *e = cJSON_GetObjectItem(j, "error");

        is_str(cJSON_GetStringValue(cJSON_GetObjectItem(e, "code")),
            "tls_required", "code tls_required");
        snprintf(buf, sizeof(buf), "%s",
            cJSON_GetStringValue(cJSON_GetObjectItem(e, "message")));
        cJSON_Delete(j);
    }
    ok(strstr(buf, "https://") != NULL, "it says to use https://: %s", buf);
    ok(c.r[0].close && client_eof(&c), "then the server closes");
    client_close(&c);
    is_int(stat_of("plain") - before, 1, "counted");

    /* Neither TLS nor HTTP: closed without a word. */
    client_init(&c, tcp_connect());
    client_send(&c, "\x01\x02\x03garbage", 10);
    ok(client_eof(&c) && c.n == 0, "garbage: closed, no reply");
    client_close(&c);

    /* A bad record after the handshake costs only that connection. */
    if (tls_open(&c, cctx)) {
        static const char junk[] = "\x17\x03\x03\x00\x10"
                                   "0123456789abcdef";

        send(c.fd, junk, sizeof(junk) - 1, MSG_NOSIGNAL);
        ok(client_eof(&c), "a forged record ends its connection");
        client_close(&c);
    }
    ok(stat_of("conns") >= 1, "the server serves on");
}

/* Send s one byte every 200 ms until the server closes: the ms it took,
 * or -1. */
static double
trickle_until_closed(int fd, const char *s, size_t n)
{
    struct pollfd pfd = { .fd = fd, .events = POLLIN };
    double t0 = now_ms();
    char buf[4096];
    size_t i = 0;

    while (now_ms() - t0 < 8000) {
        if (poll(&pfd, 1, 200) > 0) {
            if (read(fd, buf, sizeof(buf)) <= 0)
                return now_ms() - t0;
            continue;
        }
        if (send(fd, s + (i < n ? i : n - 1), 1, MSG_NOSIGNAL) < 0)
            return now_ms() - t0;
        i++;
    }
    return -1;
}

static void
test_deadlines(void)
{
    /* A handshake record announced as 512 bytes, trickled. */
    static const char hello[] = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03";
    struct client c;
    long before = stat_of("header");
    double dt;
    int fd = tcp_connect();

    dt = trickle_until_closed(fd, hello, sizeof(hello) - 1);
    ok(dt >= HEADER_MS - 100 && dt < HEADER_MS + 1500,
        "a trickled handshake is cut off at the header deadline "
        "(%.0f ms, deadline %d ms)",
        dt, HEADER_MS);
    close(fd);
    is_int(stat_of("header") - before, 1, "as a header timeout");

    /* A reader that takes nothing of 8 MiB of ciphertext. */
    if (tls_open(&c, cctx)) {
        int rcv = 65536;
        char buf[65536];
        size_t got = 0;
        ssize_t r;

        before = stat_of("write");
        setsockopt(c.fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
        client_sends(&c, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n");
        usleep((WRITE_MS + 1500) * 1000);
        while ((r = client_recv(&c, buf, sizeof(buf))) > 0)
            got += (size_t)r;
        ok(c.eof && got < 8u << 20,
            "a TLS reader that stalls is cut off at the write deadline "
            "(%zu bytes of 8 MiB)",
            got);
        client_close(&c);
        is_int(stat_of("write") - before, 1, "as a write timeout");
    }
}

static void
test_long_poll_gone(void)
{
    struct client c;
    int before = atomic_load(&cancel_calls);

    if (!tls_open(&c, cctx))
        return;
    client_sends(&c, "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n");
    ok(wait_for(&holds, 1, 3000), "a long poll over TLS waits");
    /* close_notify, as curl sends it. */
    SSL_shutdown(c.ssl);
    ok(wait_for(&cancel_calls, before + 1, 3000),
        "close_notify cancels the waiting long poll");
    client_close(&c);
}

static void
test_caps(void)
{
    struct client c[PER_PEER + 1];
    char buf[64];
    int n = 0;

    /* per_peer TLS connections from 127.0.0.1, then one more: accepted,
     * handshaken, but restricted to agent requests. */
    for (n = 0; n < PER_PEER; n++)
        if (!tls_open(&c[n], cctx))
            break;
    is_int(n, PER_PEER, "%d TLS connections", PER_PEER);
    if (n == PER_PEER && ok(tls_open(&c[n], cctx), "one more connects")) {
        client_sends(&c[n], "GET /echo HTTP/1.1\r\nHost: x\r\n\r\n");
        client_read(&c[n], 1);
        is_int(c[n].r[0].status, 503, "past the per-peer cap: 503 over TLS");
        is_str(c[n].r[0].retry_after, "5", "with Retry-After");
        ok(client_eof(&c[n]), "and a close");
        client_close(&c[n]);
    }
    while (n-- > 0)
        client_close(&c[n]);
    /* An agent's request passes on a restricted connection. */
    for (n = 0; n < PER_PEER; n++)
        if (!tls_open(&c[n], cctx))
            break;
    if (n == PER_PEER && tls_open(&c[n], cctx)) {
        client_sends(&c[n], "GET /echo?q=agent HTTP/1.1\r\nHost: x\r\n"
                            "Authorization: Agent n1:00\r\n\r\n");
        client_read(&c[n], 1);
        is_str(body_str(&c[n].r[0], "q", buf, sizeof(buf)), "agent",
            "an agent request passes on it");
        client_close(&c[n]);
    }
    while (n-- > 0)
        client_close(&c[n]);
}

static void
test_unix_and_reload(void)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    struct client c, old;
    char buf[64];

    /* The Unix socket speaks plain HTTP beside the TLS listener. */
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
    client_init(&c, socket(AF_UNIX, SOCK_STREAM, 0));
    if (connect(c.fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
        client_sends(&c, "GET /echo?q=u HTTP/1.1\r\nHost: x\r\n\r\n");
        is_int(client_read(&c, 1), 1, "unix socket: plain HTTP");
        is_str(body_str(&c.r[0], "q", buf, sizeof(buf)), "u", "its reply");
    }
    client_close(&c);

    /* A rotation: new connections get the new certificate; one already
     * open goes on with the old. */
    if (!tls_open(&old, cctx))
        return;
    if (tls_open(&c, cctx)) {
        client_sends(&c, "POST /reload HTTP/1.1\r\nHost: x\r\n"
                         "Content-Length: 0\r\n\r\n");
        client_read(&c, 1);
        is_int(c.r[0].status, 200, "reload: loaded");
        client_close(&c);
    }
    if (tls_open(&c, cctx)) {
        is_str(c.subject, "server-2", "a new connection gets the new one");
        client_close(&c);
    }
    client_sends(&old, "GET /echo?q=old HTTP/1.1\r\nHost: x\r\n\r\n");
    client_read(&old, 1);
    is_str(body_str(&old.r[0], "q", buf, sizeof(buf)), "old",
        "the open connection goes on");
    client_close(&old);
}

static void *
client_main(void *arg)
{
    (void)arg;
    test_roundtrip();
    test_pipelining();
    test_not_trusted();
    test_not_tls();
    test_deadlines();
    test_long_poll_gone();
    test_caps();
    test_unix_and_reload();
    uv_async_send(&stop_async);
    return NULL;
}

/* --- main (loop thread) ----------------------------------------------------
 */

static void
test_check(void)
{
    struct http_tls_info info;
    struct err err;
    int rc;

    rc = http_tls_check(path("server.pem"), path("server.key"), path("ca.pem"),
        &info, &err);
    is_int(rc, 0, "check: a good certificate");
    ok(strstr(info.subject, "CN=server-1") != NULL, "check: subject %s",
        info.subject);
    is_str(info.names, "IP:127.0.0.1, DNS:localhost", "check: its names");
    ok(info.not_after > time(NULL) + 29 * 86400 &&
            info.not_after < time(NULL) + 31 * 86400,
        "check: its expiry");
    rc = http_tls_check(path("server.pem"), path("server.key"), NULL, NULL,
        &err);
    is_int(rc, 0, "check: no CA to check against");

    rc = http_tls_check(path("server.pem"), path("server.key"),
        path("other-ca.pem"), NULL, &err);
    ok(rc < 0 && strstr(err.msg, "does not verify against the CA"),
        "check: another CA: %s", err.msg);
    rc = http_tls_check(path("expired.pem"), path("server.key"), NULL, NULL,
        &err);
    ok(rc < 0 && strstr(err.msg, "expired on"), "check: expired: %s", err.msg);
    rc = http_tls_check(path("server.pem"), path("rotated.key"), NULL, NULL,
        &err);
    ok(rc < 0 && strstr(err.msg, "does not belong"), "check: wrong key: %s",
        err.msg);
    rc = http_tls_check(path("server.pem"), path("open.key"), NULL, NULL, &err);
    ok(rc == -EPERM && strstr(err.msg, "chmod 600"),
        "check: a key others can read: %s", err.msg);
    rc = http_tls_check(path("none.pem"), path("server.key"), NULL, NULL, &err);
    ok(rc == -ENOENT && strstr(err.msg, "none.pem"), "check: no file: %s",
        err.msg);
    rc = http_tls_check(path("server.key"), path("server.key"), NULL, NULL,
        &err);
    ok(rc < 0 && strstr(err.msg, "cannot load TLS certificate"),
        "check: a key for a certificate: %s", err.msg);
}

static SSL_CTX *
client_ctx(const char *ca)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());

    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    if (SSL_CTX_load_verify_locations(ctx, path(ca), NULL) != 1)
        fatalx("cannot load %s", ca);
    return ctx;
}

int
main(void)
{
    struct http_server_opts opts = {
        .header_timeout_ms = HEADER_MS,
        .write_timeout_ms = WRITE_MS,
        .idle_timeout_ms = 5000,
        .max_conns = 64,
        .reserve = 8,
        .per_peer = PER_PEER,
    };
    struct http_tls_info info;
    struct err err;
    pthread_t th;
    int rc;

    plan(NO_PLAN);
    log_init("test_http_tls",
        getenv("TEST_HTTP_DEBUG") ? LOG_LEVEL_DEBUG : LOG_LEVEL_WARN,
        LOG_MODE_PLAIN);
    if (mkdtemp(dir) == NULL)
        fatal("mkdtemp");
    make_certs();
    test_check();

    snprintf(sock_path, sizeof(sock_path), "%s/sock", dir);
    is_int(uv_loop_init(&loop), 0, "loop init");
    srv = http_server_create(&loop, &opts, test_handler, NULL, NULL, &err);
    if (!ok(srv != NULL, "server created"))
        return 1;
    rc = http_server_tls_load(srv, path("server.pem"), path("open.key"), NULL,
        NULL, &err);
    ok(rc < 0, "a bad key is refused: %s", err.msg);
    rc = http_server_tls_load(srv, path("server.pem"), path("server.key"),
        path("ca.pem"), &info, &err);
    is_int(rc, 0, "TLS loaded");
    rc = http_server_listen_tcp(srv, "127.0.0.1", 0, &tcp_port, &err);
    is_int(rc, 0, "listen on 127.0.0.1:0 with TLS");
    rc = http_server_listen_unix(srv, sock_path, &err);
    is_int(rc, 0, "and on a Unix socket");
    cctx = client_ctx("ca.pem");
    cctx_other = client_ctx("other-ca.pem");
    uv_async_init(&loop, &stop_async, stop_async_cb);

    if (pthread_create(&th, NULL, client_main, NULL) != 0)
        fatal("pthread_create");
    rc = uv_run(&loop, UV_RUN_DEFAULT);
    pthread_join(th, NULL);
    is_int(rc, 0, "loop ran to completion");
    is_int(done_calls, 1, "server closed");
    is_int(uv_loop_close(&loop), 0, "uv_loop_close == 0");
    SSL_CTX_free(cctx);
    SSL_CTX_free(cctx_other);
    for (const char *const *f = (const char *const[]){ "ca.pem", "other-ca.pem",
             "server.pem", "server.key", "expired.pem", "rotated.pem",
             "rotated.key", "open.key", NULL };
         *f != NULL; f++)
        unlink(path(*f));
    rmdir(dir);
    return done_testing();
}
