/*
 * api_agent.c - the agents' endpoints (api_agent.h)
 *
 * The long polls waiting for a node are kept here, one list per node
 * (indexed by node->idx), not in the model: they are the transport's
 * business. A long poll whose connection closes, leaving its node with
 * none, tells the model that the agent has gone (nodes.h).
 */
#include "scheduler/api_agent.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "common/log.h"
#include "common/timeid.h"
#include "common/uvx.h"
#include "common/xalloc.h"
#include "scheduler/api_coll.h"
#include "scheduler/db.h"
#include "scheduler/launch.h"
#include "scheduler/nodes.h"
#include "scheduler/nodes_witness.h"
#include "scheduler/status.h"

#define API_WORK_WAIT_MAX_MS 60000
#define API_LOG_CHUNK_MAX (1024 * 1024)

/* A waiting GET /v1/agent/work. */
struct api_waiter {
    uv_timer_t timer;
    struct api *api;
    struct node *node;
    struct http_deferred *d;
    struct api_waiter *prev, *next;
};

/* ---- long polls --------------------------------------------------------- */

static struct api_waiter **
waiter_list(struct api *api, const struct node *node)
{
    if (node->idx >= api->nwaiters) {
        size_t n = api->nwaiters ? api->nwaiters : 64;

        while (n <= node->idx)
            n *= 2;
        api->waiters = xreallocarray(api->waiters, n, sizeof(*api->waiters));
        memset(api->waiters + api->nwaiters, 0,
            (n - api->nwaiters) * sizeof(*api->waiters));
        api->nwaiters = n;
    }
    return &api->waiters[node->idx];
}

static void
waiter_unlink(struct api_waiter *w)
{
    struct api_waiter **head = waiter_list(w->api, w->node);

    if (w->prev)
        w->prev->next = w->next;
    else if (*head == w)
        *head = w->next;
    if (w->next)
        w->next->prev = w->prev;
    w->prev = w->next = NULL;
    uv_timer_stop(&w->timer);
    uvx_close_one((uv_handle_t *)&w->timer, free, w);
}

/* The node's desired state (nodes_witness_dispatch: its agent starts a
 * new attempt with a lease from the start). */
static cJSON *
work_json(struct schedd *sd, struct node *node)
{
    struct proto_work w;
    cJSON *json;

    nodes_witness_dispatch(sd, node);
    launch_work(node, &w);
    json = proto_work_to_json(&w);
    launch_work_release(&w);
    return json;
}

/* Answer w with the node's desired state and forget it. */
static void
waiter_answer(struct api_waiter *w)
{
    struct http_resp *resp = http_deferred_resp(w->d);

    resp->durable = true;
    http_resp_json(resp, 200, work_json(w->api->sd, w->node));
    http_deferred_finish(w->d);
    waiter_unlink(w);
}

static void
waiter_timeout_cb(uv_timer_t *t)
{
    waiter_answer(container_of(t, struct api_waiter, timer));
}

static void
waiter_cancel_cb(struct http_deferred *d, void *arg)
{
    struct api_waiter *w = arg;
    struct node *node = w->node;
    struct api *api = w->api;

    (void)d;
    waiter_unlink(w);
    if (*waiter_list(api, node) == NULL) {
        nodes_agent_gone(api->sd, node);
        if (!api->sd->stopping)
            api_coll_node_gone(api, node->name);
    }
}

void
api_agent_wake(struct api *api, struct node *node)
{
    struct api_waiter **head = waiter_list(api, node);

    while (*head)
        waiter_answer(*head);
}

void
api_agent_node_removed(struct api *api, struct node *node)
{
    struct api_waiter **head = waiter_list(api, node);
    size_t i = node->idx;

    while (*head)
        waiter_answer(*head);
    memmove(&api->waiters[i], &api->waiters[i + 1],
        (api->nwaiters - i - 1) * sizeof(*api->waiters));
    api->waiters[api->nwaiters - 1] = NULL;
}

void
api_agent_abort_all(struct api *api)
{
    for (size_t i = 0; i < api->nwaiters; i++) {
        while (api->waiters[i]) {
            struct api_waiter *w = api->waiters[i];
            struct http_resp *resp = http_deferred_resp(w->d);

            resp->durable = false;
            http_resp_error(resp, 503, "unavailable",
                "the scheduler is reloading its state; retry");
            http_deferred_finish(w->d);
            waiter_unlink(w);
        }
    }
}

