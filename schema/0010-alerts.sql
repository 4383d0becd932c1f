-- 0010-alerts.sql - the alert webhook's queue, and the event indexes that
-- the history query and its retention use (docs/operations.md "Alerts",
-- docs/api.md "GET /v1/events")
--
-- Forward-only: 0001 to 0009 are released and never edited.
--
-- An alert row is written in the same transaction as the change that
-- raised it (a node excluded or lost, a job FAILED for good), so an alert
-- is never sent for a change a crash undid, and never lost by a restart.
-- The scheduler POSTs the oldest row first; a 2xx deletes it, anything
-- else counts a try and sets next_ms (exponential backoff). When the
-- queue is full (alert_queue_max) the oldest row is dropped.
CREATE TABLE alerts (
    -- the body's "id": never reused (AUTOINCREMENT), so receivers
    -- may dedupe on it
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    time_ms    INTEGER NOT NULL,     -- when it was raised
    kind       TEXT NOT NULL,        -- node_excluded node_lost job_failed
    node       TEXT NOT NULL DEFAULT '',
    job_id     INTEGER NOT NULL DEFAULT 0,
    reason     TEXT NOT NULL DEFAULT '',
    tries      INTEGER NOT NULL DEFAULT 0,
    next_ms    INTEGER NOT NULL DEFAULT 0, -- not before (wall clock ms)
    last_error TEXT NOT NULL DEFAULT ''
);

-- GET /v1/events?kind= and the retention's prune by time.
CREATE INDEX events_kind ON events (kind, id);
CREATE INDEX events_time ON events (time_ms);
