"""The provider circuits (wrighty/domain/circuits.py) as `wrighty providers` and
`wrighty status` show them, and the operator's reset.

A reset reads the circuit, closes it (`closed`) and writes it with the store's compare-and-set
on its version; if a worker moved the circuit in between, it reads and decides again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from wrighty.domain.circuits import Circuit, CircuitState, closed
from wrighty.errors import ConflictError, NotFoundError
from wrighty.store.port import Store

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
    view = circuit_view(store.get_circuit(name), now)
    return view if view.shut else None


def circuit_views(store: Store, now: datetime) -> list[CircuitView]:
    """Every circuit the store holds, by name."""
    circuits = sorted(store.list_circuits(), key=lambda circuit: circuit.name)
    return [circuit_view(circuit, now) for circuit in circuits]


@dataclass(frozen=True)
class Reset:
    """What `wrighty providers reset` did: ``before`` as it was read, ``after`` as it is."""

    before: CircuitView
    after: CircuitView

    @property
    def changed(self) -> bool:
        return self.before.state is not CircuitState.CLOSED


def reset_circuit(store: Store, name: str, *, now: datetime) -> Reset:
    """Close the circuit ``name`` by hand; a closed one is left as it is."""
    for _ in range(_CAS_ATTEMPTS):
        before = store.get_circuit(name)
        if before.version == 0:  # no row: no worker ever wrote this circuit
            raise NotFoundError(
                f"no provider circuit '{name}'; `wrighty providers` lists the circuits there are"
            )
        seen = circuit_view(before, now)
        if seen.state is CircuitState.CLOSED:
            return Reset(seen, seen)
        after = closed(before)
        if store.write_circuit(before, after, at=now):
            return Reset(seen, circuit_view(after, now))
    raise ConflictError(
        f"provider circuit '{name}' kept changing while this command ran; try again"
    )
