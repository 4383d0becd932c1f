/*
 * sched.c - one scheduling pass over the queue (pure)
 *
 * The pass walks the queue in policy order. Each job is first checked
 * against the schedulable nodes as if they were empty: a job that could
 * never fit there (more nodes than exist, a node bigger than any) is
 * skipped with an explanation and does not hold anyone back. A job that
 * could fit on the empty cluster but not now becomes the blocker: it keeps
 * its place at the head, and everything after it waits, so a stream of
 * small jobs cannot starve a big one. There is no backfill.
 *
 * The reasons are for people reading `lockstep jobs`: they say what the
 * job needs, which resource is short and how many nodes qualify ("needs 4
 * nodes with 8 free GPUs, 2 match"; for a job that can never fit, "needs
 * 4 nodes with 8 GPUs, only 2 match in the whole cluster").
 *
 * Restarting jobs (restart in place) come first. A job's own view of the
 * nodes is kept in ctx->mark while it is examined: its preferred nodes
 * (with their order in ctx->pos) and its excluded ones; nodes reserved for
 * another restarting job are never candidates.
 */
#include "scheduler/sched_pass.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

/* What one node must offer for a job. */
struct sched_need {
    int64_t cpus;
    int64_t gpus;
    int64_t memory_mb;
    int nodes;
};

/* "Could it fit on the empty cluster", by request shape: a hash table
 * (open addressing) that grows, so each distinct shape costs one O(nodes)
 * count per pass. */
struct sched_shape {
    bool used;
    bool fits;
    struct sched_need need;
    char reason[SCHED_REASON_MAX];
};

/* ctx->mark values: the examined job's view of each node. */
enum sched_mark {
    SCHED_MARK_NONE,
    SCHED_MARK_PREFER,
    SCHED_MARK_EXCLUDE,
};

struct sched_pass_ctx {
    const struct sched_policy *policy;
    struct sched_node *nodes;
    size_t nnodes;
    unsigned char *mark; /* enum sched_mark per node */
    size_t *pos;         /* SCHED_MARK_PREFER: its order */
    bool soft;           /* the examined job may use its excluded
                          * nodes, last */
    struct sched_shape *shapes;
    size_t nshapes;    /* used slots */
    size_t shapes_cap; /* a power of two */
    /* Over the schedulable nodes, for O(1) "can never fit" answers. */
    size_t nschedulable;
    int64_t max_cpus;
    int64_t max_gpus;
    int64_t max_memory_mb;
};

static struct sched_need
sched_job_need(const struct sched_job *job)
{
    struct sched_need n = {
        .cpus = (int64_t)job->ranks_per_node * job->cpus_per_rank,
        .gpus = job->gpus_per_node,
        .memory_mb = job->memory_mb_per_node,
        .nodes = job->nodes,
    };

    return n;
}

static const char *
plural(int64_t n, const char *one, const char *many)
{
    return n == 1 ? one : many;
}

/*
 * "N nodes with 8 free GPUs and 16 free CPUs" into buf. `only` selects one
 * resource (1 GPUs, 2 CPUs, 3 memory) or 0 for every one requested; `adj`
 * is "free " or "".
 */
static void
sched_describe(char *buf, size_t len, const struct sched_need *need, int only,
    const char *adj)
{
    size_t off;
    bool first = true;

    off = (size_t)snprintf(buf, len, "%d %s", need->nodes,
        plural(need->nodes, "node", "nodes"));
    if (need->gpus > 0 && (only == 0 || only == 1) && off < len) {
        off += (size_t)snprintf(buf + off, len - off, " with %lld %s%s",
            (long long)need->gpus, adj, plural(need->gpus, "GPU", "GPUs"));
        first = false;
    }
    if (need->cpus > 0 && (only == 0 || only == 2) && off < len) {
        off += (size_t)snprintf(buf + off, len - off, "%s%lld %s%s",
            first ? " with " : " and ", (long long)need->cpus, adj,
            plural(need->cpus, "CPU", "CPUs"));
        first = false;
    }
    if (need->memory_mb > 0 && (only == 0 || only == 3) && off < len)
        snprintf(buf + off, len - off, "%s%lld MB %smemory",
            first ? " with " : " and ", (long long)need->memory_mb, adj);
}

/* Whether node i may be used for job at all in this pass. */
static bool
sched_node_allowed(const struct sched_pass_ctx *ctx, size_t i,
    const struct sched_job *job, size_t *reserved, size_t *excluded)
{
    const struct sched_node *n = &ctx->nodes[i];

    if (n->reserved_for != 0 && n->reserved_for != job->id) {
        if (reserved)
            (*reserved)++;
        return false;
    }
    if (ctx->mark[i] == SCHED_MARK_EXCLUDE && !ctx->soft) {
        if (excluded)
            (*excluded)++;
        return false;
    }
    return true;
}

