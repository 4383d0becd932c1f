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
 * nodes with 8 free GPUs, 2 match"). A job that can never fit gets the
 * reason sched_fits_ever gives (the submit check): what it needs, how
 * many nodes the cluster has, and which resource is short on how many of
 * them ("needs 4 nodes with 8 GPUs each; the cluster has 6 nodes, only 2
 * with at least 8 GPUs"), naming the node count itself when that is what
 * is short.
 *
 * Restarting jobs (restart in place) come first. A job's own view of the
 * nodes is kept in ctx->mark while it is examined: its preferred nodes
 * (with their order in ctx->pos) and its excluded ones; nodes reserved for
 * another restarting job are never candidates.
 *
 * Placement: a job that prefers and excludes nothing and holds no
 * reserved node (nearly every job) takes its nodes from the placement
 * index (sched_index.h: the nodes grouped by free GPUs and free CPUs, in
 * the policy's order), in O(groups + nodes needed); the others (restarts
 * in place) scan and sort every node, as the rules above need a view of
 * the nodes of their own. Both choose the same nodes for the same job
 * (test_sched checks it on random clusters). The queue is sorted only
 * when it does not come in policy order already.
 */
#include "scheduler/sched_pass.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "scheduler/sched_index.h"

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
    size_t nshapes;           /* used slots */
    size_t shapes_cap;        /* a power of two */
    struct sched_index index; /* for jobs that prefer and exclude nothing */
    int64_t *owners;          /* ids nodes are reserved for, ascending */
    size_t nowners;
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
 * Count the free resources of the nodes job may use against need and
 * write why it does not fit now ("needs 2 nodes with 4 free GPUs, 1
 * matches"). Returns the number of nodes meeting all of it.
 */
static size_t
sched_count(const struct sched_pass_ctx *ctx, const struct sched_need *need,
    const struct sched_job *job, char *reason, size_t len)
{
    size_t all = 0, by_gpu = 0, by_cpu = 0, by_mem = 0;
    size_t reserved = 0, excluded = 0, off;
    int only = 0;
    char what[96];

    for (size_t i = 0; i < ctx->nnodes; i++) {
        const struct sched_node *n = &ctx->nodes[i];
        bool g, c, m;

        if (!n->schedulable ||
            !sched_node_allowed(ctx, i, job, &reserved, &excluded))
            continue;
        g = (int64_t)n->nfree_gpus >= need->gpus;
        c = n->free_cpus >= need->cpus;
        m = n->free_memory_mb >= need->memory_mb;
        by_gpu += g;
        by_cpu += c;
        by_mem += m;
        all += g && c && m;
    }
    if (all >= (size_t)need->nodes)
        return all;
    /* Name the first resource that alone rules the job out. */
    if (need->gpus > 0 && by_gpu < (size_t)need->nodes)
        only = 1;
    else if (need->cpus > 0 && by_cpu < (size_t)need->nodes)
        only = 2;
    else if (need->memory_mb > 0 && by_mem < (size_t)need->nodes)
        only = 3;
    sched_describe(what, sizeof(what), need, only, "free ");
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

/* ---- could it ever fit -------------------------------------------------- */

/* The totals of a set of nodes against one need. */
struct sched_tally {
    size_t nodes; /* in the set */
    size_t other; /* left out of it (not schedulable) */
    size_t by[3]; /* meeting the GPUs, CPUs, memory need */
    size_t all;   /* meeting all of it */
    int64_t most[3];
};

static const char *const sched_res_unit[3][2] = {
    { "GPU", "GPUs" },
    { "CPU", "CPUs" },
    { "MB memory", "MB memory" },
};

static int64_t
sched_need_of(const struct sched_need *need, int r)
{
    return r == 0 ? need->gpus : r == 1 ? need->cpus : need->memory_mb;
}

/* Tally the totals of nodes[0..n) (only the schedulable ones when
 * `schedulable`) against need. */
static void
sched_tally(const struct sched_node *nodes, size_t n, bool schedulable,
    const struct sched_need *need, struct sched_tally *t)
{
    memset(t, 0, sizeof(*t));
    for (size_t i = 0; i < n; i++) {
        const struct sched_node *node = &nodes[i];
        int64_t have[3] = { (int64_t)node->ngpus, node->cpus, node->memory_mb };
        bool all = true;

        if (schedulable && !node->schedulable) {
            t->other++;
            continue;
        }
        t->nodes++;
        for (int r = 0; r < 3; r++) {
            bool ok = have[r] >= sched_need_of(need, r);

            t->by[r] += ok;
            all = all && ok;
            if (have[r] > t->most[r])
                t->most[r] = have[r];
        }
        t->all += all;
    }
}

/* Append to buf at *off (printf), never past len. */
__attribute__((format(printf, 4, 5))) static void
sched_addf(char *buf, size_t len, size_t *off, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (*off >= len)
        return;
    va_start(ap, fmt);
    n = vsnprintf(buf + *off, len - *off, fmt, ap);
    va_end(ap);
    if (n > 0)
        *off += (size_t)n;
}

/* ", only 1 with at least 8 GPUs" or ", none with at least 8 GPUs (the
 * most any has is 4)" for resource r. */
static void
sched_add_short(char *buf, size_t len, size_t *off,
    const struct sched_need *need, const struct sched_tally *t, int r)
{
    int64_t v = sched_need_of(need, r);
    const char *unit = sched_res_unit[r][v != 1];

    if (t->by[r] == 0)
        sched_addf(buf, len, off,
            ", none with at least %lld %s (the most any has is %lld%s)",
            (long long)v, unit, (long long)t->most[r], r == 2 ? " MB" : "");
    else
        sched_addf(buf, len, off, ", only %zu with at least %lld %s", t->by[r],
            (long long)v, unit);
}

/*
 * Why need can never fit on the tallied nodes: "needs N nodes with ...
 * each; the cluster has M [schedulable] nodes", then the resources that
 * too few of them have, or, when each resource alone is there but not
 * together, how many have each and all.
 */
static void
sched_explain(const struct sched_need *need, const struct sched_tally *t,
    bool schedulable, char *buf, size_t len)
{
    size_t off = 0, k = (size_t)need->nodes;
    char what[96];
    int nshort = 0, nasked = 0;

    sched_describe(what, sizeof(what), need, 0, "");
    sched_addf(buf, len, &off, "needs %s%s; the cluster has %zu %s%s", what,
        k > 1 && strstr(what, " with ") ? " each" : "", t->nodes,
        schedulable ? "schedulable " : "",
        plural((int64_t)t->nodes, "node", "nodes"));
    if (schedulable && t->other > 0)
        sched_addf(buf, len, &off, " (%zu more %s no work now)", t->other,
            plural((int64_t)t->other, "takes", "take"));
    if (t->nodes == 0)
        return;
    for (int r = 0; r < 3; r++) {
        if (sched_need_of(need, r) <= 0)
            continue;
        nasked++;
        /* Short: fewer nodes have it than the job needs, and than there
         * are (when the node count is short, a resource every node has
         * is not the problem). */
        if (t->by[r] < k && t->by[r] < t->nodes) {
            sched_add_short(buf, len, &off, need, t, r);
            nshort++;
        }
    }
    if (nshort > 0 || t->nodes < k || t->all >= k)
        return;
    /* Each resource alone is on enough nodes, not together. */
    for (int r = 0, n = 0; r < 3; r++) {
        int64_t v = sched_need_of(need, r);

        if (v <= 0)
            continue;
        sched_addf(buf, len, &off, "%s%zu with at least %lld %s",
            n++ == 0 ? ", " : " and ", t->by[r], (long long)v,
            sched_res_unit[r][v != 1]);
    }
    if (t->all == 0)
        sched_addf(buf, len, &off, ", but none with %s",
            nasked == 2 ? "both" : "all of them");
    else
        sched_addf(buf, len, &off, ", but only %zu with %s", t->all,
            nasked == 2 ? "both" : "all of them");
}

bool
sched_fits_ever(const struct sched_node *nodes, size_t n,
    const struct sched_job *job, char *reason, size_t len)
{
    struct sched_need need = sched_job_need(job);
    struct sched_tally t;

    sched_tally(nodes, n, false, &need, &t);
    if (t.all >= (size_t)need.nodes)
        return true;
    sched_explain(&need, &t, false, reason, len);
    return false;
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

/* Whether need could never fit on the schedulable nodes, with why. */
static bool
sched_need_never_fits(const struct sched_node *nodes, size_t n,
    const struct sched_need *need, char *reason, size_t len)
{
    struct sched_tally t;
    bool schedulable;

    sched_tally(nodes, n, true, need, &t);
    if (t.all >= (size_t)need->nodes)
        return false;
    /* Short even counting the nodes that take no work now: the reason
     * the submit check gives (sched_fits_ever); else what is short among
     * the schedulable nodes. */
    sched_tally(nodes, n, false, need, &t);
    schedulable = t.all >= (size_t)need->nodes;
    if (schedulable)
        sched_tally(nodes, n, true, need, &t);
    sched_explain(need, &t, schedulable, reason, len);
    return true;
}

bool
sched_never_fits(const struct sched_node *nodes, size_t n,
    const struct sched_job *job, char *reason, size_t len)
{
    struct sched_need need = sched_job_need(job);

    return sched_need_never_fits(nodes, n, &need, reason, len);
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
    ctx->nshapes++;
    s->fits = !sched_need_never_fits(ctx->nodes, ctx->nnodes, need, s->reason,
        sizeof(s->reason));
    return s;
}

/*
 * For jobs that wait anyway (behind a blocked job, or past the placement
 * limit) only the reason is at stake, so they get no O(nodes) count
 * unless the per-resource maxima show in O(1) that they can never fit
 * (then the shape's answer is computed once, and cached). Returns true
 * with reason set when the job can never fit.
 */
static bool
sched_never_fits_cheap(struct sched_pass_ctx *ctx,
    const struct sched_need *need, char *reason, size_t len)
{
    const struct sched_shape *s;

    if (ctx->shapes_cap) {
        s = sched_shape_slot(ctx, need);
        if (s->used) {
            if (!s->fits)
                snprintf(reason, len, "%s", s->reason);
            return !s->fits;
        }
    }
    if (need->gpus <= ctx->max_gpus && need->cpus <= ctx->max_cpus &&
        need->memory_mb <= ctx->max_memory_mb &&
        (size_t)need->nodes <= ctx->nschedulable)
        return false;
    s = sched_shape_get(ctx, need);
    if (!s->fits)
        snprintf(reason, len, "%s", s->reason);
    return !s->fits;
}

/* Preferred nodes first (in their order), then the others, then the
 * SUSPECT ones (preferred or not), then the excluded ones (used at all
 * only when soft); the policy decides among equals. */
static int
sched_node_class(const struct sched_pass_ctx *ctx, size_t i)
{
    int suspect = ctx->nodes[i].suspect ? 2 : 0;

    switch (ctx->mark[i]) {
    case SCHED_MARK_PREFER:
        return suspect;
    case SCHED_MARK_EXCLUDE:
        return 4;
    default:
        return 1 + suspect;
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
    if (ctx->mark[x] == SCHED_MARK_PREFER &&
        ctx->mark[y] == SCHED_MARK_PREFER && ctx->pos[x] != ctx->pos[y])
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

/* Give job the nodes cand[0..need->nodes) (in node-rank order): their
 * resources are consumed and the index refiles them. */
static void
sched_consume(struct sched_pass_ctx *ctx, struct sched_job *job,
    const struct sched_need *need, const size_t *cand)
{
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
        sched_index_update(&ctx->index, cand[k]);
    }
    /* Its last master port: it can be no one's node rank 0 for the rest
     * of the pass, and is given as full (pass.c does the same). */
    if (ctx->nodes[cand[0]].free_masters > 0 &&
        --ctx->nodes[cand[0]].free_masters == 0) {
        struct sched_node *node = &ctx->nodes[cand[0]];

        node->free_cpus = 0;
        node->free_memory_mb = 0;
        node->nfree_gpus = 0;
        sched_index_update(&ctx->index, cand[0]);
    }
    job->placed = true;
}

/* Try to place job now by looking at every node (a job with preferred,
 * excluded or reserved nodes); true on success (resources consumed). */
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
    sched_consume(ctx, job, need, cand);
    return true;
}

static int
sched_id_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return (x > y) - (x < y);
}

/* Whether job needs the full scan: it prefers or excludes nodes, or some
 * node is reserved for it (such nodes are not in the index). */
static bool
sched_job_special(const struct sched_pass_ctx *ctx, const struct sched_job *job)
{
    return job->nprefer > 0 || job->nexclude > 0 ||
           (ctx->nowners > 0 && bsearch(&job->id, ctx->owners, ctx->nowners,
                                    sizeof(*ctx->owners), sched_id_cmp));
}

/* Place job if it fits now: through the index, or by the full scan. */
static bool
sched_place(struct sched_pass_ctx *ctx, struct sched_job *job,
    const struct sched_need *need, size_t *cand)
{
    bool placed;

    if (!sched_job_special(ctx, job)) {
        if (!sched_index_take(&ctx->index, need->gpus, need->cpus,
                need->memory_mb, (size_t)need->nodes, cand))
            return false;
        sched_consume(ctx, job, need, cand);
        return true;
    }
    sched_job_marks(ctx, job, need, true);
    placed = sched_try_place(ctx, job, need, cand);
    sched_job_marks(ctx, job, need, false);
    return placed;
}

/* The jobs in policy order into order[]; a queue the caller already keeps
 * in that order (pass.c does) is only checked, not sorted again. */
static void
sched_order(const struct sched_policy *policy, struct sched_job *jobs,
    size_t njobs, struct sched_job **order)
{
    bool sorted = true;

    for (size_t i = 0; i < njobs; i++) {
        order[i] = &jobs[i];
        if (sorted && i > 0 &&
            sched_job_ptr_cmp(&order[i - 1], &order[i], (void *)policy) > 0)
            sorted = false;
    }
    if (!sorted)
        qsort_r(order, njobs, sizeof(*order), sched_job_ptr_cmp,
            (void *)policy);
}

/* The context of one pass over nodes: the per-node marks, the index, the
 * maxima of the schedulable nodes and the ids nodes are reserved for. */
static struct sched_pass_ctx *
sched_ctx_create(const struct sched_policy *policy, struct sched_node *nodes,
    size_t nnodes)
{
    struct sched_pass_ctx *ctx = xcalloc(1, sizeof(*ctx));

    ctx->policy = policy;
    ctx->nodes = nodes;
    ctx->nnodes = nnodes;
    ctx->mark = xcalloc(nnodes + 1, sizeof(*ctx->mark));
    ctx->pos = xcalloc(nnodes + 1, sizeof(*ctx->pos));
    ctx->owners = xcalloc(nnodes + 1, sizeof(*ctx->owners));
    for (size_t i = 0; i < nnodes; i++) {
        if (nodes[i].reserved_for != 0)
            ctx->owners[ctx->nowners++] = nodes[i].reserved_for;
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
    qsort(ctx->owners, ctx->nowners, sizeof(*ctx->owners), sched_id_cmp);
    sched_index_init(&ctx->index, policy, nodes, nnodes);
    return ctx;
}

static void
sched_ctx_destroy(struct sched_pass_ctx *ctx)
{
    sched_index_release(&ctx->index);
    free(ctx->owners);
    free(ctx->mark);
    free(ctx->pos);
    free(ctx->shapes);
    free(ctx);
}

void
sched_pass(const struct sched_policy *policy, struct sched_node *nodes,
    size_t nnodes, struct sched_job *jobs, size_t njobs, size_t max_place)
{
    struct sched_pass_ctx *ctx = sched_ctx_create(policy, nodes, nnodes);
    struct sched_job **order = xcalloc(njobs + 1, sizeof(*order));
    size_t *cand = xcalloc(nnodes + 1, sizeof(*cand));
    const struct sched_job *blocker = NULL;
    size_t placed = 0;

    for (size_t i = 0; i < njobs; i++) {
        jobs[i].placed = false;
        jobs[i].node_idx = NULL;
        jobs[i].gpus = NULL;
        jobs[i].reason[0] = '\0';
        jobs[i].blocked = false;
        jobs[i].never = false;
    }
    sched_order(policy, jobs, njobs, order);
    for (size_t i = 0; i < njobs; i++) {
        struct sched_job *job = order[i];
        struct sched_need need = sched_job_need(job);
        const struct sched_shape *shape;

        if (!job->restarting && job->user_running && job->user_max > 0 &&
            *job->user_running >= job->user_max) {
            snprintf(job->reason, sizeof(job->reason),
                "user %s has %d running jobs; the limit is %d "
                "(user_max_running_jobs)",
                job->user ? job->user : "?", *job->user_running, job->user_max);
            continue;
        }
        if (blocker || placed >= max_place) {
            if (sched_never_fits_cheap(ctx, &need, job->reason,
                    sizeof(job->reason))) {
                job->never = true;
                continue;
            }
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
            job->never = true;
            continue;
        }
        if (sched_place(ctx, job, &need, cand)) {
            placed++;
            if (job->user_running && !job->restarting)
                (*job->user_running)++;
            continue;
        }
        sched_job_marks(ctx, job, &need, true);
        sched_count(ctx, &need, job, job->reason, sizeof(job->reason));
        sched_job_marks(ctx, job, &need, false);
        job->blocked = true;
        blocker = job;
    }
    sched_ctx_destroy(ctx);
    free(cand);
    free(order);
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
