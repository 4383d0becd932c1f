/*
 * witness.h - witnesses: the agents that vouch for a scheduler outage
 *
 * The scheduler gives every node N a witness set W(N) of up to
 * WITNESS_MAX other nodes. An agent that lost the scheduler asks its
 * witnesses over UDP when they last reached it; it keeps its ranks'
 * leases only while a majority of W(N) answer that they lost it too
 * (docs/fault-tolerance.md "Scheduler outages"). The scheduler replaces
 * a silent node's jobs only once a majority of W(N) has been in
 * continuous contact with it for node_timeout_ms.
 *
 * This file holds what both sides share and what can be tested without
 * a network: the messages (text, HMAC-SHA256 with a key derived from the
 * cluster secret for this purpose only), the choice of W(N), and both
 * rules. Pure: no I/O, no clock of its own.
 */
#ifndef COMMON_WITNESS_H
#define COMMON_WITNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/cred.h"
#include "common/proto.h"

#define WITNESS_MAX 5
#define WITNESS_MSG_MAX 512
/* How much later than N's last success a witness's last success may be
 * and still count as the same outage, on top of one status interval:
 * the agents' heartbeats are not aligned. */
#define WITNESS_SLACK_MS 250

/* A query: from node, with a nonce the answer echoes. */
struct witness_query {
    char node[PROTO_NODE_NAME_MAX + 1];
    uint64_t nonce;
};

/* An answer: from node, the nonce of the query, and how long ago (ms)
 * the answering agent last completed a status exchange; -1: never since
 * it started. */
struct witness_answer {
    char node[PROTO_NODE_NAME_MAX + 1];
    uint64_t nonce;
    int64_t age_ms;
};

/* key (CRED_HEX_LEN + 1 bytes): the witness key, HMAC-SHA256 of a fixed
 * label under the cluster secret (never the agents' HTTP credential). */
void witness_key(const char *secret, size_t secret_len, char *key);

/* Encode into buf (WITNESS_MSG_MAX bytes); returns the length. */
size_t witness_query_encode(const char *key, const struct witness_query *q,
    char *buf);
size_t witness_answer_encode(const char *key, const struct witness_answer *a,
    char *buf);
/* Decode len bytes of buf: -EINVAL when it is not such a message,
 * -EBADMSG when its MAC is wrong. */
int witness_query_decode(const char *key, const char *buf, size_t len,
    struct witness_query *q);
int witness_answer_decode(const char *key, const char *buf, size_t len,
    struct witness_answer *a);

/* floor(n / 2) + 1. */
size_t witness_majority(size_t n);

/*
 * Choose W(self) among the n names (self may be among them; it is
 * skipped): at most WITNESS_MAX, nodes of another rack first (rack:
 * each name's "rack" label or NULL), then by a hash of the pair, so the
 * choice depends only on the set of names. Writes indices into names to
 * out; returns how many.
 */
size_t witness_pick(const char *self, const char *self_rack,
    const char *const *names, const char *const *racks, size_t n, size_t *out);

/* Where one candidate ranks for self: another rack's nodes first, then
 * by the hash of the pair, then by name (borrowed). */
struct witness_rank {
    bool same_rack;
    uint64_t hash;
    const char *name;
};

struct witness_rank witness_rank_of(const char *self, const char *self_rack,
    const char *name, const char *rack);
/* The same, from witness_self_hash(self): what ranks many candidates for
 * one self hashes self once (the pair's hash is FNV-1a over self, a
 * separator and the candidate, then a finalizer). */
uint64_t witness_self_hash(const char *self);
struct witness_rank witness_rank_with(uint64_t self_hash, const char *self_rack,
    const char *name, const char *rack);

/* Offer the candidate id, ranked r, to the set (ranks, ids)[0..k), best
 * first: it takes its place when it beats one of them (the last falls out
 * past WITNESS_MAX). Returns the set's new size. The order is a total
 * one, so offering the same candidates in any order, or only the best of
 * an earlier set and the new ones, gives witness_pick's set: what lets
 * the scheduler keep each node's set and offer it only the nodes that
 * join. Never offer self. */
size_t witness_offer(struct witness_rank *ranks, size_t *ids, size_t k,
    const struct witness_rank *r, size_t id);

/* ---- the agent's rule ---------------------------------------------------- */

/* Whether an answer received at recv_mono says its agent lost the
 * scheduler no later than slack_ms after we did (my_last_ok, monotonic;
 * its last success is recv_mono - age_ms). An agent that has not reached
 * the scheduler since it started and kept no earlier time (age -1) knows
 * nothing of what its predecessor did: its answer is neither stale nor
 * fresh (witness_answer_unknown), and counts for no majority. */
bool witness_answer_stale(const struct witness_answer *a, int64_t recv_mono,
    int64_t my_last_ok, int64_t slack_ms);
/* Whether the answer says nothing (age -1). */
bool witness_answer_unknown(const struct witness_answer *a);
/* Whether a round may extend the leases: nw witnesses, of which nstale
 * answered stale and nfresh answered that they reached the scheduler
 * since. False when nw is 0. */
bool witness_may_extend(size_t nw, size_t nstale, size_t nfresh);

/* ---- the scheduler's rule ------------------------------------------------ */

/* A node's contact with the scheduler: since when it has been continuous
 * (0: none since the scheduler started), when it was last heard, and
 * the longest gap between two contacts in two buckets of at least
 * window_ms each (gap_max: gaps that ended since bucket_mono; gap_prev:
 * in the bucket before). */
struct witness_contact {
    int64_t since_mono;
    int64_t last_mono;
    int64_t bucket_mono;
    int64_t gap_max;
    int64_t gap_prev;
};

/* What the scheduler allows for one exchange and the supervisor's check
 * (100 ms) on top of a lease that ran out. */
#define WITNESS_EXCHANGE_MS 500

/* A status or a lease ping arrived at now: a gap over gap_ms starts the
 * contact anew; window_ms is the least span of a gap bucket. */
void witness_contact_seen(struct witness_contact *c, int64_t now,
    int64_t gap_ms, int64_t window_ms);
/* Whether the contact has been continuous (no gap over gap_ms, up to
 * now) for window_ms at least. */
bool witness_contact_continuous(const struct witness_contact *c, int64_t now,
    int64_t gap_ms, int64_t window_ms);
/* The longest gap of the contact over the last window_ms at least (the
 * one going on now included): the scheduler heard the node at least once
 * in every stretch of this length in that time. */
int64_t witness_contact_gap(const struct witness_contact *c, int64_t now);
/* Whether a silent node with nw witnesses, ncont of them continuous, may
 * have its jobs replaced: no witnesses, or a majority. */
bool witness_may_replace(size_t nw, size_t ncont);
/* The gap within which a majority of nw witnesses were all heard: the
 * majority-th smallest of gaps[0..ncont) (those of the continuous ones;
 * sorted in place); -1 when they are fewer than a majority; 0 when nw is
 * 0. */
int64_t witness_majority_gap(size_t nw, int64_t *gaps, size_t ncont);
/*
 * When a silent node's jobs may be replaced. told_until is the latest,
 * over every answer the scheduler gave it (status reply, lease ping
 * answer, desired state), of the answer's time + its status interval +
 * its lease; gap_ms a gap within which a majority of its witnesses were
 * each heard (witness_majority_gap). Its last extension by witnesses
 * starts no later than its last success + that interval + the slack + the
 * gap; it lasts that lease; then an exchange's and a check's time.
 */
int64_t witness_replace_at(int64_t told_until, int64_t gap_ms);

#endif
