"""A real `wrighty worker start` says in the registry which agent it runs, and `wrighty status`
(another process) names the agent whose items no live worker runs, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.integration.test_scheduling_processes import postgres_store, sqlite_store
from wrighty.domain.model import NewItem
from wrighty.domain.states import ItemState
from wrighty.store.port import Store


def _until_registered(store: Store, worker: subprocess.Popen[str], within: float = 30) -> None:
    deadline = time.monotonic() + within
    while not store.list_workers():
        assert worker.poll() is None, worker.communicate()
        assert time.monotonic() < deadline, "the worker never registered"
        time.sleep(0.05)


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_status_names_the_agent_no_running_worker_runs(tmp_path: Path, backend: str) -> None:
    opened = sqlite_store(tmp_path) if backend == "sqlite" else postgres_store(tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("WRIGHTY_")}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    with opened as (url, store):
        document = {
            "store": {"url": url},
            "worker": {"defaultAgent": "solo", "workspaceMode": "directory", "pollSeconds": 0.2},
            "agents": {name: {"adapter": "command", "command": ["true"]}
                       for name in ("solo", "codex")},
        }  # fmt: skip
        (project / "wrighty.json").write_text(json.dumps(document))
        for _ in range(3):
            store.create_item(
                NewItem("t", "b", "codex", None, None, ItemState.QUEUED),
                at=datetime.now(UTC),
                actor="test",
            )
        worker = subprocess.Popen(
            [sys.executable, "-m", "wrighty", "worker", "start", "--json"],
            cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            _until_registered(store, worker)
            status = subprocess.run(
                [sys.executable, "-m", "wrighty", "status", "--json"],
                cwd=project, env=env, capture_output=True, text=True, timeout=60, check=False,
            )  # fmt: skip
        finally:
            worker.send_signal(signal.SIGTERM)
            out, err = worker.communicate(timeout=60)
    assert worker.returncode == 130, err
    assert status.returncode == 0, status.stderr
    report = json.loads(status.stdout)
    assert [w["agent"] for w in report["workers"]] == ["solo"]
    assert report["unserved"] == [{"agent": "codex", "waiting": 3}]
    assert "3 items wait for agent codex; no live worker runs it" in [
        w["message"] for w in report["warnings"]
    ]
    assert json.loads(out.splitlines()[0])["agent"] == "solo"
