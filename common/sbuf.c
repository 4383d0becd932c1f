/*
 * sbuf.c - growable byte buffer
 */
#include "sbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

static char sbuf_empty[1];

void
sbuf_init(struct sbuf *sb)
{
    sb->buf = sbuf_empty;
    sb->len = 0;
    sb->cap = 0;
}

void
sbuf_release(struct sbuf *sb)
{
    if (sb->cap)
        free(sb->buf);
    sbuf_init(sb);
}

void
sbuf_reset(struct sbuf *sb)
{
    sb->len = 0;
    if (sb->cap)
        sb->buf[0] = '\0';
}

static void
sbuf_grow(struct sbuf *sb, size_t extra)
{
    size_t want = sb->len + extra + 1;
    size_t cap = sb->cap ? sb->cap : 64;

    if (want <= sb->cap)
        return;
    while (cap < want)
        cap *= 2;
    if (sb->cap == 0) {
        sb->buf = xmalloc(cap);
        sb->buf[0] = '\0';
    } else {
        sb->buf = xrealloc(sb->buf, cap);
    }
    sb->cap = cap;
}

void
sbuf_add(struct sbuf *sb, const void *data, size_t n)
{
    if (n == 0)
        return;
    sbuf_grow(sb, n);
    memcpy(sb->buf + sb->len, data, n);
    sb->len += n;
    sb->buf[sb->len] = '\0';
}

void
sbuf_addstr(struct sbuf *sb, const char *s)
{
    sbuf_add(sb, s, strlen(s));
}

void
sbuf_addch(struct sbuf *sb, char c)
{
    sbuf_add(sb, &c, 1);
}

void
sbuf_vaddf(struct sbuf *sb, const char *fmt, va_list ap)
{
    va_list cp;
    int n;

    va_copy(cp, ap);
    n = vsnprintf(NULL, 0, fmt, cp);
    va_end(cp);
    if (n <= 0)
        return;
    sbuf_grow(sb, (size_t)n);
    vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
    sb->len += (size_t)n;
}

void
sbuf_addf(struct sbuf *sb, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    sbuf_vaddf(sb, fmt, ap);
    va_end(ap);
}

void
sbuf_consume(struct sbuf *sb, size_t n)
{
    if (n >= sb->len) {
        sbuf_reset(sb);
        return;
    }
    memmove(sb->buf, sb->buf + n, sb->len - n);
    sb->len -= n;
    sb->buf[sb->len] = '\0';
}

char *
sbuf_detach(struct sbuf *sb, size_t *len)
{
    char *p;

    if (len)
        *len = sb->len;
    p = sb->cap ? sb->buf : xstrdup("");
    sbuf_init(sb);
    return p;
}
