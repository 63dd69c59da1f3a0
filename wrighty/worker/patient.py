"""The store as one claim's run sees it: patient while the claim's lease lasts.

A call that fails because the store cannot be reached is retried, with backoff, until the
claim's lease guard's moment (lease.py: the lease's end by the worker's monotonic clock, less
the guard's margin); then LeaseGone. Each call carries a deadline (store/deadlines.py): half of
what is left until that moment, at least CALL_FLOOR_SECONDS, never past it; so no call outlasts
the lease, and a store that does not answer is said while there is time to try again. The
guard, a thread of its own, stops the agent at that moment whether or not a call has returned;
a call that returns after it fired changes nothing: the claim is given up.

Once the run's outcome is known (its agent ended on its own, or never started), the calls that
record it go on past that moment, for as long as the claim lets them land, until the worker is
asked to stop (``settle-pending`` says so once). A settlement whose commit was ambiguous (the
call failed, but its write had landed, so the retry is refused) is recognised by reading the
item back.

The claim loop uses the store itself: there, a failure is reported at once and the next pass
tries again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import TypeVar

from wrighty.domain.check_evidence import BaseCheck, CheckRecord
from wrighty.domain.circuits import Circuit
from wrighty.domain.claims import LeaseTerms, RenewOutcome, RenewResult
from wrighty.domain.model import Change, Item, NewRun, Run, Session
from wrighty.domain.usage import LedgerEntry, Usage
from wrighty.domain.worker_events import Emit, WorkerEvent
from wrighty.errors import StoreError
from wrighty.store.deadlines import call_deadline
from wrighty.store.port import Store
from wrighty.worker.lease import Clock, LeaseGuard, read_clocks
from wrighty.worker.renewals import Renewals

T = TypeVar("T")

RETRY_FIRST_SECONDS = 0.25
RETRY_MAX_SECONDS = 5.0
# A call under a claim may take half of what is left until the guard's moment, at least this
# (never past the moment): a store that does not answer is said, and tried again, in time.
CALL_FLOOR_SECONDS = 1.0


class LeaseGone(Exception):
    """The claim is given up: its lease guard fired before the run had an outcome of its own,
    or the run's known outcome could not be recorded before the worker was asked to stop
    (``pending``). Its message is the cause: the store's last error, if it gave one."""

    def __init__(self, cause: str, *, pending: bool = False) -> None:
        super().__init__(cause)
        self.pending = pending


def same_settlement(current: Item, wanted: Item) -> bool:
    """Whether ``current`` (the item as read back) is exactly the settlement ``wanted``: the
    same generation, state, reason and counters, and no claim."""
    return (
        current.generation == wanted.generation
        and current.state is wanted.state
        and current.claimed_by is None
        and current.reason_code == wanted.reason_code
        and current.reason == wanted.reason
        and current.crash_retries == wanted.crash_retries
        and current.usage_retries == wanted.usage_retries
        and current.fix_turns == wanted.fix_turns
        and current.requeues == wanted.requeues
    )


