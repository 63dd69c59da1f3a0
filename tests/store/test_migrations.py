"""The numbered migrations and schema.sql must describe the same database."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from wrighty.store.sqlfiles import migrations, queries, read_sql
from wrighty.store.sqlite import SqliteStore, _run_script


def _shape(connection: sqlite3.Connection) -> dict[str, object]:
    """Tables, columns, indexes and triggers, normalised for comparison."""
    objects = connection.execute(
        "SELECT type, name, tbl_name FROM sqlite_master "
        "WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name"
    ).fetchall()
    shape: dict[str, object] = {"objects": objects}
    for _, name, _ in (o for o in objects if o[0] == "table"):
        shape[f"columns:{name}"] = connection.execute(f"PRAGMA table_info({name})").fetchall()
        shape[f"fks:{name}"] = connection.execute(f"PRAGMA foreign_key_list({name})").fetchall()
    for _, name, _ in (o for o in objects if o[0] == "index"):
        shape[f"index:{name}"] = connection.execute(f"PRAGMA index_xinfo({name})").fetchall()
    sql_text = connection.execute(
        "SELECT name, sql FROM sqlite_master WHERE type IN ('trigger', 'index', 'table') "
        "AND sql IS NOT NULL ORDER BY name"
    ).fetchall()
    # ALTER TABLE rewrites the stored CREATE text; compare it without whitespace.
    shape["sql"] = [(name, "".join(sql.split())) for name, sql in sql_text]
    return shape


def _build(tmp_path: Path, name: str, scripts: list[str]) -> sqlite3.Connection:
    connection = sqlite3.connect(tmp_path / name, isolation_level=None)
    connection.execute("BEGIN")
    for script in scripts:
        _run_script(connection, script)
    connection.execute("COMMIT")
    return connection


def test_migrations_build_exactly_the_current_schema(tmp_path: Path) -> None:
    migrated = _build(tmp_path, "migrated.db", [m.sql for m in migrations("sqlite")])
    current = _build(tmp_path, "current.db", [read_sql("sqlite", "schema.sql")])
    assert _shape(migrated) == _shape(current)


def test_migrations_are_numbered_without_gaps() -> None:
    versions = [m.version for m in migrations("sqlite")]
    assert versions == list(range(1, len(versions) + 1))


def test_an_older_store_is_migrated_forward_and_keeps_its_items(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    first = migrations("sqlite")[0]
    old = _build(tmp_path, "old.db", [first.sql, queries("sqlite")["create_migrations_table"]])
    old.execute(
        "INSERT INTO wrighty_migrations (version, name, applied_at) VALUES (?, ?, 'then')",
        (first.version, first.name),
    )
    old.execute(
        "INSERT INTO items (title, body, state, queued_at, created_at, updated_at) VALUES "
        "('kept', 'task', 'queued', '2026-01-01T00:00:00.000000Z', "
        "'2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:00.000000Z')"
    )
    old.close()
    store = SqliteStore.open(path)
    assert store.schema_version() == migrations("sqlite")[-1].version
    [item] = store.list_items()
    assert (item.title, item.state.value, item.claimed_at) == ("kept", "queued", None)
    store.close()
    current = _build(tmp_path, "current.db", [read_sql("sqlite", "schema.sql")])
    upgraded = sqlite3.connect(path)
    upgraded.execute("DROP TABLE wrighty_migrations")
    assert _shape(upgraded) == _shape(current)
