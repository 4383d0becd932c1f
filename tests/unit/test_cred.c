/*
 * test_cred.c - a bearer token's standing and when its last use is
 * written; node keys, agent request MACs and their credentials, node key
 * files (common/cred.h)
 *
 * The expected keys and MACs were computed with Python's hmac and
 * hashlib from docs/api.md "Agent credentials" (tests/helpers/
 * agentcred.py), not from this code.
 */
#include "common/cred.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/witness.h"
#include "tests/tap.h"

#define SECRET "0123456789abcdef-secret"
#define NONCE "00112233445566778899aabbccddeeff"
#define TS 1700000000123LL

static void
test_token_state(void)
{
    is_int(cred_token_state(0, 0, 5), CRED_TOKEN_VALID,
        "no expiry, not revoked: valid");
    is_int(cred_token_state(1000, 0, 999), CRED_TOKEN_VALID,
        "before its expiry: valid");
    is_int(cred_token_state(1000, 0, 1000), CRED_TOKEN_EXPIRED,
        "at its expiry: expired");
    is_int(cred_token_state(1000, 0, 5000), CRED_TOKEN_EXPIRED,
        "after: expired");
    is_int(cred_token_state(0, 7, 5), CRED_TOKEN_REVOKED, "revoked");
    is_int(cred_token_state(1000, 7, 5000), CRED_TOKEN_REVOKED,
        "revoked wins over expired");
}

static void
test_touch(void)
{
    ok(cred_token_touch_due(0, 5), "never used: written");
    ok(!cred_token_touch_due(1000, 1000 + CRED_TOKEN_TOUCH_MS - 1),
        "within the minute: not written");
    ok(cred_token_touch_due(1000, 1000 + CRED_TOKEN_TOUCH_MS),
        "a minute later: written");
    ok(cred_token_touch_due(5000, 1000), "the clock went back: written");
}

static void
hex(const unsigned char *raw, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", raw[i]);
}

static void
test_node_key(void)
{
    unsigned char k1[CRED_KEY_LEN], k2[CRED_KEY_LEN];
    char h[2 * CRED_KEY_LEN + 1];

    cred_node_key(SECRET, strlen(SECRET), "gpu01", k1);
    hex(k1, sizeof(k1), h);
    is_str(h,
        "fba120336e5422ff72fd1a1927f50b647b3d988fe045e6fc8c6ac0f17ad61278",
        "K_node = HMAC-SHA256(secret, \"lockstep-node-key:\" node)");
    cred_node_key(SECRET, strlen(SECRET), "gpu02", k2);
    ok(memcmp(k1, k2, sizeof(k1)) != 0, "another node, another key");
    cred_node_key("another-secret-0123", 19, "gpu01", k2);
    ok(memcmp(k1, k2, sizeof(k1)) != 0, "another secret, another key");
}

static void
test_req_mac(void)
{
    unsigned char key[CRED_KEY_LEN];
    char mac[CRED_HEX_LEN + 1], other[CRED_HEX_LEN + 1];
    struct cred_agent_req r = { .node = "gpu01",
        .method = "POST",
        .target = "/v1/agent/status",
        .body = "{\"version\":1}",
        .body_len = 13,
        .ts_ms = TS,
        .nonce = NONCE };
    struct cred_agent_req v;

    cred_node_key(SECRET, strlen(SECRET), "gpu01", key);
    cred_agent_req_mac(key, &r, mac);
    is_str(mac,
        "f779a1bc0db428a185150fa8ac9db8360fcc3f3b53c9b45c9f6f439436ef9843",
        "the MAC of a POST matches the documented canonical text");
    v = r;
    v.method = "GET";
    v.target = "/v1/agent/work?node=gpu01&gen=3&wait_ms=25000";
    v.body = NULL;
    v.body_len = 0;
    cred_agent_req_mac(key, &v, other);
    is_str(other,
        "c06280f4fe8350af28249117bf647f778090c4420b78317de6b9b49ddbba37e0",
        "the MAC of a GET with a query (empty body) too");
    /* Each covered field changes the MAC. */
    v = r, v.node = "gpu02";
    cred_agent_req_mac(key, &v, other);
    ok(strcmp(mac, other) != 0, "the node is covered");
    v = r, v.method = "PUT";
    cred_agent_req_mac(key, &v, other);
    ok(strcmp(mac, other) != 0, "the method is covered");
    v = r, v.target = "/v1/agent/status?x=1";
    cred_agent_req_mac(key, &v, other);
    ok(strcmp(mac, other) != 0, "the path and query are covered");
    v = r, v.body = "{\"version\":2}";
    cred_agent_req_mac(key, &v, other);
    ok(strcmp(mac, other) != 0, "the body is covered");
    v = r, v.ts_ms = TS + 1;
    cred_agent_req_mac(key, &v, other);
    ok(strcmp(mac, other) != 0, "the time is covered");
    v = r, v.nonce = "00112233445566778899aabbccddeefe";
    cred_agent_req_mac(key, &v, other);
    ok(strcmp(mac, other) != 0, "the nonce is covered");
}

