-- Named SQL blocks that both stores run as written. Each block starts with
-- "-- name: <name>". A dialect's own queries.sql holds the blocks whose text must differ
-- there; a name in both files takes the dialect's block. Where PostgreSQL cannot tell a
-- parameter's type from where it stands (beside IS NULL, as a CASE's condition, in a coalesce
-- or a bare SELECT), it carries a CAST; SQLite reads the same value through it.

-- name: insert_item
INSERT INTO items (title, body, agent, timeout_seconds, workspace, state, queued_at,
                   created_at, updated_at, max_cost_usd, max_tokens, priority, import_key,
                   import_fingerprint, verify_checks)
VALUES (:title, :body, :agent, :timeout_seconds, :workspace, :state, :queued_at,
        :created_at, :created_at, :max_cost_usd, :max_tokens, :priority, :import_key,
        :import_fingerprint, :verify_checks)
ON CONFLICT (import_key) WHERE import_key IS NOT NULL DO NOTHING
RETURNING id;

-- name: insert_event
INSERT INTO item_events (item_id, at, actor, generation, from_state, to_state,
                         reason_code, reason)
VALUES (:item_id, :at, :actor, :generation, :from_state, :to_state, :reason_code, :reason);

-- name: select_item
SELECT * FROM items WHERE id = :id;

-- name: select_all_items
SELECT * FROM items ORDER BY id;

-- name: select_events
SELECT * FROM item_events WHERE item_id = :item_id ORDER BY id;

-- name: select_runs
SELECT * FROM runs WHERE item_id = :item_id ORDER BY started_at, run_id;

-- name: select_run
SELECT * FROM runs WHERE run_id = :run_id;

-- name: select_session
SELECT * FROM sessions WHERE item_id = :item_id;

-- name: select_sessions_of_installation
SELECT * FROM sessions WHERE installation_id = :installation_id ORDER BY item_id;

-- name: end_open_runs
-- The run of a claim ends together with the move that releases the claim.
UPDATE runs
SET ended_at = :ended_at,
    outcome_class = :outcome_class,
    confidence = :confidence,
    exit_code = :exit_code,
    signal = :signal,
    diagnostic = :diagnostic,
    -- the usage as last read, when the settlement carries it (the reaper's does not)
    usage = CASE WHEN CAST(:has_usage AS boolean) THEN :usage ELSE usage END,
    input_tokens = CASE WHEN CAST(:has_usage AS boolean) THEN :input_tokens ELSE input_tokens END,
    output_tokens = CASE WHEN CAST(:has_usage AS boolean) THEN :output_tokens ELSE output_tokens END,
    cache_read_tokens = CASE WHEN CAST(:has_usage AS boolean) THEN :cache_read_tokens ELSE cache_read_tokens END,
    cache_write_tokens = CASE WHEN CAST(:has_usage AS boolean) THEN :cache_write_tokens ELSE cache_write_tokens END,
    cost_usd = CASE WHEN CAST(:has_usage AS boolean) THEN :cost_usd ELSE cost_usd END,
    cost_source = CASE WHEN CAST(:has_usage AS boolean) THEN :cost_source ELSE cost_source END,
    models = CASE WHEN CAST(:has_usage AS boolean) THEN :models ELSE models END,
    turns = CASE WHEN CAST(:has_usage AS boolean) THEN :turns ELSE turns END,
    api_ms = CASE WHEN CAST(:has_usage AS boolean) THEN :api_ms ELSE api_ms END
WHERE item_id = :item_id AND generation = :generation AND ended_at IS NULL;

-- name: select_claim
SELECT lease_expires_at FROM items
WHERE id = :id AND state IN ('running', 'landing') AND generation = :generation
  AND claimed_by = :claimed_by;

-- name: insert_run_guarded
-- A run is recorded only under a claim that is still held; the run as recorded.
INSERT INTO runs (run_id, item_id, generation, attempt, kind, worker_id, installation_id,
                  started_at, session_id, claim_token, agent)
SELECT :run_id, :item_id, :generation,
       (SELECT count(*) + 1 FROM runs WHERE item_id = :item_id),
       :kind, :worker_id, :installation_id, :started_at, :session_id, :claim_token, :agent
WHERE EXISTS (SELECT 1 FROM items WHERE id = :item_id AND state = 'running'
              AND generation = :generation AND claimed_by = :claimed_by)
RETURNING *;

-- name: record_process_guarded
UPDATE runs
SET pid = :pid, process_started_at = :process_started_at
WHERE run_id = :run_id AND item_id = :item_id AND generation = :generation
  AND ended_at IS NULL
  AND EXISTS (SELECT 1 FROM items WHERE id = :item_id AND state = 'running'
              AND generation = :generation AND claimed_by = :claimed_by);

-- name: record_agent_report_guarded
-- From inside a run: lands only while that run's claim is still held (a stale token from an
-- earlier generation, or a run that already ended, changes nothing).
UPDATE runs
SET agent_report = :report, agent_reason = :reason, agent_resets_at = :resets_at
WHERE run_id = :run_id
  AND claim_token = :claim_token
  AND ended_at IS NULL
  AND EXISTS (SELECT 1 FROM items WHERE items.id = runs.item_id AND items.state = 'running'
              AND items.generation = runs.generation AND items.claimed_by = runs.worker_id);

