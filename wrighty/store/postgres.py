"""The fleet store: one PostgreSQL database that many installations share.

The same port and the same guarded writes as on SQLite (wrighty/store/sqlstore.py); claims take
their row with `FOR UPDATE SKIP LOCKED`, so racing workers never wait on each other's rows.
Connections come from a pool, which discards a connection that broke; a call that fails because
the server dropped it is retried by the worker while its claim lasts
(wrighty/worker/patient.py), so no round trip is spent checking each connection before use.
Credentials (in the URL, libpq's environment variables or a password file) never appear in a
message: errors name the database without its password.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from typing import Any, TypeVar
from urllib.parse import quote, unquote

import psycopg
from psycopg import errors as pg_errors
from psycopg import sql
from psycopg.abc import PQGen
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from wrighty.domain.model import Item
from wrighty.domain.redact import redact_known
from wrighty.errors import NoListening, StoreError
from wrighty.store.connections import (
    DEFAULT_POOL_SIZE,
    per_transaction,
    refused_options,
    settings_of,
    settings_or_none,
)
from wrighty.store.deadlines import DEFAULT_CALL_SECONDS, seconds_left
from wrighty.store.rows import wake_params
from wrighty.store.sqlbase import Tx
from wrighty.store.sqlfiles import migrations, queries
from wrighty.store.sqlstore import SqlStore

# The pool retries broken connections itself and reports each failure as a warning; wrighty
# reports what matters once, in its own words.
logging.getLogger("psycopg.pool").setLevel(logging.ERROR)

DIALECT = "postgresql"

# What wrighty waits for at most (docs/fleet.md, "What wrighty waits for"). A store call gives
# up at its caller's deadline (wrighty/store/deadlines.py: at most DEFAULT_CALL_SECONDS), on
# the client's own clock, whatever the network does; the server ends what that leaves behind.
CONNECT_TIMEOUT_SECONDS = int(DEFAULT_CALL_SECONDS)
# Each session's limits, unless the URL's `options` set them. A statement never runs longer
# than a call may wait for it; a wait on a row another transaction holds ends well inside a
# call; a transaction left idle (its client stalled, or its COMMIT lost on the way) is ended,
# and its row locks freed, soon after the longest call could have been waiting for it.
SESSION_SETTINGS = {
    "statement_timeout": f"{CONNECT_TIMEOUT_SECONDS}s",
    "lock_timeout": "5s",
    "idle_in_transaction_session_timeout": f"{CONNECT_TIMEOUT_SECONDS}s",
}
LOCK_TIMEOUT_SECONDS = 5
# How a connection notices a server gone without a word, unless the URL sets these: an idle
# one within about 25 s (keepalives), a busy one whose data goes unacknowledged for 10 s.
TCP_SETTINGS = {"keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5,
                "keepalives_count": 3, "tcp_user_timeout": 10_000}  # fmt: skip
# Migrations are not cut by the per-call limits (a big table may take a while), only by this.
MIGRATION_SECONDS = 600.0
_PARAMETER = re.compile(r"(?<![:\w]):([a-z_][a-z0-9_]*)")


def _psycopg_sql(text: str) -> str:
    """``:name`` placeholders as psycopg's ``%(name)s`` (``::`` casts are left alone)."""
    return _PARAMETER.sub(r"%(\1)s", text.replace("%", "%%"))


def read_url(url: str) -> dict[str, str]:
    """libpq's reading of ``url``; StoreError, naming no secret, when it cannot read it."""
    try:
        parts = conninfo_to_dict(url)
    except psycopg.ProgrammingError as error:
        # libpq quotes the URL, or the token it stumbled on, which may be the password
        why = redact_known(re.sub(r'\s*in URI: ".*', "", _reason(error)), secrets_of(url))
        raise StoreError(
            f"{_unread_url(url)}: cannot read the URL ({why}); write it as "
            "postgresql://USER@HOST:PORT/DBNAME, percent-encoding any other character"
        ) from None
    if any("@" in str(parts.get(key) or "") for key in ("host", "port", "dbname")):
        # libpq ends the user and password at the first '/' or '@': the rest became the host
        raise StoreError(
            f"{_unread_url(url)}: cannot read the URL: it has an '@' or '/' in its user name or "
            "password; percent-encode them (%40, %2F), or leave the password out of the URL "
            "and give it in PGPASSWORD or ~/.pgpass"
        )
    return {key: str(value) for key, value in parts.items() if value is not None}