class PatientStore:
    """The store calls one claim's run makes, each retried while the claim's lease lasts."""

    def __init__(
        self,
        store: Store,
        *,
        guard: LeaseGuard,
        now: Callable[[], datetime],
        emit: Emit,
        stop_requested: threading.Event,
        sleep: Callable[[float], None] = time.sleep,
        clock: Clock = time.monotonic,
        renewals: Renewals | None = None,
    ) -> None:
        self._store = store
        # The worker's gathered renewals (worker/renewals.py), else this claim's alone.
        self._renewals: Renewals | Store = renewals or store
        self._guard = guard
        self._now = now
        self._emit = emit
        self._stop_requested = stop_requested
        self._sleep = sleep
        self._clock = clock
        self._pending_told = False  # settle-pending: said once

    def get_item(self, item_id: int) -> Item | None:
        return self._patiently("get_item", lambda: self._store.get_item(item_id))

    def get_session(self, item_id: int) -> Session | None:
        return self._patiently("get_session", lambda: self._store.get_session(item_id))

    def get_run(self, run_id: str) -> Run | None:
        return self._patiently("get_run", lambda: self._store.get_run(run_id))

    def list_runs(self, item_id: int) -> list[Run]:
        return self._patiently("list_runs", lambda: self._store.list_runs(item_id))

    def start_run(self, claimed: Item, run: NewRun, *, session: Session) -> Run | None:
        return self._patiently(
            "start_run", lambda: self._store.start_run(claimed, run, session=session)
        )

    def record_process(
        self, claimed: Item, run_id: str, *, pid: int, process_started_at: float
    ) -> bool:
        return self._patiently(
            "record_process",
            lambda: self._store.record_process(
                claimed, run_id, pid=pid, process_started_at=process_started_at
            ),
        )

    def record_session(self, claimed: Item, session: Session, *, at: datetime, run_id: str) -> bool:
        return self._patiently(
            "record_session",
            lambda: self._store.record_session(claimed, session, at=at, run_id=run_id),
        )

    def record_usage(self, claimed: Item, run_id: str, usage: Usage) -> bool:
        return self._patiently(
            "record_usage", lambda: self._store.record_usage(claimed, run_id, usage)
        )

    def list_ledger(self, *, default_agent: str, item_id: int) -> list[LedgerEntry]:
        return self._patiently(
            "list_ledger",
            lambda: self._store.list_ledger(default_agent=default_agent, item_id=item_id),
        )

    def agent_spend(self, agent: str, *, since: datetime) -> Usage:
        return self._patiently("agent_spend", lambda: self._store.agent_spend(agent, since=since))

    def get_circuit(self, name: str) -> Circuit:
        return self._patiently("get_circuit", lambda: self._store.get_circuit(name))

    def base_check(self, base_commit: str, name: str, key: str) -> BaseCheck | None:
        return self._patiently("base_check", lambda: self._store.base_check(base_commit, name, key))

    def record_base_check(self, base: BaseCheck) -> None:
        self._patiently("record_base_check", lambda: self._store.record_base_check(base))

    def list_checks(self, item_id: int) -> list[CheckRecord]:
        return self._patiently("list_checks", lambda: self._store.list_checks(item_id))

    def record_check(self, claimed: Item, record: CheckRecord) -> bool:
        """Record a check's evidence under the claim. As for a settlement, a try that failed
        may have landed all the same: a retry refused after such a failure reads the item's
        evidence back, and counts as written if this record is there."""
        failed: list[StoreError] = []

        def attempt() -> bool:
            try:
                return self._store.record_check(claimed, record)
            except StoreError as error:
                failed.append(error)
                raise

        landed = self._patiently("record_check", attempt)
        if landed or not failed:
            return landed
        return any(
            (stored.verification_id, stored.position) == (record.verification_id, record.position)
            for stored in self.list_checks(claimed.id)
        )

    def renew(self, claimed: Item, *, terms: LeaseTerms) -> RenewResult:
        """Renew the claim; the guard's moment moves with the lease it got, measured from a
        reading of the clocks taken just before each try."""

        def attempt() -> RenewResult:
            reading = read_clocks(self._now, self._clock)
            result = self._renewals.renew(claimed, now=reading.now, terms=terms)
            if result.outcome is not RenewOutcome.LOST:
                self._guard.extend(reading, result.lease_expires_at)
            return result

        return self._patiently("renew", attempt)

    def write_transition(self, change: Change) -> bool:
        """Write a settlement under its claim. A try that failed may have landed all the same
        (the answer to its commit was lost): a retry refused after such a failure reads the
        item back, and the settlement counts as written if the item holds exactly it."""
        failed: list[StoreError] = []

        def attempt() -> bool:
            try:
                return self._store.write_transition(change)
            except StoreError as error:
                failed.append(error)
                raise

        landed = self._patiently("write_transition", attempt)
        if landed or not failed:
            return landed
        current = self.get_item(change.after.id)
        return current is not None and same_settlement(current, change.after)

    # -- the retries ------------------------------------------------------------------------

    def _patiently(self, operation: str, call: Callable[[], T]) -> T:
        guard = self._guard
        delay = RETRY_FIRST_SECONDS
        while True:
            self._refuse_if_lost()
            moment = guard.stop_at
            guard.waiting_on = operation
            try:
                now = self._clock()
                if now < moment:
                    left = moment - now
                    with call_deadline(now + max(left / 2, min(left, CALL_FLOOR_SECONDS))):
                        result = call()
                else:  # only a known outcome is still being recorded: the default deadline
                    result = call()
            except StoreError as error:
                guard.trouble = str(error)  # a StoreError's message never holds a secret
                guard.waiting_on = None
                guard.check()  # fires now if the moment has come meanwhile
                self._refuse_if_lost()
                delay = self._wait_to_retry(operation, error, delay)
                continue
            guard.waiting_on = None
            guard.trouble = None
            self._refuse_if_lost()  # the guard fired while the call was under way
            return result

    def _refuse_if_lost(self) -> None:
        guard = self._guard
        if guard.lost:
            raise LeaseGone(guard.cause())

    def _wait_to_retry(self, operation: str, error: StoreError, delay: float) -> float:
        """Say that the store failed, and wait before the next try: while the lease lasts, at
        most half of what is left of it (at least 1/4 s, never past the guard's moment); past
        the moment (a known outcome still to be recorded), until the worker is asked to stop.
        The next delay."""
        left = self._guard.stop_at - self._clock()
        if left <= 0:  # settling: the guard did not give the claim up
            if not self._pending_told:
                self._pending_told = True
                self._emit(
                    WorkerEvent.SETTLE_PENDING, item_id=self._guard.item_id, operation=operation,
                    error=type(error).__name__, cause=str(error),
                )  # fmt: skip
            if self._stop_requested.is_set():
                raise LeaseGone(str(error), pending=True)
        self._emit(
            WorkerEvent.STORE_UNREACHABLE,
            operation=operation,
            error=type(error).__name__,
            cause=str(error),
            retry_in_seconds=delay,
        )
        if left > 0:  # tries come closer as the moment nears, so one lands just before it
            self._sleep(min(delay, max(left / 2, min(RETRY_FIRST_SECONDS, left))))
        else:
            self._stop_requested.wait(delay)
        return min(delay * 2, RETRY_MAX_SECONDS)
