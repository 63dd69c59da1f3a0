"""Reaching inside a store's write transactions, for tests of what happens between statements.

No hook in the production code: the test replaces the store's ``_write`` (which yields a Tx that
runs named queries) with one that yields a proxy, calling ``hook(name, number, tx)`` right after
each named statement runs. ``number`` counts the statements of every write transaction the store
opens while the hook is installed, from 1.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import pytest

from wrighty.store import Store
from wrighty.store.sqlbase import Cursor, Tx
from wrighty.store.sqlite import SqliteStore

Hook = Callable[[str, int, Tx], None]


class InjectedFault(Exception):
    """The failure a test injects between two statements of a transaction."""


class _HookedTx:
    def __init__(self, tx: Tx, after_statement: Callable[[str, Tx], None]) -> None:
        self._tx = tx
        self._after_statement = after_statement

    def run(self, name: str, params: Mapping[str, Any] | None = None, /) -> Cursor:
        cursor = self._tx.run(name, params)
        self._after_statement(name, self)
        return cursor


@contextmanager
def statements_hooked(store: Store, hook: Hook) -> Iterator[list[str]]:
    """Call ``hook`` after every statement of ``store``'s write transactions; yields the names
    of the statements run so far.

    A write transaction opened while another is open (a hook that writes through the store)
    is a transaction of its own on PostgreSQL, on a second pooled connection, so it commits
    inside the first one. On SQLite a second connection cannot commit inside the first one's
    BEGIN IMMEDIATE: there, the inner transaction joins the outer one, which simulates the same
    interleaving inside the outer transaction.
    """
    original = store._write  # type: ignore[attr-defined]
    joins_outer = isinstance(store, SqliteStore)
    statements: list[str] = []
    open_txs: list[Tx] = []

    def after_statement(name: str, tx: Tx) -> None:
        statements.append(name)
        hook(name, len(statements), tx)

    @contextmanager
    def write() -> Iterator[Tx]:
        if joins_outer and open_txs:
            yield open_txs[-1]
            return
        with original() as tx:
            hooked = _HookedTx(tx, after_statement)
            open_txs.append(hooked)
            try:
                yield hooked
            finally:
                open_txs.pop()

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(store, "_write", write)
        yield statements


def fail_after(number: int) -> Hook:
    """A hook that raises InjectedFault right after the ``number``-th statement."""

    def hook(name: str, seen: int, tx: Tx) -> None:
        if seen == number:
            raise InjectedFault(f"injected after statement {number} ({name})")

    return hook


def execute_raw(store: Store, sql: str) -> None:
    """Run ``sql`` as it stands in one write transaction of ``store``: a write that bypasses
    every guarded query, as a bug or a hand-written UPDATE would."""
    with store._write() as tx:  # type: ignore[attr-defined]
        tx._connection.execute(sql)
