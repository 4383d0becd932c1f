/*
 * test_sched.c - the scheduling pass over arrays of nodes and jobs
 *
 * No loop, no database: sched_pass is pure, so each case builds a small
 * cluster, runs one pass and checks the placements and reasons.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/attempt.h"
#include "scheduler/node.h"
#include "scheduler/sched_pass.h"
#include "tests/tap.h"

#define MAXN 16

struct cluster {
    struct sched_node nodes[MAXN];
    int gpus[MAXN][16];
    char names[MAXN][16]; /* add_nodes' copies of the names */
    size_t n;
};

/* A schedulable node with cpus, memory and GPUs 0..ngpus-1, all free. */
static struct sched_node *
add_node(struct cluster *c, const char *name, int cpus, int64_t mem, int ngpus)
{
    struct sched_node *n = &c->nodes[c->n];

    memset(n, 0, sizeof(*n));
    n->name = name;
    n->schedulable = true;
    n->cpus = n->free_cpus = cpus;
    n->memory_mb = n->free_memory_mb = mem;
    n->ngpus = n->nfree_gpus = (size_t)ngpus;
    for (int g = 0; g < ngpus; g++)
        c->gpus[c->n][g] = g;
    n->free_gpus = c->gpus[c->n];
    c->n++;
    return n;
}

static struct sched_job
mkjob(int64_t id, int prio, int nodes, int rpn, int gpus, int cpr)
{
    struct sched_job j;

    memset(&j, 0, sizeof(j));
    j.id = id;
    j.priority = prio;
    j.nodes = nodes;
    j.ranks_per_node = rpn;
    j.gpus_per_node = gpus;
    j.cpus_per_rank = cpr;
    return j;
}

/* add_node for each of the space-separated names, alike. */
static void
add_nodes(struct cluster *c, const char *names, int cpus, int64_t mem,
    int ngpus)
{
    const char *p = names;

    while (*p) {
        size_t len = strcspn(p, " ");

        snprintf(c->names[c->n], sizeof(c->names[c->n]), "%.*s", (int)len, p);
        add_node(c, c->names[c->n], cpus, mem, ngpus);
        p += len + (p[len] == ' ');
    }
}

/* A restarting job that prefers (keeps) and excludes the given nodes. */
static void
restarting(struct sched_job *j, size_t *prefer, size_t nprefer, size_t *exclude,
    size_t nexclude)
{
    j->restarting = true;
    j->prefer = prefer;
    j->nprefer = nprefer;
    j->exclude = exclude;
    j->nexclude = nexclude;
}

/* One FIFO pass over the cluster, placing up to 100 jobs. */
static void
pass(struct cluster *c, struct sched_job *jobs, size_t n)
{
    sched_pass(&sched_policy_fifo, c->nodes, c->n, jobs, n, 100);
}

static const char *
placed_on(const struct cluster *c, const struct sched_job *j, int k)
{
    return j->placed ? c->nodes[j->node_idx[k]].name : "(none)";
}

static void
release(struct sched_job *jobs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sched_job_release(&jobs[i]);
}

static void
test_gang(void)
{
    struct cluster c = { .n = 0 };
    struct sched_job jobs[2];

    add_nodes(&c, "a b", 8, 1000, 4);
    add_node(&c, "c", 8, 1000, 2);
    jobs[0] = mkjob(1, 0, 3, 1, 4, 1); /* needs 3 nodes with 4 GPUs */
    jobs[1] = mkjob(2, 0, 2, 1, 4, 1);
    pass(&c, jobs, 2);
    ok(!jobs[0].placed, "gang: 3x4 GPUs with only 2 such nodes is not placed");
    is_int(c.nodes[0].nfree_gpus + c.nodes[1].nfree_gpus, 0,
        "gang: the job that fits took both 4-GPU nodes");
    ok(jobs[1].placed, "gang: a 2-node job that fits is placed");
    is_str(jobs[0].reason,
        "needs 3 nodes with 4 GPUs and 1 CPU each; the cluster has 3 nodes, "
        "only 2 with at least 4 GPUs",
        "gang: never-fit reason");
    release(jobs, 2);
}