/* Keep the long poll of node open until its desired state changes or
 * wait_ms runs out. */
static int
waiter_add(struct api *api, struct node *node, int64_t wait_ms,
    struct http_resp *resp, struct err *err)
{
    struct api_waiter *w = xcalloc(1, sizeof(*w));
    struct api_waiter **head = waiter_list(api, node);
    int rc;

    w->api = api;
    w->node = node;
    if ((rc = uv_timer_init(api->sd->loop, &w->timer)) < 0) {
        free(w);
        return err_set(err, -EFAULT, "cannot start a timer: %s",
            uv_strerror(rc));
    }
    rc = uv_timer_start(&w->timer, waiter_timeout_cb, (uint64_t)wait_ms, 0);
    if (rc < 0) {
        uvx_close_one((uv_handle_t *)&w->timer, free, w);
        return err_set(err, -EFAULT, "cannot start a timer: %s",
            uv_strerror(rc));
    }
    w->d = http_resp_defer(resp, waiter_cancel_cb, w);
    w->next = *head;
    if (*head)
        (*head)->prev = w;
    *head = w;
    return 0;
}

/* ---- handlers ----------------------------------------------------------- */

int
api_agent_status(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    struct proto_node_report rep;
    struct proto_status_reply reply = { 0 };
    cJSON *json = NULL;
    int rc;

    if ((rc = api_req_body(r, &json, err)) < 0)
        return rc;
    rc = proto_node_report_from_json(json, &rep, err);
    cJSON_Delete(json);
    if (rc < 0)
        return rc;
    if (strcmp(rep.node, r->who.node) != 0)
        rc = err_set(err, -EPERM,
            "the credential is for node '%s', the report names '%s'",
            r->who.node, rep.node);
    else
        rc = status_apply(sd, &rep, timeid_now_ms(), &reply);
    proto_node_report_release(&rep);
    if (rc < 0)
        return rc;
    http_resp_json(resp, 200, proto_status_reply_to_json(&reply));
    return 0;
}

int
api_agent_work(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    char name[PROTO_NODE_NAME_MAX + 2];
    struct node *node;
    int64_t gen = 0, wait_ms = 0;
    int rc;

    if ((rc = api_req_node_param(r, name, sizeof(name), err)) < 0 ||
        (rc = api_req_query_int_default(r, "gen", 0, INT64_MAX, &gen, err)) <
            0 ||
        (rc = api_req_query_int_default(r, "wait_ms", 0, INT64_MAX, &wait_ms,
             err)) < 0)
        return rc;
    if (wait_ms > API_WORK_WAIT_MAX_MS)
        wait_ms = API_WORK_WAIT_MAX_MS;
    node = node_table_find(&sd->nodes, name);
    if (node == NULL)
        return err_set(err, -ENOENT,
            "unknown node '%s'; POST /v1/agent/status first", name);
    nodes_heard(sd, node);
    if (node->gen != (uint64_t)gen || wait_ms == 0) {
        http_resp_json(resp, 200, work_json(sd, node));
        return 0;
    }
    return waiter_add(r->api, node, wait_ms, resp, err);
}

/* Whether `rank` of (job, attempt) runs on node `name`; -ENOENT when the
 * attempt or rank does not exist, -EPERM when it runs elsewhere. */
static int
log_rank_check(struct schedd *sd, const char *name, int64_t job, int attempt,
    int rank, struct err *err)
{
    const struct node *node = node_table_find(&sd->nodes, name);
    char held[PROTO_NODE_NAME_MAX + 1];
    int rc;

    /* The common case, from memory: the attempt is still held there. */
    for (size_t i = 0; node && i < node->nholds; i++) {
        const struct placement *p = node->holds[i];

        if (p->attempt->job_id != job || p->attempt->num != attempt)
            continue;
        if (rank / p->attempt->ranks_per_node == p->node_rank)
            return 0;
        return err_set(err, -EPERM,
            "rank %d of job %lld attempt %d does "
            "not run on node '%s'",
            rank, (long long)job, attempt, name);
    }
    /* Released there (late output): one row, not the attempt's ranks. */
    rc = db_rank_node(sd->db, job, attempt, rank, held, sizeof(held));
    if (rc == -ENOENT)
        return err_set(err, -ENOENT, "no attempt %d of job %lld", attempt,
            (long long)job);
    if (rc == -ERANGE)
        return err_set(err, -ENOENT, "job %lld attempt %d has no rank %d",
            (long long)job, attempt, rank);
    if (rc < 0)
        return rc;
    if (strcmp(held, name) != 0)
        return err_set(err, -EPERM,
            "rank %d of job %lld attempt %d does not "
            "run on node '%s'",
            rank, (long long)job, attempt, name);
    return 0;
}

