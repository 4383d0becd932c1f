-- 0013-witnesses.sql - the witnesses of nodes (docs/fault-tolerance.md
-- "Scheduler outages")
--
-- Forward-only: 0001 to 0011 are released and never edited.

-- witnesses: the witness set last sent to the node in a status reply, its
-- node names separated by commas, so that a restarted scheduler holds a
-- silent node's jobs to the set its agent may still be using;
-- witness_port: the UDP port its agent answers witness queries on (0:
-- none reported), so that replies name it before that agent is back.
ALTER TABLE nodes ADD COLUMN witnesses TEXT NOT NULL DEFAULT '';
ALTER TABLE nodes ADD COLUMN witness_port INTEGER NOT NULL DEFAULT 0;
