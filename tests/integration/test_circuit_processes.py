"""The provider circuit's compare-and-set across real OS processes on one SQLite file."""

from __future__ import annotations

import dataclasses
import multiprocessing
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import START
from wrighty.domain.circuits import Circuit, opened, take_probe
from wrighty.store.sqlite import SqliteStore

CONTEXT = multiprocessing.get_context("spawn")
NAME = "account:team"
RESET = START + timedelta(minutes=5)
HALF_OPEN_AT = RESET + timedelta(seconds=1)
WORKERS = 4
ROUNDS = 50


def _take_the_probe(path: str, worker: str, ready: Any, start: Any, results: Any) -> None:
    """Read the half-open circuit, wait for the others to have read it too, then take the
    probe from that read; report whether it landed."""
    error, landed = None, False
    try:
        store = SqliteStore.open(Path(path))
        seen = store.get_circuit(NAME)
        taken = take_probe(seen, now=HALF_OPEN_AT, worker_id=worker,
                           lease_until=HALF_OPEN_AT + timedelta(seconds=30))  # fmt: skip
        assert taken is not None
        ready.put(worker)
        start.wait()
        landed = store.write_circuit(seen, taken, at=HALF_OPEN_AT)
        store.close()
    except Exception as caught:  # reported to the parent, which fails the test
        error = f"{type(caught).__name__}: {caught}"
    results.put((worker, landed, error))


def _count_refusals(path: str, worker: str, ready: Any, start: Any, results: Any) -> None:
    """ROUNDS times: read the circuit, count one refusal more on it, write it back from that
    read, again from a fresh read until it lands; report how many writes were refused."""
    error, refused = None, 0
    try:
        store = SqliteStore.open(Path(path))
        ready.put(worker)
        start.wait()
        for _ in range(ROUNDS):
            while True:
                seen = store.get_circuit(NAME)
                after = dataclasses.replace(seen, failures=seen.failures + 1, reason=worker)
                time.sleep(0.001)  # between the read and the write, where another may land
                if store.write_circuit(seen, after, at=START):
                    break
                refused += 1
        store.close()
    except Exception as caught:
        error = f"{type(caught).__name__}: {caught}"
    results.put((worker, refused, error))


def _race(path: Path, target: Any) -> list[tuple[str, Any, str | None]]:
    ready, start, results = CONTEXT.Queue(), CONTEXT.Event(), CONTEXT.Queue()
    processes = [
        CONTEXT.Process(target=target, args=(str(path), f"w{n}", ready, start, results))
        for n in range(WORKERS)
    ]
    for process in processes:
        process.start()
    for _ in processes:  # every worker has read before the race starts
        ready.get(timeout=60)
    start.set()
    reports = [results.get(timeout=120) for _ in processes]
    for process in processes:
        process.join(timeout=60)
    return reports


def _opened_store(path: Path) -> Circuit:
    store = SqliteStore.open(path)
    absent = store.get_circuit(NAME)
    assert store.write_circuit(
        absent, opened(absent, at=START, until=RESET, reason="429"), at=START
    )
    circuit = store.get_circuit(NAME)
    store.close()
    return circuit


@pytest.mark.slow
def test_of_processes_racing_for_the_probe_from_one_read_exactly_one_takes_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "wrighty.db"
    circuit = _opened_store(path)
    reports = _race(path, _take_the_probe)
    assert [error for _, _, error in reports] == [None] * WORKERS
    [winner] = [worker for worker, landed, _ in reports if landed]
    store = SqliteStore.open(path)
    after = store.get_circuit(NAME)
    store.close()
    assert (after.version, after.probe_by) == (circuit.version + 1, winner)


@pytest.mark.slow
def test_racing_processes_lose_no_write(tmp_path: Path) -> None:
    """Every write that landed is in the row: none overwrote another it had not read."""
    path = tmp_path / "wrighty.db"
    circuit = _opened_store(path)
    reports = _race(path, _count_refusals)
    assert [error for _, _, error in reports] == [None] * WORKERS  # no "database is locked"
    store = SqliteStore.open(path)
    after = store.get_circuit(NAME)
    store.close()
    assert after.failures == circuit.failures + WORKERS * ROUNDS
    assert after.version == circuit.version + WORKERS * ROUNDS
    assert sum(refused for _, refused, _ in reports) > 0, "the race never happened"
