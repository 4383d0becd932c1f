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
 * A cap on what one job stores (max_job_bytes, all its files together):
 * a write that takes the job over it drops the oldest output, first of
 * the file written, then of the job's other files (older attempts first),
 * down to seven eighths of the cap. A dropped range is a hole punched at
 * the start of its file (fallocate), so the file keeps its size and every
 * offset its meaning; what a file dropped (its first data offset) is what
 * logstore_read reports, so a reader can say how much is gone. A file
 * system that cannot punch holes keeps everything (logged once).
 *
 * Synchronous file I/O, bounded by the request size (and, at a job's
 * first write after a start and when the cap is reached, by the job's
 * number of files). logstore_write runs on the log writer's thread only
 * (logwriter.h: one thread, so the cap's table has one user),
 * logstore_read on the loop (it touches no shared state).
 */
#ifndef SCHEDULER_LOGSTORE_H
#define SCHEDULER_LOGSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/sbuf.h"

struct logstore;

/* dir is created if missing. max_job_bytes: the cap per job (0: none).
 * NULL with err set on failure. */
struct logstore *logstore_create(const char *dir, int64_t max_job_bytes,
    struct err *err);
void logstore_destroy(struct logstore *ls);

/* Write len bytes at offset when offset <= current size (bytes below
 * what the file dropped are not written again). *size receives the size
 * held afterwards (or unchanged when refused). Returns 0 (also when
 * refused; compare *size) or a negative errno. */
int logstore_write(struct logstore *ls, int64_t job, int attempt, int rank,
    bool err_stream, int64_t offset, const void *data, size_t len,
    int64_t *size);

/* Append up to limit bytes from offset to out; *size receives the file
 * size (0 when nothing was shipped yet) and *start the offset of the
 * first byte appended: offset, or the first byte kept when the range
 * from offset was dropped (then start - offset bytes are gone). */
int logstore_read(struct logstore *ls, int64_t job, int attempt, int rank,
    bool err_stream, int64_t offset, size_t limit, struct sbuf *out,
    int64_t *size, int64_t *start);

#endif
