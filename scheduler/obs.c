/*
 * obs.c - the figures behind GET /metrics, and the events' retention
 * (obs.h)
 */
#include "scheduler/obs.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/timeid.h"
#include "common/uvx.h"
#include "common/xalloc.h"
#include "scheduler/buildinfo.h"
#include "scheduler/db.h"
#include "scheduler/stats.h"
#include "scheduler/webhook.h"

/* At most this many events go per prune, and prunes are this far apart. */
#define OBS_PRUNE_BATCH 10000
#define OBS_PRUNE_EVERY_MS 60000
#define OBS_DAY_MS (24LL * 3600 * 1000)

/* One route's latency: "GET" and "/v1/jobs/{}" (or "other"). */
struct obs_route {
    char *method;
    char *route;
    struct metrics_hist hist;
};

struct obs {
    struct schedd *sd;
    uv_timer_t lag_timer;
    uint64_t lag_due_ns; /* when the lag timer should run next */
    struct metrics_hist lag;
    struct obs_route *routes;
    size_t nroutes;
    uint64_t refused;
    uint64_t pruned;
    int64_t last_prune_mono;
};

static void
obs_lag_cb(uv_timer_t *t)
{
    struct obs *obs = container_of(t, struct obs, lag_timer);
    uint64_t now = uv_hrtime();

    if (now > obs->lag_due_ns)
        metrics_hist_observe(&obs->lag, (double)(now - obs->lag_due_ns) / 1e9);
    else
        metrics_hist_observe(&obs->lag, 0);
    obs->lag_due_ns = now + OBS_LAG_EVERY_MS * 1000000ULL;
}

struct obs *
obs_create(struct schedd *sd, struct err *err)
{
    struct obs *obs = xcalloc(1, sizeof(*obs));
    int rc;

    obs->sd = sd;
    obs->last_prune_mono = timeid_mono_ms() - OBS_PRUNE_EVERY_MS;
    metrics_hist_init(&obs->lag, metrics_latency_bounds,
        metrics_latency_nbounds);
    uv_timer_init(sd->loop, &obs->lag_timer);
    obs->lag_due_ns = uv_hrtime() + OBS_LAG_EVERY_MS * 1000000ULL;
    rc = uv_timer_start(&obs->lag_timer, obs_lag_cb, OBS_LAG_EVERY_MS,
        OBS_LAG_EVERY_MS);
    if (rc < 0) {
        err_set(err, rc, "cannot start the loop lag timer: %s",
            uv_strerror(rc));
        obs_destroy(obs);
        return NULL;
    }
    sd->obs = obs;
    return obs;
}

static void
obs_free(void *arg)
{
    struct obs *obs = arg;

    for (size_t i = 0; i < obs->nroutes; i++) {
        free(obs->routes[i].method);
        free(obs->routes[i].route);
    }
    free(obs->routes);
    free(obs);
}

void
obs_destroy(struct obs *obs)
{
    if (obs == NULL)
        return;
    if (obs->sd->obs == obs)
        obs->sd->obs = NULL;
    uv_timer_stop(&obs->lag_timer);
    uvx_close_one((uv_handle_t *)&obs->lag_timer, obs_free, obs);
}

void
obs_request(struct obs *obs, const char *method, const char *route,
    double seconds)
{
    struct obs_route *r = NULL;

    if (obs == NULL)
        return;
    if (route == NULL) {
        route = "other";
        method = "other";
    }
    for (size_t i = 0; i < obs->nroutes && r == NULL; i++) {
        if (strcmp(obs->routes[i].route, route) == 0 &&
            strcmp(obs->routes[i].method, method) == 0)
            r = &obs->routes[i];
    }
    if (r == NULL) {
        obs->routes = xreallocarray(obs->routes, obs->nroutes + 1,
            sizeof(*obs->routes));
        r = &obs->routes[obs->nroutes++];
        r->method = xstrdup(method);
        r->route = xstrdup(route);
        metrics_hist_init(&r->hist, metrics_latency_bounds,
            metrics_latency_nbounds);
    }
    metrics_hist_observe(&r->hist, seconds);
}

