"""The numbered migrations and schema.sql must describe the same database."""

from __future__ import annotations

import re
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
    # As the store's runner applies them (wrighty/store/sqlite.py): 0017 rebuilds items.
    connection.execute("PRAGMA foreign_keys = OFF")
    connection.execute("PRAGMA legacy_alter_table = ON")
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


# -- PostgreSQL ---------------------------------------------------------------------------------

_PG_SHAPE = {
    "columns": "SELECT table_name, column_name, data_type, is_nullable, column_default "
    "FROM information_schema.columns WHERE table_schema = current_schema() "
    "ORDER BY table_name, column_name",
    "indexes": "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() "
    "ORDER BY indexname",
    "constraints": "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
    "WHERE connamespace = current_schema()::regnamespace ORDER BY conname",
    "triggers": "SELECT tgname, pg_get_triggerdef(oid) FROM pg_trigger "
    "WHERE tgrelid::regclass::text NOT LIKE 'pg_%' AND NOT tgisinternal "
    # this schema's alone: other tests build and drop schemas of their own meanwhile
    "AND tgrelid IN (SELECT oid FROM pg_class WHERE relnamespace = current_schema()::regnamespace) "
    "ORDER BY tgname",
    "functions": "SELECT proname, prosrc FROM pg_proc "
    "WHERE pronamespace = current_schema()::regnamespace ORDER BY proname",
}


def _pg_shape(scripts: list[str]) -> dict[str, object]:
    import psycopg

    from tests.conftest import postgres_schema

    with postgres_schema() as url, psycopg.connect(url, autocommit=True) as connection:
        for script in scripts:
            connection.execute(script.encode())
        shape = {name: connection.execute(query).fetchall() for name, query in _PG_SHAPE.items()}
    # Index and trigger definitions name the schema, which differs between the two builds.
    return {
        name: [tuple(re.sub(r"wrighty_test_\w+\.", "", str(v)) for v in row) for row in rows]
        for name, rows in shape.items()
    }


def test_postgresql_migrations_build_exactly_the_current_schema() -> None:
    migrated = _pg_shape([m.sql for m in migrations("postgresql")])
    current = _pg_shape([read_sql("postgresql", "schema.sql")])
    assert migrated == current


def test_two_processes_opening_a_new_postgresql_store_together_migrate_it_once() -> None:
    import concurrent.futures

    import psycopg

    from tests.conftest import postgres_schema
    from wrighty.store.postgres import PostgresStore

    with postgres_schema() as url:
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            stores = list(pool.map(lambda _: PostgresStore.open(url, create=True), range(4)))
        # what `wrighty init` prints: exactly one "created store"
        assert sorted(store.opened for store in stores) == ["created", "opened", "opened", "opened"]
        for store in stores:
            assert store.schema_version() == migrations("postgresql")[-1].version
            store.close()
        with psycopg.connect(url) as connection:
            rows = connection.execute("SELECT version FROM wrighty_migrations").fetchall()
        assert rows == [(m.version,) for m in migrations("postgresql")]


def test_an_older_postgresql_store_is_migrated_forward_and_keeps_its_items() -> None:
    """A store one migration behind (before the usage ledger) opens migrated, keeps its
    items, and takes a circuit write."""
    import psycopg

    from tests.conftest import postgres_schema
    from wrighty.domain.circuits import Circuit, opened
    from wrighty.store.postgres import PostgresStore

    known = migrations("postgresql")
    with postgres_schema() as url:
        with psycopg.connect(url, autocommit=True) as connection:
            for migration in known[:-1]:
                connection.execute(migration.sql.encode())
            connection.execute(queries("postgresql")["create_migrations_table"])
            for migration in known[:-1]:
                connection.execute(
                    "INSERT INTO wrighty_migrations (version, name, applied_at) "
                    "VALUES (%s, %s, 'then')",
                    (migration.version, migration.name),
                )
            connection.execute(
                "INSERT INTO items (title, body, state, queued_at, created_at, updated_at) "
                "VALUES ('kept', 'task', 'queued', '2026-01-01T00:00:00.000000Z', "
                "'2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:00.000000Z')"
            )
        store = PostgresStore.open(url)
        try:
            assert (store.opened, store.schema_version()) == ("migrated", known[-1].version)
            [item] = store.list_items()
            assert (item.title, item.state.value) == ("kept", "queued")
            absent = Circuit("account:team")
            moment = item.created_at
            after = opened(absent, at=moment, until=moment, reason="429")
            assert store.write_circuit(absent, after, at=moment)
            assert store.get_circuit("account:team").version == 1
        finally:
            store.close()
