"""Wake-ups (worker.wakeUps) with real processes, on a SQLite file and on PostgreSQL: an idle
worker starts an item made by `wrighty create --queue` at once, and a retry when it is due,
well before its poll (pollSeconds 30) would have; what it does not hear (a removed socket, a
write that told nothing, a killed LISTEN connection) is covered by polling, and the worker
listens again. Bounds are "before the poll would have", never tight timings; what happens
"while the worker idles" happens after its `waiting` event, never after a sleep."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import postgres_schema
from tests.helpers import wait_for
from tests.integration.worker_process import EXAMPLE_AGENT, ProjectOnDisk
from wrighty.domain.model import NewItem
from wrighty.domain.states import ItemState

LONG_POLL = 30.0  # the poll that the pickups must beat
SHORT_POLL = 1.0  # when polling is what must find the item
EVENT_SECONDS = 60.0  # only so that a missing event fails instead of hanging
START_AGENT = """#!/bin/sh
date +%s.%N > "$WAKEUPS_STARTS/$WRIGHTY_RUN_ID"
exec "$@"
"""

pytestmark = pytest.mark.slow


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'project' / '.wrighty' / 'wrighty.db'}"
        return
    with postgres_schema() as url:
        yield url


class Project(ProjectOnDisk):
    """A project on disk whose agent writes the clock to a file as its first act (then runs
    the example agent on its task), and its `wrighty` commands."""

    def __init__(self, root: Path, store_url: str, **worker: Any) -> None:
        starts = root / "starts"
        starts.mkdir(parents=True)
        script = root / "start.sh"
        script.write_text(START_AGENT)
        script.chmod(0o755)
        command = [str(script), *EXAMPLE_AGENT]
        document = {
            "store": {"url": store_url},
            "worker": {"defaultAgent": "example", "workspaceMode": "directory",
                       "leaseSeconds": 10, "heartbeatSeconds": 1, **worker},
            "agents": {"example": {"adapter": "command", "command": command,
                                   "resumeCommand": command,
                                   "env": {"WAKEUPS_STARTS": str(starts)}}},
        }  # fmt: skip
        (root / "wrighty.json").write_text(json.dumps(document))
        env = {k: v for k, v in os.environ.items() if not k.startswith("WRIGHTY_")}
        env["XDG_CONFIG_HOME"] = str(root / "config-home")
        super().__init__(root, store_url, env)
        self.run("init")

    @property
    def starts(self) -> Path:
        return self.root / "starts"

    def run(self, *args: str) -> str:
        done = subprocess.run(self.command(*args), cwd=self.root, env=self.env,
                              capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    def create(self, body: str = "wrighty-example: succeed") -> tuple[int, float]:
        """`wrighty create --queue`: the item's id and when the command returned."""
        out = self.run("create", "--title", "pick me up", "--body", body, "--queue", "--json")
        return json.loads(out)["id"], time.time()

    def agent_started(self, run_id: str) -> float:
        """The clock the run's agent wrote as its first act."""
        path = self.starts / run_id

        def written() -> float | None:
            text = path.read_text().strip() if path.exists() else ""
            return float(text) if text else None

        return wait_for(written, timeout=EVENT_SECONDS, what=f"the agent of {run_id} to start")


