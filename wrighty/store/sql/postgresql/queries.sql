-- Named SQL blocks for the PostgreSQL store (":name" parameters become psycopg's "%(name)s").
-- Parameters that appear only beside IS NULL carry a CAST, so PostgreSQL knows their type.
-- Each block starts with "-- name: <name>".

-- name: select_item_to_reap
-- The reaper's re-read of an expired claim, its row locked for the move; a row another
-- transaction holds (a worker stalled inside its renewal) is skipped, never waited for: no
-- row comes back, and the reaper tries again on its next pass.
SELECT * FROM items WHERE id = :id FOR UPDATE SKIP LOCKED;

-- name: select_items
-- :states is a JSON array of state names. Every item: select_all_items (an "IS NULL OR" here
-- would keep the planner from the items_by_state index).
SELECT * FROM items
WHERE state IN (SELECT jsonb_array_elements_text(CAST(:states AS jsonb)))
ORDER BY id;

-- name: select_items_moved_since
-- The morning view (domain/morning.py): the items whose latest event is at or after :moment
-- (fixed-width UTC text: text order is time order), found through items_by_update.
SELECT * FROM items
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
WHERE runs.item_id IN (SELECT CAST(jsonb_array_elements_text(CAST(:item_ids AS jsonb)) AS bigint))
  AND runs.started_at >= :since
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
  AND claimed_by IS NOT DISTINCT FROM CAST(:expected_claimed_by AS text)
  AND (CAST(:expired_before AS text) IS NULL OR lease_expires_at < :expired_before)
  -- A claim goes back to queued only if no agent process was recorded under it (an
  -- operator's requeue of a settled item is not a claim going back).
  AND NOT (CAST(:expected_state AS text) = 'running' AND CAST(:state AS text) = 'queued' AND EXISTS (
      SELECT 1 FROM runs
      WHERE item_id = :id AND generation = :expected_generation AND pid IS NOT NULL))
  -- An item goes to running only once every item it comes after is done: the claim's choice
  -- checks it too, and this re-check (a statement of its own, so a snapshot of its own under
  -- READ COMMITTED) also reads a dependency an edit committed after that choice was made.
  AND NOT (CAST(:state AS text) = 'running' AND EXISTS (
      SELECT 1 FROM item_dependencies AS d LEFT JOIN items AS dep ON dep.id = d.depends_on
      WHERE d.item_id = :id AND coalesce(dep.state, 'missing') <> 'done'
        -- completion.stack (:stack, a claim's): one waiting in review or landing with a
        -- branch will do, if it is the only one not done (docs/landing.md#stacked-items).
        AND NOT (CAST(:stack AS boolean) AND dep.state IN ('review', 'landing')
                 AND EXISTS (SELECT 1 FROM sessions AS s
                             WHERE s.item_id = dep.id AND s.branch IS NOT NULL)
                 AND (SELECT count(*) FROM item_dependencies AS o
                      JOIN items AS other ON other.id = o.depends_on
                      WHERE o.item_id = :id AND other.state <> 'done') = 1)));

-- name: select_next_claimable
-- The best eligible item (docs/scheduling.md), walked in the order of items_claim_order:
-- priority first (0 is the highest); within a priority, due retries before fresh work; then
-- the oldest queue entry (an unknown entry time counts as oldest) and the lowest id. With any
-- session an earlier run left; a row another claim holds is skipped, never waited for.
-- Eligible: queued, or a due retry (one with a local session only on the installation that
-- holds it); every item it comes after done (with :stack, all but one waiting in review or
-- landing with a branch here, read as stacked_on); and no concurrency limit of :agent_limits /
-- :label_limits (JSON objects of name -> maxConcurrent, or NULL) reached by the items running
-- now. With a limit, the claim first takes lock_claim_limits, so that these counts see every
-- claim that committed before it. The limit checks are plain lookups in the JSON under
-- "IS NULL OR" on purpose: as a top-level NOT EXISTS over jsonb_each the planner would make
-- them anti joins, guess that they leave one row, and sort every candidate instead of walking
-- items_claim_order (and its cost guess would start the JIT compiler, 300 ms a claim).
SELECT items.*, sessions.item_id AS session_item_id, sessions.vendor AS session_vendor,
       sessions.session_id AS session_session_id, sessions.workspace AS session_workspace,
       sessions.installation_id AS session_installation_id,
       sessions.branch AS session_branch, sessions.base_commit AS session_base_commit,
       (SELECT json_build_array(dep.id, s.branch)::text FROM item_dependencies AS d
        JOIN items AS dep ON dep.id = d.depends_on JOIN sessions AS s ON s.item_id = dep.id
        WHERE CAST(:stack AS boolean) AND d.item_id = items.id AND dep.state IN ('review', 'landing')) AS stacked_on
FROM items
LEFT JOIN sessions ON sessions.item_id = items.id
WHERE items.state IN ('queued', 'retry-scheduled')
  AND (items.state = 'queued'
       OR (items.not_before <= :now
           AND (sessions.session_id IS NULL OR sessions.installation_id = :installation_id)))
  AND (CAST(:item_id AS bigint) IS NULL OR items.id = :item_id)
  AND (CAST(:agent AS text) IS NULL OR coalesce(items.agent, :default_agent) = :agent)
  AND NOT EXISTS (
      SELECT 1 FROM item_dependencies AS d LEFT JOIN items AS dep ON dep.id = d.depends_on
      WHERE d.item_id = items.id AND coalesce(dep.state, 'missing') <> 'done'
        -- completion.stack: the one item not done, waiting in review or landing with a branch
        -- of this installation, will do (docs/landing.md#stacked-items).
        AND NOT (CAST(:stack AS boolean) AND dep.state IN ('review', 'landing')
                 AND EXISTS (SELECT 1 FROM sessions AS s
                             WHERE s.item_id = dep.id AND s.branch IS NOT NULL
                               AND s.installation_id = :installation_id)
                 AND (SELECT count(*) FROM item_dependencies AS o
                      JOIN items AS other ON other.id = o.depends_on
                      WHERE o.item_id = items.id AND other.state <> 'done') = 1))
  AND (CAST(:agent_limits AS jsonb) IS NULL
       OR CAST(:agent_limits AS jsonb) ->> coalesce(items.agent, CAST(:default_agent AS text)) IS NULL
       OR (SELECT count(*) FROM items AS r
           WHERE r.state = 'running'
             AND coalesce(r.agent, CAST(:default_agent AS text))
                 = coalesce(items.agent, CAST(:default_agent AS text)))
          < CAST(CAST(:agent_limits AS jsonb) ->> coalesce(items.agent, CAST(:default_agent AS text))
                 AS bigint))
  AND (CAST(:label_limits AS jsonb) IS NULL OR NOT EXISTS (
      SELECT 1 FROM item_labels AS l
      WHERE l.item_id = items.id
        AND CAST(:label_limits AS jsonb) ->> l.label IS NOT NULL
        AND (SELECT count(*) FROM items AS r
             WHERE r.state = 'running'
               AND EXISTS (SELECT 1 FROM item_labels AS rl
                           WHERE rl.item_id = r.id AND rl.label = l.label))
            >= CAST(CAST(:label_limits AS jsonb) ->> l.label AS bigint)))
ORDER BY items.priority, (items.state = 'queued'), items.queued_at NULLS FIRST, items.id
LIMIT 1
FOR UPDATE OF items SKIP LOCKED;

-- name: lock_claim_limits
-- A claim under a concurrency limit, before it counts the running items. Under READ COMMITTED
-- two claims that count at once would each see the other's item still queued (neither has
-- committed), each find the limit not reached, and together pass it: SKIP LOCKED gives them
-- different rows, so no row lock makes one wait. This lock, held until the claim commits, makes
-- them take turns: the second counts (in its next statement, so in a snapshot taken after the
-- first committed) the item the first claimed. Claims with no limit never take it. One key per
-- schema, so stores sharing a database do not wait on each other.
-- It also turns the JIT compiler off for the rest of the claim: a claim query never runs long
-- enough to gain from it, and compiling one costs more than the claim.
SELECT pg_advisory_xact_lock(hashtext('wrighty: claim limits in ' || current_schema())),
       set_config('jit', 'off', true);

-- name: renew_lease
-- Extends the lease of a claim that is still held, never past the claim's renewal deadline.
UPDATE items
SET lease_expires_at = greatest(lease_expires_at, least(:proposed, renew_deadline))
WHERE id = :id
  AND state IN ('running', 'landing')
  AND generation = :generation
  AND claimed_by = :claimed_by
  AND lease_expires_at < renew_deadline;

-- name: renew_leases
-- renew_lease for a worker's claims at once (:batch, a JSON array of id, generation,
-- claimed_by and proposed), in one statement: the claims it renewed, each with its new lease.
UPDATE items
SET lease_expires_at = greatest(items.lease_expires_at,
                                least(wanted.proposed, items.renew_deadline))
FROM (SELECT * FROM jsonb_to_recordset(CAST(:batch AS jsonb))
          AS asked(id bigint, generation bigint, claimed_by text, proposed text)
      ORDER BY id) AS wanted
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
);

-- name: select_store_time
-- The database's clock, the fleet's time (docs/fleet.md): the reading's own instant.
SELECT clock_timestamp() AS store_time;

-- name: prune_workers
-- A row another transaction holds (its worker stalled inside a heartbeat) is left for the next
-- prune rather than waited for.
DELETE FROM workers
WHERE worker_id IN (SELECT worker_id FROM workers WHERE last_heartbeat_at < :older_than
                    FOR UPDATE SKIP LOCKED);

-- name: lock_migrations
-- Two machines opening a new database together: one migrates, the other waits, then finds
-- nothing left to do.
SELECT pg_advisory_xact_lock(hashtext('wrighty: migrations'));

-- name: select_current_schema
-- The schema new tables go to (NULL when no schema of the search_path exists yet).
SELECT current_schema() AS schema, current_setting('search_path') AS search_path;

-- name: lift_call_limits
-- A migration's transaction: no statement or lock limit of the session's (a big table may
-- take a while to migrate; another process's migration is waited for).
SELECT set_config('statement_timeout', '0', true), set_config('lock_timeout', '0', true);

-- name: migrations_table_exists
SELECT to_regclass('wrighty_migrations') IS NOT NULL AS present;

-- name: select_circuits
SELECT circuits.*, items.id IS NOT NULL AS probe_running
FROM circuits
LEFT JOIN items ON items.id = circuits.probe_item
    AND items.state = 'running' AND items.claimed_by = circuits.probe_by
ORDER BY circuits.name COLLATE "C";

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
    FOR UPDATE SKIP LOCKED
)
RETURNING *;

-- name: select_notices
SELECT * FROM notices
WHERE state IN (SELECT value FROM json_array_elements_text(CAST(:states AS json)))
ORDER BY created_at, id
LIMIT :limit;

-- name: notify_work
-- An item became claimable: tell the listening workers (worker.wakeUps). PostgreSQL delivers
-- the notification when the transaction commits, and never if it rolls back. The channel is
-- the database's: the payload names the store's schema, and a listener hears only its own.
SELECT pg_notify('wrighty_work', json_build_object(
    'schema', current_schema(), 'item_id', CAST(:item_id AS bigint),
    'state', CAST(:state AS text), 'not_before', CAST(:not_before AS text))::text);

-- name: lock_dependencies
-- An edit that adds dependencies, before it checks for a cycle: two edits that each add one
-- edge of a cycle would, under READ COMMITTED, each miss the other's uncommitted edge.
SELECT pg_advisory_xact_lock(hashtext('wrighty: dependencies in ' || current_schema()));

-- name: select_imported
-- The items that carry one of the import keys (a JSON array).
SELECT * FROM items WHERE import_key IN (SELECT value FROM json_array_elements_text(CAST(:keys AS json)));

-- name: select_open_items
-- The board (Store.list_open_items): the items not finished, at most :limit, in the board's
-- order (needs-attention, review, landing, retry-scheduled, running, queued, todo; then priority
-- and id), cut
-- before anything else is read (items_by_state: done and cancelled items are never walked).
-- Each with when it entered its state (its latest event that is not an edit, :edited being an
-- edit's reason code; item_events_by_item), how many runs it has had and the id of its latest
-- (in select_runs' order; runs_by_item), its labels and the items it comes after with their
-- states, as JSON arrays (text, as SQLite gives them; never NULL). MATERIALIZED on purpose:
-- inlined, the planner would weigh the per-row subqueries against a parallel plan's per-worker
-- row guess and read every item (done ones too) with a parallel seq scan instead of the index.
WITH board AS MATERIALIZED (
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
          AND (e.reason_code IS DISTINCT FROM CAST(:edited AS text)
               OR e.from_state IS DISTINCT FROM e.to_state)
        ORDER BY e.id DESC LIMIT 1) AS since,
       (SELECT count(*) FROM runs WHERE runs.item_id = board.id) AS run_count,
       (SELECT runs.run_id FROM runs WHERE runs.item_id = board.id
        ORDER BY runs.started_at DESC, runs.run_id DESC LIMIT 1) AS last_run_id,
       (SELECT CAST(coalesce(json_agg(l.label ORDER BY l.label), '[]') AS text)
        FROM item_labels AS l WHERE l.item_id = board.id) AS labels_json,
       (SELECT CAST(coalesce(json_agg(json_build_array(d.depends_on, dep.state)
                                      ORDER BY d.depends_on), '[]') AS text)
        FROM item_dependencies AS d LEFT JOIN items AS dep ON dep.id = d.depends_on
        WHERE d.item_id = board.id) AS after_json
FROM board
ORDER BY board.board_rank, board.priority, board.id;

-- name: select_runs_by_id
-- The runs named in :run_ids (a JSON array), by their primary key.
SELECT * FROM runs
WHERE run_id IN (SELECT json_array_elements_text(CAST(:run_ids AS json)));

-- name: insert_check_guarded
-- One check's evidence (docs/verify.md), written only while the item is still in the state,
-- generation and claim the caller read; a running item's only into that claim's open run, any
-- other's into none or one of its runs. Never rewritten: a second record at the same
-- verification and position changes nothing. seq, the order of insertion, is its identity.
INSERT INTO checks (verification_id, position, item_id, run_id, generation, actor, started_at,
                    name, argv, exit_code, signal, timed_out, start_failure, duration_seconds,
                    output_tail, fails_on_base)
SELECT :verification_id, :position, :item_id, :run_id, :generation, :actor, :started_at,
       :name, :argv, :exit_code, :signal, :timed_out, :start_failure, :duration_seconds,
       :output_tail, :fails_on_base
WHERE EXISTS (SELECT 1 FROM items WHERE id = :item_id
              AND state = :state AND generation = :generation
              AND claimed_by IS NOT DISTINCT FROM CAST(:claimed_by AS text))
  AND CASE WHEN CAST(:state AS text) = 'running'
      THEN EXISTS (SELECT 1 FROM runs WHERE runs.run_id = :run_id AND runs.item_id = :item_id
                   AND runs.generation = :generation AND runs.ended_at IS NULL)
      ELSE CAST(:run_id AS text) IS NULL OR EXISTS (SELECT 1 FROM runs WHERE run_id = :run_id
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
           min(CASE WHEN c.start_failure IS NULL AND (c.exit_code = 0 OR c.fails_on_base)
                    THEN 1 ELSE 0 END) AS passed
    FROM checks AS c LEFT JOIN runs AS r ON r.run_id = c.run_id
    WHERE c.item_id IN (SELECT CAST(value AS bigint)
                        FROM json_array_elements_text(CAST(:item_ids AS json)) AS value)
      AND (c.run_id IS NULL OR r.ended_at IS NOT NULL)
    GROUP BY c.item_id, c.verification_id
)
SELECT item_id, passed FROM ended
WHERE first_seq = (SELECT max(e.first_seq) FROM ended AS e WHERE e.item_id = ended.item_id);

-- name: insert_landing
-- An accept's landing (docs/landing.md), in the transaction of its guarded move: the next
-- place in the acceptance order; a new accept replaces the row.
INSERT INTO landings (item_id, seq, accepted_at, accepted_by, accepted_commit,
                      installation_id, target, step, target_commit, checked_commit, intent,
                      intent_from, attempt, catch_ups, updated_at)
VALUES (:item_id, nextval('landings_seq'), :accepted_at, :accepted_by, :accepted_commit,
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
-- The landing claims of one installation take turns (held until the claim commits): two
-- landers that read the lines at once would each see the head of a line unclaimed.
SELECT pg_advisory_xact_lock(hashtext('wrighty-landing:' || :installation_id));
