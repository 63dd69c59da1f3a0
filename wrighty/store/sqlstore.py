"""The store port on a SQL database, shared by the SQLite and PostgreSQL adapters.

A dialect supplies its transactions (`_write`, `_snapshot`), its plain reads (`_rows`), its
wake-ups and its named queries (`sqlbase.py`). Everything else is written once, an aggregate a
module: items and the guarded write of a change (`items.py`), claims, runs, sessions and the
reaper (`claims.py`), landing (`landings.py`), verification's evidence (`checks.py`), the
usage ledger (`ledger.py`), the worker registry (`registry.py`), provider circuits
(`circuits.py`) and the notification outbox (`outbox.py`), each reading and writing rows
only through `rows.py`. This class puts them together, and brings a schema up to date.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Literal

from wrighty.store.checks import ChecksSql
from wrighty.store.circuits import CircuitsSql
from wrighty.store.fields import to_db_time
from wrighty.store.landings import LandingsSql
from wrighty.store.ledger import LedgerSql
from wrighty.store.outbox import OutboxSql
from wrighty.store.registry import RegistrySql
from wrighty.store.sources import SourcesSql
from wrighty.store.sqlbase import Tx
from wrighty.store.sqlfiles import migrations, read_sql
from wrighty.store.tracker import TrackerSql

# What opening found: a store it created, one it migrated, or one already up to date.
Opening = Literal["created", "migrated", "opened"]


class SqlStore(
    LandingsSql, ChecksSql, LedgerSql, RegistrySql, CircuitsSql, OutboxSql, SourcesSql, TrackerSql
):
    """The Store port, given a dialect's transactions and named queries."""

    opened: Opening = "opened"

    def _migrate_in(self, tx: Tx, dialect: str, run_script: Callable[[str], None]) -> None:
        """Bring the schema up to date inside ``tx``: a new database gets schema.sql in one
        go, an older one the migrations it lacks; each is recorded."""
        tx.run("create_migrations_table")
        applied = [int(row["version"]) for row in tx.run("select_applied_migrations").fetchall()]
        known = migrations(dialect)
        if not applied:
            run_script(read_sql(dialect, "schema.sql"))
            pending = known
        else:
            pending = tuple(m for m in known if m.version > max(applied))
            for migration in pending:
                run_script(migration.sql)
        now = to_db_time(datetime.now(UTC))
        for migration in pending:
            tx.run(
                "insert_migration",
                {"version": migration.version, "name": migration.name, "applied_at": now},
            )
