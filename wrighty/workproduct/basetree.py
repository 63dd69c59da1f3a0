"""A base commit checked out on its own, for a check to run on (docs/verify.md#checks-that-
fail-on-the-base): a detached worktree of the item's repository, made in a folder of its own
and removed after, whatever happened in it. Neither the item's worktree nor the project's
checkout is touched."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from wrighty.workproduct.runner import GitError, run_git


@contextmanager
def base_worktree(repo: Path, commit: str, under: Path) -> Iterator[Path]:
    """``commit`` checked out detached in a new folder under ``under``, with ``repo``'s git
    (any worktree of the repository will do); the worktree is removed and forgotten when the
    block ends, even on an exception. GitError when git cannot check it out."""
    under.mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix="base-", dir=under))
    try:
        made = run_git(repo, "worktree", "add", "--detach", "--", str(path), commit)
        if not made.ok:
            raise GitError(f"git worktree add of the base {commit[:12]}: {made.why()}")
        yield path
    finally:
        _remove(repo, path)


def _remove(repo: Path, path: Path) -> None:
    """Remove the worktree at ``path`` as git knows it, then whatever is left of the folder,
    and forget it; a failure here leaves it to the next ``git worktree prune``."""
    with suppress(GitError):
        run_git(repo, "worktree", "remove", "--force", "--force", "--", str(path))
    shutil.rmtree(path, ignore_errors=True)
    with suppress(GitError):
        run_git(repo, "worktree", "prune")
