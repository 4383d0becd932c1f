-- 0002-fault-tolerance.sql - failure evidence, restart budgets, checkpoints,
-- blame (docs/fault-tolerance.md)
--
-- Forward-only: 0001 is released and never edited. Every new column has a
-- default, so rows written by a schema-1 scheduler stay valid; the UPDATEs
-- below give those old rows the meaning they had when they were written.

-- Nodes: exclusion is a fact of its own (like `cordoned`), so a node that
-- is both cordoned and excluded, or excluded and then lost, stays excluded
-- across a restart. health_reason says why (the failures blamed on it).
ALTER TABLE nodes ADD COLUMN unhealthy INTEGER NOT NULL DEFAULT 0;
ALTER TABLE nodes ADD COLUMN health_reason TEXT NOT NULL DEFAULT '';
UPDATE nodes SET unhealthy = 1 WHERE state = 'UNHEALTHY';

-- Jobs: the new spec fields, the restarts spent from each budget, and what
-- a RESTARTING job waits for (everything needed to continue after a
-- kill -9 of the scheduler).
ALTER TABLE jobs ADD COLUMN max_infra_restarts INTEGER NOT NULL DEFAULT 20;
ALTER TABLE jobs ADD COLUMN hang_timeout_s INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN keep_checkpoints INTEGER NOT NULL DEFAULT 0;
-- restarts spent from max_restarts (the job's own failures) and from
-- max_infra_restarts (node loss, hangs, exclusions, lost ranks)
ALTER TABLE jobs ADD COLUMN restarts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN infra_restarts INTEGER NOT NULL DEFAULT 0;
-- consecutive failures without progress in between (the backoff exponent)
ALTER TABLE jobs ADD COLUMN fail_streak INTEGER NOT NULL DEFAULT 0;
-- RESTARTING: the next attempt may not start before this (wall clock, ms)
ALTER TABLE jobs ADD COLUMN not_before_ms INTEGER NOT NULL DEFAULT 0;
-- RESTARTING: the healthy nodes of the failed attempt, kept for the next
-- one (JSON array of names, in node-rank order)
ALTER TABLE jobs ADD COLUMN reserved TEXT NOT NULL DEFAULT '[]';
-- A schema-1 job asked for no watchdog and had one budget for every kind
-- of failure: keep both as they were when it was submitted. Its restarts
-- so far were spent from that one budget; an unfinished job counts them
-- against both, so it never gets more restarts in total than it had.
UPDATE jobs SET max_infra_restarts = max_restarts,
    restarts = MAX(attempt - 1, 0);
UPDATE jobs SET infra_restarts = restarts
    WHERE state IN ('PENDING', 'PLACED', 'RUNNING', 'RESTARTING');

-- Attempts: where it resumed from, when it was running, when it failed
-- (by the evidence) and when that was detected, when every node released
-- it, and the failure with its evidence (JSON; NULL when it did not fail).
ALTER TABLE attempts ADD COLUMN resume_step INTEGER NOT NULL DEFAULT -1;
ALTER TABLE attempts ADD COLUMN resume_from TEXT NOT NULL DEFAULT '';
ALTER TABLE attempts ADD COLUMN running_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN failed_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN detected_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN released_ms INTEGER NOT NULL DEFAULT 0;
-- rank_exit node_lost hang node_excluded lost_ranks, or '' (no failure)
ALTER TABLE attempts ADD COLUMN failure_kind TEXT NOT NULL DEFAULT '';
ALTER TABLE attempts ADD COLUMN failure TEXT;
-- the last stack-dump request sent with its launch
ALTER TABLE attempts ADD COLUMN dump_seq INTEGER NOT NULL DEFAULT 0;
-- a hang waiting for its stack dumps: the deadline (wall clock, ms) while
-- the attempt is still active; `failure` then holds the hang's evidence
ALTER TABLE attempts ADD COLUMN dump_deadline_ms INTEGER NOT NULL DEFAULT 0;
UPDATE attempts SET failure_kind = 'rank_exit'
    WHERE state = 'FAILED' AND reason LIKE 'rank % exited with code %';
UPDATE attempts SET failure_kind = 'rank_exit'
    WHERE state = 'FAILED' AND reason LIKE 'rank % killed by signal %';
UPDATE attempts SET failure_kind = 'lost_ranks'
    WHERE state = 'FAILED' AND failure_kind = '' AND reason LIKE 'rank % lost%';
CREATE INDEX attempts_failed ON attempts (failure_kind)
    WHERE failure_kind != '';

-- Ranks: the last step the SDK reported (-1 none), whether its supervisor
-- killed it because its lease ran out, and its stack dump (hang evidence).
ALTER TABLE ranks ADD COLUMN step INTEGER NOT NULL DEFAULT -1;
ALTER TABLE ranks ADD COLUMN fenced INTEGER NOT NULL DEFAULT 0;
ALTER TABLE ranks ADD COLUMN dump TEXT NOT NULL DEFAULT '';

-- The checkpoint registry: one row per complete checkpoint of a job (every
-- rank committed that step in the same attempt, or its directory has the
-- COMPLETE marker). The next attempt resumes from the highest step.
CREATE TABLE checkpoints (
    job_id      INTEGER NOT NULL REFERENCES jobs (id),
    step        INTEGER NOT NULL,
    attempt     INTEGER NOT NULL,    -- the attempt it was completed in
    path        TEXT NOT NULL,       -- <checkpoint_dir>/step-<N>, or ''
    committed   INTEGER NOT NULL,    -- ranks that committed it
    complete_ms INTEGER NOT NULL,
    source      TEXT NOT NULL,       -- convention sdk api
    PRIMARY KEY (job_id, step)
) WITHOUT ROWID;

-- Per-rank checkpoint commits (SDK or POST /v1/jobs/ID/checkpoints) of a
-- step that is not complete yet; a step is complete when world_size
-- distinct ranks of one attempt committed it.
CREATE TABLE checkpoint_commits (
    job_id  INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    step    INTEGER NOT NULL,
    rank    INTEGER NOT NULL,
    time_ms INTEGER NOT NULL,
    PRIMARY KEY (job_id, attempt, step, rank),
    FOREIGN KEY (job_id, attempt) REFERENCES attempts (job_id, attempt)
) WITHOUT ROWID;

-- Blame: a failure attributed to a node. A node blamed for failures of
-- blame_threshold different jobs within blame_window_ms is excluded.
-- Withdrawn blame (the failure turned out to be the job's own
-- deterministic bug) no longer counts.
CREATE TABLE blame (
    id        INTEGER PRIMARY KEY,
    node      TEXT NOT NULL,
    job_id    INTEGER NOT NULL,
    attempt   INTEGER NOT NULL,
    time_ms   INTEGER NOT NULL,
    kind      TEXT NOT NULL,         -- the failure kind
    evidence  TEXT NOT NULL DEFAULT '{}',
    withdrawn INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX blame_node ON blame (node, time_ms) WHERE withdrawn = 0;
CREATE INDEX blame_job ON blame (job_id, attempt);
