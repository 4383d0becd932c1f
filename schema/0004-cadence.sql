-- 0004-cadence.sql - a job's synchronized cadences (docs/cadence.md)
--
-- Forward-only: 0001 to 0003 are released and never edited.
--
-- Every P seconds or every K steps, at most one of the pair non-zero;
-- both 0: no cadence (every job submitted before this migration).
ALTER TABLE jobs ADD COLUMN gc_every_s INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN gc_every_steps INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN checkpoint_every_s INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN checkpoint_every_steps INTEGER NOT NULL DEFAULT 0;