static void
test_best_fit(void)
{
    struct cluster c = { .n = 0 };
    struct sched_job jobs[2];

    add_node(&c, "big", 16, 1000, 8);
    add_node(&c, "small", 16, 1000, 2);
    add_node(&c, "mid", 16, 1000, 4);
    jobs[0] = mkjob(1, 0, 1, 1, 2, 1);
    jobs[1] = mkjob(2, 0, 1, 1, 0, 1);
    pass(&c, jobs, 2);
    is_str(placed_on(&c, &jobs[0], 0), "small",
        "best fit: a 2-GPU job goes to the node with exactly 2 free GPUs");
    is_str(placed_on(&c, &jobs[1], 0), "small",
        "best fit: a CPU-only job goes where no GPUs are left");
    release(jobs, 2);

    memset(&c, 0, sizeof(c));
    add_node(&c, "x2", 32, 1000, 0);
    add_node(&c, "x1", 8, 1000, 0);
    jobs[0] = mkjob(1, 0, 1, 4, 0, 1);
    pass(&c, jobs, 1);
    is_str(placed_on(&c, &jobs[0], 0), "x1",
        "best fit: fewest free CPUs breaks the tie");
    release(jobs, 1);

    memset(&c, 0, sizeof(c));
    add_nodes(&c, "n2 n1", 8, 1000, 0);
    jobs[0] = mkjob(1, 0, 2, 1, 0, 1);
    pass(&c, jobs, 1);
    is_str(placed_on(&c, &jobs[0], 0), "n1", "equal nodes: by name (rank 0)");
    is_str(placed_on(&c, &jobs[0], 1), "n2", "equal nodes: by name (rank 1)");
    release(jobs, 1);
}

static void
test_fragmentation(void)
{
    struct cluster c = { .n = 0 };
    struct sched_job jobs[3];

    /* 4 nodes × 8 GPUs; three jobs take 6 GPUs on three of them: 6 GPUs
     * are free in total (2+2+2) plus a whole node, but a 2-node job
     * needing 4 GPUs each finds only one node. */
    add_nodes(&c, "a b c d", 64, 1000, 8);
    jobs[0] = mkjob(1, 0, 3, 1, 6, 1);
    pass(&c, jobs, 1);
    ok(jobs[0].placed, "fragmentation: first job placed");
    release(jobs, 1);
    jobs[0] = mkjob(2, 0, 2, 1, 4, 1);
    jobs[1] = mkjob(3, 0, 1, 1, 2, 1);
    pass(&c, jobs, 2);
    ok(!jobs[0].placed, "fragmentation: 2 nodes × 4 GPUs do not fit");
    is_str(jobs[0].reason, "needs 2 nodes with 4 free GPUs, 1 matches",
        "fragmentation: the reason names GPUs and how many nodes match");
    ok(!jobs[1].placed, "fragmentation: the blocked job holds back the next");
    is_str(jobs[1].reason, "waiting behind job 2",
        "fragmentation: the next job waits behind it");
    release(jobs, 2);
}

