/*
 * rankwin.h - per-rank step times, GC and checkpoint durations over a
 * window, and which ranks are persistently slow (docs/cadence.md "Step
 * statistics")
 *
 * A running attempt keeps one window in memory: for each rank, the step
 * time its SDK last reported (median and p99 over the SDK's last 200
 * steps), and the durations of the gc and checkpoint directives it
 * acknowledged in the window. When the window closes the service
 * (rankstats.h) writes one summary row per rank that reported and starts
 * the next window.
 *
 * The rule for "persistently slow": in a window, a rank is slow when its
 * median step time is more than RANKWIN_SLOW_RATIO times the median over
 * every rank that reported one (a window where fewer than two ranks
 * reported judges no one). A rank is persistently slow when it was slow
 * in at least RANKWIN_SLOW_K of its last RANKWIN_SLOW_M judged windows.
 *
 * Stragglers (docs/cadence.md "Sections"): in synchronous training every
 * rank's step takes as long as the slowest one's, so the step times above
 * cannot name a straggler; the time each rank spends inside its timed
 * sections can. In a window, a rank is slow in a section when its median
 * time in it per step is above `ratio` times the median of that section
 * over every rank that reported it (fewer than two: no one judged). A rank
 * straggles in a section when it was slow in at least K of its last
 * RANKWIN_SLOW_M judged windows of that section; its node is then a
 * straggler. ratio and K are the configuration's (straggler_ratio,
 * straggler_windows).
 *
 * Pure: nothing here does I/O.
 */
#ifndef SCHEDULER_RANKWIN_H
#define SCHEDULER_RANKWIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/proto.h"

/* Slow in a window: median step time above this times the job's. */
#define RANKWIN_SLOW_RATIO 1.25
/* Persistently slow: slow in K of the last M judged windows. */
#define RANKWIN_SLOW_K 3
#define RANKWIN_SLOW_M 5
/* Windows of a job kept in the store (the newest). */
#define RANKWIN_KEEP 10
/* GC durations kept per rank and window for the median (the count and
 * the maximum take every one). */
#define RANKWIN_SAMPLES 32
/* Ack sequence numbers remembered per rank, so an ack an agent repeats is
 * counted once (the SDK lists its newest 32). */
#define RANKWIN_SEQS 64
/* Timed sections kept per rank and window (the SDKs' limit). */
#define RANKWIN_SECTIONS PROTO_SECTIONS_MAX
/* The straggler rule's defaults: slow in a section above this times the
 * job's median for it; a straggler when slow in K of the last
 * RANKWIN_SLOW_M judged windows. */
#define RANKWIN_STRAGGLER_RATIO 1.15
#define RANKWIN_STRAGGLER_K 3

struct rankwin_rank {
    /* This window. */
    bool reported;       /* a step time arrived in it */
    int64_t step;        /* last step reported; -1 none */
    int64_t step_p50_us; /* last reported; 0 unknown */
    int64_t step_p99_us;
    int64_t gc_ms[RANKWIN_SAMPLES];
    size_t ngc_kept;
    int64_t gc_count, gc_max_ms;
    int64_t ckpt_count, ckpt_max_ms;
    struct proto_section sec[RANKWIN_SECTIONS]; /* last reported */
    size_t nsec;
    /* The attempt so far. */
    int64_t gc_step;             /* last gc acknowledged at; -1 none */
    int64_t ckpt_step;           /* last checkpoint acknowledged at; -1 none */
    uint64_t seqs[RANKWIN_SEQS]; /* acks counted (a ring) */
    size_t nseqs;
};

struct rankwin {
    int64_t start_ms; /* when this window began (the caller's clock) */
    size_t nranks;
    struct rankwin_rank *ranks;
    /* Per node rank (index < nranks): a straggler was raised for it in
     * this attempt (the caller's record, kept with the window). */
    bool *straggler_raised;
};

/* What a rank's row says about a closed window. */
struct rankwin_summary {
    int64_t step, step_p50_us, step_p99_us;
    int64_t median_us; /* the job's; 0 when the window judges no one */
    bool slow;
    int64_t gc_count, gc_p50_ms, gc_max_ms, gc_step;
    int64_t ckpt_count, ckpt_max_ms, ckpt_step;
};

/* A window for nranks ranks starting at now. Caller frees with
 * rankwin_destroy. */
struct rankwin *rankwin_create(size_t nranks, int64_t now);
/* Accepts NULL. */
void rankwin_destroy(struct rankwin *w);

/* rank reported step (-1: none) and its SDK's step time (0: unknown). */
void rankwin_step(struct rankwin *w, int rank, int64_t step, int64_t p50_us,
    int64_t p99_us);
/* rank acknowledged directive seq (a gc when gc, else a checkpoint) at
 * step, taking duration_ms. Returns false (and counts nothing) when this
 * seq was counted for this rank already. */
bool rankwin_ack(struct rankwin *w, int rank, uint64_t seq, bool gc,
    int64_t step, int64_t duration_ms);

/* rank's timed sections as its SDK last reported them (replacing the
 * window's; at most RANKWIN_SECTIONS, invalid names skipped). */
void rankwin_sections(struct rankwin *w, int rank,
    const struct proto_section *sec, size_t n);
/* The median over the ranks that reported section name in the window of
 * their p50_us; 0 when fewer than two did. */
int64_t rankwin_section_median(const struct rankwin *w, const char *name);

/* Whether any rank reported a step time or an ack in the window. */
bool rankwin_any(const struct rankwin *w);
/* The median over the ranks that reported a step time in the window of
 * their step_p50_us; 0 when fewer than two did. */
int64_t rankwin_median(const struct rankwin *w);
/* The summary of rank for the window whose job median is median (from
 * rankwin_median). */
void rankwin_summarize(const struct rankwin *w, int rank, int64_t median,
    struct rankwin_summary *out);
/* Start the next window at now: the per-window figures are cleared, the
 * attempt's (last gc and checkpoint step, the acks counted) kept. */
void rankwin_next(struct rankwin *w, int64_t now);

/* Slow in one window: p50 > RANKWIN_SLOW_RATIO x median (median > 0). */
bool rankwin_is_slow(int64_t p50_us, int64_t median_us);
/* The rule above over one rank's windows, newest first: judged[i] says
 * whether window i judged anyone, slow[i] whether it found this rank slow.
 * The count of slow windows among the newest RANKWIN_SLOW_M judged ones
 * into *nslow and of those judged windows into *njudged; true when
 * *nslow >= RANKWIN_SLOW_K. */
bool rankwin_persistent(const bool *judged, const bool *slow, size_t n,
    int *nslow, int *njudged);

/* Slow in a section in one window: p50 > ratio x median (median > 0). */
bool rankwin_is_straggler(int64_t p50_us, int64_t median_us, double ratio);
/* The straggler rule over one rank's windows of one section, newest
 * first (as rankwin_persistent): true when at least k of the newest
 * RANKWIN_SLOW_M judged windows were slow. */
bool rankwin_straggling(const bool *judged, const bool *slow, size_t n, int k,
    int *nslow, int *njudged);

#endif