/* A log chunk being written (schedd_log_write): its reply waits. */
struct log_wait {
    struct http_deferred *d; /* NULL once its client went away */
    int64_t job;
    int rank;
};

static void
log_wait_cancel_cb(struct http_deferred *d, void *arg)
{
    (void)d;
    ((struct log_wait *)arg)->d = NULL;
}

/* The chunk is written (or not): the agent's reply. A full disk or no
 * descriptor left is a 503, and the agent sends again from the size we
 * hold. */
static void
log_written_cb(struct schedd *sd, int rc, int64_t size, void *arg)
{
    struct log_wait *w = arg;
    struct http_resp *resp;
    struct err err;
    cJSON *o;

    if (w->d == NULL) {
        free(w);
        return;
    }
    resp = http_deferred_resp(w->d);
    err_clear(&err);
    if (rc == 0) {
        o = cJSON_CreateObject();
        jsonx_add_int(o, "version", PROTO_VERSION);
        jsonx_add_int(o, "size", size);
        http_resp_json(resp, 200, o);
    } else {
        if (rc == -ENOSPC || rc == -EDQUOT)
            schedd_unavailable_msg(sd, rc, err.msg, sizeof(err.msg));
        else if (rc == -EMFILE || rc == -ENFILE || rc == -ECANCELED)
            rc = err_set(&err, -EAGAIN,
                "cannot store log of job %lld rank "
                "%d now: %s; retry",
                (long long)w->job, w->rank, strerror(-rc));
        else
            rc = err_set(&err, -EFAULT,
                "cannot store log of job %lld rank %d: %s", (long long)w->job,
                w->rank, strerror(-rc));
        api_req_error(resp, rc, &err);
        log_warn("POST /v1/agent/logs: %s", err.msg);
    }
    http_deferred_finish(w->d);
    free(w);
}

int
api_agent_logs(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    char name[PROTO_NODE_NAME_MAX + 2];
    int64_t job, attempt, rank, offset;
    bool err_stream = false;
    struct log_wait *w;
    int rc;

    if ((rc = api_req_node_param(r, name, sizeof(name), err)) < 0 ||
        (rc = api_req_query_int_required(r, "job", 1, INT64_MAX / 2, &job,
             err)) < 0 ||
        (rc = api_req_query_int_required(r, "attempt", 1, INT32_MAX, &attempt,
             err)) < 0 ||
        (rc = api_req_query_int_required(r, "rank", 0, INT32_MAX, &rank, err)) <
            0 ||
        (rc = api_req_query_int_required(r, "offset", 0, INT64_MAX / 2, &offset,
             err)) < 0 ||
        (rc = api_req_query_stream(r, &err_stream, err)) < 0)
        return rc;
    if (r->http->body_len > API_LOG_CHUNK_MAX)
        return err_set(err, -E2BIG, "log chunk over %d bytes",
            API_LOG_CHUNK_MAX);
    if ((rc = log_rank_check(sd, name, job, (int)attempt, (int)rank, err)) < 0)
        return rc;
    w = xcalloc(1, sizeof(*w));
    w->job = job;
    w->rank = (int)rank;
    rc = schedd_log_write(sd,
        &(struct schedd_log_chunk){ job, (int)attempt, (int)rank, err_stream,
            offset, r->http->body, r->http->body_len },
        log_written_cb, w);
    if (rc < 0) {
        /* Backpressure, not a failure: answered here, without a warning
         * per chunk (schedd_log_write notes it). */
        free(w);
        http_resp_error(resp, 503, "unavailable",
            "the scheduler's log store is behind; send again later");
        http_resp_header(resp, "Retry-After", "1");
        return 0;
    }
    w->d = http_resp_defer(resp, log_wait_cancel_cb, w);
    return 0;
}
