/*
 * http.h - the scheduler's HTTP/1.1 server (libuv + http_parser)
 *
 * One server owns any number of listeners (TCP and Unix sockets) and their
 * connections. Requests are parsed with http_parser, pipelining and
 * keep-alive included, and handed to one handler function on the loop
 * thread. Responses on a connection are written in request order.
 *
 * Durability (group commit): a handler that changed state sets
 * resp->durable. Responses are not written from inside the handler: they
 * are queued, and once per loop iteration (a uv_check handle, i.e. after
 * all I/O of that iteration was processed) the server calls flush_fn, which
 * commits the open database transaction, and only then writes the queued
 * responses. If flush_fn fails, every queued durable response is replaced
 * by a 503 `unavailable` error before it is written, so a success reply
 * always means "committed".
 *
 * Held flushes (docs/architecture.md "Durable replies"): flush_fn may
 * call http_server_hold() to say that its commit is not final yet (a
 * single scheduler's WAL waits for its fsync, a replica's entry for a
 * quorum). The responses of that flush are then held, neither written
 * nor failed, until http_server_release() settles them with the
 * commit's outcome; responses that become ready meanwhile on the same
 * connections go with a later flush, so order on a connection is kept.
 *
 * Long polls: a handler may call http_resp_defer() to keep its response
 * open after it returns, and complete it later with http_deferred_finish().
 * Later pipelined requests on that connection wait behind it.
 *
 * Limits: a header block over 16 KiB gets 431, a body over max_body gets
 * 413 `too_large` and the connection is closed after the reply; malformed
 * HTTP gets 400 and a close. Idle keep-alive connections are closed after
 * idle_timeout_ms.
 *
 * Deadlines (slow clients): a request head must be complete within
 * header_timeout_ms of its first byte (of the accept, for a connection's
 * first request), its body within body_timeout_ms of the head, and
 * unsent response bytes must shrink by 64 KiB (or drain) within
 * write_timeout_ms; a connection past one is closed. A deferred response
 * (a long poll) waiting for its answer is none of these: while one waits
 * and nothing else is under way, the connection has no deadline.
 *
 * Connection caps (http_caps.h): max_conns in all, `reserve` of them for
 * the agent path, per_peer per TCP address or Unix uid. A handler marks a
 * connection that carried an authenticated agent request with
 * http_conn_mark_agent(), which exempts it from the user budget.
 *
 * TLS (http_tls.c): after http_server_tls_load(), every TCP connection
 * speaks TLS 1.2 or later; Unix socket connections never do. The
 * handshake is part of the first request's head, so the header deadline
 * covers it; the caps count a connection from its accept, handshake or
 * not. A TLS error (a failed handshake, a bad record) closes only its
 * connection; plain HTTP sent to a TLS listener is answered with a plain
 * 400 `tls_required` and a close. A connection shed at accept is closed
 * without the 503 (there is no TLS session to carry it).
 *
 * Threading: everything runs on the loop thread.
 */
#ifndef SCHEDULER_HTTP_H
#define SCHEDULER_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "common/err.h"
#include "common/sbuf.h"

struct http_server;
struct http_conn;
struct http_deferred;

struct http_req {
    const char *method; /* "GET", "POST", ... */
    const char *path;   /* decoded path without query: "/v1/jobs/12" */
    const char *query;  /* raw query string without '?', or "" */
    const char *body;   /* NUL-terminated copy; "" when none */
    size_t body_len;
    const char *authorization; /* Authorization header value or NULL */
    const char *content_type;  /* or NULL */
    bool is_unix;              /* arrived on a Unix socket listener */
    uid_t peer_uid;            /* SO_PEERCRED, valid when is_unix */
    gid_t peer_gid;
    pid_t peer_pid;
    struct http_conn *conn; /* opaque */
};

struct http_resp {
    int status;               /* default 200 */
    const char *content_type; /* static string; default application/json */
    struct sbuf headers;      /* extra "Name: value\r\n" lines */
    struct sbuf body;
    bool durable; /* send only after flush_fn succeeded */
};

/* Borrowed pointers in req are valid only during the call (copy what a
 * deferred completion needs). */
