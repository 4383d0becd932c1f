/*
 * logship.h - ship every rank's stdout/stderr file to the scheduler
 *
 * Each rank's output goes to files (proc.h); a timer reads what is new in
 * each file and POSTs it to /v1/agent/logs at the offset the scheduler has
 * acknowledged, so logs stay readable after the node is gone. At most one
 * request per file is in flight and each carries at most 1 MiB; the size in
 * the scheduler's reply is the next offset (it also repairs a gap or an
 * overlap, e.g. after an agent restart).
 *
 * Everything runs on the loop thread.
 */
#ifndef AGENT_LOGSHIP_H
#define AGENT_LOGSHIP_H

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"

struct agentd;
struct logship;

/* Shipping state of one output file, embedded in its rank. */
struct logship_file {
    int fd;                     /* read side; -1 when there is no file */
    uint64_t acked;             /* bytes the scheduler holds */
    int64_t retry_at_ms;        /* monotonic; no request before this */
    int64_t backoff_ms;
    bool in_flight;
    bool abandoned;             /* the scheduler refused it for good */
};

/* Opens path for reading (the file exists: proc created it). A file that
 * cannot be opened is simply not shipped (fd -1). */
void logship_file_init(struct logship_file *f, const char *path);
/* Closes the fd. The file must not be in flight. */
void logship_file_release(struct logship_file *f);
/* Current size of the file (0 when it is not open); progress.c measures
 * output with it. */
uint64_t logship_file_size(const struct logship_file *f);
/* True once everything written so far has been acknowledged (or the file
 * was abandoned or never opened), and nothing is in flight. */
bool logship_file_flushed(const struct logship_file *f);

/* Ship what is new at once instead of at the next tick (a rank just
 * ended: report.c wants its output at the scheduler before its exit).
 * Accepts NULL. */
void logship_kick(struct logship *ls);

/* Starts the shipping timer (reads ad->procs on every tick). */
struct logship *logship_create(struct agentd *ad, struct err *err);
/* Stops the timer and frees once it is closed. Requests in flight must
 * be dropped with curlx_destroy in the same loop turn (their callbacks use
 * the logship). Accepts NULL. */
void logship_destroy(struct logship *ls);

#endif
