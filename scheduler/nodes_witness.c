/*
 * nodes_witness.c - the witnesses of nodes: the sets, contact, the gate
 */
#include "scheduler/nodes_witness.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/log.h"
#include "common/timeid.h"
#include "common/xalloc.h"
#include "scheduler/db.h"
#include "scheduler/node.h"
#include "scheduler/schedd.h"

/* A node's "rack" label; NULL when it has none. */
static const char *
nodes_witness_rack(const struct node *node)
{
    return node_label(node, "rack");
}

/* W(node) from the whole table: O(nodes), once per node (and again only
 * when one of its witnesses leaves). */
static void
nodes_witness_rank(struct schedd *sd, struct node *node)
{
    const char *rack = nodes_witness_rack(node);
    uint64_t self_hash = witness_self_hash(node->name);
    size_t idx[WITNESS_MAX], i = 0;
    struct node **all = xcalloc(node_table_count(&sd->nodes) + 1, sizeof(*all));

    node->nwit = 0;
    for (struct node *m = node_table_first(&sd->nodes); m;
         m = node_table_next(m), i++) {
        struct witness_rank r;

        all[i] = m;
        if (m == node)
            continue;
        r = witness_rank_with(self_hash, rack, m->name, nodes_witness_rack(m));
        node->nwit = witness_offer(node->wit_rank, idx, node->nwit, &r, i);
    }
    for (size_t j = 0; j < node->nwit; j++)
        node->wit[j] = all[idx[j]];
    node->wit_known = true;
    free(all);
}

size_t
nodes_witness_set(struct schedd *sd, struct node *node, struct node **out)
{
    if (!node->wit_known)
        nodes_witness_rank(sd, node);
    memcpy(out, node->wit, node->nwit * sizeof(*out));
    return node->nwit;
}

void
nodes_witness_joined(struct schedd *sd, struct node *m)
{
    const char *mrack = nodes_witness_rack(m);

    m->wit_known = false;
    for (struct node *x = node_table_first(&sd->nodes); x;
         x = node_table_next(x)) {
        struct node *was[WITNESS_MAX];
        size_t ids[WITNESS_MAX], k = x->nwit;
        struct witness_rank r;

        if (x == m || !x->wit_known)
            continue;
        r = witness_rank_of(x->name, nodes_witness_rack(x), m->name, mrack);
        for (size_t i = 0; i < k; i++) {
            was[i] = x->wit[i];
            ids[i] = i;
        }
        x->nwit = witness_offer(x->wit_rank, ids, k, &r, k);
        for (size_t i = 0; i < x->nwit; i++)
            x->wit[i] = ids[i] == k ? m : was[ids[i]];
    }
}

void
nodes_witness_left(struct schedd *sd, struct node *m)
{
    m->wit_known = false;
    for (struct node *x = node_table_first(&sd->nodes); x;
         x = node_table_next(x)) {
        for (size_t i = 0; x->wit_known && i < x->nwit; i++)
            if (x->wit[i] == m)
                x->wit_known = false;
    }
}

/* Whether the k nodes w are, in order, the set last sent to node. */
static bool
nodes_witness_same(const struct node *node, struct node *const *w, size_t k)
{
    if (k != node->nwit_sent)
        return false;
    for (size_t i = 0; i < k; i++)
        if (strcmp(node->wit_sent[i], w[i]->name) != 0)
            return false;
    return true;
}

/* src into dst of size bytes, cut to fit (at every status: no printf). */
static void
nodes_witness_copy(char *dst, size_t size, const char *src)
{
    size_t n = strnlen(src, size - 1);

    memcpy(dst, src, n);
    dst[n] = '\0';
}

int
nodes_witness_reply(struct schedd *sd, struct node *node,
    struct proto_status_reply *reply)
{
    struct node *w[WITNESS_MAX];
    size_t k = nodes_witness_set(sd, node, w);

    reply->has_witnesses = true;
    reply->nwitnesses = k;
    for (size_t i = 0; i < k; i++) {
        struct proto_witness *pw = &reply->witnesses[i];

        nodes_witness_copy(pw->node, sizeof(pw->node), w[i]->name);
        nodes_witness_copy(pw->addr, sizeof(pw->addr), w[i]->addr);
        pw->port = w[i]->witness_port;
    }
    if (nodes_witness_same(node, w, k))
        return 0;
    for (size_t i = 0; i < node->nwit_sent; i++)
        free(node->wit_sent[i]);
    node->nwit_sent = k;
    for (size_t i = 0; i < k; i++)
        node->wit_sent[i] = xstrdup(w[i]->name);
    return schedd_db_check(sd, db_node_witness(sd->db, node));
}

int
nodes_witness_port(struct schedd *sd, struct node *node, int port)
{
    if (port == node->witness_port)
        return 0;
    node->witness_port = port;
    return schedd_db_check(sd, db_node_witness(sd->db, node));
}

void
nodes_witness_seen(struct schedd *sd, struct node *node, int64_t mono)
{
    witness_contact_seen(&node->contact, mono, sd->lease_ms,
        sd->node_timeout_ms);
}

/* Whether node's answers now grant short leases. */
static bool
nodes_witness_short(const struct schedd *sd, const struct node *node,
    int64_t mono)
{
    /* Only a node whose pings arrive (an idle agent pings now and then
     * too) and whose agent did not say it stops: statuses alone renew a
     * short lease too seldom. */
    return sd->lease_ping_ms > 0 && !node->ping_stopped &&
           node->ping_mono != 0 &&
           mono - node->ping_mono <= NODES_WITNESS_PING_TRUST_MS;
}

