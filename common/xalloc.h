/*
 * xalloc.h - allocation that aborts on out-of-memory
 *
 * The daemons are crash-only (durable state lives in SQLite and systemd
 * restarts us), so there is no ENOMEM plumbing anywhere: these never return
 * NULL.
 */
#ifndef COMMON_XALLOC_H
#define COMMON_XALLOC_H

#include <stddef.h>

void *xmalloc(size_t n);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *p, size_t n);
/* Grows an array to hold at least `want` elements of `size` bytes. */
void *xreallocarray(void *p, size_t nmemb, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* Replace the string *dst (freed) with a copy of s, "" for NULL; s may
 * be *dst itself or point into it. */
void xstrset(char **dst, const char *s);
/* Free the first n strings of v, then v. Accepts NULL. */
void xstrv_free(char **v, size_t n);
/* printf into a new string; caller frees. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#ifndef container_of
#define container_of(ptr, type, member)                                        \
    ((type *)((char *)(ptr)-offsetof(type, member)))
#endif

#endif
