"""The web console in process (Starlette's TestClient) on a project of each store backend:
a SQLite file beside wrighty.json, or a PostgreSQL schema of the test's own named by --store."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from tests.cli.conftest import clock
from tests.conftest import FakeClock, migrated_postgres_schema
from tests.inbox.conftest import _utc, make_project
from wrighty.cli.serve import DeskOpener
from wrighty.operator.context import AppContext
from wrighty.operator.desk import board_settings
from wrighty.store.port import Store
from wrighty.web.app import WebSettings, create_app
from wrighty.web.security import allowed_hosts

__all__ = ["_utc", "clock"]

TOKEN = "k" * 43
BASE = "http://127.0.0.1:8765"


@dataclass
class Console:
    """A console on a project: its context (the store the commands would open), and a
    client that has not logged in."""

    app_ctx: AppContext
    client: TestClient
    project: Path

    def store(self):  # type: ignore[no-untyped-def]
        return self.app_ctx.store()

    def login(self) -> TestClient:
        response = self.client.get(f"/?token={TOKEN}")
        assert response.status_code == 200, response.text
        return self.client


def make_console(app_ctx: AppContext, project: Path, *, read_only: bool = False) -> Console:
    settings = WebSettings(TOKEN, allowed_hosts("127.0.0.1", 8765), read_only=read_only)
    app = create_app(DeskOpener(app_ctx, board_settings(app_ctx)), settings)
    return Console(app_ctx, TestClient(app, base_url=BASE), project)


@pytest.fixture
def project_ctx(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[AppContext]:
    """An initialised project and the context the commands run under, on each backend."""
    project = make_project(tmp_path / "project", monkeypatch)
    if backend == "sqlite":
        yield AppContext(config_option=None, store_option=None, cwd=project)
        return
    with migrated_postgres_schema() as url:  # the schema's tables, from the pool
        yield AppContext(config_option=None, store_option=url, cwd=project)


@pytest.fixture
def console(project_ctx: AppContext, clock: FakeClock) -> Iterator[Console]:
    made = make_console(project_ctx, project_ctx.cwd)
    with made.client:
        yield made


def programs_on_path(folder: Path, *names: str) -> Path:
    """``folder`` holding a stand-in program (a script that does nothing) for each name."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        program = folder / name
        program.write_text("#!/bin/sh\nexit 0\n")
        program.chmod(0o755)
    return folder


@pytest.fixture
def vendor_clis(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This machine, as the console sees it, with `codex` and `gemini` installed and `claude`
    not: PATH is a folder holding only their stand-ins, whatever the machine has."""
    folder = programs_on_path(tmp_path / "vendor-bin", "codex", "gemini")
    monkeypatch.setenv("PATH", str(folder))
    return folder


def history(app_ctx: AppContext, item_id: int) -> list[tuple[object, ...]]:
    """An item's events, as comparable tuples."""
    with app_ctx.store() as store:
        return [
            (e.at, e.actor, e.generation, e.from_state, e.to_state, e.reason_code, e.reason)
            for e in store.list_events(item_id)
        ]


def seeded(app_ctx: AppContext, clock: FakeClock, **kwargs: object):  # type: ignore[no-untyped-def]
    from tests.inbox.seed import seed_store

    with app_ctx.store() as store:
        return seed_store(store, clock, **kwargs)  # type: ignore[arg-type]


__all__ += ["Store"]
