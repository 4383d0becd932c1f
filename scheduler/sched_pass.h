/*
 * sched_pass.h - the scheduling pass: which queued jobs go where
 *
 * PURE: the pass works on arrays the caller builds from its model (nodes
 * with their free resources, queued jobs with their requests) and writes
 * its decisions back into the job array. No I/O, no clock, no globals, so
 * unit tests drive it directly and the caller decides what to persist.
 *
 * Rules (sched.c), with the order and the node choice left to a policy
 * (struct sched_policy; sched_fifo.c is the default):
 *  - jobs are taken in policy order;
 *  - gang placement: all of a job's `nodes` nodes or none;
 *  - a node fits when it is schedulable and has free CPUs ≥
 *    ranks_per_node × cpus_per_rank, free GPUs ≥ gpus_per_node and free
 *    memory ≥ memory_mb_per_node;
 *  - a job that could not fit even on the schedulable nodes were they
 *    empty does not block anyone (it waits for the cluster to change);
 *    its reason is sched_fits_ever's when it could not fit on all the
 *    nodes either, so a job accepted with "wait_for_nodes" pends with the
 *    reason a refused one got;
 *  - a job that would fit on the empty cluster but not now blocks every
 *    job after it in the order, so big jobs are not starved by a stream
 *    of small ones; those get the reason "waiting behind job N";
 *  - restart in place: a restarting job goes before every other job (it
 *    does not go back to the end of the queue); the nodes reserved for it
 *    (sched_node.reserved_for) are used by no other job, and it takes its
 *    preferred nodes first, in their order (its healthy nodes keep their
 *    node ranks);
 *  - a job whose user already has user_max jobs running (PLACED, RUNNING
 *    or RESTARTING, counted by the caller) waits with the reason "user
 *    alice has 2 running jobs; the limit is 2 (user_max_running_jobs)"
 *    and blocks no one; a restarting job is not held back by it (it is
 *    counted already);
 *  - a job's excluded nodes (blamed for its recent failures) are not used
 *    for it - unless the cluster has too few other schedulable nodes for
 *    it to fit even when empty, then they are used last, so a small
 *    cluster still recovers. A job that cannot fit for lack of
 *    non-excluded nodes that are merely busy waits (and blocks).
 *
 * (Named sched_pass.h, not sched.h: meson puts this directory on the
 * include path, where a sched.h would shadow the system's <sched.h>.)
 *
 * Cost: O(nodes log nodes) to index the nodes (sched_index.h), then per
 * job examined before the first blocked job O(groups + nodes it needs ×
 * log nodes), where groups are the distinct (free GPUs, free CPUs) pairs
 * (few), or O(nodes log nodes) for a job that prefers or excludes nodes
 * (a restart in place); O(nodes) per distinct request shape for the
 * "could it ever fit" test and once for the blocked job's reason; jobs
 * behind the blocker cost O(1) each; the queue is sorted (O(jobs log
 * jobs)) only when it is not given in policy order.
 */
#ifndef SCHEDULER_SCHED_PASS_H
#define SCHEDULER_SCHED_PASS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SCHED_REASON_MAX 256

struct sched_node {
    const char *name; /* borrowed */
    bool schedulable; /* UP or SUSPECT */
    bool suspect;     /* SUSPECT: placed last, whatever the policy */
    int cpus;         /* totals */
    int64_t memory_mb;
    size_t ngpus;
    int free_cpus; /* what is free now; the pass consumes */
    int64_t free_memory_mb;
    int *free_gpus; /* ascending ids (caller's array); the pass
                     * removes the ids it assigns */
    size_t nfree_gpus;
    int64_t reserved_for; /* a restarting job's id: no other job may
                           * use it; 0: none */
    /* Master ports free on it (the pass consumes one for each job it
     * makes node rank 0 here); the pass takes the last one as taking
     * all its free resources. 0: not counted (a node with none free is
     * given as having nothing free). */
    int free_masters;
    void *data; /* the caller's node */
};

