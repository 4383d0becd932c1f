/*
 * http_int.h - the HTTP server's private structures, shared by http_*.c
 *
 * Each connection owns an http_parser, the request being parsed, and an
 * output queue with one entry (struct http_out) per request, in request
 * order. The handler fills an entry; the entry is written only after the
 * server's uv_check callback has run flush_fn (group commit) and decided
 * whether a durable response still stands. Entries behind an unfinished
 * deferred response (a long poll) wait in the queue, so responses always
 * leave in request order.
 *
 * Pipelined requests behind a pending deferred response are parsed and
 * handled at once; only their responses wait. Reading pauses (the parser
 * is paused and the unparsed rest is kept) when a connection has
 * HTTP_PIPELINE_MAX unwritten responses or HTTP_WRITE_HIGH bytes the
 * kernel has not taken yet, and resumes as they drain. That bounds the
 * memory one peer can cost without stopping the reads that notice a long
 * poller going away.
 *
 * A connection that must close after a response (an error, "Connection:
 * close", HTTP/1.0, end of input) writes it, shuts down its sending side,
 * and then reads and discards until the peer closes or HTTP_LINGER_MS
 * passes. Closing at once could reset the connection with unread input
 * and destroy the reply before the peer has read it (a 413 answered while
 * the body is still arriving).
 *
 * Lifetime: a connection is freed only from the close callback of the
 * last of its two handles (stream and timer). Everything that ends a
 * connection goes through http_conn_close(), which marks it closing,
 * cancels its deferred responses and calls uv_close(); callbacks on the
 * stack check `closing` and return.
 *
 * TLS sits between the stream and the parser: a TLS connection's input
 * goes into its SSL object's memory BIO, SSL_read() turns it into the
 * plaintext the parser sees (decrypting no further while the parser is
 * paused, so the ciphertext waits in the BIO), and everything written
 * (responses, handshake messages, alerts, close_notify) is encrypted at
 * once and queued on the stream as ciphertext. The stream's write queue
 * therefore measures a TLS connection's unsent output exactly as a plain
 * one's, and the backpressure and write deadline need no change.
 *
 * The files: http_server.c (the server, its listeners and the group
 * commit), http_conn.c (one connection's I/O and lifetime), http_parse.c
 * (http_parser callbacks and limits), http_resp.c (responses and deferred
 * responses), http_tls.c (OpenSSL over memory BIOs), http_url.c (path
 * decoding and query strings).
 *
 * Threading: everything runs on the loop thread.
 */
#ifndef SCHEDULER_HTTP_INT_H
#define SCHEDULER_HTTP_INT_H

#include "scheduler/http.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <http_parser.h>
#include <openssl/ssl.h>
#include <uv.h>

#include "common/sbuf.h"
#include "scheduler/http_caps.h"

#define HTTP_MAX_HEADER 16384
#define HTTP_MAX_HEADER_STR "16384"
#define HTTP_DEFAULT_MAX_BODY (1024 * 1024)
#define HTTP_DEFAULT_IDLE_MS 60000
#define HTTP_DEFAULT_HEADER_MS 10000
#define HTTP_DEFAULT_BODY_MS 30000
#define HTTP_DEFAULT_WRITE_MS 30000
#define HTTP_WRITE_PROGRESS (64 * 1024)
#define HTTP_RETRY_AFTER_S 5
#define HTTP_LINGER_MS 2000
#define HTTP_PIPELINE_MAX 32
#define HTTP_WRITE_HIGH (4 * 1024 * 1024)
#define HTTP_READ_BUF (64 * 1024)
#define HTTP_BACKLOG 511

/* A log line that repeats at most once per 10 s; the rest are counted. */
struct http_ratelog {
    uint64_t ms;              /* the last line (loop ms; 0: none yet) */
    unsigned long long quiet; /* lines not logged since */
};

/* A minimal intrusive circular list. A node that is in no list points to
 * itself, so removing it again is harmless. */
struct http_list {
    struct http_list *prev;
    struct http_list *next;
};

enum http_out_state {
    HTTP_OUT_HANDLER,   /* the handler is filling it */
    HTTP_OUT_DEFERRED,  /* waiting for http_deferred_finish() */
    HTTP_OUT_READY,     /* complete; written once settled */
    HTTP_OUT_CANCELLED, /* its connection closed before it finished */
};

struct http_deferred {
    http_cancel_fn *cancel;
    void *arg;
};

