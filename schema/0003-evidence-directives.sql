-- 0003-evidence-directives.sql - failure evidence in columns; directives
--
-- Forward-only: 0001 and 0002 are released and never edited.
--
-- 1. An attempt's failure evidence was one JSON text; the crash-loop check
--    parsed it back, and a missing exit code became 0 on the way. Each
--    field now has a column of its own, NULL where it does not apply (a
--    lost or hung rank has no exit code). The old text is converted, then
--    dropped; the stack dumps it copied stay in each rank's `dump`.
ALTER TABLE attempts ADD COLUMN failure_node TEXT;
ALTER TABLE attempts ADD COLUMN failure_rank INTEGER;
ALTER TABLE attempts ADD COLUMN failure_exit_code INTEGER;
ALTER TABLE attempts ADD COLUMN failure_signal INTEGER;
ALTER TABLE attempts ADD COLUMN failure_fenced INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN failure_last_step INTEGER;
ALTER TABLE attempts ADD COLUMN failure_heartbeat_ms INTEGER NOT NULL
    DEFAULT 0;
ALTER TABLE attempts ADD COLUMN failure_idle_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN failure_source TEXT;
ALTER TABLE attempts ADD COLUMN failure_actor TEXT;
ALTER TABLE attempts ADD COLUMN failure_stderr TEXT;
-- when the evidence says it failed (a hang waiting for its dumps keeps it
-- here until the attempt's failed_ms is set)
ALTER TABLE attempts ADD COLUMN failure_evidence_ms INTEGER NOT NULL
    DEFAULT 0;
-- what the failure did to its node's record: '' blamed withdrawn
ALTER TABLE attempts ADD COLUMN failure_blame TEXT NOT NULL DEFAULT '';
UPDATE attempts SET
    failure_node = json_extract(failure, '$.node'),
    failure_rank = json_extract(failure, '$.rank'),
    failure_exit_code = json_extract(failure, '$.exit_code'),
    failure_signal = CASE WHEN json_type(failure, '$.exit_code') IS NULL
        THEN NULL ELSE coalesce(json_extract(failure, '$.signal'), 0) END,
    failure_fenced = coalesce(json_extract(failure, '$.fenced'), 0),
    failure_last_step = json_extract(failure, '$.last_step'),
    failure_heartbeat_ms =
        coalesce(json_extract(failure, '$.last_heartbeat_ms'), 0),
    failure_idle_ms = coalesce(json_extract(failure, '$.idle_ms'), 0),
    failure_source = json_extract(failure, '$.source'),
    failure_actor = json_extract(failure, '$.actor'),
    failure_stderr = json_extract(failure, '$.stderr_tail'),
    failure_evidence_ms = coalesce(json_extract(failure, '$.failed_ms'), 0),
    failure_blame = CASE
        WHEN json_extract(failure, '$.blamed') IS NOT NULL THEN 'blamed'
        WHEN json_extract(failure, '$.blame_withdrawn') IS NOT NULL
            THEN 'withdrawn'
        ELSE '' END
    WHERE failure IS NOT NULL AND json_valid(failure);
ALTER TABLE attempts DROP COLUMN failure;

-- 2. Directives: the scheduler's instructions to the ranks of an attempt
--    ("stack dump now"; later "at step S: gc" and "at step S:
--    checkpoint"), each with a sequence number within the attempt. They
--    replace the attempt's dump_seq. A directive is done once every rank
--    on a node still in the attempt acknowledged it.
CREATE TABLE directives (
    job_id    INTEGER NOT NULL,
    attempt   INTEGER NOT NULL,
    seq       INTEGER NOT NULL,
    kind      TEXT NOT NULL,         -- dump
    step      INTEGER NOT NULL DEFAULT -1,   -- -1: at once
    issued_ms INTEGER NOT NULL,
    done_ms   INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (job_id, attempt, seq),
    FOREIGN KEY (job_id, attempt) REFERENCES attempts (job_id, attempt)
) WITHOUT ROWID;
-- The last dump request of each attempt; a hang still waiting for its
-- dumps keeps waiting for this one.
INSERT INTO directives (job_id, attempt, seq, kind, step, issued_ms,
        done_ms)
    SELECT job_id, attempt, dump_seq, 'dump', -1, start_ms,
        CASE WHEN dump_deadline_ms > 0 AND state IN ('STARTING', 'RUNNING')
            THEN 0 ELSE max(end_ms, start_ms) END
    FROM attempts WHERE dump_seq > 0;
ALTER TABLE attempts ADD COLUMN hang_seq INTEGER NOT NULL DEFAULT 0;
UPDATE attempts SET hang_seq = dump_seq
    WHERE dump_deadline_ms > 0 AND state IN ('STARTING', 'RUNNING');
ALTER TABLE attempts DROP COLUMN dump_seq;