def _unread_url(url: str) -> str:
    """A URL libpq cannot read, as a name: the user and what follows the last '@', no query."""
    userinfo, at, place = url.partition("://")[2].rpartition("@")
    user = userinfo.split(":", 1)[0]
    place = re.split(r"[?#]", place, maxsplit=1)[0]
    return redact_known(f"postgresql://{user}{at}{place}", secrets_of(url))


def secrets_of(url: str) -> list[str]:
    """Whatever in ``url`` or libpq's environment may be a password, longest first."""
    found = {os.environ.get("PGPASSWORD", "")}
    rest = url.split("://", 1)[-1]
    for userinfo in (rest.split("@", 1)[0], rest.rsplit("@", 1)[0]) if "@" in rest else ():
        found.add(userinfo.partition(":")[2])
    found.update(match[1] for match in re.finditer(r"password\s*=\s*([^&\s]+)", url, re.I))
    found |= {unquote(secret) for secret in found}
    return sorted((secret for secret in found if secret), key=len, reverse=True)


def describe_url(url: str) -> str:
    """The database a URL names, without its password."""
    try:
        parts = read_url(url)
    except StoreError:
        return _unread_url(url)
    user = f"{parts['user']}@" if parts.get("user") else ""
    host = parts.get("host") or "localhost"
    port = f":{parts['port']}" if parts.get("port") else ""
    return f"postgresql://{user}{host}{port}/{parts.get('dbname') or ''}"


def url_without_password(url: str) -> str:
    """``url`` with any password taken out (libpq finds it in PGPASSWORD or ~/.pgpass)."""
    parts = {k: v for k, v in read_url(url).items() if k != "password"}
    user = f"{parts.pop('user')}@" if parts.get("user") else ""
    host = parts.pop("host", None) or "localhost"
    port = f":{parts.pop('port')}" if parts.get("port") else ""
    dbname = parts.pop("dbname", None) or ""
    query = "&".join(f"{key}={quote(str(value), safe='')}" for key, value in sorted(parts.items()))
    return f"postgresql://{user}{host}{port}/{dbname}" + (f"?{query}" if query else "")


