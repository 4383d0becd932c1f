/*
 * curlx.h - HTTP requests on a daemon's libuv loop (the agent's link to
 * the scheduler, the scheduler's alert webhook)
 *
 * libcurl's multi interface driven by the loop (curl's docs/examples/
 * multi-uv.c): curl tells us which sockets to watch (one uv_poll_t each)
 * and when to call it back (one uv_timer_t); nothing ever blocks the loop.
 * Name resolution uses curl's threaded resolver.
 *
 * `server` is either a URL ("http://10.0.0.1:7300") or an absolute Unix
 * socket path ("/run/lockstep/lockstepd.sock"); request paths are appended
 * to it ("/v1/agent/status"). It may also name the replicas of a
 * replicated scheduler, comma-separated: requests go to one of them, and
 * with curlx_follow_leader() a request whose connection is refused, or
 * that a replica that does not lead answers with the leader's URL
 * (`not_leader`, docs/api.md), is sent again to the next replica or to
 * the leader, before its callback hears of it. Nothing else is ever
 * sent twice (a broken connection may have carried the request out).
 *
 * Everything here runs on the loop thread.
 */
#ifndef COMMON_CURLX_H
#define COMMON_CURLX_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

#include "common/err.h"
#include "common/sbuf.h"

struct curlx;
struct curlx_req;

/*
 * Completion of one request. rc is 0 when an HTTP response arrived (of any
 * status), otherwise a negative errno: -ECONNREFUSED, -ETIMEDOUT,
 * -EHOSTUNREACH, -ECONNRESET (the connection broke mid-request, e.g. a
 * restarted server), -EPROTO (TLS failed: the server's certificate is not
 * trusted or does not name it, or the server does not speak TLS),
 * -ECANCELED (curlx_cancel) or -EIO for any other transport failure.
 * http_status is 0 unless rc is 0. body holds the response body, or for
 * -EPROTO curl's description of the failure (NUL-terminated; borrowed,
 * valid until the callback returns). The request is freed after the
 * callback returns.
 */
typedef void (*curlx_done_fn)(int rc, long http_status, const struct sbuf *body,
    void *arg);

/* 0 when `server` is an http:// or https:// URL without a path, or an
 * absolute path, or a comma-separated list of them; otherwise -EINVAL
 * with err set. */
int curlx_check_server(const char *server, struct err *err);

/* Checks `server` (curlx_check_server) and sets up the multi handle and
 * its timers on loop. Errors: -EINVAL (bad server, message in err), -EIO
 * (libcurl failed to initialise). */
struct curlx *curlx_create(uv_loop_t *loop, const char *server,
    struct err *err);

/*
 * Aborts every request in flight WITHOUT calling their callbacks, then
 * closes the handles; the memory is freed once the last close callback
 * has run (so uv_run must turn once more). Accepts NULL. Must not be called
 * from inside a curlx_done_fn.
 */
void curlx_destroy(struct curlx *cx);

/* The server requests now go to changed (a replica took over). */
typedef void curlx_switch_fn(void *arg);

/* Follow replicas (see the top of this file); cb (may be NULL) runs
 * whenever requests start to go to another server. */
void curlx_follow_leader(struct curlx *cx, curlx_switch_fn *cb, void *arg);

/* Header line sent with every request, e.g. "Authorization: Bearer ..".
 * Copied. */
void curlx_set_header(struct curlx *cx, const char *line);
/* The PEM CA file that an https:// server's certificate must chain to
 * (NULL or "": the system's trust store). Copied; for requests started
 * after. */
void curlx_set_ca(struct curlx *cx, const char *path);

/* A header line for one request, made when it starts from what it will
 * send (method, path with query, body of len bytes, NULL when len is 0):
 * the agent's signed "Authorization: Agent ..." (common/cred.h). Returns
 * the line (caller frees), or NULL when it cannot be made: the request is
 * then not started (curlx_request returns NULL). Called on the loop
 * thread, from inside curlx_request, and again for each replica a
 * request is sent on to (a fresh signature each time). */
typedef char *curlx_sign_fn(const char *method, const char *path,
    const char *body, size_t len, void *arg);
/* Sign every later request with fn (NULL: stop signing). */
void curlx_set_signer(struct curlx *cx, curlx_sign_fn *fn, void *arg);

/*
 * Starts a request: method "GET" or "POST"; path begins with '/'; body
 * (may be NULL when len is 0) is taken over, also on failure, and freed
 * with free(); content_type may be NULL (no body). timeout_ms bounds the
 * whole transfer (0: none). The callback is called later, never from
 * inside this function. Returns the request (valid until its callback
 * returns, for curlx_cancel) or NULL when curl refused it; then cb will
 * never be called.
 */
struct curlx_req *curlx_request(struct curlx *cx, const char *method,
    const char *path, char *body, size_t len, const char *content_type,
    long timeout_ms, curlx_done_fn cb, void *arg);

/* A one-line description of a failed request for the log: the transport
 * error (rc < 0; "TLS: <curl's words>" for -EPROTO), "HTTP 401
 * unauthorized: <message>" from an error body
 * {"error": {"code", "message"}}, else "HTTP <status>". */
void curlx_error_text(int rc, long http_status, const struct sbuf *body,
    char *out, size_t len);

/* Where the last answer over TCP came from: the server's numeric
 * address (IPv4 or IPv6, no brackets) and port, as curl connected to
 * them. false when no answer came over TCP yet (a Unix socket has
 * none). */
bool curlx_peer(const struct curlx *cx, char *ip, size_t iplen, int *port);

/* Abort one request: its callback runs on a later loop turn with rc
 * -ECANCELED (never from inside this function). */
void curlx_cancel(struct curlx_req *req);

#endif
