"""Workspaces a real worker made (workspaceMode worktree, a command agent) as `wrighty
workspaces` lists them and `workspaces clean` removes them; and a worktree gone from under an
item that waits for a person is made again by `requeue --fresh` (docs/work-product.md)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from tests.helpers import git, git_repo
from tests.integration.worker_process import ProjectOnDisk, make_project
from wrighty.domain.states import ItemState

# Writes a file in its workspace; fails when its task says FAIL.
AGENT = textwrap.dedent(
    """\
    import pathlib, sys
    task = sys.stdin.read()
    pathlib.Path("work.txt").write_text(task)
    sys.exit(3 if "FAIL" in task else 0)
    """
)


def worktree_project(tmp_path: Path) -> ProjectOnDisk:
    root = git_repo(tmp_path / "p")
    agent = root / "agent.py"
    agent.write_text(AGENT)
    return make_project(
        root,
        worker={"defaultAgent": "writer", "workspaceMode": "worktree"},
        agents={"writer": {"adapter": "command", "command": [sys.executable, str(agent)]}},
    )


def wrighty(project: ProjectOnDisk, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        project.command(*args),
        cwd=project.root,
        env=project.env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def listed(project: ProjectOnDisk) -> dict[int, dict[str, Any]]:
    done = wrighty(project, "workspaces", "--json")
    assert done.returncode == 0, done.stderr
    return {row["item_id"]: row for row in json.loads(done.stdout)}


def test_a_workers_worktree_is_listed_and_cleaned(tmp_path: Path) -> None:
    project = worktree_project(tmp_path)
    item_id = project.plant("write it down")
    ran = project.worker("--once")
    assert ran.returncode == 0, ran.stderr
    assert project.get(item_id).state is ItemState.DONE
    path = project.root / ".wrighty" / "worktrees" / str(item_id)
    row = listed(project)[item_id]
    # the done run's change is committed on the item's branch (completion.commit wrighty): the
    # worktree is clean, one commit ahead of its base, which the project's HEAD lacks
    assert (row["mode"], row["path"], row["exists"], row["dirty"]) == (
        "worktree",
        str(path),
        True,
        False,
    )
    assert (row["ahead"], row["merged"]) == (1, False)
    assert row["size_bytes"] > 0
    refused = wrighty(project, "workspaces", "clean", "--done", "--branches")
    assert refused.returncode == 1
    assert "has commits the project's HEAD lacks" in refused.stdout
    assert (path / "work.txt").exists()
    # without --branches the branch keeps the work: the worktree goes
    cleaned = wrighty(project, "workspaces", "clean", "--done")
    assert cleaned.returncode == 0, cleaned.stdout + cleaned.stderr
    assert not path.exists()
    assert str(path) not in git(project.root, "worktree", "list")
    assert "work.txt" in git(project.root, "show", "--name-only", "--format=", row["branch"])
    shown = wrighty(project, "show", str(item_id))
    assert shown.returncode == 0, shown.stderr


def test_requeue_fresh_makes_a_gone_worktree_again(tmp_path: Path) -> None:
    project = worktree_project(tmp_path)
    item_id = project.plant("FAIL this once")
    assert project.worker("--once").returncode == 0
    waiting = project.get(item_id)
    assert waiting.state is ItemState.NEEDS_ATTENTION, waiting.reason
    path = project.root / ".wrighty" / "worktrees" / str(item_id)
    # never by `clean` (a resume may need it): removed by hand, as a person may
    git(project.root, "worktree", "remove", "--force", str(path))
    git(project.root, "worktree", "prune")
    assert listed(project)[item_id]["exists"] is False
    assert wrighty(project, "show", str(item_id)).returncode == 0
    requeued = wrighty(project, "requeue", str(item_id), "--fresh")
    assert requeued.returncode == 0, requeued.stderr
    assert project.worker("--once").returncode == 0
    assert project.get(item_id).state is ItemState.NEEDS_ATTENTION  # it failed again, but ran
    assert (path / "work.txt").read_text().startswith("FAIL")
    assert listed(project)[item_id]["exists"] is True
