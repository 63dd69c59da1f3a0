"""The scheduling contract (docs/scheduling.md), on every store: the claim order (priority,
then due retries, then queue time), dependencies, concurrency limits, and the guarded edit."""

from __future__ import annotations

import dataclasses
import sqlite3
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import psycopg
import pytest

from tests.conftest import FakeClock, open_postgres, postgres_schema
from tests.store.test_claims import _retry_scheduled, acquire, queued, request, settlement
from tests.store.test_contract import new_item
from tests.store.txhooks import statements_hooked
from wrighty.domain.claims import ClaimRequest, claim, settle
from wrighty.domain.model import Item
from wrighty.domain.outcomes import OutcomeClass
from wrighty.domain.scheduling import ConcurrencyLimits
from wrighty.domain.states import ItemState
from wrighty.domain.transitions import edit, replay, transition
from wrighty.errors import IllegalTransitionError, NotFoundError, WrightyError
from wrighty.services import items as item_service
from wrighty.store import Store
from wrighty.store.sqlbase import Tx


def done(store: Store, clock: FakeClock, claimed: Item) -> None:
    assert store.write_transition(
        settle(claimed, settlement(ItemState.DONE, OutcomeClass.SUCCEEDED, clock), at=clock())
    )


def limited(worker: str = "w1", *, agents=None, labels=None, **filters) -> ClaimRequest:
    limits = ConcurrencyLimits(agents=agents or {}, labels=labels or {})
    return dataclasses.replace(request(worker, **filters), limits=limits)


def take(store: Store, clock: FakeClock, claim_request: ClaimRequest) -> int | None:
    held = store.acquire(claim_request, now=clock())
    return None if held is None else held.item.id


# -- the order ----------------------------------------------------------------------------------


def test_a_higher_priority_comes_first_whatever_its_queue_time(
    store: Store, clock: FakeClock
) -> None:
    low = queued(store, clock, "P3, oldest", priority=3)
    clock.advance(1)
    normal = queued(store, clock, "P2")
    clock.advance(1)
    urgent = queued(store, clock, "P0, newest", priority=0)
    clock.advance(1)
    high = queued(store, clock, "P1", priority=1)
    order = [acquire(store, clock, f"w{n}").id for n in range(4)]
    assert order == [urgent.id, high.id, normal.id, low.id]


def test_within_a_priority_a_due_retry_comes_before_older_fresh_work(
    store: Store, clock: FakeClock
) -> None:
    fresh = queued(store, clock, "fresh, older")
    clock.advance(1)
    retry = _retry_scheduled(store, clock, due_in=0, session_id="s-1")
    assert retry.queued_at is not None
    assert fresh.queued_at is not None
    assert retry.queued_at > fresh.queued_at
    assert acquire(store, clock, "w2").id == retry.id
    assert acquire(store, clock, "w3").id == fresh.id


def test_fresh_work_of_a_higher_priority_comes_before_a_due_retry(
    store: Store, clock: FakeClock
) -> None:
    retry = _retry_scheduled(store, clock, due_in=0, session_id="s-1")
    urgent = queued(store, clock, "urgent, fresh", priority=1)
    assert acquire(store, clock, "w2").id == urgent.id
    assert acquire(store, clock, "w3").id == retry.id


def test_a_retry_of_another_installation_or_not_due_yet_is_passed_over(
    store: Store, clock: FakeClock
) -> None:
    elsewhere = _retry_scheduled(store, clock, due_in=0, session_id="s-1", installation="inst-b")
    later = _retry_scheduled(store, clock, due_in=60, session_id=None)
    fresh = queued(store, clock, "fresh, lowest", priority=3)
    assert acquire(store, clock, "w2", installation="inst-a").id == fresh.id
    assert store.acquire(request("w3", installation="inst-a"), now=clock()) is None
    assert acquire(store, clock, "w4", installation="inst-b").id == elsewhere.id
    clock.advance(60)
    assert acquire(store, clock, "w5", installation="inst-a").id == later.id


def test_within_a_priority_and_a_kind_the_oldest_queue_entry_then_the_lowest_id(
    store: Store, clock: FakeClock
) -> None:
    first = queued(store, clock, "first")
    second = queued(store, clock, "second, same time")
    clock.advance(1)
    todo = store.create_item(new_item("queued last"), at=clock(), actor="op")
    third = queued(store, clock, "third")
    assert store.write_transition(
        transition(todo, ItemState.QUEUED, at=clock.advance(1), actor="op")
    )
    order = [acquire(store, clock, f"w{n}").id for n in range(4)]
    assert order == [first.id, second.id, third.id, todo.id]


