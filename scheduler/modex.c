/*
 * modex.c - the PMIx direct modex requests relayed through the scheduler
 * (modex.h)
 *
 * Small linear lists: a request lives for one round trip, and only the
 * ranks of running multi-node MPI jobs ask.
 */
#include "scheduler/modex.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

struct modex_req {
    struct modex_item item;
    char *owner;
    bool delivered;
    void *token;
    struct modex_req *next;
};

struct modex_poller {
    char *node;
    void *poller;
    struct modex_poller *next;
};

struct modex_table {
    modex_answer_fn *answer;
    modex_deliver_fn *deliver;
    void *arg;
    uint64_t next_id;
    struct modex_req *reqs;
    struct modex_poller *pollers;
};

struct modex_table *
modex_table_create(modex_answer_fn *answer, modex_deliver_fn *deliver,
    void *arg)
{
    struct modex_table *t = xcalloc(1, sizeof(*t));

    t->answer = answer;
    t->deliver = deliver;
    t->arg = arg;
    t->next_id = 1;
    return t;
}

static void
modex_req_free(struct modex_req *r)
{
    free(r->owner);
    free(r);
}

static void
modex_poller_free(struct modex_poller *p)
{
    free(p->node);
    free(p);
}

void
modex_table_destroy(struct modex_table *t)
{
    struct modex_poller *p;
    struct modex_req *r;

    if (t == NULL)
        return;
    while ((r = t->reqs) != NULL) {
        t->reqs = r->next;
        modex_req_free(r);
    }
    while ((p = t->pollers) != NULL) {
        t->pollers = p->next;
        modex_poller_free(p);
    }
    free(t);
}

/* Delivers node's undelivered requests to poller (answered even when
 * there are none). */
static void
modex_deliver(struct modex_table *t, const char *node, void *poller)
{
    struct modex_item *items = NULL;
    size_t n = 0;

    for (struct modex_req *r = t->reqs; r != NULL; r = r->next) {
        if (r->delivered || strcmp(r->owner, node) != 0)
            continue;
        items = xreallocarray(items, n + 1, sizeof(*items));
        items[n++] = r->item;
        r->delivered = true;
    }
    t->deliver(poller, items, n, t->arg);
    free(items);
}

/* Unlinks and returns node's first poller; NULL when none waits. */
static struct modex_poller *
modex_poller_take(struct modex_table *t, const char *node, void *poller)
{
    struct modex_poller **pp, *p;

    for (pp = &t->pollers; (p = *pp) != NULL; pp = &p->next) {
        if ((node != NULL && strcmp(p->node, node) == 0) ||
            (node == NULL && p->poller == poller)) {
            *pp = p->next;
            return p;
        }
    }
    return NULL;
}

uint64_t
modex_request(struct modex_table *t, int64_t job, int attempt,
    const char *owner, uint32_t rank, void *token)
{
    struct modex_req *r = xcalloc(1, sizeof(*r));
    struct modex_poller *p;

    r->item.id = t->next_id++;
    r->item.job = job;
    r->item.attempt = attempt;
    r->item.rank = rank;
    r->owner = xstrdup(owner);
    r->token = token;
    r->next = t->reqs;
    t->reqs = r;
    if ((p = modex_poller_take(t, owner, NULL)) != NULL) {
        modex_deliver(t, owner, p->poller);
        modex_poller_free(p);
    }
    return r->item.id;
}

bool
modex_poll(struct modex_table *t, const char *node, void *poller)
{
    struct modex_poller *p;

    for (struct modex_req *r = t->reqs; r != NULL; r = r->next) {
        if (!r->delivered && strcmp(r->owner, node) == 0) {
            modex_deliver(t, node, poller);
            return true;
        }
    }
    p = xcalloc(1, sizeof(*p));
    p->node = xstrdup(node);
    p->poller = poller;
    p->next = t->pollers;
    t->pollers = p;
    return false;
}

void
modex_poller_gone(struct modex_table *t, void *poller)
{
    struct modex_poller *p = modex_poller_take(t, NULL, poller);

    if (p != NULL)
        modex_poller_free(p);
}

/* Unlinks and returns the first request that match() accepts. */
static struct modex_req *
modex_req_take(struct modex_table *t,
    bool (*match)(const struct modex_req *, const void *), const void *key)
{
    struct modex_req **pp, *r;

    for (pp = &t->reqs; (r = *pp) != NULL; pp = &r->next) {
        if (match(r, key)) {
            *pp = r->next;
            return r;
        }
    }
    return NULL;
}

