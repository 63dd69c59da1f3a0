-- Verification (docs/verify.md). Each item counts its fix turns and may name the checks it
-- runs (null: the checks wrighty.json gives its agent; else a JSON array of check names, []
-- for none). A run may be a fix turn (kind 'fix'): SQLite cannot change a column's CHECK, so
-- runs is rebuilt with the same columns and indexes, its rows copied as they are. The checks
-- table keeps each check's evidence, insert-only: seq is the order of insertion, which orders
-- an item's verifications.

ALTER TABLE items ADD COLUMN fix_turns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE items ADD COLUMN verify_checks TEXT;

ALTER TABLE runs RENAME TO runs_before_fix_turns;

CREATE TABLE runs (
    run_id             TEXT    PRIMARY KEY,
    item_id            INTEGER NOT NULL REFERENCES items (id),
    generation         INTEGER NOT NULL,
    attempt            INTEGER NOT NULL,
    kind               TEXT    NOT NULL CHECK (kind IN ('fresh', 'resume', 'fix')),
    worker_id          TEXT    NOT NULL,
    installation_id    TEXT    NOT NULL,
    started_at         TEXT    NOT NULL,
    ended_at           TEXT,
    pid                INTEGER,
    process_started_at REAL,
    exit_code          INTEGER,
    signal             INTEGER,
    outcome_class      TEXT,
    confidence         TEXT,
    session_id         TEXT,
    diagnostic         TEXT,
    claim_token        TEXT,
    agent_report       TEXT,
    agent_reason       TEXT,
    agent              TEXT,
    usage              TEXT CHECK (usage IN ('partial', 'final')),
    input_tokens       INTEGER NOT NULL DEFAULT 0,
    output_tokens      INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd           REAL,
    cost_source        TEXT CHECK (cost_source IN ('reported', 'estimated')),
    models             TEXT NOT NULL DEFAULT '[]',
    turns              INTEGER,
    api_ms             INTEGER
) STRICT;

INSERT INTO runs (run_id, item_id, generation, attempt, kind, worker_id, installation_id,
                  started_at, ended_at, pid, process_started_at, exit_code, signal,
                  outcome_class, confidence, session_id, diagnostic, claim_token, agent_report,
                  agent_reason, agent, usage, input_tokens, output_tokens, cache_read_tokens,
                  cache_write_tokens, cost_usd, cost_source, models, turns, api_ms)
SELECT run_id, item_id, generation, attempt, kind, worker_id, installation_id,
       started_at, ended_at, pid, process_started_at, exit_code, signal,
       outcome_class, confidence, session_id, diagnostic, claim_token, agent_report,
       agent_reason, agent, usage, input_tokens, output_tokens, cache_read_tokens,
       cache_write_tokens, cost_usd, cost_source, models, turns, api_ms
FROM runs_before_fix_turns;

DROP TABLE runs_before_fix_turns;

CREATE INDEX runs_by_item ON runs (item_id, started_at);
CREATE INDEX runs_by_claim ON runs (item_id, generation);
CREATE INDEX runs_by_agent ON runs (agent, started_at);
CREATE INDEX runs_by_start ON runs (started_at);

CREATE TABLE checks (
    verification_id  TEXT    NOT NULL,
    position         INTEGER NOT NULL CHECK (position >= 0),
    seq              INTEGER NOT NULL UNIQUE,
    item_id          INTEGER NOT NULL REFERENCES items (id),
    run_id           TEXT    REFERENCES runs (run_id),
    generation       INTEGER NOT NULL,
    actor            TEXT    NOT NULL,
    started_at       TEXT    NOT NULL,
    name             TEXT    NOT NULL,
    argv             TEXT    NOT NULL,
    exit_code        INTEGER,
    signal           INTEGER,
    timed_out        INTEGER NOT NULL DEFAULT 0 CHECK (timed_out IN (0, 1)),
    start_failure    TEXT,
    duration_seconds REAL    NOT NULL,
    output_tail      TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (verification_id, position)
) STRICT;

CREATE INDEX checks_by_item ON checks (item_id, seq);

CREATE TRIGGER checks_insert_only_update BEFORE UPDATE ON checks
BEGIN
    SELECT RAISE(ABORT, 'wrighty: check evidence is never rewritten');
END;

CREATE TRIGGER checks_insert_only_delete BEFORE DELETE ON checks
BEGIN
    SELECT RAISE(ABORT, 'wrighty: check evidence is never rewritten');
END;
