"""What is particular to the SQLite store: files, modes, pragmas, refusals, triggers, races."""

from __future__ import annotations

import multiprocessing
import sqlite3
import stat
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.helpers import snapshot
from tests.store.test_contract import new_item
from wrighty.domain.states import ItemState
from wrighty.domain.transitions import replay, transition
from wrighty.errors import StoreError
from wrighty.store.sqlfiles import migrations
from wrighty.store.sqlite import SqliteStore

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def test_a_new_store_is_private_and_in_wal_mode_with_full_sync(tmp_path: Path) -> None:
    path = tmp_path / "state" / "wrighty.db"
    store = SqliteStore.open(path)
    store.close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    connection = sqlite3.connect(path)
    assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    connection.close()
    # synchronous is per connection: check the store's own one.
    store = SqliteStore.open(path)
    assert store._connection.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert store._connection.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    store.close()


def test_reopening_keeps_data_and_applies_no_migration_twice(tmp_path: Path) -> None:
    path = tmp_path / "wrighty.db"
    store = SqliteStore.open(path)
    item = store.create_item(new_item(), at=NOW, actor="operator")
    store.close()
    again = SqliteStore.open(path)
    assert again.get_item(item.id) == item
    assert again.schema_version() == migrations("sqlite")[-1].version
    rows = again._connection.execute("SELECT count(*) FROM wrighty_migrations").fetchone()[0]
    assert rows == len(migrations("sqlite"))
    again.close()


def test_a_file_that_is_not_sqlite_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "wrighty.db"
    path.write_text("these are my notes, not a database\n")
    before = snapshot(tmp_path)
    with pytest.raises(StoreError, match="not a SQLite database"):
        SqliteStore.open(path)
    assert snapshot(tmp_path) == before


def test_another_programs_database_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE recipes (name TEXT)")
    connection.commit()
    connection.close()
    before = snapshot(tmp_path)
    with pytest.raises(StoreError, match="not a wrighty store"):
        SqliteStore.open(path)
    assert snapshot(tmp_path) == before


def test_a_store_from_a_newer_wrighty_is_refused_not_migrated_down(tmp_path: Path) -> None:
    path = tmp_path / "wrighty.db"
    SqliteStore.open(path).close()
    connection = sqlite3.connect(path)
    connection.execute(
        "INSERT INTO wrighty_migrations (version, name, applied_at) VALUES (999, 'future', 'x')"
    )
    connection.commit()
    connection.close()
    before = snapshot(tmp_path)
    with pytest.raises(StoreError, match="newer wrighty"):
        SqliteStore.open(path)
    assert snapshot(tmp_path) == before


