"""Landing in the queue's figures and on the board (`wrighty status`, the inbox, the console;
docs/landing.md#where-it-shows), on both stores: the landing items counted, the oldest landing
wait from the last move into landing (a lander's claim or release does not restart it), and
each landing item on the board with its landing, read in the board's one snapshot."""

from __future__ import annotations

from tests.conftest import FakeClock
from tests.store.test_claims import LEASE, queued, request
from tests.store.test_landings import accepted, in_review
from wrighty.domain import landing
from wrighty.domain.board import BOARD_LIMIT
from wrighty.domain.states import ItemState
from wrighty.store.port import Store


def test_the_oldest_landing_wait_is_from_the_last_move_into_landing(
    store: Store, clock: FakeClock
) -> None:
    assert store.queue_figures(now=clock()).oldest_landing_at is None
    first = in_review(store, clock, "first")
    second = in_review(store, clock, "second")
    clock.advance(5)
    entered_first = clock()
    accepted(store, clock, first)
    clock.advance(60)
    entered_second = clock()
    accepted(store, clock, second)
    clock.advance(30)
    figures = store.queue_figures(now=clock())
    assert figures.counts[ItemState.LANDING] == 2
    assert figures.oldest_landing_at == entered_first

    # A lander's claim and its release are landing -> landing: the wait goes on.
    claimed, held = store.acquire_landing(request("l1"), now=clock())  # type: ignore[misc]
    assert claimed.id == first.id
    clock.advance(10)
    assert store.write_landing(landing.release(claimed, held, "stopping", at=clock()))
    assert store.queue_figures(now=clock()).oldest_landing_at == entered_first

    # Landed: no longer landing; the next one is the oldest.
    claimed, held = store.acquire_landing(request("l2"), now=clock())  # type: ignore[misc]
    assert store.write_landing(landing.landed(claimed, held, "merged", at=clock()))
    figures = store.queue_figures(now=clock())
    assert figures.counts[ItemState.LANDING] == 1
    assert figures.oldest_landing_at == entered_second


def test_the_board_carries_each_landing_items_landing(store: Store, clock: FakeClock) -> None:
    waiting = accepted(store, clock, in_review(store, clock, "waits to land"))
    queued(store, clock, "queued")
    in_review(store, clock, "in review")
    entries = list(store.list_open_items(limit=BOARD_LIMIT))
    by_title = {entry.item.title: entry for entry in entries}
    assert [entry.item.state for entry in entries][:2] == [ItemState.REVIEW, ItemState.LANDING]
    shown = by_title["waits to land"].landing
    assert shown is not None
    assert (shown.item_id, shown.target, shown.accepted_by) == (waiting.id, "main", "op")
    assert by_title["queued"].landing is None
    assert by_title["in review"].landing is None
    claimed, _ = store.acquire_landing(request("l1"), now=clock())  # type: ignore[misc]
    clock.advance(LEASE / 2)
    again = {e.item.id: e for e in list(store.list_open_items(limit=BOARD_LIMIT))}
    assert again[claimed.id].item.claimed_by == "l1"
    assert again[claimed.id].landing is not None
