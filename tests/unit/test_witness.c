/*
 * test_witness.c - witnesses: messages, the choice of W(N), both rules
 */
#include "common/witness.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/jsonx.h"
#include "tests/tap.h"

static void
test_messages(void)
{
    char key[CRED_HEX_LEN + 1], other[CRED_HEX_LEN + 1];
    char buf[WITNESS_MSG_MAX];
    struct witness_query q = { .node = "n1", .nonce = 0x0123456789abcdefULL };
    struct witness_query q2;
    struct witness_answer a = { .node = "n2", .nonce = 42, .age_ms = 1234 };
    struct witness_answer a2;
    size_t len;

    witness_key("secret-secret-secret", 20, key);
    witness_key("another-secret-here", 19, other);
    ok(strcmp(key, other) != 0, "another secret, another key");

    len = witness_query_encode(key, &q, buf);
    is_int(witness_query_decode(key, buf, len, &q2), 0, "a query decodes");
    is_str(q2.node, "n1", "its node");
    ok(q2.nonce == q.nonce, "its nonce");
    is_int(witness_query_decode(other, buf, len, &q2), -EBADMSG,
        "a query under another key: bad MAC");
    is_int(witness_answer_decode(key, buf, len, &a2), -EINVAL,
        "a query is no answer");
    buf[9] = buf[9] == 'x' ? 'y' : 'x';
    is_int(witness_query_decode(key, buf, len, &q2), -EBADMSG,
        "a changed query: bad MAC");

    len = witness_answer_encode(key, &a, buf);
    is_int(witness_answer_decode(key, buf, len, &a2), 0, "an answer decodes");
    is_str(a2.node, "n2", "its node");
    ok(a2.nonce == 42 && a2.age_ms == 1234, "its nonce and age");
    a.age_ms = -1;
    len = witness_answer_encode(key, &a, buf);
    ok(witness_answer_decode(key, buf, len, &a2) == 0 && a2.age_ms == -1,
        "age -1: never reached the scheduler");
    is_int(witness_answer_decode(key, "LSW1 A x", 8, &a2), -EINVAL,
        "garbage is malformed");
    is_int(witness_answer_decode(key, buf, len - 1, &a2), -EINVAL,
        "a cut message is malformed");
}

static void
test_pick(void)
{
    const char *names[] = { "a", "b", "c", "d", "e", "f", "g", "h" };
    const char *racks[] = { "r1", "r1", "r1", "r2", "r2", "r3", NULL, "r1" };
    size_t out[WITNESS_MAX], out2[WITNESS_MAX], k, k2;
    bool other_first = true, seen_same = false;

    k = witness_pick("a", "r1", names, racks, 8, out);
    is_int((int)k, WITNESS_MAX, "at most WITNESS_MAX witnesses");
    for (size_t i = 0; i < k; i++) {
        bool same = racks[out[i]] && strcmp(racks[out[i]], "r1") == 0;

        ok(out[i] != 0, "never itself");
        if (same)
            seen_same = true;
        else if (seen_same)
            other_first = false;
    }
    ok(other_first, "nodes of other racks come first");
    k2 = witness_pick("a", "r1", names, racks, 8, out2);
    ok(k == k2 && memcmp(out, out2, k * sizeof(out[0])) == 0,
        "the choice depends only on the names");
    is_int((int)witness_pick("a", NULL, names, racks, 1, out), 0,
        "a one-node cluster: no witnesses");
    is_int((int)witness_pick("a", NULL, names, racks, 3, out), 2,
        "three nodes: the two others");
}

/* Names alike do not pick each other: 11 nodes vic1..vic11 among 1000
 * others; few of their witnesses are vic nodes, none has a majority. */
static void
test_pick_spread(void)
{
    static char names_buf[1011][16];
    const char *names[1011];
    size_t out[WITNESS_MAX], alike = 0, majority = 0;

    for (int i = 0; i < 1000; i++)
        snprintf(names_buf[i], sizeof(names_buf[i]), "sim%d", i + 1);
    for (int i = 0; i < 11; i++)
        snprintf(names_buf[1000 + i], sizeof(names_buf[0]), "vic%d", i + 1);
    for (int i = 0; i < 1011; i++)
        names[i] = names_buf[i];
    for (int v = 1000; v < 1011; v++) {
        size_t k = witness_pick(names[v], NULL, names, NULL, 1011, out);
        size_t n = 0;

        for (size_t i = 0; i < k; i++)
            n += out[i] >= 1000;
        alike += n;
        majority += n >= witness_majority(k);
    }
    ok(alike <= 3, "nodes named alike rarely witness each other (%zu of 55)",
        alike);
    is_int((int)majority, 0, "none has a majority of witnesses named alike");
}

