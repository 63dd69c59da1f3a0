"""wrighty behind PgBouncer in transaction mode, and a process's connection budget, with real
processes (docs/scale.md): a pooler that refuses the `options` startup parameter is found and
the session settings go into each transaction (a statement past its timeout is still
stopped, the URL's schema is the one written), no statement is prepared on a server session
another client may get next, a worker without store.listenUrl says it polls and one with it
listens past the pooler; a server (or pooler) out of connections is one line; and a worker
running four agents holds at most two server connections."""

from __future__ import annotations

import re
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from tests.conftest import POSTGRES_URL, postgres_schema
from tests.helpers import wait_for
from tests.integration.worker_process import LiveWorker, make_project
from tests.pgbouncer import Bouncer, pgbouncer
from wrighty.domain.states import ItemState
from wrighty.errors import StoreError
from wrighty.store.postgres import PostgresStore

SQL_DIR = Path(__file__).resolve().parents[2] / "wrighty" / "store" / "sql"


@pytest.fixture
def bouncer() -> Iterator[Bouncer]:
    with pgbouncer(server_pool=2) as running:
        yield running


@pytest.fixture
def direct() -> Iterator[str]:
    with postgres_schema() as url:
        yield url


def test_commands_and_a_worker_run_through_pgbouncer_in_transaction_mode(
    tmp_path: Path, bouncer: Bouncer, direct: str
) -> None:
    url = bouncer.url(direct)
    project = make_project(tmp_path / "p", store_url=url)
    worker = LiveWorker(project, "--max-items", "3")
    off = worker.until("wake-ups-off")  # at its first idle wait
    assert "store.listenUrl" in off["cause"]
    ids = [project.plant(f"task {n}", title=f"Item {n}") for n in range(3)]  # found by polling
    code, err = worker.finish()
    assert code == 0, err
    assert [project.get(item_id).state for item_id in ids] == [ItemState.DONE] * 3
    listed = project.wrighty("list")
    assert "Item 2" in listed
    # the tables are in the URL's schema, written through the pooler
    schema = re.search(r"search_path%3D(\w+)", direct)
    assert schema is not None
    with psycopg.connect(POSTGRES_URL) as admin:
        found = admin.execute(
            sql.SQL("SELECT count(*) FROM {}.items").format(sql.Identifier(schema.group(1)))
        ).fetchone()
    assert found == (3,)


def test_with_a_listen_url_a_worker_listens_past_the_pooler(
    tmp_path: Path, bouncer: Bouncer, direct: str
) -> None:
    # A poll of an hour: only the NOTIFY, heard past the pooler, can bring the item in.
    project = make_project(
        tmp_path / "p", store_url=bouncer.url(direct), worker={"pollSeconds": 3600},
        store={"listenUrl": POSTGRES_URL},
    )  # fmt: skip
    worker = LiveWorker(project, "--max-items", "1")
    on = worker.until("wake-ups-on")
    assert on["via"] == "listen"
    project.wrighty("create", "--title", "Heard", "--body", "b", "--queue")
    worker.until("settled")
    code, err = worker.finish()
    assert code == 0, err


def test_the_settings_are_in_force_inside_each_transaction(bouncer: Bouncer, direct: str) -> None:
    url = bouncer.url(direct).replace("options=", "options=-cstatement_timeout%3D1s%20")
    store = PostgresStore.open(url, create=True)
    try:
        with store._write() as tx:
            said = tx.run("select_current_schema").fetchone()
            timeout = tx._connection.execute("SHOW statement_timeout").fetchone()  # type: ignore[attr-defined]
        assert said is not None
        assert said["schema"] in direct
        assert timeout is not None
        assert timeout["statement_timeout"] == "1s"
        # A statement that waits on a lock another session holds runs until its timeout (1 s,
        # before lock_timeout's 5 s) stops it.
        with psycopg.connect(POSTGRES_URL, autocommit=True) as holder:
            holder.execute("SELECT pg_advisory_lock(4646)")
            with pytest.raises(StoreError, match="statement timeout"), store._write() as tx:
                tx._connection.execute("SELECT pg_advisory_xact_lock(4646)")  # type: ignore[attr-defined]
    finally:
        store.close()


