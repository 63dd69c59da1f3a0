"""The provider circuit (worker.usageFailure): after a provider refused a run, no agent is
launched on it until its reset; then one run, the probe, goes first (pure).

One circuit per agent of an installation, or per `agents.<name>.account` across a fleet. It is
closed (agents run), open (none is launched until ``until``) or half-open (``until`` has passed:
one worker at a time takes the probe, claims one item and runs it; the probe is live while
that item runs under its claim). The probe's run answered: closed. Refused again: open until
its retry is due. Every change is a compare-and-set on the circuit's ``version`` in the store,
so two workers cannot both take the probe and a stale writer changes nothing.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum


class CircuitState(StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half-open"


@dataclass(frozen=True)
class Circuit:
    """A provider circuit as the store holds it. A closed circuit has no ``until``."""

    name: str
    version: int = 0  # 0: no row yet
    opened_at: datetime | None = None
    until: datetime | None = None  # open until then; half-open after
    reason: str | None = None  # the refusal that opened it, for `wrighty providers`
    failures: int = 0  # refusals in a row: the next opening's delay counts them
    probe_by: str | None = None  # the worker that holds the probe, in half-open
    probe_item: int | None = None  # the item it probes with, once claimed
    probe_expires_at: datetime | None = None  # the probe's lease: then another may take it
    # Read, not written: whether the probe's item is running under the holder's claim.
    probe_running: bool = False

    def state(self, now: datetime) -> CircuitState:
        if self.until is None:
            return CircuitState.CLOSED
        return CircuitState.OPEN if now < self.until else CircuitState.HALF_OPEN

    def probe_held(self, now: datetime) -> bool:
        """Whether a live probe holds the half-open circuit: its holder is about to claim
        (the probe's lease lasts that long), or its item is still running under the holder's
        claim."""
        if self.probe_by is None:
            return False
        if self.probe_item is not None:
            return self.probe_running
        return self.probe_expires_at is not None and now < self.probe_expires_at


def circuit_name(agent: str, *, account: str | None, installation_id: str) -> str:
    """Installations that name the same account share its circuit; otherwise each agent of
    each installation has its own."""
    return f"account:{account}" if account else f"agent:{agent}@{installation_id}"


def take_probe(
    circuit: Circuit,
    *,
    now: datetime,
    worker_id: str,
    lease_until: datetime,
) -> Circuit | None:
    """The half-open circuit with the probe given to ``worker_id`` until ``lease_until`` (the
    time it has to claim an item); None when the circuit is not half-open or a live probe
    holds it, this worker's own included: one probe run at a time."""
    if circuit.state(now) is not CircuitState.HALF_OPEN:
        return None
    if circuit.probe_held(now):
        return None
    return dataclasses.replace(
        circuit, probe_by=worker_id, probe_item=None, probe_expires_at=lease_until
    )


def probing(circuit: Circuit, *, item_id: int) -> Circuit:
    """The probe's holder claimed ``item_id`` to probe with."""
    return dataclasses.replace(circuit, probe_item=item_id)


def give_back_probe(circuit: Circuit) -> Circuit:
    """The probe's holder found nothing to run, or its run ended neither way: the circuit
    stays half-open for the next probe."""
    return dataclasses.replace(circuit, probe_by=None, probe_item=None, probe_expires_at=None)


def opened(
    circuit: Circuit,
    *,
    at: datetime,
    until: datetime,
    reason: str,
    item_id: int | None = None,
) -> Circuit:
    """Item ``item_id``'s run was refused: no launch until ``until`` (never earlier than a
    later opening already says). A probe whose item still runs keeps its hold (a run that
    began before the probe was refused late): one probe at a time, always."""
    later = max(until, circuit.until) if circuit.until is not None else until
    probe_goes_on = circuit.probe_item is not None and circuit.probe_item != item_id
    return dataclasses.replace(
        closed(circuit) if not probe_goes_on else circuit,
        opened_at=circuit.opened_at if circuit.until is not None else at,
        until=later,
        reason=reason,
        failures=circuit.failures + 1,
    )


def closed(circuit: Circuit) -> Circuit:
    """A run the provider answered: the queue flows again."""
    return Circuit(name=circuit.name, version=circuit.version)