/*
 * Count nodes meeting each part of need (using totals when `empty`, free
 * resources otherwise) and write the explanation of a shortfall. Returns
 * the number of nodes meeting all of it. With a job (only when not
 * `empty`), only the nodes that job may use count.
 */
static size_t
sched_count(const struct sched_pass_ctx *ctx, const struct sched_need *need,
    bool empty, const struct sched_job *job, char *reason, size_t len)
{
    size_t all = 0, by_gpu = 0, by_cpu = 0, by_mem = 0;
    size_t reserved = 0, excluded = 0, off;
    int only = 0;
    char what[96];

    for (size_t i = 0; i < ctx->nnodes; i++) {
        const struct sched_node *n = &ctx->nodes[i];
        int64_t cpus = empty ? n->cpus : n->free_cpus;
        int64_t gpus = (int64_t)(empty ? n->ngpus : n->nfree_gpus);
        int64_t mem = empty ? n->memory_mb : n->free_memory_mb;
        bool g, c, m;

        if (!n->schedulable)
            continue;
        if (job && !sched_node_allowed(ctx, i, job, &reserved, &excluded))
            continue;
        g = gpus >= need->gpus;
        c = cpus >= need->cpus;
        m = mem >= need->memory_mb;
        by_gpu += g;
        by_cpu += c;
        by_mem += m;
        all += g && c && m;
    }
    if (reason == NULL || all >= (size_t)need->nodes)
        return all;
    /* Name the first resource that alone rules the job out. */
    if (need->gpus > 0 && by_gpu < (size_t)need->nodes)
        only = 1;
    else if (need->cpus > 0 && by_cpu < (size_t)need->nodes)
        only = 2;
    else if (need->memory_mb > 0 && by_mem < (size_t)need->nodes)
        only = 3;
    sched_describe(what, sizeof(what), need, only, empty ? "" : "free ");
    if (empty)
        off = (size_t)snprintf(reason, len,
            "needs %s, only %d %s in the "
            "whole cluster",
            what, (int)all, plural((int64_t)all, "matches", "match"));
    else
        off = (size_t)snprintf(reason, len, "needs %s, %d %s", what, (int)all,
            plural((int64_t)all, "matches", "match"));
    if (excluded > 0 && off < len)
        off += (size_t)snprintf(reason + off, len - off,
            " (not counting "
            "%zu %s blamed for its failures)",
            excluded, plural((int64_t)excluded, "node", "nodes"));
    if (reserved > 0 && off < len)
        snprintf(reason + off, len - off,
            " (%zu %s reserved for "
            "restarting jobs)",
            reserved, plural((int64_t)reserved, "node", "nodes"));
    return all;
}

