-- 0017: the state review (docs/states.md): a verified success waiting for a person.
-- SQLite cannot change a column's CHECK, so items is rebuilt (the way SQLite's ALTER TABLE page
-- gives): items_new with the same columns in the same order and 'review' allowed, every row
-- copied as it is, items dropped, items_new renamed items, its indexes and trigger made again
-- as schema.sql has them. The runner applies migrations with foreign_keys off and
-- legacy_alter_table on (set outside the transaction): the tables that reference items keep
-- their references as they are written, and it checks every foreign key before it commits.
-- (The renamed table's stored CREATE text names it "items", quoted; schema.sql does too.)

CREATE TABLE items_new (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    title              TEXT    NOT NULL,
    body               TEXT    NOT NULL,
    agent              TEXT,
    timeout_seconds    REAL,
    workspace          TEXT,
    state              TEXT    NOT NULL CHECK (state IN ('todo', 'queued', 'running',
                                   'retry-scheduled', 'needs-attention', 'review', 'done',
                                   'cancelled')),
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
    verify_checks      TEXT
) STRICT;

INSERT INTO items_new (id, title, body, agent, timeout_seconds, workspace, state, generation, claimed_by,
                       lease_expires_at, queued_at, not_before, reason_code, reason,
                       next_action, crash_retries, requeues, created_at, updated_at,
                       claimed_at, renew_deadline, usage_retries, max_cost_usd,
                       max_tokens, priority, import_key, import_fingerprint, fix_turns,
                       verify_checks)
SELECT id, title, body, agent, timeout_seconds, workspace, state, generation, claimed_by,
       lease_expires_at, queued_at, not_before, reason_code, reason, next_action,
       crash_retries, requeues, created_at, updated_at, claimed_at, renew_deadline,
       usage_retries, max_cost_usd, max_tokens, priority, import_key, import_fingerprint,
       fix_turns, verify_checks
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
