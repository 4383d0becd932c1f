/*
 * api_relay.c - what the relayed PMIx endpoints share (api_relay.h)
 */
#include "scheduler/api_relay.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/b64.h"
#include "common/jsonx.h"
#include "common/log.h"
#include "common/proto.h"
#include "common/uvx.h"
#include "common/xalloc.h"
#include "scheduler/attempt.h"
#include "scheduler/schedd.h"

struct api_relay_wait *
api_relay_wait_new(struct api *api, struct http_resp *resp, int64_t ms,
    uv_timer_cb timer_cb, http_cancel_fn *cancel_cb, struct err *err)
{
    struct api_relay_wait *w = xcalloc(1, sizeof(*w));
    int rc;

    w->api = api;
    if ((rc = uv_timer_init(api->sd->loop, &w->timer)) < 0) {
        free(w);
        err_set(err, -EFAULT, "cannot start a timer: %s", uv_strerror(rc));
        return NULL;
    }
    if ((rc = uv_timer_start(&w->timer, timer_cb, (uint64_t)ms, 0)) < 0) {
        uvx_close_one((uv_handle_t *)&w->timer, free, w);
        err_set(err, -EFAULT, "cannot start a timer: %s", uv_strerror(rc));
        return NULL;
    }
    w->d = http_resp_defer(resp, cancel_cb, w);
    return w;
}

void
api_relay_wait_close(struct api_relay_wait *w)
{
    uv_timer_stop(&w->timer);
    uvx_close_one((uv_handle_t *)&w->timer, free, w);
}

void
api_relay_answer(struct api_relay_wait *w, enum coll_outcome outcome,
    const char *what, const char *label, const char *msg, const char *data,
    size_t len)
{
    struct http_resp *resp = http_deferred_resp(w->d);
    char code[64];
    cJSON *o;
    char *text;

    if (outcome == COLL_DONE) {
        o = cJSON_CreateObject();
        text = b64_encode(data, len);
        jsonx_add_int(o, "version", PROTO_VERSION);
        jsonx_add_str(o, "data", text);
        free(text);
        http_resp_json(resp, 200, o);
    } else if (outcome == COLL_TIMEOUT) {
        log_info("a PMIx %s timed out: %s", label, msg);
        snprintf(code, sizeof(code), "%s_timeout", what);
        http_resp_error(resp, 504, code, "%s", msg);
    } else {
        log_info("a PMIx %s failed: %s", label, msg);
        snprintf(code, sizeof(code), "%s_failed", what);
        http_resp_error(resp, 409, code, "%s", msg);
    }
    http_deferred_finish(w->d);
    api_relay_wait_close(w);
}

struct attempt *
api_relay_attempt(struct schedd *sd, int64_t job, int attempt, struct err *err)
{
    struct attempt *a;

    for (a = sd->attempts; a != NULL; a = a->next) {
        if (a->job_id == job && a->num == attempt)
            break;
    }
    if (a == NULL || !proto_attempt_state_active(a->state)) {
        err_set(err, -EPIPE, "attempt %d of job %lld is not running", attempt,
            (long long)job);
        return NULL;
    }
    return a;
}

bool
api_relay_on_node(const struct attempt *a, const char *node)
{
    for (int k = 0; k < a->nnodes; k++) {
        if (strcmp(a->placements[k].node_name, node) == 0)
            return true;
    }
    return false;
}
