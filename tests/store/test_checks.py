"""Verification on the store (docs/verify.md, docs/storage.md#check-evidence), on both stores:
each check's evidence written once, under the item as its writer read it, and read back
oldest verification first; an item's fix turns and the checks it chose, kept by every write
about it."""

from __future__ import annotations

import dataclasses
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from tests.conftest import FakeClock
from tests.store.older_store import store_before
from tests.store.test_claims import acquire, queued, settlement
from tests.store.test_contract import new_item
from tests.store.test_ledger import MOVED, begin, end_run_keeping_the_claim, moved_by_another_writer
from tests.store.txhooks import execute_raw
from wrighty.domain.check_evidence import BaseCheck, CheckEvidence, CheckRecord
from wrighty.domain.claims import settle
from wrighty.domain.health import VerificationFigures
from wrighty.domain.model import Item, NewRun
from wrighty.domain.outcomes import OutcomeClass, RunKind
from wrighty.domain.states import ItemState
from wrighty.domain.transitions import edit
from wrighty.domain.usage import Usage
from wrighty.domain.verify import VERIFICATION_FAILED
from wrighty.services import items as item_service
from wrighty.store import Store
from wrighty.store.sqlfiles import migrations

PASSED = CheckEvidence("tests", ("python", "-m", "pytest", "-q"), 12.5, "3 passed\n", exit_code=0)
FAILED = CheckEvidence("lint", ("ruff", "check", "."), 0.25, "E501 line too long\n", exit_code=1)
STOPPED = CheckEvidence("slow", ("sleep", "99"), 60.0, "", signal=9, timed_out=True)
NOT_STARTED = CheckEvidence("gone", ("no-such-program",), 0.0, start_failure="not found")
ON_BASE = dataclasses.replace(FAILED, fails_on_base=True)


def record(
    item: Item,
    position: int,
    evidence: CheckEvidence,
    at: datetime,
    *,
    verification: str = "v-1",
    run_id: str | None = None,
    actor: str = "worker w1",
) -> CheckRecord:
    return CheckRecord(item.id, verification, run_id, position, actor, at, evidence)


def fetched(store: Store, item: Item) -> Item:
    found = store.get_item(item.id)
    assert found is not None
    return found


# -- record_check and list_checks ---------------------------------------------------------------


def test_evidence_reads_back_as_recorded_each_verification_in_its_order(
    store: Store, clock: FakeClock
) -> None:
    claimed, run_id = begin(store, clock)
    first = [
        record(claimed, 0, PASSED, clock(), run_id=run_id),
        record(claimed, 1, FAILED, clock.advance(13), run_id=run_id),
        record(claimed, 2, STOPPED, clock.advance(1), run_id=run_id),
    ]
    for one in first:
        assert store.record_check(claimed, one)
    waiting = settle(claimed, settlement(ItemState.NEEDS_ATTENTION, OutcomeClass.SUCCEEDED, clock,
                                         reason_code=VERIFICATION_FAILED), at=clock())  # fmt: skip
    assert store.write_transition(waiting)
    # `wrighty verify` by a person: no run, under the item as it waits. Its clock is behind
    # the worker's, and it records its second check first: the read order is the order in
    # which each verification began to be recorded, then the position, whatever the clocks.
    early = clock() - timedelta(hours=1)
    by_hand = [
        record(waiting.after, 0, NOT_STARTED, early, verification="v-2", actor="operator"),
        record(waiting.after, 1, PASSED, early, verification="v-2", actor="operator"),
    ]
    assert store.record_check(waiting.after, by_hand[1])
    assert store.record_check(waiting.after, by_hand[0])
    listed = store.list_checks(claimed.id)
    assert listed == [*first, *by_hand]
    assert listed.unreadable == []
    assert store.list_checks(claimed.id + 1) == []


def test_a_run_of_kind_fix_is_stored_and_read_back(store: Store, clock: FakeClock) -> None:
    made = queued(store, clock)
    claimed = acquire(store, clock, item_id=made.id)
    run = store.start_run(claimed, NewRun("r-fix", RunKind.FIX, "w1", "inst-a", clock(), "s-1"))
    assert run is not None
    assert run.kind is RunKind.FIX
    assert [r.kind for r in store.list_runs(made.id)] == [RunKind.FIX]


