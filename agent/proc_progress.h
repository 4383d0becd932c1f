/*
 * proc_progress.h - how far each rank got: steps, output, committed steps
 *
 * Sampled for every status report (proc.c) and before a stack dump
 * (proc_dump.c); see proc_progress.c for the measures. Loop thread.
 */
#ifndef AGENT_PROC_PROGRESS_H
#define AGENT_PROC_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

#include "common/proto.h"

struct proc_rank;

/*
 * Sample a rank's progress file, output sizes and commit file (each only
 * when it changed) at now_mono (monotonic ms) / now_ms (wall clock).
 * A progress record of another attempt is ignored.
 */
void proc_progress_sample(struct proc_rank *r, int64_t now_mono,
    int64_t now_ms);
/* Fill rs->step, progress, idle_ms, step_p50_us, step_p99_us, sections
 * and ckpt_steps (copied) from r. */
void proc_progress_fill(const struct proc_rank *r, int64_t now_mono,
    struct proto_rank_status *rs);

/* The monotonic time of ms, a wall-clock instant in the past (clamped to
 * now_mono; 0 or a future ms count as now), given the two clocks now. An
 * instant a rank recorded keeps its age across an agent restart. */
int64_t proc_progress_mono_of(int64_t ms, int64_t now_mono, int64_t now_ms);

/*
 * The acks of a progress record: acks is its "acks" member, a list of
 * [seq, step, duration_ms] (written by the rank: never trusted). Entries
 * that are not three integers with seq >= 1, step >= -1 and duration_ms
 * >= 0 (each at most 2^53) are skipped; of the rest, the newest `max`
 * (the last in the list) go to out, in order. Returns how many; 0 when
 * acks is NULL or not a list.
 */
size_t proc_acks_parse(const cJSON *acks, struct proto_ack *out, size_t max);

/*
 * The timed sections of a progress record: sections is its "sections"
 * member, an object {"<name>": {"p50_us": N, "p99_us": N, "n": N}, ...}
 * (written by the rank: never trusted). Entries with an invalid name
 * (proto_section_name_valid), a p50_us that is not an integer >= 0, or a
 * p99_us / n that is present and not an integer >= 0 are skipped; at most
 * `max` go to out, in the record's order. Returns how many; 0 when
 * sections is NULL or not an object.
 */
size_t proc_sections_parse(const cJSON *sections, struct proto_section *out,
    size_t max);

/*
 * Parse a commit file's text: lines "<step> <attempt>"; lines of another
 * attempt, malformed lines and steps past 2^53 (more than a JSON number
 * holds exactly: the scheduler refuses them) are ignored. Returns the
 * distinct steps, ascending, at most the newest `max` (caller frees; NULL
 * when none).
 */
int64_t *proc_commit_parse(const char *text, int attempt, size_t max,
    size_t *n);

#endif
