/*
 * b64.h - base64 (RFC 4648, with padding) for binary blobs in JSON
 *
 * The PMIx collectives the agents relay through the scheduler carry
 * libpmix's opaque byte blobs inside JSON strings (docs/api.md,
 * POST /v1/agent/collective).
 */
#ifndef COMMON_B64_H
#define COMMON_B64_H

#include <stddef.h>

/* The base64 text of data[0..len), NUL-terminated (caller frees). */
char *b64_encode(const void *data, size_t len);
/* Decodes text (whitespace not allowed) into a new buffer *out (caller
 * frees; NUL-terminated past *len for convenience). Returns 0, or
 * -EINVAL on a character outside the alphabet or a bad length/padding. */
int b64_decode(const char *text, char **out, size_t *len);

#endif
