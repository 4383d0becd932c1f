/*
 * pmixsrv_net.c - the PMIx server's fences and direct modex across nodes
 * (pmixsrv_net.h)
 *
 * The request's HTTP timeout is the collective's plus a margin, so the
 * scheduler's answer (504 collective_timeout) comes first; a transport
 * failure (the scheduler unreachable) fails the fence too: a fence
 * cannot be resumed on a restarted scheduler, whose table is empty. The
 * same goes for a direct modex request. The owner side's modex long poll
 * is never cancelled: it runs out (PMIXSRV_NET_POLL_MS) and is not
 * renewed once no namespace spans nodes; a failed one is retried after
 * PMIXSRV_NET_RETRY_MS.
 */
#include "agent/pmixsrv_net.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pmix.h>

#include "agent/agentd.h"
#include "common/b64.h"
#include "common/curlx.h"
#include "common/jsonx.h"
#include "common/log.h"
#include "common/timeid.h"
#include "common/uvx.h"
#include "common/xalloc.h"

#define PMIXSRV_NET_SLACK_MS 30000
/* The direct modex long poll: how long the scheduler holds it, and the
 * pause before the next after a failure. */
#define PMIXSRV_NET_POLL_MS 25000
#define PMIXSRV_NET_RETRY_MS 1000

/* A participant set's counter. */
struct pmixsrv_net_sig {
    uint64_t hash;
    uint64_t count;
    struct pmixsrv_net_sig *next;
};

struct pmixsrv_net_ns {
    int64_t job;
    int attempt;
    int world, rpn, nnodes;
    char **nodes; /* by node rank; NULL when the scheduler sent none */
    struct pmixsrv_net_sig *sigs;
};

/* A fence in flight. */
struct pmixsrv_net_req {
    struct pmixsrv_net *net;
    int64_t job;
    int attempt;
    char *id;
    bool modex; /* a direct modex (of "rank R"), not a fence */
    int64_t start_ns;
    pmix_modex_cbfunc_t cb;
    void *cbdata;
    struct pmixsrv_net_req *prev, *next;
};

struct pmixsrv_net {
    struct agentd *ad;
    struct pmixsrv_net_req *inflight;
    /* The owner side of the direct modex: its long poll (below). */
    pmixsrv_net_serve_fn *serve;
    void *serve_arg;
    int nmulti;        /* namespaces spanning nodes: the poll runs while > 0 */
    bool polling;      /* a poll in flight or its retry timer running */
    int poll_failures; /* in a row: only the first is a warning */
    uv_timer_t retry;
};

static void pmixsrv_net_poll(struct pmixsrv_net *net);

struct pmixsrv_net *
pmixsrv_net_create(struct agentd *ad, pmixsrv_net_serve_fn *serve, void *arg)
{
    struct pmixsrv_net *net = xcalloc(1, sizeof(*net));
    int rc;

    net->ad = ad;
    net->serve = serve;
    net->serve_arg = arg;
    if ((rc = uv_timer_init(ad->loop, &net->retry)) < 0)
        fatalx("cannot create a timer: %s", uv_strerror(rc));
    return net;
}

static void
pmixsrv_net_req_free(struct pmixsrv_net_req *rq)
{
    struct pmixsrv_net *net = rq->net;

    if (rq->prev != NULL)
        rq->prev->next = rq->next;
    else
        net->inflight = rq->next;
    if (rq->next != NULL)
        rq->next->prev = rq->prev;
    free(rq->id);
    free(rq);
}

/* A request in flight of namespace nn, named id (taken over). */
static struct pmixsrv_net_req *
pmixsrv_net_req_new(struct pmixsrv_net *net, const struct pmixsrv_net_ns *nn,
    char *id, pmix_modex_cbfunc_t cb, void *cbdata)
{
    struct pmixsrv_net_req *rq = xcalloc(1, sizeof(*rq));

    rq->net = net;
    rq->job = nn->job;
    rq->attempt = nn->attempt;
    rq->id = id;
    rq->start_ns = timeid_mono_ns();
    rq->cb = cb;
    rq->cbdata = cbdata;
    rq->next = net->inflight;
    if (rq->next != NULL)
        rq->next->prev = rq;
    net->inflight = rq;
    return rq;
}

