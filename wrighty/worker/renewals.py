"""A worker's lease renewals, gathered: one transaction per heartbeat, whatever its concurrency.

Each claim's run renews its own lease, fenced by its own generation, and hears its own answer
(renewed, out of budget, lost). Its run waits for the heartbeat of a grid the worker's claims
share (``until_beat``), so they ask at about the same moment; the first to ask waits for the
others (every claim the worker holds, or a quarter of a heartbeat, at most ``GATHER_SECONDS``)
and sends them all as one ``renew_many``. A renewal asked while one is on its way goes with the
next. So a worker running eight agents renews them in one statement, in one transaction,
instead of eight (docs/scale.md).

A store error reaches every run of the batch, and each retries as its lease allows
(worker/patient.py). Any other failure is one claim's: the batch is then asked again a claim at a
time, and only the claim whose renewal fails hears it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from datetime import datetime

from wrighty.domain.claims import LeaseTerms, Renewal, RenewResult
from wrighty.domain.model import Item
from wrighty.errors import StoreError
from wrighty.store.deadlines import call_deadline, current_deadline
from wrighty.store.port import Store
from wrighty.worker.lease import Clock

GATHER_SECONDS = 1.0


@dataclass
class _Asked:
    renewal: Renewal
    at: float  # when it was asked, by the worker's monotonic clock
    deadline: float | None  # its run's deadline for the call (store/deadlines.py)
    result: RenewResult | None = None
    error: BaseException | None = None
    done: bool = False


class Renewals:
    """The renewals of one worker's claims, sent together."""

    def __init__(self, store: Store, *, heartbeat_seconds: float, clock: Clock = time.monotonic):
        self._store = store
        self._gather = min(GATHER_SECONDS, heartbeat_seconds / 4)
        self._clock = clock
        self._changed = threading.Condition()
        self._members = 0  # the claims the worker holds
        self._waiting: list[_Asked] = []
        self._sending = False

    @contextmanager
    def member(self) -> Iterator[None]:
        """A claim the worker holds, for as long as the block lasts: a batch waits for it."""
        with self._changed:
            self._members += 1
        try:
            yield
        finally:
            with self._changed:
                self._members -= 1
                self._changed.notify_all()

    def renew(self, claimed: Item, *, now: datetime, terms: LeaseTerms) -> RenewResult:
        """``claimed``'s renewal, sent with those of the worker's other claims."""
        asked = _Asked(Renewal(claimed, now, terms), self._clock(), current_deadline())
        with self._changed:
            self._waiting.append(asked)
            self._changed.notify_all()
            batch = self._await_turn(asked)
        if batch:
            self._send(batch)
        if asked.error is not None:
            raise asked.error
        assert asked.result is not None
        return asked.result

    def _await_turn(self, asked: _Asked) -> list[_Asked]:
        """Wait (holding the condition) until ``asked`` is answered, or until it is its turn to
        send the renewals waiting: then the batch it sends."""
        while not asked.done:
            if self._sending or asked not in self._waiting:
                self._changed.wait()
                continue
            left = self._waiting[0].at + self._gather - self._clock()
            if len(self._waiting) >= self._members or left <= 0:
                batch, self._waiting, self._sending = self._waiting, [], True
                return batch
            self._changed.wait(left)
        return []

    def _send(self, batch: list[_Asked]) -> None:
        """Send ``batch`` by the nearest of its runs' deadlines: none waits past its own."""
        deadlines = [asked.deadline for asked in batch if asked.deadline is not None]
        try:
            with call_deadline(min(deadlines)) if deadlines else nullcontext():
                if len(batch) == 1:
                    self._answer_one(batch[0])
                else:
                    self._answer(batch)
        finally:
            with self._changed:
                self._sending = False
                for asked in batch:
                    if asked.result is None and asked.error is None:  # the sender was stopped
                        asked.error = StoreError("the renewal was not sent; it is asked again")
                    asked.done = True
                self._changed.notify_all()

    def _answer(self, batch: list[_Asked]) -> None:
        try:
            results = self._store.renew_many([asked.renewal for asked in batch])
        except StoreError as error:
            for asked in batch:
                asked.error = error
            return
        except Exception:  # one claim's trouble: each alone hears only its own
            for asked in batch:
                self._answer_one(asked)
            return
        for asked, result in zip(batch, results, strict=True):
            asked.result = result

    def _answer_one(self, asked: _Asked) -> None:
        renewal = asked.renewal
        try:
            asked.result = self._store.renew(renewal.claimed, now=renewal.now, terms=renewal.terms)
        except Exception as error:
            asked.error = error
