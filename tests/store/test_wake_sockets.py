"""SQLite's wake-ups: one datagram socket per listening worker in a private directory beside
the database. Sending never blocks and never fails a command; a dead worker's socket is
removed; a path too long for a socket address still works (Linux)."""

from __future__ import annotations

import os
import select
import socket
import stat
import time
from pathlib import Path

import pytest

from tests.conftest import FakeClock
from tests.store.test_contract import new_item
from wrighty.errors import StoreError
from wrighty.store.sqlite import SqliteStore, send_wakes


@pytest.fixture
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A short folder: a socket's path has room for 107 bytes, and a test's own tmp_path (its
    name, under an xdist worker's folder) can take most of them."""
    return tmp_path_factory.mktemp("w")


@pytest.fixture
def sqlite(folder: Path) -> SqliteStore:
    return SqliteStore.open(folder / ".wrighty" / "wrighty.db")


def sockets(directory: Path) -> list[str]:
    return sorted(name for name in os.listdir(directory) if name.endswith(".sock"))


def test_the_sockets_live_beside_the_database_private_and_go_with_their_worker(
    sqlite: SqliteStore, folder: Path
) -> None:
    line = sqlite.listen_for_work("w-0123456789ab")
    directory = folder / ".wrighty" / "wrighty.db-wake"
    assert sqlite.wake_directory == directory
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    path = directory / "w-0123456789ab.sock"
    assert stat.S_ISSOCK(path.stat().st_mode)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert line.intact()
    line.close()
    assert sockets(directory) == []


def test_a_directory_open_to_others_is_refused_and_left_as_it_is(
    sqlite: SqliteStore, clock: FakeClock
) -> None:
    sqlite.wake_directory.mkdir()
    os.chmod(sqlite.wake_directory, 0o755)
    with pytest.raises(StoreError, match=r"not this user's alone \(mode 0755\); remove it"):
        sqlite.listen_for_work("w-1")
    assert stat.S_IMODE(sqlite.wake_directory.stat().st_mode) == 0o755
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as planted:
        planted.bind(str(sqlite.wake_directory / "planted.sock"))
        planted.setblocking(False)
        sqlite.create_item(new_item(queued=True), at=clock(), actor="op")
        with pytest.raises(BlockingIOError):
            planted.recv(512)  # nothing is sent into a folder others may write to


def test_a_removed_socket_is_noticed(sqlite: SqliteStore) -> None:
    line = sqlite.listen_for_work("w-1")
    (sqlite.wake_directory / "w-1.sock").unlink()
    assert not line.intact()
    line.close()


def test_a_dead_workers_socket_is_removed_by_the_next_sender_and_the_next_listener(
    sqlite: SqliteStore, clock: FakeClock
) -> None:
    def leave_a_stale_socket(name: str) -> None:
        sqlite.wake_directory.mkdir(mode=0o700, exist_ok=True)
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as dead:
            dead.bind(str(sqlite.wake_directory / name))  # closed without removing the file

    leave_a_stale_socket("w-dead.sock")
    sqlite.create_item(new_item(queued=True), at=clock(), actor="op")
    assert sockets(sqlite.wake_directory) == []
    leave_a_stale_socket("w-dead.sock")
    line = sqlite.listen_for_work("w-live")
    assert sockets(sqlite.wake_directory) == ["w-live.sock"]
    line.close()


def test_sending_never_blocks_or_fails_whatever_the_sockets(
    sqlite: SqliteStore, clock: FakeClock
) -> None:
    send_wakes(sqlite.wake_directory, "{}")  # no directory: no worker ever listened
    line = sqlite.listen_for_work("w-full")
    (sqlite.wake_directory / "not-a-socket.sock").write_text("")
    began = time.monotonic()
    for _ in range(2000):  # far more than a socket's queue holds: the rest are dropped
        send_wakes(sqlite.wake_directory, "{}")
    assert time.monotonic() - began < 30  # (each send returns at once; a blocked one never)
    created = sqlite.create_item(new_item(queued=True), at=clock(), actor="op")
    assert sqlite.get_item(created.id) == created
    assert line.drain()
    assert not line.drain()  # everything queued was read at once
    line.close()


def test_a_path_longer_than_a_socket_address_still_works(tmp_path: Path, clock: FakeClock) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    assert len(os.fsencode(deep)) > 108
    store = SqliteStore.open(deep / "wrighty.db")
    line = store.listen_for_work("w-deep")
    assert sockets(store.wake_directory) == ["w-deep.sock"]
    store.create_item(new_item(queued=True), at=clock(), actor="op")
    assert select.select([line.fileno()], [], [], 10)[0]
    assert line.drain()
    line.close()
    assert sockets(store.wake_directory) == []
    store.close()
