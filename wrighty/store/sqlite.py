"""The embedded store: one SQLite file, WAL, BEGIN IMMEDIATE for every write.

Durability: ``synchronous = FULL``. In WAL mode NORMAL already survives a crash of any
process; FULL also survives power loss and OS crashes, at the price of one fsync per commit.
wrighty commits a handful of times per run (claim, heartbeats, settle), so the cost is small and
a settled outcome is never rolled back by a power cut (docs/storage.md).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import sqlite3
import stat
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from wrighty.domain.model import Item
from wrighty.errors import StoreError
from wrighty.files import access_problem, link_new, make_private_dirs, remove_made_dirs
from wrighty.store.deadlines import seconds_left
from wrighty.store.fields import from_db_time, to_db_time
from wrighty.store.rows import wake_params
from wrighty.store.sqlbase import Tx
from wrighty.store.sqlfiles import migrations, queries
from wrighty.store.sqlstore import SqlStore

__all__ = ["SqliteStore", "from_db_time", "to_db_time"]

DIALECT = "sqlite"
BUSY_TIMEOUT_MS = 10_000  # at opening; each call then waits at most what its deadline leaves
BUSY = "the store stayed busy; another wrighty process holds a long write — try again"
SQLITE_IOERR = 10
SQLITE_FULL = 13
NO_SPACE = "no space left on device; free some space on its file system, then try again"


class SqliteStore(SqlStore):
    """The Store port on one SQLite database file."""

    def __init__(self, connection: sqlite3.Connection, path: Path) -> None:
        self._connection = connection
        self._path = path
        self._lock = threading.RLock()
        self._sql = queries(DIALECT)
        self._wakes: list[str] = []  # what the open write transaction made claimable
        self._busy_ms = BUSY_TIMEOUT_MS  # the busy timeout the connection has now

    @classmethod
    def open(cls, path: Path, *, create: bool = True) -> SqliteStore:
        """Open the store at ``path``; if there is none, ``create`` (wrighty init) makes one.

        Everything that could refuse the file is checked before anything is written to it.
        """
        if not _refuse_unusable_file(path):
            if not create:
                raise StoreError(
                    f"{path}: no store here; run `wrighty init`, or check --store/store.url"
                )
            if _create_store_file(path):
                store = cls._connect(path, name=path, create=False)
                store.opened = "created"
                return store
        return cls._connect(path, name=path, create=create)

    @classmethod
    def _connect(cls, path: Path, *, name: Path, create: bool) -> SqliteStore:
        """Connect to the file at ``path`` and bring it up to date; messages call it ``name``.

        Without ``create`` a database that has no wrighty tables yet is refused.
        """
        try:
            connection = sqlite3.connect(
                path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False
            )
        except sqlite3.Error as error:
            raise StoreError(f"{name}: cannot open the store ({_describe(error, name)})") from None
        store = cls(connection, name)
        try:
            with _as_store_error(name):
                connection.row_factory = sqlite3.Row
                connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
                _refuse_foreign_or_newer(connection, name, create=create)
                mode = connection.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                if mode != "wal":
                    raise StoreError(f"{name}: cannot switch the store to WAL mode (got {mode})")
                connection.execute("PRAGMA synchronous = FULL")
                connection.execute("PRAGMA foreign_keys = ON")
                if store._migrate():
                    store.opened = "migrated"
        except BaseException:
            connection.close()
            raise
        return store

    def _fold_wal_into_file(self) -> None:
        """Checkpoint and empty the WAL, so that the database file alone holds everything."""
        with self._call(), _as_store_error(self._path):
            busy = self._connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        if busy:
            raise StoreError(f"{self._path}: cannot write the new store out completely")

    def close(self) -> None:
        with self._lock:
            self._connection.close()

    # -- transactions -----------------------------------------------------------------------

    @contextmanager
    def _call(self) -> Iterator[None]:
        """The connection, for one call: its lock (other threads of this process share the
        connection) and the file's, each waited for at most until the call's deadline
        (wrighty/store/deadlines.py)."""
        if not self._lock.acquire(timeout=max(seconds_left(), 0.001)):
            raise StoreError(f"{self._path}: {BUSY}")
        try:
            busy_ms = round(seconds_left() * 1000)
            if busy_ms != self._busy_ms:  # most calls keep the default: no statement for it
                with _as_store_error(self._path):
                    self._connection.execute(f"PRAGMA busy_timeout = {busy_ms}")
                self._busy_ms = busy_ms
            yield
        finally:
            self._lock.release()

    @contextmanager
    def _write(self) -> Iterator[Tx]:
        """One write transaction, taken with BEGIN IMMEDIATE so it never upgrades mid-way."""
        with self._call(), _as_store_error(self._path):
            self._connection.execute("BEGIN IMMEDIATE")
            self._wakes.clear()
            try:
                yield _SqliteTx(self._connection, self._sql)
            except BaseException:
                self._wakes.clear()
                self._connection.execute("ROLLBACK")
                raise
            self._connection.execute("COMMIT")
            wakes, self._wakes = self._wakes, []
        if wakes:
            send_wakes(self.wake_directory, wakes[-1])

    @contextmanager
    def _snapshot(self) -> Iterator[Tx]:
        with self._call(), _as_store_error(self._path):
            self._connection.execute("BEGIN")  # deferred: a read transaction, one snapshot
            try:
                yield _SqliteTx(self._connection, self._sql)
            finally:
                self._connection.execute("COMMIT")

    def _rows(self, name: str, params: Mapping[str, Any]) -> list[Any]:
        with self._call(), _as_store_error(self._path):
            return list(self._connection.execute(self._sql[name], params))

    def _migrate(self) -> bool:
        """Apply what is missing; whether anything was."""
        known = migrations(DIALECT)
        if self._applied_versions() == [m.version for m in known]:
            return False  # up to date: opening takes no write lock
        # A migration may rebuild a table others reference (SQLite cannot alter a CHECK; 0017
        # rebuilds items): with foreign keys off and the legacy rename, dropping and renaming
        # leaves the references as written. Both pragmas only take effect outside a
        # transaction; every foreign key is checked before the migration commits.
        with self._call(), _as_store_error(self._path):
            self._connection.execute("PRAGMA foreign_keys = OFF")
            self._connection.execute("PRAGMA legacy_alter_table = ON")
        try:
            with self._write() as tx:
                self._migrate_in(tx, DIALECT, lambda script: _run_script(self._connection, script))
                _refuse_broken_references(self._connection, self._path)
        finally:
            with self._call(), _as_store_error(self._path):
                self._connection.execute("PRAGMA legacy_alter_table = OFF")
                self._connection.execute("PRAGMA foreign_keys = ON")
        return True

    def _applied_versions(self) -> list[int]:
        with self._call(), _as_store_error(self._path):
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

    # -- wake-ups (worker.wakeUps) -------------------------------------------------------------

    @property
    def wake_directory(self) -> Path:
        """Where the idle workers of this store have their sockets: beside the database,
        as SQLite's -wal and -shm are (``.wrighty/wrighty.db-wake/`` by default)."""
        return _beside(self._path, WAKE_SUFFIX)

    def _work_eligible(self, tx: Tx, item: Item) -> None:
        self._wakes.append(json.dumps(wake_params(item)))  # sent once it has committed

    def listen_for_work(self, name: str) -> WakeSocket:
        return WakeSocket(self.wake_directory, name)


