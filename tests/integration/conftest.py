"""Fixtures the integration tests share (some with the unit tests)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import postgres_schema
from tests.unit.test_notify_sinks import receiver  # noqa: F401  (a local HTTP sink)


@pytest.fixture
def store_url(backend: str) -> Iterator[str | None]:
    """Each store in turn, for a project's wrighty.json: None for the project's own SQLite
    file (the default store.url), a PostgreSQL schema of the test's own. A test module may
    define its own ``store_url``."""
    if backend == "sqlite":
        yield None
        return
    with postgres_schema() as url:
        yield url