def test_the_priority_is_stored_and_kept_through_a_claim_and_a_settle(
    store: Store, clock: FakeClock
) -> None:
    item = queued(store, clock, priority=1)
    assert store.get_item(item.id) == item
    assert item.priority == 1
    claimed = acquire(store, clock)
    assert claimed.priority == 1
    done(store, clock, claimed)
    finished = store.get_item(item.id)
    assert finished is not None
    assert (finished.state, finished.priority) == (ItemState.DONE, 1)


def test_the_database_refuses_a_priority_out_of_range(store: Store, clock: FakeClock) -> None:
    with pytest.raises((sqlite3.IntegrityError, psycopg.errors.CheckViolation)):
        store.create_item(new_item(priority=4), at=clock(), actor="op")
    assert store.list_items() == []


# -- dependencies -------------------------------------------------------------------------------


def test_an_item_waits_until_every_item_it_comes_after_is_done(
    store: Store, clock: FakeClock
) -> None:
    first = queued(store, clock, "first")
    second = queued(store, clock, "second")
    last = queued(store, clock, "after both", priority=0, after=(first.id, second.id))
    assert acquire(store, clock, "w1").id == first.id
    running_second = acquire(store, clock, "w2")
    assert running_second.id == second.id
    assert store.acquire(request("w3"), now=clock()) is None  # both still running
    done(store, clock, store.get_item(first.id) or first)
    assert store.acquire(request("w3"), now=clock()) is None  # second is not done yet
    done(store, clock, running_second)
    assert acquire(store, clock, "w3").id == last.id


def test_an_item_that_waits_is_passed_over_for_the_next_eligible_one(
    store: Store, clock: FakeClock
) -> None:
    blocker = store.create_item(new_item("todo, never queued"), at=clock(), actor="op")
    waiting = queued(store, clock, "P0, waits", priority=0, after=(blocker.id,))
    other = queued(store, clock, "P3, free", priority=3)
    assert acquire(store, clock).id == other.id
    assert store.acquire(request("w2"), now=clock()) is None
    assert store.get_item(waiting.id) == waiting


def test_an_item_after_a_cancelled_or_stuck_item_is_never_claimed(
    store: Store, clock: FakeClock
) -> None:
    cancelled = queued(store, clock, "cancelled")
    item_service.cancel_item(store, cancelled.id, now=clock())
    stuck = queued(store, clock, "stuck")
    claimed = acquire(store, clock, item_id=stuck.id)
    assert store.write_transition(
        settle(
            claimed,
            settlement(ItemState.NEEDS_ATTENTION, OutcomeClass.AGENT_FAILURE, clock),
            at=clock(),
        )
    )
    queued(store, clock, "after the cancelled one", after=(cancelled.id,))
    queued(store, clock, "after the stuck one", after=(stuck.id,))
    assert store.acquire(request("w2"), now=clock()) is None


def test_the_store_refuses_to_move_an_item_to_running_before_its_dependencies_are_done(
    store: Store, clock: FakeClock
) -> None:
    """The guarded write itself, beside the claim's choice: what an edit committed after the
    choice read the dependencies (PostgreSQL) cannot be claimed past."""
    first = queued(store, clock, "first")
    later = queued(store, clock, "later", after=(first.id,))
    assert not store.write_transition(claim(later, request(), at=clock()))
    assert store.get_item(later.id) == later
    done(store, clock, acquire(store, clock, item_id=first.id))
    assert store.write_transition(claim(later, request("w2"), at=clock()))


def test_dependencies_and_labels_are_stored_with_the_item_and_its_creation_event(
    store: Store, clock: FakeClock
) -> None:
    a = queued(store, clock, "a")
    b = queued(store, clock, "b")
    c = queued(store, clock, "c", after=(a.id, b.id), labels=("docs", "web"), priority=1)
    deps = store.list_dependencies(c.id)
    assert [(d.item_id, d.depends_on, d.state) for d in deps] == [
        (c.id, a.id, ItemState.QUEUED),
        (c.id, b.id, ItemState.QUEUED),
    ]
    assert [(d.item_id, d.depends_on) for d in store.list_dependencies(a.id)] == [(c.id, a.id)]
    assert store.list_labels(c.id) == {c.id: ("docs", "web")}
    assert store.list_labels() == {c.id: ("docs", "web")}
    [event] = store.list_events(c.id)
    assert event.reason == f"priority P1; after items {a.id}, {b.id}; labels docs, web"


