"""Items: creating and reading them, and the operator actions on them, shared by every entry
point (CLI today, others later).

Each operator action reads the item, lets the domain decide the move, and writes it with the
store's compare-and-set; if another writer moved the item in between, it decides again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from wrighty.domain import suggestions
from wrighty.domain.model import Change, Dependency, Event, Item, NewItem, Run, RunEnd, Session
from wrighty.domain.outcomes import Confidence, OutcomeClass
from wrighty.domain.scheduling import (
    NO_LIMITS,
    ConcurrencyLimits,
    RunningCounts,
    Wait,
    check_dependencies,
    cyclic_items,
    dependency_wait,
    limit_hold,
    running_counts,
    upstream_of,
)
from wrighty.domain.states import ItemState
from wrighty.domain.transitions import (
    KEEP,
    OPERATOR_REQUEUE,
    Keep,
    edit,
    is_edit,
    transition,
    validate_new_item,
)
from wrighty.domain.usage import NO_LIMIT, Limit, Usage
from wrighty.errors import ConflictError, IllegalTransitionError, NotFoundError, WrightyError
from wrighty.store.port import Store

if TYPE_CHECKING:  # a check's types: reading an item loads no more (tests/cli/test_import_cost)
    from wrighty.domain.check_evidence import CheckRecord
    from wrighty.domain.conversation import TrackerItem
    from wrighty.domain.landing import Landing

OPERATOR = "operator"
_CAS_ATTEMPTS = 5

Plan = Callable[[Item], Change]
# The names of the checks an agent's items run (None: the default agent's), from wrighty.json.
CheckNames = Callable[[str | None], Collection[str]]


def check_choice(
    chosen: tuple[str, ...] | None, *, agent: str | None, check_names: CheckNames, said: str
) -> None:
    """Refuse checks an item names (``said``: how the user named them, e.g. ``--verify``)
    that are no checks of its agent (docs/verify.md#which-checks-an-item-runs)."""
    if not chosen:
        return
    known = list(check_names(agent))
    unknown = [name for name in chosen if name not in known]
    if unknown:
        whose = f"agent {agent!r}" if agent is not None else "the default agent"
        have = f"its checks: {', '.join(known)}" if known else "wrighty.json gives it none"
        raise WrightyError(
            f"{said} {unknown[0]}: {whose} has no check of that name ({have}); see docs/verify.md"
        )


@dataclass(frozen=True)
class ItemDetail:
    """Everything `wrighty show` reports about one item."""

    item: Item
    session: Session | None
    runs: list[Run]
    events: list[Event]
    labels: tuple[str, ...] = ()
    after: tuple[Dependency, ...] = ()  # the items it comes after, with their states
    before: tuple[int, ...] = ()  # the items that come after it
    wait: Wait | None = None  # why it is not claimed although it waits (`scheduling_waits`)
    checks: tuple[CheckRecord, ...] = ()  # its check evidence, oldest verification first
    verified: bool | None = None  # its latest ended verification passed (`Store.verified_items`)
    landing: Landing | None = None  # its latest acceptance's landing (docs/landing.md)
    # Its pull request (completion.integrate github-pr, docs/sources.md), when it has one.
    pull_request: TrackerItem | None = None


def normalized(new: NewItem) -> NewItem:
    """``new`` with its dependencies and labels each named once, labels in name order."""
    return dataclasses.replace(
        new, after=tuple(dict.fromkeys(new.after)), labels=tuple(sorted(set(new.labels)))
    )


def create_item(store: Store, new: NewItem, *, now: datetime, actor: str = OPERATOR) -> Item:
    """Validate and write a new item (every entry point's way: the command line, an
    importer). The items it comes after must exist (NotFoundError's one line otherwise)."""
    new = normalized(new)
    validate_new_item(new)
    known = {}
    for depends_on in new.after:
        found = store.get_item(depends_on)
        if found is not None:
            known[depends_on] = found.state
    check_dependencies(None, new.after, known=known)
    return store.create_item(new, at=now, actor=actor)


def edit_item(
    store: Store,
    item_id: int,
    *,
    now: datetime,
    priority: int | None = None,
    after: Collection[int] = (),
    not_after: Collection[int] = (),
    verify_checks: tuple[str, ...] | Keep | None = KEEP,
    check_names: CheckNames = lambda agent: (),
    actor: str = OPERATOR,
) -> Change:
    """Change a waiting item's scheduling (`wrighty edit`): its priority, the items it comes
    after (``after``: add; ``not_after``: remove), the checks it chooses (``check_names``:
    those its agent has). Refused for a running or final item, an
    unknown item to come after, and a dependency that would close a cycle; compare-and-set
    like every operator action, the dependencies written in the same transaction."""
    if set(after) & set(not_after):
        both = min(set(after) & set(not_after))
        raise WrightyError(f"item {both} is given to both --after and --not-after; choose one")

    def plan(item: Item) -> Change:
        if verify_checks is not KEEP:
            check_choice(verify_checks, agent=item.agent, check_names=check_names, said="--verify")
        edges = store.list_dependencies() if after else store.list_dependencies(item.id)
        now_after = [edge.depends_on for edge in edges if edge.item_id == item.id]
        known = {e.depends_on: e.state for e in edges if e.state is not None}
        for depends_on in after:
            if depends_on not in known:
                found = store.get_item(depends_on)
                if found is not None:
                    known[depends_on] = found.state
        change = edit(
            item,
            at=now,
            actor=actor,
            priority=priority,
            after_added=after,
            after_removed=not_after,
            after_now=now_after,
            verify_checks=verify_checks,
        )
        pairs = [(edge.item_id, edge.depends_on) for edge in edges]
        check_dependencies(item.id, change.after_added, known=known, edges=pairs)
        return change

    return apply_change(store, item_id, plan)


def scheduling_waits(
    store: Store,
    items: Collection[Item],
    *,
    limits: ConcurrencyLimits,
    default_agent: str,
    edges: Collection[Dependency] | None = None,
    labels: Mapping[int, tuple[str, ...]] | None = None,
    running: Collection[Item] | None = None,
) -> dict[int, Wait]:
    """Why each of ``items`` that waits to be claimed (todo, queued or a retry; for a held
    limit: queued or a retry) is not: the items it comes after, or a concurrency limit the
    running items reach (the claim decides the same in its transaction). ``edges`` and
    ``labels``, when given, are every dependency and every item's labels, as the store lists
    them; ``running``, when given, every running item (read from the store otherwise)."""
    if edges is None:
        edges = store.list_dependencies()
    if labels is None:
        labels = store.list_labels()
    upstream = upstream_of((edge.item_id, edge.depends_on) for edge in edges)
    state_of = {edge.depends_on: edge.state for edge in edges}
    cyclic = cyclic_items(upstream, state_of)
    counts: RunningCounts | None = None
    waits: dict[int, Wait] = {}
    for item in items:
        if item.state not in _WAITING_STATES:
            continue
        found = dependency_wait(item.id, upstream, state_of, cyclic)
        if found is None and item.state is not ItemState.TODO and limits.any:
            if counts is None:
                if running is None:
                    running = store.list_items([ItemState.RUNNING])
                counts = running_counts(
                    (r.agent or default_agent, labels.get(r.id, ())) for r in running
                )
            found = limit_hold(item.agent or default_agent, labels.get(item.id, ()), counts, limits)
        if found is not None:
            waits[item.id] = found
    return waits


_WAITING_STATES = frozenset({ItemState.TODO, ItemState.QUEUED, ItemState.RETRY_SCHEDULED})


def require_item(store: Store, item_id: int) -> Item:
    item = store.get_item(item_id)
    if item is None:
        raise NotFoundError(f"no item {item_id}; `wrighty list` shows the items there are")
    return item


def list_items(
    store: Store, states: Collection[ItemState] = (), *, moved_since: datetime | None = None
) -> list[Item]:
    """Items in any of ``states`` (every item when empty), oldest id first; with
    ``moved_since``, only those that moved since then (`wrighty list --since`)."""
    if moved_since is None:
        return store.list_items(states)
    moved = store.list_items_moved_since(moved_since)
    return [item for item in moved if not states or item.state in states]


def item_detail(
    store: Store,
    item_id: int,
    *,
    limits: ConcurrencyLimits = NO_LIMITS,
    default_agent: str | None = None,
) -> ItemDetail:
    """The item with its session, runs, history and scheduling; with ``default_agent``, also
    why it waits, if it does (``limits``: the concurrency limits that apply)."""
    item = require_item(store, item_id)
    edges = store.list_dependencies(item_id)
    labels = store.list_labels(item_id)
    wait = None
    if default_agent is not None and item.state in _WAITING_STATES:
        # What the items it comes after wait for in turn, to tell a blocked one.
        every = store.list_dependencies() if any(e.item_id == item_id for e in edges) else []
        wait = scheduling_waits(
            store, [item], limits=limits, default_agent=default_agent, edges=every
        ).get(item_id)
    return ItemDetail(
        item=item,
        session=store.get_session(item_id),
        runs=store.list_runs(item_id),
        events=store.list_events(item_id),
        labels=labels.get(item_id, ()),
        after=tuple(edge for edge in edges if edge.item_id == item_id),
        before=tuple(edge.item_id for edge in edges if edge.depends_on == item_id),
        wait=wait,
        checks=tuple(store.list_checks(item_id)),
        verified=store.verified_items([item_id]).get(item_id),
        landing=store.get_landing(item_id),
        pull_request=_pull_request(store, item_id),
    )


def _pull_request(store: Store, item_id: int) -> TrackerItem | None:
    record = store.get_tracker_item(item_id)
    return record if record is not None and record.pull_url is not None else None


@dataclass(frozen=True)
class WaitingItem:
    """An item in needs-attention: since when it has waited for a person, after how many runs."""

    item: Item
    since: datetime
    attempts: int


def items_needing_attention(store: Store) -> list[WaitingItem]:
    """Every needs-attention item, the one that has waited longest first."""
    waiting = []
    for item in store.list_items([ItemState.NEEDS_ATTENTION]):
        moves = [event for event in store.list_events(item.id) if not is_edit(event)]
        since = moves[-1].at if moves else item.updated_at
        waiting.append(WaitingItem(item, since, len(store.list_runs(item.id))))
    return sorted(waiting, key=lambda entry: (entry.since, entry.item.id))


def find_run(store: Store, item_id: int, attempt: int | None) -> Run:
    """The item's run with this attempt number; its last run when ``attempt`` is None."""
    item = require_item(store, item_id)
    runs = store.list_runs(item_id)
    if not runs:
        raise NotFoundError(f"item {item_id} has no runs yet (it is {item.state})")
    if attempt is None:
        return max(runs, key=lambda run: run.attempt)
    for run in runs:
        if run.attempt == attempt:
            return run
    numbers = ", ".join(str(run.attempt) for run in runs)
    raise NotFoundError(f"item {item_id} has no run {attempt} (its runs: {numbers})")


def get_run(store: Store, run_id: str) -> Run | None:
    """The run as the store has it now (`wrighty logs --follow` polls whether it ended)."""
    return store.get_run(run_id)


def record_agent_report(
    store: Store,
    run_id: str,
    *,
    claim_token: str,
    report: str,
    reason: str | None,
    resets_at: datetime | None = None,
) -> bool:
    """`wrighty finish` / `wrighty fail` from inside a run; False unless the run's claim is
    still held and the token is that run's."""
    return store.record_agent_report(
        run_id, claim_token=claim_token, report=report, reason=reason, resets_at=resets_at
    )


def report_run_usage(store: Store, run_id: str, *, claim_token: str, usage: Usage) -> bool:
    """`wrighty report-usage` from inside a run: the run's usage so far; False unless the
    run's claim is still held and the token is that run's."""
    return store.report_usage(run_id, claim_token=claim_token, usage=usage)


def queue_item(store: Store, item_id: int, *, now: datetime, actor: str = OPERATOR) -> Item:
    """todo -> queued: the item becomes eligible for workers."""

    def plan(item: Item) -> Change:
        if item.state is not ItemState.TODO:
            raise IllegalTransitionError(
                f"item {item.id} is {item.state}; `wrighty queue` moves todo items only"
            )
        return transition(item, ItemState.QUEUED, at=now, actor=actor)

    return _apply(store, item_id, plan)


def cancel_item(store: Store, item_id: int, *, now: datetime, actor: str = OPERATOR) -> Item:
    """Any unfinished item -> cancelled (final). A running item's worker finds its claim gone
    at its next renewal and stops the agent; the run is recorded as cancelled here."""

    def plan(item: Item) -> Change:
        return transition(
            item,
            ItemState.CANCELLED,
            at=now,
            actor=actor,
            reason_code="operator-cancelled",
            reason="cancelled by an operator",
            run_end=RunEnd(now, OutcomeClass.CANCELLED, Confidence.AUTHORITATIVE)
            if item.state is ItemState.RUNNING
            else None,
        )

    return _apply(store, item_id, plan)


REQUEUABLE = (ItemState.NEEDS_ATTENTION, ItemState.RETRY_SCHEDULED)


def requeue_item(
    store: Store,
    item_id: int,
    *,
    resume: bool,
    now: datetime,
    actor: str = OPERATOR,
    budget: Limit = NO_LIMIT,
) -> Item:
    """needs-attention or retry-scheduled -> work again, with a new crash-retry budget.

    ``resume``: the item becomes a retry that is due now, so the next worker of the
    installation that holds the session resumes it (the usual pre-launch checks apply).
    Otherwise it goes back to ``queued`` and its next run starts a new session (in the same
    workspace: only a finished item's is ever deleted). ``budget``: the item's own bounds from
    now on (each one given replaces the item's; one not given is kept).
    """
    # Here, not at the top: `wrighty list` loads this module and needs no resume rule.
    from wrighty.domain.resume import session_id_recorded

    def plan(item: Item) -> Change:
        if item.state not in REQUEUABLE:
            raise IllegalTransitionError(
                f"item {item.id} is {item.state}; requeue takes items that are needs-attention "
                "or retry-scheduled"
            )
        if resume:
            session = store.get_session(item.id)
            if not session_id_recorded(session):
                raise IllegalTransitionError(
                    f"item {item.id} has no recorded session to resume; "
                    f"start over with `{suggestions.requeue(item.id, resume=False)}`"
                )
            change = transition(
                item,
                ItemState.RETRY_SCHEDULED,
                at=now,
                actor=actor,
                reason_code="operator-resume",
                reason=f"an operator asked to resume session {session.session_id}",
                not_before=now,
            )
        else:
            change = transition(
                item,
                ItemState.QUEUED,
                at=now,
                actor=actor,
                reason_code=OPERATOR_REQUEUE,
                reason="an operator asked to start over in a new session",
            )
        after = dataclasses.replace(
            change.after,
            crash_retries=0,
            usage_retries=0,
            fix_turns=0,
            max_cost_usd=budget.max_cost_usd or item.max_cost_usd,
            max_tokens=budget.max_tokens or item.max_tokens,
        )
        event = change.event
        if not budget.unbounded:
            now_own = Limit(after.max_cost_usd, after.max_tokens).describe()
            event = dataclasses.replace(
                event, reason=f"{event.reason}; its own budget is now {now_own}"
            )
        return dataclasses.replace(change, after=after, event=event)

    return _apply(store, item_id, plan)


def release_item(store: Store, item_id: int, *, now: datetime, actor: str = OPERATOR) -> Item:
    """running -> needs-attention under a new generation, for an item whose worker is gone."""
    from wrighty.domain.claims import release
    from wrighty.domain.resume import session_id_recorded

    recorded = session_id_recorded(store.get_session(item_id))
    return _apply(
        store, item_id, lambda item: release(item, at=now, actor=actor, resumable=recorded)
    )


def _apply(store: Store, item_id: int, plan: Plan) -> Item:
    return apply_change(store, item_id, plan).after


def apply_change(store: Store, item_id: int, plan: Plan) -> Change:
    """Read the item, let ``plan`` decide its change, write it with the store's compare-and-set;
    when another writer moved the item in between, decide again (at most a few times)."""
    for _ in range(_CAS_ATTEMPTS):
        before = require_item(store, item_id)
        change = plan(before)
        if store.write_transition(change):
            return change
    raise ConflictError(f"item {item_id} kept changing while this command ran; try again")
