-- Named SQL blocks for the SQLite store. Each block starts with "-- name: <name>".

-- name: insert_item
INSERT INTO items (title, body, agent, timeout_seconds, workspace, state, queued_at,
                   created_at, updated_at)
VALUES (:title, :body, :agent, :timeout_seconds, :workspace, :state, :queued_at,
        :created_at, :created_at);

-- name: insert_event
INSERT INTO item_events (item_id, at, actor, generation, from_state, to_state,
                         reason_code, reason)
VALUES (:item_id, :at, :actor, :generation, :from_state, :to_state, :reason_code, :reason);

-- name: select_item
SELECT * FROM items WHERE id = :id;

-- name: select_items
-- :states is a JSON array of state names, or NULL for every state.
SELECT * FROM items
WHERE :states IS NULL OR state IN (SELECT value FROM json_each(:states))
ORDER BY id;

-- name: select_events
SELECT * FROM item_events WHERE item_id = :item_id ORDER BY id;

-- name: select_runs
SELECT * FROM runs WHERE item_id = :item_id ORDER BY started_at, run_id;

-- name: select_session
SELECT * FROM sessions WHERE item_id = :item_id;

-- name: update_item_guarded
-- Compare-and-set: the write lands only if the item is still in the state, generation and
-- claim the caller read. Zero changed rows means someone else moved it first.
UPDATE items
SET state = :state,
    generation = :generation,
    claimed_by = :claimed_by,
    lease_expires_at = :lease_expires_at,
    queued_at = :queued_at,
    not_before = :not_before,
    reason_code = :reason_code,
    reason = :reason,
    next_action = :next_action,
    crash_retries = :crash_retries,
    requeues = :requeues,
    updated_at = :updated_at
WHERE id = :id
  AND state NOT IN ('done', 'cancelled')
  AND state = :expected_state
  AND generation = :expected_generation
  AND claimed_by IS :expected_claimed_by;

-- name: create_migrations_table
CREATE TABLE IF NOT EXISTS wrighty_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at TEXT NOT NULL
) STRICT;

-- name: select_applied_migrations
SELECT version FROM wrighty_migrations ORDER BY version;

-- name: insert_migration
INSERT INTO wrighty_migrations (version, name, applied_at) VALUES (:version, :name, :applied_at);