void
pmixsrv_net_destroy(struct pmixsrv_net *net)
{
    if (net == NULL)
        return;
    while (net->inflight != NULL)
        pmixsrv_net_req_free(net->inflight);
    uv_timer_stop(&net->retry);
    uvx_close_one((uv_handle_t *)&net->retry, free, net);
}

struct pmixsrv_net_ns *
pmixsrv_net_ns_new(struct pmixsrv_net *net, const struct proto_launch *l)
{
    struct pmixsrv_net_ns *nn = xcalloc(1, sizeof(*nn));

    nn->job = l->job;
    nn->attempt = l->attempt;
    nn->world = l->world_size;
    nn->rpn = l->ranks_per_node;
    nn->nnodes = l->nnodes;
    if (l->nodes != NULL && l->nnodes_named == (size_t)l->nnodes) {
        nn->nodes = xcalloc((size_t)l->nnodes + 1, sizeof(*nn->nodes));
        for (int k = 0; k < l->nnodes; k++)
            nn->nodes[k] = xstrdup(l->nodes[k]);
    }
    /* Ranks of other nodes may ask for the data of ours. */
    if (nn->nodes != NULL && nn->nnodes > 1 && net->nmulti++ == 0)
        pmixsrv_net_poll(net);
    return nn;
}

void
pmixsrv_net_ns_free(struct pmixsrv_net *net, struct pmixsrv_net_ns *nn)
{
    struct pmixsrv_net_sig *s, *next;

    if (nn == NULL)
        return;
    /* The poll stops by itself when it comes back (it is never cancelled:
     * this runs after curlx_destroy too). */
    if (nn->nodes != NULL && nn->nnodes > 1)
        net->nmulti--;
    for (s = nn->sigs; s != NULL; s = next) {
        next = s->next;
        free(s);
    }
    xstrv_free(nn->nodes, (size_t)nn->nnodes);
    free(nn);
}

static void
pmixsrv_net_release_cb(void *cbdata)
{
    free(cbdata);
}

/* FNV-1a, 64 bits, over n bytes. */
static uint64_t
pmixsrv_net_fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;

    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ULL;
    }
    return h;
}

/* Marks the nodes of procs in on[] and hashes the rank set (order and
 * duplicates do not matter); false when a rank is out of the world. */
static bool
pmixsrv_net_members(const struct pmixsrv_net_ns *nn, const pmix_proc_t *procs,
    size_t nprocs, bool *on, uint64_t *hash)
{
    bool *ranks = xcalloc((size_t)nn->world + 1, sizeof(*ranks));
    bool all = false, ok = true;
    uint64_t h = 14695981039346656037ULL;

    for (size_t i = 0; i < nprocs && ok; i++) {
        if (procs[i].rank == PMIX_RANK_WILDCARD)
            all = true;
        else if (procs[i].rank < (pmix_rank_t)nn->world)
            ranks[procs[i].rank] = true;
        else
            ok = false;
    }
    for (int r = 0; r < nn->world; r++) {
        if (!all && !ranks[r])
            continue;
        on[r / nn->rpn] = true;
        if (!all)
            h = pmixsrv_net_fnv(h, &r, sizeof(r));
    }
    *hash = all ? pmixsrv_net_fnv(h, "*", 1) : h;
    free(ranks);
    return ok;
}

/* The next id of the participant set hash. */
static char *
pmixsrv_net_id(struct pmixsrv_net_ns *nn, uint64_t hash)
{
    struct pmixsrv_net_sig *s;

    for (s = nn->sigs; s != NULL && s->hash != hash; s = s->next)
        ;
    if (s == NULL) {
        s = xcalloc(1, sizeof(*s));
        s->hash = hash;
        s->next = nn->sigs;
        nn->sigs = s;
    }
    s->count++;
    return xasprintf("fence.%016" PRIx64 ".%" PRIu64, hash, s->count);
}

/* The blob of a 200 answer; PMIX_SUCCESS with *blob set, else an error.
 * A fence's answer joins every node's blob, so it is bounded only by the
 * body, which curlx bounds (64 MiB), not by one contribution's limit. */