@MOVED
def test_a_check_is_recorded_only_under_the_item_as_its_writer_read_it(
    store: Store, clock: FakeClock, moved: dict[str, object]
) -> None:
    """With the item's state, generation or owner changed by another writer, the old
    holder's evidence lands nowhere."""
    claimed, run_id = begin(store, clock)
    assert store.record_check(claimed, record(claimed, 0, PASSED, clock(), run_id=run_id))
    moved_by_another_writer(store, claimed, clock, moved)
    before = store.list_checks(claimed.id)
    assert store.record_check(claimed, record(claimed, 1, FAILED, clock(), run_id=run_id)) is False
    assert store.list_checks(claimed.id) == before


@pytest.mark.parametrize("which", ["ended", "earlier-claim", "other-item", "none"])
def test_a_running_items_check_goes_only_into_its_claims_open_run(
    store: Store, clock: FakeClock, which: str
) -> None:
    claimed, run_id = begin(store, clock)
    if which == "ended":  # the claim is held, but its run has ended
        end_run_keeping_the_claim(store, claimed, clock)
        target = run_id
    elif which == "earlier-claim":  # a run left open under an earlier generation
        claimed = moved_by_another_writer(store, claimed, clock, {"generation": 2})
        target = run_id
    elif which == "other-item":  # another claim's open run
        _, target = begin(store, clock, run_id="run-other", worker="w2", token="tok-2")
    else:
        target = None
    held = fetched(store, claimed)
    assert store.record_check(held, record(held, 0, FAILED, clock(), run_id=target)) is False
    assert store.list_checks(held.id) == []


def test_a_check_by_hand_names_no_run_or_one_of_its_items_own(
    store: Store, clock: FakeClock
) -> None:
    """An item no worker holds (`wrighty verify`): its evidence names no run, or a run of the
    item itself, never another item's."""
    claimed, run_id = begin(store, clock)
    other, other_run = begin(store, clock, run_id="run-other", worker="w2", token="tok-2")
    for held in (claimed, other):
        done = settle(held, settlement(ItemState.NEEDS_ATTENTION, OutcomeClass.SUCCEEDED, clock),
                      at=clock())  # fmt: skip
        assert store.write_transition(done)
    waiting = fetched(store, claimed)
    stray = record(waiting, 0, PASSED, clock(), verification="v-2", run_id=other_run)
    assert store.record_check(waiting, stray) is False
    assert store.list_checks(waiting.id) == []
    own = record(waiting, 0, PASSED, clock(), verification="v-2", run_id=run_id)
    assert store.record_check(waiting, own)
    no_run = record(waiting, 0, PASSED, clock(), verification="v-3", actor="operator")
    assert store.record_check(waiting, no_run)
    assert store.list_checks(waiting.id) == [own, no_run]


def test_evidence_is_never_rewritten(store: Store, clock: FakeClock) -> None:
    """A second record at the same verification and position changes nothing (and raises
    nothing): the first one stands."""
    claimed, run_id = begin(store, clock)
    kept = record(claimed, 0, FAILED, clock(), run_id=run_id)
    assert store.record_check(claimed, kept)
    again = record(claimed, 0, PASSED, clock.advance(5), run_id=run_id)
    assert store.record_check(claimed, again) is False
    assert store.list_checks(claimed.id) == [kept]


def test_a_record_must_name_the_item_it_is_written_under(store: Store, clock: FakeClock) -> None:
    claimed, run_id = begin(store, clock)
    stray = dataclasses.replace(record(claimed, 0, PASSED, clock(), run_id=run_id), item_id=999)
    with pytest.raises(ValueError, match="the item it is written under"):
        store.record_check(claimed, stray)
    assert store.list_checks(claimed.id) == []


@pytest.mark.parametrize(
    "statement",
    ["DELETE FROM checks", "UPDATE checks SET exit_code = 0, output_tail = ''"],
    ids=["delete", "update"],
)
def test_the_database_keeps_evidence_insert_only(
    store: Store, clock: FakeClock, statement: str
) -> None:
    """Below the code: a hand-written change to the evidence is refused by the schema."""
    claimed, run_id = begin(store, clock)
    assert store.record_check(claimed, record(claimed, 0, FAILED, clock(), run_id=run_id))
    evidence = store.list_checks(claimed.id)
    with pytest.raises((sqlite3.IntegrityError, psycopg.Error), match="never rewritten"):
        execute_raw(store, statement)
    assert store.list_checks(claimed.id) == evidence


# -- verified_items: the latest verification's outcome of many items in one read ----------------


