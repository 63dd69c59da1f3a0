"""A fleet on one PostgreSQL database: 4 worker processes of 2 installations burn down 500
items whose agent crashes at random, under `processCrash: retry`."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.conftest import postgres_schema
from wrighty.domain.model import NewItem
from wrighty.domain.outcomes import RunKind
from wrighty.domain.states import ItemState
from wrighty.domain.transitions import replay
from wrighty.store.postgres import PostgresStore

ROOT = Path(__file__).resolve().parents[2]
ITEMS = 500
WORKERS_PER_INSTALLATION = 2


def installation(root: Path, name: str, url: str) -> tuple[Path, dict[str, str]]:
    """A project directory and environment of its own: its own config dir, so its own
    installation id, pointing at the shared database."""
    project = root / name
    project.mkdir()
    agent = [sys.executable, str(ROOT / "examples" / "agent.py")]
    document = {
        "store": {"url": url},
        "worker": {
            "defaultAgent": "example",
            "workspaceMode": "directory",
            "leaseSeconds": 30,
            "heartbeatSeconds": 5,
            "pollSeconds": 0.1,
            "processCrash": {"action": "retry", "initialRetryMinutes": 0.001,
                             "maxRetryMinutes": 0.002, "maxAttempts": 3},
        },
        "agents": {"example": {"adapter": "command", "command": agent, "resumeCommand": agent}},
    }  # fmt: skip
    (project / "wrighty.json").write_text(json.dumps(document))
    env = {k: v for k, v in os.environ.items() if not k.startswith("WRIGHTY_")}
    env["XDG_CONFIG_HOME"] = str(root / f"{name}-config")
    return project, env


@pytest.mark.slow
def test_a_fleet_burns_down_crashing_items_without_ever_running_one_twice(tmp_path: Path) -> None:
    with postgres_schema() as url:
        store = PostgresStore.open(url, create=True)
        now = datetime.now(UTC)
        for n in range(ITEMS):
            body = "wrighty-example: crash-random 0.3"
            store.create_item(NewItem(f"item {n}", body, None, None, None, ItemState.QUEUED),
                              at=now, actor="test")  # fmt: skip
        workers = []
        for name in ("site-a", "site-b"):
            project, env = installation(tmp_path, name, url)
            for _ in range(WORKERS_PER_INSTALLATION):
                workers.append(
                    subprocess.Popen(
                        [
                            sys.executable,
                            "-m",
                            "wrighty",
                            "worker",
                            "start",
                            "--idle-timeout",
                            "3s",
                            "--json",
                        ],
                        cwd=project,
                        env=env,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.PIPE,
                        text=True,
                    )
                )
        try:
            for worker in workers:
                _, err = worker.communicate(timeout=600)
                assert worker.returncode == 0, err
        finally:
            for worker in workers:
                worker.kill()
                worker.wait()

        items = store.list_items()
        states = {item.state for item in items}
        assert states <= {ItemState.DONE, ItemState.NEEDS_ATTENTION}, states
        runs_by_installation: dict[str, int] = defaultdict(int)
        resumed = 0
        for item in items:
            events = store.list_events(item.id)
            assert replay(events) is item.state  # every history replays cleanly
            runs = store.list_runs(item.id)
            for earlier, later in itertools.pairwise(runs):
                # Never two live agents: each run began after the one before it had ended.
                assert earlier.ended_at is not None
                assert later.started_at >= earlier.ended_at
                if later.kind is RunKind.RESUME:
                    resumed += 1
                    assert later.installation_id == earlier.installation_id
                    assert later.session_id == earlier.session_id
            for run in runs:
                runs_by_installation[run.installation_id] += 1
        store.close()
    assert len(items) == ITEMS
    assert resumed > 0  # the random crashes did happen, and were resumed
    assert len(runs_by_installation) == 2  # both installations worked
