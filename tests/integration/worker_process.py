"""A project on disk and `wrighty worker start` run as a real process, as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import pytest

from tests.helpers import git as run_git
from tests.helpers import git_env
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

    def store(self, *, create: bool = False) -> Store:
        """The project's store, opened (its PostgreSQL tables made first when ``create``)."""
        if self.store_url is None:
            return SqliteStore.open(self.root / ".wrighty" / "wrighty.db")
        if self.store_url.startswith("sqlite:///"):
            return SqliteStore.open(Path(self.store_url.removeprefix("sqlite:///")))
        from wrighty.store.postgres import PostgresStore

        return PostgresStore.open(self.store_url, create=create)

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


def project_document(
    root: Path,
    *,
    worker: dict[str, Any] | None = None,
    agents: dict[str, Any] | None = None,
    programs: dict[str, str | tuple[str, str]] | None = None,
    resumable: bool | Collection[str] = False,
    timings: bool = True,
    store_url: str | None = None,
    **sections: Any,
) -> dict[str, Any]:
    """The wrighty.json of `make_project`'s project at ``root`` (made if missing), its agents'
    ``programs`` written there: for a test that runs the worker in its own process
    (tests/integration/harness.py's `open_project`) as for one that runs `wrighty`."""
    root.mkdir(parents=True, exist_ok=True)
    configured = dict(agents or {})
    for name, program in (programs or {}).items():
        file, source = program if isinstance(program, tuple) else (f"{name}.py", program)
        (root / file).write_text(source)
        argv = [sys.executable, str(root / file)]
        resumes = resumable if isinstance(resumable, bool) else name in resumable
        resume = {"resumeCommand": argv} if resumes else {}
        configured[name] = {
            "adapter": "command",
            "command": argv,
            **resume,
            **configured.get(name, {}),
        }
    default = next(iter(programs)) if programs else "example"
    short = {"leaseSeconds": 5, "heartbeatSeconds": 0.5, "pollSeconds": 0.1} if timings else {}
    document: dict[str, Any] = {
        "worker": {"defaultAgent": default, **short, **(worker or {})},
        "agents": configured or {"example": {"adapter": "command", "command": EXAMPLE_AGENT}},
        **sections,
    }  # fmt: skip
    if store_url is not None:
        document["store"] = {**document.get("store", {}), "url": store_url}
    return document


def make_project(
    root: Path,
    *,
    worker: dict[str, Any] | None = None,
    agents: dict[str, Any] | None = None,
    programs: dict[str, str | tuple[str, str]] | None = None,
    resumable: bool | Collection[str] = False,
    timings: bool = True,
    store_url: str | None = None,
    create_store: bool = True,
    git: bool = False,
    committed: bool = True,
    env: dict[str, str] | None = None,
    **sections: Any,
) -> ProjectOnDisk:
    """The one way a test makes a wrighty project on disk (docs/testing.md#the-harness): a
    folder at ``root`` with a wrighty.json that checks clean and, unless not ``create_store``,
    its store made. Its default agent is the example agent (examples/agent.py), with short
    timings (lease 5 s, heartbeat 0.5 s, poll 0.1 s; wrighty's own defaults unless
    ``timings``); ``worker`` adds to or replaces those settings, ``agents`` the agents (or adds
    settings to a program's agent).

    ``programs`` maps agent names to Python programs: each is written to ``root/NAME.py`` (or
    to the file a ``(file name, program)`` pair names) and run by the command adapter (also as
    its resume command when ``resumable``: True, or the names of the agents that resume), the
    first the default agent. ``store_url`` names the
    store (None: the project's own SQLite file; a test on both stores passes the
    ``store_url`` fixture). ``git`` makes ``root`` a repository on branch main whose first
    commit (none unless ``committed``) holds the project, its state folder and logs ignored
    (the commands then run in `git_env`). ``env`` adds to the commands' environment (no
    WRIGHTY_ variables from outside); ``sections`` are wrighty.json's other sections
    (``verify``, ``completion``, ``notify``...)."""
    document = project_document(
        root, worker=worker, agents=agents, programs=programs, resumable=resumable,
        timings=timings, store_url=store_url, **sections,
    )  # fmt: skip
    config, problems = check_config_text(json.dumps(document))
    assert config is not None, problems
    (root / "wrighty.json").write_text(json.dumps(document))
    commands_env = None
    if git:
        (root / ".gitignore").write_text(".wrighty/\n*.log\n")
        run_git(root, "init", "-q", "-b", "main")
        run_git(root, "config", "user.name", "Test Person")
        run_git(root, "config", "user.email", "test@example.invalid")
        if committed:
            run_git(root, "add", "-A")
            run_git(root, "commit", "-qm", "the project")
        commands_env = git_env()
    if env is not None:
        base = {k: v for k, v in os.environ.items() if not k.startswith("WRIGHTY_")}
        commands_env = {**(commands_env or base), **env}
    project = ProjectOnDisk(root, store_url, env=commands_env)
    if create_store:
        project.store(create=True).close()
    return project


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