def test_each_items_latest_ended_verification_decides_whether_it_is_verified(
    store: Store, clock: FakeClock
) -> None:
    """Passed when every check of the latest verification passed; failed when one failed,
    was stopped or could not start; an item with no verification is left out; a
    verification by hand counts as soon as it is recorded, the latest by insertion order."""
    claimed, run_id = begin(store, clock)
    for position, evidence in enumerate([PASSED, FAILED]):
        assert store.record_check(
            claimed, record(claimed, position, evidence, clock(), run_id=run_id)
        )
    waiting = settle(claimed, settlement(ItemState.NEEDS_ATTENTION, OutcomeClass.SUCCEEDED, clock,
                                         reason_code=VERIFICATION_FAILED), at=clock())  # fmt: skip
    assert store.write_transition(waiting)
    quiet = queued(store, clock)
    assert store.verified_items([claimed.id, quiet.id]) == {claimed.id: False}
    # By hand, with a clock behind the worker's: insertion order decides which is latest.
    early = clock() - timedelta(hours=1)
    mended = record(waiting.after, 0, PASSED, early, verification="v-2", actor="operator")
    assert store.record_check(waiting.after, mended)
    assert store.verified_items([claimed.id, quiet.id]) == {claimed.id: True}
    for position, evidence in enumerate([PASSED, STOPPED]):
        again = record(waiting.after, position, evidence, early, verification="v-3")
        assert store.record_check(waiting.after, again)
    assert store.verified_items([claimed.id]) == {claimed.id: False}
    last = record(waiting.after, 0, NOT_STARTED, early, verification="v-4")
    assert store.record_check(waiting.after, last)
    assert store.verified_items([claimed.id]) == {claimed.id: False}
    assert store.verified_items([]) == {}
    assert store.verified_items([quiet.id, 999]) == {}


def test_a_verification_whose_run_is_still_open_is_not_its_items_outcome_yet(
    store: Store, clock: FakeClock
) -> None:
    """While a worker runs the checks (its run open), the checks so far say nothing: the
    item reads as the verification before, and as this one once its run ends."""
    first, first_run = begin(store, clock)
    assert store.record_check(first, record(first, 0, FAILED, clock(), run_id=first_run))
    retry = settlement(ItemState.RETRY_SCHEDULED, OutcomeClass.SUCCEEDED, clock,
                       reason_code=VERIFICATION_FAILED, not_before=clock(),
                       counts_as_fix_turn=True)  # fmt: skip
    assert store.write_transition(settle(first, retry, at=clock()))
    claimed = acquire(store, clock, item_id=first.id)
    fix = NewRun("run-fix", RunKind.FIX, "w1", "inst-a", clock(), None, claim_token="tok-2")
    assert store.start_run(claimed, fix) is not None
    passed = record(claimed, 0, PASSED, clock(), verification="v-2", run_id="run-fix")
    assert store.record_check(claimed, passed)
    assert store.verified_items([first.id]) == {first.id: False}
    done = settle(claimed, settlement(ItemState.DONE, OutcomeClass.SUCCEEDED, clock), at=clock())
    assert store.write_transition(done)
    assert store.verified_items([first.id]) == {first.id: True}


def test_many_items_are_read_at_once_each_by_its_own_evidence(
    store: Store, clock: FakeClock
) -> None:
    outcomes = {}
    for index in range(6):
        claimed, run_id = begin(store, clock, run_id=f"run-many-{index}", token=f"tok-{index}")
        evidence = PASSED if index % 2 else FAILED
        one = record(claimed, 0, evidence, clock(), verification=f"v-many-{index}", run_id=run_id)
        assert store.record_check(claimed, one)
        end = settle(claimed, settlement(ItemState.DONE, OutcomeClass.SUCCEEDED, clock), at=clock())
        assert store.write_transition(end)
        outcomes[claimed.id] = evidence.passed
    assert store.verified_items(list(outcomes)) == outcomes
    some = sorted(outcomes)[::2]
    assert store.verified_items(some) == {item_id: outcomes[item_id] for item_id in some}


# -- the figures of `wrighty status` ------------------------------------------------------------