/* The scheduler's way: every node keeps its set (with each member's
 * rank) and is offered only the nodes that join after it; at every step
 * each kept set is the set witness_pick ranks over the whole table.
 * Racks of three, some nodes without one, joins in a scrambled order. */
static void
test_offer_incremental(void)
{
    enum { N = 60 };
    static char names_buf[N][16], racks_buf[N][8];
    const char *names[N], *racks[N];
    struct witness_rank kept_rank[N][WITNESS_MAX];
    size_t kept[N][WITNESS_MAX], nkept[N], joined[N], fresh[WITNESS_MAX];
    size_t mismatched = 0;
    struct witness_rank r;

    for (size_t i = 0; i < N; i++) {
        snprintf(names_buf[i], sizeof(names_buf[i]), "n%02zu", i);
        snprintf(racks_buf[i], sizeof(racks_buf[i]), "r%zu", i / 3);
        names[i] = names_buf[i];
        racks[i] = i % 7 == 0 ? NULL : racks_buf[i];
        joined[i] = (i * 37) % N; /* 37 is prime to N: a permutation */
    }
    for (size_t t = 0; t < N; t++) {
        const char *tn[N], *tr[N];
        size_t m = joined[t];

        /* The table after t + 1 joins, in join order. */
        for (size_t j = 0; j <= t; j++) {
            tn[j] = names[joined[j]];
            tr[j] = racks[joined[j]];
        }
        for (size_t j = 0; j < t; j++) {
            size_t x = joined[j];

            r = witness_rank_of(names[x], racks[x], names[m], racks[m]);
            nkept[x] = witness_offer(kept_rank[x], kept[x], nkept[x], &r, m);
        }
        /* The new node ranks the whole table once. */
        nkept[m] = 0;
        for (size_t j = 0; j < t; j++) {
            size_t c = joined[j];

            r = witness_rank_of(names[m], racks[m], names[c], racks[c]);
            nkept[m] = witness_offer(kept_rank[m], kept[m], nkept[m], &r, c);
        }
        for (size_t j = 0; j <= t; j++) {
            size_t x = joined[j], k;

            k = witness_pick(names[x], racks[x], tn, tr, t + 1, fresh);
            if (k != nkept[x]) {
                mismatched++;
                continue;
            }
            for (size_t q = 0; q < k; q++)
                if (joined[fresh[q]] != kept[x][q]) {
                    mismatched++;
                    break;
                }
        }
    }
    is_int((int)mismatched, 0,
        "kept sets offered each joining node equal the sets ranked anew");
    r = witness_rank_of("a", "r1", "b", "r1");
    ok(r.same_rack, "a node of the same rack is ranked so");
    r = witness_rank_of("a", "r1", "b", NULL);
    ok(!r.same_rack, "a node without a rack is another rack's");
}

static void
test_agent_rule(void)
{
    struct witness_answer a = { .node = "w", .age_ms = 0 };

    is_int((int)witness_majority(1), 1, "majority of 1");
    is_int((int)witness_majority(2), 2, "majority of 2");
    is_int((int)witness_majority(5), 3, "majority of 5");
    /* We last reached the scheduler at 1000. */
    a.age_ms = 9000;
    ok(witness_answer_stale(&a, 10000, 1000, 500),
        "a witness that lost it when we did: stale");
    a.age_ms = 8600;
    ok(witness_answer_stale(&a, 10000, 1000, 500), "within the slack: stale");
    a.age_ms = 8400;
    ok(!witness_answer_stale(&a, 10000, 1000, 500),
        "one that reached it after us: fresh");
    a.age_ms = -1;
    ok(!witness_answer_stale(&a, 10000, 1000, 500) &&
            witness_answer_unknown(&a),
        "never reached it since its start: unknown, not stale");

    ok(!witness_may_extend(0, 0, 0), "no witnesses: fence");
    ok(witness_may_extend(1, 1, 0), "the one witness lost it too: extend");
    ok(!witness_may_extend(2, 1, 0), "one of two: no majority");
    ok(witness_may_extend(5, 3, 0), "three of five: extend");
    ok(!witness_may_extend(5, 4, 1), "one reaches it: fence");
    ok(!witness_may_extend(5, 2, 0), "two of five: fence");
}

