/*
 * auth.h - who is calling: Unix peer credentials, bearer tokens, agents
 *
 * docs/api.md "Identity":
 *  - Unix socket: the peer's uid names the user (getpwuid_r, or "uid<N>");
 *    uid 0, the scheduler's own uid and the configured operators are
 *    operators.
 *  - TCP: "Authorization: Bearer <token>"; the token's SHA-256 is looked
 *    up in the tokens table.
 *  - Agents (either transport): "Authorization: Agent <node>:<hex
 *    HMAC-SHA256(cluster secret, node)>", compared in constant time.
 *
 * Failures return -EACCES (401 unauthorized) with err saying why.
 */
#ifndef SCHEDULER_AUTH_H
#define SCHEDULER_AUTH_H

#include <sys/types.h>

#include "common/err.h"
#include "scheduler/api.h"

/* Identify a user (not an agent). */
int auth_user(struct schedd *sd, const struct http_req *req,
    struct api_ident *who, struct err *err);
/* Identify an agent by its Agent credential. */
int auth_agent(struct schedd *sd, const struct http_req *req,
    struct api_ident *who, struct err *err);
/* The user name of uid into buf ("uid<N>" when it has none). */
void auth_uid_name(uid_t uid, char *buf, size_t len);

#endif
