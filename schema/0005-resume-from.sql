-- 0005-resume-from.sql - a job that continues an earlier run
-- (docs/fault-tolerance.md, Checkpoints: --resume-from)
--
-- Forward-only: 0001 to 0004 are released and never edited.
--
-- resume_from: the checkpoint attempt 1 resumes from ('' none), as the
-- path the scheduler resolved at submit; resume_step its step (-1
-- unknown); resume_from_job the job it was taken from (0: given as a
-- path). Jobs submitted before this migration continue nothing.
ALTER TABLE jobs ADD COLUMN resume_from TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN resume_step INTEGER NOT NULL DEFAULT -1;
ALTER TABLE jobs ADD COLUMN resume_from_job INTEGER NOT NULL DEFAULT 0;
