/*
 * node.c - node state, resources and free-resource accounting
 *
 * Free resources are totals minus what held placements take; the hold list
 * is short (the attempts on one node), so free GPUs are computed on demand
 * rather than kept in a second structure that could drift.
 */
#include "scheduler/node.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/names.h"
#include "common/xalloc.h"
#include "scheduler/attempt.h"
#include "scheduler/health.h"

static const char *const node_state_names[NODE_STATE_COUNT] = {
    [NODE_STATE_UP] = "UP",
    [NODE_STATE_CORDONED] = "CORDONED",
    [NODE_STATE_DRAINING] = "DRAINING",
    [NODE_STATE_UNHEALTHY] = "UNHEALTHY",
    [NODE_STATE_LOST] = "LOST",
    [NODE_STATE_SUSPECT] = "SUSPECT",
};

const char *
node_state_str(enum node_state s)
{
    return names_str(node_state_names, NODE_STATE_COUNT, s, "UNKNOWN");
}

int
node_state_parse(const char *s, enum node_state *out)
{
    int i = names_index(node_state_names, NODE_STATE_COUNT, s);

    if (i < 0)
        return i;
    *out = (enum node_state)i;
    return 0;
}

struct node *
node_create(const char *name)
{
    struct node *node = xcalloc(1, sizeof(*node));

    node->name = xstrdup(name);
    node->reason = xstrdup("");
    node->health_reason = xstrdup("");
    node->cordon_by = xstrdup("");
    node->addr = xstrdup("");
    node->agent_id = xstrdup("");
    node->state = NODE_STATE_UP;
    return node;
}

void
node_destroy(struct node *node)
{
    if (node == NULL)
        return;
    explicit_bzero(node->node_key, sizeof(node->node_key));
    cred_mac_key_destroy(node->lease_mac);
    free(node->name);
    free(node->reason);
    free(node->health_reason);
    free(node->cordon_by);
    health_destroy(node->health);
    free(node->addr);
    free(node->agent_id);
    free(node->removing_by);
    for (size_t i = 0; i < node->nwit_sent; i++)
        free(node->wit_sent[i]);
    free(node->gpus);
    proto_kv_array_free(node->labels, node->nlabels);
    free(node->holds);
    if (node->ports != NULL)
        portpool_release(node->ports);
    free(node->ports);
    free(node);
}

enum node_state
node_state_compute(const struct node *node)
{
    if (node->lost)
        return NODE_STATE_LOST;
    if (node->cordoned)
        return node->nholds > 0 ? NODE_STATE_DRAINING : NODE_STATE_CORDONED;
    if (node->unhealthy)
        return NODE_STATE_UNHEALTHY;
    if (node->health &&
        (node->health->waiting || health_excluded(node->health, NULL, 0)))
        return NODE_STATE_UNHEALTHY;
    if (node->health && health_suspect(node->health, NULL, 0))
        return NODE_STATE_SUSPECT;
    return NODE_STATE_UP;
}

void
node_stalled(struct node *node, int64_t mono, int64_t stall_ms)
{
    if (stall_ms <= 0 || node->last_seen_mono >= mono - stall_ms)
        return;
    node->last_seen_mono += stall_ms;
}

/*
 * A node loaded from the database has not been heard from since this
 * scheduler started: it stays UP (its agent gets node_timeout_ms to come
 * back) but gets no new work until it reports. An agent keeps a long poll
 * open at all times, so when that connection closes without a new request
 * the agent is most likely dead: new work would only wait for the node to
 * be declared LOST.
 */
bool
node_schedulable(const struct node *node)
{
    return (node->state == NODE_STATE_UP ||
               node->state == NODE_STATE_SUSPECT) &&
           node->reconciled && !node->agent_gone;
}

const char *
node_label(const struct node *node, const char *key)
{
    return proto_kv_value(node->labels, node->nlabels, key);
}

bool
node_labels_equal(const struct node *node, const struct proto_kv *kv, size_t n)
{
    if (node->nlabels != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        const char *v = node_label(node, kv[i].key);

        if (v == NULL || strcmp(v, kv[i].value) != 0)
            return false;
    }
    return true;
}

static int
cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;

    return (x > y) - (x < y);
}

