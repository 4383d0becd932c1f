/*
 * backoff.c - exponential backoff with jitter (backoff.h)
 */
#include "agent/backoff.h"

#include <stdlib.h>

int64_t
backoff_next(int64_t cur, int64_t min_ms, int64_t max_ms, int64_t *wait_ms)
{
    int64_t next = cur <= 0 ? min_ms : cur * 2;

    if (next > max_ms)
        next = max_ms;
    *wait_ms = next / 2 + (int64_t)(random() % (next / 2 + 1));
    return next;
}
