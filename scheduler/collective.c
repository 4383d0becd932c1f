/*
 * collective.c - the PMIx collectives relayed through the scheduler
 * (collective.h)
 *
 * Small linear lists: an attempt has at most a few collectives pending
 * (one fence at a time per participant set), and the table holds only
 * the attempts of running multi-node MPI jobs.
 */
#include "scheduler/collective.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sbuf.h"
#include "common/xalloc.h"

/* A participant of one collective. */
struct coll_member {
    char *node;
    bool in; /* contributed */
    char *data;
    size_t len;
    void *token; /* while in and not answered */
};

struct coll {
    char *id;
    struct coll_member *members;
    size_t nmembers, nin;
    struct coll *next;
};

struct coll_attempt {
    int64_t job;
    int attempt;
    char *failed; /* sticky failure; NULL while none */
    struct coll *colls;
    struct coll_attempt *next;
};

struct coll_table {
    coll_answer_fn *answer;
    void *arg;
    struct coll_attempt *attempts;
};

struct coll_table *
coll_table_create(coll_answer_fn *answer, void *arg)
{
    struct coll_table *t = xcalloc(1, sizeof(*t));

    t->answer = answer;
    t->arg = arg;
    return t;
}

static void
coll_free(struct coll *c)
{
    for (size_t i = 0; i < c->nmembers; i++) {
        free(c->members[i].node);
        free(c->members[i].data);
    }
    free(c->members);
    free(c->id);
    free(c);
}

static void
coll_attempt_free(struct coll_attempt *ca)
{
    struct coll *c, *next;

    for (c = ca->colls; c != NULL; c = next) {
        next = c->next;
        coll_free(c);
    }
    free(ca->failed);
    free(ca);
}

void
coll_table_destroy(struct coll_table *t)
{
    struct coll_attempt *ca, *next;

    if (t == NULL)
        return;
    for (ca = t->attempts; ca != NULL; ca = next) {
        next = ca->next;
        coll_attempt_free(ca);
    }
    free(t);
}

static struct coll_attempt *
coll_attempt_find(struct coll_table *t, int64_t job, int attempt, bool add)
{
    struct coll_attempt *ca;

    for (ca = t->attempts; ca != NULL; ca = ca->next) {
        if (ca->job == job && ca->attempt == attempt)
            return ca;
    }
    if (!add)
        return NULL;
    ca = xcalloc(1, sizeof(*ca));
    ca->job = job;
    ca->attempt = attempt;
    ca->next = t->attempts;
    t->attempts = ca;
    return ca;
}

/* Answers c's waiting tokens (outcome, msg) and frees c. */
static void
coll_answer_all(struct coll_table *t, struct coll *c, enum coll_outcome outcome,
    const char *msg)
{
    for (size_t i = 0; i < c->nmembers; i++) {
        void *token = c->members[i].token;

        c->members[i].token = NULL;
        if (token != NULL)
            t->answer(token, outcome, msg, NULL, 0, t->arg);
    }
    coll_free(c);
}

/* Fails ca: sticky why; every pending collective answered (those of
 * `timed_out` with COLL_TIMEOUT). */
static void
coll_attempt_fail(struct coll_table *t, struct coll_attempt *ca,
    const char *why, const struct coll *timed_out)
{
    struct coll *c, *next;

    if (ca->failed == NULL)
        ca->failed = xstrdup(why);
    c = ca->colls;
    ca->colls = NULL;
    for (; c != NULL; c = next) {
        next = c->next;
        coll_answer_all(t, c, c == timed_out ? COLL_TIMEOUT : COLL_FAILED, why);
    }
}

static struct coll_member *
coll_member_find(struct coll *c, const char *node)
{
    for (size_t i = 0; i < c->nmembers; i++) {
        if (strcmp(c->members[i].node, node) == 0)
            return &c->members[i];
    }
    return NULL;
}

