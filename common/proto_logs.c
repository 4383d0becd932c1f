/*
 * proto_logs.c - frames and query lists of the many-ranks log read
 * (proto_logs.h)
 */
#include "common/proto_logs.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
proto_log_frame_add(struct sbuf *out, int64_t rank, int64_t start, int64_t size,
    const void *data, size_t len)
{
    sbuf_addf(out,
        "rank=%" PRId64 " start=%" PRId64 " size=%" PRId64 " len=%zu\n", rank,
        start, size, len);
    sbuf_add(out, data, len);
    sbuf_addch(out, '\n');
}

/* A decimal in [0, INT64_MAX / 2] at *s up to a char in stops; *s moves
 * past it. */
static int
read_num(const char **s, const char *end, int64_t *v)
{
    int64_t n = 0;
    const char *p = *s;

    if (p >= end || *p < '0' || *p > '9')
        return -EPROTO;
    for (; p < end && *p >= '0' && *p <= '9'; p++) {
        if (n > (INT64_MAX / 2 - (*p - '0')) / 10)
            return -EPROTO;
        n = n * 10 + (*p - '0');
    }
    *s = p;
    *v = n;
    return 0;
}

/* "key=" then a number, then sep. */
static int
read_field(const char **s, const char *end, const char *key, char sep,
    int64_t *v)
{
    size_t k = strlen(key);

    if ((size_t)(end - *s) < k || memcmp(*s, key, k) != 0)
        return -EPROTO;
    *s += k;
    if (read_num(s, end, v) < 0 || *s >= end || **s != sep)
        return -EPROTO;
    (*s)++;
    return 0;
}

int
proto_log_frame_next(const char **p, size_t *left, struct proto_log_frame *f,
    struct err *err)
{
    const char *s = *p, *end = *p + *left;
    int64_t len;

    if (*left == 0)
        return 0;
    if (read_field(&s, end, "rank=", ' ', &f->rank) < 0 ||
        read_field(&s, end, "start=", ' ', &f->start) < 0 ||
        read_field(&s, end, "size=", ' ', &f->size) < 0 ||
        read_field(&s, end, "len=", '\n', &len) < 0)
        return err_set(err, -EPROTO,
            "a log frame's head is not 'rank=R start=S size=Z len=N'");
    if ((uint64_t)len >= (uint64_t)(end - s) || s[len] != '\n')
        return err_set(err, -EPROTO,
            "log frame of rank %" PRId64 " is cut short", f->rank);
    if (f->start + len > f->size)
        return err_set(err, -EPROTO,
            "log frame of rank %" PRId64 " ends past the size it gives",
            f->rank);
    f->data = s;
    f->len = (size_t)len;
    s += len + 1;
    *left -= (size_t)(s - *p);
    *p = s;
    return 1;
}

int
proto_log_ranks_parse(const char *s, int64_t max, int64_t *first, int64_t *last,
    struct err *err)
{
    const char *p = s, *end = s + strlen(s);

    if (read_num(&p, end, first) < 0)
        goto bad;
    *last = *first;
    if (p < end && *p == '-') {
        p++;
        if (read_num(&p, end, last) < 0)
            goto bad;
    }
    if (p != end || *first > *last || *last > max)
        goto bad;
    return 0;
bad:
    return err_set(err, -EINVAL,
        "invalid 'ranks' (query): '%.40s' is not A-B within 0 to %" PRId64, s,
        max);
}

int
proto_log_offsets_parse(const char *s, int64_t *v, size_t nmax, size_t *n,
    struct err *err)
{
    const char *p = s, *end = s + strlen(s);

    *n = 0;
    while (p < end) {
        if (*n == nmax)
            return err_set(err, -EINVAL,
                "invalid 'offsets' (query): more than %zu", nmax);
        if (read_num(&p, end, &v[*n]) < 0 || (p < end && *p != ',') ||
            (p < end && p + 1 == end))
            return err_set(err, -EINVAL,
                "invalid 'offsets' (query): not a list of offsets "
                "(o,o,...)");
        (*n)++;
        if (p < end)
            p++;
    }
    return 0;
}