-- name: upsert_session_guarded
INSERT INTO sessions (item_id, vendor, session_id, workspace, installation_id, branch,
                      base_commit, updated_at)
SELECT :item_id, :vendor, :session_id, :workspace, :installation_id, :branch, :base_commit,
       :updated_at
WHERE EXISTS (SELECT 1 FROM items WHERE id = :item_id AND state = 'running'
              AND generation = :generation AND claimed_by = :claimed_by)
ON CONFLICT (item_id) DO UPDATE
SET vendor = excluded.vendor,
    session_id = excluded.session_id,
    workspace = excluded.workspace,
    installation_id = excluded.installation_id,
    -- a run that brings no branch (a resume) keeps the one the worktree was made with
    branch = coalesce(excluded.branch, sessions.branch),
    base_commit = coalesce(excluded.base_commit, sessions.base_commit),
    updated_at = excluded.updated_at;

-- name: record_run_session
-- Run inside the transaction whose guarded session upsert succeeded.
UPDATE runs SET session_id = :session_id
WHERE run_id = :run_id AND item_id = :item_id AND generation = :generation AND ended_at IS NULL;

-- name: select_expired_claims
SELECT * FROM items
WHERE state = 'running' AND lease_expires_at < :now
ORDER BY lease_expires_at, id
LIMIT :limit;

-- name: select_reap_facts
SELECT
    (SELECT count(*) FROM runs WHERE item_id = :item_id AND generation = :generation)
        AS runs_recorded,
    (SELECT session_id FROM sessions WHERE item_id = :item_id) AS session_id,
    (SELECT from_state FROM item_events
     WHERE item_id = :item_id AND generation = :generation AND to_state = 'running'
     ORDER BY id DESC LIMIT 1) AS claimed_from;

-- name: select_applied_migrations
SELECT version FROM wrighty_migrations ORDER BY version;

-- name: insert_migration
INSERT INTO wrighty_migrations (version, name, applied_at) VALUES (:version, :name, :applied_at);

-- name: select_state_counts
SELECT state, count(*) AS n FROM items GROUP BY state;