static void
test_blocked_vs_never(void)
{
    struct cluster c = { .n = 0 };
    struct sched_job jobs[4];

    add_nodes(&c, "a b", 8, 1000, 4);
    c.nodes[1].nfree_gpus = 0; /* b's GPUs are busy */
    c.nodes[1].free_cpus = 2;
    jobs[0] = mkjob(1, 10, 5, 1, 1, 1); /* 5 nodes: never fits */
    jobs[1] = mkjob(2, 5, 2, 1, 4, 1);  /* fits empty, not now: blocks */
    jobs[2] = mkjob(3, 0, 1, 1, 1, 1);  /* would fit, but behind 2 */
    jobs[3] = mkjob(4, 0, 1, 1, 8, 1);  /* never fits: 8 GPUs */
    pass(&c, jobs, 4);
    ok(!jobs[0].placed, "never-fit job is not placed");
    is_str(jobs[0].reason,
        "needs 5 nodes with 1 GPU and 1 CPU each; the cluster has 2 nodes",
        "never-fit reason: too few nodes (the node count, not GPUs)");
    ok(!jobs[1].placed, "big job that fits an empty cluster is blocked");
    is_str(jobs[1].reason, "needs 2 nodes with 4 free GPUs, 1 matches",
        "blocked reason");
    ok(!jobs[2].placed, "small job behind the blocked one waits");
    is_str(jobs[2].reason, "waiting behind job 2", "waiting reason");
    ok(!jobs[3].placed, "never-fit job behind the blocker");
    is_str(jobs[3].reason,
        "needs 1 node with 8 GPUs and 1 CPU; the cluster has 2 nodes, none "
        "with at least 8 GPUs (the most any has is 4)",
        "never-fit keeps its own reason behind the blocker");
    ok(jobs[0].never && !jobs[1].never && !jobs[2].never && jobs[3].never,
        "never: set for the jobs that could never fit, before or behind the "
        "blocker, and for no other");
    ok(jobs[1].blocked && !jobs[0].blocked && !jobs[2].blocked,
        "blocked: set for the blocker alone");
    release(jobs, 4);

    /* The never-fit job does not block lower jobs. */
    memset(&c, 0, sizeof(c));
    add_node(&c, "a", 8, 1000, 4);
    jobs[0] = mkjob(1, 10, 2, 1, 0, 1);
    jobs[1] = mkjob(2, 0, 1, 1, 0, 1);
    pass(&c, jobs, 2);
    ok(!jobs[0].placed && jobs[1].placed,
        "a never-fit job does not block the next one");
    is_str(jobs[0].reason,
        "needs 2 nodes with 1 CPU each; the cluster has 1 node",
        "node-count reason");
    release(jobs, 2);

    /* CPUs and memory shortages are named. */
    memset(&c, 0, sizeof(c));
    add_node(&c, "a", 8, 1000, 0);
    c.nodes[0].free_cpus = 1;
    jobs[0] = mkjob(1, 0, 1, 2, 0, 2);
    pass(&c, jobs, 1);
    is_str(jobs[0].reason, "needs 1 node with 4 free CPUs, 0 match",
        "CPU shortage reason");
    release(jobs, 1);
    jobs[0] = mkjob(1, 0, 1, 1, 0, 1);
    jobs[0].memory_mb_per_node = 4096;
    pass(&c, jobs, 1);
    is_str(jobs[0].reason,
        "needs 1 node with 1 CPU and 4096 MB memory; the cluster has 1 node, "
        "none with at least 4096 MB memory (the most any has is 1000 MB)",
        "memory never-fit reason");
    release(jobs, 1);

    /* Unschedulable nodes do not count. */
    memset(&c, 0, sizeof(c));
    add_node(&c, "a", 8, 1000, 0);
    c.nodes[0].schedulable = false;
    jobs[0] = mkjob(1, 0, 1, 1, 0, 1);
    pass(&c, jobs, 1);
    ok(!jobs[0].placed, "a cordoned/lost node gets no work");
    release(jobs, 1);
}

static void
test_order(void)
{
    struct cluster c = { .n = 0 };
    struct sched_job jobs[3];

    add_node(&c, "a", 1, 1000, 0);
    jobs[0] = mkjob(5, 0, 1, 1, 0, 1);
    jobs[1] = mkjob(3, 0, 1, 1, 0, 1);
    jobs[2] = mkjob(9, 1, 1, 1, 0, 1);
    pass(&c, jobs, 3);
    ok(jobs[2].placed, "higher priority goes first");
    ok(!jobs[0].placed && !jobs[1].placed, "one CPU: only one job runs");
    is_str(jobs[1].reason, "needs 1 node with 1 free CPU, 0 match",
        "FIFO among equals: job 3 is next in line");
    is_str(jobs[0].reason, "waiting behind job 3",
        "FIFO among equals: job 5 waits behind job 3");
    release(jobs, 3);

    memset(&c, 0, sizeof(c));
    add_node(&c, "a", 2, 1000, 0);
    jobs[0] = mkjob(7, 0, 1, 1, 0, 1);
    jobs[1] = mkjob(2, 0, 1, 1, 0, 1);
    jobs[2] = mkjob(4, 0, 1, 1, 0, 1);
    pass(&c, jobs, 3);
    ok(jobs[1].placed && jobs[2].placed && !jobs[0].placed,
        "equal priority: lower ids first");
    release(jobs, 3);

    memset(&c, 0, sizeof(c));
    add_node(&c, "a", 8, 1000, 0);
    jobs[0] = mkjob(1, 0, 1, 1, 0, 1);
    jobs[1] = mkjob(2, 0, 1, 1, 0, 1);
    sched_pass(&sched_policy_fifo, c.nodes, c.n, jobs, 2, 1);
    ok(jobs[0].placed && !jobs[1].placed, "max_place limits placements");
    is_str(jobs[1].reason, "no free master port", "port limit reason");
    release(jobs, 2);
}

