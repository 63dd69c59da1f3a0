"""The worker registry: a worker's row from start to clean stop, throttled best-effort
heartbeats, pruning, and a registry that fails without disturbing any run."""

from __future__ import annotations

import itertools
import logging
import sqlite3
import sys
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from tests.conftest import FakeClock
from tests.integration.harness import WorkerProject
from wrighty.domain.health import WorkerRow, WorkerState
from wrighty.domain.model import NewItem
from wrighty.domain.states import ItemState
from wrighty.errors import StoreError
from wrighty.store.sqlite import SqliteStore
from wrighty.worker.loop import Worker, WorkerOptions
from wrighty.worker.registry import Presence


class SpyStore:
    """A SqliteStore that records registry writes and can be told to fail them."""

    def __init__(self, store: SqliteStore, *, fail: bool = False) -> None:
        self._store = store
        self.fail = fail
        self.registry: list[tuple[str, Any]] = []
        self.rows: list[WorkerRow] = []  # every row it was asked to write

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def upsert_worker(self, row: WorkerRow) -> None:
        self.registry.append(("upsert", (row.state, row.items)))
        self.rows.append(row)
        if self.fail:
            raise sqlite3.OperationalError("database is locked (planted)")
        self._store.upsert_worker(row)

    def remove_worker(self, worker_id: str) -> None:
        self.registry.append(("remove", worker_id))
        if self.fail:
            raise sqlite3.OperationalError("disk I/O error (planted)")
        self._store.remove_worker(worker_id)


@pytest.fixture
def project(make_project: Callable[..., WorkerProject]) -> Any:
    """The store and config of a project at the test's own folder whose agent sleeps as long as
    its item's body says; wrighty's own lease."""
    agent = {"adapter": "command", "command": [sys.executable, "-c",
             "import sys, time; time.sleep(float(sys.stdin.read()))"]}  # fmt: skip
    made = make_project(
        ".", kind=WorkerProject, agents={"py": agent}, timings=False,
        worker={"defaultAgent": "py", "heartbeatSeconds": 0.05, "pollSeconds": 0.02,
                "workspaceMode": "directory"},
    )  # fmt: skip
    return made.store, made.loaded


def test_a_worker_registers_beats_while_it_runs_and_leaves_on_a_clean_stop(project: Any) -> None:
    store, loaded = project
    item = store.create_item(
        NewItem("t", "0.5", None, None, None, ItemState.QUEUED), at=FakeClock()(), actor="op"
    )
    spy = SpyStore(store)
    worker = Worker(spy, loaded, installation_id="inst-a", output=lambda _: None)  # type: ignore[arg-type]
    worker.run(WorkerOptions(once=True, stop_grace_seconds=1))
    upserts = [what for kind, what in spy.registry if kind == "upsert"]
    assert upserts[0] == (WorkerState.IDLE, ())  # registered before the first claim
    assert (WorkerState.RUNNING, (item.id,)) in upserts  # heartbeats while the agent runs
    assert spy.registry[-1] == ("remove", worker.worker_id)
    assert store.list_workers() == []
    assert store.get_item(item.id).state is ItemState.DONE  # type: ignore[union-attr]


@pytest.mark.parametrize("agent", [None, "other"])
def test_every_registry_write_names_the_agent_the_worker_runs(
    project: Any, agent: str | None
) -> None:
    """From the first write: `status` reads it to say which agents' items no worker runs."""
    store, loaded = project
    if agent is not None:
        loaded.config.agents[agent] = loaded.config.agents["py"]
    spy = SpyStore(store)
    worker = Worker(spy, loaded, installation_id="inst-a", output=lambda _: None)  # type: ignore[arg-type]
    worker.run(WorkerOptions(agent=agent, idle_timeout_seconds=0.2, stop_grace_seconds=1))
    assert len(spy.rows) >= 2
    assert {row.agent for row in spy.rows} == {agent or "py"}


def test_an_idle_worker_heartbeats_too(project: Any) -> None:
    store, loaded = project
    spy = SpyStore(store)
    worker = Worker(spy, loaded, installation_id="inst-a", output=lambda _: None)  # type: ignore[arg-type]
    worker.run(WorkerOptions(idle_timeout_seconds=0.3, stop_grace_seconds=1))
    idle_beats = [what for kind, what in spy.registry if kind == "upsert"]
    assert len(idle_beats) >= 2
    assert set(idle_beats) == {(WorkerState.IDLE, ())}


