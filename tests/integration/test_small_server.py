"""Many workers on a server with few connections (docs/scale.md#connections), with real
processes: eight workers running four agents each, on a PostgreSQL server of the test's own
whose `max_connections` is 20, do every item while a script's `wrighty status --json` answers
every call, and the server never sees more than its 20."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import psycopg

from tests.integration.worker_process import LiveWorker, make_project
from tests.pgserver import own_server
from wrighty.domain.states import ItemState

AGENT = "import time\ntime.sleep(0.3)\n"
WORKERS, CONCURRENCY, ITEMS = 8, 4, 48


def test_eight_workers_of_four_agents_on_a_server_of_twenty_connections(tmp_path: Path) -> None:
    with own_server(max_connections="20") as url:
        project = make_project(
            tmp_path / "p", store_url=url, programs={"quick": AGENT},
            worker={"concurrency": CONCURRENCY, "workspaceMode": "directory"},
        )  # fmt: skip
        ids = [project.plant(f"task {n}", title=f"Item {n}") for n in range(ITEMS)]
        stop = threading.Event()
        codes: list[int] = []
        peak = [0]

        def status() -> None:
            while not stop.is_set():
                ran = subprocess.run(
                    project.command("status", "--json"), cwd=project.root, env=project.env,
                    capture_output=True, text=True, timeout=60, check=False,
                )  # fmt: skip
                codes.append(ran.returncode)

        def sample() -> None:
            with psycopg.connect(url, autocommit=True) as admin:
                while not stop.is_set():
                    row = admin.execute(
                        "SELECT count(*) FROM pg_stat_activity "
                        "WHERE backend_type = 'client backend'"
                    ).fetchone()
                    peak[0] = max(peak[0], row[0] if row else 0)
                    stop.wait(0.05)

        threads = [threading.Thread(target=status), threading.Thread(target=sample)]
        for thread in threads:
            thread.start()
        workers = [LiveWorker(project, "--idle-timeout", "2s") for _ in range(WORKERS)]
        try:
            ended = [worker.finish() for worker in workers]
        finally:
            stop.set()
            for thread in threads:
                thread.join()
        for code, err in ended:
            assert code == 0, err
            assert "Traceback" not in err
        said = [event["event"] for worker in workers for event in worker.events]
        assert "wake-ups-lost" not in said
        assert [project.get(item_id).state for item_id in ids] == [ItemState.DONE] * ITEMS
        assert codes
        assert set(codes) <= {0, 1}, codes  # every call answered: healthy or not, never refused
        assert peak[0] <= 20
