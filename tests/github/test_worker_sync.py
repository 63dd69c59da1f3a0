"""The worker's periodic sync (sources.pollSeconds), as a real `wrighty worker start` process
against the local GitHub API, on both stores: a labelled issue becomes an item the worker
runs, without a command; a failing source is said once and stops nothing."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tests.github.conftest import ServedGitHub
from tests.github.fake_api import TOKEN
from tests.integration.worker_process import LiveWorker, make_project

REPO = "acme/widgets"


def test_a_labelled_issue_becomes_an_item_the_worker_runs(
    tmp_path: Path, github: ServedGitHub, store_url: str | None
) -> None:
    tracker: dict[str, Any] = {
        "kind": "github", "name": "widgets", "repo": REPO, "labels": ["wrighty"],
        "apiUrl": github.url,
    }  # fmt: skip
    project = make_project(
        tmp_path / "project", store_url=store_url, env={"GITHUB_TOKEN": TOKEN},
        sources={"pollSeconds": 1, "trackers": [tracker]},
    )  # fmt: skip
    worker = LiveWorker(project)
    try:
        worker.until("started")
        github.fake.add_issue(REPO, 5, "Say hello", "Print hello.")
        synced = worker.until("source-synced", source="widgets")
        assert (synced["created"], synced["updated"], synced["cancelled"]) == (1, 0, 0)
        settled = worker.until("settled")
        assert settled["state"] == "done"
        github.fake.fault = "5xx"
        failed = worker.until("source-failed", source="widgets")
        assert "GitHub answered 502" in failed["error"]
        assert TOKEN not in failed["error"]
        # Said once: the next failure (the sync backs off: 2 s) is not said again.
        deadline = time.monotonic() + 30
        while github.fake.counted(502) < 2:
            assert time.monotonic() < deadline, "no second sync"
            time.sleep(0.05)
        github.fake.fault = None
        github.fake.add_issue(REPO, 6, "Say goodbye", "Print goodbye.")
        worker.until("source-synced", source="widgets", created=1)
    finally:
        worker.process.terminate()
        worker.finish()
    assert [e["event"] for e in worker.events].count("source-failed") == 1
    item = project.get(1)
    assert item.import_key == "github:acme/widgets#5"
