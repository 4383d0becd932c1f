-- 0008-blame-status.sql - evidence-based blame (docs/fault-tolerance.md
-- "Blame and node exclusion")
--
-- Forward-only: 0001 to 0007 are released and never edited.
--
-- A blame row now has a status: 'provisional' (a failure that does not by
-- itself point at the node: recorded, never counted, until the job's next
-- attempt on other nodes gets past `step`), 'confirmed' (counts toward
-- blame_threshold; hard evidence is confirmed at once), 'withdrawn' (the
-- job's own failure after all, or never confirmed) and 'reset' (recorded
-- before an operator's uncordon: history, no longer counted). `step` is
-- the step the failing rank had reached (-1: none reported); `settled_ms`
-- and `note` say when and why the status last changed ('' while
-- provisional or as recorded).
--
-- The old column `withdrawn` stays in step with status = 'withdrawn', so
-- readers of version 7 still see the same. Rows written before this
-- migration were all counted at once: they become 'confirmed' (or
-- 'withdrawn').
ALTER TABLE blame ADD COLUMN status TEXT NOT NULL DEFAULT 'confirmed';
ALTER TABLE blame ADD COLUMN step INTEGER NOT NULL DEFAULT -1;
ALTER TABLE blame ADD COLUMN settled_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE blame ADD COLUMN note TEXT NOT NULL DEFAULT '';
UPDATE blame SET status = 'withdrawn' WHERE withdrawn <> 0;
CREATE INDEX blame_provisional ON blame (job_id) WHERE status = 'provisional';
CREATE INDEX blame_node_all ON blame (node, id);
