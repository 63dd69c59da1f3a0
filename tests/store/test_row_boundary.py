"""Every value read from a store goes through one boundary that checks it (docs/storage.md, "A
row that does not read"), on both stores: a value that does not read raises UnreadableError
naming the row and the field; a listing leaves the row out and lists it; the worker's set-aside
and a circuit's reset read it with a safe value in its place; a notice that does not read is
given up, not left claimed. The poisons are written past wrighty, as a hand edit would."""

from __future__ import annotations

import dataclasses
import math

import pytest

from tests.conftest import FakeClock
from tests.store.test_checks import FAILED, PASSED, record
from tests.store.test_claims import request
from tests.store.test_contract import new_item
from tests.store.test_ledger import begin
from tests.store.txhooks import execute_raw
from wrighty.domain.check_evidence import BaseCheck
from wrighty.domain.circuits import Circuit
from wrighty.domain.health import WorkerRow, WorkerState
from wrighty.domain.model import DEFAULT_PRIORITY, NewRun
from wrighty.domain.outbox import Notice
from wrighty.domain.outcomes import RunKind
from wrighty.domain.usage import Usage
from wrighty.errors import UnreadableError
from wrighty.operator.documents import json_text
from wrighty.store import Store
from wrighty.store.sqlite import SqliteStore


def poison(store: Store, statement: str) -> None:
    """``statement`` past every check of the store (its CHECK constraints included)."""
    if isinstance(store, SqliteStore):
        store._connection.execute("PRAGMA ignore_check_constraints = ON")
        try:
            execute_raw(store, statement)
        finally:
            store._connection.execute("PRAGMA ignore_check_constraints = OFF")
        return
    for table, check in (("items", "items_priority_check"), ("items", "items_state_check")):
        execute_raw(store, f"ALTER TABLE {table} DROP CONSTRAINT IF EXISTS {check}")
    execute_raw(store, statement)


ITEM_POISONS = [
    ("queued_at", "'yesterday'", "'yesterday' is not a time"),
    ("not_before", "'2026-01-01T00:00:00'", "is not a time"),  # no time zone
    ("lease_expires_at", "''", "'' is not a time"),
    ("priority", "-3", "-3 is not a whole number 0..3"),
    ("priority", "7", "7 is not a whole number 0..3"),
    ("state", "'paused'", "'paused' is none of todo, queued"),
    ("reason_code", "'Bad Code!'", "is not a reason code"),
    ("max_cost_usd", "1e308", "is not a number 0..1e+09"),
    ("crash_retries", "-1", "-1 is not a whole number"),
    ("fix_turns", "-1", "-1 is not a whole number"),
    ("rejections", "-2", "-2 is not a whole number"),
    ("handoffs", "-3", "-3 is not a whole number"),
    ("reviewed_commit", "'HEAD'", "'HEAD' is not a commit id"),
    ("reviewed_commit", "'--output=/tmp/x'", "is not a commit id"),
    ("reviewed_commit", "'" + "A" * 40 + "'", "is not a commit id"),
    ("verify_checks", "'{{{'", "is not a JSON list of check names"),
    ("verify_checks", "'\"tests\"'", "is not a JSON list of check names"),
    ("verify_checks", "'[\"tests\", 1]'", "is not a JSON list of check names"),
    ("verify_checks", "'[\"no such name!\"]'", "is not a JSON list of check names"),
]


