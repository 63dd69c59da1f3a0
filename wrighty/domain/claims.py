"""Claims, leases and the reaper's decision (DESIGN.md, claims and fencing).

Pure: every function takes the facts it needs and returns a value; the store carries out the
guarded writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from wrighty.domain.states import ItemState


@dataclass(frozen=True)
class Claim:
    """One worker's right to one item at one generation."""

    item_id: int
    generation: int
    worker_id: str
    lease_expires_at: datetime
    renew_deadline: datetime


@dataclass(frozen=True)
class LeaseTerms:
    """How long a claim lasts and how far renewals may carry it."""

    lease_seconds: float
    default_timeout_seconds: float

    def __post_init__(self) -> None:
        if self.lease_seconds <= 0 or self.default_timeout_seconds <= 0:
            raise ValueError("lease and timeout must be positive")

    def first_lease(self, now: datetime) -> datetime:
        return now + timedelta(seconds=self.lease_seconds)

    def renew_deadline(self, now: datetime, item_timeout_seconds: float | None) -> datetime:
        """No renewal carries a lease past the item timeout plus one lease (invariant 3)."""
        timeout = item_timeout_seconds or self.default_timeout_seconds
        return now + timedelta(seconds=timeout + self.lease_seconds)

    def renewed_lease(self, now: datetime, deadline: datetime) -> datetime:
        return min(now + timedelta(seconds=self.lease_seconds), deadline)


class RenewOutcome(StrEnum):
    RENEWED = "renewed"
    # Still the owner, but the renewal budget is spent: stop the agent and settle now.
    BUDGET_EXHAUSTED = "budget-exhausted"
    # Not the owner any more: stop the agent and write nothing more about the item.
    LOST = "lost"


@dataclass(frozen=True)
class RenewResult:
    outcome: RenewOutcome
    lease_expires_at: datetime | None = None


def lease_expired(lease_expires_at: datetime | None, now: datetime) -> bool:
    """Expired strictly before ``now``: a lease that ends exactly now is still valid."""
    return lease_expires_at is not None and lease_expires_at < now


@dataclass(frozen=True)
class ReapDecision:
    to_state: ItemState
    reason_code: str | None
    reason: str
    next_action: str | None
    counts_as_requeue: bool


def decide_reap(
    *,
    item_id: int,
    process_started: bool,
    has_resume_address: bool,
    requeues: int,
    max_requeues: int,
) -> ReapDecision:
    """Where an item whose worker vanished goes (invariant 4)."""
    if not process_started:
        return ReapDecision(
            ItemState.QUEUED,
            "worker-lost",
            "the worker vanished before starting an agent; queued again",
            None,
            counts_as_requeue=False,
        )
    if has_resume_address and requeues < max_requeues:
        return ReapDecision(
            ItemState.RETRY_SCHEDULED,
            "worker-lost",
            f"the worker vanished; resuming the session (reclaim {requeues + 1} of {max_requeues})",
            None,
            counts_as_requeue=True,
        )
    why = (
        f"the reclaim budget of {max_requeues} is spent"
        if has_resume_address
        else "no session was recorded to resume"
    )
    return ReapDecision(
        ItemState.NEEDS_ATTENTION,
        "worker-lost",
        f"the worker running this item vanished and {why}",
        f"wrighty show {item_id}, then wrighty requeue {item_id} --resume or --fresh",
        counts_as_requeue=False,
    )
