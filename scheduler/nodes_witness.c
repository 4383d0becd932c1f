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
    for (size_t i = 0; i < node->nlabels; i++)
        if (strcmp(node->labels[i].key, "rack") == 0)
            return node->labels[i].value;
    return NULL;
}

size_t
nodes_witness_set(struct schedd *sd, const struct node *node, struct node **out)
{
    size_t n = node_table_count(&sd->nodes), k = 0, idx[WITNESS_MAX];
    struct node **all = xcalloc(n + 1, sizeof(*all));
    const char **names = xcalloc(n + 1, sizeof(*names));
    const char **racks = xcalloc(n + 1, sizeof(*racks));
    size_t i = 0;

    for (struct node *m = node_table_first(&sd->nodes); m && i < n;
         m = node_table_next(m), i++) {
        all[i] = m;
        names[i] = m->name;
        racks[i] = nodes_witness_rack(m);
    }
    k = witness_pick(node->name, nodes_witness_rack(node), names, racks, i,
        idx);
    for (size_t j = 0; j < k; j++)
        out[j] = all[idx[j]];
    free(all);
    free(names);
    free(racks);
    return k;
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
nodes_witness_may_replace(struct schedd *sd, const struct node *node,
    int64_t mono, char *why, size_t cap)
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