def test_no_statement_is_prepared_where_another_client_gets_the_session(
    tmp_path: Path, direct: str
) -> None:
    with pgbouncer(server_pool=1) as single:
        url = single.url(direct)
        first = PostgresStore.open(url, create=True)
        second = PostgresStore.open(url)
        try:
            for _ in range(12):  # psycopg prepares a statement run 5 times, unless told not to
                for store in (first, second):
                    assert list(store.list_items()) == []
        finally:
            first.close()
            second.close()


def test_every_lock_and_setting_lives_in_a_transaction() -> None:
    """What a transaction pooler hands on to the next client: nothing of wrighty's."""
    texts = {path: path.read_text() for path in SQL_DIR.rglob("*.sql")}
    for path, text in texts.items():
        assert not re.search(r"pg_(try_)?advisory_lock(_shared)?\s*\(", text), path
        assert not re.search(r"^\s*(SET\s+SESSION|PREPARE|LISTEN)\b", text, re.I | re.M), path
    assert any("pg_advisory_xact_lock" in text for text in texts.values())


def test_a_pooler_out_of_connections_is_one_line(tmp_path: Path, direct: str) -> None:
    with pgbouncer(max_clients=2) as full:
        url = full.url(direct)
        PostgresStore.open(url, create=True).close()
        project = make_project(tmp_path / "p", store_url=url, create_store=False)
        held = [psycopg.connect(url.split("?")[0]) for _ in range(2)]
        try:
            for args in (("list",), ("status", "--json")):
                done = subprocess.run(
                    project.command(*args), cwd=project.root, env=project.env,
                    capture_output=True, text=True, timeout=60, check=False,
                )  # fmt: skip
                assert done.returncode == 2, done.stderr
                assert done.stderr.count("\n") == 1, done.stderr
                assert "no connection left for wrighty" in done.stderr
                assert "store.poolSize" in done.stderr
                assert done.stdout == ""
        finally:
            for connection in held:
                connection.close()


AGENT = """\
import os, pathlib, time
gate = pathlib.Path(os.environ["GATE"])
(gate.parent / f"running-{os.environ['WRIGHTY_ITEM_ID']}").touch()
while not gate.exists():
    time.sleep(0.05)
"""


def test_a_worker_running_four_agents_holds_at_most_two_connections(
    tmp_path: Path, direct: str
) -> None:
    name = f"wrighty-budget-{uuid.uuid4().hex[:8]}"
    url = f"{direct}&application_name={name}"
    gate = tmp_path / "gate" / "open"
    gate.parent.mkdir()
    project = make_project(
        tmp_path / "p", store_url=url, programs={"sleeper": AGENT},
        env={"GATE": str(gate)}, worker={"concurrency": 4, "workspaceMode": "directory"},
    )  # fmt: skip
    for n in range(4):
        project.plant(f"task {n}", title=f"Item {n}")
    worker = LiveWorker(project, "--max-items", "4")
    seen = []
    try:
        wait_for(lambda: len(list(gate.parent.glob("running-*"))) == 4, timeout=60, what="4 agents")
        with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
            for _ in range(20):  # while all four run, their heartbeats going
                row = admin.execute(
                    "SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = %s",
                    (name,),
                ).fetchone()
                assert row is not None
                seen.append(row[0])
    finally:
        gate.touch()
        code, err = worker.finish()
    assert code == 0, err
    assert 1 <= max(seen) <= 2, seen


def test_options_a_pooler_cannot_carry_are_one_line(
    tmp_path: Path, bouncer: Bouncer, direct: str
) -> None:
    url = bouncer.url(direct).replace("options=", "options=-e%20")  # not a -c setting
    project = make_project(tmp_path / "p", store_url=url, create_store=False)
    done = subprocess.run(
        project.command("list"), cwd=project.root, env=project.env, capture_output=True,
        text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1
    assert "give only -c name=value in the URL's options" in done.stderr


def test_a_pooler_in_session_mode_keeps_its_listen_on_the_url(tmp_path: Path, direct: str) -> None:
    with pgbouncer(mode="session", server_pool=5) as session:  # a session holds one
        project = make_project(
            tmp_path / "p", store_url=session.url(direct), worker={"pollSeconds": 3600},
            store={"pooler": "session"},
        )  # fmt: skip
        worker = LiveWorker(project, "--max-items", "1")
        on = worker.until("wake-ups-on")
        assert on["via"] == "listen"
        project.wrighty("create", "--title", "Heard", "--body", "b", "--queue")
        worker.until("settled")  # only the NOTIFY, heard through the pooler, brings it in
        code, err = worker.finish()
        assert code == 0, err
