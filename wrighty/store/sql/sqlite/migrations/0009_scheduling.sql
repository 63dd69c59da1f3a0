-- 0009: priorities, dependencies and labels (docs/scheduling.md).
-- priority: 0 (P0, the highest) to 3; every item before this migration gets the default, 2.
-- items_claim_order walks the claimable items in the claim's order: priority, due retries
-- before fresh work, then the oldest queue entry (null first, as SQLite sorts it) and the id.
-- item_dependencies: an item is eligible only once every item it comes after is done.
-- item_labels: the labels that limits.labels.<label>.maxConcurrent counts.

ALTER TABLE items ADD COLUMN priority INTEGER NOT NULL DEFAULT 2 CHECK (priority BETWEEN 0 AND 3);

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
