/*
 * cred.h - credentials: token hashing, agent HMACs, secret files
 *
 * Built on libcrypto (never a home-made hash). Hex strings are lowercase.
 */
#ifndef COMMON_CRED_H
#define COMMON_CRED_H

#include <stdbool.h>
#include <stddef.h>

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

#endif
