/*
 * api_obs.h - what on-call observes: GET /metrics, GET /v1/events, and the
 * record of refused requests
 */
#ifndef SCHEDULER_API_OBS_H
#define SCHEDULER_API_OBS_H

#include "scheduler/api_req.h"

/* GET /metrics: the Prometheus text format (obs.h). No credential unless
 * metrics_token_required (api.c decides). */
api_handler_fn api_metrics_get;
/* GET /v1/events?node=&job=&kind=&since=&after=&limit= (docs/api.md). */
api_handler_fn api_events_list;

/* A refused request (401 or 403; 503 for a full nonce table): count it
 * and, within the limits of refusals.h, record it as an event with the
 * identity and the reason (docs/api.md "Refused requests"): kind
 * auth_refused (401, 503) or request_refused (403); message is the
 * sentence of the reply. Returns 0 or the negative errno of the failed
 * write. */
int api_obs_refusal(struct schedd *sd, const struct api_req *r,
    enum refusal_reason why, const char *message);

#endif
