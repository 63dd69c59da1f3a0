"""Stacked items in the stores (docs/landing.md#stacked-items), on every store: under
completion.stack a claim takes an item whose one unfinished predecessor waits in review or
landing with a branch of the claimant's installation, and says which branch it starts from;
a lander passes over an accepted item until the items it comes after are done."""

from __future__ import annotations

import dataclasses

from tests.conftest import FakeClock
from tests.store.test_claims import acquire, queued, request, settlement, start
from tests.store.test_landings import accepted
from wrighty.domain import landing
from wrighty.domain.claims import ClaimRequest, StackedOn, settle
from wrighty.domain.model import Item, Session
from wrighty.domain.outcomes import OutcomeClass
from wrighty.domain.states import ItemState
from wrighty.store.port import Store


def stacking(worker: str = "w9", **filters) -> ClaimRequest:
    return dataclasses.replace(request(worker, **filters), stack=True)


def in_review(
    store: Store, clock: FakeClock, title: str, *, branch: str | None, installation: str = "inst-a"
) -> Item:
    """An item worked in review, its session recording ``branch`` on ``installation``."""
    item = queued(store, clock, title)
    claimed = acquire(store, clock, item_id=item.id)
    start(store, claimed, clock)
    session = Session(claimed.id, "claude", None, "/tmp/p", installation, branch)
    assert store.record_session(claimed, session, at=clock())
    change = settle(
        claimed, settlement(ItemState.REVIEW, OutcomeClass.SUCCEEDED, clock), at=clock()
    )
    assert store.write_transition(change)
    return change.after


def landed(store: Store, clock: FakeClock, item: Item) -> None:
    """``item``, in review, accepted and landed by a lander."""
    moved = accepted(store, clock, store.get_item(item.id) or item)
    lines = store.acquire_landing(request("lander"), now=clock())
    assert lines is not None
    claimed, line_landing = lines
    assert claimed.id == moved.id
    assert store.write_landing(landing.landed(claimed, line_landing, "landed", at=clock()))


def test_a_stacked_claim_takes_an_item_whose_predecessor_waits_in_review_with_a_branch(
    store: Store, clock: FakeClock
) -> None:
    first = in_review(store, clock, "first", branch="wrighty/1-first")
    second = queued(store, clock, "second", after=(first.id,))
    assert store.acquire(request("w2"), now=clock()) is None  # completion.stack off: it waits

    held = store.acquire(stacking(), now=clock())

    assert held is not None
    assert held.item.id == second.id
    assert held.stacked_on == StackedOn(first.id, "wrighty/1-first")


def test_a_stacked_claim_takes_an_item_whose_predecessor_is_landing(
    store: Store, clock: FakeClock
) -> None:
    first = accepted(store, clock, in_review(store, clock, "first", branch="wrighty/1-first"))
    second = queued(store, clock, "second", after=(first.id,))
    held = store.acquire(stacking(), now=clock())
    assert held is not None
    assert (held.item.id, held.stacked_on) == (second.id, StackedOn(first.id, "wrighty/1-first"))


def test_a_stacked_claim_leaves_an_item_whose_predecessor_has_no_branch_here(
    store: Store, clock: FakeClock
) -> None:
    no_branch = in_review(store, clock, "no branch", branch=None)
    elsewhere = in_review(store, clock, "elsewhere", branch="wrighty/2-x", installation="inst-b")
    running = queued(store, clock, "running")
    acquire(store, clock, "w3", item_id=running.id)
    for predecessor in (no_branch, elsewhere, running):
        queued(store, clock, "after it", after=(predecessor.id,))
    assert store.acquire(stacking(), now=clock()) is None


def test_a_stacked_claim_does_not_stack_on_two_items_that_have_not_landed(
    store: Store, clock: FakeClock
) -> None:
    first = in_review(store, clock, "first", branch="wrighty/1-first")
    other = in_review(store, clock, "other", branch="wrighty/2-other")
    last = queued(store, clock, "after both", after=(first.id, other.id))
    assert store.acquire(stacking(), now=clock()) is None
    landed(store, clock, other)  # the other is done: the one left is stacked on
    held = store.acquire(stacking(), now=clock())
    assert held is not None
    assert (held.item.id, held.stacked_on) == (last.id, StackedOn(first.id, "wrighty/1-first"))


def test_a_lander_passes_over_an_item_until_the_items_it_comes_after_are_done(
    store: Store, clock: FakeClock
) -> None:
    first = in_review(store, clock, "first", branch="wrighty/1-first")
    second = queued(store, clock, "second", after=(first.id,))
    held = store.acquire(stacking(), now=clock())
    assert held is not None
    start(store, held.item, clock)
    session = Session(second.id, "claude", None, "/tmp/p", "inst-a", "wrighty/2-second")
    assert store.record_session(held.item, session, at=clock())
    change = settle(
        held.item, settlement(ItemState.REVIEW, OutcomeClass.SUCCEEDED, clock), at=clock()
    )
    assert store.write_transition(change)
    accepted(store, clock, change.after)  # the dependent, accepted first

    assert store.acquire_landing(request("lander"), now=clock()) is None  # first: in review

    accepted(store, clock, store.get_item(first.id) or first)
    lines = store.acquire_landing(request("lander"), now=clock())
    assert lines is not None
    assert lines[0].id == first.id  # behind the dependent in line, and landed first
