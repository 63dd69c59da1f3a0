-- The worker registry: one row per running `wrighty worker start`, kept fresh by its heartbeat.
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
    last_heartbeat_at  TEXT NOT NULL
) STRICT;

CREATE INDEX workers_by_heartbeat ON workers (last_heartbeat_at);

-- status: the earliest due retry, and waits of queued items.
CREATE INDEX items_by_not_before ON items (not_before) WHERE state = 'retry-scheduled';
