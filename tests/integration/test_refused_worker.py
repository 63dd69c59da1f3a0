"""A worker that a full server turns away goes on, and says what it waits for
(docs/scale.md#what-a-worker-waits-for), with real processes: on a server of the test's own
with one connection left, the worker's pool takes it and its `LISTEN` is refused; it polls,
does its item, and its registry row says it waits for its wake-up line, until a connection
frees up and the line opens again."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import psycopg

from tests.helpers import wait_for
from tests.integration.worker_process import LiveWorker, make_project
from tests.pgserver import own_server
from wrighty.domain.states import ItemState


@contextlib.contextmanager
def all_but_one(url: str) -> Iterator[list[psycopg.Connection]]:
    """Every connection the server has, held, but one."""
    held: list[psycopg.Connection] = []
    try:
        while True:
            try:
                held.append(psycopg.connect(url, autocommit=True))
            except psycopg.OperationalError as refused:
                refusal = str(refused)
                break
        assert "too many clients" in refusal
        held.pop().close()
        yield held
    finally:
        for connection in held:
            connection.close()


def waiting_for(reader: psycopg.Connection) -> list[str | None]:
    return [row[0] for row in reader.execute("SELECT waiting_for FROM workers").fetchall()]


def test_a_worker_whose_listen_is_refused_polls_and_says_so(tmp_path: Path) -> None:
    with own_server(max_connections="6") as url:
        project = make_project(tmp_path / "p", store_url=url, worker={"workspaceMode": "directory"})
        first = project.plant("succeed", title="first")
        with all_but_one(url) as held:
            reader = held[0]
            worker = LiveWorker(project, "--idle-timeout", "60s")
            try:
                lost = worker.until("wake-ups-lost")
                assert "too many clients" in lost["cause"], lost
                said = wait_for(lambda: [w for w in waiting_for(reader) if w], timeout=30,
                                what="the worker's row to say what it waits for")  # fmt: skip
                assert said == [f"its wake-up line ({lost['cause']}): it polls meanwhile, and "
                                "opens it again"]  # fmt: skip
                wait_for(lambda: project_item_state(reader, first) == "done", timeout=30,
                         what="the item to be done while the worker polls")  # fmt: skip
                held.pop().close()  # a connection frees up: the line opens again
                worker.until("wake-ups-on")
                wait_for(lambda: waiting_for(reader) == [None], timeout=30,
                         what="the worker's row to wait for nothing")  # fmt: skip
            finally:
                worker.process.terminate()
                code, err = worker.finish()
        assert code == 130, err  # stopped cleanly by a signal (docs/cli.md)
        assert "Traceback" not in err
        assert project.get(first).state is ItemState.DONE


def project_item_state(reader: psycopg.Connection, item_id: int) -> str | None:
    row = reader.execute("SELECT state FROM items WHERE id = %s", (item_id,)).fetchone()
    return None if row is None else str(row[0])
