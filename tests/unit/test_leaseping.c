/*
 * test_leaseping.c - the lease ping and its answer
 */
#include "common/leaseping.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/fence.h"
#include "tests/tap.h"

/* node's lease key as text, and made ready (freed by the caller). */
static void
keys(const char *node, char *key)
{
    unsigned char nk[CRED_KEY_LEN];

    cred_node_key("secret-secret-secret", 20, node, nk);
    leaseping_key(nk, key);
}

static struct cred_mac_key *
ready(const char *node)
{
    unsigned char nk[CRED_KEY_LEN];

    cred_node_key("secret-secret-secret", 20, node, nk);
    return leaseping_key_create(nk);
}

static void
test_ping(void)
{
    struct cred_mac_key *key = ready("gpu-017"), *okey = ready("gpu-018");
    char hex[CRED_HEX_LEN + 1];
    char buf[LEASEPING_MSG_MAX], bad[LEASEPING_MSG_MAX];
    struct leaseping p = { .node = "gpu-017", .seq = 18446744073709551615ULL };
    struct leaseping q;
    unsigned char nk[CRED_KEY_LEN];
    char fkey[CRED_HEX_LEN + 1];
    size_t len;

    keys("gpu-017", hex);
    is_int((int)strlen(hex), CRED_HEX_LEN, "a lease key is 64 hex");
    cred_node_key("secret-secret-secret", 20, "gpu-017", nk);
    fence_key(nk, 0, 0, fkey);
    ok(strcmp(hex, fkey) != 0, "not any fence key of the node");

    len = leaseping_encode(key, &p, buf);
    ok(len < LEASEPING_MSG_MAX &&
            strncmp(buf, "LSP1 gpu-017 18446744073709551615 run ", 38) == 0,
        "the ping's text: %.*s", (int)len, buf);
    ok(leaseping_is_ping(buf, len), "it looks like a ping");
    ok(!leaseping_is_ping("LSF1 n 1 2 x", 12), "a fence notice does not");
    memset(&q, 0, sizeof(q));
    is_int(leaseping_parse(buf, len, &q), 0, "it parses");
    is_str(q.node, "gpu-017", "its node");
    ok(q.seq == p.seq, "its number, the largest there is");
    ok(!q.stopping, "run: the agent is not stopping");
    memset(&q, 0, sizeof(q));
    is_int(leaseping_decode(key, buf, len, &q), 0, "its MAC is right");
    ok(q.seq == p.seq, "decoded, the number too");
    is_int(leaseping_decode(okey, buf, len, &q), -EBADMSG,
        "under another node's key: bad MAC");

    memcpy(bad, buf, len);
    bad[14] = '2'; /* the number changed, the MAC kept */
    is_int(leaseping_decode(key, bad, len, &q), -EBADMSG,
        "another number under the same MAC: bad MAC");
    is_int(leaseping_parse(buf, len - 1, &q), -EINVAL, "a MAC cut short");
    is_int(leaseping_parse("LSP1 gpu-017  5 x", 17, &q), -EINVAL,
        "two spaces: refused");
    p.stopping = true;
    len = leaseping_encode(key, &p, buf);
    ok(strstr(buf, " stop ") != NULL &&
            leaseping_decode(key, buf, len, &q) == 0 && q.stopping,
        "stop: the agent stops on purpose");
    memcpy(bad, buf, len);
    memcpy(strstr(bad, " stop ") + 1, "stap", 4);
    is_int(leaseping_parse(bad, len, &q), -EINVAL, "neither run nor stop");
    snprintf(bad, sizeof(bad), "LSP1 gpu-017 -5 run %064d", 0);
    is_int(leaseping_parse(bad, strlen(bad), &q), -EINVAL, "a sign: refused");
    snprintf(bad, sizeof(bad), "LSP1 gpu-017 18446744073709551616 run %064d",
        0);
    is_int(leaseping_parse(bad, strlen(bad), &q), -EINVAL,
        "a number past 2^64 - 1: refused");
    snprintf(bad, sizeof(bad), "LSP1 gpu-017 5 run %063dZ", 0);
    is_int(leaseping_parse(bad, strlen(bad), &q), -EINVAL,
        "a MAC not in hex: refused");
    snprintf(bad, sizeof(bad), "LSP1 gpu-017 5 run 6 %064d", 0);
    is_int(leaseping_parse(bad, strlen(bad), &q), -EINVAL,
        "a field too many: refused");
    memcpy(bad, buf, len);
    bad[7] = '\0';
    is_int(leaseping_parse(bad, len, &q), -EINVAL, "a NUL inside: refused");
    cred_mac_key_destroy(key);
    cred_mac_key_destroy(okey);
}

