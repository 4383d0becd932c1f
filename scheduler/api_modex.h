/*
 * api_modex.h - the agents' PMIx direct modex, relayed (modex.h):
 * POST /v1/agent/modex, GET /v1/agent/modex, POST /v1/agent/modex/reply
 *
 * The transport of modex.c's table (docs/api.md). A request is a
 * deferred response with a timer for its timeout; answering it finishes
 * the response (200 {"version","data"}, 409 modex_failed, 504
 * modex_timeout). The owner's long poll is a deferred response answered
 * with the requests for its node, or with none when its wait runs out.
 * The lifecycle hooks are the collectives' (api_coll.h): a node's agent
 * gone, the end of an attempt and a model reload fail the requests too.
 */
#ifndef SCHEDULER_API_MODEX_H
#define SCHEDULER_API_MODEX_H

#include "scheduler/api_req.h"

api_handler_fn api_agent_modex;
api_handler_fn api_agent_modex_poll;
api_handler_fn api_agent_modex_reply;

/* The table of api (api_coll_init / api_coll_release call these). */
void api_modex_init(struct api *api);
void api_modex_release(struct api *api);

#endif
