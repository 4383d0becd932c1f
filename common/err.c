/*
 * err.c - error code plus human message
 */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void
err_clear(struct err *err)
{
    if (err == NULL)
        return;
    err->code = 0;
    err->msg[0] = '\0';
}

int
err_set(struct err *err, int code, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL)
        return code;
    err->code = code;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    return code;
}

int
err_prefix(struct err *err, const char *fmt, ...)
{
    char prefix[sizeof(err->msg)];
    char old[sizeof(err->msg)];
    size_t n;
    va_list ap;

    if (err == NULL)
        return 0;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof(prefix), fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof(old));
    /* Prefix first, then as much of the old message as still fits. */
    n = strlen(prefix);
    memcpy(err->msg, prefix, n + 1);
    if (n < sizeof(err->msg) - 1) {
        size_t room = sizeof(err->msg) - 1 - n;
        size_t len = strnlen(old, room);
        memcpy(err->msg + n, old, len);
        err->msg[n + len] = '\0';
    }
    return err->code;
}
