"""Landing in the stores (docs/landing.md): an accept is one guarded move that a reject, a
cancel or a second accept after it cannot undo; a lander claims the head of a target's line,
one at a time, in the order accepted; a lander whose lease ran out leaves the line to the
next."""

from __future__ import annotations

import dataclasses
import itertools
import threading
from datetime import timedelta
from typing import Any

import pytest

from tests.conftest import FakeClock
from tests.store.test_claims import LEASE, acquire, queued, request, settlement, start
from tests.store.txhooks import InjectedFault, fail_after, statements_hooked
from wrighty.domain import landing, review
from wrighty.domain.claims import settle
from wrighty.domain.model import Item
from wrighty.domain.notices import Source, with_notices
from wrighty.domain.outcomes import OutcomeClass
from wrighty.domain.states import ItemState
from wrighty.errors import IllegalTransitionError
from wrighty.store.port import Store


def in_review(store: Store, clock: FakeClock, title: str = "t") -> Item:
    queued(store, clock, title)
    claimed = acquire(store, clock)
    start(store, claimed, clock)
    change = settle(
        claimed, settlement(ItemState.REVIEW, OutcomeClass.SUCCEEDED, clock), at=clock()
    )
    assert store.write_transition(change)
    return change.after


def accepted(store: Store, clock: FakeClock, item: Item, target: str = "main") -> Item:
    move = landing.accept(item, at=clock(), actor="op", accepted_commit="a" * 40,
                          installation_id="inst-a", target=target)  # fmt: skip
    assert store.write_landing(move)
    return move.change.after


def test_an_accept_records_who_when_what_and_where(store: Store, clock: FakeClock) -> None:
    item = accepted(store, clock, in_review(store, clock))
    stored = store.get_landing(item.id)
    assert stored is not None
    assert (stored.accepted_by, stored.accepted_commit, stored.target) == ("op", "a" * 40, "main")
    assert stored.seq >= 1
    assert stored.step is landing.Step.WAITING
    assert store.get_item(item.id).state is ItemState.LANDING  # type: ignore[union-attr]


def test_a_reject_after_an_accept_is_refused_and_before_it_wins(
    store: Store, clock: FakeClock
) -> None:
    first = in_review(store, clock, "first")
    read_by_reject = first
    accepted(store, clock, first)
    stale = review.reject(read_by_reject, "no", at=clock(), actor="op2", max_rejections=3)
    assert not store.write_transition(stale)  # the accept won: the reject's read is old
    with pytest.raises(IllegalTransitionError):
        review.reject(store.get_item(first.id), "no", at=clock(), actor="op2",  # type: ignore[arg-type]
                      max_rejections=3)  # fmt: skip
    second = in_review(store, clock, "second")
    assert store.write_transition(
        review.reject(second, "no", at=clock(), actor="op2", max_rejections=3)
    )
    move = landing.accept(second, at=clock(), actor="op", accepted_commit=None,
                          installation_id="inst-a", target="main")  # fmt: skip
    assert not store.write_landing(move)
    assert store.get_landing(second.id) is None  # nothing of the accept was written


