/*
 * http_tls.c - TLS on the server's TCP connections: OpenSSL over memory
 * BIOs
 *
 * OpenSSL never touches a socket here. Each TLS connection's SSL object
 * reads from one memory BIO, which the connection fills with what the
 * stream delivered, and writes into another, which is drained onto the
 * stream with uv_write() after every operation that may have produced
 * output (a handshake step, an encrypted response, an alert,
 * close_notify). So libuv keeps doing all the I/O, and the connection's
 * deadlines, caps and backpressure (http_conn.c) apply to a TLS
 * connection unchanged: its write queue holds ciphertext, and its
 * handshake is simply the first part of its first request's head.
 *
 * The credentials (certificate chain, key) are one SSL_CTX, shared by the
 * connections accepted while it is current. Each SSL object holds a
 * reference to its SSL_CTX, so a reload can replace the server's at any
 * time and the connections already open finish on the old one.
 *
 * OpenSSL's error queue belongs to the thread; it is cleared before every
 * SSL call and drained after a failure, so that no connection's error can
 * show up as another's.
 */
#include "scheduler/http_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "common/log.h"
#include "common/xalloc.h"

/* The first byte of a TLS record that carries a handshake message. */
#define TLS_RECORD_HANDSHAKE 0x16

/* --- errors --------------------------------------------------------------- */

/* The reason of OpenSSL's first error in buf ("wrong version number"),
 * or dflt when the queue is empty; the queue is emptied. The first error
 * is the cause; those after it only say where it passed ("PEM lib"). */
static const char *
tls_reason(char *buf, size_t len, const char *dflt)
{
    unsigned long e = ERR_peek_error();
    const char *r;

    if (e == 0) {
        snprintf(buf, len, "%s", dflt);
    } else if (ERR_GET_LIB(e) == ERR_LIB_PEM &&
               ERR_GET_REASON(e) == PEM_R_NO_START_LINE) {
        /* OpenSSL's words for a file without the PEM block looked for. */
        snprintf(buf, len, "%s", dflt);
    } else if ((r = ERR_reason_error_string(e)) != NULL) {
        snprintf(buf, len, "%s", r);
    } else {
        ERR_error_string_n(e, buf, len);
    }
    ERR_clear_error();
    return buf;
}

/* --- credentials ---------------------------------------------------------- */

/* path is a readable regular file; private (no access for others) when
 * secret. what names it in errors ("TLS key"). */
static int
tls_file_check(const char *what, const char *path, bool secret, struct err *err)
{
    struct stat st;
    FILE *f;

    if (path == NULL || path[0] == '\0')
        return err_set(err, -EINVAL, "%s: no file given", what);
    if ((f = fopen(path, "r")) == NULL || fstat(fileno(f), &st) < 0) {
        int rc = -errno;

        if (f != NULL)
            fclose(f);
        return err_set(err, rc, "cannot read %s '%s': %s", what, path,
            strerror(-rc));
    }
    fclose(f);
    if (!S_ISREG(st.st_mode))
        return err_set(err, -EINVAL, "%s '%s' is not a file", what, path);
    if (secret && (st.st_mode & 007))
        return err_set(err, -EPERM,
            "%s '%s' is accessible to other users (mode %04o); chmod 600 it",
            what, path, (unsigned)(st.st_mode & 07777));
    return 0;
}

/* "Mar  3 12:00:00 2027 GMT" for an ASN1 time, in buf. */
static const char *
tls_time_str(const ASN1_TIME *t, char *buf, size_t len)
{
    BIO *b = BIO_new(BIO_s_mem());
    int n = 0;

    if (b != NULL && ASN1_TIME_print(b, t) == 1)
        n = BIO_read(b, buf, (int)len - 1);
    buf[n > 0 ? n : 0] = '\0';
    BIO_free(b);
    return buf;
}