static void
test_scheduler_rule(void)
{
    struct witness_contact c = { 0 };

    ok(!witness_contact_continuous(&c, 1000, 500, 0), "no contact yet");
    witness_contact_seen(&c, 1000, 500, 1000);
    witness_contact_seen(&c, 1400, 500, 1000);
    witness_contact_seen(&c, 1800, 500, 1000);
    ok(witness_contact_continuous(&c, 1800, 500, 800), "800 ms continuous");
    ok(!witness_contact_continuous(&c, 1800, 500, 801), "not 801");
    ok(!witness_contact_continuous(&c, 2400, 500, 800),
        "silent over the gap now: not continuous");
    witness_contact_seen(&c, 2400, 500, 1000);
    ok(c.since_mono == 2400, "a gap over lease_ms starts it anew");
    ok(!witness_contact_continuous(&c, 2500, 500, 800), "so not long enough");
    witness_contact_seen(&c, 2900, 500, 1000);
    witness_contact_seen(&c, 3300, 500, 1000);
    ok(witness_contact_continuous(&c, 3300, 500, 800), "until it is again");

    ok(witness_may_replace(0, 0), "no witnesses: replace (as before)");
    ok(!witness_may_replace(1, 0), "the one witness not continuous: wait");
    ok(witness_may_replace(3, 2), "two of three: replace");
    ok(!witness_may_replace(4, 2), "two of four: wait");
    ok(witness_replace_at(10000, 400) ==
            10000 + WITNESS_SLACK_MS + 400 + WITNESS_EXCHANGE_MS,
        "replaced after the last grant, the slack, the gap and an exchange");
}

/* The longest gap of a contact, over a window at least; the gap within
 * which a majority was heard. */
static void
test_contact_gap(void)
{
    struct witness_contact c = { 0 };
    int64_t gaps[WITNESS_MAX];

    witness_contact_seen(&c, 1000, 5000, 2000);
    ok(witness_contact_gap(&c, 1000) == 0, "one contact: no gap yet");
    witness_contact_seen(&c, 1300, 5000, 2000);
    witness_contact_seen(&c, 2300, 5000, 2000);
    witness_contact_seen(&c, 2600, 5000, 2000);
    ok(witness_contact_gap(&c, 2600) == 1000, "the longest gap: 1000");
    ok(witness_contact_gap(&c, 4000) == 1400, "the one going on counts");
    /* 3100 opens a new bucket (2000 after 1000): 1000 stays in the
     * previous one, which is still counted. */
    witness_contact_seen(&c, 3100, 5000, 2000);
    ok(witness_contact_gap(&c, 3100) == 1000, "the previous bucket counts");
    witness_contact_seen(&c, 3400, 5000, 2000);
    witness_contact_seen(&c, 5100, 5000, 2000);
    ok(witness_contact_gap(&c, 5100) == 1700,
        "5100 opens another: 1700 is now the longest");
    for (int64_t t = 5400; t <= 9300; t += 300)
        witness_contact_seen(&c, t, 5000, 2000);
    ok(witness_contact_gap(&c, 9300) == 300,
        "two buckets later only 300 ms gaps are left");
    witness_contact_seen(&c, 16000, 5000, 2000);
    ok(c.since_mono == 16000 && witness_contact_gap(&c, 16000) == 0,
        "a gap over gap_ms starts the contact anew, its gaps too");

    ok(witness_majority_gap(0, gaps, 0) == 0, "no witnesses: no gap");
    gaps[0] = 900;
    gaps[1] = 300;
    ok(witness_majority_gap(3, gaps, 2) == 900,
        "two of three: the larger of their gaps");
    ok(witness_majority_gap(5, gaps, 2) == -1,
        "two of five continuous: no majority");
    gaps[0] = 1100;
    gaps[1] = 320;
    gaps[2] = 1050;
    gaps[3] = 290;
    gaps[4] = 4000;
    ok(witness_majority_gap(5, gaps, 5) == 1050,
        "three of five: the third smallest gap");
}