void
obs_refused(struct obs *obs)
{
    if (obs)
        obs->refused++;
}

/* ---- the exposition ----------------------------------------------------- */

/* A family of one sample without labels. */
static void
obs_one(struct sbuf *out, const char *name, const char *type, const char *help,
    double v)
{
    metrics_family(out, name, type, help);
    metrics_sample(out, name, NULL, v);
}

/* One sample per state name, label `label`. */
static void
obs_by_name(struct sbuf *out, const char *name, const char *label,
    const char *(*str)(int), const int64_t *v, int n)
{
    for (int i = 0; i < n; i++) {
        struct metrics_label l[] = { { label, str(i) }, { NULL, NULL } };

        metrics_sample(out, name, l, (double)v[i]);
    }
}

static const char *
obs_node_state(int i)
{
    return node_state_str((enum node_state)i);
}

static const char *
obs_job_state(int i)
{
    return proto_job_state_str((enum proto_job_state)i);
}

static const char *
obs_attempt_state(int i)
{
    return proto_attempt_state_str((enum proto_attempt_state)i);
}

static const char *
obs_policy_kind(int i)
{
    return policy_kind_str((enum policy_kind)i);
}

static void
obs_nodes(struct schedd *sd, struct sbuf *out)
{
    int64_t v[NODE_STATE_COUNT] = { 0 };

    for (struct node *n = node_table_first(&sd->nodes); n;
         n = node_table_next(n)) {
        if ((unsigned)n->state < NODE_STATE_COUNT)
            v[n->state]++;
    }
    metrics_family(out, "lockstep_nodes", "gauge", "nodes by state");
    obs_by_name(out, "lockstep_nodes", "state", obs_node_state, v,
        NODE_STATE_COUNT);
}

/* Kept by event.c (schedd.h, struct schedd_counts): no walk over the
 * jobs, whose number grows with the queue and the history. */
static void
obs_jobs(struct schedd *sd, struct sbuf *out)
{
    const struct schedd_counts *c = &sd->counts;

    metrics_family(out, "lockstep_jobs", "gauge",
        "jobs by state (every job the database holds)");
    obs_by_name(out, "lockstep_jobs", "state", obs_job_state, c->jobs,
        PROTO_JOB_STATE_COUNT);
    metrics_family(out, "lockstep_attempts", "gauge",
        "job attempts by state (every attempt the database holds)");
    obs_by_name(out, "lockstep_attempts", "state", obs_attempt_state,
        c->attempts, PROTO_ATTEMPT_STATE_COUNT);
    obs_one(out, "lockstep_job_restarts_total", "counter",
        "restarts of jobs after a failure (user and infrastructure budgets)",
        (double)c->restarts);
}

static int
obs_goodput(struct schedd *sd, struct sbuf *out)
{
    struct stats_cluster c;
    int rc = stats_cluster(sd, &c);

    if (rc < 0)
        return rc;
    metrics_family(out, "lockstep_attempt_failures_total", "counter",
        "failed job attempts by failure kind");
    obs_by_name(out, "lockstep_attempt_failures_total", "kind", obs_policy_kind,
        c.failures, POLICY_KIND_COUNT);
    obs_one(out, "lockstep_ettr", "gauge",
        "effective training time ratio of every job: productive time over "
        "wall time (GET /v1/stats)",
        c.total.ettr);
    obs_one(out, "lockstep_productive_seconds_total", "counter",
        "productive time of every job (GET /v1/stats)",
        (double)c.total.productive_ms / 1000.0);
    obs_one(out, "lockstep_lost_seconds_total", "counter",
        "work lost to failures, every job (GET /v1/stats)",
        (double)c.total.lost_ms / 1000.0);
    return 0;
}

