"""The small reads of a repository that the work product's modules share: a commit's full id,
the work tree a folder is in, whether a worktree has uncommitted changes, whether one commit
is another's ancestor, and what `git status` says of a worktree's HEAD. Every one is one git
command through runner.py."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from wrighty.workproduct.runner import GitError, run_git

# What `git status --porcelain=v2 --branch` says for a HEAD that names no branch, and for a
# branch with no commit yet.
_DETACHED = "(detached)"
_INITIAL = "(initial)"


def commit_id(repo: Path, revision: str) -> str | None:
    """The full id of the commit ``revision`` names in ``repo``; None when none. (Every
    revision asked for is wrighty's: HEAD, or a branch as model.BRANCH_NAME allows it.)"""
    result = run_git(repo, "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}")
    return (result.stdout.strip() or None) if result.ok else None


def toplevel(path: Path) -> Path | None:
    """The work tree ``path`` is in, as git sees it (None: none)."""
    result = run_git(path, "rev-parse", "--show-toplevel")
    return Path(result.stdout.strip()).resolve() if result.ok and result.stdout.strip() else None


def uncommitted(path: Path) -> tuple[bool | None, str | None]:
    """Whether the worktree at ``path`` has uncommitted changes, untracked files included
    (None: git could not tell, and why)."""
    status = run_git(path, "status", "--porcelain")
    return (bool(status.stdout.strip()), None) if status.ok else (None, status.why())


def is_ancestor(repo: Path, older: str, newer: str) -> bool:
    """Whether the commit ``older`` is ``newer`` or one of its ancestors (GitError when git
    cannot compare them)."""
    answer = run_git(repo, "merge-base", "--is-ancestor", older, newer)
    if answer.returncode not in (0, 1):
        raise GitError(f"git cannot compare {older[:12]} and {newer[:12]}: {answer.why()}")
    return answer.returncode == 0


@dataclass(frozen=True)
class HeadStatus:
    """What one `git status` says of a work tree: its HEAD's commit (None: no commit yet), the
    branch it has checked out (None: detached), and whether it has changes (None: git could
    not tell, and ``why``)."""

    head: str | None
    branch: str | None
    changed: bool | None
    why: str | None = None


def head_status(path: Path, *, untracked: bool) -> HeadStatus:
    """The HEAD, its branch and the changes of the work tree at ``path`` in one git command
    (``untracked``: an untracked file is a change); a second one only for a HEAD that status
    calls "(detached)", which a branch may be named too."""
    # Untracked files as the repository's config says (`git status --porcelain` did), or none.
    tracked_only = () if untracked else ("--untracked-files=no",)
    status = run_git(path, "status", "--porcelain=v2", "--branch", "--no-ahead-behind", "-z",
                     *tracked_only)  # fmt: skip
    if not status.ok:
        return HeadStatus(None, None, None, status.why())
    head: str | None = None
    branch: str | None = None
    changed = False
    for entry in status.stdout.split("\0"):
        if entry.startswith("# branch.oid "):
            found = entry.removeprefix("# branch.oid ")
            head = None if found == _INITIAL else found
        elif entry.startswith("# branch.head "):
            branch = entry.removeprefix("# branch.head ")
        elif entry and not entry.startswith("#"):
            changed = True
    if branch == _DETACHED:
        named = run_git(path, "symbolic-ref", "--quiet", "HEAD")
        branch = named.stdout.strip().removeprefix("refs/heads/") if named.ok else None
    return HeadStatus(head, branch, changed)
