/*
 * api_relay.h - what the relayed PMIx endpoints share (api_coll.c,
 * api_modex.c)
 *
 * A relayed request is a deferred response with a timer: the agent's
 * contribution to a fence, its direct modex request, or an owner's long
 * poll. The tables (collective.h, modex.h) hold the wait as their token
 * and say when to answer it; these functions make the answer and check
 * that a request names a live attempt on its nodes.
 */
#ifndef SCHEDULER_API_RELAY_H
#define SCHEDULER_API_RELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "common/err.h"
#include "scheduler/api_req.h"
#include "scheduler/collective.h"
#include "scheduler/http.h"

struct attempt;

struct api_relay_wait {
    uv_timer_t timer;
    struct api *api;
    struct http_deferred *d;
    bool poller; /* an owner's modex long poll, not a request */
};

/*
 * A new wait for resp: its timer calls timer_cb after ms, and cancel_cb
 * runs when the connection goes away (http_resp_defer). Returns NULL
 * with err set (-EFAULT) when the timer cannot start; resp is then not
 * deferred.
 */
struct api_relay_wait *api_relay_wait_new(struct api *api,
    struct http_resp *resp, int64_t ms, uv_timer_cb timer_cb,
    http_cancel_fn *cancel_cb, struct err *err);
/* Stops w's timer and frees w once the timer is closed. */
void api_relay_wait_close(struct api_relay_wait *w);

/*
 * Answers w and closes it: COLL_DONE 200 {"version","data"} (data
 * base64), COLL_TIMEOUT 504 "<what>_timeout", otherwise 409
 * "<what>_failed", both with msg, logged at info as "a PMIx <label>
 * timed out/failed".
 */
void api_relay_answer(struct api_relay_wait *w, enum coll_outcome outcome,
    const char *what, const char *label, const char *msg, const char *data,
    size_t len);

/* The attempt (job, attempt) if it is live (PLACED or RUNNING); NULL
 * with err set (-EPIPE, "attempt A of job J is not running") if not. */
struct attempt *api_relay_attempt(struct schedd *sd, int64_t job, int attempt,
    struct err *err);
/* Whether a runs on node. */
bool api_relay_on_node(const struct attempt *a, const char *node);

#endif
