/*
 * tap.h - a tiny TAP producer for C unit tests (after flux's libtap)
 *
 *     plan(NO_PLAN);
 *     ok(x == 1, "x is one");
 *     is_int(rc, 0, "parse succeeds");
 *     is_str(name, "gpu07", "name kept");
 *     done_testing();
 *
 * Header-only: each test binary includes it once.
 */
#ifndef TESTS_TAP_H
#define TESTS_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NO_PLAN (-1)

static int tap_planned = -1;
static int tap_run;
static int tap_failed;

static inline void
plan(int n)
{
    tap_planned = n;
    if (n >= 0)
        printf("1..%d\n", n);
    fflush(stdout);
}

static inline void __attribute__((format(printf, 1, 2)))
diag(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    printf("# ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
}

static inline int __attribute__((format(printf, 4, 5)))
tap_ok(int cond, const char *file, int line, const char *fmt, ...)
{
    va_list ap;

    tap_run++;
    if (!cond)
        tap_failed++;
    printf("%sok %d - ", cond ? "" : "not ", tap_run);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    if (!cond)
        printf("#   failed at %s:%d\n", file, line);
    fflush(stdout);
    return cond;
}

#define ok(cond, ...) tap_ok(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

#define is_int(got, want, ...)                                                 \
    do {                                                                       \
        long long tap_g = (long long)(got), tap_w = (long long)(want);         \
        if (!tap_ok(tap_g == tap_w, __FILE__, __LINE__, __VA_ARGS__))          \
            diag("  got %lld, want %lld", tap_g, tap_w);                       \
    } while (0)

#define is_str(got, want, ...)                                                 \
    do {                                                                       \
        const char *tap_g = (got), *tap_w = (want);                            \
        int tap_c = tap_g && tap_w ? strcmp(tap_g, tap_w) == 0                 \
                                   : tap_g == tap_w;                           \
        if (!tap_ok(tap_c, __FILE__, __LINE__, __VA_ARGS__))                   \
            diag("  got '%s', want '%s'", tap_g ? tap_g : "(null)",            \
                tap_w ? tap_w : "(null)");                                     \
    } while (0)

static inline void
skip(int n, const char *why)
{
    for (int i = 0; i < n; i++)
        printf("ok %d # SKIP %s\n", ++tap_run, why);
    fflush(stdout);
}

static inline int
done_testing(void)
{
    if (tap_planned < 0)
        printf("1..%d\n", tap_run);
    else if (tap_planned != tap_run)
        printf("# planned %d tests but ran %d\n", tap_planned, tap_run),
            tap_failed++;
    fflush(stdout);
    return tap_failed ? 1 : 0;
}

#endif