static void
test_reply(void)
{
    struct proto_status_reply r = { .heartbeat_ms = 1000,
        .gen = 7,
        .lease_ms = 5000,
        .has_witnesses = true,
        .nwitnesses = 2 };
    struct proto_status_reply back = { 0 };
    struct err err = { 0 };
    cJSON *json, *bad;

    snprintf(r.witnesses[0].node, sizeof(r.witnesses[0].node), "n2");
    snprintf(r.witnesses[0].addr, sizeof(r.witnesses[0].addr), "10.0.0.2");
    r.witnesses[0].port = 7471;
    snprintf(r.witnesses[1].node, sizeof(r.witnesses[1].node), "n3");
    snprintf(r.witnesses[1].addr, sizeof(r.witnesses[1].addr), "10.0.0.3");
    json = proto_status_reply_to_json(&r);
    is_int(proto_status_reply_from_json(json, &back, &err), 0,
        "a reply with witnesses round-trips");
    ok(back.has_witnesses && back.nwitnesses == 2, "both witnesses");
    is_str(back.witnesses[1].addr, "10.0.0.3", "their addresses");
    ok(back.witnesses[0].port == 7471 && back.witnesses[1].port == 0,
        "their ports (0: unknown)");
    bad = cJSON_GetObjectItem(json, "witnesses");
    for (int i = 0; i < 4; i++)
        cJSON_AddItemToArray(bad,
            cJSON_Duplicate(cJSON_GetArrayItem(bad, 0), 1));
    memset(&back, 0, sizeof(back));
    ok(proto_status_reply_from_json(json, &back, &err) == -EINVAL,
        "more than 5 witnesses: refused");
    cJSON_DeleteItemFromObject(json, "witnesses");
    memset(&back, 0, sizeof(back));
    ok(proto_status_reply_from_json(json, &back, &err) == 0 &&
            !back.has_witnesses,
        "no witnesses (an older scheduler): none sent");
    ok(back.lease_interval_ms == 0 && back.ping_ms == 0 &&
            cJSON_GetObjectItem(json, "ping_ms") == NULL,
        "no interval, no pings: neither sent, both 0");
    cJSON_Delete(json);

    r.lease_ms = 1500;
    r.lease_interval_ms = 300;
    r.ping_ms = 300;
    json = proto_status_reply_to_json(&r);
    memset(&back, 0, sizeof(back));
    ok(proto_status_reply_from_json(json, &back, &err) == 0 &&
            back.lease_ms == 1500 && back.lease_interval_ms == 300 &&
            back.ping_ms == 300,
        "a short lease, its interval and the pings asked for round-trip");
    cJSON_ReplaceItemInObject(json, "ping_ms", cJSON_CreateNumber(-1));
    ok(proto_status_reply_from_json(json, &back, &err) == -EINVAL,
        "a negative ping_ms: refused");
    cJSON_Delete(json);
}

/* The pair hash is pinned: W(N) is computed by the scheduler alone and
 * sent, but a change of the function changes every set at an upgrade,
 * which the gate then checks against sets the agents do not hold yet.
 * witness_rank_with (self hashed once) ranks as witness_rank_of does. */
static void
test_hash_pinned(void)
{
    struct witness_rank a = witness_rank_of("gpu-017", "r1", "gpu-018", "r2");
    struct witness_rank b = witness_rank_of("n1", NULL, "n2", NULL);
    struct witness_rank c = witness_rank_with(witness_self_hash("gpu-017"),
        "r1", "gpu-018", "r2");

    ok(a.hash == 0x84bb648353939a0cULL && !a.same_rack,
        "hash(gpu-017, gpu-018) is the one of every release so far");
    ok(b.hash == 0x147ac98dfc762d85ULL, "hash(n1, n2) too");
    ok(c.hash == a.hash && c.same_rack == a.same_rack && c.name == a.name,
        "witness_rank_with(witness_self_hash(self)) ranks the same");
    ok(witness_rank_of("n1", "r", "n2", "r").same_rack,
        "the same rack label: same_rack");
}

int
main(void)
{
    plan(NO_PLAN);
    test_hash_pinned();
    test_messages();
    test_pick();
    test_pick_spread();
    test_offer_incremental();
    test_agent_rule();
    test_scheduler_rule();
    test_contact_gap();
    test_reply();
    return done_testing();
}
