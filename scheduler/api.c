/*
 * api.c - route table, authentication and error mapping for the HTTP API
 *
 * A request is matched against the table by path pattern ("{}" matches one
 * non-empty segment, handed to the handler as r->arg), then by method: a
 * known path with another method is 405, an unknown path 404. The route's
 * flags say which credential it needs (none, a user's, an operator's, an
 * agent's). The handler returns 0 or a negative errno with a message, and
 * api_error() is the one place that maps errno to an HTTP status.
 */
#include "scheduler/api.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "scheduler/auth.h"
#include "scheduler/db.h"

enum api_route_flags {
    API_PUBLIC = (1 << 0),      /* no credential */
    API_AGENT = (1 << 1),       /* an agent's credential */
    API_OPERATOR = (1 << 2),    /* a user with the operator role */
    API_AGENT_TOO = (1 << 3),   /* a user's or an agent's credential */
};

struct api_route {
    const char *method;
    const char *path;
    api_handler_fn *handler;
    unsigned flags;
};

static const struct api_route api_routes[] = {
    { "GET", "/v1/health", api_health_get, API_PUBLIC },
    { "GET", "/v1/whoami", api_whoami_get, 0 },
    { "POST", "/v1/tokens", api_tokens_create, API_OPERATOR },
    { "POST", "/v1/jobs", api_jobs_submit, 0 },
    { "GET", "/v1/jobs", api_jobs_list, 0 },
    { "GET", "/v1/jobs/{}", api_jobs_get, 0 },
    { "POST", "/v1/jobs/{}/cancel", api_jobs_cancel, 0 },
    { "POST", "/v1/jobs/{}/checkpoints", api_jobs_checkpoint,
        API_AGENT_TOO },
    { "GET", "/v1/stats", api_stats_get, 0 },
    { "GET", "/v1/jobs/{}/logs", api_logs_get, 0 },
    { "GET", "/v1/nodes", api_nodes_list, 0 },
    { "GET", "/v1/nodes/{}", api_nodes_get, 0 },
    { "POST", "/v1/nodes/{}/cordon", api_nodes_cordon, API_OPERATOR },
    { "POST", "/v1/nodes/{}/uncordon", api_nodes_uncordon, API_OPERATOR },
    { "POST", "/v1/agent/status", api_agent_status, API_AGENT },
    { "GET", "/v1/agent/work", api_agent_work, API_AGENT },
    { "POST", "/v1/agent/logs", api_agent_logs, API_AGENT },
};

/* Match path against pattern; the {} segment (at most one) goes to arg. */
static bool
api_match(const char *pattern, const char *path, char *arg, size_t arglen)
{
    arg[0] = '\0';
    while (*pattern && *path) {
        if (pattern[0] == '{' && pattern[1] == '}') {
            size_t n = strcspn(path, "/");

            if (n == 0 || n >= arglen)
                return false;
            memcpy(arg, path, n);
            arg[n] = '\0';
            path += n;
            pattern += 2;
            continue;
        }
        if (*pattern != *path)
            return false;
        pattern++;
        path++;
    }
    /* A trailing slash is tolerated ("/v1/jobs/"). */
    if (*path == '/' && path[1] == '\0')
        path++;
    return *pattern == '\0' && *path == '\0';
}

/* The stable code word for a 400 from the validator's message. */
static const char *
api_bad_request_word(const char *msg)
{
    if (strncmp(msg, "invalid JSON", 12) == 0)
        return "invalid_json";
    if (strncmp(msg, "unknown field", 13) == 0)
        return "unknown_field";
    if (strncmp(msg, "missing field", 13) == 0)
        return "missing_field";
    if (strncmp(msg, "field ", 6) == 0)
        return "invalid_field";
    return "bad_request";
}

void
api_error(struct http_resp *resp, int rc, const struct err *err)
{
    const char *msg = err && err->msg[0] ? err->msg : NULL;

    switch (rc) {
    case -EINVAL:
        http_resp_error(resp, 400, api_bad_request_word(msg ? msg : ""),
            "%s", msg ? msg : "bad request");
        break;
    case -EACCES:
        http_resp_error(resp, 401, "unauthorized", "%s",
            msg ? msg : "no or bad credential");
        break;
    case -EPERM:
        http_resp_error(resp, 403, "forbidden", "%s",
            msg ? msg : "not allowed");
        break;
    case -ENOENT:
        http_resp_error(resp, 404, "not_found", "%s",
            msg ? msg : "not found");
        break;
    case -EEXIST:
    case -EALREADY:
        http_resp_error(resp, 409, "conflict", "%s", msg ? msg : "conflict");
        break;
    case -E2BIG:
    case -EMSGSIZE:
        http_resp_error(resp, 413, "too_large", "%s",
            msg ? msg : "request too large");
        break;
    case -EIO:
    case -ENOSPC:
    case -EROFS:
    case -EBUSY:
    case -EAGAIN:
        http_resp_error(resp, 503, "unavailable",
            "the database cannot accept changes now; nothing was accepted");
        break;
    default:
        http_resp_error(resp, 500, "internal", "%s",
            msg ? msg : "internal error");
        break;
    }
}

