/*
 * api_agent.h - the agents' endpoints: status, work (long poll), logs
 *
 * POST /v1/agent/status applies a node report (status.h) and answers
 * with the typed reply (common/proto.h). GET /v1/agent/work is the node's
 * desired state (launch.h): answered at once when the agent's generation
 * differs from the node's, else when the node's desired state changes (the
 * context's node_changed hook, run after the change was written to the
 * open transaction; the HTTP server writes the reply only after the
 * commit) or when wait_ms runs out. POST /v1/agent/logs stores a chunk of
 * a rank's output. Every request must name the agent's own node.
 */
#ifndef SCHEDULER_API_AGENT_H
#define SCHEDULER_API_AGENT_H

#include "scheduler/api_req.h"

api_handler_fn api_agent_status;
api_handler_fn api_agent_work;
api_handler_fn api_agent_logs;

/* The node_changed hook: answer node's waiting long polls. */
void api_agent_wake(struct api *api, struct node *node);
/* The node_removed hook: answer node's long polls (with its desired
 * state, now empty) and close the gap its idx leaves in the lists. */
void api_agent_node_removed(struct api *api, struct node *node);
/* Answer every waiting long poll with 503 (the model is being reloaded
 * or the scheduler stops) and forget them. */
void api_agent_abort_all(struct api *api);

#endif
