from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.schema_pool import close_pools, pool_for
from wrighty.store import Store
from wrighty.store.sqlite import SqliteStore

START = datetime(2026, 11, 30, 9, 0, 0, tzinfo=UTC)


@dataclass
class FakeClock:
    """Time under the test's control."""

    current: datetime = field(default=START)

    def __call__(self) -> datetime:
        return self.current

    def advance(self, seconds: float) -> datetime:
        self.current += timedelta(seconds=seconds)
        return self.current


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(autouse=True)
def _private_user_dirs(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """Every test gets its own user config dir (installation id) and no ambient wrighty env."""
    home = tmp_path_factory.mktemp("xdg")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    for name in ("WRIGHTY_CONFIG", "WRIGHTY_STORE", "WRIGHTY_RUN_STORE", "WRIGHTY_RUN_PRICING"):
        monkeypatch.delenv(name, raising=False)


def open_sqlite(path: Path) -> SqliteStore:
    return SqliteStore.open(path)


# The PostgreSQL server the suite uses: CI's on 127.0.0.1:5432 unless WRIGHTY_TEST_POSTGRES
# names another. Without one, PostgreSQL tests skip, saying why; with WRIGHTY_REQUIRE_POSTGRES=1
# (set by .ci/run) a missing server fails them instead.
POSTGRES_URL = os.environ.get("WRIGHTY_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")


def postgres_or_skip() -> str:
    """The server's URL, or skip (fail in CI) when it does not answer."""
    import psycopg

    try:
        psycopg.connect(POSTGRES_URL, connect_timeout=3).close()
    except psycopg.OperationalError as error:
        reason = f"no PostgreSQL server at {POSTGRES_URL} ({type(error).__name__})"
        if os.environ.get("WRIGHTY_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"{reason}, and WRIGHTY_REQUIRE_POSTGRES=1 requires one")
        pytest.skip(f"{reason}; set WRIGHTY_TEST_POSTGRES to run the PostgreSQL tests")
    return POSTGRES_URL


@contextmanager
def postgres_schema() -> Iterator[str]:
    """A store URL whose tables live in a new schema of their own, dropped afterwards."""
    import psycopg

    server = postgres_or_skip()
    schema = f"wrighty_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    try:
        yield f"{server}?options=-csearch_path%3D{schema}"
    finally:
        with psycopg.connect(server, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


@contextmanager
def migrated_postgres_schema() -> Iterator[str]:
    """A store URL whose schema is already migrated and empty, the test's own while it lasts:
    taken from this test process's pool and emptied for the next test afterwards
    (tests/schema_pool.py). For a test that opens a store on it, never one that needs a schema
    without tables (`wrighty init`, an older store's migration)."""
    server = postgres_or_skip()
    with pool_for(server).schema() as url:
        yield url


def open_postgres(url: str) -> Store:
    from wrighty.store.postgres import PostgresStore

    return PostgresStore.open(url, create=True)


STORE_BACKENDS = ["sqlite", "postgresql"]


@pytest.fixture(params=STORE_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Each store backend in turn (``sqlite``, ``postgresql``): the one parameter every fixture
    that gives a test a store, a store URL or a project on a store is built on, so that a test
    runs once per backend, with the backend in its id."""
    return str(request.param)


@pytest.fixture
def store(backend: str, tmp_path: Path) -> Iterator[Store]:
    """A fresh, empty store of every backend the contract covers."""
    if backend == "sqlite":
        opened = open_sqlite(tmp_path / "store" / "wrighty.db")
        yield opened
        opened.close()
        return
    with migrated_postgres_schema() as url:
        opened = open_postgres(url)
        yield opened
        opened.close()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "project(**settings): the settings of the `project` fixture's project (make_project's)",
    )


@pytest.fixture
def make_project(tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """The one project factory (docs/testing.md#the-harness): ``make_project(name, **settings)``
    makes an initialised wrighty project at ``tmp_path / name`` ("project" by default), its
    settings those of `tests.integration.worker_process.make_project` (a config, agent
    programs, a store URL, a git repository...): a `ProjectOnDisk`, for a test that runs
    `wrighty`. With ``kind`` (a `WorkerProject` class, tests/integration/harness.py) it is that
    project with its store open (closed after the test), for a test that runs the worker in
    its own process; ``fields`` are then the kind's own fields (an installation id, a clock).
    A test on both stores passes ``store_url=store_url`` (the ``store_url`` fixture, built on
    ``backend``)."""
    from tests.integration.harness import WorkerProject, open_project
    from tests.integration.worker_process import make_project as make
    from tests.integration.worker_process import project_document

    opened: list[WorkerProject] = []

    def made(
        name: str = "project",
        *,
        kind: type[WorkerProject] | None = None,
        fields: dict[str, Any] | None = None,
        **settings: Any,
    ) -> Any:
        root = tmp_path / name
        if kind is None:
            return make(root, **settings)
        project = open_project(kind, root, project_document(root, **settings), **(fields or {}))
        opened.append(project)
        return project

    yield made
    for project in opened:
        project.store.close()


@pytest.fixture
def project(request: pytest.FixtureRequest, make_project: Callable[..., Any]) -> Any:
    """The test's project: ``make_project``'s, with the settings of the test's (or its
    module's) ``@pytest.mark.project(...)`` marker, none without one. A test folder whose
    tests need a project of another sort (a bare folder before `wrighty init`) defines its
    own."""
    marker = request.node.get_closest_marker("project")
    return make_project(**(marker.kwargs if marker else {}))


@pytest.fixture
def git_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git repository (tests.helpers.git_repo) at ``tmp_path / "project"`` on branch main,
    its state folder ignored by a second commit; git, in this process too, reads no settings
    but the repository's. For tests of wrighty's git work, not of a configured project."""
    from tests.helpers import git, git_repo

    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    root = git_repo(tmp_path / "project")
    (root / ".gitignore").write_text(".wrighty/\n")
    git(root, "add", ".gitignore")
    git(root, "commit", "-qm", "ignore wrighty's folder")
    return root


def pytest_sessionfinish(session: pytest.Session) -> None:
    close_pools()  # the pooled PostgreSQL schemas (tests/schema_pool.py) of this process


@pytest.fixture(scope="session", autouse=True)
def _no_process_outlives_the_suite() -> Iterator[None]:
    """After the whole suite, no process started by a test may still be alive."""
    import psutil

    from wrighty.supervisor.owner import release_keeper

    yield
    release_keeper()  # wrighty's keeper of what this process ran lives as long as it does
    me = psutil.Process()
    children = me.children(recursive=True)
    # Exited but not yet reaped (the suite may run as a subreaper, adopting orphans): not alive.
    psutil.wait_procs([p for p in children if _status(p) == psutil.STATUS_ZOMBIE], timeout=1)
    leftovers = [
        p
        for p in children
        if _status(p) not in (psutil.STATUS_ZOMBIE, None)
        and "multiprocessing.resource_tracker" not in " ".join(_cmdline(p))
    ]
    for process in leftovers:
        process.kill()
    assert leftovers == [], f"processes outlived the test suite: {leftovers}"


def _cmdline(process: object) -> list[str]:
    import psutil

    try:
        return process.cmdline()  # type: ignore[attr-defined,no-any-return]
    except psutil.Error:
        return []


def _status(process: object) -> str | None:
    import psutil

    try:
        return process.status()  # type: ignore[attr-defined,no-any-return]
    except psutil.Error:
        return None