static pmix_status_t
pmixsrv_net_reply(const struct sbuf *body, char **blob, size_t *len)
{
    cJSON *json = NULL;
    char *text = NULL;
    struct err err;
    int rc;

    rc = jsonx_parse(body->buf != NULL ? body->buf : "", body->len, &json,
        &err);
    if (rc == 0)
        rc = jsonx_get_str(json, "data", true, body->len, &text, &err);
    if (rc == 0)
        rc = b64_decode(text, blob, len);
    free(text);
    cJSON_Delete(json);
    return rc == 0 ? PMIX_SUCCESS : PMIX_ERR_BAD_PARAM;
}

/* The scheduler's answer to a fence or a direct modex: the data, or an
 * error status, to libpmix. */
static void
pmixsrv_net_done_cb(int rc, long http_status, const struct sbuf *body,
    void *arg)
{
    struct pmixsrv_net_req *rq = arg;
    int64_t us = (timeid_mono_ns() - rq->start_ns) / 1000;
    pmix_status_t st = PMIX_ERROR;
    char *blob = NULL, text[300], what[96];
    size_t len = 0;

    if (rq->modex)
        snprintf(what, sizeof(what), "direct modex of %s", rq->id);
    else
        snprintf(what, sizeof(what), "fence %s across nodes", rq->id);
    if (rc == 0 && http_status == 200)
        st = pmixsrv_net_reply(body, &blob, &len);
    else if (rc == 0 && http_status == 504)
        st = PMIX_ERR_TIMEOUT;
    if (st == PMIX_SUCCESS) {
        log_info("job=%lld attempt=%d PMIx %s done in %lld us (%zu bytes)",
            (long long)rq->job, rq->attempt, what, (long long)us, len);
        rq->cb(PMIX_SUCCESS, blob, len, rq->cbdata, pmixsrv_net_release_cb,
            blob);
    } else {
        curlx_error_text(rc, http_status, body, text, sizeof(text));
        log_warn("job=%lld attempt=%d PMIx %s failed after %lld ms: %s",
            (long long)rq->job, rq->attempt, what, (long long)(us / 1000),
            text);
        free(blob);
        rq->cb(st, NULL, 0, rq->cbdata, NULL, NULL);
    }
    pmixsrv_net_req_free(rq);
}

/* Posts c (released) for rq; false when curl refused. */
static bool
pmixsrv_net_post(struct pmixsrv_net *net, struct pmixsrv_net_req *rq,
    struct proto_coll_req *c)
{
    cJSON *json = proto_coll_req_to_json(c);
    char *body = jsonx_print(json);
    long timeout_ms = (long)c->timeout_ms + PMIXSRV_NET_SLACK_MS;

    cJSON_Delete(json);
    proto_coll_req_release(c);
    return curlx_request(net->ad->curlx, "POST", "/v1/agent/collective", body,
               strlen(body), "application/json", timeout_ms,
               pmixsrv_net_done_cb, rq) != NULL;
}

void
pmixsrv_net_fence(struct pmixsrv_net *net, struct pmixsrv_net_ns *nn,
    const pmix_proc_t *procs, size_t nprocs, const char *data, size_t ndata,
    int timeout_s, pmix_modex_cbfunc_t cb, void *cbdata)
{
    struct proto_coll_req c = { .job = nn->job, .attempt = nn->attempt };
    bool *on = xcalloc((size_t)nn->nnodes + 1, sizeof(*on));
    struct pmixsrv_net_req *rq;
    uint64_t hash = 0;

    if (nn->nodes == NULL || net->ad->curlx == NULL ||
        !pmixsrv_net_members(nn, procs, nprocs, on, &hash)) {
        log_warn("job=%lld attempt=%d a PMIx fence across nodes cannot be "
                 "relayed: %s",
            (long long)nn->job, nn->attempt,
            nn->nodes == NULL ? "the scheduler sent no node names"
                              : "a participant is out of the job");
        free(on);
        cb(PMIX_ERR_NOT_SUPPORTED, NULL, 0, cbdata, NULL, NULL);
        return;
    }
    c.id = pmixsrv_net_id(nn, hash);
    c.node = xstrdup(net->ad->node);
    c.nodes = xcalloc((size_t)nn->nnodes + 1, sizeof(*c.nodes));
    for (int k = 0; k < nn->nnodes; k++) {
        if (on[k])
            c.nodes[c.nnodes++] = xstrdup(nn->nodes[k]);
    }
    free(on);
    c.data = xmalloc(ndata + 1);
    memcpy(c.data, data, ndata);
    c.len = ndata;
    c.timeout_ms = timeout_s > 0 ? (int64_t)timeout_s * 1000
                                 : PROTO_COLL_TIMEOUT_MS;
    if (c.timeout_ms > PROTO_COLL_TIMEOUT_MAX_MS)
        c.timeout_ms = PROTO_COLL_TIMEOUT_MAX_MS;
    rq = pmixsrv_net_req_new(net, nn, xstrdup(c.id), cb, cbdata);
    log_debug("job=%lld attempt=%d PMIx fence %s: %zu bytes to %zu nodes",
        (long long)rq->job, rq->attempt, rq->id, ndata, c.nnodes);
    if (!pmixsrv_net_post(net, rq, &c)) {
        log_warn("job=%lld attempt=%d cannot send PMIx fence %s",
            (long long)rq->job, rq->attempt, rq->id);
        cb(PMIX_ERROR, NULL, 0, cbdata, NULL, NULL);
        pmixsrv_net_req_free(rq);
    }
}