static void
test_sign_parse(void)
{
    unsigned char key[CRED_KEY_LEN];
    char mac[CRED_HEX_LEN + 1];
    struct cred_agent_cred c, c2;
    char *h1, *h2;
    struct cred_agent_req r = { .node = "gpu01",
        .method = "POST",
        .target = "/v1/agent/logs?node=gpu01&job=3",
        .body = "line\n",
        .body_len = 5 };
    const char *prefix = "Authorization: Agent ";

    cred_node_key(SECRET, strlen(SECRET), "gpu01", key);
    h1 = cred_agent_sign(key, "gpu01", r.method, r.target, r.body, r.body_len,
        TS);
    h2 = cred_agent_sign(key, "gpu01", r.method, r.target, r.body, r.body_len,
        TS);
    ok(h1 && strncmp(h1, prefix, strlen(prefix)) == 0, "a header line: %s",
        h1 ? h1 : "NULL");
    ok(h1 && h2 && strcmp(h1, h2) != 0,
        "two signatures of the same request differ (the nonce)");
    is_int(cred_agent_parse(h1 + strlen(prefix), &c), 0, "it parses");
    is_str(c.node, "gpu01", "node");
    ok(c.ts_ms == TS, "time");
    is_int((int)strlen(c.nonce), 32, "a 128-bit nonce");
    cred_agent_parse(h2 + strlen(prefix), &c2);
    ok(strcmp(c.nonce, c2.nonce) != 0, "fresh nonces");
    r.ts_ms = c.ts_ms;
    r.nonce = c.nonce;
    cred_agent_req_mac(key, &r, mac);
    ok(cred_equal(mac, c.mac), "the MAC verifies over what was signed");
    r.body = "line\r";
    cred_agent_req_mac(key, &r, mac);
    ok(!cred_equal(mac, c.mac), "not over another body");
    free(h1);
    free(h2);
}

static void
test_parse_bad(void)
{
    struct cred_agent_cred c;
    char legacy[128], s[256];
    const char *mac =
        "f779a1bc0db428a185150fa8ac9db8360fcc3f3b53c9b45c9f6f439436ef9843";

    snprintf(legacy, sizeof(legacy), "n1:%s", mac);
    is_int(cred_agent_parse(legacy, &c), -EPROTO,
        "the static form of before is told apart");
    is_str(c.node, "n1", "with its node");
    snprintf(s, sizeof(s), "n1:%lld:%s:%s", TS, NONCE, mac);
    is_int(cred_agent_parse(s, &c), 0, "the new form");
    is_int(cred_agent_parse("n9:deadbeef", &c), -EINVAL, "a short MAC");
    is_int(cred_agent_parse("", &c), -EINVAL, "empty");
    is_int(cred_agent_parse("n1", &c), -EINVAL, "a node alone");
    snprintf(s, sizeof(s), "bad/name:%lld:%s:%s", TS, NONCE, mac);
    is_int(cred_agent_parse(s, &c), -EINVAL, "a bad node name");
    is_str(c.node, "", "is not kept");
    snprintf(s, sizeof(s), "n1:-5:%s:%s", NONCE, mac);
    is_int(cred_agent_parse(s, &c), -EINVAL, "a negative time");
    snprintf(s, sizeof(s), "n1:12x:%s:%s", NONCE, mac);
    is_int(cred_agent_parse(s, &c), -EINVAL, "a time that is not a number");
    snprintf(s, sizeof(s), "n1:%lld:0011:%s", TS, mac);
    is_int(cred_agent_parse(s, &c), -EINVAL, "a short nonce");
    snprintf(s, sizeof(s), "n1:%lld:%s:%s", TS,
        "00112233445566778899AABBCCDDEEFF", mac);
    is_int(cred_agent_parse(s, &c), -EINVAL, "an uppercase nonce");
    snprintf(s, sizeof(s), "n1:%lld:%s:%s:extra", TS, NONCE, mac);
    is_int(cred_agent_parse(s, &c), -EINVAL, "a field too many");
    snprintf(s, sizeof(s), "n1:%lld:%s:%s0", TS, NONCE, mac);
    is_int(cred_agent_parse(s, &c), -EINVAL, "a long MAC");
}