/* Checks the participant list: distinct names, node among them. */
static int
coll_check_nodes(char *const *nodes, size_t nnodes, const char *node,
    struct err *err)
{
    bool found = false;

    for (size_t i = 0; i < nnodes; i++) {
        for (size_t j = 0; j < i; j++) {
            if (strcmp(nodes[i], nodes[j]) == 0)
                return err_set(err, -EINVAL,
                    "node '%s' is named twice among the participants",
                    nodes[i]);
        }
        found = found || strcmp(nodes[i], node) == 0;
    }
    if (!found)
        return err_set(err, -EINVAL, "node '%s' is not among the participants",
            node);
    return 0;
}

/* The collective id of ca, created with the participant list nodes when
 * new; NULL with err set when the list differs from the first one. */
static struct coll *
coll_get(struct coll_attempt *ca, const char *id, char *const *nodes,
    size_t nnodes, struct err *err)
{
    struct coll *c;
    size_t i;

    for (c = ca->colls; c != NULL; c = c->next) {
        if (strcmp(c->id, id) != 0)
            continue;
        for (i = 0; i < nnodes && c->nmembers == nnodes; i++) {
            if (strcmp(c->members[i].node, nodes[i]) != 0)
                break;
        }
        if (c->nmembers != nnodes || i < nnodes) {
            err_set(err, -EINVAL,
                "collective '%s' of job %lld attempt %d: the participant "
                "nodes differ from those of the first contribution",
                id, (long long)ca->job, ca->attempt);
            return NULL;
        }
        return c;
    }
    c = xcalloc(1, sizeof(*c));
    c->id = xstrdup(id);
    c->members = xcalloc(nnodes, sizeof(*c->members));
    c->nmembers = nnodes;
    for (i = 0; i < nnodes; i++)
        c->members[i].node = xstrdup(nodes[i]);
    c->next = ca->colls;
    ca->colls = c;
    return c;
}

static void
coll_unlink(struct coll_attempt *ca, struct coll *c)
{
    struct coll **p;

    for (p = &ca->colls; *p != NULL; p = &(*p)->next) {
        if (*p == c) {
            *p = c->next;
            return;
        }
    }
}

/* Every member is in: answer each with the concatenation, in list
 * order, and forget c. */
static void
coll_complete(struct coll_table *t, struct coll_attempt *ca, struct coll *c)
{
    struct sbuf all;

    coll_unlink(ca, c);
    sbuf_init(&all);
    for (size_t i = 0; i < c->nmembers; i++)
        sbuf_add(&all, c->members[i].data, c->members[i].len);
    for (size_t i = 0; i < c->nmembers; i++) {
        void *token = c->members[i].token;

        c->members[i].token = NULL;
        if (token != NULL)
            t->answer(token, COLL_DONE, NULL, all.buf != NULL ? all.buf : "",
                all.len, t->arg);
    }
    sbuf_release(&all);
    coll_free(c);
}

int
coll_contribute(struct coll_table *t, int64_t job, int attempt, const char *id,
    char *const *nodes, size_t nnodes, const char *node, const char *data,
    size_t len, void *token, struct err *err)
{
    struct coll_attempt *ca;
    struct coll_member *m;
    struct coll *c;
    int rc;

    if ((rc = coll_check_nodes(nodes, nnodes, node, err)) < 0)
        return rc;
    ca = coll_attempt_find(t, job, attempt, true);
    if (ca->failed != NULL)
        return err_set(err, -EPIPE, "%s", ca->failed);
    if ((c = coll_get(ca, id, nodes, nnodes, err)) == NULL)
        return -EINVAL;
    m = coll_member_find(c, node);
    if (m->in)
        return err_set(err, -EEXIST,
            "node '%s' already contributed to collective '%s' of job %lld "
            "attempt %d",
            node, id, (long long)job, attempt);
    m->in = true;
    m->data = xmalloc(len + 1);
    memcpy(m->data, data, len);
    m->len = len;
    m->token = token;
    if (++c->nin == c->nmembers)
        coll_complete(t, ca, c);
    return 0;
}

