/*
 * api.c - route table, authentication, listeners (api.h)
 */
#include "scheduler/api.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/xalloc.h"
#include "scheduler/api_agent.h"
#include "scheduler/api_coll.h"
#include "scheduler/api_jobctl.h"
#include "scheduler/api_jobs.h"
#include "scheduler/api_logs.h"
#include "scheduler/api_modex.h"
#include "scheduler/api_nodes.h"
#include "scheduler/api_obs.h"
#include "scheduler/api_req.h"
#include "scheduler/api_stats.h"
#include "scheduler/api_tokens.h"
#include "scheduler/auth.h"
#include "scheduler/obs.h"

enum api_route_flags {
    API_PUBLIC = (1 << 0),    /* no credential */
    API_AGENT = (1 << 1),     /* an agent's credential */
    API_OPERATOR = (1 << 2),  /* a user with the operator role */
    API_AGENT_TOO = (1 << 3), /* a user's or an agent's credential */
    API_METRICS = (1 << 4),   /* public unless metrics_token_required */
};

struct api_route {
    const char *method;
    const char *path;
    api_handler_fn *handler;
    unsigned flags;
};

static const struct api_route api_routes[] = {
    { "GET", "/v1/health", api_health_get, API_PUBLIC },
    { "GET", "/metrics", api_metrics_get, API_METRICS },
    { "GET", "/v1/events", api_events_list, 0 },
    { "GET", "/v1/whoami", api_whoami_get, 0 },
    { "POST", "/v1/tokens", api_tokens_create, API_OPERATOR },
    { "GET", "/v1/tokens", api_tokens_list, 0 },
    { "POST", "/v1/tokens/{}/revoke", api_tokens_revoke, 0 },
    { "POST", "/v1/jobs", api_jobs_submit, 0 },
    { "GET", "/v1/jobs", api_jobs_list, 0 },
    { "GET", "/v1/history", api_jobs_history, 0 },
    { "GET", "/v1/jobs/{}", api_jobs_get, 0 },
    { "POST", "/v1/jobs/{}/cancel", api_jobs_cancel, 0 },
    { "POST", "/v1/jobs/{}/hold", api_jobs_hold, 0 },
    { "POST", "/v1/jobs/{}/release", api_jobs_release, 0 },
    { "POST", "/v1/jobs/{}/requeue", api_jobs_requeue, 0 },
    { "POST", "/v1/jobs/{}/directives", api_jobs_directive, 0 },
    { "POST", "/v1/jobs/{}/checkpoints", api_jobs_checkpoint, API_AGENT_TOO },
    { "GET", "/v1/stats", api_stats_get, 0 },
    { "GET", "/v1/jobs/{}/logs", api_logs_get, 0 },
    { "GET", "/v1/nodes", api_nodes_list, 0 },
    { "GET", "/v1/nodes/{}", api_nodes_get, 0 },
    { "POST", "/v1/nodes/{}/cordon", api_nodes_cordon, API_OPERATOR },
    { "POST", "/v1/nodes/{}/uncordon", api_nodes_uncordon, API_OPERATOR },
    { "POST", "/v1/nodes/{}/remove", api_nodes_remove, API_OPERATOR },
    { "POST", "/v1/nodes/{}/drain", api_nodes_drain, API_OPERATOR },
    { "POST", "/v1/nodes/{}/health/ack", api_nodes_health_ack, API_OPERATOR },
    { "POST", "/v1/agent/status", api_agent_status, API_AGENT },
    { "GET", "/v1/agent/work", api_agent_work, API_AGENT },
    { "POST", "/v1/agent/logs", api_agent_logs, API_AGENT },
    { "POST", "/v1/agent/collective", api_agent_collective, API_AGENT },
    { "POST", "/v1/agent/modex", api_agent_modex, API_AGENT },
    { "GET", "/v1/agent/modex", api_agent_modex_poll, API_AGENT },
    { "POST", "/v1/agent/modex/reply", api_agent_modex_reply, API_AGENT },
};

