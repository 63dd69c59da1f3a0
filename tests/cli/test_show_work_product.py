"""`wrighty show` and the work product: the branch and base an item's session recorded, the
commits its worktree made since and whether it has uncommitted changes, and `wrighty diff`
among the next commands where it would show the change (docs/work-product.md#where-it-shows).
Real git, in a repository of the test's; the items are built through the store as a worker
leaves them (tests/cli/test_workspaces_cli.py's helpers)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.cli.conftest import wrighty
from tests.cli.run_helpers import create_queued, settle
from tests.cli.test_workspaces_cli import directory_item, git, record_run, repo, worktree_item
from tests.conftest import FakeClock
from wrighty.domain.model import Session
from wrighty.domain.outcomes import OutcomeClass
from wrighty.domain.states import ItemState
from wrighty.installation import installation_id

__all__ = ["repo"]


def shown(item_id: int) -> str:
    result = wrighty("show", str(item_id))
    assert result.exit_code == 0, result.output
    return result.stdout


def branch_line(text: str) -> str:
    [line] = [line.strip() for line in text.splitlines() if line.strip().startswith("branch ")]
    return line


def base_of(item_id: int) -> str:
    session = json.loads(wrighty("show", str(item_id), "--json").stdout)["session"]
    return str(session["base_commit"])


def test_a_done_item_shows_its_branch_base_commits_and_uncommitted_changes(
    repo: Path, clock: FakeClock
) -> None:
    item_id = worktree_item(repo, clock, ItemState.DONE, dirty=True)
    text = shown(item_id)
    base = base_of(item_id)
    assert branch_line(text) == (
        f"branch     wrighty/{item_id}-task from {base[:12]}, 1 commit ahead, uncommitted changes"
    )
    assert f"wrighty diff {item_id}" in text


def test_a_clean_worktree_with_no_commit_says_so(repo: Path, clock: FakeClock) -> None:
    item_id = worktree_item(repo, clock, ItemState.NEEDS_ATTENTION, commit=False)
    line = branch_line(shown(item_id))
    assert line.endswith(", 0 commits ahead, nothing uncommitted")
    # A commit made later counts, whatever the project's HEAD did meanwhile.
    worktree = repo / ".wrighty" / "worktrees" / str(item_id)
    (worktree / "new.txt").write_text("x\n")
    git(worktree, "add", "new.txt")
    git(worktree, "commit", "-q", "-m", "one")
    (repo / "README").write_text("the project moved on\n")
    git(repo, "commit", "-q", "-am", "project")
    assert branch_line(shown(item_id)).endswith(", 1 commit ahead, nothing uncommitted")


def test_a_waiting_item_is_offered_its_change_after_the_resume(
    repo: Path, clock: FakeClock
) -> None:
    item_id = worktree_item(repo, clock, ItemState.NEEDS_ATTENTION)
    lines = (line.strip("│ ") for line in shown(item_id).splitlines())  # the panel's
    commands = [line for line in lines if line.startswith("wrighty ")]
    assert f"wrighty diff {item_id}" in commands
    assert commands.index(f"wrighty diff {item_id}") < commands.index(
        f"wrighty requeue {item_id} --fresh"
    )
    assert wrighty("diff", str(item_id), "--stat").exit_code == 0  # what it offers, works


def test_a_worktree_that_is_gone_shows_its_branch_and_base_only_and_no_diff(
    repo: Path, clock: FakeClock
) -> None:
    item_id = worktree_item(repo, clock, ItemState.DONE)
    shutil.rmtree(repo / ".wrighty" / "worktrees" / str(item_id))
    text = shown(item_id)
    assert branch_line(text) == f"branch     wrighty/{item_id}-task from {base_of(item_id)[:12]}"
    assert "wrighty diff" not in text
    assert wrighty("diff", str(item_id)).exit_code == 2  # as it refuses


def test_a_directory_workspace_has_no_branch_and_no_diff(repo: Path, clock: FakeClock) -> None:
    item_id = directory_item(repo, clock, ItemState.DONE)
    text = shown(item_id)
    assert not any(line.strip().startswith("branch ") for line in text.splitlines())
    assert "wrighty diff" not in text


def test_the_project_directory_has_no_branch_and_its_diff_is_not_offered(
    repo: Path, clock: FakeClock
) -> None:
    # workspaceMode current: `wrighty diff` shows it, but others' changes may be in it.
    item_id = create_queued()
    session = Session(item_id, "command", "s-1", str(repo), installation_id())
    started = record_run(repo, item_id, clock, session)
    settle(repo, started, ItemState.DONE, at=clock(), outcome=OutcomeClass.SUCCEEDED)
    (repo / "README").write_text("changed\n")
    text = shown(item_id)
    assert not any(line.strip().startswith("branch ") for line in text.splitlines())
    assert "wrighty diff" not in text
    assert wrighty("diff", str(item_id)).exit_code == 0
