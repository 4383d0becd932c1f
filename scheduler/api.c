/*
 * api.c - route table, authentication, listeners (api.h)
 */
#include "scheduler/api.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/jsonx.h"
#include "common/log.h"
#include "common/timeid.h"
#include "common/xalloc.h"
#include "scheduler/api_admin.h"
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
#include "scheduler/buildinfo.h"
#include "scheduler/fence.h"
#include "scheduler/obs.h"
#include "scheduler/repl.h"

/* A certificate that expires sooner than this is warned about at each
 * load. */
#define API_TLS_RENEW_DAYS 30

enum api_route_flags {
    API_PUBLIC = (1 << 0),    /* no credential */
    API_AGENT = (1 << 1),     /* an agent's credential */
    API_OPERATOR = (1 << 2),  /* a user with the operator role */
    API_AGENT_TOO = (1 << 3), /* a user's or an agent's credential */
    API_METRICS = (1 << 4),   /* public unless metrics_token_required */
    API_ANY_ROLE = (1 << 5),  /* a replica serves it whether it leads
                               * or not */
};

struct api_route {
    const char *method;
    const char *path;
    api_handler_fn *handler;
    unsigned flags;
};

static const struct api_route api_routes[] = {
    { "GET", "/v1/health", api_health_get, API_PUBLIC | API_ANY_ROLE },
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
    { "GET", "/v1/admin/backup", api_admin_backup, API_OPERATOR },
    { "GET", "/v1/replicas", api_replicas_list, 0 },
    { "POST", "/v1/replicas", api_replicas_add, API_OPERATOR },
    { "POST", "/v1/replicas/{}/remove", api_replicas_remove, API_OPERATOR },
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

void
api_routes_dump(FILE *f)
{
    for (size_t i = 0; i < ARRAY_SIZE(api_routes); i++) {
        unsigned fl = api_routes[i].flags;
        const char *access = fl & API_PUBLIC      ? "public"
                             : fl & API_METRICS   ? "metrics"
                             : fl & API_AGENT     ? "agent"
                             : fl & API_OPERATOR  ? "operator"
                             : fl & API_AGENT_TOO ? "user_or_agent"
                                                  : "user";

        fprintf(f, "%s %s %s\n", api_routes[i].method, api_routes[i].path,
            access);
    }
}

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

/* Identify the requester as the route requires; who.refused says why it
 * failed. */
static int
api_authenticate(struct schedd *sd, const struct api_route *route,
    struct api_req *r, struct err *err)
{
    const struct http_req *req = r->http;
    const char *cap;
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
    /* Operators too keep their connections out of the users' budget, and
     * only they may use a connection in the agents' reserve. */
    if (rc == 0 && r->who.operator&& !r->who.agent)
        http_conn_mark_operator(req->conn);
    else if (rc == 0 && !r->who.agent &&
             (cap = http_conn_refuse_restricted(req->conn)) != NULL)
        return err_set(err, -EUSERS,
            "too many connections (%s cap); retry later", cap);
    if (rc == 0 && (route->flags & API_OPERATOR) && !r->who.operator) {
        r->who.refused = REFUSAL_OPERATOR;
        rc = err_set(err, -EPERM, "this needs the operator role");
    }
    return rc;
}

/* Why a handler refused (403): the operator role, or another's object. */
static enum refusal_reason
api_refusal_reason(const struct err *err)
{
    return strstr(err->msg, "operator role") ? REFUSAL_OPERATOR
                                             : REFUSAL_FORBIDDEN;
}

/* The reply to a failed authentication: 401 with the code of its reason
 * (clock_skew with the scheduler's time, replay, else unauthorized), 503
 * when the table of nonces is full; false for any other failure. */
static bool
api_auth_error(struct http_resp *resp, const struct api_req *r, int rc,
    const struct err *err)
{
    cJSON *o, *e;

    if (rc == -EAGAIN && r->who.refused == REFUSAL_REPLAY_FULL) {
        http_resp_error(resp, 503, "unavailable", "%s", err->msg);
        http_resp_header(resp, "Retry-After", "1");
        return true;
    }
    if (rc != -EACCES || (r->who.refused != REFUSAL_CLOCK_SKEW &&
                             r->who.refused != REFUSAL_REPLAY))
        return false;
    o = cJSON_CreateObject();
    e = cJSON_AddObjectToObject(o, "error");
    jsonx_add_str(e, "code", refusal_reason_str(r->who.refused));
    jsonx_add_str(e, "message", err->msg);
    if (r->who.refused == REFUSAL_CLOCK_SKEW)
        jsonx_add_int(e, "server_time_ms", timeid_now_ms());
    http_resp_json(resp, 401, o);
    return true;
}

/* Record a refused request (api_obs.h): rc is the request's error, auth
 * whether authentication failed. Returns rc, or the error of the failed
 * write. */
static int
api_refused(struct schedd *sd, const struct api_req *r, bool auth, int rc,
    const struct err *err)
{
    enum refusal_reason why;
    int wrc;

    if (auth && (rc == -EACCES || rc == -EPERM ||
                    (rc == -EAGAIN && r->who.refused == REFUSAL_REPLAY_FULL)))
        why = r->who.refused;
    else if (!auth && rc == -EPERM)
        why = api_refusal_reason(err);
    else
        return rc;
    wrc = api_obs_refusal(sd, r, why, err->msg);
    return wrc < 0 ? wrc : rc;
}

/* A replica that does not lead (or does not serve yet) sends clients to
 * the leader: 421 `not_leader` with its URL in "leader" when it is
 * known, else 503 `not_leader` (an election is under way; retry). */
static void
api_not_leader(struct schedd *sd, struct http_resp *resp)
{
    char buf[512];
    const char *url = repl_leader_url(sd->repl, buf, sizeof(buf));
    cJSON *o = cJSON_CreateObject(), *e;

    e = cJSON_AddObjectToObject(o, "error");
    jsonx_add_str(e, "code", "not_leader");
    if (url) {
        char *msg = xasprintf("this replica does not lead; the leader is "
                              "at %s",
            url);

        jsonx_add_str(e, "message", msg);
        free(msg);
        jsonx_add_str(o, "leader", url);
        http_resp_json(resp, 421, o);
    } else {
        jsonx_add_str(e, "message",
            "no replica serves right now (an election or a new leader's "
            "catching up is under way); retry");
        cJSON_AddNullToObject(o, "leader");
        http_resp_json(resp, 503, o);
        http_resp_header(resp, "Retry-After", "1");
    }
    resp->durable = false;
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
    bool auth = false;
    int rc;

    err_clear(&err);
    /* Every reply waits for the iteration's commit (api_req.h). */
    resp->durable = true;
    if ((route = api_route_find(req, resp, segment, sizeof(segment))) == NULL) {
        obs_request(sd->obs, req->method, NULL,
            (double)(uv_hrtime() - t0) / 1e9);
        return;
    }
    if (sd->repl && !repl_serving(sd->repl) && !(route->flags & API_ANY_ROLE)) {
        api_not_leader(sd, resp);
        return;
    }
    if (!schedd_available(sd)) {
        api_req_unavailable(sd, resp);
        return;
    }
    r.arg = segment[0] ? segment : NULL;
    if ((rc = api_authenticate(sd, route, &r, &err)) == 0)
        rc = route->handler(sd, &r, resp, &err);
    else
        auth = true;
    obs_request(sd->obs, route->method, route->path,
        (double)(uv_hrtime() - t0) / 1e9);
    if (rc == 0)
        return;
    rc = api_refused(sd, &r, auth, rc, &err);
    /* A handler that wrote to the database and then failed leaves the
     * iteration failed (schedd_db_error); its reply is the 503. */
    if (!schedd_available(sd) && rc != -EINVAL)
        rc = -EIO;
    if (rc == -EIO || rc == -ENOSPC || rc == -EDQUOT || rc == -EROFS)
        schedd_unavailable_msg(sd, rc, err.msg, sizeof(err.msg));
    if (!auth || !api_auth_error(resp, &r, rc, &err))
        api_req_error(resp, rc, &err);
    if (resp->status >= 500)
        log_warn("%s %s: %s", req->method, req->path, err.msg);
    else
        log_debug("%s %s: %d %s", req->method, req->path, resp->status,
            err.msg);
}

static int
api_flush(void *arg)
{
    struct api *api = arg;
    char msg[200];
    uint64_t ticket;
    int rc = schedd_flush(api->sd);

    if (rc < 0) {
        schedd_unavailable_msg(api->sd, rc, msg, sizeof(msg));
        http_server_flush_msg(api->http, msg);
    }
    /* What was committed here is final only once it is durable: the WAL
     * fsynced (a single scheduler) or the entry held by a quorum (a
     * replica's leader, repl.h). The replies wait for the latest commit
     * (schedd_commit_wait); the committed hook releases them. */
    if (rc == 0 && (ticket = schedd_commit_wait(api->sd)) != 0)
        http_server_hold(api->http, ticket);
    return rc;
}

/* ---- hooks -------------------------------------------------------------- */

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
api_committed_hook(struct schedd *sd, uint64_t ticket, int rc, void *arg)
{
    struct api *api = arg;
    char msg[200];

    (void)sd;
    /* A failure here comes after the local commit (a replica that lost
     * the lead before a quorum had its entry): the change may survive
     * under the next leader or not. */
    if (rc < 0)
        snprintf(msg, sizeof(msg),
            "the change was not confirmed durable (%s): it may or may not "
            "have taken effect; check before retrying",
            strerror(-rc));
    if (api->http)
        http_server_release(api->http, ticket, rc, rc < 0 ? msg : NULL);
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

/* Log what a loaded certificate is, and warn when it expires soon. */
static void
api_tls_log(const struct api *api, const struct http_tls_info *info,
    const char *what)
{
    time_t now = time(NULL), at = (time_t)info->not_after;
    char when[32];
    struct tm tm;

    strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", gmtime_r(&at, &tm));
    log_notice("%s TLS certificate '%s': %s (%s), valid until %s", what,
        api->tls_cert, info->subject, info->names[0] ? info->names : "no names",
        when);
    if (at - now < API_TLS_RENEW_DAYS * 86400)
        log_warn("TLS certificate '%s' expires on %s, in %lld days: renew it "
                 "and reload (docs/operations.md \"TLS\")",
            api->tls_cert, when, (long long)((at - now) / 86400));
}

void
api_tls_reload(struct api *api)
{
    struct http_tls_info info;
    struct err err;

    if (api->tls_cert == NULL)
        return;
    err_clear(&err);
    if (http_server_tls_load(api->http, api->tls_cert, api->tls_key,
            api->tls_ca, &info, &err) < 0) {
        log_error("cannot reload TLS: %s; keeping the certificate loaded "
                  "before",
            err.msg);
        return;
    }
    api_tls_log(api, &info, "reloaded");
}

/* TLS on the TCP listener as opts say (before it listens). */
static int
api_tls_start(struct api *api, const struct schedd_opts *opts, struct err *err)
{
    struct http_tls_info info;
    int rc;

    if (!opts->tls) {
        log_warn("tls = off: the TCP API on %s:%d speaks plain HTTP, and "
                 "tokens and agent credentials cross the network in clear "
                 "(docs/operations.md \"TLS\")",
            opts->listen_host, opts->listen_port);
        return 0;
    }
    api->tls_cert = xstrdup(opts->tls_cert);
    api->tls_key = xstrdup(opts->tls_key);
    api->tls_ca = opt_set(opts->tls_ca) ? xstrdup(opts->tls_ca) : NULL;
    rc = http_server_tls_load(api->http, api->tls_cert, api->tls_key,
        api->tls_ca, &info, err);
    if (rc == 0)
        api_tls_log(api, &info, "loaded");
    return rc;
}

static int
api_listen(struct api *api, const struct schedd_opts *opts, struct err *err)
{
    int bound = 0, rc;

    if (opt_set(opts->socket_path) &&
        (rc = http_server_listen_unix(api->http, opts->socket_path, err)) < 0)
        return rc;
    if (opt_set(opts->listen_host)) {
        if ((rc = api_tls_start(api, opts, err)) < 0)
            return rc;
        rc = http_server_listen_tcp(api->http, opts->listen_host,
            opts->listen_port, &bound, err);
        if (rc < 0)
            return rc;
        api->port = bound;
        /* Without it the node's timeout and witnesses replace what a dead
         * agent held, as before: slower, but nothing is lost. */
        api->fence = fence_rx_start(api->sd, opts->listen_host, bound, err);
        if (api->fence == NULL) {
            log_warn("%s; a dead agent's jobs are replaced after the "
                     "node's timeout",
                err->msg);
            err_clear(err);
        }
        if (opt_set(opts->port_file) &&
            (rc = api_write_port_file(opts->port_file, bound, err)) < 0)
            return rc;
    }
    log_notice("lockstepd %s started: tcp=%s:%d%s socket=%s state_dir=%s",
        buildinfo_version(),
        opt_set(opts->listen_host) ? opts->listen_host : "-", bound,
        !opt_set(opts->listen_host) ? ""
        : api->tls_cert             ? " (tls)"
                                    : " (plain)",
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
        api->sd->hooks.committed = NULL;
        api->sd->hooks.arg = NULL;
    }
    free(api->waiters);
    api_coll_release(api);
    free(api->tls_cert);
    free(api->tls_key);
    free(api->tls_ca);
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
    sd->hooks.committed = api_committed_hook;
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
    fence_rx_close(api->fence);
    api->fence = NULL;
    http_server_close(api->http, api_closed_cb, ctx);
}

int
api_port(const struct api *api)
{
    return api->port;
}
