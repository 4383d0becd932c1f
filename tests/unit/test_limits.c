/*
 * test_limits.c - the token bucket (common/tbucket.c), the connection caps
 * (scheduler/http_caps.c) and the per-user submission limits
 * (scheduler/quota.c)
 */
#include <string.h>

#include "common/tbucket.h"
#include "common/xalloc.h"
#include "scheduler/http_caps.h"
#include "scheduler/job.h"
#include "scheduler/quota.h"
#include "tests/tap.h"

static void
test_tbucket(void)
{
    struct tbucket b = { 0 };
    int64_t retry = 0;
    int n = 0;

    /* A fresh bucket is full: burst at once, then none. */
    while (n < 10 && tbucket_take(&b, 2, 3, 1000, &retry))
        n++;
    is_int(n, 3, "a fresh bucket gives its burst of 3 at once");
    ok(!tbucket_take(&b, 2, 3, 1000, &retry), "then it is empty");
    is_int(retry, 500, "at 2 per second the next token is 500 ms away");
    ok(!tbucket_take(&b, 2, 3, 1499, NULL), "not yet after 499 ms");
    ok(tbucket_take(&b, 2, 3, 1500, NULL), "one token after 500 ms");
    /* A long pause refills to the burst, never more. */
    n = 0;
    while (n < 10 && tbucket_take(&b, 2, 3, 100000, NULL))
        n++;
    is_int(n, 3, "a long pause refills to the burst only");
    /* A clock that goes back refills nothing. */
    ok(!tbucket_take(&b, 2, 3, 50000, &retry), "a clock going back: none");
    ok(retry >= 1, "retry is at least 1 ms (%lld)", (long long)retry);
    /* A fractional remainder is kept. */
    memset(&b, 0, sizeof(b));
    ok(tbucket_take(&b, 1, 1, 10, NULL), "rate 1 burst 1: first");
    ok(!tbucket_take(&b, 1, 1, 510, &retry), "half a token is not one");
    is_int(retry, 500, "the other half 500 ms later");
    ok(tbucket_take(&b, 1, 1, 1010, NULL), "a whole token after 1 s");
}

static void
test_peers(void)
{
    struct http_peers t;

    memset(&t, 0, sizeof(t));
    is_int(http_peers_count(&t, "10.0.0.1"), 0, "an unknown peer has 0");
    http_peers_add(&t, "10.0.0.1");
    http_peers_add(&t, "10.0.0.1");
    http_peers_add(&t, "uid:1000");
    is_int(http_peers_count(&t, "10.0.0.1"), 2, "two from 10.0.0.1");
    is_int(http_peers_count(&t, "uid:1000"), 1, "one from uid 1000");
    is_int(t.npeers, 2, "two peers known");
    http_peers_del(&t, "10.0.0.1");
    http_peers_del(&t, "10.0.0.1");
    http_peers_del(&t, "10.0.0.1"); /* one too many: ignored */
    http_peers_del(&t, "10.9.9.9"); /* unknown: ignored */
    is_int(http_peers_count(&t, "10.0.0.1"), 0, "back to 0");
    is_int(t.npeers, 1, "a peer at 0 is forgotten");
    /* Many peers in one table (collisions in the buckets). */
    for (int i = 0; i < 5000; i++) {
        char key[32];

        snprintf(key, sizeof(key), "10.1.%d.%d", i / 256, i % 256);
        http_peers_add(&t, key);
    }
    is_int(t.npeers, 5001, "5000 more peers");
    is_int(http_peers_count(&t, "10.1.19.135"), 1, "one of them found");
    http_peers_clear(&t);
    is_int(t.npeers, 0, "cleared");
    is_int(http_peers_count(&t, "uid:1000"), 0, "nothing left");
}

static enum http_admit
admit(const struct http_caps_cfg *cfg, size_t total, size_t user, size_t peer,
    bool is_unix, bool exempt, bool can_evict, bool *evict,
    enum http_refusal *why)
{
    struct http_caps_now now = { .total = total,
        .user = user,
        .peer = peer,
        .is_unix = is_unix,
        .exempt = exempt,
        .can_evict = can_evict };

    return http_caps_admit(cfg, &now, evict, why);
}