/* One response slot per request, queued on its connection in order. */
struct http_out {
    struct http_list node; /* in its connection's queue */
    struct http_conn *conn;
    enum http_out_state state;
    bool deferred;   /* http_resp_defer() called, not yet finished */
    bool settled;    /* a flush ran after it became ready */
    bool batched;    /* ready when a held flush began: settled by
                      * http_server_release() */
    bool keep_alive; /* the connection stays open after it */
    bool head;       /* HEAD request: no body on the wire */
    char *what;      /* "GET /v1/jobs" for the log */
    struct http_resp resp;
    struct http_deferred d;
};

union http_stream {
    uv_handle_t handle;
    uv_stream_t stream;
    uv_tcp_t tcp;
    uv_pipe_t pipe;
};

struct http_listener {
    struct http_list node; /* in srv->listeners */
    struct http_server *srv;
    union http_stream h;
    bool is_unix;
    char *path; /* the socket file we created, or NULL */
};

struct http_conn {
    struct http_list node;  /* in srv->conns until it starts closing */
    struct http_list dirty; /* in srv->dirty while it has news */
    /* In srv->headless (accept order) while it may be evicted: a TCP
     * connection no agent's or operator's that sent no request head. */
    struct http_list headless;
    struct http_server *srv;
    union http_stream h;
    uv_timer_t timer; /* idle timeout, then linger timeout */
    uv_shutdown_t shutdown_req;
    int nhandles; /* open handles; freed when 0 */
    unsigned long id;
    http_parser parser;

    bool is_unix;
    uid_t uid;
    gid_t gid;
    pid_t pid;
    char peer[HTTP_PEER_KEY_MAX]; /* counted peer key, "" when none */
    bool counted_user;            /* in srv->nuser */
    bool agent;                   /* carried an authenticated agent request */
    bool op;         /* carried an authenticated operator's request */
    bool restricted; /* in the agents' reserve: agents and operators only */
    uint64_t accepted_ms;  /* loop ms */
    enum http_refusal why; /* why restricted */

    SSL *ssl;      /* TLS over memory BIOs, or NULL (plain HTTP) */
    bool tls_seen; /* the first input byte was looked at */
    bool tls_up;   /* the handshake completed */

    /* Deadlines: where the current request is, and since when (loop ms). */
    enum { HTTP_PHASE_IDLE, HTTP_PHASE_HEAD, HTTP_PHASE_BODY } phase;
    bool seen_head; /* a complete request head arrived */
    uint64_t phase_since;
    uint64_t active_ms;   /* last input, output or response (loop ms) */
    uint64_t write_since; /* unsent bytes waiting since (0: none) */
    size_t write_mark;    /* unsent bytes at write_since */

    /* The request being parsed. */
    struct sbuf url;
    struct sbuf hname;
    struct sbuf hval;
    bool in_value;
    char *authorization;
    char *content_type;
    bool expect_continue;
    struct sbuf body;
    int fail_status; /* set by a parser callback that failed */
    const char *fail_code;
    char fail_msg[128];

    /* Responses in request order (struct http_out, by node). */
    struct http_list outq;
    size_t nout;
    size_t ndeferred;

    struct sbuf inbuf; /* unparsed input while paused */
    bool reading;
    bool paused;      /* parser paused for backpressure */
    bool close_after; /* no more requests; close after the last */
    bool shut;        /* uv_shutdown() issued */
    bool lingering;   /* shut down; discarding input */
    bool peer_eof;
    bool closing;
    bool is_dirty;
    struct http_hold *held; /* the held flush it waits in (by dirty) */
    bool redirty;           /* became dirty while held */
};

/* A flush whose commit is not final yet (http_server_hold): its
 * connections wait here, oldest first, until released. */
struct http_hold {
    struct http_list node; /* in srv->held */
    uint64_t ticket;
    struct http_list conns; /* by conn->dirty */
    size_t nouts;           /* responses batched */
};

/* A drop from at least this many connections to a quarter of it trims the
 * heap (conn_trim in http_conn.c). */
#define HTTP_TRIM_PEAK 64
/* A connection younger than this is never evicted for room
 * (conn_evictable in http_conn.c). */
#define HTTP_EVICT_GRACE_MS 1000

