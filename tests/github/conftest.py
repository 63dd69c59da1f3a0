"""The local GitHub API, served for each test that asks for it (`github`)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.conftest import postgres_schema
from tests.github.fake_api import FakeGitHub, serving


@dataclass
class ServedGitHub:
    fake: FakeGitHub
    url: str


@pytest.fixture
def github() -> Iterator[ServedGitHub]:
    fake = FakeGitHub()
    with serving(fake) as url:
        yield ServedGitHub(fake, url)


@pytest.fixture
def store_url(backend: str) -> Iterator[str | None]:
    """Each store in turn: None for the project's own SQLite file, a PostgreSQL schema of the
    test's own (as tests/integration/conftest.py's)."""
    if backend == "sqlite":
        yield None
        return
    with postgres_schema() as url:
        yield url
