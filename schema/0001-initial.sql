-- 0001-initial.sql - the first lockstep schema
--
-- SQLite is the scheduler's source of truth: every decision is written here
-- (in the loop iteration's transaction) before it is acted on. Times are
-- milliseconds since the Unix epoch. Lists and maps (argv, env, GPU ids,
-- labels, event details) are stored as JSON text.

-- One row per node agent that ever reported.
CREATE TABLE nodes (
    name          TEXT PRIMARY KEY,
    -- UP CORDONED DRAINING UNHEALTHY LOST
    state         TEXT NOT NULL,
    reason        TEXT NOT NULL DEFAULT '',
    cordoned      INTEGER NOT NULL DEFAULT 0, -- an operator said no new work
    addr          TEXT NOT NULL DEFAULT '',
    cpus          INTEGER NOT NULL DEFAULT 0,
    memory_mb     INTEGER NOT NULL DEFAULT 0,
    gpus          TEXT NOT NULL DEFAULT '[]',
    labels        TEXT NOT NULL DEFAULT '{}',
    agent_id      TEXT NOT NULL DEFAULT '',
    registered_ms INTEGER NOT NULL,
    last_seen_ms  INTEGER NOT NULL            -- persisted lazily (batched)
) WITHOUT ROWID;

-- One row per submitted job. AUTOINCREMENT: a job id is never reused.
CREATE TABLE jobs (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    name               TEXT NOT NULL,
    user               TEXT NOT NULL,
    -- PENDING PLACED RUNNING RESTARTING SUCCEEDED FAILED CANCELLED
    state              TEXT NOT NULL,
    reason             TEXT NOT NULL DEFAULT '',
    priority           INTEGER NOT NULL,
    nodes              INTEGER NOT NULL,
    ranks_per_node     INTEGER NOT NULL,
    gpus_per_node      INTEGER NOT NULL,
    cpus_per_rank      INTEGER NOT NULL,
    memory_mb_per_node INTEGER NOT NULL,
    argv               TEXT NOT NULL,          -- JSON array of strings
    env                TEXT NOT NULL,          -- JSON object
    workdir            TEXT NOT NULL,
    max_restarts       INTEGER NOT NULL,
    checkpoint_dir     TEXT NOT NULL,
    submit_ms          INTEGER NOT NULL,
    start_ms           INTEGER NOT NULL DEFAULT 0,
    end_ms             INTEGER NOT NULL DEFAULT 0,
    attempt            INTEGER NOT NULL DEFAULT 0, -- latest attempt number
    failed_rank        INTEGER,                -- NULL until a rank failed
    exit_code          INTEGER,
    signal             INTEGER,
    stderr_tail        TEXT
);
-- The queue, in scheduling order, and the listings.
CREATE INDEX jobs_queue ON jobs (priority DESC, id)
    WHERE state IN ('PENDING', 'RESTARTING');
CREATE INDEX jobs_state ON jobs (state, id);
CREATE INDEX jobs_user_state ON jobs (user, state, id);

-- One row per start of a job (an epoch).
CREATE TABLE attempts (
    job_id      INTEGER NOT NULL REFERENCES jobs (id),
    attempt     INTEGER NOT NULL,
    -- STARTING RUNNING SUCCEEDED FAILED CANCELLED
    state       TEXT NOT NULL,
    reason      TEXT NOT NULL DEFAULT '',
    start_ms    INTEGER NOT NULL,
    end_ms      INTEGER NOT NULL DEFAULT 0,
    nodes          INTEGER NOT NULL,
    ranks_per_node INTEGER NOT NULL,
    master_addr TEXT NOT NULL,
    master_port INTEGER NOT NULL,
    PRIMARY KEY (job_id, attempt)
) WITHOUT ROWID;
CREATE INDEX attempts_live ON attempts (state)
    WHERE state IN ('STARTING', 'RUNNING');

-- Which node runs which share (node rank) of an attempt, and what it holds
-- there. `gen` is the node's desired-state generation that first carried
-- it; `released` is set once the node's agent no longer lists the attempt,
-- which is when its resources become free again.
CREATE TABLE placements (
    job_id    INTEGER NOT NULL,
    attempt   INTEGER NOT NULL,
    node_rank INTEGER NOT NULL,
    node      TEXT NOT NULL REFERENCES nodes (name),
    gpus      TEXT NOT NULL,         -- JSON array of GPU ids
    cpus      INTEGER NOT NULL,
    memory_mb INTEGER NOT NULL,
    gen       INTEGER NOT NULL,
    released  INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (job_id, attempt, node_rank),
    FOREIGN KEY (job_id, attempt) REFERENCES attempts (job_id, attempt)
) WITHOUT ROWID;
CREATE INDEX placements_held ON placements (node) WHERE released = 0;

-- Per-rank state of an attempt, written when it changes.
CREATE TABLE ranks (
    job_id      INTEGER NOT NULL,
    attempt     INTEGER NOT NULL,
    rank        INTEGER NOT NULL,
    node        TEXT NOT NULL,
    local_rank  INTEGER NOT NULL,
    state       TEXT NOT NULL,       -- pending running exited lost
    pid         INTEGER NOT NULL DEFAULT 0,
    start_ms    INTEGER NOT NULL DEFAULT 0,
    end_ms      INTEGER NOT NULL DEFAULT 0,
    exit_code   INTEGER,
    signal      INTEGER,
    stderr_tail TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (job_id, attempt, rank),
    FOREIGN KEY (job_id, attempt) REFERENCES attempts (job_id, attempt)
) WITHOUT ROWID;

-- Append-only audit log: who did what to which job or node, and why.
CREATE TABLE events (
    id      INTEGER PRIMARY KEY,
    time_ms INTEGER NOT NULL,
    actor   TEXT NOT NULL,           -- "scheduler", a user name, "agent/<node>"
    subject TEXT NOT NULL,           -- "job/12", "node/n1", "user/alice"
    kind    TEXT NOT NULL,           -- job_submitted, node_lost, ...
    detail  TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX events_subject ON events (subject, id);

-- Bearer tokens; only their SHA-256 (hex) is stored.
CREATE TABLE tokens (
    hash       TEXT PRIMARY KEY,
    user       TEXT NOT NULL,
    role       TEXT NOT NULL,        -- user operator
    created_ms INTEGER NOT NULL
) WITHOUT ROWID;
