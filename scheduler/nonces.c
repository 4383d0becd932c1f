/*
 * nonces.c - the agents' requests seen within the window (nonces.h)
 *
 * Entries are kept in the order they were added, which is close to the
 * order of their expiry (the agents' clocks agree within the window), so
 * forgetting walks from the oldest and stops at the first that has not
 * expired. One that expired behind it waits a little longer: harmless,
 * since a replay of it fails the window check first.
 */
#include "scheduler/nonces.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

struct nonce {
    struct itab_link link; /* first: the link is the entry */
    int64_t expires_ms;
    unsigned char key[NONCES_KEY_LEN];
};

static struct nonce *
nonce_of(struct itab_link *l)
{
    return (struct nonce *)(void *)l;
}

static void
nonce_free(struct itab_link *l)
{
    free(nonce_of(l));
}

static bool
nonce_match(const struct itab_link *l, const void *key)
{
    return memcmp(((const struct nonce *)(const void *)l)->key, key,
               NONCES_KEY_LEN) == 0;
}

static size_t
nonce_hash(const unsigned char *key)
{
    size_t h;

    /* The key is a MAC: any of its bytes are as good as a hash. */
    memcpy(&h, key, sizeof(h));
    return h;
}

void
nonces_init(struct nonces *n, size_t max)
{
    memset(n, 0, sizeof(*n));
    itab_init(&n->tab);
    n->max = max ? max : NONCES_MAX_DEFAULT;
}

void
nonces_release(struct nonces *n)
{
    itab_release(&n->tab, nonce_free);
}

static void
nonces_expire(struct nonces *n, int64_t now_ms)
{
    struct itab_link *l;

    while ((l = n->tab.head) != NULL && nonce_of(l)->expires_ms < now_ms) {
        itab_remove(&n->tab, l);
        free(nonce_of(l));
    }
}

int
nonces_add(struct nonces *n, const unsigned char *key, int64_t expires_ms,
    int64_t now_ms)
{
    struct nonce *e;
    size_t h = nonce_hash(key);

    nonces_expire(n, now_ms);
    if (itab_find(&n->tab, h, nonce_match, key) != NULL)
        return -EEXIST;
    if (n->tab.count >= n->max) {
        n->full++;
        return -ENOSPC;
    }
    e = xcalloc(1, sizeof(*e));
    memcpy(e->key, key, NONCES_KEY_LEN);
    e->expires_ms = expires_ms;
    itab_add(&n->tab, &e->link, h);
    return 0;
}

size_t
nonces_count(const struct nonces *n)
{
    return n->tab.count;
}
