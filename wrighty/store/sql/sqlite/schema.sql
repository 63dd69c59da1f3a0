-- The current schema. A new database is built from this file; existing ones get the numbered
-- migrations. tests/store/test_migrations.py proves both end in the same schema.

-- Quoted: the name migration 0017 gives it renaming its rebuilt table (SQLite keeps the text).
CREATE TABLE "items" (
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
    handoff_note       TEXT,
    reviewed_commit    TEXT
) STRICT;

CREATE INDEX items_by_state ON items (state, queued_at, id);
CREATE INDEX items_running_by_lease ON items (lease_expires_at) WHERE state = 'running';
-- The morning view's read: the items that moved since a time (docs/storage.md, 0024).
CREATE INDEX items_by_update ON items (updated_at);

-- Terminal states are write-once, whatever code path tries otherwise.
CREATE TRIGGER items_terminal_write_once BEFORE UPDATE ON items
WHEN OLD.state IN ('done', 'cancelled')
BEGIN
    SELECT RAISE(ABORT, 'wrighty: a done or cancelled item is final');
END;

CREATE TABLE item_events (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    item_id     INTEGER NOT NULL REFERENCES items (id),
    at          TEXT    NOT NULL,
    actor       TEXT    NOT NULL,
    generation  INTEGER NOT NULL,
    from_state  TEXT,
    to_state    TEXT    NOT NULL,
    reason_code TEXT,
    reason      TEXT
) STRICT;

CREATE INDEX item_events_by_item ON item_events (item_id, id);

CREATE TRIGGER item_events_append_only_update BEFORE UPDATE ON item_events
BEGIN
    SELECT RAISE(ABORT, 'wrighty: item history is append-only');
END;

CREATE TRIGGER item_events_append_only_delete BEFORE DELETE ON item_events
BEGIN
    SELECT RAISE(ABORT, 'wrighty: item history is append-only');
END;

CREATE TABLE sessions (
    item_id         INTEGER PRIMARY KEY REFERENCES items (id),
    vendor          TEXT NOT NULL,
    session_id      TEXT,
    workspace       TEXT NOT NULL,
    installation_id TEXT NOT NULL,
    updated_at      TEXT NOT NULL,
    branch          TEXT,
    base_commit     TEXT
) STRICT;

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
    api_ms             INTEGER,
    agent_resets_at    TEXT
) STRICT;

CREATE INDEX runs_by_item ON runs (item_id, started_at);
CREATE INDEX runs_by_claim ON runs (item_id, generation);
CREATE INDEX runs_by_agent ON runs (agent, started_at);
CREATE INDEX runs_by_start ON runs (started_at);
CREATE INDEX runs_fix_turns ON runs (item_id) WHERE kind = 'fix';

CREATE TABLE workers (
    worker_id          TEXT PRIMARY KEY,
    label              TEXT,
    installation_id    TEXT NOT NULL,
    pid                INTEGER NOT NULL,
    process_started_at REAL NOT NULL,
    version            TEXT NOT NULL,
    state              TEXT NOT NULL CHECK (state IN ('idle', 'running', 'stopping')),
    items              TEXT NOT NULL,
    started_at         TEXT NOT NULL,
    last_heartbeat_at  TEXT NOT NULL,
    agent              TEXT,
    clock_offset_seconds REAL,
    held_reason        TEXT,
    waiting_for        TEXT
) STRICT;

CREATE INDEX workers_by_heartbeat ON workers (last_heartbeat_at);

CREATE INDEX items_by_not_before ON items (not_before) WHERE state = 'retry-scheduled';

-- Provider circuits (worker.usageFailure): written only by a compare-and-set on version
-- (0 in the domain means no row yet). A closed circuit is a row whose until is null.
CREATE TABLE circuits (
    name             TEXT    PRIMARY KEY,
    version          INTEGER NOT NULL CHECK (version > 0),
    opened_at        TEXT,
    until            TEXT,
    reason           TEXT,
    failures         INTEGER NOT NULL DEFAULT 0,
    probe_by         TEXT,
    probe_item       INTEGER REFERENCES items (id),
    probe_expires_at TEXT,
    updated_at       TEXT    NOT NULL
) STRICT;

-- The notification outbox (docs/notifications.md).
CREATE TABLE notices (
    id               TEXT    PRIMARY KEY,
    created_at       TEXT    NOT NULL,
    event            TEXT    NOT NULL,
    events           TEXT    NOT NULL,
    item_id          INTEGER,
    reason_code      TEXT,
    payload          TEXT    NOT NULL,
    state            TEXT    NOT NULL DEFAULT 'pending'
                             CHECK (state IN ('pending', 'delivered', 'given-up')),
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  TEXT    NOT NULL,
    claimed_by       TEXT,
    claim_expires_at TEXT,
    delivered_to     TEXT    NOT NULL DEFAULT '[]',
    last_error       TEXT,
    finished_at      TEXT
) STRICT;