static size_t
sched_shape_hash(const struct sched_need *need, size_t cap)
{
    uint64_t h = (uint64_t)need->cpus * 0x9e3779b97f4a7c15ULL;

    h ^= (uint64_t)need->gpus * 0xc2b2ae3d27d4eb4fULL;
    h ^= (uint64_t)need->memory_mb * 0x165667b19e3779f9ULL;
    h ^= (uint64_t)need->nodes * 0x27d4eb2f165667c5ULL;
    return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

static bool
sched_need_equal(const struct sched_need *a, const struct sched_need *b)
{
    return a->cpus == b->cpus && a->gpus == b->gpus &&
           a->memory_mb == b->memory_mb && a->nodes == b->nodes;
}

/* The slot for need: its entry, or the empty slot where it belongs. */
static struct sched_shape *
sched_shape_slot(struct sched_pass_ctx *ctx, const struct sched_need *need)
{
    size_t i = sched_shape_hash(need, ctx->shapes_cap);

    while (ctx->shapes[i].used && !sched_need_equal(&ctx->shapes[i].need, need))
        i = (i + 1) & (ctx->shapes_cap - 1);
    return &ctx->shapes[i];
}

static void
sched_shapes_grow(struct sched_pass_ctx *ctx)
{
    struct sched_shape *old = ctx->shapes;
    size_t oldcap = ctx->shapes_cap;

    ctx->shapes_cap = oldcap ? oldcap * 2 : 64;
    ctx->shapes = xcalloc(ctx->shapes_cap, sizeof(*ctx->shapes));
    for (size_t i = 0; i < oldcap; i++) {
        if (old[i].used)
            *sched_shape_slot(ctx, &old[i].need) = old[i];
    }
    free(old);
}

/* Whether the job could ever fit on the schedulable nodes; cached. */
static const struct sched_shape *
sched_shape_get(struct sched_pass_ctx *ctx, const struct sched_need *need)
{
    struct sched_shape *s;

    if (2 * (ctx->nshapes + 1) > ctx->shapes_cap)
        sched_shapes_grow(ctx);
    s = sched_shape_slot(ctx, need);
    if (s->used)
        return s;
    s->used = true;
    s->need = *need;
    s->fits = sched_count(ctx, need, true, NULL, s->reason,
                  sizeof(s->reason)) >= (size_t)need->nodes;
    ctx->nshapes++;
    return s;
}

/*
 * For jobs that wait anyway (behind a blocked job, or past the placement
 * limit) only the reason is at stake, so they get no O(nodes) count: a
 * cached answer if there is one, else what the per-resource maxima show
 * in O(1). Returns true with reason set when the job can never fit.
 */
static bool
sched_never_fits_cheap(struct sched_pass_ctx *ctx,
    const struct sched_need *need, char *reason, size_t len)
{
    char what[96];
    int only = 0;

    if (ctx->shapes_cap) {
        const struct sched_shape *s = sched_shape_slot(ctx, need);

        if (s->used) {
            if (!s->fits)
                snprintf(reason, len, "%s", s->reason);
            return !s->fits;
        }
    }
    if (need->gpus > ctx->max_gpus)
        only = 1;
    else if (need->cpus > ctx->max_cpus)
        only = 2;
    else if (need->memory_mb > ctx->max_memory_mb)
        only = 3;
    else if ((size_t)need->nodes <= ctx->nschedulable)
        return false;
    sched_describe(what, sizeof(what), need, only, "");
    if (only)
        snprintf(reason, len, "needs %s, only 0 match in the whole cluster",
            what);
    else
        snprintf(reason, len, "needs %s, only %d %s in the whole cluster", what,
            (int)ctx->nschedulable,
            plural((int64_t)ctx->nschedulable, "is schedulable",
                "are schedulable"));
    return true;
}

/* Preferred nodes first (in their order), then the others, then the
 * excluded ones (used at all only when soft); the policy decides among
 * equals. */
static int
sched_node_class(const struct sched_pass_ctx *ctx, size_t i)
{
    switch (ctx->mark[i]) {
    case SCHED_MARK_PREFER:
        return 0;
    case SCHED_MARK_EXCLUDE:
        return 2;
    default:
        return 1;
    }
}

static int
sched_node_idx_cmp(const void *a, const void *b, void *arg)
{
    const struct sched_pass_ctx *ctx = arg;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    int cx = sched_node_class(ctx, x), cy = sched_node_class(ctx, y);

    if (cx != cy)
        return cx < cy ? -1 : 1;
    if (cx == 0 && ctx->pos[x] != ctx->pos[y])
        return ctx->pos[x] < ctx->pos[y] ? -1 : 1;
    return ctx->policy->node_cmp(&ctx->nodes[x], &ctx->nodes[y]);
}

static int
sched_job_ptr_cmp(const void *a, const void *b, void *arg)
{
    const struct sched_policy *policy = arg;
    const struct sched_job *x = *(const struct sched_job *const *)a;
    const struct sched_job *y = *(const struct sched_job *const *)b;

    /* Restart in place: a restarting job does not queue behind anyone. */
    if (x->restarting != y->restarting)
        return x->restarting ? -1 : 1;
    return policy->job_cmp(x, y);
}

/* Set (on) or clear the job's marks; with on, also decide whether its
 * excluded nodes are a last resort (soft): when the schedulable nodes it
 * may use could not hold it even if they were empty. */
static void
sched_job_marks(struct sched_pass_ctx *ctx, const struct sched_job *job,
    const struct sched_need *need, bool on)
{
    size_t fit = 0;

    for (size_t k = 0; k < job->nprefer; k++) {
        if (job->prefer[k] < ctx->nnodes) {
            ctx->mark[job->prefer[k]] = on ? SCHED_MARK_PREFER
                                           : SCHED_MARK_NONE;
            ctx->pos[job->prefer[k]] = k;
        }
    }
    for (size_t k = 0; k < job->nexclude; k++) {
        if (job->exclude[k] < ctx->nnodes)
            ctx->mark[job->exclude[k]] = on ? SCHED_MARK_EXCLUDE
                                            : SCHED_MARK_NONE;
    }
    ctx->soft = false;
    if (!on || job->nexclude == 0)
        return;
    for (size_t i = 0; i < ctx->nnodes; i++) {
        const struct sched_node *n = &ctx->nodes[i];

        fit += n->schedulable && ctx->mark[i] != SCHED_MARK_EXCLUDE &&
               n->cpus >= need->cpus && (int64_t)n->ngpus >= need->gpus &&
               n->memory_mb >= need->memory_mb;
    }
    ctx->soft = fit < (size_t)need->nodes;
}

/* Try to place job now; true on success (resources consumed). */
static bool
sched_try_place(struct sched_pass_ctx *ctx, struct sched_job *job,
    const struct sched_need *need, size_t *cand)
{
    size_t n = 0;

    for (size_t i = 0; i < ctx->nnodes; i++) {
        const struct sched_node *node = &ctx->nodes[i];

        if (!sched_node_allowed(ctx, i, job, NULL, NULL))
            continue;
        if (node->schedulable && node->free_cpus >= need->cpus &&
            (int64_t)node->nfree_gpus >= need->gpus &&
            node->free_memory_mb >= need->memory_mb)
            cand[n++] = i;
    }
    if (n < (size_t)need->nodes)
        return false;
    qsort_r(cand, n, sizeof(*cand), sched_node_idx_cmp, ctx);
    job->node_idx = xcalloc((size_t)need->nodes, sizeof(*job->node_idx));
    if (need->gpus > 0)
        job->gpus = xcalloc((size_t)(need->nodes * need->gpus),
            sizeof(*job->gpus));
    for (int k = 0; k < need->nodes; k++) {
        struct sched_node *node = &ctx->nodes[cand[k]];
        size_t g = (size_t)need->gpus;

        job->node_idx[k] = cand[k];
        node->free_cpus -= (int)need->cpus;
        node->free_memory_mb -= need->memory_mb;
        if (g > 0) {
            /* The lowest free ids; the list stays ascending. */
            memcpy(job->gpus + (size_t)k * g, node->free_gpus, g * sizeof(int));
            memmove(node->free_gpus, node->free_gpus + g,
                (node->nfree_gpus - g) * sizeof(int));
            node->nfree_gpus -= g;
        }
    }
    job->placed = true;
    return true;
}

void
sched_pass(const struct sched_policy *policy, struct sched_node *nodes,
    size_t nnodes, struct sched_job *jobs, size_t njobs, size_t max_place)
{
    struct sched_pass_ctx *ctx = xcalloc(1, sizeof(*ctx));
    struct sched_job **order = xcalloc(njobs + 1, sizeof(*order));
    size_t *cand = xcalloc(nnodes + 1, sizeof(*cand));
    const struct sched_job *blocker = NULL;
    size_t placed = 0;

    ctx->policy = policy;
    ctx->nodes = nodes;
    ctx->nnodes = nnodes;
    ctx->mark = xcalloc(nnodes + 1, sizeof(*ctx->mark));
    ctx->pos = xcalloc(nnodes + 1, sizeof(*ctx->pos));
    for (size_t i = 0; i < nnodes; i++) {
        if (!nodes[i].schedulable)
            continue;
        ctx->nschedulable++;
        if (nodes[i].cpus > ctx->max_cpus)
            ctx->max_cpus = nodes[i].cpus;
        if ((int64_t)nodes[i].ngpus > ctx->max_gpus)
            ctx->max_gpus = (int64_t)nodes[i].ngpus;
        if (nodes[i].memory_mb > ctx->max_memory_mb)
            ctx->max_memory_mb = nodes[i].memory_mb;
    }
    for (size_t i = 0; i < njobs; i++) {
        jobs[i].placed = false;
        jobs[i].node_idx = NULL;
        jobs[i].gpus = NULL;
        jobs[i].reason[0] = '\0';
        order[i] = &jobs[i];
    }
    qsort_r(order, njobs, sizeof(*order), sched_job_ptr_cmp, (void *)policy);

    for (size_t i = 0; i < njobs; i++) {
        struct sched_job *job = order[i];
        struct sched_need need = sched_job_need(job);
        const struct sched_shape *shape;

        if (blocker || placed >= max_place) {
            if (sched_never_fits_cheap(ctx, &need, job->reason,
                    sizeof(job->reason)))
                continue;
            if (blocker)
                snprintf(job->reason, sizeof(job->reason),
                    "waiting behind job %lld", (long long)blocker->id);
            else
                snprintf(job->reason, sizeof(job->reason),
                    "no free master port");
            continue;
        }
        shape = sched_shape_get(ctx, &need);
        if (!shape->fits) {
            snprintf(job->reason, sizeof(job->reason), "%s", shape->reason);
            continue;
        }
        sched_job_marks(ctx, job, &need, true);
        if (sched_try_place(ctx, job, &need, cand)) {
            sched_job_marks(ctx, job, &need, false);
            placed++;
            continue;
        }
        sched_count(ctx, &need, false, job, job->reason, sizeof(job->reason));
        sched_job_marks(ctx, job, &need, false);
        blocker = job;
    }
    free(ctx->mark);
    free(ctx->pos);
    free(ctx->shapes);
    free(cand);
    free(order);
    free(ctx);
}

void
sched_job_release(struct sched_job *job)
{
    free(job->node_idx);
    free(job->gpus);
    job->node_idx = NULL;
    job->gpus = NULL;
}

int
sched_job_cmp_priority(const struct sched_job *a, const struct sched_job *b)
{
    if (a->priority != b->priority)
        return a->priority > b->priority ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}
