/*
 * auth.h - who is calling: Unix peer credentials, bearer tokens, agents
 *
 * docs/api.md "Identity":
 *  - Unix socket: the peer's uid names the user (getpwuid_r, or "uid<N>");
 *    uid 0, the scheduler's own uid and the configured operators are
 *    operators.
 *  - TCP: "Authorization: Bearer <token>"; the token's SHA-256 is looked
 *    up in the tokens table; an expired or revoked token is refused
 *    (401) on its next request; its last-used time is written at most
 *    once a minute.
 *  - Agents (either transport): "Authorization: Agent
 *    <node>:<ts_ms>:<nonce>:<mac>", a MAC over the request under the
 *    node's key (common/cred.h), derived from the cluster secret or,
 *    during a rotation, the previous one; the timestamp within
 *    agent_auth_window_ms of the scheduler's clock; each request once
 *    (nonces.h). The static "Agent <node>:<mac>" of before only with
 *    agent_auth_legacy.
 *
 * Failures return -EACCES (401) with err saying why and who->refused the
 * reason (refusals.h); -EAGAIN (503) when the table of nonces is full.
 * After a failure, who->user and who->node hold what the credential
 * claimed (an expired token's user, an agent's node), for the record of
 * the refusal only.
 */
#ifndef SCHEDULER_AUTH_H
#define SCHEDULER_AUTH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"
#include "common/proto.h"
#include "scheduler/http.h"
#include "scheduler/refusals.h"
#include "scheduler/schedd.h"

#define AUTH_USER_MAX 64

/* Who sent a request. */
struct auth_ident {
    char user[AUTH_USER_MAX + 1]; /* "" for agents and public routes */
    bool operator;
    bool agent;
    char node[PROTO_NODE_NAME_MAX + 1]; /* agents: the authenticated node */
    int64_t token_id;                   /* the bearer token's id, or 0 */
    /* After a failure: */
    enum refusal_reason refused;
    int64_t skew_ms; /* REFUSAL_CLOCK_SKEW: the credential's time - ours */
};

/* Which key an agent request was signed with (counted for /metrics). */
enum auth_agent_key {
    AUTH_KEY_CURRENT,  /* derived from the cluster secret */
    AUTH_KEY_PREVIOUS, /* from the previous one (a rotation) */
    AUTH_KEY_LEGACY,   /* the static credential (agent_auth_legacy) */
    AUTH_KEY_N,
};
const char *auth_agent_key_str(enum auth_agent_key k);

/* How many of a token's first characters are kept to tell it by ("lst_"
 * and 8 hex digits: not enough to guess the rest). */
#define AUTH_TOKEN_PREFIX_LEN 12

/* A token to make: for user with role ("user" or "operator"), by actor,
 * valid for ttl_ms (0: never expires). */
struct auth_token_new {
    const char *user;
    const char *role;
    const char *actor;
    int64_t ttl_ms;
};

/* Identify a user (not an agent). */
int auth_user(struct schedd *sd, const struct http_req *req,
    struct auth_ident *who, struct err *err);
/* Identify an agent by its Agent credential. */
int auth_agent(struct schedd *sd, const struct http_req *req,
    struct auth_ident *who, struct err *err);
/* Make node's kept keys (node_key, lease_mac) those of the current
 * cluster secret. */
void auth_node_keys(const struct schedd *sd, struct node *node);
/* A new bearer token as n says: only its SHA-256 and its first
 * AUTH_TOKEN_PREFIX_LEN characters are stored (event token_created).
 * *token: caller frees (after wiping it); *id: its number. */
int auth_token_create(struct schedd *sd, const struct auth_token_new *n,
    char **token, int64_t *id, struct err *err);
/* Revoke token id: its owner or an operator (-EPERM otherwise, -ENOENT
 * unknown); revoking a revoked one changes nothing (event
 * token_revoked). It fails from the next request on. */
int auth_token_revoke(struct schedd *sd, const struct auth_ident *who,
    int64_t id, struct err *err);
/* The user name of uid into buf ("uid<N>" when it has none). */
void auth_uid_name(uid_t uid, char *buf, size_t len);

#endif
