"""An item handed to another agent by a person (docs/handoff.md): the next run is a new
session of that agent in the same workspace, told the task, that another agent worked on it,
what it left and the person's note; only a worker of the new agent takes it; the ledger and
`show` say which agent ran which run. Real agent processes, a worker in the test's process."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.integration.harness import WorkerProject
from wrighty.domain.model import NewItem
from wrighty.domain.outcomes import RunKind
from wrighty.domain.states import ItemState
from wrighty.services.review import handoff_item

# The first agent leaves a file and gives up; the second records what it was told and whether
# it found the first one's file, then finishes.
ALPHA = """
import pathlib, sys
sys.stdin.read()
pathlib.Path("notes.txt").write_text("half of the work\\n")
print("alpha gave up: the tests need a database", file=sys.stderr)
sys.exit(3)
"""
BETA = """
import json, os, pathlib, sys
told = sys.stdin.read()
record = {"prompt": told, "cwd": os.getcwd(), "found": pathlib.Path("notes.txt").exists(),
          "session": os.environ.get("WRIGHTY_SESSION_ID"),
          "kind": os.environ.get("WRIGHTY_RUN_KIND")}
pathlib.Path(os.environ["BETA_RECORD"]).write_text(json.dumps(record))
"""


class Project(WorkerProject):
    pass


# The `project` fixture's project (tests/conftest.py): ALPHA by default, BETA to hand off to.
pytestmark = pytest.mark.project(
    kind=Project, programs={"alpha": ALPHA, "beta": BETA},
    worker={"leaseSeconds": 2, "heartbeatSeconds": 0.2, "pollSeconds": 0.05,
            "workspaceMode": "directory"},
)  # fmt: skip


@pytest.fixture(autouse=True)
def _beta_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where BETA records what it was told."""
    monkeypatch.setenv("BETA_RECORD", str(tmp_path / "beta.json"))


def test_a_handed_off_item_runs_a_new_session_of_the_new_agent_in_the_same_workspace(
    project: Project, tmp_path: Path
) -> None:
    store = project.store
    made = store.create_item(
        NewItem("Fix the login test", "Make the login test pass.", None, None, None,
                ItemState.QUEUED),
        at=datetime.now(UTC), actor="op",
    )  # fmt: skip
    project.pass_once()
    failed = project.get(made.id)
    assert (failed.state, failed.reason_code) == (ItemState.NEEDS_ATTENTION, "agent-failure")
    first_session = store.get_session(made.id)
    assert first_session is not None

    change = handoff_item(
        store, made.id, "beta", note="notes.txt has what alpha found",
        default_agent="alpha", now=datetime.now(UTC),
    )  # fmt: skip
    handed = change.after
    assert (handed.state, handed.reason_code, handed.agent, handed.handoffs) == (
        ItemState.RETRY_SCHEDULED, "handed-off", "beta", 1)  # fmt: skip
    assert handed.reason == ("handed off from alpha to beta: notes.txt has what alpha found")

    project.pass_once()  # a worker of the default agent, alpha: not its item any more
    assert project.get(made.id).state is ItemState.RETRY_SCHEDULED
    project.pass_once(agent="beta")
    done = project.get(made.id)
    assert done.state is ItemState.DONE

    told = json.loads((tmp_path / "beta.json").read_text())
    assert told["found"] is True  # alpha's file, in the same workspace
    assert told["cwd"] == first_session.workspace
    assert told["session"] != first_session.session_id  # a new session
    assert told["kind"] == "handoff"  # WRIGHTY_RUN_KIND (docs/worker.md#what-a-run-is-told)
    prompt = told["prompt"]
    assert prompt.startswith("Make the login test pass.\n")
    assert "Another agent (alpha) worked on this task before you, in this workspace" in prompt
    assert "Its last run ended as agent-failure" in prompt
    assert "alpha gave up: the tests need a database" in prompt
    assert "A person's note for you:\n\nnotes.txt has what alpha found" in prompt

    first, second = store.list_runs(made.id)
    assert (first.agent, first.kind) == ("alpha", RunKind.FRESH)
    assert (second.agent, second.kind) == ("beta", RunKind.FRESH)
    session = store.get_session(made.id)
    assert session is not None
    assert session.workspace == first_session.workspace
    moves = [(e.to_state, e.reason_code) for e in store.list_events(made.id)]
    assert (ItemState.RETRY_SCHEDULED, "handed-off") in moves
    shown = subprocess.run(
        [sys.executable, "-m", "wrighty", "--config", str(project.root / "wrighty.json"),
         "show", str(made.id)], capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "handoffs" in shown
    assert "AGENT" in shown  # which agent ran which run
    [alpha_row] = [line for line in shown.splitlines() if line.lstrip().startswith("1 ")]
    [beta_row] = [line for line in shown.splitlines() if line.lstrip().startswith("2 ")]
    assert "alpha" in alpha_row
    assert "beta" in beta_row
