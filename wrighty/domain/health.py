"""The worker registry and the queue's health (pure: the figures come in, verdicts go out).

A worker is live when its last heartbeat is recent enough. On the installation that reads the
registry, a worker whose process is gone, or whose pid now belongs to another process, is dead
whatever its heartbeat says.

Thresholds turn the figures into problems; no problem, healthy. Only a threshold that was set
makes a problem (and so an unhealthy exit). What looks wrong without one (expired leases, dead
workers, waiting work with no live worker) is a warning: absent worker rows are never proof of
health, so with no threshold set the verdict is "no thresholds set", never "healthy".
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING

from wrighty.domain import suggestions
from wrighty.domain.clocks import CLOCK_BOUND_SECONDS, describe_offset
from wrighty.domain.states import ItemState

if TYPE_CHECKING:
    from wrighty.domain.outbox import OutboxFigures


class WorkerState(StrEnum):
    IDLE = "idle"
    RUNNING = "running"
    STOPPING = "stopping"


class Verdict(StrEnum):
    """The one-word verdict that `status` and the inbox's header show."""

    HEALTHY = "healthy"  # thresholds were set, and none failed
    UNHEALTHY = "unhealthy"  # a threshold that was set failed
    UNCHECKED = "no thresholds set"  # nothing was checked: no threshold was set


class Liveness(StrEnum):
    LIVE = "live"
    STALE = "stale"  # no heartbeat within the maximum age
    DEAD = "dead"  # on this installation: its process is gone


@dataclass(frozen=True)
class WorkerRow:
    """One registered `wrighty worker start` process."""

    worker_id: str
    label: str | None
    installation_id: str
    pid: int
    process_started_at: float
    version: str
    state: WorkerState
    items: tuple[int, ...]
    started_at: datetime
    last_heartbeat_at: datetime
    agent: str | None = None  # the agent it runs (None: unknown, a row of an older wrighty)
    # How far its clock is from the store's, in seconds (+: ahead); None when not measured
    # (SQLite, whose workers share one machine's clock, or a row of an older wrighty).
    clock_offset_seconds: float | None = None
    # Why it stopped claiming: its own machine cannot run items (None while it claims).
    held_reason: str | None = None
    # What it waits for while it goes on: its wake-up line refused (it polls meanwhile), the
    # store's calls failing (docs/scale.md#what-a-worker-waits-for); None: nothing.
    waiting_for: str | None = None


def liveness(
    row: WorkerRow,
    *,
    now: datetime,
    max_age_seconds: float,
    process_running: bool | None,
) -> Liveness:
    """``process_running``: whether the row's pid is still the same process (same start
    time), when the reader is on the row's installation; None when it cannot tell."""
    if process_running is False:
        return Liveness.DEAD
    age = (now - row.last_heartbeat_at).total_seconds()
    return Liveness.LIVE if age <= max_age_seconds else Liveness.STALE


@dataclass(frozen=True)
class VerificationFigures:
    """Verification's totals over every check and run the store holds (docs/verify.md): they
    only grow, so Prometheus reads them as counters. A check passed (it started and exited 0),
    failed (it ran and did not pass) or could not start; by a worker or by hand. The fix turns
    are the runs of kind fix: a requeue resets an item's own count, never this one."""

    checks_passed: int = 0
    checks_failed: int = 0
    checks_not_started: int = 0
    fix_turns: int = 0


@dataclass(frozen=True)
class QueueFigures:
    """What the store counts for `wrighty status`, in one read."""

    counts: dict[ItemState, int]
    waiting: int  # items a worker could take now: queued, and retries that are due
    oldest_queued_at: datetime | None  # the earliest queue entry among waiting items
    unknown_queue_wait: int  # waiting items whose queue entry time is unknown
    expired_leases: int
    retry_next_due: datetime | None
    # When the item that has waited longest in review entered it (None: none is in review).
    oldest_review_at: datetime | None = None
    # When the item that has been landing longest was accepted into landing (None: none is;
    # docs/landing.md).
    oldest_landing_at: datetime | None = None
    # Queued or retry-scheduled items that wait for an item they come after (not counted in
    # waiting), and those of them that cannot start as things stand: an item they come after
    # (or one further up) is cancelled or needs attention (docs/scheduling.md).
    waiting_on_dependencies: int = 0
    blocked: int = 0
    # Queued or retry-scheduled items by the agent they name (None: worker.defaultAgent's).
    waiting_by_agent: Mapping[str | None, int] = field(default_factory=dict)
    verification: VerificationFigures = field(default_factory=VerificationFigures)


