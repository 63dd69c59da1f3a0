"""The board's read (Store.list_open_items), on every store: the open items in the board's
order, cut at the limit, each with when it entered its state, its runs, its latest run, its
labels and the items it comes after."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.conftest import FakeClock
from tests.store.test_claims import _retry_scheduled, acquire, queued, settlement, start
from tests.store.test_contract import new_item
from tests.store.test_ledger import PARTIAL, begin
from tests.store.test_outbox import attention_change, running
from tests.store.test_scheduling import done
from wrighty.domain.board import OpenItem
from wrighty.domain.claims import settle
from wrighty.domain.model import Dependency, Item, NewRun
from wrighty.domain.outcomes import OutcomeClass, RunKind
from wrighty.domain.states import ItemState
from wrighty.domain.transitions import edit, transition
from wrighty.store import Store


def todo(store: Store, clock: FakeClock, title: str = "t", **changes) -> Item:
    return store.create_item(new_item(title, **changes), at=clock(), actor="op")


def needing_attention(store: Store, clock: FakeClock, title: str = "t", **changes) -> Item:
    """A queued item claimed, run and settled to needs-attention."""
    made = queued(store, clock, title, **changes)
    claimed = acquire(store, clock, "w-attn", item_id=made.id)
    start(store, claimed, clock)
    change = attention_change(claimed, clock)
    assert store.write_transition(change)
    return change.after


def in_review(store: Store, clock: FakeClock, title: str = "t", **changes) -> Item:
    """A queued item claimed, run and settled to review (a verified success)."""
    made = queued(store, clock, title, **changes)
    claimed = acquire(store, clock, "w-review", item_id=made.id)
    start(store, claimed, clock)
    change = settle(
        claimed, settlement(ItemState.REVIEW, OutcomeClass.SUCCEEDED, clock), at=clock()
    )
    assert store.write_transition(change)
    return change.after


def finished(store: Store, clock: FakeClock, title: str = "t") -> None:
    """One item done, one cancelled."""
    made = queued(store, clock, f"{title}, done")
    done(store, clock, acquire(store, clock, "w-done", item_id=made.id))
    cancelled = transition(
        todo(store, clock, f"{title}, cancelled"), ItemState.CANCELLED, at=clock(), actor="op"
    )
    assert store.write_transition(cancelled)


def store_item(store: Store, item_id: int) -> Item:
    item = store.get_item(item_id)
    assert item is not None
    return item


def board_ids(store: Store, limit: int = 1000) -> list[int]:
    return [entry.item.id for entry in store.list_open_items(limit=limit)]


def entry_of(store: Store, item_id: int) -> OpenItem:
    [entry] = [e for e in store.list_open_items(limit=1000) if e.item.id == item_id]
    return entry


# -- which items, in which order ------------------------------------------------------------


def test_every_open_state_in_the_boards_order_and_nothing_finished(
    store: Store, clock: FakeClock
) -> None:
    finished(store, clock, "lowest ids")  # finished first, so that their ids come first
    todo_low = todo(store, clock, "todo, P3", priority=3)
    todo_high = todo(store, clock, "todo, P1", priority=1)
    # Queued: by priority, then id, whatever the queue time says (the claim's order differs).
    queued_late = todo(store, clock, "queued last, lower id")
    queued_normal = queued(store, clock, "queued first, P2")
    queued_urgent = queued(store, clock, "queued, P0", priority=0)
    clock.advance(1)
    assert store.write_transition(transition(queued_late, ItemState.QUEUED, at=clock(), actor="op"))
    run_one = running(store, clock, "running")
    retry = _retry_scheduled(store, clock, due_in=60, session_id=None)
    attention_normal = needing_attention(store, clock, "needs attention, P2")
    attention_urgent = needing_attention(store, clock, "needs attention, P1", priority=1)
    review_normal = in_review(store, clock, "review, P2")
    review_urgent = in_review(store, clock, "review, P0", priority=0)
    finished(store, clock, "highest ids")

    entries = store.list_open_items(limit=1000)
    assert [e.item.id for e in entries] == [
        attention_urgent.id,
        attention_normal.id,
        review_urgent.id,
        review_normal.id,
        retry.id,
        run_one.id,
        queued_urgent.id,
        queued_late.id,
        queued_normal.id,
        todo_high.id,
        todo_low.id,
    ]
    # Each item as the store has it now.
    assert [e.item for e in entries] == [store_item(store, e.item.id) for e in entries]
    assert [e.item.state for e in entries] == [
        ItemState.NEEDS_ATTENTION,
        ItemState.NEEDS_ATTENTION,
        ItemState.REVIEW,
        ItemState.REVIEW,
        ItemState.RETRY_SCHEDULED,
        ItemState.RUNNING,
        ItemState.QUEUED,
        ItemState.QUEUED,
        ItemState.QUEUED,
        ItemState.TODO,
        ItemState.TODO,
    ]


def test_an_empty_store_or_one_with_only_finished_items_has_an_empty_board(
    store: Store, clock: FakeClock
) -> None:
    assert store.list_open_items(limit=10) == []
    finished(store, clock)
    assert store.list_open_items(limit=10) == []


def test_the_limit_cuts_the_tail_of_the_order(store: Store, clock: FakeClock) -> None:
    finished(store, clock, "before")  # they count against no limit
    todos = [todo(store, clock, f"todo {n}") for n in range(2)]
    # The cut falls by priority inside a state: not by id, nor by queue time.
    older_low = queued(store, clock, "queued first, P3", priority=3)
    clock.advance(1)
    newer_high = queued(store, clock, "queued later, P0", priority=0)
    attention = needing_attention(store, clock)
    whole = [attention.id, newer_high.id, older_low.id, *(i.id for i in todos)]
    assert board_ids(store) == whole
    assert board_ids(store, limit=len(whole)) == whole
    assert board_ids(store, limit=2) == [attention.id, newer_high.id]
    assert board_ids(store, limit=3) == whole[:3]
    assert board_ids(store, limit=1) == [attention.id]
    assert board_ids(store, limit=0) == []
    with pytest.raises(ValueError, match="limit"):
        store.list_open_items(limit=-1)


# -- what each entry says -----------------------------------------------------------------------


def test_since_is_the_latest_moves_time_and_an_edit_does_not_move_it(
    store: Store, clock: FakeClock
) -> None:
    created_at = clock()
    fresh = todo(store, clock, "only created")
    item = todo(store, clock, "queued, then edited")
    queued_at = clock.advance(10)
    moved = transition(item, ItemState.QUEUED, at=queued_at, actor="op")
    assert store.write_transition(moved)
    clock.advance(10)
    assert store.write_transition(edit(moved.after, at=clock(), actor="op", priority=0))
    attention = needing_attention(store, clock, "settled, then edited")
    settled_at = clock()
    clock.advance(10)
    assert store.write_transition(edit(attention, at=clock(), actor="op", priority=3))

    assert entry_of(store, fresh.id).since == created_at  # its creation is its only move
    edited = entry_of(store, item.id)
    assert edited.item.priority == 0  # the edit landed
    assert edited.since == queued_at
    assert store.list_events(item.id)[-1].at == queued_at + timedelta(seconds=10)
    stuck = entry_of(store, attention.id)
    assert stuck.item.priority == 3
    assert stuck.since == settled_at < clock()


def test_runs_and_the_latest_run_with_its_usage(store: Store, clock: FakeClock) -> None:
    never_run = queued(store, clock, "never run")
    # The first run's id sorts after the second's: the latest is the one started last.
    first, first_run = begin(store, clock, run_id="run-z-first")
    crashed = settle(
        first,
        settlement(
            ItemState.RETRY_SCHEDULED,
            OutcomeClass.PROCESS_CRASH,
            clock,
            not_before=clock(),
            counts_as_crash_retry=True,
        ),
        at=clock(),
    )
    assert store.write_transition(crashed)
    retried = entry_of(store, first.id)
    assert (retried.runs, retried.last_run) == (1, store.get_run(first_run))
    assert retried.last_run is not None
    assert retried.last_run.ended_at == clock()

    clock.advance(30)
    again = acquire(store, clock, "w2", item_id=first.id)
    second = NewRun("run-a-second", RunKind.FRESH, "w2", "inst-a", clock(), None, agent="codex")
    assert store.start_run(again, second) is not None
    assert store.record_usage(again, second.run_id, PARTIAL)

    entry = entry_of(store, first.id)
    assert entry.runs == 2
    assert entry.last_run == store.list_runs(first.id)[-1]
    assert entry.last_run is not None
    assert entry.last_run.run_id == "run-a-second"
    assert entry.last_run.ended_at is None  # the open run
    assert entry.last_run.usage == PARTIAL
    idle = entry_of(store, never_run.id)
    assert (idle.runs, idle.last_run) == (0, None)


def test_labels_by_name_and_the_items_it_comes_after_with_their_states(
    store: Store, clock: FakeClock
) -> None:
    dep_done = queued(store, clock, "done first")
    done(store, clock, acquire(store, clock, item_id=dep_done.id))
    dep_attention = needing_attention(store, clock, "stuck")
    dep_todo = todo(store, clock, "still to do")
    item = todo(
        store,
        clock,
        "comes after three",
        labels=("zeta", "alpha", "mid-1"),
        after=(dep_todo.id, dep_done.id, dep_attention.id),
    )
    plain = queued(store, clock, "no labels, no dependencies")

    entry = entry_of(store, item.id)
    assert entry.labels == ("alpha", "mid-1", "zeta")
    assert entry.after == (
        Dependency(item.id, dep_done.id, ItemState.DONE),
        Dependency(item.id, dep_attention.id, ItemState.NEEDS_ATTENTION),
        Dependency(item.id, dep_todo.id, ItemState.TODO),
    )
    assert list(entry.after) == store.list_dependencies(item.id)
    # An item others come after lists only what it comes after itself (nothing here).
    depended_on = entry_of(store, dep_todo.id)
    assert (depended_on.labels, depended_on.after) == ((), ())
    bare = entry_of(store, plain.id)
    assert (bare.labels, bare.after) == ((), ())

    # The dependency's state is read with the board: once it moves, the entry says so.
    assert store.write_transition(
        transition(dep_todo, ItemState.QUEUED, at=clock.advance(1), actor="op")
    )
    assert entry_of(store, item.id).after[-1] == Dependency(item.id, dep_todo.id, ItemState.QUEUED)
