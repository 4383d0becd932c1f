/*
 * fence.h - the notice a supervisor sends when its agent is gone
 *
 * A supervisor whose agent died, and which no agent took over within the
 * orphan grace, kills its ranks and then tells the scheduler so in one
 * UDP datagram (docs/fault-tolerance.md "An agent that dies"):
 *
 *   LSF1 <node> <job> <attempt> <mac:64 hex>
 *
 * It means "no rank of this attempt on this node is alive, and no agent
 * holds them": a fact that stays true, so a replayed notice tells the
 * scheduler nothing new. The MAC is HMAC-SHA256 under the attempt's fence
 * key, derived from the node's key (cred.h), which the scheduler derives
 * from the cluster secret; the supervisor is given the fence key only
 * (spec.json), never the node's key. Pure: no I/O.
 */
#ifndef COMMON_FENCE_H
#define COMMON_FENCE_H

#include <stddef.h>
#include <stdint.h>

#include "common/cred.h"
#include "common/proto.h"

#define FENCE_MSG_MAX 256

struct fence_notice {
    char node[PROTO_NODE_NAME_MAX + 1];
    int64_t job;
    int attempt;
};

/* key (CRED_HEX_LEN + 1 bytes) = hex HMAC-SHA256(node_key,
 * "lockstep-fence-v1 <job> <attempt>"): one attempt's fence key. */
void fence_key(const unsigned char *node_key, int64_t job, int attempt,
    char *key);

/* Encode into buf (FENCE_MSG_MAX bytes); returns the length. */
size_t fence_notice_encode(const char *key, const struct fence_notice *n,
    char *buf);

/* Read node, job and attempt from the len bytes of buf without checking
 * the MAC (its key depends on them): -EINVAL when it is not a notice. */
int fence_notice_parse(const char *buf, size_t len, struct fence_notice *n);

/* 0 when buf's MAC is right under key, -EBADMSG when not, -EINVAL when
 * buf is not a notice. */
int fence_notice_verify(const char *key, const char *buf, size_t len);

#endif