static void
test_gpu_ids(void)
{
    struct cluster c = { .n = 0 };
    struct sched_job jobs[2];

    add_node(&c, "a", 64, 1000, 8);
    c.gpus[0][0] = 1; /* free: 1 3 4 5 6 7 */
    c.gpus[0][1] = 3;
    c.gpus[0][2] = 4;
    c.gpus[0][3] = 5;
    c.gpus[0][4] = 6;
    c.gpus[0][5] = 7;
    c.nodes[0].nfree_gpus = 6;
    add_node(&c, "b", 64, 1000, 8);
    jobs[0] = mkjob(1, 0, 2, 2, 3, 1);
    pass(&c, jobs, 1);
    ok(jobs[0].placed, "GPU job placed");
    is_str(placed_on(&c, &jobs[0], 0), "a", "node rank 0 is the best fit");
    ok(jobs[0].gpus[0] == 1 && jobs[0].gpus[1] == 3 && jobs[0].gpus[2] == 4,
        "lowest free GPU ids on node a: %d %d %d", jobs[0].gpus[0],
        jobs[0].gpus[1], jobs[0].gpus[2]);
    ok(jobs[0].gpus[3] == 0 && jobs[0].gpus[4] == 1 && jobs[0].gpus[5] == 2,
        "GPU ids 0-2 on node b");
    is_int(c.nodes[0].nfree_gpus, 3, "node a has 3 GPUs left");
    is_int(c.nodes[0].free_gpus[0], 5, "node a's next free GPU is 5");
    is_int(c.nodes[0].free_cpus, 62, "CPUs consumed: ranks × cpus_per_rank");
    release(jobs, 1);
}

static void
test_many_shapes(void)
{
    struct cluster c = { .n = 0 };
    struct sched_job *jobs = calloc(300, sizeof(*jobs));
    int bad = 0;

    add_node(&c, "a", 8, 1000, 4);
    /* 300 distinct shapes that can never fit (more GPUs than any node),
     * then one that fits: the cache grows and every answer is right. */
    for (int i = 0; i < 299; i++)
        jobs[i] = mkjob(i + 1, 1, 1, 1, 5 + i, 1);
    jobs[299] = mkjob(1000, 0, 1, 1, 1, 1);
    pass(&c, jobs, 300);
    for (int i = 0; i < 299; i++) {
        char want[SCHED_REASON_MAX];

        snprintf(want, sizeof(want),
            "needs 1 node with %d GPUs and 1 CPU; the cluster has 1 node, "
            "none with at least %d GPUs (the most any has is 4)",
            5 + i, 5 + i);
        bad += jobs[i].placed || strcmp(jobs[i].reason, want) != 0;
    }
    is_int(bad, 0, "300 never-fit shapes each get their own reason");
    ok(jobs[299].placed, "and none of them blocks the job that fits");
    release(jobs, 300);
    free(jobs);
}

static void
test_rank_gpus(void)
{
    struct placement p;
    int ids[4] = { 4, 5, 6, 7 }, out[4];
    size_t n;

    memset(&p, 0, sizeof(p));
    p.gpus = ids;
    p.ngpus = 4;
    n = attempt_rank_gpus(&p, 2, 1, out);
    ok(n == 2 && out[0] == 6 && out[1] == 7,
        "4 GPUs, 2 ranks: rank 1 gets its own slice 6,7");
    n = attempt_rank_gpus(&p, 4, 3, out);
    ok(n == 1 && out[0] == 7, "4 GPUs, 4 ranks: one each");
    n = attempt_rank_gpus(&p, 3, 0, out);
    ok(n == 4, "4 GPUs, 3 ranks (not divisible): every rank sees all");
    n = attempt_rank_gpus(&p, 8, 0, out);
    ok(n == 4, "fewer GPUs than ranks: every rank sees all");
    p.ngpus = 0;
    is_int(attempt_rank_gpus(&p, 2, 0, out), 0, "no GPUs: empty list");
}

