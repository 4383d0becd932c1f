/*
 * logstore.h - rank output shipped by the agents, kept under state_dir
 *
 * Files are <dir>/<job>/<attempt>/rank-<r>.{out,err}. Agents upload bytes
 * at offsets; a write is accepted when offset <= the size held (an overlap
 * is rewritten with the same bytes, so a resend is harmless), refused
 * otherwise so the agent resends from the size we report. Reads return a
 * byte range. Files are opened per call: uploads are bounded (1 MiB) and
 * keeping thousands of descriptors open would cost more than it saves.
 *
 * Synchronous file I/O on the loop thread, bounded by the request size.
 */
#ifndef SCHEDULER_LOGSTORE_H
#define SCHEDULER_LOGSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/sbuf.h"

struct logstore;

/* dir is created if missing. NULL with err set on failure. */
struct logstore *logstore_create(const char *dir, struct err *err);
void logstore_destroy(struct logstore *ls);

/* Write len bytes at offset when offset <= current size. *size receives
 * the size held afterwards (or unchanged when refused). Returns 0 (also
 * when refused; compare *size) or a negative errno. */
int logstore_write(struct logstore *ls, int64_t job, int attempt, int rank,
    bool err_stream, int64_t offset, const void *data, size_t len,
    int64_t *size);

/* Append up to limit bytes from offset to out; *size receives the file
 * size (0 when nothing was shipped yet). */
int logstore_read(struct logstore *ls, int64_t job, int attempt, int rank,
    bool err_stream, int64_t offset, size_t limit, struct sbuf *out,
    int64_t *size);

#endif
