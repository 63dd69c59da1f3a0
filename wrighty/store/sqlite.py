"""The embedded store: one SQLite file, WAL, BEGIN IMMEDIATE for every write.

Durability: ``synchronous = FULL``. In WAL mode NORMAL already survives a crash of any
process; FULL also survives power loss and OS crashes, at the price of one fsync per commit.
wrighty commits a handful of times per run (claim, heartbeats, settle), so the cost is small and
a settled outcome is never rolled back by a power cut (docs/storage.md).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from wrighty.errors import StoreError
from wrighty.store.sqlfiles import migrations, queries
from wrighty.store.sqlstore import SqlStore, Tx, from_db_time, to_db_time

__all__ = ["SqliteStore", "from_db_time", "to_db_time"]

DIALECT = "sqlite"
BUSY_TIMEOUT_MS = 10_000
SQLITE_HEADER = b"SQLite format 3\x00"


class SqliteStore(SqlStore):
    """The Store port on one SQLite database file."""

    def __init__(self, connection: sqlite3.Connection, path: Path) -> None:
        self._connection = connection
        self._path = path
        self._lock = threading.RLock()
        self._sql = queries(DIALECT)

    @classmethod
    def open(cls, path: Path) -> SqliteStore:
        """Open (creating and migrating if needed) the store at ``path``.

        Everything that could refuse the file is checked before anything is written to it.
        """
        _refuse_unusable_file(path)
        _create_private_file(path)
        try:
            connection = sqlite3.connect(
                path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False
            )
        except sqlite3.Error as error:
            raise StoreError(f"{path}: cannot open the store ({_describe(error)})") from None
        store = cls(connection, path)
        try:
            with _as_store_error(path):
                connection.row_factory = sqlite3.Row
                connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
                _refuse_foreign_or_newer(connection, path)
                mode = connection.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                if mode != "wal":
                    raise StoreError(f"{path}: cannot switch the store to WAL mode (got {mode})")
                connection.execute("PRAGMA synchronous = FULL")
                connection.execute("PRAGMA foreign_keys = ON")
                store._migrate()
        except BaseException:
            connection.close()
            raise
        return store

    def close(self) -> None:
        with self._lock:
            self._connection.close()

    # -- transactions -----------------------------------------------------------------------

    @contextmanager
    def _write(self) -> Iterator[Tx]:
        """One write transaction, taken with BEGIN IMMEDIATE so it never upgrades mid-way."""
        with self._lock, _as_store_error(self._path):
            self._connection.execute("BEGIN IMMEDIATE")
            try:
                yield _SqliteTx(self._connection, self._sql)
            except BaseException:
                self._connection.execute("ROLLBACK")
                raise
            self._connection.execute("COMMIT")

    @contextmanager
    def _snapshot(self) -> Iterator[Tx]:
        with self._lock, _as_store_error(self._path):
            self._connection.execute("BEGIN")  # deferred: a read transaction, one snapshot
            try:
                yield _SqliteTx(self._connection, self._sql)
            finally:
                self._connection.execute("COMMIT")

    def _rows(self, name: str, params: Mapping[str, Any]) -> list[Any]:
        with self._lock, _as_store_error(self._path):
            return list(self._connection.execute(self._sql[name], params))

    def _migrate(self) -> None:
        known = migrations(DIALECT)
        if self._applied_versions() == [m.version for m in known]:
            return  # up to date: opening takes no write lock
        with self._write() as tx:
            self._migrate_in(tx, DIALECT, lambda script: _run_script(self._connection, script))

    def _applied_versions(self) -> list[int]:
        with self._lock, _as_store_error(self._path):
            has_table = self._connection.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'wrighty_migrations'"
            ).fetchone()
            if not has_table:
                return []
            rows = self._connection.execute(self._sql["select_applied_migrations"])
            return [int(row[0]) for row in rows]

    def schema_version(self) -> int:
        applied = self._applied_versions()
        return applied[-1] if applied else 0


class _SqliteTx:
    def __init__(self, connection: sqlite3.Connection, sql: Mapping[str, str]) -> None:
        self._connection = connection
        self._sql = sql

    def run(self, name: str, params: Mapping[str, Any] | None = None, /) -> sqlite3.Cursor:
        return self._connection.execute(self._sql[name], params or {})


def _refuse_unusable_file(path: Path) -> None:
    """Refuse, without touching it, a path that is not (and cannot become) a wrighty store."""
    if path.is_dir():
        raise StoreError(f"{path}: is a directory; point the store at a file inside it")
    if not path.exists():
        return
    try:
        with path.open("rb") as handle:
            header = handle.read(len(SQLITE_HEADER))
    except OSError as error:
        raise StoreError(f"{path}: cannot read the store ({_describe(error)})") from None
    if header and header != SQLITE_HEADER:
        raise StoreError(
            f"{path}: is not a SQLite database; move it away or point --store elsewhere"
        )
    if not os.access(path, os.R_OK | os.W_OK):
        raise StoreError(f"{path}: the store is not writable by this user; fix its permissions")


def _create_private_file(path: Path) -> None:
    """Create the directory (0700) and an empty database file (0600) if they do not exist."""
    if path.exists():
        return
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        if path.is_file():
            return  # another process created it first
        raise StoreError(_cannot_create(path, "a path component is not a directory")) from None
    except OSError as error:
        raise StoreError(_cannot_create(path, _describe(error))) from None
    os.close(descriptor)


def _cannot_create(path: Path, why: str) -> str:
    return (
        f"{path}: cannot create the store ({why}); "
        "choose a writable location with --store or store.url"
    )


def _refuse_foreign_or_newer(connection: sqlite3.Connection, path: Path) -> None:
    """Refuse a database that belongs to another program or to a newer wrighty."""
    tables = {
        row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")
    }
    if not tables:
        return
    if "wrighty_migrations" not in tables:
        raise StoreError(
            f"{path}: is a SQLite database but not a wrighty store; point --store elsewhere"
        )
    newest_known = migrations(DIALECT)[-1].version
    newest_applied = connection.execute("SELECT max(version) FROM wrighty_migrations").fetchone()[0]
    if newest_applied is not None and newest_applied > newest_known:
        raise StoreError(
            f"{path}: was written by a newer wrighty (schema {newest_applied}, this one knows "
            f"up to {newest_known}); upgrade wrighty — it never migrates a store down"
        )


def _run_script(connection: sqlite3.Connection, script: str) -> None:
    """Execute every statement of ``script`` inside the current transaction.

    (sqlite3's executescript would COMMIT first.)
    """
    statement = ""
    for line in script.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            connection.execute(statement)
            statement = ""
    if statement.strip() and not _only_comments(statement):
        raise ValueError(f"incomplete SQL statement at the end of a script: {statement[:80]!r}")


def _only_comments(text: str) -> bool:
    return all(not line.strip() or line.strip().startswith("--") for line in text.splitlines())


@contextmanager
def _as_store_error(path: Path) -> Iterator[None]:
    """Turn environmental SQLite failures (locked, read-only, corrupt) into one clear line."""
    try:
        yield
    except (sqlite3.OperationalError, sqlite3.DatabaseError) as error:
        if isinstance(error, sqlite3.IntegrityError | sqlite3.ProgrammingError):
            raise
        raise StoreError(f"{path}: {_describe(error)}") from None


def _describe(error: BaseException) -> str:
    text = str(error)
    if "locked" in text or "busy" in text:
        return "the store stayed busy; another wrighty process holds a long write — try again"
    if "readonly" in text or "read-only" in text:
        return "the store is read-only for this user; fix its permissions or move it"
    if "not a database" in text:
        return "the file is not a SQLite database"
    if isinstance(error, OSError) and error.strerror:
        return error.strerror.lower()
    return text
