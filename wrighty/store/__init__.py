"""State stores: the port, and opening the one a URL names."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from wrighty.errors import StoreError
from wrighty.store.port import Store

__all__ = ["Store", "StoreTarget", "open_store", "parse_store_url"]

_SQLITE_PREFIX = "sqlite:///"


@dataclass(frozen=True)
class StoreTarget:
    """Where a store lives, resolved: a SQLite file path, or a PostgreSQL URL."""

    sqlite_path: Path | None = None
    postgres_url: str | None = None

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

    def exists(self) -> bool | None:
        """Whether a SQLite store file is there; None for a database server (unknown)."""
        return None if self.sqlite_path is None else self.sqlite_path.exists()


def parse_store_url(url: str, *, base: Path) -> StoreTarget:
    """Resolve ``url`` (relative SQLite paths against ``base``) into a StoreTarget."""
    text = url.strip()
    if text.startswith(("postgresql://", "postgres://")):
        return StoreTarget(postgres_url=text)
    if text.startswith(_SQLITE_PREFIX):
        # sqlite:///relative.db -> "relative.db"; sqlite:////abs.db -> "/abs.db"
        path_text = text[len(_SQLITE_PREFIX) :]
    elif "://" in text or text.startswith("sqlite:"):
        raise StoreError(
            f"unsupported store URL scheme in {_scheme_of(text)!r}: "
            "use sqlite:///path/to/wrighty.db or a file path"
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
    if target.postgres_url is not None:
        from wrighty.store.postgres import PostgresStore

        return PostgresStore.open(target.postgres_url, create=create)
    from wrighty.store.sqlite import SqliteStore

    assert target.sqlite_path is not None
    if not create and not target.sqlite_path.exists():
        raise StoreError(
            f"{target.describe()}: no store here; run `wrighty init`, or check --store/store.url"
        )
    return SqliteStore.open(target.sqlite_path)
