"""The store contract: every backend must pass these (parametrized by the `store` fixture)."""

from __future__ import annotations

import dataclasses
import sqlite3
import threading
from datetime import timedelta

import psycopg
import pytest

from tests.conftest import FakeClock
from tests.store.txhooks import execute_raw
from wrighty.domain.claims import ClaimRequest, LeaseTerms, Settlement, settle
from wrighty.domain.model import Change, Item, NewItem
from wrighty.domain.states import ItemState
from wrighty.domain.transitions import replay, transition
from wrighty.errors import AlreadyImported
from wrighty.store import Store


def new_item(title: str = "Fix the flaky test", *, queued: bool = False, **changes) -> NewItem:
    item = NewItem(
        title=title,
        body="The test in tests/test_io.py fails one run in ten. Find out why and fix it.",
        agent=None,
        timeout_seconds=None,
        workspace="/tmp/project",
        initial_state=ItemState.QUEUED if queued else ItemState.TODO,
    )
    return dataclasses.replace(item, **changes)


def test_created_item_reads_back_with_every_field(store: Store, clock: FakeClock) -> None:
    created = store.create_item(
        new_item(agent="codex", timeout_seconds=1800.0), at=clock(), actor="operator"
    )
    assert created.id >= 1
    assert store.get_item(created.id) == created
    assert created.state is ItemState.TODO
    assert created.generation == 0
    assert created.agent == "codex"
    assert created.timeout_seconds == 1800.0
    assert created.workspace == "/tmp/project"
    assert created.claimed_by is None
    assert created.lease_expires_at is None
    assert created.created_at == clock()


def test_a_second_item_with_a_taken_import_key_is_refused_and_writes_nothing(
    store: Store, clock: FakeClock
) -> None:
    first = store.create_item(
        new_item(import_key="tasks.md#a", import_fingerprint="f1"), at=clock(), actor="op"
    )
    with pytest.raises(AlreadyImported) as refused:
        store.create_item(
            new_item(import_key="tasks.md#a", import_fingerprint="f2", after=(first.id,)),
            at=clock(),
            actor="op",
        )
    assert refused.value.key == "tasks.md#a"
    assert store.list_items() == [first]
    assert store.find_imported(["tasks.md#a"]) == {"tasks.md#a": first}
    assert store.list_dependencies() == []
    other = store.create_item(new_item(import_key="tasks.md#b"), at=clock(), actor="op")
    unkeyed = [store.create_item(new_item(), at=clock(), actor="op") for _ in range(2)]
    assert [item.id for item in store.list_items()] == [
        first.id,
        other.id,
        *(i.id for i in unkeyed),
    ]


def test_queue_entry_time_is_stamped_only_when_created_queued(
    store: Store, clock: FakeClock
) -> None:
    todo = store.create_item(new_item(), at=clock(), actor="operator")
    queued = store.create_item(new_item(queued=True), at=clock(), actor="operator")
    assert todo.queued_at is None
    assert queued.queued_at == clock()


def test_creation_is_recorded_as_the_first_event(store: Store, clock: FakeClock) -> None:
    item = store.create_item(new_item(queued=True), at=clock(), actor="operator")
    [event] = store.list_events(item.id)
    assert (event.from_state, event.to_state, event.actor) == (None, ItemState.QUEUED, "operator")
    assert event.at == clock()
    assert event.generation == 0


def test_ids_increase_and_unknown_ids_read_as_none(store: Store, clock: FakeClock) -> None:
    first = store.create_item(new_item("one"), at=clock(), actor="operator")
    second = store.create_item(new_item("two"), at=clock(), actor="operator")
    assert second.id > first.id
    assert store.get_item(second.id + 100) is None
    assert store.list_events(second.id + 100) == []
    assert store.list_runs(first.id) == []
    assert store.get_session(first.id) is None


def test_list_filters_by_state_and_keeps_id_order(store: Store, clock: FakeClock) -> None:
    a = store.create_item(new_item("a"), at=clock(), actor="operator")
    b = store.create_item(new_item("b", queued=True), at=clock(), actor="operator")
    c = store.create_item(new_item("c"), at=clock(), actor="operator")
    assert [i.id for i in store.list_items()] == [a.id, b.id, c.id]
    assert [i.id for i in store.list_items([ItemState.TODO])] == [a.id, c.id]
    assert [i.id for i in store.list_items([ItemState.QUEUED, ItemState.TODO])] == [
        a.id,
        b.id,
        c.id,
    ]
    assert store.list_items([ItemState.DONE]) == []


