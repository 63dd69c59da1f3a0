"""Migrated PostgreSQL schemas that a test process hands from one test to the next.

A new schema costs its migrations (every table, trigger and function built anew, then dropped
with the schema), about ten times what emptying one costs. So a test that only needs an empty,
migrated store takes a schema from this pool; when it is done the pool empties the schema's
tables (their identity columns start at 1 again) and keeps it for the next test, but only if
its structure is what the migrations built: a test that altered a table, dropped a trigger or
rewrote `wrighty_migrations` leaves a schema that is dropped instead. A schema whose rows cannot
be deleted at once (a connection some test left open holds a lock) is dropped too, as a schema
of its own was before. Each test process (each xdist worker) has its own pool, so no two tests
ever share a schema at the same time; the pool drops its schemas when the session ends.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

PREFIX = "wrighty_test_"

# The structure of a schema, with the schema's own name taken out, to compare with the one the
# migrations built: tables and their columns, constraints, indexes, triggers, functions, and
# the migrations the store believes it ran.
_STRUCTURE = """
SELECT 'column ' || c.relname || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
       || ' ' || a.attnotnull::text || ' ' || a.attidentity::text || ' '
       || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE c.relnamespace = %(schema)s::regnamespace AND a.attnum > 0 AND NOT a.attisdropped
UNION ALL
SELECT 'constraint ' || conrelid::regclass::text || ' ' || conname || ' '
       || pg_get_constraintdef(oid)
FROM pg_constraint WHERE connamespace = %(schema)s::regnamespace
UNION ALL
SELECT 'index ' || pg_get_indexdef(i.indexrelid)
FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
WHERE c.relnamespace = %(schema)s::regnamespace
UNION ALL
SELECT 'trigger ' || pg_get_triggerdef(t.oid)
FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
WHERE c.relnamespace = %(schema)s::regnamespace AND NOT t.tgisinternal
UNION ALL
SELECT 'function ' || proname || ' ' || md5(prosrc)
FROM pg_proc WHERE pronamespace = %(schema)s::regnamespace
UNION ALL
SELECT 'relation ' || relname || ' ' || relkind::text
FROM pg_class WHERE relnamespace = %(schema)s::regnamespace
"""

# Every table but the migrations' own, with its identity column if it has one.
_TABLES = """
SELECT c.relname AS table_name, a.attname AS identity
FROM pg_class c
LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attidentity <> '' AND NOT a.attisdropped
WHERE c.relnamespace = %(schema)s::regnamespace AND c.relkind = 'r'
  AND c.relname <> 'wrighty_migrations'
"""


def _admin(server: str) -> Any:
    """An autocommit connection to the server (psycopg loaded only by the PostgreSQL tests)."""
    import psycopg

    return psycopg.connect(server, autocommit=True)


class SchemaPool:
    """Migrated, empty schemas on one server, for one test process."""

    def __init__(self, server: str) -> None:
        self._server = server
        self._free: list[str] = []
        self._structure: list[str] | None = None  # what the migrations build

    @contextmanager
    def schema(self) -> Iterator[str]:
        """A store URL whose schema is migrated and empty, this test's alone while it lasts."""
        name = self._free.pop() if self._free else self._new()
        try:
            yield self.url(name)
        finally:
            self._give_back(name)

    def url(self, name: str) -> str:
        return f"{self._server}?options=-csearch_path%3D{name}"

    def close(self) -> None:
        """Drop every schema the pool keeps."""
        while self._free:
            self._drop(self._free.pop())

    def _new(self) -> str:
        from wrighty.store.postgres import PostgresStore

        name = f"{PREFIX}{uuid.uuid4().hex[:12]}"
        with _admin(self._server) as admin:
            admin.execute(f"CREATE SCHEMA {name}")
        PostgresStore.open(self.url(name), create=True).close()
        if self._structure is None:
            with _admin(self._server) as admin:
                self._structure = _structure_of(admin, name)
        return name

    def _give_back(self, name: str) -> None:
        import psycopg

        try:
            with _admin(self._server) as admin:
                kept = _structure_of(admin, name) == self._structure and _emptied(admin, name)
        except psycopg.Error:  # a test dropped wrighty_migrations, say
            kept = False
        if kept:
            self._free.append(name)
        else:
            self._drop(name)

    def _drop(self, name: str) -> None:
        with _admin(self._server) as admin:
            admin.execute(f"DROP SCHEMA {name} CASCADE")


def _structure_of(admin: Any, name: str) -> list[str]:
    """What the schema ``name`` is made of (its rows aside), comparable across schemas."""
    rows = admin.execute(_STRUCTURE, {"schema": name}).fetchall()
    migrations = admin.execute(
        f"SELECT version, name FROM {name}.wrighty_migrations ORDER BY version"
    ).fetchall()
    found = [str(row[0]).replace(name, "SCHEMA") for row in rows]
    return sorted(found) + [f"migration {version} {ran}" for version, ran in migrations]


def _emptied(admin: Any, name: str) -> bool:
    """Delete every row (the history's triggers, which refuse it, are off for this one
    transaction) and restart the identities; False when a lock held elsewhere stops it."""
    import psycopg

    try:
        with admin.transaction():
            admin.execute("SET LOCAL lock_timeout = '2s'")
            admin.execute("SET LOCAL session_replication_role = replica")
            for table, identity in admin.execute(_TABLES, {"schema": name}).fetchall():
                admin.execute(f"DELETE FROM {name}.{table}")
                if identity is not None:
                    admin.execute(f"ALTER TABLE {name}.{table} ALTER COLUMN {identity} RESTART")
    except psycopg.errors.LockNotAvailable:
        return False
    return True


_pools: dict[str, SchemaPool] = {}


def pool_for(server: str) -> SchemaPool:
    """This process's pool on ``server``."""
    if server not in _pools:
        _pools[server] = SchemaPool(server)
    return _pools[server]


def empty(url: str) -> None:
    """Empty the schema of ``url`` (one the pool gave) as the pool does between tests."""
    server, _, options = url.partition("?")
    name = options.rpartition("search_path%3D")[2]
    with _admin(server) as admin:
        assert _emptied(admin, name), f"a lock held elsewhere kept {name} from being emptied"


def close_pools() -> None:
    """Drop every pooled schema of this process: at the end of its pytest session (a guard
    row's pytest ends with os._exit, which runs no exit handler)."""
    for pool in _pools.values():
        pool.close()