def test_status_counts_every_check_by_result_and_every_fix_turn_for_good(
    store: Store, clock: FakeClock
) -> None:
    """Verification's totals, read with the queue's figures: every check recorded, by a
    worker or by hand, as passed, failed (a non-zero exit or a signal) or not started, and
    every run of kind fix. They only grow: a requeue, which sets the item's own count of fix
    turns to 0, takes nothing from them (Prometheus reads them as counters)."""
    assert store.queue_figures(now=clock()).verification == VerificationFigures()
    claimed, run_id = begin(store, clock)
    for position, evidence in enumerate((PASSED, FAILED, STOPPED, NOT_STARTED)):
        assert store.record_check(claimed, record(claimed, position, evidence, clock(),
                                                  run_id=run_id))  # fmt: skip
    fix = settlement(ItemState.RETRY_SCHEDULED, OutcomeClass.SUCCEEDED, clock,
                     reason_code=VERIFICATION_FAILED, not_before=clock(),
                     counts_as_fix_turn=True)  # fmt: skip
    assert store.write_transition(settle(claimed, fix, at=clock()))
    again = acquire(store, clock, item_id=claimed.id)
    turn = NewRun("run-fix", RunKind.FIX, "w1", "inst-a", clock(), "s-1")
    assert store.start_run(again, turn) is not None
    assert store.record_check(again, record(again, 0, PASSED, clock(), verification="v-2",
                                            run_id="run-fix"))  # fmt: skip
    spent = settlement(ItemState.NEEDS_ATTENTION, OutcomeClass.SUCCEEDED, clock,
                       reason_code=VERIFICATION_FAILED)  # fmt: skip
    assert store.write_transition(settle(again, spent, at=clock()))
    waiting = fetched(store, claimed)
    assert store.record_check(waiting, record(waiting, 0, NOT_STARTED, clock(), verification="v-3",
                                              actor="operator"))  # fmt: skip
    counted = VerificationFigures(
        checks_passed=2, checks_failed=2, checks_not_started=2, fix_turns=1
    )
    assert store.queue_figures(now=clock()).verification == counted
    requeued = item_service.requeue_item(store, claimed.id, resume=False, now=clock.advance(1))
    assert requeued.fix_turns == 0
    assert store.queue_figures(now=clock()).verification == counted


# -- the item's columns -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "chosen", [None, (), ("tests",), ("lint", "tests")], ids=["config", "none", "one", "two"]
)
def test_the_checks_an_item_chose_read_back_from_create_and_an_edit(
    store: Store, clock: FakeClock, chosen: tuple[str, ...] | None
) -> None:
    item = store.create_item(new_item(verify_checks=chosen), at=clock(), actor="op")
    assert item.verify_checks == chosen
    assert fetched(store, item).verify_checks == chosen
    # An edit may change the choice (the store writes what the change's item says).
    change = edit(item, at=clock.advance(1), actor="op", priority=0)
    for now in (("types",), None, ()):
        chosen_now = dataclasses.replace(change.after, verify_checks=now)
        change = dataclasses.replace(change, after=chosen_now)
        assert store.write_transition(change)
        assert fetched(store, item).verify_checks == now
        assert [i.verify_checks for i in store.list_items()] == [now]
        change = edit(fetched(store, item), at=clock.advance(1), actor="op",
                      priority=change.after.priority ^ 1)  # fmt: skip


def test_fix_turns_survive_each_settle_and_a_requeue_sets_them_to_0(
    store: Store, clock: FakeClock
) -> None:
    made = queued(store, clock, verify_checks=("tests",))
    assert made.fix_turns == 0
    for turn in (1, 2):
        claimed = acquire(store, clock, item_id=made.id)
        assert claimed.fix_turns == turn - 1
        fix = settlement(ItemState.RETRY_SCHEDULED, OutcomeClass.SUCCEEDED, clock,
                         reason_code=VERIFICATION_FAILED, not_before=clock(),
                         counts_as_fix_turn=True)  # fmt: skip
        assert store.write_transition(settle(claimed, fix, at=clock()))
        after = fetched(store, made)
        assert (after.fix_turns, after.crash_retries, after.verify_checks) == (turn, 0, ("tests",))
    # Settled without a fix turn (a claim and a move to needs-attention): the count stays.
    claimed = acquire(store, clock, item_id=made.id)
    spent = settlement(ItemState.NEEDS_ATTENTION, OutcomeClass.SUCCEEDED, clock,
                       reason_code=VERIFICATION_FAILED)  # fmt: skip
    assert store.write_transition(settle(claimed, spent, at=clock()))
    assert fetched(store, made).fix_turns == 2
    requeued = item_service.requeue_item(store, made.id, resume=False, now=clock.advance(1))
    assert requeued.fix_turns == 0
    assert fetched(store, made).fix_turns == 0
    assert fetched(store, made).verify_checks == ("tests",)


# -- a store from before verification -------------------------------------------------------------

