/*
 * fuzz_fence.c - the supervisors' fence notices (common/fence.h)
 *
 * lockstepd reads any datagram on its fence port (its TCP listener's
 * address and port, UDP), from anyone on the network. The input is
 * parsed and verified as it came (the MAC under the key of the node it
 * names), and sealed with that node's right MAC by the harness (the
 * "LSF1 ..." text then verifies). A parsed notice re-encodes to a notice
 * that parses to the same fields and verifies.
 */
#include "fuzz/fuzz.h"

#include "common/cred.h"
#include "common/fence.h"

static const char secret[] = "fuzz-secret-0123456789abcdef";

FUZZ_INIT_QUIET

/* The fence key of n under the fuzzing secret. */
static void
key_of(const struct fence_notice *n, char *key)
{
    unsigned char nk[CRED_KEY_LEN];

    cred_node_key(secret, sizeof(secret) - 1, n->node, nk);
    fence_key(nk, n->job, n->attempt, key);
}

static void
check(const char *buf, size_t len)
{
    char key[CRED_HEX_LEN + 1], out[FENCE_MSG_MAX];
    struct fence_notice n, n2;
    size_t k;
    int rc;

    memset(&n, 0, sizeof(n));
    if (fence_notice_parse(buf, len, &n) < 0)
        return;
    fuzz_assert(n.node[0] != '\0' && strlen(n.node) <= PROTO_NODE_NAME_MAX);
    fuzz_assert(n.job > 0 && n.attempt >= 0);
    key_of(&n, key);
    rc = fence_notice_verify(key, buf, len);
    fuzz_assert(rc == 0 || rc == -EBADMSG);
    k = fence_notice_encode(key, &n, out);
    fuzz_assert(k < FENCE_MSG_MAX);
    memset(&n2, 0, sizeof(n2));
    fuzz_assert(fence_notice_parse(out, k, &n2) == 0);
    fuzz_assert(strcmp(n.node, n2.node) == 0 && n.job == n2.job &&
                n.attempt == n2.attempt);
    fuzz_assert(fence_notice_verify(key, out, k) == 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char sealed[FENCE_MSG_MAX + CRED_HEX_LEN + 2];
    char key[CRED_HEX_LEN + 1], mac[CRED_HEX_LEN + 1];
    struct fence_notice n;
    char *text;

    check((const char *)data, size);
    /* The same text with its node's MAC, as that node's supervisor would
     * send it: a text that parses then verifies. */
    if (size > FENCE_MSG_MAX)
        return 0;
    text = fuzz_cstr(data, size);
    snprintf(sealed, sizeof(sealed), "%s %064d", text, 0);
    if (fence_notice_parse(sealed, strlen(sealed), &n) == 0) {
        key_of(&n, key);
        cred_agent_mac(key, strlen(key), text, mac);
        snprintf(sealed, sizeof(sealed), "%s %s", text, mac);
        /* It parsed with a 64-digit MAC in place: the same length. */
        fuzz_assert(fence_notice_verify(key, sealed, strlen(sealed)) == 0);
        check(sealed, strlen(sealed));
    }
    free(text);
    return 0;
}
