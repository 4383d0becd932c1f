/*
 * api_coll.c - the relayed PMIx collectives' endpoint (api_coll.h)
 */
#include "scheduler/api_coll.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "scheduler/api_modex.h"
#include "scheduler/api_relay.h"
#include "scheduler/collective.h"
#include "scheduler/modex.h"

static void
coll_answer_cb(void *token, enum coll_outcome outcome, const char *msg,
    const char *data, size_t len, void *arg)
{
    (void)arg;
    api_relay_answer(token, outcome, "collective", "collective", msg, data,
        len);
}

static void
coll_cancel_cb(struct http_deferred *d, void *arg)
{
    struct api_relay_wait *w = arg;

    (void)d;
    coll_token_gone(w->api->colls, w,
        "its agent's connection closed during the collective");
    api_relay_wait_close(w);
}

static void
coll_timer_cb(uv_timer_t *t)
{
    struct api_relay_wait *w = container_of(t, struct api_relay_wait, timer);

    coll_token_expired(w->api->colls, w);
}

/* The live attempt of c, which must run on every participant. */
static int
coll_attempt_check(struct schedd *sd, const struct proto_coll_req *c,
    struct err *err)
{
    struct attempt *a = api_relay_attempt(sd, c->job, c->attempt, err);

    if (a == NULL)
        return err->code;
    for (size_t i = 0; i < c->nnodes; i++) {
        if (!api_relay_on_node(a, c->nodes[i]))
            return err_set(err, -EINVAL,
                "field 'nodes[%zu]': attempt %d of job %lld does not run "
                "on node '%s'",
                i, c->attempt, (long long)c->job, c->nodes[i]);
    }
    return 0;
}

int
api_agent_collective(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    struct proto_coll_req c;
    struct api_relay_wait *w;
    cJSON *json = NULL;
    int rc;

    if ((rc = api_req_body(r, &json, err)) < 0)
        return rc;
    rc = proto_coll_req_from_json(json, &c, err);
    cJSON_Delete(json);
    if (rc < 0)
        return rc;
    rc = api_req_own_node(r, c.node, err);
    if (rc == 0)
        rc = coll_attempt_check(sd, &c, err);
    if (rc == 0 && (w = api_relay_wait_new(r->api, resp, c.timeout_ms,
                        coll_timer_cb, coll_cancel_cb, err)) == NULL)
        rc = -EFAULT;
    else if (rc == 0) {
        rc = coll_contribute(r->api->colls, c.job, c.attempt, c.id, c.nodes,
            c.nnodes, c.node, c.data, c.len, w, err);
        if (rc < 0) {
            http_deferred_finish(w->d); /* still in the handler: undone */
            api_relay_wait_close(w);
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