def test_an_item_after_an_unknown_item_is_refused_and_nothing_is_written(
    store: Store, clock: FakeClock
) -> None:
    known = queued(store, clock, "known")
    with pytest.raises(NotFoundError, match=f"no item {known.id + 100}"):
        store.create_item(new_item(after=(known.id, known.id + 100)), at=clock(), actor="op")
    assert [item.id for item in store.list_items()] == [known.id]
    assert store.list_dependencies() == []
    with pytest.raises(WrightyError, match="no item 99"):
        item_service.create_item(store, new_item(after=(99,)), now=clock())


# -- concurrency limits -------------------------------------------------------------------------


def test_an_agents_limit_holds_its_items_across_workers_and_installations(
    store: Store, clock: FakeClock
) -> None:
    first = queued(store, clock, "claude 1")
    second = queued(store, clock, "claude 2", agent="claude")
    codex = queued(store, clock, "codex", priority=3, agent="codex")
    agents = {"claude": 1}
    assert take(store, clock, limited("w1", agents=agents)) == first.id
    assert take(store, clock, limited("w2", installation="inst-b", agents=agents)) == codex.id
    assert take(store, clock, limited("w3", installation="inst-b", agents=agents)) is None
    assert take(store, clock, limited("w4", agent="claude", agents=agents)) is None
    done(store, clock, store.get_item(first.id) or first)
    assert take(store, clock, limited("w4", agent="claude", agents=agents)) == second.id


def test_an_item_without_an_agent_counts_for_the_default_agent(
    store: Store, clock: FakeClock
) -> None:
    named = queued(store, clock, "claude by name", agent="claude")
    queued(store, clock, "claude by default")
    assert take(store, clock, limited("w1", agents={"claude": 1})) == named.id
    assert take(store, clock, limited("w2", agents={"claude": 1})) is None
    # With another default, the item that names no agent is not claude's.
    other = dataclasses.replace(limited("w3", agents={"claude": 1}), default_agent="codex")
    assert take(store, clock, other) is not None


def test_a_label_limit_holds_items_with_that_label_whatever_their_agent(
    store: Store, clock: FakeClock
) -> None:
    first = queued(store, clock, "docs, claude", labels=("docs",))
    second = queued(store, clock, "docs and web, codex", agent="codex", labels=("docs", "web"))
    web = queued(store, clock, "web", labels=("web",))
    free = queued(store, clock, "no label", priority=3)
    labels = {"docs": 1, "web": 2}
    assert take(store, clock, limited("w1", labels=labels)) == first.id
    assert take(store, clock, limited("w2", labels=labels)) == web.id
    assert take(store, clock, limited("w3", labels=labels)) == free.id
    assert take(store, clock, limited("w4", labels=labels)) is None
    done(store, clock, store.get_item(first.id) or first)
    assert take(store, clock, limited("w4", labels=labels)) == second.id


def test_a_limit_of_two_lets_two_run(store: Store, clock: FakeClock) -> None:
    for n in range(3):
        queued(store, clock, f"claude {n}")
    agents = {"claude": 2}
    assert take(store, clock, limited("w1", agents=agents)) is not None
    assert take(store, clock, limited("w2", agents=agents)) is not None
    assert take(store, clock, limited("w3", agents=agents)) is None


def test_a_held_item_stays_queued_as_it_was(store: Store, clock: FakeClock) -> None:
    queued(store, clock, "runs")
    held = queued(store, clock, "held")
    assert take(store, clock, limited("w1", agents={"claude": 1})) is not None
    assert take(store, clock, limited("w2", agents={"claude": 1})) is None
    assert store.get_item(held.id) == held
    assert [e.to_state for e in store.list_events(held.id)] == [ItemState.QUEUED]


# -- the edit -----------------------------------------------------------------------------------


def test_an_edited_priority_changes_the_order_and_is_recorded(
    store: Store, clock: FakeClock
) -> None:
    first = queued(store, clock, "first")
    second = queued(store, clock, "second")
    clock.advance(1)
    change = item_service.edit_item(store, second.id, now=clock(), priority=0)
    assert change.after.priority == 0
    assert store.get_item(second.id) == change.after
    events = store.list_events(second.id)
    assert (events[-1].reason_code, events[-1].reason) == ("edited", "priority P2 -> P0")
    assert (events[-1].from_state, events[-1].to_state) == (ItemState.QUEUED, ItemState.QUEUED)
    assert replay(events) is ItemState.QUEUED
    assert acquire(store, clock).id == second.id
    assert acquire(store, clock, "w2").id == first.id


