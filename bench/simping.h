/*
 * simping.h - lockstep-sim's lease pings (common/leaseping.h)
 *
 * One UDP socket for every simulated node of the process: pings go to
 * the scheduler's TCP host and port (where lockstepd reads them), the
 * answers come back to it and are checked under the node's lease key.
 */
#ifndef BENCH_SIMPING_H
#define BENCH_SIMPING_H

#include <stdint.h>
#include <uv.h>

#include "common/err.h"

struct cred_mac_key;
struct simping;

/* The lease key of node (leaseping_key_create), NULL when unknown. */
typedef struct cred_mac_key *simping_key_fn(void *arg, const char *node);

/* Pings to server ("http://IPv4:port", or https); NULL with err set
 * when server is not of that form or no socket can be opened. */
struct simping *simping_create(uv_loop_t *loop, const char *server,
    simping_key_fn *key_of, void *arg, struct err *err);
/* One ping of node, numbered seq, under its lease key. */
void simping_send(struct simping *p, const char *node, struct cred_mac_key *key,
    uint64_t seq);
/* Pings sent, answers that verified, answers refused; since the last
 * call (the counts are reset). */
void simping_counts(struct simping *p, uint64_t *sent, uint64_t *answered,
    uint64_t *bad);

#endif