class _SqliteTx:
    def __init__(self, connection: sqlite3.Connection, sql: Mapping[str, str]) -> None:
        self._connection = connection
        self._sql = sql

    def run(self, name: str, params: Mapping[str, Any] | None = None, /) -> sqlite3.Cursor:
        return self._connection.execute(self._sql[name], params or {})


# -- wake-ups: one datagram socket per listening worker, in a private directory ---------------

WAKE_SUFFIX = "-wake"
WAKE_SOCKET_SUFFIX = ".sock"
_SUN_PATH_MAX = 107  # sockaddr_un's sun_path holds 108 bytes with the final NUL
_WAKE_NAME_MAX = 40 + len(WAKE_SOCKET_SUFFIX)


def send_wakes(directory: Path, payload: str) -> None:
    """Tell every worker listening in ``directory`` that work became claimable: one datagram
    each, never blocking and never failing (a full socket already has a word waiting; a
    missing one is a worker gone). A socket that no process holds any more (its worker died
    before it could remove it) is removed."""
    import socket

    try:
        if not _private(os.stat(directory)):
            return  # not this user's alone: its sockets may not be workers'
        names = [n for n in os.listdir(directory) if n.endswith(WAKE_SOCKET_SUFFIX)]
    except OSError:
        return  # no worker ever listened here, or not ours to read
    if not names:
        return
    data = payload.encode()
    try:
        with (
            _short_paths(directory) as place,
            socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s,
        ):
            s.setblocking(False)
            for name in names:
                try:
                    s.sendto(data, place(name))
                except ConnectionRefusedError:
                    with contextlib.suppress(OSError):
                        (directory / name).unlink()
                except OSError:
                    continue  # full (it has a word already), gone, or not ours
    except OSError:
        return


