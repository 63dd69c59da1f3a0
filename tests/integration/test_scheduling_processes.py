"""Concurrency limits across real worker processes: 3 `wrighty worker start` processes (each
its own installation, two slots each) share one store, SQLite file or PostgreSQL database,
and an agent with `maxConcurrent: 1`. The agent's runs never overlap in time, as the agent
processes themselves record it and as the runs' recorded start and end say."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.conftest import postgres_schema
from wrighty.cli.common import EXIT_INTERRUPTED
from wrighty.domain.model import NewItem
from wrighty.domain.states import ItemState
from wrighty.store.port import Store

ROOT = Path(__file__).resolve().parents[2]
ITEMS = 8
WORKERS = 3
RUN_SECONDS = 0.25
WAIT_SECONDS = 240  # only so that a test gone wrong fails instead of hanging

# The agent: notes when it starts and ends (its own clock, this machine's), with its item.
AGENT = """
import os, sys, time
sys.stdin.read()
def note(what):
    with open(sys.argv[1], "a") as log:
        log.write(f"{os.environ['WRIGHTY_ITEM_ID']} {what} {time.time():.6f}\\n")
note("start")
time.sleep(float(sys.argv[2]))
note("end")
"""


def until_done(store: Store, *, within: float) -> None:
    """Wait until every item is done (or any is not and cannot be: then the test fails)."""
    deadline = time.monotonic() + within
    while True:
        states = {item.state for item in store.list_items()}
        if states == {ItemState.DONE}:
            return
        assert time.monotonic() < deadline, f"items still {states} after {within} s"
        time.sleep(0.1)


@contextmanager
def sqlite_store(tmp_path: Path) -> Iterator[tuple[str, Store]]:
    from wrighty.store.sqlite import SqliteStore

    path = tmp_path / "shared" / "wrighty.db"
    store = SqliteStore.open(path)
    try:
        yield f"sqlite:///{path}", store
    finally:
        store.close()


@contextmanager
def postgres_store(tmp_path: Path) -> Iterator[tuple[str, Store]]:
    from wrighty.store.postgres import PostgresStore

    with postgres_schema() as url:
        store = PostgresStore.open(url, create=True)
        try:
            yield url, store
        finally:
            store.close()


def installation(root: Path, name: str, url: str, log: Path) -> tuple[Path, dict[str, str]]:
    """A project of its own (its own config dir: its own installation id) on the shared
    store, whose agent `solo` may run one item at a time across all of them."""
    project = root / name
    project.mkdir()
    (project / "agent.py").write_text(AGENT)
    command = [sys.executable, str(project / "agent.py"), str(log), str(RUN_SECONDS)]
    document = {
        "store": {"url": url},
        "worker": {"defaultAgent": "solo", "workspaceMode": "directory", "concurrency": 2,
                   "leaseSeconds": 30, "heartbeatSeconds": 5, "pollSeconds": 0.05},
        "agents": {"solo": {"adapter": "command", "command": command, "maxConcurrent": 1}},
    }  # fmt: skip
    (project / "wrighty.json").write_text(json.dumps(document))
    env = {k: v for k, v in os.environ.items() if not k.startswith("WRIGHTY_")}
    env["XDG_CONFIG_HOME"] = str(root / f"{name}-config")
    return project, env


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_an_agents_runs_never_overlap_across_worker_processes(tmp_path: Path, backend: str) -> None:
    opened = sqlite_store(tmp_path) if backend == "sqlite" else postgres_store(tmp_path)
    log = tmp_path / "agent-times.log"
    with opened as (url, store):
        now = datetime.now(UTC)
        for n in range(ITEMS):
            store.create_item(
                NewItem(f"item {n}", "run briefly", None, None, None, ItemState.QUEUED),
                at=now,
                actor="test",
            )
        workers = []
        for number in range(WORKERS):
            project, env = installation(tmp_path, f"site-{number}", url, log)
            # At most 3 items each: the 8 items need every worker, so they contend. A worker
            # waiting for the agent's one slot is idle, for as long as the others' runs take:
            # its idle timeout only ends a test that went wrong, not one on a busy machine.
            command = [sys.executable, "-m", "wrighty", "worker", "start", "--idle-timeout",
                       f"{WAIT_SECONDS}s", "--max-items", "3", "--json"]  # fmt: skip
            workers.append(
                subprocess.Popen(
                    command,
                    cwd=project,
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
        try:
            # A worker that took its 3 items has stopped; the others are stopped once every
            # item is done, as a user stops a worker (SIGTERM: settle, then exit).
            until_done(store, within=WAIT_SECONDS)
            for worker in workers:
                if worker.poll() is None:
                    worker.send_signal(signal.SIGTERM)
            outputs = [worker.communicate(timeout=WAIT_SECONDS) for worker in workers]
        finally:
            for worker in workers:
                worker.kill()
                worker.wait()
        for worker, (out, err) in zip(workers, outputs, strict=True):
            # Each ran to its clean end: its 3 items, or our stop (which may come as it ends,
            # once its signal handlers are gone).
            said = [json.loads(line)["event"] for line in out.splitlines() if line.startswith("{")]
            assert "stopping" in said, err
            assert worker.returncode in (0, EXIT_INTERRUPTED, -signal.SIGTERM), err
            assert "Traceback" not in err, err
        items = store.list_items()
        runs = [run for item in items for run in store.list_runs(item.id)]

    assert {item.state for item in items} == {ItemState.DONE}
    assert len(runs) == ITEMS
    # The agent processes' own record: every start is followed by its end before the next.
    notes = [line.split() for line in log.read_text().splitlines()]
    assert len(notes) == 2 * ITEMS
    notes.sort(key=lambda note: float(note[2]))
    for (item_a, what_a, _), (item_b, what_b, _) in itertools.pairwise(notes):
        if what_a == "start":
            assert (what_b, item_b) == ("end", item_a), "two runs of the agent overlapped"
    # The store's record: each run ended before the next one started.
    runs.sort(key=lambda run: run.started_at)
    for earlier, later in itertools.pairwise(runs):
        assert earlier.ended_at is not None
        assert earlier.ended_at <= later.started_at
    # The limit was contended: every worker process took part.
    claimers = {
        json.loads(line)["worker_id"]
        for out, _ in outputs
        for line in out.splitlines()
        if line.startswith("{") and json.loads(line).get("event") == "claimed"
    }
    assert len(claimers) == WORKERS, claimers
