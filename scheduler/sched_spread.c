/*
 * sched_spread.c - priority and FIFO, placing each job on the emptiest nodes
 *
 * The job order is the default policy's (sched_fifo.c); the node choice is
 * the opposite, worst fit: among the nodes a job fits on, take those with
 * the most free GPUs, then the most free CPUs. Small jobs then spread over
 * the cluster instead of packing onto few nodes, which suits clusters of
 * CPU-bound or I/O-bound jobs that slow each other down when packed. Large
 * gang jobs may wait longer behind it, since no node stays whole.
 */
#include "scheduler/sched_pass.h"

#include <string.h>

static int
spread_node_cmp(const struct sched_node *a, const struct sched_node *b)
{
    if (a->nfree_gpus != b->nfree_gpus)
        return a->nfree_gpus > b->nfree_gpus ? -1 : 1;
    if (a->free_cpus != b->free_cpus)
        return a->free_cpus > b->free_cpus ? -1 : 1;
    return strcmp(a->name, b->name);
}

const struct sched_policy sched_policy_spread = {
    .name = "spread",
    .job_cmp = sched_job_cmp_priority,
    .node_cmp = spread_node_cmp,
};
