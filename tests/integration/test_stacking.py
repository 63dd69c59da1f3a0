"""Stacked items with real git and real `wrighty worker start --once` processes, on both stores
(docs/landing.md#stacked-items): with completion.stack an item that comes after one waiting in
review starts from that item's branch, counts its change from there, and lands after it; a
predecessor reworked after a reject reaches its dependent at the dependent's landing. Without
it, the dependent waits for its predecessor to land and starts from the target."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import git
from tests.integration.test_landing import _project, _run
from wrighty.domain.states import ItemState


def _create(project: Any, title: str, task: str, *after: int) -> int:
    args = [arg for dep in after for arg in ("--after", str(dep))]
    said = project.wrighty("create", "--title", title, "--body", task, "--queue", *args)
    found = re.search(r"created item (\d+)", said)
    assert found is not None, said
    return int(found.group(1))


def _session(project: Any, item_id: int) -> Any:
    store = project.store()
    try:
        session = store.get_session(item_id)
    finally:
        store.close()
    assert session is not None
    return session


def _holds(project: Any, ancestor: str, descendant: str) -> bool:
    """Whether ``descendant``'s history holds the commit ``ancestor``."""
    ancestor_id = git(project.root, "rev-parse", ancestor)
    return git(project.root, "merge-base", ancestor, descendant) == ancestor_id


def _a_then_b(project: Any) -> tuple[int, int]:
    """Item A in review, and item B (after A) queued."""
    first = _create(project, "First", "FILE a.txt TEXT one")
    second = _create(project, "Second", "FILE b.txt TEXT two", first)
    assert project.worker("--once").returncode == 0
    assert project.get(first).state is ItemState.REVIEW, project.get(first).reason
    return first, second


def test_stacked_an_item_starts_from_its_predecessors_branch_in_review_and_lands_after_it(
    tmp_path: Path, store_url: str | None
) -> None:
    project = _project(tmp_path, store_url, stack=True)
    first, second = _a_then_b(project)
    branch_a = f"wrighty/{first}-first"
    tip_a = git(project.root, "rev-parse", branch_a)

    assert project.worker("--once").returncode == 0  # B, while A waits for its reviewer

    assert project.get(second).state is ItemState.REVIEW, project.get(second).reason
    branch_b = f"wrighty/{second}-second"
    assert _holds(project, tip_a, branch_b)
    assert _session(project, second).base_commit == tip_a
    stat = project.wrighty("diff", str(second), "--stat")
    assert "b.txt" in stat
    assert "a.txt" not in stat

    # B accepted first: it waits for A (in review), and `accept` does not wait an hour for it
    waiting = _run(project, "accept", str(second))
    assert waiting.returncode == 0, waiting.stderr
    assert project.get(second).state is ItemState.LANDING
    assert git(project.root, "rev-parse", "main") != tip_a
    assert project.worker("--once").returncode == 0  # a worker leaves it in line too
    assert project.get(second).state is ItemState.LANDING

    landed = _run(project, "accept", str(first))  # A lands first, past B in the line

    assert landed.returncode == 0, landed.stderr
    assert project.get(first).state is ItemState.DONE
    assert project.worker("--once").returncode == 0
    assert project.get(second).state is ItemState.DONE, project.get(second).reason
    line = git(project.root, "rev-list", "--first-parent", "main").split()
    assert line.index(git(project.root, "rev-parse", branch_b)) < line.index(tip_a)
    assert (project.root / "a.txt").read_text() == "one\n"
    assert (project.root / "b.txt").read_text() == "two\n"


def test_stacked_a_predecessor_reworked_after_a_reject_reaches_its_dependent_at_its_landing(
    tmp_path: Path, store_url: str | None
) -> None:
    project = _project(tmp_path, store_url, stack=True)
    first, second = _a_then_b(project)
    assert project.worker("--once").returncode == 0  # B, stacked on A as it was
    assert project.get(second).state is ItemState.REVIEW, project.get(second).reason
    rejected = _run(project, "reject", str(first), "--feedback", "FILE a.txt TEXT better")
    assert rejected.returncode == 0, rejected.stderr
    assert project.worker("--once").returncode == 0  # A's rework
    assert project.get(first).state is ItemState.REVIEW, project.get(first).reason
    assert git(project.root, "show", f"wrighty/{second}-second:a.txt") == "one"

    assert _run(project, "accept", str(second), "--wait", "0").returncode == 0
    assert _run(project, "accept", str(first)).returncode == 0
    assert project.worker("--once").returncode == 0

    assert project.get(second).state is ItemState.DONE, project.get(second).reason
    assert (project.root / "a.txt").read_text() == "better\n"
    assert (project.root / "b.txt").read_text() == "two\n"
    # B was brought up to date with main (A's final change) and checked there
    session = _session(project, second)
    assert session.base_commit == git(project.root, "rev-parse", f"wrighty/{first}-first")


def test_not_stacked_an_item_waits_for_its_predecessor_to_land_and_starts_from_the_target(
    tmp_path: Path, store_url: str | None
) -> None:
    project = _project(tmp_path, store_url)
    first, second = _a_then_b(project)

    assert project.worker("--once").returncode == 0  # nothing it may take: A is in review

    assert project.get(second).state is ItemState.QUEUED
    assert _run(project, "accept", str(first)).returncode == 0
    landed_a = git(project.root, "rev-parse", "main")
    assert project.worker("--once").returncode == 0
    assert project.get(second).state is ItemState.REVIEW, project.get(second).reason
    assert _session(project, second).base_commit == landed_a
    assert _holds(project, landed_a, f"wrighty/{second}-second")
    stat = project.wrighty("diff", str(second), "--stat")
    assert "b.txt" in stat
    assert "a.txt" not in stat


def test_a_stacked_worktree_starts_from_the_branch_tip_and_a_gone_branch_is_named(
    tmp_path: Path,
) -> None:
    from tests.factories import make_item
    from tests.helpers import git_repo
    from wrighty.domain.work_product import Completion
    from wrighty.workproduct.worktree import WorkspaceError, choose_workspace

    root = git_repo(tmp_path / "p")
    git(root, "switch", "-q", "-c", "wrighty/1-first")
    (root / "a.txt").write_text("one\n")
    git(root, "add", "a.txt")
    git(root, "commit", "-qm", "first")
    tip = git(root, "rev-parse", "HEAD")
    git(root, "switch", "-q", "main")
    state = root / ".wrighty"
    item = make_item(ItemState.RUNNING, id=2, title="Second")

    made = choose_workspace(
        "worktree", project_root=root, state_dir=state, item=item, session=None,
        completion=Completion(), stack_on="wrighty/1-first",
    )  # fmt: skip

    assert made.base_commit == tip
    assert (made.path / "a.txt").read_text() == "one\n"
    gone = make_item(ItemState.RUNNING, id=3, title="Third")
    with pytest.raises(WorkspaceError, match="stacks on the branch wrighty/9-gone"):
        choose_workspace(
            "worktree", project_root=root, state_dir=state, item=gone, session=None,
            completion=Completion(), stack_on="wrighty/9-gone",
        )  # fmt: skip
