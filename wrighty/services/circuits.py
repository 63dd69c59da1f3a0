"""The provider circuits (wrighty/domain/circuits.py) as `wrighty providers` and
`wrighty status` show them, and the operator's reset.

A reset reads the circuit, closes it (`closed`) and writes it with the store's compare-and-set
on its version; if a worker moved the circuit in between, it reads and decides again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from wrighty.domain.circuits import Circuit, CircuitState, closed
from wrighty.domain.text import printable_line
from wrighty.errors import ConflictError, NotFoundError, UnreadableError
from wrighty.store.port import Rows, Store

_CAS_ATTEMPTS = 5


@dataclass(frozen=True)
class CircuitView:
    """A circuit as the store holds it, with its state at the moment it was read."""

    circuit: Circuit
    state: CircuitState
    probe_held: bool  # a live probe holds the half-open circuit

    @property
    def name(self) -> str:
        return self.circuit.name

    @property
    def shut(self) -> bool:
        """Open or half-open: workers do not launch its agents freely."""
        return self.state is not CircuitState.CLOSED


def circuit_view(circuit: Circuit, now: datetime) -> CircuitView:
    return CircuitView(circuit, circuit.state(now), circuit.probe_held(now))


def holding(store: Store, name: str, now: datetime) -> CircuitView | None:
    """The circuit ``name`` when it holds its agents back (open or half-open); None when it is
    closed or was never opened."""
    try:
        view = circuit_view(store.get_circuit(name), now)
    except UnreadableError:
        return None  # `wrighty providers` says what does not read, and the reset that fixes it
    return view if view.shut else None


def circuit_views(store: Store, now: datetime) -> Rows[CircuitView]:
    """Every circuit the store holds, by name; ``unreadable``: those whose row does not read
    (a reset puts each right)."""
    found = store.list_circuits()
    circuits = sorted(found, key=lambda circuit: circuit.name)
    return Rows((circuit_view(circuit, now) for circuit in circuits), found.unreadable)


@dataclass(frozen=True)
class Reset:
    """What `wrighty providers reset` did: ``before`` as it was read, ``after`` as it is."""

    before: CircuitView
    after: CircuitView
    # The values of its row that did not read (each replaced by the reset's own).
    repaired: tuple[UnreadableError, ...] = ()

    @property
    def changed(self) -> bool:
        return self.before.state is not CircuitState.CLOSED or bool(self.repaired)


def reset_circuit(store: Store, name: str, *, now: datetime) -> Reset:
    """Close the circuit ``name`` by hand; a closed one is left as it is. A row with values
    that do not read is written anew, closed (the way out of a poisoned circuit)."""
    for _ in range(_CAS_ATTEMPTS):
        found = store.salvage_circuit(name)
        if found is None:  # no row: no worker ever wrote this circuit
            raise NotFoundError(
                f"no provider circuit '{printable_line(name)}'; `wrighty providers` lists the "
                "circuits there are"
            )
        before = found.value
        seen = circuit_view(before, now)
        if seen.state is CircuitState.CLOSED and not found.problems:
            return Reset(seen, seen)
        after = closed(before)
        if store.write_circuit(before, after, at=now):
            return Reset(seen, circuit_view(after, now), found.problems)
    raise ConflictError(
        f"provider circuit '{name}' kept changing while this command ran; try again"
    )