void
api_handle(struct http_req *req, struct http_resp *resp, void *arg)
{
    struct schedd *sd = arg;
    const struct api_route *route = NULL;
    struct api_req r;
    struct err err;
    char segment[256];
    bool path_known = false;
    int rc;

    err_clear(&err);
    memset(&r, 0, sizeof(r));
    r.http = req;
    /* Every reply waits for the iteration's commit (see api.h). */
    resp->durable = true;
    for (size_t i = 0; i < ARRAY_SIZE(api_routes); i++) {
        if (!api_match(api_routes[i].path, req->path, segment,
                sizeof(segment)))
            continue;
        path_known = true;
        if (strcmp(api_routes[i].method, req->method) == 0) {
            route = &api_routes[i];
            break;
        }
    }
    if (route == NULL) {
        if (path_known)
            http_resp_error(resp, 405, "method_not_allowed",
                "%s is not allowed on %s", req->method, req->path);
        else
            http_resp_error(resp, 404, "not_found", "no such endpoint: %s",
                req->path);
        return;
    }
    if (!schedd_available(sd)) {
        http_resp_error(resp, 503, "unavailable",
            "the scheduler is reloading its state; retry");
        return;
    }
    r.arg = segment[0] ? segment : NULL;
    if ((route->flags & API_AGENT) ||
        ((route->flags & API_AGENT_TOO) && req->authorization &&
            strncmp(req->authorization, "Agent ", 6) == 0))
        rc = auth_agent(sd, req, &r.who, &err);
    else if (route->flags & API_PUBLIC)
        rc = 0;
    else
        rc = auth_user(sd, req, &r.who, &err);
    if (rc == 0 && (route->flags & API_OPERATOR) && !r.who.operator)
        rc = err_set(&err, -EPERM, "this needs the operator role");
    if (rc == 0)
        rc = route->handler(sd, &r, resp, &err);
    if (rc < 0) {
        /* A handler that wrote to the database and then failed leaves the
         * iteration failed (schedd_db_error); its reply is the 503. */
        if (!schedd_available(sd) && rc != -EINVAL)
            rc = -EIO;
        api_error(resp, rc, &err);
        if (resp->status >= 500)
            log_warn("%s %s: %s", req->method, req->path, err.msg);
        else
            log_debug("%s %s: %d %s", req->method, req->path, resp->status,
                err.msg);
    }
}

int
api_flush(void *arg)
{
    return schedd_flush(arg);
}

int
api_body_json(const struct http_req *req, cJSON **out, struct err *err)
{
    int rc = jsonx_parse(req->body, req->body_len, out, err);

    if (rc < 0)
        return rc;
    if (!cJSON_IsObject(*out)) {
        cJSON_Delete(*out);
        *out = NULL;
        return err_set(err, -EINVAL,
            "invalid JSON: the body must be a JSON object");
    }
    return 0;
}

int
api_query_int(const struct http_req *req, const char *key, int64_t min,
    int64_t max, int64_t *out, struct err *err)
{
    char buf[32];
    char *end = NULL;
    long long v;

    if (http_query_get(req, key, buf, sizeof(buf)) == NULL) {
        /* Absent, or too long to be a number we accept. */
        char big[1024];

        if (http_query_get(req, key, big, sizeof(big)) == NULL)
            return -ENOENT;
        return err_set(err, -EINVAL,
            "query parameter '%s': '%.20s...' is not an integer", key, big);
    }
    errno = 0;
    v = strtoll(buf, &end, 10);
    if (buf[0] == '\0' || errno != 0 || *end != '\0')
        return err_set(err, -EINVAL,
            "query parameter '%s': '%s' is not an integer", key, buf);
    if (v < min || v > max)
        return err_set(err, -EINVAL,
            "query parameter '%s': must be between %lld and %lld", key,
            (long long)min, (long long)max);
    *out = v;
    return 0;
}

static int
api_event_add(const struct db_event *ev, void *arg)
{
    cJSON *arr = arg;
    cJSON *o = cJSON_CreateObject();
    cJSON *detail = cJSON_Parse(ev->detail);

    jsonx_add_int(o, "id", ev->id);
    jsonx_add_int(o, "time_ms", ev->time_ms);
    jsonx_add_str(o, "actor", ev->actor);
    jsonx_add_str(o, "subject", ev->subject);
    jsonx_add_str(o, "kind", ev->kind);
    cJSON_AddItemToObject(o, "detail",
        detail ? detail : cJSON_CreateObject());
    cJSON_AddItemToArray(arr, o);
    return 0;
}

cJSON *
api_events_json(struct schedd *sd, const char *subject, int limit, int *rc)
{
    cJSON *arr = cJSON_CreateArray();

    *rc = db_events_foreach(sd->db, subject, limit, api_event_add, arr);
    return arr;
}
