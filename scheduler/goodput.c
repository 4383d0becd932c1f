/*
 * goodput.c - effective training time ratio arithmetic (pure)
 *
 * One walk over the attempts in order. Each attempt that reached RUNNING
 * contributes its running interval, split into productive and lost time at
 * the checkpoint its successor resumed from; the gaps between a failure
 * and the next RUNNING attempt are recovery. An attempt that failed
 * before all its ranks ran adds nothing of its own: its time lies inside
 * the recovery that started with the failure before it (or, for the first
 * attempt, inside start-up).
 */
#include "scheduler/goodput.h"

#include <string.h>

static int64_t
clamp(int64_t v, int64_t lo, int64_t hi)
{
    if (v < lo)
        return lo;
    return v > hi ? hi : v;
}

void
goodput_compute(const struct goodput_attempt *v, size_t n, bool job_failed,
    int64_t end_ms, struct goodput *out)
{
    int64_t rec_start = 0; /* an open recovery interval, 0: none */

    memset(out, 0, sizeof(*out));
    if (n == 0 || v[0].start_ms <= 0)
        return;
    out->wall_ms = end_ms > v[0].start_ms ? end_ms - v[0].start_ms : 0;
    for (size_t i = 0; i < n; i++) {
        const struct goodput_attempt *a = &v[i];
        bool last = i + 1 == n;
        int64_t stop, run;

        if (a->running_ms > 0 && rec_start > 0) {
            out->recovery_ms += clamp(a->running_ms - rec_start, 0,
                out->wall_ms);
            rec_start = 0;
        }
        if (a->running_ms > 0) {
            if (a->failed)
                stop = a->failed_ms > 0 ? a->failed_ms : a->end_ms;
            else
                stop = a->end_ms > 0 ? a->end_ms : end_ms;
            run = stop > a->running_ms ? stop - a->running_ms : 0;
            if (!a->failed) {
                out->productive_ms += run;
            } else if (last && job_failed) {
                out->lost_ms += run;
            } else if (a->ckpt_attempt == a->num &&
                       a->ckpt_complete_ms > a->running_ms) {
                int64_t kept = clamp(a->ckpt_complete_ms - a->running_ms, 0,
                    run);

                out->productive_ms += kept;
                out->lost_ms += run - kept;
            } else {
                out->lost_ms += run;
            }
        }
        if (a->failed && rec_start == 0 && !(last && job_failed)) {
            int64_t f = a->failed_ms > 0 ? a->failed_ms : a->end_ms;

            /* A failure before its ranks ran, inside an open recovery,
             * only extends that recovery. */
            rec_start = f > 0 ? f : a->start_ms;
        }
    }
    if (rec_start > 0 && end_ms > rec_start)
        out->recovery_ms += end_ms - rec_start;
    if (out->wall_ms > 0)
        out->ettr = (double)out->productive_ms / (double)out->wall_ms;
}

void
goodput_add(struct goodput *a, const struct goodput *b)
{
    a->wall_ms += b->wall_ms;
    a->productive_ms += b->productive_ms;
    a->lost_ms += b->lost_ms;
    a->recovery_ms += b->recovery_ms;
    a->ettr = a->wall_ms > 0 ? (double)a->productive_ms / (double)a->wall_ms
                             : 0.0;
}
