"""The provider circuit contract: reads, the compare-and-set write on the version, the probe's
running fact — on every store (parametrized by the `store` fixture)."""

from __future__ import annotations

import dataclasses
import sqlite3
import threading
from datetime import timedelta
from typing import Any

import psycopg
import pytest

from tests.conftest import FakeClock
from tests.store.test_claims import acquire, queued, settlement
from wrighty.domain.circuits import (
    Circuit,
    CircuitState,
    closed,
    give_back_probe,
    opened,
    probing,
    take_probe,
)
from wrighty.domain.claims import settle
from wrighty.domain.outcomes import OutcomeClass
from wrighty.domain.states import ItemState
from wrighty.store import Store

NAME = "agent:claude@inst-a"
RESET = timedelta(minutes=5)
PROBE_LEASE = timedelta(seconds=30)


def stored_row(store: Store, name: str = NAME) -> dict[str, Any] | None:
    """The circuit's row as the database holds it, with the columns the port does not read."""
    rows = store._rows("select_circuit", {"name": name})  # type: ignore[attr-defined]
    if not rows:
        return None
    # keys(): iterating a sqlite3.Row gives its values
    return {key: rows[0][key] for key in rows[0].keys()}  # noqa: SIM118


def write(store: Store, before: Circuit, after: Circuit, clock: FakeClock) -> Circuit:
    """Write ``after`` on ``before``, which must land; the circuit as the store now holds it."""
    assert store.write_circuit(before, after, at=clock())
    return store.get_circuit(before.name)


def open_circuit(store: Store, clock: FakeClock, name: str = NAME) -> Circuit:
    """A circuit opened by a refusal now, until RESET from now (version 1)."""
    absent = store.get_circuit(name)
    return write(
        store, absent, opened(absent, at=clock(), until=clock() + RESET, reason="429"), clock
    )


def half_open(store: Store, clock: FakeClock) -> Circuit:
    circuit = open_circuit(store, clock)
    clock.advance(RESET.total_seconds())
    assert circuit.state(clock()) is CircuitState.HALF_OPEN
    return circuit


def probe(circuit: Circuit, clock: FakeClock, worker: str) -> Circuit:
    taken = take_probe(circuit, now=clock(), worker_id=worker, lease_until=clock() + PROBE_LEASE)
    assert taken is not None
    return taken


# -- reads ------------------------------------------------------------------------------------


def test_a_circuit_without_a_row_reads_as_closed_at_version_zero(store: Store) -> None:
    assert store.get_circuit(NAME) == Circuit(NAME)
    assert store.get_circuit(NAME).version == 0
    assert store.list_circuits() == []
    assert stored_row(store) is None


def test_the_first_write_inserts_the_row_at_version_one(store: Store, clock: FakeClock) -> None:
    clock.current += timedelta(microseconds=654321)
    absent = store.get_circuit(NAME)
    after = opened(absent, at=clock(), until=clock() + RESET, reason="rate-limited: 429")
    assert store.write_circuit(absent, after, at=clock()) is True
    read = store.get_circuit(NAME)
    assert read == dataclasses.replace(after, version=1)
    assert (read.opened_at, read.until, read.failures) == (clock(), clock() + RESET, 1)
    assert read.until is not None
    assert read.until.utcoffset() == timedelta(0)
    assert read.state(clock()) is CircuitState.OPEN
    assert store.list_circuits() == [read]
    row = stored_row(store)
    assert row is not None
    assert row["updated_at"] == "2026-11-30T09:00:00.654321Z"


def test_every_field_reads_back(store: Store, clock: FakeClock) -> None:
    item = queued(store, clock)
    everything = Circuit(
        NAME,
        opened_at=clock() - timedelta(minutes=10),
        until=clock() - timedelta(seconds=1),
        reason="provider-unavailable: 503",
        failures=3,
        probe_by="w-0123456789ab",
        probe_item=item.id,
        probe_expires_at=clock() + PROBE_LEASE,
    )
    read = write(store, Circuit(NAME), everything, clock)
    assert read == dataclasses.replace(everything, version=1)


def test_circuits_list_by_name_in_code_point_order(store: Store, clock: FakeClock) -> None:
    """The same order on both stores, whatever the PostgreSQL database's collation."""
    names = ["agent:claude@inst-b", "account:team", "B", "a", "agent:claude@inst-a", "Ab"]
    for name in names:
        open_circuit(store, clock, name)
    listed = store.list_circuits()
    assert [c.name for c in listed] == sorted(names)
    assert listed == [store.get_circuit(name) for name in sorted(names)]
    assert all(c.version == 1 for c in listed)


