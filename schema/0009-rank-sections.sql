-- 0009-rank-sections.sql - per-rank timed-section figures, one row per rank
-- per section per window (docs/cadence.md "Sections"); the straggler rule
-- reads them
--
-- Forward-only: 0001 to 0008 are released and never edited.
--
-- Written with the rank_stats rows of the same window (same window_ms)
-- and pruned with them to the newest RANKWIN_KEEP windows of a job. Each
-- rank reports at most 16 sections (the SDKs' limit), so a job holds at
-- most 16 rows per rank per window.
--
-- p50_us / p99_us / n: the rank's time inside the section per step over
-- its SDK's window (median, p99, steps measured); median_us: the median of
-- every reporting rank's p50_us for that section in the window (0: fewer
-- than two ranks reported it; the window judges no one); slow: p50_us >
-- straggler_ratio x median_us, with the ratio configured at the time.
CREATE TABLE rank_sections (
    job_id INTEGER NOT NULL REFERENCES jobs(id),
    attempt INTEGER NOT NULL,
    rank INTEGER NOT NULL,
    window_ms INTEGER NOT NULL,
    node TEXT NOT NULL,
    section TEXT NOT NULL,
    p50_us INTEGER NOT NULL,
    p99_us INTEGER NOT NULL,
    n INTEGER NOT NULL,
    median_us INTEGER NOT NULL,
    slow INTEGER NOT NULL,
    PRIMARY KEY (job_id, window_ms, attempt, rank, section)
);