struct api_close_ctx {
    struct api *api;
    void (*done)(void *);
    void *arg;
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

/* The route of req, or NULL with resp set to 404 or 405. */
static const struct api_route *
api_route_find(const struct http_req *req, struct http_resp *resp,
    char *segment, size_t len)
{
    bool path_known = false;

    for (size_t i = 0; i < ARRAY_SIZE(api_routes); i++) {
        if (!api_match(api_routes[i].path, req->path, segment, len))
            continue;
        path_known = true;
        if (strcmp(api_routes[i].method, req->method) == 0)
            return &api_routes[i];
    }
    if (path_known)
        http_resp_error(resp, 405, "method_not_allowed",
            "%s is not allowed on %s", req->method, req->path);
    else
        http_resp_error(resp, 404, "not_found", "no such endpoint: %s",
            req->path);
    return NULL;
}

/* Identify the requester as the route requires. */
static int
api_authenticate(struct schedd *sd, const struct api_route *route,
    struct api_req *r, struct err *err)
{
    const struct http_req *req = r->http;
    int rc;

    if ((route->flags & API_AGENT) ||
        ((route->flags & API_AGENT_TOO) && req->authorization &&
            strncmp(req->authorization, "Agent ", 6) == 0)) {
        rc = auth_agent(sd, req, &r->who, err);
        /* Agents keep their connections out of the users' budget. */
        if (rc == 0)
            http_conn_mark_agent(req->conn);
    } else if ((route->flags & API_PUBLIC) ||
               ((route->flags & API_METRICS) && !sd->metrics_token_required))
        rc = 0;
    else
        rc = auth_user(sd, req, &r->who, err);
    if (rc == 0 && (route->flags & API_OPERATOR) && !r->who.operator) {
        /* Every refused attempt is recorded (an event, and counted). */
        if ((rc = api_obs_refused(sd, r)) == 0)
            rc = err_set(err, -EPERM, "this needs the operator role");
    }
    return rc;
}

static void
api_handle(struct http_req *req, struct http_resp *resp, void *arg)
{
    struct api *api = arg;
    struct schedd *sd = api->sd;
    const struct api_route *route;
    struct api_req r = { .api = api, .http = req };
    struct err err;
    char segment[256];
    uint64_t t0 = uv_hrtime();
    int rc;

    err_clear(&err);
    /* Every reply waits for the iteration's commit (api_req.h). */
    resp->durable = true;
    if ((route = api_route_find(req, resp, segment, sizeof(segment))) == NULL) {
        obs_request(sd->obs, req->method, NULL,
            (double)(uv_hrtime() - t0) / 1e9);
        return;
    }
    if (!schedd_available(sd)) {
        http_resp_error(resp, 503, "unavailable",
            "the scheduler is reloading its state; retry");
        return;
    }
    r.arg = segment[0] ? segment : NULL;
    if ((rc = api_authenticate(sd, route, &r, &err)) == 0)
        rc = route->handler(sd, &r, resp, &err);
    obs_request(sd->obs, route->method, route->path,
        (double)(uv_hrtime() - t0) / 1e9);
    if (rc == 0)
        return;
    /* A handler that wrote to the database and then failed leaves the
     * iteration failed (schedd_db_error); its reply is the 503. */
    if (!schedd_available(sd) && rc != -EINVAL)
        rc = -EIO;
    api_req_error(resp, rc, &err);
    if (resp->status >= 500)
        log_warn("%s %s: %s", req->method, req->path, err.msg);
    else
        log_debug("%s %s: %d %s", req->method, req->path, resp->status,
            err.msg);
}

static int
api_flush(void *arg, uint64_t *ticket)
{
    struct api *api = arg;

    return schedd_flush(api->sd, ticket);
}

/* ---- hooks -------------------------------------------------------------- */

/* Commits up to seq are durable: the replies waiting for them go. */
static void
api_synced_hook(struct schedd *sd, uint64_t seq, void *arg)
{
    struct api *api = arg;

    (void)sd;
    if (api->http)
        http_server_settled(api->http, seq);
}

static void
api_node_changed_hook(struct schedd *sd, struct node *node, void *arg)
{
    (void)sd;
    api_agent_wake(arg, node);
    /* An attempt that ended changed its nodes: its collectives fail. */
    api_coll_sweep(arg);
}

static void
api_node_removed_hook(struct schedd *sd, struct node *node, void *arg)
{
    (void)sd;
    api_agent_node_removed(arg, node);
}

static void
api_model_reset_hook(struct schedd *sd, void *arg)
{
    (void)sd;
    api_agent_abort_all(arg);
    api_coll_abort_all(arg, "the scheduler is reloading its state");
}

/* ---- create / close ----------------------------------------------------- */

/* Write the bound port to path atomically (readers poll for the file). */
static int
api_write_port_file(const char *path, int port, struct err *err)
{
    char *tmp = xasprintf("%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    int rc = 0;

    if (f == NULL) {
        rc = err_set(err, -errno, "cannot write port file '%s': %s", tmp,
            strerror(errno));
    } else {
        fprintf(f, "%d\n", port);
        if (fclose(f) != 0)
            rc = err_set(err, -EIO, "cannot write port file '%s'", tmp);
        else if (rename(tmp, path) < 0)
            rc = err_set(err, -errno, "cannot rename '%s' to '%s': %s", tmp,
                path, strerror(errno));
    }
    free(tmp);
    return rc;
}

static bool
opt_set(const char *s)
{
    return s && s[0];
}

static int
api_listen(struct api *api, const struct schedd_opts *opts, struct err *err)
{
    int bound = 0, rc;

    if (opt_set(opts->socket_path) &&
        (rc = http_server_listen_unix(api->http, opts->socket_path, err)) < 0)
        return rc;
    if (opt_set(opts->listen_host)) {
        rc = http_server_listen_tcp(api->http, opts->listen_host,
            opts->listen_port, &bound, err);
        if (rc < 0)
            return rc;
        if (opt_set(opts->port_file) &&
            (rc = api_write_port_file(opts->port_file, bound, err)) < 0)
            return rc;
    }
    log_notice("lockstepd started: tcp=%s:%d socket=%s state_dir=%s",
        opt_set(opts->listen_host) ? opts->listen_host : "-", bound,
        opt_set(opts->socket_path) ? opts->socket_path : "-",
        api->sd->state_dir);
    return 0;
}

static void
api_free(struct api *api)
{
    if (api->sd->hooks.arg == api) {
        api->sd->hooks.node_changed = NULL;
        api->sd->hooks.model_reset = NULL;
        api->sd->hooks.node_removed = NULL;
        api->sd->hooks.synced = NULL;
        api->sd->hooks.arg = NULL;
    }
    free(api->waiters);
    api_coll_release(api);
    free(api);
}

static void
api_abandon_cb(void *arg)
{
    api_free(arg);
}

struct api *
api_create(struct schedd *sd, const struct schedd_opts *opts, struct err *err)
{
    struct http_server_opts hopts = {
        .max_body = opts->max_body,
        .idle_timeout_ms = opts->http.idle_timeout_ms,
        .header_timeout_ms = opts->http.header_timeout_ms,
        .body_timeout_ms = opts->http.body_timeout_ms,
        .write_timeout_ms = opts->http.write_timeout_ms,
        .max_conns = opts->http.max_conns,
        .reserve = opts->http.reserve,
        .per_peer = opts->http.per_peer,
        .exempt_uid = { 0, (unsigned)sd->self_uid },
    };
    struct api *api = xcalloc(1, sizeof(*api));

    api->sd = sd;
    api_coll_init(api);
    api->http = http_server_create(sd->loop, &hopts, api_handle, api_flush, api,
        err);
    if (api->http == NULL) {
        free(api);
        return NULL;
    }
    if (api_listen(api, opts, err) < 0) {
        http_server_close(api->http, api_abandon_cb, api);
        return NULL;
    }
    sd->hooks.node_changed = api_node_changed_hook;
    sd->hooks.model_reset = api_model_reset_hook;
    sd->hooks.node_removed = api_node_removed_hook;
    sd->hooks.synced = api_synced_hook;
    sd->hooks.arg = api;
    return api;
}

static void
api_closed_cb(void *arg)
{
    struct api_close_ctx *ctx = arg;
    void (*done)(void *) = ctx->done;
    void *done_arg = ctx->arg;

    api_free(ctx->api);
    free(ctx);
    if (done)
        done(done_arg);
}

void
api_close(struct api *api, void (*done)(void *), void *arg)
{
    struct api_close_ctx *ctx = xcalloc(1, sizeof(*ctx));

    ctx->api = api;
    ctx->done = done;
    ctx->arg = arg;
    api_coll_abort_all(api, "the scheduler is stopping");
    http_server_close(api->http, api_closed_cb, ctx);
}
