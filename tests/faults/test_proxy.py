"""The fault proxy itself does what the fleet tests rely on."""

from __future__ import annotations

import select
import time
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest

from tests.conftest import postgres_or_skip
from tests.faults.proxy import FaultProxy


@pytest.fixture
def proxy() -> Iterator[FaultProxy]:
    postgres_or_skip()
    made = FaultProxy()
    yield made
    made.close()


@contextmanager
def _connect(port: int) -> Iterator[psycopg.Connection]:
    connection = psycopg.connect(
        f"postgresql://postgres@127.0.0.1:{port}/test", connect_timeout=3, autocommit=True
    )
    try:
        yield connection
    finally:
        connection.pgconn.finish()  # without a word to a server that may not be listening


def test_it_forwards_and_a_frozen_connection_gets_no_answer_until_it_thaws(
    proxy: FaultProxy,
) -> None:
    with _connect(proxy.port) as connection:
        assert connection.execute("SELECT 1").fetchone() == (1,)
        proxy.freeze()
        connection.pgconn.send_query(b"SELECT 2")
        connection.pgconn.flush()
        socket_fd = connection.pgconn.socket
        assert select.select([socket_fd], [], [], 0.3)[0] == []  # nothing tells the client
        proxy.forward()
        assert select.select([socket_fd], [], [], 10)[0] == [socket_fd]


def test_a_refusing_proxy_refuses_and_comes_back_on_the_same_port(proxy: FaultProxy) -> None:
    port = proxy.port
    proxy.refuse()
    with pytest.raises(psycopg.OperationalError, match="refused"), _connect(port):
        pass
    proxy.forward()
    assert proxy.port == port
    with _connect(port) as connection:
        assert connection.execute("SELECT 3").fetchone() == (3,)


def test_hold_after_leaves_the_session_idle_in_transaction(proxy: FaultProxy) -> None:
    with _connect(5432) as watcher, _connect(proxy.port) as held:
        pid = held.info.backend_pid
        proxy.hold_after(b"SELECT 'marker'")
        held.execute("BEGIN")
        held.execute("SELECT 'marker'")
        assert proxy.held() == 1
        held.pgconn.send_query(b"COMMIT")  # never reaches the server
        for _ in range(100):
            row = watcher.execute(
                "SELECT state FROM pg_stat_activity WHERE pid = %s", (pid,)
            ).fetchone()
            if row == ("idle in transaction",):
                break
            time.sleep(0.02)
        assert row == ("idle in transaction",)
        watcher.execute("SELECT pg_terminate_backend(%s)", (pid,))