struct http_server {
    uv_loop_t *loop;
    size_t max_body;
    uint64_t idle_ms;
    uint64_t header_ms;
    uint64_t body_ms;
    uint64_t write_ms;
    struct http_caps_cfg caps;
    unsigned exempt_uid[2];
    struct http_peers peers;
    size_t nuser;      /* TCP connections not known to be an agent's */
    size_t nagent;     /* TCP connections marked agent */
    size_t noperator;  /* TCP connections marked operator */
    size_t peak_conns; /* the most open since the last trim (http_conn.c) */
    size_t nunix;
    size_t nrestricted;
    struct http_server_stats st;  /* the counters (open counts unused) */
    struct http_ratelog refusals; /* the refusal log lines */
    struct http_ratelog tls_log;  /* the TLS failure log lines */
    SSL_CTX *tls;                 /* TLS on TCP connections, or NULL */
    http_handler_fn *handler;
    http_flush_fn *flush;
    char flush_msg[200]; /* why the last flush failed (http_server_flush_msg) */
    void *arg;

    uv_check_t check;
    uv_idle_t idle;
    struct http_list listeners;
    struct http_list conns;
    struct http_list headless; /* by conn->headless: eviction candidates */
    struct http_list dirty;    /* conns with responses to settle */
    struct http_list held;     /* struct http_hold, oldest first */
    uint64_t hold_ticket;      /* set by http_server_hold during a flush */
    bool in_flush;
    size_t nheld; /* responses in held flushes */
    size_t nconns;
    unsigned nhandles; /* every open handle, ours and conns' */
    unsigned long next_id;

    bool closing;
    void (*done)(void *);
    void *done_arg;

    /* Every read is parsed (or copied) before the next one starts, so
     * one buffer serves all connections. */
    char rbuf[HTTP_READ_BUF];
};

/* --- lists --------------------------------------------------------------- */

static inline void
http_list_init(struct http_list *l)
{
    l->prev = l;
    l->next = l;
}

static inline bool
http_list_empty(const struct http_list *l)
{
    return l->next == l;
}

static inline void
http_list_add_tail(struct http_list *head, struct http_list *n)
{
    n->prev = head->prev;
    n->next = head;
    head->prev->next = n;
    head->prev = n;
}

static inline void
http_list_remove(struct http_list *n)
{
    n->prev->next = n->next;
    n->next->prev = n->prev;
    http_list_init(n);
}

/* Move every node of from to the (empty) list to. */
static inline void
http_list_move(struct http_list *from, struct http_list *to)
{
    http_list_init(to);
    if (http_list_empty(from))
        return;
    to->next = from->next;
    to->prev = from->prev;
    to->next->prev = to;
    to->prev->next = to;
    http_list_init(from);
}

/* --- http_server.c ------------------------------------------------------- */

/* One of the server's handles (its own or a connection's) finished
 * closing; the last one after http_server_close() frees the server and
 * runs its done callback. */
void http_server_handle_closed(struct http_server *srv);
/* Put conn on the list of connections the next check phase flushes and
 * writes, and keep the loop from blocking until then. No-op while conn or
 * the server closes. */
void http_conn_mark_dirty(struct http_conn *conn);

/* Log a refused or shed connection (warn), at most one line per 10 s
 * (the rest counted into the next line). */
void http_server_log_refusal(struct http_server *srv, const char *what);
/* Log a TLS failure of a connection (notice), rate-limited the same
 * way. */
void http_server_log_tls(struct http_server *srv, const char *what);

/* --- http_conn.c --------------------------------------------------------- */

/* Accept a pending connection from listener and start reading from it.
 * Failures are logged and cost only that connection. */
void http_conn_accept(struct http_server *srv, uv_stream_t *listener,
    bool is_unix);
/* Cancel conn's deferred responses, drop its queue and close its handles;
 * conn is freed from the last close callback. Idempotent. */
void http_conn_close(struct http_conn *conn);
/* Append out to conn's response queue; conn owns it from here. */
void http_conn_enqueue(struct http_conn *conn, struct http_out *out);
/* Whether conn has enough unwritten output to stop parsing its input. */
bool http_conn_should_pause(const struct http_conn *conn);
/* Arm conn's timer for its nearest deadline (header, body, write or idle;
 * none while only a deferred response waits). */
void http_conn_timer_restart(struct http_conn *conn);
/* Write head (and body, when not NULL), encrypted on a TLS connection;
 * takes ownership of both, also on failure. Returns 0 or a negative
 * errno (libuv's, or -EPROTO from TLS). */
int http_conn_write(struct http_conn *conn, char *head, size_t hlen, char *body,
    size_t blen);
/* The same, as it is on the wire (ciphertext, or a plain reply to a
 * client that does not speak TLS). */
