"""git's folders around a workspace, as a sandbox needs them (docs/sandbox.md#git)."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from wrighty.domain.sandbox import GitPlaces
from wrighty.workproduct.runner import GitError, run_git


def git_places(workspace: Path) -> GitPlaces | None:
    """The shared .git of ``workspace``'s repository, and in a linked worktree its own admin
    folder (.git/worktrees/<name>) and branch; None when it is in no repository."""
    try:
        answer = run_git(
            workspace, "rev-parse", "--absolute-git-dir", "--git-common-dir",
            "--symbolic-full-name", "HEAD",
        )  # fmt: skip
    except GitError:
        return None
    lines = answer.stdout.splitlines() if answer.ok else []
    if len(lines) < 2:
        return None
    own = Path(lines[0]).resolve()
    common = (workspace / lines[1]).resolve()
    if own == common:
        return GitPlaces(PurePosixPath(str(common)))
    ref = lines[2] if len(lines) > 2 else ""
    branch = ref.removeprefix("refs/heads/") if ref.startswith("refs/heads/") else None
    return GitPlaces(PurePosixPath(str(common)), PurePosixPath(str(own)), branch)
