"""State stores: the port, and opening the one a URL names."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from wrighty.errors import StoreError
from wrighty.store.connections import DEFAULT_POOL_SIZE
from wrighty.store.port import Store

if TYPE_CHECKING:
    from wrighty.store.sqlstore import Opening, SqlStore

__all__ = ["Store", "StoreTarget", "init_store", "open_store", "parse_store_url"]

_SQLITE_PREFIX = "sqlite:///"
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
# The start of libpq's key=value form ("host=db1 dbname=queue ..."), which is not a file name.
_LIBPQ_SETTING = re.compile(
    r"\s*(?:host|hostaddr|port|dbname|user|password|passfile|service|sslmode|options)\s*=",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class StoreTarget:
    """Where a store lives, resolved: a SQLite file path, or a PostgreSQL URL."""

    sqlite_path: Path | None = None
    postgres_url: str | None = None
    # PostgreSQL (docs/scale.md): the connections kept for calls, whether the URL is a
    # transaction pooler's (auto: detected), and where a worker LISTENs past one.
    pool_size: int = DEFAULT_POOL_SIZE
    pooler: str = "auto"
    listen_url: str | None = None

    def describe(self) -> str:
        """A printable name; never contains credentials."""
        if self.postgres_url is not None:
            from wrighty.store.postgres import describe_url

            return describe_url(self.postgres_url)
        return str(self.sqlite_path)

    def url(self) -> str:
        """An absolute URL naming this store, without any password (for wrighty.json: give a
        password with PGPASSWORD or ~/.pgpass, never in a file that may be committed)."""
        if self.postgres_url is not None:
            from wrighty.store.postgres import url_without_password

            return url_without_password(self.postgres_url)
        assert self.sqlite_path is not None
        return f"sqlite:///{self.sqlite_path.absolute()}"


def parse_store_url(url: str, *, base: Path) -> StoreTarget:
    """Resolve ``url`` (relative SQLite paths against ``base``) into a StoreTarget.

    Reads the URL only, opens nothing; a StoreError says what is wrong, naming no password.
    """
    text = url.strip()
    if text.startswith(("postgresql://", "postgres://")):
        from wrighty.store.postgres import read_url

        read_url(text)
        return StoreTarget(postgres_url=text)
    if text.startswith(_SQLITE_PREFIX):
        # sqlite:///relative.db -> "relative.db"; sqlite:////abs.db -> "/abs.db"
        path_text = text[len(_SQLITE_PREFIX) :]
    elif _SCHEME.match(text) or "://" in text:
        scheme = _scheme_of(text)
        if scheme.lower() in ("postgresql:", "postgres:"):
            raise StoreError("a PostgreSQL store URL starts with postgresql:// (two slashes)")
        raise StoreError(
            f"unsupported store URL scheme in {scheme!r}: wrighty stores in SQLite "
            "(sqlite:///path/to/wrighty.db or a file path) or PostgreSQL "
            "(postgresql://USER@HOST:PORT/DBNAME)"
        )
    elif _LIBPQ_SETTING.match(text) or re.search(r"password\s*=", text, re.IGNORECASE):
        # never echoed: it may hold a password
        raise StoreError(
            "the store is given as PostgreSQL key=value settings; write it as a URL, "
            "postgresql://USER@HOST:PORT/DBNAME, and give the password in PGPASSWORD or "
            "~/.pgpass (for a file whose name has '=' in it, write sqlite:///NAME)"
        )
    else:
        path_text = text
    if not path_text:
        raise StoreError("store URL names no file: use sqlite:///path/to/wrighty.db")
    path = Path(path_text).expanduser()
    return StoreTarget(sqlite_path=path if path.is_absolute() else base / path)


def _scheme_of(text: str) -> str:
    return text.split(":", 1)[0] + ":"


def open_store(target: StoreTarget, *, create: bool = False) -> Store:
    """Open the store at ``target``; only ``create=True`` (wrighty init) may make a new one."""
    return _open_sql_store(target, create=create)


def init_store(target: StoreTarget) -> Opening:
    """Make the store at ``target`` ready, creating or migrating it (wrighty init); what it
    took. Of any number of racing calls on one new store, exactly one has created it."""
    store = _open_sql_store(target, create=True)
    store.close()
    return store.opened


def _open_sql_store(target: StoreTarget, *, create: bool) -> SqlStore:
    if target.postgres_url is not None:
        from wrighty.store.postgres import PostgresStore

        return PostgresStore.open(
            target.postgres_url, create=create, pool_size=target.pool_size,
            pooler=target.pooler, listen_url=target.listen_url,
        )  # fmt: skip
    from wrighty.store.sqlite import SqliteStore

    assert target.sqlite_path is not None
    return SqliteStore.open(target.sqlite_path, create=create)