/* The certificate's subjectAltNames, "DNS:x, IP:1.2.3.4", into out. */
static void
tls_alt_names(X509 *x, char *out, size_t len)
{
    GENERAL_NAMES *names = X509_get_ext_d2i(x, NID_subject_alt_name, NULL,
        NULL);
    size_t used = 0;
    char ip[INET6_ADDRSTRLEN];

    out[0] = '\0';
    for (int i = 0; names != NULL && i < sk_GENERAL_NAME_num(names); i++) {
        const GENERAL_NAME *g = sk_GENERAL_NAME_value(names, i);
        const unsigned char *d;
        int n;

        if (g->type == GEN_DNS) {
            d = ASN1_STRING_get0_data(g->d.dNSName);
            n = snprintf(out + used, len - used, "%sDNS:%.*s", used ? ", " : "",
                ASN1_STRING_length(g->d.dNSName), (const char *)d);
        } else if (g->type == GEN_IPADD) {
            d = ASN1_STRING_get0_data(g->d.iPAddress);
            n = ASN1_STRING_length(g->d.iPAddress);
            if (inet_ntop(n == 16 ? AF_INET6 : AF_INET, d, ip, sizeof(ip)) ==
                NULL)
                continue;
            n = snprintf(out + used, len - used, "%sIP:%s", used ? ", " : "",
                ip);
        } else {
            continue;
        }
        if (n < 0 || (size_t)n >= len - used)
            break;
        used += (size_t)n;
    }
    GENERAL_NAMES_free(names);
}

static void
tls_info_fill(X509 *x, struct http_tls_info *info)
{
    struct tm tm;

    memset(info, 0, sizeof(*info));
    X509_NAME_oneline(X509_get_subject_name(x), info->subject,
        (int)sizeof(info->subject));
    tls_alt_names(x, info->names, sizeof(info->names));
    if (ASN1_TIME_to_tm(X509_get0_notAfter(x), &tm) == 1)
        info->not_after = (int64_t)timegm(&tm);
}

/* The certificate is valid now and, when ca is set, chains to it as a TLS
 * server certificate. */
static int
tls_verify(SSL_CTX *ctx, const char *cert, const char *ca, struct err *err)
{
    X509 *leaf = SSL_CTX_get0_certificate(ctx);
    STACK_OF(X509) *chain = NULL;
    X509_STORE *store = NULL;
    X509_STORE_CTX *xc = NULL;
    char buf[128];
    int rc = 0;

    if (X509_cmp_current_time(X509_get0_notBefore(leaf)) >= 0)
        return err_set(err, -EINVAL,
            "TLS certificate '%s' is not valid before %s", cert,
            tls_time_str(X509_get0_notBefore(leaf), buf, sizeof(buf)));
    if (X509_cmp_current_time(X509_get0_notAfter(leaf)) <= 0)
        return err_set(err, -EINVAL, "TLS certificate '%s' expired on %s", cert,
            tls_time_str(X509_get0_notAfter(leaf), buf, sizeof(buf)));
    if (ca == NULL || ca[0] == '\0')
        return 0;
    if ((rc = tls_file_check("TLS CA file", ca, false, err)) < 0)
        return rc;
    store = X509_STORE_new();
    xc = X509_STORE_CTX_new();
    if (store == NULL || xc == NULL)
        fatalx("cannot allocate an X509 store");
    SSL_CTX_get0_chain_certs(ctx, &chain);
    if (X509_STORE_load_file(store, ca) != 1) {
        rc = err_set(err, -EINVAL, "cannot load TLS CA file '%s': %s", ca,
            tls_reason(buf, sizeof(buf), "no certificate in it"));
    } else if (X509_STORE_CTX_init(xc, store, leaf, chain) != 1 ||
               X509_STORE_CTX_set_purpose(xc, X509_PURPOSE_SSL_SERVER) != 1) {
        rc = err_set(err, -EINVAL, "cannot check TLS certificate '%s': %s",
            cert, tls_reason(buf, sizeof(buf), "unknown error"));
    } else if (X509_verify_cert(xc) != 1) {
        rc = err_set(err, -EINVAL,
            "TLS certificate '%s' does not verify against the CA in '%s': %s",
            cert, ca,
            X509_verify_cert_error_string(X509_STORE_CTX_get_error(xc)));
        ERR_clear_error();
    }
    X509_STORE_CTX_free(xc);
    X509_STORE_free(store);
    return rc;
}

