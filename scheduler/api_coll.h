/*
 * api_coll.h - POST /v1/agent/collective: the agents' PMIx fences,
 * relayed (collective.h)
 *
 * The transport of collective.c's table: each contribution is a deferred
 * response with a timer for its timeout; answering a token finishes its
 * response (200 {"version","data"}, 409 collective_failed, 504
 * collective_timeout; docs/api.md). A contributor whose connection goes
 * away fails its attempt's collectives (its agent died), and so does a
 * participant whose agent's work long poll closed (api_agent.c), the end
 * of the attempt (the node_changed hook: api.c calls api_coll_sweep) and
 * a model reload.
 */
#ifndef SCHEDULER_API_COLL_H
#define SCHEDULER_API_COLL_H

#include "scheduler/api_req.h"

api_handler_fn api_agent_collective;

/* The tables of api, the direct modex's too (api_modex.h; api_create /
 * api_free). */
void api_coll_init(struct api *api);
void api_coll_release(struct api *api);
/* Fail the collectives and direct modex requests of attempts that are no
 * longer active. */
void api_coll_sweep(struct api *api);
/* node's agent is gone: fail the collectives it takes part in and the
 * direct modex requests it owns. */
void api_coll_node_gone(struct api *api, const char *node);
/* Fail every collective and direct modex request with why (model
 * reload, shutdown). */
void api_coll_abort_all(struct api *api, const char *why);

#endif