CREATE INDEX notices_due ON notices (state, next_attempt_at);

-- Scheduling (docs/scheduling.md): the claim's order, dependencies and labels.
CREATE INDEX items_claim_order ON items (priority, (state = 'queued'), queued_at, id)
    WHERE state IN ('queued', 'retry-scheduled');

CREATE TABLE item_dependencies (
    item_id    INTEGER NOT NULL REFERENCES items (id),
    depends_on INTEGER NOT NULL REFERENCES items (id),
    PRIMARY KEY (item_id, depends_on),
    CHECK (item_id <> depends_on)
) STRICT;

CREATE INDEX item_dependencies_by_dependency ON item_dependencies (depends_on);

CREATE TABLE item_labels (
    item_id INTEGER NOT NULL REFERENCES items (id),
    label   TEXT    NOT NULL,
    PRIMARY KEY (item_id, label)
) STRICT;

-- `wrighty import` (docs/scheduling.md#importing-a-markdown-file): an imported item's key.
CREATE UNIQUE INDEX items_by_import_key ON items (import_key) WHERE import_key IS NOT NULL;

-- Verification (docs/verify.md): an item's fix turns and the checks it chose (null: those
-- wrighty.json gives its agent; else a JSON array of names, [] for none), and each check's
-- evidence, insert-only (seq: the order of insertion, which orders an item's verifications).

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
    fails_on_base    INTEGER NOT NULL DEFAULT 0
        CHECK (fails_on_base IN (0, 1)),
    PRIMARY KEY (verification_id, position)
) STRICT;

CREATE INDEX checks_by_item ON checks (item_id, seq);
CREATE INDEX checks_by_result ON checks (start_failure, exit_code);

CREATE TRIGGER checks_insert_only_update BEFORE UPDATE ON checks
BEGIN
    SELECT RAISE(ABORT, 'wrighty: check evidence is never rewritten');
END;

CREATE TRIGGER checks_insert_only_delete BEFORE DELETE ON checks
BEGIN
    SELECT RAISE(ABORT, 'wrighty: check evidence is never rewritten');
END;

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
-- Each check's result on a base commit (docs/verify.md#checks-that-fail-on-the-base), run once
-- per commit and command (check_key: its argv and time limit) and kept: a commit does not
-- change. The first writer of a key wins; a second one changes nothing.
CREATE TABLE base_checks (
    base_commit TEXT    NOT NULL,
    check_name  TEXT    NOT NULL,
    check_key   TEXT    NOT NULL,
    failed      INTEGER NOT NULL CHECK (failed IN (0, 1)),
    ending      TEXT    NOT NULL,
    output_tail TEXT    NOT NULL DEFAULT '',
    checked_at  TEXT    NOT NULL,
    PRIMARY KEY (base_commit, check_name, check_key)
) STRICT;

-- The sources' state (docs/sources.md): per configured tracker, its health as `wrighty
-- sources` shows it and each listed page's ETag with its issues' numbers (JSON), which the
-- next sync sends as If-None-Match. Never a token.
CREATE TABLE sources (
    name           TEXT PRIMARY KEY,
    synced_at      TEXT,
    attempted_at   TEXT,
    rate_remaining INTEGER,
    rate_reset     TEXT,
    last_error     TEXT,
    failures       INTEGER NOT NULL DEFAULT 0,
    pages          TEXT NOT NULL DEFAULT '[]',
    answers_since  TEXT,
    answers_etag   TEXT
) STRICT;

-- Talking on a tracker (docs/sources.md#talking-on-the-issue): what wrighty wrote about an item
-- (its status comment, its pull request), each `/wrighty` answer by its comment's id (acted on
-- once), and where the reading of a source's comments stands. Never a token.
CREATE TABLE tracker_items (
    item_id        INTEGER PRIMARY KEY REFERENCES items (id),
    comment_id     INTEGER,
    comment_digest TEXT,
    pull_repo      TEXT,
    pull_number    INTEGER,
    pull_url       TEXT,
    pull_state     TEXT,
    pull_etag      TEXT
) STRICT;
CREATE INDEX tracker_items_open_pulls ON tracker_items (pull_state) WHERE pull_state = 'open';
CREATE TABLE tracker_answers (
    source     TEXT NOT NULL,
    comment_id INTEGER NOT NULL,
    issue      INTEGER NOT NULL,
    item_id    INTEGER,
    author     TEXT NOT NULL,
    action     TEXT NOT NULL,
    step       TEXT NOT NULL,
    seen       TEXT,
    result     TEXT,
    PRIMARY KEY (source, comment_id)
) STRICT;
CREATE INDEX tracker_answers_unfinished ON tracker_answers (source) WHERE step <> 'answered';