/* ---- direct modex: the requester side ---------------------------------- */

void
pmixsrv_net_dmodex(struct pmixsrv_net *net, struct pmixsrv_net_ns *nn,
    pmix_rank_t rank, int timeout_s, pmix_modex_cbfunc_t cb, void *cbdata)
{
    struct proto_modex_req m = { .job = nn->job, .attempt = nn->attempt };
    struct pmixsrv_net_req *rq;
    cJSON *json;
    char *body;

    if (nn->nodes == NULL || net->ad->curlx == NULL ||
        rank >= (pmix_rank_t)nn->world) {
        log_warn("job=%lld attempt=%d the PMIx data of rank %u cannot be "
                 "asked for: %s",
            (long long)nn->job, nn->attempt, rank,
            nn->nodes == NULL ? "the scheduler sent no node names"
                              : "the rank is out of the job");
        cb(PMIX_ERR_NOT_SUPPORTED, NULL, 0, cbdata, NULL, NULL);
        return;
    }
    m.node = net->ad->node;
    m.owner = nn->nodes[rank / (pmix_rank_t)nn->rpn];
    m.rank = rank;
    m.timeout_ms = timeout_s > 0 ? (int64_t)timeout_s * 1000
                                 : PROTO_COLL_TIMEOUT_MS;
    if (m.timeout_ms > PROTO_COLL_TIMEOUT_MAX_MS)
        m.timeout_ms = PROTO_COLL_TIMEOUT_MAX_MS;
    json = proto_modex_req_to_json(&m);
    body = jsonx_print(json);
    cJSON_Delete(json);
    rq = pmixsrv_net_req_new(net, nn, xasprintf("rank %u", rank), cb, cbdata);
    rq->modex = true;
    log_debug("job=%lld attempt=%d PMIx direct modex of %s: asking node '%s'",
        (long long)rq->job, rq->attempt, rq->id, m.owner);
    if (curlx_request(net->ad->curlx, "POST", "/v1/agent/modex", body,
            strlen(body), "application/json",
            (long)m.timeout_ms + PMIXSRV_NET_SLACK_MS, pmixsrv_net_done_cb,
            rq) == NULL) {
        log_warn("job=%lld attempt=%d cannot send PMIx direct modex of %s",
            (long long)rq->job, rq->attempt, rq->id);
        cb(PMIX_ERROR, NULL, 0, cbdata, NULL, NULL);
        pmixsrv_net_req_free(rq);
    }
}

/* ---- direct modex: the owner side -------------------------------------- */

static void
pmixsrv_net_retry_cb(uv_timer_t *t)
{
    struct pmixsrv_net *net = container_of(t, struct pmixsrv_net, retry);

    net->polling = false;
    pmixsrv_net_poll(net);
}

/* Hands each request of a poll's answer to serve(); false when the
 * answer is not one. */
