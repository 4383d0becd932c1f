/*
 * passbench.c - lockstep-passbench: the scheduling pass alone, timed
 *
 * No daemon, no database, no loop: the pure pass (sched_pass.h) over
 * arrays built the way scheduler/pass.c builds them (one sched_node per
 * node with its free GPU ids in one pool, one sched_job per queued job),
 * at every combination of queue length and node count asked for, with the
 * policy asked for. Each case is timed over --reps passes on fresh copies
 * of the same input (the median is printed), in three situations:
 *
 *   full     every node busy (no free GPU): nothing fits now, the head
 *            of the queue blocks it; the cost of a deep queue that waits
 *   empty    every node idle, a queue of mixed shapes (1 or 2 GPUs on one
 *            node, a whole node, 4 whole nodes, CPU-only): the pass places
 *            as much as the master-port limit (--max-place, the default
 *            master_port_count 1000) allows; the cost of placing
 *   half     half of the nodes busy and the other half idle, mixed shapes
 *
 * Prints one line per case (`queue=... nodes=... case=... pass_ms=...
 * placed=... us_per_job=...`), then a table of pass_ms with the ratio to
 * the smallest case (near-linear means the ratio follows queue + nodes,
 * not queue × nodes). Asserts nothing.
 *
 *   lockstep-passbench [--queue "1000 10000 100000"]
 *                      [--nodes "100 1000 10000"] [--reps 3]
 *                      [--policy fifo] [--max-place 1000]
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/xalloc.h"
#include "scheduler/sched_pass.h"

#define BENCH_GPUS 8
#define BENCH_CPUS 64
#define BENCH_MEM_MB 512000
#define BENCH_MAXV 16

enum bench_case { BENCH_FULL, BENCH_EMPTY, BENCH_HALF, BENCH_NCASES };

static const char *const bench_case_name[BENCH_NCASES] = {
    "full",
    "empty",
    "half",
};

struct bench_input {
    struct sched_node *nodes;
    int *gpu_pool;
    char (*names)[32];
    size_t nnodes;
    struct sched_job *jobs;
    size_t njobs;
};

static double
mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* A job of the mixed workload: mostly small ones, some whole nodes and a
 * few gangs, in submission order with a few priorities. */
static void
bench_job(struct sched_job *j, size_t i, uint64_t *seed)
{
    unsigned r;

    *seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
    r = (unsigned)(*seed >> 33) % 100;
    memset(j, 0, sizeof(*j));
    j->id = (int64_t)i + 1;
    j->priority = r < 5 ? 10 : 0;
    j->nodes = 1;
    j->ranks_per_node = 1;
    j->cpus_per_rank = 1;
    if (r < 50) {
        j->gpus_per_node = 1;
    } else if (r < 70) {
        j->gpus_per_node = 2;
        j->ranks_per_node = 2;
    } else if (r < 85) {
        j->gpus_per_node = 8;
        j->ranks_per_node = 8;
    } else if (r < 95) {
        j->nodes = 4;
        j->gpus_per_node = 8;
        j->ranks_per_node = 8;
    } else {
        j->cpus_per_rank = 4;
    }
}

/* The input of one case, as pass.c builds it: what is free on every
 * node (busy nodes have every GPU and half the CPUs taken). */
static void
bench_build(struct bench_input *in, size_t nnodes, size_t njobs,
    enum bench_case c)
{
    uint64_t seed = 42;

    in->nnodes = nnodes;
    in->nodes = xcalloc(nnodes + 1, sizeof(*in->nodes));
    in->names = xcalloc(nnodes + 1, sizeof(*in->names));
    in->gpu_pool = xcalloc(nnodes * BENCH_GPUS + 1, sizeof(*in->gpu_pool));
    for (size_t i = 0; i < nnodes; i++) {
        struct sched_node *n = &in->nodes[i];
        bool busy = c == BENCH_FULL || (c == BENCH_HALF && i % 2 == 0);

        snprintf(in->names[i], sizeof(in->names[i]), "node%05zu", i + 1);
        n->name = in->names[i];
        n->schedulable = true;
        n->cpus = BENCH_CPUS;
        n->memory_mb = BENCH_MEM_MB;
        n->ngpus = BENCH_GPUS;
        n->free_cpus = busy ? BENCH_CPUS / 2 : BENCH_CPUS;
        n->free_memory_mb = BENCH_MEM_MB;
        n->free_gpus = in->gpu_pool + i * BENCH_GPUS;
        n->nfree_gpus = busy ? 0 : BENCH_GPUS;
        for (int g = 0; g < BENCH_GPUS; g++)
            n->free_gpus[g] = g;
    }
    in->njobs = njobs;
    in->jobs = xcalloc(njobs + 1, sizeof(*in->jobs));
    for (size_t i = 0; i < njobs; i++)
        bench_job(&in->jobs[i], i, &seed);
    if (c == BENCH_FULL) {
        /* The head of the queue is a gang that fits the empty cluster:
         * it blocks everything behind it. */
        in->jobs[0].nodes = 2;
        in->jobs[0].gpus_per_node = 8;
    }
}

