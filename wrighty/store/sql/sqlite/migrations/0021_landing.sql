-- 0021: landing (docs/landing.md): the state landing, and each accepted item's landing.
-- SQLite cannot change a column's CHECK, so items is rebuilt as 0017 rebuilt it, with every
-- column it has today and 'landing' allowed.

CREATE TABLE items_new (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    title              TEXT    NOT NULL,
    body               TEXT    NOT NULL,
    agent              TEXT,
    timeout_seconds    REAL,
    workspace          TEXT,
    state              TEXT    NOT NULL CHECK (state IN ('todo', 'queued', 'running',
                                   'retry-scheduled', 'needs-attention', 'review', 'landing',
                                   'done', 'cancelled')),
    generation         INTEGER NOT NULL DEFAULT 0,
    claimed_by         TEXT,
    lease_expires_at   TEXT,
    queued_at          TEXT,
    not_before         TEXT,
    reason_code        TEXT,
    reason             TEXT,
    next_action        TEXT,
    crash_retries      INTEGER NOT NULL DEFAULT 0,
    requeues           INTEGER NOT NULL DEFAULT 0,
    created_at         TEXT    NOT NULL,
    updated_at         TEXT    NOT NULL,
    claimed_at         TEXT,
    renew_deadline     TEXT,
    usage_retries      INTEGER NOT NULL DEFAULT 0,
    max_cost_usd       REAL,
    max_tokens         INTEGER,
    priority           INTEGER NOT NULL DEFAULT 2 CHECK (priority BETWEEN 0 AND 3),
    import_key         TEXT,
    import_fingerprint TEXT,
    fix_turns          INTEGER NOT NULL DEFAULT 0,
    verify_checks      TEXT,
    rejections         INTEGER NOT NULL DEFAULT 0,
    feedback           TEXT,
    handoffs           INTEGER NOT NULL DEFAULT 0,
    handoff_note       TEXT
) STRICT;

INSERT INTO items_new (id, title, body, agent, timeout_seconds, workspace, state, generation, claimed_by,
                       lease_expires_at, queued_at, not_before, reason_code, reason,
                       next_action, crash_retries, requeues, created_at, updated_at,
                       claimed_at, renew_deadline, usage_retries, max_cost_usd,
                       max_tokens, priority, import_key, import_fingerprint, fix_turns,
                       verify_checks, rejections, feedback, handoffs, handoff_note)
SELECT id, title, body, agent, timeout_seconds, workspace, state, generation, claimed_by,
       lease_expires_at, queued_at, not_before, reason_code, reason, next_action,
       crash_retries, requeues, created_at, updated_at, claimed_at, renew_deadline,
       usage_retries, max_cost_usd, max_tokens, priority, import_key, import_fingerprint,
       fix_turns, verify_checks, rejections, feedback, handoffs, handoff_note
FROM items;

-- Ids are never reused: the new table's AUTOINCREMENT counter carries the old one on.
UPDATE sqlite_sequence
SET seq = max(seq, coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'items'), 0))
WHERE name = 'items_new';

DROP TABLE items;

ALTER TABLE items_new RENAME TO items;

CREATE INDEX items_by_state ON items (state, queued_at, id);
CREATE INDEX items_running_by_lease ON items (lease_expires_at) WHERE state = 'running';

CREATE TRIGGER items_terminal_write_once BEFORE UPDATE ON items
WHEN OLD.state IN ('done', 'cancelled')
BEGIN
    SELECT RAISE(ABORT, 'wrighty: a done or cancelled item is final');
END;

CREATE INDEX items_by_not_before ON items (not_before) WHERE state = 'retry-scheduled';
CREATE INDEX items_claim_order ON items (priority, (state = 'queued'), queued_at, id)
    WHERE state IN ('queued', 'retry-scheduled');
CREATE UNIQUE INDEX items_by_import_key ON items (import_key) WHERE import_key IS NOT NULL;

-- Landing (docs/landing.md): an accepted item's landing, one row per item (a new accept
-- replaces it). seq: acceptance order across the store; the line of a target is its landing
-- items by seq. Written only under the item's guard (the accept's move, the lander's claim).
CREATE TABLE landings (
    item_id          INTEGER PRIMARY KEY REFERENCES items (id),
    seq              INTEGER NOT NULL UNIQUE,
    accepted_at      TEXT    NOT NULL,
    accepted_by      TEXT    NOT NULL,
    accepted_commit  TEXT,
    installation_id  TEXT    NOT NULL,
    target           TEXT    NOT NULL,
    step             TEXT    NOT NULL,
    target_commit    TEXT,
    checked_commit   TEXT,
    intent           TEXT,
    intent_from      TEXT,
    attempt          INTEGER NOT NULL DEFAULT 0,
    catch_ups        INTEGER NOT NULL DEFAULT 0,
    updated_at       TEXT    NOT NULL
) STRICT;

CREATE INDEX landings_line ON landings (installation_id, target, seq);