/* Offer HTTP/1.1 to a client that asks for it with ALPN, and nothing else
 * (a client that offers only h2 goes on without ALPN). */
static int
tls_alpn_cb(SSL *ssl, const unsigned char **out, unsigned char *outlen,
    const unsigned char *in, unsigned int inlen, void *arg)
{
    (void)ssl;
    (void)arg;
    for (unsigned int i = 0; i < inlen; i += 1u + in[i]) {
        if (in[i] == 8 && i + 9 <= inlen &&
            memcmp(in + i + 1, "http/1.1", 8) == 0) {
            *out = in + i + 1;
            *outlen = 8;
            return SSL_TLSEXT_ERR_OK;
        }
    }
    return SSL_TLSEXT_ERR_NOACK;
}

/* A server SSL_CTX with these credentials, or NULL with err set. */
static SSL_CTX *
tls_ctx_create(const char *cert, const char *key, const char *ca,
    struct http_tls_info *info, struct err *err)
{
    SSL_CTX *ctx;
    char buf[160];
    int rc;

    if ((rc = tls_file_check("TLS certificate", cert, false, err)) < 0 ||
        (rc = tls_file_check("TLS key", key, true, err)) < 0)
        return NULL;
    ERR_clear_error();
    ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == NULL) {
        err_set(err, -EIO, "cannot create a TLS context: %s",
            tls_reason(buf, sizeof(buf), "out of memory"));
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    /* A client may not renegotiate (each renegotiation costs us a
     * handshake's CPU for nothing); idle connections give their buffers
     * back, which matters with thousands of agents' connections open. */
    SSL_CTX_set_options(ctx,
        SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_alpn_select_cb(ctx, tls_alpn_cb, NULL);
    /* A TLS 1.3 client resumes with one ticket; OpenSSL sends two. */
    SSL_CTX_set_num_tickets(ctx, 1);
    if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1)
        rc = err_set(err, -EINVAL, "cannot load TLS certificate '%s': %s", cert,
            tls_reason(buf, sizeof(buf), "no PEM certificate in it"));
    else if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 &&
             ERR_GET_REASON(ERR_peek_error()) != X509_R_KEY_VALUES_MISMATCH)
        rc = err_set(err, -EINVAL, "cannot load TLS key '%s': %s", key,
            tls_reason(buf, sizeof(buf), "no PEM private key in it"));
    else if (SSL_CTX_check_private_key(ctx) != 1)
        rc = err_set(err, -EINVAL,
            "TLS key '%s' does not belong to the certificate in '%s'", key,
            cert);
    else
        rc = tls_verify(ctx, cert, ca, err);
    ERR_clear_error();
    if (rc < 0) {
        SSL_CTX_free(ctx);
        return NULL;
    }
    if (info != NULL)
        tls_info_fill(SSL_CTX_get0_certificate(ctx), info);
    return ctx;
}

int
http_tls_check(const char *cert, const char *key, const char *ca,
    struct http_tls_info *info, struct err *err)
{
    SSL_CTX *ctx = tls_ctx_create(cert, key, ca, info, err);

    if (ctx == NULL)
        return err->code < 0 ? err->code : -EINVAL;
    SSL_CTX_free(ctx);
    return 0;
}

