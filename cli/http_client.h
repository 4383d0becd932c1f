/*
 * http_client.h - the CLI's own HTTP/1.1 client
 *
 * Just what `lockstep` needs to talk to the scheduler, so that one CLI
 * call costs a process start and a request rather than the loading of
 * libcurl's dependency tree: one request at a time on one connection,
 * kept open between requests to the same server (`submit --wait`, `logs
 * --follow`), to a Unix socket (an absolute path) or over TCP (an http://
 * URL) or TLS (an https:// URL, with OpenSSL's libssl: the server's
 * certificate checked against a CA file or the system's store, and its
 * name against the URL's host). Replies are read with http_parser
 * (Content-Length, chunked, or up to the close) and handed to a sink as
 * they arrive. Blocking, with deadlines: a non-blocking socket and poll.
 *
 * Errors are classified (enum hc_fail) so that cli_http.c can say what
 * went wrong in a person's words; msg holds the detail ("Could not
 * resolve host: x", "SSL certificate problem: ...").
 */
#ifndef CLI_HTTP_CLIENT_H
#define CLI_HTTP_CLIENT_H

#include <stdbool.h>
#include <stddef.h>

enum hc_fail {
    HC_OK = 0,
    HC_BAD_URL,    /* the target is neither a URL nor an absolute path */
    HC_RESOLVE,    /* the host name did not resolve */
    HC_CONNECT,    /* no connection; oserr says why (ECONNREFUSED) */
    HC_TIMEOUT,    /* the connection or the whole exchange took too long */
    HC_TLS_CA,     /* the CA file could not be used */
    HC_TLS_VERIFY, /* the server's certificate (or name) was refused */
    HC_TLS,        /* any other TLS failure (no TLS on the other side) */
    HC_NOT_HTTP,   /* the server answered something that is not HTTP */
    HC_EMPTY,      /* the server closed the connection without a reply */
    HC_IO,         /* sending or receiving failed mid-exchange */
};

struct hc_error {
    enum hc_fail fail;
    int oserr; /* HC_CONNECT's errno, else 0 */
    char msg[256];
};

/* Where a reply goes, piece by piece, as it arrives. */
struct hc_sink {
    /* One header of the reply (not NUL-terminated). */
    void (*header)(void *arg, const char *name, size_t nlen, const char *value,
        size_t vlen);
    /* An interim (1xx) reply ended: forget the headers so far. */
    void (*reset)(void *arg);
    /* A piece of the body (chunked encoding already removed). */
    void (*body)(void *arg, const char *data, size_t len);
    void *arg;
};

struct hc_request {
    const char *target;  /* "http://host[:port][/prefix]", "https://...",
                          * or the absolute path of a Unix socket */
    const char *ca;      /* https://: PEM CA file, NULL: the system's */
    const char *method;  /* "GET", "POST" */
    const char *path;    /* "/v1/jobs?x=y" (after the URL's prefix) */
    const char *headers; /* more header lines, each ending in CRLF, or
                          * NULL */
    const char *body;    /* sent with Content-Length, or NULL */
    size_t body_len;
    long connect_timeout_ms; /* TCP connect and TLS handshake */
    long timeout_ms;         /* the whole exchange */
};

struct hc_conn;

struct hc_conn *hc_conn_new(void);
/* Closes the connection, if open. Accepts NULL. */
void hc_conn_free(struct hc_conn *c);

/* Send req and read its reply into sink. An open connection to the same
 * target (and CA) is reused; one that the server has closed meanwhile is
 * replaced once, as long as nothing of the reply had arrived. Returns
 * the reply's status (> 0), or -1 with err filled. SIGPIPE is ignored
 * while it runs (the previous disposition comes back). */
long hc_perform(struct hc_conn *c, const struct hc_request *req,
    const struct hc_sink *sink, struct hc_error *err);

/* s with every byte but ALPHA, DIGIT and "-._~" percent-encoded (RFC
 * 3986 unreserved); caller frees. */
char *hc_escape(const char *s);

#endif
