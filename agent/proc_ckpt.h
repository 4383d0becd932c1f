/*
 * proc_ckpt.h - checkpoints by directory convention: scan and prune
 *
 * See proc_ckpt.c. Called by the table (proc.c) at every status report and
 * at shutdown; the work runs on libuv's thread pool, the results land on
 * the loop thread.
 */
#ifndef AGENT_PROC_CKPT_H
#define AGENT_PROC_CKPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct proc_job;

/* A complete step of an attempt's baseline and its COMPLETE marker's
 * identity (proc_ckpt.c). */
struct proc_ckpt_mark {
    int64_t step;
    uint64_t dev, ino;
    int64_t mtime_s, mtime_ns, ctime_s, ctime_ns;
};

/* Whether a directory entry's name is a checkpoint's, "step-<N>" with N
 * decimal without leading zeros, and its step N. The scheduler builds
 * LOCKSTEP_RESUME_FROM as <checkpoint_dir>/step-<N> and reads N back
 * with proto_ckpt_path_step, so both must agree on every name. */
bool proc_ckpt_name_parse(const char *name, int64_t *step);

/*
 * Start a scan of job->checkpoint_dir for complete checkpoints
 * (directories step-<N> holding a regular file COMPLETE; nothing else
 * counts, nor any of the attempt's baseline: the first scan takes that,
 * see proc_ckpt.c) on the thread pool, unless a scan or deletion is in flight.
 * When it ends, job->ckpt_complete is updated and, with keep_checkpoints K > 0,
 * the deletion of the complete ones older than the K newest starts (never
 * the one resumed from, never an incomplete one). So a report carries the
 * result of the scan the previous report started.
 */
void proc_ckpt_scan(struct proc_job *job);
/* Whether a report of job (every rank ended) may be its final one as far
 * as checkpoints go: the job scans none, or a scan started after the
 * last rank ended has completed (so a checkpoint finished just before a
 * crash is reported before the attempt is released), or that scan has
 * taken 10 s (a hung file system). */
bool proc_ckpt_settled(const struct proc_job *job, int64_t now_mono);
/* A re-adopted attempt: read the baseline its first agent kept in the
 * attempt directory (none there: the next scan takes a new one). */
void proc_ckpt_base_load(struct proc_job *job);
/* The steps to report: the complete ones not being deleted, ascending,
 * the newest PROTO_STEPS_MAX at most (allocated; caller frees). */
int64_t *proc_ckpt_report(const struct proc_job *job, size_t *n);
/* Ask a deletion in flight to stop early (agent shutdown). */
void proc_ckpt_cancel(struct proc_job *job);

#endif