static bool
pmixsrv_net_serve_all(struct pmixsrv_net *net, const struct sbuf *body)
{
    cJSON *json = NULL, *arr, *it;
    int64_t id, job, attempt, rank;
    struct err err;

    if (jsonx_parse(body->buf != NULL ? body->buf : "", body->len, &json,
            &err) < 0)
        return false;
    arr = cJSON_GetObjectItemCaseSensitive(json, "requests");
    if (!cJSON_IsArray(arr)) {
        cJSON_Delete(json);
        return false;
    }
    cJSON_ArrayForEach(it, arr) {
        if (jsonx_get_int(it, "id", true, 1, INT64_MAX, &id, &err) < 0 ||
            jsonx_get_int(it, "job", true, 1, INT64_MAX, &job, &err) < 0 ||
            jsonx_get_int(it, "attempt", true, 1, INT32_MAX, &attempt, &err) <
                0 ||
            jsonx_get_int(it, "rank", true, 0, INT32_MAX, &rank, &err) < 0) {
            log_warn("a direct modex request from the scheduler is bad: %s",
                err.msg);
            continue;
        }
        log_debug("job=%lld attempt=%lld PMIx direct modex %lld: the data of "
                  "rank %lld asked for",
            (long long)job, (long long)attempt, (long long)id, (long long)rank);
        net->serve(net->serve_arg, (uint64_t)id, job, (int)attempt,
            (uint32_t)rank);
    }
    cJSON_Delete(json);
    return true;
}

static void
pmixsrv_net_poll_cb(int rc, long http_status, const struct sbuf *body,
    void *arg)
{
    struct pmixsrv_net *net = arg;
    char text[300];
    int err;

    if (rc == 0 && http_status == 200 && pmixsrv_net_serve_all(net, body)) {
        net->poll_failures = 0;
        net->polling = false;
        pmixsrv_net_poll(net);
        return;
    }
    curlx_error_text(rc, http_status, body, text, sizeof(text));
    if (net->poll_failures++ == 0)
        log_warn("the direct modex long poll failed (retrying every %d ms): "
                 "%s",
            PMIXSRV_NET_RETRY_MS, text);
    else
        log_debug("the direct modex long poll failed again: %s", text);
    if ((err = uv_timer_start(&net->retry, pmixsrv_net_retry_cb,
             PMIXSRV_NET_RETRY_MS, 0)) < 0) {
        log_error("cannot start a timer: %s", uv_strerror(err));
        net->polling = false;
    }
}

/* Keeps one modex long poll in flight while a namespace spans nodes. */
static void
pmixsrv_net_poll(struct pmixsrv_net *net)
{
    char *path;

    if (net->polling || net->nmulti == 0 || net->ad->curlx == NULL ||
        net->ad->stopping)
        return;
    path = xasprintf("/v1/agent/modex?node=%s&wait_ms=%d", net->ad->node,
        PMIXSRV_NET_POLL_MS);
    net->polling = curlx_request(net->ad->curlx, "GET", path, NULL, 0, NULL,
                       PMIXSRV_NET_POLL_MS + PMIXSRV_NET_SLACK_MS,
                       pmixsrv_net_poll_cb, net) != NULL;
    free(path);
    if (!net->polling)
        log_warn("cannot start the direct modex long poll");
}

static void
pmixsrv_net_answer_cb(int rc, long http_status, const struct sbuf *body,
    void *arg)
{
    char text[300];

    if (rc == 0 && http_status == 200)
        return;
    curlx_error_text(rc, http_status, body, text, sizeof(text));
    log_warn("a PMIx direct modex answer was not taken: %s", text);
}

void
pmixsrv_net_modex_answer(struct pmixsrv_net *net, uint64_t id,
    pmix_status_t status, const char *blob, size_t len)
{
    struct proto_modex_reply m = { .id = (int64_t)id };
    cJSON *json;
    char *body;

    if (net->ad->curlx == NULL)
        return;
    m.node = net->ad->node;
    if (status == PMIX_SUCCESS) {
        m.data = (char *)blob;
        m.len = len;
    } else {
        m.error = xasprintf("node '%s' cannot give the data: %s", net->ad->node,
            PMIx_Error_string(status));
    }
    json = proto_modex_reply_to_json(&m);
    free(m.error);
    body = jsonx_print(json);
    cJSON_Delete(json);
    if (curlx_request(net->ad->curlx, "POST", "/v1/agent/modex/reply", body,
            strlen(body), "application/json", PMIXSRV_NET_SLACK_MS,
            pmixsrv_net_answer_cb, NULL) == NULL)
        log_warn("cannot send a PMIx direct modex answer");
}