@pytest.mark.parametrize(("field", "value", "problem"), ITEM_POISONS)
def test_an_item_value_that_does_not_read_names_its_item_and_field(
    store: Store, clock: FakeClock, field: str, value: str, problem: str
) -> None:
    bad = store.create_item(new_item("bad", queued=True), at=clock(), actor="op")
    good = store.create_item(new_item("good", queued=True), at=clock(), actor="op")
    poison(store, f"UPDATE items SET {field} = {value} WHERE id = {bad.id}")
    with pytest.raises(UnreadableError) as raised:
        store.get_item(bad.id)
    assert (raised.value.row, raised.value.field, raised.value.item_id) == (
        f"item {bad.id}", field, bad.id)  # fmt: skip
    assert problem in raised.value.problem
    listed = store.list_items()
    assert [item.id for item in listed] == [good.id]
    assert [error.field for error in listed.unreadable] == [field]
    assert [error.field for error in store.unreadable_rows()] == [field]
    moved = store.list_items_moved_since(clock())  # the morning view's read
    assert [item.id for item in moved] == [good.id]
    assert [(error.item_id, error.field) for error in moved.unreadable] == [(bad.id, field)]
    salvaged = store.salvage_item(bad.id)
    assert salvaged is not None
    assert [error.field for error in salvaged.problems] == [field]
    assert salvaged.value.priority in range(4)


def test_the_claim_meets_a_poison_item_as_an_error_naming_it(
    store: Store, clock: FakeClock
) -> None:
    bad = store.create_item(new_item("bad", queued=True), at=clock(), actor="op")
    poison(store, f"UPDATE items SET priority = -3 WHERE id = {bad.id}")
    with pytest.raises(UnreadableError, match=f"item {bad.id}: its priority does not read"):
        store.acquire(request("w1"), now=clock())
    salvaged = store.salvage_item(bad.id)
    assert salvaged is not None
    assert salvaged.value.priority == DEFAULT_PRIORITY


def _run_with_usage(store: Store, clock: FakeClock) -> tuple[int, str]:
    made = store.create_item(new_item("ran", queued=True), at=clock(), actor="op")
    held = store.acquire(request("w1"), now=clock())
    assert held is not None
    run = store.start_run(held.item, NewRun("r-1", RunKind.FRESH, "w1", "inst-a", clock(), None))
    assert run is not None
    assert store.record_usage(held.item, run.run_id, Usage(input_tokens=5, cost_usd=0.5))
    return made.id, run.run_id


@pytest.mark.parametrize(
    ("column", "value"),
    [("models", "'{{{'"), ("cost_usd", "1e308"), ("models", "'[NaN]'"), ("input_tokens", "-4")],
)
def test_a_run_value_that_does_not_read_is_left_out_of_the_ledger(
    store: Store, clock: FakeClock, column: str, value: str
) -> None:
    item_id, run_id = _run_with_usage(store, clock)
    poison(store, f"UPDATE runs SET {column} = {value}")
    assert store.list_runs(item_id) == []
    [error] = store.list_runs(item_id).unreadable
    assert (error.row, error.field) == (f"run {run_id}", column)
    ledger = store.list_ledger(default_agent="claude")
    assert ledger == []
    assert [e.field for e in ledger.unreadable] == [column]
    of_item = store.list_ledger(default_agent="claude", item_ids=[item_id])
    assert (of_item, [e.field for e in of_item.unreadable]) == ([], [column])


@pytest.mark.parametrize("value", ["'after lunch'", "'2026-12-03T14:00:00'"])
def test_a_reported_reset_that_does_not_read_names_its_run(
    store: Store, clock: FakeClock, value: str
) -> None:
    """`wrighty fail --usage-limit --resets-at`'s moment, read back (docs/usage-limits.md)."""
    item_id, run_id = _run_with_usage(store, clock)
    poison(store, f"UPDATE runs SET agent_resets_at = {value}")
    with pytest.raises(UnreadableError) as raised:
        store.get_run(run_id)
    assert (raised.value.row, raised.value.field) == (f"run {run_id}", "agent_resets_at")
    assert "is not a time" in raised.value.problem
    assert store.list_runs(item_id) == []


