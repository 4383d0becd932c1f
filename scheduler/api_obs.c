/*
 * api_obs.c - GET /metrics, GET /v1/events, refused requests (api_obs.h)
 */
#include "scheduler/api_obs.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/jsonx.h"
#include "common/log.h"
#include "common/timeid.h"
#include "common/xalloc.h"
#include "scheduler/db.h"
#include "scheduler/fence.h"
#include "scheduler/metrics.h"
#include "scheduler/obs.h"

#define EVENTS_LIMIT_DEFAULT 100
#define EVENTS_LIMIT_MAX 1000

/* One sample per label value. */
static void
http_samples(struct sbuf *out, const char *name, const char *label,
    const char *const *values, const unsigned long long *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct metrics_label l[] = { { label, values[i] }, { NULL, NULL } };

        metrics_sample(out, name, l, (double)v[i]);
    }
}

static void api_obs_http_errors(struct sbuf *out,
    const struct http_server_stats *st);
static void api_obs_tls(struct sbuf *out, const struct http_server_stats *st);
static void api_obs_refusals(struct sbuf *out, const struct refusals *rf);
static void api_obs_agent_auth(struct sbuf *out, const struct schedd *sd);
static void api_obs_fence(struct sbuf *out, const struct fence_rx *rx);

/* The HTTP server's connections, caps and refusals. */
static void
api_obs_http(struct sbuf *out, const struct http_server *srv)
{
    static const char *const classes[] = { "user", "agent", "unix",
        "restricted", "operator" };
    static const char *const limits[] = { "max", "agent_reserve", "per_peer" };
    static const char *const reasons[] = { "total", "users", "peer" };
    struct http_server_stats st;
    unsigned long long v[5];

    http_server_stats(srv, &st);
    metrics_family(out, "lockstep_http_connections", "gauge",
        "open API connections by class (restricted: user connections in "
        "the agents' reserve, also counted as user; operator: TCP "
        "connections that carried an operator's request)");
    v[0] = st.conns_user, v[1] = st.conns_agent, v[2] = st.conns_unix;
    v[3] = st.conns_restricted, v[4] = st.conns_operator;
    http_samples(out, "lockstep_http_connections", "class", classes, v, 5);
    metrics_family(out, "lockstep_http_connection_limit", "gauge",
        "the connection caps in effect");
    v[0] = st.max_conns, v[1] = st.reserve, v[2] = st.per_peer;
    http_samples(out, "lockstep_http_connection_limit", "limit", limits, v, 3);
    metrics_family(out, "lockstep_http_connections_accepted_total", "counter",
        "API connections accepted");
    metrics_sample(out, "lockstep_http_connections_accepted_total", NULL,
        (double)st.accepted);
    metrics_family(out, "lockstep_http_connections_shed_total", "counter",
        "connections closed at once (a fixed 503) by the cap they hit");
    http_samples(out, "lockstep_http_connections_shed_total", "reason", reasons,
        st.shed + 1, 3);
    metrics_family(out, "lockstep_http_connections_refused_total", "counter",
        "requests neither an agent's nor an operator's refused (503) on "
        "connections accepted into the agents' reserve, by the cap that put "
        "them there");
    http_samples(out, "lockstep_http_connections_refused_total", "reason",
        reasons, st.refused + 1, 3);
    api_obs_http_errors(out, &st);
}

/* The TLS listener's handshakes, failures and certificate (with TLS). */
static void
api_obs_tls(struct sbuf *out, const struct http_server_stats *st)
{
    static const char *const kinds[] = { "tls", "plain_http" };
    unsigned long long v[2] = { st->tls_failures, st->tls_plain };

    if (!st->tls)
        return;
    metrics_family(out, "lockstep_tls_handshakes_total", "counter",
        "TLS handshakes completed on the TCP listener");
    metrics_sample(out, "lockstep_tls_handshakes_total", NULL,
        (double)st->tls_handshakes);
    metrics_family(out, "lockstep_tls_failures_total", "counter",
        "TCP connections ended by a TLS error (a failed handshake, a bad "
        "record) or for not speaking TLS (plain HTTP: a 400)");
    http_samples(out, "lockstep_tls_failures_total", "kind", kinds, v, 2);
    metrics_family(out, "lockstep_tls_certificate_expiry_seconds", "gauge",
        "when the TLS certificate loaded last expires (Unix time)");
    metrics_sample(out, "lockstep_tls_certificate_expiry_seconds", NULL,
        (double)st->tls_not_after);
}

