"""Claim burn-down: how fast wrighty's SQLite store claims and settles no-op items.

Side by side in one run, on fresh files in the same directory, with 1 and 2 processes:

- wrighty: ``SqliteStore.acquire`` + ``write_transition(settle(..., done))`` per item
  (two guarded write transactions, each appending an event; ``synchronous = FULL``);
- baseline: a hand-written minimal sqlite3 loop doing the same guarded claim and settle on a
  bare table (two transactions per item, same pragmas);
- schema: the same hand-written loop on wrighty's own schema, history events included, to
  separate what the schema costs from what wrighty's Python code costs;
- huey: Huey's ``SqliteHuey`` dequeuing and executing no-op tasks (one transaction per task,
  its default durability: SQLite's default ``synchronous = FULL`` in WAL mode).

Usage: python bench/claims.py [--items 20000] [--processes 1 2]
Needs `pip install huey` for the Huey column (skipped with a note otherwise).
"""

from __future__ import annotations

import argparse
import multiprocessing
import sqlite3
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from wrighty.domain.claims import ClaimRequest, LeaseTerms, Settlement, settle
from wrighty.domain.model import RunEnd
from wrighty.domain.outcomes import Confidence, OutcomeClass
from wrighty.domain.states import ItemState
from wrighty.store.sqlite import SqliteStore, to_db_time

CONTEXT = multiprocessing.get_context("spawn")
NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
TERMS = LeaseTerms(lease_seconds=60, default_timeout_seconds=3600)


# -- wrighty ----------------------------------------------------------------------------------


def wrighty_setup(path: Path, items: int) -> None:
    SqliteStore.open(path).close()
    connection = sqlite3.connect(path, isolation_level=None)
    stamp = to_db_time(NOW)
    connection.execute("BEGIN")
    connection.executemany(
        "INSERT INTO items (title, body, state, queued_at, created_at, updated_at) "
        "VALUES (?, 'no-op', 'queued', ?, ?, ?)",
        ((f"item {n}", stamp, stamp, stamp) for n in range(items)),
    )
    connection.execute("COMMIT")
    connection.close()


def wrighty_worker(path: str, name: str) -> int:
    store = SqliteStore.open(Path(path))
    request = ClaimRequest(name, "inst-bench", TERMS, default_agent="claude")
    end = RunEnd(NOW, OutcomeClass.SUCCEEDED, Confidence.AUTHORITATIVE, exit_code=0)
    done = Settlement(ItemState.DONE, process_started=True, run_end=end)
    count = 0
    while (claimed := store.acquire(request, now=NOW)) is not None:
        if not store.write_transition(settle(claimed, done, at=NOW)):
            raise RuntimeError("a settle was refused in a burn-down without contention")
        count += 1
    store.close()
    return count


# -- hand-written baseline --------------------------------------------------------------------


def _baseline_connect(path: Path | str) -> sqlite3.Connection:
    connection = sqlite3.connect(path, isolation_level=None, timeout=10)
    connection.execute("PRAGMA journal_mode = WAL")
    connection.execute("PRAGMA synchronous = FULL")
    return connection


def baseline_setup(path: Path, items: int) -> None:
    connection = _baseline_connect(path)
    connection.execute(
        "CREATE TABLE jobs (id INTEGER PRIMARY KEY, state TEXT NOT NULL, "
        "generation INTEGER NOT NULL DEFAULT 0, claimed_by TEXT, lease_expires_at TEXT)"
    )
    connection.execute("CREATE INDEX jobs_state ON jobs (state, id)")
    connection.execute("BEGIN")
    connection.executemany("INSERT INTO jobs (state) VALUES ('queued')", (() for _ in range(items)))
    connection.execute("COMMIT")
    connection.close()


def baseline_worker(path: str, name: str) -> int:
    connection = _baseline_connect(path)
    lease = to_db_time(NOW)
    count = 0
    while True:
        connection.execute("BEGIN IMMEDIATE")
        row = connection.execute(
            "SELECT id, generation FROM jobs WHERE state = 'queued' ORDER BY id LIMIT 1"
        ).fetchone()
        if row is None:
            connection.execute("COMMIT")
            break
        job_id, generation = row
        connection.execute(
            "UPDATE jobs SET state = 'running', generation = generation + 1, claimed_by = ?, "
            "lease_expires_at = ? WHERE id = ? AND state = 'queued' AND generation = ?",
            (name, lease, job_id, generation),
        )
        connection.execute("COMMIT")
        connection.execute("BEGIN IMMEDIATE")
        settled = connection.execute(
            "UPDATE jobs SET state = 'done', claimed_by = NULL, lease_expires_at = NULL "
            "WHERE id = ? AND generation = ? AND claimed_by = ? AND state = 'running'",
            (job_id, generation + 1, name),
        ).rowcount
        connection.execute("COMMIT")
        if settled != 1:
            raise RuntimeError("a settle was refused in a burn-down without contention")
        count += 1
    connection.close()
    return count


