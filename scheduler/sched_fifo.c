/*
 * sched_fifo.c - the default policy: priority, then first come first served
 *
 * Node choice is best fit: among the nodes a job fits on, take those with
 * the fewest free GPUs, then the fewest free CPUs. A job that needs two
 * GPUs lands on the node that has exactly two left rather than breaking
 * into an idle eight-GPU node a later job will need whole.
 */
#include "scheduler/sched_pass.h"

#include <string.h>

static int
fifo_node_cmp(const struct sched_node *a, const struct sched_node *b)
{
    if (a->nfree_gpus != b->nfree_gpus)
        return a->nfree_gpus < b->nfree_gpus ? -1 : 1;
    if (a->free_cpus != b->free_cpus)
        return a->free_cpus < b->free_cpus ? -1 : 1;
    return strcmp(a->name, b->name);
}

const struct sched_policy sched_policy_fifo = {
    .name = "fifo",
    .job_cmp = sched_job_cmp_priority,
    .node_cmp = fifo_node_cmp,
};
