-- 0006: provider circuits (worker.usageFailure): one row per circuit, written only by a
-- compare-and-set on its version. A closed circuit is a row whose until is null.

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