OLD_ITEM = (
    "INSERT INTO items (title, body, state, generation, queued_at, crash_retries, created_at, "
    "updated_at) VALUES ('kept', 'task', 'queued', 1, '2026-01-01T00:00:00.000000Z', 2, "
    "'2026-01-01T00:00:00.000000Z', '2026-01-01T00:05:00.000000Z')"
)
# A run with a value in every column, so that SQLite's rebuild of runs is seen to keep each.
OLD_RUN = (
    "INSERT INTO runs (run_id, item_id, generation, attempt, kind, worker_id, installation_id, "
    "started_at, ended_at, pid, process_started_at, exit_code, signal, outcome_class, "
    "confidence, session_id, diagnostic, claim_token, agent_report, agent_reason, agent, usage, "
    "input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, cost_source, "
    "models, turns, api_ms) VALUES ('old-run', 1, 1, 1, 'resume', 'w1', 'inst-a', "
    "'2026-01-01T00:00:01.000000Z', '2026-01-01T00:05:00.000000Z', 4242, 123.5, 1, NULL, "
    "'agent-failure', 'authoritative', 'sess-1', 'it broke', 'tok-1', 'failed', 'no luck', "
    "'codex', 'final', 10, 20, 30, 40, 0.5, 'reported', '[\"gpt-5\"]', 3, 1500)"
)


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_store_from_before_verification_keeps_its_items_and_runs(
    backend: str, tmp_path: Path
) -> None:
    clock = FakeClock()
    with store_before(backend, tmp_path, "verification", [OLD_ITEM, OLD_RUN]) as store:
        assert store.schema_version() == migrations(backend)[-1].version
        [item] = store.list_items()
        assert (item.title, item.crash_retries, item.fix_turns, item.verify_checks) == (
            "kept", 2, 0, None)  # fmt: skip
        runs = store.list_runs(item.id)
        assert runs.unreadable == []
        [run] = runs
        assert (run.kind, run.pid, run.process_started_at, run.exit_code, run.session_id) == (
            RunKind.RESUME, 4242, 123.5, 1, "sess-1")  # fmt: skip
        assert (run.outcome_class, run.diagnostic, run.agent_report, run.agent_reason) == (
            OutcomeClass.AGENT_FAILURE, "it broke", "failed", "no luck")  # fmt: skip
        assert run.agent == "codex"
        assert run.usage == Usage(10, 20, 30, 40, 0.5, ("gpt-5",), 3, 1500, final=True,
                                  cost_source="reported")  # fmt: skip
        # The new kind and the new table take writes.
        claimed = acquire(store, clock, item_id=item.id)
        fix = store.start_run(claimed, NewRun("r-fix", RunKind.FIX, "w1", "inst-a", clock(), None))
        assert fix is not None
        evidence = record(claimed, 0, PASSED, clock(), run_id="r-fix")
        assert store.record_check(claimed, evidence)
        assert store.list_checks(item.id) == [evidence]


# -- checks that fail on the base (docs/verify.md#checks-that-fail-on-the-base) ----------------


def test_a_check_failing_on_the_base_too_reads_back_so_and_does_not_fail_its_item(
    store: Store, clock: FakeClock
) -> None:
    claimed, run_id = begin(store, clock)
    marked = record(claimed, 0, ON_BASE, clock(), run_id=run_id)
    assert store.record_check(claimed, marked)
    assert store.record_check(claimed, record(claimed, 1, PASSED, clock(), run_id=run_id))
    assert [r.evidence.fails_on_base for r in store.list_checks(claimed.id)] == [True, False]
    done = settle(claimed, settlement(ItemState.DONE, OutcomeClass.SUCCEEDED, clock), at=clock())
    assert store.write_transition(done)
    # its latest verification passed: the one failure is the base's
    assert store.verified_items([claimed.id]) == {claimed.id: True}


def test_a_checks_result_on_a_base_is_kept_once_the_first_write_winning(
    store: Store, clock: FakeClock
) -> None:
    commit = "a" * 40
    first = BaseCheck(commit, "lint", "k1", True, "exit code 1", "E501\n", clock())
    assert store.base_check(commit, "lint", "k1") is None
    store.record_base_check(first)
    assert store.base_check(commit, "lint", "k1") == first
    # a second worker that ran it at the same time: no error, and the first stays
    store.record_base_check(dataclasses.replace(first, failed=False, ending="exit code 0"))
    assert store.base_check(commit, "lint", "k1") == first
    # another key, check or commit is another result
    assert store.base_check(commit, "lint", "k2") is None
    assert store.base_check(commit, "tests", "k1") is None
    assert store.base_check("b" * 40, "lint", "k1") is None
