"""Values set in wrighty.json's `agents.<name>.env` are secrets wherever the worker's own
environment's are (docs/config.md#agents): never shown by `wrighty logs`, `show`, an agent's
`wrighty fail --reason`, or a handoff prompt told to another agent. A real worker process and
real agent processes, on each store."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.integration.harness import WorkerProject
from wrighty.domain.model import NewItem
from wrighty.domain.states import ItemState
from wrighty.services.review import handoff_item

# Neither the names nor the values look like secrets to the patterns: only the config says so.
HOOK = "hook-Plain-value-5521"
OWN = "own-Plain-value-7713"  # the worker's own credential variable's
AGENT = """
import os, subprocess, sys
sys.stdin.read()
hook = os.environ["BUILD_HOOK"]
print("calling", hook, "and", os.environ["DEPLOY_TOKEN"], flush=True)
print("stderr says", hook, file=sys.stderr, flush=True)
subprocess.run([sys.executable, "-m", "wrighty", "fail", "--reason", f"the hook {hook} broke"],
               check=True)
"""
RECORDER = """
import os, pathlib, sys
pathlib.Path(os.environ["TOLD_RECORD"]).write_text(sys.stdin.read())
"""


@pytest.fixture
def project(
    make_project: Callable[..., WorkerProject],
    store_url: str | None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> WorkerProject:
    """On each store: AGENT by default, with an env value of its own; RECORDER to hand off to."""
    monkeypatch.setenv("DEPLOY_TOKEN", OWN)
    monkeypatch.setenv("TOLD_RECORD", str(tmp_path / "told.txt"))
    return make_project(
        kind=WorkerProject,
        programs={"alpha": ("agent.py", AGENT), "beta": ("recorder.py", RECORDER)},
        agents={"alpha": {"env": {"BUILD_HOOK": HOOK}}}, store_url=store_url,
        worker={"heartbeatSeconds": 0.2, "pollSeconds": 0.05, "workspaceMode": "directory"},
    )  # fmt: skip


def wrighty(project: WorkerProject, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "wrighty", "--config", str(project.root / "wrighty.json"), *argv],
        cwd=project.root, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def test_an_agents_env_values_never_show_in_logs_show_a_reason_or_a_handoff_prompt(
    project: WorkerProject, tmp_path: Path
) -> None:
    made = project.store.create_item(
        NewItem("Deploy", "Deploy it.", None, None, None, ItemState.QUEUED),
        at=datetime.now(UTC), actor="op",
    )  # fmt: skip
    worker = wrighty(project, "worker", "start", "--once")
    assert worker.returncode == 0, worker.stderr
    failed = project.get(made.id)
    assert failed.reason_code == "agent-failure"
    assert "the hook [REDACTED] broke" in (failed.reason or "")

    logs = wrighty(project, "logs", str(made.id))
    assert logs.returncode == 0, logs.stderr
    assert logs.stdout.startswith("calling [REDACTED] and [REDACTED]\n")
    assert logs.stderr == "── stderr ──\nstderr says [REDACTED]\n"
    shown = wrighty(project, "show", str(made.id))
    assert shown.returncode == 0, shown.stderr
    assert "the hook [REDACTED] broke" in shown.stdout
    [run] = project.store.list_runs(made.id)
    for text in (shown.stdout, failed.reason or "", run.diagnostic or ""):
        assert HOOK not in text
        assert OWN not in text

    handoff_item(
        project.store, made.id, "beta", note=None, default_agent="alpha", now=datetime.now(UTC)
    )
    handed = wrighty(project, "worker", "start", "--once", "--agent", "beta")
    assert handed.returncode == 0, handed.stderr
    assert project.get(made.id).state is ItemState.DONE
    told = (tmp_path / "told.txt").read_text()
    assert "Another agent (alpha) worked on this task before you" in told
    assert "[REDACTED]" in told
    assert HOOK not in told
    assert OWN not in told
    assert os.environ.get("BUILD_HOOK") is None  # the value only ever came from wrighty.json
