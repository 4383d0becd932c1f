/*
 * sched_index.c - the nodes of one scheduling pass, grouped for placement
 *
 * sched_index.h says what the index is for. Each group is a binary
 * min-heap of node indices keyed by the node's rank in name order, with
 * every node's place in its heap kept in ix->pos so that a node can leave
 * its group from anywhere. The groups live in ix->order, best first; a
 * new group is inserted at its place (a binary search, then a move of the
 * pointers after it: groups are few). Empty groups stay until the pass
 * ends.
 */
#include "scheduler/sched_index.h"

#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

struct sched_group {
    size_t gpus; /* nfree_gpus of its nodes */
    int cpus;    /* free_cpus of its nodes */
    bool suspect;
    size_t *heap; /* node indices, min-heap by rank */
    size_t n, cap;
};

/* ---- one group's heap --------------------------------------------------- */

static void
heap_set(struct sched_index *ix, struct sched_group *g, size_t at, size_t i)
{
    g->heap[at] = i;
    ix->pos[i] = at;
}

static void
heap_up(struct sched_index *ix, struct sched_group *g, size_t at)
{
    size_t i = g->heap[at];

    while (at > 0) {
        size_t parent = (at - 1) / 2;

        if (ix->rank[g->heap[parent]] <= ix->rank[i])
            break;
        heap_set(ix, g, at, g->heap[parent]);
        at = parent;
    }
    heap_set(ix, g, at, i);
}

static void
heap_down(struct sched_index *ix, struct sched_group *g, size_t at)
{
    size_t i = g->heap[at];

    for (;;) {
        size_t c = 2 * at + 1;

        if (c >= g->n)
            break;
        if (c + 1 < g->n && ix->rank[g->heap[c + 1]] < ix->rank[g->heap[c]])
            c++;
        if (ix->rank[g->heap[c]] >= ix->rank[i])
            break;
        heap_set(ix, g, at, g->heap[c]);
        at = c;
    }
    heap_set(ix, g, at, i);
}

static void
heap_push(struct sched_index *ix, struct sched_group *g, size_t i)
{
    if (g->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 8;
        g->heap = xreallocarray(g->heap, g->cap, sizeof(*g->heap));
    }
    g->heap[g->n] = i;
    ix->pos[i] = g->n;
    heap_up(ix, g, g->n++);
}

/* Remove node i (in g) from g. */
static void
heap_remove(struct sched_index *ix, struct sched_group *g, size_t i)
{
    size_t at = ix->pos[i], last = g->heap[--g->n];

    ix->group[i] = NULL;
    if (at == g->n)
        return;
    heap_set(ix, g, at, last);
    if (at > 0 && ix->rank[last] < ix->rank[g->heap[(at - 1) / 2]])
        heap_up(ix, g, at);
    else
        heap_down(ix, g, at);
}

/* ---- the groups --------------------------------------------------------- */

/* Negative when a's nodes come before b's: normal before SUSPECT, then
 * the policy's node_cmp with the names made equal. */
static int
group_cmp(const struct sched_index *ix, const struct sched_group *a,
    const struct sched_group *b)
{
    struct sched_node x = { .name = "" }, y = { .name = "" };

    if (a->suspect != b->suspect)
        return a->suspect ? 1 : -1;
    x.nfree_gpus = a->gpus;
    x.free_cpus = a->cpus;
    y.nfree_gpus = b->gpus;
    y.free_cpus = b->cpus;
    return ix->policy->node_cmp(&x, &y);
}

