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

struct config;
struct err;
struct node;
struct schedd;
struct schedd_opts;

/* W(node) now: at most WITNESS_MAX nodes into out; returns how many.
 * Each node keeps its set (ranked over the table the first time), so
 * the table must say when it changes: */
size_t nodes_witness_set(struct schedd *sd, struct node *node,
    struct node **out);
/* m was added to the table (offered to every kept set: O(nodes)). */
void nodes_witness_joined(struct schedd *sd, struct node *m);
/* m leaves the table, or its rack is about to change (then call
 * nodes_witness_joined after): the sets holding it are ranked anew. */
void nodes_witness_left(struct schedd *sd, struct node *m);

/* Fill reply's witnesses with W(node) and remember them as sent (in the
 * database too, when they changed). 0 or a negative errno (recorded). */
int nodes_witness_reply(struct schedd *sd, struct node *node,
    struct proto_status_reply *reply);

/* The node's agent answers witness queries on port (0: none): kept, in
 * the database too. 0 or a negative errno (recorded). */
int nodes_witness_port(struct schedd *sd, struct node *node, int port);

/* A status or a lease ping from node arrived (monotonic now): its
 * contact goes on, or starts anew after a gap over lease_ms. */
void nodes_witness_seen(struct schedd *sd, struct node *node, int64_t mono);

/*
 * The lease to grant node in an answer given now (a status reply, a
 * lease ping's answer, its desired state), and the status interval its
 * witness rule counts with while that answer is its last success:
 * short_lease_ms and lease_ping_ms when its lease pings are heard (one
 * within NODES_WITNESS_PING_TRUST_MS) and its agent did not say it
 * stops; lease_ms and heartbeat_ms otherwise. Remembers
 * the latest end of what was granted (node->told_until_mono), which the
 * gate waits past.
 */
void nodes_witness_grant(struct schedd *sd, struct node *node,
    int64_t *lease_ms, int64_t *interval_ms);
/* The node's desired state is sent to it now: its agent starts a new
 * attempt with the lease of the last grant it received, from the start,
 * which the gate must wait past too. */
void nodes_witness_dispatch(struct schedd *sd, struct node *node);
/* How long after its last lease ping a node is still granted short
 * leases (its pings are trusted to resume: an idle agent pings every
 * 10 s, a busy one every lease_ping_ms). */
#define NODES_WITNESS_PING_TRUST_MS 60000

/*
 * The lease settings of the configuration (lease_ms, lease_ping_ms,
 * short_lease_ms) into o, checked against node_timeout_ms (already in o)
 * as the gate needs them. 0 or -EINVAL with err set.
 */
int nodes_witness_conf(const struct config *cfg, struct schedd_opts *o,
    struct err *err);

/*
 * Whether the silent node's jobs may be replaced at mono. With no
 * witnesses: once every lease granted to it has run out. Otherwise a
 * majority of W(node), and of the set last sent to it, must have been in
 * continuous contact for node_timeout_ms, each heard at least once in
 * every stretch of some gap g; and mono must be past
 * witness_replace_at(node->told_until_mono, g), the latest end of a
 * lease its witnesses can have extended. When not, why (cap bytes) says
 * what is awaited.
 */
bool nodes_witness_may_replace(struct schedd *sd, struct node *node,
    int64_t mono, char *why, size_t cap);

#endif