bool
node_update_resources(struct node *node, const char *addr, int cpus,
    int64_t memory_mb, const int *gpus, size_t ngpus,
    const struct proto_kv *labels, size_t nlabels)
{
    int *sorted = xcalloc(ngpus + 1, sizeof(*sorted));
    bool changed;

    if (ngpus)
        memcpy(sorted, gpus, ngpus * sizeof(*sorted));
    qsort(sorted, ngpus, sizeof(*sorted), cmp_int);
    changed = strcmp(node->addr, addr) != 0 || node->cpus != cpus ||
              node->memory_mb != memory_mb || node->ngpus != ngpus ||
              (ngpus && memcmp(node->gpus, sorted, ngpus * sizeof(int))) ||
              !node_labels_equal(node, labels, nlabels);
    if (!changed) {
        free(sorted);
        return false;
    }
    free(node->addr);
    node->addr = xstrdup(addr);
    node->cpus = cpus;
    node->memory_mb = memory_mb;
    free(node->gpus);
    node->gpus = sorted;
    node->ngpus = ngpus;
    proto_kv_array_free(node->labels, node->nlabels);
    node->labels = xcalloc(nlabels + 1, sizeof(*node->labels));
    for (size_t i = 0; i < nlabels; i++) {
        node->labels[i].key = xstrdup(labels[i].key);
        node->labels[i].value = xstrdup(labels[i].value);
    }
    node->nlabels = nlabels;
    return true;
}

int
node_free_cpus(const struct node *node)
{
    int n = node->cpus - node->used_cpus;

    return n > 0 ? n : 0;
}

int64_t
node_free_memory_mb(const struct node *node)
{
    int64_t n = node->memory_mb - node->used_memory_mb;

    return n > 0 ? n : 0;
}

size_t
node_free_gpus(const struct node *node, int *out)
{
    size_t n = 0;

    for (size_t i = 0; i < node->ngpus; i++) {
        int id = node->gpus[i];
        bool held = false;

        for (size_t h = 0; h < node->nholds && !held; h++) {
            const struct placement *p = node->holds[h];

            for (size_t g = 0; g < p->ngpus; g++) {
                if (p->gpus[g] == id) {
                    held = true;
                    break;
                }
            }
        }
        if (!held)
            out[n++] = id;
    }
    return n;
}

void
node_hold_add(struct node *node, struct placement *p)
{
    if (node->nholds == node->holds_cap) {
        node->holds_cap = node->holds_cap ? node->holds_cap * 2 : 4;
        node->holds = xreallocarray(node->holds, node->holds_cap,
            sizeof(*node->holds));
    }
    node->holds[node->nholds++] = p;
    node->used_cpus += p->cpus;
    node->used_memory_mb += p->memory_mb;
}

void
node_hold_remove(struct node *node, struct placement *p)
{
    for (size_t i = 0; i < node->nholds; i++) {
        if (node->holds[i] != p)
            continue;
        memmove(&node->holds[i], &node->holds[i + 1],
            (node->nholds - i - 1) * sizeof(*node->holds));
        node->nholds--;
        node->used_cpus -= p->cpus;
        node->used_memory_mb -= p->memory_mb;
        return;
    }
}

/* ---- table -------------------------------------------------------------- */

static size_t
node_hash(const char *s)
{
    uint64_t h = 14695981039346656037ULL; /* FNV-1a */

    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return (size_t)h;
}

static struct node *
node_of(const struct itab_link *l)
{
    return l ? container_of(l, struct node, link) : NULL;
}

static bool
node_has_name(const struct itab_link *l, const void *name)
{
    return strcmp(node_of(l)->name, name) == 0;
}

static void
node_free_link(struct itab_link *l)
{
    node_destroy(node_of(l));
}

void
node_table_init(struct node_table *t)
{
    itab_init(&t->t);
}

void
node_table_release(struct node_table *t)
{
    itab_release(&t->t, node_free_link);
}

void
node_table_add(struct node_table *t, struct node *node)
{
    node->idx = t->t.count;
    itab_add(&t->t, &node->link, node_hash(node->name));
    t->gen++;
}

void
node_table_touch(struct node_table *t)
{
    t->gen++;
}

void
node_table_remove(struct node_table *t, struct node *node)
{
    for (struct node *n = node_table_next(node); n; n = node_table_next(n))
        n->idx--;
    itab_remove(&t->t, &node->link);
    t->gen++;
}

struct node *
node_table_find(const struct node_table *t, const char *name)
{
    return node_of(itab_find(&t->t, node_hash(name), node_has_name, name));
}

struct node *
node_table_first(const struct node_table *t)
{
    return node_of(t->t.head);
}

struct node *
node_table_next(const struct node *node)
{
    return node_of(node->link.next);
}

size_t
node_table_count(const struct node_table *t)
{
    return t->t.count;
}