void
coll_fail_attempt(struct coll_table *t, int64_t job, int attempt,
    const char *why)
{
    coll_attempt_fail(t, coll_attempt_find(t, job, attempt, true), why, NULL);
}

void
coll_node_gone(struct coll_table *t, const char *node, const char *why)
{
    struct coll_attempt *ca;
    struct coll *c;
    char *msg = xasprintf("node '%s': %s", node, why);

    for (ca = t->attempts; ca != NULL; ca = ca->next) {
        for (c = ca->colls; c != NULL; c = c->next) {
            if (coll_member_find(c, node) != NULL)
                break;
        }
        if (c != NULL)
            coll_attempt_fail(t, ca, msg, NULL);
    }
    free(msg);
}

/* The attempt, collective and member of token; false when unknown. */
static bool
coll_token_find(struct coll_table *t, void *token, struct coll_attempt **cap,
    struct coll **cp, struct coll_member **mp)
{
    for (struct coll_attempt *ca = t->attempts; ca != NULL; ca = ca->next) {
        for (struct coll *c = ca->colls; c != NULL; c = c->next) {
            for (size_t i = 0; i < c->nmembers; i++) {
                if (c->members[i].token != token)
                    continue;
                *cap = ca;
                *cp = c;
                *mp = &c->members[i];
                return true;
            }
        }
    }
    return false;
}

void
coll_token_gone(struct coll_table *t, void *token, const char *why)
{
    struct coll_attempt *ca;
    struct coll_member *m;
    struct coll *c;
    char *msg;

    if (!coll_token_find(t, token, &ca, &c, &m))
        return;
    m->token = NULL;
    msg = xasprintf("node '%s': %s", m->node, why);
    coll_attempt_fail(t, ca, msg, NULL);
    free(msg);
}

void
coll_token_expired(struct coll_table *t, void *token)
{
    struct coll_attempt *ca;
    struct coll_member *m;
    struct coll *c;
    struct sbuf msg;
    const char *sep = "";

    if (!coll_token_find(t, token, &ca, &c, &m))
        return;
    sbuf_init(&msg);
    sbuf_addf(&msg, "collective '%s' timed out waiting for node ", c->id);
    for (size_t i = 0; i < c->nmembers; i++) {
        if (c->members[i].in)
            continue;
        sbuf_addf(&msg, "%s'%s'", sep, c->members[i].node);
        sep = ", ";
    }
    coll_attempt_fail(t, ca, msg.buf, c);
    sbuf_release(&msg);
}

void
coll_sweep(struct coll_table *t, coll_alive_fn *alive, void *arg)
{
    struct coll_attempt **p = &t->attempts, *ca;
    char why[512];

    while ((ca = *p) != NULL) {
        why[0] = '\0';
        if (alive(ca->job, ca->attempt, why, sizeof(why), arg)) {
            p = &ca->next;
            continue;
        }
        *p = ca->next;
        coll_attempt_fail(t, ca, why, NULL);
        coll_attempt_free(ca);
    }
}

void
coll_fail_all(struct coll_table *t, const char *why)
{
    struct coll_attempt *ca;

    while ((ca = t->attempts) != NULL) {
        t->attempts = ca->next;
        coll_attempt_fail(t, ca, why, NULL);
        coll_attempt_free(ca);
    }
}

size_t
coll_pending(const struct coll_table *t)
{
    size_t n = 0;

    for (struct coll_attempt *ca = t->attempts; ca != NULL; ca = ca->next) {
        for (struct coll *c = ca->colls; c != NULL; c = c->next) {
            for (size_t i = 0; i < c->nmembers; i++)
                n += c->members[i].token != NULL;
        }
    }
    return n;
}

size_t
coll_attempts(const struct coll_table *t)
{
    size_t n = 0;

    for (struct coll_attempt *ca = t->attempts; ca != NULL; ca = ca->next)
        n++;
    return n;
}
