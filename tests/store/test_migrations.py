"""The numbered migrations and schema.sql must describe the same database."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from wrighty.store.sqlfiles import migrations, read_sql
from wrighty.store.sqlite import _run_script


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