-- name: select_waiting_by_agent
-- The items that wait for a worker of their agent (queued or retry-scheduled), by the agent
-- they name (null: worker.defaultAgent's).
SELECT agent, count(*) AS n FROM items WHERE state IN ('queued', 'retry-scheduled') GROUP BY agent;

-- name: select_queue_figures
-- Waiting = queued, or a retry that is due, and waiting for no item it comes after. Blocked =
-- queued or retry-scheduled, and an item it comes after (itself, or one of those it comes
-- after, and so on) is cancelled, needs attention or does not exist, or it comes after itself
-- (longer cycles, which only a store written by hand holds, are counted by services/status.py).
-- Verification's figures, over every check and run ever recorded (counters, never lowered):
-- the checks, those that passed (started, exit code 0) and those that could not start
-- (checks_by_result; the rest ran and failed), and the fix turns, runs of kind 'fix'
-- (runs_fix_turns). The oldest review wait: when the item in review longest entered it, the
-- time of its last event into review (a same-state event, such as a failed integration, leaves
-- its wait as it was; its updated_at would not), read by item_events_by_item; its updated_at
-- for an item whose history has no such event (a row written by hand). The oldest landing
-- wait the same way, from its last event into landing (a lander's claim or release, landing ->
-- landing, leaves it). Read in the same transaction as the counts.
WITH RECURSIVE
waiting_now AS (
    SELECT queued_at FROM items
    WHERE (state = 'queued' OR (state = 'retry-scheduled' AND not_before <= :now))
      AND NOT EXISTS (
          SELECT 1 FROM item_dependencies AS d LEFT JOIN items AS dep ON dep.id = d.depends_on
          WHERE d.item_id = items.id AND coalesce(dep.state, 'missing') <> 'done')
),
stuck (id) AS (
    SELECT id FROM items WHERE state IN ('cancelled', 'needs-attention')
    UNION
    SELECT d.item_id FROM item_dependencies AS d LEFT JOIN items AS dep ON dep.id = d.depends_on
    WHERE dep.id IS NULL OR d.item_id = d.depends_on
    UNION
    SELECT d.item_id FROM item_dependencies AS d JOIN stuck ON d.depends_on = stuck.id
)
SELECT
    (SELECT count(*) FROM waiting_now) AS waiting,
    (SELECT min(queued_at) FROM waiting_now) AS oldest_queued_at,
    (SELECT count(*) FROM waiting_now WHERE queued_at IS NULL) AS unknown_queue_wait,
    (SELECT count(*) FROM items WHERE state = 'running' AND lease_expires_at < :now)
        AS expired_leases,
    (SELECT min(not_before) FROM items WHERE state = 'retry-scheduled') AS retry_next_due,
    (SELECT min(coalesce(
        (SELECT e.at FROM item_events AS e
         WHERE e.item_id = items.id AND e.to_state = 'review' AND e.from_state <> 'review'
         ORDER BY e.id DESC LIMIT 1),
        updated_at))
     FROM items WHERE state = 'review') AS oldest_review_at,
    (SELECT min(coalesce(
        (SELECT e.at FROM item_events AS e
         WHERE e.item_id = items.id AND e.to_state = 'landing' AND e.from_state <> 'landing'
         ORDER BY e.id DESC LIMIT 1),
        updated_at))
     FROM items WHERE state = 'landing') AS oldest_landing_at,
    (SELECT count(*) FROM items
     WHERE state IN ('queued', 'retry-scheduled')
       AND EXISTS (
           SELECT 1 FROM item_dependencies AS d LEFT JOIN items AS dep ON dep.id = d.depends_on
           WHERE d.item_id = items.id AND coalesce(dep.state, 'missing') <> 'done')) AS waiting_on_dependencies,
    (SELECT count(*) FROM items
     WHERE state IN ('queued', 'retry-scheduled') AND id IN (SELECT id FROM stuck)) AS blocked,
    (SELECT count(*) FROM checks) AS checks,
    (SELECT count(*) FROM checks WHERE start_failure IS NULL AND exit_code = 0) AS checks_passed,
    (SELECT count(*) FROM checks WHERE start_failure IS NOT NULL) AS checks_not_started,
    (SELECT count(*) FROM runs WHERE kind = 'fix') AS fix_turns;

-- name: upsert_worker
INSERT INTO workers (worker_id, label, installation_id, pid, process_started_at, version, state,
                     items, started_at, last_heartbeat_at, agent, clock_offset_seconds,
                     held_reason, waiting_for)
VALUES (:worker_id, :label, :installation_id, :pid, :process_started_at, :version, :state,
        :items, :started_at, :last_heartbeat_at, :agent, :clock_offset_seconds, :held_reason,
        :waiting_for)
ON CONFLICT (worker_id) DO UPDATE
SET state = excluded.state,
    items = excluded.items,
    last_heartbeat_at = excluded.last_heartbeat_at,
    clock_offset_seconds = excluded.clock_offset_seconds,
    held_reason = excluded.held_reason,
    waiting_for = excluded.waiting_for;

-- name: delete_worker
DELETE FROM workers WHERE worker_id = :worker_id;

-- name: select_workers
SELECT * FROM workers ORDER BY started_at, worker_id;

-- name: select_circuit
-- probe_running: the probe's item is running under its holder's claim, read with the row.
SELECT circuits.*, items.id IS NOT NULL AS probe_running
FROM circuits
LEFT JOIN items ON items.id = circuits.probe_item
    AND items.state = 'running' AND items.claimed_by = circuits.probe_by
WHERE circuits.name = :name;

-- name: insert_circuit
-- The first write of a circuit (the caller read no row): lands only if there is still none.
INSERT INTO circuits (name, version, opened_at, until, reason, failures, probe_by, probe_item,
                      probe_expires_at, updated_at)
VALUES (:name, :version, :opened_at, :until, :reason, :failures, :probe_by, :probe_item,
        :probe_expires_at, :updated_at)
ON CONFLICT (name) DO NOTHING;

-- name: update_circuit_guarded
-- Compare-and-set on the version the caller read: a writer that read an older version (a
-- second worker taking the probe, a stale opening or closing) changes nothing.
UPDATE circuits
SET version = :version,
    opened_at = :opened_at,
    until = :until,
    reason = :reason,
    failures = :failures,
    probe_by = :probe_by,
    probe_item = :probe_item,
    probe_expires_at = :probe_expires_at,
    updated_at = :updated_at
WHERE name = :name
  AND version = :expected_version;

-- name: record_usage_guarded
-- The open run's usage as its worker last read it, under the claim that runs it.
UPDATE runs
SET
    usage = :usage,
    input_tokens = :input_tokens,
    output_tokens = :output_tokens,
    cache_read_tokens = :cache_read_tokens,
    cache_write_tokens = :cache_write_tokens,
    cost_usd = :cost_usd,
    cost_source = :cost_source,
    models = :models,
    turns = :turns,
    api_ms = :api_ms
WHERE run_id = :run_id
  AND item_id = :item_id
  AND generation = :generation
  AND ended_at IS NULL
  AND EXISTS (SELECT 1 FROM items WHERE id = :item_id AND state = 'running'
              AND generation = :generation AND claimed_by = :claimed_by);

-- name: report_usage_guarded
-- `wrighty report-usage` from inside a run: like an agent's report, it lands only while that
-- run's claim is still held and the token is the run's.
UPDATE runs
SET
    usage = :usage,
    input_tokens = :input_tokens,
    output_tokens = :output_tokens,
    cache_read_tokens = :cache_read_tokens,
    cache_write_tokens = :cache_write_tokens,
    cost_usd = :cost_usd,
    cost_source = :cost_source,
    models = :models,
    turns = :turns,
    api_ms = :api_ms
WHERE run_id = :run_id
  AND claim_token = :claim_token
  AND ended_at IS NULL
  AND EXISTS (SELECT 1 FROM items WHERE items.id = runs.item_id AND items.state = 'running'
              AND items.generation = runs.generation AND items.claimed_by = runs.worker_id);

-- name: select_ledger
-- Every run's usage started at or after :since (the epoch for all), with the agent that ran it
-- (an older run's: its item's agent, or the default); in the order runs_by_start keeps them.
SELECT runs.run_id, runs.item_id, runs.started_at,
       coalesce(runs.agent, items.agent, CAST(:default_agent AS text)) AS agent,
       runs.usage, runs.input_tokens, runs.output_tokens, runs.cache_read_tokens, runs.cache_write_tokens, runs.cost_usd, runs.cost_source, runs.models, runs.turns, runs.api_ms
FROM runs
JOIN items ON items.id = runs.item_id
WHERE runs.started_at >= :since
ORDER BY runs.started_at, runs.run_id;

-- name: select_item_ledger
-- One item's runs, as select_ledger reads them (runs_by_item finds them).
SELECT runs.run_id, runs.item_id, runs.started_at,
       coalesce(runs.agent, items.agent, CAST(:default_agent AS text)) AS agent,
       runs.usage, runs.input_tokens, runs.output_tokens, runs.cache_read_tokens, runs.cache_write_tokens, runs.cost_usd, runs.cost_source, runs.models, runs.turns, runs.api_ms
FROM runs
JOIN items ON items.id = runs.item_id
WHERE runs.item_id = :item_id AND runs.started_at >= :since
ORDER BY runs.started_at, runs.run_id;

-- name: select_agent_spend
-- What an agent's runs started since a time spent (the claim's budget check reads it in the
-- claim's transaction; a run still going counts with its usage as last recorded).
SELECT coalesce(sum(input_tokens), 0) AS input_tokens,
       coalesce(sum(output_tokens), 0) AS output_tokens,
       coalesce(sum(cache_read_tokens), 0) AS cache_read_tokens,
       coalesce(sum(cache_write_tokens), 0) AS cache_write_tokens,
       sum(cost_usd) AS cost_usd,
       count(CASE WHEN cost_source = 'estimated' THEN 1 END) AS estimated
FROM runs
WHERE agent = :agent AND started_at >= :since;

-- name: insert_notice
-- A notice, in the transaction of the change it reports.
INSERT INTO notices (id, created_at, event, events, item_id, reason_code, payload,
                     next_attempt_at)
VALUES (:id, :created_at, :event, :events, :item_id, :reason_code, :payload, :created_at);

-- name: insert_notice_once
-- A notice that no item's change makes (a worker gone quiet), under an id that says what it
-- tells: added once, however many deliverers see the same thing.
INSERT INTO notices (id, created_at, event, events, item_id, reason_code, payload,
                     next_attempt_at)
VALUES (:id, :created_at, :event, :events, :item_id, :reason_code, :payload, :created_at)
ON CONFLICT (id) DO NOTHING;

-- name: make_notices_due
-- `notify flush`: every pending notice waiting for a retry is due now (its claim, if any, is
-- left alone: the holder's outcome is written under it).
UPDATE notices SET next_attempt_at = :now
WHERE state = 'pending' AND next_attempt_at > :now;

-- name: finish_notice_guarded
-- The attempt's outcome, written only under the claim that made it (the same deliverer and
-- the same claim expiry: a claim that expired and was taken again writes nothing).
UPDATE notices
SET state = :state, attempts = :attempts, next_attempt_at = :next_attempt_at,
    delivered_to = :delivered_to, last_error = :last_error, finished_at = :finished_at,
    claimed_by = NULL, claim_expires_at = NULL
WHERE id = :id AND claimed_by = :deliverer AND claim_expires_at = :claimed_until;

-- name: renew_notice_claim
-- A deliverer still sending a notice (one of its sinks is slow) keeps its claim, and records the
-- sinks that have it so far; only under the claim it holds (the same deliverer and expiry).
UPDATE notices
SET claim_expires_at = :until, delivered_to = :delivered_to
WHERE id = :id AND claimed_by = :deliverer AND claim_expires_at = :claimed_until;

-- name: prune_notices
DELETE FROM notices WHERE state = 'delivered' AND finished_at < :before;

-- name: select_outbox_figures
SELECT count(CASE WHEN state = 'pending' THEN 1 END) AS pending,
       min(CASE WHEN state = 'pending' THEN created_at END) AS oldest_pending_at,
       count(CASE WHEN state = 'given-up' THEN 1 END) AS given_up
FROM notices;

-- name: select_next_retry_after
-- When an idle worker should look again for a retry (worker.wakeUps): the earliest due time
-- still to come (items_by_not_before).
SELECT min(not_before) AS not_before FROM items
WHERE state = 'retry-scheduled' AND not_before > :after;

-- name: insert_dependency_guarded
-- :item_id comes after :depends_on: written only if that item exists and does not already
-- come after :item_id (itself, or through the items it comes after): no cycle ever lands.
INSERT INTO item_dependencies (item_id, depends_on)
SELECT :item_id, :depends_on
WHERE EXISTS (SELECT 1 FROM items WHERE id = :depends_on)
  AND NOT EXISTS (
      WITH RECURSIVE upstream (id) AS (
          SELECT CAST(:depends_on AS bigint)
          UNION
          SELECT d.depends_on FROM item_dependencies AS d JOIN upstream ON d.item_id = upstream.id
      )
      SELECT 1 FROM upstream WHERE id = :item_id)
ON CONFLICT (item_id, depends_on) DO NOTHING;

-- name: delete_dependency
DELETE FROM item_dependencies WHERE item_id = :item_id AND depends_on = :depends_on;

-- name: insert_label
INSERT INTO item_labels (item_id, label) VALUES (:item_id, :label)
ON CONFLICT (item_id, label) DO NOTHING;

-- name: select_dependencies
-- Every dependency (or those of one item, either way round), with the state of the item
-- depended on.
SELECT d.item_id, d.depends_on, dep.state AS depends_on_state
FROM item_dependencies AS d LEFT JOIN items AS dep ON dep.id = d.depends_on
WHERE CAST(:item_id AS bigint) IS NULL OR d.item_id = :item_id OR d.depends_on = :item_id
ORDER BY d.item_id, d.depends_on;

-- name: select_labels
SELECT item_id, label FROM item_labels
WHERE CAST(:item_id AS bigint) IS NULL OR item_id = :item_id
ORDER BY item_id, label;

-- name: select_base_check
-- A check's result on a base commit (docs/verify.md#checks-that-fail-on-the-base), if it was run
-- there: by the commit, the check's name and its command's key.
SELECT * FROM base_checks
WHERE base_commit = :base_commit AND check_name = :check_name AND check_key = :check_key;

-- name: insert_base_check
-- A check's result on a base commit, kept for good (a commit does not change). Two workers
-- that ran it at once: the first write wins, the second changes nothing.
INSERT INTO base_checks (base_commit, check_name, check_key, failed, ending, output_tail,
                         checked_at)
VALUES (:base_commit, :check_name, :check_key, :failed, :ending, :output_tail, :checked_at)
ON CONFLICT (base_commit, check_name, check_key) DO NOTHING;

-- name: select_checks
-- An item's check evidence (checks_by_item): its verifications in the order the first check
-- of each was recorded (seq, the order of insertion: no clock decides it), each in its order.
SELECT checks.*, min(seq) OVER (PARTITION BY verification_id) AS first_seq
FROM checks
WHERE item_id = :item_id
ORDER BY first_seq, position;

-- name: select_landing
SELECT * FROM landings WHERE item_id = :item_id;

-- name: update_landing
-- A landing's step, under the claim whose guarded move is in the same transaction.
UPDATE landings
SET step = :step, target_commit = :target_commit, checked_commit = :checked_commit,
    intent = :intent, intent_from = :intent_from, attempt = :attempt, catch_ups = :catch_ups,
    updated_at = :updated_at
WHERE item_id = :item_id;

-- name: update_session_base
-- The item's base once its branch was brought up to date with its target (docs/landing.md),
-- in the transaction of the landing claim's guarded move.
UPDATE sessions SET base_commit = :base_commit, updated_at = :updated_at
WHERE item_id = :item_id;

-- name: select_landing_lines
-- The lines of one installation's targets, in acceptance order (docs/landing.md): the landing
-- items, and those in the fix turn their landing sent them to (they keep their place); the
-- first of each target is the head of its line. waits_for_dependency: an item it comes after
-- is not done yet (completion.stack: a dependent accepted before its predecessor landed waits,
-- and the line goes on past it; docs/landing.md#stacked-items).
SELECT landings.item_id, landings.target, landings.seq, items.state, items.claimed_by,
       items.lease_expires_at,
       EXISTS (SELECT 1 FROM item_dependencies AS d LEFT JOIN items AS dep ON dep.id = d.depends_on
               WHERE d.item_id = landings.item_id AND coalesce(dep.state, 'missing') <> 'done')
           AS waits_for_dependency
FROM landings JOIN items ON items.id = landings.item_id
WHERE (items.state = 'landing'
       OR (items.state IN ('retry-scheduled', 'running') AND landings.step = 'fix-turn'))
  AND landings.installation_id = :installation_id
ORDER BY landings.seq;

-- name: end_landing_fix_turn
-- An item left the fix turn its landing sent it to (back to landing, to review, to a
-- person, cancelled): it no longer holds its line's place.
UPDATE landings SET step = 'waiting' WHERE item_id = :item_id AND step = 'fix-turn';

-- name: update_landing_guarded
-- A landing's step, written only while its lander's claim is held.
UPDATE landings
SET step = :step, target_commit = :target_commit, checked_commit = :checked_commit,
    intent = :intent, intent_from = :intent_from, attempt = :attempt, catch_ups = :catch_ups,
    updated_at = :updated_at
WHERE item_id = :item_id
  AND EXISTS (SELECT 1 FROM items WHERE id = :item_id AND state = 'landing'
              AND generation = :generation AND claimed_by = :claimed_by);

-- name: select_open_landings
-- The landings of the items in landing (the board's, in its snapshot: Store.list_open_items).
SELECT landings.* FROM landings JOIN items ON items.id = landings.item_id
WHERE items.state = 'landing';

-- name: select_source
SELECT * FROM sources WHERE name = :name;

-- name: select_sources
SELECT * FROM sources ORDER BY name;

-- name: upsert_source
INSERT INTO sources (name, synced_at, attempted_at, rate_remaining, rate_reset, last_error,
                     failures, pages)
VALUES (:name, :synced_at, :attempted_at, :rate_remaining, :rate_reset, :last_error, :failures,
        :pages)
ON CONFLICT (name) DO UPDATE
SET synced_at = excluded.synced_at,
    attempted_at = excluded.attempted_at,
    rate_remaining = excluded.rate_remaining,
    rate_reset = excluded.rate_reset,
    last_error = excluded.last_error,
    failures = excluded.failures,
    pages = excluded.pages;

-- name: select_imported_from
-- The items whose import key begins with a source's prefix (github:owner/name#), oldest first.
SELECT * FROM items
WHERE import_key IS NOT NULL AND substr(import_key, 1, :length) = :prefix
ORDER BY id;

-- name: select_tracker_item
SELECT * FROM tracker_items WHERE item_id = :item_id;

-- name: select_open_pulls
-- The items whose pull request is open (docs/sources.md#a-pull-request-as-the-integration).
SELECT * FROM tracker_items WHERE pull_state = 'open' ORDER BY item_id;

-- name: upsert_tracker_item
INSERT INTO tracker_items (item_id, comment_id, comment_digest, pull_repo, pull_number,
                           pull_url, pull_state, pull_etag)
VALUES (:item_id, :comment_id, :comment_digest, :pull_repo, :pull_number, :pull_url,
        :pull_state, :pull_etag)
ON CONFLICT (item_id) DO UPDATE
SET comment_id = excluded.comment_id,
    comment_digest = excluded.comment_digest,
    pull_repo = excluded.pull_repo,
    pull_number = excluded.pull_number,
    pull_url = excluded.pull_url,
    pull_state = excluded.pull_state,
    pull_etag = excluded.pull_etag;

-- name: insert_answer
-- An answer taken: once per comment id, however often it is read.
INSERT INTO tracker_answers (source, comment_id, issue, item_id, author, action, step, seen,
                             result)
VALUES (:source, :comment_id, :issue, :item_id, :author, :action, :step, :seen, :result)
ON CONFLICT (source, comment_id) DO NOTHING;

-- name: update_answer
UPDATE tracker_answers SET step = :step, result = :result
WHERE source = :source AND comment_id = :comment_id;

-- name: select_unfinished_answers
SELECT * FROM tracker_answers WHERE source = :source AND step <> 'answered'
ORDER BY comment_id;

-- name: update_source_answers
UPDATE sources SET answers_since = :answers_since, answers_etag = :answers_etag
WHERE name = :name;