static void
bench_release(struct bench_input *in)
{
    for (size_t i = 0; i < in->njobs; i++)
        sched_job_release(&in->jobs[i]);
    free(in->jobs);
    free(in->nodes);
    free(in->names);
    free(in->gpu_pool);
    memset(in, 0, sizeof(*in));
}

static int
dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* One case: the median pass time over reps fresh inputs. */
static double
bench_case(const struct sched_policy *policy, size_t nq, size_t nn,
    enum bench_case c, int reps, size_t max_place, size_t *placed)
{
    double t[BENCH_MAXV];

    for (int r = 0; r < reps; r++) {
        struct bench_input in;
        double t0;

        bench_build(&in, nn, nq, c);
        t0 = mono_ms();
        sched_pass(policy, in.nodes, in.nnodes, in.jobs, in.njobs, max_place);
        t[r] = mono_ms() - t0;
        *placed = 0;
        for (size_t i = 0; i < in.njobs; i++)
            *placed += in.jobs[i].placed;
        bench_release(&in);
    }
    qsort(t, (size_t)reps, sizeof(*t), dbl_cmp);
    return t[reps / 2];
}

static size_t
parse_list(const char *s, size_t *out)
{
    size_t n = 0;
    char *end;

    while (*s && n < BENCH_MAXV) {
        unsigned long long v = strtoull(s, &end, 10);

        if (end == s)
            break;
        out[n++] = (size_t)v;
        s = end;
        while (*s == ' ' || *s == ',')
            s++;
    }
    return n;
}

static void
usage(void)
{
    fprintf(stderr,
        "usage: lockstep-passbench [--queue LIST] [--nodes LIST] [--reps N]\n"
        "                          [--policy NAME] [--max-place N]\n");
    exit(2);
}

int
main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "queue", required_argument, NULL, 'q' },
        { "nodes", required_argument, NULL, 'n' },
        { "reps", required_argument, NULL, 'r' },
        { "policy", required_argument, NULL, 'p' },
        { "max-place", required_argument, NULL, 'm' },
        { NULL, 0, NULL, 0 },
    };
    size_t queues[BENCH_MAXV], nodes[BENCH_MAXV], nqs, nns, max_place = 1000;
    double res[BENCH_MAXV][BENCH_MAXV][BENCH_NCASES];
    const struct sched_policy *policy = &sched_policy_fifo;
    int reps = 3, opt;

    nqs = parse_list("1000 10000 100000", queues);
    nns = parse_list("100 1000 10000", nodes);
    while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (opt) {
        case 'q':
            nqs = parse_list(optarg, queues);
            break;
        case 'n':
            nns = parse_list(optarg, nodes);
            break;
        case 'r':
            reps = atoi(optarg);
            break;
        case 'p':
            policy = sched_policy_find(optarg);
            break;
        case 'm':
            max_place = (size_t)strtoull(optarg, NULL, 10);
            break;
        default:
            usage();
        }
    }
    if (nqs == 0 || nns == 0 || reps < 1 || reps > BENCH_MAXV || policy == NULL)
        usage();
    for (size_t q = 0; q < nqs; q++) {
        for (size_t n = 0; n < nns; n++) {
            for (int c = 0; c < BENCH_NCASES; c++) {
                size_t placed;
                double ms = bench_case(policy, queues[q], nodes[n],
                    (enum bench_case)c, reps, max_place, &placed);

                res[q][n][c] = ms;
                printf("queue=%zu nodes=%zu case=%s policy=%s pass_ms=%.2f "
                       "placed=%zu us_per_job=%.3f\n",
                    queues[q], nodes[n], bench_case_name[c], policy->name, ms,
                    placed, ms * 1000 / (double)queues[q]);
                fflush(stdout);
            }
        }
    }
    printf("\n%-8s %-7s", "queue", "nodes");
    for (int c = 0; c < BENCH_NCASES; c++)
        printf(" | %9s_ms %7s", bench_case_name[c], "ratio");
    printf("\n");
    for (size_t q = 0; q < nqs; q++) {
        for (size_t n = 0; n < nns; n++) {
            printf("%-8zu %-7zu", queues[q], nodes[n]);
            for (int c = 0; c < BENCH_NCASES; c++)
                printf(" | %12.2f %7.1f", res[q][n][c],
                    res[0][0][c] > 0 ? res[q][n][c] / res[0][0][c] : 0);
            printf("\n");
        }
    }
    return 0;
}
