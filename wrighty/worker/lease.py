"""The lease guard: a claim's lease, enforced by the worker's own monotonic clock.

The worker knows, by time.monotonic, when each claim's lease ends: the reading it took just
before the call that set the lease (the claim, or a renewal that succeeded), plus what the
store gave (its lease_expires_at less the ``now`` the worker passed). The reading comes before
the store read ``now`` and wrote the lease, so the moment is never later than the store's.

A guard (one per claim, with a thread of its own) stops the agent's whole tree from
``stop_margin`` before that moment: SIGTERM, half the margin of grace, SIGKILL. It acts
whatever the run's own thread is doing, even blocked inside a store call. Once it fired, the
claim is lost to this worker (``claim-lost`` with reason ``lease-ended``) unless the agent had
already ended on its own: then its outcome is known, and the run goes on trying to record it
under its claim (docs/claims.md#the-lease-guard).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from wrighty.domain.model import Item

Clock = Callable[[], float]


class Stoppable(Protocol):
    """What the guard needs of an agent (supervisor.process.AgentProcess)."""

    @property
    def exited(self) -> threading.Event: ...

    def stop(self, grace_seconds: float) -> None: ...


@dataclass(frozen=True)
class Reading:
    """The worker's two clocks read together: the monotonic reading first, then ``now``
    (the time passed to the store), so a lease measured from it is never later than the
    store's."""

    monotonic: float
    now: datetime


def read_clocks(now: Callable[[], datetime], clock: Clock = time.monotonic) -> Reading:
    reading = clock()
    return Reading(reading, now())


def lease_end(reading: Reading, lease_expires_at: datetime) -> float:
    """When, by the monotonic clock, a lease that the store set from ``reading.now`` ends."""
    return reading.monotonic + (lease_expires_at - reading.now).total_seconds()


class LeaseGuard:
    """The lease of one claim, and the agent to stop before it ends.

    ``check()`` is the guard's one decision, at the clock's current reading; ``start()`` runs
    it in a thread of its own, woken when the lease moves or the run ends.
    """

    def __init__(
        self,
        claimed: Item,
        *,
        ends_at: float,
        margin: float,
        on_lost: Callable[[str], None],
        clock: Clock = time.monotonic,
    ) -> None:
        self._claimed = claimed
        self.item_id = claimed.id
        self._ends_at = ends_at
        self.margin = margin
        self.grace_seconds = margin / 2  # SIGTERM, then SIGKILL: both inside the margin
        self._on_lost = on_lost  # told the cause, once, when the guard gives the claim up
        self._clock = clock
        self._cond = threading.Condition()
        self._agent: Stoppable | None = None
        self._reached = False  # the guard's moment came
        self._lost = False  # ...and the run had no outcome of its own by then
        self._settling = False  # the run's outcome is known: it only records it now
        self._closed = False
        self.waiting_on: str | None = None  # the store call the run is in, if any
        self.trouble: str | None = None  # the store's last error, while it fails
        self._lost_cause: str | None = None  # the cause, as it was when the guard fired

    # -- the moment -------------------------------------------------------------------------

    @property
    def stop_at(self) -> float:
        """When the guard starts stopping the agent (monotonic): the lease's end less the
        margin."""
        with self._cond:
            return self._moment()

    def _moment(self) -> float:
        """The guard's moment (the caller holds the lock)."""
        return self._ends_at - self.margin

    def extend(self, reading: Reading, lease_expires_at: datetime | None) -> None:
        """A store call made at ``reading`` set the lease to ``lease_expires_at``."""
        if lease_expires_at is None:
            return
        with self._cond:
            self._ends_at = max(self._ends_at, lease_end(reading, lease_expires_at))
            self._cond.notify_all()

    @property
    def lost(self) -> bool:
        """Whether the guard stopped the agent (or would have) before the run had its own
        outcome: the claim is given up."""
        with self._cond:
            return self._lost

    @property
    def settling(self) -> bool:
        """Whether the run's outcome is known and it only records it now."""
        with self._cond:
            return self._settling

    # -- what the run tells it --------------------------------------------------------------

    def attach(self, agent: Stoppable) -> bool:
        """The run's agent, just started: False if the guard already fired (the caller stops
        it then)."""
        with self._cond:
            if self._lost:
                return False
            self._agent = agent
            return True

    def attach_check(self, check: Stoppable) -> bool:
        """A check of the run's verification, just started once the agent's outcome was
        known: the run is under the claim's watch again (the guard stops the check, and gives
        the claim up, at its moment). False if the moment has already come: the caller stops
        the check and gives the claim up."""
        with self._cond:
            if self._reached:
                return False
            self._settling = False
            self._agent = check
            return True

    def outcome_known(self) -> bool:
        """The run's agent ended (or never started) and its outcome is known: from now on the
        run only records it, for as long as its claim lets it. False if the guard fired
        first: the agent was stopped for the lease, and the claim is given up."""
        with self._cond:
            if self._lost:
                return False
            self._settling = True
            return True

    def close(self) -> None:
        """The run is over: the guard's thread ends."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    # -- the decision -----------------------------------------------------------------------

    def check(self) -> bool:
        """Fire if the guard's moment has come (once): stop the agent's tree, and give the
        claim up unless the run's outcome was already known. Whether the moment has come."""
        with self._cond:
            if self._reached:
                return True
            if self._closed or self._clock() < self._moment():
                return False
            self._reached = True
            agent = self._agent
            ended = agent is not None and agent.exited.is_set()
            self._lost = not (self._settling or ended)
            self._settling = not self._lost  # an agent that ended on its own: outcome known
            lost = self._lost
            if lost:
                self._lost_cause = self._cause()
        if lost:
            self._on_lost(self.cause())
        if agent is not None:
            agent.stop(grace_seconds=self.grace_seconds)  # its tree, or what it left behind
        return True

    def cause(self) -> str:
        """Why the lease could not be kept: the store's last error, or the call it did not
        answer (as it was when the guard fired, once it has)."""
        return self._lost_cause or self._cause()

    def _cause(self) -> str:
        if self.trouble is not None:
            return self.trouble
        if self.waiting_on is not None:
            return f"{self.waiting_on}: the store did not answer before the lease's end"
        return "the lease was not renewed in time"

    # -- the thread -------------------------------------------------------------------------

    def start(self) -> None:
        threading.Thread(target=self._watch, name=f"lease-{self._claimed.id}", daemon=True).start()

    def _watch(self) -> None:
        while True:
            with self._cond:
                if self._closed or self._reached:
                    return
                left = self._moment() - self._clock()
                if left > 0:
                    self._cond.wait(left)
                    continue
            self.check()
            return