@dataclass(frozen=True)
class Thresholds:
    max_queue_wait_seconds: float | None = None
    min_workers: int | None = None
    max_expired_leases: int | None = None
    max_needs_attention: int | None = None
    max_open_circuits: int | None = None  # provider circuits open or half-open
    max_notify_age_seconds: float | None = None  # the oldest undelivered notification
    max_review_wait_seconds: float | None = None  # the item longest in review

    @property
    def any_set(self) -> bool:
        return any(
            limit is not None
            for limit in (
                self.max_queue_wait_seconds,
                self.min_workers,
                self.max_expired_leases,
                self.max_needs_attention,
                self.max_open_circuits,
                self.max_notify_age_seconds,
                self.max_review_wait_seconds,
            )
        )


@dataclass(frozen=True)
class WorkerCounts:
    """The registered workers by liveness."""

    live: int = 0
    stale: int = 0
    dead: int = 0


@dataclass(frozen=True)
class Unserved:
    """An agent whose items wait while no live worker runs it."""

    agent: str
    waiting: int  # its queued and retry-scheduled items


def unserved_agents(
    figures: QueueFigures, *, default_agent: str, live_agents: Collection[str | None]
) -> list[Unserved]:
    """The agents whose items wait (queued or retry-scheduled) while no live worker runs them,
    by name. Said only when some worker is live (with none, `no_live_worker` says more) and
    every live worker said which agent it runs: one that did not (an older wrighty's) may run
    any, so nothing is claimed about any agent."""
    if not live_agents or None in live_agents:
        return []
    waiting: dict[str, int] = {}
    for agent, count in figures.waiting_by_agent.items():
        name = agent or default_agent
        waiting[name] = waiting.get(name, 0) + count
    return [
        Unserved(agent, count)
        for agent, count in sorted(waiting.items())
        if count and agent not in live_agents
    ]


@dataclass(frozen=True)
class Concern:
    """Something that looks wrong although no threshold makes it a problem."""

    check: str
    message: str


@dataclass(frozen=True)
class Breach:
    """A figure past its threshold: one of the problems `status` reports."""

    check: str
    value: float
    limit: float
    message: str


def verdict(problems: list[Breach], thresholds: Thresholds) -> Verdict:
    """Healthy only when thresholds were set and all of them pass: with none set, nothing was
    checked, and a quiet registry proves nothing."""
    if problems:
        return Verdict.UNHEALTHY
    return Verdict.HEALTHY if thresholds.any_set else Verdict.UNCHECKED


def oldest_wait_seconds(figures: QueueFigures, now: datetime) -> float | None:
    if figures.oldest_queued_at is None:
        return None
    return max(0.0, (now - figures.oldest_queued_at).total_seconds())


def oldest_review_wait_seconds(figures: QueueFigures, now: datetime) -> float | None:
    """How long the item longest in review has waited for a person (None: none is)."""
    if figures.oldest_review_at is None:
        return None
    return max(0.0, (now - figures.oldest_review_at).total_seconds())


def oldest_landing_wait_seconds(figures: QueueFigures, now: datetime) -> float | None:
    """How long the item longest in landing has been landing (None: none is)."""
    if figures.oldest_landing_at is None:
        return None
    return max(0.0, (now - figures.oldest_landing_at).total_seconds())


def oldest_notice_age_seconds(outbox: OutboxFigures | None, now: datetime) -> float | None:
    """How long the oldest undelivered notification has waited (None: none waits)."""
    if outbox is None or outbox.oldest_pending_at is None:
        return None
    return max(0.0, (now - outbox.oldest_pending_at).total_seconds())


