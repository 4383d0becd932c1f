-- 0014-replicas.sql - the replicas of a replicated scheduler
-- (docs/operations.md "Replicas")
--
-- Forward-only: 0001 to 0013 are released and never edited.

-- One row per replica that has led: the leader writes its own when it
-- starts to serve, in its first replicated transaction, so that every
-- follower can tell a client the URL of the replica that leads (libraft
-- tells a follower only the leader's id and Raft address). Unused (and
-- empty) with a single scheduler.
CREATE TABLE replicas (
    id       INTEGER PRIMARY KEY,
    address  TEXT NOT NULL,     -- its Raft host:port
    url      TEXT NOT NULL,     -- where clients reach its API
    led_ms   INTEGER NOT NULL   -- when it last started to lead
);
