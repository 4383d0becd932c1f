/*
 * test_fence.c - the notice of a supervisor whose agent is gone
 */
#include "common/fence.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tests/tap.h"

static void
test_keys(void)
{
    unsigned char k1[CRED_KEY_LEN], k2[CRED_KEY_LEN];
    char a[CRED_HEX_LEN + 1], b[CRED_HEX_LEN + 1];

    cred_node_key("secret-secret-secret", 20, "n1", k1);
    cred_node_key("secret-secret-secret", 20, "n2", k2);
    fence_key(k1, 7, 2, a);
    is_int((int)strlen(a), CRED_HEX_LEN, "a fence key is 64 hex");
    fence_key(k1, 7, 2, b);
    is_str(a, b, "the same attempt: the same key");
    fence_key(k1, 7, 3, b);
    ok(strcmp(a, b) != 0, "another attempt: another key");
    fence_key(k1, 8, 2, b);
    ok(strcmp(a, b) != 0, "another job: another key");
    fence_key(k2, 7, 2, b);
    ok(strcmp(a, b) != 0, "another node's key: another key");
}

static void
test_notice(void)
{
    unsigned char nk[CRED_KEY_LEN], other[CRED_KEY_LEN];
    char key[CRED_HEX_LEN + 1], okey[CRED_HEX_LEN + 1];
    char buf[FENCE_MSG_MAX], bad[FENCE_MSG_MAX];
    struct fence_notice n = { .node = "gpu-017",
        .job = 123456789012LL,
        .attempt = 4 };
    struct fence_notice m;
    size_t len;

    cred_node_key("secret-secret-secret", 20, "gpu-017", nk);
    cred_node_key("secret-secret-secret", 20, "gpu-018", other);
    fence_key(nk, n.job, n.attempt, key);
    fence_key(other, n.job, n.attempt, okey);
    len = fence_notice_encode(key, &n, buf);
    ok(len < FENCE_MSG_MAX &&
            strncmp(buf, "LSF1 gpu-017 123456789012 4 ", 28) == 0,
        "the notice's text: %.*s", (int)len, buf);
    memset(&m, 0, sizeof(m));
    is_int(fence_notice_parse(buf, len, &m), 0, "it parses");
    is_str(m.node, "gpu-017", "its node");
    ok(m.job == n.job, "its job");
    is_int(m.attempt, 4, "its attempt");
    is_int(fence_notice_verify(key, buf, len), 0, "its MAC is right");
    is_int(fence_notice_verify(okey, buf, len), -EBADMSG,
        "under another node's key: bad MAC");

    /* Any changed byte before the MAC fails it. */
    memcpy(bad, buf, len);
    bad[26] = '5'; /* attempt 4 -> 5 */
    is_int(fence_notice_parse(bad, len, &m), 0, "a changed attempt parses");
    is_int(m.attempt, 5, "as attempt 5");
    is_int(fence_notice_verify(key, bad, len), -EBADMSG,
        "but its MAC is wrong");

    /* What is not a notice. */
    is_int(fence_notice_parse("", 0, &m), -EINVAL, "empty");
    is_int(fence_notice_parse(buf, len - 1, &m), -EINVAL, "a short MAC");
    is_int(fence_notice_verify(key, buf, len - 1), -EINVAL,
        "a short MAC is no notice to verify");
    memcpy(bad, buf, len);
    bad[2] = 'W';
    is_int(fence_notice_parse(bad, len, &m), -EINVAL, "another magic");
    memcpy(bad, buf, len);
    bad[5] = '\0';
    is_int(fence_notice_parse(bad, len, &m), -EINVAL, "a NUL inside");
    {
        const char *cases[] = {
            "LSF1 n1 x 1 ",           /* job not a number */
            "LSF1 n1 0 1 ",           /* job 0 */
            "LSF1 n1 -3 1 ",          /* negative job */
            "LSF1 n1 3 -1 ",          /* negative attempt */
            "LSF1 n1 3 1x ",          /* junk after the attempt */
            "LSF1 n1 3 ",             /* no attempt */
            "LSF1  3 1 ",             /* no node */
            "LSF1 n1 3 99999999999 ", /* attempt too large */
        };

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
            int k = snprintf(bad, sizeof(bad), "%s%064d", cases[i], 0);

            is_int(fence_notice_parse(bad, (size_t)k, &m), -EINVAL,
                "not a notice: '%s...'", cases[i]);
        }
    }
    memset(bad, 'a', sizeof(bad));
    is_int(fence_notice_parse(bad, sizeof(bad), &m), -EINVAL, "too long");
}

int
main(void)
{
    plan(NO_PLAN);
    test_keys();
    test_notice();
    return done_testing();
}
