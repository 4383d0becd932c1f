/*
 * nodes.h - what happens to nodes: registration, loss, cordons, releases
 *
 * A node is created by its agent's first status report and updated when
 * its resources or agent change. It is LOST when no status arrived for
 * node_timeout_ms: its attempts fail (node_lost) and everything it held is
 * released. An operator cordons a node (no new work; DRAINING while jobs
 * still hold it) and may evict its jobs (they restart elsewhere, not
 * counted as blame); uncordon clears a cordon and a blame exclusion, not
 * the exclusion of a health finding (nodes_health.h). A cordon is a
 * person's: who and when are kept (cordon_by, cordon_at_ms), and nothing
 * automatic clears it.
 * Every change of the state people see goes through event_node.
 *
 * Heartbeats must not each cost an fsync: last_seen is kept in memory and
 * written by nodes_persist_last_seen, batched, every few seconds (tick.c).
 */
#ifndef SCHEDULER_NODES_H
#define SCHEDULER_NODES_H

#include <stdbool.h>
#include <stdint.h>

#include "common/proto.h"
#include "scheduler/schedd.h"

/*
 * The agent of rep->node reported at now: create the node the first time
 * (event node_registered), bring its resources and agent identity up to
 * date (node_registered for a new agent process, else node_updated), note
 * that it was heard from (a LOST node comes back). *fresh_agent: a
 * registration or a new agent process.
 */
int nodes_report(struct schedd *sd, const struct proto_node_report *rep,
    int64_t now, struct node **out, bool *fresh_agent);
/* Any request from the node's agent shows it is there. */
void nodes_heard(struct schedd *sd, struct node *node);
/* A status report from the node's agent arrived at now (wall clock): it
 * is heard from, and a LOST node comes back. */
int nodes_seen(struct schedd *sd, struct node *node, int64_t now);
/* A lease ping from the node's agent arrived at now (wall clock) and mono
 * (monotonic): it is heard from as by a status, unless it is LOST (only
 * a status brings it back) or being removed. Whether it was heard, and so
 * may be answered: an answer renews leases, which the gate may count on
 * only for a node whose silence it measures. stopping: its agent stops on
 * purpose; the node's answers grant the long lease again until its pings
 * say otherwise. */
bool nodes_pinged(struct schedd *sd, struct node *node, int64_t now,
    int64_t mono, bool stopping);
/* The connection of the node's last long poll closed and nothing was
 * heard since: no new work there until it returns. */
void nodes_agent_gone(struct schedd *sd, struct node *node);
/*
 * The supervisor of attempt `attempt` of `job` on node said, in its
 * authenticated fence notice (scheduler/fence.c), that every rank it held
 * is dead and no agent holds them: the attempt fails (node_lost) and the
 * node's part of it is released at once, without waiting for the node's
 * timeout and its witnesses (docs/fault-tolerance.md "An agent that
 * dies"). A node whose agent connection closed becomes LOST. No-op when
 * the node holds no such attempt. 0 or a negative errno (the database).
 */
int nodes_fenced(struct schedd *sd, struct node *node, int64_t job,
    int attempt);

/* From the tick: nodes silent for node_timeout_ms are LOST; nodes being
 * removed that nothing holds any more are forgotten. */
int nodes_tick(struct schedd *sd, int64_t mono);
/* The scheduler's loop made no progress for stall_ms up to mono (tick.c
 * measures it): no node's silence counts that time (node_stalled). */
void nodes_stalled(struct schedd *sd, int64_t mono, int64_t stall_ms);
/* Write every node's last_seen that changed (one batch). */
void nodes_persist_last_seen(struct schedd *sd);

/* Mark the ranks of placement p lost and fail its attempt (if active)
 * with `kind` (POLICY_KIND_NODE_LOST or POLICY_KIND_LOST_RANKS). */
int nodes_placement_lost(struct schedd *sd, struct placement *p,
    enum policy_kind kind, const char *why);
/* The agent of p's node no longer holds p's attempt: free its resources
 * (persisted), and drop the attempt once nothing holds it. */
int nodes_release(struct schedd *sd, struct placement *p);

/*
 * An operator (actor) cordons or uncordons node with reason (may be "").
 * Uncordon also clears a blame exclusion (the operator vouches for the
 * node), not a health finding's. evict (cordon only) fails the jobs running
 * there now, as node_excluded without blame. The event is recorded even when
 * the state shown does not change (a second cordon, a LOST node).
 */
int nodes_cordon(struct schedd *sd, struct node *node, const char *actor,
    bool cordon, const char *reason, bool evict);

/*
 * An operator (actor) drains node with reason: no new work, the jobs
 * there finish (DRAINING), then it is CORDONED (nodes_release moves it).
 * A cordon whose `drain` is set; uncordon returns it. Event node_drain
 * {from, to, reason}, always (node_cordoned follows when its jobs have
 * ended).
 */
int nodes_drain(struct schedd *sd, struct node *node, const char *actor,
    const char *reason);

/*
 * An operator (actor) removes node: the scheduler forgets it (event
 * node_removed; it leaves the listings, and a node of that name that
 * reports later registers as new). A node that jobs hold is refused
 * (-EBUSY) unless force: then it is cordoned, the attempts running there
 * fail as node_excluded without blame (as cordon --evict without the
 * checkpoint: they restart elsewhere), and it is forgotten once its agent
 * has released them (or it went LOST), by nodes_tick; *pending says so.
 * A LOST node holds nothing. After a return with *pending false, node is
 * gone.
 */
int nodes_remove(struct schedd *sd, struct node *node, const char *actor,
    bool force, bool *pending);

#endif
