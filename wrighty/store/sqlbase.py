"""What every aggregate of the SQL store stands on: a dialect's transactions and named queries,
and the reading of rows that leaves out (and keeps to tell) a row that does not read."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol, TypeVar

from wrighty.domain.model import Item
from wrighty.errors import UnreadableError
from wrighty.store.port import Rows, Salvaged, WorkListener

_T = TypeVar("_T")

MAX_NOTED = 100  # rows left out that a store keeps to tell (a long-lived worker's is bounded)


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> Any: ...


class Tx(Protocol):
    """An open transaction that runs the dialect's named queries."""

    def run(self, name: str, params: Mapping[str, Any] | None = None, /) -> Cursor: ...


class Refused(Exception):
    """A guard failed inside a write transaction: roll it back and report False."""


class SqlBase(ABC):
    """A dialect's side of the store (its transactions, its plain reads, its wake-ups), and the
    reading of listed rows; each aggregate's reads and writes are a subclass of this."""

    _skipped: dict[tuple[str, str], UnreadableError] | None = None

    def _read_all(self, rows: Iterable[Any], read: Callable[[Any], _T]) -> Rows[_T]:
        """Each row read, in order; a row that does not read is left out, listed in
        ``unreadable`` and kept for ``unreadable_rows`` (docs/storage.md)."""
        found: Rows[_T] = Rows()
        for row in rows:
            try:
                found.append(read(row))
            except UnreadableError as error:
                found.unreadable.append(error)
                self._note_unreadable(error)
        return found

    def _note_unreadable(self, error: UnreadableError) -> None:
        if self._skipped is None:
            self._skipped = {}
        if len(self._skipped) < MAX_NOTED:
            self._skipped.setdefault((error.row, error.field), error)

    def _salvage(
        self,
        name: str,
        params: Mapping[str, Any],
        read: Callable[[Any, list[UnreadableError]], _T],
    ) -> Salvaged[_T] | None:
        """The first row of one named query read for the write that puts it right: each value
        that does not read noted, a safe one in its place; None when there is no row."""
        rows = self._rows(name, params)
        if not rows:
            return None
        problems: list[UnreadableError] = []
        value = read(rows[0], problems)
        return Salvaged(value, tuple(problems))

    def unreadable_rows(self) -> list[UnreadableError]:
        return list((self._skipped or {}).values())

    @abstractmethod
    def _write(self) -> AbstractContextManager[Tx]:
        """One write transaction; an exception inside rolls it back."""

    @abstractmethod
    def _snapshot(self) -> AbstractContextManager[Tx]:
        """One read-only transaction: every query inside sees the same data."""

    @abstractmethod
    def _rows(self, name: str, params: Mapping[str, Any]) -> list[Any]:
        """The rows of one named query, outside any transaction of ours."""

    @abstractmethod
    def close(self) -> None: ...

    @abstractmethod
    def schema_version(self) -> int: ...

    def store_time(self) -> datetime | None:
        """None: the machine's clock is the store's (SQLite); PostgreSQL reads its own."""
        return None

    # -- wake-ups (worker.wakeUps) -------------------------------------------------------------

    @abstractmethod
    def _work_eligible(self, tx: Tx, item: Item) -> None:
        """``item`` became claimable in ``tx`` (it entered queued or retry-scheduled): the
        dialect tells the idle workers once ``tx`` commits (PostgreSQL: NOTIFY in ``tx``;
        SQLite: datagrams after the commit). Never told when ``tx`` rolls back."""

    @abstractmethod
    def listen_for_work(self, name: str) -> WorkListener: ...