class PostgresStore(SqlStore):
    """The Store port on a PostgreSQL database."""

    def __init__(
        self,
        pool: ConnectionPool[BoundedConnection],
        name: str,
        secrets: list[str],
        conninfo: str | None,
        *,
        in_each_transaction: str | None = None,
        listen_problem: str | None = None,
        listen_setup: str | None = None,
    ) -> None:
        self._pool = pool
        # Where a worker LISTENs: a connection of its own (None: nowhere, ``listen_problem``
        # says why: behind a transaction pooler without store.listenUrl).
        self._conninfo = conninfo
        self._listen_problem = listen_problem
        self._listen_setup = listen_setup  # a session pooler's LISTEN: the settings, first
        # Behind a transaction pooler: the statement that gives each transaction the session
        # settings (docs/scale.md); None: the server's sessions have them from the start.
        self._in_each = in_each_transaction
        self._name = name
        self._secrets = secrets
        self._sql = {key: _psycopg_sql(text) for key, text in queries(DIALECT).items()}
        self._closed = threading.Event()

    @classmethod
    def open(
        cls,
        url: str,
        *,
        create: bool = False,
        pool_size: int = DEFAULT_POOL_SIZE,
        pooler: str = "auto",
        listen_url: str | None = None,
    ) -> PostgresStore:
        """Connect to the database at ``url``; migrate it (``create``: also build a new one).
        ``pool_size`` connections at most for calls; ``pooler``: whether ``url`` is a
        transaction pooler's (auto: one that refuses the `options` startup parameter is);
        ``listen_url``: where a worker LISTENs past the pooler (docs/scale.md)."""
        name = describe_url(url)
        given = read_url(url)
        options = _with_session_settings(given.get("options"))
        direct = _conninfo(url, given, options=options)
        behind = pooler in ("transaction", "session")
        if pooler == "auto":
            behind = _refuses_options(direct, name, secrets_of(url))
        conninfo, in_each = direct, None
        if behind:
            conninfo, in_each = _behind_pooler(url, given, options, name)
        # Each transaction, each statement even, may go to another server session.
        per_transaction_sessions = behind and pooler != "session"
        listen: str | None = conninfo
        problem = None
        if listen_url is not None:
            listen = _listen_conninfo(listen_url, options)
        elif per_transaction_sessions:
            listen, problem = None, LISTEN_BEHIND_POOLER
        kwargs: dict[str, Any] = {"row_factory": dict_row}
        if per_transaction_sessions:  # a statement prepared in one session is not in the next
            kwargs["prepare_threshold"] = None
        pool: ConnectionPool[BoundedConnection] = ConnectionPool(
            conninfo,
            connection_class=BoundedConnection,
            min_size=1,
            max_size=pool_size,
            kwargs=kwargs,
            open=False,
            name="wrighty",
        )
        setup = None
        if behind and pooler == "session" and listen_url is None:
            setup = per_transaction(settings_or_none(options), local=False)
        store = cls(
            pool, name, secrets_of(url) + secrets_of(listen_url or ""), listen,
            in_each_transaction=in_each, listen_problem=problem, listen_setup=setup,
        )  # fmt: skip
        try:
            with store._errors():
                if pooler != "auto" or behind:  # (auto connected once already, to detect)
                    psycopg.connect(conninfo, **kwargs).close()  # the precise reason
                pool.open(wait=True, timeout=CONNECT_TIMEOUT_SECONDS)
            store._migrate(create=create)
        except BaseException:
            pool.close()
            raise
        return store

    def close(self) -> None:
        self._closed.set()
        self._pool.close()

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """Connection trouble and database errors as one line that names no secret."""
        try:
            yield
        except PoolTimeout:
            raise StoreError(f"{self._name}: cannot connect to the database") from None
        except pg_errors.LockNotAvailable:
            raise StoreError(
                f"{self._name}: another transaction held a row this call needed for "
                f"{LOCK_TIMEOUT_SECONDS} s (lock_timeout); try again"
            ) from None
        except (psycopg.OperationalError, pg_errors.IdleInTransactionSessionTimeout) as error:
            raise _failed(self._name, error, self._secrets) from None

    @contextmanager
    def _borrow(self) -> Iterator[BoundedConnection]:
        """A connection of the pool, waited for at most until the call's deadline."""
        limit = _call_seconds()
        if limit <= 0:
            raise StoreError(
                f"{self._name}: no time left to ask the database (its deadline passed)"
            )
        try:
            connection = self._pool.getconn(timeout=limit)
        except PoolTimeout:
            raise StoreError(
                f"{self._name}: no connection to the database within {_seconds(limit)} (this "
                f"process's {self._pool.max_size} are all busy: store.poolSize, docs/scale.md)"
            ) from None
        try:
            with connection:
                yield connection
        finally:
            self._pool.putconn(connection)  # a connection closed by its deadline is discarded

    @contextmanager
    def _write(self) -> Iterator[Tx]:
        with (
            self._errors(),
            self._borrow() as connection,
            connection.transaction(),
        ):
            if self._in_each is not None:
                connection.execute(self._in_each)
            yield _PostgresTx(connection, self._sql)

    @contextmanager
    def _snapshot(self) -> Iterator[Tx]:
        with (
            self._errors(),
            self._borrow() as connection,
            connection.transaction(),
        ):
            connection.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            if self._in_each is not None:
                connection.execute(self._in_each)
            yield _PostgresTx(connection, self._sql)

    def _rows(self, name: str, params: Mapping[str, Any]) -> list[Any]:
        with self._snapshot() as tx:
            rows: list[Any] = tx.run(name, params).fetchall()
            return rows

    def _up_to_date(self) -> bool:
        """Whether the store is there with every migration applied (read without a lock)."""
        with self._snapshot() as tx:
            if not tx.run("migrations_table_exists").fetchone()["present"]:
                return False
            applied = [int(r["version"]) for r in tx.run("select_applied_migrations").fetchall()]
        return applied == [m.version for m in migrations(DIALECT)]

    def _migrate(self, *, create: bool) -> None:
        if not create and self._up_to_date():
            return  # the usual opening: no lock, no migration, the usual limits
        with _patient(MIGRATION_SECONDS), self._write() as tx:
            tx.run("lift_call_limits")
            tx.run("lock_migrations")
            if create:
                assert isinstance(tx, _PostgresTx)
                self._create_schema(tx)
            present = tx.run("migrations_table_exists").fetchone()["present"]
            if not present and not create:
                raise StoreError(
                    f"{self._name}: no wrighty store in this database; run "
                    "`wrighty init --store postgresql://...` once, or check --store/store.url"
                )
            applied = (
                [int(r["version"]) for r in tx.run("select_applied_migrations").fetchall()]
                if present
                else []
            )
            if applied == [m.version for m in migrations(DIALECT)]:
                return
            if applied and max(applied) > len(migrations(DIALECT)):
                raise StoreError(
                    f"{self._name}: the store was written by a newer wrighty; upgrade wrighty"
                )
            assert isinstance(tx, _PostgresTx)
            self._migrate_in(tx, DIALECT, tx.script)
            self.opened = "migrated" if present else "created"

    def _create_schema(self, tx: _PostgresTx) -> None:
        """The URL's schema (the first of its search_path, as `options=-csearch_path%3D...`
        sets it), created when it does not exist yet: `wrighty init` makes the store whole
        (docs/fleet.md). Other commands never create it: they find no store there."""
        found = tx.run("select_current_schema").fetchone()
        assert found is not None  # a SELECT without FROM has one row
        if found["schema"] is not None:
            return
        schema = _first_schema(found["search_path"])
        if schema is None:
            raise StoreError(f"{self._name}: the search_path names no schema to create tables in")
        try:
            tx.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
        except psycopg.errors.InsufficientPrivilege:
            raise StoreError(
                f"{self._name}: schema {schema!r} does not exist and this user may not create "
                f'it; have its owner run CREATE SCHEMA "{schema}" (and grant this user CREATE '
                "on it), then `wrighty init` again"
            ) from None

    def schema_version(self) -> int:
        with self._snapshot() as tx:
            rows = tx.run("select_applied_migrations").fetchall()
        return int(rows[-1]["version"]) if rows else 0

    def store_time(self) -> datetime:
        """The database's clock: ``clock_timestamp()``, the time of the reading itself (not of
        the transaction's start, as ``now()``), in UTC. One statement in autocommit: a single
        round trip (no BEGIN before it, no ROLLBACK when the connection goes back to the pool),
        so the reading's error, half the round trip, stays small."""
        with self._errors(), self._pool.connection() as connection:
            connection.autocommit = True
            try:
                row = connection.execute(self._sql["select_store_time"]).fetchone()
            finally:
                connection.autocommit = False
        assert row is not None  # a SELECT without FROM has one row
        moment: datetime = row["store_time"]
        return moment.astimezone(UTC)

    # -- wake-ups (worker.wakeUps) -------------------------------------------------------------

    def _work_eligible(self, tx: Tx, item: Item) -> None:
        tx.run("notify_work", wake_params(item))

    def listen_for_work(self, name: str) -> Listening:
        """LISTEN on a connection of its own, outside the pool: a LISTEN belongs to its
        session, so a pooled connection would carry it to whoever borrows it next, and the
        pool would discard it when it broke; this one lives and breaks alone, and the worker
        opens it again. TCP keepalives (unless the URL sets them) notice a silent drop. Behind
        a transaction pooler, on store.listenUrl; NoListening without one."""
        if self._conninfo is None:
            raise NoListening(f"{self._name}: {self._listen_problem}")
        return Listening(self._conninfo, self._errors, self._listen_setup)