/* Remember a grant of lease_ms (status interval interval_ms) made at
 * mono: the latest end of a lease granted, and the last grant. */
static void
nodes_witness_told(struct node *node, int64_t mono, int64_t lease_ms,
    int64_t interval_ms)
{
    int64_t until = mono + interval_ms + lease_ms;

    if (until > node->told_until_mono)
        node->told_until_mono = until;
    node->told_lease_ms = lease_ms;
    node->told_interval_ms = interval_ms;
}

void
nodes_witness_grant(struct schedd *sd, struct node *node, int64_t *lease_ms,
    int64_t *interval_ms)
{
    int64_t mono = timeid_mono_ms();

    node->told_short = nodes_witness_short(sd, node, mono);
    if (node->told_short) {
        *lease_ms = sd->short_lease_ms;
        *interval_ms = sd->lease_ping_ms;
    } else {
        *lease_ms = sd->lease_ms;
        *interval_ms = sd->heartbeat_ms;
    }
    nodes_witness_told(node, mono, *lease_ms, *interval_ms);
}

void
nodes_witness_dispatch(struct schedd *sd, struct node *node)
{
    int64_t lease, interval, told_lease = node->told_lease_ms,
                             told_interval = node->told_interval_ms;

    /* The agent starts the attempt with the lease of the last grant it
     * received: the last one made, or this one. */
    nodes_witness_grant(sd, node, &lease, &interval);
    nodes_witness_told(node, timeid_mono_ms(),
        lease > told_lease ? lease : told_lease,
        interval > told_interval ? interval : told_interval);
}

/* The gap within which a majority of the k nodes w (NULL: unknown, not
 * continuous) were each heard; -1 when fewer than a majority have been
 * in continuous contact. */
static int64_t
nodes_witness_gap(struct schedd *sd, struct node *const *w, size_t k,
    int64_t mono, size_t *ncont)
{
    int64_t gaps[WITNESS_MAX];
    size_t n = 0;

    for (size_t i = 0; i < k; i++)
        if (w[i] != NULL && witness_contact_continuous(&w[i]->contact, mono,
                                sd->lease_ms, sd->node_timeout_ms))
            gaps[n++] = witness_contact_gap(&w[i]->contact, mono);
    *ncont = n;
    return witness_majority_gap(k, gaps, n);
}

bool
nodes_witness_may_replace(struct schedd *sd, struct node *node, int64_t mono,
    char *why, size_t cap)
{
    struct node *cur[WITNESS_MAX], *sent[WITNESS_MAX];
    size_t ncur = nodes_witness_set(sd, node, cur), nsent = node->nwit_sent;
    size_t ccur, csent;
    int64_t gcur, gsent, at;

    for (size_t i = 0; i < nsent; i++)
        sent[i] = node_table_find(&sd->nodes, node->wit_sent[i]);
    if (ncur == 0 && nsent == 0) {
        /* Nobody can extend its leases: they end as granted. */
        at = node->told_until_mono + WITNESS_EXCHANGE_MS;
        if (mono >= at)
            return true;
        snprintf(why, cap, "its leases may still run: waiting %lld ms more",
            (long long)(at - mono));
        return false;
    }
    gcur = nodes_witness_gap(sd, cur, ncur, mono, &ccur);
    gsent = nodes_witness_gap(sd, sent, nsent, mono, &csent);
    if (gcur < 0 || gsent < 0) {
        snprintf(why, cap,
            "%zu of its %zu witnesses in continuous contact for %d ms (a "
            "majority needed): the scheduler may be what was cut off",
            ccur, ncur, sd->node_timeout_ms);
        return false;
    }
    at = witness_replace_at(node->told_until_mono, gcur > gsent ? gcur : gsent);
    if (mono >= at)
        return true;
    snprintf(why, cap,
        "its leases may have been extended by witnesses: waiting %lld ms "
        "more (its last lease, one status interval, and a gap of %lld ms "
        "within which a majority of its witnesses were heard)",
        (long long)(at - mono), (long long)(gcur > gsent ? gcur : gsent));
    return false;
}

int
nodes_witness_conf(const struct config *cfg, struct schedd_opts *o,
    struct err *err)
{
    o->lease_ms = (int)config_int(cfg, "lease_ms");
    /* A node is declared lost only after its supervisors' leases have run
     * out (and they killed their ranks): only then may the next attempt
     * start without waiting for anything else. */
    if (o->lease_ms >= o->node_timeout_ms)
        return err_set(err, -EINVAL,
            "lease_ms (%d) must be below "
            "node_timeout_ms (%d): ranks cut off from the scheduler must be "
            "dead before their node is declared lost",
            o->lease_ms, o->node_timeout_ms);
    o->lease_ping_ms = (int)config_int(cfg, "lease_ping_ms");
    o->short_lease_ms = (int)config_int(cfg, "short_lease_ms");
    if (o->short_lease_ms > o->lease_ms)
        o->short_lease_ms = o->lease_ms;
    /* A ping that fails starts the witnesses' rounds after two intervals;
     * the first round takes one more; one more for a lost datagram. A
     * lease too short for that (a small lease_ms) gets pings as often as
     * it needs, 50 ms at most. */
    if (o->lease_ping_ms > 0 && 4 * o->lease_ping_ms > o->short_lease_ms) {
        int was = o->lease_ping_ms;

        o->lease_ping_ms = o->short_lease_ms / 4 >= 50 ? o->short_lease_ms / 4
                                                       : 0;
        log_notice("lease_ping_ms=%d, not %d: a quarter of short_lease_ms "
                   "(%d, at most lease_ms) at most (0: too short to ping)",
            o->lease_ping_ms, was, o->short_lease_ms);
    }
    return 0;
}
