/*
 * test_collective.c - the relayed PMIx collectives' table (collective.c)
 * and the base64 of their blobs (common/b64.c)
 */
#include "scheduler/collective.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/b64.h"
#include "common/xalloc.h"
#include "tests/tap.h"

/* A contributor: what it was answered. */
struct waiter {
    int answered; /* times */
    enum coll_outcome outcome;
    char *msg;
    char *data;
    size_t len;
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
waiter_reset(struct waiter *w, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(w[i].msg);
        free(w[i].data);
        memset(&w[i], 0, sizeof(w[i]));
    }
}

static char *two[] = { "n0", "n1", NULL };
static char *three[] = { "n0", "n1", "n2", NULL };

static void
test_complete(void)
{
    struct waiter w[3] = { 0 };
    struct coll_table *t = coll_table_create(answer_cb, NULL);
    struct err err;

    is_int(coll_contribute(t, 5, 1, "f.1", two, 2, "n1", "BB", 2, &w[1], &err),
        0, "the first contribution waits");
    ok(w[1].answered == 0 && coll_pending(t) == 1, "nobody answered yet");
    is_int(coll_contribute(t, 5, 1, "f.1", two, 2, "n1", "BB", 2, &w[2], &err),
        -EEXIST, "a node contributes once: %s", err.msg);
    is_int(coll_contribute(t, 5, 1, "f.1", three, 3, "n0", "A", 1, &w[0], &err),
        -EINVAL, "the participants must match: %s", err.msg);
    is_int(coll_contribute(t, 5, 1, "f.1", two, 2, "n2", "A", 1, &w[0], &err),
        -EINVAL, "a contributor must be a participant: %s", err.msg);
    is_int(coll_contribute(t, 5, 1, "f.1", two, 2, "n0", "A", 1, &w[0], &err),
        0, "the last contribution completes it");
    ok(w[0].answered == 1 && w[1].answered == 1 && w[2].answered == 0,
        "every contributor answered once");
    ok(w[0].outcome == COLL_DONE && w[0].len == 3 &&
            strcmp(w[0].data, "ABB") == 0 && strcmp(w[1].data, "ABB") == 0,
        "with the concatenation in participant order: '%s'", w[0].data);
    is_int((int)coll_pending(t), 0, "nothing pending");
    waiter_reset(w, 3);

    /* Empty blobs are still a barrier. */
    coll_contribute(t, 5, 1, "f.2", two, 2, "n0", "", 0, &w[0], &err);
    ok(w[0].answered == 0, "an empty contribution waits too");
    coll_contribute(t, 5, 1, "f.2", two, 2, "n1", "", 0, &w[1], &err);
    ok(w[0].answered == 1 && w[1].answered == 1 && w[0].len == 0 &&
            w[0].outcome == COLL_DONE,
        "and completes empty");
    waiter_reset(w, 3);

    /* Another id, another attempt: independent. */
    coll_contribute(t, 5, 1, "f.3", two, 2, "n0", "x", 1, &w[0], &err);
    coll_contribute(t, 5, 2, "f.3", two, 2, "n1", "y", 1, &w[1], &err);
    ok(w[0].answered == 0 && w[1].answered == 0 && coll_attempts(t) == 2,
        "attempts do not mix");
    coll_fail_all(t, "the scheduler is stopping");
    ok(w[0].answered == 1 && w[0].outcome == COLL_FAILED &&
            strcmp(w[0].msg, "the scheduler is stopping") == 0 &&
            w[1].answered == 1 && coll_attempts(t) == 0,
        "fail_all answers everyone and empties the table");
    waiter_reset(w, 3);
    coll_table_destroy(t);
}