# -- the compare-and-set write ------------------------------------------------------------


def test_an_update_lands_on_the_version_read_and_bumps_it(store: Store, clock: FakeClock) -> None:
    circuit = half_open(store, clock)
    # The stored version is the reader's plus one, whatever the written value says.
    taken = dataclasses.replace(probe(circuit, clock, "w1"), version=99)
    read = write(store, circuit, taken, clock)
    assert read == dataclasses.replace(taken, version=2)
    assert (read.probe_by, read.probe_expires_at) == ("w1", clock() + PROBE_LEASE)
    clock.advance(1)
    given_back = write(store, read, give_back_probe(read), clock)
    assert given_back.version == 3
    assert (given_back.probe_by, given_back.probe_item, given_back.probe_expires_at) == (
        None,
        None,
        None,
    )
    assert stored_row(store)["updated_at"] == "2026-11-30T09:05:01.000000Z"  # type: ignore[index]


def test_closing_keeps_the_row_closed_at_the_next_version(store: Store, clock: FakeClock) -> None:
    circuit = half_open(store, clock)
    read = write(store, circuit, closed(circuit), clock)
    assert read == Circuit(NAME, version=2)
    assert read.state(clock()) is CircuitState.CLOSED
    assert store.list_circuits() == [read]
    reopened = write(
        store, read, opened(read, at=clock(), until=clock() + RESET, reason="429"), clock
    )
    assert (reopened.version, reopened.failures, reopened.opened_at) == (3, 1, clock())


def _stale_update(store: Store, clock: FakeClock) -> tuple[Circuit, Circuit]:
    """A reader of version 1 that another writer passed (version 2)."""
    circuit = half_open(store, clock)
    write(store, circuit, probe(circuit, clock, "w1"), clock)
    return circuit, probe(circuit, clock, "w2")


def _stale_insert(store: Store, clock: FakeClock) -> tuple[Circuit, Circuit]:
    """A reader that found no row, after another writer inserted it."""
    absent = store.get_circuit(NAME)
    open_circuit(store, clock)
    return absent, closed(absent)


def _ahead(store: Store, clock: FakeClock) -> tuple[Circuit, Circuit]:
    """A version the store never reached."""
    circuit = open_circuit(store, clock)
    ahead = dataclasses.replace(circuit, version=5)
    return ahead, closed(ahead)


def _no_row(store: Store, clock: FakeClock) -> tuple[Circuit, Circuit]:
    """An update of a circuit that has no row (the reader's version says there is one)."""
    other = Circuit(NAME, version=1)
    return other, closed(other)


STALE = {"update": _stale_update, "insert": _stale_insert, "ahead": _ahead, "no-row": _no_row}


@pytest.mark.parametrize("case", STALE)
def test_a_write_on_a_version_not_stored_changes_nothing(
    store: Store, clock: FakeClock, case: str
) -> None:
    before, after = STALE[case](store, clock)
    stored, row = store.get_circuit(NAME), stored_row(store)
    clock.advance(1)
    assert store.write_circuit(before, after, at=clock()) is False
    assert store.get_circuit(NAME) == stored
    assert stored_row(store) == row  # updated_at too


def test_of_two_writers_from_the_same_read_the_second_loses(store: Store, clock: FakeClock) -> None:
    circuit = half_open(store, clock)
    first, second = probe(circuit, clock, "w1"), probe(circuit, clock, "w2")
    assert store.write_circuit(circuit, first, at=clock()) is True
    assert store.write_circuit(circuit, second, at=clock()) is False
    read = store.get_circuit(NAME)
    assert (read.version, read.probe_by) == (2, "w1")
    # w2 reads again: the probe is held, so the domain gives it none.
    assert take_probe(read, now=clock(), worker_id="w2", lease_until=clock() + PROBE_LEASE) is None


def test_a_circuit_write_names_one_circuit(store: Store, clock: FakeClock) -> None:
    circuit = open_circuit(store, clock)
    other = dataclasses.replace(closed(circuit), name="account:team")
    with pytest.raises(ValueError, match="one circuit"):
        store.write_circuit(circuit, other, at=clock())
    assert store.get_circuit(NAME) == circuit
    assert store.get_circuit("account:team") == Circuit("account:team")


def test_writes_to_one_circuit_leave_the_others_alone(store: Store, clock: FakeClock) -> None:
    team = open_circuit(store, clock, "account:team")
    circuit = half_open(store, clock)
    write(store, circuit, closed(circuit), clock)
    assert store.get_circuit("account:team") == team


