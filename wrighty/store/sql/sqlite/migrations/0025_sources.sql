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
    pages          TEXT NOT NULL DEFAULT '[]'
) STRICT;
