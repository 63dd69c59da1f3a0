"""git's folders around a workspace, as a sandbox needs them (docs/sandbox.md#git).

Each sandboxed start asks (an agent's run, each check): read from git's own files where the
workspace is the top of a work tree, as an item's workspace always is (its ``.git`` folder, or
in a linked worktree the ``.git`` file that names its admin folder, whose ``commondir`` and
``HEAD`` say the rest), which costs no process; `git rev-parse` anywhere else."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from wrighty.domain.sandbox import GitPlaces
from wrighty.workproduct.runner import GitError, run_git

_GITDIR = "gitdir: "
_BRANCH_REF = "ref: refs/heads/"
# With one of these set, git does not find its folders from the work tree alone.
_GIT_LOCATIONS = ("GIT_DIR", "GIT_COMMON_DIR", "GIT_WORK_TREE")


def git_places(workspace: Path) -> GitPlaces | None:
    """The shared .git of ``workspace``'s repository, and in a linked worktree its own admin
    folder (.git/worktrees/<name>) and branch; None when it is in no repository."""
    if not any(os.environ.get(name) for name in _GIT_LOCATIONS):
        try:
            found = _places_on_disk(workspace)
        except (OSError, UnicodeDecodeError, ValueError):
            found = None
        if found is not None:
            return found
    return _places_from_git(workspace)


def _places_on_disk(workspace: Path) -> GitPlaces | None:
    """What `git rev-parse` would say, read from git's files; None when the workspace is not
    the top of a work tree whose files read as git writes them (git is asked then)."""
    dot = workspace / ".git"
    if dot.is_dir():
        return GitPlaces(_posix(dot.resolve())) if (dot / "HEAD").is_file() else None
    text = dot.read_text(encoding="utf-8")
    if not text.startswith(_GITDIR) or text.count("\n") > 1:
        return None
    own = (workspace / text[len(_GITDIR) :].strip()).resolve()  # an absolute path stays so
    head = (own / "HEAD").read_text(encoding="utf-8").strip()
    commondir = own / "commondir"
    common = (own / commondir.read_text(encoding="utf-8").strip()).resolve()
    if own == common:
        return GitPlaces(_posix(common))
    branch = head.removeprefix(_BRANCH_REF) if head.startswith(_BRANCH_REF) else None
    return GitPlaces(_posix(common), _posix(own), branch)


def _places_from_git(workspace: Path) -> GitPlaces | None:
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
        return GitPlaces(_posix(common))
    ref = lines[2] if len(lines) > 2 else ""
    branch = ref.removeprefix("refs/heads/") if ref.startswith("refs/heads/") else None
    return GitPlaces(_posix(common), _posix(own), branch)


def _posix(path: Path) -> PurePosixPath:
    return PurePosixPath(str(path))