static void
test_restart_in_place(void)
{
    struct cluster c = { .n = 0 };
    struct sched_job jobs[3];
    size_t prefer[2], exclude[1];

    /* Job 7 ran on n3 (node rank 0) and n1 (node rank 1); n1 was blamed.
     * It keeps n3 (reserved for it) and gets a replacement; n2 is the best
     * fit otherwise but n3 comes first, as node rank 0 again. */
    add_nodes(&c, "n1 n2 n3 n4", 8, 1000, 0);
    c.nodes[2].reserved_for = 7;
    prefer[0] = 2;
    exclude[0] = 0;
    jobs[0] = mkjob(1, 100, 1, 8, 0, 1); /* pending, high priority */
    jobs[1] = mkjob(7, 0, 2, 1, 0, 1);   /* restarting */
    restarting(&jobs[1], prefer, 1, exclude, 1);
    pass(&c, jobs, 2);
    ok(jobs[1].placed, "restart in place: the restarting job is placed");
    is_str(placed_on(&c, &jobs[1], 0), "n3",
        "its kept node first, keeping node rank 0");
    is_str(placed_on(&c, &jobs[1], 1), "n2",
        "the replacement is not the blamed node");
    ok(jobs[0].placed, "the pending job gets what is left");
    is_str(placed_on(&c, &jobs[0], 0), "n1",
        "... but not the reserved node (the blamed node is fine for it)");
    release(jobs, 2);

    /* A reserved node is nobody else's, even while its job waits. */
    memset(&c, 0, sizeof(c));
    add_nodes(&c, "n1 n2", 8, 1000, 0);
    c.nodes[0].reserved_for = 7;
    jobs[0] = mkjob(1, 0, 2, 1, 0, 1);
    pass(&c, jobs, 1);
    ok(!jobs[0].placed, "a reserved node is not used by another job");
    is_str(jobs[0].reason,
        "needs 2 nodes with 1 free CPU, 1 matches (1 node "
        "reserved for restarting jobs)",
        "the reason says so");
    release(jobs, 1);

    /* Excluded nodes are a last resort only when too few others exist. */
    memset(&c, 0, sizeof(c));
    add_nodes(&c, "n1 n2", 8, 1000, 0);
    exclude[0] = 0;
    jobs[0] = mkjob(7, 0, 2, 1, 0, 1);
    restarting(&jobs[0], NULL, 0, exclude, 1);
    pass(&c, jobs, 1);
    ok(jobs[0].placed, "a 2-node cluster: the blamed node is used anyway");
    is_str(placed_on(&c, &jobs[0], 1), "n1", "... last (node rank 1)");
    release(jobs, 1);

    memset(&c, 0, sizeof(c));
    add_nodes(&c, "n1 n2 n3", 8, 1000, 0);
    c.nodes[2].free_cpus = 0; /* busy, but it exists */
    jobs[0] = mkjob(7, 0, 2, 1, 0, 1);
    restarting(&jobs[0], NULL, 0, exclude, 1);
    jobs[1] = mkjob(8, 0, 1, 1, 0, 1);
    pass(&c, jobs, 2);
    ok(!jobs[0].placed, "enough other nodes exist: it waits for them");
    is_str(jobs[0].reason,
        "needs 2 nodes with 1 free CPU, 1 matches (not "
        "counting 1 node blamed for its failures)",
        "the reason names the exclusion");
    ok(!jobs[1].placed, "and it blocks the queue like any head job");
    release(jobs, 2);

    /* Restarting jobs go before higher-priority pending ones. */
    memset(&c, 0, sizeof(c));
    add_node(&c, "n1", 1, 1000, 0);
    jobs[0] = mkjob(1, 1000, 1, 1, 0, 1);
    jobs[1] = mkjob(9, 0, 1, 1, 0, 1);
    restarting(&jobs[1], NULL, 0, NULL, 0);
    pass(&c, jobs, 2);
    ok(jobs[1].placed && !jobs[0].placed,
        "a restarting job does not go back to the end of the queue");
    release(jobs, 2);
}

/* fits_ever on c for a job of nodes × (rpn ranks × cpr CPUs, gpus, mem):
 * whether it fits; its reason into why. */
static bool
fits_ever(const struct cluster *c, int nodes, int rpn, int gpus, int cpr,
    int64_t mem, char *why)
{
    struct sched_job j = mkjob(1, 0, nodes, rpn, gpus, cpr);

    j.memory_mb_per_node = mem;
    why[0] = '\0';
    return sched_fits_ever(c->nodes, c->n, &j, why, SCHED_REASON_MAX);
}

