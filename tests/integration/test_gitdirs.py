"""git's folders around a sandboxed workspace (docs/sandbox.md#git): read from git's own files
without starting git, they are what `git rev-parse` says, in every shape a workspace takes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import git
from wrighty.domain.sandbox import GitPlaces
from wrighty.workproduct import gitdirs
from wrighty.workproduct.gitdirs import git_places

asked_of_git = gitdirs._places_from_git  # what `git rev-parse` says


def test_the_folders_read_from_disk_are_git_s_in_every_shape_of_workspace(
    git_project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = git_project / ".wrighty" / "worktrees"
    state.mkdir(parents=True)
    git(git_project, "worktree", "add", "-q", "-b", "wrighty/1-fix", str(state / "1"))
    git(git_project, "worktree", "add", "-q", "-b", "top", str(state / "2"))
    git(git_project, "worktree", "add", "-q", "--detach", str(state / "3"))
    git(git_project, "-C", str(state / "1"), "checkout", "-q", "-b", "wrighty/moved")
    (git_project / "sub").mkdir()
    empty = tmp_path / "empty"
    (empty / ".git").mkdir(parents=True)  # a .git folder that is no repository
    shapes = {
        "current mode": git_project,
        "a worktree on a branch in a folder": state / "1",
        "a worktree on a branch at the top": state / "2",
        "a detached worktree": state / "3",
        "a folder inside the project": git_project / "sub",
        "no repository": tmp_path,
        "an empty .git folder": empty,
    }
    calls: list[Path] = []
    monkeypatch.setattr(gitdirs, "_places_from_git", lambda w: calls.append(w) or asked_of_git(w))
    for shape, workspace in shapes.items():
        assert git_places(workspace) == asked_of_git(workspace), shape
    assert git_places(state / "1") == GitPlaces(
        gitdirs._posix((git_project / ".git").resolve()),
        gitdirs._posix((git_project / ".git" / "worktrees" / "1").resolve()),
        "wrighty/moved",
    )
    # git itself is asked only where the workspace is not the top of a work tree
    assert calls == [git_project / "sub", tmp_path, empty]
