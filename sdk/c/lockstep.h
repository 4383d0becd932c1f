/*
 * lockstep.h - liblockstep, the C rank SDK: progress, checkpoints, cadence
 *
 * The C counterpart of the Python module (sdk/python): the same files in
 * the same formats, so the agent cannot tell the two apart.
 *
 *     lockstep_init();
 *     for (uint64_t n = start; n < total; n++) {
 *         train_one_step();
 *         unsigned act = lockstep_step(n);
 *         if (act & LOCKSTEP_ACT_GC)
 *             lockstep_gc_done(n, my_collect());    // optional report
 *         if (act & LOCKSTEP_ACT_CHECKPOINT) {
 *             save(n);
 *             lockstep_checkpoint_committed(n);
 *         }
 *     }
 *     lockstep_finalize();
 *
 * Under lockstep (the agent sets LOCKSTEP_PROGRESS_FILE and
 * LOCKSTEP_ATTEMPT in every rank's environment) the library writes the
 * rank's progress file, appends commits to its commit file, and carries
 * out the job's synchronized cadence (docs/cadence.md) from the control
 * file (LOCKSTEP_CONTROL_FILE), which it maps read-only. Outside lockstep
 * every call is a no-op that returns 0, so a program runs anywhere
 * unchanged. The library never fails a training program because a file
 * cannot be written: it warns once on stderr (and
 * lockstep_checkpoint_committed returns the error). It installs no signal
 * handler: the agent asks only ranks that catch SIGUSR1 for a stack dump.
 *
 * Thread safety: every call takes one internal lock, so a checkpoint
 * thread may call lockstep_checkpoint_committed while the training thread
 * calls lockstep_step. lockstep_init and lockstep_finalize are not to race
 * with any other call.
 *
 * Other variables the agent sets, for the program to read itself:
 * LOCKSTEP_RESUME_STEP and LOCKSTEP_RESUME_FROM (the checkpoint to resume
 * from, empty on a fresh start), LOCKSTEP_CHECKPOINT_DIR.
 */
#ifndef SDK_C_LOCKSTEP_H
#define SDK_C_LOCKSTEP_H

#include <stdint.h>

#if defined(__GNUC__)
#define LOCKSTEP_API __attribute__((visibility("default")))
#else
#define LOCKSTEP_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* What lockstep_step asks of the caller (bits of its result). */
enum lockstep_step_flags {
    /* Collect garbage now (C has none of its own; a language runtime
     * embedding the library runs its collector). Acknowledged at once
     * with a duration of 0; lockstep_gc_done reports the real one. */
    LOCKSTEP_ACT_GC = 1 << 0,
    /* Save a checkpoint of this step, then call
     * lockstep_checkpoint_committed with the same step. */
    LOCKSTEP_ACT_CHECKPOINT = 1 << 1,
};

/*
 * The cadence as a PMIx event (docs/cadence.md). Besides the control
 * file, the agent (when it is the rank's PMIx server) notifies every rank
 * of the attempt of each gc and checkpoint directive once, with one of
 * these codes (custom codes, below PMIX_EXTERNAL_ERR_BASE), source
 * {PMIX_NAMESPACE, PMIX_RANK_UNDEF}, PMIX_RANGE_CUSTOM (the attempt's
 * namespace) and PMIX_EVENT_NON_DEFAULT (Open MPI's default handler, which
 * aborts the rank, never sees it). A rank that registers a handler for a
 * code with PMIx_Register_event_handler gets the event even if it
 * registers later (libpmix caches it, 120 s by default). The handler must
 * be idempotent (it may see a directive again) and should complete with
 * PMIX_EVENT_ACTION_COMPLETE. For programs that do not use this library's
 * lockstep_step (which reads the control file); this header does not
 * include pmix.h.
 */
