"""An item whose workspace is gone is never stuck: each needs-attention settlement offers, as its
next action, the command that moves it on, and that command works. Real `wrighty` processes,
run one after the other as a person would."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.worker_process import ProjectOnDisk, make_project
from wrighty.domain.model import Item
from wrighty.domain.states import ItemState

# Records where it ran; fails (exit 3) while the file named by $FAIL_FLAG exists.
AGENT = """
import os, sys
sys.stdin.read()
open("ran.txt", "a").write(os.getcwd() + "\\n")
sys.exit(3 if os.path.exists(os.environ["FAIL_FLAG"]) else 0)
"""


def project_in(tmp_path: Path, mode: str) -> tuple[ProjectOnDisk, Path]:
    flag = tmp_path / "fail-flag"
    command = [sys.executable, "-c", AGENT]
    agent = {"adapter": "command", "command": command, "resumeCommand": command,
             "env": {"FAIL_FLAG": str(flag)}}  # fmt: skip
    project = make_project(
        tmp_path / "project", worker={"workspaceMode": mode}, agents={"example": agent}
    )
    if mode == "worktree":
        git = ["git", "-C", str(project.root), "-c", "user.email=t@t", "-c", "user.name=t"]
        subprocess.run([*git, "init", "-q"], check=True)
        for key, value in (("user.email", "t@t"), ("user.name", "t")):  # wrighty's commits'
            subprocess.run([*git, "config", key, value], check=True)
        subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "init"], check=True)
    return project, flag


def follow(project: ProjectOnDisk, item: Item) -> None:
    """Run the item's next action, as printed by `wrighty show`."""
    assert item.next_action is not None
    program, *args = item.next_action.split()
    assert program == "wrighty"
    done = subprocess.run(project.command(*args), capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def run_once(project: ProjectOnDisk, item_id: int) -> Item:
    finished = project.worker("--once")
    assert finished.returncode == 0, finished.stderr
    return project.get(item_id)


@pytest.mark.parametrize("mode", ["directory", "worktree"])
def test_a_workspace_deleted_under_an_item_is_made_again_by_a_fresh_run(
    tmp_path: Path, mode: str
) -> None:
    project, flag = project_in(tmp_path, mode)
    flag.touch()
    item_id = project.plant("the task")
    failed = run_once(project, item_id)
    assert (failed.state, failed.reason_code) == (ItemState.NEEDS_ATTENTION, "agent-failure")
    assert failed.next_action == f"wrighty requeue {item_id} --resume"  # its session resumes
    workspace = project.root / ".wrighty" / ("workspaces" if mode == "directory" else "worktrees")
    workspace = workspace / str(item_id)
    assert (workspace / "ran.txt").exists()
    flag.unlink()
    shutil.rmtree(workspace)

    follow(project, failed)  # requeue --resume: a resume needs the workspace that is gone
    missing = run_once(project, item_id)
    assert (missing.state, missing.reason_code) == (
        ItemState.NEEDS_ATTENTION, "resume-state-missing")  # fmt: skip
    assert f"the workspace {workspace} is gone" in (missing.reason or "")
    assert missing.next_action == f"wrighty requeue {item_id} --fresh"

    follow(project, missing)  # requeue --fresh: a new session in a new workspace
    done = run_once(project, item_id)
    assert done.state is ItemState.DONE
    assert (workspace / "ran.txt").read_text() == f"{workspace}\n"
    if mode == "worktree":
        assert (workspace / ".git").is_file()  # a git worktree again, not a plain folder


def test_a_pinned_workspace_that_is_gone_says_what_to_do(tmp_path: Path) -> None:
    project, _ = project_in(tmp_path, "directory")
    pinned = tmp_path / "pinned"
    item_id = project.plant("the task", workspace=pinned)
    failed = run_once(project, item_id)
    assert (failed.state, failed.reason_code) == (ItemState.NEEDS_ATTENTION, "start-failed")
    assert (
        f"the workspace {pinned} that item {item_id} was created with (--workspace) is gone; "
        f"make that folder again and run `wrighty requeue {item_id} --fresh`"
    ) in (failed.reason or "")
    assert failed.next_action == f"wrighty requeue {item_id} --fresh"
    pinned.mkdir()
    follow(project, failed)
    assert run_once(project, item_id).state is ItemState.DONE
    assert (pinned / "ran.txt").read_text() == f"{pinned}\n"
