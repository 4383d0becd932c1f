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

#include <stdbool.h>
#include <sys/types.h>

#include "common/err.h"
#include "common/proto.h"
#include "scheduler/http.h"
#include "scheduler/schedd.h"

#define AUTH_USER_MAX 64

/* Who sent a request. */
struct auth_ident {
    char user[AUTH_USER_MAX + 1]; /* "" for agents and public routes */
    bool operator;
    bool agent;
    char node[PROTO_NODE_NAME_MAX + 1]; /* agents: the authenticated node */
};

/* Identify a user (not an agent). */
int auth_user(struct schedd *sd, const struct http_req *req,
    struct auth_ident *who, struct err *err);
/* Identify an agent by its Agent credential. */
int auth_agent(struct schedd *sd, const struct http_req *req,
    struct auth_ident *who, struct err *err);
/* A new bearer token for user with role ("user" or "operator"), created
 * by actor: only its SHA-256 is stored (event token_created). *token:
 * caller frees (after wiping it). */
int auth_token_create(struct schedd *sd, const char *user, const char *role,
    const char *actor, char **token, struct err *err);
/* The user name of uid into buf ("uid<N>" when it has none). */
void auth_uid_name(uid_t uid, char *buf, size_t len);

#endif