/* The HTTP server's evictions, accept errors and deadlines missed. */
static void
api_obs_http_errors(struct sbuf *out, const struct http_server_stats *st)
{
    static const char *const deadlines[] = { "header", "body", "write",
        "idle" };

    metrics_family(out, "lockstep_http_connections_evicted_total", "counter",
        "connections without a complete request head closed to make room");
    metrics_sample(out, "lockstep_http_connections_evicted_total", NULL,
        (double)st->evicted);
    metrics_family(out, "lockstep_http_accept_errors_total", "counter",
        "failed accept() calls (out of descriptors)");
    metrics_sample(out, "lockstep_http_accept_errors_total", NULL,
        (double)st->accept_errors);
    metrics_family(out, "lockstep_http_timeouts_total", "counter",
        "connections closed for a missed deadline");
    http_samples(out, "lockstep_http_timeouts_total", "deadline", deadlines,
        st->timeouts, HTTP_DL_N);
    api_obs_tls(out, st);
}

int
api_metrics_get(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    int rc;

    (void)err;
    if ((rc = obs_metrics(sd, &resp->body)) < 0)
        return rc;
    if (r->api != NULL && r->api->http != NULL)
        api_obs_http(&resp->body, r->api->http);
    api_obs_refusals(&resp->body, &sd->refusals);
    api_obs_agent_auth(&resp->body, sd);
    api_obs_fence(&resp->body, r->api != NULL ? r->api->fence : NULL);
    resp->status = 200;
    resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
    return 0;
}

/* The events of a query, those the requester may see. */
struct events_walk {
    const struct api_req *r;
    cJSON *arr;
    int64_t last_id;          /* the newest id looked at, seen or not */
    struct api_req_seen seen; /* the last job looked up, its verdict */
};

/* Whether the requester may see an event of subject: node events are
 * everyone's; a job's are its owner's and the operators'; anything else
 * (a user's refused requests) the operators' and that user's. */
static bool
events_visible(struct events_walk *w, const char *subject)
{
    const struct api_req *r = w->r;
    long long id;

    if (r->who.operator|| strncmp(subject, "node/", 5) == 0)
        return true;
    if (sscanf(subject, "job/%lld", &id) != 1)
        return strncmp(subject, "user/", 5) == 0 &&
               strcmp(subject + 5, r->who.user) == 0;
    return api_req_may_see_job(r, &w->seen, id);
}

static int
events_row(const struct db_event *ev, void *arg)
{
    struct events_walk *w = arg;
    cJSON *o;

    if (ev->id > w->last_id)
        w->last_id = ev->id;
    if (!events_visible(w, ev->subject))
        return 0;
    /* A node's events show other users' jobs without their evidence. */
    o = api_req_event_json(ev);
    api_req_event_redact(w->r, &w->seen, o);
    cJSON_AddItemToArray(w->arr, o);
    return 0;
}

/* The query's filter from node=, job=, kind=, since=, after=, limit=;
 * subject is its buffer. */
static int
events_filter(const struct api_req *r, struct db_event_filter *f, char *subject,
    size_t len, char *kind, size_t klen, struct err *err)
{
    char node[PROTO_NODE_NAME_MAX + 1];
    int64_t job = 0, since = 0, after = 0, limit = EVENTS_LIMIT_DEFAULT;
    int rc;

    memset(f, 0, sizeof(*f));
    if ((rc = api_req_query_int_default(r, "job", 1, INT64_MAX, &job, err)) <
            0 ||
        (rc = api_req_query_int_default(r, "since", 0, INT64_MAX, &since,
             err)) < 0 ||
        (rc = api_req_query_int_default(r, "after", 0, INT64_MAX, &after,
             err)) < 0 ||
        (rc = api_req_query_int_default(r, "limit", 1, EVENTS_LIMIT_MAX, &limit,
             err)) < 0)
        return rc;
    if (http_query_get(r->http, "node", node, sizeof(node)) && node[0]) {
        if (job)
            return err_set(err, -EINVAL,
                "invalid field 'node': node= and job= select different "
                "subjects; give one");
        f->subject = schedd_subject_node(subject, len, node);
    } else if (job) {
        f->subject = schedd_subject_job(subject, len, job);
    }
    if (http_query_get(r->http, "kind", kind, klen) && kind[0])
        f->kind = kind;
    f->since_ms = since;
    f->after_id = after;
    f->limit = (int)limit;
    return 0;
}