def test_an_edit_adds_and_removes_dependencies(store: Store, clock: FakeClock) -> None:
    a = queued(store, clock, "a")
    b = queued(store, clock, "b")
    item_service.edit_item(store, b.id, now=clock(), after=[a.id])
    assert [d.depends_on for d in store.list_dependencies(b.id) if d.item_id == b.id] == [a.id]
    assert acquire(store, clock).id == a.id
    assert store.acquire(request("w2"), now=clock()) is None
    change = item_service.edit_item(store, b.id, now=clock(), not_after=[a.id])
    assert change.event.reason == f"no longer after item {a.id}"
    assert acquire(store, clock, "w2").id == b.id
    assert replay(store.list_events(b.id)) is ItemState.RUNNING


@pytest.mark.parametrize("state", ["running", "done", "cancelled"])
def test_an_edit_of_a_running_or_final_item_is_refused(
    store: Store, clock: FakeClock, state: str
) -> None:
    item = queued(store, clock)
    claimed = acquire(store, clock)
    if state == "done":
        done(store, clock, claimed)
    elif state == "cancelled":
        item_service.cancel_item(store, item.id, now=clock())
    before = store.get_item(item.id)
    with pytest.raises(IllegalTransitionError, match=f"item {item.id} is {state}"):
        item_service.edit_item(store, item.id, now=clock(), priority=0)
    assert store.get_item(item.id) == before


def test_an_edit_that_would_close_a_cycle_is_refused(store: Store, clock: FakeClock) -> None:
    a = queued(store, clock, "a")
    b = queued(store, clock, "b", after=(a.id,))
    c = queued(store, clock, "c", after=(b.id,))
    with pytest.raises(WrightyError, match="cycle"):
        item_service.edit_item(store, a.id, now=clock(), after=[c.id])
    with pytest.raises(WrightyError, match="itself"):
        item_service.edit_item(store, a.id, now=clock(), after=[a.id])
    with pytest.raises(WrightyError, match="no item 99"):
        item_service.edit_item(store, a.id, now=clock(), after=[99])
    assert [(d.item_id, d.depends_on) for d in store.list_dependencies()] == [
        (b.id, a.id),
        (c.id, b.id),
    ]
    assert [e.to_state for e in store.list_events(a.id)] == [ItemState.QUEUED]


def test_the_store_refuses_a_dependency_that_closes_a_cycle(store: Store, clock: FakeClock) -> None:
    """The guarded write itself, beside the service's check: an edit planned from a stale
    read of the dependencies never lands a cycle."""
    a = queued(store, clock, "a")
    b = queued(store, clock, "b", after=(a.id,))
    c = queued(store, clock, "c", after=(b.id,))
    closing = edit(a, at=clock(), actor="op", after_added=[c.id])
    assert not store.write_transition(closing)
    assert store.get_item(a.id) == a
    assert [(d.item_id, d.depends_on) for d in store.list_dependencies()] == [
        (b.id, a.id),
        (c.id, b.id),
    ]
    fine = queued(store, clock, "d")
    assert store.write_transition(edit(a, at=clock(), actor="op", after_added=[fine.id]))


def test_an_edit_from_a_stale_read_changes_nothing(store: Store, clock: FakeClock) -> None:
    item = queued(store, clock)
    stale = edit(item, at=clock(), actor="op", priority=0)
    acquire(store, clock)
    assert not store.write_transition(stale)
    current = store.get_item(item.id)
    assert current is not None
    assert (current.state, current.priority) == (ItemState.RUNNING, 2)


def test_an_edit_of_a_waiting_item_keeps_its_state_and_queue_time(
    store: Store, clock: FakeClock
) -> None:
    retry = _retry_scheduled(store, clock, due_in=60, session_id="s-1")
    clock.advance(5)
    after = item_service.edit_item(store, retry.id, now=clock(), priority=1).after
    assert dataclasses.replace(retry, priority=1, updated_at=clock()) == after


# -- PostgreSQL: the locks that keep racing transactions honest ----------------------------------


# An advisory lock of this store's schema that some transaction waits for (its key is the
# hashtext of the lock's name, held in objid as an unsigned 32-bit number). Other tests, on
# other schemas, may be waiting for locks of their own at the same time.
_WAITING = """
SELECT count(*) FROM pg_locks
WHERE locktype = 'advisory' AND NOT granted AND objid::bigint IN (
    hashtext('wrighty: claim limits in ' || current_schema())::bigint & 4294967295,
    hashtext('wrighty: dependencies in ' || current_schema())::bigint & 4294967295)
"""


