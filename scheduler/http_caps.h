/*
 * http_caps.h - connection caps of the HTTP server, pure bookkeeping
 *
 * Counts connections per peer (a TCP peer's address, a Unix peer's uid)
 * and decides what a new connection may do. The rules (docs/operations.md
 * "Connection limits"):
 *
 *   - At most max_conns connections in all. A new one beyond that evicts
 *     the oldest TCP connection that has not yet sent a complete request
 *     head and is not an agent's (the caller finds it); with none to evict
 *     it is shed at once (a fixed 503 and a close; over TLS only the
 *     close, as no session carries the 503).
 *   - `reserve` of those are kept for the agent path: user TCP connections
 *     (not yet known to be an agent's) beyond max_conns - reserve are
 *     accepted restricted, and a restricted connection may only carry
 *     requests with an agent's or an operator's credentials; anything
 *     else gets 503 with Retry-After and a close. Unix socket connections are
 * never restricted (local clients: agents on the scheduler's node, operators),
 * only counted.
 *   - At most per_peer user connections from one TCP address (restricted
 *     beyond that, as above, up to http_caps_peer_max in all; shed
 *     beyond those, so that one client never fills the server) and
 *     per_peer from one non-exempt uid over the Unix socket (shed beyond
 *     that). 0 is no per-peer cap.
 *   - The connection evicted for room (the caller finds it) has been open
 *     for HTTP_EVICT_GRACE_MS at least (http_int.h), so a client that
 *     reconnects at once cannot evict a new agent's or operator's
 *     connection before its request head is read.
 *
 * No libuv here: the unit tests link this alone.
 */
#ifndef SCHEDULER_HTTP_CAPS_H
#define SCHEDULER_HTTP_CAPS_H

#include <stdbool.h>
#include <stddef.h>

#define HTTP_PEERS_BUCKETS 1024
#define HTTP_PEER_KEY_MAX 64
/* Restricted connections one TCP address may hold past per_peer: as many
 * again, and at least this many. */
#define HTTP_PEER_RESTRICTED_MIN 16

struct http_peer {
    struct http_peer *next;
    size_t n;
    char key[HTTP_PEER_KEY_MAX];
};

/* Connections per peer key; zero-initialised is empty. */
struct http_peers {
    struct http_peer *b[HTTP_PEERS_BUCKETS];
    size_t npeers;
};

/* How many connections key holds (0 when unknown). */
size_t http_peers_count(const struct http_peers *t, const char *key);
/* Count one more (keys longer than HTTP_PEER_KEY_MAX - 1 are truncated). */
void http_peers_add(struct http_peers *t, const char *key);
/* Count one less; a key at 0 is forgotten. Unknown keys are ignored. */
void http_peers_del(struct http_peers *t, const char *key);
/* Forget everything. */
void http_peers_clear(struct http_peers *t);

struct http_caps_cfg {
    size_t max_conns; /* 0: no cap */
    size_t reserve;   /* of max_conns, for the agent path */
    size_t per_peer;  /* 0: no per-peer cap */
};

/* Why a connection was shed or restricted. */
enum http_refusal {
    HTTP_REFUSE_NONE,
    HTTP_REFUSE_TOTAL, /* max_conns reached, nothing to evict */
    HTTP_REFUSE_USERS, /* the user budget (max_conns - reserve) */
    HTTP_REFUSE_PEER,  /* per_peer */
    HTTP_REFUSE_N,
};

enum http_admit {
    HTTP_ADMIT_OK,
    HTTP_ADMIT_RESTRICTED, /* agent requests only */
    HTTP_ADMIT_SHED,       /* close at once */
};

/* The connections already open when a new one arrives. */
struct http_caps_now {
    size_t total; /* every connection */
    size_t user;  /* TCP connections not known to be an agent's */
    size_t peer;  /* this peer's counted connections */
    bool is_unix;
    bool exempt;    /* a Unix peer with no per-uid cap (root, ourselves) */
    bool can_evict; /* an evictable connection exists */
};

/* The verdict on a new connection; *evict says the caller must first
 * evict one (the total is full) and *why the reason of a verdict other
 * than OK (HTTP_REFUSE_NONE for OK). */
enum http_admit http_caps_admit(const struct http_caps_cfg *cfg,
    const struct http_caps_now *now, bool *evict, enum http_refusal *why);

/* The most connections one TCP address may hold, restricted ones included
 * (cfg->per_peer > 0): twice per_peer, at least per_peer +
 * HTTP_PEER_RESTRICTED_MIN. */
size_t http_caps_peer_max(const struct http_caps_cfg *cfg);

/* Name of a refusal for metrics and logs ("total", "users", "peer"). */
const char *http_refusal_name(enum http_refusal why);

#endif