static int
obs_alerts(struct schedd *sd, struct sbuf *out)
{
    struct webhook_stats ws;
    int64_t queued = 0;
    int rc = db_alert_count(sd->db, &queued);

    if (rc < 0)
        return rc;
    webhook_get_stats(sd->webhook, &ws);
    obs_one(out, "lockstep_alerts_queued", "gauge",
        "alerts waiting for delivery (alert_queue_max at most)",
        (double)queued);
    obs_one(out, "lockstep_alerts_raised_total", "counter",
        "alerts queued since start-up", (double)sd->alerts_raised);
    obs_one(out, "lockstep_alerts_dropped_total", "counter",
        "alerts dropped from a full queue since start-up",
        (double)sd->alerts_dropped);
    obs_one(out, "lockstep_alerts_sent_total", "counter",
        "alerts delivered (2xx) since start-up", (double)ws.sent);
    obs_one(out, "lockstep_alert_failed_tries_total", "counter",
        "failed alert deliveries (each retried) since start-up",
        (double)ws.failed);
    return 0;
}

/*
 * Per-node health-check results and durations, from each check's latest
 * run its agent reported (node->health): one series per result with the
 * value 1 (its status a label), the run's duration, and each node's open
 * findings. The families' HELP/TYPE are written even when no node has
 * checks.
 */
static void
obs_node_checks(struct schedd *sd, struct sbuf *out)
{
    metrics_family(out, "lockstep_node_check_result", "gauge",
        "the latest result of each node's health checks (1 per result; "
        "status, code and scope as labels)");
    for (struct node *n = node_table_first(&sd->nodes); n;
         n = node_table_next(n)) {
        for (size_t i = 0; n->health && i < n->health->nchecks; i++) {
            const struct health_check *c = &n->health->checks[i];

            for (size_t k = 0; k < c->nresults; k++) {
                const struct proto_check_result *r = &c->results[k];
                struct metrics_label l[] = { { "node", n->name },
                    { "check", c->check }, { "code", r->code },
                    { "scope", r->scope },
                    { "status", proto_check_status_str(r->status) },
                    { NULL, NULL } };

                metrics_sample(out, "lockstep_node_check_result", l, 1);
            }
        }
    }
    metrics_family(out, "lockstep_node_check_duration_seconds", "gauge",
        "how long each node's health check took on its latest run");
    for (struct node *n = node_table_first(&sd->nodes); n;
         n = node_table_next(n)) {
        for (size_t i = 0; n->health && i < n->health->nchecks; i++) {
            const struct health_check *c = &n->health->checks[i];
            struct metrics_label l[] = { { "node", n->name },
                { "check", c->check }, { NULL, NULL } };

            if (c->nresults > 0)
                metrics_sample(out, "lockstep_node_check_duration_seconds", l,
                    (double)c->results[0].duration_ms / 1000.0);
        }
    }
    metrics_family(out, "lockstep_node_findings_open", "gauge",
        "open health findings of each node whose agent runs checks");
    for (struct node *n = node_table_first(&sd->nodes); n;
         n = node_table_next(n)) {
        struct metrics_label l[] = { { "node", n->name }, { NULL, NULL } };

        if (n->health)
            metrics_sample(out, "lockstep_node_findings_open", l,
                (double)health_open_count(n->health));
    }
}

