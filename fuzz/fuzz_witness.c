/*
 * fuzz_witness.c - the witnesses' UDP messages (common/witness.h)
 *
 * An agent answers any datagram on its witness port, and reads the
 * answers to its own queries: both are parsed from bytes anyone on the
 * network can send. The input is decoded as a query and as an answer
 * twice: as it came (the MAC is checked before anything else, so this
 * covers the envelope), and sealed with the right MAC by the harness
 * (the "LSW1 ..." text then reaches the field parsers). A decoded
 * message re-encodes and decodes to the same fields.
 */
#include "fuzz/fuzz.h"

#include "common/cred.h"
#include "common/witness.h"

static char key[CRED_HEX_LEN + 1];

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    static const char secret[] = "fuzz-secret-0123456789abcdef";

    (void)argc;
    (void)argv;
    fuzz_quiet();
    witness_key(secret, sizeof(secret) - 1, key);
    return 0;
}

static void
decode(const char *buf, size_t len)
{
    struct witness_query q, q2;
    struct witness_answer a, a2;
    char out[WITNESS_MSG_MAX];
    size_t n;

    memset(&q, 0, sizeof(q));
    if (witness_query_decode(key, buf, len, &q) == 0) {
        fuzz_assert(q.node[0] != '\0' && strlen(q.node) <= PROTO_NODE_NAME_MAX);
        n = witness_query_encode(key, &q, out);
        fuzz_assert(n < WITNESS_MSG_MAX);
        fuzz_assert(witness_query_decode(key, out, n, &q2) == 0);
        fuzz_assert(strcmp(q.node, q2.node) == 0 && q.nonce == q2.nonce);
    }
    memset(&a, 0, sizeof(a));
    if (witness_answer_decode(key, buf, len, &a) == 0) {
        fuzz_assert(a.age_ms >= -1);
        n = witness_answer_encode(key, &a, out);
        fuzz_assert(n < WITNESS_MSG_MAX);
        fuzz_assert(witness_answer_decode(key, out, n, &a2) == 0);
        fuzz_assert(strcmp(a.node, a2.node) == 0 && a.nonce == a2.nonce &&
                    a.age_ms == a2.age_ms);
        (void)witness_answer_unknown(&a);
        (void)witness_answer_stale(&a, 1000, 500, 100);
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char sealed[WITNESS_MSG_MAX + CRED_HEX_LEN + 2];
    char mac[CRED_HEX_LEN + 1];
    char *text;

    decode((const char *)data, size);
    /* The same text with its MAC, as a peer with the key sends it. */
    if (size > WITNESS_MSG_MAX)
        return 0;
    text = fuzz_cstr(data, size);
    cred_agent_mac(key, strlen(key), text, mac);
    snprintf(sealed, sizeof(sealed), "%s %s", text, mac);
    decode(sealed, strlen(sealed));
    free(text);
    return 0;
}