@contextlib.contextmanager
def _short_paths(directory: Path) -> Iterator[Any]:
    """A function from a socket's name in ``directory`` to an address ``bind`` and ``sendto``
    take. A path longer than sun_path allows goes through /proc/self/fd (Linux) instead."""
    if len(os.fsencode(directory)) + 1 + _WAKE_NAME_MAX <= _SUN_PATH_MAX:
        yield lambda name: str(directory / name)
        return
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield lambda name: f"/proc/self/fd/{fd}/{name}"
    finally:
        os.close(fd)


class WakeSocket:
    """A worker's datagram socket in the store's wake directory (0700), itself 0600, removed
    when the worker closes it. Stale sockets of dead workers are removed when it opens."""

    via = "socket"

    def __init__(self, directory: Path, name: str) -> None:
        import socket

        if not re.fullmatch(r"[A-Za-z0-9_-]{1,40}", name):
            raise ValueError(f"not a wake socket name: {name!r}")
        self._path = directory / f"{name}{WAKE_SOCKET_SUFFIX}"
        _private_wake_directory(directory)
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            _remove_stale_sockets(directory)
            self._socket.setblocking(False)
            with _short_paths(directory) as place:
                self._socket.bind(place(self._path.name))
            os.chmod(self._path, 0o600)
            self._inode = os.stat(self._path).st_ino
        except OSError as error:
            self._socket.close()
            raise StoreError(
                f"{self._path}: cannot listen for wake-ups ({_describe(error, self._path)})"
            ) from None

    def fileno(self) -> int:
        return self._socket.fileno()

    def drain(self) -> bool:
        heard = False
        while True:
            try:
                self._socket.recv(512)
            except BlockingIOError:
                return heard
            except OSError as error:
                raise StoreError(f"{self._path}: {_describe(error, self._path)}") from None
            heard = True

    def intact(self) -> bool:
        try:
            return os.stat(self._path).st_ino == self._inode
        except OSError:
            return False

    def close(self) -> None:
        self._socket.close()
        if self.intact():
            with contextlib.suppress(OSError):
                self._path.unlink()


def _private_wake_directory(directory: Path) -> None:
    """Make ``directory`` (0700), or check that the one there is this user's alone (wrighty
    never changes the mode of what exists); StoreError when it cannot be used."""
    try:
        make_private_dirs(directory)
        info = os.stat(directory)
    except OSError as error:
        raise StoreError(
            f"{directory}: cannot listen for wake-ups ({_describe(error, directory)})"
        ) from None
    if not _private(info):
        raise StoreError(
            f"{directory}: cannot listen for wake-ups: it is not this user's alone (mode "
            f"{stat.S_IMODE(info.st_mode):04o}); remove it, or chmod 700 it if it is yours"
        )


