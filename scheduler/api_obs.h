/*
 * api_obs.h - what on-call observes: GET /metrics, GET /v1/events, and the
 * record of refused operator-only requests
 */
#ifndef SCHEDULER_API_OBS_H
#define SCHEDULER_API_OBS_H

#include "scheduler/api_req.h"

/* GET /metrics: the Prometheus text format (obs.h). No credential unless
 * metrics_token_required (api.c decides). */
api_handler_fn api_metrics_get;
/* GET /v1/events?node=&job=&kind=&since=&after=&limit= (docs/api.md). */
api_handler_fn api_events_list;

/* A request for an operator-only route by someone without the role:
 * record it as a request_refused event (who, method, path) and count it.
 * Returns 0 or the negative errno of the failed write. */
int api_obs_refused(struct schedd *sd, const struct api_req *r);
/* The same for any other refusal, with its reason (a sentence). */
int api_obs_refused_why(struct schedd *sd, const struct api_req *r,
    const char *reason);

#endif
