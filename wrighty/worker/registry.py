"""A worker's own row in the registry: written at start, on a throttled heartbeat while it
runs (idle included), and removed at a clean stop. Every write is best effort: a failure never
reaches the agents. It is logged once per cause (a StoreError's message, which names no secret;
any other exception's class), saying when the write is tried again, and the first write that
lands again says so.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from datetime import datetime, timedelta

from wrighty.domain.clocks import CLOCK_BOUND_SECONDS, describe_offset, skewed
from wrighty.domain.health import WorkerRow, WorkerState
from wrighty.domain.worker_events import Emit, WorkerEvent
from wrighty.errors import StoreError
from wrighty.services.clock import StoreClock
from wrighty.store.port import Store

log = logging.getLogger(__name__)

CHANGE_SPACING_SECONDS = 1.0


class Presence:
    """The worker's row in the registry, kept fresh while it runs."""

    def __init__(
        self,
        store: Store,
        identity: WorkerRow,
        *,
        interval_seconds: float,
        retention_seconds: float,
        now: Callable[[], datetime],
        monotonic: Callable[[], float] = time.monotonic,
        clock: StoreClock | None = None,
        emit: Emit | None = None,
    ) -> None:
        """``clock``: measured again at each heartbeat the interval makes due (docs/fleet.md),
        its offset written in the row; ``emit`` tells when it goes beyond the bound, and when it
        is back within."""
        self._store = store
        self._row: WorkerRow | None = identity  # None once stopped: the identity is forgotten
        self._interval = interval_seconds
        self._retention = timedelta(seconds=retention_seconds)
        self._now = now
        self._monotonic = monotonic
        self._last_attempt: float | None = None
        self._failing: dict[str, str] = {}  # operation -> the cause last logged
        self._clock = clock
        self._emit = emit
        self._told_skewed = False
        self._waits: dict[str, str] = {}  # topic -> what the worker waits for (``waiting``)

    def beat(
        self,
        state: WorkerState,
        items: tuple[int, ...],
        *,
        force: bool = False,
        changed: bool = False,
    ) -> None:
        """Write the worker's state, at most once per interval (failed attempts count); a
        ``changed`` state (other items) at most once a second, so that a stream of short runs
        does not add two writes to each."""
        if self._row is None:
            return
        moment = self._monotonic()
        spacing = min(self._interval, CHANGE_SPACING_SECONDS) if changed else self._interval
        recent = self._last_attempt is not None and moment - self._last_attempt < spacing
        if recent and not force:
            return
        due = self._last_attempt is None or moment - self._last_attempt >= self._interval
        self._last_attempt = moment
        if due or force:
            self._measure_clock()
        now = self._now()
        row = dataclasses.replace(
            self._row,
            state=state,
            items=items,
            last_heartbeat_at=now,
            clock_offset_seconds=None if self._clock is None else self._clock.offset_seconds,
        )
        if self._attempt("heartbeat", lambda: self._store.upsert_worker(row)):
            self._attempt(
                "prune", lambda: self._store.prune_workers(older_than=now - self._retention)
            )

    def _measure_clock(self) -> None:
        """Measure the clock's offset from the store's again; say when it goes beyond the bound
        (once) and when it is back within (once)."""
        clock = self._clock
        if clock is None or not self._attempt("clock reading", clock.measure):
            return
        offset = clock.offset_seconds
        off = skewed(offset)
        if off == self._told_skewed or offset is None:
            return
        self._told_skewed = off
        if self._emit is None:
            return
        if off:
            self._emit(
                WorkerEvent.CLOCK_SKEWED,
                offset_seconds=round(offset, 3),
                bound_seconds=CLOCK_BOUND_SECONDS,
                message=f"this machine's clock is {describe_offset(offset)}, more than "
                f"{CLOCK_BOUND_SECONDS:g} s; the worker uses the store's time, but fix the "
                "machine's clock (NTP)",
            )
        else:
            self._emit(WorkerEvent.CLOCK_IN_STEP, offset_seconds=round(offset, 3),
                       bound_seconds=CLOCK_BOUND_SECONDS)  # fmt: skip

    def runs(self, agent: str) -> None:
        """Name the agent this worker runs, for its next write (`status` says which agents'
        items no live worker runs)."""
        if self._row is not None:
            self._row = dataclasses.replace(self._row, agent=agent)

    def held(self, reason: str | None) -> None:
        """Say why the worker claims nothing (None: it claims again), at the next beat (not
        throttled)."""
        if self._row is not None:
            self._row = dataclasses.replace(self._row, held_reason=reason)
            self._last_attempt = None

    def waiting(self, topic: str, said: str | None) -> None:
        """Say what the worker waits for about ``topic`` (None: nothing any more), at the next
        beat (not throttled): the row's ``waiting_for`` holds every topic's, in order."""
        if said is None:
            if topic not in self._waits:
                return  # (the claim loop says so at every pass: nothing to do)
            self._waits.pop(topic)
        else:
            self._waits[topic] = said
        row = self._row
        waiting_for = "; ".join(self._waits.values()) or None
        if row is not None and row.waiting_for != waiting_for:
            self._row = dataclasses.replace(row, waiting_for=waiting_for)
            self._last_attempt = None

    def stop(self) -> None:
        """Remove the row; the identity is forgotten even if that fails."""
        row, self._row = self._row, None
        if row is not None:
            self._attempt("remove", lambda: self._store.remove_worker(row.worker_id))

    def _attempt(self, operation: str, write: Callable[[], object]) -> bool:
        try:
            write()
        except Exception as error:  # best effort: supervision goes on whatever the store does
            cause = str(error) if isinstance(error, StoreError) else type(error).__name__
            if self._failing.get(operation) != cause:
                log.warning(
                    "worker registry: %s failed (%s); %s", operation, cause, self._when(operation)
                )
            self._failing[operation] = cause
            return False
        if self._failing.pop(operation, None) is not None:
            log.warning("worker registry: %s written again", operation)
        return True

    def _when(self, operation: str) -> str:
        """When a failed write is tried again."""
        if operation == "remove":
            return (
                "the row stays until its heartbeat is "
                f"{self._retention.total_seconds():g} s old and another worker prunes it"
            )
        return f"tried again at the next heartbeat (every {self._interval:g} s)"
