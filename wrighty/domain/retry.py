"""The retry policies: `worker.processCrash` for a crashed agent (docs/retries.md) and
`worker.usageFailure` for a rate limit or a provider outage (docs/usage-limits.md); whether a
run is retried, and when the retry is due (pure)."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal


@dataclass(frozen=True)
class CrashPolicy:
    """`worker.processCrash` (docs/retries.md): what a process crash leads to."""

    action: Literal["needs-attention", "retry"] = "needs-attention"
    initial_seconds: float = 120.0
    multiplier: float = 2.0
    max_seconds: float = 900.0
    max_attempts: int = 2  # retries after the first run

    def delay_seconds(self, retry: int) -> float:
        """The wait before retry number ``retry`` (1-based): initial x multiplier^(n-1),
        capped at the maximum; never zero, never unbounded."""
        return _capped_backoff(self.initial_seconds, self.multiplier, self.max_seconds, retry)


# A usage retry never comes sooner than this after the run, whatever the provider said (or
# initialRetryMinutes, if that is shorter).
MIN_USAGE_WAIT_SECONDS = 60.0
# Backoff delays are spread over [1 - JITTER, 1] of their value, so that a fleet whose items
# hit one limit together does not come back in lockstep.
USAGE_JITTER = 0.2


# A ResetHint's source when the agent reported its usage limit itself (`wrighty fail`).
AGENT_REPORTED = "wrighty fail --usage-limit"


@dataclass(frozen=True)
class ResetHint:
    """What a provider said about when its limit lifts, as a vendor CLI reported it: a moment
    (``resets_at``) or a wait (``after_seconds``, counted from the end of the run)."""

    source: str  # where it was read, for the reason: "rate_limit_event", "retry-after", ...
    resets_at: datetime | None = None
    after_seconds: float | None = None

    def moment(self, ended_at: datetime) -> datetime | None:
        if self.resets_at is not None:
            return self.resets_at
        if self.after_seconds is not None and math.isfinite(self.after_seconds):
            return ended_at + timedelta(seconds=max(0.0, self.after_seconds))
        return None


@dataclass(frozen=True)
class UsageDue:
    """When a usage retry is due, and whether the provider's reset or the backoff said so."""

    at: datetime
    basis: Literal["reset", "backoff"]
    reset: datetime | None  # the reset the provider reported, if any


@dataclass(frozen=True)
class UsagePolicy:
    """`worker.usageFailure`: what a rate limit or a provider outage leads to."""

    action: Literal["needs-attention", "retry"] = "needs-attention"
    initial_seconds: float = 1800.0
    multiplier: float = 2.0
    max_seconds: float = 21600.0
    max_attempts: int = 5  # usage retries after the first run
    reset_grace_seconds: float = 120.0
    # Hand the item to a fallback agent when its retry would wait longer (None: always wait),
    # at most max_handoffs times (docs/handoff.md).
    handoff_after_seconds: float | None = None
    max_handoffs: int = 2

    def backoff_seconds(self, retry: int, *, key: int) -> float:
        """The wait before usage retry ``retry`` (1-based) when the provider named no reset:
        initial x multiplier^(n-1), capped at the maximum, less a jitter of up to
        USAGE_JITTER that ``key`` (the item) and ``retry`` fix: the same item and retry always
        wait the same, two items rarely do."""
        delay = _capped_backoff(self.initial_seconds, self.multiplier, self.max_seconds, retry)
        return max(self.shortest_wait, delay * (1 - USAGE_JITTER * _fraction(key, retry)))

    @property
    def shortest_wait(self) -> float:
        """No usage retry comes sooner after its run: a minute, or the first retry's delay if
        the policy asks for less."""
        return min(MIN_USAGE_WAIT_SECONDS, self.initial_seconds)

    def due(self, retry: int, *, ended_at: datetime, hint: ResetHint | None, key: int) -> UsageDue:
        """When usage retry ``retry`` is due: the reset the provider reported plus the grace,
        but no later than the maximum wait and no sooner than ``shortest_wait`` from the run's
        end; the backoff when it reported none."""
        reset = hint.moment(ended_at) if hint is not None else None
        if reset is None:
            wait = self.backoff_seconds(retry, key=key)
            return UsageDue(ended_at + timedelta(seconds=wait), "backoff", None)
        earliest = ended_at + timedelta(seconds=self.shortest_wait)
        latest = ended_at + timedelta(seconds=max(self.max_seconds, self.shortest_wait))
        wanted = reset + timedelta(seconds=self.reset_grace_seconds)
        return UsageDue(min(max(wanted, earliest), latest), "reset", reset)


def _capped_backoff(initial: float, multiplier: float, maximum: float, retry: int) -> float:
    """initial x multiplier^(retry-1), capped at ``maximum``, for retry 1, 2, ..."""
    if retry < 1:
        raise ValueError("retries are numbered from 1")
    # Attempts are at most 20 and the multiplier at most 100: the power stays finite.
    return min(initial * multiplier ** (retry - 1), maximum)


def _fraction(key: int, retry: int) -> float:
    """A number in [0, 1) fixed by (key, retry), spread evenly over keys."""
    digest = hashlib.blake2b(f"{key}:{retry}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


@dataclass(frozen=True)
class Fallback:
    """One of an agent's fallback agents, as the worker finds it when a run is refused."""

    agent: str
    unavailable: str | None = None  # why it cannot take the item now (None: it can)


@dataclass(frozen=True)
class FallbackChoice:
    agent: str | None  # the agent to hand the item to; None: wait
    why: str = ""  # for the retry's reason: why it waits although it could be handed off


def choose_fallback(
    policy: UsagePolicy, fallbacks: Sequence[Fallback], *, handoffs: int, wait_seconds: float
) -> FallbackChoice:
    """Wait for the provider, or hand the item off (docs/handoff.md): off to the first
    fallback that can take it, when its retry would wait longer than
    ``worker.usageFailure.handoffAfterMinutes`` and it was handed off fewer than
    ``maxHandoffs`` times. A fallback whose circuit is open or whose day budget is spent
    cannot take it; the agent it came from is a fallback like any other once its circuit has
    closed, so an item goes back only then (and ``maxHandoffs`` ends any ping-pong)."""
    after = policy.handoff_after_seconds
    if after is None or not fallbacks or wait_seconds <= after:
        return FallbackChoice(None)
    if handoffs >= policy.max_handoffs:
        return FallbackChoice(
            None,
            f"; not handed off: it was {handoffs} times already (worker.usageFailure.maxHandoffs)",
        )
    for fallback in fallbacks:
        if fallback.unavailable is None:
            return FallbackChoice(fallback.agent)
    held = "; ".join(f"{f.agent}: {f.unavailable}" for f in fallbacks)
    return FallbackChoice(None, f"; no fallback can take it ({held})")
