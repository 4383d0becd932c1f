/*
 * nodes_health.h - what a node's health findings do: state, exclusion,
 * events, acknowledgements
 *
 * docs/fault-tolerance.md "Node health". health.h decides (pure); this
 * applies: each agent report's health goes through health_apply, the
 * findings and checks that changed are written, every finding opened,
 * latched or cleared is an event (health_finding_opened,
 * health_finding_excluding, health_finding_cleared), and the node's state
 * goes through event_node. A node that its findings newly exclude is
 * excluded through the one recovery path (recovery_exclude, HEALTH): the
 * jobs there fail as node_excluded (the infrastructure's budget, no blame)
 * and restart elsewhere from their latest complete checkpoint. Each such
 * exclusion counts for the flap rule.
 *
 * Automatic exclusions belong to their findings: an operator's uncordon
 * does not clear them (nodes.h); an acknowledgement does (nodes_health_ack)
 * and a cordon is never cleared by a passing check.
 */
#ifndef SCHEDULER_NODES_HEALTH_H
#define SCHEDULER_NODES_HEALTH_H

#include <stddef.h>
#include <stdint.h>

#include "common/proto.h"
#include "scheduler/schedd.h"

/* Apply the health (may be NULL: an agent without checks, which changes
 * nothing) of node's report from agent agent_id at now. */
int nodes_health_report(struct schedd *sd, struct node *node,
    const char *agent_id, const struct proto_health *health, int64_t now);

/*
 * Raise a soft finding on node from the scheduler itself (check
 * "scheduler"): code names what (e.g. "straggler"), scope what it is
 * about (e.g. "job:12"; one finding per scope), evidence the figures. The
 * node becomes SUSPECT; when open findings of one code span
 * straggler_jobs_exclude scopes, it is excluded. Raising it again renews
 * it (it expires health_soft_expire_ms after it was last raised).
 */
int nodes_soft_finding(struct schedd *sd, struct node *node, const char *code,
    const char *scope, const char *evidence);

/*
 * An operator (actor) acknowledges finding ("code" or "code@scope") of
 * node with reason: the open findings it names close ("ack"), whatever
 * their latch; acknowledging health.flapping also forgets the exclusions
 * counted. -ENOENT when no open finding matches.
 */
int nodes_health_ack(struct schedd *sd, struct node *node, const char *actor,
    const char *finding, const char *reason);

/* From the tick (every few seconds): drop the scheduler's soft findings
 * that expired (health_soft_expire_ms), also on nodes whose agents send
 * no health. */
void nodes_health_tick(struct schedd *sd, int64_t now);

/* Why the node's health keeps it out or makes it SUSPECT, into buf; ""
 * when nothing does. */
const char *nodes_health_reason(const struct node *node, char *buf, size_t len);

#endif
