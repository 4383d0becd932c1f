/*
 * api_coll.c - the relayed PMIx collectives' endpoint (api_coll.h)
 */
#include "scheduler/api_coll.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/b64.h"
#include "common/jsonx.h"
#include "common/log.h"
#include "common/uvx.h"
#include "common/xalloc.h"
#include "scheduler/api_modex.h"
#include "scheduler/collective.h"
#include "scheduler/modex.h"

/* One waiting contribution: collective.h's token. */
struct api_coll_wait {
    uv_timer_t timer;
    struct api *api;
    struct http_deferred *d;
};

static void
coll_wait_close(struct api_coll_wait *w)
{
    uv_timer_stop(&w->timer);
    uvx_close_one((uv_handle_t *)&w->timer, free, w);
}

static void
coll_answer_cb(void *token, enum coll_outcome outcome, const char *msg,
    const char *data, size_t len, void *arg)
{
    struct api_coll_wait *w = token;
    struct http_resp *resp = http_deferred_resp(w->d);
    cJSON *o;
    char *text;

    (void)arg;
    if (outcome == COLL_DONE) {
        o = cJSON_CreateObject();
        text = b64_encode(data, len);
        jsonx_add_int(o, "version", PROTO_VERSION);
        jsonx_add_str(o, "data", text);
        free(text);
        http_resp_json(resp, 200, o);
    } else if (outcome == COLL_TIMEOUT) {
        log_info("a PMIx collective timed out: %s", msg);
        http_resp_error(resp, 504, "collective_timeout", "%s", msg);
    } else {
        log_info("a PMIx collective failed: %s", msg);
        http_resp_error(resp, 409, "collective_failed", "%s", msg);
    }
    http_deferred_finish(w->d);
    coll_wait_close(w);
}

static void
coll_cancel_cb(struct http_deferred *d, void *arg)
{
    struct api_coll_wait *w = arg;

    (void)d;
    coll_token_gone(w->api->colls, w,
        "its agent's connection closed during the collective");
    coll_wait_close(w);
}

static void
coll_timer_cb(uv_timer_t *t)
{
    struct api_coll_wait *w = container_of(t, struct api_coll_wait, timer);

    coll_token_expired(w->api->colls, w);
}

/* The live attempt of c, which must run on every participant. */
static int
coll_attempt_check(struct schedd *sd, const struct proto_coll_req *c,
    struct err *err)
{
    struct attempt *a;
    size_t i;
    int k;

    for (a = sd->attempts; a != NULL; a = a->next) {
        if (a->job_id == c->job && a->num == c->attempt)
            break;
    }
    if (a == NULL || !proto_attempt_state_active(a->state))
        return err_set(err, -EPIPE, "attempt %d of job %lld is not running",
            c->attempt, (long long)c->job);
    for (i = 0; i < c->nnodes; i++) {
        for (k = 0; k < a->nnodes; k++) {
            if (strcmp(a->placements[k].node_name, c->nodes[i]) == 0)
                break;
        }
        if (k == a->nnodes)
            return err_set(err, -EINVAL,
                "field 'nodes[%zu]': attempt %d of job %lld does not run "
                "on node '%s'",
                i, c->attempt, (long long)c->job, c->nodes[i]);
    }
    return 0;
}

/* A new token for resp, its timer running for timeout_ms; NULL with err
 * set when the timer cannot start. */
static struct api_coll_wait *
coll_wait_new(struct api *api, struct http_resp *resp, int64_t timeout_ms,
    struct err *err)
{
    struct api_coll_wait *w = xcalloc(1, sizeof(*w));
    int rc;

    w->api = api;
    if ((rc = uv_timer_init(api->sd->loop, &w->timer)) < 0) {
        free(w);
        err_set(err, -EFAULT, "cannot start a timer: %s", uv_strerror(rc));
        return NULL;
    }
    if ((rc = uv_timer_start(&w->timer, coll_timer_cb, (uint64_t)timeout_ms,
             0)) < 0) {
        uvx_close_one((uv_handle_t *)&w->timer, free, w);
        err_set(err, -EFAULT, "cannot start a timer: %s", uv_strerror(rc));
        return NULL;
    }
    w->d = http_resp_defer(resp, coll_cancel_cb, w);
    return w;
}

int
api_agent_collective(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    struct proto_coll_req c;
    struct api_coll_wait *w;
    cJSON *json = NULL;
    int rc;

    if ((rc = api_req_body(r, &json, err)) < 0)
        return rc;
    rc = proto_coll_req_from_json(json, &c, err);
    cJSON_Delete(json);
    if (rc < 0)
        return rc;
    if (strcmp(c.node, r->who.node) != 0)
        rc = err_set(err, -EPERM, "the credential is for node '%s', not '%s'",
            r->who.node, c.node);
    else
        rc = coll_attempt_check(sd, &c, err);
    if (rc == 0 && (w = coll_wait_new(r->api, resp, c.timeout_ms, err)) == NULL)
        rc = -EFAULT;
    else if (rc == 0) {
        rc = coll_contribute(r->api->colls, c.job, c.attempt, c.id, c.nodes,
            c.nnodes, c.node, c.data, c.len, w, err);
        if (rc < 0) {
            http_deferred_finish(w->d); /* still in the handler: undone */
            coll_wait_close(w);
        }
    }
    proto_coll_req_release(&c);
    if (rc == -EPIPE)
        http_resp_error(resp, 409, "collective_failed", "%s", err->msg);
    return rc == -EPIPE ? 0 : rc;
}

/* collective.h's alive function over the live attempts. */
static bool
coll_alive_cb(int64_t job, int attempt, char *why, size_t len, void *arg)
{
    struct schedd *sd = arg;

    for (struct attempt *a = sd->attempts; a != NULL; a = a->next) {
        if (a->job_id != job || a->num != attempt)
            continue;
        if (proto_attempt_state_active(a->state))
            return true;
        snprintf(why, len, "attempt %d of job %lld ended (%s%s%s)", attempt,
            (long long)job, proto_attempt_state_str(a->state),
            a->reason[0] ? ": " : "", a->reason);
        return false;
    }
    snprintf(why, len, "attempt %d of job %lld ended", attempt, (long long)job);
    return false;
}

void
api_coll_init(struct api *api)
{
    api->colls = coll_table_create(coll_answer_cb, api);
    api_modex_init(api);
}

void
api_coll_release(struct api *api)
{
    coll_table_destroy(api->colls);
    api->colls = NULL;
    api_modex_release(api);
}

void
api_coll_sweep(struct api *api)
{
    if (api->colls != NULL)
        coll_sweep(api->colls, coll_alive_cb, api->sd);
    if (api->modex != NULL)
        modex_sweep(api->modex, coll_alive_cb, api->sd);
}

void
api_coll_node_gone(struct api *api, const char *node)
{
    if (api->colls != NULL)
        coll_node_gone(api->colls, node, "its agent's connection closed");
    if (api->modex != NULL)
        modex_node_gone(api->modex, node, "its agent's connection closed");
}

void
api_coll_abort_all(struct api *api, const char *why)
{
    if (api->colls != NULL)
        coll_fail_all(api->colls, why);
    if (api->modex != NULL)
        modex_fail_all(api->modex, why);
}