static void
test_ack(void)
{
    struct cred_mac_key *key = ready("n1"), *okey = ready("n2");
    char buf[LEASEPING_MSG_MAX], bad[LEASEPING_MSG_MAX];
    struct leaseping_ack a = { .node = "n1",
        .seq = 42,
        .lease_ms = 1500,
        .interval_ms = 300 };
    struct leaseping_ack b;
    size_t len;

    len = leaseping_ack_encode(key, &a, buf);
    ok(strncmp(buf, "LSA1 n1 42 1500 300 ", 20) == 0, "the answer's text: %.*s",
        (int)len, buf);
    memset(&b, 0, sizeof(b));
    is_int(leaseping_ack_decode(key, buf, len, &b), 0, "it decodes");
    ok(strcmp(b.node, "n1") == 0 && b.seq == 42 && b.lease_ms == 1500 &&
            b.interval_ms == 300,
        "node, number, lease and interval");
    is_int(leaseping_ack_decode(okey, buf, len, &b), -EBADMSG,
        "under another key: bad MAC");
    ok(!leaseping_is_ping(buf, len), "an answer is no ping");
    memcpy(bad, buf, len);
    bad[12] = '9'; /* 1500 -> 1900 */
    is_int(leaseping_ack_decode(key, bad, len, &b), -EBADMSG,
        "a longer lease under the same MAC: bad MAC");
    a.lease_ms = 50;
    len = leaseping_ack_encode(key, &a, buf);
    is_int(leaseping_ack_decode(key, buf, len, &b), -EINVAL,
        "a lease under the least one: refused");
    a.lease_ms = 1500;
    a.interval_ms = 0;
    len = leaseping_ack_encode(key, &a, buf);
    is_int(leaseping_ack_decode(key, buf, len, &b), -EINVAL,
        "no interval: refused");
    a.interval_ms = 300;
    len = leaseping_encode(key, &(struct leaseping){ .node = "n1", .seq = 42 },
        buf);
    is_int(leaseping_ack_decode(key, buf, len, &b), -EINVAL,
        "a ping is no answer");
    cred_mac_key_destroy(key);
    cred_mac_key_destroy(okey);
}

/* The MAC on the wire is HMAC-SHA256 under the lease key's text
 * (docs/api.md), message after message of the made-ready key, and a
 * key made ready again checks them. */
static void
test_wire_mac(void)
{
    struct cred_mac_key *key = ready("n1"), *again = ready("n1");
    char hex[CRED_HEX_LEN + 1], mac[CRED_HEX_LEN + 1];
    char buf[LEASEPING_MSG_MAX];
    struct leaseping_ack a = { .node = "n1",
        .lease_ms = 1500,
        .interval_ms = 300 };
    struct leaseping p = { .node = "n1" }, q;
    int sealed = 0, checked = 0;
    size_t len;

    keys("n1", hex);
    for (int i = 0; i < 100; i++) {
        a.seq = p.seq = 1000 + (uint64_t)i;
        len = leaseping_ack_encode(key, &a, buf);
        buf[len - CRED_HEX_LEN - 1] = '\0';
        cred_agent_mac(hex, strlen(hex), buf, mac);
        if (strcmp(buf + len - CRED_HEX_LEN, mac) == 0)
            sealed++;
        len = leaseping_encode(key, &p, buf);
        if (leaseping_decode(again, buf, len, &q) == 0 && q.seq == p.seq)
            checked++;
    }
    is_int(sealed, 100, "each answer's MAC is HMAC-SHA256 under the key text");
    is_int(checked, 100, "each ping checks under the key made ready again");
    cred_mac_key_destroy(key);
    cred_mac_key_destroy(again);
    cred_mac_key_destroy(NULL);
}

int
main(void)
{
    plan(NO_PLAN);
    test_ping();
    test_ack();
    test_wire_mac();
    return done_testing();
}