static void
test_fits_ever(void)
{
    struct cluster c = { .n = 0 };
    struct sched_job jobs[2];
    char why[SCHED_REASON_MAX];

    /* Four 2-CPU nodes, 16 GB, no GPUs: the cluster. */
    add_nodes(&c, "n1 n2 n3 n4", 2, 16384, 0);
    ok(fits_ever(&c, 4, 2, 0, 1, 16384, why) && why[0] == '\0',
        "fits ever: the whole cluster exactly");
    ok(!fits_ever(&c, 5, 2, 0, 1, 0, why), "fits ever: 5 nodes on 4: no");
    is_str(why, "needs 5 nodes with 2 CPUs each; the cluster has 4 nodes",
        "fits ever: the node count is what is short, not CPUs");
    ok(!fits_ever(&c, 1, 1, 0, 1, (int64_t)10 << 20, why),
        "fits ever: 10 TB of memory: no");
    is_str(why,
        "needs 1 node with 1 CPU and 10485760 MB memory; the cluster has 4 "
        "nodes, none with at least 10485760 MB memory (the most any has is "
        "16384 MB)",
        "fits ever: memory is named, with the most any node has");
    ok(!fits_ever(&c, 2, 4, 0, 1, 0, why), "fits ever: 4 CPUs per node: no");
    is_str(why,
        "needs 2 nodes with 4 CPUs each; the cluster has 4 nodes, none with "
        "at least 4 CPUs (the most any has is 2)",
        "fits ever: CPUs are named (ranks per node × CPUs per rank), not GPUs");
    ok(!fits_ever(&c, 1, 1, 1, 1, 0, why), "fits ever: a GPU: no");
    is_str(why,
        "needs 1 node with 1 GPU and 1 CPU; the cluster has 4 nodes, none "
        "with at least 1 GPU (the most any has is 0)",
        "fits ever: GPUs are named, CPUs are not (they are there)");

    /* Cordoned, lost or unhealthy nodes are capacity that may come
     * back: state does not count, nor what is free now. */
    c.nodes[0].schedulable = false;
    c.nodes[1].free_cpus = 0;
    ok(fits_ever(&c, 4, 1, 0, 2, 0, why),
        "fits ever: an unschedulable or busy node still counts");

    /* Some nodes bigger: a count of those. Several short: each named. */
    memset(&c, 0, sizeof(c));
    add_nodes(&c, "a b c", 8, 1000, 0);
    add_node(&c, "g", 8, 1000, 8);
    ok(!fits_ever(&c, 2, 1, 8, 16, 2000, why),
        "fits ever: GPUs, CPUs and memory short: no");
    is_str(why,
        "needs 2 nodes with 8 GPUs and 16 CPUs and 2000 MB memory each; the "
        "cluster has 4 nodes, only 1 with at least 8 GPUs, none with at "
        "least 16 CPUs (the most any has is 8), none with at least 2000 MB "
        "memory (the most any has is 1000 MB)",
        "fits ever: every short resource is named");
    ok(!fits_ever(&c, 5, 1, 8, 1, 0, why), "fits ever: 5 × 8 GPUs: no");
    is_str(why,
        "needs 5 nodes with 8 GPUs and 1 CPU each; the cluster has 4 nodes, "
        "only 1 with at least 8 GPUs",
        "fits ever: too few nodes and too few with GPUs: GPUs named");

    /* Each resource alone on enough nodes, not together. */
    memset(&c, 0, sizeof(c));
    add_nodes(&c, "a b", 2, 1000, 4);
    add_nodes(&c, "c d", 16, 1000, 0);
    ok(!fits_ever(&c, 2, 16, 4, 1, 0, why), "fits ever: a combination: no");
    is_str(why,
        "needs 2 nodes with 4 GPUs and 16 CPUs each; the cluster has 4 "
        "nodes, 2 with at least 4 GPUs and 2 with at least 16 CPUs, but none "
        "with both",
        "fits ever: a combination says so");

    /* No node at all. */
    memset(&c, 0, sizeof(c));
    ok(!fits_ever(&c, 1, 1, 0, 1, 0, why), "fits ever: no node: no");
    is_str(why, "needs 1 node with 1 CPU; the cluster has 0 nodes",
        "fits ever: an empty cluster");

    /* The pass gives a never-fit job the same reason as the submit
     * check, when every node takes work... */
    add_nodes(&c, "n1 n2 n3 n4", 2, 16384, 0);
    jobs[0] = mkjob(1, 0, 5, 2, 0, 1);
    pass(&c, jobs, 1);
    fits_ever(&c, 5, 2, 0, 1, 0, why);
    is_str(jobs[0].reason, why, "the pass: the submit check's reason");
    release(jobs, 1);
    /* ... and says which nodes take no work when those would be enough. */
    c.nodes[1].schedulable = false;
    c.nodes[2].schedulable = false;
    jobs[0] = mkjob(1, 0, 3, 2, 0, 1);
    pass(&c, jobs, 1);
    is_str(jobs[0].reason,
        "needs 3 nodes with 2 CPUs each; the cluster has 2 schedulable "
        "nodes (2 more take no work now)",
        "the pass: cordoned or lost nodes would be enough: says so");
    release(jobs, 1);
    /* Behind a blocker (the cheap path) the reason is the same. */
    c.nodes[1].schedulable = c.nodes[2].schedulable = true;
    c.nodes[0].free_cpus = c.nodes[1].free_cpus = c.nodes[2].free_cpus = 0;
    jobs[0] = mkjob(1, 10, 2, 2, 0, 1);
    jobs[1] = mkjob(2, 0, 5, 2, 0, 1);
    pass(&c, jobs, 2);
    ok(!jobs[0].placed && !jobs[1].placed, "a blocker and a never-fit job");
    fits_ever(&c, 5, 2, 0, 1, 0, why);
    is_str(jobs[1].reason, why, "behind a blocker: the same reason");
    release(jobs, 2);
}

