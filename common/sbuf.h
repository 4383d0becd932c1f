/*
 * sbuf.h - growable byte buffer, always NUL-terminated
 */
#ifndef COMMON_SBUF_H
#define COMMON_SBUF_H

#include <stdarg.h>
#include <stddef.h>

struct sbuf {
    char *buf; /* never NULL after sbuf_init; NUL-terminated */
    size_t len;
    size_t cap;
};

void sbuf_init(struct sbuf *sb);
void sbuf_release(struct sbuf *sb);
void sbuf_reset(struct sbuf *sb);
void sbuf_add(struct sbuf *sb, const void *data, size_t n);
void sbuf_addstr(struct sbuf *sb, const char *s);
void sbuf_addch(struct sbuf *sb, char c);
void sbuf_addf(struct sbuf *sb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void sbuf_vaddf(struct sbuf *sb, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
/* Drop the first n bytes. */
void sbuf_consume(struct sbuf *sb, size_t n);
/* Hand the buffer to the caller (who frees it); sb is left empty. */
char *sbuf_detach(struct sbuf *sb, size_t *len);

#endif
