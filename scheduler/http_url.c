/*
 * http_url.c - decoding the request target: path and query string
 *
 * The path is decoded strictly: a bad escape or a control character
 * makes the request a 400, because routes and log lines see the result.
 * The query string is kept raw and decoded one key at a time on demand,
 * the way forms encode it: '+' is a space, and a malformed escape or %00
 * stays literal.
 */
#include "scheduler/http_int.h"

#include <errno.h>
#include <string.h>

static int
hex_digit(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int
http_path_decode(const char *s, size_t n, struct sbuf *out)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];

        if (c == '%') {
            int hi, lo;

            if (i + 2 >= n)
                return -EINVAL;
            hi = hex_digit((unsigned char)s[i + 1]);
            lo = hex_digit((unsigned char)s[i + 2]);
            if (hi < 0 || lo < 0)
                return -EINVAL;
            c = (unsigned char)(hi * 16 + lo);
            i += 2;
        }
        if (c < 0x20 || c == 0x7f)
            return -EINVAL;
        sbuf_addch(out, (char)c);
    }
    return 0;
}

/* The next decoded byte of a query component ('+' is a space, %XX a byte;
 * a malformed escape or %00 stays literal). */
static int
query_next(const char **s, const char *end)
{
    const char *p = *s;
    int hi, lo;

    if (*p == '+') {
        *s = p + 1;
        return ' ';
    }
    if (*p == '%' && end - p >= 3) {
        hi = hex_digit((unsigned char)p[1]);
        lo = hex_digit((unsigned char)p[2]);
        if (hi >= 0 && lo >= 0 && (hi | lo) != 0) {
            *s = p + 3;
            return hi * 16 + lo;
        }
    }
    *s = p + 1;
    return (unsigned char)*p;
}

static bool
query_name_is(const char *s, const char *end, const char *key)
{
    while (s < end) {
        if (*key == '\0' || query_next(&s, end) != (unsigned char)*key)
            return false;
        key++;
    }
    return *key == '\0';
}

const char *
http_query_get(const struct http_req *req, const char *key, char *buf,
    size_t len)
{
    const char *q = req->query, *end, *eq, *v;
    size_t n;

    if (q == NULL || key == NULL || buf == NULL || len == 0)
        return NULL;
    while (*q != '\0') {
        end = strchr(q, '&');
        if (end == NULL)
            end = q + strlen(q);
        eq = memchr(q, '=', (size_t)(end - q));
        if (query_name_is(q, eq ? eq : end, key)) {
            n = 0;
            for (v = eq ? eq + 1 : end; v < end;) {
                if (n + 1 >= len)
                    return NULL;
                buf[n++] = (char)query_next(&v, end);
            }
            buf[n] = '\0';
            return buf;
        }
        q = *end ? end + 1 : end;
    }
    return NULL;
}
