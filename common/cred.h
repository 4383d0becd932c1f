/*
 * cred.h - credentials: token hashing, agent HMACs, secret files
 *
 * Built on libcrypto (never a home-made hash). Hex strings are lowercase.
 */
#ifndef COMMON_CRED_H
#define COMMON_CRED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define CRED_HEX_LEN 64 /* SHA-256 as hex, without the NUL */

/* Read the cluster secret: the file must exist, be a regular file, not be
 * readable or writable by "other" (mode & 007 == 0), and hold at least 16
 * bytes after trailing whitespace is stripped. *secret: caller frees.
 * Errors name the file: "cluster secret '/x' is world-readable (mode
 * 0644); chmod 600 it". */
int cred_read_secret(const char *path, char **secret, size_t *len,
    struct err *err);

/* out (CRED_HEX_LEN + 1 bytes) = hex HMAC-SHA256(secret, node). */
void cred_agent_mac(const char *secret, size_t secret_len, const char *node,
    char *out);

/* out (CRED_HEX_LEN + 1 bytes) = hex SHA-256(s). */
void cred_sha256_hex(const char *s, char *out);

/* A new bearer token "lst_" + 64 hex chars; caller frees. NULL on failure
 * of the kernel's random source. */
char *cred_token_new(void);

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