#define LOCKSTEP_PMIX_EVENT_CHECKPOINT (-3101)
#define LOCKSTEP_PMIX_EVENT_GC (-3102)
/* The event's payload keys: "gc" or "checkpoint" (PMIX_STRING) */
#define LOCKSTEP_PMIX_KEY_KIND "lockstep.kind"
/* the step to act at (PMIX_INT64; -1: at the next step) */
#define LOCKSTEP_PMIX_KEY_STEP "lockstep.step"
/* the directive's sequence number in the attempt, from 1 (PMIX_UINT64):
 * a rank acts once per seq */
#define LOCKSTEP_PMIX_KEY_SEQ "lockstep.seq"
/* the attempt (PMIX_UINT32), as LOCKSTEP_ATTEMPT */
#define LOCKSTEP_PMIX_KEY_ATTEMPT "lockstep.attempt"

/* Read the environment, map the control file and announce the rank (the
 * progress file with step -1, unless another process of the rank already
 * wrote it). Returns 1 under lockstep, 0 outside it (every other call is
 * then a no-op). Calling it again without lockstep_finalize changes
 * nothing. */
LOCKSTEP_API int lockstep_init(void);

/* Report that the rank reached step n, and return the
 * enum lockstep_step_flags due at this step (0: nothing). The progress
 * file is written at most every 100 ms, and at once when an
 * acknowledgement was added. Per call, beyond a clock read, it loads the
 * control file's generation from memory; no system call unless a file is
 * written. A directive whose step is <= n is returned once; a rank
 * already past it acts, and acknowledges, at the step it is at. */
LOCKSTEP_API unsigned lockstep_step(uint64_t n);

/* Report that the collection lockstep_step(n) asked for took seconds:
 * the acknowledgements of step n get that duration and the progress file
 * is written at once. Not calling it leaves a duration of 0. The
 * acknowledgement itself was written when lockstep_step returned the bit,
 * so the scheduler usually has it (with 0) already and marks the
 * directive done; the duration then stays in this rank's progress file
 * only (the Python SDK, which collects itself, reports the real one). */
LOCKSTEP_API void lockstep_gc_done(uint64_t n, double seconds);

/* Record that this rank's part of checkpoint step n is durable: append
 * "<n> <attempt>" to the commit file (LOCKSTEP_COMMIT_FILE) and fsync it,
 * acknowledge a checkpoint directive that lockstep_step(n) returned (with
 * the time since), and write the progress file at once. 0, or a negative
 * errno when the commit file could not be written (warned once). */
LOCKSTEP_API int lockstep_checkpoint_committed(uint64_t n);

/*
 * Timed sections (docs/cadence.md "Sections"): the time this rank spends
 * between lockstep_timed_begin(name) and lockstep_timed_end(name) is added
 * to the section's total of the current step; lockstep_step closes the
 * step (a section open at that moment counts up to it, the rest to the
 * next step). The progress file carries each section's per-step median,
 * p99 and count over the last 200 steps, from which the scheduler finds
 * stragglers:
 *
 *     lockstep_timed_begin("compute");
 *     forward_backward();
 *     lockstep_timed_end("compute");
 *     allreduce();                     // waiting for others: not counted
 *     lockstep_step(n);
 *
 * name: 1 to 32 letters, digits, '_', '.', ':' or '-'. Sections of
 * different names may nest or overlap; the same name nested counts its
 * outermost begin and end. At most 16 sections per rank: a begin of a
 * 17th name times nothing, warns once and returns -ENOSPC. Returns 0;
 * -EINVAL for an invalid name, or an end without its begin. Outside
 * lockstep both return 0 and time nothing. Cheap: a lookup among the
 * names and one clock read (vDSO; no system call).
 */
LOCKSTEP_API int lockstep_timed_begin(const char *name);
LOCKSTEP_API int lockstep_timed_end(const char *name);

/* Write the last step if the rate limit held it back, unmap the control
 * file and forget everything (lockstep_init may follow). Call it before
 * exit: the library registers no atexit handler. */
LOCKSTEP_API void lockstep_finalize(void);

#ifdef __cplusplus
}
#endif

#endif