typedef void http_handler_fn(struct http_req *req, struct http_resp *resp,
    void *arg);
/* Called once per loop iteration before queued responses are written, only
 * when at least one response is queued or `force` state is pending.
 * Returns 0 or a negative errno. */
typedef int http_flush_fn(void *arg);
/* A deferred response's connection went away; the token is invalid after
 * this returns. */
typedef void http_cancel_fn(struct http_deferred *d, void *arg);

struct http_server_opts {
    size_t max_body;        /* bytes; 0 → 1 MiB */
    int idle_timeout_ms;    /* 0 → 60000 */
    int header_timeout_ms;  /* 0 → 10000 */
    int body_timeout_ms;    /* 0 → 30000 */
    int write_timeout_ms;   /* 0 → 30000 */
    size_t max_conns;       /* 0: no cap */
    size_t reserve;         /* of max_conns, for the agent path */
    size_t per_peer;        /* 0: no per-peer cap */
    unsigned exempt_uid[2]; /* Unix uids without a per-uid cap */
};

/* Deadlines a connection can miss. */
enum http_deadline {
    HTTP_DL_HEADER,
    HTTP_DL_BODY,
    HTTP_DL_WRITE,
    HTTP_DL_IDLE,
    HTTP_DL_N,
};

/* Counters of the server since it started (for GET /metrics). */
struct http_server_stats {
    size_t conns;          /* open */
    size_t conns_user;     /* of those: TCP, not known to be an agent's */
    size_t conns_agent;    /* TCP, carried an authenticated agent request */
    size_t conns_operator; /* TCP, carried an operator's request */
    size_t conns_unix;
    size_t conns_restricted; /* user connections in the agents' reserve */
    size_t max_conns, reserve, per_peer;
    unsigned long long accepted;
    unsigned long long shed[4];    /* by enum http_refusal: closed at once */
    unsigned long long refused[4]; /* restricted, neither an agent's nor
                                    * an operator's request: 503 */
    unsigned long long evicted;    /* a head-less connection closed for room */
    unsigned long long accept_errors;
    unsigned long long timeouts[HTTP_DL_N];
    unsigned long long tls_handshakes; /* completed */
    unsigned long long tls_failures;   /* TLS errors, handshake or later */
    unsigned long long tls_plain;      /* plain HTTP on a TLS listener */
    bool tls;                          /* TCP connections speak TLS */
    int64_t tls_not_after;             /* the certificate's expiry (Unix s) */
};

/* Returns NULL with err set on failure. The handler and flush callbacks are
 * never called before this returns. */
struct http_server *http_server_create(uv_loop_t *loop,
    const struct http_server_opts *opts, http_handler_fn *handler,
    http_flush_fn *flush, void *arg, struct err *err);

/* Listen on host:port (port 0 picks a free one; *bound_port receives it).
 * Errors name the address: "cannot listen on 127.0.0.1:7300: address in
 * use". */
int http_server_listen_tcp(struct http_server *srv, const char *host, int port,
    int *bound_port, struct err *err);
/* Listen on a Unix socket path: a stale socket file is removed first (a
 * live one, answering connect(), is an error), mode 0666 (identity comes
 * from SO_PEERCRED, so anyone may connect). */
int http_server_listen_unix(struct http_server *srv, const char *path,
    struct err *err);

/* What a TLS certificate says, for the log and metrics. */
struct http_tls_info {
    char subject[256]; /* "CN=sched.example.org" */
    char names[256];   /* "DNS:sched.example.org, IP:10.0.0.1" */
    int64_t not_after; /* expiry, Unix seconds */
};

/* Check TLS credentials without using them: the PEM certificate chain
 * file cert (the server's certificate first, then any intermediates),
 * the PEM private key file key (which must belong to the certificate and
 * must not be accessible to other users, like the cluster secret) and,
 * unless ca is NULL or "", that the certificate chains to a CA
 * certificate in the PEM file ca (what the clients are told to trust) as
 * a TLS server certificate. The certificate must be valid now. Fills
 * info when not NULL. Returns 0, or a negative errno with err naming the
 * file and the cause. */
