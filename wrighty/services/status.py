"""The health report of `wrighty status` and `wrighty workers`: the queue's figures, every
registered worker with its liveness, the provider circuits, each agent's spend (the usage
ledger), the notification outbox's backlog, and the problems and concerns they show."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from wrighty.domain.budgets import Budgets
from wrighty.domain.clocks import skewed
from wrighty.domain.health import (
    Breach,
    Concern,
    Liveness,
    QueueFigures,
    Thresholds,
    Unserved,
    Verdict,
    WorkerCounts,
    WorkerRow,
    liveness,
    unserved_agents,
)
from wrighty.domain.health import concerns as health_concerns
from wrighty.domain.health import problems as health_problems
from wrighty.domain.health import verdict as health_verdict
from wrighty.domain.ledger import (
    Spending,
    cost_by_source,
    spending,
    spending_since,
    totals_by_agent,
)
from wrighty.domain.scheduling import cyclic_items, dependency_wait, upstream_of
from wrighty.domain.states import ItemState
from wrighty.domain.usage import CostSource, Usage
from wrighty.services.circuits import CircuitView, circuit_views
from wrighty.services.usage import budgeted_agents
from wrighty.store.port import Store

if TYPE_CHECKING:  # built by the store's reader of the outbox's figures
    from wrighty.domain.outbox import OutboxFigures


@dataclass(frozen=True)
class WorkerView:
    row: WorkerRow
    liveness: Liveness
    heartbeat_age_seconds: float

    @property
    def clock_skewed(self) -> bool:
        """A live worker whose clock is off by more than the bound (a stale or dead one's
        offset is old news)."""
        return self.liveness is Liveness.LIVE and skewed(self.row.clock_offset_seconds)


@dataclass(frozen=True)
class StatusReport:
    checked_at: datetime
    figures: QueueFigures
    workers: list[WorkerView]
    thresholds: Thresholds
    worker_max_age_seconds: float
    problems: list[Breach]
    concerns: list[Concern]
    circuits: list[CircuitView]
    # Each agent's spend in the budget period and the last 24 hours (None: not read).
    spending: Spending | None = None
    # Over every run (for the Prometheus counters; None: not read): tokens by agent, and the
    # known costs by agent and source.
    lifetime: Lifetime | None = None
    # The notifications not delivered yet (docs/notifications.md); None: not read.
    outbox: OutboxFigures | None = None
    # The agents whose items wait while no live worker runs them.
    unserved: list[Unserved] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        return not self.problems

    @property
    def verdict(self) -> Verdict:
        """What `status` and the inbox's header say: healthy, unhealthy or no thresholds set."""
        return health_verdict(self.problems, self.thresholds)

    @property
    def live_workers(self) -> int:
        return _live(self.workers)

    @property
    def open_circuits(self) -> int:
        """The provider circuits that are open or half-open."""
        return _shut(self.circuits)


@dataclass(frozen=True)
class Lifetime:
    """What every run in the ledger spent, by agent."""

    usage: dict[str, Usage] = field(default_factory=dict)
    costs: dict[tuple[str, CostSource], float] = field(default_factory=dict)


@dataclass(frozen=True)
class LedgerScope:
    """How `status` reads the ledger: the budgets (their period and limits), the agent of
    items that name none, and whether to add up every run (Prometheus's counters) or only
    the budget period and the last 24 hours."""

    budgets: Budgets
    default_agent: str
    lifetime: bool = False


def _shut(circuits: list[CircuitView]) -> int:
    return sum(view.shut for view in circuits)


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
    default_agent: str,
    ledger: LedgerScope | None = None,
) -> StatusReport:
    """The report; with ``ledger``, each agent's spend too, in one read of the ledger.
    ``default_agent``: the agent of items that name none (worker.defaultAgent)."""
    figures = _counting_cycles(store, store.queue_figures(now=now))
    workers = worker_views(
        store, now=now, max_age_seconds=worker_max_age_seconds, installation_id=installation_id
    )
    circuits = circuit_views(store, now)
    outbox = store.outbox_figures()
    found = health_problems(
        figures,
        now=now,
        live_workers=_live(workers),
        thresholds=thresholds,
        open_circuits=_shut(circuits),
        outbox=outbox,
    )
    counts = WorkerCounts(
        **{state.value: sum(view.liveness is state for view in workers) for state in Liveness}
    )
    live_agents = {view.row.agent for view in workers if view.liveness is Liveness.LIVE}
    unserved = unserved_agents(figures, default_agent=default_agent, live_agents=live_agents)
    held = [view.row for view in workers if view.liveness is Liveness.LIVE and view.row.held_reason]
    seen = health_concerns(
        figures, workers=counts, thresholds=thresholds, unserved=unserved,
        skewed=[view.row for view in workers if view.clock_skewed], held=held,
        failing_sources=_failing_sources(store, now),
    )  # fmt: skip
    spent, lifetime = _ledger(store, ledger, now) if ledger is not None else (None, None)
    return StatusReport(
        now,
        figures,
        workers,
        thresholds,
        worker_max_age_seconds,
        found,
        seen,
        circuits,
        spending=spent,
        lifetime=lifetime,
        outbox=outbox,
        unserved=unserved,
    )


SOURCE_FAILURE_SHOWN = timedelta(days=1)


def _failing_sources(store: Store, now: datetime) -> list[tuple[str, str]]:
    """(name, error) of each source whose last sync, tried within the last day, failed: a
    source taken out of wrighty.json is no longer tried, and its warning goes after a day."""
    return [
        (state.name, state.last_error)
        for state in store.list_sources()
        if state.last_error is not None
        and state.attempted_at is not None
        and now - state.attempted_at < SOURCE_FAILURE_SHOWN
    ]


def _counting_cycles(store: Store, figures: QueueFigures) -> QueueFigures:
    """The figures, with the items blocked by a cycle of two or more items counted (the store
    counts the rest; such a cycle is in a store only when it was written by hand)."""
    edges = store.list_dependencies()
    upstream = upstream_of((edge.item_id, edge.depends_on) for edge in edges)
    state_of = {edge.depends_on: edge.state for edge in edges}
    cyclic = cyclic_items(upstream, state_of)
    if all(item in upstream.get(item, ()) for item in cyclic):
        return figures  # none, or only items that come after themselves: counted already
    waiting = store.list_items([ItemState.QUEUED, ItemState.RETRY_SCHEDULED])
    blocked = 0
    for item in waiting:
        wait = dependency_wait(item.id, upstream, state_of, cyclic)
        blocked += wait is not None and wait.kind == "blocked"
    return dataclasses.replace(figures, blocked=max(blocked, figures.blocked))


def _ledger(store: Store, scope: LedgerScope, now: datetime) -> tuple[Spending, Lifetime | None]:
    since = None if scope.lifetime else spending_since(scope.budgets, now)
    entries = store.list_ledger(default_agent=scope.default_agent, since=since)
    spent = spending(entries, scope.budgets, now=now, agents=budgeted_agents(scope.budgets))
    if not scope.lifetime:
        return spent, None
    return spent, Lifetime(totals_by_agent(entries), cost_by_source(entries))