int
http_server_tls_load(struct http_server *srv, const char *cert, const char *key,
    const char *ca, struct http_tls_info *info, struct err *err)
{
    struct http_tls_info i;
    SSL_CTX *ctx = tls_ctx_create(cert, key, ca, &i, err);

    if (ctx == NULL)
        return err->code < 0 ? err->code : -EINVAL;
    /* Each connection's SSL holds its own reference to the old one. */
    SSL_CTX_free(srv->tls);
    srv->tls = ctx;
    srv->st.tls = true;
    srv->st.tls_not_after = i.not_after;
    if (info != NULL)
        *info = i;
    return 0;
}

/* --- connections ---------------------------------------------------------- */

int
http_tls_conn_open(struct http_conn *conn)
{
    BIO *rbio, *wbio;
    char buf[128];

    ERR_clear_error();
    conn->ssl = SSL_new(conn->srv->tls);
    rbio = BIO_new(BIO_s_mem());
    wbio = BIO_new(BIO_s_mem());
    if (conn->ssl == NULL || rbio == NULL || wbio == NULL) {
        log_warn("conn=%lu cannot set up TLS: %s", conn->id,
            tls_reason(buf, sizeof(buf), "out of memory"));
        BIO_free(rbio);
        BIO_free(wbio);
        SSL_free(conn->ssl);
        conn->ssl = NULL;
        return -EPROTO;
    }
    /* An empty input BIO means "more to come", not end of file. */
    BIO_set_mem_eof_return(rbio, -1);
    SSL_set_bio(conn->ssl, rbio, wbio);
    SSL_set_accept_state(conn->ssl);
    return 0;
}

void
http_tls_conn_free(struct http_conn *conn)
{
    SSL_free(conn->ssl);
    conn->ssl = NULL;
}

int
http_tls_feed(struct http_conn *conn, const char *data, size_t len, bool *plain)
{
    *plain = false;
    if (len == 0)
        return 0;
    if (!conn->tls_seen) {
        conn->tls_seen = true;
        /* A client speaking plain HTTP starts with a method name; one
         * speaking TLS with a handshake record. Anything else is neither,
         * and OpenSSL would only say "wrong version number". */
        if ((unsigned char)data[0] != TLS_RECORD_HANDSHAKE) {
            *plain = data[0] >= 'A' && data[0] <= 'Z';
            return HTTP_TLS_NOT_TLS;
        }
    }
    /* A memory BIO takes everything (it grows). */
    if (BIO_write(SSL_get_rbio(conn->ssl), data, (int)len) != (int)len)
        fatalx("cannot buffer TLS input: out of memory");
    return 0;
}

ssize_t
http_tls_read(struct http_conn *conn, char *buf, size_t len, char *why,
    size_t whylen)
{
    int n, e;

    ERR_clear_error();
    n = SSL_read(conn->ssl, buf, len > INT32_MAX ? INT32_MAX : (int)len);
    if (!conn->tls_up && SSL_is_init_finished(conn->ssl)) {
        conn->tls_up = true;
        conn->srv->st.tls_handshakes++;
        log_debug("conn=%lu TLS %s %s", conn->id, SSL_get_version(conn->ssl),
            SSL_get_cipher_name(conn->ssl));
    }
    if (n > 0)
        return n;
    e = SSL_get_error(conn->ssl, n);
    switch (e) {
    case SSL_ERROR_WANT_READ:
        return 0;
    case SSL_ERROR_ZERO_RETURN:
        ERR_clear_error();
        return HTTP_TLS_CLOSED;
    default:
        tls_reason(why, whylen,
            e == SSL_ERROR_SYSCALL ? "unexpected end" : "protocol error");
        return -EPROTO;
    }
}

int
http_tls_write(struct http_conn *conn, const char *data, size_t len)
{
    char buf[128];
    int n;

    ERR_clear_error();
    /* Into a memory BIO, SSL_write takes all of it or fails. */
    n = SSL_write(conn->ssl, data, (int)len);
    if (n != (int)len) {
        log_debug("conn=%lu TLS write failed: %s", conn->id,
            tls_reason(buf, sizeof(buf), "protocol error"));
        return -EPROTO;
    }
    return 0;
}

