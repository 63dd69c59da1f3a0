-- 0008: the notification outbox. A notice is written in the same transaction as
-- the state change it reports, and delivered after the commit: claimed by one deliverer at a
-- time (claimed_by, claim_expires_at), retried with backoff, then delivered or given up.
-- delivered_to lists the sinks that have it, so a retry goes only to the others.

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