static void
obs_runtime(struct obs *obs, struct schedd *sd, struct sbuf *out)
{
    struct metrics_label v[] = { { "version", buildinfo_version() },
        { NULL, NULL } };
    struct metrics_label lq[] = { { "limit", "queued" }, { NULL, NULL } };
    struct metrics_label lr[] = { { "limit", "rate" }, { NULL, NULL } };

    metrics_family(out, "lockstep_build_info", "gauge",
        "the scheduler's version (always 1)");
    metrics_sample(out, "lockstep_build_info", v, 1);
    obs_one(out, "lockstep_start_time_seconds", "gauge",
        "when this scheduler started (Unix time)",
        (double)sd->started_ms / 1000.0);
    metrics_family(out, "lockstep_loop_lag_seconds", "histogram",
        "how late the scheduler loop ran a timer (the loop was busy)");
    metrics_hist_write(out, "lockstep_loop_lag_seconds", NULL, &obs->lag);
    obs_one(out, "lockstep_loop_stalled_seconds_total", "counter",
        "time the scheduler loop made no progress, not counted as any "
        "node's silence",
        (double)sd->stalled_ms / 1000.0);
    metrics_family(out, "lockstep_db_commit_duration_seconds", "histogram",
        "time to commit one loop iteration's transaction");
    metrics_hist_write(out, "lockstep_db_commit_duration_seconds", NULL,
        &sd->commit_hist);
    obs_one(out, "lockstep_db_commits_total", "counter",
        "transactions committed since start-up", (double)sd->commit_seq);
    obs_one(out, "lockstep_db_fsyncs_total", "counter",
        "fsyncs of the WAL since start-up (group commit: one covers every "
        "commit made while the previous one ran)",
        (double)sd->syncs);
    metrics_family(out, "lockstep_sched_pass_duration_seconds", "histogram",
        "time of one scheduling pass over the queue (on the loop)");
    metrics_hist_write(out, "lockstep_sched_pass_duration_seconds", NULL,
        &sd->pass_hist);
    metrics_family(out, "lockstep_http_request_duration_seconds", "histogram",
        "API requests: time from dispatch to the handler's return, by "
        "route pattern");
    for (size_t i = 0; i < obs->nroutes; i++) {
        struct metrics_label l[] = { { "method", obs->routes[i].method },
            { "route", obs->routes[i].route }, { NULL, NULL } };

        metrics_hist_write(out, "lockstep_http_request_duration_seconds", l,
            &obs->routes[i].hist);
    }
    obs_one(out, "lockstep_http_requests_refused_total", "counter",
        "requests refused for want of the operator role (403; each is an "
        "event)",
        (double)obs->refused);
    metrics_family(out, "lockstep_submissions_refused_total", "counter",
        "job submissions refused with 429 by a per-user limit");
    metrics_sample(out, "lockstep_submissions_refused_total", lq,
        (double)sd->quota.refused_queued);
    metrics_sample(out, "lockstep_submissions_refused_total", lr,
        (double)sd->quota.refused_rate);
    obs_one(out, "lockstep_events_pruned_total", "counter",
        "events deleted by event_retention_days since start-up",
        (double)obs->pruned);
}

int
obs_metrics(struct schedd *sd, struct sbuf *out)
{
    int rc;

    obs_nodes(sd, out);
    obs_jobs(sd, out);
    if ((rc = obs_goodput(sd, out)) < 0 || (rc = obs_alerts(sd, out)) < 0)
        return rc;
    obs_node_checks(sd, out);
    if (sd->obs)
        obs_runtime(sd->obs, sd, out);
    return 0;
}

/* ---- retention ---------------------------------------------------------- */

void
obs_tick(struct schedd *sd, int64_t mono)
{
    struct obs *obs = sd->obs;
    int64_t n = 0;
    int rc;

    if (obs == NULL || sd->event_retention_days <= 0 ||
        mono - obs->last_prune_mono < OBS_PRUNE_EVERY_MS)
        return;
    obs->last_prune_mono = mono;
    rc = db_events_prune(sd->db,
        timeid_now_ms() - sd->event_retention_days * OBS_DAY_MS,
        OBS_PRUNE_BATCH, &n);
    if (schedd_db_check(sd, rc) < 0)
        return;
    obs->pruned += (uint64_t)n;
    if (n > 0)
        log_info("pruned %lld event(s) older than %d day(s)", (long long)n,
            sd->event_retention_days);
}
