"""Scheduling: priorities, dependencies and concurrency limits (docs/scheduling.md).

Pure. The claim itself is decided in the store's one guarded claim transaction (the order and
eligibility below, written in SQL); this module holds the vocabulary, the checks made before
an item or an edit is written (priorities, labels, unknown ids, cycles), and why an eligible
looking item waits (`dependency_wait`, `limit_hold`) as `show`, `list` and `status` say it.

The claim order: priority first (P0 before P3); within a priority, due retries before fresh
work; then the oldest queue entry (an unknown entry time counts as oldest), then the lowest id.
An item is eligible when it is queued or a due retry (resume affinity applies), every item it
comes after is done, and no concurrency limit it falls under is reached by the items running.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from wrighty.domain.model import DEFAULT_PRIORITY
from wrighty.domain.states import ItemState
from wrighty.errors import WrightyError

PRIORITIES = (0, 1, 2, 3)  # P0 (the highest) to P3

# Labels are spelled like agent names (config.AGENT_NAME_PATTERN).
LABEL_PATTERN = r"^[a-z][a-z0-9_-]{0,39}$"
MAX_LABELS = 20  # per item
MAX_DEPENDENCIES = 100  # items one item comes after
EDITED = "edited"  # the reason code of an edit's event (no move: from and to are one state)

_PRIORITY_TEXT = re.compile(r"^[Pp]?([0-9])$")


def parse_priority(text: str) -> int:
    """0-3 or P0-P3 (either case); WrightyError saying what is accepted otherwise."""
    found = _PRIORITY_TEXT.match(text.strip())
    if found is None or int(found.group(1)) not in PRIORITIES:
        raise WrightyError(
            f"--priority {text}: give 0 to 3 or P0 to P3 (P0 is the highest; the default is "
            f"{priority_name(DEFAULT_PRIORITY)})"
        )
    return int(found.group(1))


def priority_name(priority: int) -> str:
    return f"P{priority}"


def check_priority(priority: int) -> None:
    if priority not in PRIORITIES:
        raise WrightyError(f"priority {priority}: give 0 to 3 (P0 is the highest)")


def check_label(label: str) -> None:
    if not re.fullmatch(LABEL_PATTERN, label):
        raise WrightyError(
            f"--label {label}: labels use lowercase letters, digits, '-' and '_', starting with "
            "a letter, at most 40 characters"
        )


def check_labels(labels: Sequence[str]) -> None:
    for label in labels:
        check_label(label)
    if len(set(labels)) > MAX_LABELS:
        raise WrightyError(f"an item has at most {MAX_LABELS} labels")


# -- dependencies -------------------------------------------------------------------------------


def find_cycle(edges: Iterable[tuple[int, int]], item_id: int, depends_on: int) -> list[int] | None:
    """The path by which ``depends_on`` already comes after ``item_id`` (``[depends_on, ...,
    item_id]``), so that making ``item_id`` come after ``depends_on`` would close a cycle; None
    when it would not. ``edges`` are (item, the item it comes after)."""
    if item_id == depends_on:
        return [item_id]
    upstream: dict[int, list[int]] = {}
    for later, earlier in edges:
        upstream.setdefault(later, []).append(earlier)
    came_from: dict[int, int | None] = {depends_on: None}
    frontier = [depends_on]
    while frontier:
        current = frontier.pop()
        for earlier in upstream.get(current, ()):
            if earlier in came_from:
                continue
            came_from[earlier] = current
            if earlier == item_id:
                path = [earlier]
                step = came_from[earlier]
                while step is not None:
                    path.append(step)
                    step = came_from[step]
                return path[::-1]
            frontier.append(earlier)
    return None


def check_dependencies(
    item_id: int | None,
    after: Iterable[int],
    *,
    known: Mapping[int, ItemState],
    edges: Iterable[tuple[int, int]] = (),
) -> None:
    """Refuse dependencies on items that do not exist, and (for an existing item) any that
    would close a cycle. ``known``: the state of every item that exists (at least of those in
    ``after``); ``edges``: every dependency now stored."""
    wanted = list(dict.fromkeys(after))
    if len(wanted) > MAX_DEPENDENCIES:
        raise WrightyError(f"an item comes after at most {MAX_DEPENDENCIES} items")
    for depends_on in wanted:
        if depends_on not in known:
            raise WrightyError(
                f"--after {depends_on}: no item {depends_on}; `wrighty list` shows the items"
            )
    if item_id is None:
        return  # a new item: nothing comes after it yet, so it closes no cycle
    stored = list(edges)
    for depends_on in wanted:
        path = find_cycle(stored, item_id, depends_on)
        if path is not None:
            raise WrightyError(_cycle_message(item_id, depends_on, path))
        stored.append((item_id, depends_on))


def _cycle_message(item_id: int, depends_on: int, path: list[int]) -> str:
    if len(path) == 1:
        return f"--after {depends_on}: an item cannot come after itself"
    through = f" ({' after '.join(str(step) for step in path)})" if len(path) > 2 else ""
    return (
        f"--after {depends_on}: that would make a cycle: item {depends_on} already comes "
        f"after item {item_id}{through}"
    )


WaitKind = Literal["after", "blocked", "held"]


@dataclass(frozen=True)
class Wait:
    """Why an item that is queued (or a due retry) is not claimed: it waits for items it comes
    after (``after``), one of them can never be done as things stand (``blocked``: it was
    cancelled, or it or one of those it comes after needs a person), or a concurrency limit is
    reached (``held``, with the setting that sets it)."""

    kind: WaitKind
    reason: str
    items: tuple[int, ...] = ()  # the items it waits for (after, blocked)
    setting: str | None = None  # the config key of the limit (held)


_STUCK = frozenset({ItemState.CANCELLED, ItemState.NEEDS_ATTENTION})


def dependency_wait(
    item_id: int,
    upstream: Mapping[int, Sequence[int]],
    state_of: Mapping[int, ItemState],
) -> Wait | None:
    """What the item still waits for among the items it comes after; None when every one is
    done. ``upstream``: each item's dependencies; ``state_of``: the state of every item they
    name. Blocked when a dependency, or one further up, is cancelled or needs attention."""
    unmet = [d for d in upstream.get(item_id, ()) if state_of.get(d) is not ItemState.DONE]
    if not unmet:
        return None
    for depends_on in unmet:
        stuck = _stuck_upstream(depends_on, upstream, state_of)
        if stuck is not None:
            reason = _blocked_reason(item_id, depends_on, stuck, state_of)
            return Wait("blocked", reason, (depends_on,))
    which = ", ".join(f"{d} ({_state_word(state_of.get(d))})" for d in unmet)
    return Wait("after", f"waits for item{'s' if len(unmet) > 1 else ''} {which}", tuple(unmet))


def _state_word(state: ItemState | None) -> str:
    return state.value if state is not None else "unknown"


def _stuck_upstream(
    start: int, upstream: Mapping[int, Sequence[int]], state_of: Mapping[int, ItemState]
) -> int | None:
    """The first item at or above ``start`` that is cancelled or needs attention."""
    seen = {start}
    frontier = [start]
    while frontier:
        current = frontier.pop(0)
        if state_of.get(current) in _STUCK:
            return current
        for earlier in upstream.get(current, ()):
            if earlier not in seen and state_of.get(earlier) is not ItemState.DONE:
                seen.add(earlier)
                frontier.append(earlier)
    return None


def _blocked_reason(
    item_id: int, depends_on: int, stuck: int, state_of: Mapping[int, ItemState]
) -> str:
    state = state_of.get(stuck)
    what = "was cancelled" if state is ItemState.CANCELLED else "needs attention"
    through = "" if stuck == depends_on else f" (item {depends_on} waits for it)"
    if state is ItemState.CANCELLED:
        fix = f"`wrighty edit {item_id} --not-after {depends_on}` lets it start without it"
    else:
        fix = f"`wrighty show {stuck}` says what it needs"
    return f"blocked: item {stuck} {what}{through}; {fix}"


def upstream_of(edges: Iterable[tuple[int, int]]) -> dict[int, list[int]]:
    """Each item's dependencies, from (item, the item it comes after) pairs."""
    found: dict[int, list[int]] = {}
    for later, earlier in edges:
        found.setdefault(later, []).append(earlier)
    return found