/* The group of (gpus, cpus, suspect), created at its place if new. */
static struct sched_group *
group_get(struct sched_index *ix, size_t gpus, int cpus, bool suspect)
{
    struct sched_group key = { .gpus = gpus, .cpus = cpus, .suspect = suspect };
    struct sched_group *g;
    size_t lo = 0, hi = ix->ngroups;

    /* Groups that compare equal (a policy may ignore CPUs) sit together:
     * find the first of them, then look along for the exact key. */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (group_cmp(ix, ix->order[mid], &key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t k = lo; k < ix->ngroups; k++) {
        g = ix->order[k];
        if (group_cmp(ix, g, &key) != 0)
            break;
        if (g->gpus == gpus && g->cpus == cpus && g->suspect == suspect)
            return g;
    }
    if (ix->ngroups == ix->cap) {
        ix->cap = ix->cap ? 2 * ix->cap : 16;
        ix->order = xreallocarray(ix->order, ix->cap, sizeof(*ix->order));
    }
    memmove(ix->order + lo + 1, ix->order + lo,
        (ix->ngroups - lo) * sizeof(*ix->order));
    g = xcalloc(1, sizeof(*g));
    *g = key;
    ix->order[lo] = g;
    ix->ngroups++;
    return g;
}

void
sched_index_update(struct sched_index *ix, size_t i)
{
    const struct sched_node *n = &ix->nodes[i];

    if (ix->group[i])
        heap_remove(ix, ix->group[i], i);
    if (!n->schedulable || n->reserved_for != 0)
        return;
    ix->group[i] = group_get(ix, n->nfree_gpus, n->free_cpus, n->suspect);
    heap_push(ix, ix->group[i], i);
}

/* ---- init, take --------------------------------------------------------- */

static int
name_cmp(const void *a, const void *b, void *arg)
{
    const struct sched_node *nodes = arg;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    int c = strcmp(nodes[x].name, nodes[y].name);

    return c ? c : (x > y) - (x < y);
}

void
sched_index_init(struct sched_index *ix, const struct sched_policy *p,
    struct sched_node *nodes, size_t n)
{
    size_t *byname = xcalloc(n + 1, sizeof(*byname));

    memset(ix, 0, sizeof(*ix));
    ix->policy = p;
    ix->nodes = nodes;
    ix->nnodes = n;
    ix->rank = xcalloc(n + 1, sizeof(*ix->rank));
    ix->pos = xcalloc(n + 1, sizeof(*ix->pos));
    ix->group = xcalloc(n + 1, sizeof(*ix->group));
    for (size_t i = 0; i < n; i++)
        byname[i] = i;
    qsort_r(byname, n, sizeof(*byname), name_cmp, nodes);
    for (size_t r = 0; r < n; r++)
        ix->rank[byname[r]] = r;
    free(byname);
    for (size_t i = 0; i < n; i++)
        sched_index_update(ix, i);
}

void
sched_index_release(struct sched_index *ix)
{
    for (size_t k = 0; k < ix->ngroups; k++) {
        free(ix->order[k]->heap);
        free(ix->order[k]);
    }
    free(ix->order);
    free(ix->rank);
    free(ix->pos);
    free(ix->group);
    memset(ix, 0, sizeof(*ix));
}

static bool
group_matches(const struct sched_group *g, int64_t gpus, int64_t cpus)
{
    return g->n > 0 && (int64_t)g->gpus >= gpus && g->cpus >= cpus;
}

static int
rank_cmp(const void *a, const void *b, void *arg)
{
    const size_t *rank = arg;
    size_t x = rank[*(const size_t *)a], y = rank[*(const size_t *)b];

    return (x > y) - (x < y);
}

/* The nodes of g with at least memory_mb free, by name, into tmp; how
 * many. */
static size_t
group_filter(struct sched_index *ix, const struct sched_group *g,
    int64_t memory_mb, size_t *tmp)
{
    size_t n = 0;

    for (size_t k = 0; k < g->n; k++) {
        if (ix->nodes[g->heap[k]].free_memory_mb >= memory_mb)
            tmp[n++] = g->heap[k];
    }
    qsort_r(tmp, n, sizeof(*tmp), rank_cmp, ix->rank);
    return n;
}

/* sched_index_take when memory is asked for: the groups' nodes must be
 * looked at one by one (memory is not what they are grouped by). */
static bool
take_memory(struct sched_index *ix, int64_t gpus, int64_t cpus,
    int64_t memory_mb, size_t k, size_t *out)
{
    size_t *tmp = xcalloc(ix->nnodes + 1, sizeof(*tmp)), n = 0, count = 0;

    for (size_t j = 0; j < ix->ngroups && count < k; j++) {
        const struct sched_group *g = ix->order[j];

        if (!group_matches(g, gpus, cpus))
            continue;
        for (size_t m = 0; m < g->n && count < k; m++)
            count += ix->nodes[g->heap[m]].free_memory_mb >= memory_mb;
    }
    for (size_t j = 0; j < ix->ngroups && count >= k && n < k; j++) {
        struct sched_group *g = ix->order[j];
        size_t got;

        if (!group_matches(g, gpus, cpus))
            continue;
        got = group_filter(ix, g, memory_mb, tmp);
        for (size_t m = 0; m < got && n < k; m++) {
            heap_remove(ix, g, tmp[m]);
            out[n++] = tmp[m];
        }
    }
    free(tmp);
    return count >= k;
}

bool
sched_index_take(struct sched_index *ix, int64_t gpus, int64_t cpus,
    int64_t memory_mb, size_t k, size_t *out)
{
    size_t count = 0, n = 0;

    if (memory_mb > 0)
        return take_memory(ix, gpus, cpus, memory_mb, k, out);
    for (size_t j = 0; j < ix->ngroups && count < k; j++) {
        if (group_matches(ix->order[j], gpus, cpus))
            count += ix->order[j]->n;
    }
    if (count < k)
        return false;
    for (size_t j = 0; j < ix->ngroups && n < k; j++) {
        struct sched_group *g = ix->order[j];

        if (!group_matches(g, gpus, cpus))
            continue;
        while (g->n > 0 && n < k) {
            size_t i = g->heap[0];

            heap_remove(ix, g, i);
            out[n++] = i;
        }
    }
    return true;
}
