/*
 * fence.h - the scheduler's UDP port: fence notices and lease pings
 *
 * A supervisor whose agent died, and which no agent took over within the
 * orphan grace, kills its ranks and tells the scheduler so in a UDP
 * datagram (common/fence.h) sent to the TCP listener's address and port.
 * This receiver checks its MAC under the node's key of the cluster
 * secret (then of the previous one: a rotation) and hands a good one to
 * nodes_fenced, which replaces the attempt at once
 * (docs/fault-tolerance.md "An agent that dies"). A datagram that is no
 * notice, or whose MAC is wrong, is counted and logged (at most once a
 * minute), never acted on. A replica that is not serving ignores them.
 *
 * The same port answers the lease pings of busy nodes (common/leaseping.h,
 * docs/fault-tolerance.md "Short leases for busy nodes"): a good one is
 * the node heard from (nodes_pinged) and is answered with its lease.
 *
 * Threading: the loop thread only.
 */
#ifndef SCHEDULER_FENCE_H
#define SCHEDULER_FENCE_H

#include <stdint.h>

#include "common/err.h"

struct schedd;
struct fence_rx;

/* Bind UDP host:port (the TCP listener's, port already bound) and start
 * receiving. NULL with err set when it cannot bind. */
struct fence_rx *fence_rx_start(struct schedd *sd, const char *host, int port,
    struct err *err);
/* Stop and free (once the handle is closed). Accepts NULL. */
void fence_rx_close(struct fence_rx *rx);

/* What was received: good notices acted on, notices about nothing held
 * (repeats), and datagrams refused (neither a notice nor a ping, unknown
 * node, bad MAC); lease pings answered, not answered (a LOST node, a
 * scheduler not serving) and answers the socket would not take. */
struct fence_rx_counts {
    uint64_t acted, old, refused;
    uint64_t pings_answered, pings_ignored, pings_unsent;
};
void fence_rx_counts(const struct fence_rx *rx, struct fence_rx_counts *c);

#endif
