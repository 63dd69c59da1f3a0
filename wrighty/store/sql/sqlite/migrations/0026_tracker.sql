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
ALTER TABLE sources ADD COLUMN answers_since TEXT;
ALTER TABLE sources ADD COLUMN answers_etag TEXT;