def test_a_probe_item_must_be_an_item(store: Store, clock: FakeClock) -> None:
    circuit = half_open(store, clock)
    ghost = probing(probe(circuit, clock, "w1"), item_id=4242)
    with pytest.raises((sqlite3.IntegrityError, psycopg.Error)):
        store.write_circuit(circuit, ghost, at=clock())
    assert store.get_circuit(NAME) == circuit


@pytest.mark.parametrize("first_write", [True, False], ids=["insert", "update"])
def test_racing_writers_from_one_version_exactly_one_lands(
    store: Store, clock: FakeClock, first_write: bool
) -> None:
    """Eight threads, each with its own connection where the store has one, write from the
    same read: the first write of a circuit (an insert) and a probe taken from version 1."""
    circuit = store.get_circuit(NAME) if first_write else half_open(store, clock)
    results: dict[str, bool] = {}
    barrier = threading.Barrier(8)

    def race(worker: str) -> None:
        if first_write:
            after = opened(circuit, at=clock(), until=clock() + RESET, reason=worker)
        else:
            after = probe(circuit, clock, worker)
        barrier.wait()
        results[worker] = store.write_circuit(circuit, after, at=clock())

    threads = [threading.Thread(target=race, args=(f"w{n}",)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    [winner] = [worker for worker, landed in results.items() if landed]
    assert len(results) == 8
    read = store.get_circuit(NAME)
    assert read.version == circuit.version + 1
    assert (read.reason if first_write else read.probe_by) == winner


# -- the probe's running fact -------------------------------------------------------------


def test_the_probe_runs_while_its_item_runs_under_the_holders_claim(
    store: Store, clock: FakeClock
) -> None:
    circuit = half_open(store, clock)
    queued(store, clock)
    claimed = acquire(store, clock, "w1")
    held = write(store, circuit, probing(probe(circuit, clock, "w1"), item_id=claimed.id), clock)
    assert (held.probe_item, held.probe_running) == (claimed.id, True)
    assert held.probe_held(clock())
    assert store.list_circuits() == [held]
    # Still held after the probe's own lease: its item is running.
    clock.advance(PROBE_LEASE.total_seconds() * 2)
    assert store.get_circuit(NAME).probe_held(clock())
    assert take_probe(store.get_circuit(NAME), now=clock(), worker_id="w2",
                      lease_until=clock() + PROBE_LEASE) is None  # fmt: skip
    # The probe's run ends: its item is no longer running, and the next worker may probe.
    done = settle(claimed, settlement(ItemState.DONE, OutcomeClass.SUCCEEDED, clock), at=clock())
    assert store.write_transition(done)
    ended = store.get_circuit(NAME)
    assert (ended.version, ended.probe_item, ended.probe_running) == (2, claimed.id, False)
    assert not ended.probe_held(clock())
    assert store.list_circuits() == [ended]
    assert take_probe(ended, now=clock(), worker_id="w2", lease_until=clock()) is not None


def test_the_probe_does_not_run_under_another_workers_claim(store: Store, clock: FakeClock) -> None:
    circuit = half_open(store, clock)
    queued(store, clock)
    claimed = acquire(store, clock, "w2")  # running, but not under the probe's holder
    read = write(store, circuit, probing(probe(circuit, clock, "w1"), item_id=claimed.id), clock)
    assert (read.probe_by, read.probe_item, read.probe_running) == ("w1", claimed.id, False)
    assert store.list_circuits() == [read]


def test_the_probe_does_not_run_before_its_item_is_claimed(store: Store, clock: FakeClock) -> None:
    circuit = half_open(store, clock)
    item = queued(store, clock)
    read = write(store, circuit, probing(probe(circuit, clock, "w1"), item_id=item.id), clock)
    assert (read.probe_item, read.probe_running) == (item.id, False)
    acquire(store, clock, "w1")
    assert store.get_circuit(NAME).probe_running is True


def test_without_a_probe_item_nothing_runs(store: Store, clock: FakeClock) -> None:
    circuit = half_open(store, clock)
    queued(store, clock)
    acquire(store, clock, "w1")  # w1 runs an item, but the circuit names none
    read = write(store, circuit, probe(circuit, clock, "w1"), clock)
    assert (read.probe_by, read.probe_item, read.probe_running) == ("w1", None, False)
    assert read.probe_held(clock())  # by the probe's lease
    clock.advance(PROBE_LEASE.total_seconds())
    assert not store.get_circuit(NAME).probe_held(clock())
