/*
 * sched_index.h - the nodes of one scheduling pass, grouped for placement
 *
 * PURE, and private to the pass (sched.c). Placing a job by scanning and
 * sorting every node costs O(nodes log nodes) per job, which at 10,000
 * nodes and a thousand placements a pass is seconds. The index groups the
 * schedulable nodes by what decides the policy's choice among them, their
 * free GPUs and free CPUs (plus SUSPECT, which always comes last), keeps
 * the groups in the policy's order and each group's nodes in name order
 * (a heap), so taking the best k nodes for a job costs O(groups + k log
 * nodes) and a node whose free resources changed moves in O(log nodes).
 * The groups are few: one per (free GPUs, free CPUs) value pair present.
 *
 * The order is the policy's node_cmp (sched_pass.h), which must look only
 * at nfree_gpus, free_cpus and name: groups are ordered by node_cmp of
 * two of their nodes with the names made equal, and nodes within a group
 * by name. That is the order the full scan gives a job that prefers and
 * excludes nothing, so both paths choose the same nodes.
 *
 * Nodes reserved for a restarting job (sched_node.reserved_for) are not
 * in the index (only their job, which takes the full scan, may use them),
 * nor are unschedulable nodes.
 */
#ifndef SCHEDULER_SCHED_INDEX_H
#define SCHEDULER_SCHED_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "scheduler/sched_pass.h"

struct sched_group;

struct sched_index {
    const struct sched_policy *policy;
    struct sched_node *nodes; /* borrowed: the pass's */
    size_t nnodes;
    size_t *rank;               /* per node: its place in name order */
    struct sched_group **group; /* per node: its group; NULL: not indexed */
    size_t *pos;                /* per node: its place in its group */
    struct sched_group **order; /* the groups, best first */
    size_t ngroups, cap;
};

/* Index nodes[0..n) for policy. Release with sched_index_release. */
void sched_index_init(struct sched_index *ix, const struct sched_policy *p,
    struct sched_node *nodes, size_t n);
void sched_index_release(struct sched_index *ix);

/* Take the k best indexed nodes (in policy order, then name) that have
 * at least gpus free GPUs, cpus free CPUs and memory_mb free memory into
 * out[0..k), removing them from the index. Returns false, taking nothing,
 * when fewer than k qualify. The caller consumes their resources and puts
 * each back with sched_index_update. */
bool sched_index_take(struct sched_index *ix, int64_t gpus, int64_t cpus,
    int64_t memory_mb, size_t k, size_t *out);
/* Node i's free resources changed, or it was taken: (re)file it under its
 * current values. A node that is not schedulable or is reserved stays out
 * of the index. */
void sched_index_update(struct sched_index *ix, size_t i);

#endif
