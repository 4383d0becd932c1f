/*
 * refusals.c - which refused requests become events (refusals.h)
 */
#include "scheduler/refusals.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/names.h"
#include "common/xalloc.h"

struct refusal {
    struct itab_link link; /* first: the link is the entry */
    int64_t last_event_ms;
    uint64_t quiet;
    char key[REFUSALS_KEY_MAX + 1];
};

static const char *const refusal_names[] = {
    [REFUSAL_NO_CREDENTIAL] = "no_credential",
    [REFUSAL_UNKNOWN_TOKEN] = "unknown_token",
    [REFUSAL_TOKEN_EXPIRED] = "token_expired",
    [REFUSAL_TOKEN_REVOKED] = "token_revoked",
    [REFUSAL_BAD_CREDENTIAL] = "bad_credential",
    [REFUSAL_LEGACY] = "legacy_credential",
    [REFUSAL_BAD_MAC] = "bad_mac",
    [REFUSAL_CLOCK_SKEW] = "clock_skew",
    [REFUSAL_REPLAY] = "replay",
    [REFUSAL_REPLAY_FULL] = "replay_window_full",
    [REFUSAL_OPERATOR] = "operator_only",
    [REFUSAL_FORBIDDEN] = "forbidden",
};

const char *
refusal_reason_str(enum refusal_reason r)
{
    return names_str(refusal_names, REFUSAL_N, (int)r, "unknown");
}

static struct refusal *
refusal_of(struct itab_link *l)
{
    return (struct refusal *)(void *)l;
}

static void
refusal_free(struct itab_link *l)
{
    free(refusal_of(l));
}

static bool
refusal_match(const struct itab_link *l, const void *key)
{
    return strcmp(((const struct refusal *)(const void *)l)->key, key) == 0;
}

/* FNV-1a. */
static size_t
refusal_hash(const char *key)
{
    uint64_t h = 14695981039346656037ULL;

    for (; *key; key++)
        h = (h ^ (unsigned char)*key) * 1099511628211ULL;
    return (size_t)h;
}

void
refusals_init(struct refusals *r)
{
    memset(r, 0, sizeof(*r));
    itab_init(&r->tab);
}

void
refusals_release(struct refusals *r)
{
    itab_release(&r->tab, refusal_free);
}

/* Forget the keys without an event for REFUSALS_FORGET_MS (the oldest
 * events first). */
static void
refusals_expire(struct refusals *r, int64_t now_ms)
{
    struct itab_link *l;

    while ((l = r->tab.head) != NULL &&
           now_ms - refusal_of(l)->last_event_ms >= REFUSALS_FORGET_MS) {
        itab_remove(&r->tab, l);
        free(refusal_of(l));
    }
}

bool
refusals_take(struct refusals *r, enum refusal_reason reason, const char *key,
    int64_t now_ms, uint64_t *quiet, uint64_t *unrecorded)
{
    char k[REFUSALS_KEY_MAX + 1];
    struct itab_link *l;
    struct refusal *e = NULL;
    size_t h;

    if (reason >= 0 && reason < REFUSAL_N)
        r->count[reason]++;
    refusals_expire(r, now_ms);
    snprintf(k, sizeof(k), "%s", key);
    h = refusal_hash(k);
    if ((l = itab_find(&r->tab, h, refusal_match, k)) != NULL) {
        e = refusal_of(l);
        if (now_ms - e->last_event_ms < REFUSALS_QUIET_MS) {
            e->quiet++;
            return false;
        }
    }
    if (!tbucket_take(&r->bucket, REFUSALS_RATE, REFUSALS_BURST, now_ms,
            NULL)) {
        r->unrecorded++;
        return false;
    }
    *quiet = e != NULL ? e->quiet : 0;
    *unrecorded = r->unrecorded;
    r->unrecorded = 0;
    if (e != NULL) {
        /* Last again: the list stays in the order of the last events. */
        itab_remove(&r->tab, &e->link);
    } else if (r->tab.count < REFUSALS_KEYS) {
        e = xcalloc(1, sizeof(*e));
        memcpy(e->key, k, sizeof(e->key));
    }
    if (e != NULL) {
        e->quiet = 0;
        e->last_event_ms = now_ms;
        itab_add(&r->tab, &e->link, h);
    }
    if (reason >= 0 && reason < REFUSAL_N)
        r->recorded[reason]++;
    return true;
}
