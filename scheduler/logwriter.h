/*
 * logwriter.h - the log store's writes, on a thread of their own
 *
 * Storing shipped rank output is file I/O (open, pwrite, fstat, close,
 * and at a job's first write or over its cap a walk of its files), which
 * under a flood of output stalled the loop for seconds. The loop hands
 * each chunk (a copy) to one writer thread, which calls logstore_write
 * in the order the chunks were queued, so writes to one file keep their
 * order and the cap's table (logstore.c) has a single user; a chunk's
 * done callback runs on the loop once it is written, also in queue order
 * (the reply to the agent is sent then: an acknowledged chunk is on the
 * file, where logstore_read, on the loop, finds it).
 *
 * Backpressure: while more than max_queued bytes wait, a chunk is
 * refused (-EAGAIN, a 503 to the agent, which keeps the output on its
 * disk and ships it again after its backoff), unless forced (a replica
 * applying the leader's log entry cannot refuse it).
 *
 * Threading: logwriter_write, logwriter_queued and logwriter_destroy on
 * the loop thread only; the logstore passed in is used by the writer
 * thread only for writes (logstore_read stays safe on the loop: it reads
 * files, never the cap's table).
 */
#ifndef SCHEDULER_LOGWRITER_H
#define SCHEDULER_LOGWRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "common/err.h"

struct logstore;
struct logwriter;

#define LOGWRITER_FORCE_FACTOR 4

struct logwriter_chunk {
    int64_t job;
    int attempt;
    int rank;
    bool err_stream;
    int64_t offset;
    const void *data; /* borrowed by logwriter_write, which copies it */
    size_t len;
};

/* On the loop, once c (its data the writer's copy, valid during the
 * call) is written: rc and size as logstore_write gives them; rc is
 * -ECANCELED for chunks still queued at logwriter_destroy (not
 * written). */
typedef void logwriter_done_fn(void *arg, int rc, int64_t size,
    const struct logwriter_chunk *c);

/* Start the writer thread. NULL with err set. */
struct logwriter *logwriter_create(uv_loop_t *loop, struct logstore *ls,
    size_t max_queued, struct err *err);
/* Queue a copy of c; done(arg, ...) runs on the loop when it is written.
 * 0, or -EAGAIN when over max_queued bytes wait and !force, or over
 * LOGWRITER_FORCE_FACTOR times that even when forced (a replica whose
 * disk is slower than its leader's must not queue without end). */
int logwriter_write(struct logwriter *lw, const struct logwriter_chunk *c,
    bool force, logwriter_done_fn *done, void *arg);
/* Bytes queued and not yet reported done. */
size_t logwriter_queued(const struct logwriter *lw);
/* Stop the thread after the chunk it is writing; the chunks not written
 * get done(-ECANCELED), those written and not yet reported their real
 * result, before it returns. Freed once its handle is closed. Accepts
 * NULL. */
void logwriter_destroy(struct logwriter *lw);

#endif