RV = TypeVar("RV")
_patience = threading.local()


def _call_seconds() -> float:
    """How long the calling thread's round trip may still wait (wrighty/store/deadlines.py)."""
    return seconds_left(getattr(_patience, "seconds", None) or DEFAULT_CALL_SECONDS)


@contextmanager
def _patient(seconds: float) -> Iterator[None]:
    """Calls of this thread inside the block may take up to ``seconds`` (a migration)."""
    outer = getattr(_patience, "seconds", None)
    _patience.seconds = seconds
    try:
        yield
    finally:
        _patience.seconds = outer


class NoAnswer(psycopg.OperationalError):
    """A round trip that did not end by its call's deadline; the connection was closed."""


class BoundedConnection(psycopg.Connection[dict[str, Any]]):
    """A connection none of whose round trips waits past the calling thread's deadline.

    libpq waits for an answer as long as the socket stays open, and a connection whose packets
    stop without an error (a partition behind a firewall that still acknowledges them) stays
    open: no keepalive or TCP user timeout sees it. So each wait ends at the call's deadline;
    the connection is then closed, in an unknown state, and the pool discards it on its return.
    A caller's own shorter timeout (a poll for notifications) is left alone. (psycopg 3.3's
    ``wait(gen, interval, timeout)``, through which every round trip of a Connection goes.)"""

    def wait(self, gen: PQGen[RV], interval: float = 0.1, timeout: float | None = None) -> RV:
        limit = _call_seconds()
        if timeout is not None and timeout <= limit:
            return super().wait(gen, interval, timeout)
        try:
            return super().wait(gen, interval, limit)
        except pg_errors._WaitTimeout:
            self.close()
            raise NoAnswer(f"no answer from the database within {_seconds(limit)}") from None


