/*
 * timeid.h - clocks and random identifiers
 */
#ifndef COMMON_TIMEID_H
#define COMMON_TIMEID_H

#include <stddef.h>
#include <stdint.h>

/* Wall clock, milliseconds since the Unix epoch. */
int64_t timeid_now_ms(void);
/* Monotonic clock in milliseconds (for timeouts and durations). */
int64_t timeid_mono_ms(void);
/* Monotonic clock in nanoseconds (for benchmarks). */
int64_t timeid_mono_ns(void);
/* Format epoch ms as "2026-11-21T20:07:46Z" (UTC) into buf; "-" for 0. */
const char *timeid_fmt(int64_t ms, char *buf, size_t len);
/* Format a duration in ms as "3m05s", "1h02m", "850ms". */
const char *timeid_fmt_duration(int64_t ms, char *buf, size_t len);
/* Fill out with 2*nbytes hex chars of kernel randomness plus a NUL.
 * out must hold 2*nbytes+1 bytes. Returns 0 or a negative errno. */
int timeid_random_hex(char *out, size_t nbytes);

#endif
