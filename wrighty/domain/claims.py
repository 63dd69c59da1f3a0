"""Claims, leases, settling and the reaper's decision (docs/claims.md and its invariants).

Pure: every function takes the facts it needs and returns a value; the store carries out the
guarded writes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from wrighty.domain import suggestions
from wrighty.domain.durations import MAX_ITEM_TIMEOUT_SECONDS
from wrighty.domain.leases import lease_expired, stop_margin
from wrighty.domain.model import Change, Item, RunEnd, Session
from wrighty.domain.outcomes import Confidence, OutcomeClass
from wrighty.domain.scheduling import NO_LIMITS, ConcurrencyLimits
from wrighty.domain.states import ItemState
from wrighty.domain.times import rfc3339
from wrighty.domain.transitions import transition
from wrighty.domain.usage import Limit
from wrighty.errors import IllegalTransitionError

CLAIMABLE_STATES = frozenset({ItemState.QUEUED, ItemState.RETRY_SCHEDULED})


def worker_actor(worker_id: str) -> str:
    return f"worker:{worker_id}"


REAPER = "reaper"


@dataclass(frozen=True)
class LeaseTerms:
    """How long a claim lasts and how far renewals may carry it."""

    lease_seconds: float
    default_timeout_seconds: float
    # The time limits of the checks that verify a run, added up (docs/verify.md): a claim
    # keeps its lease while they run, after its agent's time limit.
    checks_seconds: float = 0.0

    def __post_init__(self) -> None:
        if self.lease_seconds <= 0 or self.default_timeout_seconds <= 0:
            raise ValueError("lease and timeout must be positive")
        if not 0 <= self.checks_seconds < float("inf"):
            raise ValueError("the checks' time limits must add up to a number of seconds")

    @property
    def stop_margin(self) -> float:
        """How long before its lease ends (by its own clock) a worker that could not renew
        starts stopping the agent: see ``stop_margin``."""
        return stop_margin(self.lease_seconds)

    def lease_from(self, now: datetime) -> datetime:
        """The lease a claim gets, and the one a renewal asks for (the store caps a renewal's
        at the claim's renew deadline)."""
        return now + timedelta(seconds=self.lease_seconds)

    def time_limit(self, item_timeout_seconds: float | None) -> float:
        """How long the item's run may take: its own timeout, else the default, never more
        than the longest timeout wrighty accepts. A store can hold any number (written by an
        older wrighty or by hand); none may make a deadline overflow, and a value that is not
        a positive number counts as no timeout."""
        timeout = item_timeout_seconds
        if timeout is None or not timeout > 0:  # `not >` is also true of NaN
            timeout = self.default_timeout_seconds
        return min(timeout, MAX_ITEM_TIMEOUT_SECONDS)

    def renew_deadline(self, now: datetime, item_timeout_seconds: float | None) -> datetime:
        """No renewal carries a lease past the item timeout, its checks' time limits and one
        lease (invariant 3)."""
        limit = self.time_limit(item_timeout_seconds) + self.checks_seconds + self.lease_seconds
        return now + timedelta(seconds=limit)


@dataclass(frozen=True)
class ClaimRequest:
    """Who is asking for work, and which work it may take."""

    worker_id: str
    installation_id: str
    terms: LeaseTerms
    default_agent: str
    item_id: int | None = None
    agent: str | None = None
    # The agent's period budget: nothing is claimed while its runs started since ``since``
    # spent ``limit`` (checked in the claim's transaction).
    budget: PeriodBudget | None = None
    # How many items may run at once per agent and per label, across every worker on the
    # store: an item whose limit the running items reach is not claimed (checked in the
    # claim's transaction; docs/scheduling.md).
    limits: ConcurrencyLimits = NO_LIMITS
    # completion.stack in worktree mode: an item may start while the one item it comes after
    # that is not done waits in review or landing with a branch of this installation
    # (docs/landing.md#stacked-items).
    stack: bool = False


@dataclass(frozen=True)
class StackedOn:
    """The item a claimed item stacks on (completion.stack): the one item it comes after that
    is not done yet, waiting in review or landing, and that item's branch, which the claimed
    item's branch starts from."""

    item_id: int
    branch: str


@dataclass(frozen=True)
class PeriodBudget:
    since: datetime
    limit: Limit


@dataclass(frozen=True)
class Claim:
    """What a worker holds once it has claimed an item: the item (running, under its new
    generation, owner and lease), the state it was claimed from, and its recorded session
    (None when it has none), all read in the claim's own transaction."""

    item: Item
    claimed_from: ItemState
    session: Session | None
    claimed_reason_code: str | None = None  # why it waited when it was claimed
    stacked_on: StackedOn | None = None  # with completion.stack: where its branch starts


def claim(item: Item, request: ClaimRequest, *, at: datetime) -> Change:
    """The move that gives ``item`` to the requesting worker under a new generation."""
    return _claim(item, request, at=at, renew_deadline=request.terms.renew_deadline)


def claim_to_set_aside(item: Item, request: ClaimRequest, *, at: datetime) -> Change:
    """A claim of ``item`` for the sole purpose of settling it as internal-error, when its
    ordinary claim cannot be computed: it reads none of the item's own values, and its lease
    is never renewed."""
    terms = request.terms
    return _claim(item, request, at=at, renew_deadline=lambda now, _: terms.lease_from(now))


def _claim(
    item: Item,
    request: ClaimRequest,
    *,
    at: datetime,
    renew_deadline: Callable[[datetime, float | None], datetime],
) -> Change:
    if item.state not in CLAIMABLE_STATES:
        raise IllegalTransitionError(f"item {item.id} is {item.state}; only queued or due items")
    change = transition(
        item, ItemState.RUNNING, at=at, actor=worker_actor(request.worker_id), new_generation=True
    )
    after = dataclasses.replace(
        change.after,
        claimed_by=request.worker_id,
        claimed_at=at,
        lease_expires_at=request.terms.lease_from(at),
        renew_deadline=renew_deadline(at, item.timeout_seconds),
    )
    return dataclasses.replace(change, after=after)


def not_claimable_reason(
    item: Item, *, agent: str, default_agent: str, now: datetime
) -> str | None:
    """Why a worker of ``agent`` told to work on ``item`` alone (`worker start --item`) would
    find nothing to do, as one line that says how to move on; None when it can claim it."""
    if (item.agent or default_agent) != agent:
        return (
            f"item {item.id} is for agent {item.agent or default_agent}; run "
            f"`{suggestions.start_worker(item.id, item.agent or default_agent)}`"
        )
    if item.state is ItemState.QUEUED:
        return None
    if item.state is ItemState.RETRY_SCHEDULED:
        if item.not_before is None or item.not_before <= now:
            return None
        return (
            f"item {item.id} is retry-scheduled, due at {rfc3339(item.not_before)}; "
            f"`{suggestions.requeue(item.id, resume=True)}` makes it due now"
        )
    hints = {
        ItemState.TODO: f"queue it with `{suggestions.queue(item.id)}`",
        ItemState.RUNNING: f"worker {item.claimed_by} holds it",
        ItemState.NEEDS_ATTENTION: f"`{suggestions.show(item.id)}` says why, and "
        f"`{suggestions.requeue(item.id, resume=False)}` (or `--resume`) puts it back to work",
        ItemState.REVIEW: "it is verified and waits for a person's review, not for a worker",
        ItemState.DONE: "it is finished",
        ItemState.CANCELLED: "it was cancelled",
    }
    return f"item {item.id} is {item.state}; {hints[item.state]}"


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


@dataclass(frozen=True)
class Renewal:
    """One claim's renewal among a worker's: the claim as its run holds it, and the moment its
    lease is measured from (each run reads its own clocks before it asks)."""

    claimed: Item
    now: datetime
    terms: LeaseTerms

    @property
    def key(self) -> tuple[int, int, str | None]:
        """Which claim this is: an item, its generation, its owner. Two claims on one item
        (a lost one whose run has not noticed yet, and the item's next) never share one."""
        return (self.claimed.id, self.claimed.generation, self.claimed.claimed_by)


@dataclass(frozen=True)
class Settlement:
    """How a worker ends its claim: where the item goes and how the run ended."""

    to_state: ItemState
    process_started: bool
    run_end: RunEnd | None = None
    reason_code: str | None = None
    reason: str | None = None
    next_action: str | None = None
    not_before: datetime | None = None
    counts_as_crash_retry: bool = False
    counts_as_usage_retry: bool = False
    counts_as_fix_turn: bool = False  # verification's (domain/verify.py)
    # A handoff to this agent instead of a long wait (domain/handoff.py, docs/handoff.md).
    handoff_to: str | None = None


def settle(claimed: Item, settlement: Settlement, *, at: datetime) -> Change:
    """The move out of ``running`` that releases the claim (invariant 6: one transaction)."""
    if claimed.state is not ItemState.RUNNING or claimed.claimed_by is None:
        raise IllegalTransitionError(f"item {claimed.id} is not claimed; nothing to settle")
    if settlement.to_state is ItemState.QUEUED and settlement.process_started:
        raise IllegalTransitionError(
            f"item {claimed.id} had an agent process; it cannot silently go back to queued"
        )
    change = transition(
        claimed,
        settlement.to_state,
        at=at,
        actor=worker_actor(claimed.claimed_by),
        reason_code=settlement.reason_code,
        reason=settlement.reason,
        next_action=settlement.next_action,
        not_before=settlement.not_before,
        run_end=settlement.run_end,
    )
    if settlement.counts_as_crash_retry:
        after = dataclasses.replace(change.after, crash_retries=claimed.crash_retries + 1)
        change = dataclasses.replace(change, after=after)
    if settlement.counts_as_usage_retry:
        after = dataclasses.replace(change.after, usage_retries=claimed.usage_retries + 1)
        change = dataclasses.replace(change, after=after)
    if settlement.counts_as_fix_turn:
        after = dataclasses.replace(change.after, fix_turns=claimed.fix_turns + 1)
        change = dataclasses.replace(change, after=after)
    if settlement.handoff_to is not None:
        after = dataclasses.replace(
            change.after,
            agent=settlement.handoff_to,
            handoffs=claimed.handoffs + 1,
            handoff_note=None,
            crash_retries=0,
            usage_retries=0,
            fix_turns=0,
        )
        change = dataclasses.replace(change, after=after)
    return change


@dataclass(frozen=True)
class ReapFacts:
    """What the reaper knows about an expired claim, read in the same transaction."""

    run_recorded: bool  # a run row exists for this generation: its agent may have started
    # A session id is recorded (`resume.session_id_recorded`): the reaper runs on any
    # installation and cannot see the workspace or the transcript; the worker that takes the
    # retry checks the whole resume address before it resumes (wrighty/domain/resume.py).
    has_resume_address: bool
    claimed_from: ItemState  # where the item was when this claim took it


def reap(item: Item, facts: ReapFacts, *, at: datetime, max_requeues: int) -> Change:
    """The move for an item whose worker stopped renewing (invariant 4)."""
    if not lease_expired(item.lease_expires_at, at) or item.state is not ItemState.RUNNING:
        raise IllegalTransitionError(f"item {item.id} has a live claim; the reaper leaves it")
    run_end = RunEnd(
        ended_at=at,
        outcome_class=OutcomeClass.WORKER_LOST,
        confidence=Confidence.INFERRED,
        diagnostic=f"lease expired at {item.lease_expires_at:%Y-%m-%dT%H:%M:%SZ}; "
        "the worker stopped renewing",
    )

    def move(
        to_state: ItemState,
        reason: str,
        *,
        next_action: str | None = None,
        not_before: datetime | None = None,
    ) -> Change:
        return transition(
            item,
            to_state,
            at=at,
            actor=REAPER,
            reason_code="worker-lost",
            reason=reason,
            next_action=next_action,
            not_before=not_before,
            run_end=run_end,
        )

    if not facts.run_recorded:
        # Nothing ran under this claim: the item goes back to where the claim found it.
        if facts.claimed_from is ItemState.RETRY_SCHEDULED:
            return move(
                ItemState.RETRY_SCHEDULED,
                "the worker vanished before starting an agent; the retry is due again",
                not_before=at,
            )
        return move(ItemState.QUEUED, "the worker vanished before starting an agent; queued again")
    if facts.has_resume_address and item.requeues < max_requeues:
        change = move(
            ItemState.RETRY_SCHEDULED,
            f"the worker vanished; the session will be resumed "
            f"(reclaim {item.requeues + 1} of {max_requeues})",
            not_before=at,
        )
        after = dataclasses.replace(change.after, requeues=item.requeues + 1)
        return dataclasses.replace(change, after=after)
    why = (
        f"its reclaim budget ({max_requeues}) is spent"
        if facts.has_resume_address
        else "no session was recorded to resume"
    )
    return move(
        ItemState.NEEDS_ATTENTION,
        f"the worker running this item vanished and {why}",
        next_action=suggestions.requeue(item.id, resume=facts.has_resume_address),
    )


def release(item: Item, *, at: datetime, actor: str, resumable: bool = False) -> Change:
    """An operator takes a running item from a worker that is gone (a new generation fences
    off any late write from it). ``resumable``: the item has a session to resume."""
    if item.state is not ItemState.RUNNING:
        raise IllegalTransitionError(
            f"item {item.id} is {item.state}; `wrighty release` applies to running items"
        )
    return transition(
        item,
        ItemState.NEEDS_ATTENTION,
        at=at,
        actor=actor,
        reason_code="operator-released",
        reason=f"released by an operator from worker {item.claimed_by}",
        next_action=suggestions.requeue(item.id, resume=resumable),
        new_generation=True,
        run_end=RunEnd(
            ended_at=at,
            outcome_class=OutcomeClass.WORKER_LOST,
            confidence=Confidence.INFERRED,
            diagnostic="released by an operator",
        ),
    )