def _move(store: Store, item: Item, to: ItemState, clock: FakeClock) -> Item:
    change = transition(item, to, at=clock.advance(1), actor="operator")
    assert store.write_transition(change)
    return change.after


def test_a_transition_updates_the_item_and_appends_its_event(
    store: Store, clock: FakeClock
) -> None:
    item = store.create_item(new_item(), at=clock(), actor="operator")
    after = _move(store, item, ItemState.QUEUED, clock)
    assert store.get_item(item.id) == after
    assert after.queued_at == clock()
    events = store.list_events(item.id)
    assert [(e.from_state, e.to_state) for e in events] == [
        (None, ItemState.TODO),
        (ItemState.TODO, ItemState.QUEUED),
    ]
    assert replay(events) is ItemState.QUEUED


@pytest.mark.parametrize(
    "stale_field",
    [
        {"state": ItemState.QUEUED},
        {"generation": 7},
        {"claimed_by": "worker-that-lost-its-claim"},
    ],
    ids=["state", "generation", "claimed_by"],
)
def test_a_write_guarded_by_a_stale_read_changes_nothing(
    store: Store, clock: FakeClock, stale_field: dict[str, object]
) -> None:
    item = store.create_item(new_item(), at=clock(), actor="operator")
    stale = dataclasses.replace(item, **stale_field)
    change = transition(stale, ItemState.CANCELLED, at=clock.advance(1), actor="operator")
    assert store.write_transition(change) is False
    assert store.get_item(item.id) == item
    assert len(store.list_events(item.id)) == 1


def test_a_second_writer_from_the_same_read_loses(store: Store, clock: FakeClock) -> None:
    item = store.create_item(new_item(), at=clock(), actor="operator")
    queue = transition(item, ItemState.QUEUED, at=clock.advance(1), actor="a")
    cancel = transition(item, ItemState.CANCELLED, at=clock(), actor="b")
    assert store.write_transition(queue) is True
    assert store.write_transition(cancel) is False
    assert store.get_item(item.id) == queue.after
    assert replay(store.list_events(item.id)) is ItemState.QUEUED


def _final(store: Store, clock: FakeClock, state: ItemState) -> Item:
    """An item a worker finished (done) or an operator cancelled."""
    if state is ItemState.CANCELLED:
        item = store.create_item(new_item(), at=clock(), actor="operator")
        return _move(store, item, ItemState.CANCELLED, clock)
    store.create_item(new_item(queued=True), at=clock(), actor="operator")
    terms = LeaseTerms(lease_seconds=60, default_timeout_seconds=600)
    held = store.acquire(ClaimRequest("w1", "inst-a", terms, "claude"), now=clock())
    assert held is not None
    claimed = held.item
    finished = settle(claimed, Settlement(ItemState.DONE, process_started=False), at=clock())
    assert store.write_transition(finished)
    return finished.after


FINAL_STATES = [ItemState.DONE, ItemState.CANCELLED]


@pytest.mark.parametrize("state", FINAL_STATES, ids=str)
def test_a_final_item_is_never_written_again(
    store: Store, clock: FakeClock, state: ItemState
) -> None:
    final = _final(store, clock, state)
    history = store.list_events(final.id)
    # Bypass the domain check to prove the store itself refuses, whether the write would
    # revive the item or only reword it.
    revived = dataclasses.replace(final, state=ItemState.QUEUED, updated_at=clock.advance(1))
    reworded = dataclasses.replace(final, reason="rewritten", updated_at=clock())
    for after in (revived, reworded):
        event = dataclasses.replace(history[-1], at=clock(), actor="bug", to_state=after.state)
        assert store.write_transition(Change(final, after, event)) is False
    assert store.get_item(final.id) == final
    assert store.list_events(final.id) == history
    assert replay(history) is state


@pytest.mark.parametrize("state", FINAL_STATES, ids=str)
def test_the_database_refuses_any_update_of_a_final_item(
    store: Store, clock: FakeClock, state: ItemState
) -> None:
    """Below the guarded queries: a hand-written UPDATE is refused by the schema's trigger."""
    final = _final(store, clock, state)
    for assignment in ("state = 'queued', claimed_by = NULL", "reason = 'rewritten'"):
        with pytest.raises(
            (sqlite3.IntegrityError, psycopg.Error), match="a done or cancelled item is final"
        ):
            execute_raw(store, f"UPDATE items SET {assignment} WHERE id = {final.id}")
    assert store.get_item(final.id) == final


