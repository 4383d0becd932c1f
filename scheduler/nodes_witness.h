/*
 * nodes_witness.h - the witnesses of nodes, as the scheduler sees them
 *
 * W(N) is a function of the node table only (common/witness.h's
 * witness_pick over every known node's name and "rack" label), so a
 * restarted scheduler computes the same sets as before. Each status
 * reply carries W(N); the set last sent is remembered too, and a silent
 * node's jobs are replaced only when both sets allow it
 * (docs/fault-tolerance.md "Scheduler outages").
 */
#ifndef SCHEDULER_NODES_WITNESS_H
#define SCHEDULER_NODES_WITNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/proto.h"
#include "common/witness.h"

struct node;
struct schedd;

/* W(node) now: at most WITNESS_MAX nodes into out; returns how many. */
size_t nodes_witness_set(struct schedd *sd, const struct node *node,
    struct node **out);

/* Fill reply's witnesses with W(node) and remember them as sent (in the
 * database too, when they changed). 0 or a negative errno (recorded). */
int nodes_witness_reply(struct schedd *sd, struct node *node,
    struct proto_status_reply *reply);

/* The node's agent answers witness queries on port (0: none): kept, in
 * the database too. 0 or a negative errno (recorded). */
int nodes_witness_port(struct schedd *sd, struct node *node, int port);

/* A status from node arrived (monotonic now): its contact goes on, or
 * starts anew after a gap over lease_ms. */
void nodes_witness_seen(struct schedd *sd, struct node *node, int64_t mono);

/*
 * Whether the silent node's jobs may be replaced at mono: it has no
 * witnesses, or it has been silent for witness_silence_ms and a majority
 * of W(node), and of the set last sent to it, has been in continuous
 * contact for node_timeout_ms. When not, why (cap bytes) says what is
 * awaited.
 */
bool nodes_witness_may_replace(struct schedd *sd, const struct node *node,
    int64_t mono, char *why, size_t cap);

#endif