struct sched_job {
    int64_t id;
    int priority;
    int nodes;
    int ranks_per_node;
    int gpus_per_node;
    int cpus_per_rank;
    int64_t memory_mb_per_node;
    bool restarting;      /* restart in place: goes first */
    const size_t *prefer; /* node indices to use first, in order */
    size_t nprefer;
    const size_t *exclude; /* node indices blamed for its failures */
    size_t nexclude;
    /* The running-jobs limit of its user: a job that is not restarting is
     * not placed while *user_running >= user_max (and does not block
     * others); each placement adds one. NULL or 0: no limit. Jobs of one
     * user share the counter (the caller's). */
    const char *user; /* for the reason; borrowed */
    int *user_running;
    int user_max;
    void *data; /* the caller's job */

    /* Results, set by sched_pass. */
    bool placed;
    size_t *node_idx;              /* `nodes` indices into the node array, by
                                    * node rank; NULL unless placed */
    int *gpus;                     /* nodes × gpus_per_node ids, node-rank
                                    * major; NULL unless placed with GPUs */
    char reason[SCHED_REASON_MAX]; /* why not placed ("" when placed) */
    bool blocked; /* not placed, and every job after it waits for it */
    bool never;   /* not placed: it could never fit on the schedulable
                   * nodes, whatever is free (reason says why) */
};

struct sched_policy {
    const char *name;
    /* Queue order: negative when a goes first. */
    int (*job_cmp)(const struct sched_job *a, const struct sched_job *b);
    /* Among fitting nodes, negative when a is the better choice. It may
     * look only at nfree_gpus, free_cpus and name (the placement index
     * groups nodes by the first two, sched_index.h). */
    int (*node_cmp)(const struct sched_node *a, const struct sched_node *b);
};

/* Priority (higher first), then submission order (lower id first); nodes
 * by best fit: fewest free GPUs, then fewest free CPUs, then name, so that
 * big holes stay big (less fragmentation). */
extern const struct sched_policy sched_policy_fifo;
/* Priority and submission order as fifo; nodes by worst fit: most free
 * GPUs, then most free CPUs, then name (sched_spread.c). */
extern const struct sched_policy sched_policy_spread;
/* fifo's job order: priority (higher first), then lower id first. */
int sched_job_cmp_priority(const struct sched_job *a,
    const struct sched_job *b);

/* The policy called name ("fifo"), or NULL when there is none. */
const struct sched_policy *sched_policy_find(const char *name);
/* The names of every policy, comma-separated, for messages. */
const char *sched_policy_names(void);

/* Run one pass over jobs (any order; the pass orders them by the policy
 * without moving them, and sorts nothing when they come in that order). At most
 * max_place jobs are placed; jobs that fit beyond that get the reason "no free
 * master port". Results go into each job; free resources in nodes are reduced
 * by what was placed. */
void sched_pass(const struct sched_policy *policy, struct sched_node *nodes,
    size_t nnodes, struct sched_job *jobs, size_t njobs, size_t max_place);

/*
 * Whether job could ever run on nodes[0..n): some job->nodes of them each
 * have, in all, at least the CPUs (ranks_per_node × cpus_per_rank), GPUs
 * and memory it asks of a node. Their state is not looked at
 * (schedulable is ignored: a cordoned or lost node may come back), nor
 * what is free now, nor the job's preferred or excluded nodes. When it
 * could not, reason (len bytes) says what it needs and what is short, the
 * node count or which resource on how many nodes: "needs 5 nodes with 2
 * CPUs each; the cluster has 4 nodes", "needs 1 node with 1 CPU and
 * 10000000 MB memory; the cluster has 4 nodes, none with at least
 * 10000000 MB memory (the most any has is 16384 MB)". The submit check
 * (docs/api.md) refuses such a job.
 */
bool sched_fits_ever(const struct sched_node *nodes, size_t n,
    const struct sched_job *job, char *reason, size_t len);

/*
 * Whether job could never fit on the schedulable nodes of nodes[0..n) even
 * were they empty (the test the pass makes before it tries a job; free
 * resources, preferred and excluded nodes are not looked at). When it
 * could not, reason (len bytes) gets the reason the pass would give it:
 * sched_fits_ever's when all the nodes would not do either, else what is
 * short among the schedulable ones. O(n).
 */
bool sched_never_fits(const struct sched_node *nodes, size_t n,
    const struct sched_job *job, char *reason, size_t len);

/* Free a job's result arrays (not the job). */
void sched_job_release(struct sched_job *job);

#endif