@pytest.mark.parametrize(
    ("value", "problem"),
    [("1e8", "100000000.0 is not a number -1e+07..1e+07"),
     ("-1e8", "-100000000.0 is not a number -1e+07..1e+07")],
)  # fmt: skip
def test_a_worker_clock_offset_out_of_range_does_not_read(
    store: Store, clock: FakeClock, value: str, problem: str
) -> None:
    """A worker's clock offset from the store's (docs/fleet.md): about 115 days at most."""
    row = WorkerRow("w-000000000001", None, "inst-a", 1, 0.0, "0", WorkerState.IDLE, (),
                    clock(), clock(), clock_offset_seconds=-600.0)  # fmt: skip
    store.upsert_worker(row)
    store.upsert_worker(dataclasses.replace(row, worker_id="w-000000000002"))
    assert [w.clock_offset_seconds for w in store.list_workers()] == [-600.0, -600.0]
    poison(store, f"UPDATE workers SET clock_offset_seconds = {value} "
                  "WHERE worker_id = 'w-000000000001'")  # fmt: skip
    listed = store.list_workers()
    assert [w.worker_id for w in listed] == ["w-000000000002"]
    [error] = listed.unreadable
    assert (error.row, error.field) == ("worker w-000000000001", "clock_offset_seconds")
    assert problem in str(error)


CHECK_POISONS = [
    ("argv = '{{{'", "argv", "is not a JSON list"),
    ("argv = '[\"ruff\", 1]'", "argv", "is not a JSON list of text"),
    ("name = 'no such name!'", "name", "is not a check name"),
    ("started_at = 'yesterday'", "started_at", "'yesterday' is not a time"),
    ("duration_seconds = -1", "duration_seconds", "is not a number 0"),
    ("exit_code = NULL, signal = 0", "signal", "0 is not a whole number 1.."),
    # CheckEvidence's rule: a check that ran has exactly one of an exit code and a signal, one
    # that did not start has neither.
    ("exit_code = NULL", "exit_code", "exactly one of exit code and signal"),
    ("signal = 9", "exit_code", "exactly one of exit code and signal"),
    ("start_failure = 'not found'", "start_failure", "did not start has no exit code"),
    ("timed_out = 2", "timed_out", "2 is not a yes or no"),  # SQLite: PostgreSQL's is boolean
    ("fails_on_base = 2", "fails_on_base", "2 is not a yes or no"),  # SQLite alone, as above
    # only a check that ran and failed can fail on the base too
    ("exit_code = 0, fails_on_base = TRUE", "fails_on_base", "ran and failed"),
]


BASE_CHECK_POISONS = [
    ("base_commit = 'HEAD'", "base_commit", "is not a commit"),
    ("check_name = 'no such name!'", "check_name", "is not a check name"),
    ("checked_at = 'yesterday'", "checked_at", "'yesterday' is not a time"),
    ("failed = 2", "failed", "2 is not a yes or no"),  # SQLite: PostgreSQL's is boolean
]


@pytest.mark.parametrize(("assignment", "field", "problem"), BASE_CHECK_POISONS)
def test_a_checks_kept_result_on_a_base_that_does_not_read_is_refused_naming_it(
    store: Store, clock: FakeClock, assignment: str, field: str, problem: str
) -> None:
    """A check's result on a base commit (docs/verify.md#checks-that-fail-on-the-base), read back
    by a worker: a value that does not read is refused with the row and field it names."""
    if field == "failed" and not isinstance(store, SqliteStore):
        pytest.skip("PostgreSQL's typed column holds no such value")
    commit = "c" * 40
    store.record_base_check(BaseCheck(commit, "lint", "k", True, "exit code 1", "", clock()))
    poison(store, f"UPDATE base_checks SET {assignment}")
    name = "no such name!" if field == "check_name" else "lint"
    found = "HEAD" if field == "base_commit" else commit
    with pytest.raises(UnreadableError) as raised:
        store.base_check(found, name, "k")
    assert (raised.value.field, raised.value.row) == (field, f"base check {found}/{name}")
    assert problem in raised.value.problem


