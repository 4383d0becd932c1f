/*
 * itab.h - an intrusive hash table that also keeps insertion order
 *
 * The scheduler's table of live jobs (by id) and its table of nodes (by
 * name) are this one structure: each element embeds a struct itab_link;
 * the table chains the links in buckets by a hash the caller computes,
 * and in a list in the order they were added, which is the order callers
 * walk. The table never allocates or frees an element; it owns only its
 * buckets. Single-threaded, like everything that uses it.
 */
#ifndef COMMON_ITAB_H
#define COMMON_ITAB_H

#include <stdbool.h>
#include <stddef.h>

struct itab_link {
    struct itab_link *hnext;       /* bucket chain */
    struct itab_link *prev, *next; /* insertion order */
    size_t hash;                   /* the caller's, kept for growing */
};

struct itab {
    struct itab_link **buckets;
    size_t nbuckets;               /* a power of two */
    struct itab_link *head, *tail; /* insertion order */
    size_t count;
};

/* Whether the element that embeds l has the key `key`. */
typedef bool itab_match_fn(const struct itab_link *l, const void *key);
/* Frees the element that embeds l (itab_release). */
typedef void itab_free_fn(struct itab_link *l);

/* An empty table. itab_release frees what this allocates. */
void itab_init(struct itab *t);
/* Calls free_fn (when not NULL) on every element still in the table, in
 * order, then frees the buckets and leaves t zeroed. A zeroed table (never
 * initialised, or released already) may be released again. */
void itab_release(struct itab *t, itab_free_fn *free_fn);
/* Links l last, in the bucket of hash (any value: the table masks it).
 * The caller makes sure its key is not in the table yet. */
void itab_add(struct itab *t, struct itab_link *l, size_t hash);
/* Unlinks l; a link that is not in t is left alone. */
void itab_remove(struct itab *t, struct itab_link *l);
/* An element with this hash for which match(l, key) holds (keys are
 * unique, so the one), or NULL. key is passed through to match. */
struct itab_link *itab_find(const struct itab *t, size_t hash,
    itab_match_fn *match, const void *key);

#endif
