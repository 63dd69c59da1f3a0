"""The worker's side of its machine's health: how many runs in a row its machine could not
start, when it may claim again, and whether it is held (wrighty/domain/machine.py holds the
rules; docs/worker.md#when-the-workers-machine-fails says what a user sees).

Thread-safe: each claim's run reports from its own thread, and the claim loop asks before it
claims. The registry row carries the hold's reason (`wrighty workers`, `wrighty status`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from wrighty.domain.machine import (
    BACKOFF,
    Backoff,
    MachineHealth,
    machine_failed,
    machine_started,
)
from wrighty.domain.worker_events import Emit, WorkerEvent


class MachineWatch:
    """Counts the worker's machine failures in a row, and says when it holds and when it
    claims again."""

    def __init__(
        self,
        emit: Emit,
        on_hold: Callable[[str | None], None],
        *,
        policy: Backoff = BACKOFF,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._emit = emit
        self._on_hold = on_hold
        self._policy = policy
        self._monotonic = monotonic
        self._health = MachineHealth()
        self._lock = threading.Lock()

    def failed(self, item_id: int, cause: str) -> None:
        """The machine could not start ``item_id``'s run (the item is back where it was)."""
        with self._lock:
            was_held = self._health.held
            self._health = machine_failed(
                self._health, cause, now=self._monotonic(), policy=self._policy
            )
            health = self._health
        fields: dict[str, Any] = {"item_id": item_id, "cause": cause, "failures": health.failures}
        pause = self._policy.delay(health.failures)
        self._emit(WorkerEvent.MACHINE_FAILURE, **fields, retry_in_seconds=pause)
        if health.held:
            reason = health.held_reason(self._policy)
            self._on_hold(reason)
            if not was_held:
                self._emit(
                    WorkerEvent.WORKER_HELD, cause=cause, failures=health.failures, reason=reason
                )

    def started(self) -> None:
        """An agent started: the count starts over, and a held worker claims again."""
        with self._lock:
            before = self._health
            if before.failures == 0:
                return
            self._health = machine_started(before)
        if before.held:
            self._on_hold(None)
            self._emit(WorkerEvent.WORKER_UNHELD, failures=before.failures)

    def pause_seconds(self) -> float:
        """How long the claim loop waits before it claims (0: it may claim now)."""
        with self._lock:
            return self._health.pause_seconds(self._monotonic())

    @property
    def health(self) -> MachineHealth:
        with self._lock:
            return self._health