static bool
modex_match_id(const struct modex_req *r, const void *key)
{
    return r->item.id == *(const uint64_t *)key;
}

static bool
modex_match_token(const struct modex_req *r, const void *key)
{
    return r->token == key;
}

static bool
modex_match_owner(const struct modex_req *r, const void *key)
{
    return strcmp(r->owner, key) == 0;
}

static bool
modex_match_any(const struct modex_req *r, const void *key)
{
    (void)r;
    (void)key;
    return true;
}

int
modex_reply(struct modex_table *t, uint64_t id, const char *node, bool ok,
    const char *data, size_t len, const char *msg, struct err *err)
{
    struct modex_req *r;

    for (r = t->reqs; r != NULL && r->item.id != id; r = r->next)
        ;
    if (r == NULL)
        return err_set(err, -ENOENT,
            "no modex request %llu is waiting (it failed or timed out)",
            (unsigned long long)id);
    if (strcmp(r->owner, node) != 0)
        return err_set(err, -EPERM,
            "modex request %llu is for node '%s', not '%s'",
            (unsigned long long)id, r->owner, node);
    r = modex_req_take(t, modex_match_id, &id);
    if (ok)
        t->answer(r->token, COLL_DONE, NULL, data != NULL ? data : "", len,
            t->arg);
    else
        t->answer(r->token, COLL_FAILED, msg, NULL, 0, t->arg);
    modex_req_free(r);
    return 0;
}

void
modex_token_gone(struct modex_table *t, void *token)
{
    struct modex_req *r = modex_req_take(t, modex_match_token, token);

    if (r != NULL)
        modex_req_free(r);
}

void
modex_token_expired(struct modex_table *t, void *token)
{
    struct modex_req *r = modex_req_take(t, modex_match_token, token);
    char *msg;

    if (r == NULL)
        return;
    msg = xasprintf("the data of rank %u of job %lld attempt %d did not come "
                    "from node '%s' in time",
        r->item.rank, (long long)r->item.job, r->item.attempt, r->owner);
    t->answer(r->token, COLL_TIMEOUT, msg, NULL, 0, t->arg);
    free(msg);
    modex_req_free(r);
}

/* Fails every request match() accepts with why. */
static void
modex_fail_matching(struct modex_table *t,
    bool (*match)(const struct modex_req *, const void *), const void *key,
    const char *why)
{
    struct modex_req *r;

    while ((r = modex_req_take(t, match, key)) != NULL) {
        t->answer(r->token, COLL_FAILED, why, NULL, 0, t->arg);
        modex_req_free(r);
    }
}

void
modex_node_gone(struct modex_table *t, const char *node, const char *why)
{
    char *msg = xasprintf("node '%s': %s", node, why);

    modex_fail_matching(t, modex_match_owner, node, msg);
    free(msg);
}

struct modex_sweep_key {
    int64_t job;
    int attempt;
};

static bool
modex_match_attempt(const struct modex_req *r, const void *key)
{
    const struct modex_sweep_key *k = key;

    return r->item.job == k->job && r->item.attempt == k->attempt;
}

void
modex_sweep(struct modex_table *t, coll_alive_fn *alive, void *arg)
{
    struct modex_sweep_key k;
    struct modex_req *r;
    char why[512];

    for (r = t->reqs; r != NULL;) {
        why[0] = '\0';
        if (alive(r->item.job, r->item.attempt, why, sizeof(why), arg)) {
            r = r->next;
            continue;
        }
        k.job = r->item.job;
        k.attempt = r->item.attempt;
        modex_fail_matching(t, modex_match_attempt, &k, why);
        r = t->reqs; /* the list changed: start over */
    }
}

void
modex_fail_all(struct modex_table *t, const char *why)
{
    struct modex_poller *p;

    modex_fail_matching(t, modex_match_any, NULL, why);
    while ((p = t->pollers) != NULL) {
        t->pollers = p->next;
        t->deliver(p->poller, NULL, 0, t->arg);
        modex_poller_free(p);
    }
}

size_t
modex_pending(const struct modex_table *t)
{
    size_t n = 0;

    for (const struct modex_req *r = t->reqs; r != NULL; r = r->next)
        n++;
    return n;
}

size_t
modex_pollers(const struct modex_table *t)
{
    size_t n = 0;

    for (const struct modex_poller *p = t->pollers; p != NULL; p = p->next)
        n++;
    return n;
}
