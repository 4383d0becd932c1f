/*
 * http_caps.c - connection caps of the HTTP server, pure bookkeeping
 */
#include "scheduler/http_caps.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

/* FNV-1a. */
static size_t
peer_hash(const char *key)
{
    unsigned long h = 2166136261u;

    for (const unsigned char *p = (const unsigned char *)key; *p; p++)
        h = (h ^ *p) * 16777619u;
    return h % HTTP_PEERS_BUCKETS;
}

static struct http_peer **
peer_find(struct http_peers *t, const char *key)
{
    struct http_peer **pp = &t->b[peer_hash(key)];

    while (*pp != NULL && strncmp((*pp)->key, key, HTTP_PEER_KEY_MAX - 1) != 0)
        pp = &(*pp)->next;
    return pp;
}

size_t
http_peers_count(const struct http_peers *t, const char *key)
{
    struct http_peer **pp = peer_find((struct http_peers *)t, key);

    return *pp ? (*pp)->n : 0;
}

void
http_peers_add(struct http_peers *t, const char *key)
{
    struct http_peer **pp = peer_find(t, key);

    if (*pp == NULL) {
        *pp = xcalloc(1, sizeof(**pp));
        snprintf((*pp)->key, sizeof((*pp)->key), "%s", key);
        t->npeers++;
    }
    (*pp)->n++;
}

void
http_peers_del(struct http_peers *t, const char *key)
{
    struct http_peer **pp = peer_find(t, key);
    struct http_peer *p = *pp;

    if (p == NULL)
        return;
    if (--p->n > 0)
        return;
    *pp = p->next;
    free(p);
    t->npeers--;
}

void
http_peers_clear(struct http_peers *t)
{
    for (size_t i = 0; i < HTTP_PEERS_BUCKETS; i++) {
        while (t->b[i] != NULL) {
            struct http_peer *p = t->b[i];

            t->b[i] = p->next;
            free(p);
        }
    }
    t->npeers = 0;
}

size_t
http_caps_peer_max(const struct http_caps_cfg *cfg)
{
    size_t twice = 2 * cfg->per_peer;

    return twice > cfg->per_peer + HTTP_PEER_RESTRICTED_MIN
               ? twice
               : cfg->per_peer + HTTP_PEER_RESTRICTED_MIN;
}

enum http_admit
http_caps_admit(const struct http_caps_cfg *cfg,
    const struct http_caps_now *now, bool *evict, enum http_refusal *why)
{
    size_t budget;

    *evict = false;
    *why = HTTP_REFUSE_NONE;
    if (cfg->max_conns > 0 && now->total >= cfg->max_conns) {
        if (!now->can_evict) {
            *why = HTTP_REFUSE_TOTAL;
            return HTTP_ADMIT_SHED;
        }
        *evict = true;
    }
    if (now->is_unix) {
        if (!now->exempt && cfg->per_peer > 0 && now->peer >= cfg->per_peer) {
            *why = HTTP_REFUSE_PEER;
            return HTTP_ADMIT_SHED;
        }
        return HTTP_ADMIT_OK;
    }
    /* Past its cap an address may hold as many restricted connections
     * more (new agents behind the same NAT), never the whole server. */
    if (cfg->per_peer > 0 && now->peer >= http_caps_peer_max(cfg)) {
        *why = HTTP_REFUSE_PEER;
        return HTTP_ADMIT_SHED;
    }
    budget = cfg->max_conns > cfg->reserve ? cfg->max_conns - cfg->reserve : 0;
    if (cfg->max_conns > 0 && now->user >= budget) {
        *why = HTTP_REFUSE_USERS;
        return HTTP_ADMIT_RESTRICTED;
    }
    if (cfg->per_peer > 0 && now->peer >= cfg->per_peer) {
        *why = HTTP_REFUSE_PEER;
        return HTTP_ADMIT_RESTRICTED;
    }
    return HTTP_ADMIT_OK;
}

const char *
http_refusal_name(enum http_refusal why)
{
    switch (why) {
    case HTTP_REFUSE_TOTAL:
        return "total";
    case HTTP_REFUSE_USERS:
        return "users";
    case HTTP_REFUSE_PEER:
        return "peer";
    default:
        return "none";
    }
}
