/*
 * xalloc.c - allocation helpers that abort instead of returning NULL
 */
#include "xalloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
oom(size_t n)
{
    fprintf(stderr, "fatal: out of memory allocating %zu bytes\n", n);
    abort();
}

void *
xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);

    if (p == NULL)
        oom(n);
    return p;
}

void *
xcalloc(size_t nmemb, size_t size)
{
    void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);

    if (p == NULL)
        oom(nmemb * size);
    return p;
}

void *
xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);

    if (q == NULL)
        oom(n);
    return q;
}

void *
xreallocarray(void *p, size_t nmemb, size_t size)
{
    void *q = reallocarray(p, nmemb ? nmemb : 1, size ? size : 1);

    if (q == NULL)
        oom(nmemb * size);
    return q;
}

char *
xstrdup(const char *s)
{
    char *p = strdup(s);

    if (p == NULL)
        oom(strlen(s));
    return p;
}

char *
xstrndup(const char *s, size_t n)
{
    char *p = strndup(s, n);

    if (p == NULL)
        oom(n);
    return p;
}

void
xstrset(char **dst, const char *s)
{
    char *copy = xstrdup(s ? s : "");

    free(*dst);
    *dst = copy;
}

void
xstrv_free(char **v, size_t n)
{
    if (v == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

char *
xasprintf(const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;
    int n;

    va_start(ap, fmt);
    n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0)
        oom(0);
    return s;
}
