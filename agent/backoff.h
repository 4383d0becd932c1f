/*
 * backoff.h - exponential backoff with jitter for retried requests
 *
 * Used by every retry loop of the agent (report.c, logship.c). Pure: no
 * I/O, no clock; the caller owns its current delay. The jitter comes from
 * random(), which main.c seeds once per process.
 */
#ifndef AGENT_BACKOFF_H
#define AGENT_BACKOFF_H

#include <stdint.h>

/*
 * The delay after a failure: twice `cur` (min_ms on the first failure,
 * when cur is 0), at most max_ms. *wait_ms gets the jittered wait to use
 * now, between half of it and all of it, so that agents that lost the
 * scheduler together do not all come back in the same millisecond.
 * Returns the new delay, to pass as `cur` next time.
 */
int64_t backoff_next(int64_t cur, int64_t min_ms, int64_t max_ms,
    int64_t *wait_ms);

#endif
