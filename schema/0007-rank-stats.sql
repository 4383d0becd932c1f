-- 0007-rank-stats.sql - per-rank step, GC and checkpoint figures, one row
-- per rank per window (docs/cadence.md "Step statistics")
--
-- Forward-only: 0001 to 0006 are released and never edited.
--
-- The scheduler keeps each running attempt's current window in memory and
-- writes one row per rank that reported in it when the window closes
-- (rank_stats_window_ms, at least 1 s: the rate bound), or when the
-- attempt ends. Only the newest RANKWIN_KEEP windows of a job are kept
-- (scheduler/rankwin.h), so a job holds at most that many rows per rank.
--
-- median_us: the median of every reporting rank's step_p50_us in that
-- window (0: fewer than two ranks reported; the window judges no one);
-- slow: step_p50_us > 1.25 x median_us. gc_step / checkpoint_step: the
-- last step the rank acknowledged a gc / checkpoint at in the attempt so
-- far (-1 none); durations are the SDK's acks, in ms.
CREATE TABLE rank_stats (
    job_id INTEGER NOT NULL REFERENCES jobs(id),
    attempt INTEGER NOT NULL,
    rank INTEGER NOT NULL,
    window_ms INTEGER NOT NULL,
    node TEXT NOT NULL,
    step INTEGER NOT NULL,
    step_p50_us INTEGER NOT NULL,
    step_p99_us INTEGER NOT NULL,
    median_us INTEGER NOT NULL,
    slow INTEGER NOT NULL,
    gc_count INTEGER NOT NULL,
    gc_p50_ms INTEGER NOT NULL,
    gc_max_ms INTEGER NOT NULL,
    gc_step INTEGER NOT NULL,
    checkpoint_count INTEGER NOT NULL,
    checkpoint_max_ms INTEGER NOT NULL,
    checkpoint_step INTEGER NOT NULL,
    PRIMARY KEY (job_id, window_ms, attempt, rank)
);