static void
test_failures(void)
{
    struct waiter w[3] = { 0 };
    struct coll_table *t = coll_table_create(answer_cb, NULL);
    struct err err;

    /* A contributor's connection goes away: the others fail at once, and
     * so does a later contribution. */
    coll_contribute(t, 7, 1, "f.1", three, 3, "n0", "a", 1, &w[0], &err);
    coll_contribute(t, 7, 1, "f.1", three, 3, "n1", "b", 1, &w[1], &err);
    coll_token_gone(t, &w[1], "its agent went away");
    ok(w[1].answered == 0, "the gone token is not answered");
    ok(w[0].answered == 1 && w[0].outcome == COLL_FAILED &&
            strcmp(w[0].msg, "node 'n1': its agent went away") == 0,
        "the other contributor fails: %s", w[0].msg);
    is_int(coll_contribute(t, 7, 1, "f.1", three, 3, "n2", "c", 1, &w[2], &err),
        -EPIPE, "a later contribution is refused: %s", err.msg);
    ok(strcmp(err.msg, "node 'n1': its agent went away") == 0,
        "with the first failure");
    is_int(coll_contribute(t, 7, 1, "f.9", three, 3, "n2", "c", 1, &w[2], &err),
        -EPIPE, "also to another collective of the attempt");
    waiter_reset(w, 3);

    /* The node of a participant that has not contributed goes away. */
    coll_contribute(t, 8, 1, "f.1", two, 2, "n0", "a", 1, &w[0], &err);
    coll_node_gone(t, "n2", "agent connection closed");
    ok(w[0].answered == 0, "a node not taking part changes nothing");
    coll_node_gone(t, "n1", "agent connection closed");
    ok(w[0].answered == 1 && w[0].outcome == COLL_FAILED &&
            strstr(w[0].msg, "node 'n1'") != NULL,
        "a participant's loss fails it: %s", w[0].msg);
    waiter_reset(w, 3);

    /* Timeout: names who is missing. */
    coll_contribute(t, 9, 1, "f.1", three, 3, "n0", "a", 1, &w[0], &err);
    coll_contribute(t, 9, 1, "f.2", two, 2, "n1", "b", 1, &w[1], &err);
    coll_token_expired(t, &w[0]);
    ok(w[0].answered == 1 && w[0].outcome == COLL_TIMEOUT &&
            strcmp(w[0].msg,
                "collective 'f.1' timed out waiting for node 'n1', 'n2'") == 0,
        "a timeout names the missing nodes: %s", w[0].msg);
    ok(w[1].answered == 1 && w[1].outcome == COLL_FAILED,
        "and fails the attempt's other collectives");
    coll_token_expired(t, &w[0]);
    is_int(w[0].answered, 1, "an answered token is not answered again");
    waiter_reset(w, 3);
    coll_table_destroy(t);
}

/* Attempt 1 of job 10 is over; everything else runs. */
static bool
alive_cb(int64_t job, int attempt, char *why, size_t len, void *arg)
{
    (void)arg;
    if (job == 10 && attempt == 1) {
        snprintf(why, len, "attempt 1 of job 10 ended (FAILED)");
        return false;
    }
    return true;
}

static void
test_sweep(void)
{
    struct waiter w[3] = { 0 };
    struct coll_table *t = coll_table_create(answer_cb, NULL);
    struct err err;

    coll_contribute(t, 10, 1, "f.1", two, 2, "n0", "a", 1, &w[0], &err);
    coll_contribute(t, 10, 2, "f.1", two, 2, "n0", "a", 1, &w[1], &err);
    coll_fail_attempt(t, 11, 1, "rank 3 failed");
    is_int((int)coll_attempts(t), 3, "three attempts known");
    coll_sweep(t, alive_cb, NULL);
    ok(w[0].answered == 1 && w[0].outcome == COLL_FAILED &&
            strcmp(w[0].msg, "attempt 1 of job 10 ended (FAILED)") == 0,
        "the ended attempt's collective fails: %s", w[0].msg);
    ok(w[1].answered == 0 && coll_pending(t) == 1, "the live one waits on");
    is_int((int)coll_attempts(t), 2, "the ended attempt is forgotten");
    is_int(coll_contribute(t, 11, 1, "f.1", two, 2, "n0", "a", 1, &w[2], &err),
        -EPIPE, "a failed attempt refuses: %s", err.msg);
    waiter_reset(w, 3);
    coll_table_destroy(t);
}

static void
test_b64(void)
{
    static const char *const plain[] = { "", "f", "fo", "foo", "foob", "fooba",
        "foobar" };
    static const char *const coded[] = { "", "Zg==", "Zm8=", "Zm9v",
        "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy" };
    unsigned char bin[256];
    char *text, *back;
    size_t len;
    bool same = true;

    for (size_t i = 0; i < 7; i++) {
        text = b64_encode(plain[i], strlen(plain[i]));
        is_str(text, coded[i], "encode '%s'", plain[i]);
        is_int(b64_decode(coded[i], &back, &len), 0, "decode '%s'", coded[i]);
        ok(len == strlen(plain[i]) && memcmp(back, plain[i], len) == 0,
            "round trip '%s'", plain[i]);
        free(text);
        free(back);
    }
    for (int i = 0; i < 256; i++)
        bin[i] = (unsigned char)(255 - i);
    for (size_t n = 250; n <= 256; n++) {
        text = b64_encode(bin, n);
        same = same && b64_decode(text, &back, &len) == 0 && len == n &&
               memcmp(back, bin, n) == 0;
        free(text);
        free(back);
    }
    ok(same, "binary blobs of every length mod 3 round trip");
    is_int(b64_decode("Zm9", &back, &len), -EINVAL, "a bad length");
    is_int(b64_decode("Zm9*", &back, &len), -EINVAL, "a bad character");
    is_int(b64_decode("Z===", &back, &len), -EINVAL, "too much padding");
    is_int(b64_decode("Zg==Zg==", &back, &len), -EINVAL,
        "padding only at the end");
}

int
main(void)
{
    plan(NO_PLAN);
    test_complete();
    test_failures();
    test_sweep();
    test_b64();
    return done_testing();
}