def schema_worker(path: str, name: str) -> int:
    """The same two transactions by hand on wrighty's own schema, history included: shows
    what the schema costs apart from wrighty's Python code."""
    connection = _baseline_connect(path)
    now = to_db_time(NOW)
    count = 0
    while True:
        connection.execute("BEGIN IMMEDIATE")
        row = connection.execute(
            "SELECT id, generation FROM items WHERE state = 'queued' ORDER BY queued_at, id LIMIT 1"
        ).fetchone()
        if row is None:
            connection.execute("COMMIT")
            break
        item_id, generation = row
        connection.execute(
            "UPDATE items SET state = 'running', generation = generation + 1, claimed_by = ?, "
            "lease_expires_at = ?, claimed_at = ?, renew_deadline = ?, updated_at = ? "
            "WHERE id = ? AND state = 'queued' AND generation = ?",
            (name, now, now, now, now, item_id, generation),
        )
        _event(connection, item_id, now, name, generation + 1, "queued", "running")
        connection.execute("COMMIT")
        connection.execute("BEGIN IMMEDIATE")
        settled = connection.execute(
            "UPDATE items SET state = 'done', claimed_by = NULL, lease_expires_at = NULL, "
            "claimed_at = NULL, renew_deadline = NULL, updated_at = ? "
            "WHERE id = ? AND state = 'running' AND generation = ? AND claimed_by = ?",
            (now, item_id, generation + 1, name),
        ).rowcount
        connection.execute(
            "UPDATE runs SET ended_at = ?, outcome_class = 'succeeded' "
            "WHERE item_id = ? AND generation = ? AND ended_at IS NULL",
            (now, item_id, generation + 1),
        )
        _event(connection, item_id, now, name, generation + 1, "running", "done")
        connection.execute("COMMIT")
        if settled != 1:
            raise RuntimeError("a settle was refused in a burn-down without contention")
        count += 1
    connection.close()
    return count


def _event(connection: sqlite3.Connection, item_id: int, now: str | None, name: str,
           generation: int, from_state: str, to_state: str) -> None:  # fmt: skip
    connection.execute(
        "INSERT INTO item_events (item_id, at, actor, generation, from_state, to_state) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (item_id, now, f"worker:{name}", generation, from_state, to_state),
    )


# -- Huey -------------------------------------------------------------------------------------


def _huey(path: str) -> Any:
    from huey import SqliteHuey

    huey = SqliteHuey("bench", filename=path)

    def no_op() -> None:
        return None

    # Huey names tasks after their module, which is __main__ here and __mp_main__ in the
    # worker processes; give it one stable name.
    no_op.__module__ = "wrighty_bench"
    task = huey.task(name="no_op")(no_op)
    return huey, task


def huey_setup(path: Path, items: int) -> None:
    huey, no_op = _huey(str(path))
    messages = [huey.serialize_task(no_op.s()) for _ in range(items)]
    huey.storage.close()
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("BEGIN")
    connection.executemany(
        "INSERT INTO task (queue, data, priority) VALUES ('bench', ?, 0)",
        ((message,) for message in messages),
    )
    connection.execute("COMMIT")
    connection.close()


def huey_worker(path: str, name: str) -> int:
    huey, _ = _huey(path)
    count = 0
    while (task := huey.dequeue()) is not None:
        huey.execute(task)
        count += 1
    return count


# -- harness ----------------------------------------------------------------------------------


def _run_worker(kind: str, path: str, name: str, ready: Any, start: Any, done: Any) -> None:
    worker = {
        "wrighty": wrighty_worker,
        "baseline": baseline_worker,
        "schema": schema_worker,
        "huey": huey_worker,
    }[kind]
    if kind == "huey":
        _huey(path)  # import and open before the clock starts, like the others
    ready.put(name)
    start.wait()
    try:
        done.put(worker(path, name))
    except Exception as error:  # reported by the parent instead of a silent hang
        done.put(f"{type(error).__name__}: {error}")


SETUPS: dict[str, Callable[[Path, int], None]] = {
    "wrighty": wrighty_setup,
    "baseline": baseline_setup,
    "schema": wrighty_setup,
    "huey": huey_setup,
}


def burn_down(kind: str, items: int, processes: int, directory: Path) -> float:
    """Items per second for ``processes`` workers draining ``items`` of ``kind``."""
    path = directory / f"{kind}-{processes}.db"
    SETUPS[kind](path, items)
    ready, start, done = CONTEXT.Queue(), CONTEXT.Event(), CONTEXT.Queue()
    workers = [
        CONTEXT.Process(target=_run_worker, args=(kind, str(path), f"w{n}", ready, start, done))
        for n in range(processes)
    ]
    for process in workers:
        process.start()
    for _ in workers:
        ready.get(timeout=120)
    began = time.perf_counter()
    start.set()
    counts = [done.get(timeout=3600) for _ in workers]
    failures = [count for count in counts if isinstance(count, str)]
    if failures:
        raise RuntimeError(f"{kind} worker failed: {failures[0]}")
    processed = sum(counts)
    elapsed = time.perf_counter() - began
    for process in workers:
        process.join()
    if processed != items:
        raise RuntimeError(f"{kind}: processed {processed} of {items}")
    return items / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    kinds = ["wrighty", "baseline", "schema"]
    try:
        import huey  # noqa: F401

        kinds.append("huey")
    except ImportError:
        print("huey is not installed: `pip install huey` to add it to the comparison")
    print(
        f"{args.items} no-op items per run; SQLite WAL, synchronous=FULL for all three",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="wrighty-bench-") as scratch:
        for processes in args.processes:
            rates = {kind: burn_down(kind, args.items, processes, Path(scratch)) for kind in kinds}
            row = "  ".join(f"{kind} {rate:8.0f} items/s" for kind, rate in rates.items())
            ratios = f"wrighty/baseline {rates['wrighty'] / rates['baseline']:.2f}x"
            ratios += f"  wrighty/schema {rates['wrighty'] / rates['schema']:.2f}x"
            if "huey" in rates:
                ratios += f"  wrighty/huey {rates['wrighty'] / rates['huey']:.2f}x"
            print(f"{processes} process(es): {row}  |  {ratios}", flush=True)


if __name__ == "__main__":
    main()