def _seconds(value: float) -> str:
    return f"{value:.1f} s" if value < 10 else f"{value:.0f} s"


LISTEN_BEHIND_POOLER = (
    "behind a transaction pooler a LISTEN hears nothing: set store.listenUrl to the server's "
    "own URL (docs/scale.md); the worker polls meanwhile"
)
TOO_MANY = re.compile(
    r"too many clients|remaining connection slots are reserved|no more connections allowed",
    re.IGNORECASE,
)


def _conninfo(url: str, given: Mapping[str, str], *, options: str | None) -> str:
    """``url`` as libpq connects: wrighty's connect timeout, name and keepalives unless the URL
    sets them, and ``options`` (None: none at all, for a pooler that refuses them)."""
    settings: dict[str, Any] = {
        "connect_timeout": given.get("connect_timeout") or CONNECT_TIMEOUT_SECONDS,
        "application_name": given.get("application_name") or "wrighty",
        **{key: value for key, value in TCP_SETTINGS.items() if key not in given},
    }
    if options is None:
        kept = {key: value for key, value in given.items() if key != "options"}
        return make_conninfo("", **{**kept, **settings})
    return make_conninfo(url, options=options, **settings)


def _listen_conninfo(listen_url: str, store_options: str) -> str:
    """store.listenUrl as a worker's LISTEN connects: its own options, and the store's schema
    when it names none (a notification names the schema it is about)."""
    given = read_url(listen_url)
    options = given.get("options") or ""
    if "search_path" not in options:
        path = settings_or_none(store_options).get("search_path")
        if path is not None:
            options = f"{options} -c search_path={path.replace(' ', chr(92) + ' ')}".strip()
    return _conninfo(listen_url, given, options=_with_session_settings(options))


def _refuses_options(conninfo: str, name: str, secrets: list[str]) -> bool:
    """Connect once as wrighty would: whether the server refused the `options` startup
    parameter (a transaction pooler's answer); any other failure is said as it is."""
    try:
        psycopg.connect(conninfo).close()
    except psycopg.OperationalError as error:
        if refused_options(str(error)):
            return True
        raise _failed(name, error, secrets) from None
    return False


def _behind_pooler(url: str, given: Mapping[str, str], options: str, name: str) -> tuple[str, str]:
    """The connection (no `options`) and the statement that gives each transaction the
    session settings, behind a transaction pooler."""
    try:
        settings = settings_of(options)
    except ValueError as error:
        raise StoreError(f"{name}: {error}; give only -c name=value in the URL's options") from None
    return _conninfo(url, given, options=None), per_transaction(settings)


