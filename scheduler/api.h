/*
 * api.h - the HTTP API of docs/api.md: routes, handlers, error mapping
 *
 * api.c holds the route table ({method, path pattern, handler, flags}),
 * authenticates each request (auth.h), calls the handler and maps its
 * result: a handler returns 0 after filling resp, or a negative errno with
 * err set to a message for a person, which api_error() turns into the
 * status and code word of docs/api.md.
 *
 * Errno conventions for handlers: -EINVAL 400 (the code word follows the
 * validator's message: invalid_json, unknown_field, missing_field,
 * invalid_field, else bad_request), -EACCES 401, -EPERM 403, -ENOENT 404,
 * -EEXIST 409, -E2BIG 413, database failures (-EIO, -ENOSPC, -EROFS,
 * -EBUSY, -EAGAIN) 503, anything else (e.g. -EFAULT for a failed file
 * write) 500.
 *
 * Every reply is marked durable: it is written only after the iteration's
 * transaction committed, so no reply shows state a crash could undo.
 */
#ifndef SCHEDULER_API_H
#define SCHEDULER_API_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "common/err.h"
#include "common/proto.h"
#include "scheduler/goodput.h"
#include "scheduler/http.h"
#include "scheduler/schedd.h"

#define API_USER_MAX 64

/* Who sent a request. */
struct api_ident {
    char user[API_USER_MAX + 1];        /* "" for agents and public routes */
    bool operator;
    bool agent;
    char node[PROTO_NODE_NAME_MAX + 1]; /* agents: the authenticated node */
};

struct api_req {
    struct http_req *http;
    struct api_ident who;
    const char *arg;                    /* the {} path segment, or NULL */
};

typedef int api_handler_fn(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err);

/* ---- api.c -------------------------------------------------------------- */

/* The http_handler_fn and http_flush_fn given to the HTTP server; arg is
 * the struct schedd. */
void api_handle(struct http_req *req, struct http_resp *resp, void *arg);
int api_flush(void *arg);

/* Set resp to the error for rc (negative errno) with err's message. */
void api_error(struct http_resp *resp, int rc, const struct err *err);

/* Parse the request body as a JSON object (invalid_json on failure).
 * *out: caller deletes. */
int api_body_json(const struct http_req *req, cJSON **out, struct err *err);
/* Query integer parameter: 0 and *out set, -ENOENT when absent (out
 * untouched), -EINVAL with err naming it when malformed or out of
 * [min, max]. */
int api_query_int(const struct http_req *req, const char *key, int64_t min,
    int64_t max, int64_t *out, struct err *err);
/* The newest `limit` events of subject as a JSON array. */
cJSON *api_events_json(struct schedd *sd, const char *subject, int limit,
    int *rc);

/* ---- api_jobs.c --------------------------------------------------------- */

int api_jobs_submit(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err);
int api_jobs_list(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err);
int api_jobs_get(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err);
int api_jobs_cancel(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err);
/* Parse a job id path segment; -ENOENT when it is not one. */
int api_job_id_parse(const char *s, int64_t *id, struct err *err);
/* Load a job the requester may see: -ENOENT, -EPERM. *out: caller
 * destroys. */
int api_job_load_visible(struct schedd *sd, const struct api_req *r,
    int64_t id, struct job **out, struct err *err);

/* ---- api_logs.c --------------------------------------------------------- */

int api_logs_get(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err);

/* POST /v1/jobs/ID/checkpoints: the job's owner, an operator or an agent
 * commits a checkpoint step for one rank (409 stale_attempt for an attempt
 * that is not the job's current one). */
int api_jobs_checkpoint(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err);

/* ---- api_stats.c -------------------------------------------------------- */

/* GET /v1/stats: cluster-wide goodput and failure counts. */
int api_stats_get(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err);
/* One job's goodput, from the database. Returns 0 or a negative errno. */
int api_goodput_job(struct schedd *sd, int64_t job_id, struct goodput *out);
/* The job object's "goodput" (docs/api.md). Caller owns it. */
cJSON *api_goodput_json(const struct goodput *g, int world_size);

/* ---- api_nodes.c -------------------------------------------------------- */

int api_nodes_list(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err);
int api_nodes_get(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err);
int api_nodes_cordon(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err);
int api_nodes_uncordon(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err);

/* ---- api_tokens.c ------------------------------------------------------- */

int api_health_get(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err);
int api_whoami_get(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err);
int api_tokens_create(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err);

/* ---- api_agent.c -------------------------------------------------------- */

int api_agent_status(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err);
int api_agent_work(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err);
int api_agent_logs(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err);

/* The node's desired state changed: answer its waiting long polls (the
 * replies are written after the commit). */
void api_agent_wake(struct schedd *sd, struct node *node);
/* Answer every waiting long poll of node with 503 (the model is being
 * reloaded) and forget them. */
void api_agent_abort(struct schedd *sd, struct node *node);

#endif
