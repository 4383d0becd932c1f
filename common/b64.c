/*
 * b64.c - base64 for binary blobs in JSON (b64.h)
 */
#include "common/b64.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

static const char b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *
b64_encode(const void *data, size_t len)
{
    const unsigned char *p = data;
    char *out = xmalloc((len + 2) / 3 * 4 + 1), *o = out;
    size_t i;

    for (i = 0; i + 2 < len; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];

        *o++ = b64_alphabet[v >> 18 & 63];
        *o++ = b64_alphabet[v >> 12 & 63];
        *o++ = b64_alphabet[v >> 6 & 63];
        *o++ = b64_alphabet[v & 63];
    }
    if (i < len) {
        uint32_t v = (uint32_t)p[i] << 16;

        if (i + 1 < len)
            v |= (uint32_t)p[i + 1] << 8;
        *o++ = b64_alphabet[v >> 18 & 63];
        *o++ = b64_alphabet[v >> 12 & 63];
        *o++ = i + 1 < len ? b64_alphabet[v >> 6 & 63] : '=';
        *o++ = '=';
    }
    *o = '\0';
    return out;
}

/* The value of c, or -1 outside the alphabet. */
static int
b64_value(char c)
{
    const char *at = c != '\0' ? strchr(b64_alphabet, c) : NULL;

    return at != NULL ? (int)(at - b64_alphabet) : -1;
}

int
b64_decode(const char *text, char **out, size_t *len)
{
    size_t n = strlen(text), pad = 0, i;
    char *buf, *o;

    *out = NULL;
    *len = 0;
    if (n % 4 != 0)
        return -EINVAL;
    if (n > 0 && text[n - 1] == '=')
        pad = n > 1 && text[n - 2] == '=' ? 2 : 1;
    buf = o = xmalloc(n / 4 * 3 + 1);
    for (i = 0; i < n; i += 4) {
        int v[4], k;
        bool last = i + 4 == n;

        for (k = 0; k < 4; k++) {
            v[k] = b64_value(text[i + k]);
            if (v[k] < 0 && !(last && k >= 4 - (int)pad)) {
                free(buf);
                return -EINVAL;
            }
        }
        *o++ = (char)(v[0] << 2 | v[1] >> 4);
        if (!(last && pad == 2))
            *o++ = (char)((v[1] & 15) << 4 | v[2] >> 2);
        if (!(last && pad >= 1))
            *o++ = (char)((v[2] & 3) << 6 | v[3]);
    }
    *o = '\0';
    *len = (size_t)(o - buf);
    *out = buf;
    return 0;
}
