"""A fleet on one PostgreSQL server (issue 46, docs/scale.md): N real `wrighty worker start`
processes with C agents each (command agents that sleep), straight to the server or through
PgBouncer in transaction mode (tests/pgbouncer.py starts it; the workers LISTEN on the server
through store.listenUrl). The server is the bench's own (tests/pgserver.py: PostgreSQL 15,
`max_connections` 100, `pg_stat_statements` loaded to count the lease renewals); the workers
heartbeat every ``--heartbeat`` seconds (lease ten times that), so that agents renew.

For each size it plants N x C x ``--rounds`` queued items in a schema of its own and starts the
workers (each stops after ``--idle`` seconds without work), while a sampler reads
`pg_stat_activity` every 0.2 s (the peak of client connections to the server, the bench's own
left out) and a script calls `wrighty status --json` once a second (its latency, and how many
calls failed). Once the backlog is done, ``--pickups`` items are queued one at a time while the
workers idle, each timed from its queueing to its claim (the store's own times). It reports:
peak server connections, claims per second, server transactions per second, renewal
statements per second and the leases they renewed per second during the backlog, pickup p50
and p99, `status --json` p50 and max latency and its failures, and whether any worker said
wake-ups-lost or a server refusal.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.pgbouncer import pgbouncer
from tests.pgserver import own_server

BENCH = "fleet-bench"  # the application_name of the bench's own connections (not counted)
WRIGHTY = [sys.executable, "-m", "wrighty"]
SERVER = ""  # the bench's own server's URL (main starts it)
# The statement of a lease renewal, one claim's (renew_lease) or a worker's claims' at once
# (renew_leases), as pg_stat_statements keeps its text.
RENEWAL = "%lease_expires_at = greatest(%"


def count_connections(admin: psycopg.Connection[Any]) -> int:
    row = admin.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' "
        "AND pid <> pg_backend_pid() AND coalesce(application_name, '') <> %s",
        (BENCH,),
    ).fetchone()
    return int(row[0]) if row else 0


class Watch:
    """While the fleet runs: the server's client connections every 0.2 s (the peak), and
    `wrighty status --json` once a second (each call's latency, the calls that failed)."""

    def __init__(self, root: Path, env: dict[str, str], wrighty: list[str]) -> None:
        self.peak = 0
        self.status_times: list[float] = []
        self.failures: list[str] = []
        self._root, self._env, self._wrighty = root, env, wrighty
        self._done = threading.Event()
        self._threads = [
            threading.Thread(target=self._sample),
            threading.Thread(target=self._status),
        ]
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._done.set()
        for thread in self._threads:
            thread.join()

    def _sample(self) -> None:
        with psycopg.connect(SERVER, autocommit=True, application_name=BENCH) as sampler:
            while not self._done.is_set():
                self.peak = max(self.peak, count_connections(sampler))
                time.sleep(0.2)

    def _status(self) -> None:
        while not self._done.is_set():
            started = time.perf_counter()
            ran = subprocess.run(
                [*self._wrighty, "status", "--json"], cwd=self._root, env=self._env,
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            self.status_times.append(time.perf_counter() - started)
            if ran.returncode not in (0, 1):  # 1: unhealthy, still an answer
                self.failures.append(ran.stderr.strip()[:200])
            self._done.wait(max(0.0, 1.0 - (time.perf_counter() - started)))


def renewals(admin: psycopg.Connection[Any]) -> tuple[int, int]:
    """The renewal statements the server ran since the last reset, and the leases they
    renewed."""
    row = admin.execute(
        "SELECT coalesce(sum(calls), 0), coalesce(sum(rows), 0) FROM pg_stat_statements "
        "WHERE query LIKE %s",
        (RENEWAL,),
    ).fetchone()
    return (int(row[0]), int(row[1])) if row else (0, 0)


def commits(admin: psycopg.Connection[Any]) -> int:
    row = admin.execute(
        "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
    ).fetchone()
    return int(row[0]) if row else 0


def project(
    args: argparse.Namespace, root: Path, url: str, env: dict[str, str], *, behind: bool
) -> None:
    """A project whose agents sleep, its store made at ``url`` (``behind`` PgBouncer: its
    workers LISTEN on the server itself)."""
    store: dict[str, Any] = {"url": url}
    if behind and not args.wrighty:
        store["listenUrl"] = SERVER
    config = {
        "store": store,
        "worker": {"defaultAgent": "sleeper", "concurrency": args.concurrency,
                   "workspaceMode": "directory", "pollSeconds": 5,
                   "heartbeatSeconds": args.heartbeat, "leaseSeconds": 10 * args.heartbeat},
        "agents": {"sleeper": {"adapter": "command", "command": ["sleep", str(args.sleep)]}},
    }  # fmt: skip
    subprocess.run(
        [*WRIGHTY, "init", "--store", url], cwd=root, env=env,
        check=True, capture_output=True,
    )  # fmt: skip
    (root / "wrighty.json").write_text(json.dumps(config))  # over the one init wrote


def run_size(args: argparse.Namespace, via: str, workers: int, port: int | None) -> dict[str, Any]:
    schema = f"fleet_{uuid.uuid4().hex[:10]}"
    options = f"options=-csearch_path%3D{schema}"
    url = f"{SERVER}?{options}"
    if port is not None:
        url = f"postgresql://postgres@127.0.0.1:{port}/test?{options}"
    admin = psycopg.connect(SERVER, autocommit=True, application_name=BENCH)
    admin.execute(f"CREATE SCHEMA {schema}")
    env = {**os.environ, "PYTHONPATH": args.wrighty or str(Path(__file__).resolve().parent.parent)}
    env.pop("WRIGHTY_STORE", None)
    try:
        with tempfile.TemporaryDirectory() as scratch:
            root = Path(scratch)
            project(args, root, url, env, behind=port is not None)
            total = int(workers * args.concurrency * args.rounds)
            plant(schema, total, env)
            before = commits(admin)
            admin.execute("SELECT pg_stat_statements_reset()")
            watch = Watch(root, env, WRIGHTY)
            started = time.perf_counter()
            command = [*WRIGHTY, "worker", "start", "--json", "--idle-timeout", f"{args.idle}s"]
            procs = [
                subprocess.Popen(command, cwd=root, env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
                for _ in range(workers)
            ]  # fmt: skip
            while remaining(admin, schema) > 0:
                time.sleep(0.2)
            backlog_seconds = time.perf_counter() - started
            transactions = commits(admin) - before
            renewed = renewals(admin)
            try:
                pickups = pickup_times(admin, schema, args.pickups, env)
            except subprocess.CalledProcessError:  # the server refused the bench a connection
                pickups = []
            watch.stop()
            said = said_by(procs)
    finally:
        admin.execute(f"DROP SCHEMA {schema} CASCADE")
        admin.close()
    return {
        "via": via, "workers": workers, "agents": workers * args.concurrency, "items": total,
        "peak": watch.peak, "claims_s": total / backlog_seconds,
        "tx_s": transactions / backlog_seconds,
        "renew_s": renewed[0] / backlog_seconds, "leases_s": renewed[1] / backlog_seconds,
        "pickup_p50": statistics.median(pickups) if pickups else None,
        "pickup_p99": max(pickups) if pickups else None,
        "status_p50": statistics.median(watch.status_times),
        "status_max": max(watch.status_times),
        "status_calls": len(watch.status_times), "status_failed": len(watch.failures),
        "lost": said.count("wake-ups-lost"), "off": said.count("wake-ups-off"),
        "tracebacks": said.count("traceback"),
        "failure": watch.failures[0] if watch.failures else "",
    }  # fmt: skip


def said_by(procs: list[subprocess.Popen[str]]) -> list[str]:
    """Every event the workers printed, and `traceback` for each that printed one."""
    said = []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        said += [json.loads(line)["event"] for line in out.splitlines() if line.startswith("{")]
        if "Traceback" in err:
            said.append("traceback")
    return said


PLANT = """
import sys
from datetime import UTC, datetime
from wrighty.domain.model import NewItem
from wrighty.domain.states import ItemState
from wrighty.store.postgres import PostgresStore
store = PostgresStore.open(sys.argv[1])
for n in range(int(sys.argv[2])):
    store.create_item(NewItem(f"item {n}", "sleep", None, None, None, ItemState.QUEUED),
                      at=datetime.now(UTC), actor="bench")
store.close()
"""


def plant(schema: str, count: int, env: dict[str, str]) -> None:
    """``count`` queued items, written as `wrighty create --queue` writes them, by the
    wrighty under test (its PYTHONPATH in ``env``: an older one must not meet a newer schema)."""
    url = f"{SERVER}?options=-csearch_path%3D{schema}"
    # (from "/": "-c" puts the working folder first on sys.path, before PYTHONPATH)
    subprocess.run([sys.executable, "-c", PLANT, url, str(count)], env=env, check=True, cwd="/")


def remaining(admin: psycopg.Connection[Any], schema: str) -> int:
    row = admin.execute(f"SELECT count(*) FROM {schema}.items WHERE state <> 'done'").fetchone()
    return int(row[0]) if row else 0


def pickup_times(
    admin: psycopg.Connection[Any], schema: str, count: int, env: dict[str, str]
) -> list[float]:
    """Queue ``count`` items one at a time while the workers idle; each one's seconds from its
    queueing to its claim, as the store recorded them."""
    times = []
    for _ in range(count):
        time.sleep(random.uniform(0.2, 1.0))
        plant(schema, 1, env)
        item = admin.execute(f"SELECT max(id) FROM {schema}.items").fetchone()[0]
        while True:
            row = admin.execute(
                f"SELECT (SELECT at FROM {schema}.item_events WHERE item_id = %s "
                f"AND to_state = 'running' ORDER BY id LIMIT 1) AS claimed, "
                f"(SELECT queued_at FROM {schema}.items WHERE id = %s) AS queued",
                (item, item),
            ).fetchone()
            if row[0] is not None:
                break
            time.sleep(0.02)
        claimed, queued = (datetime_of(value) for value in row)
        times.append((claimed - queued).total_seconds())
    return times


def datetime_of(value: Any) -> Any:
    from datetime import datetime

    return datetime.fromisoformat(value.replace("Z", "+00:00")) if isinstance(value, str) else value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,10,40")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--via", default="direct,pgbouncer")
    parser.add_argument("--sleep", type=float, default=2.0)
    parser.add_argument("--rounds", type=float, default=1.5)
    parser.add_argument("--pickups", type=int, default=20)
    parser.add_argument("--idle", type=float, default=40.0)
    parser.add_argument("--heartbeat", type=float, default=1.0)
    parser.add_argument("--wrighty", default=None, help="run this checkout's wrighty (before)")
    args = parser.parse_args()
    rows = []
    global SERVER
    with ExitStack() as stack:
        SERVER = stack.enter_context(
            own_server(max_connections="100", shared_preload_libraries="pg_stat_statements")
        )
        with psycopg.connect(SERVER, autocommit=True) as admin:
            admin.execute("CREATE EXTENSION pg_stat_statements")
        port = None
        if "pgbouncer" in args.via.split(","):
            bouncer = pgbouncer(server_pool=20, max_clients=2000, server_url=SERVER)
            port = stack.enter_context(bouncer).port
        for via in args.via.split(","):
            for workers in (int(n) for n in args.workers.split(",")):
                row = run_size(args, via, workers, port if via == "pgbouncer" else None)
                rows.append(row)
                print(json.dumps(row), flush=True)
    print()
    print(f"{'via':<10} {'workers':>7} {'agents':>6} {'items':>5} {'peak conn':>9} {'claims/s':>8} "
          f"{'tx/s':>6} {'renew/s':>7} {'leases/s':>8} {'pickup p50':>10} {'p99':>6} "
          f"{'status p50':>10} {'max':>6} "
          f"{'failed':>8} {'lost':>4}")  # fmt: skip
    for r in rows:
        p50 = f"{r['pickup_p50'] * 1000:.0f} ms" if r["pickup_p50"] is not None else "-"
        p99 = f"{r['pickup_p99'] * 1000:.0f}" if r["pickup_p99"] is not None else "-"
        print(f"{r['via']:<10} {r['workers']:>7} {r['agents']:>6} {r['items']:>5} {r['peak']:>9} "
              f"{r['claims_s']:>8.1f} {r['tx_s']:>6.0f} {r['renew_s']:>7.1f} {r['leases_s']:>8.1f} "
              f"{p50:>10} {p99:>6} "
              f"{r['status_p50'] * 1000:>7.0f} ms {r['status_max'] * 1000:>6.0f} "
              f"{r['status_failed']:>3}/{r['status_calls']:<4} {r['lost']:>4}")  # fmt: skip


if __name__ == "__main__":
    main()
