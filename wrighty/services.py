"""Operator actions on items, shared by every entry point (CLI today, others later).

Each action reads the item, lets the domain decide the move, and writes it with the store's
compare-and-set; if another writer moved the item in between, it decides again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from wrighty.domain.claims import release
from wrighty.domain.health import (
    Concern,
    Liveness,
    QueueFigures,
    Thresholds,
    WorkerCounts,
    WorkerRow,
    liveness,
)
from wrighty.domain.health import Problem as HealthProblem
from wrighty.domain.health import concerns as health_concerns
from wrighty.domain.health import problems as health_problems
from wrighty.domain.model import Change, Event, Item, NewItem, Run, RunEnd, Session
from wrighty.domain.outcomes import Confidence, OutcomeClass
from wrighty.domain.resume import ResumeFacts, resumable, resume_gaps, session_id_recorded
from wrighty.domain.states import TERMINAL_STATES, ItemState
from wrighty.domain.transitions import transition, validate_new_item
from wrighty.errors import ConflictError, IllegalTransitionError, NotFoundError
from wrighty.store.port import Store

if TYPE_CHECKING:
    from wrighty.agents import AgentPlan

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


def resume_facts(
    session: Session, plan: AgentPlan, *, installation_id: str, environ: Mapping[str, str]
) -> ResumeFacts:
    """What this installation can see of ``session``, for agent ``plan`` to resume it: is the
    workspace there, and the vendor's transcript (looked for with ``environ``, the environment
    wrighty runs in, plus the agent's own ``env``: it says where the vendor keeps it)."""
    workspace = Path(session.workspace)
    workspace_exists = workspace.is_dir()
    transcript_problem = (
        plan.transcript_problem(session.session_id, workspace, {**environ, **plan.env})
        if session.session_id is not None and workspace_exists
        else None
    )
    return ResumeFacts(
        session,
        installation_id=installation_id,
        adapter=plan.adapter,
        can_resume=plan.can_resume,
        workspace_exists=workspace_exists,
        transcript_problem=transcript_problem,
    )


def resume_gaps_here(
    session: Session, plan: AgentPlan, *, installation_id: str, environ: Mapping[str, str]
) -> tuple[str, ...]:
    """What keeps agent ``plan`` from resuming ``session`` on this installation (empty: it can)."""
    facts = resume_facts(session, plan, installation_id=installation_id, environ=environ)
    return resume_gaps(facts)


def resumable_here(
    item: Item,
    session: Session | None,
    plan: AgentPlan | None,
    *,
    installation_id: str,
    environ: Mapping[str, str],
) -> bool:
    """Whether a worker of this installation running ``plan`` (the item's agent; None when the
    config names none it could run) would resume ``item``'s recorded session: the item is not
    finished, and the session's resume address is complete."""
    if session is None or plan is None or item.state in TERMINAL_STATES:
        return False
    facts = resume_facts(session, plan, installation_id=installation_id, environ=environ)
    return resumable(facts)


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
    store: Store, item_id: int, *, resume: bool, now: datetime, actor: str = OPERATOR
) -> Item:
    """needs-attention or retry-scheduled -> work again, with a new crash-retry budget.

    ``resume``: the item becomes a retry that is due now, so the next worker of the
    installation that holds the session resumes it (the usual pre-launch checks apply).
    Otherwise it goes back to ``queued`` and its next run starts a new session (in the same
    workspace: wrighty never deletes one).
    """

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
        return dataclasses.replace(change, after=dataclasses.replace(change.after, crash_retries=0))

    return _apply(store, item_id, plan)


def release_item(store: Store, item_id: int, *, now: datetime, actor: str = OPERATOR) -> Item:
    """running -> needs-attention under a new generation, for an item whose worker is gone."""
    recorded = session_id_recorded(store.get_session(item_id))
    return _apply(
        store, item_id, lambda item: release(item, at=now, actor=actor, resumable=recorded)
    )


def reap_expired(
    store: Store, *, now: datetime, max_requeues: int, limit: int = 100
) -> list[Change]:
    """Settle up to ``limit`` expired claims as worker-lost; the changes that landed."""
    landed = []
    for item in store.expired_claims(now=now, limit=limit):
        change = store.reap(item.id, now=now, max_requeues=max_requeues)
        if change is not None:
            landed.append(change)
    return landed


def _apply(store: Store, item_id: int, plan: Plan) -> Item:
    for _ in range(_CAS_ATTEMPTS):
        before = require_item(store, item_id)
        change = plan(before)
        if store.write_transition(change):
            return change.after
    raise ConflictError(f"item {item_id} kept changing while this command ran; try again")


# -- health -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WorkerView:
    row: WorkerRow
    liveness: Liveness
    heartbeat_age_seconds: float


@dataclass(frozen=True)
class StatusReport:
    checked_at: datetime
    figures: QueueFigures
    workers: list[WorkerView]
    thresholds: Thresholds
    worker_max_age_seconds: float
    problems: list[HealthProblem]
    concerns: list[Concern]

    @property
    def healthy(self) -> bool:
        return not self.problems

    @property
    def live_workers(self) -> int:
        return _live(self.workers)


def _live(workers: list[WorkerView]) -> int:
    return sum(view.liveness is Liveness.LIVE for view in workers)


def _same_process_running(pid: int, started_at: float) -> bool:
    # psutil is loaded only when a worker of this installation is registered.
    from wrighty.supervisor.process import same_process_running

    return same_process_running(pid, started_at)


def worker_views(
    store: Store, *, now: datetime, max_age_seconds: float, installation_id: str
) -> list[WorkerView]:
    """Every registered worker with its liveness; a row of this installation whose process is
    gone (or whose pid now belongs to another process) is dead."""
    views = []
    for row in store.list_workers():
        running = (
            _same_process_running(row.pid, row.process_started_at)
            if row.installation_id == installation_id
            else None
        )
        state = liveness(row, now=now, max_age_seconds=max_age_seconds, process_running=running)
        age = max(0.0, (now - row.last_heartbeat_at).total_seconds())
        views.append(WorkerView(row, state, age))
    return views


def status_report(
    store: Store,
    *,
    now: datetime,
    thresholds: Thresholds,
    worker_max_age_seconds: float,
    installation_id: str,
) -> StatusReport:
    figures = store.queue_figures(now=now)
    workers = worker_views(
        store, now=now, max_age_seconds=worker_max_age_seconds, installation_id=installation_id
    )
    found = health_problems(figures, now=now, live_workers=_live(workers), thresholds=thresholds)
    counts = WorkerCounts(
        **{state.value: sum(view.liveness is state for view in workers) for state in Liveness}
    )
    seen = health_concerns(figures, workers=counts, thresholds=thresholds)
    return StatusReport(now, figures, workers, thresholds, worker_max_age_seconds, found, seen)
