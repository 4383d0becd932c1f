/*
 * api_modex.c - the relayed PMIx direct modex's endpoints (api_modex.h)
 */
#include "scheduler/api_modex.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "common/xalloc.h"
#include "scheduler/api_relay.h"
#include "scheduler/modex.h"

/* The longest an owner's modex long poll is held. */
#define API_MODEX_WAIT_MAX_MS 60000

static void
modex_answer_cb(void *token, enum coll_outcome outcome, const char *msg,
    const char *data, size_t len, void *arg)
{
    (void)arg;
    api_relay_answer(token, outcome, "modex", "direct modex", msg, data, len);
}

static void
modex_deliver_cb(void *poller, const struct modex_item *items, size_t n,
    void *arg)
{
    struct api_relay_wait *w = poller;
    cJSON *o = cJSON_CreateObject(), *arr, *it;

    (void)arg;
    jsonx_add_int(o, "version", PROTO_VERSION);
    arr = cJSON_AddArrayToObject(o, "requests");
    for (size_t i = 0; i < n; i++) {
        it = cJSON_CreateObject();
        jsonx_add_int(it, "id", (int64_t)items[i].id);
        jsonx_add_int(it, "job", items[i].job);
        jsonx_add_int(it, "attempt", items[i].attempt);
        jsonx_add_int(it, "rank", items[i].rank);
        cJSON_AddItemToArray(arr, it);
    }
    http_resp_json(http_deferred_resp(w->d), 200, o);
    http_deferred_finish(w->d);
    api_relay_wait_close(w);
}

static void
modex_cancel_cb(struct http_deferred *d, void *arg)
{
    struct api_relay_wait *w = arg;

    (void)d;
    if (w->poller)
        modex_poller_gone(w->api->modex, w);
    else
        modex_token_gone(w->api->modex, w);
    api_relay_wait_close(w);
}

static void
modex_timer_cb(uv_timer_t *t)
{
    struct api_relay_wait *w = container_of(t, struct api_relay_wait, timer);

    if (!w->poller) {
        modex_token_expired(w->api->modex, w);
        return;
    }
    modex_poller_gone(w->api->modex, w);
    modex_deliver_cb(w, NULL, 0, NULL);
}

/* A new wait for resp (api_relay_wait_new), a poller's or a request's. */
static struct api_relay_wait *
modex_wait_new(struct api *api, struct http_resp *resp, int64_t ms, bool poller,
    struct err *err)
{
    struct api_relay_wait *w = api_relay_wait_new(api, resp, ms, modex_timer_cb,
        modex_cancel_cb, err);

    if (w != NULL)
        w->poller = poller;
    return w;
}

/* The live attempt (job, attempt), which must run on node and owner. */
static int
modex_attempt_check(struct schedd *sd, const struct proto_modex_req *m,
    struct err *err)
{
    const char *need[2] = { m->node, m->owner };
    struct attempt *a = api_relay_attempt(sd, m->job, m->attempt, err);

    if (a == NULL)
        return err->code;
    for (int i = 0; i < 2; i++) {
        if (!api_relay_on_node(a, need[i]))
            return err_set(err, -EINVAL,
                "field '%s': attempt %d of job %lld does not run on node "
                "'%s'",
                i == 0 ? "node" : "owner", m->attempt, (long long)m->job,
                need[i]);
    }
    return 0;
}

int
api_agent_modex(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    struct proto_modex_req m;
    struct api_relay_wait *w;
    cJSON *json = NULL;
    int rc;

    if ((rc = api_req_body(r, &json, err)) < 0)
        return rc;
    rc = proto_modex_req_from_json(json, &m, err);
    cJSON_Delete(json);
    if (rc < 0)
        return rc;
    rc = api_req_own_node(r, m.node, err);
    if (rc == 0)
        rc = modex_attempt_check(sd, &m, err);
    if (rc == 0 &&
        (w = modex_wait_new(r->api, resp, m.timeout_ms, false, err)) == NULL)
        rc = -EFAULT;
    else if (rc == 0)
        modex_request(r->api->modex, m.job, m.attempt, m.owner,
            (uint32_t)m.rank, w);
    proto_modex_req_release(&m);
    if (rc == -EPIPE)
        http_resp_error(resp, 409, "modex_failed", "%s", err->msg);
    return rc == -EPIPE ? 0 : rc;
}

int
api_agent_modex_poll(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    char node[PROTO_NODE_NAME_MAX + 2];
    struct api_relay_wait *w;
    int64_t wait_ms = 25000;
    int rc;

    (void)sd;
    if ((rc = api_req_node_param(r, node, sizeof(node), err)) < 0)
        return rc;
    if ((rc = api_req_query_int_default(r, "wait_ms", 0, INT64_MAX, &wait_ms,
             err)) < 0)
        return rc;
    if (wait_ms > API_MODEX_WAIT_MAX_MS)
        wait_ms = API_MODEX_WAIT_MAX_MS;
    if ((w = modex_wait_new(r->api, resp, wait_ms, true, err)) == NULL)
        return -EFAULT;
    modex_poll(r->api->modex, node, w);
    return 0;
}

int
api_agent_modex_reply(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    struct proto_modex_reply m;
    cJSON *json = NULL, *o;
    int rc;

    (void)sd;
    if ((rc = api_req_body(r, &json, err)) < 0)
        return rc;
    rc = proto_modex_reply_from_json(json, &m, err);
    cJSON_Delete(json);
    if (rc < 0)
        return rc;
    rc = api_req_own_node(r, m.node, err);
    if (rc == 0)
        rc = modex_reply(r->api->modex, (uint64_t)m.id, m.node, m.error == NULL,
            m.data, m.len, m.error, err);
    proto_modex_reply_release(&m);
    if (rc < 0)
        return rc;
    o = cJSON_CreateObject();
    jsonx_add_int(o, "version", PROTO_VERSION);
    http_resp_json(resp, 200, o);
    return 0;
}

void
api_modex_init(struct api *api)
{
    api->modex = modex_table_create(modex_answer_cb, modex_deliver_cb, api);
}

void
api_modex_release(struct api *api)
{
    modex_table_destroy(api->modex);
    api->modex = NULL;
}