int
api_events_list(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    struct events_walk w = { .r = r };
    struct db_event_filter f;
    char subject[PROTO_NODE_NAME_MAX + 8], kind[128];
    cJSON *o;
    int rc;

    rc = events_filter(r, &f, subject, sizeof(subject), kind, sizeof(kind),
        err);
    if (rc < 0)
        return rc;
    w.arr = cJSON_CreateArray();
    w.last_id = f.after_id;
    if ((rc = db_events_query(sd->db, &f, events_row, &w)) < 0) {
        cJSON_Delete(w.arr);
        return rc;
    }
    o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "events", w.arr);
    jsonx_add_int(o, "last_id", w.last_id);
    http_resp_json(resp, 200, o);
    return 0;
}

/* Subject and actor of a refusal's event: for a 403 (why at or above
 * REFUSAL_OPERATOR: the caller is known) the node or job aimed at; else
 * the agent's node (agent/<node>), the user (user/<name>; for a 401, the
 * user of the token refused) or, for no or an unknown credential,
 * auth/anonymous. */
static void
refusal_subject(const struct api_req *r, enum refusal_reason why, char *subject,
    size_t slen, char *actor, size_t alen)
{
    const char *path = r->http->path;
    const struct auth_ident *who = &r->who;
    bool aimed = why >= REFUSAL_OPERATOR && r->arg && who->user[0];

    if (who->node[0])
        snprintf(actor, alen, "agent/%s", who->node);
    else
        snprintf(actor, alen, "%s", who->user[0] ? who->user : "anonymous");
    if (aimed && strncmp(path, "/v1/nodes/", 10) == 0)
        schedd_subject_node(subject, slen, r->arg);
    else if (aimed && strncmp(path, "/v1/jobs/", 9) == 0)
        snprintf(subject, slen, "job/%s", r->arg);
    else if (who->node[0])
        snprintf(subject, slen, "agent/%s", who->node);
    else if (who->user[0])
        snprintf(subject, slen, "user/%s", who->user);
    else
        snprintf(subject, slen, "auth/anonymous");
}

int
api_obs_refusal(struct schedd *sd, const struct api_req *r,
    enum refusal_reason why, const char *message)
{
    const char *kind = why >= REFUSAL_OPERATOR ? "request_refused"
                                               : "auth_refused";
    char subject[320], actor[AUTH_USER_MAX + 16], key[REFUSALS_KEY_MAX + 1];
    uint64_t quiet = 0, unrecorded = 0;
    cJSON *detail;

    refusal_subject(r, why, subject, sizeof(subject), actor, sizeof(actor));
    /* A 403's sentence is stable (it names the job or the setting); a
     * 401's may carry times, which would make every key new. */
    snprintf(key, sizeof(key), "%s|%.100s|%.80s|%s %.100s|%s|%.60s", kind,
        subject, actor, r->http->method, r->http->path, refusal_reason_str(why),
        why >= REFUSAL_OPERATOR ? message : "");
    if (!refusals_take(&sd->refusals, why, key, timeid_mono_ms(), &quiet,
            &unrecorded))
        return 0;
    detail = cJSON_CreateObject();
    jsonx_add_str(detail, "method", r->http->method);
    jsonx_add_str(detail, "path", r->http->path);
    if (r->who.node[0])
        jsonx_add_str(detail, "node", r->who.node);
    else if (r->who.user[0])
        jsonx_add_str(detail, "user", r->who.user);
    if (r->who.token_id > 0)
        jsonx_add_int(detail, "token", r->who.token_id);
    jsonx_add_str(detail, "transport", r->http->is_unix ? "unix" : "tcp");
    jsonx_add_str(detail, "code", refusal_reason_str(why));
    jsonx_add_str(detail, "reason", message);
    if (why == REFUSAL_CLOCK_SKEW)
        jsonx_add_int(detail, "skew_ms", r->who.skew_ms);
    jsonx_add_int(detail, "refused_since_last_event", (int64_t)quiet);
    if (unrecorded > 0)
        jsonx_add_int(detail, "refusals_unrecorded", (int64_t)unrecorded);
    if (why == REFUSAL_OPERATOR)
        obs_refused(sd->obs);
    log_info("%s %s refused (%s) for %s: %s", r->http->method, r->http->path,
        refusal_reason_str(why), actor, message);
    return schedd_event(sd, actor, subject, kind, detail);
}