/* user_max_running_jobs: alice (1 running already, limit 2) gets one
 * more; her third waits with the reason and blocks no one (bob's later
 * job is placed); a restarting job of hers is not held back. */
static void
test_user_running(void)
{
    struct cluster c = { .n = 0 };
    struct sched_job jobs[5];
    int alice = 1, bob = 0;

    add_nodes(&c, "a b c d e", 8, 1000, 0);
    for (int i = 0; i < 5; i++) {
        jobs[i] = mkjob(i + 1, 0, 1, 1, 0, 1);
        jobs[i].user = i == 3 ? "bob" : "alice";
        jobs[i].user_running = i == 3 ? &bob : &alice;
        jobs[i].user_max = 2;
    }
    restarting(&jobs[4], NULL, 0, NULL, 0);
    pass(&c, jobs, 5);
    ok(jobs[4].placed, "running limit: a restarting job is not held back");
    ok(jobs[0].placed, "running limit: alice's second job is placed");
    ok(!jobs[1].placed && !jobs[2].placed, "her third and fourth wait");
    is_str(jobs[1].reason,
        "user alice has 2 running jobs; the limit is 2 "
        "(user_max_running_jobs)",
        "running limit: the reason names it");
    ok(jobs[3].placed, "running limit: bob's later job is not blocked");
    is_int(alice, 2, "alice's count went up by her one placement");
    is_int(bob, 1, "bob's too");
    release(jobs, 5);
}

/* A random cluster of n nodes (some partly busy, SUSPECT, unschedulable
 * or reserved for a job that is not in the queue) into c. */
static void
random_cluster(struct cluster *c, size_t n, unsigned *seed)
{
    static const int cpus[] = { 8, 16, 64 }, gpus[] = { 0, 2, 4, 8 };

    memset(c, 0, sizeof(*c));
    for (size_t i = 0; i < n; i++) {
        struct sched_node *node;
        int busy;

        snprintf(c->names[i], sizeof(c->names[i]), "r%02d",
            (int)((i * 7 + 3) % n));
        node = add_node(c, c->names[i], cpus[rand_r(seed) % 3],
            1000 * (1 + rand_r(seed) % 4), gpus[rand_r(seed) % 4]);
        busy = rand_r(seed) % 4;
        node->free_cpus -= busy * node->cpus / 8;
        node->free_memory_mb -= busy * 200;
        if (busy > 0 && node->nfree_gpus > 0) {
            /* Take the first `busy` ids (at most all of them). */
            size_t g = (size_t)busy < node->nfree_gpus ? (size_t)busy
                                                       : node->nfree_gpus;

            node->free_gpus += g;
            node->nfree_gpus -= g;
        }
        node->suspect = rand_r(seed) % 6 == 0;
        node->schedulable = rand_r(seed) % 10 != 0;
        if (rand_r(seed) % 12 == 0)
            node->reserved_for = 999999;
    }
}

/* A random job (id) into j. */
static void
random_job(struct sched_job *j, int64_t id, unsigned *seed)
{
    *j = mkjob(id, rand_r(seed) % 3, 1 + rand_r(seed) % 3, 1 + rand_r(seed) % 4,
        rand_r(seed) % 5, 1 + rand_r(seed) % 2);
    if (rand_r(seed) % 5 == 0)
        j->memory_mb_per_node = 300 * (1 + rand_r(seed) % 5);
}

