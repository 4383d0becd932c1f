/*
 * test_modex.c - the relayed PMIx direct modex requests' table (modex.c)
 */
#include "scheduler/modex.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "tests/tap.h"

/* A requester: what it was answered. */
struct waiter {
    int answered; /* times */
    enum coll_outcome outcome;
    char *msg;
    char *data;
    size_t len;
};

/* An owner's long poll: what it was handed. */
struct poller {
    int answered; /* times */
    struct modex_item items[8];
    size_t n;
};

static void
answer_cb(void *token, enum coll_outcome outcome, const char *msg,
    const char *data, size_t len, void *arg)
{
    struct waiter *w = token;

    (void)arg;
    w->answered++;
    w->outcome = outcome;
    free(w->msg);
    w->msg = msg != NULL ? xstrdup(msg) : NULL;
    free(w->data);
    w->data = xmalloc(len + 1);
    memcpy(w->data, data != NULL ? data : "", len);
    w->data[len] = '\0';
    w->len = len;
}

static void
deliver_cb(void *poller, const struct modex_item *items, size_t n, void *arg)
{
    struct poller *p = poller;

    (void)arg;
    p->answered++;
    p->n = n < 8 ? n : 8;
    if (p->n > 0)
        memcpy(p->items, items, p->n * sizeof(*items));
}

static void
waiter_reset(struct waiter *w, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(w[i].msg);
        free(w[i].data);
        memset(&w[i], 0, sizeof(w[i]));
    }
}

static void
test_round_trip(void)
{
    struct modex_table *t = modex_table_create(answer_cb, deliver_cb, NULL);
    struct waiter w[3] = { 0 };
    struct poller p[3] = { 0 };
    uint64_t id0, id1;
    struct err err;

    /* Asked before the owner polls: kept for its poll. */
    id0 = modex_request(t, 5, 1, "n1", 2, &w[0]);
    ok(id0 > 0 && modex_pending(t) == 1 && w[0].answered == 0,
        "a request waits for its owner");
    ok(!modex_poll(t, "n0", &p[0]) && p[0].answered == 0,
        "another node's poll gets nothing and waits");
    ok(modex_poll(t, "n1", &p[1]) && p[1].answered == 1 && p[1].n == 1 &&
            p[1].items[0].id == id0 && p[1].items[0].job == 5 &&
            p[1].items[0].attempt == 1 && p[1].items[0].rank == 2,
        "the owner's poll gets it at once");
    /* A waiting poll gets a new request at once. */
    ok(!modex_poll(t, "n1", &p[2]) && modex_pollers(t) == 2,
        "the owner's next poll waits (nothing new)");
    id1 = modex_request(t, 5, 1, "n1", 3, &w[1]);
    ok(p[2].answered == 1 && p[2].n == 1 && p[2].items[0].id == id1 &&
            id1 != id0 && modex_pollers(t) == 1,
        "a new request goes to the waiting poll at once");
    /* Replies. */
    is_int(modex_reply(t, id0, "n0", true, "x", 1, NULL, &err), -EPERM,
        "only the owner answers: %s", err.msg);
    is_int(modex_reply(t, id0, "n1", true, "AB\0C", 4, NULL, &err), 0,
        "the owner answers");
    ok(w[0].answered == 1 && w[0].outcome == COLL_DONE && w[0].len == 4 &&
            memcmp(w[0].data, "AB\0C", 4) == 0,
        "the requester gets the blob as is");
    is_int(modex_reply(t, id0, "n1", true, "x", 1, NULL, &err), -ENOENT,
        "a second answer finds nobody: %s", err.msg);
    is_int(modex_reply(t, id1, "n1", false, NULL, 0, "no such rank", &err), 0,
        "the owner answers an error");
    ok(w[1].answered == 1 && w[1].outcome == COLL_FAILED &&
            strcmp(w[1].msg, "no such rank") == 0,
        "which the requester gets: %s", w[1].msg);
    is_int((int)modex_pending(t), 0, "nothing pending");
    modex_poller_gone(t, &p[0]);
    is_int((int)modex_pollers(t), 0, "a gone poll is forgotten");
    ok(p[0].answered == 0, "unanswered");
    waiter_reset(w, 3);
    modex_table_destroy(t);
}