def test_a_location_that_cannot_hold_a_file_is_refused(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("x")
    with pytest.raises(StoreError, match="cannot create the store"):
        SqliteStore.open(blocker / "wrighty.db")
    with pytest.raises(StoreError, match="is a directory"):
        SqliteStore.open(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["not-a-directory"]


def test_history_and_final_states_are_protected_below_the_code(tmp_path: Path) -> None:
    store = SqliteStore.open(tmp_path / "wrighty.db")
    item = store.create_item(new_item(), at=NOW, actor="operator")
    assert store.write_transition(transition(item, ItemState.CANCELLED, at=NOW, actor="operator"))
    store.close()
    raw = sqlite3.connect(tmp_path / "wrighty.db")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        raw.execute("DELETE FROM item_events")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        raw.execute("UPDATE item_events SET actor = 'someone else'")
    with pytest.raises(sqlite3.IntegrityError, match="final"):
        raw.execute("UPDATE items SET state = 'queued'")
    raw.close()


def _race_to_move(
    path: str, item_id: int, target: str, ready: object, start: object, results: object
) -> None:
    store = SqliteStore.open(Path(path))
    item = store.get_item(item_id)
    assert item is not None
    change = transition(item, ItemState(target), at=NOW, actor=f"racer-{target}")
    ready.put(True)  # type: ignore[attr-defined]
    start.wait()  # type: ignore[attr-defined]
    results.put(store.write_transition(change))  # type: ignore[attr-defined]
    store.close()


def test_processes_racing_on_one_file_exactly_one_wins(tmp_path: Path) -> None:
    path = tmp_path / "wrighty.db"
    store = SqliteStore.open(path)
    item = store.create_item(new_item(), at=NOW, actor="operator")
    context = multiprocessing.get_context("spawn")
    ready = context.Queue()
    start = context.Event()
    results = context.Queue()
    targets = ["queued", "cancelled"] * 3
    processes = [
        context.Process(target=_race_to_move, args=(str(path), item.id, t, ready, start, results))
        for t in targets
    ]
    for process in processes:
        process.start()
    for _ in processes:  # every racer has read the item before anyone writes
        ready.get(timeout=60)
    start.set()
    outcomes = [results.get(timeout=60) for _ in processes]
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    assert sorted(outcomes) == [False] * 5 + [True]
    assert len(store.list_events(item.id)) == 2
    assert replay(store.list_events(item.id)) is store.get_item(item.id).state  # type: ignore[union-attr]
    store.close()


def test_a_store_is_created_only_when_asked_in_private_folders(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no store here; run `wrighty init`"):
        SqliteStore.open(tmp_path / "a" / "b" / "wrighty.db", create=False)
    assert list(tmp_path.iterdir()) == []
    store = SqliteStore.open(tmp_path / "a" / "b" / "wrighty.db", create=True)
    assert store.opened == "created"
    store.close()
    # every folder made on the way is private, not only the last one
    assert stat.S_IMODE((tmp_path / "a").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "a" / "b").stat().st_mode) == 0o700
    assert [p.name for p in (tmp_path / "a" / "b").iterdir()] == ["wrighty.db"]
    again = SqliteStore.open(tmp_path / "a" / "b" / "wrighty.db", create=False)
    assert again.opened == "opened"
    again.close()


@pytest.mark.parametrize("create", [False, True], ids=["open", "init"])
def test_an_empty_file_is_not_a_store_and_is_left_alone(tmp_path: Path, create: bool) -> None:
    path = tmp_path / "wrighty.db"
    path.touch()
    before = snapshot(tmp_path)
    with pytest.raises(StoreError) as refused:
        SqliteStore.open(path, create=create)
    assert "is empty (0 bytes), so it is not a wrighty store" in str(refused.value)
    assert "restore it from a backup, or move it away and run `wrighty init`" in str(refused.value)
    assert snapshot(tmp_path) == before


def test_an_empty_file_beside_a_wal_is_refused_and_the_wal_kept(tmp_path: Path) -> None:
    # SQLite takes an empty file for a new database and deletes the -wal beside it: the writes
    # not yet checkpointed would be gone.
    path = tmp_path / "wrighty.db"
    path.touch()
    (tmp_path / "wrighty.db-wal").write_bytes(b"\x37\x7f\x06\x82" + bytes(4092))
    before = snapshot(tmp_path)
    with pytest.raises(StoreError, match=r"wrighty\.db-wal beside it is not: the store was cut"):
        SqliteStore.open(path, create=False)
    assert snapshot(tmp_path) == before


def test_a_database_without_tables_becomes_a_store_only_through_init(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA user_version = 7")  # a valid database file with no table
    connection.commit()
    connection.close()
    before = snapshot(tmp_path)
    with pytest.raises(StoreError, match="not a wrighty store yet; run `wrighty init`"):
        SqliteStore.open(path, create=False)
    assert snapshot(tmp_path) == before
    store = SqliteStore.open(path, create=True)
    assert (store.opened, store.schema_version()) == ("migrated", migrations("sqlite")[-1].version)
    store.close()


def test_a_creation_that_fails_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def disk_full(connection: sqlite3.Connection, script: str) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr("wrighty.store.sqlite._run_script", disk_full)
    path = tmp_path / "state" / "deeper" / "wrighty.db"
    with pytest.raises(StoreError, match="no space left on device") as refused:
        SqliteStore.open(path, create=True)
    assert str(refused.value).startswith(f"{path}: ")
    assert list(tmp_path.iterdir()) == []  # no file, no -wal, no -shm, no folder made for them