def test_a_failing_registry_never_disturbs_a_run(
    project: Any, caplog: pytest.LogCaptureFixture
) -> None:
    store, loaded = project
    item = store.create_item(
        NewItem("t", "0.3", None, None, None, ItemState.QUEUED), at=FakeClock()(), actor="op"
    )
    spy = SpyStore(store, fail=True)
    worker = Worker(spy, loaded, installation_id="inst-a", output=lambda _: None)  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING, logger="wrighty.worker.registry"):
        worker.run(WorkerOptions(once=True, stop_grace_seconds=1))
    assert store.get_item(item.id).state is ItemState.DONE  # type: ignore[union-attr]
    messages = {record.getMessage() for record in caplog.records}
    assert messages == {
        "worker registry: heartbeat failed (OperationalError); "
        "tried again at the next heartbeat (every 0.05 s)",
        "worker registry: remove failed (OperationalError); "
        "the row stays until its heartbeat is 86400 s old and another worker prunes it",
    }
    assert "planted" not in caplog.text


def test_heartbeats_are_throttled_failures_included_and_stop_forgets_the_identity(
    project: Any,
) -> None:
    store, _ = project
    spy = SpyStore(store, fail=True)
    clock = FakeClock()
    moments = iter([0.0, 0.5, 1.0, 1.1])
    identity = WorkerRow("w-0123456789ab", None, "inst-a", 1, 0.0, "0", WorkerState.IDLE, (),
                         clock(), clock())  # fmt: skip
    heartbeat = Presence(spy, identity, interval_seconds=1.0, retention_seconds=3600,  # type: ignore[arg-type]
                          now=clock, monotonic=lambda: next(moments))  # fmt: skip
    for _ in range(4):
        heartbeat.beat(WorkerState.IDLE, ())
    assert [kind for kind, _ in spy.registry] == ["upsert", "upsert"]  # at 0.0 and at 1.0
    heartbeat.stop()
    heartbeat.stop()
    heartbeat.beat(WorkerState.IDLE, (), force=True)
    assert [kind for kind, _ in spy.registry] == ["upsert", "upsert", "remove"]


def test_a_failing_heartbeat_says_its_cause_once_and_when_it_lands_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cause = "postgresql://u@db/fleet: no answer from the database within 10 s"

    class Unreachable:
        down = True

        def upsert_worker(self, row: WorkerRow) -> None:
            if self.down:
                raise StoreError(cause)

        def prune_workers(self, *, older_than: object) -> int:
            return 0

    store = Unreachable()
    clock = FakeClock()
    moments = itertools.count()
    identity = WorkerRow("w-0123456789ab", None, "inst-a", 1, 0.0, "0", WorkerState.IDLE, (),
                         clock(), clock())  # fmt: skip
    heartbeat = Presence(store, identity, interval_seconds=1.0, retention_seconds=3600,  # type: ignore[arg-type]
                         now=clock, monotonic=lambda: float(next(moments)))  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="wrighty.worker.registry"):
        for _ in range(3):
            heartbeat.beat(WorkerState.IDLE, ())
        store.down = False
        heartbeat.beat(WorkerState.IDLE, ())
    assert [record.getMessage() for record in caplog.records] == [
        f"worker registry: heartbeat failed ({cause}); "
        "tried again at the next heartbeat (every 1 s)",
        "worker registry: heartbeat written again",
    ]


def test_rows_silent_for_longer_than_the_retention_are_pruned(project: Any) -> None:
    store, _ = project
    clock = FakeClock()
    old = WorkerRow("w-00000000000d", None, "inst-b", 1, 0.0, "0", WorkerState.IDLE, (),
                    clock(), clock() - timedelta(hours=25))  # fmt: skip
    recent = WorkerRow("w-00000000000e", None, "inst-b", 2, 0.0, "0", WorkerState.IDLE, (),
                       clock(), clock() - timedelta(hours=23))  # fmt: skip
    store.upsert_worker(old)
    store.upsert_worker(recent)
    me = WorkerRow("w-00000000000f", None, "inst-a", 3, 0.0, "0", WorkerState.IDLE, (),
                   clock(), clock())  # fmt: skip
    Presence(store, me, interval_seconds=1, retention_seconds=24 * 3600, now=clock).beat(
        WorkerState.IDLE, ()
    )
    assert sorted(row.worker_id for row in store.list_workers()) == [
        "w-00000000000e",
        "w-00000000000f",
    ]