def _private(info: os.stat_result) -> bool:
    return (
        stat.S_ISDIR(info.st_mode)
        and info.st_uid == os.geteuid()
        and not stat.S_IMODE(info.st_mode) & 0o077
    )


def _remove_stale_sockets(directory: Path) -> None:
    """Remove the sockets of workers that died without removing theirs: no process holds
    them, so connecting is refused."""
    import socket

    with _short_paths(directory) as place:
        for name in os.listdir(directory):
            if not name.endswith(WAKE_SOCKET_SUFFIX):
                continue
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as probe:
                try:
                    probe.connect(place(name))
                except ConnectionRefusedError:
                    with contextlib.suppress(OSError):
                        (directory / name).unlink()
                except OSError:
                    continue


def _refuse_unusable_file(path: Path) -> bool:
    """Refuse, without touching it, a path that is not (and cannot become) a wrighty store;
    whether a file is there."""
    try:
        info = path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return False
    except PermissionError:
        raise StoreError(access_problem(path)) from None
    except OSError as error:
        raise StoreError(f"{path}: cannot read the store ({_describe(error, path)})") from None
    if stat.S_ISDIR(info.st_mode):
        raise StoreError(f"{path}: is a directory; point the store at a file inside it")
    if info.st_size == 0:
        # wrighty never leaves an empty store file (see _create_store_file): this one was cut
        # short or made by someone else. SQLite would take it for a new database, and delete
        # a -wal file beside it.
        raise StoreError(_empty_file(path))
    # Its header is read by SQLite itself (_refuse_foreign_or_newer), never by a file of our
    # own: closing any descriptor of the file would drop the POSIX locks that this process's
    # other connections to it hold (SQLite keeps its descriptors open for that reason).
    if not os.access(path, os.R_OK | os.W_OK):
        raise StoreError(access_problem(path))
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise StoreError(access_problem(path.parent))  # SQLite makes its -wal and -shm there
    return True


def _empty_file(path: Path) -> str:
    wal = _beside(path, "-wal")
    with contextlib.suppress(OSError):
        if wal.stat().st_size > 0:
            return (
                f"{path}: is empty (0 bytes) but {wal.name} beside it is not: the store was cut "
                "short; restore both files from a backup (SQLite would delete the -wal file)"
            )
    return (
        f"{path}: is empty (0 bytes), so it is not a wrighty store (it may have been cut "
        "short); restore it from a backup, or move it away and run `wrighty init`"
    )


def _beside(path: Path, suffix: str) -> Path:
    """SQLite's files next to a database: ``-wal``, ``-shm``, ``-journal``."""
    return path.with_name(path.name + suffix)


