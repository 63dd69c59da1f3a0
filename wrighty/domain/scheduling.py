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
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from wrighty.domain import suggestions
from wrighty.domain.model import DEFAULT_PRIORITY
from wrighty.domain.states import ItemState
from wrighty.errors import WrightyError

PRIORITIES = (0, 1, 2, 3)  # P0 (the highest) to P3

# Labels are spelled like agent names (config.AGENT_NAME_PATTERN).
LABEL_PATTERN = r"^[a-z][a-z0-9_-]{0,39}$"
LABEL_RULE = (
    "labels use lowercase letters, digits, '-' and '_', starting with a letter, at most 40 "
    "characters"
)
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
        raise WrightyError(f"--label {label}: {LABEL_RULE}")


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
    state_of: Mapping[int, ItemState | None],
    cyclic: Collection[int] | None = None,
) -> Wait | None:
    """What the item still waits for among the items it comes after; None when every one is
    done. ``upstream``: each item's dependencies; ``state_of``: the state of every item they
    name (None: no such item in the store). Blocked when a dependency, or one further up, is
    cancelled, needs attention, does not exist, or is in a cycle of items that wait for each
    other (a store written by hand can hold one); ``cyclic``: those items, when the caller
    has them already (`cyclic_items`)."""
    unmet = [d for d in upstream.get(item_id, ()) if state_of.get(d) is not ItemState.DONE]
    if not unmet:
        return None
    if cyclic is None:
        cyclic = cyclic_items(upstream, state_of)
    for depends_on in unmet:
        stuck = _stuck_upstream(depends_on, upstream, state_of, cyclic)
        if stuck is not None:
            reason = _blocked_reason(item_id, depends_on, stuck, upstream, state_of, cyclic)
            return Wait("blocked", reason, (depends_on,))
    which = ", ".join(f"{d} ({_state_word(state_of.get(d))})" for d in unmet)
    return Wait("after", f"waits for item{'s' if len(unmet) > 1 else ''} {which}", tuple(unmet))


def _state_word(state: ItemState | None) -> str:
    return state.value if state is not None else "unknown"


def _missing(item_id: int, state_of: Mapping[int, ItemState | None]) -> bool:
    return item_id in state_of and state_of[item_id] is None


def _stuck_upstream(
    start: int,
    upstream: Mapping[int, Sequence[int]],
    state_of: Mapping[int, ItemState | None],
    cyclic: Collection[int],
) -> int | None:
    """The first item at or above ``start`` that can never be done as things stand."""
    seen = {start}
    frontier = [start]
    while frontier:
        current = frontier.pop(0)
        if state_of.get(current) in _STUCK or _missing(current, state_of) or current in cyclic:
            return current
        for earlier in upstream.get(current, ()):
            if earlier not in seen and state_of.get(earlier) is not ItemState.DONE:
                seen.add(earlier)
                frontier.append(earlier)
    return None


def _blocked_reason(
    item_id: int,
    depends_on: int,
    stuck: int,
    upstream: Mapping[int, Sequence[int]],
    state_of: Mapping[int, ItemState | None],
    cyclic: Collection[int],
) -> str:
    through = "" if stuck == depends_on else f" (item {depends_on} waits for it)"
    state = state_of.get(stuck)
    if _missing(stuck, state_of):
        waiter = item_id if stuck == depends_on else _a_waiter(stuck, upstream)
        return (
            f"blocked: item {stuck} does not exist{through}; "
            f"`{suggestions.drop_dependency(waiter, stuck)}` lets it start without it"
        )
    if stuck in cyclic and state not in _STUCK:
        path = _cycle_path(stuck, upstream, cyclic)
        if len(path) == 1:
            what = f"item {stuck} comes after itself"
        else:
            cycle = " after ".join(str(step) for step in [*path, path[0]])
            what = f"items {cycle} make a cycle"
        return (
            f"blocked: {what}{through}; "
            f"`{suggestions.drop_dependency(path[0], path[1 % len(path)])}` breaks the cycle"
        )
    what = "was cancelled" if state is ItemState.CANCELLED else "needs attention"
    if state is ItemState.CANCELLED:
        fix = f"`{suggestions.drop_dependency(item_id, depends_on)}` lets it start without it"
    else:
        fix = f"`{suggestions.show(stuck)}` says what it needs"
    return f"blocked: item {stuck} {what}{through}; {fix}"


def _a_waiter(missing: int, upstream: Mapping[int, Sequence[int]]) -> int:
    """The lowest item that comes after ``missing``."""
    return min(later for later, earlier in upstream.items() if missing in earlier)


def _cycle_path(
    start: int, upstream: Mapping[int, Sequence[int]], cyclic: Collection[int]
) -> list[int]:
    """A cycle through ``start`` among the cyclic items: [start, what it comes after, ...]."""
    came_from: dict[int, int] = {}
    frontier = [start]
    while frontier:
        current = frontier.pop(0)
        for earlier in upstream.get(current, ()):
            if earlier == start:
                path = [current]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                return path[::-1]
            if earlier in cyclic and earlier not in came_from:
                came_from[earlier] = current
                frontier.append(earlier)
    return [start]


def cyclic_items(
    upstream: Mapping[int, Sequence[int]], state_of: Mapping[int, ItemState | None]
) -> frozenset[int]:
    """The items that wait for each other in a cycle (or for themselves), through items that
    are not done: none can ever start. wrighty refuses every write that would make one; a
    store written by hand can still hold one."""

    def edges_of(node: int) -> list[int]:
        return [e for e in upstream.get(node, ()) if state_of.get(e) is not ItemState.DONE]

    found: set[int] = set()
    for component in _components(list(upstream), edges_of):
        if len(component) > 1 or component[0] in edges_of(component[0]):
            found.update(component)
    return frozenset(found)


def _components(nodes: list[int], edges_of: Callable[[int], list[int]]) -> list[list[int]]:
    """The strongly connected components of the graph (Tarjan's, without recursion: a chain
    of a thousand items must not exhaust the stack)."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    stack: list[int] = []
    on_stack: set[int] = set()
    components: list[list[int]] = []
    for root in nodes:
        if root in index:
            continue
        work: list[tuple[int, int]] = [(root, 0)]
        while work:
            node, position = work.pop()
            if position == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            nexts = edges_of(node)
            if position < len(nexts):
                work.append((node, position + 1))
                child = nexts[position]
                if child not in index:
                    work.append((child, 0))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                components.append(_pop_component(stack, on_stack, node))
    return components


def _pop_component(stack: list[int], on_stack: set[int], root: int) -> list[int]:
    component: list[int] = []
    while not component or component[-1] != root:
        component.append(stack.pop())
        on_stack.discard(component[-1])
    return component


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