@pytest.mark.parametrize(("assignment", "field", "problem"), CHECK_POISONS)
def test_a_check_record_that_does_not_read_is_left_out_and_named(
    store: Store, clock: FakeClock, assignment: str, field: str, problem: str
) -> None:
    """docs/verify.md's evidence, as `show` lists it: a record with a value that does not read,
    or that breaks a check's rule, is left out with its line; the others read."""
    if assignment.endswith("= 2") and not isinstance(store, SqliteStore):
        pytest.skip("PostgreSQL's boolean column holds no other value")
    claimed, run_id = begin(store, clock)
    bad = record(claimed, 0, FAILED, clock(), run_id=run_id)
    good = record(claimed, 1, PASSED, clock(), run_id=run_id)
    assert store.record_check(claimed, bad)
    assert store.record_check(claimed, good)
    # Past the schema's insert-only triggers too, as a hand edit with the triggers dropped.
    if isinstance(store, SqliteStore):
        execute_raw(store, "DROP TRIGGER checks_insert_only_update")
    else:
        execute_raw(store, "DROP TRIGGER checks_insert_only ON checks")
    poison(store, f"UPDATE checks SET {assignment} WHERE position = 0")
    listed = store.list_checks(claimed.id)
    assert listed == [good]
    [error] = listed.unreadable
    assert (error.row, error.field, error.item_id) == ("check v-1/0", field, claimed.id)
    assert problem in error.problem
    assert [e.field for e in store.unreadable_rows()] == [field]


def test_a_cost_postgresql_holds_as_nan_does_not_read(store: Store, clock: FakeClock) -> None:
    if isinstance(store, SqliteStore):
        pytest.skip("SQLite stores NaN as NULL: no NaN can be read back from it")
    item_id, _ = _run_with_usage(store, clock)
    poison(store, "UPDATE runs SET cost_usd = 'NaN'")
    assert [e.field for e in store.list_runs(item_id).unreadable] == ["cost_usd"]


def test_a_notice_whose_payload_does_not_read_is_given_up_not_left_claimed(
    store: Store, clock: FakeClock
) -> None:
    notice = Notice("n-1", "item-failed", ("item-failed",), clock(), None, None, {"a": 1})
    assert store.add_notice_once(notice)
    poison(store, "UPDATE notices SET payload = '{{{'")
    assert store.claim_notice("d-1", now=clock(), lease_seconds=60) is None
    listed = store.list_notices(["pending", "given-up"])
    assert listed == []
    [error] = listed.unreadable
    assert (error.row, error.field) == ("notice n-1", "payload")
    if isinstance(store, SqliteStore):
        raw = store._connection.execute("SELECT * FROM notices").fetchone()
    else:
        with store._write() as tx:  # type: ignore[attr-defined]
            raw = tx._connection.execute("SELECT * FROM notices").fetchone()
    assert (raw["state"], raw["attempts"], raw["claimed_by"]) == ("given-up", 0, None)
    assert raw["last_error"].startswith("not delivered: notice n-1: its payload does not read")


def test_a_circuit_whose_times_do_not_read_is_salvaged_for_its_reset(
    store: Store, clock: FakeClock
) -> None:
    assert store.write_circuit(Circuit("c"), Circuit("c", until=clock(), reason="429"), at=clock())
    poison(store, "UPDATE circuits SET opened_at = 'not-a-time'")
    with pytest.raises(UnreadableError, match="circuit c: its opened_at does not read"):
        store.get_circuit("c")
    assert store.list_circuits() == []
    found = store.salvage_circuit("c")
    assert found is not None
    assert [error.field for error in found.problems] == ["opened_at"]
    assert store.write_circuit(found.value, Circuit("c", version=found.value.version), at=clock())
    assert store.get_circuit("c").until is None


def test_json_never_carries_a_number_that_is_not_finite() -> None:
    text = json_text({"cost": math.inf, "runs": [{"x": -math.inf, "y": math.nan}], "n": 1.5})
    assert text == '{"cost": null, "runs": [{"x": null, "y": null}], "n": 1.5}'