void
http_tls_close_notify(struct http_conn *conn)
{
    if (conn->ssl == NULL || !conn->tls_up)
        return;
    ERR_clear_error();
    /* 0: ours is queued, the peer's not yet seen; we do not wait for it
     * (the connection lingers, discarding input, as a plain one does). */
    (void)SSL_shutdown(conn->ssl);
    ERR_clear_error();
}

/* What the output BIO holds, moved into a new buffer (*len bytes), or
 * NULL when it holds nothing. */
static char *
tls_take_output(struct http_conn *conn, size_t *len)
{
    BIO *wbio = SSL_get_wbio(conn->ssl);
    size_t pending = BIO_ctrl_pending(wbio);
    char *buf;

    *len = 0;
    if (pending == 0)
        return NULL;
    buf = xmalloc(pending);
    if (BIO_read(wbio, buf, (int)pending) != (int)pending)
        fatalx("cannot take TLS output from its buffer");
    *len = pending;
    return buf;
}

int
http_tls_flush(struct http_conn *conn)
{
    size_t len;
    char *buf;

    if (conn->ssl == NULL)
        return 0;
    buf = tls_take_output(conn, &len);
    if (buf == NULL)
        return 0;
    return http_conn_write_raw(conn, buf, len, NULL, 0);
}

void
http_tls_flush_now(struct http_conn *conn)
{
    size_t len;
    char *buf;
    uv_buf_t b;

    if (conn->ssl == NULL || (buf = tls_take_output(conn, &len)) == NULL)
        return;
    b = uv_buf_init(buf, (unsigned)len);
    /* Nothing is queued before it when this is used (a failed
     * handshake), so it cannot overtake anything. */
    if (conn->h.stream.write_queue_size == 0)
        (void)uv_try_write(&conn->h.stream, &b, 1);
    free(buf);
}

/* --- failures ------------------------------------------------------------- */

/* Plain HTTP sent to a TLS listener: a plain 400 that says so, and a
 * close after it. */
void
http_tls_not_tls(struct http_conn *conn, bool plain)
{
    static const char body[] =
        "{\"error\":{\"code\":\"tls_required\",\"message\":\"this port "
        "speaks TLS (HTTPS): use an https:// URL\"}}\n";
    char what[128], *head;

    conn->srv->st.tls_plain++;
    snprintf(what, sizeof(what), "%s from %s on the TLS port: %s",
        plain ? "plain HTTP" : "no TLS", conn->peer[0] ? conn->peer : "?",
        plain ? "answered 400 tls_required" : "closed");
    http_server_log_tls(conn->srv, what);
    conn->close_after = true;
    if (!plain) {
        http_conn_close(conn);
        return;
    }
    head = xasprintf("HTTP/1.1 400 Bad Request\r\n"
                     "Content-Type: application/json\r\n"
                     "Content-Length: %zu\r\n"
                     "Connection: close\r\n"
                     "\r\n%s",
        sizeof(body) - 1, body);
    if (http_conn_write_raw(conn, head, strlen(head), NULL, 0) < 0) {
        http_conn_close(conn);
        return;
    }
    http_conn_shutdown(conn);
}

/* A TLS error ends conn: the alert OpenSSL made (if any) goes out first,
 * so that the peer learns why. */
void
http_tls_failed(struct http_conn *conn, const char *why)
{
    char what[320];

    conn->srv->st.tls_failures++;
    snprintf(what, sizeof(what), "TLS %s with %s failed: %s",
        conn->tls_up ? "session" : "handshake",
        conn->peer[0] ? conn->peer : "an agent", why);
    http_server_log_tls(conn->srv, what);
    http_tls_flush_now(conn);
    http_conn_close(conn);
}
