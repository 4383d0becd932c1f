/*
 * tail.c - the end of a file, cut at a line and cleaned to UTF-8 (tail.h)
 *
 * What a rank writes to stderr ends up in JSON (the status report, a
 * stack dump), which must be valid UTF-8: every byte that does not start
 * a well-formed sequence, and every NUL, becomes '?'.
 */
#include "agent/tail.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/sbuf.h"
#include "common/xalloc.h"

/* Length of the valid UTF-8 sequence at p (at most n bytes), or 0. */
static size_t
tail_utf8_len(const unsigned char *p, size_t n)
{
    size_t len, i;
    unsigned char lo = 0x80, hi = 0xbf;

    if (p[0] < 0x80)
        return 1;
    if (p[0] >= 0xc2 && p[0] <= 0xdf)
        len = 2;
    else if (p[0] >= 0xe0 && p[0] <= 0xef)
        len = 3;
    else if (p[0] >= 0xf0 && p[0] <= 0xf4)
        len = 4;
    else
        return 0;
    if (len > n)
        return 0;
    /* Second-byte limits rule out overlong forms, surrogates and code
     * points above U+10FFFF. */
    if (p[0] == 0xe0)
        lo = 0xa0;
    else if (p[0] == 0xed)
        hi = 0x9f;
    else if (p[0] == 0xf0)
        lo = 0x90;
    else if (p[0] == 0xf4)
        hi = 0x8f;
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (i = 2; i < len; i++) {
        if (p[i] < 0x80 || p[i] > 0xbf)
            return 0;
    }
    return len;
}

char *
tail_read(const char *path, size_t max)
{
    unsigned char *buf = NULL;
    struct sbuf out;
    struct stat st;
    size_t n = 0, start = 0, len;
    off_t off;
    ssize_t got;
    int fd;

    sbuf_init(&out);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sbuf_detach(&out, NULL);
    if (fstat(fd, &st) < 0 || st.st_size <= 0 || max == 0)
        goto done;
    off = st.st_size > (off_t)max ? st.st_size - (off_t)max : 0;
    buf = xmalloc(max);
    while (n < max) {
        got = pread(fd, buf + n, max - n, off + (off_t)n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        n += (size_t)got;
    }
    if (off > 0) {
        /* Begin at a line start; keep a lone long line rather than
         * nothing. */
        unsigned char *nl = memchr(buf, '\n', n);

        if (nl != NULL && (size_t)(nl - buf) + 1 < n)
            start = (size_t)(nl - buf) + 1;
        else
            while (start < n && (buf[start] & 0xc0) == 0x80)
                start++; /* the tail of a cut character */
    }
    while (start < n) {
        len = buf[start] == '\0' ? 0 : tail_utf8_len(buf + start, n - start);
        if (len == 0) {
            sbuf_addch(&out, '?');
            start++;
        } else {
            sbuf_add(&out, buf + start, len);
            start += len;
        }
    }
done:
    free(buf);
    close(fd);
    return sbuf_detach(&out, NULL);
}
