"""Items: creating and reading them, and the operator actions on them, shared by every entry
point (CLI today, others later).

Each operator action reads the item, lets the domain decide the move, and writes it with the
store's compare-and-set; if another writer moved the item in between, it decides again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import datetime

from wrighty.domain.claims import release
from wrighty.domain.model import Change, Event, Item, NewItem, Run, RunEnd, Session
from wrighty.domain.outcomes import Confidence, OutcomeClass
from wrighty.domain.states import ItemState
from wrighty.domain.transitions import transition, validate_new_item
from wrighty.domain.usage import NO_LIMIT, Limit, Usage
from wrighty.errors import ConflictError, IllegalTransitionError, NotFoundError
from wrighty.store.port import Store

OPERATOR = "operator"
_CAS_ATTEMPTS = 5

Plan = Callable[[Item], Change]


@dataclass(frozen=True)
class ItemDetail:
    """Everything `wrighty show` reports about one item."""

    item: Item
    session: Session | None
    runs: list[Run]
    events: list[Event]


def create_item(store: Store, new: NewItem, *, now: datetime, actor: str = OPERATOR) -> Item:
    validate_new_item(new)
    return store.create_item(new, at=now, actor=actor)


def require_item(store: Store, item_id: int) -> Item:
    item = store.get_item(item_id)
    if item is None:
        raise NotFoundError(f"no item {item_id}; `wrighty list` shows the items there are")
    return item


def list_items(store: Store, states: Collection[ItemState] = ()) -> list[Item]:
    """Items in any of ``states`` (every item when empty), oldest id first."""
    return store.list_items(states)


def item_detail(store: Store, item_id: int) -> ItemDetail:
    item = require_item(store, item_id)
    return ItemDetail(
        item=item,
        session=store.get_session(item_id),
        runs=store.list_runs(item_id),
        events=store.list_events(item_id),
    )


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
        events = store.list_events(item.id)
        since = events[-1].at if events else item.updated_at
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
    store: Store, run_id: str, *, claim_token: str, report: str, reason: str | None
) -> bool:
    """`wrighty finish` / `wrighty fail` from inside a run; False unless the run's claim is
    still held and the token is that run's."""
    return store.record_agent_report(run_id, claim_token=claim_token, report=report, reason=reason)


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
    workspace: wrighty never deletes one). ``budget``: the item's own bounds from now on (each
    one given replaces the item's; one not given is kept).
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
                    f"start over with `wrighty requeue {item.id} --fresh`"
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
                reason_code="operator-requeue",
                reason="an operator asked to start over in a new session",
            )
        after = dataclasses.replace(
            change.after,
            crash_retries=0,
            usage_retries=0,
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
    from wrighty.domain.resume import session_id_recorded

    recorded = session_id_recorded(store.get_session(item_id))
    return _apply(
        store, item_id, lambda item: release(item, at=now, actor=actor, resumable=recorded)
    )


def _apply(store: Store, item_id: int, plan: Plan) -> Item:
    for _ in range(_CAS_ATTEMPTS):
        before = require_item(store, item_id)
        change = plan(before)
        if store.write_transition(change):
            return change.after
    raise ConflictError(f"item {item_id} kept changing while this command ran; try again")
