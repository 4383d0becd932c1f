/*
 * api_nodes.h - list and show nodes; cordon and uncordon them
 *
 * GET /v1/nodes, GET /v1/nodes/NAME, POST /v1/nodes/NAME/cordon and
 * /uncordon (operators; docs/api.md). `cordon` with "evict": true also
 * restarts the jobs running there elsewhere (nodes.h). POST
 * /v1/nodes/NAME/remove forgets a node (409 node_busy while jobs hold
 * it, unless "force": true; then 202 until they have left).
 */
#ifndef SCHEDULER_API_NODES_H
#define SCHEDULER_API_NODES_H

#include "scheduler/api_req.h"

api_handler_fn api_nodes_list;
api_handler_fn api_nodes_get;
api_handler_fn api_nodes_cordon;
api_handler_fn api_nodes_uncordon;
api_handler_fn api_nodes_remove;
/* POST /v1/nodes/NAME/drain {"version":1,"reason":"..."} */
api_handler_fn api_nodes_drain;
/* POST /v1/nodes/NAME/health/ack {"version":1,"finding":"code[@scope]",
 * "reason":"..."} */
api_handler_fn api_nodes_health_ack;

#endif