def problems(
    figures: QueueFigures,
    *,
    now: datetime,
    live_workers: int,
    thresholds: Thresholds,
    open_circuits: int = 0,
    outbox: OutboxFigures | None = None,
) -> list[Breach]:
    """The failed checks; an exact-threshold value passes. ``open_circuits``: the provider
    circuits that are open or half-open (wrighty/domain/circuits.py); ``outbox``: the
    notifications not delivered yet (wrighty/domain/outbox.py)."""
    t = thresholds
    # (name, value, threshold, what a breach says): a min_ threshold is a floor, the rest
    # ceilings; a check with no threshold set, or no value (nothing waits), passes.
    checks: tuple[tuple[str, float | None, float | None, str], ...] = (
        ("max_queue_wait", oldest_wait_seconds(figures, now), t.max_queue_wait_seconds,
         "an item has waited {v:.0f} s, more than {limit:g} s"),
        ("min_workers", live_workers, t.min_workers, "{v} live workers, fewer than {limit}"),
        ("max_expired_leases", figures.expired_leases, t.max_expired_leases,
         "{v} running items have an expired lease, more than {limit}"),
        ("max_needs_attention", figures.counts.get(ItemState.NEEDS_ATTENTION, 0),
         t.max_needs_attention, "{v} items need attention, more than {limit}"),
        ("max_open_circuits", open_circuits, t.max_open_circuits,
         "{v} provider circuits are open or half-open, more than {limit}"),
        ("max_notify_age", oldest_notice_age_seconds(outbox, now), t.max_notify_age_seconds,
         "a notification has waited {v:.0f} s to be delivered, more than {limit:g} s"),
        ("max_review_wait", oldest_review_wait_seconds(figures, now), t.max_review_wait_seconds,
         "an item has waited {v:.0f} s for review, more than {limit:g} s"),
    )  # fmt: skip
    found: list[Breach] = []
    for name, value, limit, said in checks:
        if value is None or limit is None:
            continue
        if value < limit if name.startswith("min_") else value > limit:
            shown = round(value, 3) if isinstance(value, float) else value
            found.append(Breach(name, shown, limit, said.format(v=value, limit=limit)))
    return found


def concerns(
    figures: QueueFigures,
    *,
    workers: WorkerCounts,
    thresholds: Thresholds,
    unserved: Collection[Unserved] = (),
    skewed: Collection[WorkerRow] = (),
    held: Collection[WorkerRow] = (),
    failing_sources: Collection[tuple[str, str]] = (),
) -> list[Concern]:
    """What looks wrong that no threshold that was set already reports as a problem;
    ``unserved``: the agents whose items no live worker runs (`unserved_agents`); ``skewed``:
    the live workers whose clock is off by more than the bound (`domain/clocks.skewed`);
    ``held``: the live workers that hold, as their machine cannot start runs (docs/worker.md);
    ``failing_sources``: (name, error) of each tracker source whose last sync failed
    (docs/sources.md)."""
    found: list[Concern] = []
    if thresholds.max_expired_leases is None and figures.expired_leases:
        found.append(
            Concern(
                "expired_leases",
                f"{figures.expired_leases} running items have an expired lease: their worker "
                f"stopped renewing the claim (`{suggestions.reap()}` settles them)",
            )
        )
    if thresholds.min_workers is None and workers.live == 0 and figures.waiting:
        found.append(
            Concern("no_live_worker", f"{figures.waiting} items wait and no worker is live")
        )
    for agent in unserved:
        found.append(
            Concern(
                "unserved_agent",
                f"{agent.waiting} {'items wait' if agent.waiting != 1 else 'item waits'} for "
                f"agent {agent.agent}; no live worker runs it",
            )
        )
    for row in skewed:
        offset = row.clock_offset_seconds or 0.0
        found.append(
            Concern(
                "clock_skew",
                f"worker {row.worker_id}'s clock is {describe_offset(offset)}, more than "
                f"{CLOCK_BOUND_SECONDS:g} s: it uses the store's time, but fix its machine's "
                "clock (NTP)",
            )
        )
    for row in held:
        name = f"{row.worker_id} ({row.label})" if row.label else row.worker_id
        found.append(Concern("held_workers", f"worker {name} claims nothing: {row.held_reason}"))
    for name, error in failing_sources:
        found.append(Concern("source_failing", f"source {name}: its last sync failed: {error}"))
    if workers.dead:
        found.append(
            Concern(
                "dead_workers",
                f"{workers.dead} registered workers are dead: their process is gone "
                "(the registry forgets them after worker.registryRetentionHours)",
            )
        )
    if workers.stale:
        found.append(
            Concern(
                "stale_workers",
                f"{workers.stale} registered workers sent no recent heartbeat",
            )
        )
    if figures.blocked:
        found.append(
            Concern(
                "blocked_items",
                f"{figures.blocked} waiting items cannot start: an item they come after was "
                "cancelled or needs attention (`wrighty list` says which)",
            )
        )
    return found
