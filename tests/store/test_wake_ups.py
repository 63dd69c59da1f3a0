"""The store tells listening workers when work becomes claimable (worker.wakeUps): each write
that puts an item in queued or retry-scheduled, once it has committed; never a write that
rolled back, and never one that makes nothing claimable. On both stores, through the port."""

from __future__ import annotations

import select
import time
from collections.abc import Iterator
from datetime import timedelta

import pytest

from tests.conftest import FakeClock
from tests.store.test_claims import acquire, queued, settlement, start
from tests.store.test_contract import new_item
from tests.store.txhooks import InjectedFault, fail_after, statements_hooked
from wrighty.domain.claims import settle
from wrighty.domain.model import Item
from wrighty.domain.outcomes import OutcomeClass
from wrighty.domain.states import ItemState
from wrighty.domain.transitions import transition
from wrighty.services import items as item_service
from wrighty.services import reaper
from wrighty.store import Store
from wrighty.store.port import WorkListener

# A word of work arrives within milliseconds of the commit; these bounds are only there so a
# missing one fails instead of hanging. Silence is checked over a short window: a word that
# should not be there would come as fast as one that should.
HEARD_WITHIN_SECONDS = 10.0
SILENT_FOR_SECONDS = 0.3


@pytest.fixture
def line(store: Store) -> Iterator[WorkListener]:
    listening = store.listen_for_work("w-test")
    yield listening
    listening.close()


def heard(line: WorkListener) -> bool:
    """Whether a word of work for this store arrives (everything that arrived is read). On
    PostgreSQL the channel is the database's: words about other schemas' stores (tests running
    beside this one) are read and passed over, and the wait goes on."""
    deadline = time.monotonic() + HEARD_WITHIN_SECONDS
    while (left := deadline - time.monotonic()) > 0:
        if select.select([line.fileno()], [], [], left)[0] and line.drain():
            return True
    return False


def silent(line: WorkListener) -> bool:
    """Whether no word for this store arrives for the whole window (others' are passed over)."""
    deadline = time.monotonic() + SILENT_FOR_SECONDS
    while (left := deadline - time.monotonic()) > 0:
        if select.select([line.fileno()], [], [], left)[0] and line.drain():
            return False
    return True


def crash_retry(store: Store, claimed: Item, clock: FakeClock, *, due_in: float) -> None:
    due = clock() + timedelta(seconds=due_in)
    retry = settlement(
        ItemState.RETRY_SCHEDULED, OutcomeClass.PROCESS_CRASH, clock, not_before=due,
        counts_as_crash_retry=True,
    )  # fmt: skip
    assert store.write_transition(settle(claimed, retry, at=clock()))


def test_an_item_created_queued_is_told_and_a_todo_item_is_not(
    store: Store, clock: FakeClock, line: WorkListener
) -> None:
    store.create_item(new_item(), at=clock(), actor="op")
    assert silent(line)
    store.create_item(new_item(queued=True), at=clock(), actor="op")
    assert heard(line)
    assert silent(line)  # one write, one word


def test_queue_a_retry_settlement_and_requeue_are_told_and_a_claim_is_not(
    store: Store, clock: FakeClock, line: WorkListener
) -> None:
    todo = store.create_item(new_item(), at=clock(), actor="op")
    assert silent(line)
    item_service.queue_item(store, todo.id, now=clock())
    assert heard(line)
    claimed = acquire(store, clock)
    start(store, claimed, clock, session_id="s-1")
    assert silent(line)
    crash_retry(store, claimed, clock, due_in=120)
    assert heard(line)  # a retry to come: the listener looks again when it is due
    item_service.requeue_item(store, todo.id, resume=False, now=clock())
    assert heard(line)


def test_a_settlement_that_ends_the_work_is_not_told(
    store: Store, clock: FakeClock, line: WorkListener
) -> None:
    item = queued(store, clock)
    assert heard(line)
    claimed = acquire(store, clock)
    start(store, claimed, clock)
    done = settlement(ItemState.DONE, OutcomeClass.SUCCEEDED, clock)
    assert store.write_transition(settle(claimed, done, at=clock()))
    assert silent(line)
    assert store.get_item(item.id).state is ItemState.DONE  # type: ignore[union-attr]


def test_the_reapers_requeue_is_told(store: Store, clock: FakeClock, line: WorkListener) -> None:
    queued(store, clock)
    acquire(store, clock)  # no run recorded: the reaper puts it back in the queue
    assert heard(line)
    clock.advance(3600)
    assert reaper.reap_expired(store, now=clock(), max_requeues=3)
    assert heard(line)


def test_a_write_that_rolls_back_or_is_refused_tells_nothing(
    store: Store, clock: FakeClock, line: WorkListener
) -> None:
    with statements_hooked(store, fail_after(2)), pytest.raises(InjectedFault):
        store.create_item(new_item(queued=True), at=clock(), actor="op")
    assert store.list_items() == []
    assert silent(line)
    todo = store.create_item(new_item(), at=clock(), actor="op")
    stale = transition(todo, ItemState.QUEUED, at=clock(), actor="op")
    item_service.cancel_item(store, todo.id, now=clock())
    assert store.write_transition(stale) is False
    assert silent(line)


def test_the_next_retry_due_is_the_earliest_still_to_come(store: Store, clock: FakeClock) -> None:
    assert store.next_retry_due(after=clock()) is None
    for due_in in (300, 60):
        claimed = acquire(store, clock, item_id=queued(store, clock).id)
        start(store, claimed, clock, session_id=f"s-{claimed.id}")
        crash_retry(store, claimed, clock, due_in=due_in)
    assert store.next_retry_due(after=clock()) == clock() + timedelta(seconds=60)
    # Due already (it is the claim's to take, not a time to wake for): the next one counts.
    assert store.next_retry_due(after=clock() + timedelta(seconds=60)) == clock() + timedelta(
        seconds=300
    )
    assert store.next_retry_due(after=clock() + timedelta(seconds=300)) is None


def test_a_word_comes_only_once_the_write_has_committed(
    store: Store, clock: FakeClock, line: WorkListener
) -> None:
    before_commit: list[bool] = []

    def look(name: str, number: int, tx: object) -> None:
        ready = select.select([line.fileno()], [], [], 0.05)[0]
        before_commit.append(bool(ready) and line.drain())  # (drain: this store's words only)

    with statements_hooked(store, look):
        store.create_item(new_item(queued=True), at=clock(), actor="op")
    assert before_commit
    assert not any(before_commit)
    assert heard(line)
