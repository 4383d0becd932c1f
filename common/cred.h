/*
 * cred.h - credentials: token hashing, agent request MACs, node keys,
 * secret files
 *
 * Built on libcrypto (never a home-made hash). Hex strings are lowercase.
 *
 * Agents (docs/api.md "Agent credentials"): each node holds only its own
 * key, K_node = HMAC-SHA256(cluster secret, "lockstep-node-key:" node),
 * and signs every request with it: the MAC covers the method, the path
 * with its query, the SHA-256 of the body, a timestamp and a nonce, so a
 * captured request is good for nothing but itself, once, within the
 * scheduler's window, and one node's key never speaks for another node.
 */
#ifndef COMMON_CRED_H
#define COMMON_CRED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "proto.h"

#define CRED_HEX_LEN 64   /* SHA-256 as hex, without the NUL */
#define CRED_KEY_LEN 32   /* a node key, raw */
#define CRED_NONCE_LEN 16 /* a request's nonce, raw (32 hex) */

/* Read the cluster secret: the file must exist, be a regular file, not be
 * readable or writable by "other" (mode & 007 == 0), and hold at least 16
 * bytes after trailing whitespace is stripped. *secret: caller frees.
 * Errors name the file: "cluster secret '/x' is world-readable (mode
 * 0644); chmod 600 it". */
int cred_read_secret(const char *path, char **secret, size_t *len,
    struct err *err);

/* out (CRED_HEX_LEN + 1 bytes) = hex HMAC-SHA256(secret, node). Also the
 * static agent credential of before per-request MACs (agent_auth_legacy). */
void cred_agent_mac(const char *secret, size_t secret_len, const char *node,
    char *out);

/* An HMAC-SHA256 key made ready once (its padded blocks hashed), for
 * many MACs at about half the cost of cred_agent_mac each. Used by one
 * thread at a time. */
struct cred_mac_key;
struct cred_mac_key *cred_mac_key_create(const void *key, size_t len);
void cred_mac_key_destroy(struct cred_mac_key *k);
/* out (CRED_HEX_LEN + 1 bytes) = hex HMAC-SHA256 of msg under k. */
void cred_mac_key_hex(struct cred_mac_key *k, const char *msg, char *out);

/* ---- agent credentials ----------------------------------------------------
 */

/* key = HMAC-SHA256(secret, "lockstep-node-key:" node): node's key. */
void cred_node_key(const char *secret, size_t secret_len, const char *node,
    unsigned char *key);

/* key (CRED_HEX_LEN + 1 bytes) = the witness key (common/witness.h):
 * hex HMAC-SHA256(secret, "lockstep witness v1"), shared by every node. */
void cred_witness_key(const char *secret, size_t secret_len, char *key);

/* What one agent request's MAC covers. target is the path with its query
 * ("/v1/agent/work?node=n1&gen=4"), as the scheduler decodes it. */
struct cred_agent_req {
    const char *node;
    const char *method;
    const char *target;
    const char *body; /* may be NULL when body_len is 0 */
    size_t body_len;
    int64_t ts_ms;     /* the signer's wall clock */
    const char *nonce; /* 2 * CRED_NONCE_LEN lowercase hex */
};

/* out (CRED_HEX_LEN + 1 bytes) = hex HMAC-SHA256(key, the canonical text
 * of r: "lockstep-agent-v1", node, method, target, hex SHA-256 of the
 * body, ts_ms and nonce, joined by "\n"). */
void cred_agent_req_mac(const unsigned char *key,
    const struct cred_agent_req *r, char *out);

/* The Authorization header line for a request of node signed with key at
 * now_ms with a fresh nonce: "Authorization: Agent
 * <node>:<ts_ms>:<nonce>:<mac>". Caller frees; NULL when the kernel's
 * random source failed. */
char *cred_agent_sign(const unsigned char *key, const char *node,
    const char *method, const char *target, const char *body, size_t body_len,
    int64_t now_ms);

/* An Agent credential taken apart (the text after "Agent "). */
struct cred_agent_cred {
    char node[PROTO_NODE_NAME_MAX + 1];
    int64_t ts_ms;
    char nonce[2 * CRED_NONCE_LEN + 1];
    char mac[CRED_HEX_LEN + 1];
};

/* Parse s: 0; -EPROTO for the static form of before ("<node>:<mac>", its
 * node in c->node and mac in c->mac); -EINVAL for anything else (c->node
 * then holds the node named when that part is a valid name, else ""). */
int cred_agent_parse(const char *s, struct cred_agent_cred *c);

/* A node's key file (lockstepd --derive-node-key; docs/operations.md
 * "Node keys"): the node it is for, its key, and the witness keys. */
struct cred_node_keyfile {
    char node[PROTO_NODE_NAME_MAX + 1];
    unsigned char key[CRED_KEY_LEN];
    char witness_key[CRED_HEX_LEN + 1];
    char witness_prev[CRED_HEX_LEN + 1]; /* "" when none */
};

/* Derive node's key file from the cluster secret and, when prev is not
 * NULL, the previous one (for its witness key only). */
void cred_node_keyfile_derive(const char *secret, size_t secret_len,
    const char *prev, size_t prev_len, const char *node,
    struct cred_node_keyfile *kf);
/* The file's text ("key = value" lines with a comment); caller frees
 * (and wipes). */
char *cred_node_keyfile_format(const struct cred_node_keyfile *kf);
/* Read path as cred_read_secret checks a secret (a regular file, no
 * access for other users) and parse it: every key known, node, key and
 * witness_key present, hex of the right length. Errors name the file and
 * the line. */
int cred_node_keyfile_read(const char *path, struct cred_node_keyfile *kf,
    struct err *err);

/* out (CRED_HEX_LEN + 1 bytes) = hex SHA-256(s). */
void cred_sha256_hex(const char *s, char *out);

/* A new bearer token "lst_" + 64 hex chars; caller frees. NULL on failure
 * of the kernel's random source. */
char *cred_token_new(void);

/* Decode the first 2n lowercase hex chars of s into raw (n bytes); false
 * when they are not that. */
bool cred_from_hex(const char *s, unsigned char *raw, size_t n);

/* Constant-time string equality (length leaks, content does not). */
bool cred_equal(const char *a, const char *b);

/* A bearer token's standing at now_ms (docs/api.md "Tokens and
 * identity"): revoked wins over expired; expires_ms 0 never expires,
 * and a token is expired from its expiry on (now_ms >= expires_ms). */
enum cred_token_state {
    CRED_TOKEN_VALID,
    CRED_TOKEN_EXPIRED,
    CRED_TOKEN_REVOKED,
};
enum cred_token_state cred_token_state(int64_t expires_ms, int64_t revoked_ms,
    int64_t now_ms);

/* How often a token's last-used time is written at most. */
#define CRED_TOKEN_TOUCH_MS 60000
/* Whether a token last recorded as used at last_used_ms (0: never) needs
 * its last-used time written at now_ms: at most once a minute. */
bool cred_token_touch_due(int64_t last_used_ms, int64_t now_ms);

#endif
