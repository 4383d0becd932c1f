/*
 * nonces.h - the agents' requests seen within the window, pure
 *
 * Every agent request carries a MAC over its content, a timestamp and a
 * nonce (common/cred.h). The scheduler accepts a request only within a
 * window around its own clock, and only once: this table remembers each
 * accepted request (by its MAC, which covers the nonce) until its
 * timestamp has left the window, after which the window check refuses it
 * anyway. It is bounded: when `max` requests are remembered and none has
 * expired, a new one is refused (the caller answers 503) rather than a
 * remembered one forgotten, which would let it be replayed.
 */
#ifndef SCHEDULER_NONCES_H
#define SCHEDULER_NONCES_H

#include <stddef.h>
#include <stdint.h>

#include "common/itab.h"

#define NONCES_KEY_LEN 16
#define NONCES_MAX_DEFAULT 262144

struct nonces {
    struct itab tab; /* struct nonce, oldest first */
    size_t max;
    uint64_t full; /* requests refused because the table was full */
};

/* An empty table of at most max entries (0: NONCES_MAX_DEFAULT). */
void nonces_init(struct nonces *n, size_t max);
void nonces_release(struct nonces *n);

/* Remember key (NONCES_KEY_LEN bytes) until expires_ms (wall clock) and
 * at it (the window check accepts a time at its edge), forgetting first
 * what expired before now_ms. Returns 0, -EEXIST when key is
 * remembered already (a replay), -ENOSPC when the table is full. */
int nonces_add(struct nonces *n, const unsigned char *key, int64_t expires_ms,
    int64_t now_ms);
/* How many requests are remembered. */
size_t nonces_count(const struct nonces *n);

#endif
