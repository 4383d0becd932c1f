/*
 * nodes_witness.c - the witnesses of nodes: the sets, contact, the gate
 */
#include "scheduler/nodes_witness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

        snprintf(pw->node, sizeof(pw->node), "%s", w[i]->name);
        snprintf(pw->addr, sizeof(pw->addr), "%s", w[i]->addr);
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
    witness_contact_seen(&node->contact, mono, sd->lease_ms);
}

/* How many of the k nodes have been in continuous contact. */
static size_t
nodes_witness_continuous(struct schedd *sd, struct node *const *w, size_t k,
    int64_t mono)
{
    size_t n = 0;

    for (size_t i = 0; i < k; i++)
        if (w[i] != NULL && witness_contact_continuous(&w[i]->contact, mono,
                                sd->lease_ms, sd->node_timeout_ms))
            n++;
    return n;
}

bool
nodes_witness_may_replace(struct schedd *sd, struct node *node, int64_t mono,
    char *why, size_t cap)
{
    struct node *cur[WITNESS_MAX], *sent[WITNESS_MAX];
    size_t ncur = nodes_witness_set(sd, node, cur), nsent = node->nwit_sent;
    size_t ccur, csent;
    int64_t silence = witness_silence_ms(sd->lease_ms, sd->heartbeat_ms);

    for (size_t i = 0; i < nsent; i++)
        sent[i] = node_table_find(&sd->nodes, node->wit_sent[i]);
    if (ncur == 0 && nsent == 0)
        return true;
    if (mono - node->last_seen_mono < silence) {
        snprintf(why, cap,
            "its leases may have been extended by witnesses: waiting until "
            "it has been silent for %lld ms",
            (long long)silence);
        return false;
    }
    ccur = nodes_witness_continuous(sd, cur, ncur, mono);
    csent = nodes_witness_continuous(sd, sent, nsent, mono);
    if (witness_may_replace(ncur, ccur) && witness_may_replace(nsent, csent))
        return true;
    snprintf(why, cap,
        "%zu of its %zu witnesses in continuous contact for %d ms (a "
        "majority needed): the scheduler may be what was cut off",
        ccur, ncur, sd->node_timeout_ms);
    return false;
}
