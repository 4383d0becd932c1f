-- 0006-hold.sql - a pending job held by a user (lockstep hold / release)
--
-- Forward-only: 0001 to 0005 are released and never edited.
--
-- held_by: who holds the job ('' not held). Only a queued job (PENDING,
-- or RESTARTING between attempts) is ever held; the scheduling pass
-- leaves it alone until it is released. Every job from before this
-- migration is not held.
ALTER TABLE jobs ADD COLUMN held_by TEXT NOT NULL DEFAULT '';