class Worker:
    """`wrighty worker start --json` as a process, its events read as they come."""

    def __init__(self, project: Project) -> None:
        self.process = subprocess.Popen(
            project.command("worker", "start", "--json"), cwd=project.root, env=project.env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        self.events: list[dict[str, Any]] = []
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            with self._changed:
                self.events.append(json.loads(line))
                self._changed.notify_all()

    def wait_for(
        self, name: str, *, nth: int = 1, after: dict[str, Any] | None = None, **fields: Any
    ) -> dict[str, Any]:
        """The ``nth`` event ``name`` with those fields (after the event ``after``, when given),
        once the worker printed it."""

        def found() -> list[dict[str, Any]]:
            start = next(i for i, e in enumerate(self.events) if e is after) + 1 if after else 0
            return [
                e
                for e in self.events[start:]
                if e["event"] == name and all(e.get(k) == v for k, v in fields.items())
            ]

        with self._changed:
            self._changed.wait_for(
                lambda: len(found()) >= nth or self.process.poll() is not None, EVENT_SECONDS
            )
            matching = found()
        assert len(matching) >= nth, f"no {name} {fields} (#{nth}): {self.events}"
        return matching[nth - 1]

    def named(self, name: str) -> list[dict[str, Any]]:
        with self._changed:
            return [e for e in self.events if e["event"] == name]

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(30)
        finally:
            self.process.kill()
            self.process.wait()
            self._reader.join(5)
            for stream in (self.process.stdout, self.process.stderr):
                if stream:
                    stream.close()


@pytest.fixture
def worker_of() -> Iterator[Any]:
    started: list[Worker] = []

    def start(project: Project) -> Worker:
        worker = Worker(project)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()


def at(event: dict[str, Any]) -> float:
    return datetime.fromisoformat(event["at"]).timestamp()


def idle(worker: Worker, *, nth: int = 1) -> float:
    """Wait until the worker listens and, having looked for work once more and found none,
    waits (`waiting`); when it listened."""
    listening = worker.wait_for("wake-ups-on", nth=nth)
    worker.wait_for("waiting", after=listening)
    return at(listening)


def test_an_item_created_while_a_worker_idles_starts_before_its_poll_would(
    tmp_path: Path, store_url: str, worker_of: Any
) -> None:
    project = Project(tmp_path / "project", store_url, pollSeconds=LONG_POLL)
    worker = worker_of(project)
    listening = idle(worker)
    item_id, returned = project.create()
    claimed = worker.wait_for("claimed", item_id=item_id)
    started = project.agent_started(claimed["run_id"])
    assert started < listening + LONG_POLL  # the poll after its last look would come later
    assert started - returned < LONG_POLL / 2
    settled = worker.wait_for("settled", item_id=item_id)
    assert settled["state"] == "done"
    # And again, from the wait that followed the settlement.
    worker.wait_for("waiting", after=settled)
    again, returned = project.create()
    claimed = worker.wait_for("claimed", item_id=again)
    assert project.agent_started(claimed["run_id"]) - returned < LONG_POLL / 2


def test_a_due_retry_starts_when_it_is_due_not_at_the_next_poll(
    tmp_path: Path, store_url: str, worker_of: Any
) -> None:
    crash = {"action": "retry", "initialRetryMinutes": 0.05, "maxRetryMinutes": 0.05}  # 3 s
    project = Project(tmp_path / "project", store_url, pollSeconds=LONG_POLL, processCrash=crash)
    worker = worker_of(project)
    idle(worker)
    item_id, _ = project.create("wrighty-example: crash-kill-until 1")
    scheduled = worker.wait_for("retry-scheduled", item_id=item_id)
    due = datetime.fromisoformat(scheduled["not_before"]).timestamp()
    resumed = worker.wait_for("resumed", item_id=item_id)
    started = project.agent_started(resumed["run_id"])
    assert due <= started < at(scheduled) + LONG_POLL  # at its due time, before the poll
    assert started - due < LONG_POLL / 2
    assert worker.wait_for("settled", item_id=item_id, nth=2)["state"] == "done"


def test_a_removed_wake_socket_is_covered_by_polling_and_made_again(
    tmp_path: Path, worker_of: Any
) -> None:
    url = f"sqlite:///{tmp_path / 'project' / '.wrighty' / 'wrighty.db'}"
    project = Project(tmp_path / "project", url, pollSeconds=SHORT_POLL)
    worker = worker_of(project)
    idle(worker)
    wake_dir = tmp_path / "project" / ".wrighty" / "wrighty.db-wake"
    [socket_file] = list(wake_dir.iterdir())
    socket_file.unlink()  # every word sent from now on is lost
    item_id, _ = project.create()
    assert worker.wait_for("settled", item_id=item_id)["state"] == "done"  # found by polling
    lost = worker.wait_for("wake-ups-lost")
    assert "went away" in lost["cause"]
    worker.wait_for("wake-ups-on", nth=2)
    assert [p.name for p in wake_dir.iterdir()] == [socket_file.name]


def test_a_write_that_told_nothing_is_covered_by_polling(
    tmp_path: Path, store_url: str, worker_of: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = Project(tmp_path / "project", store_url, pollSeconds=SHORT_POLL)
    worker = worker_of(project)
    idle(worker)
    store = project.store()
    try:  # a notification lost on the way: the write commits, the word never comes
        monkeypatch.setattr(store, "_work_eligible", lambda tx, item: None)
        new = NewItem("untold", "wrighty-example: succeed", None, None, None, ItemState.QUEUED)
        item = store.create_item(new, at=datetime.now(UTC), actor="test")
    finally:
        store.close()
    assert worker.wait_for("settled", item_id=item.id)["state"] == "done"
    assert worker.named("wake-ups-lost") == []


@pytest.mark.parametrize("store_url", ["postgresql"], indirect=True)
def test_a_killed_listen_connection_is_opened_again_and_wakes_as_before(
    tmp_path: Path, store_url: str, worker_of: Any
) -> None:
    import psycopg

    name = f"wrighty-test-{uuid.uuid4().hex[:8]}"  # this worker's connections, and no other's
    project = Project(tmp_path / "project", f"{store_url}&application_name={name}",
                      pollSeconds=LONG_POLL)  # fmt: skip
    worker = worker_of(project)
    idle(worker)
    with psycopg.connect(store_url, autocommit=True) as admin:
        killed = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE application_name = %s AND query = 'LISTEN wrighty_work'",
            (name,),
        ).fetchall()
    assert len(killed) == 1
    assert worker.wait_for("wake-ups-lost")["error"] == "StoreError"
    listening = idle(worker, nth=2)
    item_id, returned = project.create()
    claimed = worker.wait_for("claimed", item_id=item_id)
    started = project.agent_started(claimed["run_id"])
    assert started < listening + LONG_POLL
    assert started - returned < LONG_POLL / 2


def test_without_wake_ups_the_worker_only_polls(tmp_path: Path, worker_of: Any) -> None:
    url = f"sqlite:///{tmp_path / 'project' / '.wrighty' / 'wrighty.db'}"
    project = Project(tmp_path / "project", url, pollSeconds=LONG_POLL, wakeUps=False)
    worker = worker_of(project)
    waiting = worker.wait_for("waiting")  # its first claim found nothing: it waits its poll
    assert waiting["seconds"] == LONG_POLL
    item_id, _ = project.create()
    store = project.store()
    try:
        assert store.get_item(item_id).state is ItemState.QUEUED  # type: ignore[union-attr]
    finally:
        store.close()
    # That read meant something only while the worker still waited for its poll: nothing but
    # the poll may end that wait, so the item was still queued because nothing woke it.
    assert time.time() < at(waiting) + LONG_POLL, "the machine was too slow to tell"
    assert worker.named("claimed") == []
    assert worker.named("wake-ups-on") == []
    assert not (tmp_path / "project" / ".wrighty" / "wrighty.db-wake").exists()