int http_conn_write_raw(struct http_conn *conn, char *head, size_t hlen,
    char *body, size_t blen);
/* Queue an error response the server makes itself (a malformed request, a
 * limit) and close the connection after it. */
void http_conn_reject(struct http_conn *conn, int status, const char *code,
    const char *msg);
/* A flush returned flush_rc (0 or a negative errno): settle the responses
 * that became ready before it, write what may go, and resume reading if
 * the queue drained. conn may be closing when this returns. */
void http_conn_flushed(struct http_conn *conn, int flush_rc);
/* A held flush began: mark the responses ready now as its own (batched);
 * returns how many. */
size_t http_conn_batch(struct http_conn *conn);
/* The held flush conn waited in was released with rc: settle its batched
 * responses and write what may go, as http_conn_flushed does. */
void http_conn_released(struct http_conn *conn, int rc);
/* Stop reading (idempotent). */
void http_conn_read_stop(struct http_conn *conn);
/* No more requests: send close_notify (TLS), shut the sending side down
 * once every queued write went out, then read and discard until the peer
 * closes or HTTP_LINGER_MS pass. Idempotent. */
void http_conn_shutdown(struct http_conn *conn);

/* --- http_parse.c -------------------------------------------------------- */

/* Feed input to conn's parser, running the handler for every complete
 * request. Pauses (keeping the rest in conn->inbuf) under backpressure;
 * rejects malformed or oversized input. conn may be closing on return. */
void http_conn_parse(struct http_conn *conn, const char *data, size_t len);

/* --- http_resp.c --------------------------------------------------------- */

/* A response slot for conn in state HTTP_OUT_HANDLER with a 200 default;
 * takes ownership of what (the request for the log). */
struct http_out *http_out_create(struct http_conn *conn, char *what);
/* Free out (not queued anywhere); accepts NULL. */
void http_out_destroy(struct http_out *out);

/* --- http_tls.c ---------------------------------------------------------- */

/* The first input of a TLS connection is not a TLS record. */
#define HTTP_TLS_NOT_TLS (-EPROTONOSUPPORT)
/* The peer sent close_notify. */
#define HTTP_TLS_CLOSED (-ENOTCONN)

/* Give conn (TCP, accepted on a server with TLS) its SSL object. Returns
 * 0 or -EPROTO (logged). */
int http_tls_conn_open(struct http_conn *conn);
/* Free conn's SSL object; accepts a conn without one. */
void http_tls_conn_free(struct http_conn *conn);
/* Hand ciphertext that arrived to conn's SSL object. Returns 0, or
 * HTTP_TLS_NOT_TLS when it is the first input and no TLS record (*plain
 * says whether it looks like a plain HTTP request). */
int http_tls_feed(struct http_conn *conn, const char *data, size_t len,
    bool *plain);
/* Decrypt into buf (advancing the handshake as needed). Returns the
 * plaintext length, 0 when more input is needed, HTTP_TLS_CLOSED, or
 * -EPROTO with why (a person's words: "tlsv1 alert unknown ca") set. */
ssize_t http_tls_read(struct http_conn *conn, char *buf, size_t len, char *why,
    size_t whylen);
/* Encrypt len bytes (len > 0) for sending. Returns 0 or -EPROTO. */
int http_tls_write(struct http_conn *conn, const char *data, size_t len);
/* Queue close_notify (once the handshake completed; else nothing). */
void http_tls_close_notify(struct http_conn *conn);
/* Write what the SSL object has encrypted (records, handshake messages,
 * alerts) to the stream. Returns 0 or a negative libuv error. */
int http_tls_flush(struct http_conn *conn);
/* Send what is encrypted without queueing (uv_try_write: an alert before
 * the connection closes); best effort. */
void http_tls_flush_now(struct http_conn *conn);
/* The first input of a TLS connection was no TLS: answer plain HTTP
 * (plain) with a plain 400 tls_required and a shutdown, anything else
 * with a close. Counted and logged. */
void http_tls_not_tls(struct http_conn *conn, bool plain);
/* A TLS error (why) ends conn; the alert OpenSSL made, if any, goes out
 * first. Counted and logged. */
void http_tls_failed(struct http_conn *conn, const char *why);

/* --- http_url.c ---------------------------------------------------------- */

/* Append the %XX-decoded path s[0..n) to out. Returns -EINVAL on a bad
 * escape or a control character, which no route and no log line should
 * ever see (out then holds a partial result). */
int http_path_decode(const char *s, size_t n, struct sbuf *out);

#endif