def _create_store_file(path: Path) -> bool:
    """Build a new store beside ``path``, then give it that name unless another process has
    given one first; True if this one did.

    So the name never holds a half-made store: racing `wrighty init`s create one store, a
    command never finds an empty file it might mistake for a store, and a failure (a full
    disk) leaves nothing behind that this call made.
    """
    try:
        made = make_private_dirs(path.parent)
    except (FileExistsError, NotADirectoryError):
        raise StoreError(_cannot_create(path, "a path component is not a directory")) from None
    except OSError as error:
        raise StoreError(_cannot_create(path, _describe(error, path))) from None
    import secrets  # only to create a store: not for the commands that open one

    building = path.with_name(f".{path.name}.new-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        os.close(os.open(building, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        store = SqliteStore._connect(building, name=path, create=True)
        try:
            store._fold_wal_into_file()
        finally:
            store.close()
        return link_new(building, path)
    except BaseException as error:
        for leftover in (building, *(_beside(building, s) for s in ("-wal", "-shm", "-journal"))):
            with contextlib.suppress(OSError):
                leftover.unlink(missing_ok=True)
        remove_made_dirs(made)
        if isinstance(error, OSError):
            raise StoreError(_cannot_create(path, _describe(error, path))) from None
        raise


def _cannot_create(path: Path, why: str) -> str:
    if why == NO_SPACE:
        return f"{path}: cannot create the store: {NO_SPACE}, or choose another place with --store"
    return (
        f"{path}: cannot create the store ({why}); "
        "choose a writable location with --store or store.url"
    )


def _refuse_foreign_or_newer(connection: sqlite3.Connection, path: Path, *, create: bool) -> None:
    """Refuse a file that is not a SQLite database (its header, as SQLite reads it: nothing
    is written), a database that belongs to another program or to a newer wrighty, and,
    unless ``create``, one that is not a store yet."""
    try:
        rows = connection.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall()
    except sqlite3.DatabaseError as error:
        if error.sqlite_errorcode == sqlite3.SQLITE_NOTADB:
            raise StoreError(
                f"{path}: is not a SQLite database; move it away or point --store elsewhere"
            ) from None
        raise
    tables = {row[0] for row in rows}
    if not tables and create:
        return  # an empty database: wrighty init makes it a store
    if not tables:
        raise StoreError(
            f"{path}: is an empty SQLite database, not a wrighty store yet; run `wrighty init` "
            "to make it one, or check --store/store.url"
        )
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


def _refuse_broken_references(connection: sqlite3.Connection, path: Path) -> None:
    """Fail the migration (its transaction rolls back) when a row references one that is gone."""
    broken = connection.execute("PRAGMA foreign_key_check").fetchall()
    if broken:
        table, rowid, parent = broken[0][0], broken[0][1], broken[0][2]
        raise StoreError(
            f"{path}: migrating the store would leave {len(broken)} row(s) referencing rows "
            f"that do not exist (first: {table} row {rowid} -> {parent}); nothing was changed"
        )


def _only_comments(text: str) -> bool:
    return all(not line.strip() or line.strip().startswith("--") for line in text.splitlines())


@contextmanager
def _as_store_error(path: Path) -> Iterator[None]:
    """Turn environmental SQLite failures (locked, read-only, full, corrupt) into one clear line.

    Still a StoreError, so a caller that retries an unreachable store (the worker) retries these.
    """
    try:
        yield
    except (sqlite3.OperationalError, sqlite3.DatabaseError) as error:
        if isinstance(error, sqlite3.IntegrityError | sqlite3.ProgrammingError):
            raise
        raise StoreError(f"{path}: {_describe(error, path)}") from None


def _describe(error: BaseException, path: Path) -> str:
    """What went wrong with the store at ``path``, in a person's words."""
    text = str(error)
    code = (getattr(error, "sqlite_errorcode", None) or 0) & 0xFF  # the primary result code
    if (
        code == SQLITE_FULL
        or "disk is full" in text
        or (code == SQLITE_IOERR and _file_system_full(path))
        or (isinstance(error, OSError) and error.errno == errno.ENOSPC)
    ):
        return NO_SPACE
    if "locked" in text or "busy" in text:
        return BUSY
    if "readonly" in text or "read-only" in text:
        return "the store is read-only for this user; fix its permissions or move it"
    if "not a database" in text:
        return "the file is not a SQLite database"
    if isinstance(error, OSError) and error.strerror:
        return error.strerror.lower()
    if code == SQLITE_IOERR:
        return f"{text} ({getattr(error, 'sqlite_errorname', 'SQLITE_IOERR')})"
    return text


def _file_system_full(path: Path) -> bool:
    """Whether the file system that holds ``path`` has no block or no inode left for us.

    SQLite reports a failed write of its -shm or -wal file as an I/O error without the errno.
    """
    try:
        usage = os.statvfs(path.parent)
    except OSError:
        return False
    blocks = usage.f_bfree if os.geteuid() == 0 else usage.f_bavail
    return blocks == 0 or (usage.f_files > 0 and usage.f_favail == 0)