/* Write text to path with mode. */
static void
write_file(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");

    fputs(text, f);
    fclose(f);
    chmod(path, mode);
}

static void
test_keyfile(void)
{
    char dir[] = "/tmp/test_cred.XXXXXX", path[64];
    struct cred_node_keyfile kf, back;
    char wkey[CRED_HEX_LEN + 1];
    struct err err;
    char *text;

    if (mkdtemp(dir) == NULL) {
        ok(0, "mkdtemp");
        return;
    }
    snprintf(path, sizeof(path), "%s/node.key", dir);
    cred_node_keyfile_derive(SECRET, strlen(SECRET), "old-secret-0123456", 18,
        "gpu01", &kf);
    witness_key(SECRET, strlen(SECRET), wkey);
    is_str(kf.witness_key, wkey, "the witness key is the cluster's");
    witness_key("old-secret-0123456", 18, wkey);
    is_str(kf.witness_prev, wkey, "the previous one from the previous secret");
    text = cred_node_keyfile_format(&kf);
    write_file(path, text, 0600);
    free(text);
    is_int(cred_node_keyfile_read(path, &back, &err), 0, "it reads back");
    is_str(back.node, "gpu01", "node");
    ok(memcmp(back.key, kf.key, CRED_KEY_LEN) == 0, "key");
    is_str(back.witness_prev, kf.witness_prev, "witness_key_previous");

    chmod(path, 0644);
    is_int(cred_node_keyfile_read(path, &back, &err), -EPERM,
        "readable by others: refused");
    ok(strstr(err.msg, "chmod 600") != NULL, "saying what to do: %s", err.msg);
    write_file(path, "node = gpu01\n\nkey = abc\n", 0600);
    is_int(cred_node_keyfile_read(path, &back, &err), -EINVAL, "a short key");
    ok(strstr(err.msg, "line 3") != NULL, "naming the line: %s", err.msg);
    write_file(path, "node = gpu01\ncolour = blue\n", 0600);
    is_int(cred_node_keyfile_read(path, &back, &err), -EINVAL, "unknown key");
    ok(strstr(err.msg, "colour") != NULL, "named: %s", err.msg);
    write_file(path, "# only\nnode = gpu01\n", 0600);
    is_int(cred_node_keyfile_read(path, &back, &err), -EINVAL,
        "missing fields");
    ok(strstr(err.msg, "lacks 'key'") != NULL, "named: %s", err.msg);
    unlink(path);
    is_int(cred_node_keyfile_read(path, &back, &err), -ENOENT, "no file");
    rmdir(dir);
}

/* Known answers (RFC 4231 test case 2; FIPS 180-2 "abc"): the MACs and
 * digests are HMAC-SHA256 and SHA-256, whatever way libcrypto is asked. */
static void
test_known_answers(void)
{
    char hex[CRED_HEX_LEN + 1];

    cred_agent_mac("Jefe", 4, "what do ya want for nothing?", hex);
    is_str(hex,
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
        "HMAC-SHA256 known answer");
    cred_sha256_hex("abc", hex);
    is_str(hex,
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
        "SHA-256 known answer");
}

int
main(void)
{
    plan(NO_PLAN);
    test_token_state();
    test_touch();
    test_node_key();
    test_req_mac();
    test_sign_parse();
    test_parse_bad();
    test_keyfile();
    test_known_answers();
    return done_testing();
}
