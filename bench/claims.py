"""Claim burn-down: how fast wrighty's store claims and settles no-op items, beside peers.

SQLite (the default): side by side in one run, on fresh files in the same directory, with 1 and
2 processes:

- wrighty: ``SqliteStore.acquire`` + ``write_transition(settle(..., done))`` per item
  (two guarded write transactions, each appending an event; ``synchronous = FULL``);
- baseline: a hand-written minimal sqlite3 loop doing the same guarded claim and settle on a
  bare table (two transactions per item, same pragmas);
- schema: the same hand-written loop on wrighty's own schema, history events included, to
  separate what the schema costs from what wrighty's Python code costs;
- huey: Huey's ``SqliteHuey`` dequeuing and executing no-op tasks (one transaction per task,
  its default durability: SQLite's default ``synchronous = FULL`` in WAL mode).

PostgreSQL (``--store postgresql://...``): side by side in one run on that server, each in a
fresh schema of its own (created and dropped), with 1, 2 and 4 processes:

- wrighty: ``PostgresStore.acquire`` + ``write_transition(settle(..., done))`` per item, the
  same calls through the same store port as on SQLite;
- baseline: a hand-written psycopg loop on a bare 5-column table: a ``FOR UPDATE SKIP LOCKED``
  claim in one transaction, a guarded (state, generation, claimed_by) settle in another;
- procrastinate: procrastinate's own workers (``wait=False``, ``listen_notify=False``, one
  process each) running no-op jobs deferred in bulk beforehand.

Usage: python bench/claims.py [--items 20000] [--processes 1 2] [--store postgresql://...]
Needs `pip install huey` for the Huey column, `pip install procrastinate` for the procrastinate
column (each skipped with a note otherwise).
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing
import sqlite3
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from wrighty.domain.claims import ClaimRequest, LeaseTerms, Settlement, settle
from wrighty.domain.model import RunEnd
from wrighty.domain.outcomes import Confidence, OutcomeClass
from wrighty.domain.states import ItemState
from wrighty.store.port import Store
from wrighty.store.postgres import PostgresStore, describe_url
from wrighty.store.sqlite import SqliteStore, to_db_time

CONTEXT = multiprocessing.get_context("spawn")
NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
TERMS = LeaseTerms(lease_seconds=60, default_timeout_seconds=3600)


# -- wrighty ----------------------------------------------------------------------------------


def wrighty_setup(path: str, items: int) -> None:
    SqliteStore.open(Path(path)).close()
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
    return _wrighty_drain(SqliteStore.open(Path(path)), name)


def _wrighty_drain(store: Store, name: str) -> int:
    """Claim and settle through the store port until nothing is left; the same on every
    backend."""
    request = ClaimRequest(name, "inst-bench", TERMS, default_agent="claude")
    end = RunEnd(NOW, OutcomeClass.SUCCEEDED, Confidence.AUTHORITATIVE, exit_code=0)
    done = Settlement(ItemState.DONE, process_started=True, run_end=end)
    count = 0
    while (claimed := store.acquire(request, now=NOW)) is not None:
        if not store.write_transition(settle(claimed.item, done, at=NOW)):
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


def baseline_setup(path: str, items: int) -> None:
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
        _check_settled(settled)
        count += 1
    connection.close()
    return count


def _check_settled(rowcount: int) -> None:
    if rowcount != 1:
        raise RuntimeError("a settle was refused in a burn-down without contention")


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
        _check_settled(settled)
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


def huey_setup(path: str, items: int) -> None:
    huey, no_op = _huey(path)
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


# -- PostgreSQL: wrighty ----------------------------------------------------------------------


def pg_wrighty_setup(url: str, items: int) -> None:
    PostgresStore.open(url, create=True).close()
    stamp = to_db_time(NOW)
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(
            "INSERT INTO items (title, body, state, queued_at, created_at, updated_at) "
            "SELECT 'item ' || n, 'no-op', 'queued', %(at)s, %(at)s, %(at)s "
            "FROM generate_series(0, %(items)s - 1) AS n",
            {"at": stamp, "items": items},
        )
        _analyze(connection)


def pg_wrighty_worker(url: str, name: str) -> int:
    return _wrighty_drain(PostgresStore.open(url), name)


def _analyze(connection: psycopg.Connection[Any]) -> None:
    """Statistics for the tables just seeded, the same for every contender."""
    tables = connection.execute(
        "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
    ).fetchall()
    for (table,) in tables:
        connection.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(table)))


# -- PostgreSQL: hand-written baseline --------------------------------------------------------


def pg_baseline_setup(url: str, items: int) -> None:
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(
            "CREATE TABLE jobs (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
            "state TEXT NOT NULL, generation BIGINT NOT NULL DEFAULT 0, claimed_by TEXT, "
            "lease_expires_at TEXT)"
        )
        # The usual index of a SKIP LOCKED queue. With (state, id), as on SQLite, the planner
        # walks the primary key past every settled row, since the statistics taken at the
        # start say that every row is queued.
        connection.execute("CREATE INDEX jobs_queued ON jobs (id) WHERE state = 'queued'")
        connection.execute(
            "INSERT INTO jobs (state) SELECT 'queued' FROM generate_series(1, %s)", (items,)
        )
        _analyze(connection)


def pg_baseline_worker(url: str, name: str) -> int:
    lease = to_db_time(NOW)
    count = 0
    with psycopg.connect(url, autocommit=True) as connection:
        while True:
            with connection.transaction():
                row = connection.execute(
                    "SELECT id, generation FROM jobs WHERE state = 'queued' ORDER BY id LIMIT 1 "
                    "FOR UPDATE SKIP LOCKED"
                ).fetchone()
                if row is None:
                    break
                job_id, generation = row
                connection.execute(
                    "UPDATE jobs SET state = 'running', generation = generation + 1, "
                    "claimed_by = %s, lease_expires_at = %s "
                    "WHERE id = %s AND state = 'queued' AND generation = %s",
                    (name, lease, job_id, generation),
                )
            with connection.transaction():
                settled = connection.execute(
                    "UPDATE jobs SET state = 'done', claimed_by = NULL, lease_expires_at = NULL "
                    "WHERE id = %s AND generation = %s AND claimed_by = %s AND state = 'running'",
                    (job_id, generation + 1, name),
                ).rowcount
            _check_settled(settled)
            count += 1
    return count


# -- PostgreSQL: procrastinate ----------------------------------------------------------------

_no_ops_run = 0  # jobs this worker process ran


async def _no_op() -> None:
    global _no_ops_run
    _no_ops_run += 1


def _procrastinate(url: str) -> Any:
    import procrastinate

    # It warns that the app lives in __main__ (which matters to its CLI, not here).
    logging.getLogger("procrastinate").setLevel(logging.ERROR)
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=url))
    app.task(name="no_op")(_no_op)
    return app


def procrastinate_setup(url: str, items: int) -> None:
    app = _procrastinate(url)
    with app.open():
        app.schema_manager.apply_schema()
        app.tasks["no_op"].batch_defer(*({} for _ in range(items)))
    with psycopg.connect(url, autocommit=True) as connection:
        _analyze(connection)


def procrastinate_worker(url: str, name: str) -> int:
    _procrastinate(url).run_worker(
        name=name, wait=False, listen_notify=False, install_signal_handlers=False
    )
    return _no_ops_run


# -- harness ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Contender:
    setup: Callable[[str, int], None]  # fills a fresh place with queued no-op items
    worker: Callable[[str, str], int]  # drains it as one process; returns how many it settled
    warm: Callable[[str], object] | None = None  # imports and opens, before the clock starts
    settled: str | None = None  # SQL counting the items settled, checked after the run
    needs: str | None = None  # a package outside wrighty's dependencies


CONTENDERS: dict[str, dict[str, Contender]] = {
    "sqlite": {
        "wrighty": Contender(wrighty_setup, wrighty_worker),
        "baseline": Contender(baseline_setup, baseline_worker),
        "schema": Contender(wrighty_setup, schema_worker),
        "huey": Contender(huey_setup, huey_worker, warm=_huey, needs="huey"),
    },
    "postgresql": {
        "wrighty": Contender(
            pg_wrighty_setup,
            pg_wrighty_worker,
            settled="SELECT count(*) FROM items WHERE state = 'done'",
        ),
        "baseline": Contender(
            pg_baseline_setup,
            pg_baseline_worker,
            settled="SELECT count(*) FROM jobs WHERE state = 'done'",
        ),
        "procrastinate": Contender(
            procrastinate_setup,
            procrastinate_worker,
            warm=_procrastinate,
            settled="SELECT count(*) FROM procrastinate_jobs WHERE status = 'succeeded'",
            needs="procrastinate",
        ),
    },
}


def _run_worker(
    backend: str, kind: str, place: str, name: str, ready: Any, start: Any, done: Any
) -> None:
    contender = CONTENDERS[backend][kind]
    if contender.warm is not None:
        contender.warm(place)  # import and open before the clock starts, like the others
    ready.put(name)
    start.wait()
    try:
        done.put(contender.worker(place, name))
    except Exception as error:  # reported by the parent instead of a silent hang
        done.put(f"{type(error).__name__}: {error}")


def burn_down(backend: str, kind: str, place: str, items: int, processes: int) -> float:
    """Items per second for ``processes`` workers draining ``items`` of ``kind`` at ``place``."""
    contender = CONTENDERS[backend][kind]
    contender.setup(place, items)
    counts, elapsed = _drain_in_processes(backend, kind, place, processes)
    failures = [count for count in counts if isinstance(count, str)]
    if failures:
        raise RuntimeError(f"{kind} worker failed: {failures[0]}")
    processed = sum(counts)
    if processed != items:
        raise RuntimeError(f"{kind}: processed {processed} of {items}")
    if contender.settled is not None:
        _check_all_settled(kind, place, contender.settled, items)
    return items / elapsed


def _drain_in_processes(
    backend: str, kind: str, place: str, processes: int
) -> tuple[list[Any], float]:
    """What each worker process returned, and the seconds from the start signal to the last
    answer. Every process is ended and joined before this returns or raises."""
    ready, start, done = CONTEXT.Queue(), CONTEXT.Event(), CONTEXT.Queue()
    workers = [
        CONTEXT.Process(
            target=_run_worker, args=(backend, kind, place, f"w{n}", ready, start, done)
        )
        for n in range(processes)
    ]
    try:
        for process in workers:
            process.start()
        for _ in workers:
            ready.get(timeout=120)
        began = time.perf_counter()
        start.set()
        counts = [done.get(timeout=3600) for _ in workers]
        return counts, time.perf_counter() - began
    except BaseException:
        for process in workers:
            if process.is_alive():
                process.terminate()
        raise
    finally:
        for process in workers:
            if process.pid is not None:
                process.join()


def _check_all_settled(kind: str, url: str, query: str, items: int) -> None:
    """Every item is recorded as done in the database, not only counted by the workers."""
    with psycopg.connect(url) as connection:
        row = connection.execute(query.encode()).fetchone()
    if row is None or row[0] != items:
        raise RuntimeError(f"{kind}: {row[0] if row else 0} of {items} items settled")


@contextmanager
def sqlite_place(directory: Path, name: str) -> Iterator[str]:
    """A fresh database file for one contender."""
    yield str(directory / f"{name}.db")


@contextmanager
def postgres_place(server: str, name: str) -> Iterator[str]:
    """The server's URL, pointed at a fresh schema for one contender; the schema is dropped
    afterwards, with everything in it. Its connections are named ``wrighty-bench``, apart
    from the ``wrighty`` connections tests may cut."""
    schema = f"wrighty_bench_{name.replace('-', '_')}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    try:
        query = f"options=-csearch_path%3D{schema}&application_name=wrighty-bench"
        yield f"{server}{'&' if '?' in server else '?'}{query}"
    finally:
        with psycopg.connect(server, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


def compare(
    backend: str,
    kinds: list[str],
    items: int,
    process_counts: list[int],
    place: Callable[[str], AbstractContextManager[str]],
) -> None:
    """One line per process count: every contender's rate, then wrighty's ratio to each."""
    for processes in process_counts:
        rates: dict[str, float] = {}
        for kind in kinds:
            with place(f"{kind}-{processes}") as where:
                rates[kind] = burn_down(backend, kind, where, items, processes)
        row = "  ".join(f"{kind} {rate:8.0f} items/s" for kind, rate in rates.items())
        ratios = "  ".join(
            f"wrighty/{kind} {rates['wrighty'] / rate:.2f}x"
            for kind, rate in rates.items()
            if kind != "wrighty"
        )
        print(f"{processes} process(es): {row}  |  {ratios}", flush=True)


def available(backend: str) -> list[str]:
    """The contenders whose packages are installed (a note for each one that is not)."""
    kinds = []
    for kind, contender in CONTENDERS[backend].items():
        if contender.needs is not None:
            try:
                __import__(contender.needs)
            except ImportError:
                print(
                    f"{contender.needs} is not installed: "
                    f"`pip install {contender.needs}` to add it to the comparison"
                )
                continue
        kinds.append(kind)
    return kinds


def postgres_settings(server: str) -> str:
    """The server and the durability every PostgreSQL contender shares."""
    with psycopg.connect(server) as connection:
        row = connection.execute(
            "SELECT current_setting('server_version'), current_setting('synchronous_commit'), "
            "current_setting('fsync')"
        ).fetchone()
    version, commit, fsync = row or ("?", "?", "?")
    where = describe_url(server)
    return f"PostgreSQL {version} at {where}, synchronous_commit={commit}, fsync={fsync}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--processes", type=int, nargs="+", help="default: 1 2 (PostgreSQL: 1 2 4)")
    parser.add_argument("--store", help="a PostgreSQL server URL; SQLite files when absent")
    args = parser.parse_args()
    if args.store:
        kinds = available("postgresql")
        print(f"{args.items} no-op items per run; {postgres_settings(args.store)}", flush=True)
        compare(
            "postgresql",
            kinds,
            args.items,
            args.processes or [1, 2, 4],
            lambda name: postgres_place(args.store, name),
        )
        return
    kinds = available("sqlite")
    print(
        f"{args.items} no-op items per run; SQLite WAL, synchronous=FULL for all three",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="wrighty-bench-") as scratch:
        compare(
            "sqlite",
            kinds,
            args.items,
            args.processes or [1, 2],
            lambda name: sqlite_place(Path(scratch), name),
        )


if __name__ == "__main__":
    main()