/* collective.h's alive function: attempt 1 of job 5 lives. */
static bool
alive_cb(int64_t job, int attempt, char *why, size_t len, void *arg)
{
    (void)arg;
    if (job == 5 && attempt == 1)
        return true;
    snprintf(why, len, "attempt %d of job %lld ended", attempt, (long long)job);
    return false;
}

static void
test_failures(void)
{
    struct modex_table *t = modex_table_create(answer_cb, deliver_cb, NULL);
    struct waiter w[4] = { 0 };
    struct poller p[2] = { 0 };
    struct err err;
    uint64_t id;

    /* The owner's agent goes: its requests fail, delivered or not. */
    modex_request(t, 5, 1, "n1", 2, &w[0]);
    modex_poll(t, "n1", &p[0]);
    modex_request(t, 5, 1, "n1", 3, &w[1]);
    modex_request(t, 5, 1, "n0", 0, &w[3]); /* stays */
    modex_node_gone(t, "n1", "its agent's connection closed");
    ok(w[0].answered == 1 && w[0].outcome == COLL_FAILED &&
            strcmp(w[0].msg, "node 'n1': its agent's connection closed") == 0 &&
            w[1].answered == 1 && w[3].answered == 0,
        "the gone node's requests fail: %s", w[0].msg);
    waiter_reset(w, 4);

    /* A requester goes: forgotten, the owner's answer finds nobody. */
    id = modex_request(t, 5, 1, "n1", 2, &w[0]);
    modex_token_gone(t, &w[0]);
    is_int(modex_reply(t, id, "n1", true, "x", 1, NULL, &err), -ENOENT,
        "a gone requester is not answered: %s", err.msg);
    ok(w[0].answered == 0, "not even with a failure");

    /* The deadline. */
    modex_request(t, 5, 1, "n1", 3, &w[1]);
    modex_token_expired(t, &w[1]);
    ok(w[1].answered == 1 && w[1].outcome == COLL_TIMEOUT &&
            strstr(w[1].msg, "rank 3") != NULL &&
            strstr(w[1].msg, "'n1'") != NULL,
        "a request times out: %s", w[1].msg);
    waiter_reset(w, 4);

    /* The attempt ends. */
    modex_request(t, 5, 2, "n1", 0, &w[0]);
    modex_request(t, 6, 1, "n1", 0, &w[1]);
    modex_request(t, 5, 2, "n0", 1, &w[2]);
    modex_sweep(t, alive_cb, NULL);
    ok(w[0].answered == 1 && w[0].outcome == COLL_FAILED &&
            strcmp(w[0].msg, "attempt 2 of job 5 ended") == 0 &&
            w[1].answered == 1 && w[2].answered == 1 && w[3].answered == 0,
        "the requests of ended attempts fail: %s", w[0].msg);
    is_int((int)modex_pending(t), 1, "the live attempt's request stays");
    waiter_reset(w, 4);

    /* Reset: requests fail, polls are answered empty. */
    modex_request(t, 5, 1, "n0", 1, &w[0]);
    modex_poll(t, "n1", &p[1]);
    modex_fail_all(t, "the scheduler is reloading its state");
    ok(w[0].answered == 1 && w[0].outcome == COLL_FAILED &&
            strcmp(w[0].msg, "the scheduler is reloading its state") == 0 &&
            w[3].answered == 1 && modex_pending(t) == 0,
        "fail_all fails the requests");
    ok(p[1].answered == 1 && p[1].n == 0 && modex_pollers(t) == 0,
        "and answers the polls with nothing");
    waiter_reset(w, 4);
    modex_table_destroy(t);
}

int
main(void)
{
    plan(NO_PLAN);
    test_round_trip();
    test_failures();
    return done_testing();
}
