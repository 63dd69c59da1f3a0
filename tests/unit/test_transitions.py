from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.factories import make_item
from wrighty.domain.claims import CLAIMABLE_STATES
from wrighty.domain.model import Event, NewItem
from wrighty.domain.states import TERMINAL_STATES, TRANSITIONS, ItemState, parse_state
from wrighty.domain.transitions import (
    EDITABLE_STATES,
    ReplayError,
    creation_event,
    edit,
    replay,
    transition,
    validate_new_item,
)
from wrighty.errors import IllegalTransitionError, WrightyError

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def _move_kwargs(to: ItemState) -> dict[str, object]:
    return {"not_before": T0 + timedelta(minutes=2)} if to is ItemState.RETRY_SCHEDULED else {}


@pytest.mark.parametrize("from_state", list(ItemState))
@pytest.mark.parametrize("to_state", list(ItemState))
def test_exactly_the_listed_moves_are_allowed(from_state: ItemState, to_state: ItemState) -> None:
    item = make_item(from_state)
    if to_state in TRANSITIONS[from_state]:
        change = transition(item, to_state, at=T0, actor="t", **_move_kwargs(to_state))
        assert change.after.state is to_state
        assert (change.event.from_state, change.event.to_state) == (from_state, to_state)
    else:
        with pytest.raises(IllegalTransitionError, match=f"item 1 .*{to_state}"):
            transition(item, to_state, at=T0, actor="t", **_move_kwargs(to_state))


def test_final_states_have_no_way_out_and_say_so() -> None:
    for state in TERMINAL_STATES:
        assert TRANSITIONS[state] == frozenset()
    with pytest.raises(IllegalTransitionError, match="done, which is final"):
        transition(make_item(ItemState.DONE), ItemState.CANCELLED, at=T0, actor="t")


def test_leaving_running_releases_the_claim_but_keeps_the_generation() -> None:
    running = make_item(
        ItemState.RUNNING, generation=4, claimed_by="w1", lease_expires_at=T0 + timedelta(60)
    )
    change = transition(running, ItemState.DONE, at=T0, actor="worker:w1")
    assert (change.after.claimed_by, change.after.lease_expires_at) == (None, None)
    assert change.after.generation == change.event.generation == 4


def test_queue_entry_time_is_stamped_on_enqueue_and_retry_but_not_on_a_return() -> None:
    later = T0 + timedelta(minutes=5)
    queued = transition(make_item(ItemState.TODO), ItemState.QUEUED, at=later, actor="o").after
    assert queued.queued_at == later
    requeued = transition(
        make_item(ItemState.NEEDS_ATTENTION, queued_at=T0), ItemState.QUEUED, at=later, actor="o"
    ).after
    assert requeued.queued_at == later
    retry = transition(
        make_item(ItemState.RUNNING, queued_at=T0),
        ItemState.RETRY_SCHEDULED,
        at=later,
        actor="w",
        not_before=later + timedelta(minutes=2),
    ).after
    assert retry.queued_at == later
    assert retry.not_before == later + timedelta(minutes=2)
    returned = transition(
        make_item(ItemState.RUNNING, queued_at=T0), ItemState.QUEUED, at=later, actor="w"
    ).after
    assert returned.queued_at == T0


def test_reason_fields_describe_only_the_latest_move() -> None:
    attention = transition(
        make_item(ItemState.RUNNING),
        ItemState.NEEDS_ATTENTION,
        at=T0,
        actor="w",
        reason_code="timeout",
        reason="ran past 30m",
        next_action="wrighty requeue 1 --resume",
    ).after
    assert (attention.reason_code, attention.next_action) == (
        "timeout",
        "wrighty requeue 1 --resume",
    )
    requeued = transition(attention, ItemState.QUEUED, at=T0, actor="o").after
    assert (requeued.reason_code, requeued.reason, requeued.next_action) == (None, None, None)


def test_retry_scheduled_needs_a_due_time() -> None:
    with pytest.raises(ValueError, match="not_before"):
        transition(make_item(ItemState.RUNNING), ItemState.RETRY_SCHEDULED, at=T0, actor="w")


def _event(frm: ItemState | None, to: ItemState) -> Event:
    return Event(1, T0, "t", 0, frm, to, None, None)


