-- Named SQL blocks for the SQLite store. Each block starts with "-- name: <name>".

-- name: select_item_to_reap
-- The reaper's re-read of an expired claim (its BEGIN IMMEDIATE already holds the file).
SELECT * FROM items WHERE id = :id;

-- name: select_items
-- :states is a JSON array of state names. Every item: select_all_items (an "IS NULL OR" here
-- would keep the planner from the items_by_state index).
SELECT * FROM items
WHERE state IN (SELECT value FROM json_each(:states))
ORDER BY id;

-- name: select_items_moved_since
-- The morning view (domain/morning.py): the items whose latest event is at or after :moment
-- (fixed-width UTC text: text order is time order). INDEXED BY: without statistics the planner
-- would walk every item in id order to spare the sort of the few that moved.
SELECT * FROM items INDEXED BY items_by_update
WHERE updated_at >= :moment
ORDER BY id;

-- name: select_items_ledger
-- The runs of the items in :item_ids (a JSON array of ids), as select_ledger reads them
-- (runs_by_item finds them): `wrighty list --since --json`'s totals.
SELECT runs.run_id, runs.item_id, runs.started_at,
       coalesce(runs.agent, items.agent, CAST(:default_agent AS text)) AS agent,
       runs.usage, runs.input_tokens, runs.output_tokens, runs.cache_read_tokens, runs.cache_write_tokens, runs.cost_usd, runs.cost_source, runs.models, runs.turns, runs.api_ms
FROM runs
JOIN items ON items.id = runs.item_id
WHERE runs.item_id IN (SELECT value FROM json_each(:item_ids)) AND runs.started_at >= :since
ORDER BY runs.started_at, runs.run_id;

-- name: update_item_guarded
-- Compare-and-set: the write lands only if the item is still in the state, generation and
-- claim the caller read (and, for the reaper, its lease is still expired). Zero changed rows
-- means someone else moved it first.
UPDATE items
SET state = :state,
    generation = :generation,
    claimed_by = :claimed_by,
    lease_expires_at = :lease_expires_at,
    claimed_at = :claimed_at,
    renew_deadline = :renew_deadline,
    queued_at = :queued_at,
    not_before = :not_before,
    reason_code = :reason_code,
    reason = :reason,
    next_action = :next_action,
    crash_retries = :crash_retries,
    usage_retries = :usage_retries,
    requeues = :requeues,
    fix_turns = :fix_turns,
    rejections = :rejections,
    feedback = :feedback,
    agent = :agent,
    handoffs = :handoffs,
    handoff_note = :handoff_note,
    reviewed_commit = :reviewed_commit,
    verify_checks = :verify_checks,
    max_cost_usd = :max_cost_usd,
    max_tokens = :max_tokens,
    priority = :priority,
    title = :title,
    body = :body,
    import_fingerprint = :import_fingerprint,
    updated_at = :updated_at
