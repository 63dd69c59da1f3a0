"""The store as one claim's run sees it: patient while the claim's lease lasts.

A call that fails because the store cannot be reached is retried, with backoff, for as long as
the claim's lease lasts; then LeaseGone. A supervised agent is therefore stopped only when its
claim is really lost: a renewal that says so once the store is back, or a lease that ran out
while the store was unreachable. The claim loop uses the store itself: there, a failure is
reported at once and the next pass tries again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import TypeVar

from wrighty.domain.claims import LeaseTerms, RenewResult
from wrighty.domain.model import Change, Item, NewRun, Run, Session
from wrighty.domain.usage import LedgerEntry, Usage
from wrighty.errors import StoreError
from wrighty.store.port import Store

T = TypeVar("T")

RETRY_FIRST_SECONDS = 0.25
RETRY_MAX_SECONDS = 5.0


class LeaseGone(Exception):
    """The store stayed unreachable until the claim's lease ran out: the claim is lost. Its
    message is the store's last error."""


class PatientStore:
    """The store calls one claim's run makes, each retried while the claim's lease lasts."""

    def __init__(
        self,
        store: Store,
        *,
        lease_until: datetime | None,
        now: Callable[[], datetime],
        emit: Callable[..., None],
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._store = store
        self._lease_until = lease_until
        self._now = now
        self._emit = emit
        self._sleep = sleep

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

    def renew(self, claimed: Item, *, now: datetime, terms: LeaseTerms) -> RenewResult:
        """Renew the claim; from then on, patience lasts as long as the lease it got."""
        result = self._patiently("renew", lambda: self._store.renew(claimed, now=now, terms=terms))
        if result.lease_expires_at is not None:
            self._lease_until = result.lease_expires_at
        return result

    def write_transition(self, change: Change) -> bool:
        return self._patiently("write_transition", lambda: self._store.write_transition(change))

    def _patiently(self, operation: str, call: Callable[[], T]) -> T:
        delay = RETRY_FIRST_SECONDS
        while True:
            try:
                return call()
            except StoreError as error:
                if self._lease_until is None:
                    raise
                if self._now() >= self._lease_until:
                    raise LeaseGone(str(error)) from None
                self._emit(
                    "store-unreachable",
                    operation=operation,
                    error=type(error).__name__,
                    cause=str(error),  # a StoreError's message never holds a secret
                    retry_in_seconds=delay,
                )
                self._sleep(delay)
                delay = min(delay * 2, RETRY_MAX_SECONDS)