def _failed(name: str, error: Exception, secrets: list[str]) -> StoreError:
    """A connection or database failure as one line that names no secret; a server (or a
    pooler) out of connections said with what to turn."""
    why = redact_known(_reason(error), secrets)
    if TOO_MANY.search(why) is not None:
        why = (
            f"the server has no connection left for wrighty ({why}): raise its max_connections "
            "(or the pooler's max_client_conn), lower store.poolSize, or put PgBouncer in front "
            "(docs/scale.md)"
        )
    return StoreError(f"{name}: {why}")


def _with_session_settings(options: str | None) -> str:
    """The URL's ``options`` with wrighty's session limits added, each unless it sets it."""
    given = options or ""
    present = set(re.findall(r"(?:-c\s*|--)([A-Za-z_][A-Za-z0-9_.]*)\s*=", given))
    ours = [f"-c {name}={value}" for name, value in SESSION_SETTINGS.items() if name not in present]
    return " ".join(part for part in (given, *ours) if part)


class Listening:
    """A worker's LISTEN on the channel every write that makes work claimable notifies. The
    channel is the database's; a word about another schema's store (another fleet on the same
    database) is read and ignored."""

    via = "listen"
    channel = "wrighty_work"

    def __init__(
        self,
        conninfo: str,
        errors: Callable[[], AbstractContextManager[None]],
        setup: str | None = None,
    ) -> None:
        self._errors = errors
        with self._errors():
            self._connection = BoundedConnection.connect(
                conninfo, autocommit=True, row_factory=dict_row
            )
        try:
            with self._errors():
                if setup is not None:  # (a session pooler's: the URL's settings, its schema)
                    self._connection.execute(setup)
                row = self._connection.execute("SELECT current_schema() AS schema").fetchone()
                self._schema = row["schema"] if row else None
                self._connection.execute(f"LISTEN {self.channel}")
        except BaseException:
            self._connection.close()
            raise

    def fileno(self) -> int:
        return self._connection.fileno()

    def drain(self) -> bool:
        with self._errors():
            try:
                words = [n.payload for n in self._connection.notifies(timeout=0)]
            except psycopg.OperationalError:
                raise
            except psycopg.Error as error:  # closed, or in a state it cannot listen in
                raise psycopg.OperationalError(_reason(error)) from None
        return any(self._ours(word) for word in words)

    def _ours(self, payload: str) -> bool:
        try:
            schema = json.loads(payload).get("schema")
        except (ValueError, AttributeError):
            return True  # not one of ours to read: better a claim for nothing than a miss
        return schema is None or schema == self._schema

    def intact(self) -> bool:
        return not self._connection.closed

    def close(self) -> None:
        self._connection.close()


class _PostgresTx:
    def __init__(self, connection: BoundedConnection, sql: Mapping[str, str]) -> None:
        self._connection = connection
        self._sql = sql

    def run(
        self, name: str, params: Mapping[str, Any] | None = None, /
    ) -> psycopg.Cursor[dict[str, Any]]:
        return self._connection.execute(self._sql[name], params or {})

    def execute(self, statement: sql.Composed) -> None:
        """One statement made with psycopg.sql (an identifier that cannot be a parameter)."""
        self._connection.execute(statement)

    def script(self, text: str) -> None:
        """Several statements, no parameters (schema.sql, a migration)."""
        self._connection.execute(text.encode())


def _first_schema(search_path: str) -> str | None:
    """The first schema a search_path names, other than ``"$user"`` (None when there is none)."""
    for entry in search_path.split(","):
        name = entry.strip()
        if len(name) >= 2 and name[0] == name[-1] == '"':
            name = name[1:-1].replace('""', '"')
        if name and name != "$user":
            return name
    return None


def _reason(error: BaseException) -> str:
    """The first line of a driver error, without the server address libpq repeats."""
    lines = str(error).strip().splitlines()
    text = lines[0] if lines else type(error).__name__
    return re.sub(
        r'^connection failed: connection to server at "[^"]*", port \d+ failed: ', "", text
    )