int http_tls_check(const char *cert, const char *key, const char *ca,
    struct http_tls_info *info, struct err *err);

/* Serve TLS with these credentials (checked as by http_tls_check) on
 * every TCP connection accepted from now on; connections already open
 * keep the credentials they began with. Called again, it replaces them
 * (a certificate rotation); on failure nothing changes. */
int http_server_tls_load(struct http_server *srv, const char *cert,
    const char *key, const char *ca, struct http_tls_info *info,
    struct err *err);

/* Stop accepting, cancel deferred responses (their cancel_fn runs), close
 * every connection and listener; done(arg) runs once every handle is
 * closed. Removes the Unix socket file. */
void http_server_close(struct http_server *srv, void (*done)(void *),
    void *arg);

/* The message of the 503s that replace durable responses when the flush
 * now running fails (default: "cannot commit: <strerror>"); called from
 * flush_fn. msg is copied. */
void http_server_flush_msg(struct http_server *srv, const char *msg);
/* Only from inside flush_fn, which returns 0: hold the responses of
 * this flush until http_server_release() names ticket or a later one.
 * Tickets of successive holds must not decrease. */
void http_server_hold(struct http_server *srv, uint64_t ticket);
/* Settle every held flush whose ticket is at most ticket: rc 0 writes
 * its responses, a negative errno turns its durable ones into 503 as a
 * failed flush does, with msg (copied; NULL: "cannot commit:
 * <strerror>"). Holds are settled oldest first. */
void http_server_release(struct http_server *srv, uint64_t ticket, int rc,
    const char *msg);
/* Number of responses held (for metrics and tests). */
size_t http_server_held(const struct http_server *srv);

/* Number of open connections (for metrics and tests). */
size_t http_server_nconns(const struct http_server *srv);
/* The server's connection counters. */
void http_server_stats(const struct http_server *srv,
    struct http_server_stats *st);
/* Name of a deadline for metrics ("header", "body", "write", "idle"). */
const char *http_deadline_name(enum http_deadline dl);

/* The connection carried a request with valid agent credentials: it no
 * longer counts against the user budget or its peer's cap, and is no
 * longer restricted. Idempotent; no-op for Unix connections. */
void http_conn_mark_agent(struct http_conn *conn);
/* The same for a request with an operator's credentials: operators, like
 * agents, are never locked out by users' connections. */
void http_conn_mark_operator(struct http_conn *conn);
/* A request with valid credentials that are neither an agent's nor an
 * operator's arrived on conn: NULL when conn may carry it; when conn is
 * restricted (in the agents' reserve), the name of the cap that put it
 * there ("users", "peer"), the refusal counted and logged, and the caller
 * answers 503 overloaded (the connection closes after it). */
const char *http_conn_refuse_restricted(struct http_conn *conn);

/* --- building responses ------------------------------------------------ */

/* Set status and body to the printed JSON; takes ownership of json. */
void http_resp_json(struct http_resp *resp, int status, cJSON *json);
/* {"error":{"code":code,"message":<fmt>}} with the given status. */
void http_resp_error(struct http_resp *resp, int status, const char *code,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void http_resp_header(struct http_resp *resp, const char *name, const char *fmt,
    ...) __attribute__((format(printf, 3, 4)));

/* --- deferred responses (long poll) -------------------------------------- */

/* Keep resp open past the handler. Returns a token; cancel(d, arg) runs if
 * the connection closes first (then the token is dead and must be
 * forgotten). Must be called from within the handler. */
struct http_deferred *http_resp_defer(struct http_resp *resp,
    http_cancel_fn *cancel, void *arg);
/* The response to fill before finishing. */
struct http_resp *http_deferred_resp(struct http_deferred *d);
/* Queue it for writing (with the next flush); the token is dead after. */
void http_deferred_finish(struct http_deferred *d);

/* --- request helpers ---------------------------------------------------- */

/* Copy the URL-decoded value of key from the query string into buf.
 * Returns buf, or NULL when the key is absent or the value does not fit. */
const char *http_query_get(const struct http_req *req, const char *key,
    char *buf, size_t len);

#endif
