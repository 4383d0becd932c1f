-- 0011-node-health.sql - node health: findings of the agents' checks,
-- each check's latest run, who cordoned a node and when, the boot a node
-- was last seen in (docs/fault-tolerance.md "Node health")
--
-- Forward-only: 0001 to 0010 are released and never edited.

-- Nodes: a cordon is owned by a person (cordon_by, cordon_at_ms; drain:
-- it was `lockstep drain`); boot_id is the boot its agent last reported
-- health for, and health_wait says it has not had a full pass of its
-- checks since (not schedulable). has_health: its agent sends health.
ALTER TABLE nodes ADD COLUMN cordon_by TEXT NOT NULL DEFAULT '';
ALTER TABLE nodes ADD COLUMN cordon_at_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE nodes ADD COLUMN drain INTEGER NOT NULL DEFAULT 0;
ALTER TABLE nodes ADD COLUMN has_health INTEGER NOT NULL DEFAULT 0;
ALTER TABLE nodes ADD COLUMN boot_id TEXT NOT NULL DEFAULT '';
ALTER TABLE nodes ADD COLUMN health_wait INTEGER NOT NULL DEFAULT 0;

-- One row per finding: (node, check, code, scope) while it is open; a
-- closed one keeps its row (closed_ms, closed_how: pass, holddown, boot,
-- ack, expired, removed; closed_by: who acknowledged it) as history, the
-- newest HEALTH_CLOSED_KEEP per node (scheduler/db_health.c).
CREATE TABLE health_findings (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    node        TEXT NOT NULL,
    check_name  TEXT NOT NULL,
    code        TEXT NOT NULL,
    scope       TEXT NOT NULL,
    -- the latest status that raised it: WARN FAIL UNKNOWN TIMEOUT HUNG
    status      TEXT NOT NULL,
    evidence    TEXT NOT NULL DEFAULT '',
    numbers     TEXT NOT NULL DEFAULT '{}', -- JSON object name -> number
    first_ms    INTEGER NOT NULL,
    last_ms     INTEGER NOT NULL,
    count       INTEGER NOT NULL DEFAULT 1,
    consecutive INTEGER NOT NULL DEFAULT 1,
    last_run    INTEGER NOT NULL DEFAULT 0,
    excluding   INTEGER NOT NULL DEFAULT 0, -- latched: excludes the node
    pass_since  INTEGER NOT NULL DEFAULT 0, -- passing since (hold-down)
    open        INTEGER NOT NULL DEFAULT 1,
    closed_ms   INTEGER NOT NULL DEFAULT 0,
    closed_how  TEXT NOT NULL DEFAULT '',
    closed_by   TEXT NOT NULL DEFAULT '',
    closed_why  TEXT NOT NULL DEFAULT ''
);
CREATE INDEX health_findings_node ON health_findings (node, open, id);

-- Each check's latest run on each node, as its agent reported it (the
-- results as JSON, proto_check_result objects), so that a restarted
-- scheduler neither counts a run twice nor forgets what it last saw.
CREATE TABLE health_checks (
    node       TEXT NOT NULL,
    check_name TEXT NOT NULL,
    run        INTEGER NOT NULL,
    at_ms      INTEGER NOT NULL,
    results    TEXT NOT NULL, -- JSON array
    PRIMARY KEY (node, check_name)
) WITHOUT ROWID;

-- History: one row per result that changed something (a new status for
-- its (check, code, scope)), the newest HEALTH_RESULTS_KEEP per node.
CREATE TABLE health_results (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    node       TEXT NOT NULL,
    check_name TEXT NOT NULL,
    code       TEXT NOT NULL,
    scope      TEXT NOT NULL,
    status     TEXT NOT NULL,
    evidence   TEXT NOT NULL DEFAULT '',
    run        INTEGER NOT NULL,
    at_ms      INTEGER NOT NULL
);
CREATE INDEX health_results_node ON health_results (node, id);
