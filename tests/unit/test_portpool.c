/*
 * test_portpool.c - the pool of master ports (pure): one per master node
 */
#include "scheduler/portpool.h"

#include <errno.h>

#include "scheduler/sched_pass.h"
#include "tests/tap.h"

static void
test_pool(void)
{
    struct portpool pp;
    int a, b;

    portpool_init(&pp, 29500, 2);
    is_int(portpool_nfree(&pp), 2, "a new pool: all free");
    a = portpool_alloc(&pp);
    b = portpool_alloc(&pp);
    ok(a >= 29500 && a < 29502 && b >= 29500 && b < 29502 && a != b,
        "two ports of the range, distinct");
    is_int(portpool_nfree(&pp), 0, "none free");
    is_int(portpool_alloc(&pp), -EAGAIN, "exhausted: -EAGAIN");

    portpool_mark(&pp, a, false);
    is_int(portpool_nfree(&pp), 1, "one released");
    portpool_mark(&pp, a, false);
    is_int(portpool_nfree(&pp), 1, "releasing it twice counts once");
    is_int(portpool_alloc(&pp), a, "the released one is handed out again");
    portpool_mark(&pp, b, true);
    is_int(portpool_nfree(&pp), 0, "marking a held one again counts once");
    portpool_mark(&pp, 40000, false);
    portpool_mark(&pp, 29499, true);
    is_int(portpool_nfree(&pp), 0, "ports outside the range are ignored");

    portpool_clear(&pp);
    is_int(portpool_nfree(&pp), 2, "cleared: all free");
    portpool_release(&pp);
}

static void
test_round_robin(void)
{
    struct portpool pp;
    int a, b, c;

    portpool_init(&pp, 100, 3);
    a = portpool_alloc(&pp);
    portpool_mark(&pp, a, false);
    b = portpool_alloc(&pp);
    ok(b != a, "a port freed a moment ago is not reused first");
    c = portpool_alloc(&pp);
    ok(c != a && c != b, "nor while others are free");
    is_int(portpool_alloc(&pp), a, "then it is");
    portpool_release(&pp);
}

/* After a restart the scheduler re-marks the ports of the attempts it
 * loads, each in its master node's pool: one pool per node, each its own
 * set of the same range. */
static void
test_per_node(void)
{
    struct portpool n1, n2;
    int loaded = 29501;

    portpool_init(&n1, 29500, 2);
    portpool_init(&n2, 29500, 2);
    portpool_mark(&n1, loaded, true);
    is_int(portpool_alloc(&n1), 29500, "n1: the port not re-marked");
    is_int(portpool_alloc(&n1), -EAGAIN, "n1: then none");
    is_int(portpool_alloc(&n2), 29500, "n2: the same port, another node");
    is_int(portpool_alloc(&n2), 29501, "n2: and the other");
    portpool_release(&n1);
    portpool_release(&n2);
}

/* The pass gives a node whose last master port it hands out as full: no
 * second job becomes node rank 0 there in the same pass. */
static void
test_pass_masters(void)
{
    int gpus[2][1] = { { 0 }, { 0 } };
    struct sched_node nodes[2] = {
        { .name = "a",
            .schedulable = true,
            .cpus = 8,
            .memory_mb = 1000,
            .free_cpus = 8,
            .free_memory_mb = 1000,
            .free_gpus = gpus[0],
            .free_masters = 1 },
        { .name = "b",
            .schedulable = true,
            .cpus = 8,
            .memory_mb = 1000,
            .free_cpus = 8,
            .free_memory_mb = 1000,
            .free_gpus = gpus[1],
            .free_masters = 1 },
    };
    struct sched_job jobs[3] = { 0 };

    for (int i = 0; i < 3; i++) {
        jobs[i].id = i + 1;
        jobs[i].nodes = 1;
        jobs[i].ranks_per_node = 1;
        jobs[i].cpus_per_rank = 1;
        jobs[i].memory_mb_per_node = 10;
    }
    sched_pass(&sched_policy_fifo, nodes, 2, jobs, 3, (size_t)-1);
    ok(jobs[0].placed && jobs[1].placed && !jobs[2].placed,
        "one master port on each of two nodes: two jobs placed, not three");
    ok(jobs[0].placed && jobs[1].placed &&
            jobs[0].node_idx[0] != jobs[1].node_idx[0],
        "on different nodes");
    for (int i = 0; i < 3; i++)
        sched_job_release(&jobs[i]);
}

int
main(void)
{
    plan(NO_PLAN);
    test_pool();
    test_round_robin();
    test_per_node();
    test_pass_masters();
    return done_testing();
}
