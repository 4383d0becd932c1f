/*
 * leaseping.h - the lease ping: a busy node renews its leases over UDP
 *
 * An agent that holds supervised attempts renews their leases every
 * ping_ms with one datagram to the scheduler's UDP port (the fence port:
 * the TCP listener's host and port), and the scheduler answers it with
 * the lease it grants (docs/fault-tolerance.md "Short leases for busy
 * nodes"):
 *
 *   LSP1 <node> <seq> run|stop <mac:64 hex>
 *   LSA1 <node> <seq> <lease_ms> <interval_ms> <mac:64 hex>
 *
 * A ping means "node is alive and asks for a lease"; "stop": its agent
 * is stopping on purpose (an upgrade) and asks for the long lease, which
 * its successor has time to renew, instead of the short one. Its answer
 * means
 * "the scheduler heard the ping numbered seq and grants lease_ms from its
 * send; interval_ms is the status interval of this grant" (the interval
 * the agent's witness rule uses while this is its last success). The
 * agent matches seq with the pings it sent, so an old answer replayed is
 * worth nothing. Both MACs are HMAC-SHA256 under the node's lease key,
 * derived from the node's key for this purpose only. Pure: no I/O.
 */
#ifndef COMMON_LEASEPING_H
#define COMMON_LEASEPING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/cred.h"
#include "common/proto.h"

#define LEASEPING_MSG_MAX 256

struct leaseping {
    char node[PROTO_NODE_NAME_MAX + 1];
    uint64_t seq;
    bool stopping;
};

struct leaseping_ack {
    char node[PROTO_NODE_NAME_MAX + 1];
    uint64_t seq;
    int64_t lease_ms;
    int64_t interval_ms;
};

/* key (CRED_HEX_LEN + 1 bytes) = hex HMAC-SHA256(node_key,
 * "lockstep-lease-v1"): the text of the lease key. */
void leaseping_key(const unsigned char *node_key, char *key);
/* That key made ready for the MACs below (cred_mac_key_destroy frees
 * it). The scheduler keeps one per node: readying a key is half the
 * cost of each MAC. */
struct cred_mac_key *leaseping_key_create(const unsigned char *node_key);

/* Whether the len bytes of buf start like a ping (a fence notice or
 * anything else does not). */
bool leaseping_is_ping(const char *buf, size_t len);

/* Encode into buf (LEASEPING_MSG_MAX bytes) under the lease key; returns
 * the length. */
size_t leaseping_encode(struct cred_mac_key *key, const struct leaseping *p,
    char *buf);
size_t leaseping_ack_encode(struct cred_mac_key *key,
    const struct leaseping_ack *a, char *buf);

/* Read the node of a ping without checking the MAC (its key depends on
 * it): -EINVAL when buf is not a ping. */
int leaseping_parse(const char *buf, size_t len, struct leaseping *p);
/* Decode and check the MAC under the lease key: -EINVAL when buf is not
 * such a message, -EBADMSG when its MAC is wrong. */
int leaseping_decode(struct cred_mac_key *key, const char *buf, size_t len,
    struct leaseping *p);
int leaseping_ack_decode(struct cred_mac_key *key, const char *buf, size_t len,
    struct leaseping_ack *a);

#endif