WHERE id = :id
  AND state NOT IN ('done', 'cancelled')
  AND state = :expected_state
  AND generation = :expected_generation
  AND claimed_by IS :expected_claimed_by
  AND (:expired_before IS NULL OR lease_expires_at < :expired_before)
  -- A claim goes back to queued only if no agent process was recorded under it (an
  -- operator's requeue of a settled item is not a claim going back).
  AND NOT (:expected_state = 'running' AND :state = 'queued' AND EXISTS (
      SELECT 1 FROM runs
      WHERE item_id = :id AND generation = :expected_generation AND pid IS NOT NULL))
  -- An item goes to running only once every item it comes after is done: the claim's choice
  -- checks it too, and this re-check also reads what committed since that choice was made.
  AND NOT (:state = 'running' AND EXISTS (
      SELECT 1 FROM item_dependencies AS d LEFT JOIN items AS dep ON dep.id = d.depends_on
      WHERE d.item_id = :id AND coalesce(dep.state, 'missing') <> 'done'
        -- completion.stack (:stack, a claim's): one waiting in review or landing with a
        -- branch will do, if it is the only one not done (docs/landing.md#stacked-items).
        AND NOT (:stack AND dep.state IN ('review', 'landing')
                 AND EXISTS (SELECT 1 FROM sessions AS s
                             WHERE s.item_id = dep.id AND s.branch IS NOT NULL)
                 AND (SELECT count(*) FROM item_dependencies AS o
                      JOIN items AS other ON other.id = o.depends_on
                      WHERE o.item_id = :id AND other.state <> 'done') = 1)));

-- name: select_next_claimable
-- The best eligible item (docs/scheduling.md), walked in the order of items_claim_order:
-- priority first (0 is the highest); within a priority, due retries before fresh work; then
-- the oldest queue entry (an unknown entry time counts as oldest) and the lowest id. With any
-- session an earlier run left. Eligible: queued, or a due retry (one with a local session only
-- on the installation that holds it); every item it comes after done (with :stack, all but one
-- in review or landing with a branch here: stacked_on); and no concurrency
-- limit of :agent_limits / :label_limits (JSON objects of name -> maxConcurrent, or NULL)
-- reached by the items running now. SQLite's write lock (BEGIN IMMEDIATE) makes the counts
-- and the claim one step.
SELECT items.*, sessions.item_id AS session_item_id, sessions.vendor AS session_vendor,
       sessions.session_id AS session_session_id, sessions.workspace AS session_workspace,
       sessions.installation_id AS session_installation_id,
       sessions.branch AS session_branch, sessions.base_commit AS session_base_commit,
       (SELECT json_array(dep.id, s.branch) FROM item_dependencies AS d
        JOIN items AS dep ON dep.id = d.depends_on JOIN sessions AS s ON s.item_id = dep.id
        WHERE :stack AND d.item_id = items.id AND dep.state IN ('review', 'landing')) AS stacked_on
FROM items INDEXED BY items_claim_order  -- its order: without statistics SQLite would sort
LEFT JOIN sessions ON sessions.item_id = items.id
WHERE items.state IN ('queued', 'retry-scheduled')
  AND (items.state = 'queued'
       OR (items.not_before <= :now
           AND (sessions.session_id IS NULL OR sessions.installation_id = :installation_id)))
  AND (:item_id IS NULL OR items.id = :item_id)
  AND (:agent IS NULL OR coalesce(items.agent, :default_agent) = :agent)
  AND NOT EXISTS (
      SELECT 1 FROM item_dependencies AS d LEFT JOIN items AS dep ON dep.id = d.depends_on
      WHERE d.item_id = items.id AND coalesce(dep.state, 'missing') <> 'done'
        -- completion.stack: the one item not done, waiting in review or landing with a branch
        -- of this installation, will do (docs/landing.md#stacked-items).
        AND NOT (:stack AND dep.state IN ('review', 'landing')
                 AND EXISTS (SELECT 1 FROM sessions AS s
                             WHERE s.item_id = dep.id AND s.branch IS NOT NULL
                               AND s.installation_id = :installation_id)
                 AND (SELECT count(*) FROM item_dependencies AS o
                      JOIN items AS other ON other.id = o.depends_on
                      WHERE o.item_id = items.id AND other.state <> 'done') = 1))
  AND (:agent_limits IS NULL OR NOT EXISTS (
      SELECT 1 FROM json_each(:agent_limits) AS lim
      WHERE lim.key = coalesce(items.agent, :default_agent)
        AND (SELECT count(*) FROM items AS r
             WHERE r.state = 'running' AND coalesce(r.agent, :default_agent) = lim.key)
            >= lim.value))
  AND (:label_limits IS NULL OR NOT EXISTS (
      SELECT 1 FROM item_labels AS l JOIN json_each(:label_limits) AS lim ON lim.key = l.label
      WHERE l.item_id = items.id
        AND (SELECT count(*) FROM items AS r
             WHERE r.state = 'running'
               AND EXISTS (SELECT 1 FROM item_labels AS rl
                           WHERE rl.item_id = r.id AND rl.label = l.label))
            >= lim.value))
ORDER BY items.priority, items.state = 'queued', items.queued_at, items.id
LIMIT 1;

-- name: lock_claim_limits
-- PostgreSQL serialises the claims that count running items here; SQLite's write lock already
-- does.
SELECT 1;

-- name: renew_lease
-- Extends the lease of a claim that is still held, never past the claim's renewal deadline.
UPDATE items
SET lease_expires_at = max(lease_expires_at, min(:proposed, renew_deadline))
WHERE id = :id
  AND state IN ('running', 'landing')
  AND generation = :generation
  AND claimed_by = :claimed_by
  AND lease_expires_at < renew_deadline;

-- name: renew_leases
-- renew_lease for a worker's claims at once (:batch, a JSON array of id, generation,
-- claimed_by and proposed): the claims it renewed, each with its new lease.
UPDATE items
SET lease_expires_at = max(items.lease_expires_at, min(wanted.proposed, items.renew_deadline))
FROM (SELECT json_extract(value, '$.id') AS id,
             json_extract(value, '$.generation') AS generation,
             json_extract(value, '$.claimed_by') AS claimed_by,
             json_extract(value, '$.proposed') AS proposed
      FROM json_each(:batch)) AS wanted
WHERE items.id = wanted.id
  AND items.state IN ('running', 'landing')
  AND items.generation = wanted.generation
  AND items.claimed_by = wanted.claimed_by
  AND items.lease_expires_at < items.renew_deadline
RETURNING items.id, items.generation, items.claimed_by, items.lease_expires_at;

-- name: create_migrations_table
CREATE TABLE IF NOT EXISTS wrighty_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at TEXT NOT NULL
) STRICT;

-- name: prune_workers
DELETE FROM workers WHERE last_heartbeat_at < :older_than;

-- name: select_circuits
SELECT circuits.*, items.id IS NOT NULL AS probe_running
FROM circuits
LEFT JOIN items ON items.id = circuits.probe_item
    AND items.state = 'running' AND items.claimed_by = circuits.probe_by
ORDER BY circuits.name;

-- name: claim_notice
-- The oldest pending notice that is due and not held by a live delivery claim, taken for
-- one deliverer until :until.
UPDATE notices
SET claimed_by = :deliverer, claim_expires_at = :until
WHERE id = (
    SELECT id FROM notices
    WHERE state = 'pending' AND next_attempt_at <= :now
      AND (claim_expires_at IS NULL OR claim_expires_at < :now)
    ORDER BY created_at, id
    LIMIT 1
)
RETURNING *;

-- name: select_notices
SELECT * FROM notices
WHERE state IN (SELECT value FROM json_each(:states))
ORDER BY created_at, id
LIMIT :limit;

-- name: lock_dependencies
-- An edit that adds dependencies, before it checks for a cycle: SQLite's write lock already
-- serialises such edits.
SELECT 1;

-- name: select_imported
-- The items that carry one of the import keys (a JSON array).
SELECT * FROM items WHERE import_key IN (SELECT value FROM json_each(:keys));

-- name: select_open_items
-- The board (Store.list_open_items): the items not finished, at most :limit, in the board's
-- order (needs-attention, review, landing, retry-scheduled, running, queued, todo; then priority
-- and id), cut
-- before anything else is read (items_by_state: done and cancelled items are never walked).
-- Each with when it entered its state (its latest event that is not an edit, :edited being an
-- edit's reason code; item_events_by_item), how many runs it has had and the id of its latest
-- (in select_runs' order; runs_by_item), its labels and the items it comes after with their
-- states, as JSON arrays.
WITH board AS (
    SELECT items.*,
           CASE state WHEN 'needs-attention' THEN 0 WHEN 'review' THEN 1 WHEN 'landing' THEN 2
                      WHEN 'retry-scheduled' THEN 3 WHEN 'running' THEN 4 WHEN 'queued' THEN 5
                      ELSE 6 END AS board_rank
    FROM items
    WHERE state IN ('needs-attention', 'review', 'landing', 'retry-scheduled', 'running', 'queued',
                    'todo')
    ORDER BY board_rank, priority, id
    LIMIT :limit
)
SELECT board.*,
       (SELECT e.at FROM item_events AS e
        WHERE e.item_id = board.id
          AND (e.reason_code IS NOT :edited OR e.from_state IS NOT e.to_state)
        ORDER BY e.id DESC LIMIT 1) AS since,
       (SELECT count(*) FROM runs WHERE runs.item_id = board.id) AS run_count,
       (SELECT runs.run_id FROM runs WHERE runs.item_id = board.id
        ORDER BY runs.started_at DESC, runs.run_id DESC LIMIT 1) AS last_run_id,
       (SELECT json_group_array(l.label)
        FROM (SELECT label FROM item_labels WHERE item_id = board.id ORDER BY label) AS l)
           AS labels_json,
       (SELECT json_group_array(json_array(a.depends_on, a.state))
        FROM (SELECT d.depends_on, dep.state
              FROM item_dependencies AS d LEFT JOIN items AS dep ON dep.id = d.depends_on
              WHERE d.item_id = board.id ORDER BY d.depends_on) AS a) AS after_json
FROM board
ORDER BY board.board_rank, board.priority, board.id;

-- name: select_runs_by_id
-- The runs named in :run_ids (a JSON array), by their primary key.
SELECT * FROM runs WHERE run_id IN (SELECT value FROM json_each(:run_ids));

-- name: insert_check_guarded
-- One check's evidence (docs/verify.md), written only while the item is still in the state,
-- generation and claim the caller read; a running item's only into that claim's open run, any
-- other's into none or one of its runs. Never rewritten: a second record at the same
-- verification and position changes nothing. seq, the order of insertion, under the write
-- lock.
INSERT INTO checks (verification_id, position, seq, item_id, run_id, generation, actor,
                    started_at, name, argv, exit_code, signal, timed_out, start_failure,
                    duration_seconds, output_tail, fails_on_base)
SELECT :verification_id, :position, (SELECT coalesce(max(seq), 0) + 1 FROM checks), :item_id,
       :run_id, :generation, :actor, :started_at, :name, :argv, :exit_code, :signal,
       :timed_out, :start_failure, :duration_seconds, :output_tail, :fails_on_base
WHERE EXISTS (SELECT 1 FROM items WHERE id = :item_id
              AND state = :state AND generation = :generation AND claimed_by IS :claimed_by)
  AND CASE WHEN :state = 'running'
      THEN EXISTS (SELECT 1 FROM runs WHERE runs.run_id = :run_id AND runs.item_id = :item_id
                   AND runs.generation = :generation AND runs.ended_at IS NULL)
      ELSE :run_id IS NULL OR EXISTS (SELECT 1 FROM runs WHERE run_id = :run_id
                                      AND item_id = :item_id)
      END
ON CONFLICT (verification_id, position) DO NOTHING;

-- name: select_verified_items
-- The outcome of each listed item's latest verification (:item_ids, a JSON array) that ended:
-- one by hand (no run), or one whose run has ended (a running verification's run is open).
-- Latest: the one whose first check was recorded last (seq, as select_checks orders them).
-- passed is 1 when every check of it exited 0 or failed as it fails on the item's base too
-- (docs/verify.md#checks-that-fail-on-the-base), 0 otherwise (checks_by_item).
WITH ended AS (
    SELECT c.item_id, c.verification_id, min(c.seq) AS first_seq,
           min(CASE WHEN c.start_failure IS NULL AND (c.exit_code = 0 OR c.fails_on_base = 1)
                    THEN 1 ELSE 0 END) AS passed
    FROM checks AS c LEFT JOIN runs AS r ON r.run_id = c.run_id
    WHERE c.item_id IN (SELECT value FROM json_each(:item_ids))
      AND (c.run_id IS NULL OR r.ended_at IS NOT NULL)
    GROUP BY c.item_id, c.verification_id
)
SELECT item_id, passed FROM ended
WHERE first_seq = (SELECT max(e.first_seq) FROM ended AS e WHERE e.item_id = ended.item_id);

-- name: insert_landing
-- An accept's landing (docs/landing.md), in the transaction of its guarded move: the next
-- place in the acceptance order (under the write lock); a new accept replaces the row.
INSERT INTO landings (item_id, seq, accepted_at, accepted_by, accepted_commit,
                      installation_id, target, step, target_commit, checked_commit, intent,
                      intent_from, attempt, catch_ups, updated_at)
VALUES (:item_id, (SELECT coalesce(max(seq), 0) + 1 FROM landings), :accepted_at, :accepted_by, :accepted_commit,
        :installation_id, :target, :step, :target_commit, :checked_commit, :intent,
        :intent_from, :attempt, :catch_ups, :updated_at)
ON CONFLICT (item_id) DO UPDATE
SET seq = excluded.seq, accepted_at = excluded.accepted_at, accepted_by = excluded.accepted_by,
    accepted_commit = excluded.accepted_commit, installation_id = excluded.installation_id,
    target = excluded.target, step = excluded.step, target_commit = excluded.target_commit,
    checked_commit = excluded.checked_commit, intent = excluded.intent,
    intent_from = excluded.intent_from, attempt = excluded.attempt,
    catch_ups = excluded.catch_ups, updated_at = excluded.updated_at;

-- name: lock_landing_lines
-- PostgreSQL serialises the landing claims of one installation here; SQLite's write lock
-- already does.
SELECT 1;
