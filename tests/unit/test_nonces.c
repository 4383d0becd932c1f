/*
 * test_nonces.c - the agents' requests seen within the window
 * (scheduler/nonces.h): once only, forgotten after their window, bounded
 */
#include "scheduler/nonces.h"

#include <errno.h>
#include <string.h>

#include "tests/tap.h"

static void
key_of(unsigned n, unsigned char *key)
{
    memset(key, 0, NONCES_KEY_LEN);
    memcpy(key, &n, sizeof(n));
    key[NONCES_KEY_LEN - 1] = 0x5a;
}

static void
test_once(void)
{
    struct nonces n;
    unsigned char a[NONCES_KEY_LEN], b[NONCES_KEY_LEN];

    nonces_init(&n, 0);
    ok(n.max == NONCES_MAX_DEFAULT, "0 is the default size");
    key_of(1, a);
    key_of(2, b);
    is_int(nonces_add(&n, a, 31000, 1000), 0, "a new request");
    is_int(nonces_add(&n, a, 31000, 2000), -EEXIST, "the same: a replay");
    is_int(nonces_add(&n, b, 32000, 2000), 0, "another one");
    is_int((int)nonces_count(&n), 2, "two remembered");
    is_int(nonces_add(&n, a, 61000, 30999), -EEXIST,
        "a replay until its window is over");
    is_int(nonces_add(&n, a, 61000, 31000), -EEXIST,
        "and at its expiry (the edge of the window is still in it)");
    is_int(nonces_add(&n, b, 62000, 31001), -EEXIST, "b still remembered");
    is_int(nonces_add(&n, a, 61000, 31001), 0,
        "after its expiry it is forgotten (the window check refuses it)");
    nonces_release(&n);
}

static void
test_bounded(void)
{
    struct nonces n;
    unsigned char k[NONCES_KEY_LEN];
    int rc = 0;

    nonces_init(&n, 1024);
    for (unsigned i = 0; i < 1024 && rc == 0; i++) {
        key_of(100 + i, k);
        rc = nonces_add(&n, k, 60000 + i, 1000);
    }
    is_int(rc, 0, "1024 requests fit");
    key_of(5000, k);
    is_int(nonces_add(&n, k, 70000, 1000), -ENOSPC,
        "the 1025th is refused while none expired (none forgotten early)");
    ok(n.full == 1, "counted");
    key_of(100, k);
    is_int(nonces_add(&n, k, 70000, 2000), -EEXIST,
        "the remembered ones are still replays");
    key_of(5000, k);
    is_int(nonces_add(&n, k, 90000, 60001), 0,
        "once the oldest expired, there is room");
    is_int((int)nonces_count(&n), 1024, "the expired one made room");
    nonces_release(&n);
}

int
main(void)
{
    plan(NO_PLAN);
    test_once();
    test_bounded();
    return done_testing();
}
