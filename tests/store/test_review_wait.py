"""The oldest review wait in the queue's figures (`wrighty status`, docs/states.md#review), on
both stores: when the item longest in review entered it, by its history's last move into
review, so that a same-state event (a failed integration) does not restart its wait."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from tests.conftest import FakeClock
from tests.store.test_claims import acquire, queued, settlement, start
from tests.store.txhooks import execute_raw
from wrighty.domain.claims import settle
from wrighty.domain.model import Change, Item
from wrighty.domain.outcomes import OutcomeClass
from wrighty.domain.states import ItemState
from wrighty.domain.transitions import history_event, transition
from wrighty.store import Store
from wrighty.store.fields import to_db_time


def to_review(store: Store, clock: FakeClock, made: Item) -> Item:
    """``made`` claimed, run and settled to review now, as a worker does under
    completion.review person."""
    claimed = acquire(store, clock, item_id=made.id)
    start(store, claimed, clock, session_id=f"sess-{made.id}")
    waiting = settlement(ItemState.REVIEW, OutcomeClass.SUCCEEDED, clock)
    assert store.write_transition(settle(claimed, waiting, at=clock()))
    found = store.get_item(made.id)
    assert found is not None
    assert found.state is ItemState.REVIEW
    return found


def integration_failed(item: Item, clock: FakeClock) -> Change:
    """The same-state event accept writes when its integration fails: the item stays in
    review, its reason and updated_at changed."""
    after = dataclasses.replace(
        item,
        reason_code="integration-failed",
        reason="the merge into main failed: a conflict in app.py",
        updated_at=clock(),
    )
    event = history_event(
        item, after, at=clock(), actor="op", reason_code=after.reason_code, reason=after.reason
    )
    return Change(before=item, after=after, event=event)


def test_the_oldest_review_wait_is_from_the_last_move_into_review(
    store: Store, clock: FakeClock
) -> None:
    assert store.queue_figures(now=clock()).oldest_review_at is None
    first = queued(store, clock, "first")
    second = queued(store, clock, "second")
    clock.advance(5)
    entered_first = clock()
    waiting_first = to_review(store, clock, first)
    clock.advance(60)
    entered_second = clock()
    waiting_second = to_review(store, clock, second)
    clock.advance(30)
    figures = store.queue_figures(now=clock())
    assert figures.counts[ItemState.REVIEW] == 2
    assert figures.oldest_review_at == entered_first

    # A failed integration leaves the item in review: its wait goes on (updated_at moved).
    assert store.write_transition(integration_failed(waiting_first, clock))
    moved = store.get_item(first.id)
    assert moved is not None
    assert (moved.state, moved.updated_at) == (ItemState.REVIEW, clock())
    assert store.queue_figures(now=clock()).oldest_review_at == entered_first

    # Rejected, worked on again and back in review: a new wait, from its new entry.
    rejected = transition(moved, ItemState.RETRY_SCHEDULED, at=clock(), actor="op",
                          not_before=clock(), reason_code="rejected")  # fmt: skip
    assert store.write_transition(rejected)
    assert store.queue_figures(now=clock()).oldest_review_at == entered_second
    clock.advance(10)
    back = store.get_item(first.id)
    assert back is not None
    again = to_review(store, clock, back)
    assert store.queue_figures(now=clock()).oldest_review_at == entered_second

    # Out of review (accepted, cancelled): no longer waiting.
    accepted = transition(waiting_second, ItemState.DONE, at=clock(), actor="op")
    assert store.write_transition(accepted)
    assert store.queue_figures(now=clock()).oldest_review_at == again.updated_at == clock()
    assert store.write_transition(transition(again, ItemState.CANCELLED, at=clock(), actor="op"))
    assert store.queue_figures(now=clock()).oldest_review_at is None


def test_an_item_in_review_with_no_move_into_it_waits_since_its_last_change(
    store: Store, clock: FakeClock
) -> None:
    """A row written by hand (no event into review): its updated_at stands in."""
    written = to_db_time(clock() - timedelta(hours=2))
    execute_raw(
        store,
        "INSERT INTO items (title, body, state, generation, created_at, updated_at) "
        f"VALUES ('by hand', 'b', 'review', 1, '{written}', '{written}')",
    )
    assert store.queue_figures(now=clock()).oldest_review_at == clock() - timedelta(hours=2)


def test_status_reports_a_review_wait_past_its_threshold(store: Store, clock: FakeClock) -> None:
    from wrighty.domain.health import Thresholds, Verdict
    from wrighty.services.status import status_report

    def report(limit: float) -> list[str]:
        found = status_report(
            store,
            now=clock(),
            thresholds=Thresholds(max_review_wait_seconds=limit),
            worker_max_age_seconds=60,
            installation_id="inst-a",
            default_agent="claude",
        )
        assert found.verdict is (Verdict.UNHEALTHY if found.problems else Verdict.HEALTHY)
        return [f"{p.check} {p.value} {p.limit}: {p.message}" for p in found.problems]

    to_review(store, clock, queued(store, clock))
    clock.advance(120)
    assert report(120) == []  # exactly the threshold passes
    clock.advance(1)
    assert report(120) == [
        "max_review_wait 121.0 120: an item has waited 121 s for review, more than 120 s"
    ]
