"""A store as an older wrighty left it: the migrations before a given one applied and recorded,
some rows written by raw SQL, then opened by this wrighty (which migrates it forward)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.conftest import postgres_schema
from wrighty.store.port import Store
from wrighty.store.sqlfiles import migrations, queries


@contextmanager
def store_before(
    backend: str, tmp_path: Path, migration_suffix: str, rows: list[str]
) -> Iterator[Store]:
    """The store of ``backend`` at the schema just before the migration whose name ends in
    ``migration_suffix``, holding ``rows`` (INSERT statements), opened and so migrated."""
    known = migrations(backend)
    newer = next(m for m in known if m.name.endswith(migration_suffix))
    older = [m for m in known if m.version < newer.version]
    if backend == "sqlite":
        from wrighty.store.sqlite import SqliteStore, _run_script

        path = tmp_path / "old.db"
        connection = sqlite3.connect(path, isolation_level=None)
        connection.execute("BEGIN")
        for migration in older:
            _run_script(connection, migration.sql)
        _run_script(connection, queries("sqlite")["create_migrations_table"])
        for migration in older:
            connection.execute(
                "INSERT INTO wrighty_migrations (version, name, applied_at) VALUES (?, ?, 'then')",
                (migration.version, migration.name),
            )
        for row in rows:
            connection.execute(row)
        connection.execute("COMMIT")
        connection.close()
        opened: Store = SqliteStore.open(path)
        try:
            yield opened
        finally:
            opened.close()
        return
    import psycopg

    from wrighty.store.postgres import PostgresStore

    with postgres_schema() as url:
        with psycopg.connect(url, autocommit=True) as server:
            for migration in older:
                server.execute(migration.sql.encode())
            server.execute(queries("postgresql")["create_migrations_table"])
            for migration in older:
                server.execute(
                    "INSERT INTO wrighty_migrations (version, name, applied_at) "
                    "VALUES (%s, %s, 'then')",
                    (migration.version, migration.name),
                )
            for row in rows:
                server.execute(row.encode())
        opened = PostgresStore.open(url)
        try:
            yield opened
        finally:
            opened.close()
