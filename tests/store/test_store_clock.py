"""The store's own clock, the fleet's time (docs/fleet.md#one-time-for-the-fleet): PostgreSQL
reads the database's; SQLite has none (its workers share one machine's clock). A command on
PostgreSQL whose clock the test fixes still writes exactly that time: a machine that shares the
database's clock has no offset to apply."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.cli.conftest import wrighty
from tests.conftest import FakeClock, open_postgres, postgres_schema
from wrighty.domain.clocks import RESOLUTION_SECONDS
from wrighty.operator import context
from wrighty.store import Store
from wrighty.store.sqlite import SqliteStore


def test_the_store_reads_its_own_clock_and_sqlite_has_none(store: Store) -> None:
    before = datetime.now(UTC)
    reading = store.store_time()
    after = datetime.now(UTC)
    if isinstance(store, SqliteStore):
        assert reading is None
        return
    assert reading is not None
    assert reading.utcoffset() == timedelta(0)
    # The same machine's clock, read during the call (clock_timestamp(), not the
    # transaction's start).
    slack = timedelta(seconds=RESOLUTION_SECONDS)
    assert before - slack <= reading <= after + slack


def test_a_command_on_postgresql_writes_the_time_its_clock_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fixed = FakeClock()
    monkeypatch.setattr(context, "clock", fixed)
    monkeypatch.chdir(tmp_path)
    with postgres_schema() as url:
        open_postgres(url).close()
        created = wrighty("--store", url, "create", "--title", "t", "--body", "b", "--json")
        assert created.exit_code == 0, created.output
        store = open_postgres(url)
        try:
            item = store.get_item(json.loads(created.output)["id"])
        finally:
            store.close()
    assert item is not None
    assert item.created_at == fixed()  # to the microsecond