@pytest.mark.parametrize(
    "statement",
    ["DELETE FROM item_events", "UPDATE item_events SET actor = 'someone else'"],
    ids=["delete", "update"],
)
def test_the_database_keeps_the_history_append_only(
    store: Store, clock: FakeClock, statement: str
) -> None:
    """Below the code: a hand-written change to the history is refused by the schema."""
    item = store.create_item(new_item(), at=clock(), actor="operator")
    assert store.write_transition(transition(item, ItemState.QUEUED, at=clock(), actor="operator"))
    history = store.list_events(item.id)
    with pytest.raises((sqlite3.IntegrityError, psycopg.Error), match="append-only"):
        execute_raw(store, statement)
    assert store.list_events(item.id) == history


def test_times_keep_microseconds_and_come_back_in_utc(store: Store, clock: FakeClock) -> None:
    clock.current = clock.current + timedelta(microseconds=123456)
    item = store.create_item(new_item(queued=True), at=clock(), actor="operator")
    read = store.get_item(item.id)
    assert read is not None
    assert read.queued_at == clock()
    assert read.queued_at.utcoffset() == timedelta(0)


def test_racing_writers_exactly_one_wins(store: Store, clock: FakeClock) -> None:
    """Eight threads, each with its own connection where the store has one, race one move."""
    item = store.create_item(new_item(), at=clock(), actor="operator")
    results: list[bool] = []
    barrier = threading.Barrier(8)

    def race(number: int) -> None:
        target = ItemState.QUEUED if number % 2 else ItemState.CANCELLED
        change = transition(item, target, at=clock(), actor=f"racer-{number}")
        barrier.wait()
        results.append(store.write_transition(change))

    threads = [threading.Thread(target=race, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == [False] * 7 + [True]
    assert len(store.list_events(item.id)) == 2


# -- health: the figures of `wrighty status` and the worker registry --------------------------


def test_queue_figures_count_every_state_and_the_waits(store: Store, clock: FakeClock) -> None:
    empty = store.queue_figures(now=clock())
    assert set(empty.counts) == set(ItemState)
    assert (empty.waiting, empty.oldest_queued_at, empty.retry_next_due) == (0, None, None)
    first = store.create_item(new_item(queued=True), at=clock(), actor="op")
    clock.advance(30)
    store.create_item(new_item(queued=True), at=clock(), actor="op")
    store.create_item(new_item(), at=clock(), actor="op")
    terms = LeaseTerms(lease_seconds=60, default_timeout_seconds=600)
    held = store.acquire(ClaimRequest("w1", "inst-a", terms, "claude"), now=clock())
    assert held is not None
    claimed = held.item
    assert claimed.id == first.id
    clock.advance(61)  # its lease has expired
    figures = store.queue_figures(now=clock())
    assert figures.counts[ItemState.QUEUED] == 1
    assert figures.counts[ItemState.RUNNING] == 1
    assert figures.counts[ItemState.TODO] == 1
    assert figures.counts[ItemState.DONE] == 0
    assert figures.waiting == 1
    assert figures.oldest_queued_at == clock() - timedelta(seconds=61)
    assert (figures.expired_leases, figures.unknown_queue_wait) == (1, 0)


def test_the_worker_registry_upserts_lists_prunes_and_removes(
    store: Store, clock: FakeClock
) -> None:
    from wrighty.domain.health import WorkerRow, WorkerState

    row = WorkerRow("w-0123456789ab", "ci", "inst-a", 42, 1.5, "1.0", WorkerState.IDLE, (),
                    clock(), clock())  # fmt: skip
    store.upsert_worker(row)
    clock.advance(10)
    busy = dataclasses.replace(
        row, state=WorkerState.RUNNING, items=(3, 7), last_heartbeat_at=clock()
    )
    store.upsert_worker(busy)
    assert store.list_workers() == [busy]
    old = dataclasses.replace(
        row, worker_id="w-00000000000a", last_heartbeat_at=clock() - timedelta(days=2)
    )
    store.upsert_worker(old)
    assert store.prune_workers(older_than=clock() - timedelta(days=1)) == 1
    assert store.list_workers() == [busy]
    store.remove_worker(busy.worker_id)
    assert store.list_workers() == []