def test_racing_accepts_and_rejects_one_wins(store: Store, clock: FakeClock) -> None:
    item = in_review(store, clock)
    results: list[bool] = []

    def accept_it() -> None:
        results.append(store.write_landing(landing.accept(
            item, at=clock(), actor="a", accepted_commit=None, installation_id="inst-a",
            target="main")))  # fmt: skip

    def reject_it() -> None:
        results.append(store.write_transition(
            review.reject(item, "no", at=clock(), actor="r", max_rejections=3)))  # fmt: skip

    threads = [threading.Thread(target=accept_it), threading.Thread(target=reject_it)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == [False, True]


def test_landers_take_the_heads_of_lines_in_acceptance_order(
    store: Store, clock: FakeClock
) -> None:
    a = accepted(store, clock, in_review(store, clock, "a"))
    b = accepted(store, clock, in_review(store, clock, "b"))
    c = accepted(store, clock, in_review(store, clock, "c"), target="release")
    one = store.acquire_landing(request("l1"), now=clock())
    assert one is not None
    assert one[0].id == a.id
    assert one[0].claimed_by == "l1"
    assert one[0].generation == a.generation + 1
    two = store.acquire_landing(request("l2"), now=clock())
    assert two is not None
    assert two[0].id == c.id
    assert store.acquire_landing(request("l3"), now=clock()) is None
    # b waits behind a, even when asked for by name
    assert store.acquire_landing(request("l3"), now=clock(), item_id=b.id) is None
    # another installation's landers see none of these lines
    assert store.acquire_landing(request("l4", installation="inst-b"), now=clock()) is None


def test_a_lander_whose_lease_ran_out_leaves_the_line_to_the_next(
    store: Store, clock: FakeClock
) -> None:
    a = accepted(store, clock, in_review(store, clock, "a"))
    first = store.acquire_landing(request("l1"), now=clock())
    assert first is not None
    clock.advance(LEASE + 1)
    again = store.acquire_landing(request("l2"), now=clock())
    assert again is not None
    assert again[0].id == a.id
    assert again[0].claimed_by == "l2"
    # the first lander's writes are fenced off
    late = landing.landed(first[0], first[1], "merged", at=clock())
    assert not store.write_landing(late)


def test_a_landing_step_is_written_under_the_claim(store: Store, clock: FakeClock) -> None:
    a = accepted(store, clock, in_review(store, clock, "a"))
    claimed, held = store.acquire_landing(request("l1"), now=clock())  # type: ignore[misc]
    step = dataclasses.replace(held, step=landing.Step.INTEGRATING, intent="b" * 40,
                               intent_from="c" * 40, attempt=1)  # fmt: skip
    move = landing.LandingChange(
        landing.release(claimed, step, "stopping", at=clock()).change, step
    )
    assert store.write_landing(move)
    stored = store.get_landing(a.id)
    assert stored is not None
    assert (stored.intent, stored.attempt) == ("b" * 40, 1)
    clock.advance(timedelta(seconds=1).total_seconds())
    assert store.acquire_landing(request("l2"), now=clock()) is not None


def _fix_turn(store: Store, clock: FakeClock, claimed: Item, held: landing.Landing) -> Item:
    move = landing.fix_turn(claimed, held, reason_code="landing-conflict", why="conflicts",
                            prompt="resolve", max_fix_turns=2, at=clock())  # fmt: skip
    assert store.write_landing(move)
    return move.change.after


def test_a_line_waits_for_its_heads_fix_turn_and_keeps_its_order(
    store: Store, clock: FakeClock
) -> None:
    a = accepted(store, clock, in_review(store, clock, "a"))
    b = accepted(store, clock, in_review(store, clock, "b"))
    claimed = store.acquire_landing(request("l1"), now=clock())
    assert claimed is not None
    assert claimed[0].id == a.id
    _fix_turn(store, clock, *claimed)
    # a is with its agent: the line waits for it, b does not jump the queue
    assert store.acquire_landing(request("l2"), now=clock()) is None
    assert store.acquire_landing(request("l2"), now=clock(), item_id=b.id) is None
    # its fix turn runs (running) and passes: back to landing, at the head of the line
    fixing = store.acquire(request("w1"), now=clock())
    assert fixing is not None
    assert fixing.item.id == a.id
    start(store, fixing.item, clock)
    back = settle(fixing.item, settlement(ItemState.LANDING, OutcomeClass.SUCCEEDED, clock),
                  at=clock())  # fmt: skip
    assert store.write_transition(back)
    again = store.acquire_landing(request("l2"), now=clock())
    assert again is not None
    assert again[0].id == a.id
    stored = store.get_landing(a.id)
    assert stored is not None
    assert stored.step is not landing.Step.FIX_TURN


def test_no_lander_claims_a_line_another_lander_holds_anywhere_in_it(
    store: Store, clock: FakeClock
) -> None:
    a = accepted(store, clock, in_review(store, clock, "a"))
    b = accepted(store, clock, in_review(store, clock, "b"))
    first = store.acquire_landing(request("l1"), now=clock())
    assert first is not None
    # a goes to its fix turn and comes back while a lander holds b: b's lander keeps the line
    _fix_turn(store, clock, *first)
    fixing = store.acquire(request("w1"), now=clock())
    assert fixing is not None
    start(store, fixing.item, clock)
    # b was claimed while a was away (as a line that did not wait would have done)
    store_b = store.get_item(b.id)
    assert store_b is not None
    held_b = landing.claim(store_b, store.get_landing(b.id), request("l9"), at=clock())  # type: ignore[arg-type]
    assert store.write_landing(held_b)
    back = settle(fixing.item, settlement(ItemState.LANDING, OutcomeClass.SUCCEEDED, clock),
                  at=clock())  # fmt: skip
    assert store.write_transition(back)
    assert store.acquire_landing(request("l2"), now=clock()) is None  # b's lander holds it
    assert a.id != b.id


# -- a move out of landing and its notice (docs/notifications.md#events) -------------------------

NOTIFY = Source("inst-a", None, "https://wrighty.example.net")


def _landed(claimed: Item, held: landing.Landing, clock: FakeClock) -> landing.LandingChange:
    return landing.landed(claimed, held, "landed on main as 1a2b3c4d5e6f (fast-forward)",
                          at=clock())  # fmt: skip


def _back_to_review(
    claimed: Item, held: landing.Landing, clock: FakeClock
) -> landing.LandingChange:
    return landing.back_to_review(claimed, held, "the command failed", at=clock())


def _gave_up(claimed: Item, held: landing.Landing, clock: FakeClock) -> landing.LandingChange:
    return landing.fix_turn(claimed, held, reason_code="landing-conflict", why="conflicts",
                            prompt="resolve", max_fix_turns=0, at=clock())  # fmt: skip


MOVES = {"landed": _landed, "back-to-review": _back_to_review, "gave-up": _gave_up}


def _told(move: landing.LandingChange) -> landing.LandingChange:
    return dataclasses.replace(move, change=with_notices(move.change, NOTIFY))


def _seen(store: Store, item_id: int) -> tuple[object, ...]:
    return (store.get_item(item_id), store.get_landing(item_id), store.list_events(item_id),
            store.list_notices(("pending", "delivered", "given-up")))  # fmt: skip


@pytest.mark.parametrize("moving", MOVES.values(), ids=MOVES.keys())
def test_a_fenced_lander_writes_neither_its_move_nor_its_notice(
    store: Store, clock: FakeClock, moving: Any
) -> None:
    a = accepted(store, clock, in_review(store, clock, "a"))
    first = store.acquire_landing(request("l1"), now=clock())
    assert first is not None
    clock.advance(LEASE + 1)
    again = store.acquire_landing(request("l2"), now=clock())
    assert again is not None
    before = _seen(store, a.id)
    stale = _told(moving(*first, clock))
    assert stale.change.notices

    assert not store.write_landing(stale)

    assert _seen(store, a.id) == before  # no move, no notice
    own = _told(moving(*again, clock))
    assert store.write_landing(own)
    assert [one.notice for one in store.list_notices(("pending",))] == list(own.change.notices)
    assert store.get_item(a.id) == own.change.after


@pytest.mark.parametrize("moving", MOVES.values(), ids=MOVES.keys())
def test_a_landing_move_and_its_notice_are_written_whole_or_not_at_all(
    store: Store, clock: FakeClock, moving: Any
) -> None:
    """A failure after any statement of the move's transaction (the item, its event, its
    landing, the notice) leaves neither the move nor the notice."""
    a = accepted(store, clock, in_review(store, clock, "a"))
    held = store.acquire_landing(request("l1"), now=clock())
    assert held is not None
    before = _seen(store, a.id)
    move = _told(moving(*held, clock))
    for failing in itertools.count(1):
        with statements_hooked(store, fail_after(failing)) as statements:
            try:
                written = store.write_landing(move)
            except InjectedFault:
                assert _seen(store, a.id) == before, f"a failure after {statements[-1]}"
                continue
        break
    assert written
    assert "update_item_guarded" in statements
    assert "insert_notice" in statements
    assert failing == len(statements) + 1  # a failure was injected after every one of them
    [notice] = move.change.notices
    assert [one.notice for one in store.list_notices(("pending",))] == [notice]
    assert store.get_item(a.id) == move.change.after
