"""The health report of `wrighty status` and `wrighty workers`: the queue's figures, every
registered worker with its liveness, the provider circuits, and the problems and concerns they
show."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

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
from wrighty.services.circuits import CircuitView, circuit_views
from wrighty.store.port import Store


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
    circuits: list[CircuitView]

    @property
    def healthy(self) -> bool:
        return not self.problems

    @property
    def live_workers(self) -> int:
        return _live(self.workers)

    @property
    def open_circuits(self) -> int:
        """The provider circuits that are open or half-open."""
        return _shut(self.circuits)


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
) -> StatusReport:
    figures = store.queue_figures(now=now)
    workers = worker_views(
        store, now=now, max_age_seconds=worker_max_age_seconds, installation_id=installation_id
    )
    circuits = circuit_views(store, now)
    found = health_problems(
        figures,
        now=now,
        live_workers=_live(workers),
        thresholds=thresholds,
        open_circuits=_shut(circuits),
    )
    counts = WorkerCounts(
        **{state.value: sum(view.liveness is state for view in workers) for state in Liveness}
    )
    seen = health_concerns(figures, workers=counts, thresholds=thresholds)
    return StatusReport(
        now, figures, workers, thresholds, worker_max_age_seconds, found, seen, circuits
    )