def test_replay_refuses_histories_that_skip_or_break_the_rules() -> None:
    assert replay([_event(None, ItemState.TODO), _event(ItemState.TODO, ItemState.QUEUED)]) == (
        ItemState.QUEUED
    )
    with pytest.raises(ReplayError, match="no events"):
        replay([])
    with pytest.raises(ReplayError, match="creates the item in running"):
        replay([_event(None, ItemState.RUNNING)])
    with pytest.raises(ReplayError, match="starts from queued but the item was todo"):
        replay([_event(None, ItemState.TODO), _event(ItemState.QUEUED, ItemState.RUNNING)])
    with pytest.raises(ReplayError, match="not allowed"):
        replay([_event(None, ItemState.TODO), _event(ItemState.TODO, ItemState.DONE)])


@given(st.lists(st.sampled_from(list(ItemState)), max_size=40), st.booleans())
def test_random_operations_never_reach_an_illegal_state_and_replay_agrees(
    targets: list[ItemState], start_queued: bool
) -> None:
    new = NewItem("t", "b", None, None, None, ItemState.QUEUED if start_queued else ItemState.TODO)
    item = make_item(new.initial_state)
    events = [creation_event(new, item.id, at=T0, actor="t")]
    for step, target in enumerate(targets, start=1):
        at = T0 + timedelta(seconds=step)
        was_final = item.state in TERMINAL_STATES
        try:
            change = transition(item, target, at=at, actor="t", **_move_kwargs(target))
        except IllegalTransitionError:
            assert was_final or target not in TRANSITIONS[item.state]
            continue
        assert not was_final, "a final state was left"
        item = change.after
        events.append(change.event)
        assert replay(events) is item.state
    assert replay(events) is item.state


@pytest.mark.parametrize(
    ("title", "message"),
    [
        ("", "title is empty"),
        ("   ", "title is empty"),
        ("two\nlines", "one line"),
        ("x" * 201, "limit is 200"),
    ],
)
def test_bad_titles_are_refused_with_the_fix(title: str, message: str) -> None:
    with pytest.raises(WrightyError, match=message):
        validate_new_item(NewItem(title, "the task", None, None, None, ItemState.TODO))


def test_state_names_are_exactly_the_design_names() -> None:
    assert [s.value for s in ItemState] == [
        "todo",
        "queued",
        "running",
        "retry-scheduled",
        "needs-attention",
        "review",
        "landing",
        "done",
        "cancelled",
    ]
    with pytest.raises(ValueError, match="valid: todo, queued"):
        parse_state("finished")


def test_review_is_entered_from_running_and_left_by_accept_reject_or_cancel() -> None:
    """A verified success waits for a person: accepted it lands (or is done when there is
    nothing to land), rejected it goes back to work (retry-scheduled, to resume its session),
    or it is cancelled; nothing else. It is entered from running, from needs-attention when
    the checks pass by hand, and from landing when a person must decide."""
    assert {s for s in ItemState if ItemState.REVIEW in TRANSITIONS[s]} == {
        ItemState.RUNNING,
        ItemState.NEEDS_ATTENTION,
        ItemState.LANDING,
    }
    assert TRANSITIONS[ItemState.REVIEW] == {
        ItemState.LANDING,
        ItemState.DONE,
        ItemState.RETRY_SCHEDULED,
        ItemState.CANCELLED,
    }
    assert ItemState.REVIEW not in TERMINAL_STATES
    assert ItemState.REVIEW not in CLAIMABLE_STATES
    assert ItemState.REVIEW not in EDITABLE_STATES
    running = make_item(ItemState.RUNNING, claimed_by="w1", lease_expires_at=T0)
    waiting = transition(running, ItemState.REVIEW, at=T0, actor="worker w1").after
    assert (waiting.claimed_by, waiting.lease_expires_at) == (None, None)  # no lease
    rejected = transition(waiting, ItemState.RETRY_SCHEDULED, at=T0, actor="op", not_before=T0)
    assert rejected.after.state is ItemState.RETRY_SCHEDULED
    with pytest.raises(IllegalTransitionError, match="cannot move from review to queued"):
        transition(waiting, ItemState.QUEUED, at=T0, actor="op")
    with pytest.raises(IllegalTransitionError, match="item 1 is review: it waits for review"):
        edit(waiting, at=T0, actor="op", priority=0)
