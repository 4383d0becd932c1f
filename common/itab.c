/*
 * itab.c - an intrusive hash table that also keeps insertion order
 *
 * The buckets double when the table holds as many elements as buckets,
 * so chains stay short; each link keeps its hash, so growing needs no
 * callback into the element.
 */
#include "itab.h"

#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

#define ITAB_MIN_BUCKETS 64

static struct itab_link **
itab_bucket(const struct itab *t, size_t hash)
{
    return &t->buckets[hash & (t->nbuckets - 1)];
}

void
itab_init(struct itab *t)
{
    memset(t, 0, sizeof(*t));
    t->nbuckets = ITAB_MIN_BUCKETS;
    t->buckets = xcalloc(t->nbuckets, sizeof(*t->buckets));
}

void
itab_release(struct itab *t, itab_free_fn *free_fn)
{
    struct itab_link *l = t->head;

    while (l && free_fn) {
        struct itab_link *next = l->next;

        free_fn(l);
        l = next;
    }
    free(t->buckets);
    memset(t, 0, sizeof(*t));
}

static void
itab_grow(struct itab *t)
{
    struct itab old = *t;

    t->nbuckets *= 2;
    t->buckets = xcalloc(t->nbuckets, sizeof(*t->buckets));
    for (struct itab_link *l = t->head; l; l = l->next) {
        struct itab_link **b = itab_bucket(t, l->hash);

        l->hnext = *b;
        *b = l;
    }
    free(old.buckets);
}

void
itab_add(struct itab *t, struct itab_link *l, size_t hash)
{
    struct itab_link **b;

    if (t->count + 1 > t->nbuckets)
        itab_grow(t);
    b = itab_bucket(t, hash);
    l->hash = hash;
    l->hnext = *b;
    *b = l;
    l->prev = t->tail;
    l->next = NULL;
    if (t->tail)
        t->tail->next = l;
    else
        t->head = l;
    t->tail = l;
    t->count++;
}

void
itab_remove(struct itab *t, struct itab_link *l)
{
    struct itab_link **pp = itab_bucket(t, l->hash);

    while (*pp && *pp != l)
        pp = &(*pp)->hnext;
    if (*pp == NULL)
        return;
    *pp = l->hnext;
    if (l->prev)
        l->prev->next = l->next;
    else
        t->head = l->next;
    if (l->next)
        l->next->prev = l->prev;
    else
        t->tail = l->prev;
    l->prev = l->next = l->hnext = NULL;
    t->count--;
}

struct itab_link *
itab_find(const struct itab *t, size_t hash, itab_match_fn *match,
    const void *key)
{
    struct itab_link *l = *itab_bucket(t, hash);

    while (l && (l->hash != hash || !match(l, key)))
        l = l->hnext;
    return l;
}