def _waits_on_an_advisory_lock(url: str) -> bool:
    with psycopg.connect(url, autocommit=True) as watcher:
        row = watcher.execute(_WAITING).fetchone()
    return bool(row and row[0])


def _paused_in(store: Store, statement: str, paused: threading.Event, go: threading.Event):
    """A hook that, after ``statement`` ran, holds its transaction open until ``go``."""

    def hook(name: str, number: int, tx: Tx) -> None:
        if name == statement and not paused.is_set():
            paused.set()
            assert go.wait(30)

    return statements_hooked(store, hook)


def _race(
    url: str, first: Callable[[], object], second: Callable[[], object], paused: threading.Event,
    go: threading.Event,
) -> tuple[object, object]:  # fmt: skip
    """Run ``first`` until it pauses inside its transaction, then ``second``; let ``first``
    commit only once ``second`` has finished or waits on an advisory lock, so that the outcome
    never depends on timing."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        one: Future[object] = pool.submit(first)
        assert paused.wait(30)
        two: Future[object] = pool.submit(second)
        deadline = time.monotonic() + 30
        while not two.done() and not _waits_on_an_advisory_lock(url):
            assert time.monotonic() < deadline, "the second claim neither finished nor waited"
            time.sleep(0.02)
        go.set()
        return one.result(timeout=30), two.result(timeout=30)


def test_two_racing_claims_under_a_limit_take_turns(clock: FakeClock) -> None:
    """PostgreSQL: the first claim holds its transaction open after choosing; the second, under
    the same limit, must count the first's item as running (it waits for the limits lock until
    the first commits), and so claims nothing."""
    with postgres_schema() as url:
        store = open_postgres(url)
        other = open_postgres(url)
        try:
            for n in range(2):
                queued(store, clock, f"claude {n}")
            paused, go = threading.Event(), threading.Event()
            with _paused_in(store, "select_next_claimable", paused, go):
                first, second = _race(
                    url,
                    lambda: take(store, clock, limited("w1", agents={"claude": 1})),
                    lambda: take(other, clock, limited("w2", agents={"claude": 1})),
                    paused,
                    go,
                )
            assert first is not None
            assert second is None
            assert len(store.list_items([ItemState.RUNNING])) == 1
        finally:
            other.close()
            store.close()


def test_two_racing_edits_never_land_both_halves_of_a_cycle(clock: FakeClock) -> None:
    """PostgreSQL: one edit makes A come after B and holds its transaction open; a second makes
    B come after A. It waits for the first (the dependencies lock), then sees its edge, and its
    guarded insert refuses the cycle."""
    with postgres_schema() as url:
        store = open_postgres(url)
        other = open_postgres(url)
        try:
            a = queued(store, clock, "a")
            b = queued(store, clock, "b")
            paused, go = threading.Event(), threading.Event()
            with _paused_in(store, "insert_dependency_guarded", paused, go):
                first, second = _race(
                    url,
                    lambda: store.write_transition(
                        edit(a, at=clock(), actor="op", after_added=[b.id])
                    ),
                    lambda: other.write_transition(
                        edit(b, at=clock(), actor="op", after_added=[a.id])
                    ),
                    paused,
                    go,
                )
            assert (first, second) == (True, False)
            assert [(d.item_id, d.depends_on) for d in store.list_dependencies()] == [(a.id, b.id)]
        finally:
            other.close()
            store.close()


def test_a_claim_retries_when_its_guard_refuses_the_item_it_chose(
    store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """If the guarded write refuses the chosen item (PostgreSQL: a dependency an edit committed
    after the choice), the claim chooses again rather than giving up or failing."""
    item = queued(store, clock)
    refusals = iter([True])

    original = store._apply  # type: ignore[attr-defined]

    def apply_once_refused(tx: Tx, change, **kw) -> None:  # type: ignore[no-untyped-def]
        if change.after.state is ItemState.RUNNING and next(refusals, False):
            from wrighty.store.sqlbase import Refused

            raise Refused
        original(tx, change, **kw)

    monkeypatch.setattr(store, "_apply", apply_once_refused)
    held = store.acquire(request(), now=clock())
    assert held is not None
    assert held.item.id == item.id
    assert held.item.generation == 1
    assert [e.to_state for e in store.list_events(item.id)] == [
        ItemState.QUEUED,
        ItemState.RUNNING,
    ]