/* The refusals by reason, for GET /metrics. */
static void
api_obs_refusals(struct sbuf *out, const struct refusals *rf)
{
    metrics_family(out, "lockstep_requests_refused_total", "counter",
        "requests refused (401, 403, and 503 for a full nonce table) by "
        "reason; each is an auth_refused or request_refused event within "
        "the rate limit");
    for (int i = 0; i < REFUSAL_N; i++) {
        struct metrics_label l[] = { { "reason", refusal_reason_str(i) },
            { NULL, NULL } };

        metrics_sample(out, "lockstep_requests_refused_total", l,
            (double)rf->count[i]);
    }
    metrics_family(out, "lockstep_refusal_events_total", "counter",
        "refused requests recorded as events (the rest were over the rate "
        "limit)");
    for (int i = 0; i < REFUSAL_N; i++) {
        struct metrics_label l[] = { { "reason", refusal_reason_str(i) },
            { NULL, NULL } };

        metrics_sample(out, "lockstep_refusal_events_total", l,
            (double)rf->recorded[i]);
    }
}

/* The agents' requests by the key they were signed with, and the nonces
 * remembered. */
static void
api_obs_agent_auth(struct sbuf *out, const struct schedd *sd)
{
    metrics_family(out, "lockstep_agent_auth_total", "counter",
        "agent requests authenticated, by the key they were signed with "
        "(previous: a key of the previous cluster secret; legacy: the static "
        "credential)");
    for (int k = 0; k < AUTH_KEY_N; k++) {
        struct metrics_label l[] = { { "key", auth_agent_key_str(k) },
            { NULL, NULL } };

        metrics_sample(out, "lockstep_agent_auth_total", l,
            (double)sd->agent_auth_used[k]);
    }
    metrics_family(out, "lockstep_agent_nonces", "gauge",
        "agent requests remembered against replay (their window not over)");
    metrics_sample(out, "lockstep_agent_nonces", NULL,
        (double)nonces_count(&sd->nonces));
}

/* A counter family of three samples labelled result=names[i]. */
static void
api_obs_results(struct sbuf *out, const char *family, const char *help,
    const char *const names[3], const uint64_t v[3])
{
    metrics_family(out, family, "counter", help);
    for (size_t i = 0; i < 3; i++) {
        struct metrics_label l[] = { { "result", names[i] }, { NULL, NULL } };

        metrics_sample(out, family, l, (double)v[i]);
    }
}

/* The supervisors' fence notices and the lease pings of busy nodes
 * (fence.h), by what came of them. */
static void
api_obs_fence(struct sbuf *out, const struct fence_rx *rx)
{
    static const char *const notices[] = { "acted", "old", "refused" };
    static const char *const pings[] = { "answered", "ignored", "unsent" };
    struct fence_rx_counts c;

    fence_rx_counts(rx, &c);
    api_obs_results(out, "lockstep_fence_notices_total",
        "UDP fence notices of supervisors whose agent is gone (acted: an "
        "attempt replaced; old: about nothing held any more; refused: not a "
        "notice, an unknown node or a bad MAC)",
        notices, (const uint64_t[3]){ c.acted, c.old, c.refused });
    api_obs_results(out, "lockstep_lease_pings_total",
        "UDP lease pings of nodes whose supervisors hold leases (answered: "
        "heard and granted a lease; ignored: a LOST node or a scheduler not "
        "serving; unsent: the answer could not be sent); refused ones are "
        "counted with the fence notices",
        pings,
        (const uint64_t[3]){ c.pings_answered, c.pings_ignored,
            c.pings_unsent });
}
