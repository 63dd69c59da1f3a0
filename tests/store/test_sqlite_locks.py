"""Opening the store file again in a process that has it open (a server's requests, a test's
second store) must not drop the locks of the connection already open: on Linux, closing any
descriptor of a file drops every POSIX lock the process holds on it, so wrighty never opens
the database file with a descriptor of its own (wrighty/store/sqlite.py)."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from wrighty.domain.model import NewItem
from wrighty.domain.states import ItemState
from wrighty.store.sqlite import SqliteStore

COUNT = (
    "import sys; from pathlib import Path; from wrighty.store.sqlite import SqliteStore; "
    "s = SqliteStore.open(Path(sys.argv[1])); print(len(s.list_items())); s.close()"
)


def seen_by_another_process(path: Path) -> int:
    done = subprocess.run(
        [sys.executable, "-c", COUNT, str(path)], capture_output=True, text=True, check=True
    )
    return int(done.stdout)


def test_a_second_open_leaves_the_first_connections_writes_visible(tmp_path: Path) -> None:
    path = tmp_path / "wrighty.db"
    first = SqliteStore.open(path)
    try:
        SqliteStore.open(path).close()  # as a request of a server would
        # Another process, finding no lock, took itself for the last connection: it reset the
        # WAL as it closed, and the first connection's next write went where none could see it.
        assert seen_by_another_process(path) == 0
        first.create_item(
            NewItem("t", "b", None, None, None, ItemState.QUEUED),
            at=datetime.now(UTC),
            actor="op",
        )
        assert seen_by_another_process(path) == 1
    finally:
        first.close()