static bool
same_result(const struct sched_job *a, const struct sched_job *b)
{
    if (a->placed != b->placed || strcmp(a->reason, b->reason) != 0)
        return false;
    for (int k = 0; a->placed && k < a->nodes; k++) {
        if (a->node_idx[k] != b->node_idx[k])
            return false;
        for (int g = 0; g < a->gpus_per_node; g++) {
            size_t at = (size_t)k * (size_t)a->gpus_per_node + (size_t)g;

            if (a->gpus[at] != b->gpus[at])
                return false;
        }
    }
    return true;
}

/* The grouped index (jobs that prefer and exclude nothing) chooses what
 * the full scan of every node chooses: the same queue through both, the
 * second time with every job excluding a node that does not exist (which
 * sends it down the full scan and excludes nothing). */
static void
test_index_equals_scan(const struct sched_policy *policy)
{
    static const size_t nobody = (size_t)-1;
    struct cluster *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
    struct sched_job ja[24], jb[24];
    unsigned seed = 7;
    int diff = 0, placed = 0;

    for (int round = 0; round < 300; round++) {
        size_t nj = 1 + (size_t)(rand_r(&seed) % 24), mp;

        random_cluster(a, 1 + (size_t)(rand_r(&seed) % MAXN), &seed);
        *b = *a;
        for (size_t i = 0; i < b->n; i++) {
            b->nodes[i].name = b->names[i];
            b->nodes[i].free_gpus = b->gpus[i] +
                                    (a->nodes[i].free_gpus - a->gpus[i]);
        }
        for (size_t i = 0; i < nj; i++) {
            random_job(&ja[i], (int64_t)(nj - i), &seed);
            jb[i] = ja[i];
            jb[i].exclude = &nobody;
            jb[i].nexclude = 1;
        }
        mp = 1 + (size_t)(rand_r(&seed) % 20);
        sched_pass(policy, a->nodes, a->n, ja, nj, mp);
        sched_pass(policy, b->nodes, b->n, jb, nj, mp);
        for (size_t i = 0; i < nj; i++) {
            diff += !same_result(&ja[i], &jb[i]);
            placed += ja[i].placed;
        }
        release(ja, nj);
        release(jb, nj);
    }
    is_int(diff, 0, "%s: the index places as the full scan does (%d placed)",
        policy->name, placed);
    free(a);
    free(b);
}

/* A stall of the loop is no node's silence: a node not heard since the
 * stall began has its last_seen moved forward by the stall, one heard
 * during it (after the loop resumed) keeps it, and it never goes past
 * now; nothing moves it back. */
static void
test_node_stalled(void)
{
    struct node *n = node_create("n1");

    n->last_seen_mono = 1000;
    node_stalled(n, 20000, 15000); /* stall 5000..20000, heard at 1000 */
    is_int(n->last_seen_mono, 16000, "silent before the stall: moved by it");
    is_int(20000 - n->last_seen_mono, 4000,
        "its silence is what the loop could hear (1000..5000)");
    n->last_seen_mono = 5000;
    node_stalled(n, 20000, 15000);
    is_int(n->last_seen_mono, 5000, "heard as the stall began: kept");
    n->last_seen_mono = 19000;
    node_stalled(n, 20000, 15000);
    is_int(n->last_seen_mono, 19000, "heard after the loop resumed: kept");
    n->last_seen_mono = 4999;
    node_stalled(n, 20000, 15000);
    ok(n->last_seen_mono <= 20000, "never past now (%lld)",
        (long long)n->last_seen_mono);
    n->last_seen_mono = 1000;
    node_stalled(n, 20000, 0);
    is_int(n->last_seen_mono, 1000, "no stall: unchanged");
    node_stalled(n, 20000, -5);
    is_int(n->last_seen_mono, 1000, "a negative stall: unchanged");
    node_destroy(n);
}

int
main(void)
{
    plan(NO_PLAN);
    test_gang();
    test_best_fit();
    test_fragmentation();
    test_blocked_vs_never();
    test_order();
    test_gpu_ids();
    test_many_shapes();
    test_rank_gpus();
    test_node_stalled();
    test_restart_in_place();
    test_fits_ever();
    test_user_running();
    test_index_equals_scan(&sched_policy_fifo);
    test_index_equals_scan(&sched_policy_spread);
    return done_testing();
}
