"""Store calls that always end in time: a call under a deadline gives up by it, whatever the
network or another process does, raising StoreError in wrighty's words (docs/fleet.md, "What
wrighty waits for"); the store works again once the fault is gone."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.conftest import FakeClock, open_sqlite, postgres_schema
from tests.faults.proxy import FaultProxy
from tests.store.test_claims import LEASE, acquire, queued
from wrighty.domain.states import ItemState
from wrighty.errors import StoreError
from wrighty.store.deadlines import call_deadline
from wrighty.store.postgres import PostgresStore

SECRET = "s3cret-pw"


@pytest.fixture
def proxy() -> Iterator[FaultProxy]:
    faults = FaultProxy()
    yield faults
    faults.close()


def _through(url: str, proxy: FaultProxy) -> str:
    """``url`` through the proxy, with a password (the test server trusts, never asks for it)."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=f"{parts.username}:{SECRET}@127.0.0.1:{proxy.port}"))


@pytest.mark.timeout(60)  # without the deadline the call never returns
def test_a_call_on_a_frozen_connection_gives_up_by_its_deadline(proxy: FaultProxy) -> None:
    with postgres_schema() as url:
        PostgresStore.open(url, create=True).close()
        store = PostgresStore.open(_through(url, proxy))
        try:
            assert list(store.list_items()) == []
            proxy.freeze()
            with (
                call_deadline(time.monotonic() + 1),
                pytest.raises(StoreError, match="no answer from the database within") as raised,
            ):
                store.list_items()
            assert SECRET not in str(raised.value)
            proxy.forward()
            assert list(store.list_items()) == []  # a new connection: the frozen one was discarded
        finally:
            store.close()


def test_a_refused_server_is_a_store_error(proxy: FaultProxy) -> None:
    with postgres_schema() as url:
        PostgresStore.open(url, create=True).close()
        store = PostgresStore.open(_through(url, proxy))
        try:
            proxy.refuse()
            with call_deadline(time.monotonic() + 1), pytest.raises(StoreError) as raised:
                store.list_items()
            assert SECRET not in str(raised.value)
        finally:
            store.close()


def test_a_sqlite_call_waits_for_a_busy_file_only_until_its_deadline(tmp_path: Path) -> None:
    """Another process's write holds the file past the call's deadline (not past SQLite's own
    10 s): the call gives up rather than wait for it."""
    path = tmp_path / "wrighty.db"
    store = open_sqlite(path)
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    release = threading.Timer(2, other.execute, args=("ROLLBACK",))
    release.start()
    try:
        with (
            call_deadline(time.monotonic() + 0.5),
            pytest.raises(StoreError, match="the store stayed busy"),
        ):
            store.prune_workers(older_than=datetime.now(UTC))
    finally:
        release.join()
        other.close()
        store.close()


def test_the_reaper_skips_a_claim_another_transaction_holds(clock: FakeClock) -> None:
    """A worker stalled inside its renewal holds the item's row: the reaper leaves it (and
    waits for nothing), and reaps it once that transaction has ended."""
    import psycopg

    with postgres_schema() as url:
        store = PostgresStore.open(url, create=True)
        try:
            queued(store, clock)
            claimed = acquire(store, clock)
            clock.advance(LEASE + 1)
            with psycopg.connect(url) as stalled:
                stalled.execute("SELECT 1 FROM items WHERE id = %s FOR UPDATE", (claimed.id,))
                with call_deadline(time.monotonic() + 30):
                    assert store.reap(claimed.id, now=clock(), max_requeues=3) is None
                assert store.get_item(claimed.id).state is ItemState.RUNNING  # type: ignore[union-attr]
            change = store.reap(claimed.id, now=clock(), max_requeues=3)
            assert change is not None
            assert change.after.reason_code == "worker-lost"
        finally:
            store.close()


def test_a_urls_own_session_settings_and_options_are_kept() -> None:
    import psycopg

    with postgres_schema() as url:
        schema = url.rsplit("%3D", 1)[1]
        mine = f"{url}%20-c%20lock_timeout%3D1500ms&keepalives_idle=42"
        store = PostgresStore.open(mine, create=True)
        store.close()
        assert "keepalives_idle=42" in store._conninfo
        with psycopg.connect(store._conninfo) as connection:
            shown = {
                name: connection.execute(f"SHOW {name}").fetchone()[0]  # type: ignore[index]
                for name in ("search_path", "lock_timeout", "statement_timeout",
                             "idle_in_transaction_session_timeout")
            }  # fmt: skip
    assert shown == {
        "search_path": schema,
        "lock_timeout": "1500ms",
        "statement_timeout": "10s",
        "idle_in_transaction_session_timeout": "10s",
    }
