/*
 * goodput.h - productive, lost and recovery time of a job (pure)
 *
 * docs/fault-tolerance.md §Goodput. From the times recorded on each
 * attempt and the checkpoint each next attempt resumed from:
 *
 *  - productive: running time whose work survived: all of the last
 *    attempt's (unless the job ended FAILED), and of a failed attempt the
 *    part up to the completion of the checkpoint the next attempt resumed
 *    from, when that checkpoint was completed in that attempt;
 *  - lost: the rest of a failed attempt's running time;
 *  - recovery: from a failure (failed_ms) to the next time every rank of
 *    an attempt runs (detection, teardown, backoff, placement, start);
 *  - wall: from the first attempt's start to the job's end (or now).
 *
 * The first attempt's start-up (placed → running) is in wall only. The
 * three parts never overlap, so productive + lost + recovery <= wall.
 *
 * Pure: no I/O, no clock; `now` is an argument.
 */
#ifndef SCHEDULER_GOODPUT_H
#define SCHEDULER_GOODPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct goodput_attempt {
    int num;
    int64_t start_ms;   /* placed */
    int64_t running_ms; /* every rank running; 0 never */
    int64_t end_ms;     /* ended; 0 while active */
    int64_t failed_ms;  /* failed by the evidence; 0 not failed */
    bool failed;
    /* The checkpoint the next attempt resumed from (or will resume from,
     * when this is the last attempt and the job is restarting): the
     * attempt that completed it and when. 0 when none. */
    int ckpt_attempt;
    int64_t ckpt_complete_ms;
};

struct goodput {
    int64_t wall_ms;
    int64_t productive_ms;
    int64_t lost_ms;
    int64_t recovery_ms;
    double ettr; /* productive / wall; 0 when wall is 0 */
};

/*
 * v[0..n): the job's attempts in order. job_failed: the job ended FAILED
 * (its last failure has no recovery and its last attempt's work is lost).
 * end_ms: the job's end time, or now while it is unfinished.
 */
void goodput_compute(const struct goodput_attempt *v, size_t n, bool job_failed,
    int64_t end_ms, struct goodput *out);

/* Add b into a (cluster totals); ettr is recomputed from the sums. */
void goodput_add(struct goodput *a, const struct goodput *b);

#endif
