"""The lease guard with real processes and real faults: a `wrighty worker start` whose store
stops answering (PostgreSQL behind the tests' own TCP proxy, frozen or refusing) stops its agent
before the lease the store holds ends, by the agent's own record of when it got SIGTERM; and a
run whose agent finished on its own while a SQLite store stayed locked past the lease is still
settled with its own outcome (docs/claims.md#the-lease-guard)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

from tests.conftest import postgres_schema
from tests.faults.proxy import FaultProxy
from tests.helpers import file_appears
from tests.integration.worker_process import LiveWorker, ProjectOnDisk, make_project
from wrighty.domain.model import NewItem
from wrighty.domain.states import ItemState
from wrighty.store.postgres import PostgresStore
from wrighty.store.sqlite import SqliteStore

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

# Told a path on stdin: says it started (PATH.started), then on SIGTERM writes the wall time
# it got it to PATH and exits; it also exits 0 on its own once PATH.go exists.
AGENT = """
import os, signal, sys, time
path = sys.stdin.read().strip()
def stopped(*_):
    stamp = repr(time.time())
    with open(path + ".tmp", "w") as handle:
        handle.write(stamp)
    os.replace(path + ".tmp", path)
    os._exit(0)
signal.signal(signal.SIGTERM, stopped)
open(path + ".started", "w").close()
while not os.path.exists(path + ".go"):
    time.sleep(0.02)
"""

LEASE_SECONDS = 4  # the guard's margin is 1 s: SIGTERM from 1 s before the lease ends


def project(root: Path, store_url: str | None) -> ProjectOnDisk:
    """A project whose agent is AGENT, its store left for the worker to make."""
    worker = {"leaseSeconds": LEASE_SECONDS, "heartbeatSeconds": 0.4, "workspaceMode": "directory"}
    return make_project(
        root,
        programs={"term": ("agent.py", AGENT)},
        worker=worker,
        store_url=store_url,
        create_store=False,
    )


@pytest.fixture
def started(tmp_path: Path) -> Iterator[list[LiveWorker]]:
    """The test's workers, killed at the end if a failed assertion left one running."""
    workers: list[LiveWorker] = []
    yield workers
    for worker in workers:
        if worker.process.poll() is None:
            worker.process.kill()
            worker.process.communicate(timeout=30)


@pytest.fixture
def proxied() -> Iterator[tuple[FaultProxy, str, str]]:
    """The proxy, the store's URL through it, and the direct URL (for the test's own reads)."""
    with postgres_schema() as direct:
        proxy = FaultProxy()
        schema = direct.split("search_path%3D", 1)[1]
        through = (
            f"postgresql://postgres@127.0.0.1:{proxy.port}/test?options=-csearch_path%3D{schema}"
        )
        try:
            yield proxy, through, direct
        finally:
            proxy.close()


def plant(direct: str, body: str) -> int:
    store = PostgresStore.open(direct, create=True)
    try:
        new = NewItem("t", body, None, None, None, ItemState.QUEUED)
        return store.create_item(new, at=datetime.now(UTC), actor="op").id
    finally:
        store.close()


def stored_lease_end(direct: str, item_id: int) -> datetime:
    with psycopg.connect(direct, autocommit=True) as connection:
        row = connection.execute(
            "SELECT state, lease_expires_at FROM items WHERE id = %s", (item_id,)
        ).fetchone()
    assert row is not None
    assert row[0] == "running"  # still the claim's: nobody settled or reaped it meanwhile
    lease = row[1]
    return lease if isinstance(lease, datetime) else datetime.fromisoformat(lease)


def stop_time(path: Path) -> datetime:
    return datetime.fromtimestamp(float(path.read_text()), UTC)


@pytest.mark.parametrize("fault", ["freeze", "refuse"])
def test_a_store_lost_to_the_network_does_not_keep_the_agent_past_its_lease(
    fault: str, proxied: tuple[FaultProxy, str, str], tmp_path: Path, started: list[LiveWorker]
) -> None:
    """freeze: packets stop, without an error; refuse: the server is gone (connections are
    cut, new ones refused)."""
    proxy, through, direct = proxied
    record = tmp_path / "sigterm"
    item_id = plant(direct, str(record))
    worker = LiveWorker(project(tmp_path / "p", through), "--once")
    started.append(worker)
    try:
        worker.until("spawned", item_id=item_id)
        getattr(proxy, fault)()
        lost = worker.until("claim-lost", item_id=item_id)
        file_appears(record, timeout=60)
        lease_end = stored_lease_end(direct, item_id)
        assert stop_time(record) < lease_end  # stopped before the lease the store holds ended
        assert (lost["reason"], lost["margin_seconds"]) == ("lease-ended", 1)
        names = [event["event"] for event in worker.events]
        assert "store-unreachable" in names[names.index("spawned") :]
    finally:
        proxy.forward()  # the blocked call gets its answer: the worker can end
    returncode, stderr = worker.finish()
    assert returncode == 1, stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith(f"wrighty: gave up item {item_id}: its claim's lease ran out before")
    assert last.endswith("the item stays running until its lease is reaped")


def test_a_run_that_finished_while_sqlite_stayed_locked_past_its_lease_is_settled_done(
    tmp_path: Path, started: list[LiveWorker]
) -> None:
    root = tmp_path / "p"
    on_disk = project(root, None)
    SqliteStore.open(root / ".wrighty" / "wrighty.db").close()
    record = tmp_path / "sigterm"
    item_id = on_disk.plant(str(record))
    worker = LiveWorker(on_disk, "--once")
    started.append(worker)
    worker.until("spawned", item_id=item_id)
    file_appears(Path(f"{record}.started"), timeout=60)
    store = on_disk.store()
    while not any(run.pid for run in store.list_runs(item_id)):  # its pid is recorded
        time.sleep(0.02)
    store.close()
    holder = sqlite3.connect(root / ".wrighty" / "wrighty.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock...
    try:
        Path(f"{record}.go").touch()  # ...while the agent finishes on its own
        pending = worker.until("settle-pending", item_id=item_id)  # past the lease's end
        assert "busy" in pending["cause"]
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    settled = worker.until("settled", item_id=item_id)
    returncode, stderr = worker.finish()
    assert returncode == 0, stderr
    assert settled["state"] == "done"
    assert on_disk.get(item_id).state is ItemState.DONE
    assert not record.exists()  # the agent was never stopped: it ended on its own
    assert "claim-lost" not in {event["event"] for event in worker.events}
