-- 0018: landing (docs/landing.md): the state landing, and each accepted item's landing.

ALTER TABLE items DROP CONSTRAINT items_state_check;
ALTER TABLE items ADD CONSTRAINT items_state_check CHECK (state IN ('todo', 'queued', 'running',
    'retry-scheduled', 'needs-attention', 'review', 'landing', 'done', 'cancelled'));

-- Landing (docs/landing.md): an accepted item's landing, one row per item (a new accept
-- replaces it). seq: acceptance order across the store; the line of a target is its landing
-- items by seq. Written only under the item's guard (the accept's move, the lander's claim).
CREATE TABLE landings (
    item_id          BIGINT PRIMARY KEY REFERENCES items (id),
    seq              BIGINT  NOT NULL UNIQUE,
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
);

CREATE INDEX landings_line ON landings (installation_id, target, seq);
CREATE SEQUENCE landings_seq;
