/*
 * tbucket.h - a token bucket, pure arithmetic
 *
 * A bucket holds at most `burst` tokens and gains `rate` tokens per
 * second; taking one succeeds while at least one is there. A fresh bucket
 * (last_ms 0) is full. Times are any monotonic milliseconds; a clock that
 * goes back refills nothing.
 */
#ifndef COMMON_TBUCKET_H
#define COMMON_TBUCKET_H

#include <stdbool.h>
#include <stdint.h>

struct tbucket {
    double tokens;
    int64_t last_ms; /* 0: never used (full) */
};

/* Take one token at now_ms from b (rate tokens per second, at most burst
 * >= 1). Returns true if there was one; otherwise false and, when
 * retry_ms is not NULL, the milliseconds until one will be there (>= 1). */
bool tbucket_take(struct tbucket *b, double rate, double burst, int64_t now_ms,
    int64_t *retry_ms);

#endif
