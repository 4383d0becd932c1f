/*
 * test_cred.c - a bearer token's standing and when its last use is
 * written (common/cred.h)
 */
#include "common/cred.h"

#include "tests/tap.h"

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

int
main(void)
{
    plan(NO_PLAN);
    test_token_state();
    test_touch();
    return done_testing();
}
