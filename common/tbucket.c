/*
 * tbucket.c - a token bucket, pure arithmetic
 */
#include "common/tbucket.h"

#include <math.h>
#include <stddef.h>

bool
tbucket_take(struct tbucket *b, double rate, double burst, int64_t now_ms,
    int64_t *retry_ms)
{
    double need;

    if (burst < 1)
        burst = 1;
    if (b->last_ms == 0) {
        b->tokens = burst;
        b->last_ms = now_ms;
    } else if (now_ms > b->last_ms) {
        b->tokens += rate * (double)(now_ms - b->last_ms) / 1000.0;
        if (b->tokens > burst)
            b->tokens = burst;
        b->last_ms = now_ms;
    }
    if (b->tokens >= 1.0) {
        b->tokens -= 1.0;
        return true;
    }
    if (retry_ms != NULL) {
        need = 1.0 - b->tokens;
        *retry_ms = rate > 0 ? (int64_t)ceil(need * 1000.0 / rate) : INT64_MAX;
        if (*retry_ms < 1)
            *retry_ms = 1;
    }
    return false;
}
