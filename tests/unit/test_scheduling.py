"""The scheduling vocabulary (wrighty/domain/scheduling.py) and the edit move: priorities,
labels, cycles, what a waiting item waits for, and the limits as wrighty.json sets them."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.factories import make_item
from wrighty.config import check_config_text, limits_of
from wrighty.domain.model import Event, Item
from wrighty.domain.scheduling import (
    ConcurrencyLimits,
    Wait,
    check_dependencies,
    check_label,
    dependency_wait,
    find_cycle,
    limit_hold,
    parse_priority,
    priority_name,
    running_counts,
)
from wrighty.domain.states import ItemState
from wrighty.domain.transitions import edit, replay, transition
from wrighty.errors import IllegalTransitionError, WrightyError

AT = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def item(state: ItemState = ItemState.QUEUED, **changes: object) -> Item:
    return make_item(state, **{"queued_at": AT, "created_at": AT, "updated_at": AT, **changes})


@pytest.mark.parametrize(
    ("text", "priority"), [("0", 0), ("3", 3), ("P0", 0), ("p1", 1), (" P2 ", 2)]
)
def test_priorities_are_read_as_numbers_or_p_names(text: str, priority: int) -> None:
    assert parse_priority(text) == priority
    assert priority_name(priority) == f"P{priority}"


@pytest.mark.parametrize("text", ["4", "-1", "P4", "high", "", "PP1", "1.0", "٣"])
def test_other_priorities_are_refused_saying_what_is_accepted(text: str) -> None:
    with pytest.raises(WrightyError, match="give 0 to 3 or P0 to P3"):
        parse_priority(text)


@pytest.mark.parametrize("label", ["docs", "web-ui", "a1_b", "x" * 40])
def test_labels_like_agent_names_are_accepted(label: str) -> None:
    check_label(label)


@pytest.mark.parametrize("label", ["Docs", "1docs", "", "a b", "x" * 41, "docs\n"])
def test_other_labels_are_refused(label: str) -> None:
    with pytest.raises(WrightyError, match="labels use lowercase"):
        check_label(label)


def test_a_cycle_is_found_with_its_path() -> None:
    edges = [(2, 1), (3, 2), (4, 3), (5, 1)]  # 2 after 1, 3 after 2, ...
    assert find_cycle(edges, 1, 4) == [4, 3, 2, 1]
    assert find_cycle(edges, 1, 2) == [2, 1]
    assert find_cycle(edges, 1, 1) == [1]
    assert find_cycle(edges, 4, 1) is None  # 4 after 1 is already implied, not a cycle
    assert find_cycle(edges, 5, 4) is None


@given(st.lists(st.tuples(st.integers(1, 6), st.integers(1, 6)), max_size=15))
def test_edges_added_through_the_check_never_make_a_cycle(pairs: list[tuple[int, int]]) -> None:
    kept: list[tuple[int, int]] = []
    for later, earlier in pairs:
        if find_cycle(kept, later, earlier) is None:
            kept.append((later, earlier))
    # A topological order exists: repeatedly remove an item that comes after nothing left.
    remaining = set(kept)
    nodes = {n for edge in kept for n in edge}
    while nodes:
        free = {n for n in nodes if not any(later == n for later, _ in remaining)}
        assert free, f"a cycle got through: {sorted(remaining)}"
        nodes -= free
        remaining = {(a, b) for a, b in remaining if a not in free and b not in free}


def test_dependencies_on_unknown_items_or_closing_a_cycle_are_refused() -> None:
    known = {1: ItemState.QUEUED, 2: ItemState.DONE}
    check_dependencies(None, [1, 2], known=known)
    with pytest.raises(WrightyError, match="--after 3: no item 3"):
        check_dependencies(None, [1, 3], known=known)
    with pytest.raises(WrightyError, match=r"cycle: item 2 already comes after item 1$"):
        check_dependencies(1, [2], known=known, edges=[(2, 1)])
    with pytest.raises(WrightyError, match="cannot come after itself"):
        check_dependencies(1, [1], known=known)


def test_a_waiting_item_says_which_items_it_waits_for() -> None:
    upstream = {3: [1, 2]}
    states = {1: ItemState.RUNNING, 2: ItemState.DONE}
    assert dependency_wait(3, upstream, states) == Wait("after", "waits for item 1 (running)", (1,))
    states[2] = ItemState.QUEUED
    assert dependency_wait(3, upstream, states) == Wait(
        "after", "waits for items 1 (running), 2 (queued)", (1, 2)
    )
    assert dependency_wait(3, upstream, {1: ItemState.DONE, 2: ItemState.DONE}) is None
    assert dependency_wait(9, upstream, states) is None


def test_a_cancelled_or_stuck_item_upstream_blocks() -> None:
    upstream = {3: [2], 2: [1]}
    cancelled = dependency_wait(3, upstream, {2: ItemState.QUEUED, 1: ItemState.CANCELLED})
    assert cancelled is not None
    assert (cancelled.kind, cancelled.items) == ("blocked", (2,))
    assert cancelled.reason == (
        "blocked: item 1 was cancelled (item 2 waits for it); "
        "`wrighty edit 3 --not-after 2` lets it start without it"
    )
    stuck = dependency_wait(3, upstream, {2: ItemState.NEEDS_ATTENTION, 1: ItemState.DONE})
    assert stuck is not None
    assert stuck.reason == "blocked: item 2 needs attention; `wrighty show 2` says what it needs"


def test_a_limit_reached_holds_with_the_setting_that_sets_it() -> None:
    running = running_counts([("claude", ["docs"]), ("codex", ["docs", "web"])])
    limits = ConcurrencyLimits(agents={"claude": 1, "codex": 2}, labels={"docs": 2, "web": 3})
    held = limit_hold("claude", [], running, limits)
    assert held == Wait(
        "held",
        "held: agent claude runs 1 of 1 (agents.claude.maxConcurrent)",
        (),
        "agents.claude.maxConcurrent",
    )
    label = limit_hold("codex", ["web", "docs"], running, limits)
    assert label is not None
    assert label.reason == "held: label docs runs 2 of 2 (limits.labels.docs.maxConcurrent)"
    assert limit_hold("codex", ["web"], running, limits) is None
    assert limit_hold("gemini", [], running, limits) is None


def test_an_edit_keeps_the_state_and_says_what_changed() -> None:
    waiting = item(ItemState.NEEDS_ATTENTION, generation=3, reason_code="agent-failure")
    change = edit(
        waiting, at=AT, actor="op", priority=0, after_added=[5, 6], after_removed=[4],
        after_now=[4, 5],
    )  # fmt: skip
    assert change.after.state is ItemState.NEEDS_ATTENTION
    assert (change.after.priority, change.after.generation) == (0, 3)
    assert change.after.reason_code == "agent-failure"  # why it needs attention stays
    assert (change.after_added, change.after_removed) == ((6,), (4,))
    assert change.event.reason == "priority P2 -> P0; now after item 6; no longer after item 4"
    assert (change.event.from_state, change.event.to_state) == (waiting.state, waiting.state)


@pytest.mark.parametrize("state", [ItemState.RUNNING, ItemState.DONE, ItemState.CANCELLED])
def test_an_edit_of_a_running_or_final_item_is_refused(state: ItemState) -> None:
    with pytest.raises(IllegalTransitionError, match=f"item 1 is {state}"):
        edit(item(state), at=AT, actor="op", priority=0)


def test_an_edit_of_a_landing_item_says_it_lands_as_it_was_accepted() -> None:
    with pytest.raises(
        IllegalTransitionError,
        match="item 1 is landing: it was accepted and lands as it was accepted",
    ):
        edit(item(ItemState.LANDING), at=AT, actor="op", priority=0)


def test_an_edit_that_changes_nothing_is_refused() -> None:
    with pytest.raises(WrightyError, match="nothing to change"):
        edit(item(), at=AT, actor="op", priority=2, after_added=[4], after_now=[4])


def test_a_history_with_edits_replays_and_an_edit_of_a_running_item_does_not() -> None:
    created = transition(item(ItemState.TODO), ItemState.QUEUED, at=AT, actor="op")
    queued = created.after
    edited = edit(queued, at=AT, actor="op", priority=1)
    claimed = transition(edited.after, ItemState.RUNNING, at=AT, actor="w", new_generation=True)
    first = Event(1, AT, "op", 0, None, ItemState.TODO, None, None)
    assert replay([first, created.event, edited.event, claimed.event]) is ItemState.RUNNING
    running_edit = dataclasses.replace(
        edited.event, from_state=ItemState.RUNNING, to_state=ItemState.RUNNING
    )
    with pytest.raises(ValueError, match="not editable"):
        replay([first, created.event, claimed.event, running_edit])


def test_the_limits_are_read_from_wrighty_json() -> None:
    config, problems = check_config_text(
        json.dumps(
            {
                "agents": {"claude": {"maxConcurrent": 2}, "codex": {}},
                "limits": {"labels": {"docs": {"maxConcurrent": 1}}},
            }
        )
    )
    assert problems == []
    assert config is not None
    assert limits_of(config) == ConcurrencyLimits(agents={"claude": 2}, labels={"docs": 1})
    default, _ = check_config_text("{}")
    assert default is not None
    assert not limits_of(default).any
