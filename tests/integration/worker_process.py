"""A project on disk and `wrighty worker start` run as a real process, as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import pytest

from wrighty.config import check_config_text
from wrighty.domain.model import Item, NewItem
from wrighty.domain.states import ItemState
from wrighty.store.port import Store
from wrighty.store.sqlite import SqliteStore

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_AGENT = [sys.executable, str(ROOT / "examples" / "agent.py")]


@dataclass
class Finished:
    returncode: int
    events: list[dict[str, Any]]
    stderr: str

    def named(self, name: str) -> list[dict[str, Any]]:
        return [event for event in self.events if event["event"] == name]


@dataclass
class ProjectOnDisk:
    root: Path
    # The store wrighty.json names, when it is not the project's own SQLite file.
    store_url: str | None = None
    # The environment of the commands run; None: the test's own.
    env: dict[str, str] | None = None

    @property
    def config(self) -> Path:
        return self.root / "wrighty.json"

    def store(self) -> Store:
        if self.store_url is None:
            return SqliteStore.open(self.root / ".wrighty" / "wrighty.db")
        if self.store_url.startswith("sqlite:///"):
            return SqliteStore.open(Path(self.store_url.removeprefix("sqlite:///")))
        from wrighty.store.postgres import PostgresStore

        return PostgresStore.open(self.store_url)

    def plant(
        self,
        body: str,
        *,
        title: str = "t",
        timeout_seconds: float | None = None,
        workspace: Path | None = None,
        state: ItemState = ItemState.QUEUED,
    ) -> int:
        """An item written straight to the store, past the CLI's checks."""
        new = NewItem(title, body, None, timeout_seconds, str(workspace) if workspace else None,
                      state)  # fmt: skip
        store = self.store()
        try:
            return store.create_item(new, at=datetime.now(UTC), actor="op").id
        finally:
            store.close()

    def get(self, item_id: int) -> Item:
        store = self.store()
        try:
            item = store.get_item(item_id)
        finally:
            store.close()
        assert item is not None
        return item

    def command(self, *args: str, launcher: Path | None = None) -> list[str]:
        """The argv of `wrighty --config ... ARGS`, through ``launcher`` if given (a script that
        plants a failure, then runs wrighty's main)."""
        start = [sys.executable, str(launcher)] if launcher else [sys.executable, "-m", "wrighty"]
        return [*start, "--config", str(self.config), *args]

    def wrighty(self, *args: str) -> str:
        """Run `wrighty ARGS` in the project, as its user would; its standard output (the test
        fails if it exits other than 0)."""
        done = subprocess.run(
            self.command(*args), cwd=self.root, env=self.env, capture_output=True, text=True,
            timeout=60, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    def worker(self, *args: str, launcher: Path | None = None, timeout: float = 60) -> Finished:
        """Run `wrighty worker start --json ARGS` to its end."""
        done = subprocess.run(
            self.command("worker", "start", "--json", *args, launcher=launcher),
            cwd=self.root,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        return Finished(done.returncode, events, done.stderr)


def make_project(
    root: Path, *, worker: dict[str, Any] | None = None, agents: dict[str, Any] | None = None
) -> ProjectOnDisk:
    """A project whose default agent is the example agent (examples/agent.py), with short
    timings; ``worker`` and ``agents`` add to or replace its settings."""
    document = {
        "worker": {"defaultAgent": "example", "leaseSeconds": 5, "heartbeatSeconds": 0.5,
                   "pollSeconds": 0.1, **(worker or {})},
        "agents": agents or {"example": {"adapter": "command", "command": EXAMPLE_AGENT}},
    }  # fmt: skip
    config, problems = check_config_text(json.dumps(document))
    assert config is not None, problems
    root.mkdir(parents=True, exist_ok=True)
    (root / "wrighty.json").write_text(json.dumps(document))
    SqliteStore.open(root / ".wrighty" / "wrighty.db").close()
    return ProjectOnDisk(root)


class LiveWorker:
    """`wrighty worker start --json ARGS` in the background, read event by event."""

    def __init__(self, project: ProjectOnDisk, *args: str) -> None:
        self.process = subprocess.Popen(
            project.command("worker", "start", "--json", *args),
            cwd=project.root, env=project.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        self.events: list[dict[str, Any]] = []

    def until(self, wanted: str, **fields: Any) -> dict[str, Any]:
        stdout: IO[str] | None = self.process.stdout
        assert stdout is not None
        for line in stdout:
            event = json.loads(line)
            self.events.append(event)
            if event["event"] == wanted and all(event.get(k) == v for k, v in fields.items()):
                return event
        pytest.fail(f"the worker ended before a {wanted} event: {self.events}")

    def finish(self) -> tuple[int, str]:
        out, err = self.process.communicate(timeout=60)
        self.events += [json.loads(line) for line in out.splitlines()]
        return self.process.returncode, err