# -- concurrency limits -------------------------------------------------------------------------


@dataclass(frozen=True)
class ConcurrencyLimits:
    """How many items may run at once, across every worker and installation on the store:
    per agent (``agents.<name>.maxConcurrent``) and per label
    (``limits.labels.<label>.maxConcurrent``)."""

    agents: Mapping[str, int] = field(default_factory=dict)
    labels: Mapping[str, int] = field(default_factory=dict)

    @property
    def any(self) -> bool:
        return bool(self.agents) or bool(self.labels)


NO_LIMITS = ConcurrencyLimits()


@dataclass(frozen=True)
class RunningCounts:
    """The items running now, by agent and by label."""

    agents: Mapping[str, int] = field(default_factory=dict)
    labels: Mapping[str, int] = field(default_factory=dict)


def running_counts(running: Iterable[tuple[str, Iterable[str]]]) -> RunningCounts:
    """Counts from each running item's agent (its own, or the default) and labels."""
    agents: dict[str, int] = {}
    labels: dict[str, int] = {}
    for agent, item_labels in running:
        agents[agent] = agents.get(agent, 0) + 1
        for label in set(item_labels):
            labels[label] = labels.get(label, 0) + 1
    return RunningCounts(agents, labels)


def limit_hold(
    agent: str, labels: Iterable[str], running: RunningCounts, limits: ConcurrencyLimits
) -> Wait | None:
    """The first limit the item falls under that the running items have reached (its agent's,
    then its labels' in name order); None when none is."""
    limit = limits.agents.get(agent)
    if limit is not None and running.agents.get(agent, 0) >= limit:
        setting = f"agents.{agent}.maxConcurrent"
        count = running.agents.get(agent, 0)
        return Wait("held", f"held: agent {agent} runs {count} of {limit} ({setting})", (), setting)
    for label in sorted(set(labels)):
        limit = limits.labels.get(label)
        if limit is not None and running.labels.get(label, 0) >= limit:
            setting = f"limits.labels.{label}.maxConcurrent"
            count = running.labels.get(label, 0)
            reason = f"held: label {label} runs {count} of {limit} ({setting})"
            return Wait("held", reason, (), setting)
    return None
