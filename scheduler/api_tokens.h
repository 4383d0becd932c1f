/*
 * api_tokens.h - health, whoami and bearer tokens
 *
 * GET /v1/health (no credential), GET /v1/whoami, POST /v1/tokens
 * (operators). Tokens are shown once, at creation; only their SHA-256 is
 * stored, so a stolen database does not hand out credentials.
 */
#ifndef SCHEDULER_API_TOKENS_H
#define SCHEDULER_API_TOKENS_H

#include "scheduler/api_req.h"

api_handler_fn api_health_get;
api_handler_fn api_whoami_get;
api_handler_fn api_tokens_create;
/* GET /v1/tokens[?user=U]: a user's own, an operator's everyone's. */
api_handler_fn api_tokens_list;
/* POST /v1/tokens/ID/revoke: the owner's or an operator's. */
api_handler_fn api_tokens_revoke;

#endif
