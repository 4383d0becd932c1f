/*
 * refusals.h - which refused requests become events, pure
 *
 * Every refused request (401: no, an unknown, an expired or a revoked
 * token, a bad or replayed agent credential, a clock out of the window;
 * 403: another user's job, another node's name, an operator-only route)
 * is counted by reason and, within limits, recorded as an event with the
 * identity and the reason (docs/api.md "Refused requests"). The limits
 * keep a flood of refusals from flooding the events table:
 *
 *  - per key (the caller's: who, what, why), at most one event per
 *    REFUSALS_QUIET_MS; the next one says how many were not recorded in
 *    between (`refused_since_last_event`);
 *  - over all keys, a token bucket of REFUSALS_RATE events a second
 *    (REFUSALS_BURST at once); the next event written says how many
 *    refusals it kept out (`refusals_unrecorded`);
 *  - at most REFUSALS_KEYS keys are remembered (a key is forgotten
 *    REFUSALS_FORGET_MS after its last event, with the count of refusals
 *    since, which /metrics still has); a refusal with a new key while the
 *    table is full is limited by the bucket alone.
 *
 * Times are monotonic milliseconds.
 */
#ifndef SCHEDULER_REFUSALS_H
#define SCHEDULER_REFUSALS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/itab.h"
#include "common/tbucket.h"

#define REFUSALS_QUIET_MS 10000
#define REFUSALS_KEYS 1024
#define REFUSALS_FORGET_MS 60000
#define REFUSALS_RATE 5
#define REFUSALS_BURST 50
#define REFUSALS_KEY_MAX 400 /* longer keys are cut */

/* Why a request was refused: the `reason` of its event and the label of
 * lockstep_requests_refused_total. */
enum refusal_reason {
    REFUSAL_NO_CREDENTIAL,  /* 401: none, or not the route's kind */
    REFUSAL_UNKNOWN_TOKEN,  /* 401 */
    REFUSAL_TOKEN_EXPIRED,  /* 401 */
    REFUSAL_TOKEN_REVOKED,  /* 401 */
    REFUSAL_BAD_CREDENTIAL, /* 401: a malformed Agent credential */
    REFUSAL_LEGACY,         /* 401: the static Agent credential of before */
    REFUSAL_BAD_MAC,        /* 401: the agent MAC does not verify */
    REFUSAL_CLOCK_SKEW,     /* 401: its timestamp is out of the window */
    REFUSAL_REPLAY,         /* 401: seen already within the window */
    REFUSAL_REPLAY_FULL,    /* 503: too many agent requests in the window */
    REFUSAL_OPERATOR,       /* 403: an operator-only route or setting */
    REFUSAL_FORBIDDEN,      /* 403: another user's job or token, another
                             * node's name */
    REFUSAL_N,
};

const char *refusal_reason_str(enum refusal_reason r);

struct refusals {
    struct itab tab; /* keys, in the order of their last event */
    struct tbucket bucket;
    uint64_t unrecorded;          /* kept out by the bucket, since the last
                                   * event */
    uint64_t count[REFUSAL_N];    /* every refusal, by reason */
    uint64_t recorded[REFUSAL_N]; /* of those, written as events */
};

void refusals_init(struct refusals *r);
void refusals_release(struct refusals *r);

/* Count one refusal of reason with key (any text: who, what, why) at
 * now_ms, and say whether to write its event. When true, *quiet is how
 * many refusals of the same key were not written since its last event and
 * *unrecorded how many of all were kept out by the overall rate (both
 * reset). */
bool refusals_take(struct refusals *r, enum refusal_reason reason,
    const char *key, int64_t now_ms, uint64_t *quiet, uint64_t *unrecorded);

#endif
