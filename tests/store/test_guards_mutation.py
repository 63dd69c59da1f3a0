"""The guards test themselves: with any one guard taken out of the SQL, its tests fail.

Each row of GUARDS names a guard (its exact text in a dialect's SQL, and a replacement that
makes it always true, or a trigger never fire) and the contract tests that defend it. For each
row a pytest process of its own (forked from tests/store/guard_runner.py, which has imported
pytest and the test modules once) runs those tests against the SQL with that guard replaced
(tests/store/guard_mutation.py does the replacing) and every one of them must fail. The same
tests, unmutated, must pass, and every guard text must occur in the SQL exactly once, so the
table cannot rot while the SQL changes. docs/testing.md says how to add a row.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import postgres_or_skip
from tests.store.guard_mutation import (
    MUTATION_VARIABLE,
    OUTCOMES_VARIABLE,
    Mutation,
    as_environment,
)
from tests.store.guard_runner import run_row

ROOT = Path(__file__).resolve().parents[2]
# The table runs on one xdist worker (its `runs` fixture starts every row's pytest, two at a
# time); `-n 0` keeps each row's pytest a single process.
pytestmark = pytest.mark.xdist_group("guard-mutation")

CLAIMS = "tests/store/test_claims.py::"
CONTRACT = "tests/store/test_contract.py::"

# The tests that defend guards; {backend} becomes the dialect's store fixture id.
STALE_READ = CONTRACT + "test_a_write_guarded_by_a_stale_read_changes_nothing[{backend}-%s]"
MOVED_ON = CLAIMS + "test_a_claim_that_moved_on_takes_no_write_from_its_old_holder[{backend}-%s]"
FINAL_PORT = CONTRACT + "test_a_final_item_is_never_written_again[{backend}-%s]"
FINAL_RAW = CONTRACT + "test_the_database_refuses_any_update_of_a_final_item[{backend}-%s]"
HISTORY = CONTRACT + "test_the_database_keeps_the_history_append_only[{backend}-%s]"
NON_OWNER = CLAIMS + "test_a_renewal_by_a_non_owner_is_lost_and_changes_nothing[alone-{backend}-%s]"
NON_OWNER_BATCHED = (
    CLAIMS + "test_a_renewal_by_a_non_owner_is_lost_and_changes_nothing[batched-{backend}-%s]"
)
REAP_RACE = CLAIMS + "test_a_renewal_between_the_reapers_read_and_its_write_wins[{backend}]"
BUDGET = CLAIMS + "test_renewal_stops_at_the_budget_edge[alone-{backend}]"
BUDGET_BATCHED = CLAIMS + "test_renewal_stops_at_the_budget_edge[batched-{backend}]"
HELD_ONLY = CLAIMS + "test_runs_and_sessions_are_recorded_only_under_the_held_claim[{backend}]"
NO_REQUEUE = CLAIMS + "test_the_store_refuses_queued_after_an_agent_process_was_recorded[{backend}]"
REPORT = CLAIMS + "test_an_agent_report_lands_only_under_the_runs_live_claim[{backend}]"
IMPORTED_ONCE = (
    CONTRACT + "test_a_second_item_with_a_taken_import_key_is_refused_and_writes_nothing[{backend}]"
)
CIRCUITS = "tests/store/test_circuits.py::"
CIRCUIT_STALE = CIRCUITS + "test_a_write_on_a_version_not_stored_changes_nothing[{backend}-%s]"
CIRCUIT_SECOND = CIRCUITS + "test_of_two_writers_from_the_same_read_the_second_loses[{backend}]"
PROBE_OTHER = CIRCUITS + "test_the_probe_does_not_run_under_another_workers_claim[{backend}]"
LEDGER = "tests/store/test_ledger.py::"
USAGE_MOVED_ON = LEDGER + "test_a_moved_on_claim_takes_no_usage_from_its_old_holder[{backend}-%s]"
USAGE_ENDED = LEDGER + "test_a_run_that_ended_takes_no_usage_while_its_claim_is_held[{backend}]"
USAGE_OWN_RUN = LEDGER + "test_a_record_names_its_own_run[{backend}]"
USAGE_TOKEN = LEDGER + "test_a_report_lands_only_with_the_runs_token_under_its_claim[{backend}]"
CHECKS = "tests/store/test_checks.py::"
CHECK_MOVED = (
    CHECKS + "test_a_check_is_recorded_only_under_the_item_as_its_writer_read_it[{backend}-%s]"
)
CHECK_RUN = CHECKS + "test_a_running_items_check_goes_only_into_its_claims_open_run[{backend}-%s]"
CHECK_BY_HAND = CHECKS + "test_a_check_by_hand_names_no_run_or_one_of_its_items_own[{backend}]"
CHECK_ONCE = CHECKS + "test_evidence_is_never_rewritten[{backend}]"
CHECK_RAW = CHECKS + "test_the_database_keeps_evidence_insert_only[{backend}-%s]"
OUTBOX = "tests/store/test_outbox.py::"
NOTICE_SETTLED = OUTBOX + "test_delivered_and_given_up_notices_are_never_claimed_again[{backend}]"
NOTICE_NOT_DUE = OUTBOX + "test_a_notice_is_not_claimed_before_it_is_due[{backend}]"
NOTICE_HELD = OUTBOX + "test_a_notice_held_by_a_live_claim_is_not_claimed_again[{backend}]"
NOTICE_LOCKED = OUTBOX + "test_a_claim_skips_a_notice_row_another_transaction_holds"
NOTICE_OTHER = OUTBOX + "test_a_finish_by_another_deliverer_changes_nothing[{backend}]"
NOTICE_RENEWED = OUTBOX + "test_a_claim_taken_again_is_not_renewed[{backend}]"
NOTICE_EARLIER = (
    OUTBOX + "test_a_finish_under_the_deliverers_own_earlier_claim_changes_nothing[{backend}]"
)
SCHEDULING = "tests/store/test_scheduling.py::"
DEPS_PASSED_OVER = (
    SCHEDULING + "test_an_item_that_waits_is_passed_over_for_the_next_eligible_one[{backend}]"
)
DEPS_WAIT = SCHEDULING + "test_an_item_waits_until_every_item_it_comes_after_is_done[{backend}]"
DEPS_MISSING = (
    "tests/store/test_poison_dependencies.py::"
    "test_a_dependency_on_an_item_that_does_not_exist_is_never_met[{backend}]"
)
STACKING = "tests/store/test_stacking.py::"
STACK_HERE = (
    STACKING + "test_a_stacked_claim_leaves_an_item_whose_predecessor_has_no_branch_here[{backend}]"
)
STACK_LINE = (
    STACKING
    + "test_a_lander_passes_over_an_item_until_the_items_it_comes_after_are_done[{backend}]"
)
DEPS_GUARDED = (
    SCHEDULING + "test_the_store_refuses_to_move_an_item_to_running_before_its_dependencies_are_"
    "done[{backend}]"
)
AGENT_LIMIT = (
    SCHEDULING + "test_an_agents_limit_holds_its_items_across_workers_and_installations[{backend}]"
)
DEFAULT_AGENT_LIMIT = (
    SCHEDULING + "test_an_item_without_an_agent_counts_for_the_default_agent[{backend}]"
)
LABEL_LIMIT = (
    SCHEDULING + "test_a_label_limit_holds_items_with_that_label_whatever_their_agent[{backend}]"
)
LIMITS_LOCKED = SCHEDULING + "test_two_racing_claims_under_a_limit_take_turns"
NO_CYCLE = SCHEDULING + "test_the_store_refuses_a_dependency_that_closes_a_cycle[{backend}]"
CYCLE_LOCKED = SCHEDULING + "test_two_racing_edits_never_land_both_halves_of_a_cycle"

BOTH = ("sqlite", "postgresql")  # the dialects, which are also the store fixture's ids


@dataclass(frozen=True)
class Guard:
    name: str
    mutation: Mutation
    tests: tuple[str, ...]  # node ids, each of which must fail without the guard

    @property
    def dialect(self) -> str:
        return self.mutation.dialect


def _guards(name: str, dialects: tuple[str, ...], where: str, guard: str, replacement: str,
            *tests: str) -> list[Guard]:  # fmt: skip
    """One row per dialect; ``where`` is a query name of queries.sql, or schema.sql."""
    file, block = ("schema.sql", None) if where == "schema.sql" else ("queries.sql", where)
    return [
        Guard(
            f"{dialect}: {name}",
            Mutation(dialect, file, block, guard, replacement),
            tuple(test.format(backend=dialect) for test in tests),
        )
        for dialect in dialects
    ]


GUARDS: list[Guard] = [
    # The compare-and-set of every move (invariants 2 and 4).
    *_guards("guarded update: not final", BOTH, "update_item_guarded",
             "AND state NOT IN ('done', 'cancelled')", "AND 1 = 1",
             FINAL_PORT % "done", FINAL_PORT % "cancelled"),
    *_guards("guarded update: state", BOTH, "update_item_guarded",
             "AND state = :expected_state", "AND 1 = 1",
             STALE_READ % "state", MOVED_ON % "state"),
    *_guards("guarded update: generation", BOTH, "update_item_guarded",
             "AND generation = :expected_generation\n", "AND 1 = 1\n",
             STALE_READ % "generation", MOVED_ON % "generation"),
    *_guards("guarded update: owner", ("sqlite",), "update_item_guarded",
             "claimed_by IS :expected_claimed_by", "1 = 1",
             STALE_READ % "claimed_by", MOVED_ON % "claimed_by"),
    *_guards("guarded update: owner", ("postgresql",), "update_item_guarded",
             "claimed_by IS NOT DISTINCT FROM CAST(:expected_claimed_by AS text)", "1 = 1",
             STALE_READ % "claimed_by", MOVED_ON % "claimed_by"),
    *_guards("guarded update: the reaper's lease re-check", BOTH, "update_item_guarded",
             "lease_expires_at < :expired_before", "1 = 1", REAP_RACE),
    *_guards("guarded update: no silent requeue after a process", BOTH, "update_item_guarded",
             "pid IS NOT NULL", "1 = 0", NO_REQUEUE),
    # Renewal (invariants 2 and 3).
    *_guards("renewal: state", BOTH, "renew_lease",
             "AND state IN ('running', 'landing')", "AND 1 = 1", MOVED_ON % "state"),
    *_guards("renewal: generation", BOTH, "renew_lease",
             "AND generation = :generation", "AND 1 = 1",
             MOVED_ON % "generation", NON_OWNER % "generation"),
    *_guards("renewal: owner", BOTH, "renew_lease",
             "AND claimed_by = :claimed_by", "AND 1 = 1",
             MOVED_ON % "claimed_by", NON_OWNER % "claimed_by"),
    *_guards("renewal: budget", BOTH, "renew_lease",
             "AND lease_expires_at < renew_deadline", "AND 1 = 1", BUDGET),
    # A worker's renewals, gathered (the same guards, each claim's own).
    *_guards("renewals: state", BOTH, "renew_leases",
             "AND items.state IN ('running', 'landing')", "AND 1 = 1", MOVED_ON % "state"),
    *_guards("renewals: generation", BOTH, "renew_leases",
             "AND items.generation = wanted.generation", "AND 1 = 1",
             MOVED_ON % "generation", NON_OWNER_BATCHED % "generation"),
    *_guards("renewals: owner", BOTH, "renew_leases",
             "AND items.claimed_by = wanted.claimed_by", "AND 1 = 1",
             MOVED_ON % "claimed_by", NON_OWNER_BATCHED % "claimed_by"),
    *_guards("renewals: budget", BOTH, "renew_leases",
             "AND items.lease_expires_at < items.renew_deadline", "AND 1 = 1", BUDGET_BATCHED),
    # The records written under a claim (invariant 2).
    *_guards("run start: state", BOTH, "insert_run_guarded",
             "AND state = 'running'", "AND 1 = 1", MOVED_ON % "state"),
    *_guards("run start: generation", BOTH, "insert_run_guarded",
             "AND generation = :generation", "AND 1 = 1",
             MOVED_ON % "generation", HELD_ONLY),
    *_guards("run start: owner", BOTH, "insert_run_guarded",
             "AND claimed_by = :claimed_by", "AND 1 = 1", MOVED_ON % "claimed_by"),
    *_guards("process record: state", BOTH, "record_process_guarded",
             "AND state = 'running'", "AND 1 = 1", MOVED_ON % "state"),
    *_guards("process record: generation", BOTH, "record_process_guarded",
             "AND generation = :generation AND claimed_by", "AND 1 = 1 AND claimed_by",
             MOVED_ON % "generation"),
    *_guards("process record: owner", BOTH, "record_process_guarded",
             "AND claimed_by = :claimed_by", "AND 1 = 1", MOVED_ON % "claimed_by"),
    *_guards("session record: state", BOTH, "upsert_session_guarded",
             "AND state = 'running'", "AND 1 = 1", MOVED_ON % "state"),
    *_guards("session record: generation", BOTH, "upsert_session_guarded",
             "AND generation = :generation", "AND 1 = 1",
             MOVED_ON % "generation", HELD_ONLY),
    *_guards("session record: owner", BOTH, "upsert_session_guarded",
             "AND claimed_by = :claimed_by", "AND 1 = 1", MOVED_ON % "claimed_by"),
    *_guards("agent report: claim token", BOTH, "record_agent_report_guarded",
             "AND claim_token = :claim_token", "AND 1 = 1", REPORT),
    *_guards("agent report: state", BOTH, "record_agent_report_guarded",
             "AND items.state = 'running'", "AND 1 = 1", MOVED_ON % "state"),
    *_guards("agent report: generation", BOTH, "record_agent_report_guarded",
             "AND items.generation = runs.generation", "AND 1 = 1", MOVED_ON % "generation"),
    *_guards("agent report: owner", BOTH, "record_agent_report_guarded",
             "AND items.claimed_by = runs.worker_id", "AND 1 = 1", MOVED_ON % "claimed_by"),
    # The usage ledger: the worker's record of a run's usage, under the claim, into its own
    # open run; and `wrighty report-usage`, with the run's token while its claim is held.
    *_guards("usage record: state", BOTH, "record_usage_guarded",
             "AND state = 'running'", "AND 1 = 1", USAGE_MOVED_ON % "state"),
    *_guards("usage record: generation", BOTH, "record_usage_guarded",
             "AND generation = :generation AND claimed_by", "AND 1 = 1 AND claimed_by",
             USAGE_MOVED_ON % "generation"),
    *_guards("usage record: owner", BOTH, "record_usage_guarded",
             "AND claimed_by = :claimed_by", "AND 1 = 1", USAGE_MOVED_ON % "claimed_by"),
    *_guards("usage record: open run", BOTH, "record_usage_guarded",
             "AND ended_at IS NULL", "AND 1 = 1", USAGE_ENDED),
    *_guards("usage record: the claim's own run", BOTH, "record_usage_guarded",
             "AND item_id = :item_id", "AND 1 = 1", USAGE_OWN_RUN),
    *_guards("usage report: claim token", BOTH, "report_usage_guarded",
             "AND claim_token = :claim_token", "AND 1 = 1", USAGE_TOKEN),
    *_guards("usage report: open run", BOTH, "report_usage_guarded",
             "AND ended_at IS NULL", "AND 1 = 1", USAGE_ENDED),
    *_guards("usage report: state", BOTH, "report_usage_guarded",
             "AND items.state = 'running'", "AND 1 = 1", USAGE_MOVED_ON % "state"),
    *_guards("usage report: generation", BOTH, "report_usage_guarded",
             "AND items.generation = runs.generation", "AND 1 = 1",
             USAGE_MOVED_ON % "generation"),
    *_guards("usage report: owner", BOTH, "report_usage_guarded",
             "AND items.claimed_by = runs.worker_id", "AND 1 = 1",
             USAGE_MOVED_ON % "claimed_by"),
    # Verification's evidence (docs/verify.md): written under the item as its writer read it; a
    # running item's only into its claim's open run, another's into none or one of its own;
    # never a second time at the same place.
    *_guards("check record: state", BOTH, "insert_check_guarded",
             "AND state = :state", "AND 1 = 1", CHECK_MOVED % "state"),
    *_guards("check record: generation", BOTH, "insert_check_guarded",
             "AND generation = :generation", "AND 1 = 1", CHECK_MOVED % "generation"),
    *_guards("check record: owner", ("sqlite",), "insert_check_guarded",
             "claimed_by IS :claimed_by", "1 = 1", CHECK_MOVED % "claimed_by"),
    *_guards("check record: owner", ("postgresql",), "insert_check_guarded",
             "claimed_by IS NOT DISTINCT FROM CAST(:claimed_by AS text)", "1 = 1",
             CHECK_MOVED % "claimed_by"),
    *_guards("check record: the run named", BOTH, "insert_check_guarded",
             "WHERE runs.run_id = :run_id AND", "WHERE", CHECK_RUN % "none"),
    *_guards("check record: the claim's item's run", BOTH, "insert_check_guarded",
             "AND runs.item_id = :item_id", "AND 1 = 1", CHECK_RUN % "other-item"),
    *_guards("check record: the claim's own run", BOTH, "insert_check_guarded",
             "AND runs.generation = :generation", "AND 1 = 1", CHECK_RUN % "earlier-claim"),
    *_guards("check record: an open run", BOTH, "insert_check_guarded",
             "AND runs.ended_at IS NULL", "AND 1 = 1", CHECK_RUN % "ended"),
    *_guards("check record: by hand, the item's own run", BOTH, "insert_check_guarded",
             "AND item_id = :item_id)", "AND 1 = 1)", CHECK_BY_HAND),
    *_guards("check record: never rewritten", BOTH, "insert_check_guarded",
             "ON CONFLICT (verification_id, position) DO NOTHING", "", CHECK_ONCE),
    # The provider circuit's compare-and-set on its version, and the probe's running fact (its
    # `items.state = 'running'` has no row: outside running an item has no claimed_by, so the
    # holder's condition alone already decides).
    *_guards("circuit write: version", BOTH, "update_circuit_guarded",
             "AND version = :expected_version", "AND 1 = 1",
             CIRCUIT_STALE % "update", CIRCUIT_STALE % "ahead", CIRCUIT_SECOND),
    *_guards("circuit write: first write only", BOTH, "insert_circuit",
             "ON CONFLICT (name) DO NOTHING",
             "ON CONFLICT (name) DO UPDATE SET until = excluded.until",
             CIRCUIT_STALE % "insert"),
    *_guards("probe running: holder", BOTH, "select_circuit",
             "AND items.claimed_by = circuits.probe_by", "AND 1 = 1", PROBE_OTHER),
    *_guards("probe running: holder, listed", BOTH, "select_circuits",
             "AND items.claimed_by = circuits.probe_by", "AND 1 = 1", PROBE_OTHER),
    # The notification outbox: a deliverer claims only a pending notice that is due and that no
    # live claim holds (PostgreSQL: skipping a row another racer has locked, never waiting on
    # it), and finishes it only under that claim, its deliverer and its expiry.
    *_guards("notice claim: pending only", BOTH, "claim_notice",
             "state = 'pending'", "1 = 1", NOTICE_SETTLED),
    *_guards("notice claim: due", BOTH, "claim_notice",
             "AND next_attempt_at <= :now", "AND 1 = 1", NOTICE_NOT_DUE),
    *_guards("notice claim: no live claim", BOTH, "claim_notice",
             "AND (claim_expires_at IS NULL OR claim_expires_at < :now)", "AND 1 = 1",
             NOTICE_HELD),
    *_guards("notice claim: skip locked rows", ("postgresql",), "claim_notice",
             "FOR UPDATE SKIP LOCKED", "FOR UPDATE", NOTICE_LOCKED),
    *_guards("notice finish: deliverer", BOTH, "finish_notice_guarded",
             "AND claimed_by = :deliverer", "AND 1 = 1", NOTICE_OTHER),
    *_guards("notice finish: claim expiry", BOTH, "finish_notice_guarded",
             "AND claim_expires_at = :claimed_until", "AND 1 = 1", NOTICE_EARLIER),
    *_guards("notice renew: deliverer", BOTH, "renew_notice_claim",
             "AND claimed_by = :deliverer", "AND 1 = 1", NOTICE_RENEWED),
    *_guards("notice renew: claim expiry", BOTH, "renew_notice_claim",
             "AND claim_expires_at = :claimed_until", "AND 1 = 1", NOTICE_RENEWED),
    # Scheduling (docs/scheduling.md): the claim's choice skips an item whose dependencies are
    # not all done, and one whose agent's or label's limit the running items reach; the
    # guarded write re-checks the dependencies; on PostgreSQL a claim under a limit takes the
    # limits lock before it counts (the race test holds one claim open and proves the second
    # waits and then counts it). A dependency lands only if it closes no cycle, and on
    # PostgreSQL under the dependencies lock (the same kind of race test).
    *_guards("claim: dependencies done", BOTH, "select_next_claimable",
             "AND coalesce(dep.state, 'missing') <> 'done'", "AND 1 = 0", DEPS_PASSED_OVER,
             DEPS_WAIT),
    *_guards("claim: a missing dependency is never met", BOTH, "select_next_claimable",
             "LEFT JOIN items AS dep", "JOIN items AS dep", DEPS_MISSING),
    *_guards("guarded update: dependencies done", BOTH, "update_item_guarded",
             "AND coalesce(dep.state, 'missing') <> 'done'", "AND 1 = 0", DEPS_GUARDED),
    # Stacked items (docs/landing.md#stacked-items): a claim under completion.stack stacks only
    # on a branch of its own installation; a lander passes over an item that waits for one it
    # comes after.
    *_guards("claim: stacked on a branch of this installation", BOTH, "select_next_claimable",
             "AND s.installation_id = :installation_id", "AND 1 = 1", STACK_HERE),
    *_guards("landing line: a dependent waits for its predecessor", BOTH,
             "select_landing_lines", "coalesce(dep.state, 'missing') <> 'done'", "1 = 0",
             STACK_LINE),
    *_guards("claim: agent limit", ("sqlite",), "select_next_claimable",
             "WHERE lim.key = coalesce(items.agent, :default_agent)", "WHERE 1 = 0",
             AGENT_LIMIT, DEFAULT_AGENT_LIMIT),
    *_guards("claim: agent limit", ("postgresql",), "select_next_claimable",
             "OR CAST(:agent_limits AS jsonb) ->> coalesce(items.agent, CAST(:default_agent AS "
             "text)) IS NULL", "OR TRUE", AGENT_LIMIT, DEFAULT_AGENT_LIMIT),
    *_guards("claim: label limit", ("sqlite",), "select_next_claimable",
             "ON lim.key = l.label", "ON 1 = 0", LABEL_LIMIT),
    *_guards("claim: label limit", ("postgresql",), "select_next_claimable",
             "AND CAST(:label_limits AS jsonb) ->> l.label IS NOT NULL", "AND 1 = 0",
             LABEL_LIMIT),
    *_guards("claim: the limits lock", ("postgresql",), "lock_claim_limits",
             "pg_advisory_xact_lock(hashtext('wrighty: claim limits in ' || current_schema()))",
             "1", LIMITS_LOCKED),
    *_guards("dependency: no cycle", BOTH, "insert_dependency_guarded",
             "SELECT 1 FROM upstream WHERE id = :item_id", "SELECT 1 WHERE 1 = 0", NO_CYCLE),
    *_guards("dependency: the dependencies lock", ("postgresql",), "lock_dependencies",
             "pg_advisory_xact_lock(hashtext('wrighty: dependencies in ' || current_schema()))",
             "1", CYCLE_LOCKED),
    # Below every query: the schema's trigger keeps final states final.
    *_guards("terminal trigger", ("sqlite",), "schema.sql",
             "WHEN OLD.state IN ('done', 'cancelled')", "WHEN 0",
             FINAL_RAW % "done", FINAL_RAW % "cancelled"),
    *_guards("terminal trigger", ("postgresql",), "schema.sql",
             "WHEN (OLD.state IN ('done', 'cancelled'))", "WHEN (FALSE)",
             FINAL_RAW % "done", FINAL_RAW % "cancelled"),
    # ... and the history append-only.
    # `wrighty import` run twice at once: the loser's insert is skipped, not an IntegrityError.
    *_guards("import key taken: insert skipped", BOTH, "insert_item",
             "ON CONFLICT (import_key) WHERE import_key IS NOT NULL DO NOTHING", "",
             IMPORTED_ONCE),
    *_guards("history trigger: update", ("sqlite",), "schema.sql",
             "BEFORE UPDATE ON item_events\nBEGIN", "BEFORE UPDATE ON item_events WHEN 0\nBEGIN",
             HISTORY % "update"),
    *_guards("history trigger: delete", ("sqlite",), "schema.sql",
             "BEFORE DELETE ON item_events\nBEGIN", "BEFORE DELETE ON item_events WHEN 0\nBEGIN",
             HISTORY % "delete"),
    # ... and the check evidence insert-only.
    *_guards("check evidence trigger: update", ("sqlite",), "schema.sql",
             "BEFORE UPDATE ON checks\nBEGIN", "BEFORE UPDATE ON checks WHEN 0\nBEGIN",
             CHECK_RAW % "update"),
    *_guards("check evidence trigger: delete", ("sqlite",), "schema.sql",
             "BEFORE DELETE ON checks\nBEGIN", "BEFORE DELETE ON checks WHEN 0\nBEGIN",
             CHECK_RAW % "delete"),
    *_guards("check evidence trigger", ("postgresql",), "schema.sql",
             "FOR EACH ROW EXECUTE FUNCTION wrighty_refuse_evidence_change()",
             "FOR EACH ROW WHEN (FALSE) EXECUTE FUNCTION wrighty_refuse_evidence_change()",
             CHECK_RAW % "update", CHECK_RAW % "delete"),
    *_guards("history trigger", ("postgresql",), "schema.sql",
             "FOR EACH ROW EXECUTE FUNCTION wrighty_refuse_history_change()",
             "FOR EACH ROW WHEN (FALSE) EXECUTE FUNCTION wrighty_refuse_history_change()",
             HISTORY % "update", HISTORY % "delete"),
]  # fmt: skip


def _defending(dialect: str) -> tuple[str, ...]:
    """Every test some guard of ``dialect`` names, once."""
    return tuple(dict.fromkeys(t for g in GUARDS if g.dialect == dialect for t in g.tests))


def _run(
    server: str,
    tests: tuple[str, ...],
    mutation: Mutation | None,
    folder: Path,
    environment: dict[str, str],
) -> dict[str, str]:
    """Run ``tests`` in a pytest of their own, with ``mutation`` applied; their outcomes."""
    folder.mkdir(parents=True)
    outcomes = folder / "outcomes.json"
    env = {**environment, OUTCOMES_VARIABLE: str(outcomes)}
    env.pop(MUTATION_VARIABLE, None)
    if mutation is not None:
        env[MUTATION_VARIABLE] = as_environment(mutation)
    args = ["-q", "-n", "0", "-p", "no:cacheprovider", "-p", "no:hypothesispytest",
            "--assert=plain", "--basetemp", str(folder / "tmp"),
            "-p", "tests.store.guard_mutation", *tests]  # fmt: skip
    output = folder / "output.txt"
    run_row(server, args, env, output)
    if not outcomes.exists():
        raise AssertionError(f"pytest did not run the tests:\n{output.read_text()}")
    found: dict[str, str] = json.loads(outcomes.read_text(encoding="utf-8"))
    return found


Runs = dict[str, Future[dict[str, str]]]


@pytest.fixture(scope="module")
def runs(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Runs]:
    """The pytest of every selected test of this module, started together, two at a time, from
    a fork server that has imported pytest and the test modules once (tests/store/guard_runner.py):
    the rows are independent, and this keeps the whole table near half a minute."""
    wanted = {
        item.callspec.id: item.callspec.params["subject"]
        for item in request.session.items
        if isinstance(item, pytest.Function) and "runs" in item.fixturenames
    }
    folder = tmp_path_factory.mktemp("guards")
    environment = dict(os.environ)  # read here: the tests' monkeypatching does not race it
    files = sorted({test.split("::")[0] for guard in GUARDS for test in guard.tests})
    server_path = str(folder / "socket")
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.store.guard_runner", server_path, *files],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        assert server.stdout.readline() == "ready\n"
        with ThreadPoolExecutor(max_workers=2) as pool:
            started: Runs = {}
            for key, subject in wanted.items():
                tests, mutation = (
                    (subject.tests, subject.mutation)
                    if isinstance(subject, Guard)
                    else (_defending(str(subject)), None)
                )
                place = folder / f"run-{len(started)}"
                started[key] = pool.submit(_run, server_path, tests, mutation, place, environment)
            yield started
            for future in started.values():
                future.cancel()
    finally:
        server.kill()
        server.wait()


def _skip_without_server(dialect: str) -> None:
    if dialect == "postgresql":
        postgres_or_skip()


@pytest.mark.parametrize("subject", GUARDS, ids=lambda g: g.name)
def test_every_guard_is_in_the_sql_once(subject: Guard) -> None:
    assert subject.mutation.original().count(subject.mutation.guard) == 1
    assert subject.tests


@pytest.mark.parametrize("subject", BOTH)
def test_the_defending_tests_pass_on_the_sql_as_it_is(
    subject: str, runs: Runs, request: pytest.FixtureRequest
) -> None:
    _skip_without_server(subject)
    outcomes = runs[request.node.callspec.id].result()
    assert outcomes == dict.fromkeys(_defending(subject), "passed")


@pytest.mark.parametrize("subject", GUARDS, ids=lambda g: g.name)
def test_without_the_guard_its_tests_fail(
    subject: Guard, runs: Runs, request: pytest.FixtureRequest
) -> None:
    _skip_without_server(subject.dialect)
    outcomes = runs[request.node.callspec.id].result()
    survivors = [
        test for test in subject.tests if not outcomes.get(test, "not run").startswith("failed")
    ]
    assert survivors == [], f"with {subject.mutation.guard!r} taken out these still pass"
    # A replacement that breaks the SQL would make any test fail, and prove nothing.
    broken = [why for why in outcomes.values() if "syntax error" in why]
    assert broken == [], f"the replacement {subject.mutation.replacement!r} breaks the SQL"
