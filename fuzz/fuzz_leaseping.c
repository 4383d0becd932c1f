/*
 * fuzz_leaseping.c - the lease pings and their answers (common/leaseping.h)
 *
 * lockstepd reads any datagram on its UDP port (its TCP listener's
 * address and port) from anyone on the network, and an agent reads any
 * datagram on its ping socket. The input is read as a ping (parsed, then
 * decoded under the key of the node it names) and as an answer (decoded
 * under a fixed node's key), as it came and sealed with the right MAC by
 * the harness. A ping or an answer read re-encodes to one that reads to
 * the same fields under the same key.
 */
#include "fuzz/fuzz.h"

#include "common/cred.h"
#include "common/leaseping.h"

static const char secret[] = "fuzz-secret-0123456789abcdef";

FUZZ_INIT_QUIET

/* The lease key of node under the fuzzing secret: its text, and made
 * ready (freed by the caller). */
static void
key_of(const char *node, char *key)
{
    unsigned char nk[CRED_KEY_LEN];

    cred_node_key(secret, sizeof(secret) - 1, node, nk);
    leaseping_key(nk, key);
}

static struct cred_mac_key *
ready_of(const char *node)
{
    unsigned char nk[CRED_KEY_LEN];

    cred_node_key(secret, sizeof(secret) - 1, node, nk);
    return leaseping_key_create(nk);
}

static void
check_ping(const char *buf, size_t len)
{
    char out[LEASEPING_MSG_MAX];
    struct cred_mac_key *key;
    struct leaseping p, q;
    size_t k;
    int rc;

    memset(&p, 0, sizeof(p));
    if (leaseping_parse(buf, len, &p) < 0)
        return;
    fuzz_assert(leaseping_is_ping(buf, len));
    fuzz_assert(p.node[0] != '\0' && strlen(p.node) <= PROTO_NODE_NAME_MAX);
    key = ready_of(p.node);
    memset(&q, 0, sizeof(q));
    rc = leaseping_decode(key, buf, len, &q);
    fuzz_assert(rc == 0 || rc == -EBADMSG);
    k = leaseping_encode(key, &p, out);
    fuzz_assert(k > 0 && k < LEASEPING_MSG_MAX);
    memset(&q, 0, sizeof(q));
    fuzz_assert(leaseping_decode(key, out, k, &q) == 0);
    fuzz_assert(strcmp(p.node, q.node) == 0 && p.seq == q.seq &&
                p.stopping == q.stopping);
    cred_mac_key_destroy(key);
}

static void
check_ack(struct cred_mac_key *key, const char *buf, size_t len)
{
    char out[LEASEPING_MSG_MAX];
    struct leaseping_ack a, b;
    size_t k;

    memset(&a, 0, sizeof(a));
    if (leaseping_ack_decode(key, buf, len, &a) < 0)
        return;
    fuzz_assert(!leaseping_is_ping(buf, len));
    fuzz_assert(a.lease_ms >= PROTO_LEASE_MIN_MS &&
                a.lease_ms <= PROTO_LEASE_MAX_MS && a.interval_ms > 0);
    k = leaseping_ack_encode(key, &a, out);
    fuzz_assert(k > 0 && k < LEASEPING_MSG_MAX);
    memset(&b, 0, sizeof(b));
    fuzz_assert(leaseping_ack_decode(key, out, k, &b) == 0);
    fuzz_assert(strcmp(a.node, b.node) == 0 && a.seq == b.seq &&
                a.lease_ms == b.lease_ms && a.interval_ms == b.interval_ms);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char sealed[LEASEPING_MSG_MAX + CRED_HEX_LEN + 2];
    char key[CRED_HEX_LEN + 1], mac[CRED_HEX_LEN + 1], n1[CRED_HEX_LEN + 1];
    struct cred_mac_key *n1_key = ready_of("n1"), *key_ready;
    struct leaseping p;
    char *text;

    key_of("n1", n1);
    check_ping((const char *)data, size);
    check_ack(n1_key, (const char *)data, size);
    if (size > LEASEPING_MSG_MAX) {
        cred_mac_key_destroy(n1_key);
        return 0;
    }
    /* The same text with the right MAC, as an agent or the scheduler
     * would send it: what parses then verifies. */
    text = fuzz_cstr(data, size);
    snprintf(sealed, sizeof(sealed), "%s %064d", text, 0);
    if (leaseping_parse(sealed, strlen(sealed), &p) == 0) {
        key_of(p.node, key);
        cred_agent_mac(key, strlen(key), text, mac);
        snprintf(sealed, sizeof(sealed), "%s %s", text, mac);
        key_ready = ready_of(p.node);
        fuzz_assert(
            leaseping_decode(key_ready, sealed, strlen(sealed), &p) == 0);
        cred_mac_key_destroy(key_ready);
        check_ping(sealed, strlen(sealed));
    }
    cred_agent_mac(n1, strlen(n1), text, mac);
    snprintf(sealed, sizeof(sealed), "%s %s", text, mac);
    check_ack(n1_key, sealed, strlen(sealed));
    cred_mac_key_destroy(n1_key);
    free(text);
    return 0;
}
