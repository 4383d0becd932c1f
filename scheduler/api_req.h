/*
 * api_req.h - what every API handler shares: the request, the errors
 *
 * A handler is `int api_<noun>_<verb>(sd, r, resp, err)`: it parses the
 * request, calls a service, and formats the reply into resp. It returns 0,
 * or a negative errno with a message for a person in err, which
 * api_req_error() turns into the HTTP status and the error body
 * {"error": {"code", "message"}} of docs/api.md:
 *   -EINVAL 400 (code from the message: invalid_json, unknown_field,
 *   missing_field, invalid_field, else bad_request), -EACCES 401, -EPERM
 *   403, -ENOENT 404, -EEXIST 409, -E2BIG 413, database failures (-EIO,
 *   -ENOSPC, -EROFS, -EBUSY, -EAGAIN) 503, anything else (e.g. -EFAULT
 *   for a failed file write) 500.
 *
 * Every reply is durable: it is written only after the iteration's
 * transaction committed, so no reply shows state a crash could undo.
 */
#ifndef SCHEDULER_API_REQ_H
#define SCHEDULER_API_REQ_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "common/err.h"
#include "scheduler/auth.h"
#include "scheduler/http.h"
#include "scheduler/schedd.h"

struct api_waiter;
struct coll_table;
struct modex_table;

/* The API's context (api.c creates it). */
struct api {
    struct schedd *sd;
    struct http_server *http;
    /* Waiting GET /v1/agent/work, one list per node (by node->idx). */
    struct api_waiter **waiters;
    size_t nwaiters;
    /* The relayed PMIx collectives (api_coll.h). */
    struct coll_table *colls;
    /* The relayed PMIx direct modex requests (api_modex.h). */
    struct modex_table *modex;
    /* The TCP listener's TLS credentials (NULL: plain), for reloads. */
    char *tls_cert, *tls_key, *tls_ca;
    int port; /* the TCP port bound (0: none) */
    /* The supervisors' fence notices, on UDP at the TCP listener's
     * address (fence.h); NULL: none */
    struct fence_rx *fence;
};

struct api_req {
    struct api *api;
    struct http_req *http;
    struct auth_ident who;
    const char *arg; /* the {} path segment, or NULL */
};

typedef int api_handler_fn(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err);

/* Set resp to the error for rc (negative errno) with err's message. The
 * database's and the disk's errors (-EIO, -ENOSPC, -EDQUOT, -EROFS) are
 * 503 with Retry-After, err's message being schedd_unavailable_msg's. */
void api_req_error(struct http_resp *resp, int rc, const struct err *err);
/* 503 with Retry-After while the scheduler cannot serve (a failed
 * iteration, reloading): naming the disk when it is full. */
void api_req_unavailable(struct schedd *sd, struct http_resp *resp);

/* The request body as a JSON object (invalid_json on failure). *out:
 * caller deletes. */
int api_req_body(const struct api_req *r, cJSON **out, struct err *err);
/* An agent's request names node as its own: 0, or -EPERM with err
 * saying whose the credential is. */
int api_req_own_node(const struct api_req *r, const char *node,
    struct err *err);
/* The node= query parameter into buf (len bytes), which must be the
 * authenticated agent's node: 0, -EINVAL when missing, -EPERM. */
int api_req_node_param(const struct api_req *r, char *buf, size_t len,
    struct err *err);
/* Query integer parameter: 0 and *out set, -ENOENT when absent (out
 * untouched), -EINVAL with err naming it when malformed or out of
 * [min, max]. */
int api_req_query_int(const struct api_req *r, const char *key, int64_t min,
    int64_t max, int64_t *out, struct err *err);
/* The same, absent being an error ("missing field 'key' (query)"). */
int api_req_query_int_required(const struct api_req *r, const char *key,
    int64_t min, int64_t max, int64_t *out, struct err *err);
/* The same, absent leaving *out (the default) as it is. */
int api_req_query_int_default(const struct api_req *r, const char *key,
    int64_t min, int64_t max, int64_t *out, struct err *err);
/* Whether a flag parameter is set ("1", "true", "yes" or empty). */
bool api_req_query_flag(const struct api_req *r, const char *key);
/* The stream= parameter: out (default) or err; *is_err. */
int api_req_query_stream(const struct api_req *r, bool *is_err,
    struct err *err);

/* The job id of the {} segment; -ENOENT when it is not one. */
int api_req_job_id(const struct api_req *r, int64_t *id, struct err *err);
/* Whether the requester may see a job of owner. */
bool api_req_may_see(const struct api_req *r, const char *owner);
/* Load a job the requester may see: -ENOENT, -EPERM. *out: caller
 * destroys. */
int api_req_job_load(struct schedd *sd, const struct api_req *r, int64_t id,
    struct job **out, struct err *err);

/* One event as the API shows it: {id, time_ms, actor, subject, kind,
 * detail}. */
struct db_event;
cJSON *api_req_event_json(const struct db_event *ev);
/* The newest `limit` events of subject as a JSON array; *rc: 0 or a
 * negative errno. */
cJSON *api_req_events(struct schedd *sd, const char *subject, int limit,
    int *rc);

/* Whose jobs the requester may see, remembered across one reply's events
 * (a job looked up once). */
struct api_req_seen {
    int64_t job_id;
    bool ok;
};
/* Whether r may see job id's details (operators, its owner; a job that is
 * gone: operators only). */
bool api_req_may_see_job(const struct api_req *r, struct api_req_seen *seen,
    int64_t id);
/* Remove from an event's JSON (api_req_event_json) what belongs to a job
 * r may not see (docs/api.md "Visibility and permissions"): every object
 * in its detail that names such a "job" (the detail itself, an entry of
 * its "evidence" or "failures") keeps only the keys of an allow-list
 * (which job, attempt, kind, status, state, step, times); "redacted":
 * true is added where anything was removed. Operators see everything. */
void api_req_event_redact(const struct api_req *r, struct api_req_seen *seen,
    cJSON *ev);
/* api_req_event_redact on every event of arr. */
void api_req_events_redact(const struct api_req *r, cJSON *arr);

#endif