static void
test_caps(void)
{
    struct http_caps_cfg cfg = { .max_conns = 100,
        .reserve = 20,
        .per_peer = 10 };
    struct http_caps_cfg none = { 0 };
    enum http_refusal why;
    bool evict;

    is_int(admit(&cfg, 0, 0, 0, false, false, false, &evict, &why),
        HTTP_ADMIT_OK, "an empty server admits");
    ok(!evict && why == HTTP_REFUSE_NONE, "no eviction, no reason");
    is_int(admit(&cfg, 79, 79, 0, false, false, false, &evict, &why),
        HTTP_ADMIT_OK, "the 80th user connection is in the user budget");
    is_int(admit(&cfg, 80, 80, 0, false, false, false, &evict, &why),
        HTTP_ADMIT_RESTRICTED, "the 81st goes to the agents' reserve");
    is_int(why, HTTP_REFUSE_USERS, "because of the user budget");
    is_int(admit(&cfg, 80, 60, 0, false, false, false, &evict, &why),
        HTTP_ADMIT_OK, "20 agent connections leave the users' budget");
    is_int(admit(&cfg, 50, 50, 10, false, false, false, &evict, &why),
        HTTP_ADMIT_RESTRICTED, "the 11th from one address: restricted");
    is_int(why, HTTP_REFUSE_PEER, "because of the per-peer cap");
    is_int((int)http_caps_peer_max(&cfg), 10 + HTTP_PEER_RESTRICTED_MIN,
        "a small cap: the address may hold 16 restricted more");
    is_int(admit(&cfg, 50, 50, 10 + HTTP_PEER_RESTRICTED_MIN - 1, false, false,
               false, &evict, &why),
        HTTP_ADMIT_RESTRICTED, "so many more from that address: restricted");
    is_int(admit(&cfg, 50, 50, 10 + HTTP_PEER_RESTRICTED_MIN, false, false,
               false, &evict, &why),
        HTTP_ADMIT_SHED, "then shed: one address never fills the server");
    cfg.per_peer = 40;
    is_int((int)http_caps_peer_max(&cfg), 80, "a larger cap: twice it");
    cfg.per_peer = 10;
    is_int(why, HTTP_REFUSE_PEER, "because of the per-peer cap");
    is_int(admit(&cfg, 100, 90, 0, false, false, false, &evict, &why),
        HTTP_ADMIT_SHED, "full with nothing to evict: shed");
    is_int(why, HTTP_REFUSE_TOTAL, "because of the total");
    is_int(admit(&cfg, 100, 90, 0, false, false, true, &evict, &why),
        HTTP_ADMIT_RESTRICTED, "full with a head-less one: restricted...");
    ok(evict, "...after evicting it");
    is_int(admit(&cfg, 100, 90, 0, true, true, false, &evict, &why),
        HTTP_ADMIT_SHED, "a full server sheds even root's unix connection");
    is_int(admit(&cfg, 90, 80, 0, true, false, false, &evict, &why),
        HTTP_ADMIT_OK, "unix connections may use the reserve");
    is_int(admit(&cfg, 50, 10, 10, true, false, false, &evict, &why),
        HTTP_ADMIT_SHED, "the 11th from one uid over unix: shed");
    is_int(why, HTTP_REFUSE_PEER, "because of the per-uid cap");
    is_int(admit(&cfg, 50, 10, 10, true, true, false, &evict, &why),
        HTTP_ADMIT_OK, "an exempt uid has no per-uid cap");
    is_int(
        admit(&none, 100000, 100000, 100000, false, false, false, &evict, &why),
        HTTP_ADMIT_OK, "no caps configured: everything admitted");
    is_str(http_refusal_name(HTTP_REFUSE_PEER), "peer", "refusal names");
}

static void
add_job(struct job_table *t, int64_t id, const char *user,
    enum proto_job_state st, bool held)
{
    struct job *j = job_create();

    j->id = id;
    j->user = xstrdup(user);
    j->state = st;
    if (held)
        job_set_held(j, "op");
    job_table_add(t, j);
}

static void
test_quota(void)
{
    struct quota_config cfg = {
        .user = { .max_queued = 2, .submit_rate = 1, .submit_burst = 2 },
        .op = { 0 }
    };
    struct quota q = { 0 };
    struct quota_user *qu;
    struct job_table t;
    char msg[256];
    int64_t retry = 0;

    job_table_init(&t);
    add_job(&t, 1, "alice", PROTO_JOB_PENDING, false);
    add_job(&t, 2, "alice", PROTO_JOB_RUNNING, false);
    add_job(&t, 3, "alice", PROTO_JOB_RESTARTING, true);
    add_job(&t, 4, "bob", PROTO_JOB_PENDING, false);
    is_int(job_table_user(&t, "alice").queued, 2,
        "alice: a pending and a held job");
    is_int(job_table_user(&t, "bob").queued, 1, "bob: one");
    is_int(job_table_user(&t, "carol").queued, 0, "carol: none");

    is_int(quota_check(&q, &cfg, "alice", false, 2, 1000, msg, sizeof(msg),
               &retry, &qu),
        QUOTA_QUEUED, "alice at her queued limit: refused");
    ok(strstr(msg, "2 queued jobs") && strstr(msg, "limit is 2"),
        "the message names the count and the limit: %s", msg);
    ok(retry >= 1, "with a retry time");
    is_int(quota_check(&q, &cfg, "alice", true, 2, 1000, msg, sizeof(msg),
               &retry, &qu),
        QUOTA_OK, "an operator has no limit here");
    is_int(quota_check(&q, &cfg, "bob", false, 1, 1000, msg, sizeof(msg),
               &retry, &qu),
        QUOTA_OK, "bob: 1 of 2 queued, first submission");
    is_int(quota_check(&q, &cfg, "bob", false, 1, 1000, msg, sizeof(msg),
               &retry, &qu),
        QUOTA_OK, "second (burst 2)");
    is_int(quota_check(&q, &cfg, "bob", false, 1, 1000, msg, sizeof(msg),
               &retry, &qu),
        QUOTA_RATE, "third at once: too fast");
    ok(strstr(msg, "1 per second") != NULL, "names the rate: %s", msg);
    is_int(retry, 1, "retry in 1 s");
    ok(qu != NULL && strcmp(qu->name, "bob") == 0, "bob's entry returned");
    is_int(quota_check(&q, &cfg, "carol", false, 0, 1000, msg, sizeof(msg),
               &retry, &qu),
        QUOTA_OK, "carol is unaffected by bob");
    is_int(quota_check(&q, &cfg, "bob", false, 1, 2000, msg, sizeof(msg),
               &retry, &qu),
        QUOTA_OK, "bob again a second later");
    is_int((int)q.refused_queued, 1, "one queued refusal counted");
    is_int((int)q.refused_rate, 1, "one rate refusal counted");
    /* Idle users are forgotten. */
    quota_check(&q, &cfg, "dave", false, 0, 10000000, msg, sizeof(msg), &retry,
        &qu);
    is_int((int)q.n, 1, "idle users' buckets are forgotten");
    quota_release(&q);
    job_table_release(&t);
}

int
main(void)
{
    plan(NO_PLAN);
    test_tbucket();
    test_peers();
    test_caps();
    test_quota();
    return done_testing();
}
