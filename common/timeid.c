/*
 * timeid.c - clocks and random identifiers
 */
#include "timeid.h"

#include <errno.h>
#include <stdio.h>
#include <sys/random.h>
#include <time.h>

int64_t
timeid_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t
timeid_mono_ms(void)
{
    return timeid_mono_ns() / 1000000;
}

int64_t
timeid_mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

const char *
timeid_fmt(int64_t ms, char *buf, size_t len)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;

    if (ms <= 0) {
        snprintf(buf, len, "-");
        return buf;
    }
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

const char *
timeid_fmt_duration(int64_t ms, char *buf, size_t len)
{
    int64_t s = ms / 1000;

    if (ms < 0)
        snprintf(buf, len, "-");
    else if (ms < 1000)
        snprintf(buf, len, "%lldms", (long long)ms);
    else if (s < 60)
        snprintf(buf, len, "%.1fs", (double)ms / 1000.0);
    else if (s < 3600)
        snprintf(buf, len, "%lldm%02llds", (long long)(s / 60),
            (long long)(s % 60));
    else
        snprintf(buf, len, "%lldh%02lldm", (long long)(s / 3600),
            (long long)(s % 3600 / 60));
    return buf;
}

int
timeid_random_hex(char *out, size_t nbytes)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char raw[64];
    size_t done = 0;

    if (nbytes > sizeof(raw))
        return -EINVAL;
    while (done < nbytes) {
        ssize_t n = getrandom(raw + done, nbytes - done, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        done += (size_t)n;
    }
    for (size_t i = 0; i < nbytes; i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[2 * nbytes] = '\0';
    return 0;
}
