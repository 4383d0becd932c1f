/*
 * proto_logs.h - the many-ranks read of a job's output (docs/api.md,
 * GET /v1/jobs/ID/logs without rank=)
 *
 * The reply body is a run of frames, one per rank that has output past
 * the offset asked for it, in rank order:
 *
 *   rank=R start=S size=Z len=N\n
 *   N bytes of output
 *   \n
 *
 * S is the offset of the first byte (the one asked for, or more when the
 * output there was dropped: log_max_bytes_per_job), Z what the scheduler
 * holds for the rank, N the bytes that follow (raw output: any byte,
 * newlines and NULs included). The query names the ranks (ranks=A-B) and
 * each one's offset (offsets=o,o,...: one per rank from A, the missing
 * ones 0). Both sides use these functions; they touch no global state.
 */
#ifndef COMMON_PROTO_LOGS_H
#define COMMON_PROTO_LOGS_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/sbuf.h"

/* The most ranks one request names (the query's offsets stay well under
 * the scheduler's 16 KiB header limit: 20 characters each at most). */
#define PROTO_LOG_RANKS_MAX 512

struct proto_log_frame {
    int64_t rank;
    int64_t start;
    int64_t size;
    const char *data; /* borrowed from the body */
    size_t len;
};

/* Append one frame to out. */
void proto_log_frame_add(struct sbuf *out, int64_t rank, int64_t start,
    int64_t size, const void *data, size_t len);

/* Read the frame at *p (left bytes remain) into f and move past it.
 * 1 with f set, 0 at the end of the body, -EPROTO with err saying what
 * is wrong (a frame cut short, a field missing or out of range). */
int proto_log_frame_next(const char **p, size_t *left,
    struct proto_log_frame *f, struct err *err);

/* "A-B" or "A" into [*first, *last], each in [0, max]; -EINVAL with err
 * naming the parameter. */
int proto_log_ranks_parse(const char *s, int64_t max, int64_t *first,
    int64_t *last, struct err *err);

/* "o,o,..." (decimal, >= 0) into v[0..*n); at most nmax values; an empty
 * string is none. -EINVAL with err. */
int proto_log_offsets_parse(const char *s, int64_t *v, size_t nmax, size_t *n,
    struct err *err);

#endif
