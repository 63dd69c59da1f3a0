"""A worker's side of its agent's provider circuit (wrighty/domain/circuits.py).

Before each claim the loop asks `admit`: a closed circuit lets it claim; an open one does not
(the items stay queued); a half-open one lets it claim only once it holds the probe, which a
compare-and-set in the store gives to one worker at a time. After each settled run, `settled`
opens the circuit on a refusal (until the refused item's retry is due), closes it when the
provider answered a run that started after it opened, and gives a probe back otherwise.

Everything here is best effort: the store being away, or another worker moving the circuit
first, never stops a run or a settlement. A refusal that could not be written opens the circuit
at the next one.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from wrighty.domain import suggestions
from wrighty.domain.circuits import (
    Circuit,
    CircuitState,
    closed,
    give_back_probe,
    opened,
    probing,
    take_probe,
)
from wrighty.domain.claims import Claim
from wrighty.domain.model import Change
from wrighty.domain.notices import Source, circuit_notice
from wrighty.domain.outcomes import USAGE_CLASSES, OutcomeClass
from wrighty.domain.retry import ResetHint, UsagePolicy
from wrighty.domain.states import ItemState
from wrighty.domain.times import rfc3339
from wrighty.domain.worker_events import Emit, WorkerEvent
from wrighty.errors import StoreError, UnreadableError
from wrighty.store.port import Store

# How often a move of the circuit is tried again when another worker moved it first.
_CAS_ATTEMPTS = 5
# How long a worker that took the probe has to claim its item.
PROBE_CLAIM_SECONDS = 60.0


class CircuitGate:
    def __init__(
        self,
        store: Store,
        name: str,
        *,
        worker_id: str,
        policy: UsagePolicy,
        now: Callable[[], datetime],
        emit: Emit,
        notify: Source | None = None,
    ) -> None:
        self.name = name
        self._notify = notify  # whether an opening is told (the outbox), and by whom
        self._store = store
        self._worker_id = worker_id
        self._policy = policy
        self._now = now
        self._emit = emit
        self._probe: Circuit | None = None  # the circuit as this worker's probe wrote it
        self._told: tuple[CircuitState, datetime | None] | None = None

    # -- the claim loop ---------------------------------------------------------------------

    def admit(self) -> bool:
        """Whether the loop may claim now (in half-open, having taken the probe)."""
        try:
            circuit = self._store.get_circuit(self.name)
        except UnreadableError as error:
            self._unreadable(error)
            return False  # held until a person resets it: whether it is open cannot be read
        except StoreError as error:
            self._unreachable("get_circuit", error)
            return True  # the claim itself will find the store away
        now = self._now()
        state = circuit.state(now)
        if state is CircuitState.CLOSED:
            self._told = None
            return True
        if state is CircuitState.HALF_OPEN and self._take_probe(circuit, now):
            return True
        self._tell(circuit, state)
        return False

    def claimed(self, taken: Claim | None) -> bool:
        """After the claim that the probe allowed: record the probe's item, or give the probe
        back when there was nothing to claim. Whether ``taken`` is the probe run."""
        probe, self._probe = self._probe, None
        if probe is None:
            return False
        if taken is None:
            self._write(probe, give_back_probe(probe))
            return False
        if self._write(probe, probing(probe, item_id=taken.item.id)):
            self._emit(WorkerEvent.CIRCUIT_PROBE, circuit=self.name, item_id=taken.item.id)
        return True

    def _take_probe(self, circuit: Circuit, now: datetime) -> bool:
        lease = now + timedelta(seconds=PROBE_CLAIM_SECONDS)
        taken = take_probe(circuit, now=now, worker_id=self._worker_id, lease_until=lease)
        if taken is None or self._write(circuit, taken) is not True:
            return False
        self._probe = dataclasses.replace(taken, version=circuit.version + 1)  # as stored
        self._told = None
        self._emit(WorkerEvent.CIRCUIT_HALF_OPEN, circuit=self.name, probe_by=self._worker_id)
        return True

    def _tell(self, circuit: Circuit, state: CircuitState) -> None:
        """Say once per opening why this worker claims nothing."""
        if self._told == (state, circuit.until):
            return
        self._told = (state, circuit.until)
        self._emit(
            WorkerEvent.CIRCUIT_WAIT,
            circuit=self.name,
            state=state.value,
            until=rfc3339(circuit.until),
            probe_item=circuit.probe_item,
        )

    # -- after a run (in its claim's thread) ------------------------------------------------

    def settled(
        self,
        change: Change | None,
        outcome: OutcomeClass,
        *,
        run_started_at: datetime,
        hint: ResetHint | None,
    ) -> None:
        """Move the circuit after a run, before its item is settled by ``change`` (None when
        the run recorded none): a probe's item stays running, and holds the probe, until the
        circuit says what its run found."""
        for _ in range(_CAS_ATTEMPTS):
            try:
                circuit = self._store.get_circuit(self.name)
            except UnreadableError as error:
                self._unreadable(error)
                return  # the run's item settles as it would; the circuit waits for a reset
            except StoreError as error:
                self._unreachable("get_circuit", error)
                return
            after = self._after_run(circuit, change, outcome, run_started_at, hint)
            if after is None or self._write(circuit, after, report=True) is not False:
                return

    def _after_run(
        self,
        circuit: Circuit,
        change: Change | None,
        outcome: OutcomeClass,
        run_started_at: datetime,
        hint: ResetHint | None,
    ) -> Circuit | None:
        now = self._now()
        item_id = change.before.id if change is not None else None
        if outcome in USAGE_CLASSES:
            until = self._until(circuit, change, now, hint)
            reason = f"{outcome} (item {item_id})"
            return opened(circuit, at=now, until=until, reason=reason, item_id=item_id)
        if circuit.state(now) is CircuitState.CLOSED:
            return None
        answered = outcome is OutcomeClass.SUCCEEDED
        if answered and circuit.opened_at is not None and run_started_at >= circuit.opened_at:
            return closed(circuit)
        mine = circuit.probe_by == self._worker_id and circuit.probe_item == item_id
        return give_back_probe(circuit) if mine and item_id is not None else None

    def _until(
        self, circuit: Circuit, change: Change | None, now: datetime, hint: ResetHint | None
    ) -> datetime:
        """Open until the refused item's retry is due; when it has none (no retry policy
        left for it), until the policy would have retried."""
        after = change.after if change is not None else None
        if after is not None and after.state is ItemState.RETRY_SCHEDULED and after.not_before:
            return after.not_before
        key = int.from_bytes(hashlib.blake2b(self.name.encode(), digest_size=8).digest(), "big")
        return self._policy.due(circuit.failures + 1, ended_at=now, hint=hint, key=key).at

    # -- writing ----------------------------------------------------------------------------

    def _write(self, before: Circuit, after: Circuit, *, report: bool = False) -> bool | None:
        """Whether the move landed; None when the store could not be reached."""
        now = self._now()
        notice = None
        opens = before.state(now) is not CircuitState.OPEN and after.state(now) is CircuitState.OPEN
        if report and opens and self._notify is not None and after.until is not None:
            notice = circuit_notice(
                self.name, until=after.until, reason=after.reason, failures=after.failures,
                at=now, source=self._notify,
            )  # fmt: skip
        try:
            landed = self._store.write_circuit(before, after, at=now, notice=notice)
        except StoreError as error:
            self._unreachable("write_circuit", error)
            return None
        if landed and report:
            self._report(before, after)
        return landed

    def _report(self, before: Circuit, after: Circuit) -> None:
        now = self._now()
        state = after.state(now)
        if state is CircuitState.CLOSED and before.state(now) is not CircuitState.CLOSED:
            self._emit(WorkerEvent.CIRCUIT_CLOSED, circuit=self.name)
        elif state is CircuitState.OPEN and after.until != before.until:
            fields: dict[str, Any] = {"until": rfc3339(after.until), "reason": after.reason}
            self._emit(
                WorkerEvent.CIRCUIT_OPEN, circuit=self.name, failures=after.failures, **fields
            )

    def _unreadable(self, error: UnreadableError) -> None:
        """Say once (until it reads again) that the circuit's row does not read, and the way
        out: no claim is made meanwhile."""
        told: tuple[CircuitState, datetime | None] = (CircuitState.OPEN, None)
        if self._told == told:
            return
        self._told = told
        self._emit(
            WorkerEvent.CIRCUIT_UNREADABLE,
            circuit=self.name,
            cause=str(error),
            fix=suggestions.reset_circuit(self.name),
        )

    def _unreachable(self, operation: str, error: StoreError) -> None:
        self._emit(
            WorkerEvent.STORE_UNREACHABLE,
            operation=operation,
            error=type(error).__name__,
            cause=str(error),
        )
